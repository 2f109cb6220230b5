"""Writing a Hugging Face dataset folder: parquet shards per split, a dataset card, Croissant.

Layout (what ``datasets.load_dataset(folder)``, the Hub and ``mlcroissant`` read)::

    folder/
      README.md                          dataset card: YAML (configs, dataset_info, license, ...)
                                         then the audit and changelog summaries
      croissant.json                     Croissant 1.0 metadata: every shard with its sha256,
                                         one RecordSet per config whose fields are the features
      data/<split>-00000-of-00002.parquet
      changelog.jsonl                    (after ``curate fix``) one line per change
      audit.json                         the audit report of what was exported

Data arrives per split as an Arrow table or as a *stream* of record batches
(:class:`SplitStream`), and is written batch by batch with one ``ParquetWriter`` per shard, so
memory follows the batch, not the dataset. Shards are cut by size the way ``datasets`` cuts them
(at most :data:`MAX_SHARD_BYTES` of uncompressed Arrow data per file, its ``max_shard_size``
default) and hold row groups of at most :data:`MAX_ROW_GROUP_BYTES` (the Hub's Dataset Viewer
reads a row group at a time and gives up on bigger ones). How many shards a split has is known
only at its end, so shards are written under temporary names and renamed to
``<split>-0000i-of-0000n.parquet`` when the split is done.

Every parquet file carries the ``huggingface`` schema metadata (``{"info": {"features": ...}}``,
what ``Dataset.to_parquet`` writes), so ``datasets`` restores the exact declared Features. The
card's ``dataset_info`` follows the ``datasets`` conventions: ``num_bytes`` is the uncompressed
Arrow size of a split (as read back from the files), ``download_size`` the sum of the parquet file
sizes, ``dataset_size`` the sum of ``num_bytes``.

The card's YAML is produced by ``huggingface_hub``/``datasets`` themselves (DatasetCardData,
DatasetInfosDict, MetadataConfigs), not hand-written, so the Hub and ``load_dataset`` read exactly
what they expect. The whole folder is written to a temporary sibling and renamed into place, so a
failed export never leaves a half-written dataset behind.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from curate import __version__
from curate.dataset import ChangeEntry
from curate.errors import InputError, RemoteError, UsageError, arg
from curate.findings import Report, json_bytes
from curate.outputs import staged_folder
from curate.reports import render_json, render_markdown
from curate.streams import SplitData, SplitStream

#: Uncompressed Arrow bytes per parquet file: ``datasets``' default ``max_shard_size`` ("500MB").
MAX_SHARD_BYTES = 500_000_000
#: Uncompressed Arrow bytes per row group: the Dataset Viewer's limit (``datasets``' "100MB").
MAX_ROW_GROUP_BYTES = 100_000_000
#: No row limit by default: shards are cut by size; ``--max-rows-per-shard`` adds one.
DEFAULT_MAX_ROWS_PER_SHARD: int | None = None
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")
#: The curate project's README, named in every card's footer. A path, not a link: curate has no
#: public URL yet, and a relative link in a card would resolve against the dataset's own repo.
PROJECT_README = "README.md in curate's source tree"


# --------------------------------------------------------------------------- card metadata


@cache
def hub_licenses() -> dict[str, str]:
    """The Hub's licence identifiers (identifier → full name), in the Hub's order.

    Neither ``huggingface_hub`` nor ``datasets`` ships the list; ``curate/data/hub_licenses.json``
    is a copy of the table on https://huggingface.co/docs/hub/repositories-licenses (its
    ``_source`` key names the commit of huggingface/hub-docs it was copied from).
    """
    text = resources.files("curate").joinpath("data/hub_licenses.json").read_text("utf-8")
    return dict(json.loads(text)["licenses"])


def check_license(license: str) -> str:
    """The Hub identifier for ``license`` (case-insensitive), or UsageError listing them all.

    Why refuse: the Hub accepts any text in ``license:`` but then shows no licence and offers no
    filter on it; a typo (``cc-by-4``) silently publishes a dataset as unlicensed.
    """
    known = hub_licenses()
    wanted = license.strip().lower()
    if wanted in known:
        return wanted
    close = difflib.get_close_matches(wanted, list(known), n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    raise UsageError(
        f"{arg('--license', license, quoted=True)} is not a Hub licence identifier{hint}; "
        "use one of: "
        + ", ".join(known)
        + " (https://huggingface.co/docs/hub/repositories-licenses)"
    )


@cache
def _language_codes() -> frozenset[str]:
    """ISO 639-1/2/3 codes and the Hub's special values, from ``datasets``' own resource file."""
    try:
        text = resources.files("datasets.utils.resources").joinpath("languages.json").read_text()
        return frozenset(json.loads(text))
    except (OSError, ModuleNotFoundError, ValueError):  # a datasets without the file: no check
        return frozenset()


def check_language(code: str) -> str:
    """``code`` if the Hub knows it as a language (``en``, ``fra``, ``code``, ...), else exit 2."""
    codes = _language_codes()
    value = code.strip()
    if not codes or value in codes:
        return value
    if value.lower() in codes:
        return value.lower()
    raise UsageError(
        f"{arg('--language', code, quoted=True)} is not an ISO 639-1, 639-2 or 639-3 code the "
        "Hub knows (e.g. en, de, fra, or 'code', 'multilingual'); see datasets' languages.json"
    )


#: ``size_categories`` buckets, exactly the Hub's labels (``datasets``' size_categories.json):
#: the label applies to ``n < bound``. ``n>1T`` takes everything from 10**12 on.
SIZE_BUCKETS: tuple[tuple[int, str], ...] = (
    (10**3, "n<1K"),
    (10**4, "1K<n<10K"),
    (10**5, "10K<n<100K"),
    (10**6, "100K<n<1M"),
    (10**7, "1M<n<10M"),
    (10**8, "10M<n<100M"),
    (10**9, "100M<n<1B"),
    (10**10, "1B<n<10B"),
    (10**11, "10B<n<100B"),
    (10**12, "100B<n<1T"),
)


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` bucket for ``n`` rows (10**k rows open the next bucket)."""
    for bound, label in SIZE_BUCKETS:
        if n < bound:
            return label
    return "n>1T"


