"""Readers for the Hub's layouts and for inputs that are not plain local files (``curate.io.read``).

* the multi-config layout: a folder whose README.md card declares ``configs`` is read through the
  card's ``data_files``, the default config (as ``datasets`` picks it) or ``FOLDER:CONFIG``;
* ``hf://datasets/...`` through ``huggingface_hub.HfFileSystem``; there is no network here, so an
  fsspec in-memory file system stands in for the Hub (same interface: ``info``, ``glob``,
  ``open``, ``cat_file``), with the Hub's LFS sha256 in ``info``;
* ``.gz`` and ``.zst`` inputs, decompressed as they are read;
* ``-`` for standard input, its format sniffed.

Every case uses the real MQuAKE and glycan samples shipped in the package.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, SAMPLE, named_pipe
from fsspec.implementations.memory import MemoryFileSystem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import curate.io.folders
import curate.io.hub
import curate.io.read
from curate.cli.main import main
from curate.core.errors import InputError, UsageError
from curate.families import get_family
from curate.io.folders import hub_configs
from curate.io.read import detect_format, local_input, open_source, sha256_of

GLYCANS = ROOT / "curate" / "data" / "samples" / "glycan_taxonomy_sample.csv"
KE = get_family("mquake")
GLYCAN = get_family("glycan")


def records() -> list[dict]:
    return json.loads(SAMPLE.read_text(encoding="utf-8"))


def rows(path) -> list[tuple[str | None, dict]]:
    return [(b.split, r) for b in open_source(path).batches for r in b.rows]


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def one_error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("curate: error: "), err
    assert "Traceback" not in err
    return lines[0]


def zstd(data: bytes) -> bytes:
    out = pa.BufferOutputStream()
    with pa.CompressedOutputStream(out, "zstd") as f:
        f.write(data)
    return out.getvalue().to_pybytes()


def jsonl(recs: list[dict]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs).encode()


# --------------------------------------------------------------------------- multi-config layout

CARD = """---
license: mit
configs:
- config_name: easy
  data_files:
  - split: train
    path: easy/train-*
  - split: test
    path: easy/test-*
- config_name: hard
  default: true
  data_files:
  - split: train
    path:
    - hard/train-00000-of-00002.parquet
    - hard/train-00001-of-00002.parquet
  - split: validation
    path: hard/validation-*.parquet
---

