"""``curate card check DIR``: verify a dataset folder offline the way the Hub does on upload.

Why: the Hub validates a dataset card's YAML, its ``configs``/``data_files`` and its metadata
values on the server, after the upload — which for a large dataset is hours later — and the
Dataset Viewer only then finds a split whose ``features`` disagree with its parquet files or a
``num_examples`` that is not the real row count. Every one of those can be seen locally, from
the folder alone, before the first byte is sent.

What is checked (each defect is one :class:`Problem` naming the card key or file):

* ``README.md`` exists and starts with YAML front matter that parses to a mapping;
* each ``configs`` entry's ``data_files`` patterns (under ``data_dir``) match existing files;
* ``license`` and ``size_categories`` are values the Hub accepts (the Hub's licence table, which
  curate ships, and ``datasets``' own ``size_categories.json``), ``language`` codes are in
  ``datasets``' ``languages.json``;
* each config's ``dataset_info``: every split's ``features`` agree with its parquet schema, its
  ``num_examples`` equals the rows in its files and its ``num_bytes`` their Arrow size (a split
  with no files is a defect); ``download_size`` is the files' bytes, ``dataset_size`` the
  splits' ``num_bytes``; ``size_categories`` is the bucket of the rows the files hold;
* an absolute local path in the card is a warning (inputs are named relative to the card);
* ``croissant.json``, when present, validates with ``mlcroissant`` and every ``cr:FileObject``
  with a ``sha256`` names a file whose bytes have that hash and whose size is its
  ``contentSize``; and it says what the card says: its ``license`` is one of the card's
  (an error: two licences leave the terms of use open; a licence URL and the Hub's ``other``
  are not compared), its ``citeAs`` is in the card's Citation section (a warning: the Hub
  shows one, dataset search indexes the other). A card edited by hand after the export is
  where they part.

``mlcroissant`` is not a dependency of curate (it is large); a folder with ``croissant.json`` and
no ``mlcroissant`` installed is a usage error (exit 2) saying so, unless ``--no-croissant``
skips that file: a check that quietly did not run must not read as a pass.
"""

from __future__ import annotations

import difflib
import glob
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from curate.core.errors import UsageError, arg
from curate.core.findings import json_bytes


@dataclass(frozen=True)
class Problem:
    """One card defect: where (a card key path or a file) and what."""

    where: str
    message: str
    severity: str = "error"
    #: The file the defect is in (the card unless said otherwise); ``where`` is then the key
    #: path in it (``dataset_info.splits[2].num_examples``), or ``""`` for the whole file.
    file: str = "README.md"

    def to_json(self) -> dict[str, str]:
        return {
            "severity": self.severity,
            "file": self.file,
            "where": self.where,
            "message": self.message,
        }

    def location(self) -> str:
        return f"{self.file}: {self.where}" if self.where else self.file


