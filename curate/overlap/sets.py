"""Overlap between named collections of keys: Jaccard matrix, containment, UpSet intersections.

A *collection* is a dataset, a split, or any named set (the generation techniques of a deepfake
dataset); a *key* is what identifies an item in it (a content hash, a subject id, a fact triple,
a normalised question, a glycan's canonical key, a technique name). Leakage between a train and
a test split, novelty of a dataset against earlier ones, and double counting across benchmarks
are all the same question: how much do the key sets overlap. This module answers it for any
number of collections at once, independent of where the keys came from (the families declare
their keys, :class:`curate.core.keys.Keys` listed in ``Family.keys``, and
:mod:`curate.cli.overlap` reads files).

Why a membership *pattern* per key rather than pairwise set intersections: a key's pattern is the
set of collections that hold it (a bit mask). One group-by over (key, collection) gives every
key's pattern; a second one gives the count of keys per pattern — which *is* the UpSet plot
(exclusive intersections) — and the pairwise intersection matrix follows as ``Mᵀ·diag(c)·M``
over the distinct patterns (``M`` patterns × collections, 0/1), a small matrix product. So the
cost is two hash group-bys over the rows plus ``P·n²`` for ``P`` distinct patterns, never a
Python loop over keys or over the ``n²/2`` pairs of sets; millions of keys in tens of
collections take about a second. Keys are coded as 64-bit integers first (checked to be
collision-free, see :func:`_code`) so that the group-bys hash integers, not strings.

Matching is exact by default (byte-equal strings), because that is what a published figure
computed and what a leak check must not blur. :func:`normalise_members` folds case, Unicode
(NFKC), spacing and punctuation and applies a user alias table on request, and records which
raw spellings were merged into each normalised key, so the effect of normalising is visible,
not silent.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from polars.datatypes import DataTypeClass

from curate.core.errors import InputError, UsageError

__all__ = [
    "Overlap",
    "load_aliases",
    "members_from_sets",
    "normalise_expr",
    "normalise_members",
    "overlap",
]

#: Columns of a members frame: one row per (collection, key) occurrence (repeats allowed).
MEMBER_SCHEMA = {"collection": pl.String, "key": pl.String}

#: Runs of punctuation and symbols: replaced by one space before spaces are collapsed, so that
#: "Hey-Jude" and "Hey Jude" agree while "SDv1.5" and "SDv15" stay apart.
_PUNCT = r"[\p{P}\p{S}]+"


def members_from_sets(sets: Mapping[str, Iterable[Any]]) -> pl.DataFrame:
    """A members frame from ``{name: items}`` (items are turned into text; None is skipped)."""
    names: list[str] = []
    keys: list[str] = []
    for name, items in sets.items():
        for item in items:
            if item is None:
                continue
            names.append(str(name))
            keys.append(item if isinstance(item, str) else str(item))
    return pl.DataFrame({"collection": names, "key": keys}, schema=MEMBER_SCHEMA)


def normalise_expr(expr: pl.Expr) -> pl.Expr:
    """Unicode NFKC, lower case, punctuation and symbols to spaces, spaces collapsed and stripped.

    Why this order: NFKC first turns compatibility forms (full-width letters, ligatures,
    non-breaking spaces) into their plain letters, so that case folding and the punctuation
    class see ordinary characters. Punctuation becomes a space rather than nothing so that
    hyphenated and spaced spellings agree ("DiffGAN-TTS" and "DiffGAN TTS"); spelling
    differences *inside* a word ("FirstOrder" vs "First Order") are left to the alias table,
    because merging on them would also merge names that differ only by a space for a reason.
    """
    return (
        expr.str.normalize("NFKC")
        .str.to_lowercase()
        .str.replace_all(_PUNCT, " ")
        .str.replace_all(r"\s+", " ")
        .str.strip_chars()
    )


def load_aliases(path: str | Path) -> dict[str, str]:
    """An alias table ``variant → canonical`` from a JSON object or a two-column CSV.

    CSV: a header line is optional (a first row ``variant,canonical`` or ``alias,name`` is taken
    as a header); each later row maps its first cell to its second. JSON: an object of strings,
    or ``{canonical: [variants]}`` (a list value lists the variants of its key).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise InputError("alias table not found", path=path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"alias table is not UTF-8 text ({e.reason})", path=path) from None
    out: dict[str, str] = {}
    if p.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as e:
            raise InputError(f"alias table is not JSON: {e.msg}", path=path) from None
        if not isinstance(raw, dict):
            raise InputError("alias table must be a JSON object {variant: canonical}", path=path)
        for k, v in raw.items():
            if isinstance(v, str):
                out[k] = v
            elif isinstance(v, list) and all(isinstance(x, str) for x in v):
                out.update({x: k for x in v})
            else:
                raise InputError(f"alias {k!r}: value must be a name or a list of names", path=path)
    else:
        import csv
        import io

        rows = [r for r in csv.reader(io.StringIO(text)) if any(c.strip() for c in r)]
        if rows and [c.strip().lower() for c in rows[0][:2]] in (
            ["variant", "canonical"],
            ["alias", "name"],
            ["alias", "canonical"],
        ):
            rows = rows[1:]
        for i, r in enumerate(rows, 1):
            if len(r) < 2 or not r[1].strip():
                raise InputError(
                    "alias table row needs two cells: variant,canonical", path=path, position=str(i)
                )
            out[r[0]] = r[1]
    if not out:
        raise InputError("alias table is empty", path=path)
    return out


