"""Taxonomy hierarchy (GL301): a taxon under two parents, and the edit that resolves it.

:func:`hierarchy_edges` and :func:`hierarchy_majority` find the contradictions; each finding
carries the edit to the majority parent, or to the parent the user's ``--mapping`` file (read by
:func:`load_mapping`) names. A tie (two parents with the same top count) has no majority: its
findings carry no edit and ask for ``--mapping``.
"""

from __future__ import annotations

import itertools
import json
import warnings
from pathlib import Path

import polars as pl

from curate.audits.glycan.labels import (
    cell_edits,
    code_names,
    columns_of,
    label_tables,
    labels_long,
)
from curate.audits.glycan.registry import RULES
from curate.core.errors import CurateWarning, InputError, arg
from curate.core.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
    repr_expr,
)
from curate.core.rules import AuditContext
from curate.schemas.glycan import LEVELS
from curate.schemas.glycan_tables import (
    GlycanData,
    GlycanTable,
)

# --------------------------------------------------------------------------- GL3xx consistency


def hierarchy_edges(t: GlycanTable, long: pl.DataFrame | None = None) -> pl.DataFrame:
    """(row, child level, child, parent level, parent) for adjacent taxonomy levels, the taxa as
    codes (:func:`~curate.audits.glycan.labels.label_values`).

    Only rows with exactly one (normalised) value at both levels say which parent a child has;
    list-valued rows (several species of one glycan) do not pair their values. Each level's
    classes are scattered into a column aligned with the table's rows, so a pair of levels is
    two columns side by side: no join, linear in the rows.
    """
    if t.task != "taxonomy":
        return pl.DataFrame()
    long = labels_long(t) if long is None else long
    single = single_values(long)
    index = {n: i for i, n in enumerate(t.label_names)}
    levels = [n for n in LEVELS if n in index]
    n, offset = t.rows.height, int(t.rows["row"][0]) if t.rows.height else 0
    wide: dict[str, pl.Series] = {}
    for name in levels:
        at = single.filter(pl.col("lv") == index[name])
        wide[name] = pl.Series(name, [None] * n, dtype=pl.UInt32).scatter(
            at["row"] - offset, at["code"]
        )
    frame = pl.DataFrame({"row": t.rows["row"], **wide})
    edges = [
        frame.select(
            "row",
            pl.col(child).alias("child"),
            pl.col(parent).alias("parent"),
            pl.lit(child).alias("child_level"),
            pl.lit(parent).alias("parent_level"),
        ).drop_nulls(["child", "parent"])
        for child, parent in itertools.pairwise(levels)
    ]
    return pl.concat(edges) if edges else pl.DataFrame()


def single_values(long: pl.DataFrame) -> pl.DataFrame:
    """(row, lv, code) of the label cells holding exactly one class.

    :func:`~curate.audits.glycan.labels.labels_long` is ordered by level, then row, then
    position, so a cell's values are adjacent: a value whose neighbours belong to other cells
    is its cell's only value (almost every cell), found by comparing shifted columns; only the
    few list-valued cells are grouped, for their distinct values.
    """
    long = long.filter(pl.col("code").is_not_null())
    row, lv = pl.col("row"), pl.col("lv")
    starts = ((row != row.shift()) | (lv != lv.shift())).fill_null(True)
    ends = ((row != row.shift(-1)) | (lv != lv.shift(-1))).fill_null(True)
    long = long.with_columns((starts & ends).alias("alone"))
    many = (
        long.filter(~pl.col("alone"))
        .group_by("row", "lv")
        .agg(pl.col("code").n_unique().alias("n"), pl.col("code").first())
        .filter(pl.col("n") == 1)
    )
    return pl.concat(
        [long.filter("alone").select("row", "lv", "code"), many.select("row", "lv", "code")]
    )


