"""The icrl scan's direct path (stored chunks inflated with libdeflate, or zlib-ng for chunks of
long runs, instead of HDF5's filter pipeline: :mod:`curate.io.xland_chunks`) gives exactly the
outputs of h5py's ``read_direct``: on the shared samples made with the real environment, on
generated files with edge chunks, on unallocated chunks (fill values), on filters it must leave
to HDF5 (shuffle, fletcher32), and on chunks that are corrupt, skip their filter or inflate to
the wrong size — where HDF5's error text must stay HDF5's.
"""

from __future__ import annotations

import itertools
import zlib
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from icrl_data import write_file

from curate.io import xland_chunks as xc
from curate.io import xland_scan as scan
from curate.io.xland_layout import DATASETS

SAMPLES = ("xland_format_sample_9x9_random.hdf5", "xland_format_sample_13x13_random.hdf5")


@pytest.fixture
def inflated(monkeypatch) -> list[str]:
    """The chunks the direct path inflates, one entry per chunk: by which inflater
    (``libdeflate``, or ``zlib-ng`` for a chunk of long runs)."""
    calls: list[str] = []

    def counting(name, real):
        def inflate(stored, size):
            calls.append(name)
            return real(stored, size)

        return inflate

    monkeypatch.setattr(xc, "_inflate", counting("libdeflate", xc._inflate))
    monkeypatch.setattr(xc, "_inflate_runs", counting("zlib-ng", xc._inflate_runs))
    return calls


@pytest.fixture
def by_hdf5(monkeypatch) -> list[tuple[str, object]]:
    """The blocks read by h5py's ``read_direct`` (dataset name, selection), in order."""
    calls: list[tuple[str, object]] = []
    real = h5py.Dataset.read_direct

    def spy(self, dest, source_sel=None, dest_sel=None):
        calls.append((self.name, source_sel))
        return real(self, dest, source_sel, dest_sel)

    monkeypatch.setattr(h5py.Dataset, "read_direct", spy)
    return calls


def _scan(path: Path, *, direct: bool, block_steps: int = scan.BLOCK_STEPS) -> dict:
    with h5py.File(path, "r") as f:
        groups = list(f.keys())
    return scan.scan_tasks(
        str(path), groups, list(range(len(groups))), block_steps=block_steps, direct=direct
    )


def _same_both_ways(path: Path, spy: list | None = None, **kw) -> tuple[dict, list]:
    """Scan ``path`` with and without the direct path and assert equal outputs; the outputs and
    the blocks the direct scan left to HDF5 (``spy``: the :func:`by_hdf5` fixture, if used)."""
    if spy is not None:
        spy.clear()
    fast = _scan(path, direct=True, **kw)
    fell_back = list(spy) if spy is not None else []
    slow = _scan(path, direct=False, **kw)
    np.testing.assert_equal(fast, slow)  # NaN equals NaN; dicts, lists and arrays in full
    return fast, fell_back


def _chunks(path: Path) -> int:
    """Allocated chunks of every dataset of the file."""
    with h5py.File(path, "r") as f:
        return sum(f[g][d].id.get_num_chunks() for g in f for d in f[g])


def _runs_chunks(path: Path) -> int:
    """Allocated chunks stored in at most 1/:data:`~curate.io.xland_xc.RUNS_RATIO` of their
    size (what the direct path inflates with zlib-ng)."""
    n = 0
    with h5py.File(path, "r") as f:
        for g in f:
            for d in f[g].values():
                size = int(np.prod(d.chunks)) * d.dtype.itemsize
                for i in range(d.id.get_num_chunks()):
                    n += d.id.get_chunk_info(i).size <= size // xc.RUNS_RATIO
    return n


def _rewrite(path: Path, group: str, name: str, keep=None, **create) -> None:
    """Recreate one dataset with other creation options (``keep(h)``: histories written)."""
    with h5py.File(path, "r+") as f:
        old = f[group][name]
        data, chunks = old[()], old.chunks
        del f[group][name]
        ds = f[group].create_dataset(name, data.shape, data.dtype, chunks=chunks, **create)
        for h in range(data.shape[0]):
            if keep is None or keep(h):
                ds[h] = data[h]


