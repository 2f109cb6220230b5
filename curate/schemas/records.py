"""Rows of a table checked against a user's Pydantic v2 model: columnwise where the model
allows, with pydantic's own verdicts and messages.

Why not ``Model.model_validate`` per row: a million rows is a million Python calls and a million
model objects, when most cells are a plain number or a string that a polars cast settles at
once. Why not polars alone: the model is the user's definition of a valid row (constraints,
literals, enums, nested types, validators); a reimplementation would drift from it. So each
field is settled in one of two ways (:func:`validate_frame`):

* **columnwise** (a field typed ``str``, ``int``, ``float``, ``bool``, a ``Literal`` of strings
  or a string ``Enum``, optional or not, without constraints): a cell in the canonical
  spelling (``-12``, ``0.5``, ``true``, a listed value) is cast by polars. The canonical
  spellings are a strict subset of what pydantic accepts and give the same value, so this is a
  shortcut, never a second opinion;
* **by pydantic**, every other cell: the field's type and constraints as a
  :class:`~pydantic.TypeAdapter` over the batch of its *distinct* values (one call; the values
  that fail are named by their index in pydantic's errors), so a column of a thousand rows and
  five labels costs five validations.

A model with validators (``field_validator``, ``model_validator``) or a configuration that
changes how values are read (``strict``, ``str_strip_whitespace``, …) is validated by pydantic
row by row, as a batch: its fields are not independent, and only the model knows.

Where the pydantic calls run: in this process, or, when the caller passes a ``loader`` (a
picklable recipe of the model, :class:`~curate.schemas.table.ModelSource`) and the engine in
force is Ray (:mod:`curate.core.engine`), as Ray tasks: slices of rows for a model validated row
by row, batches of a field's distinct values otherwise. Each row's (each value's) verdict is its
own, so the parts merge in order into exactly the result of one call: the report does not
depend on the engine. A validator must therefore be a function of its row, as pydantic assumes
anyway (one that remembers the rows it saw, to find repeats, would see only its slice on Ray:
repeats are TB401/TB402's business).

What a cell is: the readers give every value as text (:func:`curate.io.read.read_frame`), as a
CSV would, so the verdict does not depend on the format (a JSON ``3`` in a ``str`` field is the
text ``"3"``). A list or object cell is handed to pydantic as the JSON value it was (a ``str``
field rejects it; a ``list[int]`` field takes it), and so is a CSV cell of a non-text field
that holds a JSON array or object. An empty cell is a missing value: ``None`` where the field
accepts ``None``, else the field's default, else "Field required".

May import: ``curate.core`` and ``curate.io``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import enum
import gc
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import GenericAlias
from typing import Annotated, Any, Literal

import orjson
import polars as pl
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails

from curate.core.engine import Engine
from curate.core.engine import current as current_engine
from curate.core.errors import clip, field_path

__all__ = [
    "FieldPlan",
    "ModelLoader",
    "invalid_schema",
    "plan_fields",
    "validate_frame",
    "validate_rows",
    "validate_values",
]

#: A picklable zero-argument callable that returns the model in the process that calls it
#: (:class:`~curate.schemas.table.ModelSource`).
ModelLoader = Callable[[], type[BaseModel]]

#: Model configuration keys that do not change how a value is read: a model with any other
#: (``strict``, ``str_strip_whitespace``, ``str_to_lower``, ...) is validated row by row.
_HARMLESS_CONFIG = frozenset(
    {
        "title",
        "extra",
        "frozen",
        "populate_by_name",
        "validate_by_name",
        "validate_by_alias",
        "use_enum_values",
        "arbitrary_types_allowed",
        "json_schema_extra",
        "protected_namespaces",
        "defer_build",
        "from_attributes",
        "validate_default",
        "validate_assignment",
        "revalidate_instances",
        "loc_by_alias",
        "use_attribute_docstrings",
    }
)

#: Canonical spellings the columnwise path takes (a subset of pydantic's lax forms, same value).
_INT = r"^[+-]?[0-9]{1,18}$"  # 18 digits always fit an Int64
_FLOAT = r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?$"
_BOOL = {"true": True, "false": False, "True": True, "False": False}

_PROBLEMS = {"row": pl.Int64, "field": pl.String, "message": pl.String, "value": pl.String}

_SCALAR_DTYPES: dict[Any, pl.DataType] = {
    str: pl.String(),
    int: pl.Int64(),
    float: pl.Float64(),
    bool: pl.Boolean(),
    dt.date: pl.Date(),
    dt.datetime: pl.Datetime("us"),
}


@dataclass(frozen=True)
class FieldPlan:
    """How one model field is read: its column, whether a null is ``None``, its default, how its
    cells are settled (``kind``: ``str``/``int``/``float``/``bool``/``choice`` columnwise,
    ``other`` by pydantic) and the polars type of its typed column (None: inferred)."""

    name: str
    column: str
    info: FieldInfo
    nullable: bool
    kind: str
    choices: tuple[str, ...] = ()
    dtype: pl.DataType | None = None
    #: The field takes text (``str``, string literals or enums, a union with ``str``): a cell
    #: that looks like JSON is text to it, never parsed.
    textual: bool = True

    @property
    def required(self) -> bool:
        return self.info.is_required()

    def default(self) -> Any:
        return self.info.get_default(call_default_factory=True)


def _strip_optional(annotation: Any) -> tuple[Any, bool]:
    """``(inner type, None allowed)`` for ``X | None`` / ``Optional[X]``; else ``(annotation,
    False)``."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) < len(typing.get_args(annotation)):
            return (args[0] if len(args) == 1 else typing.Union[tuple(args)]), True  # noqa: UP007
    return annotation, annotation is None or annotation is type(None)


