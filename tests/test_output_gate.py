"""Issue 30, build 1: every file curate writes goes through the output gate.

Each reproduction of the issue's first "Why" bullet runs through the real command line and must
end with exit 2, one line on stderr and the target byte-identical; re-running a report into the
same path works in every format (curate recognises its own file by its generator mark);
``--overwrite`` replaces a file of the user's that is not an input, and never an input.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE
from hypothesis import given, settings
from hypothesis import strategies as st

import curate
from curate.cli.main import main
from curate.core.errors import UsageError
from curate.core.outputs import generator_line, with_generator, written_by_curate

SAMPLES = SAMPLE.parent
GLYCANS = SAMPLES / "glycan_taxonomy_sample.csv"
SETS = SAMPLES / "illusion_technique_sets.json"
AUDIT_FORMATS = ["text", "json", "markdown", "html", "junit", "github", "sarif"]
OVERLAP_FORMATS = ["text", "json", "markdown", "csv", "html"]
USER_NOTE = b"my notes: do not lose\n"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cli(capsys, *argv: object) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, target: Path, *argv: object, says: str = "") -> str:
    """Run, and check the refusal: exit 2, one line, ``target`` untouched, no staging left."""
    before = digest(target) if target.exists() else None
    rc, _, err = cli(capsys, *argv)
    assert rc == 2, err
    assert err.startswith("curate: error: ") and err.count("\n") == 1, err
    assert says in err, err
    assert (digest(target) if target.exists() else None) == before
    assert not [p for p in target.parent.iterdir() if ".curate-" in p.name]
    return err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's project as the issue describes it: data and notes under in/, a pyproject.toml
    configuring ``curate check`` with a baseline, an alias table and a sets file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in").mkdir()
    shutil.copy(SAMPLE, tmp_path / "in" / "data.json")
    (tmp_path / "in" / "notes.txt").write_bytes(USER_NOTE)
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "mine"\n\n[tool.curate]\nbaseline = "curate-baseline.json"\n\n'
        '[[tool.curate.datasets]]\nname = "mq"\nfamily = "mquake"\npaths = ["in/data.json"]\n',
        encoding="utf-8",
    )
    shutil.copy(SETS, tmp_path / "sets.json")
    (tmp_path / "al.csv").write_text("Stable Diffusion,SD\n", encoding="utf-8")
    return tmp_path


# --------------------------------------------------------------------------- the cases


@pytest.mark.parametrize("fmt", AUDIT_FORMATS)
def test_audit_report_never_replaces_a_users_file(project: Path, capsys, fmt: str) -> None:
    notes = project / "in" / "notes.txt"
    refused(
        capsys,
        notes,
        *("audit", "mquake", "in/data.json", "--format", fmt, "--output", "in/notes.txt"),
        says="was not written by curate",
    )
    assert notes.read_bytes() == USER_NOTE


def test_check_report_never_replaces_the_configuration(project: Path, capsys) -> None:
    err = refused(
        capsys,
        project / "pyproject.toml",
        *("check", "--report", "junit=pyproject.toml"),
        says="is an input",
    )
    assert "--report junit" in err
    # --output too, and --overwrite changes nothing: the configuration is an input
    refused(capsys, project / "pyproject.toml", "check", "-o", "pyproject.toml", "--overwrite")


def test_check_report_never_replaces_the_baseline(project: Path, capsys) -> None:
    assert cli(capsys, "check", "--update-baseline")[0] == 0
    baseline = project / "curate-baseline.json"
    for extra in ([], ["--overwrite"], ["--no-baseline"]):
        refused(
            capsys,
            baseline,
            *("check", "--report", "sarif=curate-baseline.json", *extra),
            says="is an input",
        )
    rc, _, err = cli(capsys, "check")  # the baseline still reads: no "not a curate baseline"
    assert rc == 0, err


def test_update_baseline_refuses_inputs_and_foreign_files_before_the_work(
    project: Path, capsys
) -> None:
    refused(
        capsys,
        project / "in" / "data.json",
        *("check", "--baseline", "in/data.json", "--update-baseline"),
        says="is an input",
    )
    refused(
        capsys,
        project / "pyproject.toml",
        *("check", "--baseline", "pyproject.toml", "--update-baseline"),
        says="is an input",
    )
    refused(
        capsys,
        project / "in" / "notes.txt",
        *("check", "--baseline", "in/notes.txt", "--update-baseline"),
        says="not a curate baseline",
    )


def test_overlap_output_never_replaces_its_alias_table(project: Path, capsys) -> None:
    for extra in ([], ["--overwrite"]):
        refused(
            capsys,
            project / "al.csv",
            *("overlap", "sets.json", "--aliases", "al.csv", "--output", "al.csv", *extra),
            says="is an input",
        )
    assert (project / "al.csv").read_text(encoding="utf-8") == "Stable Diffusion,SD\n"


@pytest.fixture
def manifest(project: Path) -> Path:
    """A deepfake manifest naming two real media files, one of them empty (a placeholder the
    gate would replace were it not an input)."""
    from PIL import Image

    (project / "media").mkdir()
    Image.new("RGB", (16, 16), (200, 30, 30)).save(project / "media" / "a.png")
    (project / "media" / "empty.png").write_bytes(b"")
    man = project / "man.csv"
    man.write_text(
        "sample_id,path,split,modality,label\n"
        "s1,media/a.png,train,image,real\n"
        "s2,media/empty.png,test,image,fake\n",
        encoding="utf-8",
    )
    return man


@pytest.mark.parametrize("target", ["media/a.png", "media/empty.png"])
@pytest.mark.parametrize("overwrite", [False, True])
def test_audit_never_replaces_a_media_file_the_manifest_names(
    manifest: Path, capsys, target: str, overwrite: bool
) -> None:
    extra = ["--overwrite"] if overwrite else []
    # refused as the input it is, with or without --overwrite, and never with a hint that
    # --overwrite would do (a.png is also a file curate did not write: that is not the reason)
    err = refused(
        capsys,
        manifest.parent / target,
        *("audit", "deepfake", "man.csv", "--format", "json", "--output", target, *extra),
        says="is an input",
    )
    assert "pass --overwrite" not in err


def test_media_cache_never_replaces_a_media_file(manifest: Path, capsys) -> None:
    refused(
        capsys,
        manifest.parent / "media" / "empty.png",
        *("audit", "deepfake", "man.csv", "--cache", "media/empty.png"),
    )


def test_ids_file_and_mapping_are_inputs(project: Path, capsys) -> None:
    ids = project / "ids.txt"
    ids.write_text("9192\n9209\n", encoding="utf-8")
    refused(
        capsys,
        ids,
        *("audit", "mquake", "in/data.json", "--edit-set", "ids:ids.txt", "-o", "ids.txt"),
        "--overwrite",
        says="is an input",
    )
    mapping = project / "mapping.json"
    mapping.write_text('{"genus": {}}', encoding="utf-8")
    refused(capsys, mapping, "fix", "glycan", GLYCANS, "--mapping", mapping, "--out", mapping)


def test_two_reports_of_one_run_never_share_a_file(project: Path, capsys) -> None:
    refused(capsys, project / "x.xml", "check", "--report", "junit=x.xml", "-o", "x.xml")
    refused(capsys, project / "q.png", "overlap", "sets.json", "-o", "q.png", "--plot", "q")
    assert not (project / "x.xml").exists() and not (project / "q.png").exists()


def test_a_file_created_while_the_audit_ran_is_not_replaced(
    project: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gate looks again just before the write: the first look was minutes earlier."""
    from curate.cli import commands

    target = project / "late.json"
    audit = commands.load_and_audit

    def audit_then_someone_writes(*args, **kwargs):
        done = audit(*args, **kwargs)
        target.write_bytes(USER_NOTE)
        return done

    monkeypatch.setattr(commands, "load_and_audit", audit_then_someone_writes)
    rc, _, err = cli(capsys, "audit", "mquake", "in/data.json", "-f", "json", "-o", target)
    assert rc == 2 and err.count("\n") == 1 and "was not written by curate" in err
    assert target.read_bytes() == USER_NOTE


