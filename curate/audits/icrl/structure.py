"""RL1xx: the task groups' names, attributes, datasets, shapes and environment metadata.

All from metadata (the ``tasks`` table): these rules read no array data and run under
``--metadata-only``.
"""

from __future__ import annotations

import polars as pl

from curate.audits.icrl.registry import RULES, task_findings, with_paths
from curate.core.findings import concat_outputs, empty_rule_output, rule_output
from curate.core.rules import AuditContext
from curate.schemas.icrl import DATASET_SPECS, DATASETS, PUBLISHED_BENCHMARKS
from curate.schemas.icrl_tables import IcrlData


def _groups(data: IcrlData) -> pl.DataFrame:
    return with_paths(data.groups(), data)


#: The edit of RL101/RL102: the fixed file's task groups are named 0..N-1 in the input's order
#: (the root members that are not groups keep their names).
RENUMBER = {
    "op": "renumber",
    "field": "group",
    "where": {"kind": "group"},
    "reason": "task groups are numbered 0..N-1 in the input's order",
}


@RULES.rule("RL101", "group-name-not-integer", category="schema", severity="error", fix="always")
def group_name_not_integer(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A task group's name is not a plain integer (``"task_3"``, ``"007"``, ``"-1"``).

    Tasks are named ``"0"`` … ``"N-1"`` and loaders open them as ``f[str(i)]``; a name that is
    not the decimal form of its index is never opened (``f["7"]`` is not ``f["007"]``), so that
    task is silently missing from training or evaluation. Fix (safe): the fixed file renumbers
    its groups ``0`` … ``N-1`` in the input's order (integers first, by value, then other
    names); every rename is in the changelog. A task is identified by its attributes
    (``benchmark-id``, ``ruleset-id``), never by its group's name.
    """
    g = _groups(data).filter(
        pl.col("index").is_null() | (pl.col("index").cast(pl.String) != pl.col("name"))
    )
    return task_findings(
        g,
        pl.when(pl.col("index").is_null())
        .then(pl.format("group name {} is not an integer", pl.col("name")))
        .otherwise(
            pl.format(
                "group name {} is not written as the integer {} (f[{}] does not open it)",
                pl.col("name"),
                pl.col("index"),
                pl.col("index").cast(pl.String),
            )
        ),
        fix=RENUMBER,
    )


@RULES.rule(
    "RL102", "group-names-not-contiguous", category="schema", severity="error", fix="always"
)
def group_names_not_contiguous(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """The integer group names are not ``0`` … ``N-1``: some are missing.

    A loader that pairs ``range(len(f))`` with the names, or ``f.keys()`` (sorted as text:
    ``"0", "1", "10", "100", …``) with a numeric task list, reads the wrong tasks or fails on a
    name that does not exist. One finding per gap, on the group after it, with the first and
    last missing name in ``details``. Fix (safe): groups renumbered ``0`` … ``N-1`` (see RL101);
    ``curate fix`` also renumbers after it drops a group, so its output never has a gap.
    """
    out = []
    groups = _groups(data).filter(
        pl.col("index").is_not_null() & (pl.col("index").cast(pl.String) == pl.col("name"))
    )
    for _, g in groups.group_by("file", maintain_order=True):
        g = g.sort("index")
        idx = g["index"].to_list()
        prev = -1
        for i, r in zip(idx, g.iter_rows(named=True), strict=True):
            if i > prev + 1:
                lo, hi = prev + 1, i - 1
                missing = str(lo) if lo == hi else f"{lo}-{hi}"
                out.append(
                    {
                        "row": r["row"],
                        "record": r["name"],
                        "message": f"task groups {missing} are missing before group {r['name']}"
                        if lo != hi
                        else f"task group {missing} is missing before group {r['name']}",
                        "details": {
                            "task": r["name"],
                            "history": None,
                            "step_start": None,
                            "step_end": None,
                            "file": r["path"],
                            "missing_first": lo,
                            "missing_last": hi,
                        },
                        "fix": RENUMBER,
                    }
                )
            prev = i
    return rule_output(out)


@RULES.rule("RL103", "missing-dataset", category="schema", severity="error", invalid=True)
def missing_dataset(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A task group lacks one of the five datasets (states, actions, rewards, dones,
    expert_actions), or one of them is not a dataset, or is a link that cannot be followed (a
    dangling soft link, an external link to a file that is not beside it).

    Every loader reads all five; a group without one fails at training time, far from where the
    file was made. The group's arrays are not scanned.
    """
    g = _groups(data)
    not_ds = pl.concat_list(
        [pl.when(pl.col(f"{d}_dtype") == "group").then(pl.lit(d)) for d in DATASETS]
    ).list.drop_nulls()
    linked = pl.concat_list(
        [pl.when(pl.col(f"{d}_dtype") == "link").then(pl.lit(d)) for d in DATASETS]
    ).list.drop_nulls()
    g = g.with_columns(
        pl.col("datasets_missing").list.concat(not_ds).alias("__bad"),
        linked.alias("__linked"),
    ).filter((pl.col("__bad").list.len() > 0) | (pl.col("__linked").list.len() > 0))
    msg = pl.concat_str(
        pl.when(pl.col("__bad").list.len() > 0).then(
            pl.format("missing dataset(s): {}", pl.col("__bad").list.join(", "))
        ),
        pl.when(pl.col("__linked").list.len() > 0).then(pl.col("links_broken").list.join("; ")),
        separator="; ",
        ignore_nulls=True,
    )
    return task_findings(
        g,
        msg,
        field=pl.coalesce(pl.col("__bad").list.first(), pl.col("__linked").list.first()),
        extra=(
            pl.col("__bad").list.concat("__linked").alias("missing"),
            pl.col("links_broken").alias("links"),
        ),
    )


