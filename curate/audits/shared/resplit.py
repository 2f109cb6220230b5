"""Regrouping splits so that every group sits in one split: the leak fix of every family.

Read off glycan's re-split (GL4xx), where a glycan whose rows span train and test moves whole;
the ``table`` family's leak fix (TB405) regroups by its declared key or group the same way. One
implementation, so a seed gives the same regrouping whichever family asks.

May import: ``curate.core``; nothing family-specific.
"""

from __future__ import annotations

import random

import polars as pl

__all__ = ["regroup_split"]


def regroup_split(
    keys: pl.Series,
    current: pl.Series,
    *,
    seed: int = 0,
    proportions: dict[str, float] | None = None,
) -> pl.Series:
    """A new split per row such that rows with the same key share one split.

    Moves as few rows as it can: a key whose rows all sit in one split stays there. Keys whose
    rows span splits (the leaks) or have no split are shuffled with ``random.Random(seed)`` (from
    their sorted order, so input row order does not matter) and each goes, whole, to the split
    furthest below its target share. Targets are the current proportions (80/10/10 when there is
    no split). Rows without a key (unparseable glycans) form a group of their own.
    """
    n = keys.len()
    known = current.drop_nulls()
    if proportions is None:
        if known.len():
            proportions = {s: c / known.len() for s, c in known.value_counts().iter_rows()}
        else:
            proportions = {"train": 0.8, "validation": 0.1, "test": 0.1}
    order_of = {"train": 0, "validation": 1, "test": 2}
    names = sorted(proportions, key=lambda s: (order_of.get(s, 9), s))
    group = pl.Series(
        [k if k is not None else f"\x00row{i}" for i, k in enumerate(keys.to_list())],
        dtype=pl.String,
    )
    frame = pl.DataFrame({"g": group, "s": current.cast(pl.String)})
    groups = (
        frame.group_by("g")
        .agg(
            pl.len().alias("n"),
            pl.col("s").drop_nulls().unique().alias("splits"),
            pl.col("s").null_count().alias("nulls"),
        )
        .sort("g")
    )
    filled = dict.fromkeys(names, 0)
    assign: dict[str, str] = {}
    loose: list[tuple[str, int]] = []
    for g, size, splits, nulls in groups.iter_rows():
        if len(splits) == 1 and nulls == 0 and splits[0] in filled:
            assign[g] = splits[0]
            filled[splits[0]] += size
        else:
            loose.append((g, size))
    random.Random(seed).shuffle(loose)
    target = {s: proportions[s] * n for s in names}
    for g, size in loose:
        best = max(
            names,
            key=lambda s: ((target[s] - filled[s]) / max(target[s], 1e-9), -order_of.get(s, 9)),
        )
        assign[g] = best
        filled[best] += size
    return group.replace_strict(assign, return_dtype=pl.String)
