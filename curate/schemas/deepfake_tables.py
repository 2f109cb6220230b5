"""The deepfake family's normalised tables, and the key tables built from them.

The reader (:mod:`curate.families.deepfake`) turns each manifest into one frame of normalised
rows (:attr:`DeepfakeData.rows`): ``row`` (position across the inputs), ``record`` (the sample
id), ``input`` (which file), every field of :data:`~curate.schemas.deepfake.FIELDS` in its
canonical form, and ``valid``. Repeated strings are held compactly: closed vocabularies
(split, modality, label, av_label) as ``pl.Enum``, open ones (set, generator, language, ...)
as ``pl.Categorical``; a million rows of "train"/"fake"/"video" cost a byte or four each.

Key tables (public, for the rules, ``curate overlap`` and the media scan):

* :func:`content_table` — one row per sample with a content hash: the **seam** between the
  manifest and the files. Today the hash is the manifest's ``sha256`` column; when the media
  scan has hashed the files it sets :attr:`DeepfakeData.computed_hashes` (``row``, ``sha256``)
  and the computed hash wins over the manifest's (``hash_source`` says which one a row has).
* :func:`identity_table` — one row per (sample, identity role): subject, face-swap source,
  face-swap target.
* :func:`content_keys`, :func:`identity_keys`, :func:`generator_sets` — the named overlap keys
  (content hash, subject id, generator set per set/source dataset) as plain frames.
* :func:`later_copies`, :func:`cross_split_copies` — the two joins behind every duplicate and
  leakage rule (and the benchmark, which times exactly these).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl

from curate.dataset import LoadedDataset
from curate.schemas.deepfake import IDENTITY_FIELDS, SPLIT_ORDER, AvLabel, Label, Modality

__all__ = [
    "AV_LABEL",
    "LABEL",
    "MODALITY",
    "SPLIT",
    "DeepfakeData",
    "content_keys",
    "content_table",
    "cross_split_copies",
    "generator_sets",
    "identity_keys",
    "identity_table",
    "later_copies",
]

SPLIT = pl.Enum(list(SPLIT_ORDER))
MODALITY = pl.Enum([m.value for m in Modality])
LABEL = pl.Enum([x.value for x in Label])
AV_LABEL = pl.Enum([x.value for x in AvLabel])
ROLE = pl.Enum(["subject", "source", "target"])
#: rows below 2**40 (a trillion); the split rank sits above them in one Int64
_SHIFT = 1 << 40


@dataclass
class DeepfakeData(LoadedDataset):
    #: Normalised rows (see the module doc), every input one after the other.
    rows: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: The inputs' own columns as read (text), row-aligned with ``rows``: kept for export.
    raw: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: Per input: field → the source column it was read from.
    columns: list[dict[str, str]] = field(default_factory=list)
    #: Per input: the folder relative ``path`` values are resolved against.
    media_roots: list[str] = field(default_factory=list)
    #: Hashes of the files themselves (``row``: Int64, ``sha256``: lower-case hex), set by the
    #: media scan; None until then. Wins over the manifest's ``sha256`` in :func:`content_table`.
    computed_hashes: pl.DataFrame | None = None
    stats: dict[str, Any] = field(default_factory=dict)
    #: Derived frames shared within one run (the data never changes).
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def paths(self) -> list[str]:
        return [i.path for i in self.inputs]

    def valid_rows(self) -> pl.DataFrame:
        return self.rows.filter(pl.col("valid"))


def content_table(data: DeepfakeData) -> pl.DataFrame:
    """Valid samples with a content hash: ``row``, ``record``, ``split``, ``set``,
    ``source_dataset``, ``label``, ``modality``, ``generator``, ``sha256`` (lower-case hex),
    ``key`` (the hash as 32 bytes: what duplicates are grouped by), ``hash_source``
    (``computed`` | ``manifest``)."""
    if "content" in data.cache:
        return data.cache["content"]
    rows = data.valid_rows().select(
        "row",
        "record",
        "split",
        "set",
        "source_dataset",
        "label",
        "modality",
        "generator",
        pl.col("sha256").alias("manifest_sha256"),
    )
    if data.computed_hashes is not None and data.computed_hashes.height:
        computed = data.computed_hashes.select(
            pl.col("row").cast(pl.Int64), pl.col("sha256").cast(pl.String).alias("computed_sha256")
        )
        rows = rows.join(computed, on="row", how="left", maintain_order="left")
    else:
        rows = rows.with_columns(pl.lit(None, pl.String).alias("computed_sha256"))
    out = (
        rows.with_columns(
            pl.coalesce("computed_sha256", "manifest_sha256").alias("sha256"),
            pl.when(pl.col("computed_sha256").is_not_null())
            .then(pl.lit("computed"))
            .otherwise(pl.lit("manifest"))
            .cast(pl.Categorical)
            .alias("hash_source"),
        )
        .filter(pl.col("sha256").is_not_null())
        .with_columns(pl.col("sha256").str.decode("hex").alias("key"))
        .drop("computed_sha256", "manifest_sha256")
    )
    data.cache["content"] = out
    return out


def identity_table(data: DeepfakeData) -> pl.DataFrame:
    """One row per (valid sample, identity it shows): ``row``, ``record``, ``split``, ``set``,
    ``role`` (subject | source | target), ``identity``. A face swap shows two people (the
    source face on the target's head), so both count for subject-disjoint splits."""
    if "identities" in data.cache:
        return data.cache["identities"]
    rows = data.valid_rows()
    parts = [
        rows.select(
            "row",
            "record",
            "split",
            "set",
            pl.lit(role, ROLE).alias("role"),
            pl.col(f).cast(pl.String).alias("identity"),
        ).filter(pl.col("identity").is_not_null())
        for f, role in zip(IDENTITY_FIELDS, ("subject", "source", "target"), strict=True)
    ]
    out = pl.concat(parts).with_columns(pl.col("identity").cast(pl.Categorical))
    data.cache["identities"] = out
    return out


# --------------------------------------------------------------------------- the two joins


def later_copies(df: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Rows of ``df`` (with ``row``) that repeat an earlier row of their ``by`` group, with
    ``first_row`` (the earliest row of the group). One window: a hash group-by in polars.

    Exact-duplicate rules call it with ``by=["key", "split"]`` (copies within a split)."""
    return df.with_columns(pl.col("row").min().over(by).alias("first_row")).filter(
        pl.col("row") != pl.col("first_row")
    )


def cross_split_copies(df: pl.DataFrame, key: str = "key") -> pl.DataFrame:
    """Rows whose ``key`` also occurs in an *earlier* split (train < validation < test), with
    ``first_split`` (the earliest split the key is in) and ``first_row`` (its first row there).

    The leakage pattern of every split-disjointness rule: the copy in the later split is the
    one an evaluation should not have seen. Rows without a split take no part."""
    s = df.filter(pl.col("split").is_not_null()).with_columns(
        # rank and row in one integer: its minimum is the first row of the earliest split
        ((pl.col("split").to_physical().cast(pl.Int64) * _SHIFT) + pl.col("row")).alias("__order")
    )
    first = pl.col("__order").min().over(key)
    hits = s.with_columns(first.alias("__first")).filter(
        (pl.col("__order") // _SHIFT) > (pl.col("__first") // _SHIFT)
    )
    names = pl.Series(list(SPLIT_ORDER), dtype=pl.String)
    return (
        hits.with_columns(
            (pl.col("__first") % _SHIFT).alias("first_row"),
            (pl.col("__first") // _SHIFT)
            .replace_strict(list(range(len(names))), names, return_dtype=pl.String)
            .alias("first_split"),
        )
        .drop("__order", "__first")
        .sort("row")
    )


# --------------------------------------------------------------------------- overlap keys


def content_keys(data: DeepfakeData) -> pl.DataFrame:
    """The content-hash overlap key: ``split``, ``set``, ``source_dataset``, ``key`` (sha256
    hex) per sample with a hash (manifest or computed)."""
    return content_table(data).select(
        "split", "set", "source_dataset", pl.col("sha256").alias("key")
    )


def identity_keys(data: DeepfakeData) -> pl.DataFrame:
    """The identity overlap key: ``split``, ``set``, ``role``, ``key`` (the identity)."""
    return identity_table(data).select(
        "split", "set", "role", pl.col("identity").cast(pl.String).alias("key")
    )


def generator_sets(data: DeepfakeData, by: str = "set") -> pl.DataFrame:
    """The generator-set overlap key: per ``by`` group (``set`` or ``source_dataset``; all
    rows together as ``""`` when the manifest has no such column), the sorted distinct
    generators of its fake rows: ``group``, ``generators`` (list of strings)."""
    rows = data.valid_rows().filter(pl.col("generator").is_not_null())
    return (
        rows.select(
            pl.col(by).cast(pl.String).fill_null("").alias("group"),
            pl.col("generator").cast(pl.String),
        )
        .group_by("group")
        .agg(pl.col("generator").unique().sort().alias("generators"))
        .sort("group")
    )
