"""``--engine ray`` on a real two-node Ray cluster started on this machine: the JSON report equals
the local engine's byte for byte for every family (durations aside), each family's parallel stage
really runs as Ray tasks, a worker killed mid-run is retried and changes nothing, and without Ray
the flag is one line and exit 2.

The cluster is ``ray start --head`` plus a second ``ray start --address`` node, one CPU each, with
their own temp dirs in a short folder of /tmp made for them (Ray's socket paths must stay under
107 bytes, which pytest's tmp folders of parallel workers overrun); teardown kills exactly the
processes those commands started (found by their temp dir), never ``ray stop`` (which would stop
any Ray on the machine), then removes the folder. One cluster for the session, and the module's
tests kept on one pytest-xdist worker (``xdist_group``): starting a cluster costs ~10 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from icrl_data import write_file
from media_data import write_media_set

from curate.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "curate" / "data" / "samples"
RAY_BIN = Path(sys.executable).with_name("ray")

pytestmark = pytest.mark.xdist_group("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _processes_under(marker: str) -> set[int]:
    """PIDs whose command line names ``marker`` (our temp dir), and all their descendants."""
    procs: dict[int, tuple[str, int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = (
                Path(f"/proc/{d}/cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode("utf-8", "replace")
            )
            ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        procs[int(d)] = (cmd, ppid)
    found = {p for p, (cmd, _) in procs.items() if marker in cmd} - {os.getpid()}
    grew = True
    while grew:
        grew = False
        for p, (_, ppid) in procs.items():
            if ppid in found and p not in found:
                found.add(p)
                grew = True
    return found


def _start(args: list[str], env: dict[str, str]) -> None:
    done = subprocess.run(
        [str(RAY_BIN), "start", *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """A head node and a worker node (one CPU each) on 127.0.0.1; yields the address."""
    pytest.importorskip("ray")
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="curate-ray-", dir="/tmp"))
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
    port = _free_port()
    address = f"127.0.0.1:{port}"
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
    saved = {k: os.environ.get(k) for k in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    try:
        _start(
            [
                "--head",
                "--port",
                str(port),
                "--include-dashboard=false",
                "--dashboard-agent-listen-port",
                str(_free_port()),
                "--temp-dir",
                str(base / "head"),
                *common,
            ],
            env,
        )
        _start(
            [
                "--address",
                address,
                "--dashboard-agent-listen-port",
                str(_free_port()),
                "--temp-dir",
                str(base / "worker"),
                *common,
            ],
            env,
        )
        os.environ["RAY_AUTH_MODE"] = "disabled"  # the driver (this process) joins likewise
        os.environ.pop("RAY_ADDRESS", None)
        yield address
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in _processes_under(str(base)):
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            time.sleep(1.0)
        assert not _processes_under(str(base)), "Ray processes survived the teardown"
        shutil.rmtree(base, ignore_errors=True)  # made above, for this cluster only


@pytest.fixture(scope="session")
def ray_engine(ray_cluster: str):
    """One driver connection for the session (each CLI run below joins it, not a new one)."""
    from curate.core.engine import RayEngine

    engine = RayEngine(ray_cluster)
    yield engine
    engine.close()


@pytest.fixture
def ray_calls(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Names of the functions the Ray engine sends as tasks during a test."""
    from curate.core.engine import RayEngine

    calls: Counter = Counter()
    original = RayEngine.remote

    def remote(self, fn):
        calls[fn.__name__] += 1
        return original(self, fn)

    monkeypatch.setattr(RayEngine, "remote", remote)
    return calls


#: The icrl scan's worker count is how a run went, not what it found (a report holds no
#: timing: nothing else is masked).
_TIMING = re.compile(rb'"(scan_workers)": [0-9.]+')


def _report(args: list[str], out: Path, engine: list[str]) -> bytes:
    """The JSON report of ``curate audit ARGS`` (exit 0 or 1), the scan's workers masked."""
    code = main(["audit", *args, "--format", "json", "-o", str(out), *engine])
    assert code in (0, 1), code
    return _TIMING.sub(b'"\\1": "-"', out.read_bytes())


