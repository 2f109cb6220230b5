"""The deepfake rule set, its shared tables, and the helpers its rule modules share.

A module of its own so that every rule module registers on the one :data:`RULES` without
importing the others.

Shared tables (declared by the rules that read them, built once per audit):

* :data:`CONTENT` — :func:`~curate.schemas.deepfake_tables.content_table`: one row per valid
  sample with a content hash (``row, record, split, set, source_dataset, label, modality,
  generator, sha256, key, hash_source``). Today the hash comes from the manifest's ``sha256``;
  the media scan sets ``DeepfakeData.computed_hashes`` and then the files' own hashes win.
* :data:`IDENTITIES` — :func:`~curate.schemas.deepfake_tables.identity_table`: one row per
  (sample, identity shown): ``row, record, split, set, role, identity``.

Codes: ``DF0xx`` schema, ``DF1xx`` labels and manifest metadata, ``DF2xx`` files and media
(the media scan's), ``DF3xx`` duplicates and leakage, ``DF4xx`` subjects, demographics, language.
"""

from __future__ import annotations

import polars as pl

from curate.core.findings import empty_rule_output
from curate.core.rules import AuditContext, RuleSet
from curate.schemas.deepfake_tables import DeepfakeData, content_table, identity_table

RULES = RuleSet("deepfake")

CONTENT = "content"
IDENTITIES = "identities"
#: At most this many records named in one finding's details.
MAX_LISTED = 20


@RULES.table(CONTENT)
def _content(ctx: AuditContext) -> pl.DataFrame:
    data = ctx.data
    assert isinstance(data, DeepfakeData)
    if "files" in ctx.builders and data.computed_hashes is None:
        ctx.table("files")  # the media scan first: the files' own hashes win over the manifest's
    return content_table(data)


@RULES.table(IDENTITIES)
def _identities(ctx: AuditContext) -> pl.DataFrame:
    data = ctx.data
    assert isinstance(data, DeepfakeData)
    return identity_table(data)


def valid(data: DeepfakeData) -> pl.DataFrame:
    return data.valid_rows()


def file_of(data: DeepfakeData) -> pl.Expr:
    """The input path of each row (``input`` index → path), for ``details.file``."""
    paths = [i.path for i in data.inputs]
    return pl.col("input").replace_strict(
        list(range(len(paths))), paths, return_dtype=pl.String, default=None
    )


__all__ = ["CONTENT", "IDENTITIES", "MAX_LISTED", "RULES", "empty_rule_output", "file_of", "valid"]
