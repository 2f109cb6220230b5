"""Class distribution (GL501)."""

from __future__ import annotations

import polars as pl

from curate.audits.glycan.labels import code_names, columns_of, label_tables, row_codes
from curate.audits.glycan.registry import RULES
from curate.core.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
    repr_expr,
)
from curate.core.rules import AuditContext
from curate.schemas.glycan_tables import (
    GlycanData,
)

# --------------------------------------------------------------------------- GL5xx distribution


@RULES.rule("GL501", "singleton-class", category="distribution", severity="warning")
def singleton_class(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A class has a single example.

    It cannot be in both train and test, so it is either never evaluated or never learned, and
    stratified splitting fails on it. Consider merging it into its parent taxon or dropping it.
    """
    parts = []
    for t in label_tables(data):
        # one (row, class) per row however often the cell repeats it; a class is a code
        long = row_codes(t)
        single = long.group_by("code").len().filter(pl.col("len") == 1)
        long = long.join(single, on="code", how="semi").join(
            code_names(t).drop("lv"), on="code", how="left"
        )
        long = long.join(t.rows.select("row", "record"), on="row", how="left")
        names = {n: columns_of(t, n) for n in t.label_names}
        parts.append(
            finding_frame(
                long.sort("row", "name"),
                field=pl.col("name").replace_strict(names, return_dtype=pl.String),
                message=pl.format("{} {} has a single example", "name", repr_expr("norm")),
                details=json_struct(pl.col("name").alias("level"), pl.col("norm").alias("class")),
            )
        )
    return concat_outputs(parts)
