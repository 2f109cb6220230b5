"""Start-up (issue 36): help, rules, the version and shell completion import none of the heavy
libraries, and what they show of each family comes from the catalogue, equal to what the
families themselves say.

The import check runs the real console entry (``python -X importtime -m curate ...``) in a new
process and reads every module the interpreter imported; the time itself is measured in
``bench/bench_startup.py``, not here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import curate
from curate.cli.main import main
from curate.families import catalogue

ROOT = Path(curate.__file__).resolve().parents[1]
SAMPLES = Path(curate.__file__).parent / "data" / "samples"
#: What a start must not pay for: the data libraries (polars, pyarrow, numpy), the Hub's
#: (datasets), HDF5 (h5py).
HEAVY = {"polars", "pyarrow", "numpy", "datasets", "h5py"}


def imported(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, set[str]]:
    """Exit code, stdout and the top-level names of every module ``curate ARGS`` imported."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "curate", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        timeout=120,
    )
    names = {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return proc.returncode, proc.stdout, names


LIGHT = [
    ["--help"],
    ["--version"],
    ["rules"],
    ["rules", "glycan"],
    ["rules", "KE201"],
    ["rules", "--code", "GL401", "-f", "json"],
    ["audit", "--help"],
    ["audit", "mquake", "--help"],
    ["validate", "deepfake", "--help"],
    ["fix", "glycan", "--help"],
    ["export", "icrl", "--help"],
    ["diff", "table", "--help"],
    ["check", "--help"],
    ["card", "check", "--help"],
    ["overlap", "--help"],
]


@pytest.mark.parametrize("args", LIGHT, ids=" ".join)
def test_help_rules_and_version_import_no_heavy_library(args: list[str]) -> None:
    rc, out, names = imported(args)
    assert rc == 0
    assert out.strip()
    assert "curate" in names  # the check reads the imports at all
    assert not names & HEAVY, sorted(names & HEAVY)
    # nor rich's help renderer, nor Pydantic (typer's coercion of absent or default values)
    assert not names & {"rich", "pydantic"}, sorted(names & {"rich", "pydantic"})


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("curate audit ", {"knowledge-editing", "glycan", "icrl", "deepfake", "table"}),
        ("curate export mquake --e", {"--edit-set", "--encoding", "--engine"}),
        ("curate fix glycan --label-", {"--label-model", "--label-folds", "--label-fix"}),
        ("curate ru", {"rules"}),
        ("curate audit mq", {"mquake"}),  # an alias, as the README spells the family
        ("curate audit deepfake --no-", {"--no-files"}),
        ("curate rules gly", {"glycan", "glycans", "glycanml"}),  # families, aliases, codes
        ("curate rules KE20", {"KE201", "KE202"}),
        ("curate export mquake --license cc-by-4", {"cc-by-4.0"}),  # the Hub's licence ids
        ("curate export table --language fr", {"fr", "frr"}),  # and its language codes
    ],
)
def test_shell_completion_answers_without_heavy_libraries(words: str, expected: set[str]) -> None:
    """bash's side of typer's completion protocol (what ``--install-completion`` installs)."""
    env = {
        "_CURATE_COMPLETE": "complete_bash",
        "COMP_WORDS": words,
        "COMP_CWORD": str(len(words.split(" ")) - 1),
    }
    rc, out, names = imported([], env)
    assert rc == 0
    assert expected <= set(out.split()), out
    assert not names & (HEAVY | {"pydantic"}), sorted(names & (HEAVY | {"pydantic"}))


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["rules", "-f", "yaml"], "'yaml' is not one of"),  # typer's own choice error
        (["audit", "mquake", "x.json", "--workers", "two"], "Input should be a valid integer"),
        (["audit", "mquake"], "Missing argument"),
    ],
)
def test_a_light_parse_keeps_typers_errors(args: list[str], says: str, capsys) -> None:
    """What the light coercion (``cli.help.AbsentFlagsAreFalse``) hands to typer still fails
    as typer says: a wrong value, a wrong case, a missing argument."""
    assert main(args) == 2
    err = capsys.readouterr().err
    assert says in err and "Value error" not in err, err


