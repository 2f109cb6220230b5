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
from curate.outputs import MANIFEST, MARKER_DIR, is_curate_folder, staged_folder, sweep_stale

CURATE = [sys.executable, "-m", "curate"]


def tree_hash(root: Path) -> dict[str, str]:
    """Every file under root (hidden ones too) → sha256: the 'byte-identical' check."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def run(args: list[str], cwd: Path, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CURATE_DEBUG"}
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
        ("sub", ["export", "mquake", "in.json", "--out", "in.json"], "existing file"),
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
    # with --overwrite: replaced, a file the user put in it goes with it (the folder is curate's)
    (out / "stray.txt").write_text("x")
    assert main(["export", "mquake", str(SAMPLE), "--out", str(out), "--overwrite"]) == 0
    assert not (out / "stray.txt").exists() and (out / "README.md").exists()
    assert leftovers(tmp_path) == []
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
    r = run(args, cwd=tmp_path)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Usage: curate" in r.stderr and "Error:" in r.stderr
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
        from curate.outputs import staged_folder
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
