"""The output gate: curate never deletes or overwrites what it did not create.

Each case is a reproduction from a new-user review (issue 6): it must end with exit 2 and one
line on stderr, every input byte-identical, and no staging leftovers beside the target.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import SAMPLE

from curate.cli.main import main
from curate.core.outputs import MANIFEST, MARKER_DIR, is_curate_folder, staged_folder, sweep_stale

CURATE = [sys.executable, "-m", "curate"]


def tree_hash(root: Path) -> dict[str, str]:
    """Every file under root (hidden ones too) → sha256: the 'byte-identical' check."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def run(args: list[str], cwd: Path, home: Path | None = None, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CURATE_DEBUG"}
    if home is not None:  # a command that might write to ~ (shell files) writes there instead
        env["HOME"] = str(home)
    return subprocess.run(
        [*CURATE, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300, **kw
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if ".curate-" in p.name)


@pytest.fixture
def sub(tmp_path: Path) -> Path:
    """A user's folder: the dataset, a note, a nested folder of their own."""
    d = tmp_path / "sub"
    d.mkdir()
    shutil.copy(SAMPLE, d / "in.json")
    (d / "notes.txt").write_text("my notes\n")
    (d / "keep").mkdir()
    (d / "keep" / "a.txt").write_text("a\n")
    return d


@pytest.mark.parametrize(
    ("cwd_rel", "args", "says"),
    [
        # the review's reproductions: each used to delete the input
        ("sub", ["fix", "mquake", "in.json", "--out", "../sub", "--overwrite"], "current folder"),
        (".", ["export", "mquake", "sub/in.json", "--out", "sub", "--overwrite"], "input"),
        (".", ["export", "mquake", "sub/in.json", "--out", "sub"], "input"),
        ("sub", ["export", "mquake", "in.json", "--out", "."], "current folder"),
        # the input itself: refused as the input it is, before "is an existing file"
        ("sub", ["export", "mquake", "in.json", "--out", "in.json"], "is an input"),
        ("sub", ["export", "mquake", "in.json", "--out", "notes.txt"], "existing file"),
        ("sub", ["export", "mquake", "in.json", "--out", "keep", "--overwrite"], "not written"),
        ("sub", ["audit", "mquake", "in.json", "--output", "in.json"], "is an input"),
        ("sub", ["audit", "mquake", "in.json", "-o", "./in.json"], "is an input"),
        ("sub", ["validate", "mquake", "in.json", "-o", "keep"], "is a folder"),
        (
            "sub",
            ["audit", "mquake", "in.json", "--edit-set", "ids:notes.txt", "-o", "notes.txt"],
            "is an input",
        ),
    ],
)
def test_refused_outputs_touch_nothing(sub: Path, cwd_rel: str, args, says) -> None:
    before = tree_hash(sub.parent)
    r = run(args, cwd=sub.parent / cwd_rel)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert tree_hash(sub.parent) == before
    assert leftovers(sub) == [] and leftovers(sub.parent) == []


def test_out_inside_an_input_folder_is_refused(tmp_path: Path) -> None:
    hf = tmp_path / "hf"
    assert main(["export", "mquake", str(SAMPLE), "--out", str(hf)]) == 0
    before = tree_hash(hf)
    rc = main(["export", "mquake", str(hf), "--out", str(hf / "v2")])
    assert rc == 2
    assert tree_hash(hf) == before


def test_hard_link_of_the_input_is_the_input(sub: Path) -> None:
    os.link(sub / "in.json", sub / "alias.json")
    before = tree_hash(sub)
    assert main(["audit", "mquake", str(sub / "in.json"), "-o", str(sub / "alias.json")]) == 2
    assert tree_hash(sub) == before


def test_overwrite_replaces_only_curate_folders(tmp_path: Path, capsys) -> None:
    out = tmp_path / "hf"
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out)]) == 0
    assert is_curate_folder(out)
    marker = (out / MARKER_DIR / MANIFEST).read_text()
    assert '"tool": "curate"' in marker and "export" in marker and "sha256" in marker
    # again without --overwrite: refused, folder unchanged
    before = tree_hash(out)
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert tree_hash(out) == before
    # with --overwrite: replaced, as long as it holds only what curate wrote
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out), "--overwrite"]) == 0
    assert (out / "README.md").exists() and leftovers(tmp_path) == []
    # an empty folder of the user's is fine to write into
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["export", "mquake", str(SAMPLE), "--out", str(empty)]) == 0
    assert is_curate_folder(empty)


