"""TB003, TB004 and TB1xx: what a column as a whole says — cells of mixed kinds, splits outside
train/validation/test, a single value, an id that predicts the label.

These rules judge a column, not a cell: each reports at most one finding per column (TB003,
TB101), per split (TB004) or per label column (TB102). TB101 and TB102 name no row (``row``
null; ``record`` names the column, as glycan's column findings do): the column is the defect.
TB003 points at the first cell of the rarer kind, TB004 at the split's first row, where a
person would look first.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from curate.audits.table.registry import RULES, TableView, value
from curate.core.errors import quoted
from curate.core.findings import dumps, empty_rule_output, rule_output
from curate.core.keys import SPLIT_ORDER
from curate.core.rules import AuditContext

__all__ = [
    "KINDS",
    "LEAK_KAPPA",
    "LEAK_Z",
    "id_order_key",
    "id_pattern",
    "identifier_label_correlation",
    "kind_of",
    "label_text",
    "mixed_types",
    "single_value_column",
    "unknown_split",
]

#: The kinds TB003 tells apart, in the order a tie for the commonest kind is broken in, and
#: how a message counts them. A number is anything a number parser reads (``007``, ``1e-3``,
#: ``nan``: unlike the typing, which keeps ``007`` as text so that it is published as written,
#: a zip code column is numbers here, of one kind).
KINDS: dict[str, tuple[str, str]] = {
    "number": ("number", "numbers"),
    "boolean": ("boolean", "booleans"),
    "text": ("text", "text"),
}

_NUMBER = r"(?i)^[+-]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)([e][+-]?[0-9]+)?|inf|infinity|nan)$"


def kind_of(cell: pl.Expr) -> pl.Expr:
    """A cell's kind (:data:`KINDS`) from its text, white space at its ends aside; null for an
    empty cell (it has no kind: TB002 reports it where the column is declared)."""
    t = cell.str.strip_chars()
    return (
        pl.when(t.is_null() | (t == ""))
        .then(pl.lit(None, pl.String))
        .when(t.str.contains(_NUMBER))
        .then(pl.lit("number"))
        .when(t.str.to_lowercase().is_in(["true", "false"]))
        .then(pl.lit("boolean"))
        .otherwise(pl.lit("text"))
    )


def _a(kind: str) -> str:
    return kind if kind == "text" else f"a {KINDS[kind][0]}"


def _column(name: str) -> str:
    """The ``record`` of a finding about a whole column (it names no row)."""
    return f"column {quoted(name)}"


def _file(data: TableView) -> str | None:
    """``details.file`` of a finding about a whole column: the input, when there is one."""
    return data.inputs[0].path if len(data.inputs) == 1 else None


def _raw(data: TableView, names: list[str]) -> pl.DataFrame:
    """The valid rows' bookkeeping and the columns ``names`` as read (``v:<name>``)."""
    frame = pl.concat(
        [data.rows, data.raw.select([pl.col(n).alias(value(n)) for n in names])],
        how="horizontal",
    )
    return frame.filter(pl.col("valid"))


def _plain(v: Any) -> Any:
    """A value as the details' JSON holds it: JSON's own types as they are, others as text."""
    if v is None or isinstance(v, str | bool | int | float | list | dict):
        return v
    return str(v)


# ----------------------------------------------------------------- TB003


