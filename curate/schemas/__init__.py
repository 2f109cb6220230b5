"""Pydantic v2 models and table types, one module per dataset family, with each family's
options model.

The schema is a plain typed class; a record that does not fit becomes a finding with the record
id and field path (errors are data, not exceptions to grep).

May import: ``curate.core`` and ``curate.io``.
"""