def _same_on_both(args: list[str], tmp_path: Path, address: str, fresh: Path | None = None):
    """Local then Ray report of the same input; asserts they are byte-identical."""
    if fresh is not None:
        shutil.rmtree(fresh / ".curate-cache", ignore_errors=True)
    local = _report(args, tmp_path / "local.json", [])
    if fresh is not None:
        shutil.rmtree(fresh / ".curate-cache", ignore_errors=True)
    ray = _report(args, tmp_path / "ray.json", ["--engine", "ray", "--ray-address", address])
    assert ray == local
    return json.loads(local)


@pytest.fixture(scope="module")
def xland(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four task groups (one unit each on two CPUs), one history without learning (RL207)."""
    return write_file(
        tmp_path_factory.mktemp("xland") / "x.hdf5", tasks=4, histories=2, flat=[(1, 0)]
    )


def test_icrl_identical(ray_engine, ray_cluster, ray_calls, xland, tmp_path, shared):
    report = _same_on_both(["icrl", str(xland)], tmp_path, ray_cluster)
    assert report["summary"]["by_rule"]["RL207"]["findings"] >= 1
    assert ray_calls["scan_tasks"] == 1
    for sample in (
        SAMPLES / "xland_format_sample_9x9_random.hdf5",
        shared("data/xland/xland_format_sample_13x13_random.hdf5"),
    ):
        _same_on_both(["icrl", str(sample)], tmp_path, ray_cluster)


def test_icrl_unreadable_chunk_is_the_same_finding(ray_engine, ray_cluster, xland, tmp_path):
    """A corrupt chunk read by a Ray task is RL001 at the same history and steps, as locally."""
    import h5py

    bad = tmp_path / "bad.hdf5"
    shutil.copy(xland, bad)
    with h5py.File(bad) as f:
        info = f["2"]["rewards"].id.get_chunk_info_by_coord((1, 4096))
    raw = bytearray(bad.read_bytes())
    for i in range(info.byte_offset + 2, info.byte_offset + info.size):
        raw[i] ^= 0xFF
    bad.write_bytes(bytes(raw))
    report = _same_on_both(["icrl", str(bad)], tmp_path, ray_cluster)
    assert report["summary"]["by_rule"]["RL001"]["findings"] == 1


def test_knowledge_editing_identical(ray_engine, ray_cluster, ray_calls, hard_path, tmp_path):
    """MQuAKE-hard as published (a JSON array: read on the driver, its batches' columnar
    parsing as Ray tasks) and as JSON Lines (one shard at the default shard size)."""
    _same_on_both(["knowledge-editing", str(hard_path)], tmp_path, ray_cluster)
    assert ray_calls["batch_columns"] >= 1
    records = json.loads(hard_path.read_text(encoding="utf-8"))
    jsonl = tmp_path / "hard.jsonl"
    jsonl.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in records))
    report = _same_on_both(["knowledge-editing", str(jsonl)], tmp_path, ray_cluster)
    assert report["summary"]["records"] == len(records)
    assert ray_calls["load_span"] >= 1
    _same_on_both(["knowledge-editing", str(SAMPLES / "mquake_sample.json")], tmp_path, ray_cluster)


# --------------------------------------------------------------------------- KE input shards


@pytest.fixture
def shards(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Small input shards (64 KiB of JSON Lines or of parquet row groups), so a test file is
    cut into many; the list receives the number of shards of each sharded input."""
    import curate.families.knowledge_editing as ke
    import curate.io.read
    import curate.io.spans

    monkeypatch.setattr(curate.io.spans, "SPAN_MIN_BYTES", 1)
    monkeypatch.setattr(curate.io.spans, "SPAN_BYTES", 64 << 10)
    seen: list[int] = []
    original = ke.input_spans

    def spy(*args, **kwargs):
        spans = original(*args, **kwargs)
        if spans is not None:
            seen.append(len(spans))
        return spans

    monkeypatch.setattr(ke, "input_spans", spy)
    return seen


def _jsonl(path: Path, records: list, blank_every: int = 0, bom: bool = False) -> Path:
    lines = [json.dumps(r).encode() + b"\n" for r in records]
    if blank_every:  # blank and whitespace-only lines shift line numbers from record indexes
        lines = [
            line + (b"\n   \n" if i % blank_every == blank_every - 1 else b"")
            for i, line in enumerate(lines)
        ]
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + b"".join(lines))
    return path


