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


@dataclass(slots=True)
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


@dataclass(slots=True)
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


@dataclass(slots=True)
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
    """A linkage token decoded once and cached: parts, canonical text and sibling sort key."""

    written: str
    anomer: str
    child_position: str
    parent_positions: tuple[str, ...]
    canonical: str  # "(b1-3/4)": how the canonical key writes it
    order: tuple[Any, ...]


@lru_cache(maxsize=4096)
def _decode_link(token: str) -> _Link | None:
    """Decode a ``(...)`` token; ``None`` if it is no linkage.

    The canonical text lists uncertain acceptor positions ascending (``b1-4/3`` is ``b1-3/4``:
    the same set) and keeps a missing anomer missing (glycowork, too, tells ``1-4`` from
    ``?1-4``). The sort key orders siblings by acceptor position first, so the canonical main
    chain is the lowest-numbered branch, as IUPAC writers usually choose it.
    """
    written = token[1:-1]
    m = _LINK.fullmatch(written)
    if m is None or token[-1] != ")":  # a fast-split piece may lack its ")"
        return None
    anomer, child, first, rest = m.groups()
    parents = (first, *rest.split("/")[1:])
    ordered = sorted(set(parents), key=lambda p: _UNKNOWN_POS if p == "?" else int(p))
    canonical = f"({anomer}{child}-{'/'.join(ordered)})"
    order = (
        tuple(_UNKNOWN_POS if p == "?" else int(p) for p in ordered),
        _UNKNOWN_POS if child == "?" else int(child),
        anomer,
        canonical,
    )
    return _Link(written, anomer or "?", child, parents, canonical, order)


# --------------------------------------------------------------------------- scanner

_EXPECT_RESIDUE, _AFTER_RESIDUE, _AFTER_LINK = 0, 1, 2
_LINK_HINT = "linkage like '(a1-4)'"


class _Scan(NamedTuple):
    """Flat result of one pass, as parallel lists indexed by residue (cheap to build).

    ``kids[i]`` are the residues linked to residue ``i``; ``links[i]`` is the linkage written
    right after residue ``i`` (``None`` for the root); ``floating`` are the roots of ``{...}``.
    """

    names: list[str]
    norms: list[str]
    starts: list[int]
    kids: list[list[int]]
    links: list[_Link | None]
    floating: list[int]


def _bad_residue(text: str, pos: int) -> IUPACError:
    bad = _RESIDUE_CHARS.search(text)
    if bad is not None:
        at = pos + bad.start()
        return IUPACError(f"unexpected character {bad.group()!r} at {at}", at)
    return IUPACError(f"unknown residue {text!r} at {pos}", pos, "a known residue")


def _close(part: str, pos: int, state: int, opened: int) -> IUPACError:
    """The error for a ``]`` or ``}`` that does not follow a linkage."""
    if state == _AFTER_RESIDUE:  # "[Fuc]Gal": the branch's last residue has no linkage
        return IUPACError(f"expected {_LINK_HINT} at {pos}", pos, _LINK_HINT)
    if opened + 1 == pos:
        what = "branch" if part == "]" else "floating block"
        return IUPACError(f"empty {what} at {opened}", opened, "a residue")
    return IUPACError(f"expected residue before {part!r} at {pos}", pos, "a residue")


def _split(s: str) -> list[str]:
    """Residue texts (even items, possibly empty) alternating with delimiters (odd items).

    The reference is ``_SPLIT.split(s)``. For the usual string, whose parentheses all enclose a
    bracket-free linkage, marking token boundaries with ``str.replace`` and splitting on them
    yields the same list about a third faster than the regex (``re`` pays per character). Any
    other string gives a misaligned list, whose first bad piece (a residue text holding a
    delimiter, an unclosed ``(...`` piece, two residues in a row) makes :func:`_scan_parts`
    fail; :func:`_scan` then reruns with the reference split, so only well-formed strings ever
    take this path, and NUL (the marker) never does.
    """
    if "\0" in s:
        return _SPLIT.split(s)
    marked = s.replace("(", "\0(").replace(")", ")\0").replace("[", "\0[\0").replace("]", "\0]\0")
    if "{" in s:
        marked = marked.replace("{", "\0{\0").replace("}", "\0}\0")
    return marked.split("\0")


