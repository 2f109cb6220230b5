"""Family-agnostic checks, driven by the keys and texts a family declares rather than written
once per family: near-duplicate texts (:mod:`~curate.audits.shared.minhash`, MinHash + LSH).

May import: ``curate.core`` and ``curate.io``; nothing family-specific.
"""
