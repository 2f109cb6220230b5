"""TB2xx: how the classes of each ``--label`` column are spread — a class with one example, a
class the training split never shows, a class far rarer than an even share.

One finding per class and label column. Classes are the labels of the valid rows (the shared
``labels`` table: a row TB001 refused counts for no class); an empty label takes no part
(TB002 reports it), while the row's other labels count. A label may be of any type (text,
integer, boolean); two labels are one class when they are spelt the same.
"""

from __future__ import annotations

import polars as pl

from curate.audits.table.columns import label_text
from curate.audits.table.registry import RULES, TableView, value
from curate.core.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
    repr_expr,
    rule_output,
)
from curate.core.rules import AuditContext

__all__ = ["class_absent_from_train", "class_imbalance", "classes", "singleton_class"]


def classes(labels: pl.DataFrame, label: str) -> pl.DataFrame:
    """``row, record, split, input, class, key``: each valid row with a label in ``label``:
    the label as typed (``class``) and as compared (``key``: its text)."""
    col = value(label)
    return labels.select(
        "row",
        "record",
        "split",
        "input",
        pl.col(col).alias("class"),
        label_text(labels, col).alias("key"),
    ).drop_nulls("key")


def _shown(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (the few rows a rule reports) with ``shown``: its class as a message quotes
    it (a Python call per row, so never on the whole table)."""
    return frame.with_columns(repr_expr("key").alias("shown"))


def _file(data: TableView) -> pl.Expr:
    return data.file_of().alias("file")


# ----------------------------------------------------------------- TB201


@RULES.rule(
    "TB201", "singleton-class", category="distribution", severity="warning", needs=("labels",)
)
def singleton_class(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A class of a ``--label`` column has a single example among the valid rows.

    One example cannot be in both the training and the evaluation split: the class is either
    never learned or never scored, and a stratified split (scikit-learn's
    ``train_test_split(stratify=...)``) refuses the table. Often a typo of another class or
    an over-fine category. The finding is on that row; with several ``--label`` columns each
    is checked on its own. No fix: merge the class into a broader one, collect more examples
    or drop the row, by hand."""
    parts = []
    for label in ctx.options.label:
        d = classes(ctx.table("labels"), label)
        d = _shown(d.filter(pl.len().over("key") == 1))
        parts.append(
            finding_frame(
                d,
                field=pl.lit(label),
                message=pl.format("class {} of {} has a single example", "shown", pl.lit(label)),
                details=json_struct(pl.col("class"), _file(data)),
            )
        )
    return concat_outputs(parts).sort("row", "field")


# ----------------------------------------------------------------- TB202


def _is_train() -> pl.Expr:
    """Rows published in train: the train split, and rows without a split (fix and export
    publish those in train)."""
    return pl.col("split").is_null() | (pl.col("split") == "train")


@RULES.rule(
    "TB202",
    "class-absent-from-train",
    category="distribution",
    severity="error",
    needs=("labels",),
)
def class_absent_from_train(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A class of a ``--label`` column is in the validation or test split but in no training
    row (Deepchecks' NewLabelTrainTest).

    A model cannot predict a class it was never shown: every evaluation row of that class is
    scored wrong whatever the model, so the score measures the split, not the model. An error,
    not a warning, because a closed set of labels is what ``--label`` declares; a zero-shot or
    open-set benchmark, where unseen classes are the point, ignores the rule
    (``--ignore TB202``). Rows without a split count as training rows (they are published in
    train); a table with no training rows, or no other split, is not checked. One finding per
    class, on its first evaluation row, with its rows per split. No fix: move some of its rows
    into train (or regroup the split), or drop the class, by hand."""
    parts = []
    for label in ctx.options.label:
        d = classes(ctx.table("labels"), label).with_columns(_is_train().alias("train"))
        if not d["train"].any() or d["train"].all():
            continue
        seen = d.filter("train")["key"].unique()
        new = d.filter(~pl.col("train") & ~pl.col("key").is_in(seen.implode()))
        if new.is_empty():
            continue
        per_split = new.group_by("key", "split").len().sort("split")
        splits = per_split.group_by("key").agg(
            pl.struct(pl.col("split"), pl.col("len").alias("rows")).alias("splits"),
            pl.format(
                "{} ({} {})",
                "split",
                "len",
                pl.when(pl.col("len") == 1).then(pl.lit("row")).otherwise(pl.lit("rows")),
            )
            .str.join(", ")
            .alias("where"),
            pl.col("len").sum().alias("rows"),
        )
        first = new.sort("row").group_by("key", maintain_order=True).first().join(splits, on="key")
        first = _shown(first)
        parts.append(
            finding_frame(
                first,
                field=pl.lit(label),
                message=pl.format(
                    "class {} of {} is in {} but in no training row",
                    "shown",
                    pl.lit(label),
                    "where",
                ),
                details=json_struct(pl.col("class"), "rows", "splits", _file(data)),
            )
        )
    return concat_outputs(parts).sort("row", "field")


# ----------------------------------------------------------------- TB203


@RULES.rule(
    "TB203", "class-imbalance", category="distribution", severity="warning", needs=("labels",)
)
def class_imbalance(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A class of a ``--label`` column holds a share of the valid rows below ``--imbalance``
    (0.1 by default) times an even share, 1/K for K classes (cleanlab Datalab's
    class_imbalance, whose threshold this is).

    A model sees too few examples of such a class to learn it, an accuracy averaged over the
    rows hides its errors, and an evaluation split may hold none or one of it. cleanlab flags
    the rarest class only; every class under the bound is reported here, one finding each,
    naming no row (the class is the defect), with its rows, its share and the bound. A label
    with one class gives none, nor does one with so many classes that a class of one row is
    above the bound (K ≥ 0.1·N for N rows: glycowork's 1,298 species in 4,900 rows; TB201
    reports its single examples). No fix: collect more examples, merge classes, or weight the
    loss, by hand."""
    share = ctx.options.imbalance
    file = data.inputs[0].path if len(data.inputs) == 1 else None
    parts = []
    for label in ctx.options.label:
        d = classes(ctx.table("labels"), label)
        if d.is_empty():
            continue
        counts = d.group_by("key").agg(pl.col("class").first(), pl.len().alias("rows"))
        k, n = counts.height, d.height
        bound = share / k
        rare = _shown(counts.filter(pl.col("rows") / n < bound).sort("key"))
        parts.append(
            rule_output(
                [
                    {
                        "row": None,
                        "record": f"class {r['shown']}",
                        "field": label,
                        "message": f"class {r['shown']} of {label} has {r['rows']:,} of {n:,} "
                        f"rows ({r['rows'] / n:.2%}), under {share:g} of an even share of {k:,} "
                        f"classes ({bound:.2%})",
                        "details": {
                            "class": r["class"],
                            "rows": r["rows"],
                            "share": round(r["rows"] / n, 6),
                            "threshold": round(bound, 6),
                            "classes": k,
                            "file": file,
                        },
                    }
                    for r in rare.iter_rows(named=True)
                ]
            )
        )
    return concat_outputs(parts)
