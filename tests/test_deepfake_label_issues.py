"""DF105: the deepfake family's label issues, from the user's detector probabilities only.

The manifest is the generated ILLUSION-like one (tests/deepfake_data.py); the probabilities are
those of a simulated detector, seeded: right about most samples, and unsure about the ones whose
label was flipped here. The flagged set must be exactly cleanlab's on the same probabilities.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
from deepfake_data import clean_manifest

import curate
from curate.cli.main import main


def manifest_and_probs(tmp_path: Path) -> tuple[Path, Path, pl.DataFrame, np.ndarray]:
    frame = clean_manifest(seed=4).frame()
    rng = np.random.default_rng(5)
    flipped = rng.random(frame.height) < 0.06
    truth = frame["label"].to_numpy()
    given = np.where(flipped, np.where(truth == "fake", "real", "fake"), truth)
    frame = frame.with_columns(pl.Series("label", given))
    # a detector: p(fake) high for fakes, low for reals, with noise
    p_fake = np.clip(
        np.where(truth == "fake", 0.8, 0.2) + rng.normal(0, 0.12, frame.height), 0.01, 0.99
    )
    data = tmp_path / "manifest.csv"
    frame.write_csv(data)
    probs = tmp_path / "detector.parquet"
    pl.DataFrame({"id": frame["sample_id"], "real": 1 - p_fake, "fake": p_fake}).write_parquet(
        probs
    )
    return data, probs, frame, np.column_stack([p_fake, 1 - p_fake])


def test_pred_probs_flag_exactly_cleanlabs_set(tmp_path: Path) -> None:
    from cleanlab.filter import find_label_issues

    data, probs, frame, p = manifest_and_probs(tmp_path)
    report = curate.audit("deepfake", data, pred_probs=probs, no_files=True)
    got = set(report.findings.filter(pl.col("rule") == "DF105")["row"].to_list())
    y = np.array([0 if v == "fake" else 1 for v in frame["label"]])  # classes sorted: fake, real
    # n_jobs=1: cleanlab's pool forks this threaded process and can hang; same result
    assert got == set(np.flatnonzero(find_label_issues(y, p, n_jobs=1)))
    assert got, "the flipped labels are found"
    assert report.stats["label_issues"]["label"]["source"] == "pred-probs"


def test_without_pred_probs_no_label_issue_check_runs(tmp_path: Path) -> None:
    data, _, _, _ = manifest_and_probs(tmp_path)
    report = curate.audit("deepfake", data, no_files=True)
    assert "DF105" not in report.rules_run


def test_the_fix_sets_the_detectors_label(tmp_path: Path) -> None:
    data, probs, _, _ = manifest_and_probs(tmp_path)
    report = curate.audit("deepfake", data, pred_probs=probs, no_files=True, select=["DF105"])
    hits = report.findings.to_pandas()
    out = tmp_path / "fixed"
    rc = main(
        ["fix", "deepfake", str(data), "--no-files", "--pred-probs", str(probs), "--select",
         "DF105", "--unsafe-fixes", "--out", str(out)]
    )  # fmt: skip
    assert rc == 0
    changes = [json.loads(line) for line in (out / "changelog.jsonl").read_text().splitlines()]
    assert len(changes) == len(hits)
    for c in changes:
        assert (
            c["rule"] == "DF105"
            and c["field"] == "label"
            and {c["old"], c["new"]}
            == {
                "real",
                "fake",
            }
        )


def test_probabilities_of_another_manifest_are_one_line(tmp_path: Path, capsys) -> None:
    data, _, frame, _ = manifest_and_probs(tmp_path)
    other = tmp_path / "other.csv"
    pl.DataFrame(
        {"id": [f"x{i}" for i in range(frame.height)], "real": 0.5, "fake": 0.5}
    ).write_csv(other)
    rc = main(["audit", "deepfake", str(data), "--no-files", "--pred-probs", str(other)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "id not in the dataset" in err[0], err