def _damaged(records: list) -> list:
    """MQuAKE-hard with invalid records and repeated case ids all over the file."""
    out = json.loads(json.dumps(records))
    for i in range(7, len(out), 61):
        out[i]["answer"] = 7  # KE001: a number where a string belongs
    for i in range(30, len(out), 97):
        del out[i]["orig"]["triples"]  # KE001: a missing field
    for i in range(400, len(out), 1):  # KE002: ids of cases far earlier, other shards
        out[i]["case_id"] = out[i - 390]["case_id"]
    out[150]["requested_rewrite"][0]["target_new"]["str"] = ""  # columnar check unsure
    out[200]["extra_field"] = {"x": 1}  # not in the models: that batch read record by record
    return out


def test_ke_shards_identical(ray_engine, ray_cluster, ray_calls, shards, hard_records, tmp_path):
    """JSON Lines read as many shards by the workers: valid, and with invalid records,
    duplicate ids, blank lines and a byte order mark spread across shards, the report equals
    the local one (line numbers, rows, ids, KE002 across shards)."""
    ke = ["knowledge-editing"]
    valid = _jsonl(tmp_path / "hard.jsonl", hard_records)
    _same_on_both([*ke, str(valid)], tmp_path, ray_cluster)
    assert shards[-1] >= 10
    damaged = _jsonl(tmp_path / "damaged.jsonl", _damaged(hard_records), blank_every=13, bom=True)
    report = _same_on_both([*ke, str(damaged)], tmp_path, ray_cluster)
    assert shards[-1] >= 10
    rules = report["summary"]["by_rule"]
    assert rules["KE001"]["findings"] >= 10 and rules["KE002"]["findings"] >= 20
    lines = {f["details"]["position"] for f in report["findings"] if f["rule"] == "KE001"}
    # records 7 and 68 (0-based): no blank line before the first, ten before the second
    assert {"line 8", "line 79"} <= lines
    assert ray_calls["load_span"] >= 1
    # two inputs, one read on the driver (a JSON array), one in shards: rows and duplicates
    # run across both
    array = tmp_path / "hard.json"
    array.write_text(json.dumps(hard_records[:100]), encoding="utf-8")
    _same_on_both([*ke, str(array), str(damaged)], tmp_path, ray_cluster)


def test_ke_shards_of_relative_paths(
    ray_engine, ray_cluster, shards, hard_records, tmp_path, monkeypatch
):
    """A path relative to the caller's directory: the workers (elsewhere) still read it, and
    the report names it as given."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.chdir(tmp_path)
    _jsonl(tmp_path / "rel.jsonl", _damaged(hard_records))
    pq.write_table(pa.Table.from_pylist(hard_records), "rel.parquet", row_group_size=50)
    for name in ("rel.jsonl", "rel.parquet"):
        report = _same_on_both(["knowledge-editing", name], tmp_path, ray_cluster)
        assert report["inputs"][0]["path"] == name
    assert len(shards) == 2 and min(shards) >= 5


def test_ke_shard_with_broken_json_is_the_same_error(
    ray_engine, ray_cluster, shards, hard_records, tmp_path, capsys
):
    """A line that is not JSON in a late shard: exit 2 with the same line and column."""
    path = _jsonl(tmp_path / "broken.jsonl", hard_records, blank_every=5)
    data = path.read_bytes().splitlines(keepends=True)
    data[len(data) - 40] = b'{"case_id": 1, oops\n'
    path.write_bytes(b"".join(data))
    # a second input, read on the driver, broken too: the first input's error still comes first
    array = tmp_path / "broken.json"
    array.write_text("[{", encoding="utf-8")
    engines = {"local": [], "ray": ["--engine", "ray", "--ray-address", ray_cluster]}
    for inputs in ([path], [path, array], [array, path]):
        err = {}
        for name, flags in engines.items():
            assert main(["audit", "knowledge-editing", *map(str, inputs), *flags]) == 2
            err[name] = capsys.readouterr().err
        assert err["ray"] == err["local"]
        if inputs[0] == path:
            assert f"{len(data) - 39}:" in err["local"]
    assert shards[-1] >= 10


def test_ke_parquet_row_groups_identical(
    ray_engine, ray_cluster, ray_calls, shards, hard_records, tmp_path
):
    """Parquet read by row groups in the workers; an invalid record is named by its index."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    records = json.loads(json.dumps(hard_records))
    for i in range(300, len(records)):
        records[i]["case_id"] = records[i - 290]["case_id"]
    records[350]["requested_rewrite"][0]["prompt"] = ""
    path = tmp_path / "hard.parquet"
    pq.write_table(pa.Table.from_pylist(records), path, row_group_size=20)
    report = _same_on_both(["knowledge-editing", str(path)], tmp_path, ray_cluster)
    assert shards[-1] >= 5
    assert report["summary"]["by_rule"]["KE002"]["findings"] >= 100
    assert ray_calls["load_span"] >= 1


