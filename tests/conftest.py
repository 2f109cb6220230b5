"""Shared fixtures: the one way to the shared data folder, and a builder of synthetic MQuAKE cases.

Real data lives in the ``shared`` folder beside the project root (never an absolute path). Tests
reach it only through the :func:`shared` fixture or the fixtures built on it, so that missing data
is noticed in one place: without ``CI`` the tests that need it are skipped with the path they
looked for; with ``CI`` set the run fails, because a green CI run that silently skipped the
real-data tests would claim what it never checked.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The shared data folder beside the project root.
SHARED = ROOT.parent / "shared"
SAMPLE = ROOT / "curate" / "data" / "samples" / "mquake_sample.json"


def _in_ci() -> bool:
    return os.environ.get("CI", "") != ""


def _missing(path: Path) -> NoReturn:
    reason = f"shared data missing: {path} (the `shared` folder beside the project root)"
    if _in_ci():
        pytest.fail(f"{reason}; CI is set, so it fails instead of skipping", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _user_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Caches curate keeps in the user's cache folder (the media scan's) go to a folder of the
    test session, never to the real ``~/.cache``."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))


@pytest.fixture(autouse=True)
def _no_signal_left_behind() -> Iterator[None]:
    """A test that leaves a recorded stop signal (or a committed output) in this process fails
    itself, here, instead of the next test of its worker failing at a rename with
    ``Interrupted`` (which test that is depends on how xdist shares the tests out: CI saw three
    plugin-family tests fail that way, and a local run did not)."""
    yield
    outputs = sys.modules.get("curate.core.outputs")
    if outputs is not None and (outputs.received_signal() or outputs.committed_outputs()):
        left = (outputs.received_signal(), outputs.committed_outputs())
        outputs.forget_run()
        pytest.fail(f"the test left a recorded signal or committed outputs behind: {left}")


@pytest.fixture(scope="session")
def shared() -> Callable[[str], Path]:
    """``shared("data/mquake/MQuAKE-hard.json")``: a path in the shared folder that exists.

    A missing file skips the test asking for it (with the path in the reason), or fails it when
    ``CI`` is set.
    """

    def resolve(relative: str) -> Path:
        path = SHARED / relative
        if not path.exists():
            _missing(path)
        return path

    return resolve


@pytest.fixture(scope="session")
def hard_path(shared: Callable[[str], Path]) -> Path:
    return shared("data/mquake/MQuAKE-hard.json")


@pytest.fixture(scope="session")
def species_csv(shared: Callable[[str], Path]) -> Path:
    return shared("data/glycan/glycowork_upstream/glyco_targets_species_seq_all_V3.csv")


@pytest.fixture(scope="session")
def sugarbase_csv(shared: Callable[[str], Path]) -> Path:
    return shared("data/glycan/glycowork_upstream/v3_sugarbase.csv")


@pytest.fixture(scope="session")
def glycan_sample_csv(shared: Callable[[str], Path]) -> Path:
    return shared("data/glycan/glycowork_sample.csv")


@pytest.fixture(scope="session")
def hard_records(hard_path: Path) -> list[dict[str, Any]]:
    return json.loads(hard_path.read_text(encoding="utf-8"))


@contextlib.contextmanager
def named_pipe(path: Path, data: bytes) -> Iterator[Path]:
    """A FIFO at ``path`` (made unless it exists) that a thread fills with ``data`` once a reader
    opens it (as a shell's ``<(zcat data.gz)`` or ``mkfifo`` does): its bytes can be read once,
    and not sought.

    At the end a writer nobody read to the end (a command that refused the input first) is let
    go: opening the FIFO for reading and closing it ends its wait with a broken pipe. Its
    thread blocks SIGPIPE, whose default action (should anything in the test process set it)
    would kill the whole test process.
    """
    if not path.exists():  # an existing FIFO is fed again
        os.mkfifo(path)

    def write() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGPIPE})
        with contextlib.suppress(BrokenPipeError), open(path, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        yield path
    finally:
        while writer.is_alive():
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            writer.join(0.1)


def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    """With ``CI`` set and the shared folder absent, stop before running anything: one loud
    message instead of dozens of per-test failures (or, before, dozens of silent skips)."""
    # The tests kept together on one pytest-xdist worker (the Ray cluster's) first: started
    # last, they ran alone at the end (~2 min of one busy core while the other idled).
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)
    if not _in_ci() or SHARED.is_dir():
        return
    needing = [item.nodeid for item in items if "shared" in getattr(item, "fixturenames", ())]
    if needing:
        pytest.exit(
            f"CI is set and the shared data folder {SHARED} is missing: at least {len(needing)} "
            f"collected tests need it (e.g. {needing[0]}). Put the data there or unset CI.",
            returncode=pytest.ExitCode.TESTS_FAILED,
        )


#: Relations from MQuAKE's 44 (labels are only used to build readable labels).
REL = {
    "P27": "country of citizenship",
    "P37": "official language",
    "P36": "capital",
    "P35": "head of state",
    "P30": "continent",
    "P6": "head of government",
}


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


def to_flat(
    case: dict[str, Any], with_edit_triples: bool, *, with_idx: bool | None = None
) -> dict[str, Any]:
    """The flattened MQuAKE-Remastered layout of an original-layout case.

    ``with_edit_triples=True, with_idx=False`` is the release's own field set (Hugging Face
    ``henryzhongsc/MQuAKE-Remastered``: ``edit_triples`` but no ``edit_triples_idx``, which its
    loaders never read); ``with_idx`` defaults to ``with_edit_triples``. The ``split`` labels
    are the caller's: nothing in an original-layout case says them.
    """
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
    if with_edit_triples if with_idx is None else with_idx:
        flat["edit_triples_idx"] = o["edit_triples_idx"]
    return flat
