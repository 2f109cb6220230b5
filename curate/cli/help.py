"""How curate's commands print their help and parse their flags: plain help, cheaply.

Why a module of its own: every command class of the command line comes from here, so that
``curate --help``, ``curate audit mquake --help`` and shell completion import neither rich's
renderer nor Pydantic (issue 36: a help answers in a blink). See :class:`LightCommand` and
:class:`AbsentFlagsAreFalse`.
"""

from __future__ import annotations

from enum import Enum
from types import MethodType
from typing import Any

from typer.core import TyperCommand, TyperGroup


def help_text(doc: str) -> str:
    """A docstring as help prints it: ````code```` as `code` (the docstrings are also the API's
    reStructuredText documentation)."""
    return doc.replace("``", "`")


class AbsentFlagsAreFalse:
    """A command whose parameters are coerced only when coercion can change something.

    Why: typer 0.29 coerces every processed parameter through a Pydantic ``TypeAdapter`` it
    builds on first use, even for a parameter that was not given (its value None) or that holds
    its declared default: importing Pydantic and building the adapters costs ~70-110 ms on
    ``curate rules`` and on every shell completion (issue 36: these answer in a blink). Here

    * an absent value is None (or ``()`` for a list), as typer would make it, without building
      the adapter first;
    * a parameter holding its declared default, when that default is a plain value (a string,
      number, boolean or enum member, not a path or file to check, not a bounded number), is
      already what typer would return, as is a word given for a plain ``str`` parameter and
      an enum member's value given for an enum parameter;
    * while completing a word (click's resilient parsing) nothing is coerced: the value is only
      context for the completion, and a half-typed line must not cost a parse;

    everything else goes through typer's own coercion, so its errors and conversions are
    unchanged. typer also declares ``--help`` with no default: here it is False, as every other
    absent flag. Mixed into every command class of curate's command line (:class:`LightGroup`,
    :class:`LightCommand`).
    """

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None and option.default is None:
            option.default = False
        return option

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        for param in self.get_params(ctx):  # type: ignore[attr-defined]
            if "process_value" not in vars(param):
                param.process_value = MethodType(_process_lightly, param)
        return super().parse_args(ctx, args)  # type: ignore[misc]


#: Defaults typer's coercion returns as they are (see :class:`AbsentFlagsAreFalse`).
_PLAIN = (str, int, float, bool, Enum)


def _process_lightly(param: Any, ctx: Any, value: Any) -> Any:
    """``param.process_value`` of :class:`AbsentFlagsAreFalse`: typer's, but lazy."""
    if value is None:
        value = () if param.multiple or param.nargs == -1 else None
    elif ctx.resilient_parsing or _plain_default(param, value) or _plain_text(param, value):
        pass
    elif (member := _choice(param, value)) is not None:
        value = member
    else:
        return type(param).process_value(param, ctx, value)
    if param.required and param.value_is_missing(value) and not ctx.resilient_parsing:
        return type(param).process_value(param, ctx, value)  # typer's own error
    if param.callback is not None:
        value = param.callback(ctx, param, value)
    return value


def _plain_default(param: Any, value: Any) -> bool:
    desc = getattr(param, "type_descriptor", None)
    return (
        value is param.default
        and desc is not None
        and isinstance(value, _PLAIN)
        and not (desc.is_path or desc.is_file or desc.is_ranged or desc.is_datetime)
    )


def _choice(param: Any, value: Any) -> Enum | None:
    """The enum member a word names exactly (``-f json``), as typer's choice would give."""
    desc = getattr(param, "type_descriptor", None)
    kind = getattr(desc, "annotation", None)
    if type(value) is not str or not (isinstance(kind, type) and issubclass(kind, Enum)):
        return None
    if desc.parameter_info.parser is not None:  # type: ignore[union-attr]
        return None
    return next((m for m in kind if m.value == value), None)


def _plain_text(param: Any, value: Any) -> bool:
    """A word given for a ``str`` parameter with no parser of its own: typer returns it as is."""
    desc = getattr(param, "type_descriptor", None)
    return (
        type(value) is str
        and desc is not None
        and desc.annotation is str
        and desc.parameter_info.parser is None
    )


class LightGroup(AbsentFlagsAreFalse, TyperGroup):
    """A typer group whose absent flags are False (see :class:`AbsentFlagsAreFalse`)."""


class LightCommand(AbsentFlagsAreFalse, TyperCommand):
    """A typer command parsed lightly (see :class:`AbsentFlagsAreFalse`) whose plain help lists
    its options under their panels ("Engine", "Family options"), as typer's rich help does, and
    its arguments as the usage line names them (``PATHS...``, not ``PATHS <list[str]>``).

    Why plain help: rich's renderer costs ~50 ms of imports on every ``--help`` (issue 36: a
    help answers in a blink); what the panels said, these sections still say.
    """

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        panels: dict[str, list[tuple[str, str]]] = {"Options": []}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                # PATHS..., as the usage line and click say it, not typer's `PATHS <list[str]>`
                name = param.metavar or (param.name or "").upper()
                arguments.append((name + ("..." if param.nargs != 1 else ""), record[1]))
            else:
                panel = getattr(param, "rich_help_panel", None) or "Options"
                panels.setdefault(panel, []).append(record)
        for title, rows in [("Arguments", arguments), *panels.items()]:
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
