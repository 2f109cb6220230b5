"""Export and fix of learning histories: what is written is exactly the HDF5 slices, read back
through ``datasets``; what is left out is exactly what the audit calls invalid; the fixed file
keeps the input's layout, renumbers groups without a gap, re-audits clean, and the input is
untouched."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import datasets
import h5py
import numpy as np
import pytest
from icrl_data import write_file

import curate
from curate.cli.main import main
from curate.core.errors import UsageError
from curate.families import get_family

datasets.disable_progress_bars()
ARRAYS = ("states", "actions", "rewards", "dones", "expert_actions")


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    # 6,000 steps: not a multiple of the chunk (4096) or of the segment lengths used below
    return write_file(tmp_path_factory.mktemp("icrl_pub") / "valid.hdf5", tasks=4)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy(src: Path, tmp_path: Path) -> Path:
    out = tmp_path / "in" / src.name
    out.parent.mkdir()
    shutil.copyfile(src, out)
    return out


def _rows(folder: Path) -> list[dict]:
    ds = datasets.load_dataset(str(folder))["train"].with_format("numpy")
    return [ds[i] for i in range(ds.num_rows)]


def _check_rows(rows: list[dict], path: Path, unit: str) -> dict[tuple[str, int], int]:
    """Every row equals its slice of the file; a history's rows tile its steps in order.
    Returns the steps covered per history."""
    covered: dict[tuple[str, int], int] = {}
    with h5py.File(path) as f:
        for r in rows:
            g, h, a, b = str(r["task"]), int(r["history"]), int(r["step_start"]), int(r["step_end"])
            assert covered.get((g, h), 0) == a, (g, h, a)
            covered[(g, h)] = b
            assert r["length"] == b - a and r["states"].shape == (b - a, 5, 5)
            for name in ARRAYS:
                want = f[g][name][h, a:b]
                assert np.array_equal(np.asarray(r[name]).astype(want.dtype), want), name
            assert bool(r["done"]) == bool(f[g]["dones"][h, b - 1])
            assert r["env_id"] == f[g].attrs["env-id"]
            assert r["ruleset_id"] == f[g].attrs["ruleset-id"]
            if unit == "episode":
                dones = f[g]["dones"][h, a:b]
                assert not dones[:-1].any()  # one episode: a done only at its end
                assert r["episode_return"] == pytest.approx(
                    f[g]["rewards"][h, a:b].astype(np.float32).sum()
                )
    return covered


def test_export_episodes_load_through_datasets_and_equal_the_file(valid, tmp_path) -> None:
    out = tmp_path / "hf"
    done = curate.export("icrl", str(valid), out)
    rows = _rows(out)
    assert len(rows) == done.rows
    covered = _check_rows(rows, valid, "episode")
    assert covered == {(str(g), h): 6000 for g in range(4) for h in range(3)}  # every step
    feats = datasets.load_dataset(str(out))["train"].features
    assert str(feats["states"]) == str(
        datasets.List(datasets.List(datasets.List(datasets.Value("uint8"), length=5), length=5))
    )
    assert feats["rewards"].feature.dtype == "float16"  # as the file stores them
    card = (out / "README.md").read_text()
    assert "## Learning histories" in card and "12 of the input's 12 histories" in card
    # the summary figures of the audit are in the card
    assert "median episode transitions" in card


def test_export_segments(valid, tmp_path) -> None:
    out = tmp_path / "seg"
    curate.export("icrl", str(valid), out, unit="segment", segment_length=1024)
    rows = _rows(out)
    assert len(rows) == 12 * 6  # 5 full segments and one of 880 steps per history
    assert sorted({int(r["length"]) for r in rows}) == [880, 1024]
    assert [int(r["segment"]) for r in rows[:6]] == list(range(6))
    _check_rows(rows, valid, "segment")


def test_export_leaves_out_invalid_histories_and_groups(valid, tmp_path, capsys) -> None:
    bad = _copy(valid, tmp_path)
    with h5py.File(bad, "r+") as f:
        f["0"]["actions"][1, 100] = 9  # RL301: history 0/1
        del f["2"].attrs["env-id"]  # RL104: the whole task 2 (3 histories)
    before = _sha(bad)
    capsys.readouterr()
    assert main(["export", "icrl", str(bad), "--out", str(tmp_path / "hf")]) == 0
    assert "(4 invalid records left out)" in capsys.readouterr().out
    rows = _rows(tmp_path / "hf")
    kept = {(str(r["task"]), int(r["history"])) for r in rows}
    assert ("0", 1) not in kept and not any(g == "2" for g, _ in kept)
    assert len(kept) == 12 - 4
    _check_rows(rows, bad, "episode")
    card = (tmp_path / "hf" / "README.md").read_text()
    assert "Invalid records left out" in card and "| RL104 | 3 |" in card
    assert _sha(bad) == before


def test_export_of_a_seeded_sample(valid, tmp_path) -> None:
    """--tasks exports the seeded sample the audit scanned, nothing else."""
    chosen = get_family("icrl").load([str(valid)], tasks=1, seed=2).tasks.filter("scanned")
    curate.export("icrl", str(valid), tmp_path / "hf", tasks=1, seed=2)
    rows = _rows(tmp_path / "hf")
    assert {str(r["task"]) for r in rows} == set(chosen["name"].to_list())
    _check_rows(rows, valid, "episode")


@pytest.fixture(scope="module")
def broken(valid, tmp_path_factory) -> dict:
    """A copy with one corruption per kind of drop, and its fix."""
    base = tmp_path_factory.mktemp("icrl_fix")
    src = base / "in" / "broken.hdf5"
    src.parent.mkdir()
    shutil.copyfile(valid, src)
    with h5py.File(src, "r+") as f:
        f["0"]["rewards"][2, 50] = np.float16("nan")  # RL205: history 0/2 (invalid)
        del f["1"]["dones"]  # RL103: task 1 (invalid, whole group)
        for name in ARRAYS:  # RL403: history 2/1 copies 0/0
            f["2"][name][1] = f["0"][name][0]
    sha = _sha(src)
    out = base / "fixed"
    done = curate.fix("icrl", str(src), out)
    return {"src": src, "sha": sha, "out": out, "done": done}


def test_fix_drops_exactly_the_flagged_histories(broken) -> None:
    out, src = broken["out"], broken["src"]
    fixed = out / "broken.hdf5"
    with h5py.File(src) as a, h5py.File(fixed) as b:
        assert sorted(b) == ["0", "1", "2"]  # task 1 dropped, 2 and 3 renumbered
        pairs = {"0": ("0", [0, 1]), "1": ("2", [0, 2]), "2": ("3", [0, 1, 2])}
        for new, (old, kept) in pairs.items():
            assert dict(b[new].attrs).keys() >= {"env-id", "benchmark-id", "ruleset-id"}
            assert b[new].attrs["ruleset-id"] == a[old].attrs["ruleset-id"]
            for name in ARRAYS:
                x, y = a[old][name], b[new][name]
                assert np.array_equal(y[:], x[kept]), (new, name)
                assert (y.dtype, y.chunks, y.compression, y.compression_opts) == (
                    x.dtype,
                    x.chunks,
                    x.compression,
                    x.compression_opts,
                )
        assert list(b["0"].attrs["curate-dropped-histories"]) == [2]
        assert list(b["1"].attrs["curate-dropped-histories"]) == [1]
        assert "curate-dropped-histories" not in b["2"].attrs
    assert _sha(src) == broken["sha"]  # the input is untouched


def test_fix_does_what_the_findings_edits_say(broken, tmp_path) -> None:
    """The core's engine applies the edits the findings carry, chosen like any family's: RL403
    ignored drops no history (in no pass: its re-audit finding is ignored too), while the
    invalid histories are left out whatever is chosen and RL102 closes the gap they leave."""
    import polars as pl

    fam = get_family("icrl")
    data = fam.load([str(broken["src"])], keep_records=True)
    report = fam.audit(data)
    assert report.findings.filter(pl.col("rule") == "RL403")["fix"].is_not_null().all()
    result = fam.fix(data, report, ignore=["RL403"], workdir=tmp_path)
    rules = {c.rule for c in result.changelog}
    assert "RL403" not in rules and {"RL102", "RL103", "RL205"} <= rules
    assert result.files == {"broken.hdf5": 8} and result.summary["passes"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.hdf5"]  # no pass folder left
    with h5py.File(tmp_path / "broken.hdf5") as f:
        assert sorted(f) == ["0", "1", "2"]
        assert "curate-dropped-histories" not in f["1"].attrs  # input group 2 keeps all three
        assert f["1"]["actions"].shape[0] == 3


def test_fix_changelog_names_each_drop_and_rename(broken) -> None:
    lines = [json.loads(x) for x in (broken["out"] / "changelog.jsonl").read_text().splitlines()]
    drops = {(c["record"], c["rule"]) for c in lines if c["field"] == "" and c["new"] is None}
    # a group an invariant rule rejects is left out history by history: the family's records
    invalid_group = {(f"1/{h}", "RL103") for h in range(3)}
    assert drops == {("0/2", "RL205"), ("2/1", "RL403"), *invalid_group}
    for c in lines:
        if c["field"] == "" and c["new"] is None:
            assert c["finding"]["rule"] == c["rule"] and c["reason"].startswith("dropped: ")
    # the gap task group 1 leaves is found by re-auditing pass 1 (RL102) and closed in pass 2
    renames = {
        (c["record"], c["old"], c["new"], c["rule"], c["pass"])
        for c in lines
        if c["field"] == "group"
    }
    assert renames == {("2", "2", "1", "RL102", 2), ("3", "3", "2", "RL102", 2)}
    shifts = {
        (c["record"], c["old"], c["new"], c["rule"]) for c in lines if c["field"] == "history"
    }
    assert shifts == {("2/2", 2, 1, "RL403")}
    history = next(c for c in lines if c["record"] == "0/2")
    assert history["old"]["steps"] == 6000 and len(history["old"]["digest"]) == 32
    s = broken["done"].fix.summary
    assert (s["rows_in"], s["rows_out"], s["invalid_dropped"], s["dropped"]) == (12, 7, 4, 1)
    # "fixed" counts the edits applied per rule (invalid records are counted apart)
    assert s["fixed"] == {"RL102": 1, "RL403": 1} and s["passes"] == 2
    assert (s["groups_dropped"], s["groups_renamed"]) == (1, 2)
    assert s["histories_kept"] == [
        {"group": "0", "kept": "2 of 3 histories", "config": "histories-2"},
        {"group": "1", "kept": "2 of 3 histories of input group 2", "config": "histories-2"},
    ]


def test_fixed_file_reaudits_clean(broken) -> None:
    after = broken["done"].fix.after
    assert after is not None
    assert "error" not in set(after.findings["severity"].to_list()), after.findings.to_dicts()
    again = curate.audit("icrl", str(broken["out"]))  # the folder: its one HDF5 file
    assert again.findings.filter(severity="error").height == 0
    assert again.stats["histories"] == 7
    saved = json.loads((broken["out"] / "audit.after.json").read_text())
    assert saved["inputs"][0]["path"] == "broken.hdf5"
    assert json.loads((broken["out"] / "audit.before.json").read_text())["inputs"][0][
        "path"
    ] == str(broken["src"])
    card = (broken["out"] / "README.md").read_text()
    assert "| broken.hdf5 | 7 |" in card and "## Fixes" in card


def test_fix_without_renumbering_keeps_names(broken, tmp_path) -> None:
    done = curate.fix("icrl", str(broken["src"]), tmp_path / "keep", ignore=["RL101", "RL102"])
    with h5py.File(tmp_path / "keep" / "broken.hdf5") as f:
        assert sorted(f) == ["0", "2", "3"]
    assert "RL102" in set(done.fix.after.findings["rule"].to_list())  # the gap, reported


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["fix", "--tasks", "1"], "No such option"),
        (["fix", "--metadata-only"], "No such option"),
        (["export", "--metadata-only"], "No such option"),
    ],
)
def test_unsupported_options_are_not_offered(valid, tmp_path, capsys, argv, says) -> None:
    capsys.readouterr()
    assert main([argv[0], "icrl", str(valid), "--out", str(tmp_path / "o"), *argv[1:]]) == 2
    assert says in capsys.readouterr().err


def test_unsupported_combinations_fail_before_loading(valid, tmp_path, monkeypatch) -> None:
    fam = get_family("icrl")

    def no_load(*a, **k):
        raise AssertionError("loaded")

    monkeypatch.setattr(type(fam), "load", no_load)
    with pytest.raises(UsageError, match="no array data"):
        curate.export("icrl", str(valid), tmp_path / "a", metadata_only=True)
    with pytest.raises(UsageError, match="a sample is for audit and export"):
        curate.fix("icrl", str(valid), tmp_path / "b", fraction=0.5)
    other = _copy(valid, tmp_path)
    with pytest.raises(UsageError, match="one HDF5 file at a time"):
        curate.fix("icrl", [str(valid), str(other)], tmp_path / "c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in"]


def test_options_line_shows_only_what_was_set(valid, capsys) -> None:
    capsys.readouterr()
    main(["audit", "icrl", str(valid)])
    assert "options:" not in capsys.readouterr().out
    main(["audit", "icrl", str(valid), "--tasks", "2"])
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("options:"))
    assert "tasks=2" in line and "seed=0" in line and "metadata_only" not in line


def test_the_fixed_folder_loads_its_hdf5_not_its_reports(valid, tmp_path, capsys) -> None:
    """The card's ``configs`` name the HDF5 file: ``load_dataset(folder)`` reads it with the
    ``hdf5`` builder of ``datasets`` (task groups as columns, histories as rows) and never the
    JSON reports beside it; ``curate card check`` passes the folder as written."""
    import datasets

    from curate.cli.main import main

    out = tmp_path / "fixed"
    curate.fix("icrl", str(valid), out)
    ds = datasets.load_dataset(str(out))
    assert list(ds) == ["train"]
    with h5py.File(out / valid.name) as f:
        assert sorted(ds["train"].column_names) == sorted(f)
        assert ds["train"].num_rows == f["0"]["actions"].shape[0]
        row = ds["train"][1]["0"]
        assert np.array_equal(np.asarray(row["actions"]), f["0"]["actions"][1])
    capsys.readouterr()
    assert main(["card", "check", str(out)]) == 0, capsys.readouterr().out


def test_fix_with_unequal_groups_loads_every_kept_history(valid, tmp_path, capsys) -> None:
    """Histories dropped in some groups only: the ``hdf5`` builder reads a file as one table
    whose row count is the first group's, so on one config it would cut the other groups to
    group 0's count (a history lost without a word) or fail. The card declares one config per
    history count; loading each reads every kept history of every group, in order, unshifted."""
    src = _copy(valid, tmp_path)
    with h5py.File(src, "r+") as f:
        f["0"]["rewards"][1, 50] = np.float16("nan")  # RL205: group 0 keeps 2 (the first group)
        f["2"]["actions"][0, 10] = 9  # RL301: group 2 keeps 2
        f["2"]["actions"][2, 20] = 7  # RL301: and then 1
    out = tmp_path / "fixed"
    done = curate.fix("icrl", str(src), out)
    kept = {"0": [0, 2], "1": [0, 1, 2], "2": [1], "3": [0, 1, 2]}
    s = done.fix.summary
    assert s["rows_out"] == 9
    assert s["histories_kept"] == [
        {"group": "0", "kept": "2 of 3 histories", "config": "histories-2"},
        {"group": "2", "kept": "1 of 3 histories", "config": "histories-1"},
    ]
    assert "`histories-3` (2 groups of 3 histories, the default)" in s["layout"]
    card = (out / "README.md").read_text()
    assert "histories-2" in card and "Histories kept:" in card
    # on the builder's own terms (one table, no features), group 0's 2 rows cut the others
    with h5py.File(out / src.name) as f:
        assert f["1"]["actions"].shape[0] == 3 and f["0"]["actions"].shape[0] == 2
    loaded: dict[str, list[np.ndarray]] = {}
    for name, groups in (
        ("histories-3", {"1", "3"}),
        ("histories-2", {"0"}),
        ("histories-1", {"2"}),
    ):
        ds = datasets.load_dataset(str(out), name)["train"].with_format("numpy")
        assert set(ds.column_names) == groups, name
        for g in groups:
            loaded[g] = [ds[i][g] for i in range(ds.num_rows)]
    default = datasets.load_dataset(str(out))["train"]
    assert set(default.column_names) == {"1", "3"} and default.num_rows == 3
    assert sum(len(v) for v in loaded.values()) == s["rows_out"]
    with h5py.File(src) as f:
        for g, hs in kept.items():
            assert len(loaded[g]) == len(hs), g
            for row, h in zip(loaded[g], hs, strict=True):
                for name in ARRAYS:
                    want = f[g][name][h]
                    assert np.array_equal(np.asarray(row[name]).astype(want.dtype), want), (g, h)
    capsys.readouterr()
    assert main(["card", "check", str(out)]) == 0, capsys.readouterr().out
    assert main(["validate", "icrl", str(out / src.name)]) == 0, capsys.readouterr().out
    assert main(["audit", "icrl", str(out)]) == 0, capsys.readouterr().out
    again = curate.audit("icrl", str(out))
    assert again.findings.filter(severity="error").height == 0
    assert again.stats["histories"] == 9


def test_a_copy_of_an_invalid_group_is_kept(valid, tmp_path) -> None:
    """RL402 reports group 3 as a copy of group 0, but group 0 is invalid (no ruleset-id) and
    left out: dropping the copy too would lose the task. The copy stays, as the task's group."""
    src = _copy(valid, tmp_path)
    with h5py.File(src, "r+") as f:
        del f["0"].attrs["ruleset-id"]  # RL104: group 0 invalid
        for name in ARRAYS:
            f["3"][name][...] = f["0"][name][...]
    report = curate.audit("icrl", str(src))
    assert "RL402" in set(report.findings["rule"].to_list())
    done = curate.fix("icrl", str(src), tmp_path / "out")
    assert "RL402" not in {c.rule for c in done.fix.changelog}
    with h5py.File(src) as a, h5py.File(tmp_path / "out" / src.name) as b:
        assert sorted(b) == ["0", "1", "2"]
        assert np.array_equal(b["2"]["actions"][:], a["3"]["actions"][:])  # the copy, kept
    assert done.fix.summary["rows_out"] == 9


