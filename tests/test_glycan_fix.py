"""``curate fix glycan`` on the real glycowork tables.

What the issue asks of a remastered dataset: it loads with ``datasets.load_dataset``, re-audits
clean of leakage and hierarchy errors, keeps the split proportions, lets no glycan cross splits,
accounts for every change in ``changelog.jsonl``, leaves its input alone, and is reproducible.
The strongest check is a replay: applying the changelog, entry by entry, to the input must give
exactly the output (so nothing changed that the changelog does not say, and every ``old`` value
is what the input held). Expected values are recomputed from the CSV files with polars.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import datasets
import polars as pl
import pytest

from curate.cli.main import main
from curate.schemas.iupac import IUPACError, canonical_key

LEVELS = ["Species", "Genus", "Family", "Order", "Class", "Phylum", "Kingdom", "Domain"]
PLACEHOLDERS = ["", "undetermined", "unknown", "unclassified", "none", "na", "n/a", "nan",
                "null", "-", "[]"]  # fmt: skip
SPLITS = ("train", "validation", "test")
#: Rules whose findings `curate fix` claims to remove.
FIXED_RULES = {"GL201", "GL202", "GL203", "GL301", "GL303", "GL304", "GL401", "GL402", "GL403"}
CHANGE_RULES = {"GL201", "GL202", "GL203", "GL301", "GL303", "GL304", "GL401"}
#: Rules whose rows fix drops as invalid (logged whole, as read).
INVALID_RULES = {"GL001", "GL101", "GL102"}


# --------------------------------------------------------------------------- helpers


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def key_or_none(s: str | None) -> str | None:
    if s is None:
        return None
    try:
        return canonical_key(s)
    except IUPACError:
        return None


def clean(e: pl.Expr) -> pl.Expr:
    placeholder = e.str.strip_chars().str.to_lowercase().is_in(PLACEHOLDERS)
    return pl.when(placeholder).then(None).otherwise(e.str.strip_chars())


def cli(*argv: Any) -> int:
    return main([str(a) for a in argv])


def fix(src: Path, out: Path, *extra: Any) -> dict[str, Any]:
    before = sha256(src)
    rc = cli("fix", "glycan", src, "--out", out, *extra)
    assert rc == 0
    assert sha256(src) == before, "the input file was modified"
    return {
        "out": out,
        "log": [json.loads(line) for line in (out / "changelog.jsonl").read_text().splitlines()],
        "splits": load(out),
    }


def load(out: Path) -> dict[str, pl.DataFrame]:
    """The output through the Hugging Face loader, as users will read it."""
    ds = datasets.load_dataset(str(out), cache_dir=str(out.parent / f".hf-cache-{out.name}"))
    return {name: pl.from_arrow(ds[name].data.table) for name in ds}


def everything(splits: dict[str, pl.DataFrame]) -> pl.DataFrame:
    return pl.concat([df.with_columns(pl.lit(s).alias("__split")) for s, df in splits.items()])


def reaudit(out: Path, capsys) -> dict[str, Any]:
    capsys.readouterr()
    rc = cli("audit", "glycan", out, "--format", "json", "--fail-on", "never")
    text, err = capsys.readouterr()
    assert rc == 0 and "Traceback" not in err
    return json.loads(text)


def replay(src: pl.DataFrame, records: list[str], log: list[dict[str, Any]]) -> pl.DataFrame:
    """Apply the changelog to the input; every ``old`` must be what the row holds."""
    rows = [dict(r) for r in src.iter_rows(named=True)]
    at = {rec: i for i, rec in enumerate(records)}
    assert len(at) == len(rows), "records must name rows uniquely"
    dropped = set()
    for c in log:
        assert c["rule"] in CHANGE_RULES | INVALID_RULES and c["reason"], c
        i = at[c["record"]]
        if c["field"] == "":
            assert c["rule"] in {"GL304"} | INVALID_RULES and c["new"] is None
            if c["rule"] in INVALID_RULES:  # logged as read: without a split column fix adds
                assert set(rows[i]) - set(c["old"]) <= {"split"}
                assert c["old"] == {k: rows[i][k] for k in c["old"]}, "logged as read"
            else:
                assert c["old"] == rows[i], "a dropped row is logged as it was when dropped"
            dropped.add(i)
            continue
        assert i not in dropped
        assert rows[i].get(c["field"]) == c["old"], c
        rows[i][c["field"]] = c["new"]
    kept = [r for i, r in enumerate(rows) if i not in dropped]
    return pl.DataFrame(kept, schema={k: pl.String for k in kept[0]})


def assert_replay_matches(
    src: pl.DataFrame, records: list[str], result: dict[str, Any], split_col: str = "split"
) -> None:
    replayed = replay(src, records, result["log"])
    for name in SPLITS:
        want = replayed.filter(pl.col(split_col) == name)
        got = result["splits"].get(name)
        assert got is not None and got.columns == want.columns
        assert got.to_dicts() == want.to_dicts(), name
    assert set(result["splits"]) == set(SPLITS)


def assert_grouped(df: pl.DataFrame, glycan_col: str) -> None:
    keys = {g: key_or_none(g) for g in df[glycan_col].unique().to_list()}
    k = df.with_columns(
        pl.col(glycan_col).replace_strict(keys, return_dtype=pl.String).alias("__key")
    )
    crossing = (
        k.drop_nulls("__key")
        .group_by("__key")
        .agg(pl.col("__split").n_unique())
        .filter(pl.col("__split") > 1)
    )
    assert crossing.is_empty(), crossing.head()


def proportions(df: pl.DataFrame, col: str) -> dict[str, float]:
    return {s: df.filter(pl.col(col) == s).height / df.height for s in SPLITS}


def contradictions(df: pl.DataFrame) -> pl.DataFrame:
    out = []
    for child, parent in itertools.pairwise(LEVELS):
        e = df.select(clean(pl.col(child)).alias("c"), clean(pl.col(parent)).alias("p"))
        e = e.drop_nulls().group_by("c").agg(pl.col("p").unique())
        e = e.filter(pl.col("p").list.len() > 1)
        out.append(e.with_columns(pl.lit(child).alias("level")))
    return pl.concat(out)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def sample(glycan_sample_csv) -> pl.DataFrame:
    return pl.read_csv(glycan_sample_csv, infer_schema=False)


@pytest.fixture(scope="module")
def species(species_csv) -> pl.DataFrame:
    return pl.read_csv(species_csv, infer_schema=False)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("glycan_fix")


@pytest.fixture(scope="module")
def fixed_sample(glycan_sample_csv, work):
    return fix(glycan_sample_csv, work / "sample")


@pytest.fixture(scope="module")
def fixed_species(species_csv, work):
    return fix(species_csv, work / "species")


# --------------------------------------------------------------------------- sample


def test_fix_sample_loads_with_datasets(fixed_sample, sample):
    splits = fixed_sample["splits"]
    assert set(splits) == set(SPLITS)
    for name, df in splits.items():
        assert df.columns == sample.columns  # same columns, the split column rewritten
        assert set(df["split"]) == {name}
    assert (fixed_sample["out"] / "README.md").is_file()
    assert (fixed_sample["out"] / "audit.before.json").is_file()
    assert (fixed_sample["out"] / "audit.after.json").is_file()


def test_fix_sample_reaudits_clean(fixed_sample, capsys):
    report = reaudit(fixed_sample["out"], capsys)
    assert not FIXED_RULES & set(report["summary"]["by_rule"])
    table = report["summary"]["stats"]["tables"][0]
    assert table["split"] == "split"
    assert table["rows"] == sum(df.height for df in fixed_sample["splits"].values())


def test_fix_sample_leaves_no_hierarchy_contradiction_or_dirty_label(fixed_sample, sample):
    before = contradictions(sample)
    assert before.height > 0
    out = everything(fixed_sample["splits"])
    assert contradictions(out).is_empty()
    for col in LEVELS:
        v = out[col].drop_nulls()
        assert (v == v.str.strip_chars()).all(), col
        assert not v.str.to_lowercase().is_in(PLACEHOLDERS).any(), col


def test_fix_sample_split_is_grouped_and_keeps_proportions(fixed_sample, sample):
    out = everything(fixed_sample["splits"])
    assert_grouped(out, "glycan")
    # unparseable strings too: no glycan string sits in two splits
    assert (
        out.group_by("glycan")
        .agg(pl.col("__split").n_unique())
        .filter(pl.col("__split") > 1)
        .is_empty()
    )
    was = proportions(sample, "split")
    now = proportions(out, "__split")
    for s in SPLITS:
        assert abs(now[s] - was[s]) < 0.03, (s, was, now)
        assert abs(now[s] - {"train": 0.8, "validation": 0.1, "test": 0.1}[s]) < 0.03


def test_fix_sample_moves_only_leaking_glycans(fixed_sample, sample):
    keys = {g: key_or_none(g) for g in sample["glycan"].unique().to_list()}
    orig = sample.with_columns(
        pl.col("glycan").replace_strict(keys, return_dtype=pl.String).alias("key")
    )
    spans = orig.drop_nulls("key").group_by("key").agg(pl.col("split").unique())
    pure = {k: s[0] for k, s in spans.iter_rows() if len(s) == 1}
    leaking = orig.filter(pl.col("key").is_in([k for k, s in spans.iter_rows() if len(s) > 1]))
    assert pure and leaking.height
    out = everything(fixed_sample["splits"])
    out_keys = {g: key_or_none(g) for g in out["glycan"].unique().to_list()}
    stayed = [
        (out_keys[g], s)
        for g, s in out.select("glycan", "__split").iter_rows()
        if out_keys[g] in pure
    ]
    assert stayed and all(pure[k] == s for k, s in stayed)
    moved = {c["record"] for c in fixed_sample["log"] if c["rule"] == "GL401"}
    assert moved and moved <= set(leaking["glycowork_row"])


def test_fix_sample_changelog_accounts_for_every_change(fixed_sample, sample):
    assert_replay_matches(sample, sample["glycowork_row"].to_list(), fixed_sample)
    log = fixed_sample["log"]
    rules = Counter(c["rule"] for c in log)
    assert {"GL201", "GL203", "GL301", "GL303", "GL304", "GL401"} <= set(rules)
    for c in log:
        if c["rule"] == "GL201":
            assert c["old"].strip() == c["new"] != c["old"]
        elif c["rule"] == "GL203":
            assert c["old"].strip().lower() in PLACEHOLDERS and c["new"] is None
        elif c["rule"] == "GL303":
            assert c["field"] == "glycan" and c["old"] != c["new"]
            assert key_or_none(c["old"]) == key_or_none(c["new"]) is not None
        elif c["rule"] == "GL301":
            assert c["field"] in LEVELS[1:] and c["old"] != c["new"]
        elif c["rule"] == "GL401":
            assert c["field"] == "split" and c["old"] != c["new"]
    # the summary agrees with the changelog
    summary = json.loads((fixed_sample["out"] / "fix_summary.json").read_text())
    unparseable = sample.filter(
        pl.col("glycan").map_elements(key_or_none, return_dtype=pl.String).is_null()
    )
    assert unparseable.height == 1  # the sample's one malformed glycan (GL101)
    assert summary["rows_in"] == sample.height
    assert summary["dropped"] == rules["GL304"]
    assert summary["invalid_dropped"] == rules["GL101"] == unparseable.height
    assert summary["rows_out"] == sample.height - rules["GL304"] - unparseable.height
    assert summary["rows_moved_between_splits"] == rules["GL401"]


def test_fix_leaves_its_input_untouched(glycan_sample_csv, fixed_sample, tmp_path):
    # the shared file is read-only, so check on a writable copy that nothing is written back
    src = tmp_path / "in" / glycan_sample_csv.name
    src.parent.mkdir()
    src.write_bytes(glycan_sample_csv.read_bytes())
    before = (sha256(src), src.stat().st_mtime_ns)
    assert cli("fix", "glycan", src, "--out", tmp_path / "out") == 0
    assert (sha256(src), src.stat().st_mtime_ns) == before
    assert sorted(p.name for p in src.parent.iterdir()) == [glycan_sample_csv.name]
    # and the card names the exact bytes that were fixed
    card = (fixed_sample["out"] / "README.md").read_text()
    assert f"sha256 {sha256(glycan_sample_csv)}" in card


def test_fix_sample_is_deterministic(glycan_sample_csv, fixed_sample, work):
    again = fix(glycan_sample_csv, work / "sample_again")
    a, b = fixed_sample["out"], again["out"]
    # .curate/manifest.json records the run (command, time), not the data: it may differ
    files_a = sorted(
        p.relative_to(a) for p in a.rglob("*") if p.is_file() and ".curate" not in str(p)
    )
    files_b = sorted(
        p.relative_to(b) for p in b.rglob("*") if p.is_file() and ".curate" not in str(p)
    )
    assert files_a == files_b and files_a
    for f in files_a:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f


def test_fix_sample_other_seed_other_grouped_split(glycan_sample_csv, fixed_sample, work, sample):
    other = fix(glycan_sample_csv, work / "sample_seed7", "--seed", "7")
    a = everything(fixed_sample["splits"]).select("glycowork_row", "__split")
    b = everything(other["splits"])
    assert_grouped(b, "glycan")
    joined = a.join(b.select("glycowork_row", pl.col("__split").alias("b")), on="glycowork_row")
    assert joined.height > 0.95 * sample.height
    moved = joined.filter(pl.col("__split") != pl.col("b")).height
    assert moved > 0.05 * joined.height  # a different split, not a near copy
    was = proportions(sample, "split")
    now = proportions(b, "__split")
    assert all(abs(now[s] - was[s]) < 0.03 for s in SPLITS)
    assert json.loads((other["out"] / "fix_summary.json").read_text())["seed"] == 7
    assert all("seed 7" in c["reason"] for c in other["log"] if c["rule"] == "GL401")
    assert_replay_matches(sample, sample["glycowork_row"].to_list(), other)


def mapping_case(sample: pl.DataFrame) -> tuple[str, str, str]:
    """A genus filed under two families with a clear majority: (genus, majority, minority)."""
    e = sample.select(clean(pl.col("Genus")).alias("g"), clean(pl.col("Family")).alias("f"))
    counts = e.drop_nulls().group_by("g", "f").len()
    best = None
    for g, grp in counts.group_by("g"):
        if grp.height != 2:
            continue
        grp = grp.sort("len", descending=True)
        margin = grp["len"][0] - grp["len"][1]
        cand = (margin, g[0], grp["f"][0], grp["f"][1])
        if margin >= 2 and (best is None or cand[:2] > best[:2]):
            best = cand
    assert best is not None
    return best[1], best[2], best[3]


def test_fix_mapping_overrides_majority_parent(
    glycan_sample_csv, fixed_sample, sample, work, capsys
):
    genus, majority, minority = mapping_case(sample)
    default = everything(fixed_sample["splits"]).filter(pl.col("Genus") == genus)
    assert default.height > 0 and set(default["Family"]) == {majority}

    mapping = work / "mapping.json"
    mapping.write_text(json.dumps({"Genus": {genus: minority}}))
    mapped = fix(glycan_sample_csv, work / "sample_mapped", "--mapping", mapping)
    rows = everything(mapped["splits"]).filter(pl.col("Genus") == genus)
    assert rows.height > 0 and set(rows["Family"]) == {minority}
    moved = [
        c
        for c in mapped["log"]
        if c["field"] == "Family" and c["new"] == minority and c["old"] == majority
    ]
    assert moved and all(c["rule"] == "GL301" for c in moved)
    assert_replay_matches(sample, sample["glycowork_row"].to_list(), mapped)
    report = reaudit(mapped["out"], capsys)
    assert "GL301" not in report["summary"]["by_rule"]

    bad = work / "bad_mapping.json"
    bad.write_text('["not", "a", "mapping"]')
    assert cli("fix", "glycan", glycan_sample_csv, "--out", work / "never", "--mapping", bad) == 2
    assert not (work / "never").exists()


def test_fix_no_resplit_keeps_the_original_split(glycan_sample_csv, sample, work, capsys):
    kept = fix(glycan_sample_csv, work / "sample_noresplit", "--no-resplit")
    out = everything(kept["splits"])
    orig = dict(zip(sample["glycowork_row"], sample["split"], strict=True))
    assert all(orig[r] == s for r, s in out.select("glycowork_row", "split").iter_rows())
    assert all(orig[r] == s for r, s in out.select("glycowork_row", "__split").iter_rows())
    assert not any(c["rule"] == "GL401" for c in kept["log"])
    assert_replay_matches(sample, sample["glycowork_row"].to_list(), kept)
    # the leakage is still there, and the re-audit of a fixed folder sees it
    report = reaudit(kept["out"], capsys)
    assert "GL402" in report["summary"]["by_rule"]
    assert "GL301" not in report["summary"]["by_rule"]


# --------------------------------------------------------------------------- species file


def test_fix_species_creates_grouped_80_10_10_split(fixed_species, species, capsys):
    splits = fixed_species["splits"]
    assert set(splits) == set(SPLITS)
    for name, df in splits.items():
        assert df.columns == [*species.columns, "split"]
        assert set(df["split"]) == {name}
    out = everything(splits)
    assert_grouped(out, "target")
    now = proportions(out, "__split")
    for s, p in {"train": 0.8, "validation": 0.1, "test": 0.1}.items():
        assert abs(now[s] - p) < 0.03, now
    assert contradictions(species).height > 0
    assert contradictions(out).is_empty()
    report = reaudit(fixed_species["out"], capsys)
    assert not FIXED_RULES & set(report["summary"]["by_rule"])


def test_fix_species_changelog_accounts_for_every_change(fixed_species, species):
    records = [f"line {i + 2}" for i in range(species.height)]
    src = species.with_columns(pl.lit(None, pl.String).alias("split"))
    assert_replay_matches(src, records, fixed_species)
    invalid = sum(c["rule"] in INVALID_RULES for c in fixed_species["log"])
    assert invalid > 0  # the species file has malformed glycans: dropped, not re-split
    assert sum(c["rule"] == "GL401" for c in fixed_species["log"]) == species.height - invalid


def test_fix_species_keeps_identical_strings_in_one_split(fixed_species, species):
    """Regression (fixed in 1a3ff64): rows with an unparseable glycan were each a group of
    their own in the re-split, so the 6 rows of one malformed species-file string landed in
    train and validation."""
    unparseable = species.filter(
        pl.col("target").map_elements(key_or_none, return_dtype=pl.String).is_null()
    )
    repeated = unparseable.filter(pl.col("target").is_duplicated())
    assert repeated.height > 0  # the same malformed string on several rows
    out = everything(fixed_species["splits"])
    crossing = (
        out.group_by("target").agg(pl.col("__split").n_unique()).filter(pl.col("__split") > 1)
    )
    assert crossing.is_empty(), crossing["target"].to_list()


def test_fix_sugarbase_taxonomy_keeps_the_other_tasks_labels(sugarbase_csv, work):
    sugarbase = sugarbase_csv
    src = pl.read_csv(sugarbase, infer_schema=False)
    result = fix(sugarbase, work / "sugarbase")
    out = everything(result["splits"])

    def facts(df: pl.DataFrame, col: str) -> set[tuple[str | None, str]]:
        return {
            (key_or_none(g) or g, v)
            for g, v in df.filter(pl.col(col).is_not_null()).select("glycan", col).iter_rows()
        }

    dropped = {c["old"]["glycan"] for c in result["log"] if c["rule"] in INVALID_RULES and c["old"]}
    assert dropped and all(key_or_none(g) is None for g in dropped)
    for col in ("immunogenicity", "link"):
        # every fact survives except those of rows dropped for a malformed glycan
        lost = facts(src, col) - facts(out, col)
        assert all(g in dropped for g, _ in lost), (col, sorted(lost)[:3])


def test_export_sample_keeps_rows_and_splits(glycan_sample_csv, sample, work):
    out = work / "export"
    assert cli("export", "glycan", glycan_sample_csv, "--out", out) == 0
    splits = load(out)
    # every row but the one whose glycan does not parse (GL101), which is never published
    valid = sample.filter(
        pl.col("glycan").map_elements(key_or_none, return_dtype=pl.String).is_not_null()
    )
    assert valid.height == sample.height - 1
    assert {s: df.height for s, df in splits.items()} == dict(
        valid.group_by("split").len().iter_rows()
    )
    for name, df in splits.items():
        # published as typed (integer columns are integers) and without the split column, which
        # each split's own files already say
        want = valid.filter(pl.col("split") == name).drop("split")
        want = want.with_columns(pl.col("glycowork_row", "taxon_id").cast(pl.Int64))
        assert df.to_dicts() == want.to_dicts()


# --------------------------------------------------------------------------- other layouts


def glycanml_flags(sample: pl.DataFrame, n: int = 300) -> pl.DataFrame:
    flags = {"train": "train", "validation": "valid", "test": "test"}
    return sample.head(n).select(
        "glycan",
        *[pl.col(c).alias(c.lower()) for c in LEVELS],
        *[(pl.col("split") == s).cast(pl.Int8).cast(pl.String).alias(f) for s, f in flags.items()],
    )


def test_fix_split_flag_columns_are_rewritten(sample, work, capsys):
    src = work / "flags.csv"
    glycanml_flags(sample).write_csv(src)
    result = fix(src, work / "flags_out")
    out = everything(result["splits"])
    assert out.columns[:-1] == glycanml_flags(sample).columns
    flag = {"train": "train", "validation": "valid", "test": "test"}
    for s, f in flag.items():
        assert (out[f] == (out["__split"] == s).cast(pl.Int8).cast(pl.String)).all()
    assert_grouped(out, "glycan")
    report = reaudit(result["out"], capsys)
    assert report["summary"]["stats"]["tables"][0]["split"] == {
        "train": "train",
        "validation": "valid",
        "test": "test",
    }
    assert not FIXED_RULES & set(report["summary"]["by_rule"])


def test_fix_split_flag_changes_are_in_the_changelog(sample, work):
    """Regression (fixed in 1a3ff64): with 0/1 split columns the re-split was logged under
    field 'split', a column the table does not have, so the changed flag cells were not in
    the changelog."""
    src = work / "flags_log.csv"
    table = glycanml_flags(sample)
    table.write_csv(src)
    result = fix(src, work / "flags_log_out")
    records = [f"line {i + 2}" for i in range(table.height)]
    replayed = replay(table, records, result["log"])
    flag = {"train": "train", "validation": "valid", "test": "test"}
    for s, f in flag.items():
        want = replayed.filter(pl.col(f) == "1")
        assert want.to_dicts() == result["splits"][s].to_dicts(), s
    assert sum(df.height for df in result["splits"].values()) == replayed.height
    assert any(c["field"] in flag.values() for c in result["log"] if c["rule"] == "GL401")


def test_fix_refuses_what_it_cannot_do(glycan_sample_csv, species_csv, sample, work, tmp_path):
    # two tables at once (fix works per table; audit them together for GL403)
    assert cli("fix", "glycan", glycan_sample_csv, species_csv, "--out", tmp_path / "two") == 2
    assert not (tmp_path / "two").exists()
