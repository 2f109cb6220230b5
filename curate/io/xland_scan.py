"""The one pass over an XLand-style HDF5 file's arrays: task groups in, compact tables out.

:func:`scan_tasks` is a pure function of ``(path, task groups)``: it reads every array of those
groups once, in chunk-aligned blocks of one history, and returns plain numpy columns — one row
per history (lengths, episode counts, returns, action histograms, out-of-range counts with their
first and last step, a content digest), a few example rows per history for each kind of broken
episode, and a histogram of episode lengths. Outputs of disjoint group ranges merge by
concatenation (:func:`merge`), so the same function runs in a process pool here and, unchanged,
as tasks on a cluster. It imports only numpy, h5py, xxhash, libdeflate, zlib-ng and the
dependency-free layout constants (:mod:`curate.io.xland_layout`) — not :mod:`curate.families`,
whose registry and data contract load polars, pyarrow and pydantic — so a worker process starts
in about the time numpy and h5py take; it keeps no state between calls.

Why per-history aggregates and *examples* of broken episodes rather than a row per episode:
XLand-100B holds 2.5 billion episodes; a row each would be tens of GB, while a history's row is
~200 bytes (0.2 GB for its 924k histories) and broken episodes are bounded by
:data:`EXAMPLES` per history and kind (the count is kept in full). Memory is therefore bounded
by one block of one history (``block_steps`` × 26 bytes: observations and actions), one
block of a group of histories' rewards and dones (:data:`_GROUP_BYTES`, 4 MB) and, on the
direct path, a window of stored bytes per dataset (:data:`_READ_AHEAD`, 8 MB), plus the compact
tables, whatever the file size.

Everything per step is numpy over a whole block (no Python loop over steps or episodes); the
Python loop is over blocks and histories (and, on the direct path, chunks: a block's
plain-deflate chunks are read as stored and inflated with libdeflate, ~2.5x as fast as HDF5's
pipeline with the system zlib, or with zlib-ng where a chunk is long runs; see
:mod:`curate.io.xland_chunks`). A block's observations and actions are checked as soon as it is read
(:meth:`HistoryScan.arrays`, while they are in the cache); its episodes are checked for a group
of the task's histories at once (:func:`episodes_of`), so numpy's per-call overhead is paid per
task block rather than per history.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import h5py
import numpy as np
import xxhash

from curate.io.xland_chunks import (
    ChunkBuffer,
    ShortChunk,
    direct_chunk_rows,
    direct_default,
)
from curate.io.xland_layout import (
    DATASETS,
    EPISODE_KINDS,
    MAX_STATE_VALUE,
    NUM_ACTIONS,
    REWARD_SLOPE,
    STEP_KINDS,
    max_steps_of,
)

#: Bytes of rewards and dones (per step: 3) read for a group of a task's histories before their
#: episodes are checked together (:func:`episodes_of`): 4 MB, 45 histories of 30k steps.
_GROUP_BYTES = 1 << 22
#: The datasets read a row per history of a group (their positions in ``DATASETS``).
_REWARDS, _DONES = DATASETS.index("rewards"), DATASETS.index("dones")
#: The dataset read as its chunks, not a block (:meth:`ChunkBuffer.parts`): the observations.
_STATES = DATASETS.index("states")
_GROUPED = (_REWARDS, _DONES)

#: Broken episodes kept per history and kind (their total count is always kept).
EXAMPLES = 10
#: Steps read per block: a multiple of the published chunk length (4096), ~3.8 MB of arrays.
BLOCK_STEPS = 1 << 17

#: Blocks are whole multiples of this many steps as well as of the chunk (the published chunk
#: length, and the default export segment).
SEGMENT_STEPS = 4096

_INT_COLUMNS = (
    "group_index",
    "history",
    "steps",
    "steps_read",
    "episodes",
    "successes",
    "tail",
    "error_start",
    "error_end",
    *[f"{k}_{p}" for k in EPISODE_KINDS for p in ("n",)],
    *[f"{k}_{p}" for k in STEP_KINDS for p in ("n", "first", "last")],
    "state_value",
    "action_value",
    "expert_value",
    *[f"action_{a}" for a in range(NUM_ACTIONS)],
    *[f"expert_{a}" for a in range(NUM_ACTIONS)],
)
_FLOAT_COLUMNS = ("return_sum", "first_tenth", "last_tenth", "final_return")
_STR_COLUMNS = ("group", "digest", "error", "error_field")
_EPISODE_INT = ("group_index", "history", "start", "end", "length", "implied", "done")
_EPISODE_FLOAT = ("reward",)


def _empty_columns() -> dict[str, list[Any]]:
    return {c: [] for c in (*_STR_COLUMNS, *_INT_COLUMNS, *_FLOAT_COLUMNS)}


def _attr(group: h5py.Group, name: str) -> Any:
    try:
        value = group.attrs.get(name)
    except (OSError, TypeError, ValueError):  # an attribute of a type h5py cannot read
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _hashers() -> list[Any]:
    """One streaming XXH3-128 per dataset of a history (see :meth:`HistoryScan.block`)."""
    return [xxhash.xxh3_128() for _ in DATASETS]


def _count_into(counts: np.ndarray, values: np.ndarray) -> None:
    """Add the histogram of a block's action values to ``counts`` (256 bins).

    Why not always ``np.bincount``: it widens the block to 64-bit integers first, per block and
    per dataset. Published actions are uint8 below :data:`NUM_ACTIONS`: then a count per value
    (one comparison each, no widening; the last value's count is what the others leave) gives
    the same bins; any other block is counted by ``bincount``.
    """
    if values.dtype == np.uint8 and values.size and int(values.max()) < NUM_ACTIONS:
        seen = 0
        for v in range(NUM_ACTIONS - 1):
            k = int(np.count_nonzero(values == v))
            counts[v] += k
            seen += k
        counts[NUM_ACTIONS - 1] += values.size - seen  # the rest (all below NUM_ACTIONS)
    else:
        counts += np.bincount(values, minlength=counts.size)


def _at(n: int, steps: np.ndarray) -> np.ndarray:
    """A block's boolean mask that is true at ``steps``."""
    mask = np.zeros(n, dtype=bool)
    mask[steps] = True
    return mask


class HistoryScan:
    """Running state of one history's scan across its blocks."""

    def __init__(self, steps: int, max_steps: int | None) -> None:
        self.steps = steps
        self.max_steps = max_steps
        self.read: int = 0
        self.ep_start: int = 0  # first step of the open episode (history coordinates)
        self.carry: float = 0.0  # return of the open episode so far
        self.returns: list[np.ndarray] = []
        self.lengths: np.ndarray = np.zeros(0, dtype=np.int64)
        self.successes: int = 0
        self.flagged: dict[str, int] = {k: 0 for k in EPISODE_KINDS}
        self.examples: list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]] = []
        self.counts: dict[str, list[int]] = {k: [0, -1, -1] for k in STEP_KINDS}
        self.state_value: int = -1
        #: the first out-of-range action and expert action (-1: none), for the findings' text
        self.action_value: int = -1
        self.expert_value: int = -1
        self.actions: np.ndarray = np.zeros(256, dtype=np.int64)
        self.experts: np.ndarray = np.zeros(256, dtype=np.int64)
        #: one streaming hash per dataset, each fed its dataset's bytes in step order
        self.hashers: list[Any] = _hashers()
        self.error = ""
        #: the dataset whose block could not be read
        self.error_field = ""
        self.error_span: tuple[int, int] = (-1, -1)

    def steps_where(self, kind: str, mask: np.ndarray | np.bool_, offset: int) -> np.ndarray | None:
        """Count ``mask``'s steps under ``kind`` (first and last kept); the hits, or None."""
        if not mask.any():
            return None
        hits = np.flatnonzero(mask)
        c = self.counts[kind]
        if c[0] == 0:
            c[1] = int(hits[0]) + offset
        c[0] += int(hits.size)
        c[2] = int(hits[-1]) + offset
        return hits

    def block(
        self,
        a: int,
        states: np.ndarray | Sequence[np.ndarray],
        actions: np.ndarray,
        rewards: np.ndarray,
        dones: np.ndarray,
        experts: np.ndarray,
    ) -> None:
        """Scan steps ``[a, a + n)`` of the history (``n``: the arrays' length)."""
        self.arrays(a, states, actions, rewards, dones, experts)
        self.episodes(a, rewards, dones)

    def arrays(
        self,
        a: int,
        states: np.ndarray | Sequence[np.ndarray],
        actions: np.ndarray,
        rewards: np.ndarray,
        dones: np.ndarray,
        experts: np.ndarray,
    ) -> None:
        """The checks of a block that need the observations and actions: the digest, the
        action histograms, the out-of-range counts (run while the block is in the cache: see
        :func:`episodes_of` for the rest). ``states`` is the block's observations, whole or as
        consecutive parts (the direct path's inflated chunks, checked where they were inflated
        instead of copied into a block first: they are 6/7 of a step's bytes)."""
        n = actions.shape[0]
        parts = [states] if isinstance(states, np.ndarray) else states
        # the content digest: XXH3-128 streams at several GB/s (SHA-1 managed ~0.6 GB/s, as
        # much time as decompressing the observations); one hasher per dataset, so the digest
        # depends on the bytes only, never on where blocks or chunks begin. It finds copies of
        # histories (RL40x), which needs no cryptographic strength.
        hashers = self.hashers
        for part in parts:
            hashers[0].update(np.ascontiguousarray(part).data)
        for hasher, arr in zip(hashers[1:], (actions, rewards, dones, experts), strict=True):
            hasher.update(np.ascontiguousarray(arr).data)
        # actions and expert actions: histograms (out-of-range values counted past 5)
        _count_into(self.actions, actions)
        _count_into(self.experts, experts)
        if self.actions[NUM_ACTIONS:].any():
            hits = self.steps_where("action_range", actions >= NUM_ACTIONS, a)
            if hits is not None and self.action_value < 0:
                self.action_value = int(actions[hits[0]])
        if self.experts[NUM_ACTIONS:].any():
            hits = self.steps_where("expert_range", experts >= NUM_ACTIONS, a)
            if hits is not None and self.expert_value < 0:
                self.expert_value = int(experts[hits[0]])
        # observations: every cell must decode to a tile < 13 (colour is always < 12)
        if n and max(int(p.max()) for p in parts if p.size) > MAX_STATE_VALUE:
            whole = parts[0] if len(parts) == 1 else np.concatenate(parts)
            bad = (whole > MAX_STATE_VALUE).reshape(n, -1)
            hits = self.steps_where("state_range", bad.any(axis=1), a)
            if hits is not None and self.state_value < 0:
                row = whole.reshape(n, -1)[hits[0]]
                self.state_value = int(row[row > MAX_STATE_VALUE][0])

    def episodes(self, a: int, rewards: np.ndarray, dones: np.ndarray) -> None:
        """The rewards' checks and the episodes of steps ``[a, a + n)``."""
        n = dones.shape[0]
        # rewards: checked on float16's bits, widened only where paid. numpy emulates float16
        # arithmetic (widening a block cost as much as every other check together), while the
        # bit tests are integer ops: magnitude 0 is ±0, >= 0x7C00 is inf/NaN, > 0x3C00 is > 1.
        r, paid = self._rewards(a, rewards, dones)
        # episodes: a done at step t ends the episode that started after the previous done;
        # an episode's return is the sum of the paid rewards up to its done (bincount by the
        # episode each paid step falls in; the last bin is the still-open episode)
        ends = np.flatnonzero(dones)
        episode_of = np.searchsorted(ends, paid)
        sums = np.bincount(episode_of, weights=r, minlength=ends.size + 1).astype(
            np.float64, copy=False
        )  # (an empty bincount is integer, whatever its weights)
        if ends.size:
            starts = np.empty_like(ends)
            starts[0] = self.ep_start - a
            starts[1:] = ends[:-1] + 1
            returns = sums[: ends.size].copy()
            returns[0] += self.carry
            lengths = ends - starts + 1
            end_raw = rewards[ends].astype(np.float64)  # NaN stays NaN in the examples
            end_rewards = np.where(np.isfinite(end_raw), end_raw, 0.0)
            self.returns.append(returns)
            self.lengths = np.concatenate((self.lengths, lengths))
            self.successes += int((end_rewards > 0).sum())
            self._flag(starts + a, lengths, end_raw, done=True)
            self.ep_start = int(ends[-1]) + 1 + a
            self.carry = float(sums[ends.size])
        else:
            self.carry += float(sums[0])
        self.read = a + n

    def _rewards(
        self, a: int, rewards: np.ndarray, dones: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Count non-finite, out-of-range and off-done rewards; the paid steps' rewards (as
        float64, a non-finite one as 0) and the paid steps."""
        if rewards.dtype != np.float16:  # not the published dtype (RL104 says so): any float
            return self._rewards_any(a, rewards, dones)
        bits = np.ascontiguousarray(rewards).view(np.uint16)
        mag = bits & np.uint16(0x7FFF)
        # few: rewards are paid on goal-reaching steps only (a boolean mask's nonzero is ~5x
        # faster than an integer array's)
        paid = np.flatnonzero(mag != 0)
        if not paid.size:
            return np.zeros(0), paid
        pm = mag[paid]
        nonfinite = pm >= 0x7C00
        if nonfinite.any():
            self.steps_where("reward_nonfinite", _at(bits.size, paid[nonfinite]), a)
            paid, pm = paid[~nonfinite], pm[~nonfinite]  # counted as 0 from here on
        negative = (bits[paid] & np.uint16(0x8000)) != 0
        out_of_range = negative | (pm > 0x3C00)
        if out_of_range.any():
            self.steps_where("reward_range", _at(bits.size, paid[out_of_range]), a)
        r = rewards[paid].astype(np.float64)
        off = ~negative & (dones[paid] == 0)
        if off.any():
            self.steps_where("reward_off_done", _at(bits.size, paid[off]), a)
        return r, paid

    def _rewards_any(
        self, a: int, rewards: np.ndarray, dones: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_rewards` for rewards of another dtype, with float arithmetic."""
        rf = np.asarray(rewards, dtype=np.float64)
        finite = np.isfinite(rf)
        if not finite.all():
            self.steps_where("reward_nonfinite", ~finite, a)
            rf = np.where(finite, rf, 0.0)
        self.steps_where("reward_range", (rf < 0) | (rf > 1), a)
        paid = np.flatnonzero(rf)
        r = rf[paid]
        off = (r > 0) & (dones[paid] == 0)
        if off.any():
            self.steps_where("reward_off_done", _at(rf.size, paid[off]), a)
        return r, paid

    def _flag(
        self, starts: np.ndarray, lengths: np.ndarray, rewards: np.ndarray, *, done: bool
    ) -> None:
        if self.max_steps is None:
            return
        implied, kinds = _broken(self.max_steps, lengths, rewards, done=done)
        for kind, mask in kinds.items():
            if mask.any():
                self._keep(kind, np.flatnonzero(mask), starts, lengths, rewards, implied, done)

    def _keep(
        self,
        kind: str,
        idx: np.ndarray,
        starts: np.ndarray,
        lengths: np.ndarray,
        rewards: np.ndarray,
        implied: np.ndarray,
        done: bool,
    ) -> None:
        """Count the episodes ``idx`` (of the arrays) under ``kind``; keep the first as
        examples, up to :data:`EXAMPLES` per kind."""
        self.flagged[kind] += int(idx.size)
        # episodes kept so far (each entry holds a block's worth of them)
        have = sum(int(e[1].size) for e in self.examples if e[0] == kind)
        take = idx[: max(0, EXAMPLES - have)]
        if take.size:
            self.examples.append(
                (kind, starts[take], lengths[take], rewards[take], implied[take], done)
            )

    def finish(self) -> None:
        tail = self.read - self.ep_start
        # the open episode can only be too long (what _flag checks of an episode without its
        # done): tested here first, as most histories' is not, without _flag's array work
        m = self.max_steps
        if tail > 0 and not self.error and m is not None and tail > m:
            self._flag(
                np.array([self.ep_start]),
                np.array([tail]),
                np.array([np.nan]),
                done=False,
            )

    def hexdigest(self) -> str:
        """The history's content digest: XXH3-128 over the datasets' digests and the steps
        read (a history cut short by an unreadable block is not its full self)."""
        whole = xxhash.xxh3_128()
        for hasher in self.hashers:
            whole.update(hasher.digest())
        whole.update(np.int64(self.read).tobytes())
        return whole.hexdigest()

    def summary(self) -> dict[str, Any]:
        returns = np.concatenate(self.returns) if self.returns else np.zeros(0)
        n = int(returns.size)
        k = n // 10
        row: dict[str, Any] = {
            "steps": self.steps,
            "steps_read": self.read,
            "episodes": n,
            "successes": self.successes,
            "tail": self.read - self.ep_start,
            "return_sum": float(returns.sum()),
            # sum / count is what ndarray.mean computes (the same pairwise sum, one division),
            # without its Python-level wrapper
            "first_tenth": float(returns[:k].sum()) / k if k else float("nan"),
            "last_tenth": float(returns[-k:].sum()) / k if k else float("nan"),
            "final_return": float(returns[-max(k, 1) :].sum()) / max(k, 1) if n else float("nan"),
            "digest": self.hexdigest(),
            "error": self.error,
            "error_field": self.error_field,
            "error_start": self.error_span[0],
            "error_end": self.error_span[1],
            "state_value": self.state_value,
            "action_value": self.action_value,
            "expert_value": self.expert_value,
        }
        for kind in EPISODE_KINDS:
            row[f"{kind}_n"] = self.flagged[kind]
        for kind, (count, first, last) in self.counts.items():
            row[f"{kind}_n"], row[f"{kind}_first"], row[f"{kind}_last"] = count, first, last
        for a in range(NUM_ACTIONS):
            row[f"action_{a}"] = int(self.actions[a])
            row[f"expert_{a}"] = int(self.experts[a])
        return row


