"""GlycanML-style glycan task tables: column detection and row models.

Four tasks, as published by GlycanML and its upstream (glycowork):

* **taxonomy** — a glycan and its labels at eight levels, Species … Domain (capitalised upstream,
  lower-case in GlycanML; list-valued cells such as ``['Homo_sapiens']`` in ``v3_sugarbase``);
* **immunogenicity** — a glycan and a 0/1 label;
* **glycosylation** — a glycan and its link type, ``N``, ``O`` or ``free``;
* **interaction** — a protein–glycan matrix: one row per protein, one numeric column per glycan.

The split is either one ``split`` column (train / validation / test) or one 0/1 column per split.
Column names are detected from the header (case-insensitive) and can be overridden; detection is
what a user would otherwise do by eye, so it is strict: ambiguous headers are an error, not a guess.
"""

from __future__ import annotations

import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, StringConstraints

from curate.core.errors import InputError, arg
from curate.core.options import CommaList, LabelIssueOptions, option
from curate.schemas.splits import SPLIT_NAMES

TASKS = ("taxonomy", "immunogenicity", "glycosylation", "interaction")
LEVELS = ("species", "genus", "family", "order", "class", "phylum", "kingdom", "domain")
GLYCAN_COLUMNS = ("glycan", "target", "iupac", "glycan_iupac", "sequence")
LABEL_COLUMNS = {
    "immunogenicity": ("immunogenicity", "label", "immunogenic"),
    "glycosylation": ("link", "glycosylation", "glycosylation_type", "label"),
}
PROTEIN_COLUMNS = ("target", "protein_sequence", "sequence", "aa_sequence")
PROTEIN_NAME_COLUMNS = ("protein", "protein_name", "name")
SPLIT_COLUMN = ("split",)
#: Cell values that mean "no label" in the real files; rules report them, fixes null them.
PLACEHOLDERS = frozenset(
    {"", "undetermined", "unknown", "unclassified", "none", "na", "n/a", "nan", "null", "-", "[]"}
)

_LIST_CELL = re.compile(r"^\s*\[(?P<body>.*)\]\s*$", re.S)
_QUOTED = re.compile(r"""\s*(?:'(?P<s>(?:[^'\\]|\\.)*)'|"(?P<d>(?:[^"\\]|\\.)*)")\s*(?:,|$)""")


def parse_list_cell(value: Any) -> list[str] | None:
    """``"['Homo_sapiens', 'Mus_musculus']"`` → list; other values → None (not a list cell).

    A small regex reader of Python list-of-string literals rather than ``ast.literal_eval``:
    cells are data, and the compiler is both slower and more than a data cell deserves.
    """
    if not isinstance(value, str):
        return None
    m = _LIST_CELL.match(value)
    if m is None:
        return None
    body = m.group("body")
    out: list[str] = []
    pos = 0
    while pos < len(body) and body[pos:].strip():
        q = _QUOTED.match(body, pos)
        if q is None:
            return None
        text = q.group("s") if q.group("s") is not None else q.group("d")
        if "\\" in text:  # Python escapes (\\', \\n, \\U0001123f), decoded without eval
            text = text.encode("latin-1", "backslashreplace").decode("unicode_escape")
        out.append(text)
        pos = q.end()
    return out


@dataclass
class Columns:
    """Which columns of a table hold what (detected, or given by the user)."""

    task: str
    glycan: str | None = None
    labels: dict[str, str] = field(default_factory=dict)  # canonical name → column
    split: str | None = None
    split_flags: dict[str, str] = field(default_factory=dict)  # split name → 0/1 column
    protein: str | None = None
    protein_name: str | None = None
    glycan_columns: list[str] = field(default_factory=list)  # interaction matrix

    @property
    def label_names(self) -> list[str]:
        return list(self.labels)


def _find(
    header: list[str], names: tuple[str, ...], exclude: AbstractSet[str] = frozenset()
) -> str | None:
    lower = {h.lower().strip(): h for h in header if h not in exclude}
    for n in names:
        if n in lower:
            return lower[n]
    return None


#: At most this many column names in a "no such column" message.
_SHOWN_COLUMNS = 12


