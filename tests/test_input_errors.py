"""Input errors, not findings (issue 30, build 3): another family's file, a CSV cut mid-row,
unbounded quoted values, object reprs in reports, staging names in messages.

The shared corpus (tests/test_bad_inputs.py) checks exit codes, one-line errors and
determinism for every command; these tests check the words and the edges.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE
from hypothesis import given, settings
from hypothesis import strategies as st

import curate
from curate.cli.main import main
from curate.core.errors import InputError, clip, quoted
from curate.core.outputs import staged_folder
from curate.io.csv_files import _last_record

SAMPLES = ROOT / "curate" / "data" / "samples"
GLYCANS = SAMPLES / "glycan_taxonomy_sample.csv"
XLAND = SAMPLES / "xland_format_sample_9x9_random.hdf5"


def _manifest(d: Path) -> Path:
    rows = [
        {"sample_id": "v1", "path": "v1.mp4", "modality": "video", "label": "real"},
        {"sample_id": "v2", "path": "v2.mp4", "modality": "video", "label": "fake"},
    ]
    p = d / "manifest.csv"
    with open(p, "w", newline="") as fh:
        w = csv.DictWriter(fh, list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return p


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


# --------------------------------------------------------------------------- another family

#: (family run, the file's maker, the family it is, words of its phrase)
WRONG = [
    ("mquake", lambda d: GLYCANS, "glycan", "a glycan taxonomy table"),
    ("mquake", lambda d: XLAND, "icrl", "in-context RL history file"),
    ("mquake", _manifest, "deepfake", "a deepfake manifest"),
    ("glycan", lambda d: SAMPLE, "knowledge-editing", "a MQuAKE (knowledge editing) file"),
    ("glycan", lambda d: XLAND, "icrl", "in-context RL history file"),
    ("glycan", _manifest, "deepfake", "a deepfake manifest"),
    ("icrl", lambda d: SAMPLE, "knowledge-editing", "a MQuAKE (knowledge editing) file"),
    ("icrl", lambda d: GLYCANS, "glycan", "a glycan taxonomy table"),
    ("icrl", _manifest, "deepfake", "a deepfake manifest"),
    ("deepfake", lambda d: SAMPLE, "knowledge-editing", "a MQuAKE (knowledge editing) file"),
    ("deepfake", lambda d: GLYCANS, "glycan", "a glycan taxonomy table"),
    ("deepfake", lambda d: XLAND, "icrl", "in-context RL history file"),
]


@pytest.mark.parametrize(
    ("family", "make", "other", "phrase"), WRONG, ids=[f"{w[0]}-{w[2]}" for w in WRONG]
)
@pytest.mark.parametrize("command", ["audit", "export"])
def test_wrong_family_names_the_family(
    tmp_path: Path,
    capsys,
    family: str,
    make: Callable[[Path], Path],
    other: str,
    phrase: str,
    command: str,
) -> None:
    path = make(tmp_path)
    argv = [command, family, str(path)]
    if command == "export":
        argv += ["--out", str(tmp_path / "out")]
    rc, _, err = _run(capsys, *argv)
    assert rc == 2, err
    (line,) = err.splitlines()
    assert line.startswith(f"curate: error: {path}: ")
    assert f"; it looks like {phrase}" in line or (phrase in line and "it looks like" in line)
    assert line.endswith(f"(curate {command} {other} {path})")  # the command that was run
    assert not (tmp_path / "out").exists()
    # and what it suggests works: the other family reads it
    assert main(["validate", other, str(path)]) in (0, 1)


def test_glycowork_table_to_mquake_is_exit_2(shared, capsys) -> None:
    """The issue's case: 4,900 KE001 findings and exit 1 before."""
    path = shared("data/glycan/glycowork_sample.csv")
    rc, out, err = _run(capsys, "audit", "mquake", str(path))
    assert rc == 2 and out == ""
    assert err == (
        f"curate: error: {path}: no record matches the MQuAKE layout; it looks like a glycan "
        f"taxonomy table (curate audit glycan {path})\n"
    )


def test_wrong_family_from_the_api_is_an_input_error() -> None:
    with pytest.raises(InputError, match="no record matches the MQuAKE layout; it looks like"):
        curate.audit("mquake", GLYCANS)