# Two configs of MQuAKE cases
"""


def _parquet(path: Path, recs: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(recs), path)


@pytest.fixture
def multi(tmp_path: Path) -> tuple[Path, dict[str, dict[str, list[int]]]]:
    """``<config>/<split>-*.parquet`` with a card: the layout the Hub writes for several configs.

    Returns the folder and config → split → case ids.
    """
    recs = records()
    root = tmp_path / "repo"
    parts = {
        "easy/train-00000-of-00001.parquet": recs[0:10],
        "easy/test-00000-of-00001.parquet": recs[10:14],
        "hard/train-00000-of-00002.parquet": recs[14:30],
        "hard/train-00001-of-00002.parquet": recs[30:40],
        "hard/validation-00000-of-00001.parquet": recs[40:52],
    }
    for rel, chunk in parts.items():
        _parquet(root / rel, chunk)
    (root / "README.md").write_text(CARD, encoding="utf-8")
    ids = {
        "easy": {
            "train": [r["case_id"] for r in recs[0:10]],
            "test": [r["case_id"] for r in recs[10:14]],
        },
        "hard": {
            "train": [r["case_id"] for r in recs[14:40]],
            "validation": [r["case_id"] for r in recs[40:52]],
        },
    }
    return root, ids


def split_ids(path) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for split, rec in rows(path):
        out.setdefault(split, []).append(rec["case_id"])
    return out


def test_multi_config_reads_the_default_config_not_folder_names(multi) -> None:
    root, ids = multi
    # Without the card this layout reads as splits named "easy" and "hard"; with it, the
    # default config's splits, in the card's order, files in the listed order.
    assert split_ids(root) == ids["hard"]
    src = open_source(root)
    assert (src.format, src.config) == ("hf-parquet", "hard")


def test_folder_colon_config_chooses_a_config(multi, capsys) -> None:
    root, ids = multi
    assert split_ids(f"{root}:easy") == ids["easy"]
    assert open_source(f"{root}:easy").path == root
    assert local_input(f"{root}:easy") == root
    rc, out, _ = run(["validate", "mquake", f"{root}:easy"], capsys)
    assert rc == 0 and "14 records" in out
    data = KE.load([f"{root}:easy"])
    assert data.inputs[0].splits == {"train": 10, "test": 4}


def test_unknown_config_is_exit_2_listing_the_configs(multi, capsys) -> None:
    root, _ = multi
    rc, _, err = run(["audit", "mquake", f"{root}:medium"], capsys)
    line = one_error_line(err)
    assert rc == 2
    assert "no config 'medium'" in line and "easy, hard" in line and str(root) in line


def test_several_configs_without_a_default_name_them_all(multi, capsys) -> None:
    root, ids = multi
    card = (root / "README.md").read_text().replace("  default: true\n", "")
    (root / "README.md").write_text(card)
    rc, _, err = run(["validate", "mquake", str(root)], capsys)
    line = one_error_line(err)
    assert rc == 2 and "none is the default" in line and "easy, hard" in line
    assert f"{root}:CONFIG" in line
    assert split_ids(f"{root}:hard") == ids["hard"]


def test_a_config_named_default_is_the_default(multi) -> None:
    root, ids = multi
    card = (root / "README.md").read_text().replace("  default: true\n", "")
    (root / "README.md").write_text(card.replace("config_name: easy", "config_name: default"))
    assert split_ids(root) == ids["easy"]
    assert open_source(root).config == "default"


def test_two_defaults_are_refused(multi) -> None:
    root, _ = multi
    card = (root / "README.md").read_text()
    card = card.replace("- config_name: easy\n", "- config_name: easy\n  default: true\n")
    (root / "README.md").write_text(card)
    with pytest.raises(InputError, match=r"several configs as the default \(easy, hard\)"):
        open_source(root)


def test_data_files_forms_and_data_dir(tmp_path: Path) -> None:
    """A string, a list of strings (the train split), a {split: path} mapping; data_dir."""
    recs = records()
    root = tmp_path / "repo"
    _parquet(root / "x" / "all.parquet", recs[:5])
    _parquet(root / "x" / "more.parquet", recs[5:8])
    card = (
        "---\nconfigs:\n"
        "- config_name: one\n  data_files: x/all.parquet\n"
        "- config_name: two\n  data_files: [x/all.parquet, x/more.parquet]\n"
        "- config_name: three\n  data_dir: x\n  data_files: {test: more.parquet, train: all*}\n"
        "---\n"
    )
    (root / "README.md").write_text(card)
    assert {s: len(v) for s, v in split_ids(f"{root}:one").items()} == {"train": 5}
    assert {s: len(v) for s, v in split_ids(f"{root}:two").items()} == {"train": 8}
    assert {s: len(v) for s, v in split_ids(f"{root}:three").items()} == {"test": 3, "train": 5}
    assert hub_configs(root) is not None and list(hub_configs(root)) == ["one", "two", "three"]


def test_config_files_in_text_formats_and_compressed(tmp_path: Path) -> None:
    """data_files need not be parquet: JSON Lines (gzip) and JSON, each tagged with its split."""
    recs = records()
    root = tmp_path / "repo"
    (root / "data").mkdir(parents=True)
    (root / "data" / "train.jsonl.gz").write_bytes(gzip.compress(jsonl(recs[:30])))
    (root / "data" / "test.json").write_text(json.dumps(recs[30:]))
    (root / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n"
        "  - split: train\n    path: data/train.jsonl.gz\n"
        "  - split: test\n    path: data/test.json\n---\n"
    )
    src = open_source(root)
    assert src.format == "hf-files"
    got = [(b.split, b.offset, len(b.rows)) for b in src.batches]
    assert got == [("train", 0, 30), ("test", 30, 22)]
    data = KE.load([root])
    assert data.inputs[0].splits == {"train": 30, "test": 22}
    assert len(data.schema_findings) == 0


@pytest.mark.parametrize(
    ("card", "message"),
    [
        ("---\nconfigs: [\n---\n", "not valid YAML"),
        ("---\nconfigs: {a: 1}\n---\n", "must be a list"),
        ("---\nconfigs:\n- data_files: a.parquet\n---\n", "no `config_name`"),
        (
            "---\nconfigs:\n- config_name: a\n  data_files: nothing-*.parquet\n---\n",
            "no file matches",
        ),
        (
            "---\nconfigs:\n- config_name: a\n  data_files: ../outside.parquet\n---\n",
            "not a path inside",
        ),
        (
            "---\nconfigs:\n- config_name: a\n  data_files: [{split: tr-ain, path: x}]\n---\n",
            "split name",
        ),
        ("---\nconfigs:\n- config_name: a\n  data_files: 42\n---\n", "data_files must be"),
    ],
)
def test_broken_cards_are_one_line(tmp_path: Path, capsys, card: str, message: str) -> None:
    root = tmp_path / "repo"
    _parquet(root / "data" / "train-00000-of-00001.parquet", records()[:3])
    (root / "README.md").write_text(card)
    rc, _, err = run(["validate", "mquake", str(root)], capsys)
    assert rc == 2 and message in one_error_line(err)


def test_yaml_error_names_the_card_line(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    _parquet(root / "data" / "train-00000-of-00001.parquet", records()[:3])
    (root / "README.md").write_text("---\nlicense: mit\nconfigs:\n  - config_name: [a\n---\n")
    with pytest.raises(InputError) as e:
        open_source(root)
    assert e.value.path == f"{root}/README.md" and e.value.position in ("4", "5")


def test_a_card_without_configs_keeps_the_file_layout(tmp_path: Path) -> None:
    recs = records()
    root = tmp_path / "repo"
    _parquet(root / "data" / "train-00000-of-00001.parquet", recs[:40])
    _parquet(root / "data" / "test-00000-of-00001.parquet", recs[40:])
    (root / "README.md").write_text("---\nlicense: mit\n---\n# no configs\n")
    assert {s: len(v) for s, v in split_ids(root).items()} == {"test": 12, "train": 40}
    with pytest.raises(InputError, match=r"no config 'x': the folder has no README\.md card"):
        open_source(f"{root}:x")


def test_curate_exports_read_back_through_their_card(tmp_path: Path, capsys) -> None:
    """An export's card declares ``configs`` (data/<split>-*); reading it back goes through
    them and gives the same records."""
    out = tmp_path / "hf"
    rc, _, _ = run(["export", "mquake", str(SAMPLE), "--out", str(out)], capsys)
    assert rc == 0
    assert list(hub_configs(out)) == ["default"]
    src = open_source(out)
    assert src.config == "default"
    ids = [r["case_id"] for _, r in rows(out)]
    assert sorted(ids) == sorted(r["case_id"] for r in records())
    assert run(["validate", "mquake", f"{out}:default"], capsys)[0] == 0


def test_an_existing_path_with_a_colon_is_a_path(tmp_path: Path) -> None:
    p = tmp_path / "cases:v2.json"
    p.write_text(json.dumps(records()[:3]))
    assert len(rows(p)) == 3 and len(rows(str(p))) == 3


# --------------------------------------------------------------------------- hf:// (faked Hub)


class FakeHub(MemoryFileSystem):
    """An in-memory stand-in for ``HfFileSystem``: its own store, the Hub's ``lfs`` info on
    parquet files (as the Hub stores them), and a record of what was opened."""

    protocol = "fakehub"

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.store = {}
        self.pseudo_dirs = [""]
        self.opened: list[str] = []

    def info(self, path, **kwargs):
        info = dict(super().info(path, **kwargs))
        if info["type"] == "file" and info["name"].endswith(".parquet"):
            data = self.cat_file(path)
            info["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        return info

    def glob(self, path, **kwargs):
        found = super().glob(path, **kwargs)
        if kwargs.get("detail"):
            return {name: self.info(name) for name in found}
        return found

    def _open(self, path, mode="rb", **kwargs):
        # A fresh file object per open, as the Hub's are (the memory file system shares one).
        if mode != "rb":
            return super()._open(path, mode, **kwargs)
        self.opened.append(path)
        return self.file_class(self.cat_file(path))

    file_class = io.BytesIO


@pytest.fixture
def hub(monkeypatch, multi) -> FakeHub:
    """``hf://datasets/org/mquake`` holds the multi-config repo plus a JSON file and a CSV."""
    fs = FakeHub(skip_instance_cache=True)
    root, _ = multi
    for f in sorted(root.rglob("*")):
        if f.is_file():
            fs.pipe_file(f"datasets/org/mquake/{f.relative_to(root).as_posix()}", f.read_bytes())
    fs.pipe_file("datasets/org/mquake/extra/cases.json", SAMPLE.read_bytes())
    fs.pipe_file("datasets/org/mquake/extra/cases.jsonl.zst", zstd(jsonl(records())))
    fs.pipe_file("datasets/org/glycans/taxonomy.csv.gz", gzip.compress(GLYCANS.read_bytes()))
    monkeypatch.setattr(curate.io.hub, "hub_fs", lambda: fs)
    return fs


