"""Rules: small documented passes with stable codes, in the manner of ruff.

A rule is a function over a family's loaded data that returns findings (see
:mod:`curate.findings`). Its docstring is its user documentation: ``curate rules`` prints it, so
write it for the person who got the finding, saying what is wrong and why it matters.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import polars as pl

from curate.errors import UsageError
from curate.findings import RULE_OUTPUT_SCHEMA, Category, Severity

RuleFunc = Callable[..., pl.DataFrame]


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
            "summary": self.summary,
            "doc": self.doc,
        }


class RuleSet:
    """The rules of one family, registered with the :meth:`rule` decorator."""

    def __init__(self, family: str) -> None:
        self.family = family
        self._rules: dict[str, Rule] = {}

    def rule(
        self,
        code: str,
        name: str,
        *,
        category: str,
        severity: str,
        fixable: bool = False,
    ) -> Callable[[RuleFunc], RuleFunc]:
        def register(func: RuleFunc) -> RuleFunc:
            if code in self._rules:
                raise ValueError(f"rule code {code} registered twice")
            if not func.__doc__:
                raise ValueError(f"rule {code} needs a docstring: it is the rule's documentation")
            self._rules[code] = Rule(
                code, name, self.family, Category(category), Severity(severity), func, fixable
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
