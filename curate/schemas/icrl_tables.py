"""The in-context RL family's compact tables: what the reader and the scan build, the rules read.

``tasks``       one row per member of each file's root (task groups, and anything else found
                there): name, attributes, and for each of the five datasets its dtype, shape,
                chunks and compression — metadata only, no array data
``histories``   one row per scanned history (:mod:`curate.io.xland_scan`): steps, episodes,
                returns (first and last tenth, final), action and expert-action histograms,
                out-of-range step counts with their first/last step, a content digest, a read
                error if a block could not be read
``episodes``    example rows of broken episodes (at most a few per history and kind; the counts
                are in ``histories``): kind, step range, length, reward, the length the reward
                implies
``lengths``     the histogram of completed episodes' lengths (for the summary's median)

Records are histories: a finding on a history has ``record`` ``"<group>/<history>"`` and ``row``
the history's position over all inputs; a finding on a whole task group has ``record``
``"<group>"`` and the row of the group's first history.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from curate.core.dataset import LoadedDataset
from curate.core.keys import Keys
from curate.io.xland_layout import EPISODE_KINDS, STEP_KINDS
from curate.schemas.icrl import DATASETS, NUM_ACTIONS

__all__ = [
    "EPISODE_SCHEMA",
    "HISTORY_KEYS",
    "HISTORY_SCHEMA",
    "RULESET_KEYS",
    "TASK_CONTENT_KEYS",
    "TASK_KEYS",
    "TASK_SCHEMA",
    "IcrlData",
    "IcrlFile",
    "ScanTables",
    "task_key_table",
]

#: The family's declarations for the shared duplicate joins (RL401-RL404), compared within a
#: file and across files (no split column: a file is a training or an evaluation set whole).
#: A task is its ruleset triple, or the digest of its histories in order; a history its digest.
RULESET_KEYS = Keys("ruleset", ("env_id", "benchmark_id", "ruleset_id"), split=None)
TASK_CONTENT_KEYS = Keys("task content", ("content",), split=None)
HISTORY_KEYS = Keys("history", ("digest",), split=None)

_DATASET_COLUMNS = {
    f"{d}_{what}": t
    for d in DATASETS
    for what, t in (
        ("dtype", pl.String),
        ("shape", pl.List(pl.Int64)),
        ("chunks", pl.List(pl.Int64)),
        ("compression", pl.String),
    )
}

TASK_SCHEMA: dict[str, Any] = {
    "file": pl.Int32,
    "path": pl.String,
    "name": pl.String,
    #: "group", "dataset", "link" (a dangling soft link or an external link that cannot be
    #: opened) or "other" (a root member that is not a group)
    "kind": pl.String,
    #: the name as an integer when it is one (``"007"`` too), else null
    "index": pl.Int64,
    #: position among the file's groups in numeric-then-text order
    "position": pl.Int64,
    "env_id": pl.String,
    "benchmark_id": pl.String,
    "ruleset_id": pl.Int64,
    #: attributes missing, and attributes present with the wrong type (name: what it holds)
    "attrs_missing": pl.List(pl.String),
    "attrs_bad": pl.List(pl.String),
    "datasets_missing": pl.List(pl.String),
    "datasets_extra": pl.List(pl.String),
    #: the root member itself ("link"), or the group's datasets that are links which cannot be
    #: followed, said in words ("dones is a dangling soft link (to /0/missing)")
    "links_broken": pl.List(pl.String),
    **_DATASET_COLUMNS,
    #: ``max_steps`` of the environment ``env_id`` names (null: not an XLand-MiniGrid id)
    "max_steps": pl.Int64,
    #: histories and steps (H, L) from the ``actions`` dataset (or the first one present)
    "histories": pl.Int64,
    #: histories ``curate fix`` dropped from this group (its ``curate-dropped-histories``)
    "histories_dropped": pl.Int64,
    "steps": pl.Int64,
    #: the five datasets are there, of the right kinds, with one (H, L): the scan can read it
    "scannable": pl.Boolean,
    #: chosen for the scan (all scannable groups unless --tasks/--fraction/--metadata-only)
    "scanned": pl.Boolean,
    #: global record index of the group's first history
    "row": pl.Int64,
}

HISTORY_SCHEMA: dict[str, Any] = {
    "file": pl.Int32,
    "group": pl.String,
    "group_index": pl.Int64,
    "history": pl.Int64,
    "row": pl.Int64,
    "record": pl.String,
    "steps": pl.Int64,
    "steps_read": pl.Int64,
    "episodes": pl.Int64,
    "successes": pl.Int64,
    "tail": pl.Int64,
    "return_sum": pl.Float64,
    "first_tenth": pl.Float64,
    "last_tenth": pl.Float64,
    "final_return": pl.Float64,
    "digest": pl.String,
    "error": pl.String,
    "error_field": pl.String,
    "error_start": pl.Int64,
    "error_end": pl.Int64,
    **{f"{k}_n": pl.Int64 for k in EPISODE_KINDS},
    **{f"{k}_{p}": pl.Int64 for k in STEP_KINDS for p in ("n", "first", "last")},
    "state_value": pl.Int64,
    "action_value": pl.Int64,
    "expert_value": pl.Int64,
    **{f"action_{a}": pl.Int64 for a in range(NUM_ACTIONS)},
    **{f"expert_{a}": pl.Int64 for a in range(NUM_ACTIONS)},
}

EPISODE_SCHEMA: dict[str, Any] = {
    "file": pl.Int32,
    "group_index": pl.Int64,
    "history": pl.Int64,
    "kind": pl.String,
    "start": pl.Int64,
    "end": pl.Int64,
    "length": pl.Int64,
    "reward": pl.Float64,
    "implied": pl.Int64,
    "done": pl.Boolean,
}

LENGTH_SCHEMA: dict[str, Any] = {"length": pl.Int64, "count": pl.Int64}


@dataclass
class IcrlFile:
    """One input file: where, its hash and size, and how many histories it holds."""

    index: int
    path: str
    sha256: str
    size: int
    histories: int
    groups: int


@dataclass
class ScanTables:
    """The scan's output over every input, as polars frames (see the module docstring)."""

    histories: pl.DataFrame
    episodes: pl.DataFrame
    lengths: pl.DataFrame
    #: wall seconds of the scan and the processes it used
    seconds: float = 0.0
    workers: int = 1

    @classmethod
    def empty(cls) -> ScanTables:
        return cls(
            pl.DataFrame(schema=HISTORY_SCHEMA),
            pl.DataFrame(schema=EPISODE_SCHEMA),
            pl.DataFrame(schema=LENGTH_SCHEMA),
        )


