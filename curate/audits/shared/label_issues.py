"""Label issues by confident learning: records whose given label is simply unlikely.

Every other label rule checks the label against something curate can see (a taxonomy, a
duplicate with another label, a generator). The commonest corruption contradicts nothing: a
bacterial glycan filed under Animalia, a fake clip labelled real. Confident learning
(Northcutt, Jiang and Chuang, JAIR 2021) finds those from *out-of-sample* predicted
probabilities: it estimates the joint distribution of given and true labels per class (the
confident joint, with per-class thresholds, so a model that is under-confident on a rare class
does not drown it) and flags the records the joint says are mislabelled. cleanlab is that
method's reference implementation; this module is a thin, typed layer over it, never a
re-implementation:

* :func:`score_labels` — given labels and predicted probabilities, cleanlab's own
  ``find_label_issues`` (the flagged set) and ``get_label_quality_scores`` (the rank), the
  per-class noise of ``rank_classes_by_label_quality`` and the dataset's
  ``overall_label_health_score``; multi-label sets (a glycan found in two kingdoms is a fact)
  go through cleanlab's multi-label functions.
* :func:`cross_val_pred_probs` — the built-in model for a family that can describe its records
  as features: K-fold (seeded, grouped so that one key never sits in the fitting and the
  scored fold), a regularised logistic regression per fold, every record scored by the fold
  that never saw it.
* :func:`read_pred_probs` — the user's own out-of-sample probabilities (parquet, CSV, ``.npy``,
  ``.npz``), checked against the records' ids and the label set, each mismatch one line.

May import: ``curate.core`` and ``curate.io``; nothing family-specific. cleanlab and
scikit-learn are imported inside the functions: ``curate --help`` never pays for them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from curate.core.errors import InputError

if TYPE_CHECKING:
    from curate.core.findings import Report
    from curate.core.rules import Rule

__all__ = [
    "MAX_CLASSES",
    "LabelIssues",
    "ScoredLabels",
    "class_order",
    "cross_val_pred_probs",
    "label_issue_findings",
    "label_issue_plots",
    "read_pred_probs",
    "score_from_file",
    "score_labels",
    "summarise_label_issues",
]

#: Most classes a built-in model scores (see the table family's ``label_scores``).
MAX_CLASSES = 200
#: Epochs of the built-in model's solver at most (it stops at a tolerance long before).
MAX_ITER = 300


def _model(kind: Any, c: float, *, binary: bool = False) -> Any:
    """The built-in model: a logistic regression fitted to a tolerance of 1e-3, by SAG
    (stochastic average gradient) unless ``binary``. On glycowork's 9 k single-kingdom
    glycans (tf-idf of word 1-2-grams, C=10, 5 folds) SAG fits in 1.0 s where lbfgs takes
    101 s (47 s at the same tolerance),
    flagging the same flips (precision 0.47, recall 0.95 both): the out-of-sample
    probabilities need not be more exact than confident learning's thresholds read them.

    ``binary`` (one class against the rest, a multi-label set's fit per class): liblinear's
    dual coordinate descent instead. Why: one-vs-rest fits a model per class and fold (the
    glycan sample's Kingdom and Domain: 106 fits), and SAG took ~110 epochs for each; on the
    glycan sample the whole audit went from 5.4 s to 1.9 s (warm). liblinear also penalises the
    intercept, which moves a few borderline scores: bench/bench_label_issues_glycan.py
    measures the flagged sets against injected flips either way."""
    if binary:
        return kind(C=c, solver="liblinear", tol=1e-3, max_iter=MAX_ITER, random_state=0)
    return kind(C=c, solver="sag", tol=1e-3, max_iter=MAX_ITER, random_state=0)


#: How far a row of single-label probabilities may sum from 1 (float32 outputs, rounding in CSV).
SUM_TOLERANCE = 1e-3


@dataclass(frozen=True)
class LabelIssues:
    """What confident learning says about a set of labels.

    ``rows``: one row per scored record, in the caller's order — ``position`` (index into the
    labels given), ``given`` and ``predicted`` (class names; for multi-label sets the classes
    joined by ``|`` in class order), ``score`` (cleanlab's label quality score, 0 worst .. 1
    best), ``issue`` (in cleanlab's flagged set) and ``rank`` (1 = worst score among the
    flagged, null for unflagged rows).
    ``per_class``: ``class, rows, issues, noise, quality`` — ``noise`` is cleanlab's estimated
    share of the rows given that class whose true class is another (from the confident joint),
    ``quality`` its label quality score for the class.
    ``health``: cleanlab's overall label health score (1 - the estimated share of wrong
    labels)."""

    rows: pl.DataFrame
    classes: list[str]
    per_class: pl.DataFrame
    health: float
    multi_label: bool = False

    @property
    def flagged(self) -> pl.DataFrame:
        """The flagged rows, worst first."""
        return self.rows.filter("issue").sort("rank")

    def matrix(self) -> pl.DataFrame:
        """``given, predicted, rows``: the flagged records counted by given and suggested label
        (the HTML report's given-vs-suggested matrix)."""
        return (
            self.rows.filter("issue")
            .group_by("given", "predicted")
            .len("rows")
            .sort("rows", "given", "predicted", descending=[True, False, False])
        )

    def summary(self) -> dict[str, Any]:
        """JSON-ready: the health score, how many flagged, per-class estimated noise."""
        return {
            "method": "confident learning (cleanlab find_label_issues, self-confidence scores)",
            "multi_label": self.multi_label,
            "records": self.rows.height,
            "flagged": int(self.rows["issue"].sum()),
            "label_health": round(self.health, 6),
            "classes": [
                {k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()}
                for r in self.per_class.iter_rows(named=True)
            ],
        }


@dataclass(frozen=True)
class ScoredLabels:
    """A family's label scores: per label, the scored rows (``row, record, split`` and the
    label) with their :class:`LabelIssues`; the labels not scored and why; where the
    probabilities came from (``pred-probs`` or ``built-in model``)."""

    scored: dict[str, tuple[pl.DataFrame, LabelIssues]]
    skipped: dict[str, str]
    source: str


def class_order(labels: Sequence[Any], declared: Sequence[str] | None = None) -> list[str]:
    """The classes in the order probabilities are given: ``declared`` when the user says, else
    the label set sorted (scikit-learn's and cleanlab's convention for integer-coded labels).
    A label missing from a declared order is an error the caller reports."""
    if declared:
        return [str(c) for c in declared]
    seen: set[str] = set()
    for v in labels:
        if v is None:
            continue
        for c in v if isinstance(v, list | tuple) else [v]:
            seen.add(str(c))
    return sorted(seen)


def _encode(
    labels: Sequence[Any], classes: Sequence[str], multi_label: bool
) -> np.ndarray | list[list[int]]:
    index = {c: i for i, c in enumerate(classes)}
    if multi_label:
        return [sorted({index[str(c)] for c in v}) for v in labels]
    return np.fromiter((index[str(v)] for v in labels), dtype=np.int64, count=len(labels))


def score_labels(
    labels: Sequence[Any],
    pred_probs: np.ndarray,
    classes: Sequence[str],
    *,
    multi_label: bool = False,
    filter_by: str = "prune_by_noise_rate",
) -> LabelIssues:
    """Confident learning on ``labels`` (class names, or lists of them when ``multi_label``)
    and ``pred_probs`` (rows aligned with ``labels``, columns with ``classes``; out of sample).

    The flagged set is exactly cleanlab's ``find_label_issues(labels, pred_probs,
    filter_by=...)`` (its default, ``prune_by_noise_rate``); the scores are
    ``get_label_quality_scores`` (self-confidence: the probability of the given label). A class
    the labels never use keeps its column (the model may still predict it)."""
    with warnings.catch_warnings():
        # "may not flag all label issues in class k, it has too few examples": the per-class
        # counts in the summary say which classes are that small
        warnings.simplefilter("ignore", UserWarning)
        return _score_labels(labels, pred_probs, classes, multi_label, filter_by)


def _score_labels(
    labels: Sequence[Any],
    pred_probs: np.ndarray,
    classes: Sequence[str],
    multi_label: bool,
    filter_by: str,
) -> LabelIssues:
    from cleanlab import dataset as cl_dataset
    from cleanlab import filter as cl_filter
    from cleanlab import rank as cl_rank

    classes = [str(c) for c in classes]
    probs = np.ascontiguousarray(pred_probs, dtype=np.float64)
    y = _encode(labels, classes, multi_label)
    n = len(labels)
    if multi_label:
        from cleanlab.multilabel_classification import filter as ml_filter
        from cleanlab.multilabel_classification import rank as ml_rank

        assert isinstance(y, list)  # _encode: lists of class indices when multi-label

        issue = np.asarray(
            ml_filter.find_label_issues(y, probs, filter_by=filter_by, n_jobs=1), bool
        )
        score = np.asarray(ml_rank.get_label_quality_scores(y, probs), float)
        # cleanlab's overall_multilabel_health_score (1 - the share its default filter flags),
        # without the process pool that function forks (it takes no n_jobs)
        default = (
            issue
            if filter_by == "prune_by_noise_rate"
            else np.asarray(ml_filter.find_label_issues(y, probs, n_jobs=1), bool)
        )
        health = 1.0 - float(default.mean()) if n else 1.0
        shown = [np.flatnonzero(p >= 0.5).tolist() for p in probs]
        predicted = ["|".join(classes[c] for c in s) for s in shown]
        given = ["|".join(classes[c] for c in s) for s in y]
        per_class = _per_class_multilabel(y, probs, classes)
    else:
        from cleanlab.count import compute_confident_joint

        assert isinstance(y, np.ndarray)  # _encode: one class index a row

        # the confident joint once: find_label_issues, the health score and the per-class
        # table each compute this same matrix (with the same defaults) when not given it
        joint = compute_confident_joint(y, probs)
        # n_jobs=1: cleanlab's pool forks, and a fork of a process whose polars and BLAS
        # threads hold locks can hang (it did, in the test suite); the result is the same
        issue = np.asarray(
            cl_filter.find_label_issues(
                y, probs, filter_by=filter_by, n_jobs=1, confident_joint=joint
            ),
            bool,
        )
        score = np.asarray(cl_rank.get_label_quality_scores(y, probs), float)
        health = float(
            cl_dataset.overall_label_health_score(y, probs, confident_joint=joint, verbose=False)
        )
        top = probs.argmax(axis=1)
        predicted = [classes[i] for i in top]
        given = [classes[i] for i in y]
        ranked = cl_dataset.rank_classes_by_label_quality(y, probs, confident_joint=joint)
        per_class = pl.DataFrame(
            {
                "class": [classes[int(i)] for i in ranked["Class Index"]],
                "rows": [int((y == int(i)).sum()) for i in ranked["Class Index"]],
                "issues": [int(v) for v in ranked["Label Issues"]],
                "noise": [float(v) for v in ranked["Label Noise"]],
                "quality": [float(v) for v in ranked["Label Quality Score"]],
            }
        ).sort("noise", "class", descending=[True, False])
    rows = pl.DataFrame(
        {
            "position": np.arange(n, dtype=np.int64),
            "given": pl.Series(given, dtype=pl.String),
            "predicted": pl.Series(predicted, dtype=pl.String),
            "score": score,
            "issue": issue,
        }
    )
    # worst first among the flagged: the order a reviewer works through them
    order = rows.filter("issue").sort("score", "position").with_row_index("rank", offset=1)
    rows = rows.join(
        order.select("position", pl.col("rank").cast(pl.Int64)), on="position", how="left"
    ).sort("position")
    return LabelIssues(rows, classes, per_class, health, multi_label)


def _per_class_multilabel(
    y: list[list[int]], probs: np.ndarray, classes: list[str]
) -> pl.DataFrame:
    """Per class of a multi-label set: rows holding it, and the share cleanlab's per-class
    one-vs-rest estimate calls wrong (rows whose membership in the class is flagged) — the
    figures of cleanlab's ``rank_classes_by_multilabel_quality``, computed from its
    ``find_multilabel_issues_per_class`` with ``n_jobs=1``: the ranking function takes no
    ``n_jobs`` and forks a process pool on Linux (workers that inherit curate's signal
    handlers, and a fork of a threaded process can hang)."""
    from cleanlab.multilabel_classification.filter import find_multilabel_issues_per_class

    n = len(y)
    onehot = np.zeros((n, len(classes)), dtype=bool)
    for r, s in enumerate(y):
        onehot[r, s] = True
    flagged = np.asarray(find_multilabel_issues_per_class(y, probs, n_jobs=1), bool)
    out = []
    for i, name in enumerate(classes):
        issues = int((onehot[:, i] & flagged[:, i]).sum())
        noise = issues / n if n else 0.0
        out.append(
            {
                "class": name,
                "rows": int(onehot[:, i].sum()),
                "issues": issues,
                "noise": noise,
                "quality": 1.0 - noise,
            }
        )
    return pl.DataFrame(out).sort("noise", "class", descending=[True, False])


def cross_val_pred_probs(
    features: Any,
    labels: Sequence[Any],
    classes: Sequence[str],
    *,
    groups: Sequence[Any] | None = None,
    folds: int = 5,
    seed: int = 0,
    multi_label: bool = False,
    c: float = 1.0,
) -> np.ndarray:
    """Out-of-sample predicted probabilities of a regularised logistic regression on
    ``features`` (a scipy sparse or numpy matrix, one row per label), K-fold and seeded.

    Why grouped folds: a record scored by a model that was fitted on its own copy (the same
    glycan under another species, the same text in another row) is not out of sample — its
    given label comes back as the prediction and a wrong label hides behind its twin. With
    ``groups`` (a canonical key, a declared group) every group sits in exactly one fold
    (``StratifiedGroupKFold``). A class absent from a fold's fitting rows gets probability 0
    there. Multi-label: one-vs-rest, a probability per class."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import GroupKFold, KFold, StratifiedGroupKFold, StratifiedKFold

    classes = [str(k) for k in classes]
    y = _encode(labels, classes, multi_label)
    n = len(labels)
    k = len(classes)
    folds = max(2, min(folds, n))
    out = np.zeros((n, k), dtype=np.float64)
    target: np.ndarray
    if multi_label:
        target = np.zeros((n, k), dtype=np.int8)
        for r, s in enumerate(y):
            target[r, s] = 1
        strat = None
    else:
        assert isinstance(y, np.ndarray)  # _encode: one class index a row
        target = y
        strat = y
    if groups is not None:
        g = pl.Series("g", list(groups)).cast(pl.String).fill_null("").to_numpy()
        ngroups = len(set(g))
        folds = min(folds, ngroups)
        # stratified only where some class has a row for every fold (what scikit-learn's
        # splitter requires; a table of a few rows has none), as without groups below
        if strat is not None and np.bincount(strat).max() >= folds:
            splitter = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)
            splits = splitter.split(np.zeros(n), strat, g)
        else:
            splits = GroupKFold(n_splits=folds, shuffle=True, random_state=seed).split(
                np.zeros(n), groups=g
            )
    elif strat is not None and np.bincount(strat).max() >= folds:
        splits = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed).split(
            np.zeros(n), strat
        )
    else:
        splits = KFold(n_splits=folds, shuffle=True, random_state=seed).split(np.zeros(n))

    def one(fit: np.ndarray, score: np.ndarray) -> None:
        if multi_label:
            for j in range(k):
                col = target[fit, j]
                if col.min() == col.max():  # one value in the fitting rows: that value
                    out[score, j] = float(col[0])
                    continue
                m = _model(LogisticRegression, c, binary=True)
                m.fit(features[fit], col)
                out[score, j] = m.predict_proba(features[score])[:, 1]
            return
        present = np.unique(target[fit])
        if len(present) == 1:
            out[score, present[0]] = 1.0
            return
        m = _model(LogisticRegression, c)
        m.fit(features[fit], target[fit])
        out[np.ix_(score, m.classes_)] = m.predict_proba(features[score])

    # the folds in threads: each fold writes its own rows of ``out``, and the fit's sparse
    # products and numpy work release the GIL
    from concurrent.futures import ThreadPoolExecutor

    from curate.core.engine import available_cores

    with warnings.catch_warnings():
        # "the least populated class has only N members": a rare class is still scored (by
        # the folds that hold it), and the summary's per-class counts say how rare it is
        warnings.simplefilter("ignore", UserWarning)
        folds_ = list(splits)
        # one BLAS thread per fold: the folds already use the cores, and BLAS threads on top
        # of them oversubscribe a small machine (a glycan fit took 25 s instead of 1.5 s)
        from threadpoolctl import threadpool_limits

        with (
            threadpool_limits(limits=1),
            ThreadPoolExecutor(max(1, min(available_cores(), folds))) as pool,
        ):
            list(pool.map(lambda fs: one(*fs), folds_))
    return out


def read_pred_probs(
    path: str | Path,
    ids: Sequence[str],
    classes: Sequence[str],
    *,
    multi_label: bool = False,
    declared: bool = False,
    superset: bool = False,
) -> np.ndarray:
    """The user's predicted probabilities at ``path``, one row per id of ``ids`` in that order,
    one column per class of ``classes``.

    Formats: parquet or CSV with an ``id`` column and either one column per class (named by
    the class; any order, extra classes ignored) or one list column (in ``classes`` order, the
    order the user declared or the label set sorted); ``.npz`` with ``pred_probs`` and
    optionally ``ids`` and ``classes``; ``.npy`` rows in the records' order. Checked, each
    mismatch one line naming the file and the first offending id: every record has a row,
    no id twice, no id the dataset lacks, every label a column, every value a probability
    (finite, 0..1; a single-label row summing to 1 within :data:`SUM_TOLERANCE`). With
    ``superset`` (a fix's re-audit) the file may have ids the dataset lacks: the records the
    fix dropped."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file (--pred-probs)", path=p)
    classes = [str(c) for c in classes]
    suffix = p.suffix.lower()
    file_ids: list[str] | None = None
    ignored: list[str] = []  # a file's class columns no label of the data has
    try:
        if suffix == ".npy":
            probs = np.load(p, allow_pickle=False)
            file_classes = None
        elif suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                if "pred_probs" not in z:
                    raise InputError("an .npz needs an array named pred_probs", path=p)
                probs = z["pred_probs"]
                file_ids = [str(v) for v in z["ids"]] if "ids" in z else None
                file_classes = [str(v) for v in z["classes"]] if "classes" in z else None
        elif suffix in (".parquet", ".csv", ".tsv"):
            frame = (
                pl.read_parquet(p)
                if suffix == ".parquet"
                else pl.read_csv(
                    p, separator="\t" if suffix == ".tsv" else ",", infer_schema_length=10_000
                )
            )
            probs, file_ids, file_classes = _from_frame(frame, classes, p)
            ignored = [c for c in frame.columns if c != "id" and c not in classes]
        else:
            raise InputError("--pred-probs takes .parquet, .csv, .tsv, .npy or .npz", path=p)
    except InputError:
        raise
    except Exception as e:  # a damaged file: numpy's or polars' reason, one line
        raise InputError(f"cannot read predicted probabilities ({e})", path=p) from None
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim != 2:
        raise InputError(
            f"predicted probabilities must be a matrix, got {probs.ndim} dimension(s)", path=p
        )
    if file_classes is not None:
        missing = [c for c in classes if c not in file_classes]
        if missing and not declared:
            raise InputError(
                f"label {missing[0]!r} has no column of probabilities "
                f"({len(missing)} label(s) missing; the file has {', '.join(file_classes[:8])})",
                path=p,
            )
        if not missing:
            at = {c: i for i, c in enumerate(file_classes)}
            probs = probs[:, [at[c] for c in classes]]
    if probs.shape[1] != len(classes):
        raise InputError(
            f"{probs.shape[1]} columns of probabilities for {len(classes)} classes "
            f"({', '.join(classes[:8])}{', ...' if len(classes) > 8 else ''})",
            path=p,
        )
    probs = _aligned(probs, file_ids, list(ids), p, superset=superset)
    _check_probabilities(probs, list(ids), p, multi_label, ignored)
    return probs


def score_from_file(
    opts: Any,
    labels: list[Any],
    rows: np.ndarray,
    record_ids: list[str],
    field: str,
    *,
    multi_label: bool = False,
) -> LabelIssues:
    """Confident learning on ``--pred-probs``, the same in every family: the classes in the
    declared order (``--pred-probs-classes``) or the label set sorted, a label outside a
    declared order one line, the file read for every record (``record_ids``, in row order:
    a file of another table fails on its first foreign id) and the scored ``rows`` taken."""
    classes = class_order(labels, opts.pred_probs_classes or None)
    unknown = sorted(set(class_order(labels)) - set(classes))
    if unknown:
        raise InputError(
            f"label {unknown[0]!r} is not among --pred-probs-classes",
            path=opts.pred_probs,
            field=field,
        )
    probs = read_pred_probs(
        opts.pred_probs,
        record_ids,
        classes,
        multi_label=multi_label,
        declared=bool(opts.pred_probs_classes),
        superset=bool(getattr(opts, "probs_of_a_superset", False)),
    )
    return score_labels(labels, probs[rows], classes, multi_label=multi_label)


def _from_frame(
    frame: pl.DataFrame, classes: list[str], p: Path
) -> tuple[np.ndarray, list[str], list[str] | None]:
    if "id" not in frame.columns:
        raise InputError("needs an 'id' column naming each record", path=p, field="id")
    ids = frame["id"].cast(pl.String).to_list()
    lists = [c for c in frame.columns if isinstance(frame.schema[c], pl.List | pl.Array)]
    if lists:
        col = frame[lists[0]].cast(pl.List(pl.Float64))
        lengths = col.list.len()
        if lengths.n_unique() > 1 or lengths.null_count():
            bad = int((lengths != lengths.mode()[0]).fill_null(True).arg_max() or 0)
            raise InputError(
                "rows of the probability list differ in length",
                path=p,
                record=ids[bad],
                field=lists[0],
            )
        # list(): the rows as a sequence of arrays, which is what vstack is declared to take
        rows = list(col.to_numpy())
        return np.vstack(rows) if col.len() else np.zeros((0, 0)), ids, None
    names = [c for c in frame.columns if c != "id"]
    for c in names:
        if not frame.schema[c].is_numeric():
            raise InputError(f"column {c!r} is not numeric", path=p, field=c)
    wanted = [c for c in names if c in classes]
    missing = [c for c in classes if c not in names]
    if missing:
        raise InputError(
            f"label {missing[0]!r} has no column of probabilities ({len(missing)} label(s) "
            f"missing; columns: {', '.join(names[:8])})",
            path=p,
        )
    return frame.select(wanted).to_numpy(), ids, wanted


def _aligned(
    probs: np.ndarray, file_ids: list[str] | None, ids: list[str], p: Path, *, superset: bool
) -> np.ndarray:
    if file_ids is None:
        if probs.shape[0] != len(ids):
            raise InputError(
                f"{probs.shape[0]} rows of probabilities for {len(ids)} records (rows without "
                "ids are taken in the records' order)",
                path=p,
            )
        return probs
    at: dict[str, int] = {}
    for i, v in enumerate(file_ids):
        if v in at:
            raise InputError("id given twice", path=p, record=v, field="id")
        at[v] = i
    wanted = set(ids)
    extra = None if superset else next((v for v in file_ids if v not in wanted), None)
    if extra is not None:
        raise InputError(
            "id not in the dataset (probabilities of another table?)",
            path=p,
            record=extra,
            field="id",
        )
    missing = next((v for v in ids if v not in at), None)
    if missing is not None:
        raise InputError(
            "record has no predicted probabilities", path=p, record=missing, field="id"
        )
    return probs[[at[v] for v in ids]]


def _check_probabilities(
    probs: np.ndarray, ids: list[str], p: Path, multi_label: bool, ignored: Sequence[str] = ()
) -> None:
    bad = ~np.isfinite(probs).all(axis=1) | (probs < 0).any(axis=1) | (probs > 1).any(axis=1)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise InputError(
            "values are not probabilities (each in 0..1)", path=p, record=ids[r], field="pred_probs"
        )
    if not multi_label:
        off = np.abs(probs.sum(axis=1) - 1.0) > SUM_TOLERANCE
        if off.any():
            r = int(np.flatnonzero(off)[0])
            # a column of a class the data has no label of holds the rest (a new-user review:
            # the message guessed at multi-label and softmax instead of naming it)
            why = (
                f"column {ignored[0]!r} is no label of the data, and its probabilities are left out"
                if ignored
                else "a multi-label file? scores not passed through softmax?"
            )
            raise InputError(
                f"probabilities sum to {probs[r].sum():.4g}, not 1 ({why})",
                path=p,
                record=ids[r],
                field="pred_probs",
            )


def summarise_label_issues(
    report: Any,
    scores: dict[str, LabelIssues],
    source: str,
    skipped: dict[str, str] | None = None,
) -> None:
    """Put each scored label's summary in ``report.stats["label_issues"]`` (the JSON report and
    the dataset card read it) and one headline sentence per label (text, Markdown, HTML); a
    label not scored says why, so that no one reads its silence as a clean bill."""
    from curate.core.findings import Headline

    if not scores and not skipped:
        return
    stats: dict[str, Any] = {
        label: {**s.summary(), "source": source} for label, s in scores.items()
    }
    for label, why in (skipped or {}).items():
        stats[label] = {"skipped": why, "source": source}
        report.headlines.append(
            Headline(f"Label issues in {label} not scored: {why}", label="label issues")
        )
    report.stats["label_issues"] = stats
    for label, s in scores.items():
        flagged = int(s.rows["issue"].sum())
        text = (
            f"Label issues in {label} (confident learning, {source}): {flagged:,} of "
            f"{s.rows.height:,} labels flagged; label health {s.health:.3f}"
        )
        if s.per_class.height and s.per_class["noise"][0] > 0:
            worst = s.per_class.row(0, named=True)
            text += f"; noisiest class {worst['class']} (est. {worst['noise']:.0%} wrong)"
        report.headlines.append(Headline(text, label="label issues"))


def label_issue_plots(report: Report, rules: Iterable[Rule]) -> list[Any]:
    """Per label field with flagged records, the given-vs-suggested matrix (the HTML report):
    which labels the model would swap for which.

    Drawn from the report's findings of the label-issue rules among ``rules`` (those that read
    the ``label_scores`` table; their details carry
    ``given_label`` and ``predicted_label``), not from the audit's scores: the report page is
    drawn after the audit, whose context (and the fitted model's scores in it) is gone, and
    refitting a model to draw a picture would double the audit's time. A finding carried up a
    hierarchy (``details.implied_by``) is not in the matrix: the model did not flag it there."""
    from curate.core.plots import MAX_BARS, Plot, count_matrix

    codes = [r.code for r in rules if "label_scores" in r.needs]
    f = report.findings.filter(pl.col("rule").is_in(codes))
    if f.is_empty():
        return []
    details = pl.col("details").cast(pl.String)
    m = (
        f.select(
            pl.col("field").fill_null("label"),
            details.str.json_path_match("$.given_label").fill_null("").alias("given"),
            details.str.json_path_match("$.predicted_label").fill_null("").alias("predicted"),
            details.str.json_path_match("$.implied_by").alias("implied_by"),
        )
        .filter(pl.col("implied_by").is_null())
        .group_by("field", "given", "predicted")
        .len("rows")
    )
    out = []
    for field in sorted(m["field"].unique().to_list()):
        one = m.filter(pl.col("field") == field)
        rows = _top(one, "given", MAX_BARS)
        cols = _top(one, "predicted", MAX_BARS)
        counts = {(g, p): n for _, g, p, n in one.iter_rows()}
        fig = count_matrix(rows, cols, counts, xlabel="suggested label", ylabel="given label")
        out.append(
            Plot(
                f"Label issues in {field}: given vs suggested",
                f"The {int(one['rows'].sum()):,} labels confident learning flags, counted by "
                "their given label (rows) and the label the model predicts (columns).",
                fig,
            )
        )
    return out


def _top(m: pl.DataFrame, by: str, n: int) -> list[str]:
    """The ``n`` values of column ``by`` with the most flagged rows (ties by name)."""
    top = m.group_by(by).agg(pl.col("rows").sum()).sort("rows", by, descending=[True, False])
    return top[by].head(n).to_list()


def label_issue_findings(
    frame: pl.DataFrame,
    column: str,
    field: str,
    issues: LabelIssues,
    source: str,
    *,
    fix: str = "relabel",
) -> pl.DataFrame:
    """The findings of a label-issue rule, one per flagged row, the same in every family:
    ``frame`` holds the scored rows in the order they were scored (``row``, ``record``,
    ``split`` and the label under ``column``), ``field`` is the label's name in the data.

    Details use cleanlab's vocabulary (``given_label``, ``predicted_label``, ``label_score``)
    and the rank among the flagged (1 = worst). The fix edit (the rule is unsafe) sets the
    predicted label, in the column's own type (the integer 3, not the text "3"), or drops
    the row (``fix="drop"``); its reason carries the score for the changelog. A multi-label
    row whose model predicts no label at all gets no relabel."""
    from curate.core.findings import finding_frame, json_struct

    scored = pl.concat([frame, issues.rows.drop("position")], how="horizontal").filter("issue")
    originals = _originals(frame[column])
    new = pl.col("predicted")
    if originals is not None:
        new = new.replace_strict(originals, default=None, return_dtype=frame[column].dtype)
    elif issues.multi_label:
        new = new.str.split("|")
    reason = pl.format(
        "label issue (confident learning): quality {}, predicted {}",
        pl.col("score").round(4),
        "predicted",
    )
    if fix == "drop":
        edit = json_struct(pl.lit("drop").alias("op"), reason.alias("reason"))
    else:
        edit = pl.when(pl.col("predicted") != "").then(
            json_struct(
                pl.lit("set").alias("op"),
                pl.lit(field).alias("field"),
                pl.col(column).alias("old"),
                new.alias("new"),
                reason.alias("reason"),
            )
        )
    return finding_frame(
        scored,
        field=pl.lit(field),
        message=pl.format(
            "label {} is unlikely (quality {}, rank {} of {}); the model predicts {}",
            pl.col("given"),
            pl.col("score").round(3),
            "rank",
            pl.lit(scored.height),
            pl.when(pl.col("predicted") != "").then("predicted").otherwise(pl.lit("no label")),
        ),
        details=json_struct(
            pl.col("given").alias("given_label"),
            pl.col("predicted").alias("predicted_label"),
            pl.col("score").alias("label_score"),
            pl.col("rank"),
            pl.col("split"),
            pl.lit(source).alias("source"),
        ),
        fix=edit,
    )


def _originals(col: pl.Series) -> dict[str, Any] | None:
    """The label column's values by their text (what a relabel writes is the column's own
    value); None for a text or list column."""
    if col.dtype == pl.String or isinstance(col.dtype, pl.List | pl.Array):
        return None
    distinct = col.unique().drop_nulls()
    return dict(zip(distinct.cast(pl.String).to_list(), distinct.to_list(), strict=True))