@pytest.mark.parametrize("name", SAMPLES)
def test_shared_samples_read_the_same(shared, name, inflated, by_hdf5) -> None:
    path = shared(f"data/xland/{name}")
    out, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == []
    assert len(inflated) == _chunks(path)  # every chunk went through the direct path
    assert all(out["histories"]["digest"]) and not any(out["histories"]["error"])


def test_edge_chunks_and_several_blocks(tmp_path: Path, inflated, by_hdf5) -> None:
    """10,000 steps: two full chunks and a part one, in blocks of two chunks."""
    path = write_file(tmp_path / "edge.hdf5", tasks=2, histories=3, steps=10_000)
    out, fell_back = _same_both_ways(path, by_hdf5, block_steps=8192)
    assert fell_back == []
    assert len(inflated) == _chunks(path) == 2 * 3 * 3 * len(DATASETS)
    assert out["histories"]["steps_read"] == [10_000] * 6
    # the chunks of long runs (rewards not paid, dones not done, the observations' edge
    # chunks: stored in at most 1/25 of their size) by zlib-ng, the rest by libdeflate; both
    # read the same bytes as HDF5 (above)
    runs = _runs_chunks(path)
    assert inflated.count("zlib-ng") == runs >= 2 * 3 * 3 * 2
    assert inflated.count("libdeflate") == len(inflated) - runs >= 2 * 3 * 2 * 3


def test_out_of_range_observations_on_the_direct_path(tmp_path: Path, inflated, by_hdf5) -> None:
    """A cell past the last tile, in the second chunk of a block and in an edge chunk, is
    counted on the direct path with its first and last step and its value exactly as HDF5's
    read finds it."""
    path = write_file(tmp_path / "states.hdf5", tasks=2, histories=3, steps=10_000)
    with h5py.File(path, "r+") as f:
        states = f["0"]["states"]
        row = states[1]
        row[5000, 2, 3] = 200  # the block's second chunk
        row[9999, 0, 0] = 255  # the edge chunk, the history's last step
        states[1] = row
    out, fell_back = _same_both_ways(path, by_hdf5, block_steps=8192)
    assert fell_back == []
    assert len(inflated) == _chunks(path)
    h = out["histories"]
    assert h["state_range_n"] == [0, 2, 0, 0, 0, 0]
    assert (h["state_range_first"][1], h["state_range_last"][1]) == (5000, 9999)
    assert h["state_value"][1] == 200


def test_resized_datasets(tmp_path: Path, inflated, by_hdf5) -> None:
    """Extendable datasets grown and shrunk after writing: edge chunks hold steps past the
    current end (fill values, or data cut off), which neither path may read."""
    path = write_file(tmp_path / "resized.hdf5", tasks=2, histories=2, steps=5000)
    with h5py.File(path, "r+") as f:
        for g, steps in (("0", 7000), ("1", 4500)):
            for name in DATASETS:
                data = f[g][name][()]
                del f[g][name]
                ds = f[g].create_dataset(
                    name,
                    data=data,
                    chunks=(1, 4096, *data.shape[2:]),
                    maxshape=(None, None, *data.shape[2:]),
                    compression="gzip",
                    fillvalue=np.zeros((), data.dtype),
                )
                ds.resize(steps, axis=1)
    out, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == []
    assert len(inflated) == _chunks(path)
    assert out["histories"]["steps_read"] == [7000, 7000, 4500, 4500]


def test_unallocated_chunks_read_the_fill_value(tmp_path: Path, inflated, by_hdf5) -> None:
    path = write_file(tmp_path / "fill.hdf5", tasks=2, histories=3, steps=6000)
    _rewrite(path, "1", "expert_actions", keep=lambda h: h != 1, compression="gzip", fillvalue=7)
    _rewrite(path, "0", "dones", keep=lambda h: h == 0, compression="gzip")
    out, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == [
        ("/0/dones", np.s_[1, 0:6000]),
        ("/0/dones", np.s_[2, 0:6000]),
        ("/1/expert_actions", np.s_[1, 0:6000]),
    ]
    assert len(inflated) == _chunks(path)  # the allocated ones (the rest: HDF5)
    row = out["histories"]["group"].index("1") + 1
    assert out["histories"]["expert_range_n"][row] == 6000  # the fill value 7 was read