def normalise_members(
    members: pl.DataFrame,
    *,
    normalize: bool = False,
    aliases: Mapping[str, str] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``members`` with keys normalised and/or aliased, and which raw keys merged into each one.

    With ``normalize`` the keys go through :func:`normalise_expr`; the alias table maps a
    variant to its canonical name — both sides normalised too when ``normalize`` is on, so the
    table can be written as people spell the names. Aliases resolve in one step (a canonical
    name is not looked up again). The second frame has one row per resulting key that more
    than one distinct raw key became: ``key``, ``variants`` (the raw spellings, sorted),
    ``collections`` (where they occur) — what normalising merged, to be shown, never silent.
    """
    if not normalize and not aliases:
        return members, pl.DataFrame(
            schema={
                "key": pl.String,
                "variants": pl.List(pl.String),
                "collections": pl.List(pl.String),
            }
        )
    df = members.with_columns(pl.col("key").alias("raw"))
    if normalize:
        df = df.with_columns(normalise_expr(pl.col("key")).alias("key"))
    if aliases:
        table = pl.DataFrame(
            {"variant": list(aliases), "canonical": list(aliases.values())},
            schema={"variant": pl.String, "canonical": pl.String},
        )
        if normalize:
            table = table.with_columns(
                normalise_expr(pl.col("variant")).alias("variant"),
                normalise_expr(pl.col("canonical")).alias("canonical"),
            )
        table = table.unique("variant", keep="last")
        df = (
            df.join(table, left_on="key", right_on="variant", how="left", maintain_order="left")
            .with_columns(pl.coalesce("canonical", "key").alias("key"))
            .drop("canonical")
        )
    # an item normalised to nothing (" ", "-") is no key at all
    df = df.filter(pl.col("key").is_not_null() & (pl.col("key") != ""))
    merged = (
        df.group_by("key")
        .agg(
            pl.col("raw").unique().sort().alias("variants"),
            pl.col("collection").unique().sort().alias("collections"),
        )
        .filter(pl.col("variants").list.len() > 1)
        .sort("key")
    )
    return df.select("collection", "key"), merged


@dataclass
class Overlap:
    """Every pairwise overlap of ``names`` and their exclusive intersections.

    ``sizes``: collection, size (distinct keys), rows (key occurrences, repeats included).
    ``pairs``: one row per unordered pair ``a`` before ``b`` in ``names`` order — sizes, the
    intersection and union counts, ``jaccard`` = |A∩B| / |A∪B|, ``a_in_b`` = |A∩B| / |A| (the
    share of A that B also holds) and ``b_in_a`` = |A∩B| / |B|; a ratio over an empty set is 0.
    ``intersections``: the UpSet bars — one row per membership pattern that some key has:
    ``members`` (list of names, in ``names`` order), ``degree``, ``count`` (keys held by exactly
    those collections), ``examples`` (a few of the keys, sorted).
    ``merged``: what normalisation merged (see :func:`normalise_members`).
    """

    names: list[str]
    sizes: pl.DataFrame
    pairs: pl.DataFrame
    intersections: pl.DataFrame
    merged: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={
                "key": pl.String,
                "variants": pl.List(pl.String),
                "collections": pl.List(pl.String),
            }
        )
    )

    def matrix(self, what: str = "jaccard") -> np.ndarray:
        """The ``n × n`` matrix of ``jaccard``, ``intersection`` or ``containment`` (row i, column
        j: |Aᵢ∩Aⱼ| / |Aᵢ|, the share of row i's keys that column j holds). Diagonal: 1 (or the
        size, for ``intersection``)."""
        n = len(self.names)
        pos = {name: i for i, name in enumerate(self.names)}
        sizes = dict(zip(self.sizes["collection"], self.sizes["size"], strict=True))
        m = np.zeros((n, n), dtype=np.float64)
        for name, i in pos.items():
            m[i, i] = sizes[name] if what == "intersection" else (1.0 if sizes[name] else 0.0)
        for r in self.pairs.iter_rows(named=True):
            i, j = pos[r["a"]], pos[r["b"]]
            if what == "containment":
                m[i, j], m[j, i] = r["a_in_b"], r["b_in_a"]
            else:
                m[i, j] = m[j, i] = r[what]
        return m

    def to_json(self) -> dict[str, Any]:
        """Plain data for ``--format json`` (floats unrounded)."""
        return {
            "collections": self.sizes.to_dicts(),
            "pairs": self.pairs.to_dicts(),
            "intersections": self.intersections.to_dicts(),
            "merged": self.merged.to_dicts(),
        }


def _code(keys: pl.Series) -> pl.Series:
    """Integer codes of ``keys``: equal strings, equal codes; different strings, different codes.

    A 64-bit hash is one vectorised pass (a categorical cast of millions of strings is ~50x
    slower). Exactness is checked, not assumed: a second hash with another seed must be constant
    within each code; if two strings ever share the first hash (p ≈ n²/2⁶⁵) they are told apart
    by the slower categorical coding instead. So two different keys never merge silently.
    """
    h1 = keys.hash(seed=0x0C0FFEE)
    h2 = keys.hash(seed=0x5EED5EED)
    clash = (
        pl.DataFrame({"h1": h1, "h2": h2})
        .group_by("h1")
        .agg(pl.col("h2").n_unique().alias("n"))
        .filter(pl.col("n") > 1)
        .height
    )
    if clash:
        return keys.cast(pl.Categorical).to_physical().cast(pl.UInt64)
    return h1


def overlap(
    members: pl.DataFrame,
    names: Sequence[str] | None = None,
    *,
    examples: int = 3,
) -> Overlap:
    """The overlap of the collections in ``members`` (columns ``collection``, ``key``).

    ``names`` fixes the order (and may name collections without any key: size 0); by default
    the order of first appearance. Null keys are ignored; repeats within one collection count
    once (``sizes`` keeps the row count too).
    """
    members = members.filter(pl.col("key").is_not_null())
    seen = members["collection"].unique(maintain_order=True).to_list()
    if names is None:
        names = seen
    names = list(names)
    if len(set(names)) != len(names):
        raise UsageError(
            "collection names must be unique: "
            + ", ".join(sorted({n for n in names if names.count(n) > 1}))
        )
    unknown = sorted(set(seen) - set(names))
    if unknown:
        raise UsageError(f"keys of unnamed collections: {unknown[:5]}")
    n = len(names)
    words = max(1, (n + 63) // 64)
    ids = pl.DataFrame({"collection": names, "cid": np.arange(n, dtype=np.int64)})
    rows = members.group_by("collection").len().rename({"len": "rows"})
    joined = members.join(ids, on="collection", maintain_order="left")
    coded = pl.DataFrame({"cid": joined["cid"], "kid": _code(joined["key"]), "key": joined["key"]})
    distinct = coded.select("cid", "kid").unique()
    cid = distinct["cid"].to_numpy()
    # one bit per collection: a key's pattern is the OR (= the sum, the pairs being distinct)
    # of its collections' bits, in 64-bit words
    distinct = distinct.with_columns(
        pl.Series("bit", np.left_shift(np.uint64(1), (cid % 64).astype(np.uint64))),
        pl.Series("word", cid // 64),
    )
    word_cols = [f"w{w}" for w in range(words)]
    patterns_per_key = distinct.group_by("kid").agg(
        pl.col("bit").filter(pl.col("word") == w).sum().cast(pl.UInt64).alias(c)
        for w, c in enumerate(word_cols)
    )
    pats = (
        patterns_per_key.group_by(word_cols)
        # examples: the smallest key ids (ids are hashes of the keys), so that the same input
        # gives the same examples on every run, whatever order the group-by met the keys in
        .agg(pl.len().alias("count"), pl.col("kid").sort().head(max(examples, 0)).alias("__ex"))
        .with_row_index("pid")
    )
    # the collections of each pattern, as rows (pid, cid): one key of the pattern says them all
    one_key = pats.select("pid", pl.col("__ex").list.first().alias("kid"))
    if examples <= 0:
        one_key = (
            patterns_per_key.join(pats.select("pid", *word_cols), on=word_cols)
            .group_by("pid")
            .agg(pl.col("kid").first())
        )
    members_of = one_key.join(distinct.select("kid", "cid"), on="kid").select("pid", "cid")
    # |A∩B| = Σ over patterns holding both of the pattern's count: a self-join of the pattern
    # rows (Σ degree² rows, at most patterns × n²), never of the keys
    weighted = members_of.join(pats.select("pid", "count"), on="pid")
    both_rows = (
        weighted.join(members_of, on="pid", suffix="_b")
        .filter(pl.col("cid") <= pl.col("cid_b"))
        .group_by("cid", "cid_b")
        .agg(pl.col("count").sum())
    )
    inter = np.zeros((n, n), dtype=np.int64)
    ca, cb = both_rows["cid"].to_numpy(), both_rows["cid_b"].to_numpy()
    inter[ca, cb] = both_rows["count"].to_numpy()
    size = np.diag(inter).copy()
    sizes = (
        pl.DataFrame({"collection": names, "size": size})
        .join(rows, on="collection", how="left", maintain_order="left")
        .with_columns(pl.col("rows").fill_null(0).cast(pl.Int64))
    )
    ia, ib = np.triu_indices(n, k=1)
    both = inter[ia, ib]
    union = size[ia] + size[ib] - both
    with np.errstate(divide="ignore", invalid="ignore"):
        jac = np.where(union > 0, both / np.maximum(union, 1), 0.0)
        a_in_b = np.where(size[ia] > 0, both / np.maximum(size[ia], 1), 0.0)
        b_in_a = np.where(size[ib] > 0, both / np.maximum(size[ib], 1), 0.0)
    pairs = pl.DataFrame(
        {
            "a": [names[i] for i in ia],
            "b": [names[i] for i in ib],
            "size_a": size[ia],
            "size_b": size[ib],
            "intersection": both,
            "union": union,
            "jaccard": jac,
            "a_in_b": a_in_b,
            "b_in_a": b_in_a,
        },
        schema={
            "a": pl.String,
            "b": pl.String,
            "size_a": pl.Int64,
            "size_b": pl.Int64,
            "intersection": pl.Int64,
            "union": pl.Int64,
            "jaccard": pl.Float64,
            "a_in_b": pl.Float64,
            "b_in_a": pl.Float64,
        },
    )
    intersections = _intersections(pats, members_of, size, names, coded)
    return Overlap(names, sizes, pairs, intersections)


def _intersections(
    pats: pl.DataFrame,
    members_of: pl.DataFrame,
    size: np.ndarray,
    names: list[str],
    coded: pl.DataFrame,
) -> pl.DataFrame:
    """The UpSet rows, ordered as upsetplot orders them by default: by degree, then by the
    positions of the members among the collections (collections ordered by size, largest first,
    ties in input order), compared from the last member — so that the list reads like the
    published figures, bar for bar. Built with group-bys and one sort (there may be millions of
    patterns when many collections overlap at random)."""
    schema: dict[str, pl.DataType | DataTypeClass] = {
        "members": pl.List(pl.String),
        "degree": pl.Int64,
        "count": pl.Int64,
        "examples": pl.List(pl.String),
    }
    if not pats.height:
        return pl.DataFrame(schema=schema)
    rank = np.argsort(-size, kind="stable")  # display order: largest collection first
    position = np.empty(len(names), dtype=np.int64)
    position[rank] = np.arange(len(names))
    lookup = pl.DataFrame({"cid": np.arange(len(names)), "name": names, "pos": position})
    grouped = (
        members_of.join(lookup, on="cid")
        .sort("pid", "cid")
        .group_by("pid", maintain_order=True)
        .agg(
            pl.col("name").alias("members"),
            pl.col("pos").sort(descending=True).alias("__order"),
        )
    )
    texts = coded.select("kid", "key").unique("kid")
    ex = (
        pats.select("pid", "__ex")
        .explode("__ex")
        .join(texts, left_on="__ex", right_on="kid")
        .group_by("pid")
        .agg(pl.col("key").sort().alias("examples"))
    )
    return (
        grouped.join(pats.select("pid", pl.col("count").cast(pl.Int64)), on="pid")
        .join(ex, on="pid", how="left")
        .with_columns(
            pl.col("members").list.len().cast(pl.Int64).alias("degree"),
            pl.col("examples").fill_null([]),
        )
        .sort("degree", "__order")
        .select(list(schema))
    )


def read_sets_file(path: str | Path) -> dict[str, list[Any]]:
    """Named sets from a JSON file: ``{name: [items]}``, or an object holding exactly one such
    mapping under some key (the ILLUSION file keeps them under ``technique_sets`` beside its
    published Jaccard values); keys starting with ``_`` (``_about``) are comments."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as e:
        raise InputError(
            f"not JSON: {e.msg}", path=path, position=f"{e.lineno}:{e.colno}"
        ) from None
    except UnicodeDecodeError as e:
        raise InputError(f"not UTF-8 text ({e.reason})", path=path) from None

    def as_sets(obj: Any) -> dict[str, list[Any]] | None:
        if not isinstance(obj, dict):
            return None
        body = {k: v for k, v in obj.items() if not str(k).startswith("_")}
        if body and all(
            isinstance(v, list) and all(x is None or isinstance(x, str | int | float) for x in v)
            for v in body.values()
        ):
            return body
        return None

    direct = as_sets(raw)
    if direct is not None:
        return direct
    if isinstance(raw, dict):
        inner = {k: s for k, v in raw.items() if (s := as_sets(v)) is not None}
        if len(inner) == 1:
            return next(iter(inner.values()))
        if len(inner) > 1:
            raise InputError(
                "several mappings of named sets (" + ", ".join(sorted(inner)) + "); keep one",
                path=path,
            )
    raise InputError(
        'not a sets file: expected {"name": ["item", ...], ...} (or one such object inside)',
        path=path,
    )
