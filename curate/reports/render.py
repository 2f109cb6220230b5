"""Rendering a :class:`~curate.core.findings.Report` as text, JSON or Markdown.

Text is for a terminal (a table of counts per rule, then examples); JSON is the stable machine
format CI consumes; Markdown is for pull-request comments and dataset cards.
"""

from __future__ import annotations

import html
import io
import re
from typing import TYPE_CHECKING, Any

import polars as pl
from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from rich.console import JustifyMethod

from curate.core.errors import counted
from curate.core.findings import Headline, InputInfo, Report, gc_paused, json_bytes
from curate.core.version import __version__

#: How many example findings per rule the text and Markdown reports show.
EXAMPLES_PER_RULE = 3
#: The console width of an unwrapped text report: wide enough that no line is ever folded (soft
#: wrapping is on too; the width only bounds the table, which is sized to its content).
_UNWRAPPED = 1_000_000


def to_json_obj(report: Report) -> dict[str, Any]:
    """The documented JSON report: tool, version, family, inputs, options, findings, summary."""
    with gc_paused():  # a dict per finding, no cycles
        return _json_obj(report)


def _json_obj(report: Report) -> dict[str, Any]:
    return {
        "tool": "curate",
        "version": __version__,
        "family": report.family,
        "inputs": [i.to_json() for i in report.inputs],
        "options": report.options,
        "findings": [f.to_json() for f in report.iter_findings(shown=True)],
        "summary": report.summary(),
    }


def render_json(report: Report) -> str:
    return json_bytes(to_json_obj(report), indent=True).decode() + "\n"


def _examples(report: Report) -> pl.DataFrame:
    return (
        report.findings.with_columns(pl.int_range(pl.len()).over("rule").alias("_i"))
        .filter(pl.col("_i") < EXAMPLES_PER_RULE)
        .sort("rule", "_i")
    )


def _rule_titles(report: Report) -> dict[str, str]:
    from curate.families import get_family

    try:
        return {r.code: r.name for r in get_family(report.family).rules}
    except Exception:  # a report of an unknown family still renders
        return {}


def _in_file(report: Report, row: dict[str, Any]) -> str:
    """``file.csv: `` before a record when the report has several inputs (ids repeat)."""
    if len(report.inputs) < 2 or not row.get("input"):
        return ""
    return f"{row['input']}: "


def options_line(report: Report) -> str:
    opts = report.options
    # an empty list in the options is a choice (``public`` leaves out unset ones): "none"
    bits = [f"{k}={v if v != [] else 'none'}" for k, v in opts.items() if v not in (None, "", ())]
    return ", ".join(bits)


def headlines(report: Report) -> list[Headline]:
    """A family's summary figures as sentences, shown under the inputs in every report: the
    family's :class:`~curate.core.findings.Headline` objects (``report.headlines``, e.g. the
    edit-set contamination sentence of knowledge editing), then the strings of
    ``stats["headline"]`` — the numbers a reader compares with the dataset's published table
    (icrl: tasks, episodes, final return). The core renders them without knowing the family."""
    lines = report.stats.get("headline") or []
    more = [str(x) for x in lines] if isinstance(lines, list) else [str(lines)]
    return [*report.headlines, *(Headline(x) for x in more)]


def render_text(report: Report, *, color: bool = False, width: int | None = None) -> str:
    """A terminal report: inputs, a table of counts per rule, then a few examples per rule.

    ``color`` adds ANSI styles (the caller decides from the destination, ``NO_COLOR`` and
    ``FORCE_COLOR``; this function never looks at the environment). ``width`` is the terminal's
    width; ``None`` (a pipe or a file) means no wrapping at all, so that every finding stays on
    one line and ``grep`` finds it whole.
    """
    buf = io.StringIO()
    con = Console(
        file=buf,
        force_terminal=color,
        width=width or _UNWRAPPED,
        no_color=not color,
        emoji=False,
        highlight=False,
        soft_wrap=width is None,
    )
    names = _rule_titles(report)
    for i in report.inputs:
        path = _shown(i.path)
        con.print(
            f"[bold]{path}[/bold]  {counted(i.records, 'record')}{_one_split(report, i)}  "
            f"sha256 {i.sha256[:12]}"
        )
    if report.options:
        con.print(f"options: {_shown(options_line(report))}")
    for h in headlines(report):
        con.print(_shown(h.render()))
    counts = report.counts_by_rule()
    if counts.is_empty():
        con.print(
            f"[green]No findings[/green] in {report.records} records "
            f"({len(report.rules_run)} rules run)."
        )
        return buf.getvalue()
    t = Table(title=f"{report.family}: findings per rule", title_justify="left")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("rule", "left"),
        ("name", "left"),
        ("category", "left"),
        ("severity", "left"),
        ("findings", "right"),
        ("records", "right"),
    )
    for col, just in columns:
        t.add_column(col, justify=just)
    style = {"error": "red", "warning": "yellow", "info": "cyan"}
    for r in counts.iter_rows(named=True):
        t.add_row(
            r["rule"],
            names.get(r["rule"], ""),
            r["category"],
            f"[{style[r['severity']]}]{r['severity']}[/]",
            str(r["findings"]),
            str(r["records"]),
        )
    con.print(t)
    con.print("[bold]Examples[/bold]")
    for r in _examples(report).iter_rows(named=True):
        where = (
            _in_file(report, r)
            + f"record {r['record']}"
            + (f", {r['field']}" if r["field"] else "")
        )
        con.print(
            f"  {r['rule']} [{style[r['severity']]}]{r['severity']}[/] {_shown(where)}: "
            f"{_shown(r['message'])}"
        )
    s = report.summary()
    sev = s["by_severity"]
    con.print(
        f"{counted(s['findings'], 'finding')}{_in_records(s)}: "
        f"{counted(sev['error'], 'error')}, {counted(sev['warning'], 'warning')}, "
        f"{sev['info']} info."
    )
    return buf.getvalue()