@pytest.fixture(scope="module")
def generated_ke(tmp_path_factory: pytest.TempPathFactory, shared) -> Path:
    """20,000 cases from the bench generator (as tests/test_ke_memory.py makes them)."""
    shared("data/mquake/MQuAKE-hard.json")
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_ke_scale import write_cases
    finally:
        sys.path.remove(str(ROOT / "bench"))
    path = tmp_path_factory.mktemp("ke") / "ke-20000.jsonl"
    write_cases(path, 20_000)
    return path


@pytest.mark.parametrize("edit_set", ["all", "random:5000"])
def test_ke_shards_match_the_recorded_hashes(
    ray_engine, generated_ke, edit_set, monkeypatch, shards
):
    """The generator's 20k cases in 1 MiB shards on Ray: the audit JSON hashes to what the
    local reader wrote before the compact tables (tests/test_ke_memory.py), so codes coming
    back from the workers are decoded and re-coded consistently on the driver."""
    from test_ke_memory import BEFORE, audit_hash

    import curate.io.read
    from curate.core.engine import use_engine

    monkeypatch.setattr(curate.io.spans, "SPAN_BYTES", 1 << 20)
    with use_engine(ray_engine):
        digest = audit_hash(generated_ke, edit_set)
    assert shards[-1] >= 20
    assert digest == BEFORE[("gen", edit_set)]


def test_glycan_identical(ray_engine, ray_cluster, ray_calls, glycan_sample_csv, tmp_path):
    report = _same_on_both(["glycan", str(glycan_sample_csv)], tmp_path, ray_cluster)
    assert report["summary"]["findings"] > 0
    assert ray_calls["key_strings"] >= 1
    sample = SAMPLES / "glycan_taxonomy_sample.csv"
    _same_on_both(["glycan", str(sample)], tmp_path, ray_cluster)


#: The user's models for glycowork's sample (``--schema models.py:Row`` / ``:Plain``): ``Row``
#: has a validator (validated row by row), ``Plain`` constraints only (columnwise, its
#: constrained fields by pydantic over their distinct values). ``Domain`` is an enum of the
#: file (its members must come back from a worker as the driver's); "Eukaryota" is not one.
TABLE_MODELS = """
import enum
from typing import Annotated, Literal

from pydantic import BaseModel, PositiveInt, StringConstraints, field_validator


class Domain(str, enum.Enum):
    BACTERIA = "Bacteria"
    EUKARYA = "Eukarya"
    VIRUS = "Virus"
    ARCHAEA = "Archaea"


class Row(BaseModel):
    glycowork_row: int
    glycan: str
    Species: str
    Kingdom: str
    Domain: Domain
    taxon_id: PositiveInt | None = None
    split: Literal["train", "validation", "test"]

    @field_validator("glycan")
    @classmethod
    def balanced(cls, v: str) -> str:
        if v.count("(") != v.count(")"):
            raise ValueError("unbalanced parentheses")
        return v


class Plain(BaseModel):
    glycowork_row: int
    glycan: Annotated[str, StringConstraints(pattern=r"^[^()]*(\\([^()]*\\)[^()]*)*$")]
    Kingdom: Annotated[str, StringConstraints(pattern=r"^[A-Z][a-z]+$")]
    Domain: Domain
    taxon_id: PositiveInt | None = None
    split: Literal["train", "validation", "test"]
"""

