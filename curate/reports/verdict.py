"""The verdict on findings: each finding new, accepted or ignored, each rule passing or failing.

Why in the reports layer and not with ``curate check``: every CI format (text, JSON, markdown,
JUnit, SARIF, GitHub, HTML) renders one :class:`CheckResult`, and an ``audit``/``validate``
report is rendered as a one-dataset check (:func:`single`) so that it looks the same. Kept with
the command that reads the project configuration, the report formats would import the layer
above them.

Fingerprint (:func:`fingerprint`): a SHA-256 over the dataset's name, the rule code, the input
file (relative to the configuration's folder), the record id, the field, and the message with
every number replaced by ``#``. Not in it: the record's position (``row``, ``input_row``, line
numbers) and the order of the findings, which move whenever a record is added or removed above;
nor the numbers in the message, which are counts and statistics over the whole dataset ("under
'Monocotyledons' in 37 rows", "mean return 0.38", "e.g. record 112") that change when *other*
records change, while the finding itself (this record, this field, this kind of defect) does
not. The rest of the message stays in: two different defects of one record and field (two alias
problems, two labels) differ there. The price: a record named by its position — a CSV without an
id column names records ``line N`` — gets a new fingerprint when a line is inserted above it;
give such a table an id column. Equal fingerprints are counted: the baseline stores how many
findings had each, and a run fails on the ones beyond that count.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from curate.core.findings import Report, Severity
from curate.core.rules import Rule


@dataclass(frozen=True)
class Threshold:
    """Fail a rule only above this: a count of findings, or a percentage of the records."""

    count: int | None = None
    percent: float | None = None

    def exceeded(self, findings: int, records_hit: int, records: int) -> bool:
        if self.count is not None:
            return findings > self.count
        assert self.percent is not None
        return records > 0 and 100.0 * records_hit / records > self.percent

    def __str__(self) -> str:
        return f"{self.count}" if self.count is not None else f"{self.percent:g}%"


def shown_path(path: Path) -> str:
    """A path as reports show it: relative to the current folder when under it (CI annotations
    need paths relative to the repository root, which is where CI runs)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return str(path)
    return rel if not rel.startswith("..") else str(path)


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def normalise_message(message: str) -> str:
    """The message with every number as ``#`` (counts and statistics move; the defect does not)."""
    return _NUMBER.sub("#", message or "")


def fingerprint(
    dataset: str, rule: str, input: str | None, record: str | None, field: str | None, message: str
) -> str:
    """A finding's stable identity (see the module docstring for what is in it and why)."""
    parts = [dataset, rule, input or "", record or "", field or "", normalise_message(message)]
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


# --------------------------------------------------------------------------- outcomes


@dataclass
class RuleOutcome:
    """One rule of one dataset: what it found and whether that fails the check."""

    rule: str
    name: str
    severity: str
    findings: int = 0
    new: int = 0
    baselined: int = 0
    ignored: int = 0
    #: Distinct records among the new findings (for a percentage threshold).
    new_records: int = 0
    threshold: Threshold | None = None
    failed: bool = False
    seconds: float | None = None
    #: Records of the dataset (a percentage threshold's denominator).
    records: int = 0
    #: False for an audit without a baseline (``audit --format junit``): every finding is
    #: "new" there, so the word says nothing and is left out.
    compared: bool = True

    def share(self) -> str:
        """The figure a threshold is compared with: ``7`` findings or ``4.4%`` of the records."""
        if self.threshold is not None and self.threshold.percent is not None:
            pct = 100.0 * self.new_records / self.records if self.records else 0.0
            return f"{pct:.3g}% of records"
        return f"{self.new}"

    @property
    def why(self) -> str:
        """Why it failed, in words: ``3 new error findings`` or ``7 new > threshold 5``."""
        if not self.failed:
            return ""
        new = "new " if self.compared else ""
        if self.threshold is not None:
            return (
                f"{self.new} {new}findings in {self.new_records} records ({self.share()}), "
                f"over threshold {self.threshold}"
            )
        return f"{self.new} {new}{self.severity} finding{'s' if self.new != 1 else ''}"