@dataclass
class CardInfo:
    """What the dataset card says besides the data itself."""

    pretty_name: str
    license: str = "unknown"
    task_categories: Sequence[str] = ()
    description: str = ""
    source_files: Sequence[str] = ()
    extra_sections: list[str] = field(default_factory=list)
    tags: Sequence[str] = ()
    language: Sequence[str] = ()
    #: The Hub's ``source_datasets`` (e.g. ``original``, ``extended|squad``, a repo id).
    source_datasets: Sequence[str] = ()
    #: What curate did to produce the folder, in order, as the footer says it ("audited",
    #: "fixed", "exported"): only steps that really happened.
    steps: Sequence[str] = ("exported",)


# --------------------------------------------------------------------------- writing


@dataclass
class _SplitResult:
    rows: int = 0
    num_bytes: int = 0
    shards: list[tuple[str, int, str]] = field(default_factory=list)  # (relpath, size, sha256)


def write_hf_dataset(
    out: str | Path,
    tables: Mapping[str, SplitData],
    card: CardInfo,
    *,
    features: Any = None,
    report: Report | None = None,
    after: Report | None = None,
    changelog: Sequence[ChangeEntry] | None = None,
    extra_files: dict[str, bytes] | None = None,
    max_rows_per_shard: int | None = DEFAULT_MAX_ROWS_PER_SHARD,
    max_shard_bytes: int = MAX_SHARD_BYTES,
    max_row_group_bytes: int = MAX_ROW_GROUP_BYTES,
    overwrite: bool = False,
    inputs: Sequence[str | Path] = (),
    marker: dict[str, Any] | None = None,
) -> Path:
    """Write ``tables`` (split → table or stream of batches) as a Hub-layout folder at ``out``.

    ``features`` (``datasets.Features`` or an Arrow schema) declares the columns; without it they
    come from the tables' and streams' schemas, unified across splits (a null-only column in one
    split takes the other splits' type). Every batch is cast to the declared schema.

    ``out`` goes through the output gate (:mod:`curate.outputs`): refused when it holds or is one
    of ``inputs``, replaced (with ``overwrite``) only when curate wrote it. ``marker`` is the
    ``.curate/manifest.json`` content that proves it later.

    ``after`` (``curate fix``): the re-audit of the fixed data. Then ``report`` is written as
    ``audit.before.json`` (the input) and ``after`` as ``audit.after.json`` (what is published),
    and the card summarises the published data, saying which report is which; without it the
    one report is ``audit.json``.
    """
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    out = Path(out)
    if not tables:
        raise UsageError("nothing to export: no valid records")
    for split in tables:
        if not _SPLIT_NAME.match(split):
            raise UsageError(f"split name {split!r} is not a valid Hugging Face split name")
    if max_rows_per_shard is not None and max_rows_per_shard < 1:
        raise UsageError(f"{arg('--max-rows-per-shard')} must be at least 1")
    license = check_license(card.license)
    language = [check_language(c) for c in card.language]
    streams = {split: _as_stream(data) for split, data in tables.items()}
    feats = _declared_features(features, [s.schema for s in streams.values()])
    schema = feats.arrow_schema  # carries the ``huggingface`` metadata into every file
    limits = _Limits(max_rows_per_shard, max_shard_bytes, max_row_group_bytes)

    with staged_folder(out, inputs=inputs, overwrite=overwrite, marker=marker) as tmp:
        (tmp / "data").mkdir()
        results = {
            split: _write_split(tmp, split, stream, schema, limits)
            for split, stream in streams.items()
        }
        split_dict = SplitDict()
        for split, res in results.items():
            split_dict.add(SplitInfo(name=split, num_bytes=res.num_bytes, num_examples=res.rows))
        download_size = sum(size for r in results.values() for _, size, _ in r.shards)
        info = DatasetInfo(
            features=feats,
            splits=split_dict,
            download_size=download_size,
            dataset_size=sum(r.num_bytes for r in results.values()),
        )
        total = sum(r.rows for r in results.values())
        card_data = DatasetCardData(
            license=license,
            language=language or None,
            task_categories=list(card.task_categories) or None,
            size_categories=[size_category(total)],
            source_datasets=list(card.source_datasets) or None,
            tags=list(dict.fromkeys(card.tags)) or None,
            pretty_name=card.pretty_name,
        )
        data_files = [{"split": s, "path": f"data/{s}-*"} for s in results]
        MetadataConfigs({"default": {"data_files": data_files}}).to_dataset_card_data(card_data)
        DatasetInfosDict({"default": info}).to_dataset_card_data(card_data)
        body = _card_body(card, {s: r.rows for s, r in results.items()}, report, changelog, after)
        (tmp / "README.md").write_text(
            f"---\n{card_data.to_yaml()}\n---\n\n{body}", encoding="utf-8"
        )
        shards = [s for r in results.values() for s in r.shards]
        doc = croissant_metadata(card, feats, shards, license=license, language=language)
        (tmp / "croissant.json").write_bytes(json_bytes(doc, indent=True))
        write_side_files(
            tmp, report=report, after=after, changelog=changelog, extra_files=extra_files
        )
    return out


