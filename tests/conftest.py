"""Shared fixtures: real data paths and a builder of consistent synthetic MQuAKE cases."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
HARD = SHARED / "mquake" / "MQuAKE-hard.json"
GLYCAN_SAMPLE = SHARED / "glycan" / "glycowork_sample.csv"
SUGARBASE = SHARED / "glycan" / "glycowork_upstream" / "v3_sugarbase.csv"
SAMPLE = ROOT / "curate" / "data" / "samples" / "mquake_sample.json"

#: Relations from MQuAKE's 44 (labels are only used to build readable labels).
REL = {
    "P27": "country of citizenship",
    "P37": "official language",
    "P36": "capital",
    "P35": "head of state",
    "P30": "continent",
    "P6": "head of government",
}


@pytest.fixture(scope="session")
def hard_path() -> Path:
    if not HARD.exists():
        pytest.skip(f"real data missing: {HARD}")
    return HARD


@pytest.fixture(scope="session")
def hard_records(hard_path: Path) -> list[dict[str, Any]]:
    return json.loads(hard_path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def glycan_sample_path() -> Path:
    if not GLYCAN_SAMPLE.exists():
        pytest.skip(f"real data missing: {GLYCAN_SAMPLE}")
    return GLYCAN_SAMPLE


@pytest.fixture(scope="session")
def sugarbase_path() -> Path:
    if not SUGARBASE.exists():
        pytest.skip(f"real data missing: {SUGARBASE}")
    return SUGARBASE


def label(entity: str) -> str:
    return f"Entity {entity}"


def make_case(
    case_id: int,
    triples: list[tuple[str, str, str]],
    new_triples: list[tuple[str, str, str]],
    edit_idx: list[int],
    *,
    true_objects: dict[int, str] | None = None,
) -> dict[str, Any]:
    """A case in the original MQuAKE layout that is consistent by construction.

    ``edit_idx`` are the hops of ``new_triples`` that are edits; ``true_objects[h]`` is the
    pre-edit object of that edited fact (defaults to the original hop's object when the subject
    is the same, else a fresh id).
    """
    true_objects = true_objects or {}

    def hops(chain: list[tuple[str, str, str]], tag: str) -> list[dict[str, Any]]:
        return [
            {
                "question": f"What is the {REL.get(r, r)} of {label(s)}? ({tag})",
                "cloze": f"The {REL.get(r, r)} of {label(s)} is",
                "answer": label(o),
                "answer_alias": [f"{o} alias"],
            }
            for s, r, o in chain
        ]

    rewrites = []
    for h in edit_idx:
        s, r, o = new_triples[h]
        if h in true_objects:
            true = true_objects[h]
        elif triples[h][0] == s and triples[h][1] == r:
            true = triples[h][2]
        else:
            true = f"{o}T"
        rewrites.append(
            {
                "prompt": "The " + REL.get(r, r) + " of {} is",
                "subject": label(s),
                "relation_id": r,
                "target_new": {"str": label(o), "id": o},
                "target_true": {"str": label(true), "id": true},
                "question": f"What is the {REL.get(r, r)} of {label(s)}?",
            }
        )
    first = label(triples[0][0])
    return {
        "case_id": case_id,
        "requested_rewrite": rewrites,
        "questions": [f"Q{i} about {first} in case {case_id}?" for i in range(3)],
        "answer": label(triples[-1][2]),
        "answer_alias": [f"{triples[-1][2]} alias"],
        "new_answer": label(new_triples[-1][2]),
        "new_answer_alias": [f"{new_triples[-1][2]} alias"],
        "single_hops": hops(triples, "orig"),
        "new_single_hops": hops(new_triples, "new"),
        "orig": {
            "triples": [list(t) for t in triples],
            "triples_labeled": [[label(s), REL.get(r, r), label(o)] for s, r, o in triples],
            "new_triples": [list(t) for t in new_triples],
            "new_triples_labeled": [[label(s), REL.get(r, r), label(o)] for s, r, o in new_triples],
            "edit_triples": [list(new_triples[h]) for h in edit_idx],
            "edit_triples_idx": list(edit_idx),
        },
    }


def simple_case(case_id: int, n_hops: int = 3, edit_at: tuple[int, ...] = (1,)) -> dict[str, Any]:
    """A clean case with entities private to it: ``Q<case>0<i>`` originals, ``Q<case>9<i>`` new."""
    rels = list(REL)
    triples = [
        (f"Q{case_id}0{i}", rels[i % len(rels)], f"Q{case_id}0{i + 1}") for i in range(n_hops)
    ]
    new = []
    subj = triples[0][0]
    diverged = False
    for h, (_s, r, o) in enumerate(triples):
        if h in edit_at:
            obj = f"Q{case_id}9{h}"
            diverged = True
        elif diverged:
            obj = f"Q{case_id}8{h}"
        else:
            obj = o
        new.append((subj, r, obj))
        subj = obj
    return make_case(case_id, triples, new, list(edit_at))


def write_json(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def clone(rec: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(rec)


def to_flat(case: dict[str, Any], with_edit_triples: bool) -> dict[str, Any]:
    """The flattened MQuAKE-Remastered layout of an original-layout case."""
    flat = {k: v for k, v in case.items() if k != "orig"}
    flat["requested_rewrite"] = [
        {
            "prompt": r["prompt"],
            "subject": r["subject"],
            "relation_id": r["relation_id"],
            "target_new_str": r["target_new"]["str"],
            "target_new_id": r["target_new"]["id"],
            "target_true_str": r["target_true"]["str"],
            "target_true_id": r["target_true"]["id"],
            "question": r["question"],
        }
        for r in case["requested_rewrite"]
    ]
    o = case["orig"]
    flat["orig_triples"] = o["triples"]
    flat["orig_triples_labeled"] = o["triples_labeled"]
    flat["new_triples"] = o["new_triples"]
    flat["new_triples_labeled"] = o["new_triples_labeled"]
    if with_edit_triples:
        flat["edit_triples"] = o["edit_triples"]
        flat["edit_triples_idx"] = o["edit_triples_idx"]
    return flat
