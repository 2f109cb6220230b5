"""Fixes are findings applied: one engine for every family (ruff's model).

A rule that can repair what it finds puts the repair in its findings' ``fix`` column, as one JSON
edit per finding. This module picks the findings ``curate fix`` should apply (``--select``,
``--ignore``, ``--unsafe-fixes``), applies their edits to the records, and writes one changelog
entry per change naming the rule and the finding that asked for it. The family only supplies the
records as a frame and lays the result out again; it never decides what to change.

Why edits in findings rather than a fix function per family: the audit already located every
defect (record, field, evidence); recomputing it in a fixer is how the two drifted apart before
(fixes that ignored ``--select``, split moves logged under the wrong rule, payloads nobody read).
With the edit in the finding, what the report proposes is exactly what the fix does.

Edits (the ``fix`` JSON of a finding; ``row`` is the finding's row):

* ``{"op": "set", "field": F, "old": O, "new": N}`` — set column ``F`` of the row to ``N``;
  applied only while the cell still holds ``O`` (another fix may have changed it first: the next
  pass re-audits and proposes again from the new value);
* ``{"op": "drop"}`` — leave the row out (the changelog keeps it whole, so it can be restored);
* ``{"op": "move", "old": S, "new": T, "with": [[R, S2], ...]}`` — move the row from split
  ``S`` to split ``T``, and with it each row whose finding row is ``R`` that still sits in split
  ``S2`` (``with`` is optional). Why a group: a leak is fixed by putting every row of one glycan
  in one split, and the rows that must move are not all rows the rule reports on (the training
  rows of a leaking glycan are not findings). Every finding of a group states the whole group,
  so whichever is applied first moves it and the others find nothing left to do;
* ``{"op": "extend", "field": F, "values": [...], "refs": [...]}`` — add values to the list
  column ``F`` (values already there are not repeated). ``refs`` (optional) names, per value,
  the record the value points at: a value whose record a fix drops is not added (a withheld
  edit of a dropped duplicate would point at nothing);
* ``{"op": "remove", "field": F, "match": [{...}, ...]}`` — take out of the list column ``F``
  every item (an object) that has all the keys and values of one of the ``match`` patterns;
* ``{"op": "merge_rows", "into": R}`` — copy this row's values into the empty cells of the row
  whose finding row is ``R``, then drop this row (a value that differs from ``R``'s is logged as
  discarded);
* ``{"op": "merge_columns", "into": C, "from": D}`` — a table edit (the finding names no row):
  fill the empty cells of column ``C`` from column ``D``, log every value of ``D`` that differs
  from ``C``'s as discarded, then drop ``D``.

* ``{"op": "drop", "where": {C: V, ...}}`` — a table edit: leave out every row whose columns
  ``C`` hold ``V`` (a whole HDF5 task group: every history of it), each logged whole;
* a ``drop`` of a later copy may say what it copies: ``"copy_of": R`` (the original's finding
  row) or ``"copy_of": {C: V, ...}`` (rows holding those values). It applies only while the
  original is still there: when the original is itself left out (an invalid record, or
  dropped by an earlier edit of the pass), the copy is kept, and the next pass's re-audit
  names the copy that is first now. Without it, a valid copy of an invalid original was lost
  with it;
* ``{"op": "renumber", "field": F, "where": {C: V, ...}, "reason": R}`` — a table edit, applied
  after every other edit of the pass: the values of column ``F`` of the rows left (those
  matching ``where``, if given) are renamed ``0`` … ``N-1`` in frame order (as text in a text
  column). Why: a container whose members are looked up by index (HDF5 task groups opened as
  ``f[str(i)]``) must have no gap once one is dropped. One changelog line per renamed value
  (its record is the old value), attributed to the finding on that value if there is one.

Records are a polars frame with three bookkeeping columns: ``__row`` (the finding row numbering
of the audited data), ``__record`` (the record id findings name) and ``__split``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from curate.core.dataset import ChangeEntry, Written
from curate.core.errors import UsageError, arg
from curate.core.options import LabelIssueOptions
from curate.core.rules import FixSafety, Rule, RuleSet

ROW, RECORD, SPLIT = "__row", "__record", "__split"
BOOKKEEPING = (ROW, RECORD, SPLIT)

#: Record edits are applied in this order within one pass: a dropped row takes no other edit,
#: merges see the values before cell edits, cell edits before split moves.
_OP_ORDER = {
    "drop": 0,
    "merge_rows": 1,
    "merge_columns": 2,
    "set": 3,
    "extend": 4,
    "remove": 5,
    "move": 6,
    "renumber": 7,
}


@dataclass(frozen=True)
class FixChoice:
    """Which findings' edits ``curate fix`` applies."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    unsafe: bool = False

    def rules(self, rules: RuleSet) -> tuple[list[Rule], list[Rule]]:
        """``(applied, withheld_unsafe)``: the fixable rules chosen, and the chosen ones whose
        fixes are unsafe and not enabled (``curate fix`` says how many it left for
        ``--unsafe-fixes``)."""
        chosen = [r for r in rules.select(self.select or None, self.ignore or None) if r.fixable]
        if self.select and not chosen:
            # A selector that names only unfixable rules is almost certainly a mistake.
            raise UsageError(
                f"{arg('--select', list(self.select))}: no fixable rule chosen (see `curate "
                "rules`: fix: ...)"
            )
        applied = [r for r in chosen if self.unsafe or r.safety is FixSafety.SAFE]
        withheld = [r for r in chosen if r not in applied]
        return applied, withheld


