"""Terminal output that follows its destination (issue 6).

Colour and wrapping are for a person at a terminal; a pipe, a CI log or an ``--output`` file get
plain, unwrapped text (one finding per line, so ``grep`` sees it whole). ``NO_COLOR`` and
``FORCE_COLOR`` are honoured; the progress bar goes to stderr only when stderr is a terminal and
is cleared on every way out. The terminal cases run the real CLI on a pseudo-terminal.
"""

from __future__ import annotations

import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE, simple_case, write_json
from rich.console import Console

import curate.cli.main as cli
import curate.cli.terminal as term
from curate.cli.commands import load_and_audit
from curate.families import get_family

ESC = "\x1b["
#: Select Graphic Rendition (colour, bold...), as opposed to cursor movement.
SGR = re.compile(r"\x1b\[[0-9;]*m")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
#: The variables that steer colour and progress, removed before each case sets its own.
STEERING = ("NO_COLOR", "FORCE_COLOR", "CI", "COLUMNS", "LINES", "TERM", "COLORTERM")

LONG_ALIAS = "a very long alias " * 17  # KE110 quotes it twice: a message of 350+ characters
LONG_ID = "case-with-a-rather-long-identifier-" * 4


def env(**values: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in STEERING}
    return {**base, "TERM": "xterm-256color", **values}


def curate_cmd(*argv: object) -> list[str]:
    return [sys.executable, "-m", "curate.cli.main", *map(str, argv)]


def piped(*argv: object, **environ: str) -> subprocess.CompletedProcess[str]:
    """The CLI with stdout and stderr on pipes, as in ``curate ... | grep`` or a CI log."""
    return subprocess.run(
        curate_cmd(*argv),
        env=env(**environ),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def on_pty(*argv: object, columns: int = 100, **environ: str) -> tuple[int, str, str]:
    """The CLI with stdout and stderr on two pseudo-terminals of ``columns`` columns."""
    import fcntl
    import termios

    masters, slaves = [], []
    for _ in range(2):
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        masters.append(master)
        slaves.append(slave)
    proc = subprocess.Popen(
        curate_cmd(*argv),
        env=env(**environ),
        stdin=subprocess.DEVNULL,
        stdout=slaves[0],
        stderr=slaves[1],
    )
    for slave in slaves:
        os.close(slave)
    chunks: dict[int, bytes] = {m: b"" for m in masters}
    open_fds = set(masters)
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], 120)
        if not ready:
            proc.kill()
            raise AssertionError("the CLI on a pseudo-terminal hung")
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:  # EIO: the child closed its side
                data = b""
            if data:
                chunks[fd] += data
            else:
                open_fds.discard(fd)
                os.close(fd)
    rc = proc.wait(timeout=120)
    out, err = (chunks[m].decode("utf-8", "replace") for m in masters)
    return rc, out, err


@pytest.fixture(scope="module")
def long_input(tmp_path_factory) -> Path:
    """Three clean cases, the first with a long id and a repeated long alias (KE110), stored
    under a long folder name: every long thing a text report prints."""
    folder = tmp_path_factory.mktemp("t") / ("a-long-folder-name-" * 8)
    folder.mkdir()
    cases = [simple_case(i) for i in range(1, 4)]
    cases[0]["case_id"] = LONG_ID
    cases[0]["answer_alias"] = [LONG_ALIAS, LONG_ALIAS]
    return write_json(folder / ("a-long-file-name-" * 4 + ".json"), cases)


# --------------------------------------------------------------------------- pipes and files


def test_piped_text_is_plain_and_unwrapped(long_input: Path) -> None:
    res = piped("audit", "mquake", long_input, "--fail-on", "never")
    assert res.returncode == 0, res.stderr
    assert ESC not in res.stdout and ESC not in res.stderr
    assert res.stderr == ""  # no progress line on a pipe
    lines = res.stdout.splitlines()
    (finding,) = [line for line in lines if line.lstrip().startswith("KE110")]
    assert len(finding) > 300 + len(LONG_ID)
    assert f"record {LONG_ID}, answer_alias:" in finding
    assert finding.endswith(f"'{LONG_ALIAS}'")
    assert any(line.startswith(f"{long_input}  3 records") for line in lines)


def test_force_color_colours_a_pipe_but_never_a_file(tmp_path: Path) -> None:
    res = piped("audit", "mquake", SAMPLE, "--fail-on", "never", FORCE_COLOR="1")
    assert res.returncode == 0, res.stderr
    assert SGR.search(res.stdout)
    report = tmp_path / "report.txt"
    res = piped("audit", "mquake", SAMPLE, "--fail-on", "never", "-o", report, FORCE_COLOR="1")
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    text = report.read_text(encoding="utf-8")
    assert "findings per rule" in text and ESC not in text


@pytest.mark.parametrize(
    "environ",
    [{}, {"FORCE_COLOR": ""}, {"NO_COLOR": "1"}, {"NO_COLOR": "1", "FORCE_COLOR": "1"}],
    ids=["plain", "empty-force", "no-color", "no-color-wins"],
)
def test_in_process_pipe_colour_rules(capsys, monkeypatch, environ: dict[str, str]) -> None:
    for name in STEERING:
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert cli.main(["audit", "mquake", str(SAMPLE), "--fail-on", "never"]) == 0
    out, err = capsys.readouterr()
    assert "findings per rule" in out
    assert ESC not in out and ESC not in err


# --------------------------------------------------------------------------- a real terminal


