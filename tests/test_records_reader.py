"""The model-driven reader (:mod:`curate.schemas.records`, :class:`RecordsFamily.read`):
properties.

1. Round trip: valid rows written as CSV or JSON Lines read back as the same rows, typed, with
   no finding.
2. Same verdicts as the model: for any text in any cell, a row is valid exactly when
   ``Model.model_validate`` takes the same cells, with the same values, and the invalid fields
   are the ones pydantic names. The columnwise shortcut must never be a second opinion.
"""

from __future__ import annotations

import csv
import enum
import json
import math
from pathlib import Path
from typing import Literal

import polars as pl
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, TypeAdapter, ValidationError, field_validator

from curate.core.keys import Keys
from curate.families.records import RecordsFamily
from curate.schemas.records import validate_frame


class Colour(enum.StrEnum):
    RED = "red"
    GREEN = "green"


class Row(BaseModel):
    name: str
    count: int
    score: float
    ok: bool
    label: Literal["a", "b", "c"]
    colour: Colour | None = None
    rank: int = Field(default=0, ge=0, le=1000)


class Checked(Row):
    """The same fields with a validator: validated row by row."""

    @field_validator("name")
    @classmethod
    def _no_digit(cls, v: str) -> str:
        if any(c.isdigit() for c in v):
            raise ValueError("no digits in a name")
        return v


class Rows(RecordsFamily):
    name = "rows-under-test"
    Model = Row
    key = Keys("name", ("name",), split=None)
    prefix = "RT"
    split_field = None


FAMILY = Rows()
FIELDS = list(Row.model_fields)

# any text but control characters (newlines and tabs included); CSV cannot tell an empty
# string from an empty cell, so names are not empty
_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), include_characters="\n\t"),
    max_size=20,
)
_names = _text.filter(bool)
_rows = st.fixed_dictionaries(
    {
        "name": _names,
        "count": st.integers(-(2**63), 2**63 - 1),
        "score": st.floats(allow_nan=False),
        "ok": st.booleans(),
        "label": st.sampled_from(["a", "b", "c"]),
        "colour": st.none() | st.sampled_from(["red", "green"]),
        "rank": st.integers(0, 1000),
    }
)


def _cell(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(_rows, min_size=1, max_size=12), fmt=st.sampled_from(["csv", "jsonl"]))
def test_valid_rows_round_trip(tmp_path: Path, rows: list[dict], fmt: str) -> None:
    # JSON has no infinity (``Infinity`` is not JSON); CSV spells it ``inf``
    assume(fmt == "csv" or all(math.isfinite(r["score"]) for r in rows))
    path = tmp_path / f"rows.{fmt}"
    if fmt == "csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(FIELDS)
            w.writerows([[_cell(r[k]) for k in FIELDS] for r in rows])
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = FAMILY.load(path)
    assert data.schema_findings.height == 0, data.schema_findings["message"].to_list()
    assert data.values.to_dicts() == rows
    assert data.values.schema["count"] == pl.Int64 and data.values.schema["ok"] == pl.Boolean


# any text, and the spellings near the edges of what the shortcut takes
_numberish = st.sampled_from(
    ["0", "-0", "+7", " 7", "7 ", "1_000", "1e3", "1.0", "1.5", ".5", "5.", "nan", "-inf",
     "Infinity", "0x1f", "٣", "1" * 19, "9" * 30, "true", "True", "TRUE", "yes", "off", "1", ""]
)  # fmt: skip
_cells = st.one_of(_text, _numberish, st.sampled_from(["a", "b", "A", "red", "Red", "green "]))


def _beyond_int64(cell: str) -> bool:
    try:
        value = TypeAdapter(int).validate_python(cell or None)
    except ValidationError:
        return False
    return not -(2**63) <= value < 2**63


def _pydantic_fields(model: type[BaseModel], cells: dict[str, str]) -> set[str]:
    try:
        model.model_validate(cells)
    except ValidationError as e:
        return {str(err["loc"][0]) if err["loc"] else "" for err in e.errors()}
    return set()


@pytest.mark.parametrize("model", [Row, Checked], ids=["columnwise", "row-wise"])
@settings(max_examples=300, deadline=None)
@given(cells=st.lists(st.fixed_dictionaries({k: _cells for k in FIELDS}), min_size=1, max_size=8))
def test_same_verdicts_as_the_model(model: type[BaseModel], cells: list[dict[str, str]]) -> None:
    frame = pl.DataFrame(
        {k: [c[k] or None for c in cells] for k in FIELDS}, schema=dict.fromkeys(FIELDS, pl.String)
    )
    typed, problems = validate_frame(frame, model)
    for i, row in enumerate(cells):
        given_cells = {k: v for k, v in row.items() if v}  # an empty cell is a missing value
        mine = problems.filter(pl.col("row") == i)
        # the one deliberate difference: an integer pydantic takes that no Int64 column holds
        # (export would lose it) is reported; row by row only once the row is otherwise valid
        rest = _pydantic_fields(model, given_cells)
        big = _beyond_int64(row["count"]) and (model is Row or not rest)
        names = rest | ({"count"} if big else set())
        if names:
            assert set(mine["field"].to_list()) == names, (row, mine.to_dicts())
            continue
        expected = model.model_validate(given_cells).model_dump()
        assert mine.height == 0, (row, mine.to_dicts())
        got = typed.row(i, named=True)
        for k, v in expected.items():
            v = v.value if isinstance(v, enum.Enum) else v
            if isinstance(v, float) and math.isnan(v):
                assert math.isnan(got[k]), (k, row)
            else:
                assert got[k] == v, (k, row, got[k], v)


class Labelled(BaseModel):
    id: str
    text: str
    split: Literal["train", "validation", "test"]


class LabelledRows(RecordsFamily):
    name = "labelled-under-test"
    Model = Labelled
    key = Keys("text", ("text",))
    prefix = "LT"
    id_field = "id"


def test_a_list_where_text_belongs_is_one_finding_naming_record_and_field(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    rows = [
        {"id": "a", "text": "fine", "split": "train"},
        {"id": "b", "text": ["two", "texts"], "split": "train"},
        {"id": "c", "text": "also fine", "split": "Test"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    data = LabelledRows().load(path)
    found = data.schema_findings.select("record", "field", "message").to_dicts()
    assert found == [
        {
            "record": "b",
            "field": "text",
            "message": 'text: Input should be a valid string (got \'["two","texts"]\')',
        }
    ]
    # the split is the record's split column, spelt canonically, and the model's split field
    assert data.rows["split"].to_list() == ["train", "train", "test"]
    assert data.values["split"].to_list() == ["train", "train", "test"]  # only b.text is bad
    tables = LabelledRows().to_tables(data)
    assert {k: t.column_names for k, t in tables.items()} == {
        "train": ["id", "text"],
        "test": ["id", "text"],
    }
