"""Deepfake file rules (DF201-DF210) on a manifest whose rows point at small real media files
written by :mod:`media_data`: every planted defect at its row with its code; a clean set gives
none; the duplicate table uses the files' own hashes once they are read."""

from __future__ import annotations

import csv
import hashlib
import os
from pathlib import Path

import polars as pl
import pytest
from media_data import picture, write_media_set, write_mp4, write_wav

import curate
from curate.audits.deepfake.registry import CONTENT
from curate.core.rules import AuditContext
from curate.schemas.deepfake_tables import content_table

FIELDS = ["sample_id", "path", "split", "modality", "label", "generator", "sha256", "width",
          "height", "sample_rate", "duration_s", "fps"]  # fmt: skip


def _write_manifest(path: Path, rows: list[dict]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in FIELDS})
    return path


def _row(sid: str, path: str, split: str, modality: str, **kw: object) -> dict:
    return {"sample_id": sid, "path": path, "split": split, "modality": modality,
            "label": "real", **kw}  # fmt: skip


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    media = tmp_path / "media"
    write_media_set(media)
    sha_a = hashlib.sha256((media / "a.png").read_bytes()).hexdigest()
    rows = [
        _row("s00", "media/a.png", "train", "image", width=256, height=256, sha256=sha_a),
        _row("s01", "media/a_reencoded.jpg", "test", "image"),  # DF208 (train -> test)
        _row("s02", "media/a_resized.png", "validation", "image"),  # DF208
        _row("s03", "media/a_cropped.png", "train", "image"),  # DF210 (within train)
        _row("s04", "media/b.png", "validation", "image", width=200),  # DF206 width
        _row("s05", "media/c.jpg", "test", "image", sha256="0" * 64),  # DF207
        _row("s06", "media/tone.wav", "train", "audio", sample_rate=8000, duration_s=0.25),
        _row("s07", "media/tone2.wav", "test", "audio", sample_rate=16000),  # DF206 rate
        _row("s08", "media/clip.mp4", "train", "video", fps=12, duration_s=1.0),
        _row("s09", "media/trunc.png", "train", "image"),  # DF203
        _row("s10", "media/trunc.jpg", "train", "image"),  # DF203
        _row("s11", "media/trunc.wav", "train", "audio"),  # DF203
        _row("s12", "media/trunc.mp4", "train", "video"),  # DF203
        _row("s13", "media/really_png.wav", "train", "audio"),  # DF204 + DF205
        _row("s14", "media/empty.png", "train", "image"),  # DF202
        _row("s15", "media/notes.jpg", "train", "image"),  # DF202
        _row("s16", "media/gone.png", "train", "image"),  # DF201
        _row("s17", "media/a_copy.png", "test", "image"),  # exact copy: DF3xx, not DF208
        _row("s18", "media/clip.mp4", "train", "audio"),  # DF205: a video file
    ]
    return _write_manifest(tmp_path / "manifest.csv", rows)


def _codes(report) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for rule, record in (
        report.findings.filter(pl.col("rule").str.starts_with("DF2"))
        .select("rule", "record")
        .iter_rows()
    ):
        out.setdefault(rule, []).append(record)
    return {k: sorted(v) for k, v in out.items()}


def test_every_planted_defect_at_its_row(planted):
    report = curate.audit("deepfake", [str(planted)])
    assert _codes(report) == {
        "DF201": ["s16"],
        "DF202": ["s14", "s15"],
        "DF203": ["s09", "s10", "s11", "s12"],
        "DF204": ["s13"],
        "DF205": ["s13", "s18"],
        "DF206": ["s04", "s07"],
        "DF207": ["s05"],
        # a.png and its four copies form one clique; every pair of distinct bytes counts, at
        # the later row of the pair (s17's byte copy of s00 is the exact rules' business)
        "DF208": ["s01", "s02", "s17"],
        "DF209": ["s01", "s17"],
        "DF210": ["s03", "s17"],
    }
    f = report.findings
    leak = f.filter((pl.col("rule") == "DF208") & (pl.col("record") == "s01")).row(0, named=True)
    assert "of media/a.png (train, record s00) at pHash distance 2" in leak["message"]
    assert leak["message"].startswith("image media/a_reencoded.jpg (test)")
    assert leak["severity"] == "error"
    trunc = f.filter((pl.col("rule") == "DF203") & (pl.col("record") == "s11")).row(0, named=True)
    assert "header declares" in trunc["message"]
    exact = f.filter((pl.col("rule") == "DF208") & (pl.col("record") == "s17")).row(0, named=True)
    assert "a_cropped.png" in exact["message"]  # never paired with its byte-identical s00
    assert report.stats["media"]["files"] == 18  # clip.mp4 named twice, read once


