"""Knowledge-editing rules: recall on injected corruption, precision on clean cases, real data."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import REL, clone, make_case, simple_case, to_flat, write_json
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import curate
from curate.audits.knowledge_editing.registry import RULES
from curate.families import get_family

FAM = get_family("knowledge-editing")


def audit_records(tmp_path: Path, records: list[dict[str, Any]], **opts: Any):
    path = write_json(tmp_path / "cases.json", records)
    data = FAM.load([path], keep_records=True)
    return data, FAM.audit(data, **opts)


def hits(report, rule: str) -> set[tuple[str, str]]:
    f = report.findings.filter(report.findings["rule"] == rule)
    return set(zip(f["record"].to_list(), f["field"].to_list(), strict=True))


def rules_hit(report) -> set[str]:
    return set(report.findings["rule"].unique().to_list())


CLEAN = [
    simple_case(100 + i, n_hops=2 + i % 3, edit_at=((0,), (1,), (0, 2))[i % 3][: 2 + i % 3])
    for i in range(12)
]


def test_clean_cases_have_no_findings(tmp_path: Path) -> None:
    for spec in ("all", "random:5", "random:0"):
        _, report = audit_records(tmp_path, CLEAN, edit_set=spec)
        assert report.findings.is_empty(), report.findings.to_dicts()[:3]


# Each corruption: (rule, expected field, mutate(case)). The corrupted case is case 1000 among
# clean ones; the rule must fire on exactly that record and field, and no other rule may fire
# except those listed as collateral (a corruption can legitimately break two invariants).
def _set(path: list[Any], value: Any):
    def mutate(c: dict[str, Any]) -> None:
        obj = c
        for p in path[:-1]:
            obj = obj[p]
        obj[path[-1]] = value

    return mutate


def _drop_hop(c: dict[str, Any]) -> None:
    c["single_hops"].pop()


def _break_chain(c: dict[str, Any]) -> None:
    c["orig"]["triples"][1][0] = "QBROKEN"


def _break_label_chain(c: dict[str, Any]) -> None:
    c["orig"]["new_triples_labeled"][2][0] = "Somebody Else"


def _dup_idx(c: dict[str, Any]) -> None:
    c["orig"]["edit_triples_idx"] = [1, 1]


def _two_slots(c: dict[str, Any]) -> None:
    c["requested_rewrite"][0]["prompt"] = "{} and {} are"


def _repeat_question(c: dict[str, Any]) -> None:
    c["questions"][2] = c["questions"][0].upper() + "  "


def _alias_problems(c: dict[str, Any]) -> None:
    c["answer_alias"] = ["", c["answer_alias"][0], c["answer_alias"][0].lower(), c["answer"]]


def _overlap(c: dict[str, Any]) -> None:
    c["new_answer_alias"].append(c["answer"].lower())


def _no_op(c: dict[str, Any]) -> None:
    rw = c["requested_rewrite"][0]
    rw["target_true"] = dict(rw["target_new"])


def _changed_unedited_hop(c: dict[str, Any]) -> None:
    # hop 0 is not edited (edit at 1): change its new object and re-route the chain consistently
    new = c["orig"]["new_triples"]
    new[0][2] = "QELSE"
    new[1][0] = "QELSE"
    c["orig"]["edit_triples"][0][0] = "QELSE"
    lab = c["orig"]["new_triples_labeled"]
    lab[0][2] = "Entity QELSE"
    lab[1][0] = "Entity QELSE"
    c["requested_rewrite"][0]["subject"] = "Entity QELSE"
    c["new_single_hops"][0]["answer"] = "Entity QELSE"


CORRUPTIONS = [
    ("KE101", "orig.triples", _drop_hop, {"KE106"}),
    ("KE102", "orig.triples[1][0]", _break_chain, {"KE105", "KE113"}),
    ("KE102", "orig.new_triples_labeled[2][0]", _break_label_chain, set()),
    ("KE103", "orig.edit_triples_idx", _set(["orig", "edit_triples_idx"], [1, 2]), {"KE104"}),
    ("KE103", "orig.edit_triples_idx[0]", _set(["orig", "edit_triples_idx", 0], 7), {"KE105"}),
    (
        "KE104",
        "orig.edit_triples[0][2]",
        _set(["orig", "edit_triples", 0, 2], "QX"),
        {"KE112", "KE113"},
    ),
    (
        "KE104",
        "requested_rewrite[0].relation_id",
        _set(["requested_rewrite", 0, "relation_id"], "P6"),
        set(),
    ),
    (
        "KE104",
        "requested_rewrite[0].target_new.str",
        _set(["requested_rewrite", 0, "target_new", "str"], "Atlantis"),
        set(),
    ),
    (
        "KE104",
        "requested_rewrite[0].subject",
        _set(["requested_rewrite", 0, "subject"], "Nobody"),
        set(),
    ),
    ("KE105", "orig.new_triples[0][2]", _changed_unedited_hop, {"KE104"}),
    ("KE106", "answer", _set(["answer"], "Wrong Answer"), set()),
    ("KE106", "new_answer", _set(["new_answer"], "Wrong New Answer"), set()),
    ("KE106", "single_hops[1].answer", _set(["single_hops", 1, "answer"], "Off"), set()),
    (
        "KE107",
        "requested_rewrite[0].prompt",
        _set(["requested_rewrite", 0, "prompt"], "no slot"),
        set(),
    ),
    ("KE107", "requested_rewrite[0].prompt", _two_slots, set()),
    ("KE108", "requested_rewrite[0].relation_id", None, set()),  # filled below
    ("KE109", "questions", _set(["questions"], ["a?", "b?"]), set()),
    ("KE109", "questions", _repeat_question, set()),
    ("KE110", "answer_alias", _alias_problems, set()),
    ("KE111", "new_answer_alias", _overlap, set()),
    ("KE112", "requested_rewrite[0].target_new.id", _no_op, {"KE113", "KE111"}),
    (
        "KE113",
        "requested_rewrite[0].target_true.id",
        _set(["requested_rewrite", 0, "target_true", "id"], "QTRUE"),
        set(),
    ),
    ("KE001", "orig.triples[0]", _set(["orig", "triples", 0], ["Q1", "P27"]), set()),
    ("KE001", "answer", _set(["answer"], 42), set()),
    (
        "KE001",
        "requested_rewrite[0].target_new.id",
        _set(["requested_rewrite", 0, "target_new", "id"], ""),
        set(),
    ),
]


def _unknown_relation(c: dict[str, Any]) -> None:
    for t in (c["orig"]["triples"], c["orig"]["new_triples"], c["orig"]["edit_triples"]):
        for trip in t:
            if trip[1] == "P37":
                trip[1] = "P9999"
    c["requested_rewrite"][0]["relation_id"] = "P9999"


CORRUPTIONS[15] = ("KE108", "requested_rewrite[0].relation_id", _unknown_relation, set())


@pytest.mark.parametrize(
    ("rule", "field", "mutate", "collateral"),
    CORRUPTIONS,
    ids=[f"{r}-{f}" for r, f, *_ in CORRUPTIONS],
)
def test_injected_corruption_is_found(tmp_path, rule, field, mutate, collateral) -> None:
    bad = (
        simple_case(1000, n_hops=3, edit_at=(1, 2))
        if rule == "KE103" and "[0]" not in field
        else simple_case(1000, n_hops=3, edit_at=(1,))
    )
    if rule == "KE103" and field.endswith("idx"):
        bad = simple_case(1000, n_hops=3, edit_at=(1,))
        bad["orig"]["edit_triples_idx"] = [1, 2]
        mutate = None
    if mutate is not None:
        mutate(bad)
    _, report = audit_records(tmp_path, [*CLEAN, bad], edit_set="all")
    assert ("1000", field) in hits(report, rule), report.findings.to_dicts()
    # precision: nothing on the clean cases, nothing unexpected on the corrupted one
    assert set(report.findings["record"].to_list()) == {"1000"}
    assert rules_hit(report) - {rule} <= collateral, rules_hit(report)


def test_duplicate_case_id_and_duplicate_case(tmp_path: Path) -> None:
    twin = clone(CLEAN[0])
    twin["case_id"] = 999
    twin["questions"] = ["other wording 1?", "other wording 2?", "other wording 3?"]
    same_id = simple_case(555)
    same_id["case_id"] = CLEAN[1]["case_id"]
    _, report = audit_records(tmp_path, [*CLEAN, twin, same_id])
    assert hits(report, "KE401") == {("999", "")}
    assert {f.details["duplicate_of"] for f in report.iter_findings() if f.rule == "KE401"} == {
        "100"
    }
    dup_row = report.findings.filter(report.findings["rule"] == "KE401")["row"].to_list()
    assert dup_row == [len(CLEAN)]  # the later occurrence is flagged, not the first
    assert hits(report, "KE002") == {(str(CLEAN[1]["case_id"]), "case_id")}


def test_ids_of_two_types_leave_the_less_common_kind_out(tmp_path: Path) -> None:
    """The schema takes an integer or a string ``case_id``, but a published column holds one
    type: validate said a mixed file was clean and export then refused it (exit 2). KE003 names
    the cases of the less common kind, and export leaves them out like any invalid record."""
    text = simple_case(901)
    text["case_id"] = "q-901"
    _, report = audit_records(tmp_path, [*CLEAN, text])
    assert hits(report, "KE003") == {("q-901", "case_id")}
    (message,) = report.findings.filter(pl.col("rule") == "KE003")["message"].to_list()
    assert f"is a string where {len(CLEAN)} other cases' ids are integers" in message
    numbers = [dict(c, case_id=f"c{c['case_id']}") for c in CLEAN]
    _, report = audit_records(tmp_path, [*numbers, simple_case(902)])
    assert hits(report, "KE003") == {("902", "case_id")}  # the integer, now the odd one out
    _, report = audit_records(tmp_path, [*numbers])
    assert "KE003" not in rules_hit(report)

    src = write_json(tmp_path / "mixed.json", [*CLEAN, text])
    out = tmp_path / "hf"
    curate.export("mquake", src, out)
    import datasets

    ids = datasets.load_dataset(str(out))["train"]["case_id"]
    assert sorted(ids) == sorted(c["case_id"] for c in CLEAN)


def test_near_duplicate_question(tmp_path: Path) -> None:
    other = simple_case(777)
    other["questions"][1] = "  " + CLEAN[2]["questions"][0].upper().replace("?", " ?!")
    _, report = audit_records(tmp_path, [*CLEAN, other])
    assert hits(report, "KE402") == {("777", "questions[1]")}


# ----------------------------------------------------------------------- contamination, conflicts


def _pair() -> tuple[dict[str, Any], dict[str, Any]]:
    """A edits (QA0, P27) → QA9; B's original chain passes through (QA0, P27, QA1)."""
    a = make_case(
        1,
        [("QA0", "P27", "QA1"), ("QA1", "P37", "QA2")],
        [("QA0", "P27", "QA9"), ("QA9", "P37", "QA8")],
        [0, 1],
    )
    b = make_case(
        2,
        [("QB0", "P36", "QA0"), ("QA0", "P27", "QA1"), ("QA1", "P37", "QA2")],
        [("QB0", "P36", "QB9"), ("QB9", "P27", "QB8"), ("QB8", "P37", "QB7")],
        [0],
    )
    return a, b


