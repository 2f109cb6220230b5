"""A plug-in family written in a test file gets curate's duplicates, leakage, fix and export.

The family below is what a third-party package would ship (issue 31, "Done when"): a Pydantic
model of a record, a :class:`~curate.core.keys.Keys` declaration, one rule of its own with a fix
edit, and :class:`~curate.families.records.RecordsFamily` for the rest. Nothing in curate knows
it; it goes through the public API as a :class:`~curate.families.base.Family` object.

The data is a small product-review sentiment table in the shape such tables have on the Hub
(id, text, star rating, label, split), with the defects real ones have: a review scraped twice,
a training review copied into the test split, a rating outside the scale and a text with stray
whitespace.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Literal

import orjson
import polars as pl
import pyarrow.parquet as pq
import pytest
from pydantic import BaseModel, Field

import curate.api as api
from curate.audits.shared.records import RecordsData
from curate.core.errors import InputError
from curate.core.findings import json_struct
from curate.core.keys import Keys
from curate.core.rules import AuditContext, RuleSet
from curate.families.base import CardDefaults
from curate.families.records import RecordsFamily

# ---------------------------------------------------------------- the plug-in family (~50 lines)


class Review(BaseModel):
    review_id: str
    text: str = Field(min_length=1)
    rating: int = Field(ge=1, le=5)
    label: Literal["negative", "neutral", "positive"]


REVIEW_RULES = RuleSet("reviews")


@REVIEW_RULES.rule(
    "RV101", "text-whitespace", category="consistency", severity="warning", fix="always"
)
def text_whitespace(data: RecordsData, ctx: AuditContext) -> pl.DataFrame:
    """A review text starts or ends with whitespace (a scraping artefact).

    Two copies of one review then count as two texts. Fix (safe): strip it.
    """
    rows = data.valid_rows().filter(pl.col("text") != pl.col("text").str.strip_chars())
    return rows.select(
        "row",
        "record",
        pl.lit("text").alias("field"),
        pl.lit("text has leading or trailing whitespace").alias("message"),
        pl.lit("{}").alias("details"),
        json_struct(
            pl.lit("set").alias("op"),
            pl.lit("text").alias("field"),
            pl.col("text").alias("old"),
            pl.col("text").str.strip_chars().alias("new"),
        ).alias("fix"),
    )


class Reviews(RecordsFamily):
    name = "reviews"
    card = CardDefaults(title="Product reviews with a sentiment label")
    Model = Review
    key = Keys("text", ("text",))
    prefix = "RV"
    id_field = "review_id"
    rules = REVIEW_RULES


FAMILY = Reviews()

# ---------------------------------------------------------------- the data

ROWS = [
    ("r1", "Battery lasts two full days, very happy.", "5", "positive", "train"),
    ("r2", "Stopped charging after a week.", "1", "negative", "train"),
    ("r3", "Does what it says, nothing more.", "3", "neutral", "train"),
    ("r4", "The strap broke on day one.", "2", "negative", "train"),
    ("r5", "Stopped charging after a week.", "1", "negative", "train"),  # r2 scraped twice
    ("r6", "Screen is bright and sharp.", "4", "positive", "train"),
    ("r7", "Arrived late but works fine.", "3", "neutral", "validation"),
    ("r8", "Best purchase this year!", "7", "positive", "validation"),  # not a 1-5 rating
    ("r9", "Too heavy to wear all day.", "2", "negative", "test"),
    ("r10", "Does what it says, nothing more.", "3", "neutral", "test"),  # r3, in test
    ("r11", "  Great value for the price. ", "5", "positive", "test"),
    ("r12", "Sound quality is poor.", "1", "negative", "test"),
]
HEADER = ("review_id", "text", "rating", "label", "split")


def _write(folder: Path, fmt: str) -> Path:
    if fmt == "csv":
        path = folder / "reviews.csv"
        with path.open("w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([HEADER, *ROWS])
    else:  # JSON Lines as a scraper writes it: numbers as numbers
        path = folder / "reviews.jsonl"
        records = [dict(zip(HEADER, r, strict=True)) | {"rating": int(r[2])} for r in ROWS]
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _written(folder: Path) -> dict[str, list[dict]]:
    """The rows of each split of a written folder, as its parquet files hold them."""
    return {
        p.name.split("-")[0]: pq.read_table(p).to_pylist()
        for p in sorted((folder / "data").glob("*.parquet"))
    }


def _by_rule(report) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in report.findings.iter_rows(named=True):
        out.setdefault(r["rule"], []).append(r)
    return out


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_audit_finds_invalid_duplicate_leak_and_own_rule(tmp_path: Path, fmt: str) -> None:
    report = api.audit(FAMILY, _write(tmp_path, fmt))
    found = _by_rule(report)
    assert set(found) == {"RV001", "RV401", "RV402", "RV101"}
    (bad,) = found["RV001"]
    assert (bad["record"], bad["field"], bad["severity"]) == ("r8", "rating", "error")
    assert bad["message"] == "rating: Input should be less than or equal to 5 (got '7')"
    assert json.loads(bad["details"])["file"].endswith(f"reviews.{fmt}")
    (dup,) = found["RV401"]
    assert (dup["record"], dup["field"], dup["category"]) == ("r5", "text", "duplicate")
    assert "as record r2 (row 1) in split train, every field equal" in dup["message"]
    assert orjson.loads(dup["fix"]) == {"op": "drop"}
    (leak,) = found["RV402"]
    assert (leak["record"], leak["category"], leak["severity"]) == ("r10", "leakage", "error")
    assert leak["message"] == "test record has the same text as record r3 (row 2) in train"
    assert orjson.loads(leak["fix"])["op"] == "move"
    assert [r["record"] for r in found["RV101"]] == ["r11"]
    assert report.stats["splits"] == {"test": 4, "train": 6, "validation": 2}
    assert report.stats["valid_rows"] == 11


def test_the_invalid_row_takes_no_part_in_other_rules(tmp_path: Path) -> None:
    """r8 copied into test with a valid rating: r8 itself is invalid, so no leak is reported
    for the copy (an invalid record is nobody's original)."""
    path = _write(tmp_path, "csv")
    with path.open("a", newline="", encoding="utf-8") as f:
        csv.writer(f).writerow(("r13", "Best purchase this year!", "5", "positive", "test"))
    found = _by_rule(api.audit(FAMILY, path))
    assert [r["record"] for r in found["RV402"]] == ["r10"]


def test_fix_safe_only(tmp_path: Path) -> None:
    out = api.fix(FAMILY, _write(tmp_path, "csv"), tmp_path / "fixed")
    tables = _written(tmp_path / "fixed")
    ids = {k: [r["review_id"] for r in v] for k, v in tables.items()}
    assert ids == {
        "train": ["r1", "r2", "r3", "r4", "r6"],  # r5, the later copy, dropped
        "validation": ["r7"],  # r8 left out as invalid
        "test": ["r9", "r10", "r11", "r12"],  # the leak stays: its fix is unsafe
    }
    assert tables["test"][2]["text"] == "Great value for the price."
    assert out.fix.summary["unsafe_fixes_available"] == {"RV402": 1}
    log = [json.loads(x) for x in (tmp_path / "fixed" / "changelog.jsonl").read_text().splitlines()]
    invalid = [e for e in log if e["rule"] == "RV001"]
    assert invalid == [
        {
            "record": "r8",
            "field": "",
            "old": dict(zip(HEADER, ROWS[7], strict=True)),  # whole, as read
            "new": None,
            "rule": "RV001",
            "reason": "dropped: invalid record (rating: Input should be less than or equal to 5"
            " (got '7'))",
            "finding": {
                "rule": "RV001",
                "record": "r8",
                "field": "rating",
                "message": "rating: Input should be less than or equal to 5 (got '7')",
            },
            "pass": 0,
        }
    ]
    drops = [(e["record"], e["rule"], e["pass"]) for e in log if e["rule"] == "RV401"]
    assert drops == [("r5", "RV401", 1)]


def test_a_column_the_model_does_not_declare_tells_records_apart(tmp_path: Path) -> None:
    """Found by a new-user review (the table and deepfake families had the same fault): the
    duplicate rule compared the model's fields only, so r5, whose ``scraped_at`` (a column
    the model does not declare, published as read) differs from r2's, was dropped as a safe
    copy. It is a copy with another value now: unsafe, named in the message."""
    path = tmp_path / "reviews.csv"
    with path.open("w", newline="", encoding="utf-8") as f:
        rows = [(*r, f"2024-05-{i + 1:02d}") for i, r in enumerate(ROWS)]
        csv.writer(f).writerows([(*HEADER, "scraped_at"), *rows])
    report = api.audit(FAMILY, path)
    (hit,) = report.findings.filter(pl.col("rule") == "RV401").iter_rows(named=True)
    assert hit["record"] == "r5" and "scraped_at" in hit["message"]
    assert json.loads(hit["fix"])["unsafe"] is True
    api.fix(FAMILY, path, tmp_path / "fixed")
    assert "r5" in {r["review_id"] for r in _written(tmp_path / "fixed")["train"]}


def test_fix_unsafe_moves_the_leak_then_drops_it_as_a_copy(tmp_path: Path) -> None:
    out = api.fix(FAMILY, _write(tmp_path, "csv"), tmp_path / "fixed", unsafe_fixes=True)
    log = [json.loads(x) for x in (tmp_path / "fixed" / "changelog.jsonl").read_text().splitlines()]
    r10 = [
        (e["rule"], e["field"], e["old"], e["new"], e["pass"]) for e in log if e["record"] == "r10"
    ]
    assert r10[0] == ("RV402", "split", "test", "train", 1)
    assert r10[1][:2] == ("RV401", "") and r10[1][3] is None and r10[1][4] == 2
    assert out.fix.after is not None and out.fix.after.findings.height == 0
    assert "unsafe_fixes_available" not in out.fix.summary


def test_export_loads_with_datasets(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    api.export(FAMILY, _write(tmp_path, "jsonl"), tmp_path / "hf")
    ds = datasets.load_dataset(str(tmp_path / "hf"))
    assert {k: ds[k].num_rows for k in ds} == {"train": 6, "validation": 1, "test": 4}
    assert ds["validation"]["review_id"] == ["r7"]
    assert ds["train"].features["rating"].dtype == "int64"
    assert "split" not in ds["train"].column_names  # the split is the folder layout
    assert ds["test"][3] == {
        "review_id": "r12",
        "text": "Sound quality is poor.",
        "rating": 1,
        "label": "negative",
    }
    # the folder is an input like any other: splits from its layout, the invalid row gone,
    # the relations (a copy, a leak) still there for `curate fix` to resolve
    again = api.audit(FAMILY, tmp_path / "hf")
    assert again.stats["splits"] == {"test": 4, "train": 6, "validation": 1}
    assert set(_by_rule(again)) == {"RV401", "RV402", "RV101"}


def test_rules_are_documented_with_the_declared_key() -> None:
    codes = {r.code: r for r in FAMILY.rules}
    assert list(codes) == ["RV001", "RV101", "RV401", "RV402"]
    assert FAMILY.rules.invalid == ("RV001",)
    assert codes["RV401"].summary.startswith("Two records of one split have the same text:")
    assert codes["RV401"].fix_label == "fix: always (safe, some unsafe)"
    assert codes["RV402"].fix_label == "fix: always (unsafe)"
    assert "train < validation < test" in codes["RV402"].doc


def test_a_table_without_a_required_column_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "ratings.csv"
    path.write_text("review_id,rating,split\nr1,5,train\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        api.audit(FAMILY, path)
    assert e.value.one_line() == (
        f"{path}: no column for required field(s) text, label of reviews "
        "(columns: review_id, rating, split)"
    )
