"""Overlap between datasets (``curate overlap``): key sets per dataset, Jaccard and containment
matrices (:mod:`~curate.overlap.sets`), and their figures, the UpSet plot and the heat map
(:mod:`~curate.overlap.plot`).

May import: everything below the API (``curate.core`` to ``curate.publish``).
"""