def test_contamination_unedited(tmp_path: Path, monkeypatch) -> None:
    a, b = _pair()
    ids = tmp_path / "ids.txt"
    ids.write_text("1\n")
    _, report = audit_records(tmp_path, [a, b], edit_set=f"ids:{ids}")
    assert hits(report, "KE202") == {("2", "orig.triples[1]")}
    assert not hits(report, "KE201")
    f = next(x for x in report.iter_findings() if x.rule == "KE202")
    assert f.details["edits"][0]["triple"] == ["QA0", "P27", "QA9"]
    assert f.details["edits"][0]["source_cases"] == ["1"]
    assert report.stats["contamination"]["unedited_contaminated"] == 1


def test_contamination_edited(tmp_path: Path) -> None:
    a, b = _pair()
    # make B's *new* path pass through (QA0, P27, QA1): B edits only its first hop to QA0
    b = make_case(
        2,
        [("QB0", "P36", "QB1"), ("QB1", "P27", "QB2")],
        [("QB0", "P36", "QA0"), ("QA0", "P27", "QA1")],
        [0],
    )
    _, report = audit_records(tmp_path, [a, b], edit_set="all")
    assert hits(report, "KE201") == {("2", "orig.new_triples[1]")}
    # A is not contaminated by its own edits, and B's edit (QB0,P36) touches nothing of A
    assert {r for r, _ in hits(report, "KE201")} == {"2"}
    # edit set of B only: A unedited; A's original chain has (QA0,P27,QA1) and B's edit is on QB0
    ids = tmp_path / "ids.json"
    ids.write_text("[2]")
    _, report = audit_records(tmp_path, [a, b], edit_set=f"ids:{ids}")
    assert not hits(report, "KE201") and not hits(report, "KE202")


