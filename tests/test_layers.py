"""The package's layers: imports only go down, and no module reaches into another's privates.

Why a test: the layering (``schemas`` → ``audits`` → ``families`` → ``cli``, with the contract
types in ``dataset``/``findings``/``rules`` below all of them) is what lets a family's rules be
read, tested and split without dragging in its reader, and what lets a family import its rules
at module top instead of hiding a cycle behind lazy imports. It decays silently one convenient
import at a time, so every module under ``curate/`` is parsed here and the rules are checked on
its import statements (lazy imports inside functions included).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "curate"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[str, list[str], int]]:
    """``(imported module, names taken from it, line)`` for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(alias.name, [], node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                own = _module_name(path)
                package = own if path.name == "__init__.py" else own.rpartition(".")[0]
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            out.append((base, [alias.name for alias in node.names], node.lineno))
    return out


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}

#: module prefix → prefixes it must not import (its own layer or the ones above it).
FORBIDDEN = {
    "curate.audits": ("curate.families", "curate.cli", "curate.api"),
    "curate.schemas": ("curate.audits", "curate.families", "curate.cli", "curate.api"),
    "curate.dataset": ("curate.audits", "curate.families", "curate.cli", "curate.api"),
    "curate.findings": ("curate.audits", "curate.families", "curate.cli", "curate.api"),
    "curate.rules": ("curate.audits", "curate.families", "curate.cli", "curate.api"),
}


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_modules_found() -> None:
    # the walk must see the layers it checks, or every other test here passes vacuously
    assert "curate.dataset" in MODULES
    assert any(_under(m, "curate.audits") and m != "curate.audits" for m in MODULES)
    assert any(_under(m, "curate.schemas") and m != "curate.schemas" for m in MODULES)


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_only_go_down(layer: str) -> None:
    bad = []
    for name, path in MODULES.items():
        if not _under(name, layer):
            continue
        for target, _, line in _imports(path):
            if any(_under(target, up) for up in FORBIDDEN[layer]):
                bad.append(f"{path.relative_to(ROOT.parent)}:{line} imports {target}")
    assert not bad, "\n".join(bad)


def test_no_private_name_crosses_modules() -> None:
    """``from curate.x import _helper`` in another module: make the helper public instead."""
    bad = []
    for name, path in MODULES.items():
        for target, names, line in _imports(path):
            if not _under(target, "curate") or target == name:
                continue
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private or any(p.startswith("_") for p in target.split(".")[1:]):
                shown = ", ".join(private) or target
                bad.append(f"{path.relative_to(ROOT.parent)}:{line} imports {shown} from {target}")
    assert not bad, "\n".join(bad)


def test_checks_would_catch_a_violation(tmp_path: Path) -> None:
    """The import walker sees a lazy import inside a function and a relative import."""
    f = tmp_path / "m.py"
    f.write_text("def g():\n    from curate.families.glycan import _single_table\n")
    assert _imports(f) == [("curate.families.glycan", ["_single_table"], 2)]
