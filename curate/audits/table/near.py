"""TB404, TB406: inputs that are near copies of earlier ones, within a split and across splits.

Exact copies (TB403, TB405) miss a test caption that is a training caption with one word
changed. These rules compare the ``--text`` input as a set of character 5-grams (its
*shingles*) and call two inputs near-duplicates when the Jaccard index of their sets (shared
shingles over all shingles) is ``--near-threshold`` or more. The pairs come from the shared
near-duplicate manager (:func:`curate.audits.shared.near.near_copies`: MinHash + LSH over the
distinct inputs, each candidate's *exact* Jaccard checked, so a reported pair is never a hash
accident), oriented later copy vs earlier original by split order (train < validation < test),
then by row. Its cost grows with the rows, not with their pairs (no pair loop).

What the input is: each ``--text`` column in the ``--normalise`` normal form (the normaliser
the ``keys`` table folds TB403's and TB405's keys with), so that case, punctuation and white
space never make two inputs merely *near*. Several ``--text`` columns are one input: their
normal forms joined by the ASCII unit separator (U+001F, which no normal form produces and
which a user's text practically never holds), so a question and its context are compared as
one text, and a shingle may span the join. Only valid rows take part: a row with an empty
``--id``, ``--label`` or ``--text`` cell is TB002's, one failing the model TB001's; a part
whose normal form is empty (a cell of punctuation only) is an empty part, and a row whose parts
are all empty has no input. Non-text columns are compared as their text.

Equal normal forms are not near-duplicates: they are exact copies (TB403 within a split,
TB405 across splits, which compare the ``--key`` when one is declared). A row with an exact
copy where the near rule would look is left to the exact rule, so no row is reported twice
for one problem.
"""

from __future__ import annotations

import polars as pl

from curate.audits.shared.duplicates import split_rank
from curate.audits.shared.near import near_copies
from curate.audits.table.registry import RULES, TableView, columns, value
from curate.core.findings import empty_rule_output, finding_frame, json_struct
from curate.core.keys import SPLIT_ORDER, Keys
from curate.core.rules import AuditContext
from curate.schemas.table import TableOptions, normaliser

__all__ = ["JOIN", "near_inputs", "near_table"]

#: What joins the normal forms of several ``--text`` columns into one input.
JOIN = "\x1f"
#: The shingles near-duplicates compare (what ``--near-threshold``'s help promises).
SHINGLES = "char:5"
#: The chance that a pair *at* the threshold is found (pairs above it: more). Asked of the
#: manager because its default banding (datasketch's, 9 bands x 13 rows at 0.8) finds a pair
#: at 0.8 only 40 % of the time; at 0.99 it makes more candidates, each checked exactly, so
#: a finding is still never a hash accident (:func:`~curate.audits.shared.minhash.recall_params`).
RECALL = 0.99
#: The input as the near-duplicate manager reads it: already in its normal form.
_INPUT = Keys("input", ("text",), split="split", order=SPLIT_ORDER, text=True)


def _as_text(name: str, dtype: pl.DataType) -> pl.Expr:
    """A column as text: itself if text, a nested value as JSON, anything else as written."""
    col = pl.col(name)
    if dtype == pl.String:
        return col
    if dtype.is_nested():
        return pl.struct(col.alias("v")).struct.json_encode().str.slice(5).str.head(-1)
    return col.cast(pl.String)


def near_inputs(data: TableView, options: TableOptions) -> pl.DataFrame:
    """``row, record, split, text``: each valid row's input in its normal form (the
    ``--text`` columns folded by ``--normalise``, joined by :data:`JOIN`); a row whose parts
    are all empty is left out."""
    names, parts = list(options.text), list(options.normalise)
    frame = columns(data, names)
    fold = normaliser(parts)
    parts_of = [f"__p{i}" for i in range(len(names))]
    folded = frame.select(  # each part folded once (one pass per normal-form step)
        "row",
        "record",
        "split",
        *[
            (fold(t) if parts else t).fill_null("").alias(p)
            for t, p in zip(
                (_as_text(value(c), frame.schema[value(c)]) for c in names), parts_of, strict=True
            )
        ],
    )
    empty = pl.all_horizontal([pl.col(p).str.strip_chars() == "" for p in parts_of])
    joined = pl.col(parts_of[0]) if len(names) == 1 else pl.concat_str(parts_of, separator=JOIN)
    return folded.filter(~empty).select("row", "record", "split", joined.alias("text"))


@RULES.table("near")
def near_table(ctx: AuditContext) -> pl.DataFrame:
    """``row, record, split, other_row, other_record, other_split, estimated, exact`` and two
    flags of the later row: every pair of valid rows whose inputs are near-duplicates
    (:func:`near_inputs`; Jaccard of their character 5-gram sets ≥ ``--near-threshold``, the
    inputs not equal), ``row`` the later copy (later split, then later row), ``other_row`` the
    earlier original. ``copy_in_split``: the later row's input equals an earlier row's of its
    split (TB403's); ``copy_earlier``: it equals a row's of an earlier split (TB405's)."""
    opts = ctx.options
    inputs = near_inputs(ctx.data, opts)
    rank = split_rank(pl.col("split"), inputs.schema["split"], SPLIT_ORDER)
    inputs = inputs.with_columns(
        (pl.col("row") != pl.col("row").min().over("text", "split")).alias("copy_in_split"),
        (rank > rank.min().over("text")).fill_null(False).alias("copy_earlier"),
    )
    pairs = near_copies(
        inputs,
        _INPUT,
        threshold=opts.near_threshold,
        shingles=SHINGLES,
        permutations=opts.permutations,
        carry=("record", "split"),
        recall=RECALL,
    )
    return pairs.join(inputs.select("row", "copy_in_split", "copy_earlier"), on="row", how="left")


