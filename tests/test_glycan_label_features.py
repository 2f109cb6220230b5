"""The glycan label model's features (curate.audits.glycan.features) on glycowork's real glycans.

Checked against independent readings of the strings (regular expressions here, not the parser):
linkage counts, the residue-linkage-residue tokens of unbranched glycans, one row for all
spellings of a glycan, the character fallback for strings that do not parse; and that the
features carry the signal the label model needs (injected kingdom flips are found).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from curate.audits.glycan.features import (
    FALLBACK_CHARS,
    N_FEATURES,
    glycan_features,
    glycan_tokens,
)
from curate.schemas.iupac import Glycan, canonical_key, try_parse

SPECIES = "data/glycan/glycowork_upstream/glyco_targets_species_seq_all_V3.csv"
LINK = re.compile(r"\(([ab?]?)(\d+|\?)-([\d?/]+)\)")


@pytest.fixture(scope="module")
def glycans(shared: Callable[[str], Path]) -> list[str]:
    """The distinct glycan strings of glycowork's species table."""
    return pl.read_csv(shared(SPECIES), infer_schema_length=0)["target"].unique().sort().to_list()


def test_linkage_tokens_count_every_written_bond(glycans: list[str]) -> None:
    """The bare-linkage tokens count each ``(x1-y)`` of a string without floating blocks (a
    bond written without its anomer, ``(1-3)``, has an unknown one: ``?1-3``)."""
    checked = 0
    for s in glycans:
        if "{" in s:
            continue
        g = try_parse(s)
        if not isinstance(g, Glycan):
            continue
        written = Counter(f"b:{a or '?'}{c}-{p}" for a, c, p in LINK.findall(s))
        tokens = glycan_tokens(g)
        assert {k: v for k, v in tokens.items() if k.startswith("b:")} == written, s
        assert tokens["n:residues"] == sum(written.values()) + 1, s
        checked += 1
    assert checked > 5000


def test_unbranched_glycans_give_their_neighbour_pairs(glycans: list[str]) -> None:
    """A chain ``A(l)B(m)C`` has the pair tokens ``A(l)B`` and ``B(m)C`` and the triple."""
    checked = 0
    for s in glycans:
        if any(c in s for c in "[]{}") or not re.fullmatch(
            r"[A-Za-z0-9]+(\([^()]*\)[A-Za-z0-9]+)*", s
        ):
            continue
        g = try_parse(s)
        if not isinstance(g, Glycan) or any(r.name != r.normalized for r in g.residues):
            continue
        parts = re.split(r"\(([^()]*)\)", s)  # residue, link, residue, link, ...
        names = parts[0::2]
        links = [v if v[0] in "ab?" else "?" + v for v in parts[1::2]]  # bare (1-3): anomer ?
        pairs = Counter(f"l:{names[i]}({links[i]}){names[i + 1]}" for i in range(len(links)))
        triples = Counter(
            f"p3:{names[i]}({links[i]}){names[i + 1]}({links[i + 1]}){names[i + 2]}"
            for i in range(len(links) - 1)
        )
        tokens = glycan_tokens(g)
        assert {k: v for k, v in tokens.items() if k.startswith("l:")} == pairs, s
        assert {k: v for k, v in tokens.items() if k.startswith("p3:")} == triples, s
        assert tokens[f"root:{names[-1]}"] == 1 and tokens[f"t:{names[0]}({links[0]})"] == 1
        assert tokens["n:depth"] == len(names) and tokens["n:branch_points"] == 0
        checked += 1
    assert checked > 500


