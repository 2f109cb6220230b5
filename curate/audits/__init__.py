"""Audit rules, one module per dataset family (``knowledge_editing`` holds the MQuAKE rules)."""