def test_conflicting_and_ambiguous_edits(tmp_path: Path) -> None:
    a = make_case(1, [("QS", "P36", "QC1")], [("QS", "P36", "QN1")], [0])
    b = make_case(2, [("QS", "P36", "QC1")], [("QS", "P36", "QN2")], [0])  # same s,r → other obj
    # same label as QS, different entity and object: ambiguous for a text edit memory
    c = make_case(3, [("QT", "P36", "QC3")], [("QT", "P36", "QN3")], [0])
    c["requested_rewrite"][0]["subject"] = a["requested_rewrite"][0]["subject"]
    c["orig"]["new_triples_labeled"][0][0] = a["requested_rewrite"][0]["subject"]
    c["orig"]["triples_labeled"][0][0] = a["requested_rewrite"][0]["subject"]
    _, report = audit_records(tmp_path, [a, b, c], edit_set="all")
    assert {r for r, _ in hits(report, "KE301")} == {"1", "2"}
    assert {r for r, _ in hits(report, "KE302")} == {"1", "2", "3"}
    alts = next(f for f in report.iter_findings() if f.rule == "KE301").details["alternatives"]
    assert [x["object"] for x in alts] == ["QN1", "QN2"]
    # only a and c edited: no id conflict, but still label ambiguity
    ids = tmp_path / "ids.json"
    ids.write_text("[1, 3]")
    _, report = audit_records(tmp_path, [a, b, c], edit_set=f"ids:{ids}")
    assert not hits(report, "KE301")
    assert {r for r, _ in hits(report, "KE302")} == {"1", "3"}


