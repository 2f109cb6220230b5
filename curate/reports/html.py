"""The HTML report: one self-contained page per ``audit``/``validate``/``check`` run.

Why one page and nothing beside it: a report is archived as a CI artifact, mailed, opened years
later from a laptop without network. So everything is inline — the style, the script, the plots
(as ``data:`` images) — and the page's Content-Security-Policy forbids loading anything else
(``default-src 'none'``): a reference to the network would be an error in the browser's
console, not a silent dependency. No font is loaded; the system's sans-serif is used.

What is in it, per dataset: a summary (inputs with their sha256, records, options, the family's
headline figures, findings per severity), the rules run with their counts and a link to each
rule's documentation (its docstring, the same text ``curate rules`` prints), the findings in a
table filtered in the page (by rule, severity, split, and free text; plain JavaScript, paged,
so tens of thousands of rows stay responsive), and the plots: findings per rule for every
family, then the family's own (:meth:`curate.families.base.Family.plots`).

Escaping: record ids, fields, messages and file names come from the data. Text in the page is
HTML-escaped; the findings travel as JSON in a ``<script type="application/json">`` element
with ``<``, ``>`` and ``&`` written as ``\\u003c``-style escapes (so no value can close the
element), and the script puts them into cells with ``textContent``, never as markup.

Size: at most :data:`MAX_FINDINGS` findings per dataset are embedded (spread over the rules,
so every rule keeps examples); the page says how many were left out, and ``--format json``
lists every one. Same input, same bytes: nothing in the page depends on the time or machine.

``curate check --format html`` renders through :func:`render_check` too (without plots of the
family's own: a check keeps only the reports).
"""

from __future__ import annotations

import base64
import html
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson
import polars as pl

from curate.core.errors import counted
from curate.core.version import __version__

if TYPE_CHECKING:
    from curate.core.dataset import LoadedDataset
    from curate.core.findings import Report
    from curate.core.plots import Plot
    from curate.families.base import Family
    from curate.reports.verdict import CheckResult, DatasetOutcome

#: Findings embedded per dataset at most (each one is a row of JSON in the page).
MAX_FINDINGS = 50_000
#: Rows of the findings table shown per page.
PAGE_SIZE = 100
#: The ``generator`` meta tag that marks a page curate wrote (``guard_file`` replaces only those).
GENERATOR = b'<meta name="generator" content="curate'
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"
_COLUMNS = ("rule", "severity", "split", "where", "record", "field", "message", "result")

_CSS = """
:root{--err:#b3261e;--warn:#9a5b00;--info:#1f5fa8;--ok:#1b5e20;--line:#d0d7de;--bg2:#f6f8fa}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
margin:0 auto;padding:1.5em 2em;max-width:1400px;color:#1f2328;line-height:1.4}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.3em;border-bottom:1px solid var(--line);
padding-bottom:.2em;margin-top:1.6em}h3{font-size:1.1em;margin:1.4em 0 .5em}
small{color:#57606a;font-weight:normal}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
td,th{border:1px solid var(--line);padding:.25em .55em;text-align:left;vertical-align:top}
th{background:var(--bg2)}td.n{text-align:right;font-variant-numeric:tabular-nums}
td.msg{max-width:60em;overflow-wrap:anywhere}td.rec{overflow-wrap:anywhere;max-width:20em}
code{background:var(--bg2);padding:0 .25em;border-radius:3px;overflow-wrap:anywhere}
.fail{color:var(--err);font-weight:bold}.pass{color:var(--ok);font-weight:bold}
.sev-error{color:var(--err)}.sev-warning{color:var(--warn)}.sev-info{color:var(--info)}
.badges span{display:inline-block;margin-right:1em}
dl.summary{display:grid;grid-template-columns:max-content 1fr;gap:.2em 1em;margin:.5em 0}
dl.summary dt{font-weight:600}dl.summary dd{margin:0}
.filters{display:flex;flex-wrap:wrap;gap:.6em;align-items:center;margin:.5em 0}
.filters input[type=search]{min-width:18em;padding:.2em .4em}
.pager{display:flex;gap:.6em;align-items:center;margin:.4em 0}
.note{color:#57606a;font-size:.9em}
figure{margin:1em 0;padding:.5em;border:1px solid var(--line);border-radius:6px;
display:inline-block;max-width:100%;vertical-align:top}
figure img{max-width:100%;height:auto;display:block}
figcaption{font-size:.9em;color:#57606a;max-width:48em}figcaption b{color:#1f2328}
details{margin:.3em 0}details pre{white-space:pre-wrap;background:var(--bg2);padding:.6em;
border-radius:6px;font-size:.85em}
"""

