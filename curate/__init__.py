"""curate: validate, audit, fix and republish machine-learning datasets.

The library API is what the CLI calls and what tests exercise directly:

- :func:`curate.families.get_family` finds a dataset family (schema + reader + rules + fixes);
- :meth:`Family.load` reads files into a :class:`~curate.dataset.LoadedDataset`;
- :func:`curate.engine.run_audit` runs the family's rules and returns a :class:`~curate.findings.Report`.
"""

__version__ = "0.1.0"
