"""Reading knowledge-editing records fast: batches to the three tables, in threads or shards.

What :class:`~curate.families.knowledge_editing.KnowledgeEditingFamily` reads with: the
record shape seen so far (:class:`RecordShape`: which optional fields occur, so the Arrow
types of an export are declared, not guessed), the builder that lays validated records out as
the ``cases``, ``hops`` and ``edits`` tables, the string pool that dictionary-encodes repeated
text across batches, the shard a worker returns (its tables and pool, pickled compactly), and
the merge of shards in input order. :func:`validate_record` is the one-record pydantic path
every record the columnar check cannot vouch for takes. Kept apart from the family class so
that the family module holds the contract (options, rules, tables, fix frame, export) and this
one the machinery.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from polars.datatypes import DataTypeClass
from pydantic import BaseModel, ValidationError

from curate.core.engine import available_cores
from curate.core.errors import InputError, field_path
from curate.core.findings import InputInfo, dumps
from curate.core.options import FamilyOptions
from curate.families.base import Progress
from curate.families.knowledge_editing_columns import (
    IRREGULAR_FIELDS,
    Codes,
    Columns,
    DictionaryRun,
    conform,
    has_dictionary,
    parse_json,
    tables,
)
from curate.io.records import HF_SCHEME, Batch, is_stdin
from curate.schemas.knowledge_editing import (
    KEOptions,
    MQuAKECase,
    RemasteredCase,
    layout_of,
)
from curate.schemas.knowledge_editing_tables import (
    CASE_SCHEMA,
    CODE,
    EDIT_SCHEMA,
    HOP_SCHEMA,
    MARK_SCHEMA,
    REBUILDABLE,
    KEData,
)

_INT64 = range(-(2**63), 2**63)
#: The models' optional fields (``None`` by default, left out of a record by ``exclude_none``)
#: whose presence :class:`RecordShape` notes, as dotted paths through the models.
_OPTIONAL_PATHS = frozenset(
    {
        "requested_rewrite.target_new.id",
        "requested_rewrite.target_true.id",
        "requested_rewrite.question",
        "single_hops.cloze",
        "new_single_hops.cloze",
        "answer_extended",
        "split",  # present makes the shape irregular: its keys are data
        # written by curate fix; present makes the shape irregular (typed from the records)
        "edited",
        "withheld_edits",
    }
)


class RecordShape:
    """What the exported cases' one Arrow type depends on, noted case by case while validating.

    The export declares one Arrow type before its first batch. The schema models fix most of it
    (:func:`declared_type`); the data decides the rest: which optional fields occur at all (a
    field no case has is no column), whether case ids are integers or strings, and whether any
    case has something the models cannot type (``irregular``): fields beyond the models
    (``extra="allow"``), the Remastered ``split`` map (its keys are data), an integer beyond
    64 bits, or both kinds of case id. Only then does the export infer the type from the records,
    a whole extra pass over the inputs. Noting costs a few attribute reads per case.
    """

    __slots__ = ("carried", "id_types", "irregular", "present")

    def __init__(self) -> None:
        self.present: set[str] = set()
        self.id_types: set[type] = set()
        self.irregular: bool = False
        #: Which of ``orig.edit_triples``/``edit_triples_idx`` some case carried (rather than
        #: the reader rebuilding them from a flat record): the Remastered writer keeps those.
        self.carried: set[str] = set()

    def note(self, c: MQuAKECase) -> None:
        present = self.present
        o = c.orig
        cid = c.case_id
        self.id_types.add(type(cid))
        if len(self.carried) < 2:
            self.carried.update(REBUILDABLE & o.model_fields_set)
        if (
            c.__pydantic_extra__
            or o.__pydantic_extra__
            or c.split is not None
            or c.edited is not None  # written by curate fix: typed from the records
            or c.withheld_edits is not None
            or (type(cid) is int and cid not in _INT64)
            or any(i not in _INT64 for i in o.edit_triples_idx)
        ):
            self.irregular = True
        if c.answer_extended is not None:
            present.add("answer_extended")
        if c.split is not None:
            present.add("split")
        for rw in c.requested_rewrite:
            new, true = rw.target_new, rw.target_true
            if rw.__pydantic_extra__ or new.__pydantic_extra__ or true.__pydantic_extra__:
                self.irregular = True
            if rw.question is not None:
                present.add("requested_rewrite.question")
            if new.id is not None:
                present.add("requested_rewrite.target_new.id")
            if true.id is not None:
                present.add("requested_rewrite.target_true.id")
        for key, hops in (("single_hops", c.single_hops), ("new_single_hops", c.new_single_hops)):
            for sh in hops:
                if sh.__pydantic_extra__:
                    self.irregular = True
                if sh.cloze is not None:
                    present.add(f"{key}.cloze")

    def fits(self, declared: RecordShape) -> bool:
        """Does a batch noted here fit the type declared from ``declared``?"""
        return (
            not self.irregular
            and self.present <= declared.present
            and self.id_types <= declared.id_types
        )


class _Undeclared(Exception):
    """A part of the models :func:`declared_type` cannot type from the models alone."""


def declared_type(shape: RecordShape) -> pa.StructType | None:
    """The Arrow type of the exported cases (``MQuAKECase.to_original``), from the models.

    It is the type ``pa.array`` infers from the records, without the pass over them: strings
    are ``string``, integers ``int64``, lists ``list``, models ``struct`` with their fields in
    declaration order under their aliases; an optional field only where some case has it. None
    where the data decides more than that (``shape.irregular``): the caller infers then.
    """
    if shape.irregular or len(shape.id_types) != 1:
        return None
    try:
        return _model_struct(MQuAKECase, "", shape)
    except _Undeclared:
        return None


def _model_struct(model: type[BaseModel], prefix: str, shape: RecordShape) -> pa.StructType:
    fields = []
    for name, info in model.model_fields.items():
        path = prefix + name
        if not info.is_required() and info.default is None:
            if path not in _OPTIONAL_PATHS:  # a new optional field RecordShape does not watch
                raise _Undeclared(path)
            if path not in shape.present:
                continue
        fields.append(pa.field(info.alias or name, _arrow_of(info.annotation, path, shape)))
    return pa.struct(fields)


def _arrow_of(annotation: Any, path: str, shape: RecordShape) -> pa.DataType:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _arrow_of(get_args(annotation)[0], path, shape)
    if origin in (Union, UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _arrow_of(args[0], path, shape)
        if path == "case_id":  # int | str: the one kind the cases have
            (kind,) = shape.id_types
            return pa.int64() if kind is int else pa.string()
        raise _Undeclared(path)
    if origin is list:
        return pa.list_(_arrow_of(get_args(annotation)[0], path, shape))
    if annotation is str:
        return pa.string()
    if annotation is int:
        return pa.int64()
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _model_struct(annotation, path + ".", shape)
    raise _Undeclared(path)  # dict (the Remastered split map), bool, float, ...


#: The case columns a lean load keeps (:attr:`TableBuilder.lean`).
LEAN_COLUMNS = ("row", "record", "split")


class TableBuilder:
    """Accumulates column lists; one pass per case, no per-pair work.

    :meth:`flush` (after each input batch) turns the gathered rows into frames: Python lists of
    Python strings cost several times what the same columns take in polars, and the memory they
    held is seldom handed back to the system, so the lists must not grow with the file.
    """

    def __init__(self, strings: StringPool | None = None, *, lean: bool = False) -> None:
        self.chunks: dict[str, list[pl.DataFrame]] = {"cases": [], "hops": [], "edits": []}
        self.shape: RecordShape = RecordShape()
        #: A Ray worker's (see :class:`StringPool`): coded columns as indexes into it.
        self.strings = strings
        #: Keep of the columnar batches only each case's row, id and split (``curate diff``,
        #: which reads the values from the files and runs no rule on the tables): at 1 M
        #: cases the hops, edits and case columns are most of the load's peak.
        self.lean = lean
        self._reset()

    def _reset(self) -> None:
        self.cases: dict[str, list[Any]] = {k: [] for k in CASE_SCHEMA}
        self.hops: dict[str, list[Any]] = {k: [] for k in HOP_SCHEMA}
        self.edits: dict[str, list[Any]] = {k: [] for k in EDIT_SCHEMA}

    def flush(self) -> None:
        for name, columns, schema in (
            ("cases", self.cases, CASE_SCHEMA),
            ("hops", self.hops, HOP_SCHEMA),
            ("edits", self.edits, EDIT_SCHEMA),
        ):
            if columns["row"] and not (self.lean and name != "cases"):
                frame = _frame(columns, schema)
                self.chunks[name].append(frame.select(LEAN_COLUMNS) if self.lean else frame)
        self._reset()

    def add_columns(self, cols: Columns, drop: list[int], id_kind: type) -> None:
        """A batch the columnar path laid out (:mod:`.knowledge_editing_columns`), less the
        rows of ``drop`` (records pydantic rejected)."""
        self.flush()
        frames = [cols.cases, cols.hops, cols.edits]
        if self.lean:
            frames = [cols.cases.select(LEAN_COLUMNS), cols.hops.clear(), cols.edits.clear()]
        if drop:
            frames = [f.filter(~pl.col("row").is_in(drop)) for f in frames]
        if cols.strings is not None:
            assert self.strings is not None
            frames = self.strings.add(frames, cols.strings)
        for name, frame in zip(("cases", "hops", "edits"), frames, strict=True):
            if frame.height:
                self.chunks[name].append(frame)
        if frames[0].height:
            self.shape.present |= cols.present
            self.shape.id_types.add(id_kind)

    def add(self, row: int, rec: str, split: str | None, layout: str, c: MQuAKECase) -> None:
        self.shape.note(c)
        o = c.orig
        cs = self.cases
        for key, val in (
            ("row", row),
            ("record", rec),
            ("split", split),
            ("layout", layout),
            ("n_rewrites", len(c.requested_rewrite)),
            ("n_triples", len(o.triples)),
            ("n_triples_labeled", len(o.triples_labeled)),
            ("n_single_hops", len(c.single_hops)),
            ("n_new_triples", len(o.new_triples)),
            ("n_new_triples_labeled", len(o.new_triples_labeled)),
            ("n_new_single_hops", len(c.new_single_hops)),
            ("n_edit_triples", len(o.edit_triples)),
            ("n_edit_idx", len(o.edit_triples_idx)),
            ("answer", c.answer),
            ("new_answer", c.new_answer),
            ("questions", c.questions),
            ("answer_alias", c.answer_alias),
            ("new_answer_alias", c.new_answer_alias),
            ("split_map", dumps(c.split) if c.split is not None else None),
        ):
            cs[key].append(val)
        hs = self.hops
        for path, ids, labs, shs in (
            ("orig", o.triples, o.triples_labeled, c.single_hops),
            ("new", o.new_triples, o.new_triples_labeled, c.new_single_hops),
        ):
            for h in range(max(len(ids), len(labs), len(shs))):
                t = ids[h] if h < len(ids) else (None, None, None)
                lab = labs[h] if h < len(labs) else (None, None, None)
                sh = shs[h] if h < len(shs) else None
                hs["row"].append(row)
                hs["path"].append(path)
                hs["hop"].append(h)
                hs["s"].append(t[0])
                hs["r"].append(t[1])
                hs["o"].append(t[2])
                hs["s_label"].append(lab[0])
                hs["o_label"].append(lab[2])
                hs["sh_answer"].append(sh.answer if sh else None)
        es = self.edits
        n = max(len(c.requested_rewrite), len(o.edit_triples), len(o.edit_triples_idx))
        for k in range(n):
            rw = c.requested_rewrite[k] if k < len(c.requested_rewrite) else None
            t = o.edit_triples[k] if k < len(o.edit_triples) else (None, None, None)
            es["row"].append(row)
            es["k"].append(k)
            es["prompt"].append(rw.prompt if rw else None)
            es["subject"].append(rw.subject if rw else None)
            es["relation_id"].append(rw.relation_id if rw else None)
            es["new_id"].append(rw.target_new.id if rw else None)
            es["new_str"].append(rw.target_new.text if rw else None)
            es["true_id"].append(rw.target_true.id if rw else None)
            es["t_s"].append(t[0])
            es["t_r"].append(t[1])
            es["t_o"].append(t[2])
            es["idx"].append(o.edit_triples_idx[k] if k < len(o.edit_triples_idx) else None)

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        self.flush()
        schemas: tuple[dict[str, Any], ...] = (CASE_SCHEMA, HOP_SCHEMA, EDIT_SCHEMA)
        if self.strings is not None:
            self.strings.own(self.chunks)
            schemas = tuple(_uncoded(s) for s in schemas)
        if self.lean:
            schemas = ({c: schemas[0][c] for c in LEAN_COLUMNS}, *schemas[1:])
        return (
            _concat(self.chunks.pop("cases"), schemas[0]),
            _concat(self.chunks.pop("hops"), schemas[1]),
            _concat(self.chunks.pop("edits"), schemas[2]),
        )


_LIST_OF_STR = pl.List(pl.String)
#: Arrow type of the list-of-string columns: polars reads ``large_list<string_view>`` without a
#: copy (its own layout), where ``large_list<large_string>`` is converted and kept twice.
_ARROW_STR_LIST = pa.large_list(pa.string_view())


def _frame(columns: dict[str, list[Any]], schema: dict[str, Any]) -> pl.DataFrame:
    """One batch's column lists as a frame, each column built where it is cheapest.

    Scalar columns go straight into polars (one copy, no Arrow detour). List-of-string columns
    go through pyarrow, which builds them from Python lists several times faster than polars,
    in the *system* allocator: measured on 200k cases, the same arrays built in pyarrow's default
    pool (mimalloc) left ~0.5 GB of freed builder memory resident for good, where glibc's free
    memory is reused by the next batch and goes back after the load
    (:func:`~curate.core.memory.release_freed`).
    """
    series = []
    for name, dtype in schema.items():
        if dtype == _LIST_OF_STR:
            arr = pa.array(columns[name], type=_ARROW_STR_LIST, memory_pool=_SYSTEM_POOL)
            series.append(pl.Series(name, arr))
        else:
            series.append(pl.Series(name, columns[name], dtype=dtype))
    return pl.DataFrame(series)


_SYSTEM_POOL = pa.system_memory_pool()


def _concat(chunks: list[pl.DataFrame], schema: dict[str, Any]) -> pl.DataFrame:
    """The batches' frames as one frame, without copying them (rules read chunked frames)."""
    if not chunks:
        return pl.DataFrame(schema=schema)
    return pl.concat(chunks, rechunk=False)