def test_terminal_gets_colour_width_and_a_progress_bar_that_is_cleared() -> None:
    rc, out, err = on_pty("audit", "mquake", SAMPLE, "--fail-on", "never", columns=72)
    assert rc == 0
    assert SGR.search(out)  # a terminal: colour
    plain = ANSI.sub("", out).split("\r\n")
    assert max(len(line) for line in plain) <= 72  # wrapped to the terminal, not to 120
    assert "\x1b[?25l" in err  # the bar hid the cursor...
    frames = ANSI.sub("", err)
    n = len(get_family("mquake").rules.select(None, None))
    assert f"rule {n}/{n}: KE402 near-duplicate-question" in frames
    # ...and stopping it showed the cursor again and erased the bar's line
    assert err.rstrip("\r\n").endswith("\x1b[?25h\r\x1b[1A\x1b[2K")


def test_no_color_on_a_terminal_and_no_bar_in_ci(tmp_path: Path) -> None:
    rc, out, err = on_pty("audit", "mquake", SAMPLE, "--fail-on", "never", NO_COLOR="1", CI="1")
    assert rc == 0
    assert "findings per rule" in out
    assert ESC not in out
    assert err == ""  # CI: no progress even on a terminal
    report = tmp_path / "r.txt"
    rc, out, err = on_pty("audit", "mquake", SAMPLE, "-o", report, FORCE_COLOR="1", CI="1")
    assert rc == 0 and out == ""
    assert ESC not in report.read_text(encoding="utf-8")


# --------------------------------------------------------------------------- progress callbacks


def test_audit_reports_rule_i_of_n_and_rules_done() -> None:
    """The stage names the rule being run as ``rule i/n`` and the count is the rules done, so
    the count can no longer be read as a finding count (it was ``KE101 hop-count-mismatch: 2``)."""
    fam = get_family("mquake")
    calls: list[tuple[str, int]] = []
    data = fam.load([SAMPLE], progress=lambda stage, n: calls.append((stage, n)))
    assert calls and calls[-1] == (f"read {SAMPLE.name}", data.inputs[0].records)
    calls.clear()
    fam.audit(data, select=["KE1"], progress=lambda stage, n: calls.append((stage, n)))
    chosen = fam.rules.select(["KE1"], None)
    assert calls == [
        (f"rule {i + 1}/{len(chosen)}: {r.code} {r.name}", i) for i, r in enumerate(chosen)
    ]


def terminal_console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=True, width=100, color_system=None), buf


def test_progress_bar_follows_the_callbacks(monkeypatch) -> None:
    console, buf = terminal_console()
    bar = term.TerminalProgress(console)
    monkeypatch.setattr(term, "progress", lambda: bar)
    fam = get_family("mquake")
    _, report = load_and_audit(fam, [SAMPLE], fam.options())
    (task,) = bar._bar.tasks
    n = len(report.rules_run)
    assert task.description == f"rule {n}/{n}: KE402 near-duplicate-question"
    assert (task.completed, task.total) == (n - 1, n)
    assert not bar._bar.live.is_started  # stopped before the report is written
    assert buf.getvalue().endswith("\x1b[?25h\r\x1b[1A\x1b[2K")


class Interrupted(term.TerminalProgress):
    """Ctrl-C while the third rule runs."""

    def __call__(self, stage: str, n: int) -> None:
        super().__call__(stage, n)
        if stage.startswith("rule 3/"):
            raise KeyboardInterrupt


def test_progress_bar_is_cleared_on_ctrl_c_and_on_errors(monkeypatch, capsys, tmp_path) -> None:
    console, buf = terminal_console()
    bar = Interrupted(console)
    monkeypatch.setattr(term, "progress", lambda: bar)
    assert cli.main(["audit", "mquake", str(SAMPLE)]) == 130
    assert bar._bar.tasks[0].description.startswith("rule 3/")
    assert not bar._bar.live.is_started
    assert buf.getvalue().endswith("\x1b[?25h\r\x1b[1A\x1b[2K")

    console, buf = terminal_console()
    bar = term.TerminalProgress(console)
    monkeypatch.setattr(term, "progress", lambda: bar)
    broken = tmp_path / "broken.json"
    broken.write_text('[{"case_id": 1,', encoding="utf-8")
    capsys.readouterr()
    assert cli.main(["audit", "mquake", str(SAMPLE), str(broken)]) == 2
    assert bar._bar.tasks[0].description == f"read {SAMPLE.name}"  # the bar was up
    assert not bar._bar.live.is_started
    assert buf.getvalue().endswith("\x1b[?25h\r\x1b[1A\x1b[2K")
    assert capsys.readouterr().err.startswith(f"curate: error: {broken}")


def test_ray_tasks_fill_a_bar_not_a_row_count() -> None:
    """The Ray engine's "ray: <units> k/N" is tasks done over the total (a bar), not "k rows"
    as a reader's count is."""
    console, _ = terminal_console()
    bar = term.TerminalProgress(console)
    bar("ray: shards of big.jsonl 3/8", 3)
    (task,) = bar._bar.tasks
    assert (task.completed, task.total, task.fields["done"]) == (3, 8, "")
    bar("read big.jsonl", 41_000)
    (task,) = bar._bar.tasks
    assert (task.total, task.fields["done"]) == (None, "41,000 rows")
    bar("ray: shards of big.jsonl 4/8", 4)
    (task,) = bar._bar.tasks
    assert (task.completed, task.total) == (4, 8)
    bar.stop()


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_on_a_terminal_outside_ci(monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert term.progress() is None
    monkeypatch.setattr(sys, "stderr", FakeTerminal())
    assert isinstance(term.progress(), term.TerminalProgress)
    monkeypatch.setenv("CI", "true")
    assert term.progress() is None
    monkeypatch.setenv("CI", "")  # empty is unset
    assert term.progress() is not None
