"""Glycan rules: parseability, label hygiene, taxonomy hierarchy, conflicts, duplicates, leakage.

All rules read the normalised frames of :mod:`curate.families.glycan` and work on canonical keys
(:func:`curate.schemas.iupac.canonical_key`), so two spellings of one glycan are one glycan.
Codes: ``GL0xx`` schema, ``GL1xx`` sequences, ``GL2xx`` label values, ``GL3xx`` label consistency
and duplicates, ``GL4xx`` leakage, ``GL5xx`` class distribution, ``GL6xx`` interaction matrices.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import polars as pl

from curate.dataset import ChangeEntry, FixResult
from curate.errors import InputError
from curate.families.glycan import (
    FAMILY,
    ID_COLUMNS,
    SPLIT_FROM_LAYOUT,
    GlycanData,
    GlycanTable,
    _single_table,
    _split_tables,
    invalid_rows_and_columns,
    regroup_split,
)
from curate.findings import (
    Report,
    concat_outputs,
    dumps,
    finding_frame,
    json_struct,
    later_occurrences,
    repr_expr,
)
from curate.rules import AuditContext, RuleSet
from curate.schemas.glycan import LEVELS, PLACEHOLDERS, GlycanOptions, parse_list_cell

RULES = RuleSet("glycan")
MAX_LISTED = 20
SINGLE_LABEL = ("immunogenicity", "glycosylation")


def _label_tables(data: GlycanData) -> list[GlycanTable]:
    return [t for t in data.tables if t.task != "interaction"]


# --------------------------------------------------------------------------- label forms


def labels_long(t: GlycanTable) -> pl.DataFrame:
    """Cached :func:`_labels_long` (several rules and the fixes read it)."""
    if "labels_long" not in t.cache:
        t.cache["labels_long"] = _labels_long(t)
    return t.cache["labels_long"]


def _labels_long(t: GlycanTable) -> pl.DataFrame:
    """One row per label value: ``value`` as written, ``clean`` stripped, ``norm`` the value the
    fixes would write (stripped, majority spelling among case variants; null for placeholders).
    """
    cols = [f"lab_{n}" for n in t.label_names]
    long = (
        t.rows.filter(pl.col("valid"))
        .select("row", "record", "split", "key", *cols)
        .unpivot(
            index=["row", "record", "split", "key"],
            on=cols,
            variable_name="name",
            value_name="values",
        )
        .with_columns(pl.col("name").str.strip_prefix("lab_"))
        .with_columns(pl.int_ranges(pl.col("values").list.len()).alias("pos"))
        .explode(["values", "pos"])
        .rename({"values": "value"})
        .filter(pl.col("value").is_not_null())
        .with_columns(pl.col("value").str.strip_chars().alias("clean"))
        .with_columns(
            pl.col("clean").str.to_lowercase().is_in(list(PLACEHOLDERS)).alias("placeholder")
        )
    )
    spellings = (
        long.filter(~pl.col("placeholder"))
        .group_by("name", pl.col("clean").str.to_lowercase().alias("fold"), "clean")
        .len()
        .sort(["name", "fold", "len", "clean"], descending=[False, False, True, False])
        .group_by("name", "fold", maintain_order=True)
        .agg(
            pl.col("clean").first().alias("majority"),
            pl.col("clean").n_unique().alias("n_spellings"),
            pl.struct("clean", "len").alias("spellings"),
        )
    )
    return (
        long.with_columns(pl.col("clean").str.to_lowercase().alias("fold"))
        .join(spellings, on=["name", "fold"], how="left")
        .with_columns(
            pl.when(pl.col("placeholder"))
            .then(pl.lit(None, pl.String))
            .otherwise(pl.col("majority"))
            .alias("norm")
        )
    )


def _task_labels(t: GlycanTable) -> pl.DataFrame:
    """Per row: its label as one comparable string (sorted normalised values per level)."""
    if "task_labels" in t.cache:
        return t.cache["task_labels"]
    long = labels_long(t)
    per = (
        long.filter(pl.col("norm").is_not_null())
        .group_by("row", "name")
        .agg(pl.col("norm").unique().sort().str.join("|").alias("v"))
    )
    order = {n: i for i, n in enumerate(t.label_names)}
    lab = (
        per.with_columns(pl.col("name").replace_strict(order, return_dtype=pl.Int32).alias("o"))
        .sort("row", "o")
        .group_by("row", maintain_order=True)
        .agg(pl.format("{}={}", "name", "v").str.join("; ").alias("label"))
    )
    out = (
        t.rows.filter(pl.col("in_task"))
        .select("row", "record", "split", "key", "glycan")
        .join(lab, on="row", how="inner")
    )
    t.cache["task_labels"] = out
    return out


def _columns_of(t: GlycanTable, name: str) -> str:
    return t.columns.labels.get(name, name)


# --------------------------------------------------------------------------- GL0xx / GL1xx


@RULES.rule("GL001", "schema-invalid", category="schema", severity="error")
def schema_invalid(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A row does not fit its task's schema: missing glycan, a label outside the task's classes
    (immunogenicity 0/1, glycosylation N/O/free), an unknown split name, a non-numeric
    interaction value, or a list or object where a glycan, label, split or number belongs.

    Such rows are left out of the label rules, and ``fix``/``export`` never publish them (they are
    dropped and counted; ``fix`` logs each one whole; ``--strict`` refuses instead).
    """
    return data.schema_findings


