"""The ``table`` family's declaration: which columns of a user's table are what, and the model
its rows must satisfy.

A table is any labelled (or unlabelled) dataset: a QA set, a classification table, an
instruction set. Its user does not write a family; they say which column is the id, the label,
the split, the input text, the group or key that must not cross splits, and optionally name a
Pydantic v2 model every row must satisfy (``--schema module:Model`` or
``--schema path/to/models.py:Model``). Everything else (which rules run, what they compare) is
read off this declaration, so the same declaration works on the command line, in
``[[tool.curate.datasets]]`` (``options = { label = ["y"], text = ["question"] }``) and in the
API (``curate.audit("table", df, label="y", split="split")``).

Why text normalisation is declared here (``--normalise``): what counts as "the same input" is
the user's call. Deepchecks' defaults (case, unicode NFKC, punctuation, whitespace) are the
default here; each part can be switched off (``--normalise case,whitespace``, or ``none``).

May import: ``curate.core``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar

import polars as pl
from pydantic import BaseModel, BeforeValidator, field_validator, model_validator

from curate.core.errors import UsageError, arg
from curate.core.options import CommaList, LabelIssueOptions, key_values, option

__all__ = [
    "NORMALISE_PARTS",
    "ModelSource",
    "TableOptions",
    "fold",
    "load_model",
    "model_source",
    "normaliser",
]

#: The parts of the text normal form, in the order they are applied, and what each folds.
NORMALISE_PARTS: dict[str, str] = {
    "unicode": "Unicode NFKC (full-width letters, ligatures, compatibility forms)",
    "case": "lower case",
    "punctuation": "punctuation and symbols removed",
    "whitespace": "runs of white space as one space, none at the ends",
}

#: Unicode punctuation (P*) and symbols (S*): what Deepchecks' ``string.punctuation`` folds,
#: beyond ASCII (curly quotes, dashes, ellipses, currency signs).
_PUNCTUATION = r"[\p{P}\p{S}]+"


#: Column names, comma-separated (see :func:`~curate.core.options.comma_list`).
Columns = CommaList


def _pairs(v: Any) -> Any:
    """``VALUE=SPLIT`` pairs (repeated flags, comma-separated, or a mapping from TOML/the API)."""
    if v is None:
        return {}
    if isinstance(v, dict):
        return {str(k): str(x) for k, x in v.items()}
    return key_values(v, "VALUE=SPLIT", commas=True)


SplitMap = Annotated[dict[str, str], BeforeValidator(_pairs)]


# ``--schema`` is the option's name on the command line and in Python (``schema=``); the field
# shadows pydantic's deprecated ``BaseModel.schema()``, which nothing here calls.
warnings.filterwarnings("ignore", message='Field name "schema" in "TableOptions" shadows')


class TableOptions(LabelIssueOptions):
    """The declaration of a table: its columns' roles, its model and the rules' thresholds."""

    at_least_one: ClassVar[frozenset[str]] = frozenset({"workers", "permutations"})

    id: str | None = option(
        None,
        help="Column holding each row's id: findings name rows by it; TB401 reports a repeated "
        "one (default: #N, the row's position in its file).",
    )
    label: Columns = option(
        [],
        help="Label column(s), comma-separated: the conflicting-label, label-distribution and "
        "identifier-label rules read them (several: each is checked on its own).",
    )
    split: str | None = option(
        None,
        help="Column holding each row's split (train/validation/test and their spellings); "
        "default: a dataset folder's configs or split files, or several files each named "
        "after its split (train.csv, dev.csv, test.csv), else no splits.",
    )
    split_map: SplitMap = option(
        {},
        help="Read a value of the --split column as a split: VALUE=SPLIT, comma-separated or "
        "repeated, e.g. True=test,False=train for an is_test flag.",
        flag="--split-map",
    )
    text: Columns = option(
        [],
        help="Input column(s), comma-separated: what a model reads. Duplicate inputs, "
        "conflicting labels and leakage compare them after --normalise; near-duplicates compare "
        "their shingles.",
    )
    group: str | None = option(
        None,
        help="Column whose values must not cross splits (a patient, a source document, a "
        "subject): TB405 reports a group in two splits; the leak fix regroups by it.",
    )
    key: Columns = option(
        [],
        help="Column(s) that make two rows the same example, comma-separated (default: the "
        "--text columns): duplicates, conflicts and exact leakage compare them.",
    )
    # shadows BaseModel.schema, a deprecated classmethod: the option's name is the user's word
    schema: str | None = option(  # type: ignore[assignment]
        None,
        help="A Pydantic v2 model every row must satisfy: module:Model or path/to/file.py:Model "
        "(default: the types the file declares, or a dataset folder card's features).",
    )
    normalise: Columns = option(
        list(NORMALISE_PARTS),
        help="What two inputs may differ in and still be the same, comma-separated: "
        "unicode, case, punctuation, whitespace (default: all), or none.",
        commands=("validate", "audit", "fix"),
    )
    near_threshold: float = option(
        0.8,
        help="Jaccard index of two inputs' character 5-gram sets at which they are "
        "near-duplicates (TB404, TB406; 0 turns near-duplicates off).",
        commands=("validate", "audit", "fix"),
    )
    permutations: int = option(
        128,
        help="MinHash permutations for near-duplicates (more: a tighter estimate, slower).",
        commands=("validate", "audit", "fix"),
    )
    imbalance: float = option(
        0.1,
        help="TB203 reports a class whose share of the valid rows is below this fraction of an "
        "even share (1/classes), as cleanlab's class-imbalance check does.",
        commands=("validate", "audit", "fix"),
    )
    mixed_share: float = option(
        0.1,
        help="TB003 reports a column whose cells are of two kinds (numbers, booleans, text) "
        "when the rarer kinds are at most this share of its cells.",
        commands=("validate", "audit", "fix"),
    )
    seed: int = option(
        0,
        help="Seed of the leak fix's regrouping (which split a leaking group moves into) and "
        "of the label-issue model's folds.",
        commands=("audit", "fix", "export"),
    )
    features: Columns = option(
        [],
        help="Columns the built-in label-issue model reads besides --text, comma-separated "
        "(default: every numeric, boolean and few-valued text column that is not the id, a "
        "label, the split or the group).",
        commands=("audit", "fix", "export"),
    )

    @field_validator("normalise")
    @classmethod
    def _normalise(cls, v: list[str]) -> list[str]:
        if v == ["none"]:
            return []
        unknown = [p for p in v if p not in NORMALISE_PARTS]
        if unknown:
            raise ValueError(
                f"unknown part {unknown[0]!r}; parts: {', '.join(NORMALISE_PARTS)}, or none"
            )
        return [p for p in NORMALISE_PARTS if p in v]  # the order they are applied in

    @field_validator("near_threshold", "imbalance", "mixed_share")
    @classmethod
    def _fraction(cls, v: float) -> float:
        if not 0 <= v <= 1:
            raise ValueError(f"must be between 0 and 1 (got {v})")
        return v

    @model_validator(mode="after")
    def _roles(self) -> TableOptions:
        """A column may not be the label and an input at once (it would predict itself)."""
        if self.split_map and not self.split:
            raise ValueError("--split-map needs --split (the column whose values it maps)")
        both = set(self.label) & set(self.text)
        if both:
            raise ValueError(f"column {sorted(both)[0]!r} is both --label and --text")
        return self

    # ----------------------------------------------------------------- derived
    def key_columns(self) -> list[str]:
        """What makes two rows the same example: ``--key``, else ``--text``."""
        return list(self.key or self.text)

    def declared(self) -> list[str]:
        """Every column the declaration names, once, in declaration order."""
        named = [self.id, *self.label, self.split, *self.text, self.group, *self.key]
        return list(dict.fromkeys(c for c in named if c))

    def unavailable_tables(self) -> frozenset[str]:
        """The rules' inputs this declaration does not give: a rule needing one is not run
        (the report's ``rules_run`` leaves it out) rather than called clean."""
        missing = set()
        if not self.label:
            missing.add("labels")
        if not self.key_columns():
            # "candidates" stays available with a --group: TB405 declares it for its key
            # mode and never reads it when it compares groups
            missing.add("key_hashes")
            if not self.group:
                missing |= {"units", "candidates"}
        if not self.text or self.near_threshold == 0:
            missing.add("near")
        if self.id is None:
            missing.add("ids")
        if not self.label or self.label_issue_source(built_in=True) is None:
            missing.add("label_scores")
        return frozenset(missing)

    def input_files(self) -> list[Path]:
        """A ``--schema path.py:Model`` file is read (and ``--pred-probs``): the output gate
        protects them."""
        read = super().input_files()
        if self.schema and (path := _schema_path(self.schema)) is not None:
            read.append(path)
        return read


def _schema_path(spec: str) -> Path | None:
    module = spec.rpartition(":")[0]
    return Path(module) if module.endswith(".py") else None


@dataclass(frozen=True)
class ModelSource:
    """The ``--schema`` model as a recipe another process can follow: a zero-argument callable
    that returns the model (built once per process), picklable where the class is not.

    Why not send the class: pickle (and Ray's cloudpickle) send a class by reference, its
    module's name and qualified name, to be imported on the other side. A model from
    ``path/to/models.py`` lives in the file executed as a module of its own under a synthetic
    name (``curate_user_schema_…``): a Ray worker has no module of that name, and unpickling
    failed there. Nor may a worker read the file itself: a relative path names the driver's
    directory, and on a cluster the file is on the driver's machine alone. So the driver ships
    what it executed (the file's bytes, its absolute path as the module's ``__file__``, the
    synthetic name) and each worker process executes those bytes once, under the same name: a
    value of a type the file defines (an enum member) unpickles back on the driver as the
    driver's own class, and the workers validate with the model the driver read even if the
    file changes during the run. A ``module:Model`` model is imported by name, as Ray imports
    any code: from the cluster's environment (Ray puts the driver's working directory on the
    workers' ``sys.path``).
    """

    #: ``--schema`` as given (messages quote it).
    spec: str
    #: The module: an importable name, or the synthetic name the file runs as.
    module: str
    #: The model's name in the module.
    name: str
    #: The file's absolute path and bytes (``path.py:Model``); None for ``module:Model``.
    file: str | None = None
    code: bytes | None = None
    #: The option as the caller spells it (``--schema``, or ``schema`` in Python), taken on
    #: the driver: a worker process does not know how curate was called.
    where: str = "--schema"

    def load(self) -> type[BaseModel]:
        """The model, built now (the module imported, or the file's bytes executed); every
        failure is one line (exit 2), never a traceback: a module that does not import, no such
        name, a name that is no model."""
        where = self.where
        shown = self.spec.rpartition(":")[0]
        try:
            if self.code is not None:
                assert self.file is not None
                found = importlib.util.spec_from_file_location(self.module, self.file)
                if found is None:
                    raise UsageError(f"{where}: {shown}: not a Python file")
                mod = importlib.util.module_from_spec(found)
                sys.modules[self.module] = mod  # dataclasses and pydantic look their module up
                exec(compile(self.code, self.file, "exec"), mod.__dict__)
            else:
                mod = importlib.import_module(self.module)
        except UsageError:
            raise
        except Exception as e:  # the user's module: any error it raises is theirs to read
            first = (str(e).strip().splitlines() or [""])[0]
            raise UsageError(
                f"{where}: {shown} does not import ({type(e).__name__}: {first})"
            ) from e
        model = getattr(mod, self.name, None)
        if model is None:
            raise UsageError(f"{where}: {shown} has no {self.name!r}")
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise UsageError(f"{where}: {shown}:{self.name} is not a Pydantic model")
        return model

    def __call__(self) -> type[BaseModel]:
        """The model, built once per process for these bytes (what a worker calls per task)."""
        key = (self.module, self.name, self.code)
        model = _BUILT.get(key)
        if model is None:
            try:
                model = _BUILT[key] = self.load()
            except UsageError as e:
                if self.code is not None:
                    raise
                # the driver imported it: what differs is this process's environment
                raise UsageError(
                    f"{e} in a worker process (a module:Model model must be importable where "
                    "the workers run: installed there, or in the driver's working directory)"
                ) from None
        return model


#: Models a worker process has built (:meth:`ModelSource.__call__`), by module, name and bytes.
_BUILT: dict[tuple[str, str, bytes | None], type[BaseModel]] = {}


def model_source(spec: str) -> ModelSource:
    """What ``--schema`` names, as a :class:`ModelSource`: ``module:Model`` (imported) or
    ``path.py:Model`` (the file read now, to be executed as a module of its own). A malformed
    spec or a missing file is one line (exit 2)."""
    where = arg("--schema")
    module, sep, name = spec.rpartition(":")
    if not sep or not module or not name:
        raise UsageError(f"{where}: expected module:Model or path/to/file.py:Model, got {spec!r}")
    if not module.endswith(".py"):
        return ModelSource(spec, module, name, where=where)
    path = Path(module)
    if not path.is_file():
        raise UsageError(f"{where}: {path}: no such file")
    try:
        code = path.read_bytes()
    except OSError as e:
        raise UsageError(f"{where}: {path}: {e.strerror or e}") from None
    resolved = path.resolve()
    unique = f"curate_user_schema_{abs(hash(str(resolved)))}"
    return ModelSource(spec, unique, name, str(resolved), code, where)


def load_model(spec: str) -> type[BaseModel]:
    """The model ``--schema`` names: ``module:Model`` (imported) or ``path.py:Model`` (the file
    executed as a module of its own). Every failure is one line (exit 2), never a traceback:
    a missing file, a module that does not import, no such name, a name that is no model."""
    return model_source(spec).load()


def normaliser(parts: list[str]) -> Callable[[pl.Expr], pl.Expr]:
    """The text normal form ``parts`` declare, as a polars expression (vectorised: 10 M cells
    are one pass per part, never Python per cell). :func:`fold` is the same normal form on a
    column, faster where the text is ASCII."""

    def normal(text: pl.Expr) -> pl.Expr:
        out = text
        if "unicode" in parts:
            out = out.str.normalize("NFKC")
        return _after_unicode(out, parts)

    return normal


def _after_unicode(out: pl.Expr, parts: list[str]) -> pl.Expr:
    if "case" in parts:
        out = out.str.to_lowercase()
    if "punctuation" in parts:
        out = out.str.replace_all(_PUNCTUATION, "")
    if "whitespace" in parts:
        # the rare matches only (a run of two or more, or a tab, a newline, a no-break
        # space): "\s+" matches every single space and costs 3x as much on prose
        out = out.str.replace_all(r"\s{2,}|[^\S ]", " ").str.strip_chars()
    return out


def fold(column: pl.Series, parts: list[str]) -> pl.Series:
    """``column`` in the normal form ``parts`` declare (see :func:`normaliser`).

    Why not the expression alone: two steps cost far more than they need on real text. NFKC
    costs ~0.7 µs a cell (7 s for 10 M short texts) and changes nothing in ASCII text, which
    is most of most datasets; white space needs rewriting only where a cell has a run of
    spaces, a tab, a newline or a non-ASCII character, and a regular expression that matches
    every single space costs 3x as much on prose. So each of those runs on the cells that
    need it (found by cheap literal scans: their byte and character lengths differing, a
    double space, a control character), and everything else on every cell."""
    out = column
    wide = (column.str.len_bytes() != column.str.len_chars()).fill_null(False)
    if "unicode" in parts and wide.any():
        at = wide.arg_true()
        # a copy: scatter writes in place, and the column is the table's
        out = out.clone().scatter(at, out.gather(at).str.normalize("NFKC"))
    if "case" in parts:
        out = out.str.to_lowercase()
    if "punctuation" in parts:
        out = out.str.replace_all(_PUNCTUATION, "")
    if "whitespace" in parts:
        odd = wide
        for mark in ("  ", "\t", "\n", "\r", "\x0b", "\x0c"):
            odd = odd | out.str.contains(mark, literal=True).fill_null(False)
        if odd.any():
            at = odd.arg_true()
            spaced = out.gather(at).str.replace_all(r"\s{2,}|[^\S ]", " ").str.strip_chars()
            out = out.scatter(at, spaced) if out is not column else out.clone().scatter(at, spaced)
        # every other cell's only white space is single spaces: stripped where one is at an end
        ends = (out.str.starts_with(" ") | out.str.ends_with(" ")).fill_null(False) & ~odd
        if ends.any():
            at = ends.arg_true()
            trimmed = out.gather(at).str.strip_chars()
            out = (
                out.scatter(at, trimmed) if out is not column else out.clone().scatter(at, trimmed)
            )
    return out
