"""The shared near-duplicate and conflicting-label managers against brute-force references.

Why property tests: deepfake's near-duplicate images (DF208-DF210), ``curate overlap
--near-duplicates``, DF305 and GL302 now stand on these few functions, so a wrong orientation
("which copy is the later one") or a miscounted label would change several reports at once.
Hypothesis draws small frames with many collisions (few items, shuffled rows with gaps,
missing splits and splits outside the order); the references are the obvious loops over
pairs and dicts.
"""

from __future__ import annotations

import itertools

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.audits.shared.conflicts import label_conflicts
from curate.audits.shared.near import later_vs_earlier, near_copies, similar_texts
from curate.core.keys import SPLIT_ORDER, Keys

SPLITS = [None, "train", "validation", "test", "extra"]
ITEMS = ["f0", "f1", "f2", "f3"]


@st.composite
def holders(draw: st.DrawFn) -> pl.DataFrame:
    """Rows (``row`` unsorted with gaps, ``record``, ``split``) each holding an ``item``."""
    n = draw(st.integers(0, 12))
    rows = draw(st.permutations(list(range(0, 2 * n, 2))))
    items = draw(st.lists(st.sampled_from(ITEMS), min_size=n, max_size=n))
    splits = draw(st.lists(st.sampled_from(SPLITS), min_size=n, max_size=n))
    return pl.DataFrame(
        {
            "row": pl.Series(rows, dtype=pl.Int64),
            "record": pl.Series([f"r{r}" for r in rows], dtype=pl.String),
            "item": pl.Series(items, dtype=pl.String),
            "split": pl.Series(splits, dtype=pl.String),
        }
    )


@st.composite
def item_pairs(draw: st.DrawFn) -> pl.DataFrame:
    """Pairs of distinct items, each with a distance (as a pair source gives them)."""
    every = list(itertools.combinations(ITEMS, 2))
    chosen = draw(st.lists(st.sampled_from(every), unique=True, max_size=len(every)))
    flips = draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    ends = [(b, a) if f else (a, b) for (a, b), f in zip(chosen, flips, strict=True)]
    return pl.DataFrame(
        {
            "item_a": [a for a, _ in ends],
            "item_b": [b for _, b in ends],
            "distance": list(range(len(ends))),
        },
        schema={"item_a": pl.String, "item_b": pl.String, "distance": pl.Int64},
    )


def brute_oriented(
    pairs: pl.DataFrame, rows: pl.DataFrame, order: tuple[str, ...] | None
) -> list[tuple]:
    """Every (later row, earlier row) behind each item pair: later = larger (split rank, row),
    a split outside ``order`` (or none) ranking first; ``order=None``: by row alone."""

    def rank(split: str | None) -> int:
        if order is None or split not in order:
            return -1
        return order.index(split)

    by_item: dict[str, list[dict]] = {}
    for d in rows.iter_rows(named=True):
        by_item.setdefault(d["item"], []).append(d)
    out = []
    for p in pairs.iter_rows(named=True):
        for x in by_item.get(p["item_a"], []):
            for y in by_item.get(p["item_b"], []):
                if x["row"] == y["row"]:
                    continue
                late, early = sorted([x, y], key=lambda d: (rank(d["split"]), d["row"]))[::-1]
                out.append(
                    (late["row"], late["record"], early["row"], early["record"], p["distance"])
                )
    return sorted(out)


def _got(df: pl.DataFrame) -> list[tuple]:
    return sorted(df.select("row", "record", "other_row", "other_record", "distance").rows())


@settings(max_examples=200, deadline=None)
@given(holders(), item_pairs(), st.booleans())
def test_later_vs_earlier_matches_brute_force(
    rows: pl.DataFrame, pairs: pl.DataFrame, enum: bool
) -> None:
    if enum:  # an Enum split whose categories are the order: ranked by its codes
        rows = rows.with_columns(
            pl.col("split").replace({"extra": None}).cast(pl.Enum(list(SPLIT_ORDER)))
        )
    keys = Keys("item", ("item",))
    got = later_vs_earlier(pairs, rows, "item", keys, carry=("record", "split"))
    assert _got(got) == brute_oriented(pairs, rows, SPLIT_ORDER)
    assert got.columns == [
        "row", "record", "split", "other_row", "other_record", "other_split", "distance"
    ]  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(holders(), item_pairs())