def test_remastered_layout_gives_same_findings(tmp_path: Path) -> None:
    a, b = _pair()
    flat = [
        {
            **to_flat(c, with_edit_triples=False),
            "split": {"1": ["edited"] if c["case_id"] == 1 else ["unedited"]},
        }
        for c in (a, b)
    ]
    _, report = audit_records(tmp_path, flat, edit_set="split:1")
    assert hits(report, "KE202") == {("2", "orig.triples[1]")}
    assert report.stats["edit_set"]["edited_cases"] == 1


# ----------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def hard_data(hard_path):
    return FAM.load([hard_path], keep_records=True)


def test_hard_real_duplicates_and_ambiguities(hard_data) -> None:
    report = FAM.audit(hard_data, edit_set="all")
    assert report.findings.filter(report.findings["severity"] == "error").is_empty()
    dups = {
        (f.record, f.details["duplicate_of"]) for f in report.iter_findings() if f.rule == "KE401"
    }
    assert dups == {
        ("9203", "9186"),
        ("9204", "9187"),
        ("9209", "9192"),
        ("9212", "9195"),
        ("9213", "9196"),
    }
    amb = {f.record for f in report.iter_findings() if f.rule == "KE302"}
    assert amb == {"7699", "8563", "8236", "8695"}  # 'Portal' and "A Hard Day's Night"
    assert report.stats["contamination"] == {
        "edit_set": "all",
        "edited_cases": 429,
        "edited_contaminated": 0,
        "unedited_cases": 0,
        "unedited_contaminated": 0,
    }


