"""Findings: the one tidy table every audit produces.

Why a table and not a list of objects: a rule over a million records can produce a million findings,
and reports, thresholds and fixes all group, count and sort them. Rules therefore return a polars
frame with the columns of :data:`FINDING_COLUMNS`; the engine stamps rule code, category and
severity on it, and :class:`Report` sorts it into a stable order (same input, same report).

Why ``details`` (and ``fix``) stay canonical JSON text and are not an Arrow struct (issue 31,
item 6, measured 2026-12-05 on the glycan sample's 561 findings repeated to 1 M rows, polars of
``constraints.txt``):

- *One table, many shapes.* Each rule's details have their own keys (glycan: 19 keys over 7
  rules; icrl: 10 over 2), and all rules share one findings frame. A struct column must be the
  union of every rule's keys; a struct per rule would be a column per rule (sparse and wide); a
  ``Map`` needs one value type, and the values are strings, integers, lists and nulls (as map
  values they would be JSON text again).
- *The JSON report would change.* A union struct cannot tell a key a rule left out from a key
  it set to null (glycan's ``majority: null`` beside findings without ``majority``): decoding and
  re-encoding the 1 M details gave 0 of 1,000,000 rows byte-identical (every row gains the other
  rules' keys as nulls), and fields keep first-seen order where :func:`dumps` sorts keys. Keeping
  the report identical would need a per-row key list beside the struct, more than the text.
- *No memory won, time lost.* 1 M details: 375 MB as JSON text, 373 MB as the union struct;
  decoding costs 3.2 s, and the JSON report's per-finding objects come 2.8x slower from the struct
  (``to_list`` 13.9 s) than from the text (``orjson.loads`` 5.0 s). Integers beyond 64 bits,
  which the readers keep exact (:func:`dumps`), have no struct type without a schema per rule.
- *The text is what the rest uses.* The input of a finding without a row (``$.file``, read
  by a JSON path only where needed) and the bound on long evidence (:func:`bounded_details`)
  work on the canonical text; a rule already builds its details as a
  struct of expressions and encodes them once (:func:`json_struct`), so a caller that wants
  columns decodes one rule's details, whose keys are uniform: ``findings.filter(rule ==
  code)["details"].str.json_decode()``.
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import orjson
import polars as pl

from curate.core.errors import MESSAGE_CHARS, QUOTE_CHARS, clip, quoted


class Severity(StrEnum):
    """How bad a finding is; ``--fail-on`` compares against this order."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]


#: The categories the core and the shipped families use (what kind of defect a rule looks for;
#: ``--select``/``--ignore`` take them, reports group by them). The set is open: a category is any
#: lowercase identifier-like string (:func:`category`), so a plug-in family may add its own
#: (``contamination`` is knowledge editing's, not the core's). Listed here so that the shipped
#: names are written once and documented.
CORE_CATEGORIES: frozenset[str] = frozenset(
    {
        "schema",
        "consistency",
        "conflict",
        "duplicate",
        "leakage",
        "label",
        "overlap",
        "integrity",
        "distribution",
    }
)

_CATEGORY = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")


def category(name: str) -> str:
    """``name`` if it is a valid category (a non-empty lowercase identifier-like string such as
    ``duplicate`` or ``label-noise``), else :class:`ValueError` — the check a closed enum made
    before categories were opened to plug-in families."""
    if not isinstance(name, str) or not _CATEGORY.fullmatch(name):
        raise ValueError(
            f"category {name!r} is not a lowercase identifier (letters, digits, '-' or '_', "
            "starting with a letter)"
        )
    return name


@dataclass(frozen=True)
class Headline:
    """One summary sentence a family puts at the top of every report (text, Markdown, HTML).

    ``text`` is the sentence; when ``values`` is given, ``text`` is a :meth:`str.format`
    template whose ``{}`` slots take the values, which Markdown shows as code (an edit-set spec,
    a path). ``label`` names the figure in HTML's definition list. A family adds these in its
    ``summarise`` (``report.headlines``); they are derived from ``stats``, which the JSON report
    already carries, so they are not written to JSON a second time.
    """

    text: str
    values: tuple[str, ...] = ()
    label: str = "figures"

    def render(self, quote: str = "{}") -> str:
        """The sentence, each value wrapped by ``quote`` (``"`{}`"`` for Markdown code)."""
        if not self.values:
            return self.text
        return self.text.format(*(quote.format(v) for v in self.values))


