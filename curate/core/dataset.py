"""What a family's reader returns and what its fixes produce: the data contract under the rules.

Why here, beside :mod:`curate.core.findings` and not with the :class:`~curate.families.base.Family`
contract: rules read a :class:`LoadedDataset` and fixes return :class:`FixResult` and
:class:`ChangeEntry`, so these types must sit *below* ``curate.audits``. Kept in
``curate.families``, every family's rules would import the families layer that imports them,
a cycle only lazy imports could hide.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from curate.core.findings import InputInfo, Report
from curate.core.options import FamilyOptions

if TYPE_CHECKING:  # annotations only: no import of the streams module (and pyarrow) for them
    from curate.core.streams import SplitData

__all__ = ["ChangeEntry", "FixResult", "LoadedDataset", "Written"]


@dataclass
class LoadedDataset:
    """What a family's reader returns: validated, normalised data plus schema findings.

    Families subclass this to hold their columnar tables. ``schema_findings`` is a rule output
    frame (see :data:`curate.core.findings.RULE_OUTPUT_SCHEMA`) with an extra ``rule`` column, so
    that
    records rejected by the schema are reported like any other finding instead of aborting.
    """

    family: str
    inputs: list[InputInfo]
    schema_findings: pl.DataFrame
    #: The validated options it was loaded with (an audit without options uses these).
    options: FamilyOptions | None = field(default=None, kw_only=True)
    #: Files the audit read that the arguments did not name (the media a deepfake manifest
    #: lists): inputs too, which the output gate refuses to write over.
    read_files: list[str] = field(default_factory=list, kw_only=True)

    def named_files(self) -> list[str]:
        """Every file the data names that the arguments did not (a manifest's media): inputs
        the output gate protects. By default what the audit read (:attr:`read_files`); a family
        whose data names files says so as soon as it is loaded, before the audit opens them."""
        return list(self.read_files)

    def record_splits(self) -> pl.DataFrame | None:
        """Each record's split as a frame of ``row`` (the findings' ``row``) and ``split``, for
        the HTML report's split filter; None (no split column) by default.

        Why on the data and not on the family: it is a fact of what was read, as
        :meth:`named_files` is, and the data's own tables hold it."""
        return None


@dataclass
class ChangeEntry:
    """One line of the changelog: what changed, where, and which rule asked for it."""

    record: str | None
    field: str
    old: Any
    new: Any
    rule: str
    reason: str
    #: The finding that asked for it (rule, record, field, message), when a finding did; a
    #: record left out as invalid has none.
    finding: dict[str, Any] | None = None
    #: Which pass of ``curate fix`` made the change (2+: found by re-auditing pass 1's output).
    pass_no: int = 1
    #: The split of a record left out as invalid, for a diff's counts per split (set by
    #: ``Family.diff_frame``; not written to the changelog, whose lines name records).
    split: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "record": self.record,
            "field": self.field,
            "old": self.old,
            "new": self.new,
            "rule": self.rule,
            "reason": self.reason,
        }
        if self.finding is not None:
            out["finding"] = self.finding
            out["pass"] = self.pass_no
        return out


@dataclass
class FixResult:
    """A remastered dataset (Arrow tables per split), its changelog and side files to write."""

    tables: dict[str, SplitData]
    changelog: list[ChangeEntry]
    extra_files: dict[str, bytes] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    #: The re-audit of the fixed data (``audit.after.json``), when the fixes ran through the
    #: engine of :mod:`curate.core.fixes`.
    after: Report | None = None
    #: Records written, when the family wrote its data files itself (``tables`` is then empty;
    #: see :meth:`curate.families.base.Family.write_fixed`).
    records: int | None = None
    #: The data files the family wrote in its own format (file name -> records), already in the
    #: fix's working folder; empty when the fixed data are ``tables`` (the parquet route).
    files: dict[str, int] = field(default_factory=dict)
    #: The card's ``configs`` when the family decides them (config name -> the builder's
    #: parameters: ``data_files``, ``features`` as a YAML list, ``default``); None: one config per
    #: data file (see :func:`curate.publish.folder.write_files_card`).
    configs: dict[str, dict[str, Any]] | None = None
    #: What differs between the input and the fixed records (a :class:`curate.core.diff.Diff`),
    #: the card's "Changes from the source" and ``diff.json``.
    diff: Any = None


@dataclass
class Written:
    """What a family's writer (:meth:`curate.families.base.Family.write_fixed`) put into one fix
    pass's folder, for the engine to read back and re-audit.

    Either ``tables`` (the parquet route: the records per split, written as one parquet file
    each, published later as shards by the export writer) or ``files`` (the family's own format,
    e.g. an HDF5 file of learning histories: file name -> records; the last pass's files *are*
    the published data). ``changes`` are what the format itself changed as a consequence of the
    edits (histories renumbered after one was dropped): logged like any edit. ``configs``: the
    card's configs when the family decides them (see :attr:`FixResult.configs`).
    """

    tables: dict[str, pa.Table] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)
    changes: list[ChangeEntry] = field(default_factory=list)
    configs: dict[str, dict[str, Any]] | None = None

    @property
    def records(self) -> int:
        """Records written: the files' counts, else the tables' rows."""
        if self.files:
            return sum(self.files.values())
        return sum(t.num_rows for t in self.tables.values())
