"""Refresh ``curate/data/hub_tasks.json`` (the task categories the Hub knows) from
huggingface.js' ``packages/tasks/src/pipelines.ts`` (``PIPELINE_DATA``: the Hub's tasks, the
values of a card's ``task_categories``).

Why a dated copy: neither ``huggingface_hub`` nor ``datasets`` ships the list, and curate never
downloads at run time. Run against a checkout of huggingface.js and commit the result, which
names the commit and date it was copied from.

    python scripts/make_hub_tasks.py PATH/TO/huggingface.js
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dated_copy import at_head, write

OUT = Path(__file__).resolve().parents[1] / "curate" / "data" / "hub_tasks.json"
SRC = "packages/tasks/src/pipelines.ts"
#: A task of ``PIPELINE_DATA``: a key at the object's first level (one tab in), its ``name``.
TASK = re.compile(r'^\t"?(?P<id>[a-z0-9-]+)"?: \{$')
NAME = re.compile(r'^\t\tname: "(?P<name>[^"]+)",$')


def parse(text: str) -> dict[str, str]:
    """Task id → name, in ``PIPELINE_DATA``'s order."""
    start = text.index("export const PIPELINE_DATA = {")
    out: dict[str, str] = {}
    current = None
    for line in text[start:].splitlines()[1:]:
        if line.startswith("}"):
            break
        if m := TASK.match(line):
            current = m["id"]
            out[current] = current
        elif current and (m := NAME.match(line)):
            out[current] = m["name"]
    if len(out) < 30:
        raise SystemExit(f"only {len(out)} tasks found: is this pipelines.ts?")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a git checkout of huggingface.js")
    args = parser.parse_args()

    text, commit, date = at_head(args.checkout, SRC)
    source = (
        f"The Hub's task categories: PIPELINE_DATA in {SRC} of the huggingface/huggingface.js "
        f"repository (commit {commit}, {date}). Neither huggingface_hub nor datasets ships "
        "this list. Refresh with scripts/make_hub_tasks.py."
    )
    write(OUT, source, commit, date, "tasks", parse(text))


if __name__ == "__main__":
    main()
