"""``curate validate|audit|fix|export|rules`` — exit codes meant for CI.

Exit codes: 0 clean (or findings below ``--fail-on``), 1 findings at or above ``--fail-on``,
2 unusable input or wrong usage, 3 an internal error (a bug in curate: please report it).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import orjson
import typer

from curate import __version__
from curate.errors import InputError, RemoteError, UsageError
from curate.families import all_families, get_family
from curate.outputs import (
    Interrupted,
    guard_file,
    guard_folder,
    install_signal_handlers,
    manifest,
    write_bytes_atomic,
)
from curate.reports import RENDERERS

app = typer.Typer(
    name="curate",
    help="Validate, audit, fix and republish machine-learning datasets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class Format(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


class FailOn(StrEnum):
    error = "error"
    warning = "warning"
    info = "info"
    never = "never"


FamilyArg = Annotated[
    str, typer.Argument(help="Dataset family: knowledge-editing (alias mquake) or glycan.")
]
PathsArg = Annotated[list[Path], typer.Argument(help="Files or dataset folders to read.")]
EditSetOpt = Annotated[
    str | None,
    typer.Option(
        "--edit-set",
        help="Knowledge editing: cases edited together: all (default) | random:K[:SEED] "
        "(SEED 100) | ids:FILE | split:N.",
    ),
]
SelectOpt = Annotated[
    list[str] | None,
    typer.Option("--select", help="Only these rules: codes, prefixes, names or categories."),
]
IgnoreOpt = Annotated[list[str] | None, typer.Option("--ignore", help="Skip these rules.")]
TaskOpt = Annotated[
    str | None,
    typer.Option("--task", help="Glycan task: taxonomy|immunogenicity|glycosylation|interaction."),
]
ColumnOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--column", help="Override a detected column: glycan=NAME, label=NAME, split=NAME."
    ),
]
EncodingOpt = Annotated[
    str | None,
    typer.Option(
        "--encoding",
        help="Text encoding of JSON, JSON Lines and CSV inputs, e.g. latin-1, cp1252, utf-16 "
        "(default: UTF-8, or what a byte order mark says).",
    ),
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Report format.")]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Write the report here (atomically).")
]
OverwriteOpt = Annotated[
    bool,
    typer.Option(
        help="Replace --out if it is a folder curate wrote earlier (other folders are refused)."
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
    typer.Option("--tag", help="A tag for the dataset card (repeatable)."),
]
LanguageOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--language", help="Language of the data, an ISO 639 code such as en (repeatable)."
    ),
]
SourceDatasetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--source-dataset",
        help="What the data is based on, for the card's source_datasets (repeatable).",
    ),
]
FailOnOpt = Annotated[
    FailOn, typer.Option("--fail-on", help="Exit 1 when a finding is at least this severe.")
]


def _env_flag(name: str) -> bool:
    """A ``NO_COLOR``-style switch: set to any non-empty value means on."""
    return os.environ.get(name, "") != ""


def _color_for(stream) -> bool:
    """Colour on ``stream``: ``NO_COLOR`` wins, then ``FORCE_COLOR``, else only on a terminal."""
    if _env_flag("NO_COLOR"):
        return False
    return _env_flag("FORCE_COLOR") or stream.isatty()


#: The stage string :meth:`curate.families.base.Family.audit` reports for each rule.
_RULE_STAGE = re.compile(r"rule (\d+)/(\d+): ")


class _TerminalProgress:
    """A rich progress line on stderr: stage, rows read or a bar over the rules, elapsed time.

    Started on the first callback and cleared by :meth:`stop`, which ``_load_and_audit`` calls
    on every exit path (an error, Ctrl-C) so that no half-drawn bar or hidden cursor is left
    behind.
    """

    def __init__(self, console=None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        if console is None:
            console = Console(file=sys.stderr, no_color=not _color_for(sys.stderr))
        self._bar = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[done]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            redirect_stdout=False,
        )
        self._task = None

    def __call__(self, stage: str, n: int) -> None:
        m = _RULE_STAGE.match(stage)
        if m:  # n rules done of the total: the bar fills over the rules
            fields = {"total": int(m.group(2)), "completed": n, "done": ""}
        else:  # rows read so far; the total is not known before the end of the input
            fields = {"total": None, "completed": 0, "done": f"{n:,} rows"}
        if self._task is None:
            self._bar.start()
            self._task = self._bar.add_task(stage, **fields)
        else:
            self._bar.update(self._task, description=stage, **fields)

    def stop(self) -> None:
        self._bar.stop()


def _progress() -> _TerminalProgress | None:
    """A progress callback when stderr is a terminal; none in CI logs, pipes or files."""
    if not sys.stderr.isatty() or _env_flag("CI"):
        return None
    return _TerminalProgress()


def _clear_progress(cb: _TerminalProgress | None) -> None:
    """Erase the progress line (safe to call when it never started, or twice)."""
    if cb is not None:
        cb.stop()


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
    else:
        write_bytes_atomic(output, text.encode("utf-8"))
        typer.echo(f"report written to {output}", err=True)


def _columns(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value:
            raise UsageError(f"--column {item!r}: expected KEY=NAME")
        out[key.strip()] = value
    return out


def _protected(paths: list[Path], edit_set: str | None = None, mapping: Path | None = None):
    """Every file this run reads: data, an ``ids:`` edit-set file, a ``--mapping`` file."""
    out: list[Path] = list(paths)
    if edit_set and edit_set.strip().startswith("ids:"):
        out.append(Path(edit_set.strip()[4:]))
    if mapping is not None:
        out.append(mapping)
    return out


def _guard_output(output: Path | None, protected: list[Path]) -> None:
    if output is not None:
        guard_file(output, protected)


def _render(report, fmt: Format, output: Path | None = None) -> str:
    """The report for its destination: colour and wrapping only on a terminal's stdout.

    A file (``--output``) gets neither, whatever the environment says; a pipe gets colour only
    with ``FORCE_COLOR`` and is never wrapped (one finding per line, for ``grep``).
    """
    if fmt is Format.text:
        if output is not None:
            return RENDERERS["text"](report, color=False, width=None)
        tty = sys.stdout.isatty()
        width = shutil.get_terminal_size().columns if tty else None
        return RENDERERS["text"](report, color=_color_for(sys.stdout), width=width)
    return RENDERERS[fmt.value](report)


def _load_and_audit(
    family: str,
    paths: list[Path],
    *,
    task: str | None,
    column: list[str] | None,
    keep_records: bool = False,
    encoding: str | None = None,
    **audit_options,
):
    """Family, loaded data and audit report: the first half of every data command."""
    fam = get_family(family)
    cb = _progress()
    try:
        data = fam.load(
            paths,
            progress=cb,
            keep_records=keep_records,
            task=task,
            columns=_columns(column),
            encoding=encoding,
        )
        report = fam.audit(data, progress=cb, **audit_options)
    finally:  # errors and Ctrl-C too: never leave a bar (or a hidden cursor) on the terminal
        _clear_progress(cb)
    return fam, data, report


def _invalid(fam, data, strict: bool):
    """The records fix/export must leave out; with ``--strict``, exit 1 if there are any.

    Why refuse before anything is written: a CI release step with ``--strict`` must either
    publish every input record or nothing, never a silently shorter dataset.
    """
    from curate.families.base import describe_invalid

    invalid = fam.invalid_records(data)
    if strict and invalid.height:
        total = sum(i.records for i in data.inputs)
        typer.echo(f"curate: {describe_invalid(invalid, total)}", err=True)
        raise typer.Exit(1)
    return invalid


def _require_rows(tables, invalid) -> None:
    """Exit 2 naming the first invalid record when every record was invalid (nothing to write)."""
    from curate.families.base import count_invalid

    if invalid.height and not any(t.num_rows for t in tables.values()):
        first = invalid.row(0, named=True)
        raise InputError(
            f"nothing to write: all {count_invalid(invalid)} records are invalid "
            f"(first: {first['rule']} {first['message']})",
            path=first["file"],
            record=first["record"],
            field=first["field"] or None,
        )


@app.command()
def validate(
    family: FamilyArg,
    paths: PathsArg,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    task: TaskOpt = None,
    column: ColumnOpt = None,
    encoding: EncodingOpt = None,
) -> None:
    """Check every record against the family's schema (exit 1 if any record is invalid)."""
    _guard_output(output, _protected(paths))
    _, _, report = _load_and_audit(
        family,
        paths,
        task=task,
        column=column,
        encoding=encoding,
        select=["schema", "integrity"],
    )
    _emit(_render(report, fmt, output), output)
    raise typer.Exit(1 if report.fails("error") else 0)


