"""The media scan (hash, real kind, metadata, cache) and the near-duplicate pair finder, on
small real files written by :mod:`media_data`."""

from __future__ import annotations

import hashlib
import os
from itertools import combinations
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from media_data import write_media_set

import curate.io.media as media
from curate.core.errors import UsageError
from curate.io.media import near_duplicate_pairs, scan_media

OLD_NS = 1_600_000_000_000_000_000  # 2020: far from "racy"


def _age(folder: Path) -> None:
    for f in folder.iterdir():
        if f.is_file():
            os.utime(f, ns=(OLD_NS, OLD_NS))


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    root = tmp_path_factory.mktemp("media")
    return root, write_media_set(root)


@pytest.fixture(scope="module")
def scanned(planted: tuple[Path, dict[str, list[str]]]) -> pl.DataFrame:
    root, _ = planted
    names = [*sorted(p.name for p in root.iterdir()), "gone.png"]
    return scan_media(names, root=root, workers=2)


def _row(df: pl.DataFrame, name: str) -> dict:
    rows = df.filter(pl.col("path") == name).to_dicts()
    assert len(rows) == 1, name
    return rows[0]


def test_every_defect_at_its_file(planted, scanned):
    _, plan = planted
    expected = {
        **dict.fromkeys(plan["truncated"], "truncated"),
        "empty.png": "empty",
        "notes.jpg": "not-media",
        "gone.png": "missing",
    }
    got = dict(
        scanned.filter(pl.col("error_kind").is_not_null()).select("path", "error_kind").iter_rows()
    )
    assert got == expected
    assert all(scanned.filter(pl.col("error_kind").is_not_null())["error"].str.len_chars() > 0)


def test_real_kind_and_metadata(planted, scanned):
    root, _ = planted
    wav_png = _row(scanned, "really_png.wav")
    assert (wav_png["kind"], wav_png["format"], wav_png["error_kind"]) == ("image", "PNG", None)
    png = _row(scanned, "a_resized.png")
    assert (png["width"], png["height"], png["mode"]) == (128, 128, "RGB")
    wav = _row(scanned, "tone.wav")
    assert (wav["kind"], wav["sample_rate"], wav["channels"], wav["frames"]) == (
        "audio",
        8000,
        1,
        2000,
    )
    assert wav["duration_s"] == pytest.approx(0.25)
    mp4 = _row(scanned, "clip.mp4")
    assert (mp4["kind"], mp4["width"], mp4["height"], mp4["fps"], mp4["frames"]) == (
        "video",
        64,
        48,
        12.0,
        12,
    )
    assert mp4["duration_s"] == pytest.approx(1.0)
    for name in ("a.png", "clip.mp4", "trunc.wav", "empty.png"):
        assert (
            _row(scanned, name)["sha256"] == hashlib.sha256((root / name).read_bytes()).hexdigest()
        )
        assert _row(scanned, name)["size"] == (root / name).stat().st_size
    assert _row(scanned, "a.png")["sha256"] == _row(scanned, "a_copy.png")["sha256"]
    assert _row(scanned, "gone.png")["sha256"] is None


