"""Family options: each family declares its own as a Pydantic model; the CLI and the API build
from it.

Why a model per family rather than flags in the core: a flag the chosen family does not read was
silently ignored before (``--task`` on MQuAKE, ``--edit-set`` on glycans), and every new family
had to edit the CLI. Now a family owns its options (name, type, help, default, the commands that
use them); the CLI turns each field into a flag of that family's subcommand, the library
validates keyword arguments against the same model, and an option the family does not have is a
usage error that lists the ones it has.

Field metadata (through :func:`option`): ``help`` (the flag's help text), ``commands`` (which of
validate/audit/fix/export read it; all when omitted) and ``flag`` (the CLI spelling when it is not
``--field-name``, e.g. ``--column`` for ``columns``).
"""

from __future__ import annotations

import difflib
import os
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, cast

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from curate.core.errors import ArgumentError, UsageError, arg

COMMANDS = ("validate", "audit", "fix", "export")


def comma_list(v: Any) -> Any:
    """``a,b`` (one flag value), ``["a", "b"]`` (repeated flags, TOML) or ``"a"`` (the API):
    the same list of names."""
    if v is None:
        return []
    if isinstance(v, str):
        v = [v]
    if isinstance(v, list | tuple):
        out = [p.strip() for item in v for p in str(item).split(",")]
        if any(not p for p in out):
            raise ValueError("an empty name")
        return list(dict.fromkeys(out))
    return v


#: A list option given as ``a,b``, repeated flags or a list (see :func:`comma_list`).
CommaList = Annotated[list[str], BeforeValidator(comma_list)]


def key_values(items: Any, what: str, *, commas: bool = False) -> dict[str, str]:
    """Repeated ``KEY=VALUE`` flags (each item also comma-separated with ``commas``) as one
    mapping, keys and values stripped.

    A key given twice with two values is refused (``ValueError``, which the option's check
    turns into one exit-2 line): the last one silently won, so ``--split-map True=test
    --split-map True=train`` made every test row train and no leak could be found (found by a
    new-user review). The same pair twice is harmless and kept once.
    """
    parts = [items] if isinstance(items, str) else list(items)
    if commas:
        parts = [p for item in parts for p in str(item).split(",")]
    out: dict[str, str] = {}
    for part in parts:
        key, sep, value = str(part).partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise ValueError(f"expected {what}, got {part!r}")
        if out.get(key, value) != value:
            raise ValueError(f"{key!r} is given twice, as {out[key]!r} and as {value!r}")
        out[key] = value
    return out


class FamilyOptions(BaseModel):
    """Base class of every family's options (a family with none uses it as is)."""

    model_config: ClassVar[ConfigDict] = ConfigDict(
        extra="forbid", frozen=True, arbitrary_types_allowed=True
    )

    #: Options that count something (processes, tasks, steps) and must be at least 1 when
    #: given. One validator for all of them: ``workers`` had the same check written out in
    #: three families. A family adds its own counts to the set.
    at_least_one: ClassVar[frozenset[str]] = frozenset({"workers"})

    @field_validator("*")
    @classmethod
    def _at_least_one(cls, v: Any, info: Any) -> Any:
        if info.field_name in cls.at_least_one and isinstance(v, int) and v < 1:
            raise ValueError(f"must be at least 1 (got {v})")
        return v

    def input_files(self) -> list[Path]:
        """Files these options make curate read (an id list, a mapping): inputs to protect.

        The output gate refuses to write over them exactly as over the data itself.
        """
        return []

    def unavailable_tables(self) -> frozenset[str]:
        """Shared tables (:meth:`curate.core.rules.RuleSet.table`) these options say the run
        cannot build — icrl's ``--metadata-only`` reads no array, so no scan. The audit does
        not run a rule that needs one (its report's ``rules_run`` leaves it out) instead of
        running it on nothing and calling the data clean. None by default."""
        return frozenset()

    def check_command(self, command: str, paths: Sequence[str]) -> None:
        """Refuse a combination of command, these options and inputs the family does not
        support (:class:`~curate.core.errors.UsageError`, exit 2): called by ``fix`` and
        ``export`` before any input is read, so that an unsupported request costs a line, not a
        load and an audit. Nothing by default.

        Why on the options and not on the family: what is refused is a combination of options
        and a command (a sample given to ``fix``), which the options model already describes
        (which command takes which option)."""
        return None

    def public(self, command: str | None = None) -> dict[str, Any]:
        """The options as a report shows them: set values only, JSON-friendly.

        With ``command``, only the options that command takes: an audit report listing
        ``seed=0, resplit=True`` (options of ``fix`` alone) would claim they shaped the audit.
        """
        fields = type(self).model_fields

        def chosen(k: str, v: Any) -> bool:
            # empty is unset, unless the default is not (``--normalise none``: a choice)
            if v is None:
                return False
            if v == {} or v == []:
                return k in fields and fields[k].default not in (None, {}, [])
            return True

        return {
            k: (str(v) if not isinstance(v, str | int | float | bool | list | dict) else v)
            for k, v in self.model_dump().items()
            if chosen(k, v)
            if command is None or k not in fields or command in field_commands(type(self), k)
        }


