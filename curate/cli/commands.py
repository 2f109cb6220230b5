"""The data commands — ``validate``, ``audit``, ``fix``, ``export`` — one subcommand per family.

Why per-family subcommands: each family declares its options as a Pydantic model
(:mod:`curate.core.options`), and ``curate audit glycan --help`` must show exactly the glycan
options,
while ``curate audit glycan data.csv --edit-set random:5`` must be a usage error (exit 2) that
lists them, not a flag silently ignored. So ``audit`` is a group whose commands are the families,
built on demand from the family's options model; a family added as a plug-in gets its commands
without touching this file. The command line stays ``curate VERB FAMILY PATHS... [OPTIONS]``.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from curate.cli import terminal
from curate.cli.help import LightCommand, LightGroup, help_text
from curate.cli.terminal import Format
from curate.core.engine import progress_to
from curate.core.errors import counted
from curate.core.outputs import guard_file
from curate.families import get_family
from curate.families.catalogue import (
    OPTION_COMMANDS,
    FamilyEntryInfo,
    OptionEntry,
    all_entries,
    entry_for,
)
from curate.reports import formats

if TYPE_CHECKING:
    from curate.core.dataset import LoadedDataset
    from curate.core.findings import Report
    from curate.core.options import FamilyOptions
    from curate.families import Family

#: The command line of this run, for the output folder's marker (set by ``curate.cli.main``).
COMMAND_LINE: list[str] = []


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


# Strings, not Paths: a Path folds hf://datasets/... into hf:/datasets/... (see curate.io.read).
PathsArg = Annotated[
    list[str],
    typer.Argument(
        help="Files or dataset folders to read: a path, FOLDER:CONFIG, hf://datasets/OWNER/NAME "
        "(or a file in it), or - for standard input (.gz and .zst files are decompressed).",
        metavar="PATHS",
    ),
]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--select",
        help="Only these rules: codes, prefixes, names or categories (repeatable, or a,b).",
        metavar="RULES",
    ),
]
IgnoreOpt = Annotated[
    list[str] | None,
    typer.Option("--ignore", help="Skip these rules (repeatable, or a,b).", metavar="RULES"),
]
EncodingOpt = Annotated[
    str | None,
    typer.Option(
        "--encoding",
        metavar="ENCODING",
        help="Text encoding of JSON, JSON Lines and CSV inputs, e.g. latin-1, cp1252, utf-16 "
        "(default: UTF-8, or what a byte order mark says).",
    ),
]
FormatOpt = Annotated[
    Format,
    typer.Option(
        "--format",
        "-f",
        help=formats.format_help(),
        case_sensitive=False,
    ),
]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "--out",
        "-o",
        metavar="FILE",
        help="Write the report here (atomically; an existing file only if curate wrote it, "
        "or with --overwrite; never over an input).",
    ),
]
OverwriteOpt = Annotated[
    bool,
    typer.Option(
        "--overwrite",
        help="Replace --out if it is a folder curate wrote earlier (other folders are refused).",
    ),
]
OverwriteFileOpt = Annotated[
    bool,
    typer.Option(
        "--overwrite",
        help="Replace an existing --output file curate did not write (its own reports are "
        "replaced anyway; an input of the run never is).",
    ),
]
StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Refuse (exit 1, nothing written) if any record fails the schema or cannot be "
        "parsed, instead of leaving such records out.",
    ),
]
TagOpt = Annotated[
    list[str] | None,
    typer.Option("--tag", help="A tag for the dataset card (repeatable).", metavar="TAG"),
]
LanguageOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--language",
        help="Language of the data, an ISO 639 code such as en (repeatable).",
        metavar="CODE",
        autocompletion=lambda incomplete: _languages(incomplete),
    ),
]


def _languages(incomplete: str) -> list[str]:
    """What ``--language <TAB>`` offers: the codes the Hub knows (``datasets``' own
    ``languages.json``, what the export checks against). The file is found beside the installed
    package, which is not imported: importing ``datasets`` takes longer than a shell waits."""
    import importlib.util
    import json

    spec = importlib.util.find_spec("datasets")
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / "utils" / "resources" / "languages.json"
        try:
            codes = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        return sorted(c for c in codes if c.startswith(incomplete.lower()))
    return []


SourceDatasetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--source-dataset",
        help="What the data is based on, for the card's source_datasets (repeatable): "
        "original, extended, extended|ID or a dataset ID.",
        metavar="SOURCE",
    ),
]
LicenseOpt = Annotated[
    str | None,
    typer.Option(
        "--license",
        help="A Hub licence identifier (apache-2.0, cc-by-4.0, ...); default: the family's.",
        metavar="ID",
        autocompletion=lambda incomplete: _licenses(incomplete),
    ),
]


def _licenses(incomplete: str) -> list[str]:
    """What ``--license <TAB>`` offers: the Hub's licence ids (the dated copy curate ships)."""
    from curate.publish.metadata import hub_licenses

    return [k for k in hub_licenses() if k.startswith(incomplete.lower())]


