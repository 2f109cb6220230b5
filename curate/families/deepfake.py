"""The deepfake family (deepfake-detection manifests): reader, registration, export and fixes.

Schema, vocabularies and options: :mod:`curate.schemas.deepfake`. Normalised tables and key
tables: :mod:`curate.schemas.deepfake_tables`. Rules and fixes: :mod:`curate.audits.deepfake`.

A manifest (CSV, JSON Lines, parquet, or a published folder of them) is read as text
(:func:`curate.io.read.read_frame`), its columns mapped to the schema's fields (known spellings,
``--column FIELD=COLUMN``, ``--value FIELD=VALUE``), and every field normalised in columnar
passes: each *distinct* value of a closed vocabulary is validated once with
:class:`~curate.schemas.deepfake.DeepfakeRow` and mapped back with a join, numbers are cast
by polars. A value that does not fit is a DF001 finding naming the file, the row, the sample
id and the field (never a traceback), and the row is left out of every other rule and of
``fix``/``export``. Media files are never opened here: file-level checks belong to the media
scan, which fills :attr:`DeepfakeData.computed_hashes`.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
from pydantic import ValidationError

from curate.audits.deepfake import RULES
from curate.audits.shared.label_issues import label_issue_plots, summarise_label_issues
from curate.core.dataset import ChangeEntry, LoadedDataset
from curate.core.diff import DiffSpec
from curate.core.errors import InputError
from curate.core.findings import InputInfo, Report
from curate.core.fixes import BOOKKEEPING, RECORD, ROW, SPLIT
from curate.core.keys import Keys
from curate.core.options import FamilyOptions
from curate.core.rules import AuditContext, RuleSet
from curate.core.streams import SplitStream
from curate.families.base import (
    CardDefaults,
    Family,
    InputSpec,
    Progress,
    check_not_blank,
    no_records,
    unmatched_split_map,
)
from curate.families.hints import hinted
from curate.io.read import SPLIT_FROM_LAYOUT, is_stream, read_frame
from curate.io.records import split_of
from curate.io.sniff import Probe
from curate.io.typed import infer_types
from curate.schemas.deepfake import (
    ALIASES,
    CATEGORICAL_FIELDS,
    FIELDS,
    FLOAT_FIELDS,
    INT_FIELDS,
    SPLIT_NAMES,
    SPLIT_ORDER,
    DeepfakeOptions,
    DeepfakeRow,
    detect_columns,
)
from curate.schemas.deepfake_tables import (
    AV_LABEL,
    CONTENT_KEYS,
    GENERATOR_KEYS,
    LABEL,
    MODALITY,
    SUBJECT_KEYS,
    DeepfakeData,
)
from curate.schemas.deepfake_tables import SPLIT as SPLIT_ENUM

#: Closed vocabularies validated value by value with the row model, and their Enum types.
_ENUMS = {"modality": MODALITY, "label": LABEL, "av_label": AV_LABEL}
_SHA256 = r"^[0-9a-f]{64}$"


def _text(series: pl.Series) -> pl.Series:
    """A column as stripped text, blank → null."""
    s = series if series.dtype == pl.String else series.cast(pl.String, strict=False)
    name = series.name
    frame = pl.DataFrame({name: s.str.strip_chars()})
    return frame.select(pl.when(pl.col(name) != "").then(pl.col(name)).alias(name)).to_series()


def _validate_enum(field: str, values: pl.Series) -> pl.DataFrame:
    """Each distinct value of ``field`` → its canonical value or the model's error message."""
    out_values: list[str | None] = []
    errors: list[str | None] = []
    uniq = values.drop_nulls().unique(maintain_order=True)
    for v in uniq.to_list():
        try:
            got = getattr(DeepfakeRow.model_validate({"sample_id": "x", field: v}), field)
            out_values.append(None if got is None else str(got.value))
            errors.append(None)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            out_values.append(None)
            errors.append(str(err["msg"]))
    return pl.DataFrame(
        {
            "__v": uniq,
            "__canon": pl.Series(out_values, dtype=pl.String),
            "__err": pl.Series(errors, dtype=pl.String),
        }
    )


