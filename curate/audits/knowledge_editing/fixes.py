"""``curate fix`` for knowledge editing: drop duplicates, clean aliases, list withheld edits."""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

from curate.audits.knowledge_editing.contamination import contamination, resolve_edit_set
from curate.dataset import ChangeEntry, FixResult
from curate.findings import (
    Report,
)
from curate.schemas.knowledge_editing_tables import KEData, only_input, records_to_arrow

# --------------------------------------------------------------------------- fixes


def plan_fixes(
    data: KEData, report: Report, options: dict[str, Any], invalid: pl.DataFrame
) -> FixResult:
    """Apply the report's fixes to copies of the records and write the withheld-edit lists.

    * KE401 duplicates are dropped (first occurrence kept);
    * KE110 alias lists are cleaned;
    * for the edit set, every case gets ``edited`` and ``withheld_edits`` (the MQuAKE-Remastered
      evaluation protocol: when asking case c, leave out the edits that contaminate its path).

    Records that failed the schema (KE001, :attr:`KnowledgeEditingFamily.invalid_rules`) are
    dropped *and* logged whole, never silently lost; ``invalid_dropped`` in the summary counts them
    and ``dropped`` the records a fix removed (KE401 duplicates), so the two never overlap.
    ``invalid`` is :meth:`~curate.families.base.Family.invalid_records` of ``data``, which the
    family computes and hands in (the rules layer does not reach up to the family).
    """
    f = report.findings
    changes: list[ChangeEntry] = []
    drop: dict[int, str] = {}

    def original(row: int) -> Any:
        # The whole record goes into the changelog, so a dropped case can be restored from it.
        case = data.records.get(row)
        return case.to_original() if case is not None else None

    invalid = invalid.unique("row", keep="first", maintain_order=True)
    for r in invalid.iter_rows(named=True):
        drop[r["row"]] = r["rule"]
        changes.append(
            ChangeEntry(
                r["record"],
                "",
                data.invalid.get(r["row"]),
                None,
                r["rule"],
                f"dropped: invalid record ({r['field']}: {r['message']})",
            )
        )
    for r in f.filter(pl.col("rule") == "KE401").iter_rows(named=True):
        if r["row"] in drop:
            continue
        drop[r["row"]] = "KE401"
        changes.append(
            ChangeEntry(
                r["record"], "", original(r["row"]), None, "KE401", "dropped: " + r["message"]
            )
        )
    alias_fix = {
        (r["row"], r["field"]): orjson.loads(r["fix"])
        for r in f.filter((pl.col("rule") == "KE110") & pl.col("fix").is_not_null()).iter_rows(
            named=True
        )
    }
    edited = resolve_edit_set(data, report.options.get("edit_set") or "all")
    contam = contamination(data, edited)
    withheld: dict[int, list[dict[str, Any]]] = {}
    if not contam.is_empty():
        ex = (
            contam.explode(["src_records", "src_rows", "src_k"])
            .filter((pl.col("src_rows") != pl.col("row")) & ~pl.col("src_rows").is_in(list(drop)))
            .select("row", "src_rows", "src_records", "src_k", "t_s", "t_r", "t_o")
            .unique()
            .sort("row", "src_rows", "src_k")
        )
        case_ids = {row: case.case_id for row, case in data.records.items()}
        for r in ex.iter_rows(named=True):
            withheld.setdefault(r["row"], []).append(
                {
                    "case_id": case_ids.get(r["src_rows"], r["src_records"]),
                    "edit_index": r["src_k"],
                    "triple": [r["t_s"], r["t_r"], r["t_o"]],
                }
            )
    flags = dict(zip(data.cases["row"].to_list(), edited.to_list(), strict=True))
    split_of = dict(zip(data.cases["row"].to_list(), data.cases["split"].to_list(), strict=True))
    by_split: dict[str, list[dict[str, Any]]] = {}
    n_withheld_cases = 0
    for row in sorted(data.records):
        if row in drop:
            continue
        rec = data.records[row].to_original()
        rid = str(rec["case_id"])
        for lst in ("answer_alias", "new_answer_alias"):
            fx = alias_fix.get((row, lst))
            if fx:
                changes.append(
                    ChangeEntry(
                        rid,
                        lst,
                        fx["old"],
                        fx["new"],
                        "KE110",
                        "removed empty, repeated or answer-equal aliases",
                    )
                )
                rec[lst] = fx["new"]
        rec["edited"] = bool(flags.get(row, False))
        rec["withheld_edits"] = withheld.get(row, [])
        if rec["withheld_edits"]:
            n_withheld_cases += 1
            rule = "KE201" if rec["edited"] else "KE202"
            changes.append(
                ChangeEntry(
                    rid,
                    "withheld_edits",
                    [],
                    rec["withheld_edits"],
                    rule,
                    f"{len(rec['withheld_edits'])} contaminating edit(s) withheld "
                    f"when evaluating this case (edit set {report.options.get('edit_set')})",
                )
            )
        by_split.setdefault(split_of.get(row) or "train", []).append(rec)
    edit_set_ids = [
        data.records[row].case_id if row in data.records else rec
        for row, rec, e in zip(
            data.cases["row"].to_list(),
            data.cases["record"].to_list(),
            edited.to_list(),
            strict=True,
        )
        if e and row not in drop
    ]
    return FixResult(
        tables={s: records_to_arrow(rows, only_input(data)) for s, rows in by_split.items()},
        changelog=changes,
        extra_files={"edit_set.json": orjson.dumps(edit_set_ids, option=orjson.OPT_INDENT_2)},
        summary={
            # The same meaning in every family: ``dropped`` are records a fix removed
            # (duplicates), ``invalid_dropped`` those left out as invalid; never both.
            "dropped": sum(1 for rule in drop.values() if rule == "KE401"),
            "invalid_dropped": sum(1 for rule in drop.values() if rule != "KE401"),
            "alias_lists_cleaned": sum(1 for c in changes if c.rule == "KE110"),
            "cases_with_withheld_edits": n_withheld_cases,
            "edit_set": report.options.get("edit_set"),
            "edited_cases": len(edit_set_ids),
        },
    )
