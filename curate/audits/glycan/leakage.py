"""Leakage (GL4xx): evaluation glycans also in training, within one table or across tables,
and the grouped re-split (:func:`regroup_split`) whose moves GL401/GL402 propose.

The leak itself is the shared join (:func:`curate.audits.shared.duplicates.leaks_from` over
:data:`~curate.schemas.glycan_tables.GLYCAN_KEYS`: the evaluation rows whose canonical key the
training rows hold; across tables :func:`~curate.audits.shared.duplicates.seen_in`); what is
glycan's own is the key (canonical, or the raw text of an unparseable glycan), the messages
and the re-split fix.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from curate.audits.glycan.labels import label_tables, task_labels
from curate.audits.glycan.registry import RULES
from curate.audits.shared.duplicates import leaks_from, seen_in
from curate.audits.shared.resplit import move_edits, regroup_split
from curate.core.findings import (
    clip_expr,
    concat_outputs,
    finding_frame,
    json_struct,
)
from curate.core.rules import AuditContext
from curate.schemas.glycan_tables import (
    GLYCAN_KEYS,
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
    return leaks_from(
        lab,
        GLYCAN_KEYS,
        pl.col("label").unique().sort().alias("train_labels"),
        pl.len().alias("train_rows"),
        pl.col("record").head(5).alias("train_records"),
    ).with_columns(pl.col("train_labels").list.contains(pl.col("label")).alias("same_label"))


@RULES.table("resplit")
def resplit_targets(ctx: AuditContext) -> dict[int, pl.DataFrame]:
    """Per label table (by index): the split :func:`regroup_split` gives each valid row (seeded
    by ``--seed``), with the row's group key; empty with ``--no-resplit``.

    Over every valid row, labelled or not, so a leaking glycan moves whole, its unlabelled
    rows included. Each finding's edit moves its row and every other row of its glycan not yet
    in the target split (the engine's ``move`` with ``with``): the training rows of a glycan sent
    to validation or test are no findings, but must move too.
    """
    out: dict[int, pl.DataFrame] = {}
    if not ctx.options.resplit:
        return out
    data: GlycanData = ctx.data
    for t in label_tables(data):
        rows = t.rows.filter(pl.col("valid")).select(
            "row",
            "split",
            pl.col("key").fill_null(pl.lit("\x00") + pl.col("glycan")).alias("k"),
        )
        if rows.is_empty():
            continue
        target = regroup_split(rows["k"], rows["split"], seed=ctx.options.seed)
        out[t.index] = rows.with_columns(target.alias("target"))
    return out


def _leak_rule(data: GlycanData, same: bool, ctx: AuditContext) -> pl.DataFrame:
    seed = ctx.options.seed
    reason = f"re-split grouped by canonical key (seed {seed})"
    parts = []
    for t in label_tables(data):
        lk = leakage(t)
        if lk.is_empty():
            continue
        lk = lk.filter(pl.col("same_label") == same).sort("row")
        fixes: list[str | None] = [None] * lk.height
        # built only when something leaks: a table without a split never needs the re-split
        split_of = ctx.table("resplit").get(t.index) if lk.height else None
        if split_of is not None and lk.height:
            fixes = move_edits(
                lk.select("row", pl.col("key").alias("unit"), "split"),
                split_of.select("row", pl.col("k").alias("unit"), "split", "target"),
                reason,
            )
        lk = lk.with_columns(pl.Series("fix", fixes, dtype=pl.String))
        parts.append(
            finding_frame(
                lk,
                field=pl.lit(t.columns.glycan),
                message=pl.format(
                    "{} glycan also in train ({} rows, e.g. record {}){}",
                    "split",
                    "train_rows",
                    # as the findings show that record's id (cut, with a digest)
                    clip_expr(pl.col("train_records").list.first(), digest=True),
                    pl.lit(" with the same label" if same else " with another label"),
                ),
                details=json_struct(
                    pl.col("key"), pl.col("label"), pl.col("train_labels"), pl.col("train_records")
                ),
                fix=pl.col("fix"),
            )
        )
    return concat_outputs(parts)


@RULES.rule(
    "GL401",
    "split-leakage-same-label",
    category="leakage",
    severity="error",
    fix="always",
    unsafe=True,
    needs=("resplit",),
)
def split_leakage_same(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A validation/test glycan (by canonical key) is also in train, with the same label.

    The model is scored on an example it was trained on: memorisation counts as generalisation.
    Naive per-row random splits do this whenever a glycan has several rows (several species,
    several spellings). Fix (unsafe: it changes split membership): the grouped re-split
    (:func:`regroup_split`, seeded by ``--seed``) puts every row of the glycan into one split,
    keeping the split proportions; glycans that do not leak stay where they are. No fix with
    ``--no-resplit``.
    """
    return _leak_rule(data, True, ctx)


@RULES.rule(
    "GL402",
    "split-leakage-different-label",
    category="leakage",
    severity="error",
    fix="always",
    unsafe=True,
    needs=("resplit",),
)
def split_leakage_different(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A validation/test glycan is also in train, with a different label.

    For multi-label taxonomy this is the same glycan under another taxon (the structure is
    shared, only the label differs); for single-label tasks it is a conflict crossing the split.
    Either way the evaluation row is not independent of training. Fix (unsafe): the grouped
    re-split, as for GL401.
    """
    return _leak_rule(data, False, ctx)


@RULES.rule("GL403", "cross-task-leakage", category="leakage", severity="warning")
def cross_task_leakage(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A validation/test glycan of one table is in the training data of another table given in
    the same run (e.g. the immunogenicity test set inside the taxonomy train set).

    Multi-task training or pre-training on the other table then sees the evaluation glycans.
    Tables without a split count as all-train for the other tables.
    """
    tables = label_tables(data)
    parts: list[pl.DataFrame] = []
    if len(tables) < 2:  # nothing to cross
        return concat_outputs(parts)
    for a in tables:
        a_rows = a.rows.filter(pl.col("in_task") & pl.col("key").is_not_null())
        a_train = a_rows.filter(pl.col("split").is_null() | (pl.col("split") == "train"))
        firsts = (pl.len().alias("n"), pl.col("record").first().alias("r"))
        for b in tables:
            if a is b:
                continue
            ev = b.rows.filter(pl.col("in_task") & pl.col("split").is_in(["validation", "test"]))
            hit = seen_in(ev, a_train, "key", *firsts).sort("row")
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
