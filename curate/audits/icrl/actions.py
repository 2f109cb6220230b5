"""RL3xx: values — actions, expert actions and observation cells in their ranges, and expert
actions that barely vary."""

from __future__ import annotations

import polars as pl

from curate.audits.icrl.registry import (
    RULES,
    SCAN,
    history_findings,
    scan_of,
    step_findings,
    with_paths,
)
from curate.core.rules import AuditContext
from curate.schemas.icrl import MAX_STATE_VALUE, NEAR_CONSTANT_SHARE, NUM_ACTIONS, NUM_COLORS
from curate.schemas.icrl_tables import IcrlData


@RULES.rule(
    "RL301",
    "action-out-of-range",
    category="integrity",
    severity="error",
    needs=(SCAN,),
    invalid=True,
)
def action_out_of_range(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """An action is not one of XLand-MiniGrid's six (0..5: forward, left, right, pick up, put
    down, toggle).

    A policy head of six logits cannot produce it and a one-hot encoder of six classes fails
    on it (or, worse, wraps it silently); it comes from a wrong dtype cast or a padding value.
    The step range spans the first to the last such step.
    """
    return step_findings(
        data,
        ctx,
        "action_range",
        pl.format("action {} outside 0..5 at", "action_value"),
        "actions",
        (pl.col("action_value").alias("value"),),
    )


@RULES.rule(
    "RL302",
    "expert-action-out-of-range",
    category="integrity",
    severity="error",
    needs=(SCAN,),
    invalid=True,
)
def expert_action_out_of_range(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """An expert action is not one of the six actions (0..5).

    ``expert_actions`` are the labels an in-context learner is trained to predict; a value
    outside 0..5 is a label no model can output. The step range spans the first to the last
    such step.
    """
    return step_findings(
        data,
        ctx,
        "expert_range",
        pl.format("expert action {} outside 0..5 at", "expert_value"),
        "expert_actions",
        (pl.col("expert_value").alias("value"),),
    )


@RULES.rule(
    "RL303",
    "near-constant-expert-actions",
    category="distribution",
    severity="warning",
    needs=(SCAN,),
)
def near_constant_expert(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """One expert action makes up at least 95% of a history's expert actions.

    XLand tasks need turning, moving and picking up; an expert that nearly always says one
    action is an under-trained or broken relabelling policy, and a learner trained to predict
    it learns a constant. A warning (the threshold is a heuristic); the step range is the whole
    history.
    """
    h = scan_of(ctx).histories
    cols = [f"expert_{a}" for a in range(NUM_ACTIONS)]
    h = h.with_columns(
        pl.max_horizontal(cols).alias("__top"),
        pl.sum_horizontal(cols).alias("__all"),
        pl.concat_list(cols).list.arg_max().alias("__action"),
    ).filter((pl.col("__all") > 0) & (pl.col("__top") >= NEAR_CONSTANT_SHARE * pl.col("__all")))
    return history_findings(
        with_paths(h, data),
        pl.format(
            "expert action {} is {}% of the history's {} expert actions",
            "__action",
            (100 * pl.col("__top") / pl.col("__all")).round(1),
            "__all",
        ),
        start=pl.lit(0),
        end=pl.col("steps_read"),
        field="expert_actions",
        extra=(
            pl.col("__action").alias("action"),
            (pl.col("__top") / pl.col("__all")).alias("share"),
        ),
    )


@RULES.rule(
    "RL304",
    "invalid-state-value",
    category="integrity",
    severity="error",
    needs=(SCAN,),
    invalid=True,
)
def invalid_state_value(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """An observation cell does not decode to a tile and a colour.

    Each cell of the 5×5 view packs ``tile * 12 + colour`` (13 tiles, 12 colours), so the
    largest valid value is 155; a larger one decodes to a tile that does not exist, and an
    embedding table of 13 × 12 entries fails on it. It comes from another packing (a different
    number of colours), a wrong dtype, or corruption. The step range spans the first to the
    last step with such a cell.
    """
    h = with_paths(scan_of(ctx).histories.filter(pl.col("state_range_n") > 0), data)
    first, last, n = (
        pl.col("state_range_first"),
        pl.col("state_range_last"),
        pl.col("state_range_n"),
    )
    return history_findings(
        h,
        pl.format(
            "state value {} at step {} decodes to tile {} (only 0..12 exist); {} step(s) "
            "with such cells, up to step {}",
            "state_value",
            first,
            pl.col("state_value") // NUM_COLORS,
            n,
            last,
        ),
        start=first,
        end=last + 1,
        field="states",
        extra=(
            pl.col("state_value").alias("value"),
            n.alias("steps"),
            pl.lit(MAX_STATE_VALUE).alias("max_value"),
        ),
    )
