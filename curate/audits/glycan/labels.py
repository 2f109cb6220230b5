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
from curate.core.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
    repr_expr,
)
from curate.core.rules import AuditContext
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
        t.cache["labels_long"], t.cache["label_values"] = _labels_long(t)
    return t.cache["labels_long"]


def label_values(t: GlycanTable) -> pl.DataFrame:
    """One row per distinct (level, value as written): what :func:`labels_long` refers to by
    ``vid``. Columns: ``vid``, ``lv`` (index in ``t.label_names``), ``name``, ``value``,
    ``clean`` (stripped), ``placeholder``, ``majority`` (the most frequent spelling among its case
    variants, ties: the first in sort order), ``n_spellings``, ``spellings`` (each spelling with
    its count), ``norm`` (what the fixes would write; null for placeholders) and ``code`` (the id
    of ``(lv, norm)``, ordered by level and then by ``norm``)."""
    labels_long(t)
    return t.cache["label_values"]


def _labels_long(t: GlycanTable) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One row per label value of a valid row — ``row``, ``lv``, ``pos`` (position in its cell),
    ``vid``, ``code``, ``placeholder``, ``padded`` (surrounding whitespace), ``variant`` (not
    its majority spelling) — and the distinct values they refer to (:func:`label_values`).

    Why integers in the long table: it has a row per label value (eight per row for taxonomy,
    10 M at 1.3 M rows), and every rule groups or joins it; the strings are normalised once per
    distinct value and looked up only for the rows a rule reports.
    """
    names = t.label_names
    valid = t.rows.filter(pl.col("valid"))
    parts = []
    for i, n in enumerate(names):
        cells = valid.select(
            "row", pl.lit(i, pl.UInt8).alias("lv"), pl.col(f"lab_{n}").alias("value")
        )
        size = pl.col("value").list.len()
        # a cell with one value (almost all) needs no explode; list cells keep their positions
        parts.append(
            cells.filter(size == 1).with_columns(
                pl.col("value").list.first(), pl.lit(0, pl.UInt32).alias("pos")
            )
        )
        parts.append(
            cells.filter(size > 1)
            .with_columns(pl.int_ranges(size, dtype=pl.UInt32).alias("pos"))
            .explode("value", "pos")
        )
    # (value, level) as one integer: the key every lookup below uses
    long = (
        pl.concat(parts)
        .filter(pl.col("value").is_not_null())
        .with_columns(
            (
                pl.col("value").cast(pl.Categorical).to_physical().cast(pl.UInt64) * 256
                + pl.col("lv")
            ).alias("cat")
        )
    )
    counts = long.group_by("cat").agg(pl.col("lv", "value").first(), pl.len())
    vals = counts.with_columns(
        pl.col("lv").replace_strict(dict(enumerate(names)), return_dtype=pl.String).alias("name"),
        pl.col("value").str.strip_chars().alias("clean"),
    ).with_columns(
        pl.col("clean").str.to_lowercase().alias("fold"),
        pl.col("clean").str.to_lowercase().is_in(list(PLACEHOLDERS)).alias("placeholder"),
    )
    per = (
        vals.filter(~pl.col("placeholder"))
        .group_by("lv", "fold", "clean")
        .agg(pl.col("len").sum())
        .with_columns(pl.len().over("lv", "fold").alias("n_spellings"))
    )
    # the majority needs a sort only where a value has several spellings (few)
    spellings = pl.concat(
        [
            per.filter(pl.col("n_spellings") == 1).select(
                "lv",
                "fold",
                pl.col("clean").alias("majority"),
                "n_spellings",
                pl.concat_list(pl.struct("clean", "len")).alias("spellings"),
            ),
            per.filter(pl.col("n_spellings") > 1)
            .sort(["lv", "fold", "len", "clean"], descending=[False, False, True, False])
            .group_by("lv", "fold", maintain_order=True)
            .agg(
                pl.col("clean").first().alias("majority"),
                pl.col("n_spellings").first(),
                pl.struct("clean", "len").alias("spellings"),
            ),
        ]
    )
    vals = (
        vals.join(spellings, on=["lv", "fold"], how="left")
        .with_columns(
            pl.when(pl.col("placeholder"))
            .then(pl.lit(None, pl.String))
            .otherwise(pl.col("majority"))
            .alias("norm")
        )
        .with_row_index("vid")
    )
    codes = (
        vals.select("lv", "norm").drop_nulls().unique().sort("lv", "norm").with_row_index("code")
    )
    vals = vals.join(codes, on=["lv", "norm"], how="left", maintain_order="left").drop("fold")
    flags = vals.select(
        "cat",
        "vid",
        "code",
        "placeholder",
        ((pl.col("value") != pl.col("clean")) & ~pl.col("placeholder")).alias("padded"),
        ((pl.col("n_spellings") > 1) & (pl.col("clean") != pl.col("majority")))
        .fill_null(False)
        .alias("variant"),
    )
    long = long.drop("value").join(flags, on="cat", how="left", maintain_order="left")
    return long.drop("cat"), vals.drop("cat", "len")


def with_values(t: GlycanTable, hits: pl.DataFrame) -> pl.DataFrame:
    """``hits`` (rows of :func:`labels_long`) with their value's strings (:func:`label_values`)
    and their row's ``record``: the lookups done only for the rows a rule reports."""
    vals = label_values(t).drop("lv", "code", "placeholder")
    return hits.join(vals, on="vid", how="left", maintain_order="left").join(
        t.rows.select("row", "record"), on="row", how="left", maintain_order="left"
    )


