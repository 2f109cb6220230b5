"""Record-level diff of two versions of a dataset: which records were added, removed, changed
(field by field, nested paths too), moved between splits or re-keyed.

Both versions arrive as the frame the fix engine works on (:meth:`Family.fix_frame`: the valid
records with ``__row``, ``__record`` and ``__split``), so a diff speaks of the same records and
fields as the changelog ``curate fix`` writes, and a family needs no second description of its
records. The family adds a :class:`DiffSpec`: whether its record ids are stable across versions
(a MQuAKE ``case_id``, a declared id column) or positional (a CSV line number, which a dropped
row shifts), and the content key that pairs a record whose id changed (MQuAKE: the chain and its
edits; glycans: the canonical glycan).

Why matching in stages rather than one join: a join on the id alone calls a re-keyed case
"removed" and "added"; a join on the content alone cannot tell an edit from a new record; and a
positional id pairs every row after a dropped one with its neighbour. So records are paired
(1) by id when ids are stable, (2) by identical content, (3) by the family's content key, each
stage taking only what the earlier left; what is left after the last is added or removed.

Only the records that differ are materialised as Python values (to walk nested fields); the
pairing itself runs on one 64-bit hash per record and side.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

import polars as pl
import pyarrow as pa
from polars.datatypes import DataTypeClass

from curate.core.fixes import RECORD, ROW, SPLIT

#: Kinds of a record's change, in report order.
KINDS = ("added", "removed", "changed", "moved", "rekeyed")


@dataclass(frozen=True)
class DiffSpec:
    """How a family's records are told apart across versions.

    ``stable_ids``: ``__record`` names the same record in both versions (ids are data, not
    positions). ``id_columns``: the columns that hold the id (left out of the content that
    pairs a re-keyed record). ``content_key``: the columns whose values pair a record whose id
    (or, with positional ids, whose position) changed; empty: only identical records pair.
    ``ignore``: columns that describe a version rather than a record (compared never)."""

    stable_ids: bool = True
    id_columns: tuple[str, ...] = ()
    content_key: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()


@dataclass(frozen=True)
class FieldChange:
    """One top-level field of a record that differs: its old and new value, and the nested
    paths (``requested_rewrite[0].target_new.str``) that differ inside it."""

    field: str
    old: Any
    new: Any
    paths: tuple[tuple[str, Any, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "old": self.old,
            "new": self.new,
            "paths": [{"path": p, "old": o, "new": n} for p, o, n in self.paths],
        }


@dataclass(frozen=True)
class RecordChange:
    """A record that differs between the versions. ``record``: its id in the old version
    (the new one's for an added record), ``new_record`` its id in the new version; ``split``
    and ``new_split`` likewise; ``fields`` the changed fields; ``value``: the whole record of
    an added or removed one."""

    kind: str
    record: str | None
    new_record: str | None
    split: str | None
    new_split: str | None
    fields: tuple[FieldChange, ...] = ()
    value: Any = None
    note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "record": self.record}
        if self.new_record != self.record:
            out["new_record"] = self.new_record
        out["split"] = self.split
        if self.new_split != self.split:
            out["new_split"] = self.new_split
        if self.fields:
            out["fields"] = [f.to_json() for f in self.fields]
        if self.value is not None:
            out["value"] = self.value
        if self.note:
            out["note"] = self.note
        return out

    @property
    def kinds(self) -> tuple[str, ...]:
        """Every kind this change is: a re-keyed record may also be changed and moved."""
        out = [self.kind]
        if self.kind in ("changed", "rekeyed") and self.new_split != self.split:
            out.append("moved")
        if self.kind == "rekeyed" and self.fields:
            out.append("changed")
        return tuple(out)


@dataclass
class Diff:
    """What differs between two versions: per record (:class:`RecordChange`, old-version order
    then the added ones in new-version order), the columns only one side has, and counts."""

    family: str
    old: str
    new: str
    records_old: int
    records_new: int
    changes: list[RecordChange]
    columns_added: list[str] = field(default_factory=list)
    columns_removed: list[str] = field(default_factory=list)
    #: With ``--audits``: the findings of the new version's audit that the old one's has not
    #: (``appeared``) and the reverse (``gone``), each ``{rule, record, field, message}``.
    findings: dict[str, list[dict[str, Any]]] | None = None

    @property
    def identical(self) -> bool:
        return not self.changes and not self.columns_added and not self.columns_removed

    def counts(self) -> dict[str, int]:
        """Records per kind (a record counts under each kind it is: re-keyed and changed)."""
        out = dict.fromkeys(KINDS, 0)
        for c in self.changes:
            for k in c.kinds:
                out[k] += 1
        out["unchanged"] = self.records_old - sum(1 for c in self.changes if c.kind != "added")
        return out

    def by_split(self) -> dict[str, dict[str, int]]:
        """Per split (the old version's; the new one's for added records), records per kind."""
        out: dict[str, dict[str, int]] = {}
        for c in self.changes:
            split = (c.new_split if c.kind == "added" else c.split) or ""
            row = out.setdefault(split, dict.fromkeys(KINDS, 0))
            for k in c.kinds:
                row[k] += 1
        return dict(sorted(out.items()))

    def by_field(self) -> dict[str, int]:
        """Changed records per top-level field, most changed first."""
        out: dict[str, int] = {}
        for c in self.changes:
            for f in c.fields:
                out[f.field] = out.get(f.field, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))

    def to_json(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "old": self.old,
            "new": self.new,
            "identical": self.identical,
            "records": {"old": self.records_old, "new": self.records_new},
            "counts": self.counts(),
            "by_split": self.by_split(),
            "by_field": self.by_field(),
            "columns": {"added": self.columns_added, "removed": self.columns_removed},
            "changes": [c.to_json() for c in self.changes],
            **({"findings": self.findings} if self.findings is not None else {}),
        }


# --------------------------------------------------------------------------- the engine


#: A version's records as the diff reads them: a function that yields them in order, batch by
#: batch (``__row``, ``__record``, ``__split`` and the values), each call from the start.
Batches = Callable[[], Iterator[pl.DataFrame]]


@dataclass
class Side:
    """One version reduced to what pairing needs: per record its position (``_i``), id,
    split and one 64-bit hash per column (``h:COLUMN``). The values are read again only for
    the records that differ (:meth:`take`: one more pass over the batches, keeping those
    rows), so a side never holds more than one batch of values: at 1 M MQuAKE cases the values
    are 3.4 GB a side in memory, the hashes 0.1 GB."""

    keys: pl.DataFrame
    schema: dict[str, pl.DataType]
    batches: Batches
    invalid: list[tuple[str | None, str | None, Any, str]] = field(default_factory=list)
    #: The values of the records that may differ from the other side (``_i`` and the
    #: columns), kept in the one pass over this side (:func:`prepare` with ``against``).
    kept: pl.DataFrame | None = None

    @property
    def height(self) -> int:
        return self.keys.height

    def take(self, at: Sequence[int] | pl.Series, cols: Sequence[str]) -> pl.DataFrame:
        """Columns ``cols`` of the records at positions ``at`` (sorted, unique), in order."""
        want = sorted(at.to_list() if isinstance(at, pl.Series) else at)
        if self.kept is not None and all(c in self.kept.columns for c in cols):
            have = self.kept.filter(pl.col("_i").is_in(pl.Series(want, dtype=pl.Int64).implode()))
            if have.height == len(want):
                return have.sort("_i").select(cols)
        parts: list[pl.DataFrame] = []
        offset, j = 0, 0
        if want:
            for batch in self.batches():
                end = offset + batch.height
                local = []
                while j < len(want) and want[j] < end:
                    local.append(want[j] - offset)
                    j += 1
                if local:
                    parts.append(batch.select(cols)[local])
                offset = end
                if j == len(want):
                    break
        if not parts:
            return pl.DataFrame(schema={c: self.schema[c] for c in cols})
        return pl.concat(parts, how="vertical_relaxed")


class ColumnHashes:
    """A version's column hashes taken while its family loads it, batch by batch, from the
    Arrow the reader hands the load anyway: ``curate diff`` then needs no pass of its own
    over a side to hash it (at 1 M MQuAKE cases a pass is ~7 s a side: 3 s of parquet
    decoding, 2 s of hashing, the rest laying out frames), only one more over the records
    whose values the report shows.

    Active while :func:`hashing_columns` is; a reader adds each batch (:meth:`add`) or, when
    a batch has no Arrow (JSON Lines parsed record by record), says so (:meth:`give_up`):
    the diff then hashes the side in a pass of its own, as without it. Hashes are the same
    :func:`prepare` takes of the values the family's batches yield, so both routes agree.
    """

    def __init__(
        self, against: Side | None = None, ignore: Sequence[str] = (), *, lean: bool = False
    ) -> None:
        #: The loaded data serves the diff only (no audit runs on it): a family may leave out
        #: of it the tables only its rules read (knowledge editing: hops, edits, case
        #: columns), which a diff never reads.
        self.lean = lean
        self.parts: list[Any] = []  # (hashes, kept values, types), or futures of them
        self.rows: int = 0
        self.complete: bool = True
        #: the other version (prepared already) and its record hashes over the columns both
        #: have, set from this side's first batch: rows hashing to none of them are kept
        self.against = against
        self.ignore: tuple[str, ...] = tuple(ignore)
        self._seen: pl.Series | None = None
        self._shared: list[str] = []
        self._next = 0  # parts before it are hashed

    def add(self, first_row: int, arrow: pa.RecordBatch | pa.Table, pool: Any = None) -> None:
        """Hash the columns of one batch whose first record is row ``first_row``; in
        ``pool`` (an executor) when given: the reader's own work goes on meanwhile. Against
        another version, the batch's records that match none of its records by their values
        are kept whole (the changed, re-keyed and added ones: their values are in the
        report, and reading this side again for them would be a pass)."""
        if not self.complete:
            return
        if self.against is not None and self._seen is None:
            # the columns' types, from the batch's schema alone (no row hashed twice)
            empty = pl.from_arrow(_decoded(arrow.slice(0, 0)))
            assert isinstance(empty, pl.DataFrame)
            types = empty.schema
            self._shared = [
                c
                for c in self.against.schema
                if c in types and c not in self.ignore and self.against.schema[c] == types[c]
            ]
            self._seen = self.against.keys.select(combined(self._shared)).to_series().unique()
        self.parts.append(
            pool.submit(_hashed, first_row, arrow, self._seen, self._shared)
            if pool is not None
            else _hashed(first_row, arrow, self._seen, self._shared)
        )
        self.rows += arrow.num_rows
        # at most two batches waiting to be hashed: each holds its Arrow (~50 MB of MQuAKE
        # cases) until it is; unbounded, a reader faster than the pool held them all
        while self._next < len(self.parts) - 2:
            job = self.parts[self._next]
            if not isinstance(job, tuple):
                self.parts[self._next] = job.result()
            self._next += 1

    def settle(self) -> None:
        """Wait for the hashing submitted to a pool (before the pool shuts down)."""
        self.parts = self._done()

    def _done(self) -> list[tuple[pl.DataFrame, pl.DataFrame | None, dict[str, pl.DataType]]]:
        return [p if isinstance(p, tuple) else p.result() for p in self.parts]

    @property
    def schema(self) -> dict[str, pl.DataType]:
        """The columns' types (each column's first batch's)."""
        out: dict[str, pl.DataType] = {}
        for _, _, types in self._done():
            for c, t in types.items():
                out.setdefault(c, t)
        return out

    def give_up(self) -> None:
        """A batch came without Arrow: the side is hashed by :func:`prepare` instead."""
        self.complete = False
        self.parts = []

    def prehashed(self, records: pl.DataFrame, batches: Batches) -> Prehashed:
        """The side as :func:`prepare` takes it: the hashed rows that ``records``
        (``__row``, ``__record``, ``__split`` of the records ``batches`` yields, in that
        order) names, numbered in that order, and the values kept of those rows."""
        done = self._done()
        hashed = (
            pl.concat([h for h, _, _ in done], how="diagonal")
            if done
            else pl.DataFrame(schema={ROW: pl.Int64})
        )
        joined = records.select(ROW, RECORD, SPLIT).join(
            hashed, on=ROW, how="inner", maintain_order="left"
        )
        keys = joined.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_i"), pl.exclude(ROW))
        kept = None
        if self.against is not None:
            held = [k for _, k, _ in done if k is not None and k.height]
            numbered = joined.select(ROW, pl.int_range(pl.len(), dtype=pl.Int64).alias("_i"))
            kept = (
                numbered.join(pl.concat(held, how="diagonal_relaxed"), on=ROW, how="inner").drop(
                    ROW
                )
                if held
                else pl.DataFrame(schema={"_i": pl.Int64})
            )
        return Prehashed(keys, self.schema, batches, kept)


def _hashed(
    first_row: int,
    arrow: pa.RecordBatch | pa.Table,
    seen: pl.Series | None,
    shared: list[str],
) -> tuple[pl.DataFrame, pl.DataFrame | None, dict[str, pl.DataType]]:
    """``__row`` and the column hashes ``h:COLUMN`` of one batch; with ``seen`` (the other
    version's record hashes over the ``shared`` columns) the values of the rows that hash to
    none of them, with ``__row``; the columns' types."""
    # column by column, each let go once hashed: a whole batch decoded at once was ~100 MB
    # more at the second load's peak (1 M cases), each running job holding its batch twice
    cols = [c for c in arrow.schema.names if c not in BOOKKEEPING_COLUMNS]
    hashes: list[pl.Series] = []
    types: dict[str, pl.DataType] = {}
    for c in cols:
        values = pl.from_arrow(_decoded_array(arrow.column(c)))
        assert isinstance(values, pl.Series)
        types[c] = values.dtype
        hashes.append(values.hash(7).alias(f"h:{c}"))
        del values
    n = arrow.num_rows
    hashed = pl.DataFrame(
        [pl.int_range(first_row, first_row + n, dtype=pl.Int64, eager=True).alias(ROW), *hashes]
    )
    kept = None
    if seen is not None:
        new = ~hashed.select(combined(shared).is_in(seen.implode())).to_series()
        # filtered as Arrow, which copies what it keeps: polars' strings are views into the
        # batch's buffers, and 1 % of the rows filtered in polars held every batch (8 GB)
        few = pl.from_arrow(_decoded(arrow.filter(pa.array(new.to_arrow()))))
        assert isinstance(few, pl.DataFrame)
        kept = few.select(cols).with_columns(hashed[ROW].filter(new))
    return hashed, kept, types


_COLLECTING: ContextVar[ColumnHashes | None] = ContextVar("curate_column_hashes", default=None)


@contextmanager
def hashing_columns(
    against: Side | None = None, ignore: Sequence[str] = (), *, lean: bool = False
) -> Iterator[ColumnHashes]:
    """Collect the column hashes of what a family loads inside the block (see
    :class:`ColumnHashes`; ``against``, ``ignore``: as :func:`prepare` takes them; ``lean``:
    the data loaded is for the diff only, :attr:`ColumnHashes.lean`)."""
    hashes = ColumnHashes(against, ignore, lean=lean)
    token = _COLLECTING.set(hashes)
    try:
        yield hashes
    finally:
        _COLLECTING.reset(token)


def column_hashes() -> ColumnHashes | None:
    """The collector a reader adds its batches to, if a diff asked for one."""
    return _COLLECTING.get()


def _decoded(arrow: pa.RecordBatch | pa.Table) -> pa.RecordBatch | pa.Table:
    """``arrow`` with its dictionary-coded columns (a reader's choice for repeated strings,
    nested too) as plain values: a category hashes differently from its text."""
    schema = arrow.schema
    plain = pa.schema([f.with_type(_plain(f.type)) for f in schema], metadata=schema.metadata)
    return arrow if plain.equals(schema) else arrow.cast(plain)


def _decoded_array(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """One column as :func:`_decoded` makes it."""
    plain = _plain(values.type)
    return values if plain.equals(values.type) else values.cast(plain)


def _plain(t: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(t):
        return _plain(t.value_type)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain(f.type)) for f in t])
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_plain(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_plain(t.value_type)))
    return t


