"""The knowledge-editing reader's columnar path: a batch of records as Arrow, checked against the
schema models by vectorised expressions, laid out as the ``cases``/``hops``/``edits`` tables.

Why: validating 1 M MQuAKE cases one pydantic object at a time and copying every value into
Python column lists took minutes and ~20 GB. Here a batch is parsed by Arrow's C++ JSON reader
(or comes straight from a parquet file) into the type the models declare, a polars expression
derived from the same models says which records certainly pass them, and the tables are built
by list/struct expressions, with no Python object per value.

Soundness comes first, speed second: the check is conservative. Only a record it accepts skips
pydantic, and it accepts only what the models accept (strict types hold by construction: Arrow
refuses a number where the declared type is a string, a float where it is an integer, an
unexpected field, a key given twice). Every record it cannot vouch for (a null, an empty
string, a triple of two, ...) goes through :func:`~curate.families.knowledge_editing.
validate_record` as before, so an invalid record is named by case id and field path exactly as
the per-record reader names it, and a record the check was merely unsure of is kept. Anything
the models declare that :func:`model_check` does not understand (a validator, another union, an
unknown constraint) turns the path off: the reader then validates every record with pydantic.
"""

from __future__ import annotations

import functools
import io as _io
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
from annotated_types import Ge, Gt, Le, Len, Lt
from polars.datatypes import DataTypeClass
from pydantic import BaseModel
from pydantic.types import StringConstraints
from pydantic_core import PydanticUndefined

from curate.schemas.knowledge_editing import MQuAKECase
from curate.schemas.knowledge_editing_tables import CASE_SCHEMA, CODE, EDIT_SCHEMA, HOP_SCHEMA

__all__ = [
    "CODED_FIELDS",
    "Codes",
    "Columns",
    "DictionaryRun",
    "conform",
    "model_check",
    "parse_json",
    "tables",
]

#: The string fields (dotted paths, list levels left out) whose values the tables keep coded
#: (categorical columns of ``hops`` and ``edits``). A parquet reader hands them over as
#: dictionaries when asked (:func:`curate.io.read.open_source`'s ``dictionary``): their codes then
#: go through the tables as integers, and each distinct string is made a category once per
#: batch, not once per value (1 M cases: 75 M values, ~3 CPU-s of casts, and the strings need
#: not be decoded at all).
CODED_FIELDS = frozenset(
    {
        *(
            f"orig.{f}"
            for f in (
                "triples",
                "triples_labeled",
                "new_triples",
                "new_triples_labeled",
                "edit_triples",
            )
        ),
        *(
            f"requested_rewrite.{f}"
            for f in (
                "prompt",
                "subject",
                "relation_id",
                "target_new.str",
                "target_new.id",
                "target_true.id",
            )
        ),
        "single_hops.answer",
        "new_single_hops.answer",
    }
)


class Undeclared(Exception):
    """A part of the models the vectorised check cannot mirror exactly."""


# --------------------------------------------------------------------------- the check


@functools.cache
def model_check(id_kind: type, coded: bool = False) -> pl.Expr | None:
    """One boolean per record: True only where the record certainly validates as MQuAKECase.

    Derived from the models, field by field (required → not null, ``NonEmpty`` → at least one
    character, ``Len(3, 3)`` → three items, lists element by element, models field by field);
    ``id_kind`` is the one type the batch's case ids have (the Arrow type was declared from it).
    None when the models hold something it cannot mirror: the caller validates with pydantic.

    ``coded``: the strings of :data:`CODED_FIELDS` are codes (see :class:`Codes`); what the
    models ask of their values was checked on the dictionaries (:func:`coded_string_checks`),
    so here only their presence is.
    """
    try:
        checks = _model_fields_ok(MQuAKECase, None, id_kind, "", {} if coded else None)
    except Undeclared:
        return None
    return pl.all_horizontal(checks).fill_null(False).alias("ok")


