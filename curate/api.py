"""The Python API: what the CLI does, as functions that return data instead of printing.

    import curate

    report = curate.audit("mquake", "MQuAKE-hard.json", edit_set="random:100")
    report.findings            # a polars DataFrame, one row per finding
    report.to_pandas()         # the same as pandas
    result = curate.fix("mquake", "MQuAKE-hard.json", out="remastered/", edit_set="random:100")
    curate.export("glycan", "taxonomy.csv", out="hf/")

Why the CLI is a layer over this module and not the other way round: a notebook, a test or a CI
script needs the findings as a table, not a rendered report to parse; and one implementation of
fix/export means the API can never publish what the CLI would refuse (invalid records, unsafe
output paths). Options are the family's own (see ``curate rules FAMILY`` and
``curate audit FAMILY --help``) and are validated the same way: a misspelt option raises
:class:`~curate.core.errors.UsageError`.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import polars as pl

from curate.core.arguments import checked
from curate.core.dataset import FixResult, LoadedDataset
from curate.core.diff import Diff, DiffSpec, Side, diff_sides, hashing_columns, prepare
from curate.core.errors import ArgumentError, InputError, StrictRefusal, UsageError
from curate.core.findings import Report
from curate.core.memory import release_freed
from curate.core.options import FamilyOptions
from curate.core.outputs import guard_folder, manifest
from curate.families import Family, get_family
from curate.families.base import (
    Progress,
    count_invalid,
    describe_invalid,
    invalid_section,
    left_out,
)
from curate.io.frames import TableLike
from curate.io.read import input_scope

PathLike = str | Path
#: Inputs: paths, and for a family that reads them (``table``) tables in memory.
Paths = PathLike | TableLike | Sequence[PathLike | TableLike]


def _family(family: str | Family) -> Family:
    return family if isinstance(family, Family) else get_family(family)


def _paths(paths: Paths, fam: Family | None = None) -> list[str]:
    """One path or several; a ``str`` is one path, never a sequence of characters.

    Kept as strings: ``hf://datasets/...`` and ``FOLDER:CONFIG`` are not file-system paths.
    A family that reads tables in memory (:attr:`InputSpec.frames`) also takes a DataFrame, a
    pyarrow Table or a ``datasets`` dataset (:mod:`curate.io.frames`) where a path would go.
    """
    from curate.io.frames import as_input, is_frame
    from curate.io.read import check_inputs

    def keep(p: Any) -> str:  # a SplitInput is a str and keeps its split
        if is_frame(p):
            if fam is None or not fam.inputs.frames:
                name = fam.name if fam is not None else "this family"
                raise ArgumentError(
                    f"paths: {name} reads files, not a {type(p).__name__} (the table family "
                    "takes tables in memory)"
                )
            return as_input(p)
        return p if isinstance(p, str) else str(p)

    if isinstance(paths, str | Path) or is_frame(paths):
        out = [keep(paths)]
    else:
        out = [keep(p) for p in paths]
    if not out:
        raise UsageError("paths: no input given (an empty list)")
    check_inputs(out)
    return out


def _stem(path: str) -> str:
    """A readable dataset name from an input: ``data/x.json.gz`` → ``x``, ``hf://.../name``."""
    name = path.rstrip("/").rsplit("/", 1)[-1].split(":")[0] or "dataset"
    for suffix in (".gz", ".zst"):
        name = name.removesuffix(suffix)
    return Path(name).stem or name


def protected_inputs(paths: Sequence[PathLike], options: FamilyOptions) -> list[Path]:
    """Every local file or folder a run reads — the data (the folder behind ``FOLDER:CONFIG``)
    and the files its options name (``ids:``, ``--mapping``) — for the output guard."""
    from curate.io.read import check_inputs, local_input

    names = [str(p) for p in paths]
    check_inputs(names)
    local = [p for p in map(local_input, names) if p is not None]
    return [*local, *options.input_files()]


