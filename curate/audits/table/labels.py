"""TB3xx: the same example with different labels."""

from __future__ import annotations

import polars as pl

from curate.audits.shared.conflicts import label_conflicts
from curate.audits.table.registry import RULES, TableView, at, key_names, value
from curate.core.findings import concat_outputs, finding_frame, json_struct
from curate.core.rules import AuditContext

#: How many labels a message lists (most frequent first); the details list them all.
_SHOWN = 5


@RULES.rule(
    "TB301",
    "conflicting-labels",
    category="conflict",
    severity="error",
    fix="sometimes",
    unsafe=True,
    # "labels" unread (the candidates' labels are gathered by position) but declared: without
    # --label the engine does not run the rule rather than call the table clean
    needs=("key_hashes", "candidates", "labels"),
)
def conflicting_labels(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """Rows with the same input (``--key``, else ``--text``, normalised as ``--normalise``
    says) carry different labels, in any split (Deepchecks' ConflictingLabels).

    At most one label is right, and no model can score on both: a label error, or an input
    that does not determine its label. Every row of such an input is reported, with the labels
    the input has and how many rows hold each; with several ``--label`` columns, each is
    checked on its own. Fix (unsafe: it chooses a meaning, so only with ``--unsafe-fixes``):
    set the label of each row outside the majority to the majority label; where two labels tie
    there is no majority, and no fix."""
    opts = ctx.options
    keys = key_names(len(opts.key_columns()))
    # only keys whose hash repeats can carry two labels; folded again for those rows alone
    table = ctx.table("candidates")
    # the candidates' labels by position (the whole label table is what "labels" serves)
    labels = at(data, table["row"], opts.label)
    parts = []
    for label in opts.label:
        col = value(label)
        df = pl.concat([table, labels.select(col)], how="horizontal")
        hits = label_conflicts(df, keys, col)
        if hits.is_empty():
            continue
        counts = pl.col("labels").list.eval(pl.element().struct.field("len").sort(descending=True))
        hits = hits.with_columns(
            (
                (counts.list.len() < 2)
                | (counts.list.get(0, null_on_oob=True) != counts.list.get(1, null_on_oob=True))
            ).alias("__clear"),
            pl.col("labels")
            .list.eval(
                pl.format(
                    "{} ({})", pl.element().struct.field(col), pl.element().struct.field("len")
                )
                .sort_by(pl.element().struct.field("len"), descending=True)
                .head(_SHOWN)
            )
            .list.join(", ")
            .alias("__shown"),
            pl.col("labels").list.len().alias("__n"),
        )
        fixable = (
            pl.col("__clear")
            & pl.col(col).is_not_null()
            & (pl.col(col).cast(pl.String) != pl.col("majority").cast(pl.String))
        )
        parts.append(
            finding_frame(
                hits,
                field=pl.lit(label),
                message=pl.format(
                    "input with {} labels: {}{}{}",
                    "n_labels",
                    "__shown",
                    pl.when(pl.col("__n") > _SHOWN)
                    .then(pl.format(" and {} more", pl.col("__n") - _SHOWN))
                    .otherwise(pl.lit("")),
                    pl.when(pl.col("__clear"))
                    .then(pl.format("; majority {}", "majority"))
                    .otherwise(pl.lit("; no majority")),
                ),
                details=json_struct(
                    pl.col(col).alias("label"),
                    pl.col("labels")
                    .list.eval(pl.element().struct.rename_fields(["label", "rows"]))
                    .alias("labels"),
                    pl.when(pl.col("__clear")).then(pl.col("majority")).alias("majority"),
                ),
                fix=pl.when(fixable).then(
                    json_struct(
                        pl.lit("set").alias("op"),
                        pl.lit(label).alias("field"),
                        pl.col(col).alias("old"),
                        pl.col("majority").alias("new"),
                        pl.lit("majority label of the same input").alias("reason"),
                    )
                ),
            )
        )
    return concat_outputs(parts).sort("row", "field") if parts else concat_outputs(parts)


__all__ = ["conflicting_labels"]