@functools.cache
def coded_string_checks(id_kind: type) -> dict[str, tuple[int, int | None]]:
    """Per field of :data:`CODED_FIELDS`: the least and greatest number of characters
    :func:`model_check` allows its strings (the only constraints it mirrors)."""
    found: dict[str, list[Any]] = {}
    _model_fields_ok(MQuAKECase, None, id_kind, "", found)
    out = {}
    for path, meta in found.items():
        low, high = 0, None
        for m in meta:  # StringConstraints only: _str_ok refused anything else
            low = max(low, m.min_length or 0)
            if m.max_length is not None:
                high = m.max_length if high is None else min(high, m.max_length)
        out[path] = (low, high)
    return out


#: MQuAKECase fields the columnar path leaves to pydantic: a record that has one is read by the
#: per-record reader (the Remastered split map, and what ``curate fix`` writes).
IRREGULAR_FIELDS = frozenset({"split", "edited", "withheld_edits"})


def _model_fields_ok(
    model: type[BaseModel],
    e: pl.Expr | None,
    id_kind: type,
    path: str = "",
    coded: dict[str, list[Any]] | None = None,
) -> list[pl.Expr]:
    cfg = model.model_config
    dec = model.__pydantic_decorators__
    # a validator of an irregular field (the Remastered split map) never meets this path: a
    # record holding that field is read by pydantic
    field_validators = [
        v
        for v in dec.field_validators.values()
        if e is not None or not set(v.info.fields) <= IRREGULAR_FIELDS
    ]
    if not cfg.get("strict") or any(
        (
            dec.validators,
            field_validators,
            dec.root_validators,
            dec.model_validators,
        )
    ):
        raise Undeclared(model.__name__)
    out = []
    for name, info in model.model_fields.items():
        key = info.alias or name
        if e is None and name in IRREGULAR_FIELDS:
            continue  # not in the parse type: a record holding it fails to parse
        sub = pl.col(key) if e is None else e.struct.field(key)
        if info.is_required():
            nullable = False
        elif info.default is None:
            nullable = True
        elif info.default_factory is not None and info.default is PydanticUndefined:
            # Absent means the default, an explicit null is an error; Arrow shows both as null,
            # so a null is left to pydantic.
            nullable = False
        else:
            raise Undeclared(f"{model.__name__}.{name}")
        at = f"{path}.{key}" if path else key
        meta = list(info.metadata)
        out.append(_value_ok(info.annotation, meta, sub, nullable, id_kind, name, at, coded))
    return out


def _value_ok(
    ann: Any,
    meta: list[Any],
    e: pl.Expr,
    nullable: bool,
    id_kind: type,
    name: str = "",
    path: str = "",
    coded: dict[str, list[Any]] | None = None,
) -> pl.Expr:
    """``path``: the field's dotted path, list levels left out (``orig.triples``); ``coded``,
    when given, collects the string constraints of the :data:`CODED_FIELDS` it passes."""
    origin = get_origin(ann)
    if origin is Annotated:
        base, *extra = get_args(ann)
        return _value_ok(base, meta + list(extra), e, nullable, id_kind, name, path, coded)
    if origin in (Union, UnionType):
        args = [a for a in get_args(ann) if a is not type(None)]
        nullable = nullable or len(args) < len(get_args(ann))
        if len(args) > 1:
            if name != "case_id":
                raise Undeclared(name)
            # int | NonEmpty: the batch's ids are all of one kind, declared as such
            args = [a for a in args if (get_args(a) or (a,))[0] is id_kind]
            if len(args) != 1:
                raise Undeclared(name)
        return _value_ok(args[0], meta, e, nullable, id_kind, name, path, coded)
    inner = _type_ok(ann, meta, e, id_kind, path, coded)
    return (e.is_null() | inner) if nullable else (e.is_not_null() & inner)


