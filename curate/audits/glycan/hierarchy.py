"""Taxonomy hierarchy (GL301): a taxon under two parents, and the edit that resolves it.

:func:`hierarchy_edges` and :func:`hierarchy_majority` find the contradictions; each finding
carries the edit to the majority parent, or to the parent the user's ``--mapping`` file (read by
:func:`load_mapping`) names.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import polars as pl

from curate.audits.glycan.labels import cell_edits, columns_of, label_tables, labels_long
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
    "GL301",
    "taxonomy-contradiction",
    category="consistency",
    severity="error",
    fix="always",
    unsafe=True,
)
def taxonomy_contradiction(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A taxon is filed under two parents at adjacent levels (one genus in two families, a
    phylum under two kingdoms).

    A hierarchy where a child has two parents makes the eight taxonomy tasks contradict each
    other. Reported on the minority rows, with the majority parent and every parent's row count.
    Fix (unsafe: it chooses a label): the parent cell is set to the majority parent (ties: the
    first in sort order). ``--mapping FILE`` (JSON ``{"genus": {"Acer": "Sapindaceae"}}``)
    decides instead for the children it names: every row filing such a child under another
    parent is reported and moved to the mapped parent. Levels are resolved together; a change
    at one level can make a contradiction at the next, which the next fix pass resolves.
    """
    mapping = load_mapping(ctx.options.mapping)
    parts = []
    for t in label_tables(data):
        edges = hierarchy_edges(t)
        if edges.is_empty():
            continue
        maj = hierarchy_majority(edges)
        mapped = pl.DataFrame(
            [(level, child, parent) for level, m in mapping.items() for child, parent in m.items()],
            schema={"child_level": pl.String, "child": pl.String, "mapped": pl.String},
            orient="row",
        )
        if maj.is_empty() and mapped.is_empty():
            continue
        hit = edges
        if maj.is_empty():
            hit = hit.with_columns(
                pl.lit(None, pl.String).alias("majority"),
                pl.lit(None, pl.UInt32).alias("majority_rows"),
                pl.lit(None, pl.List(pl.Struct({"parent": pl.String, "len": pl.UInt32}))).alias(
                    "parents"
                ),
            )
        else:
            hit = hit.join(maj.drop("n"), on=["child_level", "parent_level", "child"], how="left")
        hit = (
            hit.join(mapped, on=["child_level", "child"], how="left")
            .with_columns(pl.coalesce("mapped", "majority").alias("target"))
            .filter(pl.col("target").is_not_null() & (pl.col("parent") != pl.col("target")))
            .sort("row", "child_level")
        )
        if hit.is_empty():
            continue
        long = labels_long(t).filter(pl.col("norm").is_not_null())
        changes = hit.select("row", pl.col("parent_level").alias("name"), "parent", "target").join(
            long.select("row", "name", "pos", "norm"),
            left_on=["row", "name", "parent"],
            right_on=["row", "name", "norm"],
        )
        edits = cell_edits(t, changes.rename({"target": "new"}))
        hit = hit.join(
            edits.rename({"name": "parent_level"}),
            on=["row", "parent_level"],
            how="left",
            maintain_order="left",
        )
        names = {n: columns_of(t, n) for n in t.label_names}
        parts.append(
            finding_frame(
                hit,
                field=pl.col("parent_level").replace_strict(names, return_dtype=pl.String),
                message=pl.when(pl.col("mapped").is_null())
                .then(
                    pl.format(
                        "{} {} is under {} {} here but under {} in {} rows",
                        "child_level",
                        repr_expr("child"),
                        "parent_level",
                        repr_expr("parent"),
                        repr_expr("majority"),
                        "majority_rows",
                    )
                )
                .otherwise(
                    pl.format(
                        "{} {} is under {} {} here but --mapping puts it under {}",
                        "child_level",
                        repr_expr("child"),
                        "parent_level",
                        repr_expr("parent"),
                        repr_expr("mapped"),
                    )
                ),
                details=json_struct(
                    pl.col("child_level"),
                    pl.col("child"),
                    pl.col("parent_level"),
                    pl.col("parent"),
                    pl.col("majority"),
                    pl.col("parents"),
                    pl.col("mapped"),
                ),
                fix=pl.col("fix"),
            )
        )
    return concat_outputs(parts)


def load_mapping(path: str | Path | None) -> dict[str, dict[str, str]]:
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
