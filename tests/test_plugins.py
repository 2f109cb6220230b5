"""Families as plug-ins: discovery through the ``curate.families`` entry points.

A fake third-party distribution is installed the standard way, as a ``*.dist-info`` folder
(``METADATA`` + ``entry_points.txt``) beside its package on ``sys.path``: ``importlib.metadata``
finds it exactly as it finds a pip-installed one. It registers a working family (``echo-ke``, a
renamed knowledge-editing family, alias ``eke``), a family whose import fails on a missing
dependency (``broken``), one whose module is not a family (``notafamily``), and a name that
tries to take over a built-in (``glycan``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE

import curate.families as families
from curate.cli.main import main
from curate.core.errors import UsageError
from curate.families import BUILTIN, FamilyLoadError, entries, get_family

PLUGIN = """
from dataclasses import replace

from curate.families.knowledge_editing import KnowledgeEditingFamily


class EchoKE(KnowledgeEditingFamily):
    name = "echo-ke"
    aliases = ("eke",)
    card = replace(
        KnowledgeEditingFamily.card, title="Knowledge editing, registered by a third-party package"
    )


FAMILY = EchoKE()
"""

ENTRY_POINTS = """\
[curate.families]
echo-ke = curatefake_echo:FAMILY
broken = curatefake_broken:FAMILY
notafamily = curatefake_notafamily:FAMILY
glycan = curatefake_echo:FAMILY
"""


def install_fake(root: Path) -> Path:
    """A distribution ``curate-fake-families`` in ``root``, as pip would lay it out."""
    (root / "curatefake_echo.py").write_text(PLUGIN)
    (root / "curatefake_broken.py").write_text("import curatefake_missing_dependency\nFAMILY = 1\n")
    (root / "curatefake_notafamily.py").write_text("FAMILY = 'just a string'\n")
    info = root / "curate_fake_families-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: curate-fake-families\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return root


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    install_fake(site)
    monkeypatch.syspath_prepend(str(site))
    families.refresh()
    yield site
    for mod in [m for m in sys.modules if m.startswith("curatefake_")]:
        del sys.modules[mod]
    monkeypatch.undo()
    families.refresh()


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(argv)
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_builtins_are_registered_through_entry_points() -> None:
    """pyproject.toml registers the built-ins, and BUILTIN (the source-checkout fallback) says
    exactly the same."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = project["project"]["entry-points"]["curate.families"]
    assert declared == BUILTIN
    names = {e.value: e.names for e in entries()}
    assert names["curate.families.knowledge_editing:FAMILY"] == (
        "knowledge-editing",
        "mquake",
        "ke",
    )
    assert names["curate.families.glycan:FAMILY"] == ("glycan",)
    assert {e.package for e in entries()} == {"curate"}


def test_discovery_imports_no_family_module(plugins) -> None:
    found = {e.names[0]: e for e in entries()}
    assert {"knowledge-editing", "glycan", "echo-ke", "broken", "notafamily"} <= set(found)
    assert found["echo-ke"].package == "curate-fake-families"
    assert not [m for m in sys.modules if m.startswith("curatefake_")]


def test_a_plugin_family_is_used_like_a_builtin(plugins, capsys) -> None:
    fam = get_family("echo-ke")
    assert fam.name == "echo-ke" and type(fam).__module__ == "curatefake_echo"
    assert "curatefake_broken" not in sys.modules
    rc, out, err = run(["audit", "echo-ke", str(SAMPLE), "--format", "json"], capsys)
    assert rc in (0, 1), err
    assert json.loads(out)["family"] == "echo-ke"
    # An alias that only the family object declares: found by loading the families.
    assert get_family("eke") is fam


def test_a_plugin_cannot_take_a_builtin_name(plugins) -> None:
    assert get_family("glycan").name == "glycan"
    assert type(get_family("glycan")).__module__ == "curate.families.glycan"


def test_rules_lists_every_family_and_one_line_for_the_broken_one(plugins, capsys) -> None:
    rc, out, err = run(["rules"], capsys)
    assert rc == 0
    assert "GL401" in out
    assert out.count("KE201  ") == 2  # knowledge-editing's rules, and echo-ke's (the same set)
    lines = err.splitlines()
    assert len(lines) == 2, err  # broken and notafamily, one line each
    broken = next(ln for ln in lines if "'broken'" in ln)
    assert broken.startswith("curate: warning: family 'broken'")
    assert "curatefake_missing_dependency" in broken and "curate-fake-families" in broken
    assert any("'notafamily'" in ln and "not a curate Family" in ln for ln in lines)


def test_other_commands_never_touch_a_broken_family(plugins, capsys) -> None:
    rc, _, err = run(["audit", "mquake", str(SAMPLE)], capsys)
    assert rc in (0, 1) and err == ""
    assert "curatefake_broken" not in sys.modules
    rc, _, err = run(
        ["validate", "glycan", str(ROOT / "curate/data/samples/glycan_taxonomy_sample.csv")], capsys
    )
    assert rc in (0, 1) and err == ""


@pytest.mark.parametrize("command", ["audit", "validate"])
def test_using_the_broken_family_is_exit_2_with_one_line(plugins, capsys, command) -> None:
    rc, out, err = run([command, "broken", "x.json"], capsys)
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("curate: error: family 'broken'")
    assert "missing module 'curatefake_missing_dependency'" in lines[0]
    rc, _, err = run(["rules", "broken"], capsys)
    assert rc == 2 and len(err.splitlines()) == 1


def test_unknown_family_lists_the_loadable_and_the_broken(plugins, capsys) -> None:
    rc, _, err = run(["audit", "nosuch", str(SAMPLE)], capsys)
    assert rc == 2 and len(err.splitlines()) == 1
    assert "echo-ke (alias eke)" in err and "broken (cannot be loaded)" in err
    assert "knowledge-editing (alias mquake, ke)" in err
    with pytest.raises(FamilyLoadError, match="not a curate Family"):
        get_family("notafamily")
    assert isinstance(FamilyLoadError("x"), UsageError)  # exit 2 through the CLI


def test_source_checkout_without_metadata_uses_the_builtins(monkeypatch) -> None:
    """No ``curate`` distribution installed (a fresh clone on PYTHONPATH): BUILTIN stands in,
    and third-party plug-ins are still found."""
    real = metadata.entry_points

    def without_curate(**kwargs):
        return metadata.EntryPoints(
            ep for ep in real(**kwargs) if getattr(ep.dist, "name", "") != "curate"
        )

    monkeypatch.setattr(metadata, "entry_points", without_curate)
    families.refresh()
    try:
        assert get_family("mquake").name == "knowledge-editing"
        assert set(families.all_families()) >= {"knowledge-editing", "glycan"}
        assert {e.package for e in entries()} == {"curate"}
    finally:
        monkeypatch.undo()
        families.refresh()


def test_plugin_found_by_a_fresh_interpreter(tmp_path: Path) -> None:
    """End to end: the plug-in's folder on PYTHONPATH, nothing else; ``python -m curate``."""
    site = tmp_path / "site"
    site.mkdir()
    install_fake(site)
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}

    def curate(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "curate", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )

    listing = curate("rules")
    assert listing.returncode == 0 and listing.stdout.count("KE201  ") == 2
    assert len(listing.stderr.splitlines()) == 2
    used = curate("audit", "broken", str(SAMPLE))
    assert used.returncode == 2 and len(used.stderr.splitlines()) == 1
    assert "curatefake_missing_dependency" in used.stderr and "Traceback" not in used.stderr
    ok = curate("audit", "echo-ke", str(SAMPLE))
    assert ok.returncode in (0, 1), ok.stderr
