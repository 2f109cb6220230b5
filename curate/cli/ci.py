"""``curate check`` (the project configuration's datasets, for CI) and ``curate card check``.

Exit codes as everywhere: 0 pass, 1 a failing finding (``check``) or a card defect
(``card check``), 2 a configuration, input or usage error (one line naming the key or file).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from curate.cli import terminal
from curate.cli.help import LightCommand, LightGroup
from curate.core.errors import UsageError
from curate.reports import formats

check_app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
card_app = typer.Typer(
    cls=LightGroup,
    name="card",
    help="Dataset card tools. `curate card check DIR` verifies offline what the Hub verifies.",
    no_args_is_help=False,  # `curate card` alone: one line, not the help (cli.main)
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@card_app.callback()
def _card() -> None:
    """Dataset card tools (a group, so that more can follow ``check``)."""


def _report_pairs(values: list[str] | None) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for v in values or []:
        fmt, sep, path = v.partition("=")
        fmt = fmt.lower()  # choices ignore case, as everywhere (--format JSON)
        if not sep or fmt not in formats.names() or not path:
            raise UsageError(
                f"--report {v!r}: expected FORMAT=PATH with FORMAT one of "
                f"{', '.join(formats.names())}"
            )
        out[fmt] = Path(path)
    return out


@check_app.command("check", cls=LightCommand)
def check(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="The configuration file (default: the nearest curate.toml or pyproject.toml "
            "with [tool.curate], from the current folder up).",
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            help="Accepted findings (default: the config's `baseline`); only findings not in "
            "it fail.",
        ),
    ] = None,
    no_baseline: Annotated[
        bool, typer.Option("--no-baseline", help="Ignore the baseline: every finding is new.")
    ] = False,
    update_baseline: Annotated[
        bool,
        typer.Option(
            "--update-baseline",
            help="Rewrite the baseline with the current findings (exit 0).",
        ),
    ] = False,
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            help=f"Report format: {', '.join(formats.names())} "
            "(default: the config's output.format, else text).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the report here (atomically; an existing file only if curate wrote it, "
            "or with --overwrite; never over an input, the configuration or the baseline).",
        ),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Replace an existing --output/--report file curate did not write (its own "
            "reports are replaced anyway).",
        ),
    ] = False,
    report: Annotated[
        list[str] | None,
        typer.Option(
            "--report",
            help="Also write FORMAT=PATH (repeatable), e.g. junit=reports/curate.xml.",
        ),
    ] = None,
    dataset: Annotated[
        list[str] | None, typer.Option("--dataset", help="Only this dataset (repeatable).")
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option("--fail-on", help="Override the config's fail-on: error|warning|info|never."),
    ] = None,
    step_summary: Annotated[
        bool | None,
        typer.Option(
            "--step-summary/--no-step-summary",
            help="Append the Markdown summary to $GITHUB_STEP_SUMMARY when it is set "
            "(default: the config's output.step-summary, on).",
        ),
    ] = None,
) -> None:
    """Check every dataset of the project configuration: exit 1 on a new finding that fails
    (not in the baseline, not in curate-ignore, at or above fail-on or over its threshold)."""
    from curate.check.baseline import accept_all, write_baseline, write_baseline_check
    from curate.check.config import load_config
    from curate.check.run import names_inputs, protected_inputs, run_check
    from curate.core.outputs import guard_file, is_stream, with_generator, write_bytes_atomic
    from curate.reports.ci import append_step_summary
    from curate.reports.verdict import shown_path

    loaded = load_config(config)
    out_cfg = loaded.config.output
    fmt = (fmt or out_cfg.format).lower()
    fail_on = fail_on.lower() if fail_on is not None else None
    if fmt not in formats.names():
        raise UsageError(f"--format {fmt!r}: use one of {', '.join(formats.names())}")
    if fail_on is not None and fail_on not in ("error", "warning", "info", "never"):
        raise UsageError(f"--fail-on {fail_on!r}: use error, warning, info or never")
    if no_baseline and (update_baseline or baseline is not None):
        raise UsageError("--no-baseline cannot be combined with --baseline or --update-baseline")
    files = {k: loaded.resolve(v) for k, v in out_cfg.reports.items()}
    files.update(_report_pairs(report))
    base = baseline
    if base is None and loaded.config.baseline:
        base = loaded.resolve(loaded.config.baseline)
    if update_baseline and base is None:
        raise UsageError(
            "--update-baseline: no baseline file; pass --baseline FILE or set `baseline` in "
            f"{loaded.path}"
        )
    # inputs of the reports: the data, the files options name, the configuration, and the
    # baseline (also the configured one under --no-baseline: it is the project's file)
    protected = protected_inputs(loaded)
    configured = loaded.resolve(loaded.config.baseline) if loaded.config.baseline else None
    report_inputs = [*protected, *(b for b in (base, configured) if b is not None)]
    patterns = loaded.input_patterns()  # a file they match is data to the next run
    deferred = names_inputs(loaded)  # media a manifest names: known once it is read
    targets = [(f"--report {name}", t) for name, t in files.items()]
    if output and str(output) != "-":
        targets.append(("--output", output))

    def guard_reports(named: list[str] | None = None) -> None:
        """Each report target; ``named`` (the files the datasets named, after the run) None
        before the run, when a target may yet turn out to be such an input."""
        seen: dict[str, str] = {}
        for option, target in targets:
            guard_file(
                target,
                [*report_inputs, *(named or ())],
                option=option,
                overwrite=overwrite,
                patterns=patterns,
                all_inputs_known=named is not None or not deferred,
            )
            key = os.path.realpath(target)
            if key in seen:  # one report would silently replace the other
                raise UsageError(
                    f"{option} {target}: is also {seen[key]}; give each report its own file"
                )
            seen[key] = option

    guard_reports()
    if update_baseline:  # refused now, not after the audits
        assert base is not None
        write_baseline_check(base, protected, patterns)
    if base is not None and not no_baseline and not update_baseline and not base.exists():
        # not an error (a first run has none yet), but never silent: every finding is new
        typer.echo(
            f"baseline {shown_path(base)} not found: every finding counts as new; create it "
            "with --update-baseline",
            err=True,
        )
    cb = terminal.progress()
    try:
        result = run_check(
            loaded,
            baseline=base,
            use_baseline=not no_baseline,
            only=dataset or (),
            fail_on=fail_on,
            progress=cb,
        )
    finally:
        terminal.clear_progress(cb)
    broken = result.unusable
    # again, before anything is written: a target may have changed while the datasets were
    # audited (and a refusal then must leave the baseline as it was, too), with every input
    guard_reports(result.named_files)
    if update_baseline:
        # accepting findings is what was asked: say what was recorded, not "check failed"; an
        # unusable dataset keeps its entries (write_baseline) and is still the exit-2 line below
        assert base is not None
        write_baseline(base, result, [*protected, *map(Path, result.named_files)], patterns)
        accept_all(result)
    terminal.emit(formats.get(fmt).check(result), output, fmt)
    for name, target in files.items():
        text = with_generator(formats.get(name).check(result), name, target)
        stream = is_stream(target)
        write_bytes_atomic(target, text.encode("utf-8"))
        if not broken and not stream:  # exit 2 is one line on stderr: the error below
            typer.echo(f"{name} report written to {shown_path(target)}", err=True)
    if step_summary if step_summary is not None else out_cfg.step_summary:
        append_step_summary(result)
    if broken:
        # every dataset was checked and every report written; now the one line of an exit 2
        first = broken[0]
        more = f" (and {len(broken) - 1} more unusable dataset(s))" if len(broken) > 1 else ""
        if update_baseline:
            more += "; the baseline was updated for the other datasets, this one's entries kept"
        raise UsageError(f"dataset {first.name!r}: {first.error}{more}")
    if update_baseline:
        from curate.reports.verdict import baseline_line

        typer.echo(f"{baseline_line(result)}; later runs fail only on findings not in it", err=True)
        raise typer.Exit(0)
    if fmt in formats.machine_formats() and (output is None or str(output) == "-"):
        from curate.reports.verdict import footer_lines

        for line in footer_lines(result):
            typer.echo(line, err=True)
    raise typer.Exit(1 if result.failed else 0)


@card_app.command("check", cls=LightCommand)
def card_check(
    folder: Annotated[
        Path, typer.Argument(help="A dataset folder with a README.md card.", metavar="FOLDER")
    ],
    fmt: Annotated[str, typer.Option("--format", "-f", help="text or json.")] = "text",
    no_croissant: Annotated[
        bool,
        typer.Option("--no-croissant", help="Skip validating croissant.json with mlcroissant."),
    ] = False,
) -> None:
    """Verify a dataset folder offline as the Hub does on upload: the card's YAML, configs and
    data_files, features against the parquet schemas, license, size_categories, num_examples,
    croissant.json, its checksums and whether it carries the card's licence and citation (exit
    1 on a defect; a warning alone exits 0)."""
    from curate.publish.cardcheck import check_card, render_json, render_text

    fmt = fmt.lower()
    if fmt not in ("text", "json"):
        raise UsageError(f"--format {fmt!r}: use text or json")
    problems = check_card(folder, croissant=not no_croissant)
    sys.stdout.write(
        render_json(folder, problems) if fmt == "json" else render_text(folder, problems)
    )
    raise typer.Exit(1 if any(p.severity == "error" for p in problems) else 0)
