"""``ClassLabel`` columns in the ``table`` family: read as their class names, published as
``ClassLabel`` again.

The table: glycowork's species table (real glycans, their phylum and kingdom), written the way a
Hub dataset is (``datasets`` with the kingdom a ``ClassLabel``: integers in the parquet file,
the names in its metadata), a few kingdoms flipped against their phylum and one row without a
label (``-1``, ``datasets``' "no label").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import curate
from curate.cli.main import main

ROWS = 1500


@pytest.fixture(scope="module")
def hub_parquet(shared: Callable[[str], Path], tmp_path_factory) -> tuple[Path, list[str], list]:
    """``(file, class names, the label column as written)``."""
    species = pd.read_csv(
        shared("data/glycan/glycowork_upstream/glyco_targets_species_seq_all_V3.csv"),
        dtype=str,
        keep_default_na=False,
        na_values=[""],
    )
    taxa = species[["target", "Phylum", "Kingdom"]].dropna().drop_duplicates("target")
    taxa = taxa.sample(n=ROWS, random_state=2).reset_index(drop=True)
    names = sorted(taxa["Kingdom"].unique())
    labels = [names.index(k) for k in taxa["Kingdom"]]
    rng = np.random.default_rng(2)
    for i in rng.choice(ROWS, size=12, replace=False):
        labels[i] = (labels[i] + 1) % len(names)
    labels[7] = -1
    features = datasets.Features(
        {
            "target": datasets.Value("string"),
            "Phylum": datasets.Value("string"),
            "Kingdom": datasets.ClassLabel(names=names),
        }
    )
    ds = datasets.Dataset.from_dict(
        {"target": list(taxa["target"]), "Phylum": list(taxa["Phylum"]), "Kingdom": labels},
        features=features,
    )
    path = tmp_path_factory.mktemp("hub") / "train.parquet"
    ds.to_parquet(path)
    return path, names, labels


def test_read_as_names_and_published_as_class_labels(hub_parquet, tmp_path, capsys) -> None:
    path, names, labels = hub_parquet
    report = curate.audit("table", path, label="Kingdom")
    issues = report.findings.filter(pl.col("rule") == "TB302")
    assert issues.height > 0
    # the findings speak in class names, never in the file's indexes
    for message in issues["message"]:
        said = message.split("label ", 1)[1].split(" is unlikely")[0]
        assert said in names, message
    assert report.stats["label_issues"]["Kingdom"]["records"] == ROWS - 1  # -1: no label

    out = tmp_path / "hf"
    assert main(["export", "table", str(path), "--label", "Kingdom", "--out", str(out)]) in (0, 1)
    back = datasets.load_dataset(str(out))["train"]
    assert back.features["Kingdom"] == datasets.ClassLabel(names=names)
    # the same indexes; the row without a label is invalid (a declared label is missing) and
    # left out, as from any table
    assert list(back["Kingdom"]) == [v for v in labels if v != -1]
    assert back["target"][:5] == pq.read_table(path)["target"].to_pylist()[:5]
    card = (out / "README.md").read_text("utf-8")
    assert "class_label:" in card and f"'0': {names[0]}" in card
    capsys.readouterr()
    assert main(["card", "check", str(out), "--no-croissant"]) == 0, capsys.readouterr().out

    # the export read back is the same table: names again, the same findings
    again = curate.audit("table", out, label="Kingdom")
    assert again.stats["label_issues"]["Kingdom"] == report.stats["label_issues"]["Kingdom"]


def test_no_label_is_published_as_the_input_wrote_it(hub_parquet, tmp_path) -> None:
    """A column not declared the label (a test split's, say) keeps its rows without a label:
    ``-1`` in the input (``datasets``' spelling) is ``-1`` in the remaster, not null; a column
    whose input wrote null keeps null."""
    path, names, labels = hub_parquet
    out = tmp_path / "hf"
    assert main(["export", "table", str(path), "--out", str(out)]) in (0, 1)
    back = datasets.load_dataset(str(out))["train"]
    assert back.features["Kingdom"] == datasets.ClassLabel(names=names)
    assert list(back["Kingdom"]) == labels and labels.count(-1) == 1

    table = pq.read_table(path)
    nulls = [None if v == -1 else v for v in labels]
    with_null = tmp_path / "null.parquet"
    pq.write_table(table.set_column(2, "Kingdom", [pa.array(nulls, pa.int64())]), with_null)
    out = tmp_path / "hf-null"
    assert main(["export", "table", str(with_null), "--out", str(out)]) in (0, 1)
    assert list(datasets.load_dataset(str(out))["train"]["Kingdom"]) == nulls


def test_an_index_past_the_names_is_kept_as_text(hub_parquet, tmp_path) -> None:
    """An integer no class name covers is read as its digits (seen, not lost), and the column is
    then published as text in every split: a ``ClassLabel`` could not hold it."""
    path, names, _ = hub_parquet
    table = pq.read_table(path)
    bad = table.column("Kingdom").to_pylist()
    bad[3] = len(names) + 5
    odd = tmp_path / "odd.parquet"
    pq.write_table(table.set_column(2, "Kingdom", [bad]), odd)  # the metadata kept
    report = curate.audit("table", odd, label="Kingdom")
    values = set(pl.read_parquet(odd)["Kingdom"].to_list())
    assert len(names) + 5 in values
    out = tmp_path / "hf"
    assert main(["export", "table", str(odd), "--label", "Kingdom", "--out", str(out)]) in (0, 1)
    back = datasets.load_dataset(str(out))["train"]
    assert back.features["Kingdom"] == datasets.Value("large_string")
    kept = [v for v in bad if v != -1]
    assert list(back["Kingdom"]) == [str(v) if v >= len(names) else names[v] for v in kept]
    assert report.stats["label_issues"]["Kingdom"]["records"] == ROWS - 1


def test_features_of_a_plain_table_carry_no_class_label(tmp_path) -> None:
    """Without the metadata, integers stay integers: nothing is guessed."""
    path = tmp_path / "plain.parquet"
    pl.DataFrame({"text": ["a b", "c d", "e f", "g h"] * 5, "y": [0, 1, 0, 1] * 5}).write_parquet(
        path
    )
    out = tmp_path / "hf"
    assert main(["export", "table", str(path), "--label", "y", "--out", str(out)]) in (0, 1)
    info = json.loads(json.dumps(datasets.load_dataset(str(out))["train"].features.to_dict()))
    assert info["y"] == {"dtype": "int64", "_type": "Value"}


def test_a_card_s_class_label_over_csv_is_published_as_one(tmp_path) -> None:
    """A dataset folder of CSV whose card declares a ``ClassLabel``: each cell a name or an
    index, read as the names, published as the card's ``ClassLabel``."""
    folder = tmp_path / "in"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text(
        "---\ndataset_info:\n  features:\n  - name: text\n    dtype: string\n  - name: label\n"
        "    dtype:\n      class_label:\n        names:\n          '0': neg\n          '1': pos\n"
        "configs:\n- config_name: default\n  data_files:\n  - split: train\n"
        "    path: data/train.csv\n---\n# films\n",
        "utf-8",
    )
    (folder / "data" / "train.csv").write_text(
        "text,label\ngood film,1\nbad film,neg\ngreat,pos\nawful,0\n", "utf-8"
    )
    out = tmp_path / "hf"
    assert main(["export", "table", str(folder), "--label", "label", "--out", str(out)]) in (0, 1)
    back = datasets.load_dataset(str(out))["train"]
    assert back.features["label"] == datasets.ClassLabel(names=["neg", "pos"])
    assert list(back["label"]) == [1, 0, 1, 0]


def _films(path: Path, names: list[str], labels: list[int]) -> None:
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=names)}
    )
    texts = [f"film {i} was {'good' if i % 2 else 'bad'}" for i in range(len(labels))]
    datasets.Dataset.from_dict({"text": texts, "label": labels}, features=features).to_parquet(path)


