"""Label forms and label values (GL2xx): every label as one long table, and its hygiene rules.

:func:`labels_long` (one row per label value, with the spelling the fixes would write) and
:func:`task_labels` (one comparable label string per row) are read by most glycan rules and by
the fixes; they are cached on the table.
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

from curate.audits.glycan.registry import RULES
from curate.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
    repr_expr,
)
from curate.rules import AuditContext
from curate.schemas.glycan import PLACEHOLDERS, parse_list_cell
from curate.schemas.glycan_tables import (
    GlycanData,
    GlycanTable,
)


def label_tables(data: GlycanData) -> list[GlycanTable]:
    return [t for t in data.tables if t.task != "interaction"]


# --------------------------------------------------------------------------- label forms


def labels_long(t: GlycanTable) -> pl.DataFrame:
    """Cached :func:`_labels_long` (several rules and the fixes read it)."""
    if "labels_long" not in t.cache:
        t.cache["labels_long"] = _labels_long(t)
    return t.cache["labels_long"]


def _labels_long(t: GlycanTable) -> pl.DataFrame:
    """One row per label value: ``value`` as written, ``clean`` stripped, ``norm`` the value the
    fixes would write (stripped, majority spelling among case variants; null for placeholders).
    """
    cols = [f"lab_{n}" for n in t.label_names]
    long = (
        t.rows.filter(pl.col("valid"))
        .select("row", "record", "split", "key", *cols)
        .unpivot(
            index=["row", "record", "split", "key"],
            on=cols,
            variable_name="name",
            value_name="values",
        )
        .with_columns(pl.col("name").str.strip_prefix("lab_"))
        .with_columns(pl.int_ranges(pl.col("values").list.len()).alias("pos"))
        .explode(["values", "pos"])
        .rename({"values": "value"})
        .filter(pl.col("value").is_not_null())
        .with_columns(pl.col("value").str.strip_chars().alias("clean"))
        .with_columns(
            pl.col("clean").str.to_lowercase().is_in(list(PLACEHOLDERS)).alias("placeholder")
        )
    )
    spellings = (
        long.filter(~pl.col("placeholder"))
        .group_by("name", pl.col("clean").str.to_lowercase().alias("fold"), "clean")
        .len()
        .sort(["name", "fold", "len", "clean"], descending=[False, False, True, False])
        .group_by("name", "fold", maintain_order=True)
        .agg(
            pl.col("clean").first().alias("majority"),
            pl.col("clean").n_unique().alias("n_spellings"),
            pl.struct("clean", "len").alias("spellings"),
        )
    )
    return (
        long.with_columns(pl.col("clean").str.to_lowercase().alias("fold"))
        .join(spellings, on=["name", "fold"], how="left")
        .with_columns(
            pl.when(pl.col("placeholder"))
            .then(pl.lit(None, pl.String))
            .otherwise(pl.col("majority"))
            .alias("norm")
        )
    )


def task_labels(t: GlycanTable) -> pl.DataFrame:
    """Per row: its label as one comparable string (sorted normalised values per level)."""
    if "task_labels" in t.cache:
        return t.cache["task_labels"]
    long = labels_long(t)
    per = (
        long.filter(pl.col("norm").is_not_null())
        .group_by("row", "name")
        .agg(pl.col("norm").unique().sort().str.join("|").alias("v"))
    )
    order = {n: i for i, n in enumerate(t.label_names)}
    lab = (
        per.with_columns(pl.col("name").replace_strict(order, return_dtype=pl.Int32).alias("o"))
        .sort("row", "o")
        .group_by("row", maintain_order=True)
        .agg(pl.format("{}={}", "name", "v").str.join("; ").alias("label"))
    )
    out = (
        t.rows.filter(pl.col("in_task"))
        .select("row", "record", "split", "key", "glycan")
        .join(lab, on="row", how="inner")
    )
    t.cache["task_labels"] = out
    return out


def columns_of(t: GlycanTable, name: str) -> str:
    return t.columns.labels.get(name, name)


# --------------------------------------------------------------------------- GL2xx label values


def _rewrite(values: list[str], changes: dict[int, str | None]) -> list[str]:
    """``values`` with ``changes`` (position → new value, None to remove) applied. A changed
    value that is already in the cell is not repeated (``['a ', 'a']`` stripped is ``['a']``);
    values the change does not touch stay as they are, repeats included."""
    kept = [v for k, v in enumerate(values) if k not in changes]
    out: list[str] = []
    for k, v in enumerate(values):
        if k not in changes:
            out.append(v)
            continue
        new = changes[k]
        if new is not None and new not in out and new not in kept:
            out.append(new)
    return out


def rewrite_cell(cell: Any, changes: dict[int, str | None]) -> Any:
    """A raw label cell with ``changes`` applied to its values, in the cell's own form.

    Positions are those of :func:`labels_long` (the cell read as a list the way the reader reads
    it): a real list column stays a list, a list written as text (``"['a', 'b']"``) is written
    back as text, a plain value stays a plain value (None when its only value is removed).
    Returns :data:`NO_EDIT` for a cell this cannot rewrite without changing its type.
    """
    if isinstance(cell, list | tuple):
        if not all(v is None or isinstance(v, str) for v in cell):
            return NO_EDIT
        return _rewrite([v for v in cell if v is not None], changes)
    if not isinstance(cell, str):
        return NO_EDIT
    listed = parse_list_cell(cell) if cell.lstrip().startswith("[") else None
    if listed is not None:
        return repr(_rewrite(listed, changes))
    out = _rewrite([cell], changes)
    return out[0] if out else None


#: :func:`rewrite_cell`'s answer for a cell it leaves alone (None is a value: an emptied cell).
NO_EDIT = object()


def cell_edits(t: GlycanTable, changes: pl.DataFrame) -> pl.DataFrame:
    """``set`` edits of whole label cells: ``changes`` has ``row``, ``name`` (label name),
    ``pos`` and ``new`` (one row per value to change); the answer has ``row``, ``name`` and
    ``fix`` (the JSON edit, null where the cell cannot be rewritten).

    Why whole cells: the engine compares an edit's ``old`` with the cell the table holds, and a
    list cell is one cell however many of its values are wrong. So every finding on one cell
    carries the same edit (the engine applies it once), and it carries only its own rule's
    change: another rule's edit of the same cell is applied first or in the next pass.
    """
    if changes.is_empty():
        return pl.DataFrame(schema={"row": pl.Int64, "name": pl.String, "fix": pl.String})
    offset = int(t.rows["row"][0])
    per_cell: dict[tuple[int, str], dict[int, str | None]] = {}
    for row, name, pos, value in changes.select("row", "name", "pos", "new").iter_rows():
        per_cell.setdefault((row, name), {})[pos] = value
    out_rows, out_names, fixes = [], [], []
    for (row, name), ch in per_cell.items():
        column = columns_of(t, name)
        cell = t.raw[column][row - offset]
        if isinstance(cell, pl.Series):
            cell = cell.to_list()
        new = rewrite_cell(cell, ch)
        out_rows.append(row)
        out_names.append(name)
        if new is NO_EDIT or new == cell:
            fixes.append(None)
        else:
            edit = {"op": "set", "field": column, "old": cell, "new": new}
            fixes.append(orjson.dumps(edit).decode())
    return pl.DataFrame(
        {"row": out_rows, "name": out_names, "fix": fixes},
        schema={"row": pl.Int64, "name": pl.String, "fix": pl.String},
    )


def _label_value_findings(
    data: GlycanData, hits: pl.Expr, message: pl.Expr, details: pl.Expr, new: pl.Expr
) -> pl.DataFrame:
    """Findings on single label values (GL201–GL203): one per value, each with the ``set`` edit
    of its whole cell (:func:`cell_edits`)."""
    parts = []
    for t in label_tables(data):
        long = labels_long(t).filter(hits).with_columns(new.alias("new"))
        edits = cell_edits(t, long)
        long = long.join(edits, on=["row", "name"], how="left", maintain_order="left")
        names = {n: columns_of(t, n) for n in t.label_names}
        parts.append(
            finding_frame(
                long,
                field=pl.col("name").replace_strict(names, return_dtype=pl.String),
                message=message,
                details=details,
                fix=pl.col("fix"),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL201", "label-whitespace", category="label", severity="warning", fix="always")
def label_whitespace(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A label has leading or trailing whitespace (``'Monocotyledons '``).

    Encoders treat it as a class of its own, splitting one class in two and lowering every
    metric on it. Fix (safe): strip; a list cell is rewritten whole.
    """
    return _label_value_findings(
        data,
        (pl.col("value") != pl.col("clean")) & ~pl.col("placeholder"),
        pl.format("label {} has surrounding whitespace", repr_expr("value")),
        json_struct(pl.col("value"), pl.col("clean"), pl.col("pos").alias("list_position")),
        pl.col("clean"),
    )


