"""Reports for CI systems: JUnit XML, GitHub Actions annotations, SARIF 2.1.0, a Markdown job
summary, HTML, and the text/JSON views of a ``curate check``.

Why these: a CI user reads results where the CI shows them — a test tab (JUnit: one testcase per
dataset × rule, so a failing rule is a failing test with its findings), annotations on the
changed file (GitHub's ``::error file=...,line=...::``), a code-scanning alert (SARIF) — not in a
log. Every renderer takes a :class:`~curate.reports.verdict.CheckResult`; an ``audit``/``validate``
report
is turned into one by :func:`curate.reports.verdict.single`, so the three commands render alike.

Where a finding is: its ``input`` file and, when the file format knows it, the physical line the
record starts on (a CSV row's line, a JSON Lines line, the line of a JSON array's element,
found by one scan of the file: :func:`record_lines`). Parquet and HDF5 records have no line: the
annotation is on the file, and SARIF carries the record index in the result's properties.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape as xml_escape
from xml.sax.saxutils import quoteattr

import orjson
import polars as pl

from curate.core.findings import json_bytes
from curate.core.outputs import GENERATOR_MARK
from curate.core.version import __version__
from curate.reports.locations import line_of, position_of
from curate.reports.verdict import (
    PIN_RULE,
    CheckResult,
    DatasetOutcome,
    footer_lines,
    shown_path,
)

#: The SARIF rule of a dataset that could not be audited (its input unusable).
UNUSABLE_RULE = "unusable-input"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: Findings of one rule listed in a report (text, Markdown, HTML, annotations, JUnit body):
#: every failing finding up to this many; ``--format json``/``sarif`` list all.
LISTED_PER_RULE = 50

_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_GH = {"error": "error", "warning": "warning", "info": "notice"}


def _located(d: DatasetOutcome, row: dict[str, Any]) -> str:
    """``FILE:LINE`` of a finding's record (``FILE`` when the line is not known)."""
    line = line_of(d, row)
    return (row["input"] or "") + (f":{line}" if line else "")


def _where(row: dict[str, Any]) -> str:
    bits = [f"record {row['record']}"] if row.get("record") is not None else []
    if row.get("field"):
        bits.append(f"field {row['field']}")
    return ", ".join(bits)


def _listed(d: DatasetOutcome, rule: str, which: str = "fails") -> tuple[list[dict[str, Any]], int]:
    """The findings of ``rule`` a report lists (failing ones, or new ones) and how many more."""
    f = d.findings
    if not f.height:
        return [], 0
    if which == "fails":
        sel = f.filter((pl.col("rule") == rule) & pl.col("fails"))
    elif which == "new":
        sel = f.filter((pl.col("rule") == rule) & (pl.col("status") == "new"))
    else:
        sel = f.filter(pl.col("rule") == rule)
    return sel.head(LISTED_PER_RULE).to_dicts(), max(sel.height - LISTED_PER_RULE, 0)


# --------------------------------------------------------------------------- text


def render_text(result: CheckResult) -> str:
    """A table per dataset × rule (findings, new, accepted, verdict), then each failing
    finding: what a person reads in a CI log."""
    out: list[str] = []
    for d in result.datasets:
        if d.error is not None:
            out += [f"{d.name} ({d.family}): UNUSABLE: {d.error}", ""]
            continue
        verdict = "FAILED" if d.failed else "passed"
        inputs = ", ".join(i.path for i in d.report.inputs)
        out.append(f"{d.name} ({d.family}; {d.records} records; {inputs}): {verdict}")
        head = ("rule", "name", "severity", "findings", "new", "baselined", "ignored", "result")
        rows = [head]
        for r in d.rules:
            result_text = "FAIL" if r.failed else ("ok" if r.new == 0 else "ok (below fail-on)")
            if r.threshold is not None and not r.failed and r.new:
                result_text = f"ok ({r.share()} <= threshold {r.threshold})"
            rows.append(
                (
                    r.rule,
                    r.name,
                    r.severity,
                    str(r.findings),
                    str(r.new),
                    str(r.baselined),
                    str(r.ignored),
                    result_text,
                )
            )
        shown = [row for row in rows[1:] if row[3] != "0"]
        if shown:
            widths = [max(len(row[k]) for row in [head, *shown]) for k in range(len(head))]
            for row in [head, *shown]:
                out.append(
                    "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
                )
        else:
            out.append(f"  no findings ({len(d.rules)} rules run)")
        for r in d.rules:
            if not r.failed:
                continue
            listed, more = _listed(d, r.rule)
            out.append(f"  {r.rule} {r.name} failed: {r.why}")
            for finding in listed:
                parts = (_located(d, finding), _where(finding), finding["message"])
                out.append("    " + ": ".join(p for p in parts if p))
            if more:
                out.append(f"    ... and {more} more (--format json lists every finding)")
        out.append("")
    out.extend(footer_lines(result))
    return "\n".join(out).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- JSON


