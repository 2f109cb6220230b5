"""Errors that end a run with exit code 2 (unusable input or usage).

Why a dedicated exception: the CLI must turn *every* unusable input into one readable line that
names the file and where in it the problem is, never a traceback. Library code raises
:class:`InputError` with those facts; only the CLI decides how to print it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

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
        import hashlib  # here: a help or a completion never cuts an id (issue 36)

        h = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        tail += f", sha256 {h}"
    return f"{text[:limit]}… ({tail})"


def fix_label(fix: str, safety: str | None, some_unsafe: bool = False) -> str:
    """``fix: always (safe)`` as ``curate rules`` shows a rule; ``(safe, some unsafe)`` for a
    rule whose findings say which of their fixes need ``--unsafe-fixes``. Here, beside the
    other words of messages, so that ``curate rules`` (the catalogue, no polars) and the rules
    themselves say it one way."""
    return f"fix: {fix} ({safety}{', some unsafe' if some_unsafe and safety == 'safe' else ''})"


def counted(n: int, word: str, *, grouped: bool = False) -> str:
    """``1 error``, ``2 errors`` (a word whose plural takes an ``s``; ``grouped``: thousands
    separated, ``1,204 records``): summaries read "1 errors, 1 records" before."""
    number = f"{n:,}" if grouped else str(n)
    return f"{number} {word}" if n == 1 else f"{number} {word}s"


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
        path: object = None,
        position: str | None = None,
        record: str | None = None,
        field: str | None = None,
    ) -> None:
        # ``path`` is anything whose ``str()`` names the input: a Path, or an io-layer Blob (a
        # compressed, Hub or stdin input) that this lower layer cannot name in an annotation.
        self.message: str = " ".join(str(message).split())  # one line, whatever a library said
        self.path: str | None = str(path) if path is not None else None
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


class CurateWarning(UserWarning):
    """Something the user asked for could not be done exactly, and the run went on (``tasks=200``
    on a file of 2 task groups scans both). The CLI prints it as one ``curate: warning:`` line;
    API callers can filter it or turn it into an error with :mod:`warnings`."""


class ArgumentError(UsageError, TypeError):
    """A Python API call got an argument it cannot take: a wrong type (``paths=123``), an option
    the family does not have (``edit_sett=``), an option of the wrong type.

    Why both bases: it is curate's own usage error (one line, naming the argument; the CLI exits
    2 on it like on any :class:`UsageError`), and it is the :class:`TypeError` Python raises for
    a wrong argument type or an unexpected keyword, so code written ``except TypeError`` against
    the bare errors of earlier versions still catches it.
    """


# --------------------------------------------------------------------------- spelling options
# A message that tells the user what to pass must use the caller's words: ``pass --overwrite``
# on the command line, ``pass overwrite=True`` to :func:`curate.fix`. Library code writes every
# such reference through :func:`arg` with the CLI flag; the CLI turns the command-line spelling
# on for its run (:func:`command_line_spelling`), and every other caller reads Python names.
#
# Why a process-wide switch rather than a ContextVar: messages are also built in worker threads
# (the columnar readers' ThreadPoolExecutor), which do not inherit a ContextVar set by the
# command; one CLI command is one process, and the switch is restored when it ends, so the API
# called afterwards in the same process (a test, a notebook) reads Python names again.

_CLI_SPELLING = False
_UNSET: object = object()

#: Flags whose API argument is not the flag with ``-`` → ``_`` (repeatable flags that fill a
#: list or a mapping have a singular flag and a plural argument). ``tests/test_api_errors.py``
#: checks every family option's flag against this table.
API_NAMES: dict[str, str] = {
    "--tag": "tags",
    "--source-dataset": "source_datasets",
    "--column": "columns",
    "--value": "values",
    # curate.core.engine.use_engine(name, address)
    "--engine": "name",
    "--ray-address": "address",
}


@contextlib.contextmanager
def command_line_spelling() -> Iterator[None]:
    """Messages raised inside name CLI flags (``--overwrite``) instead of API arguments."""
    global _CLI_SPELLING
    before, _CLI_SPELLING = _CLI_SPELLING, True
    try:
        yield
    finally:
        _CLI_SPELLING = before


def cli_spelling() -> bool:
    """Do messages name CLI flags now (inside :func:`command_line_spelling`)?"""
    return _CLI_SPELLING


#: The operation the user asked for (``fix``, ``export``, ...), outermost first; None: none yet.
#: Process-wide for the same reason as the spelling switch above.
_VERB: str | None = None


@contextlib.contextmanager
def acting_as(verb: str) -> Iterator[None]:
    """Within this block the user's operation is ``verb`` (the outermost one holds: ``fix``
    audits too, and its messages still speak of ``fix``)."""
    global _VERB
    before = _VERB
    if _VERB is None:
        _VERB = verb
    try:
        yield
    finally:
        _VERB = before


def current_verb() -> str:
    """The operation a message should name (``audit`` outside any): a hint that tells a user
    to rerun with another family repeats the command they ran, not ``audit``."""
    return _VERB or "audit"


def api_name(flag: str) -> str:
    """The keyword argument of the Python API behind a CLI flag: ``--edit-set`` → ``edit_set``."""
    return API_NAMES.get(flag) or flag.removeprefix("--").replace("-", "_")


def arg(flag: str, value: Any = _UNSET, *, quoted: bool = False) -> str:
    """An option as the caller spells it, optionally with a value.

    ``arg("--overwrite", True)`` is ``--overwrite`` on the command line and ``overwrite=True``
    in Python; ``arg("--edit-set", "random:5")`` is ``--edit-set random:5`` / ``edit_set=
    'random:5'``; ``arg("--column", {"glycan": "NAME"})`` is ``--column glycan=NAME`` /
    ``columns={'glycan': 'NAME'}``; ``arg("--files", False)`` is ``--no-files`` /
    ``files=False``; without a value, only the name. ``quoted``: the flag's value as a Python
    string literal too (``--license 'cc-by-4'``), for a value the user typed that is wrong.
    """
    if not _CLI_SPELLING:
        name = api_name(flag)
        return name if value is _UNSET else f"{name}={value!r}"
    if value is _UNSET or value is True:
        return flag
    if value is False:
        return "--no-" + flag.removeprefix("--")
    if isinstance(value, dict):
        return " ".join(f"{flag} {k}={v}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return " ".join(f"{flag} {v}" for v in value)
    return f"{flag} {value!r}" if quoted else f"{flag} {value}"


def field_path(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a field path: ``("requested_rewrite", 1, "target_new",
    "id")`` → ``requested_rewrite[1].target_new.id``. One spelling for every message that names
    a field, whether of a record or of the project configuration."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


class StrictRefusal(Exception):
    """``strict=True`` and some records are invalid: nothing was written (the CLI exits 1).

    Defined here, not in :mod:`curate.api` (which re-exports it as ``curate.StrictRefusal``):
    the command line maps it to its exit code without importing the API and its polars."""
