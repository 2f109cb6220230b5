"""The generic rules of a family whose records are the rows of one table: schema, exact
duplicates and split leakage, registered on a family's rule set from its declared keys.

Why a factory and not rules written per family: the four shipped families each wrote the same
three rules around the shared joins (:mod:`curate.audits.shared.duplicates`) — DF001/GL0xx for
invalid rows, DF302/GL304/KE401 for later copies, DF303/GL401 for leaks — and differ only in
which columns make two records the same. A family of table rows declares that once
(:class:`~curate.core.keys.Keys`) and calls :func:`record_rules`; it writes only the rules that
are its own.

Codes: the family's prefix and fixed numbers, so a user who knows one such family knows them
all: ``PREFIX001`` schema-invalid, ``PREFIX401`` duplicate-record, ``PREFIX402`` split-leakage
(:data:`GENERIC_CODES`). The data these rules read is a :class:`RecordsData`.

May import: ``curate.core`` (and ``curate.io``); nothing family-specific.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import polars as pl

from curate.audits.shared.duplicates import later_copies, leaks, name_firsts
from curate.core.dataset import LoadedDataset
from curate.core.findings import finding_frame, json_struct
from curate.core.keys import Keys
from curate.core.rules import AuditContext, RuleSet

__all__ = ["GENERIC_CODES", "RecordsData", "key_table", "record_rules"]

#: The generic rules' numbers (after the family's prefix) and names.
GENERIC_CODES: dict[str, str] = {
    "001": "schema-invalid",
    "401": "duplicate-record",
    "402": "split-leakage",
}


@dataclass
class RecordsData(LoadedDataset):
    """Records that are the rows of a table, checked against a model.

    ``rows`` is the bookkeeping, one row per input row in input order: ``row`` (position across
    the inputs), ``record`` (the id findings show), ``split`` (String, null without one),
    ``input`` (index into :attr:`inputs`) and ``valid``. ``values`` holds the model's fields,
    typed, row-aligned with ``rows`` (an invalid cell is null): apart, so that a field may be
    called ``row`` or ``valid``. ``raw`` is the input as read (text), row-aligned, for the
    changelog; ``extra`` its columns that are no field (published as read)."""

    rows: pl.DataFrame = field(default_factory=pl.DataFrame)
    values: pl.DataFrame = field(default_factory=pl.DataFrame)
    raw: pl.DataFrame = field(default_factory=pl.DataFrame)
    extra: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def record_splits(self) -> pl.DataFrame | None:
        """Each row's split (``row``, ``split``), for the HTML report's split filter."""
        return self.rows.select("row", "split")

    def valid_rows(self) -> pl.DataFrame:
        """Bookkeeping and values of the valid rows."""
        return key_table(self, list(self.values.columns)).filter(pl.col("valid"))

    def published_names(self) -> list[str]:
        """What a published record holds: the model's fields, then the input's other columns
        (published as read). Two records are one listed twice only if all of these are equal:
        the duplicate rules compare them all (comparing the fields alone dropped rows that
        differ in a column the model leaves out, found by a new-user review)."""
        return [*self.values.columns, *(c for c in self.extra if c not in self.values.columns)]

    def column(self, name: str) -> pl.Series:
        """One of :meth:`published_names`: a field's typed values, else the column as read."""
        return self.values[name] if name in self.values.columns else self.raw[name]

    def file_of(self) -> pl.Expr:
        """The input path of each row (``input`` → path), for ``details.file``."""
        paths = [i.path for i in self.inputs]
        return pl.col("input").replace_strict(
            list(range(len(paths))), paths, return_dtype=pl.String, default=None
        )


def key_table(data: RecordsData, columns: list[str]) -> pl.DataFrame:
    """``data.rows`` with the columns ``columns`` (of :meth:`RecordsData.published_names`)
    beside it (one that shares a bookkeeping column's name, such as the split, is the
    bookkeeping one)."""
    own = [data.column(c) for c in columns if c not in data.rows.columns]
    return pl.concat([data.rows, pl.DataFrame(own)], how="horizontal") if own else data.rows


