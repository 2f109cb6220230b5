"""The ``table`` family's column and label-distribution rules (issue 32): TB003 mixed-types,
TB101 single-value-column, TB102 identifier-label-correlation, TB201 singleton-class, TB202
class-absent-from-train, TB203 class-imbalance.

Each rule's findings are compared with an independent computation written here in plain
pandas and Python (``float()`` for what a number is, ``groupby``/``value_counts`` for the
classes, a sort and a loop for the id predictors), never curate's polars expressions, on real
tables: glycowork's 4,900-row sample with its split (and its upstream species and sugarbase
tables), MusicCaps' 5,521 captions. A small hand-made table per rule fires, one that must not
stays silent.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

import curate
from curate.audits.table.columns import LEAK_KAPPA, LEAK_Z

GLYCO = "data/glycan/glycowork_sample.csv"
MUSIC = "data/deepfake/musiccaps-public-openai.csv"
SPECIES = "data/glycan/glycowork_upstream/glyco_targets_species_seq_all_V3.csv"
SUGARBASE = "data/glycan/glycowork_upstream/v3_sugarbase.csv"


def found(report: curate.Report, code: str) -> pd.DataFrame:
    return report.findings.filter(pl.col("rule") == code).to_pandas()


def details(report: curate.Report, code: str) -> list[dict]:
    return [json.loads(d) for d in found(report, code)["details"]]


def read_text(path: Path) -> pd.DataFrame:
    """A CSV as its cells are written (every column text, an empty cell missing)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])


# ----------------------------------------------------------------- TB003 mixed-types


def kind(cell: object) -> str | None:
    """A cell's kind, independently: what Python's ``float`` reads is a number."""
    if cell is None or (isinstance(cell, float) and math.isnan(cell)):
        return None
    s = str(cell).strip()
    if not s:
        return None
    if "_" not in s:
        try:
            float(s)
            return "number"
        except ValueError:
            pass
    if s.lower() in ("true", "false"):
        return "boolean"
    return "text"


def expected_mixed(df: pd.DataFrame, share: float) -> set[tuple[str, int, str]]:
    """``(column, first row of a rarer kind, its kind)`` for every column whose rarer kinds
    are at most ``share`` of its non-empty cells."""
    out = set()
    for c in df.columns:
        kinds = df[c].map(kind)
        counts = kinds.value_counts()
        if len(counts) < 2:
            continue
        order = ["number", "boolean", "text"]
        top = max(counts.index, key=lambda k: (counts[k], -order.index(k)))
        if counts.sum() - counts[top] > share * counts.sum():
            continue
        rare = kinds[kinds.notna() & (kinds != top)]
        out.add((c, int(rare.index[0]), rare.iloc[0]))
    return out


def reported_mixed(report: curate.Report) -> set[tuple[str, int, str]]:
    f = found(report, "TB003")
    return {(r.field, int(r.row), json.loads(r.details)["kind"]) for r in f.itertuples(index=False)}


@pytest.fixture(scope="module")
def glyco_unknown(shared: Callable[[str], Path], tmp_path_factory: pytest.TempPathFactory):
    """glycowork's sample as its curators might have exported it: a missing taxon id spelt
    ``unknown`` (447 of 4,900 cells, 9%) and a missing reference ``0`` (a number among URLs)."""
    df = read_text(shared(GLYCO))
    df["taxon_id"] = df["taxon_id"].fillna("unknown")
    df["ref"] = df["ref"].fillna("0")
    path = tmp_path_factory.mktemp("glyco") / "glyco_unknown.csv"
    df.to_csv(path, index=False)
    return df, path


@pytest.mark.parametrize("share", [0.05, 0.1, 0.5, 1.0])
def test_mixed_types_equal_a_kind_count_on_real_tables(glyco_unknown, share: float) -> None:
    df, path = glyco_unknown
    report = curate.audit("table", path, mixed_share=share, select=["TB003"])
    expected = expected_mixed(df, share)
    assert reported_mixed(report) == expected
    if share >= 0.1:  # 447 unknown taxon ids in 4,900 cells: 9.1%
        assert ("taxon_id", int(df.index[df["taxon_id"] == "unknown"][0]), "text") in expected


def test_mixed_types_kind_counts_are_the_columns(glyco_unknown) -> None:
    df, path = glyco_unknown
    report = curate.audit("table", path, select=["TB003"])
    (d,) = [d for d in details(report, "TB003") if d["value"] == "unknown"]
    assert d["kinds"] == df["taxon_id"].map(kind).value_counts().to_dict()
    assert d["dominant"] == "number"