@app.command()
def audit(
    family: FamilyArg,
    paths: PathsArg,
    edit_set: EditSetOpt = None,
    select: SelectOpt = None,
    ignore: IgnoreOpt = None,
    fmt: FormatOpt = Format.text,
    output: OutputOpt = None,
    fail_on: FailOnOpt = FailOn.error,
    task: TaskOpt = None,
    column: ColumnOpt = None,
    encoding: EncodingOpt = None,
) -> None:
    """Run the family's rules and report findings."""
    _guard_output(output, _protected(paths, edit_set))
    _, _, report = _load_and_audit(
        family,
        paths,
        task=task,
        column=column,
        encoding=encoding,
        select=select,
        ignore=ignore,
        edit_set=edit_set,
    )
    _emit(_render(report, fmt, output), output)
    raise typer.Exit(1 if report.fails(fail_on.value) else 0)


@app.command()
def fix(
    family: FamilyArg,
    paths: PathsArg,
    out: Annotated[Path, typer.Option("--out", help="Folder for the remastered dataset.")],
    edit_set: EditSetOpt = None,
    overwrite: OverwriteOpt = False,
    task: TaskOpt = None,
    column: ColumnOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of the grouped re-split (glycan).")] = 0,
    resplit: Annotated[
        bool, typer.Option(help="Re-split grouped by canonical key (glycan).")
    ] = True,
    mapping: Annotated[
        Path | None, typer.Option(help="JSON {level: {child: parent}} overriding taxonomy fixes.")
    ] = None,
    strict: StrictOpt = False,
    encoding: EncodingOpt = None,
    tag: TagOpt = None,
    language: LanguageOpt = None,
    source_dataset: SourceDatasetOpt = None,
) -> None:
    """Write a remastered dataset (fixes applied, changelog beside it); inputs are untouched.

    Records that fail the schema or cannot be parsed are dropped and kept whole in the changelog
    (``--strict``: exit 1 and write nothing instead).
    """
    from curate.export import CardInfo, check_language, write_hf_dataset
    from curate.families.base import invalid_section

    languages = [check_language(c) for c in language or []]  # before the long work
    protected = _protected(paths, edit_set, mapping)
    guard_folder(out, protected, overwrite=overwrite)
    fam, data, report = _load_and_audit(
        family,
        paths,
        task=task,
        column=column,
        keep_records=True,
        encoding=encoding,
        edit_set=edit_set,
    )
    invalid = _invalid(fam, data, strict)
    result = fam.fix(
        data,
        report,
        edit_set=edit_set,
        seed=seed,
        resplit=resplit,
        mapping=str(mapping) if mapping else None,
    )
    card = CardInfo(
        pretty_name=f"{Path(paths[0]).stem} (remastered by curate)",
        license=fam.license,
        task_categories=fam.task_categories,
        description=f"{fam.title}: fixed with `curate fix`"
        + (f" (edit set `{edit_set}`)." if edit_set else "."),
        source_files=[f"{i.path} (sha256 {i.sha256})" for i in data.inputs],
        extra_sections=invalid_section(invalid),
        tags=tag or (),
        language=languages,
        source_datasets=source_dataset or (),
        steps=("audited", "fixed"),
    )
    _require_rows(result.tables, invalid)
    write_hf_dataset(
        out,
        result.tables,
        card,
        report=report,
        changelog=result.changelog,
        extra_files=result.extra_files,
        overwrite=overwrite,
        inputs=protected,
        marker=manifest(_COMMAND, data.inputs),
    )
    s = result.summary
    typer.echo(
        f"wrote {out}: {sum(t.num_rows for t in result.tables.values())} records, "
        f"{len(result.changelog)} changes (" + ", ".join(f"{k}={v}" for k, v in s.items()) + ")"
    )