_DUPLICATE_DOC = """Two records of one split have the same {key}: the later one repeats the
first.

A repeated example weighs double in training and counts twice in a score. Each later copy is
reported with the first record of its key (record and row); a record with an empty key column
is never a duplicate. Fix: drop the later copy — safe where it repeats every field of the first
and every other column the input has, its id aside (the table lists one record twice); where
anything else differs (named in the message) the drop chooses between two versions, so it is
unsafe and needs ``--unsafe-fixes``."""

_LEAK_DOC = """A record of a later split has the same {groups} as a record of an earlier one
(order: {order}): an evaluation example the model was trained on.

The score then counts memorisation as generalisation. Each copy in a later split is reported
with the first record of the key in the earliest split; records without a split, or in a split
not in the order, take no part.

{fix}"""

_LEAK_FIX = {
    "move": """Fix (unsafe: it changes what is evaluated, so only with ``--unsafe-fixes``): move the
record into the earliest split of its key, as glycan's re-split regroups a leaking glycan. Every
record is kept; an exact copy becomes a duplicate there, which {prefix}401 drops on the next
pass.""",
    "drop": """Fix (unsafe: it changes what is evaluated, so only with ``--unsafe-fixes``): drop the
later-split copy and keep the earlier one, as deepfake's DF303 does.""",
}

_SCHEMA_DOC = """A record does not fit the family's model: a required field is empty, a value
has the wrong type or breaks a constraint (a number out of range, a value not among the listed
choices), or a nested value is malformed.

The finding names the file, the record and the field (a path into nested values, such as
``tags[2]``), with pydantic's own message and the value as read. Such a record takes no part in
any other rule, and ``fix`` and ``export`` never publish it: ``fix`` keeps it whole in
``changelog.jsonl`` (``--strict`` refuses instead)."""


def _named(name: str, columns: list[str]) -> str:
    """A key as a doc names it: ``text``, or ``content (sha256, size)`` when its name is not
    its column."""
    return name if columns == [name] else f"{name} ({', '.join(columns)})"


def _documented(func: Any, doc: str) -> Any:
    func.__doc__ = doc
    return func