def _kind(inner: Any, info: FieldInfo, columnwise: bool) -> tuple[str, tuple[str, ...]]:
    if columnwise and not info.metadata:
        if inner in (str, int, float, bool):
            return inner.__name__, ()
        if typing.get_origin(inner) is Literal:
            args = typing.get_args(inner)
            if all(type(a) is str for a in args):
                return "choice", tuple(args)
        if isinstance(inner, type) and issubclass(inner, enum.Enum):
            values = [m.value for m in inner]
            if all(type(v) is str for v in values):
                return "choice", tuple(values)
    return "other", ()


def _dtype(inner: Any) -> pl.DataType | None:
    """The polars type a field's values are kept in; None: inferred from the values."""
    if inner in _SCALAR_DTYPES:
        return _SCALAR_DTYPES[inner]
    if typing.get_origin(inner) is Literal:
        kinds = {type(a) for a in typing.get_args(inner)}
        return _SCALAR_DTYPES.get(kinds.pop()) if len(kinds) == 1 else None
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        kinds = {type(m.value) for m in inner}
        return _SCALAR_DTYPES.get(kinds.pop()) if len(kinds) == 1 else None
    if typing.get_origin(inner) in (list, tuple, set, frozenset, Sequence):
        args = [a for a in typing.get_args(inner) if a is not Ellipsis]
        if len(args) == 1 and (item := _dtype(args[0])) is not None:
            return pl.List(item)
    return None


def _textual(inner: Any) -> bool:
    if inner is str:
        return True
    origin = typing.get_origin(inner)
    if origin is Literal:
        return all(type(a) is str for a in typing.get_args(inner))
    if origin in (typing.Union, types.UnionType):
        return any(_textual(a) for a in typing.get_args(inner))
    if isinstance(inner, type) and issubclass(inner, enum.Enum):
        return all(type(m.value) is str for m in inner)
    return False


def _row_wise(model: type[BaseModel]) -> bool:
    """Must the model be validated row by row (validators, or a configuration that reads
    values its own way)?"""
    dec = model.__pydantic_decorators__
    if dec.validators or dec.field_validators or dec.root_validators or dec.model_validators:
        return True
    return not set(model.model_config) <= _HARMLESS_CONFIG


def plan_fields(model: type[BaseModel], columns: Sequence[str]) -> list[FieldPlan]:
    """One :class:`FieldPlan` per model field, in the model's order; a field's column is its
    alias when the table has a column of that name, else its name."""
    columnwise = not _row_wise(model)
    plans = []
    for name, info in model.model_fields.items():
        alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
        column = alias if alias and alias in columns else name
        inner, nullable = _strip_optional(info.annotation)
        kind, choices = _kind(inner, info, columnwise)
        plans.append(
            FieldPlan(name, column, info, nullable, kind, choices, _dtype(inner), _textual(inner))
        )
    return plans


