"""Language (DF403): language values that are not ISO 639 codes."""

from __future__ import annotations

import polars as pl

from curate.audits.deepfake.registry import RULES, file_of, valid
from curate.core.findings import finding_frame, json_struct
from curate.core.rules import AuditContext
from curate.schemas.deepfake import iso639, language_status
from curate.schemas.deepfake_tables import DeepfakeData


@RULES.rule("DF403", "language-invalid", category="schema", severity="warning", fix="sometimes")
def language_invalid(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A language value is not an ISO 639 code: accepted are ISO 639-1 (``en``), 639-2/T and
    639-2/B (``deu``, ``ger``), 639-3 (``yue``), and BCP 47 tags whose first part is one
    (``en-US``), lower-case as the standard writes them.

    Per-language results and language-disjoint splits group by this value, so ``English``,
    ``EN`` and ``en`` would be three languages. The code list is Debian's iso-codes as
    ``pycountry`` ships it (its version is in each finding's details). Fix (safe, where the
    value plainly means one code): the lower-case spelling (``EN`` → ``en``, ``EN-us`` →
    ``en-us``) or the ISO 639-1 code of an English language name (``English`` → ``en``); other
    values are left to a person.
    """
    rows = valid(data).filter(pl.col("language").is_not_null())
    values = rows["language"].cast(pl.String).unique().to_list()
    verdicts = [(v, *language_status(v)) for v in values]
    bad = pl.DataFrame(
        [(v, s) for v, ok, s in verdicts if not ok],
        schema={"__lang": pl.String, "__suggest": pl.String},
        orient="row",
    )
    hits = rows.with_columns(pl.col("language").cast(pl.String).alias("__lang")).join(
        bad, on="__lang", how="inner", maintain_order="left"
    )
    return finding_frame(
        hits,
        field=pl.lit("language"),
        message=pl.when(pl.col("__suggest").is_not_null())
        .then(pl.format("{} is not an ISO 639 code (did you mean {}?)", "__lang", "__suggest"))
        .otherwise(pl.format("{} is not an ISO 639 code", "__lang")),
        details=json_struct(
            pl.col("__lang").alias("value"),
            pl.col("__suggest").alias("suggestion"),
            pl.lit(iso639()["source"]).alias("code_list"),
            file_of(data).alias("file"),
        ),
        fix=pl.when(pl.col("__suggest").is_not_null()).then(
            json_struct(
                pl.lit("set").alias("op"),
                pl.lit("language").alias("field"),
                pl.col("__lang").alias("old"),
                pl.col("__suggest").alias("new"),
                pl.lit("language written as its ISO 639 code").alias("reason"),
            )
        ),
    )
