"""Strict IUPAC-condensed glycan parser with canonical keys.

IUPAC-condensed (the notation of glycowork, GlycanML and most glycan ML benchmarks) writes a glycan
from the non-reducing end to the reducing end: ``Gal(b1-4)GlcNAc`` is Gal linked by its C1 (beta)
to C4 of GlcNAc, and the last residue of the main chain is the root. Side branches sit in
``[...]`` right before the residue they hang on, to any depth and several per residue
(``Man(a1-3)[Man(a1-6)]Man``); a leading ``[...]`` is a branch on the first residue of the main
chain. Floating blocks ``{...}`` lead the string and hold fragments whose acceptor residue is
unknown (``{Neu5Ac(a2-?)}Gal(b1-4)GlcNAc``) or bare modifications whose residue is unknown
(``{OS}Gal(b1-4)GlcNAc``, ``{6P}``). A residue's modification may have uncertain positions
(``Gal3/6S``), as a linkage may.

Why a parser of our own: glycowork's ``glycan_to_nxGraph`` accepts almost any string (it splits on
brackets, never validates, and rescues failures by rewriting the input), so a dataset linter
cannot use it to *find* malformed records, and building a networkx graph per string is slow for
100k-row audits. This module rejects anything that is not a well-formed glycan, with the 0-based
position of the problem. Well-formed strings take a few ``str.split`` calls and one memo lookup
per residue (:func:`parse`) or per bracket-free run of residues (:func:`canonical_key`); only
rejected strings pay for a second, regex-driven pass that pinpoints the error.

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
from functools import cmp_to_key, lru_cache
from importlib.resources import files
from operator import itemgetter
from typing import Any, NamedTuple

__all__ = [
    "Glycan",
    "IUPACError",
    "Linkage",
    "Residue",
    "canonical_key",
    "parse",
    "render",
    "residue_parts",
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
        super().__init__(message, position, expected)  # all args, so the error pickles

    def __str__(self) -> str:
        return self.message


# The records are slotted but not frozen: a frozen dataclass sets every field through
# object.__setattr__, which made parse() about twice as slow. Treat them as read-only.


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
    ``substituents`` are the floating substituent blocks as written (``6P`` for ``{6P}``):
    modifications of some residue of the glycan, which one unknown. ``key`` is
    :func:`canonical_key` of ``text``.
    """

    text: str
    residues: tuple[Residue, ...]
    linkages: tuple[Linkage, ...]
    root: int
    floating: tuple[int, ...]
    key: str  # the canonical key, computed in the same pass
    substituents: tuple[str, ...] = ()

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


def _strip_names(pattern: str) -> str:
    """``pattern`` with its named groups made anonymous, to embed it where it repeats."""
    return re.sub(r"\(\?P<\w+>", "(?:", pattern)


def _residue_regex(
    vocab: dict[str, Any],
) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """Compile the residue grammar documented in the vocabulary file, its modification unit, and
    a floating substituent block's content (modification units only: ``6P``, ``OS``).

    Every modification unit is an atomic group repeated possessively: once a unit matched, the
    engine never re-splits it. That keeps matching linear on adversarial input such as
    ``NAcNAcNAc...X`` (``N``+``Ac`` and ``NAc`` would otherwise be retried exponentially). It
    rejects no valid token: codes are tried longest first, and a code may not be followed by a
    lower-case letter, because no unit starts with one (a lower-case code such as ``en`` needs
    its position), nor by an amide code (``Hex`` of ``4NHex`` follows its own ``N``). So a
    longer code never eats what starts the next unit (``SH`` in ``4NSHb`` would leave ``b``:
    the unit backs off to ``S`` and ``Hb`` follows; ``EtN`` in ``EtNHex`` would leave ``Hex``),
    and wherever a longer code still wins (``Pyr`` over ``Py``, ``EtN`` over ``Et``+``N``) what
    is left parses either way: the tests check every pair of units.
    """
    system = vocab["systematic"]
    prefixes = vocab["prefixes"]
    config = _alternation([*prefixes["configuration"], *system["stereo_pairs"]])
    cfg_stem = _alternation(system["configurational_stems"])
    letters = "".join(sorted(prefixes["position_letters"]))
    anhydro = rf"\d+(?:,\d+)*-(?:{_alternation(prefixes['anhydro'])})-"
    core = (
        rf"(?:(?:\d+(?:,\d+)*[{letters}])+|d{{1,2}})?"
        rf"(?:(?:{_alternation(system['stereo_pairs'])})?(?:{cfg_stem})(?:(?:-(?:{config})-)?"
        rf"(?:{cfg_stem}))?(?:{_alternation(system['chain_length_stems'])})"
        rf"|{_alternation(vocab['bases'])})"
    )
    atoms = _alternation(vocab["substituent_atoms"])
    codes = _alternation(c for c in vocab["modification_codes"] if not c[0].islower())
    lower = _alternation(c for c in vocab["modification_codes"] if c[0].islower())
    amide = _alternation(vocab["amide_codes"])
    bridge = _alternation(vocab["bridge_codes"])
    # positions: one, several uncertain ones (3/6S), or a pair bridged by one group (1,7lactone).
    # A lower-case code (4en, 6ulo) needs its position, so no unit starts with a lower-case letter.
    unit = (
        rf"(?>(?P<pos>\d+(?:/\d+)*)?"
        rf"(?:(?P<amide>N(?:{amide}))|(?P<atom>{atoms})?(?:{codes})|(?<=\d)(?:{lower}))"
        rf"(?![a-z]|{amide})"
        rf"|(?P<bridge>\d+,\d+)(?:{bridge})(?![a-z]))"
    )
    pattern = (
        rf"(?:(?:{_alternation(prefixes['open_chain'])})-)?"
        # a configuration before an Anhydro prefix (D-2,7-Anhydro-...) or after it, not both
        rf"(?:(?P<pre>(?:{config})-){anhydro}|(?:{anhydro})?(?P<config>(?P<letter>{config})-)?)"
        rf"(?P<core>{core})"
        rf"(?P<ring>[{''.join(sorted(vocab['ring_forms']))}])?"
        rf"(?P<mods>(?:{_strip_names(unit)})*+)"
        rf"(?:{_alternation(vocab['suffixes'])})?"
    )
    return re.compile(pattern), re.compile(unit), re.compile(rf"(?:{_strip_names(unit)})++")


