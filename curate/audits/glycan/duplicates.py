"""One glycan, several rows (GL302–GL304): conflicting labels, several spellings, repeated rows.

Rows are compared by canonical key, so two spellings of one glycan are one glycan.
:func:`ceiling_accuracy` (the best accuracy a conflicting table allows) goes into the report's
statistics.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from curate.audits.glycan.labels import label_tables, task_labels
from curate.audits.glycan.registry import MAX_LISTED, RULES, SINGLE_LABEL
from curate.audits.shared.conflicts import label_conflicts as conflicts
from curate.audits.shared.duplicates import later_occurrences
from curate.core.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
    repr_expr,
)
from curate.core.rules import AuditContext
from curate.io.read import SPLIT_FROM_LAYOUT
from curate.schemas.glycan_tables import (
    GLYCAN_KEYS,
    ID_COLUMNS,
    GlycanData,
    GlycanTable,
)


def label_conflicts(t: GlycanTable) -> pl.DataFrame:
    """Rows of single-label tasks whose canonical key carries more than one label, with
    ``n_labels`` and ``labels`` (rows per label text) of their key: the shared conflict
    (:func:`curate.audits.shared.conflicts.label_conflicts`), labels compared by their id."""
    return conflicts(task_labels(t), GLYCAN_KEYS.columns, "label_id", shown="label")


def ceiling_accuracy(t: GlycanTable) -> dict[str, Any]:
    """Best accuracy any model can reach when identical glycans carry different labels."""
    lab = task_labels(t).filter(pl.col("key").is_not_null())
    if lab.is_empty():
        return {"rows": 0}
    best = lab.group_by("key", "label_id").len().group_by("key").agg(pl.col("len").max()).sum()
    return {"rows": lab.height, "max_accuracy": round(best["len"][0] / lab.height, 6)}


@RULES.rule("GL302", "conflicting-labels", category="label", severity="error")
def conflicting_labels(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """The same glycan (by canonical key, whatever its spelling) has different labels in a
    single-label task (immunogenicity, glycosylation type).

    At most one label can be right, so no model can score 100%: the report's statistics give
    the best accuracy any model could reach on the table. Each row of a conflicting group is
    reported with the label counts of its glycan.
    """
    parts = []
    for t in label_tables(data):
        if t.task not in SINGLE_LABEL:
            continue
        c = label_conflicts(t)
        if c.is_empty():
            continue
        parts.append(
            finding_frame(
                c,
                field=pl.lit(t.columns.labels[t.task]),
                message=pl.format(
                    "glycan has {} labels across {} rows; this row says {}",
                    "n_labels",
                    pl.col("labels").list.eval(pl.element().struct.field("len")).list.sum(),
                    repr_expr("label"),
                ),
                details=json_struct(pl.col("key"), pl.col("labels")),
            )
        )
    return concat_outputs(parts)


def spelling_groups(t: GlycanTable) -> pl.DataFrame:
    """Valid rows with their key's representative spelling (most frequent, then sort order)."""
    rows = t.rows.filter(pl.col("in_task") & pl.col("key").is_not_null()).select(
        "row", "record", "split", "glycan", "key"
    )
    rep = (
        rows.group_by("key", "glycan")
        .len()
        .sort(["key", "len", "glycan"], descending=[False, True, False])
        .group_by("key", maintain_order=True)
        .agg(
            pl.col("glycan").first().alias("representative"),
            pl.col("glycan").n_unique().alias("n_spellings"),
            pl.col("glycan").head(MAX_LISTED).alias("spellings"),
        )
    )
    return rows.join(rep, on="key")


@RULES.rule(
    "GL303", "branch-order-duplicate", category="duplicate", severity="warning", fix="always"
)
def branch_order_duplicate(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """One glycan is written with different strings (branches in another order, another main
    chain, an explicit default configuration).

    String-level deduplication, class counts and splits all miss that the rows are the same
    glycan. Reported on rows not using the most frequent spelling; if their labels also differ,
    GL302 reports that as an error. Fix (safe: the same glycan): rewrite to the most frequent
    spelling, after which the rows compare equal as strings too.
    """
    parts = []
    for t in label_tables(data):
        g = spelling_groups(t).filter(
            (pl.col("n_spellings") > 1) & (pl.col("glycan") != pl.col("representative"))
        )
        parts.append(
            finding_frame(
                g,
                field=pl.lit(t.columns.glycan),
                message=pl.format(
                    "same glycan as {} ({} spellings)", repr_expr("representative"), "n_spellings"
                ),
                details=json_struct(
                    pl.col("glycan"), pl.col("representative"), pl.col("spellings"), pl.col("key")
                ),
                fix=json_struct(
                    pl.lit("set").alias("op"),
                    pl.lit(t.columns.glycan).alias("field"),
                    pl.col("glycan").alias("old"),
                    pl.col("representative").alias("new"),
                    pl.lit("rewritten to the glycan's most frequent spelling").alias("reason"),
                ),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL304", "duplicate-row", category="duplicate", severity="warning", fix="always")
def duplicate_row(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A row repeats an earlier one: same glycan (by canonical key), same labels (after
    normalisation), same split and the same values in every other column (ids aside).

    The example counts twice in training or evaluation. Rows that differ elsewhere (another
    reference, another task's label in a multi-purpose table) are separate records and are not
    reported. Fix (safe): drop the repeats (the changelog keeps each dropped row whole). Other
    fixes can make rows repeat (labels stripped, spellings merged, a glycan moved into one
    split): the next fix pass drops those.
    """
    parts = []
    for t in label_tables(data):
        other = other_columns(t)
        lab = task_labels(t).with_columns(
            pl.col("key").fill_null(pl.lit("\x00") + pl.col("glycan")).alias("k")
        )
        if other:
            extra = t.raw.select(other).with_columns(pl.Series("row", t.rows["row"]))
            lab = lab.join(extra, on="row", how="left")
        hit = later_occurrences(lab, ["k", "label_id", "split", *other], t.rows)
        parts.append(
            finding_frame(
                hit,
                field=pl.lit(""),
                message=pl.format(
                    "repeats record {} (same glycan, labels and split)", "first_record"
                ),
                details=json_struct(pl.col("first_record").alias("duplicate_of"), pl.col("label")),
                fix=json_struct(pl.lit("drop").alias("op")),
            )
        )
    return concat_outputs(parts)


def other_columns(t: GlycanTable) -> list[str]:
    """Columns that are neither the glycan, a label of this task, a split nor a row id."""
    skip = {
        t.columns.glycan,
        SPLIT_FROM_LAYOUT,
        t.columns.split,
        *t.columns.split_flags.values(),
        *t.columns.labels.values(),
        *ID_COLUMNS,
    }
    return [c for c in t.raw.columns if c not in skip]
