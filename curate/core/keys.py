"""What a family declares for the shared duplicate and leakage checks: its keys.

Why a declaration and not code: exact duplicates and split leakage are the same two joins in
every family (:mod:`curate.audits.shared.duplicates`); what differs is only *which columns*
make two records the same and which column is the split. A family says that here, once, and
its rules (with their own codes, messages and fixes) call the shared joins with it. A fifth
family gets duplicates and leakage by writing a :class:`Keys`, not a module.

Lives in the core (not in ``audits``) so that schemas, audits and families can all name it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SPLIT_ORDER", "Keys"]

#: The canonical splits, earliest first: a key met in an earlier split is the original, its
#: copy in a later one the leak (an evaluation should not have seen it).
SPLIT_ORDER: tuple[str, ...] = ("train", "validation", "test")


@dataclass(frozen=True)
class Keys:
    """One way two records are "the same", as a family declares it.

    ``name`` names the key in findings and ``curate overlap`` (``content``, ``glycan``,
    ``question``); ``columns`` are the columns of the family's key table whose equal values
    make two rows the same record (a null in any of them: no key, never a duplicate);
    ``split`` is the split column of that table (``None``: the family has no splits) and
    ``order`` the splits from earliest to latest; ``groups`` the columns whose values must not
    cross splits (default: the key itself).
    """

    name: str
    columns: tuple[str, ...]
    split: str | None = "split"
    order: tuple[str, ...] = SPLIT_ORDER
    groups: tuple[str, ...] = ()

    @property
    def group_columns(self) -> list[str]:
        """What must not cross splits: ``groups`` when declared, else the key's columns."""
        return list(self.groups or self.columns)

    def within_split(self) -> list[str]:
        """The columns an exact duplicate shares: the key, and the split when there is one."""
        return [*self.columns, *([self.split] if self.split else [])]