_VOCAB = _load_vocab()
_RESIDUE, _MOD_UNIT, _SUBSTITUENT = _residue_regex(_VOCAB)
_DEFAULT_CONFIG = {
    core: letter
    for letter, cores in _VOCAB["default_configuration"].items()
    if letter != "note"
    for core in cores
}
_RESIDUE_CHARS = re.compile(r"[^A-Za-z0-9,/\-]")
# One split yields residue text, linkages and single structural characters alternately; a
# parenthesis that does not enclose a bracket-free linkage comes out alone and is reported.
_SPLIT = re.compile(r"(\([^()\[\]{}]*\)|[()\[\]{}])")
_LINK = re.compile(r"([ab?]?)(\d+|\?)-(\d+|\?)((?:/\d+)*)")
_UNKNOWN_POS = 1_000_000  # sorts '?' after every numbered position


def _mod_groups(mods: str) -> tuple[str, list[tuple[tuple[int, ...], str]]]:
    """Split a residue's modifications into (head, positioned substituents).

    A unit with a position (``3S``, ``1Coum``, ``3/6S``, ``1,7lactone``) starts a substituent,
    and the bare codes after it belong to it (``6PEtN`` is one phosphoethanolamine at C6,
    ``4PP`` a pyrophosphate); a unit with a substituent atom but no position (``OMe``, ``NAc``)
    starts a group of its own that stays in the head. Everything unpositioned stays in the head
    in written order: consecutive codes there can spell one substituent (``OPOCm``), so their
    order may carry meaning. A substituent's sort key is its positions; uncertain positions are
    one set, written ascending (``6/3S`` is ``3/6S``), as in linkages.
    """
    head: list[str] = []
    groups: list[tuple[tuple[int, ...], str]] = []
    in_head = True
    for m in _MOD_UNIT.finditer(mods):
        pos = m["pos"] or m["bridge"]
        if pos:
            text = m.group()
            if "/" in pos:
                ordered = sorted(pos.split("/"), key=int)
                text = "/".join(ordered) + text[len(pos) :]
                numbers = tuple(map(int, ordered))
            else:
                numbers = tuple(map(int, pos.split(",")))
            groups.append((numbers, text))
            in_head = False
        elif in_head or m["atom"] or m["amide"]:
            head.append(m.group())
            in_head = True
        else:
            groups[-1] = (groups[-1][0], groups[-1][1] + m.group())
    return "".join(head), groups


def _canonical_mods(mods: str, grammar: re.Pattern[str], token: str, span: tuple[int, int]) -> str:
    """``token`` with its modifications ``mods`` (at ``span``) in canonical order, if that
    order reads back as exactly the same parts under ``grammar``; else ``token`` unchanged.

    Units are not separated, so a reordering could be read another way: only a reading that
    gives the same head and substituents (and the same modification span) is used.
    """
    head, groups = _mod_groups(mods)
    if not groups:
        return token
    start, end = span
    ordered = sorted(groups)
    candidate = token[:start] + head + "".join(g[1] for g in ordered) + token[end:]
    if candidate == token:
        return token
    again = grammar.fullmatch(candidate)
    if again is None:
        return token
    if grammar is _RESIDUE:
        if again.span("mods") != span:
            return token
        mods = again["mods"]
    else:
        mods = candidate
    return candidate if _mod_groups(mods) == (head, ordered) else token


@lru_cache(maxsize=8192)
def _normalize_residue(token: str) -> str | None:
    """Normalized name of a residue token, or ``None`` if it is not one (cached per token).

    Drops a default configuration and an explicit pyranose ``p``, writes a configuration that
    stands before an Anhydro prefix after it (``D-2,7-Anhydro-X`` is ``2,7-Anhydro-D-X``), and
    writes the modifications in canonical order (:func:`_mod_groups`): the unpositioned ones
    first, as written, then the positioned substituents by position. ``Gal3S1Cer`` and
    ``Gal1Cer3S`` are one residue, so are ``D-FucOMe1Coum`` and ``D-Fuc1CoumOMe``, and
    ``Gal6/3S`` and ``Gal3/6S``. The reordered token is used only if it reads back as exactly
    the same parts (:func:`_canonical_mods`). So a normalized token always parses into the
    modifications it came from, and tokens with different modifications never normalize alike.
    """
    m = _RESIDUE.fullmatch(token)
    if m is None:
        return None
    if m["pre"]:
        start, end = m.span("pre")
        core = m.start("core")
        return _normalize_residue(token[:start] + token[end:core] + m["pre"] + token[core:])
    cut = []
    if m["config"] and _DEFAULT_CONFIG.get(m["core"]) == m["letter"]:
        cut.append(m.span("config"))
    if m["ring"] == "p":
        cut.append(m.span("ring"))
    # same length and spans: the cuts below still apply
    token = _canonical_mods(m["mods"], _RESIDUE, token, m.span("mods"))
    if not cut:
        return token
    out, pos = [], 0
    for start, end in cut:
        out.append(token[pos:start])
        pos = end
    out.append(token[pos:])
    return "".join(out)


