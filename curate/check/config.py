"""The project configuration ``curate check`` reads: ``[tool.curate]`` in ``pyproject.toml`` or a
``curate.toml``, found by walking up from the current folder (or given with ``--config``).

Why a file and not flags: a dataset repository's CI runs the same checks on every push, over
several datasets of several families, each with its own options (the edit set evaluated with,
the glycan task), rule choice and accepted findings; the file is reviewed in pull requests like
the data. ruff is the model: the same selectors as ``--select``/``--ignore``, per-rule
overrides, and an unknown key is an error naming it, never silently ignored (a misspelt
``ignroe`` that is skipped would quietly turn a check off).

The form (every key is optional except ``datasets`` and, in each, ``name``, ``family`` and
``paths``)::

    [tool.curate]
    fail-on = "error"                      # error | warning | info | never
    baseline = "curate-baseline.json"      # accepted findings; only new ones fail
    select = ["KE", "GL"]                  # default selectors for the datasets of a family
    ignore = ["GL501"]
    severity = { KE401 = "error" }          # per-rule severity overrides
    thresholds = { GL303 = 5, GL501 = "2%" } # fail only above N findings / X% of records

    [tool.curate.output]
    format = "text"                        # what stdout gets
    step-summary = true                    # append Markdown to $GITHUB_STEP_SUMMARY when set
    reports = { junit = "reports/curate.xml", sarif = "reports/curate.sarif" }

    [[tool.curate.datasets]]
    name = "mquake-hard"
    family = "knowledge-editing"           # a family name or alias (mquake, ke, ...)
    paths = ["data/MQuAKE-hard.json"]      # files, folders or globs, relative to this file
    options = { edit-set = "random:100" }  # the family's options, spelt like its flags
    select = ["KE"]

    [[tool.curate.datasets]]
    name = "glycan-species"
    family = "glycan"
    splits = { train = "data/train-*.csv", test = ["data/test.csv"] }   # instead of paths
    options = { task = "taxonomy" }

    [[tool.curate.curate-ignore]]
    dataset = "mquake-hard"                # optional: every dataset when omitted
    rule = "KE401"
    record = "9203"
    field = ""                             # optional: any field when omitted
    reason = "kept on purpose: the upstream release has it"   # required

Top-level ``select``/``ignore``/``severity``/``thresholds`` apply to each dataset the selectors
that match its family's rules (``KE`` is nothing to a glycan table; a category such as
``leakage`` matches in every family); a selector that matches no configured dataset's rules is
an error. A dataset's own keys are added after the top-level ones (its ``select`` replaces the
top-level one).

``splits`` (instead of ``paths``) is the split mapping, as a Hub card's ``data_files``: split
name → files or globs. Why: many dataset repositories keep ``train.csv`` and ``test.csv`` with no
split column, and leakage rules need to know which record is in which split. Every record of a
mapped file is in that split, as if the files were a dataset folder's ``data/<split>-*`` files.

Errors are :class:`~curate.core.errors.UsageError`, one line naming the file and the key path
(``pyproject.toml: [tool.curate] datasets[0].famly: unknown key``). TOML parsers give no
positions for keys, so the key path is what locates the mistake.
"""

from __future__ import annotations

import glob
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from curate.core.errors import UsageError, field_path
from curate.io.records import SplitInput
from curate.reports import formats
from curate.reports.verdict import Threshold, shown_path

#: The file names looked for in each folder, in order (a ``curate.toml`` wins over a
#: ``pyproject.toml`` beside it, as ``ruff.toml`` wins over ``pyproject.toml``).
CONFIG_FILES = ("curate.toml", "pyproject.toml")
SEVERITIES = ("error", "warning", "info")
#: Report formats a configuration may name (``curate check --format`` takes the same): the
#: registry's (:mod:`curate.reports.formats`), so that a new format is one registration.
FORMATS = formats.names()
#: The same as a type, for pydantic's validation (and its message naming every choice).
if TYPE_CHECKING:  # the registry's names, known only at run time
    FormatName = str
else:
    FormatName = Literal[FORMATS]

