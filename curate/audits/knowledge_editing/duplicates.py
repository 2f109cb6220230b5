"""Duplicates (KE4xx): cases that test the same thing twice, and questions asked by two cases."""

from __future__ import annotations

import polars as pl

from curate.audits.knowledge_editing.registry import RULES
from curate.audits.shared.duplicates import later_copies, later_occurrences, name_firsts
from curate.core.findings import (
    empty_rule_output,
    finding_frame,
    json_struct,
    repr_expr,
)
from curate.core.rules import AuditContext
from curate.schemas.knowledge_editing_tables import (
    CASE_KEYS,
    QUESTION_KEYS,
    KEData,
    fact_keys,
    normalised_question,
    question_keys,
)

__all__ = ["case_keys", "fact_keys", "normalised_question", "question_keys", "questions_table"]

# --------------------------------------------------------------------------- duplicates (KE4xx)


def _pair(s: str, r: str) -> pl.Expr:
    """(subject, relation) codes as one 64-bit integer (see :func:`contamination.sr_key`)."""
    return pl.col(s).to_physical().cast(pl.UInt64) * (1 << 32) + pl.col(r).to_physical().cast(
        pl.UInt64
    )


@RULES.table("case_keys")
def case_keys(ctx: AuditContext) -> pl.DataFrame:
    """Per case: a key of its fact chain and of its set of edits (order-free).

    Keys compare equal exactly when the chains (the edit sets) do: each is the list of its
    triples' categorical codes (equal codes are equal strings), a triple with a null left out.
    Codes, not the triples' text joined: half the time, and no string per hop.
    """
    data: KEData = ctx.data

    def complete(*cols: str) -> pl.Expr:
        return pl.all_horizontal(pl.col(c).is_not_null() for c in cols)

    # ``hops`` is in (row, path, hop) order and a group keeps its rows' order: no sort needed
    chain = (
        data.hops.lazy()
        .filter(pl.col("path") == "orig")
        .group_by("row")
        .agg(
            _pair("s", "r").filter(complete("s", "r", "o")).alias("sr"),
            pl.col("o").to_physical().filter(complete("s", "r", "o")).alias("o"),
        )
        .select("row", pl.struct("sr", "o").alias("chain"))
    )
    edits = (
        data.edits.lazy()
        .select(
            "row",
            _pair("t_s", "t_r").alias("sr"),
            pl.col("t_o").to_physical().alias("o"),
            complete("t_s", "t_r", "t_o").alias("ok"),
        )
        .sort("row", "sr", "o")  # a set: its triples in one canonical order
        .group_by("row")
        .agg(pl.col("sr").filter("ok"), pl.col("o").filter("ok"))
        .select("row", pl.struct("sr", "o").alias("edit_key"))
    )
    return (
        data.cases.lazy()
        .select("row", "record")
        .join(chain, on="row", how="left", maintain_order="left")
        .join(edits, on="row", how="left", maintain_order="left")
        .collect()
    )