def detached(value: Any) -> Any:
    """A new int/str equal to ``value``, for keeping beyond its batch.

    Why: the parsed records of a batch are millions of small objects; keeping one of them (the
    case id) pins the memory pages it shares with the rest, so that memory is never reused or
    handed back. Measured on 60k cases: 277 MB kept for the id list alone, none with copies.
    """
    if type(value) is int:
        return int(str(value))
    if type(value) is str:
        return "".join(list(value)) if len(value) > 1 else value
    return value


def add_schema_rows(
    out: list[dict[str, Any]],
    errs: list[dict[str, Any]],
    path: Any,
    batch: Batch,
    i: int,
    row: int,
    rec: str,
) -> None:
    """A rejected record's errors as KE001 rows, each naming the file and line (or index)."""
    where = f"line {batch.lines[i]}" if batch.lines else f"record index {batch.offset + i}"
    for err in errs:
        err["details"].update({"file": str(path), "position": where})
        out.append({"row": row, "record": rec, **err})


def _portable(batch: Batch) -> Batch:
    """What :func:`batch_columns` reads of a batch (bytes or Arrow, split): all an engine task is
    sent — not the parsed rows, nor the reader's closures (which do not pickle)."""
    if batch.blob is not None:
        return Batch(batch.split, batch.offset, arrow=batch.arrow, blob=batch.blob)
    return Batch(batch.split, batch.offset, None, batch.lines, batch.raw, batch.arrow)