@pytest.mark.parametrize("rel", [GLYCO, MUSIC, SPECIES, SUGARBASE])
def test_real_tables_as_published_have_no_mixed_columns(
    shared: Callable[[str], Path], rel: str
) -> None:
    """Every column of the four real tables is of one kind: even with every mix reported
    (``mixed_share=1``) the rule and the count agree, on nothing."""
    path = shared(rel)
    report = curate.audit("table", path, mixed_share=1.0, select=["TB003"])
    assert reported_mixed(report) == expected_mixed(read_text(path), 1.0)


def test_mixed_types_hand_made(tmp_path: Path) -> None:
    x = [str(i) for i in range(19)] + ["n/a"]
    half = [str(i) for i in range(10)] + [f"w{i}" for i in range(10)]
    flag = ["true"] * 19 + ["1"]
    pl.DataFrame({"x": x, "half": half, "flag": flag}).write_csv(tmp_path / "t.csv")
    report = curate.audit("table", tmp_path / "t.csv", select=["TB003"])
    assert reported_mixed(report) == {("x", 19, "text"), ("flag", 19, "number")}
    msg = found(report, "TB003").set_index("field").loc["x", "message"]
    assert "19" in msg and "'n/a'" in msg

    # JSON: a number among strings is text read from the file, a mix to report
    lines = [json.dumps({"x": i}) for i in range(19)] + [json.dumps({"x": "n/a"})]
    (tmp_path / "t.jsonl").write_text("\n".join(lines) + "\n")
    report = curate.audit("table", tmp_path / "t.jsonl", select=["TB003"])
    assert reported_mixed(report) == {("x", 19, "text")}


def test_typed_inputs_have_no_mixed_types(tmp_path: Path) -> None:
    """parquet (and a frame in memory) types its columns itself: a string column holding
    ``"1"`` … ``"n/a"`` is a string column, nothing to report."""
    x = [str(i) for i in range(19)] + ["n/a"]
    frame = pl.DataFrame({"x": x})
    frame.write_parquet(tmp_path / "t.parquet")
    for given in (tmp_path / "t.parquet", frame):
        report = curate.audit("table", given, select=["TB003"])
        assert "TB003" in report.rules_run
        assert found(report, "TB003").empty


# ----------------------------------------------------------------- TB101 single-value-column


def expected_single(df: pd.DataFrame, split: str | None = None) -> dict[str, int]:
    """Column → how many rows have its one value (0: no value at all)."""
    out = {}
    for c in df.columns:
        if c == split:
            continue
        present = df[c].dropna()
        if present.empty:
            out[c] = 0
        elif present.nunique() == 1:
            out[c] = len(present)
    return out


def reported_single(report: curate.Report) -> dict[str, int]:
    f = found(report, "TB101")
    assert f["row"].isna().all()
    return {r.field: json.loads(r.details)["rows"] for r in f.itertuples(index=False)}


def test_single_value_columns_equal_pandas_on_real_tables(shared: Callable[[str], Path]) -> None:
    path = shared(SPECIES)
    report = curate.audit("table", path, select=["TB101"])
    expected = expected_single(read_text(path))
    assert reported_single(report) == expected
    assert expected == {"ref": 4}  # one paper cited, on 4 of 13,209 rows

    for rel in (GLYCO, MUSIC, SUGARBASE):
        path = shared(rel)
        report = curate.audit("table", path, select=["TB101"])
        assert reported_single(report) == expected_single(read_text(path))


def test_single_value_columns_of_a_real_subset(shared: Callable[[str], Path]) -> None:
    """MusicCaps' eval captions of one annotator, as a pandas frame: author and eval flag are
    constant there, and so is whatever else pandas finds constant."""
    df = pd.read_csv(shared(MUSIC))
    sub = df[(df["author_id"] == 4) & df["is_audioset_eval"]].reset_index(drop=True)
    report = curate.audit("table", sub, select=["TB101"])
    expected = expected_single(sub)
    assert {"author_id", "is_audioset_eval"} <= set(expected)
    assert reported_single(report) == expected


def test_single_value_hand_made(tmp_path: Path) -> None:
    df = pl.DataFrame(
        {
            "text": ["a", "b", "c", "d"],
            "lang": ["en", "en", None, "en"],
            "note": [None, None, None, None],
            "split": ["train"] * 4,
            "ok": [1, 2, 3, 4],
        },
        schema_overrides={"note": pl.String},
    )
    report = curate.audit("table", df, split="split", select=["TB101"])
    f = found(report, "TB101").set_index("field")
    assert set(f.index) == {"lang", "note"}  # the split column is never reported
    assert "no value at all" in f.loc["note", "message"]
    assert "'en'" in f.loc["lang", "message"] and "1 empty" in f.loc["lang", "message"]
    assert f.loc["lang", "record"] == "column 'lang'"
    # one valid row: every column has one value, which says nothing
    assert found(curate.audit("table", df.head(1), select=["TB101"]), "TB101").empty