@lru_cache(maxsize=1024)
def _normalize_substituent(text: str) -> str | None:
    """Normalized content of a floating substituent block (``6P`` of ``{6P}``), or ``None``.

    A block holds modifications whose residue is unknown, in the residue grammar's units
    (``{OS}``, ``{6P}``, ``{OAc}``), put in the same canonical order as a residue's.
    """
    if not text or _SUBSTITUENT.fullmatch(text) is None:
        return None
    return _canonical_mods(text, _SUBSTITUENT, text, (0, len(text)))


class _Link(NamedTuple):
    """A linkage spelling decoded once and cached: parts, canonical form and sibling sort key."""

    written: str
    anomer: str
    child_position: str
    parent_positions: tuple[str, ...]
    canonical: str  # "(b1-3/4)": how the canonical key writes it
    order: tuple[Any, ...]


@lru_cache(maxsize=4096)
def _decode_link(written: str) -> _Link | None:
    """Decode the text inside ``(...)``; ``None`` if it is no linkage.

    The canonical form lists uncertain acceptor positions ascending (``b1-4/3`` is ``b1-3/4``:
    the same set) and keeps a missing anomer missing (glycowork, too, tells ``1-4`` from
    ``?1-4``). The sort key orders siblings by acceptor position first, so the canonical main
    chain is the lowest-numbered branch, as IUPAC writers usually choose it.
    """
    m = _LINK.fullmatch(written)
    if m is None:
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


class _Unit(NamedTuple):
    """One ``)``-separated piece of a glycan: ``][Fuc(a1-2`` is brackets, residue, linkage.

    ``subs`` are the floating substituent blocks among the leading brackets (``{6P}`` of
    ``{6P}Man(a1-2``), as (written, normalized) pairs; ``lead`` is the length of everything
    before the residue name.
    """

    brackets: str
    name: str
    norm: str
    link: _Link | None
    subs: tuple[tuple[str, str], ...]
    lead: int
    piece: str  # the residue as the key writes it in a chain: norm, then its canonical linkage


class _Memo:
    """A bounded memo for the per-piece lookups of the hot path: a dict, emptied when full.

    ``lru_cache`` relinks its recency list on every hit, about 100 ns, which on a glycan of
    eight residues was a fifth of its key. Here a hit is one C-level ``dict.get``, mapped over
    a string's pieces (``map(memo.get, parts)``); a miss, or a piece that decodes to ``None``
    (never stored), goes through the call. ``size`` 0 stores nothing (the cache bypassed).
    """

    __slots__ = ("__wrapped__", "_data", "get", "size")

    def __init__(self, func: Any, size: int) -> None:
        self.__wrapped__ = func
        self._data: dict[str, Any] = {}
        self.get = self._data.get
        self.size = size

    def __call__(self, key: str) -> Any:
        value = self.get(key)
        if value is None:
            value = self.__wrapped__(key)
            if value is not None and self.size:
                if len(self._data) >= self.size:
                    self._data.clear()
                self._data[key] = value
        return value

    def cache_clear(self) -> None:
        self._data.clear()


def _memo(size: int) -> Any:
    return lambda func: _Memo(func, size)


def _lead_substituents(text: str) -> tuple[str, tuple[tuple[str, str], ...], int] | None:
    """Split the leading ``[]{}`` run of a unit that holds substituent blocks (``}{OS}Gal``).

    Returns the structural brackets, the blocks and the length of the run, or ``None`` if a
    block is no substituent. A ``{`` opens a substituent block only if what follows up to the
    next ``}`` is modifications: a fragment's residue always carries a linkage, so ``{X}`` can
    only be a substituent, and there is nothing to choose.
    """
    brackets: list[str] = []
    subs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        j = i
        while j < n and text[j] in "[]{}":
            j += 1
        close = text.find("}", j) if j > i and text[j - 1] == "{" else -1
        if close < 0 or "(" in text[j:close]:
            brackets.append(text[i:j])
            return "".join(brackets), tuple(subs), j
        norm = _normalize_substituent(text[j:close])
        if norm is None:
            return None
        brackets.append(text[i : j - 1])
        subs.append((text[j:close], norm))
        i = close + 1


@_memo(1 << 14)
def _decode_unit(text: str) -> _Unit | None:
    """Decode a ``)``-separated piece; ``None`` unless it is ``[brackets] residue ["(" link]``.

    One cache lookup per residue instead of a strip, a split and two lookups: real columns reuse
    a few thousand such pieces (4,307 in the three glycowork files).
    """
    body = text.lstrip("[]{}")
    lead = len(text) - len(body)
    brackets = text[:lead]
    subs: tuple[tuple[str, str], ...] = ()
    if "}" in body and brackets.endswith("{"):  # a floating substituent block: {6P}Man
        split = _lead_substituents(text)
        if split is None:
            return None
        brackets, subs, lead = split
        body = text[lead:]
    name, paren, written = body.partition("(")
    norm = _normalize_residue(name) if name else None
    if norm is None:
        return None
    if not paren:
        return _Unit(brackets, name, norm, None, subs, lead, norm)
    link = _decode_link(written)
    if link is None:
        return None
    return _Unit(brackets, name, norm, link, subs, lead, norm + link.canonical)