def test_members_kept_as_they_are_with_rl003_ignored(valid, tmp_path, capsys) -> None:
    """With RL003 ignored a dangling link is written as the same link (not silently lost), the
    summary counts histories only, and a renumbered group that would take a kept member's name
    is one line and exit 2, nothing written."""
    src = _copy(valid, tmp_path)
    with h5py.File(src, "r+") as f:
        f["zlink"] = h5py.SoftLink("/nowhere")
    done = curate.fix("icrl", str(src), tmp_path / "links", ignore=["RL003"])
    with h5py.File(tmp_path / "links" / src.name) as f:
        assert isinstance(f.get("zlink", getlink=True), h5py.SoftLink)
        assert f.get("zlink", getlink=True).path == "/nowhere"
    s = done.fix.summary
    assert (s["rows_in"], s["rows_out"], s["invalid_dropped"], s["dropped"]) == (12, 12, 0, 0)
    left = curate.fix("icrl", str(src), tmp_path / "gone")  # RL003 applied: the link goes
    assert left.fix.summary["members_dropped"] == 1 and left.fix.summary["rows_out"] == 12

    with h5py.File(src, "r+") as f:
        f.move("2", "task_2")
        f["2"] = np.arange(3)  # a root dataset holding a name renumbering hands out
    capsys.readouterr()
    out = tmp_path / "clash"
    rc = main(["fix", "icrl", str(src), "--out", str(out), "--ignore", "RL003"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    # numeric names first: group 3 is the third task group, renumbered onto the dataset "2"
    assert "task group 3 would be renumbered to 2, the name of the root member 2" in err
    assert not out.exists()