def invalid_schema() -> dict[str, Any]:
    """The columns of :func:`validate_frame`'s problems: ``row`` (position in the frame),
    ``field`` (a field path, ``""`` for the whole record), ``message`` and ``value`` (the cell
    as read, text)."""
    return dict(_PROBLEMS)


def _message(field: str, msg: str, value: str | None) -> str:
    msg = " ".join(str(msg).split())  # one line, whatever a validator raised
    got = "" if value is None else f" (got {clip(value)!r})"
    return f"{field}: {msg}{got}" if field else f"{msg}{got}"


def _cells_at(
    column: pl.Series, rows: list[int], plan: FieldPlan, nested: dict[int, str]
) -> tuple[list[Any], list[str | None]]:
    """The cells at ``rows`` as pydantic gets them (see the module doc) and as a message
    quotes them (text)."""
    raw = column.gather(rows).to_list() if rows else []
    shown = [v if v is None or isinstance(v, str) else orjson.dumps(v).decode() for v in raw]
    values: list[Any] = list(raw)
    for k, (i, v) in enumerate(zip(rows, raw, strict=True)):
        if not isinstance(v, str):
            continue
        if i in nested:
            values[k] = orjson.loads(v)
        elif not plan.textual and v[:1] in ("[", "{"):
            with contextlib.suppress(orjson.JSONDecodeError):  # else text: the model decides
                values[k] = orjson.loads(v)
    return values, shown


def _canonical(plan: FieldPlan) -> pl.Expr:
    """The typed value of a cell ``t`` in a canonical spelling, else null (pydantic decides)."""
    t = pl.col("t")
    if plan.kind == "str":
        return t
    if plan.kind == "int":
        return pl.when(t.str.contains(_INT)).then(t.cast(pl.Int64, strict=False))
    if plan.kind == "float":
        return pl.when(t.str.contains(_FLOAT)).then(t.cast(pl.Float64, strict=False))
    if plan.kind == "bool":
        return t.replace_strict(_BOOL, default=None, return_dtype=pl.Boolean)
    return pl.when(t.is_in(list(plan.choices))).then(t)


def _plain(value: Any) -> Any:
    """A validated value as a column holds it: an enum member by its value, any other type a
    column has no type for (a URL, a UUID, a nested model) as pydantic serialises it to JSON
    (a URL as its text), never a Python object column nothing downstream can write."""
    if value is None or isinstance(value, str | int | float | bool | dt.date | dt.time):
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value)


def _typed(values: list[Any], dtype: pl.DataType | None, name: str) -> pl.Series:
    values = [_plain(v) for v in values]
    if dtype is not None:
        return pl.Series(name, values, dtype=dtype, strict=False)
    try:
        return pl.Series(name, values, strict=False)
    except (TypeError, ValueError, pl.exceptions.PolarsError):  # mixed shapes: JSON text
        text = [None if v is None else orjson.dumps(v, default=str).decode() for v in values]
        return pl.Series(name, text, dtype=pl.String)


def _lost(
    series: pl.Series, rows: list[int], values: list[Any], shown: list[str | None]
) -> list[tuple[int, str, str, str | None]]:
    """Values pydantic took (``values``, at ``rows``; ``series`` holds them typed) that the
    column's type cannot hold, an integer beyond 64 bits: problems, not nulls, or export would
    lose them without a word."""
    msg = f"value does not fit a {series.dtype} column"
    return [
        (i, series.name, _message(series.name, msg, shown[k]), shown[k])
        for k, (i, v) in enumerate(zip(rows, values, strict=True))
        if v is not None and series[k] is None
    ]


def _batch(
    adapter: TypeAdapter[list[Any]], items: list[Any], model: type[BaseModel] | None = None
) -> tuple[dict[int, Any], dict[int, list[ErrorDetails]]]:
    """Validate ``items`` in one call: ``(index → value dumped to Python, index → errors)``.
    ``model``: the model ``adapter`` validates lists of, if it does (see :func:`_one_by_one`)."""
    errors: dict[int, list[ErrorDetails]] = {}
    try:
        good = adapter.validate_python(items)
        keep = list(range(len(items)))
    except ValidationError as e:
        for err in e.errors(include_url=False):
            at = err["loc"][0]
            assert isinstance(at, int)  # an item of the validated list: located by its index
            errors.setdefault(at, []).append(err)
        keep = [i for i in range(len(items)) if i not in errors]
        good = adapter.validate_python([items[i] for i in keep]) if keep else []
    except Exception:
        # A validator of the user's model raised something other than the ValueError or
        # AssertionError pydantic turns into an error (``1/0``, a KeyError): the items are
        # validated one by one, and each that raises is invalid with the exception as its
        # reason, a finding on its record rather than "internal error" for the whole run.
        return _one_by_one(adapter, items, model)
    dumped = adapter.dump_python(good, mode="python") if keep else []
    return dict(zip(keep, dumped, strict=True)), errors


