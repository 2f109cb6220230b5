"""``curate check``: every dataset of the project configuration audited, judged against the
accepted findings (baseline, ``curate-ignore``), thresholds and ``fail-on``.

Why a layer of its own over :func:`curate.api.audit`: an audit answers "what is wrong with this
data"; a CI check answers "did this change make it worse". A dataset repository keeps old,
accepted findings (a known duplicate upstream, a leak the authors document) and must still fail
when a push adds a new one, the way ruff fails on a new lint error in a codebase with a baseline.
So each finding gets a *fingerprint* that survives unrelated edits, the baseline stores the
fingerprints accepted, and only findings not in it fail.

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

Baseline file: JSON written by curate only (``"curate-baseline": 1`` first), one entry per
fingerprint sorted by dataset, rule, input, record, field, with the message for a reviewer's
eye; ``--update-baseline`` rewrites it atomically and refuses to overwrite a file that is not
one (it could be anyone's JSON).
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from curate.config import LoadedConfig, Threshold
from curate.errors import UsageError
from curate.findings import Report, Severity, json_bytes

#: The first key of a baseline file and its format version.
BASELINE_KEY = "curate-baseline"
BASELINE_VERSION = 1
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
    names = rule_names or {r.code: r.name for r in fam.rules}
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
    from curate.errors import InputError
    from curate.findings import FINDING_SCHEMA

    line = error.one_line() if isinstance(error, InputError) else str(error)
    path = error.path if isinstance(error, InputError) else None
    empty = pl.DataFrame(schema={**FINDING_SCHEMA, **_EXTRA})
    report = Report(family, [], empty.select(list(FINDING_SCHEMA)), [])
    return DatasetOutcome(name, family, report, empty, [], fail_on, line, path)


def single(report: Report, fail_on: str = "error", name: str | None = None) -> CheckResult:
    """An ``audit``/``validate`` report as a one-dataset check (no baseline), so that every
    CI format renders it the same way."""
    if name is None:
        first = report.inputs[0].path if report.inputs else report.family
        name = Path(str(first).rstrip("/")).name or report.family
    return CheckResult([judge(name, report, fail_on=fail_on)])


# --------------------------------------------------------------------------- baseline file


def read_baseline(path: Path) -> Counter[str]:
    """Fingerprint → how many findings the baseline accepts (a missing file accepts none, and
    so does an empty one: a ``touch``ed placeholder that ``--update-baseline`` then fills, as
    the output gate replaces an empty file)."""
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        return Counter()
    doc = _baseline_doc(path)
    if doc is None:
        raise UsageError(
            f"baseline {path}: not a curate baseline (a JSON object starting with "
            f'"{BASELINE_KEY}"); write one with `curate check --update-baseline`'
        )
    out: Counter[str] = Counter()
    for i, e in enumerate(doc.get("findings") or []):
        if not isinstance(e, dict) or not isinstance(e.get("fingerprint"), str):
            raise UsageError(f"baseline {path}: findings[{i}] has no fingerprint")
        out[e["fingerprint"]] += int(e.get("count", 1))
    return out


def _baseline_doc(path: Path) -> dict[str, Any] | None:
    try:
        doc = orjson.loads(path.read_bytes())
    except (orjson.JSONDecodeError, OSError):
        return None
    if not isinstance(doc, dict) or doc.get(BASELINE_KEY) != BASELINE_VERSION:
        return None
    return doc


def baseline_entries(result: CheckResult) -> list[dict[str, Any]]:
    """What ``--update-baseline`` writes: every finding not ignored, one entry per fingerprint
    (with its count), sorted so that the file's diff shows exactly what changed."""
    grouped: dict[str, dict[str, Any]] = {}
    for d in result.datasets:
        if not d.findings.height:
            continue
        kept = d.findings.filter(pl.col("status") != "ignored")
        for r in kept.iter_rows(named=True):
            e = grouped.get(r["fingerprint"])
            if e is None:
                grouped[r["fingerprint"]] = {
                    "dataset": d.name,
                    "rule": r["rule"],
                    "input": r["source"],
                    "record": r["record"],
                    "field": r["field"] or "",
                    "message": r["message"],
                    "fingerprint": r["fingerprint"],
                    "count": 1,
                }
            else:
                e["count"] += 1
    return sorted(
        grouped.values(),
        key=lambda e: (
            e["dataset"],
            e["rule"],
            e["input"] or "",
            e["record"] or "",
            e["field"],
            e["fingerprint"],
        ),
    )