_JS = """
(function () {
  "use strict";
  var PAGE = %(page)d;
  function opt(sel, value, label) {
    var o = document.createElement("option");
    o.value = value; o.textContent = label; sel.appendChild(o);
  }
  function init(sec) {
    var doc = JSON.parse(document.getElementById(sec.getAttribute("data-source")).textContent);
    var cols = doc.columns, rows = doc.rows, shown = doc.shown;
    var at = {}; cols.forEach(function (c, i) { at[c] = i; });
    var fRule = sec.querySelector(".f-rule"), fSev = sec.querySelector(".f-severity"),
        fSplit = sec.querySelector(".f-split"), fText = sec.querySelector(".f-text");
    var body = sec.querySelector("tbody"), info = sec.querySelector(".f-info");
    var prev = sec.querySelector(".f-prev"), next = sec.querySelector(".f-next");
    var hay = null, matched = [], page = 0, timer = null;
    function distinct(c) {
      var seen = {}, out = [];
      rows.forEach(function (r) {
        var v = r[at[c]];
        if (v && !seen[v]) { seen[v] = 1; out.push(v); }
      });
      return out.sort();
    }
    distinct("rule").forEach(function (v) { opt(fRule, v, v); });
    distinct("severity").forEach(function (v) { opt(fSev, v, v); });
    var splits = distinct("split");
    if (splits.length) { splits.forEach(function (v) { opt(fSplit, v, v); }); }
    else { fSplit.parentNode.style.display = "none"; }
    function apply() {
      var rule = fRule.value, sev = fSev.value, split = fSplit.value;
      var text = fText.value.trim().toLowerCase();
      if (text && hay === null) {
        hay = rows.map(function (r) { return r.join("\\u0001").toLowerCase(); });
      }
      matched = [];
      for (var i = 0; i < rows.length; i++) {
        var r = rows[i];
        if (rule && r[at.rule] !== rule) continue;
        if (sev && r[at.severity] !== sev) continue;
        if (split && r[at.split] !== split) continue;
        if (text && hay[i].indexOf(text) < 0) continue;
        matched.push(i);
      }
      page = 0; draw();
    }
    function draw() {
      var pages = Math.max(1, Math.ceil(matched.length / PAGE));
      if (page >= pages) page = pages - 1;
      var start = page * PAGE, end = Math.min(matched.length, start + PAGE);
      var frag = document.createDocumentFragment();
      for (var k = start; k < end; k++) {
        var r = rows[matched[k]], tr = document.createElement("tr");
        tr.className = "finding";
        cols.forEach(function (c, j) {
          if (!sec.querySelector("th.c-" + c)) return;
          var td = document.createElement("td");
          td.className = "c-" + c + (c === "severity" ? " sev-" + r[j] : "") +
            (c === "message" ? " msg" : "") + (c === "record" ? " rec" : "");
          td.textContent = r[j] === null ? "" : String(r[j]);
          tr.appendChild(td);
        });
        frag.appendChild(tr);
      }
      body.replaceChildren(frag);
      info.textContent = (matched.length ? (start + 1) + "\\u2013" + end + " of " : "") +
        matched.length + " matching finding" + (matched.length === 1 ? "" : "s") +
        (matched.length < shown ? " (of " + shown + ")" : "") +
        (pages > 1 ? ", page " + (page + 1) + " of " + pages : "");
      prev.disabled = page === 0; next.disabled = page >= pages - 1;
    }
    function later() { clearTimeout(timer); timer = setTimeout(apply, 120); }
    fRule.addEventListener("change", apply); fSev.addEventListener("change", apply);
    fSplit.addEventListener("change", apply); fText.addEventListener("input", later);
    fText.addEventListener("keydown", function (e) {
      if (e.key === "Enter") { clearTimeout(timer); apply(); }
    });
    prev.addEventListener("click", function () { page--; draw(); });
    next.addEventListener("click", function () { page++; draw(); });
    sec.setAttribute("data-ready", "1");
    apply();
  }
  function openDoc() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (el && el.tagName === "DETAILS") el.open = true;
  }
  document.querySelectorAll("section.findings").forEach(init);
  window.addEventListener("hashchange", openDoc); openDoc();
})();
"""