def _scan(s: str) -> _Scan:
    """Scan ``s``; on any error, rescan with the reference split for the exact message."""
    if not isinstance(s, str):
        raise IUPACError(f"expected a string, got {type(s).__name__}", 0, "a string")
    if not s:
        raise IUPACError("empty glycan", 0, "a residue")
    try:
        return _scan_parts(_split(s))
    except IUPACError:
        return _scan_parts(_SPLIT.split(s))


def _scan_parts(parts: list[str]) -> _Scan:
    """One left-to-right pass over the split tokens with a bracket stack.

    Each nesting level keeps the residues that carry a linkage but have no parent yet; the next
    residue at that level adopts them all (its main-chain child plus any closed branches). The
    loop takes (residue text, delimiter) pairs; it is the hot path of every audit.
    """
    names: list[str] = []
    norms: list[str] = []
    starts: list[int] = []
    kids: list[list[int]] = []
    links: list[_Link | None] = []
    floating: list[int] = []
    stack: list[tuple[list[int], int, str]] = []  # (outer waiting list, open position, bracket)
    waiting: list[int] = []
    expect_residue, after_residue, after_link = _EXPECT_RESIDUE, _AFTER_RESIDUE, _AFTER_LINK
    state = expect_residue
    prefix_end = 0  # where the leading floating blocks end; a "{" is valid only there
    pos = 0
    normalize = _normalize_residue
    decode = _decode_link
    parts.append("")  # the split has odd length: pad so texts and delimiters pair up
    for text, part in zip(parts[::2], parts[1::2]):
        if text:
            norm = normalize(text)
            if norm is None:
                raise _bad_residue(text, pos)
            if state == after_residue:  # only a misaligned fast split puts two texts in a row
                raise IUPACError(f"expected {_LINK_HINT} at {pos}", pos, _LINK_HINT)
            names.append(text)
            norms.append(norm)
            starts.append(pos)
            kids.append(waiting)
            links.append(None)
            waiting = []
            state = after_residue
            pos += len(text)
        if not part:  # the padding (or, in a misaligned fast split, a gap checked above)
            continue
        if len(part) > 1:  # "(...)": a linkage
            if state != after_residue:
                raise IUPACError(f"expected residue before linkage at {pos}", pos, "a residue")
            link = decode(part)
            if link is None:
                raise IUPACError(
                    f"bad linkage {part!r} at {pos}, expected {_LINK_HINT}", pos, _LINK_HINT
                )
            links[-1] = link
            waiting.append(len(names) - 1)
            state = after_link
        elif part == "[":
            if state == after_residue:
                raise IUPACError(f"expected {_LINK_HINT} at {pos}", pos, _LINK_HINT)
            stack.append((waiting, pos, part))
            waiting = []
            state = expect_residue
        elif part == "]" or part == "}":
            if not stack or stack[-1][2] != ("[" if part == "]" else "{"):
                raise IUPACError(f"unbalanced {part!r} at {pos}", pos)
            outer, opened, _ = stack.pop()
            if state != after_link:
                raise _close(part, pos, state, opened)
            if part == "]":
                outer.extend(waiting)
            else:
                floating.append(waiting[0])
                prefix_end = pos + 1
            waiting = outer
            state = expect_residue
        elif part == "{":
            if stack or pos != prefix_end:
                raise IUPACError(
                    f"floating substituent '{{' must lead the glycan, found at {pos}", pos
                )
            stack.append((waiting, pos, part))
            waiting = []
            state = expect_residue
        else:  # a lone "(" or ")"
            raise IUPACError(f"unbalanced {part!r} at {pos}", pos)
        pos += len(part)
    if stack:
        _, opened, bracket = stack[-1]
        closing = "]" if bracket == "[" else "}"
        raise IUPACError(f"unclosed {bracket!r} opened at {opened}", opened, repr(closing))
    if state == after_link:
        at = pos - len(links[-1].written) - 2  # type: ignore[union-attr]
        raise IUPACError(
            f"trailing linkage at {at}: the glycan must end with its reducing-end residue",
            at,
            "a residue",
        )
    if state == expect_residue:
        raise IUPACError(f"expected residue at {pos}", pos, "a residue")
    return _Scan(names, norms, starts, kids, links, floating)


