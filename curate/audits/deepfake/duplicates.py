"""Duplicates and leakage (DF301-DF305): sample ids, and content hashes within a split, across
splits, across sets or source datasets, and with conflicting labels.

Content is compared by hash (:data:`~curate.audits.deepfake.registry.CONTENT`): the manifest's
``sha256`` today, the files' own hashes once the media scan has run. Two rows with one hash
are the same bytes, whatever their paths or ids. The joins are the
shared ones (:func:`~curate.audits.shared.duplicates.duplicates` and
:func:`~curate.audits.shared.duplicates.leaks`, driven by
:data:`~curate.schemas.deepfake_tables.CONTENT_KEYS`; the benchmark times these), and so is
the label conflict's (:func:`~curate.audits.shared.conflicts.label_conflicts`).
"""

from __future__ import annotations

import polars as pl

from curate.audits.deepfake.registry import CONTENT, RULES, file_of
from curate.audits.shared.conflicts import label_conflicts
from curate.audits.shared.duplicates import duplicates, later_copies, leaks
from curate.core.findings import clip_expr, finding_frame, json_struct
from curate.core.rules import AuditContext
from curate.schemas.deepfake import FIELDS
from curate.schemas.deepfake_tables import CONTENT_KEYS, DeepfakeData


def _with_firsts(hits: pl.DataFrame, data: DeepfakeData, *cols: str) -> pl.DataFrame:
    """``hits`` (with ``first_row``) plus ``first_record``, ``input`` and the first row's
    ``cols`` as ``first_<col>``."""
    firsts = data.rows.select(
        pl.col("row").alias("first_row"),
        clip_expr("record", digest=True).alias("first_record"),  # as findings show it
        *[pl.col(c).alias(f"first_{c}") for c in cols],
    )
    inputs = data.rows.select("row", "input")
    return (
        hits.join(firsts, on="first_row", how="left").join(inputs, on="row", how="left").sort("row")
    )


def _labels_per_key(content: pl.DataFrame) -> pl.DataFrame:
    return content.group_by("key").agg(pl.col("label").drop_nulls().n_unique().alias("n_labels"))


