"""curate: validate, audit, fix and republish machine-learning datasets.

The library API is what the CLI calls and what tests exercise directly:

- :func:`curate.families.get_family` finds a dataset family (schema + reader + rules + fixes);
- ``Family.load`` reads files into a :class:`~curate.families.LoadedDataset`;
- ``Family.audit`` runs the family's rules and returns a :class:`~curate.findings.Report`;
- ``Family.fix`` and :func:`curate.export.write_hf_dataset` write the remastered dataset.
"""

__version__ = "0.1.0"
