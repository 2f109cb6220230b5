"""Leakage (GL4xx): evaluation glycans also in training, within one table or across tables."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from curate.audits.glycan.labels import label_tables, task_labels
from curate.audits.glycan.registry import RULES
from curate.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
)
from curate.rules import AuditContext
from curate.schemas.glycan_tables import (
    GlycanData,
    GlycanTable,
)

# --------------------------------------------------------------------------- GL4xx leakage


def leakage(t: GlycanTable) -> pl.DataFrame:
    """Validation/test rows whose canonical key occurs in train, with whether a train row of that
    key has the same label."""
    if "leakage" not in t.cache:
        t.cache["leakage"] = _leakage(t)
    return t.cache["leakage"]


def _leakage(t: GlycanTable) -> pl.DataFrame:
    # an unparseable string has no key; the same text in train and test still leaks
    lab = task_labels(t).with_columns(pl.col("key").fill_null(pl.lit("\x00") + pl.col("glycan")))
    train = lab.filter(pl.col("split") == "train")
    if train.is_empty():
        return pl.DataFrame()
    train_keys = train.group_by("key").agg(
        pl.col("label").unique().sort().alias("train_labels"),
        pl.len().alias("train_rows"),
        pl.col("record").head(5).alias("train_records"),
    )
    ev = lab.filter(pl.col("split").is_in(["validation", "test"]))
    return ev.join(train_keys, on="key").with_columns(
        pl.col("train_labels").list.contains(pl.col("label")).alias("same_label")
    )


def _leak_rule(data: GlycanData, same: bool) -> pl.DataFrame:
    parts = []
    for t in label_tables(data):
        lk = leakage(t)
        if lk.is_empty():
            continue
        lk = lk.filter(pl.col("same_label") == same).sort("row")
        parts.append(
            finding_frame(
                lk,
                field=pl.lit(t.columns.glycan),
                message=pl.format(
                    "{} glycan also in train ({} rows, e.g. record {}){}",
                    "split",
                    "train_rows",
                    pl.col("train_records").list.first(),
                    pl.lit(" with the same label" if same else " with another label"),
                ),
                details=json_struct(
                    pl.col("key"), pl.col("label"), pl.col("train_labels"), pl.col("train_records")
                ),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL401", "split-leakage-same-label", category="leakage", severity="error", fix="always")
def split_leakage_same(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A validation/test glycan (by canonical key) is also in train, with the same label.

    The model is scored on an example it was trained on: memorisation counts as generalisation.
    Naive per-row random splits do this whenever a glycan has several rows (several species,
    several spellings). Fix: ``curate fix`` re-splits grouped by canonical key.
    """
    return _leak_rule(data, True)


@RULES.rule(
    "GL402", "split-leakage-different-label", category="leakage", severity="error", fix="always"
)
def split_leakage_different(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A validation/test glycan is also in train, with a different label.

    For multi-label taxonomy this is the same glycan under another taxon (the structure is
    shared, only the label differs); for single-label tasks it is a conflict crossing the split.
    Either way the evaluation row is not independent of training. Fix: grouped re-split.
    """
    return _leak_rule(data, False)


@RULES.rule("GL403", "cross-task-leakage", category="leakage", severity="warning")
def cross_task_leakage(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A validation/test glycan of one table is in the training data of another table given in
    the same run (e.g. the immunogenicity test set inside the taxonomy train set).

    Multi-task training or pre-training on the other table then sees the evaluation glycans.
    Tables without a split count as all-train for the other tables.
    """
    tables = label_tables(data)
    parts = []
    for a in tables:
        a_rows = a.rows.filter(pl.col("in_task") & pl.col("key").is_not_null())
        a_train = a_rows.filter(pl.col("split").is_null() | (pl.col("split") == "train"))
        keys = a_train.group_by("key").agg(pl.len().alias("n"), pl.col("record").first().alias("r"))
        for b in tables:
            if a is b:
                continue
            ev = b.rows.filter(pl.col("in_task") & pl.col("split").is_in(["validation", "test"]))
            hit = ev.join(keys, on="key").sort("row")
            parts.append(
                finding_frame(
                    hit,
                    field=pl.lit(b.columns.glycan),
                    message=pl.format(
                        "{} glycan of {} is in the training rows of {} ({} rows, e.g. record {})",
                        "split",
                        pl.lit(Path(b.path).name),
                        pl.lit(Path(a.path).name),
                        "n",
                        "r",
                    ),
                    details=json_struct(
                        pl.col("key"),
                        pl.lit(a.path).alias("other_table"),
                        pl.lit(a.task).alias("other_task"),
                        pl.col("n").alias("other_rows"),
                    ),
                )
            )
    return concat_outputs(parts)