_UNIT_HIT = _decode_unit.get  # a hit without a Python call; misses go to _decode_unit

# --------------------------------------------------------------------------- builder

_EXPECT_RESIDUE, _AFTER_RESIDUE, _AFTER_LINK = 0, 1, 2
_LINK_HINT = "linkage like '(a1-4)'"
# Floating blocks may only lead the glycan; braces cannot nest, so this settles where they are.
_FLOATING_PREFIX = re.compile(r"(?:\{[^{}]*\})*[^{}]*")

# A subtree of the canonical form: (normalized residue, its children as entries in canonical
# order, head, full). ``head`` is the first _HEAD characters of the subtree's canonical text, the
# whole text when ``full``. A waiting child is an entry: (sort key of its linkage, canonical
# linkage, subtree, residue index). Subtrees keep bounded heads, never their whole text: the
# texts of every subtree of a chain are quadratic in its length, the nodes are linear.
_Node = tuple[str, tuple[Any, ...], str, bool]
_Entry = tuple[tuple[Any, ...], str, _Node, int]
_HEAD = 128


def _node(norm: str, children: tuple[_Entry, ...]) -> _Node:
    """A subtree node, with the head of its text written from its children's heads."""
    pieces: list[str] = []
    size = 0
    for i, (_, link, child, _) in enumerate(children):
        if i:
            pieces.append("[")
            size += 1
        pieces.append(child[2])
        size += len(child[2])
        if not child[3] or size > _HEAD:
            return (norm, children, "".join(pieces)[:_HEAD], False)
        pieces.append(link)
        size += len(link)
        if i:
            pieces.append("]")
            size += 1
        if size > _HEAD:
            return (norm, children, "".join(pieces)[:_HEAD], False)
    pieces.append(norm)
    text = "".join(pieces)
    if len(text) > _HEAD:
        return (norm, children, text[:_HEAD], False)
    return (norm, children, text, True)


def _write(node: _Node, out: list[str], tail: str = "") -> None:
    """Append the canonical text of ``node`` (then ``tail``) to ``out``, without recursion.

    A node is written as its first child (the main chain), its other children in ``[...]``,
    then its residue; each child is its subtree followed by its linkage. A short subtree is its
    head. An explicit stack of pending pieces keeps a 100,000-deep chain off the call stack.
    """
    pending: list[Any] = [tail, node] if tail else [node]
    while pending:
        item = pending.pop()
        if type(item) is str:
            out.append(item)
            continue
        norm, children, head, full = item
        if full:
            out.append(head)
            continue
        pending.append(norm)
        for _, link, child, _ in reversed(children[1:]):
            pending += ("]", link, child, "[")
        if children:
            pending += (children[0][1], children[0][2])


def _text(entry: _Entry) -> str:
    """Canonical text of a child: its subtree, then its linkage (as the parent writes it)."""
    out: list[str] = []
    _write(entry[2], out, entry[1])
    return "".join(out)


def _head(entry: _Entry) -> tuple[str, bool]:
    """The first ``_HEAD`` characters of a child's text, and whether that is all of it."""
    node = entry[2]
    if not node[3]:
        return node[2], False
    text = node[2] + entry[1]
    return (text, True) if len(text) <= _HEAD else (text[:_HEAD], False)


def _compare(a: _Entry, b: _Entry) -> int:
    """Order two children with one linkage by their canonical texts, as strings compare.

    The heads decide unless both texts are longer than a head and agree on it; only then are
    the two texts written out (and dropped): real glycans never get there.
    """
    ha, fa = _head(a)
    hb, fb = _head(b)
    m = min(len(ha), len(hb))
    if ha[:m] != hb[:m]:
        return -1 if ha[:m] < hb[:m] else 1
    if fa or fb:  # a whole text that is a prefix of the other's: the shorter comes first
        if fa and fb:
            return (len(ha) > len(hb)) - (len(ha) < len(hb))
        return -1 if fa else 1
    ta, tb = _text(a), _text(b)
    return (ta > tb) - (ta < tb)


_BY_TEXT = cmp_to_key(_compare)


def _order(waiting: list[_Entry]) -> None:
    """Sort siblings by (linkage, canonical text of child), as the key writes them.

    The linkage decides almost always; siblings on the same linkage are compared by
    :func:`_compare`, so memory stays linear.
    """
    waiting.sort(key=lambda e: e[0])
    i, n = 0, len(waiting)
    while i < n:
        j = i + 1
        while j < n and waiting[j][0] == waiting[i][0]:
            j += 1
        if j - i > 1:
            waiting[i:j] = sorted(waiting[i:j], key=_BY_TEXT)
        i = j


class _Built(NamedTuple):
    """What one pass over a well-formed glycan yields.

    ``units[i]`` spells residue ``i`` (string order); ``kids[i]`` are the indices of its
    children (``None`` when only the key was asked for); ``floating`` the indices of the roots
    of the ``{...}`` fragments; ``substituents`` the floating substituent blocks (``{6P}``) as
    (written, normalized); ``key`` the canonical key.
    """

    key: str
    units: list[_Unit]
    kids: list[list[int]] | None
    floating: list[int]
    substituents: list[tuple[str, str]]