@RULES.rule("RL104", "missing-attribute", category="schema", severity="error", invalid=True)
def missing_attribute(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A task group lacks ``env-id``, ``benchmark-id`` or ``ruleset-id``, or one has the wrong
    type (the ids are strings, ``ruleset-id`` an integer).

    ``env-id`` says which environment (and so which step limit and reward scale) the histories
    come from, and ``benchmark-id`` with ``ruleset-id`` which task: without them a task cannot be
    re-created for evaluation, nor checked for duplicates.
    """
    g = _groups(data).filter(
        (pl.col("attrs_missing").list.len() > 0) | (pl.col("attrs_bad").list.len() > 0)
    )
    msg = pl.concat_str(
        pl.when(pl.col("attrs_missing").list.len() > 0).then(
            pl.format("missing attribute(s): {}", pl.col("attrs_missing").list.join(", "))
        ),
        pl.when(pl.col("attrs_bad").list.len() > 0).then(
            pl.format("wrong type: {}", pl.col("attrs_bad").list.join("; "))
        ),
        separator="; ",
        ignore_nulls=True,
    )
    return task_findings(
        g,
        msg,
        field=pl.coalesce(pl.col("attrs_missing").list.first(), pl.lit("attrs")),
        extra=(pl.col("attrs_missing").alias("missing"), pl.col("attrs_bad").alias("wrong")),
    )


@RULES.rule("RL105", "dataset-shape-dtype", category="schema", severity="error", invalid=True)
def dataset_shape_dtype(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A dataset has the wrong dtype or shape, or the five datasets of a group disagree on the
    number of histories and steps ``(H, L)``.

    Expected: ``states`` uint8 ``(H, L, 5, 5)``; ``actions`` and ``expert_actions`` uint8,
    ``rewards`` float16, ``dones`` bool, each ``(H, L)``. A float32 reward or an int64 action
    doubles or octuples the file and breaks loaders that allocate by the published dtypes; a
    ``(H, L)`` that differs between datasets pairs a step's observation with another step's
    action. A group whose shapes cannot be paired is not scanned.
    """
    g = _groups(data)
    out = []
    for d in DATASETS:
        spec = DATASET_SPECS[d]
        dtype, shape = pl.col(f"{d}_dtype"), pl.col(f"{d}_shape")
        trailing = shape.list.slice(2)
        wrong_dtype = dtype.is_not_null() & (dtype != "group") & (dtype != spec.dtype)
        wrong_shape = shape.is_not_null() & (
            (shape.list.len() != spec.ndim)
            | (
                trailing.cast(pl.List(pl.String)).list.join(",")
                != ",".join(map(str, spec.trailing))
            )
        )
        hl_differs = (
            shape.is_not_null()
            & (shape.list.len() >= 2)
            & pl.col("actions_shape").is_not_null()
            & (shape.list.slice(0, 2) != pl.col("actions_shape").list.slice(0, 2))
        )
        bad = g.filter(wrong_dtype | wrong_shape | hl_differs)
        shape_text = pl.format("({})", shape.cast(pl.List(pl.String)).list.join(", "))
        msg = pl.concat_str(
            pl.when(wrong_dtype).then(
                pl.format("{} is {}, expected {}", pl.lit(d), dtype, pl.lit(spec.dtype))
            ),
            pl.when(wrong_shape).then(
                pl.format(
                    "{} has shape {}, expected {}", pl.lit(d), shape_text, pl.lit(spec.shape_text())
                )
            ),
            pl.when(hl_differs & ~wrong_shape).then(
                pl.format(
                    "{} has (H, L) {} but actions has ({})",
                    pl.lit(d),
                    shape_text,
                    pl.col("actions_shape")
                    .list.slice(0, 2)
                    .cast(pl.List(pl.String))
                    .list.join(", "),
                )
            ),
            separator="; ",
            ignore_nulls=True,
        )
        out.append(
            task_findings(
                bad,
                msg,
                field=d,
                extra=(dtype.alias("dtype"), shape.alias("shape")),
            )
        )
    return concat_outputs(out)


def _others() -> pl.Expr:
    """``3 other groups of the file have`` / ``1 other group of the file has``."""
    return (
        pl.when(pl.col("__n") == 1)
        .then(pl.lit("1 other group of the file has"))
        .otherwise(pl.format("{} other groups of the file have", "__n"))
    )


def _mode(df: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    """Per file, the most common value of ``cols`` (ties: the one of the first group)."""
    return (
        df.group_by("file", *cols)
        .agg(pl.len().alias("__n"), pl.col("position").min().alias("__first"))
        .sort("file", "__n", "__first", descending=[False, True, False])
        .group_by("file", maintain_order=True)
        .first()
        .select("file", *[pl.col(c).alias(f"__mode_{c}") for c in cols], "__n")
    )


@RULES.rule("RL106", "shape-differs-across-groups", category="schema", severity="error")
def shape_differs(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A task group's ``(H, L)`` — histories per task, steps per history — differs from the
    file's other groups.

    Every task of a published dataset has the same number of learning histories of the same
    length; in-context learners are trained on fixed-length windows and batch tasks together. A
    group with fewer steps is usually a collection run cut short; one with fewer histories a
    failed worker. Compared with the most common ``(H, L)`` of the file, counting the histories
    ``curate fix`` dropped from a group (its attribute ``curate-dropped-histories`` lists them):
    a fixed file's groups that lost broken histories are not reported.
    """
    g = _groups(data).filter(pl.col("histories").is_not_null())
    if g.is_empty():
        return empty_rule_output()
    g = g.with_columns(
        (pl.col("histories") + pl.col("histories_dropped").fill_null(0)).alias("__h_in")
    )
    mode = _mode(g, ["__h_in", "steps"]).rename({"__mode___h_in": "__mode_histories"})
    bad = g.join(mode, on="file").filter(
        (pl.col("__h_in") != pl.col("__mode_histories"))
        | (pl.col("steps") != pl.col("__mode_steps"))
    )
    return task_findings(
        bad,
        pl.format(
            "(H, L) = ({}, {}) where {} ({}, {})",
            "histories",
            "steps",
            _others(),
            "__mode_histories",
            "__mode_steps",
        ),
        field="actions",
        extra=(pl.col("histories"), pl.col("steps")),
    )


@RULES.rule("RL107", "unknown-env-id", category="schema", severity="error", invalid=True)
def unknown_env_id(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """``env-id`` is not an XLand-MiniGrid environment id (``XLand-MiniGrid-R<rooms>-<H>x<W>``).

    The grid size in the id sets the episode limit (``max_steps = 3 * H * W``: 243 on 9×9, 507
    on 13×13) and with it the reward every successful episode must carry; without it the
    episode rules (RL201–RL203) cannot check the group, and an evaluator cannot re-create the
    environment.
    """
    g = _groups(data).filter(pl.col("env_id").is_not_null() & pl.col("max_steps").is_null())
    return task_findings(
        g,
        pl.format(
            "env-id {} is not an XLand-MiniGrid id (XLand-MiniGrid-R1-9x9, …)", pl.col("env_id")
        ),
        field="env-id",
        extra=(pl.col("env_id"),),
    )


@RULES.rule("RL108", "inconsistent-env-benchmark", category="consistency", severity="error")
def inconsistent_env_benchmark(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A task group's ``env-id`` or ``benchmark-id`` differs from the rest of its file.

    One learning-history dataset is collected in one environment from one benchmark's
    rulesets (XLand-Trivial-20B: trivial-1m; XLand-100B: medium-1m); a group from another
    environment has another step limit and reward scale, and one from another benchmark's
    ruleset ids names a different task than its id says. Compared with the file's most common
    value of each.
    """
    g = _groups(data)
    out = []
    for col, attr in (("env_id", "env-id"), ("benchmark_id", "benchmark-id")):
        have = g.filter(pl.col(col).is_not_null())
        if have.is_empty():
            continue
        mode = _mode(have, [col])
        bad = have.join(mode, on="file").filter(pl.col(col) != pl.col(f"__mode_{col}"))
        out.append(
            task_findings(
                bad,
                pl.format(
                    "{} is {} where {} {}",
                    pl.lit(attr),
                    pl.col(col),
                    _others(),
                    pl.col(f"__mode_{col}"),
                ),
                field=attr,
                extra=(pl.col(col).alias("value"), pl.col(f"__mode_{col}").alias("usual")),
            )
        )
    return concat_outputs(out)


@RULES.rule("RL109", "unpublished-benchmark", category="consistency", severity="warning")
def unpublished_benchmark(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """``benchmark-id`` is none of XLand-MiniGrid's published benchmarks (trivial-1m,
    small-1m, medium-1m, high-1m, high-3m).

    The ruleset id indexes a benchmark's rulesets; with an unpublished benchmark nobody can
    re-create the task from the file (hand-made rulesets, a renamed or private benchmark). A
    warning, since such files are legitimate for experiments: one finding per file and value,
    on the first group that has it.
    """
    g = _groups(data).filter(
        pl.col("benchmark_id").is_not_null()
        & ~pl.col("benchmark_id").is_in(list(PUBLISHED_BENCHMARKS))
    )
    if g.is_empty():
        return empty_rule_output()
    first = (
        g.sort("position")
        .group_by("file", "benchmark_id", maintain_order=True)
        .agg(pl.all().first(), pl.len().alias("__n"))
        .select(*g.columns, "__n")
    )
    return task_findings(
        first,
        pl.format(
            "benchmark-id {} is not a published XLand-MiniGrid benchmark ({} groups of the file)",
            pl.col("benchmark_id"),
            "__n",
        ),
        field="benchmark-id",
        extra=(pl.col("benchmark_id"), pl.col("__n").alias("groups")),
    )
