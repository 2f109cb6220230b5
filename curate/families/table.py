"""The ``table`` family: any dataset declared by its columns' roles and, optionally, a model.

``curate audit table data.csv --id id --label y --split split --text question`` audits a table
nobody wrote a family for. The declaration (:class:`~curate.schemas.table.TableOptions`) says
which column is what; the rules (:mod:`curate.audits.table`) read it at run time. What a family
otherwise writes comes from :class:`~curate.families.records.RecordsFamily`: publishing the
valid rows per split, the fix frame, the changelog's rows as read.

Types: with ``--schema`` every row is checked against the user's Pydantic model (columnwise
where its fields allow, the model's own verdicts, :func:`~curate.schemas.records.validate_frame`
on the cells as text, so a verdict never depends on the format). Without one the types come
from the file: parquet and Arrow columns as stored; a text format's columns as their text
spells them (:func:`infer_types`). The published dataset keeps those types.

On ``--engine ray`` the model's pydantic calls are the family's parallel stage: slices of rows
(a model with validators) or batches of a field's distinct values, as Ray tasks that build the
model themselves from what the driver read (:class:`~curate.schemas.table.ModelSource`), merged
in order: the report is the local one.

Why the read does not go through :func:`~curate.io.read.read_frame` for parquet: that reader
makes a Python object per cell (fine for the hand-sized files the other families validate
row by row); a 10 M-row parquet table must reach the rules as Arrow, untouched
(:func:`~curate.io.typed.read_table`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
import pyarrow as pa
from pydantic import BaseModel

from curate.audits.shared.label_issues import label_issue_plots, summarise_label_issues
from curate.audits.shared.records import RecordsData
from curate.audits.table import RULES
from curate.core.dataset import LoadedDataset
from curate.core.diff import DiffSpec
from curate.core.errors import InputError
from curate.core.findings import InputInfo, Report
from curate.core.keys import SPLIT_ORDER
from curate.core.options import FamilyOptions
from curate.core.plots import Plot
from curate.core.rules import AuditContext, RuleSet
from curate.families.base import (
    CardDefaults,
    InputSpec,
    Progress,
    check_not_blank,
    no_records,
    unmatched_split_map,
)
from curate.families.hints import hinted
from curate.families.records import SPLIT_NAMES, RecordsFamily, record_rows, with_problems
from curate.io.folders import card_features
from curate.io.read import SPLIT_FROM_LAYOUT
from curate.io.records import SplitInput, brief, split_of
from curate.io.typed import (
    BOOLEAN_WORDS,
    CLASS_LABELS,
    class_label_names,
    infer_types,
    named_classes,
    read_table,
)
from curate.schemas.records import invalid_schema, plan_fields, validate_frame
from curate.schemas.table import TableOptions, model_source

__all__ = ["FAMILY", "TableData", "TableFamily", "infer_types", "text_cells"]

#: No problem found (the columns of :func:`~curate.schemas.records.validate_frame`'s problems).
_NO_PROBLEMS = pl.DataFrame(schema=invalid_schema())


def card_types(
    frame: pl.DataFrame, features: list[Any], where: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A text frame cast to the types a dataset card's ``features`` declare, as ``datasets``
    casts a CSV or JSON folder on load: ``(typed, problems)``, one problem per cell its type
    cannot hold (TB001: "not an int64 (the card's features)"). A ``ClassLabel`` column takes
    its names or their indexes and is read as the names (one spelling per class; published as
    ``ClassLabel`` again, :func:`_as_class_labels`); a column the card does not
    type (or types as nested) is typed by its spelling (:func:`infer_types`)."""
    from datasets import ClassLabel, Features, Value

    try:
        declared = Features._from_yaml_list(features)
    except Exception as e:  # datasets raises plain exceptions for unknown dtypes
        raise InputError(f"the card's features are not valid ({brief(e)})", path=where) from None
    rest = infer_types(frame.select([c for c in frame.columns if c not in declared]))
    out: list[pl.Series] = []
    problems = [_NO_PROBLEMS]
    for name, s in frame.to_dict().items():
        feature = declared.get(name)
        if s.dtype != pl.String or not isinstance(feature, Value | ClassLabel):
            out.append(rest[name] if name in rest.columns else s)
            continue
        text = s.str.strip_chars()
        present = text.is_not_null() & (text != "")
        if isinstance(feature, ClassLabel):
            index = text.str.to_integer(strict=False)
            ok = text.is_in(feature.names) | ((index >= 0) & (index < feature.num_classes))
            shown = ", ".join(feature.names[:8]) + (", ..." if feature.num_classes > 8 else "")
            what = f"one of the card's class names ({shown}) or 0-{feature.num_classes - 1}"
            # one spelling per class, its name: "1" and "positive" are one label to the rules
            by_index = {str(i): n for i, n in enumerate(feature.names)}
            typed = (
                index.cast(pl.String)
                .replace_strict(by_index, default=None, return_dtype=pl.String)
                .fill_null(text.set(~text.is_in(feature.names), None))
                .alias(name)
            )
        else:
            empty = pl.from_arrow(pa.array([], feature.pa_type))
            assert isinstance(empty, pl.Series)  # an Arrow array becomes a Series
            dtype = empty.dtype
            if dtype == pl.String:
                out.append(s)
                continue
            if dtype == pl.Boolean:
                low = text.str.to_lowercase()
                typed = low.replace_strict(BOOLEAN_WORDS, default=None, return_dtype=pl.Boolean)
            else:
                typed = text.cast(dtype, strict=False)
            ok = typed.is_not_null()
            what = f"{'an' if feature.dtype[0] in 'aeiou' else 'a'} {feature.dtype}"
            typed = typed.set(~present, None).alias(name)
        bad = pl.DataFrame({"v": s, "bad": present & ~ok.fill_null(False)}).with_row_index("row")
        problems.append(
            bad.filter("bad").select(
                pl.col("row").cast(pl.Int64),
                pl.lit(name).alias("field"),
                pl.lit(f"not {what} (the card's features)").alias("message"),
                pl.col("v").alias("value"),
            )
        )
        out.append(typed)
    return pl.DataFrame(out), pl.concat(problems).sort("row", maintain_order=True)