def _front_matter(text: str) -> tuple[str | None, int]:
    """The YAML between the leading ``---`` lines, and the line it starts on."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None, 0
    for i in range(1, len(lines)):
        if lines[i].strip() == "---":
            return "\n".join(lines[1:i]), 2
    return None, 0


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _data_files(cfg: dict[str, Any]) -> list[tuple[str, list[Any]]] | None:
    """``data_files`` as (split, patterns) in the forms ``datasets`` accepts, or None; a
    pattern is as the YAML wrote it (the caller reports one that is not a string)."""
    value = cfg.get("data_files")
    if isinstance(value, str):
        return [("train", [value])]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [("train", list(value))]
    if isinstance(value, dict):
        return [(str(k), _as_list(v)) for k, v in value.items()]
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        return [(str(v.get("split", "train")), _as_list(v.get("path"))) for v in value]
    return None


def check_card(folder: str | Path, *, croissant: bool = True) -> list[Problem]:
    """Every defect of the folder's card and files (empty: the Hub would take it as is)."""
    import yaml

    root = Path(folder)
    if not root.is_dir():
        raise UsageError(f"{root}: {'not a folder' if root.exists() else 'no such folder'}")
    card = root / "README.md"
    if not card.is_file():
        return [Problem("", "no dataset card (README.md) in the folder")]
    try:
        text = card.read_text("utf-8")
    except UnicodeDecodeError as e:
        return [Problem("", f"not UTF-8 text (byte {e.start})")]
    yml, _ = _front_matter(text)
    if yml is None:
        return [Problem("", "no YAML front matter (--- lines at the top of the card)")]
    try:
        meta = yaml.safe_load(yml)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 2}" if mark is not None else ""
        return [Problem(where, f"the YAML does not parse ({getattr(e, 'problem', e)})")]
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        return [Problem("", "the YAML front matter is not a mapping of keys")]
    problems: list[Problem] = []
    problems += _check_values(meta)
    files_by_config = _check_configs(root, meta, problems)
    if meta.get("configs") is None:
        problems += _check_inferred(root)
    rows = _check_info(root, meta, files_by_config, problems)
    problems += _check_size_category(meta, rows)
    problems += _local_paths(text)
    if (root / "croissant.json").is_file():
        # the files it lists are checked always; --no-croissant skips mlcroissant's validation
        problems += _check_croissant(root, validate=croissant)
        problems += _check_agreement(root, meta, text)
    return problems


_HEADING = re.compile(r"^#{1,6}\s")
_CITATION = re.compile(r"^#{1,6}\s*Citation\b", re.IGNORECASE)
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")


def _citation_of(text: str) -> str | None:
    """The card's Citation section (``## Citation``, ``## Citation [optional]`` as the Hub's
    template has it), its text up to the next heading with the code fences' own lines left
    out (a fence holds any line, a ``## `` one too; an unclosed one is text), or None
    without such a section."""
    lines = text.splitlines()
    try:
        i = next(k for k, line in enumerate(lines) if _CITATION.match(line)) + 1
    except StopIteration:
        return None
    body: list[str] = []
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            mark = fence.group(1)
            close = next(
                (
                    k
                    for k in range(i + 1, len(lines))
                    if lines[k].strip().startswith(mark[0] * len(mark))
                    and not lines[k].strip().strip(mark[0])
                ),
                None,
            )
            if close is not None:
                body += lines[i + 1 : close]
                i = close + 1
                continue
        elif _HEADING.match(line):
            break
        body.append(line)
        i += 1
    return "\n".join(body).strip()


def _cites(section: str, citation: str) -> bool:
    """Does the card's Citation section hold ``citation`` (white space aside)? Held, not
    equal: a card says "please cite" before the entry, or more after it."""
    return " ".join(citation.split()) in " ".join(section.split())


def _license_ids(value: Any) -> set[str]:
    """Licence identifiers, compared without case. A URL is not compared (a licence has as
    many URLs as publishers: ``https://creativecommons.org/licenses/by/4.0/`` is cc-by-4.0),
    nor is the Hub's ``other`` (its ``license_link`` says which)."""
    out = set()
    for v in _as_list(value):
        if isinstance(v, str) and v.strip() and "://" not in v:
            out.add(v.strip().lower())
    return out - {"other"}