def to_json_obj(result: CheckResult) -> dict[str, Any]:
    """Every finding with its fingerprint and status, every rule's verdict, per dataset."""
    datasets = []
    for d in result.datasets:
        findings = []
        for row in d.findings.iter_rows(named=True):
            findings.append(
                {
                    "rule": row["rule"],
                    "severity": row["severity"],
                    "input": row["input"],
                    "row": row["input_row"],
                    "line": line_of(d, row),
                    "record": row["record"],
                    "field": row["field"],
                    "message": row["message"],
                    "fingerprint": row["fingerprint"],
                    "status": row["status"],
                    "fails": row["fails"],
                    **({"reason": row["reason"]} if row["reason"] else {}),
                }
            )
        datasets.append(
            {
                "name": d.name,
                "family": d.family,
                "inputs": [i.to_json() for i in d.report.inputs],
                "options": d.report.options,
                "fail_on": d.fail_on,
                "failed": d.failed,
                **({"error": d.error} if d.error is not None else {}),
                "rules": [
                    {
                        "rule": r.rule,
                        "name": r.name,
                        "severity": r.severity,
                        "findings": r.findings,
                        "new": r.new,
                        "baselined": r.baselined,
                        "ignored": r.ignored,
                        "threshold": str(r.threshold) if r.threshold is not None else None,
                        "failed": r.failed,
                    }
                    for r in d.rules
                ],
                "findings": findings,
            }
        )
    return {
        "tool": "curate",
        "version": __version__,
        "config": str(result.config) if result.config else None,
        "baseline": str(result.baseline) if result.baseline else None,
        "failed": result.failed,
        "datasets": datasets,
        "stale_baseline_entries": result.stale,
        "unused_ignores": [{"index": i, **ig} for i, ig in result.unused_ignores],
    }


def render_json(result: CheckResult) -> str:
    return json_bytes(to_json_obj(result), indent=True).decode() + "\n"


# --------------------------------------------------------------------------- Markdown


