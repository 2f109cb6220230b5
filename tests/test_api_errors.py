"""API errors are curate's (issue 30, build 4), and the small CLI defects it lists.

* A wrong argument to ``curate.load/audit/fix/export`` raises :class:`ArgumentError` (a
  ``UsageError`` and a ``TypeError``) naming the argument, before any work and any write.
* A message names what the caller passes: ``overwrite=True`` through the API, ``--overwrite``
  on the command line — for the same error, raised by the same library code.
* ``curate audit`` without a family says what is missing; choices ignore case everywhere;
  random bytes are "binary data", not a file to re-read with another encoding; ``--tasks``
  over the file's task count warns; no ``[text]`` in a help is eaten as rich markup.

All on the samples shipped in the package, through the real API and ``curate.cli.main.main``.
"""

from __future__ import annotations

import inspect
import random
import re
import warnings
from pathlib import Path
from typing import Any

import orjson
import pytest

import curate
from curate.cli.main import cli as command_tree
from curate.cli.main import main
from curate.core.errors import ArgumentError, CurateWarning, InputError, UsageError, api_name
from curate.core.options import field_flag
from curate.families import all_families

SAMPLES = Path(curate.__file__).parent / "data" / "samples"
MQUAKE = SAMPLES / "mquake_sample.json"
GLYCANS = SAMPLES / "glycan_taxonomy_sample.csv"
XLAND = SAMPLES / "xland_format_sample_9x9_random.hdf5"


def run(capsys: pytest.CaptureFixture[str], *argv: Any) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("curate: error: "), err
    return lines[0]


# --------------------------------------------------------------------------- argument types


def test_paths_of_the_wrong_type_name_the_argument() -> None:
    """The issue's case: an int for paths was ``'int' object is not iterable``."""
    with pytest.raises(ArgumentError) as ei:
        curate.audit("mquake", 123)
    assert str(ei.value).startswith("paths: expected a path, a list of paths")
    assert str(ei.value).endswith(", got int")
    # curate's own usage error, and still the TypeError Python code may catch
    assert isinstance(ei.value, UsageError) and isinstance(ei.value, TypeError)
    with pytest.raises(
        ArgumentError,
        match=r"^paths\[1\]: expected a path or a DataFrame \(polars, pandas\), .*, got int$",
    ):
        curate.load("mquake", [MQUAKE, 5])
    with pytest.raises(ArgumentError, match=r"^family: expected a family name or a Family"):
        curate.audit(7, MQUAKE)
    # a list of the same kinds is "a list of them" (it read "a list of paths or a DataFrame
    # (polars, pandas), a pyarrow Tables or a datasets Datasets": found by a new-user review)
    with pytest.raises(ArgumentError) as ei:
        curate.fix("mquake", 123, "out")
    assert str(ei.value) == (
        "paths: expected a path or a DataFrame (polars, pandas), a pyarrow Table or a datasets "
        "Dataset or a list of them, got int"
    )
    with pytest.raises(ArgumentError, match=r"^old: expected a path, a list of paths or a table"):
        curate.diff("mquake", 3, MQUAKE)


PUBLIC = {"load": curate.load, "audit": curate.audit, "fix": curate.fix, "export": curate.export}


def _cases() -> list[tuple[str, str]]:
    return [
        (fn, p.name)
        for fn, f in PUBLIC.items()
        for p in inspect.signature(f).parameters.values()
        if p.kind is not p.VAR_KEYWORD
    ]