def test_marker_is_not_uploaded(tmp_path: Path, monkeypatch) -> None:
    import huggingface_hub

    seen: dict = {}

    class Api:
        def create_repo(self, *a, **kw):
            pass

        def upload_folder(self, **kw):
            seen.update(kw)

    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    out = tmp_path / "hf"
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out), "--push-to-hub", "a/b"]) == 0
    assert seen["ignore_patterns"] == [".curate/*"]


def test_failed_push_is_exit_2_and_keeps_the_folder(tmp_path: Path, monkeypatch, capsys) -> None:
    import huggingface_hub

    class Offline:
        def create_repo(self, *a, **kw):
            raise ConnectionError("[Errno -2] Name or service not known")

    monkeypatch.setattr(huggingface_hub, "HfApi", Offline)
    out = tmp_path / "hf"
    rc = main(["export", "mquake", str(SAMPLE), "--out", str(out), "--push-to-hub", "me/mq"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert len(err) == 1 and "push to me/mq failed" in err[0] and f"{out} stays" in err[0]
    assert (out / "README.md").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["bogus"],
        ["audit", "mquake"],
        ["audit", "mquake", "x.json", "--format", "xml"],
        ["audit", "mquake", "x.json", "--fail-on", "bogus"],
        ["rules", "--format", "yaml"],
        ["fix", "glycan", "x.csv", "--out", "o", "--seed", "abc"],
        ["export", "mquake", "x.json", "--out", "o", "--max-rows-per-shard", "0"],
        ["--install-completion"],
        ["audit"],
        ["export", "mquake", "x.json"],  # --out missing
    ],
)
def test_usage_errors_exit_2_with_usage(tmp_path: Path, args) -> None:
    r = run(args, cwd=tmp_path, home=tmp_path)  # nothing may appear there either
    assert r.returncode == 2, (r.returncode, r.stderr)
    # one line, like every exit 2, pointing at the help; no family given: the line lists the
    # families, and the help is not printed (it was, whole, before the line)
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("curate: error: ") and "--help" in line, line
    if args == ["audit"]:
        assert "missing FAMILY" in line and "knowledge-editing" in line and r.stdout == ""
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "path"),
    [
        (["export", "mquake", str(SAMPLE), "--out", "/proc/curate-out"], "/proc/curate-out"),
        (["audit", "mquake", str(SAMPLE), "-o", "/proc/curate.json"], "/proc/curate.json"),
        (["audit", "mquake", str(SAMPLE), "-o", "/sys/kernel/curate.txt"], "/sys/kernel/"),
        (["audit", "mquake", str(SAMPLE), "-o", "/dev/full"], "/dev/full: No space left"),
    ],
)
def test_unwritable_destinations_exit_2_naming_the_path(tmp_path: Path, args, path) -> None:
    """Read-only file systems, a full disk: one line with the user's path, not our temp name."""
    if not Path(args[-1]).parent.exists():
        pytest.skip("no such system folder here")
    r = run(args, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and path in lines[0] and ".curate-" not in lines[0], r.stderr


def test_dev_null_output_stays_a_device(tmp_path: Path) -> None:
    r = run(["audit", "mquake", str(SAMPLE), "-o", os.devnull], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert Path(os.devnull).is_char_device()


_SIGNAL_DURING_WRITE = """
import os, signal, sys
import pyarrow.parquet as pq
from curate.cli.main import main
real = pq.ParquetWriter.write_table
def write_table(self, *a, **kw):
    real(self, *a, **kw)
    os.kill(os.getpid(), signal.{sig})
pq.ParquetWriter.write_table = write_table
sys.exit(main(["export", "mquake", {sample!r}, "--out", {out!r}]))
"""


@pytest.mark.parametrize(
    ("sig", "code", "word"), [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated")]
)
def test_signal_mid_export_cleans_up(tmp_path: Path, sig: str, code: int, word: str) -> None:
    out = tmp_path / "hf"
    script = _SIGNAL_DURING_WRITE.format(sig=sig, sample=str(SAMPLE), out=str(out))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == code, r.stderr
    assert r.stderr.strip() == f"curate: {word}"
    assert list(tmp_path.iterdir()) == []  # no half-written folder, no staging folder


def test_sigkill_leftovers_are_swept_by_the_next_run(tmp_path: Path) -> None:
    out = tmp_path / "hf"
    killed = textwrap.dedent(
        f"""
        import os, signal
        from curate.core.outputs import staged_folder
        with staged_folder({str(out)!r}) as tmp:
            (tmp / "data").mkdir()
            (tmp / "data" / "train-00000-of-00001.parquet").write_bytes(b"partial")
            os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    r = subprocess.run([sys.executable, "-c", killed], capture_output=True, timeout=120)
    assert r.returncode == -signal.SIGKILL
    assert len(leftovers(tmp_path)) == 1 and not out.exists()
    # a user's folder that merely looks like ours (no marker) is never touched
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    mine = tmp_path / f".hf.curate-tmp-{gone.pid}-mine"
    mine.mkdir()
    (mine / "a.txt").write_text("not curate's")
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out)]) == 0
    assert leftovers(tmp_path) == [mine.name]
    assert (out / "README.md").exists()


def test_killed_between_the_two_renames_restores_the_previous_output(tmp_path: Path) -> None:
    out = tmp_path / "hf"
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out)]) == 0
    before = tree_hash(out)
    pid = subprocess.Popen([sys.executable, "-c", "pass"])
    pid.wait()
    os.replace(out, tmp_path / f".hf.curate-old-{pid.pid}-abc")
    assert sweep_stale(out) == []
    assert tree_hash(out) == before


def test_staged_folder_failure_leaves_nothing(tmp_path: Path) -> None:
    out = tmp_path / "hf"
    with pytest.raises(RuntimeError), staged_folder(out) as tmp:
        (tmp / "x").write_text("y")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_python_dash_m_curate(tmp_path: Path) -> None:
    r = run(["--version"], cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("curate ")


def _user_adds(out: Path, kind: str) -> None:
    if kind == "note":
        (out / "NOTES.md").write_text("my notes\n")
    elif kind == "git":
        (out / ".git" / "objects").mkdir(parents=True)
        (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    elif kind == "edited card":
        with open(out / "README.md", "a") as fh:
            fh.write("\nMy own paragraph.\n")
    elif kind == "nested":
        (out / "data" / "extra.parquet").write_bytes(b"mine")
    elif kind == "forged marker":
        (out / MARKER_DIR / MANIFEST).write_text('{"tool": "curate"}')
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["note", "git", "edited card", "nested", "forged marker"])
def test_overwrite_never_deletes_what_a_user_added(tmp_path: Path, capsys, kind: str) -> None:
    """A curate folder the user has since added to (or edited) is no longer curate's alone."""
    out = tmp_path / "hf"
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out)]) == 0
    _user_adds(out, kind)
    before = tree_hash(out)
    capsys.readouterr()
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "curate did not write" in err, err
    assert tree_hash(out) == before and leftovers(tmp_path) == []


def test_second_signal_during_cleanup_still_cleans_up(tmp_path: Path) -> None:
    """Ctrl-C twice: the second arrives while the staging folder is being removed."""
    out = tmp_path / "hf"
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        import curate.core.outputs as o
        o.install_signal_handlers()
        real = o.shutil.rmtree
        def slow_rmtree(path, *a, **kw):
            os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, mid-cleanup
            return real(path, *a, **kw)
        try:
            with o.staged_folder({str(out)!r}) as tmp:
                for i in range(50):
                    (tmp / f"f{{i}}").write_text("x")
                (tmp / "data").mkdir()
                (tmp / "data" / "a.parquet").write_text("x")
                o.shutil.rmtree = slow_rmtree
                os.kill(os.getpid(), signal.SIGINT)
        except o.Interrupted as e:
            sys.exit(e.exit_code)
        """
    )
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 130, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_empty_existing_folder_is_filled_in_place(tmp_path: Path) -> None:
    """An empty --out folder (often a mount point, which cannot be renamed) keeps its inode."""
    out = tmp_path / "mnt"
    out.mkdir()
    inode = out.stat().st_ino
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out)]) == 0
    assert out.stat().st_ino == inode and (out / "README.md").exists()
    assert is_curate_folder(out) and leftovers(tmp_path) == []


def test_a_live_run_in_another_pid_namespace_is_not_swept(tmp_path: Path) -> None:
    """Liveness is a lock, not a pid: a run whose pid we cannot see keeps its staging."""
    out = tmp_path / "hf"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from curate.core.outputs import staged_folder
                with staged_folder({str(out)!r}) as tmp:
                    print(tmp.name, flush=True)
                    sys.stdin.readline()
                """
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        name = holder.stdout.readline().strip()
        # rename it as if made by a pid that does not exist here (another namespace)
        fake = tmp_path / name.replace(f"-{holder.pid}-", "-999999999-")
        os.replace(tmp_path / name, fake)
        assert sweep_stale(out) == [] and fake.is_dir()
    finally:
        holder.communicate("\n", timeout=60)
    shutil.rmtree(fake, ignore_errors=True)


def test_long_names_leave_room_for_staging(tmp_path: Path) -> None:
    name = "r" * 240 + ".json"  # legal (under 255 bytes), but not with a 30-byte suffix added
    assert main(["audit", "mquake", str(SAMPLE), "-o", str(tmp_path / name)]) == 0
    long_dir = "d" * 250
    assert main(["export", "mquake", str(SAMPLE), "--out", str(tmp_path / long_dir)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, long_dir])


def test_dash_output_is_stdout_and_symlinks_are_written_through(tmp_path: Path, capsys) -> None:
    assert main(["audit", "mquake", str(SAMPLE), "-o", "-", "-f", "json"]) == 0
    assert capsys.readouterr().out.startswith("{")
    assert not (Path.cwd() / "-").exists()
    real = tmp_path / "reports" / "audit.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    # "old" is no report of curate's: the link's target is refused like the file itself ...
    assert main(["audit", "mquake", str(SAMPLE), "-o", str(link), "-f", "json"]) == 2
    assert real.read_text() == "old"
    # ... and replaced, through the link, when asked
    assert main(["audit", "mquake", str(SAMPLE), "-o", str(link), "-f", "json", "--overwrite"]) == 0
    assert link.is_symlink() and real.read_text().startswith("{")
    # the next run replaces curate's own report without being asked
    assert main(["audit", "mquake", str(SAMPLE), "-o", str(link), "-f", "text"]) == 0
    assert link.is_symlink() and real.read_text().endswith("generator: curate 0.1.0\n")


def test_closed_pipe_is_quiet(tmp_path: Path) -> None:
    # The reader is gone before curate writes (``true`` reads nothing and exits while curate is
    # still importing); with ``head -c 10`` the whole listing could fit in the pipe buffer
    # before head closed it, and curate would exit 0 (a race seen in 3 of 20 runs).
    r = subprocess.run(
        f"{sys.executable} -m curate rules | true; echo ${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.stdout.strip() == "141", r  # killed by SIGPIPE, like cat; never "1 = findings"
    assert "Traceback" not in r.stderr and "Exception" not in r.stderr


def test_a_closed_stdout_is_141_after_a_process_pool_and_for_a_short_report(
    tmp_path: Path,
) -> None:
    """``| head`` ends quietly with 141 however the report reached the closed pipe: after a
    process pool (SIGPIPE ignored, so a BrokenPipeError that click and typer would turn into
    exit 1), and for a report small enough to sit in stdout's buffer until the end."""
    from icrl_data import write_file

    data = write_file(tmp_path / "icrl.hdf5", tasks=8, histories=2, steps=2000)
    for command in (
        f"{sys.executable} -m curate audit icrl {data} --workers 2",
        f"{sys.executable} -m curate audit mquake {SAMPLE}",
    ):
        r = subprocess.run(
            f"{command} | true; echo ${{PIPESTATUS[0]}}",
            shell=True,
            executable="/bin/bash",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert r.stdout.strip() == "141", (command, r)
        assert r.stderr == "", (command, r.stderr)


def test_the_cli_leaves_sigpipe_ignored(capsys: pytest.CaptureFixture[str]) -> None:
    """SIGPIPE's default action killed the whole process for a write to *any* closed pipe (a
    process pool's, its resource tracker's: ``fix icrl`` died with -13 after Ctrl-C, its
    staging folder left). The CLI leaves it ignored, as Python sets it."""
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    assert main(["rules", "KE001"]) == 0
    assert "KE001" in capsys.readouterr().out
    assert signal.getsignal(signal.SIGPIPE) == signal.SIG_IGN
    assert sys.stdout is not None and type(sys.stdout).__name__ != "_GuardedStdout"


def test_sighup_cleans_up_like_sigint(tmp_path: Path) -> None:
    out = tmp_path / "hf"
    script = _SIGNAL_DURING_WRITE.format(sig="SIGHUP", sample=str(SAMPLE), out=str(out))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 129 and r.stderr.strip() == "curate: hangup"
    assert list(tmp_path.iterdir()) == []


def test_bad_repo_id_is_refused_before_any_work(tmp_path: Path, capsys) -> None:
    out = tmp_path / "hf"
    rc = main(["export", "mquake", str(SAMPLE), "--out", str(out), "--push-to-hub", "a b//c"])
    assert rc == 2 and not out.exists()
    assert "not a valid dataset repo id" in capsys.readouterr().err


def _subprocess_exit(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, timeout=120
    )


def test_a_signal_python_swallows_still_ends_the_run() -> None:
    """A handler's exception raised while a weakref callback runs cannot leave the callback
    (Python prints "Exception ignored in ..." and goes on): it is sent again, and the run ends
    with the signal's exit code and no traceback instead of finishing as if nothing happened."""
    r = _subprocess_exit(
        """
        import signal, sys, time, weakref
        import curate.core.outputs as o
        o.install_signal_handlers()

        class Thing:
            pass

        def callback(_ref):
            signal.raise_signal(signal.SIGTERM)  # handled at the next line, inside the callback
            sum(range(10))

        thing = Thing()
        ref = weakref.ref(thing, callback)
        try:
            del thing  # the callback runs here; its Interrupted is dropped by Python
            for _ in range(200):
                time.sleep(0.01)  # the run goes on: the signal must come back meanwhile
        except o.Interrupted as e:
            sys.exit(e.exit_code)
        sys.exit(0)
        """
    )
    assert r.returncode == 143, (r.returncode, r.stderr)
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_signal_during_the_final_renames_leaves_a_complete_output(tmp_path: Path) -> None:
    """The renames that publish a folder are one step for a signal: one that comes during them
    waits until the output is in place, then ends the run, and the CLI says it is complete."""
    out = tmp_path / "hf"
    r = _subprocess_exit(
        f"""
        import os, signal, sys
        import curate.core.outputs as o
        from curate.cli.main import _interrupt_line
        o.install_signal_handlers()
        real = o.os.replace
        def replace(src, dst):
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of the renames
            return real(src, dst)
        try:
            with o.staged_folder({str(out)!r}) as tmp:
                (tmp / "data.parquet").write_text("x")
                o.os.replace = replace
        except o.Interrupted as e:
            print(_interrupt_line(e.signum), file=sys.stderr)
            sys.exit(e.exit_code)
        """
    )
    assert r.returncode == 130, r.stderr
    assert r.stderr.strip() == f"interrupted after {out} was written (complete)", r.stderr
    assert (out / "data.parquet").read_text() == "x" and is_curate_folder(out)
    assert leftovers(tmp_path) == []


def test_a_signal_recorded_before_the_rename_publishes_nothing(tmp_path: Path) -> None:
    """A signal whose exception was lost on its way is honoured at the rename: no output."""
    target = tmp_path / "report.json"
    r = _subprocess_exit(
        f"""
        import signal, sys
        import curate.core.outputs as o
        o.install_signal_handlers()
        o._received.append(signal.SIGHUP)  # as the handler records it before raising
        try:
            o.write_bytes_atomic({str(target)!r}, b"{{}}")
        except o.Interrupted as e:
            sys.exit(e.exit_code)
        """
    )
    assert r.returncode == 129, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_signal_inside_polars_python_layer_is_raised_back_in_our_frame(monkeypatch) -> None:
    """Polars' Rust core calls its own Python code (dtype objects for ``DataFrame.schema``) and
    panics when that raises: a signal handled there came out as ``PanicException`` with Rust's
    message on stderr (``export deepfake``, CI). The handler raises in the caller's frame once
    polars has returned. Without that, two of three signals sent into this loop panicked."""
    import datetime
    import threading
    import time

    import polars as pl

    from curate.core import outputs

    # This test's frames stand for curate's own: the loop below is the caller polars returns to.
    monkeypatch.setattr(outputs, "_CURATE", str(Path(__file__).parent) + os.sep)
    when = datetime.datetime(2020, 1, 1)
    wide = pl.DataFrame(
        {
            f"c{i}": [[1]] if i % 3 == 0 else [when] if i % 3 == 1 else [{"a": 1}]
            for i in range(2000)
        }
    )

    def loop() -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 2.0:
            wide.schema  # noqa: B018  the dtype conversion that calls back into Python

    main_thread = threading.main_thread().ident or 0
    previous = {s: signal.getsignal(s) for s in outputs.STOP_SIGNALS}
    ended: list[str] = []
    tracing = sys.gettrace()
    try:
        for attempt in range(20):
            outputs.install_signal_handlers()
            delay = 0.01 + attempt * 0.002
            threading.Timer(delay, signal.pthread_kill, (main_thread, signal.SIGINT)).start()
            try:
                loop()
                ended.append("not interrupted")
            except BaseException as e:  # PanicException is what this test is about
                ended.append(type(e).__name__)
            assert sys.gettrace() is tracing
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        outputs.forget_run()  # the twenty signals are this test's, not the next one's
    assert ended == ["Interrupted"] * 20