#: Cells written over glycowork's sample (row, column, value): each fails both models.
TABLE_BREAKS = [
    (11, "taxon_id", "not a number"),
    (12, "glycan", "Gal(b1-4"),
    (300, "taxon_id", "-5"),
    (2500, "glycan", "Fuc(a1-2"),
    (4800, "taxon_id", "0"),
]


@pytest.fixture(scope="module")
def glycowork_table(tmp_path_factory: pytest.TempPathFactory, glycan_sample_csv) -> Path:
    """glycowork's sample with :data:`TABLE_BREAKS`, and ``models.py`` beside it."""
    import polars as pl

    folder = tmp_path_factory.mktemp("table")
    df = pl.read_csv(glycan_sample_csv, infer_schema_length=0)
    for row, column, value in TABLE_BREAKS:
        df = df.with_columns(
            pl.when(pl.int_range(pl.len()) == row)
            .then(pl.lit(value))
            .otherwise(pl.col(column))
            .alias(column)
        )
    df.write_csv(folder / "glycowork.csv")
    (folder / "models.py").write_text(TABLE_MODELS, encoding="utf-8")
    return folder / "glycowork.csv"


def _table_args(csv: Path, model: str, *, label_model: bool = True) -> list[str]:
    """``label_model=False``: without the label model's cross-validation (most of a run's
    time), where one run with it already compares the label findings on both engines."""
    return [
        "table",
        str(csv),
        *("--id", "glycowork_row", "--label", "Kingdom", "--split", "split", "--text", "glycan"),
        *("--schema", f"{csv.parent / 'models.py'}:{model}"),
        *(() if label_model else ("--label-model", "none")),
    ]


def test_table_identical(
    ray_engine, ray_cluster, ray_calls, glycowork_table, tmp_path, monkeypatch
):
    """The user's model from a file (a module the workers cannot import: they build it from
    the bytes the driver read) checks glycowork's sample as slices of rows (``Row``, a
    validator) and as batches of distinct values (``Plain``) on Ray; each report equals the
    local one, and its TB001 findings are the rows the model refuses, as pydantic says."""
    import importlib.util

    import polars as pl
    from pydantic import ValidationError

    spec = importlib.util.spec_from_file_location(
        "ray_test_models", glycowork_table.parent / "models.py"
    )
    assert spec is not None and spec.loader is not None
    models = importlib.util.module_from_spec(spec)
    sys.modules["ray_test_models"] = models
    spec.loader.exec_module(models)
    from curate.core.engine import RayEngine

    units: Counter = Counter()
    original = RayEngine.map

    def counted(self, fn, todo, **kwargs):
        units[fn.__name__] += len(todo)
        return original(self, fn, todo, **kwargs)

    monkeypatch.setattr(RayEngine, "map", counted)
    df = pl.read_csv(glycowork_table, infer_schema_length=0)
    for name, task in (("Row", "validate_rows"), ("Plain", "validate_values")):
        # the label model once (Row): the Plain run is about the batches of distinct values
        args = _table_args(glycowork_table, name, label_model=name == "Row")
        report = _same_on_both(args, tmp_path, ray_cluster)
        assert ray_calls[task] == 1  # one round of tasks
        assert units[task] >= 4  # of several units: the merge is exercised
        model = getattr(models, name)
        refused = set()
        for row in df.iter_rows(named=True):
            cells = {k: v for k, v in row.items() if v is not None}
            try:
                model.model_validate(cells)
            except ValidationError:
                refused.add(str(row["glycowork_row"]))
        found = {f["record"] for f in report["findings"] if f["rule"] == "TB001"}
        assert found == refused
        assert {str(df["glycowork_row"][r]) for r, _, _ in TABLE_BREAKS} <= found
        assert any("Eukaryota" in f["message"] for f in report["findings"])


