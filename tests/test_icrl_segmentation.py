"""Episode segmentation of the scan (dones → episodes with step ranges), against a plain loop.

The scan reads a history in blocks and carries the open episode across block edges; whatever
the block size, it must find the same episodes, returns and broken episodes as the definition
written as a loop over steps.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.io.xland_scan import EXAMPLES, HistoryScan

MAX_STEPS = 12  # small, so that too-long and zero-reward-early episodes are common


def reference(dones: list[bool], rewards: list[float]):
    """Episodes as ``(start, end, return, reward at the end)``, then the open tail, by a loop."""
    episodes, start, ret = [], 0, 0.0
    for t, (d, r) in enumerate(zip(dones, rewards, strict=True)):
        ret += r
        if d:
            episodes.append((start, t + 1, ret, r))
            start, ret = t + 1, 0.0
    return episodes, (start, len(dones))


def flagged(episodes, tail):
    """Broken episodes by kind, as the rules define them."""
    out: dict[str, list[tuple[int, int]]] = {
        "reward-length": [],
        "too-long": [],
        "zero-reward-early": [],
    }
    for start, end, _, r in episodes:
        length = end - start
        if length > MAX_STEPS:
            out["too-long"].append((start, end))
        if r > 0 and round((1 - r) * MAX_STEPS / 0.9) != length:
            out["reward-length"].append((start, end))
        if r == 0 and length < MAX_STEPS:
            out["zero-reward-early"].append((start, end))
    if tail[1] - tail[0] > MAX_STEPS:
        out["too-long"].append(tail)
    return out


steps = st.lists(
    st.tuples(st.booleans(), st.sampled_from([0.0, 0.0, 0.0, 0.25, 0.55, 0.9250, 1.0])),
    min_size=0,
    max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(steps=steps, block=st.integers(min_value=1, max_value=64))
def test_blocks_give_the_loop_s_episodes(steps, block) -> None:
    dones = np.array([d for d, _ in steps], dtype=bool)
    rewards = np.array([r for _, r in steps], dtype=np.float16)
    n = dones.size
    scan = HistoryScan(n, MAX_STEPS)
    for a in range(0, n, block):
        b = min(n, a + block)
        scan.block(
            a,
            np.zeros((b - a, 5, 5), np.uint8),
            np.zeros(b - a, np.uint8),
            rewards[a:b],
            dones[a:b],
            np.zeros(b - a, np.uint8),
        )
    scan.finish()
    episodes, tail = reference(dones.tolist(), rewards.astype(float).tolist())
    row = scan.summary()
    assert row["episodes"] == len(episodes)
    assert row["tail"] == tail[1] - tail[0]
    assert scan.lengths.tolist() == [e - s for s, e, _, _ in episodes]
    got = np.concatenate(scan.returns) if scan.returns else np.zeros(0)
    assert np.allclose(got, [r for _, _, r, _ in episodes])
    want = flagged(episodes, tail)
    for kind, ranges in want.items():
        assert row[f"{kind}_n"] == len(ranges)
        examples = [
            (int(s), int(s + length))
            for k, starts, lengths, *_ in scan.examples
            if k == kind
            for s, length in zip(starts, lengths, strict=True)
        ]
        assert sorted(examples) == ranges[:EXAMPLES]


@pytest.mark.parametrize("length", ["100", "4096"])  # 4096 is the default length, given
def test_segment_length_without_segments_is_a_usage_error(tmp_path, capsys, length) -> None:
    """``--segment-length`` alone would be ignored (episodes are exported): one line, exit 2."""
    from icrl_data import write_file

    from curate.cli.main import main

    path = write_file(tmp_path / "v.hdf5", tasks=1, histories=1, steps=500)
    capsys.readouterr()
    argv = ["export", "icrl", str(path), "--segment-length", length, "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "--segment-length needs --unit segment" in err[0]
    assert not (tmp_path / "o").exists()


@settings(max_examples=300, deadline=None)
@given(
    bits=st.lists(st.integers(min_value=0, max_value=0xFFFF), min_size=0, max_size=200),
    dones=st.lists(st.booleans(), min_size=200, max_size=200),
)
def test_float16_bit_checks_agree_with_float_arithmetic(bits, dones) -> None:
    """The scan checks float16 rewards on their bits (NaN, inf, negative, > 1, paid off a done);
    on any bit pattern it counts exactly what float arithmetic counts, and returns the same
    paid steps and rewards."""
    rewards = np.array(bits, dtype=np.uint16).view(np.float16)
    done = np.array(dones[: rewards.size], dtype=bool)
    fast, slow = HistoryScan(rewards.size, MAX_STEPS), HistoryScan(rewards.size, MAX_STEPS)
    r1, p1 = fast._rewards(7, rewards, done)
    r2, p2 = slow._rewards_any(7, rewards, done)
    assert p1.tolist() == p2.tolist()
    assert np.array_equal(r1, r2)
    assert fast.counts == slow.counts