def read_ahead(
    batches: Iterator[Batch], pool: Any, row: int, depth: int = 1, keep_codes: bool = False
) -> Iterator[tuple[Batch, Future[Any] | None, int]]:
    """Each batch with its columnar job (None: read record by record) and its first row,
    yielded once the ``depth`` batches after it have been read and their jobs submitted, so
    the jobs overlap the reading and (``depth`` > 1) one another."""
    pending: deque[tuple[Batch, Future[Any] | None, int]] = deque()
    while True:
        try:
            batch = next(batches, None)
        except Exception:
            # an error reading the next batch comes after whatever the batches before raise
            while pending:
                yield pending.popleft()
            raise
        if batch is None:
            break
        job = (
            pool.submit(batch_columns, _portable(batch), row, keep_codes)
            if pool is not None
            else None
        )
        pending.append((batch, job, row))
        row += len(batch)
        if len(pending) > depth:
            yield pending.popleft()
    while pending:
        yield pending.popleft()


def plain_file(path: str | Path) -> Path | None:
    """``path`` when it is a local file read as it is (not standard input, the Hub, a
    ``FOLDER:CONFIG`` or a folder): its hash is then :func:`~curate.io.read.sha256_of` of it."""
    text = str(path)
    if is_stdin(text) or text.startswith(HF_SCHEME):
        return None
    p = Path(text)
    return p if p.is_file() else None