def test_hf_file_is_read_and_its_url_kept_whole(hub: FakeHub, capsys) -> None:
    url = "hf://datasets/org/mquake/extra/cases.json"
    src = open_source(url)
    assert str(src.path) == url and src.path.name == "cases.json"  # not hf:/datasets/...
    assert sum(len(b.rows) for b in src.batches) == 52
    assert src.sha256 == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    rc, out, err = run(["audit", "mquake", url, "--format", "json"], capsys)
    assert rc in (0, 1), err
    report = json.loads(out)
    assert report["inputs"][0]["path"] == url
    assert local_input(url) is None


def test_hf_compressed_files(hub: FakeHub) -> None:
    assert len(rows("hf://datasets/org/mquake/extra/cases.jsonl.zst")) == 52
    data = GLYCAN.load(["hf://datasets/org/glycans/taxonomy.csv.gz"])
    assert data.inputs[0].records == 639


def test_hf_repository_through_its_card(hub: FakeHub, multi) -> None:
    _, ids = multi
    assert split_ids("hf://datasets/org/mquake") == ids["hard"]
    assert split_ids("hf://datasets/org/mquake/") == ids["hard"]
    hub.opened.clear()
    assert split_ids("hf://datasets/org/mquake:easy") == ids["easy"]
    src = open_source("hf://datasets/org/mquake:easy")
    assert (src.format, src.config, str(src.path)) == (
        "hf-parquet",
        "easy",
        "hf://datasets/org/mquake",
    )
    # Only the chosen config's files are downloaded.
    parquet = [p for p in hub.opened if p.endswith(".parquet")]
    assert parquet and all("/easy/" in p for p in parquet)


