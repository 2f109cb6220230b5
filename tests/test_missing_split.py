"""A row with no split, in a dataset whose other rows have one: ``export`` and ``fix`` publish
it in train, so ``audit`` audits it there: its copy in test is a leak found before it is
published, not after."""

from __future__ import annotations

from pathlib import Path

import pytest

import curate

_ROWS = {
    # family: (file text, options, the leak rule)
    "table": (
        "id,text,split\n1,alpha,train\n2,gamma delta,\n3,gamma delta,test\n",
        {"id": "id", "text": ["text"], "split": "split", "label_model": "none"},
        "TB405",
    ),
    "deepfake": (
        "sample_id,sha256,split,modality,label\n"
        + f"1,{1:064d},train,audio,real\n2,{2:064d},,audio,real\n3,{2:064d},test,audio,real\n",
        {},
        "DF303",
    ),
}


@pytest.mark.parametrize("family", sorted(_ROWS))
def test_a_row_without_a_split_is_audited_where_it_is_published(
    family: str, tmp_path: Path
) -> None:
    text, options, rule = _ROWS[family]
    src = tmp_path / "rows.csv"
    src.write_text(text)
    report = curate.audit(family, src, **options)
    leaks = report.findings.filter(report.findings["rule"] == rule)
    assert leaks["record"].to_list() == ["3"], report.findings
    data = curate.load(family, src, **options)
    assert data.rows.sort("row")["split"].to_list() == ["train", "train", "test"]