def _missing(values: pl.DataFrame, options: TableOptions) -> pl.Series:
    """Rows whose ``--id``, ``--label`` or ``--text`` cell is empty (null, or white space
    only): TB002's rows, unpublishable, and like TB001's taking no part in any other rule (a
    row without its label is no evidence of a conflict or of imbalance)."""
    required = list(
        dict.fromkeys([*([options.id] if options.id else []), *options.label, *options.text])
    )
    gone = []
    for c in required:
        if c not in values.columns:
            continue
        e = pl.col(c).is_null()
        if values.schema[c] == pl.String:
            # no character but white space: a search that stops at the first one (half the
            # time of stripping 10 M long cells to compare them with "")
            e = e | ~pl.col(c).str.contains(r"\S").fill_null(True)
        gone.append(e)
    if not gone:
        return pl.repeat(False, values.height, eager=True)
    # one select: polars runs the columns' searches in parallel
    return values.select(pl.any_horizontal(gone)).to_series()


#: The words a data file's name gives its split by: those ``datasets.load_dataset`` reads a
#: folder of data files with (``eval`` and ``evaluation`` are its test split).
FILE_SPLIT_WORDS = {
    **{w: "train" for w in ("train", "training")},
    **{w: "validation" for w in ("validation", "valid", "val", "dev")},
    **{w: "test" for w in ("test", "testing", "eval", "evaluation")},
}


def splits_from_names(paths: list[Any], options: TableOptions) -> list[Any]:
    """Several files and no ``--split`` column: each file's rows in the split its name says
    (``train.csv``, ``test.csv``, ``my-eval-2.jsonl``: one of :data:`FILE_SPLIT_WORDS` among
    the words of its name), when every file's name says exactly one and they do not all say
    the same; otherwise the paths as given (every row then in train).

    Why: ``curate fix table train.csv test.csv`` read both files as one table in train: a
    test row that copied a training row was a duplicate, dropped by a "safe" fix, and the
    test set was published as training data. ``datasets.load_dataset`` names a folder's data
    files' splits by the same words; given a ``--split`` column, or a split already known (a
    project's ``splits`` mapping), names are not read."""
    if options.split is not None or len(paths) < 2:
        return paths
    named: list[Any] = []
    for p in paths:
        if not isinstance(p, str | Path) or split_of(p) is not None:
            return paths
        text = str(p)
        if text == "-" or text.startswith("hf://") or Path(text).is_dir():
            return paths
        words = {
            FILE_SPLIT_WORDS[w]
            for w in re.split(r"[^a-z]+", Path(text).name.lower())
            if w in FILE_SPLIT_WORDS
        }
        if len(words) != 1:
            return paths
        named.append(SplitInput(text, words.pop()))
    if len({n.split_name for n in named}) < 2:
        return paths
    return named


