"""Manifest media metadata (DF110-DF111): values out of plausible bounds or of another modality.

These read the numbers the manifest *states*; whether they match the files is the media scan's
job (DF2xx).
"""

from __future__ import annotations

import polars as pl

from curate.audits.deepfake.registry import RULES, file_of, valid
from curate.core.findings import concat_outputs, finding_frame, json_struct
from curate.core.rules import AuditContext
from curate.schemas.deepfake_tables import DeepfakeData

#: Plausible ranges (inclusive) of the stated metadata. Why these: the largest common frame
#: (16K), the fastest consumer capture (240 fps), telephone to studio sample rates (4-384 kHz).
MAX_SIDE = 16384
MAX_FPS = 240.0
MIN_SAMPLE_RATE = 4000
MAX_SAMPLE_RATE = 384000


@RULES.rule("DF110", "metadata-out-of-bounds", category="integrity", severity="warning")
def metadata_out_of_bounds(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A stated duration, frame size, frame rate or sample rate is implausible: a duration of
    0 s or longer than ``--max-duration-s`` (4 h by default); a width or height of 0 or over
    16384 pixels; a frame rate of 0 or over 240 fps; a sample rate under 4 kHz or over 384 kHz.

    Such a value is a unit mix-up (milliseconds written as seconds, kHz as Hz), a default
    written for a failed probe, or a corrupt file's header; any filter or bucketing by length
    or resolution will misplace the sample. One finding per value.
    """
    rows = valid(data)
    limit = ctx.options.max_duration_s
    checks = [
        (
            "duration_s",
            (pl.col("duration_s") <= 0) | (pl.col("duration_s") > limit),
            f"duration {{}} s is outside (0, {limit:g}]",
        ),
        (
            "width",
            (pl.col("width") == 0) | (pl.col("width") > MAX_SIDE),
            f"width {{}} px is outside [1, {MAX_SIDE}]",
        ),
        (
            "height",
            (pl.col("height") == 0) | (pl.col("height") > MAX_SIDE),
            f"height {{}} px is outside [1, {MAX_SIDE}]",
        ),
        (
            "fps",
            (pl.col("fps") <= 0) | (pl.col("fps") > MAX_FPS),
            f"frame rate {{}} fps is outside (0, {MAX_FPS:g}]",
        ),
        (
            "sample_rate",
            (pl.col("sample_rate") < MIN_SAMPLE_RATE) | (pl.col("sample_rate") > MAX_SAMPLE_RATE),
            f"sample rate {{}} Hz is outside [{MIN_SAMPLE_RATE}, {MAX_SAMPLE_RATE}]",
        ),
    ]
    parts = []
    for f, cond, text in checks:
        hit = rows.filter(cond.fill_null(False))
        parts.append(
            finding_frame(
                hit,
                field=pl.lit(f),
                message=pl.format(text, pl.col(f)),
                details=json_struct(pl.col(f).alias("value"), file_of(data).alias("file")),
            )
        )
    return concat_outputs(parts)


@RULES.rule("DF111", "metadata-wrong-modality", category="consistency", severity="warning")
def metadata_wrong_modality(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A row states metadata its modality cannot have: an audio sample with a width, height or
    frame rate; an image with a duration, frame rate or sample rate.

    Usually the modality is wrong (a video filed as audio) or columns were shifted; either way
    modality-specific preprocessing will mishandle the sample. One finding per row, naming the
    fields.
    """
    rows = valid(data)
    visual = ["width", "height", "fps"]
    timed = ["duration_s", "fps", "sample_rate"]
    audio = rows.filter(pl.col("modality") == "audio").with_columns(
        pl.concat_list([pl.when(pl.col(c).is_not_null()).then(pl.lit(c)) for c in visual])
        .list.drop_nulls()
        .alias("__fields")
    )
    image = rows.filter(pl.col("modality") == "image").with_columns(
        pl.concat_list(
            [pl.when(pl.col(c).is_not_null() & (pl.col(c) != 0)).then(pl.lit(c)) for c in timed]
        )
        .list.drop_nulls()
        .alias("__fields")
    )
    parts = []
    for hit in (audio, image):
        hit = hit.filter(pl.col("__fields").list.len() > 0)
        parts.append(
            finding_frame(
                hit,
                field=pl.col("__fields").list.first(),
                message=pl.format(
                    "{} sample states {}", pl.col("modality"), pl.col("__fields").list.join(", ")
                ),
                details=json_struct(
                    pl.col("modality").cast(pl.String),
                    pl.col("__fields").alias("fields"),
                    file_of(data).alias("file"),
                ),
            )
        )
    return concat_outputs(parts)