def _in_records(s: dict[str, Any]) -> str:
    """`` in 3 of 9 records`` — left out when the findings sit on more records than the input
    counts (a family whose records are histories reports on root members and on task groups
    without histories too): "3 of 0 records" is not a figure anyone can use."""
    have, of = s["records_with_findings"], s["records"]
    if have > of:
        return ""
    return f" in {have} of {counted(of, 'record')}"


def _one_split(report: Report, i: InputInfo) -> str:
    """`` in test`` for an input wholly in one split when several inputs were read: where a
    file's split came from its name (the table family's train.csv and test.csv) or a
    project's mapping, the reader sees which split each file was read as."""
    if len(report.inputs) < 2 or len(i.splits) != 1:
        return ""
    return f" in {_shown(next(iter(i.splits)))}"


#: C0 and C1 control characters, newline and tab among them.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with each control character written as its escape (``\\x1b``, ``\\n``).

    Why: a report prints values from the data. An id holding ``ESC[2J`` cleared the reader's
    terminal, and one holding a newline split a finding over two lines (one line per finding
    is what a ``grep`` of the report relies on)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def _shown(text: str) -> str:
    """Data in a rich console line: its control characters visible, its brackets not markup."""
    return escape(visible(text))


def md_escape(text: str) -> str:
    """Markdown text from data: one line, no table cell split (``|``), and no HTML (a cell
    holding ``<img src=x onerror=...>`` was passed into PR comments as markup)."""
    return visible(html.escape(text.replace("\n", " "), quote=False)).replace("|", "\\|")


def md_code(text: str) -> str:
    """``text`` as one Markdown code span: fenced by more backticks than it holds in a row
    (CommonMark's rule), so a backtick in a value cannot end the span early."""
    text = visible(text)  # no `|` escape: a list item's span shows a backslash as written
    run = max((len(m) for m in re.findall("`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_headline(h: Headline) -> str:
    """A headline as Markdown: the sentence escaped, its values as code spans."""
    if not h.values:
        return md_escape(h.text)
    return md_escape(h.text).format(*(md_code(str(v)) for v in h.values))


def render_markdown(report: Report, *, heading_level: int = 2) -> str:
    """Markdown summary: per-rule counts and examples (used for PR comments and dataset cards)."""
    h = "#" * heading_level
    names = _rule_titles(report)
    s = report.summary()
    out = [f"{h} Audit: {report.family}", ""]
    for i in report.inputs:
        digest = f", sha256 `{i.sha256[:16]}`" if i.sha256 else ""
        out.append(
            f"- {md_code(i.path)}: {counted(i.records, 'record')}{_one_split(report, i)}{digest}"
        )
    if report.options:
        out.append(f"- options: {md_escape(options_line(report))}")
    out += [f"- {_md_headline(h)}" for h in headlines(report)]
    sev = s["by_severity"]
    out += [
        f"- {counted(s['findings'], 'finding')}{_in_records(s)} "
        f"({counted(sev['error'], 'error')}, {counted(sev['warning'], 'warning')}, "
        f"{sev['info']} info)",
        "",
    ]
    counts = report.counts_by_rule()
    if counts.is_empty():
        out.append("No findings.")
        return "\n".join(out) + "\n"
    out += [
        "| rule | name | category | severity | findings | records |",
        "|---|---|---|---|---:|---:|",
    ]
    for r in counts.iter_rows(named=True):
        out.append(
            f"| {r['rule']} | {names.get(r['rule'], '')} | {r['category']} | "
            f"{r['severity']} | {r['findings']} | {r['records']} |"
        )
    out += ["", f"{h}# Examples", ""]
    for r in _examples(report).iter_rows(named=True):
        field = f" {md_code(r['field'])}" if r["field"] else ""
        out.append(
            f"- **{r['rule']}** {md_escape(_in_file(report, r))}record {md_code(r['record'])}"
            f"{field}: {md_escape(r['message'])}"
        )
    return "\n".join(out) + "\n"


def durations_json(durations: dict[str, float]) -> dict[str, float]:
    """Stage → seconds in run order, to the tenth of a millisecond (``--durations``)."""
    return {k: round(max(v, 0.0), 4) for k, v in durations.items()}


def _stage_label(stage: str) -> str:
    if stage.startswith("table:"):
        return f"shared table {stage.removeprefix('table:')}"
    return stage


def render_durations(durations: dict[str, float], fmt: str) -> str:
    """Where the time went, slowest first as pytest's ``--durations`` shows it.

    Why slowest first with the share of the total: the question is "what do I wait for", and
    the answer is at the top; stages a reader expects (``load``, ``render``) are listed beside
    the rules because they are often the larger part. Shared tables (built once, used by several
    rules) are their own rows, so a rule's figure is its own work.
    """
    total = sum(max(v, 0.0) for v in durations.values()) or 1e-12
    rows = sorted(durations.items(), key=lambda kv: -kv[1])
    if fmt == "markdown":
        out = ["", "## Durations", "", "| stage | seconds | share |", "|---|---:|---:|"]
        out += [f"| {_stage_label(k)} | {v:.3f} | {v / total:.0%} |" for k, v in rows]
        out.append(f"| total | {total:.3f} | |")
        return "\n".join(out) + "\n"
    out = [f"durations (wall seconds, slowest first; total {total:.2f} s):"]
    out += [f"  {v:9.3f} s {v / total:5.0%}  {_stage_label(k)}" for k, v in rows]
    return "\n".join(out) + "\n"
