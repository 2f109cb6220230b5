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

#: The layers, bottom first: a module may import its own layer and the ones below, never above.
#: The package root (``curate``: ``__version__`` and the lazy API) sits with the API.
LAYERS = (
    ("curate.core",),
    ("curate.io",),
    ("curate.schemas",),
    ("curate.audits",),
    ("curate.families",),
    ("curate.reports",),
    ("curate.publish",),
    ("curate.overlap",),
    ("curate.api", "curate"),
    ("curate.check",),
    ("curate.cli", "curate.__main__"),
)

#: Modules over ~1,000 lines, each with the reason it is not split.
LONG_MODULES: dict[str, str] = {
    "curate.schemas.iupac": "one grammar: the tokenizer, the parser with its error positions and"
    " the canonical form walk the same token stream; split, each half would re-derive it",
    "curate.audits.knowledge_editing.contamination": "the MQuAKE-Remastered contamination"
    " procedure is one algorithm over one set of tables (edit set, fact index, per-hop joins)",
}


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _layer(name: str) -> int:
    """The layer of a module: the one whose longest prefix it is under (``curate`` alone is
    the root, not every module)."""
    best, rank = -1, -1
    for i, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix if prefix == "curate" else _under(name, prefix)) and len(
                prefix
            ) > best:
                best, rank = len(prefix), i
    return rank


def _targets(name: str, path: Path) -> list[tuple[str, int]]:
    """The curate modules an import statement runs: the module itself, or for
    ``from package import module`` the submodule too."""
    out = []
    for target, names, line in _imports(path):
        if not _under(target, "curate"):
            continue
        if target in MODULES:
            out.append((target, line))
        out += [(f"{target}.{n}", line) for n in names if f"{target}.{n}" in MODULES]
    return out


def _graph() -> dict[str, set[str]]:
    return {
        name: {t for t, _ in _targets(name, path) if t != name} for name, path in MODULES.items()
    }


def test_modules_found() -> None:
    # the walk must see the layers it checks, or every other test here passes vacuously
    assert "curate.core.dataset" in MODULES
    for prefixes in LAYERS:
        assert any(_under(m, p) for m in MODULES for p in prefixes), prefixes
    assert all(_layer(m) >= 0 for m in MODULES), [m for m in MODULES if _layer(m) < 0]


def test_imports_only_go_down() -> None:
    bad = []
    for name, path in MODULES.items():
        for target, line in _targets(name, path):
            if _layer(target) > _layer(name):
                bad.append(
                    f"{path.relative_to(ROOT.parent)}:{line} imports {target} (a higher layer)"
                )
    assert not bad, "\n".join(bad)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or through others, lazy imports included:
    a cycle hidden in a function still decides what must be loaded before what."""
    assert _cycles(_graph()) == []


def test_cycle_check_would_catch_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_root_shows_the_architecture() -> None:
    """At most ~10 entries of code at ``curate/``'s root: the packages name the layers."""
    entries = [  # modules and packages (a folder left with only __pycache__ is neither)
        p.name
        for p in ROOT.iterdir()
        if not p.name.startswith((".", "__"))
        and (p.suffix == ".py" or (p / "__init__.py").is_file())
    ]
    assert len(entries) <= 11, sorted(entries)
    for pkg in (p for p in ROOT.iterdir() if (p / "__init__.py").is_file()):
        doc = ast.get_docstring(ast.parse((pkg / "__init__.py").read_text()))
        assert doc and "import" in doc, (
            f"{pkg.name}/__init__.py: say what lives here and what it may import"
        )


def test_no_module_over_a_thousand_lines_without_a_reason() -> None:
    long = {
        name: n
        for name, path in MODULES.items()
        if (n := len(path.read_text().splitlines())) > 1_050 and name not in LONG_MODULES
    }
    assert not long, long


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