def _unmatched_split_map(options: TableOptions, written: set[str]) -> None:
    """:func:`~curate.families.base.unmatched_split_map` for the table's split column."""
    if not options.split_map or options.split is None:
        return
    unmatched_split_map(options.split_map, written, options.split)


def _mapped(
    frame: pl.DataFrame, options: TableOptions, split: pl.Series
) -> tuple[pl.Series, set[str]]:
    """``--split-map`` applied to the split column's values as written (``True``, ``1``,
    ``eval``; any case), before the canonical spellings; a value it does not name keeps its
    split. Also the values as written, lower-cased (:func:`_unmatched_split_map`)."""
    if options.split is None or options.split not in frame.columns:
        return split, set()
    # compared without case: a parquet boolean reads "true" where the CSV said "True"
    written = text_cells(frame.select(options.split)).to_series().str.strip_chars()
    lower = written.str.to_lowercase()
    keys = {k.lower(): v for k, v in options.split_map.items()}
    mapped = lower.replace_strict(keys, default=None, return_dtype=pl.String)
    low = mapped.str.to_lowercase()
    canon = low.replace_strict(SPLIT_NAMES, default=mapped, return_dtype=pl.String)
    return canon.fill_null(split).alias("split"), set(lower.drop_nulls().unique().to_list())


def text_cells(frame: pl.DataFrame) -> pl.DataFrame:
    """Every column as text (what a model's columnwise checks read): numbers as written,
    booleans as ``true``/``false``, lists and structs as JSON."""
    out = []
    for name, s in frame.to_dict().items():
        if s.dtype == pl.String:
            out.append(s)
        elif s.dtype == pl.Boolean:
            out.append(s.replace_strict({True: "true", False: "false"}, return_dtype=pl.String))
        elif s.dtype.is_nested():
            out.append(
                pl.Series(
                    name, [None if v is None else _json(v) for v in s.to_list()], dtype=pl.String
                )
            )
        else:
            out.append(s.cast(pl.String))
    return pl.DataFrame(out)


def _json(value: Any) -> str:
    import orjson

    return orjson.dumps(value, default=str).decode()


@dataclass
class TableData(RecordsData):
    """A declared table as read: :class:`RecordsData` plus what publishing and the rules need
    beyond it."""

    #: The ``--schema`` model, if any.
    model: type[BaseModel] | None = None
    #: Columns read as text and typed here (:func:`infer_types`): TB003 reads them as written.
    inferred: frozenset[str] = frozenset()
    #: Value columns as published: value name → column name, in order.
    published: dict[str, str] = field(default_factory=dict)
    #: ``ClassLabel`` columns (the input's Hugging Face features or card): column → class
    #: names, index order. Read as the names; published as ``ClassLabel`` again.
    class_labels: dict[str, list[str]] = field(default_factory=dict)
    #: ``ClassLabel`` columns whose input wrote "no label" as ``-1`` (``datasets``' own
    #: spelling: every GLUE test split) and never as null: read as null like any missing label,
    #: published as ``-1`` again, so that code testing ``label == -1`` on the remaster still works.
    no_label: frozenset[str] = frozenset()