def test_deepfake_identical(ray_engine, ray_cluster, ray_calls, tmp_path):
    """A manifest over real generated media (broken, near-duplicate and clean files)."""
    from test_deepfake_files import _row, _write_manifest

    folder = tmp_path / "set"
    names = write_media_set(folder / "media")
    files = sorted({n for group in names.values() for n in group})
    splits = ("train", "test", "validation")
    rows = [
        _row(
            f"s{i:02d}",
            f"media/{n}",
            splits[i % 3],
            "audio" if n.endswith(".wav") else "video" if n.endswith(".mp4") else "image",
        )
        for i, n in enumerate(files)
    ]
    manifest = _write_manifest(folder / "manifest.csv", rows)
    report = _same_on_both(["deepfake", str(manifest)], tmp_path, ray_cluster, fresh=folder)
    rules = report["summary"]["by_rule"]
    assert {"DF201", "DF202", "DF203", "DF208"} <= set(rules)
    assert ray_calls["scan_shard"] >= 1


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file written (the scan's workers masked), but the run's marker (command line,
    times)."""
    return {
        str(p.relative_to(folder)): _TIMING.sub(b'"\\1": "-"', p.read_bytes())
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.parent.name != ".curate"
    }


@pytest.mark.parametrize(
    ("verb", "family"),
    [("fix", "knowledge-editing"), ("export", "icrl"), ("fix", "table"), ("export", "table")],
)
def test_fix_and_export_write_the_same_files(
    ray_engine, ray_cluster, hard_path, xland, glycowork_table, verb, family, tmp_path
):
    """fix and export on Ray write the same bytes (data, card, changelog, reports)."""
    inputs = {
        "knowledge-editing": ["knowledge-editing", str(hard_path)],
        "icrl": ["icrl", str(xland)],
        # the label model on fix's run only (its audit has it; export's would repeat it)
        "table": _table_args(glycowork_table, "Row", label_model=verb == "fix"),
    }[family]
    engines = {"local": [], "ray": ["--engine", "ray", "--ray-address", ray_cluster]}
    trees = {}
    for name, flags in engines.items():
        out = tmp_path / name
        assert main([verb, *inputs, "--out", str(out), *flags]) == 0
        trees[name] = _tree(out)
    assert len(trees["local"]) >= 2
    assert trees["ray"] == trees["local"]


def _report_killing_one_worker(
    args: list[str], tmp_path: Path, address: str, pid_file: Path
) -> bytes:
    """The Ray report of ``args`` while the worker that writes its pid to ``pid_file`` (a task
    made to block there) is SIGKILLed: asserts it was killed and that Ray retried the task
    rather than waiting it out."""
    killed: list[int] = []

    def killer() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not pid_file.exists():
            time.sleep(0.05)
        if pid_file.exists():
            pid = int(pid_file.read_text())
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    t = threading.Thread(target=killer)
    t.start()
    t0 = time.monotonic()
    try:
        ray = _report(args, tmp_path / "ray.json", ["--engine", "ray", "--ray-address", address])
    finally:
        t.join()
    assert killed, "the blocking task never started"
    assert time.monotonic() - t0 < 60  # retried, not waited out
    return ray


def test_worker_killed_mid_run_is_retried(ray_engine, ray_cluster, xland, tmp_path, monkeypatch):
    """The first task of the scan blocks until the test SIGKILLs its worker process; Ray
    retries the unit on a fresh worker and the report equals the local one."""
    import curate.families.icrl_read as icrl_family

    local = _report(["icrl", str(xland)], tmp_path / "local.json", [])
    pid_file = tmp_path / "victim.pid"
    first_group = "0"

    def scan_or_hang(path, groups, indices):
        import os as _os
        import time as _time

        from curate.io.xland_scan import scan_tasks

        if groups[0] == first_group and not _os.path.exists(pid_file):
            tmp = f"{pid_file}.tmp"
            with open(tmp, "w") as f:
                f.write(str(_os.getpid()))
            _os.replace(tmp, pid_file)
            _time.sleep(120)  # killed long before
        return scan_tasks(path, groups, indices)

    monkeypatch.setattr(icrl_family, "scan_tasks", scan_or_hang)
    ray = _report_killing_one_worker(["icrl", str(xland)], tmp_path, ray_cluster, pid_file)
    assert ray == local


def test_ke_shard_worker_killed_mid_run_is_retried(
    ray_engine, ray_cluster, shards, hard_records, tmp_path, monkeypatch
):
    """Knowledge editing in shards: the task reading the first shard blocks until the test
    SIGKILLs its worker; Ray retries the shard on a fresh worker, the report is identical."""
    import curate.families.knowledge_editing as ke

    path = _jsonl(tmp_path / "hard.jsonl", _damaged(hard_records), blank_every=7)
    local = _report(["knowledge-editing", str(path)], tmp_path / "local.json", [])
    pid_file = tmp_path / "victim.pid"

    def load_or_hang(span, first_row, encoding):
        import os as _os
        import time as _time

        from curate.families.knowledge_editing import load_span

        if span.start == 0 and not _os.path.exists(pid_file):
            tmp = f"{pid_file}.tmp"
            with open(tmp, "w") as f:
                f.write(str(_os.getpid()))
            _os.replace(tmp, pid_file)
            _time.sleep(120)  # killed long before
        return load_span(span, first_row, encoding)

    monkeypatch.setattr(ke, "load_span", load_or_hang)
    ray = _report_killing_one_worker(
        ["knowledge-editing", str(path)], tmp_path, ray_cluster, pid_file
    )
    assert shards[-1] >= 10
    assert ray == local


def test_engine_ray_without_ray_is_one_line_exit_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    sample = SAMPLES / "xland_format_sample_9x9_random.hdf5"
    assert main(["audit", "icrl", str(sample), "--engine", "ray"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["curate: error: --engine ray needs Ray: pip install 'curate[ray]'"]


def test_bad_engine_and_stray_address_are_usage_errors(capsys):
    sample = SAMPLES / "mquake_sample.json"
    assert main(["validate", "ke", str(sample), "--engine", "spark"]) == 2
    assert main(["validate", "ke", str(sample), "--ray-address", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "--ray-address needs --engine ray" in err


def test_engine_flag_on_every_verb_of_every_family(capsys):
    """Declared once in the core: every family's validate/audit/fix/export has both flags."""
    from curate.families import all_families

    for verb in ("validate", "audit", "fix", "export"):
        for fam in all_families():
            assert main([verb, fam, "--help"]) == 0
            out = capsys.readouterr().out
            assert "--engine" in out and "--ray-address" in out, (verb, fam)
            assert "curate[ray]" in out, "the extra's name lost to rich markup"


def test_progress_counts_tasks_done_over_total(ray_engine, xland):
    """The terminal's progress callback sees ``tasks done / total`` as Ray tasks finish."""
    import curate
    from curate.core.engine import progress_to, use_engine

    seen: list[tuple[str, int]] = []
    with use_engine(ray_engine), progress_to(lambda msg, n: seen.append((msg, n))):
        curate.audit("icrl", str(xland))
    assert [n for _, n in seen] == [1, 2, 3, 4]
    assert seen[-1][0] == "ray: task-group ranges 4/4"


def test_a_unit_error_reaches_the_caller_as_itself(ray_engine):
    """An input error raised in a Ray task is the same InputError (one line, exit 2) as
    locally, with its path, not Ray's wrapper carrying a remote traceback."""
    from curate.core.errors import InputError

    def unit(k: int) -> int:
        from curate.core.errors import InputError

        if k == 2:
            raise InputError("cannot read shard 2", path="/data/shard-2.jsonl")
        return k

    assert ray_engine.map(unit, [(0,), (1,)]) == [0, 1]
    with pytest.raises(InputError) as caught:
        ray_engine.map(unit, [(0,), (1,), (2,), (3,)])
    assert type(caught.value) is InputError
    assert caught.value.message == "cannot read shard 2"
    assert caught.value.path == "/data/shard-2.jsonl"


def _curate(*args: str, timeout: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    """``curate ARGS`` in a fresh process (this one is joined to the session's cluster, so a
    connection made here would not be a new one); its result and seconds."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    env.pop("RAY_ADDRESS", None)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "curate", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    return done, time.perf_counter() - t0


@pytest.mark.parametrize(
    ("address", "says"),
    [
        ("127.0.0.1:FREE", "no Ray cluster answers at 127.0.0.1:"),
        ("127.0.0.1:99999", "'99999' is not a port"),
        ("not-a-host.invalid:6379", "no Ray cluster answers at not-a-host.invalid:6379"),
    ],
)
def test_an_address_nothing_answers_at_is_exit_2_in_seconds(address, says):
    """Ray itself retries a dead address for ~14 minutes of C++ warnings; curate refuses it
    in the seconds a connection takes, one line, exit 2."""
    pytest.importorskip("ray")
    # a port bound and closed just now (not in the test's id: every xdist worker must
    # collect the same tests)
    address = address.replace("FREE", str(_free_port()))
    sample = str(SAMPLES / "mquake_sample.json")
    done, seconds = _curate("validate", "ke", sample, "--engine", "ray", "--ray-address", address)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"curate: error: --ray-address {address}: ")
    assert says in lines[0]
    assert seconds < 30


@pytest.mark.parametrize("server", ["http", "silent"])
def test_an_address_that_is_not_ray_is_exit_2_in_seconds(server):
    """An address where something else listens (a web server; a listener that never says a
    word) kept ``ray.init`` retrying ~20 s with C++ warnings: curate asks for gRPC's hello
    first and refuses it, one line, exit 2."""
    import http.server
    import socket
    import threading

    pytest.importorskip("ray")
    if server == "http":
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        port, stop = srv.server_address[1], srv.shutdown
    else:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen()  # the kernel accepts; nothing ever answers
        port, stop = sock.getsockname()[1], sock.close
    try:
        address = f"127.0.0.1:{port}"
        sample = str(SAMPLES / "mquake_sample.json")
        done, seconds = _curate(
            "validate", "ke", sample, "--engine", "ray", "--ray-address", address
        )
    finally:
        stop()
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"curate: error: --ray-address {address}: a server answers at {address}, but not a Ray "
        "cluster (no gRPC there; a head's address is its GCS port, 6379 unless `ray start "
        "--port` said otherwise)"
    ]
    assert seconds < 20


_STOPPED_SCRIPT = """
import os, signal, sys, threading, time
import curate.core.outputs as outputs
from curate.core.engine import RayEngine

outputs.install_signal_handlers()
engine = RayEngine(sys.argv[1])
# ray.init makes SIGTERM sys.exit(15); curate's handler must be back
assert signal.getsignal(signal.SIGTERM) is outputs._raise_interrupted
assert signal.getsignal(signal.SIGINT) is outputs._raise_interrupted

def slow(k):
    time.sleep(20)
    return k

threading.Timer(1.5, os.kill, (os.getpid(), int(sys.argv[2]))).start()
try:
    if sys.argv[3] == "map":
        engine.map(slow, [(1,), (2,)])
    else:
        refs = [engine.remote(slow).remote(k) for k in (1, 2)]
        list(engine.gather(refs))
except outputs.Interrupted as e:
    engine.close()
    assert signal.getsignal(signal.SIGTERM) is outputs._raise_interrupted
    print("interrupted", e.signum)
    sys.exit(e.exit_code)
print("not interrupted")
"""


@pytest.mark.parametrize(
    ("sig", "how"), [(signal.SIGINT, "gather"), (signal.SIGTERM, "map"), (signal.SIGINT, "map")]
)
def test_a_signal_while_waiting_on_ray_is_curates_interrupt(ray_cluster, tmp_path, sig, how):
    """Ctrl-C or SIGTERM while the driver waits on Ray tasks unwinds as locally (exit 130/143
    after cleanup): not ``SystemError`` from inside ``ray.wait`` (exit 3, "internal error"),
    nor Ray's own SIGTERM handler (exit 1, which reads as findings)."""
    script = tmp_path / "stopped.py"
    script.write_text(_STOPPED_SCRIPT, encoding="utf-8")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script), ray_cluster, str(int(sig)), how],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 128 + sig, done.stdout + done.stderr[-2000:]
    assert done.stdout.split() == ["interrupted", str(int(sig))]
