"""The knowledge-editing family (MQuAKE and MQuAKE-Remastered): reader, registration, export.

Schema: :mod:`curate.schemas.knowledge_editing`; tables:
:mod:`curate.schemas.knowledge_editing_tables`; rules, edit sets and fixes:
:mod:`curate.audits.knowledge_editing`.

The input is read a batch at a time and laid out as the three columnar tables (``cases``,
``hops``, ``edits``) of :class:`~curate.schemas.knowledge_editing_tables.KEData` that the rules join
and group over. A batch of original-layout records takes the columnar path
(:mod:`curate.families.knowledge_editing_columns`: Arrow parses it, a check derived from the models
vouches for records, polars lays out the tables); every record the check cannot vouch for, and
every batch that path cannot hold (the Remastered layout, fields beyond the models, ...), is
validated one by one with pydantic, so each defect names its record and field exactly as before.
With ``keep_records`` (fix, export) every record is validated one by one.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import hashlib
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import numpy as np
import orjson
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ValidationError

from curate.audits.knowledge_editing import RULES
from curate.audits.knowledge_editing.contamination import edit_set_from_data, edited_table
from curate.core.dataset import ChangeEntry, LoadedDataset
from curate.core.engine import available_cores
from curate.core.engine import current as current_engine
from curate.core.errors import InputError, UsageError, arg, field_path
from curate.core.findings import Headline, InputInfo, Report, dumps
from curate.core.fixes import BOOKKEEPING, RECORD, ROW, SPLIT
from curate.core.options import FamilyOptions
from curate.core.rules import AuditContext
from curate.core.streams import SplitStream, small_types
from curate.families.base import CardDefaults, Family, Progress, check_not_blank, no_records
from curate.families.hints import hinted, not_this_family
from curate.families.knowledge_editing_columns import (
    CODED_FIELDS,
    IRREGULAR_FIELDS,
    Codes,
    Columns,
    DictionaryRun,
    conform,
    has_dictionary,
    parse_json,
    tables,
)
from curate.io.read import open_source, sha256_of
from curate.io.records import HF_SCHEME, Batch, is_stdin
from curate.io.sniff import Probe
from curate.io.spans import Span, SpanNumbering, input_spans
from curate.schemas.knowledge_editing import (
    KEOptions,
    MQuAKECase,
    RemasteredCase,
    layout_of,
    record_id,
)
from curate.schemas.knowledge_editing_tables import (
    CASE_SCHEMA,
    CODE,
    EDIT_SCHEMA,
    FACT_KEYS,
    HOP_SCHEMA,
    MARK_SCHEMA,
    QUESTION_KEYS,
    REBUILDABLE,
    KEData,
    arrow_type_error,
    only_input,
    records_to_arrow,
    remastered_batch,
    remastered_schema,
    struct_array,
    unify_struct_types,
)

_INT64 = range(-(2**63), 2**63)
#: The models' optional fields (``None`` by default, left out of a record by ``exclude_none``)
#: whose presence :class:`_Shape` notes, as dotted paths through the models.
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


class _Shape:
    """What the exported cases' one Arrow type depends on, noted case by case while validating.

    The export declares one Arrow type before its first batch. The schema models fix most of it
    (:func:`_declared_type`); the data decides the rest: which optional fields occur at all (a
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
        self.irregular = False
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

    def fits(self, declared: _Shape) -> bool:
        """Does a batch noted here fit the type declared from ``declared``?"""
        return (
            not self.irregular
            and self.present <= declared.present
            and self.id_types <= declared.id_types
        )


class _Undeclared(Exception):
    """A part of the models :func:`_declared_type` cannot type from the models alone."""


def _declared_type(shape: _Shape) -> pa.StructType | None:
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


def _model_struct(model: type[BaseModel], prefix: str, shape: _Shape) -> pa.StructType:
    fields = []
    for name, info in model.model_fields.items():
        path = prefix + name
        if not info.is_required() and info.default is None:
            if path not in _OPTIONAL_PATHS:  # a new optional field _Shape does not watch
                raise _Undeclared(path)
            if path not in shape.present:
                continue
        fields.append(pa.field(info.alias or name, _arrow_of(info.annotation, path, shape)))
    return pa.struct(fields)


def _arrow_of(annotation: Any, path: str, shape: _Shape) -> pa.DataType:
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


class _TableBuilder:
    """Accumulates column lists; one pass per case, no per-pair work.

    :meth:`flush` (after each input batch) turns the gathered rows into frames: Python lists of
    Python strings cost several times what the same columns take in polars, and the memory they
    held is seldom handed back to the system, so the lists must not grow with the file.
    """

    def __init__(self, strings: _StringPool | None = None) -> None:
        self.chunks: dict[str, list[pl.DataFrame]] = {"cases": [], "hops": [], "edits": []}
        self.shape = _Shape()
        #: A Ray worker's (see :class:`_StringPool`): coded columns as indexes into it.
        self.strings = strings
        self._reset()

    def _reset(self) -> None:
        self.cases: dict[str, list] = {k: [] for k in CASE_SCHEMA}
        self.hops: dict[str, list] = {k: [] for k in HOP_SCHEMA}
        self.edits: dict[str, list] = {k: [] for k in EDIT_SCHEMA}

    def flush(self) -> None:
        for name, columns, schema in (
            ("cases", self.cases, CASE_SCHEMA),
            ("hops", self.hops, HOP_SCHEMA),
            ("edits", self.edits, EDIT_SCHEMA),
        ):
            if columns["row"]:
                self.chunks[name].append(_frame(columns, schema))
        self._reset()

    def add_columns(self, cols: Columns, drop: list[int], id_kind: type) -> None:
        """A batch the columnar path laid out (:mod:`.knowledge_editing_columns`), less the
        rows of ``drop`` (records pydantic rejected)."""
        self.flush()
        frames = [cols.cases, cols.hops, cols.edits]
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
        schemas = (CASE_SCHEMA, HOP_SCHEMA, EDIT_SCHEMA)
        if self.strings is not None:
            self.strings.own(self.chunks)
            schemas = tuple(_uncoded(s) for s in schemas)  # type: ignore[assignment]
        return (
            _concat(self.chunks.pop("cases"), schemas[0]),
            _concat(self.chunks.pop("hops"), schemas[1]),
            _concat(self.chunks.pop("edits"), schemas[2]),
        )


_LIST_OF_STR = pl.List(pl.String)
#: Arrow type of the list-of-string columns: polars reads ``large_list<string_view>`` without a
#: copy (its own layout), where ``large_list<large_string>`` is converted and kept twice.
_ARROW_STR_LIST = pa.large_list(pa.string_view())


def _frame(columns: dict[str, list], schema: dict[str, Any]) -> pl.DataFrame:
    """One batch's column lists as a frame, each column built where it is cheapest.

    Scalar columns go straight into polars (one copy, no Arrow detour). List-of-string columns
    go through pyarrow, which builds them from Python lists several times faster than polars,
    in the *system* allocator: measured on 200k cases, the same arrays built in pyarrow's default
    pool (mimalloc) left ~0.5 GB of freed builder memory resident for good, where glibc's free
    memory is reused by the next batch and goes back with :func:`_release_freed` after the load.
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


def _release_freed() -> None:
    """Hand glibc's free memory back to the system (``malloc_trim``), where there is glibc.

    Why: the batches' Python objects and Arrow builders are freed after each batch, and glibc
    keeps freed memory in its heaps for the next batch; once the load is over, that memory would
    stay resident beside the live tables while the rules run. Called once per load, not per batch
    (per batch it doubled the load's time at 1 M cases for 3 % less peak;
    bench/history/RESULTS-log-2026.md).
    """
    if _TRIM is not None:
        _TRIM(0)


def _malloc_trim() -> Any:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim
        return None


_TRIM = _malloc_trim()


def _concat(chunks: list[pl.DataFrame], schema: dict[str, Any]) -> pl.DataFrame:
    """The batches' frames as one frame, without copying them (rules read chunked frames)."""
    if not chunks:
        return pl.DataFrame(schema=schema)
    return pl.concat(chunks, rechunk=False)


def _detached(value: Any) -> Any:
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


def _schema_rows(
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
    """What :func:`_columns` reads of a batch (bytes or Arrow, split): all an engine task is
    sent — not the parsed rows, nor the reader's closures (which do not pickle)."""
    if batch.blob is not None:
        return Batch(batch.split, batch.offset, arrow=batch.arrow, blob=batch.blob)
    return Batch(batch.split, batch.offset, None, batch.lines, batch.raw, batch.arrow)


def _ahead(
    batches: Iterator[Batch], pool: Any, row: int, depth: int = 1, keep_codes: bool = False
) -> Iterator[tuple[Batch, Future | None, int]]:
    """Each batch with its columnar job (None: read record by record) and its first row,
    yielded once the ``depth`` batches after it have been read and their jobs submitted, so
    the jobs overlap the reading and (``depth`` > 1) one another."""
    pending: deque[tuple[Batch, Future | None, int]] = deque()
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
        job = pool.submit(_columns, _portable(batch), row, keep_codes) if pool is not None else None
        pending.append((batch, job, row))
        row += len(batch)
        if len(pending) > depth:
            yield pending.popleft()
    while pending:
        yield pending.popleft()


def _plain_file(path: str | Path) -> Path | None:
    """``path`` when it is a local file read as it is (not standard input, the Hub, a
    ``FOLDER:CONFIG`` or a folder): its hash is then :func:`~curate.io.read.sha256_of` of it."""
    text = str(path)
    if is_stdin(text) or text.startswith(HF_SCHEME):
        return None
    p = Path(text)
    return p if p.is_file() else None


def _workers(opts: FamilyOptions) -> int:
    """Threads of the columnar path: ``--workers``, else the cores this process may use (at
    most 8)."""
    if isinstance(opts, KEOptions) and opts.workers is not None:
        return opts.workers
    return available_cores()


@functools.cache
def _parse_type(id_kind: type) -> pa.StructType | None:
    """The Arrow type the columnar path parses a batch into: every field of the models with
    every optional one (absent → null), case ids of one kind; without the fields that make a
    case irregular (:data:`~.knowledge_editing_columns.IRREGULAR_FIELDS`), so a record holding
    one fails to parse and is read record by record."""
    shape = _Shape()
    shape.id_types = {id_kind}
    shape.present = set(_OPTIONAL_PATHS) - IRREGULAR_FIELDS
    return _declared_type(shape)


def _columns(batch: Batch, first_row: int, keep_codes: bool = False) -> tuple[Columns, type] | None:
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
    id_kind = type(first)
    if id_kind not in (int, str):
        return None
    struct = _parse_type(id_kind)
    if struct is None:
        return None
    codes = None
    if blob is not None:
        table = parse_json(blob.data, blob.count, pa.schema(list(struct)))
    elif batch.raw is not None:
        table = parse_json(b"".join(batch.raw), len(batch.raw), pa.schema(list(struct)))
    else:
        # a parquet batch whose coded fields came as dictionaries keeps them as codes
        coded = Codes(id_kind) if has_dictionary(pa.struct(list(batch.arrow.schema))) else None
        conformed = conform(batch.arrow, struct, coded)
        table, codes = conformed if conformed is not None else (None, None)
    if table is None:
        return None
    cols = tables(table, first_row, batch.split, id_kind, codes, keep_codes)
    return (cols, id_kind) if cols is not None else None


#: Input shards per cluster CPU (``--engine ray``): enough that a slow shard or node does not
#: hold up the end, few enough that each task's fixed cost (~10 ms) is noise.
SHARDS_PER_CPU = 4


def _load_span(span: Span, first_row: int, encoding: str | None) -> _Shard:
    """One input shard read, validated and laid out where the task runs: :meth:`~
    KnowledgeEditingFamily._load` over the span, its columnar parsing on one thread beside
    the reading (a task holds one CPU), its coded columns as indexes into the shard's
    strings (:class:`_StringPool`)."""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as load() does
    try:
        strings = _StringPool()
        data = FAMILY._load(
            [span],
            progress=None,
            keep_records=False,
            encoding=encoding,
            workers=1,
            first_row=first_row,
            strings=strings,
        )
        return _Shard(data, strings)
    finally:
        if gc_was_enabled:
            gc.enable()


class _StringPool:
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


class _Shard:
    """A shard's :class:`KEData` on its way from a Ray worker to the driver.

    Why not the frames themselves: a pickled polars frame carries each coded column's strings
    in full, and the driver coded every value again (~1 CPU-s per 100k cases, the most of
    Ray's cost over the local engine at 1 M cases). Here the tables travel as Arrow, whose
    buffers Ray moves without copying them, the coded columns (:data:`CODE`) as ``uint32``
    indexes into one list of strings for the whole shard, :attr:`strings` (the worker's
    :class:`_StringPool`), so the driver makes each of them a category once and gathers the
    codes. (Per column and per batch, as Arrow dictionaries, the same strings came ~3x over:
    an entity is a subject, an object and an edit's target; the cast to categories was ~40 %
    of the driver's load.)
    """

    __slots__ = ("data", "strings", "tables")

    def __init__(self, data: KEData, pool: _StringPool) -> None:
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

    def __getstate__(self) -> tuple[KEData, pa.Array, dict[str, pa.Table]]:
        return self.data, self.strings, self.tables

    def __setstate__(self, state: tuple[KEData, pa.Array, dict[str, pa.Table]]) -> None:
        self.data, self.strings, self.tables = state

    def unpack(self) -> KEData:
        """The shard's data, its tables as the worker built them (a consumed shard is empty)."""
        categories = pl.Series(self.strings).cast(CODE)  # each string of the shard once
        self.strings = None
        frames = {}
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
    table's schema, also the columns a pooled table (see :class:`_StringPool`) holds as
    indexes."""
    schema = frame.schema if isinstance(frame, pl.DataFrame) else frame
    return [c for c, t in schema.items() if t == CODE]


def _dictionary_columns(table: pa.Table) -> list[str]:
    return [f.name for f in table.schema if pa.types.is_dictionary(f.type)]


def _categories(col: pa.ChunkedArray, dtype: pl.DataType) -> pl.Series:
    """A dictionary column as a coded one (categorical or enum): the chunks' dictionaries
    coded in one cast (each distinct string of a chunk once), then gathered by the indices."""
    run = DictionaryRun()
    codes = [run.add(chunk) for chunk in col.chunks]
    return run.categories(dtype).gather(pl.Series(pa.chunked_array(codes, pa.uint32())))


def _taken(
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


def _merged(parts: list[KEData], inputs: list[InputInfo], encoding: str | None) -> KEData:
    """The parts of :meth:`~KnowledgeEditingFamily._load_sharded` (shards and whole inputs,
    in input order, rows numbered across them) as the one :class:`KEData` :meth:`~
    KnowledgeEditingFamily._load` builds from the same inputs."""
    layouts: dict[str, int] = {}
    shape = _Shape()
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
        family=FAMILY.name,
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


def validate_record(raw: dict[str, Any]) -> tuple[str | None, MQuAKECase | None, list[dict]]:
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


class KnowledgeEditingFamily(Family):
    name = "knowledge-editing"
    aliases = ("mquake", "ke")
    card = CardDefaults(
        title="Multi-hop knowledge editing (MQuAKE, MQuAKE-Remastered)",
        license="mit",
        task_categories=("question-answering",),
    )
    Options = KEOptions
    #: Only KE001 (the schema) is an invalid rule: see its declaration.
    rules = RULES
    #: ``curate overlap`` keys: ``fact`` (the edit triples: an edit in two datasets is the
    #: same counterfactual) and ``question`` (the multi-hop questions, normalised as KE402
    #: compares them; text, so ``--near-duplicates`` applies).
    keys = (FACT_KEYS, QUESTION_KEYS)

    def read(
        self,
        paths: list[str | Path],
        options: FamilyOptions,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
    ) -> KEData:
        # Loading allocates millions of small objects and creates no cycles: the cyclic GC
        # would rescan them over and over (measured: 40% of load time), so pause it.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        engine = current_engine()
        # --engine ray: whole input shards read by the workers (see _load_sharded)
        loader = self._load if keep_records or engine.is_local() else self._load_sharded
        try:
            data = loader(
                paths,
                progress=progress,
                keep_records=keep_records,
                encoding=encoding,
                workers=_workers(options),
            )
            return data
        finally:
            if gc_was_enabled:
                gc.enable()

    def _load(
        self,
        paths: Sequence[str | Path],
        *,
        progress: Progress | None,
        keep_records: bool,
        encoding: str | None = None,
        workers: int = 1,
        first_row: int = 0,
        strings: _StringPool | None = None,
    ) -> KEData:
        """The inputs' tables, rows numbered from ``first_row``; a :class:`~curate.io.spans.Span`
        among ``paths`` is read as one shard of its file (no hash, may hold no record).
        ``strings`` (a Ray worker's): the coded columns as indexes into it, not categories."""
        builder = _TableBuilder(strings)
        schema_rows: list[dict[str, Any]] = []
        inputs: list[InputInfo] = []
        all_ids: list[Any] = []
        records: dict[int, MQuAKECase] = {}
        invalid: dict[int, dict[str, Any]] = {}
        marks: list[tuple[int, bool | None, list[str]]] = []
        layouts: dict[str, int] = {}
        row = first_row
        # The columnar path (see _columns) runs in ``workers`` threads, that many batches ahead
        # of the loop below: Arrow's parser and polars work without the GIL, so the batches are
        # parsed and laid out on every core while the next ones are read. Threads, not
        # processes: the tables (categoricals share one process-wide dictionary) are made where
        # they are used, and nothing is copied between processes. On Ray (--engine ray) the
        # same jobs are Ray tasks, one in flight per cluster CPU.
        engine = current_engine()
        if keep_records:
            pool, depth = None, 1
        elif engine.is_local():
            pool, depth = ThreadPoolExecutor(workers), workers
        else:
            pool, depth = engine.submitter(lambda: ThreadPoolExecutor(1)), engine.parallelism(1)
        try:
            for path in paths:
                span = path if isinstance(path, Span) else None
                if span is None:
                    check_not_blank(path)
                # A local file's hash is taken beside the parsing (hashlib works without the
                # GIL) instead of in a pass of its own before it.
                local = (
                    _plain_file(path)
                    if span is None and pool is not None and engine.is_local()
                    else None
                )
                # the columnar path takes the coded fields as parquet stores them (see Codes)
                coded = CODED_FIELDS if pool is not None else ()
                try:
                    src = (
                        span.open(coded)
                        if span is not None
                        else open_source(
                            path, encoding=encoding, hash_input=local is None, dictionary=coded
                        )
                    )
                except InputError as e:
                    if e.message.startswith("unknown file type"):  # an HDF5 file, say
                        raise hinted(e, self, str(path)) from None
                    raise
                digest = (
                    pool.submit(sha256_of, local)
                    if pool is not None and local is not None
                    else None
                )
                n_file = 0
                splits: dict[str, int] = {}
                for batch, job, first in _ahead(
                    src.batches, pool, row, depth, keep_codes=strings is not None
                ):
                    assert first == row, (first, row)
                    cols = job.result() if job is not None else None
                    if n_file == 0 and (span is None or span.first_index == 0):
                        self._check_first_batch(path, batch, cols)
                    if cols is not None:
                        columns, id_kind = cols
                        drop = []
                        ids = columns.ids
                        for i in columns.unsure:
                            # the check could not vouch for it: pydantic decides, as before
                            raw = batch.rows[i]
                            rec = record_id(raw, row + i)
                            ids[i] = _detached(raw.get("case_id", rec))
                            _, case, errs = validate_record(raw)
                            if case is None:
                                _schema_rows(schema_rows, errs, src.path, batch, i, row + i, rec)
                                drop.append(row + i)
                        # A record that parsed in the declared type and validates is a case
                        # in the original layout (a Remastered field would not have parsed).
                        layouts["original"] = layouts.get("original", 0) + len(ids) - len(drop)
                        all_ids.extend(ids)
                        builder.add_columns(columns, drop, id_kind)
                        n = len(ids)
                        row += n
                        n_file += n
                        if batch.split is not None:
                            splits[batch.split] = splits.get(batch.split, 0) + n
                    else:
                        for i, raw in enumerate(batch.rows):
                            rec = record_id(raw, row)
                            all_ids.append(_detached(raw.get("case_id", rec)))
                            layout, case, errs = validate_record(raw)
                            if case is None:
                                _schema_rows(schema_rows, errs, src.path, batch, i, row, rec)
                                if keep_records:
                                    invalid[row] = raw
                            else:
                                layouts[layout] = layouts.get(layout, 0) + 1
                                builder.add(row, rec, batch.split, layout, case)
                                if case.edited is not None or case.withheld_edits:
                                    marks.append(_marks(row, case))
                                if keep_records:
                                    records[row] = case
                            if batch.split is not None:
                                splits[batch.split] = splits.get(batch.split, 0) + 1
                            row += 1
                            n_file += 1
                    builder.flush()
                    del batch, cols
                    if progress:
                        progress(f"read {src.path.name}", row)
                if n_file == 0 and span is None:  # one empty input among several is broken
                    raise no_records(path)
                try:
                    sha = digest.result() if digest is not None else src.sha256
                except OSError as e:  # as open_source says it
                    raise InputError(f"cannot read ({e.strerror or e})", path=src.path) from None
                inputs.append(InputInfo(str(path), sha, n_file, src.format, splits))
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        cases, hops, edits = builder.frames()
        # Once, after the last batch: glibc reuses a batch's freed memory for the next one, so
        # the resident size plateaus while reading; trimming after every batch handed the same
        # pages back and faulted them in again (1 M cases: 68 s → 34 s of load, 5.8 M → 2.7 M
        # page faults, peak RSS 2.43 → 2.51 GiB; bench/history/RESULTS-log-2026.md).
        _release_freed()
        from curate.core.findings import rule_output

        marks_frame = pl.DataFrame(marks, schema=MARK_SCHEMA, orient="row")

        schema = rule_output(schema_rows)
        return KEData(
            family=self.name,
            inputs=inputs,
            schema_findings=schema,
            cases=cases,
            hops=hops,
            edits=edits,
            all_ids=all_ids,
            records=records,
            invalid=invalid,
            stats={"layouts": layouts, "valid_cases": cases.height, "records": row - first_row},
            encoding=encoding,
            marks=marks_frame,
            shape=builder.shape,
        )

    def _check_first_batch(self, path: Any, batch: Any, cols: Any) -> None:
        """Refuse an input none of whose first batch's records has a MQuAKE layout (exit 2,
        naming the family it looks like): a table of another family, not damaged cases."""
        if cols is not None and len(cols[0].unsure) < len(batch):
            return  # the columnar check vouched for some records: cases in the original layout
        rows = batch.rows
        if not rows or any(isinstance(r, dict) and layout_of(r) is not None for r in rows):
            return
        keys = dict.fromkeys(str(k) for r in rows if isinstance(r, dict) for k in r)
        raise not_this_family(
            self,
            str(path),
            "the MQuAKE layout",
            keys=keys,
            why="no 'orig' object, no 'orig_triples'/'new_triples', no requested_rewrite targets",
        )

    def sniff(self, probe: Probe) -> str | None:
        """A JSON/parquet input whose records carry a MQuAKE layout's own keys."""
        if {"requested_rewrite", "orig", "orig_triples", "new_triples"} & probe.keys:
            return "a MQuAKE (knowledge editing) file"
        return None

    def _load_sharded(
        self,
        paths: Sequence[str | Path],
        *,
        progress: Progress | None,
        keep_records: bool,
        encoding: str | None = None,
        workers: int = 1,
    ) -> KEData:
        """:meth:`_load` on a cluster (``--engine ray``): whole input shards read by the workers.

        Each input that splits soundly (:func:`~curate.io.spans.input_spans`: an uncompressed UTF-8
        JSON Lines file by byte ranges at line boundaries, a parquet file by row groups) is
        read, validated and laid out by one Ray task per shard (:func:`_load_span`: the local
        reader over the shard), which opens the file itself and returns the shard's compact
        tables and findings; the driver only reads the file to hash it, beside the tasks.
        Rows, line numbers and record indexes are those of the whole file: a parquet shard
        learns where it starts from the footer, a JSON Lines shard from the newlines and blank
        lines before it, counted here in the same sequential read that hashes the file
        (:class:`~curate.io.spans.SpanNumbering`; each shard is sent as soon as the read has passed
        its start, so the workers start at once). The parts are put together in input order
        (:func:`_merged`), so the rules see the tables :meth:`_load` builds, row for row; the
        coded columns are decoded and coded again in this process as each part arrives. Any
        other input (a JSON array, compressed, standard input, the Hub, a folder) is read here
        by :meth:`_load`, its batches' columnar parsing as Ray tasks. Errors come in input
        order, as locally: one raised here for an input waits for the shards of the inputs
        before it, whose own error comes first.
        """
        engine = current_engine()
        parts: list[Any] = []  # per input: its KEData, or (path, format, task refs, hash)
        hasher = ThreadPoolExecutor(1)
        row = 0
        try:
            for path in paths:
                try:
                    part, records = self._send(path, row, engine, hasher, encoding)
                    if part is None:
                        part = self._load(
                            [path],
                            progress=progress,
                            keep_records=keep_records,
                            encoding=encoding,
                            workers=workers,
                            first_row=row,
                        )
                        records = part.inputs[0].records
                except BaseException:
                    _taken(parts, engine, progress)  # an earlier input's error comes first
                    raise
                parts.append(part)
                row += records
            datas, inputs = _taken(parts, engine, progress)
        finally:
            hasher.shutdown(cancel_futures=True)
        return _merged(datas, inputs, encoding)

    @staticmethod
    def _send(
        path: str | Path, row: int, engine: Any, hasher: ThreadPoolExecutor, encoding: str | None
    ) -> tuple[Any, int]:
        """One input's shards sent as Ray tasks, rows numbered from ``row``: ``((path, format,
        task refs, hash or hash job), records)``; ``(None, 0)`` when it is read on the driver."""
        check_not_blank(path)
        spans = input_spans(path, encoding, SHARDS_PER_CPU * engine.parallelism(1))
        if spans is None:
            return None, 0
        remote = engine.remote(_load_span)
        digest: str | Future
        if spans[0].format == "jsonl":
            sha = hashlib.sha256()
            numbering = SpanNumbering(spans, sha)
            try:
                refs = [remote.remote(s, row + s.first_index, encoding) for s in numbering]
            except OSError as e:  # as open_source says it
                raise InputError(f"cannot read ({e.strerror or e})", path=Path(str(path))) from None
            if not numbering.records:  # an empty file: the local reader says so, its way
                return None, 0
            digest, records = sha.hexdigest(), numbering.records
        else:
            digest = hasher.submit(sha256_of, Path(str(path)))
            refs = [remote.remote(s, row + s.first_index, encoding) for s in spans]
            records = sum(s.records or 0 for s in spans)
        return (path, spans[0].format, refs, digest), records

    # ----------------------------------------------------------------- edit sets

    def summarise(self, report: Report, ctx: AuditContext) -> None:
        """The edit-set contamination figures a reader checks first."""
        f = report.findings
        contaminated = {
            # distinct rows, not ids: one row is one case, and integers count faster
            code: f.filter(pl.col("rule") == code)["row"].n_unique()
            for code in ("KE201", "KE202")
            if code in report.rules_run
        }
        edited: pl.Series = ctx.table("edited")
        n_edited = int(edited.sum()) if edited.len() else 0
        data: KEData = ctx.data
        spec = ctx.options.edit_set
        extra: dict[str, Any] = {}
        if edit_set_from_data(data):
            extra["from"] = "the cases' edited flags (written by curate fix)"
            if "edit_set" in ctx.options.model_fields_set:
                extra["ignored"] = f"--edit-set {spec}: the data carries its own edit set"
            spec = "edited flags (curate fix)"
            report.options["edit_set"] = spec
        report.stats["edit_set"] = {
            "spec": spec,
            "edited_cases": n_edited,
            "unedited_cases": edited.len() - n_edited,
            **extra,
        }
        if contaminated:
            report.stats["contamination"] = {
                "edit_set": spec,
                "edited_cases": n_edited,
                "edited_contaminated": contaminated.get("KE201"),
                "unedited_cases": edited.len() - n_edited,
                "unedited_contaminated": contaminated.get("KE202"),
            }
            c = report.stats["contamination"]
            report.headlines.append(
                Headline(
                    f"edit set {{}}: {c['edited_contaminated']} of {c['edited_cases']} edited "
                    f"and {c['unedited_contaminated']} of {c['unedited_cases']} unedited cases "
                    "contaminated",
                    (str(spec),),
                    label="edit set",
                )
            )

    # ----------------------------------------------------------------- export / fix
    def plots(self, data: LoadedDataset, report: Report, ctx: AuditContext) -> list[Any]:
        """Hops per case per split, edits per case in and out of the edit set."""
        from curate.families.knowledge_editing_plots import ke_plots

        assert isinstance(data, KEData)
        return ke_plots(data, report, ctx)

    def to_tables(self, data: LoadedDataset) -> dict[str, SplitStream]:
        """The valid cases per split, as streams of record batches in the output layout
        (:func:`output_layout`: ``--layout``, else the input's own).

        Why streams re-read from the inputs: keeping every validated case (pydantic objects)
        and one list of dicts for the whole export took 10.7 GB for 200k cases. Here the inputs
        are read again a batch at a time, each record validated with the schema models
        (:func:`validate_record`), invalid ones skipped (KE001 and any row
        :meth:`invalid_records` names: nothing invalid is published), and each batch turned into
        Arrow on its own, with the one Arrow type of all batches declared from the schema models
        (:func:`_declared_type`, from what the load noted about the cases). Only cases the models
        cannot type (extra fields, the Remastered ``split`` map, ...) need a first pass that
        infers the type from the records themselves. Memory follows the batch. In the
        Remastered layout each batch is then rearranged column by column
        (:func:`~curate.schemas.knowledge_editing_tables.remastered_batch`).
        """
        assert isinstance(data, KEData)
        layout = output_layout(data)
        counts: dict[str, int] = {}
        for split in data.cases["split"].fill_null("train").to_list():
            counts[split] = counts.get(split, 0) + 1
        skip = set(self.invalid_records(data)["row"].drop_nulls().to_list())
        paths = [i.path for i in data.inputs]
        encoding = data.encoding
        declared = data.shape
        struct_type = _declared_type(declared) if declared is not None else None
        if struct_type is None:
            declared = None
            types = [
                arr.type
                for _, _, rows in _valid_batches(paths, skip, encoding, None)
                if (arr := struct_array(rows, only_input(data))) is not None
            ]
            struct_type = unify_struct_types(types)
        schema = pa.schema(list(struct_type))
        carried = _carried(data)
        out_schema = remastered_schema(schema, carried) if layout == "remastered" else schema

        def laid_out(parts: list[pa.Array]) -> pa.RecordBatch:
            batch = _record_batch(parts)
            return remastered_batch(batch, carried) if layout == "remastered" else batch

        def stream(split: str):
            def batches():
                # One record batch per input batch, converted a chunk at a time (see
                # :func:`_valid_batches`).
                parts: list[pa.Array] = []
                current = None
                for n, _, rows in _valid_batches(paths, skip, encoding, split, declared):
                    if n != current and parts:
                        yield laid_out(parts)
                        parts = []
                    current = n
                    try:
                        parts.append(pa.array(rows, type=struct_type))
                    except (OverflowError, pa.ArrowException) as e:
                        raise arrow_type_error(e, rows, only_input(data)) from None
                if parts:
                    yield laid_out(parts)

            return SplitStream(out_schema, batches, counts[split])

        return {split: stream(split) for split in counts}

    def output_note(self, data: LoadedDataset) -> str:
        """The card's (and croissant's) word on the layout the cases are written in."""
        assert isinstance(data, KEData)
        return layout_note(data)

    # The fix engine (curate.core.fixes) applies the findings' edits; the family lays the records
    # out.
    def fix_frame(
        self, data: LoadedDataset, invalid: pl.DataFrame
    ) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """Every valid case in the original layout, plus the two columns a fixed MQuAKE carries:
        ``edited`` (is the case in the edit set this was fixed for) and ``withheld_edits`` (the
        edits of other cases to leave out when asking it; KE201/KE202 fill them).

        Records an invalid rule names are left out and logged whole, as read. Needs the data
        loaded with ``keep_records=True``.
        """
        assert isinstance(data, KEData)
        bad = invalid.unique("row", keep="first", maintain_order=True)
        changes = [
            ChangeEntry(
                r["record"],
                "",
                data.invalid.get(r["row"]),
                None,
                r["rule"],
                f"dropped: invalid record ({r['field']}: {r['message']})",
            )
            for r in bad.iter_rows(named=True)
        ]
        skip = set(bad["row"].drop_nulls().to_list())
        cases = data.cases.select("row", "record", pl.col("split").fill_null("train"))
        edited = _edited(data)
        keep = [r for r in cases["row"].to_list() if r not in skip and r in data.records]
        rows = [data.records[r].to_original() for r in keep]
        if not rows:
            return pl.DataFrame(
                schema={ROW: pl.Int64, RECORD: pl.String, SPLIT: pl.String}
            ), changes
        frame = pl.from_arrow(records_to_arrow(rows, only_input(data)))
        assert isinstance(frame, pl.DataFrame)
        flags = dict(zip(cases["row"].to_list(), edited.to_list(), strict=True))
        meta = cases.filter(pl.col("row").is_in(keep))
        id_type = frame.schema["case_id"]
        withheld_type = pl.List(
            pl.Struct({"case_id": id_type, "edit_index": pl.Int64, "triple": pl.List(pl.String)})
        )
        frame = frame.with_columns(
            pl.Series("edited", [bool(flags.get(r)) for r in keep], dtype=pl.Boolean),
            (
                pl.col("withheld_edits").cast(withheld_type).fill_null([])
                if "withheld_edits" in frame.columns
                and frame.schema["withheld_edits"] != pl.List(pl.Null)
                else pl.lit([], withheld_type).alias("withheld_edits")
            ),
            meta["row"].alias(ROW),
            meta["record"].alias(RECORD),
            meta["split"].alias(SPLIT),
        )
        return frame, changes

    def fix_tables(self, frame: pl.DataFrame, data: LoadedDataset) -> dict[str, pa.Table]:
        """The fixed cases per split, in frame order, with Arrow's plain (not large) types, in
        the output layout (:func:`output_layout`; the frame itself is the original layout the
        findings' field paths name).

        A ``withheld_edits`` list is written as the changelog built it: per contaminated hop
        (hop order), the sources in file order, then edit index.
        """
        assert isinstance(data, KEData)
        remastered = output_layout(data) == "remastered"
        carried = _carried(data)
        out: dict[str, pa.Table] = {}
        for split in dict.fromkeys(frame[SPLIT].to_list()):
            part = frame.filter(pl.col(SPLIT) == split).drop(BOOKKEEPING).to_arrow()
            part = part.cast(small_types(part.schema))
            if remastered:
                part = pa.Table.from_batches(
                    [remastered_batch(b, carried) for b in part.to_batches()],
                    remastered_schema(part.schema, carried),
                )
            out[split] = part
        return out

    def fix_original(self, data: LoadedDataset, row: int, cells: dict[str, Any]) -> Any:
        """A dropped case in the changelog: the record as validated (absent fields stay absent)."""
        assert isinstance(data, KEData)
        case = data.records.get(row)
        return case.to_original() if case is not None else cells

    def fix_summary(
        self, run: Any, data: LoadedDataset, options: FamilyOptions
    ) -> tuple[dict[str, bytes], dict[str, Any]]:
        """``edit_set.json`` (the edited cases that remain) and the edit-set figures, naming
        every edited case a fix dropped and why: a dropped edited case changes the edit set."""
        assert isinstance(data, KEData)
        frame: pl.DataFrame = run.frame
        if frame.height:
            kept = frame.filter(pl.col("edited"))["case_id"].to_list()
            withheld = int((frame["withheld_edits"].list.len() > 0).sum())
        else:
            kept, withheld = [], 0
        edited = _edited(data)
        was_edited = set(data.cases.filter(edited)["record"].to_list())
        dropped = [
            {"case": c.record, "rule": c.rule, "reason": c.reason}
            for c in run.changelog
            if c.field == "" and c.new is None and c.record in was_edited
        ]
        summary = {
            "edit_set": "edited flags (curate fix)"
            if edit_set_from_data(data)
            else options.edit_set,
            "edited_cases": len(kept),
            "cases_with_withheld_edits": withheld,
            "edited_cases_dropped": dropped,
        }
        # Said once here (stdout, card, fix_summary) rather than per record in the changelog:
        # a converted record's fields change place, none changes value.
        if set(_layout_counts(data)) - {"original"} or output_layout(data) != "original":
            summary["layout"] = layout_note(data, paths=False).rstrip(".")
        return {"edit_set.json": orjson.dumps(kept, option=orjson.OPT_INDENT_2)}, summary


def _edited(data: KEData) -> pl.Series:
    """The edit set per row of ``cases``, as the audit's ``edited`` table resolves it."""
    from curate.core.rules import AuditContext

    return edited_table(AuditContext(data, data.options))


#: How each layout is named to a reader (card, croissant, fix summary).
LAYOUT_NAMES = {
    "original": "the original MQuAKE layout (nested: orig{triples, ...}, target_new/target_true "
    "objects)",
    "remastered": "the MQuAKE-Remastered layout (flat: target_new_str/target_true_str, "
    "orig_triples, new_triples, *_labeled, edit_triples, split)",
}


def output_layout(data: KEData) -> str:
    """The layout the cases are written in: ``--layout`` when given, else the input's own.

    An input mixing both layouts has no own layout: choosing one for the user would convert half
    the records without being asked (exit 2). An original-layout case can be written in the
    Remastered layout only if it carries the Remastered ``split`` labels (a case exported from
    the Remastered layout to the original one does): they say which evaluation (edit count)
    edits the case, which nothing in an original-layout case says, and the release's own loader
    reads them for every case. Missing, they are named (exit 2), never invented.
    """
    counts = _layout_counts(data)
    chosen = data.options.layout if isinstance(data.options, KEOptions) else None
    if chosen is None:
        if len(counts) > 1:
            raise UsageError(
                f"the input mixes layouts ({counts.get('original', 0)} original, "
                f"{counts.get('remastered', 0)} MQuAKE-Remastered cases): choose the output's "
                f"with {arg('--layout', 'original')} or {arg('--layout', 'remastered')}"
            )
        chosen = next(iter(counts), "original")
    if chosen == "remastered" and counts.get("original"):
        missing = data.cases.filter(
            (pl.col("layout") == "original") & pl.col("split_map").is_null()
        )["record"]
        if missing.len():
            shown = ", ".join(missing.head(5).to_list()) + (", ..." if missing.len() > 5 else "")
            raise UsageError(
                f"{arg('--layout', 'remastered')}: {missing.len()} original-layout cases have no "
                "`split` "
                '(the Remastered labels per edit count, e.g. {"1000": ["edited"]}), which '
                f"cannot be derived from them (cases {shown}); write them with "
                f"{arg('--layout', 'original')}"
            )
    return chosen


def layout_note(data: KEData, *, paths: bool = True) -> str:
    """One sentence on the layout the cases are written in and on what was converted; with
    ``paths``, one more on how findings name the flat layout's fields."""
    counts = _layout_counts(data)
    out = output_layout(data)
    converted = sum(n for layout, n in counts.items() if layout != out)
    named = (
        " Findings and changes name fields by the original layout's paths "
        "(orig.new_triples[i] is new_triples[i], requested_rewrite[k].target_new.id is "
        "requested_rewrite[k].target_new_id)."
        if paths and out == "remastered"
        else ""
    )
    if not converted:
        return f"Cases written in {LAYOUT_NAMES[out]}, as read.{named}"
    other = "MQuAKE-Remastered (flat)" if out == "original" else "original-layout (nested)"
    return f"{converted} {other} cases written in {LAYOUT_NAMES[out]}; values unchanged.{named}"


def _layout_counts(data: KEData) -> dict[str, int]:
    """Valid cases per input layout (``original``/``remastered``), only layouts present."""
    counts = data.cases.group_by("layout").len()
    return {str(k): int(n) for k, n in sorted(counts.iter_rows()) if k is not None and n}


def _carried(data: KEData) -> frozenset[str]:
    """Which rebuildable ``orig`` lists to write in the Remastered layout: those some case
    carried (every original-layout case carries both; the release carries ``edit_triples``)."""
    shape = data.shape
    return frozenset(shape.carried) if isinstance(shape, _Shape) else REBUILDABLE


def _marks(row: int, case: MQuAKECase) -> tuple[int, bool | None, list[str]]:
    """A case's ``curate fix`` marks as a row of :data:`MARK_SCHEMA`."""
    withheld = [f"{w.case_id}\x1f{w.edit_index}" for w in case.withheld_edits or ()]
    return row, case.edited, withheld


#: Valid cases per chunk in the export: each chunk's dicts become Arrow and are freed before
#: the next is made, so a batch's parsed records and its converted copy are not all alive at once.
EXPORT_CHUNK = 1024


def _valid_batches(
    paths: Sequence[str],
    skip: set[int],
    encoding: str | None,
    split: str | None,
    declared: _Shape | None = None,
) -> Iterator[tuple[int, str, list[dict[str, Any]]]]:
    """``(batch number, split, valid cases in the original layout)``, in file order.

    Each input batch comes in chunks of at most :data:`EXPORT_CHUNK` cases, all with the batch's
    number; each raw record is let go as soon as it is validated. Rows are numbered across inputs
    exactly as :meth:`KnowledgeEditingFamily.load` numbers them, so ``skip`` (rows an
    invalid-record rule names) lines up. With ``split``, batches of other splits are passed over
    without being validated. With ``declared`` (the shape the load noted, which the Arrow type
    was declared from), each batch's cases are checked against it: a field the type does not
    have would be dropped without a word, so an input edited since it was loaded is an error,
    not a silently thinner export.
    """
    row = 0
    number = 0
    for path in paths:
        src = open_source(path, hash_input=False, encoding=encoding)
        for batch in src.batches:
            number += 1
            name = batch.split or "train"
            raws = batch.rows
            if split is not None and name != split:
                row += len(raws)
                continue
            del batch
            cases = []
            shape = _Shape()
            for i in range(len(raws)):
                raw, raws[i] = raws[i], None
                if row not in skip:
                    _, case, _ = validate_record(raw)
                    if case is not None:
                        if declared is not None:
                            shape.note(case)
                        cases.append(case.to_original())
                row += 1
                if len(cases) == EXPORT_CHUNK:
                    if declared is not None and not shape.fits(declared):
                        raise _changed(src.path)
                    yield number, name, cases
                    cases = []
            if declared is not None and not shape.fits(declared):
                raise _changed(src.path)
            if cases:
                yield number, name, cases


def _changed(path: Any) -> InputError:
    return InputError(
        "the input changed since it was read: its cases no longer match the columns declared "
        "for the export (export it again)",
        path=path,
    )


def _record_batch(parts: list[pa.Array]) -> pa.RecordBatch:
    arr = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
    return pa.RecordBatch.from_struct_array(arr)


FAMILY = KnowledgeEditingFamily()

__all__ = ["FAMILY", "KEData", "KnowledgeEditingFamily", "validate_record"]