@pytest.mark.parametrize(("fn", "param"), _cases())
def test_every_parameter_of_every_public_function_is_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fn: str, param: str
) -> None:
    """Each parameter, given a value of no type it takes: one ArgumentError naming it, raised
    before anything is read or written (the output folder does not appear)."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    args: dict[str, Any] = {"family": "mquake", "paths": str(MQUAKE)}
    if fn in ("fix", "export"):
        args["out"] = out
    args[param] = object()
    with pytest.raises(ArgumentError) as ei:
        PUBLIC[fn](**args)
    assert str(ei.value).startswith(f"{param}: expected "), str(ei.value)
    assert str(ei.value).endswith(", got object")
    assert not out.exists()


def test_what_was_accepted_is_still_accepted(tmp_path: Path) -> None:
    """Paths as str, Path, a tuple; one selector as a str (one item, not its characters)."""
    one = curate.audit("mquake", str(MQUAKE), select=["KE"])
    assert one.findings.height
    assert curate.audit("mquake", (MQUAKE,), select="KE").findings.equals(one.findings)
    done = curate.export("mquake", MQUAKE, tmp_path / "hf", tags="memory-editing")
    readme = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    assert "- memory-editing" in readme and "\n- m\n" not in readme
    assert done.path == tmp_path / "hf"


def test_a_missing_argument_is_curate_s_error() -> None:
    with pytest.raises(ArgumentError, match=r"^export\(\): missing a required argument: 'out'"):
        curate.export("mquake", MQUAKE)


# --------------------------------------------------------------------------- options


def test_an_unknown_option_names_it_and_the_closest_one() -> None:
    with pytest.raises(ArgumentError) as ei:
        curate.audit("mquake", MQUAKE, edit_sett="random:5")
    msg = str(ei.value)
    assert msg.startswith(
        "edit_sett: knowledge-editing has no such option (did you mean edit_set?)"
    )
    assert isinstance(ei.value, TypeError)  # Python's class for an unexpected keyword


def test_an_option_of_the_wrong_type_names_it() -> None:
    with pytest.raises(ArgumentError, match=r"^edit_set: .*string.*, got int$"):
        curate.audit("mquake", MQUAKE, edit_set=5)
    with pytest.raises(ArgumentError, match=r"^columns: .*dictionary.*, got int$"):
        curate.load("glycan", GLYCANS, columns=5)
    with pytest.raises(UsageError, match=r"^tasks: .*integer"):
        curate.audit("icrl", XLAND, tasks="many")


@pytest.mark.parametrize(
    ("family", "path", "option", "value", "expected"),
    [
        ("icrl", XLAND, "seed", "a", "an integer, got str"),  # was a UsageError on the value
        ("icrl", XLAND, "tasks", True, "an integer, got bool"),  # bool is an int subclass
        ("icrl", XLAND, "tasks", "1", "an integer, got str"),  # pydantic read it as 1
        ("icrl", XLAND, "workers", 2.0, "an integer, got float"),
        ("icrl", XLAND, "fraction", True, "a number, got bool"),
        ("icrl", XLAND, "metadata_only", "yes", "True or False, got str"),
        ("icrl", XLAND, "unit", 5, "'episode' or 'segment', got int"),
        ("glycan", GLYCANS, "seed", "3", "an integer, got str"),
        ("glycan", GLYCANS, "resplit", "no", "True or False, got str"),
        ("glycan", GLYCANS, "mapping", 5, "a path, got int"),
        ("deepfake", MQUAKE, "near_distance", True, "an integer, got bool"),
        ("deepfake", MQUAKE, "max_imbalance", "2", "a number, got str"),
        ("mquake", MQUAKE, "workers", False, "an integer, got bool"),
    ],
)
def test_an_option_value_is_never_converted_from_another_type(
    family: str, path: Path, option: str, value: Any, expected: str
) -> None:
    """pydantic's lax mode took ``tasks=True`` as 1 and ``seed="3"`` as 3: a wrong variable
    passed silently. Each is curate's ArgumentError naming the option, before any read."""
    with pytest.raises(ArgumentError) as ei:
        curate.load(family, path, **{option: value})
    assert str(ei.value) == f"{option}: expected {expected}"
    assert isinstance(ei.value, TypeError)