def test_hf_folder_hash_uses_the_hubs_lfs_hashes(hub: FakeHub) -> None:
    src = open_source("hf://datasets/org/mquake:easy")
    h = hashlib.sha256()
    for rel in [
        "README.md",
        "easy/test-00000-of-00001.parquet",
        "easy/train-00000-of-00001.parquet",
    ]:
        data = hub.cat_file(f"datasets/org/mquake/{rel}")
        h.update(f"{rel}\0{hashlib.sha256(data).hexdigest()}\n".encode())
    assert src.sha256 == h.hexdigest()
    assert sha256_of("hf://datasets/org/mquake:easy") == src.sha256


def test_hf_unknown_config_lists_the_configs(hub: FakeHub, capsys) -> None:
    rc, _, err = run(["validate", "mquake", "hf://datasets/org/mquake:nope"], capsys)
    line = one_error_line(err)
    assert rc == 2 and "hf://datasets/org/mquake" in line and "easy, hard" in line


def test_hf_missing_or_private_repository_is_one_line(hub: FakeHub, capsys) -> None:
    rc, _, err = run(["audit", "mquake", "hf://datasets/org/private/data.json"], capsys)
    line = one_error_line(err)
    assert rc == 2 and "not found on the Hugging Face Hub" in line and "HF_TOKEN" in line


class Offline(FakeHub):
    def info(self, path, **kwargs):
        raise ConnectionError("[Errno -2] Name or service not known")


class _Breaking(io.BytesIO):
    def read(self, n=-1):
        if self.tell() > 100:
            raise TimeoutError("read timed out")
        return super().read(64 if n is None or n < 0 else min(n, 64))


class DropsMidway(FakeHub):
    """Answers ``info`` but the download breaks after the first bytes."""

    file_class = _Breaking


def test_hub_unreachable_is_one_line(monkeypatch, capsys) -> None:
    monkeypatch.setattr(curate.io.hub, "hub_fs", lambda: Offline(skip_instance_cache=True))
    rc, _, err = run(["validate", "mquake", "hf://datasets/org/mquake"], capsys)
    line = one_error_line(err)
    assert rc == 2 and "ConnectionError" in line and "network" in line


def test_hub_download_breaking_midway_is_one_line(monkeypatch, capsys) -> None:
    fs = DropsMidway(skip_instance_cache=True)
    fs.pipe_file("datasets/org/x/cases.jsonl", jsonl(records()))
    monkeypatch.setattr(curate.io.hub, "hub_fs", lambda: fs)
    rc, _, err = run(["validate", "mquake", "hf://datasets/org/x/cases.jsonl"], capsys)
    line = one_error_line(err)
    assert rc == 2 and "failed after" in line and "TimeoutError" in line


