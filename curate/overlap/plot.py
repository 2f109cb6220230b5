"""Figures of an :class:`~curate.overlap.sets.Overlap`: the UpSet plot and a Jaccard heat map.

Why ``upsetplot`` (the ``upsetplot-bombcell`` 0.11 distribution, a maintained fork): the PyPI
``upsetplot`` release breaks on current pandas/numpy; the fork draws the same figure as the
published ILLUSION one (checked side by side: same bars, same order, same dots), so a reader
compares like with like. It is fed *our* intersection counts (``from_memberships`` with the
counts as data), never asked to recompute them, so the figure shows exactly what the report
says — normalisation and aliases included. Both formats are always written: PNG for a quick
look and a report, SVG for a paper.

Matplotlib runs with the Agg backend (no display needed, CI-safe); figures are written
atomically.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from curate.core.outputs import guard_file, named, write_bytes_atomic
from curate.overlap.sets import Overlap

if TYPE_CHECKING:  # matplotlib is imported when a plot is drawn
    from matplotlib.figure import Figure

__all__ = ["close", "heatmap_figure", "plot_paths", "upset_figure", "write_plots"]


#: Written into every plot file's metadata (PNG ``Software``, SVG ``Creator``), near the start:
#: how a later run knows the file is curate's to replace (:func:`curate.core.outputs.guard_file`),
#: and never replaces a figure of someone else's under the same name.
MARK = "curate overlap plot"
MARKER = MARK.encode()


def plot_paths(plot: str | Path) -> list[Path]:
    """The four files ``--plot PATH`` writes: ``STEM.png``, ``STEM.svg`` (UpSet),
    ``STEM-jaccard.png``, ``STEM-jaccard.svg`` (a ``.png``/``.svg`` suffix of PATH is dropped)."""
    p = Path(plot)
    if p.is_dir():  # --plot figs/: the files go inside the folder
        p = p / "overlap"
    stem = p.with_suffix("") if p.suffix.lower() in (".png", ".svg") else p
    return [
        stem.with_name(stem.name + suffix)
        for suffix in (".png", ".svg", "-jaccard.png", "-jaccard.svg")
    ]


def _pyplot() -> Any:  # the matplotlib.pyplot module
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def upset_figure(o: Overlap, title: str = "") -> Figure:
    """The UpSet figure (intersection bars over the membership dots, set sizes at the left),
    ordered as upsetplot orders by default: degree, then collections by size."""
    plt = _pyplot()
    import upsetplot

    shown = o.intersections.filter(o.intersections["count"] > 0)
    fig = plt.figure(figsize=(max(8.0, 0.45 * shown.height + 4), max(5.0, 0.35 * len(o.names) + 4)))
    if not shown.height:
        fig.text(0.5, 0.5, "no keys in any collection", ha="center")
        return fig
    with warnings.catch_warnings():  # pandas deprecations inside the library, not ours
        warnings.simplefilter("ignore")
        data = upsetplot.from_memberships(shown["members"].to_list(), data=shown["count"].to_list())
        upsetplot.UpSet(
            data, subset_size="sum", show_counts=True, sort_categories_by="cardinality"
        ).plot(fig=fig)
    if title:
        fig.suptitle(title)
    return fig


def heatmap_figure(o: Overlap, title: str = "") -> Figure:
    """The pairwise Jaccard matrix as a heat map with the values written in the cells."""
    plt = _pyplot()
    m = o.matrix("jaccard")
    n = len(o.names)
    size = max(4.0, 0.55 * n + 2.5)
    fig, ax = plt.subplots(figsize=(size + 1.5, size))
    im = ax.imshow(m, vmin=0.0, vmax=1.0, cmap="viridis")
    ax.set_xticks(np.arange(n), labels=o.names, rotation=60, ha="right")
    ax.set_yticks(np.arange(n), labels=o.names)
    if n <= 30:
        for i in range(n):
            for j in range(n):
                ax.text(
                    j,
                    i,
                    f"{m[i, j]:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if m[i, j] > 0.6 else "white",
                )
    fig.colorbar(im, ax=ax, label="Jaccard index")
    ax.set_title(title or "Jaccard index")
    fig.tight_layout()
    return fig


def close(*figures: Any) -> None:
    """Release pyplot figures (pyplot keeps every figure it made until closed)."""
    plt = _pyplot()
    for fig in figures:
        plt.close(fig)


def write_plots(
    o: Overlap,
    plot: str | Path,
    *,
    title: str = "",
    overwrite: bool = False,
    inputs: Sequence[str | Path] = (),
) -> list[Path]:
    """Write ``STEM.png``, ``STEM.svg`` (UpSet) and ``STEM-jaccard.png``/``.svg``; the paths.

    Each target passes the output gate here too (the library is used without the CLI): a
    figure of someone else's under the same name is replaced only with ``overwrite``, an input
    never."""
    plt = _pyplot()
    targets = plot_paths(Path(plot))
    for target in targets:
        guard_file(
            target, inputs, option=named("--plot", "plot"), marker=MARKER, overwrite=overwrite
        )
    written = []
    for fig, (png, svg) in (
        (upset_figure(o, title), targets[:2]),
        (heatmap_figure(o, title), targets[2:]),
    ):
        try:
            for target, fmt in ((png, "png"), (svg, "svg")):
                buf = io.BytesIO()
                meta = {"Date": None, "Creator": MARK} if fmt == "svg" else {"Software": MARK}
                fig.savefig(buf, format=fmt, dpi=100, metadata=meta)
                write_bytes_atomic(target, buf.getvalue())
                written.append(target)
        finally:
            plt.close(fig)
    return written
