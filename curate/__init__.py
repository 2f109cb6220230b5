"""curate: validate, audit, fix and republish machine-learning datasets.

The Python API (see ``docs/api.md``)::

    import curate
    report = curate.audit("mquake", "data.json", edit_set="random:100")
    report.findings          # polars DataFrame; report.to_pandas() for pandas
    curate.fix("glycan", "taxonomy.csv", out="fixed/")
    curate.export("mquake", "data.json", out="hf/")

The functions are loaded on first use (``curate.audit`` imports :mod:`curate.api`), so that
``import curate`` and the command line start without loading polars, pyarrow and pydantic twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from curate.core.version import __version__

_API = ("load", "audit", "fix", "export", "diff", "Outcome", "StrictRefusal")

if TYPE_CHECKING:
    from curate.api import Outcome, StrictRefusal, audit, diff, export, fix, load


def __getattr__(name: str) -> Any:
    if name in _API:
        from curate import api

        return getattr(api, name)
    raise AttributeError(f"module 'curate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_API])


__all__ = ["Outcome", "StrictRefusal", "__version__", "audit", "diff", "export", "fix", "load"]