def write_baseline_check(
    path: Path, protected: Sequence[Path] = (), patterns: Sequence[str] = ()
) -> None:
    """Refuse a baseline destination before the work: an input of the run (a data file, the
    configuration, a path the datasets' globs ``patterns`` match), a folder, or an existing
    non-empty file that is not a curate baseline."""
    from curate.outputs import guard_file

    # whether an existing file is a baseline is read from its header below (a clearer message
    # than the gate's); the gate refuses inputs and folders
    guard_file(path, list(protected), option="baseline", owned=lambda _: True, patterns=patterns)
    if path.is_file() and path.stat().st_size and _baseline_doc(path) is None:
        raise UsageError(
            f'baseline {path}: exists and is not a curate baseline (no "{BASELINE_KEY}" '
            "header); curate overwrites only files it wrote: move it or name another file"
        )


def write_baseline(
    path: Path, result: CheckResult, protected: Sequence[Path] = (), patterns: Sequence[str] = ()
) -> int:
    """Rewrite the baseline atomically; refuse a file that is not a curate baseline, or an
    input. Returns the number of entries written."""
    from curate.outputs import write_bytes_atomic

    # again: the file may have changed while we worked
    write_baseline_check(path, protected, patterns)
    entries = baseline_entries(result)
    if path.exists():
        # a run over some datasets (--dataset) keeps the others' entries, and so does a dataset
        # that could not be read this time: its accepted findings are not gone, only unseen
        checked = {d.name for d in result.datasets if d.error is None}
        old = (_baseline_doc(path) or {}).get("findings") or []
        kept = [e for e in old if isinstance(e, dict) and e.get("dataset") not in checked]
        entries = sorted(
            kept + entries,
            key=lambda e: (
                str(e.get("dataset")),
                str(e.get("rule")),
                e.get("input") or "",
                e.get("record") or "",
                e.get("field") or "",
                str(e.get("fingerprint")),
            ),
        )
    doc = {
        BASELINE_KEY: BASELINE_VERSION,
        "about": "Findings accepted by `curate check --update-baseline`: a run fails only on "
        "findings whose fingerprint is not listed here (or beyond its count). Regenerate it, "
        "do not edit it by hand.",
        "findings": entries,
    }
    write_bytes_atomic(path, json_bytes(doc, indent=True) + b"\n")
    return len(entries)


def accept_all(result: CheckResult) -> None:
    """After ``--update-baseline``: every new finding is now baselined, so the reports of this
    run show what the next run will see (nothing failing) instead of a verdict just undone."""
    result.newly_accepted = sum(d.count("new") for d in result.datasets)
    result.baseline_written = True
    result.stale = []  # the rewrite dropped them
    for d in result.datasets:
        if d.findings.height:
            d.findings = d.findings.with_columns(
                pl.when(pl.col("status") == "new")
                .then(pl.lit("baselined"))
                .otherwise(pl.col("status"))
                .alias("status"),
                pl.lit(False).alias("fails"),
            )
        for r in d.rules:
            r.baselined += r.new
            r.new = r.new_records = 0
            r.failed = False


def stale_entries(path: Path | None, result: CheckResult) -> list[dict[str, Any]]:
    """Baseline entries that no current finding matches (fixed since): worth dropping."""
    if path is None or not path.exists():
        return []
    doc = _baseline_doc(path) or {}
    seen = {fp for d in result.datasets if d.findings.height for fp in d.findings["fingerprint"]}
    checked = {d.name for d in result.datasets if d.error is None}
    return [
        e
        for e in doc.get("findings") or []
        if isinstance(e, dict) and e.get("dataset") in checked and e.get("fingerprint") not in seen
    ]


# --------------------------------------------------------------------------- running a config


@dataclass
class Plan:
    """One configured dataset resolved: family, inputs, options and rule choices."""

    index: int
    name: str
    family: Any
    paths: list[str]
    options: Any
    select: list[str] | None
    ignore: list[str] | None
    severities: dict[str, str]
    thresholds: dict[str, Threshold]
    fail_on: str
    encoding: str | None


def _matching(rules: Any, selectors: Sequence[str]) -> list[str]:
    """The selectors that match at least one of ``rules`` (a family's RuleSet)."""
    out = []
    for s in selectors:
        try:
            if rules.select([s]):
                out.append(s)
        except UsageError:
            continue
    return out


def _codes(rules: Any, selector: str) -> list[str]:
    return [r.code for r in rules.select([selector])]