OTHER_FILTERS = [
    {"compression": "gzip", "shuffle": True},
    {"compression": "gzip", "fletcher32": True},
]


@pytest.mark.parametrize("create", OTHER_FILTERS)
def test_other_filters_are_left_to_hdf5(tmp_path: Path, inflated, by_hdf5, create) -> None:
    path = write_file(tmp_path / "shuffle.hdf5", tasks=2, histories=2, steps=5000)
    _rewrite(path, "1", "states", **create)
    with h5py.File(path, "r") as f:
        assert xc.direct_chunk_rows(f["1"]["states"]) == 0
        assert xc.direct_chunk_rows(f["1"]["actions"]) == 4096
        skipped = f["1"]["states"].id.get_num_chunks()
    _, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == [("/1/states", np.s_[h, 0:5000]) for h in range(2)]
    assert len(inflated) == _chunks(path) - skipped


def test_uncompressed_and_contiguous_are_left_to_hdf5(tmp_path: Path, inflated) -> None:
    path = write_file(tmp_path / "plain.hdf5", tasks=1, histories=2, steps=5000, compression=None)
    with h5py.File(path, "r+") as f:
        data = f["0"]["rewards"][()]
        del f["0"]["rewards"]
        f["0"].create_dataset("rewards", data=data)  # contiguous
        assert xc.direct_chunk_rows(f["0"]["rewards"]) == 0
        assert xc.direct_chunk_rows(f["0"]["actions"]) == 0  # chunked, no filter
    _same_both_ways(path)
    assert not inflated


def test_big_endian_rewards(tmp_path: Path, inflated, by_hdf5) -> None:
    """A type h5py reads without conversion (here big-endian float16) is read directly."""
    path = write_file(tmp_path / "be.hdf5", tasks=1, histories=2, steps=5000)
    with h5py.File(path, "r+") as f:
        data = f["0"]["rewards"][()].astype(">f2")
        del f["0"]["rewards"]
        f["0"].create_dataset("rewards", data=data, chunks=(1, 4096), compression="gzip")
        assert xc.direct_chunk_rows(f["0"]["rewards"]) == 4096
    out, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == [] and len(inflated) == _chunks(path)
    assert out["histories"]["episodes"][0] > 0


def _corrupt(path: Path, group: str, name: str, coord: tuple[int, ...]) -> None:
    with h5py.File(path, "r") as f:
        info = f[group][name].id.get_chunk_info_by_coord(coord)
    raw = bytearray(path.read_bytes())
    for i in range(info.byte_offset + 2, info.byte_offset + info.size):
        raw[i] ^= 0xFF
    path.write_bytes(bytes(raw))


def test_corrupt_chunk_gives_hdf5s_error(tmp_path: Path, by_hdf5) -> None:
    path = write_file(tmp_path / "bad.hdf5", tasks=3, histories=3, steps=6000)
    _corrupt(path, "2", "rewards", (1, 4096))
    _corrupt(path, "0", "states", (2, 0, 0, 0))
    out, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == [("/0/states", np.s_[2, 0:6000]), ("/2/rewards", np.s_[1, 0:6000])]
    hist = out["histories"]
    errors = [
        (g, h, e)
        for g, h, e in zip(hist["group"], hist["history"], hist["error"], strict=True)
        if e
    ]
    assert [(g, h) for g, h, _ in errors] == [("0", 2), ("2", 1)]
    assert all("filter" in e.lower() for _, _, e in errors), errors  # HDF5's own words


