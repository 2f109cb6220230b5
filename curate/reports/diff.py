"""Rendering a :class:`~curate.core.diff.Diff`: text for a terminal, JSON for machines,
Markdown for a pull request or a dataset card, HTML with each changed record side by side.

Text and Markdown list at most :data:`LISTED` records (JSON lists all): a diff of a re-split
moves thousands of rows, and a reader wants the counts first and a sample of each kind.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from curate.core.diff import KINDS, Diff, RecordChange
from curate.core.errors import counted
from curate.core.findings import json_bytes
from curate.core.version import __version__

#: Records a text or Markdown diff lists (the counts cover all; JSON lists all).
LISTED = 100
#: Nested paths shown per changed field in text and Markdown.
PATHS_SHOWN = 5

_KIND_WORDS = {
    "added": "added",
    "removed": "removed",
    "changed": "changed",
    "moved": "moved",
    "rekeyed": "re-keyed",
}


def render_json(d: Diff) -> str:
    obj = {"tool": "curate", "version": __version__, **d.to_json()}
    return json_bytes(obj, indent=True).decode() + "\n"  # exact beyond 64-bit integers


def _records(n: int) -> str:
    return counted(n, "record", grouped=True)


def summary_line(d: Diff) -> str:
    """``52 records → 49: 3 removed, 5 changed; 44 unchanged`` (kinds with none left out;
    ``(1 record under more than one kind)`` where a record is, say, changed and moved)."""
    if d.identical:
        return f"identical: {_records(d.records_old)}"
    c = d.counts()
    parts = [f"{c[k]:,} {_KIND_WORDS[k]}" for k in KINDS if c[k]]
    cols = []
    if d.columns_added:
        cols.append(f"columns added: {', '.join(d.columns_added)}")
    if d.columns_removed:
        cols.append(f"columns removed: {', '.join(d.columns_removed)}")
    tail = f"; {'; '.join(cols)}" if cols else ""
    # an added or removed column's values are not compared (every record would differ): say
    # what "unchanged" covers, so that a remaster's added marks (KE202's withheld_edits on
    # 313 cases) do not read as "401 unchanged" records (found by a new-user review)
    scope = " in the columns both sides have" if cols else ""
    if not parts:
        return f"{_records(d.records_old)}, none changed{scope}{tail}"
    # a record is counted under each kind it is (changed and moved): say how many are, so
    # the counts need not add up to the records ("3 → 3: 1 changed, 1 moved; 2 unchanged")
    several = sum(1 for x in d.changes if len(x.kinds) > 1)
    both = f" ({_records(several)} under more than one kind)" if several else ""
    return (
        f"{_records(d.records_old)} → {d.records_new:,}: {', '.join(parts)}{both}"
        f"; {c['unchanged']:,} unchanged{scope}{tail}"
    )


def _value(v: Any, limit: int = 120) -> str:
    if v is None:
        return "(none)"
    text = v if isinstance(v, str) else json_bytes(v).decode()
    text = repr(text) if isinstance(v, str) else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _head(c: RecordChange) -> str:
    """``changed 7437 (train)``, ``re-keyed 9186 → 990001 (train → test): why``."""
    rec = f"{c.record} → {c.new_record}" if c.kind == "rekeyed" else c.record
    if c.kind == "added":
        where = c.new_split
    elif c.kind == "removed" or c.new_split == c.split:
        where = c.split
    else:
        where = f"{c.split} → {c.new_split}"
    note = f": {c.note}" if c.note else ""
    return f"{_KIND_WORDS[c.kind]} {rec}{f' ({where})' if where else ''}{note}"


def _field_lines(c: RecordChange) -> list[str]:
    out = []
    for f in c.fields:
        if not f.paths or (len(f.paths) == 1 and f.paths[0][0] == f.field):
            out.append(f"{f.field or '(record)'}: {_value(f.old)} → {_value(f.new)}")
            continue
        for path, old, new in f.paths[:PATHS_SHOWN]:
            out.append(f"{path}: {_value(old)} → {_value(new)}")
        if len(f.paths) > PATHS_SHOWN:
            out.append(f"{f.field}: {len(f.paths) - PATHS_SHOWN} more paths")
    return out


def _findings_lines(d: Diff) -> list[str]:
    """``--audits``: the findings per rule that appeared and that are gone."""
    if d.findings is None:
        return []
    out = []
    for what in ("appeared", "gone"):
        per: dict[str, int] = {}
        for f in d.findings[what]:
            per[f["rule"]] = per.get(f["rule"], 0) + 1
        listed = ", ".join(f"{k} {n:,}" for k, n in sorted(per.items())) or "none"
        out.append(f"  findings {what}: {listed}")
    return out


def render_text(d: Diff) -> str:
    lines = [f"curate diff {d.family}: {d.old} → {d.new}", f"  {summary_line(d)}"]
    per_split = d.by_split()
    if per_split:
        lines.append("  by split:")
        for split, counts in per_split.items():
            got = ", ".join(f"{n:,} {_KIND_WORDS[k]}" for k, n in counts.items() if n)
            lines.append(f"    {split or '(none)'}: {got}")
    per_field = d.by_field()
    if per_field:
        lines.append(
            "  by field: " + ", ".join(f"{k or '(record)'} {n:,}" for k, n in per_field.items())
        )
    lines += _findings_lines(d)
    if d.changes:
        lines.append("")
    for c in d.changes[:LISTED]:
        lines.append(_head(c))
        lines += [f"  {x}" for x in _field_lines(c)]
    if len(d.changes) > LISTED:
        lines.append(f"… {len(d.changes) - LISTED:,} more records (--format json lists all)")
    return "\n".join(lines) + "\n"


#: Characters Markdown reads as emphasis, code, links or escapes: escaped in data.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]~])")


def _md(text: str) -> str:
    """Data as Markdown text on one line of a table: no cell split (``|``), no HTML (a value
    gaining ``<!-- -->`` showed as unchanged in a PR comment) and no emphasis or code (``**x**``
    turned bold): the change a reader sees is the change made."""
    text = html.escape(text.replace("\n", " "), quote=False)
    return _MD_SPECIAL.sub(r"\\\1", text).replace("|", "\\|")


def render_markdown(d: Diff) -> str:
    lines = [f"## curate diff {d.family}", "", f"`{d.old}` → `{d.new}`: {summary_line(d)}", ""]
    lines += _split_table(d) + _field_table(d)
    if d.findings is not None:
        lines += [x.strip() + "  " for x in _findings_lines(d)] + [""]
    if d.changes:
        lines += ["| record | change |", "|---|---|"]
        for c in d.changes[:LISTED]:
            detail = "; ".join(_field_lines(c))
            lines.append(f"| {_md(_head(c))} | {_md(detail)} |")
        if len(d.changes) > LISTED:
            lines += ["", f"{len(d.changes) - LISTED:,} more records (`--format json` lists all)."]
    return "\n".join(lines) + "\n"


_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;max-width:80rem;color:#1d1d1f}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}
td,th{border:1px solid #ccc;padding:.25rem .5rem;vertical-align:top;text-align:left}
th{background:#f4f4f4}.old{background:#fdecea}.new{background:#e8f5e9}
pre{margin:0;white-space:pre-wrap;word-break:break-word;font:12px/1.4 ui-monospace,monospace}
h3{margin:1.5rem 0 .25rem}.note{color:#555}
"""


