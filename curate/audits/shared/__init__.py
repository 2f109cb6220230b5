"""Family-agnostic checks, driven by the keys and texts a family declares rather than written
once per family: exact duplicates and split / cross-dataset leakage
(:mod:`~curate.audits.shared.duplicates`, polars joins over a family's key table, declared with
:class:`curate.core.keys.Keys`) and near-duplicate texts (:mod:`~curate.audits.shared.minhash`,
MinHash + LSH).

May import: ``curate.core`` and ``curate.io``; nothing family-specific.
"""
