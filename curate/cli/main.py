"""``curate validate|audit|fix|export FAMILY ...`` and ``curate rules`` — exit codes meant for CI.

Exit codes: 0 clean (or findings below ``--fail-on``), 1 findings at or above ``--fail-on``,
2 unusable input or wrong usage, 3 an internal error (a bug in curate: please report it).

The data commands live in :mod:`curate.cli.commands` (one subcommand per family, built from the
family's options model); terminal rendering in :mod:`curate.cli.terminal`.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import sys
import warnings
from collections.abc import Iterable
from typing import Annotated, Any

import typer

from curate.cli import commands
from curate.cli.help import LightCommand, LightGroup
from curate.cli.terminal import RulesFormat as Format
from curate.core.errors import (
    CurateWarning,
    InputError,
    RemoteError,
    StrictRefusal,
    UsageError,
    command_line_spelling,
)
from curate.core.outputs import (
    Interrupted,
    committed_outputs,
    forget_run,
    install_signal_handlers,
    raise_if_interrupted,
    received_signal,
)
from curate.core.version import __version__
from curate.families.catalogue import FamilyEntryInfo, all_entries, entry_for

# No group prints its help when called without a command (``no_args_is_help``): typer's rich
# help is printed while the error is made, so ``curate audit`` printed the whole help and then
# the error line. A missing command or family is one line (:func:`_missing`), as every other
# usage error; ``--help`` shows the help.
app = typer.Typer(
    name="curate",
    cls=LightGroup,
    help="Validate, audit, fix and republish machine-learning datasets.",
    no_args_is_help=False,
    # No --install-completion: it appends to the user's ~/.bashrc, a file curate did not
    # write. Completion speaks typer's _CURATE_COMPLETE protocol instead (see cli()).
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help, as click prints it: rich's renderer costs ~50 ms of imports on every --help
    # (issue 36); the family commands keep their option panels as sections (LightCommand).
    rich_markup_mode=None,
)

FormatOpt = Annotated[
    Format, typer.Option("--format", "-f", help="Report format.", case_sensitive=False)
]


@app.command(cls=LightCommand)
def rules(
    family: Annotated[
        str | None,
        typer.Argument(
            help="Only this family's rules, or a rule's code (as --code), or the start of codes.",
            metavar="FAMILY|CODE",
            autocompletion=lambda incomplete: _rule_words(incomplete),
        ),
    ] = None,
    code: Annotated[
        str | None, typer.Option("--code", help="Full documentation of one rule.")
    ] = None,
    fmt: FormatOpt = Format.text,
) -> None:
    """List rules with their code, category, severity and documentation."""
    import orjson

    if family and code is None and family.upper() not in _family_names() and _is_code(family):
        family, code = None, family  # `curate rules GL401`, as `ruff rule E501`
    # From the catalogue (curate.families.catalogue): listing rules imports no family.
    found, broken = all_entries()
    if family:
        try:
            fams = [entry_for(family)]
        except UsageError as e:  # neither a family nor a code's shape: say both were possible
            raise UsageError(f"{e}; or a rule's code, such as KE201") from None
    else:
        fams = list(found.values())
        for why in broken.values():  # one broken plug-in is one line; the others are listed
            typer.echo(f"curate: warning: {why}", err=True)
    chosen = [r for f in fams for r in f.rules if code is None or r.code == code.upper()]
    if code and not chosen:  # a prefix lists its rules (`curate rules KE2`), as --select takes
        chosen = [r for f in fams for r in f.rules if r.code.startswith(code.upper())]
        code = None if chosen else code
    if code and not chosen:
        raise UsageError(_no_rule(code, family, found.values()))
    if fmt is Format.json:
        sys.stdout.write(
            orjson.dumps([r.to_json() for r in chosen], option=orjson.OPT_INDENT_2).decode() + "\n"
        )
        return
    for r in chosen:
        fix = f"; {r.fix_label}" if r.fixable else ""
        typer.echo(f"{r.code}  {r.name}  [{r.family}; {r.category}; {r.severity}{fix}]")
        if fmt is Format.markdown:
            typer.echo("\n" + r.doc + "\n")
        elif code:  # the docstring is reStructuredText; on a terminal ``code`` reads as `code`
            typer.echo("\n" + commands.help_text(r.doc) + "\n")
        else:
            typer.echo(f"    {commands.help_text(r.summary)}")


def _rule_words(incomplete: str) -> list[str]:
    """What ``curate rules <TAB>`` offers: families, their aliases and rule codes (from the
    catalogue: no family is imported)."""
    words = [
        w
        for f in all_entries()[0].values()
        for w in (f.name, *f.aliases, *(r.code for r in f.rules))
    ]
    return [w for w in words if w.lower().startswith(incomplete.lower())]


def _no_rule(code: str, family: str | None, families: Iterable[FamilyEntryInfo]) -> str:
    """Why ``code`` lists nothing, and where it is when another family has it."""
    owner = next((f for f in families for r in f.rules if r.code == code.upper()), None)
    if family and owner is not None:
        return (
            f"no rule {code.upper()} in {family}: it is {owner.name}'s "
            f"(curate rules {code.upper()})"
        )
    return f"no rule {code!r} (a rule's code, such as KE201, or the start of codes, such as KE2)"


def _family_names() -> set[str]:
    return {n.upper() for f in all_entries()[0].values() for n in (f.name, *f.aliases)}


def _is_code(text: str) -> bool:
    """A rule code's shape: letters then digits (KE401, GL101, RL205)."""
    return re.fullmatch(r"[A-Za-z]+[0-9]+", text) is not None


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"curate {__version__}")
        raise typer.Exit(0)


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            is_eager=True,  # as --help: answered before any other option is looked at
            callback=_print_version,
        ),
    ] = False,
) -> None:
    if ctx.invoked_subcommand is None:  # `curate` alone: the one line of a missing command
        raise UsageError(f"{_missing(ctx)} (see `{ctx.command_path} --help`)")