def render_html(d: Diff) -> str:
    """One self-contained page (nothing loaded from elsewhere): the counts, then each listed
    record with its changed fields side by side, old left and new right."""
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f'<meta name="generator" content="curate {__version__}">',
        f"<title>curate diff {e(d.family)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>curate diff {e(d.family)}</h1>",
        f"<p><code>{e(d.old)}</code> → <code>{e(d.new)}</code>: {e(summary_line(d))}</p>",
    ]
    per_split = d.by_split()
    if per_split:
        parts.append(
            "<table><tr><th>split</th>"
            + "".join(f"<th>{_KIND_WORDS[k]}</th>" for k in KINDS)
            + "</tr>"
        )
        for split, counts in per_split.items():
            cells = "".join(f"<td>{counts[k]:,}</td>" for k in KINDS)
            parts.append(f"<tr><td>{e(split or '(none)')}</td>{cells}</tr>")
        parts.append("</table>")
    for c in d.changes[:LISTED]:
        parts.append(f"<h3>{e(_head(c))}</h3>")
        if c.fields:
            parts.append(f"<table><tr><th>field</th><th>{e(d.old)}</th><th>{e(d.new)}</th></tr>")
            for f in c.fields:
                rows = f.paths or ((f.field, f.old, f.new),)
                for path, old, new in rows:
                    parts.append(
                        f"<tr><td>{e(path or '(record)')}</td>"
                        f"<td class='old'><pre>{e(_pretty(old))}</pre></td>"
                        f"<td class='new'><pre>{e(_pretty(new))}</pre></td></tr>"
                    )
            parts.append("</table>")
        elif c.value is not None:
            side = "old" if c.kind == "removed" else "new"
            parts.append(f"<pre class='{side}'>{e(_pretty(c.value))}</pre>")
    if len(d.changes) > LISTED:
        parts.append(
            f"<p class='note'>{len(d.changes) - LISTED:,} more records "
            "(--format json lists all).</p>"
        )
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _pretty(v: Any) -> str:
    if v is None:
        return "(none)"
    if isinstance(v, str):
        return v
    return json_bytes(v, indent=True).decode()