def test_later_vs_earlier_follows_the_declared_order(
    rows: pl.DataFrame, pairs: pl.DataFrame
) -> None:
    order = ("test", "train")  # a family whose splits run the other way
    got = later_vs_earlier(
        pairs, rows, "item", Keys("item", ("item",), order=order), carry=("record",)
    )
    assert _got(got) == brute_oriented(pairs, rows, order)
    no_split = Keys("item", ("item",), split=None)
    got = later_vs_earlier(pairs, rows.drop("split"), "item", no_split, carry=("record",))
    assert _got(got) == brute_oriented(pairs, rows, None)


def test_later_vs_earlier_test_copy_of_training_image() -> None:
    """The finding is about the evaluation copy, even when it comes first in the file."""
    rows = pl.DataFrame({"row": [0, 1], "file": ["t.jpg", "a.png"], "split": ["test", "train"]})
    pairs = pl.DataFrame({"file_a": ["a.png"], "file_b": ["t.jpg"], "distance": [3]})
    got = later_vs_earlier(pairs, rows, "file", Keys("content", ("key",)), carry=("split",))
    assert got.rows() == [(0, "test", 1, "train", 3)]


# --------------------------------------------------------------------------- texts


def shingles(text: str, k: int) -> set[str]:
    """Character k-grams; a shorter non-empty text is one shingle (all of it)."""
    if len(text) >= k:
        return {text[i : i + k] for i in range(len(text) - k + 1)}
    return {text} if text else set()


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


#: Texts built from repeated patterns: many distinct texts share a shingle set exactly
#: ("abab" and "ababab": {aba, bab}), so Jaccard 1 between distinct texts is common.
texts = st.lists(
    st.builds(
        lambda p, n, case: (p * n).upper() if case else p * n,
        st.sampled_from(["ab", "abc", "ba", "abcd", "x", ""]),
        st.integers(1, 4),
        st.booleans(),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(texts, st.sampled_from([0.4, 0.7, 1.0]))
def test_similar_texts_are_exact_and_find_every_identical_set(
    values: list[str], threshold: float
) -> None:
    """Every pair returned has its exact Jaccard (never a hash accident) at or above the
    threshold; every pair of distinct texts with equal shingle sets is found (their
    signatures are equal, so LSH cannot miss them); most similar first, then text order."""
    df = pl.DataFrame({"t": values}, schema={"t": pl.String})
    got = similar_texts(df, "t", threshold=threshold, shingles="char:3")
    distinct = list(dict.fromkeys(values))
    for a, b, exact in got.select("t_a", "t_b", "exact").iter_rows():
        assert distinct.index(a) < distinct.index(b)
        assert exact == pytest.approx(jaccard(shingles(a, 3), shingles(b, 3)))
        assert exact >= threshold - 1e-12
    found = set(zip(got["t_a"], got["t_b"], strict=True))
    for a, b in itertools.combinations(distinct, 2):
        if shingles(a, 3) and shingles(a, 3) == shingles(b, 3):
            assert (a, b) in found
    order = [
        (-e, distinct.index(a), distinct.index(b))
        for a, b, e in got.select("t_a", "t_b", "exact").iter_rows()
    ]
    assert order == sorted(order)


@settings(max_examples=150, deadline=None)
@given(holders(), texts)
def test_near_copies_by_a_declared_text_key(rows: pl.DataFrame, values: list[str]) -> None:
    """A family's text key with its normal form: at threshold 1 the result is determined
    (distinct normal forms with equal shingle sets), and each pair is oriented later vs
    earlier as for images. Rows whose normal forms are equal are exact duplicates: not here."""
    n = min(rows.height, len(values))
    rows = rows.head(n).with_columns(pl.Series("text", values[:n], dtype=pl.String))
    keys = Keys("question", ("text",), text=True, normalise=lambda e: e.str.to_lowercase())
    got = near_copies(rows, keys, threshold=1.0, shingles="char:3", carry=("record",))
    norm = {d["row"]: d["text"].lower() for d in rows.iter_rows(named=True)}
    distinct = [t for t in dict.fromkeys(norm.values()) if t]
    pairs = pl.DataFrame(
        [
            (a, b, 0)
            for a, b in itertools.combinations(distinct, 2)
            if shingles(a, 3) == shingles(b, 3)
        ],
        schema={"item_a": pl.String, "item_b": pl.String, "distance": pl.Int64},
        orient="row",
    )
    want = brute_oriented(
        pairs, rows.with_columns(pl.col("text").str.to_lowercase().alias("item")), SPLIT_ORDER
    )
    have = sorted(
        (r, rec, o, orec, 0)
        for r, rec, o, orec in got.select("row", "record", "other_row", "other_record").rows()
    )
    assert have == want
    assert (got["exact"] == 1.0).all()


def test_near_copies_needs_a_text_key() -> None:
    with pytest.raises(AssertionError, match="not declared as text"):
        near_copies(pl.DataFrame({"row": [0], "key": ["a"]}), Keys("glycan", ("key",)))


# --------------------------------------------------------------------------- conflicting labels


@st.composite
def labelled(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(0, 25))
    rows = draw(st.permutations(list(range(0, 3 * n, 3))))
    return pl.DataFrame(
        {
            "row": pl.Series(rows, dtype=pl.Int64),
            "key": draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n)),
            "label": draw(
                st.lists(st.sampled_from(["real", "fake", "x", None]), min_size=n, max_size=n)
            ),
        },
        schema={"row": pl.Int64, "key": pl.String, "label": pl.String},
    )