def _md(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(result: CheckResult) -> str:
    """The job summary: a verdict, a table per dataset × rule, the failing findings."""
    verdict = "failed" if result.failed else "passed"
    out = [f"## curate {result.command} {verdict}", ""]
    out += [
        "| dataset | rule | severity | findings | new | baselined | ignored | result |",
        "|---|---|---|---:|---:|---:|---:|---|",
    ]
    for d in result.datasets:
        shown = [r for r in d.rules if r.findings]
        if d.error is not None:
            out.append(f"| {_md(d.name)} | — | error | | | | | ❌ **unusable**: {_md(d.error)} |")
        elif not shown:
            out.append(f"| {_md(d.name)} | — | | 0 | 0 | 0 | 0 | ✅ pass |")
        for r in shown:
            res = "❌ **fail**" if r.failed else "✅ pass"
            out.append(
                f"| {_md(d.name)} | {r.rule} {_md(r.name)} | {r.severity} | {r.findings} | "
                f"{r.new} | {r.baselined} | {r.ignored} | {res} |"
            )
    for d in result.datasets:
        for r in d.rules:
            if not r.failed:
                continue
            listed, more = _listed(d, r.rule)
            out += ["", f"### {_md(d.name)}: {r.rule} {_md(r.name)} ({_md(r.why)})", ""]
            for row in listed:
                line = line_of(d, row)
                loc = f"`{row['input']}{':' + str(line) if line else ''}`"
                out.append(f"- {loc} {_md(_where(row))}: {_md(row['message'])}")
            if more:
                out.append(f"- … and {more} more")
    out += [""] + [f"{_md(x)}" for x in footer_lines(result)]
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- GitHub Actions


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


#: Annotations of one level GitHub shows per step (error, warning, notice: 10 each; the rest
#: of a step's are dropped without a word, and a job shows 50 in all).
ANNOTATIONS_PER_LEVEL = 10


def _annotations(result: CheckResult) -> list[tuple[str, str, str]]:
    """Every annotation a check would make, in report order: ``(level, properties, text)``;
    the unusable datasets first, then each rule's new findings (the first
    :data:`LISTED_PER_RULE` of a rule and a line for the rest)."""
    out: list[tuple[str, str, str]] = []
    for d in result.datasets:
        if d.error is not None:
            props = [f"file={_gh_prop(d.error_path)}"] if d.error_path else []
            props.append(f"title={_gh_prop(f'unusable input ({d.name})')}")
            out.append(("error", ",".join(props), d.error))
        for r in d.rules:
            if not r.new:
                continue
            listed, more = _listed(d, r.rule, "new")
            for row in listed:
                level = "error" if row["fails"] else _GH.get(row["severity"], "warning")
                props = []
                if row["input"]:
                    props.append(f"file={_gh_prop(row['input'])}")
                    at = position_of(d, row)
                    if at is not None:
                        props += [f"line={at[0]}", f"col={at[1]}"]
                elif d.report.inputs:  # a split's, a dataset's, a pinned version's: its file
                    props.append(f"file={_gh_prop(_input_of(d, row))}")
                props.append(f"title={_gh_prop(f'{r.rule} {r.name} ({d.name})')}")
                msg = f"{_where(row)}: {row['message']}" if _where(row) else row["message"]
                out.append((level, ",".join(props), msg))
            if more:
                out.append(
                    (
                        "error" if r.failed else "notice",
                        f"title={_gh_prop(f'{r.rule} ({d.name})')}",
                        f"{more} more new {r.rule} findings (--format json lists every finding)",
                    )
                )
    return out


def annotation_cap(result: CheckResult) -> str | None:
    """What the annotations leave out, said once (in the log and in the job summary), or
    None when GitHub shows them all."""
    lines: dict[str, int] = {}
    for level, _, _ in _annotations(result):
        lines[level] = lines.get(level, 0) + 1
    if not any(n > ANNOTATIONS_PER_LEVEL for n in lines.values()):
        return None
    # the findings themselves, not the lines: a rule's findings past the first
    # LISTED_PER_RULE are one "N more" line
    found: dict[str, int] = {}
    for d in result.datasets:
        if d.error is not None:
            found["error"] = found.get("error", 0) + 1
        new = d.findings.filter(pl.col("status") == "new") if d.findings.height else d.findings
        for fails, severity in new.select("fails", "severity").iter_rows():
            level = "error" if fails else _GH.get(severity, "warning")
            found[level] = found.get(level, 0) + 1
    said = " and ".join(
        f"{n:,} {k}{'s' if n != 1 else ''}"
        for k, n in sorted(found.items(), key=lambda kv: _LEVEL_ORDER.index(kv[0]))
    )
    return (
        f"GitHub shows {ANNOTATIONS_PER_LEVEL} annotations of each level per step; this step "
        f"found {said}: the first {ANNOTATIONS_PER_LEVEL} of each level are annotations, the "
        f"rest lines of this step's log, up to {LISTED_PER_RULE} findings a rule (the others "
        "of a rule are counted in one line; --format json lists every finding), and the job "
        "summary counts them all."
    )


_LEVEL_ORDER = ("error", "warning", "notice")


def render_github(result: CheckResult) -> str:
    """Workflow commands: ``::error`` for each failing finding, ``::warning``/``::notice`` for
    new findings that do not fail, on the record's file, line and column; then the text
    summary.

    Why a cap of our own: GitHub shows :data:`ANNOTATIONS_PER_LEVEL` annotations of each
    level per step and drops the rest silently (a check printing 40 errors showed 10, and
    nothing said so). So the first ten of each level are annotations, the others are plain
    log lines (``FILE:LINE:COL: level: ...``, still in the log), and the cap is stated."""
    out: list[str] = []
    shown: dict[str, int] = {}
    for level, props, text in _annotations(result):
        shown[level] = shown.get(level, 0) + 1
        if shown[level] <= ANNOTATIONS_PER_LEVEL:
            out.append(f"::{level} {props}::{_gh_data(text)}")
        else:
            where, title = _plain_where(props)
            out.append(f"{where}{level}: {title}{text}")
    cap = annotation_cap(result)
    if cap is not None:
        out.append(f"curate: {cap}")
    return "\n".join(out) + ("\n" if out else "") + render_text(result)


def _plain_where(props: str) -> tuple[str, str]:
    """``FILE:LINE:COL: `` and ``TITLE: `` from an annotation's properties, as a log line
    (the compilers' form) says them."""
    from urllib.parse import unquote

    got = dict(p.split("=", 1) for p in props.split(",") if "=" in p)
    where = ":".join(unquote(got[k]) for k in ("file", "line", "col") if k in got)
    title = unquote(got.get("title", ""))
    return (f"{where}: " if where else ""), (f"{title}: " if title else "")


def append_step_summary(result: CheckResult, path: str | None = None) -> bool:
    """Append the Markdown summary to ``$GITHUB_STEP_SUMMARY`` (when set); True if written.

    Appended, not replaced: every step of a job shares the file, and GitHub shows it whole.
    """
    target = path or os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return False
    cap = annotation_cap(result)
    with open(target, "a", encoding="utf-8") as fh:
        fh.write(render_markdown(result) + (f"\n> {cap}\n" if cap else "") + "\n")
    return True


# --------------------------------------------------------------------------- JUnit XML


def _timestamp() -> str:
    """Now (UTC, no zone: the JUnit schema's pattern), or ``SOURCE_DATE_EPOCH`` when set so
    that a build can be reproduced byte for byte."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.fromtimestamp(int(epoch), UTC) if epoch and epoch.isdigit() else None
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S")


def _seconds(seconds: float | None) -> float:
    """A rule's time as JUnit's ``time`` gives it: none (0) under ``SOURCE_DATE_EPOCH``, whose
    build is to be the same byte for byte (as the timestamp is then fixed)."""
    return 0.0 if os.environ.get("SOURCE_DATE_EPOCH") else (seconds or 0.0)


def render_junit(result: CheckResult) -> str:
    """JUnit XML (the Ant schema CI servers read): a ``testsuite`` per dataset, a ``testcase``
    per rule run; a failing rule has a ``failure`` listing its failing findings, one per line.
    Findings that do not fail (baselined, ignored, below ``fail-on``) are counted in the
    suite's ``system-out``. The one format with times (its readers show them): when and how
    long, unless ``SOURCE_DATE_EPOCH`` is set (:func:`_timestamp`, :func:`_seconds`)."""
    stamp = _timestamp()
    host = socket.gethostname() or "localhost"
    # the comment is curate's generator mark (curate.core.outputs): a later run replaces its own
    # file
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<!-- {GENERATOR_MARK} {__version__} -->",
        "<testsuites>",
    ]
    for k, d in enumerate(result.datasets):
        if d.error is not None:
            out += _junit_unusable(k, d, stamp, host)
            continue
        failures = sum(r.failed for r in d.rules)
        total = sum(_seconds(r.seconds) for r in d.rules)
        out.append(
            f"  <testsuite name={quoteattr(_token(d.name))} package={quoteattr('curate')} "
            f'id="{k}" timestamp="{stamp}" hostname={quoteattr(_token(host))} '
            f'tests="{len(d.rules)}" failures="{failures}" errors="0" skipped="0" '
            f'time="{total:.3f}">'
        )
        out.append("    <properties>")
        props = {"family": d.family, "records": str(d.records), "fail-on": d.fail_on}
        props.update({f"input.{i}": x.path for i, x in enumerate(d.report.inputs)})
        props.update({f"option.{a}": str(b) for a, b in d.report.options.items()})
        for name, value in props.items():
            out.append(f"      <property name={quoteattr(name)} value={quoteattr(value)}/>")
        out.append("    </properties>")
        for r in d.rules:
            head = (
                f"    <testcase name={quoteattr(_token(f'{r.rule} {r.name}'))} "
                f"classname={quoteattr(_token(f'curate.{d.name}'))} time="
                f'"{_seconds(r.seconds):.3f}"'
            )
            if not r.failed:
                out.append(head + "/>")
                continue
            listed, more = _listed(d, r.rule)
            lines = []
            for row in listed:
                loc = _located(d, row)
                lines.append(f"{loc}: {_where(row)}: {row['message']} [{row['fingerprint']}]")
            if more:
                lines.append(f"... and {more} more")
            body = xml_escape(_xml_text("\n".join(lines)))
            out.append(head + ">")
            out.append(
                f"      <failure message={quoteattr(_xml_text(f'{r.rule}: {r.why}'))} "
                f"type={quoteattr(r.rule)}>{body}</failure>"
            )
            out.append("    </testcase>")
        notes = [
            f"{r.rule}: {r.findings} findings ({r.new} new, {r.baselined} baselined, "
            f"{r.ignored} ignored){' - below fail-on' if r.new and not r.failed else ''}"
            for r in d.rules
            if r.findings and not r.failed
        ]
        out.append(f"    <system-out>{xml_escape(_xml_text(chr(10).join(notes)))}</system-out>")
        out.append("    <system-err></system-err>")
        out.append("  </testsuite>")
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


def _junit_unusable(k: int, d: DatasetOutcome, stamp: str, host: str) -> list[str]:
    """A dataset that could not be read: one testcase with an ``error`` (not a ``failure``: the
    data was not judged), so the test tab names it instead of dropping it."""
    name = quoteattr(_token(d.name))
    msg = quoteattr(_xml_text(d.error or ""))
    return [
        f'  <testsuite name={name} package={quoteattr("curate")} id="{k}" '
        f'timestamp="{stamp}" hostname={quoteattr(_token(host))} tests="1" failures="0" '
        'errors="1" skipped="0" time="0.000">',
        "    <properties>",
        f'      <property name="family" value={quoteattr(d.family)}/>',
        "    </properties>",
        f'    <testcase name="load" classname={quoteattr(_token(f"curate.{d.name}"))} '
        'time="0.000">',
        f'      <error message={msg} type="unusable-input">{xml_escape(_xml_text(d.error or ""))}'
        "</error>",
        "    </testcase>",
        "    <system-out></system-out>",
        "    <system-err></system-err>",
        "  </testsuite>",
    ]


def _token(text: str) -> str:
    """An ``xs:token`` value: no line breaks or tabs, single spaces, not empty."""
    return " ".join(text.split()) or "-"


_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    """Characters XML 1.0 cannot hold (control bytes a data value may carry) as ``\\xNN``."""
    return _XML_BAD.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


# --------------------------------------------------------------------------- SARIF 2.1.0


def render_sarif(result: CheckResult) -> str:
    """SARIF 2.1.0: one run of the tool ``curate``; a result per finding with its rule, level,
    file and (when known) line, the record as a logical location and in the properties (with
    its index in the file), the fingerprint as a partial fingerprint, ``baselineState``
    (``new``/``unchanged``) and, for a ``curate-ignore`` entry, a suppression with its reason."""
    from curate.families import get_family

    rules: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []
    config = shown_path(result.config) if result.config else "the configuration"
    root = sarif_root(result)

    def artifact(path: str) -> dict[str, Any]:
        return _artifact(path, root)

    baseline = shown_path(result.baseline) if result.baseline else "the baseline"
    for d in result.datasets:
        fam = get_family(d.family)
        if d.error is not None:
            # a notification (the run's record of what failed) and a result (what code scanning
            # shows): an unusable dataset must not look like a clean one
            where = d.error_path or (str(result.config) if result.config else None)
            locs = [{"physicalLocation": {"artifactLocation": artifact(where or ".")}}]
            notifications.append(
                {"level": "error", "message": {"text": f"{d.name}: {d.error}"}, "locations": locs}
            )
            if UNUSABLE_RULE not in rules:
                rules[UNUSABLE_RULE] = {
                    "id": UNUSABLE_RULE,
                    "name": "UnusableInput",
                    "shortDescription": {"text": "a dataset's input could not be read"},
                    "fullDescription": {
                        "text": "curate could not audit the dataset: its input is missing, "
                        "truncated or not of its family; nothing in it was checked."
                    },
                    "defaultConfiguration": {"level": "error"},
                }
                order.append(UNUSABLE_RULE)
            results.append(
                {
                    "ruleId": UNUSABLE_RULE,
                    "ruleIndex": order.index(UNUSABLE_RULE),
                    "level": "error",
                    "message": {"text": f"{d.name}: {d.error}"},
                    "locations": locs,
                    "properties": {"dataset": d.name, "fails": True},
                }
            )
            continue
        for r in d.rules:
            if r.rule in rules:
                continue
            rule = fam.rules[r.rule] if r.rule in fam.rules else PIN_RULE  # noqa: SIM401 (a RuleSet)
            rules[r.rule] = {
                "id": r.rule,
                "name": r.name,
                "shortDescription": {"text": rule.summary or r.name},
                "fullDescription": {"text": rule.doc or r.name},
                "defaultConfiguration": {"level": _LEVEL[r.severity]},
                "properties": {"category": rule.category, "family": fam.name},
            }
            order.append(r.rule)
        for row in d.findings.iter_rows(named=True):
            # every result on a file (code scanning drops one without): a finding on a split
            # or a whole dataset on the input that holds it, a record's at its line and column
            phys: dict[str, Any] = {"artifactLocation": artifact(_input_of(d, row))}
            at = position_of(d, row)
            if at is not None:
                phys["region"] = {"startLine": at[0], "startColumn": at[1]}
            loc: dict[str, Any] = {"physicalLocation": phys}
            if row["record"] is not None:
                fq = "/".join(x for x in (d.name, row["record"], row["field"] or "") if x)
                loc["logicalLocations"] = [
                    {"name": str(row["record"]), "fullyQualifiedName": fq, "kind": "element"}
                ]
            res: dict[str, Any] = {
                "ruleId": row["rule"],
                "ruleIndex": order.index(row["rule"]),
                "level": "error" if row["fails"] else _LEVEL[row["severity"]],
                "message": {"text": f"{_where(row)}: {row['message']}".lstrip(": ")},
                "locations": [loc] if loc else [],
                "partialFingerprints": {"curateFingerprint/v1": row["fingerprint"]},
                "baselineState": "unchanged" if row["status"] == "baselined" else "new",
                "properties": {
                    "dataset": d.name,
                    "record": row["record"],
                    "recordIndex": row["input_row"],
                    "field": row["field"],
                    "fails": bool(row["fails"]),
                },
            }
            # code scanning opens an alert for every unsuppressed result, whatever its
            # baselineState: an accepted finding is suppressed, saying where it was accepted
            # ("external": in a file beside the data, not a comment in the data itself)
            if row["status"] == "ignored":
                res["suppressions"] = [
                    {
                        "kind": "external",
                        "status": "accepted",
                        "justification": f"curate-ignore in {config}: {row['reason']}",
                    }
                ]
            elif row["status"] == "baselined":
                res["suppressions"] = [
                    {
                        "kind": "external",
                        "status": "accepted",
                        "justification": f"in baseline {baseline}",
                    }
                ]
            results.append(res)
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "curate",
                        "version": __version__,
                        "rules": [rules[c] for c in order],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": not notifications,
                        "toolExecutionNotifications": notifications,
                    }
                ],
                "results": results,
                "columnKind": "unicodeCodePoints",
                # every URI above is relative to this (code scanning maps SRCROOT to the
                # checkout): the check's configuration folder, or the working folder
                "originalUriBaseIds": {"SRCROOT": {"uri": root.as_uri().rstrip("/") + "/"}},
            }
        ],
    }
    return json_bytes(doc, indent=True).decode() + "\n"


def sarif_root(result: CheckResult) -> Path:
    """The folder a SARIF log's URIs are relative to (``SRCROOT``): the configuration's folder
    for ``curate check`` (a dataset repository's root), else the working folder (where a CI
    step runs ``curate audit``)."""
    base = result.config.parent if result.config is not None else Path.cwd()
    return Path(os.path.abspath(base))


def _artifact(path: str, root: Path) -> dict[str, Any]:
    """An ``artifactLocation``: ``path`` relative to ``root`` with ``uriBaseId`` SRCROOT
    (``../`` for a file beside the repository); an absolute ``file://`` URI only where no
    relative one exists (another drive)."""
    from urllib.parse import quote

    target = Path(os.path.abspath(path))
    try:
        rel = os.path.relpath(target, root)
    except ValueError:
        return {"uri": target.as_uri()}
    return {"uri": quote(Path(rel).as_posix()), "uriBaseId": "SRCROOT"}


def _input_of(d: DatasetOutcome, row: dict[str, Any]) -> str:
    """The file a finding is on: its record's input; for a finding on a split (or on the
    whole dataset), the input holding that split, else the first input."""
    if row.get("input"):
        return str(row["input"])
    inputs = d.report.inputs
    split = None
    if row.get("details"):
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            split = orjson.loads(row["details"]).get("split")
    for i in inputs:
        if split is not None and split in i.splits:
            return i.path
    return inputs[0].path if inputs else "."


# --------------------------------------------------------------------------- HTML


def render_html(result: CheckResult) -> str:
    """One self-contained page (:mod:`curate.reports.html`): per dataset the summary, each
    rule's verdict, every finding with its status in a filterable table, findings per rule."""
    from curate.reports.html import render_check

    return render_check(result)
