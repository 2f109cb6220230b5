"""RL2xx: episodes and rewards — reward/done agreement, the reward an episode's length implies,
the step limit, and histories that do not learn.

The invariants come from XLand-MiniGrid: an episode ends (``dones[t]``) when the agent reaches
the goal, paying ``1 - 0.9 * L / max_steps`` for an episode of ``L`` steps, or when it reaches
``max_steps`` (``3 * H * W`` for an H×W grid: 243 on 9×9, 507 on 13×13) with reward 0; every
other step pays 0. A history whose rewards and dones disagree, was shifted by a step, or was
cut and re-joined breaks one of them at a step the finding names.

The scan counts every broken episode of each history and keeps the first few
(:data:`curate.io.xland_scan.EXAMPLES`) with their step ranges: one finding per history
and rule, naming the first broken episode's steps and how many there are.
"""

from __future__ import annotations

import polars as pl

from curate.audits.icrl.registry import (
    RULES,
    SCAN,
    history_findings,
    scan_of,
    step_findings,
    steps_text,
    with_paths,
)
from curate.core.findings import empty_rule_output
from curate.core.rules import AuditContext
from curate.schemas.icrl_tables import IcrlData


def _first_episodes(data: IcrlData, ctx: AuditContext, kind: str) -> pl.DataFrame:
    """Histories with episodes of ``kind``, each with its first such episode and the count."""
    scan = scan_of(ctx)
    h = scan.histories.filter(pl.col(f"{kind}_n") > 0)
    if h.is_empty():
        return h
    first = (
        scan.episodes.filter(pl.col("kind") == kind)
        .sort("file", "group_index", "history", "start")
        .group_by("file", "group_index", "history", maintain_order=True)
        .first()
    )
    max_steps = data.tasks.select("file", pl.col("position").alias("group_index"), "max_steps")
    return with_paths(
        h.join(first, on=["file", "group_index", "history"], how="inner").join(
            max_steps, on=["file", "group_index"], how="left"
        ),
        data,
    ).sort("row")


def _more(kind: str) -> pl.Expr:
    n = pl.col(f"{kind}_n")
    return (
        pl.when(n > 1)
        .then(pl.format(" ({} such episodes in this history)", n))
        .otherwise(pl.lit(""))
    )


def _episode_details(kind: str) -> tuple[pl.Expr, ...]:
    return (
        pl.col(f"{kind}_n").alias("episodes"),
        pl.col("length"),
        pl.col("reward"),
        pl.col("max_steps"),
    )


def _episode_findings(
    data: IcrlData,
    ctx: AuditContext,
    kind: str,
    message: pl.Expr,
    field: str,
    extra: tuple[pl.Expr, ...] = (),
) -> pl.DataFrame:
    """One finding per history with episodes of ``kind``, on its first such episode's steps;
    ``message`` reads the columns of :func:`_first_episodes` (and ends with :func:`_more`)."""
    h = _first_episodes(data, ctx, kind)
    if h.is_empty():
        return empty_rule_output()
    return history_findings(
        h,
        message,
        start=pl.col("start"),
        end=pl.col("end"),
        field=field,
        extra=(*_episode_details(kind), *extra),
    )


