"""The baseline file of ``curate check``: the findings a project has accepted, by fingerprint.

Why a file of its own: a dataset repository keeps old, accepted findings (a known duplicate
upstream, a leak the authors document) and must still fail when a push adds a new one, the way
ruff fails on a new lint error in a codebase with a baseline.

Format: JSON written by curate only (``"curate-baseline": 1`` first), one entry per fingerprint
(:func:`curate.reports.verdict.fingerprint`) sorted by dataset, rule, input, record, field, with
the message for a reviewer's eye; ``--update-baseline`` rewrites it atomically and refuses to
overwrite a file that is not one (it could be anyone's JSON).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from curate.core.errors import UsageError
from curate.core.findings import json_bytes
from curate.reports.verdict import CheckResult

#: The first key of a baseline file and its format version.
BASELINE_KEY = "curate-baseline"
BASELINE_VERSION = 1


def read_baseline(path: Path) -> Counter[str]:
    """Fingerprint → how many findings the baseline accepts (a missing file accepts none, and
    so does an empty one: a ``touch``ed placeholder that ``--update-baseline`` then fills, as
    the output gate replaces an empty file)."""
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        return Counter()
    doc = _baseline_doc(path)
    if doc is None:
        raise UsageError(
            f"baseline {path}: not a curate baseline (a JSON object starting with "
            f'"{BASELINE_KEY}"); write one with `curate check --update-baseline`'
        )
    out: Counter[str] = Counter()
    for i, e in enumerate(doc.get("findings") or []):
        if not isinstance(e, dict) or not isinstance(e.get("fingerprint"), str):
            raise UsageError(f"baseline {path}: findings[{i}] has no fingerprint")
        out[e["fingerprint"]] += int(e.get("count", 1))
    return out


def _baseline_doc(path: Path) -> dict[str, Any] | None:
    try:
        doc = orjson.loads(path.read_bytes())
    except (orjson.JSONDecodeError, OSError):
        return None
    if not isinstance(doc, dict) or doc.get(BASELINE_KEY) != BASELINE_VERSION:
        return None
    return doc


def baseline_entries(result: CheckResult) -> list[dict[str, Any]]:
    """What ``--update-baseline`` writes: every finding not ignored, one entry per fingerprint
    (with its count), sorted so that the file's diff shows exactly what changed."""
    grouped: dict[str, dict[str, Any]] = {}
    for d in result.datasets:
        if not d.findings.height:
            continue
        kept = d.findings.filter(pl.col("status") != "ignored")
        for r in kept.iter_rows(named=True):
            e = grouped.get(r["fingerprint"])
            if e is None:
                grouped[r["fingerprint"]] = {
                    "dataset": d.name,
                    "rule": r["rule"],
                    "input": r["source"],
                    "record": r["record"],
                    "field": r["field"] or "",
                    "message": r["message"],
                    "fingerprint": r["fingerprint"],
                    "count": 1,
                }
            else:
                e["count"] += 1
    return sorted(
        grouped.values(),
        key=lambda e: (
            e["dataset"],
            e["rule"],
            e["input"] or "",
            e["record"] or "",
            e["field"],
            e["fingerprint"],
        ),
    )


def write_baseline_check(
    path: Path, protected: Sequence[Path] = (), patterns: Sequence[str] = ()
) -> None:
    """Refuse a baseline destination before the work: an input of the run (a data file, the
    configuration, a path the datasets' globs ``patterns`` match), a folder, or an existing
    non-empty file that is not a curate baseline."""
    from curate.core.outputs import guard_file

    # whether an existing file is a baseline is read from its header below (a clearer message
    # than the gate's); the gate refuses inputs and folders
    guard_file(path, list(protected), option="baseline", owned=lambda _: True, patterns=patterns)
    if path.is_file() and path.stat().st_size and _baseline_doc(path) is None:
        raise UsageError(
            f'baseline {path}: exists and is not a curate baseline (no "{BASELINE_KEY}" '
            "header); curate overwrites only files it wrote: move it or name another file"
        )


def write_baseline(
    path: Path, result: CheckResult, protected: Sequence[Path] = (), patterns: Sequence[str] = ()
) -> int:
    """Rewrite the baseline atomically; refuse a file that is not a curate baseline, or an
    input. Returns the number of entries written."""
    from curate.core.outputs import write_bytes_atomic

    # again: the file may have changed while we worked
    write_baseline_check(path, protected, patterns)
    entries = baseline_entries(result)
    if path.exists():
        # a run over some datasets (--dataset) keeps the others' entries, and so does a dataset
        # that could not be read this time: its accepted findings are not gone, only unseen
        checked = {d.name for d in result.datasets if d.error is None}
        old = (_baseline_doc(path) or {}).get("findings") or []
        kept = [e for e in old if isinstance(e, dict) and e.get("dataset") not in checked]
        entries = sorted(
            kept + entries,
            key=lambda e: (
                str(e.get("dataset")),
                str(e.get("rule")),
                e.get("input") or "",
                e.get("record") or "",
                e.get("field") or "",
                str(e.get("fingerprint")),
            ),
        )
    doc = {
        BASELINE_KEY: BASELINE_VERSION,
        "about": "Findings accepted by `curate check --update-baseline`: a run fails only on "
        "findings whose fingerprint is not listed here (or beyond its count). Regenerate it, "
        "do not edit it by hand.",
        "findings": entries,
    }
    write_bytes_atomic(path, json_bytes(doc, indent=True) + b"\n")
    return len(entries)


def accept_all(result: CheckResult) -> None:
    """After ``--update-baseline``: every new finding is now baselined, so the reports of this
    run show what the next run will see (nothing failing) instead of a verdict just undone."""
    result.newly_accepted = sum(d.count("new") for d in result.datasets)
    result.baseline_written = True
    result.stale = []  # the rewrite dropped them
    for d in result.datasets:
        if d.findings.height:
            d.findings = d.findings.with_columns(
                pl.when(pl.col("status") == "new")
                .then(pl.lit("baselined"))
                .otherwise(pl.col("status"))
                .alias("status"),
                pl.lit(False).alias("fails"),
            )
        for r in d.rules:
            r.baselined += r.new
            r.new = r.new_records = 0
            r.failed = False


def stale_entries(path: Path | None, result: CheckResult) -> list[dict[str, Any]]:
    """Baseline entries that no current finding matches (fixed since): worth dropping."""
    if path is None or not path.exists():
        return []
    doc = _baseline_doc(path) or {}
    seen = {fp for d in result.datasets if d.findings.height for fp in d.findings["fingerprint"]}
    checked = {d.name for d in result.datasets if d.error is None}
    return [
        e
        for e in doc.get("findings") or []
        if isinstance(e, dict) and e.get("dataset") in checked and e.get("fingerprint") not in seen
    ]
