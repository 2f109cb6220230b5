"""Rules: small documented passes with stable codes, in the manner of ruff.

A rule is a function ``rule(data, ctx)`` over a family's loaded data that returns findings (see
:mod:`curate.core.findings`). Its docstring is its user documentation: ``curate rules`` prints it,
so
write it for the person who got the finding, saying what is wrong and why it matters.

Shared derived tables: what several rules compute from the same data (the edit set resolved
against the cases, the contamination join, canonical case keys) is registered once with
:meth:`RuleSet.table` and *declared* by each rule that reads it (``needs=(...)``). The engine
builds each declared table once per audit, on first use, and hands it over through
:meth:`AuditContext.table`; a rule asking for a table it did not declare is a bug caught at once.
Why declared, not passed through option keys: the dependencies are visible (``curate rules``
could show them, a scheduler could run independent rules in parallel), nothing is computed
twice, and no rule depends on another having run first.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import polars as pl

from curate.core.errors import UsageError, arg, fix_label
from curate.core.findings import RULE_OUTPUT_SCHEMA, Severity
from curate.core.findings import category as valid_category


class FixAvailability(StrEnum):
    """Whether a rule's findings carry a proposed edit (ruff's model).

    ``always``: every finding has one; ``sometimes``: only where the data decides the answer
    (a majority parent, a unique representative); ``never``: a person has to decide.
    """

    ALWAYS = "always"
    SOMETIMES = "sometimes"
    NEVER = "never"


class FixSafety(StrEnum):
    """``safe``: the fixed data means the same to a correct reader (whitespace, placeholders,
    exact repeats, added evaluation metadata); ``unsafe``: the fix chooses between meanings (a
    label by majority, a split membership, one of two conflicting values), so ``curate fix``
    applies it only with ``--unsafe-fixes``."""

    SAFE = "safe"
    UNSAFE = "unsafe"


RuleFunc = Callable[..., pl.DataFrame]
TableFunc = Callable[["AuditContext"], Any]
PrepareFunc = Callable[["AuditContext"], None]


@dataclass
class AuditContext:
    """What a rule sees besides the data: the validated options and the shared tables.

    ``tables`` holds the builders; each table is built on first request and kept for the rest
    of the audit. :meth:`for_rule` gives a rule a view that only serves what it declared.
    """

    data: Any
    options: Any
    builders: dict[str, TableFunc] = field(default_factory=dict)
    _built: dict[str, Any] = field(default_factory=dict, repr=False)
    #: Seconds spent building each shared table (``--durations`` reports them as stages).
    seconds: dict[str, float] = field(default_factory=dict, repr=False)
    _allowed: frozenset[str] | None = None
    _root: AuditContext | None = field(default=None, repr=False)

    def table(self, name: str) -> Any:
        if self._allowed is not None and name not in self._allowed:
            raise RuntimeError(f"table {name!r} used but not declared in the rule's needs")
        root = self._root or self
        if name not in root._built:
            if name not in root.builders:
                raise KeyError(f"no shared table {name!r}")
            # its own time: a table its builder asks for is a stage of its own, already
            # counted (charged twice, a rule's time came out negative: TB301, -0.005 s)
            t0, inner = time.perf_counter(), root.table_seconds()
            root._built[name] = root.builders[name](root)
            inner = root.table_seconds() - inner
            root.seconds[name] = time.perf_counter() - t0 - inner
        return root._built[name]

    def table_seconds(self) -> float:
        """Seconds spent building shared tables so far (a rule's own time excludes them)."""
        return sum((self._root or self).seconds.values())

    def built(self, name: str) -> Any | None:
        """A table if some rule already built it (for summaries after the audit), else None."""
        return (self._root or self)._built.get(name)

    def for_rule(self, rule: Rule) -> AuditContext:
        return AuditContext(
            self.data, self.options, self.builders, _allowed=frozenset(rule.needs), _root=self
        )


@dataclass(frozen=True)
class Rule:
    """A check with a stable code (``KE101``), a family, a category and a default severity."""

    code: str
    name: str
    family: str
    category: str  # open: see curate.core.findings.CORE_CATEGORIES
    severity: Severity
    func: RuleFunc
    #: Does a finding carry a proposed edit (``fix`` column), and is applying it safe?
    fix: FixAvailability = FixAvailability.NEVER
    safety: FixSafety = FixSafety.SAFE
    #: Shared tables (registered with :meth:`RuleSet.table`) this rule reads.
    needs: tuple[str, ...] = ()
    #: A finding of this rule says "this record's own value is malformed" (schema, parse): the
    #: record is unpublishable. ``fix`` and ``export`` never write a record such a rule reports:
    #: they leave it out, count it and log it (``--strict`` refuses instead); see
    #: :meth:`curate.families.base.Family.invalid_records`. Rules about how records relate to
    #: each other (conflicts, leakage, duplicates, contamination) are not invalid rules: their
    #: records are each well-formed, and fixing or documenting the relation is the job of the
    #: fixes and the card. Not shown by ``curate rules`` (its output is kept as it was).
    invalid: bool = False
    #: The fix applies to the audit of the input only, never to a re-audit's findings: a rule
    #: whose findings come from a model fitted on the data (label issues) flags anew on the
    #: data it relabelled, and chasing those would relabel by the model's drift, not by the
    #: evidence the user reviewed. The re-audit still reports them.
    fix_once: bool = False
    #: A safe rule some of whose findings' fixes are unsafe, each saying so in its ``fix``
    #: (``"unsafe": true``): a repeat whose other fields differ, an edited case's drop. Shown,
    #: so that ``curate rules`` does not call such a fix safe and ``fix`` then hold it back.
    some_unsafe: bool = False

    @property
    def fixable(self) -> bool:
        return self.fix is not FixAvailability.NEVER

    @property
    def fix_label(self) -> str:
        """``fix: always (safe)`` as ``curate rules`` shows it, or ``""``."""
        if not self.fixable:
            return ""
        return fix_label(self.fix.value, self.safety.value, self.some_unsafe)

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.func.__doc__ or "")

    @property
    def summary(self) -> str:
        """The first paragraph of the doc, cut to its first sentence when long."""
        first = self.doc.split("\n\n", 1)[0].replace("\n", " ")
        # a sentence ends at ". " but not inside "e.g. " or "i.e. "
        parts = re.split(r"(?<!\be\.g)(?<!\bi\.e)\. ", first, maxsplit=1)
        if len(first) > 120 and len(parts) > 1:
            first = parts[0] + "."
        return first

    def run(self, *args: Any, **kwargs: Any) -> pl.DataFrame:
        out = self.func(*args, **kwargs)
        return out.select(
            [
                pl.col(c).cast(t) if c in out.columns else pl.lit(None, t).alias(c)
                for c, t in RULE_OUTPUT_SCHEMA.items()
            ]
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "family": self.family,
            "category": self.category,
            "severity": self.severity.value,
            "fixable": self.fixable,
            "fix": self.fix.value,
            "fix_safety": self.safety.value if self.fixable else None,
            "some_unsafe": self.some_unsafe,
            "needs": list(self.needs),
            "summary": self.summary,
            "doc": self.doc,
        }


