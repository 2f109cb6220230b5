"""Schema (DF0xx): rows whose own values do not fit the manifest schema."""

from __future__ import annotations

import polars as pl

from curate.audits.deepfake.registry import RULES
from curate.core.rules import AuditContext
from curate.schemas.deepfake_tables import DeepfakeData

# DF001 is the invalid rule (``invalid=True``): a row whose own values do not fit the schema (no
# sample id, an unknown modality, label, audio-visual label or split, a malformed sha256, a
# negative or non-numeric duration, size, frame or sample rate, a list or object where text
# belongs) is never published. Rules about how rows relate (duplicates, leakage,
# contradictions) are not: fixing or documenting those is the job of the fixes and the card.


@RULES.rule("DF001", "schema-invalid", category="schema", severity="error", invalid=True)
def schema_invalid(data: DeepfakeData, ctx: AuditContext) -> pl.DataFrame:
    """A manifest row does not fit the schema: no sample id; a modality other than
    audio/image/video; a label that is not real or fake (``bonafide``/``spoof``/``0``/``1``
    are read as real/fake); an audio-visual label other than RA-RV, RA-FV, FA-RV, FA-FV; a
    split that is not train/validation/test (map others with ``--split-map VALUE=SPLIT``); a
    sha256 that is not 64 hex digits; a duration, fps, width, height or sample rate that is
    negative or not a number (sizes and rates must be integers); a list or object where a
    value belongs.

    The finding names the file, the row, the sample id and the field (``details.column`` is
    the manifest's own column). Such rows are left out of every other rule, and ``fix`` and
    ``export`` never publish them (``fix`` logs each one whole; ``--strict`` refuses instead).
    """
    return data.schema_findings.drop("rule")