def test_option_values_of_the_right_type_still_pass(tmp_path: Path) -> None:
    """An int for a float, a str for a path, the choices and the CLI's own (typed) values."""
    assert curate.load("icrl", XLAND, fraction=1, seed=3).options.fraction == 1
    mapping = tmp_path / "m.json"
    mapping.write_text("{}", encoding="utf-8")
    assert curate.load("glycan", GLYCANS, mapping=str(mapping), task="taxonomy").options.mapping
    rc = main(
        ["audit", "icrl", str(XLAND), "--tasks", "1", "--seed", "2", "-o", str(tmp_path / "r")]
    )
    assert rc in (0, 1)


def test_data_of_another_family_names_paths() -> None:
    data = curate.load("mquake", MQUAKE)
    with pytest.raises(ArgumentError, match=r"^paths: data loaded as knowledge-editing, audited"):
        curate.audit("glycan", data)
    with pytest.raises(UsageError, match=r"^paths: no input given"):
        curate.audit("mquake", [])


def test_another_family_s_file_suggests_the_call_in_python(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The hint of a wrong-family input is the command on the command line and the call in
    Python: the same InputError, raised by the same family code."""
    with pytest.raises(InputError) as ei:
        curate.audit("mquake", GLYCANS)
    assert f"(curate.audit('glycan', {str(GLYCANS)!r}))" in str(ei.value)
    assert "curate audit" not in str(ei.value)
    rc, _, err = run(capsys, "export", "glycan", MQUAKE, "--out", "never")
    assert rc == 2 and f"(curate export knowledge-editing {MQUAKE})" in error_line(err)
    with pytest.raises(InputError, match=r"\(curate\.export\('knowledge-editing', "):
        curate.export("glycan", MQUAKE, "never")


def test_an_unknown_family_is_a_usage_error_naming_it() -> None:
    with pytest.raises(UsageError, match=r"^unknown family 'mquak'; known: .*mquake"):
        curate.audit("mquak", MQUAKE)


def test_every_family_flag_maps_to_its_option() -> None:
    """The CLI flag and the API keyword of every family option are one option to :func:`arg`:
    a flag spelt other than its field (``--column`` for ``columns``) is in ``API_NAMES``."""
    for fam in all_families().values():
        for name in fam.Options.model_fields:
            assert api_name(field_flag(fam.Options, name)) == name, (fam.name, name)


# --------------------------------------------------------------------------- caller's words


def test_overwrite_is_named_as_the_caller_passes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "hf"
    curate.export("mquake", MQUAKE, out)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*"))
    with pytest.raises(UsageError) as ei:
        curate.export("mquake", MQUAKE, out)
    assert "pass overwrite=True" in str(ei.value) and "--" not in str(ei.value)
    assert str(ei.value).startswith(f"out {out}: exists")
    rc, _, err = run(capsys, "export", "mquake", MQUAKE, "--out", out)
    line = error_line(err)
    assert rc == 2 and "pass --overwrite" in line and "overwrite=True" not in line
    assert f"--out {out}: exists" in line
    assert sorted((p.name, p.stat().st_mtime_ns) for p in out.rglob("*")) == before
    # the CLI's words end with the command: the API in the same process speaks Python again
    with pytest.raises(UsageError, match="pass overwrite=True"):
        curate.export("mquake", MQUAKE, out)


@pytest.mark.parametrize(
    ("call", "argv", "api_words", "cli_words"),
    [
        (
            lambda: curate.load("glycan", GLYCANS, columns={"glycan": "nosuch"}),
            ["audit", "glycan", GLYCANS, "--column", "glycan=nosuch"],
            "columns={'glycan': 'nosuch'}: no such column",
            "--column glycan=nosuch: no such column",
        ),
        (
            lambda: curate.audit("icrl", XLAND, tasks=1, fraction=0.5),
            ["audit", "icrl", XLAND, "--tasks", "1", "--fraction", "0.5"],
            "give tasks or fraction, not both",
            "give --tasks or --fraction, not both",
        ),
        (
            lambda: curate.export("mquake", MQUAKE, "never", license="no-such-licence"),
            ["export", "mquake", MQUAKE, "--out", "never", "--license", "no-such-licence"],
            "license='no-such-licence' is not a Hub licence identifier",
            "--license 'no-such-licence' is not a Hub licence identifier",
        ),
        (
            lambda: curate.audit("mquake", MQUAKE, encoding="no-such-codec"),
            ["audit", "mquake", MQUAKE, "--encoding", "no-such-codec"],
            "encoding='no-such-codec': unknown text encoding",
            "--encoding 'no-such-codec': unknown text encoding",
        ),
        (
            lambda: curate.fix("glycan", GLYCANS, select=["GL1"]),
            ["fix", "glycan", GLYCANS, "--out", "never", "--select", "GL1"],
            "select=['GL1']: no fixable rule chosen",
            "--select GL1: no fixable rule chosen",
        ),
        (
            lambda: curate.export("mquake", MQUAKE, "never", layout="remastered"),
            ["export", "mquake", MQUAKE, "--out", "never", "--layout", "remastered"],
            "layout='remastered'",
            "--layout remastered",
        ),
    ],
)
def test_library_messages_use_the_caller_s_words(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    call: Any,
    argv: list[Any],
    api_words: str,
    cli_words: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises((UsageError, InputError)) as ei:
        call()
    text = ei.value.one_line() if isinstance(ei.value, InputError) else str(ei.value)
    assert api_words in text and not re.search(r"(^|\s)--[a-z]", text), text
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and cli_words in error_line(err)
    assert not (tmp_path / "never").exists()


def test_options_the_command_cannot_take_are_named_as_arguments(tmp_path: Path) -> None:
    """icrl's fix and export refuse a metadata-only run or a sample (the CLI has no such flags
    for them, so only the API can ask): the refusal names the keyword."""
    with pytest.raises(UsageError, match=r"^metadata_only=True checks no array data"):
        curate.export("icrl", XLAND, tmp_path / "a", metadata_only=True)
    with pytest.raises(UsageError, match=r"^tasks/fraction: icrl fix writes every task"):
        curate.fix("icrl", XLAND, tmp_path / "b", tasks=1)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_strict_refusal_names_strict_as_the_caller_passes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.csv"
    rows = GLYCANS.read_text(encoding="utf-8").splitlines()
    cells = rows[1].split(",")
    cells[1] = ""  # no glycan: an invalid record
    bad.write_text("\n".join([rows[0], ",".join(cells), *rows[2:]]) + "\n", encoding="utf-8")
    with pytest.raises(curate.StrictRefusal, match=r"nothing written \(strict=True\)"):
        curate.export("glycan", bad, tmp_path / "a", strict=True)
    rc, _, err = run(capsys, "export", "glycan", bad, "--out", tmp_path / "b", "--strict")
    assert rc == 1 and "nothing written (--strict)" in err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


# --------------------------------------------------------------------------- small items


@pytest.mark.parametrize(
    ("argv", "missing"),
    [(["audit"], "FAMILY"), (["fix"], "FAMILY"), ([], "COMMAND"), (["card"], "COMMAND")],
)
def test_a_command_without_its_family_says_what_is_missing(
    capsys: pytest.CaptureFixture[str], argv: list[str], missing: str
) -> None:
    """One line naming what is missing, and nothing else: the whole help was printed on
    stdout before it (typer's no_args_is_help prints while it makes the error)."""
    rc, out, err = run(capsys, *argv)
    line = error_line(err)
    assert rc == 2 and out == ""
    assert line.startswith(f"curate: error: missing {missing} (one of: ")
    assert line.endswith(f"(see `{' '.join(['curate', *argv])} --help`)")
    if missing == "FAMILY":
        assert "knowledge-editing" in line and "glycan" in line


def _commands() -> list[tuple[str, Any]]:
    """Every command of the tree with its path: the verbs' family commands included."""
    import typer

    root = command_tree()
    found: list[tuple[str, Any]] = [("", root)]
    stack = [("", root)]
    while stack:
        path, cmd = stack.pop()
        if not hasattr(cmd, "list_commands"):
            continue
        ctx = typer._click.core.Context(cmd)
        for name in cmd.list_commands(ctx):
            sub = cmd.get_command(ctx, name)
            found.append((f"{path} {name}".strip(), sub))
            stack.append((f"{path} {name}".strip(), sub))
    return found


def test_every_choice_of_every_command_ignores_case() -> None:
    """``--format JSON`` as ``MQUAKE``: no choice option of any command is case-sensitive."""
    choices = [
        (path, p.name, p.type_descriptor.case_sensitive)
        for path, cmd in _commands()
        for p in cmd.params
        if getattr(getattr(p, "type_descriptor", None), "choices", None)
    ]
    names = {name for _, name, _ in choices}
    assert {"fmt", "fail_on", "engine", "opt_layout", "opt_task", "by"} <= names  # all found
    assert [c for c in choices if c[2] is not False] == []


def test_upper_case_choices_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, lower, _ = run(capsys, "audit", "mquake", MQUAKE, "--format", "json")
    rc2, upper, err = run(
        capsys, "audit", "MQUAKE", MQUAKE, "--format", "JSON", "--fail-on", "ERROR"
    )
    assert (rc, rc2, err) == (0, 0, "")
    assert upper == lower
    rc, _, _ = run(
        capsys, "export", "mquake", MQUAKE, "--out", tmp_path / "o", "--layout", "ORIGINAL"
    )
    assert rc == 0 and (tmp_path / "o" / "README.md").is_file()
    rc, out, _ = run(capsys, "rules", "glycan", "--format", "JSON")
    assert rc == 0 and out.lstrip().startswith("[")


@pytest.mark.parametrize("seed", range(6))
def test_random_bytes_are_binary_not_another_encoding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], seed: int
) -> None:
    rng = random.Random(seed)
    noise = bytes(rng.randrange(256) for _ in range(4096))
    pure = tmp_path / "noise.jsonl"
    pure.write_bytes(noise)
    # real records, then a damaged stretch: the file's good start must not make it "text"
    mixed = tmp_path / "damaged.jsonl"
    good = b"".join(orjson.dumps(r) + b"\n" for r in orjson.loads(MQUAKE.read_bytes())[:5])
    mixed.write_bytes(good + noise.replace(b"\n", b"") + b"\n")
    for path in (pure, mixed):
        rc, _, err = run(capsys, "audit", "mquake", path)
        line = error_line(err)
        assert rc == 2 and str(path) in line
        assert "binary data" in line and "--encoding" not in line, line