def _parse_findings(data: GlycanData, kind: str) -> pl.DataFrame:
    parts = []
    for t in data.tables:
        if t.task == "interaction":
            assert t.cells is not None
            bad = t.cells.filter(pl.col("error_kind") == kind).unique("column", keep="first")
            bad = bad.with_columns(
                pl.lit(None, pl.Int64).alias("row"),
                pl.format("column {}", repr_expr("column", limit=None)).alias("record"),
            )
            parts.append(
                finding_frame(
                    bad,
                    field=pl.col("column"),
                    message=pl.format("glycan column header: {} (at {})", "error", "error_pos"),
                    details=json_struct(
                        pl.col("column").alias("glycan"),
                        pl.col("error_pos").alias("position"),
                        pl.lit(t.path).alias("file"),
                    ),
                )
            )
            continue
        # Every row, labelled or not: an unlabelled row with a broken glycan (a line cut short)
        # is still a malformed record that export would otherwise publish.
        bad = t.rows.filter(pl.col("error_kind") == kind).with_columns(
            _shortened("glycan", 120).alias("shown"), _shortened("glycan", 2000).alias("glycan")
        )
        parts.append(
            finding_frame(
                bad,
                field=pl.lit(t.columns.glycan),
                message=pl.format("{} in {}", "error", repr_expr("shown")),
                details=json_struct(
                    pl.col("glycan"),
                    pl.col("error_pos").alias("position"),
                    pl.col("error").alias("problem"),
                    pl.lit(t.path).alias("file"),
                ),
            )
        )
    return concat_outputs(parts)


def _shortened(col: str, limit: int) -> pl.Expr:
    """A long string cut to ``limit`` characters plus "…" (a 1 MB cell must not flood reports)."""
    c = pl.col(col)
    return pl.when(c.str.len_chars() > limit).then(c.str.slice(0, limit) + "…").otherwise(c)


