"""The ``table`` family's near-duplicate rules (TB404 within a split, TB406 across splits)
against a brute-force computation written here.

The reference is deliberately naive and independent of curate: the normal form with
``unicodedata`` and ``str`` methods (NFKC, lower case, Unicode punctuation and symbols removed,
white space collapsed), each input a Python ``set`` of its character 5-grams (a text shorter
than five characters is one shingle, the convention the manager documents), and the exact
Jaccard index of every pair of distinct inputs that can reach the threshold (a textbook prefix
filter leaves the others unintersected; a test checks it against all pairs, intersected).

Real text: MusicCaps' captions (a 1,500-row subset, seeded splits, plus copies of real
captions with word-level edits injected into ``test`` and ``train`` to make leaks and
duplicates, and copies equal once normalised as the exact controls) and glycowork's
4,900-row glycan sample with its own naive split.

Why equality is asserted (not a recall bound): MinHash + LSH only proposes candidates; every
candidate's Jaccard is computed exactly, and at threshold 0.8 with 128 permutations the
banding's and the estimate filter's margins miss a pair at the threshold with probability
about 10⁻³ (less above it). The hash seed is fixed, so the outcome on these tables is
deterministic: the found pairs equal the brute force's, pair for pair and figure for figure.
"""

from __future__ import annotations

import json
import random
import unicodedata
from collections import Counter
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import curate

THRESHOLD = 0.8
RANK = {"train": 0, "validation": 1, "test": 2}
#: What joins several --text columns into one input (as the rules document it).
JOIN = "\x1f"


# ----------------------------------------------------------------- independent reference


def normal(text: object, fold: bool = True) -> str:
    """The default normal form, written independently (an empty cell: "")."""
    if text is None or (isinstance(text, float) and text != text):
        return ""
    s = str(text)
    if not fold:
        return s
    s = unicodedata.normalize("NFKC", s).lower()
    s = "".join(ch for ch in s if not unicodedata.category(ch).startswith(("P", "S")))
    return " ".join(s.split())


def inputs(
    df: pd.DataFrame, text: list[str], fold: bool = True, required: tuple[str, ...] = ()
) -> list[str | None]:
    """Each row's input: the normal forms of its text columns joined; None when they are all
    empty, or when a text or ``required`` (id, label) cell is empty as written (TB002's row,
    which takes no part)."""
    out: list[str | None] = []
    for values, needed in zip(
        df[text].itertuples(index=False),
        df[[*text, *required]].itertuples(index=False),
        strict=True,
    ):
        parts = [normal(v, fold) for v in values]
        blank = any(not normal(v, False).strip() for v in needed)
        out.append(None if blank or not any(p.strip() for p in parts) else JOIN.join(parts))
    return out


def grams(s: str) -> frozenset[str]:
    return frozenset([s]) if len(s) < 5 else frozenset(s[i : i + 5] for i in range(len(s) - 4))


def all_pairs(texts: list[str | None]) -> dict[tuple[str, str], float]:
    """Every pair of distinct inputs with an exact Jaccard ≥ THRESHOLD: each pair's sets
    intersected, O(n²) (the definition; :func:`brute_pairs` is checked against it)."""
    distinct = sorted({t for t in texts if t is not None})
    sets = [grams(t) for t in distinct]
    out: dict[tuple[str, str], float] = {}
    for a, (sa, ta) in enumerate(zip(sets, distinct, strict=True)):
        for sb, tb in zip(sets[a + 1 :], distinct[a + 1 :], strict=True):
            j = len(sa & sb) / len(sa | sb)
            if j >= THRESHOLD:
                out[(ta, tb)] = out[(tb, ta)] = j
    return out