@dataclass(frozen=True)
class Prehashed:
    """A version whose keys were taken while it loaded (:class:`ColumnHashes`): ``keys`` as
    :class:`Side` holds them, the columns' ``schema``, and the ``batches`` its values are read
    from for the records the report shows."""

    keys: pl.DataFrame
    schema: dict[str, pl.DataType]
    batches: Batches
    kept: pl.DataFrame | None = None


def prepare(
    frame: pl.DataFrame | Batches | Prehashed,
    *,
    invalid: Sequence[tuple[str | None, str | None, Any, str]] = (),
    against: Side | None = None,
    ignore: Sequence[str] = (),
    stable_ids: bool = True,
) -> Side:
    """A version (a frame, or a function yielding its batches) as a :class:`Side`: one pass,
    each column hashed once per batch. With ``against`` (the other side, already prepared),
    the values of the records that may differ from it are kept in the same pass (a record
    whose id and column hashes, or with positional ids whose column hashes, match none of
    ``against``'s is kept): the report's values of this side then need no second pass.

    Why per-column hashes and not one per record: the other version may store a column in
    another type (text from a CSV, numbers from parquet); that column is then hashed again
    from both sides as text (:func:`_as_text`) once both are known, the others are kept.

    A :class:`Prehashed` version is hashed already: nothing is read (and nothing kept: the
    values the report shows are read in one pass later, :meth:`Side.take`)."""
    if isinstance(frame, Prehashed):
        return Side(frame.keys, dict(frame.schema), frame.batches, list(invalid), frame.kept)
    batches: Batches = (lambda: iter([frame])) if isinstance(frame, pl.DataFrame) else frame
    parts: list[pl.DataFrame] = []
    kept: list[pl.DataFrame] = []
    seen: pl.DataFrame | None = None
    shared: list[str] = []
    schema: dict[str, pl.DataType] = {}
    offset = 0
    for batch in batches():
        if RECORD not in batch.columns:  # no record at all (every one invalid): nothing here
            continue
        cols = [c for c in batch.columns if c not in BOOKKEEPING_COLUMNS]
        for c in cols:
            schema.setdefault(c, batch.schema[c])
        hashed = batch.select(
            pl.int_range(offset, offset + batch.height, dtype=pl.Int64).alias("_i"),
            pl.col(RECORD),
            pl.col(SPLIT),
            *[pl.col(c).hash(7).alias(f"h:{c}") for c in cols],
        )
        parts.append(hashed)
        if against is not None:
            if seen is None:
                shared = [
                    c
                    for c in against.schema
                    if c in schema and c not in ignore and against.schema[c] == schema[c]
                ]
                on = [RECORD, "_all"] if stable_ids else ["_all"]
                seen = against.keys.select(RECORD, combined(shared).alias("_all")).select(on)
            mine = hashed.select("_i", RECORD, combined(shared).alias("_all"))
            # the other side's rows this batch could match, then an anti-join on those (a join
            # against all of them per batch built a 1 M-row hash table each time)
            near = seen.filter(pl.col(seen.columns[0]).is_in(mine[seen.columns[0]].implode()))
            new_rows = mine.join(near, on=seen.columns, how="anti")["_i"] - offset
            if new_rows.len():
                kept.append(
                    batch.select(cols)[new_rows.to_list()].with_columns(
                        (new_rows + offset).alias("_i")
                    )
                )
        offset += batch.height
    keys = (
        pl.concat(parts, how="diagonal")
        if parts
        else pl.DataFrame(schema={"_i": pl.Int64, RECORD: pl.String, SPLIT: pl.String})
    )
    if against is not None and any(
        c in against.schema and against.schema[c] != t for c, t in schema.items()
    ):
        kept = []  # a column typed differently: its values compare as text, read them again
        held = None
    else:
        held = (
            pl.concat(kept, how="diagonal_relaxed")
            if kept
            else (pl.DataFrame(schema={"_i": pl.Int64}) if against is not None else None)
        )
    return Side(keys, schema, batches, list(invalid), kept=held)