def load_workers(opts: FamilyOptions) -> int:
    """Threads of the columnar path: ``--workers``, else the cores this process may use (at
    most 8)."""
    if isinstance(opts, KEOptions) and opts.workers is not None:
        return opts.workers
    return available_cores()


@functools.cache
def parse_type(id_kind: type) -> pa.StructType | None:
    """The Arrow type the columnar path parses a batch into: every field of the models with
    every optional one (absent → null), case ids of one kind; without the fields that make a
    case irregular (:data:`~.knowledge_editing_columns.IRREGULAR_FIELDS`), so a record holding
    one fails to parse and is read record by record."""
    shape = RecordShape()
    shape.id_types = {id_kind}
    shape.present = set(_OPTIONAL_PATHS) - IRREGULAR_FIELDS
    return declared_type(shape)


def batch_columns(
    batch: Batch, first_row: int, keep_codes: bool = False
) -> tuple[Columns, type] | None:
    """The batch laid out by the columnar path, or None (read it record by record): when the
    bytes or Arrow columns are not at hand, the case ids are not all of one kind, or Arrow
    cannot hold the batch in the declared type."""
    blob = batch.blob
    if blob is not None:
        first_line = blob.data[: blob.data.find(b"\n") + 1 or len(blob.data)]
        try:
            head = orjson.loads(first_line)
        except orjson.JSONDecodeError:
            return None  # the reader's own parse names the line
        first = head.get("case_id") if isinstance(head, dict) else None
    elif batch.raw is not None:
        try:
            head = orjson.loads(batch.raw[0]) if batch.raw else None
        except orjson.JSONDecodeError:
            return None  # the reader's own parse names the line
        first = head.get("case_id") if isinstance(head, dict) else None
    elif batch.arrow is not None and "case_id" in batch.arrow.schema.names:
        t = batch.arrow.schema.field("case_id").type
        first = 0 if pa.types.is_integer(t) else "" if pa.types.is_string(t) else None
    else:
        return None
    id_kind: type = type(first)
    if id_kind not in (int, str):
        return None
    struct = parse_type(id_kind)
    if struct is None:
        return None
    codes = None
    if blob is not None or batch.raw is not None:
        data = blob.data if blob is not None else b"".join(batch.raw or ())
        count = blob.count if blob is not None else len(batch.raw or ())
        table = parse_json(data, count, pa.schema(list(struct)))
        del data
        if table is not None:
            table, codes = json_coded(table, struct, id_kind)
    else:
        # a parquet batch whose coded fields came as dictionaries keeps them as codes
        coded = Codes(id_kind) if has_dictionary(pa.struct(list(batch.arrow.schema))) else None
        conformed = conform(batch.arrow, struct, coded)
        table, codes = conformed if conformed is not None else (None, None)
    if table is None:
        return None
    cols = tables(table, first_row, batch.split, id_kind, codes, keep_codes)
    return (cols, id_kind) if cols is not None else None


