"""The knowledge-editing family's plots for the HTML report (:meth:`Family.plots`).

Drawn from the loaded ``cases`` table and the audit's shared ``edited`` table, counted in
polars first (one group-by each), so the cost does not grow with the figure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from collections.abc import Callable

    from matplotlib.figure import Figure

    from curate.core.findings import Report
    from curate.core.plots import Plot
    from curate.core.rules import AuditContext
    from curate.schemas.knowledge_editing_tables import KEData

NO_SPLIT = "(no split)"


def ke_plots(data: KEData, report: Report, ctx: AuditContext) -> list[Plot]:
    from curate.core.plots import Plot, grouped_bars

    cases = data.cases
    if cases.is_empty():
        return []
    out = []
    hops = (
        cases.select(pl.col("split").fill_null(NO_SPLIT), pl.col("n_triples").alias("hops"))
        .group_by("split", "hops")
        .len()
        .sort("split", "hops")
    )
    out.append(
        Plot(
            "Hops per case",
            "Cases by the number of hops of their question chain (triples of the original "
            "path), per split.",
            _by(hops, "hops", "split", xlabel="hops", ylabel="cases", draw=grouped_bars),
        )
    )
    edited: pl.Series = ctx.table("edited")
    spec = report.options.get("edit_set") or getattr(ctx.options, "edit_set", "")
    edits = (
        cases.select(
            pl.col("n_rewrites").alias("edits"),
            pl.Series("in", edited).replace_strict(
                {True: "in the edit set", False: "not edited"}, return_dtype=pl.String
            )
            if edited.len() == cases.height
            else pl.lit("all cases"),
        )
        .group_by("edits", "in")
        .len()
        .sort("in", "edits")
    )
    out.append(
        Plot(
            "Edits per case",
            f"Cases by their number of requested rewrites, split by membership in the edit set "
            f"({spec}).",
            _by(
                edits, "edits", "in", xlabel="requested rewrites", ylabel="cases", draw=grouped_bars
            ),
        )
    )
    return out


def _by(
    counts: pl.DataFrame,
    x: str,
    series: str,
    *,
    xlabel: str,
    ylabel: str,
    draw: Callable[..., Figure],
) -> Figure:
    """Grouped bars of a long ``(x, series, len)`` count frame, x in numeric order."""
    xs = sorted(counts[x].unique().to_list())
    table = {
        s: [int(counts.filter((pl.col(series) == s) & (pl.col(x) == v))["len"].sum()) for v in xs]
        for s in sorted(counts[series].unique().to_list())
    }
    return draw([str(v) for v in xs], table, xlabel=xlabel, ylabel=ylabel)