def option(
    default: Any = None,
    *,
    help: str,
    commands: Iterable[str] = COMMANDS,
    flag: str | None = None,
) -> Any:
    """A family option: a pydantic ``Field`` with the help, commands and flag the CLI reads."""
    cmds = tuple(commands)
    unknown = set(cmds) - set(COMMANDS)
    if unknown:
        raise ValueError(f"unknown commands {sorted(unknown)}")
    extra: dict[str, Any] = {"commands": list(cmds)}
    if flag:
        extra["flag"] = flag
    return Field(default=default, description=help, json_schema_extra=extra)


def field_commands(model: type[FamilyOptions], name: str) -> tuple[str, ...]:
    extra = model.model_fields[name].json_schema_extra
    if not isinstance(extra, dict):
        return COMMANDS
    # option() stores the commands as a list of names; the JSON-value type cannot say so
    return tuple(cast("Iterable[str]", extra.get("commands", COMMANDS)))


def field_flag(model: type[FamilyOptions], name: str) -> str:
    extra = model.model_fields[name].json_schema_extra
    flag = extra.get("flag") if isinstance(extra, dict) else None
    return str(flag) if flag else "--" + name.replace("_", "-")


def describe(model: type[FamilyOptions], command: str | None = None) -> str:
    """``--edit-set, --task`` — the flags a family has (for one command), for error messages."""
    names = [
        field_flag(model, n)
        for n in model.model_fields
        if command is None or command in field_commands(model, n)
    ]
    return ", ".join(names) if names else "(none)"


def parse_options(
    model: type[FamilyOptions],
    family: str,
    given: FamilyOptions | Mapping[str, Any] | None = None,
    **raw: Any,
) -> FamilyOptions:
    """Validate options for ``family``: a model instance, a mapping, keyword arguments, or a mix.

    Unknown names and bad values raise :class:`~curate.core.errors.UsageError` (exit 2) naming the
    option and listing the family's options: a typo must not be silently ignored.
    """
    if isinstance(given, FamilyOptions) and not raw:
        if not isinstance(given, model):
            raise ArgumentError(
                f"{family}: options of type {type(given).__name__} given, expected {model.__name__}"
            )
        return given
    if given is not None and not isinstance(given, FamilyOptions | Mapping):
        raise ArgumentError(
            f"options: expected a {model.__name__} or a mapping, got {type(given).__name__}"
        )
    values: dict[str, Any] = {}
    if isinstance(given, FamilyOptions):
        values.update(given.model_dump(exclude_unset=True))
    elif given is not None:
        values.update(given)
    values.update({k: v for k, v in raw.items() if v is not None})
    unknown = sorted(set(values) - set(model.model_fields), key=str)
    if unknown:
        # Python's words for an unexpected keyword, with the options there are (and the
        # closest one: a typo is the usual cause).
        first = str(unknown[0])
        close = difflib.get_close_matches(first, list(model.model_fields), n=1)
        names = ", ".join(map(str, unknown))
        have = ", ".join(model.model_fields) or "(none)"
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ArgumentError(f"{names}: {family} has no such option{hint}; its options: {have}")
    for name, value in values.items():
        _check_type(model, str(name), value)
    try:
        return model.model_validate(values)
    except ValidationError as e:
        err = e.errors(include_url=False)[0]
        loc = [str(x) for x in err["loc"]]
        where = arg(field_flag(model, loc[0])) if loc and loc[0] in model.model_fields else ""
        where = ".".join([where, *loc[1:]]) if where else ".".join(loc) or "options"
        msg = str(err["msg"]).removeprefix("Value error, ")
        if str(err["type"]).endswith("_type"):  # a wrong type: a TypeError, with what was given
            raise ArgumentError(f"{where}: {msg}, got {type(err['input']).__name__}") from None
        raise UsageError(f"{where}: {msg}") from None


def _scalar_ok(member: Any, value: Any) -> bool | None:
    """Does ``value`` have the type of ``member`` (one member of a field's annotation), for the
    scalar types options have; None: a type left to the model (a mapping, a custom class)."""
    from curate.core.arguments import accepts

    if typing.get_origin(member) is Literal:  # its type here, which value the model checks
        return any(type(value) is type(a) for a in typing.get_args(member))
    if member is Path:  # a path is given as a string too (``mapping="m.json"``)
        return isinstance(value, str | os.PathLike)
    if member in (bool, int, float, str):
        return accepts(member, value)
    return None