def json_coded(
    table: pa.Table, struct: pa.StructType, id_kind: type
) -> tuple[pa.Table, Codes | None]:
    """A parsed JSON batch with the strings of :data:`~.knowledge_editing_columns.CODED_FIELDS`
    as codes (see :class:`~.knowledge_editing_columns.Codes`), as a parquet batch's are; the
    table as it was when they cannot be (a value its field refuses: the record check then sees
    the strings).

    Why: the tables make these fields categories, and a cast looks every value up in the
    process-wide categories (1 M MQuAKE cases: 75 M values, 4.9 M distinct). Coded, each
    field's strings are made distinct per batch by Arrow's hash table first, and only those
    are looked up; the list and struct expressions then carry integers, not strings. The same
    tables come out (tests/test_ke_columnar.py), for ~10 % less CPU laying them out.
    """
    # one chunk (parse_json's): a field's dictionary is one per batch, not one per parse block
    batch = table.to_batches()
    if len(batch) != 1:
        return table, None
    conformed = conform(batch[0], struct, Codes(id_kind))
    return conformed if conformed is not None else (table, None)


#: Input shards per cluster CPU (``--engine ray``): enough that a slow shard or node does not
#: hold up the end, few enough that each task's fixed cost (~10 ms) is noise.
SHARDS_PER_CPU = 4


