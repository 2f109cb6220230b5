"""A family whose records are the rows of a table described by a Pydantic v2 model: every
member of the contract but its declaration written once (:class:`RecordsFamily`).

A plug-in family of this kind says what a record is (``Model``), what makes two records the
same (``key``, a :class:`~curate.core.keys.Keys`), its rule-code ``prefix``, and optionally
its id and split columns; it gets:

* ``read``: any input :func:`curate.io.read.read_frame` takes (CSV, JSON, JSON Lines,
  parquet, dataset folders, ``FOLDER:CONFIG``, ``hf://``, stdin), each row checked against the
  model (:func:`curate.schemas.records.validate_frame`: columnwise, pydantic for the rest); the
  split from the declared split column, else the folder layout;
* the generic rules (:func:`curate.audits.shared.records.record_rules`): ``PREFIX001``
  schema-invalid, ``PREFIX401`` duplicate-record, ``PREFIX402`` split-leakage, beside any rule
  it registers on its own rule set;
* ``to_tables``, ``fix_frame``, ``fix_tables``: the valid rows per split as Arrow, the model's
  fields typed (under the column names they were read from), then the input's other columns as
  read; the split is the folder layout, not a column.

Why a base class in the families layer and not a family: issue 32's ``table`` family is the
same thing declared on the command line; this is its foundation and what a third-party package
subclasses (see ``tests/test_plugin_family.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

import polars as pl
import pyarrow as pa
from pydantic import BaseModel

from curate.audits.shared.records import RecordsData, record_rules
from curate.core.dataset import ChangeEntry, LoadedDataset
from curate.core.diff import DiffSpec
from curate.core.errors import InputError
from curate.core.findings import InputInfo, Report
from curate.core.fixes import BOOKKEEPING, RECORD, ROW, SPLIT
from curate.core.keys import Keys
from curate.core.options import FamilyOptions
from curate.core.rules import AuditContext, RuleSet
from curate.families.base import Family, Progress, check_not_blank, no_records
from curate.families.hints import hinted
from curate.io.read import SPLIT_FROM_LAYOUT, read_frame
from curate.io.records import split_of
from curate.schemas.records import plan_fields, validate_frame
from curate.schemas.splits import SPLIT_NAMES  # (re-exported: the table family reads it)

__all__ = ["SPLIT_NAMES", "RecordsFamily", "record_rows", "with_problems"]


def record_rows(
    height: int, ident: pl.Series | None, split: pl.Series | None, offset: int, index: int
) -> pl.DataFrame:
    """The bookkeeping of one input's rows (see :class:`RecordsData`): ``row`` (its position
    across the inputs, from ``offset``), ``record`` (the id, else ``#N`` in the file),
    ``split``, ``input``."""
    local = pl.int_range(height, dtype=pl.Int64)
    if ident is not None and not ident.has_nulls():
        record = pl.col("__id")  # every row has its id: no "#N" made for 10 M rows
    else:
        record = pl.coalesce("__id", pl.format("#{}", local))
    if ident is None:
        ident = pl.Series("r", [None] * height, dtype=pl.String)
    return pl.DataFrame({"__id": ident}).select(
        (local + offset).alias("row"),
        record.alias("record"),
        (split if split is not None else pl.lit(None, pl.String)).alias("split"),
        pl.lit(index, pl.Int32).alias("input"),
    )


def with_problems(
    rows: pl.DataFrame, problems: pl.DataFrame, offset: int, path: str | Path
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``rows`` with ``valid`` (no problem), and the schema findings of ``problems`` (one per
    invalid cell, from :func:`~curate.schemas.records.validate_frame`; rows local to the
    input, so moved by ``offset``), each naming the file, the column and the value read."""
    bad = rows.join(problems.with_columns(pl.col("row") + offset), on="row")
    rows = rows.with_columns((~pl.col("row").is_in(bad["row"].implode())).alias("valid"))
    findings = bad.select(
        "row",
        "record",
        "field",
        "message",
        pl.struct(
            pl.lit(str(path)).alias("file"),
            pl.col("field").alias("column"),
            pl.col("value"),
        )
        .struct.json_encode()
        .alias("details"),
        pl.lit(None, pl.String).alias("fix"),
    )
    return rows, findings


class RecordsFamily(Family):
    """Defaults for a family of table rows checked against ``Model`` (see the module doc).

    A subclass sets ``name``, ``Model``, ``key`` and ``prefix`` (and ``rules`` if it has rules
    of its own: a :class:`~curate.core.rules.RuleSet`, else one is made); the generic rules are
    registered on ``rules`` when the class is made, ``PREFIX001`` flagged as the invalid rule.
    """

    #: What a record is: every row must satisfy it.
    Model: ClassVar[type[BaseModel]]
    #: What makes two records the same (duplicates) and what must not cross splits (leakage);
    #: its columns are the model's fields, its ``split`` the records' split (None: no splits).
    #: It is also the family's one entry of :attr:`Family.keys` (set from it).
    key: ClassVar[Keys]
    #: The rule-code prefix (``RV`` → RV001, RV401, RV402).
    prefix: ClassVar[str]
    #: The column holding a record's id (None: ``#`` and its row in the file).
    id_field: ClassVar[str | None] = None
    #: The column holding a record's split; a dataset folder's layout gives it otherwise.
    split_field: ClassVar[str | None] = "split"
    #: What the leakage fix does (see :func:`~curate.audits.shared.records.record_rules`).
    leak_fix: ClassVar[Literal["move", "drop"]] = "move"

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if not all(hasattr(cls, a) for a in ("name", "Model", "key", "prefix")):
            return  # an intermediate base: the generic rules come with the declaration
        if not hasattr(cls, "rules"):
            cls.rules = RuleSet(cls.name)
        if cls.prefix + "001" not in cls.rules:
            record_rules(
                cls.rules, cls.prefix, cls.key, id_field=cls.id_field, leak_fix=cls.leak_fix
            )
        if "keys" not in cls.__dict__:
            cls.keys = (cls.key,)

    # ----------------------------------------------------------------- reading
    def read(
        self,
        paths: list[str | Path],
        options: FamilyOptions,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
    ) -> RecordsData:
        """Each input read as text (:func:`~curate.io.read.read_frame`), its split resolved,
        its rows checked against :attr:`Model`; a row that does not fit is a ``PREFIX001``
        finding per field, never an exception."""
        parts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame]] = []
        inputs: list[InputInfo] = []
        offset = 0
        for i, path in enumerate(paths):
            check_not_blank(path)
            try:
                frame, src = read_frame(path, encoding=encoding)
            except InputError as e:
                if e.message.startswith("no records found"):
                    raise no_records(path) from None
                if e.message.startswith("unknown file type"):
                    raise hinted(e, self, path) from None
                raise
            if frame.height == 0:
                raise no_records(path)
            self._check_columns(frame, path)
            split = self._split(frame, path, self.split_field)
            if self.split_field in self.Model.model_fields and split is not None:
                frame = frame.with_columns(split.alias(self.split_field))
            values, problems = validate_frame(frame, self.Model, nested=src.nested_cells)
            ident = (
                frame[self.id_field].cast(pl.String)
                if self.id_field and self.id_field in frame.columns
                else None
            )
            rows = record_rows(frame.height, ident, split, offset, i)
            rows, findings = with_problems(rows, problems, offset, path)
            parts.append((rows, values, frame, findings))
            splits = dict(rows.group_by("split").len().drop_nulls("split").rows())
            inputs.append(InputInfo(str(path), src.sha256, frame.height, src.format, splits))
            offset += frame.height
            if progress:
                progress(f"read {Path(str(path)).name}", offset)
        raw = pl.concat([p[2] for p in parts], how="diagonal_relaxed")
        fields = {p.column for p in plan_fields(self.Model, raw.columns)}
        skip = {*fields, SPLIT_FROM_LAYOUT, *([self.split_field] if self.split_field else [])}
        data = RecordsData(
            family=self.name,
            inputs=inputs,
            schema_findings=pl.concat([p[3] for p in parts]).with_columns(
                pl.lit(self.prefix + "001").alias("rule")
            ),
            rows=pl.concat([p[0] for p in parts]),
            values=pl.concat([p[1] for p in parts], how="vertical_relaxed"),
            raw=raw,
            extra=[c for c in raw.columns if c not in skip],
            options=options,
        )
        data.stats = self._stats(data)
        return data

    def _check_columns(self, frame: pl.DataFrame, path: str | Path) -> None:
        """Refuse a table without a column for a required field (exit 2, one line): a defect
        of the file, not of each of its rows, and most often another table altogether (the
        message then names the family that reads it)."""
        header = [c for c in frame.columns if c != SPLIT_FROM_LAYOUT]
        missing = [
            p.name
            for p in plan_fields(self.Model, header)
            if p.required and p.column not in header and p.name != self.split_field
        ]
        if missing:
            e = InputError(
                f"no column for required field(s) {', '.join(missing)} of {self.name} "
                f"(columns: {', '.join(header[:20])}{', ...' if len(header) > 20 else ''})",
                path=path,
            )
            raise hinted(e, self, path, header) from None

    def _split(self, frame: pl.DataFrame, path: str | Path, column: str | None) -> pl.Series | None:
        """Each row's split: a configuration's split for this file, else the split ``column``,
        else the folder layout; canonical spellings (:data:`SPLIT_NAMES`). A row with no split
        in its column or folder is in ``train``: ``export`` and ``fix`` publish it there, so it
        is audited there too (a copy of it in test is a leak before it is published)."""
        if (given := split_of(path)) is not None:
            raw = pl.Series("split", [given] * frame.height, dtype=pl.String)
        elif column and column in frame.columns:
            raw = frame[column].cast(pl.String).fill_null("train")
        elif SPLIT_FROM_LAYOUT in frame.columns:
            raw = frame[SPLIT_FROM_LAYOUT].fill_null("train")
        else:
            return None
        # the spellings are few: each distinct one is canonicalised once, then mapped (10 M
        # rows cost one hash pass, not three string passes)
        written = raw.unique().drop_nulls()
        text = written.str.strip_chars()
        canon = text.str.to_lowercase().replace_strict(SPLIT_NAMES, default=text)
        mapping = dict(zip(written.to_list(), canon.to_list(), strict=True))
        if all(k == v for k, v in mapping.items()):
            return raw.alias("split")
        return raw.replace_strict(mapping, default=None, return_dtype=pl.String).alias("split")

    def _stats(self, data: RecordsData) -> dict[str, Any]:
        rows = data.rows
        per_split = rows.group_by(pl.col("split").fill_null("(none)")).len().sort("split")
        return {
            "rows": rows.height,
            "valid_rows": int(rows["valid"].sum()),
            "splits": dict(per_split.rows()),
        }

    def summarise(self, report: Report, ctx: AuditContext) -> None:
        """Rows, valid rows and rows per split (the figures a card states)."""
        assert isinstance(ctx.data, RecordsData)
        # the rows do not change after the read, which counted them already
        report.stats.update(ctx.data.stats or self._stats(ctx.data))

    # ----------------------------------------------------------------- export / fix
    def _publish_frame(self, data: RecordsData) -> pl.DataFrame:
        """Every row as published plus ``__row``/``__record``/``__split``: the model's fields
        (typed, under the column they were read from), then the input's other columns as read.
        Rows without a split are published in train."""
        plans = [p for p in plan_fields(self.Model, data.raw.columns) if p.name != self.split_field]
        return pl.concat(
            [
                data.values.select([pl.col(p.name).alias(p.column) for p in plans]),
                data.raw.select(data.extra),
                data.rows.select(
                    pl.col("row").alias(ROW),
                    pl.col("record").alias(RECORD),
                    pl.col("split").fill_null("train").alias(SPLIT),
                ),
            ],
            how="horizontal",
        )

    def _split_tables(self, frame: pl.DataFrame) -> dict[str, pa.Table]:
        body = [c for c in frame.columns if c not in BOOKKEEPING]
        names = frame[SPLIT].unique(maintain_order=True).to_list()
        known = self._split_order()
        order = [s for s in known if s in names] + sorted(s for s in names if s not in known)
        return {s: frame.filter(pl.col(SPLIT) == s).select(body).to_arrow() for s in order}

    def _split_order(self) -> tuple[str, ...]:
        """The splits in the order they are published (the key's order: train first)."""
        return self.key.order

    def to_tables(self, data: LoadedDataset) -> dict[str, pa.Table]:
        """The valid rows per split (see :meth:`_publish_frame`)."""
        assert isinstance(data, RecordsData)
        bad = self.invalid_records(data)["row"].drop_nulls().unique()
        frame = self._publish_frame(data).filter(~pl.col(ROW).is_in(bad.implode()))
        return self._split_tables(frame)

    def fix_frame(
        self, data: LoadedDataset, invalid: pl.DataFrame
    ) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """The published frame with the engine's bookkeeping columns; each invalid row left
        out and logged whole, as read (one changelog entry naming its first problem)."""
        assert isinstance(data, RecordsData)
        changes: list[ChangeEntry] = []
        logged: set[int] = set()
        for r in invalid.iter_rows(named=True):
            if r["row"] is None or r["row"] in logged:
                continue
            logged.add(r["row"])
            changes.append(
                ChangeEntry(
                    r["record"],
                    "",
                    self.fix_original(data, r["row"], {}),
                    None,
                    r["rule"],
                    f"dropped: invalid record ({r['message']})",
                )
            )
        frame = self._publish_frame(data).filter(~pl.col(ROW).is_in(sorted(logged)))
        return frame, changes

    def diff_spec(self, data: LoadedDataset) -> DiffSpec:
        """Rows pair by the id column when there is one (else by position: ``#N``, which a
        dropped row shifts, so identical content pairs first), then by the family's key."""
        ident = self.id_field
        return DiffSpec(
            stable_ids=ident is not None,
            id_columns=(ident,) if ident else (),
            content_key=tuple(self.key.columns),
        )

    def fix_tables(self, frame: pl.DataFrame, data: LoadedDataset) -> dict[str, pa.Table]:
        return self._split_tables(frame)

    def fix_original(self, data: LoadedDataset, row: int, cells: dict[str, Any]) -> Any:
        """A dropped row in the changelog: the row as read (its split included)."""
        assert isinstance(data, RecordsData)
        if 0 <= row < data.raw.height:
            got = data.raw.row(row, named=True)
            return {k: v for k, v in got.items() if v is not None or k != SPLIT_FROM_LAYOUT}
        return cells

    def card_sections(self, data: LoadedDataset, options: FamilyOptions) -> list[str]:
        """Records of the input per split, invalid ones included: said as such, since the
        card's "Splits" counts the rows published (the two tables, both headed as records of
        the dataset, contradicted each other when a record was left out: a new-user review)."""
        assert isinstance(data, RecordsData)
        lines = [
            "## Records read",
            "",
            "The input's records per split, as read (invalid ones included; "
            "the Splits table counts what is published).",
            "",
            "| split | records read |",
            "|---|---:|",
        ]
        lines += [f"| {k} | {v} |" for k, v in data.stats.get("splits", {}).items()]
        return [*lines, ""]
