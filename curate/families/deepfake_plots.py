"""The deepfake family's plots for the HTML report (:meth:`Family.plots`).

What a reader of a deepfake benchmark checks first, per split: how the samples divide into real
and fake per modality, which generators make the fakes (a split whose fakes come from other
generators than train's tests generalisation, not detection), and whether the sex × skin tone
groups are balanced within each label (the fairness claim of sets such as ILLUSION's). Counted
in polars on the valid rows the audit read, then drawn as a few dozen bars at most.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from curate.core.findings import Report
    from curate.core.plots import Plot
    from curate.core.rules import AuditContext
    from curate.schemas.deepfake_tables import DeepfakeData

NO_SPLIT = "(no split)"
#: Generators a plot shows at most (the most frequent; the rest summed as one bar).
TOP_GENERATORS = 20


def deepfake_plots(data: DeepfakeData, report: Report, ctx: AuditContext) -> list[Plot]:
    from curate.audits.deepfake.subjects import demographic_counts

    rows = data.valid_rows().with_columns(
        pl.col("split").cast(pl.String).fill_null(NO_SPLIT),
        pl.col("label").cast(pl.String),
        pl.col("modality").cast(pl.String),
    )
    if rows.is_empty():
        return []
    splits = _splits(rows)
    out = [_label_modality(rows, splits)]
    if (gen := _generators(rows, splits)) is not None:
        out.append(gen)
    if (demo := _demographics(demographic_counts(data))) is not None:
        out.append(demo)
    return out


def _splits(rows: pl.DataFrame) -> list[str]:
    order = {"train": 0, "validation": 1, "test": 2}
    return sorted(rows["split"].unique().to_list(), key=lambda s: (order.get(s, 3), s))


def _series(
    counts: pl.DataFrame, splits: list[str], cats: list[str], by: str
) -> dict[str, list[float]]:
    out = {}
    for s in splits:
        mine = counts.filter(pl.col("split") == s)
        got = dict(zip(mine[by].to_list(), mine["len"].to_list(), strict=True))
        out[s] = [float(got.get(c, 0)) for c in cats]
    return out


def _label_modality(rows: pl.DataFrame, splits: list[str]) -> Plot:
    from curate.core.plots import Plot, grouped_bars

    counts = (
        rows.with_columns(
            pl.concat_str(
                pl.col("modality").fill_null("?"), pl.col("label").fill_null("?"), separator=" "
            ).alias("cell")
        )
        .group_by("split", "cell")
        .len()
    )
    cats = sorted(counts["cell"].unique().to_list())
    return Plot(
        "Samples per modality and label, per split",
        "Valid rows per modality × real/fake, one bar per split: a modality whose fakes or "
        "reals are missing from a split cannot be evaluated there.",
        grouped_bars(cats, _series(counts, splits, cats, "cell"), xlabel="", ylabel="samples"),
    )


def _generators(rows: pl.DataFrame, splits: list[str]) -> Plot | None:
    from curate.core.plots import Plot, grouped_bars

    fakes = rows.filter(pl.col("generator").is_not_null() & (pl.col("label") == "fake"))
    if fakes.is_empty():
        return None
    counts = (
        fakes.with_columns(pl.col("generator").cast(pl.String)).group_by("split", "generator").len()
    )
    totals = (
        counts.group_by("generator")
        .agg(pl.col("len").sum())
        .sort(["len", "generator"], descending=[True, False])
    )
    top = totals["generator"].head(TOP_GENERATORS).to_list()
    rest = totals.height - len(top)
    series = _series(counts, splits, top, "generator")
    if rest:
        for s in splits:
            mine = counts.filter((pl.col("split") == s) & ~pl.col("generator").is_in(top))
            series[s].append(float(mine["len"].sum()))
    cats = [*top, *([f"other ({rest} more)"] if rest else [])]
    return Plot(
        "Fake samples per generator, per split",
        f"Fake rows per generator ({totals.height} generators, the {len(top)} most frequent "
        "shown), one bar per split: a generator seen only in test measures generalisation to "
        "unseen generators; one seen only in train is never evaluated.",
        grouped_bars(cats, series, xlabel="generator", ylabel="fake samples"),
    )


def _demographics(cells: pl.DataFrame) -> Plot | None:
    from curate.core.plots import Plot, grouped_bars

    if cells.is_empty():
        return None
    cells = cells.with_columns(
        pl.concat_str("split", "label", separator=" · ").alias("series"),
        pl.concat_str("sex", "skin_tone", separator=" / ").alias("group"),
    )
    groups = sorted(cells["group"].unique().to_list())
    order = {s: i for i, s in enumerate(_splits(cells))}
    names = cells.select("series", "split", "label").unique()
    ranked = sorted(names.iter_rows(), key=lambda r: (order[r[1]], r[2]))
    series: dict[str, list[float]] = {}
    for name, _, _ in ranked:
        mine = cells.filter(pl.col("series") == name)
        got = dict(zip(mine["group"].to_list(), mine["n"].to_list(), strict=True))
        series[name] = [float(got.get(g, 0)) for g in groups]
    return Plot(
        "Demographic balance: sex × skin tone, per split and label",
        "Samples per sex × skin-tone group, one bar per split and label (DF402 reports the "
        "largest ratio between groups): a group with few samples in test is measured on few.",
        grouped_bars(groups, series, xlabel="sex / skin tone", ylabel="samples"),
    )
