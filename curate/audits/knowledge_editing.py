"""Knowledge-editing (MQuAKE) rules: structure, contamination, conflicts, duplicates.

Every rule is a vectorised pass over the ``cases``/``hops``/``edits`` tables built by
:mod:`curate.families.knowledge_editing`: joins and group-bys, never a Python loop over pairs of
cases. Docstrings are the rules' documentation (``curate rules knowledge-editing``).

Codes: ``KE0xx`` schema and integrity, ``KE1xx`` structure of one case, ``KE2xx`` contamination
for an edit set, ``KE3xx`` conflicting edits, ``KE4xx`` duplicates.
"""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

import orjson
import polars as pl

from curate.families.base import ChangeEntry, FixResult
from curate.families.knowledge_editing import (
    FAMILY,
    KEData,
    _to_arrow,
    only_input,
    resolve_edit_set,
)
from curate.findings import (
    Report,
    dumps,
    empty_rule_output,
    finding_frame,
    json_struct,
    later_occurrences,
    repr_expr,
)
from curate.rules import AuditContext, RuleSet

RULES = RuleSet("knowledge-editing")

#: The 44 Wikidata relations MQuAKE has templates for (data, not code).
RELATIONS: dict[str, str] = json.loads(
    (files("curate") / "data" / "mquake_relations.json").read_text(encoding="utf-8")
)["relations"]

#: How many contaminating / conflicting edits a finding lists in ``details`` (counts are exact).
MAX_LISTED = 20


# --------------------------------------------------------------------------- schema / integrity


