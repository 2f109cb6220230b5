"""Valid XLand-100B-layout learning histories made with numpy (tests and ``bench/bench_icrl.py``).

Why generated and not taken from xminigrid: the environment (and jax) is not a dependency, and
a test needs files that obey every invariant the rules check, so that one corruption injected
into a copy is the only thing reported. The histories look like learning: the chance that an
episode reaches its goal rises from 5% to 95% over the history, successful episodes get shorter,
the taken action agrees with the expert's more and more often. Each episode's reward is exactly
the environment's (``1 - 0.9 * L / max_steps``, stored as float16), failures end at
``max_steps`` with reward 0, and the last episode of a history is left open. Observations are
5×5 views cut from a fixed per-task map along a random walk, packed ``tile * 12 + colour`` with
the values the real files hold, so they compress about as well as the real data (~3 bytes per
step with gzip).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import h5py
import numpy as np

#: Packed cell values seen in the real environment's views (empty, end of map, unseen, floor,
#: wall, and a few objects).
EMPTY, END_OF_MAP, UNSEEN, FLOOR, WALL = 0, 19, 30, 37, 51
OBJECTS = (62, 89, 113)
EXPERT_P = np.array([0.35, 0.2, 0.2, 0.1, 0.1, 0.05])


def max_steps_of(size: int) -> int:
    return 3 * size * size


def episodes_for(rng: np.random.Generator, steps: int, max_steps: int, learn: bool = True):
    """(lengths, rewards) of the episodes filling ``steps`` (the last one cut off, open)."""
    lengths: list[int] = []
    rewards: list[float] = []
    used = 0
    while used < steps:
        progress = used / steps if learn else 0.5
        p = 0.05 + 0.9 * progress if learn else 0.3
        if rng.random() < p:
            mean = max_steps * (0.5 - 0.42 * progress)
            length = int(min(max_steps, max(1, rng.geometric(1 / max(mean, 1.5)))))
            reward = float(np.float16(1 - 0.9 * length / max_steps))
        else:
            length, reward = max_steps, 0.0
        lengths.append(length)
        rewards.append(reward)
        used += length
    return np.array(lengths), np.array(rewards)


def task_map(rng: np.random.Generator, size: int) -> np.ndarray:
    """The task's grid (walls around floor, a few objects), padded with end-of-map cells."""
    grid = np.full((size, size), FLOOR, dtype=np.uint8)
    grid[0, :] = grid[-1, :] = grid[:, 0] = grid[:, -1] = WALL
    for v in OBJECTS:
        y, x = rng.integers(1, size - 1, 2)
        grid[y, x] = v
    return np.pad(grid, 2, constant_values=END_OF_MAP)


def history(
    rng: np.random.Generator, grid: np.ndarray, steps: int, max_steps: int, learn: bool = True
) -> dict[str, np.ndarray]:
    """The five arrays of one valid history."""
    lengths, rews = episodes_for(rng, steps, max_steps, learn)
    ends = np.cumsum(lengths) - 1
    keep = ends < steps
    dones = np.zeros(steps, dtype=bool)
    dones[ends[keep]] = True
    rewards = np.zeros(steps, dtype=np.float16)
    rewards[ends[keep]] = rews[keep]
    expert = rng.choice(6, size=steps, p=EXPERT_P).astype(np.uint8)
    agree = rng.random(steps) < np.linspace(0.3, 0.95, steps) if learn else rng.random(steps) < 0.5
    actions = np.where(agree, expert, rng.integers(0, 6, steps)).astype(np.uint8)
    size = grid.shape[0] - 4
    moves = rng.integers(-1, 2, size=(steps, 2))
    pos = np.clip(np.cumsum(moves, axis=0) + size // 2, 1, size - 2) + 2
    off = np.arange(-2, 3)
    ys = pos[:, 0, None, None] + off[None, :, None]
    xs = pos[:, 1, None, None] + off[None, None, :]
    states = grid[ys, xs]
    states[:, 0, :] = np.where(rng.random((steps, 5)) < 0.1, UNSEEN, states[:, 0, :])
    return {
        "states": states.astype(np.uint8),
        "actions": actions,
        "rewards": rewards,
        "dones": dones,
        "expert_actions": expert,
    }


def write_file(
    path: Path,
    *,
    tasks: int = 3,
    histories: int = 3,
    steps: int = 6000,
    size: int = 9,
    seed: int = 0,
    benchmark: str = "trivial-1m",
    flat: Iterable[tuple[int, int]] = (),
    steps_of: Callable[[int], int] | None = None,
    chunk: int = 4096,
    compression: str | None = "gzip",
    progress: Callable[[int], None] | None = None,
) -> Path:
    """A valid file in the published layout: ``tasks`` groups of ``histories`` × ``steps``.

    ``flat``: (task, history) pairs generated without learning (for RL207). ``steps_of``: a
    task's step count, when one should differ. Histories are generated and written one at a
    time, so multi-GB files need little memory.
    """
    rng = np.random.default_rng(seed)
    flat = set(flat)
    with h5py.File(path, "w") as f:
        for t in range(tasks):
            n = steps_of(t) if steps_of else steps
            g = f.create_group(str(t))
            g.attrs["env-id"] = f"XLand-MiniGrid-R1-{size}x{size}"
            g.attrs["benchmark-id"] = benchmark
            g.attrs["ruleset-id"] = np.int64(1000 + t)
            c = min(chunk, n)
            opts = {"compression": compression} if compression else {}
            ds = {
                "states": g.create_dataset(
                    "states", (histories, n, 5, 5), np.uint8, chunks=(1, c, 5, 5), **opts
                ),
                **{
                    name: g.create_dataset(name, (histories, n), dt, chunks=(1, c), **opts)
                    for name, dt in (
                        ("actions", np.uint8),
                        ("rewards", np.float16),
                        ("dones", np.bool_),
                        ("expert_actions", np.uint8),
                    )
                },
            }
            grid = task_map(rng, size)
            for h in range(histories):
                arrays = history(rng, grid, n, max_steps_of(size), learn=(t, h) not in flat)
                for name, arr in arrays.items():
                    ds[name][h] = arr
                if progress:
                    progress(n)
    return path


def episode_of(path: Path, group: str, history_index: int, k: int) -> tuple[int, int]:
    """Step range ``[start, end)`` of the ``k``-th completed episode of a history."""
    with h5py.File(path, "r") as f:
        dones = f[group]["dones"][history_index]
    ends = np.flatnonzero(dones)
    start = 0 if k == 0 else int(ends[k - 1]) + 1
    return start, int(ends[k]) + 1
