"""GL305: label issues by confident learning on glycowork's real species table.

The flips are injected per canonical glycan (every row of a glycan moved to one other kingdom,
seeded), so that the truth is known; the rule sees only the noisy table.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import curate
from curate.cli.main import main
from curate.schemas.iupac import Glycan, try_parse


def _kingdom_table(species_csv: Path, tmp_path: Path, rate: float, seed: int):
    """glycowork's species table cut to ``glycan, Kingdom``, a share ``rate`` of its
    single-kingdom glycans moved (all their rows) to another kingdom; the flipped records."""
    df = pl.read_csv(species_csv, infer_schema_length=0).select(
        pl.col("target").alias("glycan"), "Kingdom"
    )
    df = df.filter(pl.col("Kingdom").is_not_null()).with_row_index("id")
    keys = {}
    for g in df["glycan"].unique().to_list():
        p = try_parse(g)
        keys[g] = p.key if isinstance(p, Glycan) else g
    df = df.with_columns(pl.col("glycan").replace_strict(keys).alias("key"))
    per = df.group_by("key").agg(pl.col("Kingdom").unique()).sort("key")
    single = per.filter(pl.col("Kingdom").list.len() == 1)
    kingdoms = sorted(df["Kingdom"].unique().to_list())
    rng = np.random.default_rng(seed)
    at = rng.choice(single.height, size=round(rate * single.height), replace=False)
    moved = {}
    for i in at:
        key, (k,) = single.row(int(i))
        others = [x for x in kingdoms if x != k]
        moved[key] = others[int(rng.integers(len(others)))]
    noisy = df.with_columns(
        pl.col("key").replace_strict(moved, default=pl.col("Kingdom")).alias("Kingdom")
    )
    flipped = set(noisy.filter(pl.col("key").is_in(list(moved)))["id"].cast(pl.String))
    path = tmp_path / "kingdoms.csv"
    noisy.select("id", "glycan", "Kingdom").write_csv(path)
    return path, noisy, flipped


def _records(report, path: Path, noisy: pl.DataFrame) -> set[str]:
    """The ids (``id`` column) of the rows GL305 flags."""
    rows = report.findings.filter(pl.col("rule") == "GL305")["row"].to_list()
    return set(noisy["id"].cast(pl.String).gather(rows).to_list())


def test_injected_kingdom_flips_are_found(species_csv: Path, tmp_path: Path) -> None:
    """5 % of glycowork's single-kingdom glycans moved to another kingdom: GL305 finds most of
    them, and most of what it flags is a flip (measured: precision 0.72, recall 0.93 per
    glycan; the floors leave room for seeds)."""
    path, noisy, flipped = _kingdom_table(species_csv, tmp_path, 0.05, seed=0)
    report = curate.audit("glycan", path, select=["GL305"], task="taxonomy")
    flagged = _records(report, path, noisy)
    tp = len(flagged & flipped)
    precision, recall = tp / max(1, len(flagged)), tp / len(flipped)
    assert precision >= 0.6 and recall >= 0.8, (precision, recall, len(flagged), len(flipped))
    f = report.findings.filter(pl.col("rule") == "GL305")
    details = [json.loads(d) for d in f["details"].to_list()]
    assert all(d["predicted_label"] != d["given_label"] for d in details)
    assert all(0.0 <= d["label_score"] <= 1.0 and d["source"] == "built-in model" for d in details)
    stats = report.stats["label_issues"]["kingdom"]
    # one score per canonical glycan (the unparseable strings, other rules' findings, left out)
    assert 0.95 * noisy["key"].n_unique() <= stats["records"] <= noisy["key"].n_unique()
    assert 0 < stats["label_health"] < 1


def test_pred_probs_flag_exactly_cleanlabs_set(tmp_path: Path, species_csv: Path) -> None:
    """The user's own probabilities, per record: the flagged rows are cleanlab's own
    ``find_label_issues`` on them, nothing added, nothing lost."""
    from cleanlab.filter import find_label_issues

    path, noisy, _ = _kingdom_table(species_csv, tmp_path, 0.05, seed=1)
    classes = sorted(noisy["Kingdom"].unique().to_list())
    given = np.array([classes.index(k) for k in noisy["Kingdom"]])
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(len(classes)) * 0.3, size=noisy.height)
    probs[np.arange(noisy.height), given] += rng.random(noisy.height) * 2
    probs /= probs.sum(axis=1, keepdims=True)
    pp = tmp_path / "probs.csv"
    pl.DataFrame(
        {"id": noisy["id"].cast(pl.String), **{c: probs[:, i] for i, c in enumerate(classes)}}
    ).write_csv(pp)
    report = curate.audit("glycan", path, select=["GL305"], pred_probs=pp, task="taxonomy")
    theirs = set(np.flatnonzero(find_label_issues(given, probs, n_jobs=1)).tolist())
    ours = set(report.findings.filter(pl.col("rule") == "GL305")["row"].to_list())
    assert ours == theirs and theirs


def test_pred_probs_on_a_taxonomy_needs_a_level(
    tmp_path: Path, glycan_sample_csv: Path, capsys
) -> None:
    pp = tmp_path / "p.csv"
    pl.DataFrame({"id": ["1"], "a": [1.0]}).write_csv(pp)
    rc = main(["audit", "glycan", str(glycan_sample_csv), "--pred-probs", str(pp)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--label-level" in err[0], err
    rc = main(
        ["audit", "glycan", str(glycan_sample_csv), "--pred-probs", str(pp), "--label-level", "x"]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "'x' is not a label" in err[0], err


@pytest.mark.parametrize("how", ["relabel", "drop"])
def test_fix_writes_the_model_s_label_or_drops_with_the_score(
    species_csv: Path, tmp_path: Path, how: str
) -> None:
    path, _, flipped = _kingdom_table(species_csv, tmp_path, 0.05, seed=2)
    out = tmp_path / "out"
    rc = main(
        [
            "fix",
            "glycan",
            str(path),
            "--out",
            str(out),
            "--unsafe-fixes",
            "--select",  # GL305's own fix (the others make passes, each refitting the model)
            "GL305",
            "--label-fix",
            how,
            "--task",
            "taxonomy",
        ]
    )
    assert rc == 0
    log = [json.loads(x) for x in (out / "changelog.jsonl").read_text().splitlines()]
    ours = [c for c in log if c["rule"] == "GL305"]
    assert ours and all("quality" in json.dumps(c) for c in ours)
    fixed = {str(c["record"]) for c in ours}
    assert len(fixed & flipped) >= 0.6 * len(fixed)
    card = (out / "README.md").read_text()
    assert "Label issues" in card
    if how == "relabel":
        assert all(c.get("new") != c.get("old") for c in ours if "new" in c)


def test_the_html_report_draws_given_vs_suggested(glycan_sample_csv: Path) -> None:
    """The audit page of the shipped sample: a matrix per scored level with flags, its count
    the level's model-flagged findings (those carried up a hierarchy are not the model's)."""
    from curate.reports.html import render_audit

    data = curate.load("glycan", glycan_sample_csv)
    report = curate.audit("glycan", data, select=["GL305"])  # one model fit, not two
    own: dict[str, int] = {}
    for f in report.findings.iter_rows(named=True):
        if json.loads(f["details"])["implied_by"] is None:
            own[f["field"]] = own.get(f["field"], 0) + 1
    assert own, "the sample's scored levels flag nothing: the check below would be empty"
    html = render_audit(report, data=data)
    for field, n in own.items():
        assert f"Label issues in {field}: given vs suggested" in html
        assert f"The {n:,} labels confident learning flags" in html