def brute_pairs(texts: list[str | None]) -> dict[tuple[str, str], float]:
    """:func:`all_pairs`, with the pairs that cannot reach the threshold left unintersected.

    The prefix filter (Bayardo et al., "Scaling up all pairs similarity search", 2007): with
    the 5-grams of every set in one global order (rarest first), J(A, B) ≥ t implies
    |A ∩ B| ≥ ⌈t·|A|⌉, so A's first |A| − ⌈t·|A|⌉ + 1 grams and B's first |B| − ⌈t·|B|⌉ + 1
    share one. Only pairs sharing a prefix gram are intersected — exactly, as sets. The
    ceiling is taken in integers (t = 4/5), never in floating point."""
    t = Fraction(THRESHOLD).limit_denominator(1000)
    distinct = sorted({x for x in texts if x is not None})
    sets = [grams(x) for x in distinct]
    df = Counter(g for s in sets for g in s)
    index: dict[str, list[int]] = {}
    out: dict[tuple[str, str], float] = {}
    for b, sb in enumerate(sets):
        order = sorted(sb, key=lambda g: (df[g], g))
        prefix = order[: len(sb) - (-(-t.numerator * len(sb) // t.denominator)) + 1]
        seen = {a for g in prefix for a in index.get(g, ())}
        for a in seen:
            sa = sets[a]
            j = len(sa & sb) / len(sa | sb)
            if j >= THRESHOLD:
                ta, tb = distinct[a], distinct[b]
                out[(ta, tb)] = out[(tb, ta)] = j
        for g in prefix:
            index.setdefault(g, []).append(b)
    return out


def expected(texts: list[str | None], splits: list[str | None]) -> dict[str, dict[int, dict]]:
    """TB404 and TB406 as the rules document them, per reported row: every earlier row it is
    near (``{other_row: jaccard}``; within its split for TB404, in an earlier split for TB406).
    A row with an exact (normalised) copy where the rule looks is the exact rule's: left out."""
    near = brute_pairs(texts)
    by_text: dict[str, list[int]] = {}
    for r, t in enumerate(texts):
        if t is not None:
            by_text.setdefault(t, []).append(r)
    partners: dict[str, set[str]] = {}
    for ta, tb in near:
        partners.setdefault(ta, set()).add(tb)

    def rank(r: int) -> int | None:
        return RANK.get(splits[r] or "")

    out: dict[str, dict[int, dict]] = {"TB404": {}, "TB406": {}}
    for r, t in enumerate(texts):
        if t is None:
            continue
        cands = {o: near[(t, u)] for u in partners.get(t, ()) for o in by_text[u]}
        same = [o for o in by_text[t] if o < r and splits[o] == splits[r]]
        within = {o: j for o, j in cands.items() if o < r and splits[o] == splits[r]}
        if within and not same:
            out["TB404"][r] = within
        if rank(r) is None:
            continue
        earlier = [o for o in by_text[t] if (rank(o) if rank(o) is not None else 99) < rank(r)]
        across = {
            o: j for o, j in cands.items() if (rank(o) if rank(o) is not None else 99) < rank(r)
        }
        if across and not earlier:
            out["TB406"][r] = across
    return out


def nearest(candidates: dict[int, float]) -> tuple[int, float, int]:
    """The finding a row's near earlier rows make: the nearest (highest Jaccard, then the
    earliest row), its Jaccard, how many."""
    o, j = min(candidates.items(), key=lambda x: (-x[1], x[0]))
    return o, j, len(candidates)


def found(report: curate.Report, code: str) -> dict[int, tuple]:
    out = {}
    for row, details in (
        report.findings.filter(pl.col("rule") == code).select("row", "details").iter_rows()
    ):
        d = json.loads(details)
        out[int(row)] = (d["near_of_row"], d["jaccard"], d["copies"])
    return out


def assert_same(got: dict[int, tuple], want: dict[int, dict]) -> None:
    """The findings are the brute force's, row for row, nearest row, Jaccard and count."""
    assert set(got) == set(want)
    for r, candidates in want.items():
        o, j, n = nearest(candidates)
        go, gj, gn = got[r]
        assert (go, gn) == (o, n), r
        assert gj == pytest.approx(j, abs=1e-12), r


def assert_sound_and_recalled(got: dict[int, tuple], want: dict[int, dict]) -> float:
    """Every finding is right (its row is one the brute force reports, naming one of its near
    earlier rows at that exact Jaccard); the brute force's rows are found, and their findings
    equal, in 99 % of cases or more. Returns the share of rows found."""
    assert set(got) <= set(want)
    for r, (o, j, _) in got.items():
        assert o in want[r] and j == pytest.approx(want[r][o], abs=1e-12), r
    found_share = len(got) / len(want)
    same = sum(got[r] == pytest.approx(nearest(want[r])) for r in got) / len(want)
    assert found_share >= 0.99 and same >= 0.99, (found_share, same)
    return found_share


def test_the_prefix_filter_loses_no_pair(captions, shared: Callable[[str], Path]) -> None:
    """The reference's shortcut against the definition (every pair intersected) on real
    inputs: 300 captions with injected copies, 500 glycans."""
    df, _ = captions
    glycans = pd.read_csv(shared("data/glycan/glycowork_sample.csv"), dtype=str)
    for texts in (
        inputs(df.iloc[-300:], ["caption"]),
        inputs(glycans.head(500), ["glycan"]),
    ):
        want = all_pairs(texts)
        assert len(want) >= 20
        assert brute_pairs(texts) == want


# ----------------------------------------------------------------- real tables


def mutate(text: str, rng: random.Random, vocab: list[str]) -> str:
    """A real caption with a word-level edit: a word replaced, dropped, or two swapped."""
    words = text.split()
    i = rng.randrange(len(words) - 1)
    kind = rng.choice(["replace", "drop", "swap"])
    if kind == "replace":
        words[i] = rng.choice(vocab)
    elif kind == "drop":
        del words[i]
    else:
        words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


@pytest.fixture(scope="module")
def captions(shared: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory):
    """1,500 real MusicCaps rows with seeded splits, then injected rows: 30 edited copies of
    training captions in test (near leaks), 20 edited copies in train (near duplicates), and
    exact controls equal to an earlier caption once normalised (10 in test, 10 in train)."""
    full = pd.read_csv(shared("data/deepfake/musiccaps-public-openai.csv"), dtype=str)
    df = full.head(1500)[["ytid", "caption", "openai_refine"]].copy()
    rng = random.Random(32)
    df["split"] = [rng.choices(["train", "validation", "test"], [8, 1, 1])[0] for _ in df.index]
    vocab = sorted({w for c in df["caption"] for w in c.split()})
    train = df.index[df["split"] == "train"].tolist()
    extra = []
    for n, (split, edit) in enumerate(
        [("test", "near")] * 30
        + [("train", "near")] * 20
        + [("test", "exact")] * 10
        + [("train", "exact")] * 10
    ):
        src = df.loc[rng.choice(train)]
        cap = src["caption"]
        cap = mutate(cap, rng, vocab) if edit == "near" else f" {cap[0].swapcase()}{cap[1:]}!!"
        extra.append(
            {
                "ytid": f"inj{n}-{edit}",
                "caption": cap,
                "openai_refine": src["openai_refine"],
                "split": split,
            }
        )
    df = pd.concat([df, pd.DataFrame(extra)], ignore_index=True)
    path = tmp_path_factory.mktemp("near") / "captions.csv"
    df.to_csv(path, index=False)
    return df, path


@pytest.mark.parametrize("fold", [True, False], ids=["normalised", "as-written"])
def test_captions_match_brute_force(captions, fold: bool) -> None:
    df, path = captions
    declared = {} if fold else {"normalise": "none"}
    report = curate.audit("table", path, id="ytid", split="split", text="caption", **declared)
    want = expected(inputs(df, ["caption"], fold, ("ytid",)), df["split"].tolist())
    assert len(want["TB406"]) >= 25 and len(want["TB404"]) >= 15  # the injected ones, mostly
    assert_same(found(report, "TB404"), want["TB404"])
    assert_same(found(report, "TB406"), want["TB406"])


def test_exact_copies_are_not_near(captions) -> None:
    """Copies equal once normalised are TB403's and TB405's, never near; as written (no
    normalisation) they differ in case and punctuation, and are near."""
    df, path = captions
    rows = {
        split: set(df.index[df["ytid"].str.endswith("-exact") & (df["split"] == split)])
        for split in ("train", "test")
    }
    report = curate.audit("table", path, id="ytid", split="split", text="caption")
    hit = {c: set(found(report, c)) for c in ("TB404", "TB406")}
    exact = {
        c: set(report.findings.filter(pl.col("rule") == c)["row"].to_list())
        for c in ("TB403", "TB405")
    }
    assert rows["train"] <= exact["TB403"] and rows["test"] <= exact["TB405"]
    # a copy in train repeats its (earlier) source: TB403's, not TB404's; one in test repeats
    # a training caption: TB405's, not TB406's (it may still be near another test row: TB404)
    assert rows["train"] and not rows["train"] & hit["TB404"]
    assert rows["test"] and not rows["test"] & hit["TB406"]
    # near rows found are near, never equal, to the row they name
    texts = inputs(df, ["caption"])
    for c in ("TB404", "TB406"):
        for r, (o, _, _) in found(report, c).items():
            assert texts[r] != texts[o]
    loose = curate.audit("table", path, id="ytid", split="split", text="caption", normalise="none")
    assert rows["test"] <= set(found(loose, "TB406"))


def test_several_text_columns_are_one_input(captions) -> None:
    """caption + openai_refine compared as one input (normal forms joined by U+001F); the
    injected rows carry their source's refinement, so they stay near."""
    df, path = captions
    sub = df.iloc[-700:].reset_index(drop=True)
    assert sub["openai_refine"].isna().any()  # a TB002 row: it takes no part
    small = path.with_name("two.csv")
    sub.to_csv(small, index=False)
    report = curate.audit("table", small, id="ytid", split="split", text="caption,openai_refine")
    texts = inputs(sub, ["caption", "openai_refine"], required=("ytid",))
    want = expected(texts, sub["split"].tolist())
    assert want["TB404"] or want["TB406"]
    assert_same(found(report, "TB404"), want["TB404"])
    assert_same(found(report, "TB406"), want["TB406"])
    # without --split the table is one split: every near pair is TB404's, none leaks
    whole = curate.audit("table", small, id="ytid", text="caption,openai_refine")
    want = expected(texts, [None] * len(sub))
    assert len(want["TB404"]) > len(found(report, "TB404")) and not want["TB406"]
    assert_same(found(whole, "TB404"), want["TB404"])
    assert "TB406" in whole.rules_run and not found(whole, "TB406")


def test_glycans_match_brute_force(shared: Callable[[str], Path]) -> None:
    path = shared("data/glycan/glycowork_sample.csv")
    df = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    report = curate.audit(
        "table", path, id="glycowork_row", label="Kingdom", split="split", text="glycan"
    )
    texts = inputs(df, ["glycan"], required=("glycowork_row", "Kingdom"))
    want = expected(texts, df["split"].tolist())
    assert len(want["TB404"]) > 100 and len(want["TB406"]) > 50
    # Recall, not equality: glycans differing in a linkage or two sit at the threshold by the
    # hundred (half of this sample's ~1,750 near pairs have a Jaccard below 0.85), and a pair
    # *at* 0.8 escapes the LSH bands with probability up to 1 % (the rules' RECALL) — on this
    # table two of them (rows 683 and 696, Jaccard 0.800 and 0.816; TB404) do.
    assert_sound_and_recalled(found(report, "TB404"), want["TB404"])
    assert_sound_and_recalled(found(report, "TB406"), want["TB406"])
    messages = report.findings.filter(pl.col("rule") == "TB406")["message"].to_list()
    assert messages
    assert all("Jaccard" in m and (" in train" in m or " in validation" in m) for m in messages)


def test_threshold_zero_or_no_text_does_not_run_them(captions) -> None:
    _, path = captions
    on = curate.audit("table", path, id="ytid", split="split", text="caption")
    assert {"TB404", "TB406"} <= set(on.rules_run)
    off = curate.audit("table", path, id="ytid", split="split", text="caption", near_threshold=0)
    assert not {"TB404", "TB406"} & set(off.rules_run)
    assert "TB403" in off.rules_run and "TB405" in off.rules_run
    assert off.findings.filter(pl.col("rule").is_in(["TB404", "TB406"])).is_empty()
    bare = curate.audit("table", path, id="ytid", split="split", key="caption")
    assert not {"TB404", "TB406"} & set(bare.rules_run)


def test_a_lower_threshold_finds_more(captions) -> None:
    """The threshold is the one the rules use: at 0.9 the findings are those of 0.8 whose
    Jaccard reaches 0.9 (among the nearest pairs, for rows whose nearest already did)."""
    _, path = captions
    low = curate.audit("table", path, id="ytid", split="split", text="caption")
    high = curate.audit("table", path, id="ytid", split="split", text="caption", near_threshold=0.9)
    for code in ("TB404", "TB406"):
        lo, hi = found(low, code), found(high, code)
        assert set(hi) == {r for r, (_, j, _) in lo.items() if j >= 0.9}
        assert all(j >= 0.9 for _, j, _ in hi.values())
