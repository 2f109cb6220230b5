"""``curate card check``: a real ``curate export`` of the example repository's glycan table is
clean; each defect the Hub (or its Dataset Viewer) would find after an upload is caught when the
folder is broken that one way.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curate.cli.main import main
from curate.publish.card import citation_section
from curate.publish.cardcheck import _citation_of, _cites

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dataset-repo"


def run(capsys, *argv: Any) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("card") / "hf"
    src = EXAMPLE / "data" / "glycan" / "plant_taxonomy.csv"
    assert main(["export", "glycan", str(src), "--out", str(out)]) == 0
    return out


@pytest.fixture
def folder(exported, tmp_path) -> Path:
    dst = tmp_path / "hf"
    shutil.copytree(exported, dst)
    return dst


def edit_card(folder: Path, old: str, new: str) -> None:
    card = folder / "README.md"
    text = card.read_text("utf-8")
    assert old in text, old
    card.write_text(text.replace(old, new, 1), "utf-8")


def edit_croissant(folder: Path, change: Callable[[dict], None]) -> None:
    path = folder / "croissant.json"
    doc = json.loads(path.read_text("utf-8"))
    change(doc)
    path.write_text(json.dumps(doc, indent=2), "utf-8")


def test_a_real_export_is_clean(exported, capsys):
    rc, out, err = run(capsys, "card", "check", exported)
    assert rc == 0, out + err
    assert "nothing the Hub would reject" in out


def _bad_yaml(f: Path) -> None:
    edit_card(f, "license: mit", "license: [mit")


def _no_files(f: Path) -> None:
    edit_card(f, "path: data/test-*", "path: data/tests-*")


def _features(f: Path) -> None:
    edit_card(
        f, "- name: glycowork_row\n    dtype: int64", "- name: glycowork_row\n    dtype: string"
    )


def _missing_column(f: Path) -> None:
    edit_card(f, "  - name: taxon_id\n    dtype: int64\n", "")


def _license(f: Path) -> None:
    edit_card(f, "license: mit", "license: mit-license")


def _size(f: Path) -> None:
    edit_card(f, "- n<1K", "- n<2K")


def _num_examples(f: Path) -> None:
    card = (f / "README.md").read_text("utf-8")
    n = re.search(r"name: test\n    num_bytes: \d+\n    num_examples: (\d+)", card)
    assert n is not None
    edit_card(f, n.group(0), n.group(0)[: -len(n.group(1))] + str(int(n.group(1)) + 1))


def _sha(f: Path) -> None:
    def change(doc: dict) -> None:
        obj = next(d for d in doc["distribution"] if d["@type"] == "cr:FileObject")
        obj["sha256"] = "0" * 64

    edit_croissant(f, change)


def _croissant_invalid(f: Path) -> None:
    def change(doc: dict) -> None:
        doc["recordSet"][-1]["field"][0]["dataType"] = "sc:NoSuchType"

    edit_croissant(f, change)


def _shard_gone(f: Path) -> None:
    next((f / "data").glob("validation-*.parquet")).unlink()


@pytest.mark.parametrize(
    ("damage", "where", "words"),
    [
        (_bad_yaml, "README.md: line 3", "the YAML does not parse"),
        (_no_files, "README.md: configs[0].data_files[2]", "'data/tests-*' matches no file"),
        (_features, "data/", "column 'glycowork_row' is int64 in the file but string"),
        (_missing_column, "data/", "column 'taxon_id' of the file is not in the card's features"),
        (_license, "README.md: license", "'mit-license' is not a Hub licence identifier"),
        (_size, "README.md: size_categories[0]", "'n<2K' is not a Hub size category"),
        (_num_examples, "README.md: dataset_info.splits[2].num_examples", "the card says"),
        (_sha, "croissant.json: distribution[", "croissant.json says 000000"),
        (_croissant_invalid, "croissant.json", "does not specify a valid"),
        (_shard_gone, "README.md: configs[0].data_files[1]", "'data/validation-*' matches no"),
    ],
)
def test_each_defect_is_caught(folder, capsys, damage, where, words):
    damage(folder)
    rc, out, err = run(capsys, "card", "check", folder)
    assert rc == 1, out + err
    lines = [x for x in out.splitlines() if words in x]
    assert lines, out
    assert f"{folder}/{where}" in lines[0]
    rc, out, _ = run(capsys, "card", "check", folder, "--format", "json")
    assert rc == 1 and any(words in p["message"] for p in json.loads(out)["problems"])


def test_without_mlcroissant_croissant_is_a_usage_error(folder, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlcroissant", None)  # import fails as if not installed
    rc, _, err = run(capsys, "card", "check", folder)
    assert rc == 2
    assert "mlcroissant is not installed" in err and err.count("\n") == 1
    rc, out, _ = run(capsys, "card", "check", folder, "--no-croissant")
    assert rc == 0, out


def test_not_a_card_folder(tmp_path, capsys):
    rc, out, _ = run(capsys, "card", "check", tmp_path)
    assert rc == 1 and "no dataset card (README.md)" in out


def test_a_missing_folder_is_no_such_folder(tmp_path, capsys):
    rc, _, err = run(capsys, "card", "check", tmp_path / "nope")
    assert rc == 2 and err.strip().endswith("nope: no such folder"), err
    (tmp_path / "file").write_text("x", "utf-8")
    rc, _, err = run(capsys, "card", "check", tmp_path / "file")
    assert rc == 2 and err.strip().endswith("file: not a folder"), err


def test_a_card_without_configs_that_would_load_the_reports(tmp_path, capsys):
    """No ``configs`` and a folder of one HDF5 file plus curate's JSON reports: ``datasets``
    would infer the reports as the data. The check asks ``datasets`` and names the files."""
    (tmp_path / "README.md").write_text("---\nlicense: mit\n---\n\n# x\n", "utf-8")
    (tmp_path / "audit.after.json").write_text('{"tool": "curate"}', "utf-8")
    (tmp_path / "changelog.jsonl").write_text('{"rule": "RL205"}\n', "utf-8")
    (tmp_path / "histories.hdf5").write_bytes(b"\\x89HDF\\r\\n\\x1a\\n")
    rc, out, _ = run(capsys, "card", "check", tmp_path)
    assert rc == 1, out
    assert "datasets.load_dataset would read audit.after.json, changelog.jsonl" in out
    assert "it would not read histories.hdf5" in out
    (tmp_path / "audit.after.json").unlink()
    (tmp_path / "changelog.jsonl").unlink()
    (tmp_path / "data.csv").write_text("a\n1\n", "utf-8")
    rc, out, _ = run(capsys, "card", "check", tmp_path)
    assert "no configs" not in out, out


def _yaml_value(folder: Path, key: str) -> str:
    card = (folder / "README.md").read_text("utf-8")
    m = re.search(rf"^\s*{key}: (\S+)$", card, re.M)
    assert m is not None, key
    return m.group(1)


def test_every_size_figure_is_checked_against_the_files(folder, capsys):
    """The size category against the rows, each split's num_bytes, the config's download_size
    and dataset_size, Croissant's contentSize: a figure the files contradict is named."""
    edit_card(folder, "- n<1K", "- 1M<n<10M")
    edit_card(folder, f"num_bytes: {_yaml_value(folder, 'num_bytes')}", "num_bytes: 5")
    edit_card(folder, f"download_size: {_yaml_value(folder, 'download_size')}", "download_size: 1")
    edit_card(folder, f"dataset_size: {_yaml_value(folder, 'dataset_size')}", "dataset_size: 7")
    edit_croissant(folder, lambda d: d["distribution"][0].update(contentSize="1 B"))
    rc, out, err = run(capsys, "card", "check", folder, "--format", "json")
    assert rc == 1, err
    said = {(p["where"], p["file"]): p["message"] for p in json.loads(out)["problems"]}
    assert "'n<1K'" in said[("size_categories[0]", "README.md")]
    assert "160 rows" in said[("size_categories[0]", "README.md")]
    bytes_msg = next(m for (w, _), m in said.items() if w.endswith("num_bytes"))
    assert "the card says 5 bytes" in bytes_msg
    assert "the card says 1 bytes" in said[("dataset_info.download_size", "README.md")]
    assert "the card says 7 bytes" in said[("dataset_info.dataset_size", "README.md")]
    shard = next(m for (_, f), m in said.items() if f == "croissant.json")
    assert "contentSize" in shard and "'1 B'" in shard


