"""The deepfake family: schema, rules at the right rows, fixes, export, the real MusicCaps
manifest, and the key tables the media scan and ``curate overlap`` build on."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from deepfake_data import clean_manifest, defective_manifest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate.cli.main import main
from curate.families import get_family
from curate.schemas.deepfake import FIELDS, DeepfakeRow, language_status
from curate.schemas.deepfake_tables import (
    content_keys,
    content_table,
    generator_sets,
    identity_keys,
)

FAMILY = get_family("deepfake")
MUSICCAPS = "data/deepfake/musiccaps-public-openai.csv"
MUSICCAPS_ARGS = (
    "--column", "sample_id=ytid",
    "--column", "split=is_audioset_eval",
    "--split-map", "True=test",
    "--split-map", "False=train",
    "--value", "label=real",
    "--value", "modality=audio",
)  # fmt: skip


def run(capsys, *argv: Any) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def write(frame: pl.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        frame.write_csv(path)
    elif path.suffix == ".jsonl":
        frame.write_ndjson(path)
    else:
        frame.write_parquet(path)
    return path


def found(report) -> set[tuple[str, int]]:
    # DF2xx read the media files, which these generated manifests only name: their rules are
    # tested on real files in tests/test_deepfake_files.py
    f = report.findings.filter(~pl.col("rule").str.starts_with("DF2"))
    return set(zip(f["rule"].to_list(), f["row"].to_list(), strict=True))


# --------------------------------------------------------------------------- rules at rows


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_every_planted_defect_is_found_at_its_row_and_nothing_else(tmp_path, suffix):
    m = defective_manifest()
    data = FAMILY.load([write(m.frame(), tmp_path / f"m{suffix}")])
    report = FAMILY.audit(data)
    assert found(report) == m.expected
    # every finding names its file, row and sample id
    f = report.findings.filter(pl.col("rule") == "DF303").row(0, named=True)
    assert f["input"].endswith(f"m{suffix}")
    assert f["record"] == m.rows[f["input_row"]]["sample_id"]
    assert json.loads(f["details"])["duplicate_of"] == m.rows[f["input_row"]]["sample_id"].replace(
        "S049", "S001"
    )


def test_clean_manifest_has_no_findings(tmp_path):
    m = clean_manifest()
    # the manifest names files it does not ship: check it alone (DF2xx: test_deepfake_files.py)
    report = FAMILY.audit(FAMILY.load([write(m.frame(), tmp_path / "m.csv")], no_files=True))
    assert report.findings.is_empty()
    assert report.stats["splits"] == {"test": 72, "train": 216, "validation": 72}


def test_identity_leak_counts_face_swap_sources_and_targets(tmp_path):
    m = clean_manifest()
    rows = m.rows
    swap = next(i for i, r in enumerate(rows) if r["split"] == "test" and r["target_id"])
    train_subject = next(r["subject_id"] for r in rows if r["split"] == "train")
    rows[swap]["target_id"] = train_subject  # the target's head is a training subject
    report = FAMILY.audit(FAMILY.load([write(m.frame(), tmp_path / "m.csv")]))
    hit = report.findings.filter(pl.col("rule") == "DF401")
    assert hit["row"].to_list() == [swap]
    assert hit["field"].to_list() == ["target_id"]
    assert json.loads(hit["details"][0])["identity"] == train_subject


def test_demographic_imbalance_names_the_groups_and_ratio(tmp_path):
    m = clean_manifest()
    # test split: leave out 8 of the 12 female/dark/fake samples → 4 against 12 elsewhere
    cell = [
        i
        for i, r in enumerate(m.rows)
        if (r["split"], r["sex"], r["skin_tone"], r["label"]) == ("test", "female", "dark", "fake")
    ]
    assert len(cell) == 6
    keep = [r for i, r in enumerate(m.rows) if i not in cell[:4]]
    frame = pl.DataFrame(keep, infer_schema_length=None)
    report = FAMILY.audit(FAMILY.load([write(frame, tmp_path / "m.csv")]))
    hit = report.findings.filter(pl.col("rule") == "DF402")
    assert hit["record"].to_list() == ["test"]
    d = json.loads(hit["details"][0])
    assert d["ratio"] == 3.0  # 6 samples in the largest group, 2 left in this one
    assert d["smallest"]["n"] == 2 and d["smallest"]["label"] == "fake"
    assert d["groups"] == 12  # 2 sexes × 3 tones × 2 labels
    # the threshold is an option
    report = FAMILY.audit(FAMILY.load([tmp_path / "m.csv"], max_imbalance=3.0))
    assert report.findings.filter(pl.col("rule") == "DF402").is_empty()


def test_schema_errors_name_file_row_id_and_field(tmp_path, capsys):
    p = tmp_path / "bad.jsonl"
    rows = [
        {"sample_id": "a1", "modality": "video", "label": "fake", "sha256": "AB"},
        {"sample_id": "", "modality": "vid", "label": "real", "width": "-3", "fps": "abc"},
        {"sample_id": "a3", "modality": "audio", "label": "spoof", "split": "holdout",
         "sample_rate": 16000.5, "generator": ["x"]},
        {"sample_id": "a4", "modality": "Audio", "label": "bonafide", "av_label": "ra_rv"},
    ]  # fmt: skip
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = FAMILY.audit(FAMILY.load([p]))
    got = sorted(report.findings.select("rule", "input_row", "record", "field").iter_rows())
    assert got == [
        ("DF001", 0, "a1", "sha256"),
        ("DF001", 1, "#1", "fps"),
        ("DF001", 1, "#1", "modality"),
        ("DF001", 1, "#1", "sample_id"),
        ("DF001", 1, "#1", "width"),
        ("DF001", 2, "a3", "generator"),
        ("DF001", 2, "a3", "sample_rate"),
        ("DF001", 2, "a3", "split"),
    ]
    assert set(report.findings["input"].to_list()) == {str(p)}
    # the usual spellings are read as the canonical values (row a4 is valid)
    data = FAMILY.load([p])
    a4 = data.rows.filter(pl.col("record") == "a4").row(0, named=True)
    assert (a4["modality"], a4["label"], a4["av_label"]) == ("audio", "real", "RA-RV")
    rc, out, err = run(capsys, "validate", "deepfake", p)
    assert rc == 1 and "Traceback" not in out + err


def test_language_codes():
    assert language_status("en") == (True, None)
    assert language_status("yue") == (True, None)  # ISO 639-3 only
    assert language_status("fre") == (True, None)  # ISO 639-2/B
    assert language_status("pt-BR") == (True, None)
    assert language_status("EN") == (False, "en")
    assert language_status("English") == (False, "en")
    assert language_status("xx") == (False, None)


# --------------------------------------------------------------------------- MusicCaps


def test_musiccaps_real_manifest(shared, capsys, tmp_path):
    path = shared(MUSICCAPS)
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    ids = [r["ytid"] for r in rows]
    evals = sum(r["is_audioset_eval"] == "True" for r in rows)
    assert len(rows) == 5521 and len(set(ids)) == len(ids)  # checked by hand: ytid is unique
    data = FAMILY.load([path], columns={"sample_id": "ytid", "split": "is_audioset_eval"},
                       split_map={"True": "test", "False": "train"},
                       values={"label": "real", "modality": "audio"})  # fmt: skip
    report = FAMILY.audit(data)
    # all real audio with unique ids and no generator, hash, subject or metadata columns:
    # nothing for any rule to say
    assert report.findings.is_empty()
    assert report.stats["splits"] == {"test": evals, "train": len(rows) - evals}
    assert report.stats["label"] == {"real": 5521}
    # the CLI with the same mapping exits 0; an export re-reads with no mapping at all
    rc, _out, err = run(capsys, "audit", "deepfake", path, *MUSICCAPS_ARGS)
    assert rc == 0, err
    rc, _out, err = run(
        capsys, "export", "deepfake", path, *MUSICCAPS_ARGS, "--out", tmp_path / "hf"
    )
    assert rc == 0, err
    again = FAMILY.load([tmp_path / "hf"])
    assert again.rows.height == 5521
    assert sorted(again.rows["record"].to_list()) == sorted(ids)


def test_a_repeated_id_differing_only_in_an_unmapped_column_is_not_dropped(
    shared, capsys, tmp_path
):
    """Found by a new-user review: DF301 called a repeated id "an identical row" when every
    mapped field was equal, and the safe fix dropped it, though the row's own ``caption`` and
    ``author_id`` (published as read) differed. Only a row equal in every column is dropped."""
    real = pl.read_csv(shared(MUSICCAPS), infer_schema_length=0).head(40)
    twice = real.head(2).with_columns(pl.col("author_id") + "0")  # another author, same clip
    same = real.slice(2, 1)  # listed twice as it is
    path = write(pl.concat([real, twice, same]), tmp_path / "m.csv")
    report = FAMILY.audit(
        FAMILY.load(
            [path],
            columns={"sample_id": "ytid", "split": "is_audioset_eval"},
            split_map={"True": "test", "False": "train"},
            values={"label": "real", "modality": "audio"},
        )
    )
    hits = report.findings.filter(pl.col("rule") == "DF301").sort("row")
    assert hits["row"].to_list() == [40, 41, 42]
    assert [json.loads(d)["identical"] for d in hits["details"]] == [False, False, True]
    assert hits["fix"].is_null().to_list() == [True, True, False]
    rc, _out, err = run(capsys, "fix", "deepfake", path, *MUSICCAPS_ARGS, "--out", tmp_path / "f")
    assert rc in (0, 1), err
    kept = pl.read_parquet(tmp_path / "f" / "data" / "*.parquet")
    assert kept.height == 42  # the identical listing dropped, both authors' rows kept
    for ytid in twice["ytid"]:
        assert kept.filter(pl.col("sample_id") == ytid).height == 2


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (
            ("--split-map", "True=train"),
            "--split-map: 'True' is given twice, as 'test' and as 'train'",
        ),
        (("--column", "sample_id=author_id"), "--column: 'sample_id' is given twice"),
        (("--value", "label=fake"), "--value: 'label' is given twice, as 'real' and as 'fake'"),
    ],
)
def test_a_key_given_twice_with_two_values_is_exit_2(shared, capsys, flags, named):
    """Found by a new-user review: the last of two values silently won, so a second
    ``--split-map True=train`` made every test clip train (no leak could be found, exit 0)."""
    rc, _out, err = run(capsys, "audit", "deepfake", shared(MUSICCAPS), *MUSICCAPS_ARGS, *flags)
    assert rc == 2 and named in err and len(err.strip().splitlines()) == 1, err
    # the same pair twice says one thing: accepted
    rc, _out, err = run(
        capsys, "audit", "deepfake", shared(MUSICCAPS), *MUSICCAPS_ARGS, "--value", "label=real"
    )
    assert rc == 0, err


def test_a_split_map_value_no_row_holds_is_warned_of(shared, capsys):
    """A typo (``Flase=train``) mapped nothing and said nothing: the table family warned of it
    already (found by a new-user review)."""
    args = [a.replace("False=", "Flase=") for a in MUSICCAPS_ARGS]
    rc, _out, err = run(capsys, "audit", "deepfake", shared(MUSICCAPS), *args)
    assert "--split-map: no row's is_audioset_eval is 'Flase' (the values: 'false', 'true')" in err
    assert rc == 1  # the unmapped False rows: unknown splits
    rc, _out, err = run(capsys, "audit", "deepfake", shared(MUSICCAPS), *MUSICCAPS_ARGS)
    assert rc == 0 and "warning" not in err, err


def test_bad_column_mapping_is_one_line_with_a_hint(shared, capsys):
    rc, _out, err = run(capsys, "audit", "deepfake", shared(MUSICCAPS), "--column", "sample_id=ytd")
    assert rc == 2
    assert err.count("\n") == 1 and "did you mean ytid?" in err
    rc, _out, err = run(capsys, "audit", "deepfake", shared(MUSICCAPS))
    assert rc == 2 and "--column sample_id=NAME" in err and err.count("\n") == 1
    rc, _out, err = run(capsys, "audit", "deepfake", shared(MUSICCAPS), "--column", "labl=x")
    assert rc == 2 and "did you mean label?" in err


# --------------------------------------------------------------------------- fixes and export


def test_fix_applies_safe_fixes_and_leaves_the_leak_to_unsafe(tmp_path, capsys):
    m = defective_manifest()
    p = write(m.frame(), tmp_path / "m.csv")
    rc, _out, err = run(capsys, "fix", "deepfake", p, "--out", tmp_path / "safe")
    assert rc == 0, err
    after = json.loads((tmp_path / "safe" / "audit.after.json").read_text())
    rules = {f["rule"] for f in after["findings"]}
    assert {"DF301", "DF104", "DF304"}.isdisjoint(rules)  # dropped or filled
    assert "DF303" in rules  # unsafe: the test copy stays without --unsafe-fixes
    log = [json.loads(x) for x in (tmp_path / "safe" / "changelog.jsonl").read_text().splitlines()]
    filled = [c for c in log if c["rule"] == "DF104"]
    assert [(c["field"], c["old"], c["new"]) for c in filled] == [("av_label", None, "RA-RV")]
    langs = sorted((c["old"], c["new"]) for c in log if c["rule"] == "DF403")
    assert langs == [("EN", "en"), ("English", "en")]  # "xx" has no fix
    rc, _out, err = run(capsys, "fix", "deepfake", p, "--out", tmp_path / "all", "--unsafe-fixes")
    assert rc == 0, err
    after = json.loads((tmp_path / "all" / "audit.after.json").read_text())
    assert "DF303" not in {f["rule"] for f in after["findings"]}
    leak = m.rows[next(r for rule, r in m.expected if rule == "DF303")]["sample_id"]
    dropped = [c for c in (tmp_path / "all" / "changelog.jsonl").read_text().splitlines()
               if '"DF303"' in c]  # fmt: skip
    assert len(dropped) == 1 and json.loads(dropped[0])["record"] == leak
    # the label conflict has no fix: both rows are still there
    assert "DF305" in {f["rule"] for f in after["findings"]}
    # the re-audit's own media folder and cache (machine paths) are in no published file: the
    # card's options line named ~/.cache/curate/media/… and curate card check warned of it
    # (found by a new-user review)
    assert {"cache", "media_root"}.isdisjoint(after["options"])
    rc, out, err = run(capsys, "card", "check", tmp_path / "all")
    assert rc == 0 and ".cache" not in out + err, out + err


def test_export_loads_with_datasets(tmp_path, capsys):
    import datasets

    datasets.disable_progress_bars()
    m = clean_manifest()
    p = write(m.frame(), tmp_path / "m.jsonl")
    rc, _out, err = run(capsys, "export", "deepfake", p, "--out", tmp_path / "hf")
    assert rc == 0, err
    ds = datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "cache"))
    assert {k: len(v) for k, v in ds.items()} == {"train": 216, "validation": 72, "test": 72}
    row = ds["train"][0]
    assert row["sample_id"] == m.rows[0]["sample_id"] and row["width"] == 1280
    assert "split" not in ds["train"].column_names  # the folder layout is the split


# --------------------------------------------------------------------------- round trip

_RENAMES = st.dictionaries(
    st.sampled_from([f for f in FIELDS if f != "split"]),
    st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_ ", min_size=1, max_size=12),
    max_size=6,
)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(renames=_RENAMES, suffix=st.sampled_from([".csv", ".jsonl", ".parquet"]))
def test_column_mapping_round_trip(tmp_path_factory, renames, suffix):
    """Any renaming of the manifest's columns, read back with ``--column``, exports the same
    rows under the canonical names: load → export → load_dataset → validate each row."""
    import datasets

    datasets.disable_progress_bars()
    names = {f: f"x_{v.strip() or 'c'}_{i}" for i, (f, v) in enumerate(renames.items())}
    d = tmp_path_factory.mktemp("rt")
    m = clean_manifest()
    sample = m.rows[::9]
    frame = pl.DataFrame(sample, infer_schema_length=None).rename(names)
    p = write(frame, d / f"m{suffix}")
    from curate.api import export

    export("deepfake", [p], d / "hf", columns=names)
    ds = datasets.load_dataset(str(d / "hf"), cache_dir=str(d / "cache"))
    back = {r["sample_id"]: r for split in ds.values() for r in split}
    assert len(back) == len(sample)
    for orig in sample:
        got = back[orig["sample_id"]]
        model = DeepfakeRow.model_validate(got)
        for f in FIELDS:
            if f == "split" or orig[f] is None:
                continue
            assert getattr(model, f) == orig[f] or str(getattr(model, f)) == str(orig[f]), f


# --------------------------------------------------------------------------- the seams


def test_computed_hashes_win_over_the_manifest(tmp_path):
    """The media scan's seam: hashes of the files replace the manifest's, so a leak the
    manifest's (wrong) hashes hide is found from the bytes."""
    m = clean_manifest()
    data = FAMILY.load([write(m.frame(), tmp_path / "m.csv")])
    assert FAMILY.audit(data, select=["DF3"]).findings.is_empty()
    train = next(i for i, r in enumerate(m.rows) if r["split"] == "train")
    test = next(i for i, r in enumerate(m.rows) if r["split"] == "test" and r["label"] == "real")
    same = "ab" * 32
    data.computed_hashes = pl.DataFrame({"row": [train, test], "sha256": [same, same]})
    data.cache.clear()
    report = FAMILY.audit(data, select=["DF303"])
    assert report.findings["row"].to_list() == [test]
    assert json.loads(report.findings["details"][0])["hash_source"] == "computed"
    table = content_table(data)
    assert table.filter(pl.col("hash_source") == "computed").height == 2