def _one_by_one(
    adapter: TypeAdapter[list[Any]], items: list[Any], model: type[BaseModel] | None
) -> tuple[dict[int, Any], dict[int, list[ErrorDetails]]]:
    """:func:`_batch` an item at a time, an exception of the model's own code an error (located
    at the field whose validator raised it, when a field validator did: :func:`_raised_in`)."""
    good: dict[int, Any] = {}
    errors: dict[int, list[ErrorDetails]] = {}
    for i, item in enumerate(items):
        try:
            value = adapter.validate_python([item])
        except ValidationError as e:
            for err in e.errors(include_url=False):
                errors.setdefault(i, []).append({**err, "loc": (i, *err["loc"][1:])})
            continue
        except Exception as e:
            said = " ".join(str(e).split())
            errors[i] = [
                {
                    "type": "model_raised",
                    "loc": (i, *_raised_in(model, e)),
                    "msg": f"the model's validation raised {type(e).__name__}"
                    + (f": {said}" if said else ""),
                    "input": item,
                }
            ]
            continue
        good[i] = adapter.dump_python(value, mode="python")[0]
    return good, errors


def _raised_in(model: type[BaseModel] | None, error: BaseException) -> tuple[str, ...]:
    """``(field,)`` when a field validator of ``model`` raised ``error`` (its code is in the
    traceback), else ``()``: the record as a whole."""
    decorators = getattr(model, "__pydantic_decorators__", None)
    if decorators is None:
        return ()
    codes = {
        getattr(getattr(d.func, "__func__", d.func), "__code__", None): d.info.fields
        for d in decorators.field_validators.values()
    }
    tb = error.__traceback__
    while tb is not None:
        fields = codes.get(tb.tb_frame.f_code)
        if fields and len(fields) == 1 and fields[0] != "*":
            return (fields[0],)
        tb = tb.tb_next
    return ()


@dataclass
class _FieldWork:
    """One field's cells as :func:`_field_work` sorted them, waiting for pydantic's verdicts on
    ``values`` (its distinct pending cells; empty when the cast settled every cell)."""

    plan: FieldPlan
    index: pl.Series
    base: pl.DataFrame
    empty: pl.Series
    fast: pl.Series | None
    todo: pl.DataFrame
    values: list[Any]
    shown: list[str | None]


def _field_work(frame: pl.DataFrame, plan: FieldPlan, nested: dict[int, str]) -> _FieldWork:
    """The canonical cells of one field settled by a cast; the *distinct* other cells listed for
    pydantic (one validation each): the first half of :func:`_settle_field`."""
    height = frame.height
    if plan.column in frame.columns:
        column = frame[plan.column]
    else:
        column = pl.Series(plan.column, [None] * height, dtype=pl.String)
    index = pl.int_range(height, eager=True, dtype=pl.Int64).alias("row")
    is_nested = index.is_in(list(nested)) if nested else pl.repeat(False, height, eager=True)
    base = pl.DataFrame({"row": index, "t": column, "n": is_nested})
    empty = column.is_null() & ~is_nested
    fast: pl.Series | None = None
    if column.dtype == pl.String and plan.kind != "other":
        fast = base.select(
            pl.when(~pl.col("n")).then(_canonical(plan)).alias(plan.name)
        ).to_series()
        pending = ~empty & fast.is_null()
    else:
        pending = ~empty
    todo = base.filter(pending)
    values: list[Any] = []
    shown: list[str | None] = []
    if todo.height:
        if column.dtype == pl.String:  # one validation per distinct cell
            uniq = todo.unique(["t", "n"], keep="first", maintain_order=True)
            uniq = uniq.with_row_index("slot")
            todo = todo.join(uniq.select("t", "n", "slot"), on=["t", "n"], maintain_order="left")
            firsts = uniq["row"].to_list()
        else:  # lists: one per cell
            todo = todo.with_row_index("slot")
            firsts = todo["row"].to_list()
        values, shown = _cells_at(column, firsts, plan, nested)
    return _FieldWork(plan, index, base, empty, fast, todo, values, shown)