def _columns_hint(header: list[str], wanted: str) -> str:
    """What the file has, short enough for one line: close matches first, then the label
    columns; a binding matrix's hundreds of glycan columns are counted, not listed (a user
    mistyping ``protein`` should not get a 60 KB line of sequences)."""
    import difflib

    close = difflib.get_close_matches(wanted, header, n=3, cutoff=0.6)
    glycans = [h for h in header if _matrix_glycan_header(h)]
    plain = [h for h in header if h not in set(glycans)]
    shown = plain[:_SHOWN_COLUMNS]
    rest = len(plain) - len(shown)
    have = ", ".join(shown) + (f" and {rest} more" if rest else "")
    if glycans:
        have += f"{', ' if shown else ''}{len(glycans)} glycan columns"
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return f"{hint}{len(header)} columns: {have}"


def detect_columns(
    header: list[str],
    task: str | None = None,
    overrides: dict[str, str] | None = None,
    *,
    path: str = "",
) -> Columns:
    """Detect the task and its columns from a header; raises InputError when it cannot."""
    overrides = {k: v for k, v in (overrides or {}).items() if v}
    for k, v in overrides.items():
        if v not in header:
            raise InputError(
                f"{arg('--column', {k: v})}: no such column ({_columns_hint(header, v)})", path=path
            )
    if task is not None and task not in TASKS:
        raise InputError(f"unknown glycan task {task!r}; use one of {', '.join(TASKS)}", path=path)
    lower = {h.lower().strip(): h for h in header}
    levels = {lvl: lower[lvl] for lvl in LEVELS if lvl in lower}
    glyc_matrix = [h for h in header if _matrix_glycan_header(h)]
    if task is None:
        if len(levels) >= 2:
            task = "taxonomy"
        elif _find(header, LABEL_COLUMNS["immunogenicity"][:1]):
            task = "immunogenicity"
        elif _find(header, ("link", "glycosylation", "glycosylation_type")):
            task = "glycosylation"
        elif len(glyc_matrix) >= 2:
            task = "interaction"
        else:
            raise InputError(
                "cannot tell which glycan task this table is (no taxonomy levels, no "
                f"immunogenicity/link column, no glycan columns): pass {arg('--task')}",
                path=path,
            )
    cols = Columns(task=task)
    split = overrides.get("split") or _find(header, SPLIT_COLUMN)
    cols.split = split
    if split is None:
        for h in header:
            name = SPLIT_NAMES.get(h.lower().strip())
            if name and name not in cols.split_flags:
                cols.split_flags[name] = h
        if len(cols.split_flags) < 2:
            cols.split_flags = {}
    if task == "interaction":
        cols.protein = overrides.get("protein") or _find(header, PROTEIN_COLUMNS)
        # the other protein column (a name beside the sequence; or, when --column protein=
        # chose the name column as the key, the sequence column): never a glycan column
        cols.protein_name = _find(header, PROTEIN_NAME_COLUMNS, {cols.protein or ""}) or _find(
            header, PROTEIN_COLUMNS, {cols.protein or ""}
        )
        used = {cols.protein, cols.protein_name, cols.split, *cols.split_flags.values()}
        # every other column of a matrix is a glycan (headers that do not parse are reported),
        # except the row index pandas writes by default
        cols.glycan_columns = [h for h in header if h not in used and not _index_column(h)]
        if cols.protein is None or not cols.glycan_columns:
            raise InputError(
                "interaction matrix needs a protein column (target/sequence) and glycan columns",
                path=path,
            )
        return cols
    cols.glycan = overrides.get("glycan") or _find(header, GLYCAN_COLUMNS)
    if cols.glycan is None:
        raise InputError(
            f"no glycan column (looked for {', '.join(GLYCAN_COLUMNS)}; "
            f"use {arg('--column', {'glycan': 'NAME'})})",
            path=path,
        )
    if task == "taxonomy":
        if not levels:
            raise InputError("taxonomy task needs Species…Domain columns", path=path)
        cols.labels = levels
    else:
        col = overrides.get("label") or _find(header, LABEL_COLUMNS[task])
        if col is None:
            raise InputError(
                f"no {task} label column (looked for "
                f"{', '.join(LABEL_COLUMNS[task])}; use {arg('--column', {'label': 'NAME'})})",
                path=path,
            )
        cols.labels = {task: col}
    return cols


def _index_column(h: str) -> bool:
    return h.strip() == "" or bool(re.fullmatch(r"Unnamed: \d+|index|__index_level_\d+__", h))


