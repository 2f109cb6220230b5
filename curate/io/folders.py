"""Dataset folders, local or on the Hub: the hub layout ``data/<split>-*.parquet``, a card that
declares ``configs:`` (with ``data_files`` globs and ``data_dir``), and the files of each split.

Why the card decides and not folder names: ``datasets.load_dataset(path)`` reads what the card
declares, so curate audits exactly what a user of the dataset would load.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import curate.io.hub as io_hub
from curate.core.errors import InputError
from curate.core.keys import SPLIT_ORDER
from curate.io.csv_files import csv_batches
from curate.io.hub import hub_call, remote_blob, remote_sha256
from curate.io.json_files import json_batches, jsonl_batches
from curate.io.parquet_files import parquet_batches
from curate.io.records import HF_SCHEME, Batch, InputName, brief
from curate.io.sources import Blob, file_kind, local_file, read_bytes


class LocalTree:
    """A local dataset folder, as the folder readers see it (relative POSIX paths)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.label = root

    def glob(self, pattern: str) -> list[str]:
        try:
            found = [p for p in self.root.glob(pattern) if p.is_file()]
        except (ValueError, NotImplementedError, OSError) as e:
            raise InputError(
                f"cannot list {pattern!r} ({brief(e, True)})", path=self.root
            ) from None
        if not found:
            self._refuse_unreadable(pattern)
        return sorted(p.relative_to(self.root).as_posix() for p in found)

    def _refuse_unreadable(self, pattern: str) -> None:
        """A pattern that matched nothing because a folder on its way cannot be listed: say so.
        Why: ``Path.glob`` passes over a folder it may not read, and the error then said "no
        file matches 'data/train-*'" of a folder full of them."""
        folder = self.root
        for part in pattern.split("/")[:-1]:
            if any(c in part for c in "*?["):
                break
            folder = folder / part
            if folder.is_dir() and not os.access(folder, os.R_OK | os.X_OK):
                raise InputError(
                    f"permission denied reading the folder {folder.relative_to(self.root)}/",
                    path=self.root,
                )

    def read_bytes(self, rel: str) -> bytes | None:
        p = self.root / rel
        if not p.is_file():
            return None
        return read_bytes(p)

    def file(self, rel: str) -> Path | Blob:
        return local_file(self.root / rel)


class RemoteTree:
    """A folder on the Hub (through an fsspec file system), as the folder readers see it."""

    def __init__(self, fs: Any, root: str, label: InputName, name: str) -> None:
        self.fs = fs
        self.root = root
        self.label = label
        self._name = name.rstrip("/")  # the file system's spelling of ``root``
        self.infos: dict[str, dict[str, Any]] = {}

    def _rel(self, name: str) -> str:
        name = name.rstrip("/")
        for prefix in (self._name, self.root):
            if name.startswith(prefix + "/"):
                return name[len(prefix) + 1 :]
        return name.rsplit("/", 1)[-1]

    def glob(self, pattern: str) -> list[str]:
        found = hub_call(self.label, self.fs.glob, f"{self.root}/{pattern}", detail=True)
        out = []
        for name, info in found.items():
            if info.get("type") == "file":
                rel = self._rel(name)
                self.infos[rel] = info
                out.append(rel)
        return sorted(out)

    def read_bytes(self, rel: str) -> bytes | None:
        if not self.glob(rel):
            return None
        return hub_call(self.label, self.fs.cat_file, f"{self.root}/{rel}")

    def file(self, rel: str) -> Blob:
        return remote_blob(self.fs, f"{self.root}/{rel}", InputName(f"{self.label}/{rel}"))

    def digest(self, plan: FolderPlan) -> str:
        """sha256 of the sorted ``path NUL sha256`` lines of the card and the data files read."""
        rels = sorted(
            {*(r for files in plan.splits.values() for r in files), *self.glob("README.md")}
        )
        h = hashlib.sha256()
        for rel in rels:
            blob = remote_blob(
                self.fs, f"{self.root}/{rel}", InputName(f"{self.label}/{rel}"), False
            )
            sha = remote_sha256(blob, self.infos.get(rel, {}))
            h.update(f"{rel}\0{sha}\n".encode())
        return h.hexdigest()


@dataclass
class FolderPlan:
    """What a dataset folder holds: the config read (if the card declares any) and its splits."""

    config: str | None
    #: Split → files (relative POSIX paths), in the card's (or the file names') order.
    splits: dict[str, list[str]]
    format: str = "hf-parquet"


_SHARD = re.compile(r"^(?P<split>[A-Za-z0-9_.]+?)(?:-\d{5}-of-\d{5})?(?:-[^/]*)?\.parquet$")


#: Split names ``datasets`` accepts.
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")


_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.S)


