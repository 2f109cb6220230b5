"""GL305: glycan labels that break no rule but that confident learning calls unlikely.

The glycan side of :mod:`curate.audits.shared.label_issues`. What the generic tools ignore and
this module does not:

* **The unit is the glycan, not the row.** glycowork's species table has one row per
  (glycan, species): the same glycan in two kingdoms is a fact, not noise. The built-in model
  scores each canonical glycan (:func:`curate.schemas.iupac.canonical_key`) once, with the set
  of its classes at the level (a multi-label set: cleanlab's multi-label confident learning,
  one-vs-rest probabilities). Every row is out of sample by construction: one glycan is one
  sample, so it is never in the fitting and the scored fold at once.
* **Features from the parsed structure** (:mod:`.features`): residues, linkages, motif paths,
  branching.
* **Levels kept consistent.** A glycan whose genus the model would change to one of another
  family is not "clean" at family: each flag is carried up the table's own hierarchy (each
  taxon's majority parent) to every coarser level where the suggested taxon's ancestor differs
  from the given one, as a finding of its own (``details.implied_by``).

``--pred-probs`` scores rows (ids: the records), one label level (``--label-level`` when the
table has several): the flagged set is then exactly cleanlab's ``find_label_issues`` on it.
"""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

from curate.audits.glycan.features import glycan_features
from curate.audits.glycan.hierarchy import hierarchy_edges
from curate.audits.glycan.labels import (
    cell_edits,
    code_names,
    columns_of,
    label_tables,
    labels_long,
)
from curate.audits.glycan.registry import RULES
from curate.audits.shared.label_issues import (
    MAX_CLASSES,
    LabelIssues,
    ScoredLabels,
    class_order,
    cross_val_pred_probs,
    score_from_file,
    score_labels,
)
from curate.core.errors import UsageError
from curate.core.findings import concat_outputs, finding_frame, json_struct
from curate.core.rules import AuditContext
from curate.schemas.glycan import LEVELS
from curate.schemas.glycan_tables import GlycanData, GlycanTable

#: cleanlab's flagging method for the built-in model. On glycowork's species table (9,320
#: canonical glycans, all 11 kingdoms, 5 % of single-kingdom glycans flipped, seeds 0 and 1)
#: the one-vs-rest probabilities flag with precision 0.72 / 0.71 at recall 0.93 / 0.88 by
#: ``confident_learning``, 0.61 / 0.62 at 0.98 / 0.97 by cleanlab's default
#: ``prune_by_noise_rate`` (the default stays for ``--pred-probs``: exactly cleanlab's set).
BUILT_IN_FILTER = "confident_learning"
#: The taxonomy levels the built-in model scores unless ``--label-levels`` names others: those
#: with at most this many classes (domain and kingdom in glycowork). One-vs-rest costs a fit
#: per class and fold: glycowork's 39 phyla take 31 s, its 101 classes over a minute.
DEFAULT_LEVEL_CLASSES = 20
#: Fewest canonical glycans the built-in model scores a label on: with five folds, a few
#: dozen glycans leave a handful per class to fit on, and every flag would be noise.
MIN_GLYCANS = 50


def _levels(t: GlycanTable, opts: Any) -> list[tuple[int, str]]:
    """(index, name) of the labels this run scores in ``t``, finest first."""
    names = t.label_names
    if t.task != "taxonomy":
        return list(enumerate(names))
    wanted = [n.lower() for n in opts.label_levels]
    order = {n: k for k, n in enumerate(LEVELS)}
    chosen = [
        (i, n)
        for i, n in enumerate(names)
        if (n.lower() in wanted if wanted else True) and n.lower() in order
    ]
    return sorted(chosen, key=lambda p: order[p[1].lower()])


def _long(t: GlycanTable, lv: int) -> pl.DataFrame:
    """``row, pos, code, norm, key, record, split, glycan`` of the task's label values at
    level ``lv`` (placeholders and invalid rows left out), in row order."""
    names = code_names(t).select("code", "norm")
    return (
        labels_long(t)
        .filter((pl.col("lv") == lv) & pl.col("code").is_not_null())
        .select("row", "pos", "code")
        .join(names, on="code", how="left")
        .join(
            t.rows.filter(pl.col("in_task")).select("row", "key", "record", "split", "glycan"),
            on="row",
            how="inner",
        )
        .sort("row", "pos")
    )