@RULES.rule("TB003", "mixed-types", category="schema", severity="warning")
def mixed_types(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A column of a text file (CSV, TSV, JSON) holds cells of two or more kinds — numbers,
    booleans (``true``/``false``), text — and the rarer kinds are at most ``--mixed-share``
    (10% by default) of its non-empty cells (Deepchecks' MixedDataTypes).

    A column of numbers with a few ``n/a``, ``unknown`` or ``1,5`` cells is read as text, so
    every number in it is published as a string, and the rare cells are most often
    missing-value markers, typos or a unit left in. A column that is half numbers and half
    words is a text column and is not reported. One finding per column, on the first cell of a
    rarer kind, with how many cells are of each kind; the details hold the counts. Columns a
    file types itself (parquet, Arrow, an in-memory frame, a JSON column of strings only) have
    one type and are not checked; nor are the rows TB001 refused. No fix: whether
    ``n/a`` means missing or ``1,5`` means 1.5 is the data owner's call."""
    share = ctx.options.mixed_share
    names = [c for c in data.raw.columns if c in data.inferred and data.raw.schema[c] == pl.String]
    if not names:
        return empty_rule_output()
    frame = _raw(data, names)
    out = []
    for name in names:
        cells = frame.select("row", "record", "input", pl.col(value(name)).alias("cell"))
        cells = cells.with_columns(kind_of(pl.col("cell")).alias("kind")).drop_nulls("kind")
        counts = dict(cells.group_by("kind").len().iter_rows())
        if len(counts) < 2:
            continue
        total = sum(counts.values())
        dominant = max(KINDS, key=lambda k: (counts.get(k, 0), -list(KINDS).index(k)))
        rare = total - counts[dominant]
        if rare > share * total:
            continue
        first = cells.filter(pl.col("kind") != dominant).row(0, named=True)
        ordered = {k: counts[k] for k in KINDS if k in counts}
        others = ", ".join(
            f"{n:,} {KINDS[k][1] if n != 1 else KINDS[k][0]}"
            for k, n in ordered.items()
            if k != dominant
        )
        tail = "" if dominant == "text" else f", so its {KINDS[dominant][1]} are read as text"
        out.append(
            {
                "row": first["row"],
                "record": first["record"],
                "field": name,
                "message": (
                    f"column {quoted(name)} is mostly {KINDS[dominant][1]} "
                    f"({counts[dominant]:,}) but has {others}; this row's "
                    f"{quoted(first['cell'])} is {_a(first['kind'])}{tail}"
                ),
                "details": {
                    "kinds": ordered,
                    "dominant": dominant,
                    "value": first["cell"],
                    "kind": first["kind"],
                    "file": data.inputs[first["input"]].path,
                },
            }
        )
    return rule_output(out)


# ----------------------------------------------------------------- TB004


@RULES.rule("TB004", "unknown-split", category="schema", severity="warning")
def unknown_split(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """Rows are in a split that is none of train, validation and test, once ``--split-map``
    and the usual spellings (``dev``, ``val``, ``testing``...) have been applied: ``eval``,
    ``heldout``, ``extra``.

    Split leakage is judged in the splits' order, train < validation < test, and a split
    outside it has no place in that order: its rows take no part in TB405 and TB406, so a copy
    of a training row in ``eval`` went unreported without a word. Whether ``eval`` is a
    validation or a test split only the dataset's authors know; say it with ``--split-map
    eval=test`` (or name the file or folder after its split). The rows are otherwise audited
    as any (TB202 counts them as evaluation rows) and published in their own split. One finding
    per such split, on its first row, with its number of rows. No fix."""
    rows = data.rows.filter(pl.col("split").is_not_null() & ~pl.col("split").is_in(SPLIT_ORDER))
    if rows.is_empty():
        return empty_rule_output()
    column = ctx.options.split
    firsts = (
        rows.group_by("split")
        .agg(pl.col("row").min().alias("first"), pl.len().alias("rows"))
        .sort("first")
    )
    out = []
    written = column is not None and column in data.raw.columns
    for split, first, n in firsts.iter_rows():
        row = rows.filter(pl.col("row") == first).row(0, named=True)
        # the value as the file spells it (what --split-map matches), not as mapped: a
        # --split-map eval=holdout made "holdout", and holdout=test would match nothing
        value = str(data.raw[column][first]).strip().lower() if written else split.lower()
        how = (
            f"say which with --split-map {value}=validation (or =test)"
            if column
            else "name its file or folder after the split it is"
        )
        out.append(
            {
                "row": first,
                "record": row["record"],
                "field": column or "split",
                "message": (
                    f"split {quoted(split)} ({n:,} {'row' if n == 1 else 'rows'}) is not train, "
                    f"validation or test: split leakage checks (TB405, TB406) leave its rows "
                    f"out; {how}"
                ),
                "details": {
                    "split": split,
                    "rows": n,
                    "known": list(SPLIT_ORDER),
                    "file": data.inputs[row["input"]].path,
                },
            }
        )
    return rule_output(out)


# ----------------------------------------------------------------- TB101


@RULES.rule("TB101", "single-value-column", category="integrity", severity="warning")
def single_value_column(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A column holds one value in every valid row that has one, or no value at all
    (Deepchecks' IsSingleValue, empty cells ignored).

    A constant column tells no row from another, so a model learns nothing from it; it is a
    leftover of a filter (``language`` = ``en`` after keeping the English rows), an export
    default, or a column that was never filled. Any column of the table is checked, declared
    or not, except the ``--split`` column (one split is a table without splits, not a
    defect); a float column's NaN counts as empty. One finding per column, naming no row,
    with the value and how many rows have it; a column with no value at all is reported as
    such. A table with fewer than two valid rows is not checked (one row has one value in
    every column). No fix: drop the column, or keep it as documentation, by hand."""
    skip = {ctx.options.split}
    names = [c for c in data.raw.columns if c not in skip]
    frame = _raw(data, names)
    if frame.height < 2 or not names:
        return empty_rule_output()
    file = _file(data)
    out = []
    for name in names:
        col = frame.get_column(value(name))
        if col.dtype.is_float():
            col = col.fill_nan(None)
        present = col.drop_nulls()
        empty = frame.height - present.len()
        if present.len() == 0:
            out.append(
                {
                    "row": None,
                    "record": _column(name),
                    "field": name,
                    "message": f"column {quoted(name)} has no value at all ({frame.height:,} "
                    "rows, every one empty)",
                    "details": {"value": None, "rows": 0, "empty": empty, "file": file},
                }
            )
            continue
        if _distinct(present) != 1:
            continue
        v = present[0]
        where = (
            f"every one of its {present.len():,} rows"
            if empty == 0
            else f"all {present.len():,} rows that have one ({empty:,} empty)"
        )
        out.append(
            {
                "row": None,
                "record": _column(name),
                "field": name,
                "message": f"column {quoted(name)} has one value, {quoted(v)}, in {where}",
                "details": {
                    "value": _plain(v),
                    "rows": present.len(),
                    "empty": empty,
                    "file": file,
                },
            }
        )
    return rule_output(out)


def _distinct(s: pl.Series) -> int:
    """How many distinct values ``s`` holds (nested values compared as their JSON text when
    polars cannot hash them)."""
    try:
        return s.n_unique()
    except pl.exceptions.InvalidOperationError:  # pragma: no cover - types polars cannot hash
        return pl.Series([repr(v) for v in s.to_list()]).n_unique()


# ----------------------------------------------------------------- TB102

#: TB102 reports an id whose association with the label reaches this strength: Cohen's kappa
#: of the id-order predictor, or the reduction of error of the id-pattern predictor. 0.2 is
#: Deepchecks' default bound on IdentifierLabelCorrelation's predictive power score; measured on
#: real tables, an id that carries no label information scores within ±0.02 of 0 (MusicCaps'
#: YouTube ids against is_audioset_eval, author_id) and glycowork's row numbers, taken from a
#: table sorted by species, 0.73-0.85 against every taxonomic rank.
LEAK_KAPPA = 0.2
#: ...and is this many standard errors above chance (normal approximation, one-sided p < 0.001):
#: on a small table a strength of 0.2 is within the reach of chance.
LEAK_Z = 3.09


def id_order_key(ids: pl.Series) -> list[pl.Expr]:
    """The sort keys of TB102's id order: a numeric id by its value; a text id in natural
    order (``g2`` before ``g10``): its letters with the digits taken out, then its first run of
    digits as a number, then the text itself."""
    if ids.dtype.is_numeric():
        return [pl.col("id")]
    text = pl.col("id").cast(pl.String)
    return [
        text.str.replace_all(r"[0-9]+", ""),
        text.str.extract(r"([0-9]+)").str.to_integer(strict=False),
        text,
    ]


def id_pattern(ids: pl.Expr) -> pl.Expr:
    """The id's pattern: its text with the digits taken out (``neg_0001`` → ``neg_``)."""
    return ids.cast(pl.String).str.replace_all(r"[0-9]+", "")


def _order_signal(d: pl.DataFrame, keys: list[pl.Expr]) -> dict[str, Any] | None:
    """Each row's label against its predecessor's in id order: agreement, kappa, z."""
    n = d.height
    if n < 3:
        return None
    y = d.sort([*keys, "y"], nulls_last=True)["y"]
    agree = int((y.head(n - 1) == y.tail(n - 1)).sum())
    p = y.value_counts()["count"].cast(pl.Float64) / n
    chance = float((p * p).sum())
    if chance >= 1:
        return None
    observed = agree / (n - 1)
    kappa = (observed - chance) / (1 - chance)
    z = (agree - (n - 1) * chance) / math.sqrt((n - 1) * chance * (1 - chance))
    return {"agreement": observed, "chance": chance, "kappa": kappa, "z": z}


def _pattern_signal(d: pl.DataFrame) -> dict[str, Any] | None:
    """Leave-one-out: each row's label predicted by the commonest label among the *other* rows
    of its id pattern (the overall commonest label for a pattern of one row), against always
    predicting the commonest label."""
    d = d.with_columns(id_pattern(pl.col("id")).alias("pattern"))
    patterns = d["pattern"].n_unique()
    if patterns < 2:
        return None
    n = d.height
    overall = d.group_by("y").len().sort(["len", "y"], descending=[True, False])
    majority, top = overall.row(0)
    base = top / n
    if base >= 1:
        return None
    cells = d.group_by("pattern", "y").len()
    best = (
        cells.sort("len", descending=True)
        .group_by("pattern")
        .agg(
            pl.col("len").first().alias("m1"),
            pl.col("y").first().alias("y1"),
            pl.col("len").get(1, null_on_oob=True).fill_null(0).alias("m2"),
            pl.col("len").sum().alias("size"),
        )
    )
    cells = cells.join(best, on="pattern")
    # the best count among the other labels of the row's pattern, and whether the row's own
    # label still wins without the row (a tie is a wrong guess)
    other = pl.when(pl.col("y") == pl.col("y1")).then("m2").otherwise("m1")
    right = (
        pl.when(pl.col("size") == 1)
        .then(pl.when(pl.col("y") == pl.lit(majority)).then(1).otherwise(0))
        .when(pl.col("len") - 1 > other)
        .then(pl.col("len"))
        .otherwise(0)
    )
    correct = int(cells.select(right.sum()).item())
    accuracy = correct / n
    return {
        "patterns": patterns,
        "accuracy": accuracy,
        "baseline": base,
        "reduction": (accuracy - base) / (1 - base),
        "z": (correct - n * base) / math.sqrt(n * base * (1 - base)),
    }


@RULES.rule(
    "TB102",
    "identifier-label-correlation",
    category="leakage",
    severity="warning",
    needs=("ids", "labels"),
)
def identifier_label_correlation(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """The ``--id`` column predicts the label (Deepchecks' IdentifierLabelCorrelation).

    An id should say which row it is and nothing else. When it predicts the label, the rows
    were numbered after being sorted or grouped by class (row numbers of a table sorted by
    species, ``neg_0001``/``pos_0001``): a model given the id, or anything that follows the
    id order (a split by id range, batches in id order), learns the class from where the row
    sits, and a random split hides it. Two predictors, each judged against chance:

    * id order: the rows sorted by id (numerically; text ids in natural order, ``g2`` before
      ``g10``), each row's label guessed as the label of the row before it. Its agreement is
      compared with chance agreement (the sum of the squared class shares) as Cohen's kappa.
    * id pattern: the id with its digits taken out (``neg_``), when there are at least two.
      Each row's label guessed as the commonest label among the other rows of its pattern
      (leave-one-out, so that an id unique to its row predicts nothing), compared with always
      guessing the commonest label as the reduction in error (Goodman and Kruskal's lambda).

    Reported when either reaches 0.2 (Deepchecks' default bound on its predictive power
    score) and is at least 3.09 standard errors above chance (one-sided p < 0.001, so that a
    small table does not reach 0.2 by luck). One finding per label column, naming no row,
    with both scores in the details. No fix: renumber the rows in a random order, or keep the
    id away from the model and the split."""
    idc = ctx.options.id
    ids = ctx.table("ids").select("row", pl.col(value(idc)).alias("id"))
    labels = ctx.table("labels")
    file = _file(data)
    out = []
    for label in ctx.options.label:
        d = (
            labels.select("row", label_text(labels, value(label)).alias("y"))
            .join(ids, on="row")
            .drop_nulls(["id", "y"])
        )
        if d.height < 3:
            continue
        order = _order_signal(d, id_order_key(d["id"]))
        pattern = _pattern_signal(d) if d["id"].dtype == pl.String else None
        hits = []
        if order and order["kappa"] >= LEAK_KAPPA and order["z"] >= LEAK_Z:
            hits.append(
                f"sorted by id, {order['agreement']:.0%} of rows have the label of the row "
                f"before them where chance gives {order['chance']:.0%} (kappa "
                f"{order['kappa']:.2f})"
            )
        if pattern and pattern["reduction"] >= LEAK_KAPPA and pattern["z"] >= LEAK_Z:
            hits.append(
                f"the id without its digits ({pattern['patterns']:,} patterns) gives the label of "
                f"{pattern['accuracy']:.0%} of rows where the commonest label gives "
                f"{pattern['baseline']:.0%} (error reduced by {pattern['reduction']:.2f})"
            )
        if not hits:
            continue
        out.append(
            {
                "row": None,
                "record": _column(idc),
                "field": label,
                "message": f"id column {quoted(idc)} predicts label {quoted(label)}: "
                + "; ".join(hits),
                "details": {
                    "id": idc,
                    "rows": d.height,
                    "order": _rounded(order),
                    "pattern": _rounded(pattern),
                    "file": file,
                },
            }
        )
    return rule_output(out)


def label_text(frame: pl.DataFrame, name: str) -> pl.Expr:
    """A label column as text (a class is compared by its spelling; lists as their JSON)."""
    if frame.schema[name].is_nested():
        return pl.col(name).map_elements(_json, return_dtype=pl.String, skip_nulls=True)
    return pl.col(name).cast(pl.String)


def _json(v: Any) -> str:
    """A nested label as JSON text (polars hands a list cell over as a Series)."""
    return dumps(v.to_list() if isinstance(v, pl.Series) else v)


def _rounded(signal: dict[str, Any] | None) -> dict[str, Any] | None:
    if signal is None:
        return None
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in signal.items()}