def changes_section(
    d: Diff, changelog: Sequence[Any] = (), *, command: str = "curate diff FAMILY SOURCE THIS"
) -> list[str]:
    """The dataset card's "Changes from the source": the diff of the input and what was
    published, counted by kind, by split, by the rule that asked (from the changelog: records
    per rule) and by field. Why in the card: a reader of a remaster asks first what is
    different from the original, and the card is what the Hub shows."""
    lines = [
        "## Changes from the source",
        "",
        f"Compared record by record with the input: {summary_line(d)}. `diff.json` lists every "
        f"change, field by field; `{command}` recomputes it.",
        "",
    ]
    lines += _split_table(d)
    per_rule: dict[str, set[str]] = {}
    for c in changelog:
        per_rule.setdefault(c.rule, set()).add(str(c.record))
    if per_rule:
        lines += ["| rule | records it changed |", "|---|---:|"]
        lines += [f"| {r} | {len(recs):,} |" for r, recs in sorted(per_rule.items())]
        lines.append("")
    return lines + _field_table(d)


def _split_table(d: Diff) -> list[str]:
    """Markdown: records per kind of change, per split (none when nothing changed)."""
    per_split = d.by_split()
    if not per_split:
        return []
    lines = [
        "| split | " + " | ".join(_KIND_WORDS[k] for k in KINDS) + " |",
        "|---|" + "---:|" * len(KINDS),
    ]
    for split, counts in per_split.items():
        cells = " | ".join(f"{counts[k]:,}" for k in KINDS)
        lines.append(f"| {split or '(none)'} | {cells} |")
    return [*lines, ""]


def _field_table(d: Diff) -> list[str]:
    """Markdown: records changed per field, most first."""
    per_field = d.by_field()
    if not per_field:
        return []
    lines = ["| field | records changed |", "|---|---:|"]
    lines += [f"| {_md(k or '(record)')} | {n:,} |" for k, n in per_field.items()]
    return [*lines, ""]


def as_check(d: Diff, fail: set[str], family: str) -> Any:
    """The diff as a one-dataset check (:class:`~curate.reports.verdict.CheckResult`) for the
    CI formats: one CK101 finding per record changed in a kind that fails (``fail``), so that
    JUnit, SARIF and GitHub annotations say what a frozen-dataset check in ``curate check``
    says, from the same code (:func:`~curate.reports.verdict.pin_findings`)."""
    import polars as pl

    from curate.core.findings import FINDING_SCHEMA, InputInfo, Report
    from curate.reports.verdict import judge, pin_findings

    report = Report(
        family,
        [InputInfo(d.new, "", d.records_new)],
        pl.DataFrame(schema=FINDING_SCHEMA),
        [],
    )
    allowed = [k for k in (*KINDS, "columns") if k not in fail]
    pin_findings(report, d, allowed, d.old)
    from curate.reports.verdict import CheckResult

    name = d.new.rstrip("/").rsplit("/", 1)[-1] or family
    return CheckResult([judge(name, report, fail_on="error" if fail else "never")], command="diff")
