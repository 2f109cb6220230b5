"""What the refresh scripts of curate's dated copies share: reading a file as a git checkout's
HEAD has it (with that commit and its date), and writing the copy that names them.

Why a copy at all: curate never downloads at run time, and the lists it copies (the Hub's
licences, its task categories) ship in no installed library.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any


def at_head(checkout: Path, path: str) -> tuple[str, str, str]:
    """``(text, commit, date)`` of ``path`` at the HEAD of ``checkout`` (a work tree or a bare
    git directory, as ``fetch`` brings one)."""

    def git(*a: str) -> str:
        where = ["-C", str(checkout)] if (checkout / ".git").exists() else [f"--git-dir={checkout}"]
        return subprocess.run(
            ["git", *where, *a], capture_output=True, text=True, check=True
        ).stdout

    text = git("show", f"HEAD:{path}")
    return text, git("rev-parse", "HEAD").strip(), git("log", "-1", "--format=%cs").strip()


def write(out: Path, source: str, commit: str, date: str, key: str, values: dict[str, Any]) -> None:
    """The copy: ``_source`` (where from and how to refresh), ``commit``, ``date`` and the
    values under ``key``."""
    doc = {"_source": source, "commit": commit, "date": date, key: values}
    out.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", "utf-8")
    print(f"wrote {out}: {len(values)} {key} from {commit[:12]} ({date})")