# ----------------------------------------------------------------- TB102 id-label correlation


def natural(v: object) -> tuple:
    """The id order, independently: numbers by value; text by (text without digits, first
    number in it, text)."""
    if not isinstance(v, str):
        return ("", 0, v, "")
    m = re.search(r"\d+", v)
    return (re.sub(r"\d+", "", v), 0 if m else 1, int(m.group()) if m else 0, v)


def order_kappa(ids: pd.Series, y: pd.Series) -> tuple[float, float]:
    pairs = sorted(zip(ids.map(natural), y.astype(str), strict=True))
    labels = [p[1] for p in pairs]
    n = len(labels)
    agree = sum(a == b for a, b in itertools.pairwise(labels))
    pe = float((y.astype(str).value_counts(normalize=True) ** 2).sum())
    if pe >= 1:
        return 0.0, 0.0
    kappa = (agree / (n - 1) - pe) / (1 - pe)
    return kappa, (agree - (n - 1) * pe) / math.sqrt((n - 1) * pe * (1 - pe))


def pattern_lambda(ids: pd.Series, y: pd.Series) -> tuple[float, float]:
    """Leave-one-out commonest label of the id's pattern, as a loop."""
    pattern = ids.astype(str).str.replace(r"\d+", "", regex=True)
    if pattern.nunique() < 2:
        return 0.0, 0.0
    y = y.astype(str)
    counts = y.value_counts()
    majority = sorted(counts.index[counts == counts.max()])[0]
    base = counts.max() / len(y)
    table = pd.crosstab(pattern, y)
    correct = 0
    for p, label in zip(pattern, y, strict=True):
        row = table.loc[p].copy()
        row[label] -= 1
        if row.sum() == 0:
            correct += label == majority
        else:
            correct += row[label] > row.drop(label).max()
    acc = correct / len(y)
    n = len(y)
    return (acc - base) / (1 - base), (correct - n * base) / math.sqrt(n * base * (1 - base))


def expected_leaks(df: pd.DataFrame, idc: str, labels: list[str]) -> set[str]:
    out = set()
    for label in labels:
        d = df[[idc, label]].dropna()
        k, z = order_kappa(d[idc], d[label])
        hit = k >= LEAK_KAPPA and z >= LEAK_Z
        if d[idc].map(lambda v: isinstance(v, str)).all():
            lam, zl = pattern_lambda(d[idc], d[label])
            hit = hit or (lam >= LEAK_KAPPA and zl >= LEAK_Z)
        if hit:
            out.add(label)
    return out


def test_id_label_correlation_equals_the_predictors_on_real_tables(
    shared: Callable[[str], Path],
) -> None:
    """glycowork's row numbers come from a table sorted by species: they predict every rank;
    MusicCaps' YouTube ids predict none of its columns."""
    path = shared(GLYCO)
    labels = ["Kingdom", "Phylum", "Species", "Domain"]
    df = pd.read_csv(path)
    report = curate.audit("table", path, id="glycowork_row", label=labels, select=["TB102"])
    expected = expected_leaks(df, "glycowork_row", labels)
    assert set(found(report, "TB102")["field"]) == expected == set(labels)
    for d in details(report, "TB102"):
        assert d["pattern"] is None  # integer ids have no pattern

    path = shared(MUSIC)
    df = pd.read_csv(path)
    labels = ["is_audioset_eval", "author_id", "is_balanced_subset", "start_s"]
    report = curate.audit("table", path, id="ytid", label=labels, select=["TB102"])
    assert "TB102" in report.rules_run
    assert set(found(report, "TB102")["field"]) == expected_leaks(df, "ytid", labels) == set()


def test_id_label_correlation_scores_are_the_reference(shared: Callable[[str], Path]) -> None:
    """The details' kappa is the reference's, to rounding (the glycowork ranks)."""
    path = shared(GLYCO)
    df = pd.read_csv(path)
    report = curate.audit("table", path, id="glycowork_row", label="Kingdom", select=["TB102"])
    (d,) = details(report, "TB102")
    k, z = order_kappa(df["glycowork_row"], df["Kingdom"])
    assert d["order"]["kappa"] == pytest.approx(k, abs=1e-6)
    assert d["order"]["z"] == pytest.approx(z, abs=1e-5)


