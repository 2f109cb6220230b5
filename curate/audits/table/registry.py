"""The ``table`` family's rule set and the shared tables its rules read.

Every rule reads the declaration (:class:`~curate.schemas.table.TableOptions`, the audit's
options) at run time: which columns are the id, labels, inputs, key, group and split. A rule
whose input the declaration does not give (no ``--label``: no label rule) needs a shared table
the options call unavailable, so the engine does not run it and the report's ``rules_run``
says so, instead of a clean bill for a check that never ran.

Shared tables: ``keys`` (each valid row's key in its normal form: the ``--key`` columns, else
the ``--text`` columns, text folded as ``--normalise`` says), ``labels`` (the declared label
columns of the valid rows), ``near`` (near-duplicate input pairs, MinHash), ``ids``.

Column names: a rule's frame holds the bookkeeping (``row``, ``record``, ``split``, ``input``,
``valid``) and each value column under ``v:<name>`` (:func:`columns`), so that a user's column
called ``row`` or ``split`` never shadows the bookkeeping.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from curate.core.rules import AuditContext, RuleSet
from curate.schemas.table import normaliser

__all__ = ["RULES", "columns", "key_names", "value"]

RULES = RuleSet("table")


def value(name: str) -> str:
    """The name of a value column in a rule's frame."""
    return f"v:{name}"


def key_names(n: int) -> list[str]:
    """The key columns of the ``keys`` table (``k0``, ``k1``, ...)."""
    return [f"k{i}" for i in range(n)]


def columns(data: object, names: Sequence[str], *, valid: bool = True) -> pl.DataFrame:
    """The bookkeeping with the value columns ``names`` beside it (as :func:`value` names
    them); only the valid rows unless ``valid=False``."""
    frame = pl.concat(
        [
            data.rows,  # type: ignore[attr-defined]
            data.values.select([pl.col(n).alias(value(n)) for n in names]),  # type: ignore[attr-defined]
        ],
        how="horizontal",
    )
    return frame.filter(pl.col("valid")) if valid else frame


def _blank(expr: pl.Expr) -> pl.Expr:
    return expr.is_null() | (expr.cast(pl.String).str.strip_chars() == "")


@RULES.table("keys")
def keys_table(ctx: AuditContext) -> pl.DataFrame:
    """``row, record, split, k0..kn``: each valid row's key in its normal form (text columns
    folded by ``--normalise``, others as they are); a row with an empty key column has no key
    and is left out (it is never the same example as another)."""
    opts = ctx.options
    cols = opts.key_columns()
    frame = columns(ctx.data, cols)
    fold = normaliser(opts.normalise)
    exprs = []
    for n, c in zip(key_names(len(cols)), cols, strict=True):
        col = pl.col(value(c))
        if frame.schema[value(c)] == pl.String:
            col = fold(col) if opts.normalise else col
        exprs.append(col.alias(n))
    out = frame.select("row", "record", "split", *exprs)
    blank = pl.any_horizontal([_blank(pl.col(n)) for n in key_names(len(cols))])
    return out.filter(~blank)


@RULES.table("labels")
def labels_table(ctx: AuditContext) -> pl.DataFrame:
    """``row, record, split`` and each declared label column (``v:<label>``) of the valid
    rows."""
    return columns(ctx.data, ctx.options.label)


@RULES.table("ids")
def ids_table(ctx: AuditContext) -> pl.DataFrame:
    """``row, record, split, v:<id>`` of every row (invalid ones too: an id is taken whether
    or not its row is well-formed)."""
    return columns(ctx.data, [ctx.options.id], valid=False)