def write_side_files(
    folder: Path,
    *,
    report: Report | None,
    after: Report | None,
    changelog: Sequence[ChangeEntry] | None,
    extra_files: dict[str, bytes] | None,
) -> None:
    """The reports, changelog and side files every output folder gets (see
    :func:`write_hf_dataset` for which report is written under which name)."""
    if report is not None and after is not None:
        (folder / "audit.before.json").write_text(render_json(report), encoding="utf-8")
        (folder / "audit.after.json").write_text(render_json(after), encoding="utf-8")
    elif report is not None:
        (folder / "audit.json").write_text(render_json(report), encoding="utf-8")
    if changelog is not None:
        with open(folder / "changelog.jsonl", "wb") as fh:
            for c in changelog:
                fh.write(json_bytes(c.to_json()) + b"\n")
    for name, blob in (extra_files or {}).items():
        (folder / name).write_bytes(blob)


def write_files_card(
    folder: Path,
    card: CardInfo,
    files: Mapping[str, int],
    *,
    report: Report | None = None,
    after: Report | None = None,
    changelog: Sequence[ChangeEntry] | None = None,
    extra_files: dict[str, bytes] | None = None,
    configs: Mapping[str, dict[str, Any]] | None = None,
) -> None:
    """The card and side files of an output folder whose data a family wrote itself in its own
    format (an HDF5 file, not parquet shards): ``files`` maps each data file's name to the
    records it holds.

    The card's YAML has the Hub's licence, name, tags and size, and ``configs`` naming the data
    files, one config per file (the first the default), so ``datasets.load_dataset(folder)``
    reads them with the builder their extension selects (``hdf5`` for HDF5) and never the JSON
    reports beside them: without ``configs`` it infers the data from the folder's commonest
    format, and that is the reports. One config per file because files of such formats need not
    share a structure (XLand files differ in task groups and history length). No Croissant
    file, which describes parquet record sets. ``folder`` is a staging folder of
    :func:`curate.outputs.staged_folder`. ``configs`` (config name -> builder parameters)
    replaces the one config per file when the family knows a file needs several (an HDF5 file
    whose groups hold unequal numbers of rows: see :func:`curate.families.icrl_publish.configs`).
    """
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    license = check_license(card.license)
    language = [check_language(c) for c in card.language]
    card_data = DatasetCardData(
        license=license,
        language=language or None,
        task_categories=list(card.task_categories) or None,
        size_categories=[size_category(sum(files.values()))],
        source_datasets=list(card.source_datasets) or None,
        tags=list(dict.fromkeys(card.tags)) or None,
        pretty_name=card.pretty_name,
    )
    names = sorted(files)
    if configs:
        MetadataConfigs({k: dict(v) for k, v in configs.items()}).to_dataset_card_data(card_data)
    elif names:
        made: dict[str, dict[str, Any]] = {}
        for i, name in enumerate(names):
            entry: dict[str, Any] = {"data_files": [{"split": "train", "path": name}]}
            if len(names) > 1 and i == 0:
                entry["default"] = True
            made["default" if len(names) == 1 else _config_name(name, made)] = entry
        MetadataConfigs(made).to_dataset_card_data(card_data)
    body = _card_body(
        card, dict(files), report, changelog, after, contents=("Files", "file", "records")
    )
    (folder / "README.md").write_text(f"---\n{card_data.to_yaml()}\n---\n\n{body}", "utf-8")
    write_side_files(
        folder, report=report, after=after, changelog=changelog, extra_files=extra_files
    )