def test_id_label_correlation_hand_made() -> None:
    ids = [f"neg_{i:03d}" for i in range(20)] + [f"pos_{i:03d}" for i in range(20)]
    y = [0] * 20 + [1] * 20
    df = pl.DataFrame({"id": ids, "y": y})
    report = curate.audit("table", df, id="id", label="y", select=["TB102"])
    (d,) = details(report, "TB102")
    assert d["pattern"]["reduction"] == 1.0 and d["order"]["kappa"] > 0.9
    lam, _ = pattern_lambda(pd.Series(ids), pd.Series(y))
    assert lam == 1.0

    # the same labels, ids drawn at random: nothing
    import random

    rng = random.Random(3)
    shuffled = df.with_columns(pl.Series("id", rng.sample(ids, len(ids))).str.replace("pos", "neg"))
    assert found(curate.audit("table", shuffled, id="id", label="y"), "TB102").empty

    # six rows in perfect order: kappa 0.6 but not beyond what chance gives six rows
    small = pl.DataFrame({"id": list(range(6)), "y": [0, 0, 0, 1, 1, 1]})
    assert found(curate.audit("table", small, id="id", label="y"), "TB102").empty
    assert order_kappa(pd.Series(range(6)), pd.Series([0, 0, 0, 1, 1, 1]))[0] >= LEAK_KAPPA


def test_id_label_correlation_needs_an_id(shared: Callable[[str], Path]) -> None:
    report = curate.audit("table", shared(GLYCO), label="Kingdom", select=["TB102"])
    assert "TB102" not in report.rules_run


# ----------------------------------------------------------------- TB2xx label distribution


@pytest.fixture(scope="module")
def glyco_report(shared: Callable[[str], Path]) -> tuple[pd.DataFrame, curate.Report]:
    path = shared(GLYCO)
    report = curate.audit(
        "table",
        path,
        id="glycowork_row",
        label=["Kingdom", "Phylum", "Species"],
        split="split",
        text="glycan",
        select=["TB201", "TB202", "TB203"],
    )
    return read_text(path), report


@pytest.fixture(scope="module")
def music_report(shared: Callable[[str], Path]) -> tuple[pd.DataFrame, curate.Report]:
    """MusicCaps with AudioSet's eval flag read as the split and three labels of three types
    (the annotator, an integer; the balanced-subset flag, a boolean; GPT's musicality, text
    with 9 empty cells: TB002's rows, which take no part in any label rule)."""
    path = shared(MUSIC)
    labels = ["author_id", "is_balanced_subset", "oai_musicality"]
    report = curate.audit(
        "table",
        path,
        id="ytid",
        label=labels,
        split="is_audioset_eval",
        split_map="True=test,False=train",
        select=["TB201", "TB202", "TB203"],
    )
    df = pd.read_csv(path)
    df["split"] = df["is_audioset_eval"].map({True: "test", False: "train"})
    # a row with an empty declared cell is TB002's and takes no part in the label rules
    declared = df[["ytid", *labels]]
    empty = declared.isna() | declared.astype(str).apply(lambda c: c.str.strip() == "")
    return df[~empty.any(axis=1)], report


LABEL_CASES = [
    ("glyco_report", ["Kingdom", "Phylum", "Species"]),
    ("music_report", ["author_id", "is_balanced_subset", "oai_musicality"]),
]


def keyed(report: curate.Report, code: str) -> set[tuple]:
    f = found(report, code)
    return {
        (r.field, json.loads(r.details)["class"], None if pd.isna(r.row) else int(r.row))
        for r in f.itertuples(index=False)
    }


@pytest.mark.parametrize(("case", "labels"), LABEL_CASES)
def test_singleton_classes_equal_value_counts(request, case: str, labels: list[str]) -> None:
    df, report = request.getfixturevalue(case)
    expected = set()
    for label in labels:
        counts = df[label].value_counts()
        for cls in counts.index[counts == 1]:
            row = df.index[df[label] == cls][0]
            expected.add((label, _json(cls), int(row)))
    assert keyed(report, "TB201") == expected
    if case == "glyco_report":
        assert len(expected) > 500  # most of the 1,298 species have one row