@dataclass
class DatasetOutcome:
    """One configured dataset after the check: its report, each finding's status, each rule's
    verdict. ``findings`` is the report's findings plus ``fingerprint``, ``source`` (the input
    relative to the configuration), ``status`` (``new`` | ``baselined`` | ``ignored``),
    ``reason`` (of an ignore) and ``fails`` (a new finding of a failing rule)."""

    name: str
    family: str
    report: Report
    findings: pl.DataFrame
    rules: list[RuleOutcome]
    fail_on: str
    #: Why the dataset could not be audited at all (unreadable, truncated, not of its family):
    #: the one-line error, reported for this dataset in every format while the others are still
    #: checked. ``error_path`` is the file it names, for an annotation.
    error: str | None = None
    error_path: str | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None or any(r.failed for r in self.rules)

    @property
    def records(self) -> int:
        return self.report.records

    def count(self, status: str) -> int:
        return int((self.findings["status"] == status).sum()) if self.findings.height else 0

    def failing(self) -> pl.DataFrame:
        return self.findings.filter(pl.col("fails"))


@dataclass
class CheckResult:
    """Every dataset's outcome and what the accepted findings did."""

    datasets: list[DatasetOutcome]
    config: Path | None = None
    baseline: Path | None = None
    #: Baseline entries no finding matched any more (fixed since): fingerprint → entry.
    stale: list[dict[str, Any]] = field(default_factory=list)
    #: ``curate-ignore`` entries that matched no finding (index, entry as written).
    unused_ignores: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    #: True when the baseline file was (re)written this run.
    baseline_written: bool = False
    #: Findings that were new when ``--update-baseline`` accepted them.
    newly_accepted: int = 0
    #: Files the datasets named besides their paths (a deepfake manifest's media): inputs of
    #: the reports and the baseline, as much as the data itself.
    named_files: list[str] = field(default_factory=list)
    #: The command whose verdict this is, as the text and summary name it (``curate audit
    #: failed``): an audit or a diff rendered in a CI format is not a ``curate check``.
    command: str = "check"

    @property
    def failed(self) -> bool:
        return any(d.failed for d in self.datasets)

    @property
    def unusable(self) -> list[DatasetOutcome]:
        """Datasets that could not be audited (the run exits 2 once every report is out)."""
        return [d for d in self.datasets if d.error is not None]


_EXTRA = {
    "fingerprint": pl.String,
    "source": pl.String,
    "status": pl.String,
    "reason": pl.String,
    "fails": pl.Boolean,
}


