"""The XLand-100B layout's constants and the environment formulas, with no dependency at all.

Why apart from :mod:`curate.schemas.icrl` (the Pydantic models and the family's options): the
scan (:mod:`curate.io.xland_scan`) runs in worker processes that should import numpy and h5py only;
pydantic and curate's option machinery would add most of a second to every worker's start. The
models module re-exports everything here, so the rest of curate keeps one place to import from.
"""

from __future__ import annotations

import math
import re

#: The five datasets of a task group, in the order the scan reads them.
DATASETS = ("states", "actions", "rewards", "dones", "expert_actions")
#: The three attributes of a task group.
ATTRS = ("env-id", "benchmark-id", "ruleset-id")
#: Actions of XLand-MiniGrid: forward, turn left, turn right, pick up, put down, toggle.
NUM_ACTIONS = 6
#: The observation packs ``tile * NUM_COLORS + colour``; 13 tile kinds × 12 colours.
NUM_TILES = 13
NUM_COLORS = 12
#: The largest valid packed cell value (tile 12, colour 11).
MAX_STATE_VALUE = NUM_TILES * NUM_COLORS - 1
VIEW = (5, 5)
#: The published chunk length along the step axis.
CHUNK_STEPS = 4096
#: XLand-MiniGrid's published benchmarks (rulesets sampled for the datasets come from these).
PUBLISHED_BENCHMARKS = ("trivial-1m", "small-1m", "medium-1m", "high-1m", "high-3m")
#: The reward's slope: ``1 - REWARD_SLOPE * length / max_steps``.
REWARD_SLOPE = 0.9
#: Share of a history's steps one expert action may take before RL303 calls it near-constant.
NEAR_CONSTANT_SHARE = 0.95

ENV_ID = re.compile(r"^XLand-MiniGrid-R(?P<rooms>\d+)-(?P<h>\d+)x(?P<w>\d+)$")


def grid_of(value: object) -> tuple[int, int, int] | None:
    """``XLand-MiniGrid-R1-9x9`` → ``(rooms, height, width)``; anything else → None."""
    if not isinstance(value, str):
        return None
    m = ENV_ID.match(value.strip())
    if m is None or int(m["h"]) < 3 or int(m["w"]) < 3:
        return None
    return int(m["rooms"]), int(m["h"]), int(m["w"])


def max_steps_of(env_id: object) -> int | None:
    """XLand-MiniGrid's default episode limit for ``env_id``: ``3 * height * width``."""
    grid = grid_of(env_id)
    return None if grid is None else 3 * grid[1] * grid[2]


def reward_for_length(length: int, max_steps: int) -> float:
    """The reward of an episode that reaches its goal on step ``length`` (1-based)."""
    return 1.0 - REWARD_SLOPE * length / max_steps


def implied_length(reward: float, max_steps: int) -> int:
    """The episode length a positive reward stands for (the inverse of :func:`reward_for_length`).

    Rewards are stored as float16 (about 3 significant digits); one step changes the reward by
    ``0.9 / max_steps`` (0.0037 on 9×9, 0.0018 on 13×13), more than a float16 step below 1, so
    rounding recovers the length exactly for every valid reward.
    """
    if not math.isfinite(reward):
        return -1
    return round((1.0 - reward) * max_steps / REWARD_SLOPE)


#: The group attribute ``curate fix`` writes when it drops histories from a group: their indices
#: in the input (RL106 counts them, so a fixed group's smaller H is not a defect).
DROPPED_ATTR = "curate-dropped-histories"

#: Kinds of broken episode the scan flags (the rules that report them: RL201-RL203). Here, with
#: no dependency, because the scan and the histories table's schema both name them.
EPISODE_KINDS = ("reward-length", "too-long", "zero-reward-early")
#: Kinds of out-of-range step the scan counts, each with first/last step (RL204-RL206, RL30x).
STEP_KINDS = (
    "reward_nonfinite",
    "reward_range",
    "reward_off_done",
    "action_range",
    "expert_range",
    "state_range",
)