CitationOpt = Annotated[
    str | None,
    typer.Option(
        "--citation",
        help='How to cite the data, BibTeX or a sentence (e.g. --citation "$(cat ref.bib)"): '
        "the card's Citation section and Croissant's citeAs.",
    ),
]
DatePublishedOpt = Annotated[
    str | None,
    typer.Option(
        "--date-published",
        help="When the data was published, YYYY-MM-DD: Croissant's datePublished.",
        metavar="DATE",
    ),
]
DurationsOpt = Annotated[
    bool,
    typer.Option(
        "--durations",
        help="End the report with the wall time of each stage (load, shared tables, each "
        'rule, render), slowest first; JSON gets a top-level "durations" object.',
    ),
]
FailOnOpt = Annotated[
    FailOn,
    typer.Option(
        "--fail-on", help="Exit 1 when a finding is at least this severe.", case_sensitive=False
    ),
]


# --------------------------------------------------------------------------- shared steps


def load_and_audit(
    fam: Family,
    paths: list[str],
    options: FamilyOptions,
    *,
    keep_records: bool = False,
    encoding: str | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    loaded: Callable[[Any], None] | None = None,
) -> tuple[LoadedDataset, Report]:
    """Loaded data and audit report: the first half of every data command. ``loaded`` is
    called with the data between reading and auditing (the output gate, once the data has
    named every input: a manifest's media are known before the audit hashes them)."""
    from curate.api import read_and_audit
    from curate.io.read import check_inputs

    check_inputs(paths)
    cb = terminal.progress()
    try:
        with progress_to(cb):
            data, report = read_and_audit(
                fam,
                paths,
                options,
                encoding=encoding,
                keep_records=keep_records,
                progress=cb,
                select=select,
                ignore=ignore,
                loaded=loaded,
            )
    finally:  # errors and Ctrl-C too: never leave a bar (or a hidden cursor) on the terminal
        terminal.clear_progress(cb)
    return data, report


def _guard_output(
    output: Path | None,
    paths: list[str],
    options: FamilyOptions,
    overwrite: bool,
    read: list[str] | None = None,
    *,
    fam: Family | None = None,
) -> None:
    """Refuse a report destination before any work: an input (the data, the files its options
    name, and with ``read`` the files the data names besides, such as the media a deepfake
    manifest lists), a folder, an existing file curate did not write (unless ``--overwrite``).

    With ``fam`` whose data names more inputs (:attr:`InputSpec.names_files`), the "not written
    by curate" refusal waits for :func:`_guard_read`: the file may be one of those inputs, and
    must then be refused as one, never with a hint that ``--overwrite`` would do."""
    if output is None or str(output) == "-":
        return
    guard_file(
        output,
        [*_protected(paths, options), *(read or ())],
        overwrite=overwrite,
        all_inputs_known=fam is None or not fam.inputs.names_files,
    )


def _guard_read(
    output: Path | None, paths: list[str], options: FamilyOptions, data: Any, overwrite: bool
) -> None:
    """Once the data is read (every input it names known), and again after the audit, just
    before the report is written: the files the data names that the arguments did not (a
    manifest's media) are inputs too, and the target may have changed while the audit ran (a
    file of someone else's created there meanwhile)."""
    named = data.named_files() if hasattr(data, "named_files") else None
    _guard_output(output, paths, options, overwrite, named)


def _protected(paths: list[str], options: FamilyOptions) -> list[Path]:
    from curate.api import protected_inputs

    return protected_inputs(paths, options)


# --------------------------------------------------------------------------- the commands
# Each takes the family and its validated options first; the rest of its signature becomes the
# subcommand's parameters, followed by the family's options for that command.