def naive_contamination(records: list[dict[str, Any]], edited_ids: set[Any]) -> tuple[set, set]:
    """MQuAKE-Remastered's per-case loop over all applied edits (the reference definition)."""
    applied = [
        (c["case_id"], e)
        for c in records
        if c["case_id"] in edited_ids
        for e in c["orig"]["edit_triples"]
    ]
    edited_bad, unedited_bad = set(), set()
    for c in records:
        is_edited = c["case_id"] in edited_ids
        path = c["orig"]["new_triples" if is_edited else "triples"]
        for src, e in applied:
            if src != c["case_id"] and any(
                e[0] == p[0] and e[1] == p[1] and e[2] != p[2] for p in path
            ):
                (edited_bad if is_edited else unedited_bad).add(str(c["case_id"]))
                break
    return edited_bad, unedited_bad


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(k=st.integers(0, 429), seed=st.integers(0, 2**32 - 1))
def test_contamination_matches_reference_loop(hard_data, hard_records, k, seed) -> None:
    spec = f"random:{k}:{seed}"
    report = FAM.audit(hard_data, select=["KE2"], edit_set=spec)
    rng = random.Random()
    rng.seed(seed)
    edited = set(rng.sample([c["case_id"] for c in hard_records], k))
    ref_edited, ref_unedited = naive_contamination(hard_records, edited)
    f = report.findings
    assert set(f.filter(f["rule"] == "KE201")["record"].to_list()) == ref_edited
    assert set(f.filter(f["rule"] == "KE202")["record"].to_list()) == ref_unedited
    assert report.stats["edit_set"]["edited_cases"] == k


def test_random_100_figures_by_hand(hard_data, hard_records) -> None:
    """The official edit-list procedure: random.seed(100); random.sample(ids, 100)."""
    report = FAM.audit(hard_data, select=["KE2"], edit_set="random:100")
    random.seed(100)
    edited = set(random.sample([c["case_id"] for c in hard_records], 100))
    ref_edited, ref_unedited = naive_contamination(hard_records, edited)
    c = report.stats["contamination"]
    assert (c["edited_contaminated"], c["unedited_contaminated"]) == (
        len(ref_edited),
        len(ref_unedited),
    )
    assert c["edited_cases"] == 100 and c["unedited_cases"] == 329


def test_messages_quote_at_most_a_slice_of_a_huge_value(tmp_path, hard_records, capsys):
    """A 1 MB answer is named, not printed: reports stay readable, details keep the value."""
    import json as _json

    from curate.cli.main import main
    from curate.core.findings import MESSAGE_VALUE_CHARS

    recs = [dict(r) for r in hard_records[:20]]
    recs[0]["answer"] = "x" * 1_000_000
    path = tmp_path / "big.json"
    path.write_text(_json.dumps(recs), encoding="utf-8")
    assert main(["audit", "mquake", str(path), "--select", "KE106"]) == 1
    out = capsys.readouterr().out
    assert len(out) < 10_000 and "(1,000,000 characters)" in out
    assert main(["audit", "mquake", str(path), "--select", "KE106", "-f", "json"]) == 1
    found = _json.loads(capsys.readouterr().out)["findings"]
    mine = [f for f in found if f["field"] == "answer"]
    assert mine and len(mine[0]["message"]) < MESSAGE_VALUE_CHARS + 200


