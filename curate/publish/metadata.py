"""What a dataset card's YAML metadata may say: the Hub's licence ids, ISO 639 language codes,
size categories, and :class:`CardInfo`, the card's words besides the data.

Why checked at export and not left to the Hub: a card the Hub rejects is found only after the
upload; ``curate export --license`` refuses an id the Hub does not know, with the list.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from curate.core.errors import UsageError, arg

#: No row limit by default: shards are cut by size; ``--max-rows-per-shard`` adds one.
DEFAULT_MAX_ROWS_PER_SHARD: int | None = None


SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")


#: The curate project's README, named in every card's footer. A path, not a link: curate has no
#: public URL yet, and a relative link in a card would resolve against the dataset's own repo.
PROJECT_README = "README.md in curate's source tree"


@cache
def hub_licenses() -> dict[str, str]:
    """The Hub's licence identifiers (identifier → full name), in the Hub's order.

    Neither ``huggingface_hub`` nor ``datasets`` ships the list; ``curate/data/hub_licenses.json``
    is a dated copy of the table on https://huggingface.co/docs/hub/repositories-licenses (its
    ``commit`` and ``date`` keys name the huggingface/hub-docs commit it was copied from),
    refreshed by ``scripts/make_hub_licenses.py``.
    """
    text = resources.files("curate").joinpath("data/hub_licenses.json").read_text("utf-8")
    return dict(json.loads(text)["licenses"])


def check_license(license: str) -> str:
    """The Hub identifier for ``license`` (case-insensitive), or UsageError listing them all.

    Why refuse: the Hub accepts any text in ``license:`` but then shows no licence and offers no
    filter on it; a typo (``cc-by-4``) silently publishes a dataset as unlicensed.
    """
    known = hub_licenses()
    wanted = license.strip().lower()
    if wanted in known:
        return wanted
    close = difflib.get_close_matches(wanted, list(known), n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    raise UsageError(
        f"{arg('--license', license, quoted=True)} is not a Hub licence identifier{hint}; "
        "use one of: "
        + ", ".join(known)
        + " (https://huggingface.co/docs/hub/repositories-licenses)"
    )


@cache
def hub_tasks() -> dict[str, str]:
    """The Hub's task categories (id → name), from ``curate/data/hub_tasks.json``: a dated copy
    of huggingface.js' ``PIPELINE_DATA`` (its ``commit`` and ``date`` keys say which),
    refreshed by ``scripts/make_hub_tasks.py``; no installed library ships the list."""
    text = resources.files("curate").joinpath("data/hub_tasks.json").read_text("utf-8")
    return dict(json.loads(text)["tasks"])


def check_source_dataset(value: str) -> str:
    """``value`` if it is a ``source_datasets`` entry the Hub's card spec allows: ``original``,
    ``extended``, ``extended|ID`` or a dataset id (``OWNER/NAME``, or a legacy ``NAME`` such
    as ``squad``: checked as ``huggingface_hub`` checks repo ids); else exit 2. ``Original``
    is written ``original``.

    Why refuse: the Hub takes any text there, and ``not a valid thing!!`` then links to
    nothing and filters nothing."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    text = value.strip()
    if text.lower() in ("original", "extended"):
        return text.lower()
    if text.lower().startswith("extended|"):
        text = "extended|" + text[len("extended|") :]
    repo = text.removeprefix("extended|")
    try:
        validate_repo_id(repo)
    except HFValidationError:
        raise UsageError(
            f"{arg('--source-dataset', value, quoted=True)} is not a source dataset the Hub "
            "knows: original, extended, extended|ID, or a dataset ID (OWNER/NAME, or a legacy "
            "NAME such as squad)"
        ) from None
    return text


@dataclass(frozen=True)
class CardChoices:
    """What the user said of a card (``--license``, ``--language``, ``--source-dataset``,
    ``--tag``, ``--citation``, ``--date-published``), each value checked.

    Why one object: ``fix`` and ``export`` take the same card options and must refuse a typo in
    any of them before the long work, with the same words; they differ only in what else the
    card says."""

    license: str | None = None
    language: tuple[str, ...] = ()
    source_datasets: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    citation: str = ""
    date_published: str | None = None

    @classmethod
    def checked(
        cls,
        *,
        license: str | None = None,
        language: Sequence[str] | None = None,
        source_datasets: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        citation: str | None = None,
        date_published: str | date | None = None,
    ) -> CardChoices:
        """The choices checked (exit 2 naming the first bad one); None: not given."""
        return cls(
            license=check_license(license) if license is not None else None,
            language=tuple(check_language(c) for c in language or ()),
            source_datasets=tuple(check_source_dataset(s) for s in source_datasets or ()),
            tags=tuple(check_tag(t) for t in tags or ()),
            citation=check_citation(citation) if citation is not None else "",
            date_published=(
                check_date_published(date_published) if date_published is not None else None
            ),
        )

    def card_fields(self, *, license: str, language: Sequence[str]) -> dict[str, Any]:
        """The :class:`CardInfo` fields these choices fill, the family's ``license`` and
        ``language`` where the user said none."""
        return {
            "license": self.license or license,
            "language": self.language or tuple(language),
            "source_datasets": self.source_datasets,
            "tags": self.tags,
            "citation": self.citation,
            "date_published": self.date_published,
        }


