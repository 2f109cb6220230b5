"""Edit sets and contamination (KE2xx): which cases are edited, and whose path another case's edit
overrides.

Holds the ``edited`` and ``contamination`` shared tables (KE3xx and the fixes read them too) and
:func:`resolve_edit_set`, the ``--edit-set`` resolver behind ``edited``.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import polars as pl

from curate.audits.knowledge_editing.registry import MAX_LISTED, RULES
from curate.errors import UsageError
from curate.findings import (
    empty_rule_output,
    finding_frame,
    json_struct,
)
from curate.io import read_text
from curate.rules import AuditContext
from curate.schemas.knowledge_editing_tables import KEData

# --------------------------------------------------------------------------- contamination (KE2xx)


_EDITED_LABELS = ("edited", "train_edited", "test_edited", "test_edited_unique")


def resolve_edit_set(data: KEData, spec: str) -> pl.Series:
    """Boolean per row of ``data.cases``: is the case in the edit set?

    * ``all`` — every case is edited (MQuAKE-CF-3k's usual protocol);
    * ``random:K[:SEED]`` — exactly ``random.seed(SEED); random.sample(ids, K)`` over case ids in
      file order, SEED 100 by default: the procedure behind MQuAKE-Remastered's edit lists;
    * ``ids:FILE`` — case ids listed in FILE (JSON array, or one id per line);
    * ``split:N`` — Remastered layout: cases whose ``split[N]`` labels include an edited label.
    """
    spec = spec.strip()
    records = data.cases["record"]
    kind, _, rest = spec.partition(":")
    if kind == "all" and not rest:
        return pl.Series("edited", [True] * data.cases.height, dtype=pl.Boolean)
    if kind == "random":
        parts = rest.split(":")
        try:
            k = int(parts[0])
            seed = int(parts[1]) if len(parts) > 1 and parts[1] != "" else 100
        except ValueError:
            raise UsageError(f"bad edit set {spec!r}: expected random:K[:SEED]") from None
        if len(parts) > 2 or not 0 <= k <= len(data.all_ids):
            raise UsageError(
                f"bad edit set {spec!r}: K must be between 0 and {len(data.all_ids)} cases"
            )
        rng = random.Random()
        rng.seed(seed)
        chosen = {str(x) for x in rng.sample(data.all_ids, k)}
        return records.is_in(list(chosen)).alias("edited")
    if kind == "ids":
        path = Path(rest)
        if not rest or not path.is_file():
            raise UsageError(f"bad edit set {spec!r}: no such file {rest!r}")
        text = read_text(path)
        try:
            ids = orjson.loads(text)
            if not isinstance(ids, list):
                raise ValueError
        except (orjson.JSONDecodeError, ValueError):
            ids = [ln.strip() for ln in text.splitlines() if ln.strip() and ln[0] != "#"]
        wanted = {str(x) for x in ids}
        unknown = sorted(wanted - set(map(str, data.all_ids)))
        if unknown:
            shown = ", ".join(unknown[:10]) + (" ..." if len(unknown) > 10 else "")
            raise UsageError(f"edit set {rest}: {len(unknown)} ids are not cases: {shown}")
        return records.is_in(list(wanted)).alias("edited")
    if kind == "split" and rest:
        flags = []
        seen_key = False
        for raw in data.cases["split_map"]:
            labels = orjson.loads(raw).get(rest) if raw else None
            seen_key = seen_key or labels is not None
            flags.append(any(lab in _EDITED_LABELS for lab in labels or []))
        if not seen_key:
            raise UsageError(f"edit set {spec!r}: no case has a split entry {rest!r}")
        return pl.Series("edited", flags, dtype=pl.Boolean)
    raise UsageError(f"bad edit set {spec!r}: use all, random:K[:SEED], ids:FILE or split:N")


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
    hits = _without_withheld(data, cand.lazy().join(sources, on=["t_s", "t_r", "t_o"]))
    return (
        hits.with_columns(
            pl.col("src_rows")
            .list.set_difference(pl.concat_list(pl.col("row")))
            .list.len()
            .alias("n_other")
        )
        .filter(pl.col("n_other") > 0)
        .join(labels, on=["row", "path", "hop"], how="left")
        .collect()
    )


def _without_withheld(data: KEData, hits: pl.LazyFrame) -> pl.LazyFrame:
    """``hits`` less the sources a case withholds (``withheld_edits``, written by ``curate fix``).

    A withheld edit is not applied when its case is asked, so it cannot contaminate it: a hit
    whose every source is withheld is gone, the others keep their remaining sources.
    """
    withheld = data.marks.select("row", "withheld").explode("withheld").drop_nulls("withheld")
    if not withheld.height:
        return hits
    h = hits.with_row_index("__h")
    kept = (
        h.select("__h", "row", "src_records", "src_rows", "src_k")
        .explode(["src_records", "src_rows", "src_k"])
        .with_columns(
            pl.concat_str(
                pl.col("src_records"), pl.col("src_k").cast(pl.String), separator="\x1f"
            ).alias("withheld")
        )
        .join(withheld.lazy(), on=["row", "withheld"], how="anti")
        .group_by("__h", maintain_order=True)
        .agg("src_records", "src_rows", "src_k")
    )
    return h.drop("src_records", "src_rows", "src_k").join(kept, on="__h").drop("__h")


def edit_set_from_data(data: KEData) -> bool:
    """Does every case carry the ``edited`` flag ``curate fix`` writes? Then that is the edit
    set. Data mixing fixed and unfixed cases uses ``--edit-set`` (their flags would say nothing
    about the others)."""
    n = data.marks.filter(pl.col("edited").is_not_null()).height
    return n > 0 and n == data.cases.height


@RULES.table("edited")
def edited_table(ctx: AuditContext) -> pl.Series:
    """Per row of ``cases``: is the case in the edit set (``--edit-set``, resolved once)?

    Data fixed by ``curate fix`` carries its edit set in the cases' ``edited`` flags, and its
    ``withheld_edits`` are only right for that set: then the flags are the edit set, whatever
    ``--edit-set`` says (the report's ``edit_set`` stats say so).
    """
    data: KEData = ctx.data
    if edit_set_from_data(data):
        flagged = data.marks.filter(pl.col("edited").is_not_null())
        flags = data.cases.select("row").join(flagged, on="row", how="left", maintain_order="left")
        return flags["edited"].fill_null(False).alias("edited")
    return resolve_edit_set(data, ctx.options.edit_set)


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
    per_hop = per_hop.join(_withhold_fix(ctx.data, j), on=["row", "hop"], how="left")
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
        fix=pl.col("withhold"),
    )


def _integer_case_ids(data: KEData) -> bool:
    """Are the valid cases' ids integers? Then a ``withheld_edits`` entry writes its case id as
    an integer, as the records do (an invalid record's id may be anything: not counted)."""
    ids = [data.all_ids[r] for r in data.cases["row"].to_list()]
    return bool(ids) and all(type(x) is int for x in ids)


def _withhold_fix(data: KEData, j: pl.DataFrame) -> pl.DataFrame:
    """Per (case, hop): the edit that withholds *every* contaminating source (``details`` lists
    at most :data:`MAX_LISTED`; the fix must not), as ``withheld_edits`` entries."""
    ints = _integer_case_ids(data)
    case_id = pl.col("src_records").cast(pl.Int64) if ints else pl.col("src_records")
    return (
        j.select("row", "hop", "t_s", "t_r", "t_o", "src_records", "src_rows", "src_k")
        .explode(["src_records", "src_rows", "src_k"])
        .filter(pl.col("src_rows") != pl.col("row"))
        .unique(["row", "hop", "src_rows", "src_k"])
        .sort("row", "hop", "src_rows", "src_k")
        .group_by("row", "hop", maintain_order=True)
        .agg(
            pl.struct(
                case_id.alias("case_id"),
                pl.col("src_k").alias("edit_index"),
                pl.concat_list("t_s", "t_r", "t_o").alias("triple"),
            ).alias("values"),
            pl.col("src_records").alias("refs"),
        )
        .select(
            "row",
            "hop",
            pl.struct(
                pl.lit("extend").alias("op"),
                pl.lit("withheld_edits").alias("field"),
                pl.col("values"),
                pl.col("refs"),
                pl.lit("contaminating edit(s) withheld when this case is asked").alias("reason"),
            )
            .struct.json_encode()
            .alias("withhold"),
        )
    )


@RULES.rule(
    "KE201",
    "contaminated-edited-case",
    category="contamination",
    severity="error",
    fix="always",
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
    fix="always",
    needs=("contamination",),
)
def contaminated_unedited(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """An *unedited* case's original path is overridden by an edit from an edited case.

    Cases outside the edit set are asked with their original chain ``triples`` and gold
    ``answer``. When an applied edit shares (subject, relation) with a hop of that chain but has
    another object, the faithful edited model must answer differently from ``answer``: the case
    is counted wrong for doing the right thing. This is what makes most unedited cases of
    MQuAKE-CF-3k unreliable when only part of the benchmark is edited. Fix (as KE201): the
    case's ``withheld_edits`` lists those edits, to leave out when it is asked.
    """
    return _contam_findings(ctx, False)


@RULES.rule(
    "KE203",
    "withheld-edit-unknown",
    category="integrity",
    severity="warning",
    fix="always",
)
def withheld_edit_unknown(data: KEData, ctx: AuditContext) -> pl.DataFrame:
    """A case withholds an edit that no case of the dataset has (``withheld_edits``).

    ``curate fix`` writes ``withheld_edits`` for the dataset as it is; removing cases afterwards
    (a later fix, a hand edit, a filtered copy) leaves entries pointing at a case or an edit
    index that is gone. An evaluation then looks for an edit that does not exist, and the list
    no longer says which edits really contaminate the case. Fix: remove those entries.
    """
    withheld = (
        data.marks.select("row", "withheld")
        .explode("withheld")
        .drop_nulls("withheld")
        .with_columns(pl.int_range(pl.len()).over("row").alias("i"))
    )
    if not withheld.height:
        return empty_rule_output()
    known = data.edits.select(
        pl.concat_str(pl.col("record"), pl.col("k").cast(pl.String), separator="\x1f").alias(
            "withheld"
        )
    ).unique()
    gone = withheld.join(known, on="withheld", how="anti")
    if not gone.height:
        return empty_rule_output()
    ints = _integer_case_ids(data)
    parts = gone.with_columns(
        pl.col("withheld").str.split_exact("\x1f", 1).struct.rename_fields(["case", "k"])
    ).unnest("withheld")
    case_id = pl.col("case").cast(pl.Int64, strict=False) if ints else pl.col("case")
    per_case = (
        parts.sort("row", "i")
        .group_by("row", maintain_order=True)
        .agg(
            pl.struct(
                case_id.alias("case_id"), pl.col("k").cast(pl.Int64).alias("edit_index")
            ).alias("match"),
            pl.len().alias("n"),
            pl.col("case").first().alias("first_case"),
            pl.col("k").first().alias("first_k"),
        )
        .join(data.cases.select("row", "record"), on="row")
    )
    return finding_frame(
        per_case,
        field=pl.lit("withheld_edits"),
        message=pl.format(
            "{} withheld edit(s) refer to no edit of this dataset, e.g. edit {} of case {}",
            "n",
            "first_k",
            "first_case",
        ),
        details=json_struct(pl.col("match").alias("unknown")),
        fix=pl.struct(
            pl.lit("remove").alias("op"),
            pl.lit("withheld_edits").alias("field"),
            pl.col("match"),
            pl.lit("withheld edit(s) of cases or edits no longer in the dataset removed").alias(
                "reason"
            ),
        ).struct.json_encode(),
    )
