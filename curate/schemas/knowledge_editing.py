"""MQuAKE-style multi-hop knowledge-editing cases, in both layouts seen in the wild.

* **Original** (princeton-nlp/MQuAKE JSON, also MQuAKE-hard): ``requested_rewrite[].target_new``
  is an object ``{str, id}`` and the fact chains live under ``orig{...}``.
* **Remastered** (the flattened MQuAKE-Remastered release, Hugging Face
  ``henryzhongsc/MQuAKE-Remastered``, splits ``CF3k``, ``CF9k``, ``CF6334`` and ``T``):
  ``requested_rewrite[]`` carries ``target_new_str``/``target_new_id``/``target_true_str``/
  ``target_true_id`` (and ``question``), the chains are top-level (``orig_triples``,
  ``orig_triples_labeled``, ``new_triples``, ``new_triples_labeled``, ``edit_triples``) and
  ``split`` is a struct mapping an edit count (``"100"``, ``"1000"``, ``"6334"``...) to the case's
  labels in that evaluation (``edited``; in CF6334 ``train_edited``, ``test_edited``,
  ``test_edited_unique``, ``test_unedited``). The release's own loader reads exactly these
  names (``d['split'][str(edit_num)]``, ``edit['target_new_str']``,
  ``problem_case['new_triples_labeled']``).

Both validate into :class:`MQuAKECase`, the one internal form the rules read. Types are strict
(no silent int→str coercion): a benchmark whose answer is a number where a string belongs is broken,
and saying so beats guessing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from annotated_types import Ge, Le, Len
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from curate.core.options import FamilyOptions, option

NonEmpty = Annotated[str, StringConstraints(min_length=1)]
#: An index into a chain. Bounded to 64 bits because the tables (and any parquet export) store
#: it as one: a larger number is a schema finding on its record, not a crash while loading.
Index = Annotated[int, Ge(-(2**63)), Le(2**63 - 1)]
Triple = Annotated[list[NonEmpty], Len(3, 3)]


class _Model(BaseModel):
    model_config: ClassVar[ConfigDict] = ConfigDict(
        strict=True, extra="allow", populate_by_name=True
    )


class Target(_Model):
    """An entity as text plus its Wikidata id (``Q...``)."""

    text: NonEmpty = Field(alias="str")
    id: NonEmpty | None = None


class Rewrite(_Model):
    """One requested edit: ``prompt.format(subject)`` should now complete to ``target_new``."""

    prompt: NonEmpty
    subject: NonEmpty
    relation_id: NonEmpty
    target_new: Target
    target_true: Target
    question: str | None = None


class SingleHop(_Model):
    """One hop of the chain asked on its own (used for per-hop accuracy)."""

    question: NonEmpty
    cloze: str | None = None
    answer: NonEmpty
    answer_alias: list[str] = Field(default_factory=list)


class Orig(_Model):
    """The fact chains: ids (``triples``) and labels (``triples_labeled``), before and after."""

    triples: list[Triple]
    triples_labeled: list[Triple]
    new_triples: list[Triple]
    new_triples_labeled: list[Triple]
    edit_triples: list[Triple]
    edit_triples_idx: list[Index]


class WithheldEdit(_Model):
    """An edit of another case to leave out when asking this one (written by ``curate fix``:
    MQuAKE-Remastered's protocol for a contaminated case)."""

    case_id: int | NonEmpty
    edit_index: Index
    triple: Triple


def _split_map(cls: Any, v: Any) -> Any:
    """The Remastered ``split`` as Arrow hands it over: a map arrives as ``[(key, value), ...]``,
    a struct as a dict with nulls for the keys a case (or a whole split: one schema serves
    every split of a dataset) does not have. Either layout may carry it."""
    if isinstance(v, list) and all(isinstance(x, tuple | list) and len(x) == 2 for x in v):
        v = {str(k): val for k, val in v}
    if isinstance(v, dict):
        v = {str(k): val for k, val in v.items() if val is not None}
    return v


class MQuAKECase(_Model):
    """A multi-hop knowledge-editing case (the internal form of both layouts)."""

    case_id: int | NonEmpty
    requested_rewrite: Annotated[list[Rewrite], Len(1)]
    questions: list[str]
    answer: NonEmpty
    answer_alias: list[str]
    new_answer: NonEmpty
    new_answer_alias: list[str]
    single_hops: list[SingleHop]
    new_single_hops: list[SingleHop]
    orig: Orig
    answer_extended: list[str] | None = None
    #: Remastered layout only: edit count → labels of this case in that evaluation.
    split: dict[str, list[str]] | None = None
    #: Written by ``curate fix``: is the case in the edit set the data was fixed for, and which
    #: edits of other cases contaminate it (left out when it is asked). The audit honours both.
    edited: bool | None = None
    withheld_edits: list[WithheldEdit] | None = None

    _split_from_arrow = field_validator("split", mode="before")(_split_map)

    def to_original(self) -> dict[str, Any]:
        """The record in the original nested layout (extra fields kept)."""
        out = self.model_dump(by_alias=True, exclude_none=True)
        return out


class FlatRewrite(_Model):
    prompt: NonEmpty
    subject: NonEmpty
    relation_id: NonEmpty
    target_new_str: NonEmpty
    target_new_id: NonEmpty | None = None
    target_true_str: NonEmpty
    target_true_id: NonEmpty | None = None
    question: str | None = None


class RemasteredCase(_Model):
    """A case in the flattened MQuAKE-Remastered layout.

    ``answer_extended``, ``edited`` and ``withheld_edits`` are typed here as in
    :class:`MQuAKECase` (a fixed Remastered dataset carries ``curate fix``'s marks in its own
    layout); every other field beyond the model is kept as it was read (``extra="allow"``).
    """

    case_id: int | NonEmpty
    requested_rewrite: Annotated[list[FlatRewrite], Len(1)]
    questions: list[str]
    answer: NonEmpty
    answer_alias: list[str]
    new_answer: NonEmpty
    new_answer_alias: list[str]
    single_hops: list[SingleHop]
    new_single_hops: list[SingleHop]
    orig_triples: list[Triple]
    orig_triples_labeled: list[Triple]
    new_triples: list[Triple]
    new_triples_labeled: list[Triple]
    edit_triples: list[Triple] | None = None
    edit_triples_idx: list[Index] | None = None
    split: dict[str, list[str]] | None = None
    answer_extended: list[str] | None = None
    edited: bool | None = None
    withheld_edits: list[WithheldEdit] | None = None

    _split_from_arrow = field_validator("split", mode="before")(_split_map)

    def to_case(self) -> MQuAKECase:
        """Map to the internal form (values unchanged, fields beyond the model kept).

        The flat layout may omit ``edit_triples_idx`` (the release does) and ``edit_triples``.
        Omitted indexes are rebuilt: edit k's hop is the hop of ``new_triples`` equal to its
        ``edit_triples[k]``, else the hop whose subject label and relation match
        ``requested_rewrite[k]`` (MQuAKE's own construction; an edit triple then differs from
        its hop and KE104 says so, rather than the triple being silently replaced). Omitted edit
        triples are those hops. Rebuilt lists are left out of ``orig.model_fields_set``, so a
        writer of this layout can tell what the record carried from what was derived
        (:func:`~curate.schemas.knowledge_editing_tables.remastered_batch` writes the former).
        """
        edit_triples = self.edit_triples
        edit_idx = self.edit_triples_idx
        if edit_idx is None:
            rebuilt_triples = edit_triples is None
            edit_idx, rebuilt = [], []
            for k, rw in enumerate(self.requested_rewrite):
                given = (
                    edit_triples[k] if edit_triples is not None and k < len(edit_triples) else None
                )
                hop = next((i for i, t in enumerate(self.new_triples) if t == given), None)
                if hop is None:
                    hop = next(
                        (
                            i
                            for i, (lab, ids) in enumerate(
                                zip(self.new_triples_labeled, self.new_triples, strict=False)
                            )
                            if lab[0] == rw.subject and ids[1] == rw.relation_id
                        ),
                        None,
                    )
                if hop is None:
                    continue
                edit_idx.append(hop)
                rebuilt.append(list(self.new_triples[hop]))
            if rebuilt_triples:
                edit_triples = rebuilt
        elif edit_triples is None:  # indexes without triples: the hops they point at
            rebuilt_triples = True
            edit_triples = [
                list(self.new_triples[i]) for i in edit_idx if 0 <= i < len(self.new_triples)
            ]
        else:
            rebuilt_triples = False
        assert edit_triples is not None  # rebuilt above when the record had none
        rewrites = []
        for k, rw in enumerate(self.requested_rewrite):
            new_id = rw.target_new_id
            if new_id is None and k < len(edit_triples):
                new_id = edit_triples[k][2]
            rewrites.append(
                Rewrite(
                    prompt=rw.prompt,
                    subject=rw.subject,
                    relation_id=rw.relation_id,
                    target_new=Target(text=rw.target_new_str, id=new_id),
                    target_true=Target(text=rw.target_true_str, id=rw.target_true_id),
                    question=rw.question,
                    **_extras(rw, Rewrite),
                )
            )
        orig = Orig(
            triples=self.orig_triples,
            triples_labeled=self.orig_triples_labeled,
            new_triples=self.new_triples,
            new_triples_labeled=self.new_triples_labeled,
            edit_triples=edit_triples,
            edit_triples_idx=edit_idx,
        )
        if rebuilt_triples:
            orig.__pydantic_fields_set__.discard("edit_triples")
        if self.edit_triples_idx is None:
            orig.__pydantic_fields_set__.discard("edit_triples_idx")
        return MQuAKECase(
            case_id=self.case_id,
            requested_rewrite=rewrites,
            questions=self.questions,
            answer=self.answer,
            answer_alias=self.answer_alias,
            new_answer=self.new_answer,
            new_answer_alias=self.new_answer_alias,
            single_hops=self.single_hops,
            new_single_hops=self.new_single_hops,
            orig=orig,
            answer_extended=self.answer_extended,
            split=self.split,
            edited=self.edited,
            withheld_edits=self.withheld_edits,
            **_extras(self, MQuAKECase),
        )


def _extras(flat: BaseModel, target: type[BaseModel]) -> dict[str, Any]:
    """``flat``'s fields beyond its model, for ``target``: kept, not dropped, by the mapping
    (one whose name ``target`` declares cannot be passed on and stays out)."""
    extra = flat.__pydantic_extra__
    if not extra:
        return {}
    taken = {x for n, f in target.model_fields.items() for x in (n, f.alias) if x}
    return {k: v for k, v in extra.items() if k not in taken}


def layout_of(record: dict[str, Any]) -> str | None:
    """``original``, ``remastered`` or None (neither: the record cannot be read as a case)."""
    if "orig" in record:
        return "original"
    if "orig_triples" in record or "new_triples" in record:
        return "remastered"
    rr = record.get("requested_rewrite")
    if isinstance(rr, list) and rr and isinstance(rr[0], dict) and "target_new_str" in rr[0]:
        return "remastered"
    if isinstance(rr, list) and rr and isinstance(rr[0], dict) and "target_new" in rr[0]:
        return "original"
    return None


def record_id(record: dict[str, Any], index: int) -> str:
    """The id findings use: ``case_id`` when it is a usable scalar, else ``#<index>``."""
    cid = record.get("case_id")
    if isinstance(cid, int | str) and not isinstance(cid, bool) and str(cid) != "":
        return str(cid)
    return f"#{index}"


# --------------------------------------------------------------------------- options

_EDIT_SET = re.compile(r"^(all|random:\d+(:\d*)?|ids:.+|split:.+)$")


class KEOptions(FamilyOptions):
    """Options of the knowledge-editing family."""

    edit_set: str = option(
        "all",
        help="Cases edited together: all (default) | random:K[:SEED] (exactly random.seed(SEED); "
        "random.sample(case ids in file order, K), SEED 100) | ids:FILE | split:N (the Remastered "
        "split column's labels for N edits).",
        commands=("audit", "fix", "export"),
    )
    layout: Literal["original", "remastered"] | None = option(
        None,
        help="Layout of the written cases: original (nested: orig{...}, target_new/target_true "
        "objects) | remastered (MQuAKE-Remastered's flat columns: target_new_str/target_true_str, "
        "orig_triples, new_triples, *_labeled, edit_triples, split). Default: the input's own. "
        "An original-layout case becomes remastered only if it carries the Remastered `split` "
        "labels, which cannot be derived from it (exit 2 names the cases without).",
        commands=("fix", "export"),
    )

    workers: int | None = option(
        None,
        help="Threads parsing and checking the input's batches in parallel (default: the "
        "available cores, at most 8). Results do not depend on it.",
    )

    @field_validator("edit_set")
    @classmethod
    def _spec(cls, v: str) -> str:
        v = v.strip()
        if not _EDIT_SET.match(v):
            raise ValueError(f"bad edit set {v!r}: use all, random:K[:SEED], ids:FILE or split:N")
        return v

    def input_files(self) -> list[Path]:
        return [Path(self.edit_set[4:])] if self.edit_set.startswith("ids:") else []