def _matrix_glycan_header(h: str) -> bool:
    """Is this header a glycan? Yes if it parses, or if it has a linkage like ``(a1-3)`` (then
    it is a malformed glycan, which GL101/GL102 report, not some other column)."""
    from curate.schemas.iupac import IUPACError, canonical_key

    try:
        canonical_key(h)
        return True
    except IUPACError:
        return bool(re.search(r"\([ab?]?[0-9?]-[0-9?/]*\)", h))


def normalise_split(value: Any) -> str | None:
    if value is None:
        return None
    return SPLIT_NAMES.get(str(value).strip().lower(), str(value))


# --------------------------------------------------------------------------- row models


def _strip(v: Any) -> Any:
    # Whitespace around a label is reported by its own rule (GL201); the schema judges the value.
    return v.strip() if isinstance(v, str) else v


def _binary(v: Any) -> Any:
    v = _strip(v)
    if isinstance(v, str) and v in ("0", "1", "0.0", "1.0"):
        return int(float(v))
    if isinstance(v, float) and v in (0.0, 1.0):
        return int(v)
    return v


class GlycanRow(BaseModel):
    """What every task row needs: a non-empty glycan string and a known split (or none)."""

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="ignore", strict=False)

    glycan: Annotated[str, StringConstraints(min_length=1)]
    split: Literal["train", "validation", "test"] | None = None


class ImmunogenicityRow(GlycanRow):
    label: Annotated[Literal[0, 1], BeforeValidator(_binary)]


class GlycosylationRow(GlycanRow):
    label: Annotated[Literal["N", "O", "free"], BeforeValidator(_strip)]


ROW_MODELS: dict[str, type[GlycanRow]] = {
    "taxonomy": GlycanRow,
    "immunogenicity": ImmunogenicityRow,
    "glycosylation": GlycosylationRow,
}


# --------------------------------------------------------------------------- options

#: What ``--column KEY=NAME`` may override.
COLUMN_KEYS = ("glycan", "label", "split", "protein")


def _column_pairs(v: Any) -> Any:
    """``["glycan=seq", "label=Link"]`` (the CLI's repeated flag) → ``{"glycan": "seq", ...}``."""
    if isinstance(v, str):
        v = [v]
    if isinstance(v, list | tuple):
        out: dict[str, str] = {}
        for item in v:
            key, sep, value = str(item).partition("=")
            if not sep or not key.strip() or not value:
                raise ValueError(f"{item!r}: expected KEY=NAME")
            out[key.strip()] = value
        v = out
    if isinstance(v, dict):
        unknown = sorted(set(v) - set(COLUMN_KEYS))
        if unknown:
            raise ValueError(f"unknown column role {unknown[0]!r}; use {', '.join(COLUMN_KEYS)}")
    return v


class GlycanOptions(LabelIssueOptions):
    """Options of the glycan family (label issues by confident learning included: GL305)."""

    task: Literal["taxonomy", "immunogenicity", "glycosylation", "interaction"] | None = option(
        None, help="Glycan task (detected from the header when omitted)."
    )
    columns: Annotated[dict[str, str], BeforeValidator(_column_pairs)] = option(
        {},
        help="Override a detected column: glycan=NAME, label=NAME, split=NAME, protein=NAME "
        "(repeatable).",
        flag="--column",
    )
    seed: int = option(
        0,
        help="Seed of the grouped re-split and of the label model's folds.",
        commands=("audit", "fix", "export"),
    )
    resplit: bool = option(True, help="Re-split grouped by canonical key.", commands=("fix",))
    mapping: Path | None = option(
        None,
        help='JSON {"<level>": {"<child>": "<parent>"}} overriding taxonomy fixes.',
        commands=("fix",),
    )

    label_levels: CommaList = option(
        [],
        help="Taxonomy levels the built-in label model scores, comma-separated (default: the "
        "levels of at most 20 classes; at most 200 classes each).",
        commands=("audit", "fix", "export"),
    )
    label_level: str | None = option(
        None,
        help="The label (taxonomy level) --pred-probs scores, where the table has several.",
        commands=("audit", "fix", "export"),
    )

    def input_files(self) -> list[Path]:
        """``--mapping`` and ``--pred-probs`` are read: the output gate protects them."""
        read = super().input_files()
        return [*read, self.mapping] if self.mapping is not None else read

    def unavailable_tables(self) -> frozenset[str]:
        """No label scores with ``--label-model none`` and no ``--pred-probs``."""
        missing = set(super().unavailable_tables())
        if self.label_issue_source(built_in=True) is None:
            missing.add("label_scores")
        return frozenset(missing)