def _type_ok(
    ann: Any,
    meta: list[Any],
    e: pl.Expr,
    id_kind: type,
    path: str = "",
    coded: dict[str, list[Any]] | None = None,
) -> pl.Expr:
    origin = get_origin(ann)
    ok = pl.lit(True)
    if ann is str:
        check = _str_ok(meta, e)  # Undeclared for a constraint it cannot mirror, coded or not
        if coded is not None and path in CODED_FIELDS:
            coded[path] = meta
            return ok
        return check
    if ann is int:  # int64 in the parse type: Arrow refused anything else
        for m in meta:
            if isinstance(m, Ge):
                ok = ok & (e >= pl.lit(m.ge))
            elif isinstance(m, Le):
                ok = ok & (e <= pl.lit(m.le))
            elif isinstance(m, Gt):
                ok = ok & (e > pl.lit(m.gt))
            elif isinstance(m, Lt):
                ok = ok & (e < pl.lit(m.lt))
            else:
                raise Undeclared(repr(m))
        return ok
    if origin is list:
        (item,) = get_args(ann)
        for m in meta:
            if not isinstance(m, Len):
                raise Undeclared(repr(m))
            ok = ok & (e.list.len() >= m.min_length)
            if m.max_length is not None:
                ok = ok & (e.list.len() <= m.max_length)
        each = _value_ok(item, [], pl.element(), False, id_kind, "", path, coded).fill_null(False)
        return ok & e.list.eval(each).list.all()
    if isinstance(ann, type) and issubclass(ann, BaseModel):
        if meta:
            raise Undeclared(repr(meta))
        return pl.all_horizontal(_model_fields_ok(ann, e, id_kind, path, coded))
    raise Undeclared(repr(ann))


def _str_ok(meta: list[Any], e: pl.Expr) -> pl.Expr:
    """What a string's constraints (``NonEmpty``: one character at least) ask of ``e``."""
    ok = pl.lit(True)
    for m in meta:
        if not isinstance(m, StringConstraints) or any(
            getattr(m, k) not in (None, False)
            for k in ("strip_whitespace", "to_upper", "to_lower", "strict", "pattern")
        ):
            raise Undeclared(repr(m))
        if m.min_length == 1:
            # NonEmpty: one character at least is one byte at least, and a string's byte
            # length is in its view, while counting characters reads every byte (1 M MQuAKE
            # cases: ~100 M strings checked)
            ok = ok & (e.str.len_bytes() >= 1)
        elif m.min_length is not None:
            ok = ok & (e.str.len_chars() >= m.min_length)
        if m.max_length is not None:
            ok = ok & (e.str.len_chars() <= m.max_length)
    return ok


# --------------------------------------------------------------------------- parsing


def parse_json(data: bytes, n: int, schema: pa.Schema) -> pa.Table | None:
    """``n`` JSON Lines records as one table of ``schema``; None when Arrow cannot hold them
    in it (an extra field, a key given twice, another type, an integer beyond 64 bits, ...) or
    might accept what :func:`curate.io.json_files._loads` refuses: the caller then reads the batch
    record
    by record, and that names any broken line exactly as before.

    What Arrow's parser accepts is valid JSON to orjson too, with two exceptions it checks
    here: text that is not UTF-8 (Arrow does not look; a full validation does) and a byte order
    mark starting a later line.
    """
    if _has_bom(data):
        return None
    try:
        table = _read_json(data, schema, _BLOCK)
    except pa.ArrowInvalid as e:
        if "straddl" not in str(e) or len(data) <= _BLOCK:
            return None
        try:  # a line longer than a block: the whole batch as one block holds it
            table = _read_json(data, schema, len(data) + 1)
        except (pa.ArrowException, OverflowError, ValueError):
            return None
    except (pa.ArrowException, OverflowError, ValueError):
        return None
    if table.num_rows != n:  # two objects on a line
        return None
    try:
        table.validate(full=True)  # UTF-8
    except (pa.ArrowException, ValueError):
        return None
    # One chunk (Arrow's reader gives one per 4 MiB block): the tables are laid out from one
    # (see :func:`tables`), and copied here the blocks are freed before the batch is coded
    # (:func:`~curate.families.knowledge_editing_read.json_coded`), not held beside the copy.
    return table.combine_chunks(memory_pool=POOL)


def _read_json(data: bytes, schema: pa.Schema, block: int) -> pa.Table:
    return pj.read_json(
        _io.BytesIO(data),
        # One thread per batch: the reader parses two batches at once (one per core), and
        # Arrow's threads cost ~25 % more CPU for the same batch (measured at 100k).
        read_options=pj.ReadOptions(use_threads=False, block_size=block),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"),
        memory_pool=POOL,
    )


