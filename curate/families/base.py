"""The contract every family implements, and the audit engine they share."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from curate.findings import InputInfo, Report
from curate.rules import Rule, RuleSet

Progress = Callable[[str, int], None]


@dataclass
class LoadedDataset:
    """What a family's reader returns: validated, normalised data plus schema findings.

    Families subclass this to hold their columnar tables. ``schema_findings`` is a rule output
    frame (see :data:`curate.findings.RULE_OUTPUT_SCHEMA`) with an extra ``rule`` column, so that
    records rejected by the schema are reported like any other finding instead of aborting.
    """

    family: str
    inputs: list[InputInfo]
    schema_findings: pl.DataFrame


@dataclass
class ChangeEntry:
    """One line of the changelog: what changed, where, and which rule asked for it."""

    record: str | None
    field: str
    old: Any
    new: Any
    rule: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "field": self.field,
            "old": self.old,
            "new": self.new,
            "rule": self.rule,
            "reason": self.reason,
        }


@dataclass
class FixResult:
    """A remastered dataset (Arrow tables per split), its changelog and side files to write."""

    tables: dict[str, pa.Table]
    changelog: list[ChangeEntry]
    extra_files: dict[str, bytes] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


class Family(ABC):
    """A dataset family: name, rules, reader, fixes and export metadata."""

    name: str
    aliases: tuple[str, ...] = ()
    title: str = ""
    rules: RuleSet
    #: Dataset-card defaults for exports.
    task_categories: tuple[str, ...] = ()
    license: str = "unknown"

    @abstractmethod
    def load(
        self, paths: Sequence[str | Path], *, progress: Progress | None = None, **options: Any
    ) -> LoadedDataset:
        """Read and validate inputs. Raises InputError for unusable input."""

    @abstractmethod
    def to_tables(self, data: LoadedDataset) -> dict[str, pa.Table]:
        """The valid records as Arrow tables per split, in the family's published layout."""

    @abstractmethod
    def fix(self, data: LoadedDataset, report: Report, **options: Any) -> FixResult:
        """Apply the fixes proposed in ``report``; must not modify ``data`` or the inputs."""

    def audit_options(self, data: LoadedDataset, **options: Any) -> dict[str, Any]:
        """Resolve user options (e.g. an edit-set spec) against the data before rules run."""
        return options

    def audit(
        self,
        data: LoadedDataset,
        *,
        select: Sequence[str] | None = None,
        ignore: Sequence[str] | None = None,
        progress: Progress | None = None,
        **options: Any,
    ) -> Report:
        """Run the selected rules and collect their findings into one :class:`Report`."""
        chosen: list[Rule] = self.rules.select(select, ignore)
        resolved = self.audit_options(data, **options)
        frames = []
        timings: dict[str, float] = {}
        for i, rule in enumerate(chosen):
            if progress:  # "rule 3/21: KE101 hop-count-mismatch", and 2 rules done
                progress(f"rule {i + 1}/{len(chosen)}: {rule.code} {rule.name}", i)
            t0 = time.perf_counter()
            out = rule.run(data, resolved)
            timings[rule.code] = round(time.perf_counter() - t0, 4)
            frames.append(
                out.with_columns(
                    pl.lit(rule.code).alias("rule"),
                    pl.lit(rule.category.value).alias("category"),
                    pl.lit(rule.severity.value).alias("severity"),
                )
            )
        findings = (
            pl.concat(frames, how="diagonal_relaxed")
            if frames
            else pl.DataFrame(schema={"rule": pl.String})
        )
        from curate.findings import FINDING_SCHEMA

        findings = findings.select(
            [
                pl.col(c).cast(t) if c in findings.columns else pl.lit(None, t).alias(c)
                for c, t in FINDING_SCHEMA.items()
            ]
        )
        public_opts = {k: v for k, v in resolved.items() if not k.startswith("_") and v is not None}
        return Report(
            family=self.name,
            inputs=data.inputs,
            findings=findings,
            rules_run=[r.code for r in chosen],
            options=public_opts,
            stats=dict(getattr(data, "stats", {})),
            timings=timings,
        )
