"""The icrl scan's grouped episode checks (:func:`curate.io.xland_scan.episodes_of`: the
histories of a task checked together, block by block) give exactly what scanning each history
on its own gives (:meth:`HistoryScan.episodes`): on valid files with episodes crossing block
boundaries, on rewards and dones the grouped path leaves to the per-history one (non-finite,
negative, -0, above 1, paid off a done, float32), on broken episodes of every kind (with more
than the examples kept), on unreadable blocks in the middle of a group, on groups that do not
divide the task's histories, and on tasks whose episode limit is unknown.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from icrl_data import write_file

from curate.io import xland_scan as scan


def _scan(path: Path, **kw) -> dict:
    with h5py.File(path, "r") as f:
        groups = list(f.keys())
    return scan.scan_tasks(str(path), groups, list(range(len(groups))), **kw)


def _same_grouped_or_not(
    path: Path, monkeypatch, group_bytes: int = scan._GROUP_BYTES, **kw
) -> dict:
    """Scan ``path`` with histories grouped (``group_bytes`` of rewards and dones per group) and
    one at a time; assert equal outputs and return them."""
    monkeypatch.setattr(scan, "_GROUP_BYTES", group_bytes)
    grouped = _scan(path, **kw)
    monkeypatch.setattr(scan, "_GROUP_BYTES", 0)  # a group of one: HistoryScan.episodes
    alone = _scan(path, **kw)
    np.testing.assert_equal(grouped, alone)  # NaN equals NaN; dicts, lists and arrays in full
    return grouped


@pytest.fixture
def per_history(monkeypatch) -> list[int]:
    """The blocks (their first step) left to :meth:`HistoryScan.episodes`, one history each."""
    calls: list[int] = []
    real = scan.HistoryScan.episodes

    def spy(self, a, rewards, dones):
        calls.append(a)
        return real(self, a, rewards, dones)

    monkeypatch.setattr(scan.HistoryScan, "episodes", spy)
    return calls


@pytest.mark.parametrize("block_steps", [4096, 8192, scan.BLOCK_STEPS])
def test_valid_histories_across_blocks(
    tmp_path: Path, monkeypatch, per_history, block_steps
) -> None:
    """Episodes cross block boundaries (returns carried, lengths joined); the grouped path is
    the one taken for every block (no history left to the per-history checks)."""
    path = write_file(tmp_path / "ok.hdf5", tasks=2, histories=5, steps=10_000)
    out = _scan(path, block_steps=block_steps)
    assert per_history == []
    assert out["histories"]["steps_read"] == [10_000] * 10
    assert sum(out["histories"]["episodes"]) > 100
    _same_grouped_or_not(path, monkeypatch, block_steps=block_steps)


def test_groups_that_do_not_divide_the_histories(tmp_path: Path, monkeypatch) -> None:
    """Groups of two histories (the budget for 2 × 6000 steps × 3 bytes) over five."""
    path = write_file(tmp_path / "split.hdf5", tasks=2, histories=5, steps=6000)
    _same_grouped_or_not(path, monkeypatch, group_bytes=2 * 6000 * 3 + 1)


#: (history, step, float16 bits) written into task "0"'s rewards: each a case the grouped
#: path leaves to the per-history checks, at a done step unless said.
REWARDS = {
    "nan": [(1, 120, 0x7E00)],
    "inf": [(2, 4100, 0x7C00)],
    "negative": [(0, 50, 0xB800)],
    "negative zero at a done": [(1, 0, 0x8000)],
    "negative zero off a done": [(1, 1, 0x8000)],
    "above one": [(3, 9000, 0x3C01)],
    "off a done": [(2, 3, 0x3800)],
}


@pytest.mark.parametrize("case", sorted(REWARDS))
def test_rewards_left_to_the_per_history_checks(
    tmp_path: Path, monkeypatch, per_history, case
) -> None:
    path = write_file(tmp_path / "rewards.hdf5", tasks=2, histories=4, steps=10_000)
    with h5py.File(path, "r+") as f:
        rewards, dones = f["0"]["rewards"], f["0"]["dones"]
        for h, step, bits in REWARDS[case]:
            row, done = rewards[h], dones[h]
            if "off" not in case:
                done[step] = True
            row.view(np.uint16)[step] = bits
            rewards[h], dones[h] = row, done
    _scan(path, block_steps=8192)
    # the block holding it, for each history of its group; every other block: grouped
    assert len(per_history) == 4 and len(set(per_history)) == 1
    out = _same_grouped_or_not(path, monkeypatch, block_steps=8192)
    flagged = sum(
        sum(out["histories"][f"{k}_n"])
        for k in ("reward_nonfinite", "reward_range", "reward_off_done")
    )
    assert flagged == (0 if "zero" in case else 1)


def test_float32_rewards(tmp_path: Path, monkeypatch) -> None:
    path = write_file(tmp_path / "f32.hdf5", tasks=1, histories=3, steps=6000)
    with h5py.File(path, "r+") as f:
        data = f["0"]["rewards"][()].astype(np.float32)
        del f["0"]["rewards"]
        f["0"].create_dataset("rewards", data=data, chunks=(1, 4096), compression="gzip")
    _same_grouped_or_not(path, monkeypatch)


def test_broken_episodes_of_every_kind(tmp_path: Path, monkeypatch, per_history) -> None:
    """Too long, a reward implying another length, no reward before the limit: more of each
    than the examples kept, in several histories of a group and several blocks."""
    path = write_file(tmp_path / "broken.hdf5", tasks=1, histories=4, steps=12_000)
    with h5py.File(path, "r+") as f:
        m = 3 * 9 * 9
        for h in (0, 2, 3):
            dones = np.zeros(12_000, dtype=bool)
            rewards = np.zeros(12_000, dtype=np.float16)
            ends = np.cumsum(np.resize([m + 5, 40, 17, 60, m], 150)) - 1
            ends = ends[ends < 12_000]
            dones[ends] = True
            rewards[ends[1::5]] = np.float16(0.9)  # reward-length (40 steps imply another)
            rewards[ends[2::5]] = np.float16(1 - 0.9 * 17 / m)  # right
            f["0"]["dones"][h] = dones
            f["0"]["rewards"][h] = rewards
    _scan(path, block_steps=4096)
    assert per_history == []  # the grouped path found them
    out = _same_grouped_or_not(path, monkeypatch, block_steps=4096)
    hist = out["histories"]
    for kind in ("too-long", "reward-length", "zero-reward-early"):
        assert [hist[f"{kind}_n"][h] > scan.EXAMPLES for h in range(4)] == [
            True,
            False,
            True,
            True,
        ], kind
    eps = out["episodes"]
    kept = list(zip(eps["history"], eps["kind"], strict=True))
    assert kept.count((0, "too-long")) == scan.EXAMPLES


def test_unreadable_blocks_inside_a_group(tmp_path: Path, monkeypatch) -> None:
    """A history whose block cannot be read stops there (the steps before a short chunk still
    scanned); the rest of its group goes on together."""
    path = write_file(tmp_path / "bad.hdf5", tasks=2, histories=4, steps=10_000)
    with h5py.File(path, "r+") as f:
        ds = f["0"]["dones"]
        whole = zlib.decompress(ds.id.read_direct_chunk((1, 4096))[1])
        ds.id.write_direct_chunk((1, 4096), zlib.compress(whole[:100]))  # short
        ds = f["1"]["rewards"]
        ds.id.write_direct_chunk((2, 0), b"\x78\x9c" + bytes(50))  # corrupt
    out = _same_grouped_or_not(path, monkeypatch, block_steps=8192)
    errors = [
        (g, h)
        for g, h, e in zip(
            out["histories"]["group"],
            out["histories"]["history"],
            out["histories"]["error"],
            strict=True,
        )
        if e
    ]
    assert errors == [("0", 1), ("1", 2)]


def test_unknown_episode_limit(tmp_path: Path, monkeypatch) -> None:
    path = write_file(tmp_path / "noenv.hdf5", tasks=2, histories=3, steps=6000)
    with h5py.File(path, "r+") as f:
        f["0"].attrs["env-id"] = "something-else"
    _same_grouped_or_not(path, monkeypatch)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.integers(1, 9000),
    histories=st.integers(1, 4),
    width=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
def test_random_shapes_grouped_or_not(tmp_path: Path, monkeypatch, steps, histories, width, seed):
    path = tmp_path / f"g{seed}_{steps}_{histories}.hdf5"
    write_file(path, tasks=2, histories=histories, steps=steps, chunk=1000, seed=seed)
    _same_grouped_or_not(path, monkeypatch, group_bytes=width * 4096 * 3, block_steps=4096)
    path.unlink()


def test_pool_scan_shares_units_with_this_process() -> None:
    """On N workers the calling process scans too: the pool gets units from the front (two
    ahead per worker, before this process starts on its own), this process takes them from
    the back; results come in unit order."""
    import os

    from curate.families import icrl_read

    got = icrl_read._pool_scan(os.getpid, [()] * 12, 2)
    assert got[2:] == [os.getpid()] * 10  # the units this process took, from the back
    assert len(set(got[:2])) == 1 and got[0] != os.getpid()  # the pool's worker
    assert icrl_read._pool_scan(pow, [(2, i) for i in range(40)], 2) == [2**i for i in range(40)]
