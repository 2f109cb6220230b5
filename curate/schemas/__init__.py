"""Pydantic v2 models, one module per dataset family.

The schema is a plain typed class; a record that does not fit becomes a finding with the record
id and field path (errors are data, not exceptions to grep).
"""