def hub_configs(folder: str | Path) -> dict[str, dict[str, Any]] | None:
    """The ``configs`` of a dataset folder's README.md card (name → its YAML mapping), or None
    when there is no card or it declares none. Raises InputError for a card that is not valid."""
    text = str(folder)
    if text.startswith(HF_SCHEME):
        tree: Any = RemoteTree(
            io_hub.hub_fs(), text[len(HF_SCHEME) :].rstrip("/"), InputName(text), ""
        )
    else:
        tree = LocalTree(Path(folder))
    return _card_configs(tree)


def card_features(folder: Path, config: str | None) -> list[Any] | None:
    """The ``features`` the card's ``dataset_info`` declares for ``config`` (``default`` when
    None; a card with one ``dataset_info`` mapping and no name: that one), as YAML gives them;
    None without a card, ``dataset_info`` or features. What ``datasets`` casts a CSV or JSON
    folder's columns to, so the types a user published are the types their table is read as."""
    meta = _card_meta(LocalTree(folder))
    infos = meta.get("dataset_info") if isinstance(meta, dict) else None
    listed = infos if isinstance(infos, list) else [infos] if isinstance(infos, dict) else []
    wanted = config or "default"
    for info in listed:
        if isinstance(info, dict) and info.get("config_name", "default") == wanted:
            features = info.get("features")
            return features if isinstance(features, list) else None
    return None


def _card_meta(tree: Any) -> Any:
    """The card's YAML header (None without a card or header); InputError when not YAML."""
    raw = tree.read_bytes("README.md")
    if raw is None:
        return None
    where = f"{tree.label}/README.md"
    m = _FRONT_MATTER.match(raw.decode("utf-8", "replace"))
    if not m:
        return None
    import yaml

    try:
        meta = yaml.safe_load(m.group(1) or "")
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = str(mark.line + 2) if mark is not None else None  # + the opening "---" line
        problem = getattr(e, "problem", None) or brief(e, True)
        raise InputError(
            f"the card's YAML header is not valid YAML ({problem})", path=where, position=line
        ) from None
    return meta


def _card_configs(tree: Any) -> dict[str, dict[str, Any]] | None:
    meta = _card_meta(tree)
    where = f"{tree.label}/README.md"
    configs = meta.get("configs") if isinstance(meta, dict) else None
    if configs is None:
        return None
    if not isinstance(configs, list) or not configs:
        raise InputError("the card's `configs` must be a list of configs", path=where)
    out: dict[str, dict[str, Any]] = {}
    for i, cfg in enumerate(configs):
        name = cfg.get("config_name") if isinstance(cfg, dict) else None
        if not isinstance(name, str) or not name:
            raise InputError(
                f"config #{i} of the card has no `config_name`", path=where, field="configs"
            )
        if name in out:
            raise InputError(f"config {name!r} is declared twice", path=where, field="configs")
        out[name] = cfg
    return out


def _choose_config(label: Any, configs: dict[str, dict[str, Any]], wanted: str | None) -> str:
    """The config ``wanted``, else the default as ``datasets.load_dataset`` picks it."""
    names = ", ".join(configs)
    if wanted is not None:
        if wanted in configs:
            return wanted
        raise InputError(
            f"no config {wanted!r} in the dataset card; its configs: {names}", path=label
        )
    defaults = [
        n
        for n, c in configs.items()
        if len(configs) == 1 or n == "default" or c.get("default") is True
    ]
    if len(defaults) == 1:
        return defaults[0]
    if defaults:
        raise InputError(
            f"the dataset card marks several configs as the default ({', '.join(defaults)}): "
            f"choose one as {label}:CONFIG",
            path=label,
        )
    raise InputError(
        f"the dataset card declares {len(configs)} configs and none is the default: choose one "
        f"as {label}:CONFIG (configs: {names})",
        path=label,
    )


def plan_folder(tree: Any, config: str | None) -> FolderPlan | None:
    """How to read a dataset folder: through its card's configs, else its parquet file layout
    (None: neither, e.g. ``save_to_disk`` output)."""
    configs = _card_configs(tree)
    if configs is None:
        if config is not None:
            raise InputError(
                f"no config {config!r}: the folder has no README.md card declaring configs",
                path=tree.label,
            )
        splits = _layout_splits(tree)
        return FolderPlan(None, splits) if splits else None
    name = _choose_config(tree.label, configs, config)
    splits = _config_splits(tree, name, configs[name])
    formats = {file_kind(r.rsplit("/", 1)[-1], tree.label)[0] for fs in splits.values() for r in fs}
    return FolderPlan(name, splits, "hf-parquet" if formats == {"parquet"} else "hf-files")


