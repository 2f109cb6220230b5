"""TB0xx: rows that fail the model or the declared types, and declared columns left empty."""

from __future__ import annotations

import polars as pl

from curate.audits.table.registry import RULES, TableView, columns, value
from curate.core.findings import finding_frame, json_struct
from curate.core.rules import AuditContext
from curate.schemas.table import TableOptions


@RULES.rule("TB001", "schema-invalid", category="schema", severity="error", invalid=True)
def schema_invalid(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A row does not fit the ``--schema`` model: a required field is empty, a value has the
    wrong type or breaks a constraint (a number out of range, a value not among the listed
    choices), or a nested value is malformed.

    The finding names the file, the row (by ``--id``, else ``#N``) and the field, with
    pydantic's own message and the value as read; the verdicts are the model's own
    (``Model.model_validate`` on the row), checked columnwise where the field types allow. Such
    a row takes no part in any other rule, and ``fix`` and ``export`` never publish it:
    ``fix`` keeps it whole in ``changelog.jsonl`` (``--strict`` refuses instead)."""
    return data.schema_findings.drop("rule")


@RULES.rule("TB002", "missing-value", category="schema", severity="error", invalid=True)
def missing_value(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A row's ``--id``, ``--label`` or ``--text`` cell is empty (null, or only white space).

    Those are the columns the declaration says every example has: a row without its input or
    its label cannot be trained or scored on, and one without its id cannot be referred to.
    Such a row takes no part in any other rule and is not published (``fix`` logs it whole
    in ``changelog.jsonl``). The ``--key``,
    ``--group`` and ``--split`` columns may be empty: a row without a key is never a duplicate,
    one without a split is published in train."""
    opts = ctx.options
    cols = list(dict.fromkeys([*([opts.id] if opts.id else []), *opts.label, *opts.text]))
    if not cols:
        return finding_frame(
            pl.DataFrame(), field=pl.lit(""), message=pl.lit(""), details=pl.lit("")
        )
    frame = columns(data, cols, valid=False)
    parts = []
    for c in cols:
        v = pl.col(value(c))
        empty = v.is_null()
        if frame.schema[value(c)] == pl.String:
            empty = empty | (v.str.strip_chars() == "")
        if c in data.raw.columns and data.raw.height == frame.height:
            # empty as written, not only as validated: a cell the --schema model refused (or a
            # row it refused whole) is null among the values, and is TB001's, not "no value"
            written = data.raw[c]
            blank = written.is_null()
            if written.dtype == pl.String:
                blank = blank | (written.str.strip_chars() == "")
            empty = empty & blank.gather(frame["row"])
        hits = frame.filter(empty)
        parts.append(
            finding_frame(
                hits,
                field=pl.lit(c),
                message=pl.when(pl.col(value(c)).is_null())
                .then(pl.format("no value in {} column {}", pl.lit(_role(opts, c)), pl.lit(c)))
                .when(pl.col(value(c)).cast(pl.String) == "")
                .then(
                    pl.format("an empty string in {} column {}", pl.lit(_role(opts, c)), pl.lit(c))
                )
                .otherwise(
                    pl.format("only white space in {} column {}", pl.lit(_role(opts, c)), pl.lit(c))
                ),
                details=json_struct(
                    pl.lit(c).alias("column"),
                    pl.lit(_role(opts, c)).alias("role"),
                    data.file_of().alias("file"),
                ),
            )
        )
    parts = [p for p in parts if p.height]
    if not parts:
        return parts_empty()
    # a cell the model or the card's types refused is TB001's (its value is null here), not empty
    refused = data.schema_findings.select("row", "field")
    return pl.concat(parts).join(refused, on=["row", "field"], how="anti").sort("row", "field")


def parts_empty() -> pl.DataFrame:
    from curate.core.findings import empty_rule_output

    return empty_rule_output()


def _role(opts: TableOptions, column: str) -> str:
    if column == opts.id:
        return "--id"
    if column in opts.label:
        return "--label"
    return "--text"
