"""The core names no family: categories are open strings and family figures reach every report
through the one headlines channel (issue 31, item 5)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from curate import api
from curate.core.findings import CORE_CATEGORIES, FINDING_SCHEMA, Headline, Report, category
from curate.core.rules import RuleSet
from curate.families import get_family
from curate.reports.render import headlines, render_markdown, render_text

SAMPLES = Path(__file__).resolve().parents[1] / "curate" / "data" / "samples"


def _toy_rule(data, ctx) -> pl.DataFrame:  # pragma: no cover - never run
    """A rule of a plug-in family."""
    raise AssertionError


def test_a_plugin_family_adds_its_own_category() -> None:
    rs = RuleSet("toy")
    rs.rule("TY101", "noisy-label", category="label-noise", severity="warning")(_toy_rule)
    assert rs["TY101"].category == "label-noise"
    assert "label-noise" not in CORE_CATEGORIES
    # selectors match the new category like a core one
    assert [r.code for r in rs.select(select=["label-noise"])] == ["TY101"]
    assert rs.select(ignore=["label-noise"]) == []
    assert rs["TY101"].to_json()["category"] == "label-noise"


@pytest.mark.parametrize("bad", ["", "Label", "label noise", "1label", "label-", "lé"])
def test_a_category_must_be_a_lowercase_identifier(bad: str) -> None:
    with pytest.raises(ValueError, match="category"):
        category(bad)
    rs = RuleSet("toy")
    with pytest.raises(ValueError, match="category"):
        rs.rule("TY102", "x", category=bad, severity="info")(_toy_rule)


def test_contamination_is_knowledge_editings_category_not_the_cores() -> None:
    assert "contamination" not in CORE_CATEGORIES
    cats = {r.category for r in get_family("mquake").rules}
    assert "contamination" in cats
    shipped = {
        r.category for f in ("mquake", "glycan", "deepfake", "icrl") for r in get_family(f).rules
    }
    assert shipped - {"contamination"} <= CORE_CATEGORIES


def _empty_report(**kw) -> Report:
    return Report("toy", [], pl.DataFrame(schema=FINDING_SCHEMA), [], **kw)


def test_headlines_of_any_family_render_in_text_and_markdown() -> None:
    r = _empty_report(
        headlines=[Headline("split {}: 3 | 4 rows", ("a|b",), label="split")],
        stats={"headline": ["tasks 7"]},
    )
    assert [h.render() for h in headlines(r)] == ["split a|b: 3 | 4 rows", "tasks 7"]
    text = render_text(r)
    assert "split a|b: 3 | 4 rows\ntasks 7\n" in text
    md = render_markdown(r)
    # the sentence is escaped for a table-safe line, the value is a code span
    assert "- split `a|b`: 3 \\| 4 rows\n- tasks 7\n" in md


def test_knowledge_editing_contamination_is_a_headline() -> None:
    report = api.audit("mquake", SAMPLES / "mquake_sample.json", edit_set="all")
    c = report.stats["contamination"]
    (h,) = [h for h in headlines(report) if h.label == "edit set"]
    assert h.values == ("all",)
    assert h.render() == (
        f"edit set all: {c['edited_contaminated']} of {c['edited_cases']} edited and "
        f"{c['unedited_contaminated']} of {c['unedited_cases']} unedited cases contaminated"
    )
    assert h.render() in render_text(report)
    assert f"- {h.render('`{}`')}\n" in render_markdown(report)
    # derived from stats, so the JSON report does not carry it twice
    assert "headline" not in report.stats