def _content_keys(data: LoadedDataset) -> pl.DataFrame:
    from curate.audits.deepfake.files import file_table
    from curate.schemas.deepfake_tables import content_table

    assert isinstance(data, DeepfakeData)
    opts = data.options if isinstance(data.options, DeepfakeOptions) else DeepfakeOptions()
    wants_files = not opts.no_files and data.rows["path"].is_not_null().any()
    if wants_files and data.computed_hashes is None:
        file_table(data, opts)  # sets data.computed_hashes (unreadable files: no hash)
        data.cache.pop("content", None)
    return content_table(data).select(
        pl.col("record").cast(pl.String),
        pl.col("split").cast(pl.String),
        pl.col("sha256").cast(pl.String).alias("key"),
    )


#: The Hub task category of each modality's samples (the card's, for the modalities present).
MODALITY_TASKS = {
    "video": "video-classification",
    "audio": "audio-classification",
    "image": "image-classification",
}


class DeepfakeFamily(Family):
    name = "deepfake"
    aliases: tuple[str, ...] = ("deepfakes", "illusion")
    card: CardDefaults = CardDefaults(
        title="Deepfake-detection manifests (audio, image, video samples; labels, generators)",
        license="unknown",
        task_categories=("video-classification", "audio-classification", "image-classification"),
    )
    inputs: InputSpec = InputSpec(names_files=True)
    Options: type[FamilyOptions] = DeepfakeOptions

    def card_for(self, data: LoadedDataset) -> CardDefaults:
        """Task categories of the modalities the manifest's valid samples have (MusicCaps,
        audio alone: audio-classification); all three when no sample says."""
        assert isinstance(data, DeepfakeData)
        valid = data.valid_rows()
        present = (
            set(valid["modality"].drop_nulls().cast(pl.String).to_list())
            if "modality" in valid.columns
            else set()
        )
        tasks = tuple(t for m, t in MODALITY_TASKS.items() if m in present)
        return dataclasses.replace(self.card, task_categories=tasks or self.card.task_categories)

    rules: RuleSet = RULES
    #: ``curate overlap`` keys: ``content`` (the sample's sha256: the files' own when they can
    #: be read, as DF3xx compare them), ``subject`` (every identity a sample shows: subject,
    #: and a face swap's source and target, as DF401 compares them) and ``generator``
    #: (set-valued: the generators of each sample's fakes, for the ILLUSION-style overlap).
    keys: tuple[Keys, ...] = (CONTENT_KEYS.read_by(_content_keys), SUBJECT_KEYS, GENERATOR_KEYS)

    # ----------------------------------------------------------------- reading
    def sniff(self, probe: Probe) -> str | None:
        """A table with a sample id column and at least two more manifest fields (a path, a
        label, a modality, a generator, a hash, a manipulation), by their known spellings: an
        ``id`` column alone is in too many tables to tell."""
        keys = probe.lower_keys
        if not keys & set(ALIASES["sample_id"]):
            return None
        others = ("path", "label", "modality", "generator", "sha256", "manipulation")
        if sum(bool(keys & set(ALIASES[f])) for f in others) < 2:
            return None
        return "a deepfake manifest"

    def read(
        self,
        paths: list[str | Path],
        options: FamilyOptions,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
    ) -> DeepfakeData:
        opts = options
        assert isinstance(opts, DeepfakeOptions)
        rows: list[pl.DataFrame] = []
        raws: list[pl.DataFrame] = []
        errors: list[pl.DataFrame] = []
        inputs: list[InputInfo] = []
        mappings: list[dict[str, str]] = []
        roots: list[str] = []
        text_columns: set[str] = set()
        written: set[str] = set()  # the split cells as written, for --split-map's keys
        split_columns: dict[str, None] = {}
        offset = 0
        for i, path in enumerate(paths):
            check_not_blank(path)
            try:
                frame, src = read_frame(path, encoding=encoding)
            except InputError as e:
                if e.message.startswith("no records found"):
                    raise no_records(path) from None
                if e.message.startswith("unknown file type"):  # an HDF5 file, say
                    raise hinted(e, self, path) from None
                raise
            if frame.height == 0:
                raise no_records(path)
            header = [c for c in frame.columns if c != SPLIT_FROM_LAYOUT]
            given = dict(opts.columns)
            if SPLIT_FROM_LAYOUT in frame.columns and given.get("split") not in (None, *header):
                given.pop("split")  # a published folder has its splits as files
            try:
                cols = detect_columns(header, given, opts.values, path=str(path))
            except InputError as e:
                if e.message.startswith("no sample id column"):  # another family's file?
                    raise hinted(
                        e,
                        self,
                        path,
                        header,
                        instead="not a deepfake manifest (no sample id column)",
                    ) from None
                raise
            layout = SPLIT_FROM_LAYOUT in frame.columns
            if split_of(path) is not None:
                # a project configuration's split mapping names this file's split: it wins
                # over a split column of the file (every record of the file is in that split)
                cols["split"] = SPLIT_FROM_LAYOUT
            elif layout and "split" not in cols and "split" not in opts.values:
                cols["split"] = SPLIT_FROM_LAYOUT
            if opts.split_map and cols.get("split") in frame.columns:
                cells = frame[cols["split"]].cast(pl.String).str.strip_chars().str.to_lowercase()
                written |= set(cells.drop_nulls().unique().to_list())
                split_columns[cols["split"]] = None
            norm, errs = _normalise(i, str(path), frame, cols, opts, offset, src.nested_cells)
            rows.append(norm)
            raws.append(frame)
            text_columns |= src.text_columns
            errors.append(errs)
            mappings.append(cols)
            local = Path(str(path))
            if opts.media_root is not None:
                root = opts.media_root
            elif is_stream(path):  # standard input, a pipe: paths from the current folder
                root = Path(".")
            else:
                root = local if local.is_dir() else local.parent
            roots.append(str(root))
            splits = dict(
                norm.group_by("split").len().drop_nulls("split").cast({"split": pl.String}).rows()
            )
            inputs.append(InputInfo(str(path), src.sha256, frame.height, src.format, splits))
            offset += frame.height
            if progress:
                progress(f"read {Path(str(path)).name}", offset)
        if opts.split_map:
            named = ", ".join(c for c in split_columns if c != SPLIT_FROM_LAYOUT) or "split"
            unmatched_split_map(opts.split_map, written, named)
        all_rows = pl.concat(rows, how="vertical")
        invalid = pl.concat(errors, how="vertical") if errors else _empty_errors()
        bad_rows = invalid["row"].unique()
        all_rows = all_rows.with_columns((~pl.col("row").is_in(bad_rows.implode())).alias("valid"))
        data = DeepfakeData(
            family=self.name,
            inputs=inputs,
            schema_findings=invalid.with_columns(pl.lit("DF001").alias("rule")),
            rows=all_rows,
            raw=pl.concat(raws, how="diagonal_relaxed") if len(raws) > 1 else raws[0],
            columns=mappings,
            media_roots=roots,
            options=opts,
            text_columns=frozenset(text_columns),
        )
        data.stats = _stats(data)
        return data

    def summarise(self, report: Report, ctx: AuditContext) -> None:
        """Counts per split: samples, modality, label (the figures a card states)."""
        data = ctx.data
        assert isinstance(data, DeepfakeData)
        report.stats.update(_stats(data))
        if (scores := ctx.built("label_scores")) is not None:
            summarise_label_issues(report, {"label": scores[1]}, "pred-probs")

    # ----------------------------------------------------------------- export / fix
    def plots(self, data: LoadedDataset, report: Report, ctx: AuditContext) -> list[Any]:
        """Modality × label, fakes per generator and sex × skin-tone balance, per split; the
        given-vs-suggested matrix of the label issues."""
        from curate.families.deepfake_plots import deepfake_plots

        assert isinstance(data, DeepfakeData)
        return deepfake_plots(data, report, ctx) + label_issue_plots(report, self.rules)

    def to_tables(self, data: LoadedDataset) -> dict[str, SplitStream]:
        """The valid rows per split (rows without a split are published in train), every
        schema field the manifest has under its canonical name (``--column`` and ``--value``
        applied, labels and modalities in their canonical spelling), then the manifest's other
        columns as read. The split is the folder layout, not a column."""
        assert isinstance(data, DeepfakeData)
        bad = self.invalid_records(data)["row"].drop_nulls().unique()
        frame = _publish_frame(data).filter(~pl.col(ROW).is_in(bad.implode()))
        return {
            name: SplitStream.from_table(t, max_rows=65536)
            for name, t in _split_tables(frame).items()
        }

    def fix_frame(
        self, data: LoadedDataset, invalid: pl.DataFrame
    ) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """The published frame (see :meth:`to_tables`) with the engine's bookkeeping columns;
        invalid rows (DF001) left out and logged whole, as read."""
        assert isinstance(data, DeepfakeData)
        bad = set(invalid["row"].drop_nulls().to_list())
        changes: list[ChangeEntry] = []
        logged: set[int] = set()
        for r in invalid.iter_rows(named=True):
            if r["row"] is None or r["row"] in logged:
                continue
            logged.add(r["row"])
            changes.append(
                ChangeEntry(
                    r["record"],
                    "",
                    self.fix_original(data, r["row"], {}),
                    None,
                    r["rule"],
                    f"dropped: invalid record ({r['field']}: {r['message']})",
                )
            )
        frame = _publish_frame(data).filter(~pl.col(ROW).is_in(sorted(bad)))
        return frame, changes

    def diff_spec(self, data: LoadedDataset) -> DiffSpec:
        """Samples pair by id; a sample whose id changed pairs by its content hash when the
        manifest has one (``sha256``), else by its path."""
        assert isinstance(data, DeepfakeData)
        hashed = "sha256" in data.rows.columns and data.rows["sha256"].is_not_null().any()
        return DiffSpec(
            stable_ids=True,
            id_columns=("sample_id",),
            content_key=("sha256",) if hashed else ("path",),
        )

    def fix_tables(self, frame: pl.DataFrame, data: LoadedDataset) -> dict[str, pa.Table]:
        return _split_tables(frame)

    def fix_original(self, data: LoadedDataset, row: int, cells: dict[str, Any]) -> Any:
        """A dropped row in the changelog: the manifest row as read."""
        assert isinstance(data, DeepfakeData)
        if 0 <= row < data.raw.height:
            got = data.raw.row(row, named=True)
            return {k: v for k, v in got.items() if v is not None or k != SPLIT_FROM_LAYOUT}
        return cells

    def reaudit_options(
        self, options: FamilyOptions, data: LoadedDataset | None = None
    ) -> FamilyOptions:
        """Published data has canonical column names and values: the mapping options that
        read the input (``--column``, ``--value``, ``--split-map``) are not re-applied. Its
        relative media paths still name the input's files: the re-audit resolves them where
        the input's were (not in the temporary folder the fixed manifest is written to), and
        uses the input's cache, so the fixed data's files are checked and never re-read."""
        from curate.io.media import input_cache

        assert isinstance(options, DeepfakeOptions)
        update: dict[str, Any] = {"columns": {}, "values": {}, "split_map": {}}
        if isinstance(data, DeepfakeData) and data.media_roots:
            if options.media_root is None:
                update["media_root"] = Path(data.media_roots[0])
            if options.cache is None:
                update["cache"] = input_cache(data.paths[0] if data.paths else None)
        return options.model_copy(update=update)

    def card_sections(self, data: LoadedDataset, options: FamilyOptions) -> list[str]:
        assert isinstance(data, DeepfakeData)
        st = data.stats
        lines = ["## Samples", "", "| split | samples |", "|---|---:|"]
        lines += [f"| {k} | {v} |" for k, v in st.get("splits", {}).items()]
        return [*lines, ""]


