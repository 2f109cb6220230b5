"""Knowledge-editing rules on one case at a time: schema and integrity (KE0xx), structure (KE1xx).

Every rule here reads the ``cases``/``hops``/``edits`` tables of
:class:`~curate.schemas.knowledge_editing_tables.KEData` as a whole (vectorised joins and
group-bys), but each finding is about one case's own fields.
"""

from __future__ import annotations

import polars as pl

from curate.audits.knowledge_editing.registry import RELATIONS, RULES
from curate.core.findings import (
    clip_expr,
    empty_rule_output,
    finding_frame,
    json_struct,
    repr_expr,
)
from curate.core.rules import AuditContext
from curate.schemas.knowledge_editing_tables import KEData, with_record

# --------------------------------------------------------------------------- schema / integrity

# Only the schema makes a case unpublishable (``invalid=True``): KE001 is a record that is not a
# case at all (a missing field, a number where a string belongs), so no reader of the published
# dataset could load it. The KE1xx consistency errors are findings *about* well-formed cases (a
# broken chain is still a readable case, and MQuAKE-hard has real ones worth studying); they are
# published with the audit report beside them. KE002 (a repeated case id) is a relation between
# two valid records, not a malformed value.


@RULES.rule("KE001", "schema-invalid", category="schema", severity="error", invalid=True)
def schema_invalid(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """Record does not fit the MQuAKE schema (either the original or the Remastered layout).

    A missing field, a wrong type (a number where a string belongs), an empty id or a triple that
    is not ``[subject, relation, object]``. The record is left out of every other rule, so fix
    these first: the other figures are computed on the valid cases only.
    """
    return data.schema_findings


@RULES.rule("KE003", "mixed-id-types", category="schema", severity="error", invalid=True)
def mixed_id_types(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """Some cases' ``case_id`` is an integer and others' a string.

    The schema takes either, but a published dataset holds one type per column (parquet,
    ``datasets``), so such a file cannot be exported whole: the cases of the less common kind
    (strings, on a tie) are reported and left out of an export. Write every id one way.
    """
    rows = data.cases["row"].to_list()
    ids = data.all_ids
    text = [r for r in rows if isinstance(ids[r], str)]
    if not text or len(text) == len(rows):
        return empty_rule_output()
    odd, kind, other = (
        (text, "a string", "integers")
        if len(text) * 2 <= len(rows)
        else (sorted(set(rows) - set(text)), "an integer", "strings")
    )
    hits = data.cases.filter(pl.col("row").is_in(odd)).select("row", "record")
    return finding_frame(
        hits,
        field=pl.lit("case_id"),
        message=pl.format(
            f"case_id {{}} is {kind} where {len(rows) - len(odd):,} other cases' ids are {other} "
            "(a published column holds one type: write them all one way)",
            clip_expr("record", digest=True),
        ),
        details=json_struct(pl.lit(len(rows) - len(odd)).alias("other_kind")),
    )


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
        # the id as the record column shows it (a long one cut, with a digest)
        message=pl.format("case_id {} occurs {} times", clip_expr("record", digest=True), "n"),
        details=json_struct(pl.col("first_row"), pl.col("n").alias("occurrences")),
    )


# --------------------------------------------------------------------------- structure (KE1xx)


def _at_hop(hop: str | pl.Expr) -> pl.Expr:
    """(case ``row``, hop index) as one integer: the join key of a hop and of an edit's index.

    One 64-bit key, not two columns: a join on (row, hop) hashed both columns of every one of
    millions of hops (measured 4x slower). Exact for any index 0 ≤ hop < 2³¹; any other index
    is no hop of a chain, so its key is null and joins nothing, as the two-column join did."""
    h = (pl.col(hop) if isinstance(hop, str) else hop).cast(pl.Int64)
    return pl.when((h >= 0) & (h < 1 << 31)).then(pl.col("row") * (1 << 31) + h)


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
    hits = with_record(data, pl.concat([ids, labs]))
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


def _pair_key(df: pl.DataFrame, a: str, b: str) -> pl.Expr:
    """Two integer columns as one exact key: ``a`` in the high and ``b`` in the low 32 bits
    where both fit, else their struct. Why: hashing a struct of 4 M (case, index) pairs held
    ~0.5 GiB at once, the second-largest transient of a million-case audit."""
    fits = df.select(
        pl.col(a).is_between(0, 2**31 - 1).all() & pl.col(b).is_between(-(2**31), 2**31 - 1).all()
    ).item()
    if not fits:
        return pl.struct(a, b)
    return pl.col(a).cast(pl.Int64) * (1 << 32) + (pl.col(b).cast(pl.Int64) + (1 << 31))


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
        data.edits.select("row", "k", "idx")  # not a copy of every edit column
        .filter(pl.col("idx").is_not_null())
        .join(data.cases.select("row", "n_new_triples"), on="row")
    )
    out_of_range = e.filter((pl.col("idx") < 0) | (pl.col("idx") >= pl.col("n_new_triples")))
    oor = finding_frame(
        with_record(data, out_of_range),
        field=pl.format("orig.edit_triples_idx[{}]", "k"),
        message=pl.format("edit index {} outside the {}-hop chain", "idx", "n_new_triples"),
        details=json_struct(pl.col("idx"), pl.col("n_new_triples").alias("hops")),
    )
    # the windows only over the (case, index) pairs that repeat at all (one hash pass first;
    # per-case windows over every edit cost 5x more)
    dup = e.filter(_pair_key(e, "row", "idx").is_duplicated()).filter(
        pl.col("k") > pl.col("k").min().over("row", "idx")
    )
    dups = finding_frame(
        with_record(data, dup),
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
    e = (
        data.edits.lazy()
        .with_columns(_at_hop("idx").alias("__at"))
        .join(
            data.hops.lazy()  # lazily: the filter copies only the selected columns
            .filter(pl.col("path") == "new")
            .select(
                _at_hop("hop").alias("__at"),
                pl.col("s").alias("n_s"),
                pl.col("r").alias("n_r"),
                pl.col("o").alias("n_o"),
                pl.col("s_label").alias("n_s_label"),
                pl.col("o_label").alias("n_o_label"),
            ),
            on="__at",
            how="inner",
        )
        .drop("__at")
        .collect()
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
                with_record(data, hit),
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
    orig = hops.filter(pl.col("path") == "orig").select(
        _at_hop("hop").alias("__at"),
        pl.col("s").alias("o_s"),
        pl.col("r").alias("o_r"),
        pl.col("o").alias("o_o"),
    )
    new = hops.filter(pl.col("path") == "new").select(
        "row", "hop", "s", "r", "o", _at_hop("hop").alias("__at")
    )
    edited_hops = data.edits.lazy().select(_at_hop("idx").alias("__at")).drop_nulls().unique()
    j = (
        new.join(orig, on="__at")
        # compared before the anti-join: only the changed hops are looked up among the edits
        .filter(
            (pl.col("s") == pl.col("o_s"))
            & (pl.col("r") == pl.col("o_r"))
            & (pl.col("o") != pl.col("o_o"))
        )
        .join(edited_hops, on="__at", how="anti")
        .drop("__at")
        .collect()
    )
    hit = with_record(data, j)
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
        data.hops.select("row", "path", "hop", "o_label", "sh_answer")
        # the last hop of a (case, path) is the row before the next (case, path) starts:
        # ``hops`` is in (row, path, hop) order, so a shift, not a window per case and path
        .filter(
            (pl.col("row") != pl.col("row").shift(-1)).fill_null(True)
            | (pl.col("path") != pl.col("path").shift(-1)).fill_null(True)
        )
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
    a = with_record(
        data, last.filter(pl.col("o_label").is_not_null() & (pl.col("gold") != pl.col("o_label")))
    )
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
    b = with_record(
        data,
        last.filter(pl.col("sh_answer").is_not_null() & (pl.col("gold") != pl.col("sh_answer"))),
    )
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
    h = with_record(
        data,
        data.hops.filter(
            pl.col("sh_answer").is_not_null()
            & pl.col("o_label").is_not_null()
            & (pl.col("sh_answer") != pl.col("o_label"))
        ),
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
    # counted once per distinct prompt (a few templates), not once per edit
    prompts = (
        data.edits.select(pl.col("prompt").unique().drop_nulls())
        .with_columns(
            pl.col("prompt").cast(pl.String).str.count_matches("{}", literal=True).alias("slots")
        )
        .filter(pl.col("slots") != 1)
    )
    e = with_record(data, data.edits.join(prompts, on="prompt").sort("row", "k"))
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
    e = with_record(
        data,
        data.edits.filter(
            pl.col("relation_id").is_not_null() & ~pl.col("relation_id").is_in(known)
        ),
    )
    p1 = finding_frame(
        e,
        field=pl.format("requested_rewrite[{}].relation_id", "k"),
        message=pl.format("relation {} is not an MQuAKE relation", "relation_id"),
        details=json_struct(pl.col("relation_id")),
    )
    h = with_record(
        data, data.hops.filter(pl.col("r").is_not_null() & ~pl.col("r").is_in(known))
    ).with_columns(
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
    # the stripped, lower-cased questions once, as a column (blank after strip ⇔ "" here too)
    norm = pl.col("questions").list.eval(pl.element().str.strip_chars().str.to_lowercase())
    c = (
        data.cases.select("row", "record", "questions", norm.alias("__norm"))
        .with_columns(
            pl.col("questions").list.len().alias("nq"),
            pl.col("__norm").list.n_unique().alias("nd"),
            pl.col("__norm").list.contains("").alias("empty"),
        )
        .filter((pl.col("nq") != 3) | (pl.col("nd") != pl.col("nq")) | pl.col("empty"))
    )
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


@RULES.rule("KE110", "bad-aliases", category="label", severity="warning", fix="always")
def bad_aliases(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """An answer alias list has empty or repeated entries.

    Answers are matched case-insensitively against the answer and its aliases, so an empty alias
    can match an empty model output and a repeated alias (or one equal to the answer itself) adds
    nothing. Fix: drop them, keeping the first occurrence; the changelog lists what was removed.
    """
    parts = []
    for lst, ans in (("answer_alias", "answer"), ("new_answer_alias", "new_answer")):
        # First the cases that may have a finding, from their lists as a whole (a list with a
        # blank, the answer, or fewer distinct keys than entries): the per-alias pass below
        # then runs on those few cases, not on every alias of the dataset.
        keys, ans_key = pl.col("__keys"), pl.col("__ans")
        present = keys.list.drop_nulls()
        maybe = (
            keys.list.contains("")
            | pl.when(ans_key.is_not_null()).then(keys.list.contains(ans_key)).otherwise(False)
            | (present.list.n_unique() < present.list.len())
        ).fill_null(False)
        x = (
            data.cases.select(
                "row",
                "record",
                ans,
                lst,
                # keys computed once as columns (as expressions they were computed per use)
                pl.col(lst)
                .list.eval(pl.element().str.strip_chars().str.to_uppercase())
                .alias("__keys"),
                pl.col(ans).str.strip_chars().str.to_uppercase().alias("__ans"),
            )
            .filter(maybe)
            .drop("__keys", "__ans")
            .with_columns(pl.int_ranges(pl.col(lst).list.len()).alias("i"))
            .explode(lst, "i")
        )
        dropped = (
            x.filter(pl.col(lst).is_not_null())
            .with_columns(pl.col(lst).str.strip_chars().str.to_uppercase().alias("key"))
            .filter(
                (pl.col("key") == "")
                | (pl.col("key") == pl.col(ans).str.strip_chars().str.to_uppercase())
                | (pl.col("i") != pl.col("i").min().over("row", "key"))
            )
            .select("row", "i", pl.lit(True).alias("drop"))
        )
        if dropped.is_empty():
            continue
        # The whole list of each case with a finding, each alias marked kept or dropped: the
        # message, details and fix are then list aggregations, not a Python loop per case.
        per_case = (
            x.join(dropped.select("row").unique(), on="row", how="semi")
            .join(dropped, on=["row", "i"], how="left")
            .with_columns(pl.col("drop").fill_null(False))
            .sort("row", "i")
            .group_by("row", maintain_order=True)
            .agg(
                pl.col("record").first(),
                pl.col(lst).filter(pl.col("drop")).alias("removed"),
                pl.col("i").filter(pl.col("drop")).alias("positions"),
                pl.col(lst).alias("old"),
                pl.col(lst).filter(~pl.col("drop")).alias("new"),
            )
        )
        parts.append(
            finding_frame(
                per_case,
                field=pl.lit(lst),
                message=pl.concat_str(
                    pl.format(
                        "{} empty, repeated or answer-equal alias(es): ",
                        pl.col("positions").list.len(),
                    ),
                    pl.col("removed")
                    .list.eval(repr_expr(pl.element(), limit=None))
                    .list.join(", "),
                ),
                # keys in sorted order, as the canonical ``dumps`` writes them
                details=json_struct(pl.col("positions"), pl.col("removed")),
                fix=json_struct(
                    pl.lit(lst).alias("field"),
                    pl.col("new"),
                    pl.col("old"),
                    pl.lit("set").alias("op"),
                ),
            )
        )
    return pl.concat(parts) if parts else empty_rule_output()


@RULES.rule("KE111", "answer-sets-overlap", category="label", severity="error")
def answer_sets_overlap(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """The pre-edit and post-edit answer sets share a string.

    Accuracy is judged by case-insensitive match against ``answer``+``answer_alias`` (unedited)
    or ``new_answer``+``new_answer_alias`` (edited). A string in both sets counts the same output
    as right before and after the edit, so the case cannot tell whether the edit worked.
    """

    def keys(ans: str, lst: str) -> pl.Expr:
        return pl.concat_list(pl.col(ans), pl.col(lst)).list.eval(
            pl.element().str.strip_chars().str.to_uppercase()
        )

    # the cases whose two key sets intersect at all (a superset: a shared blank or null is
    # dropped below); only their answers are exploded and joined
    maybe = (
        data.cases.select(
            "row",
            "record",
            "answer",
            "answer_alias",
            "new_answer",
            "new_answer_alias",
            keys("answer", "answer_alias").alias("__pre"),
            keys("new_answer", "new_answer_alias").alias("__post"),
        )
        .filter(pl.col("__pre").list.set_intersection("__post").list.len() > 0)
        .drop("__pre", "__post")
    )

    def side(ans: str, lst: str) -> pl.DataFrame:
        return (
            maybe.select(
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
    e = with_record(
        data,
        data.edits.filter(pl.col("new_id").is_not_null() & (pl.col("new_id") == pl.col("true_id"))),
    )
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
            _at_hop("hop").alias("__at"),
            pl.col("s").alias("o_s"),
            pl.col("r").alias("o_r"),
            pl.col("o").alias("o_o"),
        )
    )
    e = with_record(
        data,
        data.edits.lazy()
        .select("row", "k", "idx", "t_s", "t_r", "true_id", _at_hop("idx").alias("__at"))
        .join(orig, on="__at")
        .filter(
            (pl.col("t_s") == pl.col("o_s"))
            & (pl.col("t_r") == pl.col("o_r"))
            & pl.col("true_id").is_not_null()
            & (pl.col("true_id") != pl.col("o_o"))
        )
        .drop("__at")
        .collect(),
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
