"""Plots of a report: the :class:`Plot` a family returns, and the few chart shapes families use.

Why a module of its own: the HTML report (:mod:`curate.reports.html`) embeds whatever plots a
family's :meth:`~curate.families.base.Family.plots` hook returns, and later tools (the overlap
command's UpSet plot and Jaccard heat map) hand in their own figures. So a :class:`Plot` takes a
matplotlib figure *or* ready SVG/PNG bytes, and :func:`plot_bytes` turns either into bytes the
same way every time.

Determinism: the same input gives the same bytes. Figures are drawn on
:class:`matplotlib.figure.Figure` directly (no pyplot: no global figure registry, no GUI
backend), with fixed style settings (:data:`STYLE`: the DejaVu font matplotlib ships, a fixed
SVG hash salt for the ids of clip paths, text as paths) and metadata without a date or a
version (``Date``, ``Creator``, PNG ``Software`` left out).

Cost: the chart helpers take *aggregates* (a label and a count per bar, a histogram's counts),
never rows; families aggregate in polars first, so a plot of a million-row dataset costs the
group-by and a few dozen bars. Long category lists are cut to :data:`MAX_BARS` (the rest summed
as "other (N more)").
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # matplotlib is imported only when a plot is drawn
    from matplotlib.typing import RcKeyType

#: Bars a categorical chart shows at most; the smallest categories beyond are summed as one.
MAX_BARS = 30
#: Style of every figure curate draws (fixed, so that output does not depend on a user's
#: matplotlibrc). ``svg.hashsalt`` fixes the ids matplotlib otherwise draws at random.
STYLE: dict[RcKeyType, Any] = {
    "svg.hashsalt": "curate",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "path.simplify": True,
}
#: One colour per series, in order (colour-blind-safe, from Okabe & Ito).
COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
SEVERITY_COLORS = {"error": "#C62828", "warning": "#EF8F00", "info": "#1F77B4"}


@dataclass(frozen=True)
class Plot:
    """One plot of a report: a title, a caption saying what it shows (and how it was counted),
    and the figure — a :class:`matplotlib.figure.Figure` (or anything with ``savefig``), or the
    bytes of an SVG or PNG image drawn elsewhere."""

    title: str
    caption: str
    figure: Any

    def image(self) -> tuple[str, bytes]:
        """``(mime type, bytes)`` of the image (see :func:`plot_bytes`)."""
        return plot_bytes(self.figure)


def plot_bytes(figure: Any, fmt: str = "svg") -> tuple[str, bytes]:
    """``(mime type, bytes)`` of a figure: bytes are sniffed (PNG by its signature, else SVG),
    a figure is saved as ``fmt`` (``svg`` or ``png``) with fixed metadata."""
    if isinstance(figure, bytes | bytearray | memoryview):
        data = bytes(figure)
        if data.startswith(b"\x89PNG\r\n\x1a\n"):
            return "image/png", data
        head = data[:2048].lstrip().lower()
        if head.startswith(b"<?xml") or head.startswith(b"<svg") or b"<svg" in head:
            return "image/svg+xml", data
        raise ValueError("plot bytes are neither PNG nor SVG")
    if not hasattr(figure, "savefig"):
        raise TypeError(f"a plot's figure must be a matplotlib figure or bytes, not {figure!r}")
    import matplotlib as mpl

    buf = io.BytesIO()
    with mpl.rc_context(STYLE):
        if fmt == "png":
            figure.savefig(buf, format="png", metadata={"Software": None})
            return "image/png", buf.getvalue()
        figure.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return "image/svg+xml", buf.getvalue()


def new_figure(width: float = 7.0, height: float = 3.2) -> Any:
    """A figure with one axes, in curate's style (no pyplot, so nothing global is kept)."""
    import matplotlib as mpl
    from matplotlib.figure import Figure

    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(width, height), layout="constrained")
        fig.add_subplot()
    return fig