def test_chunks_that_skip_their_filter_or_inflate_long(tmp_path: Path, by_hdf5) -> None:
    """Chunks HDF5 reads its own way go to HDF5: one stored unfiltered (filter mask 1), one
    inflating to more bytes than a chunk (HDF5 keeps the first chunk's worth)."""
    path = write_file(tmp_path / "odd.hdf5", tasks=1, histories=4, steps=6000)
    with h5py.File(path, "r+") as f:
        ds = f["0"]["actions"]
        row = np.full(4096, 2, dtype=np.uint8)
        ds.id.write_direct_chunk((0, 0), row.tobytes(), filter_mask=1)
        ds.id.write_direct_chunk((2, 0), zlib.compress(np.tile(row, 8).tobytes()))
    out, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == [("/0/actions", np.s_[h, 0:6000]) for h in (0, 2)]
    assert out["histories"]["action_2"][0] >= 4096  # the unfiltered chunk, read as stored
    assert out["histories"]["action_2"][2] >= 4096  # the long one's first 4096 bytes
    assert out["histories"]["error"] == [""] * 4


def _shorten(path: Path, group: str, name: str, coord: tuple[int, ...], keep: int) -> None:
    """Rewrite one stored chunk as a clean deflate stream of its first ``keep`` bytes."""
    with h5py.File(path, "r+") as f:
        ds = f[group][name]
        whole = zlib.decompress(ds.id.read_direct_chunk(coord)[1])
        ds.id.write_direct_chunk(coord, zlib.compress(whole[:keep]))


@pytest.mark.parametrize("direct", [True, False])
def test_short_chunk_is_an_unreadable_block(tmp_path: Path, by_hdf5, direct) -> None:
    """A chunk whose stream ends cleanly before the chunk's size: HDF5 reads it without an
    error, the rest of the chunk being whatever its buffer held (values and digest change
    from run to run). Both paths report it as the history's unreadable block, at the chunk's
    steps, with the byte counts: the direct path as it inflates it, the HDF5 path from the
    stream's Adler-32 trailer against the bytes HDF5 returned (no second inflate of a whole
    chunk, edge chunks included)."""
    path = write_file(tmp_path / "short.hdf5", tasks=2, histories=3, steps=6000)
    _shorten(path, "1", "actions", (2, 0), 1000)
    _shorten(path, "0", "states", (1, 4096, 0, 0), 30000)  # the edge chunk (steps 4096..6000)
    by_hdf5.clear()
    out = _scan(path, direct=direct)["histories"]
    if direct:
        assert by_hdf5 == []  # detected, not left to HDF5
    rows = {(g, h): i for i, (g, h) in enumerate(zip(out["group"], out["history"], strict=True))}
    bad = {k: i for k, i in rows.items() if out["error"][i]}
    assert set(bad) == {("0", 1), ("1", 2)}
    i = bad[("1", 2)]
    assert (out["error_field"][i], out["error_start"][i], out["error_end"][i]) == (
        "actions",
        0,
        4096,
    )
    assert out["error"][i] == (
        "chunk of /1/actions at history 2, steps [0, 4096): its deflate stream ends after 1,000 "
        "of the chunk's 4,096 bytes (HDF5 reads it without an error and returns unset memory "
        "for the rest)"
    )
    i = bad[("0", 1)]
    assert (out["error_field"][i], out["error_start"][i], out["error_end"][i]) == (
        "states",
        4096,
        6000,
    )
    assert "after 30,000 of the chunk's 102,400 bytes" in out["error"][i]
    assert out["steps_read"][i] == 4096  # the steps before it are scanned
    # the other histories read exactly as before
    clean = _scan(
        write_file(tmp_path / "clean.hdf5", tasks=2, histories=3, steps=6000), direct=direct
    )
    for k, i in rows.items():
        if k not in bad:
            assert out["digest"][i] == clean["histories"]["digest"][i], k


