"""The knowledge-editing family's normalised tables, and its records as Arrow.

A loaded MQuAKE dataset (:class:`KEData`) is three columnar tables the rules join and group over:

``cases``  one row per valid case (counts of every list, answers, questions, aliases)
``hops``   one row per (case, path ∈ {orig, new}, hop): ids, labels and the single-hop answer,
           aligned by hop index with nulls where a list is shorter than the others; rows are in
           (case, path, hop) order, which rules rely on
``edits``  one row per (case, k): ``requested_rewrite[k]`` beside ``edit_triples[k]`` and
           ``edit_triples_idx[k]``

The reader (:mod:`curate.families.knowledge_editing`) builds them; the rules
(:mod:`curate.audits.knowledge_editing`) read them. Why a module of its own beside the record
models (:mod:`curate.schemas.knowledge_editing`): those are pydantic only, these need polars and
pyarrow; both sit below the rules, so the rules never import the reader.

The record → Arrow helpers are here too because both the export (reader side) and ``fix`` (rules
side) lay records out as Arrow and must fail the same way on a value Arrow cannot hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa
from polars.datatypes import DataTypeClass

from curate.core.dataset import LoadedDataset
from curate.core.errors import InputError, UsageError, arg
from curate.core.keys import Keys
from curate.schemas.knowledge_editing import MQuAKECase

__all__ = [
    "CASE_KEYS",
    "CASE_SCHEMA",
    "CODE",
    "EDIT_SCHEMA",
    "FACT_KEYS",
    "HOP_SCHEMA",
    "PATH",
    "QUESTION_KEYS",
    "KEData",
    "arrow_type_error",
    "fact_keys",
    "huge_int",
    "normalised_question",
    "only_input",
    "question_keys",
    "records_to_arrow",
    "remastered_batch",
    "remastered_schema",
    "struct_array",
    "unify_struct_types",
    "with_record",
]

#: Entity ids, labels, answers, relation ids and prompts: each distinct string is kept once (a
#: polars categorical), a row holds a 4-byte code. Why: hop and edit rows repeat the same few
#: entities over and over, and as plain strings the ``hops`` table alone took ~3 KB per case
#: (bench/history/RESULTS-log-2026.md, "memory"). Codes compare equal exactly when the strings do,
#: and sort,
#: ``min``/``max`` and JSON encoding act on the strings, so rules read them as they read text.
CODE = pl.Categorical()

#: The family's declaration for the shared duplicate joins: two cases are the same when their
#: fact chain and their set of edits are (the ``case_keys`` table of KE401). Split-free: a
#: repeated case weighs double wherever it is.
CASE_KEYS = Keys("case", ("chain", "edit_key"), split=None)
#: Which chain a hop row belongs to (one byte).
PATH = pl.Enum(["orig", "new"])

#: A table's column types: a bare class (``pl.Int64``) or an instance (``pl.List(pl.String)``).
Schema = dict[str, pl.DataType | DataTypeClass]

CASE_SCHEMA: Schema = {
    "row": pl.Int64,
    "record": pl.String,
    "split": pl.String,
    "layout": pl.String,
    "n_rewrites": pl.Int32,
    "n_triples": pl.Int32,
    "n_triples_labeled": pl.Int32,
    "n_single_hops": pl.Int32,
    "n_new_triples": pl.Int32,
    "n_new_triples_labeled": pl.Int32,
    "n_new_single_hops": pl.Int32,
    "n_edit_triples": pl.Int32,
    "n_edit_idx": pl.Int32,
    "answer": pl.String,
    "new_answer": pl.String,
    "questions": pl.List(pl.String),
    "answer_alias": pl.List(pl.String),
    "new_answer_alias": pl.List(pl.String),
    "split_map": pl.String,  # Remastered ``split`` (edit count → labels) as JSON, else null
}
#: ``cases`` is the one table holding the case id (``record``); ``hops`` and ``edits`` name
#: their case by ``row`` (see :func:`with_record`). Left out because no rule reads them: the
#: relation labels, the single-hop alias lists (~40 % of the old ``hops`` table) and
#: ``target_true.str``; fix and export read the records themselves, not these tables.
HOP_SCHEMA: Schema = {
    "row": pl.Int64,
    "path": PATH,
    "hop": pl.Int32,
    "s": CODE,
    "r": CODE,
    "o": CODE,
    "s_label": CODE,
    "o_label": CODE,
    "sh_answer": CODE,
}
EDIT_SCHEMA: Schema = {
    "row": pl.Int64,
    "k": pl.Int32,
    "prompt": CODE,
    "subject": CODE,
    "relation_id": CODE,
    "new_id": CODE,
    "new_str": CODE,
    "true_id": CODE,
    "t_s": CODE,
    "t_r": CODE,
    "t_o": CODE,
    "idx": pl.Int64,
}


#: One row per case that carries ``curate fix`` marks: ``withheld`` lists ``case_id\x1fedit_index``.
MARK_SCHEMA: dict[str, Any] = {
    "row": pl.Int64,
    "edited": pl.Boolean,
    "withheld": pl.List(pl.String),
}


@dataclass
class KEData(LoadedDataset):
    """Validated MQuAKE cases as columnar tables (plus the records themselves when kept)."""

    cases: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=CASE_SCHEMA))
    hops: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=HOP_SCHEMA))
    edits: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=EDIT_SCHEMA))
    #: Every record's id in file order, valid or not: the population of ``random:K`` edit sets.
    all_ids: list[Any] = field(default_factory=list)
    #: row → validated case, only when loaded with ``keep_records=True`` (fix/export need them).
    records: dict[int, MQuAKECase] = field(default_factory=dict)
    #: row → raw record that failed validation (kept with ``keep_records`` for the changelog).
    invalid: dict[int, dict[str, Any]] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    #: The ``--encoding`` the inputs were read with (export reads them again).
    encoding: str | None = None
    #: What ``curate fix`` wrote into the cases (:data:`MARK_SCHEMA`): the edit set it fixed
    #: for and the edits withheld per case. Empty for data curate never fixed.
    marks: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=MARK_SCHEMA))
    #: What the export's Arrow type depends on, noted by the reader while validating (the
    #: reader's ``_Shape``; None: not known, so the export infers the type from the records).
    shape: Any = None
    #: ``record`` by ``row`` (null for an invalid record), built on first use for ``cases``.
    _records_by_row: tuple[int, pl.Series] | None = field(default=None, repr=False)

    def record_splits(self) -> pl.DataFrame | None:
        """Each case's split (``row``, ``split``), for the HTML report's split filter."""
        return self.cases.select("row", "split")

    def records_by_row(self) -> pl.Series:
        """Case ids indexed by ``row`` (rows number every input record, so this is a gather
        index): how ``hops`` and ``edits`` rows, which carry only ``row``, get their case id."""
        cached = self._records_by_row
        if cached is None or cached[0] != id(self.cases):
            rows = self.cases["row"]
            top = rows.max()  # None for no cases
            size = max(len(self.all_ids), top + 1 if isinstance(top, int) else 0)
            if rows.len() == size and rows.is_sorted():
                index = self.cases["record"]  # every record valid: rows are 0..n-1 already
            else:
                index = pl.repeat(None, size, dtype=pl.String, eager=True).alias("record")
                if rows.len():
                    index = index.scatter(rows, self.cases["record"])
            self._records_by_row = cached = (id(self.cases), index)
        return cached[1]


def with_record(data: KEData, df: pl.DataFrame) -> pl.DataFrame:
    """``df`` (rows of ``hops``/``edits``, or hits derived from them) with each row's case id as
    ``record``, and its coded columns (:data:`CODE`, :data:`PATH`) as plain strings: what a
    finding quotes. Meant for hits (few rows), after the filtering is done on codes."""
    out = df.with_columns(
        pl.col(c).cast(pl.String)
        for c, t in df.schema.items()
        if isinstance(t, pl.Categorical | pl.Enum)
    )
    if "record" in out.columns:
        return out
    record = (
        data.records_by_row().gather(out["row"])
        if out.height
        else pl.Series("record", [], pl.String)
    )
    return out.with_columns(record.alias("record"))


def struct_array(rows: list[dict[str, Any]], path: str | None = None) -> pa.StructArray | None:
    """Records → one Arrow struct array, nested fields kept as structs/lists.

    ``pa.array`` infers one struct type over *all* rows (keys missing in a row become null) and
    keeps strings as strings; pyarrow's JSON reader would turn date-like text into timestamps.
    An integer beyond 64 bits (read exactly, see :func:`curate.io.json_files._loads`) has no Arrow
    type:
    that is one exit-2 line naming the case and field (``path``: the input, when known), not a
    crash, and never a silent float.
    """
    try:
        return pa.array(rows)
    except (OverflowError, pa.ArrowException) as e:
        raise arrow_type_error(e, rows, path) from None


def records_to_arrow(rows: list[dict[str, Any]], path: str | None = None) -> pa.Table:
    """Records → one Arrow table (``fix`` lays its remastered records out with it)."""
    try:
        return pa.Table.from_struct_array(pa.array(rows))
    except (OverflowError, pa.ArrowException) as e:
        raise arrow_type_error(e, rows, path) from None


def huge_int(value: Any, where: str = "") -> tuple[str, int] | None:
    """The first integer outside the int64 range in a record, and its field path."""
    if type(value) is int:
        return (where, value) if not -(2**63) <= value < 2**63 else None
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in items:
        sub = f"{where}[{key}]" if isinstance(key, int) else f"{where}.{key}" if where else key
        if (hit := huge_int(item, sub)) is not None:
            return hit
    return None


def only_input(data: LoadedDataset) -> str | None:
    """The input's path when there is one input (error messages), else None."""
    return data.inputs[0].path if len(data.inputs) == 1 else None


