"""Values from the data in the text and Markdown reports: shown, never acted on (a terminal's
control sequence, a line break, HTML or a backtick that ends a code span)."""

from __future__ import annotations

import re
from pathlib import Path

import curate
from curate.reports.render import render_markdown, render_text

#: Three: the reports show three examples of a rule.
IDS = ["a\nb", "</script><img src=x onerror=alert(1)>", "a`b"]


def _report(tmp_path: Path, ids: list[str] = IDS):
    rows = "".join(f'"{i}",text {k},lab{k}\n"{i}",other {k},lab{k}\n' for k, i in enumerate(ids))
    path = tmp_path / "rows.csv"
    path.write_text("id,text,label\n" + rows, encoding="utf-8")
    return curate.audit("table", path, id="id", text="text", label_model="none")


def test_text_report_shows_control_characters_as_escapes(tmp_path: Path) -> None:
    text = render_text(_report(tmp_path, ["x\x1b[2Jy", "a\nb"]))
    assert "\x1b" not in text and "x\\x1b[2Jy" in text
    examples = [line for line in text.splitlines() if line.startswith("  TB401")]
    assert any("a\\nb" in line for line in examples), examples


def test_markdown_report_holds_no_html_and_whole_code_spans(tmp_path: Path) -> None:
    md = render_markdown(_report(tmp_path))
    # raw only inside a code span (shown as written there), escaped everywhere else
    outside = re.sub(r"(`+)(?:(?!\1).)+?\1", "", md)
    assert "<img" not in outside and "&lt;img src=x onerror=alert(1)&gt;" in md
    assert "``a`b``" in md
    examples = [line for line in md.splitlines() if line.startswith("- **TB401**")]
    assert len(examples) == len(IDS), examples  # one line each, the newline id too


def test_paths_and_headlines_are_shown_as_text(tmp_path: Path) -> None:
    """An input's path (and a headline's values) come from the user's data too."""
    odd = tmp_path / "p\x1b[2J`<img src=x onerror=alert(1)>`|q.csv"
    odd.write_text('id,text,label\n"a",x,l\n"a",y,m\n', encoding="utf-8")
    report = curate.audit("table", odd, id="id", text="text", label_model="none")
    text = render_text(report)
    assert "\x1b" not in text and "p\\x1b[2J`<img" in text.splitlines()[0]
    md = render_markdown(report)
    outside = re.sub(r"(`+)(?:(?!\1).)+?\1", "", md)
    assert "<img" not in outside and "\x1b" not in md
    shown = str(odd).replace("\x1b", "\\x1b")
    assert f"``{shown}``" in md  # one span, fenced past its backtick
    assert "\\|" not in md.split("### Examples")[-1]  # a list item's span shows `|` as written


def test_a_long_id_is_quoted_cut_in_a_duplicate_id_message(tmp_path: Path) -> None:
    long_id = "x" * 5_000
    report = _report(tmp_path, [long_id])
    (message,) = report.findings.filter(report.findings["rule"] == "TB401")["message"].to_list()
    assert len(message) < 400 and "…" in message, message
