"""``curate check``: every dataset of the project configuration audited, judged against the
accepted findings (baseline, ``curate-ignore``), thresholds and ``fail-on``.

Why a layer of its own over :func:`curate.api.audit`: an audit answers "what is wrong with this
data"; a CI check answers "did this change make it worse". The judging itself
(:mod:`curate.reports.verdict`) and the baseline file (:mod:`curate.check.baseline`) live in
their own modules; here the configuration is resolved into plans and each plan is audited.
"""

from __future__ import annotations

import os
import time
import typing
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curate.check.baseline import read_baseline, stale_entries
from curate.check.config import LoadedConfig
from curate.core.errors import UsageError
from curate.reports.verdict import PIN_RULE, CheckResult, Threshold, judge, pin_findings, unusable

if TYPE_CHECKING:
    from curate.core.options import FamilyOptions


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
    #: The published version the dataset is pinned to (resolved paths), and what may change.
    frozen: list[str] | None = None
    expect: tuple[str, ...] = ()


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
    from curate.core.options import field_commands, field_flag
    from curate.families import get_family

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
            raw[fname] = _relative_option(loaded, fam.Options, fname, value)
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
                frozen=[str(loaded.resolve(d.frozen))] if d.frozen else None,
                expect=() if d.expect == "unchanged" else tuple(d.expect),
            )
        )
    return plans


def _relative_option(
    loaded: LoadedConfig, options: type[FamilyOptions], name: str, value: Any
) -> Any:
    """Files an option names are relative to the configuration, like the dataset paths:
    ``ids:FILE`` edit sets, every path-typed option (a glycan ``mapping``, ``pred-probs``, a
    deepfake ``media-root`` or ``cache``) and a table ``schema``'s ``FILE.py:Model``. (Only
    ``ids:`` and ``mapping`` were: a ``schema`` beside the configuration was "no such file"
    run from anywhere else, found by a new-user review.)"""
    if not isinstance(value, str):
        return value
    if value.startswith("ids:"):
        return "ids:" + str(loaded.resolve(value[4:]))
    if name == "schema" and ":" in value:
        module, _, model = value.rpartition(":")
        return f"{loaded.resolve(module)}:{model}" if module.endswith(".py") else value
    annotation = options.model_fields[name].annotation
    if Path in (typing.get_args(annotation) or (annotation,)):
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

    from curate.core.errors import InputError, RemoteError

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
            if p.frozen is not None:
                del data
                t0 = time.perf_counter()
                changed = api.compare(p.family, p.frozen, p.paths, p.options, encoding=p.encoding)
                pin_findings(report, changed, p.expect, p.frozen[0])
                report.durations[PIN_RULE.code] = time.perf_counter() - t0
        except (InputError, UsageError, RemoteError) as e:
            # one broken dataset must not hide the others' findings, nor the reports CI uploads
            outcomes.append(unusable(p.name, p.family.name, e, fail_on or p.fail_on))
            continue
        outcomes.append(
            judge(
                p.name,
                report,
                rule_names={r.code: r.name for r in (*p.family.rules, PIN_RULE)},
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
    media, :attr:`~curate.families.base.InputSpec.names_files`)? Then the output gate's "not
    written by curate" waits until they are known: such a target must be refused as the input
    it is."""
    try:
        plans = plan(loaded, ())
    except UsageError:
        return True
    return any(p.family.inputs.names_files for p in plans)


def protected_inputs(loaded: LoadedConfig) -> list[Path]:
    """Every local input of the configuration — the configuration file itself, each dataset's
    files and the files its options name (``ids:`` edit sets, a glycan ``mapping``): reports
    and the baseline must not replace one. (The baseline is added by the caller: it is an input
    of the reports, but the output of ``--update-baseline``.)"""
    from curate.api import protected_inputs as api_protected
    from curate.core.options import FamilyOptions

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