def cli() -> Any:  # a command of typer's own copy of click, which typer does not export
    """The click command tree: ``rules`` and the root options from the typer app, plus one
    group per data command whose subcommands are the families."""
    from curate.cli import ci
    from curate.cli.overlap import overlap_app

    if os.environ.get("_CURATE_COMPLETE"):
        # Shell completion: the script `_CURATE_COMPLETE=source_bash curate` prints (zsh, fish
        # alike) asks with _CURATE_COMPLETE=complete_bash; typer's completion classes answer.
        # Families and their options come from the catalogue: no family is imported.
        from typer.completion import completion_init

        completion_init()
    # typer declares get_command -> Command; an app with commands gives a TyperGroup, which
    # has add_command
    root = typer.main.get_command(app)
    for verb in commands.VERBS:
        root.add_command(commands.verb_group(verb))  # type: ignore[attr-defined]
    root.add_command(typer.main.get_command(ci.check_app), "check")  # type: ignore[attr-defined]
    root.add_command(typer.main.get_command(ci.card_app), "card")  # type: ignore[attr-defined]
    root.add_command(typer.main.get_command(overlap_app), "overlap")  # type: ignore[attr-defined]
    for command in root.commands.values():  # type: ignore[attr-defined]
        if not command.short_help and command.help:  # the first paragraph whole, not cut at 45
            first = command.help.split("\n\n")[0]
            command.short_help = commands.help_text(" ".join(first.split()))
    return root


