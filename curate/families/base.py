"""The contract every family implements, and the audit engine they share.

The contract
============
What a family says: its names, its options, how to load, its tables and keys, its rules, how
to write and report. Sixteen members, four of them required (R); every other one has a default
(D) that fits a family without it. Declarations (data) come first, then hooks (methods).

===================  ===  =====================================================================
member               R/D  what it says (default)
===================  ===  =====================================================================
``name``             R    the name on the command line, in reports and in findings' ``family``
``aliases``          D    other names it answers to (none)
``Options``          D    its options model (:class:`~curate.core.options.FamilyOptions`, no
                          option): the CLI's flags, the API's keywords, which command takes
                          which, the combinations a command refuses (``check_command``), the
                          files they name, the shared tables they make unavailable
``inputs``           D    :class:`InputSpec`: PATHS' help, text formats (``--encoding``), data
                          naming more files (the core's record inputs, text, no)
``rules``            R    its :class:`~curate.core.rules.RuleSet`: the rules (code, category,
                          severity, fix availability, ``invalid``: findings make a record
                          unpublishable), the shared tables they read, the checks run before
                          any rule (``@RULES.prepare``)
``card``             D    :class:`CardDefaults`: title, license, task categories, language of
                          its cards (no title, ``unknown``, none, none)
``card_for``         D    the card defaults for the data loaded, where the data tells more
                          (the modalities a manifest has) (``card``)
``read``             R    how to load: paths and validated options to a
                          :class:`~curate.core.dataset.LoadedDataset` (its tables, schema
                          findings; the data class also says each record's split,
                          ``record_splits``, and the files it names, ``named_files``)
``sniff``            D    how to recognise its input when another family is asked (never)
``to_tables``        R    the valid records per split in the published layout (a stream may cap
                          its parquet row groups, ``SplitStream.row_group_bytes``)
``keys``             D    its :class:`~curate.core.keys.Keys`: what identifies a record, for
                          the shared duplicate and leakage rules and ``curate overlap`` (none)
``invalid_records``  D    the records not to publish: the findings of the ``invalid`` rules on
                          the data (a family whose records are not the findings' rows, icrl's
                          histories, overrides it)
``output_note``      D    the card's sentence on the written layout; may refuse (exit 2) before
                          the audit, when the options ask for a layout the data cannot take ("")
``card_sections``    D    the card's own lines about an export, after ``to_tables`` (none)
``summarise``        D    headline figures into ``report.stats``/``report.headlines`` at the end
                          of every audit (none)
``plots``            D    the HTML report's plots, drawn after the audit (none)
===================  ===  =====================================================================

Fix members (the one fix route, :mod:`curate.core.fixes`; listed apart because they are the
fix route's and only ``curate fix`` reads them): ``fix_frame`` (the records as a frame, required
to fix), ``write_fixed`` (the writer of the family's format; parquet of ``fix_tables`` by
default), ``fix_tables``, ``fix_original``, ``reaudit_options``, ``fix_summary``,
``fix_passes``; ``fix`` is the engine's entry point. ``curate diff`` reads the same frame, so
that a diff names the records and fields a changelog names: ``diff_frame`` (default: the fix
frame), ``diff_reader`` (the same, read later) and ``diff_spec`` (how records pair across two
versions: stable ids or positions, the content key of a re-keyed record;
:mod:`curate.core.diff`).

Provided, not overridden: :meth:`Family.options` (validate options), :meth:`Family.load` (the
``load`` preamble once, then ``read``), :meth:`Family.audit` (the engine). A family declaring
a member of an earlier contract (``title``, ``license``, ``task_categories``, ``invalid_rules``,
``check_command``, ...) is refused when its class is defined (:data:`RETIRED` says what replaced
each), so that a plug-in written for the old contract fails loudly instead of being silently
ignored.

Why these stay apart (judged, not counted): three hooks fail fast, at three moments with three
inputs — the options model's ``check_command`` before any input is read (fix and export),
``output_note`` once the data is read and before the audit (fix and export), ``@RULES.prepare``
before the rules of every audit. One ``check(stage, ...)`` would take the union of their
arguments and return a sentence at one stage only; each now sits with what it checks (options,
card, rules). ``summarise`` and ``plots`` stay two: the summary is part of every audit (its
figures are in every report), the plots are drawn only for HTML, later, on a context that does
not keep the audit's shared tables alive in the report; one hook would either draw plots for
every audit or keep those tables in memory as long as the report lives. ``output_note`` and
``card_sections`` stay two: the note must refuse before the audit, the sections describe what
``to_tables`` wrote.

The data types of the contract (:class:`LoadedDataset`, :class:`FixResult`,
:class:`ChangeEntry`) live in :mod:`curate.core.dataset`, below the rules that read and produce
them.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa

from curate.core.dataset import ChangeEntry, FixResult, LoadedDataset, Written
from curate.core.diff import Batches, DiffSpec, Prehashed, source_diff
from curate.core.errors import CurateWarning, InputError, UsageError, arg, clip, quoted
from curate.core.findings import Report
from curate.core.keys import Keys
from curate.core.options import FamilyOptions, parse_options
from curate.core.rules import AuditContext, Rule, RuleSet
from curate.core.streams import SplitData, SplitStream

if TYPE_CHECKING:
    from curate.core.plots import Plot
    from curate.io.sniff import Probe

Progress = Callable[[str, int], None]

#: Attributes of an earlier contract a family no longer declares, and what replaced each
#: (:meth:`Family.__init_subclass__` refuses them).
RETIRED: dict[str, str] = {
    "invalid_rules": "declare the rules with RuleSet.rule(..., invalid=True)",
    "title": "declare card = CardDefaults(title=...)",
    "license": "declare card = CardDefaults(license=...)",
    "task_categories": "declare card = CardDefaults(task_categories=...)",
    "inputs_help": "declare inputs = InputSpec(help=...)",
    "text_inputs": "declare inputs = InputSpec(text=...)",
    "names_inputs": "declare inputs = InputSpec(names_files=...)",
    "max_row_group_bytes": "set SplitStream(..., row_group_bytes=...) in to_tables",
    "check_command": "override check_command(command, paths) of the Options model",
    "prepare": "register the check with the rules: @RULES.prepare",
    "record_splits": "give the data class a record_splits() method (LoadedDataset)",
    "overlap_keys": "declare keys = (Keys(...).read_by(build), ...)",
    "fix_writes_files": "override write_fixed(frame, data, folder, changes) to write your format",
    "fix_files": "override write_fixed(frame, data, folder, changes) to write your format",
}


def check_not_blank(path: str | Path) -> None:
    """Raise :func:`no_records` for a file holding nothing but whitespace (a zero-byte dump).

    The readers would each word it their own way ("empty CSV", "empty file"); it is the same
    defect as a header-only table, so it gets the same line. Only small files are read.
    """
    p = Path(path)
    if p.is_file() and p.stat().st_size <= 4096 and not p.read_bytes().strip():
        raise no_records(path, "empty file")


def no_records(path: str | Path, why: str | None = None) -> InputError:
    """The error for an input that holds no record (header-only CSV, ``[]``, empty parquet).

    Why an error and not an empty report: "no findings in 0 records" reads as a clean bill of
    health, but a file that lost its rows (a failed dump, a wrong path into a split folder) is
    exactly what a release check must stop. Every family raises it for every command. The
    message does not repeat the path: the error carries it, and the CLI prints it first.
    """
    return InputError("no records" + (f" ({why})" if why else ""), path=path)


def unmatched_split_map(split_map: dict[str, str], written: set[str], column: str) -> None:
    """Warn of each ``--split-map`` value that no row's ``column`` holds (``written``: the
    values as written, stripped and lower-cased): a typo (``Flase=train``) mapped nothing, and
    the rows it meant stayed where they were. The table and deepfake families both map."""
    missing = [k for k in split_map if k.strip().lower() not in written]
    if missing:
        warnings.warn(
            f"{arg('--split-map')}: no row's {column} is "
            + ", ".join(quoted(k) for k in missing)
            + " (the values: "
            + ", ".join(quoted(v) for v in sorted(written)[:8])
            + (", ..." if len(written) > 8 else "")
            + ")",
            CurateWarning,
            stacklevel=3,
        )


def count_invalid(invalid: pl.DataFrame) -> int:
    """How many records :meth:`Family.invalid_records` names (one record may have several
    findings; a finding without a row, such as a malformed column header, counts once)."""
    return sum(invalid_counts(invalid))


def invalid_counts(invalid: pl.DataFrame) -> tuple[int, int]:
    """``(records, columns)`` that :meth:`Family.invalid_records` names: the records (one may
    have several findings; a finding with neither row nor field counts once) and the columns
    (a finding with a field but no row: a glycan column whose header does not parse), so that
    what a card and ``export`` say adds up to what was read."""
    rows = invalid.filter(pl.col("row").is_not_null())["row"].n_unique()
    whole = invalid.filter(pl.col("row").is_null()).select("record", "field").unique()
    columns = whole.filter(pl.col("field").is_not_null() & (pl.col("field") != "")).height
    return rows + whole.height - columns, columns


def left_out(invalid: pl.DataFrame) -> str:
    """What an export left out, as a count a person reads: ``2 invalid records``, ``1 invalid
    record and 1 invalid column``."""
    records, columns = invalid_counts(invalid) if invalid.height else (0, 0)
    said = f"{records:,} invalid record{'s' if records != 1 else ''}"
    if columns:
        said += f" and {columns:,} invalid column{'s' if columns != 1 else ''}"
    return said


def describe_invalid(invalid: pl.DataFrame, total: int) -> str:
    """One line for ``--strict``: how many records are invalid and where the first one is."""
    first = invalid.row(0, named=True)
    where = ", ".join(
        x
        for x in (
            first["file"],
            f"record {clip(str(first['record']), digest=True)}"
            if first["record"] is not None
            else None,
            f"field {clip(first['field'])}" if first["field"] else None,
        )
        if x
    )
    message = clip(" ".join(str(first["message"]).split()))
    n = count_invalid(invalid)
    return (
        f"{n} of {total} records are invalid, nothing written ({arg('--strict', True)}); "
        f"first: {where}: {first['rule']} {message}"
    )


def invalid_section(invalid: pl.DataFrame, *, report_name: str = "audit.json") -> list[str]:
    """Dataset-card lines saying which invalid records were left out, per rule."""
    n = count_invalid(invalid)
    if not n:
        return []
    per_rule = (
        invalid.group_by("rule")
        .agg(pl.col("record").n_unique().alias("records"))
        .sort("rule")
        .iter_rows()
    )
    where = f"each one is listed in `{report_name}`"
    if report_name != "audit.json":  # curate fix
        where += "; `curate fix` keeps each one whole in `changelog.jsonl`"
    lines = [
        "## Invalid records left out",
        "",
        f"{left_out(invalid)} of the input failed the schema or could not be "
        f"parsed and are not in this dataset ({where}).",
        "",
        "| rule | records |",
        "|---|---:|",
    ]
    lines += [f"| {rule} | {count} |" for rule, count in per_rule]
    return [*lines, ""]


def with_splits(
    changes: list[ChangeEntry], invalid: pl.DataFrame, data: LoadedDataset
) -> list[ChangeEntry]:
    """``changes`` with each record left out as invalid given its split (``train`` where it has
    none, as export publishes such a record), found by its row in ``data.record_splits()``; a
    record not among them (unreadable) takes the one split every record read is in, if so.

    Why: a diff counts changes per split, and a record left out carried no split, so a
    validation row dropped as invalid was counted under "(none)"."""
    splits = data.record_splits()
    if splits is None or invalid.is_empty() or not changes:
        return changes
    rows = invalid.select("row", "record").drop_nulls("row").unique("row", keep="first")
    where = rows.join(
        splits.select("row", pl.col("split").cast(pl.String).fill_null("train")),
        on="row",
        how="left",
    )
    # a record the family could not read at all (MQuAKE's KE001) has no row among the
    # records: where every record read is in one split, it was in that one too ("(none): 4
    # removed" beside "train: 1 removed" for a file without splits: a new-user review)
    known = splits["split"].cast(pl.String).fill_null("train").unique()
    only = known.item() if known.len() == 1 else None
    of = {
        r: s if s is not None else only
        for r, s in zip(where["record"].to_list(), where["split"].to_list(), strict=True)
    }
    return [
        dataclasses.replace(c, split=of[c.record])
        if c.new is None and c.record in of and of[c.record] is not None
        else c
        for c in changes
    ]


@dataclass(frozen=True)
class CardDefaults:
    """What a family's dataset cards say unless the user says otherwise, declared once.

    ``title`` names the family's data: the description of every card ``export`` and ``fix``
    write opens with it, and ``--help`` shows it. ``license`` is the card's license (an SPDX
    id or ``unknown``; ``export --license`` overrides it). ``task_categories`` are the Hub's
    task categories, also the Croissant file's keywords.

    Why one declaration and not three attributes of :class:`Family`: they are read together,
    by the commands that write a card (:mod:`curate.api`), and a family says them together,
    next to nothing else. Why here and not in :mod:`curate.publish`: a family may not import
    the publishing layer above it; publishing gets them as a
    :class:`~curate.publish.metadata.CardInfo` that :mod:`curate.api` fills from these.
    """

    title: str = ""
    license: str = "unknown"
    task_categories: tuple[str, ...] = ()
    #: The language of the family's text, when the family fixes it (MQuAKE: English);
    #: ``--language`` overrides it.
    language: tuple[str, ...] = ()


@dataclass(frozen=True)
class InputSpec:
    """What a family's commands read, as the CLI and the output gate must know it before
    anything is read.

    ``help``: what the PATHS argument says they take; None: the core's record inputs (files,
    dataset folders, ``FOLDER:CONFIG``, ``hf://``, ``-``). A family with its own format says
    what it takes, so ``--help`` never offers what it refuses. ``text``: the inputs are text
    formats (JSON, CSV), so the commands offer ``--encoding``. ``names_files``: the data names
    more files the run reads (a deepfake manifest's media), known only once it is loaded
    (:meth:`~curate.core.dataset.LoadedDataset.named_files`): the output gate waits for them
    before it calls a target "not written by curate", which may be one of those inputs.

    Why one declaration: the three are facts about the family's input format, said once,
    next to its reader (:meth:`Family.read`) and its recogniser (:meth:`Family.sniff`).
    """

    help: str | None = None
    text: bool = True
    names_files: bool = False
    #: The family also reads tables given in memory (a polars or pandas DataFrame, a pyarrow
    #: Table, a ``datasets.Dataset``/``DatasetDict``) through the API, not only paths.
    frames: bool = False


class Family(ABC):
    """A dataset family: its names, options, reader, tables, keys, rules, card and report
    figures; the members and their defaults are listed in the module's docstring."""

    name: str
    aliases: tuple[str, ...] = ()
    rules: RuleSet
    #: What the family's dataset cards say by default: title, license, task categories.
    card: CardDefaults = CardDefaults()
    #: The family's options model (see :mod:`curate.core.options`); the CLI builds its flags from
    #: it.
    Options: type[FamilyOptions] = FamilyOptions
    #: How many fix passes (apply, re-audit) ``curate fix`` runs at most before it reports the
    #: fixes as not converged; None: the engine's default (:data:`curate.core.fixes.MAX_PASSES`).
    fix_passes: int | None = None
    #: What the family's commands read: PATHS' help, text or not, data naming more files.
    inputs: InputSpec = InputSpec()
    #: The keys the family declares (:class:`~curate.core.keys.Keys`), listed once: those with a
    #: ``table`` builder are what ``curate overlap --key NAME`` compares the family's datasets
    #: by (its ``doc`` says why equal keys are the same thing; ``text`` allows
    #: ``--near-duplicates``). None by default (``--key column:NAME`` works for any table).
    keys: tuple[Keys, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a family that declares an attribute the contract no longer has: set on a
        subclass it would be silently ignored (the card would say ``unknown``, an invalid record
        would be published), so it is an error when the class is defined, naming what replaced
        it."""
        super().__init_subclass__(**kwargs)
        for name, instead in RETIRED.items():
            if name in vars(cls):
                raise TypeError(
                    f"{cls.__qualname__}.{name} is no longer part of the Family contract: {instead}"
                )

    def sniff(self, probe: Probe) -> str | None:
        """Does ``probe`` look like this family's input? A noun phrase saying what it is
        (``"a glycan table"``) when it does, else None; None by default.

        Asked by another family that found not one of its own records in the first batch of an
        input (:func:`other_family_hint`), so that the error names the family to use. Must be
        cheap and certain rather than clever: column names, record keys, a file signature (the
        probe holds the first bytes and the first records' keys); never a full read, and better
        None than a wrong suggestion.
        """
        return None

    def options(
        self, given: FamilyOptions | dict[str, Any] | None = None, **raw: Any
    ) -> FamilyOptions:
        """Validated options from a model, a dict and/or keywords; unknown names exit 2."""
        return parse_options(self.Options, self.name, given, **raw)

    def load(
        self,
        paths: Sequence[str | Path] | str | Path,
        options: FamilyOptions | None = None,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
        **raw: Any,
    ) -> LoadedDataset:
        """Read and validate inputs. Raises InputError for unusable input.

        ``options`` (or keyword arguments naming its fields) are checked with :meth:`options`
        first, so a misspelt option is an error before any file is read; one path may be given
        bare; no path is a usage error. Why a template: those steps were written out in every
        family, and a family that forgot one took a string for a list of one-letter paths. The
        family reads in :meth:`read`; the options it was read with are set on the result.
        """
        opts = self.options(options, **raw)
        if isinstance(paths, str | Path):
            paths = [paths]
        if not paths:
            raise UsageError("no input given")
        data = self.read(
            list(paths), opts, progress=progress, keep_records=keep_records, encoding=encoding
        )
        data.options = opts
        return data

    @abstractmethod
    def read(
        self,
        paths: list[str | Path],
        options: FamilyOptions,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
    ) -> LoadedDataset:
        """The family's reader, called by :meth:`load` with validated options and at least one
        path: the inputs as a :class:`LoadedDataset` (schema findings kept). ``keep_records``:
        keep what fixes need to log a record whole; ``encoding``: the text inputs' encoding
        (None: detected)."""

    @abstractmethod
    def to_tables(self, data: LoadedDataset) -> dict[str, SplitData]:
        """The valid records per split (Arrow tables or :class:`SplitStream`), in the family's
        published layout."""

    def output_note(self, data: LoadedDataset) -> str:
        """A sentence the card's (and croissant's) description adds about how the written
        records are laid out (e.g. which of a family's layouts); nothing by default. May raise
        :class:`~curate.core.errors.UsageError` when the options ask for a layout the data cannot
        take: it is called before the long work of writing."""
        return ""

    def fix(
        self,
        data: LoadedDataset,
        report: Report,
        options: FamilyOptions | None = None,
        *,
        select: Sequence[str] = (),
        ignore: Sequence[str] = (),
        unsafe: bool = False,
        progress: Progress | None = None,
        workdir: Path | None = None,
        **raw: Any,
    ) -> FixResult:
        """Apply the edits ``report``'s findings propose (:mod:`curate.core.fixes`), re-audit,
        repeat.

        ``select``/``ignore`` choose rules as in ``audit``; ``unsafe`` also applies fixes marked
        unsafe. Never modifies ``data`` or the inputs. The family contributes only the records
        as a frame (:meth:`fix_frame`), the writer of its format (:meth:`write_fixed`; by default
        parquet of :meth:`fix_tables`) and its side files (:meth:`fix_summary`); what changes is
        decided by the findings alone. ``workdir``: where the passes are written (a staging
        folder of the output gate; default a temporary one); a family that writes its own
        files leaves the last pass's there (:attr:`FixResult.files`).
        """
        from curate.core.fixes import FixChoice, fix_figures, run_fixes

        opts = self.options(options or data.options, **raw)
        # one string is one selector (``select="KE2"``), not its characters
        choice = FixChoice(
            (select,) if isinstance(select, str) else tuple(select),
            (ignore,) if isinstance(ignore, str) else tuple(ignore),
            unsafe,
        )
        kw = {"max_passes": self.fix_passes} if self.fix_passes else {}
        run = run_fixes(self, data, report, opts, choice, progress=progress, workdir=workdir, **kw)
        summary = fix_figures(run, data, self.rules.invalid)
        diff = source_diff(self, data, run.frame)
        extra, more = self.fix_summary(run, data, opts)
        summary.update(more)
        written = run.written
        return FixResult(
            # per-split streams like export's (the fixed records themselves are in memory)
            tables={k: SplitStream.from_table(t) for k, t in run.tables.items()},
            changelog=run.changelog,
            extra_files=extra,
            summary=summary,
            after=run.after,
            records=written.records if written is not None and written.files else None,
            files=dict(written.files) if written is not None else {},
            configs=written.configs if written is not None else None,
            diff=diff,
        )

    def card_sections(self, data: LoadedDataset, options: FamilyOptions) -> list[str]:
        """Card lines of the family's own about an export (after :meth:`to_tables`): what a row
        is, how many were written. None by default."""
        return []

    def fix_frame(
        self, data: LoadedDataset, invalid: pl.DataFrame
    ) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """The valid records as one frame for :func:`curate.core.fixes.apply_edits` (bookkeeping
        columns ``__row``, ``__record``, ``__split`` plus the record's columns), and a changelog
        entry for each record of ``invalid`` left out (logged whole, as read)."""
        raise NotImplementedError(f"family {self.name} has no fixes")

    def fix_tables(self, frame: pl.DataFrame, data: LoadedDataset) -> dict[str, pa.Table]:
        """The fixed records in the published layout, per split, each split in frame order."""
        raise NotImplementedError(f"family {self.name} has no fixes")

    def write_fixed(
        self,
        frame: pl.DataFrame,
        data: LoadedDataset,
        folder: Path,
        changes: Sequence[ChangeEntry],
    ) -> Written:
        """Write one fix pass's records (``frame``, after the edits) into ``folder`` in the
        family's format, for the engine to read back with :meth:`load` and re-audit.

        By default parquet of :meth:`fix_tables`, one file per split (the published shards are
        written from the last pass's tables by the export writer). A family with a format of its
        own (HDF5 learning histories) writes its files and names them in
        :attr:`~curate.core.dataset.Written.files`: the last pass's files are published as
        they are. ``data`` is what the pass started from (the input, or the previous pass's
        files), ``changes`` the changelog so far (to attribute what the format itself
        changes, returned in :attr:`~curate.core.dataset.Written.changes`).
        """
        from curate.core.fixes import write_parquet

        tables = self.fix_tables(frame, data)
        write_parquet(tables, folder)
        return Written(tables=tables)

    def card_for(self, data: LoadedDataset) -> CardDefaults:
        """What this data's card says by default: :attr:`card`, unless the family can tell
        from the data (a deepfake manifest of audio alone is not a video dataset)."""
        return self.card

    def diff_frame(self, data: LoadedDataset) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """The records ``curate diff`` compares: by default the fix engine's frame
        (:meth:`fix_frame`), so that a diff names the records and fields the changelog names,
        and the records that fail the schema (left out of the frame, logged whole)."""
        invalid = self.invalid_records(data)
        frame, changes = self.fix_frame(data, invalid)
        return frame, with_splits(changes, invalid, data)

    def diff_reader(
        self, data: LoadedDataset
    ) -> Callable[[], tuple[pl.DataFrame | Batches | Prehashed, list[ChangeEntry]]]:
        """:meth:`diff_frame` to be called later: the records (a frame, or a function that
        yields them batch by batch, each call from the start, or those batches with the keys
        the load hashed, :class:`~curate.core.diff.Prehashed`: a reader that adds its batches'
        Arrow to :func:`~curate.core.diff.column_hashes` while loading spares the diff a pass)
        and the invalid ones. A family
        whose loaded tables or values are large returns a reader that holds neither
        (knowledge editing: the ids, splits and paths, the values read from the files batch by
        batch), so that ``curate diff`` lets the loaded data go before it reads the values
        and never holds a whole side's values: its peak is its load's, not load plus values."""
        return lambda: self.diff_frame(data)

    def diff_spec(self, data: LoadedDataset) -> DiffSpec:
        """How this family's records are paired across two versions
        (:class:`~curate.core.diff.DiffSpec`); by default ids are stable and only identical
        records pair when an id changed."""
        return DiffSpec()

    def fix_original(self, data: LoadedDataset, row: int, cells: dict[str, Any]) -> Any:
        """The whole record as the changelog keeps it when a fix drops it (default: its cells)."""
        return cells

    def reaudit_options(
        self, options: FamilyOptions, data: LoadedDataset | None = None
    ) -> FamilyOptions:
        """The options for re-auditing fixed data (default: the same); ``data`` is the input
        as read (e.g. where its relative media paths are resolved)."""
        return options

    def fix_summary(
        self, run: Any, data: LoadedDataset, options: FamilyOptions
    ) -> tuple[dict[str, bytes], dict[str, Any]]:
        """Side files to write beside the fixed data and family figures for the summary."""
        return {}, {}

    def invalid_records(self, data: LoadedDataset) -> pl.DataFrame:
        """Findings of the invalid rules (declared ``invalid=True``, :attr:`Rule.invalid`) on
        ``data``: the records that must not be published.

        Computed from the data (the rules are re-run, all cheap), not taken from a report, so a
        report narrowed with ``--select`` can never let an invalid record through. Columns:
        ``rule, row, record, field, message, file``; sorted by row (findings on a whole column,
        such as an interaction matrix's glycan header, have no row and come last).
        """
        frames = []
        for code in self.rules.invalid:
            rule = self.rules[code]
            ctx = AuditContext(data, data.options or self.options(), self.rules.tables)
            out = rule.run(data, ctx.for_rule(rule))
            if out.height:
                frames.append(out.with_columns(pl.lit(code).alias("rule")))
        schema = {
            "rule": pl.String,
            "row": pl.Int64,
            "record": pl.String,
            "field": pl.String,
            "message": pl.String,
            "file": pl.String,
        }
        if not frames:
            return pl.DataFrame(schema=schema)
        found = pl.concat(frames, how="diagonal_relaxed").with_columns(
            pl.col("details").cast(pl.String).str.json_path_match("$.file").alias("file")
        )
        return (
            found.select([pl.col(c).cast(t) for c, t in schema.items()])
            .with_row_index("__i")
            .sort(["row", "__i"], nulls_last=True)
            .drop("__i")
        )

    def audit(
        self,
        data: LoadedDataset,
        options: FamilyOptions | None = None,
        *,
        select: Sequence[str] | None = None,
        ignore: Sequence[str] | None = None,
        progress: Progress | None = None,
        **raw: Any,
    ) -> Report:
        """Run the selected rules and collect their findings into one :class:`Report`.

        Options default to those the data was loaded with. The rule set's ``prepare`` checks
        run first, then each rule, with an :class:`~curate.core.rules.AuditContext` serving the
        shared tables it declared; :meth:`summarise` then reads the same context for the
        family's figures. The context is not kept on the report (its tables can be large).
        """
        if options is None and not raw and data.options is not None:
            opts = data.options
        else:
            opts = self.options(options, **raw)
        unavailable = opts.unavailable_tables()
        chosen: list[Rule] = [
            r for r in self.rules.select(select, ignore) if not unavailable.intersection(r.needs)
        ]
        ctx = AuditContext(data, opts, self.rules.tables)
        durations: dict[str, float] = {}

        def timed(stage: str, step: Callable[[], Any]) -> Any:
            # a shared table is a stage of its own, charged once, not to whichever step first
            # asked for it
            built, tables_before = set(ctx.seconds), ctx.table_seconds()
            t0 = time.perf_counter()
            out = step()
            took = time.perf_counter() - t0
            for name in [n for n in ctx.seconds if n not in built]:
                durations[f"table:{name}"] = ctx.seconds[name]
            durations[stage] = took - (ctx.table_seconds() - tables_before)
            return out

        timed("prepare", lambda: self.rules.run_prepare(ctx))
        frames = []
        for i, rule in enumerate(chosen):
            if progress:  # "rule 3/21: KE101 hop-count-mismatch", and 2 rules done
                progress(f"rule {i + 1}/{len(chosen)}: {rule.code} {rule.name}", i)

            def run_rule(rule: Rule = rule) -> pl.DataFrame:
                return rule.run(data, ctx.for_rule(rule))

            out = timed(rule.code, run_rule)
            frames.append(
                out.with_columns(
                    pl.lit(rule.code).alias("rule"),
                    pl.lit(rule.category).alias("category"),
                    pl.lit(rule.severity.value).alias("severity"),
                )
            )
        findings = (
            pl.concat(frames, how="diagonal_relaxed")
            if frames
            else pl.DataFrame(schema={"rule": pl.String})
        )
        from curate.core.findings import FINDING_SCHEMA

        findings = findings.select(
            [
                pl.col(c).cast(t) if c in findings.columns else pl.lit(None, t).alias(c)
                for c, t in FINDING_SCHEMA.items()
            ]
        )
        report = Report(
            family=self.name,
            inputs=data.inputs,
            findings=findings,
            rules_run=[r.code for r in chosen],
            options=opts.public("audit"),
            stats=dict(getattr(data, "stats", {})),
            durations=durations,
        )
        timed("summary", lambda: self.summarise(report, ctx))
        return report

    def summarise(self, report: Report, ctx: AuditContext) -> None:
        """Add the family's headline figures to ``report.stats`` and its summary sentences to
        ``report.headlines``, at the end of every audit, on the audit's own context (the shared
        tables the rules built); nothing by default. Not merged with :meth:`plots`: see the
        module's docstring."""
        return None

    def plots(self, data: LoadedDataset, report: Report, ctx: AuditContext) -> list[Plot]:
        """The family's plots for the HTML report (``--format html``), after the findings-per-
        rule plot every report has; none by default.

        Draw them from what the audit already holds — ``data``'s tables and the shared tables
        (``ctx.table(name)`` builds one only if no rule did) — never by reading the input again,
        and aggregate in polars before drawing (a chart gets counts, not rows), so that a
        million-row dataset costs a group-by. Each :class:`~curate.core.plots.Plot` is a title, a
        caption and a matplotlib figure (or SVG/PNG bytes); :mod:`curate.core.plots` has the chart
        shapes (bars, grouped bars, histogram) in curate's fixed style, so the same data gives
        the same bytes.
        """
        return []