def test_contaminated_edited_case_is_fixed_by_withholding(tmp_path: Path) -> None:
    """KE201's fix withholds the other case's edit; the fixed data then audits clean, and
    withholding is per case: the source case itself keeps its edit."""
    import curate

    a, b = _pair()
    b = make_case(
        2,
        [("QB0", "P36", "QB1"), ("QB1", "P27", "QB2")],
        [("QB0", "P36", "QA0"), ("QA0", "P27", "QA1")],
        [0],
    )
    src = write_json(tmp_path / "in.json", [a, b])
    out = tmp_path / "fixed"
    done = curate.fix("mquake", src, out, edit_set="all")
    assert done.fix.summary["fixed"] == {"KE201": 1}
    rows = {r["case_id"]: r for r in _rows(out)}
    edit_of_a = a["orig"]["edit_triples"]
    assert rows[2]["withheld_edits"] == [
        {"case_id": 1, "edit_index": k, "triple": t}
        for k, t in enumerate(edit_of_a)
        if t[0] == "QA0" and t[1] == "P27"
    ]
    assert rows[1]["withheld_edits"] == []
    assert not hits(curate.audit("mquake", out), "KE201")
    # the finding it came from is named in the changelog
    (change,) = done.fix.changelog
    assert change.rule == "KE201" and change.finding["field"] == "orig.new_triples[1]"


def _rows(folder: Path) -> list[dict]:
    import pyarrow.parquet as pq

    return [r for f in sorted(folder.glob("data/*.parquet")) for r in pq.read_table(f).to_pylist()]


def test_contamination_general_path_writes_what_the_per_triple_path_writes(
    tmp_path: Path, hard_records
) -> None:
    """A hop overridden by one edit triple takes that triple's ``details`` entry and fix, written
    once per triple; a case that withholds edits goes through the per-hop grouping instead. A
    withheld edit that cannot contaminate anything (the case's own, for unedited cases) must
    therefore change nothing: same findings, messages, details and fixes, in the same order."""
    plain = FAM.audit(
        FAM.load([write_json(tmp_path / "a.json", hard_records)]), edit_set="random:200"
    )
    marked = [dict(c) for c in hard_records]
    for c in marked:
        c["withheld_edits"] = [
            {"case_id": c["case_id"], "edit_index": 0, "triple": c["orig"]["edit_triples"][0]}
        ]
    other = FAM.audit(FAM.load([write_json(tmp_path / "b.json", marked)]), edit_set="random:200")
    random.seed(100)
    edited = set(random.sample([c["case_id"] for c in hard_records], 200))

    def contaminated(report) -> list[tuple]:
        f = report.findings.filter(report.findings["rule"].is_in(["KE201", "KE202"]))
        f = f.filter(~f["record"].is_in([str(x) for x in edited]))  # own edit applied: differs
        return f.select("rule", "record", "field", "message", "details", "fix").rows()

    got = contaminated(other)
    assert len(got) > 300 and got == contaminated(plain)


def test_contamination_sources_in_file_order(hard_data) -> None:
    """Every listed source and every withheld entry is in (case, edit) file order, whatever order
    a join or group-by produced (it once varied from run to run)."""
    report = FAM.audit(hard_data, select=["KE2"], edit_set="random:200:7")
    pos = {str(r): i for i, r in enumerate(hard_data.all_ids)}
    n = 0
    for f in report.iter_findings():
        for e in f.details["edits"]:
            keys = [
                (pos[c], k) for c, k in zip(e["source_cases"], e["source_edit_index"], strict=True)
            ]
            assert keys == sorted(keys)
        values = [(pos[str(v["case_id"])], v["edit_index"]) for v in f.fix["values"]]
        assert values == sorted(values) and f.fix["refs"] == [
            str(v["case_id"]) for v in f.fix["values"]
        ]
        n += 1
    assert n > 100


def test_near_duplicate_question_survives_hash_collisions(tmp_path: Path, monkeypatch) -> None:
    """KE402 groups questions by a hash of their normal form, then compares the texts of the
    rows whose hash repeats: with every hash forced into two buckets (collisions everywhere)
    the findings are the same as with real hashes."""
    other = simple_case(777)
    other["questions"][1] = "  " + CLEAN[2]["questions"][0].upper().replace("?", " ?!")
    third = simple_case(778)
    third["questions"][0] = CLEAN[1]["questions"][2].lower()
    records = [*CLEAN, other, third]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _, want = audit_records(tmp_path / "a", records)
    real = RULES.tables["questions"]

    def colliding(ctx):
        return real(ctx).with_columns(pl.col("key") % 2)

    monkeypatch.setitem(RULES.tables, "questions", colliding)
    _, got = audit_records(tmp_path / "b", records)
    assert (
        hits(got, "KE402")
        == hits(want, "KE402")
        == {
            ("777", "questions[1]"),
            ("778", "questions[0]"),
        }
    )
    ke402 = pl.col("rule") == "KE402"
    cols = ["record", "field", "message", "details"]
    assert got.findings.filter(ke402).select(cols).equals(want.findings.filter(ke402).select(cols))