@dataclass
class PassResult:
    """What one pass of the engine did."""

    frame: pl.DataFrame
    changes: list[ChangeEntry]
    applied: int = 0  # findings whose edit changed something
    skipped: int = 0  # findings whose edit no longer applied (an earlier edit changed the cell)
    by_rule: dict[str, int] = field(default_factory=dict)


def _finding_ref(r: dict[str, Any], record: Any = None) -> dict[str, Any]:
    """How a changelog entry names its finding: rule, record, field and message, which find it
    in ``audit.before.json`` (pass 1) or in the re-audit it came from (pass 2+).

    ``record`` is the finding's record as the input names it: a re-audit reads the temporary
    published folder, whose positional ids (``#7235``) would name nothing the user has.
    """
    rec = r["record"] if record is None else record
    return {"rule": r["rule"], "record": rec, "field": r["field"], "message": r["message"]}


def edits_of(
    findings: pl.DataFrame,
    rules: Iterable[Rule],
    *,
    unsafe: bool = True,
    held_back: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """The chosen rules' findings that carry an edit, decoded, in a stable order.

    An edit may itself say ``"unsafe": true`` (ruff's per-fix applicability): a rule whose fix
    is safe in general can have findings where it is not (dropping a duplicate case that is in
    the edit set changes the edit set). Without ``unsafe`` those are left out and counted per
    rule in ``held_back``.
    """
    codes = sorted({r.code for r in rules})
    f = findings.filter(pl.col("rule").is_in(codes) & pl.col("fix").is_not_null())
    out = []
    for r in f.select("rule", "row", "record", "field", "message", "fix").iter_rows(named=True):
        edit = orjson.loads(r["fix"])
        if not isinstance(edit, dict) or edit.get("op") not in _OP_ORDER:
            raise ValueError(f"{r['rule']}: malformed fix {r['fix'][:200]}")
        if edit.get("unsafe") and not unsafe:
            if held_back is not None:
                held_back[r["rule"]] = held_back.get(r["rule"], 0) + 1
            continue
        out.append({**r, "edit": edit})
    out.sort(
        key=lambda e: (
            _OP_ORDER[e["edit"]["op"]],
            e["rule"],
            -1 if e["row"] is None else e["row"],
            e["field"] or "",
        )
    )
    return out


def _plain(value: Any) -> Any:
    """A cell as JSON would hold it (tuples → lists), so ``old`` compares with what was read."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def apply_edits(
    frame: pl.DataFrame,
    edits: Sequence[dict[str, Any]],
    *,
    original: Callable[[int, dict[str, Any]], Any] | None = None,
    pass_no: int = 1,
) -> PassResult:
    """Apply ``edits`` (from :func:`edits_of`) to ``frame`` and log every change.

    ``original(row, cells)`` gives the whole record as the user wrote it, for the changelog of
    a dropped row (default: the row's cells). Edits are applied in :data:`_OP_ORDER`; within an
    op by rule code and row, so the same findings always give the same result.
    """
    columns = [c for c in frame.columns if c not in BOOKKEEPING]
    rows: list[int] = frame[ROW].to_list()
    records: list[Any] = frame[RECORD].to_list()
    pos = {r: i for i, r in enumerate(rows)}
    cells: dict[str, list[Any]] = {}

    def col(name: str) -> list[Any]:
        if name not in cells:
            cells[name] = frame[name].to_list()
        return cells[name]

    def record_cells(i: int) -> dict[str, Any]:
        return {c: _plain(col(c)[i]) for c in columns if c not in dropped_cols}

    def whole(i: int) -> Any:
        return original(rows[i], record_cells(i)) if original else record_cells(i)

    split = col(SPLIT)
    dropped: set[int] = set()
    index_of = {r: i for i, r in enumerate(records)}

    def live(record: Any) -> bool:
        """A record an ``extend`` value refers to is still there (not dropped in this pass)."""
        k = index_of.get(record)
        return k is not None and k not in dropped

    dropped_cols: set[str] = set()
    changes: list[ChangeEntry] = []
    applied = skipped = 0
    by_rule: dict[str, int] = {}

    def ref(e: dict[str, Any]) -> dict[str, Any]:
        op = e["edit"]
        if op["op"] == "renumber" or "where" in op:
            # a table edit names a value (a task group), not the record at its row
            return _finding_ref(e)
        k = pos.get(e["row"]) if e["row"] is not None else None
        return _finding_ref(e, records[k] if k is not None else None)

    def log(i: int | None, fld: str, old: Any, new: Any, e: dict[str, Any], reason: str) -> None:
        changes.append(
            ChangeEntry(
                records[i] if i is not None else e["record"],
                fld,
                old,
                new,
                e["rule"],
                reason,
                finding=ref(e),
                pass_no=pass_no,
            )
        )

    index: dict[str, dict[Any, list[int]]] = {}

    def matching(where: dict[str, Any]) -> list[int]:
        """The live rows whose columns hold ``where``'s values (indexed by the first column:
        a file's thousands of group drops are not each a scan of every row)."""
        if not where or not all(c in frame.columns for c in where):
            return []
        first, *rest = where
        if first not in index:
            by: dict[Any, list[int]] = {}
            for k, v in enumerate(col(first)):
                by.setdefault(v, []).append(k)
            index[first] = by
        return [
            k
            for k in index[first].get(where[first], ())
            if k not in dropped and all(col(c)[k] == where[c] for c in rest)
        ]

    def original_kept(op: dict[str, Any]) -> bool:
        """A drop of a copy (``copy_of``: the original's row, or a ``where``) applies only while
        the original is still there: when it is itself left out (invalid, or dropped by an
        earlier edit), the copy is the one to keep."""
        if "copy_of" not in op:
            return True
        of = op["copy_of"]
        if isinstance(of, dict):
            return bool(matching(of))
        k = pos.get(of)
        return k is not None and k not in dropped

    renumbered: set[str] = set()
    namers: dict[tuple[str, Any], dict[str, Any]] = {}  # (renumber key, record) -> its edit
    for e in edits:
        if e["edit"]["op"] == "renumber":
            namers.setdefault((_renumber_key(e["edit"]), e["record"]), e)

    for e in edits:
        op = e["edit"]
        kind = op["op"]
        i = pos.get(e["row"]) if e["row"] is not None else None
        table_edit = kind in ("merge_columns", "renumber") or (kind == "drop" and "where" in op)
        if not table_edit and (i is None or i in dropped):
            skipped += 1
            continue
        done = satisfied = False
        if kind == "drop" and not original_kept(op):
            pass  # a copy whose original is gone stays: the next pass's re-audit decides
        elif kind == "drop" and "where" in op:
            for k in matching(op["where"]):
                log(k, "", whole(k), None, e, "dropped: " + e["message"])
                dropped.add(k)
                done = True
        elif kind == "renumber":
            key = _renumber_key(op)
            if key in renumbered:
                satisfied = True
            elif op["field"] in frame.columns:
                renumbered.add(key)
                used = _renumber(
                    col(op["field"]),
                    [
                        k
                        for k in range(len(rows))
                        if k not in dropped
                        and all(col(c)[k] == v for c, v in (op.get("where") or {}).items())
                    ],
                    text=frame.schema[op["field"]] == pl.String,
                )
                namers_used: list[dict[str, Any]] = []  # edits applied: findings, not lines
                for old_value, new_value in used:
                    by = namers.get((key, old_value), e)
                    if not any(by is u for u in namers_used):
                        namers_used.append(by)
                    why = f"renumbered: {op['field']} {old_value} is now {new_value}"
                    changes.append(
                        ChangeEntry(
                            old_value,
                            op["field"],
                            old_value,
                            new_value,
                            by["rule"],
                            why + (f" ({op['reason']})" if op.get("reason") else ""),
                            finding=ref(by),
                            pass_no=pass_no,
                        )
                    )
                for by in namers_used:
                    by_rule[by["rule"]] = by_rule.get(by["rule"], 0) + 1
                applied += len(namers_used)
                satisfied = True  # counted per finding whose edit renamed something, above
        elif kind == "drop":
            assert i is not None  # a row edit: skipped above when its row is unknown
            log(i, "", whole(i), None, e, "dropped: " + e["message"])
            dropped.add(i)
            done = True
        elif kind == "merge_rows":
            assert i is not None  # a row edit: skipped above when its row is unknown
            j = pos.get(op["into"])
            if j is not None and j not in dropped and j != i:
                for c in columns:
                    if c in dropped_cols:
                        continue
                    values = col(c)
                    mine, theirs = values[i], values[j]
                    if mine is None or mine == theirs:
                        continue
                    if theirs is None:
                        values[j] = mine
                        log(j, c, None, _plain(mine), e, f"value taken from {records[i]}")
                    else:
                        why = f"discarded: {records[j]} holds {theirs!r}"
                        log(i, c, _plain(mine), None, e, why)
                log(i, "", whole(i), None, e, "dropped: " + e["message"])
                dropped.add(i)
                done = True
        elif kind == "merge_columns":
            into, src = op["into"], op["from"]
            if into in frame.columns and src in frame.columns and src not in dropped_cols:
                a, b = col(into), col(src)
                for k, v in enumerate(b):
                    if v is None or k in dropped or v == a[k]:
                        continue
                    if a[k] is None:
                        a[k] = v
                        log(k, into, None, _plain(v), e, f"value moved from column {src!r}")
                    else:
                        why = f"discarded: column {into!r} holds {a[k]!r}"
                        log(k, src, _plain(v), None, e, why)
                dropped_cols.add(src)
                changes.append(
                    ChangeEntry(
                        e["record"],
                        src,
                        None,
                        None,
                        e["rule"],
                        f"column dropped: merged into {into!r}",
                        finding=ref(e),
                        pass_no=pass_no,
                    )
                )
                done = True
        elif kind == "set":
            assert i is not None  # a row edit: skipped above when its row is unknown
            fld = op["field"]
            if fld in frame.columns and fld not in dropped_cols:
                values = col(fld)
                now = _plain(values[i])
                if now == op.get("old"):
                    values[i] = op["new"]
                    log(i, fld, op.get("old"), op["new"], e, _reason(e))
                    done = True
                elif now == op["new"]:
                    # Another finding on the same cell proposed the same value (a cell with two
                    # stray spaces is two findings, one edit): already done, nothing to log.
                    satisfied = True
        elif kind == "extend":
            assert i is not None  # a row edit: skipped above when its row is unknown
            fld = op["field"]
            if fld in frame.columns:
                values = col(fld)
                have = _plain(list(values[i] or []))
                refs = op.get("refs")
                new = [
                    v
                    for k, v in enumerate(op["values"])
                    if v not in have and (refs is None or live(refs[k]))
                ]
                if new:
                    values[i] = have + new
                    log(i, fld, have, have + new, e, _reason(e))
                    done = True
                else:
                    satisfied = True  # every value already there (an identical finding)
        elif kind == "remove":
            assert i is not None  # a row edit: skipped above when its row is unknown
            fld = op["field"]
            if fld in frame.columns:
                values = col(fld)
                have = _plain(list(values[i] or []))
                match = op["match"]
                keep = [v for v in have if not any(_matches(v, m) for m in match)]
                if len(keep) < len(have):
                    values[i] = keep
                    log(i, fld, have, keep, e, _reason(e))
                    done = True
                else:
                    satisfied = True
        elif kind == "move":
            group = [(i, op.get("old"))] + [(pos.get(r), s) for r, s in op.get("with", ())]
            for moved, was in group:
                if (
                    moved is None
                    or moved in dropped
                    or split[moved] != was
                    or split[moved] == op["new"]
                ):
                    continue
                log(moved, "split", split[moved], op["new"], e, _reason(e))
                split[moved] = op["new"]
                done = True
        if done:
            applied += 1
            by_rule[e["rule"]] = by_rule.get(e["rule"], 0) + 1
        elif not satisfied:
            skipped += 1
    out = frame.with_columns(
        [pl.Series(c, v, dtype=frame.schema[c], strict=False) for c, v in cells.items()]
    ).drop(sorted(dropped_cols))
    if dropped:
        out = out.filter(~pl.Series(range(out.height)).is_in(sorted(dropped)))
    return PassResult(out, changes, applied, skipped, by_rule)


#: Passes before ``curate fix`` gives up converging (ruff uses 100; a dataset fix that needs more
#: than a few re-audits is a rule whose edit does not remove its own finding: a bug to report).
MAX_PASSES = 4


@dataclass
class FixRun:
    """Everything :func:`run_fixes` produced: the fixed tables per split, the changelog, the
    re-audit of the last pass, and what was left (unsafe fixes not enabled, non-convergence).
    ``written``: what the family's writer wrote in the last pass (its files, when it writes its
    own format, are then in the working folder, under their names)."""

    tables: dict[str, Any]
    changelog: list[ChangeEntry]
    frame: pl.DataFrame
    passes: int
    applied: dict[str, int]
    unsafe_available: dict[str, int]
    converged: bool
    after: Any = None  # the Report of the last re-audit
    written: Written | None = None


def run_fixes(
    family: Any,
    data: Any,
    report: Any,
    options: Any,
    choice: FixChoice,
    *,
    progress: Callable[[str, int], None] | None = None,
    max_passes: int = MAX_PASSES,
    workdir: Path | None = None,
) -> FixRun:
    """Apply the chosen findings' edits, re-audit, and repeat while the re-audit proposes more.

    Why passes: one fix can reveal another (labels stripped of whitespace become exact
    duplicate rows; a dropped task group leaves a gap in the group names), and a rule states its
    edit against the data it saw. Each pass has the family write the fixed records in its
    format (:meth:`~curate.families.base.Family.write_fixed`: parquet by default, an HDF5 file
    for learning histories) into a folder of its own under ``workdir`` and loads them back with
    the family's reader, so every re-audit sees exactly what will be published. The records
    keep the ids of the input in the changelog (a positional id of a pass's file would mean
    nothing), mapped back by split and position.

    ``workdir`` (default: a temporary folder) is where the passes are written: the output
    gate's staging folder, so that a family's own files (multi-GB HDF5) are written once, on
    the output's file system, and moved into place by a rename. When the writer wrote files,
    the last pass's files end in ``workdir`` itself; every pass folder is removed.
    """
    import tempfile

    rules, withheld = choice.rules(family.rules)
    invalid = family.invalid_records(data)
    frame, changes = family.fix_frame(data, invalid)
    _name_invalid_findings(changes, invalid)
    applied: dict[str, int] = {}
    current, audit_report = data, report
    reaudit = family.reaudit_options(options, data)
    if isinstance(reaudit, LabelIssueOptions) and reaudit.pred_probs is not None:
        reaudit = reaudit.of_fixed_data()  # the probabilities of the input's records
    # what the re-audit set on its own (a deepfake input's media folder and cache, machine
    # paths): not options anyone chose, and not for a published card (curate card check warns)
    own = set(reaudit.public()) - set(options.public())
    passes = 0
    converged = False
    after = None
    written: Written | None = None
    held_back: dict[str, int] = {}
    edits_of(report.findings, rules, unsafe=choice.unsafe, held_back=held_back)
    # A fix_once rule (a model's label issues) is left out of the passes' re-audits, where its
    # findings could propose nothing; the last pass's data is audited whole once, for the
    # report. (Each pass refitted the model: 20 of the 24 s of a 4,900-row `fix table`.)
    once = [r.code for r in family.rules if r.fix_once]
    with tempfile.TemporaryDirectory(prefix="curate-fix-") as tmp:
        base = Path(tmp) if workdir is None else Path(workdir)
        folders: list[Path] = []
        for n in range(1, max_passes + 1):
            if not frame.height:  # every record invalid: nothing to fix or re-audit
                converged = True
                break
            # a fix_once rule's edits come from the input's audit alone (Rule.fix_once)
            chosen = rules if n == 1 else [r for r in rules if not r.fix_once]
            edits = edits_of(audit_report.findings, chosen, unsafe=choice.unsafe)
            if n > 1 and not edits:
                converged = True
                break
            result = apply_edits(
                frame,
                edits,
                original=partial(family.fix_original, current),
                pass_no=n,
            )
            passes = n
            changes.extend(result.changes)
            for code, k in result.by_rule.items():
                applied[code] = applied.get(code, 0) + k
            frame = result.frame
            folder = base / f".curate-pass-{n}"
            folder.mkdir(parents=True)
            folders.append(folder)
            written = family.write_fixed(frame, current, folder, changes)
            for c in written.changes:
                c.pass_no = n
            changes.extend(written.changes)
            if progress:
                progress(f"re-audit after pass {n}", frame.height)
            current = family.load(
                [str(folder / f) for f in written.files] or [str(folder)],
                reaudit,
                keep_records=True,
            )
            audit_report = after = published(
                family.audit(current, reaudit, ignore=once or None),
                folder,
                files=bool(written.files),
                own=own,
            )
            frame = _same_records(
                family.fix_frame(current, family.invalid_records(current))[0], frame
            )
            if len(folders) > 1:  # the pass before is no longer read
                shutil.rmtree(folders.pop(0))
            if result.applied == 0 and n > 1:
                # nothing the re-audit proposed applies any more (pass 1 goes on: leaving the
                # invalid records out may itself call for fixes, a gap in HDF5 group names)
                converged = True
                break
        else:
            again = [r for r in rules if not r.fix_once]
            converged = not edits_of(audit_report.findings, again, unsafe=choice.unsafe)
        if once and written is not None:  # `after` left the fix_once rules out
            after = published(
                family.audit(current, reaudit), folders[-1], files=bool(written.files), own=own
            )
        # the published tables of the parquet route (none when no record was left to write,
        # or when the family's own files are the data)
        tables = (
            family.fix_tables(frame, current) if written is not None and not written.files else {}
        )
        if written is not None and written.files:
            for name in written.files:
                os.replace(folders[-1] / name, base / name)
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
    unsafe_available = dict(held_back)
    unsafe_available |= {
        r.code: n
        for r in withheld
        if (
            n := int(
                report.findings.filter(
                    (pl.col("rule") == r.code) & pl.col("fix").is_not_null()
                ).height
            )
        )
    }
    return FixRun(
        tables=tables,
        changelog=changes,
        frame=frame,
        passes=passes,
        applied=applied,
        unsafe_available=unsafe_available,
        converged=converged,
        after=after,
        written=written,
    )


def fix_figures(run: FixRun, data: Any, invalid_rules: Iterable[str]) -> dict[str, Any]:
    """The summary figures of every fix: rows in and out, rows dropped as invalid (by one of
    the family's ``invalid_rules``) and by fixes, findings fixed per rule, passes, unsafe fixes
    left, non-convergence. The engine's own figures, not a family's: no family changed them."""
    invalid = set(invalid_rules)
    # pass 0: records left out as invalid before fixing; later passes: records a fix dropped
    dropped = sum(1 for c in run.changelog if c.pass_no > 0 and c.field == "" and c.new is None)
    summary: dict[str, Any] = {
        "rows_in": sum(i.records for i in data.inputs),
        "rows_out": run.written.records if run.written is not None else run.frame.height,
        "invalid_dropped": sum(
            1 for c in run.changelog if c.rule in invalid and c.pass_no == 0 and c.field == ""
        ),
        "dropped": dropped,
        "fixed": dict(sorted(run.applied.items())),
        "passes": run.passes,
    }
    if run.unsafe_available:
        summary["unsafe_fixes_available"] = dict(sorted(run.unsafe_available.items()))
    if not run.converged:
        summary["not_converged"] = True
    return summary


def _name_invalid_findings(changes: list[ChangeEntry], invalid: pl.DataFrame) -> None:
    """Records left out as invalid are logged by the family before any pass; name the finding
    that rejected each one too (pass 0: before fixing), so every changelog line has one."""
    refs: dict[tuple[Any, Any], dict[str, Any]] = {}
    for r in invalid.iter_rows(named=True):
        ref = {k: r[k] for k in ("rule", "record", "field", "message")}
        refs.setdefault((r["rule"], r["record"]), ref)
        if r["record"] is None:
            refs.setdefault((r["rule"], r["field"]), ref)
    for c in changes:
        c.finding = refs.get((c.rule, c.record)) or refs.get((c.rule, c.field)) or c.finding
        c.pass_no = 0


def write_parquet(tables: dict[str, Any], folder: Path) -> None:
    """One parquet file per split under ``folder/data``, the layout the readers take: the
    default writer of a fix pass (the published shards are written later, by the export
    writer)."""
    import pyarrow.parquet as pq

    (folder / "data").mkdir(parents=True, exist_ok=True)
    for split, table in tables.items():
        pq.write_table(table, folder / "data" / f"{split}-00000-of-00001.parquet")


def published(after: Any, folder: Path, *, files: bool, own: Collection[str] = ()) -> Any:
    """The re-audit of a pass as it describes the published folder: a pass's path would mean
    nothing to a reader (and vary by machine). With ``files`` (the family's own files, published
    as written) each input is named by its file name and keeps its sha256; else (parquet, which
    the export writer shards anew) every input is ``.``, the folder ``audit.after.json`` sits
    in, with no sha256. The options the re-audit set on its own (``own``: see
    :func:`run_fixes`) are left out of its options."""
    from dataclasses import replace

    def where(path: str) -> str:
        return os.path.relpath(path, folder) if files else "."

    stats = orjson.dumps(after.stats).decode()
    for i in after.inputs:
        stats = stats.replace(_escaped(i.path), _escaped(where(i.path)))
    after.stats = orjson.loads(stats)
    if after.findings.height and after.inputs:
        after.findings = after.findings.with_columns(
            pl.lit(where(after.inputs[0].path)).alias("input")
        )
        if after.findings.schema.get("details") == pl.String:
            # a path inside a finding's details (the manifest a media file is listed in)
            details = pl.col("details")
            for i in after.inputs:
                details = details.str.replace_all(
                    _escaped(i.path), _escaped(where(i.path)), literal=True
                )
            after.findings = after.findings.with_columns(details.alias("details"))
    after.inputs = [
        replace(i, path=where(i.path), sha256=i.sha256 if files else "") for i in after.inputs
    ]
    after.options = {k: v for k, v in after.options.items() if k not in own}
    return after


def _escaped(path: str) -> str:
    """``path`` as it appears inside a JSON string."""
    return orjson.dumps(path).decode()[1:-1]


def _same_records(reloaded: pl.DataFrame, written: pl.DataFrame) -> pl.DataFrame:
    """``reloaded`` with the record ids of ``written``: the k-th row of a split read back is the
    k-th row of that split as written (readers keep file order)."""
    rank = pl.int_range(pl.len()).over(SPLIT).alias("__rank")
    ids = written.select(SPLIT, RECORD).with_columns(rank)
    if reloaded.height != written.height:
        raise RuntimeError("fixed tables read back with a different number of rows")
    return (
        reloaded.with_columns(rank)
        .drop(RECORD)
        .join(ids, on=[SPLIT, "__rank"], how="left", maintain_order="left")
        .drop("__rank")
        .select(reloaded.columns)
    )


def _renumber_key(op: dict[str, Any]) -> str:
    """Renumber edits with the same field and condition are one renumbering."""
    return orjson.dumps([op.get("field"), op.get("where")], option=orjson.OPT_SORT_KEYS).decode()


def _renumber(values: list[Any], live: Sequence[int], *, text: bool) -> list[tuple[Any, Any]]:
    """Rename the values at ``live`` positions to 0..N-1 in order of first appearance, in place;
    the ``(old, new)`` pairs that changed."""
    names: dict[Any, Any] = {}
    for k in live:
        if values[k] not in names:
            n = len(names)
            names[values[k]] = str(n) if text else n
    for k in live:
        values[k] = names[values[k]]
    return [(old, new) for old, new in names.items() if old != new]


def _matches(value: Any, pattern: dict[str, Any]) -> bool:
    """A list item matches a ``remove`` pattern when it has every key of it with that value."""
    return isinstance(value, dict) and all(value.get(k) == v for k, v in pattern.items())


def _reason(e: dict[str, Any]) -> str:
    """The changelog reason: the edit's own wording, else the finding's message."""
    return e["edit"].get("reason") or e["message"]


__all__ = [
    "BOOKKEEPING",
    "FixChoice",
    "FixRun",
    "PassResult",
    "apply_edits",
    "edits_of",
    "fix_figures",
    "published",
    "run_fixes",
    "write_parquet",
]