def validate(
    fam: Family,
    options: FamilyOptions,
    paths: PathsArg,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    overwrite: OverwriteFileOpt = False,
    encoding: EncodingOpt = None,
    durations: DurationsOpt = False,
) -> None:
    """Check every record against the family's schema (exit 1 if any record is invalid)."""
    _guard_output(output, paths, options, overwrite, fam=fam)
    data, report = load_and_audit(
        fam,
        paths,
        options,
        encoding=encoding,
        # the categories the family has (a plug-in family may have no integrity rule)
        select=[c for c in ("schema", "integrity") if any(r.category == c for r in fam.rules)],
        loaded=lambda data: _guard_read(output, paths, options, data, overwrite),
    )
    _guard_read(output, paths, options, data, overwrite)
    text = terminal.render(report, fmt, output, durations=durations, data=data)
    terminal.emit(text, output, fmt)
    terminal.step_summary(report, fmt)
    raise typer.Exit(1 if report.fails("error") else 0)


def audit(
    fam: Family,
    options: FamilyOptions,
    paths: PathsArg,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    overwrite: OverwriteFileOpt = False,
    fail_on: FailOnOpt = FailOn.error,
    encoding: EncodingOpt = None,
    durations: DurationsOpt = False,
) -> None:
    """Run the family's rules and report findings."""
    _guard_output(output, paths, options, overwrite, fam=fam)
    data, report = load_and_audit(
        fam,
        paths,
        options,
        encoding=encoding,
        select=select,
        ignore=ignore,
        loaded=lambda data: _guard_read(output, paths, options, data, overwrite),
    )
    _guard_read(output, paths, options, data, overwrite)
    text = terminal.render(
        report, fmt, output, durations=durations, fail_on=fail_on.value, data=data
    )
    terminal.emit(text, output, fmt)
    terminal.step_summary(report, fmt, fail_on.value)
    raise typer.Exit(1 if report.fails(fail_on.value) else 0)


def fix(
    fam: Family,
    options: FamilyOptions,
    paths: PathsArg,
    out: Annotated[
        Path, typer.Option("--out", help="Folder for the remastered dataset.", metavar="FOLDER")
    ],
    overwrite: OverwriteOpt = False,
    strict: StrictOpt = False,
    encoding: EncodingOpt = None,
    tag: TagOpt = None,
    license: LicenseOpt = None,
    language: LanguageOpt = None,
    source_dataset: SourceDatasetOpt = None,
    citation: CitationOpt = None,
    date_published: DatePublishedOpt = None,
    select: Annotated[
        list[str] | None,
        typer.Option(
            "--select",
            help="Only these rules' fixes: codes, prefixes, names, categories (repeatable).",
            metavar="RULES",
        ),
    ] = None,
    ignore: Annotated[
        list[str] | None,
        typer.Option("--ignore", help="Not these rules' fixes (repeatable).", metavar="RULES"),
    ] = None,
    unsafe_fixes: Annotated[
        bool,
        typer.Option(
            "--unsafe-fixes",
            help="Also apply fixes marked unsafe (they choose a label, split or value; see "
            "`curate rules`).",
        ),
    ] = False,
) -> None:
    """Write a remastered dataset: the edits the findings propose applied, re-audited, with the
    changelog and both reports (audit.before.json, audit.after.json); inputs are untouched.

    Records that fail the schema or cannot be parsed are dropped and kept whole in the changelog
    (``--strict``: exit 1 and write nothing instead).
    """
    from curate import api

    done = _with_progress(
        api.fix,
        fam,
        paths,
        out,
        overwrite=overwrite,
        strict=strict,
        encoding=encoding,
        tags=tag,
        license=license,
        language=language,
        source_datasets=source_dataset,
        citation=citation,
        date_published=date_published,
        select=select,
        ignore=ignore,
        unsafe_fixes=unsafe_fixes,
        **options.model_dump(exclude_unset=True),
    )
    assert done.fix is not None
    typer.echo(fix_summary_line(out, done))


def _with_progress(call: Any, *args: Any, **kwargs: Any) -> Any:
    """``call`` (``api.fix``/``api.export``) with the terminal's progress bar and this run's
    command line for the output's marker; the bar is cleared on every exit path."""
    cb = terminal.progress()
    try:
        with progress_to(cb):
            return call(*args, progress=cb, command=COMMAND_LINE, **kwargs)
    finally:
        terminal.clear_progress(cb)


