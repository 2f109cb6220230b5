"""Croissant that ``mlcroissant`` reads back equal to the parquet rows, for every family's export
and every config (issue 35): every record, every field, nested lists of structs included.

mlcroissant 1.1 builds a record one level of subfields deep, keying each value by its field's
``@id``; curate's field ids are the paths of the values (``default/requested_rewrite/target_new/
str``), so a record rebuilt along its ids is the row. The comparison is of that rebuilt record
with the row ``pyarrow`` reads from the shard, value for value.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

import curate
from curate.cli.main import main

SAMPLES = Path(curate.__file__).parent / "data" / "samples"
MUSICCAPS = ["--column", "sample_id=ytid", "--column", "split=is_audioset_eval"]
MUSICCAPS += ["--split-map", "True=test", "--split-map", "False=train"]
MUSICCAPS += ["--value", "label=real", "--value", "modality=audio"]
EXPORTS = {
    "mquake": (SAMPLES / "mquake_sample.json", []),
    "glycan": (SAMPLES / "glycan_taxonomy_sample.csv", []),
    "deepfake": (SAMPLES / "musiccaps_manifest.csv", MUSICCAPS),
    "table": (SAMPLES / "musiccaps_manifest.csv", ["--id", "ytid"]),
    "icrl": (SAMPLES / "xland_format_sample_9x9_random.hdf5", []),
}


def plain_value(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, list | tuple | np.ndarray):
        return [plain_value(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def rebuild(value: Any, prefix: str) -> Any:
    """An mlcroissant value as the row holds it: keys ``PREFIX/a/b`` become ``{a: {b: ...}}``,
    recursively, in lists of structs too."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, v in value.items():
            assert key.startswith(prefix + "/"), (key, prefix)
            *parents, leaf = key[len(prefix) + 1 :].split("/")
            node = out
            for p in parents:
                node = node.setdefault(p, {})
            node[leaf] = rebuild(v, key)
        return out
    if isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        # mlcroissant renders an empty list of structs as one element of nulls
        if len(value) == 1 and all(_all_null(v) for v in value[0].values()):
            return []
        return [rebuild(x, prefix) for x in value]
    return plain_value(value)


def _all_null(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_all_null(v) for v in value.values())
    return value is None


def _rows(folder: Path, doc: dict[str, Any], record_set: dict[str, Any]) -> list[dict]:
    """The rows of a record set's shards, in the order mlcroissant reads them, with their
    split under the split field's name."""
    fileset = record_set["field"][0]["source"]["fileSet"]["@id"]
    pattern = next(d["includes"] for d in doc["distribution"] if d["@id"] == fileset)
    files = sorted(
        p
        for p in folder.rglob("*.parquet")
        if fnmatch.fnmatch(p.relative_to(folder).as_posix(), pattern)
    )
    split_field = record_set["field"][-1]["name"]
    return [
        {**row, split_field: p.name.split("-")[0]}
        for p in files
        for row in pq.read_table(p).to_pylist()
    ]


@pytest.mark.parametrize("family", sorted(EXPORTS))
def test_mlcroissant_reads_back_every_parquet_row(family: str, tmp_path: Path) -> None:
    import mlcroissant as mlc

    src, extra = EXPORTS[family]
    out = tmp_path / "hf"
    assert main(["export", family, str(src), "--out", str(out), *extra]) == 0
    doc = json.loads((out / "croissant.json").read_text("utf-8"))
    ds = mlc.Dataset(jsonld=str(out / "croissant.json"))
    assert not ds.metadata.ctx.issues.errors
    configs = [r for r in doc["recordSet"] if "data" not in r]
    assert configs
    for record_set in configs:
        want = _rows(out, doc, record_set)
        got = [rebuild(r, record_set["@id"]) for r in ds.records(record_set=record_set["@id"])]
        assert len(got) == len(want) > 0
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            assert a == b, (family, record_set["@id"], k, a, b)


