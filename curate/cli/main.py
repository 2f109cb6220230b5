"""``curate validate|audit|fix|export|rules`` — exit codes meant for CI.

Exit codes: 0 clean (or findings below ``--fail-on``), 1 findings at or above ``--fail-on``,
2 unusable input or wrong usage, 3 an internal error (a bug in curate: please report it).
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import click
import orjson
import typer

from curate import __version__
from curate.errors import InputError, UsageError
from curate.families import all_families, get_family
from curate.io import write_bytes_atomic
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
FailOnOpt = Annotated[
    FailOn, typer.Option("--fail-on", help="Exit 1 when a finding is at least this severe.")
]


def _progress():
    """A progress callback on stderr when it is a terminal (CI logs stay clean)."""
    if not sys.stderr.isatty() or os.environ.get("CI"):
        return None

    def report(stage: str, n: int) -> None:
        sys.stderr.write(f"\r\x1b[2K{stage}: {n}")
        sys.stderr.flush()

    return report


def _clear_progress(cb) -> None:
    if cb is not None:
        sys.stderr.write("\r\x1b[2K")
        sys.stderr.flush()


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


def _render(report, fmt: Format) -> str:
    if fmt is Format.text:
        return RENDERERS["text"](report, color=sys.stdout.isatty())
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
    data = fam.load(
        paths,
        progress=cb,
        keep_records=keep_records,
        task=task,
        columns=_columns(column),
        encoding=encoding,
    )
    report = fam.audit(data, progress=cb, **audit_options)
    _clear_progress(cb)
    return fam, data, report


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
    _, _, report = _load_and_audit(
        family,
        paths,
        task=task,
        column=column,
        encoding=encoding,
        select=["schema", "integrity"],
    )
    _emit(_render(report, fmt), output)
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
    _emit(_render(report, fmt), output)
    raise typer.Exit(1 if report.fails(fail_on.value) else 0)


@app.command()
def fix(
    family: FamilyArg,
    paths: PathsArg,
    out: Annotated[Path, typer.Option("--out", help="Folder for the remastered dataset.")],
    edit_set: EditSetOpt = None,
    overwrite: Annotated[bool, typer.Option(help="Replace --out if it exists.")] = False,
    task: TaskOpt = None,
    column: ColumnOpt = None,
    seed: Annotated[int, typer.Option(help="Seed of the grouped re-split (glycan).")] = 0,
    resplit: Annotated[
        bool, typer.Option(help="Re-split grouped by canonical key (glycan).")
    ] = True,
    mapping: Annotated[
        Path | None, typer.Option(help="JSON {level: {child: parent}} overriding taxonomy fixes.")
    ] = None,
    encoding: EncodingOpt = None,
) -> None:
    """Write a remastered dataset (fixes applied, changelog beside it); inputs are untouched."""
    from curate.export import CardInfo, write_hf_dataset

    fam, data, report = _load_and_audit(
        family,
        paths,
        task=task,
        column=column,
        keep_records=True,
        encoding=encoding,
        edit_set=edit_set,
    )
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
    )
    write_hf_dataset(
        out,
        result.tables,
        card,
        report=report,
        changelog=result.changelog,
        extra_files=result.extra_files,
        overwrite=overwrite,
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
    max_rows_per_shard: Annotated[int, typer.Option(min=1)] = 100_000,
    pretty_name: Annotated[str | None, typer.Option()] = None,
    license: Annotated[str | None, typer.Option("--license")] = None,
    overwrite: Annotated[bool, typer.Option(help="Replace --out if it exists.")] = False,
    push_to_hub: Annotated[
        str | None, typer.Option("--push-to-hub", help="Also upload to this dataset repo.")
    ] = None,
    task: TaskOpt = None,
    column: ColumnOpt = None,
    encoding: EncodingOpt = None,
) -> None:
    """Export the valid records as a Hugging Face dataset folder with an audited dataset card."""
    from curate.export import CardInfo, write_hf_dataset
    from curate.export import push_to_hub as push

    fam, data, report = _load_and_audit(
        family,
        paths,
        task=task,
        column=column,
        keep_records=True,
        encoding=encoding,
        edit_set=edit_set,
    )
    card = CardInfo(
        pretty_name=pretty_name or Path(paths[0]).stem,
        license=license or fam.license,
        task_categories=fam.task_categories,
        description=f"{fam.title}, exported by `curate export`.",
        source_files=[f"{i.path} (sha256 {i.sha256})" for i in data.inputs],
    )
    tables = fam.to_tables(data)
    write_hf_dataset(
        out, tables, card, report=report, max_rows_per_shard=max_rows_per_shard, overwrite=overwrite
    )
    typer.echo(f"wrote {out}: " + ", ".join(f"{s}={t.num_rows}" for s, t in tables.items()))
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


def main(argv: list[str] | None = None) -> int:
    """Entry point: map every failure to one line and an exit code (never a traceback)."""
    try:
        rc = app(args=argv, standalone_mode=False, prog_name="curate")
        return rc if isinstance(rc, int) else 0
    except typer.Exit as e:
        return e.exit_code
    except click.exceptions.Exit as e:
        return e.exit_code
    except InputError as e:
        typer.echo(f"curate: error: {e.one_line()}", err=True)
        return 2
    except UsageError as e:
        typer.echo(f"curate: error: {e}", err=True)
        return 2
    except click.ClickException as e:
        e.show()
        return 2
    except click.exceptions.Abort:
        typer.echo("curate: aborted", err=True)
        return 2
    except KeyboardInterrupt:
        typer.echo("curate: interrupted", err=True)
        return 130
    except Exception as e:  # a bug: say so in one line; CURATE_DEBUG=1 shows the traceback
        if os.environ.get("CURATE_DEBUG"):
            raise
        typer.echo(
            f"curate: internal error: {type(e).__name__}: {e} (set CURATE_DEBUG=1 for a traceback)",
            err=True,
        )
        return 3


def _entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    _entry()
