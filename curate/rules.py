"""Rules: small documented passes with stable codes, in the manner of ruff.

A rule is a function ``rule(data, ctx)`` over a family's loaded data that returns findings (see
:mod:`curate.findings`). Its docstring is its user documentation: ``curate rules`` prints it, so
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from curate.errors import UsageError
from curate.findings import RULE_OUTPUT_SCHEMA, Category, Severity

RuleFunc = Callable[..., pl.DataFrame]
TableFunc = Callable[["AuditContext"], Any]


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
    _allowed: frozenset[str] | None = None
    _root: AuditContext | None = field(default=None, repr=False)

    def table(self, name: str) -> Any:
        if self._allowed is not None and name not in self._allowed:
            raise RuntimeError(f"table {name!r} used but not declared in the rule's needs")
        root = self._root or self
        if name not in root._built:
            if name not in root.builders:
                raise KeyError(f"no shared table {name!r}")
            root._built[name] = root.builders[name](root)
        return root._built[name]

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
    category: Category
    severity: Severity
    func: RuleFunc
    fixable: bool = False
    #: Shared tables (registered with :meth:`RuleSet.table`) this rule reads.
    needs: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.func.__doc__ or "")

    @property
    def summary(self) -> str:
        """The first paragraph of the doc, cut to its first sentence when long."""
        first = self.doc.split("\n\n", 1)[0].replace("\n", " ")
        if len(first) > 120 and ". " in first:
            first = first.split(". ", 1)[0] + "."
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
            "category": self.category.value,
            "severity": self.severity.value,
            "fixable": self.fixable,
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

    def table(self, name: str) -> Callable[[TableFunc], TableFunc]:
        """Register a shared derived table ``name``: ``builder(ctx) -> value``."""

        def register(func: TableFunc) -> TableFunc:
            if name in self.tables:
                raise ValueError(f"shared table {name} registered twice")
            self.tables[name] = func
            return func

        return register

    def rule(
        self,
        code: str,
        name: str,
        *,
        category: str,
        severity: str,
        fixable: bool = False,
        needs: Iterable[str] = (),
    ) -> Callable[[RuleFunc], RuleFunc]:
        def register(func: RuleFunc) -> RuleFunc:
            if code in self._rules:
                raise ValueError(f"rule code {code} registered twice")
            if not func.__doc__:
                raise ValueError(f"rule {code} needs a docstring: it is the rule's documentation")
            self._rules[code] = Rule(
                code,
                name,
                self.family,
                Category(category),
                Severity(severity),
                func,
                fixable,
                tuple(needs),
            )
            return func

        return register

    def __iter__(self):
        return iter(sorted(self._rules.values(), key=lambda r: r.code))

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
        for s in sel + ign:
            if not any(_matches(r, s) for r in self):
                raise UsageError(
                    f"selector {s!r} matches no {self.family} rule (see `curate rules`)"
                )
        chosen = [r for r in self if not sel or any(_matches(r, s) for s in sel)]
        return [r for r in chosen if not any(_matches(r, s) for s in ign)]


def _split(items: Iterable[str] | None) -> list[str]:
    out: list[str] = []
    for item in items or []:
        out.extend(p.strip() for p in item.split(",") if p.strip())
    return out


def _matches(rule: Rule, selector: str) -> bool:
    s = selector.strip()
    return (
        rule.code.upper().startswith(s.upper())
        or rule.name == s.lower()
        or rule.category.value == s.lower()
    )
