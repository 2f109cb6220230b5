"""What a dataset card's YAML metadata may say: the Hub's licence ids, ISO 639 language codes,
size categories, and :class:`CardInfo`, the card's words besides the data.

Why checked at export and not left to the Hub: a card the Hub rejects is found only after the
upload; ``curate export --license`` refuses an id the Hub does not know, with the list.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

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


#: ``size_categories`` buckets, exactly the Hub's labels (``datasets``' size_categories.json):
#: the label applies to ``n < bound``. ``n>1T`` takes everything from 10**12 on.
SIZE_BUCKETS: tuple[tuple[int, str], ...] = (
    (10**3, "n<1K"),
    (10**4, "1K<n<10K"),
    (10**5, "10K<n<100K"),
    (10**6, "100K<n<1M"),
    (10**7, "1M<n<10M"),
    (10**8, "10M<n<100M"),
    (10**9, "100M<n<1B"),
    (10**10, "1B<n<10B"),
    (10**11, "10B<n<100B"),
    (10**12, "100B<n<1T"),
)


def size_category(n: int) -> str:
    """The Hub's ``size_categories`` bucket for ``n`` rows (10**k rows open the next bucket)."""
    for bound, label in SIZE_BUCKETS:
        if n < bound:
            return label
    return "n>1T"


@dataclass
class CardInfo:
    """What the dataset card says besides the data itself."""

    pretty_name: str
    license: str = "unknown"
    task_categories: Sequence[str] = ()
    description: str = ""
    source_files: Sequence[str] = ()
    extra_sections: list[str] = field(default_factory=list)
    tags: Sequence[str] = ()
    language: Sequence[str] = ()
    #: The Hub's ``source_datasets`` (e.g. ``original``, ``extended|squad``, a repo id).
    source_datasets: Sequence[str] = ()
    #: What curate did to produce the folder, in order, as the footer says it ("audited",
    #: "fixed", "exported"): only steps that really happened.
    steps: Sequence[str] = ("exported",)
