"""docs/api.md's example runs as written, and the API keeps the CLI's promises."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE

import curate
from curate.core.errors import UsageError

DOC = ROOT / "docs" / "api.md"


def test_api_doc_example_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert blocks, "docs/api.md lost its example"
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    out = capsys.readouterr().out
    assert "refused: edit_set: glycan has no such option" in out
    assert (tmp_path / "glycans-fixed" / "changelog.jsonl").is_file()
    assert (tmp_path / "mquake-hf" / "README.md").is_file()


def test_a_str_path_is_one_path_not_characters() -> None:
    report = curate.audit("mquake", str(SAMPLE), select=["KE0"])
    assert [i.path for i in report.inputs] == [str(SAMPLE)]


@pytest.mark.parametrize(
    ("family", "options"),
    [
        ("mquake", {"task": "taxonomy"}),
        ("glycan", {"edit_set": "random:5"}),
        ("mquake", {"edit_sett": "all"}),
        ("glycan", {"task": "toxicity"}),
    ],
)
def test_options_are_validated_by_the_library(family: str, options: dict) -> None:
    with pytest.raises(UsageError):
        curate.audit(family, SAMPLE, **options)


def test_strict_refuses_and_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "in.json"
    text = SAMPLE.read_text(encoding="utf-8")
    bad.write_text(text.replace('"requested_rewrite"', '"requested_rewrit"', 1), encoding="utf-8")
    with pytest.raises(curate.StrictRefusal, match="1 of 52 records are invalid"):
        curate.export("mquake", bad, tmp_path / "out", strict=True)
    assert not (tmp_path / "out").exists()
    done = curate.export("mquake", bad, tmp_path / "out")
    assert done.invalid_records == 1 and done.rows == 51


def test_api_refuses_to_write_over_an_input(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "in.json").write_bytes(SAMPLE.read_bytes())
    with pytest.raises(UsageError, match="contains the input"):
        curate.fix("mquake", data / "in.json", out=data, overwrite=True)
    assert (data / "in.json").read_bytes() == SAMPLE.read_bytes()
