"""Errors that end a run with exit code 2 (unusable input or usage).

Why a dedicated exception: the CLI must turn *every* unusable input into one readable line that
names the file and where in it the problem is, never a traceback. Library code raises
:class:`InputError` with those facts; only the CLI decides how to print it.
"""

from __future__ import annotations

from pathlib import Path


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
        """``file:position: record …, field …: message`` — the single line the CLI prints."""
        where = self.path or "<input>"
        if self.position:
            where += f":{self.position}"
        parts = [where]
        if self.record is not None:
            parts.append(f"record {self.record}")
        if self.field:
            parts.append(f"field {self.field}")
        return ": ".join([", ".join(parts), self.message])


class UsageError(Exception):
    """A command-line option or argument is wrong (bad --edit-set, unknown family, ...)."""


class RemoteError(Exception):
    """A remote service (the Hugging Face Hub) refused or could not be reached: exit 2, one line."""