def cut(items: Sequence[tuple[str, float]], limit: int = MAX_BARS) -> list[tuple[str, float]]:
    """The largest ``limit - 1`` items in their given order, the rest summed as one item."""
    if len(items) <= limit:
        return list(items)
    keep = sorted(range(len(items)), key=lambda i: (-items[i][1], i))[: limit - 1]
    rest = sum(v for i, (_, v) in enumerate(items) if i not in set(keep))
    return [items[i] for i in sorted(keep)] + [(f"other ({len(items) - len(keep)} more)", rest)]


def bars(
    items: Sequence[tuple[str, float]],
    *,
    xlabel: str = "",
    ylabel: str = "",
    colors: Sequence[str] | None = None,
    horizontal: bool | None = None,
) -> Any:
    """A bar chart of ``(label, value)`` (cut to :data:`MAX_BARS`); horizontal when the labels
    are long or many, so that they stay readable."""
    import matplotlib as mpl

    items = cut(items)
    labels = [str(k) for k, _ in items]
    values = [v for _, v in items]
    if horizontal is None:
        horizontal = len(items) > 12 or max((len(x) for x in labels), default=0) > 10
    height = max(2.4, 0.22 * len(items) + 1.0) if horizontal else 3.2
    fig = new_figure(7.0, height)
    ax = fig.axes[0]
    with mpl.rc_context(STYLE):
        col = list(colors) if colors else COLORS[0]
        if horizontal:
            pos = list(range(len(items)))[::-1]
            ax.barh(pos, values, color=col)
            ax.set_yticks(pos, labels)
            ax.set_xlabel(ylabel)
            ax.set_ylabel(xlabel)
        else:
            ax.bar(range(len(items)), values, color=col)
            ax.set_xticks(range(len(items)), labels)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
    return fig


def grouped_bars(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    xlabel: str = "",
    ylabel: str = "",
) -> Any:
    """Bars per category, one bar per series side by side (e.g. a label's count per split).
    ``categories`` should already be cut to a readable number (:func:`cut`)."""
    import matplotlib as mpl

    n = max(len(series), 1)
    width = 0.8 / n
    horizontal = len(categories) > 12 or max((len(c) for c in categories), default=0) > 10
    height = (
        max(2.6, 0.08 * n * len(categories) + 0.18 * len(categories) + 1.2) if horizontal else 3.2
    )
    fig = new_figure(7.0, height)
    ax = fig.axes[0]
    with mpl.rc_context(STYLE):
        for i, (name, values) in enumerate(series.items()):
            offset = (i - (n - 1) / 2) * width
            if horizontal:
                pos = [len(categories) - 1 - k + offset for k in range(len(categories))]
                ax.barh(pos, list(values), height=width, label=name, color=COLORS[i % len(COLORS)])
            else:
                pos = [k + offset for k in range(len(categories))]
                ax.bar(pos, list(values), width=width, label=name, color=COLORS[i % len(COLORS)])
        ticks = list(range(len(categories)))
        if horizontal:
            ax.set_yticks([len(categories) - 1 - k for k in ticks], list(categories))
            ax.set_xlabel(ylabel)
            ax.set_ylabel(xlabel)
        else:
            ax.set_xticks(ticks, list(categories))
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
        if len(series) > 3:  # many series: beside the bars, never over them
            fig.legend(frameon=False, loc="outside right upper")
        elif len(series) > 1:
            ax.legend(frameon=False)
    return fig


def histogram(
    counts: Sequence[tuple[float, float]],
    *,
    xlabel: str = "",
    ylabel: str = "count",
    log_y: bool = False,
) -> Any:
    """A histogram drawn from ``(value, count)`` pairs already counted (one bar per value when
    the values are few; binned into at most 60 bins otherwise)."""
    import matplotlib as mpl
    import numpy as np

    values = np.asarray([v for v, _ in counts], dtype=float)
    weights = np.asarray([c for _, c in counts], dtype=float)
    fig = new_figure(7.0, 3.0)
    ax = fig.axes[0]
    with mpl.rc_context(STYLE):
        if values.size:
            distinct = np.unique(values)
            whole = bool(np.all(np.mod(distinct, 1) == 0))
            bins: np.ndarray | int
            if whole and distinct.size <= 60 and distinct.max() - distinct.min() <= 120:
                bins = np.arange(distinct.min() - 0.5, distinct.max() + 1.5)
            else:
                bins = min(60, max(10, distinct.size))
            ax.hist(values, bins=bins, weights=weights, color=COLORS[0])
        if log_y:
            ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    return fig


