"""The README's tour runs as written.

A tour that names files nobody has, or whose commands have drifted from the CLI, is the first
thing a new user hits and the last thing anyone re-reads. This test takes every command of the
``bash`` blocks under the README's "A 5-minute tour" heading (up to the next ``## `` heading),
then those of the ``table`` family's, ``curate overlap`` and ``curate diff`` sections
(:data:`MORE_HEADINGS`), in order, in a working folder that is a temporary copy of the layout
the tour reads (``curate/data/samples/``). Each command must exit with the code its comment
states (``(exit N)``; 0 when none is stated), and afterwards the temporary folder must hold the
unchanged samples and ``tour-out/`` only: the tour writes nowhere else.

A command that cannot run here (network, Ray, a cluster, a big file) would carry
``(not run by the tour test: REASON)`` in its comment and be skipped by name; the tour has none
today.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from curate.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SAMPLES = Path("curate") / "data" / "samples"
TOUR_HEADING = "## A 5-minute tour"
#: Sections run after the tour, in the same working folder (they may read what it made).
MORE_HEADINGS = (
    "## Any table: the `table` family",
    "## Overlap between datasets, splits and named sets: `curate overlap`",
    "## What changed between two versions: `curate diff`",
)
OUT = "tour-out"
EXIT_MARK = re.compile(r"\(exit (\d+)\)")
SHELL_SYNTAX = re.compile(r"[|<>;&$`]")
SKIP_MARK = re.compile(r"\(not run by the tour test: [^)]+\)")


@dataclass(frozen=True)
class Command:
    """One command of the tour: the shell line, the exit code it must give, its README line."""

    line: str
    expected: int
    readme_line: int


def _strip_comment(line: str) -> tuple[str, str]:
    """Split a shell line into (command, comment) at the first ``#`` outside quotes that starts
    a word, as the shell does."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1 :]
    return line.rstrip(), ""


def tour_commands(text: str, heading: str = TOUR_HEADING) -> list[Command]:
    """The commands of one README section in order: the ``bash`` blocks between ``heading``
    and the next second-level heading, continuation lines joined, comment lines dropped."""
    lines = text.split("\n")
    start = lines.index(heading)
    commands: list[Command] = []
    in_block = False
    pending = ""
    pending_at = 0
    for no, raw in enumerate(lines[start + 1 :], start=start + 2):
        if not in_block and raw.startswith("## "):
            break
        if raw.startswith("```"):
            in_block = raw.strip() == "```bash" if not in_block else False
            continue
        if not in_block:
            continue
        command, comment = _strip_comment(raw)
        if pending:
            command = pending + " " + command.strip()
        elif not command.strip():
            continue
        else:
            pending_at = no
        if command.endswith("\\"):
            pending = command[:-1].rstrip()
            continue
        pending = ""
        if SKIP_MARK.search(comment):
            continue
        mark = EXIT_MARK.search(comment)
        commands.append(Command(command.strip(), int(mark.group(1)) if mark else 0, pending_at))
    return commands


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_the_tour_is_found_and_covers_every_family() -> None:
    """Guard the extraction itself: a renamed heading or fence would make the tour test pass on
    nothing."""
    commands = tour_commands(README.read_text(encoding="utf-8"))
    verbs = {tuple(c.line.split()[:3]) for c in commands if c.line.startswith("curate ")}
    for family in ("mquake", "glycan", "icrl", "deepfake"):
        for verb in ("audit", "fix", "export"):
            assert any(v[1:3] == (verb, family) for v in verbs), (verb, family)
    assert any(c.expected == 1 for c in commands)
    assert len(commands) >= 30


def test_the_readme_tour_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every tour command exits as the README says, and the tour writes only under tour-out/.

    A plain ``curate ...`` line runs in this process through ``curate.cli.main.main``, the
    function the console script (``curate.cli.entry:run``) and ``python -m curate`` call, with
    the same argument list and exit code: one interpreter start for the whole
    tour keeps the test well under a minute on a shared 2-core machine. Any other line
    (``mkdir``, ``printf > file``, or a ``curate`` line with shell syntax) runs in ``bash``, with
    ``curate`` on the ``PATH`` as this interpreter's ``python -P -m curate`` (``-P``: the copied
    ``curate/`` sample folder in the working folder must not shadow the package) and ``python``
    as this interpreter (the README's readers have the venv activated).
    """
    text = README.read_text(encoding="utf-8")
    commands = tour_commands(text)
    for heading in MORE_HEADINGS:
        more = tour_commands(text, heading)
        assert more, f"no bash block under {heading!r}"
        commands += more
    work = tmp_path / "work"
    shutil.copytree(ROOT / SAMPLES, work / SAMPLES)
    before = _digest(work / "curate")
    shim_dir = tmp_path / "bin"
    shim_dir.mkdir()
    shim = shim_dir / "curate"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -P -m curate "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    # ``python`` as the activated venv's (the tour's own scripts import its packages)
    py = shim_dir / "python"
    py.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    py.chmod(py.stat().st_mode | stat.S_IXUSR)
    for name in ("CI", "FORCE_COLOR", "RAY_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_COLOR", "1")
    env = dict(os.environ, PATH=f"{shim_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.chdir(work)
    failures = []
    for command in commands:
        argv = shlex.split(command.line)
        if argv[0] == "curate" and not SHELL_SYNTAX.search(command.line):
            capsys.readouterr()
            rc = main(argv[1:])
            err = capsys.readouterr().err
        else:
            done = subprocess.run(
                ["bash", "-c", command.line], env=env, capture_output=True, text=True, timeout=120
            )
            rc, err = done.returncode, done.stderr
        if rc != command.expected or "Traceback" in err:
            failures.append(
                f"README.md:{command.readme_line}: exit {rc}, README says {command.expected}: "
                f"{command.line}\n{err[-500:]}"
            )
    assert not failures, "\n".join(failures)
    assert sorted(p.name for p in work.iterdir()) == ["curate", OUT]
    assert _digest(work / "curate") == before, "the tour changed or added files under curate/"
    assert (work / OUT / "hf" / "README.md").is_file()