def record_rules(
    rules: RuleSet,
    prefix: str,
    keys: Keys,
    *,
    id_field: str | None = None,
    leak_fix: Literal["move", "drop"] = "move",
) -> tuple[str, ...]:
    """Register the generic rules on ``rules`` for records keyed by ``keys`` (whose ``split``
    is the records' ``split`` column, or None for a family without splits); returns their
    codes. ``id_field``: the field holding a record's id, a name and not content (two records
    that differ only there are one record listed twice). ``leak_fix``: what the leakage fix
    does (``move``, the default, keeps every record; ``drop`` keeps only the earlier copy).

    Why move by default: of the shipped families glycan, the one whose records are rows of a
    labelled table, regroups leaking keys into one split and loses nothing; deepfake drops, but
    only where the copies are the same bytes. A generic family's key may be a group (a subject,
    a source document) whose records differ, and dropping those loses examples; an exact copy
    moved into the earlier split is dropped there by the duplicate rule anyway.
    """
    key_cols = list(keys.columns)
    groups = keys.group_columns
    shown = ",".join(key_cols)
    codes = tuple(prefix + n for n in GENERIC_CODES)

    def schema_invalid(data: RecordsData, ctx: AuditContext) -> pl.DataFrame:
        return data.schema_findings.drop("rule")

    def duplicate_record(data: RecordsData, ctx: AuditContext) -> pl.DataFrame:
        # every published column (see RecordsData.published_names), the key and id aside
        names = data.published_names()
        fields = [
            c
            for c in names
            if c not in (*key_cols, id_field)
            and (c in data.values.columns or c not in data.rows.columns)
        ]
        table = key_table(data, names).filter(pl.col("valid")).drop_nulls(key_cols)
        hits = later_copies(table, keys.within_split())
        hits = name_firsts(hits, table, extra=fields)
        differs = [
            pl.when(pl.col(c).ne_missing(pl.col(f"first_{c}"))).then(pl.lit(c)) for c in fields
        ]
        hits = hits.with_columns(
            (
                pl.concat_list(differs).list.drop_nulls()
                if differs
                else pl.lit([], pl.List(pl.String))
            ).alias("__differs")
        )
        same = pl.col("__differs").list.len() == 0
        where = (
            pl.when(pl.col("split").is_null())
            .then(pl.lit(""))
            .otherwise(pl.format(" in split {}", pl.col("split")))
        )
        return finding_frame(
            hits,
            field=pl.lit(shown),
            message=pl.when(same)
            .then(
                pl.format(
                    "same {} as record {} (row {}){}, every field equal",
                    pl.lit(keys.name),
                    "first_record",
                    "first_row",
                    where,
                )
            )
            .otherwise(
                pl.format(
                    "same {} as record {} (row {}){}, but {} differ",
                    pl.lit(keys.name),
                    "first_record",
                    "first_row",
                    where,
                    pl.col("__differs").list.join(", "),
                )
            ),
            details=json_struct(
                pl.col("first_record").alias("duplicate_of"),
                pl.col("first_row").alias("duplicate_of_row"),
                pl.col("__differs").alias("differs"),
                data.file_of().alias("file"),
            ),
            fix=pl.when(same)
            .then(json_struct(pl.lit("drop").alias("op")))
            .otherwise(json_struct(pl.lit("drop").alias("op"), pl.lit(True).alias("unsafe"))),
        )

    def split_leakage(data: RecordsData, ctx: AuditContext) -> pl.DataFrame:
        table = data.valid_rows().drop_nulls(groups)
        hits = name_firsts(leaks(table, keys), table)
        if leak_fix == "move":
            edit = json_struct(
                pl.lit("move").alias("op"),
                pl.col("split").alias("old"),
                pl.col("first_split").alias("new"),
                pl.format("leak: moved into {} with its key", pl.col("first_split")).alias(
                    "reason"
                ),
            )
        else:
            edit = json_struct(pl.lit("drop").alias("op"))
        return finding_frame(
            hits,
            field=pl.lit(",".join(groups)),
            message=pl.format(
                "{} record has the same {} as record {} (row {}) in {}",
                "split",
                pl.lit(keys.name),
                "first_record",
                "first_row",
                "first_split",
            ),
            details=json_struct(
                pl.col("split"),
                pl.col("first_split"),
                pl.col("first_record").alias("duplicate_of"),
                pl.col("first_row").alias("duplicate_of_row"),
                data.file_of().alias("file"),
            ),
            fix=edit,
        )

    rules.rule(codes[0], GENERIC_CODES["001"], category="schema", severity="error", invalid=True)(
        _documented(schema_invalid, _SCHEMA_DOC)
    )
    rules.rule(
        codes[1],
        GENERIC_CODES["401"],
        category="duplicate",
        severity="warning",
        fix="always",
        some_unsafe=True,
    )(_documented(duplicate_record, _DUPLICATE_DOC.format(key=_named(keys.name, key_cols))))
    if keys.split is not None:
        doc = _LEAK_DOC.format(
            groups=_named(keys.name, groups),
            order=" < ".join(keys.order),
            fix=_LEAK_FIX[leak_fix].format(prefix=prefix),
        )
        rules.rule(
            codes[2],
            GENERIC_CODES["402"],
            category="leakage",
            severity="error",
            fix="always",
            unsafe=True,
        )(_documented(split_leakage, doc))
    return codes if keys.split is not None else codes[:2]