#: A ``[tool.curate...]`` table header (or ``[[tool.curate.datasets]]``), even a broken one.
_MENTIONS_CURATE = re.compile(r"^\s*\[+\s*tool\s*\.\s*curate\b", re.MULTILINE)
_THRESHOLD = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def _dashed(name: str) -> str:
    return name.replace("_", "-")


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(
        extra="forbid", alias_generator=_dashed, frozen=True
    )


def _threshold(value: Any) -> Threshold:
    if isinstance(value, bool):
        raise ValueError("a threshold is a count (5) or a percentage ('2%'), not true/false")
    if isinstance(value, int):
        if value < 0:
            raise ValueError("a count threshold cannot be negative")
        return Threshold(count=value)
    if isinstance(value, str) and (m := _THRESHOLD.match(value)):
        pct = float(m.group(1))
        if pct > 100:
            raise ValueError(f"{value!r} is more than 100%")
        return Threshold(percent=pct)
    raise ValueError(f"{value!r} is not a count (5) or a percentage ('2%')")


Severity = Literal["error", "warning", "info"]
ChangeKind = Literal["added", "removed", "changed", "moved", "rekeyed", "columns"]
FailOn = Literal["error", "warning", "info", "never"]
ThresholdValue = StrictInt | StrictStr


class RuleKeys(_Model):
    """Keys shared by the top level and each dataset."""

    select: list[str] | None = None
    ignore: list[str] | None = None
    severity: dict[str, Severity] = Field(default_factory=dict)
    thresholds: dict[str, ThresholdValue] = Field(default_factory=dict)
    fail_on: FailOn | None = None

    @field_validator("thresholds", mode="before")
    @classmethod
    def _thresholds(cls, v: Any) -> Any:
        for key, value in v.items() if isinstance(v, dict) else ():
            try:
                _threshold(value)
            except ValueError as e:
                raise ValueError(f"{key}: {e}") from None
        return v

    def parsed_thresholds(self) -> dict[str, Threshold]:
        return {k: _threshold(v) for k, v in self.thresholds.items()}


class DatasetConfig(RuleKeys):
    """One dataset to check: a name for reports and fingerprints, a family, its inputs."""

    name: str = Field(min_length=1)
    family: str = Field(min_length=1)
    paths: list[str] = Field(default_factory=list)
    #: Split mapping: split name → files or globs (a string or a list), instead of ``paths``.
    splits: dict[str, list[str]] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)
    encoding: str | None = None
    #: A published version this dataset is pinned to (files or a folder, relative to the
    #: configuration): ``curate diff`` of it and the inputs must show only the ``expect``ed
    #: kinds of change (CK101 otherwise).
    frozen: str | None = None
    #: ``"unchanged"`` (the default), or the kinds of change allowed against ``frozen``.
    expect: Literal["unchanged"] | list[ChangeKind] = "unchanged"

    @field_validator("splits", mode="before")
    @classmethod
    def _splits(cls, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: [x] if isinstance(x, str) else x for k, x in v.items()}
        return v

    @model_validator(mode="after")
    def _inputs(self) -> DatasetConfig:
        if bool(self.paths) == bool(self.splits):
            raise ValueError(
                "give the inputs as `paths` (a list of files, folders or globs) or as `splits` "
                "(split name → files), exactly one of the two"
            )
        if self.expect != "unchanged" and self.frozen is None:
            raise ValueError("`expect` says what may change against `frozen`: give `frozen` too")
        for split, files in self.splits.items():
            if not split.strip() or split != split.strip():
                raise ValueError(f"splits: {split!r} is not a split name")
            if not files:
                raise ValueError(f"splits.{split}: no files")
        return self

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if v != v.strip() or any(c in v for c in "\n\r\t"):
            raise ValueError("a dataset name has no surrounding spaces or line breaks")
        return v