def _n(n: int, word: str) -> str:
    """``1 record``, ``1,204 records``."""
    return counted(n, word, grouped=True)


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def script_json(obj: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``<``, ``>`` or ``&`` (so no value
    can end the element or open a comment), nor the two line separators old parsers refuse."""
    text = orjson.dumps(obj).decode()
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


# --------------------------------------------------------------------------- data of a dataset


def embedded_findings(d: DatasetOutcome, limit: int = MAX_FINDINGS) -> pl.DataFrame:
    """The findings the page embeds: all, or when there are more than ``limit`` the first ``k``
    of each rule, ``k`` as large as fits (so a rule with few findings keeps them all and the
    one with a million does not crowd the others out), in report order."""
    f = d.findings
    if f.height <= limit:
        return f
    counts = sorted(f.group_by("rule").len()["len"].to_list())
    k, used = 0, 0
    for i, c in enumerate(counts):  # largest k with sum(min(c, k)) <= limit
        rest = len(counts) - i
        if used + (c - k) * rest > limit:
            k += (limit - used) // rest
            break
        used += (c - k) * rest
        k = c
    return (
        f.with_row_index("__i")
        .filter(pl.int_range(pl.len()).over("rule") < k)
        .sort("__i")
        .drop("__i")
    )


def _finding_rows(
    d: DatasetOutcome, shown: pl.DataFrame, splits: pl.DataFrame | None
) -> list[list[Any]]:
    from curate.reports.locations import line_of

    if splits is not None and shown.height:
        s = splits.select(pl.col("row").cast(pl.Int64), pl.col("split").cast(pl.String))
        s = s.unique("row", keep="first")
        shown = shown.join(s, on="row", how="left", maintain_order="left")
    else:
        shown = shown.with_columns(pl.lit(None, pl.String).alias("split"))
    several = len(d.report.inputs) > 1
    compared = any(r.compared for r in d.rules)
    out = []
    for row in shown.iter_rows(named=True):
        where = ""
        if row["input"] is not None and (several or compared):
            line = line_of(d, row)
            where = row["input"] + (f":{line}" if line else "")
        if compared:
            result = "FAIL" if row["fails"] else row["status"]
        else:
            result = "FAIL" if row["fails"] else ""
        out.append(
            [
                row["rule"],
                row["severity"],
                row["split"] or "",
                where,
                "" if row["record"] is None else row["record"],
                row["field"] or "",
                row["message"] or "",
                result,
            ]
        )
    return out


def _rule_docs(family: str) -> dict[str, Any]:
    from curate.families import get_family
    from curate.reports.verdict import PIN_RULE

    try:
        return {r.code: r for r in (*get_family(family).rules, PIN_RULE)}
    except Exception:  # a report of a family that is not installed here still renders
        return {}


# --------------------------------------------------------------------------- page parts


def _summary(d: DatasetOutcome) -> list[str]:
    from curate.reports.render import headlines, options_line

    report = d.report
    s = report.summary()
    sev = s["by_severity"]
    parts = ['<dl class="summary">']
    parts.append(f"<dt>family</dt><dd>{_e(d.family)}</dd>")
    parts.append(f"<dt>records</dt><dd>{report.records:,}</dd>")
    for i in report.inputs:
        digest = f" <small>sha256 <code>{_e(i.sha256)}</code></small>" if i.sha256 else ""
        parts.append(
            f"<dt>input</dt><dd><code>{_e(i.path)}</code> {_n(i.records, 'record')}{digest}</dd>"
        )
    if report.options:
        parts.append(f"<dt>options</dt><dd>{_e(options_line(report))}</dd>")
    for h in headlines(report):
        parts.append(f"<dt>{_e(h.label)}</dt><dd>{_e(h.render())}</dd>")
    parts.append(f"<dt>fail on</dt><dd>{_e(d.fail_on)}</dd>")
    parts.append(
        '<dt>findings</dt><dd class="badges">'
        f"<span>{s['findings']:,} in {_n(s['records_with_findings'], 'record')}</span>"
        f'<span class="sev-error">{_n(sev["error"], "error")}</span>'
        f'<span class="sev-warning">{_n(sev["warning"], "warning")}</span>'
        f'<span class="sev-info">{sev["info"]:,} info</span></dd>'
    )
    parts.append("</dl>")
    return parts


def _rules_table(d: DatasetOutcome, k: int, docs: Mapping[str, Any]) -> list[str]:
    compared = any(r.compared for r in d.rules)
    records = {r["rule"]: r["records"] for r in d.report.counts_by_rule().iter_rows(named=True)}
    head = ["rule", "name", "category", "severity", "findings", "records"]
    if compared:
        head += ["new", "baselined", "ignored"]
    head.append("result")
    parts = [
        '<table class="rules"><thead><tr>'
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
    ]
    for r in d.rules:
        rule = docs.get(r.rule)
        code = f'<a class="doc" href="#d{k}-{_e(r.rule)}">{_e(r.rule)}</a>' if rule else _e(r.rule)
        if r.failed:
            result = f'<span class="fail" title="{_e(r.why)}">FAIL</span>'
        elif r.findings:
            result = "ok (below fail-on)" if r.new else "ok"
        else:
            result = '<span class="pass">ok</span>'
        cells = [
            (code, ""),
            (_e(r.name), ""),
            (_e(rule.category if rule else ""), ""),
            (f'<span class="sev-{_e(r.severity)}">{_e(r.severity)}</span>', ""),
            (f"{r.findings:,}", "n"),
            (f"{records.get(r.rule, 0):,}", "n"),
        ]
        if compared:
            cells += [(f"{x:,}", "n") for x in (r.new, r.baselined, r.ignored)]
        cells.append((result, ""))
        parts.append(
            "<tr>"
            + "".join(f'<td class="{c}">{v}</td>' if c else f"<td>{v}</td>" for v, c in cells)
            + "</tr>"
        )
    parts.append("</tbody></table>")
    return parts


def _findings_section(d: DatasetOutcome, k: int, splits: pl.DataFrame | None) -> list[str]:
    shown = embedded_findings(d)
    rows = _finding_rows(d, shown, splits)
    total = d.findings.height
    if not total:
        return ["<p>No findings.</p>"]
    has = {
        "split": any(r[2] for r in rows),
        "where": any(r[3] for r in rows),
        "field": any(r[5] for r in rows),
        "result": any(r[7] for r in rows),
    }
    cols = [c for c in _COLUMNS if has.get(c, True)]
    doc = {"columns": list(_COLUMNS), "rows": rows, "shown": len(rows), "total": total}
    parts = [
        f'<section class="findings" data-source="findings-{k}">',
        '<div class="filters">',
        '<label>rule <select class="f-rule"><option value="">all</option></select></label>',
        '<label>severity <select class="f-severity"><option value="">all</option></select></label>',
        '<label>split <select class="f-split"><option value="">all</option></select></label>',
        '<label>text <input type="search" class="f-text" placeholder="record, field, '
        'message, rule…"></label>',
        "</div>",
    ]
    if len(rows) < total:
        parts.append(
            f'<p class="note">{len(rows):,} of {total:,} findings are in this page (the first '
            "of each rule, every rule represented); <code>--format json</code> lists all.</p>"
        )
    parts += [
        '<div class="pager"><button type="button" class="f-prev">◀ previous</button>'
        '<span class="f-info"></span><button type="button" class="f-next">next ▶</button></div>',
        '<table class="findings-table"><thead><tr>'
        + "".join(f'<th class="c-{c}">{c}</th>' for c in cols)
        + "</tr></thead><tbody></tbody></table>",
        f'<script type="application/json" id="findings-{k}">{script_json(doc)}</script>',
        "</section>",
    ]
    return parts


def _plots_section(plots: Sequence[Plot | str]) -> list[str]:
    """Each plot as a figure with a ``data:`` image; a string is a note (a plot that failed)."""
    parts = []
    for p in plots:
        if isinstance(p, str):
            parts.append(f'<p class="note">{_e(p)}</p>')
            continue
        mime, data = p.image()
        src = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
        parts.append(
            f'<figure class="plot"><img alt="{_e(p.title)}" src="{src}">'
            f"<figcaption><b>{_e(p.title)}</b>. {_e(p.caption)}</figcaption></figure>"
        )
    return parts


def _docs_section(d: DatasetOutcome, k: int, docs: Mapping[str, Any]) -> list[str]:
    parts = []
    for r in d.rules:
        rule = docs.get(r.rule)
        if rule is None:
            continue
        fix = f" · {_e(rule.fix_label)}" if rule.fixable else ""
        parts.append(
            f'<details id="d{k}-{_e(r.rule)}"><summary><b>{_e(r.rule)}</b> {_e(rule.name)} '
            f"<small>({_e(rule.category)}, {_e(rule.severity.value)}{fix})</small>"
            f"</summary><pre>{_e(rule.doc or rule.name)}</pre></details>"
        )
    return parts


# --------------------------------------------------------------------------- the page


def _head(title: str) -> list[str]:
    """The page's head, the same on every curate page: generator tag (what lets a later run
    replace it), content policy (nothing loaded from outside), style."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta name="generator" content="curate {_e(__version__)}">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
    ]