@app.command()
def export(
    family: FamilyArg,
    paths: PathsArg,
    out: Annotated[Path, typer.Option("--out", help="Folder for the Hugging Face dataset.")],
    edit_set: EditSetOpt = None,
    max_rows_per_shard: Annotated[
        int | None,
        typer.Option(
            min=1, help="At most this many rows per parquet file (files are cut at 500 MB anyway)."
        ),
    ] = None,
    pretty_name: Annotated[str | None, typer.Option()] = None,
    license: Annotated[
        str | None,
        typer.Option("--license", help="A Hub licence identifier (apache-2.0, cc-by-4.0, ...)."),
    ] = None,
    overwrite: OverwriteOpt = False,
    push_to_hub: Annotated[
        str | None, typer.Option("--push-to-hub", help="Also upload to this dataset repo.")
    ] = None,
    task: TaskOpt = None,
    column: ColumnOpt = None,
    strict: StrictOpt = False,
    encoding: EncodingOpt = None,
    tag: TagOpt = None,
    language: LanguageOpt = None,
    source_dataset: SourceDatasetOpt = None,
) -> None:
    """Export the valid records as a Hugging Face dataset folder with an audited dataset card.

    Records that fail the schema or cannot be parsed are left out and counted (on stdout and in
    the card); ``--strict`` refuses instead (exit 1, nothing written).
    """
    from curate.export import CardInfo, check_language, check_license, write_hf_dataset
    from curate.export import push_to_hub as push
    from curate.families.base import count_invalid, invalid_section

    # Card options are checked before the long work: a typo must not cost a whole load.
    license = check_license(license) if license is not None else None
    languages = [check_language(c) for c in language or []]
    protected = _protected(paths, edit_set)
    guard_folder(out, protected, overwrite=overwrite)
    fam, data, report = _load_and_audit(
        family,
        paths,
        task=task,
        column=column,
        encoding=encoding,
        edit_set=edit_set,
    )
    invalid = _invalid(fam, data, strict)
    card = CardInfo(
        pretty_name=pretty_name or Path(paths[0]).stem,
        license=license or fam.license,
        task_categories=fam.task_categories,
        description=f"{fam.title}, exported by `curate export`.",
        source_files=[f"{i.path} (sha256 {i.sha256})" for i in data.inputs],
        extra_sections=invalid_section(invalid),
        tags=tag or (),
        language=languages,
        source_datasets=source_dataset or (),
        steps=("audited", "exported"),
    )
    tables = fam.to_tables(data)
    n_invalid = count_invalid(invalid)
    _require_rows(tables, invalid)
    write_hf_dataset(
        out,
        tables,
        card,
        report=report,
        max_rows_per_shard=max_rows_per_shard,
        overwrite=overwrite,
        inputs=protected,
        marker=manifest(_COMMAND, data.inputs),
    )
    typer.echo(
        f"wrote {out}: "
        + ", ".join(f"{s}={t.num_rows}" for s, t in tables.items())
        + f" ({n_invalid} invalid records left out)"
    )
    if push_to_hub:
        push(out, push_to_hub)
        typer.echo(f"pushed to {push_to_hub}")


