"""The in-context RL family on XLand-100B-layout files: each corruption, injected alone into a copy
of a valid file, is reported by its rule at the right task, history and step range; valid files
(generated here, and the two shared samples made with the real environment) report no error.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest
from icrl_data import episode_of, write_file

import curate
from curate.cli.main import main
from curate.core.errors import InputError, UsageError
from curate.families import get_family

SAMPLES = ("xland_format_sample_9x9_random.hdf5", "xland_format_sample_13x13_random.hdf5")


@pytest.fixture(scope="module")
def valid(tmp_path_factory) -> Path:
    return write_file(tmp_path_factory.mktemp("icrl") / "valid.hdf5")


def _copy(valid: Path, tmp_path: Path, name: str = "copy.hdf5") -> Path:
    out = tmp_path / name
    shutil.copyfile(valid, out)
    return out


def _edit(path: Path, change: Callable[[h5py.File], None]) -> Path:
    with h5py.File(path, "r+") as f:
        change(f)
    return path


def _findings(path: Path | list[Path], rule: str | None = None, **options) -> list[dict]:
    paths = [str(p) for p in path] if isinstance(path, list) else str(path)
    report = curate.audit("icrl", paths, **options)
    out = []
    for f in report.iter_findings():
        if rule is None or f.rule == rule:
            out.append(
                {
                    "rule": f.rule,
                    "severity": f.severity,
                    "record": f.record,
                    "field": f.field,
                    "message": f.message,
                    **f.details,
                }
            )
    return out


def _only(path: Path, rule: str, **options) -> dict:
    found = _findings(path, rule, **options)
    assert len(found) == 1, found
    return found[0]


def _set(group: str, name: str, h: int, t: int, value) -> Callable[[h5py.File], None]:
    def change(f: h5py.File) -> None:
        ds = f[group][name]
        row = ds[h]
        row[t] = value
        ds[h] = row

    return change


# --------------------------------------------------------------------------- valid files


def test_valid_file_has_no_findings(valid: Path) -> None:
    report = curate.audit("icrl", str(valid))
    assert report.findings.height == 0, report.findings.to_dicts()
    s = report.stats
    assert (s["tasks"], s["histories"], s["transitions"]) == (3, 9, 54_000)
    assert s["episodes"] > 100
    assert 0.5 < s["mean_final_return"] < 1
    assert s["median_episode_length"] >= 1


@pytest.mark.parametrize("name", SAMPLES)
def test_shared_samples_warn_but_never_error(shared, name: str) -> None:
    """Made with the real environment by a random policy, with a hand-made benchmark id:
    valid files that warn (RL109 unpublished benchmark, RL207 no learning), nothing else."""
    path = shared(f"data/xland/{name}")
    report = curate.audit("icrl", str(path))
    rules = set(report.findings["rule"].to_list())
    assert "error" not in set(report.findings["severity"].to_list())
    assert rules <= {"RL109", "RL207"}
    assert "RL109" in rules
    s = report.stats
    assert (s["tasks"], s["histories"], s["transitions"]) == (2, 8, 32_768)


def test_shared_sample_summary_matches_a_plain_count(shared) -> None:
    """The headline figures, recomputed here with a plain loop over the arrays."""
    path = shared(f"data/xland/{SAMPLES[0]}")
    episodes, lengths = 0, []
    with h5py.File(path) as f:
        for g in f:
            for dones in f[g]["dones"][:]:
                ends = np.flatnonzero(dones)
                episodes += ends.size
                lengths += np.diff(np.r_[-1, ends]).tolist()
    s = curate.audit("icrl", str(path)).stats
    assert s["episodes"] == episodes
    assert s["median_episode_length"] == float(np.median(lengths))


def test_summary_uses_the_published_tables_definitions(valid: Path) -> None:
    """Median episode transitions: the median over tasks of transitions / episodes; final
    return: per task, the mean of its histories' last-tenth returns, then over tasks."""
    per_task_length, per_task_final = [], []
    with h5py.File(valid) as f:
        for g in f:
            dones, rewards = f[g]["dones"][:], f[g]["rewards"][:].astype(np.float64)
            per_task_length.append(dones.size / dones.sum())
            finals = []
            for d, r in zip(dones, rewards, strict=True):
                ends = np.flatnonzero(d)
                returns = np.add.reduceat(r, np.r_[0, ends[:-1] + 1])[: ends.size]
                finals.append(returns[-max(ends.size // 10, 1) :].mean())
            per_task_final.append(np.mean(finals))
    s = curate.audit("icrl", str(valid)).stats
    assert s["median_episode_transitions"] == pytest.approx(np.median(per_task_length), abs=1e-4)
    assert s["mean_final_return"] == pytest.approx(np.mean(per_task_final), abs=1e-4)
    assert s["median_final_return"] == pytest.approx(np.median(per_task_final), abs=1e-4)


def test_metadata_only_reads_no_array(valid: Path, tmp_path: Path) -> None:
    """--metadata-only checks structure without scanning: an array corruption goes unseen and
    the scan is never built."""
    bad = _edit(_copy(valid, tmp_path), _set("1", "actions", 2, 100, 9))
    report = curate.audit("icrl", str(bad), metadata_only=True)
    assert report.findings.height == 0
    assert "table:scan" not in report.durations
    assert report.stats["metadata_only"] is True
    assert _only(bad, "RL301")["task"] == "1"


def test_metadata_only_leaves_out_the_rules_that_need_the_scan(valid: Path) -> None:
    """The core audit drops the rules needing a table the options make unavailable: the
    report's rules_run says which ran; a one-string ``ignore`` is one selector (it was split
    into letters when icrl added the scan rules to it)."""
    from curate.audits.icrl import RULES, SCAN

    fam = get_family("icrl")
    data = fam.load([str(valid)], metadata_only=True)
    report = fam.audit(data, ignore="RL101")
    needs_scan = {r.code for r in RULES if SCAN in r.needs}
    assert {"RL301", "RL403"} <= needs_scan
    assert not needs_scan & set(report.rules_run)
    assert "RL101" not in report.rules_run and "RL102" in report.rules_run
    full = fam.audit(fam.load([str(valid)]))
    assert needs_scan <= set(full.rules_run)


def test_sample_mode_is_seeded(valid: Path) -> None:
    fam = get_family("icrl")
    a = fam.load([str(valid)], tasks=2, seed=3)
    b = fam.load([str(valid)], tasks=2, seed=3)
    chosen = a.tasks.filter("scanned")["name"].to_list()
    assert chosen == b.tasks.filter("scanned")["name"].to_list()
    assert len(chosen) == 2
    report = fam.audit(a)
    assert report.stats["tasks_scanned"] == 2
    assert report.stats["histories_scanned"] == 6
    assert fam.load([str(valid)], fraction=0.34).tasks["scanned"].sum() == 2
    with pytest.raises(UsageError):
        fam.options(tasks=2, fraction=0.5)
    with pytest.raises(UsageError):
        fam.options(fraction=1.5)


def test_parallel_scan_equals_serial(valid: Path) -> None:
    """The scan split over worker processes gives the same tables as one process."""
    import curate.families.icrl_read as icrl

    fam = get_family("icrl")
    serial = icrl.run_scan(fam.load([str(valid)], workers=1))
    parallel = icrl.run_scan(fam.load([str(valid)], workers=2))
    assert parallel.workers == 2
    assert parallel.histories.equals(serial.histories)
    assert parallel.lengths.equals(serial.lengths)


# --------------------------------------------------------------------------- episodes, rewards


def test_reward_that_disagrees_with_length(valid: Path, tmp_path: Path) -> None:
    with h5py.File(valid) as f:
        dones, rewards = f["1"]["dones"][2], f["1"]["rewards"][2]
    ends = np.flatnonzero(dones & (rewards > 0))
    k = int(np.flatnonzero(np.isin(np.flatnonzero(dones), ends))[3])
    start, end = episode_of(valid, "1", 2, k)
    length = end - start
    wrong = np.float16(1 - 0.9 * (length + 5) / 243)
    bad = _edit(_copy(valid, tmp_path), _set("1", "rewards", 2, end - 1, wrong))
    f = _only(bad, "RL201")
    assert (f["record"], f["task"], f["history"]) == ("1/2", "1", 2)
    assert (f["step_start"], f["step_end"]) == (start, end)
    assert f["implied_length"] == length + 5 and f["length"] == length
    assert {x["rule"] for x in _findings(bad) if x["rule"].startswith("RL2")} == {"RL201"}


def test_lost_done_makes_an_episode_too_long(valid: Path, tmp_path: Path) -> None:
    with h5py.File(valid) as f:
        dones, rewards = f["0"]["dones"][1], f["0"]["rewards"][1]
    ends = np.flatnonzero(dones)
    k = int(np.flatnonzero(rewards[ends] == 0)[0])  # a failure: 243 steps, reward 0
    start, _ = episode_of(valid, "0", 1, k)
    _, next_end = episode_of(valid, "0", 1, k + 1)
    bad = _edit(_copy(valid, tmp_path), _set("0", "dones", 1, int(ends[k]), False))
    f = _only(bad, "RL202")
    assert (f["record"], f["step_start"], f["step_end"]) == ("0/1", start, next_end)
    assert f["length"] == next_end - start > 243


def test_zero_reward_done_before_max_steps(valid: Path, tmp_path: Path) -> None:
    with h5py.File(valid) as f:
        dones, rewards = f["2"]["dones"][0], f["2"]["rewards"][0]
    ends = np.flatnonzero(dones)
    k = int(np.flatnonzero(rewards[ends] > 0.2)[-1])
    start, end = episode_of(valid, "2", 0, k)
    bad = _edit(_copy(valid, tmp_path), _set("2", "rewards", 0, end - 1, 0))
    f = _only(bad, "RL203")
    assert (f["record"], f["step_start"], f["step_end"]) == ("2/0", start, end)


@pytest.mark.parametrize(
    ("rule", "value"),
    [("RL204", 0.5), ("RL205", np.nan), ("RL205", np.inf), ("RL206", -0.25)],
)
def test_reward_on_a_plain_step(valid: Path, tmp_path: Path, rule: str, value: float) -> None:
    with h5py.File(valid) as f:
        dones = f["1"]["dones"][1]
    t = int(np.flatnonzero(~dones)[2500])
    bad = _edit(_copy(valid, tmp_path), _set("1", "rewards", 1, t, value))
    f = _only(bad, rule)
    assert (f["record"], f["task"], f["history"]) == ("1/1", "1", 1)
    assert (f["step_start"], f["step_end"]) == (t, t + 1)
    assert {x["rule"] for x in _findings(bad) if x["severity"] == "error"} == {rule}


def test_many_bad_steps_give_one_finding_with_the_range(valid: Path, tmp_path: Path) -> None:
    def change(f: h5py.File) -> None:
        a = f["0"]["actions"][0]
        a[[10, 4500, 5999]] = 6
        f["0"]["actions"][0] = a

    f = _only(_edit(_copy(valid, tmp_path), change), "RL301")
    assert (f["step_start"], f["step_end"], f["steps"]) == (10, 6000, 3)
    assert "3 such steps" in f["message"]


def test_history_that_does_not_learn(tmp_path: Path) -> None:
    path = write_file(tmp_path / "flat.hdf5", flat=[(2, 1)])
    f = _only(path, "RL207")
    assert (f["record"], f["step_start"], f["step_end"]) == ("2/1", 0, 6000)
    assert f["severity"] == "warning"


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("rule", "dataset", "value"),
    [("RL301", "actions", 6), ("RL302", "expert_actions", 255)],
)
def test_action_out_of_range(valid: Path, tmp_path: Path, rule, dataset, value) -> None:
    bad = _edit(_copy(valid, tmp_path), _set("2", dataset, 2, 4097, value))
    f = _only(bad, rule)
    assert (f["record"], f["step_start"], f["step_end"]) == ("2/2", 4097, 4098)
    assert f"action {value} outside 0..5 at step 4097" in f["message"] and f["value"] == value


def test_state_value_that_decodes_to_no_tile(valid: Path, tmp_path: Path) -> None:
    def change(f: h5py.File) -> None:
        s = f["0"]["states"][2]
        s[777, 3, 1] = 13 * 12 + 4  # tile 13 does not exist
        f["0"]["states"][2] = s

    f = _only(_edit(_copy(valid, tmp_path), change), "RL304")
    assert (f["record"], f["step_start"], f["step_end"], f["value"]) == ("0/2", 777, 778, 160)
    assert "tile 13" in f["message"]


def test_near_constant_expert_actions(valid: Path, tmp_path: Path) -> None:
    def change(f: h5py.File) -> None:
        e = f["1"]["expert_actions"][0]
        e[: int(0.97 * e.size)] = 2
        f["1"]["expert_actions"][0] = e

    f = _only(_edit(_copy(valid, tmp_path), change), "RL303")
    assert (f["record"], f["action"], f["step_start"], f["step_end"]) == ("1/0", 2, 0, 6000)


# --------------------------------------------------------------------------- structure


def test_group_names(valid: Path, tmp_path: Path) -> None:
    gap = _edit(_copy(valid, tmp_path, "gap.hdf5"), lambda f: f.move("1", "4"))
    found = _findings(gap, "RL102")
    assert [(f["record"], f["missing_first"], f["missing_last"]) for f in found] == [
        ("2", 1, 1),
        ("4", 3, 3),
    ]
    assert "task group 1 is missing before group 2" in found[0]["message"]
    padded = _edit(_copy(valid, tmp_path, "pad.hdf5"), lambda f: f.move("2", "02"))
    f = _only(padded, "RL101")
    assert f["record"] == "02" and "f[2]" in f["message"]
    named = _edit(_copy(valid, tmp_path, "named.hdf5"), lambda f: f.move("2", "task_2"))
    assert _only(named, "RL101")["record"] == "task_2"


def test_missing_dataset_is_a_finding_and_the_rest_is_scanned(valid: Path, tmp_path: Path):
    bad = _edit(_copy(valid, tmp_path), lambda f: f["1"].__delitem__("expert_actions"))
    f = _only(bad, "RL103")
    assert (f["record"], f["missing"]) == ("1", ["expert_actions"])
    assert f["step_start"] is None and f["history"] is None
    report = curate.audit("icrl", str(bad))
    assert report.stats["histories_scanned"] == 6  # groups 0 and 2
    assert main(["audit", "icrl", str(bad)]) == 1


def test_attributes(valid: Path, tmp_path: Path) -> None:
    def change(f: h5py.File) -> None:
        del f["0"].attrs["benchmark-id"]
        f["2"].attrs["ruleset-id"] = "seven"

    bad = _edit(_copy(valid, tmp_path), change)
    found = {f["record"]: f for f in _findings(bad, "RL104")}
    assert found["0"]["missing"] == ["benchmark-id"]
    assert "ruleset-id: str 'seven'" in found["2"]["message"]


def test_dtype_and_shape(valid: Path, tmp_path: Path) -> None:
    def change(f: h5py.File) -> None:
        r = f["2"]["rewards"][:]
        del f["2"]["rewards"]
        f["2"].create_dataset("rewards", data=r.astype(np.float32), chunks=(1, 4096))

    f = _only(_edit(_copy(valid, tmp_path), change), "RL105")
    assert (f["record"], f["dtype"]) == ("2", "float32")
    assert "expected float16" in f["message"]


def test_shape_differs_across_groups(tmp_path: Path) -> None:
    path = write_file(tmp_path / "short.hdf5", steps_of=lambda t: 5000 if t == 1 else 6000)
    f = _only(path, "RL106")
    assert (f["record"], f["steps"]) == ("1", 5000)


def test_env_and_benchmark_ids(valid: Path, tmp_path: Path) -> None:
    other = _edit(
        _copy(valid, tmp_path, "env.hdf5"),
        lambda f: f["1"].attrs.__setitem__("env-id", "XLand-MiniGrid-R1-13x13"),
    )
    f = _only(other, "RL108")
    assert (f["record"], f["value"], f["usual"]) == (
        "1",
        "XLand-MiniGrid-R1-13x13",
        "XLand-MiniGrid-R1-9x9",
    )
    unknown = _edit(
        _copy(valid, tmp_path, "unknown.hdf5"),
        lambda f: f["0"].attrs.__setitem__("env-id", "MiniGrid-Empty-5x5-v0"),
    )
    assert _only(unknown, "RL107")["record"] == "0"
    # without a step limit the group's episodes are not checked, rather than misjudged
    assert not [x for x in _findings(unknown) if x["rule"].startswith("RL20")]

    def bench(f: h5py.File) -> None:
        for g in f:
            f[g].attrs["benchmark-id"] = "my-bench"

    f = _only(_edit(_copy(valid, tmp_path, "bench.hdf5"), bench), "RL109")
    assert (f["record"], f["groups"]) == ("0", 3)


def test_root_member_and_storage(valid: Path, tmp_path: Path) -> None:
    def change(f: h5py.File) -> None:
        f.create_dataset("meta", data=np.arange(3))
        a = f["0"]["actions"][:]
        del f["0"]["actions"]
        f["0"].create_dataset("actions", data=a)  # contiguous, uncompressed

    bad = _edit(_copy(valid, tmp_path), change)
    assert _only(bad, "RL003")["record"] == "meta"
    f = _only(bad, "RL002")
    assert (f["record"], f["field"]) == ("0", "actions")


def test_unreadable_chunk(valid: Path, tmp_path: Path) -> None:
    """A corrupt compressed chunk is one finding with its step range; the rest is audited."""
    bad = _copy(valid, tmp_path)
    with h5py.File(bad) as f:
        info = f["2"]["rewards"].id.get_chunk_info_by_coord((1, 4096))
    raw = bytearray(bad.read_bytes())
    for i in range(info.byte_offset + 2, info.byte_offset + info.size):
        raw[i] ^= 0xFF
    bad.write_bytes(bytes(raw))
    f = _only(bad, "RL001")
    assert (f["record"], f["step_start"], f["step_end"]) == ("2/1", 0, 6000)
    assert f["field"] == "rewards" and "rewards steps [0, 6000) cannot be read" in f["message"]
    report = curate.audit("icrl", str(bad))
    assert report.stats["histories_scanned"] == 9
    assert main(["audit", "icrl", str(bad)]) == 1


# --------------------------------------------------------------------------- duplicates


def _copy_history(src: tuple[str, int], dst: tuple[str, int]) -> Callable[[h5py.File], None]:
    def change(f: h5py.File) -> None:
        for name in ("states", "actions", "rewards", "dones", "expert_actions"):
            f[dst[0]][name][dst[1]] = f[src[0]][name][src[1]]

    return change


def test_duplicate_history(valid: Path, tmp_path: Path) -> None:
    bad = _edit(_copy(valid, tmp_path), _copy_history(("0", 1), ("2", 0)))
    f = _only(bad, "RL403")
    assert (f["record"], f["same_as"], f["step_start"], f["step_end"]) == ("2/0", "0/1", 0, 6000)
    assert not _findings(bad, "RL402")


def test_duplicate_task_under_another_id(valid: Path, tmp_path: Path) -> None:
    def change(f: h5py.File) -> None:
        for h in range(3):
            _copy_history(("0", h), ("2", h))(f)

    bad = _edit(_copy(valid, tmp_path), change)
    f = _only(bad, "RL402")
    assert (f["record"], f["same_as"]) == ("2", "0")
    assert not _findings(bad, "RL403")  # left to RL402
    assert not _findings(bad, "RL401")  # the ruleset ids differ: found by content


def test_duplicate_ruleset(valid: Path, tmp_path: Path) -> None:
    bad = _edit(_copy(valid, tmp_path), lambda f: f["2"].attrs.__setitem__("ruleset-id", 1000))
    f = _only(bad, "RL401")
    assert (f["record"], f["same_as"], f["ruleset_id"]) == ("2", "0", 1000)


def test_overlap_between_train_and_eval_files(tmp_path: Path) -> None:
    train = write_file(tmp_path / "train.hdf5", seed=1)
    evaluation = write_file(tmp_path / "eval.hdf5", seed=2)

    def change(f: h5py.File) -> None:
        with h5py.File(train) as t:
            for h in range(3):
                for name in ("states", "actions", "rewards", "dones", "expert_actions"):
                    f["1"][name][h] = t["0"][name][h]
        f["2"].attrs["ruleset-id"] = 1001 + 10  # no overlap by ruleset for group 2

    # ruleset ids 1000..1002 are in both files: every group overlaps by ruleset at least
    _edit(evaluation, change)
    found = {f["record"]: f for f in _findings([train, evaluation], "RL404")}
    assert set(found) == {"0", "1"}
    assert found["1"]["evidence"] == "identical content" and found["1"]["same_as"] == "0"
    assert found["0"]["evidence"].startswith("same env-id")
    assert found["1"]["file"] == str(evaluation) and found["1"]["first_file"] == str(train)
    assert not _findings([train], "RL404")


# --------------------------------------------------------------------------- unusable inputs

_HTML = "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>nope</body></html>"
_XML = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
    "<Message>Access Denied</Message><RequestId>X</RequestId></Error>"
)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (
            lambda d, v: d.joinpath("page.hdf5").write_text(_HTML),
            "HTML page titled '404 Not Found'",
        ),
        (lambda d, v: d.joinpath("err.hdf5").write_text(_XML), "AccessDenied: Access Denied"),
        (lambda d, v: d.joinpath("empty.hdf5").write_bytes(b""), "empty file"),
        (
            lambda d, v: d.joinpath("cut.hdf5").write_bytes(
                v.read_bytes()[: v.stat().st_size // 2]
            ),
            "truncated HDF5 file: 88,476 of 176,953 bytes",
        ),
        (
            lambda d, v: d.joinpath("zip.hdf5").write_bytes(b"PK\x03\x04" + bytes(100)),
            "zip archive",
        ),
    ],
)
def test_not_an_hdf5_file_is_one_line(tmp_path, valid, capsys, make, says) -> None:
    make(tmp_path, valid)
    path = next(tmp_path.iterdir())
    with pytest.raises(InputError, match=says.replace("(", r"\(")):
        get_family("icrl").load([str(path)])
    capsys.readouterr()
    assert main(["audit", "icrl", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and says in err[0] and str(path) in err[0]


def test_hdf5_of_another_layout(tmp_path: Path, capsys) -> None:
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("observations", data=np.zeros((4, 3)))
        f.create_group("meta").attrs["x"] = 1
    assert main(["audit", "xland", str(path)]) == 2
    err = capsys.readouterr().err
    assert "HDF5 file of another layout" in err and "'meta', 'observations'" in err


def test_rules_are_documented() -> None:
    fam = get_family("xland")
    assert fam.name == "icrl"
    codes = [r.code for r in fam.rules]
    assert codes == sorted(codes) and len(codes) >= 25
    for r in fam.rules:
        assert len(r.doc.split()) > 25, r.code


def test_json_report_carries_locations(valid: Path, tmp_path: Path, capsys) -> None:
    bad = _edit(_copy(valid, tmp_path), _set("0", "actions", 1, 42, 7))
    capsys.readouterr()
    assert main(["audit", "icrl", str(bad), "-f", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    (f,) = out["findings"]
    assert f["record"] == "0/1" and f["input"] == str(bad) and f["row"] == 1
    want = {"task": "0", "history": 1, "step_start": 42, "step_end": 43}
    assert f["details"].items() >= want.items()
    assert out["summary"]["stats"]["episodes"] > 0


# --------------------------------------------------------------------------- review fixes


def _break_links(f: h5py.File) -> None:
    del f["1"]["expert_actions"]
    f["1"]["expert_actions"] = h5py.ExternalLink("other.h5", "/x")
    del f["2"]["dones"]
    f["2"]["dones"] = h5py.SoftLink("/0/missing")
    f["gone"] = h5py.SoftLink("/nowhere")
    f["far"] = h5py.ExternalLink("other.h5", "/y")


def test_broken_links_are_findings_never_a_crash(valid: Path, tmp_path: Path, capsys) -> None:
    """A link inside a task group that cannot be followed is RL103 on that group (which is not
    scanned); one at the root is RL003 said as a link. No command reaches an internal error."""
    bad = _edit(_copy(valid, tmp_path), _break_links)
    found = {(f["rule"], f["record"]): f for f in _findings(bad)}
    ext = found[("RL103", "1")]
    assert ext["field"] == "expert_actions" and "external link to other.h5:/x" in ext["message"]
    soft = found[("RL103", "2")]
    assert soft["field"] == "dones" and "dangling soft link (to /0/missing)" in soft["message"]
    assert "a dangling soft link (to /nowhere)" in found[("RL003", "gone")]["message"]
    assert "an external link to other.h5:/y" in found[("RL003", "far")]["message"]
    assert curate.audit("icrl", str(bad)).stats["histories_scanned"] == 3  # group 0 only
    capsys.readouterr()
    assert main(["audit", "icrl", str(bad)]) == 1
    assert main(["audit", "icrl", str(bad), "--metadata-only"]) == 1
    assert main(["validate", "icrl", str(bad)]) in (0, 1)
    assert main(["fix", "icrl", str(bad), "--out", str(tmp_path / "fixed")]) in (0, 1)
    with h5py.File(tmp_path / "fixed" / bad.name) as f:
        assert sorted(f) == ["0"]
    assert main(["export", "icrl", str(bad), "--out", str(tmp_path / "export")]) in (0, 1)
    assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize("value", [np.inf, np.nan])
def test_nonfinite_reward_at_a_done_is_reported_once(valid: Path, tmp_path: Path, value) -> None:
    """RL205 reports it; RL201 would add "implies an episode of -1 steps" for +inf."""
    _, end = episode_of(valid, "1", 1, 3)
    bad = _edit(_copy(valid, tmp_path), _set("1", "rewards", 1, end - 1, value))
    assert {x["rule"] for x in _findings(bad) if x["severity"] == "error"} == {"RL205"}


def test_minari_layout_is_refused_in_one_line(tmp_path: Path, capsys) -> None:
    """Minari's episode groups share dataset names with XLand; they are another layout."""
    path = tmp_path / "minari.hdf5"
    with h5py.File(path, "w") as f:
        for e in range(3):
            g = f.create_group(f"episode_{e}")
            for name in ("actions", "rewards", "terminations", "truncations"):
                g.create_dataset(name, data=np.zeros(10))
            g.create_dataset("observations", data=np.zeros((11, 4)))
    capsys.readouterr()
    assert main(["audit", "icrl", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "HDF5 file of another layout" in err[0]
    assert "'episode_0', 'episode_1', 'episode_2'" in err[0] and "terminations" in err[0]


def test_summary_never_says_of_zero_records(valid: Path, tmp_path: Path, capsys) -> None:
    """Findings on members that hold no history (a root dataset, a group whose datasets are
    links) are not counted "in 3 of 0 records"."""

    def change(f: h5py.File) -> None:
        for name in ("0", "1", "2"):
            for d in ("actions", "rewards", "states", "dones", "expert_actions"):
                del f[name][d]
                f[name][d] = h5py.SoftLink(f"/nowhere/{d}")
        f["meta"] = np.arange(3)

    bad = _edit(_copy(valid, tmp_path), change)
    capsys.readouterr()
    assert main(["audit", "icrl", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "of 0 records" not in out and "findings" in out


def test_fix_summary_counts_are_the_changelog_lines(valid: Path, tmp_path: Path, capsys):
    """RL101 on a group RL402 drops writes no line; the summary must not count it. The summary
    counts the findings whose edit was applied, as for every family: one RL402 finding drops
    every history of its group (a line each), one RL102 finding renames every group after it."""

    def change(f: h5py.File) -> None:
        f.move("0", "5")
        f.move("1", "task_7")
        del f["2"]
        f.copy(f["task_7"], "007")  # the same task again: RL402 drops the later copy
        f["meta"] = np.arange(3)
        f["gone"] = h5py.SoftLink("/nowhere")

    bad = _edit(_copy(valid, tmp_path, "names.hdf5"), change)
    capsys.readouterr()
    out = tmp_path / "fixed"
    assert main(["fix", "icrl", str(bad), "--out", str(out)]) in (0, 1)
    said = capsys.readouterr()
    lines = [json.loads(x) for x in (out / "changelog.jsonl").read_text().splitlines()]
    line = next(x for x in (said.out + said.err).splitlines() if " changes (fixed " in x)
    fixed = line.split(" changes (fixed ")[1].split(")")[0]
    counts = {k: int(v) for k, v in (p.split(": ") for p in fixed.split(", "))}
    findings: dict[str, set] = {}
    for c in lines:
        findings.setdefault(c["rule"], set()).add(json.dumps(c.get("finding"), sort_keys=True))
    assert counts == {rule: len(found) for rule, found in findings.items()}
    assert counts["RL402"] == 1 and Counter(c["rule"] for c in lines)["RL402"] == 3
    assert f" {len(lines)} changes" in line and "RL101" in counts


def test_messages_count_in_the_singular(tmp_path: Path) -> None:
    """One task is "1 task", and a range in the text reads as the details' (end exclusive)."""
    one = write_file(tmp_path / "one.hdf5", tasks=1, histories=1, steps=3000)
    assert (
        curate.audit("icrl", str(one))
        .stats["headline"][0]
        .startswith("1 task, 1 history, 3,000 transitions")
    )
    start, end = episode_of(one, "0", 0, 2)
    assert end - start > 1
    _edit(one, _set("0", "dones", 0, end - 1, False))
    f = next(x for x in _findings(one) if x["rule"] in ("RL201", "RL202"))
    assert f"steps [{f['step_start']}, {f['step_end']})" in f["message"]


def test_help_offers_only_what_icrl_reads(capsys) -> None:
    """No --encoding (HDF5 is binary) and no hf:// or standard input in PATHS' help: the
    family refuses those, so its --help must not offer them."""
    from curate.cli.main import main

    for verb in ("validate", "audit", "fix", "export"):
        capsys.readouterr()
        assert main([verb, "icrl", "--help"]) == 0
        out = capsys.readouterr().out
        assert "--encoding" not in out and "hf://" not in out and "HDF5" in out, verb
        assert main([verb, "mquake", "--help"]) == 0
        assert "--encoding" in capsys.readouterr().out  # a text family keeps it


@pytest.mark.parametrize("direct", ["1", "0"])
def test_short_chunk(valid: Path, tmp_path: Path, monkeypatch, capsys, direct: str) -> None:
    """A chunk whose deflate stream ends cleanly short of the chunk's size (HDF5 reads it
    without an error, the rest being unset memory) is an unreadable block at the chunk's steps,
    whether the scan inflates chunks itself or HDF5 reads them."""
    import zlib

    monkeypatch.setenv("CURATE_ICRL_DIRECT", direct)
    bad = _copy(valid, tmp_path)
    with h5py.File(bad, "r+") as f:
        ds = f["1"]["dones"]
        whole = zlib.decompress(ds.id.read_direct_chunk((2, 4096))[1])
        ds.id.write_direct_chunk((2, 4096), zlib.compress(whole[:500]))
    f = _only(bad, "RL001")
    assert (f["record"], f["task"], f["history"], f["step_start"], f["step_end"]) == (
        "1/2",
        "1",
        2,
        4096,
        6000,
    )
    assert f["field"] == "dones"
    assert "after 500 of the chunk's 4,096 bytes" in f["message"], f["message"]
    assert "not checked from step 4096 on" in f["message"]
    assert [x for x in _findings(bad) if x["severity"] == "error"] == [f]
    capsys.readouterr()
    assert main(["audit", "icrl", str(bad), "--format", "json"]) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    (rl001,) = [x for x in found if x["rule"] == "RL001"]
    d = rl001["details"]
    assert (d["task"], d["history"], d["step_start"], d["step_end"]) == ("1", 2, 4096, 6000)
    assert main(["audit", "icrl", str(valid)]) == 0