def test_checking_chunks_after_hdf5_costs_no_inflate_on_valid_files(
    tmp_path: Path, shared, monkeypatch
) -> None:
    """On the HDF5 path the chunks' trailers match what HDF5 returned for every chunk of valid
    files (edge chunks too, their steps past the end being zeros): nothing is inflated twice."""
    calls: list[int] = []
    real = zlib.decompressobj

    def counting(*a):
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(xc.zlib, "decompressobj", counting)
    path = write_file(tmp_path / "ok.hdf5", tasks=2, histories=2, steps=6000)
    for p in (path, *(shared(f"data/xland/{n}") for n in SAMPLES)):
        out = _scan(p, direct=False)
        assert not any(out["histories"]["error"]), p
    assert calls == []


def test_switch_off_by_environment(tmp_path: Path, monkeypatch, inflated) -> None:
    path = write_file(tmp_path / "env.hdf5", tasks=1, histories=1, steps=5000)
    monkeypatch.setenv("CURATE_ICRL_DIRECT", "0")
    assert not xc.direct_default()
    scan.scan_tasks(str(path), ["0"], [0])
    assert not inflated
    monkeypatch.delenv("CURATE_ICRL_DIRECT")
    assert xc.direct_default()
    scan.scan_tasks(str(path), ["0"], [0])
    assert len(inflated) == 2 * len(DATASETS)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.integers(1, 9000),
    chunk=st.sampled_from([64, 1000, 4096]),
    histories=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_random_shapes_read_the_same(
    tmp_path: Path, by_hdf5, steps, chunk, histories, seed
) -> None:
    path = tmp_path / f"r{seed}_{steps}_{chunk}_{histories}.hdf5"
    write_file(path, tasks=2, histories=histories, steps=steps, chunk=chunk, seed=seed)
    out, fell_back = _same_both_ways(path, by_hdf5, block_steps=4096)
    assert fell_back == []
    assert out["histories"]["steps_read"] == [steps] * 2 * histories
    path.unlink()


@pytest.fixture
def preads(monkeypatch) -> list[int]:
    """The sizes of the file reads the indexed direct path makes (``os.pread``)."""
    calls: list[int] = []
    real = xc.os.pread

    def counting(fd, n, offset):
        calls.append(n)
        return real(fd, n, offset)

    monkeypatch.setattr(xc.os, "pread", counting)
    return calls


def test_chunks_are_read_by_file_offset(tmp_path: Path, inflated, by_hdf5, preads) -> None:
    """Stored chunks are found through the dataset's chunk index and read from the file: one
    read per block and dataset where the chunks lie together (the written layout) and the
    histories are read in several blocks each, across a group (not the file's order: nothing
    is read ahead), plus one per dataset and task checking the index against
    ``read_direct_chunk``."""
    path = write_file(tmp_path / "offsets.hdf5", tasks=2, histories=3, steps=10_000)
    preads.clear()
    fast = _scan(path, direct=True, block_steps=8192)
    blocks = 2 * 3 * 2 * len(DATASETS)  # tasks × histories × blocks × datasets
    assert len(preads) == blocks + 2 * len(DATASETS)
    assert by_hdf5 == [] and len(inflated) == _chunks(path)
    np.testing.assert_equal(fast, _scan(path, direct=False, block_steps=8192))


@pytest.mark.parametrize("ahead", [1 << 14, 1 << 23])
def test_chunks_lying_together_are_read_ahead(
    tmp_path: Path, monkeypatch, by_hdf5, preads, ahead
) -> None:
    """Where a dataset's chunks lie together and in the scan's order (a block per history),
    they are read a window of ``_READ_AHEAD`` bytes at a time, several histories per read; a
    block larger than a window is read on its own. No read is larger than a window or a
    block's own chunks; the outputs are HDF5's."""
    monkeypatch.setattr(xc, "_READ_AHEAD", ahead)
    path = write_file(tmp_path / "ahead.hdf5", tasks=2, histories=3, steps=10_000)
    preads.clear()
    _, fell_back = _same_both_ways(path, by_hdf5, block_steps=16_384)
    assert fell_back == []
    checks = 2 * len(DATASETS)  # a read per dataset and task checks the index
    reads = len(preads) - checks
    blocks = 2 * 3 * len(DATASETS)  # one per history
    if ahead > max(_stored_bytes(path)):  # every dataset of a task in one window
        assert reads == 2 * len(DATASETS)
    else:
        assert 2 * len(DATASETS) < reads < blocks
    with h5py.File(path, "r") as f:
        block = max(  # the stored bytes of the largest history's block
            sum(
                f[g][d].id.get_chunk_info_by_coord((h, c, *(0,) * (f[g][d].ndim - 2))).size
                for c in range(0, 10_000, 4096)
            )
            for g in f
            for d in f[g]
            for h in range(3)
        )
    assert max(preads) <= max(ahead, block)


