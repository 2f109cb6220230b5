"""Telling a user they gave one family another family's file: the hint that names the right one.

Why apart from :mod:`curate.families.base`: the hint asks every registered family
(:func:`curate.families.all_families`) whether the input looks like theirs, so it needs the
registry, which itself imports the base contract; here it sits above both.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from curate.core.errors import InputError, cli_spelling, current_verb
from curate.families.base import Family


def other_family_hint(family: Family, path: str | Path, keys: Iterable[str] | None = None) -> str:
    """``"; it looks like a glycan table (curate audit glycan FILE)"`` when another registered
    family recognises ``path`` (:meth:`Family.sniff`), else ``""``: what a family appends to
    the error for an input none of whose first records is its own. Called through the Python
    API, the hint is the call: ``(curate.audit('glycan', 'FILE'))``.

    ``keys``: the field names the refusing family saw in its first batch (else read from the
    file's head, :func:`curate.io.sniff.probe`). Families are asked in registration order; one that
    cannot be loaded, or whose sniff fails, is skipped: a hint must never turn a clear exit 2
    into a crash.
    """
    import shlex

    from curate.families import all_families
    from curate.io.sniff import probe

    try:
        found = probe(path, keys)
        others = all_families()
    except Exception:
        return ""
    for other in others.values():
        if other is family or other.name == family.name:
            continue
        try:
            what = other.sniff(found)
        except Exception:
            continue
        if what:
            # the caller's words: the command on the command line, the call in Python
            verb = current_verb()  # the operation asked for: diff, fix, export, ...
            if verb == "diff":  # two inputs: "curate diff OTHER FILE" could not run
                run = (
                    f"curate diff {other.name} OLD NEW"
                    if cli_spelling()
                    else f"curate.diff({other.name!r}, old, new)"
                )
                return f"; it looks like {what} ({run}, both of that family)"
            if cli_spelling():
                run = f"curate {verb} {other.name} {shlex.quote(str(path))}"
            else:
                run = f"curate.{verb}({other.name!r}, {str(path)!r})"
            return f"; it looks like {what} ({run})"
    return ""


def hinted(
    e: InputError,
    family: Family,
    path: str | Path,
    keys: Iterable[str] | None = None,
    *,
    instead: str | None = None,
) -> InputError:
    """``e`` with :func:`other_family_hint` appended when another family recognises ``path``
    (a refusal a family already words its own way: "not an HDF5 file", "no sample id column",
    "unknown file type '.hdf5'"); ``e`` itself otherwise. ``instead``: a shorter message to say
    when the hint is given (what this family missed matters less than where to go)."""
    hint = other_family_hint(family, path, keys)
    if not hint:
        return e
    return InputError(
        (instead or e.message) + hint,
        path=e.path,
        position=e.position,
        record=e.record,
        field=e.field,
    )


def not_this_family(
    family: Family,
    path: str | Path,
    expected: str,
    *,
    keys: Iterable[str] | None = None,
    why: str = "",
) -> InputError:
    """The error for an input of which not one record of the first batch is ``family``'s:
    ``FILE: no record matches EXPECTED (WHY); it looks like … (curate audit OTHER FILE)``.

    Why exit 2 and not a finding per record: a file of another family (a glycan table given to
    the knowledge-editing audit) made thousands of "malformed record" findings and exit 1, as
    if the data were a damaged dataset of this family. Only the *first batch* is judged, and
    only "none matches": a file some of whose records are malformed is still audited, each bad
    record a finding.
    """
    hint = other_family_hint(family, path, keys)
    said = hint or (f" ({why})" if why else "")  # the hint says more than what is missing
    return InputError(f"no record matches {expected}{said}", path=path)
