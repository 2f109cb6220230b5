"""Subjects and demographics (DF401-DF402): identity leakage across splits, subgroup balance."""

from __future__ import annotations

from typing import Any

import polars as pl

from curate.audits.deepfake.registry import IDENTITIES, RULES, file_of, valid
from curate.audits.shared.duplicates import leaks
from curate.core.findings import empty_rule_output, finding_frame, json_struct, rule_output
from curate.core.rules import AuditContext
from curate.schemas.deepfake_tables import IDENTITY_KEYS, DeepfakeData


@RULES.rule("DF401", "identity-leak", category="leakage", severity="error", needs=(IDENTITIES,))
def identity_leak(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A person (``subject_id``, or the ``source_id``/``target_id`` of a face swap) appears in
    two splits, so the splits are not subject-disjoint.

    Detectors learn identities: a test face or voice seen in training inflates the score,
    which is why sets such as ILLUSION split by subject. A face swap shows two people, so its
    source and target both count, and one person is one id whatever field names them. Each
    row of a later split (train < validation < test) showing a person already in an earlier
    split is reported once, naming the person and the first row there. No fix: re-splitting
    by subject is a design decision (and moves whole groups of samples).
    """
    ids = ctx.table(IDENTITIES)
    hits = leaks(ids, IDENTITY_KEYS).unique("row", keep="first", maintain_order=True)
    if hits.is_empty():
        return empty_rule_output()
    firsts = data.rows.select(pl.col("row").alias("first_row"), pl.col("record").alias("first"))
    hits = hits.join(firsts, on="first_row", how="left").join(
        data.rows.select("row", "input"), on="row", how="left"
    )
    return finding_frame(
        hits.sort("row"),
        field=pl.col("role")
        .cast(pl.String)
        .replace({"subject": "subject_id", "source": "source_id", "target": "target_id"}),
        message=pl.format(
            "{} {} is also in {} ({})",
            pl.col("role"),
            pl.col("identity"),
            pl.col("first_split"),
            pl.col("first"),
        ),
        details=json_struct(
            pl.col("identity").cast(pl.String),
            pl.col("role").cast(pl.String),
            pl.col("split").cast(pl.String),
            pl.col("first_split"),
            pl.col("first").alias("first_record"),
            file_of(data).alias("file"),
        ),
    )


def demographic_counts(data: DeepfakeData) -> pl.DataFrame:
    """Per split, the sample count of every sex × skin tone × label cell, zero cells included
    (the full product of the values seen in that split): ``split, sex, skin_tone, label, n``.
    Rows missing any of the three are left out. Also the input of a demographic plot."""
    rows = (
        valid(data)
        .filter(
            pl.col("sex").is_not_null()
            & pl.col("skin_tone").is_not_null()
            & pl.col("label").is_not_null()
        )
        .select(
            pl.col("split").cast(pl.String).fill_null("(none)"),
            pl.col("sex").cast(pl.String),
            pl.col("skin_tone").cast(pl.String),
            pl.col("label").cast(pl.String),
        )
    )
    if rows.is_empty():
        return rows.with_columns(pl.lit(0, pl.UInt32).alias("n"))
    seen = rows.group_by("split", "sex", "skin_tone", "label").len("n")
    splits = rows.select("split").unique()
    grid = (
        splits.join(rows.select("sex").unique(), how="cross")
        .join(rows.select("skin_tone").unique(), how="cross")
        .join(rows.select("label").unique(), how="cross")
    )
    return (
        grid.join(seen, on=["split", "sex", "skin_tone", "label"], how="left")
        .with_columns(pl.col("n").fill_null(0))
        .sort("split", "sex", "skin_tone", "label")
    )


@RULES.rule("DF402", "demographic-imbalance", category="distribution", severity="warning")
def demographic_imbalance(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A split's sex × skin tone × label groups are unbalanced: the largest group holds more
    than ``--max-imbalance`` (1.5 by default) times the samples of the smallest.

    Detectors are known to fail more on under-represented groups; a benchmark whose groups
    differ in size hides that in its average (ILLUSION balances them for that reason). One
    finding per split (no row: it is about the split), naming the largest and smallest
    groups and the ratio; an empty group (a combination seen elsewhere in the split but with
    no sample) makes the ratio infinite. Only rows with all three fields count.
    """
    counts = demographic_counts(data)
    if counts.is_empty():
        return empty_rule_output()
    limit = ctx.options.max_imbalance
    out = []
    for split, part in counts.group_by("split", maintain_order=True):
        big = part.sort("n", descending=True).row(0, named=True)
        small = part.sort("n").row(0, named=True)
        ratio = float("inf") if small["n"] == 0 else big["n"] / small["n"]
        if ratio <= limit:
            continue

        def name(g: dict[str, Any]) -> str:
            return f"{g['sex']}/{g['skin_tone']}/{g['label']}"

        shown = "inf" if ratio == float("inf") else f"{ratio:.2f}"
        out.append(
            {
                "row": None,
                "record": split[0],
                "field": "sex,skin_tone,label",
                "message": (
                    f"split {split[0]}: largest group {name(big)} has {big['n']} samples, "
                    f"smallest {name(small)} {small['n']} (ratio {shown} > {limit:g})"
                ),
                "details": {
                    "split": split[0],
                    "ratio": None if ratio == float("inf") else round(ratio, 6),
                    "largest": {**big, "split": None},
                    "smallest": {**small, "split": None},
                    "groups": part.height,
                    "file": data.inputs[0].path,
                },
            }
        )
    return rule_output(out)