def _empty_errors() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "row": pl.Int64,
            "record": pl.String,
            "field": pl.String,
            "message": pl.String,
            "details": pl.String,
            "fix": pl.String,
        }
    )


def _normalise(
    index: int,
    path: str,
    raw: pl.DataFrame,
    cols: dict[str, str],
    opts: DeepfakeOptions,
    offset: int,
    nested: dict[str, dict[int, str]],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The normalised rows of one manifest and its DF001 findings (see the module doc)."""
    n = raw.height
    text: dict[str, pl.Series] = {}
    source: dict[str, str] = {}
    for f in FIELDS:
        if f in opts.values and f not in cols:
            text[f] = pl.Series(f, [opts.values[f].strip() or None] * n, dtype=pl.String)
            source[f] = f"--value {f}"
        elif f in cols:
            col = raw[cols[f]]
            if col.dtype.is_nested():  # a whole column of lists: every value is malformed
                values = col.to_list()
                nested = {**nested, cols[f]: {i: "list" for i, v in enumerate(values) if v}}
                col = pl.Series(
                    col.name, [None if v is None else json.dumps(v) for v in values], pl.String
                )
            text[f] = _text(col).alias(f)
            source[f] = cols[f]
            if f in opts.values:  # --value fills only the empty cells of an existing column
                text[f] = text[f].fill_null(opts.values[f].strip() or None)
        else:
            text[f] = pl.Series(f, [None] * n, dtype=pl.String)
    base = pl.DataFrame(text).with_columns(
        pl.int_range(offset, offset + n, dtype=pl.Int64).alias("row"),
        pl.lit(index, pl.Int32).alias("input"),
    )
    base = base.with_columns(
        pl.coalesce("sample_id", pl.format("#{}", (pl.col("row") - offset).cast(pl.String))).alias(
            "record"
        )
    )
    problems: list[pl.DataFrame] = []

    def bad(frame: pl.DataFrame, field: str, message: pl.Expr, value: str | None = None) -> None:
        if frame.height:
            problems.append(
                frame.select(
                    "row",
                    "record",
                    pl.lit(field).alias("field"),
                    message.alias("message"),
                    pl.struct(
                        pl.lit(path).alias("file"),
                        pl.lit(source.get(field, field)).alias("column"),
                        pl.col(value or field).cast(pl.String).alias("value"),
                    )
                    .struct.json_encode()
                    .alias("details"),
                )
            )

    # a list or an object where text belongs (JSON/parquet cells of another shape)
    for f, c in cols.items():
        kinds = nested.get(c)
        if kinds:
            idx = pl.Series("__i", list(kinds), dtype=pl.Int64) + offset
            hit = base.filter(pl.col("row").is_in(idx.implode()))
            bad(hit, f, pl.lit(f"{f}: a list or an object where a value belongs"))
            base = base.with_columns(
                pl.when(pl.col("row").is_in(idx.implode())).then(None).otherwise(pl.col(f)).alias(f)
            )
    bad(base.filter(pl.col("sample_id").is_null()), "sample_id", pl.lit("missing sample_id"))
    # sha256: 64 hex digits (any case; kept lower-case)
    base = base.with_columns(pl.col("sha256").str.to_lowercase())
    bad(
        base.filter(pl.col("sha256").is_not_null() & ~pl.col("sha256").str.contains(_SHA256)),
        "sha256",
        pl.format("sha256 is not 64 hexadecimal digits (got {})", pl.col("sha256").str.head(80)),
    )
    # split: --split-map first, then the usual spellings
    # matched without regard to case: a boolean column reads True in CSV, true in JSON Lines
    # and parquet, and `--split-map True=test` means both
    mapped = {k.strip().lower(): v for k, v in opts.split_map.items()}
    base = base.with_columns(pl.col("split").alias("__split_raw")).with_columns(
        pl.col("split")
        .str.to_lowercase()
        .replace_strict(mapped, default=pl.col("split"), return_dtype=pl.String)
        .alias("split")
    )
    canon = pl.col("split").str.to_lowercase().replace_strict(SPLIT_NAMES, default=None)
    base = base.with_columns(canon.alias("split"))
    unknown = base.filter(pl.col("__split_raw").is_not_null() & pl.col("split").is_null())
    bad(
        unknown,
        "split",
        pl.format(
            "unknown split {} (use train/validation/test, or --split-map VALUE=SPLIT)",
            pl.col("__split_raw"),
        ),
        "__split_raw",
    )
    # A row with no split where others have one is in train: export and fix publish it there,
    # so it is audited there (its copy in test is a leak, found before it is published).
    if base["split"].is_not_null().any():
        base = base.with_columns(
            pl.when(pl.col("__split_raw").is_null())
            .then(pl.lit("train"))
            .otherwise(pl.col("split"))
            .alias("split")
        )
    # closed vocabularies: each distinct value validated once by the row model
    for f, dtype in _ENUMS.items():
        table = _validate_enum(f, base[f])
        base = base.join(table, left_on=f, right_on="__v", how="left", maintain_order="left")
        bad(
            base.filter(pl.col("__err").is_not_null()),
            f,
            pl.format("{}: {} (got {})", pl.lit(f), pl.col("__err"), pl.col(f)),
        )
        base = base.with_columns(pl.col("__canon").cast(dtype).alias(f)).drop("__canon", "__err")
    # numbers: non-negative; sizes and sample rates integers
    for f in (*FLOAT_FIELDS, *INT_FIELDS):
        num = pl.col(f).cast(pl.Float64, strict=False)
        base = base.with_columns(num.alias("__num"))
        wrong = pl.col(f).is_not_null() & (
            pl.col("__num").is_null() | pl.col("__num").is_nan() | (pl.col("__num") < 0)
        )
        if f in INT_FIELDS:
            wrong = wrong | (
                pl.col("__num").is_not_null() & (pl.col("__num").round() != pl.col("__num"))
            )
        what = "a non-negative integer" if f in INT_FIELDS else "a non-negative number"
        bad(
            base.filter(wrong),
            f,
            pl.format("{} must be {} (got {})", pl.lit(f), pl.lit(what), pl.col(f)),
        )
        typed = pl.when(wrong).then(None).otherwise(pl.col("__num"))
        base = base.with_columns(
            (typed.cast(pl.Int64) if f in INT_FIELDS else typed).alias(f)
        ).drop("__num")
    base = base.drop("__split_raw").with_columns(
        pl.col("split").cast(SPLIT_ENUM),
        *[
            pl.col(f).cast(pl.Categorical)
            for f in CATEGORICAL_FIELDS
            if f not in _ENUMS and f != "split"
        ],
    )
    errs = pl.concat(problems) if problems else _empty_errors().drop("fix")
    errs = errs.with_columns(pl.lit(None, pl.String).alias("fix")).sort("row", maintain_order=True)
    order = ["row", "record", "input", *FIELDS]
    return base.select(order), errs


def _stats(data: DeepfakeData) -> dict[str, Any]:
    rows = data.rows
    per_split = (
        rows.with_columns(pl.col("split").cast(pl.String).fill_null("(none)"))
        .group_by("split")
        .len()
        .sort("split")
    )

    def counts(col: str) -> dict[str, int]:
        got = rows.select(pl.col(col).cast(pl.String).fill_null("(none)")).to_series()
        return dict(sorted(got.value_counts().rows()))

    return {
        "rows": rows.height,
        "valid_rows": int(rows["valid"].sum()) if "valid" in rows.columns else rows.height,
        "splits": dict(per_split.rows()),
        "modality": counts("modality"),
        "label": counts("label"),
        "columns": data.columns,
    }


def _publish_frame(data: DeepfakeData) -> pl.DataFrame:
    """Every row as published plus ``__row``/``__record``/``__split``: the fields the manifest
    has (mapped or given) as text or numbers, then its unmapped columns as read."""
    rows = data.rows
    assert isinstance(data.options, DeepfakeOptions)  # load() sets them
    present = [
        f
        for f in FIELDS
        if f != "split" and (f in data.options.values or any(f in m for m in data.columns))
    ]
    extra = data.extra_columns()
    return pl.concat(
        [
            rows.select(
                *[
                    pl.col(f).cast(pl.String)
                    if rows.schema[f] not in (pl.Int64, pl.Float64)
                    else pl.col(f)
                    for f in present
                ]
            ),
            # typed as their text spells them, as ``datasets`` types the same file's columns
            # (MusicCaps' start_s 30, is_balanced_subset False: int64 and bool, not '30'); a
            # column of strings in a JSON file stays text
            infer_types(data.raw.select(extra), data.text_columns),
            rows.select(
                pl.col("row").alias(ROW),
                pl.col("record").alias(RECORD),
                pl.col("split").cast(pl.String).fill_null("train").alias(SPLIT),
            ),
        ],
        how="horizontal",
    )


def _split_tables(frame: pl.DataFrame) -> dict[str, pa.Table]:
    out = {}
    body = [c for c in frame.columns if c not in BOOKKEEPING]
    for name in SPLIT_ORDER:
        part = frame.filter(pl.col(SPLIT) == name).select(body)
        if part.height:
            out[name] = part.to_arrow()
    return out


FAMILY = DeepfakeFamily()

__all__ = ["FAMILY", "DeepfakeData", "DeepfakeFamily"]