class StringPool:
    """A Ray worker's strings of one shard: its tables' coded columns (:data:`CODE`) hold
    ``uint32`` indexes into them instead of categories.

    Why: the tables go to the driver, whose categories are its own process's, so the driver
    makes each string a category there whatever the worker did. A worker that made them
    categories too did it twice: for a parquet shard, whose coded fields come as the row
    groups' dictionaries, that cast was a third of the worker's load, plus a pass mapping its
    categories back to strings for the trip (1 M cases: ~9 and ~3 CPU-s over the shards). So
    a batch whose coded fields came as codes (:class:`~.knowledge_editing_columns.Codes`) keeps
    them, its dictionaries' strings appended here (:meth:`add`); any other batch (JSON Lines:
    the values are strings; records pydantic read) makes categories as locally, and
    :meth:`own` maps them to indexes once for the shard.
    """

    __slots__ = ("_parts", "_size")

    def __init__(self) -> None:
        self._parts: list[pa.Array] = []
        self._size = 0

    def add(self, frames: list[pl.DataFrame], strings: pa.Array) -> list[pl.DataFrame]:
        """``frames``, whose coded columns index ``strings``, as indexes into the pool."""
        start = self._size
        self._parts.append(strings)
        self._size += len(strings)
        if not start:
            return frames
        shift = pl.lit(start, dtype=pl.UInt32)
        return [
            f.with_columns(pl.col(c) + shift for c in _code_columns(schema))
            for f, schema in zip(frames, _SHARD_SCHEMAS, strict=True)
        ]

    def own(self, chunks: dict[str, list[pl.DataFrame]]) -> None:
        """The chunks holding categories (see the class), in place, as indexes into the pool:
        each string they use appended once."""
        places = [
            (name, i) for name, fs in chunks.items() for i, f in enumerate(fs) if _code_columns(f)
        ]
        values = [chunks[n][i][c] for n, i in places for c in _code_columns(chunks[n][i])]
        if not values:
            return
        coded = pl.concat(values).drop_nulls()
        # This process's category ids of the values, and a place where each id occurs: the
        # strings used, each once, are the values at those places (array indexing: ~4x less
        # CPU than a unique per column and their union)
        ids = coded.to_physical().to_numpy()
        size = int(ids.max()) + 1 if len(ids) else 0
        where = np.full(size, -1, np.int64)
        where[ids] = np.arange(len(ids))
        used = np.flatnonzero(where >= 0)
        at = np.zeros(size, np.uint32)  # category id → its index in the pool
        at[used] = np.arange(self._size, self._size + len(used), dtype=np.uint32)
        self._parts.append(coded.gather(where[used]).cast(pl.String).to_arrow())
        self._size += len(used)
        index = pl.Series(at)
        for n, i in places:
            f = chunks[n][i]
            chunks[n][i] = f.with_columns(
                index.gather(f[c].to_physical()).alias(c) for c in _code_columns(f)
            )

    def distinct(self) -> tuple[pa.Array, pl.Series | None]:
        """The pool's strings each once (``large_string``), and the pool's indexes as indexes
        into them (None: the same). Why: the row groups' dictionaries repeat a string per field
        and per batch (an entity is a subject, an object, an edit's target): ~400k strings
        for ~130k distinct in a 28k-case MQuAKE shard, and the driver's cast to categories
        costs ~300 ns per string. Arrow's hash table finds them exactly in ~15 ms a shard (a
        64-bit hash ranked, then checked string by string, took ~27 ms)."""
        parts = [p.cast(pa.large_string()) for p in self._parts]
        if not parts:
            return pa.array([], pa.large_string()), None
        strings = pa.concat_arrays(parts)
        coded = pc.dictionary_encode(strings)
        # each once already (in the same order), or a null (not met: dictionaries have none)
        if len(coded.dictionary) == len(strings) or coded.indices.null_count:
            return strings, None
        return coded.dictionary, pl.Series(coded.indices.cast(pa.uint32()))