@pytest.mark.parametrize("idx", [1, 2**40])
def test_two_edits_on_one_hop(tmp_path: Path, idx: int) -> None:
    """KE103 names the later of two edits that change the same hop, whether the index fits the
    packed (case, index) key or not (2**40: the struct fallback; also outside the chain)."""
    bad = simple_case(1000, n_hops=3, edit_at=(1, 2))
    bad["orig"]["edit_triples_idx"] = [idx, idx]
    _, report = audit_records(tmp_path, [*CLEAN, bad], edit_set="all")
    f = report.findings.filter(
        (pl.col("rule") == "KE103") & pl.col("message").str.starts_with("two edits")
    )
    assert f.select("record", "field", "message").rows() == [
        ("1000", "orig.edit_triples_idx[1]", f"two edits change hop {idx}")
    ]


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.integers(0, 12), min_size=1, max_size=30),
    k=st.integers(0, 30),
    seed=st.integers(0, 5),
)
def test_random_edit_set_is_random_sample_of_ids(ids, k, seed) -> None:
    """``random:K:SEED`` edits exactly the cases whose id ``random.sample(ids, K)`` draws, repeated
    ids included (every case with a drawn id): the scatter over positions agrees with it."""
    from curate.audits.knowledge_editing.contamination import resolve_edit_set
    from curate.schemas.knowledge_editing_tables import KEData

    k = min(k, len(ids))
    base = FAM.load([Path(__file__).parents[1] / "curate/data/samples/mquake_sample.json"])
    records = [str(i) for i in ids]
    data = KEData(
        family=base.family,
        inputs=base.inputs,
        schema_findings=base.schema_findings,
        cases=pl.DataFrame({"row": range(len(ids)), "record": records}),
        hops=base.hops.clear(),
        edits=base.edits.clear(),
        all_ids=list(ids),
    )
    rng = random.Random()
    rng.seed(seed)
    drawn = {str(x) for x in rng.sample(ids, k)}
    got = resolve_edit_set(data, f"random:{k}:{seed}").to_list()
    assert got == [r in drawn for r in records]


def test_contaminated_cases_counted_as_cases_when_ids_repeat(tmp_path: Path, hard_records):
    """The summary counts contaminated *cases* (rows), as its denominators do: with the cases
    twice under the same ids, the figure is the number of cases the findings name (counting
    distinct ids said 304 of 672 where the findings named 608 cases)."""
    once = FAM.audit(
        FAM.load([write_json(tmp_path / "once.json", hard_records)]),
        select=["KE2"],
        edit_set="random:100",
    ).stats["contamination"]
    report = FAM.audit(
        FAM.load([write_json(tmp_path / "twice.json", hard_records + hard_records)]),
        select=["KE2"],
        edit_set="random:100",
    )
    c = report.stats["contamination"]
    victims = report.findings.filter(pl.col("rule") == "KE202")["row"].n_unique()
    assert c["unedited_contaminated"] == victims <= c["unedited_cases"]
    assert c["edited_cases"] + c["unedited_cases"] == 2 * len(hard_records)
    assert once["unedited_contaminated"] > 0
    assert c["unedited_contaminated"] > once["unedited_contaminated"]