def _by_key(long: pl.DataFrame) -> pl.DataFrame:
    """One row per canonical glycan: ``key``, its ``classes`` at the level (sorted) and one
    ``glycan`` string to read its features from."""
    return (
        long.group_by("key")
        .agg(pl.col("norm").unique().sort().alias("classes"), pl.col("glycan").first())
        .sort("key")
    )


def _by_record(long: pl.DataFrame) -> pl.DataFrame:
    """One row per labelled record: ``row``, ``record``, its ``classes`` at the level."""
    return (
        long.group_by("row", maintain_order=True)
        .agg(pl.col("record").first(), pl.col("norm").unique(maintain_order=True).alias("classes"))
        .sort("row")
    )


@RULES.table("label_scores")
def label_scores_table(ctx: AuditContext) -> ScoredLabels:
    """Per scored label (``table:level`` when several tables are audited): the scored units'
    frame and what confident learning says about them. Units are canonical glycans for the
    built-in model (frame: ``key, classes``), records for ``--pred-probs`` (frame: ``row,
    record, classes``); the levels not scored, and why."""
    data = ctx.data
    assert isinstance(data, GlycanData)
    opts = ctx.options
    source = opts.label_issue_source(built_in=True)
    tables = label_tables(data)
    out: dict[str, tuple[pl.DataFrame, LabelIssues]] = {}
    skipped: dict[str, str] = {}
    if source == "file" and len(tables) != 1:
        raise UsageError(f"--pred-probs scores one glycan table; {len(tables)} are audited")
    for t in tables:
        levels = _levels(t, opts)
        if source == "file":
            levels = _file_level(t, levels, opts)
        for lv, name in levels:
            label = name if len(tables) == 1 else f"{t.path}:{name}"
            long = _long(t, lv)
            if source == "file":
                frame = _by_record(long)
                labels = frame["classes"].to_list()
                multi = any(len(v) > 1 for v in labels)
                ids = t.rows["record"].cast(pl.String).to_list()
                rows = (frame["row"] - int(t.rows["row"][0])).to_numpy()
                values = labels if multi else [v[0] for v in labels]
                issues = score_from_file(opts, values, rows, ids, name, multi_label=multi)
                out[label] = (frame, issues)
                continue
            frame = _by_key(long)
            labels = frame["classes"].to_list()
            classes = class_order(labels)
            n_classes = len(classes)
            if n_classes < 2 or frame.height < 2:
                continue
            if frame.height < MIN_GLYCANS:
                skipped[label] = (
                    f"{frame.height:,} labelled glycans, fewer than the built-in model's "
                    f"{MIN_GLYCANS}: too few for out-of-sample probabilities to mean anything"
                )
                continue
            if n_classes > MAX_CLASSES:
                skipped[label] = (
                    f"{n_classes:,} classes, more than the built-in model's {MAX_CLASSES}: "
                    "give --pred-probs from your own model"
                )
                continue
            if t.task == "taxonomy" and not opts.label_levels and n_classes > DEFAULT_LEVEL_CLASSES:
                skipped[label] = (
                    f"{n_classes:,} classes: not scored unless named in --label-levels "
                    f"(one-vs-rest fits a model per class; levels of at most "
                    f"{DEFAULT_LEVEL_CLASSES} are scored by default)"
                )
                continue
            everywhere = set(classes)
            for v in labels:
                everywhere &= set(v)
            if everywhere:
                skipped[label] = (
                    f"every glycan holds {sorted(everywhere)[0]}: confident learning's "
                    "one-vs-rest needs glycans with and without each class"
                )
                continue
            multi = any(len(v) > 1 for v in labels)
            features = glycan_features(frame["glycan"].to_list())
            probs = cross_val_pred_probs(
                features,
                labels,
                classes,
                folds=opts.label_folds,
                seed=opts.seed,
                multi_label=True,
            )
            issues = score_labels(
                labels, probs, classes, multi_label=True, filter_by=BUILT_IN_FILTER
            )
            # the suggested label: the most probable class (one-vs-rest probabilities)
            best = [classes[i] for i in probs.argmax(axis=1)]
            issues = LabelIssues(
                issues.rows.with_columns(pl.Series("predicted", best, dtype=pl.String)),
                issues.classes,
                issues.per_class,
                issues.health,
                multi_label=multi,
            )
            out[label] = (frame, issues)
    return ScoredLabels(out, skipped, "pred-probs" if source == "file" else "built-in model")