def main(argv: list[str] | None = None, *, restore_signals: bool = True) -> int:
    """Entry point: map every failure to one line and an exit code (never a traceback).

    2 for anything the user can fix (usage, unusable input, a refused or unwritable output, a
    failed upload), 130/143 for SIGINT/SIGTERM after cleanup, 3 only for a bug in curate.

    The stop signals are curate's while it runs; with ``restore_signals`` (the default, for a
    program calling ``main``) the caller's handlers are back when it returns.
    """
    install_signal_handlers()
    # `curate ... | head`: end quietly when the reader leaves, as cat does (exit 141 in the
    # shell). Not by SIGPIPE's default action, which killed the whole process for a write to
    # *any* closed pipe (a process pool's or its resource tracker's: exit -13, staging left):
    # SIGPIPE stays ignored, as Python sets it, and a closed standard output is seen here.
    stdout = sys.stdout
    if stdout is not None:
        sys.stdout = _GuardedStdout(stdout)
    commands.COMMAND_LINE[:] = ["curate", *(sys.argv[1:] if argv is None else argv)]
    try:
        return _main(argv)
    finally:
        # this run's signals are not the next call's (curate.api after main()), and its
        # handlers are the caller's again; the console script keeps them (see entry.run)
        forget_run(restore=restore_signals)
        if isinstance(sys.stdout, _GuardedStdout):
            sys.stdout = stdout


def _main(argv: list[str] | None) -> int:
    try:
        from curate.io.read import input_scope  # inside: a signal during it is an interrupt

        # Messages name flags (--overwrite), not the API's arguments (one switch for the whole
        # library, curate.core.errors.command_line_spelling); curate's warnings are one line each,
        # every time (not Python's two lines, once per place in the code). Each pipe is read
        # once for the whole command.
        with input_scope(), command_line_spelling(), warnings.catch_warnings():
            warnings.simplefilter("always", CurateWarning)
            warnings.showwarning = _warning_shower()
            rc = cli().main(args=argv, standalone_mode=False, prog_name="curate")
            # A reader that left is found now, not by the flush at exit (which would end 0).
            if sys.stdout is not None:
                sys.stdout.flush()
        raise_if_interrupted()  # a signal whose exception Python swallowed on its way
        return rc if isinstance(rc, int) else 0
    except ReaderGone:
        signum = received_signal()
        if signum is not None:
            return _interrupted(signum)
        _silence_stdout()
        return 128 + signal.SIGPIPE
    except Exception as e:
        signum = received_signal()
        if signum is None:
            return _failed(e)
        # Whatever failed after a stop signal came is the signal's doing: an interrupt raised
        # inside a library's own call can come out as its error (polars' Rust conversions
        # turned one into "TypeError: ... is not a Polars data type", exit 3 "internal error").
        return _interrupted(signum)
    except (Interrupted, KeyboardInterrupt) as e:
        return _interrupted(e.signum if isinstance(e, Interrupted) else signal.SIGINT)
    except BaseException as e:  # pyo3's PanicException (a Rust panic in polars) is one
        if isinstance(e, SystemExit | GeneratorExit):
            raise
        signum = received_signal()
        if signum is not None:
            return _interrupted(signum)
        return _failed(e)


class ReaderGone(BaseException):
    """Standard output's reader has left (``curate ... | head``): the run ends quietly, 141.

    A BaseException, not the BrokenPipeError it replaces: click and typer catch an EPIPE
    OSError around every command and turn it into exit 1, which reads like "findings". Like
    :class:`~curate.core.outputs.Interrupted`, it unwinds through every clean-up on its way.
    """


