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

from curate.dataset import LoadedDataset
from curate.errors import InputError
from curate.schemas.knowledge_editing import MQuAKECase

__all__ = [
    "CASE_SCHEMA",
    "EDIT_SCHEMA",
    "HOP_SCHEMA",
    "KEData",
    "arrow_type_error",
    "huge_int",
    "only_input",
    "records_to_arrow",
    "struct_array",
    "unify_struct_types",
]

CASE_SCHEMA = {
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
HOP_SCHEMA = {
    "row": pl.Int64,
    "record": pl.String,
    "path": pl.String,
    "hop": pl.Int32,
    "s": pl.String,
    "r": pl.String,
    "o": pl.String,
    "s_label": pl.String,
    "r_label": pl.String,
    "o_label": pl.String,
    "sh_answer": pl.String,
    "sh_aliases": pl.List(pl.String),
}
EDIT_SCHEMA = {
    "row": pl.Int64,
    "record": pl.String,
    "k": pl.Int32,
    "prompt": pl.String,
    "subject": pl.String,
    "relation_id": pl.String,
    "new_id": pl.String,
    "new_str": pl.String,
    "true_id": pl.String,
    "true_str": pl.String,
    "t_s": pl.String,
    "t_r": pl.String,
    "t_o": pl.String,
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


def struct_array(rows: list[dict[str, Any]], path: str | None = None) -> pa.StructArray | None:
    """Records → one Arrow struct array, nested fields kept as structs/lists.

    ``pa.array`` infers one struct type over *all* rows (keys missing in a row become null) and
    keeps strings as strings; pyarrow's JSON reader would turn date-like text into timestamps.
    An integer beyond 64 bits (read exactly, see :func:`curate.io._loads`) has no Arrow type:
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
