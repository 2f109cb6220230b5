"""What a family's reader returns and what its fixes produce: the data contract under the rules.

Why here, beside :mod:`curate.findings` and not with the :class:`~curate.families.base.Family`
contract: rules read a :class:`LoadedDataset` and fixes return :class:`FixResult` and
:class:`ChangeEntry`, so these types must sit *below* ``curate.audits``. Kept in
``curate.families``, every family's rules would import the families layer that imports them,
a cycle only lazy imports could hide.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl
import pyarrow as pa

from curate.findings import InputInfo
from curate.options import FamilyOptions

__all__ = ["ChangeEntry", "FixResult", "LoadedDataset"]


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
    #: The validated options it was loaded with (an audit without options uses these).
    options: FamilyOptions | None = field(default=None, kw_only=True)


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