class _GuardedStdout:
    """``sys.stdout`` during a command: a write or flush to a closed pipe raises
    :class:`ReaderGone`; everything else is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise ReaderGone from None

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise ReaderGone from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _interrupted(signum: int) -> int:
    typer.echo(f"curate: {_interrupt_line(signum)}", err=True)
    return 128 + signum


def _failed(e: BaseException) -> int:
    """One line and the exit code for an error that ended the command."""
    if isinstance(e, typer.Exit):
        return e.exit_code
    if isinstance(e, StrictRefusal):  # --strict and invalid records: a failed check, no output
        typer.echo(f"curate: {e}", err=True)
        return 1
    if isinstance(e, InputError | UsageError | RemoteError):
        line = e.one_line() if isinstance(e, InputError) else str(e)
        typer.echo(f"curate: error: {line}", err=True)
        return 2
    if isinstance(e, typer.TyperException):  # click's usage errors, as typer re-exports them
        # One line like every other exit 2 (click's own block is four), pointing at the help.
        ctx = getattr(e, "ctx", None)
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        # typer phrases a bad value through Pydantic: "Value error, 'x' is not one of ...";
        # the user typed no Python, so the error class's name is dropped
        message = " ".join(e.format_message().split()).replace(": Value error, ", ": ")
        if not message or message == "Missing command.":  # a group called without one
            message = _missing(ctx)
        typer.echo(f"curate: error: {message}{where}", err=True)
        return 2
    if isinstance(e, typer.Abort):  # end of input at a prompt
        typer.echo("curate: aborted", err=True)
        return 2
    if isinstance(e, BrokenPipeError):  # `curate ... | head`: the reader left; say nothing
        _silence_stdout()
        return 128 + signal.SIGPIPE
    if isinstance(e, OSError):  # permissions, read-only or full disk, a folder for a file
        typer.echo(f"curate: error: {_os_error_line(e)}", err=True)
        return 2
    if os.environ.get("CURATE_DEBUG"):  # a bug: one line; CURATE_DEBUG=1 shows the traceback
        raise e
    typer.echo(
        f"curate: internal error: {type(e).__name__}: {' '.join(str(e).split())} "
        "(set CURATE_DEBUG=1 for a traceback)",
        err=True,
    )
    return 3


def _interrupt_line(signum: int) -> str:
    """What a stop signal ended, honestly: outputs already moved into place are complete (a
    signal that came after the last rename), and the line says so; anything else was removed."""
    names: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGHUP: "hangup"}
    name = names.get(signum, "terminated")
    done = committed_outputs()
    if not done:
        return name
    shown = ", ".join(str(p) for p in done[:3]) + (
        f" and {len(done) - 3} more" if len(done) > 3 else ""
    )
    return f"{name} after {shown} was written (complete)"


def _missing(ctx: Any) -> str:
    """What a usage error without words lacks: click's "no arguments, so the help" error of a
    group (``curate audit``) has an empty message."""
    command: Any = getattr(ctx, "command", None)
    if hasattr(command, "list_commands"):  # a group (typer's, or click's)
        names = command.list_commands(ctx)
        what = getattr(command, "subcommand_metavar", None) or "COMMAND"
        first = what.split()[0]
        return f"missing {first} (one of: {', '.join(names)})" if names else f"missing {first}"
    return "missing arguments"


def _warning_shower() -> Any:
    """``curate: warning: ...`` on stderr for curate's warnings, each text once per command
    (a fix re-audits after every pass: a ``--mapping`` child no row has was said five times);
    others as Python shows them."""
    said: set[str] = set()

    def show(
        message: Any, category: Any, filename: Any, lineno: Any, file: Any = None, line: Any = None
    ) -> None:
        if issubclass(category, CurateWarning):
            text = " ".join(str(message).split())
            if text not in said:
                said.add(text)
                typer.echo(f"curate: warning: {text}", err=True)
        else:
            sys.stderr.write(warnings.formatwarning(message, category, filename, lineno))

    return show


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _os_error_line(e: OSError) -> str:
    """``PATH: reason`` for an OSError, in one line (errno's words, not Python's repr)."""
    reason = e.strerror or " ".join(str(e).split()) or type(e).__name__
    paths = [p for p in (e.filename, e.filename2) if p]
    if e.errno == errno.ENOSPC:
        reason += " (disk full)"
    return f"{' -> '.join(map(str, paths))}: {reason}" if paths else reason


if __name__ == "__main__":
    sys.exit(main())
