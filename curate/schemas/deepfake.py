"""Deepfake-detection manifests: one row per sample (audio, image, video), label, provenance.

The schema follows what the large audio-visual deepfake sets publish (ILLUSION: sets A–D,
subject-disjoint splits, 28 generators, 26 languages, balanced sex × skin-tone subgroups;
FakeAVCeleb's ``RA-RV`` … ``FA-FV`` audio-visual labels). A manifest is a CSV, JSON Lines or
parquet file (or a Hugging Face folder of them); its column names rarely match, so every field
can be mapped with ``--column FIELD=SOURCE`` and fields a manifest does not carry at all (a
corpus of real audio has no ``label`` column) can be given one value for every row with
``--value FIELD=VALUE``.

Closed vocabularies are enums (modality, label, the four audio-visual labels); where reality is
open (manipulation techniques, generators, skin-tone scales) the field is free text and the
known values are only documented, so that a new technique is never a schema error.

Language codes are checked against ISO 639 (parts 1, 2/T, 2/B, 3 and the 639-5 families) from
``pycountry``, which ships Debian's ``iso-codes`` tables and follows their releases.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

from curate.core.errors import InputError, arg
from curate.core.options import LabelIssueOptions, key_values, option
from curate.schemas.splits import SPLIT_NAMES as COMMON_SPLIT_NAMES


class Modality(StrEnum):
    AUDIO = "audio"
    IMAGE = "image"
    VIDEO = "video"


class Label(StrEnum):
    REAL = "real"
    FAKE = "fake"


class AvLabel(StrEnum):
    """Audio-visual label: real/fake audio (RA/FA) × real/fake visual (RV/FV)."""

    RA_RV = "RA-RV"
    RA_FV = "RA-FV"
    FA_RV = "FA-RV"
    FA_FV = "FA-FV"


#: Manipulation techniques the family knows (documentation and the ``--value`` help; the field
#: is open: ``other`` or any new name is accepted).
MANIPULATIONS = (
    "face_swap",
    "face_reenactment",
    "lip_sync",
    "voice_conversion",
    "tts",
    "t2i",
    "t2a",
    "t2v",
    "i2v",
    "synthetic_face",
    "inpainting",
    "attribute_editing",
    "in_the_wild",
    "other",
)

#: The fields of a manifest row, in published order.
FIELDS = (
    "sample_id",
    "path",
    "sha256",
    "set",
    "split",
    "modality",
    "label",
    "av_label",
    "generator",
    "manipulation",
    "source_dataset",
    "subject_id",
    "source_id",
    "target_id",
    "sex",
    "skin_tone",
    "language",
    "compression",
    "noise",
    "duration_s",
    "width",
    "height",
    "fps",
    "sample_rate",
)
#: Numeric fields and their type (the rest are text).
FLOAT_FIELDS = ("duration_s", "fps")
INT_FIELDS = ("width", "height", "sample_rate")
#: Text fields with few distinct values: held as categoricals in the normalised rows.
CATEGORICAL_FIELDS = (
    "set",
    "split",
    "modality",
    "label",
    "av_label",
    "generator",
    "manipulation",
    "source_dataset",
    "sex",
    "skin_tone",
    "language",
    "compression",
    "noise",
)
#: The identity fields compared across splits (subject-disjoint splits).
IDENTITY_FIELDS = ("subject_id", "source_id", "target_id")

#: Header spellings recognised without ``--column`` (lower-cased), per field.
ALIASES: dict[str, tuple[str, ...]] = {
    "sample_id": ("sample_id", "id", "sample", "uid", "file_id", "video_id", "clip_id"),
    "path": ("path", "file", "filepath", "file_path", "filename", "relative_path", "media_path"),
    "sha256": ("sha256", "hash", "content_hash", "checksum"),
    "set": ("set", "subset", "partition_set"),
    "split": ("split", "fold", "partition"),
    "modality": ("modality", "media_type", "type"),
    "label": ("label", "class", "is_fake", "target_label"),
    "av_label": ("av_label", "avlabel", "category"),
    "generator": ("generator", "method", "generation_method", "model", "technique"),
    "manipulation": ("manipulation", "manipulation_type", "attack_type"),
    "source_dataset": ("source_dataset", "dataset", "origin"),
    "subject_id": ("subject_id", "subject", "identity", "speaker_id", "speaker", "person_id"),
    "source_id": ("source_id",),
    "target_id": ("target_id",),
    "sex": ("sex", "gender"),
    "skin_tone": ("skin_tone", "skintone", "fitzpatrick", "monk_skin_tone"),
    "language": ("language", "lang", "language_code"),
    "compression": ("compression", "codec", "quality"),
    "noise": ("noise", "noise_type", "augmentation"),
    "duration_s": ("duration_s", "duration", "length_s", "seconds"),
    "width": ("width", "w"),
    "height": ("height", "h"),
    "fps": ("fps", "frame_rate", "framerate"),
    "sample_rate": ("sample_rate", "sr", "sampling_rate"),
}

#: Split spellings read as the three canonical splits (``--split-map`` adds or overrides).
SPLIT_NAMES = {**COMMON_SPLIT_NAMES, "eval": "test"}
#: Order of splits for leakage: a copy in a later split is the one a fix drops.
SPLIT_ORDER = ("train", "validation", "test")

#: Label spellings read as real/fake (``0``/``1`` as most detection sets write them:
#: 1 = fake, the positive class of a detector).
LABEL_NAMES = {
    "real": "real",
    "bonafide": "real",
    "bona-fide": "real",
    "bona fide": "real",
    "genuine": "real",
    "pristine": "real",
    "original": "real",
    "0": "real",
    "false": "real",
    "fake": "fake",
    "spoof": "fake",
    "synthetic": "fake",
    "manipulated": "fake",
    "deepfake": "fake",
    "1": "fake",
    "true": "fake",
}


# --------------------------------------------------------------------------- ISO 639


@cache
def iso639() -> dict[str, Any]:
    """The ISO 639 tables, from ``pycountry`` (the maintained packaging of Debian's
    ``iso-codes``): ``alpha2`` (639-1 code → its 639-3 code and English name), ``alpha3``
    (every 639-3 and 639-2/T code, and the 639-5 family codes 639-2 also lists, ``sla``),
    ``bibliographic`` (639-2/B → 639-3), ``names`` (lower-case English name → 639-1 code) and
    ``source`` (the package and version, for a finding's details)."""
    from importlib.metadata import version

    import pycountry

    langs = list(pycountry.languages)
    alpha2 = {
        lang.alpha_2: {"alpha_3": lang.alpha_3, "name": lang.name}
        for lang in langs
        if hasattr(lang, "alpha_2")
    }
    return {
        "source": f"pycountry {version('pycountry')} (ISO 639-3, 639-5; Debian iso-codes)",
        "alpha2": alpha2,
        "alpha3": frozenset(lang.alpha_3 for lang in langs)
        | frozenset(f.alpha_3 for f in pycountry.language_families),
        "bibliographic": {
            lang.bibliographic: lang.alpha_3 for lang in langs if hasattr(lang, "bibliographic")
        },
        "names": {v["name"].lower(): k for k, v in alpha2.items()},
    }


def language_status(value: str) -> tuple[bool, str | None]:
    """``(valid, suggestion)`` for a language value.

    Valid: an ISO 639-1 code (``en``), an ISO 639-2/T, 639-2/B or 639-3 code (``eng``, ``fre``,
    ``yue``), or a BCP 47 tag whose primary subtag is one (``en-US``, ``pt_BR``), all lower-case
    as the standard writes them. The suggestion, for an invalid value, is the code it most
    plausibly means: the lower-case spelling (``EN`` → ``en``) or the ISO 639-1 code of an
    English language name (``English`` → ``en``); None when there is none.
    """
    tables = iso639()
    v = value.strip()
    primary = v.replace("_", "-").split("-", 1)[0]
    if v == value and _known(primary, tables):
        return True, None
    low = primary.lower()
    if _known(low, tables):
        return False, v.replace("_", "-").split("-", 1)[0].lower() + (
            v.replace("_", "-")[len(primary) :]
        )
    by_name = tables["names"].get(v.lower())
    return False, by_name


def _known(code: str, tables: dict[str, Any]) -> bool:
    return code in tables["alpha2"] or code in tables["alpha3"] or code in tables["bibliographic"]


# --------------------------------------------------------------------------- the row model


def _blank_none(v: Any) -> Any:
    if isinstance(v, str):
        v = v.strip()
        return v or None
    return v


def _label(v: Any) -> Any:
    v = _blank_none(v)
    return LABEL_NAMES.get(v.lower(), v) if isinstance(v, str) else v


def _lower(v: Any) -> Any:
    v = _blank_none(v)
    return v.lower() if isinstance(v, str) else v


def _upper(v: Any) -> Any:
    v = _blank_none(v)
    return v.upper().replace("_", "-") if isinstance(v, str) else v


Text = Annotated[str | None, BeforeValidator(_blank_none)]


class DeepfakeRow(BaseModel):
    """One manifest row, as the rules read it (after ``--column`` mapping).

    Only ``sample_id`` is required: a corpus of real recordings has no generator, an image set
    no duration. ``label``, ``modality`` and ``av_label`` accept the usual spellings (``spoof``,
    ``bonafide``, ``0``/``1``, ``ra-rv``) and are read as the canonical value. Numbers must be
    non-negative (``width``/``height``/``sample_rate`` integers). The reader validates each
    distinct value of a field once against this model, so a million rows cost a few thousand
    validations.
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="ignore", strict=False)

    sample_id: Annotated[str, BeforeValidator(_blank_none), StringConstraints(min_length=1)]
    path: Text = None
    sha256: Annotated[
        str | None,
        BeforeValidator(_lower),
        StringConstraints(pattern=r"^[0-9a-f]{64}$"),
    ] = None
    set: Text = None
    split: Text = None
    modality: Annotated[Modality | None, BeforeValidator(_lower)] = None
    label: Annotated[Label | None, BeforeValidator(_label)] = None
    av_label: Annotated[AvLabel | None, BeforeValidator(_upper)] = None
    generator: Text = None
    manipulation: Text = None
    source_dataset: Text = None
    subject_id: Text = None
    source_id: Text = None
    target_id: Text = None
    sex: Text = None
    skin_tone: Text = None
    language: Text = None
    compression: Text = None
    noise: Text = None
    duration_s: Annotated[Annotated[float, Field(ge=0)] | None, BeforeValidator(_blank_none)] = None
    width: Annotated[Annotated[int, Field(ge=0)] | None, BeforeValidator(_blank_none)] = None
    height: Annotated[Annotated[int, Field(ge=0)] | None, BeforeValidator(_blank_none)] = None
    fps: Annotated[Annotated[float, Field(ge=0)] | None, BeforeValidator(_blank_none)] = None
    sample_rate: Annotated[Annotated[int, Field(ge=0)] | None, BeforeValidator(_blank_none)] = None


# --------------------------------------------------------------------------- columns

#: At most this many column names in a "no such column" message.
_SHOWN_COLUMNS = 12


def columns_hint(header: list[str], wanted: str) -> str:
    """What the file has, short enough for one line: close matches first, then the columns."""
    close = difflib.get_close_matches(wanted, header, n=3, cutoff=0.6)
    shown = header[:_SHOWN_COLUMNS]
    rest = len(header) - len(shown)
    have = ", ".join(shown) + (f" and {rest} more" if rest else "")
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return f"{hint}{len(header)} columns: {have}"


def detect_columns(
    header: list[str],
    overrides: dict[str, str] | None = None,
    constants: dict[str, str] | None = None,
    *,
    path: str = "",
) -> dict[str, str]:
    """Field → source column: the ``--column`` mapping, then the known spellings of
    :data:`ALIASES` (case-insensitive). A mapped column that does not exist is an error with a
    hint; a manifest without any sample id column is an error (``--column sample_id=NAME``).
    Fields given by ``--value`` are looked for too: the value fills only the rows whose
    column is missing or empty."""
    overrides = dict(overrides or {})
    constants = constants or {}
    for k, v in overrides.items():
        if v not in header:
            raise InputError(
                f"{arg('--column', {k: v})}: no such column ({columns_hint(header, v)})", path=path
            )
    used = set(overrides.values())
    lower: dict[str, str] = {}
    for h in header:
        lower.setdefault(h.lower().strip(), h)
    out: dict[str, str] = {}
    for fld in FIELDS:
        if fld in overrides:
            out[fld] = overrides[fld]
            continue
        for alias in ALIASES[fld]:
            col = lower.get(alias)
            if col is not None and col not in used:
                out[fld] = col
                used.add(col)
                break
    if "sample_id" not in out:
        raise InputError(
            "no sample id column (looked for "
            f"{', '.join(ALIASES['sample_id'])}; use {arg('--column', {'sample_id': 'NAME'})}; "
            f"{columns_hint(header, 'sample_id')})",
            path=path,
        )
    return out


# --------------------------------------------------------------------------- options


def _pairs(keys: tuple[str, ...] | None, what: str) -> Callable[[Any], Any]:
    """A validator: ``["a=b", ...]`` (a repeated CLI flag) → ``{"a": "b"}``; keys checked."""

    def parse(v: Any) -> Any:
        if isinstance(v, str):
            v = [v]
        if isinstance(v, list | tuple):
            v = key_values(v, what)
        if isinstance(v, dict) and keys is not None:
            unknown = sorted(set(v) - set(keys))
            if unknown:
                close = difflib.get_close_matches(unknown[0], keys, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise ValueError(f"unknown field {unknown[0]!r}{hint}; fields: {', '.join(keys)}")
        return v

    return parse


class DeepfakeOptions(LabelIssueOptions):
    """Options of the deepfake family. Label issues (DF105) take ``--pred-probs`` only: a
    model that predicts real/fake from the media is a deep detector, which curate does not
    ship, so ``--label-model auto`` fits nothing here."""

    columns: Annotated[dict[str, str], BeforeValidator(_pairs(FIELDS, "FIELD=COLUMN"))] = option(
        {},
        help="Read a field from another column: FIELD=COLUMN, e.g. sample_id=ytid (repeatable).",
        flag="--column",
    )
    values: Annotated[dict[str, str], BeforeValidator(_pairs(FIELDS, "FIELD=VALUE"))] = option(
        {},
        help="One value of a field for every row the manifest lacks it in, e.g. label=real "
        "(repeatable).",
        flag="--value",
    )
    split_map: Annotated[dict[str, str], BeforeValidator(_pairs(None, "VALUE=SPLIT"))] = option(
        {},
        help="Read a split value as a split name: VALUE=SPLIT, e.g. True=test (repeatable).",
        flag="--split-map",
    )
    media_root: Path | None = option(
        None, help="Folder relative media paths are resolved against (default: the manifest's)."
    )
    # The media scan's options (DF2xx; curate.audits.deepfake.files).
    no_files: bool = option(
        False,
        help="Open no media file: skip the file checks (DF2xx); duplicates and leakage use the "
        "manifest's sha256.",
    )
    workers: int | None = option(
        None, help="Threads reading media files (default: the available cores, at most 8)."
    )
    cache: Path | None = option(
        None,
        help="File caching each media file's hash and metadata by path, size and mtime (default: "
        "one file per dataset folder under ~/.cache/curate/media, or $XDG_CACHE_HOME/curate; "
        "skipped if not writable).",
    )
    near_distance: int = option(
        10,
        help="Largest pHash Hamming distance (of 64 bits) at which two images are near-duplicates "
        "(DF208-DF210; 0-63).",
        commands=("validate", "audit", "fix"),
    )
    max_imbalance: float = option(
        1.5,
        help="Largest ratio between the biggest and smallest sex × skin tone × label group of a "
        "split before DF402 reports it.",
        commands=("validate", "audit", "fix"),
    )
    max_duration_s: float = option(
        4 * 3600.0,
        help="Longest plausible sample in seconds (DF110).",
        commands=("validate", "audit", "fix"),
    )

    @field_validator("media_root")
    @classmethod
    def _media_root(cls, v: Path | None) -> Path | None:
        # a mistyped root would make every file "missing" (DF201): say so before reading
        if v is not None and not Path(v).is_dir():
            raise ValueError(f"{v} is not a folder")
        return v

    def unavailable_tables(self) -> frozenset[str]:
        """No label scores without ``--pred-probs`` (the family has no built-in model)."""
        missing = set(super().unavailable_tables())
        if self.label_issue_source(built_in=False) is None:
            missing.add("label_scores")
        return frozenset(missing)


#: Generator values that mean "no generator" (written in real rows by many manifests).
NO_GENERATOR = frozenset(
    {"", "none", "null", "n/a", "na", "-", "real", "original", "bonafide", "bona fide", "nan"}
)