def test_a_real_latin1_file_still_gets_the_encoding_advice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other side of the random-bytes case: Western text keeps its advice."""
    text = MQUAKE.read_text(encoding="utf-8").replace('"answer": "', '"answer": "Zürich ', 3)
    p = tmp_path / "legacy.json"
    p.write_bytes(text.encode("latin-1", "replace"))
    rc, _, err = run(capsys, "audit", "mquake", p)
    assert rc == 2 and "read it with --encoding latin-1" in error_line(err)


def test_more_tasks_than_the_file_holds_warns(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(capsys, "audit", "icrl", XLAND, "--tasks", "200", "-f", "json")
    lines = err.strip().splitlines()
    assert rc == 0 and len(lines) == 1
    assert lines[0].startswith(f"curate: warning: {XLAND}: --tasks 200, but the file has only 2")
    rc, _, err = run(capsys, "audit", "icrl", XLAND, "--tasks", "2", "-f", "json")
    assert rc == 0 and err == ""
    with pytest.warns(CurateWarning, match=r"tasks=200, but the file has only 2 task"):
        report = curate.audit("icrl", XLAND, tasks=200)
    assert report.stats["tasks_scanned"] == report.stats["tasks"] == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        curate.audit("icrl", XLAND, tasks=1)  # a real sample: no warning


def test_no_help_text_loses_its_brackets_to_markup(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ``[...]`` in a command's or an option's help reaches the rendered ``--help``
    (``[tool.curate]`` was eaten as a rich markup tag): the help of every command is rendered
    wide enough not to wrap, and each bracketed piece of its help texts is looked for."""
    monkeypatch.setenv("COLUMNS", "1000")
    looked = 0
    for path, cmd in _commands():
        texts = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        pieces = [
            "[" + m.group(1) + "]"
            for t in texts
            for m in re.finditer(r"\\?\[([^\[\]]*)\]", t)
            if m.group(1).strip()
        ]
        if not pieces:
            continue
        rc, out, _ = run(capsys, *path.split(), "--help")
        assert rc == 0, path
        shown = " ".join(out.replace("│", " ").split())
        for piece in pieces:
            looked += 1
            assert " ".join(piece.split()) in shown, (path, piece)
    assert looked >= 3  # [tool.curate], curate[ray], ray[client] at least


