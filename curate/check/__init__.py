"""``curate check``, the CI data check: the project configuration (:mod:`~curate.check.config`),
the baseline of accepted findings (:mod:`~curate.check.baseline`) and the run over every
configured dataset (:mod:`~curate.check.run`).

May import: ``curate.api`` and everything below it; only the CLI imports this package.
"""