class Shard:
    """A shard's :class:`KEData` on its way from a Ray worker to the driver.

    Why not the frames themselves: a pickled polars frame carries each coded column's strings
    in full, and the driver coded every value again (~1 CPU-s per 100k cases, the most of
    Ray's cost over the local engine at 1 M cases). Here the tables travel as Arrow, whose
    buffers Ray moves without copying them, the coded columns (:data:`CODE`) as ``uint32``
    indexes into one list of strings for the whole shard, :attr:`strings` (the worker's
    :class:`StringPool`), so the driver makes each of them a category once and gathers the
    codes. (Per column and per batch, as Arrow dictionaries, the same strings came ~3x over:
    an entity is a subject, an object and an edit's target; the cast to categories was ~40 %
    of the driver's load.)
    """

    __slots__ = ("data", "strings", "tables")
    data: KEData
    strings: pa.Array | None
    tables: dict[str, pa.Table]

    def __init__(self, data: KEData, pool: StringPool) -> None:
        self.strings, index = pool.distinct()
        frames = {name: getattr(data, name) for name in _SHARD_TABLES}
        if index is not None:
            at = pl.lit(index)
            frames = {
                name: f.with_columns(at.gather(pl.col(c)).alias(c) for c in _code_columns(schema))
                for (name, f), schema in zip(frames.items(), _SHARD_SCHEMAS, strict=True)
            }
        self.tables = {name: f.to_arrow() for name, f in frames.items()}
        self.data = dataclasses.replace(
            data, **{name: getattr(data, name).clear() for name in _SHARD_TABLES}
        )

    def __getstate__(self) -> tuple[KEData, pa.Array | None, dict[str, pa.Table]]:
        return self.data, self.strings, self.tables

    def __setstate__(self, state: tuple[KEData, pa.Array | None, dict[str, pa.Table]]) -> None:
        self.data, self.strings, self.tables = state

    def unpack(self) -> KEData:
        """The shard's data, its tables as the worker built them (a consumed shard is empty)."""
        categories = pl.Series(self.strings).cast(CODE)  # each string of the shard once
        self.strings = None
        frames: dict[str, Any] = {}  # KEData's table fields, by name
        for name, schema in zip(_SHARD_TABLES, _SHARD_SCHEMAS, strict=True):
            table = self.tables.pop(name)
            frame = pl.from_arrow(table.drop_columns(_dictionary_columns(table)))
            assert isinstance(frame, pl.DataFrame)
            coded = [categories.gather(frame[c]).alias(c) for c in _code_columns(schema)]
            # the enums (``path``): Arrow dictionaries of their few strings
            coded += [
                _categories(table.column(c), schema[c]).alias(c) for c in _dictionary_columns(table)
            ]
            frame = frame.with_columns(coded).select(list(schema))
            # Arrow does not carry polars' note that ``row`` is sorted, which the rules' group-bys
            # and joins on ``row`` rely on to go fast (1 M cases: case_keys 0.7 s with the
            # note, 1.3 s without); checked, not assumed
            if frame["row"].is_sorted():
                frame = frame.with_columns(pl.col("row").set_sorted())
            frames[name] = frame
        return dataclasses.replace(self.data, **frames)


_SHARD_TABLES = ("cases", "hops", "edits")
_SHARD_SCHEMAS = (CASE_SCHEMA, HOP_SCHEMA, EDIT_SCHEMA)


