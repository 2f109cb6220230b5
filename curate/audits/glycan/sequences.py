"""Schema and sequences (GL0xx, GL1xx): rows that do not fit the task, glycans that do not parse."""

from __future__ import annotations

import polars as pl

from curate.audits.glycan.registry import RULES
from curate.core.findings import (
    concat_outputs,
    finding_frame,
    json_struct,
    repr_expr,
)
from curate.core.rules import AuditContext
from curate.schemas.glycan_tables import (
    GlycanData,
)

# --------------------------------------------------------------------------- GL0xx / GL1xx
# The rows fix/export leave out (``invalid=True``): GL001 (no glycan, a label outside the task's
# classes, an unknown split, a non-numeric matrix value, a list or object where text belongs) and
# GL101/GL102 (a glycan string that does not parse). Each says the row's own value is malformed;
# a published row must at least be a glycan with values of the task's types. GL301/GL302
# (contradictions between rows), GL401/GL402 (leakage) and GL601 (two matrix columns disagreeing)
# are about well-formed rows and are fixed or documented instead.


@RULES.rule("GL001", "schema-invalid", category="schema", severity="error", invalid=True)
def schema_invalid(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """A row does not fit its task's schema: missing glycan, a label outside the task's classes
    (immunogenicity 0/1, glycosylation N/O/free), an unknown split name, a non-numeric
    interaction value, or a list or object where a glycan, label, split or number belongs.

    Such rows are left out of the label rules, and ``fix``/``export`` never publish them (they are
    dropped and counted; ``fix`` logs each one whole; ``--strict`` refuses instead).
    """
    return data.schema_findings


def _parse_findings(data: GlycanData, kind: str) -> pl.DataFrame:
    parts = []
    for t in data.tables:
        if t.task == "interaction":
            assert t.cells is not None
            bad = t.cells.filter(pl.col("error_kind") == kind).unique("column", keep="first")
            bad = bad.with_columns(
                pl.lit(None, pl.Int64).alias("row"),
                pl.format("column {}", repr_expr("column", limit=None)).alias("record"),
            )
            parts.append(
                finding_frame(
                    bad,
                    field=pl.col("column"),
                    # the parser's message already says where ("... at 27")
                    message=pl.format("glycan column header: {}", "error"),
                    details=json_struct(
                        pl.col("column").alias("glycan"),
                        pl.col("error_pos").alias("position"),
                        pl.lit(t.path).alias("file"),
                    ),
                )
            )
            continue
        # Every row, labelled or not: an unlabelled row with a broken glycan (a line cut short)
        # is still a malformed record that export would otherwise publish.
        bad = t.rows.filter(pl.col("error_kind") == kind).with_columns(
            _shortened("glycan", 120).alias("shown"), _shortened("glycan", 2000).alias("glycan")
        )
        parts.append(
            finding_frame(
                bad,
                field=pl.lit(t.columns.glycan),
                message=pl.format("{} in {}", "error", repr_expr("shown")),
                details=json_struct(
                    pl.col("glycan"),
                    pl.col("error_pos").alias("position"),
                    pl.col("error").alias("problem"),
                    pl.lit(t.path).alias("file"),
                ),
            )
        )
    return concat_outputs(parts)


def _shortened(col: str, limit: int) -> pl.Expr:
    """A long string cut to ``limit`` characters plus "…" (a 1 MB cell must not flood reports)."""
    c = pl.col(col)
    return pl.when(c.str.len_chars() > limit).then(c.str.slice(0, limit) + "…").otherwise(c)


@RULES.rule("GL101", "unparseable-glycan", category="schema", severity="error", invalid=True)
def unparseable_glycan(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """The glycan is not well-formed IUPAC-condensed: unbalanced brackets, a missing or malformed
    linkage, stray characters. The message gives the 0-based character position and what was
    expected there. A model fed such a string learns from noise, and no duplicate or leakage
    check can recognise it. Every row is parsed, labelled or not, and strings over 1 MiB
    (1,048,576 characters) are rejected as too long. ``fix``/``export`` never publish such rows.
    """
    return _parse_findings(data, "syntax")


@RULES.rule("GL102", "unknown-residue", category="schema", severity="error", invalid=True)
def unknown_residue(data: GlycanData, ctx: AuditContext) -> pl.DataFrame:
    """The glycan uses a monosaccharide, modification or linkage token outside the vocabulary
    (``curate/data/glycan_vocab.json``, built from GlycanML's 127 residue and 84 linkage tokens
    and the real glycowork tables). Tokenisers map it to an unknown token, so the model never sees
    what the string says. ``fix``/``export`` never publish such rows.
    """
    return _parse_findings(data, "unknown")
