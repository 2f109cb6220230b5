"""Labels (DF101-DF105): generator against label, audio-visual label against label and
modality, and labels confident learning calls unlikely given the user's model (DF105)."""

from __future__ import annotations

import polars as pl

from curate.audits.deepfake.registry import RULES, file_of, valid
from curate.audits.shared.label_issues import (
    LabelIssues,
    label_issue_findings,
    score_from_file,
)
from curate.core.findings import concat_outputs, finding_frame, json_struct
from curate.core.rules import AuditContext
from curate.schemas.deepfake import NO_GENERATOR
from curate.schemas.deepfake_tables import DeepfakeData


def _generator() -> pl.Expr:
    """The generator, with the placeholders manifests write for "none" read as none."""
    g = pl.col("generator").cast(pl.String)
    return pl.when(g.str.to_lowercase().is_in(list(NO_GENERATOR))).then(None).otherwise(g)


@RULES.rule("DF101", "real-with-generator", category="label", severity="error")
def real_with_generator(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A row labelled real names a generator (``none``, ``n/a``, ``-``, ``real``, ``original``
    and ``bonafide`` count as no generator).

    Either the label or the generator is wrong: a real sample was not generated, and a
    detector trained on it learns the wrong class for that generator's artefacts. Nothing in
    the manifest says which of the two is right, so there is no fix.
    """
    rows = valid(data).filter((pl.col("label") == "real") & _generator().is_not_null())
    return finding_frame(
        rows,
        field=pl.lit("generator"),
        message=pl.format("labelled real but names generator {}", pl.col("generator")),
        details=json_struct(pl.col("generator").cast(pl.String), file_of(data).alias("file")),
    )


@RULES.rule("DF102", "fake-without-generator", category="label", severity="warning")
def fake_without_generator(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A row labelled fake names no generator, in a manifest that names generators elsewhere.

    Per-generator results (the tables every deepfake paper reports) and generator-disjoint
    splits cannot place the sample. A manifest with no generator column at all is not
    reported row by row (it simply does not carry the field).
    """
    rows = valid(data)
    if rows.select(_generator().is_not_null().any()).item() is not True:
        return finding_frame(rows.clear(), field=pl.lit(""), message=pl.lit(""), details=pl.lit(""))
    hit = rows.filter((pl.col("label") == "fake") & _generator().is_null())
    return finding_frame(
        hit,
        field=pl.lit("generator"),
        message=pl.lit("labelled fake but names no generator"),
        details=json_struct(pl.col("generator").cast(pl.String), file_of(data).alias("file")),
    )


#: (condition, reason) pairs that make an audio-visual label contradict the row.
def _av_contradictions() -> list[tuple[pl.Expr, str]]:
    av = pl.col("av_label").cast(pl.String)
    return [
        (
            (pl.col("label") == "real") & (av != "RA-RV"),
            "labelled real, so both audio and visual must be real (RA-RV)",
        ),
        ((pl.col("label") == "fake") & (av == "RA-RV"), "labelled fake, but RA-RV says all real"),
        (
            (pl.col("modality") == "audio") & av.is_in(["RA-FV", "FA-FV"]),
            "an audio-only sample has no visual part to be fake",
        ),
        (
            (pl.col("modality") == "image") & av.is_in(["FA-RV", "FA-FV"]),
            "an image has no audio part to be fake",
        ),
    ]


@RULES.rule("DF103", "av-label-contradiction", category="label", severity="error")
def av_label_contradiction(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The audio-visual label contradicts the label or the modality: real ⇔ RA-RV (a real
    sample has real audio and real visuals; a fake one has at least one fake part); an
    audio-only sample cannot have fake visuals (RA-FV, FA-FV); an image cannot have fake audio
    (FA-RV, FA-FV).

    Audio-visual detectors are trained and scored per part, so a contradiction is a wrong
    target for one of them. One finding per row, naming the first contradiction found. No fix:
    the manifest does not say which of the two fields is wrong.
    """
    rows = valid(data).filter(pl.col("av_label").is_not_null())
    parts = []
    seen = pl.lit(False)
    for cond, reason in _av_contradictions():
        hit = rows.filter(cond.fill_null(False) & ~seen.fill_null(False))
        seen = seen | cond.fill_null(False)
        parts.append(
            finding_frame(
                hit,
                field=pl.lit("av_label"),
                message=pl.format("av_label {}: {}", pl.col("av_label"), pl.lit(reason)),
                details=json_struct(
                    pl.col("av_label").cast(pl.String),
                    pl.col("label").cast(pl.String),
                    pl.col("modality").cast(pl.String),
                    file_of(data).alias("file"),
                ),
            )
        )
    return concat_outputs(parts)


def derived_av_label() -> pl.Expr:
    """The audio-visual label a row's label and modality imply, where only one is possible:
    real → RA-RV; a fake audio-only sample → FA-RV; a fake image → RA-FV; a fake video → none
    (its audio, its visuals or both may be fake)."""
    return (
        pl.when(pl.col("label") == "real")
        .then(pl.lit("RA-RV"))
        .when((pl.col("label") == "fake") & (pl.col("modality") == "audio"))
        .then(pl.lit("FA-RV"))
        .when((pl.col("label") == "fake") & (pl.col("modality") == "image"))
        .then(pl.lit("RA-FV"))
        .otherwise(pl.lit(None, pl.String))
    )


@RULES.rule("DF104", "av-label-missing", category="label", severity="info", fix="sometimes")
def av_label_missing(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A row has no audio-visual label in a manifest that gives one to other rows.

    Fix (safe, where the label and modality decide it): fill it in — a real sample is RA-RV,
    a fake audio-only sample FA-RV, a fake image RA-FV. A fake video has no fix (its audio,
    its visuals or both may be fake: a person must say which).
    """
    rows = valid(data)
    if not rows["av_label"].is_not_null().any():
        return finding_frame(rows.clear(), field=pl.lit(""), message=pl.lit(""), details=pl.lit(""))
    hit = rows.filter(pl.col("av_label").is_null()).with_columns(derived_av_label().alias("__av"))
    fix = pl.when(pl.col("__av").is_not_null()).then(
        json_struct(
            pl.lit("set").alias("op"),
            pl.lit("av_label").alias("field"),
            pl.lit(None, pl.String).alias("old"),
            pl.col("__av").alias("new"),
            pl.lit("audio-visual label derived from label and modality").alias("reason"),
        )
    )
    return finding_frame(
        hit,
        field=pl.lit("av_label"),
        message=pl.when(pl.col("__av").is_not_null())
        .then(pl.format("no av_label; label and modality say {}", pl.col("__av")))
        .otherwise(pl.lit("no av_label (a fake video: which part is fake is not derivable)")),
        details=json_struct(
            pl.col("label").cast(pl.String),
            pl.col("modality").cast(pl.String),
            pl.col("__av").alias("derived"),
            file_of(data).alias("file"),
        ),
        fix=fix,
    )


@RULES.table("label_scores")
def label_scores_table(ctx: AuditContext) -> tuple[pl.DataFrame, LabelIssues] | None:
    """The valid labelled rows (``row, record, split, label``) and what confident learning
    says about their labels, from ``--pred-probs`` (ids: the sample ids)."""
    opts = ctx.options
    data = ctx.data
    assert isinstance(data, DeepfakeData)
    frame = valid(data).filter(pl.col("label").is_not_null())
    frame = frame.select(
        "row", "record", pl.col("split").cast(pl.String), pl.col("label").cast(pl.String)
    )
    ids = data.rows["record"].cast(pl.String).to_list()
    rows = frame["row"].to_numpy()
    return frame, score_from_file(opts, frame["label"].to_list(), rows, ids, "label")


@RULES.rule(
    "DF105",
    "label-issue",
    category="label",
    severity="warning",
    fix="always",
    unsafe=True,
    needs=("label_scores",),
    fix_once=True,
)
def label_issue(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A sample's real/fake label is unlikely given your detector's out-of-sample predicted
    probabilities (``--pred-probs``): confident learning, exactly cleanlab's
    ``find_label_issues`` on them.

    A fake clip labelled real with no generator recorded breaks no other rule, and a detector
    trained on it learns to call that generator's artefacts real. curate ships no detector
    (that takes a deep model), so this check runs only on the probabilities you give, made by
    cross-validation on this set (in-sample probabilities hide exactly these errors). Each
    flagged row carries its label quality score, the predicted label and its rank (1 =
    worst). Fix (unsafe: it trusts the detector over the annotation, so only with
    ``--unsafe-fixes``): set the predicted label (``--label-fix relabel``) or leave the sample
    out (``--label-fix drop``); the changelog keeps the score."""
    frame, issues = ctx.table("label_scores")
    return label_issue_findings(
        frame, "label", "label", issues, "pred-probs", fix=ctx.options.label_fix
    )