class TableFamily(RecordsFamily):
    """Any table, declared by :class:`~curate.schemas.table.TableOptions` (see the module)."""

    name = "table"
    aliases: tuple[str, ...] = ("tabular",)
    rules: RuleSet = RULES
    Options: type[FamilyOptions] = TableOptions
    card: CardDefaults = CardDefaults(title="A table audited by curate")
    inputs: InputSpec = InputSpec(
        help="The table: CSV/TSV, JSON, JSON Lines, parquet, a dataset folder (FOLDER:CONFIG "
        "for one config), hf://datasets/..., or - for standard input; .gz/.zst compressed.",
        frames=True,
    )
    id_field: ClassVar[str | None] = None
    split_field: ClassVar[str | None] = None

    def read(
        self,
        paths: list[str | Path],
        options: FamilyOptions,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
    ) -> TableData:
        """Each input read with its own types (:func:`~curate.io.typed.read_table`, or a frame
        given in memory), the declared columns checked to exist (exit 2, one line), the split
        resolved (:func:`splits_from_names` for several files and no ``--split``), the rows
        checked against ``--schema`` when given."""
        assert isinstance(options, TableOptions)
        paths = splits_from_names(paths, options)
        source = model_source(options.schema) if options.schema else None
        model = source.load() if source is not None else None
        parts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]] = []
        inputs: list[InputInfo] = []
        inferred: set[str] = set()
        class_labels: dict[str, list[str]] = {}
        minus_one: set[str] = set()
        with_nulls: set[str] = set()
        offset = 0
        written: set[str] = set()  # the split column's values, for --split-map's keys
        for i, path in enumerate(paths):
            frame, info, text = self._read_one(path, encoding)
            for name, names in info[6].items():  # the first input's names, if two disagree
                class_labels.setdefault(name, names)
            if not text and model is None:
                # a typed input's classes by name (text read with a card: card_types names
                # them); a --schema model types the column itself, as the file stores it
                for name in info[6]:
                    # signed only: -1 cannot be in an unsigned column (nor compared with one)
                    if name in frame.columns and frame.schema[name].is_signed_integer():
                        column = frame[name]
                        if column.null_count():
                            with_nulls.add(name)
                        elif (column == -1).any():
                            minus_one.add(name)
                frame = named_classes(frame, info[6])
            self._check_declared(frame, path, options, model)
            split = self._split(frame, path, options.split)
            if split is not None and options.split_map:
                split, spelt = _mapped(frame, options, split)
                written |= spelt
            if options.split and options.split not in frame.columns and split is not None:
                # a dataset folder (curate's own output among them) keeps the split in its
                # layout: the declared split column is that, for the model and the rules
                frame = frame.with_columns(split.alias(options.split))
            declared = _NO_PROBLEMS
            if text and info[5] is not None:
                typed, declared = card_types(frame, info[5], info[0])
                inferred |= {c for c in frame.columns if c not in info[1]} - {SPLIT_FROM_LAYOUT}
            elif text:
                typed = infer_types(frame, info[1])
                inferred |= {c for c in frame.columns if c not in info[1]} - {SPLIT_FROM_LAYOUT}
            else:
                typed = frame
            typed = typed.drop([SPLIT_FROM_LAYOUT], strict=False)
            if model is not None:
                cells = frame if text else text_cells(typed)
                values, problems = validate_frame(cells, model, nested=info[2], loader=source)
            else:
                values, problems = typed, declared
            ident = typed[options.id].cast(pl.String) if options.id else None
            rows = record_rows(typed.height, ident, split, offset, i)
            rows, findings = with_problems(rows, problems, offset, info[0])
            rows = rows.with_columns(pl.col("valid") & ~_missing(values, options))
            parts.append((rows, values, typed, findings))
            splits = dict(rows.group_by("split").len().drop_nulls("split").rows())
            inputs.append(InputInfo(info[0], info[3], typed.height, info[4], splits))
            offset += typed.height
            if progress:
                progress(f"read {info[0]}", offset)
        _unmatched_split_map(options, written)
        raw = pl.concat([p[2] for p in parts], how="diagonal_relaxed")
        values = pl.concat([p[1] for p in parts], how="diagonal_relaxed")
        if model is not None:
            plans = plan_fields(model, raw.columns)
            published = {
                p.name: p.column
                for p in plans
                if (p.column in raw.columns or p.required) and p.column != options.split
            }
            fields = set(published.values())
        else:
            published = {c: c for c in values.columns if c != options.split}
            fields = set(published)
        skip = {*fields, *([options.split] if options.split else [])}
        data = TableData(
            family=self.name,
            inputs=inputs,
            schema_findings=pl.concat([p[3] for p in parts]).with_columns(
                pl.lit("TB001").alias("rule")
            ),
            rows=pl.concat([p[0] for p in parts]),
            values=values,
            raw=raw,
            extra=[c for c in raw.columns if c not in skip],
            options=options,
            model=model,
            inferred=frozenset(inferred),
            published=published,
            class_labels={c: n for c, n in class_labels.items() if c in values.columns},
            no_label=frozenset(minus_one - with_nulls),
        )
        data.stats = self._stats(data)
        return data

    def _read_one(
        self, path: str | Path, encoding: str | None
    ) -> tuple[pl.DataFrame, tuple[Any, ...], bool]:
        """``(frame, (name, text columns, nested cells, sha256, format, card features, class
        labels), text)``; the card's features only for a dataset folder of text files (parquet
        carries its own types); the class names of its ``ClassLabel`` columns."""
        from curate.io.frames import in_memory

        if (given := in_memory(path)) is not None:
            if given.frame.height == 0:  # as an empty file is (an empty frame was "no findings")
                raise no_records(given.name)
            empty: tuple[Any, ...] = (given.name, frozenset(), {}, given.sha256, given.kind)
            return given.frame, (*empty, None, {}), False
        check_not_blank(path)
        try:
            frame, src, typed = read_table(path, encoding=encoding)
        except InputError as e:
            if e.message.startswith("no records found"):
                raise no_records(path) from None
            if e.message.startswith("unknown file type"):
                raise hinted(e, self, path) from None
            raise
        if frame.height == 0:
            raise no_records(path)
        keep = frozenset(src.text_columns) if not typed else frozenset()
        features = None
        if not typed and src.format == "hf-files" and isinstance(src.path, Path):
            features = card_features(src.path, src.config)
        labels = class_label_names(path, src, features) if typed or features else {}
        info = (str(path), keep, src.nested_cells, src.sha256, src.format, features, labels)
        return frame, info, not typed

    def _check_declared(
        self,
        frame: pl.DataFrame,
        path: str | Path,
        options: TableOptions,
        model: type[BaseModel] | None,
    ) -> None:
        """A declared column the table does not have is a mistake in the declaration (or the
        wrong file): one line naming it and the columns there are (exit 2)."""
        header = [c for c in frame.columns if c != SPLIT_FROM_LAYOUT]
        layout = SPLIT_FROM_LAYOUT in frame.columns or split_of(path) is not None
        missing = [
            c for c in options.declared() if c not in header and not (c == options.split and layout)
        ]
        if model is not None:
            missing += [
                p.column
                for p in plan_fields(model, header)
                if p.required
                and p.column not in header
                and p.column not in missing
                and not (p.column == options.split and layout)
            ]
        if model is not None and not missing:
            self._check_roles(options, model, header, path)
        if missing:
            import difflib

            close = difflib.get_close_matches(missing[0], header, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(
                f"no column {missing[0]!r}{hint}; columns: {', '.join(header[:20])}"
                f"{', ...' if len(header) > 20 else ''}",
                path=path,
            )

    @staticmethod
    def _check_roles(
        options: TableOptions, model: type[BaseModel], header: list[str], path: str | Path
    ) -> None:
        """With ``--schema``, each column given a role (``--id``, ``--label``, ``--text``,
        ``--group``, ``--key``) must be a field of the model: the rules read a role's typed
        value, and the model's fields are what is typed. A role outside the model was an
        internal error (a column polars could not find, exit 3); it is one line naming the
        option and the model's fields (exit 2). The split is exempt: it is read as written."""
        plans = plan_fields(model, header)
        fields = [p.name for p in plans]
        aliased = {p.column: p.name for p in plans if p.column != p.name}
        roles = [
            ("--id", [options.id] if options.id else []),
            ("--label", options.label),
            ("--text", options.text),
            ("--group", [options.group] if options.group else []),
            ("--key", options.key),
        ]
        for option, names in roles:
            for name in names:
                if name in aliased:  # the rules read values by field, the file by column
                    raise InputError(
                        f"{option} {name!r} is the column of the --schema model "
                        f"{model.__name__}'s field {aliased[name]!r} (an alias): a role "
                        "cannot name an aliased field yet; name the field as its column",
                        path=path,
                    )
                if name not in fields:
                    raise InputError(
                        f"{option} {name!r} is not a field of the --schema model "
                        f"{model.__name__} (its fields: {', '.join(fields[:20])}"
                        f"{', ...' if len(fields) > 20 else ''}): declare {name!r} in the "
                        "model, or leave the option out",
                        path=path,
                    )

    def _split_order(self) -> tuple[str, ...]:
        return SPLIT_ORDER

    def summarise(self, report: Report, ctx: AuditContext) -> None:
        """Rows per split, and what confident learning said about each label (TB302)."""
        super().summarise(report, ctx)
        if (scores := ctx.built("label_scores")) is not None:
            scored = {k: v for k, (_, v) in scores.scored.items()}
            summarise_label_issues(report, scored, scores.source, scores.skipped)

    def plots(self, data: LoadedDataset, report: Report, ctx: AuditContext) -> list[Plot]:
        """The given-vs-suggested matrix of each label's flagged rows (TB302)."""
        return label_issue_plots(report, self.rules)

    def diff_spec(self, data: LoadedDataset) -> DiffSpec:
        """Rows pair by the declared ``--id``, then by the declared ``--key`` (without an id,
        by identical content first: row numbers shift when a row is dropped)."""
        opts = data.options
        assert isinstance(opts, TableOptions)
        return DiffSpec(
            stable_ids=opts.id is not None,
            id_columns=(opts.id,) if opts.id else (),
            content_key=tuple(opts.key),
        )

    def to_tables(self, data: LoadedDataset) -> dict[str, pa.Table]:
        assert isinstance(data, TableData)
        return _as_class_labels(super().to_tables(data), data.class_labels, data.no_label)

    def fix_tables(self, frame: pl.DataFrame, data: LoadedDataset) -> dict[str, pa.Table]:
        assert isinstance(data, TableData)
        return _as_class_labels(super().fix_tables(frame, data), data.class_labels, data.no_label)

    def _publish_frame(self, data: RecordsData) -> pl.DataFrame:
        """The value columns under their published names (the user's types) and the other
        columns as read, in the file's column order (a model's field the file lacks, filled by
        its default, last), plus the engine's bookkeeping."""
        assert isinstance(data, TableData)
        from curate.core.fixes import BOOKKEEPING, RECORD, ROW, SPLIT

        frame = pl.concat(
            [
                data.values.select(
                    [
                        pl.col(n).alias(c)
                        for n, c in data.published.items()
                        if n in data.values.columns
                    ]
                ),
                data.raw.select(data.extra),
                data.rows.select(
                    pl.col("row").alias(ROW),
                    pl.col("record").alias(RECORD),
                    pl.col("split").fill_null("train").alias(SPLIT),
                ),
            ],
            how="horizontal",
        )
        first = [c for c in data.raw.columns if c in frame.columns and c not in BOOKKEEPING]
        return frame.select([*first, pl.exclude(first)])


def _as_class_labels(
    tables: dict[str, pa.Table], labels: dict[str, list[str]], no_label: frozenset[str]
) -> dict[str, pa.Table]:
    """Each ``ClassLabel`` column the input had, back as its class indexes, the names in the
    schema's metadata (:data:`~curate.io.typed.CLASS_LABELS`, which the export declares as
    ``ClassLabel`` features): the remaster types its labels as the original did. A column of
    names is turned into indexes; one a ``--schema`` model kept as integers stays as it is.
    A column holding a value that is no class (a name not among them, an index past them) in
    some split is published as it is in every split: nothing is lost. A missing label is
    ``-1`` in the columns of ``no_label`` (as the input wrote it), else null."""
    import json

    import pyarrow.compute as pc

    def kind(col: pa.ChunkedArray, names: list[str]) -> str | None:
        if pa.types.is_integer(col.type):
            ok = pc.sum(pc.and_(pc.greater_equal(col, -1), pc.less(col, len(names)))).as_py()
            return "indexes" if (ok or 0) == len(col) - col.null_count else None
        known = pa.array(names, pa.string())
        hits = pc.sum(pc.is_in(col.cast(pa.string()), value_set=known)).as_py() or 0
        return "names" if hits == len(col) - col.null_count else None

    keep: dict[str, list[str]] = {}
    convert: set[str] = set()
    for col, names in labels.items():
        kinds = {kind(t[col], names) if col in t.column_names else None for t in tables.values()}
        if tables and len(kinds) == 1 and None not in kinds:
            keep[col] = names
            if kinds == {"names"}:
                convert.add(col)
    if not keep:
        return tables
    out = {}
    for split, t in tables.items():
        for col in convert:
            known = pa.array(keep[col], pa.string())
            index = pc.index_in(t[col].cast(pa.string()), value_set=known).cast(pa.int64())
            if col in no_label:
                index = pc.fill_null(index, -1)
            t = t.set_column(t.column_names.index(col), col, index)
        meta = {**(t.schema.metadata or {}), CLASS_LABELS: json.dumps(keep).encode()}
        out[split] = t.replace_schema_metadata(meta)
    return out


FAMILY = TableFamily()