@pytest.mark.parametrize("verb", ["validate", "fix", "export", "diff"])
def test_the_hint_repeats_the_command_that_was_run(
    shared, verb: str, tmp_path: Path, capsys
) -> None:
    """``curate fix mquake GLYCANS`` is told to run ``curate fix glycan``, not ``audit``; the
    Python API names its own call."""
    path = shared("data/glycan/glycowork_sample.csv")
    args = {"fix": ["--out", str(tmp_path / "o")], "export": ["--out", str(tmp_path / "o")]}
    files = [str(path), str(path)] if verb == "diff" else [str(path)]
    rc, _, err = _run(capsys, verb, "mquake", *files, *args.get(verb, []))
    said = "OLD NEW, both of that family" if verb == "diff" else path  # a diff takes two
    assert rc == 2 and f"(curate {verb} glycan {said})" in err, err
    if verb in ("fix", "export"):
        with pytest.raises(InputError, match=rf"curate\.{verb}\('glycan'"):
            getattr(curate, verb)("mquake", path, tmp_path / "api")


def test_unknown_records_without_another_family_say_what_is_missing(tmp_path, capsys) -> None:
    p = tmp_path / "notes.json"
    p.write_text(json.dumps([{"title": "a", "body": "b"}, {"title": "c"}]))
    rc, _, err = _run(capsys, "audit", "mquake", str(p))
    assert rc == 2
    assert "no record matches the MQuAKE layout (no 'orig' object" in err
    assert "looks like" not in err


def test_one_case_among_junk_is_audited_not_refused(tmp_path, capsys) -> None:
    """Only "no record of the first batch matches" is exit 2: one real case among records of
    no layout is a damaged MQuAKE file, each bad record a KE001 finding."""
    cases = json.loads(SAMPLE.read_text())
    junk = [{"glycan": "Gal(b1-4)Glc", "Species": "Homo_sapiens"} for _ in range(30)]
    for name, records in (("last.json", [*junk, cases[0]]), ("first.json", [cases[0], *junk])):
        p = tmp_path / name
        p.write_text(json.dumps(records))
        rc, out, _ = _run(capsys, "audit", "mquake", str(p), "--format", "json")
        assert rc == 1
        report = json.loads(out)
        assert report["summary"]["by_rule"]["KE001"]["records"] == 30


def test_jsonl_columnar_path_refuses_too(tmp_path, capsys) -> None:
    """JSON Lines is read by the columnar reader (its own check of the records)."""
    p = tmp_path / "glycans.jsonl"
    rows = [{"glycan": "Gal(b1-4)Glc", "Species": "Homo_sapiens", "Genus": "Homo"}] * 50
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc, _, err = _run(capsys, "audit", "mquake", str(p))
    assert rc == 2 and "it looks like a glycan taxonomy table" in err


# --------------------------------------------------------------------------- CSV cut mid-row


def _glycan_text(n: int = 40) -> str:
    return "\n".join(GLYCANS.read_text().splitlines()[:n]) + "\n"


def test_csv_cut_mid_row_is_truncated_with_its_line(tmp_path, capsys) -> None:
    text = _glycan_text()
    last = text.rstrip("\n").rfind("\n") + 1
    p = tmp_path / "cut.csv"
    p.write_text(text[: text.index(",", last) + 2])  # "554,G": the 'unknown residue G'
    for family in ("glycan", "deepfake", "mquake"):
        rc, _, err = _run(capsys, "audit", family, str(p))
        assert rc == 2
        assert err == (
            f"curate: error: {p}:40: truncated file: its last row has 2 of the header's 13 "
            "fields (the file ends inside a row: a download or copy that stopped early?)\n"
        )


def test_short_row_in_the_middle_is_left_to_the_rules(tmp_path, capsys) -> None:
    lines = _glycan_text().splitlines()
    lines[10] = ",".join(lines[10].split(",")[:2])
    p = tmp_path / "short.csv"
    p.write_text("\n".join(lines) + "\n")
    rc, _, err = _run(capsys, "audit", "glycan", str(p))
    assert rc in (0, 1) and "truncated" not in err


def test_last_row_with_an_empty_last_field_is_not_short(tmp_path, capsys) -> None:
    """``…,train`` cut to ``…,`` would be short; a row that ends with an empty value is whole
    (and blank lines after the last row are not a row)."""
    lines = _glycan_text().splitlines()
    lines[-1] = lines[-1].rsplit(",", 1)[0] + ","
    p = tmp_path / "empty-last.csv"
    p.write_text("\n".join(lines) + "\n\n\n")
    rc, _, err = _run(capsys, "audit", "glycan", str(p))
    assert rc in (0, 1) and "truncated" not in err