_BOM = "\ufeff".encode()
#: The pool of every Arrow buffer a batch's layout allocates (the parse, its one chunk, the
#: codes): glibc's, whose freed memory the next batch reuses and goes back to the system after
#: the load (:func:`curate.core.memory.release_freed`). Why not Arrow's default pool
#: (mimalloc): it keeps what each thread freed; measured at 100k MQuAKE cases, the one chunk
#: and the codes made there raised the load's peak RSS from ~500 to ~565 MiB.
POOL = pa.system_memory_pool()
#: How many ``0xEF`` bytes :func:`_has_bom` looks at one by one before it scans the rest whole.
_BOM_HOPS = 256


def _has_bom(data: bytes) -> bool:
    """Does ``data`` hold a byte order mark (``EF BB BF``) anywhere?

    Why not ``_BOM in data``: CPython searches a three-byte needle byte by byte (~1.1 GB/s
    here; 1 M MQuAKE cases: ~4 CPU-s, holding the GIL the parsing threads wait on), while
    ``find`` of its one lead byte is ``memchr``. ``0xEF`` only leads the characters U+F000 to
    U+FFFF (~30 in a 16 MiB MQuAKE batch), so the search hops from one to the next and looks
    at the two bytes after it; text full of them (fullwidth punctuation) goes back to the
    whole scan after :data:`_BOM_HOPS` of them, for the rest of the batch.
    """
    find = data.find
    i = find(b"\xef")
    for _ in range(_BOM_HOPS):
        if i < 0:
            return False
        if data.startswith(_BOM, i):
            return True
        i = find(b"\xef", i + 1)
    return i >= 0 and data.find(_BOM, i) >= 0


#: Bytes Arrow's JSON reader parses at a time (4 MiB measured fastest of 1-64 MiB; a block
#: must hold whole lines, so a batch with a longer line is read again as one block).
_BLOCK = 4 << 20


class _Uncoded(Exception):
    """A coded field's dictionary holds a value its constraints refuse: read the batch decoded."""


class DictionaryRun:
    """Dictionaries laid end to end: a dictionary array's values become indexes into the run
    (its index plus the dictionary's start), and :meth:`categories` codes the run's strings in
    one cast. Why: a string repeated over many values is looked up in the process-wide
    categories once per dictionary, not once per value; the values are gathered by index."""

    def __init__(self) -> None:
        self._dicts: list[pa.Array] = []
        self._size = 0

    def add(self, arr: pa.DictionaryArray) -> pa.Array:
        """``arr``'s values as ``uint32`` indexes into the run."""
        start = self._size
        self._dicts.append(arr.dictionary.cast(pa.large_string(), memory_pool=POOL))
        self._size += len(arr.dictionary)
        codes = arr.indices.cast(pa.uint32(), memory_pool=POOL)
        if not start:
            return codes
        # in polars: pyarrow's scalar from a Python int imports pandas (~0.35 s, once)
        return (pl.Series(codes) + pl.Series([start], dtype=pl.UInt32)).to_arrow()

    def strings(self) -> pa.Array:
        """The run's strings (``large_string``): index → its string."""
        if not self._dicts:
            return pa.array([], pa.large_string())
        return pa.concat_arrays(self._dicts, memory_pool=POOL)

    def categories(self, dtype: pl.DataType | DataTypeClass) -> pl.Series:
        """The run's strings as ``dtype`` (categorical or enum): index → its category."""
        if not self._dicts:
            return pl.Series("v", [], dtype=dtype)
        return pl.Series("v", self.strings()).cast(dtype)


