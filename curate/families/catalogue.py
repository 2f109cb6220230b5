"""What the command line shows of each family without importing it: the family's catalogue entry.

Why: ``curate --help``, ``curate audit mquake --help``, ``curate rules`` and shell completion
ran every family's import first (polars, pyarrow, numpy, the schemas' Pydantic models): 0.6 s
before a line of help, paid by every completion key press and pre-commit hook. What they show
is a handful of facts per family: its names and title, what PATHS takes, its options (flag,
type, default, help, the commands that read it) and its rules (code, severity, doc). Those are
written down for curate's own families in ``curate/data/families.json``; the commands build
their help from it and import a family only to run it.

The file is derived, never edited: ``python scripts/make_catalogue.py`` writes it from the
families themselves (:func:`catalogue_of`), and a test fails when it differs from what the
families say now, so a rule's docstring or an option's help changed without it cannot ship.
A family registered by another package has no entry there: it is imported (guarded, as
before) and its entry read from it, by the same function (:func:`entry_of`), so a plug-in's
commands are built exactly as curate's own are.

May import: the registry (:mod:`curate.families`) and the standard library at import time;
the options model's helpers (:mod:`curate.core.options`, Pydantic) only to describe a live
family.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from curate.core.errors import fix_label
from curate.families import (
    BUILTIN,
    FamilyLoadError,
    entries,
    get_family,
)

if TYPE_CHECKING:
    from curate.families.base import Family

#: The catalogue of curate's own families, in the package's data folder.
CATALOGUE = "families.json"
#: The commands a family's options can belong to (as :data:`curate.core.options.COMMANDS`,
#: which is not imported here: it lives beside Pydantic).
OPTION_COMMANDS = ("validate", "audit", "fix", "export")


@dataclass(frozen=True)
class OptionEntry:
    """One field of a family's options model as a flag: everything typer needs to parse it.

    ``kind``: ``bool``, ``int``, ``float``, ``str``, ``path`` or ``choice`` (``choices``
    then lists the values). ``repeat``: the flag may be given several times (a list, or a
    ``KEY=VALUE`` mapping: ``metavar`` says which). ``optional``: the flag may be absent
    with no value (``default`` None).
    """

    name: str
    flag: str
    kind: str
    commands: tuple[str, ...]
    help: str = ""
    choices: tuple[str, ...] = ()
    optional: bool = False
    repeat: bool = False
    default: Any = None
    metavar: str | None = None


@dataclass(frozen=True)
class RuleEntry:
    """A rule as ``curate rules`` shows it (the fields of :meth:`Rule.to_json`)."""

    code: str
    name: str
    family: str
    category: str
    severity: str
    fixable: bool
    fix: str
    fix_safety: str | None
    needs: tuple[str, ...]
    summary: str
    doc: str
    some_unsafe: bool = False

    @property
    def fix_label(self) -> str:
        """``fix: always (safe)`` as ``curate rules`` shows it, or ``""``."""
        return fix_label(self.fix, self.fix_safety, self.some_unsafe) if self.fixable else ""

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "needs": list(self.needs)}


@dataclass(frozen=True)
class FamilyEntryInfo:
    """What the command line shows of one family (see the module's docstring)."""

    name: str
    aliases: tuple[str, ...]
    title: str
    #: What PATHS takes, when the family reads its own format (None: the core's record inputs).
    inputs_help: str | None
    #: The inputs are text (JSON, CSV): the commands offer ``--encoding``.
    inputs_text: bool
    options: tuple[OptionEntry, ...] = ()
    rules: tuple[RuleEntry, ...] = field(default=())

    def options_for(self, command: str) -> list[OptionEntry]:
        return [o for o in self.options if command in o.commands]

    def describe(self, command: str) -> str:
        """``--edit-set, --task``: the flags one command takes, for error messages."""
        return ", ".join(o.flag for o in self.options_for(command)) or "(none)"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "aliases": list(self.aliases),
            "title": self.title,
            "inputs_help": self.inputs_help,
            "inputs_text": self.inputs_text,
            "options": [_plain(asdict(o)) for o in self.options],
            "rules": [r.to_json() for r in self.rules],
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> FamilyEntryInfo:
        return cls(
            name=raw["name"],
            aliases=tuple(raw["aliases"]),
            title=raw["title"],
            inputs_help=raw["inputs_help"],
            inputs_text=raw["inputs_text"],
            options=tuple(
                OptionEntry(
                    **{
                        **o,
                        "commands": tuple(o["commands"]),
                        "choices": tuple(o["choices"]),
                    }
                )
                for o in raw["options"]
            ),
            rules=tuple(RuleEntry(**{**r, "needs": tuple(r["needs"])}) for r in raw["rules"]),
        )


def _plain(value: Any) -> Any:
    """Tuples as lists, paths as text: what JSON holds, so a read entry equals a made one."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


# --------------------------------------------------------------------------- from a family


def _option_kind(annotation: Any) -> tuple[str, tuple[str, ...], bool, bool, str | None]:
    """``(kind, choices, optional, repeat, metavar)`` of an options field's annotation.

    ``dict[str, str]`` fields are given as repeated ``KEY=VALUE`` flags (the model's validator
    parses them); lists as repeated flags; ``X | None`` stays optional.
    """
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _option_kind(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) != 1:
            return "str", (), True, False, None
        kind, choices, _, repeat, metavar = _option_kind(args[0])
        return kind, choices, True, repeat, metavar
    if origin is dict:
        return "str", (), True, True, "KEY=VALUE"
    if origin in (list, tuple, set):
        return "str", (), True, True, None
    if origin is typing.Literal:
        return "choice", tuple(str(a) for a in typing.get_args(annotation)), False, False, None
    kinds = {bool: "bool", int: "int", float: "float", str: "str", Path: "path"}
    if annotation in kinds:
        return kinds[annotation], (), False, False, None
    raise TypeError(f"an options field of type {annotation!r} has no command-line flag kind")


def entry_of(fam: Family) -> FamilyEntryInfo:
    """A live family's catalogue entry: what :func:`catalogue_of` writes for curate's own."""
    from curate.core.options import field_commands, field_flag

    model = fam.Options
    options = []
    for name, info in model.model_fields.items():
        kind, choices, optional, repeat, metavar = _option_kind(info.annotation)
        default = None if repeat else info.get_default(call_default_factory=True)
        options.append(
            OptionEntry(
                name=name,
                flag=field_flag(model, name),
                kind=kind,
                commands=tuple(field_commands(model, name)),
                help=info.description or "",
                choices=choices,
                optional=optional or default is None,
                repeat=repeat,
                default=_plain(default),
                metavar=metavar,
            )
        )
    rules = tuple(RuleEntry(**{**r.to_json(), "needs": tuple(r.needs)}) for r in fam.rules)
    return FamilyEntryInfo(
        name=fam.name,
        aliases=tuple(fam.aliases),
        title=fam.card.title,
        inputs_help=fam.inputs.help,
        inputs_text=fam.inputs.text,
        options=tuple(options),
        rules=rules,
    )


def catalogue_of(values: list[str] | None = None) -> dict[str, Any]:
    """The catalogue of curate's own families (their entry-point values, as :data:`BUILTIN`
    names them), from the families themselves: what ``families.json`` must hold."""
    from importlib.metadata import EntryPoint

    out: dict[str, Any] = {}
    for value in values or list(dict.fromkeys(BUILTIN.values())):
        fam = EntryPoint(name="x", value=value, group="curate.families").load()
        out[value] = entry_of(fam).to_json()
    return out


# --------------------------------------------------------------------------- reading


@cache
def _shipped() -> dict[str, FamilyEntryInfo]:
    try:
        text = resources.files("curate").joinpath("data", CATALOGUE).read_text("utf-8")
    except FileNotFoundError:  # a checkout whose catalogue is being regenerated
        return {}
    return {value: FamilyEntryInfo.from_json(raw) for value, raw in json.loads(text).items()}


def _is_own(package: str) -> bool:
    return package.lower().replace("_", "-") == "curate"


def entry_for(name: str) -> FamilyEntryInfo:
    """The catalogue entry of the family registered as ``name`` (or an alias of it).

    curate's own families come from the shipped catalogue, without an import; any other is
    imported (:func:`curate.families.get_family`: an unknown name or a broken plug-in is its
    one-line usage error) and described."""
    key = name.strip().lower()
    own = _own_entry(key)
    if own is not None:
        return own
    for entry in entries():
        shipped = _shipped().get(entry.value) if _is_own(entry.package) else None
        if shipped is not None and (key in entry.names or key in shipped.aliases):
            return shipped  # an alias only the family declares (glycans) is known here too
    return entry_of(get_family(key))


def _own_entry(key: str) -> FamilyEntryInfo | None:
    """A built-in family's entry by one of its names, without looking at the entry points.

    Why it may skip them: registration keeps curate's own names first (a plug-in cannot take a
    built-in's name or alias), so a built-in name means the built-in family whatever else is
    installed; and scanning every installed distribution's entry points costs ~35 ms, most of a
    shell completion's budget (issue 36)."""
    shipped = _shipped()
    value = BUILTIN.get(key)
    if value is not None:
        return shipped.get(value)
    return next((e for e in shipped.values() if key in e.aliases), None)


def all_entries() -> tuple[dict[str, FamilyEntryInfo], dict[str, str]]:
    """Every registered family's entry by canonical name (sorted), and the broken plug-ins
    (first name → the one-line reason), as :func:`curate.families.all_families` and
    :func:`curate.families.broken_families` would say, importing only what the catalogue
    lacks."""
    found: dict[str, FamilyEntryInfo] = {}
    broken: dict[str, str] = {}
    for entry in entries():
        if _is_own(entry.package) and entry.value in _shipped():
            info = _shipped()[entry.value]
        else:
            try:
                info = entry_of(entry.load())
            except FamilyLoadError as e:
                broken[entry.names[0]] = str(e)
                continue
        found.setdefault(info.name, info)
    return dict(sorted(found.items())), broken