@RULES.rule("KE001", "schema-invalid", category="schema", severity="error")
def schema_invalid(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """Record does not fit the MQuAKE schema (either the original or the Remastered layout).

    A missing field, a wrong type (a number where a string belongs), an empty id or a triple that
    is not ``[subject, relation, object]``. The record is left out of every other rule, so fix
    these first: the other figures are computed on the valid cases only.
    """
    return data.schema_findings


@RULES.rule("KE002", "duplicate-case-id", category="integrity", severity="error")
def duplicate_case_id(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """Two cases share a ``case_id``.

    Edit sets, withheld-edit lists and results are keyed by case id, so a repeated id makes an
    evaluation silently merge two cases. Every occurrence after the first is reported.
    """
    c = data.cases.select("row", "record").with_columns(
        pl.col("row").min().over("record").alias("first_row"),
        pl.len().over("record").alias("n"),
    )
    hits = c.filter(pl.col("row") != pl.col("first_row"))
    return finding_frame(
        hits,
        field=pl.lit("case_id"),
        message=pl.format("case_id {} occurs {} times", "record", "n"),
        details=json_struct(pl.col("first_row"), pl.col("n").alias("occurrences")),
    )


# --------------------------------------------------------------------------- structure (KE1xx)

_COUNT_FIELDS = [
    ("n_triples", "orig.triples"),
    ("n_triples_labeled", "orig.triples_labeled"),
    ("n_single_hops", "single_hops"),
    ("n_new_triples", "orig.new_triples"),
    ("n_new_triples_labeled", "orig.new_triples_labeled"),
    ("n_new_single_hops", "new_single_hops"),
]


@RULES.rule("KE101", "hop-count-mismatch", category="consistency", severity="error")
def hop_count_mismatch(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """The hop lists of a case have different lengths.

    ``orig.triples``, ``orig.triples_labeled``, ``single_hops`` and their ``new_*`` counterparts
    describe the same chain hop by hop; when their lengths differ, hop k of one list is not hop k
    of another and per-hop accuracy compares the wrong facts. Reports every length.
    """
    cols = [c for c, _ in _COUNT_FIELDS]
    c = data.cases.filter(pl.min_horizontal(*cols) != pl.max_horizontal(*cols))
    counts = pl.struct([pl.col(col).alias(name) for col, name in _COUNT_FIELDS])
    return finding_frame(
        c,
        field=pl.lit("orig.triples"),
        message=pl.concat_str(
            [pl.lit("hop lists differ in length: ")]
            + [
                pl.format(f"{name}={{}}{', ' if i < len(_COUNT_FIELDS) - 1 else ''}", pl.col(col))
                for i, (col, name) in enumerate(_COUNT_FIELDS)
            ]
        ),
        details=pl.struct(counts.alias("lengths")).struct.json_encode(),
    )


@RULES.rule("KE102", "broken-chain", category="consistency", severity="error")
def broken_chain(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """A fact chain is not connected: the object of hop k is not the subject of hop k+1.

    Checked on Wikidata ids (``triples``, ``new_triples``) and on labels (``*_labeled``). A
    disconnected chain means the multi-hop question does not follow the listed facts, so its gold
    answer cannot be trusted.
    """
    # ``hops`` is built in (row, path, hop) order, so the next hop is the next row when it
    # belongs to the same case and path: a shift, not a sort or a window per case.
    same = (pl.col("row").shift(-1) == pl.col("row")) & (pl.col("path").shift(-1) == pl.col("path"))
    # Only the columns the check reads: the filter below would otherwise copy every column of
    # the largest table (labels, alias lists) for nearly every hop.
    h = data.hops.select(
        "row",
        "record",
        "path",
        "hop",
        "o",
        "o_label",
        pl.when(same).then(pl.col("s").shift(-1)).alias("next_s"),
        pl.when(same).then(pl.col("s_label").shift(-1)).alias("next_s_label"),
        pl.when(same).then(pl.col("hop").shift(-1)).alias("next_hop"),
    )
    h = h.filter(pl.col("next_hop").is_not_null())
    ids = h.filter(
        pl.col("o").is_not_null()
        & pl.col("next_s").is_not_null()
        & (pl.col("o") != pl.col("next_s"))
    ).with_columns(pl.lit("").alias("kind"), pl.col("o").alias("a"), pl.col("next_s").alias("b"))
    labs = h.filter(
        pl.col("o_label").is_not_null()
        & pl.col("next_s_label").is_not_null()
        & (pl.col("o_label") != pl.col("next_s_label"))
    ).with_columns(
        pl.lit("_labeled").alias("kind"),
        pl.col("o_label").alias("a"),
        pl.col("next_s_label").alias("b"),
    )
    hits = pl.concat([ids, labs])
    field = pl.format(
        "orig.{}{}[{}][0]",
        pl.when(pl.col("path") == "new").then(pl.lit("new_triples")).otherwise(pl.lit("triples")),
        pl.col("kind"),
        pl.col("next_hop"),
    )
    return finding_frame(
        hits,
        field=field,
        message=pl.format(
            "chain broken between hop {} and {}: object {} != next subject {}",
            "hop",
            "next_hop",
            repr_expr("a"),
            repr_expr("b"),
        ),
        details=json_struct(
            pl.col("path"),
            pl.col("hop"),
            pl.col("a").alias("object"),
            pl.col("b").alias("next_subject"),
        ),
    )


@RULES.rule("KE103", "edit-misaligned", category="consistency", severity="error")
def edit_misaligned(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """``requested_rewrite``, ``edit_triples`` and ``edit_triples_idx`` do not line up.

    Edit k must be described three times: as a natural-language rewrite, as an id triple and by
    the index of the hop it changes. Different lengths, an index outside the chain or two edits
    on one hop make it impossible to know which fact an edit changes.
    """
    c = data.cases.filter(
        (pl.col("n_rewrites") != pl.col("n_edit_triples"))
        | (pl.col("n_rewrites") != pl.col("n_edit_idx"))
    )
    lengths = finding_frame(
        c,
        field=pl.lit("orig.edit_triples_idx"),
        message=pl.format(
            "{} requested_rewrite, {} edit_triples, {} edit_triples_idx",
            "n_rewrites",
            "n_edit_triples",
            "n_edit_idx",
        ),
        details=json_struct(pl.col("n_rewrites"), pl.col("n_edit_triples"), pl.col("n_edit_idx")),
    )
    e = (
        data.edits.select("row", "record", "k", "idx")  # not a copy of every edit column
        .filter(pl.col("idx").is_not_null())
        .join(data.cases.select("row", "n_new_triples"), on="row")
    )
    out_of_range = e.filter((pl.col("idx") < 0) | (pl.col("idx") >= pl.col("n_new_triples")))
    oor = finding_frame(
        out_of_range,
        field=pl.format("orig.edit_triples_idx[{}]", "k"),
        message=pl.format("edit index {} outside the {}-hop chain", "idx", "n_new_triples"),
        details=json_struct(pl.col("idx"), pl.col("n_new_triples").alias("hops")),
    )
    dup = e.filter(
        pl.col("idx").is_duplicated().over("row")
        & (pl.col("k") > pl.col("k").min().over("row", "idx"))
    )
    dups = finding_frame(
        dup,
        field=pl.format("orig.edit_triples_idx[{}]", "k"),
        message=pl.format("two edits change hop {}", "idx"),
        details=json_struct(pl.col("idx")),
    )
    return pl.concat([lengths, oor, dups])


@RULES.rule("KE104", "edit-not-in-new-chain", category="consistency", severity="error")
def edit_not_in_new_chain(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """An edit does not appear in ``new_triples`` at its index as written in the rewrite.

    ``new_triples[edit_triples_idx[k]]`` must equal ``edit_triples[k]``; the rewrite's
    ``relation_id`` and ``target_new.id`` must be that triple's relation and object; its
    ``subject`` and ``target_new.str`` must be the labels of that hop in ``new_triples_labeled``.
    Otherwise the edit the model receives is not the fact the new answer depends on.
    """
    e = data.edits.filter(pl.col("idx").is_not_null()).join(
        data.hops.lazy()  # lazily: the filter copies only the selected columns
        .filter(pl.col("path") == "new")
        .select(
            "row",
            pl.col("hop").cast(pl.Int64).alias("idx"),
            pl.col("s").alias("n_s"),
            pl.col("r").alias("n_r"),
            pl.col("o").alias("n_o"),
            pl.col("s_label").alias("n_s_label"),
            pl.col("o_label").alias("n_o_label"),
        )
        .collect(),
        on=["row", "idx"],
        how="inner",
    )
    checks = [
        ("t_s", "n_s", "orig.edit_triples[{}][0]", "edit subject {} != new_triples[{}] subject {}"),
        (
            "t_r",
            "n_r",
            "orig.edit_triples[{}][1]",
            "edit relation {} != new_triples[{}] relation {}",
        ),
        ("t_o", "n_o", "orig.edit_triples[{}][2]", "edit object {} != new_triples[{}] object {}"),
        (
            "relation_id",
            "t_r",
            "requested_rewrite[{}].relation_id",
            "rewrite relation {} != edit_triples relation (hop {}) {}",
        ),
        (
            "new_id",
            "t_o",
            "requested_rewrite[{}].target_new.id",
            "rewrite target_new.id {} != edit_triples object (hop {}) {}",
        ),
        (
            "subject",
            "n_s_label",
            "requested_rewrite[{}].subject",
            "rewrite subject {} != new_triples_labeled[{}] subject {}",
        ),
        (
            "new_str",
            "n_o_label",
            "requested_rewrite[{}].target_new.str",
            "rewrite target_new.str {} != new_triples_labeled[{}] object {}",
        ),
    ]
    parts = []
    for a, b, fld, msg in checks:
        hit = e.filter(pl.col(a).is_not_null() & pl.col(b).is_not_null() & (pl.col(a) != pl.col(b)))
        parts.append(
            finding_frame(
                hit,
                field=pl.format(fld, "k"),
                message=pl.format(
                    msg.replace("{}", "{}"),
                    repr_expr(a),
                    pl.col("idx"),
                    repr_expr(b),
                ),
                details=json_struct(
                    pl.col("k").alias("edit"),
                    pl.col("idx").alias("hop"),
                    pl.col(a).alias("edit_value"),
                    pl.col(b).alias("chain_value"),
                ),
            )
        )
    return pl.concat(parts)


@RULES.rule("KE105", "unexplained-chain-change", category="consistency", severity="error")
def unexplained_chain_change(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """``new_triples`` changes a hop that no edit touches.

    Where the new chain has the same subject and relation as the original at a hop that is not
    in ``edit_triples_idx``, the fact is unedited and its object must stay the same; a different
    object there is a label with no edit behind it, so the new answer is unreachable.
    """
    # Lazily: each filter then copies only the selected columns, not the labels and aliases.
    hops = data.hops.lazy()
    orig = (
        hops.filter(pl.col("path") == "orig")
        .select(
            "row",
            "hop",
            pl.col("s").alias("o_s"),
            pl.col("r").alias("o_r"),
            pl.col("o").alias("o_o"),
        )
        .collect()
    )
    new = (
        hops.filter(pl.col("path") == "new").select("row", "record", "hop", "s", "r", "o").collect()
    )
    edited_hops = (
        data.edits.filter(pl.col("idx").is_not_null())
        .select("row", pl.col("idx").cast(pl.Int32).alias("hop"))
        .unique()
    )
    j = new.join(orig, on=["row", "hop"]).join(edited_hops, on=["row", "hop"], how="anti")
    hit = j.filter(
        (pl.col("s") == pl.col("o_s"))
        & (pl.col("r") == pl.col("o_r"))
        & (pl.col("o") != pl.col("o_o"))
    )
    return finding_frame(
        hit,
        field=pl.format("orig.new_triples[{}][2]", "hop"),
        message=pl.format(
            "hop {} changes object {} → {} with no edit at that hop", "hop", "o_o", "o"
        ),
        details=json_struct(
            pl.col("hop"),
            pl.col("s"),
            pl.col("r"),
            pl.col("o_o").alias("old"),
            pl.col("o").alias("new"),
        ),
    )


@RULES.rule("KE106", "answer-mismatch", category="label", severity="error")
def answer_mismatch(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """The gold answer is not the end of the chain.

    ``answer`` must equal the object label of the last hop of ``triples_labeled`` and the answer
    of the last ``single_hops`` entry; ``new_answer`` likewise for the ``new_*`` lists; and each
    single-hop answer must be the object label of its hop. A mismatch is a wrong label.
    """
    last = (
        data.hops.select("row", "record", "path", "hop", "o_label", "sh_answer")
        .filter(pl.col("hop") == pl.col("hop").max().over("row", "path"))
        .join(data.cases.select("row", "answer", "new_answer"), on="row")
        .with_columns(
            pl.when(pl.col("path") == "orig")
            .then(pl.col("answer"))
            .otherwise(pl.col("new_answer"))
            .alias("gold"),
            pl.when(pl.col("path") == "orig")
            .then(pl.lit("answer"))
            .otherwise(pl.lit("new_answer"))
            .alias("gold_field"),
            pl.when(pl.col("path") == "orig")
            .then(pl.lit(""))
            .otherwise(pl.lit("new_"))
            .alias("pfx"),
        )
    )
    a = last.filter(pl.col("o_label").is_not_null() & (pl.col("gold") != pl.col("o_label")))
    p1 = finding_frame(
        a,
        field=pl.col("gold_field"),
        message=pl.format(
            "{} {} != last hop object {} in orig.{}triples_labeled",
            "gold_field",
            repr_expr("gold"),
            repr_expr("o_label"),
            "pfx",
        ),
        details=json_struct(pl.col("gold"), pl.col("o_label").alias("chain_end"), pl.col("path")),
    )
    b = last.filter(pl.col("sh_answer").is_not_null() & (pl.col("gold") != pl.col("sh_answer")))
    p2 = finding_frame(
        b,
        field=pl.col("gold_field"),
        message=pl.format(
            "{} {} != last {}single_hops answer {}",
            "gold_field",
            repr_expr("gold"),
            "pfx",
            repr_expr("sh_answer"),
        ),
        details=json_struct(
            pl.col("gold"), pl.col("sh_answer").alias("single_hop_answer"), pl.col("path")
        ),
    )
    h = data.hops.filter(
        pl.col("sh_answer").is_not_null()
        & pl.col("o_label").is_not_null()
        & (pl.col("sh_answer") != pl.col("o_label"))
    ).with_columns(
        pl.when(pl.col("path") == "orig").then(pl.lit("")).otherwise(pl.lit("new_")).alias("pfx")
    )
    p3 = finding_frame(
        h,
        field=pl.format("{}single_hops[{}].answer", "pfx", "hop"),
        message=pl.format(
            "single-hop answer {} != hop object {}",
            repr_expr("sh_answer"),
            repr_expr("o_label"),
        ),
        details=json_struct(pl.col("hop"), pl.col("path"), pl.col("sh_answer"), pl.col("o_label")),
    )
    return pl.concat([p1, p2, p3])


@RULES.rule("KE107", "bad-prompt", category="consistency", severity="error")
def bad_prompt(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """An edit prompt lacks the ``{}`` subject slot, or has more than one.

    Editors build the edit sentence as ``prompt.format(subject)``; without exactly one slot the
    subject is never inserted (or ``format`` fails) and the edit teaches the wrong fact.
    """
    e = (
        data.edits.filter(pl.col("prompt").is_not_null())
        .with_columns(pl.col("prompt").str.count_matches("{}", literal=True).alias("slots"))
        .filter(pl.col("slots") != 1)
    )
    return finding_frame(
        e,
        field=pl.format("requested_rewrite[{}].prompt", "k"),
        message=pl.format(
            "prompt {} has {} '{}' slots, expected 1",
            repr_expr("prompt"),
            "slots",
            pl.lit("{}"),
        ),
        details=json_struct(pl.col("prompt"), pl.col("slots")),
    )


@RULES.rule("KE108", "unknown-relation", category="consistency", severity="error")
def unknown_relation(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """A relation id is not one of the 44 relations MQuAKE has templates for.

    Questions, cloze prompts and edit prompts are generated from per-relation templates; a
    relation outside that set (a typo such as ``P-27`` or a property MQuAKE never used) has no
    template, so its text was written some other way and is unchecked.
    """
    known = list(RELATIONS)
    e = data.edits.filter(pl.col("relation_id").is_not_null() & ~pl.col("relation_id").is_in(known))
    p1 = finding_frame(
        e,
        field=pl.format("requested_rewrite[{}].relation_id", "k"),
        message=pl.format("relation {} is not an MQuAKE relation", "relation_id"),
        details=json_struct(pl.col("relation_id")),
    )
    h = data.hops.filter(pl.col("r").is_not_null() & ~pl.col("r").is_in(known)).with_columns(
        pl.when(pl.col("path") == "orig")
        .then(pl.lit("triples"))
        .otherwise(pl.lit("new_triples"))
        .alias("lst")
    )
    p2 = finding_frame(
        h,
        field=pl.format("orig.{}[{}][1]", "lst", "hop"),
        message=pl.format("relation {} is not an MQuAKE relation", "r"),
        details=json_struct(pl.col("r").alias("relation_id"), pl.col("path"), pl.col("hop")),
    )
    return pl.concat([p1, p2])


@RULES.rule("KE109", "bad-questions", category="consistency", severity="error")
def bad_questions(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """A case does not have exactly three distinct, non-empty multi-hop questions.

    MQuAKE asks each case three paraphrases and counts it correct if any is answered; fewer,
    empty or repeated questions change what the accuracy figure means.
    """
    c = data.cases.with_columns(
        pl.col("questions").list.len().alias("nq"),
        pl.col("questions")
        .list.eval(pl.element().str.strip_chars().str.to_lowercase())
        .list.n_unique()
        .alias("nd"),
        pl.col("questions")
        .list.eval(pl.element().str.strip_chars() == "")
        .list.any()
        .alias("empty"),
    ).filter((pl.col("nq") != 3) | (pl.col("nd") != pl.col("nq")) | pl.col("empty"))
    return finding_frame(
        c,
        field=pl.lit("questions"),
        message=pl.format(
            "{} questions ({} distinct{}), expected 3 distinct",
            "nq",
            "nd",
            pl.when(pl.col("empty")).then(pl.lit(", some empty")).otherwise(pl.lit("")),
        ),
        details=json_struct(
            pl.col("nq").alias("questions"), pl.col("nd").alias("distinct"), pl.col("empty")
        ),
    )


@RULES.rule("KE110", "bad-aliases", category="label", severity="warning", fixable=True)
def bad_aliases(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """An answer alias list has empty or repeated entries.

    Answers are matched case-insensitively against the answer and its aliases, so an empty alias
    can match an empty model output and a repeated alias (or one equal to the answer itself) adds
    nothing. Fix: drop them, keeping the first occurrence; the changelog lists what was removed.
    """
    parts = []
    for lst, ans in (("answer_alias", "answer"), ("new_answer_alias", "new_answer")):
        x = (
            data.cases.select("row", "record", ans, lst)
            .explode(lst)
            .with_columns(pl.int_range(pl.len()).over("row").alias("i"))
            .filter(pl.col(lst).is_not_null())
            .with_columns(pl.col(lst).str.strip_chars().str.to_uppercase().alias("key"))
            .with_columns(
                (pl.col("key") == "").alias("is_empty"),
                (pl.col("key") == pl.col(ans).str.strip_chars().str.to_uppercase()).alias(
                    "is_answer"
                ),
                pl.col("i").min().over("row", "key").alias("first_i"),
            )
            .filter(pl.col("is_empty") | pl.col("is_answer") | (pl.col("i") != pl.col("first_i")))
        )
        if x.is_empty():
            continue
        clean = data.cases.filter(pl.col("row").is_in(x["row"].unique().implode())).select(
            "row", lst, ans
        )
        bad = x.group_by("row").agg(
            pl.col("i"), pl.col("record").first(), pl.col(lst).alias("removed")
        )
        clean = clean.join(bad, on="row").with_columns(
            pl.int_ranges(pl.col(lst).list.len()).alias("pos")
        )
        rows = []
        for r in clean.iter_rows(named=True):
            drop = set(r["i"])
            new = [a for j, a in enumerate(r[lst]) if j not in drop]
            rows.append(
                {
                    "row": r["row"],
                    "record": r["record"],
                    "field": lst,
                    "message": f"{len(drop)} empty, repeated or answer-equal alias(es): "
                    + ", ".join(repr(a) for a in r["removed"]),
                    "details": dumps({"removed": r["removed"], "positions": sorted(drop)}),
                    "fix": dumps({"op": "set", "field": lst, "old": r[lst], "new": new}),
                }
            )
        parts.append(pl.DataFrame(rows))
    return pl.concat(parts, how="diagonal_relaxed") if parts else empty_rule_output()


@RULES.rule("KE111", "answer-sets-overlap", category="label", severity="error")
def answer_sets_overlap(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """The pre-edit and post-edit answer sets share a string.

    Accuracy is judged by case-insensitive match against ``answer``+``answer_alias`` (unedited)
    or ``new_answer``+``new_answer_alias`` (edited). A string in both sets counts the same output
    as right before and after the edit, so the case cannot tell whether the edit worked.
    """

    def side(ans: str, lst: str) -> pl.DataFrame:
        return (
            data.cases.select(
                "row",
                "record",
                pl.concat_list(pl.col(ans), pl.col(lst)).alias("v"),
            )
            .explode("v")
            .with_columns(pl.col("v").str.strip_chars().str.to_uppercase().alias("key"))
            .filter(pl.col("key") != "")
        )

    pre = side("answer", "answer_alias")
    post = side("new_answer", "new_answer_alias").select("row", "key", pl.col("v").alias("v_new"))
    j = (
        pre.join(post, on=["row", "key"])
        .group_by("row", "record")
        .agg(pl.col("v").unique(maintain_order=True).alias("shared"))
        .sort("row")
    )
    return finding_frame(
        j,
        field=pl.lit("new_answer_alias"),
        message=pl.format("pre- and post-edit answers share {}", pl.col("shared").list.join(", ")),
        details=json_struct(pl.col("shared")),
    )


@RULES.rule("KE112", "no-op-edit", category="consistency", severity="error")
def no_op_edit(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """An edit's new target is its true target (``target_new.id == target_true.id``).

    Such an edit changes nothing, yet the case counts it as an edit; or the true target was
    recorded wrongly. Either way the case tests something other than it claims.
    """
    e = data.edits.filter(pl.col("new_id").is_not_null() & (pl.col("new_id") == pl.col("true_id")))
    return finding_frame(
        e,
        field=pl.format("requested_rewrite[{}].target_new.id", "k"),
        message=pl.format("edit sets {} to its current value {}", "relation_id", "new_id"),
        details=json_struct(pl.col("new_id"), pl.col("true_id")),
    )


@RULES.rule("KE113", "wrong-true-target", category="label", severity="error")
def wrong_true_target(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """An edit's ``target_true`` disagrees with the original chain.

    When the edited hop has the same subject and relation in ``triples`` as in ``edit_triples``,
    the true target is that original hop's object. A different ``target_true.id`` means the edit
    memory or the original chain is mislabelled.
    """
    orig = (
        data.hops.lazy()  # lazily: the filter copies only the selected columns
        .filter(pl.col("path") == "orig")
        .select(
            "row",
            pl.col("hop").cast(pl.Int64).alias("idx"),
            pl.col("s").alias("o_s"),
            pl.col("r").alias("o_r"),
            pl.col("o").alias("o_o"),
        )
        .collect()
    )
    e = data.edits.join(orig, on=["row", "idx"]).filter(
        (pl.col("t_s") == pl.col("o_s"))
        & (pl.col("t_r") == pl.col("o_r"))
        & pl.col("true_id").is_not_null()
        & (pl.col("true_id") != pl.col("o_o"))
    )
    return finding_frame(
        e,
        field=pl.format("requested_rewrite[{}].target_true.id", "k"),
        message=pl.format(
            "target_true.id {} != original object {} of hop {}", "true_id", "o_o", "idx"
        ),
        details=json_struct(
            pl.col("true_id"), pl.col("o_o").alias("original_object"), pl.col("idx").alias("hop")
        ),
    )


# --------------------------------------------------------------------------- contamination (KE2xx)


def applied_edits(data: KEData, edited: pl.Series) -> pl.LazyFrame:
    """Edits of the cases in the edit set (id triples complete), lazily."""
    rows = data.cases.lazy().select("row", edited.alias("edited")).filter(pl.col("edited"))
    return (
        data.edits.lazy()
        .filter(
            pl.col("t_s").is_not_null() & pl.col("t_r").is_not_null() & pl.col("t_o").is_not_null()
        )
        .join(rows.select("row"), on="row", how="semi")
        .select("row", "record", "k", "t_s", "t_r", "t_o", "subject", "new_str")
    )


def contamination(data: KEData, edited: pl.Series) -> pl.DataFrame:
    """Every (victim case, hop) whose correct path an applied edit of another case overrides.

    One pass of joins, no loop over pairs: (1) the correct path of each case (``new_triples`` if
    edited, else ``triples``) is joined on (subject, relation) with the *distinct* applied edit
    triples, keeping those with another object; (2) only for these candidate hits are the source
    cases gathered, and a hit stands if a source other than the victim itself remains (a case's
    own edit against its own chain is a structural defect: KE104/KE105). Memory follows the
    number of hops, distinct edits and hits, never pairs of cases.
    """
    applied = applied_edits(data, edited)
    flags = data.cases.lazy().select("row", edited.alias("edited"))
    path = (
        data.hops.lazy()
        .select("row", "path", "hop", "s", "r", "o")
        .join(flags, on="row")
        .filter(
            pl.when(pl.col("edited"))
            .then(pl.col("path") == "new")
            .otherwise(pl.col("path") == "orig")
            & pl.col("s").is_not_null()
            & pl.col("r").is_not_null()
        )
    )
    distinct = applied.select("t_s", "t_r", "t_o").unique()
    cand = (
        path.join(distinct, left_on=["s", "r"], right_on=["t_s", "t_r"], how="inner")
        .filter(pl.col("o").is_null() | (pl.col("o") != pl.col("t_o")))
        .with_columns(pl.col("s").alias("t_s"), pl.col("r").alias("t_r"))
        .collect()
    )
    if cand.is_empty():
        return pl.DataFrame()
    sources = (
        applied.join(
            cand.lazy().select("t_s", "t_r", "t_o").unique(), on=["t_s", "t_r", "t_o"], how="semi"
        )
        .sort("row", "k")
        .group_by("t_s", "t_r", "t_o")
        .agg(
            pl.col("record").alias("src_records"),
            pl.col("row").alias("src_rows"),
            pl.col("k").alias("src_k"),
            pl.col("subject").first(),
            pl.col("new_str").first(),
        )
    )
    labels = data.hops.lazy().select("row", "path", "hop", "record", "s_label", "o_label")
    return (
        cand.lazy()
        .join(sources, on=["t_s", "t_r", "t_o"])
        .with_columns(
            pl.col("src_rows")
            .list.set_difference(pl.concat_list(pl.col("row")))
            .list.len()
            .alias("n_other")
        )
        .filter(pl.col("n_other") > 0)
        .join(labels, on=["row", "path", "hop"], how="left")
        .collect()
    )


@RULES.table("edited")
def edited_table(ctx: AuditContext) -> pl.Series:
    """Per row of ``cases``: is the case in the edit set (``--edit-set``, resolved once)?"""
    return resolve_edit_set(ctx.data, ctx.options.edit_set)


@RULES.table("contamination")
def contamination_table(ctx: AuditContext) -> pl.DataFrame:
    """The contamination join for the edit set (KE201 and KE202 both read it)."""
    return contamination(ctx.data, ctx.table("edited"))


def _contam_findings(ctx: AuditContext, edited_side: bool) -> pl.DataFrame:
    j: pl.DataFrame = ctx.table("contamination")
    if j.is_empty():
        return empty_rule_output()
    j = j.filter(pl.col("edited") == edited_side)
    if j.is_empty():
        return empty_rule_output()
    per_hop = (
        j.with_columns(
            pl.struct(
                pl.concat_list("t_s", "t_r", "t_o").alias("triple"),
                pl.col("subject"),
                pl.col("new_str").alias("target_new"),
                pl.col("src_records").list.head(MAX_LISTED).alias("source_cases"),
                pl.col("src_k").list.head(MAX_LISTED).alias("source_edit_index"),
                pl.col("src_records").list.len().alias("n_source_cases"),
            ).alias("edit")
        )
        .group_by("row", "record", "path", "hop", "s", "r", "o", "s_label", "o_label")
        .agg(
            pl.col("edit").sort_by(pl.col("t_o")).head(MAX_LISTED).alias("edits"),
            pl.len().alias("n_edits"),
        )
        .sort("row", "hop")
    )
    lst = "new_triples" if edited_side else "triples"
    return finding_frame(
        per_hop,
        field=pl.format(f"orig.{lst}[{{}}]", "hop"),
        message=pl.format(
            "hop {} ({}, {}, {}) is overridden by {} edit(s) from other cases, "
            "e.g. → {} from case {}",
            "hop",
            pl.col("s_label").fill_null(pl.col("s")),
            "r",
            pl.col("o_label").fill_null(pl.col("o")),
            "n_edits",
            pl.col("edits").list.first().struct.field("target_new"),
            pl.col("edits").list.first().struct.field("source_cases").list.first(),
        ),
        details=pl.struct(
            pl.concat_list("s", "r", "o").alias("hop_triple"),
            pl.col("hop"),
            pl.col("n_edits").alias("contaminating_edits"),
            pl.col("edits"),
        ).struct.json_encode(),
    )


@RULES.rule(
    "KE201",
    "contaminated-edited-case",
    category="contamination",
    severity="error",
    fixable=True,
    needs=("contamination",),
)
def contaminated_edited(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """An *edited* case's correct path is overridden by an edit from another case.

    For the chosen edit set (``--edit-set``), the correct path of an edited case is
    ``new_triples``. If another edited case applies an edit with the same (subject, relation) as a
    hop of that path but a different object (compared by Wikidata id), a model that applies all
    edits faithfully follows the other edit and gives a different answer than the gold
    ``new_answer``: the label is wrong for this evaluation. MQuAKE-Remastered's protocol withholds
    those edits when asking this case (``curate fix`` writes the withheld lists).
    """
    return _contam_findings(ctx, True)


@RULES.rule(
    "KE202",
    "contaminated-unedited-case",
    category="contamination",
    severity="error",
    fixable=True,
    needs=("contamination",),
)
def contaminated_unedited(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """An *unedited* case's original path is overridden by an edit from an edited case.

    Cases outside the edit set are asked with their original chain ``triples`` and gold
    ``answer``. When an applied edit shares (subject, relation) with a hop of that chain but has
    another object, the faithful edited model must answer differently from ``answer``: the case
    is counted wrong for doing the right thing. This is what makes most unedited cases of
    MQuAKE-CF-3k unreliable when only part of the benchmark is edited.
    """
    return _contam_findings(ctx, False)


# --------------------------------------------------------------------------- conflicts (KE3xx)


@RULES.rule("KE301", "conflicting-edits", category="conflict", severity="error", needs=("edited",))
def conflicting_edits(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """Two edits in the edit set set the same (subject id, relation) to different objects.

    Within one case or across cases, an edit memory cannot hold both: whichever an editor applies
    last wins, and every case relying on the other is wrong. Each edit in a conflicting group is
    reported with the alternatives and the cases that request them.
    """
    ap = applied_edits(data, ctx.table("edited")).collect()
    g = ap.with_columns(pl.col("t_o").n_unique().over("t_s", "t_r").alias("n_obj")).filter(
        pl.col("n_obj") > 1
    )
    if g.is_empty():
        return empty_rule_output()
    alts = g.group_by("t_s", "t_r", "t_o").agg(
        pl.col("record").head(MAX_LISTED).alias("cases"), pl.col("new_str").first().alias("label")
    )
    alts = alts.group_by("t_s", "t_r").agg(
        pl.struct(pl.col("t_o").alias("object"), "label", "cases")
        .sort_by("t_o")
        .alias("alternatives")
    )
    hit = g.join(alts, on=["t_s", "t_r"]).sort("row", "k")
    return finding_frame(
        hit,
        field=pl.format("requested_rewrite[{}].target_new.id", "k"),
        message=pl.format(
            "edit ({}, {}) → {} conflicts with {} other object(s) edited in the set",
            pl.col("subject").fill_null(pl.col("t_s")),
            "t_r",
            "t_o",
            pl.col("n_obj") - 1,
        ),
        details=json_struct(
            pl.concat_list("t_s", "t_r", "t_o").alias("edit"), pl.col("alternatives")
        ),
    )


@RULES.rule(
    "KE302", "ambiguous-label-edits", category="conflict", severity="warning", needs=("edited",)
)
def ambiguous_label_edits(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """Edits of different entities that share a subject *label* set the same relation differently.

    Ids differ, so the edits do not conflict in Wikidata terms; but memory-based editors
    (MeLLo, retrieval of natural-language edits) see only the text "The capital of Georgia is …"
    and cannot tell the country from the US state. Each such edit is reported with the other
    entities and objects behind the same label.
    """
    ap = applied_edits(data, ctx.table("edited")).filter(pl.col("subject").is_not_null()).collect()
    d = ap.select("subject", "t_r", "t_s", "t_o").unique()
    d = (
        d.with_columns(
            pl.len().over("subject", "t_r").alias("n_all"),
            pl.len().over("subject", "t_r", "t_s").alias("n_same_s"),
            pl.len().over("subject", "t_r", "t_o").alias("n_same_o"),
        )
        .with_columns(
            # distinct (s, o) pairs with another subject id AND another object (inclusion–exclusion;
            # the pair itself is counted once in each term).
            (pl.col("n_all") - pl.col("n_same_s") - pl.col("n_same_o") + 1).alias("n_ambiguous")
        )
        .filter(pl.col("n_ambiguous") > 0)
    )
    if d.is_empty():
        return empty_rule_output()
    others = (
        ap.join(d.select("subject", "t_r").unique(), on=["subject", "t_r"])
        .group_by("subject", "t_r")
        .agg(
            pl.struct(
                pl.col("t_s").alias("subject_id"),
                pl.col("t_o").alias("object"),
                pl.col("new_str").alias("label"),
                pl.col("record").alias("case"),
            )
            .sort_by("t_s", "t_o", "row")
            .head(MAX_LISTED)
            .alias("edits")
        )
    )
    hit = (
        ap.join(
            d.select("subject", "t_r", "t_s", "t_o", "n_ambiguous"),
            on=["subject", "t_r", "t_s", "t_o"],
        )
        .join(others, on=["subject", "t_r"])
        .sort("row", "k")
    )
    return finding_frame(
        hit,
        field=pl.format("requested_rewrite[{}].subject", "k"),
        message=pl.format(
            "label {} names {} with relation {}, but {} other edit(s) under the same label use "
            "another entity and object",
            repr_expr("subject"),
            "t_s",
            "t_r",
            "n_ambiguous",
        ),
        details=json_struct(pl.concat_list("t_s", "t_r", "t_o").alias("edit"), pl.col("edits")),
    )


# --------------------------------------------------------------------------- duplicates (KE4xx)


@RULES.table("case_keys")
def case_keys(ctx: AuditContext) -> pl.DataFrame:
    """Per case: a key of its fact chain and of its set of edits (order-free)."""
    data: KEData = ctx.data
    # Lazily, so that only row, hop and the ids are copied by the filter and the sort, not the
    # labels and alias lists of every hop (measured: the audit's peak at 200k cases).
    chain = (
        data.hops.lazy()
        .filter(pl.col("path") == "orig")
        .sort("row", "hop")
        .group_by("row")
        .agg(pl.concat_str("s", "r", "o", separator="\x1f").str.join("\x1e").alias("chain"))
        .collect()
    )
    edits = (
        data.edits.select("row", pl.concat_str("t_s", "t_r", "t_o", separator="\x1f").alias("t"))
        .sort("row", "t")
        .group_by("row")
        .agg(pl.col("t").str.join("\x1e").alias("edit_key"))
    )
    return (
        data.cases.select("row", "record")
        .join(chain, on="row", how="left")
        .join(edits, on="row", how="left")
    )


@RULES.rule(
    "KE401",
    "duplicate-case",
    category="duplicate",
    severity="warning",
    fixable=True,
    needs=("case_keys",),
)
def duplicate_case(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """Two cases have the same fact chain and the same edits.

    They test the same thing twice (often with reworded questions), so the case weighs double in
    every accuracy figure. The first occurrence is kept; each later one is reported with the case
    it repeats. Fix: drop the later ones.
    """
    k = later_occurrences(
        ctx.table("case_keys").filter(pl.col("chain").is_not_null()),
        ["chain", "edit_key"],
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
    return out.with_columns(
        pl.struct(pl.lit("drop").alias("op"), pl.col("record").alias("record"))
        .struct.json_encode()
        .alias("fix")
    )


_NORM = r"[^\p{L}\p{N}]+"


@RULES.rule(
    "KE402",
    "near-duplicate-question",
    category="duplicate",
    severity="warning",
    needs=("case_keys",),
)
def near_duplicate_question(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """The same multi-hop question (ignoring case, spacing and punctuation) appears in two cases.

    One question with two gold answers cannot be right for both; and if the answers agree the
    question is counted twice. Pairs already reported as duplicate cases (KE401) are not repeated.
    """
    dup_rows = (
        ctx.table("case_keys")
        .with_columns(pl.col("row").min().over("chain", "edit_key").alias("first_row"))
        .select("row", "first_row")
    )
    q = (
        data.cases.select("row", "record", "questions")
        .explode("questions")
        .with_columns(pl.int_range(pl.len()).over("row").alias("qi"))
        .filter(pl.col("questions").is_not_null())
        .with_columns(
            pl.col("questions")
            .str.to_lowercase()
            .str.replace_all(_NORM, " ")
            .str.strip_chars()
            .alias("norm")
        )
        .filter(pl.col("norm") != "")
        .join(dup_rows, on="row")
        .with_columns(
            pl.col("row").min().over("norm").alias("norm_first"),
            pl.col("first_row").n_unique().over("norm").alias("n_groups"),
        )
        .filter((pl.col("row") != pl.col("norm_first")) & (pl.col("n_groups") > 1))
    )
    if q.is_empty():
        return empty_rule_output()
    firsts = data.cases.select(
        pl.col("row").alias("norm_first"), pl.col("record").alias("first_record")
    )
    q = q.join(firsts, on="norm_first").unique(["row", "norm"], keep="first").sort("row", "qi")
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


# --------------------------------------------------------------------------- fixes


def plan_fixes(data: KEData, report: Report, options: dict[str, Any]) -> FixResult:
    """Apply the report's fixes to copies of the records and write the withheld-edit lists.

    * KE401 duplicates are dropped (first occurrence kept);
    * KE110 alias lists are cleaned;
    * for the edit set, every case gets ``edited`` and ``withheld_edits`` (the MQuAKE-Remastered
      evaluation protocol: when asking case c, leave out the edits that contaminate its path).

    Records that failed the schema (KE001, :attr:`KnowledgeEditingFamily.invalid_rules`) are
    dropped *and* logged whole, never silently lost; ``invalid_dropped`` in the summary counts them
    and ``dropped`` the records a fix removed (KE401 duplicates), so the two never overlap.
    """
    f = report.findings
    changes: list[ChangeEntry] = []
    drop: dict[int, str] = {}

    def original(row: int) -> Any:
        # The whole record goes into the changelog, so a dropped case can be restored from it.
        case = data.records.get(row)
        return case.to_original() if case is not None else None

    # Invalid records come from the family's own check, not from the report: a report narrowed
    # with --select must not let one through.
    invalid = FAMILY.invalid_records(data).unique("row", keep="first", maintain_order=True)
    for r in invalid.iter_rows(named=True):
        drop[r["row"]] = r["rule"]
        changes.append(
            ChangeEntry(
                r["record"],
                "",
                data.invalid.get(r["row"]),
                None,
                r["rule"],
                f"dropped: invalid record ({r['field']}: {r['message']})",
            )
        )
    for r in f.filter(pl.col("rule") == "KE401").iter_rows(named=True):
        if r["row"] in drop:
            continue
        drop[r["row"]] = "KE401"
        changes.append(
            ChangeEntry(
                r["record"], "", original(r["row"]), None, "KE401", "dropped: " + r["message"]
            )
        )
    alias_fix = {
        (r["row"], r["field"]): orjson.loads(r["fix"])
        for r in f.filter((pl.col("rule") == "KE110") & pl.col("fix").is_not_null()).iter_rows(
            named=True
        )
    }
    edited = resolve_edit_set(data, report.options.get("edit_set") or "all")
    contam = contamination(data, edited)
    withheld: dict[int, list[dict[str, Any]]] = {}
    if not contam.is_empty():
        ex = (
            contam.explode(["src_records", "src_rows", "src_k"])
            .filter((pl.col("src_rows") != pl.col("row")) & ~pl.col("src_rows").is_in(list(drop)))
            .select("row", "src_rows", "src_records", "src_k", "t_s", "t_r", "t_o")
            .unique()
            .sort("row", "src_rows", "src_k")
        )
        case_ids = {row: case.case_id for row, case in data.records.items()}
        for r in ex.iter_rows(named=True):
            withheld.setdefault(r["row"], []).append(
                {
                    "case_id": case_ids.get(r["src_rows"], r["src_records"]),
                    "edit_index": r["src_k"],
                    "triple": [r["t_s"], r["t_r"], r["t_o"]],
                }
            )
    flags = dict(zip(data.cases["row"].to_list(), edited.to_list(), strict=True))
    split_of = dict(zip(data.cases["row"].to_list(), data.cases["split"].to_list(), strict=True))
    by_split: dict[str, list[dict[str, Any]]] = {}
    n_withheld_cases = 0
    for row in sorted(data.records):
        if row in drop:
            continue
        rec = data.records[row].to_original()
        rid = str(rec["case_id"])
        for lst in ("answer_alias", "new_answer_alias"):
            fx = alias_fix.get((row, lst))
            if fx:
                changes.append(
                    ChangeEntry(
                        rid,
                        lst,
                        fx["old"],
                        fx["new"],
                        "KE110",
                        "removed empty, repeated or answer-equal aliases",
                    )
                )
                rec[lst] = fx["new"]
        rec["edited"] = bool(flags.get(row, False))
        rec["withheld_edits"] = withheld.get(row, [])
        if rec["withheld_edits"]:
            n_withheld_cases += 1
            rule = "KE201" if rec["edited"] else "KE202"
            changes.append(
                ChangeEntry(
                    rid,
                    "withheld_edits",
                    [],
                    rec["withheld_edits"],
                    rule,
                    f"{len(rec['withheld_edits'])} contaminating edit(s) withheld "
                    f"when evaluating this case (edit set {report.options.get('edit_set')})",
                )
            )
        by_split.setdefault(split_of.get(row) or "train", []).append(rec)
    edit_set_ids = [
        data.records[row].case_id if row in data.records else rec
        for row, rec, e in zip(
            data.cases["row"].to_list(),
            data.cases["record"].to_list(),
            edited.to_list(),
            strict=True,
        )
        if e and row not in drop
    ]
    return FixResult(
        tables={s: _to_arrow(rows, only_input(data)) for s, rows in by_split.items()},
        changelog=changes,
        extra_files={"edit_set.json": orjson.dumps(edit_set_ids, option=orjson.OPT_INDENT_2)},
        summary={
            # The same meaning in every family: ``dropped`` are records a fix removed
            # (duplicates), ``invalid_dropped`` those left out as invalid; never both.
            "dropped": sum(1 for rule in drop.values() if rule == "KE401"),
            "invalid_dropped": sum(1 for rule in drop.values() if rule != "KE401"),
            "alias_lists_cleaned": sum(1 for c in changes if c.rule == "KE110"),
            "cases_with_withheld_edits": n_withheld_cases,
            "edit_set": report.options.get("edit_set"),
            "edited_cases": len(edit_set_ids),
        },
    )