@dataclass
class IcrlData(LoadedDataset):
    """Loaded learning-history files: their metadata, and the scan to run on first use.

    ``scanner`` is set by the reader (:mod:`curate.families.icrl_read`), which owns the HDF5 access;
    the rules reach the arrays' compact tables only through the shared table ``scan``
    (:mod:`curate.audits.icrl.registry`). The scan runs once per loaded data and is kept: an
    export or a fix audits, then asks which histories are invalid, then reads the arrays again
    to write them — the compact tables must not cost a second pass over a 326 GB file.
    """

    files: list[IcrlFile] = field(default_factory=list)
    tasks: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TASK_SCHEMA))
    scanner: Callable[[IcrlData], ScanTables] | None = field(default=None, repr=False)
    stats: dict[str, Any] = field(default_factory=dict)
    _scanned: ScanTables | None = field(default=None, repr=False)

    def scan(self) -> ScanTables:
        if self.scanner is None:
            return ScanTables.empty()
        if self._scanned is None:
            self._scanned = self.scanner(self)
        return self._scanned

    def groups(self) -> pl.DataFrame:
        """The task groups (root members that are groups)."""
        return self.tasks.filter(pl.col("kind") == "group")


def task_key_table(data: LoadedDataset) -> pl.DataFrame:
    """``record, split, key``: one row per fully scanned task group (no splits in this
    layout), the key a SHA-1 over its histories' digests in order: ``curate overlap --key
    task`` (:data:`TASK_KEYS`)."""
    import hashlib

    assert isinstance(data, IcrlData)
    h = data.scan().histories
    if h.is_empty():
        return pl.DataFrame(schema={"record": pl.String, "split": pl.String, "key": pl.String})
    tasks = (
        h.sort("file", "group_index", "history")
        .group_by("file", "group", "group_index", maintain_order=True)
        .agg(pl.col("digest").str.join(""), (pl.col("error") != "").any().alias("err"))
        .filter(~pl.col("err"))
    )
    keys = [hashlib.sha1(d.encode(), usedforsecurity=False).hexdigest() for d in tasks["digest"]]
    return tasks.select(
        pl.col("group").alias("record"), pl.lit(None, pl.String).alias("split")
    ).with_columns(pl.Series("key", keys, dtype=pl.String))


#: ``curate overlap --key task``: a task group by its content (RL402/RL404 compare tasks so).
TASK_KEYS = Keys(
    "task",
    ("key",),
    split=None,
    doc="content hash of a task group: SHA-1 over the digests of its histories in "
    "order (from the scan); a task copied under another id or into another file "
    "has the same key; groups the scan could not read fully are left out",
    table=task_key_table,
)
