"""The glycan family's plots for the HTML report (:meth:`Family.plots`).

Per task table: the label distribution per split (taxonomy: at the level with the fewest
classes, the one a reader can take in at a glance) and, for taxonomy tables, the number of
classes at each level per split. Counted in polars on the normalised rows the audit read (valid
rows only), then drawn as a few dozen bars at most.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from curate.core.findings import Report
    from curate.core.plots import Plot
    from curate.core.rules import AuditContext
    from curate.schemas.glycan_tables import GlycanData, GlycanTable

NO_SPLIT = "(no split)"
#: Labels a distribution shows at most (the most frequent; the rest summed as one bar).
TOP_LABELS = 20
#: Tables of one audit that get plots (a run over many files would otherwise draw dozens).
MAX_TABLES = 4


def glycan_plots(data: GlycanData, report: Report, ctx: AuditContext) -> list[Plot]:
    out: list[Plot] = []
    tables = [t for t in data.tables if t.task != "interaction"]
    for t in tables[:MAX_TABLES]:
        where = f" ({t.path})" if len(data.tables) > 1 else ""
        out += _table_plots(t, where)
    return out


def _valid(t: GlycanTable) -> pl.DataFrame:
    rows = t.rows
    if "valid" in rows.columns:
        rows = rows.filter(pl.col("valid"))
    return rows.with_columns(pl.col("split").fill_null(NO_SPLIT))


def _counts(rows: pl.DataFrame, level: str) -> pl.DataFrame:
    """``split, label, len`` of one label column (a row with several labels counts for each)."""
    return (
        rows.select("split", pl.col(f"lab_{level}").alias("label"))
        .explode("label")
        .with_columns(pl.col("label").str.strip_chars())
        .filter(pl.col("label").is_not_null() & (pl.col("label") != ""))
        .group_by("split", "label")
        .len()
    )


def _table_plots(t: GlycanTable, where: str) -> list[Plot]:
    from curate.core.plots import Plot, grouped_bars

    rows = _valid(t)
    names = [n for n in t.label_names if f"lab_{n}" in rows.columns]
    if rows.is_empty() or not names:
        return []
    splits = sorted(rows["split"].unique().to_list())
    out = []
    per_level = {n: _counts(rows, n) for n in names}
    if t.task == "taxonomy":
        classes = {n: per_level[n]["label"].n_unique() for n in names}
        several = [n for n in names if classes[n] > 1] or names
        level = min(several, key=lambda n: (classes[n], -names.index(n)))
    else:
        level = t.task if t.task in per_level else names[0]
    counts = per_level[level]
    totals = (
        counts.group_by("label")
        .agg(pl.col("len").sum())
        .sort(["len", "label"], descending=[True, False])
    )
    top = totals["label"].head(TOP_LABELS).to_list()
    rest = totals.height - len(top)
    series = {}
    for s in splits:
        mine = counts.filter(pl.col("split") == s)
        got = dict(zip(mine["label"].to_list(), mine["len"].to_list(), strict=True))
        values = [float(got.get(x, 0)) for x in top]
        if rest:
            values.append(float(sum(v for k, v in got.items() if k not in set(top))))
        series[s] = values
    cats = [str(x) for x in top] + ([f"other ({rest} more)"] if rest else [])
    out.append(
        Plot(
            f"Label distribution per split: {level}{where}",
            f"Valid rows per {level} label ({totals.height} labels, the {len(top)} most frequent "
            "shown), one bar per split; a label missing from a split cannot be learnt or "
            "tested there.",
            grouped_bars(cats, series, xlabel=level, ylabel="rows"),
        )
    )
    if t.task == "taxonomy":
        levels = {
            s: [float(per_level[n].filter(pl.col("split") == s)["label"].n_unique()) for n in names]
            for s in splits
        }
        out.append(
            Plot(
                f"Classes per taxonomy level{where}",
                "Distinct labels at each taxonomy level, per split (valid rows).",
                grouped_bars(names, levels, xlabel="level", ylabel="classes"),
            )
        )
    return out
