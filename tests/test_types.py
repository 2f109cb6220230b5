"""The package type-checks: mypy is clean on it, and its public API's types are complete.

Why tests and not a lint step: ``make test`` is what every developer and CI run, so a change that
breaks an annotation (a helper that now returns None, a column that may be missing) fails where
it is made, as any other regression does. The checkers' settings live in pyproject.toml
(``[tool.mypy]``); these tests only run them.

Both checkers are dev dependencies. Without one, a test skips on a developer's machine but fails
under CI (``CI`` set): a missing checker there is a broken install, not a pass.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: The least share of the exported symbols whose types basedpyright knows (issue 35).
MIN_COMPLETENESS = 0.95
#: Symbols listed when the score is too low (the rest are counted).
SHOWN = 40


def _missing(tool: str) -> NoReturn:
    reason = f"{tool} is not installed (a dev dependency: pip install -e '.[dev]')"
    if os.environ.get("CI", "") != "":
        pytest.fail(f"{reason}; CI is set, so this fails instead of skipping", pytrace=False)
    pytest.skip(reason)


def test_mypy_is_clean() -> None:
    """``mypy`` on the package (its files and options from pyproject.toml) finds nothing.

    The cache is mypy's default, ``.mypy_cache`` in the project root, not a per-session folder:
    a run re-checks only the modules that changed since the last one (a few seconds, against
    ~20 s for a cold run of all ~150 modules), and ``make test`` is run over and over.
    """
    if importlib.util.find_spec("mypy") is None:
        _missing("mypy")
    run = subprocess.run(
        [sys.executable, "-m", "mypy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, f"mypy found problems:\n{run.stdout}{run.stderr}"


def _verifytypes() -> dict[str, Any]:
    exe = Path(sys.executable).parent / "basedpyright"
    if not exe.exists():
        _missing("basedpyright")
    # The package is installed editable (setuptools' import hook), which basedpyright cannot
    # follow; with the project root on PYTHONPATH the interpreter it asks for its search paths
    # lists the checkout, so ``curate`` resolves to these sources as an installed package.
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    run = subprocess.run(
        [
            str(exe),
            "--pythonpath",
            sys.executable,
            "--verifytypes",
            "curate",
            "--ignoreexternal",
            "--outputjson",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    # exit 1 only says that some symbol is incomplete; the score decides
    try:
        return json.loads(run.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"basedpyright gave no report (exit {run.returncode}):\n{run.stderr}")


def test_public_api_types_are_complete() -> None:
    """``basedpyright --verifytypes``: at least 95 % of the exported symbols have known types.

    Imported libraries' own gaps are left out (``--ignoreexternal``): only what curate declares
    counts. Private names (a leading underscore) are not exported, so they do not count either.
    """
    report = _verifytypes()
    completeness = report["typeCompleteness"]
    counts = completeness["exportedSymbolCounts"]
    problems = [d["message"] for d in report.get("generalDiagnostics", [])]
    assert sum(counts.values()) > 0, f"basedpyright did not find the package: {problems}"
    score = completeness["completenessScore"]
    if score >= MIN_COMPLETENESS:
        return
    worst = [
        s
        for s in completeness["symbols"]
        if s["isExported"] and not s["isTypeKnown"] and s["category"] != "module"
    ]
    lines = [
        f"{s['name']}: {s['diagnostics'][0]['message'].splitlines()[0]}"
        if s["diagnostics"]
        else s["name"]
        for s in worst[:SHOWN]
    ]
    more = f"\n... and {len(worst) - SHOWN} more" if len(worst) > SHOWN else ""
    pytest.fail(
        f"type completeness {score:.1%} < {MIN_COMPLETENESS:.1%} ({counts}); symbols without "
        "a known type:\n" + "\n".join(lines) + more,
        pytrace=False,
    )