def render_check(
    result: CheckResult,
    *,
    plots: Mapping[str, Sequence[Plot | str]] | None = None,
    splits: Mapping[str, pl.DataFrame | None] | None = None,
) -> str:
    """The page for a check result (an audit is a one-dataset check, :func:`render_audit`).

    ``plots`` (dataset name → plots) come after each dataset's findings-per-rule plot;
    ``splits`` (dataset name → frame of ``row``, ``split``) fill the findings' split column.
    """
    from curate.core.plots import findings_per_rule
    from curate.reports.verdict import footer_lines

    plots = plots or {}
    splits = splits or {}
    verdict = "failed" if result.failed else "passed"
    names = ", ".join(d.name for d in result.datasets) or "no dataset"
    families = sorted({d.family for d in result.datasets})
    title = f"curate {'/'.join(families)}: {names}: {verdict}"
    parts = [
        *_head(title),
        f'<h1>curate {_e(__version__)}: <span class="{"fail" if result.failed else "pass"}">'
        f"{verdict}</span> <small>{_e(names)}</small></h1>",
    ]
    for k, d in enumerate(result.datasets):
        parts.append(f'<section class="dataset" id="d{k}">')
        if d.error is not None:
            parts.append(
                f"<h2>{_e(d.name)} <small>({_e(d.family)})</small></h2>"
                f'<p class="fail">unusable input: {_e(d.error)}</p></section>'
            )
            continue
        docs = _rule_docs(d.family)
        parts.append(
            f"<h2>{_e(d.name)} <small>({_e(d.family)}, {d.records:,} records)</small></h2>"
        )
        parts += _summary(d)
        parts.append("<h3>Rules</h3>")
        parts += _rules_table(d, k, docs)
        parts.append("<h3>Findings</h3>")
        parts += _findings_section(d, k, splits.get(d.name))
        shown: list[Plot | str] = []
        first = findings_per_rule(d.report.counts_by_rule().to_dicts())
        if first is not None:
            shown.append(first)
        shown += list(plots.get(d.name, ()))
        if shown:
            parts.append('<h3>Plots</h3><div class="plots">')
            parts += _plots_section(shown)
            parts.append("</div>")
        if docs:
            parts.append("<h3>Rule documentation</h3>")
            parts += _docs_section(d, k, docs)
        parts.append("</section>")
    footer = footer_lines(result)
    if footer:
        parts.append("<footer><p>" + "<br>".join(_e(x) for x in footer) + "</p></footer>")
    parts.append(f"<script>{_JS % {'page': PAGE_SIZE}}</script></body></html>")
    return "\n".join(parts) + "\n"