def test_an_absolute_local_path_in_the_card_is_a_warning(folder, capsys, tmp_path):
    """An export names its inputs relative to the card (a clean export has no such warning,
    test above); one typed into the card by hand is flagged, a URL's path is not."""
    body = (folder / "README.md").read_text("utf-8")
    assert "../../" in body or "examples/dataset-repo" in body  # the input, relative
    typed = tmp_path / "data" / "cases.json"  # an absolute path of this machine
    edit_card(folder, "## Source", f"Made from `{typed}`; see https://x.org/a/b.\n\n## Source")
    rc, out, _ = run(capsys, "card", "check", folder, "--format", "json")
    assert rc == 0  # a warning: the Hub takes it
    problems = json.loads(out)["problems"]
    assert [p["severity"] for p in problems] == ["warning"]
    assert str(typed) in problems[0]["message"]


def test_task_categories_are_the_hubs(folder, capsys):
    """A task category the Hub does not know (its list: huggingface.js' PIPELINE_DATA, a
    dated copy) is a defect, with the nearest real one; every family's default is known."""
    from curate.families import all_families
    from curate.publish.metadata import hub_tasks

    for fam in all_families().values():
        assert set(fam.card.task_categories) <= set(hub_tasks()), fam.name
    edit_card(folder, "- text-classification", "- text-clasification")
    rc, out, _ = run(capsys, "card", "check", folder, "--format", "json")
    assert rc == 1
    (p,) = json.loads(out)["problems"]
    assert p["where"] == "task_categories[0]" and "did you mean text-classification" in p["message"]


