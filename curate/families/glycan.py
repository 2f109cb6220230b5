"""The glycan family (GlycanML-style task tables): reader, canonical keys, registration, export.

Schema and column detection: :mod:`curate.schemas.glycan`. Tables (:class:`GlycanTable`,
:class:`GlycanData`): :mod:`curate.schemas.glycan_tables`. Parser: :mod:`curate.schemas.iupac`.
Rules, fixes and the grouped re-split: :mod:`curate.audits.glycan`.

Each input becomes a :class:`GlycanTable`: the original columns (``raw``, kept for export) beside a
normalised frame (``rows``) that the rules read — one row per input row with the glycan, its
canonical key or parse error, the split, and every label as a *list* of strings (one element for
ordinary cells, several for list-valued cells such as ``['Homo_sapiens', 'Mus_musculus']``), so
single- and multi-valued tables go through the same rules. Interaction matrices also get a long
``cells`` frame (protein row, glycan column, value) holding the non-empty cells.

Every row is checked, labelled or not: a cell of the wrong kind (an object or a nested list
where a glycan, label, split or number belongs; a list where one value belongs) is a GL001
finding, and every glycan string is parsed (GL101/GL102). Those are the rows ``fix`` and
``export`` never publish (the rules declared ``invalid=True``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pyarrow as pa
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from curate.audits.glycan import RULES, ceiling_accuracy
from curate.audits.shared.label_issues import label_issue_plots, summarise_label_issues
from curate.core.dataset import ChangeEntry, LoadedDataset
from curate.core.diff import DiffSpec
from curate.core.engine import current as current_engine
from curate.core.errors import InputError, arg
from curate.core.findings import InputInfo, Report, dumps, rule_output
from curate.core.fixes import BOOKKEEPING, RECORD, ROW, SPLIT, fix_figures
from curate.core.keys import Keys
from curate.core.options import FamilyOptions
from curate.core.rules import AuditContext, RuleSet
from curate.core.streams import SplitStream
from curate.families.base import CardDefaults, Family, Progress, check_not_blank, no_records
from curate.families.hints import hinted
from curate.io.read import SPLIT_FROM_LAYOUT, nested_kind, read_frame
from curate.io.records import Source, split_of
from curate.io.sniff import Probe
from curate.schemas.glycan import (
    LEVELS,
    PLACEHOLDERS,
    ROW_MODELS,
    SPLIT_NAMES,
    Columns,
    GlycanOptions,
    detect_columns,
    parse_list_cell,
)
from curate.schemas.glycan_tables import (
    GLYCAN_KEYS,
    ID_COLUMNS,
    GlycanData,
    GlycanTable,
    invalid_rows_and_columns,
    single_table,
    split_tables,
)
from curate.schemas.iupac import IUPACError, canonical_key


def key_strings(
    strings: Sequence[str],
) -> tuple[list[str | None], list[str | None], list[int | None], list[str | None]]:
    """Canonical key, or parse error (message, position, kind), of each string: one engine
    unit (a pure function of its strings; batches concatenate in order)."""
    keys: list[str | None] = []
    errors: list[str | None] = []
    positions: list[int | None] = []
    kinds: list[str | None] = []
    for s in strings:
        try:
            keys.append(canonical_key(s))
            errors.append(None)
            positions.append(None)
            kinds.append(None)
        except IUPACError as e:
            keys.append(None)
            errors.append(e.message)
            positions.append(e.position)
            kinds.append("unknown" if e.message.startswith("unknown") else "syntax")
    return keys, errors, positions, kinds


#: Distinct glycan strings per engine task on a cluster (parsing is ~10-50 µs a string).
KEY_BATCH = 20_000


def key_glycans(glycans: pl.Series) -> pl.DataFrame:
    """Canonical key or parse error for each distinct glycan string (parsed once each).

    The parsing is the family's parallel stage: in this process on the local engine, as
    batches of distinct strings on Ray (:mod:`curate.core.engine`)."""
    uniq = glycans.drop_nulls().unique(maintain_order=True)
    strings = uniq.to_list()
    engine = current_engine()
    if engine.is_local():
        keys, errors, positions, kinds = key_strings(strings)
    else:
        size = max(1, min(KEY_BATCH, -(-len(strings) // (4 * engine.parallelism(1)))))
        units = [(strings[a : a + size],) for a in range(0, len(strings), size)]
        keys, errors, positions, kinds = [], [], [], []
        for k, e, p, n in engine.map(key_strings, units, label="glycan batches"):
            keys += k
            errors += e
            positions += p
            kinds += n
    return pl.DataFrame(
        {
            "glycan": uniq,
            "key": pl.Series(keys, dtype=pl.String),
            "error": pl.Series(errors, dtype=pl.String),
            "error_pos": pl.Series(positions, dtype=pl.Int64),
            "error_kind": pl.Series(kinds, dtype=pl.String),
        }
    )


def _label_list(column: pl.Series) -> pl.Series:
    """A label column → list of strings per row: list-valued cells (``"['a', 'b']"``) split,
    empty or null cells → empty list. Each distinct list cell is parsed once.

    A real list column (parquet ``list<string>``, JSON arrays) is already that: its elements are
    taken as they are (numbers as text, null elements dropped).
    """
    if isinstance(column.dtype, pl.Array):
        column = column.arr.to_list()
    if isinstance(column.dtype, pl.List):
        frame = pl.DataFrame({"v": column.cast(pl.List(pl.String))})
        return frame.select(
            pl.when(pl.col("v").is_null())
            .then(pl.lit([], dtype=pl.List(pl.String)))
            .otherwise(pl.col("v").list.drop_nulls())
            .alias(column.name)
        ).to_series()
    col = column.cast(pl.String)
    frame = pl.DataFrame({"v": col})
    listish = col.str.strip_chars_start().str.starts_with("[").fill_null(False)
    if not listish.any():  # the common case, fully vectorised
        return frame.select(
            pl.when(pl.col("v").is_null())
            .then(pl.lit([], dtype=pl.List(pl.String)))
            .otherwise(pl.concat_list("v"))
            .alias(column.name)
        ).to_series()
    parsed = {}
    for v in col.filter(listish).unique().to_list():
        got = parse_list_cell(v)
        parsed[v] = got if got is not None else [v]
    values = [[] if v is None else parsed.get(v, [v]) for v in col.to_list()]
    arr = pa.array(values, type=pa.large_list(pa.large_string()))
    return pl.Series(column.name, pl.from_arrow(arr)).cast(pl.List(pl.String))


#: What each schema column must hold, for the message when a cell holds something else.
_EXPECTS = {
    "glycan": "a glycan string",
    "label": "a label or a list of labels",
    "split": "a split name",
    "split flag": "a 0/1 split flag",
    "protein": "a protein sequence",
    "protein name": "a protein name",
    "interaction value": "a number",
}
_ARTICLE = {"list": "a list", "object": "an object", "nested list": "a nested list"}


def _dtype_kind(dtype: pl.DataType) -> str | None:
    """:func:`curate.io.read.nested_kind` for a whole column of one Arrow type."""
    if isinstance(dtype, pl.List | pl.Array):
        return "nested list" if dtype.inner.is_nested() else "list"
    if isinstance(dtype, pl.Struct) or dtype == pl.Object:
        return "object"
    return None


def _scalar_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"  # what polars' cast of a boolean column writes
    return v if isinstance(v, str) else str(v)


def _cell_text(v: Any) -> str | None:
    """A cell of a mixed-type column as text: scalars as polars would cast them, a list of
    scalars as the list literal the label reader parses (``"['a', 'b']"``), other values JSON."""
    kind = nested_kind(v)
    if v is None or kind is None:
        return None if v is None else _scalar_text(v)
    if kind == "list":
        return repr([None if x is None else _scalar_text(x) for x in v])
    return orjson.dumps(v, default=str, option=orjson.OPT_NON_STR_KEYS).decode()


def _short(v: Any, limit: int = 80) -> str:
    text = v if isinstance(v, str) else _cell_text(v) or ""
    return text if len(text) <= limit else text[:limit] + "…"


Flagged = dict[str, dict[int, str]]  # column → row index → kind of a list/object cell


def _read_table(
    path: str | Path, encoding: str | None = None
) -> tuple[pl.DataFrame, Source, Flagged, dict[int, dict[str, Any]]]:
    """The input as a frame, the mixed-type cells :func:`_read_mixed` found (with their records
    as read), and an error for an input without records."""
    check_not_blank(path)
    try:
        raw, src = read_frame(path, encoding=encoding)
    except InputError as e:
        if e.message.startswith("no records found"):
            raise no_records(path) from None
        if e.message.startswith("unknown file type"):  # an HDF5 file, say
            raise hinted(e, FAMILY, path) from None
        raise
    flagged: Flagged = src.nested_cells
    originals = src.nested_records
    if raw.height == 0:  # a header-only CSV, a parquet file with a schema and no rows
        raise no_records(path)
    return raw, src, flagged, originals


def _binary_labels(labels: pl.Expr) -> pl.Expr:
    """Immunogenicity labels as the classes they are: ``1``, ``1.0`` and `` 1`` are one class
    (``"1"``), as the schema's 0/1 validation already takes them. Why: a table exported through
    a float column spells them ``1.0``; compared as text, one glycan labelled ``1`` and ``1.0``
    would be a label conflict (GL302) and each spelling a class of its own (GL501)."""
    number = pl.element().str.strip_chars().cast(pl.Float64, strict=False)
    return labels.list.eval(
        pl.when(number.is_in([0.0, 1.0]))
        .then(number.cast(pl.Int64).cast(pl.String))
        .otherwise(pl.element())
    )


def _tables_of(paths: Sequence[str | Path]) -> list[list[str | Path]]:
    """The tables the inputs make: each input is its own table (a task of its own), except the
    files of a split mapping (:class:`~curate.io.records.SplitInput`, from a project configuration's
    ``splits``), which are together one table whose split each file gives — as the files of a
    dataset folder are. Why: ``train.csv`` and ``test.csv`` mapped to their splits are one
    task's two halves; read as two tables they would be two tasks, and a glycan in both would
    be cross-task leakage (GL403, a warning) instead of split leakage (GL401/GL402)."""
    units: list[list[str | Path]] = []
    group: list[str | Path] = []
    for p in paths:
        if split_of(p) is not None:
            group.append(p)
        else:
            units.append([p])
    if group:
        units.append(group)
    return units


#: One file of a split mapping: its name, what reading it gave, its row count.
_File = tuple[str, Source, int]


def _read_split_files(
    paths: list[str | Path], encoding: str | None
) -> tuple[pl.DataFrame, Source, Flagged, dict[int, dict[str, Any]], list[str], list[_File]]:
    """The files of a split mapping read as one table: rows in file order, each row's record
    naming its file (``train.csv line 12``, ``test.jsonl #3``), mixed-type cells and originals
    moved to the row's place in the whole table."""
    frames: list[pl.DataFrame] = []
    flagged: Flagged = {}
    originals: dict[int, dict[str, Any]] = {}
    records: list[str] = []
    files: list[_File] = []
    text: set[str] | None = None
    base = 0
    first: Source | None = None
    for path in paths:
        raw, src, fl, orig = _read_table(path, encoding)
        first = first or src
        name = Path(str(path)).name
        if src.format == "csv" and src.row_lines is not None:
            records.extend(f"{name} line {n}" for n in src.row_lines)
        else:
            records.extend(f"{name} #{n}" for n in range(raw.height))
        for col, cells in fl.items():
            flagged.setdefault(col, {}).update({base + r: k for r, k in cells.items()})
        originals.update({base + r: rec for r, rec in orig.items()})
        text = set(src.text_columns) if text is None else text & src.text_columns
        frames.append(raw)
        files.append((str(path), src, raw.height))
        base += raw.height
    assert first is not None
    raw = pl.concat(frames, how="diagonal")
    merged = Source(first.path, first.format, iter(()), first.sha256, text_columns=text or set())
    return raw, merged, flagged, originals, records, files


def _schema_roles(cols: Columns) -> dict[str, str]:
    """Column → what it holds, for every column the task's schema reads."""
    roles: dict[str, str] = {}
    if cols.glycan:
        roles[cols.glycan] = "glycan"
    for col in cols.labels.values():
        roles[col] = "label"
    if cols.split:
        roles[cols.split] = "split"
    for col in cols.split_flags.values():
        roles[col] = "split flag"
    if cols.protein:
        roles[cols.protein] = "protein"
    if cols.protein_name:
        roles[cols.protein_name] = "protein name"
    for col in cols.glycan_columns:
        roles[col] = "interaction value"
    return roles


def malformed_cells(
    raw: pl.DataFrame, cols: Columns, flagged: Flagged
) -> tuple[pl.DataFrame, list[tuple[int, str, str, str]]]:
    """Cells of schema columns that hold the wrong kind of value, and a working copy without them.

    A label cell may be a list of scalars (a real list column is read as the labels it lists);
    every other list, object or nested list in a glycan, label, split, flag, protein or matrix
    column is malformed. Returns the frame the rules read (malformed cells set to null, so no
    rule trips on them twice) and ``(row index, column, kind, value shown)`` for each one.
    """
    replace: list[pl.Series] = []
    bad: list[tuple[int, str, str, str]] = []
    for column, role in _schema_roles(cols).items():
        if column not in raw.columns:
            continue
        series = raw[column]
        kind = _dtype_kind(series.dtype)
        if kind is not None:
            if role == "label" and kind == "list":
                continue
            for i in series.is_not_null().arg_true().to_list():
                bad.append((i, column, kind, _short(series[i])))
            replace.append(pl.Series(column, [None] * series.len(), dtype=pl.String))
            continue
        wrong = {
            i: k
            for i, k in flagged.get(column, {}).items()
            if not (role == "label" and k == "list")
        }
        if wrong:
            values = series.to_list()
            for i, k in sorted(wrong.items()):
                bad.append((i, column, k, _short(values[i])))
                values[i] = None
            replace.append(pl.Series(column, values, dtype=pl.String))
    return (raw.with_columns(replace) if replace else raw), bad


#: The canonical glycan of a row in the frame ``curate diff`` pairs rows on.
GLYCAN_KEY = "__glycan_key"


class GlycanFamily(Family):
    name = "glycan"
    aliases: tuple[str, ...] = ("glycans", "glycanml")
    card: CardDefaults = CardDefaults(
        title="Glycan task tables (GlycanML: taxonomy, immunogenicity, glycosylation, interaction)",
        license="mit",
        task_categories=("text-classification",),
    )
    Options: type[FamilyOptions] = GlycanOptions
    #: A taxonomy fix can ripple up the hierarchy one level per pass: a genus moved to its
    #: majority family may then sit under that family's minority order, found only by the next
    #: re-audit (GL301), and rows it makes equal are dropped by the one after (GL304). Eight
    #: levels, so up to seven GL301 passes and one more; the glycowork species file needs six.
    fix_passes: int | None = len(LEVELS) + 2

    rules: RuleSet = RULES
    #: ``curate overlap --key glycan``: the canonical key of :mod:`curate.schemas.iupac` (the
    #: leakage rules' key), so branch order and linkage spelling do not hide a glycan in two
    #: splits.
    keys: tuple[Keys, ...] = (GLYCAN_KEYS,)

    # ----------------------------------------------------------------- reading
    def sniff(self, probe: Probe) -> str | None:
        """A table whose header tells a glycan task (as :func:`detect_columns` reads it)."""
        if not probe.keys:
            return None
        try:
            cols = detect_columns(sorted(probe.keys))
        except InputError:
            return None
        return f"a glycan {cols.task} table"

    def read(
        self,
        paths: list[str | Path],
        options: FamilyOptions,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
    ) -> GlycanData:
        opts = options
        assert isinstance(opts, GlycanOptions)
        task, columns = opts.task, opts.columns
        tables: list[GlycanTable] = []
        inputs: list[InputInfo] = []
        schema_rows: list[dict[str, Any]] = []
        offset = 0
        for i, unit in enumerate(_tables_of(paths)):
            if len(unit) == 1:
                path = unit[0]
                raw, src, flagged, originals = _read_table(path, encoding)
                records, files = None, [(str(path), src, raw.height)]
            else:
                path = ", ".join(str(p) for p in unit)
                raw, src, flagged, originals, records, files = _read_split_files(unit, encoding)
            given = columns
            if SPLIT_FROM_LAYOUT in raw.columns and (columns or {}).get("split") not in (
                None,
                *raw.columns,
            ):
                # A published folder has its splits as files, not as the column the options of
                # the input named (``--column split=fold``): the same options still read it.
                given = {k: v for k, v in columns.items() if k != "split"}
            header = [c for c in raw.columns if c != SPLIT_FROM_LAYOUT]
            try:
                cols = detect_columns(header, task, given, path=str(path))
            except InputError as e:
                if len(unit) > 1 or e.message.startswith((arg("--column"), "unknown glycan task")):
                    raise
                # no glycan table: a file of another family, maybe (named when it is, and
                # then --task is not what the user needs)
                raise hinted(
                    e, self, path, header, instead="not a glycan table (no glycan or label columns)"
                ) from None
            if any(split_of(p) is not None for p in unit):
                # a project configuration's split mapping names each file's split: it wins
                # over a split column (or split flags) of the files
                cols.split, cols.split_flags = SPLIT_FROM_LAYOUT, {}
            elif SPLIT_FROM_LAYOUT in raw.columns and cols.split is None and not cols.split_flags:
                cols.split = SPLIT_FROM_LAYOUT
            table, errs = self._normalise(
                i, str(path), cols, raw, offset, src.format, flagged, src.row_lines, records
            )
            table.originals = originals
            table.text_columns = frozenset(src.text_columns - set(cols.glycan_columns))
            schema_rows.extend(errs)
            tables.append(table)
            start = 0
            for name, file_src, height in files:
                part = table.rows.slice(start, height) if len(files) > 1 else table.rows
                splits = (
                    dict(part.group_by("split").len().drop_nulls("split").iter_rows())
                    if part.height
                    else {}
                )
                inputs.append(InputInfo(name, file_src.sha256, height, file_src.format, splits))
                start += height
            offset += raw.height
            if progress:
                progress(f"read {Path(path).name}", offset)
        stats = {
            "tables": [
                {
                    "path": t.path,
                    "task": t.task,
                    "rows": t.raw.height,
                    "glycan_column": t.columns.glycan,
                    "labels": t.columns.labels,
                    "split": t.columns.split or (t.columns.split_flags or None),
                    "task_rows": int(t.rows["in_task"].sum()),
                }
                for t in tables
            ]
        }
        return GlycanData(
            family=self.name,
            inputs=inputs,
            schema_findings=rule_output(schema_rows),
            tables=tables,
            stats=stats,
            options=opts,
        )

    def _normalise(
        self,
        index: int,
        path: str,
        cols: Columns,
        raw: pl.DataFrame,
        offset: int,
        fmt: str,
        flagged: Flagged | None = None,
        lines: list[int] | None = None,
        records: list[str] | None = None,
    ) -> tuple[GlycanTable, list[dict[str, Any]]]:
        n = raw.height
        work, bad_cells = malformed_cells(raw, cols, flagged or {})
        id_col = next(
            (c for c in ID_COLUMNS if c in work.columns and not work[c].dtype.is_nested()), None
        )
        if id_col is not None and work[id_col].is_duplicated().any():
            id_col = None
        if id_col is not None:
            record = work[id_col].cast(pl.String)
        elif records is not None:  # several files as one table: each row names its file
            record = pl.Series(records, dtype=pl.String)
        elif fmt == "csv" and lines is not None:
            # the line a reader can jump to: where the row starts (a quoted value may span lines)
            record = pl.Series(lines, dtype=pl.Int64).cast(pl.String).str.replace(r"^", "line ")
        else:
            record = pl.Series([f"#{i}" for i in range(n)], dtype=pl.String)
        split = pl.lit(None, pl.String)
        if cols.split:
            split = pl.col(cols.split).cast(pl.String)
        elif cols.split_flags:
            expr = pl.lit(None, pl.String)
            for name, col in reversed(list(cols.split_flags.items())):
                flag = pl.col(col).cast(pl.String).str.strip_chars().str.to_lowercase()
                expr = (
                    pl.when(flag.is_in(["1", "true", "1.0", "yes"]))
                    .then(pl.lit(name))
                    .otherwise(expr)
                )
            split = expr
        if cols.split or cols.split_flags:
            # A row with no split value is published in train (as every table without a split
            # is): audit it there, so that a leak it makes is found before it is published.
            split = split.fill_null(pl.lit("train"))
        errs: list[dict[str, Any]] = []
        invalid: list[int] = []
        for i, column, kind, shown in bad_cells:
            invalid.append(i + offset)
            errs.append(
                {
                    "row": i + offset,
                    "record": record[i],
                    "field": column,
                    "message": f"{_ARTICLE[kind]} where {_EXPECTS[_schema_roles(cols)[column]]} "
                    f"belongs (got {shown})",
                    "details": {"file": path, "column": column, "value": shown, "kind": kind},
                }
            )
        bad_fields = {(i + offset, column) for i, column, _, _ in bad_cells}
        base = work.select(
            (pl.int_range(n, dtype=pl.Int64) + offset).alias("row"),
            pl.lit(index, pl.Int32).alias("table"),
            record.alias("record"),
            split.alias("split_raw"),
        ).with_columns(
            pl.col("split_raw")
            .str.strip_chars()
            .str.to_lowercase()
            .replace_strict(SPLIT_NAMES, default=pl.col("split_raw"), return_dtype=pl.String)
            .alias("split")
        )
        if cols.task == "interaction":
            table, matrix_errs = self._normalise_matrix(index, path, cols, work, base)
            table.raw = raw
            table.rows = table.rows.with_columns(~pl.col("row").is_in(invalid).alias("valid"))
            return table, errs + matrix_errs
        glycan = work[cols.glycan].cast(pl.String) if cols.glycan else pl.Series([None] * n)
        base = base.with_columns(glycan.alias("glycan"))
        keys = key_glycans(base["glycan"])
        rows = base.join(keys, on="glycan", how="left", maintain_order="left")
        labels = pl.DataFrame(
            [_label_list(work[col]).alias(f"lab_{name}") for name, col in cols.labels.items()]
        )
        rows = pl.concat([rows, labels], how="horizontal")
        if cols.task == "immunogenicity" and "immunogenicity" in cols.labels:
            rows = rows.with_columns(_binary_labels(pl.col("lab_immunogenicity")))
        # A row is part of the task when it has at least one real label (not a placeholder):
        # a multi-purpose table such as v3_sugarbase labels only some rows for each task.
        real = [
            pl.col(f"lab_{n}")
            .list.eval(~pl.element().str.strip_chars().str.to_lowercase().is_in(list(PLACEHOLDERS)))
            .list.any()
            for n in cols.labels
        ]
        rows = rows.with_columns(pl.any_horizontal(real).fill_null(False).alias("labelled"))
        # schema: one pydantic validation per row, on the values the rules will use
        model = ROW_MODELS[cols.task]
        label_col = cols.labels.get(cols.task)
        view = rows.select(
            "row",
            "record",
            "glycan",
            "split",
            *([pl.col(f"lab_{cols.task}").list.first().alias("label")] if label_col else []),
        )
        # The models judge only these values, so each distinct combination is validated once
        # (a million rows hold a few thousand), and only the rows of a failing one are visited.
        judged = [c for c in view.columns if c not in ("row", "record")]
        failed: dict[tuple[Any, ...], list[ErrorDetails]] = {}
        for values in view.select(judged).unique().iter_rows():
            payload = dict(zip(judged, values, strict=True))
            row_model = model
            if label_col:
                label = payload.get("label")
                if label is None or label.strip().lower() in PLACEHOLDERS:
                    row_model = ROW_MODELS["taxonomy"]  # unlabelled: GL203 reports it
            try:
                row_model.model_validate(payload)
            except ValidationError as e:
                failed[values] = e.errors(include_url=False)
        bad_view = (
            view.join(
                pl.DataFrame(list(failed), schema=view.select(judged).schema, orient="row"),
                on=judged,
                how="semi",
                nulls_equal=True,
                maintain_order="left",
            )
            if failed
            else view.clear()
        )
        for r in bad_view.iter_rows(named=True):
            invalid.append(r["row"])
            for err in failed[tuple(r[c] for c in judged)]:
                loc = ".".join(str(x) for x in err["loc"])
                cell_column = {
                    "glycan": cols.glycan,
                    "split": cols.split or "split",
                    "label": label_col,
                }.get(loc, loc)
                if (r["row"], cell_column) in bad_fields:
                    continue  # the cell was a list or an object: reported above
                value = r.get(loc)
                message = f"missing {loc}" if value is None else f"{err['msg']} (got {value!r})"
                errs.append(
                    {
                        "row": r["row"],
                        "record": r["record"],
                        "field": cell_column or loc,
                        "message": message,
                        "details": {"file": path, "column": cell_column, "value": value},
                    }
                )
        rows = (
            rows.with_columns(
                (~pl.col("row").is_in(invalid) & pl.col("glycan").is_not_null()).alias("valid")
            )
            .with_columns((pl.col("valid") & pl.col("labelled")).alias("in_task"))
            .drop("split_raw")
        )
        return GlycanTable(index, path, cols, raw, rows), errs

    def _normalise_matrix(
        self, index: int, path: str, cols: Columns, raw: pl.DataFrame, base: pl.DataFrame
    ) -> tuple[GlycanTable, list[dict[str, Any]]]:
        assert cols.protein is not None  # the column detection refuses a matrix without one
        rows = base.with_columns(
            raw[cols.protein].cast(pl.String).alias("protein"),
            (
                raw[cols.protein_name].cast(pl.String)
                if cols.protein_name
                else pl.lit(None, pl.String)
            ).alias("protein_name"),
            pl.lit(None, pl.String).alias("glycan"),
            pl.lit(None, pl.String).alias("key"),
            pl.lit(None, pl.String).alias("error"),
            pl.lit(True).alias("valid"),
            pl.lit(True).alias("in_task"),
        ).drop("split_raw")
        headers = key_glycans(pl.Series(cols.glycan_columns, dtype=pl.String)).rename(
            {"glycan": "column"}
        )
        cells = (
            pl.concat(
                [rows.select("row", "record"), raw.select(cols.glycan_columns).cast(pl.String)],
                how="horizontal",
            )
            .unpivot(index=["row", "record"], variable_name="column", value_name="value")
            .filter(pl.col("value").is_not_null() & (pl.col("value").str.strip_chars() != ""))
            .with_columns(
                pl.col("value").str.strip_chars().cast(pl.Float64, strict=False).alias("number")
            )
            .join(headers, on="column", how="left")
        )
        # one finding per protein row (its first non-numeric cell and how many there are), so
        # every such row is reported without a finding per cell of a wide matrix
        bad = (
            cells.filter(pl.col("number").is_null())
            .group_by("row", maintain_order=True)
            .agg(pl.col("record").first(), pl.col("column", "value").first(), pl.len().alias("n"))
        )
        errs = [
            {
                "row": r["row"],
                "record": r["record"],
                "field": r["column"],
                "message": f"non-numeric interaction value {_short(r['value'])!r}"
                + (f" (and {r['n'] - 1} more in this row)" if r["n"] > 1 else ""),
                "details": {"file": path, "value": r["value"], "non_numeric_cells": r["n"]},
            }
            for r in bad.iter_rows(named=True)
        ]
        return GlycanTable(index, path, cols, raw, rows, cells), errs

    def summarise(self, report: Report, ctx: AuditContext) -> None:
        """Per-table figures: task rows, label ceiling, records with findings per rule; what
        confident learning said about each scored label (GL305)."""
        data = ctx.data
        assert isinstance(data, GlycanData)
        f = report.findings
        per = []
        for t, info in zip(data.tables, self._table_stats(data), strict=True):
            rows = set(t.rows["row"].to_list())
            mine = f.filter(pl.col("row").is_in(list(rows)))
            info["records_with_findings"] = {
                code: mine.filter(pl.col("rule") == code)["record"].n_unique()
                for code in sorted(set(mine["rule"].to_list()))
            }
            if t.task in ("immunogenicity", "glycosylation"):
                info["label_ceiling"] = ceiling_accuracy(t)
            per.append(info)
        report.stats["tables"] = per
        if (scores := ctx.built("label_scores")) is not None:
            scored = {k: v for k, (_, v) in scores.scored.items()}
            summarise_label_issues(report, scored, scores.source, scores.skipped)

    def _table_stats(self, data: GlycanData) -> list[dict[str, Any]]:
        return [dict(x) for x in data.stats["tables"]]

    # ----------------------------------------------------------------- export / fix
    def plots(self, data: LoadedDataset, report: Report, ctx: AuditContext) -> list[Any]:
        """Label distribution per split, for taxonomy classes per level per split, and the
        given-vs-suggested matrix of each level GL305 flags in."""
        from curate.families.glycan_plots import glycan_plots

        assert isinstance(data, GlycanData)
        return [*glycan_plots(data, report, ctx), *label_issue_plots(report, self.rules)]

    def output_note(self, data: LoadedDataset) -> str:
        """Nothing to add; but ``fix`` and ``export`` take one table, refused here, once the
        tables are read and before the audit, whose label model takes most of a run (issue 36
        review: two tables were refused only after ~30 s of fitting)."""
        assert isinstance(data, GlycanData)
        single_table(data)
        return ""

    def to_tables(self, data: LoadedDataset) -> dict[str, SplitStream]:
        """The table per split without its invalid rows (and, in a matrix, without the glycan
        columns whose header does not parse): see :meth:`invalid_records`.

        Published as its reader typed it, not as the text the rules read: a column whose every
        value is an integer (or a number) written the way the number prints is numeric again
        (:func:`numeric_columns`), and the split column is left out, since each split's rows
        are its own files. Glycan tables are small, so each split is one table sliced into
        record batches.
        """
        assert isinstance(data, GlycanData)
        table = single_table(data)
        rows, columns = invalid_rows_and_columns(table, self.invalid_records(data))
        keep = ~table.rows["row"].is_in(sorted(rows))
        raw = table.raw.filter(keep).drop(columns)
        tables = _published(table, raw, table.rows["split"].filter(keep))
        return {name: SplitStream.from_table(t, max_rows=8192) for name, t in tables.items()}

    # The fix engine (curate.core.fixes) applies the findings' edits; the family lays the rows out.
    def fix_frame(
        self, data: LoadedDataset, invalid: pl.DataFrame
    ) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """The one table's columns as read (``raw``) with the engine's ``__row``, ``__record``
        and ``__split`` (the split each row is in, whatever column or layout said it; train
        when none did), without the split column or 0/1 split flags (each split is its own
        files when published).

        Invalid rows (:meth:`invalid_records`) are left out and logged whole, as read; in an
        interaction matrix, so are the glycan columns whose header does not parse (their values
        logged per protein).
        """
        assert isinstance(data, GlycanData)
        t = single_table(data)
        bad_rows, bad_cols = invalid_rows_and_columns(t, invalid)
        offset = int(t.rows["row"][0]) if t.rows.height else 0
        records = t.rows["record"].to_list()
        changes: list[ChangeEntry] = []
        logged: set[Any] = set()
        for r in invalid.iter_rows(named=True):
            if r["row"] is not None and r["row"] in bad_rows and r["row"] not in logged:
                logged.add(r["row"])
                changes.append(
                    ChangeEntry(
                        r["record"],
                        "",
                        self.fix_original(data, r["row"], {}),
                        None,
                        r["rule"],
                        f"dropped: invalid record ({r['field']}: {r['message']})",
                    )
                )
            elif r["row"] is None and r["field"] in bad_cols and r["field"] not in logged:
                logged.add(r["field"])
                values = {
                    records[i]: v
                    for i, v in enumerate(t.raw[r["field"]].to_list())
                    if v is not None and i + offset not in bad_rows
                }
                changes.append(
                    ChangeEntry(
                        r["record"],
                        r["field"],
                        values,
                        None,
                        r["rule"],
                        f"dropped: glycan column header does not parse ({r['message']})",
                    )
                )
        keep = ~t.rows["row"].is_in(sorted(bad_rows))
        frame = (
            t.raw.filter(keep)
            .drop([c for c in (*bad_cols, *_split_columns(t)) if c in t.raw.columns])
            .with_columns(
                t.rows["row"].filter(keep).alias(ROW),
                t.rows["record"].filter(keep).alias(RECORD),
                # a row without a split is published in train (split_tables)
                t.rows["split"].filter(keep).fill_null("train").alias(SPLIT),
            )
        )
        return frame, changes

    def diff_frame(self, data: LoadedDataset) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """The fix frame with each row's canonical glycan (``__glycan_key``): two versions that
        spell a glycan differently (a fix canonicalised it) still pair on it."""
        assert isinstance(data, GlycanData)
        frame, changes = super().diff_frame(data)
        t = single_table(data)
        keys = t.rows.select(pl.col("row").alias(ROW), pl.col("key").alias(GLYCAN_KEY))
        return frame.join(keys, on=ROW, how="left", maintain_order="left"), changes

    def diff_spec(self, data: LoadedDataset) -> DiffSpec:
        """Rows pair by their id column when the table has one (``glycan_id``, ``id``, ...);
        else (line numbers, which a dropped row shifts) by identical content, then by the
        canonical glycan: a relabelled row is one changed row, not one removed and one added."""
        assert isinstance(data, GlycanData)
        t = single_table(data)
        ident = next(
            (
                c
                for c in ID_COLUMNS
                if c in t.raw.columns
                and t.raw[c].cast(pl.String).equals(t.rows["record"], null_equal=True)
            ),
            None,
        )
        return DiffSpec(
            stable_ids=ident is not None,
            id_columns=(ident,) if ident else (),
            content_key=(GLYCAN_KEY,),
            ignore=(GLYCAN_KEY,),
        )

    def fix_tables(self, frame: pl.DataFrame, data: LoadedDataset) -> dict[str, pa.Table]:
        """The fixed rows as :meth:`to_tables` publishes them: one table per split in frame
        order, numeric columns numeric, no split column."""
        assert isinstance(data, GlycanData)
        t = single_table(data)
        raw = frame.drop([c for c in (*BOOKKEEPING, *_split_columns(t)) if c in frame.columns])
        return _published(t, raw, frame[SPLIT])

    def fix_original(self, data: LoadedDataset, row: int, cells: dict[str, Any]) -> Any:
        """A dropped row in the changelog: the row as read (a cell that held a list or an
        object as it was written; a split read from the folder layout as ``split``)."""
        assert isinstance(data, GlycanData)
        t = single_table(data)
        i = row - int(t.rows["row"][0])
        if not 0 <= i < t.raw.height:
            return cells
        got = t.originals.get(i) or t.raw.row(i, named=True)
        if SPLIT_FROM_LAYOUT in got:
            got = {("split" if k == SPLIT_FROM_LAYOUT else k): v for k, v in got.items()}
        return got

    def fix_summary(
        self, run: Any, data: LoadedDataset, options: FamilyOptions
    ) -> tuple[dict[str, bytes], dict[str, Any]]:
        """``fix_summary.json`` (every summary figure, so the folder says what was done without
        the command's output) and the glycan figures: rows moved between splits and the seed
        of the re-split; for a matrix, glycan columns merged or dropped as invalid."""
        assert isinstance(options, GlycanOptions)
        assert isinstance(data, GlycanData)
        t = single_table(data)
        log = run.changelog
        more: dict[str, Any] = {
            "cells_changed": sum(
                1 for c in log if c.pass_no > 0 and c.field not in ("", "split") and c.old != c.new
            ),
        }
        if t.task == "interaction":
            more["glycan_columns_merged"] = sum(
                1 for c in log if c.pass_no > 0 and c.reason.startswith("column dropped")
            )
            more["invalid_columns_dropped"] = sum(1 for c in log if c.pass_no == 0 and c.field)
        else:
            more["rows_moved_between_splits"] = len(
                {c.record for c in log if c.field == "split" and c.pass_no > 0}
            )
            more["seed"] = options.seed
            more["resplit"] = options.resplit
        summary = {**fix_figures(run, data, self.rules.invalid), **more}
        return {"fix_summary.json": dumps(summary).encode()}, more

    def reaudit_options(
        self, options: FamilyOptions, data: LoadedDataset | None = None
    ) -> FamilyOptions:
        """The fixed data has its splits as files: a ``--column split=...`` mapping names a
        column the published data no longer has, so it is left out of the re-audit."""
        assert isinstance(options, GlycanOptions)
        keep = {k: v for k, v in options.columns.items() if not k.startswith("split")}
        return options.model_copy(update={"columns": keep})


def _split_columns(t: GlycanTable) -> list[str]:
    """The columns that say a row's split (a split column, 0/1 flags, the folder layout)."""
    cols = t.columns
    return [c for c in (cols.split, *cols.split_flags.values(), SPLIT_FROM_LAYOUT) if c]


def _published(t: GlycanTable, raw: pl.DataFrame, split: pl.Series) -> dict[str, pa.Table]:
    """``raw`` (the rows to publish, split columns and all) per split, as published: without
    the split columns, numeric columns numeric again."""
    cols = t.columns
    raw = numeric_columns(
        raw.drop([c for c in _split_columns(t) if c in raw.columns]),
        text=[c for c in (cols.glycan, cols.protein, cols.protein_name) if c]
        + sorted(t.text_columns),
        floats=cols.glycan_columns,
    )
    return split_tables(t, raw, split)


_INTEGER = r"^-?(0|[1-9][0-9]*)$"


def numeric_columns(
    raw: pl.DataFrame, text: Sequence[str] = (), floats: Sequence[str] = ()
) -> pl.DataFrame:
    """Text columns that hold only numbers, as numbers again (other columns unchanged).

    The reader gives the rules every cell as text (so ``" N"`` and ``007`` reach them as
    written); a published table should say 5, not ``"5"``. A column becomes ``Int64`` when every
    non-null value is an integer spelled the way it prints (``-12``, not ``007`` or ``+3``) and
    fits 64 bits, ``Float64`` when every value is such an integer or a float spelled as Python
    prints it (``0.5``, ``1e-05``, ``nan``); so converting loses no spelling the data had beyond
    an integer in a float column. ``text`` columns (glycans, proteins) always stay text;
    ``floats`` (an interaction matrix's glycan columns, numbers by the schema) are ``Float64``
    whenever they parse as numbers, even when a column holds no value at all, so that every
    glycan column of a matrix has one type.
    """
    casts = []
    for name, dtype in raw.schema.items():
        if name in text or dtype != pl.String:
            continue
        if name in floats:
            try:
                casts.append(raw[name].str.strip_chars().cast(pl.Float64, strict=True))
                continue
            except pl.exceptions.InvalidOperationError:
                pass
        values = raw[name].drop_nulls()
        if not values.len():
            continue
        if values.str.contains(_INTEGER).all():
            try:
                casts.append(raw[name].cast(pl.Int64, strict=True))
                continue
            except pl.exceptions.InvalidOperationError:  # beyond 64 bits: not an int64
                pass
        if all(_is_float_text(v) for v in values.unique().to_list()):
            casts.append(raw[name].cast(pl.Float64, strict=True))
    return raw.with_columns(casts) if casts else raw


def _is_float_text(value: str) -> bool:
    if re.match(_INTEGER, value):
        return True
    try:
        return repr(float(value)) == value
    except ValueError:
        return False


FAMILY = GlycanFamily()

__all__ = ["FAMILY", "GlycanData", "GlycanFamily", "GlycanTable", "key_glycans", "numeric_columns"]