def judge(
    name: str,
    report: Report,
    *,
    fail_on: str = "error",
    rule_names: dict[str, str] | None = None,
    severities: dict[str, str] | None = None,
    thresholds: dict[str, Threshold] | None = None,
    baseline: Counter[str] | None = None,
    ignores: Sequence[tuple[int, Any]] = (),
    source: Any = None,
    used_ignores: set[int] | None = None,
) -> DatasetOutcome:
    """Decide each finding's status and each rule's verdict for one dataset.

    ``severities`` (rule code → severity) overrides the rules' own, findings included;
    ``baseline`` (fingerprint → count) is consumed as findings match it (pass a copy);
    ``ignores`` are ``curate-ignore`` entries as (index, entry); ``source`` maps an input path
    to the name fingerprints use (default: the path as given). A rule fails on new findings at
    or above ``fail_on`` or, when it has a threshold, on new findings beyond it whatever its
    severity (``fail_on="never"``: nothing fails).
    """
    from curate.families import get_family

    fam = get_family(report.family)
    names = rule_names or {r.code: r.name for r in (*fam.rules, PIN_RULE)}
    defaults = {r.code: r.severity.value for r in fam.rules}
    severities = severities or {}
    thresholds = thresholds or {}
    to_source = source or (lambda p: p)
    f = report.findings
    if severities and f.height:
        f = f.with_columns(
            pl.col("rule")
            .replace_strict(severities, default=pl.col("severity"), return_dtype=pl.String)
            .alias("severity")
        )
    rows = f.to_dicts()
    statuses: list[str] = []
    reasons: list[str | None] = []
    prints: list[str] = []
    sources: list[str | None] = []
    remaining = baseline if baseline is not None else Counter()
    for r in rows:
        src = to_source(r["input"]) if r["input"] is not None else None
        fp = fingerprint(name, r["rule"], src, r["record"], r["field"], r["message"])
        sources.append(src)
        prints.append(fp)
        hit = next(
            (
                (i, ig)
                for i, ig in ignores
                if (ig.dataset is None or ig.dataset == name)
                and ig.rule.upper() == r["rule"]
                and ig.record == (r["record"] or "")
                and (ig.field is None or ig.field == (r["field"] or ""))
            ),
            None,
        )
        if hit is not None:
            statuses.append("ignored")
            reasons.append(hit[1].reason)
            if used_ignores is not None:
                used_ignores.add(hit[0])
        elif remaining.get(fp, 0) > 0:
            remaining[fp] -= 1
            statuses.append("baselined")
            reasons.append(None)
        else:
            statuses.append("new")
            reasons.append(None)
    f = f.with_columns(
        pl.Series("fingerprint", prints, dtype=pl.String),
        pl.Series("source", sources, dtype=pl.String),
        pl.Series("status", statuses, dtype=pl.String),
        pl.Series("reason", reasons, dtype=pl.String),
    )
    outcomes: list[RuleOutcome] = []
    failing: set[str] = set()
    rank = Severity(fail_on).rank if fail_on != "never" else 99
    for code in report.rules_run:
        sev = severities.get(code, defaults.get(code, "error"))
        mine = f.filter(pl.col("rule") == code) if f.height else f
        new = mine.filter(pl.col("status") == "new") if mine.height else mine
        out = RuleOutcome(
            rule=code,
            name=names.get(code, ""),
            severity=sev,
            findings=mine.height,
            new=new.height,
            baselined=int((mine["status"] == "baselined").sum()) if mine.height else 0,
            ignored=int((mine["status"] == "ignored").sum()) if mine.height else 0,
            new_records=new.select(pl.struct("input", "record").n_unique()).item()
            if new.height
            else 0,
            threshold=thresholds.get(code),
            seconds=report.durations.get(code),
            records=report.records,
            compared=baseline is not None,
        )
        if fail_on != "never" and out.new:
            if out.threshold is not None:
                out.failed = out.threshold.exceeded(out.new, out.new_records, report.records)
            else:
                out.failed = Severity(sev).rank >= rank
        if out.failed:
            failing.add(code)
        outcomes.append(out)
    f = f.with_columns(
        (pl.col("rule").is_in(sorted(failing)) & (pl.col("status") == "new")).alias("fails")
    ).select([*report.findings.columns, *_EXTRA])
    return DatasetOutcome(name, fam.name, report, f, outcomes, fail_on)


def unusable(name: str, family: str, error: Exception, fail_on: str = "error") -> DatasetOutcome:
    """The outcome of a dataset whose input could not be used: no findings, the error."""
    from curate.core.errors import InputError
    from curate.core.findings import FINDING_SCHEMA

    line = error.one_line() if isinstance(error, InputError) else str(error)
    path = error.path if isinstance(error, InputError) else None
    empty = pl.DataFrame(schema={**FINDING_SCHEMA, **_EXTRA})
    report = Report(family, [], empty.select(list(FINDING_SCHEMA)), [])
    return DatasetOutcome(name, family, report, empty, [], fail_on, line, path)


def single(
    report: Report, fail_on: str = "error", name: str | None = None, command: str = "audit"
) -> CheckResult:
    """An ``audit``/``validate`` report as a one-dataset check (no baseline), so that every
    CI format renders it the same way; ``command`` names the verdict's command."""
    if name is None:
        first = report.inputs[0].path if report.inputs else report.family
        name = Path(str(first).rstrip("/")).name or report.family
    return CheckResult([judge(name, report, fail_on=fail_on)], command=command)


# --------------------------------------------------------------------------- summary lines


def footer_lines(result: CheckResult) -> list[str]:
    lines = []
    if result.stale:
        lines.append(
            f"{len(result.stale)} baseline entr{'y' if len(result.stale) == 1 else 'ies'} no "
            "longer found (fixed since): `curate check --update-baseline` drops them"
        )
    for i, ig in result.unused_ignores:
        lines.append(
            f"curate-ignore[{i}] ({ig.get('rule')} record {ig.get('record')}) matched no "
            "finding: remove it"
        )
    broken = [d.name for d in result.unusable]
    if broken:
        lines.append(
            f"curate {result.command} could not audit {len(broken)} "
            f"dataset{'s' if len(broken) != 1 else ''}"
            f" (unusable input): {', '.join(broken)}"
        )
    failed = [d.name for d in result.datasets if d.failed and d.error is None]
    new = sum(int(d.findings["fails"].sum()) if d.findings.height else 0 for d in result.datasets)
    if result.baseline_written and not broken:
        pass  # no verdict: the findings were accepted (the CLI says what was recorded)
    elif failed:
        lines.append(
            f"curate {result.command} failed: {new} failing finding{'s' if new != 1 else ''} in "
            + ", ".join(failed)
        )
    elif not broken:
        lines.append(f"curate {result.command} passed: {len(result.datasets)} dataset(s)")
    return lines