#: Glycans up to this many characters are keyed by :func:`_short`, which writes every
#: subtree's text; longer ones by :func:`_long`, linear in time and memory for any shape.
#: A chain is keyed by neither: its key is its pieces joined, at any length.
_SHORT = 4096
_PIECE = itemgetter(6)


def _build(s: str, tree: bool = True) -> _Built | None:
    """Canonical key (and with ``tree``, the tree) of a well-formed glycan; ``None`` if it is
    not one.

    Splitting on ``)`` (one C-level call, where ``re`` would pay per character) cuts a
    well-formed glycan into units ``[brackets] residue "(" linkage``, the last one without its
    linkage: a linkage is always written right after its residue and a bracket never inside
    one. All units are decoded by a cached C-level ``map`` before the loop.

    Then one of three builders, which write the same key (the tests check it): a string
    without brackets is a chain, valid when every unit but the last has its linkage, and its
    key is the units' pieces joined (a third of real glycans, at C speed); a short glycan goes
    to :func:`_short`, a long one to :func:`_long`. Anything irregular returns ``None`` and
    :func:`_diagnose` explains it; the builders and the diagnoser implement one grammar, which
    the tests check on real and random strings. This is the hot path of audits.
    """
    parts = s.split(")")
    units = list(map(_UNIT_HIT, parts))
    if None in units:
        units = list(map(_decode_unit, parts))
        if None in units:
            return None
    if "[" not in s and "]" not in s and "{" not in s and "}" not in s:
        # each unit holds at most one "(" (a second would fail the linkage grammar)
        if s.count("(") != len(units) - 1 or units[-1].link is not None:
            return None
        kids = [[i - 1] if i else [] for i in range(len(units))] if tree else None
        return _Built("".join(map(_PIECE, units)), units, kids, [], [])
    if ("{" in s or "}" in s) and not _FLOATING_PREFIX.fullmatch(s):
        return None
    if len(s) > _SHORT:
        return _long(units, tree)
    return _short(units, [] if tree else None)


def _short(units: list[_Unit], kids: list[list[int]] | None) -> _Built | None:
    """:func:`_build` for a short glycan: each subtree's canonical text written as it completes.

    Children are always written before their parent, so when a residue is read its subtree is
    complete. Each nesting level keeps the children that wait for their parent as entries
    (sort key of the linkage, canonical text of subtree and linkage, residue index); the next
    residue at that level adopts them all, sorts them as plain tuples (by linkage, then text)
    and writes its own text. Texts are copied once per level of depth, which is why only short
    glycans come here (the longest real one is under 700 characters); ``kids`` is filled
    unless ``None``.
    """
    stack: list[tuple[list[tuple[Any, str, int]], str]] = []  # (outer waiting list, bracket)
    waiting: list[tuple[Any, str, int]] = []
    floating: list[tuple[Any, str, int]] = []
    substituents: list[tuple[str, str]] = []
    last = len(units) - 1
    text = ""
    for index, (brackets, _, norm, link, subs, _, piece) in enumerate(units):
        if subs:  # braces lead the string (checked before), so these are floating substituents
            substituents += subs
        if brackets:
            # a bracket closes only right after a linkage: first in its unit, not the first unit
            closer = brackets[0]
            if closer == "]" or closer == "}":
                if not index or not stack or stack[-1][1] != ("[" if closer == "]" else "{"):
                    return None
                outer = stack.pop()[0]
                if closer == "]":
                    outer.extend(waiting)
                else:
                    floating.append(waiting[0])
                waiting = outer
                brackets = brackets[1:]
            for bracket in brackets:
                if bracket == "[" or (bracket == "{" and not stack):
                    stack.append((waiting, bracket))
                    waiting = []
                else:
                    return None
        if not waiting:
            body = ""
        elif len(waiting) == 1:
            body = waiting[0][1]
        else:
            waiting.sort()
            body = waiting[0][1] + "".join(["[" + e[1] + "]" for e in waiting[1:]])
        if kids is not None:
            kids.append([e[2] for e in waiting])
        if link is None:  # only the last unit may lack its linkage
            if index != last:
                return None
            text = body + norm
        else:
            waiting = [(link.order, body + piece, index)]
    if stack or units[last].link is not None:
        return None
    if floating or substituents:  # the root's text after the floating blocks, sorted
        blocks = ["{" + e[1] + "}" for e in floating]
        blocks += ["{" + norm + "}" for _, norm in substituents]
        blocks.sort()
        text = "".join(blocks) + text
    return _Built(text, units, kids, [e[2] for e in floating], substituents)


@_memo(1 << 14)
def _decode_segment(text: str) -> tuple[tuple[Any, ...] | None, str] | None:
    """Decode a run of residues between brackets; ``None`` unless it is one (cached per run).

    ``Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-2)Man(a1-3)`` and ``Man(b1-4)GlcNAc(b1-4)GlcNAc`` are
    runs: in each, every residue but the first has exactly one child, the one before it, so
    the run adds its residues' pieces to the key in written order, whatever its first residue
    adopts. Returns the sort key of the run's last linkage (``None`` when the run ends with the
    root, a residue without linkage) and that text: the entry the run's last residue waits
    with when its first adopts nothing. Branched glycans of a column share most of their runs
    (the 41,016 branched real strings of the benchmark: 227,861 runs, 12,344 distinct), so the
    cache spares decoding them, and :func:`_key` works per run, not per residue.
    """
    pieces = text.split(")")
    tail = pieces.pop()  # "" when the run ends with a linkage
    units = list(map(_UNIT_HIT, pieces))
    if None in units:
        units = list(map(_decode_unit, pieces))
    # a unit holds at most one "(": every unit before the tail has its linkage, the tail none
    if None in units or text.count("(") != len(units):
        return None
    joined = "".join(map(_PIECE, units))
    if tail:
        root = _decode_unit(tail)
        return None if root is None else (None, joined + root.norm)
    return (units[-1].link.order, joined) if units else None