def _stored_bytes(path: Path) -> list[int]:
    """Each dataset's stored (compressed) bytes."""
    with h5py.File(path, "r") as f:
        return [
            sum(f[g][d].id.get_chunk_info(i).size for i in range(f[g][d].id.get_num_chunks()))
            for g in f
            for d in f[g]
        ]


def test_datasets_written_interleaved_are_read_block_by_block(
    tmp_path: Path, by_hdf5, preads
) -> None:
    """Datasets whose chunks lie between each other's (written history by history, each
    dataset's chunks well under 90% of the bytes they span): nothing is read ahead (a window
    would read the other datasets' bytes too), a read per block."""
    path = write_file(tmp_path / "mixed.hdf5", tasks=1, histories=3, steps=10_000)
    with h5py.File(path, "r+", rdcc_nbytes=0) as f:  # no chunk cache: chunks stored as written
        data = {n: (f["0"][n][()], f["0"][n].chunks) for n in DATASETS}
        for n in DATASETS:
            del f["0"][n]
        made = {
            n: f["0"].create_dataset(n, d.shape, d.dtype, chunks=c, compression="gzip")
            for n, (d, c) in data.items()
        }
        for h in range(3):
            for n in DATASETS:
                made[n][h] = data[n][0][h]
    preads.clear()
    _, fell_back = _same_both_ways(path, by_hdf5, block_steps=8192)
    assert fell_back == []
    assert len(preads) == 3 * 2 * len(DATASETS) + len(DATASETS)  # the blocks, the checks


def _write_apart(path: Path, cuts: list[int]) -> None:
    """Rewrite every dataset of task "0" a step range at a time across its histories (the
    ranges ``cuts`` delimit): a history's chunks of different ranges then lie apart in the
    file, those of one range together."""
    with h5py.File(path, "r+") as f:
        for name in DATASETS:
            data, chunks = f["0"][name][()], f["0"][name].chunks
            del f["0"][name]
            ds = f["0"].create_dataset(
                name, data.shape, data.dtype, chunks=chunks, compression="gzip"
            )
            for a, b in itertools.pairwise(cuts):
                for h in range(data.shape[0]):
                    ds[h, a:b] = data[h, a:b]


@pytest.mark.parametrize("short_first", [True, False])
def test_short_and_corrupt_chunks_in_one_block(tmp_path: Path, by_hdf5, short_first) -> None:
    """A block with a short chunk and a corrupt one: the first of them in the block decides.
    A short one first is the unreadable block at its own steps (nothing before it to scan); a
    corrupt one first leaves the block to HDF5, whose filter error is reported for the block."""
    path = write_file(tmp_path / "both.hdf5", tasks=1, histories=3, steps=10_000)
    short, corrupt = ((1, 0), (1, 4096)) if short_first else ((1, 4096), (1, 0))
    _shorten(path, "0", "actions", short, 1000)
    _corrupt(path, "0", "actions", corrupt)
    by_hdf5.clear()
    out = _scan(path, direct=True)["histories"]
    assert [bool(e) for e in out["error"]] == [False, True, False]
    span = (out["error_field"][1], out["error_start"][1], out["error_end"][1])
    if short_first:
        assert by_hdf5 == []
        assert span == ("actions", 0, 4096)
        assert "deflate stream ends after 1,000 of the chunk's 4,096 bytes" in out["error"][1]
        assert out["steps_read"][1] == 0
    else:
        assert by_hdf5 == [("/0/actions", np.s_[1, 0:10_000])]
        assert span == ("actions", 0, 10_000)
        assert "filter" in out["error"][1].lower()