@settings(max_examples=200, deadline=None)
@given(labelled())
def test_label_conflicts_match_brute_force(df: pl.DataFrame) -> None:
    counts: dict[str, dict[str, int]] = {}
    for d in df.iter_rows(named=True):
        if d["key"] is not None and d["label"] is not None:
            per = counts.setdefault(d["key"], {})
            per[d["label"]] = per.get(d["label"], 0) + 1
    conflicting = {k for k, per in counts.items() if len(per) > 1}
    got = label_conflicts(df, "key", "label", (pl.col("label") == "real").sum().alias("real"))
    want_rows = sorted(d["row"] for d in df.iter_rows(named=True) if d["key"] in conflicting)
    assert got["row"].to_list() == want_rows  # every row of the key, unlabelled ones too
    for d in got.iter_rows(named=True):
        per = counts[d["key"]]
        assert d["n_labels"] == len(per)
        assert {x["label"]: x["len"] for x in d["labels"]} == per
        assert [x["label"] for x in d["labels"]] == sorted(per)
        assert d["majority"] == min(per, key=lambda v: (-per[v], v))
        assert d["real"] == per.get("real", 0)


def test_label_conflicts_compare_one_column_and_show_another() -> None:
    """GL302's shape: labels compared by an id, counted and shown by their text."""
    df = pl.DataFrame(
        {
            "row": [0, 1, 2, 3],
            "key": ["g", "g", "g", "h"],
            "label_id": [1, 2, 1, 1],
            "label": ["genus=b", "genus=a", "genus=b", "genus=b"],
        }
    )
    got = label_conflicts(df, ["key"], "label_id", shown="label")
    assert got["row"].to_list() == [0, 1, 2]
    assert got["labels"][0].to_list() == [
        {"label": "genus=a", "len": 1},
        {"label": "genus=b", "len": 2},
    ]
    assert got["majority"].to_list() == ["genus=b"] * 3