_RUN_HIT = _decode_segment.get


def _key(s: str) -> str | None:
    """``_build(s, False).key`` (``None`` when that is ``None``), by runs of residues.

    Braces and strings over ``_SHORT`` go to :func:`_build`, chains are joined as there. A
    branched glycan is split at its brackets into runs (:func:`_decode_segment`): each run's
    first residue adopts the children waiting at its level, exactly as in :func:`_short`, and
    the rest of the run is one cached piece of text. A bracket must follow a linkage or
    another bracket, ``]`` only a linkage, and the last run must end with the root: the
    grammar of :func:`_short` in terms of runs (the tests check both agree on every string).
    """
    if "{" in s or "}" in s or len(s) > _SHORT:
        built = _build(s, False)
        return None if built is None else built.key
    if "[" not in s and "]" not in s:  # a chain, as in _build
        parts = s.split(")")
        units = list(map(_UNIT_HIT, parts))
        if None in units:
            units = list(map(_decode_unit, parts))
            if None in units:
                return None
        if s.count("(") != len(units) - 1 or units[-1].link is not None:
            return None
        return "".join(map(_PIECE, units))
    # Split at "[" and then at "]": two C-level splits beat one regex split. Every piece but
    # the last is followed by "[", so its last run starts a level with nothing waiting; every
    # run but a piece's last is followed by "]", so it joins the level below (the stack).
    pieces = s.split("[")
    final = len(pieces) - 1
    stack: list[list[tuple[Any, str]]] = []  # per open level, its children without parent
    for k, piece in enumerate(pieces):
        if "]" not in piece:  # one run after "[" (or at the start): it adopts nothing
            if k == final:  # a "[" that is never closed
                return None
            if piece:
                entry = _RUN_HIT(piece) or _decode_segment(piece)
                if entry is None or entry[0] is None:  # the root must come last
                    return None
                stack.append([entry])
            else:  # "[[", or a leading "["
                stack.append([])
            continue
        runs = piece.split("]")
        tail = runs.pop()  # after the last "]": "" before a "[", else a run
        waiting: list[tuple[Any, str]] = []
        for run in runs:  # each followed by "]"
            entry = _RUN_HIT(run) or _decode_segment(run)
            if entry is None or entry[0] is None or not stack:
                return None
            if not waiting:
                pass  # the first run adopts nothing
            elif len(waiting) == 1:
                entry = (entry[0], waiting[0][1] + entry[1])
            elif len(waiting) == 2:  # one branch: the common case, sorted by one comparison
                first, second = waiting if waiting[0] <= waiting[1] else waiting[::-1]
                entry = (entry[0], first[1] + "[" + second[1] + "]" + entry[1])
            else:
                waiting.sort()
                body = "".join(["[" + e[1] + "]" for e in waiting[1:]])
                entry = (entry[0], waiting[0][1] + body + entry[1])
            waiting = stack.pop()
            waiting.append(entry)
        if not tail:  # "][", or a "]" that ends the string
            if k == final:
                return None
            stack.append(waiting)
            continue
        entry = _RUN_HIT(tail) or _decode_segment(tail)
        if entry is None:
            return None
        if len(waiting) == 1:
            text = waiting[0][1] + entry[1]
        elif len(waiting) == 2:
            first, second = waiting if waiting[0] <= waiting[1] else waiting[::-1]
            text = first[1] + "[" + second[1] + "]" + entry[1]
        else:
            waiting.sort()
            text = waiting[0][1] + "".join(["[" + e[1] + "]" for e in waiting[1:]]) + entry[1]
        if entry[0] is None:  # the root: the last run
            return text if k == final and not stack else None
        if k == final:  # a trailing linkage
            return None
        stack.append([(entry[0], text)])
    return None  # unreachable: the last piece returned


