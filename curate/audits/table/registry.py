"""The ``table`` family's rule set and the shared tables its rules read.

Every rule reads the declaration (:class:`~curate.schemas.table.TableOptions`, the audit's
options) at run time: which columns are the id, labels, inputs, key, group and split. A rule
whose input the declaration does not give (no ``--label``: no label rule) needs a shared table
the options call unavailable, so the engine does not run it and the report's ``rules_run``
says so, instead of a clean bill for a check that never ran.

Shared tables: ``key_hashes`` (each valid row's key in its normal form, as a hash: the
``--key`` columns, else the ``--text`` columns, text folded as ``--normalise`` says; the exact
rules verify the repeated ones on the text, :func:`exact_keys`), ``copies`` (exact copies),
``units`` (what must not cross splits), ``labels`` (the declared label columns of the valid
rows), ``near`` (near-duplicate input pairs, MinHash), ``ids``.

Column names: a rule's frame holds the bookkeeping (``row``, ``record``, ``split``, ``input``,
``valid``) and each value column under ``v:<name>`` (:func:`columns`), so that a user's column
called ``row`` or ``split`` never shadows the bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

import polars as pl

from curate.core.findings import InputInfo
from curate.core.rules import AuditContext, RuleSet
from curate.schemas.table import TableOptions, fold

__all__ = [
    "RULES",
    "at",
    "columns",
    "exact_keys",
    "key_names",
    "repeated",
    "repeats",
    "value",
]

RULES = RuleSet("table")


class TableView(Protocol):
    """What the table rules read of a loaded table: the frames of
    :class:`~curate.audits.shared.records.RecordsData` and the columns typed from text, which
    :class:`~curate.families.table.TableData` adds. A protocol because that class lives in the
    families layer, above the rules, which must not import it."""

    rows: pl.DataFrame
    values: pl.DataFrame
    raw: pl.DataFrame
    inputs: list[InputInfo]
    schema_findings: pl.DataFrame
    inferred: frozenset[str]

    def file_of(self) -> pl.Expr: ...

    def published_names(self) -> list[str]: ...

    def column(self, name: str) -> pl.Series: ...


T = TypeVar("T")


def value(name: str) -> str:
    """The name of a value column in a rule's frame."""
    return f"v:{name}"


def key_names(n: int) -> list[str]:
    """The key columns of the ``keys`` table (``k0``, ``k1``, ...)."""
    return [f"k{i}" for i in range(n)]


def columns(data: TableView, names: Sequence[str], *, valid: bool = True) -> pl.DataFrame:
    """The bookkeeping with the value columns ``names`` beside it (as :func:`value` names
    them); only the valid rows unless ``valid=False``."""
    frame = pl.concat([data.rows, _values(data, names)], how="horizontal")
    return frame.filter(pl.col("valid")) if valid else frame


def _values(data: TableView, names: Sequence[str]) -> pl.DataFrame:
    """The columns ``names`` (of :meth:`TableView.published_names`) under their value names."""
    if not names:
        return data.values.select([])
    return pl.DataFrame([data.column(n).alias(value(n)) for n in names])


