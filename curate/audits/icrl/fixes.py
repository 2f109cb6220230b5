"""What ``curate fix icrl`` changes: the edits of the in-context RL rules, applied by the core.

Learning histories cannot be repaired from what the file holds — a reward that disagrees with
its episode's length, a lost done, a NaN, an action 9: the right value is not in the data, and a
guess (rescaling a reward, inserting a done) would publish invented transitions. So every fix
here *leaves out*, and says so in the changelog. There is no planner of the family's own: the
findings carry edits and the core's engine (:mod:`curate.core.fixes`) applies them to a frame of
histories (:meth:`curate.families.icrl.IcrlFamily.fix_frame`), exactly as it fixes a table;
the family only writes the HDF5 file the frame describes
(:meth:`~curate.families.icrl.IcrlFamily.write_fixed`).

* a history an invariant rule reports (:data:`INVALID_RULES`, history level: the unreadable,
  reward, episode and value rules) is left out, always — it is an invalid record, whatever
  ``--select`` says, as the core drops records a schema rule rejects; a task-level invariant
  (:data:`TASK_RULES`: a missing dataset or attribute, a wrong dtype or shape, an env-id without
  a step limit) leaves out every history of its group;
* the later copy of a duplicated task (RL402: ``drop`` ``where`` the task is that group) or
  history (RL403: ``drop``) is left out, and a root member that is not a task group (RL003) —
  fixes of those rules, chosen with ``--select``/``--ignore`` like any other;
* the groups are renumbered ``0`` … ``N-1`` in the input's order (RL101/RL102's ``renumber``
  edit), so that a dropped group leaves no gap: a task's identity is its ``env-id``/
  ``benchmark-id``/``ruleset-id``, not its group's name, while a gap breaks every loader that
  opens ``f[str(i)]`` for ``i in range(len(f))``. A gap a drop opens is found by re-auditing
  the pass's file (RL102) and closed in the next pass, as ruff re-lints after a fix. Each
  rename is a changelog line (old and new name). With both rules ignored the names stay as
  they are (and the re-audit shows the gap).

Within a group, histories keep their order and are renumbered ``0`` … ``H'-1`` by the writer;
the group gets the attribute ``curate-dropped-histories`` (their indices in the input), which
RL106 counts, so that a group with fewer histories than the others is not reported as a defect
of the fixed file. Not fixed: RL106/RL108 (a shape or an id that differs from the file's
majority: which side is wrong is not known), RL401 (one ruleset under two groups with different
content: both are real histories of the task), RL404 (overlap with another file: fix reads one
file), and the warnings.
"""

from __future__ import annotations

from curate.audits.icrl import RULES

#: Rules whose error findings make a history (or, for :data:`TASK_RULES`, a whole task group)
#: unpublishable: the rules declared ``invalid=True`` (RL001, RL103-RL105, RL107, RL201-RL206,
#: RL301, RL302, RL304). Invariants of the file and the environment — not relations between
#: tasks (duplicates, overlap: fixes) and not heuristics (warnings).
INVALID_RULES: tuple[str, ...] = RULES.invalid
#: The task-level ones: the group cannot be read (RL103, RL105), identified (RL104) or checked
#: against its environment's step limit and reward (RL107).
TASK_RULES = frozenset({"RL103", "RL104", "RL105", "RL107"})


__all__ = ["INVALID_RULES", "TASK_RULES"]