def test_the_light_parse_gives_the_command_typers_values(capsys) -> None:
    """Absent values, declared defaults and plain words reach the command as typer's coercion
    gives them: ``rules`` with none, with ``-f json`` and with a family all answer."""
    assert main(["rules", "KE201", "-f", "json"]) == 0
    (rule,) = json.loads(capsys.readouterr().out)
    assert rule["code"] == "KE201"
    assert main(["rules", "-f", "JSON", "--code", "KE201"]) == 0  # typer's (uncased) choice
    assert json.loads(capsys.readouterr().out)[0]["code"] == "KE201"
    assert main(["rules", "glycan"]) == 0
    assert "GL401" in capsys.readouterr().out


def test_the_completion_script_is_printed_for_each_shell() -> None:
    """What the README tells users to put in their start-up file; curate never edits it."""
    for shell, marker in (("bash", "_curate_completion"), ("zsh", "compdef"), ("fish", "complete")):
        rc, out, _ = imported([], {"_CURATE_COMPLETE": f"source_{shell}"})
        assert rc == 0 and marker in out, (shell, out)


@pytest.mark.parametrize(
    ("family", "sample", "not_used"),
    [
        # a glycan audit fits its label model (cleanlab, scikit-learn): those are used
        ("glycan", "glycan_taxonomy_sample.csv", {"h5py", "ray"}),
        ("mquake", "mquake_sample.json", {"h5py", "ray", "cleanlab", "sklearn", "matplotlib"}),
    ],
)
def test_an_audit_imports_only_what_it_uses(
    family: str, sample: str, not_used: set[str], tmp_path: Path
) -> None:
    """The first real command pays for what it uses: polars for a table, not HDF5 or Ray."""
    out = tmp_path / "report.json"
    args = ["audit", family, str(SAMPLES / sample), "-f", "json", "-o", str(out)]
    rc, _, names = imported(args)
    assert rc in (0, 1)
    assert json.loads(out.read_text("utf-8"))["summary"]["records"] > 0
    assert "polars" in names
    assert not names & not_used, sorted(names & not_used)


def test_the_catalogue_is_what_the_families_say() -> None:
    """``curate/data/families.json`` equals what curate's own families declare now: a rule's
    docstring or an option's help changed without ``python scripts/make_catalogue.py`` fails."""
    shipped = json.loads((ROOT / "curate" / "data" / catalogue.CATALOGUE).read_text("utf-8"))
    fresh = json.loads(json.dumps(catalogue.catalogue_of()))
    assert list(shipped) == list(fresh)
    for value in fresh:
        assert shipped[value] == fresh[value], (
            f"{value}: curate/data/families.json is stale; run python scripts/make_catalogue.py"
        )


VERBS = ["validate", "audit", "fix", "export", "diff"]


@pytest.mark.parametrize("family", ["knowledge-editing", "glycan", "icrl", "deepfake", "table"])
def test_help_from_the_catalogue_is_the_help_from_the_family(
    family: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every verb's ``--help`` built from the catalogue is the one built from the imported
    family (the path a plug-in family takes), character for character."""

    def helps() -> dict[str, str]:
        out = {}
        for verb in VERBS:
            assert main([verb, family, "--help"]) == 0
            out[verb] = capsys.readouterr().out
        for fmt in ("text", "json", "markdown"):
            assert main(["rules", family, "-f", fmt]) == 0
            out[f"rules {fmt}"] = capsys.readouterr().out
        return out

    from_catalogue = helps()
    monkeypatch.setattr(catalogue, "_shipped", dict)  # no catalogue: import and describe
    from_family = helps()
    assert from_catalogue == from_family
    assert all(from_catalogue.values())


def test_help_says_what_each_flag_takes(capsys: pytest.CaptureFixture[str]) -> None:
    """A switch off by default is one flag (no --no-no-files); values are named (TEXT, N,
    FOLDER), never typer's <str>; the families are listed with what they read and aliases."""
    assert main(["audit", "deepfake", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--no-files " in text and "--no-no-files" not in text
    assert "<str>" not in text and "--workers N" in text
    assert main(["export", "mquake", "--help"]) == 0
    text = capsys.readouterr().out
    assert "--no-overwrite" not in text and "--out FOLDER" in text
    assert main(["fix", "glycan", "--help"]) == 0
    assert "--resplit / --no-resplit" in capsys.readouterr().out  # on by default: can be off
    assert main(["audit", "--help"]) == 0
    text = capsys.readouterr().out
    assert "Multi-hop knowledge editing" in text and "alias mquake" in text