def _field_adapter(plan: FieldPlan) -> TypeAdapter[list[Any]]:
    """The field's type and constraints over a list of its values."""
    # a type made at run time from the field's annotation, which no static type can name
    annotated: Any = Annotated
    return TypeAdapter(list[annotated[plan.info.annotation, plan.info]])


def _settle_field(
    work: _FieldWork, good: dict[int, Any], errors: dict[int, list[ErrorDetails]]
) -> tuple[pl.Series, pl.DataFrame]:
    """One field's typed column (null where invalid) and its problems (:func:`invalid_schema`):
    the canonical cells by a cast, the *distinct* other cells by pydantic's verdicts on
    ``work.values`` (:func:`_batch`: ``good``, ``errors``), the empty ones by the field's
    nullability and default. Python touches only the distinct cells pydantic settles; rows find
    their verdict by a join."""
    plan, todo, values, shown = work.plan, work.todo, work.values, work.shown
    problems = [pl.DataFrame(schema=_PROBLEMS)]
    settled: list[pl.DataFrame] = []
    if todo.height:
        typed = _typed([good.get(k) for k in range(len(values))], plan.dtype, plan.name)
        bad: list[tuple[int, str, str, str | None]] = []
        for k, errs in errors.items():
            for err in errs:
                path = field_path((plan.name, *err["loc"][1:]))
                bad.append((k, path, _message(path, err["msg"], shown[k]), shown[k]))
        # a value pydantic took that the column's type cannot hold (an integer beyond 64
        # bits) is a problem, not a null, or export would lose it without a word
        lost = f"value does not fit a {typed.dtype} column"
        bad += [
            (k, plan.name, _message(plan.name, lost, shown[k]), shown[k])
            for k, v in good.items()
            if v is not None and typed[k] is None
        ]
        slots = pl.DataFrame(bad, schema={**_PROBLEMS, "row": pl.UInt32}, orient="row")
        slots = slots.rename({"row": "slot"})
        problems.append(todo.select("row", "slot").join(slots, on="slot").drop("slot"))
        ok = todo.filter(~pl.col("slot").is_in(slots["slot"].implode()))
        values_of = pl.DataFrame({"slot": pl.int_range(len(values), eager=True), "v": typed})
        settled.append(
            ok.select("row", pl.col("slot").cast(pl.Int64)).join(
                values_of, on="slot", maintain_order="left"
            )
        )
    empty = work.empty
    if not plan.nullable and empty.any():  # an empty cell: the default, or missing
        empties = work.base.filter(empty).select("row")
        if plan.required:
            missing = _message(plan.name, "Field required", None)
            problems.append(
                empties.with_columns(
                    pl.lit(plan.name).alias("field"),
                    pl.lit(missing).alias("message"),
                    pl.lit(None, pl.String).alias("value"),
                )
            )
        elif (default := plan.default()) is not None:
            fill = _typed([default], plan.dtype, "v").new_from_index(0, empties.height)
            settled.append(empties.with_columns(pl.lit(0, pl.Int64).alias("slot"), fill))
    series = _assemble(work.index, plan, work.fast, settled)
    return series, pl.concat(problems).sort("row", maintain_order=True)


def _assemble(
    index: pl.Series, plan: FieldPlan, fast: pl.Series | None, settled: list[pl.DataFrame]
) -> pl.Series:
    """The typed column: the cast cells, and the settled ones (``row``, ``v``) where the cast
    had none."""
    out = pl.DataFrame({"row": index})
    if settled:
        parts = pl.concat([s.select("row", "v") for s in settled], how="vertical_relaxed")
        out = out.join(parts, on="row", how="left", maintain_order="left")
    else:
        out = out.with_columns(pl.lit(None, plan.dtype or pl.Null).alias("v"))
    if fast is not None:
        return out.select(pl.coalesce(fast, pl.col("v")).alias(plan.name)).to_series()
    return out["v"].alias(plan.name)