def test_one_row_per_distinct_path_in_order(planted):
    root, _ = planted
    df = scan_media(["b.png", "a.png", "b.png"], root=root, workers=1)
    assert df["path"].to_list() == ["b.png", "a.png"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_permission_denied_is_a_row(tmp_path):
    f = tmp_path / "locked.png"
    f.write_bytes(b"\x89PNG\r\n\x1a\n")
    f.chmod(0)
    row = scan_media(["locked.png"], root=tmp_path).row(0, named=True)
    assert row["error_kind"] == "unreadable" and "permission" in row["error"]


def test_folder_is_a_row_not_a_crash(tmp_path):
    (tmp_path / "sub.png").mkdir()
    row = scan_media(["sub.png"], root=tmp_path).row(0, named=True)
    assert row["error_kind"] == "unreadable"


def test_cache_rehashes_only_the_touched_file(tmp_path, monkeypatch):
    root = tmp_path / "data"
    write_media_set(root)
    _age(root)
    names = sorted(p.name for p in root.iterdir())
    cache = tmp_path / media.CACHE_DIR / media.CACHE_FILE
    first = scan_media(names, root=root, cache=cache, workers=1)
    assert not first["cached"].any()
    assert media.is_curate_folder(cache.parent)  # the folder carries curate's marker

    opened: list[str] = []
    real = media.scan_file

    def counting(path: str, abspath: str | None = None) -> dict:
        opened.append(path)
        return real(path, abspath)

    monkeypatch.setattr(media, "scan_file", counting)
    again = scan_media(names, root=root, cache=cache, workers=1)
    assert opened == []
    assert again.drop("cached").equals(first.drop("cached"))
    assert again["cached"].all()

    (root / "b.png").write_bytes((root / "c.jpg").read_bytes())  # new content, new mtime
    os.utime(root / "b.png", ns=(OLD_NS + 10**9, OLD_NS + 10**9))
    third = scan_media(names, root=root, cache=cache, workers=1)
    assert opened == ["b.png"]
    assert _row(third, "b.png")["sha256"] == _row(first, "c.jpg")["sha256"]
    assert _row(third, "b.png")["format"] == "JPEG"


def test_recent_files_are_not_cached(tmp_path, monkeypatch):
    """A file modified within RACY_NS of the scan may change again within its mtime tick."""
    (tmp_path / "x.wav").write_bytes(b"")
    cache = tmp_path / "c.parquet"
    scan_media(["x.wav"], root=tmp_path, cache=cache)
    assert scan_media(["x.wav"], root=tmp_path, cache=cache)["cached"].to_list() == [False]


def test_cache_never_replaces_a_foreign_file(tmp_path):
    (tmp_path / "a.png").write_bytes(b"")
    _age(tmp_path)
    foreign = tmp_path / "mine.parquet"
    pl.DataFrame({"x": [1]}).write_parquet(foreign)
    before = foreign.read_bytes()
    with pytest.raises(UsageError, match="not a curate media cache"):
        scan_media(["a.png"], root=tmp_path, cache=foreign)
    text = tmp_path / "notes.txt"
    text.write_text("keep me")
    with pytest.raises(UsageError, match="not a curate media cache"):
        scan_media(["a.png"], root=tmp_path, cache=text)
    assert foreign.read_bytes() == before and text.read_text() == "keep me"


def test_cache_in_a_read_only_place_is_skipped_unless_asked(tmp_path, monkeypatch):
    (tmp_path / "a.png").write_bytes(b"")
    _age(tmp_path)

    def refuse(*_a, **_k):
        raise PermissionError(13, "Permission denied", "x")

    monkeypatch.setattr(media, "write_cache", refuse)
    assert scan_media(["a.png"], root=tmp_path, cache=tmp_path / "c.parquet").height == 1
    with pytest.raises(PermissionError):
        scan_media(["a.png"], root=tmp_path, cache=tmp_path / "c.parquet", strict_cache=True)


def test_planted_near_duplicates(scanned, planted):
    _, plan = planted
    pairs = near_duplicate_pairs(scanned, 10)
    group = {"a.png", *plan["exact"], *plan["near"]}
    assert {(a, b) for a, b, _ in pairs.iter_rows()} == set(combinations(sorted(group), 2))
    d = {(a, b): dist for a, b, dist in pairs.iter_rows()}
    assert d[("a.png", "a_copy.png")] == 0
    assert 0 < d[("a.png", "a_cropped.png")] <= 10


def _brute(hashes: dict[str, int], k: int) -> set[tuple[str, str, int]]:
    out = set()
    for a, b in combinations(sorted(hashes), 2):
        dist = (hashes[a] ^ hashes[b]).bit_count()
        if dist <= k:
            out.add((a, b, dist))
    return out


@settings(max_examples=150, deadline=None)
@given(
    base=st.lists(st.integers(0, 2**64 - 1), min_size=0, max_size=8),
    flips=st.lists(
        st.tuples(st.integers(0, 7), st.lists(st.integers(0, 63), max_size=12)), max_size=25
    ),
    k=st.integers(0, 20),
)
def test_pairs_match_brute_force(base, flips, k):
    """Near-copies of a few random hashes (a few bits flipped) plus the originals: the banded
    join returns exactly the pairs a loop over all pairs finds."""
    values = list(base)
    for which, bits in flips:
        if base:
            v = base[which % len(base)]
            for bit in bits:
                v ^= 1 << bit
            values.append(v)
    hashes = {f"f{i:03d}": v for i, v in enumerate(values)}
    frame = pl.DataFrame(
        {"path": list(hashes), "phash": list(hashes.values())},
        schema={"path": pl.String, "phash": pl.UInt64},
    )
    got = {tuple(r) for r in near_duplicate_pairs(frame, k).iter_rows()}
    assert got == _brute(hashes, k)


def test_null_hashes_and_bad_distance(scanned):
    assert near_duplicate_pairs(scanned.filter(pl.col("phash").is_null()), 5).height == 0
    with pytest.raises(UsageError):
        near_duplicate_pairs(scanned, 64)