def test_validation_test_near_copy_is_a_warning(tmp_path):
    media = tmp_path / "m"
    media.mkdir()
    pic = picture(7)
    pic.save(media / "v.png")
    pic.save(media / "t.jpg", quality=80)
    picture(8).save(media / "other.png")
    manifest = _write_manifest(
        tmp_path / "m.csv",
        [
            _row("v", "m/v.png", "validation", "image"),
            _row("t", "m/t.jpg", "test", "image"),
            _row("o", "m/other.png", "train", "image"),
        ],
    )
    report = curate.audit("deepfake", [str(manifest)])
    got = report.findings.filter(pl.col("rule").str.starts_with("DF2"))
    assert got.select("rule", "record", "severity").rows() == [("DF209", "t", "warning")]


def test_clean_set_gives_no_file_findings(tmp_path):
    media = tmp_path / "clean"
    media.mkdir()
    picture(11).save(media / "x.png")
    picture(12).save(media / "y.jpg", quality=90)
    write_wav(media / "z.wav", seconds=0.5, rate=16000)
    write_mp4(media / "w.mp4", frames=6, fps=6)
    sha = hashlib.sha256((media / "x.png").read_bytes()).hexdigest()
    manifest = _write_manifest(
        tmp_path / "clean.csv",
        [
            _row("x", "clean/x.png", "train", "image", width=256, height=256, sha256=sha),
            _row("y", "clean/y.jpg", "test", "image"),
            _row("z", "clean/z.wav", "train", "audio", sample_rate=16000, duration_s=0.5),
            _row("w", "clean/w.mp4", "test", "video", fps=6, duration_s=1.0, width=64),
        ],
    )
    report = curate.audit("deepfake", [str(manifest)])
    assert report.findings.filter(pl.col("rule").str.starts_with("DF2")).height == 0
    assert report.stats["media"]["errors"] == 0


def test_no_file_found_is_one_finding(tmp_path):
    manifest = _write_manifest(
        tmp_path / "m.csv", [_row(f"s{i}", f"nowhere/{i}.png", "train", "image") for i in range(5)]
    )
    report = curate.audit("deepfake", [str(manifest)])
    got = report.findings.filter(pl.col("rule") == "DF201")
    assert got.height == 1 and "none of the 5 files" in got["message"][0]
    assert "--media-root" in got["message"][0]


def test_no_files_opens_nothing(planted, monkeypatch):
    import curate.io.media as media

    def boom(*_a, **_k):
        raise AssertionError("a file was opened")

    monkeypatch.setattr(media, "scan_file", boom)
    report = curate.audit("deepfake", [str(planted)], no_files=True)
    assert report.findings.filter(pl.col("rule").str.starts_with("DF2")).height == 0


def test_computed_hashes_win_and_the_cache_is_reused(planted, monkeypatch):
    """The content table takes the files' hashes once scanned (s05's wrong manifest hash is
    replaced; s17, a byte copy of s00, gets s00's hash); a second audit reads no file."""
    for f in (planted.parent / "media").iterdir():
        os.utime(f, ns=(1_600_000_000_000_000_000,) * 2)
    data = curate.load("deepfake", [str(planted)])
    opts = data.options
    from curate.audits.deepfake import RULES

    ctx = AuditContext(data, opts, dict(RULES.tables))
    content = ctx.table(CONTENT)
    by = dict(content.select("record", "sha256").iter_rows())
    media = planted.parent / "media"
    assert by["s05"] == hashlib.sha256((media / "c.jpg").read_bytes()).hexdigest()
    assert by["s17"] == by["s00"]
    assert set(content.filter(pl.col("record") == "s05")["hash_source"].cast(str)) == {"computed"}
    assert content_table(data) is content  # cached on the data from now on

    import curate.io.media as m

    def boom(*_a, **_k):
        raise AssertionError("a file was opened")

    monkeypatch.setattr(m, "scan_file", boom)
    again = curate.audit("deepfake", [str(planted)])
    # read from the cache (no file opened), and the report says the same as the first run's:
    # it holds what was read, not how (no cache hits, no time)
    assert _codes(again) == _codes(curate.audit("deepfake", [str(planted)]))
    assert again.stats["media"] == data.stats["media"]  # the first scan's, which opened them
    assert "from_cache" not in again.stats["media"]
    # the cache is in the user's cache folder, never in the dataset's folder
    from curate.io.media import default_cache

    assert default_cache(planted).is_file()
    assert not (planted.parent / ".curate-cache").exists()


def test_fix_reaudits_the_inputs_media_not_its_staging_folder(planted, tmp_path):
    """The fixed manifest keeps the input's relative paths; its re-audit resolves them where
    the input's were, so no file is "missing" that was there, and no temporary path reaches the
    card or the re-audit's report."""
    before = curate.audit("deepfake", [str(planted)])
    out = tmp_path / "fixed"
    done = curate.fix("deepfake", [str(planted)], out)
    after = done.fix.after
    assert after is not None
    missing = lambda r: set(r.findings.filter(pl.col("rule") == "DF201")["record"].to_list())  # noqa: E731
    assert missing(after) <= missing(before)
    assert not missing(before) or after.stats["media"]["files"] > 0
    card = (out / "README.md").read_text("utf-8")
    assert "curate-fix-" not in card and "curate-fix-" not in (out / "audit.after.json").read_text()