def _item(item: dict[str, Any]) -> str:
    """``{"case": 9203, "rule": "KE401", "reason": "..."}`` as ``9203 (KE401: ...)``."""
    first, *rest = (str(v) for v in item.values())
    return f"{first} ({': '.join(rest)})" if rest else first


def fix_summary_line(out: Path, done: Any) -> str:
    """``wrote OUT: N records, M changes (...)`` plus what was left undone and why."""
    s = dict(done.fix.summary)
    fixed = s.pop("fixed", {})
    unsafe = s.pop("unsafe_fixes_available", {})
    layout = s.pop("layout", None)
    parts = [f"{k}={v}" for k, v in s.items() if not isinstance(v, list | dict)]
    line = (
        f"wrote {out}: {counted(done.rows, 'record')}, "
        f"{counted(len(done.fix.changelog), 'change')}"
        + (" (fixed " + ", ".join(f"{k}: {v}" for k, v in fixed.items()) + ")" if fixed else "")
        + ("; " + ", ".join(parts) if parts else "")
    )
    for key, value in s.items():  # lists of records (e.g. edited cases a fix dropped)
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            shown = "; ".join(_item(item) for item in value[:10]) + (
                f"; ... ({len(value)} in all)" if len(value) > 10 else ""
            )
            line += f"\n{key.replace('_', ' ')}: {shown}"
    if layout:
        line += f"\nlayout: {layout}"
    if unsafe:
        n = sum(unsafe.values())
        line += (
            f"\n{n} more fix(es) available with --unsafe-fixes ("
            + ", ".join(f"{k}: {v}" for k, v in unsafe.items())
            + ")"
        )
    if done.fix.after is not None:
        a = done.fix.after.summary()
        line += (
            f"\nre-audit of the fixed data: {counted(a['findings'], 'finding')} (audit.after.json)"
        )
    return line


def export(
    fam: Family,
    options: FamilyOptions,
    paths: PathsArg,
    out: Annotated[
        Path,
        typer.Option("--out", help="Folder for the Hugging Face dataset.", metavar="FOLDER"),
    ],
    max_rows_per_shard: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="At most this many rows per parquet file (files are cut at 500 MB anyway).",
            metavar="N",
        ),
    ] = None,
    pretty_name: Annotated[
        str | None,
        typer.Option(help="The card's title (default: the input's name).", metavar="TEXT"),
    ] = None,
    license: LicenseOpt = None,
    overwrite: OverwriteOpt = False,
    push_to_hub: Annotated[
        str | None,
        typer.Option(
            "--push-to-hub", help="Also upload to this dataset repo.", metavar="OWNER/NAME"
        ),
    ] = None,
    strict: StrictOpt = False,
    encoding: EncodingOpt = None,
    tag: TagOpt = None,
    language: LanguageOpt = None,
    source_dataset: SourceDatasetOpt = None,
    citation: CitationOpt = None,
    date_published: DatePublishedOpt = None,
) -> None:
    """Export the valid records as a Hugging Face dataset folder with an audited dataset card.

    Records that fail the schema or cannot be parsed are left out and counted (on stdout and in
    the card); ``--strict`` refuses instead (exit 1, nothing written).
    """
    from curate import api
    from curate.publish.hub import check_repo_id
    from curate.publish.hub import push_to_hub as push

    if push_to_hub:
        check_repo_id(push_to_hub)  # before the work, not after it
    done = _with_progress(
        api.export,
        fam,
        paths,
        out,
        overwrite=overwrite,
        strict=strict,
        encoding=encoding,
        license=license,
        pretty_name=pretty_name,
        max_rows_per_shard=max_rows_per_shard,
        tags=tag,
        language=language,
        source_datasets=source_dataset,
        citation=citation,
        date_published=date_published,
        **options.model_dump(exclude_unset=True),
    )
    from curate.families.base import left_out

    typer.echo(
        f"wrote {out}: "
        + ", ".join(f"{s}={t.num_rows}" for s, t in done.tables.items())
        + f" ({left_out(done.invalid)} left out)"
    )
    if push_to_hub:
        push(out, push_to_hub)
        typer.echo(f"pushed to {push_to_hub}")


class DiffFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"
    html = "html"
    junit = "junit"
    github = "github"
    sarif = "sarif"


