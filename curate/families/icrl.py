"""The in-context RL family (XLand-100B-style learning histories in HDF5): reader and registration.

Layout and invariants: :mod:`curate.schemas.icrl`. Tables: :mod:`curate.schemas.icrl_tables`.
The scan over the arrays: :mod:`curate.io.xland_scan`. Rules: :mod:`curate.audits.icrl`.

Reading happens in two steps. :meth:`IcrlFamily.load` checks that each input really is an HDF5
file (by its signature, before any HDF5 library call: a saved HTML or XML error page, an empty
or truncated download is one precise line and exit 2) and reads the *metadata* only — the root's
members, each task group's attributes and each dataset's dtype, shape, chunks and filter — into
the ``tasks`` table. The arrays are read later, once, by the scan, when the first rule that
needs its tables asks for them (the shared table ``scan``); ``--metadata-only`` never reads them,
and ``--tasks N`` / ``--fraction F`` scan a seeded sample of the task groups.

Why a process pool: h5py serialises every call on one lock, so threads cannot decompress two
chunks at once; processes can. The scan is split into contiguous ranges of task groups, each
scanned by :func:`curate.io.xland_scan.scan_tasks` in a worker started with ``spawn`` (no
HDF5 or polars state is forked) or in the calling process, which scans too while the workers
start, and the results are concatenated in order. Small scans run in
the calling process: starting workers costs more than it saves below a few million steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import polars as pl
import pyarrow as pa

from curate.audits.icrl import RULES
from curate.core.dataset import ChangeEntry, LoadedDataset, Written
from curate.core.diff import DiffSpec
from curate.core.errors import InputError
from curate.core.findings import RULE_OUTPUT_SCHEMA, InputInfo, Report, rule_output
from curate.core.fixes import RECORD, ROW, SPLIT
from curate.core.keys import Keys
from curate.core.options import FamilyOptions
from curate.core.rules import AuditContext, RuleSet
from curate.core.streams import SplitStream
from curate.families.base import CardDefaults, Family, InputSpec, Progress
from curate.families.hints import hinted
from curate.families.icrl_publish import (
    GroupCopy,
    config_name,
    configs,
    export_stream,
    kept_per_group,
    write_fixed,
)
from curate.families.icrl_read import (
    check_hdf5,
    check_layout,
    choose_tasks,
    local_file,
    read_metadata,
    run_scan,
)
from curate.io.read import sha256_of
from curate.io.sniff import Probe
from curate.schemas.icrl import (
    DATASETS,
    DROPPED_ATTR,
    IcrlOptions,
)
from curate.schemas.icrl_tables import (
    TASK_KEYS,
    TASK_SCHEMA,
    IcrlData,
    IcrlFile,
    ScanTables,
)

# --------------------------------------------------------------------------- the family


class IcrlFamily(Family):
    name = "icrl"
    aliases: tuple[str, ...] = ("xland",)
    card: CardDefaults = CardDefaults(
        title="In-context RL learning histories (XLand-100B-style HDF5)",
        license="cc-by-sa-4.0",
        task_categories=("reinforcement-learning",),
    )
    Options: type[FamilyOptions] = IcrlOptions
    rules: RuleSet = RULES
    #: ``curate overlap --key task``: a task group's content hash (its histories' digests in
    #: order), as RL402/RL404 compare tasks — equal bytes whatever the group is called.
    keys: tuple[Keys, ...] = (TASK_KEYS,)
    inputs: InputSpec = InputSpec(
        help="Local HDF5 files of learning histories (XLand-100B layout), or a folder holding "
        "one (what curate fix wrote).",
        text=False,
    )

    def sniff(self, probe: Probe) -> str | None:
        """An HDF5 file one of whose first root groups holds three or more of the task
        datasets (as :func:`check_layout` reads a task group); only the first few groups'
        names are read, no array."""
        if not probe.is_hdf5:
            return None
        try:
            with h5py.File(probe.path, "r") as f:
                for i, key in enumerate(f):
                    if i >= 8:
                        break
                    g = f.get(key)
                    if isinstance(g, h5py.Group) and len(set(DATASETS) & set(g.keys())) >= 3:
                        return "an in-context RL history file (HDF5, XLand-100B layout)"
        except (OSError, ValueError, TypeError):
            return None
        return None

    def read(
        self,
        paths: list[str | Path],
        options: FamilyOptions,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
    ) -> IcrlData:
        """Check each input is an HDF5 file and read its metadata (no array data)."""
        opts = options
        assert isinstance(opts, IcrlOptions)
        metas, files, inputs = [], [], []
        row0 = 0
        for i, name in enumerate(paths):
            path = local_file(str(name))
            try:
                check_hdf5(path)
            except InputError as e:
                if "not an HDF5 file" in e.message:  # a table of another family, maybe
                    raise hinted(e, self, name) from None
                raise
            meta = read_metadata(path, i, progress)
            check_layout(path, meta)
            meta = choose_tasks(meta, opts, path)
            # records are histories: a group's first history's row over all inputs
            h = meta["histories"].fill_null(0)
            meta = meta.with_columns((row0 + h.cum_sum() - h).alias("row"))
            n_hist = int(h.sum())
            files.append(
                IcrlFile(
                    i,
                    str(path),
                    sha256_of(path),
                    path.stat().st_size,
                    n_hist,
                    int((meta["kind"] == "group").sum()),
                )
            )
            inputs.append(InputInfo(str(path), files[-1].sha256, n_hist, "hdf5"))
            metas.append(meta)
            row0 += n_hist
            if progress:
                progress(f"read metadata of {path.name}", row0)
        tasks = pl.concat(metas, how="vertical") if metas else pl.DataFrame(schema=TASK_SCHEMA)
        return IcrlData(
            family=self.name,
            inputs=inputs,
            schema_findings=rule_output([]),
            options=opts,
            files=files,
            tasks=tasks,
            scanner=run_scan,
        )

    def summarise(self, report: Report, ctx: AuditContext) -> None:
        """The figures a user compares with the published table (XLand-100B's README, Table 1
        of the paper): tasks, histories, transitions, episodes, mean/median final return, median
        episode transitions — over the scanned groups (the sample, with --tasks/--fraction).

        How the published figures were made, and what curate computes (its definitions match
        the table's wherever the file holds what is needed):

        * *Episodes*, *Transitions*: completed episodes (dones) and steps; the table's
          transitions are exactly tasks × 32 × history length.
        * *Median episode transitions*: the median, over **tasks**, of a task's mean episode
          length (its transitions / its completed episodes). Not the median over episodes: a
          median of integer lengths is a whole or half number, and the table's 22.45 and 57.75
          are neither; a per-task mean is a ratio. Checked against the table: for
          Trivial-20B the transitions-weighted mean, 19,496,960,000 / 868,805,556 = 22.44,
          sits just below 22.45, as a median of per-task means over the harmonic-mean-like
          pooled figure should; for XLand-100B the pooled 45.04 is well below 57.75 — a long
          right tail of hard tasks, which a per-episode median could not exceed either way.
          (``median_episode_length`` in the stats is the plain median over all episodes.)
        * *Mean / median final return*: in the collection code
          (``dunnolab/xland-minigrid-datasets``, ``collection/training/train.py``) a task's
          ``final_return`` is the evaluation return of the final PPO policy (``eval/returns``
          at the last update, averaged over the evaluation episodes), logged to wandb and used
          by ``combine.py`` to keep tasks with ``final_return >= 0.3``; the table's mean and
          median are over tasks. Those evaluation rollouts are not in the file. curate's
          figure is the same statistic over the same unit from what the file holds: per task,
          the mean over its histories of the mean return of each history's last tenth of
          episodes (the episodes of the most-trained policy), then the mean and median over
          tasks. It reads slightly below the published one (the last tenth still includes
          some improvement).
        """
        data = ctx.data
        assert isinstance(data, IcrlData)
        scan = ctx.built("scan")
        groups = data.groups()
        stats: dict[str, Any] = {
            "tasks": groups.height,
            "histories": int(groups["histories"].fill_null(0).sum()),
            "transitions": int((groups["histories"] * groups["steps"]).fill_null(0).sum()),
            "tasks_scanned": int(groups["scanned"].sum()),
        }
        if isinstance(scan, ScanTables) and scan.histories.height:
            h = scan.histories
            per_task = h.group_by("file", "group_index").agg(
                pl.col("final_return").fill_nan(None).mean().alias("final"),
                (pl.col("steps_read").sum() / pl.col("episodes").sum()).alias("mean_length"),
            )
            final = per_task["final"].drop_nulls()
            lengths = per_task["mean_length"].drop_nulls().drop_nans()
            lengths = lengths.filter(lengths.is_finite())
            stats.update(
                histories_scanned=h.height,
                transitions_scanned=int(h["steps_read"].sum()),
                episodes=int(h["episodes"].sum()),
                mean_final_return=_round(final.mean()),
                median_final_return=_round(final.median()),
                median_episode_transitions=_round(lengths.median()),
                median_episode_length=_weighted_median(scan.lengths),
                # no scan_seconds: same file, same report, byte for byte (the scan's time is
                # the "shared table scan" stage of --durations)
                scan_workers=scan.workers,
            )
        elif data.options is not None and getattr(data.options, "metadata_only", False):
            stats["metadata_only"] = True
        report.stats.update(stats)
        report.stats["headline"] = [_headline(stats)]

    def plots(self, data: LoadedDataset, report: Report, ctx: AuditContext) -> list[Any]:
        """Mean episode return per history by task, episode lengths (from the audit's scan)."""
        from curate.families.icrl_plots import icrl_plots

        assert isinstance(data, IcrlData)
        return icrl_plots(data, report, ctx)

    # ----------------------------------------------------------------- export and fix
    def _invalid_findings(self, data: IcrlData) -> pl.DataFrame:
        """Findings of the invalid rules (``invalid=True``), on one context (the scan is built
        once)."""
        ctx = AuditContext(data, data.options or self.options(), self.rules.tables)
        frames = []
        for code in self.rules.invalid:
            rule = self.rules[code]
            out = rule.run(data, ctx.for_rule(rule))
            if out.height:
                frames.append(out.with_columns(pl.lit(code).alias("rule")))
        if not frames:
            return pl.DataFrame(schema={"rule": pl.String, **RULE_OUTPUT_SCHEMA})
        return pl.concat(frames, how="diagonal_relaxed")

    def invalid_records(self, data: LoadedDataset) -> pl.DataFrame:
        """The histories that must not be published: one row per history, a task-level
        finding (a group that cannot be read, identified or checked) standing for every history
        of its group, so that counts are in histories, the family's records."""
        assert isinstance(data, IcrlData)
        found = self._invalid_findings(data)
        schema = {
            "rule": pl.String,
            "row": pl.Int64,
            "record": pl.String,
            "field": pl.String,
            "message": pl.String,
            "file": pl.String,
        }
        if found.is_empty():
            return pl.DataFrame(schema=schema)
        found = found.with_row_index("__i").with_columns(
            pl.col("details").str.json_path_match("$.file").alias("file"),
            pl.col("details").str.json_path_match("$.history").is_null().alias("__task"),
        )
        groups = data.groups().select(
            pl.col("path").alias("file"), pl.col("name").alias("record"), "histories"
        )
        tasks = (
            found.filter("__task")
            .join(groups, on=["file", "record"], how="left")
            .with_columns(
                pl.int_ranges(0, pl.col("histories").fill_null(0).clip(1, None)).alias("__h")
            )
            .explode("__h")
            .with_columns(
                pl.when(pl.col("histories").fill_null(0) > 0)
                .then(pl.col("row") + pl.col("__h"))
                .otherwise(pl.col("row"))
                .alias("row"),
                pl.when(pl.col("histories").fill_null(0) > 0)
                .then(pl.format("{}/{}", "record", "__h"))
                .otherwise(pl.col("record"))
                .alias("record"),
            )
        )
        out = pl.concat(
            [found.filter(~pl.col("__task")).select("__i", *schema), tasks.select("__i", *schema)],
            how="vertical_relaxed",
        )
        return (
            out.select("__i", *[pl.col(c).cast(t) for c, t in schema.items()])
            .sort(["row", "__i"], nulls_last=True)
            .drop("__i")
        )

    def _published_histories(self, data: IcrlData) -> pl.DataFrame:
        """The histories export writes: scanned, in a group every history of which was read,
        and not invalid — in file, group and history order."""
        invalid_rows = self.invalid_records(data)["row"].drop_nulls().unique()
        groups = data.groups().select(
            "file",
            pl.col("position").alias("group_index"),
            "env_id",
            "benchmark_id",
            "ruleset_id",
        )
        return (
            data.scan()
            .histories.filter(~pl.col("row").is_in(invalid_rows.implode()))
            .join(groups, on=["file", "group_index"], how="left")
            .sort("file", "group_index", "history")
            .select(
                "file",
                pl.col("group").alias("task"),
                "history",
                "env_id",
                "benchmark_id",
                "ruleset_id",
                "episodes",
                "tail",
                "steps",
            )
        )

    def to_tables(self, data: LoadedDataset) -> dict[str, SplitStream | pa.Table]:
        """One split, ``train``: the valid histories' episodes or segments, streamed
        (:func:`curate.families.icrl_publish.export_stream`; the columns are documented there).
        """
        assert isinstance(data, IcrlData)
        opts = data.options if isinstance(data.options, IcrlOptions) else IcrlOptions()
        keep = self._published_histories(data)
        if opts.unit == "episode":
            rows = int((keep["episodes"] + (keep["tail"] > 0).cast(pl.Int64)).sum() or 0)
        else:
            n = opts.segment_steps
            rows = int(((keep["steps"] + n - 1) // n).sum() or 0)
        data.stats["export"] = {
            "unit": opts.unit,
            **({"segment_length": opts.segment_steps} if opts.unit == "segment" else {}),
            "histories": keep.height,
            "rows": rows,
        }
        return {
            "train": export_stream(data.files[0].path, keep, opts.unit, opts.segment_steps, rows)
        }

    def card_sections(self, data: LoadedDataset, options: FamilyOptions) -> list[str]:
        """The export's own figures for the card: unit, histories written, rows."""
        assert isinstance(data, IcrlData)
        e = data.stats.get("export")
        if not e:
            return []
        total = int(data.groups()["histories"].fill_null(0).sum())
        what = (
            "one row per episode (a history's unfinished last episode too, `done` false)"
            if e["unit"] == "episode"
            else f"one row per segment of {e['segment_length']:,} steps of a history (the last "
            "one may be shorter)"
        )
        return [
            "## Learning histories",
            "",
            f"{e['histories']:,} of the input's {_n(total, 'history', 'histories')}, "
            f"{_n(e['rows'], 'row')}: {what}. "
            "Columns `task`, `history`, `step_start`, `step_end` (end exclusive) locate each "
            "row in the input file; `states` is `(length, 5, 5)` uint8 packed `tile * 12 + "
            "colour`, `rewards` as the file stores them (XLand: float16). Histories an invariant "
            "rule reports (invalid) are left out; see below.",
            "",
        ]

    # ------------------------------------------------------------------ fixes (the core's engine)

    def fix_frame(
        self, data: LoadedDataset, invalid: pl.DataFrame
    ) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """The records for the fix engine: one row per history (a root member that is not a
        task group, or a group without histories, is one row of its own), in file order, with
        ``task`` (its group's name in the file read), ``group`` (its name in the fixed file:
        what RL101/RL102's ``renumber`` edits), ``history`` and what the changelog keeps of it;
        and a changelog line for each history :meth:`invalid_records` names, left out."""
        assert isinstance(data, IcrlData)
        tasks = data.tasks.sort("position")
        scanned = (
            {
                (r["group"], r["history"]): r
                for r in data.scan()
                .histories.select("group", "history", "steps", "digest")
                .iter_rows(named=True)
            }
            if data.tasks.height
            else {}
        )
        causes: dict[str, list[dict[str, Any]]] = {}
        for r in invalid.iter_rows(named=True):
            causes.setdefault(r["record"], []).append(r)
        rows: list[dict[str, Any]] = []
        changes: list[ChangeEntry] = []
        for t in tasks.iter_rows(named=True):
            h_in = int(t["histories"] or 0) if t["kind"] == "group" else 0
            ids = {
                "task": t["name"],
                "group": t["name"],
                "kind": t["kind"],
                "histories": h_in,
                "group_steps": t["steps"],
                "env_id": t["env_id"],
                "benchmark_id": t["benchmark_id"],
                "ruleset_id": t["ruleset_id"],
            }
            members = (
                [(f"{t['name']}/{h}", int(t["row"]) + h, h) for h in range(h_in)]
                if h_in
                else [(t["name"], -1 - int(t["position"]), None)]  # no history: its own row
            )
            for record, row, h in members:
                seen = scanned.get((t["name"], h)) if h is not None else None
                cells = {
                    ROW: row,
                    RECORD: record,
                    SPLIT: "train",
                    **ids,
                    "history": h,
                    "steps": None if seen is None else seen["steps"],
                    "digest": None if seen is None else seen["digest"],
                }
                why = causes.get(record)
                if why:
                    said = "; ".join(
                        f"{c['rule']}: {' '.join(str(c['message']).split())}" for c in why
                    )
                    changes.append(
                        ChangeEntry(
                            record,
                            "",
                            _described(cells),
                            None,
                            why[0]["rule"],
                            "dropped: " + said,
                        )
                    )
                else:
                    rows.append(cells)
        return pl.DataFrame(rows, schema=_FIX_SCHEMA, orient="row"), changes

    def diff_spec(self, data: LoadedDataset) -> DiffSpec:
        """Histories pair by their content (``digest``: a renumbered task group's histories
        are the same histories under a new group name), not by their place in the file.

        Not compared: what a history's group says of its members (``histories``,
        ``group_steps``: a dropped sibling changes them, not this history) and ``task`` (the
        group's name in the file read, the same as ``group`` in any file read as it is)."""
        return DiffSpec(
            stable_ids=False, content_key=("digest",), ignore=("task", "histories", "group_steps")
        )

    def fix_original(self, data: LoadedDataset, row: int, cells: dict[str, Any]) -> Any:
        """A dropped history (or root member) as the changelog keeps it: where it is in the
        file, and the digest of its five arrays (the arrays stay in the input)."""
        return _described(cells)

    def reaudit_options(
        self, options: FamilyOptions, data: LoadedDataset | None = None
    ) -> FamilyOptions:
        """The fixed file is audited whole, with the workers the fix was given."""
        opts = options if isinstance(options, IcrlOptions) else IcrlOptions()
        return IcrlOptions(workers=opts.workers)

    def write_fixed(
        self,
        frame: pl.DataFrame,
        data: LoadedDataset,
        folder: Path,
        changes: Sequence[ChangeEntry],
    ) -> Written:
        """The fixed HDF5 file, under the input's file name: each task group of ``frame`` with
        its histories left (:func:`curate.families.icrl_publish.write_fixed` copies the chunks
        as they are), under the name the edits gave it. Histories after a dropped one move down
        (the changelog says so, and the group's ``curate-dropped-histories`` attribute names
        the input's indices left out), so a group's histories stay ``0`` … ``H-1``."""
        assert isinstance(data, IcrlData)
        source = data.files[0].path
        name = Path(source).name
        if frame.filter(pl.col("history").is_not_null()).is_empty():
            # an HDF5 file without a history is no dataset: said naming the input, before
            # anything is written
            raise InputError(
                "nothing to write: every history is invalid or dropped by the fixes chosen",
                path=source,
            )
        groups: list[GroupCopy] = []
        moved: list[ChangeEntry] = []
        with h5py.File(source, "r") as f:
            for (task,), part in frame.group_by("task", maintain_order=True):
                first = part.row(0, named=True)
                kept = tuple(int(h) for h in part["history"].drop_nulls())
                n = int(first["histories"])
                lost = [h for h in range(n) if h not in set(kept)]
                before: list[int] = []
                if lost:
                    obj = f.get(str(task), getlink=False)
                    if isinstance(obj, h5py.Group) and DROPPED_ATTR in obj.attrs:
                        before = [int(x) for x in np.asarray(obj.attrs[DROPPED_ATTR]).ravel()]
                groups.append(
                    GroupCopy(
                        str(task),
                        str(first["group"]),
                        str(first["kind"]),
                        n,
                        kept,
                        _input_indices(before, lost, n),
                    )
                )
                if lost:
                    moved += _renumbered(str(task), kept, lost, changes)
        taken: dict[str, GroupCopy] = {}
        for g in groups:
            if g.name in taken:  # a renumbered group onto a member kept as it is (RL003 ignored)
                renamed, root = sorted((g, taken[g.name]), key=lambda x: x.source == x.name)
                raise InputError(
                    f"cannot write the fixed file: task group {renamed.source} would be "
                    f"renumbered to {g.name}, the name of the root member {root.source}, kept "
                    "as it is (RL003 ignored); let RL003 leave it out, or ignore RL101 and "
                    "RL102 too",
                    path=source,
                )
            taken[g.name] = g
        target = folder / name
        write_fixed(source, target, groups)
        per_group = kept_per_group(groups)
        return Written(
            files={name: sum(per_group.values())},
            changes=moved,
            configs=configs(target, name, per_group),
        )

    def fix_summary(
        self, run: Any, data: LoadedDataset, options: FamilyOptions
    ) -> tuple[dict[str, bytes], dict[str, Any]]:
        """The fix's account of task groups: how many were dropped and renamed, the file
        written, and each group that lost histories (how many it kept, under which name)."""
        assert isinstance(data, IcrlData)
        written = run.written
        if written is None:
            return {}, {}
        final = run.frame.filter(pl.col("history").is_not_null())
        sizes = dict(
            data.tasks.filter(pl.col("kind") == "group").select("name", "histories").iter_rows()
        )
        out_groups = final.group_by("task", maintain_order=True).agg(
            pl.col(RECORD).first().str.replace(r"/[^/]*$", "").alias("input"),
            pl.len().alias("kept"),
        )
        kept_inputs = set(out_groups["input"].to_list())
        # the engine counted every record left out; icrl's records are histories (rows_in), so
        # a root member that is not a task group (RL003) or an empty group is counted apart
        members = [c for c in run.changelog if c.field == "" and c.new is None]
        histories = [c for c in members if "/" in str(c.record)]
        summary: dict[str, Any] = {
            "invalid_dropped": sum(1 for c in histories if c.pass_no == 0),
            "dropped": sum(1 for c in histories if c.pass_no > 0),
            "groups_dropped": sum(1 for g in sizes if g not in kept_inputs),
            "groups_renamed": sum(1 for c in run.changelog if c.field == "group"),
            "files": dict(written.files),
        }
        if len(members) > len(histories):
            summary["members_dropped"] = len(members) - len(histories)
        kept = {r["task"]: r["kept"] for r in out_groups.iter_rows(named=True)}
        short = [
            {
                "group": r["task"],
                "kept": f"{r['kept']} of {sizes.get(r['input'], r['kept'])} histories"
                + (f" of input group {r['input']}" if r["input"] != r["task"] else ""),
                **({"config": config_name(r["kept"])} if written.configs else {}),
            }
            for r in out_groups.iter_rows(named=True)
            if r["kept"] < (sizes.get(r["input"]) or 0)
        ]
        summary.update(_kept_summary(short, kept, written.configs is not None))
        return {}, summary


_FIX_SCHEMA = {
    ROW: pl.Int64,
    RECORD: pl.String,
    SPLIT: pl.String,
    "task": pl.String,
    "group": pl.String,
    "kind": pl.String,
    "histories": pl.Int64,
    "group_steps": pl.Int64,
    "env_id": pl.String,
    "benchmark_id": pl.String,
    "ruleset_id": pl.Int64,
    "history": pl.Int64,
    "steps": pl.Int64,
    "digest": pl.String,
}


def _described(cells: dict[str, Any]) -> dict[str, Any]:
    """A history (or a root member without histories) as the changelog keeps it."""
    ids = {
        "env-id": cells["env_id"],
        "benchmark-id": cells["benchmark_id"],
        "ruleset-id": cells["ruleset_id"],
    }
    if cells["history"] is None:
        return {
            "task": cells["task"],
            "kind": cells["kind"],
            "histories": cells["histories"],
            "steps": cells["group_steps"],
            **ids,
        }
    return {
        "task": cells["task"],
        "history": cells["history"],
        "steps": cells["steps"],
        "digest": cells["digest"],
        **ids,
    }


def _input_indices(before: list[int], lost: list[int], n: int) -> tuple[int, ...]:
    """The input's indices of every history a group has lost: ``before`` (an earlier pass's
    ``curate-dropped-histories``) and ``lost`` (this pass's, indices of a file of ``n``)."""
    if not before:
        return tuple(lost)
    gone = set(before)
    original = [i for i in range(n + len(before)) if i not in gone]  # index now -> input
    return tuple(sorted(gone | {original[h] for h in lost}))


def _renumbered(
    task: str, kept: tuple[int, ...], lost: list[int], changes: Sequence[ChangeEntry]
) -> list[ChangeEntry]:
    """A changelog line for each history that moves down after one before it was dropped,
    under the rule that dropped the group's first lost history."""
    rule = next((c.rule for c in changes if c.record == f"{task}/{lost[0]}" and c.new is None), "")
    said = ", ".join(map(str, lost))
    return [
        ChangeEntry(
            f"{task}/{old}",
            "history",
            old,
            new,
            rule,
            f"renumbered: history {old} is now {new} of group {task} "
            f"(histories {said} were dropped)",
        )
        for new, old in enumerate(kept)
        if new != old
    ]


def _kept_summary(short: list[dict[str, Any]], kept: dict[str, int], split: bool) -> dict[str, Any]:
    """The fix summary's account of histories per group: each group that lost histories
    (``short``: its name in the fixed file, histories kept of how many, its input name if
    renamed) and, when the groups hold unequal numbers (``split``: the card has one config per
    count), how to read them."""
    out: dict[str, Any] = {}
    if short:
        out["histories_kept"] = short
    if split:
        groups: dict[int, int] = {}
        for k in kept.values():
            groups[k] = groups.get(k, 0) + 1
        default = max(groups, key=lambda k: (groups[k], k))
        listed = ", ".join(
            f"`{config_name(k)}` ({_n(n, 'group')} of {_n(k, 'history', 'histories')}"
            + (", the default" if k == default else "")
            + ")"
            for k, n in sorted(groups.items(), reverse=True)
        )
        out["layout"] = (
            "task groups hold unequal numbers of histories; the `hdf5` builder of `datasets` "
            "reads a file as one table (a row per history index), so the card declares one "
            f"config per count, each naming its groups: {listed}. "
            "`datasets.load_dataset(folder, NAME)` reads every history of those groups; row i "
            "of a group is its i-th kept history (the input's indices: the group's "
            "`curate-dropped-histories` attribute and `changelog.jsonl`)"
        )
    return out


def _round(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 4)


def _weighted_median(lengths: pl.DataFrame) -> float | None:
    """Median of the completed episodes' lengths from their histogram."""
    total = int(lengths["count"].sum() or 0)
    if not total:
        return None
    cum = lengths.sort("length")["count"].cum_sum()
    values = lengths.sort("length")["length"]
    lo_at = (cum >= (total + 1) // 2).arg_max()
    hi_at = (cum >= total // 2 + 1).arg_max()
    assert lo_at is not None and hi_at is not None  # ``cum`` reaches ``total``: both hold
    lo = int(values[lo_at])
    hi = int(values[hi_at])
    return (lo + hi) / 2


def _n(k: int, word: str, words: str | None = None) -> str:
    """``1 task``, ``2 tasks``, ``1,000 histories``."""
    return f"{k:,} {word if k == 1 else (words or word + 's')}"


def _headline(s: dict[str, Any]) -> str:
    parts = [_n(s["tasks"], "task"), _n(s["histories"], "history", "histories")]
    parts.append(_n(s["transitions"], "transition"))
    if "episodes" in s:
        if s["tasks_scanned"] < s["tasks"]:
            parts.append(f"{_n(s['tasks_scanned'], 'task')} scanned")
        parts.append(_n(s["episodes"], "episode"))
        if s.get("mean_final_return") is not None:
            parts.append(
                f"final return mean {s['mean_final_return']} / median "
                f"{s['median_final_return']} (per task)"
            )
        if s.get("median_episode_transitions") is not None:
            parts.append(
                f"median episode transitions {s['median_episode_transitions']:g} (per task)"
            )
    elif s.get("metadata_only"):
        parts.append("metadata only (no array read)")
    return ", ".join(parts)


FAMILY = IcrlFamily()