@pytest.mark.parametrize(
    ("cuts", "reads"),
    [
        ([0, 4096, 8192, 10_000], 3),  # every chunk apart from the next: one read each
        ([0, 8192, 10_000], 2),  # two runs: the first two chunks, the last
    ],
)
def test_chunks_written_apart_are_read_run_by_run(
    tmp_path: Path, monkeypatch, by_hdf5, preads, cuts, reads
) -> None:
    """Without reading ahead, a block's chunks are read in runs of chunks that lie together in
    the file, rather than with the bytes between them (here: other histories' chunks)."""
    path = write_file(tmp_path / "apart.hdf5", tasks=1, histories=3, steps=10_000)
    _write_apart(path, cuts)
    monkeypatch.setattr(xc, "_GAP", 0)
    monkeypatch.setattr(xc, "_READ_AHEAD", 0)
    preads.clear()
    _, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == []
    assert len(preads) == 3 * reads * len(DATASETS) + len(DATASETS)  # the runs, the checks


@pytest.mark.parametrize(
    ("cuts", "ahead"),
    [
        # a history's chunks apart from each other: out of the scan's order, a window would be
        # read again for every block, so nothing is read ahead (a read per chunk, as above)
        ([0, 4096, 8192, 10_000], False),
        # only the histories' last (edge) chunks apart, as HDF5 may place them: read ahead
        ([0, 8192, 10_000], True),
    ],
)
def test_read_ahead_only_in_the_scan_s_order(
    tmp_path: Path, monkeypatch, by_hdf5, preads, cuts, ahead
) -> None:
    """With the default window: chunks out of the scan's order are read run by run; chunks in
    order but for each history's last are read ahead (here every dataset fits one window)."""
    path = write_file(tmp_path / "apart.hdf5", tasks=1, histories=3, steps=10_000)
    _write_apart(path, cuts)
    monkeypatch.setattr(xc, "_GAP", 0)
    preads.clear()
    _, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == []
    checks = len(DATASETS)
    if ahead:
        assert len(preads) == len(DATASETS) + checks
    else:
        assert len(preads) == 3 * 3 * len(DATASETS) + checks


def test_without_pread_chunks_are_read_one_call_each(
    tmp_path: Path, monkeypatch, inflated, by_hdf5, preads
) -> None:
    """Where ``os.pread`` is missing, each chunk is read by ``read_direct_chunk``."""
    monkeypatch.setattr(xc, "_PREAD", False)
    path = write_file(tmp_path / "nopread.hdf5", tasks=2, histories=2, steps=10_000)
    preads.clear()
    _, fell_back = _same_both_ways(path, by_hdf5, block_steps=8192)
    assert preads == [] and fell_back == [] and len(inflated) == _chunks(path)


def test_user_block_reads_the_same(tmp_path: Path, by_hdf5) -> None:
    """A file with a user block (HDF5's addresses then start after it): the chunk index is used
    only if its offsets give ``read_direct_chunk``'s bytes; either way the outputs are HDF5's."""
    src = write_file(tmp_path / "plain.hdf5", tasks=2, histories=2, steps=6000)
    path = tmp_path / "userblock.hdf5"
    with h5py.File(src, "r") as a, h5py.File(path, "w", userblock_size=4096) as b:
        for g in a:
            a.copy(a[g], b, name=g)
    out, fell_back = _same_both_ways(path, by_hdf5)
    assert fell_back == []
    assert out["histories"]["digest"] == _scan(src, direct=True)["histories"]["digest"]


def _outcome(inflate, stored: bytes, size: int) -> bytes | None:
    """What an inflater gives: the bytes, or None where it raises."""
    try:
        return bytes(inflate(stored, size))
    except Exception:
        return None


runs_data = st.lists(
    st.tuples(st.integers(0, 255), st.integers(1, 3000)), min_size=1, max_size=12
).map(lambda runs: b"".join(bytes([v]) * k for v, k in runs))