#: ``--fail-on`` of ``curate diff``: any difference, none, or these kinds (and ``columns``):
#: the kinds of :data:`curate.core.diff.KINDS` (a test keeps the two the same; that module
#: imports polars, which ``curate diff --help`` does not need).
DIFF_KINDS = ("added", "removed", "changed", "moved", "rekeyed")
DIFF_FAIL = ("any", "never", *DIFF_KINDS, "columns")


def diff(
    fam: Family,
    options: FamilyOptions,
    old: Annotated[
        str, typer.Argument(help="The earlier version: anything the family reads.", metavar="OLD")
    ],
    new: Annotated[
        str, typer.Argument(help="The later version: anything the family reads.", metavar="NEW")
    ],
    fmt: Annotated[
        DiffFormat,
        typer.Option(
            "--format",
            "-f",
            help="Report format: text, json, markdown or html (side by side); for CI junit, "
            "github or sarif (one CK101 finding per record changed in a --fail-on kind).",
            case_sensitive=False,
        ),
    ] = DiffFormat.text,
    output: OutputOpt = None,
    overwrite: OverwriteFileOpt = False,
    fail_on: Annotated[
        str,
        typer.Option(
            "--fail-on",
            help="Exit 1 when the versions differ (any, the default), never, or only for these "
            "kinds of change, comma-separated: added, removed, changed, moved, rekeyed, columns.",
        ),
    ] = "any",
    encoding: EncodingOpt = None,
    audits: Annotated[
        bool,
        typer.Option(
            "--audits",
            help="Also audit both versions and list the findings that appeared and that are "
            "gone (matched by rule, record, field and message, as a baseline matches them).",
        ),
    ] = False,
) -> None:
    """Compare two versions of a dataset record by record: added, removed, changed (field by
    field), moved between splits, re-keyed (exit 1 when they differ, 0 when identical)."""
    from curate.api import compare
    from curate.reports import diff as render

    kinds = _fail_kinds(fail_on)
    # one version compared with itself is one input to protect, not a file given twice
    paths = list(dict.fromkeys([old, new]))
    _guard_output(output, paths, options, overwrite, fam=fam)
    named: list[str] = []  # the files either side's data names (a manifest's media)

    def loaded(data: Any) -> None:
        named.extend(data.named_files())
        _guard_output(output, paths, options, overwrite, named)

    cb = terminal.progress()
    try:
        with progress_to(cb):
            result = compare(
                fam, old, new, options, encoding=encoding, progress=cb, audits=audits, loaded=loaded
            )
    finally:
        terminal.clear_progress(cb)
    _guard_output(output, paths, options, overwrite, named)  # as it is just before the write
    if fmt.value in ("junit", "github", "sarif"):
        text = formats.get(fmt.value).check(render.as_check(result, kinds, fam.name))
    else:
        text = getattr(render, f"render_{fmt.value}")(result)
    terminal.emit(text, output, fmt.value)
    counts = result.counts()
    hit = any(counts[k] for k in kinds if k in counts) or (
        "columns" in kinds and bool(result.columns_added or result.columns_removed)
    )
    raise typer.Exit(1 if hit else 0)


def _fail_kinds(value: str) -> set[str]:
    """``--fail-on`` as the kinds of change that fail the run (usage error: one line)."""
    from curate.core.errors import UsageError

    given = [v.strip().lower() for v in value.split(",") if v.strip()]
    bad = [v for v in given if v not in DIFF_FAIL]
    if bad or not given:
        raise UsageError(
            f"--fail-on: {', '.join(bad) or 'nothing given'} is not one of {', '.join(DIFF_FAIL)}"
        )
    if "never" in given and len(set(given)) > 1:  # "never,added": which one was meant?
        raise UsageError(f"--fail-on: never cannot be combined with {', '.join(given)}")
    if "never" in given:
        return set()
    if "any" in given:
        return {*DIFF_KINDS, "columns"}
    return set(given)


VERBS: dict[str, Callable[..., None]] = {
    "validate": validate,
    "audit": audit,
    "fix": fix,
    "export": export,
    "diff": diff,
}
assert tuple(VERBS)[: len(OPTION_COMMANDS)] == OPTION_COMMANDS
#: The options a verb that is not an options command takes: ``diff`` reads two versions as
#: ``validate`` reads one (the family's reading options, nothing of audits or writers).
OPTION_VERB = {"diff": "validate"}


