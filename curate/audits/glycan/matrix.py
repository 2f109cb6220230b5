"""Interaction matrices (GL6xx): glycan columns and protein rows that repeat or hold nothing."""

from __future__ import annotations

import polars as pl

from curate.audits.glycan.registry import RULES
from curate.audits.shared.duplicates import later_occurrences
from curate.core.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
)
from curate.core.rules import AuditContext
from curate.schemas.glycan_tables import (
    GlycanData,
    GlycanTable,
)

# --------------------------------------------------------------------------- GL6xx interaction


def _matrices(data: GlycanData) -> list[GlycanTable]:
    return [t for t in data.tables if t.task == "interaction"]


def kept_columns(t: GlycanTable) -> pl.DataFrame:
    """Per canonical key with several glycan columns: the column the others merge into (the one
    with the most non-empty cells; ties: sort order), as ``key``, ``into``."""
    assert t.cells is not None
    counts = t.cells.group_by("column").len()
    keyed = (
        t.cells.select("column", "key")
        .unique()
        .drop_nulls("key")
        .join(counts, on="column", how="left")
        .with_columns(pl.col("len").fill_null(0))
    )
    return (
        keyed.sort(["key", "len", "column"], descending=[False, True, False])
        .group_by("key", maintain_order=True)
        .agg(pl.col("column").first().alias("into"), pl.len().alias("ncols"))
        .filter(pl.col("ncols") > 1)
        .select("key", "into")
    )


@RULES.rule(
    "GL601",
    "matrix-duplicate-glycan-columns",
    category="conflict",
    severity="error",
    fix="always",
    unsafe=True,
)
def matrix_duplicate_columns(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """Two glycan columns of an interaction matrix are the same glycan (same canonical key) and
    hold different values for one protein.

    The same measurement is recorded twice with two answers; a model sees them as two glycans
    with contradictory binding. Fix (unsafe: it discards the conflicting values): merge the
    glycan's columns into the one with the most values (ties: sort order); where they disagree,
    the kept column's value stays and the other is logged as discarded.
    """
    parts = []
    for t in _matrices(data):
        assert t.cells is not None
        c = t.cells.filter(pl.col("key").is_not_null() & pl.col("number").is_not_null())
        c = c.with_columns(pl.col("column").n_unique().over("key").alias("ncols")).filter(
            pl.col("ncols") > 1
        )
        g = (
            c.group_by("row", "record", "key")
            .agg(
                pl.col("number").n_unique().alias("nv"),
                pl.struct("column", "number").sort_by("column").alias("values"),
            )
            .filter(pl.col("nv") > 1)
            .sort("row", "key")
        )
        # merge the first other column that disagrees here; a third column of the glycan that
        # also disagrees is merged by the next pass's finding
        g = g.join(kept_columns(t), on="key", how="left").with_columns(
            pl.col("values")
            .list.eval(pl.element().struct.field("column"))
            .list.set_difference(pl.concat_list("into"))
            .list.sort()
            .list.first()
            .alias("from")
        )
        parts.append(
            finding_frame(
                g,
                field=pl.col("values").list.first().struct.field("column"),
                message=pl.format(
                    "{} columns of one glycan disagree for this protein",
                    pl.col("values").list.len(),
                ),
                details=json_struct(pl.col("key"), pl.col("values")),
                fix=pl.when(pl.col("from").is_not_null()).then(
                    json_struct(pl.lit("merge_columns").alias("op"), pl.col("into"), pl.col("from"))
                ),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL602", "matrix-empty-protein", category="integrity", severity="warning", fix="always")
def matrix_empty_protein(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A protein row of an interaction matrix has no value for any glycan: it contributes
    nothing but counts as an example. Fix (safe): drop the row."""
    parts = []
    for t in _matrices(data):
        assert t.cells is not None
        empty = t.rows.join(t.cells.select("row").unique(), on="row", how="anti").sort("row")
        parts.append(
            finding_frame(
                empty,
                field=pl.lit(t.columns.protein),
                message=pl.lit("no interaction value for any glycan"),
                details=json_struct(pl.col("protein_name")),
                fix=json_struct(pl.lit("drop").alias("op")),
            )
        )
    return concat_outputs(parts)


@RULES.rule(
    "GL603",
    "matrix-duplicate-protein",
    category="duplicate",
    severity="warning",
    fix="always",
    unsafe=True,
)
def matrix_duplicate_protein(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """The same protein sequence has two rows in an interaction matrix (often under two names).

    Its interactions count twice and, split by row, leak between train and test. Reported on
    every occurrence after the first. Fix (unsafe: a value both rows hold differently is
    discarded): merge the row into the first one (a cell the first row lacks is taken from the
    repeat, a differing value logged as discarded) and drop it.
    """
    parts = []
    for t in _matrices(data):
        r = t.rows.filter(pl.col("protein").is_not_null())
        hit = later_occurrences(r, ["protein"], t.rows, extra=("protein_name",))
        parts.append(
            finding_frame(
                hit,
                field=pl.lit(t.columns.protein),
                message=pl.format(
                    "same protein sequence as record {} ({})",
                    "first_record",
                    pl.col("first_protein_name").fill_null(""),
                ),
                details=json_struct(
                    pl.col("first_record").alias("duplicate_of"), pl.col("protein_name")
                ),
                fix=json_struct(
                    pl.lit("merge_rows").alias("op"), pl.col("first_row").alias("into")
                ),
            )
        )
    return concat_outputs(parts)
