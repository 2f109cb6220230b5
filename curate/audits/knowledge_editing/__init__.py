"""Knowledge-editing (MQuAKE) rules: structure, contamination, conflicts, duplicates.

Every rule is a vectorised pass over the ``cases``/``hops``/``edits`` tables of
:class:`~curate.schemas.knowledge_editing_tables.KEData` (built by the reader,
:mod:`curate.families.knowledge_editing`): joins and group-bys, never a Python loop over pairs of
cases. Docstrings are the rules' documentation (``curate rules knowledge-editing``).

Codes: ``KE0xx`` schema and integrity, ``KE1xx`` structure of one case, ``KE2xx`` contamination
for an edit set, ``KE3xx`` conflicting edits, ``KE4xx`` duplicates.

Modules: :mod:`.registry` (the rule set, relations), :mod:`.structure` (KE0xx, KE1xx),
:mod:`.contamination` (edit sets, the ``edited`` and ``contamination`` tables, KE2xx),
:mod:`.conflicts` (KE3xx), :mod:`.duplicates` (KE4xx). Fixes are the findings' edits
(KE110, KE201/202, KE401), applied by :mod:`curate.core.fixes`. They are
imported here in code order, so importing this package registers every rule, in that order.
"""

from __future__ import annotations

# Import order is registration order (``curate rules`` lists rules in it): keep it by code, and
# keep isort from sorting it alphabetically.
# isort: off
from curate.audits.knowledge_editing import structure  # noqa: F401  (KE0xx, KE1xx)
from curate.audits.knowledge_editing import contamination  # noqa: F401  (KE2xx)
from curate.audits.knowledge_editing import conflicts  # noqa: F401  (KE3xx)
from curate.audits.knowledge_editing import duplicates  # noqa: F401  (KE4xx)

# isort: on
from curate.audits.knowledge_editing.contamination import applied_edits, resolve_edit_set
from curate.audits.knowledge_editing.registry import MAX_LISTED, RELATIONS, RULES

__all__ = [
    "MAX_LISTED",
    "RELATIONS",
    "RULES",
    "applied_edits",
    "resolve_edit_set",
]