BIBTEX = """@inproceedings{zhong2023mquake,
  title = {{MQuAKE}: Assessing Knowledge Editing in Language Models via Multi-Hop Questions},
  author = {Zhong, Zexuan and Wu, Zhengxuan and Manning, Christopher D. and Potts, Christopher
            and Chen, Danqi},
  booktitle = {EMNLP},
  year = {2023}
}"""


@pytest.mark.parametrize("verb", ["export", "fix"])
def test_citation_and_publication_date_reach_croissant_and_the_card(
    verb: str, tmp_path: Path
) -> None:
    """``--citation``/``--date-published``: mlcroissant reads them back as ``cite_as`` and
    ``date_published`` and no longer warns they are missing; the card cites in a bibtex block."""
    import mlcroissant as mlc

    src = SAMPLES / "mquake_sample.json"
    plain, cited = tmp_path / "plain", tmp_path / "cited"
    assert main([verb, "mquake", str(src), "--out", str(plain)]) == 0
    flags = ["--citation", BIBTEX, "--date-published", "2023-05-24", "--license", "cc-by-4.0"]
    assert main([verb, "mquake", str(src), "--out", str(cited), *flags]) == 0

    def missing(folder: Path) -> set[str]:
        ds = mlc.Dataset(jsonld=str(folder / "croissant.json"))
        return {
            prop
            for prop in ("citeAs", "datePublished")
            for w in ds.metadata.ctx.issues.warnings
            if prop in w
        }

    assert missing(plain) == {"citeAs", "datePublished"}  # nothing invented when not given
    assert missing(cited) == set()
    meta = mlc.Dataset(jsonld=str(cited / "croissant.json")).metadata
    assert meta.cite_as == BIBTEX
    assert meta.date_published is not None and meta.date_published.date().isoformat() == (
        "2023-05-24"
    )
    card = (cited / "README.md").read_text("utf-8")
    assert f"## Citation\n\n```bibtex\n{BIBTEX}\n```" in card
    assert "Published 2023-05-24." in card
    assert "\nlicense: cc-by-4.0\n" in card  # fix takes --license as export does
    assert "## Citation" not in (plain / "README.md").read_text("utf-8")


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (["--date-published", "24/05/2023"], "is not a day as YYYY-MM-DD"),
        (["--date-published", "20230524"], "is not a day as YYYY-MM-DD"),
        (["--date-published", "2023-05-24T10:00"], "(no time)"),
        (["--citation", "  "], "is empty"),
        (["--tag", ""], "--tag '' is empty"),
    ],
)
def test_a_bad_citation_or_date_is_one_line_before_any_work(
    flags: list[str], why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hf"
    assert (
        main(["export", "mquake", str(SAMPLES / "mquake_sample.json"), "--out", str(out), *flags])
        == 2
    )
    err = capsys.readouterr().err
    assert why in err and err.count("\n") == 1
    assert not out.exists()


@pytest.mark.parametrize(
    ("citation", "opening"),
    [
        (BIBTEX, "```bibtex"),
        ("% exported by Zotero\n" + BIBTEX, "```bibtex"),  # an entry after a comment line
        ("@misc{x, note = {```}}", "````bibtex"),  # a fence longer than the text's backticks
        ("# Not a heading\nsecond line", "```text"),  # several lines: kept as they are
        ("#1 in a sentence", "```text"),  # one line that Markdown would make a heading
        ("Zhong et al. (2023), MQuAKE, EMNLP.", None),  # a sentence: a paragraph
    ],
)
def test_a_citation_is_shown_as_given(citation: str, opening: str | None) -> None:
    """Whatever the text, the card shows it as given: no heading or list made of it, no fence
    closed early by its own backticks."""
    from curate.publish.card import citation_section

    lines = citation_section(citation)
    assert lines[0] == "## Citation"
    if opening is None:
        assert lines[2] == citation
    else:
        fence = opening.removesuffix("bibtex").removesuffix("text")
        assert lines[2] == opening and lines[3] == citation and lines[4] == fence