def _file_level(t: GlycanTable, levels: list[tuple[int, str]], opts: Any) -> list[tuple[int, str]]:
    """The one label ``--pred-probs`` scores: ``--label-level``, or the table's only label."""
    names = {n.lower(): (i, n) for i, n in enumerate(t.label_names)}
    if opts.label_level:
        hit = names.get(opts.label_level.lower())
        if hit is None:
            raise UsageError(
                f"--label-level {opts.label_level!r} is not a label of {t.path} "
                f"({', '.join(t.label_names)})"
            )
        return [hit]
    if len(t.label_names) != 1:
        raise UsageError(
            f"--pred-probs scores one label; {t.path} has {len(t.label_names)} "
            f"({', '.join(t.label_names)}): name it with --label-level"
        )
    return levels


def _parents(t: GlycanTable) -> dict[str, dict[str, str]]:
    """Per level name, each taxon's majority parent at the next coarser level (the table's own
    hierarchy, from rows with one value at both levels; ties broken by name)."""
    edges = hierarchy_edges(t)
    if edges.is_empty():
        return {}
    names = dict(code_names(t).select("code", "norm").iter_rows())
    top = (
        edges.group_by("child_level", "child", "parent")
        .len()
        .sort(["child_level", "child", "len", "parent"], descending=[False, False, True, False])
        .unique(["child_level", "child"], keep="first", maintain_order=True)
    )
    out: dict[str, dict[str, str]] = {}
    for level, child, parent, _ in top.iter_rows():
        out.setdefault(level, {})[names[child]] = names[parent]
    return out


def _record_flags(
    t: GlycanTable, lv: int, frame: pl.DataFrame, issues: LabelIssues, by_key: bool
) -> pl.DataFrame:
    """The flagged label values of ``t``'s rows at level ``lv``: ``row, pos, record, split,
    norm`` (the value) with the unit's ``predicted``, ``score`` and ``rank``.

    A flagged glycan's rows carry the flag on the values the model does not back (not in its
    predicted set, or not its most probable class when that set is empty): of a glycan found
    in Animalia and Bacteria whose structure says Animalia, the Bacteria rows. A flagged record
    (``--pred-probs``) is reported whole, every value of it."""
    long = _long(t, lv)
    unit = "key" if by_key else "row"
    scored = pl.concat(
        [frame.select(unit, "classes"), issues.rows.drop("position")], how="horizontal"
    ).filter("issue")
    if scored.is_empty():
        return pl.DataFrame()
    hits = long.join(scored, on=unit, how="inner")
    if by_key:
        backed = pl.col("norm") == pl.col("predicted")
        hits = hits.filter(~backed)
    return hits.sort("row", "pos")


