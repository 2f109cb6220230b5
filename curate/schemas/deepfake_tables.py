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

The two joins behind every duplicate and leakage rule are the shared ones
(:mod:`curate.audits.shared.duplicates`), fed with these tables and :func:`hash_keys`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from curate.core.dataset import LoadedDataset
from curate.core.keys import Keys
from curate.io.read import SPLIT_FROM_LAYOUT
from curate.schemas.deepfake import FIELDS, IDENTITY_FIELDS, SPLIT_ORDER, AvLabel, Label, Modality

__all__ = [
    "AV_LABEL",
    "CONTENT_KEYS",
    "GENERATOR_KEYS",
    "IDENTITY_KEYS",
    "LABEL",
    "MODALITY",
    "SPLIT",
    "SUBJECT_KEYS",
    "DeepfakeData",
    "content_keys",
    "content_table",
    "generator_key_table",
    "generator_sets",
    "hash_keys",
    "identity_keys",
    "identity_table",
    "subject_key_table",
]

SPLIT = pl.Enum(list(SPLIT_ORDER))
MODALITY = pl.Enum([m.value for m in Modality])
LABEL = pl.Enum([x.value for x in Label])
AV_LABEL = pl.Enum([x.value for x in AvLabel])
ROLE = pl.Enum(["subject", "source", "target"])

#: The family's declarations for the shared duplicate and leakage joins: two rows are the same
#: sample when their content hash is (``key`` of :func:`content_table`), the same person when
#: an identity is (``identity`` of :func:`identity_table`); neither may cross splits. The
#: content key is also ``curate overlap --key content``: the family attaches its table builder
#: (which reads the media first, :meth:`Keys.read_by`).
CONTENT_KEYS = Keys(
    "content",
    ("key",),
    order=SPLIT_ORDER,
    doc="content hash of the sample: the file's sha256 (read from the files unless "
    "--no-files), else the manifest's sha256 column; samples with neither are left out",
)
IDENTITY_KEYS = Keys("identity", ("identity",), order=SPLIT_ORDER)


@dataclass
class DeepfakeData(LoadedDataset):
    #: Normalised rows (see the module doc), every input one after the other.
    rows: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: The inputs' own columns as read (text), row-aligned with ``rows``: kept for export.
    raw: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: Columns whose values were strings in a typed input (JSON): published as text, where
    #: a CSV's columns are typed by their spelling.
    text_columns: frozenset[str] = frozenset()
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

    def record_splits(self) -> pl.DataFrame | None:
        """Each row's split (``row``, ``split``), for the HTML report's split filter."""
        return self.rows.select("row", pl.col("split").cast(pl.String))

    def valid_rows(self) -> pl.DataFrame:
        return self.rows.filter(pl.col("valid"))

    def extra_columns(self) -> list[str]:
        """The inputs' columns mapped to no field: published as read, beside the fields (so a
        row is the same as another only if these are equal too, DF301)."""
        mapped = {c for m in self.columns for c in m.values()}
        return [
            c
            for c in self.raw.columns
            if c not in mapped and c not in FIELDS and c != SPLIT_FROM_LAYOUT
        ]

    def named_files(self) -> list[str]:
        """Every media file the manifest names, as an absolute path, valid row or not: the
        user's data, which no report may replace. Known once the manifest is read, so that the
        output gate refuses such a target as an input before the audit hashes the media."""
        named: list[str] = []
        if self.rows.height and {"path", "input"} <= set(self.rows.columns):
            roots = [str(r) for r in self.media_roots] or [os.getcwd()]
            rows = (
                self.rows.filter(pl.col("path").is_not_null())
                .select("input", pl.col("path").cast(pl.String))
                .unique(maintain_order=True)
            )
            for i, p in rows.iter_rows():
                root = roots[i] if isinstance(i, int) and 0 <= i < len(roots) else roots[0]
                named.append(os.path.abspath(os.path.join(root, p)))
        return list(dict.fromkeys([*named, *self.read_files]))


def content_table(data: DeepfakeData) -> pl.DataFrame:
    """Valid samples with a content hash: ``row``, ``record``, ``split``, ``set``,
    ``source_dataset``, ``label``, ``modality``, ``generator``, ``sha256`` (lower-case hex),
    ``key`` (the digest: what duplicates are grouped by), ``key64`` (a 64-bit hash of it: the
    prefilter, see :func:`hash_keys`), ``hash_source``
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
        .drop("computed_sha256", "manifest_sha256")
    )
    out = hash_keys(out)
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


def hash_keys(df: pl.DataFrame, column: str = "sha256") -> pl.DataFrame:
    """``df`` plus ``key`` (the hex digest of ``column`` itself: what duplicates are grouped
    by, exactly), ``key64`` (a 64-bit hash of it) and ``repeated`` (is this row's ``key64``
    shared with another row: the prefilter).

    Why: grouping 10 M rows by a 64-character string is several times slower than by an
    integer. The joins below keep only the ``repeated`` rows (two different digests share a
    64-bit hash about once in 2**64 pairs), then group those few candidates by the full
    ``key``: exact whatever the hash does, and fast. The repeated hash values come from one
    sort (equal neighbours) and a membership test against those few, 3x faster than
    ``is_duplicated`` (a hash table over every row). Decoding the hex to 32 bytes would cost
    more than the whole join, so the digest stays text."""
    out = df.with_columns(pl.col(column).alias("key"), pl.col(column).hash().alias("key64"))
    ordered = out["key64"].sort()
    shared = ordered.filter(ordered == ordered.shift(1))
    return out.with_columns(pl.col("key64").is_in(shared.implode()).alias("repeated"))


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


def subject_key_table(data: LoadedDataset) -> pl.DataFrame:
    """``record, split, key``: one row per (valid sample, identity it shows), as DF401
    compares them (:func:`identity_table`)."""
    assert isinstance(data, DeepfakeData)
    return identity_table(data).select(
        pl.col("record").cast(pl.String),
        pl.col("split").cast(pl.String),
        pl.col("identity").cast(pl.String).alias("key"),
    )


def generator_key_table(data: LoadedDataset) -> pl.DataFrame:
    """``record, split, key``: the generator of each valid fake sample."""
    assert isinstance(data, DeepfakeData)
    return (
        data.valid_rows()
        .filter(pl.col("generator").is_not_null())
        .select(
            pl.col("record").cast(pl.String),
            pl.col("split").cast(pl.String),
            pl.col("generator").cast(pl.String).alias("key"),
        )
    )


#: ``curate overlap``'s other deepfake keys: the people a subject-disjoint split keeps apart,
#: and the generators a dataset covers.
SUBJECT_KEYS = Keys(
    "subject",
    ("key",),
    order=SPLIT_ORDER,
    doc="identity shown by a sample: subject_id, and a face swap's source_id and "
    "target_id (the people a subject-disjoint split keeps apart)",
    table=subject_key_table,
)
GENERATOR_KEYS = Keys(
    "generator",
    ("key",),
    order=SPLIT_ORDER,
    doc="generator of a fake sample (set-valued across a dataset: which generation "
    "techniques it covers, as ILLUSION's Jaccard table compares them)",
    table=generator_key_table,
)
