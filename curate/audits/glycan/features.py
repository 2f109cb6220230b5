"""Features of a glycan for the built-in label model, read from its parsed structure.

Confident learning needs out-of-sample predicted probabilities, and the probabilities are only
as good as the features. A glycan's taxonomic origin is written in its structure: plants carry
core ``Xyl(b1-2)`` and ``Fuc(a1-3)``, animals sialic acids on ``Gal(b1-4)GlcNAc`` antennae,
bacteria residues nobody else makes (``Kdo``, ``Rha``, ``LDManHep``). Counting characters of the
string would mix a residue's name with its neighbours'; the parsed tree
(:func:`curate.schemas.iupac.parse`) gives the units biologists read:

* ``r:`` residue counts (the normalized name, so ``L-Fuc`` and ``Fuc`` are one token), ``c:``
  the residue's core without its modifications, ``m:`` each modification (``6S``, ``OMe``,
  ``NAc``) and ``s:`` the floating substituent blocks (``{6P}``);
* ``l:`` linkage tokens ``child(link)parent`` (the glycosidic bond with both residues) and
  ``b:`` the bare linkage (``a2-6``; a bond written without its anomer, ``(1-3)``, is
  ``?1-3``);
* ``p3:`` motif-like substructures: every child-parent-grandparent path along the tree, with
  its linkages (``Gal(b1-4)GlcNAc(b1-2)Man``), and ``p3c:`` the same path without them (a
  motif whose linkages are partly unknown still matches); the pairs are the ``l:`` tokens;
* ``t:`` terminal (non-reducing end) residues with their linkage, ``root:`` the reducing end;
* branching: ``n:branch_points``, ``n:depth`` (longest root-to-leaf path), ``n:leaves``,
  ``n:residues``, ``n:floating`` — counts, dampened below.

Counts are dampened with ``log1p`` (a polymer repeating ``Xyl(b1-4)`` forty times is not forty
times more xylan-like) and hashed by scikit-learn's :class:`~sklearn.feature_extraction.
FeatureHasher` into a fixed-width sparse matrix: no vocabulary to fit, so the folds of a
cross-validation see the same columns and an unseen token costs nothing.

A sequence that does not parse (a malformed record, which other rules report) still needs a
row: it falls back to hashed character 2-4-grams of its text (scikit-learn's
:class:`~sklearn.feature_extraction.text.HashingVectorizer`, ``analyzer="char"``), in a block of
columns of its own so that these rows never share columns with the structural tokens.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from curate.schemas.iupac import Glycan, IUPACError, residue_parts, try_parse

__all__ = ["N_FEATURES", "glycan_features", "glycan_tokens"]

#: Hashed columns of the structural block (and of the character fallback block).
N_FEATURES = 1 << 18

#: Characters of an unparseable sequence its character n-grams are read from. The longest real
#: glycan (glycowork, GlycanML) is under 700 characters; a megabyte cell (a concatenation, a
#: corrupt export) gave three million n-grams per scored level, once per taxonomy level: 16 s of
#: a 61-row export spent on a record that is left out as invalid anyway.
FALLBACK_CHARS = 4096

#: ``log1p`` of the small counts almost every token has, numpy's own values: numpy's ufunc on
#: one Python number per token cost a third of building the features.
_LOG1P = [float(x) for x in np.log1p(np.arange(256, dtype=np.float64))]


def _log1p(n: int) -> float:
    return _LOG1P[n] if 0 <= n < 256 else float(np.log1p(n))


def _link_text(link: Any) -> str:
    """The bond as one token (``b1-4``, ``a2-3/6``), independent of how it was written."""
    return f"{link.anomer}{link.child_position}-{'/'.join(link.parent_positions)}"


def glycan_tokens(g: Glycan) -> Counter[str]:
    """The structural tokens of one parsed glycan, counted (see the module docstring)."""
    out: Counter[str] = Counter()
    names = [r.normalized for r in g.residues]
    parent: dict[int, int | None] = {}
    bond: dict[int, str] = {}
    kids: dict[int, list[int]] = {}
    for link in g.linkages:
        parent[link.child] = link.parent
        bond[link.child] = _link_text(link)
        if link.parent is not None:
            kids.setdefault(link.parent, []).append(link.child)
    for i, name in enumerate(names):
        out["r:" + name] += 1
        core, mods = residue_parts(name)
        if core != name:
            out["c:" + core] += 1
        for m in mods:
            out["m:" + m] += 1
        if i not in kids:
            out[f"t:{name}({bond.get(i, '')})"] += 1
        p = parent.get(i)
        if p is None:
            continue
        b = bond[i]
        out["b:" + b] += 1
        pair = f"{name}({b}){names[p]}"
        out["l:" + pair] += 1
        gp = parent.get(p)
        if gp is not None:
            out[f"p3:{pair}({bond[p]}){names[gp]}"] += 1
            out[f"p3c:{name}-{names[p]}-{names[gp]}"] += 1
    for s in g.substituents:
        out["s:" + s] += 1
    out["root:" + names[g.root]] += 1
    # depth by the bottom-up order: children are always written before their parent
    depth = [1] * len(names)
    for i in range(len(names)):
        p = parent.get(i)
        if p is not None:
            depth[p] = max(depth[p], depth[i] + 1)
    out["n:residues"] = len(names)
    out["n:leaves"] = sum(1 for i in range(len(names)) if i not in kids)
    out["n:branch_points"] = sum(1 for v in kids.values() if len(v) > 1)
    out["n:depth"] = depth[g.root]
    out["n:floating"] = len(g.floating)
    return out


def glycan_features(
    sequences: Sequence[str | None] | Iterable[str | None], *, compact: bool = True
) -> Any:
    """A scipy CSR matrix, one row per sequence: hashed, ``log1p``-dampened structural tokens
    for the sequences that parse, hashed character 2-4-grams of the first
    :data:`FALLBACK_CHARS` for those that do not (and for a null, an empty row). Width
    ``2 * N_FEATURES``: the structural block, then the fallback's; with ``compact`` (the
    default) only the columns these rows use, in that order (the model is fitted on these rows
    only, so a column no row uses is a coefficient for nothing)."""
    import scipy.sparse as sp
    from sklearn.feature_extraction import FeatureHasher
    from sklearn.feature_extraction.text import HashingVectorizer

    seqs = ["" if s is None else str(s) for s in sequences]
    tokens: list[dict[str, float]] = []
    fallback: list[str] = []
    # a glycan repeated across records (one per species it was found in: a third of the rows
    # of glycowork's species table) is parsed and counted once
    seen: dict[str, dict[str, float] | None] = {}
    for s in seqs:
        if s not in seen:
            g = try_parse(s) if s else None
            assert g is None or isinstance(g, (Glycan, IUPACError))
            seen[s] = (
                {k: _log1p(v) for k, v in glycan_tokens(g).items()}
                if isinstance(g, Glycan)
                else None
            )
        counted = seen[s]
        tokens.append({} if counted is None else counted)
        fallback.append(s[:FALLBACK_CHARS] if counted is None else "")
    structural = FeatureHasher(
        n_features=N_FEATURES, input_type="dict", alternate_sign=False
    ).transform(tokens)
    chars = HashingVectorizer(
        analyzer="char",
        ngram_range=(2, 4),
        n_features=N_FEATURES,
        alternate_sign=False,
        norm=None,
        lowercase=False,
    ).transform(fallback)
    chars.data = np.log1p(chars.data)
    out = sp.hstack([structural, chars], format="csr")
    if compact:
        # only the columns some row uses: the solver's cost grows with the coefficients
        out = out[:, np.flatnonzero(out.getnnz(axis=0))]
    return out