@RULES.rule(
    "KE401",
    "duplicate-case",
    category="duplicate",
    severity="warning",
    fix="always",
    some_unsafe=True,
    needs=("case_keys", "edited"),
)
def duplicate_case(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """Two cases have the same fact chain and the same edits.

    They test the same thing twice (often with reworded questions), so the case weighs double in
    every accuracy figure. The first occurrence is kept; each later one is reported with the case
    it repeats. Fix: drop the later ones. Dropping a case that is in the edit set removes its
    edits from the evaluation, so that fix is unsafe (``--unsafe-fixes``), and ``curate fix``
    names every edited case it drops.
    """
    k = later_occurrences(
        ctx.table("case_keys").filter(pl.col("chain").is_not_null()),
        CASE_KEYS.within_split(),
        data.cases,
    )
    if k.is_empty():
        return empty_rule_output()
    out = finding_frame(
        k,
        field=pl.lit(""),
        message=pl.format("same chain and edits as case {}", "first_record"),
        details=json_struct(pl.col("first_record").alias("duplicate_of")),
    )
    edited = data.cases.select("row", ctx.table("edited").alias("edited"))
    flags = out.select("row").join(edited, on="row", how="left", maintain_order="left")
    return out.with_columns(
        pl.struct(
            pl.lit("drop").alias("op"),
            pl.col("record").alias("record"),
            flags["edited"].fill_null(False).alias("unsafe"),
        )
        .struct.json_encode()
        .alias("fix")
    )


@RULES.table("questions")
def questions_table(ctx: AuditContext) -> pl.DataFrame:
    """One row per (case, question) with a non-blank normal form (the declared
    :data:`~curate.schemas.knowledge_editing_tables.QUESTION_KEYS`' normaliser):
    ``row``, ``qi`` (index in ``questions``) and ``key``, a 64-bit hash of the normal form. Built
    once per audit: the regex pass over every question is the costly part of comparing them.

    Why a hash and not the text: the questions and their normal forms were the largest
    transient of a million-case audit (+0.58 GiB of peak RSS for 3 M rows of text); KE402
    compares the texts again for the few rows whose hash repeats, so a collision never makes a
    finding. Built by the streaming engine, a slice of cases at a time, so the texts of all the
    questions are never held at once.
    """
    data: KEData = ctx.data
    return (
        data.cases.lazy()
        .select(
            "row",
            "questions",
            # positions exploded beside the questions: a window per case cost 30x more
            pl.int_ranges(pl.col("questions").list.len(), dtype=pl.Int32).alias("qi"),
        )
        .explode("questions", "qi")
        .filter(pl.col("questions").is_not_null())
        .with_columns(QUESTION_KEYS.normalised(pl.col("questions")).alias("norm"))
        .filter(pl.col("norm") != "")
        .select("row", "qi", pl.col("norm").hash(seed=0).alias("key"))
        .collect(engine="streaming")
    )


@RULES.rule(
    "KE402",
    "near-duplicate-question",
    category="duplicate",
    severity="warning",
    needs=("case_keys", "questions"),
)
def near_duplicate_question(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """The same multi-hop question (ignoring case, spacing and punctuation) appears in two cases.

    One question with two gold answers cannot be right for both; and if the answers agree the
    question is counted twice. Pairs already reported as duplicate cases (KE401) are not repeated.
    """
    # the first case of each duplicate-case group (KE401's key): a question repeated only
    # within one such group is KE401's finding, not a second one here
    case_first = ctx.table("case_keys").select(
        "row", pl.col("row").min().over(list(CASE_KEYS.columns)).alias("case_first")
    )
    # Candidates by the hash: every row of a hash group that spans two duplicate-case groups.
    # A group of equal texts lies inside one hash group, whole, so the windows below over the
    # candidates' texts give what they would over every question.
    cand = (
        ctx.table("questions")
        .join(case_first, on="row")
        .filter(pl.col("case_first").n_unique().over("key") > 1)
    )
    if cand.is_empty():
        return empty_rule_output()
    q = (
        cand.join(data.cases.select("row", "record", "questions"), on="row")
        .with_columns(pl.col("questions").list.get(pl.col("qi")))
        .with_columns(QUESTION_KEYS.normalised(pl.col("questions")).alias("norm"))
        .filter(pl.col("case_first").n_unique().over("norm") > 1)
    )
    # the exact duplicates of the normal form (the shared join), each naming its first case
    q = later_copies(q, ["norm"])
    if q.is_empty():
        return empty_rule_output()
    q = (
        name_firsts(q, data.cases)
        .sort("row", "qi")
        .unique(["row", "norm"], keep="first", maintain_order=True)  # a case's first asking
    )
    return finding_frame(
        q,
        field=pl.format("questions[{}]", "qi"),
        message=pl.format(
            "question also asked by case {}: {}",
            "first_record",
            repr_expr("questions"),
        ),
        details=json_struct(
            pl.col("first_record").alias("also_in"), pl.col("norm").alias("normalised")
        ),
    )