def _check_agreement(root: Path, meta: dict[str, Any], text: str) -> list[Problem]:
    """croissant.json against the card: the same licence and the same citation."""
    try:
        doc = json.loads((root / "croissant.json").read_text("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return []  # said by _check_croissant
    if not isinstance(doc, dict):
        return []
    out: list[Problem] = []
    theirs, ours = _license_ids(doc.get("license")), _license_ids(meta.get("license"))
    other = "other" in {str(v).strip().lower() for v in _as_list(meta.get("license"))}
    if theirs and ours and not other and not theirs <= ours:
        out.append(
            Problem(
                "license",
                f"croissant.json's license {doc.get('license')!r} is not the card's "
                f"{meta.get('license')!r}: two licences leave the terms of use open",
                file="croissant.json",
            )
        )
    cite, cited = doc.get("citeAs"), _citation_of(text)
    cite = cite if isinstance(cite, str) and cite.strip() else None
    if cite is not None and cited is not None and not _cites(cited, cite):
        said = "differs from the card's Citation section"
    elif cite is not None and cited is None:
        said = "is set, but the card has no Citation section"
    elif cite is None and cited:
        said = "is missing, but the card has a Citation section"
    else:
        return out
    out.append(
        Problem(
            "citeAs",
            f"citeAs {said}: the Hub shows the card's, dataset search indexes croissant.json's",
            severity="warning",
            file="croissant.json",
        )
    )
    return out


def _check_size_category(meta: dict[str, Any], rows: dict[str, int]) -> list[Problem]:
    """``size_categories`` against the rows the files hold (a config's, the largest one's
    when there are several): ``1M<n<10M`` on 429 rows misfiles the dataset in the Hub's size
    filter."""
    from curate.publish.metadata import size_categories, size_category

    if not rows:
        return []
    n = max(rows.values())
    want = size_category(n)
    out = []
    for i, s in enumerate(_as_list(meta.get("size_categories"))):
        if s in size_categories() and s != want and s != "unknown":
            out.append(
                Problem(
                    f"size_categories[{i}]",
                    f"{s!r}, but the files hold {n:,} rows: {want!r}",
                )
            )
    return out


#: An absolute local path in the card's text (``/home/me/data.json``, ``C:\data``), not a URL's.
_LOCAL_PATH = re.compile(r"(?<![\w/.:~-])(?:/[\w.*-]+){2,}/?|\b[A-Za-z]:\\[^\s`|)]+")


def _local_paths(text: str) -> list[Problem]:
    """A warning per absolute local path the card names: meaningless to a reader of the Hub,
    and it tells them about the machine the dataset was made on."""
    out = []
    for k, line in enumerate(text.splitlines(), 1):
        for m in _LOCAL_PATH.finditer(line):
            out.append(
                Problem(
                    f"line {k}",
                    f"an absolute local path ({m.group()}): name inputs relative to the card, "
                    "or by their public address",
                    severity="warning",
                )
            )
    return out


def _check_values(meta: dict[str, Any]) -> list[Problem]:
    from curate.publish.metadata import (
        check_language,
        check_source_dataset,
        hub_licenses,
        hub_tasks,
        size_categories,
    )

    out = []
    known = hub_licenses()
    for i, lic in enumerate(_as_list(meta.get("license"))):
        if not isinstance(lic, str) or lic.lower() not in known:
            out.append(
                Problem(
                    f"license[{i}]" if isinstance(meta.get("license"), list) else "license",
                    f"{lic!r} is not a Hub licence identifier "
                    "(https://huggingface.co/docs/hub/repositories-licenses)",
                )
            )
    sizes = size_categories()
    for i, s in enumerate(_as_list(meta.get("size_categories"))):
        if s not in sizes:
            out.append(
                Problem(
                    f"size_categories[{i}]",
                    f"{s!r} is not a Hub size category ({', '.join(sizes)})",
                )
            )
    tasks = hub_tasks()
    for i, task in enumerate(_as_list(meta.get("task_categories"))):
        if task not in tasks:
            near = difflib.get_close_matches(str(task), list(tasks), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            out.append(
                Problem(
                    f"task_categories[{i}]",
                    f"{task!r} is not a Hub task category{hint}",
                )
            )
    for key, check, why in (
        (
            "source_datasets",
            check_source_dataset,
            "original, extended, extended|ID or a dataset id",
        ),
        ("language", check_language, "a language code the Hub knows"),
    ):
        for i, value in enumerate(_as_list(meta.get(key))):
            try:
                check(str(value))
            except UsageError:
                out.append(Problem(f"{key}[{i}]", f"{value!r} is not {why}"))
    return out


#: Files curate writes beside the data; read as data they would be the dataset.
SIDE_FILES = frozenset(
    {"audit.json", "audit.before.json", "audit.after.json", "changelog.jsonl", "croissant.json"}
)


def _check_inferred(root: Path) -> list[Problem]:
    """A card without ``configs``: what ``datasets.load_dataset(folder)`` would infer as the data.

    Why: the Hub and ``load_dataset`` then pick the folder's commonest data format and read every
    file of it — a folder holding one HDF5 file and three JSON reports loads the reports. That
    is found only after the upload, in the Dataset Viewer. Asked of ``datasets`` itself (its
    pattern inference and builder choice), offline.
    """
    from datasets.data_files import DataFilesDict, get_data_patterns
    from datasets.exceptions import DataFilesNotFoundError
    from datasets.load import infer_module_for_data_files
    from datasets.packaged_modules import _MODULE_TO_EXTENSIONS

    try:
        patterns = get_data_patterns(str(root))
        files = DataFilesDict.from_patterns(patterns, base_path=str(root))
        module, _ = infer_module_for_data_files(files)
    except (FileNotFoundError, DataFilesNotFoundError):
        return [Problem("configs", "no configs and no data file datasets would find")]
    except Exception as e:  # datasets' own refusal (mixed formats across splits, ...)
        return [Problem("configs", f"no configs, and datasets cannot infer the data: {e}")]
    if module is None:
        return [Problem("configs", "no configs, and datasets finds no data format it reads")]
    exts = tuple(_MODULE_TO_EXTENSIONS.get(module, ()))
    read = [Path(f) for fs in files.values() for f in fs if str(f).lower().endswith(exts)]
    side = sorted(_rel(root, f) for f in read if f.name in SIDE_FILES)
    if not side:
        return []
    data_exts = {e for es in _MODULE_TO_EXTENSIONS.values() for e in es}
    other = sorted(
        _rel(root, Path(f))
        for fs in files.values()
        for f in fs
        if not str(f).lower().endswith(exts) and Path(f).suffix.lower() in data_exts
    )
    skipped = f"; it would not read {', '.join(other)}" if other else ""
    return [
        Problem(
            "configs",
            f"no configs: datasets.load_dataset would read {', '.join(side)} as the data "
            f"(its {module} builder){skipped}; declare configs with the data files",
        )
    ]


def _check_configs(
    root: Path, meta: dict[str, Any], problems: list[Problem]
) -> dict[str, dict[str, list[Path]]]:
    """config name → split → files, checking that every pattern matches a file."""
    out: dict[str, dict[str, list[Path]]] = {}
    configs = meta.get("configs")
    if configs is None:
        return out
    if not isinstance(configs, list):
        problems.append(Problem("configs", "must be a list of {config_name, data_files}"))
        return out
    for i, cfg in enumerate(configs):
        at = f"configs[{i}]"
        if not isinstance(cfg, dict) or not isinstance(cfg.get("config_name"), str):
            problems.append(Problem(at, "needs a config_name"))
            continue
        pairs = _data_files(cfg)
        if pairs is None:
            problems.append(
                Problem(f"{at}.data_files", "is missing or not in a form datasets reads")
            )
            continue
        data_dir = str(cfg.get("data_dir") or "").strip("/")
        splits: dict[str, list[Path]] = {}
        for j, (split, patterns) in enumerate(pairs):
            for pat in patterns:
                if not isinstance(pat, str):
                    problems.append(Problem(f"{at}.data_files[{j}]", f"{pat!r} is not a path"))
                    continue
                full = f"{data_dir}/{pat}" if data_dir else pat
                if Path(full).is_absolute() or re.match(r"^[A-Za-z]:[\\/]", full):
                    problems.append(
                        Problem(
                            f"{at}.data_files[{j}]",
                            f"split {split!r}: {full!r} is an absolute path: the Hub resolves "
                            "data_files inside the repository (name them relative to it)",
                        )
                    )
                    continue
                found = sorted(
                    Path(p)
                    for p in glob.glob(str(root / full), recursive=True)
                    if Path(p).is_file()
                )
                if not found:
                    problems.append(
                        Problem(
                            f"{at}.data_files[{j}]",
                            f"split {split!r}: {full!r} matches no file in the folder",
                        )
                    )
                splits.setdefault(split, []).extend(found)
        out[cfg["config_name"]] = splits
    return out


def _check_info(
    root: Path,
    meta: dict[str, Any],
    files_by_config: dict[str, dict[str, list[Path]]],
    problems: list[Problem],
) -> dict[str, int]:
    """Each config's features against its parquet files' schemas; every size figure against
    the files: a split's ``num_examples`` (rows) and ``num_bytes`` (the Arrow size of its data,
    as ``datasets`` counts it), the config's ``download_size`` (the files' bytes) and
    ``dataset_size`` (the splits' ``num_bytes``). The rows of each config, for the size
    category."""
    import pyarrow.parquet as pq
    from datasets import Features

    totals: dict[str, int] = {}
    infos = meta.get("dataset_info")
    if infos is None:
        return totals
    listed = infos if isinstance(infos, list) else [infos]
    for i, info in enumerate(listed):
        at = f"dataset_info[{i}]" if isinstance(infos, list) else "dataset_info"
        if not isinstance(info, dict):
            problems.append(Problem(at, "must be a mapping"))
            continue
        name = info.get("config_name", "default")
        splits = files_by_config.get(name)
        if splits is None:
            if files_by_config:
                problems.append(Problem(f"{at}.config_name", f"no config {name!r} in configs"))
            continue
        declared = None
        if info.get("features") is not None:
            try:
                declared = Features._from_yaml_list(info["features"])
            except Exception as e:  # datasets raises plain exceptions for unknown dtypes
                problems.append(Problem(f"{at}.features", f"not valid features ({e})"))
        file_bytes, arrow_bytes, complete = 0, 0, True
        for k, split in enumerate(_as_list(info.get("splits"))):
            sname = split.get("name") if isinstance(split, dict) else None
            where = f"{at}.splits[{k}]"
            if sname not in splits:
                problems.append(Problem(where, f"split {sname!r} has no data_files in configs"))
                complete = False
                continue
            rows, nbytes = 0, 0
            for f in splits[sname]:
                if f.suffix != ".parquet":
                    continue
                try:
                    pf = pq.ParquetFile(f)
                except Exception as e:
                    problems.append(
                        Problem("", f"not a readable parquet file ({e})", file=_rel(root, f))
                    )
                    continue
                rows += pf.metadata.num_rows
                file_bytes += f.stat().st_size
                # one row group at a time: memory stays at a row group whatever the split
                nbytes += sum(
                    pf.read_row_group(g).nbytes for g in range(pf.metadata.num_row_groups)
                )
                if declared is not None:
                    problem = _schema_problem(declared, pf.schema_arrow)
                    if problem:
                        problems.append(Problem(f"{at}.features", problem, file=_rel(root, f)))
            if not all(f.suffix == ".parquet" for f in splits[sname]):
                complete = False
                continue  # row and byte counts of other formats are the loader's business
            totals[name] = totals.get(name, 0) + rows
            arrow_bytes += nbytes
            want = split.get("num_examples")
            if want is not None and want != rows:
                problems.append(
                    Problem(
                        f"{where}.num_examples",
                        f"split {sname!r}: the card says {want} rows, its files hold {rows}",
                    )
                )
            said = split.get("num_bytes")
            if said is not None and said != nbytes:
                problems.append(
                    Problem(
                        f"{where}.num_bytes",
                        f"split {sname!r}: the card says {said} bytes, its data is {nbytes} "
                        "bytes in Arrow (as datasets counts num_bytes)",
                    )
                )
        if complete:
            for key, real, what in (
                ("download_size", file_bytes, "its files hold"),
                ("dataset_size", arrow_bytes, "its splits' data is"),
            ):
                said = info.get(key)
                if said is not None and said != real:
                    problems.append(
                        Problem(f"{at}.{key}", f"the card says {said} bytes, {what} {real}")
                    )
    return totals


def _schema_problem(declared: Any, schema: Any) -> str | None:
    """How a parquet schema disagrees with the card's features (None: it agrees)."""
    want = declared.arrow_schema
    have_names = schema.names
    missing = [n for n in want.names if n not in have_names]
    extra = [n for n in have_names if n not in want.names]
    if missing:
        return f"column {missing[0]!r} of the card's features is not in the file"
    if extra:
        return f"column {extra[0]!r} of the file is not in the card's features"
    for name in want.names:
        a, b = want.field(name).type, schema.field(name).type
        if a != b:
            return f"column {name!r} is {b} in the file but {a} in the card's features"
    return None


def _rel(root: Path, p: Path) -> str:
    try:
        return p.relative_to(root).as_posix()
    except ValueError:
        return str(p)


def _check_croissant(root: Path, *, validate: bool = True) -> list[Problem]:
    path = root / "croissant.json"
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        return [Problem("", f"not valid JSON ({e})", file="croissant.json")]
    out: list[Problem] = []
    for i, d in enumerate(doc.get("distribution") or []):
        if not isinstance(d, dict) or d.get("@type") != "cr:FileObject" or "sha256" not in d:
            continue
        url = str(d.get("contentUrl", ""))
        if "://" in url:
            continue
        target = root / url
        at = f"distribution[{i}]"
        if not target.is_file():
            out.append(
                Problem(at, f"contentUrl {url!r} is not a file in the folder", file=path.name)
            )
            continue
        size = target.stat().st_size
        if "contentSize" in d and str(d["contentSize"]).strip() not in (f"{size} B", str(size)):
            out.append(
                Problem(
                    at,
                    f"contentSize of {url} is {d['contentSize']!r}, the file has {size} bytes",
                    file=path.name,
                )
            )
        h = hashlib.sha256()
        with open(target, "rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
        if h.hexdigest() != d["sha256"]:
            out.append(
                Problem(
                    at,
                    f"sha256 of {url} is {h.hexdigest()}, croissant.json says {d['sha256']}",
                    file=path.name,
                )
            )
    if not validate:
        return out
    try:
        import mlcroissant as mlc
    except ImportError:
        raise UsageError(
            f"{path}: cannot be validated: mlcroissant is not installed "
            f"(pip install 'curate[croissant]', or {arg('--croissant', False)} to skip it)"
        ) from None
    import logging

    logging.getLogger("absl").setLevel(logging.ERROR)
    try:
        ds = mlc.Dataset(jsonld=str(path))
        errors = list(ds.metadata.ctx.issues.errors)
    except mlc.ValidationError as e:
        errors = [str(e)]
    except Exception as e:  # mlcroissant raises many kinds for a broken document
        errors = [f"{type(e).__name__}: {e}"]
    for err in errors:
        out.append(Problem("", " ".join(str(err).split())[:500], file=path.name))
    return out


def render_text(folder: str | Path, problems: list[Problem]) -> str:
    if not problems:
        return f"{folder}: the card and files agree; nothing the Hub would reject\n"
    lines = [f"{folder}/{p.location()}: {p.severity}: {p.message}" for p in problems]
    n = sum(p.severity == "error" for p in problems)
    w = len(problems) - n
    said = [f"{n} card defect{'s' if n != 1 else ''}"] if n else []
    said += [f"{w} warning{'s' if w != 1 else ''}"] if w else []
    lines.append(f"{' and '.join(said)} in {folder}" + ("" if n else " (nothing the Hub rejects)"))
    return "\n".join(lines) + "\n"


def render_json(folder: str | Path, problems: list[Problem]) -> str:
    doc = {"folder": str(folder), "problems": [p.to_json() for p in problems]}
    return json_bytes(doc, indent=True).decode() + "\n"