# --------------------------------------------------------------------------- curate's own files


@pytest.mark.parametrize("fmt", AUDIT_FORMATS)
def test_rerunning_an_audit_into_the_same_report_just_works(
    project: Path, capsys, fmt: str
) -> None:
    target = project / "reports" / f"audit.{fmt}"
    for _ in range(2):
        rc, _, err = cli(capsys, "audit", "mquake", "in/data.json", "-f", fmt, "-o", target)
        assert rc == 0, err
        assert written_by_curate(target)
    assert not [p for p in target.parent.iterdir() if p != target]


def test_text_reports_carry_their_mark_in_files_only(project: Path, capsys) -> None:
    """The mark is the last line of a text/Markdown/GitHub report file; stdout is unchanged."""
    for fmt, last in (("text", "generator: curate"), ("markdown", "<!-- generator: curate")):
        rc, out, _ = cli(capsys, "audit", "mquake", "in/data.json", "-f", fmt)
        assert rc == 0 and "generator: curate" not in out
        target = project / f"r.{fmt}"
        assert cli(capsys, "audit", "mquake", "in/data.json", "-f", fmt, "-o", target)[0] == 0
        written = target.read_text(encoding="utf-8")
        assert written.splitlines()[-1].startswith(last)
        assert written == out + generator_line(fmt)  # the same report, plus its mark