def at(data: TableView, rows: pl.Series | pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """:func:`columns` of the rows ``rows`` only (a ``row`` column or series), in that order.

    A gather by position, never a join: a table's ``row`` is its position across the inputs
    (``0 .. N-1``, see :class:`~curate.families.table.TableData`), so the few candidates of an
    exact rule cost their own number of rows, not a hash join against 10 M."""
    index = rows["row"] if isinstance(rows, pl.DataFrame) else rows
    return pl.concat([data.rows[index], _values(data, names)[index]], how="horizontal")


def repeats(hashes: pl.Series) -> pl.Series:
    """Whether each 64-bit hash occurs more than once: one sort and a neighbour compare, then
    a membership test against the few repeated values (0.3 s for 10 M, where
    ``is_duplicated``'s hash table takes 1.1-1.2 s)."""
    ordered = hashes.sort()
    twice = ordered.filter(ordered == ordered.shift(1)).unique()
    return hashes.is_in(twice.implode()).fill_null(False)


def _blank(expr: pl.Expr) -> pl.Expr:
    return expr.is_null() | (expr.cast(pl.String).str.strip_chars() == "")


def as_text(column: pl.Series) -> pl.Series:
    """A nested key column as text, so that it is folded like text: a list's items joined by
    spaces (a tokenised input, ``["Hello", "world"]``, is the sentence ``Hello world``), a
    struct as its JSON; other columns as they are."""
    if isinstance(column.dtype, pl.List | pl.Array):
        items = column.to_frame("c").select(
            pl.col("c").cast(pl.List(pl.String)) if isinstance(column.dtype, pl.Array) else "c"
        )["c"]
        return items.list.eval(pl.element().cast(pl.String)).list.join(" ").alias(column.name)
    if isinstance(column.dtype, pl.Struct):
        return column.struct.json_encode().alias(column.name)
    return column


def _folded(data: TableView, opts: TableOptions, rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """``row`` and ``k0..kn``: the key columns of the valid rows (of ``rows`` only, when
    given) in their normal form (text columns folded by ``--normalise``, others as they
    are), with a row whose key has an empty column left out."""
    cols = opts.key_columns()
    frame = columns(data, cols) if rows is None else at(data, rows, cols).filter("valid")
    parts = opts.normalise
    out = [frame["row"]]
    for n, c in zip(key_names(len(cols)), cols, strict=True):
        s = as_text(frame[value(c)])
        out.append((fold_sliced(s, parts) if s.dtype == pl.String and parts else s).alias(n))
    keyed = pl.DataFrame(out)
    blank = pl.any_horizontal([_blank(pl.col(n)) for n in key_names(len(cols))])
    return keyed.filter(~blank)


#: Rows sampled to judge how often a column's cells repeat (see :func:`fold_hash`).
_SAMPLE = 100_000
#: Fewest cells worth a slice of their own (below it a thread costs more than it saves).
_SLICE = 50_000


def _sliced(column: pl.Series, work: Callable[[pl.Series], T]) -> list[T]:
    """``work`` on slices of ``column``, one thread each: polars releases the GIL, and one
    string expression on one column runs on one core."""
    from concurrent.futures import ThreadPoolExecutor

    from curate.core.engine import available_cores

    n = column.len()
    workers = available_cores()
    # a few slices per core: fewer leaves a core idle behind a slow slice, many more costs
    # each slice its fixed overhead (measured on 10 M captions: 8 slices on 2 cores best)
    size = max(_SLICE, -(-n // (4 * workers)))
    slices = [column.slice(a, size) for a in range(0, n, size)] or [column]
    if workers == 1 or len(slices) == 1:
        return [work(p) for p in slices]
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(work, slices))


def fold_sliced(column: pl.Series, parts: list[str]) -> pl.Series:
    """:func:`~curate.schemas.table.fold` of ``column``, slices folded in parallel."""
    return pl.concat(_sliced(column, lambda part: fold(part, parts)))


def _fold_hash(column: pl.Series, parts: list[str], seed: int) -> pl.DataFrame:
    """``h`` (the folded cell's hash) and ``blank`` (folded to nothing) per cell, slices
    folded in parallel (the folded texts never held whole)."""

    def one(part: pl.Series) -> pl.DataFrame:
        folded = fold(part, parts)
        return pl.DataFrame({"h": folded.hash(seed), "blank": folded.is_null() | (folded == "")})

    return pl.concat(_sliced(column, one))


def fold_hash(column: pl.Series, parts: list[str], seed: int) -> pl.DataFrame:
    """``h`` and ``blank`` per cell of ``column`` in its normal form (see
    :func:`key_hashes_table`). A column whose cells repeat (a QA set's contexts, an NLI set's
    premises: judged on a sample) is folded once per distinct cell and joined back."""
    column = as_text(column)
    if column.dtype != pl.String:
        blank = column.is_null()
        return pl.DataFrame({"h": column.hash(seed), "blank": blank})
    if not parts:
        return pl.DataFrame(
            {"h": column.hash(seed), "blank": column.is_null() | (column.str.strip_chars() == "")}
        )
    sample = column.head(_SAMPLE)
    if column.len() > _SAMPLE and sample.n_unique() < sample.len() // 2:
        distinct = column.unique()
        folded = _fold_hash(distinct, parts, seed).with_columns(distinct.alias("v"))
        joined = column.to_frame("v").join(folded, on="v", how="left", maintain_order="left")
        return joined.select("h", pl.col("blank").fill_null(True))
    return _fold_hash(column, parts, seed).with_columns(pl.col("blank").fill_null(True))


def _cost(column: pl.Series) -> float:
    """What folding ``column`` costs per row, judged on a sample: the bytes a fold reads (a
    column folded once per distinct cell, see :func:`fold_hash`, reads its distinct share);
    nothing for a column that is hashed as it is."""
    if column.dtype != pl.String:
        return 0.0
    sample = column.head(_SAMPLE)
    mean = sample.str.len_bytes().mean()  # None for an empty sample
    mean = float(mean) if isinstance(mean, int | float) else 0.0
    share = sample.n_unique() / max(sample.len(), 1)
    return mean * (share if column.len() > _SAMPLE and share < 0.5 else 1.0)


def blank_cells(column: pl.Series, parts: list[str]) -> pl.Series:
    """Whether each cell of ``column`` is empty in its normal form, without folding every
    cell: a cell with a letter or a number keeps it through every part of the fold (NFKC maps
    a letter or a number to letters, numbers and marks; case, punctuation and white space leave
    them; tests/test_table_family.py checks every code point), so only the cells without one
    are folded to judge."""
    if column.dtype != pl.String:
        return column.is_null()
    if not parts:
        return column.is_null() | (column.str.strip_chars() == "").fill_null(True)
    unsure = ~column.str.contains(r"[\p{L}\p{N}]").fill_null(False)
    if not unsure.any():
        return unsure
    at = unsure.arg_true()
    folded = fold(column.gather(at), parts)
    return unsure.scatter(at, (folded.is_null() | (folded == "")).fill_null(True))


@RULES.table("key_hashes")
def key_hashes_table(ctx: AuditContext) -> pl.DataFrame:
    """``row, record, split, h, repeated, repeated_in_split``: each valid row with a key (a
    row with an empty key column left out), a 64-bit hash of its key in its normal form, and
    whether that key occurs again (in the table; in the row's split).

    Why a hash: the exact rules (duplicates, conflicts, leakage) group 10 M rows; grouping
    one integer is ~10x faster than grouping two long texts, and holding the folded texts of
    every row would double the table's memory. Equal keys have equal hashes, so the rows whose
    hash repeats are the only candidates; :func:`exact_keys` folds just those again and the
    rules group them on the text itself, so a hash collision never makes a finding.

    Why column by column: a key repeats only where each of its columns repeats, so the
    cheapest column (:func:`_cost`) is folded for every row and each next one only for the
    rows whose key so far repeats (on a QA table with 64-character questions and 157-character
    contexts, 6 % of the rows: the contexts' fold, two thirds of the work, shrinks to 1/16).
    So ``h`` is the whole key's hash where the key repeats; a row dropped earlier keeps the
    hash of its key's first columns, which no other row shares."""
    cols = ctx.options.key_columns()
    parts = ctx.options.normalise
    frame = columns(ctx.data, cols)
    texts = [as_text(frame[value(c)]) for c in cols]
    order = sorted(range(len(cols)), key=lambda i: _cost(texts[i]))
    first = fold_hash(texts[order[0]], parts, order[0])
    blank = first["blank"]
    for i in order[1:]:
        blank = blank | blank_cells(texts[i], parts)
    # ``alive``: positions (in ``frame``) whose key so far repeats; ``h``: their hash so far
    h_all = first["h"]
    alive = (~blank).arg_true()
    h = h_all.gather(alive)
    for i in order[1:]:
        again = repeats(h)
        alive, h = alive.filter(again), h.filter(again)
        got = fold_hash(texts[i].gather(alive), parts, i)["h"]
        h = (
            pl.DataFrame([h.alias("a"), got.alias("b")])
            .select(pl.struct("a", "b").hash())
            .to_series()
        )
        h_all = h_all.scatter(alive, h)
    # which keys repeat, anywhere and within a split: every exact rule starts from these
    split = frame["split"].gather(alive)
    in_split = (h ^ split.hash(7)).alias("h")

    def flags(at: pl.Series) -> pl.Series:
        return pl.repeat(False, frame.height, eager=True).scatter(alive, at)

    keyed = frame.select("row", "record", "split").with_columns(
        h_all.alias("h"),
        flags(repeats(h)).alias("repeated"),
        flags(repeats(in_split)).alias("repeated_in_split"),
    )
    return keyed.filter(~blank)


def exact_keys(ctx: AuditContext, rows: pl.DataFrame) -> pl.DataFrame:
    """``rows`` (with ``row``) and ``k0..kn``, their keys folded again (see
    :func:`key_hashes_table`); rows without a key dropped."""
    rows = rows.sort("row")
    return rows.join(_folded(ctx.data, ctx.options, rows), on="row", maintain_order="left")


@RULES.table("candidates")
def candidates_table(ctx: AuditContext) -> pl.DataFrame:
    """The rows whose key hash repeats, their keys folded again (``row, record, split, h,
    repeated_in_split, k0..kn``): what TB301, TB403 and TB405 verify on the text itself,
    folded once for the three."""
    keyed = ctx.table("key_hashes").filter("repeated").drop("repeated")
    return exact_keys(ctx, keyed)


def repeated(frame: pl.DataFrame, *by: str) -> pl.DataFrame:
    """The rows of ``frame`` whose ``by`` values occur more than once: the candidates. The
    key hashes say it already (``repeated``, ``repeated_in_split``)."""
    if by == ("h",) and "repeated" in frame.columns:
        return frame.filter("repeated")
    if by == ("h", "split") and "repeated_in_split" in frame.columns:
        return frame.filter("repeated_in_split")
    return frame.filter(
        pl.struct(*by).is_duplicated() if len(by) > 1 else pl.col(by[0]).is_duplicated()
    )


@RULES.table("labels")
def labels_table(ctx: AuditContext) -> pl.DataFrame:
    """``row, record, split`` and each declared label column (``v:<label>``) of the valid
    rows."""
    return columns(ctx.data, ctx.options.label)


@RULES.table("ids")
def ids_table(ctx: AuditContext) -> pl.DataFrame:
    """``row, record, split, v:<id>`` of every row (invalid ones too: an id is taken whether
    or not its row is well-formed)."""
    return columns(ctx.data, [ctx.options.id], valid=False)
