"""Edit sets and contamination (KE2xx): which cases are edited, and whose path another case's edit
overrides.

Holds the ``edited`` and ``contamination`` shared tables (KE3xx and the fixes read them too) and
:func:`resolve_edit_set`, the ``--edit-set`` resolver behind ``edited``.
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import polars as pl

from curate.audits.knowledge_editing.registry import MAX_LISTED, RULES
from curate.core.engine import available_cores
from curate.core.errors import UsageError
from curate.core.findings import (
    empty_rule_output,
    finding_frame,
    json_struct,
)
from curate.core.rules import AuditContext
from curate.core.sampling import sample_positions
from curate.io.encodings import read_text
from curate.schemas.knowledge_editing_tables import CODE, KEData, with_record

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
        # ``sample`` draws positions from the population's length alone, so sampling the
        # positions draws the same cases as sampling the ids; ``sample_positions`` draws
        # exactly those, without CPython's per-position loop
        positions = sample_positions(rng, len(data.all_ids), k)
        if data.cases.height == len(data.all_ids):
            # one valid case per record: the positions are the cases' rows, and the drawn ids
            # are those rows' records (a scatter and a filter, instead of k ids made strings);
            # every case with a drawn id is edited, as sampling ids means when an id repeats
            chosen = pl.repeat(False, len(data.all_ids), dtype=pl.Boolean, eager=True)
            chosen = chosen.scatter(pl.Series(positions), True)
            drawn = records.filter(chosen.gather(data.cases["row"]))
            return records.is_in(drawn.implode()).alias("edited")
        drawn_ids = {str(data.all_ids[i]) for i in positions.tolist()}
        return records.is_in(pl.Series(list(drawn_ids), dtype=pl.String).implode()).alias("edited")
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


def _by_row(data: KEData, flags: pl.Series) -> pl.Series:
    """``flags`` (one per row of ``cases``) indexed by ``row`` (false for a row with no case)."""
    rows = data.cases["row"]
    top = rows.max()  # None for no cases
    size = top + 1 if isinstance(top, int) else 0
    flags = flags.fill_null(False)
    if rows.len() == size and rows.is_sorted():
        return flags.alias("by_row")  # every record valid: rows are 0..n-1 already
    by_row = pl.repeat(False, size, dtype=pl.Boolean, eager=True)
    return by_row.scatter(rows, flags).alias("by_row") if size else by_row.alias("by_row")


def _flag_by_row(data: KEData, flags: pl.Series) -> pl.Expr:
    """``flags`` (one per row of ``cases``) looked up by the ``row`` column of another table: a
    gather by position, not a join (``row`` is a record's position, so a dense index)."""
    return pl.lit(_by_row(data, flags)).gather(pl.col("row"))


def _applied(data: KEData, edited: pl.Series) -> pl.LazyFrame:
    """The applied edits (cases in the edit set, id triples complete), without case ids."""
    return data.edits.lazy().filter(
        _flag_by_row(data, edited)
        & pl.col("t_s").is_not_null()
        & pl.col("t_r").is_not_null()
        & pl.col("t_o").is_not_null()
    )


def applied_edits(data: KEData, edited: pl.Series) -> pl.LazyFrame:
    """Edits of the cases in the edit set (id triples complete), lazily, with their case ids."""
    return _applied(data, edited).select(
        "row",
        pl.lit(data.records_by_row()).gather(pl.col("row")).alias("record"),
        "k",
        "t_s",
        "t_r",
        "t_o",
        "subject",
        "new_str",
    )


def sr_key(s: str, r: str) -> pl.Expr:
    """(subject, relation) as one 64-bit integer: the two 32-bit categorical codes side by side.

    Exact, not a hash: every coded column shares one string → code mapping, so equal pairs
    have equal keys and different pairs different keys (a null code makes a null key, which
    joins nothing). Measured 3x cheaper than hashing the two columns over 8 M hops."""
    return (pl.col(s).to_physical().cast(pl.UInt64) * (1 << 32)) + pl.col(r).to_physical().cast(
        pl.UInt64
    )


#: The ``contamination`` table's hits: one row per contaminated (case, hop), in hop order.
HIT_SCHEMA: dict[str, Any] = {
    "row": pl.Int64,
    "record": pl.String,
    "edited": pl.Boolean,
    "content": pl.UInt32,  # the row of ``contents`` holding what its finding says
}

#: The ``contamination`` table's contents: what a finding says, once per distinct content.
CONTENT_SCHEMA: dict[str, Any] = {
    "edited": pl.Boolean,
    "hop": pl.Int32,
    # coded, as in ``hops``
    "s": CODE,
    "r": CODE,
    "o": CODE,
    "s_label": CODE,
    "o_label": CODE,
    "n_edits": pl.UInt32,
    "edits": pl.String,  # JSON list: at most MAX_LISTED edits, by object
    "first_target": pl.String,  # the first edit's new label and first source case (message)
    "first_source": pl.String,
    "withhold": pl.String,  # the fix (JSON)
}


@dataclass(frozen=True)
class Contamination:
    """The contamination join (see :func:`contamination`), as hits and their contents.

    Why two frames: a finding says nothing of its case but its id. Its hop, the hop's triple
    and labels, and the edits that override it are the same for every case that shares the
    fact, and one edit overrides the same fact in many cases (923 k hits, 58 k distinct
    contents at 1 M cases, ``random:100000``; 555 and 50 on MQuAKE-hard, ``random:100``). So
    each content's texts are written once and each hit only points at its content.
    ``contents`` holds the unedited cases' contents first, then the edited ones'.
    """

    hits: pl.DataFrame
    contents: pl.DataFrame

    @classmethod
    def empty(cls) -> Contamination:
        return cls(pl.DataFrame(schema=HIT_SCHEMA), pl.DataFrame(schema=CONTENT_SCHEMA))


#: An edit's coded columns that its texts quote (cast to strings once, see :func:`contamination`).
_EDIT_TEXT = ("t_s", "t_r", "t_o", "subject", "new_str")


def _edit_json(records: pl.Expr, ks: pl.Expr) -> pl.Expr:
    """One contaminating edit as ``details`` lists it (JSON), from its source lists."""
    return pl.struct(
        pl.concat_list("t_s", "t_r", "t_o").alias("triple"),
        pl.col("subject"),
        pl.col("new_str").alias("target_new"),
        records.list.head(MAX_LISTED).alias("source_cases"),
        ks.list.head(MAX_LISTED).alias("source_edit_index"),
        records.list.len().alias("n_source_cases"),
    )


def _quoted(col: str) -> pl.Expr:
    """A string column as JSON (``null`` for null), for values known to need no escaping."""
    c = pl.col(col).cast(pl.String)
    return (
        pl.when(c.is_null())
        .then(pl.lit("null"))
        .otherwise(pl.concat_str(pl.lit('"'), c, pl.lit('"')))
    )


def _triple_text() -> pl.Expr:
    return pl.concat_str(
        pl.lit('["'),
        pl.col("t_s").cast(pl.String),
        pl.lit('","'),
        pl.col("t_r").cast(pl.String),
        pl.lit('","'),
        pl.col("t_o").cast(pl.String),
        pl.lit('"]'),
    )


def _value_struct(case_id: pl.Expr) -> pl.Expr:
    """One withheld edit of the fix, as a struct (encoded with the list)."""
    return pl.struct(
        case_id.alias("case_id"),
        pl.col("k").alias("edit_index"),
        pl.concat_list("t_s", "t_r", "t_o").alias("triple"),
    )


def _value_text(ints: bool) -> pl.Expr:
    """:func:`_value_struct` as the JSON text ``json_encode`` writes (no escaping needed)."""
    return pl.concat_str(
        pl.lit('{"case_id":'),
        pl.col("record") if ints else _quoted("record"),
        pl.lit(',"edit_index":'),
        pl.col("k").cast(pl.String),
        pl.lit(',"triple":'),
        _triple_text(),
        pl.lit("}"),
    )


def _json_list(strings: pl.Expr) -> pl.Expr:
    """A list of strings known to need no escaping → its JSON array."""
    return pl.concat_str(pl.lit('["'), strings.list.join('","'), pl.lit('"]'))


def _edit_text() -> pl.Expr:
    """:func:`_edit_json` as text, after the group-by (no escaping needed)."""
    records, ks = pl.col("src_records"), pl.col("src_k")
    return pl.concat_str(
        pl.lit('{"triple":'),
        _triple_text(),
        pl.lit(',"subject":'),
        _quoted("subject"),
        pl.lit(',"target_new":'),
        _quoted("new_str"),
        pl.lit(',"source_cases":'),
        _json_list(records.list.head(MAX_LISTED)),
        pl.lit(',"source_edit_index":['),
        ks.list.head(MAX_LISTED).cast(pl.List(pl.String)).list.join(","),
        pl.lit('],"n_source_cases":'),
        records.list.len().cast(pl.String),
        pl.lit("}"),
    ).alias("edit")


def _withhold_text() -> pl.Expr:
    """:func:`_withhold_json` as text, from the values' texts (no escaping needed)."""
    return pl.concat_str(
        pl.lit('{"op":"extend","field":"withheld_edits","values":['),
        pl.col("values").list.join(","),
        pl.lit('],"refs":'),
        _json_list(pl.col("src_records")),
        pl.lit(',"reason":"contaminating edit(s) withheld when this case is asked"}'),
    ).alias("withhold")


def _withhold_json(values: pl.Expr, refs: pl.Expr) -> pl.Expr:
    """The ``withheld_edits`` fix of one hop (JSON): every contaminating source, in (source
    case, edit index) order (``details`` lists at most :data:`MAX_LISTED`; the fix must not)."""
    return (
        pl.struct(
            pl.lit("extend").alias("op"),
            pl.lit("withheld_edits").alias("field"),
            values.alias("values"),
            refs.alias("refs"),
            pl.lit("contaminating edit(s) withheld when this case is asked").alias("reason"),
        )
        .struct.json_encode()
        .alias("withhold")
    )


#: No entry, in the lookup arrays of :func:`_candidates` (codes never reach it).
_NONE = np.uint32(0xFFFFFFFF)


def _run_start(col: str) -> pl.Expr:
    """Does this row start a run of ``col`` (differ from the row before; the first row does)?"""
    return pl.col(col).ne_missing(pl.col(col).shift(1))


def _codes(col: pl.Series, null: int) -> np.ndarray:
    """A coded column's codes as numpy (no copy when it has no nulls), a null as ``null``."""
    codes = col.to_physical()
    if codes.null_count():
        codes = codes.fill_null(null)
    return codes.to_numpy()


def _candidates(data: KEData, edited: pl.Series, per_key: pl.DataFrame) -> pl.DataFrame:
    """The hops some applied key overrides: each case's correct path (``new_triples`` if edited,
    else ``triples``) whose (subject, relation) is an applied key, unless that key's only
    object is the hop's own; with the key's ``o_min``, ``o_max`` and first triple ``__t``.

    Why arrays and not a join: the lookup runs over every hop on its path (4 M at 1 M cases),
    and codes are dense integers. A table indexed by the subject's code gives the subject's
    first applied key (``per_key`` is sorted by key, so by subject, then relation); nearly
    every subject has one key, whose relation is then compared; the hops whose subject has
    several keys (a few percent) are found among them by a binary search. Measured at 1 M
    cases, ``random:100000``, one thread: 0.23 s against 0.45 s for the filter and hash join it
    replaced. Memory: one 32-bit entry and one byte per distinct code, besides the hops' own
    columns.
    """
    hops = data.hops
    keys = per_key["key"].to_numpy()
    k_s = (keys >> np.uint64(32)).astype(np.uint32)
    subjects = _codes(hops["s"], 0)
    size = int(max(subjects.max(initial=0), int(k_s.max()))) + 1
    first = np.full(size, _NONE, dtype=np.uint32)
    # the first key of each subject: the keys are sorted, so written last-to-first
    first[k_s[::-1]] = np.arange(len(keys) - 1, -1, -1, dtype=np.uint32)
    has = np.zeros(size, dtype=bool)
    has[k_s] = True
    path = hops["path"]
    assert isinstance(path.dtype, pl.Enum)  # the hops table's PATH
    arrays = _HopArrays(
        subjects=subjects,
        s_valid=hops["s"].is_not_null().to_numpy() if hops["s"].null_count() else None,
        new=path.to_physical().to_numpy() == path.dtype.categories.to_list().index("new"),
        rows=hops["row"].to_numpy(),
        by_row=_by_row(data, edited).to_numpy(),
        r=_codes(hops["r"], int(_NONE)),
        o=_codes(hops["o"], int(_NONE)),
        has=has,
        first=first,
        keys=keys,
        k_s=k_s,
        k_r=(keys & np.uint64(0xFFFFFFFF)).astype(np.uint32),
        o_min=per_key["o_min"].to_numpy(),
        o_max=per_key["o_max"].to_numpy(),
    )
    # numpy releases the GIL in these gathers: the hops in ranges, one per core (1 M cases,
    # 8 M hops: ~2x faster on two cores than in one range)
    n = hops.height
    parts = min(available_cores(), max(1, n // 1_000_000))
    bounds = [n * i // parts for i in range(parts + 1)]
    if parts == 1:
        found = [_candidates_in(arrays, 0, n)]
    else:
        with ThreadPoolExecutor(parts) as pool:
            found = list(pool.map(_candidates_in, [arrays] * parts, bounds[:-1], bounds[1:]))
    idx = pl.Series("__i", np.concatenate([f[0] for f in found]), dtype=pl.UInt32)
    found_keys = per_key[pl.Series(np.concatenate([f[1] for f in found]), dtype=pl.UInt32)]
    return (
        hops.select("row", (pl.col("path") == "new").alias("edited"), "hop", "s", "r", "o")[idx]
        .with_columns(idx)
        .select("__i", "row", "edited", "hop", "s", "r", "o")
        .hstack(found_keys)
    )


@dataclass(frozen=True)
class _HopArrays:
    """What :func:`_candidates_in` reads: the hops' columns as numpy (views where possible) and
    the lookup tables built from the applied keys."""

    subjects: np.ndarray  # subject codes (a null read as 0, see ``s_valid``)
    s_valid: np.ndarray | None  # the subjects that are not null, when some are
    new: np.ndarray  # is the hop on ``new_triples``?
    rows: np.ndarray
    by_row: np.ndarray  # is the case edited, by row
    r: np.ndarray
    o: np.ndarray
    has: np.ndarray  # by subject code: has the subject an applied key?
    first: np.ndarray  # by subject code: its first key
    keys: np.ndarray  # the applied keys, sorted
    k_s: np.ndarray
    k_r: np.ndarray
    o_min: np.ndarray
    o_max: np.ndarray


def _candidates_in(a: _HopArrays, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """The candidates among hops ``lo:hi`` (their positions, and each one's key): a pure
    function of the arrays, so ranges run on threads side by side.

    The hops whose subject has a key are looked up in a table of flags (a byte a code: a
    quarter of the 32-bit table's cache lines), then of those the hops on their path
    (``new_triples`` of the edited cases, ``triples`` of the others). A null subject,
    relation or object is a code no key has.
    """
    idx = np.flatnonzero(a.has[a.subjects[lo:hi]]) + lo
    if a.s_valid is not None:
        idx = idx[a.s_valid[idx]]
    idx = idx[a.new[idx] == a.by_row[a.rows[idx]]]
    at = a.first[a.subjects[idx]]
    r = a.r[idx]
    hit = a.k_r[at] == r
    # subjects with several keys: the hop's key searched among them
    last = len(a.keys) - 1
    nxt = np.minimum(at + 1, last)
    multi = ~hit & (a.k_s[nxt] == a.k_s[at]) & (nxt != at)
    if multi.any():
        want = (a.k_s[at[multi]].astype(np.uint64) << np.uint64(32)) | r[multi].astype(np.uint64)
        pos = np.minimum(np.searchsorted(a.keys, want), last)
        found = a.keys[pos] == want
        m = np.flatnonzero(multi)
        at[m[found]] = pos[found]
        hit[m[found]] = True
    idx, at = idx[hit], at[hit]
    o = a.o[idx]
    keep = (o != a.o_min[at]) | (o != a.o_max[at])
    return idx[keep], at[keep]


def contamination(data: KEData, edited: pl.Series) -> Contamination:
    """Every (victim case, hop) whose correct path an applied edit of another case overrides.

    One row per contaminated hop, with its overriding edits (JSON, at most :data:`MAX_LISTED`,
    by object, each naming its source cases) and the fix that withholds *all* of them. Built by
    joins and array lookups on the codes, never a loop over hits or pairs of cases:

    1. the correct path of each case (``new_triples`` if edited, else ``triples``) is matched to
       the applied edits by (subject, relation) as one 64-bit key of their two codes (exact:
       see :func:`sr_key`), and a hop stays a candidate unless every applied edit of its key
       has the hop's own object (per key only the least and greatest object code are needed:
       no string hashing over the millions of hops);
    2. the applied edits of the candidates' keys are grouped per distinct edit triple with its
       source cases, and each triple's ``details`` entry and fix are written *once* (a triple
       overrides many hops: 58k triples for 923k hits at 1 M cases, ``random:100000``);
    3. candidates join their triples on that key, the objects' codes compared (codes are equal
       exactly when the strings are); a hit stands if a source other than the victim itself
       remains once the victim's withheld edits are left out (a case's own edit against its
       own chain is a structural defect: KE104/KE105).

    A hop overridden by one triple that the victim neither applies nor withholds (nearly all of
    them) takes its triple's JSON as is; only the others are grouped per hop. Memory follows
    the number of hops, applied edits and hits, never pairs of cases.
    """
    empty = Contamination.empty()
    lazy = _applied(data, edited).select(
        "row",
        "k",
        *_EDIT_TEXT,
        sr_key("t_s", "t_r").alias("key"),
        pl.col("t_o").to_physical().alias("__o"),
    )
    # The streaming engine: measured 2x faster than the default for these million-row
    # group-bys and joins (1 M cases, `all`).
    applied = lazy.collect(engine="streaming")
    if applied.is_empty():
        return empty
    # The applied edits sorted by triple, (key, object code), ``key`` holding the subject's and
    # relation's codes, and within a triple in (case, edit) order: each triple's edits are one
    # run, numbered ``__t`` in that order, each key's triples one run (its least and greatest
    # object code its first and last). One sort of the applied edits instead of group-bys and
    # scatters (1 M cases, ``random:100000``: 0.18 -> 0.05 s).
    applied = applied.sort("key", "__o", "row", "k").with_columns(
        _run_start("key").alias("__new_key")
    )
    applied = applied.with_columns(
        (pl.col("__new_key") | _run_start("__o")).cum_sum().cast(pl.UInt32).sub(1).alias("__t")
    )
    last_of_key = applied.select(
        pl.col("key").ne_missing(pl.col("key").shift(-1)).arg_true()
    ).to_series()
    per_key = applied.filter("__new_key").select(
        "key",
        pl.col("__o").alias("o_min"),
        applied["__o"].gather(last_of_key).alias("o_max"),
        "__t",
    )
    # each triple's key and object, by triple number
    triples = applied.filter(_run_start("__t")).select("key", "__o", "__t")
    cand = _candidates(data, edited, per_key)
    if cand.is_empty():
        return empty
    # A key with one object overrides the hop with its one triple, known from the lookup; a
    # key with several (rare) is joined with its triples, each a hit unless its object is
    # the hop's own.
    hop_columns = ("__i", "row", "edited", "hop", "s", "r", "o")
    hits = cand.filter(pl.col("o_min") == pl.col("o_max")).select(*hop_columns, "__t")
    several = cand.filter(pl.col("o_min") != pl.col("o_max"))
    if several.height:
        expanded = (
            several.select(*hop_columns, "key")
            .join(triples.select("key", "__o", "__t"), on="key")
            .filter(pl.col("o").is_null() | (pl.col("o").to_physical() != pl.col("__o")))
            .select(*hop_columns, "__t")
        )
        hits = pl.concat([hits, expanded]).sort("__i", "__t", maintain_order=True)
    # The edits of the triples that hit, with their case ids: runs of ``applied``, so in
    # (triple, case, edit) order already; each hit triple's row among them (its texts' number)
    # is its rank among the hit triples.
    hit_triple = np.zeros(triples.height, dtype=bool)
    hit_triple[hits["__t"].to_numpy()] = True
    sources = applied.filter(pl.lit(pl.Series(hit_triple)).gather(pl.col("__t")))
    text_of = pl.Series(np.cumsum(hit_triple, dtype=np.uint32) - np.uint32(1))
    # (triple, source row) as one integer: is the victim among the triple's sources?
    pair = (pl.col("__t").cast(pl.UInt64) * (1 << 32)) + pl.col("row").cast(pl.UInt64)
    own = sources.select(pair).to_series()
    withholding = data.marks.filter(pl.col("withheld").list.len() > 0)
    marked = _flag_by_row(data, data.cases["row"].is_in(withholding["row"].implode()))
    hits = hits.with_columns(
        # the general path: a hop overridden by several triples, a victim among the
        # sources, or a victim that withholds edits
        (
            pl.col("__i").eq_missing(pl.col("__i").shift(1))
            | pl.col("__i").eq_missing(pl.col("__i").shift(-1))
            | pair.is_in(own.implode())
            | marked
        ).alias("general")
    )
    # the hits of the simple path are the candidates' rows already, in their order; their
    # texts are their triple's (``texts``: the triples' rows, then one per general hop)
    victims = hits.filter(~pl.col("general")).select(
        *hop_columns, pl.lit(text_of).gather(pl.col("__t")).alias("texts")
    )
    general = hits.filter(pl.col("general"))
    if general.height:
        per_triple = _triple_texts(data, sources)
        general = _general_hits(
            data,
            general.select("__i", "row", "__t").join(per_triple, on="__t", maintain_order="left"),
        )
        texts = _texts(per_triple)
        if general.height:
            texts = pl.concat([texts, general.drop("__i")], how="vertical_relaxed")
            general = cand.select(hop_columns).join(
                general.select("__i").with_row_index("texts", offset=per_triple.height),
                on="__i",
                maintain_order="left",
            )
            victims = pl.concat([victims, general], how="vertical_relaxed").sort("__i")
        victims, content, groups = _contents(data, victims)
    else:
        # Nearly always: the triples' texts and the hits' contents do not depend on each
        # other, and each is mostly one polars thread's work, so they run side by side
        # (1 M cases, ``random:100000``: ~0.15 s each).
        with ThreadPoolExecutor(1) as pool:
            job = pool.submit(_triple_texts, data, sources)
            victims, content, groups = _contents(data, victims)
            texts = _texts(job.result())
    contents = groups.drop("content", "__h").with_columns(
        c.gather(groups["texts"]) for c in texts.get_columns()
    )
    return Contamination(
        victims.select(
            "row",
            data.records_by_row().gather(victims["row"]),
            "edited",
            content.alias("content"),
        ).select(pl.col(c).cast(t) for c, t in HIT_SCHEMA.items()),
        contents.select(pl.col(c).cast(t) for c, t in CONTENT_SCHEMA.items()),
    )


def _triple_texts(data: KEData, sources: pl.DataFrame) -> pl.DataFrame:
    """Per hit triple, in triple order: its source cases, rows and edit indexes (in (case,
    edit) order), its first edit's texts, its ``details`` entry (``edit``) and its fix.

    The coded values are cast to text once per triple (each triple's edits share its triple;
    ``subject`` and ``new_str`` are its first edit's): a cast reads each value from polars'
    global string cache (~0.2 µs a value once the cache outgrows the CPU's: millions of ids),
    and the texts below and the escape check would each cast them again.
    """
    ints = _integer_case_ids(data)
    case_id = pl.col("record").cast(pl.Int64) if ints else pl.col("record")
    first_of = sources.select(_run_start("__t").cum_sum().cast(pl.UInt32).sub(1)).to_series()
    as_text = sources.filter(_run_start("__t")).select(
        pl.col(c).cast(pl.String) for c in _EDIT_TEXT
    )
    sources = sources.with_columns(
        pl.lit(data.records_by_row()).gather(pl.col("row")).alias("record"),
        *[c.gather(first_of) for c in as_text.get_columns()],
        pl.col("__t").set_sorted(),
    )
    # JSON written as text when no value needs escaping (ids and labels nearly always):
    # ``json_encode`` of the nested structs was a third of the table's time.
    plain = not (
        as_text.select(pl.any_horizontal(pl.all().str.contains(_NEEDS_ESCAPE).any())).item()
        or sources["record"].str.contains(_NEEDS_ESCAPE).any()
    )
    return (
        # a group keeps its rows' order (polars documents it): (case, edit) order
        sources.group_by("__t", maintain_order=True)
        .agg(
            pl.col("record").alias("src_records"),
            pl.col("row").alias("src_rows"),
            pl.col("k").alias("src_k"),
            (_value_text(ints) if plain else _value_struct(case_id)).alias("values"),
            *[pl.col(c).first() for c in _EDIT_TEXT],
        )
        .with_columns(
            _edit_text()
            if plain
            else _edit_json(pl.col("src_records"), pl.col("src_k"))
            .struct.json_encode()
            .alias("edit"),
            _withhold_text() if plain else _withhold_json(pl.col("values"), pl.col("src_records")),
        )
        .drop("values")
        # the ``edits`` list of a hop overridden by this triple alone, written once per triple
        .with_columns(pl.concat_str(pl.lit("["), pl.col("edit"), pl.lit("]")).alias("edits"))
    )


def _texts(per_triple: pl.DataFrame) -> pl.DataFrame:
    """What a hop overridden by one triple alone says (see ``CONTENT_SCHEMA``), per triple."""
    return per_triple.select(
        pl.lit(1, pl.UInt32).alias("n_edits"),
        "edits",
        pl.col("new_str").alias("first_target"),
        pl.col("src_records").list.first().alias("first_source"),
        "withhold",
    )


def _contents(data: KEData, victims: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series, pl.DataFrame]:
    """The victims with their hops' labels, each victim's content number, and the distinct
    contents (numbered, unedited first) with the texts row each takes."""
    at = victims["__i"]
    victims = victims.with_columns(data.hops["s_label"].gather(at), data.hops["o_label"].gather(at))

    # The distinct contents, numbered (unedited first), and each hit's number: a group-by
    # with each group's hits, scattered back (measured 1.5x faster than a unique and a join).
    # A content is (edited, texts, hop, s, r, o, s_label, o_label); ``texts`` determines s and
    # r (the hop's key is its triple's; a general hop's texts are its own), so the key is the
    # rest, packed into three integers (see :func:`_groups`). 923 k hits at 1 M cases: 0.13 s
    # grouping the eight columns, four of them categorical; 0.05 s this way.
    def code(c: str) -> pl.Expr:
        return pl.col(c).to_physical().cast(pl.UInt64).fill_null(int(_NONE))

    packed = victims.select(
        (
            pl.col("texts").cast(pl.UInt64) * (1 << 32)
            + pl.col("hop").cast(pl.UInt64) * 2
            + pl.col("edited").cast(pl.UInt64)
        ).alias("__a"),
        (code("o") * (1 << 32) + code("s_label")).alias("__b"),
        code("o_label").alias("__c"),
    )
    groups = _groups(packed)
    key = ["edited", "texts", "hop", "s", "r", "o", "s_label", "o_label"]
    groups = (
        victims.select(key)[groups["__f"]]
        .with_columns(groups["__h"])
        .sort("edited", maintain_order=True)
        .with_row_index("content")
    )
    members = groups.select("content", "__h").explode("__h")
    content = pl.repeat(0, victims.height, dtype=pl.UInt32, eager=True).scatter(
        members["__h"], members["content"]
    )
    return victims, content, groups


def _groups(packed: pl.DataFrame) -> pl.DataFrame:
    """The rows of ``packed`` (integer columns ``__a``, ``__b``, ``__c``) grouped by equal
    values: per group its rows (``__h``, in order) and its first row (``__f``), in no
    particular order.

    Grouped by ``__a`` alone, with the least and greatest ``__b`` and ``__c`` of each group:
    nearly every group is constant on those (a hit's content is mostly its triple and hop;
    the hop's object and labels are the fact's, shared by every case that asks it), and only
    the groups that are not are grouped again on all three. One integer column hashes several
    times faster than three (923 k hits at 1 M cases, ``random:100000``).
    """
    by_a = (
        packed.with_row_index("__h")
        .group_by("__a")
        .agg(
            "__h",
            (pl.col("__b").min() != pl.col("__b").max())
            .or_(pl.col("__c").min() != pl.col("__c").max())
            .alias("__mixed"),
        )
    )
    mixed = by_a["__mixed"]
    if mixed.any():
        rows = by_a.filter("__mixed").select(pl.col("__h").explode())
        again = (
            packed[rows["__h"]]
            .with_columns(rows["__h"])
            .group_by("__a", "__b", "__c", maintain_order=True)
            .agg("__h")
        )
        by_a = pl.concat([by_a.filter(~mixed).select("__h"), again.select("__h")])
    return by_a.select("__h", pl.col("__h").list.first().alias("__f"))


def _general_hits(data: KEData, hits: pl.DataFrame) -> pl.DataFrame:
    """Per hop (``__i``), for the hits :func:`contamination` cannot take as one triple's JSON:
    withheld sources left out, the victim's own edits not counted, several triples merged."""
    hits = (
        _without_withheld(data, hits.lazy())
        .filter(
            # a source other than the victim itself
            (pl.col("src_rows").list.min() != pl.col("row"))
            | (pl.col("src_rows").list.max() != pl.col("row"))
        )
        .collect()
    )
    schema = {c: CONTENT_SCHEMA[c] for c in ("n_edits", "edits", "first_target")}
    if hits.is_empty():
        return pl.DataFrame(
            schema={"__i": pl.UInt32, **schema, "first_source": pl.String, "withhold": pl.String}
        )
    per_hop = (
        hits.group_by("__i")
        .agg(
            _edit_json(pl.col("src_records"), pl.col("src_k"))
            .sort_by(pl.col("t_o"))
            .head(MAX_LISTED)
            .alias("edits"),
            pl.len().cast(pl.UInt32).alias("n_edits"),
        )
        .with_columns(
            pl.col("edits")
            .list.first()
            .struct.field("target_new")
            .cast(pl.String)
            .alias("first_target"),
            pl.col("edits")
            .list.first()
            .struct.field("source_cases")
            .list.first()
            .alias("first_source"),
            pl.struct("edits")
            .struct.json_encode()
            .str.strip_prefix('{"edits":')
            .str.strip_suffix("}")
            .alias("edits"),
        )
    )
    return per_hop.join(_withhold_fix(data, hits), on="__i", how="left").select(
        "__i", "n_edits", "edits", "first_target", "first_source", "withhold"
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
        # kept in order: the lists are in (source case, edit) order and must stay so
        .join(withheld.lazy(), on=["row", "withheld"], how="anti", maintain_order="left")
        .group_by("__h", maintain_order=True)
        .agg("src_records", "src_rows", "src_k")
    )
    return (
        h.drop("src_records", "src_rows", "src_k")
        .join(kept, on="__h", maintain_order="left")
        .drop("__h")
    )


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


@RULES.prepare
def resolve_edit_set_first(ctx: AuditContext) -> None:
    """Resolve the edit set before any rule runs: a bad ``ids:`` file or ``random:K`` with K
    above the number of cases is an error now, not after minutes of other rules."""
    ctx.table("edited")


@RULES.table("contamination")
def contamination_table(ctx: AuditContext) -> Contamination:
    """The contamination join for the edit set (KE201 and KE202 both read it)."""
    return contamination(ctx.data, ctx.table("edited"))


def _contam_findings(ctx: AuditContext, edited_side: bool) -> pl.DataFrame:
    table: Contamination = ctx.table("contamination")
    on_side = int(table.hits["edited"].sum())
    if not edited_side:
        on_side = table.hits.height - on_side
    if not on_side:
        return empty_rule_output()
    # one side only (every hit unedited, as at ``random:K`` with K well below the cases): no
    # copy of the hits
    hits = table.hits
    if on_side < hits.height:
        hits = hits.filter(pl.col("edited") == edited_side)
    # the texts are written per content (see :class:`Contamination`), then gathered per hit
    # (strings are views in polars: the gather copies no text); unedited contents come first
    unedited = int(table.contents["edited"].not_().sum())
    offset = unedited if edited_side else 0
    j = table.contents.slice(offset, None if edited_side else unedited).with_columns(
        # as text once (see the cast in :func:`contamination`)
        pl.col(c).cast(pl.String).alias(f"__{c}")
        for c in ("s", "r", "o", "s_label", "o_label")
    )
    lst = "new_triples" if edited_side else "triples"
    s, r, o = pl.col("__s"), pl.col("__r"), pl.col("__o")
    # a null object is written ``null``, not as a string
    escaped = pl.any_horizontal(
        *[c.str.contains(_NEEDS_ESCAPE).any() for c in (s, r, o)], o.is_null().any()
    )
    if j.select(escaped).item():
        head = (
            pl.struct(
                pl.concat_list(s, r, o).alias("hop_triple"),
                pl.col("hop"),
                pl.col("n_edits").alias("contaminating_edits"),
            )
            .struct.json_encode()
            .str.strip_suffix("}")
        )
    else:
        # the same text, written directly: ``json_encode`` took 1 µs a finding (a third of the
        # contamination rules' time) for ids that need no escaping
        head = pl.concat_str(
            pl.lit('{"hop_triple":["'),
            s,
            pl.lit('","'),
            r,
            pl.lit('","'),
            o,
            pl.lit('"],"hop":'),
            pl.col("hop").cast(pl.String),
            pl.lit(',"contaminating_edits":'),
            pl.col("n_edits").cast(pl.String),
        )
    texts = j.select(
        field=pl.format(f"orig.{lst}[{{}}]", "hop"),
        message=pl.format(
            "hop {} ({}, {}, {}) is overridden by {} edit(s) from other cases, "
            "e.g. → {} from case {}",
            "hop",
            pl.col("__s_label").fill_null(s),
            r,
            pl.col("__o_label").fill_null(o),
            "n_edits",
            "first_target",
            "first_source",
        ),
        # {"hop_triple": ..., "hop": ..., "contaminating_edits": ..., "edits": [...]}: the
        # edits' JSON is written per triple by the table, not once per hit
        details=pl.concat_str(head, pl.lit(',"edits":'), "edits", pl.lit("}")),
        fix=pl.col("withhold"),
    )
    at = hits["content"] - offset
    return hits.select("row", "record", *[c.gather(at) for c in texts.get_columns()])


#: A character JSON writes escaped (a quote, a backslash, a control character).
_NEEDS_ESCAPE = r'["\\\x00-\x1f]'


def _integer_case_ids(data: KEData) -> bool:
    """Are the valid cases' ids integers? Then a ``withheld_edits`` entry writes its case id as
    an integer, as the records do (an invalid record's id may be anything: not counted)."""
    shape = getattr(data, "shape", None)
    if shape is not None and shape.id_types:  # the reader noted the valid ids' types
        return set(shape.id_types) == {int}
    ids = data.all_ids
    types = set(map(type, ids))  # one pass in C, no Python-level loop over a million ids
    if types != {int} and data.cases.height < len(ids):
        ids = [ids[r] for r in data.cases["row"].to_list()]
        types = set(map(type, ids))
    return types == {int}


def _withhold_fix(data: KEData, hits: pl.DataFrame) -> pl.DataFrame:
    """Per contaminated hop (``__i``) with several triples or sources of its own: the
    ``withheld_edits`` fix, every source but the victim, in (source case, edit index) order."""
    ints = _integer_case_ids(data)
    case_id = pl.col("src_records").cast(pl.Int64) if ints else pl.col("src_records")
    return (
        hits.select("__i", "row", "t_s", "t_r", "t_o", "src_records", "src_rows", "src_k")
        .explode(["src_records", "src_rows", "src_k"])
        .filter(pl.col("src_rows") != pl.col("row"))
        .sort("__i", "src_rows", "src_k")
        .group_by("__i", maintain_order=True)
        .agg(
            pl.struct(
                case_id.alias("case_id"),
                pl.col("src_k").alias("edit_index"),
                pl.concat_list("t_s", "t_r", "t_o").alias("triple"),
            ).alias("values"),
            pl.col("src_records").alias("refs"),
        )
        .select("__i", _withhold_json(pl.col("values"), pl.col("refs")))
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
    known = (
        with_record(data, data.edits.select("row", "k"))
        .select(
            pl.concat_str(pl.col("record"), pl.col("k").cast(pl.String), separator="\x1f").alias(
                "withheld"
            )
        )
        .unique()
    )
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
