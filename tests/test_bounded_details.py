"""A finding's ``details`` are bounded like its message (issue 30, build 3): a record id or a
cell of any length is shown by its first 2,000 characters, "…", its length and a digest, and a
long list by its first items and how many were left out, in every report format.

Why: GL401 lists the training records of a leaking glycan in ``details.train_records``, and a
20 MB id there made a 24 MB JSON report (2.6 MB of SARIF), although every message was cut.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import ROOT

import curate
from curate.cli.main import main
from curate.core.errors import QUOTE_CHARS
from curate.core.findings import (
    DETAILS_CHARS,
    DETAILS_ITEMS,
    DETAILS_STRING_CHARS,
    bound_value,
    bounded_details,
)

GLYCANS = ROOT / "curate" / "data" / "samples" / "glycan_taxonomy_sample.csv"
MEGABYTE_ID = "7" * 1_000_000


def _leaking_table(d: Path, train_id: str = MEGABYTE_ID) -> Path:
    """The first 40 rows of the shipped taxonomy sample, one of its training rows given the id
    ``train_id`` and copied into test as record 999999: GL401 (the same glycan in train and
    test, same label)."""
    with open(GLYCANS, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:41]
    split = header.index("split")
    train = next(r for r in body if r[split] == "train")
    train[0] = train_id
    leaked = [*train]
    leaked[0], leaked[split] = "999999", "test"
    p = d / "leaking.csv"
    with open(p, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([header, *body, leaked])
    return p


def _longest_string(obj: object) -> int:
    if isinstance(obj, str):
        return len(obj)
    if isinstance(obj, dict):
        return max([0, *map(_longest_string, obj.keys()), *map(_longest_string, obj.values())])
    if isinstance(obj, list):
        return max([0, *map(_longest_string, obj)])
    return 0


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "html", "junit", "github", "sarif"])
def test_a_megabyte_id_in_details_is_cut_in_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    """Each format of the report of a file with a 1 MB id is small, and as long as the report
    of the same file with a 7-character id give or take the cut id's few hundred characters
    (it is quoted in GL401's message and details, and is the record of a GL2xx finding)."""
    sizes = []
    for train_id in ("7777777", MEGABYTE_ID):
        folder = tmp_path / str(len(train_id))
        folder.mkdir()
        p = _leaking_table(folder, train_id)
        out = folder / f"report.{fmt}"
        capsys.readouterr()
        assert main(["audit", "glycan", str(p), "--format", fmt, "--output", str(out)]) == 1
        assert len(capsys.readouterr().out) < 10_000
        sizes.append(len(out.read_bytes()))
    text = out.read_text(encoding="utf-8")
    assert sizes[1] < 300_000 and sizes[1] - sizes[0] < 5_000, (fmt, sizes)
    assert "7" * (DETAILS_STRING_CHARS + 1) not in text
    assert "1,000,000 characters, sha256 " in text, fmt


def test_the_json_report_s_details_name_the_cut_id(tmp_path: Path, capsys) -> None:
    p = _leaking_table(tmp_path)
    capsys.readouterr()
    assert main(["audit", "glycan", str(p), "--format", "json", "--select", "GL401"]) == 1
    report = json.loads(capsys.readouterr().out)
    (gl401,) = [f for f in report["findings"] if f["record"] == "999999"]
    (shown,) = [r for r in gl401["details"]["train_records"] if r.startswith("777")]
    # as the record column shows that id: its first characters, its length and a digest
    assert shown.startswith("7" * DETAILS_STRING_CHARS + "… (1,000,000 characters, sha256 ")
    digest = shown.rsplit("sha256 ", 1)[1]
    # the message quotes it as the record column shows an id: 200 characters, the same digest
    quote = "e.g. record " + "7" * QUOTE_CHARS + f"… (1,000,000 characters, sha256 {digest}"
    assert quote in gl401["message"]
    assert _longest_string(gl401) < DETAILS_STRING_CHARS + 100
    # the API's report is the same (one bound, in the Report)
    api = curate.audit("glycan", p, select=["GL401"]).findings
    details = api.filter(api["record"] == "999999")["details"].item()
    assert shown in json.loads(details)["train_records"]


def test_a_long_list_keeps_its_first_items_and_says_how_many_more() -> None:
    labels = [f"species=S{i}; genus=G{i}" + "x" * 40 for i in range(113)]
    cut = bound_value({"train_labels": labels, "key": "k" * 5000, "n": 3})
    assert cut["train_labels"] == [*labels[:DETAILS_ITEMS], f"… ({113 - DETAILS_ITEMS} more)"]
    assert cut["key"].startswith("k" * DETAILS_STRING_CHARS + "… (5,000 characters, sha256 ")
    assert cut["n"] == 3
    assert bound_value([1] * 25, lists=False) == [1] * 25


def test_short_details_keep_their_bytes_and_long_ones_their_file() -> None:
    import polars as pl

    # not in canonical order, a real glycan's length: left exactly as written
    short = '{"z":1,"key":"' + "Gal(b1-4)" * 80 + '"}'
    long_path = "/data/" + "d" * 3000 + "/t.csv"
    long = json.dumps({"file": long_path, "value": "v" * 3000})
    out = bounded_details(pl.Series([short, None, long]))
    assert out[0] == short and out[1] is None
    bounded = json.loads(out[2])
    assert bounded["file"] == long_path  # places the finding: kept whole
    assert bounded["value"].startswith("v" * DETAILS_STRING_CHARS + "… (3,000 characters")


def test_gl402_lists_at_most_twenty_training_labels_when_long(shared) -> None:
    """The real case: one glycan of glycowork's taxonomy sample has 113 training labels, all
    of them listed in each of its GL402 findings before (17 kB each). Short lists (23 labels
    in 4 kB) stay whole: the cut is for size, not a count every list must keep to."""
    report = curate.audit("glycan", shared("data/glycan/glycowork_sample.csv"), select=["GL402"])
    texts = report.findings["details"].to_list()
    lists = [json.loads(d)["train_labels"] for d in texts]
    assert "… (93 more)" in {x[-1] for x in lists}
    for text, labels in zip(texts, lists, strict=True):
        if len(text.encode()) > DETAILS_CHARS:
            assert len(labels) <= DETAILS_ITEMS + 1
    assert max(len(t.encode()) for t in texts) < 2 * DETAILS_CHARS


def test_a_repeated_long_case_id_is_quoted_cut(tmp_path: Path, capsys) -> None:
    """KE's repeated-case-id message quoted the id whole (cut only at 2,000 characters by the
    message net): now as the record column shows it, 200 characters and the same digest."""
    from conftest import SAMPLE

    cases = json.loads(SAMPLE.read_text(encoding="utf-8"))[:3]
    cases[0]["case_id"] = cases[2]["case_id"] = "c" * 50_000
    p = tmp_path / "repeated.json"
    p.write_text(json.dumps(cases), encoding="utf-8")
    report = curate.audit("mquake", p)
    f = report.findings.filter(report.findings["rule"] == "KE002")
    (record,) = f["record"].to_list()
    assert record.startswith("c" * QUOTE_CHARS + "… (50,000 characters, sha256 ")
    assert f["message"].item() == f"case_id {record} occurs 2 times"


def test_a_bounded_details_keeps_an_integer_beyond_64_bits_exact() -> None:
    import polars as pl

    big = 2**70 + 1
    (out,) = bounded_details(pl.Series([json.dumps({"n": big, "v": "v" * 3000})])).to_list()
    assert json.loads(out)["n"] == big