def diff_frames(
    old: pl.DataFrame,
    new: pl.DataFrame,
    spec: DiffSpec,
    *,
    family: str = "",
    names: tuple[str, str] = ("old", "new"),
    removed_invalid: Sequence[tuple[str | None, str | None, Any, str]] = (),
) -> Diff:
    """The diff of two frames in memory (see :func:`diff_sides`)."""
    return diff_sides(
        prepare(old, invalid=removed_invalid), prepare(new), spec, family=family, names=names
    )


def diff_sides(
    old: Side,
    new: Side,
    spec: DiffSpec,
    *,
    family: str = "",
    names: tuple[str, str] = ("old", "new"),
) -> Diff:
    """The diff of two versions (see the module's docstring for the matching).

    ``old.invalid``: ``(record, split, value, why)`` of old records that fail the schema (the
    frames hold valid records only): each is removed unless the new version has a record of
    that id (then it was repaired: reported as changed, whole)."""
    ignore = set(spec.ignore)
    old_cols = [c for c in old.schema if c not in ignore]
    new_cols = [c for c in new.schema if c not in ignore]
    shared = [c for c in old_cols if c in new_cols]
    body = [c for c in shared if c not in spec.id_columns]
    # a content key may be a column the family added for pairing only (ignored in compares)
    key = [c for c in spec.content_key if c in old.schema and c in new.schema]
    recast = [c for c in dict.fromkeys([*shared, *key]) if old.schema[c] != new.schema[c]]
    o = _combined(old, shared, body, key, recast, new.schema)
    n = _combined(new, shared, body, key, recast, old.schema)

    pairs: list[pl.DataFrame] = []
    left_o, left_n = o, n
    if spec.stable_ids:
        # an id several records share (a copy across splits) pairs the same record in the same
        # split first, then one of its split, then the same record, then in file order:
        # re-sorting a file with such a copy paired the train copy with the test one (two
        # phantom moves). Ids that are all distinct pair on the id alone (one join).
        shared_ids = o[RECORD].is_duplicated().any() or n[RECORD].is_duplicated().any()
        stages: list[str | list[str]] = (
            [[RECORD, SPLIT, "_all"], [RECORD, SPLIT], [RECORD, "_all"], RECORD]
            if shared_ids
            else [RECORD]
        )
        for on in stages:
            p, left_o, left_n = _pair(left_o, left_n, on)
            pairs.append(p)
    p, left_o, left_n = _pair(left_o, left_n, "_body" if spec.stable_ids else "_all")
    pairs.append(p)
    if key:
        p, left_o, left_n = _pair(left_o, left_n, "_key")
        pairs.append(p)
    paired = pl.concat(pairs)

    changes: dict[int, RecordChange] = {}
    # paired records: moved, re-keyed, changed (materialised only when the content differs)
    differs = paired.filter(pl.col("_all_o") != pl.col("_all_n"))
    gone, born = left_o["_i"].sort(), left_n["_i"].sort()
    # a changed record's values are made Python objects only in the columns whose hashes
    # differ in some pair (1 M cases, 1 % changed: 2.8 s of row conversion for whole records)
    compared = [c for c in shared if c not in spec.id_columns]
    differing = [
        c
        for c in compared
        if c in recast
        or (
            old.keys[f"h:{c}"].gather(differs["_i_o"]) != new.keys[f"h:{c}"].gather(differs["_i_n"])
        ).any()
    ]
    # one more pass over each side, for every record whose values the report shows
    ovals = _values(old, gone, differs["_i_o"], old_cols, differing, recast, new.schema)
    nvals = _values(new, born, differs["_i_n"], new_cols, differing, recast, old.schema)
    # only pairs that differ somehow are walked in Python (100k pairs took 0.2 s)
    touched = paired.filter(
        (pl.col("_all_o") != pl.col("_all_n"))
        | (pl.col("split_o") != pl.col("split_n"))
        | (pl.col("rec_o") != pl.col("rec_n"))
    )
    for r in touched.iter_rows(named=True):
        rekeyed = spec.stable_ids and r["rec_o"] != r["rec_n"]
        fields: tuple[FieldChange, ...] = ()
        if r["_all_o"] != r["_all_n"]:
            a, b = ovals[r["_i_o"]], nvals[r["_i_n"]]
            fields = tuple(
                FieldChange(c, a[c], b[c], tuple(nested_changes(c, a[c], b[c])))
                for c in compared
                if c in a and c in b and a[c] != b[c]
            )
        if rekeyed:
            kind = "rekeyed"
        elif fields:
            kind = "changed"
        elif r["split_o"] != r["split_n"]:
            kind = "moved"
        else:
            continue
        changes[r["_i_o"]] = RecordChange(
            kind, r["rec_o"], r["rec_n"], r["split_o"], r["split_n"], fields
        )

    invalid_ids = {}
    for rec, split, value, why in old.invalid:
        invalid_ids[rec] = (split, value, why)
    # the new version's invalid records: one invalid in both versions is compared as it was
    # read (the same: unchanged; else changed, whole), one only there is an addition noted as
    # invalid (a published version never carries it, yet it is in the file)
    invalid_new = {rec: (split, value, why) for rec, split, value, why in new.invalid}
    added_ids = set(left_n[RECORD].to_list()) if spec.stable_ids else set()
    out: list[RecordChange] = []
    for rec, (split, value, why) in invalid_ids.items():
        if rec in added_ids:  # the new version has it (valid now): repaired, whole
            continue
        if rec in invalid_new:
            split_new, value_new, why_new = invalid_new[rec]
            if value_new != value or split_new != split:
                out.append(
                    _whole(rec, split, split_new, value, value_new, f"invalid in both: {why_new}")
                )
            continue
        out.append(RecordChange("removed", rec, None, split, None, value=value, note=why))
    for i, rec, split in (
        old.keys.select(RECORD, SPLIT)[gone.to_list()]
        .with_columns(gone.alias("_i"))
        .select("_i", RECORD, SPLIT)
        .iter_rows()
    ):
        changes[i] = RecordChange("removed", rec, None, split, None, value=ovals[i])
    out.extend(changes[i] for i in sorted(changes))
    repaired = {rec: v for rec, v in invalid_ids.items() if rec in added_ids}
    for i, rec, split in (
        new.keys.select(RECORD, SPLIT)[born.to_list()]
        .with_columns(born.alias("_i"))
        .select("_i", RECORD, SPLIT)
        .iter_rows()
    ):
        value = nvals[i]
        if rec in repaired:
            split_old, old_value, why = repaired[rec]
            out.append(
                _whole(rec, split_old, split, old_value, value, f"invalid in {names[0]}: {why}")
            )
            continue
        out.append(RecordChange("added", rec, rec, None, split, value=value))
    valid_old = set(old.keys[RECORD].to_list()) if invalid_new else set()
    for rec, (split, value, why) in invalid_new.items():
        if rec not in invalid_ids and rec not in valid_old:
            out.append(
                RecordChange(
                    "added",
                    rec,
                    rec,
                    None,
                    split,
                    value=value,
                    note=f"invalid in {names[1]}: {why}",
                )
            )
    return Diff(
        family,
        names[0],
        names[1],
        old.height + len(invalid_ids),
        new.height + len(invalid_new),
        out,
        columns_added=[c for c in new_cols if c not in old_cols],
        columns_removed=[c for c in old_cols if c not in new_cols],
    )


