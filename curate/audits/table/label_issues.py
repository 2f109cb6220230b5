"""TB302: labels that break no rule but that confident learning calls unlikely.

The table family's side of :mod:`curate.audits.shared.label_issues`: which rows are scored
(valid rows with a label), the built-in model's features (hashed character and word n-grams of
the ``--text`` columns, the ``--features`` columns as numbers or categories), the folds'
groups (``--group``, else the normalised input: one input never sits in the fitting and the
scored fold) and the findings. The probabilities come from ``--pred-probs`` when given
(exactly cleanlab's flagged set on them), else from the built-in model (``--label-model
auto``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from curate.audits.shared.label_issues import (
    MAX_CLASSES,
    LabelIssues,
    ScoredLabels,
    class_order,
    cross_val_pred_probs,
    label_issue_findings,
    score_from_file,
    score_labels,
)
from curate.audits.table.registry import RULES, TableView, as_text, columns, value
from curate.core.errors import UsageError
from curate.core.findings import concat_outputs
from curate.core.rules import AuditContext
from curate.schemas.table import TableOptions

#: Most distinct values a text column may have to be read as a category by the built-in model
#: (more: an identifier-like column, which would only memorise rows).
_CATEGORIES = 100
#: Most words (and word pairs) of the built-in model's vocabulary, the most frequent kept.
_VOCABULARY = 2**16
#: Inverse regularisation of the built-in model's logistic regression. On glycowork's
#: single-kingdom glycans with 5 % of kingdoms flipped, C=10 flags with precision 0.48 at
#: recall 0.94 (C=1: 0.40 / 0.96): less shrinkage, sharper out-of-sample probabilities.
_C = 10.0


def feature_columns(data: TableView, opts: TableOptions) -> list[str]:
    """The columns the built-in model reads besides ``--text``: ``--features`` when given, else
    every numeric or boolean column and every text column of at most :data:`_CATEGORIES`
    values that is not the id, a label, the split, the group or an input."""
    if opts.features:
        return list(opts.features)
    values: pl.DataFrame = data.values
    taken = {opts.id, opts.split, opts.group, *opts.label, *opts.text}
    out = []
    for name, dtype in values.schema.items():
        if name in taken:
            continue
        if (
            dtype.is_numeric()
            or dtype == pl.Boolean
            or (
                dtype in (pl.String, pl.Categorical, pl.Enum)
                and (values[name].n_unique() <= _CATEGORIES)
            )
        ):
            out.append(name)
    return out


def _features(data: TableView, opts: TableOptions, rows: pl.Series) -> Any:
    """The built-in model's feature matrix of ``rows`` (scipy sparse, one row each)."""
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    blocks = []
    for name in opts.text:
        text = as_text(data.values[name]).gather(rows).cast(pl.String).fill_null("").to_list()
        blocks.append(_tfidf(TfidfVectorizer, text))
    for name in feature_columns(data, opts):
        col = data.values[name].gather(rows)
        if col.dtype.is_numeric() or col.dtype == pl.Boolean:
            x = col.cast(pl.Float64).to_numpy().reshape(-1, 1)
            missing = np.isnan(x)
            x = np.where(missing, np.nanmean(x) if (~missing).any() else 0.0, x)
            blocks.append(sparse.csr_matrix(StandardScaler().fit_transform(x)))
            if missing.any():
                blocks.append(sparse.csr_matrix(missing.astype(np.float64)))
        else:
            cats = col.cast(pl.String).fill_null("\x00").to_numpy().reshape(-1, 1)
            blocks.append(OneHotEncoder(handle_unknown="ignore").fit_transform(cats))
    blocks = [b for b in blocks if b is not None]
    if not blocks:
        return None
    return sparse.hstack(blocks, format="csr")


def _tfidf(vectorizer: Any, text: list[str]) -> Any:
    """Word 1-2-grams seen in at least two rows, tf-idf weighted (sublinear): a vocabulary
    learnt from the texts alone (no label), so that the model has a few thousand columns, not
    a hashed 2^18 — on glycowork's 9 k glycans the same folds take 3 s, not 117 s, and flag
    with better precision. Texts whose every word is unique keep all their words."""
    words = {"ngram_range": (1, 2), "token_pattern": r"(?u)\b\w+\b", "sublinear_tf": True}
    try:
        return vectorizer(min_df=2, max_features=_VOCABULARY, **words).fit_transform(text)
    except ValueError:  # no word in two rows (or no word at all)
        try:
            return vectorizer(max_features=_VOCABULARY, **words).fit_transform(text)
        except ValueError:
            return None


def _groups(ctx: AuditContext, rows: pl.Series) -> list[Any]:
    """Each scored row's fold group: the ``--group`` value, else its normalised input's hash
    (a row without a key is its own group). Without ``--text`` or ``--key`` every row is its
    own group: nothing says two rows are one example, and equal feature values are not (two
    glycans of one phylum; grouped, a fold would hold out a whole phylum and the model never
    see it)."""
    opts = ctx.options
    if opts.group:
        g = as_text(ctx.data.values[opts.group]).gather(rows).cast(pl.String)
        return g.fill_null(pl.format("\x00{}", rows.cast(pl.String))).to_list()
    if not opts.key_columns():
        return [f"\x00{r}" for r in rows.to_list()]
    keyed = ctx.table("key_hashes").select("row", pl.col("h").cast(pl.String))
    frame = rows.to_frame("row").join(keyed, on="row", how="left", maintain_order="left")
    return frame.select(pl.col("h").fill_null(pl.format("\x00{}", "row"))).to_series().to_list()


