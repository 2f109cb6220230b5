"""The compact knowledge-editing tables (issue 8, memory): findings unchanged, tables coded.

The tables the rules read were made several times smaller (entity ids, labels, answers and
prompts as categorical codes, the case id only in ``cases``, unread columns dropped). That must
not change one byte of any report: the audit JSON of real MQuAKE-hard and of a generated
20k-case file is compared, by hash, with the JSON the code before the change wrote (hashes taken
with that code, commit 06d3511, on the same inputs; the input path and the tool version are
masked). A deliberate change to a finding changes these hashes: recompute them then, and say so.
"""

from __future__ import annotations

import hashlib
import sys
import unicodedata
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import curate
from curate.audits.knowledge_editing.duplicates import normalised_question
from curate.families import get_family
from curate.reports.render import render_json
from curate.schemas.knowledge_editing_tables import CODE, EDIT_SCHEMA, HOP_SCHEMA, with_record

ROOT = Path(__file__).resolve().parents[1]
FAM = get_family("mquake")

#: sha256 of the masked audit JSON written by the code before the compact tables.
BEFORE = {
    ("hard", "all"): "8f3ce79b095db7e578ccab0837914bc3bc4f64823bf7298ad44e8e1f23bfbd1b",
    ("hard", "random:100"): "d4724bc922aecd29c068a1e2413c2709e46bab3fd6ffbee402a37584b4451331",
    ("gen", "all"): "daf7fe7300e0c4e63fff943ac3f3e1d57b1d50ca99af38844b302af3d6a1aef7",
    ("gen", "random:5000"): "076d17313f6621d91a1c16a2b1dd533deeb64e66891a6291516b92e20b1fb1be",
}


#: Rules added since the hashes were recorded: left out of the audit hashed, which is then the
#: same report the old rule set wrote (these files give them no finding; the test below says so).
NEWER_RULES = ["KE003"]


def audit_hash(path: Path, edit_set: str) -> str:
    report = curate.audit("mquake", str(path), edit_set=edit_set, ignore=NEWER_RULES)
    report.durations = {}  # seconds differ from run to run
    text = render_json(report).replace(str(path), "<input>")
    text = text.replace(f'"version": "{curate.__version__}"', '"version": "-"', 1)
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """20,000 cases from the bench generator (MQuAKE-hard re-keyed per replica)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_ke_scale import write_cases
    finally:
        sys.path.remove(str(ROOT / "bench"))
    path = tmp_path_factory.mktemp("ke") / "ke-20000.jsonl"
    write_cases(path, 20_000)
    return path


@pytest.mark.parametrize("edit_set", ["all", "random:100"])
def test_real_mquake_audit_is_byte_identical(shared, edit_set):
    assert (
        audit_hash(shared("data/mquake/MQuAKE-hard.json"), edit_set) == BEFORE[("hard", edit_set)]
    )


@pytest.mark.parametrize("edit_set", ["all", "random:5000"])
def test_generated_audit_is_byte_identical(shared, generated, edit_set):
    shared("data/mquake/MQuAKE-hard.json")  # the generator replicates it
    assert audit_hash(generated, edit_set) == BEFORE[("gen", edit_set)]


def test_the_newer_rules_find_nothing_in_the_hashed_files(shared, generated):
    for path in (shared("data/mquake/MQuAKE-hard.json"), generated):
        report = curate.audit("mquake", str(path), select=NEWER_RULES)
        assert report.findings.is_empty() and set(report.rules_run) == set(NEWER_RULES)


def test_tables_are_coded_and_hold_the_case_id_once(shared):
    data = FAM.load([shared("data/mquake/MQuAKE-hard.json")])
    assert dict(data.hops.schema) == HOP_SCHEMA
    assert dict(data.edits.schema) == EDIT_SCHEMA
    assert data.hops.schema["o_label"] == CODE
    assert "record" not in data.hops.columns and "record" not in data.edits.columns
    # the case id comes back by row, and codes read as the strings they stand for
    hops = with_record(data, data.hops)
    first = data.cases.row(0, named=True)
    assert set(hops.filter(pl.col("row") == first["row"])["record"]) == {first["record"]}
    assert hops.schema["o_label"] == pl.String
    last_orig = hops.filter((pl.col("row") == first["row"]) & (pl.col("path") == "orig"))
    assert last_orig["o_label"][-1] == first["answer"]  # MQuAKE-hard case 0 is consistent


# --------------------------------------------------------------------------- KE402's normaliser


def reference(question: str) -> str:
    """The normal form written out in Python: lower case, each run of characters outside the
    Unicode letter and number categories made one space, stripped."""
    kept = "".join(c if unicodedata.category(c)[0] in "LN" else " " for c in question.lower())
    return " ".join(part for part in kept.split(" ") if part)


def polars_norm(questions: list[str]) -> list[str]:
    return (
        pl.Series(questions, dtype=pl.String)
        .to_frame("q")
        .select(normalised_question(pl.col("q")))["q"]
        .to_list()
    )


# Characters assigned in Python's Unicode tables (an unassigned code point may be a letter in
# the regex engine's newer tables) and not surrogates; final-sigma lowering depends on context
# the two libraries define alike only for letters, so sigma is tested on real words below.
_TEXT = st.text(
    st.characters(exclude_categories=("Cn", "Cs"), exclude_characters="\u03a3"), max_size=40
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=20))
def test_normaliser_matches_python(questions):
    assert polars_norm(questions) == [reference(q) for q in questions]


def test_normaliser_on_real_questions(shared):
    import json

    cases = json.loads(shared("data/mquake/MQuAKE-hard.json").read_text(encoding="utf-8"))
    questions = [q for c in cases for q in c["questions"]]
    questions += ["ΟΔΟΣ ΣΟΦΙΑΣ?", "  Who's the   C.E.O. of Ørsted A/S?? ", "???", "l'été 2024…"]
    assert polars_norm(questions) == [reference(q) for q in questions]
    assert polars_norm(["  Who's the   C.E.O. of Ørsted A/S?? "]) == [
        "who s the c e o of ørsted a s"
    ]


@pytest.mark.parametrize("edit_set", ["random:100", "random:300"])
def test_contamination_json_as_text_is_json_encode(shared, monkeypatch, edit_set):
    """Contamination writes its ``details`` and fixes as text when no id or label needs JSON
    escaping, else with ``json_encode``: both must give the same findings, byte for byte (real
    MQuAKE-hard, whose edit sets contaminate hundreds of hops; escaping forced on every value)."""
    from curate.audits.knowledge_editing import contamination

    data = FAM.load([shared("data/mquake/MQuAKE-hard.json")])
    select = ["KE201", "KE202"]
    fast = FAM.audit(data, select=select, edit_set=edit_set).findings
    monkeypatch.setattr(contamination, "_NEEDS_ESCAPE", ".")
    slow = FAM.audit(data, select=select, edit_set=edit_set).findings
    assert fast.height > 100
    assert fast.equals(slow)
