"""Writing a Hugging Face dataset folder: parquet shards per split plus a dataset card.

Layout (what ``datasets.load_dataset(folder)`` and the Hub read)::

    folder/
      README.md                          dataset card: YAML (configs, dataset_info, license, ...)
                                         then the audit and changelog summaries
      data/<split>-00000-of-00002.parquet
      changelog.jsonl                    (after ``curate fix``) one line per change
      audit.json                         the audit report of what was exported

The card's YAML is produced by ``huggingface_hub``/``datasets`` themselves (DatasetCardData,
DatasetInfosDict, MetadataConfigs), not hand-written, so the Hub and ``load_dataset`` read exactly
what they expect. The whole folder is written to a temporary sibling and renamed into place, so a
failed export never leaves a half-written dataset behind.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import RemoteError, UsageError
from curate.families.base import ChangeEntry
from curate.findings import Report, json_bytes
from curate.outputs import staged_folder
from curate.reports import render_json, render_markdown

DEFAULT_MAX_ROWS_PER_SHARD = 100_000
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")


@dataclass
class CardInfo:
    """What the dataset card says besides the data itself."""

    pretty_name: str
    license: str = "unknown"
    task_categories: Sequence[str] = ()
    description: str = ""
    source_files: Sequence[str] = ()
    extra_sections: list[str] = field(default_factory=list)


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` bucket for ``n`` rows."""
    bounds = [
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
        (100_000_000, "10M<n<100M"),
        (1_000_000_000, "100M<n<1B"),
    ]
    for bound, label in bounds:
        if n < bound:
            return label
    return "n>1T" if n >= 10**12 else "1B<n<10B"


def write_hf_dataset(
    out: str | Path,
    tables: dict[str, pa.Table],
    card: CardInfo,
    *,
    report: Report | None = None,
    changelog: Sequence[ChangeEntry] | None = None,
    extra_files: dict[str, bytes] | None = None,
    max_rows_per_shard: int = DEFAULT_MAX_ROWS_PER_SHARD,
    overwrite: bool = False,
    inputs: Sequence[str | Path] = (),
    marker: dict[str, Any] | None = None,
) -> Path:
    """Write ``tables`` (split → Arrow table) as a Hub-layout dataset folder at ``out``.

    ``out`` goes through the output gate (:mod:`curate.outputs`): refused when it holds or is one
    of ``inputs``, replaced (with ``overwrite``) only when curate wrote it. ``marker`` is the
    ``.curate/manifest.json`` content that proves it later.
    """
    import datasets
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
    schemas = {t.schema.remove_metadata() for t in tables.values()}
    if len(schemas) > 1:
        # Splits must share features; unify by promoting (e.g. a null-only column in one split).
        unified = pa.unify_schemas(list(schemas), promote_options="permissive")
        tables = {s: t.cast(unified) if t.schema != unified else t for s, t in tables.items()}

    with staged_folder(out, inputs=inputs, overwrite=overwrite, marker=marker) as tmp:
        (tmp / "data").mkdir()
        split_dict = SplitDict()
        data_files = []
        total = 0
        for split, table in tables.items():
            n_shards = max(1, math.ceil(table.num_rows / max_rows_per_shard))
            nbytes = 0
            for i in range(n_shards):
                shard = table.slice(i * max_rows_per_shard, max_rows_per_shard)
                path = tmp / "data" / f"{split}-{i:05d}-of-{n_shards:05d}.parquet"
                pq.write_table(shard, path, compression="zstd")
                nbytes += path.stat().st_size
            split_dict.add(SplitInfo(name=split, num_bytes=nbytes, num_examples=table.num_rows))
            data_files.append({"split": split, "path": f"data/{split}-*"})
            total += table.num_rows
        features = datasets.Features.from_arrow_schema(next(iter(tables.values())).schema)
        info = DatasetInfo(features=features, splits=split_dict)
        card_data = DatasetCardData(
            license=card.license,
            task_categories=list(card.task_categories) or None,
            size_categories=[size_category(total)],
            pretty_name=card.pretty_name,
        )
        MetadataConfigs({"default": {"data_files": data_files}}).to_dataset_card_data(card_data)
        DatasetInfosDict({"default": info}).to_dataset_card_data(card_data)
        body = _card_body(card, tables, report, changelog)
        (tmp / "README.md").write_text(
            f"---\n{card_data.to_yaml()}\n---\n\n{body}", encoding="utf-8"
        )
        if report is not None:
            (tmp / "audit.json").write_text(render_json(report), encoding="utf-8")
        if changelog is not None:
            with open(tmp / "changelog.jsonl", "wb") as fh:
                for c in changelog:
                    fh.write(json_bytes(c.to_json()) + b"\n")
        for name, blob in (extra_files or {}).items():
            (tmp / name).write_bytes(blob)
    return out


def _card_body(
    card: CardInfo,
    tables: dict[str, pa.Table],
    report: Report | None,
    changelog: Sequence[ChangeEntry] | None,
) -> str:
    lines = [f"# {card.pretty_name}", ""]
    if card.description:
        lines += [card.description, ""]
    lines += ["## Splits", "", "| split | rows |", "|---|---:|"]
    lines += [f"| {s} | {t.num_rows} |" for s, t in tables.items()]
    lines.append("")
    if card.source_files:
        lines += ["## Source", ""] + [f"- `{p}`" for p in card.source_files] + [""]
    if report is not None:
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
                "rule, reason).",
            ]
        lines.append("")
    lines += card.extra_sections
    lines.append(
        "Produced by [curate](https://pypi.org/project/curate/) — audited, fixed, exported."
    )
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