def test_cut_large_and_compressed_csv(tmp_path, capsys) -> None:
    """Past the tail the check reads (1 MiB), with a quoted line break in the last row, and
    through gzip: the same line number."""
    rows = ["sample_id,path,label"] + [f"s{i},s{i}.mp4,real" for i in range(80_000)]
    text = "\n".join(rows) + '\n"s-last\nstill s-last",s.mp4\n'
    line = len(rows) + 1
    plain = tmp_path / "m.csv"
    plain.write_text(text)
    packed = tmp_path / "m.csv.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    assert len(text) > 1 << 20
    for p in (plain, packed):
        rc, _, err = _run(capsys, "audit", "deepfake", str(p))
        assert rc == 2 and err.startswith(f"curate: error: {p}:{line}: truncated file: "), err


_CELL = st.text(alphabet=st.sampled_from('ab,"\n\r x'), max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.lists(_CELL, min_size=1, max_size=4), min_size=1, max_size=6),
    end=st.sampled_from(["\n", "\r\n"]),
)
def test_last_record_is_the_last_row_csv_writes(rows: list[list[str]], end: str) -> None:
    """Whatever quotes and line breaks the values hold, :func:`_last_record` finds the span
    of the last row (as the csv module parses it) in the whole text."""
    if end == "\n":  # the writer quotes only the line terminator's characters
        rows = [[c.replace("\r", "x") for c in r] for r in rows]
    rows = [r for r in rows if any(r)]  # an all-empty row is written as a blank line
    if not rows:
        return
    buf = io.StringIO()
    csv.writer(buf, lineterminator=end).writerows(rows)
    data = buf.getvalue().encode()
    start, end = _last_record(data, ",", True)
    got = next(csv.reader(io.StringIO(data[start:end].decode(), newline="")))
    assert got == rows[-1]


# --------------------------------------------------------------------------- bounded values


def test_clip_and_quoted() -> None:
    assert clip("abc") == "abc"
    long = "x" * 1000
    assert clip(long) == "x" * 200 + "… (1,000 characters)"
    a, b = clip(long, digest=True), clip(long[:-1] + "y", digest=True)
    assert a != b and a.startswith("x" * 200 + "… (1,000 characters, sha256 ")
    assert quoted(long) == repr("x" * 200) + "… (1,000 characters)"
    assert len(quoted(list(range(10_000)))) < 250


def test_twenty_megabyte_id_is_never_printed_whole(tmp_path, capsys) -> None:
    recs = json.loads(SAMPLE.read_text())[:6]
    recs[1]["case_id"] = "x" * 20_000_000
    recs[1]["orig"] = 5
    p = tmp_path / "huge.json"
    p.write_text(json.dumps(recs))
    for fmt in ("text", "json", "markdown", "junit", "sarif", "github"):
        rc, out, err = _run(capsys, "audit", "mquake", str(p), "--format", fmt)
        assert rc == 1
        assert len(out) + len(err) < 100_000, fmt
        assert "20,000,000 characters, sha256 " in out, fmt
    report = json.loads(_run(capsys, "audit", "mquake", str(p), "--format", "json")[1])
    (ke001,) = [f for f in report["findings"] if f["rule"] == "KE001"]
    assert ke001["record"].startswith("x" * 200 + "… (20,000,000 characters, sha256 ")
    assert ke001["row"] == 1  # where it is, exactly
    # the error lines of --strict and of a refused export name the record, bounded too
    rc, out, err = _run(capsys, "fix", "mquake", str(p), "--out", str(tmp_path / "o"), "--strict")
    assert rc == 1 and len(err) < 2000 and "20,000,000 characters" in err


def test_input_error_bounds_record_field_and_message() -> None:
    e = InputError("m" * 10_000, path="f.json", record="r" * 10_000, field="f" * 10_000)
    line = e.one_line()
    assert len(line) < 3000 and line.count("…") == 3
    assert e.record == "r" * 10_000  # the attribute stays whole for API callers


# --------------------------------------------------------------------------- reprs, staging


def _unreadable_attributes(d: Path) -> Path:
    raw = XLAND.read_bytes()
    at = raw.index(b"GCOL")
    p = d / "attrs.hdf5"
    p.write_bytes(raw[:at] + b"XXXX" + raw[at + 4 :])
    return p


