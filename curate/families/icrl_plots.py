"""The in-context RL family's plots for the HTML report (:meth:`Family.plots`).

Drawn from the scan the audit already made (``histories``: one row per history with its
episodes and summed return; ``lengths``: the histogram of completed episodes' lengths), never
by scanning again: with ``--metadata-only`` or a ``--select`` that ran no array rule there is no
scan, and no plot of returns or lengths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

if TYPE_CHECKING:
    from curate.core.findings import Report
    from curate.core.plots import Plot
    from curate.core.rules import AuditContext
    from curate.schemas.icrl_tables import IcrlData

#: Tasks drawn one box each at most; more tasks are drawn as a histogram over tasks.
MAX_BOXES = 30


def icrl_plots(data: IcrlData, report: Report, ctx: AuditContext) -> list[Plot]:
    from curate.audits.icrl.registry import SCAN
    from curate.core.plots import Plot, boxes, histogram

    scan = data._scanned or ctx.built(SCAN)
    if scan is None or scan.histories.height == 0:
        return []
    h = scan.histories.filter(pl.col("episodes") > 0).with_columns(
        (pl.col("return_sum") / pl.col("episodes")).alias("mean_return"),
        pl.format("{}:{}", "file", "group").alias("task"),
    )
    several = h["file"].n_unique() > 1
    out: list[Plot] = []
    tasks = h["task"].n_unique()
    if h.height and tasks <= MAX_BOXES:
        per = h.group_by("task", maintain_order=True).agg("mean_return", pl.col("group").first())
        groups = [
            (t if several else g, [float(x) for x in v if x == x])
            for t, g, v in per.select("task", "group", "mean_return").iter_rows()
        ]
        out.append(
            Plot(
                "Mean episode return per history, by task",
                "Each history's summed reward over its completed episodes divided by their "
                "number; one box per task (its histories).",
                boxes(groups, xlabel="task", ylabel="mean return per episode"),
            )
        )
    elif h.height:
        per_task = h.group_by("task").agg(pl.col("mean_return").mean()).drop_nans()
        vals = per_task["mean_return"].round(3).value_counts().sort("mean_return")
        out.append(
            Plot(
                "Mean episode return per task",
                f"Over {tasks:,} tasks: the mean over a task's histories of their mean return "
                "per episode.",
                histogram(list(vals.iter_rows()), xlabel="mean return per episode", ylabel="tasks"),
            )
        )
    lengths = scan.lengths.filter(pl.col("count") > 0)
    if lengths.height:
        out.append(
            Plot(
                "Episode length",
                f"Completed episodes ({int(lengths['count'].sum()):,}) by their length in "
                "transitions, over every scanned history.",
                histogram(
                    list(lengths.select("length", "count").iter_rows()),
                    xlabel="transitions per episode",
                    ylabel="episodes",
                ),
            )
        )
    return out