@RULES.rule("DF301", "duplicate-sample-id", category="duplicate", severity="error", fix="sometimes")
def duplicate_sample_id(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A sample id is used by more than one row.

    Ids are how results, per-sample scores and fixes name a sample: a repeated id makes them
    ambiguous (which of the two did a detector get wrong?). Each later row is reported with
    the first row of its id. Fix (safe, only where the later row repeats every column of the
    first, those curate does not map included, i.e. the manifest lists the sample twice):
    drop the repeat. Rows that differ
    anywhere need new ids, which only the dataset's author can give.
    """
    # every field, and the columns the manifest has beyond them (published as read): a row
    # differing only there (another author, another caption) is not the same row twice
    extra = [f"__extra:{c}" for c in data.extra_columns()]
    rows = pl.concat(
        [data.rows, data.raw.select(pl.col(c).alias(f"__extra:{c}") for c in data.extra_columns())],
        how="horizontal",
    ).filter(pl.col("sample_id").is_not_null())
    hits = later_copies(rows.drop(extra), ["sample_id"])
    same = later_copies(rows, [*FIELDS, *extra]).select("row", pl.lit(True).alias("__same"))
    hits = _with_firsts(hits.join(same, on="row", how="left"), data)
    return finding_frame(
        hits,
        field=pl.lit("sample_id"),
        message=pl.when(pl.col("__same").is_not_null())
        .then(pl.format("sample id repeats row {} (an identical row)", pl.col("first_row")))
        .otherwise(pl.format("sample id repeats row {} (other values differ)", "first_row")),
        details=json_struct(
            pl.col("first_row").alias("duplicate_of_row"),
            pl.col("__same").fill_null(False).alias("identical"),
            file_of(data).alias("file"),
        ),
        fix=pl.when(pl.col("__same").is_not_null()).then(json_struct(pl.lit("drop").alias("op"))),
    )


@RULES.rule(
    "DF302",
    "duplicate-content",
    category="duplicate",
    severity="warning",
    fix="sometimes",
    needs=(CONTENT,),
)
def duplicate_content(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The same content (same hash) is listed more than once within one split.

    The sample weighs double in training or in the score. Each later copy is reported with
    the first. Fix (safe, where all copies carry the same label): drop the later copies; when
    labels conflict, DF305 reports that and nothing is dropped.
    """
    content = ctx.table(CONTENT)
    hits = duplicates(content, CONTENT_KEYS, prefilter="key64").join(
        _labels_per_key(content), on="key", how="left"
    )
    hits = _with_firsts(hits, data)
    return finding_frame(
        hits,
        field=pl.lit("sha256"),
        # the first copy by its row too: two rows may share a sample id (DF301)
        message=pl.format(
            "same content as {} (row {}) {}",
            pl.col("first_record"),
            pl.col("first_row"),
            pl.when(pl.col("split").is_null())
            .then(pl.lit("(the manifest has no split)"))
            .otherwise(pl.format("in split {}", pl.col("split"))),
        ),
        details=json_struct(
            pl.col("sha256"),
            pl.col("first_record").alias("duplicate_of"),
            pl.col("hash_source").cast(pl.String),
            file_of(data).alias("file"),
        ),
        fix=pl.when(pl.col("n_labels") <= 1).then(json_struct(pl.lit("drop").alias("op"))),
    )


@RULES.rule(
    "DF303",
    "content-leak",
    category="leakage",
    severity="error",
    fix="sometimes",
    unsafe=True,
    needs=(CONTENT,),
)
def content_leak(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The same content (same hash) is in two splits: a test or validation sample is also a
    training sample.

    A detector is scored on what it was trained on, so the reported accuracy overstates how
    it does on unseen data. Each copy in a later split (train < validation < test) is
    reported with the first copy in the earliest split. Fix (unsafe: it changes the
    evaluation set, so only with ``--unsafe-fixes``; only where all copies carry the same
    label): drop the later-split copy, keeping the training one.
    """
    content = ctx.table(CONTENT)
    hits = leaks(content, CONTENT_KEYS, prefilter="key64").join(
        _labels_per_key(content), on="key", how="left"
    )
    hits = _with_firsts(hits, data)
    return finding_frame(
        hits,
        field=pl.lit("sha256"),
        message=pl.format(
            "{} sample has the same content as {} in {}",
            pl.col("split"),
            pl.col("first_record"),
            pl.col("first_split"),
        ),
        details=json_struct(
            pl.col("sha256"),
            pl.col("split").cast(pl.String),
            pl.col("first_record").alias("duplicate_of"),
            pl.col("first_split"),
            pl.col("hash_source").cast(pl.String),
            file_of(data).alias("file"),
        ),
        fix=pl.when(pl.col("n_labels") <= 1).then(json_struct(pl.lit("drop").alias("op"))),
    )


@RULES.rule(
    "DF304", "content-across-sets", category="overlap", severity="warning", needs=(CONTENT,)
)
def content_across_sets(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The same content (same hash) appears under another set or source dataset.

    A sample re-used from another corpus (a real video of FaceForensics++ inside a new set)
    is not new data: it makes the sets look more diverse than they are, and a model
    evaluated "cross-dataset" has seen it. Each row whose set or source dataset differs from
    that of the content's first row is reported.
    """
    content = ctx.table(CONTENT).with_columns(
        pl.col("set").cast(pl.String).fill_null(""),
        pl.col("source_dataset").cast(pl.String).fill_null(""),
    )
    first = content.with_columns(pl.col("row").min().over("key").alias("first_row"))
    origin = content.select(
        pl.col("row").alias("first_row"),
        pl.col("set").alias("first_set"),
        pl.col("source_dataset").alias("first_source"),
    )
    hits = first.join(origin, on="first_row", how="left").filter(
        (pl.col("set") != pl.col("first_set"))
        | (pl.col("source_dataset") != pl.col("first_source"))
    )
    hits = _with_firsts(hits.drop("first_set", "first_source"), data, "set", "source_dataset")
    return finding_frame(
        hits,
        field=pl.lit("sha256"),
        message=pl.format(
            "same content as {} (set {}, source {}); this row: set {}, source {}",
            pl.col("first_record"),
            pl.col("first_set").cast(pl.String).fill_null("-"),
            pl.col("first_source_dataset").cast(pl.String).fill_null("-"),
            pl.when(pl.col("set") == "").then(pl.lit("-")).otherwise(pl.col("set")),
            pl.when(pl.col("source_dataset") == "")
            .then(pl.lit("-"))
            .otherwise(pl.col("source_dataset")),
        ),
        details=json_struct(
            pl.col("sha256"),
            pl.col("first_record").alias("duplicate_of"),
            file_of(data).alias("file"),
        ),
    )


@RULES.rule(
    "DF305", "content-label-conflict", category="conflict", severity="error", needs=(CONTENT,)
)
def content_label_conflict(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The same content (same hash) carries different labels: real in one row, fake in
    another.

    At most one is right, and a detector cannot score 100% on both. Every row of such a
    content is reported with the label counts. No fix: which label is right is not in the
    manifest (the generator column, DF101/DF102, is often the clue).
    """
    hits = label_conflicts(
        ctx.table(CONTENT),
        CONTENT_KEYS.columns,
        "label",
        (pl.col("label") == "real").sum().alias("real"),
        (pl.col("label") == "fake").sum().alias("fake"),
    ).join(data.rows.select("row", "input"), on="row", how="left", maintain_order="left")
    return finding_frame(
        hits,
        field=pl.lit("label"),
        message=pl.format(
            "content labelled real {}× and fake {}×; this row says {}",
            "real",
            "fake",
            pl.col("label").cast(pl.String).fill_null("nothing"),
        ),
        details=json_struct(
            pl.col("sha256"), pl.col("real"), pl.col("fake"), file_of(data).alias("file")
        ),
    )
