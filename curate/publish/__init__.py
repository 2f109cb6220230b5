"""Publishing a dataset: the Hugging Face folder (:mod:`~curate.publish.folder`) with its parquet
shards per split (:mod:`~curate.publish.shards`), the card's metadata
(:mod:`~curate.publish.metadata`)
and body with the audit summary (:mod:`~curate.publish.card`), Croissant
(:mod:`~curate.publish.croissant`), the Hub push (:mod:`~curate.publish.hub`), and the offline
check of a card against what the Hub verifies (:mod:`~curate.publish.cardcheck`).

May import: ``curate.core``, ``curate.io``, ``curate.families`` and ``curate.reports`` (the
card carries the audit summary).
"""
