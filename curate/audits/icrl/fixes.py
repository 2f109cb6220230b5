"""What ``curate fix icrl`` changes, decided from findings alone: the fix plan.

Learning histories cannot be repaired from what the file holds — a reward that disagrees with
its episode's length, a lost done, a NaN, an action 9: the right value is not in the data, and a
guess (rescaling a reward, inserting a done) would publish invented transitions. So every fix
here *leaves out*, and says so in the changelog:

* a history an invariant rule reports (:data:`INVALID_RULES`, history level: the unreadable,
  reward, episode and value rules) is dropped, always — it is an invalid record, whatever
  ``--select`` says, as the core drops records its schema rules reject;
* a whole task group is dropped when a task-level invariant fails (:data:`TASK_RULES`: a missing
  dataset or attribute, a wrong dtype or shape, an env-id without a step limit), or when every
  one of its histories is dropped;
* the later copy of a duplicated task (RL402) or history (RL403) is dropped, and a root member
  that is not a task group (RL003) is left out — fixes of those rules, chosen with
  ``--select``/``--ignore`` like any other;
* the groups are renumbered ``0`` … ``N-1`` in the input's order (RL101/RL102), so that a
  dropped group leaves no gap: a task's identity is its ``env-id``/``benchmark-id``/
  ``ruleset-id``, not its group's name, while a gap breaks every loader that opens
  ``f[str(i)]`` for ``i in range(len(f))``. Each rename is a changelog line (old and new
  name). With both rules ignored the names stay as they are (and the re-audit shows the gap).

Within a group, histories keep their order and are renumbered ``0`` … ``H'-1``; the group gets the
attribute ``curate-dropped-histories`` (their indices in the input), which RL106 counts, so that a
group with fewer histories than the others is not reported as a defect of the fixed file.
Not fixed: RL106/RL108 (a shape or an id that differs from the file's majority: which side is
wrong is not known), RL401 (one ruleset under two groups with different content: both are real
histories of the task), RL404 (overlap with another file: fix reads one file), and the warnings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from curate.audits.icrl import RULES
from curate.core.dataset import ChangeEntry
from curate.core.errors import clip
from curate.core.findings import DETAILS_STRING_CHARS
from curate.schemas.icrl_tables import IcrlData

#: Rules whose error findings make a history (or, for :data:`TASK_RULES`, a whole task group)
#: unpublishable: the rules declared ``invalid=True`` (RL001, RL103-RL105, RL107, RL201-RL206,
#: RL301, RL302, RL304). Invariants of the file and the environment — not relations between
#: tasks (duplicates, overlap: fixes) and not heuristics (warnings).
INVALID_RULES: tuple[str, ...] = RULES.invalid
#: The task-level ones: the group cannot be read (RL103, RL105), identified (RL104) or checked
#: against its environment's step limit and reward (RL107).
TASK_RULES = frozenset({"RL103", "RL104", "RL105", "RL107"})
#: The rules whose edit is ``renumber``: one of them chosen renumbers the groups after a drop
#: too, with no finding of its own (what each finding drops is its edit, not a list here).
RENUMBER_RULES = frozenset({"RL101", "RL102"})


@dataclass
class GroupPlan:
    """One root member of the input and what the fixed file does with it."""

    name: str
    kind: str
    position: int
    histories: int
    #: None: left out; else the name in the fixed file
    new_name: str | None
    #: input indices of the histories kept, in order (all of them when none is dropped)
    kept: list[int] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)


@dataclass
class FixPlan:
    groups: list[GroupPlan]
    changelog: list[ChangeEntry]
    #: changelog lines per rule (what the fix summary's "fixed" says: its counts add up to the
    #: changelog's length, whatever the rule — an invalid history left out is a change too)
    applied: dict[str, int]
    histories_in: int = 0
    histories_out: int = 0
    invalid_dropped: int = 0
    dropped: int = 0
    groups_dropped: int = 0
    renamed: int = 0


def _located(findings: pl.DataFrame) -> pl.DataFrame:
    """Findings with their task and history (from ``details``) as columns."""
    return findings.with_columns(
        pl.col("details").str.json_path_match("$.task").alias("__task"),
        pl.col("details").str.json_path_match("$.history").cast(pl.Int64).alias("__history"),
    )


def _ref(r: dict[str, Any]) -> dict[str, Any]:
    return {"rule": r["rule"], "record": r["record"], "field": r["field"], "message": r["message"]}


def _reason(causes: list[dict[str, Any]]) -> str:
    said = "; ".join(f"{c['rule']}: {' '.join(str(c['message']).split())}" for c in causes)
    return "dropped: " + said


def plan_fix(
    data: IcrlData,
    invalid: pl.DataFrame,
    findings: pl.DataFrame,
    edits: Sequence[dict[str, Any]],
    chosen: set[str],
) -> FixPlan:
    """The plan for one input file.

    ``invalid``: the findings of :data:`INVALID_RULES` on the data (computed from the data, so a
    report narrowed by ``--select`` never lets an invalid history through); ``findings``: the
    audit's findings; ``edits``: the findings' edits the core chose
    (:func:`curate.core.fixes.edits_of`: ``--select``/``--ignore``/``--unsafe-fixes``) — what
    each finding asks for is its edit (``drop`` a history or a group, ``renumber``), not a list
    of rule codes here; ``chosen``: the fixable rules chosen (a renumbering rule chosen also
    renumbers after a drop, with no finding of its own).
    """
    tasks = data.tasks.sort("position")
    scan = data.scan().histories
    histories = {
        (r["group"], r["history"]): r
        for r in scan.select("group", "history", "steps", "digest").iter_rows(named=True)
    }
    inv = _located(
        invalid.with_columns(pl.lit(True).alias("__invalid"), pl.lit(None, pl.String).alias("__op"))
    )
    op_of = {
        (e["rule"], e["row"], e["record"], e["field"], e["message"]): e["edit"]["op"] for e in edits
    }
    fixes = findings.filter(pl.col("rule").is_in(sorted({e["rule"] for e in edits})))
    ops = [
        op_of.get((r["rule"], r["row"], r["record"], r["field"], r["message"]))
        for r in fixes.select("rule", "row", "record", "field", "message").iter_rows(named=True)
    ]
    fixes = _located(
        fixes.with_columns(
            pl.lit(False).alias("__invalid"), pl.Series("__op", ops, pl.String)
        ).filter(pl.col("__op").is_not_null())
    ).select(inv.columns)
    causes = pl.concat([inv, fixes], how="vertical_relaxed").sort("row", nulls_last=True)
    group_causes: dict[str, list[dict]] = {}
    history_causes: dict[tuple[str, int], list[dict]] = {}
    renumber_refs: dict[str, dict] = {}
    # A report's details carry a group name longer than DETAILS_STRING_CHARS cut (with a
    # digest: one name per group still); the causes are keyed by the cut name, whole or cut as
    # they came (the invalid records' findings are the rules' own, whole).
    limit = DETAILS_STRING_CHARS
    cut = {clip(n, limit, digest=True) for n in tasks["name"].to_list() if len(n) > limit}

    def key(task: str | None) -> str | None:
        if task is None or len(task) <= limit or task in cut:
            return task
        return clip(task, limit, digest=True)

    for r in causes.iter_rows(named=True):
        rule, task, op = r["rule"], key(r["__task"]), r["__op"]
        if op == "renumber":
            renumber_refs.setdefault(task, r)
        elif r["__history"] is None and (op == "drop" or (r["__invalid"] and rule in TASK_RULES)):
            group_causes.setdefault(task, []).append(r)
        elif r["__history"] is not None and (r["__invalid"] or op == "drop"):
            history_causes.setdefault((task, r["__history"]), []).append(r)

    renumber = bool(chosen & RENUMBER_RULES)
    plans: list[GroupPlan] = []
    changes: list[ChangeEntry] = []
    figures = {"invalid": 0, "dropped": 0, "groups": 0, "in": 0}
    next_index = 0

    for t in tasks.iter_rows(named=True):
        name, kind = t["name"], t["kind"]
        h_in = int(t["histories"] or 0) if kind == "group" else 0
        figures["in"] += h_in
        plan = GroupPlan(name, kind, t["position"], h_in, name, list(range(h_in)))
        plans.append(plan)
        whole = group_causes.get(key(name), [])
        if whole:
            first = whole[0]
            is_invalid = any(c["__invalid"] for c in whole)
            plan.new_name, plan.kept, plan.dropped = None, [], list(range(h_in))
            changes.append(
                ChangeEntry(
                    name,
                    "",
                    _group_desc(t),
                    None,
                    first["rule"],
                    _reason(whole),
                    _ref(first),
                    0 if is_invalid else 1,
                )
            )
            if kind == "group":
                figures["groups"] += 1
                figures["invalid" if is_invalid else "dropped"] += h_in
            continue
        if kind != "group":
            plan.new_name = name  # kept as it is (RL003 not chosen)
            continue
        for h in range(h_in):
            cs = history_causes.get((key(name), h))
            if not cs:
                continue
            plan.dropped.append(h)
            is_invalid = any(c["__invalid"] for c in cs)
            figures["invalid" if is_invalid else "dropped"] += 1
            changes.append(
                ChangeEntry(
                    f"{name}/{h}",
                    "",
                    _history_desc(t, h, histories.get((name, h))),
                    None,
                    cs[0]["rule"],
                    _reason(cs),
                    _ref(cs[0]),
                    0 if is_invalid else 1,
                )
            )
        plan.kept = [h for h in range(h_in) if h not in set(plan.dropped)]
        if plan.dropped and not plan.kept:
            plan.new_name = None
            figures["groups"] += 1
            changes.append(
                ChangeEntry(
                    name,
                    "",
                    _group_desc(t),
                    None,
                    changes[-1].rule,
                    "dropped: every history of the group was dropped",
                    None,
                    0,
                )
            )
            continue
        if plan.dropped:
            first_rule = next(c.rule for c in changes if c.record == f"{name}/{plan.dropped[0]}")
            for new, old in enumerate(plan.kept):
                if new != old:
                    changes.append(
                        ChangeEntry(
                            f"{name}/{old}",
                            "history",
                            old,
                            new,
                            first_rule,
                            f"renumbered: history {old} is now {new} of group {name} "
                            f"(histories {', '.join(map(str, plan.dropped))} were dropped)",
                            None,
                            0,
                        )
                    )
        if renumber:
            plan.new_name = str(next_index)
            next_index += 1

    renamed = 0
    if renumber:
        for plan in plans:
            if plan.kind != "group" or plan.new_name is None or plan.new_name == plan.name:
                continue
            renamed += 1
            ref = renumber_refs.get(key(plan.name))
            rule = "RL101" if not _canonical(plan.name) else "RL102"
            if ref is not None:
                rule = ref["rule"]
            changes.append(
                ChangeEntry(
                    plan.name,
                    "name",
                    plan.name,
                    plan.new_name,
                    rule,
                    f"renamed: group {plan.name} is group {plan.new_name} of the fixed file "
                    "(groups are numbered 0..N-1 in the input's order)",
                    _ref(ref) if ref is not None else None,
                    1,
                )
            )
    kept = sum(len(p.kept) for p in plans if p.kind == "group" and p.new_name is not None)
    # counted from the lines written, not from the findings: a finding whose edit another one
    # made moot (RL101 on a group RL402 drops) wrote no line and is not "fixed"
    applied = dict(Counter(c.rule for c in changes))
    return FixPlan(
        plans,
        changes,
        dict(sorted(applied.items())),
        histories_in=figures["in"],
        histories_out=kept,
        invalid_dropped=figures["invalid"],
        dropped=figures["dropped"],
        groups_dropped=figures["groups"],
        renamed=renamed,
    )


def _canonical(name: str) -> bool:
    return name.isdigit() and str(int(name)) == name


def _group_desc(t: dict[str, Any]) -> dict[str, Any]:
    """A dropped group as the changelog names it (the arrays stay in the input file)."""
    return {
        "task": t["name"],
        "kind": t["kind"],
        "histories": t["histories"],
        "steps": t["steps"],
        "env-id": t["env_id"],
        "benchmark-id": t["benchmark_id"],
        "ruleset-id": t["ruleset_id"],
    }


def _history_desc(t: dict[str, Any], h: int, row: dict[str, Any] | None) -> dict[str, Any]:
    """A dropped history: where it is in the input, and the digest of its five arrays."""
    return {
        "task": t["name"],
        "history": h,
        "steps": None if row is None else row["steps"],
        "digest": None if row is None else row["digest"],
        "env-id": t["env_id"],
        "benchmark-id": t["benchmark_id"],
        "ruleset-id": t["ruleset_id"],
    }


__all__ = [
    "INVALID_RULES",
    "RENUMBER_RULES",
    "TASK_RULES",
    "FixPlan",
    "GroupPlan",
    "plan_fix",
]