# --------------------------------------------------------------------------- canonical form


def _canonical(
    norms: list[str], kids: list[list[int]], links: list[_Link | None], floating: list[int]
) -> str:
    """Canonical IUPAC-condensed string of a scanned tree (see the module docstring).

    Indices are already bottom-up (children precede parents), so one loop builds every subtree
    string after all its children's; no recursion, so chain length is not limited by the stack.
    ``written[i]`` is the subtree of ``i`` followed by its linkage, as its parent writes it.
    """
    written: list[str] = []
    order: list[tuple[Any, ...]] = []
    for i, children in enumerate(kids):
        if not children:
            text = norms[i]
        elif len(children) == 1:
            text = written[children[0]] + norms[i]
        else:
            ranked = sorted((order[c], written[c]) for c in children)
            text = ranked[0][1] + "".join(f"[{w}]" for _, w in ranked[1:]) + norms[i]
        link = links[i]
        if link is None:  # the root, always the last residue
            written.append(text)
            order.append(())
        else:
            written.append(text + link.canonical)
            order.append(link.order)
    root = written[-1]
    if not floating:
        return root
    return "".join(sorted(f"{{{written[r]}}}" for r in floating)) + root


@lru_cache(maxsize=1 << 16)
def canonical_key(s: str) -> str:
    """Canonical key of an IUPAC-condensed glycan; raises :class:`IUPACError` if malformed.

    Equal for every spelling of the same tree (branch order, main-chain choice, default
    configuration, order of uncertain positions) and different for different trees. Memoized
    (bounded LRU) because dataset columns repeat the same glycan across many rows.
    """
    scan = _scan(s)
    return _canonical(scan.norms, scan.kids, scan.links, scan.floating)


def parse(s: str) -> Glycan:
    """Parse ``s`` into a :class:`Glycan`; raises :class:`IUPACError` if it is malformed."""
    names, norms, starts, kids, links, floating = _scan(s)
    parents: list[int | None] = [None] * len(names)
    for parent, children in enumerate(kids):
        for child in children:
            parents[child] = parent
    residues = tuple(map(Residue, range(len(names)), names, norms, starts))
    linkages = tuple(
        Linkage(
            i,
            parents[i],
            link.anomer,
            link.child_position,
            link.parent_positions,
            link.written,
            starts[i] + len(names[i]),  # a linkage directly follows its residue
        )
        for i, link in enumerate(links)
        if link is not None
    )
    return Glycan(s, residues, linkages, len(names) - 1, tuple(floating))


def try_parse(s: str) -> Glycan | IUPACError:
    """:func:`parse` that returns the error instead of raising (audits turn it into a finding)."""
    try:
        return parse(s)
    except IUPACError as error:
        return error


def render(glycan: Glycan, *, canonical: bool = False) -> str:
    """Write ``glycan`` back as IUPAC-condensed.

    With ``canonical=False`` residues and linkages are written as spelled, the first-written
    child of each residue as its main chain; for ordinary input that reproduces the text (a
    leading ``[B(l)]A`` comes back as ``B(l)A``, the same tree). With ``canonical=True`` the
    result is the :func:`canonical_key` of the text, computed from the tree itself.
    """
    n = len(glycan.residues)
    kids: list[list[int]] = [[] for _ in range(n)]
    links: list[_Link | None] = [None] * n
    for link in glycan.linkages:
        if link.parent is not None:
            kids[link.parent].append(link.child)
        links[link.child] = _decode_link(f"({link.written})")
    for children in kids:
        children.sort()
    if canonical:
        norms = [r.normalized for r in glycan.residues]
        return _canonical(norms, kids, links, list(glycan.floating))
    written: list[str] = []
    for i, residue in enumerate(glycan.residues):
        children = kids[i]
        text = residue.name
        if children:
            branches = "".join(f"[{written[c]}]" for c in children[1:])
            text = written[children[0]] + branches + text
        link = links[i]
        written.append(text if link is None else f"{text}({link.written})")
    blocks = "".join(f"{{{written[r]}}}" for r in glycan.floating)
    return blocks + written[glycan.root]
