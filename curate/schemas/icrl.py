"""In-context RL learning histories in the XLand-100B HDF5 layout: file, task and dataset models.

The published layout (XLand-100B, XLand-Trivial-20B; dunnolab/xland-minigrid-datasets): the root
holds one group per task named ``"0"`` … ``"N-1"``; each group has three attributes — ``env-id``
(``XLand-MiniGrid-R1-9x9``), ``benchmark-id`` (``trivial-1m``), ``ruleset-id`` (an integer) — and
five datasets of ``H`` learning histories × ``L`` steps:

============== ======= ============== ==================================================
dataset        dtype   shape          meaning
============== ======= ============== ==================================================
states         uint8   (H, L, 5, 5)   5×5 egocentric view, each cell ``tile * 12 + colour``
actions        uint8   (H, L)         the action taken in ``states[t]``, 0..5
rewards        float16 (H, L)         reward of that action
dones          bool    (H, L)         the action ended the episode (auto-reset follows)
expert_actions uint8   (H, L)         the relabelling expert's action in ``states[t]``
============== ======= ============== ==================================================

stored in chunks of ``(1, 4096[, 5, 5])`` with gzip. The environment pays ``1 - 0.9 * L /
max_steps`` on the step that reaches the goal (``L``: the episode's length so far, 1 for the
first step) and 0 otherwise; ``max_steps`` is ``3 * height * width`` (243 on 9×9, 507 on 13×13),
and an episode that reaches it ends with a done and reward 0.

Why models parameterised by the environment: every numeric invariant the rules check (the
reward an episode of a given length must carry, the longest episode) follows from ``max_steps``,
and ``max_steps`` follows from the grid size in ``env-id``. The helpers here are the one place
those formulas live: the scan (:mod:`curate.families.icrl_scan`) uses them to flag episodes and
the rules' documentation describes them.
"""

from __future__ import annotations

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from curate.options import FamilyOptions, option

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

_ENV_ID = re.compile(r"^XLand-MiniGrid-R(?P<rooms>\d+)-(?P<h>\d+)x(?P<w>\d+)$")


class EnvSpec(BaseModel):
    """An XLand-MiniGrid environment as its id names it, and the step limit that follows."""

    model_config = ConfigDict(frozen=True)

    env_id: str
    rooms: int
    height: int
    width: int

    @property
    def max_steps(self) -> int:
        """XLand-MiniGrid's default episode limit, ``3 * height * width``."""
        return 3 * self.height * self.width


def parse_env_id(value: Any) -> EnvSpec | None:
    """``XLand-MiniGrid-R1-9x9`` → its spec; anything else (not a string, another env) → None."""
    if not isinstance(value, str):
        return None
    m = _ENV_ID.match(value.strip())
    if m is None or int(m["h"]) < 3 or int(m["w"]) < 3:
        return None
    return EnvSpec(env_id=value, rooms=int(m["rooms"]), height=int(m["h"]), width=int(m["w"]))


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


class DatasetSpec(BaseModel):
    """What one dataset of a task group must be: dtype and the shape after ``(H, L)``."""

    model_config = ConfigDict(frozen=True)

    name: str
    dtype: str
    trailing: tuple[int, ...] = ()

    @property
    def ndim(self) -> int:
        return 2 + len(self.trailing)

    def shape_text(self) -> str:
        return "(H, L" + "".join(f", {n}" for n in self.trailing) + ")"


DATASET_SPECS: dict[str, DatasetSpec] = {
    "states": DatasetSpec(name="states", dtype="uint8", trailing=VIEW),
    "actions": DatasetSpec(name="actions", dtype="uint8"),
    "rewards": DatasetSpec(name="rewards", dtype="float16"),
    "dones": DatasetSpec(name="dones", dtype="bool"),
    "expert_actions": DatasetSpec(name="expert_actions", dtype="uint8"),
}


class TaskSpec(BaseModel):
    """A task group's attributes as the layout wants them (``ruleset-id`` an integer)."""

    model_config = ConfigDict(frozen=True)

    group: str
    env_id: str
    benchmark_id: str
    ruleset_id: int

    @property
    def env(self) -> EnvSpec | None:
        return parse_env_id(self.env_id)


class IcrlOptions(FamilyOptions):
    """Options of the in-context RL family: how much of the file is read, and how."""

    tasks: int | None = option(
        None,
        help="Scan only N task groups, chosen at random with --seed (metadata of every group is "
        "still checked).",
    )
    fraction: float | None = option(
        None,
        help="Scan only this fraction (0 < F <= 1) of the task groups, chosen with --seed.",
    )
    seed: int = option(0, help="Seed of the --tasks / --fraction sample.")
    metadata_only: bool = option(
        False,
        help="Check names, attributes, shapes, dtypes and chunking only; read no array data.",
    )
    workers: int | None = option(
        None,
        help="Processes scanning task groups in parallel (default: the available cores, at most "
        "8; small files are scanned in-process).",
    )

    @field_validator("tasks", "workers")
    @classmethod
    def _positive(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError(f"must be at least 1 (got {v})")
        return v

    @field_validator("fraction")
    @classmethod
    def _fraction(cls, v: float | None) -> float | None:
        if v is not None and not 0 < v <= 1:
            raise ValueError(f"must be in (0, 1] (got {v})")
        return v

    @model_validator(mode="after")
    def _one_sample(self) -> IcrlOptions:
        if self.tasks is not None and self.fraction is not None:
            raise ValueError("give --tasks or --fraction, not both")
        return self


__all__ = [
    "ATTRS",
    "CHUNK_STEPS",
    "DATASETS",
    "DATASET_SPECS",
    "MAX_STATE_VALUE",
    "NEAR_CONSTANT_SHARE",
    "NUM_ACTIONS",
    "NUM_COLORS",
    "NUM_TILES",
    "PUBLISHED_BENCHMARKS",
    "REWARD_SLOPE",
    "DatasetSpec",
    "EnvSpec",
    "IcrlOptions",
    "TaskSpec",
    "implied_length",
    "parse_env_id",
    "reward_for_length",
]
