"""Type checks of the Python API's arguments, read from the functions' own annotations.

Why: ``curate.audit("mquake", 123)`` used to fail deep inside with ``TypeError: 'int' object is
not iterable``, naming neither the argument nor what it should be. :func:`checked` wraps each
public function once; a wrong argument raises :class:`~curate.core.errors.ArgumentError` (a
``UsageError`` and a ``TypeError``) that names it: ``paths: expected a path or a list of paths,
got int``. The family's options (``**options``) are checked by the family's options model
(:func:`curate.core.options.parse_options`), which names the option the same way.

Why not pydantic's ``validate_call``: it converts what it validates, and the API must pass its
arguments on untouched — a :class:`~curate.io.records.SplitInput` path (a ``str`` that carries its
split) came back as a plain ``str``, ``overwrite="yes"`` as ``True``; and its messages name its
own validators, not "a path or a list of paths". The checks here only look (``isinstance``
against the annotation), so a value that passes is the value the function receives; the one
normalisation is a single ``str`` given for a list of strings (``select="KE2"``), which becomes
a one-item list, as a single path does.
"""

from __future__ import annotations

import functools
import inspect
import numbers
import os
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from curate.core.errors import ArgumentError, acting_as

F = TypeVar("F", bound=Callable[..., Any])

#: How a class is named in "expected ..." (the rest: "a <ClassName>").
_NAMES: dict[Any, str] = {
    str: "a string",
    bool: "True or False",
    int: "an integer",
    float: "a number",
    type(None): "None",
    Path: "a path",
}


def _union_args(annotation: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return None


def _strip(annotation: Any) -> Any:
    while typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    return annotation


def _is_sequence(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (Sequence, list, tuple)


def _item(annotation: Any) -> Any:
    args = typing.get_args(annotation)
    return args[0] if args else Any


def accepts(annotation: Any, value: Any) -> bool:
    """Does ``value`` fit ``annotation`` (the subset of typing the API's signatures use)?"""
    annotation = _strip(annotation)
    if annotation is Any or isinstance(annotation, TypeVar):
        return True
    if annotation is None or annotation is type(None):
        return value is None
    union = _union_args(annotation)
    if union is not None:
        return any(accepts(a, value) for a in union)
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    if annotation is Path:
        return isinstance(value, os.PathLike)
    if typing.get_origin(annotation) is typing.Literal:
        return value in typing.get_args(annotation)
    if _is_sequence(annotation):
        item = _item(annotation)
        return (
            isinstance(value, Sequence)
            and not isinstance(value, str | bytes)
            and all(accepts(item, v) for v in value)
        )
    origin = typing.get_origin(annotation)
    if origin is not None and origin in (Callable, typing.Callable):
        return callable(value)
    if annotation in (Callable, typing.Callable):
        return callable(value)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True  # a form not checked here: the function's own checks decide


def describe(annotation: Any) -> str:
    """``a path or a list of paths`` — what an annotation takes, in words."""
    annotation = _strip(annotation)
    union = _union_args(annotation)
    if union is not None:
        parts = [a for a in union if a is not type(None)]
        if str in parts and Path in parts:  # str | Path is one path, whatever its type
            parts = [Path, *[a for a in parts if a not in (str, Path)]]
        single = " or ".join(dict.fromkeys(describe(a) for a in parts if not _is_sequence(a)))
        # a list of the same kinds (``Paths``: a path, a table, or a list of them) is said
        # so: "a list of" before a description with commas of its own read as nonsense ("a
        # list of paths or a DataFrame (polars, pandas), a pyarrow Tables ...")
        words = [
            "a list of them" if _is_sequence(a) and describe(_item(a)) == single else describe(a)
            for a in parts
        ]
        if type(None) in union:
            words.append("None")
        return " or ".join(dict.fromkeys(words))
    if _is_sequence(annotation):
        return "a list of " + _plural(_item(annotation))
    origin = typing.get_origin(annotation)
    if annotation in (Callable, typing.Callable) or origin in (Callable, typing.Callable):
        return "a function"
    if typing.get_origin(annotation) is typing.Literal:
        return " or ".join(repr(a) for a in typing.get_args(annotation))
    if annotation in _NAMES:
        return _NAMES[annotation]
    if isinstance(described := getattr(annotation, "described_as", None), str):
        return described  # a class that names itself for these messages
    name = getattr(annotation, "__name__", str(annotation))
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _plural(annotation: Any) -> str:
    """``paths``, ``strings``: the items of a list, in words."""
    one = describe(annotation)
    for article in ("a ", "an "):
        if one.startswith(article):
            one = one[len(article) :]
    return " or ".join(w.strip() + "s" for w in one.split(" or "))


def _got(value: Any) -> str:
    return type(value).__name__


def check_argument(name: str, annotation: Any, value: Any, expected: str | None = None) -> Any:
    """``value`` if it fits ``annotation``, else :class:`ArgumentError` naming ``name``.

    A ``str`` for a list of strings (``select="KE2"``, ``tags="nlp"``) is one item: returned
    as a one-item list, never split into characters.
    """
    bare = _strip(annotation)
    union = _union_args(bare)
    members = [m for m in (union or (bare,)) if m is not type(None)]
    if (
        isinstance(value, str)
        and len(members) == 1
        and _is_sequence(members[0])
        and accepts(_item(members[0]), value)
    ):
        return [value]
    if accepts(annotation, value):
        return value
    # A list with one wrong item: name the item (``paths[1]: expected a path, got int``).
    lists = [m for m in members if _is_sequence(m)]
    if lists and isinstance(value, Sequence) and not isinstance(value, str | bytes):
        item = _item(lists[0])
        for i, v in enumerate(value):
            if not accepts(item, v):
                raise ArgumentError(f"{name}[{i}]: expected {describe(item)}, got {_got(v)}")
    raise ArgumentError(f"{name}: expected {expected or describe(annotation)}, got {_got(value)}")


def checked(**expected: str) -> Callable[[F], F]:
    """Check every argument of the decorated function against its annotation before it runs.

    ``expected`` overrides the words for a parameter (``family="a family name or a Family"``).
    ``**kwargs`` parameters are left to the function (the family's options model checks them).
    """

    def decorate(func: F) -> F:
        sig = inspect.signature(func)
        hints = typing.get_type_hints(func, include_extras=True)
        checks = {
            p.name: hints.get(p.name, Any)
            for p in sig.parameters.values()
            if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
        }

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as e:  # a missing or doubled argument: Python's words, our class
                raise ArgumentError(f"{func.__name__}(): {e}") from None
            for name, value in list(bound.arguments.items()):
                if name in checks:
                    bound.arguments[name] = check_argument(
                        name, checks[name], value, expected.get(name)
                    )
            with acting_as(func.__name__):  # curate.fix(...) is a fix: hints say so
                return func(*bound.args, **bound.kwargs)

        return typing.cast(F, wrapper)

    return decorate