#: Columns a rule function returns. ``row`` is the record's 0-based position across the inputs
#: (file order), kept so that findings sort by where they are, not by the text of an id.
RULE_OUTPUT_SCHEMA: dict[str, Any] = {
    "row": pl.Int64,
    "record": pl.String,
    "field": pl.String,
    "message": pl.String,
    "details": pl.String,  # JSON object
    "fix": pl.String,  # JSON object or null: the proposed fix
}

FINDING_SCHEMA: dict[str, Any] = {
    "rule": pl.String,
    "category": pl.String,
    "severity": pl.String,
    **RULE_OUTPUT_SCHEMA,
    # Where, for a person: the input file and the record's 0-based index in that file. Filled by
    # :class:`Report` from ``row`` (a position across all inputs, in the order they were given).
    "input": pl.String,
    "input_row": pl.Int64,
}


def dumps(obj: Any) -> str:
    """Canonical JSON (sorted keys) so that details compare and hash the same on every run.

    orjson cannot write an integer beyond 64 bits (the readers keep them exact); the stdlib
    writes the same canonical form for those rare values.
    """
    try:
        return orjson.dumps(obj, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def json_bytes(obj: Any, *, indent: bool = False) -> bytes:
    """JSON as written (key order kept), exact for integers beyond 64 bits (stdlib fallback)."""
    try:
        opt = orjson.OPT_NON_STR_KEYS | (orjson.OPT_INDENT_2 if indent else 0)
        return orjson.dumps(obj, option=opt)
    except TypeError:
        return json.dumps(
            obj, ensure_ascii=False, indent=2 if indent else None, default=str
        ).encode()


def empty_rule_output() -> pl.DataFrame:
    return pl.DataFrame(schema=RULE_OUTPUT_SCHEMA)


def rule_output(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Build a rule's output from Python dicts (for rules whose hits are few).

    ``details`` and ``fix`` may be given as objects; they are serialised canonically here.
    """
    if not rows:
        return empty_rule_output()
    norm = []
    for r in rows:
        norm.append(
            {
                "row": r.get("row"),
                "record": None if r.get("record") is None else str(r["record"]),
                "field": r.get("field") or "",
                "message": r["message"],
                "details": dumps(r.get("details") or {}),
                "fix": None if r.get("fix") is None else dumps(r["fix"]),
            }
        )
    return pl.DataFrame(norm, schema=RULE_OUTPUT_SCHEMA)


@dataclass(frozen=True)
class Finding:
    """One finding, as reports and the JSON output show it."""

    rule: str
    category: str
    severity: str
    record: str | None
    field: str
    message: str
    details: dict[str, Any]
    fix: dict[str, Any] | None = None
    input: str | None = None
    row: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "rule": self.rule,
            "category": self.category,
            "severity": self.severity,
            "input": self.input,
            "row": self.row,
            "record": self.record,
            "field": self.field,
            "message": self.message,
            "details": self.details,
            # always present (null: no fix), so ``finding["fix"]`` works on every finding
            "fix": self.fix,
        }
        return out


@dataclass
class InputInfo:
    """What was read: shown in every report so a reader can tell which bytes were audited."""

    path: str
    sha256: str
    records: int
    format: str = ""
    splits: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "records": self.records}


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while making many objects that form no cycles.

    Why: every few hundred new containers (dicts, findings) the collector walks every tracked
    object of the process, and after a load those are many: turning 15k findings into objects
    took 0.33 s with it and 0.11 s without (200k MQuAKE cases loaded).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: Longest text each column of a finding shows; ``record`` cut values carry a digest.
_BOUNDS = {"record": QUOTE_CHARS, "field": QUOTE_CHARS, "message": MESSAGE_CHARS}


def _bounded(f: pl.DataFrame) -> pl.DataFrame:
    """The findings with every record id, field and message cut to a bounded length.

    Why here, once, and not in each format: every report (text, JSON, JUnit, SARIF, HTML,
    baselines) prints these columns, and one 20 MB record id printed 20 MB in each of them
    (80 MB in SARIF). A cut record id keeps a digest of the whole
    (:func:`~curate.core.errors.clip`),
    so it still counts as one record and fingerprints the same on every run; the ``row`` and
    ``input`` of a finding say exactly where the record is. ``details`` are bounded the same
    way (:func:`bounded_details`): a leaking glycan's 20 MB id in ``details.train_records`` made
    a 24 MB JSON report. One scan of lengths when nothing is long.
    """
    if f.is_empty():
        return f
    # bytes bound characters from above, and are counted without decoding
    long = f.select(
        [(pl.col(c).str.len_bytes().max() > n).alias(c) for c, n in _BOUNDS.items()]
    ).row(0, named=True)
    cut = [
        clip_expr(c, limit=n, digest=c == "record").alias(c) for c, n in _BOUNDS.items() if long[c]
    ]
    if f.select(pl.col("details").str.len_bytes().max() > DETAILS_STRING_CHARS).item():
        cut.append(pl.lit(bounded_details(f["details"])).alias("details"))
    return f.with_columns(cut) if cut else f


#: Longest string a finding's ``details`` show whole. Longer than :data:`QUOTE_CHARS` (a
#: message's quote), because details are the evidence: real values run to a few hundred
#: characters (glycowork's longest glycan has 687, a species list cell 1,193), and cutting them
#: would hide what a reader came for; a 20 MB id is still cut to its first 2,000.
DETAILS_STRING_CHARS = MESSAGE_CHARS
#: Items of one list a finding's ``details`` keep when the details are long (over
#: :data:`DETAILS_CHARS`): the rules' own lists of examples stop at 20 too (``MAX_LISTED``).
DETAILS_ITEMS = 20
#: Length (JSON bytes) of a finding's ``details`` beyond which their lists are cut to
#: :data:`DETAILS_ITEMS` items (GL402 listed all 113 training labels of one glycan, 17 kB in
#: each of its findings). Strings are cut at :data:`DETAILS_STRING_CHARS` whatever the length.
DETAILS_CHARS = 2 * MESSAGE_CHARS
#: Keys of ``details`` kept whole: ``file`` names an input the user gave (the OS bounds a
#: path's length) and places the finding in it (:meth:`Report._locate`, the invalid records).
WHOLE_KEYS = frozenset({"file"})
#: A JSON string literal longer than DETAILS_STRING_CHARS characters (an escape counts as one
#: or more: never fewer than the characters it stands for, so no long string is missed; a match
#: between two strings only sends a details object to be read, which then stays as it was).
#: 19 digits in a row: an integer orjson may not read exactly (see curate.io.read's reader).
_LONG_DIGITS = re.compile(r"[0-9]{19}")
_LONG_STRING = r'"(?:[^"\\]|\\.){' + str(DETAILS_STRING_CHARS + 1) + ',}"'


def bound_value(value: Any, *, lists: bool = True) -> Any:
    """``value`` (parsed JSON) with every string longer than :data:`DETAILS_STRING_CHARS` cut
    (:func:`clip`, with a digest: two long ids stay two, and a cut value is the same text on
    every run), and
    with ``lists``, every list longer than :data:`DETAILS_ITEMS` cut to its first items and a
    last ``"… (N more)"`` item saying how many were left out. Dict keys are strings too."""
    if isinstance(value, str):
        if len(value) > DETAILS_STRING_CHARS:
            return clip(value, DETAILS_STRING_CHARS, digest=True)
        return value
    if isinstance(value, dict):
        return {bound_value(k): bound_value(v, lists=lists) for k, v in value.items()}
    if isinstance(value, list):
        if lists and len(value) > DETAILS_ITEMS:
            kept = [bound_value(v, lists=lists) for v in value[:DETAILS_ITEMS]]
            return [*kept, f"… ({len(value) - DETAILS_ITEMS:,} more)"]
        return [bound_value(v, lists=lists) for v in value]
    return value


def _bound_json(text: str | None) -> str | None:
    """A ``details``/``fix`` JSON text as reports show it (:func:`bound_value`); the text
    itself when nothing in it is long (its bytes unchanged)."""
    if not text:
        return text
    # orjson reads an integer beyond 64 bits as a float: the stdlib's json keeps it exact
    # (few texts come here, so its speed does not matter)
    doc = json.loads(text) if _LONG_DIGITS.search(text) else orjson.loads(text)
    lists = len(text.encode("utf-8", "surrogatepass")) > DETAILS_CHARS
    if isinstance(doc, dict):
        out: Any = {
            k: v if k in WHOLE_KEYS else bound_value(v, lists=lists) for k, v in doc.items()
        }
        out = {bound_value(k): v for k, v in out.items()}
    else:
        out = bound_value(doc, lists=lists)
    return text if out == doc else dumps(out)


def bounded_details(texts: pl.Series) -> pl.Series:
    """A ``details`` (or ``fix``) column as reports show it: each JSON text with a string over
    :data:`DETAILS_STRING_CHARS` or a length over :data:`DETAILS_CHARS` is read and
    bounded (:func:`bound_value`); the others are not read at all (a regex and a length test
    over the column find the few that are).

    Why a bound on details at all: they are evidence, not quoted values, but they quote record
    ids and cells (GL401's ``train_records``, GL402's every training label), and a report
    printing one 20 MB id was 24 MB long (issue 30). The whole value is in the input, where the
    finding's ``input`` and ``row`` point.
    """
    # only a text longer than the longest string kept can hold one: the regex reads those
    at = (texts.str.len_bytes() > DETAILS_STRING_CHARS).fill_null(False).arg_true()
    some = texts.gather(at)
    at = at.filter((some.str.len_bytes() > DETAILS_CHARS) | some.str.contains(_LONG_STRING))
    if at.is_empty():
        return texts
    bounded = pl.Series([_bound_json(t) for t in texts.gather(at)], dtype=pl.String)
    return texts.clone().scatter(at, bounded)


def _sorted(f: pl.DataFrame) -> pl.DataFrame:
    """Findings in report order: by row, rule, field and message, ties in their given order.

    Why two steps: sorting on the message too encodes every message for the comparison, the
    most costly part at a million findings, while (row, rule, field) nearly always decides
    alone; the message is compared only when two findings tie on those (a stable sort of the
    sorted frame gives the same order as one sort on all four keys).
    """
    keys = ["row", "rule", "field"]
    ordered, ties = _scan_order(f, keys)
    if not ordered:  # rule outputs often come in order already: one pass, no sort
        f = f.sort(keys, nulls_last=True, maintain_order=True)
        ties = _scan_order(f, keys)[1]
    if ties:
        f = f.sort([*keys, "message"], nulls_last=True, maintain_order=True)
    return f


def _scan_order(f: pl.DataFrame, keys: list[str]) -> tuple[bool, bool]:
    """(is ``f`` sorted by ``keys``, ascending and nulls last; do two neighbours tie on all of
    them?), each row compared with the one before it: a pass instead of a sort.

    Key by key, only the neighbours still tied are compared: the first key (``row``, an
    integer) decides nearly every pair, so the strings of the later keys are compared at the
    few rows whose case has several findings (923 k findings: 0.08 s comparing every pair on
    every key, a few ms this way).
    """
    n = f.height
    if n < 2:
        return True, False
    at: pl.Series | None = None  # positions (of the later row) still tied; None: all
    for k in keys:
        col = f[k]
        if at is None:
            cur, prev = col.slice(1), col.slice(0, n - 1)
        else:
            cur, prev = col.gather(at), col.gather(at - 1)
        # nulls last: a null after a value is later; a value after a null is earlier
        later = (cur > prev).fill_null(False) | (prev.is_not_null() & cur.is_null())
        same = cur.eq_missing(prev)
        if not (later | same).all():
            return False, False
        at = (
            pl.int_range(1, n, dtype=pl.Int64, eager=True).filter(same)
            if at is None
            else at.filter(same)
        )
        if at.is_empty():
            return True, False
    return True, True


@dataclass
class Report:
    """Findings of one audit plus the facts needed to read them (inputs, rules run, options)."""

    family: str
    inputs: list[InputInfo]
    findings: pl.DataFrame
    rules_run: list[str]
    options: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    #: Wall seconds per stage (``load``, ``table:NAME``, each rule code, ``summary``), in run
    #: order. Rendered only with ``--durations``, so that by default same input → same report.
    durations: dict[str, float] = field(default_factory=dict)
    #: The family's summary sentences shown under the inputs in text, Markdown and HTML
    #: (:class:`Headline`); ``stats["headline"]`` strings are shown after them.
    headlines: list[Headline] = field(default_factory=list)

    def __post_init__(self) -> None:
        f = self.findings
        for c, t in FINDING_SCHEMA.items():
            if c not in f.columns:
                f = f.with_columns(pl.lit(None, t).alias(c))
        f = _bounded(f.select(list(FINDING_SCHEMA)))
        self.findings = _sorted(self._locate(f))

    def _locate(self, f: pl.DataFrame) -> pl.DataFrame:
        """Fill ``input``/``input_row`` from ``row`` and the inputs' record counts.

        A finding without a row (a whole column, say) keeps the file its details name.
        """
        if f.is_empty() or not self.inputs:
            return f
        if len(self.inputs) == 1:  # one input: no join, no sorts (1 M findings: ~0.3 s)
            placed = pl.col("row") >= 0
            return f.with_columns(
                pl.coalesce(
                    "input", pl.when(placed).then(pl.lit(self.inputs[0].path, pl.String))
                ).alias("input"),
                pl.coalesce("input_row", pl.when(placed).then(pl.col("row"))).alias("input_row"),
            ).select(list(FINDING_SCHEMA))
        starts, at = [], 0
        for i in self.inputs:
            starts.append(at)
            at += i.records
        spans = pl.DataFrame(
            {"__start": starts, "__path": [i.path for i in self.inputs]},
            schema={"__start": pl.Int64, "__path": pl.String},
        ).sort("__start")
        located = (
            f.with_row_index("__i")
            .sort("row", nulls_last=True)
            .join_asof(spans, left_on="row", right_on="__start", strategy="backward")
            .sort("__i")
        )
        # Parsing every ``details`` JSON is the costly part (0.2 s per 100k findings), and only a
        # finding with neither a file nor a row needs it: parsed only when there is one.
        unplaced = located.select(
            (pl.col("input").is_null() & pl.col("__path").is_null()).any()
        ).item()
        from_details = (
            pl.col("details").str.json_path_match("$.file") if unplaced else pl.lit(None, pl.String)
        )
        return located.with_columns(
            pl.coalesce("input", "__path", from_details).alias("input"),
            pl.coalesce("input_row", pl.col("row") - pl.col("__start")).alias("input_row"),
        ).select(list(FINDING_SCHEMA))

    @property
    def records(self) -> int:
        return sum(i.records for i in self.inputs)

    def to_pandas(self) -> Any:
        """The findings as a pandas DataFrame (``details`` and ``fix`` stay JSON text)."""
        return self.findings.to_pandas()

    def iter_findings(self, *, shown: bool = False) -> list[Finding]:
        """The findings as objects. ``shown``: each ``fix`` as reports show it, its long
        strings and lists cut (:func:`bounded_details`), where the fix engine reads it whole."""
        f = self.findings
        if shown and f.height:
            f = f.with_columns(pl.lit(bounded_details(f["fix"])).alias("fix"))
        with gc_paused():
            return self._findings(f)

    def _findings(self, findings: pl.DataFrame) -> list[Finding]:
        return [
            Finding(
                rule=r["rule"],
                category=r["category"],
                severity=r["severity"],
                record=r["record"],
                field=r["field"],
                message=r["message"],
                details=orjson.loads(r["details"]) if r["details"] else {},
                fix=orjson.loads(r["fix"]) if r["fix"] else None,
                input=r["input"],
                row=r["input_row"],
            )
            for r in findings.iter_rows(named=True)
        ]

    def counts_by_rule(self) -> pl.DataFrame:
        """Per rule: findings and distinct records, in rule-code order."""
        if self.findings.is_empty():
            return pl.DataFrame(
                schema={
                    "rule": pl.String,
                    "category": pl.String,
                    "severity": pl.String,
                    "findings": pl.UInt32,
                    "records": pl.UInt32,
                }
            )
        return (
            self.findings.group_by(["rule", "category", "severity"])
            .agg(
                pl.len().cast(pl.UInt32).alias("findings"),
                pl.struct("input", "record").n_unique().cast(pl.UInt32).alias("records"),
            )
            .sort("rule")
        )

    def summary(self) -> dict[str, Any]:
        by_sev = {s.value: 0 for s in Severity}
        for sev, n in self.findings.group_by("severity").len().iter_rows():
            by_sev[sev] = n
        return {
            "records": self.records,
            "findings": self.findings.height,
            "by_severity": by_sev,
            # records, not subjects: a finding on a whole column, class or task group (no
            # ``row``) names no record ("7 of 2 records" for five constant columns before)
            "records_with_findings": self.findings.filter(pl.col("row").is_not_null())
            .select(pl.struct("input", "record").n_unique())
            .item()
            if self.findings.height
            else 0,
            "rules_run": list(self.rules_run),
            "by_rule": {
                r["rule"]: {"findings": r["findings"], "records": r["records"]}
                for r in self.counts_by_rule().iter_rows(named=True)
            },
            **({"stats": self.stats} if self.stats else {}),
        }

    def worst(self) -> Severity | None:
        if self.findings.is_empty():
            return None
        return max((Severity(s) for s in self.findings["severity"].unique()), key=lambda s: s.rank)

    def fails(self, fail_on: str) -> bool:
        """True when a finding is at or above ``fail_on`` (``never`` never fails)."""
        if fail_on == "never":
            return False
        worst = self.worst()
        return worst is not None and worst.rank >= Severity(fail_on).rank


# --------------------------------------------------------------------------- helpers for rules


def json_struct(*exprs: pl.Expr | str) -> pl.Expr:
    """A struct of expressions (or column names) → canonical JSON text (for the ``details``
    and ``fix`` columns)."""
    return pl.struct(*exprs).struct.json_encode()


def finding_frame(
    df: pl.DataFrame,
    *,
    field: pl.Expr,
    message: pl.Expr,
    details: pl.Expr,
    fix: pl.Expr | None = None,
) -> pl.DataFrame:
    """A rule's output from a frame of hits (which must have ``row`` and ``record`` columns)."""
    if df.is_empty():
        return empty_rule_output()
    return df.select(
        pl.col("row"),
        pl.col("record"),
        field.alias("field"),
        message.alias("message"),
        details.alias("details"),
        (fix if fix is not None else pl.lit(None, pl.String)).alias("fix"),
    )


def concat_outputs(parts: list[pl.DataFrame]) -> pl.DataFrame:
    """Concatenate rule outputs (empty parts skipped)."""
    parts = [p for p in parts if p.height]
    return pl.concat(parts, how="vertical_relaxed") if parts else empty_rule_output()


#: How much of a value a message quotes. Why a cap: one 1 MB cell would otherwise make a
#: 1 MB line in every report format (the finding's ``details`` are bounded too, see
#: :func:`bounded_details`).
MESSAGE_VALUE_CHARS = QUOTE_CHARS


def _short_repr(value: object, limit: int | None = MESSAGE_VALUE_CHARS) -> str:
    return repr(value) if limit is None else quoted(value, limit)


def clip_expr(col: str | pl.Expr, *, limit: int = QUOTE_CHARS, digest: bool = False) -> pl.Expr:
    """A string column as messages quote it (:func:`curate.core.errors.clip`): values longer than
    ``limit`` cut with "…"; the common short value is passed through without a Python call."""
    c = pl.col(col) if isinstance(col, str) else col
    return (
        pl.when(c.str.len_chars() > limit)
        .then(c.map_elements(lambda v: clip(v, limit, digest=digest), return_dtype=pl.String))
        .otherwise(c)
    )


def repr_expr(col: str | pl.Expr, *, limit: int | None = MESSAGE_VALUE_CHARS) -> pl.Expr:
    """Python ``repr`` of a string column, for quoting values in messages (cut at ``limit``)."""
    c = pl.col(col) if isinstance(col, str) else col
    return c.map_elements(lambda v: _short_repr(v, limit), return_dtype=pl.String)