def check_tag(value: str) -> str:
    """A card tag, stripped; a blank one exits 2 (the Hub would list an empty tag)."""
    text = value.strip()
    if not text:
        raise UsageError(f"{arg('--tag', value, quoted=True)} is empty")
    return text


def check_citation(value: str) -> str:
    """``value`` stripped, refused (exit 2) when blank: an empty ``--citation`` is a mistake,
    not a wish for an empty Citation section."""
    text = value.strip()
    if not text:
        raise UsageError(f"{arg('--citation', value, quoted=True)} is empty")
    return text


def check_date_published(value: str | date) -> str:
    """An ISO 8601 calendar date (``2024-05-17``) as text; anything else exits 2.

    Why only a date, no time: Croissant's ``datePublished`` is schema.org's Date or DateTime,
    and a publication is dated by its day; mlcroissant parses both, the Hub shows the day."""
    if isinstance(value, date):
        return value.isoformat()
    text = value.strip()
    try:  # YYYY-MM-DD exactly: fromisoformat alone also takes 20230524 and 2023-W21-3
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            raise ValueError(text)
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise UsageError(
            f"{arg('--date-published', value, quoted=True)} is not a day as YYYY-MM-DD (no time)"
        ) from None


@cache
def _language_codes() -> frozenset[str]:
    """ISO 639-1/2/3 codes and the Hub's special values, from ``datasets``' own resource file."""
    try:
        text = resources.files("datasets.utils.resources").joinpath("languages.json").read_text()
        return frozenset(json.loads(text))
    except (OSError, ModuleNotFoundError, ValueError):  # a datasets without the file: no check
        return frozenset()


def check_language(code: str) -> str:
    """``code`` if the Hub knows it as a language (``en``, ``fra``, ``code``, ...), else exit 2."""
    codes = _language_codes()
    value = code.strip()
    if not codes or value in codes:
        return value
    if value.lower() in codes:
        return value.lower()
    raise UsageError(
        f"{arg('--language', code, quoted=True)} is not an ISO 639-1, 639-2 or 639-3 code the "
        "Hub knows (e.g. en, de, fra, or 'code', 'multilingual'); see datasets' languages.json"
    )


@cache
def size_categories() -> tuple[str, ...]:
    """The Hub's ``size_categories`` values, from ``datasets``' resource file."""
    text = resources.files("datasets.utils.resources").joinpath("size_categories.json")
    return tuple(json.loads(text.read_text("utf-8")))


_SCALE = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}


@cache
def size_buckets() -> tuple[tuple[int, str], ...]:
    """``(bound, label)`` of each ``n<BOUND`` label of :func:`size_categories`, in order: the
    label applies to ``n < bound``; the ``n>...`` label takes the rest.

    Read from the labels themselves (``1K<n<10K``: bound 10,000), not typed out again: the
    file ``datasets`` ships is the one list the Hub's validation and curate then share."""
    out = []
    for label in size_categories():
        if "n<" in label:
            m = re.fullmatch(r"(?:[0-9]+[KMBT]?<)?n<([0-9]+)([KMBT]?)", label)
            if m is None:
                raise ValueError(f"unexpected size category {label!r} in datasets")
            out.append((int(m[1]) * _SCALE[m[2]], label))
    return tuple(sorted(out))


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` bucket for ``n`` rows (10**k rows open the next bucket)."""
    for bound, label in size_buckets():
        if n < bound:
            return label
    return next(label for label in size_categories() if label.startswith("n>"))


def named_from(path: str, folder: str | Path | None) -> str:
    """``path`` as a card written in ``folder`` names it: a local file relative to the card
    (``../data/cases.json``), anything else as given (``hf://...``, standard input, a table
    in memory: ``<polars DataFrame>``, which read ``../<polars DataFrame>``).

    Why: an absolute path (``/home/me/...``) means nothing to a reader of the Hub and tells
    them about the machine the remaster was made on; relative to the card, it still says
    where the input sat beside the published folder."""
    if folder is None or not path or path == "-" or "://" in path or path.startswith("hf:"):
        return path
    if path.startswith("<") and path.endswith(">"):  # a table in memory: no file to point to
        return path
    try:
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(folder))
    except ValueError:  # another drive
        return path
    return Path(rel).as_posix()


@dataclass
class CardInfo:
    """What the dataset card says besides the data itself."""

    pretty_name: str
    license: str = "unknown"
    task_categories: Sequence[str] = ()
    description: str = ""
    source_files: Sequence[str] = ()
    #: The folder the card is written to (its final place, not a staging folder): the audit
    #: summary names local inputs relative to it (:func:`named_from`).
    folder: str | None = None
    extra_sections: list[str] = field(default_factory=list)
    tags: Sequence[str] = ()
    language: Sequence[str] = ()
    #: The Hub's ``source_datasets`` (e.g. ``original``, ``extended|squad``, a repo id).
    source_datasets: Sequence[str] = ()
    #: How to cite the data (BibTeX or a sentence): the card's Citation section and
    #: Croissant's ``citeAs``. Empty: not known, and neither is written.
    citation: str = ""
    #: When the data was published (ISO 8601 date): Croissant's ``datePublished``. None: not
    #: known. Never the day of the export: an export of the same input must stay the same bytes.
    date_published: str | None = None
    #: What curate did to produce the folder, in order, as the footer says it ("audited",
    #: "fixed", "exported"): only steps that really happened.
    steps: Sequence[str] = ("exported",)