def _uncoded(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with its coded columns as a pooled table holds them (``uint32``)."""
    return {c: pl.UInt32 if t == CODE else t for c, t in schema.items()}


def _code_columns(frame: pl.DataFrame | pl.Schema | dict[str, Any]) -> list[str]:
    """The columns of a table (or of its schema) coded as :data:`CODE` (categories); of a
    table's schema, also the columns a pooled table (see :class:`StringPool`) holds as
    indexes."""
    schema = frame.schema if isinstance(frame, pl.DataFrame) else frame
    return [c for c, t in schema.items() if t == CODE]


def _dictionary_columns(table: pa.Table) -> list[str]:
    return [f.name for f in table.schema if pa.types.is_dictionary(f.type)]


def _categories(col: pa.ChunkedArray, dtype: pl.DataType | DataTypeClass) -> pl.Series:
    """A dictionary column as a coded one (categorical or enum): the chunks' dictionaries
    coded in one cast (each distinct string of a chunk once), then gathered by the indices."""
    run = DictionaryRun()
    codes = [run.add(chunk) for chunk in col.chunks]
    return run.categories(dtype).gather(pl.Series(pa.chunked_array(codes, pa.uint32())))


def taken(
    parts: list[Any], engine: Any, progress: Progress | None
) -> tuple[list[KEData], list[InputInfo]]:
    """The parts of :meth:`~KnowledgeEditingFamily._load_sharded` (in input order) as data,
    taking each input's shards from Ray as they finish, and the inputs read; ``parts`` is
    emptied as it goes, so each shard's tables are held once."""
    datas: list[KEData] = []
    inputs: list[InputInfo] = []
    records = 0
    while parts:
        part = parts.pop(0)
        if isinstance(part, KEData):
            datas.append(part)
            inputs.extend(part.inputs)
            records += part.inputs[0].records
            continue
        path, fmt, refs, digest = part
        del part
        n_file = 0
        splits: dict[str, int] = {}
        name = Path(str(path)).name
        for shard in engine.gather(refs, label=f"shards of {name}"):
            data = shard.unpack()
            del shard
            (info,) = data.inputs
            n_file += info.records
            for split, n in info.splits.items():
                splits[split] = splits.get(split, 0) + n
            datas.append(data)
            if progress:
                progress(f"read {name}", records + n_file)
        try:
            hexdigest = digest if isinstance(digest, str) else digest.result()
        except OSError as e:  # as open_source says it
            raise InputError(f"cannot read ({e.strerror or e})", path=Path(str(path))) from None
        inputs.append(InputInfo(str(path), hexdigest, n_file, fmt, splits))
        records += n_file
    return datas, inputs


def merged_shards(
    family: str, parts: list[KEData], inputs: list[InputInfo], encoding: str | None
) -> KEData:
    """The parts of :meth:`~KnowledgeEditingFamily._load_sharded` (shards and whole inputs,
    in input order, rows numbered across them) as the one :class:`KEData` :meth:`~
    KnowledgeEditingFamily._load` builds from the same inputs."""
    layouts: dict[str, int] = {}
    shape = RecordShape()
    all_ids: list[Any] = []
    for d in parts:
        for layout, n in d.stats["layouts"].items():
            layouts[layout] = layouts.get(layout, 0) + n
        s = d.shape
        shape.present |= s.present
        shape.id_types |= s.id_types
        shape.irregular = shape.irregular or s.irregular
        shape.carried |= s.carried
        all_ids.extend(d.all_ids)
    cases = _concat([d.cases for d in parts], CASE_SCHEMA)
    hops = _concat([d.hops for d in parts], HOP_SCHEMA)
    edits = _concat([d.edits for d in parts], EDIT_SCHEMA)
    marks = _concat([d.marks for d in parts], MARK_SCHEMA)
    schema = pl.concat([d.schema_findings for d in parts])
    return KEData(
        family=family,
        inputs=inputs,
        schema_findings=schema,
        cases=cases,
        hops=hops,
        edits=edits,
        all_ids=all_ids,
        stats={
            "layouts": layouts,
            "valid_cases": cases.height,
            "records": sum(i.records for i in inputs),
        },
        encoding=encoding,
        marks=marks,
        shape=shape,
    )


def validate_record(
    raw: dict[str, Any],
) -> tuple[str | None, MQuAKECase | None, list[dict[str, Any]]]:
    """Validate one raw record; returns (layout, case or None, error dicts)."""
    layout = layout_of(raw)
    if layout is None:
        return (
            None,
            None,
            [
                {
                    "field": "",
                    "message": "record matches neither MQuAKE layout (no 'orig' object, no "
                    "'orig_triples'/'new_triples', no requested_rewrite targets)",
                    "details": {"keys": sorted(map(str, raw))[:20]},
                }
            ],
        )
    try:
        if layout == "original":
            return layout, MQuAKECase.model_validate(raw), []
        return layout, RemasteredCase.model_validate(raw).to_case(), []
    except ValidationError as e:
        errs = []
        for err in e.errors(include_url=False):
            inp = err.get("input")
            shown = inp if isinstance(inp, str | int | float | bool | type(None)) else None
            errs.append(
                {
                    "field": field_path(err["loc"]),
                    "message": err["msg"],
                    "details": {"type": err["type"], "input": shown, "layout": layout},
                }
            )
        return layout, None, errs