def unify_struct_types(types: list[pa.DataType]) -> pa.StructType:
    """One struct type for every batch (a field null or absent in one batch takes the others').

    No batch at all (every record invalid) is an empty struct: the caller has nothing to write
    and says so with the invalid records, not with an Arrow message."""
    distinct = list(dict.fromkeys(types))
    if not distinct:
        return pa.struct([])
    if len(distinct) == 1:
        return distinct[0]
    try:
        unified = pa.unify_schemas(
            [pa.schema(list(t)) for t in distinct], promote_options="permissive"
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise arrow_type_error(e) from None
    return pa.struct(list(unified))


def arrow_type_error(
    e: Exception, rows: list[dict[str, Any]] | None = None, path: str | None = None
) -> InputError:
    """Why records cannot become one Arrow column each: an integer beyond 64 bits (parquet
    cannot store it), or a field whose valid values have several types (``case_id`` 7 here,
    "7" there: parquet needs one type per column). The export stops and says which."""
    for row in rows or []:
        if (hit := huge_int(row)) is not None:
            where, value = hit
            return InputError(
                f"integer {value} is outside the 64-bit range parquet can store "
                "(write it as a string)",
                path=path,
                record=str(row.get("case_id")),
                field=where,
            )
    mixed = _mixed_field(rows or [])
    if mixed is not None:
        key, first, record, other = mixed
        return InputError(
            f"cannot export: field {key!r} holds {first} values and, here, {other} "
            "(parquet needs one type per column; write them all one way)",
            path=path,
            record=record,
            field=key,
        )
    msg = " ".join(str(e).split())[:200]
    return InputError(
        f"cannot export: one field holds values of different types ({msg})", path=path
    )


def _mixed_field(rows: list[dict[str, Any]]) -> tuple[str, str, str, str] | None:
    """The first top-level field whose non-null values have two types, with the type it first
    had, and the first record (by ``case_id``) holding the other type."""
    seen: dict[str, str] = {}
    for row in rows:
        for key, value in row.items():
            if value is None:
                continue
            kind = type(value).__name__
            first = seen.setdefault(key, kind)
            if kind != first:
                return key, first, str(row.get("case_id")), kind
    return None


# --------------------------------------------------------------------------- Remastered layout

#: ``orig``'s lists → the MQuAKE-Remastered release's top-level columns, in the order written.
ORIG_TO_FLAT = {
    "triples": "orig_triples",
    "triples_labeled": "orig_triples_labeled",
    "new_triples": "new_triples",
    "new_triples_labeled": "new_triples_labeled",
    "edit_triples": "edit_triples",
    "edit_triples_idx": "edit_triples_idx",
}
#: The two ``orig`` lists the flat layout may leave out (the reader rebuilds them from the edits).
REBUILDABLE = frozenset({"edit_triples", "edit_triples_idx"})


def remastered_batch(
    batch: pa.RecordBatch, carried: frozenset[str] = REBUILDABLE
) -> pa.RecordBatch:
    """Original-layout cases → the same cases in MQuAKE-Remastered's flat layout, column by
    column (no per-record Python work; the types the export declared are kept).

    ``requested_rewrite[k].target_new`` ``{str, id}`` becomes ``target_new_str``/
    ``target_new_id`` (``target_true`` likewise); ``orig``'s lists become the top-level columns of
    :data:`ORIG_TO_FLAT` where ``orig`` was; every other column (``split``, ``answer_extended``,
    ``edited``, ``withheld_edits``, fields beyond the schema) stays as it is. Of
    ``edit_triples``/``edit_triples_idx`` only those in ``carried`` are written: a Remastered
    input without them keeps its columns (the reader rebuilds them the same way on reading).

    A field with no place in the flat layout (beyond ``str``/``id`` in a target, beyond the six
    lists in ``orig``, or a column whose flat name is taken) is a usage error: written in the
    original layout it would survive; dropped here it would be lost without a word.
    """
    names: list[str] = []
    arrays: list[pa.Array] = []
    for name, col in zip(batch.schema.names, batch.columns, strict=True):
        if name == "requested_rewrite":
            names.append(name)
            arrays.append(_flat_rewrites(col))
        elif name == "orig":
            for f in col.type:
                flat = ORIG_TO_FLAT.get(f.name)
                if flat is None:
                    raise _no_place(f"orig.{f.name}")
                if f.name in REBUILDABLE and f.name not in carried:
                    continue
                names.append(flat)
                arrays.append(col.field(f.name))
        else:
            names.append(name)
            arrays.append(col)
    taken = [n for n in dict.fromkeys(names) if names.count(n) > 1]
    if taken:
        raise _no_place(taken[0])
    return pa.RecordBatch.from_arrays(arrays, names=names)


def remastered_schema(schema: pa.Schema, carried: frozenset[str] = REBUILDABLE) -> pa.Schema:
    """The flat layout's schema for cases of the original-layout ``schema``."""
    return remastered_batch(_empty_batch(schema), carried).schema


def _empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([pa.array([], type=f.type) for f in schema], schema=schema)


def _flat_rewrites(col: pa.Array) -> pa.Array:
    """``list<struct<..., target_new: struct<str, id>, ...>>`` → the flat edits' list."""
    if col.null_count and col.offset:  # Arrow takes a validity bitmap only unsliced
        col = pa.concat_arrays([col])
    values = col.values  # the whole child array; the list's own offsets index into it
    names: list[str] = []
    arrays: list[pa.Array] = []
    for f in values.type:
        child = values.field(f.name)
        if f.name in ("target_new", "target_true") and pa.types.is_struct(f.type):
            for sub in f.type:
                if sub.name not in ("str", "id"):
                    raise _no_place(f"requested_rewrite[].{f.name}.{sub.name}")
                names.append(f"{f.name}_{sub.name}")
                arrays.append(child.field(sub.name))
        else:
            names.append(f.name)
            arrays.append(child)
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise _no_place(f"requested_rewrite[].{dup}")
    flat = pa.StructArray.from_arrays(
        arrays, names=names, mask=values.is_null() if values.null_count else None
    )
    return type(col).from_arrays(col.offsets, flat, mask=col.is_null() if col.null_count else None)


def _no_place(field: str) -> UsageError:
    return UsageError(
        f"{arg('--layout', 'remastered')}: field {field} has no place in the MQuAKE-Remastered "
        f"layout (it would be lost); write these cases with {arg('--layout', 'original')}"
    )


# --------------------------------------------------------------------------- text and overlap keys

_NORM = r"[^\p{L}\p{N} ]+"


def normalised_question(question: pl.Expr) -> pl.Expr:
    """A question as KE402 compares it: lower-cased, every run of characters that are neither
    letters nor digits (Unicode ``L``/``N``: spaces, punctuation, symbols) made one space, and
    no space at either end. ``"What is  the capital of France?"`` → ``"what is the capital of
    france"``."""
    # Two passes, the same result: each run of characters other than letters, digits and the
    # plain space becomes spaces, then runs of spaces become one. A run of non-letters is a run
    # of spaces after the first pass either way; the first pass now matches only punctuation
    # (a few per question, not every space between words): 2x faster over 3 M questions.
    return (
        question.str.to_lowercase()
        .str.replace_all(_NORM, " ")
        .str.replace_all("  +", " ")
        .str.strip_chars()
    )


def question_keys(data: LoadedDataset) -> pl.DataFrame:
    """``record, split, key``: one row per (case, question), the key normalised as KE402 does
    (:func:`normalised_question`, shared with ``curate overlap --key question`` so that the
    overlap and the rule agree); questions that normalise to nothing are left out."""
    assert isinstance(data, KEData)
    return (
        data.cases.select("record", "split", "questions")
        .explode("questions")
        .select(
            pl.col("record").cast(pl.String),
            pl.col("split").cast(pl.String),
            normalised_question(pl.col("questions")).alias("key"),
        )
        .filter(pl.col("key").is_not_null() & (pl.col("key") != ""))
    )


def fact_keys(data: LoadedDataset) -> pl.DataFrame:
    """``record, split, key``: one row per edit, the key ``subject|relation|object`` of its
    edit triple (``orig.edit_triples``), or of the requested rewrite (subject label, relation
    id, new object id) where a case has no edit triples."""
    assert isinstance(data, KEData)

    def text(a: str, b: str) -> pl.Expr:
        return pl.coalesce(pl.col(a).cast(pl.String), pl.col(b).cast(pl.String))

    e = data.edits.select(
        "row",
        pl.concat_str(
            text("t_s", "subject"), text("t_r", "relation_id"), text("t_o", "new_id"), separator="|"
        ).alias("key"),
    )
    return e.join(data.cases.select("row", "record", "split"), on="row", how="left").select(
        pl.col("record").cast(pl.String), pl.col("split").cast(pl.String), "key"
    )


#: The named keys ``curate overlap`` compares (and, for questions, the text key KE402 compares
#: by its normal form): the same counterfactual edited twice, the same question asked twice.
FACT_KEYS = Keys(
    "fact",
    ("key",),
    doc="edit triple subject|relation|object of each requested rewrite: the same "
    "counterfactual edited in two datasets (or splits)",
    table=fact_keys,
)
QUESTION_KEYS = Keys(
    "question",
    ("key",),
    doc="multi-hop question, lower-cased with punctuation and spacing folded (as "
    "KE402): a question asked in two datasets is seen at test time",
    table=question_keys,
    text=True,
    normalise=normalised_question,
)