def family_plots(
    fam: Family, data: LoadedDataset, report: Report, ctx: Any = None
) -> list[Plot | str]:
    """The family's plots (:meth:`Family.plots`) on a context over ``data``: the audit's own
    ``ctx`` when the caller kept it, else a new one (its shared tables are built again only if
    a plot asks for them; the input is never read again). A plot that fails becomes a note in
    the page, not a lost report."""
    from curate.core.rules import AuditContext

    if ctx is None:
        ctx = AuditContext(data, data.options or fam.options(), fam.rules.tables)
    try:
        return list(fam.plots(data, report, ctx))
    except Exception as e:  # the findings matter more than a picture of them
        return [f"the {fam.name} plots could not be drawn: {type(e).__name__}: {e}"]


def render_audit(
    report: Report,
    *,
    data: LoadedDataset | None = None,
    fail_on: str = "error",
    ctx: Any = None,
    extra_plots: Sequence[Plot] = (),
) -> str:
    """The page of an ``audit``/``validate`` report; with ``data`` (what the audit read) the
    family's plots and the findings' splits are in it too. ``extra_plots`` are appended (e.g.
    an overlap command's UpSet plot)."""
    from curate.families import get_family
    from curate.reports.verdict import single

    result = single(report, fail_on)
    name = result.datasets[0].name
    plots: list[Plot | str] = []
    splits = None
    if data is not None:
        fam = get_family(report.family)
        plots = family_plots(fam, data, report, ctx)
        splits = data.record_splits()
    plots += list(extra_plots)
    return render_check(result, plots={name: plots}, splits={name: splits})