def _check_type(model: type[FamilyOptions], name: str, value: Any) -> None:
    """Refuse an option value of the wrong type before the model would convert it.

    Why not the model's own (lax) checks: pydantic reads ``tasks=True`` as 1, ``seed="3"`` as
    3, ``metadata_only="yes"`` as True and ``workers=2.0`` as 2 — a typo or a wrong variable
    passed silently — and ``seed="a"`` failed as a value error, not a type error. The CLI and
    a config file give typed values (the CLI converts its flags, TOML has types), so only a
    wrong type is refused here: :class:`~curate.core.errors.ArgumentError` naming the option.
    """
    from curate.core.arguments import describe

    if value is None or name not in model.model_fields:
        return
    annotation = model.model_fields[name].annotation
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(annotation) if m is not type(None)]
    else:
        members = [annotation]
    verdicts = [_scalar_ok(m, value) for m in members]
    if any(v is None for v in verdicts) or any(verdicts):
        return
    expected = describe(annotation).removesuffix(" or None")
    raise ArgumentError(
        f"{arg(field_flag(model, name))}: expected {expected}, got {type(value).__name__}"
    )


class LabelIssueOptions(FamilyOptions):
    """The options of label issues by confident learning, for every family with labels
    (:mod:`curate.audits.shared.label_issues`): where the predicted probabilities come from,
    and what the unsafe fix does. A family with labels derives its options from this class;
    one without a built-in model says so in :meth:`built_in_model`."""

    pred_probs: Path | None = option(
        None,
        help="Out-of-sample predicted probabilities of the labels (your model's, from "
        "cross-validation): parquet or CSV with an 'id' column and one column per class (or one "
        "list column), .npz with pred_probs [ids, classes], or .npy in the records' order. "
        "Label issues are then exactly cleanlab's find_label_issues on them.",
        commands=("audit", "fix", "export"),
    )
    #: Set on a fix's re-audit (:meth:`of_fixed_data`): ``pred_probs`` were made for the input,
    #: and the fixed data may lack records a fix dropped.
    _of_fixed_data: bool = PrivateAttr(default=False)

    pred_probs_classes: CommaList = option(
        [],
        help="The classes of --pred-probs' columns in order, comma-separated, where the file "
        "does not name them (a list column, .npy): default, the label set sorted.",
        commands=("audit", "fix", "export"),
    )
    label_model: Literal["auto", "none"] = option(
        "auto",
        help="Without --pred-probs: 'auto' scores the labels with the family's built-in "
        "cross-validated model where it has one (glycan, table); 'none' runs no label-issue "
        "check.",
        commands=("audit", "fix", "export"),
    )
    label_folds: int = option(
        5,
        help="Folds of the built-in model's cross-validation (grouped, seeded by --seed).",
        commands=("audit", "fix", "export"),
    )
    label_fix: Literal["relabel", "drop"] = option(
        "relabel",
        help="What the unsafe fix of a label issue does: set the predicted label (relabel) "
        "or leave the record out (drop); either is in the changelog with its score.",
        commands=("fix", "export"),
    )

    @field_validator("label_folds")
    @classmethod
    def _two_folds(cls, v: int) -> int:
        if v < 2:
            raise ValueError(f"must be at least 2 (got {v}): one fold scores nothing out of sample")
        return v

    def of_fixed_data(self) -> LabelIssueOptions:
        """These options for re-auditing fixed data: ``--pred-probs``' rows of records the fix
        dropped are passed over, where an id the data lacks otherwise means the probabilities
        of another table (a fix that dropped one row failed its re-audit with "id not in the
        dataset": found by a new-user review). Every record left must still have its row."""
        out = self.model_copy()
        out._of_fixed_data = True
        return out

    @property
    def probs_of_a_superset(self) -> bool:
        """Are ``--pred-probs``' ids allowed beyond the data's (see :meth:`of_fixed_data`)?"""
        return self._of_fixed_data

    def input_files(self) -> list[Path]:
        """``--pred-probs`` is read: the output gate protects it."""
        return [self.pred_probs] if self.pred_probs is not None else []

    def label_issue_source(self, built_in: bool) -> str | None:
        """Where this run's probabilities come from: ``"file"`` (``--pred-probs``),
        ``"model"`` (the family's built-in model, ``built_in`` says whether it has one) or
        None (no label-issue check: ``--label-model none``, or no model and no file)."""
        if self.pred_probs is not None:
            return "file"
        if self.label_model == "auto" and built_in:
            return "model"
        return None