def _broken(
    m: int, lengths: np.ndarray, rewards: np.ndarray, *, done: bool
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The length each episode's reward implies (-1: none), and per kind of broken episode the
    mask of the episodes of that kind (in :data:`EPISODE_KINDS`' order)."""
    with np.errstate(invalid="ignore"):
        implied = np.rint((1.0 - rewards) * m / REWARD_SLOPE)
        implied = np.where(np.isfinite(implied), implied, -1).astype(np.int64)
        kinds = {"too-long": lengths > m}
        if done:
            # a non-finite reward is RL205's; it implies no length (NaN > 0 is already false,
            # +inf is not)
            kinds["reward-length"] = (rewards > 0) & np.isfinite(rewards) & (implied != lengths)
            kinds["zero-reward-early"] = (rewards == 0) & (lengths < m)
    return implied, kinds


def episodes_of(
    scans: Sequence[HistoryScan], a: int, rewards: np.ndarray, dones: np.ndarray
) -> None:
    """:meth:`HistoryScan.episodes` for steps ``[a, a + n)`` of several histories of one task
    at once: ``rewards`` and ``dones`` are ``(len(scans), n)``, a row per history.

    Why: a history's episode checks are some 60 numpy calls on small arrays (the dones, the
    paid steps, the episodes), ~0.15 ms per block in numpy's per-call overhead, paid per
    history; here they are paid once per task block, and what is left per history is a few
    Python assignments. Done for float16 rewards all paid at a done, finite, in [0, 1], no -0
    (the published data; then each episode's return is its done step's reward, no sum needed);
    any other block has each history scanned by :meth:`HistoryScan.episodes`, which counts
    what is wrong where. The results are the same either way (``tests/test_icrl_scan.py``).
    """
    if not scans:
        return
    n = dones.shape[1]
    if len(scans) == 1 or rewards.dtype != np.float16:
        _each_history(scans, a, rewards, dones)
        return
    bits = np.ascontiguousarray(rewards).reshape(-1).view(np.uint16)
    ends = np.flatnonzero(dones.reshape(-1))
    at_ends = bits[ends]
    # every reward that is not +0 is at a done (counting them is one pass over the rewards,
    # without the temporaries of finding them), and none is above 1, inf, NaN or negative
    # (the sign bit: -0 included, which the slow path tells from +0)
    if np.count_nonzero(bits) != np.count_nonzero(at_ends) or (
        at_ends.size and int(at_ends.max()) > 0x3C00
    ):
        _each_history(scans, a, rewards, dones)
        return
    row = ends // n
    local = ends - row * n
    first = np.ones(ends.size, dtype=bool)
    first[1:] = row[1:] != row[:-1]
    ep_start = np.array([s.ep_start for s in scans], dtype=np.int64)
    carry = np.array([s.carry for s in scans], dtype=np.float64)
    starts = np.empty_like(local)
    starts[1:] = local[:-1] + 1
    starts[first] = ep_start[row[first]] - a
    lengths = local - starts + 1
    end_raw = at_ends.view(np.float16).astype(np.float64)
    # an episode's return: its done step's reward (+0 if not paid), plus the return carried
    # into the block for a history's first episode in it
    returns = end_raw.copy()
    returns[first] += carry[row[first]]
    wins = np.bincount(row[end_raw > 0], minlength=len(scans))
    cuts = np.searchsorted(row, np.arange(len(scans) + 1)).tolist()
    last = local[np.flatnonzero(np.append(first[1:], True))].tolist() if ends.size else []
    k = 0
    for i, scan in enumerate(scans):
        c0, c1 = cuts[i], cuts[i + 1]
        if c1 > c0:
            scan.returns.append(returns[c0:c1])
            scan.lengths = np.concatenate((scan.lengths, lengths[c0:c1]))
            scan.successes += int(wins[i])
            scan.ep_start = last[k] + 1 + a
            scan.carry = 0.0  # nothing is paid after a history's last done in the block
            k += 1
        # (a history with no done in the block keeps its carry: nothing was paid off a done)
        scan.read = a + n
    m = scans[0].max_steps
    if m is None or not ends.size:
        return
    hist_starts = starts + a
    implied, kinds = _broken(m, lengths, end_raw, done=True)
    for kind, mask in kinds.items():
        if not mask.any():
            continue
        idx = np.flatnonzero(mask)
        owner = row[idx]
        for i in np.unique(owner).tolist():  # the histories with such episodes (rare)
            c0, c1 = cuts[i], cuts[i + 1]
            mine = idx[owner == i] - c0
            scans[i]._keep(
                kind,
                mine,
                hist_starts[c0:c1],
                lengths[c0:c1],
                end_raw[c0:c1],
                implied[c0:c1],
                True,
            )


def _each_history(
    scans: Sequence[HistoryScan], a: int, rewards: np.ndarray, dones: np.ndarray
) -> None:
    """:func:`episodes_of`'s general path: each history's episodes on its own."""
    for i, scan in enumerate(scans):
        scan.episodes(a, rewards[i], dones[i])


def block_edges(steps: int, chunk: int, block_steps: int) -> list[tuple[int, int]]:
    """Read blocks: whole chunks (a chunk is decompressed once), and whole segments of
    :data:`SEGMENT_STEPS`."""
    unit = math.lcm(chunk, SEGMENT_STEPS)
    size = max(unit, block_steps - block_steps % unit)
    return [(a, min(a + size, steps)) for a in range(0, steps, size)]


def _read_block(
    ds: list[h5py.Dataset], bufs: list[ChunkBuffer], h: int, a: int, b: int
) -> tuple[list[Any] | None, tuple[str, Exception] | None]:
    """Steps ``[a, b)`` of history ``h`` of every dataset (the observations as parts, see
    :meth:`ChunkBuffer.parts`), or the first that cannot be read (its name and the exception)."""
    arrays: list[Any] = []
    for i, (dname, d, buf) in enumerate(zip(DATASETS, ds, bufs, strict=True)):
        try:
            arrays.append(buf.parts(d, h, a, b) if i == _STATES else buf.read(d, h, a, b))
        except (OSError, ValueError, RuntimeError) as e:
            return None, (dname, e)
    return arrays, None


def scan_tasks(
    path: str,
    groups: Sequence[str],
    group_indices: Sequence[int],
    *,
    block_steps: int = BLOCK_STEPS,
    direct: bool | None = None,
) -> dict[str, Any]:
    """Scan the task ``groups`` of the HDF5 file at ``path``; see the module docstring.

    ``group_indices`` are the groups' positions in the file's metadata table (carried into every
    row so the caller can join without comparing names). Each group must have the five datasets
    with one ``(H, L)`` (the reader checks that from metadata before scanning). A block that
    cannot be read (a corrupt chunk) ends its history's scan and is reported in the history's
    ``error`` columns instead of raising: the rest of the file is still audited.

    ``direct`` (default: :func:`direct_default`) reads plain-deflate chunks as stored bytes and
    inflates them outside HDF5 (:mod:`curate.io.xland_chunks`); the outputs are the same either
    way.

    Returns ``{"histories": columns, "episodes": columns, "lengths": counts}`` of plain lists
    and numpy arrays (no polars: a worker process need not import it).
    """
    if direct is None:
        direct = direct_default()
    hist = _empty_columns()
    eps: dict[str, list[Any]] = {c: [] for c in (*_EPISODE_INT, *_EPISODE_FLOAT, "kind")}
    lengths = np.zeros(1, dtype=np.int64)
    with h5py.File(path, "r") as f, open(path, "rb") as raw:
        for name, gi in zip(groups, group_indices, strict=True):
            grp = f[name]
            max_steps = max_steps_of(_attr(grp, "env-id"))
            ds = [grp[d] for d in DATASETS]
            n_hist, steps = ds[1].shape[:2]
            chunk = ds[1].chunks[1] if ds[1].chunks else 4096
            edges = block_edges(steps, chunk, block_steps)
            size = max((b - a for a, b in edges), default=0)
            # rewards and dones: a row per history of a group of them (their episodes are
            # checked for the whole group at once, :func:`episodes_of`); the other datasets:
            # one history's block, checked as soon as it is read, while it is in the cache
            per_step = sum(ds[i].dtype.itemsize for i in _GROUPED)
            width = max(1, min(n_hist, _GROUP_BYTES // max(1, size * per_step)))
            bufs = [ChunkBuffer(d, size, direct=direct) for d in ds]  # (grouped ones: unused)
            for d, buf in zip(ds, bufs, strict=True):
                # several blocks per history read across a group's histories before the next
                # block: not the file's order, so a window would be read again for most blocks
                buf.locate(d, raw.fileno(), history_by_history=len(edges) == 1 or width == 1)
            rows = {
                i: np.empty((width, size, *ds[i].shape[2:]), dtype=ds[i].dtype) for i in _GROUPED
            }
            slots = [
                [buf.into(rows[i][j]) if i in rows else buf for i, buf in enumerate(bufs)]
                for j in range(width)
            ]
            for h0 in range(0, n_hist, width):
                scans = [HistoryScan(steps, max_steps) for _ in range(min(width, n_hist - h0))]
                live = list(range(len(scans)))
                for a, b in edges:
                    whole = []  # the histories whose block was read whole: episodes together
                    for j in live:
                        h, state = h0 + j, scans[j]
                        end, failed = b, None
                        while True:
                            arrays, failure = _read_block(ds, slots[j], h, a, end)
                            if failure is None:
                                break
                            # a short chunk: its own steps; HDF5's error: the block read
                            failed = (*failure, getattr(failure[1], "span", (a, end)))
                            arrays = None
                            if not a < failed[2][0] < end:
                                break
                            end = failed[2][0]  # the steps before a short chunk are scanned
                        if arrays is not None and failed is None:
                            state.arrays(a, *arrays)
                            whole.append(j)
                        elif arrays is not None:
                            state.block(a, *arrays)
                        if failed is not None:
                            dname, e, span = failed
                            state.error = " ".join(str(e).split()) or type(e).__name__
                            state.error_field = dname
                            state.error_span = span
                    n = b - a
                    if len(whole) == len(scans):  # all of them (as usual): the rows as they are
                        r, d = rows[_REWARDS][: len(scans), :n], rows[_DONES][: len(scans), :n]
                    else:
                        r, d = rows[_REWARDS][whole, :n], rows[_DONES][whole, :n]
                    episodes_of([scans[j] for j in whole], a, r, d)
                    live = [j for j in live if not scans[j].error]
                for j, state in enumerate(scans):
                    h = h0 + j
                    state.finish()
                    row = state.summary()
                    row.update(group=name, group_index=gi, history=h)
                    for c in hist:
                        hist[c].append(row[c])
                    if state.lengths.size:
                        counts = np.bincount(state.lengths)
                        if counts.size > lengths.size:
                            counts[: lengths.size] += lengths
                            lengths = counts
                        else:
                            lengths[: counts.size] += counts
                    for kind, starts, lens, rews, implied, done in state.examples:
                        k = len(starts)
                        eps["group_index"] += [gi] * k
                        eps["history"] += [h] * k
                        eps["start"] += starts.tolist()
                        eps["end"] += (starts + lens).tolist()
                        eps["length"] += lens.tolist()
                        eps["implied"] += implied.tolist()
                        eps["done"] += [int(done)] * k
                        eps["reward"] += rews.tolist()
                        eps["kind"] += [kind] * k
    return {"histories": hist, "episodes": eps, "lengths": lengths}


def merge(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Outputs of :func:`scan_tasks` over disjoint group ranges, as one output (in order)."""
    hist = _empty_columns()
    eps: dict[str, list[Any]] = {c: [] for c in (*_EPISODE_INT, *_EPISODE_FLOAT, "kind")}
    size = max((p["lengths"].size for p in parts), default=1)
    lengths = np.zeros(size, dtype=np.int64)
    for p in parts:
        for c in hist:
            hist[c] += p["histories"][c]
        for c in eps:
            eps[c] += p["episodes"][c]
        lengths[: p["lengths"].size] += p["lengths"]
    return {"histories": hist, "episodes": eps, "lengths": lengths}


__all__ = [
    "BLOCK_STEPS",
    "EPISODE_KINDS",
    "EXAMPLES",
    "STEP_KINDS",
    "HistoryScan",
    "ShortChunk",
    "block_edges",
    "direct_chunk_rows",
    "direct_default",
    "merge",
    "scan_tasks",
]