def test_use_engine_names_its_own_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    """``curate.core.engine.use_engine(name, address)`` is the engine's API (README): its refusals
    name those arguments; the CLI's name --engine and --ray-address."""
    from curate.core.engine import use_engine

    with pytest.raises(UsageError, match=r"^name='nope': unknown engine"):
        use_engine("nope").__enter__()
    with pytest.raises(UsageError, match=r"^address needs name='ray'$"):
        use_engine("local", "127.0.0.1:1").__enter__()
    rc, _, err = run(capsys, "audit", "mquake", MQUAKE, "--ray-address", "127.0.0.1:1")
    assert rc == 2 and error_line(err) == "curate: error: --ray-address needs --engine ray"


FAMILY_SAMPLES = {
    "mquake": (MQUAKE, {}),
    "glycan": (GLYCANS, {}),
    "icrl": (XLAND, {}),
    "deepfake": (SAMPLES / "musiccaps_manifest.csv", {"columns": {"sample_id": "ytid"}}),
}


@pytest.mark.parametrize("family", sorted(FAMILY_SAMPLES))
def test_load_preamble_is_the_same_for_every_family(family: str) -> None:
    """Family.load checks the options, takes a bare path, refuses no path and keeps the
    options, whichever family reads: one template, not four copies."""
    from curate.families import get_family

    fam = get_family(family)
    path, opts = FAMILY_SAMPLES[family]
    bare = fam.load(str(path), **opts)
    listed = fam.load([path], **opts)
    assert [i.path for i in bare.inputs] == [i.path for i in listed.inputs] == [str(path)]
    assert bare.options == listed.options == fam.options(**opts)
    with pytest.raises(UsageError, match=r"^no input given$"):
        fam.load([], **opts)
    with pytest.raises(ArgumentError, match=r"no such option"):
        fam.load(path, no_such_option=1)


@pytest.mark.parametrize("family", ["mquake", "icrl", "deepfake"])
def test_workers_below_one_is_a_usage_error_in_every_family(family: str) -> None:
    with pytest.raises(UsageError, match=r"workers: must be at least 1 \(got 0\)"):
        curate.load(family, FAMILY_SAMPLES[family][0], workers=0)


@pytest.mark.parametrize("name", ["tasks", "segment_length"])
def test_icrl_counts_below_one_are_usage_errors(name: str) -> None:
    extra = {"unit": "segment"} if name == "segment_length" else {}
    with pytest.raises(UsageError, match=rf"{name.replace('_', '.')}: must be at least 1"):
        curate.load("icrl", XLAND, **{name: 0}, **extra)