def _loop_hits(
    records: list[dict[str, Any]], edited: set[int]
) -> dict[tuple[bool, str, int], list[str]]:
    """(edited?, case id, hop) -> the source case of each overriding edit (a case once per
    edit, as the fix's ``refs`` lists them), by a dict keyed by (subject, relation) over the
    applied edits: the indexed loop of ``bench/bench_ke.py``, as the definition."""
    index: dict[tuple[str, str], dict[str, list[int]]] = {}
    for c in records:
        if c["case_id"] in edited:
            for s, r, o in c["orig"]["edit_triples"]:
                index.setdefault((s, r), {}).setdefault(o, []).append(c["case_id"])
    out = {}
    for c in records:
        is_edited = c["case_id"] in edited
        for h, (s, r, o) in enumerate(c["orig"]["new_triples" if is_edited else "triples"]):
            found = [x for o2, srcs in index.get((s, r), {}).items() if o2 != o for x in srcs]
            found = [x for x in found if x != c["case_id"]]
            if found:
                out[(is_edited, str(c["case_id"]), h)] = sorted(str(x) for x in found)
    return out


@settings(max_examples=40, deadline=None)
@given(
    chains=st.lists(
        st.tuples(
            st.integers(0, 5),
            st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5)), min_size=1, max_size=4),
            st.sets(st.integers(0, 3), min_size=1, max_size=2),
            st.lists(st.integers(0, 5), min_size=4, max_size=4),
        ),
        min_size=2,
        max_size=25,
    ),
    k=st.integers(0, 25),
    seed=st.integers(0, 1000),
)
def test_contamination_matches_indexed_loop_on_colliding_facts(chains, k, seed) -> None:
    """Cases over six entities and three relations, so that keys collide every way: a subject
    with several applied relations, a key with several objects, a hop overridden by several
    triples, a case whose own edit is among a key's sources. Every (case, hop) hit and its
    source cases (the fix's ``refs``) equal the indexed loop's."""
    import orjson

    from curate.audits.knowledge_editing.contamination import contamination, resolve_edit_set

    rels = list(REL)[:3]
    records = []
    for i, (start, hops, edit_at, new_objects) in enumerate(chains):
        # a linked chain, and its edited chain: an edit at hop h sets a new object, the
        # hops after it go on from there (as ``simple_case``)
        triples, subj = [], f"Q{start}"
        for r, o in hops:
            triples.append((subj, rels[r], f"Q{o}"))
            subj = f"Q{o}"
        at = sorted({h % len(triples) for h in edit_at})  # a case has at least one edit
        new, subj, diverged = [], triples[0][0], False
        for h, (_s, r, o) in enumerate(triples):
            diverged = diverged or h in at
            obj = f"Q{new_objects[h]}" if diverged else o
            new.append((subj, r, obj))
            subj = obj
        records.append(make_case(1000 + i, triples, new, at))
    k = min(k, len(records))
    data = FAM.load([write_json(Path(tempfile.mkdtemp()) / "c.json", records)])
    edited_flags = resolve_edit_set(data, f"random:{k}:{seed}")
    edited = {int(r) for r, e in zip(data.cases["record"], edited_flags, strict=True) if e}
    report = FAM.audit(data, select=["KE201", "KE202"], edit_set=f"random:{k}:{seed}")
    got = {
        (rule == "KE201", rec, orjson.loads(det)["hop"]): sorted(orjson.loads(fix)["refs"])
        for rule, rec, det, fix in report.findings.select(
            "rule", "record", "details", "fix"
        ).iter_rows()
    }
    valid = [c for c in records if str(c["case_id"]) in set(data.cases["record"])]
    assert got == _loop_hits(valid, edited)
    table = contamination(data, edited_flags)
    assert table.hits.height == len(got)


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=60
    )
)
def test_content_groups_are_the_exact_groups(rows) -> None:
    """``_groups`` (grouped on one column, regrouped where the others vary) gives the groups an
    exact group-by on all three columns gives, each with its rows in order."""
    from curate.audits.knowledge_editing.contamination import _groups

    packed = pl.DataFrame(rows, schema=["__a", "__b", "__c"], orient="row").cast(pl.UInt64)
    got = _groups(packed)
    want: dict[tuple[int, int, int], list[int]] = {}
    for i, r in enumerate(rows):
        want.setdefault(r, []).append(i)
    assert sorted(got["__h"].to_list()) == sorted(want.values())
    assert got["__f"].to_list() == [h[0] for h in got["__h"].to_list()]