def test_the_task_refresh_script_parses_pipeline_data():
    """scripts/make_hub_tasks.py on a pipelines.ts like huggingface.js': the first-level keys of
    PIPELINE_DATA (quoted or not) with their names, nothing from nested objects or after it."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / "make_hub_tasks.py"
    spec = importlib.util.spec_from_file_location("make_hub_tasks", path)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    body = "".join(
        f'\t"task-{i}": {{\n\t\tname: "Task {i}",\n\t\tsubtasks: [\n\t\t\t{{\n'
        f'\t\t\t\ttype: "sub-{i}",\n\t\t\t\tname: "Sub",\n\t\t\t}},\n\t\t],\n\t}},\n'
        for i in range(35)
    )
    text = f"const X = {{\n\tother: {{\n}};\nexport const PIPELINE_DATA = {{\n{body}\tother: {{\n"
    text += '\t\tname: "Other",\n\t},\n} satisfies Record<string, PipelineData>;\n\tlater: {\n'
    got = script.parse(text)
    assert list(got) == [*(f"task-{i}" for i in range(35)), "other"]
    assert got["task-3"] == "Task 3" and got["other"] == "Other"


def test_no_croissant_still_checks_the_files_croissant_lists(folder, capsys):
    """--no-croissant skips mlcroissant's validation only: a wrong checksum is still a defect."""

    def damage(doc: dict) -> None:
        shard = doc["distribution"][0]
        shard["sha256"] = ("0" if shard["sha256"][0] != "0" else "1") + shard["sha256"][1:]

    edit_croissant(folder, damage)
    rc, out, _ = run(capsys, "card", "check", folder, "--no-croissant")
    assert rc == 1 and "croissant.json says" in out


def test_an_absolute_data_files_path_is_a_defect_and_warnings_are_not(folder, capsys, tmp_path):
    """A data_files glob naming the local folder absolutely matches here and nowhere on the
    Hub: a defect (exit 1). A warning alone is reported as a warning, exit 0."""
    edit_card(folder, "path: data/train-*", f"path: {folder}/data/train-*")
    rc, out, _ = run(capsys, "card", "check", folder)
    assert rc == 1 and "is an absolute path" in out and "card defect" in out
    edit_card(folder, f"path: {folder}/data/train-*", "path: data/train-*")
    pattern = f"{tmp_path}/x/*.json"
    edit_card(folder, "## Source", f"See `{pattern}`.\n\n## Source")
    rc, out, _ = run(capsys, "card", "check", folder)
    assert rc == 0 and out.rstrip().endswith(
        "1 warning in " + str(folder) + " (nothing the Hub rejects)"
    )
    assert pattern in out