def test_spellings_of_one_glycan_share_a_row(shared: Callable[[str], Path]) -> None:
    """glycowork_sample.csv holds every spelling of its glycans: spellings with one canonical
    key have identical feature rows (branch order is not a feature)."""
    sample = pl.read_csv(shared("data/glycan/glycowork_sample.csv"), infer_schema_length=0)
    strings = sample["glycan"].unique().sort().to_list()
    keyed: dict[str, list[str]] = {}
    for s in strings:
        if isinstance(try_parse(s), Glycan):
            keyed.setdefault(canonical_key(s), []).append(s)
    groups = [v for v in keyed.values() if len(v) > 1]
    assert len(groups) > 50
    flat = [s for v in groups for s in v]
    x = glycan_features(flat, compact=False).tocsr()
    at = 0
    for v in groups:
        first = x[at]
        for j in range(1, len(v)):
            assert (x[at + j] != first).nnz == 0, v
        at += len(v)


def test_unparseable_strings_fall_back_to_character_ngrams(glycans: list[str]) -> None:
    bad = [s for s in glycans if not isinstance(try_parse(s), Glycan)][:20]
    good = [s for s in glycans if isinstance(try_parse(s), Glycan)][:20]
    assert bad, "the species table has strings the parser rejects"
    x = glycan_features([*good, *bad, None], compact=False).tocsc()
    structural, chars = x[:, :N_FEATURES], x[:, N_FEATURES:]
    n = len(good)
    assert (structural[:n].getnnz(axis=1) > 0).all() and chars[:n].nnz == 0
    assert structural[n:].nnz == 0 and (chars[n:-1].getnnz(axis=1) > 0).all()
    assert x[-1].nnz == 0  # a null: an empty row
    compact = glycan_features([*good, *bad, None])
    assert compact.shape[1] == np.count_nonzero(x.getnnz(axis=0))


def test_a_megabyte_cell_is_read_from_its_head(glycans: list[str]) -> None:
    """An unparseable cell of a megabyte (a concatenation) is featurised from its first
    characters: its row is the head's row, and the features of a real table do not change
    (no real glycan is that long)."""
    huge = "Gal(b1-4)" * 120_000 + "Glc"
    assert max(map(len, glycans)) < FALLBACK_CHARS
    x = glycan_features([huge, *glycans[:50]], compact=False)
    head = glycan_features([huge[:FALLBACK_CHARS], *glycans[:50]], compact=False)
    assert (x != head).nnz == 0 and x[0].nnz > 0


def test_features_find_injected_kingdom_flips(shared: Callable[[str], Path]) -> None:
    """On 2,000 single-kingdom glycans with 10 % of kingdoms flipped, the built-in model on
    these features and cleanlab's flagged set recover the flips. The floors are below what
    bench/bench_label_issues_glycan.py measures on all 9 k glycans (P 0.70-0.77, R 0.90-0.95)."""
    from curate.audits.shared.label_issues import cross_val_pred_probs, score_labels

    df = pl.read_csv(shared(SPECIES), infer_schema_length=0).select("target", "Kingdom")
    one = (
        df.drop_nulls()
        .group_by("target")
        .agg(pl.col("Kingdom").unique())
        .filter(pl.col("Kingdom").list.len() == 1)
        .with_columns(pl.col("Kingdom").list.first())
        .sort("target")
    )
    big = one["Kingdom"].value_counts().filter(pl.col("count") >= 20)["Kingdom"]
    one = one.filter(pl.col("Kingdom").is_in(big.implode())).sample(2000, seed=5)
    classes = sorted(one["Kingdom"].unique().to_list())
    rng = np.random.default_rng(7)
    given = one["Kingdom"].to_list()
    flipped = rng.random(len(given)) < 0.10
    for i in np.flatnonzero(flipped):
        given[i] = str(rng.choice([c for c in classes if c != given[i]]))
    x = glycan_features(one["target"].to_list())
    probs = cross_val_pred_probs(x, given, classes, seed=0)
    issue = score_labels(given, probs, classes).rows["issue"].to_numpy()
    tp = int((issue & flipped).sum())
    precision, recall = tp / issue.sum(), tp / flipped.sum()
    print(f"precision {precision:.3f} recall {recall:.3f}")
    assert precision >= 0.55 and recall >= 0.75, (precision, recall)