@app.command()
def rules(
    family: Annotated[str | None, typer.Argument(help="Only this family's rules.")] = None,
    code: Annotated[
        str | None, typer.Option("--code", help="Full documentation of one rule.")
    ] = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """List rules with their code, category, severity and documentation."""
    fams = [get_family(family)] if family else list(all_families().values())
    chosen = [r for f in fams for r in f.rules if code is None or r.code == code.upper()]
    if code and not chosen:
        raise UsageError(f"no rule {code!r}")
    if fmt is Format.json:
        sys.stdout.write(
            orjson.dumps([r.to_json() for r in chosen], option=orjson.OPT_INDENT_2).decode() + "\n"
        )
        return
    for r in chosen:
        fixable = ", fixable" if r.fixable else ""
        typer.echo(
            f"{r.code}  {r.name}  [{r.family}; {r.category.value}; {r.severity.value}{fixable}]"
        )
        if code or fmt is Format.markdown:
            typer.echo("\n" + r.doc + "\n")
        else:
            typer.echo(f"    {r.summary}")


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"curate {__version__}")
        raise typer.Exit(0)


#: The command line of this run, for the output folder's marker.
_COMMAND: list[str] = []


def main(argv: list[str] | None = None) -> int:
    """Entry point: map every failure to one line and an exit code (never a traceback).

    2 for anything the user can fix (usage, unusable input, a refused or unwritable output, a
    failed upload), 130/143 for SIGINT/SIGTERM after cleanup, 3 only for a bug in curate.
    """
    install_signal_handlers()
    _COMMAND[:] = ["curate", *(sys.argv[1:] if argv is None else argv)]
    try:
        rc = app(args=argv, standalone_mode=False, prog_name="curate")
        return rc if isinstance(rc, int) else 0
    except typer.Exit as e:
        return e.exit_code
    except (InputError, UsageError, RemoteError) as e:
        line = e.one_line() if isinstance(e, InputError) else str(e)
        typer.echo(f"curate: error: {line}", err=True)
        return 2
    except typer.TyperException as e:  # click's usage errors, as typer re-exports them
        show = getattr(e, "show", None)
        if show is not None:
            show()
        else:
            typer.echo(f"curate: error: {e.format_message()}", err=True)
        return 2
    except typer.Abort:  # end of input at a prompt
        typer.echo("curate: aborted", err=True)
        return 2
    except (Interrupted, KeyboardInterrupt) as e:
        signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
        name = "interrupted" if signum == signal.SIGINT else "terminated"
        typer.echo(f"curate: {name}", err=True)
        return 128 + signum
    except OSError as e:  # permissions, read-only or full disk, a folder where a file goes
        typer.echo(f"curate: error: {_os_error_line(e)}", err=True)
        return 2
    except Exception as e:  # a bug: say so in one line; CURATE_DEBUG=1 shows the traceback
        if os.environ.get("CURATE_DEBUG"):
            raise
        typer.echo(
            f"curate: internal error: {type(e).__name__}: {' '.join(str(e).split())} "
            "(set CURATE_DEBUG=1 for a traceback)",
            err=True,
        )
        return 3


def _os_error_line(e: OSError) -> str:
    """``PATH: reason`` for an OSError, in one line (errno's words, not Python's repr)."""
    reason = e.strerror or " ".join(str(e).split()) or type(e).__name__
    paths = [p for p in (e.filename, e.filename2) if p]
    if e.errno == errno.ENOSPC:
        reason += " (disk full)"
    return f"{' -> '.join(map(str, paths))}: {reason}" if paths else reason


if __name__ == "__main__":
    sys.exit(main())
