"""The glycan rule set and the constants its rule modules share.

A module of its own so that every rule module registers on the one :data:`RULES` without
importing the others; the package's ``__init__`` imports them in code order, which is the order
``curate rules`` lists them in.
"""

from __future__ import annotations

from curate.core.rules import RuleSet

RULES = RuleSet("glycan")
MAX_LISTED = 20
SINGLE_LABEL = ("immunogenicity", "glycosylation")