def _layout_splits(tree: Any, under: str = "") -> dict[str, list[str]]:
    """Split → parquet files by the layout: ``data/<split>-*.parquet``, ``<split>-*.parquet``
    or ``<split>/*.parquet`` (the file-name conventions ``datasets`` infers splits from)."""
    pre = f"{under.strip('/')}/" if under.strip("/") else ""
    files = tree.glob(f"{pre}data/*.parquet") or tree.glob(f"{pre}*.parquet")
    splits: dict[str, list[str]] = {}
    if files:
        for rel in files:
            name = rel.rsplit("/", 1)[-1]
            m = _SHARD.match(name)
            splits.setdefault(m.group("split") if m else Path(name).stem, []).append(rel)
    else:
        for rel in tree.glob(f"{pre}*/*.parquet"):
            splits.setdefault(rel.split("/")[-2], []).append(rel)
    # train, validation, test first (as ``datasets`` orders the splits it infers, and as
    # curate publishes them), any other after them by name; not the files' sorted order, in
    # which test came before train: the rows of a fix's re-audit (read from such a folder)
    # then named other rows than an audit of the published folder
    ahead = [s for s in SPLIT_ORDER if s in splits]
    return {s: splits[s] for s in [*ahead, *sorted(set(splits) - set(ahead))]}


def _data_files(label: Any, name: str, value: Any) -> list[tuple[str, list[str]]]:
    """A config's ``data_files`` as (split, patterns): a string or a list of strings is the
    ``train`` split; a list of ``{split, path}`` or a ``{split: path}`` mapping names them."""

    def patterns(v: Any) -> list[str] | None:
        if isinstance(v, str) and v:
            return [v]
        if isinstance(v, list) and v and all(isinstance(x, str) and x for x in v):
            return list(v)
        return None

    if (single := patterns(value)) is not None:
        return [("train", single)]
    pairs: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, list) and all(isinstance(x, dict) for x in value):
        pairs = [(x.get("split"), x.get("path")) for x in value]
    out = []
    for split, path in pairs:
        pats = patterns(path)
        if not isinstance(split, str) or pats is None:
            pairs = []
            break
        if not _SPLIT_NAME.match(split):
            raise InputError(
                f"config {name!r}: split name {split!r} is not valid (letters, digits and _, "
                "parts joined by dots)",
                path=label,
            )
        out.append((split, pats))
    if not out:
        raise InputError(
            f"config {name!r}: data_files must be a path, a list of paths, or a list of "
            f"{{split, path}} entries (got {brief(ValueError(repr(value)), True)})",
            path=label,
        )
    return out


def _config_splits(tree: Any, name: str, cfg: dict[str, Any]) -> dict[str, list[str]]:
    """Split → files of one config: its ``data_files`` globs under ``data_dir``."""
    data_dir = cfg.get("data_dir") or ""
    if not isinstance(data_dir, str):
        raise InputError(f"config {name!r}: data_dir must be a path", path=tree.label)
    data_dir = data_dir.strip("/")
    if cfg.get("data_files") is None:
        laid_out = _layout_splits(tree, data_dir)
        if not laid_out:
            raise InputError(
                f"config {name!r} has no data_files and no parquet files under "
                f"{data_dir or 'the folder'}",
                path=tree.label,
            )
        return laid_out
    splits: dict[str, list[str]] = {}
    for split, pats in _data_files(tree.label, name, cfg["data_files"]):
        files = splits.setdefault(split, [])
        for pat in pats:
            pat = pat.removeprefix("./")
            if pat.startswith("/") or ".." in pat.split("/") or "://" in pat:
                raise InputError(
                    f"config {name!r}, split {split!r}: data file {pat!r} is not a path inside "
                    "the folder",
                    path=tree.label,
                )
            full = f"{data_dir}/{pat}" if data_dir else pat
            matched = [r for r in tree.glob(full) if r.rsplit("/", 1)[-1] != "README.md"]
            if not matched:
                raise InputError(
                    f"config {name!r}, split {split!r}: no file matches {full!r}", path=tree.label
                )
            files.extend(r for r in matched if r not in files)
    return splits


def hf_parquet_splits(path: Path) -> dict[str, list[Path]]:
    """Split → shard files for a hub-layout folder (``data/train-00000-of-00002.parquet``) as
    its file layout says (the card's configs are not read here)."""
    return {s: [path / r for r in rels] for s, rels in _layout_splits(LocalTree(path)).items()}


def folder_batches(
    tree: Any, plan: FolderPlan, encoding: str | None, dictionary: Collection[str] = ()
) -> Iterator[Batch]:
    """The records of every split of a dataset folder, file after file, each tagged with its
    split; offsets run across the whole folder."""
    offset = 0
    for split, rels in plan.splits.items():
        for rel in rels:
            f = tree.file(rel)
            fmt = file_kind(rel.rsplit("/", 1)[-1], f)[0]
            if fmt == "parquet":
                for b in parquet_batches(f, split, offset, dictionary=dictionary):
                    offset += len(b)
                    yield b
                continue
            reader = {"json": json_batches, "jsonl": jsonl_batches, "csv": csv_batches}[fmt]
            base = offset
            for b in reader(f, encoding):
                offset += len(b)
                yield b.moved(split, base + b.offset)
