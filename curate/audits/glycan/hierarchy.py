"""Taxonomy hierarchy (GL301): a taxon under two parents, and how ``fix`` resolves it.

:func:`hierarchy_edges` and :func:`hierarchy_majority` find the contradictions; the fixes use
:func:`resolve_hierarchy` (majority parent, level by level, or the user's ``--mapping`` file read
by :func:`load_mapping`) to make the hierarchy a tree again.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import polars as pl

from curate.audits.glycan.labels import columns_of, label_tables, labels_long
from curate.audits.glycan.registry import RULES
from curate.errors import InputError
from curate.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
    repr_expr,
)
from curate.rules import AuditContext
from curate.schemas.glycan import LEVELS
from curate.schemas.glycan_tables import (
    GlycanData,
    GlycanTable,
)

# --------------------------------------------------------------------------- GL3xx consistency


def hierarchy_edges(t: GlycanTable, long: pl.DataFrame | None = None) -> pl.DataFrame:
    """(row, child level, child, parent level, parent) for adjacent taxonomy levels.

    Only rows with exactly one (normalised) value at both levels say which parent a child has;
    list-valued rows (several species of one glycan) do not pair their values.
    """
    if t.task != "taxonomy":
        return pl.DataFrame()
    long = labels_long(t) if long is None else long
    single = (
        long.filter(pl.col("norm").is_not_null())
        .group_by("row", "record", "name")
        .agg(pl.col("norm").unique().alias("v"))
        .filter(pl.col("v").list.len() == 1)
        .with_columns(pl.col("v").list.first())
    )
    levels = [n for n in LEVELS if n in t.label_names]
    edges = []
    for child, parent in itertools.pairwise(levels):
        c = single.filter(pl.col("name") == child).select(
            "row", "record", pl.col("v").alias("child")
        )
        p = single.filter(pl.col("name") == parent).select("row", pl.col("v").alias("parent"))
        edges.append(
            c.join(p, on="row").with_columns(
                pl.lit(child).alias("child_level"), pl.lit(parent).alias("parent_level")
            )
        )
    return pl.concat(edges) if edges else pl.DataFrame()


def hierarchy_majority(edges: pl.DataFrame) -> pl.DataFrame:
    """Per (child level, child) with more than one parent: every parent's count and the majority."""
    if edges.is_empty():
        return edges
    counts = edges.group_by("child_level", "parent_level", "child", "parent").len()
    return (
        counts.sort(
            ["child_level", "child", "len", "parent"], descending=[False, False, True, False]
        )
        .group_by("child_level", "parent_level", "child", maintain_order=True)
        .agg(
            pl.col("parent").first().alias("majority"),
            pl.col("len").first().alias("majority_rows"),
            pl.struct("parent", "len").alias("parents"),
            pl.col("parent").n_unique().alias("n"),
        )
        .filter(pl.col("n") > 1)
    )