class Codes:
    """A batch's coded fields (:data:`CODED_FIELDS`) as integers into one run of categories.

    Each field's dictionary (from parquet, or made here) is appended to the run; a value is its
    index in its dictionary plus that dictionary's start in the run. :meth:`categories` makes
    the run's strings categories in one cast, so a string repeated over a batch is looked up
    in the process-wide categories once per batch, not once per value. Codes are what the tables
    carry through their list and struct expressions (integers: nothing to copy or hash); the
    tables' coded columns gather their categories by them at the end (:func:`_typed`).
    """

    def __init__(self, id_kind: type) -> None:
        self._checks = coded_string_checks(id_kind)
        self._run = DictionaryRun()

    def encode(self, path: str, arr: pa.Array) -> pa.Array | None:
        """``arr`` (the strings of field ``path``) as codes; None if it holds no strings."""
        t = arr.type
        if pa.types.is_null(t):
            return pa.nulls(len(arr), pa.uint32())
        if pa.types.is_dictionary(t) and len(arr.dictionary) > 2 * len(arr) + 1024:
            # a dictionary far larger than the values it codes (a whole file's): cut it down
            arr = arr.dictionary_decode()
            t = arr.type
        if not pa.types.is_dictionary(t):
            if not _is_text(t):
                return None
            arr = pc.dictionary_encode(arr, memory_pool=POOL)
        d = arr.dictionary
        if not _is_text(d.type):
            return None
        if d.null_count:
            # a code pointing at a null is a null the record check (presence only) cannot see
            raise _Uncoded(path)
        low, high = self._checks.get(path, (0, None))
        if len(d) and (low or high is not None):
            chars = pc.min_max(pc.utf8_length(d, memory_pool=POOL))
            if chars["min"].as_py() < low or (high is not None and chars["max"].as_py() > high):
                raise _Uncoded(path)
        return self._run.add(arr)

    def categories(self) -> pl.Series:
        """Every coded field's strings, as categories (code → its category)."""
        return self._run.categories(CODE)

    def strings(self) -> pa.Array:
        """Every coded field's strings (code → its string)."""
        return self._run.strings()


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def has_dictionary(t: pa.DataType) -> bool:
    """Does a (nested) Arrow type hold dictionary-encoded values anywhere?"""
    if pa.types.is_dictionary(t):
        return True
    if pa.types.is_struct(t):
        return any(has_dictionary(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t):
        return has_dictionary(t.value_type)
    return False


def conform(
    batch: pa.RecordBatch, struct: pa.StructType, codes: Codes | None = None
) -> tuple[pa.Table, Codes | None] | None:
    """A parquet/Arrow batch as a table of exactly ``struct`` (fields by name, absent optional
    ones as nulls, ``large_string``/dictionary strings as ``string``); None when a column is
    beyond the type (an extra field, a float where an integer belongs, ...).

    With ``codes``, the strings of :data:`CODED_FIELDS` become codes (``uint32``) instead, and
    the codes come back with the table; when a dictionary holds a value its field refuses (an
    empty subject, say), the batch is conformed without codes and ``None`` comes back instead,
    so that the record check sees the strings themselves.
    """
    if codes is not None:
        try:
            table = _conform(batch, struct, codes)
            return None if table is None else (table, codes)
        except _Uncoded:
            pass
    table = _conform(batch, struct, None)
    return None if table is None else (table, None)


def _conform(batch: pa.RecordBatch, struct: pa.StructType, codes: Codes | None) -> pa.Table | None:
    names = set(batch.schema.names)
    if not names <= {f.name for f in struct}:
        return None
    cols = []
    for f in struct:
        if f.name in names:
            arr = _conform_array(batch.column(f.name), f.type, f.name, codes)
            if arr is None:
                return None
        else:
            arr = pa.nulls(batch.num_rows, _coded_type(f.type, f.name) if codes else f.type)
        cols.append(arr)
    fields = [pa.field(f.name, c.type) for f, c in zip(struct, cols, strict=True)]
    return pa.Table.from_arrays(cols, schema=pa.schema(fields))


def _coded_type(t: pa.DataType, path: str) -> pa.DataType:
    """``t`` as :class:`Codes` makes it: the strings of coded fields as ``uint32``."""
    if pa.types.is_string(t):
        return pa.uint32() if path in CODED_FIELDS else t
    if pa.types.is_list(t):
        return pa.list_(_coded_type(t.value_type, path))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _coded_type(f.type, f"{path}.{f.name}")) for f in t])
    return t


