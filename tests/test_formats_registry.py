"""One registry of report formats (curate.reports.formats): the CLI's --format choices and help,
the configuration's output.format / output.reports keys and `curate check --report` all read it,
and every registered format renders an audit report and a check result (issue 31, item 1)."""

from __future__ import annotations

import re
from pathlib import Path

import pydantic
import pytest

from curate import api
from curate.check.config import FORMATS, OutputConfig
from curate.cli.ci import _report_pairs
from curate.cli.main import main
from curate.cli.terminal import Format, render
from curate.core.errors import UsageError
from curate.core.outputs import with_generator, written_by_curate
from curate.reports import formats
from curate.reports.verdict import single

SAMPLES = Path(__file__).resolve().parents[1] / "curate" / "data" / "samples"


def test_cli_config_and_check_take_the_registrys_formats() -> None:
    names = formats.names()
    assert names == ("text", "json", "markdown", "html", "junit", "github", "sarif")
    assert tuple(f.value for f in Format) == names
    assert names == FORMATS
    for n in names:
        assert OutputConfig(format=n, reports={n: f"out{formats.get(n).suffix}"}).format == n
    assert set(_report_pairs([f"{n}=r/{n}" for n in names])) == set(names)
    with pytest.raises(pydantic.ValidationError, match="'text', 'json', 'markdown'"):
        OutputConfig(format="csv")
    with pytest.raises(pydantic.ValidationError):
        OutputConfig(reports={"csv": "x.csv"})
    with pytest.raises(UsageError, match="FORMAT one of text, json, markdown, html, junit"):
        _report_pairs(["csv=x.csv"])


def _help(capsys, monkeypatch, *argv: str) -> str:
    monkeypatch.setenv("COLUMNS", "400")
    capsys.readouterr()
    assert main([*argv, "--help"]) == 0
    return " ".join(capsys.readouterr().out.split())


def test_help_texts_list_every_format(capsys, monkeypatch) -> None:
    audit = _help(capsys, monkeypatch, "audit", "mquake")
    check = _help(capsys, monkeypatch, "check")
    assert formats.format_help() in audit
    assert f"Report format: {', '.join(formats.names())} (default" in check
    assert formats.format_help() == (
        "Report format: text, json, markdown, html, or for CI junit (JUnit XML), github "
        "(Actions annotations; also appends a job summary to $GITHUB_STEP_SUMMARY when set), "
        "sarif (SARIF 2.1.0)."
    )


def test_a_format_registers_once() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        formats.register(formats.get("json"))


@pytest.mark.parametrize("name", formats.names())
def test_every_format_renders_audit_and_check_and_marks_its_file(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # JUnit's timestamp is the render's second: two renders compared here straddled one (CI)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    report = api.audit("glycan", SAMPLES / "glycan_taxonomy_sample.csv")
    spec = formats.get(name)
    text = render(report, Format(name), tmp_path / f"r{spec.suffix}")
    assert text.strip()
    assert text == spec.render_audit(report)
    if spec.audit is None:  # rendered through the verdict: the same as a one-dataset check
        assert text == spec.check(single(report))
    else:
        assert spec.check(single(report)).strip()
    out = tmp_path / f"report{spec.suffix}"
    out.write_text(with_generator(text, name, out))
    assert written_by_curate(out), f"{name}: a file curate cannot recognise as its own"


def test_durations_follow_the_registry(tmp_path: Path) -> None:
    report = api.audit("glycan", SAMPLES / "glycan_taxonomy_sample.csv")
    for name in formats.names():
        spec = formats.get(name)
        plain = render(report, Format(name), tmp_path / "x")
        timed = render(report, Format(name), tmp_path / "x", durations=True)
        if spec.durations is None:  # a document that must stay valid: nothing appended
            assert timed.endswith(plain[-40:]) and "wall seconds" not in timed, name
        else:
            assert "render" in timed[len(plain) - 2 :], name


def test_junit_of_two_runs_is_the_same_byte_for_byte_under_source_date_epoch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """JUnit XML is the one format with times (its readers show them); a reproducible build
    (``SOURCE_DATE_EPOCH``) fixes its timestamp and zeroes its seconds, as the README says."""
    spec = formats.get("junit")
    runs = [api.audit("glycan", SAMPLES / "glycan_taxonomy_sample.csv") for _ in range(2)]
    assert any(s for s in runs[0].durations.values())  # the rules were timed
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    first, second = (spec.render_audit(r) for r in runs)
    assert first == second
    assert 'time="0.000"' in first and "2023-11-14T22:13:20" in first
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    assert re.search(r'time="(?!0\.000)\d+\.\d{3}"', spec.render_audit(runs[0]))