def test_overlap_key_tables(tmp_path):
    m = defective_manifest()
    data = FAMILY.load([write(m.frame(), tmp_path / "m.csv")])
    keys = content_keys(data)
    assert set(keys.columns) == {"split", "set", "source_dataset", "key"}
    train = set(keys.filter(pl.col("split") == "train")["key"].to_list())
    test = set(keys.filter(pl.col("split") == "test")["key"].to_list())
    assert len(train & test) == 1  # the planted leak
    ids = identity_keys(data)
    assert len(set(ids.filter(pl.col("split") == "train")["key"].to_list())
               & set(ids.filter(pl.col("split") == "test")["key"].to_list())) == 1  # fmt: skip
    gens = dict(generator_sets(data).iter_rows())
    assert gens["C"] == ["F5-TTS", "OpenVoice", "XTTS-v2"]
    assert "SimSwap" in gens["D"]  # the real row of DF101 names it


def test_value_fills_only_empty_cells_and_split_map_ignores_case(tmp_path, shared):
    """``--value label=real`` never replaces a label the manifest states (it fills empty ones),
    and ``--split-map True=test`` matches a boolean column whatever its spelling (CSV True,
    parquet/JSON true) — the real MusicCaps flags as parquet."""
    mc = pl.read_csv(shared("data/deepfake/musiccaps-public-openai.csv")).head(300)
    assert mc.schema["is_audioset_eval"] == pl.Boolean
    labels = ["fake" if i % 3 == 0 else None for i in range(mc.height)]
    mc = mc.with_columns(pl.Series("label", labels, dtype=pl.String))
    mc.write_parquet(tmp_path / "mc.parquet")
    opts = dict(
        columns={"sample_id": "ytid", "split": "is_audioset_eval"},
        values={"label": "real", "modality": "audio"},
        split_map={"True": "test", "False": "train"},
        no_files=True,
    )
    data = FAMILY.load([str(tmp_path / "mc.parquet")], **opts)
    got = data.rows["label"].cast(pl.String).to_list()
    assert got == [x or "real" for x in labels]
    want = ["test" if v else "train" for v in mc["is_audioset_eval"].to_list()]
    assert data.rows["split"].cast(pl.String).to_list() == want
    assert data.schema_findings.height == 0