def _input_key(plan: FieldPlan) -> str:
    """The key the model reads a field's value from (its alias, if it has one)."""
    alias = plan.info.validation_alias
    return alias if isinstance(alias, str) else plan.info.alias or plan.name


@dataclass
class _RowsPart:
    """What the row-wise validation of some rows found, rows counted from the part's first:
    per field its typed column (``None`` for a field whose type polars infers from all the
    values, :attr:`FieldPlan.dtype` None: ``values`` holds those, typed once every part is
    in), the model's errors as problems, and per field the values its column could not hold
    (``None`` where deferred with the values)."""

    columns: list[pl.Series | None]
    values: list[list[Any] | None]
    errors: list[tuple[int, str, str, str | None]]
    lost: list[list[tuple[int, str, str, str | None]] | None]
    shown: list[list[str | None] | None]


def _rows_part(
    frame: pl.DataFrame,
    model: type[BaseModel],
    plans: list[FieldPlan],
    nested: dict[str, dict[int, str]],
) -> _RowsPart:
    """Every row of ``frame`` through the model at once (a model whose fields are not
    independent): one engine unit of :func:`_settle_rows`. Each row's verdict is its own (a
    validator sees one row), so parts of a table concatenate to the whole table's result."""
    # The cyclic collector is paused for the slice and then run on the youngest generation
    # alone (which holds all the slice made): a slice is ~8 objects a row, which the collector
    # walked again and again as they piled up (half of the time of 1 M rows at once); the few
    # cycles among them are freed here, not left to pile up over the slices.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _rows_part_now(frame, model, plans, nested)
    finally:
        if paused:
            gc.enable()
            gc.collect(0)


def _rows_part_now(
    frame: pl.DataFrame,
    model: type[BaseModel],
    plans: list[FieldPlan],
    nested: dict[str, dict[int, str]],
) -> _RowsPart:
    height = frame.height
    everything = list(range(height))
    absent = pl.Series([None] * height, dtype=pl.String)
    cells = {
        p.name: _cells_at(
            frame[p.column] if p.column in frame.columns else absent,
            everything,
            p,
            nested.get(p.column, {}),
        )
        for p in plans
    }
    keys = {p.name: _input_key(p) for p in plans}
    items = []
    for i in range(height):
        row: dict[str, Any] = {}
        for p in plans:
            v = cells[p.name][0][i]
            if v is not None or p.nullable:
                row[keys[p.name]] = v
        items.append(row)
    # list[model], of a model known only at run time: no static type names it
    items_type: Any = GenericAlias(list, (model,))
    adapter: TypeAdapter[list[Any]] = TypeAdapter(items_type)
    good, errors = _batch(adapter, items, model)
    problems = []
    for i, errs in sorted(errors.items()):
        for err in errs:
            loc = err["loc"][1:]
            name = next((p.name for p in plans if loc and loc[0] in (p.name, keys[p.name])), None)
            path = field_path((name, *loc[1:])) if name else ""
            value = cells[name][1][i] if name and len(loc) == 1 else None
            problems.append((i, path, _message(path, err["msg"], value), value))
    part = _RowsPart([], [], problems, [], [])
    for p in plans:
        values = [good[i][p.name] if i in good else None for i in range(height)]
        if p.dtype is None:  # typed by the whole column's values: once every part is in
            part.columns.append(None)
            part.values.append(values)
            part.lost.append(None)
            part.shown.append(cells[p.name][1])
        else:
            typed = _typed(values, p.dtype, p.name)
            part.columns.append(typed)
            part.values.append(None)
            part.lost.append(_lost(typed, everything, values, cells[p.name][1]))
            part.shown.append(None)
    return part