def test_without_huggingface_hub_hf_inputs_say_what_to_install(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import fails as if absent
    rc, _, err = run(["validate", "mquake", "hf://datasets/org/mquake"], capsys)
    line = one_error_line(err)
    assert rc == 2 and "pip install 'curate[hub]'" in line


def test_real_hffilesystem_offline_is_one_line(tmp_path: Path) -> None:
    """The real HfFileSystem, told it is offline (there is no network here anyway)."""
    env = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-m", "curate", "validate", "mquake", "hf://datasets/org/name/x.json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    line = one_error_line(proc.stderr)
    assert line.startswith("curate: error: hf://datasets/org/name/x.json: ")


# --------------------------------------------------------------------------- .gz and .zst


COMPRESS = {".gz": gzip.compress, ".zst": zstd}


@pytest.mark.parametrize("ext", [".gz", ".zst"])
@pytest.mark.parametrize("fmt", ["json", "jsonl"])
def test_compressed_ke_inputs_read_like_plain_ones(tmp_path: Path, ext: str, fmt: str) -> None:
    plain = tmp_path / f"cases.{fmt}"
    plain.write_bytes(SAMPLE.read_bytes() if fmt == "json" else jsonl(records()))
    packed = tmp_path / f"cases.{fmt}{ext}"
    packed.write_bytes(COMPRESS[ext](plain.read_bytes()))
    assert detect_format(packed) == fmt
    assert rows(packed) == rows(plain)
    src = open_source(packed)
    assert src.sha256 == hashlib.sha256(packed.read_bytes()).hexdigest()  # the stored bytes
    a, b = KE.load([plain]), KE.load([packed])
    assert a.cases.drop("row").equals(b.cases.drop("row"))


@pytest.mark.parametrize("ext", [".gz", ".zst"])
def test_compressed_csv_reads_like_plain(tmp_path: Path, ext: str) -> None:
    packed = tmp_path / f"taxonomy.csv{ext}"
    packed.write_bytes(COMPRESS[ext](GLYCANS.read_bytes()))
    a, b = GLYCAN.load([GLYCANS]), GLYCAN.load([packed])
    assert a.inputs[0].records == b.inputs[0].records == 639
    assert a.tables[0].raw.equals(b.tables[0].raw)


def test_compressed_text_keeps_encodings_and_byte_offsets(tmp_path: Path) -> None:
    """--encoding, BOMs and the offset of a bad byte work on the decompressed bytes."""
    recs = records()[:4]
    recs[1]["answer"] = "Z@rich"
    text = "".join(json.dumps(r) + "\n" for r in recs).replace("Z@rich", "Zürich")
    p = tmp_path / "latin.jsonl.gz"
    p.write_bytes(gzip.compress(text.encode("latin-1")))
    with pytest.raises(InputError) as e:  # raised when the records are asked for
        [b.rows for b in open_source(p).batches]
    bad = text.encode("latin-1").index("ü".encode("latin-1"))
    assert f"byte offset {bad}" in e.value.message and "latin-1" in e.value.message
    assert [r["answer"] for r in rows_enc(p, "latin-1")][1] == "Zürich"
    q = tmp_path / "bom16.csv.zst"
    q.write_bytes(zstd("\ufeff".encode("utf-16-le") + GLYCANS.read_text().encode("utf-16-le")))
    assert GLYCAN.load([q]).inputs[0].records == 639


def rows_enc(path, encoding):
    return [r for b in open_source(path, encoding=encoding).batches for r in b.rows]


@pytest.mark.parametrize("ext", [".gz", ".zst"])
def test_corrupt_compressed_input_is_one_line(tmp_path: Path, capsys, ext: str) -> None:
    data = COMPRESS[ext](jsonl(records()))
    cut = tmp_path / f"cut.jsonl{ext}"
    cut.write_bytes(data[: len(data) // 2])
    rc, _, err = run(["validate", "mquake", str(cut)], capsys)
    line = one_error_line(err)
    assert rc == 2 and f"truncated or corrupt {'gzip' if ext == '.gz' else 'zstd'} data" in line
    junk = tmp_path / f"junk.json{ext}"
    junk.write_bytes(b"this was never compressed")
    rc, _, err = run(["validate", "mquake", str(junk)], capsys)
    assert rc == 2 and str(junk) in one_error_line(err)


def test_compressed_parquet_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "x.parquet.gz"
    p.write_bytes(b"\x1f\x8b whatever")
    with pytest.raises(InputError, match="parquet compresses its pages itself"):
        open_source(p)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ext=st.sampled_from([".gz", ".zst"]),
    fmt=st.sampled_from(["json", "jsonl", "csv"]),
    keep=st.floats(min_value=0.0, max_value=0.999),
)
def test_any_truncation_is_an_input_error(tmp_path: Path, ext: str, fmt: str, keep: float) -> None:
    """Cut a compressed file anywhere: the reader raises InputError (exit 2), never anything
    else, and never returns the records as if the file were whole."""
    source = {"json": SAMPLE.read_bytes(), "jsonl": jsonl(records()), "csv": GLYCANS.read_bytes()}
    data = COMPRESS[ext](source[fmt])
    p = tmp_path / f"t.{fmt}{ext}"
    p.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(InputError):
        if fmt == "csv":
            curate.io.read.read_frame(p)
        else:
            list(open_source(p).batches)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    recs=st.lists(
        st.dictionaries(
            st.text(min_size=1, max_size=8),
            # 64-bit integers: orjson reads larger ones as floats (a known reader limit,
            # tracked separately; not what this compression round trip is about)
            st.one_of(
                st.none(),
                st.integers(-(2**63), 2**63 - 1),
                st.text(max_size=30),
                st.booleans(),
            ),
            max_size=5,
        ),
        min_size=1,
        max_size=20,
    ),
    ext=st.sampled_from([".gz", ".zst"]),
)
def test_jsonl_round_trips_through_compression(tmp_path: Path, recs, ext: str) -> None:
    p = tmp_path / f"r.jsonl{ext}"
    p.write_bytes(COMPRESS[ext](jsonl(recs)))
    assert [r for _, r in rows(p)] == recs


# --------------------------------------------------------------------------- standard input


def feed(monkeypatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


@pytest.mark.parametrize(
    ("make", "fmt"),
    [
        (lambda: SAMPLE.read_bytes(), "json"),
        (lambda: b"\n  " + json.dumps({"data": records()}).encode(), "json"),
        (lambda: json.dumps(records(), indent=2).encode(), "json"),
        (lambda: jsonl(records()), "jsonl"),
        (lambda: b"\xef\xbb\xbf" + jsonl(records()), "jsonl"),
        (lambda: gzip.compress(jsonl(records())), "jsonl"),
        (lambda: zstd(SAMPLE.read_bytes()), "json"),
    ],
    ids=["array", "wrapper", "indented", "jsonl", "bom-jsonl", "gzip", "zstd"],
)
def test_stdin_formats_are_sniffed(monkeypatch, capsys, make, fmt: str) -> None:
    data = make()
    feed(monkeypatch, data)
    src = open_source("-")
    assert (src.format, str(src.path)) == (fmt, "<stdin>")
    assert sum(len(b.rows) for b in src.batches) == 52
    assert src.sha256 == hashlib.sha256(data).hexdigest()  # of the bytes read
    feed(monkeypatch, data)
    rc, out, err = run(["audit", "mquake", "-", "--format", "json"], capsys)
    assert rc in (0, 1), err
    assert json.loads(out)["inputs"][0]["sha256"] == hashlib.sha256(data).hexdigest()


def test_stdin_tables_and_parquet(monkeypatch, tmp_path: Path) -> None:
    feed(monkeypatch, GLYCANS.read_bytes())
    assert GLYCAN.load(["-"]).inputs[0].records == 639
    feed(monkeypatch, GLYCANS.read_text().replace(",", "\t").encode())
    assert open_source("-").format == "csv"
    assert GLYCAN.load(["-"]).inputs[0].records == 639
    p = tmp_path / "x.parquet"
    pq.write_table(pa.Table.from_pylist(records()), p)
    feed(monkeypatch, p.read_bytes())
    src = open_source("-")
    assert src.format == "parquet" and sum(len(b.rows) for b in src.batches) == 52


def test_stdin_once_per_command_and_never_a_terminal(monkeypatch, capsys, tmp_path: Path) -> None:
    feed(monkeypatch, jsonl(records()))
    rc, _, err = run(["validate", "mquake", "-", "-"], capsys)
    assert rc == 2 and "only once" in one_error_line(err)

    class Tty(io.BytesIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(Tty(b"")))
    rc, _, err = run(["validate", "mquake", "-"], capsys)
    assert rc == 2 and "terminal" in one_error_line(err)
    with pytest.raises(UsageError):
        sha256_of("-")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty input"),
        (b"  \n\n", "empty input"),
        (gzip.compress(b"[1, 2")[:-6], "gzip data"),
        (b'[{"case_id": 1}, ', "invalid JSON"),
    ],
    ids=["empty", "blank", "truncated-gzip", "truncated-json"],
)
def test_bad_stdin_is_one_line(monkeypatch, capsys, data: bytes, message: str) -> None:
    feed(monkeypatch, data)
    rc, _, err = run(["validate", "mquake", "-"], capsys)
    line = one_error_line(err)
    assert rc == 2 and "<stdin>" in line and message in line