def _config_name(file: str, taken: Mapping[str, Any]) -> str:
    """A config name for one data file: its stem, made unique."""
    stem = Path(file).name.split(".", 1)[0] or "data"
    name, n = stem, 2
    while name in taken:
        name, n = f"{stem}-{n}", n + 1
    return name


def _as_stream(data: SplitData) -> SplitStream:
    if isinstance(data, SplitStream):
        return data
    if isinstance(data, pa.Table):
        return SplitStream.from_table(data)
    # A bare iterable of batches: its schema is the first batch's (read ahead once).
    it = iter(data)
    first = next(it, None)
    if first is None:
        raise UsageError("a split stream yielded no record batch and declares no schema")
    used = False

    def batches() -> Iterator[pa.RecordBatch]:
        nonlocal used
        if used:
            raise RuntimeError("a bare iterator of record batches can be read only once")
        used = True
        yield first
        yield from it

    return SplitStream(first.schema, batches)


def _declared_features(features: Any, schemas: list[pa.Schema]):
    """``datasets.Features`` to write: the given ones, or the splits' schemas unified."""
    import datasets

    if features is not None:
        if isinstance(features, pa.Schema):
            return datasets.Features.from_arrow_schema(features)
        return datasets.Features(features)
    plain = list(dict.fromkeys(s.remove_metadata() for s in schemas))
    unified = plain[0] if len(plain) == 1 else pa.unify_schemas(plain, promote_options="permissive")
    return datasets.Features.from_arrow_schema(unified)


@dataclass(frozen=True)
class _Limits:
    rows: int | None
    shard_bytes: int
    group_bytes: int


