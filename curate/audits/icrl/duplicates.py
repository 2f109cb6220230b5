"""RL4xx: duplicate tasks and histories, within a file and between files — by content, not id.

Task ids say nothing about content: a task copied under a new id, or the same ruleset drawn
twice, makes an "unseen" evaluation task a seen one. These rules compare what identifies a task
— its ``(env-id, benchmark-id, ruleset-id)`` — and what the file holds — a digest of each
history's five arrays (computed by the scan as it reads them), and of each task's histories in
order. Equal digests are equal bytes (SHA-1 over the arrays; an accidental collision is not a
practical concern). "Earlier" is file order then group order, so the first occurrence is never
reported and the report does not depend on how the rows were read. The joins are the shared
ones (:func:`~curate.audits.shared.duplicates.repeats`,
:func:`~curate.audits.shared.duplicates.first_occurrences`): what is the family's own is its
keys (the ruleset triple, the task and history digests) and its messages.
"""

from __future__ import annotations

import polars as pl

from curate.audits.icrl.registry import (
    RULES,
    SCAN,
    drop_group,
    history_findings,
    scan_of,
    task_findings,
    with_paths,
)
from curate.audits.shared.duplicates import first_occurrences, repeats
from curate.core.findings import clip_expr, concat_outputs, empty_rule_output
from curate.core.rules import AuditContext
from curate.schemas.icrl_tables import HISTORY_KEYS, RULESET_KEYS, TASK_CONTENT_KEYS, IcrlData

_KEY = list(RULESET_KEYS.columns)
_CONTENT = list(TASK_CONTENT_KEYS.columns)
_DIGEST = list(HISTORY_KEYS.columns)