def test_json_report_keeps_its_documented_keys(project: Path, capsys) -> None:
    target = project / "audit.json"
    assert cli(capsys, "audit", "mquake", "in/data.json", "-f", "json", "-o", target)[0] == 0
    doc = json.loads(target.read_text(encoding="utf-8"))
    assert list(doc) == ["tool", "version", "family", "inputs", "options", "findings", "summary"]
    assert doc["tool"] == "curate"


@pytest.mark.parametrize("fmt", AUDIT_FORMATS)
def test_rerunning_check_into_the_same_reports_just_works(project: Path, capsys, fmt: str) -> None:
    args = ["check", "--report", f"{fmt}=out/r.{fmt}", "-o", f"out/main.{fmt}", "-f", fmt]
    for _ in range(2):
        rc, _, err = cli(capsys, *args)
        assert rc == 0, err
    assert written_by_curate(project / "out" / f"r.{fmt}")
    assert written_by_curate(project / "out" / f"main.{fmt}")


@pytest.mark.parametrize("fmt", OVERLAP_FORMATS)
def test_rerunning_overlap_into_the_same_report_and_plots_just_works(
    project: Path, capsys, fmt: str
) -> None:
    for _ in range(2):
        rc, _, err = cli(capsys, "overlap", "sets.json", "-f", fmt, "-o", f"ov.{fmt}")
        assert rc == 0, err
    rc, _, err = cli(capsys, "overlap", "sets.json", "--plot", "figs.png")
    assert rc == 0, err
    rc, _, err = cli(capsys, "overlap", "sets.json", "--plot", "figs.png")
    assert rc == 0, err


def test_a_report_of_another_format_is_still_curates(project: Path, capsys) -> None:
    target = project / "report.out"
    for fmt in AUDIT_FORMATS:
        rc, _, err = cli(capsys, "audit", "mquake", "in/data.json", "-f", fmt, "-o", target)
        assert rc == 0, (fmt, err)


# --------------------------------------------------------------------------- --overwrite


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_overwrite_replaces_a_foreign_file_that_is_no_input(
    project: Path, capsys, fmt: str
) -> None:
    mine = project / "report.txt"
    mine.write_bytes(USER_NOTE)
    refused(capsys, mine, "audit", "mquake", "in/data.json", "-f", fmt, "-o", mine)
    rc, _, err = cli(
        capsys, "audit", "mquake", "in/data.json", "-f", fmt, "-o", mine, "--overwrite"
    )
    assert rc == 0, err
    assert mine.read_bytes() != USER_NOTE and written_by_curate(mine)


