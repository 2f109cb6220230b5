"""Audit rules: ``audits/<family>/`` holds one family's own rules, split by concern
(``knowledge_editing`` holds the MQuAKE rules), and ``audits/shared/`` the family-agnostic
checks any family gets from what it declares.

May import: ``curate.core``, ``curate.io`` and ``curate.schemas``; never ``curate.families``
(the families import their rules, not the other way round).
"""