BOOKKEEPING_COLUMNS = (ROW, RECORD, SPLIT)


def _combined(
    side: Side,
    shared: list[str],
    body: list[str],
    key: list[str],
    recast: list[str],
    other: dict[str, pl.DataType],
) -> pl.DataFrame:
    """``_i``, the id and split, and the record hashes: of every shared column (``_all``), all
    but the id (``_body``), the content key (``_key``), combined from the column hashes (the
    ``recast`` columns hashed again as both sides can hold them, :func:`_comparable`). A struct
    of the column hashes is hashed: ten times faster than a list of them (2.3 s at 1 M)."""
    hashes = side.keys
    if recast:
        again = side.take(side.keys["_i"], recast).select(
            _comparable(c, side.schema[c], other[c]).hash(7).alias(f"h:{c}") for c in recast
        )
        hashes = hashes.with_columns(again)

    out = hashes.select(
        "_i",
        RECORD,
        SPLIT,
        combined(shared).alias("_all"),
        combined(key).alias("_key"),
        *([] if body == shared else [combined(body).alias("_body")]),
    )
    # the same hash when the id is not a column (one combination fewer: 0.1 s at 100k)
    return out.with_columns(pl.col("_all").alias("_body")) if body == shared else out


def combined(cols: Sequence[str]) -> pl.Expr:
    """One hash of the column hashes ``h:COLUMN`` of ``cols`` (0 for none)."""
    if not cols:
        return pl.lit(0, pl.UInt64)
    if len(cols) == 1:
        return pl.col(f"h:{cols[0]}")
    return pl.struct([pl.col(f"h:{c}") for c in cols]).hash(7)