@RULES.rule(
    "RL201",
    "reward-length-mismatch",
    category="integrity",
    severity="error",
    needs=(SCAN,),
    invalid=True,
)
def reward_length_mismatch(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A successful episode's reward is not the one its length implies.

    XLand-MiniGrid pays ``1 - 0.9 * L / max_steps`` on the step that reaches the goal, ``L``
    being the episode's length (1 for the first step); stored as float16, the reward still
    determines ``L`` exactly (one step changes it by ``0.9 / max_steps``, more than float16's
    rounding). A mismatch means the history's dones and rewards were shifted against each
    other, episodes were cut or joined, or rewards were rescaled — and a learner conditioned on
    returns learns the wrong credit. The finding names the episode's steps, its length and the
    length its reward implies.
    """
    k = "reward-length"
    return _episode_findings(
        data,
        ctx,
        k,
        pl.format(
            "reward {} at step {} implies an episode of {} steps, but the episode ({}) has {}{}",
            pl.col("reward").round(4),
            pl.col("end") - 1,
            "implied",
            steps_text(pl.col("start"), pl.col("end")),
            "length",
            _more(k),
        ),
        "rewards",
        (pl.col("implied").alias("implied_length"),),
    )


@RULES.rule(
    "RL202", "episode-too-long", category="integrity", severity="error", needs=(SCAN,), invalid=True
)
def episode_too_long(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """An episode runs past the environment's step limit without a done.

    XLand-MiniGrid ends every episode at ``max_steps`` (243 on 9×9, 507 on 13×13) with a done;
    a longer stretch without one means dones were lost (a history stitched from pieces, a
    ``dones`` array shifted or zeroed) and the auto-reset boundaries a learner relies on are
    gone. The episode still open at the end of a history is checked too.
    """
    k = "too-long"
    return _episode_findings(
        data,
        ctx,
        k,
        pl.format(
            "an episode of {} steps ({}) is longer than max_steps {}{}",
            "length",
            steps_text(pl.col("start"), pl.col("end")),
            "max_steps",
            _more(k),
        ),
        "dones",
    )


@RULES.rule(
    "RL203",
    "zero-reward-done-early",
    category="integrity",
    severity="error",
    needs=(SCAN,),
    invalid=True,
)
def zero_reward_done_early(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """An episode ends with reward 0 before the step limit.

    In XLand-MiniGrid an episode ends either at the goal (positive reward) or at exactly
    ``max_steps`` (reward 0); a done with reward 0 any earlier is a lost reward or a spurious
    done, and it makes a failure out of what may have been a success.
    """
    k = "zero-reward-early"
    return _episode_findings(
        data,
        ctx,
        k,
        pl.format(
            "an episode ends with reward 0 after {} steps ({}), before max_steps {}{}",
            "length",
            steps_text(pl.col("start"), pl.col("end")),
            "max_steps",
            _more(k),
        ),
        "rewards",
    )


@RULES.rule(
    "RL204",
    "reward-not-on-done",
    category="integrity",
    severity="error",
    needs=(SCAN,),
    invalid=True,
)
def reward_not_on_done(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A positive reward on a step that is not a done.

    XLand-MiniGrid pays only on the step that reaches the goal, which ends the episode; a
    positive reward elsewhere means rewards and dones are misaligned (shifted by a step, or
    one of them taken from another history). The step range spans the first to the last
    such step.
    """
    return step_findings(
        data, ctx, "reward_off_done", "positive reward without a done at", "rewards"
    )


@RULES.rule(
    "RL205", "nonfinite-reward", category="integrity", severity="error", needs=(SCAN,), invalid=True
)
def nonfinite_reward(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A reward is NaN or infinite.

    One NaN poisons every return, advantage and loss it touches; it comes from a float16
    overflow or a corrupted write. The step range spans the first to the last such step.
    """
    return step_findings(data, ctx, "reward_nonfinite", "NaN or infinite reward at", "rewards")


@RULES.rule(
    "RL206",
    "reward-out-of-range",
    category="integrity",
    severity="error",
    needs=(SCAN,),
    invalid=True,
)
def reward_out_of_range(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A reward is negative or above 1.

    XLand-MiniGrid's rewards lie in ``[0, 1)``; anything else was rescaled, shaped or
    corrupted, and returns are no longer comparable with the published ones.
    """
    return step_findings(data, ctx, "reward_range", "reward outside [0, 1] at", "rewards")


@RULES.rule("RL207", "no-improvement", category="distribution", severity="warning", needs=(SCAN,))
def no_improvement(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A learning history does not improve: the mean return of its last tenth of episodes is not
    above that of its first tenth.

    In-context RL datasets are *learning* histories — an agent's episodes from first attempt to
    mastery — and the in-context learner distils that improvement. A flat history (a random or
    already-converged policy, a history assembled out of order) teaches no learning; a few such
    histories are noise, many mean the collection went wrong. A warning: needs at least 10
    completed episodes. The step range is the whole history.
    """
    h = with_paths(
        scan_of(ctx).histories.filter(
            (pl.col("episodes") >= 10) & ~(pl.col("last_tenth") > pl.col("first_tenth"))
        ),
        data,
    )
    return history_findings(
        h,
        pl.format(
            "mean return of the last tenth of episodes ({}) is not above the first tenth's ({}), "
            "over {} episodes",
            pl.col("last_tenth").round(4),
            pl.col("first_tenth").round(4),
            "episodes",
        ),
        start=pl.lit(0),
        end=pl.col("steps"),
        field="rewards",
        extra=(pl.col("first_tenth"), pl.col("last_tenth"), pl.col("episodes")),
    )
