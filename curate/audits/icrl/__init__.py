"""In-context RL rules: the file, task groups, episodes and rewards, actions, duplicates.

Rules read the compact tables of :mod:`curate.schemas.icrl_tables`: metadata rules the ``tasks``
table the reader builds without touching array data, array rules the tables of the one scan
(the shared table ``scan`` in :mod:`.registry`). Codes: ``RL0xx`` the file as storage,
``RL1xx`` structure and metadata, ``RL2xx`` episodes and rewards, ``RL3xx`` action and
observation values, ``RL4xx`` duplicates and overlap between files. Modules are imported here
in code order, which is the order ``curate rules`` lists them in.
"""

from __future__ import annotations

# isort: off
from curate.audits.icrl import format  # noqa: F401  (RL0xx)
from curate.audits.icrl import structure  # noqa: F401  (RL1xx)
from curate.audits.icrl import episodes  # noqa: F401  (RL2xx)
from curate.audits.icrl import actions  # noqa: F401  (RL3xx)
from curate.audits.icrl import duplicates  # noqa: F401  (RL4xx)

# isort: on
from curate.audits.icrl.registry import RULES, SCAN

__all__ = ["RULES", "SCAN"]
