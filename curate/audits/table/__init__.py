"""The ``table`` family's rules: any table, driven by its declaration (``--id``, ``--label``,
``--split``, ``--text``, ``--group``, ``--key``, ``--schema``).

Codes: ``TB0xx`` schema and cell types (:mod:`.schema`; TB003 mixed kinds in a column and
TB004 splits outside train/validation/test, :mod:`.columns`), ``TB1xx`` columns (single-value,
identifier-label correlation, :mod:`.columns`), ``TB2xx`` label distribution
(:mod:`.distribution`), ``TB3xx`` labels: conflicts (:mod:`.labels`) and label issues by
confident learning (:mod:`.label_issues`), ``TB4xx`` duplicates and split leakage
(:mod:`.duplicates`), near-duplicates within and across
splits (:mod:`.near`). :mod:`.registry` holds the rule set and the shared tables. Imported in
code order, the order ``curate rules table`` lists them in.
"""

from __future__ import annotations

# isort: off
from curate.audits.table import schema  # noqa: F401  (TB001, TB002)
from curate.audits.table import columns  # noqa: F401  (TB003, TB004, TB1xx)
from curate.audits.table import distribution  # noqa: F401  (TB2xx)
from curate.audits.table import labels  # noqa: F401  (TB301)
from curate.audits.table import label_issues  # noqa: F401  (TB302)
from curate.audits.table import duplicates  # noqa: F401  (TB4xx)
from curate.audits.table import near  # noqa: F401  (TB404, TB406)

# isort: on
from curate.audits.table.registry import RULES

__all__ = ["RULES"]
