"""The Hugging Face dataset folder curate exports: parquet shards per split under ``data/``, the
card (``README.md`` with YAML metadata and the audit summary), Croissant metadata and the
changelog, staged and renamed into place as one output (:mod:`curate.core.outputs`).

Why one writer for every family: ``datasets.load_dataset(folder)`` must load each family's
export the same way, and the card's ``configs``/``dataset_info`` must agree with the files
written; a family hands over its splits as Arrow streams (:mod:`curate.core.streams`) and never
writes parquet itself.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from curate.core.dataset import ChangeEntry
from curate.core.errors import UsageError, arg
from curate.core.findings import Report, json_bytes
from curate.core.outputs import staged_folder
from curate.core.streams import SplitData, SplitStream
from curate.publish.card import card_body
from curate.publish.croissant import croissant_metadata
from curate.publish.metadata import (
    DEFAULT_MAX_ROWS_PER_SHARD,
    SPLIT_NAME,
    CardInfo,
    check_language,
    check_license,
    size_category,
)
from curate.publish.shards import (
    MAX_ROW_GROUP_BYTES,
    MAX_SHARD_BYTES,
    Limits,
    declared_features,
    write_split,
)
from curate.reports.render import render_json


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

    ``out`` goes through the output gate (:mod:`curate.core.outputs`): refused when it holds or is
    one
    of ``inputs``, replaced (with ``overwrite``) only when curate wrote it. ``marker`` is the
    ``.curate/manifest.json`` content that proves it later.

    ``after`` (``curate fix``): the re-audit of the fixed data. Then ``report`` is written as
    ``audit.before.json`` (the input) and ``after`` as ``audit.after.json`` (what is published),
    and the card summarises the published data, saying which report is which; without it the
    one report is ``audit.json``.
    """
    out = Path(out)
    _check_tables(tables, max_rows_per_shard)  # before the gate creates anything
    with staged_folder(out, inputs=inputs, overwrite=overwrite, marker=marker) as tmp:
        write_hf_folder(
            tmp,
            tables,
            card,
            features=features,
            report=report,
            after=after,
            changelog=changelog,
            extra_files=extra_files,
            max_rows_per_shard=max_rows_per_shard,
            max_shard_bytes=max_shard_bytes,
            max_row_group_bytes=max_row_group_bytes,
        )
    return out


def _check_tables(tables: Mapping[str, SplitData], max_rows_per_shard: int | None) -> None:
    if not tables:
        raise UsageError("nothing to export: no valid records")
    seen: dict[str, str] = {}
    for split in tables:
        if not SPLIT_NAME.match(split):
            raise UsageError(f"split name {split!r} is not a valid Hugging Face split name")
        # data/Eval-*.parquet and data/eval-*.parquet are one file where case is not told
        # apart (macOS, Windows): the second split would be written over the first
        if (other := seen.setdefault(split.lower(), split)) != split:
            raise UsageError(
                f"splits {other!r} and {split!r} differ only in case: their files would be one "
                f"file on a case-insensitive file system (map one onto the other with "
                f"{arg('--split-map')})"
            )
    if max_rows_per_shard is not None and max_rows_per_shard < 1:
        raise UsageError(f"{arg('--max-rows-per-shard')} must be at least 1")


def write_hf_folder(
    tmp: Path,
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
) -> None:
    """:func:`write_hf_dataset` into ``tmp``, a staging folder of the output gate the caller
    holds (``curate fix`` stages its output before the fix passes run, so that they are written
    on the output's file system)."""
    from datasets.info import DatasetInfo, DatasetInfosDict
    from datasets.splits import SplitDict, SplitInfo
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    _check_tables(tables, max_rows_per_shard)
    license = check_license(card.license)
    language = [check_language(c) for c in card.language]
    streams = {split: _as_stream(data) for split, data in tables.items()}
    feats = declared_features(features, [s.schema for s in streams.values()])
    schema = feats.arrow_schema  # carries the ``huggingface`` metadata into every file
    limits = Limits(max_rows_per_shard, max_shard_bytes, max_row_group_bytes)

    (tmp / "data").mkdir()
    results = {
        split: write_split(tmp, split, stream, schema, limits) for split, stream in streams.items()
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
    body = card_body(card, {s: r.rows for s, r in results.items()}, report, changelog, after)
    (tmp / "README.md").write_text(f"---\n{card_data.to_yaml()}\n---\n\n{body}", encoding="utf-8")
    shards = [s for r in results.values() for s in r.shards]
    doc = croissant_metadata(card, feats, shards, license=license, language=language)
    (tmp / "croissant.json").write_bytes(json_bytes(doc, indent=True))
    write_side_files(tmp, report=report, after=after, changelog=changelog, extra_files=extra_files)


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
    :func:`curate.core.outputs.staged_folder`. ``configs`` (config name -> builder parameters)
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
    body = card_body(
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
