"""``curate fix`` for glycan tables and interaction matrices, and the grouped re-split.

Every cell that changes and every row dropped goes to the changelog with the rule that asked for
it. The invalid records come in from the family
(:meth:`~curate.families.base.Family.invalid_records`), so this layer never imports the reader.
"""

from __future__ import annotations

import random
from typing import Any

import polars as pl

from curate.audits.glycan.duplicates import other_columns, spelling_groups
from curate.audits.glycan.hierarchy import load_mapping, resolve_hierarchy
from curate.audits.glycan.labels import labels_long
from curate.dataset import ChangeEntry, FixResult
from curate.findings import (
    Report,
    dumps,
)
from curate.schemas.glycan import GlycanOptions, parse_list_cell
from curate.schemas.glycan_tables import (
    GlycanData,
    GlycanTable,
    invalid_rows_and_columns,
    single_table,
    split_tables,
)

# --------------------------------------------------------------------------- fixes


def plan_fixes(
    data: GlycanData, report: Report, options: GlycanOptions, invalid: pl.DataFrame
) -> FixResult:
    """Normalise labels, resolve the hierarchy, merge spellings, drop duplicates, re-split.

    Every cell that changes and every row dropped is written to the changelog with the rule that
    asked for it. The re-split is grouped by canonical key, seeded (``--seed``, default 0) and
    keeps the split proportions, so no glycan crosses splits afterwards.

    Invalid rows (GL001/GL101/GL102, :attr:`GlycanFamily.invalid_rules`) are dropped first and
    logged whole as they were read, with the rule and reason; they take no part in the other
    fixes (no label rewrite, no re-split, no duplicate check), so nothing is logged for them
    twice and the split proportions are those of the published rows. ``invalid`` is
    :meth:`~curate.families.base.Family.invalid_records` of ``data``, which the family computes
    and hands in (the rules layer does not reach up to the family).
    """
    t = single_table(data)
    if t.task == "interaction":
        return fix_matrix(t, invalid)
    changes: list[ChangeEntry] = []
    raw = t.raw.clone()
    record_of = dict(zip(t.rows["row"].to_list(), t.rows["record"].to_list(), strict=True))
    offset = t.rows["row"].min() if t.rows.height else 0
    bad_rows, _ = invalid_rows_and_columns(t, invalid)
    bad = {r - offset for r in bad_rows}  # raw indices
    for r in (
        invalid.filter(pl.col("row").is_in(sorted(bad_rows)))
        .unique("row", keep="first", maintain_order=True)
        .iter_rows(named=True)
    ):
        changes.append(
            ChangeEntry(
                r["record"],
                "",
                t.originals.get(r["row"] - offset) or t.raw.row(r["row"] - offset, named=True),
                None,
                r["rule"],
                f"dropped: invalid record ({r['field']}: {r['message']})",
            )
        )
    long = labels_long(t)
    # value → normalised value, per label column (strip, majority case, placeholder → None)
    norm_map: dict[str, dict[str, str | None]] = {}
    for name, value, norm in long.select("name", "value", "norm").unique().iter_rows():
        norm_map.setdefault(name, {})[value] = norm
    # hierarchy: child → parent from the majority (or the user's mapping), level by level
    parent_fix = resolve_hierarchy(t, long, load_mapping(options.mapping))

    def fix_cell(row: int, name: str, cell: Any) -> Any:
        if cell is None or row - offset in bad:
            return cell
        if isinstance(cell, list):  # a real list column (parquet list<string>, JSON arrays)
            return fix_list(row, name, [str(v) for v in cell if v is not None])
        listed = parse_list_cell(cell) if cell.lstrip().startswith("[") else None
        if listed is not None:
            return repr(fix_list(row, name, listed))
        out = fix_list(row, name, [cell])
        return out[0] if out else None

    def fix_list(row: int, name: str, values: list[str]) -> list[str]:
        out = []
        for v in values:
            n = norm_map.get(name, {}).get(v, v.strip())
            pf = parent_fix.get((row, name))
            if pf is not None and len(values) == 1:
                n = pf[1]
            if n is not None and n not in out:
                out.append(n)
        return out

    for name, col in t.columns.labels.items():
        dtype = raw.schema[col]
        if dtype not in (pl.String, pl.List(pl.String)):
            if not isinstance(dtype, pl.List | pl.Array) or dtype.inner.is_nested():
                continue  # objects/nested lists: every such cell is an invalid row, dropped
            dtype = pl.List(pl.String)
        old = raw[col].to_list()
        new = [fix_cell(i + offset, name, v) for i, v in enumerate(old)]
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                rule = _which_label_rule(a, b, parent_fix.get((i + offset, name)))
                changes.append(
                    ChangeEntry(record_of[i + offset], col, a, b, rule, _LABEL_REASONS[rule])
                )
        raw = raw.with_columns(pl.Series(col, new, dtype=dtype))
    # spellings: one string per glycan
    groups = spelling_groups(t).filter(pl.col("glycan") != pl.col("representative"))
    gcol = t.columns.glycan
    if groups.height:
        rep = dict(zip(groups["row"].to_list(), groups["representative"].to_list(), strict=True))
        old = raw[gcol].to_list()
        new = [rep.get(i + offset, v) for i, v in enumerate(old)]
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                changes.append(
                    ChangeEntry(
                        record_of[i + offset],
                        gcol,
                        a,
                        b,
                        "GL303",
                        "rewritten to the glycan's most frequent spelling",
                    )
                )
        raw = raw.with_columns(pl.Series(gcol, new, dtype=pl.String))
    # re-split grouped by canonical key, over the rows that will be published
    ok = ~pl.Series(range(raw.height)).is_in(sorted(bad))
    keys = t.rows["key"].fill_null(pl.lit("\x00") + t.rows["glycan"])
    current = t.rows["split"]
    seed = options.seed
    resplit = options.resplit
    split = current
    if resplit:
        regrouped = iter(regroup_split(keys.filter(ok), current.filter(ok), seed=seed).to_list())
        split = pl.Series(
            "split",
            [next(regrouped) if keep else was for keep, was in zip(ok, current, strict=True)],
            dtype=pl.String,
        )
    moved = int((current.fill_null("") != split.fill_null("")).sum())
    if resplit:
        flags = t.columns.split_flags
        for rec, a, b in zip(
            t.rows["record"].to_list(), current.to_list(), split.to_list(), strict=True
        ):
            if a == b:
                continue
            reason = f"re-split grouped by canonical key (seed {seed})"
            if flags:  # one 0/1 column per split: log each flag that changes
                for name, col in flags.items():
                    if (a == name) != (b == name):
                        changes.append(
                            ChangeEntry(
                                rec, col, str(int(a == name)), str(int(b == name)), "GL401", reason
                            )
                        )
            else:
                changes.append(ChangeEntry(rec, t.columns.split or "split", a, b, "GL401", reason))
        raw = _write_split(raw, t, split)
    # drop duplicates after normalisation (same key, labels and new split)
    # Drop a task row only when the whole row repeats an earlier one after the fixes (GL304's
    # definition), so no reference or other task's label is lost.
    label_cols = list(t.columns.labels.values())
    dedup = raw.with_columns(
        t.rows["key"].fill_null(pl.lit("\x00") + t.rows["glycan"]).alias("__k"),
        split.alias("__s"),
        pl.int_range(raw.height).alias("__i"),
        t.rows["in_task"].alias("__task"),
    )
    compare = ["__k", "__s", *label_cols, *other_columns(t)]
    task_dups = dedup.filter(pl.col("__task") & ok)
    keep = task_dups.unique(compare, keep="first", maintain_order=True)["__i"]
    dropped = sorted(set(task_dups["__i"].to_list()) - set(keep.to_list()))
    for i in dropped:
        changes.append(
            ChangeEntry(
                record_of[i + offset],
                "",
                raw.row(i, named=True),
                None,
                "GL304",
                "dropped: duplicate of an earlier row after fixes",
            )
        )
    keep_mask = ~pl.Series(range(raw.height)).is_in(dropped) & ok
    raw = raw.filter(keep_mask)
    split = split.filter(keep_mask)
    tables = split_tables(t, raw, split)
    summary = {
        "rows_in": t.raw.height,
        "rows_out": raw.height,
        "invalid_dropped": len(bad),
        "dropped": len(dropped),
        "cells_changed": sum(1 for c in changes if c.field and c.rule != "GL401"),
        "rows_moved_between_splits": moved,
        "seed": seed,
    }
    return FixResult(
        tables=tables,
        changelog=changes,
        extra_files={"fix_summary.json": dumps(summary).encode()},
        summary=summary,
    )