def plan(loaded: LoadedConfig, only: Sequence[str] = ()) -> list[Plan]:
    """Resolve every dataset (``only``: these names) or raise :class:`UsageError` naming the
    key: an unknown family, an option the family lacks, a selector matching no rule."""
    from curate.families import get_family
    from curate.options import field_commands, field_flag

    cfg = loaded.config
    names = [d.name for d in cfg.datasets]
    for n in only:
        if n not in names:
            raise UsageError(
                f"--dataset {n!r}: no such dataset in {loaded.path} ({', '.join(names)})"
            )
    fams: list[Any] = []
    for i, d in enumerate(cfg.datasets):
        try:
            fams.append(get_family(d.family))
        except UsageError as e:
            raise UsageError(f"{loaded.where(f'datasets[{i}].family')}: {e}") from None
    # top-level selectors must mean something to at least one dataset
    for key in ("select", "ignore"):
        for j, s in enumerate(getattr(cfg, key) or []):
            if not any(_matching(f.rules, [s]) for f in fams):
                raise UsageError(
                    f"{loaded.where(f'{key}[{j}]')}: {s!r} matches no rule of a "
                    "configured dataset's family (see `curate rules`)"
                )
    for key in ("severity", "thresholds"):
        for s in getattr(cfg, key):
            if not any(_matching(f.rules, [s]) for f in fams):
                raise UsageError(
                    f"{loaded.where(f'{key}.{s}')}: matches no rule of a configured "
                    "dataset's family (see `curate rules`)"
                )
    for j, ig in enumerate(cfg.curate_ignore):
        targets = [
            f
            for f, d in zip(fams, cfg.datasets, strict=True)
            if ig.dataset is None or ig.dataset == d.name
        ]
        if not any(ig.rule.upper() in f.rules for f in targets):
            raise UsageError(
                f"{loaded.where(f'curate-ignore[{j}].rule')}: {ig.rule!r} is not a "
                "rule code of the dataset's family"
            )
    plans = []
    for i, (d, fam) in enumerate(zip(cfg.datasets, fams, strict=True)):
        if only and d.name not in only:
            continue
        at = f"datasets[{i}]"
        # options: the flag spelling (edit-set, column) or the field name
        by_flag = {field_flag(fam.Options, n)[2:]: n for n in fam.Options.model_fields}
        raw: dict[str, Any] = {}
        for key, value in d.options.items():
            fname = by_flag.get(key) or key.replace("-", "_")
            if fname not in fam.Options.model_fields:
                have = ", ".join(by_flag) or "(none)"
                raise UsageError(
                    f"{loaded.where(f'{at}.options.{key}')}: {fam.name} has no such "
                    f"option (its options: {have})"
                )
            if "audit" not in field_commands(fam.Options, fname):
                raise UsageError(
                    f"{loaded.where(f'{at}.options.{key}')}: not an option of an "
                    f"audit (only of {', '.join(field_commands(fam.Options, fname))})"
                )
            raw[fname] = _relative_option(loaded, fname, value)
        try:
            opts = fam.options(**raw)
        except UsageError as e:
            raise UsageError(f"{loaded.where(f'{at}.options')}: {e}") from None
        select = (
            d.select
            if d.select is not None
            else (_matching(fam.rules, cfg.select) if cfg.select else None)
        )
        if select == []:
            select = None  # the top-level list names nothing of this family: every rule
        ignore = _matching(fam.rules, cfg.ignore or []) + list(d.ignore or [])
        for key, given in (("select", d.select), ("ignore", d.ignore)):
            for j, s in enumerate(given or []):
                if not _matching(fam.rules, [s]):
                    raise UsageError(
                        f"{loaded.where(f'{at}.{key}[{j}]')}: {s!r} matches no "
                        f"{fam.name} rule (see `curate rules {fam.name}`)"
                    )
        severities: dict[str, str] = {}
        thresholds: dict[str, Threshold] = {}
        for scope, prefix in ((cfg, ""), (d, f"{at}.")):
            for sel, sev in scope.severity.items():
                if not _matching(fam.rules, [sel]):
                    if prefix:
                        raise UsageError(
                            f"{loaded.where(f'{prefix}severity.{sel}')}: matches no {fam.name} rule"
                        )
                    continue
                severities.update(dict.fromkeys(_codes(fam.rules, sel), sev))
            for sel, th in scope.parsed_thresholds().items():
                if not _matching(fam.rules, [sel]):
                    if prefix:
                        raise UsageError(
                            f"{loaded.where(f'{prefix}thresholds.{sel}')}: matches "
                            f"no {fam.name} rule"
                        )
                    continue
                thresholds.update(dict.fromkeys(_codes(fam.rules, sel), th))
        plans.append(
            Plan(
                index=i,
                name=d.name,
                family=fam,
                paths=loaded.dataset_paths(i),
                options=opts,
                select=select,
                ignore=ignore or None,
                severities=severities,
                thresholds=thresholds,
                fail_on=d.fail_on or cfg.fail_on or "error",
                encoding=d.encoding,
            )
        )
    return plans