def _conform_array(
    arr: pa.Array, want: pa.DataType, path: str, codes: Codes | None
) -> pa.Array | None:
    t = arr.type
    if pa.types.is_string(want) and codes is not None and path in CODED_FIELDS:
        return codes.encode(path, arr)
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_string(want):
        if pa.types.is_string(t):
            return arr
        if pa.types.is_large_string(t) or pa.types.is_string_view(t):
            return arr.cast(want)
        return None if not pa.types.is_null(t) else arr.cast(want)
    if pa.types.is_int64(want):
        if pa.types.is_integer(t) and not (pa.types.is_uint64(t)):
            return arr.cast(want)
        return None if not pa.types.is_null(t) else arr.cast(want)
    if pa.types.is_list(want):
        if pa.types.is_null(t):
            return arr.cast(_coded_type(want, path) if codes else want)
        if not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_list_view(t)):
            return None
        if pa.types.is_list_view(t) or pa.types.is_large_list(t):
            arr = arr.cast(pa.list_(t.value_type))
        values = _conform_array(arr.values, want.value_type, path, codes)
        if values is None:
            return None
        return pa.ListArray.from_arrays(
            arr.offsets,
            values,
            type=pa.list_(values.type) if codes else want,
            pool=POOL,
            mask=arr.is_null() if arr.null_count else None,
        )
    if pa.types.is_struct(want):
        if pa.types.is_null(t):
            return arr.cast(_coded_type(want, path) if codes else want)
        if not pa.types.is_struct(t):
            return None
        have = {t.field(i).name: i for i in range(t.num_fields)}
        if not set(have) <= {f.name for f in want}:
            return None
        children = []
        for f in want:
            at = f"{path}.{f.name}"
            if f.name in have:
                child = _conform_array(arr.field(have[f.name]), f.type, at, codes)
                if child is None:
                    return None
            else:
                child = pa.nulls(len(arr), _coded_type(f.type, at) if codes else f.type)
            children.append(child)
        fields = [pa.field(f.name, c.type) for f, c in zip(want, children, strict=True)]
        return pa.StructArray.from_arrays(
            children, fields=fields, mask=arr.is_null() if arr.null_count else None
        )
    return None


# --------------------------------------------------------------------------- the tables


class Columns:
    """One batch laid out: the three tables (a row for every record, valid or not), the case
    ids, the records the check cannot vouch for (indexes in the batch; pydantic decides them)
    and the optional fields some record has (what the export's declared type depends on)."""

    __slots__ = ("cases", "edits", "hops", "ids", "present", "strings", "unsure")

    def __init__(
        self,
        cases: pl.DataFrame,
        hops: pl.DataFrame,
        edits: pl.DataFrame,
        ids: list[Any],
        unsure: list[int],
        present: set[str],
        strings: pa.Array | None = None,
    ) -> None:
        self.cases: pl.DataFrame = cases
        self.hops: pl.DataFrame = hops
        self.edits: pl.DataFrame = edits
        self.ids: list[Any] = ids
        self.unsure: list[int] = unsure
        self.present: set[str] = present
        #: With ``keep_codes`` (see :func:`tables`): the strings the coded columns' ``uint32``
        #: values index; None: the coded columns are categories.
        self.strings: pa.Array | None = strings