#: Rows of the pairwise, intersection and near-duplicate tables an overlap page lists at most.
OVERLAP_ROWS = 500


def render_overlap(
    result: Any, title: str, near: pl.DataFrame | None = None, plots: Sequence[Plot] = ()
) -> str:
    """The page of ``curate overlap --format html``: the collections, every pair sharing keys
    (Jaccard, containment both ways), the UpSet intersections, names merged by normalisation,
    near-duplicate texts, and ``plots`` (the UpSet plot and the Jaccard heat map). Same head,
    style and content policy as the audit pages: one file, nothing loaded from outside."""

    def table(head: Sequence[str], rows: Sequence[Sequence[Any]], more: int = 0) -> list[str]:
        out = ["<table><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead>"]
        out.append("<tbody>")
        for r in rows:
            out.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in r) + "</tr>")
        out.append("</tbody></table>")
        if more > 0:
            out.append(f'<p class="note">{more:,} more not listed (--format json lists all).</p>')
        return out

    def pct(x: float) -> str:
        return f"{100 * x:.1f}%"

    parts = [
        *_head(title),
        f"<h1>curate {_e(__version__)}: <small>{_e(title)}</small></h1>",
        "<h2>Collections</h2>",
    ]
    parts += table(
        ["collection", "keys", "rows"],
        [
            (r["collection"], f"{r['size']:,}", f"{r['rows']:,}")
            for r in result.sizes.iter_rows(named=True)
        ],
    )
    shared = result.pairs.filter(pl.col("intersection") > 0).sort(
        ["jaccard", "a", "b"], descending=[True, False, False]
    )
    parts.append(f"<h2>Pairs sharing keys: {shared.height:,} of {result.pairs.height:,}</h2>")
    parts += table(
        ["a", "b", "shared", "Jaccard", "of a in b", "of b in a"],
        [
            (
                r["a"],
                r["b"],
                f"{r['intersection']:,}",
                f"{r['jaccard']:.4f}",
                pct(r["a_in_b"]),
                pct(r["b_in_a"]),
            )
            for r in shared.head(OVERLAP_ROWS).iter_rows(named=True)
        ],
        shared.height - OVERLAP_ROWS,
    )
    inter = result.intersections
    parts.append("<h2>Intersections (keys held by exactly these collections)</h2>")
    parts += table(
        ["keys", "collections", "examples"],
        [
            (
                f"{r['count']:,}",
                " & ".join(r["members"]) + (" only" if r["degree"] == 1 else ""),
                ", ".join(repr(x) for x in r["examples"]),
            )
            for r in inter.head(OVERLAP_ROWS).iter_rows(named=True)
        ],
        inter.height - OVERLAP_ROWS,
    )
    if result.merged.height:
        parts.append("<h2>Merged by normalisation / aliases</h2>")
        parts += table(
            ["key", "raw spellings", "collections"],
            [
                (r["key"], ", ".join(repr(v) for v in r["variants"]), ", ".join(r["collections"]))
                for r in result.merged.head(OVERLAP_ROWS).iter_rows(named=True)
            ],
            result.merged.height - OVERLAP_ROWS,
        )
    if near is not None:
        parts.append(f"<h2>Near-duplicate texts: {near.height:,} pairs</h2>")
        parts += table(
            ["exact", "estimated", "in", "text", "in", "text"],
            [
                (
                    f"{r['exact']:.3f}",
                    f"{r['estimated']:.3f}",
                    r["in_a"],
                    r["text_a"],
                    r["in_b"],
                    r["text_b"],
                )
                for r in near.head(OVERLAP_ROWS).iter_rows(named=True)
            ],
            near.height - OVERLAP_ROWS,
        )
    if plots:
        parts.append('<h2>Plots</h2><div class="plots">')
        parts += _plots_section(plots)
        parts.append("</div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
