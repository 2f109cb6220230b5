"""TB4xx: repeated ids, repeated rows, repeated inputs, and examples that cross splits.

All are the shared joins of :mod:`curate.audits.shared.duplicates` (one hash group-by or window
over the table, never a loop over pairs) on the declaration's columns: the id, every published
column, the key in its normal form (``keys`` table), the group.
"""

from __future__ import annotations

import polars as pl

from curate.audits.shared.duplicates import cross_split_copies, later_copies, name_firsts
from curate.audits.shared.resplit import move_edits, regroup_split
from curate.audits.table.registry import (
    RULES,
    TableView,
    as_text,
    at,
    columns,
    key_names,
    repeated,
    repeats,
    value,
)
from curate.core.findings import clip_expr, empty_rule_output, finding_frame, json_struct
from curate.core.rules import AuditContext


def _where(split: str = "split") -> pl.Expr:
    return (
        pl.when(pl.col(split).is_null())
        .then(pl.lit(""))
        .otherwise(pl.format(" in {}", pl.col(split)))
    )


@RULES.rule("TB401", "duplicate-id", category="duplicate", severity="error", needs=("ids",))
def duplicate_id(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """Two rows have the same ``--id``: the later one reuses the first's id.

    An id that names two rows makes every reference to it ambiguous (a finding, a changelog
    line, a published correction, a prediction file joined on ids). Each later row is reported
    with the first row of its id, in any split. No fix: which row should keep the id is a
    person's decision; where the rows are equal in every other column, TB402 (duplicate-row)
    or TB405 (split-leakage) proposes dropping the copy."""
    idc = ctx.options.id
    table = ctx.table("ids").filter(pl.col(value(idc)).is_not_null())
    # only ids whose hash repeats can repeat (an integer sort over 10 M ids, ~8x faster than
    # the strings' own is_duplicated); the few candidates are then compared as text
    table = table.filter(repeats(table[value(idc)].hash()))
    hits = name_firsts(later_copies(table, [value(idc)]), table, extra=["split"])
    return finding_frame(
        hits,
        field=pl.lit(idc),
        message=pl.format(
            "id {} is also row {}'s{}",
            clip_expr("record", digest=True),
            "first_row",
            pl.when(pl.col("first_split").is_null())
            .then(pl.lit(""))
            .otherwise(pl.format(" (in {})", pl.col("first_split"))),
        ),
        details=json_struct(
            pl.col("first_row").alias("duplicate_of_row"),
            pl.col("first_split"),
            data.file_of().alias("file"),
        ),
    )


def published_columns(data: TableView, ctx: AuditContext) -> list[str]:
    """The columns a duplicate row repeats: every published column but the split (a copy in
    another split is a leak) and, when the declaration names an input (``--text``/``--key``),
    the id: a copy under a new id is still a copy. Without a declared input nothing says the id
    is not the content itself (a clip id, a URL), so it counts. With ``--schema``, the columns
    the model does not declare are published as read and count too: two rows differing only
    there are two records."""
    opts = ctx.options
    skip = {opts.split, *([opts.id] if opts.key_columns() else [])}
    return [c for c in data.published_names() if c not in skip]


@RULES.table("copies")
def exact_copies(ctx: AuditContext) -> pl.DataFrame:
    """Valid rows equal to an earlier row of their split in every published column but the
    id (``row``, ``record``, ``split``, ``first_row``, ``first_record``): TB402's findings,
    and what TB403 leaves to it.

    Candidates first, the copies then found on the values themselves (a hash collision is
    never a finding): with a declared input, the rows whose key hash repeats within their
    split (equal rows have equal keys; ``key_hashes`` is built for the other rules anyway)
    and those without a key; else the rows whose whole-row hash repeats."""
    data = ctx.data
    cols = published_columns(data, ctx)
    if not cols:
        return columns(data, cols).head(0).with_columns(pl.lit(0).alias("first_row"))
    if ctx.options.key_columns():
        keyed = ctx.table("key_hashes")
        # valid rows without a key (a copy: scatter writes in place)
        keyless = data.rows["valid"].clone().scatter(keyed["row"], False)
        maybe = pl.concat(
            [repeated(keyed, "h", "split")["row"], keyless.arg_true().cast(pl.Int64)]
        ).sort()
        table = at(data, maybe, cols)
    else:
        table = columns(data, cols)
        whole = pl.struct([pl.col(value(c)) for c in cols]).hash()
        table = table.filter(repeats(table.select(whole ^ pl.col("split").hash(7)).to_series()))
    hits = later_copies(
        table.select("row", "record", "split", "input", *map(value, cols)),
        [*map(value, cols), "split"],
    )
    return name_firsts(hits.select("row", "record", "split", "input", "first_row"), table)


@RULES.rule(
    "TB402",
    "duplicate-row",
    category="duplicate",
    severity="warning",
    fix="always",
    needs=("copies",),
)
def duplicate_row(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A row repeats an earlier row of its split in every column (the id aside when an input
    is declared).

    A repeated example weighs double in training and counts twice in a score (Deepchecks'
    DataDuplicates). Each later copy is reported with the first row it repeats; a copy in
    another split is a leak (TB405), not a duplicate. The ``--id`` column is left out of the
    comparison when ``--text`` or ``--key`` says what the example is (a review scraped twice
    gets two ids); without them the id may be the content itself (a clip id), so it counts.

    Fix (safe: nothing is lost, the first row stays): drop the later copy; the changelog keeps
    it whole."""
    hits = ctx.table("copies")
    return finding_frame(
        hits,
        field=pl.lit(""),
        message=pl.format(
            "repeats row {} (record {}){}, every column equal",
            "first_row",
            "first_record",
            _where(),
        ),
        details=json_struct(
            pl.col("first_record").alias("duplicate_of"),
            pl.col("first_row").alias("duplicate_of_row"),
            data.file_of().alias("file"),
        ),
        fix=json_struct(pl.lit("drop").alias("op"), pl.col("first_row").alias("copy_of")),
    )


@RULES.rule(
    "TB403",
    "duplicate-input",
    category="duplicate",
    severity="warning",
    fix="sometimes",
    some_unsafe=True,
    needs=("key_hashes", "candidates", "copies"),
)
def duplicate_input(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A row's input (``--key``, else ``--text``) is an earlier row's of its split once both
    are normalised (``--normalise``: Unicode NFKC, case, punctuation, white space — Deepchecks'
    defaults), while the rows differ elsewhere.

    "What is the capital of France?" and "what is the capital of france" are one example to a
    model: kept twice, it weighs double. Rows equal in every column are TB402's; rows whose
    labels differ are also a conflict (TB301). Fix: drop the later row — safe where it agrees
    with the first in every column but the input and the id (only the input's spelling is
    lost), unsafe where other columns differ (named in the message; the drop chooses between
    two versions, so only with ``--unsafe-fixes``); where labels differ there is no fix here,
    TB301 decides the label first."""
    opts = ctx.options
    keys = key_names(len(opts.key_columns()))
    table = ctx.table("candidates").filter("repeated_in_split")
    hits = later_copies(table, [*keys, "split"])
    exact = ctx.table("copies").select("row")
    hits = hits.join(exact, on="row", how="anti")
    if hits.is_empty():
        return empty_rule_output()
    labels = opts.label
    other = [c for c in published_columns(data, ctx) if c not in (*opts.key_columns(), *labels)]
    cmp = [*labels, *other]
    vals = columns(data, cmp, valid=False).select("row", *map(value, cmp))
    hits = name_firsts(hits, table)
    hits = pl.concat([hits, vals[hits["row"]].drop("row")], how="horizontal")
    first = vals[hits["first_row"]].drop("row").rename({value(c): f"f:{c}" for c in cmp})
    hits = pl.concat([hits, first], how="horizontal")

    def differing(names: list[str]) -> pl.Expr:
        if not names:
            return pl.lit([], pl.List(pl.String))
        return pl.concat_list(
            [pl.when(pl.col(value(c)).ne_missing(pl.col(f"f:{c}"))).then(pl.lit(c)) for c in names]
        ).list.drop_nulls()

    hits = hits.with_columns(
        (differing(labels).list.len() == 0).alias("__same"),
        differing(other).alias("__differs"),
    )
    shown = ",".join(opts.key_columns())
    same = pl.format(
        "same {} as row {} (record {}){}{}",
        pl.lit(shown),
        "first_row",
        "first_record",
        _where(),
        # with --normalise none the inputs are equal as written (and then differ elsewhere)
        pl.lit(" once normalised" if opts.normalise else ""),
    )
    return finding_frame(
        hits,
        field=pl.lit(shown),
        message=pl.when(~pl.col("__same"))
        .then(pl.format("{}, another label (TB301)", same))
        .when(pl.col("__differs").list.len() > 0)
        .then(pl.format("{}, but {} differ", same, pl.col("__differs").list.join(", ")))
        .otherwise(same),
        details=json_struct(
            pl.col("first_record").alias("duplicate_of"),
            pl.col("first_row").alias("duplicate_of_row"),
            pl.col("__differs").alias("differs"),
            pl.lit(",".join(opts.normalise) or "none").alias("normalised"),
        ),
        fix=pl.when(pl.col("__same") & (pl.col("__differs").list.len() == 0))
        .then(json_struct(pl.lit("drop").alias("op"), pl.col("first_row").alias("copy_of")))
        .when(pl.col("__same"))
        .then(
            json_struct(
                pl.lit("drop").alias("op"),
                pl.col("first_row").alias("copy_of"),
                pl.lit(True).alias("unsafe"),
            )
        ),
    )


def _units(data: TableView, ctx: AuditContext) -> tuple[str, pl.DataFrame]:
    """What must not cross splits, per valid row: ``row, record, split, unit`` — the
    ``--group`` value when declared, else the key in its normal form (as one string)."""
    opts = ctx.options
    if opts.group:
        frame = columns(data, [opts.group])
        unit = as_text(frame[value(opts.group)]).cast(pl.String).alias("unit")
        frame = frame.select("row", "record", "split").with_columns(unit)
        return opts.group, frame.filter(pl.col("unit").is_not_null())
    # every row's key as its hash (what the regrouping groups by: a collision only moves two
    # keys together); the leak findings are verified on the folded keys (split_leakage)
    table = ctx.table("key_hashes")
    return ",".join(opts.key_columns()), table.select(
        "row", "record", "split", pl.col("h").alias("unit"), "repeated"
    )


@RULES.table("units")
def units_table(ctx: AuditContext) -> tuple[str, pl.DataFrame]:
    """What must not cross splits (see :func:`_units`)."""
    return _units(ctx.data, ctx)


@RULES.rule(
    "TB405",
    "split-leakage",
    category="leakage",
    severity="error",
    fix="always",
    unsafe=True,
    needs=("units", "candidates"),
)
def split_leakage(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A validation or test row shares its ``--group`` (else its normalised input, ``--key`` or
    ``--text``) with a row of an earlier split (train < validation < test).

    The score then counts memorisation as generalisation (Deepchecks' TrainTestSamplesMix; a
    patient or a source document in both splits). Each row of a later split is reported with
    the first row of its group in the earliest split. A row whose split cell is empty is in
    train (where ``fix`` and ``export`` publish it); a table without splits, or a split outside
    the order (TB004), takes no part.

    Fix (unsafe: it changes what is evaluated, so only with ``--unsafe-fixes``): regroup the
    splits by group, seeded (``--seed``): every row of a leaking group moves into one split,
    the one furthest below its share of the table (shares as they are now), groups taken in a
    seeded random order; a group already in one split stays. The training rows of a group sent
    to test move with it (they are no findings: the edit names them)."""
    name, units = ctx.table("units")
    candidates = units.filter("repeated") if "repeated" in units.columns else None
    if candidates is None:
        candidates = repeated(units, "unit")
    if not ctx.options.group:  # compare the folded keys themselves, not their hashes
        keys = key_names(len(ctx.options.key_columns()))
        folded = ctx.table("candidates")
        candidates = candidates.drop("unit").join(
            folded.select(
                "row",
                pl.concat_str([pl.col(k).cast(pl.String) for k in keys], separator="\x1f").alias(
                    "text"
                ),
            ),
            on="row",
        )
        hits = cross_split_copies(candidates, "text")
        hits = hits.drop("text").join(units.select("row", "unit"), on="row")
    else:
        hits = cross_split_copies(candidates, "unit")
    if hits.is_empty():
        return empty_rule_output()
    hits = name_firsts(hits, units)
    fixes = _regroup_edits(hits, units, ctx.options.seed, name)
    hits = hits.with_columns(pl.Series("fix", fixes, dtype=pl.String))
    return finding_frame(
        hits,
        field=pl.lit(name),
        message=pl.format(
            "{} row has the same {} as row {} (record {}) in {}",
            "split",
            pl.lit(name),
            "first_row",
            "first_record",
            "first_split",
        ),
        details=json_struct(
            pl.col("split"),
            pl.col("first_split"),
            pl.col("first_record").alias("duplicate_of"),
            pl.col("first_row").alias("duplicate_of_row"),
        ),
        fix=pl.col("fix"),
    )


def _regroup_edits(
    hits: pl.DataFrame, units: pl.DataFrame, seed: int, name: str
) -> list[str | None]:
    """Each finding's ``move`` edit (:func:`~curate.audits.shared.resplit.move_edits`) to its
    group's target split (:func:`~curate.audits.shared.resplit.regroup_split`)."""
    # a unit of one row with a split stays where it is: only counted, never grouped (10 M
    # keys, a few repeated)
    alone = (
        ~(units["repeated"] if "repeated" in units.columns else repeats(units["unit"].hash()))
        & units["split"].is_not_null()
    )
    settled = dict(units.filter(alone).group_by("split").len().iter_rows())
    loose = units.filter(~alone)
    target = regroup_split(loose["unit"], loose["split"], seed=seed, settled=settled)
    placed = loose.select("row", "unit", "split").with_columns(target.alias("target"))
    return move_edits(hits, placed, f"re-split grouped by {name} (seed {seed})")
