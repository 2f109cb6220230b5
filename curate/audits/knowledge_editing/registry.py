"""The knowledge-editing rule set and the constants its rule modules share.

A module of its own so that every rule module (``structure``, ``contamination``, ``conflicts``,
``duplicates``) registers on the one :data:`RULES` without importing the others; the package's
``__init__`` imports them in code order, which is the order ``curate rules`` lists them in.
"""

from __future__ import annotations

import json
from importlib.resources import files

from curate.core.rules import RuleSet

RULES = RuleSet("knowledge-editing")

#: The 44 Wikidata relations MQuAKE has templates for (data, not code).
RELATIONS: dict[str, str] = json.loads(
    (files("curate") / "data" / "mquake_relations.json").read_text(encoding="utf-8")
)["relations"]

#: How many contaminating / conflicting edits a finding lists in ``details`` (counts are exact).
MAX_LISTED = 20