def hierarchy_majority(edges: pl.DataFrame) -> pl.DataFrame:
    """Per (child level, child) with more than one parent: every parent's row count, the
    majority parent, and ``tied`` (the parents sharing the top count when more than one do; the
    majority is then null: a tie is no majority)."""
    if edges.is_empty():
        return edges
    # A code names its level too, so (child, parent) packed into one integer is the edge:
    # count those, keep the children with more than one parent (few), and only for those
    # look at the parents' counts.
    shift = 2**32
    counts = (
        edges.select(
            (pl.col("child").cast(pl.UInt64) * shift + pl.col("parent").cast(pl.UInt64)).alias("k")
        )
        .group_by("k")
        .len()
        .select(
            (pl.col("k") // shift).cast(pl.UInt32).alias("child"),
            (pl.col("k") % shift).cast(pl.UInt32).alias("parent"),
            "len",
        )
    )
    contested = counts.group_by("child").len("n").filter(pl.col("n") > 1)
    levels = edges.join(contested, on="child", how="semi").unique("child")
    counts = counts.join(contested, on="child", how="semi").join(
        levels.select("child", "child_level", "parent_level"), on="child"
    )
    return (
        counts.sort(
            ["child_level", "child", "len", "parent"], descending=[False, False, True, False]
        )
        .group_by("child_level", "parent_level", "child", maintain_order=True)
        .agg(
            pl.col("parent").first().alias("top"),
            pl.col("len").first().alias("majority_rows"),
            (pl.col("len") == pl.col("len").first()).sum().alias("n_top"),
            pl.col("parent").filter(pl.col("len") == pl.col("len").first()).alias("tied"),
            pl.struct("parent", "len").alias("parents"),
            pl.len().alias("n"),
        )
        .with_columns(
            pl.when(pl.col("n_top") == 1).then(pl.col("top")).alias("majority"),
            pl.when(pl.col("n_top") > 1).then(pl.col("tied")).alias("tied"),
        )
        .drop("top", "n_top")
    )


@RULES.rule(
    "GL301",
    "taxonomy-contradiction",
    category="consistency",
    severity="error",
    fix="sometimes",
    unsafe=True,
)
def taxonomy_contradiction(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A taxon is filed under two parents at adjacent levels (one genus in two families, a
    phylum under two kingdoms).

    A hierarchy where a child has two parents makes the eight taxonomy tasks contradict each
    other. Reported on the minority rows, with the majority parent and every parent's row count.
    When two or more parents share the top count there is no majority: every row of the child
    is reported as a tie, with no edit. Fix (unsafe: it chooses a label): the parent cell is set
    to the majority parent. ``--mapping FILE`` (JSON ``{"genus": {"Acer": "Sapindaceae"}}``)
    decides instead for the children it names, ties included: every row filing such a child
    under another parent is reported and moved to the mapped parent. Levels are resolved
    together; a change at one level can make a contradiction at the next, which the next fix
    pass resolves.
    """
    mapping = load_mapping(ctx.options.mapping)
    parts = []
    named: set[tuple[str, str]] = set()  # the mapped children some row files
    for t in label_tables(data):
        edges = hierarchy_edges(t)
        if edges.is_empty():
            continue
        maj = hierarchy_majority(edges)
        mapped = pl.DataFrame(
            [(level, child, parent) for level, m in mapping.items() for child, parent in m.items()],
            schema={"child_level": pl.String, "child_name": pl.String, "mapped": pl.String},
            orient="row",
        )
        if maj.is_empty() and mapped.is_empty():
            continue
        # codes → names, for the contradictions and the mapped children only
        names_of = code_names(t).select("code", "norm")
        if mapped.is_empty():
            # only the contested children's rows: a small part of the edges
            hit = edges.filter(pl.col("child").is_in(maj["child"].implode())).with_columns(
                pl.lit(None, pl.String).alias("mapped")
            )
        else:
            hit = edges.join(
                names_of.rename({"code": "child", "norm": "child_name"}), on="child", how="left"
            ).join(mapped, on=["child_level", "child_name"], how="left")
            named |= set(
                hit.filter(pl.col("mapped").is_not_null())
                .select("child_level", "child_name")
                .unique()
                .iter_rows()
            )
        hit = hit.join(maj.drop("n"), on=["child_level", "parent_level", "child"], how="left")
        hit = hit.filter(
            pl.col("mapped").is_not_null()
            | pl.col("tied").is_not_null()
            | (pl.col("majority").is_not_null() & (pl.col("parent") != pl.col("majority")))
        )
        if hit.is_empty():
            continue
        decode = {
            c: pl.col(c).replace_strict(
                names_of["code"], names_of["norm"], default=None, return_dtype=pl.String
            )
            for c in ("child", "parent", "majority")
        }
        hit = (
            hit.drop("child_name", strict=False)
            .with_columns(
                pl.col("parent").alias("parent_code"),
                pl.col("parents").list.eval(
                    pl.struct(
                        pl.element()
                        .struct.field("parent")
                        .replace_strict(names_of["code"], names_of["norm"], return_dtype=pl.String),
                        pl.element().struct.field("len"),
                    )
                ),
                pl.col("tied").list.eval(
                    pl.element().replace_strict(
                        names_of["code"], names_of["norm"], return_dtype=pl.String
                    )
                ),
                **decode,
            )
            .filter(pl.col("mapped").is_null() | (pl.col("parent") != pl.col("mapped")))
            .with_columns(
                pl.coalesce("mapped", "majority").alias("target"),
            )
            .join(t.rows.select("row", "record"), on="row", how="left")
            .sort("row", "child_level")
        )
        if hit.is_empty():
            continue
        index = {n: i for i, n in enumerate(t.label_names)}
        changes = (
            hit.filter(pl.col("target").is_not_null())
            .select(
                "row",
                pl.col("parent_level").alias("name"),
                pl.col("parent_level").replace_strict(index, return_dtype=pl.UInt8).alias("lv"),
                pl.col("parent_code").alias("code"),
                "target",
            )
            .join(labels_long(t).select("row", "lv", "pos", "code"), on=["row", "lv", "code"])
        )
        edits = cell_edits(t, changes.rename({"target": "new"}))
        hit = hit.join(
            edits.rename({"name": "parent_level"}),
            on=["row", "parent_level"],
            how="left",
            maintain_order="left",
        )
        names = {n: columns_of(t, n) for n in t.label_names}
        here = pl.format(
            "{} {} is under {} {} here",
            "child_level",
            repr_expr("child"),
            "parent_level",
            repr_expr("parent"),
        )
        parts.append(
            finding_frame(
                hit,
                field=pl.col("parent_level").replace_strict(names, return_dtype=pl.String),
                message=pl.when(pl.col("mapped").is_not_null())
                .then(pl.format("{} but --mapping puts it under {}", here, repr_expr("mapped")))
                .when(pl.col("tied").is_not_null())
                .then(
                    pl.format(
                        "{}; no majority: {} parents tie at {} {} each ({}); "
                        "pass --mapping to choose",
                        here,
                        pl.col("tied").list.len(),
                        "majority_rows",
                        pl.when(pl.col("majority_rows") == 1)
                        .then(pl.lit("row"))
                        .otherwise(pl.lit("rows")),
                        pl.col("tied")
                        .list.eval(pl.lit("'") + pl.element() + pl.lit("'"))
                        .list.join(", "),
                    )
                )
                .otherwise(
                    pl.format(
                        "{} but under {} in {} rows",
                        here,
                        repr_expr("majority"),
                        "majority_rows",
                    )
                ),
                details=json_struct(
                    pl.col("child_level"),
                    pl.col("child"),
                    pl.col("parent_level"),
                    pl.col("parent"),
                    pl.col("majority"),
                    pl.col("tied"),
                    pl.col("parents"),
                    pl.col("mapped"),
                ),
                fix=pl.col("fix"),
            )
        )
    _unmatched_mapping(mapping, named)
    return concat_outputs(parts)


def _unmatched_mapping(mapping: dict[str, dict[str, str]], named: set[tuple[str, str]]) -> None:
    """Warn of each ``--mapping`` child no row files (a typo, ``Lamialez``): it decided
    nothing, and the contradiction it was meant to settle stays (found by a new-user review)."""
    missing = [
        f"{level} {child!r}"
        for level, m in mapping.items()
        for child in m
        if (level, child) not in named
    ]
    if missing:
        warnings.warn(
            f"{arg('--mapping')}: no row has the "
            + ", ".join(missing[:8])
            + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
            + " it names",
            CurateWarning,
            stacklevel=2,
        )


@RULES.prepare
def check_mapping(ctx: AuditContext) -> None:
    """A ``--mapping`` file is read and checked before any rule runs (exit 2 on a defect),
    whichever rules are selected."""
    load_mapping(ctx.options.mapping)


def load_mapping(path: str | Path | None) -> dict[str, dict[str, str]]:
    """``--mapping FILE``: ``{"<child level>": {"<child>": "<parent>"}}``, checked entry by entry.

    Every defect is an exit-2 line naming the file and the offending key: a parent that is not a
    string would otherwise be written into a label column, and a misspelt level would be
    silently ignored.
    """
    if not path:
        return {}
    shape = 'expected {"<level>": {"<child>": "<parent>"}}'
    mapping = arg("--mapping")  # the caller's word for the option: --mapping, or mapping
    try:
        m = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"{mapping}: cannot read ({e.strerror or e})", path=path) from None
    except UnicodeDecodeError as e:
        raise InputError(f"{mapping}: not UTF-8 text ({e.reason})", path=path) from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"{mapping}: invalid JSON ({e.msg})", path=path, position=f"{e.lineno}:{e.colno}"
        ) from None
    if not isinstance(m, dict):
        raise InputError(f"{mapping}: top level is {type(m).__name__}; {shape}", path=path)
    levels = LEVELS[:-1]  # a child level: the top level (domain) has no parent to set
    out: dict[str, dict[str, str]] = {}
    for level, children in m.items():
        if level.lower() not in levels:
            raise InputError(
                f"{mapping}: {level!r} is not a child taxonomy level ({', '.join(levels)})",
                path=path,
                field=level,
            )
        if not isinstance(children, dict):
            raise InputError(
                f"{mapping}: {type(children).__name__} under {level!r}; {shape}",
                path=path,
                field=level,
            )
        for child, parent in children.items():
            if not isinstance(parent, str) or not parent.strip():
                raise InputError(
                    f"{mapping}: the parent of {child!r} must be a non-empty taxon name, got "
                    f"{json.dumps(parent)}",
                    path=path,
                    field=f"{level}.{child}",
                )
        out.setdefault(level.lower(), {}).update(children)
    return out
