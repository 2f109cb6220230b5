"""Render bench/RESULTS.md from bench/results/*.json: the page is generated, never edited.

Why: a hand-kept page drifts from what the scripts measured (a figure is updated, its date or
machine state is not; a row is re-measured on a busy machine and still reads "quiet"). Here each
row is a JSON file written by the script that measured it (``--record``, see ``bench/record.py``)
or, for figures from before the scripts could record, copied once from the log and marked so in
its ``source``. The prose around the tables (the machine, the section introductions, the notes)
is the static template ``bench/results/TEMPLATE.md``; its ``{{peer}}``, ``{{ray}}`` and
``{{target}}`` lines are replaced by the tables of those sections, rows in the order of
:data:`ORDER` (a row whose id is not listed goes after the listed id it extends, e.g.
``deepfake-duplicates-1000000`` after ``deepfake-duplicates``, or last in its section).

Run: ``make results`` (or ``python bench/make_results.py [--out PATH]``). Exit 2 if a row file is
unreadable or lacks a required field (one line per problem, naming the file and the field).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from record import RESULTS, SECTIONS, problems

PAGE = RESULTS.parent / "RESULTS.md"
TEMPLATE = RESULTS / "TEMPLATE.md"
COMMAND = "make results"
#: Page order of the rows (ids = file names); ids are grouped into sections by their own field.
ORDER = (
    "ke-contamination",
    "ke-load",
    "export",
    "iupac-canonical-key",
    "icrl-audit",
    "icrl-scan",
    "deepfake-duplicates",
    "table-exact-checks",
    "label-issues-pred-probs",
    "label-issues-built-in",
    "diff-mquake",
    "cdc-reuse",
    "startup",
    "media-hashing",
    "overlap-near-duplicates",
    "table-near",
    "overlap-jaccard-matrix",
    "ray-xland-512",
    "ray-xland-256",
    "ray-xland-64",
    "ray-mquake-jsonl",
    "ray-mquake-parquet",
    "glycan-scaling",
    "glycan-tables",
    "label-issues-glycan",
    "label-issues-table-glycowork",
    "ke-1m-end-to-end",
    "ke-memory-100k",
    "iupac-long-glycans",
    "media-metadata",
)
HEADERS = {
    "peer": (
        "benchmark",
        "workload",
        "peer",
        "ratio (curate vs peer)",
        "peak RSS curate / peer",
        "measured",
        "reproduce",
    ),
    "ray": (
        "workload",
        "local, 2 cores",
        "Ray, 2 nodes",
        "Ray over local",
        "peak RSS local / Ray (driver + cluster)",
        "measured",
        "reproduce",
    ),
    "target": ("benchmark", "workload", "figure", "target", "peak RSS", "measured", "reproduce"),
}
ALIGN = {"ray": ("---", "---:", "---:", "---:", "---", "---", "---")}


class RowError(Exception):
    """A row file that cannot be rendered (the message names the file and the field)."""


def load_rows(folder: Path) -> list[dict[str, Any]]:
    """Every ``*.json`` of ``folder``, checked; raises :class:`RowError` listing all problems."""
    rows, errors = [], []
    for path in sorted(folder.glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            errors.append(f"{path}: unreadable JSON ({error})")
            continue
        found = problems(doc)
        if doc.get("id") != path.stem:
            found.append(f"{doc.get('id')}: id differs from the file name {path.stem!r}")
        errors += [f"{path}: {p}" for p in found]
        rows.append(doc)
    if errors:
        raise RowError("\n".join(errors))
    return rows


def sort_key(row_id: str) -> tuple[int, str]:
    """Position in :data:`ORDER`, by the longest listed id that ``row_id`` equals or extends."""
    best = (len(ORDER), row_id)
    best_len = -1
    for at, known in enumerate(ORDER):
        if (row_id == known or row_id.startswith(known + "-")) and len(known) > best_len:
            best, best_len = (at, row_id), len(known)
    return best


def cell(text: object) -> str:
    """A table cell: ``|`` escaped, newlines folded (a cell is one line)."""
    return " ".join(str(text).split("\n")).replace("|", "\\|")


def measured(row: dict[str, Any]) -> str:
    """When and on which machine state, and whether the script measured it or it was copied."""
    m = row["measured"]
    copied = row["source"].startswith("recorded ")
    if copied:
        text = f"{m['utc']}, {m['state']}"
        if m.get("note"):
            text += f" ({m['note']})"
        return f"{text}; copied from the log"
    text = f"{m['utc']} UTC, {m['state']} (1-min load {m['load_before']:g} → {m['load_after']:g})"
    if m.get("note"):
        text += f", {m['note']}"
    return f"{text}; **re-measured** by the script at {row['commit']}"


def reproduce(row: dict[str, Any]) -> str:
    text = f"`{row['command']}`"
    return f"{text} ({row['command_note']})" if row.get("command_note") else text


def rss(first: str | None, second: str | None) -> str:
    if first is None and second is None:
        return "not recorded"
    return f"{first or 'not recorded'} / {second or 'not recorded'}"


def cells(row: dict[str, Any]) -> tuple[str, ...]:
    section = row["section"]
    if section == "peer":
        middle = (
            row["benchmark"],
            row["workload"],
            row["peer"],
            row["ratio"],
            rss(row["rss_curate"], row["rss_peer"]),
        )
    elif section == "ray":
        middle = (
            row["workload"],
            row["peer_figure"],
            row["curate_figure"],
            row["ratio"],
            rss(row["rss_peer"], row["rss_curate"]),
        )
    else:
        middle = (
            row["benchmark"],
            row["workload"],
            row["curate_figure"],
            row["target"],
            row["rss_curate"] or "not recorded",
        )
    return (*middle, measured(row), reproduce(row))


def table(section: str, rows: list[dict[str, Any]]) -> str:
    mine = sorted((r for r in rows if r["section"] == section), key=lambda r: sort_key(r["id"]))
    head = HEADERS[section]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join(ALIGN.get(section, ("---",) * len(head))) + "|",
    ]
    lines += ["| " + " | ".join(cell(c) for c in cells(r)) + " |" for r in mine]
    return "\n".join(lines)


def render(folder: Path = RESULTS, template: Path | None = None) -> str:
    """The page from the row files of ``folder`` and the template (default: the folder's)."""
    rows = load_rows(folder)
    text = (template or folder / "TEMPLATE.md").read_text(encoding="utf-8")
    for section in SECTIONS:
        mark = "{{" + section + "}}"
        if text.count(mark) != 1:
            raise RowError(f"{template or folder / 'TEMPLATE.md'}: needs one {mark} line")
        text = text.replace(mark, table(section, rows))
    copied = sum(r["source"].startswith("recorded ") for r in rows)
    banner = (
        f"<!-- Generated by `{COMMAND}` (python bench/make_results.py) from bench/results/*.json "
        "and bench/results/TEMPLATE.md. Do not edit: edit those and re-run. -->\n"
    )
    summary = (
        f"{len(rows)} rows: {len(rows) - copied} re-measured by their script with `--record`, "
        f"{copied} copied from the log."
    )
    return banner + text.replace("{{summary}}", summary)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, default=RESULTS, help="folder of the row files")
    ap.add_argument("--out", type=Path, default=PAGE, help=f"the page (default {PAGE})")
    args = ap.parse_args(argv)
    try:
        page = render(args.results)
    except RowError as error:
        print(error, file=sys.stderr)
        return 2
    except OSError as error:  # the template missing or unreadable
        print(f"{error.filename}: {error.strerror}", file=sys.stderr)
        return 2
    args.out.write_text(page, encoding="utf-8")
    print(f"wrote {args.out} ({page.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
