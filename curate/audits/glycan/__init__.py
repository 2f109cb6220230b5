"""Glycan rules: parseability, label hygiene, taxonomy hierarchy, conflicts, duplicates, leakage.

All rules read the normalised frames of :mod:`curate.schemas.glycan_tables` (built by the reader,
:mod:`curate.families.glycan`) and work on canonical keys
(:func:`curate.schemas.iupac.canonical_key`), so two spellings of one glycan are one glycan.
Codes: ``GL0xx`` schema, ``GL1xx`` sequences, ``GL2xx`` label values, ``GL3xx`` label consistency
and duplicates, ``GL4xx`` leakage, ``GL5xx`` class distribution, ``GL6xx`` interaction matrices.

Modules: :mod:`.registry` (the rule set), :mod:`.labels` (label forms, GL2xx), :mod:`.sequences`
(GL0xx, GL1xx), :mod:`.hierarchy` (GL301 and its resolution), :mod:`.duplicates` (GL302–GL304),
:mod:`.label_issues` (GL305, confident learning on :mod:`.features` of the parsed structure),
:mod:`.leakage` (GL4xx and the grouped re-split), :mod:`.distribution` (GL501), :mod:`.matrix`
(GL6xx). Fixes are edits carried by the findings (:mod:`curate.core.fixes` applies them). The rule
modules are imported here in code order, so importing this package registers every rule, in
that order.
"""

from __future__ import annotations

# Import order is registration order (``curate rules`` lists rules in it): keep it by code, and
# keep isort from sorting it alphabetically.
# isort: off
from curate.audits.glycan import sequences  # noqa: F401  (GL0xx, GL1xx)
from curate.audits.glycan import labels  # noqa: F401  (GL2xx)
from curate.audits.glycan import hierarchy  # noqa: F401  (GL301)
from curate.audits.glycan import duplicates  # noqa: F401  (GL302-GL304)
from curate.audits.glycan import label_issues  # noqa: F401  (GL305)
from curate.audits.glycan import leakage  # noqa: F401  (GL4xx)
from curate.audits.glycan import distribution  # noqa: F401  (GL501)
from curate.audits.glycan import matrix  # noqa: F401  (GL6xx)

# isort: on
from curate.audits.glycan.duplicates import ceiling_accuracy
from curate.audits.glycan.leakage import regroup_split
from curate.audits.glycan.registry import MAX_LISTED, RULES, SINGLE_LABEL

__all__ = [
    "MAX_LISTED",
    "RULES",
    "SINGLE_LABEL",
    "ceiling_accuracy",
    "regroup_split",
]