class Ignore(_Model):
    """A ``curate-ignore`` entry: one accepted finding, named, with the reason it is accepted."""

    rule: str = Field(min_length=1)
    record: str | int
    dataset: str | None = None
    field: str | None = None
    reason: str = Field(min_length=1)

    @field_validator("reason")
    @classmethod
    def _reason(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("a reason is required (why is this finding accepted?)")
        return v.strip()

    @field_validator("record")
    @classmethod
    def _record(cls, v: str | int) -> str:
        return str(v)


class OutputConfig(_Model):
    format: FormatName = "text"
    #: Append the Markdown summary to ``$GITHUB_STEP_SUMMARY`` (when the variable is set).
    step_summary: bool = True
    #: Extra report files written on every run: format → path (relative to the config file).
    reports: dict[FormatName, str] = Field(default_factory=dict)
    #: How many findings per rule the text and Markdown reports list.
    examples: int = Field(20, ge=0)


class CurateConfig(RuleKeys):
    datasets: list[DatasetConfig] = Field(min_length=1)
    baseline: str | None = None
    output: OutputConfig = Field(default_factory=OutputConfig)
    curate_ignore: list[Ignore] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> CurateConfig:
        seen: set[str] = set()
        for i, d in enumerate(self.datasets):
            if d.name in seen:
                raise ValueError(f"datasets[{i}].name: {d.name!r} names two datasets")
            seen.add(d.name)
        for i, ig in enumerate(self.curate_ignore):
            if ig.dataset is not None and ig.dataset not in seen:
                raise ValueError(
                    f"curate-ignore[{i}].dataset: no dataset {ig.dataset!r} "
                    f"(datasets: {', '.join(sorted(seen))})"
                )
        return self


@dataclass(frozen=True)
class LoadedConfig:
    """A validated configuration and where it came from."""

    config: CurateConfig
    #: The file read.
    path: Path
    #: ``[tool.curate]`` in a pyproject.toml, ``""`` for a curate.toml (its keys are top-level).
    section: str

    @property
    def root(self) -> Path:
        """The folder relative paths in the configuration are taken from."""
        return self.path.parent

    def where(self, key: str) -> str:
        """``pyproject.toml: [tool.curate] datasets[0].family`` for an error message."""
        return _where(self.path, self.section, key)

    def resolve(self, path: str) -> Path:
        p = Path(os.path.expanduser(path))
        return p if p.is_absolute() else self.root / p

    def dataset_paths(self, index: int) -> list[str]:
        """A dataset's inputs: each relative path taken from the config's folder, globs
        expanded (sorted); a glob that matches nothing is an error naming it."""
        ds = self.config.datasets[index]
        if not ds.splits:
            return self._expand(ds.paths, f"datasets[{index}].paths")
        out: list[str] = []
        for split, files in ds.splits.items():
            found = self._expand(files, f"datasets[{index}].splits.{split}")
            out.extend(SplitInput(p, split) for p in found)
        return out

    def input_patterns(self) -> list[str]:
        """Every glob the datasets' ``paths`` and ``splits`` read by, as an absolute pattern.

        Why: a file these match is data to the next ``curate check`` even before it exists, so
        the output gate refuses a report or baseline there (``--report json=data/r.json`` with
        ``paths = ["data/*.json"]`` would be read back as a dataset, and fail, on the next run).
        """
        out: list[str] = []
        for ds in self.config.datasets:
            raws = [*ds.paths, *(f for files in ds.splits.values() for f in files)]
            for raw in raws:
                if raw.startswith("hf://") or raw == "-" or not glob.has_magic(raw):
                    continue
                out.append(str(self.resolve(raw)))
        return out

    def _expand(self, raws: list[str], key: str) -> list[str]:
        out: list[str] = []
        first: dict[Path, int] = {}  # a file named twice: its key and both spellings
        for j, raw in enumerate(raws):
            if raw.startswith("hf://") or raw == "-":
                out.append(raw)
                continue
            full = self.resolve(raw)
            if not glob.has_magic(raw) and (i := first.setdefault(full.resolve(), j)) != j:
                raise UsageError(
                    f"{self.where(f'{key}[{j}]')}: {raw!r} is the file of {key}[{i}] "
                    f"({raws[i]!r}) again"
                )
            if glob.has_magic(raw):
                found = sorted(glob.glob(str(full), recursive=True))
                if not found:
                    raise UsageError(f"{self.where(f'{key}[{j}]')}: {raw!r} matches no file")
                out.extend(shown_path(Path(f)) for f in found)
            else:
                out.append(shown_path(full))
        return out


def _where(path: Path, section: str, key: str) -> str:
    return f"{shown_path(path)}: {section + ' ' if section else ''}{key}"


def find_config(start: Path | None = None) -> Path | None:
    """The nearest ``curate.toml``, or ``pyproject.toml`` with ``[tool.curate]``, from ``start``
    (the current folder) up to the file-system root."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        for name in CONFIG_FILES:
            p = folder / name
            if not p.is_file():
                continue
            if name == "curate.toml":
                return p
            try:
                text = p.read_text("utf-8")
                data = tomllib.loads(text)
            except (UnicodeDecodeError, OSError):
                continue  # someone else's unreadable pyproject is not ours to judge
            except tomllib.TOMLDecodeError:
                # ours if it names a curate table: load_config then says where it breaks,
                # instead of "no configuration found" for a file the user just wrote
                if _MENTIONS_CURATE.search(text):
                    return p
                continue  # someone else's broken pyproject is not ours to judge
            if isinstance(data.get("tool"), dict) and "curate" in data["tool"]:
                return p
    return None


def load_config(path: str | Path | None = None) -> LoadedConfig:
    """Read and validate the configuration (``path``, or the one :func:`find_config` finds)."""
    if path is None:
        found = find_config()
        if found is None:
            raise UsageError(
                "no curate configuration found: add [tool.curate] to pyproject.toml or write a "
                f"curate.toml (searched {Path.cwd()} and its parents; --config FILE names one)"
            )
        path = found
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"--config {p}: no such file")
    try:
        data = tomllib.loads(p.read_text("utf-8"))
    except UnicodeDecodeError as e:
        raise UsageError(f"{p}: not UTF-8 text (byte {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{shown_path(p)}: not valid TOML ({' '.join(str(e).split())})") from None
    if p.name == "pyproject.toml" or ("tool" in data and "curate" in data.get("tool", {})):
        section = "[tool.curate]"
        raw = (data.get("tool") or {}).get("curate")
        if raw is None:
            raise UsageError(f"{p}: has no [tool.curate] section")
    else:
        section = ""
        raw = data
    if not isinstance(raw, dict):
        raise UsageError(f"{p}: {section or 'the file'} must be a table")
    try:
        config = CurateConfig.model_validate(raw)
    except ValidationError as e:
        raise UsageError(_first_error(e, lambda key: _where(p, section, key))) from None
    return LoadedConfig(config, p, section)


def _first_error(e: ValidationError, where: Any) -> str:
    """One line for a validation error: the key path, then what is wrong with it."""
    import difflib

    # a misspelt key is also a missing one: name the misspelling, the cause
    errors = sorted(e.errors(include_url=False), key=lambda x: x["type"] != "extra_forbidden")
    err = errors[0]
    loc = tuple(err["loc"])
    msg = str(err["msg"]).removeprefix("Value error, ")
    kind = err["type"]
    if kind == "extra_forbidden":
        parent = _model_at(CurateConfig, loc[:-1])
        keys = [_dashed(f) for f in parent.model_fields] if parent else []
        close = difflib.get_close_matches(str(loc[-1]), keys, n=1)
        msg = "unknown key" + (
            f" (did you mean {close[0]}?)"
            if close
            else f" (known keys: {', '.join(keys)})"
            if keys
            else ""
        )
    elif kind == "missing":
        msg = "required key missing"
    elif kind == "value_error" and not loc and ":" in msg:
        key, _, rest = msg.partition(": ")
        return f"{where(key)}: {rest}"
    key = field_path(loc) or "(top level)"
    return f"{where(key)}: {msg}"


def _model_at(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that a key path ends in (for listing its keys)."""
    import typing

    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return None
        name = next(
            (n for n, f in current.model_fields.items() if (f.alias or n) == part or n == part),
            None,
        )
        if name is None:
            return None
        ann = current.model_fields[name].annotation
        while typing.get_origin(ann) in (list, typing.Union) or (
            typing.get_origin(ann) is not None and str(typing.get_origin(ann)) == "types.UnionType"
        ):
            args = [a for a in typing.get_args(ann) if a is not type(None)]
            ann = args[0]
        current = ann
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None