def _long(units: list[_Unit], tree: bool) -> _Built | None:
    """:func:`_build` for a long glycan, in time and memory linear in its length.

    As :func:`_short`, but a subtree is a node that keeps at most the first ``_HEAD``
    characters of its text: children are ordered by linkage, then by these heads (whole texts
    are written out only for siblings on one linkage whose texts agree on a head), and the key
    is written once, at the end, from the nodes. Writing each subtree's text as it completed
    copied a chain's prefix once per residue: quadratic time, 6 GB at 270 KB.
    """
    kids: list[list[int]] = []
    floating: list[_Entry] = []
    substituents: list[tuple[str, str]] = []
    stack: list[tuple[list[_Entry], str]] = []  # (outer waiting list, bracket)
    waiting: list[_Entry] = []
    state = _EXPECT_RESIDUE
    node: _Node = ("", (), "", True)
    for index, (brackets, _, norm, link, subs, _, _) in enumerate(units):
        if state == _AFTER_RESIDUE:  # only the last unit may lack its linkage
            return None
        if subs:  # braces lead the string (checked before), so these are floating substituents
            substituents += subs
        if brackets:
            for bracket in brackets:
                if bracket == "[" or bracket == "{":
                    if bracket == "{" and stack:
                        return None
                    stack.append((waiting, bracket))
                    waiting = []
                else:
                    opener = "[" if bracket == "]" else "{"
                    if state != _AFTER_LINK or not stack or stack[-1][1] != opener:
                        return None
                    outer = stack.pop()[0]
                    if bracket == "]":
                        outer.extend(waiting)
                    else:
                        floating.append(waiting[0])
                    waiting = outer
                state = _EXPECT_RESIDUE
        if len(waiting) > 1:
            _order(waiting)
        if not waiting:
            node = (norm, (), norm, True)
        elif len(waiting) == 1:  # a chain link, inlined: most residues of real glycans
            child = waiting[0]
            head = child[2][2]
            if child[2][3] and len(head) + len(child[1]) + len(norm) <= _HEAD:
                node = (norm, (child,), head + child[1] + norm, True)
            else:
                node = _node(norm, (child,))
        else:
            node = _node(norm, tuple(waiting))
        if tree:
            kids.append([e[3] for e in waiting])
        if link is None:
            waiting = []
            state = _AFTER_RESIDUE
        else:
            waiting = [(link.order, link.canonical, node, index)]
            state = _AFTER_LINK
    if stack or state != _AFTER_RESIDUE:
        return None
    out: list[str] = []
    if floating or substituents:  # the root's subtree after the floating blocks, sorted
        blocks = [f"{{{_text(e)}}}" for e in floating]
        blocks += [f"{{{norm}}}" for _, norm in substituents]
        out.extend(sorted(blocks))
    _write(node, out)
    return _Built(
        "".join(out), units, kids if tree else None, [e[3] for e in floating], substituents
    )


# --------------------------------------------------------------------------- diagnosis


def _bad_residue(text: str, pos: int) -> IUPACError:
    bad = _RESIDUE_CHARS.search(text)
    if bad is not None:
        at = pos + bad.start()
        return IUPACError(f"unexpected character {bad.group()!r} at {at}", at)
    return IUPACError(f"unknown residue {text!r} at {pos}", pos, "a known residue")


def _diagnose(s: str) -> IUPACError | None:
    """The first error in ``s`` with its exact position; ``None`` if ``s`` is well-formed.

    Runs only for strings :func:`_build` rejected. A slower reference tokenizer (one regex split
    into residue texts and delimiters, which also isolates stray parentheses) drives the same
    grammar as a state machine that only validates.
    """
    parts = _SPLIT.split(s)
    parts.append("")  # the split has odd length: pad so texts and delimiters pair up
    stack: list[tuple[int, str]] = []  # (open position, bracket)
    state = _EXPECT_RESIDUE
    prefix_end = 0
    pos = 0
    last_link = 0
    for text, part in zip(parts[::2], parts[1::2], strict=True):
        if (  # a floating substituent block, "{6P}": the "{" led the glycan (checked below)
            part == "}"
            and stack
            and stack[-1] == (pos - 1, "{")
            and _normalize_substituent(text) is not None
        ):
            stack.pop()
            pos += len(text) + 1
            prefix_end = pos
            continue
        if text:  # a residue; the split puts a delimiter before every text
            if _normalize_residue(text) is None:
                return _bad_residue(text, pos)
            state = _AFTER_RESIDUE
            pos += len(text)
        if not part:  # the padding
            break
        if len(part) > 1:  # "(...)": a linkage
            if state != _AFTER_RESIDUE:
                return IUPACError(f"expected residue before linkage at {pos}", pos, "a residue")
            if _decode_link(part[1:-1]) is None:
                return IUPACError(
                    f"bad linkage {part!r} at {pos}, expected {_LINK_HINT}", pos, _LINK_HINT
                )
            state = _AFTER_LINK
            last_link = pos
        elif part == "[" or part == "{":
            if state == _AFTER_RESIDUE:
                return IUPACError(f"expected {_LINK_HINT} at {pos}", pos, _LINK_HINT)
            if part == "{" and (stack or pos != prefix_end):
                return IUPACError(
                    f"floating substituent '{{' must lead the glycan, found at {pos}", pos
                )
            stack.append((pos, part))
            state = _EXPECT_RESIDUE
        elif part == "]" or part == "}":
            if not stack or stack[-1][1] != ("[" if part == "]" else "{"):
                return IUPACError(f"unbalanced {part!r} at {pos}", pos)
            opened = stack.pop()[0]
            if state == _AFTER_RESIDUE:  # "[Fuc]Gal": the branch's last residue has no linkage
                return IUPACError(f"expected {_LINK_HINT} at {pos}", pos, _LINK_HINT)
            if state == _EXPECT_RESIDUE:
                if opened + 1 == pos:
                    what = "branch" if part == "]" else "floating block"
                    return IUPACError(f"empty {what} at {opened}", opened, "a residue")
                return IUPACError(f"expected residue before {part!r} at {pos}", pos, "a residue")
            if part == "}":
                prefix_end = pos + 1
            state = _EXPECT_RESIDUE
        else:  # a lone "(" or ")"
            return IUPACError(f"unbalanced {part!r} at {pos}", pos)
        pos += len(part)
    if stack:
        opened, bracket = stack[-1]
        closing = "]" if bracket == "[" else "}"
        return IUPACError(f"unclosed {bracket!r} opened at {opened}", opened, repr(closing))
    if state == _AFTER_LINK:
        return IUPACError(
            f"trailing linkage at {last_link}: the glycan must end with its reducing-end residue",
            last_link,
            "a residue",
        )
    if state == _EXPECT_RESIDUE:
        return IUPACError(f"expected residue at {pos}", pos, "a residue")
    return None