def _values(
    side: Side,
    whole: pl.Series,
    some: pl.Series,
    cols: list[str],
    differing: list[str],
    recast: list[str],
    other: dict[str, pl.DataType],
) -> dict[int, dict[str, Any]]:
    """The records at positions ``whole`` (every column) and ``some`` (the ``differing``
    columns only) as Python values by position, read in one pass; the recast columns as both
    sides can hold them (:func:`_comparable`), so that the two versions' values compare."""
    at = pl.concat([whole, some]).unique().sort()
    if not at.len():
        return {}
    rows = side.take(at, cols).with_columns(
        [_comparable(c, side.schema[c], other[c]) for c in recast if c in cols]
    )
    rows = rows.with_columns(at.alias("__at"))
    entire = rows.filter(pl.col("__at").is_in(whole.implode()))
    part = rows.filter(~pl.col("__at").is_in(whole.implode())).select(
        "__at", *[c for c in differing if c in cols]
    )
    out: dict[int, dict[str, Any]] = {}
    for frame in (entire, part):
        for r in frame.iter_rows(named=True):
            out[r.pop("__at")] = r
    return out


def _comparable(c: str, dtype: pl.DataType, other: pl.DataType) -> pl.Expr:
    """Column ``c`` (of ``dtype`` here, ``other`` in the other version) as both versions can
    hold it: with its structs' fields in name order when that makes the two types one (a JSON
    file read with one more field infers its nested structs' fields in another order, and a
    struct hashes by position), else as text (a number from parquet, text from a CSV)."""
    if _sorted_type(dtype) == _sorted_type(other):
        return _sorted_fields(pl.col(c), dtype).alias(c)
    return _as_text(c, dtype)


