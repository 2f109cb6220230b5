"""Deepfake rules: schema, labels, manifest metadata, duplicates, leakage, subjects, language.

All rules read the normalised rows of :mod:`curate.schemas.deepfake_tables` and are columnar
polars passes (joins, group-bys, windows): no Python per row. Codes: ``DF0xx`` schema, ``DF1xx``
labels and manifest metadata, ``DF2xx`` files and media (reserved for the media scan), ``DF3xx``
duplicates and leakage, ``DF4xx`` subjects, demographics and language.

Modules: :mod:`.registry` (rule set, shared tables), :mod:`.schema` (DF001), :mod:`.labels`
(DF101-DF104), :mod:`.metadata` (DF110-DF111), :mod:`.files` (DF201-DF210, the media scan),
:mod:`.duplicates` (DF301-DF305),
:mod:`.subjects` (DF401-DF402), :mod:`.language` (DF403). Imported in code order, which is
the order ``curate rules`` lists them in.
"""

from __future__ import annotations

# isort: off
from curate.audits.deepfake import schema  # noqa: F401  (DF0xx)
from curate.audits.deepfake import labels  # noqa: F401  (DF10x)
from curate.audits.deepfake import metadata  # noqa: F401  (DF11x)
from curate.audits.deepfake import files  # noqa: F401  (DF2xx)
from curate.audits.deepfake import duplicates  # noqa: F401  (DF3xx)
from curate.audits.deepfake import subjects  # noqa: F401  (DF40x)
from curate.audits.deepfake import language  # noqa: F401  (DF403)

# isort: on
from curate.audits.deepfake.registry import CONTENT, IDENTITIES, RULES

__all__ = ["CONTENT", "IDENTITIES", "RULES"]
