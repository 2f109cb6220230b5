"""The in-context RL rule set, its shared table and the helpers its rule modules share.

A module of its own so that every rule module (``format``, ``structure``, ``episodes``,
``actions``, ``duplicates``) registers on the one :data:`RULES` without importing the others.

The shared table ``scan`` is the family's one pass over the arrays (the reader's scanner on the
loaded data, :class:`~curate.schemas.icrl_tables.ScanTables`): built on first use by a rule that
declares it, once per audit, and never by rules that read metadata only — so an audit selecting
only structure rules, or ``--metadata-only``, reads no array data at all.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from curate.core.findings import dumps, empty_rule_output, json_struct
from curate.core.rules import AuditContext, RuleSet
from curate.schemas.icrl import SCAN
from curate.schemas.icrl_tables import IcrlData, ScanTables

RULES = RuleSet("icrl")


@RULES.table(SCAN)
def scan_table(ctx: AuditContext) -> ScanTables:
    data = ctx.data
    assert isinstance(data, IcrlData)
    return data.scan()


def scan_of(ctx: AuditContext) -> ScanTables:
    out = ctx.table(SCAN)
    assert isinstance(out, ScanTables)
    return out


def with_paths(df: pl.DataFrame, data: IcrlData) -> pl.DataFrame:
    """``df`` (with a ``file`` column) plus ``path``: the input each row comes from."""
    paths = pl.DataFrame(
        {"file": [f.index for f in data.files], "path": [f.path for f in data.files]},
        schema={"file": pl.Int32, "path": pl.String},
    )
    return df.join(paths, on="file", how="left", maintain_order="left")


def task_findings(
    df: pl.DataFrame,
    message: pl.Expr,
    *,
    field: pl.Expr | str = "",
    extra: tuple[pl.Expr, ...] = (),
    fix: dict[str, Any] | pl.Expr | None = None,
) -> pl.DataFrame:
    """Findings on whole task groups: ``df`` has the ``tasks`` columns ``row``, ``name``,
    ``path``; ``record`` is the group's name and ``details`` carry ``task`` and ``file`` (plus
    ``extra``); a task-level finding has no history or step range. ``fix``: the edit every
    finding proposes (see :mod:`curate.audits.icrl.fixes`)."""
    if df.is_empty():
        return empty_rule_output()
    f = pl.lit(field) if isinstance(field, str) else field
    return df.select(
        pl.col("row"),
        pl.col("name").alias("record"),
        f.alias("field"),
        message.alias("message"),
        json_struct(
            pl.col("name").alias("task"),
            pl.lit(None, pl.Int64).alias("history"),
            pl.lit(None, pl.Int64).alias("step_start"),
            pl.lit(None, pl.Int64).alias("step_end"),
            pl.col("path").alias("file"),
            *extra,
        ).alias("details"),
        *_fix(fix),
    )


def _fix(fix: dict[str, Any] | pl.Expr | None) -> tuple[pl.Expr, ...]:
    if fix is None:
        return ()
    if isinstance(fix, pl.Expr):  # an edit per finding (JSON text)
        return (fix.alias("fix"),)
    return (pl.lit(dumps(fix)).alias("fix"),)


def drop_group(copy_of: str | None = None) -> pl.Expr:
    """The edit that leaves a whole root member out of the fixed file: every history of the
    task group the finding names (``drop`` with ``where``, see :mod:`curate.core.fixes`).
    ``copy_of``: the column naming the group it copies (kept if that one is left out)."""
    parts = [pl.lit("drop").alias("op"), pl.struct(pl.col("name").alias("task")).alias("where")]
    if copy_of is not None:
        parts.append(pl.struct(pl.col(copy_of).alias("task")).alias("copy_of"))
    return pl.struct(parts).struct.json_encode()


def history_findings(
    df: pl.DataFrame,
    message: pl.Expr,
    *,
    start: pl.Expr,
    end: pl.Expr,
    field: str | pl.Expr = "",
    extra: tuple[pl.Expr, ...] = (),
    fix: dict[str, Any] | pl.Expr | None = None,
) -> pl.DataFrame:
    """Findings on histories: ``df`` has the ``histories`` columns ``row``, ``record``,
    ``group``, ``history`` and ``path``; details carry ``task``, ``history``, ``step_start`` and
    ``step_end`` (end exclusive) and ``file``."""
    if df.is_empty():
        return empty_rule_output()
    return df.select(
        pl.col("row"),
        pl.col("record"),
        (pl.lit(field) if isinstance(field, str) else field).alias("field"),
        message.alias("message"),
        json_struct(
            pl.col("group").alias("task"),
            pl.col("history"),
            start.cast(pl.Int64).alias("step_start"),
            end.cast(pl.Int64).alias("step_end"),
            pl.col("path").alias("file"),
            *extra,
        ).alias("details"),
        *_fix(fix),
    )


def steps_text(start: pl.Expr, end: pl.Expr) -> pl.Expr:
    """``steps [10, 13)`` or ``step 10`` for one step: end exclusive, as ``step_start`` and
    ``step_end`` in the details and every Python slice (a text range read one way and a
    details range the other made users look one step off)."""
    return (
        pl.when(end - start <= 1)
        .then(pl.format("step {}", start))
        .otherwise(pl.format("steps [{}, {})", start, end))
    )


def step_findings(
    data: IcrlData,
    ctx: AuditContext,
    kind: str,
    what: str | pl.Expr,
    field: str,
    extra: tuple[pl.Expr, ...] = (),
) -> pl.DataFrame:
    """One finding per history with out-of-range steps of ``kind`` (a :data:`STEP_KINDS` name
    of the scan): the first such step, how many, and the range from the first to the last.
    ``what`` (text or an expression over the scan's columns, e.g. the value) leads the
    message."""
    h = with_paths(scan_of(ctx).histories.filter(pl.col(f"{kind}_n") > 0), data)
    first, last, n = pl.col(f"{kind}_first"), pl.col(f"{kind}_last"), pl.col(f"{kind}_n")
    lead = pl.lit(what) if isinstance(what, str) else what
    return history_findings(
        h,
        pl.format("{} step {}", lead, first)
        + pl.when(n > 1)
        .then(pl.format(" ({} such steps, the last at step {})", n, last))
        .otherwise(pl.lit("")),
        start=first,
        end=last + 1,
        field=field,
        extra=(n.alias("steps"), *extra),
    )


__all__ = [
    "RULES",
    "SCAN",
    "drop_group",
    "history_findings",
    "scan_of",
    "step_findings",
    "steps_text",
    "task_findings",
    "with_paths",
]
