"""The deepfake family end to end on real media files: the generated ILLUSION-like manifest
with one small real file per sample (PNG, WAV, MP4 written here) and no ``sha256`` column, so
every content comparison uses the hashes curate computes from the files.

A clean set reports nothing at all; injected defects — an exact copy leaked into test, a copy
within a split, one content under two labels, a resized picture across splits, a subject in
two splits — are each found at their sample, by the rule that names them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest
from deepfake_data import clean_manifest
from media_data import picture, write_mp4, write_wav

import curate

#: Manifest fields kept: the media metadata columns are left empty (the generated values are
#: not the small files' own; DF206 compares stated metadata with real files elsewhere).
DROP = ["sha256", "duration_s", "width", "height", "fps", "sample_rate"]


def _write_files(rows: list[dict], root: Path) -> None:
    """One distinct real file per sample, of its modality."""
    for i, r in enumerate(rows):
        path = root / r["path"]
        path.parent.mkdir(parents=True, exist_ok=True)
        if r["modality"] == "image":
            picture(1000 + i, 64).save(path)
        elif r["modality"] == "audio":
            write_wav(path, seconds=0.2, rate=8000, freq=200.0 + 7 * i)
        else:
            write_mp4(path, frames=3, fps=6, seed=1000 + i)


@pytest.fixture(scope="module")
def media_set(tmp_path_factory) -> tuple[Path, list[dict]]:
    root = tmp_path_factory.mktemp("deepfake_e2e")
    rows = clean_manifest().rows
    _write_files(rows, root)
    return root, rows


def _audit(root: Path, rows: list[dict], name: str):
    manifest = root / f"{name}.csv"
    pl.DataFrame(rows, infer_schema_length=None).drop(DROP).write_csv(manifest)
    return curate.audit("deepfake", [str(manifest)])


def _index(rows: list[dict], **where: str) -> list[int]:
    return [i for i, r in enumerate(rows) if all(r[k] == v for k, v in where.items())]


def test_clean_set_with_real_files_reports_nothing(media_set):
    root, rows = media_set
    report = _audit(root, rows, "clean")
    assert report.findings.height == 0, report.findings.select("rule", "record", "message").rows()
    assert report.stats["media"]["errors"] == 0


def test_injected_defects_are_found_at_their_samples(media_set, tmp_path):
    src, rows = media_set
    root = tmp_path / "broken"
    shutil.copytree(src, root)
    rows = [dict(r) for r in rows]
    train_img = _index(rows, split="train", modality="image", label="real")
    test_img = _index(rows, split="test", modality="image", label="real")
    val_img = _index(rows, split="validation", modality="image", label="real")
    train_wav = _index(rows, split="train", modality="audio", label="real")
    train_fake_wav = _index(rows, split="train", modality="audio", label="fake")

    def copy(a: int, b: int) -> None:
        shutil.copyfile(root / rows[a]["path"], root / rows[b]["path"])

    leak, leaked = train_img[0], test_img[0]
    copy(leak, leaked)  # DF303: the same bytes in train and test
    twin, twin_of = train_wav[1], train_wav[0]
    copy(twin_of, twin)  # DF302: the same bytes twice in train
    flip, flipped = train_wav[2], train_fake_wav[0]
    copy(flip, flipped)  # DF305: one content, labelled real and fake
    near = val_img[0]  # DF208: a resized copy of a train picture in validation
    picture(1000 + train_img[1], 64).resize((48, 48)).save(root / rows[near]["path"])
    moved = next(i for i in test_img if rows[i]["subject_id"] != rows[leaked]["subject_id"])
    rows[moved]["subject_id"] = rows[train_img[2]]["subject_id"]  # DF401: a train subject in test

    report = _audit(root, rows, "broken")
    hits = {(f["rule"], f["record"]) for f in report.findings.iter_rows(named=True)}
    sid = lambda i: rows[i]["sample_id"]  # noqa: E731
    assert ("DF303", sid(leaked)) in hits
    assert ("DF302", sid(twin)) in hits
    assert ("DF305", sid(flipped)) in hits or ("DF305", sid(flip)) in hits
    assert ("DF208", sid(near)) in hits
    assert ("DF401", sid(moved)) in hits
    # nothing else: every finding concerns an injected sample (or its counterpart)
    touched = {sid(i) for i in (leak, leaked, twin, twin_of, flip, flipped, near, moved)}
    touched |= {sid(train_img[1]), sid(train_img[2])}
    stray = [(r, rec) for r, rec in hits if rec not in touched and r != "DF402"]
    assert stray == [], stray
    # content comparisons used the files' own hashes (the manifest has none)
    assert report.stats["media"]["errors"] == 0