def findings_per_rule(counts: Sequence[Mapping[str, Any]]) -> Plot | None:
    """Every report's first plot: findings per rule, coloured by severity (None: no findings).
    ``counts`` are :meth:`curate.core.findings.Report.counts_by_rule` rows."""
    rows = [r for r in counts if r["findings"]]
    if not rows:
        return None
    items = [(str(r["rule"]), float(r["findings"])) for r in rows]
    colors = [SEVERITY_COLORS.get(str(r["severity"]), COLORS[0]) for r in rows]
    if len(items) > MAX_BARS:  # colours follow the bars kept by cut()
        kept = {k for k, _ in cut(items)}
        colors = [c for (k, _), c in zip(items, colors, strict=True) if k in kept] + ["#888888"]
    fig = bars(items, xlabel="rule", ylabel="findings", colors=colors, horizontal=len(items) > 12)
    return Plot(
        "Findings per rule",
        "Number of findings of each rule that found something; red errors, orange warnings, "
        "blue info.",
        fig,
    )


def boxes(
    groups: Sequence[tuple[str, Sequence[float]]], *, xlabel: str = "", ylabel: str = ""
) -> Any:
    """One box plot per group (quartiles, whiskers at 1.5 IQR, outliers as points); for a few
    dozen groups of bounded size, such as the histories of each task."""
    import matplotlib as mpl

    groups = list(groups)[:MAX_BARS]
    fig = new_figure(7.0, 3.2)
    ax = fig.axes[0]
    with mpl.rc_context(STYLE):
        ax.boxplot(
            [list(v) for _, v in groups],
            tick_labels=[str(k) for k, _ in groups],
            patch_artist=True,
            boxprops={"facecolor": "#cfe3f3", "edgecolor": COLORS[0]},
            medianprops={"color": "#000000"},
            flierprops={"markersize": 3},
        )
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    return fig


def count_matrix(
    rows: Sequence[str],
    cols: Sequence[str],
    counts: Mapping[tuple[str, str], int],
    *,
    xlabel: str = "",
    ylabel: str = "",
) -> Any:
    """A matrix of counts (a confusion-style table: given label by suggested label), each cell
    shaded by its count and printed; empty cells left blank. ``rows`` and ``cols`` in the
    order shown (cut to :data:`MAX_BARS` each by the caller)."""
    import matplotlib as mpl
    import numpy as np

    m = np.zeros((len(rows), len(cols)))
    for (r, c), n in counts.items():
        if r in rows and c in cols:
            m[list(rows).index(r), list(cols).index(c)] = n
    fig = new_figure(max(3.5, 0.5 * len(cols) + 2.5), max(2.4, 0.35 * len(rows) + 1.6))
    ax = fig.axes[0]
    with mpl.rc_context(STYLE):
        ax.grid(False)
        ax.imshow(np.where(m > 0, m, np.nan), cmap="Blues", aspect="auto")
        top = m.max() if m.size else 0
        for i in range(len(rows)):
            for j in range(len(cols)):
                if m[i, j]:
                    shade = "white" if m[i, j] > top / 2 else "black"
                    ax.text(j, i, f"{int(m[i, j]):,}", ha="center", va="center", color=shade)
        ax.set_xticks(range(len(cols)), [str(c) for c in cols], rotation=45, ha="right")
        ax.set_yticks(range(len(rows)), [str(r) for r in rows])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
    return fig
