"""RL0xx: the file as storage — unreadable blocks, chunking and filters, stray root members.

Not a rule but the reader's first check: an input that is not an HDF5 file at all (an HTML or
XML error page saved under the ``.hdf5`` name, an empty or truncated download) ends the run
with one line naming what it is instead, and exit 2; see
:func:`curate.families.icrl_read.check_hdf5`.
"""

from __future__ import annotations

import polars as pl

from curate.audits.icrl.registry import (
    RULES,
    SCAN,
    drop_group,
    history_findings,
    scan_of,
    task_findings,
    with_paths,
)
from curate.core.findings import concat_outputs
from curate.core.rules import AuditContext
from curate.schemas.icrl import DATASETS
from curate.schemas.icrl_tables import IcrlData


@RULES.rule(
    "RL001", "unreadable-block", category="schema", severity="error", needs=(SCAN,), invalid=True
)
def unreadable_block(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A block of a history cannot be read: a chunk is corrupt or missing.

    HDF5 stores each history in compressed chunks; a flipped bit or a chunk lost in a copy
    makes decompression fail for that range only, while the metadata still opens. The scan
    reports the first unreadable block of the history (its step range) and moves on to the
    next history, so one bad chunk does not hide the rest of the file; the history's later
    steps are not checked (the message says from which step on). A chunk whose deflate stream
    ends cleanly before the chunk's size is reported here too, at that chunk's steps (the
    history is checked up to it): HDF5 reads it without an error and returns whatever its
    buffer held for the rest. Re-download or re-copy the file and compare checksums.
    """
    h = scan_of(ctx).histories.filter(pl.col("error") != "")
    return history_findings(
        with_paths(h, data),
        pl.format(
            "{} steps [{}, {}) cannot be read ({}); this history is not checked from step {} on",
            "error_field",
            "error_start",
            "error_end",
            "error",
            "steps_read",
        ),
        start=pl.col("error_start"),
        end=pl.col("error_end"),
        field=pl.col("error_field"),
        extra=(pl.col("error"),),
    )


@RULES.rule("RL002", "unexpected-storage", category="schema", severity="warning")
def unexpected_storage(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """A dataset is not stored as the published files store it: chunks of one history.

    The published files chunk every dataset as ``(1, 4096[, 5, 5])`` with gzip, so that reading
    one history (what every loader and sampler does) decompresses only that history. A dataset
    stored contiguously, uncompressed, or with chunks spanning several histories is valid HDF5,
    but reading one history then reads (and decompresses) far more than it needs — a 326 GB
    file becomes unusable for random access. Rewrite it with ``chunks=(1, 4096, ...)`` and gzip.
    """
    groups = with_paths(data.groups(), data)
    parts = []
    for d in DATASETS:
        chunks, comp = pl.col(f"{d}_chunks"), pl.col(f"{d}_compression")
        bad = groups.filter(
            pl.col(f"{d}_shape").is_not_null()
            & (chunks.is_null() | (chunks.list.first() != 1) | comp.is_null())
        )
        how = (
            pl.when(chunks.is_null())
            .then(pl.lit("stored contiguously (not chunked)"))
            .when(chunks.list.first() != 1)
            .then(
                pl.format(
                    "chunked {} (one chunk spans several histories)",
                    chunks.cast(pl.List(pl.String)).list.join(", "),
                )
            )
            .otherwise(pl.lit("not compressed"))
        )
        parts.append(
            task_findings(
                bad,
                pl.format(
                    "{} is {}; the published layout is chunks (1, 4096, …) with gzip",
                    pl.lit(d),
                    how,
                ),
                field=d,
                extra=(chunks.alias("chunks"), comp.alias("compression")),
            )
        )
    return concat_outputs(parts)


@RULES.rule("RL003", "root-member-not-group", category="schema", severity="error", fix="always")
def root_member_not_group(data: IcrlData, ctx: AuditContext) -> pl.DataFrame:
    """The file's root holds something other than a task group (a dataset, a dangling link).

    Loaders iterate the root's members as tasks (``for k in f: f[k]["states"]``); one member
    that is not a group breaks that loop, or is silently counted as a task. Move it into a
    group's attributes or out of the file. Fix (safe): the fixed file holds task groups only;
    the member is left out (the changelog names it; the input keeps it).
    """
    other = with_paths(data.tasks.filter(pl.col("kind") != "group"), data)
    return task_findings(
        other,
        pl.format(
            "the root member {} is {}, not a task group",
            pl.col("name"),
            pl.when(pl.col("kind") == "link")
            .then(pl.col("links_broken").list.first())
            .when(pl.col("kind") == "dataset")
            .then(pl.lit("a dataset"))
            .otherwise(pl.lit("neither a group nor a dataset")),
        ),
        fix=drop_group(),
    )
