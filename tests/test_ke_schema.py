"""MQuAKE schema: both layouts, precise errors, and round trips (property-based)."""

from __future__ import annotations

from typing import Any

from conftest import make_case, simple_case, to_flat
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.families.knowledge_editing_read import validate_record
from curate.schemas.knowledge_editing import MQuAKECase, RemasteredCase, layout_of, record_id


def test_real_cases_validate_and_round_trip(hard_records) -> None:
    for rec in hard_records:
        layout, case, errs = validate_record(rec)
        assert layout == "original" and not errs
        assert case.to_original() == rec  # nothing lost or reordered


def test_remastered_maps_to_the_same_case(hard_records) -> None:
    for rec in hard_records[:50]:
        for with_edit_triples in (True, False):
            flat = to_flat(rec, with_edit_triples)
            assert layout_of(flat) == "remastered"
            case = RemasteredCase.model_validate(flat).to_case()
            assert case.model_dump() == MQuAKECase.model_validate(rec).model_dump()


def test_arrow_map_and_struct_split_columns() -> None:
    flat = to_flat(simple_case(1), True)
    flat["split"] = [("100", ["edited"]), ("1000", ["unedited"])]  # Arrow map → pylist
    assert RemasteredCase.model_validate(flat).split == {"100": ["edited"], "1000": ["unedited"]}
    flat["split"] = {"100": ["edited"], "3000": None}  # Arrow struct with an absent key
    assert RemasteredCase.model_validate(flat).split == {"100": ["edited"]}


def test_errors_name_record_and_field() -> None:
    rec = simple_case(5)
    rec["orig"]["triples"][1] = ["Q1", "P27"]
    rec["requested_rewrite"][0]["target_new"]["id"] = 17
    rec["answer"] = None
    _, case, errs = validate_record(rec)
    assert case is None
    fields = {e["field"] for e in errs}
    assert {"orig.triples[1]", "requested_rewrite[0].target_new.id", "answer"} <= fields
    assert record_id(rec, 0) == "5"
    assert record_id({"case_id": True}, 3) == "#3"  # a bool is not an id


def test_neither_layout() -> None:
    layout, case, errs = validate_record({"foo": 1})
    assert layout is None and case is None and "neither" in errs[0]["message"]


ids = st.from_regex(r"Q[1-9][0-9]{0,6}", fullmatch=True)
rels = st.sampled_from(["P27", "P37", "P36", "P35", "P30", "P6"])


@st.composite
def cases(draw) -> dict[str, Any]:
    n = draw(st.integers(1, 5))
    ents = draw(st.lists(ids, min_size=2 * n + 2, max_size=2 * n + 2, unique=True))
    rs = draw(st.lists(rels, min_size=n, max_size=n))
    triples = [(ents[i], rs[i], ents[i + 1]) for i in range(n)]
    edit_at = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1)))
    new, subj, diverged = [], ents[0], False
    for h, (_, r, o) in enumerate(triples):
        obj = ents[n + 1 + h] if (h in edit_at or diverged) else o
        diverged = diverged or h in edit_at
        new.append((subj, r, obj))
        subj = obj
    case = make_case(draw(st.integers(0, 10**9)), triples, new, edit_at)
    case["answer_alias"] = draw(st.lists(st.text(min_size=1, max_size=8), max_size=4))
    return case


@settings(max_examples=60, deadline=None)
@given(cases(), st.booleans())
def test_round_trip_both_layouts(case: dict[str, Any], with_edit_triples: bool) -> None:
    original = MQuAKECase.model_validate(case)
    assert original.to_original() == case
    flat = RemasteredCase.model_validate(to_flat(case, with_edit_triples)).to_case()
    assert flat.model_dump() == original.model_dump()