@RULES.rule("GL101", "unparseable-glycan", category="schema", severity="error")
def unparseable_glycan(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """The glycan is not well-formed IUPAC-condensed: unbalanced brackets, a missing or malformed
    linkage, stray characters. The message gives the 0-based character position and what was
    expected there. A model fed such a string learns from noise, and no duplicate or leakage
    check can recognise it. Every row is parsed, labelled or not, and strings over 100,000
    characters are rejected as too long. ``fix``/``export`` never publish such rows.
    """
    return _parse_findings(data, "syntax")


@RULES.rule("GL102", "unknown-residue", category="schema", severity="error")
def unknown_residue(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """The glycan uses a monosaccharide, modification or linkage token outside the vocabulary
    (``curate/data/glycan_vocab.json``, built from GlycanML's 127 residue and 84 linkage tokens
    and the real glycowork tables). Tokenisers map it to an unknown token, so the model never sees
    what the string says. ``fix``/``export`` never publish such rows.
    """
    return _parse_findings(data, "unknown")


# --------------------------------------------------------------------------- GL2xx label values


def _label_value_findings(
    data: GlycanData, hits: pl.Expr, message: pl.Expr, details: pl.Expr, new: pl.Expr
) -> pl.DataFrame:
    """Findings on single label values (GL201–GL203): one per value, with a ``set`` fix."""
    parts = []
    for t in _label_tables(data):
        long = labels_long(t).filter(hits)
        names = {n: _columns_of(t, n) for n in t.label_names}
        parts.append(
            finding_frame(
                long,
                field=pl.col("name").replace_strict(names, return_dtype=pl.String),
                message=message,
                details=details,
                fix=json_struct(
                    pl.lit("set").alias("op"), pl.col("value").alias("old"), new.alias("new")
                ),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL201", "label-whitespace", category="label", severity="warning", fixable=True)
def label_whitespace(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A label has leading or trailing whitespace (``'Monocotyledons '``).

    Encoders treat it as a class of its own, splitting one class in two and lowering every
    metric on it. Fix: strip.
    """
    return _label_value_findings(
        data,
        (pl.col("value") != pl.col("clean")) & ~pl.col("placeholder"),
        pl.format("label {} has surrounding whitespace", repr_expr("value")),
        json_struct(pl.col("value"), pl.col("clean"), pl.col("pos").alias("list_position")),
        pl.col("clean"),
    )


@RULES.rule("GL202", "label-case-variant", category="label", severity="warning", fixable=True)
def label_case_variant(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """One label is spelled with different capitalisation (``Homo_sapiens`` / ``homo_sapiens``).

    Each spelling becomes a separate class. Fix: the most frequent spelling (ties: the first in
    sort order); the finding lists every spelling with its count.
    """
    return _label_value_findings(
        data,
        (pl.col("n_spellings") > 1) & (pl.col("clean") != pl.col("majority")),
        pl.format("label {} is a case variant of {}", repr_expr("clean"), repr_expr("majority")),
        json_struct(pl.col("clean").alias("value"), pl.col("majority"), pl.col("spellings")),
        pl.col("majority"),
    )


@RULES.rule("GL203", "placeholder-label", category="label", severity="warning", fixable=True)
def placeholder_label(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A label is a placeholder (``undetermined``, ``unknown``, ``none``, ``NA``, ``-`` ...).

    It means "no label", but a classifier learns it as a class and is scored on predicting it.
    curate treats it as missing everywhere; the fix writes an empty value.
    """
    return _label_value_findings(
        data,
        pl.col("placeholder"),
        pl.format("placeholder label {} treated as missing", repr_expr("value")),
        json_struct(pl.col("value")),
        pl.lit(None, pl.String),
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
    "GL301", "taxonomy-contradiction", category="consistency", severity="error", fixable=True
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
    for t in _label_tables(data):
        edges = hierarchy_edges(t)
        maj = hierarchy_majority(edges)
        if maj.is_empty():
            continue
        hit = edges.join(maj, on=["child_level", "parent_level", "child"]).filter(
            pl.col("parent") != pl.col("majority")
        )
        names = {n: _columns_of(t, n) for n in t.label_names}
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


def label_conflicts(t: GlycanTable) -> pl.DataFrame:
    """Rows of single-label tasks whose canonical key carries more than one label."""
    lab = _task_labels(t).filter(pl.col("key").is_not_null())
    return lab.with_columns(pl.col("label").n_unique().over("key").alias("n_labels")).filter(
        pl.col("n_labels") > 1
    )


def ceiling_accuracy(t: GlycanTable) -> dict[str, Any]:
    """Best accuracy any model can reach when identical glycans carry different labels."""
    lab = _task_labels(t).filter(pl.col("key").is_not_null())
    if lab.is_empty():
        return {"rows": 0}
    best = lab.group_by("key", "label").len().group_by("key").agg(pl.col("len").max()).sum()
    return {"rows": lab.height, "max_accuracy": round(best["len"][0] / lab.height, 6)}


@RULES.rule("GL302", "conflicting-labels", category="label", severity="error")
def conflicting_labels(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """The same glycan (by canonical key, whatever its spelling) has different labels in a
    single-label task (immunogenicity, glycosylation type).

    At most one label can be right, so no model can score 100%: the report's statistics give
    the best accuracy any model could reach on the table. Each row of a conflicting group is
    reported with the label counts of its glycan.
    """
    parts = []
    for t in _label_tables(data):
        if t.task not in SINGLE_LABEL:
            continue
        c = label_conflicts(t)
        if c.is_empty():
            continue
        counts = (
            c.group_by("key", "label")
            .len()
            .group_by("key")
            .agg(pl.struct("label", "len").sort_by("label").alias("labels"))
        )
        c = c.join(counts, on="key").sort("row")
        parts.append(
            finding_frame(
                c,
                field=pl.lit(t.columns.labels[t.task]),
                message=pl.format(
                    "glycan has {} labels across {} rows; this row says {}",
                    "n_labels",
                    pl.col("labels").list.eval(pl.element().struct.field("len")).list.sum(),
                    repr_expr("label"),
                ),
                details=json_struct(pl.col("key"), pl.col("labels")),
            )
        )
    return concat_outputs(parts)


def spelling_groups(t: GlycanTable) -> pl.DataFrame:
    """Valid rows with their key's representative spelling (most frequent, then sort order)."""
    rows = t.rows.filter(pl.col("in_task") & pl.col("key").is_not_null()).select(
        "row", "record", "split", "glycan", "key"
    )
    rep = (
        rows.group_by("key", "glycan")
        .len()
        .sort(["key", "len", "glycan"], descending=[False, True, False])
        .group_by("key", maintain_order=True)
        .agg(
            pl.col("glycan").first().alias("representative"),
            pl.col("glycan").n_unique().alias("n_spellings"),
            pl.col("glycan").head(MAX_LISTED).alias("spellings"),
        )
    )
    return rows.join(rep, on="key")


@RULES.rule(
    "GL303", "branch-order-duplicate", category="duplicate", severity="warning", fixable=True
)
def branch_order_duplicate(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """One glycan is written with different strings (branches in another order, another main
    chain, an explicit default configuration).

    String-level deduplication, class counts and splits all miss that the rows are the same
    glycan. Reported on rows not using the most frequent spelling; if their labels also differ,
    GL302 reports that as an error. Fix: rewrite to the most frequent spelling.
    """
    parts = []
    for t in _label_tables(data):
        g = spelling_groups(t).filter(
            (pl.col("n_spellings") > 1) & (pl.col("glycan") != pl.col("representative"))
        )
        parts.append(
            finding_frame(
                g,
                field=pl.lit(t.columns.glycan),
                message=pl.format(
                    "same glycan as {} ({} spellings)", repr_expr("representative"), "n_spellings"
                ),
                details=json_struct(
                    pl.col("glycan"), pl.col("representative"), pl.col("spellings"), pl.col("key")
                ),
                fix=json_struct(
                    pl.lit("set").alias("op"),
                    pl.col("glycan").alias("old"),
                    pl.col("representative").alias("new"),
                ),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL304", "duplicate-row", category="duplicate", severity="warning", fixable=True)
def duplicate_row(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A row repeats an earlier one: same glycan (by canonical key), same labels (after
    normalisation), same split and the same values in every other column (ids aside).

    The example counts twice in training or evaluation. Rows that differ elsewhere (another
    reference, another task's label in a multi-purpose table) are separate records and are not
    reported. Fix: drop the repeats (the changelog keeps each dropped row whole).
    """
    parts = []
    for t in _label_tables(data):
        other = _other_columns(t)
        lab = _task_labels(t).with_columns(
            pl.col("key").fill_null(pl.lit("\x00") + pl.col("glycan")).alias("k")
        )
        if other:
            extra = t.raw.select(other).with_columns(pl.Series("row", t.rows["row"]))
            lab = lab.join(extra, on="row", how="left")
        hit = later_occurrences(lab, ["k", "label", "split", *other], t.rows)
        parts.append(
            finding_frame(
                hit,
                field=pl.lit(""),
                message=pl.format(
                    "repeats record {} (same glycan, labels and split)", "first_record"
                ),
                details=json_struct(pl.col("first_record").alias("duplicate_of"), pl.col("label")),
                fix=json_struct(pl.lit("drop").alias("op")),
            )
        )
    return concat_outputs(parts)


def _other_columns(t: GlycanTable) -> list[str]:
    """Columns that are neither the glycan, a label of this task, a split nor a row id."""
    skip = {
        t.columns.glycan,
        SPLIT_FROM_LAYOUT,
        t.columns.split,
        *t.columns.split_flags.values(),
        *t.columns.labels.values(),
        *ID_COLUMNS,
    }
    return [c for c in t.raw.columns if c not in skip]


# --------------------------------------------------------------------------- GL4xx leakage


def leakage(t: GlycanTable) -> pl.DataFrame:
    """Validation/test rows whose canonical key occurs in train, with whether a train row of that
    key has the same label."""
    if "leakage" not in t.cache:
        t.cache["leakage"] = _leakage(t)
    return t.cache["leakage"]


def _leakage(t: GlycanTable) -> pl.DataFrame:
    # an unparseable string has no key; the same text in train and test still leaks
    lab = _task_labels(t).with_columns(pl.col("key").fill_null(pl.lit("\x00") + pl.col("glycan")))
    train = lab.filter(pl.col("split") == "train")
    if train.is_empty():
        return pl.DataFrame()
    train_keys = train.group_by("key").agg(
        pl.col("label").unique().sort().alias("train_labels"),
        pl.len().alias("train_rows"),
        pl.col("record").head(5).alias("train_records"),
    )
    ev = lab.filter(pl.col("split").is_in(["validation", "test"]))
    return ev.join(train_keys, on="key").with_columns(
        pl.col("train_labels").list.contains(pl.col("label")).alias("same_label")
    )


def _leak_rule(data: GlycanData, same: bool) -> pl.DataFrame:
    parts = []
    for t in _label_tables(data):
        lk = leakage(t)
        if lk.is_empty():
            continue
        lk = lk.filter(pl.col("same_label") == same).sort("row")
        parts.append(
            finding_frame(
                lk,
                field=pl.lit(t.columns.glycan),
                message=pl.format(
                    "{} glycan also in train ({} rows, e.g. record {}){}",
                    "split",
                    "train_rows",
                    pl.col("train_records").list.first(),
                    pl.lit(" with the same label" if same else " with another label"),
                ),
                details=json_struct(
                    pl.col("key"), pl.col("label"), pl.col("train_labels"), pl.col("train_records")
                ),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL401", "split-leakage-same-label", category="leakage", severity="error", fixable=True)
def split_leakage_same(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A validation/test glycan (by canonical key) is also in train, with the same label.

    The model is scored on an example it was trained on: memorisation counts as generalisation.
    Naive per-row random splits do this whenever a glycan has several rows (several species,
    several spellings). Fix: ``curate fix`` re-splits grouped by canonical key.
    """
    return _leak_rule(data, True)


@RULES.rule(
    "GL402", "split-leakage-different-label", category="leakage", severity="error", fixable=True
)
def split_leakage_different(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A validation/test glycan is also in train, with a different label.

    For multi-label taxonomy this is the same glycan under another taxon (the structure is
    shared, only the label differs); for single-label tasks it is a conflict crossing the split.
    Either way the evaluation row is not independent of training. Fix: grouped re-split.
    """
    return _leak_rule(data, False)


@RULES.rule("GL403", "cross-task-leakage", category="leakage", severity="warning")
def cross_task_leakage(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A validation/test glycan of one table is in the training data of another table given in
    the same run (e.g. the immunogenicity test set inside the taxonomy train set).

    Multi-task training or pre-training on the other table then sees the evaluation glycans.
    Tables without a split count as all-train for the other tables.
    """
    tables = _label_tables(data)
    parts = []
    for a in tables:
        a_rows = a.rows.filter(pl.col("in_task") & pl.col("key").is_not_null())
        a_train = a_rows.filter(pl.col("split").is_null() | (pl.col("split") == "train"))
        keys = a_train.group_by("key").agg(pl.len().alias("n"), pl.col("record").first().alias("r"))
        for b in tables:
            if a is b:
                continue
            ev = b.rows.filter(pl.col("in_task") & pl.col("split").is_in(["validation", "test"]))
            hit = ev.join(keys, on="key").sort("row")
            parts.append(
                finding_frame(
                    hit,
                    field=pl.lit(b.columns.glycan),
                    message=pl.format(
                        "{} glycan of {} is in the training rows of {} ({} rows, e.g. record {})",
                        "split",
                        pl.lit(Path(b.path).name),
                        pl.lit(Path(a.path).name),
                        "n",
                        "r",
                    ),
                    details=json_struct(
                        pl.col("key"),
                        pl.lit(a.path).alias("other_table"),
                        pl.lit(a.task).alias("other_task"),
                        pl.col("n").alias("other_rows"),
                    ),
                )
            )
    return concat_outputs(parts)


# --------------------------------------------------------------------------- GL5xx distribution


@RULES.rule("GL501", "singleton-class", category="distribution", severity="warning")
def singleton_class(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A class has a single example.

    It cannot be in both train and test, so it is either never evaluated or never learned, and
    stratified splitting fails on it. Consider merging it into its parent taxon or dropping it.
    """
    parts = []
    for t in _label_tables(data):
        long = labels_long(t).filter(pl.col("norm").is_not_null()).unique(["row", "name", "norm"])
        long = long.with_columns(pl.len().over("name", "norm").alias("n")).filter(pl.col("n") == 1)
        names = {n: _columns_of(t, n) for n in t.label_names}
        parts.append(
            finding_frame(
                long.sort("row", "name"),
                field=pl.col("name").replace_strict(names, return_dtype=pl.String),
                message=pl.format("{} {} has a single example", "name", repr_expr("norm")),
                details=json_struct(pl.col("name").alias("level"), pl.col("norm").alias("class")),
            )
        )
    return concat_outputs(parts)


# --------------------------------------------------------------------------- GL6xx interaction


def _matrices(data: GlycanData) -> list[GlycanTable]:
    return [t for t in data.tables if t.task == "interaction"]


@RULES.rule("GL601", "matrix-duplicate-glycan-columns", category="conflict", severity="error")
def matrix_duplicate_columns(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """Two glycan columns of an interaction matrix are the same glycan (same canonical key) and
    hold different values for one protein.

    The same measurement is recorded twice with two answers; a model sees them as two glycans
    with contradictory binding.
    """
    parts = []
    for t in _matrices(data):
        assert t.cells is not None
        c = t.cells.filter(pl.col("key").is_not_null() & pl.col("number").is_not_null())
        c = c.with_columns(pl.col("column").n_unique().over("key").alias("ncols")).filter(
            pl.col("ncols") > 1
        )
        g = (
            c.group_by("row", "record", "key")
            .agg(
                pl.col("number").n_unique().alias("nv"),
                pl.struct("column", "number").sort_by("column").alias("values"),
            )
            .filter(pl.col("nv") > 1)
            .sort("row", "key")
        )
        parts.append(
            finding_frame(
                g,
                field=pl.col("values").list.first().struct.field("column"),
                message=pl.format(
                    "{} columns of one glycan disagree for this protein",
                    pl.col("values").list.len(),
                ),
                details=json_struct(pl.col("key"), pl.col("values")),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL602", "matrix-empty-protein", category="integrity", severity="warning")
def matrix_empty_protein(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A protein row of an interaction matrix has no value for any glycan: it contributes
    nothing but counts as an example."""
    parts = []
    for t in _matrices(data):
        assert t.cells is not None
        empty = t.rows.join(t.cells.select("row").unique(), on="row", how="anti").sort("row")
        parts.append(
            finding_frame(
                empty,
                field=pl.lit(t.columns.protein),
                message=pl.lit("no interaction value for any glycan"),
                details=json_struct(pl.col("protein_name")),
            )
        )
    return concat_outputs(parts)


@RULES.rule("GL603", "matrix-duplicate-protein", category="duplicate", severity="warning")
def matrix_duplicate_protein(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """The same protein sequence has two rows in an interaction matrix (often under two names).

    Its interactions count twice and, split by row, leak between train and test. Reported on
    every occurrence after the first.
    """
    parts = []
    for t in _matrices(data):
        r = t.rows.filter(pl.col("protein").is_not_null())
        hit = later_occurrences(r, ["protein"], t.rows, extra=("protein_name",))
        parts.append(
            finding_frame(
                hit,
                field=pl.lit(t.columns.protein),
                message=pl.format(
                    "same protein sequence as record {} ({})",
                    "first_record",
                    pl.col("first_protein_name").fill_null(""),
                ),
                details=json_struct(
                    pl.col("first_record").alias("duplicate_of"), pl.col("protein_name")
                ),
            )
        )
    return concat_outputs(parts)


# --------------------------------------------------------------------------- fixes


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


def _load_mapping(path: str | None) -> dict[str, dict[str, str]]:
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


def plan_fixes(data: GlycanData, report: Report, options: GlycanOptions) -> FixResult:
    """Normalise labels, resolve the hierarchy, merge spellings, drop duplicates, re-split.

    Every cell that changes and every row dropped is written to the changelog with the rule that
    asked for it. The re-split is grouped by canonical key, seeded (``--seed``, default 0) and
    keeps the split proportions, so no glycan crosses splits afterwards.

    Invalid rows (GL001/GL101/GL102, :attr:`GlycanFamily.invalid_rules`) are dropped first and
    logged whole as they were read, with the rule and reason; they take no part in the other
    fixes (no label rewrite, no re-split, no duplicate check), so nothing is logged for them
    twice and the split proportions are those of the published rows.
    """
    t = _single_table(data)
    invalid = FAMILY.invalid_records(data)
    if t.task == "interaction":
        return fix_matrix(t, invalid)
    changes: list[ChangeEntry] = []
    raw = t.raw.clone()
    record_of = dict(zip(t.rows["row"].to_list(), t.rows["record"].to_list(), strict=True))
    offset = t.rows["row"].min() if t.rows.height else 0
    bad_rows, _ = invalid_rows_and_columns(t, invalid)
    bad = {r - offset for r in bad_rows}  # raw indices
    for r in (
        invalid.filter(pl.col("row").is_in(sorted(bad_rows)))
        .unique("row", keep="first", maintain_order=True)
        .iter_rows(named=True)
    ):
        changes.append(
            ChangeEntry(
                r["record"],
                "",
                t.originals.get(r["row"] - offset) or t.raw.row(r["row"] - offset, named=True),
                None,
                r["rule"],
                f"dropped: invalid record ({r['field']}: {r['message']})",
            )
        )
    long = labels_long(t)
    # value → normalised value, per label column (strip, majority case, placeholder → None)
    norm_map: dict[str, dict[str, str | None]] = {}
    for name, value, norm in long.select("name", "value", "norm").unique().iter_rows():
        norm_map.setdefault(name, {})[value] = norm
    # hierarchy: child → parent from the majority (or the user's mapping), level by level
    parent_fix = resolve_hierarchy(t, long, _load_mapping(options.mapping))

    def fix_cell(row: int, name: str, cell: Any) -> Any:
        if cell is None or row - offset in bad:
            return cell
        if isinstance(cell, list):  # a real list column (parquet list<string>, JSON arrays)
            return fix_list(row, name, [str(v) for v in cell if v is not None])
        listed = parse_list_cell(cell) if cell.lstrip().startswith("[") else None
        if listed is not None:
            return repr(fix_list(row, name, listed))
        out = fix_list(row, name, [cell])
        return out[0] if out else None

    def fix_list(row: int, name: str, values: list[str]) -> list[str]:
        out = []
        for v in values:
            n = norm_map.get(name, {}).get(v, v.strip())
            pf = parent_fix.get((row, name))
            if pf is not None and len(values) == 1:
                n = pf[1]
            if n is not None and n not in out:
                out.append(n)
        return out

    for name, col in t.columns.labels.items():
        dtype = raw.schema[col]
        if dtype not in (pl.String, pl.List(pl.String)):
            if not isinstance(dtype, pl.List | pl.Array) or dtype.inner.is_nested():
                continue  # objects/nested lists: every such cell is an invalid row, dropped
            dtype = pl.List(pl.String)
        old = raw[col].to_list()
        new = [fix_cell(i + offset, name, v) for i, v in enumerate(old)]
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                rule = _which_label_rule(a, b, parent_fix.get((i + offset, name)))
                changes.append(
                    ChangeEntry(record_of[i + offset], col, a, b, rule, _LABEL_REASONS[rule])
                )
        raw = raw.with_columns(pl.Series(col, new, dtype=dtype))
    # spellings: one string per glycan
    groups = spelling_groups(t).filter(pl.col("glycan") != pl.col("representative"))
    gcol = t.columns.glycan
    if groups.height:
        rep = dict(zip(groups["row"].to_list(), groups["representative"].to_list(), strict=True))
        old = raw[gcol].to_list()
        new = [rep.get(i + offset, v) for i, v in enumerate(old)]
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            if a != b:
                changes.append(
                    ChangeEntry(
                        record_of[i + offset],
                        gcol,
                        a,
                        b,
                        "GL303",
                        "rewritten to the glycan's most frequent spelling",
                    )
                )
        raw = raw.with_columns(pl.Series(gcol, new, dtype=pl.String))
    # re-split grouped by canonical key, over the rows that will be published
    ok = ~pl.Series(range(raw.height)).is_in(sorted(bad))
    keys = t.rows["key"].fill_null(pl.lit("\x00") + t.rows["glycan"])
    current = t.rows["split"]
    seed = options.seed
    resplit = options.resplit
    split = current
    if resplit:
        regrouped = iter(regroup_split(keys.filter(ok), current.filter(ok), seed=seed).to_list())
        split = pl.Series(
            "split",
            [next(regrouped) if keep else was for keep, was in zip(ok, current, strict=True)],
            dtype=pl.String,
        )
    moved = int((current.fill_null("") != split.fill_null("")).sum())
    if resplit:
        flags = t.columns.split_flags
        for rec, a, b in zip(
            t.rows["record"].to_list(), current.to_list(), split.to_list(), strict=True
        ):
            if a == b:
                continue
            reason = f"re-split grouped by canonical key (seed {seed})"
            if flags:  # one 0/1 column per split: log each flag that changes
                for name, col in flags.items():
                    if (a == name) != (b == name):
                        changes.append(
                            ChangeEntry(
                                rec, col, str(int(a == name)), str(int(b == name)), "GL401", reason
                            )
                        )
            else:
                changes.append(ChangeEntry(rec, t.columns.split or "split", a, b, "GL401", reason))
        raw = _write_split(raw, t, split)
    # drop duplicates after normalisation (same key, labels and new split)
    # Drop a task row only when the whole row repeats an earlier one after the fixes (GL304's
    # definition), so no reference or other task's label is lost.
    label_cols = list(t.columns.labels.values())
    dedup = raw.with_columns(
        t.rows["key"].fill_null(pl.lit("\x00") + t.rows["glycan"]).alias("__k"),
        split.alias("__s"),
        pl.int_range(raw.height).alias("__i"),
        t.rows["in_task"].alias("__task"),
    )
    compare = ["__k", "__s", *label_cols, *_other_columns(t)]
    task_dups = dedup.filter(pl.col("__task") & ok)
    keep = task_dups.unique(compare, keep="first", maintain_order=True)["__i"]
    dropped = sorted(set(task_dups["__i"].to_list()) - set(keep.to_list()))
    for i in dropped:
        changes.append(
            ChangeEntry(
                record_of[i + offset],
                "",
                raw.row(i, named=True),
                None,
                "GL304",
                "dropped: duplicate of an earlier row after fixes",
            )
        )
    keep_mask = ~pl.Series(range(raw.height)).is_in(dropped) & ok
    raw = raw.filter(keep_mask)
    split = split.filter(keep_mask)
    tables = _split_tables(t, raw, split)
    summary = {
        "rows_in": t.raw.height,
        "rows_out": raw.height,
        "invalid_dropped": len(bad),
        "dropped": len(dropped),
        "cells_changed": sum(1 for c in changes if c.field and c.rule != "GL401"),
        "rows_moved_between_splits": moved,
        "seed": seed,
    }
    return FixResult(
        tables=tables,
        changelog=changes,
        extra_files={"fix_summary.json": dumps(summary).encode()},
        summary=summary,
    )


def fix_matrix(t: GlycanTable, invalid: pl.DataFrame) -> FixResult:
    """Interaction matrix fixes: one row per protein, one column per glycan, no empty rows.

    * GL603: rows repeating a protein sequence are merged into its first row (a cell the first
      row lacks is taken from the repeat) and dropped;
    * GL601: columns of one glycan (same canonical key) are merged into the column with the most
      values (ties: sort order); where two columns disagree for a protein, the kept column's value
      stays and the other is logged as discarded;
    * GL602: protein rows with no value at all are dropped.

    Every moved, discarded or dropped value is in the changelog. Invalid protein rows (GL001: a
    non-numeric value, a list or object in a cell) and glycan columns whose header does not
    parse (GL101/GL102) are dropped first, logged whole, and take no part in the merges.
    """
    assert t.cells is not None
    changes: list[ChangeEntry] = []
    raw = t.raw.clone()
    cols = t.columns
    offset = int(t.rows["row"].min()) if t.rows.height else 0
    record = t.rows["record"].to_list()
    bad_rows, bad_cols = invalid_rows_and_columns(t, invalid)
    drop: set[int] = {r - offset for r in bad_rows}
    n_invalid = len(drop)
    logged: set[Any] = set()
    for r in invalid.iter_rows(named=True):
        what = r["row"] if r["row"] is not None else r["field"]
        if what in logged:
            continue
        logged.add(what)
        if r["row"] in bad_rows:
            i = r["row"] - offset
            changes.append(
                ChangeEntry(
                    record[i],
                    "",
                    t.originals.get(i) or raw.row(i, named=True),
                    None,
                    r["rule"],
                    f"dropped: invalid record ({r['field']}: {r['message']})",
                )
            )
        elif r["row"] is None and r["field"] in bad_cols:
            values = {
                record[i]: v for i, v in enumerate(raw[r["field"]].to_list()) if v is not None
            }
            changes.append(
                ChangeEntry(
                    r["record"],
                    r["field"],
                    values,
                    None,
                    r["rule"],
                    f"dropped: glycan column header does not parse ({r['message']})",
                )
            )
    raw = raw.drop(bad_cols)
    glycan_columns = [c for c in cols.glycan_columns if c not in bad_cols]
    # GL603: merge repeated protein sequences into their first row
    first_of: dict[str, int] = {}
    data = {c: raw[c].to_list() for c in glycan_columns}
    for i, seq in enumerate(raw[cols.protein].to_list()):
        if seq is None or i in drop:
            continue
        if seq not in first_of:
            first_of[seq] = i
            continue
        j = first_of[seq]
        drop.add(i)
        for c, values in data.items():
            if values[i] is not None and values[j] is None:
                values[j] = values[i]
                changes.append(
                    ChangeEntry(
                        record[j],
                        c,
                        None,
                        values[i],
                        "GL603",
                        f"value taken from repeat {record[i]} of this protein",
                    )
                )
        changes.append(
            ChangeEntry(
                record[i],
                "",
                raw.row(i, named=True),
                None,
                "GL603",
                f"dropped: same protein sequence as {record[j]}",
            )
        )
    # GL601: merge columns of one glycan
    keyed = (
        t.cells.filter(pl.col("column").is_in(glycan_columns))
        .select("column", "key")
        .unique()
        .drop_nulls("key")
    )
    counts = t.cells.group_by("column").len()
    groups = (
        keyed.join(counts, on="column", how="left")
        .with_columns(pl.col("len").fill_null(0))
        .sort(["key", "len", "column"], descending=[False, True, False])
        .group_by("key", maintain_order=True)
        .agg(pl.col("column"))
        .filter(pl.col("column").list.len() > 1)
    )
    dropped_cols: list[str] = []
    for _key, columns in groups.iter_rows():
        keep, others = columns[0], columns[1:]
        for other in others:
            for i, v in enumerate(data[other]):
                if v is None or i in drop:
                    continue
                if data[keep][i] is None:
                    data[keep][i] = v
                    changes.append(
                        ChangeEntry(
                            record[i],
                            keep,
                            None,
                            v,
                            "GL601",
                            f"value moved from column {other!r} (same glycan)",
                        )
                    )
                elif data[keep][i] != v:
                    changes.append(
                        ChangeEntry(
                            record[i],
                            other,
                            v,
                            None,
                            "GL601",
                            f"discarded: column {keep!r} of the same glycan "
                            f"holds {data[keep][i]!r}",
                        )
                    )
            dropped_cols.append(other)
    # GL602: empty rows (after the merges)
    kept_cols = [c for c in glycan_columns if c not in dropped_cols]
    for i in range(raw.height):
        if i not in drop and all(
            data[c][i] is None or str(data[c][i]).strip() == "" for c in kept_cols
        ):
            drop.add(i)
            changes.append(
                ChangeEntry(
                    record[i],
                    "",
                    raw.row(i, named=True),
                    None,
                    "GL602",
                    "dropped: no interaction value for any glycan",
                )
            )
    raw = raw.with_columns([pl.Series(c, data[c], dtype=raw.schema[c]) for c in kept_cols])
    raw = raw.drop(dropped_cols)
    keep_mask = ~pl.Series(range(raw.height)).is_in(sorted(drop))
    out = raw.filter(keep_mask)
    split = t.rows["split"].filter(keep_mask)
    summary = {
        "rows_in": t.raw.height,
        "rows_out": out.height,
        "invalid_dropped": n_invalid,
        "invalid_columns_dropped": len(bad_cols),
        # rows a fix removed (GL602/GL603), not the invalid ones: as ``dropped`` in every family
        "dropped": len(drop) - n_invalid,
        "glycan_columns_merged": len(dropped_cols),
        "row_offset": offset,
    }
    return FixResult(
        tables=_split_tables(t, out, split),
        changelog=changes,
        extra_files={"fix_summary.json": dumps(summary).encode()},
        summary=summary,
    )


_LABEL_REASONS = {
    "GL201": "stripped surrounding whitespace",
    "GL202": "case variant set to the majority spelling",
    "GL203": "placeholder label removed (missing)",
    "GL301": "moved to the majority (or mapped) parent taxon",
}


def _which_label_rule(old: Any, new: Any, parent_fix: tuple[str, str] | None) -> str:
    if new is None or (isinstance(new, str) and new == "[]" and old != "[]"):
        return "GL203"
    if parent_fix is not None and isinstance(new, str) and parent_fix[1] in new:
        return "GL301"
    if isinstance(old, str) and isinstance(new, str) and old.strip() == new:
        return "GL201"
    if isinstance(old, str) and isinstance(new, str) and old.strip().lower() == new.lower():
        return "GL202"
    return "GL201"


def _write_split(raw: pl.DataFrame, t: GlycanTable, split: pl.Series) -> pl.DataFrame:
    cols = t.columns
    if cols.split and cols.split in raw.columns:
        return raw.with_columns(split.alias(cols.split))
    if cols.split_flags:
        return raw.with_columns(
            [
                (split == name).cast(pl.Int8).cast(pl.String).alias(col)
                for name, col in cols.split_flags.items()
            ]
        )
    return raw.with_columns(split.alias("split"))
