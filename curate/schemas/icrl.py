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
and ``max_steps`` follows from the grid size in ``env-id``. The formulas live in one place,
:mod:`curate.io.xland_layout` (no dependencies, so the scan's worker processes import it
without pydantic), and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from curate.core.errors import UsageError, arg
from curate.core.options import FamilyOptions, option
from curate.io.xland_layout import (
    ATTRS,
    CHUNK_STEPS,
    DATASETS,
    DROPPED_ATTR,
    MAX_STATE_VALUE,
    NEAR_CONSTANT_SHARE,
    NUM_ACTIONS,
    NUM_COLORS,
    NUM_TILES,
    PUBLISHED_BENCHMARKS,
    REWARD_SLOPE,
    VIEW,
    grid_of,
    implied_length,
    max_steps_of,
    reward_for_length,
)


class EnvSpec(BaseModel):
    """An XLand-MiniGrid environment as its id names it, and the step limit that follows."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)

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
    grid = grid_of(value)
    if grid is None:
        return None
    return EnvSpec(env_id=value, rooms=grid[0], height=grid[1], width=grid[2])


class DatasetSpec(BaseModel):
    """What one dataset of a task group must be: dtype and the shape after ``(H, L)``."""

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)

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

    model_config: ClassVar[ConfigDict] = ConfigDict(frozen=True)

    group: str
    env_id: str
    benchmark_id: str
    ruleset_id: int

    @property
    def env(self) -> EnvSpec | None:
        return parse_env_id(self.env_id)


#: Export units: one row per episode, or per fixed-length segment of a history.
Unit = Literal["episode", "segment"]
#: The default segment length: the published chunk length (one chunk of each dataset per row).
SEGMENT_STEPS = CHUNK_STEPS
_SAMPLE_COMMANDS = ("validate", "audit", "export")


#: The shared table of the family's one pass over the arrays: rules that read the arrays
#: declare it (``needs=(SCAN,)``); ``--metadata-only`` makes it unavailable.
SCAN = "scan"


class IcrlOptions(FamilyOptions):
    """Options of the in-context RL family: how much of the file is read, how, and how it is
    exported.

    Which command takes which (and why): a sample (``--tasks``/``--fraction``) is an audit's or
    an export's (a small published sample of a huge file), never a fix's — a fixed file must
    hold every task, each one checked. ``--metadata-only`` checks nothing in the arrays, so
    nothing may be written from it: audit and validate only. ``--unit`` and
    ``--segment-length`` shape the exported rows.
    """

    at_least_one: ClassVar[frozenset[str]] = frozenset({"tasks", "workers", "segment_length"})

    tasks: int | None = option(
        None,
        help="Scan only N task groups, chosen at random with --seed (metadata of every group is "
        "still checked; export writes only those groups).",
        commands=_SAMPLE_COMMANDS,
    )
    fraction: float | None = option(
        None,
        help="Scan only this fraction (0 < F <= 1) of the task groups, chosen with --seed.",
        commands=_SAMPLE_COMMANDS,
    )
    seed: int = option(
        0, help="Seed of the --tasks / --fraction sample.", commands=_SAMPLE_COMMANDS
    )
    metadata_only: bool = option(
        False,
        help="Check names, attributes, shapes, dtypes and chunking only; read no array data.",
        commands=("validate", "audit"),
    )
    workers: int | None = option(
        None,
        help="Processes scanning task groups in parallel (default: the available cores, at most "
        "8; small files are scanned in-process).",
    )
    unit: Unit = option(
        "episode",
        help="Export one row per episode (the last, unfinished one of a history too, with "
        "done false) or per fixed-length segment of a history (--segment-length).",
        commands=("export",),
    )
    segment_length: int | None = option(
        None,
        help="Steps per exported segment with --unit segment (default 4096, the published "
        "chunk length; the last segment of a history may be shorter).",
        commands=("export",),
    )

    @field_validator("fraction")
    @classmethod
    def _fraction(cls, v: float | None) -> float | None:
        if v is not None and not 0 < v <= 1:
            raise ValueError(f"must be in (0, 1] (got {v})")
        return v

    def unavailable_tables(self) -> frozenset[str]:
        """With ``--metadata-only`` no array is read: the rules that need the scan are not
        run (the report's ``rules_run`` says so), rather than run on nothing and found clean."""
        return frozenset({SCAN}) if self.metadata_only else frozenset()

    @model_validator(mode="after")
    def _one_sample(self) -> IcrlOptions:
        if self.tasks is not None and self.fraction is not None:
            raise ValueError(f"give {arg('--tasks')} or {arg('--fraction')}, not both")
        # a length given for episodes would be silently ignored: the user meant segments (no
        # default value, so that even the default length, given, is seen as given)
        if self.segment_length is not None and self.unit != "segment":
            raise ValueError(
                f"{arg('--segment-length')} needs {arg('--unit', 'segment')} (episodes have "
                "their own length)"
            )
        return self

    def check_command(self, command: str, paths: Sequence[str]) -> None:
        """Export and fix read one file, all of it checked: ``--metadata-only`` checks no array
        (nothing may be published from it), and a fixed file must hold every task, so fix takes
        no sample. Refused here, before the file is read."""
        if len(paths) != 1:
            raise UsageError(
                f"icrl {command} reads one HDF5 file at a time (got {len(paths)}); "
                "audit several together to compare them (RL404)"
            )
        if self.metadata_only:
            raise UsageError(
                f"{arg('--metadata-only', True)} checks no array data; icrl {command} writes "
                "only histories "
                "the full audit found valid"
            )
        if command == "fix" and self.sampled:
            raise UsageError(
                f"{arg('--tasks')}/{arg('--fraction')}: icrl fix writes every task of the file, "
                "each one checked; "
                "a sample is for audit and export"
            )

    @property
    def segment_steps(self) -> int:
        """Steps per exported segment: the length given, else the published chunk length."""
        return self.segment_length or SEGMENT_STEPS

    @property
    def sampled(self) -> bool:
        return self.tasks is not None or self.fraction is not None

    def public(self, command: str | None = None) -> dict[str, Any]:
        """The options that shaped the run: a value left at its default changes nothing and is
        not shown (``metadata_only=False``), ``seed`` only with a sample it chose, and the
        segment length (default or not) with segments."""
        shown = super().public(command)
        for name, info in type(self).model_fields.items():
            if name in shown and shown[name] == info.get_default() and name != "seed":
                del shown[name]
        if not self.sampled:
            shown.pop("seed", None)
        if self.unit == "segment" and "unit" in shown:
            shown["segment_length"] = self.segment_steps
        else:
            shown.pop("segment_length", None)
        return shown


__all__ = [
    "ATTRS",
    "CHUNK_STEPS",
    "DATASETS",
    "DATASET_SPECS",
    "DROPPED_ATTR",
    "MAX_STATE_VALUE",
    "NEAR_CONSTANT_SHARE",
    "NUM_ACTIONS",
    "NUM_COLORS",
    "NUM_TILES",
    "PUBLISHED_BENCHMARKS",
    "REWARD_SLOPE",
    "SEGMENT_STEPS",
    "VIEW",
    "DatasetSpec",
    "EnvSpec",
    "IcrlOptions",
    "TaskSpec",
    "implied_length",
    "max_steps_of",
    "parse_env_id",
    "reward_for_length",
]
