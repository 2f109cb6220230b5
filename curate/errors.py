"""Errors that end a run with exit code 2 (unusable input or usage).

Why a dedicated exception: the CLI must turn *every* unusable input into one readable line that
names the file and where in it the problem is, never a traceback. Library code raises
:class:`InputError` with those facts; only the CLI decides how to print it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

#: How many characters of one value (a cell, a record id, a field path) a message quotes.
#: Why a cap: a record id or cell can be megabytes (a 20 MB id was once printed whole, 20 MB on
#: stdout for one line); a person needs the beginning to find it, the file has the rest.
QUOTE_CHARS = 200
#: How long a whole message may be, whatever it quotes: the net under every message that quotes
#: a value without :func:`clip` (a rule of a plug-in, say). Longer than any message curate
#: writes on purpose (column lists are cut to a dozen names).
MESSAGE_CHARS = 2000


def clip(text: str, limit: int = QUOTE_CHARS, *, digest: bool = False) -> str:
    """``text`` as a message quotes it: whole up to ``limit`` characters, else its first
    ``limit`` characters, "…" and its length (``abc… (20,000,000 characters)``).

    ``digest`` adds the first hex digits of its SHA-256 for values that identify something (a
    record id): two long ids that share their beginning stay two ids in a report's counts and
    in a baseline's fingerprints, and a cut id is the same text on every run.
    """
    if len(text) <= limit:
        return text
    tail = f"{len(text):,} characters"
    if digest:
        h = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        tail += f", sha256 {h}"
    return f"{text[:limit]}… ({tail})"


def quoted(value: object, limit: int = QUOTE_CHARS) -> str:
    """``repr`` of a value for a message, a long string cut (:func:`clip`) inside the quotes'
    reach: ``'abc'… (20,000,000 characters)``."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + f"… ({len(value):,} characters)"
    return clip(repr(value), limit)


class InputError(Exception):
    """The input cannot be used at all (missing, truncated, wrong shape, not a dataset)."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        position: str | None = None,
        record: str | None = None,
        field: str | None = None,
    ) -> None:
        self.message = " ".join(str(message).split())  # one line, whatever a library said
        self.path = str(path) if path is not None else None
        self.position = position
        self.record = record
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """``file:position: record …, field …: message`` — the single line the CLI prints.

        The record id and field are cut to :data:`QUOTE_CHARS` and the message to
        :data:`MESSAGE_CHARS` (:func:`clip`); the attributes keep them whole for callers.
        """
        where = self.path or "<input>"
        if self.position:
            where += f":{self.position}"
        parts = [where]
        if self.record is not None:
            parts.append(f"record {clip(str(self.record), digest=True)}")
        if self.field:
            parts.append(f"field {clip(str(self.field))}")
        return ": ".join([", ".join(parts), clip(self.message, MESSAGE_CHARS)])


class UsageError(Exception):
    """A command-line option or argument is wrong (bad --edit-set, unknown family, ...)."""


class RemoteError(Exception):
    """A remote service (the Hugging Face Hub) refused or could not be reached: exit 2, one line."""