def _sorted_type(dtype: pl.DataType | DataTypeClass) -> pl.DataType | DataTypeClass:
    # a struct field's or a list's inner type may be a bare class (``pl.String``)
    if isinstance(dtype, pl.Struct):
        return pl.Struct(
            [pl.Field(f.name, _sorted_type(f.dtype)) for f in sorted(dtype.fields, key=_name)]
        )
    if isinstance(dtype, pl.List):
        return pl.List(_sorted_type(dtype.inner))
    return dtype


def _sorted_fields(expr: pl.Expr, dtype: pl.DataType | DataTypeClass) -> pl.Expr:
    if isinstance(dtype, pl.Struct):
        return pl.struct(
            [
                _sorted_fields(expr.struct.field(f.name), f.dtype).alias(f.name)
                for f in sorted(dtype.fields, key=_name)
            ]
        )
    if isinstance(dtype, pl.List) and _sorted_type(dtype) != dtype:
        return expr.list.eval(_sorted_fields(pl.element(), dtype.inner))
    return expr


def _name(f: pl.Field) -> str:
    return f.name


def _as_text(c: str, dtype: pl.DataType) -> pl.Expr:
    if dtype.is_nested():  # '{"v":VALUE}' -> 'VALUE': the value's JSON text
        encoded = pl.struct(pl.col(c).alias("v")).struct.json_encode()
        return encoded.str.slice(5).str.head(-1).alias(c)
    return pl.col(c).cast(pl.String)