def tables(
    table: pa.Table,
    first_row: int,
    split: str | None,
    id_kind: type,
    codes: Codes | None = None,
    keep_codes: bool = False,
) -> Columns | None:
    """The batch's three tables, rows numbered from ``first_row`` (one per parsed record);
    ``codes``: the coded fields' values are codes into these (see :func:`conform`).

    ``keep_codes`` (with ``codes``): the coded columns stay ``uint32`` indexes into
    :attr:`Columns.strings`, the run's strings, instead of becoming categories. Why: a Ray
    worker's tables go to the driver, which makes the strings categories of its own process
    anyway; the worker's cast (a third of its parquet load) would be done twice."""
    check = model_check(id_kind, codes is not None)
    if check is None:
        return None
    # One chunk: Arrow's reader gives one per 4 MiB block (~17 a batch), and every select of a
    # nested field below then walked them all (~17 ms a select, ~1 ms on one chunk); the copy
    # costs ~25 ms a batch and saved ~25 % of the CPU laying out the tables (measured at 100k).
    df = pl.from_arrow(table, rechunk=True)
    assert isinstance(df, pl.DataFrame)
    n = df.height
    df = df.with_columns(
        pl.int_range(first_row, first_row + n, dtype=pl.Int64).alias("row"),
        pl.col("case_id").cast(pl.String).alias("record"),
    )
    ok = df.select(check).to_series()
    unsure = (~ok).arg_true().to_list()
    case_ids = df["case_id"].to_list()
    o = pl.col("orig")
    i32 = pl.Int32

    def n_of(e: pl.Expr) -> pl.Expr:
        return e.list.len().cast(i32)

    cases = df.select(
        "row",
        "record",
        pl.lit(split, pl.String).alias("split"),
        pl.lit("original", pl.String).alias("layout"),
        n_of(pl.col("requested_rewrite")).alias("n_rewrites"),
        n_of(o.struct.field("triples")).alias("n_triples"),
        n_of(o.struct.field("triples_labeled")).alias("n_triples_labeled"),
        n_of(pl.col("single_hops")).alias("n_single_hops"),
        n_of(o.struct.field("new_triples")).alias("n_new_triples"),
        n_of(o.struct.field("new_triples_labeled")).alias("n_new_triples_labeled"),
        n_of(pl.col("new_single_hops")).alias("n_new_single_hops"),
        n_of(o.struct.field("edit_triples")).alias("n_edit_triples"),
        n_of(o.struct.field("edit_triples_idx")).alias("n_edit_idx"),
        "answer",
        "new_answer",
        "questions",
        "answer_alias",
        "new_answer_alias",
        pl.lit(None, pl.String).alias("split_map"),
    )
    present: set[str] = set()
    if "answer_extended" in df.columns and df["answer_extended"].null_count() < n:
        present.add("answer_extended")
    parts = []
    for path, ids, labs, key in (
        ("orig", "triples", "triples_labeled", "single_hops"),
        ("new", "new_triples", "new_triples_labeled", "new_single_hops"),
    ):
        part = _aligned(
            df, [o.struct.field(ids), o.struct.field(labs), pl.col(key)], ["t", "lab", "sh"]
        )
        sh = pl.col("sh")
        if part.select(sh.struct.field("cloze").is_not_null().any()).item():
            present.add(f"{key}.cloze")
        parts.append(
            part.select(
                "row",
                pl.lit(path, pl.String).alias("path"),
                pl.col("hop").cast(i32),
                *[pl.col("t").list.get(j, null_on_oob=True).alias(c) for j, c in enumerate("sro")],
                *[
                    pl.col("lab").list.get(j, null_on_oob=True).alias(c)
                    for j, c in ((0, "s_label"), (2, "o_label"))
                ],
                sh.struct.field("answer").alias("sh_answer"),
            )
        )
    hops = pl.concat(parts).sort("row", maintain_order=True)
    e = _aligned(
        df,
        [
            pl.col("requested_rewrite"),
            o.struct.field("edit_triples"),
            o.struct.field("edit_triples_idx"),
        ],
        ["rw", "t", "idx"],
    )
    rw = pl.col("rw")
    flags = e.select(
        rw.struct.field("question").is_not_null().any().alias("requested_rewrite.question"),
        rw.struct.field("target_new")
        .struct.field("id")
        .is_not_null()
        .any()
        .alias("requested_rewrite.target_new.id"),
        rw.struct.field("target_true")
        .struct.field("id")
        .is_not_null()
        .any()
        .alias("requested_rewrite.target_true.id"),
    ).row(0, named=True)
    present.update(k for k, v in flags.items() if v)
    edits = e.select(
        "row",
        pl.col("hop").cast(i32).alias("k"),
        rw.struct.field("prompt").alias("prompt"),
        rw.struct.field("subject").alias("subject"),
        rw.struct.field("relation_id").alias("relation_id"),
        rw.struct.field("target_new").struct.field("id").alias("new_id"),
        rw.struct.field("target_new").struct.field("str").alias("new_str"),
        rw.struct.field("target_true").struct.field("id").alias("true_id"),
        *[
            pl.col("t").list.get(j, null_on_oob=True).alias(c)
            for j, c in enumerate(("t_s", "t_r", "t_o"))
        ],
        # A copy: exploded, the column is the parsed batch's own buffer, and one such buffer
        # kept per batch pins the heap the batches are parsed in (glibc's: the freed batches
        # around it can then be neither trimmed nor wholly reused). Measured at 100k cases with
        # one-chunk batches: ~90 MiB more resident after the load without it.
        pl.col("idx").gather(pl.int_range(pl.len())).alias("idx"),
    )
    kept = codes is not None and keep_codes
    cats = codes.categories() if codes is not None and not kept else None
    return Columns(
        _typed(cases, CASE_SCHEMA, cats),
        _typed(hops, HOP_SCHEMA, cats),
        _typed(edits, EDIT_SCHEMA, cats),
        case_ids,
        unsure,
        present,
        codes.strings() if codes is not None and kept else None,
    )