# --------------------------------------------------------------------------- building commands


#: A flag's value type by its catalogue kind (``choice``: a Literal of its choices).
_KINDS: dict[str, Any] = {"bool": bool, "int": int, "float": float, "str": str, "path": Path}


#: What a flag's value is called in help, by kind (typer's own say ``<str>``, ``<list[str]>``).
_METAVARS = {"str": "TEXT", "int": "N", "float": "X", "path": "PATH"}


def _flag_type(opt: OptionEntry) -> Any:
    """The type typer parses an option's flag as: its kind, a list when the flag repeats,
    ``| None`` when it may be absent."""
    # a type built at run time: what typer reads, not what a type checker can follow
    base: Any = Literal.__getitem__(opt.choices) if opt.kind == "choice" else _KINDS[opt.kind]
    if opt.repeat:
        return list[base] | None
    return base | None if opt.optional else base


def option_parameters(entry: FamilyEntryInfo, verb: str) -> list[inspect.Parameter]:
    """One keyword parameter per option the verb reads, annotated for typer, from the family's
    catalogue entry (:mod:`curate.families.catalogue`): no import of the family."""
    params = []
    for opt in entry.options_for(verb):
        flag_type = _flag_type(opt)
        # a switch that is off by default (or says "no" itself) is one flag; one that is on
        # by default can be turned off: --resplit/--no-resplit
        pair = opt.kind == "bool" and opt.default is True and not opt.flag.startswith("--no-")
        decls = [f"{opt.flag}/--no-{opt.flag[2:]}"] if pair else [opt.flag]
        typer_opt = typer.Option(
            *decls,
            help=opt.help
            + (" (repeatable)" if opt.repeat and "repeatable" not in opt.help else ""),
            rich_help_panel="Family options",
            metavar=opt.metavar or _METAVARS.get(opt.kind),
            case_sensitive=False,  # --layout ORIGINAL as MQUAKE is: choices ignore case
        )
        params.append(
            inspect.Parameter(
                f"opt_{opt.name}",
                inspect.Parameter.KEYWORD_ONLY,
                default=None if opt.repeat else opt.default,
                annotation=Annotated[flag_type, typer_opt],
            )
        )
    return params


KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY


class EngineName(StrEnum):
    local = "local"
    ray = "ray"


#: ``--engine`` and ``--ray-address``: declared once here, so every verb of every family has
#: them (a family only lists its parallel units; see :mod:`curate.core.engine`).
ENGINE_PARAMETERS = [
    inspect.Parameter(
        "engine",
        KEYWORD_ONLY,
        default=EngineName.local,
        annotation=Annotated[
            EngineName,
            typer.Option(
                "--engine",
                help="Where the expensive parallel stage runs: this machine (local) or a Ray "
                "cluster (ray; needs pip install 'curate[ray]'). Same report either way.",
                rich_help_panel="Engine",
                case_sensitive=False,
            ),
        ],
    ),
    inspect.Parameter(
        "ray_address",
        KEYWORD_ONLY,
        default=None,
        annotation=Annotated[
            str | None,
            typer.Option(
                "--ray-address",
                help="Ray cluster to join (HOST:PORT; auto: any running here; ray://... "
                "needs ray[client]); default: the one RAY_ADDRESS or the latest `ray start` "
                "with Ray's default --temp-dir names, else a new local one for the command "
                "(said on stderr).",
                rich_help_panel="Engine",
                metavar="HOST:PORT",
            ),
        ],
    ),
]


def _family_hint(entry: FamilyEntryInfo, name: str, hint: Any) -> Any:
    """A verb's parameter as the family's command shows it: PATHS says what the family reads."""
    if name == "paths" and entry.inputs_help:
        return Annotated[list[str], typer.Argument(help=entry.inputs_help, metavar="PATHS")]
    return hint


#: What the verbs' first two parameters are annotated with, for :func:`typing.get_type_hints`:
#: only imported by a type checker (they bring polars), and never turned into flags.
_NOT_FLAGS = {"Family": Any, "FamilyOptions": Any}