@settings(max_examples=200, deadline=None)
@given(
    data=st.one_of(runs_data, st.binary(max_size=3000)),
    level=st.sampled_from([1, 6, 9]),
    slack=st.integers(-40, 40),
    cut=st.integers(0, 12),
    tail=st.binary(max_size=8),
)
def test_zlib_ng_keeps_libdeflate_s_contract(data, level, slack, cut, tail) -> None:
    """The inflater of long runs (zlib-ng) answers as libdeflate does for any stream and chunk
    size: the bytes when the stream ends within the size (fewer when it ends short), an error
    when it would inflate past the size, is cut short, or its checksum fails; bytes after the
    stream's end ignored, as by HDF5's filter. So which of the two inflates a chunk never
    changes what the scan reads, and a chunk either refuses goes to HDF5 the same way."""
    size = max(1, len(data) + slack)  # a chunk holds a byte at least
    stored = zlib.compress(data, level)
    for variant in (stored, stored[: len(stored) - cut] if cut else stored + tail):
        got = _outcome(xc._inflate_runs, variant, size)
        assert got == _outcome(xc._inflate, variant, size)
        if variant is stored:  # the stream whole: its bytes exactly when they fit
            assert got == (data if len(data) <= size else None)
    flipped = bytearray(stored)
    flipped[-1] ^= 0x01  # the Adler-32's last byte
    assert _outcome(xc._inflate_runs, bytes(flipped), size) is None
    assert _outcome(xc._inflate, bytes(flipped), size) is None


@pytest.mark.parametrize("direct", [True, False])
def test_short_or_long_chunk_of_runs(tmp_path: Path, inflated, by_hdf5, direct) -> None:
    """A chunk of long runs (zlib-ng's) that ends short is the history's unreadable block with
    the same words as a chunk libdeflate inflates; one inflating past the chunk's size goes to
    HDF5, which keeps the chunk's worth."""
    path = write_file(tmp_path / "runs.hdf5", tasks=1, histories=3, steps=6000)
    _shorten(path, "0", "dones", (1, 0), 1000)
    with h5py.File(path, "r+") as f:
        f["0"]["rewards"].id.write_direct_chunk((2, 0), zlib.compress(bytes(3 * 8192)))
    by_hdf5.clear()
    out = _scan(path, direct=direct)["histories"]
    if direct:
        assert "zlib-ng" in inflated
        assert by_hdf5 == [("/0/rewards", np.s_[2, 0:6000])]  # the long one only
    assert out["error"][1] == (
        "chunk of /0/dones at history 1, steps [0, 4096): its deflate stream ends after 1,000 "
        "of the chunk's 4,096 bytes (HDF5 reads it without an error and returns unset memory "
        "for the rest)"
    )
    assert (out["error_field"][1], out["error_start"][1], out["error_end"][1]) == (
        "dones",
        0,
        4096,
    )
    assert out["error"][0] == out["error"][2] == ""
    assert out["steps_read"][2] == 6000


def test_a_chunk_only_zlib_ng_refuses_goes_to_hdf5(tmp_path: Path, by_hdf5, monkeypatch) -> None:
    """The two inflaters do not refuse the same streams (libdeflate takes a distance code 30
    that zlib, zlib-ng and HDF5 refuse). A chunk of long runs zlib-ng refuses is judged by
    zlib-ng again, not by libdeflate: its block goes to HDF5, never left as the buffer held
    it (the block before, another history's row)."""
    path = write_file(tmp_path / "refused.hdf5", tasks=1, histories=3, steps=6000)
    with h5py.File(path, "r") as f:
        refused = f["0"]["dones"].id.read_direct_chunk((1, 0))[1]
    real = xc._inflate_runs

    def refusing(stored, size):
        if bytes(stored) == refused:
            raise zlib.error("invalid distance code")
        return real(stored, size)

    monkeypatch.setattr(xc, "_inflate_runs", refusing)
    out, fell_back = _same_both_ways(path, by_hdf5)
    assert ("/0/dones", np.s_[1, 0:6000]) in fell_back
    assert out["histories"]["error"] == [""] * 3  # HDF5 reads it (a valid stream, here)