def _whole(
    rec: str | None, split: str | None, split_new: str | None, old: Any, new: Any, note: str
) -> RecordChange:
    """A record changed as a whole (one side invalid, so no field of it is compared): one
    field change of the record itself, with why."""
    return RecordChange(
        "changed", rec, rec, split, split_new, (FieldChange("", old, new),), note=note
    )


def _pair(
    o: pl.DataFrame, n: pl.DataFrame, on: str | Sequence[str]
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Pair the rows of ``o`` and ``n`` with equal ``on`` (the k-th old with the k-th new of
    each value, in file order); the pairs and the rows of each side left over."""
    keys = [on] if isinstance(on, str) else list(on)
    cols = list(dict.fromkeys(["_i", RECORD, SPLIT, "_all", *keys]))
    a = o.select(cols).with_columns(pl.int_range(pl.len()).over(keys).alias("_k"))
    b = n.select(cols).with_columns(pl.int_range(pl.len()).over(keys).alias("_k"))

    def other(c: str) -> pl.Expr:  # the new side's column (a join key is not suffixed)
        return pl.col(c) if c in keys else pl.col(f"{c}_n")

    joined = a.join(b, on=[*keys, "_k"], how="inner", suffix="_n", maintain_order="left").select(
        pl.col("_i").alias("_i_o"),
        pl.col("_i_n"),
        pl.col(RECORD).alias("rec_o"),
        other(RECORD).alias("rec_n"),
        pl.col(SPLIT).alias("split_o"),
        other(SPLIT).alias("split_n"),
        pl.col("_all").alias("_all_o"),
        other("_all").alias("_all_n"),
    )
    left_o = o.filter(~pl.col("_i").is_in(joined["_i_o"].implode()))
    left_n = n.filter(~pl.col("_i").is_in(joined["_i_n"].implode()))
    return joined, left_o, left_n


def nested_changes(path: str, old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """The leaf paths where two values differ: ``a.b[2].c`` with the old and new value there.

    Lists are aligned as sequences (difflib), not index by index: taking one alias out of
    nine is one path (``answer_alias[2]``: the alias → None), not the seven shifted after it.
    An item taken out is named by its old index, one put in by its new index; items replaced
    one for one are compared inside (a changed edit's ``target_new.str``). None stands for
    the side without the key or item (so ``(path, None, None)`` is a null put in or taken
    out)."""
    if old == new:
        return []
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for k in [*old, *(k for k in new if k not in old)]:
            where = f"{path}.{k}" if path else str(k)
            if k not in old or k not in new:  # a key only one side has: a change even if None
                out.append((where, old.get(k), new.get(k)))
            else:
                out += nested_changes(where, old[k], new[k])
        return out
    if isinstance(old, list) and isinstance(new, list):
        out = []
        a, b = [_hashable(x) for x in old], [_hashable(x) for x in new]
        for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
            if op == "equal":
                continue
            if op == "replace" and i2 - i1 == j2 - j1:
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                    out += nested_changes(f"{path}[{i}]", old[i], new[j])
                continue
            out += [(f"{path}[{i}]", old[i], None) for i in range(i1, i2)]
            out += [(f"{path}[{j}]", None, new[j]) for j in range(j1, j2)]
        return out
    return [(path, old, new)]


def _hashable(value: Any) -> Any:
    """A list item as something difflib can index (dicts and lists as their JSON text)."""
    if isinstance(value, dict | list):
        from curate.core.findings import dumps

        return dumps(value)  # canonical, exact beyond 64-bit integers
    return value


def source_diff(family: Any, data: Any, fixed: pl.DataFrame) -> Diff:
    """The diff of the input ``data`` and the fix engine's last frame ``fixed``.

    The fixed frame carries the input's record ids (the engine maps each pass's records back),
    so records pair by id whatever the family's ids are in a file read afresh: a re-split
    glycan table without an id column pairs row for row, not by its line numbers. Computed
    from the frames in memory: nothing is read again. The input's side is the family's
    :meth:`diff_frame` (what ``curate diff`` would read of it: columns the fix adds are
    columns added)."""
    import dataclasses

    before, invalid = family.diff_frame(data)
    spec = dataclasses.replace(family.diff_spec(data), stable_ids=True)
    return diff_frames(
        before,
        fixed,
        spec,
        family=family.name,
        names=("source", "remastered"),
        removed_invalid=[(c.record, c.split, c.old, c.reason) for c in invalid],
    )