def _relative_option(loaded: LoadedConfig, name: str, value: Any) -> Any:
    """Files an option names are relative to the configuration, like the dataset paths:
    ``ids:FILE`` edit sets and path-typed options (a glycan ``mapping``)."""
    if isinstance(value, str) and value.startswith("ids:"):
        return "ids:" + str(loaded.resolve(value[4:]))
    if name in ("mapping",) and isinstance(value, str):
        return str(loaded.resolve(value))
    return value


def run_check(
    loaded: LoadedConfig,
    *,
    baseline: Path | None = None,
    use_baseline: bool = True,
    only: Sequence[str] = (),
    fail_on: str | None = None,
    progress: Any = None,
) -> CheckResult:
    """Audit every configured dataset through :func:`curate.api.audit` and judge it."""

    from curate import api

    plans = plan(loaded, only)
    if baseline is None and use_baseline and loaded.config.baseline:
        baseline = loaded.resolve(loaded.config.baseline)
    accepted = read_baseline(baseline) if (baseline is not None and use_baseline) else Counter()
    ignores = list(enumerate(loaded.config.curate_ignore))
    used: set[int] = set()
    root = loaded.root.resolve()

    def source(p: str) -> str:
        full = Path(p) if os.path.isabs(p) else Path.cwd() / p
        try:
            return Path(os.path.normpath(full)).relative_to(root).as_posix()
        except ValueError:
            return Path(p).as_posix()

    from curate.errors import InputError, RemoteError

    outcomes = []
    named: list[str] = []
    for p in plans:
        try:
            t0 = time.perf_counter()
            data = api.load(
                p.family,
                p.paths,
                encoding=p.encoding,
                progress=progress,
                **p.options.model_dump(exclude_unset=True),
            )
            seconds = time.perf_counter() - t0
            named.extend(data.named_files())  # a manifest's media: no report may replace one
            report = api.audit(p.family, data, select=p.select, ignore=p.ignore, progress=progress)
            report.durations = {"load": seconds, **report.durations}
        except (InputError, UsageError, RemoteError) as e:
            # one broken dataset must not hide the others' findings, nor the reports CI uploads
            outcomes.append(unusable(p.name, p.family.name, e, fail_on or p.fail_on))
            continue
        outcomes.append(
            judge(
                p.name,
                report,
                fail_on=fail_on or p.fail_on,
                severities=p.severities,
                thresholds=p.thresholds,
                baseline=accepted,
                ignores=ignores,
                source=source,
                used_ignores=used,
            )
        )
    result = CheckResult(outcomes, loaded.path, baseline)
    result.named_files = list(dict.fromkeys(named))
    # a dataset that could not be read found nothing: its baseline entries and ignores are not
    # stale, only unseen this run
    checked = {d.name for d in outcomes if d.error is None}
    result.unused_ignores = [
        (i, ig.model_dump(by_alias=True, exclude_none=True))
        for i, ig in ignores
        if i not in used and (ig.dataset is None or ig.dataset in checked)
    ]
    if use_baseline:
        result.stale = stale_entries(baseline, result)
    return result


def names_inputs(loaded: LoadedConfig) -> bool:
    """Does a dataset of the configuration name more inputs once read (a deepfake manifest's
    media, :attr:`Family.names_inputs`)? Then the output gate's "not written by curate" waits
    until they are known: such a target must be refused as the input it is."""
    try:
        plans = plan(loaded, ())
    except UsageError:
        return True
    return any(p.family.names_inputs for p in plans)


def protected_inputs(loaded: LoadedConfig) -> list[Path]:
    """Every local input of the configuration — the configuration file itself, each dataset's
    files and the files its options name (``ids:`` edit sets, a glycan ``mapping``): reports
    and the baseline must not replace one. (The baseline is added by the caller: it is an input
    of the reports, but the output of ``--update-baseline``.)"""
    from curate.api import protected_inputs as api_protected
    from curate.options import FamilyOptions

    out: list[Path] = [loaded.path]
    try:
        plans = plan(loaded, ())
    except UsageError:  # a configuration error: run_check reports it; protect what is readable
        plans = None
    if plans is not None:
        for p in plans:
            out.extend(api_protected(p.paths, p.options))
        return out
    for i in range(len(loaded.config.datasets)):
        try:
            paths = loaded.dataset_paths(i)
        except UsageError:
            continue
        out.extend(api_protected(paths, FamilyOptions()))
    return out