def test_stdin_through_a_real_pipe(tmp_path: Path) -> None:
    packed = gzip.compress(jsonl(records()))
    proc = subprocess.run(
        [sys.executable, "-m", "curate", "audit", "mquake", "-", "--format", "json"],
        input=packed,
        capture_output=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert report["inputs"][0]["sha256"] == hashlib.sha256(packed).hexdigest()
    assert report["inputs"][0]["records"] == 52


# --------------------------------------------------------------------------- named pipes


def test_a_named_pipe_is_read_whole_once(tmp_path: Path) -> None:
    """A FIFO named like a file is read like it: every record, hashed as read. Its bytes come
    once, so nothing may open it a second time (a sniff of its start did, and the records that
    sniff buffered were lost: 99,618 of 100,000)."""
    recs = [dict(r, case_id=r["case_id"] + 10**6 * i) for i in range(40) for r in records()]
    data = jsonl(recs)  # megabytes: many pipe buffers and more than one read block
    with named_pipe(tmp_path / "cases.jsonl", data) as p:
        src = open_source(str(p))
        got = [r for b in src.batches for r in b.rows]
        assert src.format == "jsonl" and str(src.path) == str(p)
        assert src.sha256 == hashlib.sha256(data).hexdigest()
    assert got == recs
    with named_pipe(tmp_path / "glycans.csv", GLYCANS.read_bytes()) as p:
        assert GLYCAN.load([str(p)]).inputs[0].records == 639


def test_process_substitution_is_sniffed_and_fixed_as_the_file(tmp_path: Path) -> None:
    """``<(cat cases.jsonl.gz)`` has no suffix (``/dev/fd/63``): its format is sniffed as on
    standard input, and ``fix`` (which reads its input more than once) writes what it writes
    from the file itself."""
    packed = gzip.compress(jsonl(records()))
    (tmp_path / "cases.jsonl.gz").write_bytes(packed)
    curate_cmd = f"{sys.executable} -m curate fix mquake"
    proc = subprocess.run(
        [
            "bash",
            "-c",
            f"{curate_cmd} <(cat cases.jsonl.gz) --out piped && "
            f"{curate_cmd} cases.jsonl.gz --out plain",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    for name in ("changelog.jsonl", "audit.before.json"):
        piped, plain = ((tmp_path / d / name).read_text() for d in ("piped", "plain"))
        assert piped.replace("/dev/fd/63", "cases.jsonl.gz") == plain, name
    shards = sorted((tmp_path / "plain" / "data").glob("*.parquet"))
    assert shards
    for shard in shards:
        other = tmp_path / "piped" / "data" / shard.name
        assert pq.read_table(other).equals(pq.read_table(shard))


def test_a_pipe_is_read_once_per_scope_and_anew_outside(tmp_path: Path) -> None:
    """Within one operation (:func:`~curate.io.read.input_scope`: a command, an API call) a pipe is
    read once and every open sees its bytes; the same name fed again to a second call is a
    second input, never the first one's bytes served again (a ``mkfifo`` reused, an
    ``os.pipe()`` whose descriptor number comes back)."""
    first, second = records(), records()[:5]
    fifo = tmp_path / "cases.jsonl"
    for recs in (first, second):  # one FIFO, two writers in turn
        with named_pipe(fifo, jsonl(recs)):
            assert [r for _, r in rows(str(fifo))] == recs
    for recs in (first, second):
        r, w = os.pipe()

        def write(w: int = w, data: bytes = jsonl(recs)) -> None:
            with os.fdopen(w, "wb") as f:
                f.write(data)

        writer = threading.Thread(target=write)
        writer.start()
        with curate.io.read.input_scope():
            src = open_source(f"/dev/fd/{r}")
            assert src.format == "jsonl"  # sniffed: the name has no suffix
            assert [x for b in src.batches for x in b.rows] == recs
            again = open_source(f"/dev/fd/{r}")  # the same pipe in the scope: its spool
            assert again.sha256 == src.sha256 == hashlib.sha256(jsonl(recs)).hexdigest()
            assert sum(len(b.rows) for b in again.batches) == len(recs)
        writer.join()
        os.close(r)


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_is_refused_unread(capsys, device: str) -> None:
    """A device is not data: ``/dev/zero`` would be read (and spooled) forever."""
    rc, _, err = run(["audit", "mquake", device], capsys)
    assert rc == 2 and f"{device}: a device, not a file or a pipe" in one_error_line(err)


def test_dev_stdin_is_standard_input(tmp_path: Path, capsys, monkeypatch) -> None:
    """``/dev/stdin`` is ``-``: read as the stream (redirected from a file, it is still the
    stream, and its name has no suffix to go by), and never given beside ``-``."""
    data = jsonl(records())
    (tmp_path / "cases.jsonl").write_bytes(data)
    with open(tmp_path / "cases.jsonl", "rb") as stdin:
        proc = subprocess.run(
            [sys.executable, "-m", "curate", "audit", "mquake", "/dev/stdin", "--format", "json"],
            stdin=stdin,
            capture_output=True,
            timeout=120,
        )
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)["inputs"][0]
    assert report["records"] == 52 and report["sha256"] == hashlib.sha256(data).hexdigest()
    feed(monkeypatch, data)
    rc, _, err = run(["validate", "mquake", "-", "/dev/stdin"], capsys)
    assert rc == 2 and "- and /dev/stdin both name standard input" in one_error_line(err)


def test_deepfake_media_through_a_pipe_are_found_from_the_current_folder(tmp_path: Path) -> None:
    """A manifest's relative media paths through ``<(cat manifest.csv)`` resolve from the
    current folder, as through ``-``, not under ``/dev/fd``; and a pipe gets no media cache
    of its own (its folder would be a new one each run)."""
    from media_data import write_wav

    (tmp_path / "clips").mkdir()
    lines = ["sample_id,path,label,split"]
    for i in range(3):
        write_wav(tmp_path / "clips" / f"c{i}.wav", freq=300.0 + 100 * i)
        lines.append(f"s{i},clips/c{i}.wav,{'fake' if i % 2 else 'real'},train")
    (tmp_path / "manifest.csv").write_text("\n".join(lines) + "\n")
    cache = tmp_path / "cache"
    audit = f"{sys.executable} -m curate audit deepfake"
    proc = subprocess.run(
        [
            "bash",
            "-c",
            f"{audit} manifest.csv --format json --out plain.json; "
            f"{audit} <(cat manifest.csv) --format json --out piped.json; "
            f"{audit} - --format json --out stdin.json < manifest.csv",
        ],
        cwd=tmp_path,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr

    def findings(name: str) -> list:
        return json.loads((tmp_path / name).read_text())["findings"]

    assert findings("piped.json") == findings("stdin.json") == findings("plain.json")
    assert not any("/dev/fd" in f["message"] for f in findings("piped.json"))
    assert len(list(cache.rglob("*.parquet"))) <= 1  # the manifest file's, none for the pipe


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    recs=st.lists(
        st.dictionaries(
            st.text(min_size=1, max_size=8),
            st.one_of(
                st.none(),
                st.integers(-(2**63), 2**64 - 1),  # orjson reads no wider integers
                st.text(max_size=30),
                st.floats(allow_nan=False, allow_infinity=False),
            ),
            min_size=1,
            max_size=5,
        ),
        min_size=1,
        max_size=20,
    ),
    as_lines=st.booleans(),
    indent=st.sampled_from([None, 2]),
    lead=st.sampled_from(["", "\n", "  \r\n", "\ufeff"]),
)
def test_stdin_sniffing_round_trips(monkeypatch, recs, as_lines: bool, indent, lead: str) -> None:
    """Whatever the records, a JSON array and JSON Lines on stdin are told apart and read back
    exactly (as from a file)."""
    if as_lines:
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs)
    else:
        text = json.dumps(recs, ensure_ascii=False, indent=indent)
    feed(monkeypatch, (lead + text).encode())
    src = open_source("-")
    assert src.format == ("jsonl" if as_lines else "json")
    assert [r for b in src.batches for r in b.rows] == recs