class RuleSet:
    """The rules of one family, registered with the :meth:`rule` decorator."""

    def __init__(self, family: str) -> None:
        self.family = family
        self._rules: dict[str, Rule] = {}
        self.tables: dict[str, TableFunc] = {}
        #: Checks run before any rule of an audit (:meth:`prepare`), in registration order.
        self.preparations: list[PrepareFunc] = []

    def table(self, name: str) -> Callable[[TableFunc], TableFunc]:
        """Register a shared derived table ``name``: ``builder(ctx) -> value``."""

        def register(func: TableFunc) -> TableFunc:
            if name in self.tables:
                raise ValueError(f"shared table {name} registered twice")
            self.tables[name] = func
            return func

        return register

    def prepare(self, func: PrepareFunc) -> PrepareFunc:
        """Register ``func(ctx)`` to run before any rule of every audit, whichever rules are
        selected: a check of the options against the data that fails fast (exit 2 now, not
        after minutes of other rules), or a shared table built up front for the same reason.

        Why with the rules and not a hook of the family: what it checks is an input of the
        rules (the edit set they read, the mapping file a rule applies), so it is declared
        where they are, and a family says nothing about it. Its time is the audit's
        ``prepare`` stage (``--durations``)."""
        self.preparations.append(func)
        return func

    def run_prepare(self, ctx: AuditContext) -> None:
        """Run every :meth:`prepare` check on the audit's context (the engine calls it)."""
        for func in self.preparations:
            func(ctx)

    def rule(
        self,
        code: str,
        name: str,
        *,
        category: str,
        severity: str,
        fix: str = "never",
        unsafe: bool = False,
        needs: Iterable[str] = (),
        invalid: bool = False,
        fix_once: bool = False,
        some_unsafe: bool = False,
    ) -> Callable[[RuleFunc], RuleFunc]:
        """Register ``func`` as rule ``code``. ``fix`` is ``always``/``sometimes``/``never``
        (does a finding carry an edit in its ``fix`` column), ``unsafe`` marks fixes that
        choose between meanings (applied only with ``--unsafe-fixes``), ``invalid`` rules
        whose findings make a record unpublishable (:attr:`Rule.invalid`), ``fix_once``
        fixes applied to the input's audit only (:attr:`Rule.fix_once`) and ``some_unsafe``
        safe rules some of whose findings' fixes are unsafe (:attr:`Rule.some_unsafe`)."""

        def register(func: RuleFunc) -> RuleFunc:
            if code in self._rules:
                raise ValueError(f"rule code {code} registered twice")
            if not func.__doc__:
                raise ValueError(f"rule {code} needs a docstring: it is the rule's documentation")
            self._rules[code] = Rule(
                code,
                name,
                self.family,
                valid_category(category),
                Severity(severity),
                func,
                FixAvailability(fix),
                FixSafety.UNSAFE if unsafe else FixSafety.SAFE,
                tuple(needs),
                invalid,
                fix_once,
                some_unsafe,
            )
            return func

        return register

    def __iter__(self) -> Iterator[Rule]:
        return iter(sorted(self._rules.values(), key=lambda r: r.code))

    @property
    def invalid(self) -> tuple[str, ...]:
        """The codes of the rules flagged ``invalid=True``, in code order: the rules whose
        findings make a record unpublishable (:attr:`Rule.invalid`)."""
        return tuple(r.code for r in self if r.invalid)

    def __getitem__(self, code: str) -> Rule:
        return self._rules[code]

    def __contains__(self, code: str) -> bool:
        return code in self._rules

    def select(
        self, select: Iterable[str] | None = None, ignore: Iterable[str] | None = None
    ) -> list[Rule]:
        """Rules chosen by ``--select``/``--ignore``.

        A selector is a code (``KE101``), a code prefix (``KE1``, ``KE``), a rule name
        (``conflicting-edits``) or a category (``contamination``), as in ruff: ignore wins.
        """
        sel = _split(select)
        ign = _split(ignore)
        for flag, given, parsed in (("--select", select, sel), ("--ignore", ignore, ign)):
            # ``--select ""`` (an empty shell variable) must not mean "every rule"
            if given is not None and not isinstance(given, str) and list(given) and not parsed:
                raise UsageError(f"{arg(flag)} names no rule (an empty value)")
            if isinstance(given, str) and not parsed:
                raise UsageError(f"{arg(flag)} names no rule (an empty value)")
        for s in sel + ign:
            if not any(_matches(r, s) for r in self):
                raise UsageError(
                    f"selector {s!r} matches no {self.family} rule (see `curate rules`)"
                )
        chosen = [r for r in self if not sel or any(_matches(r, s) for s in sel)]
        return [r for r in chosen if not any(_matches(r, s) for s in ign)]


def _split(items: Iterable[str] | str | None) -> list[str]:
    """Selectors from repeated and comma-separated values; one string is one value (the API's
    ``select="KE2"``), not its characters."""
    if isinstance(items, str):
        items = [items]
    out: list[str] = []
    for item in items or []:
        out.extend(p.strip() for p in item.split(",") if p.strip())
    return out


def _matches(rule: Rule, selector: str) -> bool:
    s = selector.strip()
    return (
        rule.code.upper().startswith(s.upper())
        or rule.name == s.lower()
        or rule.category == s.lower()
    )
