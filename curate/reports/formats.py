"""The one registry of report formats: adding a format is one registration here.

Why a registry: the formats used to be listed in five places (the data commands' ``--format``
enum and the set of CI formats, ``curate check``'s ``--format`` and ``--report`` keys, the
configuration's ``output.format`` and ``output.reports`` types, and which outputs are documents a
machine reads); a new format touched three or four files and one forgotten list silently refused
it. Now the CLI (choices and help text), :mod:`curate.check.config` and :mod:`curate.cli.ci` read
this table.

Each :class:`ReportFormat` says how to render an audit :class:`~curate.core.findings.Report`
(``audit``; ``None`` renders through the verdict, :func:`curate.reports.verdict.single`) and a
:class:`~curate.reports.verdict.CheckResult` (``check``), whether its output is a document a
machine parses (``machine``: then nothing is appended to it and the human footer goes to stderr),
how ``--durations`` is appended (``durations``), and the usual file suffix. The generator mark a
file report carries is :func:`curate.core.outputs.generator_line` (keyed by the format's name;
JSON, SARIF, HTML and JUnit carry a native mark instead, :data:`curate.core.outputs.CURATE_MARKS`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curate.core.findings import Report
    from curate.reports.verdict import CheckResult

#: Renders an audit report: ``(report, fail_on=, data=, color=, width=)`` → text.
AuditRenderer = Callable[..., str]


@dataclass(frozen=True)
class ReportFormat:
    """One output format of ``curate audit``/``validate`` (``--format``) and ``curate check``
    (``--format``, ``--report FORMAT=PATH``, ``output.format``, ``output.reports``)."""

    name: str
    #: How ``--format``'s help names it (``junit (JUnit XML)``).
    help: str
    #: Renders a check result (every format does: ``curate check``).
    check: Callable[[CheckResult], str]
    #: Renders an audit report directly; ``None``: through the verdict on the report.
    audit: AuditRenderer | None
    suffix: str
    #: Listed under "for CI" in ``--format``'s help.
    ci: bool = False
    #: A document a machine parses: ``--durations`` appends nothing to it, and a check's human
    #: footer goes to stderr when it is written to stdout.
    machine: bool = False
    #: How ``--durations`` is appended: ``text``, ``markdown``, ``json`` (a top-level key), or
    #: ``None`` (never: the document must stay valid; JUnit carries each rule's time itself).
    durations: str | None = None

    def render_audit(
        self,
        report: Report,
        *,
        fail_on: str = "error",
        data: Any = None,
        color: bool = False,
        width: int | None = None,
    ) -> str:
        """``report`` in this format (colour and width matter to text only)."""
        if self.audit is not None:
            return self.audit(report, fail_on=fail_on, data=data, color=color, width=width)
        from curate.reports.verdict import single

        return self.check(single(report, fail_on))


_REGISTRY: dict[str, ReportFormat] = {}


def register(fmt: ReportFormat) -> ReportFormat:
    """Add ``fmt`` (its name must be new): the CLI and the configuration take it from then on."""
    if fmt.name in _REGISTRY:
        raise ValueError(f"report format {fmt.name!r} registered twice")
    _REGISTRY[fmt.name] = fmt
    return fmt


def get(name: str) -> ReportFormat:
    return _REGISTRY[name]


def names() -> tuple[str, ...]:
    """Every format, in registration order (the order of ``--format``'s choices)."""
    return tuple(_REGISTRY)


def machine_formats() -> frozenset[str]:
    return frozenset(n for n, f in _REGISTRY.items() if f.machine)


def format_help() -> str:
    """The data commands' ``--format`` help: the views of a report, then the CI formats."""
    views = [f.help for f in _REGISTRY.values() if not f.ci]
    ci = [f.help for f in _REGISTRY.values() if f.ci]
    return f"Report format: {', '.join(views)}, or for CI {', '.join(ci)}."


# --------------------------------------------------------------------------- the shipped formats


def _text(report: Report, *, color: bool, width: int | None, **_: Any) -> str:
    from curate.reports.render import render_text

    return render_text(report, color=color, width=width)


def _json(report: Report, **_: Any) -> str:
    from curate.reports.render import render_json

    return render_json(report)


def _markdown(report: Report, **_: Any) -> str:
    from curate.reports.render import render_markdown

    return render_markdown(report)


def _html(report: Report, *, fail_on: str, data: Any, **_: Any) -> str:
    """The page of one audit: the family's plots and the findings' splits come from ``data``."""
    from curate.reports.html import render_audit

    return render_audit(report, data=data, fail_on=fail_on)


def _check(name: str) -> Callable[[CheckResult], str]:
    def render(result: CheckResult) -> str:
        from curate.reports import ci

        return getattr(ci, f"render_{name}")(result)

    render.__name__ = f"render_{name}"
    return render


for _f in (
    ReportFormat("text", "text", _check("text"), _text, ".txt", durations="text"),
    ReportFormat("json", "json", _check("json"), _json, ".json", machine=True, durations="json"),
    ReportFormat(
        "markdown", "markdown", _check("markdown"), _markdown, ".md", durations="markdown"
    ),
    ReportFormat("html", "html", _check("html"), _html, ".html", machine=True),
    ReportFormat(
        "junit", "junit (JUnit XML)", _check("junit"), None, ".xml", ci=True, machine=True
    ),
    ReportFormat(
        "github",
        "github (Actions annotations; also appends a job summary to $GITHUB_STEP_SUMMARY when set)",
        _check("github"),
        None,
        ".txt",
        ci=True,
        durations="text",
    ),
    ReportFormat(
        "sarif", "sarif (SARIF 2.1.0)", _check("sarif"), None, ".sarif", ci=True, machine=True
    ),
):
    register(_f)