@RULES.rule("GL202", "label-case-variant", category="label", severity="warning", fix="always")
def label_case_variant(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """One label is spelled with different capitalisation (``Homo_sapiens`` / ``homo_sapiens``).

    Each spelling becomes a separate class. Fix (safe): the most frequent spelling (ties: the
    first in sort order); the finding lists every spelling with its count.
    """
    return _label_value_findings(
        data,
        (pl.col("n_spellings") > 1) & (pl.col("clean") != pl.col("majority")),
        pl.format("label {} is a case variant of {}", repr_expr("clean"), repr_expr("majority")),
        json_struct(pl.col("clean").alias("value"), pl.col("majority"), pl.col("spellings")),
        pl.col("majority"),
    )


@RULES.rule("GL203", "placeholder-label", category="label", severity="warning", fix="sometimes")
def placeholder_label(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A label is a placeholder (``undetermined``, ``unknown``, ``none``, ``NA``, ``-`` ...).

    It means "no label", but a classifier learns it as a class and is scored on predicting it.
    curate treats it as missing everywhere; the fix removes it (an empty value, or the list
    without it). A placeholder in a column that is not text (``NaN`` in a float column) has no
    edit: rewriting it would change the column's type.
    """
    return _label_value_findings(
        data,
        pl.col("placeholder"),
        pl.format("placeholder label {} treated as missing", repr_expr("value")),
        json_struct(pl.col("value")),
        pl.lit(None, pl.String),
    )