def test_unreadable_attribute_is_quoted_by_reason(tmp_path, capsys) -> None:
    p = _unreadable_attributes(tmp_path)
    report = json.loads(_run(capsys, "audit", "icrl", str(p), "--format", "json")[1])
    rl104 = [f for f in report["findings"] if f["rule"] == "RL104"]
    assert rl104
    for f in rl104:
        assert "unreadable (" in f["message"] and "heap" in f["message"]
        assert " at 0x" not in f["message"] and "object" not in f["message"]


def test_fix_icrl_without_a_valid_history_names_the_input(tmp_path, capsys) -> None:
    import h5py
    import numpy as np

    p = tmp_path / "nostates.hdf5"
    with h5py.File(p, "w") as f:
        for t in range(2):
            g = f.create_group(str(t))
            g.attrs["env-id"] = "XLand-MiniGrid-R1-9x9"
            g.attrs["benchmark-id"] = "trivial-1m"
            g.attrs["ruleset-id"] = t
            for d, dt in (("actions", "u1"), ("rewards", "f2"), ("dones", "?")):
                g.create_dataset(d, data=np.zeros((2, 10), dt))
            g.create_dataset("expert_actions", data=np.zeros((2, 10), "u1"))
    out = tmp_path / "fixed"
    rc, _, err = _run(capsys, "fix", "icrl", str(p), "--out", str(out))
    assert rc == 2
    # the same line as every family's: the first invalid record names where to look
    assert err.startswith(
        f"curate: error: {p}, record 0/0, field states: nothing to write: all 4 records are invalid"
    )
    assert "curate-tmp" not in err and "RL103" in err
    assert sorted(x.name for x in tmp_path.iterdir()) == ["nostates.hdf5"]


def test_staged_folder_names_the_target_in_input_errors(tmp_path) -> None:
    """An InputError raised about a file in the staging folder (a re-audit of what was just
    written) names the file in the user's target folder."""
    target = tmp_path / "out"
    with pytest.raises(InputError) as info, staged_folder(target) as tmp:
        raise InputError("no records", path=tmp / "data.hdf5")
    assert info.value.path == str(target / "data.hdf5")
    assert str(info.value) == f"{target / 'data.hdf5'}: no records"
    assert sorted(x.name for x in tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- no timings


@pytest.mark.parametrize("family", ["icrl", "deepfake"])
def test_a_report_is_the_same_bytes_on_every_run(tmp_path, capsys, family: str) -> None:
    """The icrl report said ``stats.scan_seconds`` (and deepfake's ``stats.media.seconds``):
    two JSON reports of one file differed. The time is ``--durations``' alone now."""
    path = XLAND if family == "icrl" else _manifest(tmp_path)
    reports = []
    for n in range(2):
        out = tmp_path / f"report{n}.json"
        rc, _, _ = _run(capsys, "audit", family, str(path), "--format", "json", "-o", str(out))
        assert rc in (0, 1)
        reports.append(out.read_bytes())
    assert reports[0] == reports[1]
    stats = json.loads(reports[0])["summary"]["stats"]
    assert ("histories_scanned" if family == "icrl" else "media") in json.dumps(stats)
    assert "seconds" not in json.dumps(stats)
    rc, out, _ = _run(capsys, "audit", family, str(path), "--durations")
    assert "durations (wall seconds" in out


def test_a_dataset_folder_whose_data_cannot_be_listed_says_so(tmp_path) -> None:
    """``Path.glob`` passes over a folder it may not read: the error said "no file matches
    'data/train-*'" of a folder full of them. Run without the capabilities that let root read
    anything (``setpriv``), as any other user would be."""
    import os
    import shutil
    import subprocess
    import sys

    caps = "-dac_override,-dac_read_search"
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0:
        drop: list[str] = []  # any other user is refused by the permissions alone
    elif setpriv is None:
        pytest.skip("root reads any folder, and setpriv (util-linux) is not installed")
    else:
        drop = [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]
    data = tmp_path / "folder" / "data"
    data.mkdir(parents=True)
    shutil.copy(SAMPLES / "glycan_taxonomy_sample.csv", data / "train-00000.csv")
    os.chmod(data, 0)
    try:
        r = subprocess.run(
            [*drop, sys.executable, "-m", "curate", "audit", "glycan", str(data.parent),
             "--label-model", "none"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    finally:
        os.chmod(data, 0o755)
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"curate: error: {data.parent}: permission denied reading the folder data/\n"