def _task_digests(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """One row per fully scanned group: file, group_index, and the digest of its histories."""
    h = scan_of(ctx).histories
    if h.is_empty():
        return pl.DataFrame(
            schema={"file": pl.Int32, "group_index": pl.Int64, "content": pl.String}
        )
    return (
        h.sort("file", "group_index", "history")
        .group_by("file", "group_index", maintain_order=True)
        .agg(
            pl.col("digest").str.join("").alias("content"),
            (pl.col("error") != "").any().alias("__err"),
        )
        .filter(~pl.col("__err"))
        .drop("__err")
    )


def _groups(data: IcrlData) -> pl.DataFrame:
    return with_paths(data.groups(), data).rename({"position": "group_index"})


def _earlier(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Rows of ``df`` whose ``by`` key an earlier row of their file has, with that row's name
    (``first``): the shared :func:`~curate.audits.shared.duplicates.repeats`, per file."""
    return repeats(df, ["file", *by], first="name").sort("file", "row", maintain_order=True)


@RULES.rule("RL401", "duplicate-ruleset", category="duplicate", severity="error")
def duplicate_ruleset(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """Two task groups of a file have the same ``env-id``, ``benchmark-id`` and ``ruleset-id``:
    one task under two ids.

    A ruleset id names the task (goal, rules, objects) within its benchmark; two groups with
    the same one are the same task, so a split by group id puts it on both sides, and a
    per-task metric counts it twice. Reported on every group after the first.
    """
    hits = _earlier(_groups(data), _KEY)
    return task_findings(
        hits,
        pl.format(
            "same task as group {}: env-id {}, benchmark-id {}, ruleset-id {}",
            "first",
            "env_id",
            "benchmark_id",
            "ruleset_id",
        ),
        field="ruleset-id",
        extra=(pl.col("first").alias("same_as"), pl.col("ruleset_id")),
    )


#: The edit of RL403: the later copy of a history is left out of the fixed file, unless its
#: first copy is left out itself (RL402's leaves out the whole later group:
#: :func:`~curate.audits.icrl.registry.drop_group`).
DROP_COPY = pl.struct(
    pl.lit("drop").alias("op"), pl.col("first_row").alias("copy_of")
).struct.json_encode()


@RULES.rule(
    "RL402",
    "duplicate-task-content",
    category="duplicate",
    severity="error",
    needs=(SCAN,),
    fix="always",
)
def duplicate_task_content(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A task group holds exactly the same histories (every array, byte for byte) as an earlier
    group of the file.

    A task copied under a new id — the classic way an evaluation task leaks into training —
    whatever its attributes say. Compared by content digest, so it is found even when the
    ids and attributes differ. Only groups scanned completely are compared. Fix (safe): the
    later copy is left out of the fixed file (the first one stays; when the first one is left
    out itself, as invalid, the copy stays and is the task's group).
    """
    t = _task_digests(data, ctx)
    g = _groups(data).join(t, on=["file", "group_index"], how="inner")
    hits = _earlier(g, _CONTENT)
    return task_findings(
        hits,
        pl.format("identical content to group {} (every history, byte for byte)", "first"),
        extra=(pl.col("first").alias("same_as"),),
        fix=drop_group(copy_of="first"),
    )


@RULES.rule(
    "RL403",
    "duplicate-history",
    category="duplicate",
    severity="error",
    needs=(SCAN,),
    fix="always",
)
def duplicate_history(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A history is byte-for-byte identical to an earlier history of the file.

    Two learning runs never produce the same 60,000 steps; a repeated history was copied (a
    collection worker writing its buffer twice, a merge of overlapping shards) and is weighted
    twice in training. Histories of a group that RL402 reports as a whole copy are left to it.
    Fix (safe): the later copy is left out of the fixed file (unless the first copy is left out
    itself, as invalid: then the copy stays); its group keeps its other histories (and lists
    the dropped one in ``curate-dropped-histories``).
    """
    h = with_paths(scan_of(ctx).histories, data)
    if h.is_empty():
        return empty_rule_output()
    t = _task_digests(data, ctx)
    g = _groups(data).join(t, on=["file", "group_index"], how="inner")
    whole = _earlier(g, _CONTENT).select("file", "group_index")
    hits = (
        repeats(h, ["file", *_DIGEST], first="record")
        .join(whole, on=["file", "group_index"], how="anti")
        .sort("row")
    )
    return history_findings(
        hits,
        pl.format("identical to history {} (every array, byte for byte)", "first"),
        start=pl.lit(0),
        end=pl.col("steps"),
        extra=(pl.col("first").alias("same_as"),),
        fix=DROP_COPY,
    )


@RULES.rule("RL404", "overlap-between-files", category="overlap", severity="error", needs=(SCAN,))
def overlap_between_files(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A task of one input file is also in an earlier input file: the same ruleset, the same
    content, or some of the same histories.

    Given a training file and an evaluation file, every such task is an evaluation task the
    model has trained on, so "unseen task" results are not unseen. Reported on the later
    file's group, naming the earlier file's group; one finding per group, by the strongest
    evidence (content, then ruleset, then shared histories).
    """
    if len(data.files) < 2:
        return empty_rule_output()
    g = _groups(data)
    t = _task_digests(data, ctx)
    g = g.join(t, on=["file", "group_index"], how="left")
    h = scan_of(ctx).histories
    parts = []

    def earlier_file(key: list[str], frame: pl.DataFrame, why: str) -> pl.DataFrame:
        first = first_occurrences(
            frame,
            key,
            order=("file", "row"),
            __ffile="file",
            first="name" if "name" in frame.columns else "group",
            first_file="path",
        )
        return (
            frame.join(first, on=key)
            .filter(pl.col("file") > pl.col("__ffile"))
            .select("file", "group_index", "first", "first_file", pl.lit(why).alias("why"))
        )

    parts.append(earlier_file(_CONTENT, g, "identical content"))
    parts.append(earlier_file(_KEY, g, "same env-id, benchmark-id and ruleset-id"))
    if h.height:
        hh = with_paths(h, data)
        parts.append(
            earlier_file(_DIGEST, hh, "identical histories").unique(
                ["file", "group_index"], keep="first", maintain_order=True
            )
        )
    found = (
        pl.concat(parts)
        .unique(["file", "group_index"], keep="first", maintain_order=True)
        .join(g, on=["file", "group_index"])
        .sort("row")
    )
    return concat_outputs(
        [
            task_findings(
                found,
                # the other group's name as a record column shows it (cut, with a digest)
                pl.format(
                    "{} with group {} of {}", "why", clip_expr("first", digest=True), "first_file"
                ),
                extra=(
                    pl.col("first").alias("same_as"),
                    pl.col("first_file"),
                    pl.col("why").alias("evidence"),
                ),
            )
        ]
    )
