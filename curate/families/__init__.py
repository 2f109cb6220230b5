"""Dataset families and their registry: plug-ins found through the ``curate.families`` entry points.

A family is one schema module, one rules module and one module that ties them to a reader, fixes
and export; it is registered as an entry point whose name is the family's name and whose value
is the :class:`Family` object. The built-ins are registered that way in ``pyproject.toml``::

    [project.entry-points."curate.families"]
    knowledge-editing = "curate.families.knowledge_editing:FAMILY"
    mquake = "curate.families.knowledge_editing:FAMILY"
    glycan = "curate.families.glycan:FAMILY"

so a third-party package adds a family with the same three lines in its own ``pyproject.toml``
and touches no file of curate.

Why entry points are loaded lazily: importing a family imports its dependencies, and one family's
missing optional dependency (say a plug-in that needs ``h5py``) must not break every command.
The registry knows every family by its entry-point names without importing anything; a family's
module is imported only when that family is used, and an import failure is reported then, as one
line naming the family and the missing module (:class:`FamilyLoadError`, exit 2). Commands that
list every family (``curate rules``) load them all but skip a broken one, which
:func:`broken_families` reports.

Aliases: several entry-point names with the same value are one family (``mquake`` above), found
without an import. An alias that only the :attr:`Family.aliases` attribute declares still works:
when no entry-point name matches, the families are loaded (each guarded) and their aliases read.

Source checkouts: when curate runs from a folder that was never ``pip install``-ed (no ``curate``
distribution metadata, or metadata written before families were plug-ins), the built-ins are taken
from :data:`BUILTIN`, the same table as ``pyproject.toml``, so tests and ``python -m curate`` work.

May import: ``curate.core``, ``curate.io``, ``curate.schemas`` and ``curate.audits``; a
family's own modules here import its schema and rules, never the reports or publishing above.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from curate.core.errors import UsageError

if TYPE_CHECKING:
    from importlib import metadata

    from curate.core.dataset import FixResult, LoadedDataset
    from curate.families.base import CardDefaults, Family, InputSpec

#: What this package re-exports from its heavy modules, imported on first use (PEP 562): the
#: registry itself must not import polars and pyarrow, since ``curate --help`` and
#: ``curate rules`` read it (issue 36: they answer in a blink, from the catalogue).
_LAZY = {
    "FixResult": "curate.core.dataset",
    "LoadedDataset": "curate.core.dataset",
    "CardDefaults": "curate.families.base",
    "Family": "curate.families.base",
    "InputSpec": "curate.families.base",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BUILTIN",
    "GROUP",
    "CardDefaults",
    "Family",
    "FamilyEntry",
    "FamilyLoadError",
    "FixResult",
    "InputSpec",
    "LoadedDataset",
    "all_families",
    "broken_families",
    "entries",
    "get_family",
    "refresh",
]

#: The entry-point group a package registers its families in.
GROUP = "curate.families"
#: The built-in families as ``pyproject.toml`` registers them (keep the two in sync; a test does).
BUILTIN: dict[str, str] = {
    "knowledge-editing": "curate.families.knowledge_editing:FAMILY",
    "mquake": "curate.families.knowledge_editing:FAMILY",
    "ke": "curate.families.knowledge_editing:FAMILY",
    "glycan": "curate.families.glycan:FAMILY",
    "icrl": "curate.families.icrl:FAMILY",
    "xland": "curate.families.icrl:FAMILY",
    "deepfake": "curate.families.deepfake:FAMILY",
    "table": "curate.families.table:FAMILY",
    "tabular": "curate.families.table:FAMILY",
}
_OWN = "curate"


class FamilyLoadError(UsageError):
    """A registered family that cannot be imported or is not a :class:`Family` (exit 2)."""


@dataclass(frozen=True)
class FamilyEntry:
    """One registered family before it is imported: its entry-point names and where it lives."""

    #: Entry-point names, in registration order (the family's name and any aliases registered).
    names: tuple[str, ...]
    #: ``module:attribute``.
    value: str
    #: The distribution that registered it (``"curate"`` for the built-ins).
    package: str

    @property
    def module(self) -> str:
        return self.value.partition(":")[0].strip()

    def load(self, as_name: str | None = None) -> Family:
        """The family object; :class:`FamilyLoadError` (one line, naming the family by
        ``as_name`` or its first name) when it cannot be imported."""
        return _load(self, as_name or self.names[0])


def _package_of(ep: metadata.EntryPoint, names: dict[int, str]) -> str:
    """The distribution that registered ``ep``; ``names`` remembers each distribution's name.

    Why remember: a distribution's name is parsed out of its METADATA file on every ask
    (~2 ms), and one distribution registers several families (curate nine): asked once each,
    shell completion would pay ~20 ms for it (issue 36)."""
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "?"
    if id(dist) not in names:
        name = getattr(dist, "name", None)
        names[id(dist)] = str(name) if name else "?"
    return names[id(dist)]


@cache
def entries() -> tuple[FamilyEntry, ...]:
    """Every registered family, without importing any: curate's own first, then plug-ins.

    A name registered twice with different values keeps its first registration (so a plug-in
    cannot silently replace a built-in family).
    """
    from importlib import metadata

    found: list[tuple[str, str, str]] = []  # (name, value, package)
    dist_names: dict[int, str] = {}
    points = list(metadata.entry_points(group=GROUP))  # kept alive: their ids key `names`
    for ep in points:
        found.append((ep.name.strip().lower(), ep.value.strip(), _package_of(ep, dist_names)))
    own = [f for f in found if _normal(f[2]) == _OWN]
    if not own:  # a source checkout without (current) metadata: the built-ins as declared
        own = [(name, value, _OWN) for name, value in BUILTIN.items()]
    # Metadata lists names alphabetically; the table's order puts each family's own name first.
    order = list(BUILTIN)
    own.sort(key=lambda f: order.index(f[0]) if f[0] in order else len(order))
    others = [f for f in found if _normal(f[2]) != _OWN]
    by_value: dict[str, tuple[list[str], str]] = {}
    taken: set[str] = set()
    for name, value, package in own + others:
        if name in taken:
            continue
        taken.add(name)
        names, _ = by_value.setdefault(value, ([], package))
        names.append(name)
    return tuple(
        FamilyEntry(tuple(names), value, package) for value, (names, package) in by_value.items()
    )


def _normal(dist_name: str) -> str:
    return dist_name.lower().replace("_", "-").replace(".", "-")


@cache
def _load(entry: FamilyEntry, name: str) -> Family:
    from importlib import metadata

    where = f"family {name!r} (registered by {entry.package} as {entry.value})"
    try:
        ep = metadata.EntryPoint(name=name, value=entry.value, group=GROUP)
        fam = ep.load()
    except ImportError as e:
        missing = getattr(e, "name", None)
        what = f"missing module {missing!r}" if missing else " ".join(str(e).split())
        raise FamilyLoadError(
            f"{where} cannot be loaded: {what}; install what it needs or uninstall {entry.package}"
        ) from None
    except Exception as e:  # a plug-in's own bug must still be one line, not a traceback
        raise FamilyLoadError(
            f"{where} cannot be loaded: {type(e).__name__}: {' '.join(str(e).split())}"
        ) from None
    from curate.families.base import Family

    if not isinstance(fam, Family):
        raise FamilyLoadError(f"{where} is a {type(fam).__name__}, not a curate Family")
    return fam


def _try_all() -> tuple[dict[str, Family], dict[str, str]]:
    loaded: dict[str, Family] = {}
    broken: dict[str, str] = {}
    for entry in entries():
        try:
            fam = entry.load()
        except FamilyLoadError as e:
            broken[entry.names[0]] = str(e)
            continue
        loaded.setdefault(fam.name, fam)
    return dict(sorted(loaded.items())), broken


def all_families() -> dict[str, Family]:
    """Every family that loads, by canonical name (imports them all; a broken one is skipped)."""
    return _try_all()[0]


def broken_families() -> dict[str, str]:
    """Registered families that cannot be loaded: first entry-point name → the one-line reason."""
    return _try_all()[1]


def get_family(name: str) -> Family:
    """Look a family up by name or alias (``knowledge-editing`` or ``mquake``).

    Imports only the family asked for when an entry-point name matches; raises
    :class:`FamilyLoadError` if that family cannot be imported and :class:`UsageError` for a name
    no family has.
    """
    key = name.strip().lower()
    for entry in entries():
        if key in entry.names:
            return entry.load(key)
    loaded, broken = _try_all()
    for fam in loaded.values():
        if key == fam.name or key in fam.aliases:
            return fam
    known = ", ".join(
        [
            f"{f.name} (alias {', '.join(f.aliases)})" if f.aliases else f.name
            for f in loaded.values()
        ]
        + [f"{n} (cannot be loaded)" for n in broken]
    )
    raise UsageError(f"unknown family {name!r}; known: {known}")


def refresh() -> None:
    """Forget what was discovered (after installing a plug-in at run time, and in tests)."""
    entries.cache_clear()
    _load.cache_clear()