@RULES.rule(
    "GL305",
    "label-issue",
    category="label",
    severity="warning",
    fix="sometimes",
    unsafe=True,
    needs=("label_scores",),
    fix_once=True,
)
def label_issue(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A glycan's label (a taxon, immunogenicity, glycosylation type) is unlikely given its
    structure: confident learning (cleanlab) flags it from out-of-sample predicted
    probabilities.

    A bacterial glycan filed under Animalia breaks no hierarchy and conflicts with no other
    row, and a model trained on it learns the error. The built-in model (``--label-model
    auto``) is a regularised logistic regression, one-vs-rest and 5-fold seeded, on features
    of the parsed structure (residues, linkages, motif paths, branching); it scores each
    canonical glycan once with the set of its classes (the same glycan in two kingdoms is a
    fact, not noise). Taxonomy levels of at most 20 classes are scored by default
    (``--label-levels`` names others, up to 200 classes). On glycowork's species table with
    5 % of kingdoms flipped it finds about nine flips in ten with seven flags in ten right.
    A flag is carried up the table's own hierarchy: a genus the model would change to one of
    another family is flagged at family too (``implied_by``). With ``--pred-probs`` (your
    model's, per record; ``--label-level`` picks the level) the flagged set is exactly
    cleanlab's ``find_label_issues`` on it.

    Each finding carries ``given_label``, ``predicted_label``, ``label_score`` (0 worst .. 1
    best) and its glycan's rank among the flagged. A flag is a suspicion to review, not a
    proof: hence a warning. Fix (unsafe: it trusts a model over the annotator, so only with
    ``--unsafe-fixes``): set the predicted label in the cell (``--label-fix relabel``; none
    when the model backs no other class, and none for a taxon with finer levels below it in
    the row, which would then contradict it) or leave the row out (``--label-fix drop``); the
    changelog keeps the score."""
    scores: ScoredLabels = ctx.table("label_scores")
    by_key = scores.source != "pred-probs"
    parts = []
    tables = label_tables(data)
    for t in tables:
        parents = _parents(t) if t.task == "taxonomy" else {}
        hits = []
        for lv, name in enumerate(t.label_names):
            label = name if len(tables) == 1 else f"{t.path}:{name}"
            if label not in scores.scored:
                continue
            frame, issues = scores.scored[label]
            flags = _record_flags(t, lv, frame, issues, by_key)
            if flags.is_empty():
                continue
            hits.append(
                flags.select(
                    "row",
                    "pos",
                    "record",
                    "split",
                    pl.lit(lv, pl.Int64).alias("lv"),
                    pl.lit(name).alias("name"),
                    pl.col("norm").alias("given"),
                    "predicted",
                    "score",
                    "rank",
                    pl.lit(None, pl.String).alias("implied_by"),
                )
            )
        if not hits:
            continue
        found = pl.concat(hits)
        if parents:
            found = pl.concat([found, _implied(t, found, parents)])
        parts.append(_findings(t, found, scores.source, ctx.options.label_fix))
    return concat_outputs(parts).sort("row", "field") if parts else concat_outputs(parts)


def _implied(
    t: GlycanTable, found: pl.DataFrame, parents: dict[str, dict[str, str]]
) -> pl.DataFrame:
    """The coarser levels a flag implies: for a value flagged at level L whose suggested taxon
    has (by the majority hierarchy) another ancestor at a coarser level M than the row's own
    single value at M, a flag at M (unless M flagged that row itself)."""
    index = {n: i for i, n in enumerate(t.label_names)}
    chain = [n for n in LEVELS if n in {x.lower(): x for x in t.label_names}]
    proper = {n.lower(): n for n in t.label_names}
    flagged = {(r, lv) for r, lv in found.select("row", "lv").iter_rows()}
    given: dict[int, dict[str, str]] = {}
    rows = set(found["row"].to_list())
    for lv, name in enumerate(t.label_names):
        single = (
            _long(t, lv)
            .filter(pl.col("row").is_in(list(rows)))
            .group_by("row")
            .agg(pl.col("norm"))
            .filter(pl.col("norm").list.len() == 1)
        )
        for r, v in single.iter_rows():
            given.setdefault(r, {})[name] = v[0]
    out = []
    for rec in found.iter_rows(named=True):
        if rec["implied_by"] is not None or not rec["predicted"]:
            continue
        at = chain.index(rec["name"].lower()) if rec["name"].lower() in chain else None
        if at is None:
            continue
        suggested = rec["predicted"]
        for child, parent in zip(chain[at:], chain[at + 1 :], strict=False):
            suggested = parents.get(proper[child], {}).get(suggested)
            if suggested is None:
                break
            mine = given.get(rec["row"], {}).get(proper[parent])
            lv = index[proper[parent]]
            if mine is None or mine == suggested or (rec["row"], lv) in flagged:
                continue
            flagged.add((rec["row"], lv))
            out.append(
                {
                    **rec,
                    "pos": 0,
                    "lv": lv,
                    "name": proper[parent],
                    "given": mine,
                    "predicted": suggested,
                    "implied_by": rec["name"],
                }
            )
    return pl.DataFrame(out, schema=found.schema) if out else found.clear()


def _has_finer(t: GlycanTable, found: pl.DataFrame) -> list[int]:
    """The rows of ``found`` flagged at a taxonomy level below which the row has a value."""
    if t.task != "taxonomy":
        return []
    rank = {i: LEVELS.index(n.lower()) for i, n in enumerate(t.label_names) if n.lower() in LEVELS}
    finest = (
        labels_long(t)
        .filter(pl.col("code").is_not_null())
        .select("row", pl.col("lv").cast(pl.Int64).replace_strict(rank, default=None).alias("r"))
        .group_by("row")
        .agg(pl.col("r").min())
    )
    at = found.select(
        "row", pl.col("lv").replace_strict(rank, default=None, return_dtype=pl.Int64).alias("at")
    )
    return at.join(finest, on="row").filter(pl.col("r") < pl.col("at"))["row"].to_list()


def _findings(t: GlycanTable, found: pl.DataFrame, source: str, fix: str) -> pl.DataFrame:
    """One finding per flagged (row, level); the edit of its whole cell (:func:`cell_edits`:
    a list cell stays a list) or the row's drop, the score in the reason."""
    found = found.sort("row", "lv", "pos")
    if fix == "drop":
        reason = pl.format(
            "label issue (confident learning): {} {} quality {}, predicted {}",
            "name",
            "given",
            pl.col("score").round(4),
            "predicted",
        )
        edits = found.with_columns(
            json_struct(pl.lit("drop").alias("op"), reason.alias("reason")).alias("fix")
        )
    else:
        # a multi-label record's suggestion is a set ("a|b"), not a value a cell can take
        settable = ~pl.col("predicted").str.contains("|", literal=True)
        # a taxon with a finer level below it in the row is not relabelled alone: the levels
        # below would then contradict it (GL301); the row's drop stays available
        settable = settable & ~pl.col("row").is_in(_has_finer(t, found))
        changes = found.filter((pl.col("predicted") != pl.col("given")) & settable).select(
            "row", "name", "pos", pl.col("predicted").alias("new")
        )
        cells = cell_edits(t, changes)
        scored = found.group_by("row", "name").agg(
            pl.col("score").min(), pl.col("predicted").first()
        )
        cells = cells.join(scored, on=["row", "name"], how="left")
        fixes: list[str | None] = []
        for fixed, score, predicted in cells.select("fix", "score", "predicted").iter_rows():
            if fixed is None:
                fixes.append(None)
                continue
            edit = orjson.loads(fixed)
            quality = round(score, 4)
            edit["reason"] = (
                f"label issue (confident learning): quality {quality}, predicted {predicted}"
            )
            fixes.append(orjson.dumps(edit).decode())
        cells = cells.with_columns(pl.Series("fix", fixes, dtype=pl.String))
        edits = found.join(cells.select("row", "name", "fix"), on=["row", "name"], how="left")
    edits = edits.unique(["row", "name"], keep="first", maintain_order=True)
    column = {n: columns_of(t, n) for n in t.label_names}
    return finding_frame(
        edits,
        field=pl.col("name").replace_strict(column, return_dtype=pl.String),
        message=pl.format(
            "{} {} is unlikely (quality {}{}); the model predicts {}",
            "name",
            "given",
            pl.col("score").round(3),
            pl.when(pl.col("implied_by").is_not_null())
            .then(pl.format(", implied by its {} flag", "implied_by"))
            .otherwise(pl.format(", rank {}", "rank")),
            pl.when(pl.col("predicted").fill_null("") != "")
            .then("predicted")
            .otherwise(pl.lit("no label")),
        ),
        details=json_struct(
            pl.col("given").alias("given_label"),
            pl.col("predicted").alias("predicted_label"),
            pl.col("score").alias("label_score"),
            pl.col("rank"),
            pl.col("name").alias("level"),
            pl.col("implied_by"),
            pl.col("split"),
            pl.lit(source).alias("source"),
        ),
        fix=pl.col("fix"),
    )


__all__ = ["BUILT_IN_FILTER", "label_issue", "label_scores_table"]