class _ShardWriter:
    """Writes one split: row groups buffered up to the byte limit, shards cut by bytes/rows."""

    def __init__(self, folder: Path, split: str, schema: pa.Schema, limits: _Limits) -> None:
        self.folder = folder
        self.split = split
        self.schema = schema
        self.limits = limits
        self.paths: list[Path] = []
        self.writer: pq.ParquetWriter | None = None
        self.shard_rows = 0  # written into the open shard
        self.shard_bytes = 0
        self.pending: list[pa.RecordBatch] = []  # the next row group
        self.pending_rows = 0
        self.pending_bytes = 0
        self.rows = 0

    # capacity left in the open shard / row group
    def _room_rows(self) -> int | None:
        if self.limits.rows is None:
            return None
        return self.limits.rows - self.shard_rows - self.pending_rows

    def _room_bytes(self) -> int:
        return min(
            self.limits.shard_bytes - self.shard_bytes - self.pending_bytes,
            self.limits.group_bytes - self.pending_bytes,
        )

    def add(self, batch: pa.RecordBatch) -> None:
        offset, n = 0, batch.num_rows
        while offset < n:
            room_rows = self._room_rows()
            take = n - offset if room_rows is None else min(n - offset, room_rows)
            if take <= 0:
                self._close_shard()
                continue
            piece = batch.slice(offset, take)
            size = piece.nbytes
            room = self._room_bytes()
            while size > room and take > 1:
                # shrink by the average row size, at least by one row per step
                take = max(1, min(take - 1, int(take * room / size)))
                piece = batch.slice(offset, take)
                size = piece.nbytes
            if size > room:  # not even one row fits what is left
                if self.pending_rows:  # a new row group first, then try again
                    self._flush_group()
                    continue
                if self.shard_rows and self.limits.shard_bytes - self.shard_bytes < size:
                    self._close_shard()  # a new shard, then try again
                    continue
                # else: one row bigger than a row group may be; it gets a row group of its own
            self.pending.append(piece)
            self.pending_rows += take
            self.pending_bytes += size
            offset += take
            if self.pending_bytes >= self.limits.group_bytes:
                self._flush_group()
            if self._room_rows() == 0:
                self._close_shard()
        self.rows += n

    def _flush_group(self) -> None:
        if not self.pending:
            return
        if self.writer is None:
            path = self.folder / f".{self.split}-{len(self.paths):05d}.parquet.partial"
            self.paths.append(path)
            self.writer = pq.ParquetWriter(path, self.schema, compression="zstd")
        group = pa.Table.from_batches(self.pending, schema=self.schema)
        self.writer.write_table(group, row_group_size=max(1, group.num_rows))
        self.shard_rows += self.pending_rows
        self.shard_bytes += self.pending_bytes
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0

    def _close_shard(self) -> None:
        self._flush_group()
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.shard_rows = self.shard_bytes = 0

    def finish(self) -> list[Path]:
        """Close the last shard and give every shard its final name (``-of-`` the total)."""
        self._close_shard()
        if not self.paths:  # an empty split still gets a (row-less) file, so it loads
            path = self.folder / f".{self.split}-00000.parquet.partial"
            pq.write_table(self.schema.empty_table(), path, compression="zstd")
            self.paths.append(path)
        n = len(self.paths)
        final = []
        for i, path in enumerate(self.paths):
            target = self.folder / f"{self.split}-{i:05d}-of-{n:05d}.parquet"
            os.replace(path, target)
            final.append(target)
        return final


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` with exactly ``schema``'s columns and types (metadata included)."""
    if batch.schema.remove_metadata() == schema.remove_metadata():
        return pa.RecordBatch.from_arrays(batch.columns, schema=schema)
    extra = [n for n in batch.schema.names if n not in schema.names]
    if extra:
        raise UsageError(f"a record batch has columns the features do not declare: {extra}")
    arrays = [
        batch.column(f.name) if f.name in batch.schema.names else pa.nulls(len(batch), f.type)
        for f in schema
    ]
    try:
        return pa.RecordBatch.from_arrays(
            [
                a.cast(f.type) if a.type != f.type else a
                for a, f in zip(arrays, schema, strict=True)
            ],
            schema=schema,
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise UsageError(f"a record batch does not fit the declared features: {e}") from None


def _write_split(
    folder: Path, split: str, stream: SplitStream, schema: pa.Schema, limits: _Limits
) -> _SplitResult:
    writer = _ShardWriter(folder / "data", split, schema, limits)
    try:
        for batch in stream:
            if batch.num_rows:
                writer.add(_conform(batch, schema))
        paths = writer.finish()
    finally:
        if writer.writer is not None:
            writer.writer.close()
    if stream.num_rows is not None and stream.num_rows != writer.rows:
        raise InputError(
            f"split {split}: expected {stream.num_rows} records, read {writer.rows} "
            "(did an input change during the export?)"
        )
    result = _SplitResult(rows=writer.rows)
    for path in paths:
        # num_bytes as ``datasets`` counts it: the Arrow size of the data read back from the file
        # (row group by row group, so memory stays at one row group).
        pf = pq.ParquetFile(path)
        result.num_bytes += sum(
            pf.read_row_group(i).nbytes for i in range(pf.metadata.num_row_groups)
        )
        result.shards.append((f"data/{path.name}", path.stat().st_size, _sha256(path)))
    return result


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------- Croissant

CROISSANT_CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

#: ``datasets`` Value dtypes → Croissant 1.0 data types (schema.org's atomic types).
_CROISSANT_TYPES = {
    "bool": "sc:Boolean",
    "string": "sc:Text",
    "large_string": "sc:Text",
    "string_view": "sc:Text",
    "null": "sc:Text",
    "date32": "sc:Date",
    "date64": "sc:Date",
    "binary": "sc:Text",
    "large_binary": "sc:Text",
}
_CROISSANT_ID = re.compile(r"[^a-zA-Z0-9\-_.]")
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _croissant_type(dtype: str) -> str:
    if dtype in _CROISSANT_TYPES:
        return _CROISSANT_TYPES[dtype]
    if re.match(r"^u?int\d+$", dtype):
        return "sc:Integer"
    if re.match(r"^float\d+$", dtype):
        return "sc:Float"
    if dtype.startswith(("timestamp", "time", "date")):
        return "sc:Date"
    return "sc:Text"


def _json_path_key(name: str) -> str:
    """A struct key as a JSONPath step (``['odd key']`` when it is not a plain name)."""
    if _PLAIN_KEY.match(name):
        return name
    return "['" + name.replace("\\", "\\\\").replace("'", "\\'") + "']"


#: A shard's path → its split: ``data/<split>-00000-of-00001.parquet`` (``fullpath`` may carry a
#: folder before ``data/``).
#: It also matches a bare split name: mlcroissant applies the transform again to the value it
#: extracted, and would warn once per record otherwise.
_SPLIT_FROM_PATH = r"^(?:(?:.*/)?data/)?(.+?)(?:-[0-9]+-of-[0-9]+\.parquet)?$"


def _split_of(path: str) -> str:
    m = re.match(_SPLIT_FROM_PATH, path)
    assert m is not None, path
    return m.group(1)


def croissant_metadata(
    card: CardInfo,
    features: Any,
    shards: Sequence[tuple[str, int, str]],
    *,
    config: str = "default",
    license: str | None = None,
    language: Sequence[str] = (),
) -> dict[str, Any]:
    """Croissant 1.0 JSON-LD for an exported folder.

    ``distribution``: one ``cr:FileObject`` per parquet shard (relative ``contentUrl``, size,
    sha256) and one ``cr:FileSet`` per config holding them (``data/*.parquet``).
    ``recordSet``: a ``cr:Split`` set naming the splits, then one per config; a ``split`` field
    (read from each shard's path) and one ``cr:Field`` per feature, nested the way the features
    are: a struct becomes a field with ``subField`` entries read by ``jsonPath`` from the column,
    a list is ``repeated`` (Croissant 1.0 has no multi-dimensional arrays: a list of lists is
    one repeated field whose values keep their nesting).
    """
    fileset = f"parquet-files-{config}"
    ids: set[str] = set()

    def unique(raw: str, parent: str = "") -> str:
        # ``/`` separates a field's id from its parent's; any other odd character becomes ``_``
        out = (f"{parent}/" if parent else "") + _CROISSANT_ID.sub("_", raw)
        while out in ids:
            out += "_0"
        ids.add(out)
        return out

    def to_field(fid: str, name: str, column: str, feature: Any, path: list[str]) -> dict:
        from datasets import LargeList, List, Value

        repeated = False
        while isinstance(feature, List | LargeList):
            repeated = True
            feature = feature.feature
        out: dict[str, Any] = {"@type": "cr:Field", "@id": fid, "name": name}
        if isinstance(feature, dict):
            out["subField"] = [
                to_field(unique(key, fid), key, column, sub, [*path, _json_path_key(key)])
                for key, sub in feature.items()
            ]
        else:
            dtype = feature.dtype if isinstance(feature, Value) else "string"
            source: dict[str, Any] = {"fileSet": {"@id": fileset}, "extract": {"column": column}}
            if path:
                source["transform"] = [{"jsonPath": p} for p in path]
            out["dataType"] = _croissant_type(dtype)
            out["source"] = source
        if repeated:
            out["repeated"] = True
        return out

    distribution: list[dict[str, Any]] = [
        {
            "@type": "cr:FileObject",
            "@id": unique(path),
            "name": path,
            "contentUrl": path,
            "contentSize": f"{size} B",
            "encodingFormat": "application/x-parquet",
            "sha256": digest,
        }
        for path, size, digest in shards
    ]
    distribution.append(
        {
            "@type": "cr:FileSet",
            "@id": unique(fileset),
            "name": fileset,
            "description": f"The parquet shards of the {config} config (every split).",
            "encodingFormat": "application/x-parquet",
            "includes": "data/*.parquet",
        }
    )
    record_id = unique(config)
    fields = [
        to_field(unique(name, record_id), name, name, feature, [])
        for name, feature in features.items()
    ]
    # The split of a record is the file it sits in (data/<split>-NNNNN-of-NNNNN.parquet), as on
    # the Hub: a ``cr:Split`` record set names the splits and each record's ``split`` field is
    # read from its file's path, so ``mlcroissant`` users can filter train from test.
    split_names = list(dict.fromkeys(_split_of(path) for path, _, _ in shards))
    splits_id = unique("splits")
    split_key = unique("name", splits_id)
    split_name = next(n for n in ("split", "hf_split", "curate_split") if n not in features)
    fields.append(
        {
            "@type": "cr:Field",
            "@id": unique(split_name, record_id),
            "name": split_name,
            "description": "The split the record belongs to (from its file name).",
            "dataType": "sc:Text",
            "source": {
                "fileSet": {"@id": fileset},
                "extract": {"fileProperty": "fullpath"},
                "transform": {"regex": _SPLIT_FROM_PATH},
            },
            "references": {"field": {"@id": split_key}},
        }
    )
    doc: dict[str, Any] = {
        "@context": CROISSANT_CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": card.pretty_name,
        "description": card.description or card.pretty_name,
        "license": license or card.license,
        "url": "README.md",
        "version": "1.0.0",
        "keywords": list(dict.fromkeys([*card.task_categories, *card.tags])),
        "distribution": distribution,
        "recordSet": [
            {
                "@type": "cr:RecordSet",
                "dataType": "cr:Split",
                "@id": splits_id,
                "name": "splits",
                "description": "The splits of the dataset.",
                "key": {"@id": split_key},
                "field": [
                    {"@type": "cr:Field", "@id": split_key, "name": "name", "dataType": "sc:Text"}
                ],
                "data": [{split_key: name} for name in split_names],
            },
            {
                "@type": "cr:RecordSet",
                "@id": record_id,
                "name": config,
                "description": f"The records of the {config} config, every split.",
                "field": fields,
            },
        ],
    }
    if language:
        doc["inLanguage"] = list(language)
    if card.source_datasets:
        doc["isBasedOn"] = list(card.source_datasets)
    return doc


# --------------------------------------------------------------------------- card body


def _card_body(
    card: CardInfo,
    rows: dict[str, int],
    report: Report | None,
    changelog: Sequence[ChangeEntry] | None,
    after: Report | None = None,
    contents: tuple[str, str, str] = ("Splits", "split", "rows"),
) -> str:
    lines = [f"# {card.pretty_name}", ""]
    if card.description:
        lines += [card.description, ""]
    heading, key, count = contents
    lines += [f"## {heading}", "", f"| {key} | {count} |", "|---|---:|"]
    lines += [f"| {s} | {n} |" for s, n in rows.items()]
    lines.append("")
    if card.source_files:
        lines += ["## Source", ""] + [f"- `{p}`" for p in card.source_files] + [""]
    if after is not None and report is not None:
        b, a = report.summary(), after.summary()
        lines += [
            "## Audit of the published data",
            "",
            "This is the re-audit of the fixed data in this folder (`audit.after.json`). The "
            "audit of the input before fixing is `audit.before.json`: "
            f"{b['findings']} findings in {b['records_with_findings']} of {b['records']} "
            f"records then, {a['findings']} in {a['records_with_findings']} of {a['records']} "
            "now.",
            "",
            render_markdown(after, heading_level=2),
        ]
    elif report is not None:
        lines.append(render_markdown(report, heading_level=2))
    if changelog is not None:
        lines += ["## Changelog summary", ""]
        if not changelog:
            lines.append("No changes.")
        else:
            per_rule: dict[tuple[str, str], int] = {}
            for c in changelog:
                key = (c.rule, c.field or "<record>")
                per_rule[key] = per_rule.get(key, 0) + 1
            lines += ["| rule | field | changes |", "|---|---|---:|"]
            lines += [f"| {r} | `{f}` | {n} |" for (r, f), n in sorted(per_rule.items())]
            lines += [
                "",
                "Every change is listed in `changelog.jsonl` (record, field, old, new, "
                "rule, reason, and the finding that asked for it).",
            ]
        lines.append("")
    lines += card.extra_sections
    lines.append(footer(card.steps))
    return "\n".join(lines) + "\n"


def check_repo_id(repo_id: str) -> None:
    """``--push-to-hub OWNER/NAME`` checked before any work: the ``hub`` extra is installed and
    the id is one the Hub accepts (exit 2 otherwise, nothing exported)."""
    try:
        from huggingface_hub.utils import HFValidationError, validate_repo_id
    except ImportError:
        raise RemoteError(
            "--push-to-hub needs huggingface_hub (pip install 'curate[hub]')"
        ) from None
    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        msg = " ".join(str(e).split())[:200]
        raise UsageError(
            f"--push-to-hub {repo_id!r}: not a valid dataset repo id ({msg})"
        ) from None


def footer(steps: Sequence[str]) -> str:
    """The card's last line: curate's version and only the steps that happened."""
    done = list(dict.fromkeys(steps)) or ["exported"]
    said = done[0] if len(done) == 1 else ", ".join(done[:-1]) + " and " + done[-1]
    return (
        f"Produced by curate {__version__}: {said}. "
        f"About curate: the {PROJECT_README} (no public URL yet)."
    )


def push_to_hub(folder: str | Path, repo_id: str, *, private: bool = False) -> Any:
    """Upload an exported folder as a dataset repo (needs ``huggingface_hub`` and a token).

    Every failure of the remote side (offline, no login, no permission, a bad repo id, HTTP
    errors) is a :class:`~curate.errors.RemoteError`: exit 2 with one line, and the exported
    folder stays where it is, so the user can push it again without re-exporting. The marker
    folder ``.curate/`` (local paths of the inputs) is not uploaded.
    """
    try:
        from huggingface_hub import HfApi
    except ImportError:
        raise RemoteError(
            f"--push-to-hub needs huggingface_hub (pip install 'curate[hub]'); "
            f"the exported folder {folder} stays"
        ) from None
    try:
        api = HfApi()
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        return api.upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type="dataset",
            ignore_patterns=[".curate/*"],
        )
    except Exception as e:  # network, auth, HTTP, validation: all are the remote's answer
        msg = " ".join(str(e).split())[:300] or type(e).__name__
        raise RemoteError(
            f"push to {repo_id} failed ({type(e).__name__}: {msg}); "
            f"the exported folder {folder} stays"
        ) from None