def test_overwrite_in_check_and_overlap(project: Path, capsys) -> None:
    for argv, name in (
        (["check", "--report", "junit=j.xml"], "j.xml"),
        (["overlap", "sets.json", "-f", "csv", "-o", "o.csv"], "o.csv"),
        (["overlap", "sets.json", "--plot", "p"], "p.png"),
    ):
        target = project / name
        target.write_bytes(USER_NOTE)
        refused(capsys, target, *argv, says="--overwrite")
        rc, _, err = cli(capsys, *argv, "--overwrite")
        assert rc == 0, err
        assert target.read_bytes() != USER_NOTE


def test_overwrite_never_replaces_an_input(project: Path, capsys) -> None:
    data = project / "in" / "data.json"
    for fmt in AUDIT_FORMATS:
        err = refused(
            capsys,
            data,
            *("audit", "mquake", "in/data.json", "-f", fmt, "-o", data, "--overwrite"),
            says="is an input",
        )
        assert "not even with --overwrite" in err
    # a hard link to the data is the data
    link = project / "link.json"
    os.link(data, link)
    refused(capsys, data, "validate", "mquake", "in/data.json", "-o", link, "--overwrite")


def test_an_empty_placeholder_is_replaced(project: Path, capsys) -> None:
    placeholder = project / "report.json"
    placeholder.touch()
    assert cli(capsys, "audit", "mquake", "in/data.json", "-f", "json", "-o", placeholder)[0] == 0
    assert written_by_curate(placeholder)


def test_an_empty_baseline_placeholder_is_filled(project: Path, capsys) -> None:
    baseline = project / "curate-baseline.json"
    baseline.touch()
    rc, _, err = cli(capsys, "check", "--update-baseline")
    assert rc == 0, err
    assert json.loads(baseline.read_text(encoding="utf-8"))["curate-baseline"] == 1


# --------------------------------------------------------------------------- API names


def test_api_refusals_name_api_arguments(project: Path, capsys) -> None:
    curate.export("mquake", "in/data.json", out="hf")
    with pytest.raises(UsageError, match=r"overwrite=True") as e:
        curate.export("mquake", "in/data.json", out="hf")
    assert "--overwrite" not in str(e.value) and "--out" not in str(e.value)
    # the same refusal on the command line names the flag
    rc, _, err = cli(capsys, "export", "mquake", "in/data.json", "--out", "hf")
    assert rc == 2 and "--overwrite" in err and "overwrite=True" not in err


# --------------------------------------------------------------------------- demo.sh