def _nearest(pairs: pl.DataFrame) -> pl.DataFrame:
    """Each later row once, with its nearest earlier row (highest Jaccard, then the earliest
    row) and how many earlier rows it is near (``copies``)."""
    return (
        pairs.sort(["row", "exact", "other_row"], descending=[False, True, False])
        .group_by("row", maintain_order=True)
        .agg(pl.all().first(), pl.len().alias("copies"))
    )


def _findings(hits: pl.DataFrame, ctx: AuditContext, where: pl.Expr) -> pl.DataFrame:
    opts = ctx.options
    shown = ",".join(opts.text)
    return finding_frame(
        hits,
        field=pl.lit(shown),
        message=pl.format(
            "{} near row {} (record {}){}: Jaccard {} of their character 5-grams {}{}",
            pl.lit(shown),
            "other_row",
            "other_record",
            where,
            pl.col("exact").round(3),
            pl.lit("once normalised" if opts.normalise else "as written"),
            pl.when(pl.col("copies") > 1)
            .then(pl.format(" ({} near earlier rows in all)", pl.col("copies")))
            .otherwise(pl.lit("")),
        ),
        details=json_struct(
            pl.col("other_record").alias("near_of"),
            pl.col("other_row").alias("near_of_row"),
            pl.col("split"),
            pl.col("other_split"),
            pl.col("exact").alias("jaccard"),
            pl.col("estimated"),
            pl.col("copies"),
            pl.lit(opts.near_threshold).alias("threshold"),
            pl.lit(",".join(opts.normalise) or "none").alias("normalised"),
        ),
    )


@RULES.rule(
    "TB404", "near-duplicate-input", category="duplicate", severity="warning", needs=("near",)
)
def near_duplicate_input(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A row's input (``--text``) is nearly an earlier row's of its split: the Jaccard index of
    their character 5-gram sets, once normalised (``--normalise``), is ``--near-threshold``
    (default 0.8) or more, the two not equal.

    A caption copied with one word changed, a question re-scraped with a typo fixed: to a
    model it is the same example kept twice, weighing double in training and counted twice
    in a score, yet exact comparison (TB403) misses it. Each later row is reported once, with
    its nearest earlier row (highest Jaccard; the count of its near earlier rows beside it)
    and the exact Jaccard. Several ``--text`` columns are compared as one input (their normal
    forms joined); a row whose input also equals an earlier row's of its split is TB403's,
    not reported here. ``--near-threshold 0`` turns this rule off (it is not run). Memory
    stays bounded on templated inputs: when most rows share a MinHash band, the biggest
    buckets pair each row with the 16 rows after it instead of with every row (see
    ``curate.audits.shared.minhash``), so a near copy far from its original in the file may
    be missed there.

    No fix: "near" is a judgment at a threshold. Two different examples can share most of
    their wording (templated captions, glycans differing in one linkage) and both belong in
    the data; which one, if any, is the copy to drop is a person's call, read off the pair
    the finding names."""
    near = ctx.table("near")
    hits = near.filter(pl.col("split").eq_missing(pl.col("other_split")) & ~pl.col("copy_in_split"))
    if hits.is_empty():
        return empty_rule_output()
    where = (
        pl.when(pl.col("split").is_null())
        .then(pl.lit(""))
        .otherwise(pl.format(" in {}", pl.col("split")))
    )
    return _findings(_nearest(hits), ctx, where)


@RULES.rule("TB406", "near-split-leakage", category="leakage", severity="warning", needs=("near",))
def near_split_leakage(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A validation or test row's input (``--text``) is nearly a row's of an earlier split
    (train < validation < test): the Jaccard index of their character 5-gram sets, once
    normalised (``--normalise``), is ``--near-threshold`` (default 0.8) or more, the two not
    equal.

    A test example that is a training example with a word changed is mostly memorised, not
    generalised to: the score overstates the model (the near-duplicate half of Deepchecks'
    TrainTestSamplesMix, which exact comparison, TB405, misses). Each later-split row is
    reported once, with its nearest earlier-split row (highest Jaccard, then the earliest
    row), the exact Jaccard and how many earlier-split rows it is near. Rows without a split,
    or in a split outside train/validation/test, take no part; a row whose input also equals
    an earlier split's is TB405's, not reported here. ``--near-threshold 0`` turns this rule
    off (it is not run).

    A warning, not an error as TB405 is: an exact copy in test is a leak by definition, a near
    one is a judgment at a threshold (two templated captions can share 80 % of their 5-grams
    and still describe different clips), so it should prompt a look, not fail a pipeline.

    No fix: whether the pair is one example (move or drop it) or two is a person's call; once
    decided, ``--group`` on a column that ties them makes TB405's regrouping fix apply."""
    near = ctx.table("near")
    rank = split_rank(pl.col("split"), near.schema["split"], SPLIT_ORDER)
    other = split_rank(pl.col("other_split"), near.schema["other_split"], SPLIT_ORDER)
    hits = near.filter((rank > other).fill_null(False) & ~pl.col("copy_earlier"))
    if hits.is_empty():
        return empty_rule_output()
    return _findings(_nearest(hits), ctx, pl.format(" in {}", pl.col("other_split")))
