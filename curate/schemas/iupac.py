"""Strict IUPAC-condensed glycan parser with canonical keys.

IUPAC-condensed (the notation of glycowork, GlycanML and most glycan ML benchmarks) writes a glycan
from the non-reducing end to the reducing end: ``Gal(b1-4)GlcNAc`` is Gal linked by its C1 (beta)
to C4 of GlcNAc, and the last residue of the main chain is the root. Side branches sit in
``[...]`` right before the residue they hang on, to any depth and several per residue
(``Man(a1-3)[Man(a1-6)]Man``); a leading ``[...]`` is a branch on the first residue of the main
chain. Floating substituents ``{...}`` lead the string and hold fragments whose acceptor residue
is unknown (``{Neu5Ac(a2-?)}Gal(b1-4)GlcNAc``).

Why a parser of our own: glycowork's ``glycan_to_nxGraph`` accepts almost any string (it splits on
brackets, never validates, and rescues failures by rewriting the input), so a dataset linter
cannot use it to *find* malformed records, and it is too slow for 100k-row audits. This module
rejects anything that is not a well-formed glycan, with the 0-based position of the problem, and
runs a single regex split per string plus cached per-token checks.

Why canonical keys: one glycan has many spellings. Branch order is free (``Man(a1-3)[Man(a1-6)]Man``
and ``Man(a1-6)[Man(a1-3)]Man``), and which branch is written as the main chain is a convention
(longest chain, lowest linkage number) that writers apply differently. Duplicate and leakage
checks therefore need a key that is equal exactly when the trees are equal. :func:`canonical_key`
builds the standard canonical form of a rooted, edge-labelled tree: bottom-up, the children of every
residue are ordered by (linkage to the parent, canonical string of the child's subtree), the first
child is written as the main chain and the rest as branches. Sorting siblings by their complete
encodings makes the string independent of input order; writing the whole tree makes it injective.
The key is itself IUPAC-condensed, so ``parse(key)`` gives the same key again.

The residue vocabulary (base names, modification codes, prefixes, suffixes, default
configurations) is data in ``curate/data/glycan_vocab.json``; only the grammar is code.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from typing import Any, NamedTuple

__all__ = [
    "Glycan",
    "IUPACError",
    "Linkage",
    "Residue",
    "canonical_key",
    "parse",
    "render",
    "try_parse",
]


class IUPACError(ValueError):
    """A string that is not a well-formed IUPAC-condensed glycan.

    ``position`` is the 0-based index of the offending character (for an unclosed bracket, the
    bracket that was never closed); ``expected`` says what would have been valid there, when
    that is one thing. ``str(error)`` is the full one-line message, e.g. ``unbalanced ']' at 37``.
    """

    def __init__(self, message: str, position: int, expected: str | None = None) -> None:
        self.message = message
        self.position = position
        self.expected = expected
        super().__init__(message)


@dataclass(frozen=True, slots=True)
class Residue:
    """One monosaccharide (or aglycone) token.

    ``name`` is the token as written; ``normalized`` drops spellings that carry no information
    (a default configuration such as the ``L-`` of ``L-Fuc``, an explicit pyranose ``p``), so both
    spellings share one canonical key. ``start`` is the token's character offset.
    """

    index: int
    name: str
    normalized: str
    start: int


@dataclass(frozen=True, slots=True)
class Linkage:
    """The glycosidic bond from ``child`` to ``parent`` (towards the reducing end).

    ``parent`` is ``None`` for the root of a floating fragment (acceptor unknown). ``anomer`` is
    ``'a'``, ``'b'`` or ``'?'`` (also for a bare ``(1-4)``; ``written`` keeps that spelling, and
    the canonical key keeps the two apart as glycowork does). ``parent_positions`` holds the
    acceptor carbons as written, several when uncertain (``a2-3/6`` gives ``('3', '6')``).
    """

    child: int
    parent: int | None
    anomer: str
    child_position: str
    parent_positions: tuple[str, ...]
    written: str
    start: int


@dataclass(frozen=True, slots=True)
class Glycan:
    """A parsed glycan: residues in string order, one linkage per non-root residue.

    Children are always written before their parent, so residue indices are a valid bottom-up
    order. ``floating`` lists the roots of the ``{...}`` fragments; their linkage has no parent.
    """

    text: str
    residues: tuple[Residue, ...]
    linkages: tuple[Linkage, ...]
    root: int
    floating: tuple[int, ...]

    def children(self, index: int) -> tuple[int, ...]:
        """Indices of the residues linked to residue ``index``, in string order."""
        return tuple(link.child for link in self.linkages if link.parent == index)


# --------------------------------------------------------------------------- vocabulary


def _load_vocab() -> dict[str, Any]:
    resource = files("curate") / "data" / "glycan_vocab.json"
    return json.loads(resource.read_text(encoding="utf-8"))


def _alternation(words: Any) -> str:
    """Longest-first alternation, so a short word never shadows a longer one (``A`` vs ``Ac``)."""
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


def _residue_regex(vocab: dict[str, Any]) -> re.Pattern[str]:
    """Compile the residue grammar documented in the vocabulary file.

    Every modification unit is an atomic group repeated possessively: once a unit matched, the
    engine never re-splits it. That keeps matching linear on adversarial input such as
    ``NAcNAcNAc...X`` (where ``N``+``Ac`` and ``NAc`` would otherwise be retried exponentially),
    and it cannot reject a real token because no code is a prefix of a valid continuation that
    a shorter code would have allowed (codes are tried longest first).
    """
    system = vocab["systematic"]
    prefixes = vocab["prefixes"]
    config = _alternation(prefixes["configuration"])
    cfg_stem = _alternation(system["configurational_stems"])
    letters = "".join(sorted(prefixes["position_letters"]))
    core = (
        rf"(?:\d+(?:,\d+)*[{letters}]|d{{1,2}})?"
        rf"(?:(?:{_alternation(system['stereo_pairs'])})?(?:{cfg_stem})(?:(?:-(?:{config})-)?"
        rf"(?:{cfg_stem}))?(?:{_alternation(system['chain_length_stems'])})"
        rf"|{_alternation(vocab['bases'])})"
    )
    unit = (
        rf"(?>\d*(?:(?:{_alternation(vocab['substituent_atoms'])})?"
        rf"(?:{_alternation(vocab['modification_codes'])})))"
    )
    pattern = (
        rf"(?:(?:{_alternation(prefixes['open_chain'])})-)?"
        rf"(?:\d+(?:,\d+)*-(?:{_alternation(prefixes['anhydro'])})-)?"
        rf"(?P<config>(?P<letter>{config})-)?"
        rf"(?P<core>{core})"
        rf"(?P<ring>[{''.join(sorted(vocab['ring_forms']))}])?"
        rf"(?:{unit})*+"
        rf"(?:{_alternation(vocab['suffixes'])})?"
    )
    return re.compile(pattern)


_VOCAB = _load_vocab()
_RESIDUE = _residue_regex(_VOCAB)
_DEFAULT_CONFIG = {
    core: letter
    for letter, cores in _VOCAB["default_configuration"].items()
    if letter != "note"
    for core in cores
}
_RESIDUE_CHARS = re.compile(r"[^A-Za-z0-9,\-]")
# One split yields residue text, linkages and single structural characters alternately; a
# parenthesis that does not enclose a bracket-free linkage comes out alone and is reported.
_SPLIT = re.compile(r"(\([^()\[\]{}]*\)|[()\[\]{}])")
_LINK = re.compile(r"([ab?]?)(\d+|\?)-(\d+|\?)((?:/\d+)*)")
_UNKNOWN_POS = 1_000_000  # sorts '?' after every numbered position


@lru_cache(maxsize=8192)
def _normalize_residue(token: str) -> str | None:
    """Normalized name of a residue token, or ``None`` if it is not one (cached per token)."""
    m = _RESIDUE.fullmatch(token)
    if m is None:
        return None
    cut = []
    if m["config"] and _DEFAULT_CONFIG.get(m["core"]) == m["letter"]:
        cut.append(m.span("config"))
    if m["ring"] == "p":
        cut.append(m.span("ring"))
    if not cut:
        return token
    out, pos = [], 0
    for start, end in cut:
        out.append(token[pos:start])
        pos = end
    out.append(token[pos:])
    return "".join(out)


class _Link(NamedTuple):
    """A linkage spelling decoded once and cached: parts, canonical text and sibling sort key."""

    anomer: str
    child_position: str
    parent_positions: tuple[str, ...]
    canonical: str
    order: tuple[Any, ...]


@lru_cache(maxsize=4096)
def _decode_link(text: str) -> _Link | None:
    """Decode the text inside ``(...)``; ``None`` if it is no linkage.

    The canonical text lists uncertain acceptor positions ascending (``b1-4/3`` is ``b1-3/4``:
    the same set). The sort key orders siblings by acceptor position first, so the canonical
    main chain is the lowest-numbered branch, as IUPAC writers usually choose it.
    """
    m = _LINK.fullmatch(text)
    if m is None:
        return None
    anomer, child, first, rest = m.groups()
    parents = (first, *rest.split("/")[1:])
    ordered = sorted(set(parents), key=lambda p: _UNKNOWN_POS if p == "?" else int(p))
    canonical = f"{anomer}{child}-{'/'.join(ordered)}"
    order = (
        tuple(_UNKNOWN_POS if p == "?" else int(p) for p in ordered),
        _UNKNOWN_POS if child == "?" else int(child),
        anomer,
        canonical,
    )
    return _Link(anomer or "?", child, parents, canonical, order)


# --------------------------------------------------------------------------- scanner

_EXPECT_RESIDUE, _AFTER_RESIDUE, _AFTER_LINK = 0, 1, 2
_LINK_HINT = "linkage like '(a1-4)'"


class _Scan(NamedTuple):
    """Flat result of one pass: parallel lists indexed by residue (cheap to build)."""

    names: list[str]
    norms: list[str]
    starts: list[int]
    parents: list[int]  # -1: the root; -2: the root of a floating fragment
    links: list[_Link | None]
    link_texts: list[str]
    link_starts: list[int]
    floating: list[int]


def _bad_residue(text: str, pos: int) -> IUPACError:
    bad = _RESIDUE_CHARS.search(text)
    if bad is not None:
        return IUPACError(
            f"unexpected character {bad.group()!r} at {pos + bad.start()}", pos + bad.start()
        )
    return IUPACError(f"unknown residue {text!r} at {pos}", pos, "a known residue")


def _scan(s: str) -> _Scan:
    """Single left-to-right pass over the split tokens with a bracket stack.

    Each nesting level keeps the residues that carry a linkage but have no parent yet; the next
    residue at that level adopts them all (its main-chain child plus any closed branches).
    """
    if not isinstance(s, str):
        raise IUPACError(f"expected a string, got {type(s).__name__}", 0, "a string")
    if not s:
        raise IUPACError("empty glycan", 0, "a residue")
    names: list[str] = []
    norms: list[str] = []
    starts: list[int] = []
    parents: list[int] = []
    links: list[_Link | None] = []
    link_texts: list[str] = []
    link_starts: list[int] = []
    floating: list[int] = []
    stack: list[tuple[list[int], int, str]] = []  # (outer waiting list, open position, bracket)
    waiting: list[int] = []
    state = _EXPECT_RESIDUE
    prefix = True  # still before the main glycan, where floating blocks may appear
    pos = 0
    for i, part in enumerate(_SPLIT.split(s)):
        if not part:
            continue
        if not i & 1:  # residue text
            norm = _normalize_residue(part)
            if norm is None:
                raise _bad_residue(part, pos)
            idx = len(names)
            names.append(part)
            norms.append(norm)
            starts.append(pos)
            parents.append(-1)
            links.append(None)
            link_texts.append("")
            link_starts.append(-1)
            for child in waiting:
                parents[child] = idx
            waiting = []
            state = _AFTER_RESIDUE
            if not stack:
                prefix = False
        elif len(part) > 1:  # "(...)": a linkage
            if state != _AFTER_RESIDUE:
                raise IUPACError(f"expected residue before linkage at {pos}", pos, "a residue")
            text = part[1:-1]
            link = _decode_link(text)
            if link is None:
                raise IUPACError(
                    f"bad linkage {part!r} at {pos}, expected {_LINK_HINT}", pos, _LINK_HINT
                )
            idx = len(names) - 1
            links[idx] = link
            link_texts[idx] = text
            link_starts[idx] = pos
            waiting.append(idx)
            state = _AFTER_LINK
        elif part == "[":
            if state == _AFTER_RESIDUE:
                raise IUPACError(f"expected {_LINK_HINT} at {pos}", pos, _LINK_HINT)
            stack.append((waiting, pos, "["))
            waiting = []
            state = _EXPECT_RESIDUE
            prefix = prefix and bool(stack[0][2] == "{")
        elif part == "{":
            if stack or not prefix:
                raise IUPACError(
                    f"floating substituent '{{' must lead the glycan, found at {pos}", pos
                )
            stack.append((waiting, pos, "{"))
            waiting = []
            state = _EXPECT_RESIDUE
        elif part in "]}":
            if not stack or stack[-1][2] != ("[" if part == "]" else "{"):
                raise IUPACError(f"unbalanced {part!r} at {pos}", pos)
            if state != _AFTER_LINK:
                if state == _AFTER_RESIDUE:
                    raise IUPACError(f"expected {_LINK_HINT} at {pos}", pos, _LINK_HINT)
                empty = waiting == [] and (not names or starts[-1] < stack[-1][1])
                what = f"empty {'branch' if part == ']' else 'floating block'}"
                if empty:
                    raise IUPACError(f"{what} at {stack[-1][1]}", stack[-1][1], "a residue")
                raise IUPACError(f"expected residue before {part!r} at {pos}", pos, "a residue")
            outer, _, _ = stack.pop()
            if part == "]":
                outer.extend(waiting)
            else:
                parents[waiting[0]] = -2
                floating.append(waiting[0])
            waiting = outer
            state = _EXPECT_RESIDUE
        else:  # a lone "(" or ")"
            raise IUPACError(f"unbalanced {part!r} at {pos}", pos)
        pos += len(part)
    if stack:
        _, opened, bracket = stack[-1]
        raise IUPACError(f"unclosed {bracket!r} opened at {opened}", opened, repr(
            "]" if bracket == "[" else "}"
        ))
    if state == _AFTER_LINK:
        at = link_starts[-1] if link_starts else 0
        raise IUPACError(
            f"trailing linkage at {at}: the glycan must end with its reducing-end residue",
            at,
            "a residue",
        )
    if state == _EXPECT_RESIDUE:
        raise IUPACError(f"expected residue at {len(s)}", len(s), "a residue")
    return _Scan(names, norms, starts, parents, links, link_texts, link_starts, floating)


# --------------------------------------------------------------------------- canonical form


def _canonical(
    norms: list[str], parents: list[int], links: list[_Link | None], floating: list[int]
) -> str:
    """Canonical IUPAC-condensed string of a scanned tree (see the module docstring).

    Indices are already bottom-up (children precede parents), so one loop builds every subtree
    string after all its children's; no recursion, so chain length is not limited by the stack.
    """
    n = len(norms)
    kids: list[list[tuple[tuple[Any, ...], str, str]] | None] = [None] * n
    strings: list[str] = [""] * n
    for i in range(n):
        entries = kids[i]
        if entries is None:
            text = norms[i]
        elif len(entries) == 1:
            text = entries[0][2] + norms[i]
        else:
            entries.sort()
            text = entries[0][2] + "".join(f"[{e[2]}]" for e in entries[1:]) + norms[i]
        strings[i] = text
        parent = parents[i]
        if parent >= 0:
            link = links[i]
            assert link is not None  # every non-root residue carries a linkage
            entry = (link.order, text, f"{text}({link.canonical})")
            bucket = kids[parent]
            if bucket is None:
                kids[parent] = [entry]
            else:
                bucket.append(entry)
    root = strings[n - 1]  # the root is the last residue written
    if not floating:
        return root
    blocks = sorted(f"{{{strings[r]}({links[r].canonical})}}" for r in floating)  # type: ignore[union-attr]
    return "".join(blocks) + root


@lru_cache(maxsize=1 << 16)
def canonical_key(s: str) -> str:
    """Canonical key of an IUPAC-condensed glycan; raises :class:`IUPACError` if malformed.

    Equal for every spelling of the same tree (branch order, main-chain choice, default
    configuration, order of uncertain positions) and different for different trees. Memoized
    (bounded LRU) because benchmark columns repeat the same glycan across many rows.
    """
    scan = _scan(s)
    return _canonical(scan.norms, scan.parents, scan.links, scan.floating)


def parse(s: str) -> Glycan:
    """Parse ``s`` into a :class:`Glycan`; raises :class:`IUPACError` if it is malformed."""
    scan = _scan(s)
    residues = tuple(
        Residue(i, name, norm, start)
        for i, (name, norm, start) in enumerate(zip(scan.names, scan.norms, scan.starts))
    )
    linkages = tuple(
        Linkage(
            i,
            None if parent == -2 else parent,
            link.anomer,
            link.child_position,
            link.parent_positions,
            scan.link_texts[i],
            scan.link_starts[i],
        )
        for i, (parent, link) in enumerate(zip(scan.parents, scan.links))
        if link is not None
    )
    return Glycan(s, residues, linkages, len(residues) - 1, tuple(scan.floating))


def try_parse(s: str) -> Glycan | IUPACError:
    """:func:`parse` that returns the error instead of raising (audits turn it into a finding)."""
    try:
        return parse(s)
    except IUPACError as error:
        return error


def render(glycan: Glycan, *, canonical: bool = False) -> str:
    """Write ``glycan`` back as IUPAC-condensed.

    With ``canonical=False`` the residues and linkages are written as they were spelled, the
    first-written child of each residue as its main chain; for ordinary input that reproduces the
    text (a leading ``[B(l)]A`` comes back as ``B(l)A``, the same tree). With ``canonical=True``
    the result is :func:`canonical_key` of the text.
    """
    n = len(glycan.residues)
    parents = [-1] * n
    links: list[_Link | None] = [None] * n
    for link in glycan.linkages:
        parents[link.child] = -2 if link.parent is None else link.parent
        links[link.child] = _decode_link(link.written)
    if canonical:
        norms = [r.normalized for r in glycan.residues]
        return _canonical(norms, parents, links, list(glycan.floating))
    written = {link.child: link.written for link in glycan.linkages}
    strings: list[str] = [""] * n
    branches: list[list[str]] = [[] for _ in range(n)]
    for i, residue in enumerate(glycan.residues):
        parts = branches[i]
        strings[i] = (parts[0] + "".join(f"[{p}]" for p in parts[1:]) if parts else "") + (
            residue.name
        )
        if parents[i] >= 0:
            branches[parents[i]].append(f"{strings[i]}({written[i]})")
    blocks = "".join(f"{{{strings[r]}({written[r]})}}" for r in glycan.floating)
    return blocks + strings[glycan.root]