def test_demo_refuses_a_demo_out_it_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "demo-out").mkdir()
    (tmp_path / "demo-out" / "thesis.tex").write_bytes(USER_NOTE)
    script = Path(__file__).resolve().parent.parent / "scripts" / "demo.sh"
    r = subprocess.run(
        ["bash", str(script), str(Path(sys.executable).parent)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    assert "not made by this demo" in r.stderr and r.stderr.count("\n") == 1
    assert (tmp_path / "demo-out" / "thesis.tex").read_bytes() == USER_NOTE
    assert sorted(p.name for p in (tmp_path / "demo-out").iterdir()) == ["thesis.tex"]


# --------------------------------------------------------------------------- the mark itself


@settings(max_examples=60, deadline=None)
@given(body=st.text(max_size=12_000), fmt=st.sampled_from(["text", "markdown", "github"]))
def test_every_marked_report_is_recognised(tmp_path_factory, body: str, fmt: str) -> None:
    """However long the report (the mark must be found in the last 4 KB)."""
    p = tmp_path_factory.mktemp("mark") / "r"
    p.write_text(with_generator(body, fmt), encoding="utf-8")
    assert written_by_curate(p)


@settings(max_examples=60, deadline=None)
@given(body=st.binary(max_size=12_000))
def test_a_file_without_curates_name_is_never_curates(tmp_path_factory, body: bytes) -> None:
    p = tmp_path_factory.mktemp("foreign") / "r"
    p.write_bytes(body.replace(b"curate", b"cura7e"))
    assert not written_by_curate(p)


# ------------------------------------------------------------------- review: the gate's order


@pytest.fixture
def exported(project: Path, capsys) -> Path:
    """A folder ``curate export`` wrote: its marker is a JSON with ``"tool": "curate"``, which
    passes as a curate report by its mark alone."""
    rc, _, err = cli(capsys, "export", "mquake", "in/data.json", "--out", "hf")
    assert rc == 0, err
    assert (project / "hf" / ".curate" / "manifest.json").is_file()
    return project / "hf"


@pytest.mark.parametrize(
    "name", [".curate/manifest.json", "audit.json", "README.md", "new-report.json"]
)
@pytest.mark.parametrize("overwrite", [False, True])
def test_no_report_is_written_inside_a_curate_output_folder(
    exported: Path, capsys, name: str, overwrite: bool
) -> None:
    extra = ["--overwrite"] if overwrite else []
    target = exported / name
    for argv in (
        ("audit", "mquake", "in/data.json", "--format", "json", "--output", target),
        ("validate", "mquake", "in/data.json", "-o", target),
        ("check", "--report", f"json={target}"),
        ("overlap", "sets.json", "-f", "json", "-o", target),
    ):
        refused(capsys, target, *argv, *extra, says="inside the curate output folder hf")
    assert not (exported / "new-report.json").exists()
    # the folder is still whole: curate replaces it as a whole, nothing of it is foreign
    from curate.core.outputs import foreign_entries

    assert foreign_entries(exported) == []
    rc, _, err = cli(capsys, "export", "mquake", "in/data.json", "--out", "hf", "--overwrite")
    assert rc == 0, err


def test_no_output_folder_is_made_inside_a_curate_output_folder(exported: Path, capsys) -> None:
    for cmd in ("export", "fix"):
        rc, _, err = cli(capsys, cmd, "mquake", "in/data.json", "--out", "hf/data/more")
        assert rc == 2 and err.count("\n") == 1, err
        assert "inside the curate output folder hf" in err
    assert not (exported / "data" / "more").exists()


@pytest.fixture
def deepfake_project(manifest: Path) -> Path:
    """The deepfake manifest of :func:`manifest` configured for ``curate check`` too."""
    (manifest.parent / "df.toml").write_text(
        '[[datasets]]\nname = "df"\nfamily = "deepfake"\npaths = ["man.csv"]\n', encoding="utf-8"
    )
    return manifest.parent


@pytest.mark.parametrize(
    "argv",
    [
        ("audit", "deepfake", "man.csv", "--output", "media/a.png"),
        ("validate", "deepfake", "man.csv", "--output", "media/a.png"),
        ("audit", "deepfake", "man.csv", "--no-files", "-f", "json", "-o", "media/a.png"),
        ("check", "--config", "df.toml", "--report", "json=media/a.png"),
        ("check", "--config", "df.toml", "-f", "json", "-o", "media/a.png"),
        ("export", "deepfake", "man.csv", "--out", "media/a.png"),
        ("export", "deepfake", "man.csv", "--out", "media"),
        ("fix", "deepfake", "man.csv", "--out", "media"),
        ("overlap", "sets.json", "-f", "json", "-o", "sets.json"),
    ],
    ids=lambda a: " ".join(a[:1] + a[-2:]),
)
def test_an_input_is_refused_as_an_input_never_with_a_hint_to_overwrite(
    deepfake_project: Path, capsys, argv: tuple[str, ...]
) -> None:
    """A media file the manifest names is an existing file curate did not write *and* an input;
    the message must give the second reason, which no switch changes."""
    target = deepfake_project / ("sets.json" if argv[0] == "overlap" else "media/a.png")
    for extra in ([], ["--overwrite"]):
        err = refused(capsys, target, *argv, *extra)
        assert "is an input" in err or "contains the input" in err, err
        assert "pass --overwrite" not in err and "existing file" not in err, err
        assert "not written by curate" not in err, err
    assert sorted(p.name for p in (deepfake_project / "media").iterdir()) == ["a.png", "empty.png"]


def test_an_explicit_cache_is_judged_before_the_media_are_hashed(
    deepfake_project: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--cache`` inside a curate output folder (its marker, or a new parquet beside it) is
    refused before any media file is opened, not after the scan."""
    from curate.io import media

    rc, _, err = cli(capsys, "export", "mquake", "in/data.json", "--out", "hf")
    assert rc == 0, err
    opened: list[str] = []
    scan = media.scan_file
    monkeypatch.setattr(media, "scan_file", lambda p, a: opened.append(a) or scan(p, a))
    for target in ("hf/.curate/manifest.json", "hf/media.parquet"):
        refused(
            capsys,
            deepfake_project / target,
            *("audit", "deepfake", "man.csv", "--cache", target),
            says="inside the curate output folder hf",
        )
    assert opened == []
    assert not (deepfake_project / "hf" / "media.parquet").exists()


def test_a_foreign_file_that_is_no_input_still_says_overwrite(deepfake_project: Path, capsys):
    """Waiting for the manifest's media must not lose the ordinary refusal."""
    notes = deepfake_project / "in" / "notes.txt"
    for argv in (
        ("audit", "deepfake", "man.csv", "-o", notes),
        ("check", "--config", "df.toml", "--report", f"json={notes}"),
    ):
        refused(capsys, notes, *argv, says="not written by curate; pass --overwrite")


# --------------------------------------------------------------------------- review: streams


def curate_cmd(*argv: object) -> list[str]:
    return [sys.executable, "-m", "curate", *map(str, argv)]


@pytest.mark.parametrize("stream", ["/dev/stdout", "/proc/self/fd/1"])
@pytest.mark.parametrize("cmd", ["audit", "check"])
def test_a_report_to_stdout_on_a_pipe(project: Path, stream: str, cmd: str) -> None:
    """``curate audit … -f json -o /dev/stdout | jq``: the path resolves to
    ``/proc/N/fd/pipe:[…]``, beside which no staging file can be made; written in place."""
    argv = (
        ("audit", "mquake", "in/data.json", "-f", "json", "-o", stream)
        if cmd == "audit"
        else ("check", "-f", "json", "-o", stream)
    )
    r = subprocess.run(curate_cmd(*argv), cwd=project, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["tool"] == "curate"
    assert b"written to" not in r.stderr  # the reader has it; stderr says nothing of a file
    assert not [p for p in project.rglob("*") if ".curate-" in p.name]


def test_a_text_report_to_a_stream_carries_no_mark(project: Path) -> None:
    """A pipe is nobody's file: what ``-o /dev/stdout`` prints is what plain stdout prints."""
    plain = subprocess.run(
        curate_cmd("audit", "mquake", "in/data.json"), cwd=project, capture_output=True
    )
    via = subprocess.run(
        curate_cmd("audit", "mquake", "in/data.json", "--output", "/dev/stderr"),
        cwd=project,
        capture_output=True,
        timeout=120,
    )
    assert plain.returncode == via.returncode == 0, via.stderr
    assert via.stdout == b""
    assert via.stderr == plain.stdout  # nothing after it: no "report written to /dev/stderr"
    assert b"generator: curate" not in via.stderr


def test_dev_null_takes_a_report_even_from_a_pipe(project: Path) -> None:
    r = subprocess.run(
        curate_cmd("audit", "mquake", "in/data.json", "-f", "json", "-o", "/dev/null"),
        cwd=project,
        capture_output=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    assert Path("/dev/null").is_char_device()


def test_a_report_into_a_named_pipe(project: Path, capsys) -> None:
    import stat
    import threading

    fifo = project / "report.fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    rc, _, err = cli(capsys, "audit", "mquake", "in/data.json", "-f", "sarif", "-o", fifo)
    reader.join(30)
    assert rc == 0, err
    assert json.loads(got[0])["runs"][0]["tool"]["driver"]["name"] == "curate"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the pipe, not a file renamed over it
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".")) == []


# --------------------------------------------------------------------------- review: globs


@pytest.fixture
def globbed(project: Path) -> Path:
    """``curate check`` reading its data by globs: ``in/*.json`` and ``more/**/*.jsonl``."""
    (project / "more" / "a").mkdir(parents=True)
    (project / "pyproject.toml").write_text(
        '[tool.curate]\nbaseline = "curate-baseline.json"\n\n'
        '[[tool.curate.datasets]]\nname = "mq"\nfamily = "mquake"\npaths = ["in/*.json"]\n',
        encoding="utf-8",
    )
    return project


@pytest.mark.parametrize("target", ["in/report.json", "in/../in/r.json", "in/notes.json"])
def test_check_never_writes_where_its_globs_read(globbed: Path, capsys, target: str) -> None:
    """The file does not exist yet (so no glob lists it), but the next check would read it as
    data: a report there is refused as an input, whatever --overwrite says."""
    path = globbed / target
    for argv in (
        ("check", "--report", f"json={target}"),
        ("check", "-f", "junit", "-o", target),
        ("check", "--baseline", target, "--update-baseline"),
    ):
        for extra in ([], ["--overwrite"]):
            err = refused(capsys, path, *argv, *extra, says="matches the input pattern in/*.json")
            assert "pass --overwrite" not in err
    assert not path.exists()
    rc, _, err = cli(capsys, "check")  # the data is still only the data
    assert rc == 0, err


def test_check_writes_where_its_globs_do_not_read(globbed: Path, capsys) -> None:
    for target in ("in/deeper/r.json", "in/report.xml", "reports/r.json"):
        rc, _, err = cli(capsys, "check", "--report", f"json={target}")
        assert rc == 0, (target, err)
        assert written_by_curate(globbed / target)


def test_check_globs_in_splits_are_inputs_too(project: Path, capsys) -> None:
    (project / "pyproject.toml").write_text(
        '[[tool.curate.datasets]]\nname = "mq"\nfamily = "mquake"\n'
        'splits = { train = "in/**/data*.json" }\n',
        encoding="utf-8",
    )
    (project / "in" / "x" / "y").mkdir(parents=True)
    target = project / "in" / "x" / "y" / "data-report.json"
    refused(
        capsys,
        target,
        *("check", "--report", "json=in/x/y/data-report.json"),
        says="matches the input pattern in/**/data*.json",
    )
    assert not target.exists()


@pytest.mark.parametrize(
    "pattern",
    ["d/*.json", "d/**/*.json", "d/**", "d/?/*.j*", "d/[ab]*/x.json", "**/x.json", "d/*/**/y*"],
)
def test_glob_matches_agrees_with_glob(tmp_path: Path, pattern: str) -> None:
    """What the gate calls an input pattern's match is what :func:`glob.glob` would read."""
    import glob

    from curate.core.outputs import glob_matches

    names = [
        "d/x.json", "d/a/x.json", "d/b/c/x.json", "d/ab/x.json", "d/a/yes.txt", "d/x.jsonl",
        "e/x.json", "d/a/b/y.json", "x.json",
    ]  # fmt: skip
    for n in names:
        (tmp_path / n).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / n).write_text("{}", encoding="utf-8")
    full = str(tmp_path / pattern)
    found = {os.path.realpath(f) for f in glob.glob(full, recursive=True)}
    for n in names:
        path = tmp_path / n
        assert glob_matches(full, path) == (str(path.resolve()) in found), (pattern, n)
