"""The knowledge-editing family (MQuAKE and MQuAKE-Remastered): reader, registration, export.

Schema: :mod:`curate.schemas.knowledge_editing`; tables:
:mod:`curate.schemas.knowledge_editing_tables`; rules, edit sets and fixes:
:mod:`curate.audits.knowledge_editing`.

The input is read a batch at a time and laid out as the three columnar tables (``cases``,
``hops``, ``edits``) of :class:`~curate.schemas.knowledge_editing_tables.KEData` that the rules join
and group over. A batch of original-layout records takes the columnar path
(:mod:`curate.families.knowledge_editing_columns`: Arrow parses it, a check derived from the models
vouches for records, polars lays out the tables); every record the check cannot vouch for, and
every batch that path cannot hold (the Remastered layout, fields beyond the models, ...), is
validated one by one with pydantic, so each defect names its record and field exactly as before.
With ``keep_records`` (fix, export) every record is validated one by one.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pyarrow as pa

from curate.audits.knowledge_editing import RULES
from curate.audits.knowledge_editing.contamination import edit_set_from_data, edited_table
from curate.core.dataset import ChangeEntry, LoadedDataset
from curate.core.diff import Batches, DiffSpec, Prehashed, column_hashes
from curate.core.engine import current as current_engine
from curate.core.errors import InputError, UsageError, arg
from curate.core.findings import Headline, InputInfo, Report
from curate.core.fixes import BOOKKEEPING, RECORD, ROW, SPLIT
from curate.core.keys import Keys
from curate.core.memory import release_freed
from curate.core.options import FamilyOptions
from curate.core.rules import AuditContext, RuleSet
from curate.core.streams import SplitStream, small_types
from curate.families.base import (
    CardDefaults,
    Family,
    Progress,
    check_not_blank,
    no_records,
    with_splits,
)
from curate.families.hints import hinted, not_this_family
from curate.families.knowledge_editing_columns import (
    CODED_FIELDS,
)
from curate.families.knowledge_editing_read import (
    SHARDS_PER_CPU,
    RecordShape,
    Shard,
    StringPool,
    TableBuilder,
    add_schema_rows,
    declared_type,
    detached,
    load_workers,
    merged_shards,
    plain_file,
    read_ahead,
    taken,
    validate_record,
)
from curate.io.read import local_parquet, open_source, sha256_of
from curate.io.sniff import Probe
from curate.io.spans import Span, SpanNumbering, input_spans
from curate.schemas.knowledge_editing import (
    KEOptions,
    MQuAKECase,
    layout_of,
    record_id,
)
from curate.schemas.knowledge_editing_tables import (
    FACT_KEYS,
    MARK_SCHEMA,
    QUESTION_KEYS,
    REBUILDABLE,
    KEData,
    arrow_type_error,
    only_input,
    records_to_arrow,
    remastered_batch,
    remastered_schema,
    struct_array,
    unify_struct_types,
)


class KnowledgeEditingFamily(Family):
    name = "knowledge-editing"
    aliases: tuple[str, ...] = ("mquake", "ke")
    card: CardDefaults = CardDefaults(
        title="Multi-hop knowledge editing (MQuAKE, MQuAKE-Remastered)",
        license="mit",
        task_categories=("question-answering",),
        language=("en",),  # MQuAKE's questions, cloze prompts and answers are English
    )
    Options: type[FamilyOptions] = KEOptions
    #: The invalid rules: KE001 (the schema) and KE003 (ids of two types): see their declarations.
    rules: RuleSet = RULES
    #: ``curate overlap`` keys: ``fact`` (the edit triples: an edit in two datasets is the
    #: same counterfactual) and ``question`` (the multi-hop questions, normalised as KE402
    #: compares them; text, so ``--near-duplicates`` applies).
    keys: tuple[Keys, ...] = (FACT_KEYS, QUESTION_KEYS)

    def read(
        self,
        paths: list[str | Path],
        options: FamilyOptions,
        *,
        progress: Progress | None = None,
        keep_records: bool = False,
        encoding: str | None = None,
    ) -> KEData:
        # Loading allocates millions of small objects and creates no cycles: the cyclic GC
        # would rescan them over and over (measured: 40% of load time), so pause it.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        engine = current_engine()
        # --engine ray: whole input shards read by the workers (see _load_sharded)
        loader = self._load if keep_records or engine.is_local() else self._load_sharded
        try:
            data = loader(
                paths,
                progress=progress,
                keep_records=keep_records,
                encoding=encoding,
                workers=load_workers(options),
            )
            return data
        finally:
            if gc_was_enabled:
                gc.enable()

    def _load(
        self,
        paths: Sequence[str | Path | Span],
        *,
        progress: Progress | None,
        keep_records: bool,
        encoding: str | None = None,
        workers: int = 1,
        first_row: int = 0,
        strings: StringPool | None = None,
    ) -> KEData:
        """The inputs' tables, rows numbered from ``first_row``; a :class:`~curate.io.spans.Span`
        among ``paths`` is read as one shard of its file (no hash, may hold no record).
        ``strings`` (a Ray worker's): the coded columns as indexes into it, not categories."""
        hashes = column_hashes()
        # a diff that audits nothing needs of the tables only each case's id and split
        builder = TableBuilder(strings, lean=hashes is not None and hashes.lean)
        schema_rows: list[dict[str, Any]] = []
        inputs: list[InputInfo] = []
        all_ids: list[Any] = []
        records: dict[int, MQuAKECase] = {}
        invalid: dict[int, dict[str, Any]] = {}
        marks: list[tuple[int, bool | None, list[str]]] = []
        layouts: dict[str, int] = {}
        row = first_row
        # The columnar path (see batch_columns) runs in ``workers`` threads, that many batches ahead
        # of the loop below: Arrow's parser and polars work without the GIL, so the batches are
        # parsed and laid out on every core while the next ones are read. Threads, not
        # processes: the tables (categoricals share one process-wide dictionary) are made where
        # they are used, and nothing is copied between processes. On Ray (--engine ray) the
        # same jobs are Ray tasks, one in flight per cluster CPU.
        engine = current_engine()
        if keep_records:
            pool, depth = None, 1
        elif engine.is_local():
            pool, depth = ThreadPoolExecutor(workers), workers
        else:
            pool, depth = engine.submitter(lambda: ThreadPoolExecutor(1)), engine.parallelism(1)
        try:
            for path in paths:
                # ``isinstance`` below, not ``span is None``: a checker then knows ``path`` is a
                # file where it is one
                span = path if isinstance(path, Span) else None
                if not isinstance(path, Span):
                    check_not_blank(path)
                # A local file's hash is taken beside the parsing (hashlib works without the
                # GIL) instead of in a pass of its own before it.
                local = (
                    plain_file(path)
                    if not isinstance(path, Span) and pool is not None and engine.is_local()
                    else None
                )
                # the columnar path takes the coded fields as parquet stores them (see Codes)
                coded = CODED_FIELDS if pool is not None else ()
                try:
                    src = (
                        path.open(coded)
                        if isinstance(path, Span)
                        else open_source(
                            path, encoding=encoding, hash_input=local is None, dictionary=coded
                        )
                    )
                except InputError as e:
                    if e.message.startswith("unknown file type"):  # an HDF5 file, say
                        raise hinted(e, self, str(path)) from None
                    raise
                digest = (
                    pool.submit(sha256_of, local)
                    if pool is not None and local is not None
                    else None
                )
                n_file = 0
                splits: dict[str, int] = {}
                for batch, job, first in read_ahead(
                    src.batches, pool, row, depth, keep_codes=strings is not None
                ):
                    assert first == row, (first, row)
                    if hashes is not None:  # curate diff: hash the values while they are here
                        if batch.arrow is not None:
                            hashes.add(row, batch.arrow, pool)
                        else:
                            hashes.give_up()
                    cols = job.result() if job is not None else None
                    if n_file == 0 and (span is None or span.first_index == 0):
                        self._check_first_batch(path, batch, cols)
                    if cols is not None:
                        columns, id_kind = cols
                        drop = []
                        ids = columns.ids
                        for i in columns.unsure:
                            # the check could not vouch for it: pydantic decides, as before
                            raw = batch.rows[i]
                            rec = record_id(raw, row + i)
                            ids[i] = detached(raw.get("case_id", rec))
                            _, case, errs = validate_record(raw)
                            if case is None:
                                add_schema_rows(schema_rows, errs, src.path, batch, i, row + i, rec)
                                drop.append(row + i)
                        # A record that parsed in the declared type and validates is a case
                        # in the original layout (a Remastered field would not have parsed).
                        layouts["original"] = layouts.get("original", 0) + len(ids) - len(drop)
                        all_ids.extend(ids)
                        builder.add_columns(columns, drop, id_kind)
                        n = len(ids)
                        row += n
                        n_file += n
                        if batch.split is not None:
                            splits[batch.split] = splits.get(batch.split, 0) + n
                    else:
                        for i, raw in enumerate(batch.rows):
                            rec = record_id(raw, row)
                            all_ids.append(detached(raw.get("case_id", rec)))
                            layout, case, errs = validate_record(raw)
                            if case is None:
                                add_schema_rows(schema_rows, errs, src.path, batch, i, row, rec)
                                if keep_records:
                                    invalid[row] = raw
                            else:
                                assert layout is not None  # a validated case has its layout
                                layouts[layout] = layouts.get(layout, 0) + 1
                                builder.add(row, rec, batch.split, layout, case)
                                if case.edited is not None or case.withheld_edits:
                                    marks.append(_marks(row, case))
                                if keep_records:
                                    records[row] = case
                            if batch.split is not None:
                                splits[batch.split] = splits.get(batch.split, 0) + 1
                            row += 1
                            n_file += 1
                    builder.flush()
                    del batch, cols
                    if progress:
                        progress(f"read {src.path.name}", row)
                if n_file == 0 and not isinstance(path, Span):  # one empty input of several: broken
                    raise no_records(path)
                try:
                    sha = digest.result() if digest is not None else src.sha256
                except OSError as e:  # as open_source says it
                    raise InputError(f"cannot read ({e.strerror or e})", path=src.path) from None
                inputs.append(InputInfo(str(path), sha, n_file, src.format, splits))
            if hashes is not None:
                hashes.settle()
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        cases, hops, edits = builder.frames()
        # Once, after the last batch: glibc reuses a batch's freed memory for the next one, so
        # the resident size plateaus while reading; trimming after every batch handed the same
        # pages back and faulted them in again (1 M cases: 68 s → 34 s of load, 5.8 M → 2.7 M
        # page faults, peak RSS 2.43 → 2.51 GiB; bench/history/RESULTS-log-2026.md).
        release_freed()
        from curate.core.findings import rule_output

        marks_frame = pl.DataFrame(marks, schema=MARK_SCHEMA, orient="row")

        schema = rule_output(schema_rows)
        return KEData(
            family=self.name,
            inputs=inputs,
            schema_findings=schema,
            cases=cases,
            hops=hops,
            edits=edits,
            all_ids=all_ids,
            records=records,
            invalid=invalid,
            stats={"layouts": layouts, "valid_cases": cases.height, "records": row - first_row},
            encoding=encoding,
            marks=marks_frame,
            shape=builder.shape,
        )

    def _check_first_batch(self, path: Any, batch: Any, cols: Any) -> None:
        """Refuse an input none of whose first batch's records has a MQuAKE layout (exit 2,
        naming the family it looks like): a table of another family, not damaged cases."""
        if cols is not None and len(cols[0].unsure) < len(batch):
            return  # the columnar check vouched for some records: cases in the original layout
        rows = batch.rows
        if not rows or any(isinstance(r, dict) and layout_of(r) is not None for r in rows):
            return
        keys = dict.fromkeys(str(k) for r in rows if isinstance(r, dict) for k in r)
        raise not_this_family(
            self,
            str(path),
            "the MQuAKE layout",
            keys=keys,
            why="no 'orig' object, no 'orig_triples'/'new_triples', no requested_rewrite targets",
        )

    def sniff(self, probe: Probe) -> str | None:
        """A JSON/parquet input whose records carry a MQuAKE layout's own keys."""
        if {"requested_rewrite", "orig", "orig_triples", "new_triples"} & probe.keys:
            return "a MQuAKE (knowledge editing) file"
        return None

    def _load_sharded(
        self,
        paths: Sequence[str | Path],
        *,
        progress: Progress | None,
        keep_records: bool,
        encoding: str | None = None,
        workers: int = 1,
    ) -> KEData:
        """:meth:`_load` on a cluster (``--engine ray``): whole input shards read by the workers.

        Each input that splits soundly (:func:`~curate.io.spans.input_spans`: an uncompressed UTF-8
        JSON Lines file by byte ranges at line boundaries, a parquet file by row groups) is
        read, validated and laid out by one Ray task per shard (:func:`load_span`: the local
        reader over the shard), which opens the file itself and returns the shard's compact
        tables and findings; the driver only reads the file to hash it, beside the tasks.
        Rows, line numbers and record indexes are those of the whole file: a parquet shard
        learns where it starts from the footer, a JSON Lines shard from the newlines and blank
        lines before it, counted here in the same sequential read that hashes the file
        (:class:`~curate.io.spans.SpanNumbering`; each shard is sent as soon as the read has passed
        its start, so the workers start at once). The parts are put together in input order
        (:func:`merged_shards`), so the rules see the tables :meth:`_load` builds, row for row; the
        coded columns are decoded and coded again in this process as each part arrives. Any
        other input (a JSON array, compressed, standard input, the Hub, a folder) is read here
        by :meth:`_load`, its batches' columnar parsing as Ray tasks. Errors come in input
        order, as locally: one raised here for an input waits for the shards of the inputs
        before it, whose own error comes first.
        """
        engine = current_engine()
        parts: list[Any] = []  # per input: its KEData, or (path, format, task refs, hash)
        hasher = ThreadPoolExecutor(1)
        row = 0
        try:
            for path in paths:
                try:
                    part, records = self._send(path, row, engine, hasher, encoding)
                    if part is None:
                        part = self._load(
                            [path],
                            progress=progress,
                            keep_records=keep_records,
                            encoding=encoding,
                            workers=workers,
                            first_row=row,
                        )
                        records = part.inputs[0].records
                except BaseException:
                    taken(parts, engine, progress)  # an earlier input's error comes first
                    raise
                parts.append(part)
                row += records
            datas, inputs = taken(parts, engine, progress)
        finally:
            hasher.shutdown(cancel_futures=True)
        return merged_shards(self.name, datas, inputs, encoding)

    @staticmethod
    def _send(
        path: str | Path, row: int, engine: Any, hasher: ThreadPoolExecutor, encoding: str | None
    ) -> tuple[Any, int]:
        """One input's shards sent as Ray tasks, rows numbered from ``row``: ``((path, format,
        task refs, hash or hash job), records)``; ``(None, 0)`` when it is read on the driver."""
        check_not_blank(path)
        spans = input_spans(path, encoding, SHARDS_PER_CPU * engine.parallelism(1))
        if spans is None:
            return None, 0
        remote = engine.remote(load_span)
        digest: str | Future[str]
        if spans[0].format == "jsonl":
            sha = hashlib.sha256()
            numbering = SpanNumbering(spans, sha)
            try:
                refs = [remote.remote(s, row + s.first_index, encoding) for s in numbering]
            except OSError as e:  # as open_source says it
                raise InputError(f"cannot read ({e.strerror or e})", path=Path(str(path))) from None
            if not numbering.records:  # an empty file: the local reader says so, its way
                return None, 0
            digest, records = sha.hexdigest(), numbering.records
        else:
            digest = hasher.submit(sha256_of, Path(str(path)))
            refs = [remote.remote(s, row + s.first_index, encoding) for s in spans]
            records = sum(s.records or 0 for s in spans)
        return (path, spans[0].format, refs, digest), records

    # ----------------------------------------------------------------- edit sets

    def summarise(self, report: Report, ctx: AuditContext) -> None:
        """The edit-set contamination figures a reader checks first."""
        f = report.findings
        contaminated = {
            # distinct rows, not ids: one row is one case, and integers count faster
            code: f.filter(pl.col("rule") == code)["row"].n_unique()
            for code in ("KE201", "KE202")
            if code in report.rules_run
        }
        edited: pl.Series = ctx.table("edited")
        n_edited = int(edited.sum()) if edited.len() else 0
        data: KEData = ctx.data
        spec = ctx.options.edit_set
        extra: dict[str, Any] = {}
        if edit_set_from_data(data):
            extra["from"] = "the cases' edited flags (written by curate fix)"
            if "edit_set" in ctx.options.model_fields_set:
                extra["ignored"] = f"--edit-set {spec}: the data carries its own edit set"
            spec = "edited flags (curate fix)"
            report.options["edit_set"] = spec
        report.stats["edit_set"] = {
            "spec": spec,
            "edited_cases": n_edited,
            "unedited_cases": edited.len() - n_edited,
            **extra,
        }
        if contaminated:
            report.stats["contamination"] = {
                "edit_set": spec,
                "edited_cases": n_edited,
                "edited_contaminated": contaminated.get("KE201"),
                "unedited_cases": edited.len() - n_edited,
                "unedited_contaminated": contaminated.get("KE202"),
            }
            c = report.stats["contamination"]
            report.headlines.append(
                Headline(
                    f"edit set {{}}: {c['edited_contaminated']} of {c['edited_cases']} edited "
                    f"and {c['unedited_contaminated']} of {c['unedited_cases']} unedited cases "
                    "contaminated",
                    (str(spec),),
                    label="edit set",
                )
            )

    # ----------------------------------------------------------------- export / fix
    def plots(self, data: LoadedDataset, report: Report, ctx: AuditContext) -> list[Any]:
        """Hops per case per split, edits per case in and out of the edit set."""
        from curate.families.knowledge_editing_plots import ke_plots

        assert isinstance(data, KEData)
        return ke_plots(data, report, ctx)

    def to_tables(self, data: LoadedDataset) -> dict[str, SplitStream]:
        """The valid cases per split, as streams of record batches in the output layout
        (:func:`output_layout`: ``--layout``, else the input's own).

        Why streams re-read from the inputs: keeping every validated case (pydantic objects)
        and one list of dicts for the whole export took 10.7 GB for 200k cases. Here the inputs
        are read again a batch at a time, each record validated with the schema models
        (:func:`validate_record`), invalid ones skipped (KE001 and any row
        :meth:`invalid_records` names: nothing invalid is published), and each batch turned into
        Arrow on its own, with the one Arrow type of all batches declared from the schema models
        (:func:`declared_type`, from what the load noted about the cases). Only cases the models
        cannot type (extra fields, the Remastered ``split`` map, ...) need a first pass that
        infers the type from the records themselves. Memory follows the batch. In the
        Remastered layout each batch is then rearranged column by column
        (:func:`~curate.schemas.knowledge_editing_tables.remastered_batch`).
        """
        assert isinstance(data, KEData)
        layout = output_layout(data)
        skip = set(self.invalid_records(data)["row"].drop_nulls().to_list())
        counts: dict[str, int] = {}
        splits = data.cases["split"].fill_null("train").to_list()
        for row, split in zip(data.cases["row"].to_list(), splits, strict=True):
            if row not in skip:  # a case an invalid rule names (KE003) is not published
                counts[split] = counts.get(split, 0) + 1
        paths = [i.path for i in data.inputs]
        encoding = data.encoding
        declared = data.shape
        struct_type = declared_type(declared) if declared is not None else None
        if struct_type is None:
            declared = None
            types = [
                arr.type
                for _, _, rows in _valid_batches(paths, skip, encoding, None)
                if (arr := struct_array(rows, only_input(data))) is not None
            ]
            struct_type = unify_struct_types(types)
        struct_type = _withheld_typed(struct_type)
        schema = pa.schema(list(struct_type))
        carried = _carried(data)
        out_schema = remastered_schema(schema, carried) if layout == "remastered" else schema

        def laid_out(parts: list[pa.Array]) -> pa.RecordBatch:
            batch = _record_batch(parts)
            return remastered_batch(batch, carried) if layout == "remastered" else batch

        def stream(split: str) -> SplitStream:
            def batches() -> Iterator[pa.RecordBatch]:
                # One record batch per input batch, converted a chunk at a time (see
                # :func:`_valid_batches`).
                parts: list[pa.Array] = []
                current = None
                for n, _, rows in _valid_batches(paths, skip, encoding, split, declared):
                    if n != current and parts:
                        yield laid_out(parts)
                        parts = []
                    current = n
                    try:
                        parts.append(pa.array(rows, type=struct_type))
                    except (OverflowError, pa.ArrowException) as e:
                        raise arrow_type_error(e, rows, only_input(data)) from None
                if parts:
                    yield laid_out(parts)

            return SplitStream(out_schema, batches, counts[split])

        return {split: stream(split) for split in counts}

    def output_note(self, data: LoadedDataset) -> str:
        """The card's (and croissant's) word on the layout the cases are written in."""
        assert isinstance(data, KEData)
        return layout_note(data)

    # The fix engine (curate.core.fixes) applies the findings' edits; the family lays the records
    # out.
    def fix_frame(
        self, data: LoadedDataset, invalid: pl.DataFrame
    ) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """Every valid case in the original layout, plus the two columns a fixed MQuAKE carries:
        ``edited`` (is the case in the edit set this was fixed for) and ``withheld_edits`` (the
        edits of other cases to leave out when asking it; KE201/KE202 fill them).

        Records an invalid rule names are left out and logged whole, as read. Needs the data
        loaded with ``keep_records=True``.
        """
        assert isinstance(data, KEData)
        changes, skip = _left_out(data, invalid)
        cases = data.cases.select("row", "record", pl.col("split").fill_null("train"))
        edited = _edited(data)
        keep = [r for r in cases["row"].to_list() if r not in skip and r in data.records]
        rows = [data.records[r].to_original() for r in keep]
        if not rows:
            return pl.DataFrame(
                schema={ROW: pl.Int64, RECORD: pl.String, SPLIT: pl.String}
            ), changes
        frame = pl.from_arrow(records_to_arrow(rows, only_input(data)))
        assert isinstance(frame, pl.DataFrame)
        flags = dict(zip(cases["row"].to_list(), edited.to_list(), strict=True))
        meta = cases.filter(pl.col("row").is_in(keep))
        id_type = frame.schema["case_id"]
        withheld_type = pl.List(
            pl.Struct({"case_id": id_type, "edit_index": pl.Int64, "triple": pl.List(pl.String)})
        )
        frame = frame.with_columns(
            pl.Series("edited", [bool(flags.get(r)) for r in keep], dtype=pl.Boolean),
            (
                pl.col("withheld_edits").cast(withheld_type).fill_null([])
                if "withheld_edits" in frame.columns
                and frame.schema["withheld_edits"] != pl.List(pl.Null)
                else pl.lit([], withheld_type).alias("withheld_edits")
            ),
            meta["row"].alias(ROW),
            meta["record"].alias(RECORD),
            meta["split"].alias(SPLIT),
        )
        return frame, changes

    def diff_reader(
        self, data: LoadedDataset
    ) -> Callable[[], tuple[pl.DataFrame | Batches | Prehashed, list[ChangeEntry]]]:
        """The cases as the files hold them, for ``curate diff``: parquet on disk read by
        polars itself, another batch's Arrow as it comes, a text format's records as Arrow of
        the type the load declared (:func:`declared_type`, as the export makes them); the
        cases an invalid rule names left out, each named in the changes (its value is kept
        only by a load with records). The reader holds the ids, splits and paths, not the
        loaded tables: the caller lets those go before the values are read.

        Why not :meth:`fix_frame`: it dumps one validated object per case (0.2 ms a case:
        over three minutes a side at 1 M cases), and a diff needs the values, not the models;
        it also adds the two columns the fix engine works with (``edited``,
        ``withheld_edits``), which are the input's only when it had them. ``curate fix``'s
        own diff of its input reads the input this way too.
        """
        assert isinstance(data, KEData)
        invalid = self.invalid_records(data)
        changes, skip = _left_out(data, invalid)
        changes = with_splits(changes, invalid, data)
        cases = data.cases.select(
            pl.col("row").alias(ROW),
            pl.col("record").alias(RECORD),
            pl.col("split").fill_null("train").alias(SPLIT),
        ).filter(~pl.col(ROW).is_in(sorted(skip)))
        paths = [i.path for i in data.inputs]
        encoding, shape, name = data.encoding, data.shape, only_input(data)

        def batches() -> Iterator[pl.DataFrame]:
            return _case_batches(paths, encoding, shape, name, skip, cases)

        # hashed while loading (curate diff, parquet or Arrow batches): no pass to hash them
        hashes = column_hashes()
        if hashes is not None and hashes.complete and hashes.rows == data.stats["records"]:
            done = hashes.prehashed(cases, batches)
            return lambda: (done, changes)
        return lambda: (batches, changes)

    def diff_frame(self, data: LoadedDataset) -> tuple[pl.DataFrame, list[ChangeEntry]]:
        """See :meth:`diff_reader` (the same records, read now as one frame)."""
        records, changes = self.diff_reader(data)()
        if isinstance(records, pl.DataFrame):
            return records, changes
        if isinstance(records, Prehashed):
            records = records.batches
        parts = list(records())
        frame = pl.concat(parts, how="diagonal_relaxed") if parts else pl.DataFrame()
        return frame, changes

    def diff_spec(self, data: LoadedDataset) -> DiffSpec:
        """Cases pair by ``case_id``; a case whose id changed pairs by its chain (``orig``) and
        its edits (``requested_rewrite``): what KE401 calls the same case."""
        return DiffSpec(
            stable_ids=True, id_columns=("case_id",), content_key=("orig", "requested_rewrite")
        )

    def fix_tables(self, frame: pl.DataFrame, data: LoadedDataset) -> dict[str, pa.Table]:
        """The fixed cases per split, in frame order, with Arrow's plain (not large) types, in
        the output layout (:func:`output_layout`; the frame itself is the original layout the
        findings' field paths name).

        A ``withheld_edits`` list is written as the changelog built it: per contaminated hop
        (hop order), the sources in file order, then edit index.
        """
        assert isinstance(data, KEData)
        remastered = output_layout(data) == "remastered"
        carried = _carried(data)
        out: dict[str, pa.Table] = {}
        for split in dict.fromkeys(frame[SPLIT].to_list()):
            part = frame.filter(pl.col(SPLIT) == split).drop(BOOKKEEPING).to_arrow()
            part = part.cast(small_types(part.schema))
            if remastered:
                part = pa.Table.from_batches(
                    [remastered_batch(b, carried) for b in part.to_batches()],
                    remastered_schema(part.schema, carried),
                )
            out[split] = part
        return out

    def fix_original(self, data: LoadedDataset, row: int, cells: dict[str, Any]) -> Any:
        """A dropped case in the changelog: the record as validated (absent fields stay absent)."""
        assert isinstance(data, KEData)
        case = data.records.get(row)
        return case.to_original() if case is not None else cells

    def fix_summary(
        self, run: Any, data: LoadedDataset, options: FamilyOptions
    ) -> tuple[dict[str, bytes], dict[str, Any]]:
        """``edit_set.json`` (the edited cases that remain) and the edit-set figures, naming
        every edited case a fix dropped and why: a dropped edited case changes the edit set."""
        assert isinstance(data, KEData)
        assert isinstance(options, KEOptions)
        frame: pl.DataFrame = run.frame
        if frame.height:
            kept = frame.filter(pl.col("edited"))["case_id"].to_list()
            withheld = int((frame["withheld_edits"].list.len() > 0).sum())
        else:
            kept, withheld = [], 0
        edited = _edited(data)
        was_edited = set(data.cases.filter(edited)["record"].to_list())
        dropped = [
            {"case": c.record, "rule": c.rule, "reason": c.reason}
            for c in run.changelog
            if c.field == "" and c.new is None and c.record in was_edited
        ]
        summary = {
            "edit_set": "edited flags (curate fix)"
            if edit_set_from_data(data)
            else options.edit_set,
            "edited_cases": len(kept),
            "cases_with_withheld_edits": withheld,
            "edited_cases_dropped": dropped,
        }
        # Said once here (stdout, card, fix_summary) rather than per record in the changelog:
        # a converted record's fields change place, none changes value.
        if set(_layout_counts(data)) - {"original"} or output_layout(data) != "original":
            summary["layout"] = layout_note(data, paths=False).rstrip(".")
        return {"edit_set.json": orjson.dumps(kept, option=orjson.OPT_INDENT_2)}, summary


def _edited(data: KEData) -> pl.Series:
    """The edit set per row of ``cases``, as the audit's ``edited`` table resolves it."""
    from curate.core.rules import AuditContext

    return edited_table(AuditContext(data, data.options))


#: How each layout is named to a reader (card, croissant, fix summary).
LAYOUT_NAMES = {
    "original": "the original MQuAKE layout (nested: orig{triples, ...}, target_new/target_true "
    "objects)",
    "remastered": "the MQuAKE-Remastered layout (flat: target_new_str/target_true_str, "
    "orig_triples, new_triples, *_labeled, edit_triples, split)",
}


def output_layout(data: KEData) -> str:
    """The layout the cases are written in: ``--layout`` when given, else the input's own.

    An input mixing both layouts has no own layout: choosing one for the user would convert half
    the records without being asked (exit 2). An original-layout case can be written in the
    Remastered layout only if it carries the Remastered ``split`` labels (a case exported from
    the Remastered layout to the original one does): they say which evaluation (edit count)
    edits the case, which nothing in an original-layout case says, and the release's own loader
    reads them for every case. Missing, they are named (exit 2), never invented.
    """
    counts = _layout_counts(data)
    chosen: str | None = data.options.layout if isinstance(data.options, KEOptions) else None
    if chosen is None:
        if len(counts) > 1:
            raise UsageError(
                f"the input mixes layouts ({counts.get('original', 0)} original, "
                f"{counts.get('remastered', 0)} MQuAKE-Remastered cases): choose the output's "
                f"with {arg('--layout', 'original')} or {arg('--layout', 'remastered')}"
            )
        chosen = next(iter(counts), "original")
    if chosen == "remastered" and counts.get("original"):
        missing = data.cases.filter(
            (pl.col("layout") == "original") & pl.col("split_map").is_null()
        )["record"]
        if missing.len():
            shown = ", ".join(missing.head(5).to_list()) + (", ..." if missing.len() > 5 else "")
            raise UsageError(
                f"{arg('--layout', 'remastered')}: {missing.len()} original-layout cases have no "
                "`split` "
                '(the Remastered labels per edit count, e.g. {"1000": ["edited"]}), which '
                f"cannot be derived from them (cases {shown}); write them with "
                f"{arg('--layout', 'original')}"
            )
    return chosen


def layout_note(data: KEData, *, paths: bool = True) -> str:
    """One sentence on the layout the cases are written in and on what was converted; with
    ``paths``, one more on how findings name the flat layout's fields."""
    counts = _layout_counts(data)
    out = output_layout(data)
    converted = sum(n for layout, n in counts.items() if layout != out)
    named = (
        " Findings and changes name fields by the original layout's paths "
        "(orig.new_triples[i] is new_triples[i], requested_rewrite[k].target_new.id is "
        "requested_rewrite[k].target_new_id)."
        if paths and out == "remastered"
        else ""
    )
    if not converted:
        return f"Cases written in {LAYOUT_NAMES[out]}, as read.{named}"
    other = "MQuAKE-Remastered (flat)" if out == "original" else "original-layout (nested)"
    return f"{converted} {other} cases written in {LAYOUT_NAMES[out]}; values unchanged.{named}"


def _layout_counts(data: KEData) -> dict[str, int]:
    """Valid cases per input layout (``original``/``remastered``), only layouts present."""
    counts = data.cases.group_by("layout").len()
    return {str(k): int(n) for k, n in sorted(counts.iter_rows()) if k is not None and n}


def _carried(data: KEData) -> frozenset[str]:
    """Which rebuildable ``orig`` lists to write in the Remastered layout: those some case
    carried (every original-layout case carries both; the release carries ``edit_triples``)."""
    shape = data.shape
    return frozenset(shape.carried) if isinstance(shape, RecordShape) else REBUILDABLE


def _marks(row: int, case: MQuAKECase) -> tuple[int, bool | None, list[str]]:
    """A case's ``curate fix`` marks as a row of :data:`MARK_SCHEMA`."""
    withheld = [f"{w.case_id}\x1f{w.edit_index}" for w in case.withheld_edits or ()]
    return row, case.edited, withheld


#: Valid cases per chunk in the export: each chunk's dicts become Arrow and are freed before
#: the next is made, so a batch's parsed records and its converted copy are not all alive at once.
EXPORT_CHUNK = 1024


def _left_out(data: KEData, invalid: pl.DataFrame) -> tuple[list[ChangeEntry], set[int]]:
    """A changelog entry per case an invalid rule names (its first finding; the case as read
    when the data kept it) and the rows left out."""
    bad = invalid.unique("row", keep="first", maintain_order=True)
    changes = [
        ChangeEntry(
            r["record"],
            "",
            data.invalid.get(r["row"]),
            None,
            r["rule"],
            f"dropped: invalid record ({r['field']}: {r['message']})",
        )
        for r in bad.iter_rows(named=True)
    ]
    return changes, set(bad["row"].drop_nulls().to_list())


#: Cases per batch ``curate diff`` reads of a parquet input (~200 MB of MQuAKE values).
DIFF_BATCH = 65536


def _case_batches(
    paths: Sequence[str],
    encoding: str | None,
    shape: RecordShape | None,
    name: str | None,
    skip: set[int],
    cases: pl.DataFrame,
) -> Iterator[pl.DataFrame]:
    """Every valid case's values in the original layout, batch by batch, with the engine's
    bookkeeping columns (``cases``: ``__row, __record, __split`` of the valid rows, in row
    order); see :meth:`KnowledgeEditingFamily.diff_reader`. Parquet batches are the file's
    own Arrow; text records become Arrow of the type the load declared."""
    struct_type = declared_type(shape) if shape is not None else None
    row = 0
    for path in paths:
        files = local_parquet(path)
        if files is not None:  # parquet on disk: polars' streaming reader (3x curate's batches)
            for _, names in files:
                for chunk in pl.scan_parquet(names).collect_batches(chunk_size=DIFF_BATCH):
                    rows = pl.int_range(row, row + chunk.height, dtype=pl.Int64, eager=True)
                    row += chunk.height
                    yield _with_ids(chunk.with_columns(rows.alias(ROW)), cases)
            continue
        for batch in open_source(path, hash_input=False, encoding=encoding).batches:
            if batch.arrow is not None:
                part = pl.from_arrow(batch.arrow)
                assert isinstance(part, pl.DataFrame)
                rows = pl.int_range(row, row + part.height, dtype=pl.Int64, eager=True)
                row += part.height
            else:
                raws = batch.rows
                keep = [i for i in range(len(raws)) if row + i not in skip]
                kept = [raws[i] for i in keep]
                rows = pl.Series([row + i for i in keep], dtype=pl.Int64)
                row += len(raws)
                if not kept:
                    continue
                arr = (
                    pa.array(kept, type=struct_type)
                    if struct_type is not None
                    else struct_array(kept, name)
                )
                if arr is None:
                    continue
                part = pl.from_arrow(pa.Table.from_struct_array(arr))
                assert isinstance(part, pl.DataFrame)
            yield _with_ids(part.with_columns(rows.alias(ROW)), cases)


def _with_ids(part: pl.DataFrame, cases: pl.DataFrame) -> pl.DataFrame:
    """The valid rows of one batch (consecutive ``__row`` numbers) with their ids and splits
    beside them: the batch's slice of ``cases`` (sorted by row), no join over all of it."""
    if not part.height:
        return part.join(cases, on=ROW, how="inner")
    first, last = part[ROW][0], part[ROW][-1]
    lo, hi = cases[ROW].search_sorted(pl.Series([first, last + 1], dtype=pl.Int64)).to_list()
    mine = cases.slice(lo, hi - lo)
    if mine.height != part.height:  # invalid rows in this batch: left out
        part = part.filter(pl.col(ROW).is_in(mine[ROW].implode()))
    if part.height == mine.height and part[ROW].equals(mine[ROW]):
        return pl.concat([part, mine.drop(ROW)], how="horizontal")
    return part.join(cases, on=ROW, how="inner", maintain_order="left")


def _valid_batches(
    paths: Sequence[str],
    skip: set[int],
    encoding: str | None,
    split: str | None,
    declared: RecordShape | None = None,
) -> Iterator[tuple[int, str, list[dict[str, Any]]]]:
    """``(batch number, split, valid cases in the original layout)``, in file order.

    Each input batch comes in chunks of at most :data:`EXPORT_CHUNK` cases, all with the batch's
    number; each raw record is let go as soon as it is validated. Rows are numbered across inputs
    exactly as :meth:`KnowledgeEditingFamily.load` numbers them, so ``skip`` (rows an
    invalid-record rule names) lines up. With ``split``, batches of other splits are passed over
    without being validated. With ``declared`` (the shape the load noted, which the Arrow type
    was declared from), each batch's cases are checked against it: a field the type does not
    have would be dropped without a word, so an input edited since it was loaded is an error,
    not a silently thinner export.
    """
    row = 0
    number = 0
    for path in paths:
        src = open_source(path, hash_input=False, encoding=encoding)
        for batch in src.batches:
            number += 1
            name = batch.split or "train"
            raws: list[Any] = batch.rows  # each raw record is let go (None) once validated
            if split is not None and name != split:
                row += len(raws)
                continue
            del batch
            cases = []
            shape = RecordShape()
            for i in range(len(raws)):
                raw, raws[i] = raws[i], None
                if row not in skip:
                    _, case, _ = validate_record(raw)
                    if case is not None:
                        if declared is not None:
                            shape.note(case)
                        cases.append(case.to_original())
                row += 1
                if len(cases) == EXPORT_CHUNK:
                    if declared is not None and not shape.fits(declared):
                        raise _changed(src.path)
                    yield number, name, cases
                    cases = []
            if declared is not None and not shape.fits(declared):
                raise _changed(src.path)
            if cases:
                yield number, name, cases


def _changed(path: Any) -> InputError:
    return InputError(
        "the input changed since it was read: its cases no longer match the columns declared "
        "for the export (export it again)",
        path=path,
    )


def _record_batch(parts: list[pa.Array]) -> pa.RecordBatch:
    arr = parts[0] if len(parts) == 1 else pa.concat_arrays(parts)
    return pa.RecordBatch.from_struct_array(arr)


def load_span(span: Span, first_row: int, encoding: str | None) -> Shard:
    """One input shard read, validated and laid out where the task runs: :meth:`~
    KnowledgeEditingFamily._load` over the span, its columnar parsing on one thread beside
    the reading (a task holds one CPU), its coded columns as indexes into the shard's
    strings (:class:`StringPool`)."""
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as load() does
    try:
        strings = StringPool()
        data = FAMILY._load(
            [span],
            progress=None,
            keep_records=False,
            encoding=encoding,
            workers=1,
            first_row=first_row,
            strings=strings,
        )
        return Shard(data, strings)
    finally:
        if gc_was_enabled:
            gc.enable()


FAMILY = KnowledgeEditingFamily()

__all__ = ["FAMILY", "KEData", "KnowledgeEditingFamily", "validate_record"]


def _withheld_typed(struct_type: pa.StructType) -> pa.StructType:
    """``withheld_edits`` with its own type where every case's list was empty (Arrow infers
    ``list<null>`` from empty lists): a remaster re-exported with no edit withheld kept
    ``list<null>``, which cannot be concatenated with one whose lists hold edits (found by a
    new-user review). The type is the one ``curate fix`` writes."""
    at = struct_type.get_field_index("withheld_edits")
    if at < 0 or struct_type.field(at).type != pa.list_(pa.null()):
        return struct_type
    ids = struct_type.field(struct_type.get_field_index("case_id")).type
    withheld = pa.list_(
        pa.struct(
            [
                pa.field("case_id", ids),
                pa.field("edit_index", pa.int64()),
                pa.field("triple", pa.list_(pa.string())),
            ]
        )
    )
    fields = [struct_type.field(i) for i in range(struct_type.num_fields)]
    fields[at] = pa.field("withheld_edits", withheld, nullable=fields[at].nullable)
    return pa.struct(fields)
