"""How curate's commands print their help and parse their flags: plain help, cheaply.

Why a module of its own: every command class of the command line comes from here, so that
``curate --help``, ``curate audit mquake --help`` and shell completion import neither rich's
renderer nor Pydantic (issue 36: a help answers in a blink). See :class:`PanelCommand` and
:class:`AbsentFlagsAreFalse`.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand, TyperGroup


def help_text(doc: str) -> str:
    """A docstring as help prints it: ````code```` as `code` (the docstrings are also the API's
    reStructuredText documentation)."""
    return doc.replace("``", "`")


class AbsentFlagsAreFalse:
    """A command whose ``--help`` flag reads False when absent, as every other flag does.

    Why: typer declares the help flag with no default, so an absent ``--help`` is None, which
    typer coerces through a Pydantic ``TypeAdapter`` built for the purpose: importing Pydantic
    (~50 ms) on every run that passes through a group to its subcommand, ``curate audit mquake
    --help`` included (issue 36). A False flag is left as it is. Mixed into every command
    class of curate's command line (:class:`LightGroup`, :class:`LightCommand`).
    """

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]
        if option is not None and option.default is None:
            option.default = False
        return option


class LightGroup(AbsentFlagsAreFalse, TyperGroup):
    """A typer group whose absent flags are False (see :class:`AbsentFlagsAreFalse`)."""


class LightCommand(AbsentFlagsAreFalse, TyperCommand):
    """A typer command whose absent flags are False (see :class:`AbsentFlagsAreFalse`)."""


class PanelCommand(LightCommand):
    """A command whose plain help lists its options under their panels ("Engine", "Family
    options"), as typer's rich help does.

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
                arguments.append(record)
            else:
                panel = getattr(param, "rich_help_panel", None) or "Options"
                panels.setdefault(panel, []).append(record)
        for title, rows in [("Arguments", arguments), *panels.items()]:
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
