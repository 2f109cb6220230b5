"""What a family declares for the shared duplicate and leakage checks: its keys.

Why a declaration and not code: exact duplicates and split leakage are the same two joins in
every family (:mod:`curate.audits.shared.duplicates`); what differs is only *which columns*
make two records the same and which column is the split. A family says that here, once, and
its rules (with their own codes, messages and fixes) call the shared joins with it. A fifth
family gets duplicates and leakage by writing a :class:`Keys`, not a module.

The same declaration says what ``curate overlap --key NAME`` compares (a key with a ``table``
builder; its ``doc`` says why two records with equal keys are the same thing) and whether the
key is text worth comparing for near-duplicates (``text``, with the ``normalise`` the family's
rules compare it by): a family lists its keys once (``Family.keys``), and the rules, the
near-duplicate manager (:mod:`curate.audits.shared.near`) and ``curate overlap`` read that one
list.

Lives in the core (not in ``audits``) so that schemas, audits and families can all name it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

    from curate.core.dataset import LoadedDataset

__all__ = ["SPLIT_ORDER", "KeyTable", "Keys", "Normaliser"]

#: A text normal form as a polars expression (``str → str``): what a text key compares.
Normaliser = Callable[["pl.Expr"], "pl.Expr"]
#: Builds a key's table from a loaded dataset: ``record`` (String), ``split`` (String, null
#: without splits) and ``key`` (String, or List(String) for a set-valued key whose values each
#: count); null keys are skipped.
KeyTable = Callable[["LoadedDataset"], "pl.DataFrame"]

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

    For ``curate overlap`` and near-duplicates: ``doc`` says why two records with equal keys
    are the same thing (shown when a key is asked for); ``table`` builds the key's
    ``record, split, key`` frame from a loaded dataset (a key without one is for the rules
    only); ``text`` marks a key that is text worth comparing for near-duplicates, not an
    identifier, and ``normalise`` the normal form its equality is taken on (lower case,
    punctuation folded, ...; ``None``: the text as it is).
    """

    name: str
    columns: tuple[str, ...]
    split: str | None = "split"
    order: tuple[str, ...] = SPLIT_ORDER
    groups: tuple[str, ...] = ()
    doc: str = ""
    table: KeyTable | None = None
    text: bool = False
    normalise: Normaliser | None = None

    @property
    def group_columns(self) -> list[str]:
        """What must not cross splits: ``groups`` when declared, else the key's columns."""
        return list(self.groups or self.columns)

    def within_split(self) -> list[str]:
        """The columns an exact duplicate shares: the key, and the split when there is one."""
        return [*self.columns, *([self.split] if self.split else [])]

    def normalised(self, text: pl.Expr) -> pl.Expr:
        """``text`` in the key's normal form (itself when the key declares none)."""
        return text if self.normalise is None else self.normalise(text)

    def read_by(self, table: KeyTable) -> Keys:
        """This declaration with its table builder: a family attaches the builder where it
        needs the family's own reader (a deepfake content hash reads the media first)."""
        return replace(self, table=table)