def _settle_rows(
    frame: pl.DataFrame,
    model: type[BaseModel],
    plans: list[FieldPlan],
    nested: dict[str, dict[int, str]],
    loader: ModelLoader | None = None,
) -> tuple[list[pl.Series], list[tuple[int, str, str, str | None]]]:
    """Every row through the model (:func:`_rows_part`), slices of rows merged in row order: in
    this process on the local engine, as engine tasks on another (:func:`_rows_on_engine`).

    Why slices in this process too: pydantic makes several objects per row (the input dict, the
    model, its dump), and a million rows at once held 2.7 GB and spent half their time in the
    cyclic garbage collector walking them. :data:`ROW_BATCH` rows at a time, the collector
    paused within a slice (:func:`_rows_part`), give the same result (each row's verdict is its
    own) in half the CPU time and a sixth of the memory (1 M rows, a validator, one core:
    18.2 → 10.0 CPU s, 2.70 → 0.47 GB peak for this validation)."""
    engine = current_engine()
    if loader is None or engine.is_local() or frame.height == 0:
        starts = list(range(0, frame.height, ROW_BATCH)) or [0]
        parts = [
            _rows_part(frame.slice(a, ROW_BATCH), model, plans, _nested_slice(nested, a, ROW_BATCH))
            for a in starts
        ]
    else:
        parts, starts = _rows_on_engine(engine, frame, plans, nested, loader)
    problems = [
        (i + a, field, message, shown)
        for part, a in zip(parts, starts, strict=True)
        for i, field, message, shown in part.errors
    ]
    series = []
    for k, p in enumerate(plans):
        if p.dtype is None:
            if len(parts) == 1:
                values, shown = parts[0].values[k] or [], parts[0].shown[k] or []
            else:
                values = [v for part in parts for v in part.values[k] or []]
                shown = [v for part in parts for v in part.shown[k] or []]
            series.append(_typed(values, p.dtype, p.name))
            problems += _lost(series[-1], list(range(frame.height)), values, shown)
        else:
            pieces: list[pl.Series] = []
            for part in parts:
                piece = part.columns[k]
                assert piece is not None  # a field of a known type is typed in every part
                pieces.append(piece)
            series.append(pieces[0] if len(pieces) == 1 else pl.concat(pieces, rechunk=True))
            problems += [
                (i + a, field, message, shown)
                for part, a in zip(parts, starts, strict=True)
                for i, field, message, shown in part.lost[k] or []
            ]
    return series, sorted(problems, key=lambda x: x[0])


#: Rows per slice of the row-wise validation: in this process, and at most per engine task on
#: a cluster (a model with a validator is ~10-20 µs a row: a task of about a second, against
#: Ray's ~ms per task).
ROW_BATCH = 50_000
#: Distinct values per engine task of a field pydantic settles (~1-10 µs a value).
VALUE_BATCH = 50_000


