"""What the terminal sees: colour that follows the destination, unwrapped text off a terminal,
and a progress bar on stderr only where a person watches it.

Why its own module: every command renders through here, so the rules (``NO_COLOR`` wins, then
``FORCE_COLOR``, else colour only on a terminal; never ANSI codes in an ``--output`` file; no bar in
CI logs) live in one place.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import typer

from curate.core.outputs import is_stream, with_generator, write_bytes_atomic
from curate.reports import formats

if TYPE_CHECKING:  # rich is imported when a progress line is first drawn
    from rich.console import Console
    from rich.progress import TaskID

    from curate.core.dataset import LoadedDataset
    from curate.core.findings import Report

#: Report formats of the data commands, from the one registry (:mod:`curate.reports.formats`):
#: the three views of a report, then the CI ones. An enum so that typer offers the choices.
if TYPE_CHECKING:
    # What a checker can know of the registry's enum: ``text``, every data command's default,
    # is always one of its formats.
    class Format(StrEnum):
        text = "text"

else:
    Format = StrEnum("Format", {name: name for name in formats.names()})


class RulesFormat(StrEnum):
    """``curate rules`` formats (a rule list is no test result)."""

    text = "text"
    json = "json"
    markdown = "markdown"


def env_flag(name: str) -> bool:
    """A ``NO_COLOR``-style switch: set to any non-empty value means on."""
    return os.environ.get(name, "") != ""


def color_for(stream: TextIO) -> bool:
    """Colour on ``stream``: ``NO_COLOR`` wins, then ``FORCE_COLOR``, else only on a terminal."""
    if env_flag("NO_COLOR"):
        return False
    return env_flag("FORCE_COLOR") or stream.isatty()


#: The stage string :meth:`curate.families.base.Family.audit` reports for each rule.
_RULE_STAGE = re.compile(r"rule (\d+)/(\d+): ")
#: The Ray engine's "ray: <units> done/total" (curate.core.engine): a bar over the tasks, not rows.
_TASK_STAGE = re.compile(r"ray: .* (\d+)/(\d+)$")


class TerminalProgress:
    """A rich progress line on stderr: stage, rows read or a bar over the rules, elapsed time.

    Started on the first callback and cleared by :meth:`stop`, which the data commands call
    on every exit path (an error, Ctrl-C) so that no half-drawn bar or hidden cursor is left
    behind.
    """

    def __init__(self, console: Console | None = None) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        if console is None:
            console = Console(file=sys.stderr, no_color=not color_for(sys.stderr))
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
        self._task: TaskID | None = None

    def __call__(self, stage: str, n: int) -> None:
        m = _RULE_STAGE.match(stage)
        t = None if m else _TASK_STAGE.match(stage)
        fields: dict[str, Any]  # rich's task fields: total, completed and the "done" text
        if m:  # n rules done of the total: the bar fills over the rules
            fields = {"total": int(m.group(2)), "completed": n, "done": ""}
        elif t:  # Ray tasks done of the total
            fields = {"total": int(t.group(2)), "completed": int(t.group(1)), "done": ""}
        else:  # rows read so far; the total is not known before the end of the input
            fields = {"total": None, "completed": 0, "done": f"{n:,} rows"}
        if self._task is None:
            self._bar.start()
        elif fields["total"] is None and self._bar.tasks[0].total is not None:
            # a count after a bar: rich's update keeps a total it is given as None
            self._bar.remove_task(self._task)
            self._task = None
        if self._task is None:
            self._task = self._bar.add_task(stage, **fields)
        else:
            self._bar.update(self._task, description=stage, **fields)

    def stop(self) -> None:
        self._bar.stop()


def progress() -> TerminalProgress | None:
    """A progress callback when stderr is a terminal; none in CI logs, pipes or files."""
    if not sys.stderr.isatty() or env_flag("CI"):
        return None
    return TerminalProgress()


def clear_progress(cb: TerminalProgress | None) -> None:
    """Erase the progress line (safe to call when it never started, or twice)."""
    if cb is not None:
        cb.stop()


def emit(text: str, output: Path | None, fmt: str | None = None) -> None:
    """The report to stdout, or atomically to ``--output`` (``-o -`` is stdout too).

    A file gets the ``fmt`` report's generator mark (:func:`curate.core.outputs.with_generator`),
    by which the next run knows the file is curate's to replace; stdout is left as it was.
    """
    if output is None or str(output) == "-":
        sys.stdout.write(text)
    else:
        if fmt is not None:
            text = with_generator(text, str(fmt), output)
        stream = is_stream(output)  # /dev/stdout, a FIFO: the reader already has it
        write_bytes_atomic(output, text.encode("utf-8"))
        if not stream:
            typer.echo(f"report written to {output}", err=True)


def render(
    report: Report,
    fmt: Format,
    output: Path | None = None,
    *,
    durations: bool = False,
    fail_on: str = "error",
    data: LoadedDataset | None = None,
) -> str:
    """The report for its destination: colour and wrapping only on a terminal's stdout.

    A file (``--output``) gets neither, whatever the environment says; a pipe gets colour only
    with ``FORCE_COLOR`` and is never wrapped (one finding per line, for ``grep``).
    ``durations`` appends where the time went (``--durations``), rendering included (not to
    JUnit, SARIF or HTML, whose documents must stay valid; JUnit carries each rule's time).
    ``fail_on`` is what the CI formats mark as failing. ``data`` (what the audit read) adds
    the family's plots and the findings' splits to an HTML report.
    """
    # Here, not at the top: the reports import polars, which `--help` must not (issue 36).
    from curate.core.findings import json_bytes
    from curate.reports.render import durations_json, render_durations

    t0 = time.perf_counter()
    spec = formats.get(str(fmt))
    color, width = False, None
    if spec.name == "text" and (output is None or str(output) == "-"):
        tty = sys.stdout.isatty()
        width = shutil.get_terminal_size().columns if tty else None
        color = color_for(sys.stdout)
    text = spec.render_audit(report, fail_on=fail_on, data=data, color=color, width=width)
    if not durations or spec.durations is None:
        return text
    stages = {**report.durations, "render": time.perf_counter() - t0}
    if spec.durations == "json":  # a top-level "durations" object after the report's own keys
        extra = json_bytes({"durations": durations_json(stages)}, indent=True).decode()
        inner = extra.strip()[1:-1].strip("\n")
        return text.rstrip()[:-1].rstrip() + ",\n" + inner + "\n}\n"
    return text + render_durations(stages, spec.durations)


def step_summary(report: Report, fmt: Format, fail_on: str = "error") -> None:
    """``--format github`` in GitHub Actions: append the Markdown job summary too."""
    if str(fmt) == "github" and os.environ.get("GITHUB_STEP_SUMMARY"):
        from curate.reports.ci import append_step_summary
        from curate.reports.verdict import single

        append_step_summary(single(report, fail_on))
