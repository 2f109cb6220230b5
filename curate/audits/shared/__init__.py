"""Family-agnostic checks, driven by the keys and texts a family declares rather than written
once per family: exact duplicates and split / cross-dataset leakage
(:mod:`~curate.audits.shared.duplicates`, polars joins over a family's key table, declared with
:class:`curate.core.keys.Keys`), near-duplicates (:mod:`~curate.audits.shared.near`: any pair
source — perceptual hashes of images, MinHash + LSH of texts from
:mod:`~curate.audits.shared.minhash` — turned into row pairs oriented later copy vs earlier
original by the declared split order) and conflicting labels
(:mod:`~curate.audits.shared.conflicts`: records equal on a key whose labels disagree).

May import: ``curate.core`` and ``curate.io``; nothing family-specific.
"""