def _size(n: int, parallelism: int, cap: int) -> int:
    """Units of at most ``cap``, at least four per worker slot when there is enough work (the
    tasks of a slow node are not the run's tail)."""
    return max(1, min(cap, -(-n // (4 * parallelism))))


def _rows_on_engine(
    engine: Engine,
    frame: pl.DataFrame,
    plans: list[FieldPlan],
    nested: dict[str, dict[int, str]],
    loader: ModelLoader,
) -> tuple[list[_RowsPart], list[int]]:
    """:func:`_rows_part` over slices of the rows as engine tasks (the model's columns only,
    ``nested`` re-counted from each slice's start); the parts and their first rows."""
    used = [c for c in dict.fromkeys(p.column for p in plans) if c in frame.columns]
    cells = frame.select(used)
    size = _size(frame.height, engine.parallelism(1), ROW_BATCH)
    starts = list(range(0, frame.height, size))
    units = [
        (
            loader,
            cells.slice(a, size),
            _nested_slice({c: d for c, d in nested.items() if c in used}, a, size),
        )
        for a in starts
    ]
    return engine.map(validate_rows, units, label="rows checked by the model"), starts


def _nested_slice(
    nested: dict[str, dict[int, str]], start: int, size: int
) -> dict[str, dict[int, str]]:
    """The nested cells of rows ``start`` to ``start + size``, counted from the slice's start."""
    end = start + size
    return {c: {i - start: v for i, v in d.items() if start <= i < end} for c, d in nested.items()}


def validate_rows(
    loader: ModelLoader, frame: pl.DataFrame, nested: dict[str, dict[int, str]]
) -> _RowsPart:
    """One engine task of the row-wise validation: ``frame``'s rows (a slice of the table, the
    model's columns) through the model ``loader`` builds in this process (see
    :class:`~curate.schemas.table.ModelSource` for why the model is not sent itself). Values
    come back plain (an enum member as its value, as the column holds it)."""
    model = loader()
    part = _rows_part(frame, model, plan_fields(model, frame.columns), nested)
    part.values = [None if v is None else [_plain(x) for x in v] for v in part.values]
    return part


def validate_values(
    loader: ModelLoader, field: str, values: list[Any]
) -> tuple[dict[int, Any], dict[int, list[dict[str, Any]]]]:
    """One engine task of a field pydantic settles: its distinct ``values`` (a batch of them)
    through the field's type in the model ``loader`` builds here (:func:`_batch`); the errors
    as their location and message alone (what a problem reads: an error's context may hold
    the exception a validator raised, not always picklable), the values plain."""
    model = loader()
    plan = next(p for p in plan_fields(model, []) if p.name == field)
    good, errors = _batch(_field_adapter(plan), values)
    slim = {k: [{"loc": e["loc"], "msg": e["msg"]} for e in errs] for k, errs in errors.items()}
    return {k: _plain(v) for k, v in good.items()}, slim


def _verdicts_on_engine(
    engine: Engine, plans: list[FieldPlan], work: list[_FieldWork], loader: ModelLoader
) -> list[tuple[dict[int, Any], dict[int, list[ErrorDetails]]]]:
    """Pydantic's verdicts on each field's pending values (:func:`_batch`), every field's
    values in batches as engine tasks (all fields at once: a table of many small fields is one
    round of tasks, not one per field), merged per field in order."""
    pending = [k for k, w in enumerate(work) if w.values]
    out: list[tuple[dict[int, Any], dict[int, list[ErrorDetails]]]] = [({}, {}) for _ in work]
    total = sum(len(work[k].values) for k in pending)
    size = _size(total, engine.parallelism(1), VALUE_BATCH)
    owners = [(k, a) for k in pending for a in range(0, len(work[k].values), size)]
    units = [(loader, plans[k].name, work[k].values[a : a + size]) for k, a in owners]
    results = engine.map(validate_values, units, label="distinct values checked by the model")
    for (k, a), (good, errors) in zip(owners, results, strict=True):
        out[k][0].update({i + a: v for i, v in good.items()})
        out[k][1].update({i + a: e for i, e in errors.items()})
    return out


def validate_frame(
    frame: pl.DataFrame,
    model: type[BaseModel],
    *,
    nested: dict[str, dict[int, str]] | None = None,
    loader: ModelLoader | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``frame`` (text cells, as :func:`~curate.io.read.read_frame` gives them) checked against
    ``model``: ``(typed, problems)``.

    ``typed`` has one column per model field (by field name, in the model's order, typed; an
    invalid cell is null); ``problems`` one row per invalid cell (:func:`invalid_schema`), in
    row order. ``nested`` names the cells that were lists or objects in the input
    (:attr:`curate.io.records.Source.nested_cells`). How each field is settled: the module doc.

    ``loader``: a picklable callable that builds ``model`` in another process. With one, the
    pydantic calls (the model's rows, a field's distinct values) run on the engine in force
    (:mod:`curate.core.engine`): on Ray as tasks, slices of rows or batches of values, merged
    in order into the same result. Without one (or on the local engine) they run here.
    """
    nested = nested or {}
    plans = plan_fields(model, frame.columns)
    if _row_wise(model):
        series, found = _settle_rows(frame, model, plans, nested, loader)
        problems = pl.DataFrame(found, schema=_PROBLEMS, orient="row")
    else:
        series, parts = [], [pl.DataFrame(schema=_PROBLEMS)]
        engine = current_engine()
        if loader is None or engine.is_local():  # a field at a time: one field's work in memory
            for p in plans:
                w = _field_work(frame, p, nested.get(p.column, {}))
                good, errors = _batch(_field_adapter(p), w.values) if w.values else ({}, {})
                s, f = _settle_field(w, good, errors)
                series.append(s)
                parts.append(f)
        else:
            work = [_field_work(frame, p, nested.get(p.column, {})) for p in plans]
            verdicts = _verdicts_on_engine(engine, plans, work, loader)
            for w, (good, errors) in zip(work, verdicts, strict=True):
                s, f = _settle_field(w, good, errors)
                series.append(s)
                parts.append(f)
        problems = pl.concat(parts)
    typed = pl.DataFrame(series) if series else pl.DataFrame(height=frame.height)
    return typed, problems.sort("row", maintain_order=True)