def test_splits_numbering_their_classes_apart_stay_integers(tmp_path) -> None:
    """Splits encoded apart (``class_encode_column`` per split) number their classes apart: an
    index then means no one class, and the column is read as the integers stored (not named by
    the first file's list); splits that agree are named."""
    folder = tmp_path / "apart" / "data"
    folder.mkdir(parents=True)
    _films(folder / "train-00000-of-00001.parquet", ["neg", "pos"], [0, 0, 1, 1])
    _films(folder / "test-00000-of-00001.parquet", ["pos", "neg"], [0, 0, 1, 1])
    data = curate.load("table", folder.parent, label="label")
    assert set(data.values["label"].to_list()) == {0, 1}
    same = tmp_path / "same" / "data"
    same.mkdir(parents=True)
    _films(same / "train-00000-of-00001.parquet", ["neg", "pos"], [0, 0, 1, 1])
    _films(same / "test-00000-of-00001.parquet", ["neg", "pos"], [1, 0, 1, 1])
    data = curate.load("table", same.parent, label="label")
    by_split: dict[str, list[str]] = {}
    for split, label in zip(data.rows["split"], data.values["label"], strict=True):
        by_split.setdefault(split, []).append(label)
    assert by_split == {"train": ["neg", "neg", "pos", "pos"], "test": ["pos", "neg", "pos", "pos"]}