@pytest.mark.parametrize(("case", "labels"), LABEL_CASES)
def test_classes_absent_from_train_equal_a_set_difference(
    request, case: str, labels: list[str]
) -> None:
    df, report = request.getfixturevalue(case)
    expected = set()
    for label in labels:
        train = set(df.loc[df["split"] == "train", label])
        rest = df[(df["split"] != "train") & ~df[label].isin(train)]
        for cls, group in rest.groupby(label, sort=False):
            expected.add((label, _json(cls), int(group.index.min())))
    assert keyed(report, "TB202") == expected
    if case == "glyco_report":
        assert expected  # species seen only in validation or test
    by_class = {
        (r.field, json.loads(r.details)["class"]): json.loads(r.details)["rows"]
        for r in found(report, "TB202").itertuples(index=False)
    }
    for (label, cls), rows in by_class.items():
        assert rows == int(((df[label].map(_json) == cls) & (df["split"] != "train")).sum())


@pytest.mark.parametrize(("case", "labels"), LABEL_CASES)
@pytest.mark.parametrize("share", [0.1, 0.5])
def test_class_imbalance_equals_shares(request, case: str, labels: list[str], share: float) -> None:
    df, report = request.getfixturevalue(case)
    if share != 0.1:
        report = curate.audit(
            "table", report.inputs[0].path, imbalance=share, select=["TB203"], **_options(case)
        )
    expected = set()
    for label in labels:
        p = df[label].value_counts(normalize=True)
        for cls in p.index[p < share / len(p)]:
            expected.add((label, _json(cls), None))
    assert keyed(report, "TB203") == expected
    assert expected  # every case has a rare class (Kingdom's Amoebozoa, annotator 5)


def _json(v: object) -> object:
    """A class as the details' JSON holds it (numpy scalars to Python)."""
    return v.item() if hasattr(v, "item") else v


def _options(case: str) -> dict:
    if case == "glyco_report":
        return dict(
            id="glycowork_row",
            label=["Kingdom", "Phylum", "Species"],
            split="split",
            text="glycan",
        )
    return dict(
        id="ytid",
        label=["author_id", "is_balanced_subset", "oai_musicality"],
        split="is_audioset_eval",
        split_map="True=test,False=train",
    )


def test_distribution_hand_made() -> None:
    df = pl.DataFrame(
        {
            "y": ["a"] * 30 + ["b"] * 30 + ["c"] * 2 + ["d"],
            "split": ["train"] * 29 + ["test"] + ["train"] * 29 + ["test"] + ["test"] * 3,
        }
    )
    report = curate.audit("table", df, label="y", split="split")
    assert keyed(report, "TB201") == {("y", "d", 62)}
    assert keyed(report, "TB202") == {("y", "c", 60), ("y", "d", 62)}
    # an even share is 1/4: d's 1 of 63 rows is under 0.1 of it, c's 2 (3.2%) are not
    assert keyed(report, "TB203") == {("y", "d", None)}
    assert found(report, "TB202")["severity"].eq("error").all()

    # balanced, every class in train: nothing
    even = pl.DataFrame({"y": [True, False] * 10, "split": ["train"] * 16 + ["test"] * 4})
    report = curate.audit("table", even, label="y", split="split")
    assert not {"TB201", "TB202", "TB203"} & set(report.findings["rule"])
    # no training rows at all: TB202 has nothing to compare with
    only_test = df.with_columns(pl.lit("test").alias("split"))
    assert found(curate.audit("table", only_test, label="y", split="split"), "TB202").empty
    # rows without a split are published in train: a class with one there is in train
    unsplit = df.with_columns(
        pl.when(pl.int_range(pl.len()) == 60).then(None).otherwise(pl.col("split")).alias("split")
    )
    report = curate.audit("table", unsplit, label="y", split="split", select=["TB202"])
    assert keyed(report, "TB202") == {("y", "d", 62)}


def test_distribution_rules_need_a_label(shared: Callable[[str], Path]) -> None:
    report = curate.audit("table", shared(GLYCO), split="split")
    assert not {"TB102", "TB201", "TB202", "TB203"} & set(report.rules_run)
    assert {"TB003", "TB101"} <= set(report.rules_run)


def test_list_labels_are_classes_by_their_json(tmp_path: Path) -> None:
    """A label column of lists (multi-label JSON) is compared by each list's JSON text: no
    internal error, and the one list seen once is a singleton."""
    rows = [{"id": f"r{i}", "y": ["x"] if i % 2 else ["x", "z"]} for i in range(9)]
    rows.append({"id": "r9", "y": ["q"]})
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = curate.audit("table", tmp_path / "t.jsonl", id="id", label="y")
    assert {"TB102", "TB201", "TB203"} <= set(report.rules_run)
    f = found(report, "TB201")
    assert [(r.field, json.loads(r.details)["class"], r.row) for r in f.itertuples()] == [
        ("y", ["q"], 9)
    ]
