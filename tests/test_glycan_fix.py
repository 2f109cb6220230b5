"""``curate fix glycan`` on the real glycowork tables, driven by the findings.

What the issue asks of a remastered dataset: only the selected rules' edits are applied (unsafe
ones only with ``--unsafe-fixes``), the fixed folder re-audits clean for the rules whose fixes
ran, every change names the finding that asked for it, the output loads with
``datasets.load_dataset`` in the published layout (no split column, numbers numeric), the split
proportions hold and no glycan crosses splits, the input is untouched and the run reproducible.
The strongest check is a replay: applying the changelog, entry by entry, to the input must give
exactly the output (so nothing changed that the changelog does not say, and every ``old`` value
is what the row held). Expected values are recomputed from the CSV files with polars.
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

import curate
from curate.cli.main import main
from curate.schemas.iupac import IUPACError, canonical_key

LEVELS = ["Species", "Genus", "Family", "Order", "Class", "Phylum", "Kingdom", "Domain"]
PLACEHOLDERS = ["", "undetermined", "unknown", "unclassified", "none", "na", "n/a", "nan",
                "null", "-", "[]"]  # fmt: skip
SPLITS = ("train", "validation", "test")
SAFE = {"GL201", "GL202", "GL203", "GL303", "GL304"}
UNSAFE = {"GL301", "GL401", "GL402"}
#: Rules whose rows fix drops as invalid (logged whole, as read, naming no finding).
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
    """``curate fix glycan`` with the rule-based fixes these tests replay: the label model's
    (GL305) are left out unless asked for (tests/test_glycan_label_issues.py has them)."""
    before = sha256(src)
    if not {"--label-model", "--pred-probs"} & {str(e) for e in extra}:
        extra = (*extra, "--label-model", "none")
    rc = cli("fix", "glycan", src, "--out", out, *extra)
    assert rc == 0
    assert sha256(src) == before, "the input file was modified"
    return {
        "out": out,
        "log": [json.loads(line) for line in (out / "changelog.jsonl").read_text().splitlines()],
        "splits": load(out),
        "summary": json.loads((out / "fix_summary.json").read_text()),
        "before": json.loads((out / "audit.before.json").read_text()),
    }


def load(out: Path) -> dict[str, pl.DataFrame]:
    """The output through the Hugging Face loader, as users will read it."""
    ds = datasets.load_dataset(str(out), cache_dir=str(out.parent / f".hf-cache-{out.name}"))
    return {name: pl.from_arrow(ds[name].data.table) for name in ds}


def everything(splits: dict[str, pl.DataFrame]) -> pl.DataFrame:
    return pl.concat([df.with_columns(pl.lit(s).alias("__split")) for s, df in splits.items()])


def rules_left(out: Path) -> set[str]:
    """The rules ``curate.audit`` still reports on the fixed folder (default options), the
    label model's suspicions (GL305) left out: a model fitted again on the fixed rows
    suspects others, so no fix makes that rule go quiet."""
    report = curate.audit("glycan", out, label_model="none")
    return set(report.findings["rule"].unique().to_list())


def text(v: Any) -> Any:
    """A value as the CSV held it (the output publishes numbers as numbers)."""
    return v if v is None or isinstance(v, str) else str(v)


def replay(
    src: pl.DataFrame, records: list[str], log: list[dict[str, Any]], split_col: str = "split"
) -> pl.DataFrame:
    """Apply the changelog to the input; every ``old`` must be what the row holds.

    A split move (field ``split``) sets ``split_col``; a row dropped by a later pass is logged
    as it was then (published types, its split under ``split``).
    """
    rows = [dict(r) for r in src.iter_rows(named=True)]
    at = {rec: i for i, rec in enumerate(records)}
    assert len(at) == len(rows), "records must name rows uniquely"
    dropped = set()
    for c in log:
        assert c["reason"], c
        i = at[c["record"]]
        assert i not in dropped
        if c["field"] == "":
            assert c["new"] is None
            if c["rule"] in INVALID_RULES:  # logged as read, before any fix (pass 0)
                assert c["pass"] == 0 and c["finding"]["rule"] == c["rule"]
                assert c["old"] == {k: rows[i][k] for k in c["old"]}, "logged as read"
            else:
                now = {**rows[i], "split": rows[i][split_col]}
                got = {k: text(v) for k, v in c["old"].items()}
                assert got == {k: now[k] for k in got}, "dropped row logged as it was"
            dropped.add(i)
            continue
        field = split_col if c["field"] == "split" else c["field"]
        assert rows[i].get(field) == c["old"], c
        rows[i][field] = c["new"]
    kept = [r for i, r in enumerate(rows) if i not in dropped]
    return pl.DataFrame(kept, schema={k: pl.String for k in kept[0]})


def assert_replay_matches(
    src: pl.DataFrame,
    records: list[str],
    result: dict[str, Any],
    split_col: str = "split",
    drop: tuple[str, ...] = (),
) -> None:
    """The replayed input, split by its split column, is the output split by split."""
    replayed = replay(src, records, result["log"], split_col)
    assert set(result["splits"]) == set(replayed[split_col].unique().to_list())
    for name, got in result["splits"].items():
        want = replayed.filter(pl.col(split_col) == name).drop(split_col, *drop)
        assert got.columns == want.columns
        assert got.cast(pl.String).to_dicts() == want.to_dicts(), name


def assert_grouped(df: pl.DataFrame, glycan_col: str) -> None:
    """No glycan (by canonical key, or by string when it has none) of train is in another
    split: what GL401/GL402 call leakage. (A glycan only in validation and test is no finding,
    so the fix leaves it where it is.)"""
    keys = {g: key_or_none(g) or "\x00" + g for g in df[glycan_col].unique().to_list()}
    k = df.with_columns(
        pl.col(glycan_col).replace_strict(keys, return_dtype=pl.String).alias("__key")
    )
    crossing = (
        k.group_by("__key")
        .agg(pl.col("__split").unique())
        .filter((pl.col("__split").list.len() > 1) & pl.col("__split").list.contains("train"))
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


def only_ties(df: pl.DataFrame) -> pl.DataFrame:
    """The hierarchy contradictions of ``df`` (as :func:`contradictions`), asserting that each is
    a tie: two or more parents share the top row count, so there is no majority to move to and
    ``fix`` leaves the rows as they are until ``--mapping`` decides."""
    out = []
    for child, parent in itertools.pairwise(LEVELS):
        e = df.select(clean(pl.col(child)).alias("c"), clean(pl.col(parent)).alias("p"))
        per = (
            e.drop_nulls()
            .group_by("c", "p")
            .len()
            .group_by("c")
            .agg(
                pl.len().alias("parents"),
                (pl.col("len") == pl.col("len").max()).sum().alias("n_top"),
            )
            .filter(pl.col("parents") > 1)
        )
        assert (per["n_top"] > 1).all(), per.filter(pl.col("n_top") == 1)
        out.append(per.with_columns(pl.lit(child).alias("level")))
    return pl.concat(out)


def gl301_left(out: Path) -> pl.DataFrame:
    """GL301 findings on a fixed folder, asserting each is a tie (no edit, asks for --mapping)."""
    left = curate.audit("glycan", out).findings.filter(pl.col("rule") == "GL301")
    assert left["fix"].is_null().all()
    assert left["message"].str.contains("no majority").all()
    assert left["message"].str.contains("pass --mapping to choose").all()
    return left


def findings_named(result: dict[str, Any]) -> set[tuple[str, str, str, str]]:
    return {
        (f["rule"], f["record"], f["field"], f["message"]) for f in result["before"]["findings"]
    }


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
def safe_sample(glycan_sample_csv, work):
    """The default run: safe fixes only."""
    return fix(glycan_sample_csv, work / "safe")


@pytest.fixture(scope="module")
def fixed_sample(glycan_sample_csv, work):
    return fix(glycan_sample_csv, work / "sample", "--unsafe-fixes")


@pytest.fixture(scope="module")
def fixed_species(species_csv, work):
    return fix(species_csv, work / "species", "--unsafe-fixes")


# --------------------------------------------------------------------------- safe by default


def test_default_fix_applies_only_safe_fixes(safe_sample, sample):
    log = safe_sample["log"]
    fixed = {c["rule"] for c in log} - INVALID_RULES
    assert fixed == {"GL201", "GL203", "GL303", "GL304"}  # what the sample has of SAFE
    assert not any(c["field"] == "split" for c in log)
    summary = safe_sample["summary"]
    assert set(summary["unsafe_fixes_available"]) == UNSAFE
    assert summary["rows_moved_between_splits"] == 0
    # every row stays in the split it was in
    out = everything(safe_sample["splits"])
    orig = dict(zip(sample["glycowork_row"], sample["split"], strict=True))
    assert all(orig[str(r)] == s for r, s in out.select("glycowork_row", "__split").iter_rows())
    assert_replay_matches(sample, sample["glycowork_row"].to_list(), safe_sample)
    # clean for what ran; what was left for --unsafe-fixes is still there
    left = rules_left(safe_sample["out"])
    assert not left & set(summary["fixed"])
    assert left >= UNSAFE


# --------------------------------------------------------------------------- sample, all fixes


def test_fix_sample_loads_in_the_published_layout(fixed_sample, sample):
    splits = fixed_sample["splits"]
    assert set(splits) == set(SPLITS)
    for df in splits.values():
        # the input's columns without the split column, which each split's files already say;
        # integer columns published as integers
        assert df.columns == [c for c in sample.columns if c != "split"]
        assert df.schema["glycowork_row"] == pl.Int64 and df.schema["taxon_id"] == pl.Int64
        assert df.schema["glycan"] == pl.String
    for name in ("README.md", "audit.before.json", "audit.after.json", "fix_summary.json"):
        assert (fixed_sample["out"] / name).is_file()


def test_fix_sample_reaudits_clean_for_the_fixed_rules(fixed_sample):
    summary = fixed_sample["summary"]
    assert set(summary["fixed"]) == SAFE - {"GL202"} | UNSAFE  # no case variant in the sample
    assert "not_converged" not in summary and summary["passes"] >= 2
    again = curate.audit("glycan", fixed_sample["out"], label_model="none")  # as the fix ran
    # a tie has no majority and no edit: its GL301 findings stay, asking for --mapping
    assert set(again.findings["rule"].to_list()) & set(summary["fixed"]) == {"GL301"}
    assert gl301_left(fixed_sample["out"]).height > 0
    after = json.loads((fixed_sample["out"] / "audit.after.json").read_text())
    assert sorted((f["rule"], f["record"], f["field"]) for f in after["findings"]) == sorted(
        (r["rule"], r["record"], r["field"]) for r in again.findings.iter_rows(named=True)
    )
    assert again.records == sum(df.height for df in fixed_sample["splits"].values())


def test_every_change_names_the_finding_that_asked_for_it(fixed_sample, sample):
    before = findings_named(fixed_sample)
    records = set(sample["glycowork_row"].to_list())
    passes = Counter()
    for c in fixed_sample["log"]:
        if c["rule"] in INVALID_RULES:
            # an invalid row is left out before fixing (pass 0), named by its finding
            assert c["pass"] == 0 and c["finding"]["rule"] == c["rule"]
            assert (c["finding"]["rule"], c["finding"]["record"]) in {
                (r, rec) for r, rec, _f, _m in before
            }
            continue
        ref = c["finding"]
        assert ref["rule"] == c["rule"]
        passes[c["pass"]] += 1
        if c["pass"] == 1:
            assert (ref["rule"], ref["record"], ref["field"], ref["message"]) in before
        else:
            # found by re-auditing pass 1's output: a rule that pass may have set off (a
            # hierarchy level above one fixed, rows made equal by the fixes), on a record of
            # the input
            assert c["rule"] in {"GL301", "GL304"}
            assert ref["record"] in records and c["record"] in records
    assert passes[1] > 0 and sum(passes.values()) > passes[1]


def test_fix_sample_leaves_only_tied_hierarchy_contradictions_and_no_dirty_label(
    fixed_sample, sample
):
    before = contradictions(sample)
    out = everything(fixed_sample["splits"])
    # every contradiction with a majority is resolved; the ties are left (and were ties before)
    left = only_ties(out)
    assert 0 < left.height < before.height
    assert set(left["c"]) <= set(before["c"])
    for col in LEVELS:
        v = out[col].drop_nulls()
        assert (v == v.str.strip_chars()).all(), col
        assert not v.str.to_lowercase().is_in(PLACEHOLDERS).any(), col
    # each minority parent went to the majority one
    for c in fixed_sample["log"]:
        if c["rule"] == "GL301":
            assert c["field"] in LEVELS[1:] and c["old"] != c["new"]
            assert "here but under" in c["finding"]["message"]
            assert repr(c["new"]) in c["finding"]["message"]


def test_fix_sample_split_is_grouped_and_keeps_proportions(fixed_sample, sample):
    out = everything(fixed_sample["splits"])
    assert_grouped(out, "glycan")
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
    moves = [c for c in fixed_sample["log"] if c["field"] == "split"]
    assert {c["rule"] for c in moves} == {"GL401", "GL402"}
    assert {c["record"] for c in moves} <= set(leaking["glycowork_row"])
    # a move names the leak finding of an evaluation row of the same glycan
    rec_key = dict(orig.select("glycowork_row", "key").iter_rows())
    for c in moves:
        assert c["old"] != c["new"] and "seed 0" in c["reason"]
        assert rec_key[c["finding"]["record"]] == rec_key[c["record"]]
    assert fixed_sample["summary"]["rows_moved_between_splits"] == len({c["record"] for c in moves})


def test_fix_sample_changelog_accounts_for_every_change(fixed_sample, sample):
    assert_replay_matches(sample, sample["glycowork_row"].to_list(), fixed_sample)
    log = fixed_sample["log"]
    rules = Counter(c["rule"] for c in log)
    for c in log:
        if c["rule"] == "GL201":
            assert c["old"].strip() == c["new"] != c["old"]
        elif c["rule"] == "GL203":
            assert c["old"].strip().lower() in PLACEHOLDERS and c["new"] is None
        elif c["rule"] == "GL303":
            assert c["field"] == "glycan" and c["old"] != c["new"]
            assert key_or_none(c["old"]) == key_or_none(c["new"]) is not None
    # the summary agrees with the changelog
    summary = fixed_sample["summary"]
    unparseable = sample.filter(
        pl.col("glycan").map_elements(key_or_none, return_dtype=pl.String).is_null()
    )
    assert unparseable.height == 1  # the sample's one malformed glycan (GL101)
    assert summary["rows_in"] == sample.height
    assert summary["dropped"] == rules["GL304"]
    assert summary["invalid_dropped"] == rules["GL101"] == unparseable.height
    assert summary["rows_out"] == sample.height - rules["GL304"] - unparseable.height
    assert summary["seed"] == 0


def test_fix_leaves_its_input_untouched(glycan_sample_csv, fixed_sample, tmp_path):
    # the shared file is read-only, so check on a writable copy that nothing is written back
    src = tmp_path / "in" / glycan_sample_csv.name
    src.parent.mkdir()
    src.write_bytes(glycan_sample_csv.read_bytes())
    before = (sha256(src), src.stat().st_mtime_ns)
    args = ("--unsafe-fixes", "--label-model", "none")  # as the fixed_sample it compares with
    assert cli("fix", "glycan", src, "--out", tmp_path / "out", *args) == 0
    assert (sha256(src), src.stat().st_mtime_ns) == before
    assert sorted(p.name for p in src.parent.iterdir()) == [glycan_sample_csv.name]
    # and the card names the exact bytes that were fixed
    card = (fixed_sample["out"] / "README.md").read_text()
    assert f"sha256 {sha256(glycan_sample_csv)}" in card


def test_fix_sample_is_deterministic(glycan_sample_csv, fixed_sample, work):
    again = fix(glycan_sample_csv, work / "sample_again", "--unsafe-fixes")
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
    other = fix(glycan_sample_csv, work / "sample_seed7", "--unsafe-fixes", "--seed", "7")
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
    assert other["summary"]["seed"] == 7
    moves = [c for c in other["log"] if c["field"] == "split"]
    assert moves and all("seed 7" in c["reason"] for c in moves)
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


def test_fix_mapping_overrides_majority_parent(glycan_sample_csv, fixed_sample, sample, work):
    genus, majority, minority = mapping_case(sample)
    default = everything(fixed_sample["splits"]).filter(pl.col("Genus") == genus)
    assert default.height > 0 and set(default["Family"]) == {majority}

    mapping = work / "mapping.json"
    mapping.write_text(json.dumps({"Genus": {genus: minority}}))
    mapped = fix(glycan_sample_csv, work / "sample_mapped", "--unsafe-fixes", "--mapping", mapping)
    rows = everything(mapped["splits"]).filter(pl.col("Genus") == genus)
    assert rows.height > 0 and set(rows["Family"]) == {minority}
    moved = [
        c
        for c in mapped["log"]
        if c["field"] == "Family" and c["new"] == minority and c["old"] == majority
    ]
    assert moved and all(c["rule"] == "GL301" for c in moved)
    assert all("--mapping puts it under" in c["finding"]["message"] for c in moved)
    assert_replay_matches(sample, sample["glycowork_row"].to_list(), mapped)
    # what is left of GL301 are ties the mapping does not name
    left = gl301_left(mapped["out"])
    assert not left["message"].str.contains(repr(genus)).any()

    bad = work / "bad_mapping.json"
    bad.write_text('["not", "a", "mapping"]')
    assert cli("fix", "glycan", glycan_sample_csv, "--out", work / "never", "--mapping", bad) == 2
    assert not (work / "never").exists()


def test_a_mapped_child_no_row_has_is_warned_of_once(glycan_sample_csv, sample, work, capsys):
    """Found by a new-user review: a ``--mapping`` naming a child that no row files (a typo)
    decided nothing and said nothing. It is one warning for the whole fix, though each pass
    re-audits (and was five lines on a six-pass fix once said)."""
    genus, _majority, minority = mapping_case(sample)
    mapping = work / "typo_mapping.json"
    mapping.write_text(json.dumps({"Genus": {genus: minority, genus + "x": minority}}))
    capsys.readouterr()
    fix(glycan_sample_csv, work / "typo", "--unsafe-fixes", "--mapping", mapping)
    err = capsys.readouterr().err
    said = [line for line in err.splitlines() if "--mapping" in line]
    assert said == [f"curate: warning: --mapping: no row has the genus {genus + 'x'!r} it names"]


def test_fix_no_resplit_keeps_the_original_split(glycan_sample_csv, sample, work):
    kept = fix(glycan_sample_csv, work / "sample_noresplit", "--unsafe-fixes", "--no-resplit")
    out = everything(kept["splits"])
    orig = dict(zip(sample["glycowork_row"], sample["split"], strict=True))
    assert all(orig[str(r)] == s for r, s in out.select("glycowork_row", "__split").iter_rows())
    assert not any(c["field"] == "split" for c in kept["log"])
    assert not {"GL401", "GL402"} & set(kept["summary"]["fixed"])
    assert_replay_matches(sample, sample["glycowork_row"].to_list(), kept)
    # the leakage is still there (no edit was proposed), the hierarchy is fixed
    left = rules_left(kept["out"])
    assert "GL402" in left
    gl301_left(kept["out"])  # the hierarchy is fixed where a majority decides


def test_unsafe_fixes_need_the_flag(glycan_sample_csv, work):
    """``--select GL4`` alone chooses only unsafe fixes: nothing is moved and the summary says
    how many wait for ``--unsafe-fixes``; with the flag the same selection moves rows."""
    held = fix(glycan_sample_csv, work / "gl4_held", "--select", "GL4")
    assert {c["rule"] for c in held["log"]} <= INVALID_RULES
    assert held["summary"]["unsafe_fixes_available"] == {"GL401": 8, "GL402": 495}
    moved = fix(glycan_sample_csv, work / "gl4", "--select", "GL4", "--unsafe-fixes")
    rules = {c["rule"] for c in moved["log"]} - INVALID_RULES
    assert rules == {"GL401", "GL402"}
    assert all(c["field"] == "split" for c in moved["log"] if c["rule"] in rules)
    assert not {"GL401", "GL402"} & rules_left(moved["out"])


# --------------------------------------------------------------------------- species file


def test_fix_species_without_a_split_is_one_train_split(fixed_species, species):
    """No split column, so no leakage and nothing to re-split: published as train."""
    assert set(fixed_species["splits"]) == {"train"}
    out = fixed_species["splits"]["train"]
    assert out.columns == species.columns
    assert not any(c["field"] == "split" for c in fixed_species["log"])
    before = contradictions(species)
    left = only_ties(out)  # Mucorales: Mucormycotina 7 rows, Zygomycetes 7 rows
    assert 0 < left.height < before.height
    assert "Mucorales" in set(left["c"])


def test_fix_species_converges_and_reaudits_clean(fixed_species):
    """A taxonomy fix ripples up the hierarchy one level per pass (a genus moved to its
    majority family may sit under that family's minority order); the species file needs six
    passes, within the family's limit."""
    summary = fixed_species["summary"]
    assert "not_converged" not in summary
    assert 2 < summary["passes"] <= 10
    assert max(c.get("pass", 1) for c in fixed_species["log"]) == summary["passes"]
    assert rules_left(fixed_species["out"]) & set(summary["fixed"]) == {"GL301"}
    assert gl301_left(fixed_species["out"]).height > 0  # the ties, each asking for --mapping


def test_fix_species_changelog_accounts_for_every_change(fixed_species, species):
    records = [f"line {i + 2}" for i in range(species.height)]
    src = species.with_columns(pl.lit("train").alias("split"))
    assert_replay_matches(src, records, fixed_species)
    invalid = sum(c["rule"] in INVALID_RULES for c in fixed_species["log"])
    assert invalid > 0  # the species file has malformed glycans: left out
    before = findings_named(fixed_species)
    for c in fixed_species["log"]:
        ref = c["finding"]
        if c["pass"] <= 1:
            assert (ref["rule"], ref["record"], ref["field"], ref["message"]) in before
        else:  # a re-audit's finding, named by the input's record (not the temporary folder's)
            assert ref["record"] in records


def test_fix_sugarbase_taxonomy_keeps_the_other_tasks_labels(sugarbase_csv, work):
    src = pl.read_csv(sugarbase_csv, infer_schema=False)
    result = fix(sugarbase_csv, work / "sugarbase", "--unsafe-fixes")
    out = everything(result["splits"])

    def facts(df: pl.DataFrame, col: str) -> set[tuple[str | None, str]]:
        return {
            (key_or_none(g) or g, str(v))
            for g, v in df.filter(pl.col(col).is_not_null()).select("glycan", col).iter_rows()
        }

    dropped = {c["old"]["glycan"] for c in result["log"] if c["rule"] in INVALID_RULES and c["old"]}
    assert dropped and all(key_or_none(g) is None for g in dropped)
    for col in ("immunogenicity", "link"):
        # every fact survives except those of rows dropped for a malformed glycan
        lost = facts(src, col) - facts(out, col)
        assert all(g in dropped for g, _ in lost), (col, sorted(lost)[:3])
    assert not rules_left(result["out"]) & set(result["summary"]["fixed"])


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


FLAGS = {"train": "train", "validation": "valid", "test": "test"}


def glycanml_flags(sample: pl.DataFrame, n: int = 300) -> pl.DataFrame:
    return sample.head(n).select(
        "glycan",
        *[pl.col(c).alias(c.lower()) for c in LEVELS],
        *[(pl.col("split") == s).cast(pl.Int8).cast(pl.String).alias(f) for s, f in FLAGS.items()],
    )


def test_fix_split_flag_layout(sample, work):
    """GlycanML's 0/1 split columns: read as the split, published as one folder per split
    without them; every move is in the changelog (regression of 1a3ff64: moves were logged
    under a field the table does not have)."""
    src = work / "flags.csv"
    table = glycanml_flags(sample)
    table.write_csv(src)
    result = fix(src, work / "flags_out", "--unsafe-fixes")
    out = everything(result["splits"])
    assert out.columns[:-1] == [c for c in table.columns if c not in FLAGS.values()]
    assert_grouped(out, "glycan")
    assert any(c["field"] == "split" for c in result["log"])
    # replay: the split the flags say, moved as logged, is the folder each row is in
    records = [f"line {i + 2}" for i in range(table.height)]
    flagged = table.with_columns(
        pl.coalesce([pl.when(pl.col(f) == "1").then(pl.lit(s)) for s, f in FLAGS.items()]).alias(
            "__s"
        )
    )
    assert_replay_matches(flagged, records, result, "__s", drop=tuple(FLAGS.values()))
    assert not rules_left(result["out"]) & set(result["summary"]["fixed"])


def test_fix_refuses_what_it_cannot_do(glycan_sample_csv, species_csv, tmp_path):
    # two tables at once (fix works per table; audit them together for GL403)
    assert cli("fix", "glycan", glycan_sample_csv, species_csv, "--out", tmp_path / "two") == 2
    assert not (tmp_path / "two").exists()


def test_a_one_to_one_tie_is_no_majority_until_mapping_decides(species_csv, work):
    """The issue's case: ``Brevundimonas_diminuta`` filed under genus Brevibacterium in one row
    and Brevundimonas in another (two real rows of the species file). A tie names no majority:
    both rows are reported, neither gets an edit, ``fix`` leaves them; ``--mapping`` decides."""
    rows = pl.read_csv(species_csv, infer_schema=False).filter(
        pl.col("Species") == "Brevundimonas_diminuta"
    )
    pair = pl.concat(
        [
            rows.filter(pl.col("Genus") == "Brevibacterium").head(1),
            rows.filter(pl.col("Genus") == "Brevundimonas").head(1),
        ]
    )
    src = work / "tie.csv"
    pair.write_csv(src)
    report = curate.audit("glycan", src, select="GL301")
    species_level = report.findings.filter(pl.col("field") == "Genus")
    assert species_level.height == 2 and species_level["fix"].is_null().all()
    for msg in species_level["message"]:
        assert "no majority: 2 parents tie at 1 row each" in msg
        assert "('Brevibacterium', 'Brevundimonas')" in msg and "pass --mapping" in msg
        assert "majority" not in msg.replace("no majority", "")

    left = fix(src, work / "tie_fixed", "--unsafe-fixes")
    assert sorted(everything(left["splits"])["Genus"]) == ["Brevibacterium", "Brevundimonas"]
    assert not any(c["field"] == "Genus" for c in left["log"])

    mapping = work / "tie_mapping.json"
    mapping.write_text(json.dumps({"species": {"Brevundimonas_diminuta": "Brevundimonas"}}))
    decided = fix(src, work / "tie_mapped", "--unsafe-fixes", "--mapping", mapping)
    assert set(everything(decided["splits"])["Genus"]) == {"Brevundimonas"}
    moved = [c for c in decided["log"] if c["field"] == "Genus"]
    assert [(c["old"], c["new"], c["rule"]) for c in moved] == [
        ("Brevibacterium", "Brevundimonas", "GL301")
    ]