def family_command(verb: str, entry: FamilyEntryInfo) -> Any:
    """The click command ``curate VERB FAMILY``: the verb's parameters, then its options.

    Built from the family's catalogue entry: ``--help`` and completion never import the family;
    running the command does (:func:`curate.families.get_family`), then validates the options
    with the family's own model."""
    impl = VERBS[verb]
    hints = typing.get_type_hints(impl, localns=_NOT_FLAGS, include_extras=True)
    skip = {"fam", "options"} | (set() if entry.inputs_text else {"encoding"})
    base = [
        p.replace(annotation=_family_hint(entry, p.name, hints[p.name]), kind=KEYWORD_ONLY)
        for p in inspect.signature(impl).parameters.values()
        if p.name not in skip
    ]
    extra = option_parameters(entry, OPTION_VERB.get(verb, verb))

    def command(**kwargs: Any) -> None:
        from curate.core.engine import use_engine
        from curate.core.errors import acting_as

        fam = get_family(entry.name)
        raw = {p.name[4:]: kwargs.pop(p.name) for p in extra}
        engine, address = kwargs.pop("engine"), kwargs.pop("ray_address")
        options = fam.options(**raw)
        with acting_as(verb), use_engine(engine.value, address) as running:
            if getattr(running, "started_local", False):
                typer.echo(
                    "curate: ray: no cluster to join (no --ray-address, RAY_ADDRESS or `ray "
                    "start` with the default --temp-dir): started one on this machine for "
                    "this command",
                    err=True,
                )
            impl(fam, options, **kwargs)

    params = base + ENGINE_PARAMETERS + extra
    # inspect (and so typer) reads a function's __signature__; typeshed declares no such attribute
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    sub = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    doc = help_text(inspect.getdoc(impl) or "")
    aliases = f" (alias {', '.join(entry.aliases)})" if entry.aliases else ""
    sub.command(
        name=entry.name,
        help=f"{doc}\n\nFamily: {entry.title}{aliases}.",
        short_help=f"{entry.title}{aliases}",  # the line `curate VERB --help` lists
        cls=LightCommand,
    )(command)
    cmd = typer.main.get_command(sub)
    cmd.name = entry.name
    return cmd


class FamilyGroup(LightGroup):
    """``curate VERB`` — its commands are the families, built when asked for.

    An unknown family or a flag the family lacks is a usage error (exit 2) that names what there
    is, so a typo is never a silently ignored option.
    """

    verb: str = "audit"

    def list_commands(self, ctx: Any) -> list[str]:
        found = all_entries()[0]
        if getattr(ctx, "resilient_parsing", False):  # completing: `curate audit mq<TAB>` too
            return [*found, *(a for e in found.values() for a in e.aliases)]
        return list(found)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        # An unknown family, or one that cannot be imported, is one line naming the families
        # (and why a plug-in is broken): get_family's UsageError, exit 2.
        entry = entry_for(cmd_name)
        return _with_options_hint(family_command(self.verb, entry), entry, self.verb)


def _with_options_hint(cmd: Any, entry: FamilyEntryInfo, verb: str) -> Any:
    """Add the family's options to a 'no such option' error of its command."""
    original = cmd.parse_args

    def parse_args(ctx: Any, args: list[str]) -> list[str]:
        try:
            return original(ctx, args)
        except typer.TyperException as e:
            if type(e).__name__ == "NoSuchOption" and hasattr(e, "message"):
                opts = entry.describe(OPTION_VERB.get(verb, verb))
                e.message += f" ({entry.name} options for {verb}: {opts})"
            raise

    cmd.parse_args = parse_args
    return cmd


def verb_group(verb: str) -> LightGroup:
    """The ``curate VERB`` group (a fresh class per verb, so each knows its verb)."""
    cls = type(f"{verb.title()}Group", (FamilyGroup,), {"verb": verb})
    doc = (inspect.getdoc(VERBS[verb]) or "").split("\n\n")[0]
    args = "OLD NEW" if verb == "diff" else "PATHS..."
    return cls(
        name=verb,
        help=help_text(
            f"{doc}\n\nFAMILY is one of the commands below, or an alias of one; "
            f"`curate {verb} FAMILY --help` lists its options."
        ),
        short_help=help_text(" ".join(doc.split())),  # whole in `curate --help`, not cut at 45
        no_args_is_help=False,  # `curate audit` alone: one line, not the help (cli.main)
        subcommand_metavar=f"FAMILY {args}",
        rich_markup_mode=None,  # plain help (see LightCommand)
    )