@checked(family="a family name or a Family")
@input_scope()  # each pipe read once for the whole call
def load(
    family: str | Family,
    paths: Paths,
    *,
    encoding: str | None = None,
    keep_records: bool = False,
    progress: Progress | None = None,
    **options: Any,
) -> LoadedDataset:
    """Read and validate ``paths`` as ``family`` (schema findings are kept, not raised)."""
    fam = _family(family)
    opts = fam.options(**options)
    return fam.load(
        _paths(paths, fam), opts, encoding=encoding, keep_records=keep_records, progress=progress
    )


@checked(
    family="a family name or a Family",
    paths="a path, a list of paths, a table in memory or the data curate.load returned",
)
@input_scope()  # each pipe read once for the whole call
def audit(
    family: str | Family,
    paths: Paths | LoadedDataset,
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    encoding: str | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> Report:
    """Run the family's rules (``select``/``ignore`` as in ``--select``) and return the report.

    ``paths`` may also be data returned by :func:`load`, to audit it several ways without
    reading it again. ``report.durations`` holds the seconds of each stage (``load`` when this
    call read the data, each shared table, each rule).
    """
    fam = _family(family)
    if isinstance(paths, LoadedDataset):
        if paths.family != fam.name:  # its tables and options are another family's
            raise ArgumentError(
                f"paths: data loaded as {paths.family}, audited as {fam.name} (load it with "
                f"curate.load({fam.name!r}, ...))"
            )
        data = paths
        opts = fam.options(data.options, **options) if options else data.options
    else:
        opts = fam.options(**options)  # options are refused before paths, as always
        _, report = read_and_audit(
            fam,
            _paths(paths, fam),
            opts,
            encoding=encoding,
            progress=progress,
            select=select,
            ignore=ignore,
        )
        return report
    return fam.audit(data, opts, select=select, ignore=ignore, progress=progress)


def read_and_audit(
    fam: Family,
    paths: list[str],
    options: FamilyOptions,
    *,
    encoding: str | None = None,
    keep_records: bool = False,
    progress: Progress | None = None,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    loaded: Callable[[LoadedDataset], None] | None = None,
) -> tuple[LoadedDataset, Report]:
    """The one path from files to a report, for :func:`audit` and the CLI's data commands:
    read ``paths`` (already checked) with validated ``options``, call ``loaded`` with the data
    (the CLI's output gate, once the data has named every input), audit, and put the ``load``
    seconds first in ``report.durations`` (the callback's time is not the load's)."""
    t0 = time.perf_counter()
    data = fam.load(paths, options, encoding=encoding, keep_records=keep_records, progress=progress)
    load_seconds = time.perf_counter() - t0
    if loaded is not None:
        loaded(data)
    report = fam.audit(data, options, select=select, ignore=ignore, progress=progress)
    report.durations = {"load": load_seconds, **report.durations}
    return data, report


@dataclass
class Outcome:
    """What :func:`fix` or :func:`export` produced: the report, the tables, where they went."""

    report: Report
    tables: dict[str, Any]
    path: Path | None = None
    fix: FixResult | None = None
    #: Findings of the records left out as invalid (``rule, row, record, field, message, file``).
    invalid: pl.DataFrame = field(default_factory=pl.DataFrame)

    @property
    def invalid_records(self) -> int:
        return count_invalid(self.invalid) if self.invalid.height else 0

    @property
    def rows(self) -> int:
        if self.fix is not None and self.fix.records is not None:
            return self.fix.records
        return sum(getattr(t, "num_rows", None) or 0 for t in self.tables.values())


def _invalid(fam: Family, data: LoadedDataset, strict: bool) -> pl.DataFrame:
    invalid = fam.invalid_records(data)
    if strict and invalid.height:
        total = sum(i.records for i in data.inputs)
        raise StrictRefusal(describe_invalid(invalid, total))
    return invalid


def _require_rows(tables: dict[str, Any], invalid: pl.DataFrame) -> None:
    """Every record invalid: nothing to write, said with the first invalid record."""
    if not any(getattr(t, "num_rows", 1) for t in tables.values()):
        _nothing_written(invalid)


def _nothing_written(invalid: pl.DataFrame) -> None:
    """No record left to write: an error naming the first invalid record, if any was."""
    if invalid.height:
        first = invalid.row(0, named=True)
        raise InputError(
            f"nothing to write: all {count_invalid(invalid)} records are invalid "
            f"(first: {first['rule']} {first['message']})",
            path=first["file"],
            record=first["record"],
            field=first["field"] or None,
        )


@checked(family="a family name or a Family")
@input_scope()  # each pipe read once for the whole call
def fix(
    family: str | Family,
    paths: Paths,
    out: PathLike | None = None,
    *,
    overwrite: bool = False,
    strict: bool = False,
    encoding: str | None = None,
    progress: Progress | None = None,
    command: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    license: str | None = None,
    language: Sequence[str] | None = None,
    source_datasets: Sequence[str] | None = None,
    citation: str | None = None,
    date_published: str | date | None = None,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    unsafe_fixes: bool = False,
    **options: Any,
) -> Outcome:
    """Remaster ``paths``: apply the edits the findings propose, leave out invalid records, and
    (with ``out``) write the Hugging Face folder with ``changelog.jsonl``, the card and both
    reports: ``audit.before.json`` (the input) and ``audit.after.json`` (the fixed data).

    ``select``/``ignore`` choose which rules' fixes run (codes, prefixes, names, categories);
    ``unsafe_fixes=True`` also applies fixes marked unsafe (see ``curate rules``).
    ``license``, ``citation`` and ``date_published`` describe the remaster in its card, as
    for :func:`export`.
    ``strict=True`` raises :class:`StrictRefusal` (nothing written) if any record is invalid.
    """
    from curate.publish.folder import write_files_card, write_hf_folder
    from curate.publish.metadata import CardChoices, CardInfo, named_from

    fam = _family(family)
    opts = fam.options(**options)
    # Card options are checked before the long work: a typo must not cost a whole load.
    chosen = CardChoices.checked(
        license=license,
        language=language,
        source_datasets=source_datasets,
        tags=tags,
        citation=citation,
        date_published=date_published,
    )
    files = _paths(paths, fam)
    opts.check_command("fix", files)
    protected = protected_inputs(files, opts)
    if out is not None:
        guard_folder(
            out, protected, overwrite=overwrite, all_inputs_known=not fam.inputs.names_files
        )
    data = fam.load(files, opts, keep_records=True, encoding=encoding, progress=progress)
    if fam.inputs.names_files:  # a manifest's media: inputs too, known now, before the audit
        protected = [*protected, *map(Path, data.named_files())]
        if out is not None:
            guard_folder(out, protected, overwrite=overwrite)
    note = fam.output_note(data)  # before the audit: a layout the data cannot take exits now
    report = fam.audit(data, opts, progress=progress)
    invalid = _invalid(fam, data, strict)
    shown = opts.public()
    defaults = fam.card_for(data)
    card = CardInfo(
        pretty_name=f"{_stem(files[0])} (remastered by curate)",
        task_categories=defaults.task_categories,
        description=f"{defaults.title}: fixed with `curate fix`"
        + (" (" + ", ".join(f"{k} `{v}`" for k, v in shown.items()) + ")." if shown else ".")
        + (f" {note}" if note else ""),
        source_files=[f"{named_from(i.path, out)} (sha256 {i.sha256})" for i in data.inputs],
        folder=str(out) if out is not None else None,
        extra_sections=invalid_section(invalid, report_name="audit.before.json"),
        **chosen.card_fields(license=defaults.license, language=defaults.language),
        steps=("audited", "fixed"),
    )
    marker = manifest(command or ["curate.fix", fam.name], data.inputs)
    # The passes are written in the output's staging folder (a family's own multi-GB files are
    # then published by a rename, never copied), or a temporary one without ``out``.
    with _fix_folder(out, protected, overwrite, marker) as folder:
        result = fam.fix(
            data,
            report,
            opts,
            select=select or (),
            ignore=ignore or (),
            unsafe=unsafe_fixes,
            progress=progress,
            workdir=folder,
        )
        if result.files:
            if not result.records:
                _nothing_written(invalid)
        else:
            _require_rows(result.tables, invalid)
        if out is not None:
            card.extra_sections += fix_section(result.summary, select, ignore, unsafe_fixes)
            if result.diff is not None:
                from curate.reports.diff import changes_section, render_json

                card.extra_sections += changes_section(
                    result.diff,
                    result.changelog,
                    command=f"curate diff {fam.name} SOURCE THIS_FOLDER",
                )
                result.extra_files["diff.json"] = render_json(result.diff).encode()
            side: dict[str, Any] = {
                "report": report,
                "after": result.after,
                "changelog": result.changelog,
                "extra_files": result.extra_files,
            }
            if result.files:  # the family's own format, written by its writer: the card
                write_files_card(folder, card, result.files, configs=result.configs, **side)
            else:  # records as tables: the export writer's parquet shards
                write_hf_folder(folder, result.tables, card, **side)
    return Outcome(report, result.tables, None if out is None else Path(out), result, invalid)


@contextmanager
def _fix_folder(
    out: PathLike | None, protected: Sequence[Path], overwrite: bool, marker: dict[str, Any]
) -> Iterator[Path]:
    """Where ``fix`` works: the output gate's staging folder for ``out``, else a temporary
    folder removed afterwards."""

    from curate.core.outputs import staged_folder

    if out is None:
        with tempfile.TemporaryDirectory(prefix="curate-fix-") as tmp:
            yield Path(tmp)
    else:
        with staged_folder(out, inputs=protected, overwrite=overwrite, marker=marker) as tmp:
            yield tmp


def fix_section(
    summary: dict[str, Any],
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    unsafe: bool,
) -> list[str]:
    """The card's account of the fix: which rules' fixes ran, how many findings each fixed,
    what was left for ``--unsafe-fixes``, and every edited case a fix dropped."""
    chosen = []
    if select:
        chosen.append("`--select " + ",".join(select) + "`")
    if ignore:
        chosen.append("`--ignore " + ",".join(ignore) + "`")
    lines = [
        "## Fixes",
        "",
        "Fixes of "
        + (" and ".join(chosen) if chosen else "every fixable rule")
        + (", unsafe ones included (`--unsafe-fixes`)." if unsafe else ", safe ones only."),
        "",
    ]
    fixed = summary.get("fixed") or {}
    if fixed:
        lines += ["| rule | edits applied |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in fixed.items()]
        lines.append("")
    held = summary.get("unsafe_fixes_available") or {}
    if held:
        lines += [
            "Not applied (unsafe; `--unsafe-fixes` applies them): "
            + ", ".join(f"{k} {v}" for k, v in held.items())
            + ".",
            "",
        ]
    if summary.get("layout"):
        lines += [f"Layout: {summary['layout']}.", ""]
    for key, value in summary.items():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines += [f"{key.replace('_', ' ').capitalize()}:", ""]
            lines += ["- " + ", ".join(f"{k} `{v}`" for k, v in item.items()) for item in value]
            lines.append("")
    return lines


@checked(family="a family name or a Family")
@input_scope()  # each pipe read once for the whole call
def export(
    family: str | Family,
    paths: Paths,
    out: PathLike,
    *,
    overwrite: bool = False,
    strict: bool = False,
    encoding: str | None = None,
    license: str | None = None,
    pretty_name: str | None = None,
    max_rows_per_shard: int | None = None,
    progress: Progress | None = None,
    command: Sequence[str] | None = None,
    tags: Sequence[str] | None = None,
    language: Sequence[str] | None = None,
    source_datasets: Sequence[str] | None = None,
    citation: str | None = None,
    date_published: str | date | None = None,
    **options: Any,
) -> Outcome:
    """Write the valid records of ``paths`` as a Hugging Face dataset folder at ``out`` (parquet
    shards per split, a card with the audit summary, ``audit.json``); invalid records are left
    out and counted (``strict=True``: :class:`StrictRefusal`, nothing written).

    ``citation`` (BibTeX or a sentence) and ``date_published`` (an ISO date) go into the card
    and the Croissant file (``citeAs``, ``datePublished``) when given: only the user knows them.
    """
    from curate.publish.folder import write_hf_dataset
    from curate.publish.metadata import CardChoices, CardInfo, named_from

    fam = _family(family)
    opts = fam.options(**options)
    # Card options are checked before the long work: a typo must not cost a whole load.
    chosen = CardChoices.checked(
        license=license,
        language=language,
        source_datasets=source_datasets,
        tags=tags,
        citation=citation,
        date_published=date_published,
    )
    files = _paths(paths, fam)
    opts.check_command("export", files)
    protected = protected_inputs(files, opts)
    guard_folder(out, protected, overwrite=overwrite, all_inputs_known=not fam.inputs.names_files)
    data = fam.load(files, opts, encoding=encoding, progress=progress)
    if fam.inputs.names_files:  # a manifest's media: inputs too, known now, before the audit
        protected = [*protected, *map(Path, data.named_files())]
        guard_folder(out, protected, overwrite=overwrite)
    note = fam.output_note(data)  # before the audit: a layout the data cannot take exits now
    report = fam.audit(data, opts, progress=progress)
    invalid = _invalid(fam, data, strict)
    defaults = fam.card_for(data)
    card = CardInfo(
        pretty_name=pretty_name or _stem(files[0]),
        task_categories=defaults.task_categories,
        description=f"{defaults.title}, exported by `curate export`."
        + (f" {note}" if note else ""),
        source_files=[f"{named_from(i.path, out)} (sha256 {i.sha256})" for i in data.inputs],
        folder=str(out),
        extra_sections=invalid_section(invalid),
        **chosen.card_fields(license=defaults.license, language=defaults.language),
        steps=("audited", "exported"),
    )
    tables = fam.to_tables(data)
    card.extra_sections = fam.card_sections(data, opts) + card.extra_sections
    card.extra_sections += export_changes_section(
        fam.name, left_out(invalid) if invalid.height else ""
    )
    _require_rows(tables, invalid)
    written = write_hf_dataset(
        out,
        tables,
        card,
        report=report,
        max_rows_per_shard=max_rows_per_shard,
        overwrite=overwrite,
        inputs=protected,
        marker=manifest(command or ["curate.export", fam.name], data.inputs),
    )
    return Outcome(report, tables, written, None, invalid)


__all__ = [
    "FamilyOptions",
    "Outcome",
    "Report",
    "StrictRefusal",
    "audit",
    "export",
    "fix",
    "load",
]


@checked(
    family="a family name or a Family",
    old="a path, a list of paths or a table in memory",
    new="a path, a list of paths or a table in memory",
)
@input_scope()
def diff(
    family: str | Family,
    old: Paths,
    new: Paths,
    *,
    encoding: str | None = None,
    progress: Progress | None = None,
    **options: Any,
) -> Diff:
    """What differs between two versions of a dataset, record by record (:mod:`curate.core.diff`).

    Each side is anything the family reads (files, folders, a dataset folder curate wrote);
    both are read with the same options. The records compared are the valid ones, as the fix
    engine sees them (:meth:`Family.diff_frame`): a record that fails the schema in ``old`` and
    is gone from ``new`` is *removed* (with why); one valid in ``old`` that fails it in ``new``
    is *removed* too, noted as invalid there (a published version never carries it).

    Why one side at a time: only each side's frame is kept (the loaded data, with its parsed
    records and indexes, is dropped before the other side is read).
    """
    fam = _family(family)
    return compare(fam, old, new, fam.options(**options), encoding=encoding, progress=progress)


def compare(
    fam: Family,
    old: Paths,
    new: Paths,
    opts: FamilyOptions,
    *,
    encoding: str | None = None,
    progress: Progress | None = None,
    audits: bool = False,
    loaded: Callable[[LoadedDataset], None] | None = None,
) -> Diff:
    """:func:`diff` with the family and its options already resolved (the CLI's entry);
    ``audits``: also audit each side and say which findings appeared and which are gone;
    ``loaded``: called with each side's data once it is read (the CLI refuses a report
    destination that the data names as an input there, as ``audit`` does)."""
    names = (_name(old), _name(new))

    def side(
        paths: Paths, against: tuple[Side, DiffSpec] | None = None
    ) -> tuple[Side, DiffSpec, dict[str | None, str]]:
        # no records kept: a family reads its values for the diff from its tables or files
        # (Family.diff_reader), and the loaded data is let go before they are read; a family
        # may hash the values while it loads them (ColumnHashes: one pass fewer) and, with no
        # audit to run, load only what a diff reads (lean: knowledge editing's peak at 1 M
        # cases 2.8 -> 1.6 GB)
        other, ignore = (against[0], against[1].ignore) if against is not None else (None, ())
        with hashing_columns(other, ignore, lean=not audits):
            data = fam.load(_paths(paths, fam), opts, encoding=encoding, progress=progress)
            if loaded is not None:
                loaded(data)
            read = fam.diff_reader(data)
        if audits:
            found.append(fam.audit(data, opts, progress=progress).findings)
        spec = fam.diff_spec(data)
        if against is not None:
            spec = _both(against[1], spec)
        del data
        release_freed()  # the load's freed memory, before the other side's load
        records, invalid = read()
        bad = [(c.record, c.split, c.old, c.reason) for c in invalid]
        side = prepare(
            records,
            invalid=bad,
            # the new side keeps, in its one pass, the values of what may have changed
            against=against[0] if against is not None else None,
            ignore=spec.ignore,
            stable_ids=spec.stable_ids,
        )
        return side, spec, {c.record: c.reason for c in invalid}

    found: list[pl.DataFrame] = []
    a, spec_a, _ = side(old)
    b, spec, bad_new = side(new, (a, spec_a))
    result = diff_sides(a, b, spec, family=fam.name, names=names)
    if audits:
        result.findings = _findings_between(found[0], found[1])
    if bad_new:
        result.changes = [
            dataclasses.replace(c, note=f"invalid in {names[1]}: {bad_new[c.record]}")
            if c.kind == "removed" and c.record in bad_new and not c.note
            else c
            for c in result.changes
        ]
    return result


def _findings_between(old: pl.DataFrame, new: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """The findings only one version's audit has, matched as ``curate check``'s baseline
    matches them (rule, record, field, message with numbers masked; not the file or row, which
    differ between two versions), counted: three of a kind against two is one appeared."""
    from collections import Counter

    from curate.reports.verdict import fingerprint

    def keyed(f: pl.DataFrame) -> list[tuple[str, dict[str, Any]]]:
        cols = ("rule", "record", "field", "message")
        return [
            (fingerprint("", r["rule"], None, r["record"], r["field"], r["message"]), r)
            for r in f.select(cols).iter_rows(named=True)
        ]

    def only_in(
        xs: list[tuple[str, dict[str, Any]]], ys: list[tuple[str, dict[str, Any]]]
    ) -> list[dict[str, Any]]:
        left = Counter(fp for fp, _ in ys)
        out = []
        for fp, r in xs:
            if left[fp] > 0:
                left[fp] -= 1
            else:
                out.append(r)
        return out

    a, b = keyed(old), keyed(new)
    return {"appeared": only_in(b, a), "gone": only_in(a, b)}


def _both(a: DiffSpec, b: DiffSpec) -> DiffSpec:
    """The pairing of two versions from what each family read said of its own."""
    return DiffSpec(
        # a positional id on either side (a CSV read without an id column) pairs nothing
        stable_ids=a.stable_ids and b.stable_ids,
        id_columns=tuple(dict.fromkeys((*a.id_columns, *b.id_columns))),
        content_key=a.content_key,
        ignore=tuple(dict.fromkeys((*a.ignore, *b.ignore))),
    )


def _name(paths: Paths) -> str:
    """How a diff names a side: its path (the first, and how many more)."""
    if isinstance(paths, str | Path):
        return str(paths)
    items = list(paths) if isinstance(paths, Sequence) else [paths]
    first = str(items[0]) if items and isinstance(items[0], str | Path) else "a table"
    return first if len(items) == 1 else f"{first} (+{len(items) - 1} more)"


def export_changes_section(family: str, said: str) -> list[str]:
    """The card's "Changes from the source" of an export: none but the invalid records left
    out (an export publishes what it read; ``curate diff`` of the source and the folder says
    so record by record, which a test checks for every family's sample). ``said``: what was
    left out, as :func:`~curate.families.base.left_out` words it ("" for nothing)."""
    what = (
        f"{said} that fail the schema are left out (see above); every other"
        if said
        else "None: every"
    )
    return [
        "## Changes from the source",
        "",
        f"{what} record is published with the values it was read with "
        f"(`curate diff {family} SOURCE THIS_FOLDER` compares them record by record).",
        "",
    ]