# --------------------------------------------------------------------------- public API


#: Longest string parsed as a glycan (1 MiB). The longest in the real glycowork and GlycanML
#: tables is under 700 characters, so anything near this is a concatenation or a corrupt cell;
#: parsing is linear in time and memory (a 1 MiB chain: about 0.05 s and 30 MB for the key, 0.4 s
#: and 70 MB with the dataclass tree; bench/history/RESULTS-log-2026.md), and the cap keeps one
#: cell within that.
#: Longer strings are an error, reported like any other.
MAX_GLYCAN_CHARS = 1 << 20


def _checked(s: str, tree: bool = True) -> _Built:
    """:func:`_build` ``s`` (the tree only if ``tree``), or raise the exact error
    :func:`_diagnose` finds."""
    if not isinstance(s, str):
        raise IUPACError(f"expected a string, got {type(s).__name__}", 0, "a string")
    if not s:
        raise IUPACError("empty glycan", 0, "a residue")
    if len(s) > MAX_GLYCAN_CHARS:
        raise IUPACError(
            f"too long for a glycan: {len(s):,} characters (limit {MAX_GLYCAN_CHARS:,})",
            MAX_GLYCAN_CHARS,
            "the end of the glycan",
        )
    built = _build(s, tree)
    if built is None:
        # _build and _diagnose implement one grammar; a missing diagnosis would be a bug in one
        raise _diagnose(s) or IUPACError("malformed glycan at 0", 0)
    return built


@lru_cache(maxsize=1 << 16)
def canonical_key(s: str) -> str:
    """Canonical key of an IUPAC-condensed glycan; raises :class:`IUPACError` if malformed.

    Equal for every spelling of the same tree (branch order, main-chain choice, default
    configuration, order of uncertain positions) and different for different trees. Memoized
    (bounded LRU) because dataset columns repeat the same glycan across many rows.
    """
    if type(s) is str and len(s) <= MAX_GLYCAN_CHARS:
        key = _key(s)
        if key is not None:
            return key
    return _checked(s, False).key  # the error


def parse(s: str) -> Glycan:
    """Parse ``s`` into a :class:`Glycan`; raises :class:`IUPACError` if it is malformed."""
    key, units, kids, floating, substituents = _checked(s)
    residues = []
    linkages: list[Linkage] = []  # every residue but the root (the last) has one: index = child
    pos = 0
    for index, (_, name, norm, link, _, lead, _) in enumerate(units):
        start = pos + lead
        residues.append(Residue(index, name, norm, start))
        pos = start + len(name)
        if link is not None:  # written right after its residue; the ")" ends the unit
            linkages.append(
                Linkage(
                    index,
                    None,
                    link.anomer,
                    link.child_position,
                    link.parent_positions,
                    link.written,
                    pos,
                )
            )
            pos += len(link.written) + 2
    assert kids is not None  # asked for with the tree
    for parent, children in enumerate(kids):
        for child in children:
            linkages[child].parent = parent
    return Glycan(
        s,
        tuple(residues),
        tuple(linkages),
        len(units) - 1,
        tuple(floating),
        key,
        tuple(written for written, _ in substituents),
    )


def try_parse(s: str) -> Glycan | IUPACError:
    """:func:`parse` that returns the error instead of raising (audits turn it into a finding)."""
    try:
        return parse(s)
    except IUPACError as error:
        return error


def render(glycan: Glycan) -> str:
    """Write ``glycan`` back as IUPAC-condensed, residues and linkages as spelled.

    The first-written child of each residue is written as its main chain, so for ordinary input
    this reproduces the text (a leading ``[B(l)]A`` comes back as ``B(l)A``, the same tree;
    floating substituents come first, then the floating fragments).
    Unlike ``glycan.key`` it is built from the dataclasses alone, which lets tests check that
    the tree holds everything the text said: ``canonical_key(render(g)) == g.key``.
    """
    kids: list[list[int]] = [[] for _ in glycan.residues]
    for link in glycan.linkages:
        if link.parent is not None:
            kids[link.parent].append(link.child)
    suffix = {link.child: f"({link.written})" for link in glycan.linkages}
    out: list[str] = []
    # written depth-first from an explicit stack, never as one string per subtree: those are
    # quadratic in a chain's length, and recursion would overflow on a deep one
    pending: list[int | str] = [glycan.root]
    for r in reversed(glycan.floating):
        pending += ("}", suffix[r], r, "{")
    pending += [f"{{{sub}}}" for sub in reversed(glycan.substituents)]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        children = sorted(kids[item])
        pending.append(glycan.residues[item].name)
        for c in reversed(children[1:]):
            pending += ("]", suffix[c], c, "[")
        if children:
            pending += (suffix[children[0]], children[0])
    return "".join(out)


@lru_cache(maxsize=1 << 14)
def residue_parts(name: str) -> tuple[str, tuple[str, ...]]:
    """A normalized residue name split into its core and its modifications (``Gal3S`` → ``Gal``,
    ``("3S",)``), by the grammar's own residue pattern; a name it does not split stays whole.
    The glycan features of label issues count cores and modifications apart."""
    m = _RESIDUE.fullmatch(name)
    if m is None:
        return name, ()
    return m["core"], tuple(u.group(0) for u in _MOD_UNIT.finditer(m["mods"] or ""))