def test_croissant_must_carry_the_card_s_licence(folder, capsys):
    """Two licences for one dataset leave its terms open: a defect. The same licence in
    another case is the same; a URL (a licence has many) and the Hub's ``other`` are not
    compared."""
    for theirs in ("MIT", "https://opensource.org/license/mit/", "https://spdx.org/licenses/x"):
        edit_croissant(folder, lambda doc, v=theirs: doc.update(license=v))
        rc, out, err = run(capsys, "card", "check", folder, "--no-croissant")
        assert rc == 0, (theirs, out + err)
    edit_card(folder, "license: mit", "license: other")
    edit_croissant(folder, lambda doc: doc.update(license="apache-2.0"))
    rc, out, _ = run(capsys, "card", "check", folder, "--no-croissant")
    assert rc == 0, out
    edit_card(folder, "license: other", "license: mit")
    edit_croissant(folder, lambda doc: doc.update(license="apache-2.0"))
    rc, out, _ = run(capsys, "card", "check", folder, "--no-croissant")
    assert rc == 1
    line = next(x for x in out.splitlines() if "license" in x)
    assert line.startswith(f"{folder}/croissant.json: license: error: ")
    assert "'apache-2.0' is not the card's 'mit'" in line


BIBTEX = "@article{x2024,\n  title = {A {Title}},\n  year = {2024}\n}"


@pytest.fixture(scope="module")
def cited(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cited") / "hf"
    src = EXAMPLE / "data" / "glycan" / "plant_taxonomy.csv"
    assert main(["export", "glycan", str(src), "--out", str(out), "--citation", BIBTEX]) == 0
    return out


def test_croissant_cites_what_the_card_cites(cited, tmp_path, capsys):
    """An export cites the same way in both files (clean); a Citation section edited by hand
    afterwards, or removed, and a citeAs dropped are warnings (the Hub rejects none of it)."""
    rc, out, err = run(capsys, "card", "check", cited, "--no-croissant")
    assert rc == 0 and "nothing the Hub would reject" in out, out + err
    for name, damage, words in [
        ("edited", lambda f: edit_card(f, "year = {2024}", "year = {2025}"), "differs from"),
        ("removed", lambda f: edit_card(f, "## Citation", "## Cite"), "no Citation section"),
        ("dropped", lambda f: edit_croissant(f, lambda d: d.pop("citeAs")), "is missing"),
    ]:
        folder = tmp_path / name
        shutil.copytree(cited, folder)
        damage(folder)
        rc, out, _ = run(capsys, "card", "check", folder, "--no-croissant")
        assert rc == 0, (name, out)
        line = next(x for x in out.splitlines() if "citeAs" in x)
        assert line.startswith(f"{folder}/croissant.json: citeAs: warning: citeAs "), line
        assert words in line, (name, line)


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab #@{}=`%\n\t>-*\u2028"), min_size=1, max_size=80)
    .map(str.strip)
    .filter(bool)
)
def test_the_citation_read_back_is_the_one_written(citation):
    """What the check reads as the card's citation is what the export wrote, whatever the text
    (BibTeX, lines starting ``#`` or ``## ``, runs of backticks, a single line)."""
    card = "\n".join(["# Title", "", *citation_section(citation), "## Source", "", "x"])
    got = _citation_of(card)
    assert got is not None and _cites(got, citation)


@pytest.mark.parametrize(
    "section",
    [
        "If you use this dataset, please cite:\n\n```bibtex\n{c}\n```",
        "~~~\n{c}\n~~~",
        "   ```text\n{c}\n   ```\n\nThanks to the annotators.",
    ],
    ids=["words before the fence", "tilde fence", "indented fence, words after"],
)
def test_a_citation_written_by_hand_is_read(section):
    """The Hub's template heading (``## Citation [optional]``), words around the entry, other
    fences: the entry is still found in the section."""
    card = "\n".join(["# T", "", "## Citation [optional]", "", section.format(c=BIBTEX), "", "x"])
    got = _citation_of(card)
    assert got is not None and _cites(got, BIBTEX), got


def test_a_one_line_citation_of_curate_s_own_card_is_read(tmp_path, capsys):
    out = tmp_path / "hf"
    src = EXAMPLE / "data" / "glycan" / "plant_taxonomy.csv"
    line = "Doe J. (2024). Plant glycans. Journal 1:1."
    assert main(["export", "glycan", str(src), "--out", str(out), "--citation", line]) == 0
    rc, said, err = run(capsys, "card", "check", out, "--no-croissant")
    assert rc == 0 and "warning" not in said, said + err