def baseline_line(result: CheckResult) -> str:
    """What ``--update-baseline`` wrote: ``baseline FILE: 163 findings recorded (3 new)`` (the
    run accepts its failing findings, so "check failed" would be the wrong verdict to print)."""
    recorded = sum(d.findings.height - d.count("ignored") for d in result.datasets)
    new = result.newly_accepted
    where = shown_path(result.baseline) if result.baseline else "(none)"
    return (
        f"baseline {where}: {recorded} finding{'s' if recorded != 1 else ''} recorded ({new} new)"
    )


# --------------------------------------------------------------------------- pinned versions


def _pin_rule(*_: Any) -> pl.DataFrame:
    """A frozen dataset differs from its published version.

    A dataset pinned in ``curate check``'s configuration (``frozen = "PATH"``, with ``expect``
    the kinds of change allowed, ``"unchanged"`` by default) is compared record by record with
    that version (``curate diff``), and each record changed in a way not allowed is one
    finding: a data pull request that edits a frozen benchmark fails CI, naming the records,
    fields and values that changed. Columns added or removed are one finding (kind
    ``columns``). Fix: revert the change, or publish a new version and pin that.
    """
    raise NotImplementedError("CK101 is computed by curate check, not run on data")


#: The rule ``curate check`` reports a pinned dataset's changes under (no family runs it).
PIN_RULE = Rule(
    code="CK101",
    name="frozen-dataset-changed",
    family="check",
    category="integrity",
    severity=Severity.ERROR,
    func=_pin_rule,
)


def pin_findings(report: Report, diff: Any, expect: Sequence[str], frozen: str) -> None:
    """Add to ``report`` a CK101 finding per record of ``diff`` (a
    :class:`~curate.core.diff.Diff` of the pinned version and the data) changed in a way
    ``expect`` does not allow, and one for columns added or removed; CK101 counts as run."""
    from curate.core.findings import FINDING_SCHEMA, dumps

    allowed = set(expect)
    rows: list[dict[str, Any]] = []
    for c in diff.changes:
        bad = [k for k in c.kinds if k not in allowed]
        if not bad:
            continue
        said = [
            f"{path or '(record)'}: {_short(old)} → {_short(new)}"
            for f in c.fields
            for path, old, new in (f.paths or ((f.field, f.old, f.new),))
        ]
        if c.new_split != c.split and c.kind not in ("added", "removed"):
            said.append(f"split {c.split} → {c.new_split}")
        if c.kind == "rekeyed":
            said.append(f"now {c.new_record}")
        detail = "; ".join(said[:3]) + (f"; {len(said) - 3} more" if len(said) > 3 else "")
        rows.append(
            {
                "record": c.record,
                "field": c.fields[0].field if c.fields else "",
                "message": f"{'/'.join(bad)} since the frozen version {frozen}"
                + (f": {detail}" if detail else ""),
                "details": dumps({"kinds": list(c.kinds), "frozen": frozen, **c.to_json()}),
            }
        )
    if "columns" not in allowed and (diff.columns_added or diff.columns_removed):
        what = [f"added {', '.join(diff.columns_added)}"] if diff.columns_added else []
        what += [f"removed {', '.join(diff.columns_removed)}"] if diff.columns_removed else []
        rows.append(
            {
                "record": None,
                "field": "",
                "message": f"columns {'; '.join(what)} since the frozen version {frozen}",
                "details": dumps({"frozen": frozen}),
            }
        )
    report.rules_run.append(PIN_RULE.code)
    if not rows:
        return
    frame = pl.DataFrame(
        [
            {
                "rule": PIN_RULE.code,
                "category": PIN_RULE.category,
                "severity": PIN_RULE.severity.value,
                "row": None,
                "fix": None,
                "input": None,
                "input_row": None,
                **r,
            }
            for r in rows
        ],
        schema=FINDING_SCHEMA,
    )
    report.findings = pl.concat(
        [report.findings, frame.select(report.findings.columns)], how="vertical_relaxed"
    )


def _short(value: Any, limit: int = 60) -> str:
    text = "(none)" if value is None else repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
