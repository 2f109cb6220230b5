"""Files and media (DF201-DF210): what the media files themselves say against the manifest.

The shared table :data:`FILES` runs the media scan (:func:`curate.io.media.scan_media`) once per
audit over every distinct file the valid rows name — each file's bytes hashed once, its real
kind read from its content, its metadata read with Pillow / soundfile / PyAV, results cached by
(path, size, mtime) — and joins the result back to the rows. Building it also hands the
computed hashes to the content table (:attr:`DeepfakeData.computed_hashes`), so the duplicate
and leakage rules (DF3xx) compare what the files hold, not what the manifest claims.
``--no-files`` opens nothing: the table is empty and the DF2xx rules report nothing.

Near-duplicate images (DF208-DF210) come from the 64-bit pHash the scan computes, paired by
:func:`curate.io.media.near_duplicate_pairs` (banded joins, no loop over pairs) and oriented
later copy vs earlier original by the shared near-duplicate manager
(:func:`curate.audits.shared.near.later_vs_earlier`, the content key's split order).
Byte-identical files are left to the exact-duplicate rules; here are the re-encoded, resized
and lightly cropped copies that an exact hash cannot see.
"""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl

from curate.audits.deepfake.registry import RULES, file_of
from curate.audits.shared.near import later_vs_earlier
from curate.core.findings import empty_rule_output, finding_frame, json_struct
from curate.core.rules import AuditContext
from curate.io.media import default_workers, input_cache, near_duplicate_pairs, scan_media
from curate.io.media_scan import EXTENSION_KINDS
from curate.schemas.deepfake import SPLIT_ORDER, DeepfakeOptions
from curate.schemas.deepfake_tables import CONTENT_KEYS, DeepfakeData

FILES = "files"
NEAR = "near_images"

#: Manifest fields compared with the file, and how far they may differ (absolute, relative).
METADATA_TOLERANCE: dict[str, tuple[float, float]] = {
    "width": (0.0, 0.0),
    "height": (0.0, 0.0),
    "sample_rate": (0.0, 0.0),
    "fps": (0.01, 0.01),
    "duration_s": (0.1, 0.01),
}
#: Error kinds of the scan reported by DF202 (missing: DF201, truncated: DF203).
_UNREADABLE = ("unreadable", "empty", "not-media", "corrupt")


def _options(ctx: AuditContext, data: DeepfakeData) -> DeepfakeOptions:
    opts = ctx.options if isinstance(ctx.options, DeepfakeOptions) else data.options
    return opts if isinstance(opts, DeepfakeOptions) else DeepfakeOptions()


def _cache_path(data: DeepfakeData, opts: DeepfakeOptions) -> tuple[Path | None, bool]:
    """The cache file and whether failing to write it is an error (an explicit ``--cache``)."""
    if opts.cache is not None:
        return opts.cache, True
    return input_cache(data.paths[0] if data.paths else None), False


def file_table(data: DeepfakeData, opts: DeepfakeOptions) -> pl.DataFrame:
    """Valid rows with a path, each joined to its file's scan row.

    Columns: ``row, record, input, split, modality, path`` (as the manifest wrote it), ``file``
    (the absolute path read), the manifest's ``declared_<field>`` for the fields of
    :data:`METADATA_TOLERANCE` and ``declared_sha256``, then the scan's columns
    (:data:`curate.io.media.SCHEMA` minus ``path``). Sets ``data.computed_hashes``.
    """
    rows = data.valid_rows().filter(pl.col("path").is_not_null())
    roots = [str(r) for r in data.media_roots] or [os.getcwd()]
    rows = rows.select(
        "row",
        "record",
        "input",
        pl.col("split").cast(pl.String),
        pl.col("modality").cast(pl.String),
        pl.col("path").cast(pl.String),
        *[pl.col(f).alias(f"declared_{f}") for f in METADATA_TOLERANCE],
        pl.col("sha256").cast(pl.String).str.to_lowercase().alias("declared_sha256"),
        pl.col("input")
        .replace_strict(list(range(len(roots))), roots, default=roots[0], return_dtype=pl.String)
        .alias("__root"),
    )
    files = [
        os.path.abspath(os.path.join(root, p))
        for root, p in zip(rows["__root"].to_list(), rows["path"].to_list(), strict=True)
    ]
    rows = rows.drop("__root").with_columns(pl.Series("file", files, dtype=pl.String))
    cache, strict = _cache_path(data, opts)
    data.read_files = list(dict.fromkeys(files))
    scan = scan_media(
        data.read_files,
        cache=cache,
        workers=opts.workers,
        strict_cache=strict,
        inputs=data.paths,
    )
    out = rows.join(scan.rename({"path": "file"}), on="file", how="left", maintain_order="left")
    if data.computed_hashes is None:  # hashes given by the caller are kept
        data.computed_hashes = out.filter(pl.col("sha256").is_not_null()).select("row", "sha256")
        data.cache.pop("content", None)  # built before the scan: rebuild with the files' hashes
    # what was read, not how: no time and no cache hits (the second run of a file read them
    # all from the cache, the first none), so the same input gives the same report
    data.stats["media"] = {
        "files": scan.height,
        "errors": int(scan["error_kind"].is_not_null().sum()),
        "workers": opts.workers or default_workers(),
        "cache": str(cache) if cache is not None else None,
    }
    return out