def test_a_schema_typing_the_label_as_int_keeps_the_indexes(tmp_path) -> None:
    """A ``--schema`` model types the column itself: an ``int`` label validates as the file
    stores it (no row invalid) and is published as the same ``ClassLabel``."""
    path = tmp_path / "films.parquet"
    _films(path, ["neg", "pos"], [0, 1, 0, 1, 1, 0])
    (tmp_path / "films_model.py").write_text(
        "from pydantic import BaseModel\n\nclass Row(BaseModel):\n    text: str\n    label: int\n",
        "utf-8",
    )
    schema = f"{tmp_path / 'films_model.py'}:Row"
    report = curate.audit("table", path, label="label", schema=schema, label_model="none")
    assert report.findings.filter(pl.col("severity") == "error").height == 0
    out = tmp_path / "hf"
    argv = ["export", "table", str(path), "--label", "label", "--schema", schema]
    assert main([*argv, "--label-model", "none", "--out", str(out)]) in (0, 1)
    back = datasets.load_dataset(str(out))["train"]
    assert back.features["label"] == datasets.ClassLabel(names=["neg", "pos"])
    assert list(back["label"]) == [0, 1, 0, 1, 1, 0]


def test_a_fix_publishes_the_class_labels_too(hub_parquet, tmp_path) -> None:
    """``curate fix`` re-reads its own passes' files: the class names travel with them, so
    the fixed dataset keeps its ``ClassLabel`` and both reports speak in names."""
    path, names, _ = hub_parquet
    out = tmp_path / "fixed"
    assert main(["fix", "table", str(path), "--label", "Kingdom", "--out", str(out)]) in (0, 1)
    back = datasets.load_dataset(str(out))["train"]
    assert back.features["Kingdom"] == datasets.ClassLabel(names=names)
    for report in ("audit.before.json", "audit.after.json"):
        doc = json.loads((out / report).read_text("utf-8"))
        stats = doc["summary"]["stats"]["label_issues"]["Kingdom"]
        assert {c["class"] for c in stats["classes"]} <= set(names), report


def test_an_unsigned_class_label_column_is_published(tmp_path) -> None:
    """A ``ClassLabel`` stored as unsigned integers (a writer of its own, ``uint8``) holds no
    ``-1``: it is read as names and published as the same ``ClassLabel``, not a crash."""
    names = ["neg", "pos"]
    features = datasets.Features(
        {"text": datasets.Value("string"), "label": datasets.ClassLabel(names=names)}
    )
    hf = tmp_path / "hf-written.parquet"
    datasets.Dataset.from_dict(
        {"text": ["a b", "c d", "e f", "g h"], "label": [0, 1, 1, 0]}, features=features
    ).to_parquet(hf)
    meta = pq.read_schema(hf).metadata
    table = pa.table(
        {"text": ["a b", "c d", "e f", "g h"], "label": pa.array([0, 1, 1, 0], pa.uint8())}
    )
    path = tmp_path / "train.parquet"
    pq.write_table(table.replace_schema_metadata(meta), path)
    out = tmp_path / "hf"
    assert main(["export", "table", str(path), "--out", str(out)]) in (0, 1)
    back = datasets.load_dataset(str(out))["train"]
    assert back.features["label"] == datasets.ClassLabel(names=names)
    assert list(back["label"]) == [0, 1, 1, 0]