def code_names(t: GlycanTable) -> pl.DataFrame:
    """``code`` → ``lv``, ``name`` (label name) and ``norm`` (the normalised value)."""
    return label_values(t).select("code", "lv", "name", "norm").drop_nulls("code").unique("code")


def row_codes(t: GlycanTable) -> pl.DataFrame:
    """The distinct (row, code) pairs of :func:`labels_long`, sorted by row and code (cached).

    Why packed: (row, code) as one integer is one numeric sort that orders every row's classes
    and puts repeats side by side; ``unique`` on the pair, or polars' per-list sort, is 5-20x
    slower on a million rows.
    """
    if "row_codes" not in t.cache:
        shift = 2**32
        packed = (
            labels_long(t)
            .filter(pl.col("code").is_not_null())
            .select(
                (pl.col("row").cast(pl.UInt64) * shift + pl.col("code").cast(pl.UInt64)).alias("k")
            )
            .sort("k")
            .filter((pl.col("k") != pl.col("k").shift()).fill_null(True))
        )
        t.cache["row_codes"] = packed.select(
            (pl.col("k") // shift).cast(pl.Int64).set_sorted().alias("row"),
            (pl.col("k") % shift).cast(pl.UInt32).alias("code"),
        )
    return t.cache["row_codes"]


def task_labels(t: GlycanTable) -> pl.DataFrame:
    """Per row of the task: its label as one comparable string (``label``: the sorted
    normalised values of each level, ``species=a|b; genus=c``) and as an integer (``label_id``,
    equal for equal labels).

    Built on integer codes: each row's sorted set of value codes is its label; the string is
    written once per distinct label, not once per row.
    """
    if "task_labels" in t.cache:
        return t.cache["task_labels"]
    per = row_codes(t).group_by("row", maintain_order=True).agg(pl.col("code"))
    labs = per.select("code").unique().with_row_index("label_id")
    pieces = (
        labs.explode("code")
        .join(code_names(t), on="code", how="left")
        .sort("label_id", "code")
        .with_columns(
            pl.when(pl.struct("label_id", "lv").is_first_distinct())
            .then(
                pl.when(pl.col("label_id").is_first_distinct())
                .then(pl.lit(""))
                .otherwise(pl.lit("; "))
                + pl.col("name")
                + "="
                + pl.col("norm")
            )
            .otherwise("|" + pl.col("norm"))
            .alias("piece")
        )
        .group_by("label_id", maintain_order=True)
        .agg(pl.col("piece"))
        .select("label_id", pl.col("piece").list.join("").alias("label"))
    )
    per = per.join(labs, on="code", how="left").select("row", "label_id")
    out = (
        t.rows.filter(pl.col("in_task"))
        .select("row", "record", "split", "key", "glycan")
        .join(per, on="row", how="inner", maintain_order="left")
        .join(pieces, on="label_id", how="left", maintain_order="left")
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
    out_rows: list[int] = []
    out_names: list[str] = []
    fixes: list[str | None] = []
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
    of its whole cell (:func:`cell_edits`). ``hits`` selects rows of :func:`labels_long`; the
    other expressions also see the value's strings (:func:`with_values`)."""
    parts = []
    for t in label_tables(data):
        hit = labels_long(t).filter(hits).sort("lv", "row", "pos")
        long = with_values(t, hit).with_columns(new.alias("new"))
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
        pl.col("padded"),
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
        pl.col("variant"),
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