def _aligned(df: pl.DataFrame, lists: list[pl.Expr], names: list[str]) -> pl.DataFrame:
    """One row per (record, index < the longest of ``lists``), each list's item at that index
    (null past its end): the per-record loops' ``x[h] if h < len(x) else None``."""
    lengths = [x.list.len() for x in lists]
    if df.select(
        pl.all_horizontal([n == lengths[0] for n in lengths[1:]]).fill_null(False).all()
    ).item():
        # The usual batch: in every record the lists are there and as long as one another, so
        # each list exploded is its items at 0..len-1, what the gather below makes of it, at
        # ~1/4 of the CPU (1 M cases: the gathers were ~30 % of laying out the tables).
        return df.select(
            "row",
            pl.int_ranges(0, lengths[0], dtype=pl.Int64).alias("hop"),
            *[x.alias(n) for x, n in zip(lists, names, strict=True)],
        ).explode(["hop", *names], keep_nulls=False)
    # A null list (only in a record pydantic then rejects) makes no rows for that record.
    longest = (
        pl.when(pl.any_horizontal([x.is_null() for x in lists]))
        .then(0)
        .otherwise(pl.max_horizontal([x.list.len() for x in lists]))
    )
    idx = pl.int_ranges(0, longest, dtype=pl.Int64)
    return df.select(
        "row",
        idx.alias("hop"),
        *[x.list.gather(idx, null_on_oob=True).alias(n) for x, n in zip(lists, names, strict=True)],
    ).explode(["hop", *names], keep_nulls=False)


def _typed(df: pl.DataFrame, schema: dict[str, Any], cats: pl.Series | None = None) -> pl.DataFrame:
    """The columns of ``schema``, in fresh buffers of their own.

    Why the copy: polars reads Arrow strings without copying them, so a column taken from the
    parsed batch (a question, an alias) keeps that batch's whole string buffers alive, the parts
    no table needs too; measured at 1 M cases, that was ~1.5x the tables themselves. Coded
    columns (categoricals, enums) are fresh arrays of codes already; only text is copied.
    A coded column that holds :class:`Codes`' integers gathers its categories ``cats``, or
    stays integers without them (:func:`tables`' ``keep_codes``).
    """

    def typed(k: str, v: Any) -> pl.Expr:
        if v == CODE and df.schema[k] == pl.UInt32:
            return pl.lit(cats).gather(pl.col(k)).alias(k) if cats is not None else pl.col(k)
        return pl.col(k).cast(v)

    df = df.select(typed(k, v) for k, v in schema.items())
    text = [k for k, v in schema.items() if v == pl.String or v == pl.List(pl.String)]
    if not text:
        return df
    copied = pl.from_arrow(df.select(text).to_arrow(compat_level=pl.CompatLevel.oldest()))
    assert isinstance(copied, pl.DataFrame)
    return df.with_columns(copied)
