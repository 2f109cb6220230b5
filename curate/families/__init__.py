"""Dataset families and their registry.

A family is one schema module (``curate.schemas.<family>``), one rules module
(``curate.audits.<family>``) and one module here that ties them to a reader, fixes and export.
Each module in this package that defines ``FAMILY`` is found by :func:`all_families`, so adding a
family touches no core file.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from curate.errors import UsageError
from curate.families.base import Family, FixResult, LoadedDataset

__all__ = ["Family", "FixResult", "LoadedDataset", "all_families", "get_family"]


@cache
def all_families() -> dict[str, Family]:
    """Every registered family by canonical name, discovered from this package's modules."""
    found: dict[str, Family] = {}
    for mod in pkgutil.iter_modules(__path__):
        if mod.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{mod.name}")
        fam = getattr(module, "FAMILY", None)
        if isinstance(fam, Family):
            found[fam.name] = fam
    return dict(sorted(found.items()))


def get_family(name: str) -> Family:
    """Look a family up by name or alias (``knowledge-editing`` or ``mquake``)."""
    key = name.strip().lower()
    for fam in all_families().values():
        if key == fam.name or key in fam.aliases:
            return fam
    known = ", ".join(
        f"{f.name} (alias {', '.join(f.aliases)})" if f.aliases else f.name
        for f in all_families().values()
    )
    raise UsageError(f"unknown family {name!r}; known: {known}")