@RULES.table("label_scores")
def label_scores_table(ctx: AuditContext) -> ScoredLabels:
    """Per ``--label`` column: the scored rows (``row, record, split`` and the label) and what
    confident learning says about them (:class:`LabelIssues`), from ``--pred-probs`` or the
    built-in model; the labels not scored, and why. Rows without a label are not scored.

    Why at most :data:`MAX_CLASSES` classes for the built-in model: a label of thousands of
    classes (a species name) has a handful of rows per class, too few for a per-class
    threshold to mean anything, and the fit's cost grows with rows × classes (3,000 species
    of glycowork's table: minutes, for nothing). Your own probabilities have no such limit."""
    opts = ctx.options
    source = opts.label_issue_source(built_in=True)
    if source == "file" and len(opts.label) != 1:
        raise UsageError(
            f"--pred-probs scores one label column; {len(opts.label)} are declared "
            f"({', '.join(opts.label)}): give one --label"
        )
    out: dict[str, tuple[pl.DataFrame, LabelIssues]] = {}
    skipped: dict[str, str] = {}
    every = columns(ctx.data, [], valid=False)
    for label in opts.label:
        frame = columns(ctx.data, [label]).filter(pl.col(value(label)).is_not_null())
        if frame.height < 2:
            continue
        col = frame[value(label)]
        multi = isinstance(col.dtype, pl.List | pl.Array)
        labels = col.cast(pl.List(pl.String)).to_list() if multi else col.cast(pl.String).to_list()
        if source == "file":
            ids = every["record"].cast(pl.String).to_list()
            rows = frame["row"].to_numpy()
            issues = score_from_file(opts, labels, rows, ids, label, multi_label=multi)
        else:
            classes = class_order(labels)
            if len(classes) < 2:
                continue
            if len(classes) > MAX_CLASSES:
                skipped[label] = (
                    f"{len(classes):,} classes, more than the built-in model's {MAX_CLASSES}: "
                    "give --pred-probs from your own model"
                )
                continue
            features = _features(ctx.data, opts, frame["row"])
            if features is None:
                skipped[label] = "no --text and no usable feature column for the built-in model"
                continue
            groups = _groups(ctx, frame["row"])
            if len(set(groups)) < 2:
                skipped[label] = "every row in one group: no fold scores a row out of sample"
                continue
            probs = cross_val_pred_probs(
                features,
                labels,
                classes,
                groups=groups,
                folds=opts.label_folds,
                seed=opts.seed,
                multi_label=multi,
                c=_C,
            )
            issues = score_labels(labels, probs, classes, multi_label=multi)
        out[label] = (frame.select("row", "record", "split", value(label)), issues)
    return ScoredLabels(out, skipped, "pred-probs" if source == "file" else "built-in model")


@RULES.rule(
    "TB302",
    "label-issue",
    category="label",
    severity="warning",
    fix="always",
    unsafe=True,
    needs=("labels", "label_scores"),
    fix_once=True,
)
def label_issue(data: TableView, ctx: AuditContext) -> pl.DataFrame:
    """A row's label is unlikely given everything else in the table: confident learning
    (cleanlab's ``find_label_issues``) flags it from out-of-sample predicted probabilities.

    The corrupted label that breaks no other rule — no duplicate with another label, no
    contradiction — is the commonest kind, and a model trained on it learns the error. The
    probabilities are your model's (``--pred-probs``: then the flagged set is exactly
    cleanlab's on them) or the built-in model's (``--label-model auto``: a regularised logistic
    regression on hashed n-grams of ``--text`` and the ``--features`` columns, 5-fold and
    seeded, the folds grouped by ``--group`` or the normalised input so that one input is never
    scored by a model fitted on its copy). Each flagged row carries its label quality score (0
    worst .. 1 best; the probability of its given label), the label the model predicts and its
    rank among the flagged, worst first; the summary gives each class's estimated noise and the
    label health score. A flag is a suspicion to review, not a proof: hence a warning.

    Fix (unsafe: it trusts a model over the annotator, so only with ``--unsafe-fixes``): set
    the predicted label (``--label-fix relabel``, the default) or leave the row out
    (``--label-fix drop``); the changelog keeps the score."""
    opts = ctx.options
    source = "pred-probs" if opts.pred_probs is not None else "built-in model"
    parts = [
        label_issue_findings(frame, value(label), label, issues, source, fix=opts.label_fix)
        for label, (frame, issues) in ctx.table("label_scores").scored.items()
    ]
    return concat_outputs(parts).sort("row", "field")


__all__ = ["feature_columns", "label_issue", "label_scores_table"]
