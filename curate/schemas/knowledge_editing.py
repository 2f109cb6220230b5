"""MQuAKE-style multi-hop knowledge-editing cases, in both layouts seen in the wild.

* **Original** (princeton-nlp/MQuAKE JSON, also MQuAKE-hard): ``requested_rewrite[].target_new``
  is an object ``{str, id}`` and the fact chains live under ``orig{...}``.
* **Remastered** (the flattened MQuAKE-Remastered parquet): ``requested_rewrite[]`` carries
  ``target_new_str``/``target_new_id``/``target_true_str``/``target_true_id``, the chains are
  top-level (``orig_triples``, ``orig_triples_labeled``, ``new_triples``, ...) and ``split`` maps an
  edit count (``"100"``, ``"1000"``, ...) to the case's labels in that evaluation (``edited``...).

Both validate into :class:`MQuAKECase`, the one internal form the rules read. Types are strict
(no silent int→str coercion): a benchmark whose answer is a number where a string belongs is broken,
and saying so beats guessing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from annotated_types import Len
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from curate.options import FamilyOptions, option

NonEmpty = Annotated[str, StringConstraints(min_length=1)]
Triple = Annotated[list[NonEmpty], Len(3, 3)]


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)


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
    edit_triples_idx: list[int]


class WithheldEdit(_Model):
    """An edit of another case to leave out when asking this one (written by ``curate fix``:
    MQuAKE-Remastered's protocol for a contaminated case)."""

    case_id: int | NonEmpty
    edit_index: int
    triple: Triple


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
    """A case in the flattened MQuAKE-Remastered layout."""

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
    edit_triples_idx: list[int] | None = None
    split: dict[str, list[str]] | None = None

    @field_validator("split", mode="before")
    @classmethod
    def _split_from_arrow(cls, v: Any) -> Any:
        # Arrow maps arrive as [(key, value), ...]; structs as dicts with nulls for absent keys.
        if isinstance(v, list) and all(isinstance(x, tuple | list) and len(x) == 2 for x in v):
            v = {str(k): val for k, val in v}
        if isinstance(v, dict):
            v = {str(k): val for k, val in v.items() if val is not None}
        return v

    def to_case(self) -> MQuAKECase:
        """Map to the internal form.

        Where the flat layout omits ``edit_triples``, they are rebuilt from the edits and the
        new chain: the edit of ``requested_rewrite[k]`` is the hop of ``new_triples`` whose
        subject label and relation match it (MQuAKE's own construction).
        """
        edit_triples = self.edit_triples
        edit_idx = self.edit_triples_idx
        if edit_triples is None or edit_idx is None:
            edit_triples, edit_idx = [], []
            for rw in self.requested_rewrite:
                for i, (lab, ids) in enumerate(
                    zip(self.new_triples_labeled, self.new_triples, strict=False)
                ):
                    if lab[0] == rw.subject and ids[1] == rw.relation_id:
                        edit_triples.append(list(ids))
                        edit_idx.append(i)
                        break
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
                )
            )
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
            orig=Orig(
                triples=self.orig_triples,
                triples_labeled=self.orig_triples_labeled,
                new_triples=self.new_triples,
                new_triples_labeled=self.new_triples_labeled,
                edit_triples=edit_triples,
                edit_triples_idx=edit_idx,
            ),
            split=self.split,
        )


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

    @field_validator("edit_set")
    @classmethod
    def _spec(cls, v: str) -> str:
        v = v.strip()
        if not _EDIT_SET.match(v):
            raise ValueError(f"bad edit set {v!r}: use all, random:K[:SEED], ids:FILE or split:N")
        return v

    def input_files(self) -> list[Path]:
        return [Path(self.edit_set[4:])] if self.edit_set.startswith("ids:") else []