@RULES.table(FILES)
def _files(ctx: AuditContext) -> pl.DataFrame | None:
    data = ctx.data
    assert isinstance(data, DeepfakeData)
    opts = _options(ctx, data)
    if opts.no_files:
        return None
    return file_table(data, opts)


def _files_of(ctx: AuditContext) -> pl.DataFrame | None:
    files = ctx.table(FILES)
    return files if isinstance(files, pl.DataFrame) and files.height else None


def _details(data: DeepfakeData, *extra: pl.Expr) -> pl.Expr:
    return json_struct(pl.col("path"), pl.col("file"), *extra, file_of(data).alias("manifest"))


@RULES.rule("DF201", "file-missing", category="integrity", severity="error", needs=(FILES,))
def file_missing(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The file a row names does not exist (relative paths are looked up under
    ``--media-root``, by default the manifest's folder).

    A sample whose file is gone cannot be trained or evaluated on; a loader either crashes
    or, worse, skips it silently and changes the split's balance. ``details.file`` is the
    absolute path that was tried. When not one file exists (a wrong ``--media-root``, media
    not downloaded), a single finding says so instead of one per row.
    """
    files = _files_of(ctx)
    if files is None:
        return empty_rule_output()
    hit = files.filter(pl.col("error_kind") == "missing")
    if hit.height > 1 and hit.height == files.height:
        # not one file found: a wrong media root, or media not downloaded — one finding, not N
        first = hit.head(1)
        return finding_frame(
            first,
            field=pl.lit("path"),
            message=pl.format(
                "none of the {} files the manifest names exists (first: {}); check "
                "--media-root, or pass --no-files to check the manifest alone",
                pl.lit(hit.height),
                pl.col("file"),
            ),
            details=_details(data, pl.lit(hit.height).alias("missing")),
        )
    return finding_frame(
        hit,
        field=pl.lit("path"),
        message=pl.format("file {} does not exist", pl.col("path")),
        details=_details(data),
    )


@RULES.rule("DF202", "file-unreadable", category="integrity", severity="error", needs=(FILES,))
def file_unreadable(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The file exists but cannot be used: permission denied, a folder, empty (0 bytes), not
    an image, audio or video file at all (its first bytes match no known format), or corrupt
    (its library refuses it).

    The message quotes the reason; ``details.error_kind`` is one of ``unreadable``, ``empty``,
    ``not-media``, ``corrupt``.
    """
    files = _files_of(ctx)
    if files is None:
        return empty_rule_output()
    hit = files.filter(pl.col("error_kind").is_in(_UNREADABLE))
    return finding_frame(
        hit,
        field=pl.lit("path"),
        message=pl.format("file {} cannot be read: {}", pl.col("path"), pl.col("error")),
        details=_details(data, pl.col("error_kind"), pl.col("error")),
    )


@RULES.rule("DF203", "file-truncated", category="integrity", severity="error", needs=(FILES,))
def file_truncated(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The file is cut off: an image that stops before its last pixel row, a WAV whose header
    declares more bytes than the file holds, an MP4 whose boxes run past its end or that has
    fewer packets than frames declared.

    Typical of an interrupted download or copy. Many loaders decode such a file without
    complaint (grey rows, silence, a frozen last frame), so the sample quietly stops being
    what its label says.
    """
    files = _files_of(ctx)
    if files is None:
        return empty_rule_output()
    hit = files.filter(pl.col("error_kind") == "truncated")
    return finding_frame(
        hit,
        field=pl.lit("path"),
        message=pl.format("file {} is truncated: {}", pl.col("path"), pl.col("error")),
        details=_details(data, pl.col("kind"), pl.col("format"), pl.col("size"), pl.col("error")),
    )


def _extension_kind() -> pl.Expr:
    ext = pl.col("path").str.extract(r"(\.[^./\\]+)$").str.to_lowercase()
    return ext.replace_strict(EXTENSION_KINDS, default=None, return_dtype=pl.String)


@RULES.rule("DF204", "extension-mismatch", category="integrity", severity="warning", needs=(FILES,))
def extension_mismatch(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The file's extension promises another kind of media than it holds — a ``.wav`` that is
    really a PNG — or, for a file whose content could not be read, than the row's modality.

    The content is recognised from its first bytes, never from the name. Tools that dispatch
    on the extension (most loaders do) will fail on this file or decode it as the wrong thing.
    """
    files = _files_of(ctx)
    if files is None:
        return empty_rule_output()
    promised = _extension_kind()
    actual = pl.coalesce(pl.col("kind"), pl.col("modality"))
    hit = files.with_columns(promised.alias("promised")).filter(
        pl.col("promised").is_not_null() & actual.is_not_null() & (pl.col("promised") != actual)
    )
    what = pl.when(pl.col("kind").is_not_null()).then(
        pl.format("holds {} ({})", pl.col("kind"), pl.col("format"))
    )
    return finding_frame(
        hit,
        field=pl.lit("path"),
        message=pl.format(
            "file {} is named as {} but {}",
            pl.col("path"),
            pl.col("promised"),
            what.otherwise(pl.format("the row's modality is {}", pl.col("modality"))),
        ),
        details=_details(data, pl.col("promised"), pl.col("kind"), pl.col("format")),
    )


@RULES.rule("DF205", "modality-mismatch", category="integrity", severity="error", needs=(FILES,))
def modality_mismatch(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The file's real content is another modality than the row declares: an ``audio`` row
    whose file is an image, a ``video`` row whose MP4 holds only an audio stream.

    Per-modality results and modality-balanced splits count this sample in the wrong place,
    and a detector for one modality is fed another.
    """
    files = _files_of(ctx)
    if files is None:
        return empty_rule_output()
    hit = files.filter(
        pl.col("kind").is_not_null()
        & pl.col("modality").is_not_null()
        & (pl.col("kind") != pl.col("modality"))
    )
    return finding_frame(
        hit,
        field=pl.lit("modality"),
        message=pl.format(
            "declared {} but the file {} holds {} ({})",
            pl.col("modality"),
            pl.col("path"),
            pl.col("kind"),
            pl.col("format"),
        ),
        details=_details(data, pl.col("modality"), pl.col("kind"), pl.col("format")),
    )


@RULES.rule("DF206", "metadata-mismatch", category="integrity", severity="warning", needs=(FILES,))
def metadata_mismatch(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The manifest's width, height, sample rate, fps or duration disagrees with the file.

    Sizes and sample rates must match exactly; fps within 1 % (29.97 against 30 passes),
    duration within 1 % or 0.1 s, whichever is larger. One finding per field. Filters and
    strata built from the manifest (``duration_s < 10``, "720p only") then select the wrong
    samples; usually the file was re-encoded after the manifest was written.
    """
    files = _files_of(ctx)
    if files is None:
        return empty_rule_output()
    parts = []
    for f, (absolute, relative) in METADATA_TOLERANCE.items():
        declared, real = pl.col(f"declared_{f}").cast(pl.Float64), pl.col(f).cast(pl.Float64)
        allowed = pl.max_horizontal(pl.lit(absolute), real.abs() * relative)
        off = (declared - real).abs() > allowed
        hit = files.filter(declared.is_not_null() & real.is_not_null() & off)
        parts.append(
            finding_frame(
                hit,
                field=pl.lit(f),
                message=pl.format(
                    "{} is {} in the manifest but {} in the file {}",
                    pl.lit(f),
                    pl.col(f"declared_{f}"),
                    pl.col(f),
                    pl.col("path"),
                ),
                details=_details(
                    data,
                    pl.col(f"declared_{f}").cast(pl.Float64).alias("declared"),
                    pl.col(f).cast(pl.Float64).alias("actual"),
                ),
            )
        )
    parts = [p for p in parts if p.height]
    return pl.concat(parts).sort("row") if parts else empty_rule_output()


@RULES.rule("DF207", "sha256-mismatch", category="integrity", severity="error", needs=(FILES,))
def sha256_mismatch(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """The manifest's sha256 is not the hash of the file's bytes.

    The file changed after the manifest was written (re-encoded, replaced, corrupted in a
    copy), or the hash belongs to another file. Either way the manifest no longer vouches for
    the file, and duplicate and leakage checks (DF3xx), which use the computed hash when the
    files are read, may disagree with those run on the manifest alone.
    """
    files = _files_of(ctx)
    if files is None:
        return empty_rule_output()
    hit = files.filter(
        pl.col("declared_sha256").is_not_null()
        & pl.col("sha256").is_not_null()
        & (pl.col("declared_sha256") != pl.col("sha256"))
    )
    return finding_frame(
        hit,
        field=pl.lit("sha256"),
        message=pl.format(
            "manifest sha256 {} but the file {} hashes to {}",
            pl.col("declared_sha256").str.slice(0, 12),
            pl.col("path"),
            pl.col("sha256").str.slice(0, 12),
        ),
        details=_details(data, pl.col("declared_sha256").alias("declared"), pl.col("sha256")),
    )


# --------------------------------------------------------------------------- near-duplicates


@RULES.table(NEAR)
def _near(ctx: AuditContext) -> pl.DataFrame | None:
    """Row pairs of near-duplicate images, oriented: ``row`` is the later one (later split,
    then later row), ``other_*`` the earlier; byte-identical files excluded (DF3xx's)."""
    files = _files_of(ctx)
    if files is None:
        return None
    data = ctx.data
    assert isinstance(data, DeepfakeData)
    opts = _options(ctx, data)
    images = files.filter(pl.col("phash").is_not_null() & pl.col("error_kind").is_null())
    pairs = near_duplicate_pairs(
        images.unique("file", keep="first"), opts.near_distance, key="file"
    ).rename({"path_a": "file_a", "path_b": "file_b"})
    carry = ("record", "split", "path", "sha256")
    return (
        later_vs_earlier(pairs, images, "file", CONTENT_KEYS, carry=carry)
        .filter(pl.col("sha256") != pl.col("other_sha256"))
        .drop("sha256", "other_sha256")
    )


def _near_findings(
    data: DeepfakeData, ctx: AuditContext, which: pl.Expr, what: str
) -> pl.DataFrame:
    near = ctx.table(NEAR)
    if not isinstance(near, pl.DataFrame) or near.height == 0:
        return empty_rule_output()
    hits = near.filter(which)
    if hits.height == 0:
        return empty_rule_output()
    closest = (
        hits.sort("row", "distance", "other_row")
        .group_by("row", maintain_order=True)
        .agg(pl.all().first(), pl.len().alias("copies"))
        .join(data.rows.select("row", "input"), on="row", how="left")
    )
    return finding_frame(
        closest,
        field=pl.lit("path"),
        message=pl.format(
            "image {} ({}) is a near-duplicate of {} ({}{}{}) at pHash distance {}{}",
            pl.col("path"),
            pl.col("split").fill_null("no split"),
            pl.col("other_path"),
            pl.lit(what),
            pl.col("other_split").fill_null("no split"),
            pl.lit(", record ") + pl.col("other_record"),
            pl.col("distance"),
            pl.when(pl.col("copies") > 1)
            .then(pl.format(" ({} near copies in all)", pl.col("copies")))
            .otherwise(pl.lit("")),
        ),
        details=json_struct(
            pl.col("path"),
            pl.col("other_record"),
            pl.col("other_split"),
            pl.col("other_path"),
            pl.col("distance"),
            pl.col("copies"),
            file_of(data).alias("manifest"),
        ),
    )


_TRAIN, _VAL = SPLIT_ORDER[0], SPLIT_ORDER[1]


@RULES.rule(
    "DF208", "near-duplicate-leak", category="overlap", severity="error", needs=(FILES, NEAR)
)
def near_duplicate_leak(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """An image in validation or test is a near-copy of a training image (re-encoded, resized
    or lightly cropped: perceptual-hash distance at most ``--near-distance``, default 10 of
    64 bits), though not byte-identical (those are the exact-duplicate rules').

    The evaluation then measures memory of the training set, not generalisation — a
    detector scores well on what it has seen with other JPEG settings. One finding per later
    image, naming its closest training copy and how many it has.
    """
    return _near_findings(
        data,
        ctx,
        (pl.col("other_split") == _TRAIN) & pl.col("split").is_in(SPLIT_ORDER[1:]),
        "",
    )


@RULES.rule(
    "DF209",
    "near-duplicate-across-eval",
    category="overlap",
    severity="warning",
    needs=(FILES, NEAR),
)
def near_duplicate_across_eval(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A test image is a near-copy of a validation image (pHash distance at most
    ``--near-distance``), not byte-identical.

    No training leak, but model selection on validation then favours what test rewards, and
    the two estimates are not independent. A warning: the test result is optimistic, not void.
    """
    return _near_findings(
        data,
        ctx,
        (pl.col("other_split") == _VAL) & (pl.col("split") == SPLIT_ORDER[2]),
        "",
    )


@RULES.rule(
    "DF210",
    "near-duplicate-within-split",
    category="duplicate",
    severity="info",
    needs=(FILES, NEAR),
)
def near_duplicate_within_split(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """Two images of the same split (or both without one) are near-copies of each other
    (pHash distance at most ``--near-distance``), not byte-identical.

    Augmented or re-encoded copies weigh a sample several times; in an evaluation split they
    shrink the effective number of samples. Reported at the later row.
    """
    same = (pl.col("split") == pl.col("other_split")) | (
        pl.col("split").is_null() & pl.col("other_split").is_null()
    )
    return _near_findings(data, ctx, same, "same split ")