@RULES.rule(
    "GL301", "taxonomy-contradiction", category="consistency", severity="error", fix="always"
)
def taxonomy_contradiction(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A taxon is filed under two parents at adjacent levels (one genus in two families, a
    phylum under two kingdoms).

    A hierarchy where a child has two parents makes the eight taxonomy tasks contradict each
    other. Reported on the minority rows, with the majority parent and every parent's row count;
    the fix moves them to the majority parent (override with ``--mapping FILE``, JSON
    ``{"genus": {"Acer": "Sapindaceae"}}``).
    """
    parts = []
    for t in label_tables(data):
        edges = hierarchy_edges(t)
        maj = hierarchy_majority(edges)
        if maj.is_empty():
            continue
        hit = edges.join(maj, on=["child_level", "parent_level", "child"]).filter(
            pl.col("parent") != pl.col("majority")
        )
        names = {n: columns_of(t, n) for n in t.label_names}
        parts.append(
            finding_frame(
                hit.sort("row", "child_level"),
                field=pl.col("parent_level").replace_strict(names, return_dtype=pl.String),
                message=pl.format(
                    "{} {} is under {} {} here but under {} in {} rows",
                    "child_level",
                    repr_expr("child"),
                    "parent_level",
                    repr_expr("parent"),
                    repr_expr("majority"),
                    "majority_rows",
                ),
                details=json_struct(
                    pl.col("child_level"),
                    pl.col("child"),
                    pl.col("parent_level"),
                    pl.col("parent"),
                    pl.col("majority"),
                    pl.col("parents"),
                ),
                fix=json_struct(
                    pl.lit("set").alias("op"),
                    pl.col("parent").alias("old"),
                    pl.col("majority").alias("new"),
                ),
            )
        )
    return concat_outputs(parts)


def resolve_hierarchy(
    t: GlycanTable, long: pl.DataFrame, mapping: dict[str, dict[str, str]]
) -> dict[tuple[int, str], tuple[str, str]]:
    """Parent corrections ``(row, parent level) → (old, new)`` that make the hierarchy a tree.

    Works bottom-up (species→genus first): a correction at one level changes the children of the
    next, so each level's majorities are counted on the already-corrected values. Only rows with
    one value per level take part (as in GL301).
    """
    if t.task != "taxonomy":
        return {}
    levels = [n for n in LEVELS if n in t.label_names]
    single = (
        long.filter(pl.col("norm").is_not_null())
        .group_by("row", "name")
        .agg(pl.col("norm").unique().alias("v"))
        .filter(pl.col("v").list.len() == 1)
        .with_columns(pl.col("v").list.first())
    )
    values: dict[int, dict[str, str]] = {}
    for row, name, v in single.iter_rows():
        values.setdefault(row, {})[name] = v
    fixes: dict[tuple[int, str], tuple[str, str]] = {}
    for child, parent in itertools.pairwise(levels):
        counts: dict[str, dict[str, int]] = {}
        for vals in values.values():
            if child in vals and parent in vals:
                per = counts.setdefault(vals[child], {})
                per[vals[parent]] = per.get(vals[parent], 0) + 1
        target = {c: min(ps, key=lambda p: (-ps[p], p)) for c, ps in counts.items() if len(ps) > 1}
        target.update(mapping.get(child, {}))
        for row, vals in values.items():
            want = target.get(vals.get(child, "\x00"))
            if want is not None and parent in vals and vals[parent] != want:
                first = fixes.get((row, parent), (vals[parent], want))[0]
                fixes[(row, parent)] = (first, want)
                vals[parent] = want
    return fixes


def load_mapping(path: str | None) -> dict[str, dict[str, str]]:
    """``--mapping FILE``: ``{"<child level>": {"<child>": "<parent>"}}``, checked entry by entry.

    Every defect is an exit-2 line naming the file and the offending key: a parent that is not a
    string would otherwise be written into a label column, and a misspelt level would be
    silently ignored.
    """
    if not path:
        return {}
    shape = 'expected {"<level>": {"<child>": "<parent>"}}'
    try:
        m = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"--mapping: cannot read ({e.strerror or e})", path=path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"--mapping: not UTF-8 text ({e.reason})", path=path) from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"--mapping: invalid JSON ({e.msg})", path=path, position=f"{e.lineno}:{e.colno}"
        ) from None
    if not isinstance(m, dict):
        raise InputError(f"--mapping: top level is {type(m).__name__}; {shape}", path=path)
    levels = LEVELS[:-1]  # a child level: the top level (domain) has no parent to set
    out: dict[str, dict[str, str]] = {}
    for level, children in m.items():
        if level.lower() not in levels:
            raise InputError(
                f"--mapping: {level!r} is not a child taxonomy level ({', '.join(levels)})",
                path=path,
                field=level,
            )
        if not isinstance(children, dict):
            raise InputError(
                f"--mapping: {type(children).__name__} under {level!r}; {shape}",
                path=path,
                field=level,
            )
        for child, parent in children.items():
            if not isinstance(parent, str) or not parent.strip():
                raise InputError(
                    f"--mapping: the parent of {child!r} must be a non-empty taxon name, got "
                    f"{json.dumps(parent)}",
                    path=path,
                    field=f"{level}.{child}",
                )
        out.setdefault(level.lower(), {}).update(children)
    return out