def fix_matrix(t: GlycanTable, invalid: pl.DataFrame) -> FixResult:
    """Interaction matrix fixes: one row per protein, one column per glycan, no empty rows.

    * GL603: rows repeating a protein sequence are merged into its first row (a cell the first
      row lacks is taken from the repeat) and dropped;
    * GL601: columns of one glycan (same canonical key) are merged into the column with the most
      values (ties: sort order); where two columns disagree for a protein, the kept column's value
      stays and the other is logged as discarded;
    * GL602: protein rows with no value at all are dropped.

    Every moved, discarded or dropped value is in the changelog. Invalid protein rows (GL001: a
    non-numeric value, a list or object in a cell) and glycan columns whose header does not
    parse (GL101/GL102) are dropped first, logged whole, and take no part in the merges.
    """
    assert t.cells is not None
    changes: list[ChangeEntry] = []
    raw = t.raw.clone()
    cols = t.columns
    offset = int(t.rows["row"].min()) if t.rows.height else 0
    record = t.rows["record"].to_list()
    bad_rows, bad_cols = invalid_rows_and_columns(t, invalid)
    drop: set[int] = {r - offset for r in bad_rows}
    n_invalid = len(drop)
    logged: set[Any] = set()
    for r in invalid.iter_rows(named=True):
        what = r["row"] if r["row"] is not None else r["field"]
        if what in logged:
            continue
        logged.add(what)
        if r["row"] in bad_rows:
            i = r["row"] - offset
            changes.append(
                ChangeEntry(
                    record[i],
                    "",
                    t.originals.get(i) or raw.row(i, named=True),
                    None,
                    r["rule"],
                    f"dropped: invalid record ({r['field']}: {r['message']})",
                )
            )
        elif r["row"] is None and r["field"] in bad_cols:
            values = {
                record[i]: v for i, v in enumerate(raw[r["field"]].to_list()) if v is not None
            }
            changes.append(
                ChangeEntry(
                    r["record"],
                    r["field"],
                    values,
                    None,
                    r["rule"],
                    f"dropped: glycan column header does not parse ({r['message']})",
                )
            )
    raw = raw.drop(bad_cols)
    glycan_columns = [c for c in cols.glycan_columns if c not in bad_cols]
    # GL603: merge repeated protein sequences into their first row
    first_of: dict[str, int] = {}
    data = {c: raw[c].to_list() for c in glycan_columns}
    for i, seq in enumerate(raw[cols.protein].to_list()):
        if seq is None or i in drop:
            continue
        if seq not in first_of:
            first_of[seq] = i
            continue
        j = first_of[seq]
        drop.add(i)
        for c, values in data.items():
            if values[i] is not None and values[j] is None:
                values[j] = values[i]
                changes.append(
                    ChangeEntry(
                        record[j],
                        c,
                        None,
                        values[i],
                        "GL603",
                        f"value taken from repeat {record[i]} of this protein",
                    )
                )
        changes.append(
            ChangeEntry(
                record[i],
                "",
                raw.row(i, named=True),
                None,
                "GL603",
                f"dropped: same protein sequence as {record[j]}",
            )
        )
    # GL601: merge columns of one glycan
    keyed = (
        t.cells.filter(pl.col("column").is_in(glycan_columns))
        .select("column", "key")
        .unique()
        .drop_nulls("key")
    )
    counts = t.cells.group_by("column").len()
    groups = (
        keyed.join(counts, on="column", how="left")
        .with_columns(pl.col("len").fill_null(0))
        .sort(["key", "len", "column"], descending=[False, True, False])
        .group_by("key", maintain_order=True)
        .agg(pl.col("column"))
        .filter(pl.col("column").list.len() > 1)
    )
    dropped_cols: list[str] = []
    for _key, columns in groups.iter_rows():
        keep, others = columns[0], columns[1:]
        for other in others:
            for i, v in enumerate(data[other]):
                if v is None or i in drop:
                    continue
                if data[keep][i] is None:
                    data[keep][i] = v
                    changes.append(
                        ChangeEntry(
                            record[i],
                            keep,
                            None,
                            v,
                            "GL601",
                            f"value moved from column {other!r} (same glycan)",
                        )
                    )
                elif data[keep][i] != v:
                    changes.append(
                        ChangeEntry(
                            record[i],
                            other,
                            v,
                            None,
                            "GL601",
                            f"discarded: column {keep!r} of the same glycan "
                            f"holds {data[keep][i]!r}",
                        )
                    )
            dropped_cols.append(other)
    # GL602: empty rows (after the merges)
    kept_cols = [c for c in glycan_columns if c not in dropped_cols]
    for i in range(raw.height):
        if i not in drop and all(
            data[c][i] is None or str(data[c][i]).strip() == "" for c in kept_cols
        ):
            drop.add(i)
            changes.append(
                ChangeEntry(
                    record[i],
                    "",
                    raw.row(i, named=True),
                    None,
                    "GL602",
                    "dropped: no interaction value for any glycan",
                )
            )
    raw = raw.with_columns([pl.Series(c, data[c], dtype=raw.schema[c]) for c in kept_cols])
    raw = raw.drop(dropped_cols)
    keep_mask = ~pl.Series(range(raw.height)).is_in(sorted(drop))
    out = raw.filter(keep_mask)
    split = t.rows["split"].filter(keep_mask)
    summary = {
        "rows_in": t.raw.height,
        "rows_out": out.height,
        "invalid_dropped": n_invalid,
        "invalid_columns_dropped": len(bad_cols),
        # rows a fix removed (GL602/GL603), not the invalid ones: as ``dropped`` in every family
        "dropped": len(drop) - n_invalid,
        "glycan_columns_merged": len(dropped_cols),
        "row_offset": offset,
    }
    return FixResult(
        tables=split_tables(t, out, split),
        changelog=changes,
        extra_files={"fix_summary.json": dumps(summary).encode()},
        summary=summary,
    )


_LABEL_REASONS = {
    "GL201": "stripped surrounding whitespace",
    "GL202": "case variant set to the majority spelling",
    "GL203": "placeholder label removed (missing)",
    "GL301": "moved to the majority (or mapped) parent taxon",
}


def _which_label_rule(old: Any, new: Any, parent_fix: tuple[str, str] | None) -> str:
    if new is None or (isinstance(new, str) and new == "[]" and old != "[]"):
        return "GL203"
    if parent_fix is not None and isinstance(new, str) and parent_fix[1] in new:
        return "GL301"
    if isinstance(old, str) and isinstance(new, str) and old.strip() == new:
        return "GL201"
    if isinstance(old, str) and isinstance(new, str) and old.strip().lower() == new.lower():
        return "GL202"
    return "GL201"


def _write_split(raw: pl.DataFrame, t: GlycanTable, split: pl.Series) -> pl.DataFrame:
    cols = t.columns
    if cols.split and cols.split in raw.columns:
        return raw.with_columns(split.alias(cols.split))
    if cols.split_flags:
        return raw.with_columns(
            [
                (split == name).cast(pl.Int8).cast(pl.String).alias(col)
                for name, col in cols.split_flags.items()
            ]
        )
    return raw.with_columns(split.alias("split"))


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
