"""The body of a dataset card: what the data is, its splits, the audit summary and the footer
that says what curate did to produce the folder.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from curate.core.dataset import ChangeEntry
from curate.core.errors import counted
from curate.core.findings import Report
from curate.core.version import __version__
from curate.publish.metadata import PROJECT_README, CardInfo, named_from
from curate.reports.render import render_markdown


def _inputs_from(report: Report | None, folder: str) -> Report | None:
    """A copy of ``report`` whose inputs are named as a card in ``folder`` names them."""
    if report is None:
        return None
    shown = copy.copy(report)
    shown.inputs = [dataclasses.replace(i, path=named_from(i.path, folder)) for i in report.inputs]
    return shown


def card_body(
    card: CardInfo,
    rows: dict[str, int],
    report: Report | None,
    changelog: Sequence[ChangeEntry] | None,
    after: Report | None = None,
    contents: tuple[str, str, str] = ("Splits", "split", "rows"),
) -> str:
    if card.folder is not None:  # inputs named relative to the card, not as typed
        report = _inputs_from(report, card.folder)
        # (``after``, the re-audit of the folder itself, already names its inputs from the
        # folder, ``.`` or its files: named again, ``.`` became ``..``)
    lines = [f"# {card.pretty_name}", ""]
    if card.description:
        lines += [card.description, ""]
    if card.date_published:
        lines += [f"Published {card.date_published}.", ""]
    heading, key, count = contents
    lines += [f"## {heading}", "", f"| {key} | {count} |", "|---|---:|"]
    lines += [f"| {s} | {n} |" for s, n in rows.items()]
    lines.append("")
    if card.source_files:
        lines += ["## Source", ""] + [f"- `{p}`" for p in card.source_files] + [""]
    if after is not None and report is not None:
        b, a = report.summary(), after.summary()
        lines += [
            "## Audit of the published data",
            "",
            "This is the re-audit of the fixed data in this folder (`audit.after.json`). The "
            "audit of the input before fixing is `audit.before.json`: "
            f"{counted(b['findings'], 'finding')} in {b['records_with_findings']} of "
            f"{counted(b['records'], 'record')} then, {a['findings']} in "
            f"{a['records_with_findings']} of {counted(a['records'], 'record')} now.",
            "",
            render_markdown(after, heading_level=2),
        ]
    elif report is not None:
        lines.append(render_markdown(report, heading_level=2))
    if report is not None and report.stats.get("label_issues"):
        lines += label_issue_section(report.stats["label_issues"])
    if changelog is not None:
        lines += ["## Changelog summary", ""]
        if not changelog:
            lines.append("No changes.")
        else:
            per_rule: dict[tuple[str, str], int] = {}
            for c in changelog:
                rule_field = (c.rule, c.field or "<record>")
                per_rule[rule_field] = per_rule.get(rule_field, 0) + 1
            lines += ["| rule | field | changes |", "|---|---|---:|"]
            lines += [f"| {r} | `{f}` | {n} |" for (r, f), n in sorted(per_rule.items())]
            lines += [
                "",
                "Every change is listed in `changelog.jsonl` (record, field, old, new, "
                "rule, reason, and the finding that asked for it).",
            ]
        lines.append("")
    lines += card.extra_sections
    if card.citation:
        lines += citation_section(card.citation)
    lines.append(footer(card.steps))
    return "\n".join(lines) + "\n"


_BIBTEX_ENTRY = re.compile(r"^\s*@[A-Za-z]+\s*[{(]", re.MULTILINE)


def citation_section(citation: str) -> list[str]:
    """The card's Citation section, the text exactly as given: BibTeX (an ``@type{`` entry
    anywhere, after ``%`` comments too) in a ``bibtex`` block (the Hub shows it with a copy
    button), any other text of several lines in a plain block (a line starting ``#`` must not
    become a heading), one line as a paragraph. The fence is longer than any run of backticks
    in the text, so nothing in it can close the block early."""
    runs = [len(m) for m in re.findall(r"`+", citation)]
    fence = "`" * max(3, max(runs, default=0) + 1)
    if _BIBTEX_ENTRY.search(citation):
        return ["## Citation", "", f"{fence}bibtex", citation, fence, ""]
    if "\n" in citation or citation.startswith(("#", ">", "-", "*", "=")):
        return ["## Citation", "", f"{fence}text", citation, fence, ""]
    return ["## Citation", "", citation, ""]


def label_issue_section(stats: dict[str, Any]) -> list[str]:
    """What confident learning said about the labels of the input (before any fix): per label,
    how many were flagged, the label health score and each class's estimated noise. A reader
    of a card should know how clean the labels are believed to be, not only which rules ran."""
    lines = ["## Label issues (confident learning)", ""]
    for label, s in stats.items():
        if "skipped" in s:
            lines += [f"`{label}`: not scored ({s['skipped']}).", ""]
            continue
        lines += [
            f"`{label}` ({s['source']}): {s['flagged']:,} of {s['records']:,} labels flagged "
            f"as likely wrong (cleanlab's find_label_issues); label health score "
            f"{s['label_health']:.3f} (1 - the estimated share of wrong labels).",
            "",
            "| class | rows | estimated noise |",
            "|---|---:|---:|",
        ]
        lines += [f"| {c['class']} | {c['rows']:,} | {c['noise']:.1%} |" for c in s["classes"][:30]]
        lines.append("")
    return lines


def footer(steps: Sequence[str]) -> str:
    """The card's last line: curate's version and only the steps that happened."""
    done = list(dict.fromkeys(steps)) or ["exported"]
    said = done[0] if len(done) == 1 else ", ".join(done[:-1]) + " and " + done[-1]
    return (
        f"Produced by curate {__version__}: {said}. "
        f"About curate: the {PROJECT_README} (no public URL yet)."
    )
