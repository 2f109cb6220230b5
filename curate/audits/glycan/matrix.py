"""Interaction matrices (GL6xx): glycan columns and protein rows that repeat or hold nothing."""

from __future__ import annotations

import polars as pl

from curate.audits.glycan.registry import RULES
from curate.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
    later_occurrences,
)
from curate.rules import AuditContext
from curate.schemas.glycan_tables import (
    GlycanData,
    GlycanTable,
)

# --------------------------------------------------------------------------- GL6xx interaction


def _matrices(data: GlycanData) -> list[GlycanTable]:
    return [t for t in data.tables if t.task == "interaction"]


@RULES.rule(
    "GL601", "matrix-duplicate-glycan-columns", category="conflict", severity="error", fix="always"
)
def matrix_duplicate_columns(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """Two glycan columns of an interaction matrix are the same glycan (same canonical key) and
    hold different values for one protein.

    The same measurement is recorded twice with two answers; a model sees them as two glycans
    with contradictory binding.
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
        parts.append(
            finding_frame(
                g,
                field=pl.col("values").list.first().struct.field("column"),
                message=pl.format(
                    "{} columns of one glycan disagree for this protein",
                    pl.col("values").list.len(),
                ),
                details=json_struct(pl.col("key"), pl.col("values")),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL602", "matrix-empty-protein", category="integrity", severity="warning", fix="always")
def matrix_empty_protein(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A protein row of an interaction matrix has no value for any glycan: it contributes
    nothing but counts as an example."""
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
            )
        )
    return concat_outputs(parts)


@RULES.rule(
    "GL603", "matrix-duplicate-protein", category="duplicate", severity="warning", fix="always"
)
def matrix_duplicate_protein(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """The same protein sequence has two rows in an interaction matrix (often under two names).

    Its interactions count twice and, split by row, leak between train and test. Reported on
    every occurrence after the first.
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
            )
        )
    return concat_outputs(parts)
