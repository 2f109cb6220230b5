"""A generated, ILLUSION-like deepfake manifest: four sets, three modalities, subject-disjoint
splits balanced by sex × skin tone × label, face swaps with source and target identities —
and, on request, planted defects whose rows are known.

Why generated: no public deepfake manifest with subjects and demographics is small enough to
ship, and the defects must sit at known rows for the tests to say "found at the right row".
The layout follows ILLUSION's paper (sets A-D, 26 languages, generators per technique): set A
face-swap and lip-sync videos, B synthetic and text-to-image faces, C speech (TTS, voice
conversion), D in-the-wild videos.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

import polars as pl

SEXES = ("female", "male")
TONES = ("light", "medium", "dark")
LANGUAGES = ("en", "de", "es", "zh", "hi", "ar", "pt", "ru")
#: subjects per sex × skin-tone cell and split
PER_CELL = {"train": 6, "validation": 2, "test": 2}
#: set → (modality, manipulation, generators)
SETS = {
    "A": ("video", "face_swap", ("SimSwap", "FaceFusion", "InSwapper")),
    "B": ("image", "t2i", ("StableDiffusion-XL", "Midjourney-v6", "Flux.1")),
    "C": ("audio", "tts", ("XTTS-v2", "F5-TTS", "OpenVoice")),
    "D": ("video", "lip_sync", ("Wav2Lip", "VideoReTalking")),
}


SUFFIX = {"video": "mp4", "image": "png", "audio": "wav"}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Manifest:
    rows: list[dict]
    #: (rule, row index) of every planted defect
    expected: set[tuple[str, int]] = field(default_factory=set)

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame(self.rows, infer_schema_length=None)

    def index(self, sample_id: str) -> int:
        return next(i for i, r in enumerate(self.rows) if r["sample_id"] == sample_id)


def clean_manifest(seed: int = 0) -> Manifest:
    """Every subject: 3 real and 3 fake samples in two sets, all in the subject's split; face
    swaps take their source face from a subject of the same split."""
    rng = random.Random(seed)
    subjects = []
    for split, k in PER_CELL.items():
        for sex in SEXES:
            for tone in TONES:
                for _ in range(k):
                    sid = f"S{len(subjects):03d}"
                    subjects.append((sid, split, sex, tone, rng.choice(LANGUAGES)))
    by_split: dict[str, list[str]] = {}
    for sid, split, *_ in subjects:
        by_split.setdefault(split, []).append(sid)
    rows = []
    for i, (sid, split, sex, tone, lang) in enumerate(subjects):
        sets = ("A", "C") if i % 2 == 0 else ("B", "D")
        for n in range(6):
            set_ = sets[n % 2]
            modality, manip, gens = SETS[set_]
            fake = n >= 3
            sample = f"{set_}-{sid}-{n}"
            row = {
                "sample_id": sample,
                "path": f"{set_}/{split}/{sample}.{SUFFIX[modality]}",
                "sha256": _sha(sample),
                "set": set_,
                "split": split,
                "modality": modality,
                "label": "fake" if fake else "real",
                "av_label": None,
                "generator": rng.choice(gens) if fake else None,
                "manipulation": manip if fake else None,
                "source_dataset": "ILLUSION",
                "subject_id": sid,
                "source_id": None,
                "target_id": None,
                "sex": sex,
                "skin_tone": tone,
                "language": lang,
                "compression": rng.choice(["c23", "c40", None]) if modality == "video" else None,
                "noise": None,
                "duration_s": None,
                "width": None,
                "height": None,
                "fps": None,
                "sample_rate": None,
            }
            if modality == "video":
                row.update(
                    duration_s=round(rng.uniform(4, 20), 2),
                    width=1280,
                    height=720,
                    fps=25.0,
                    sample_rate=16000,
                    av_label=("RA-RV" if not fake else rng.choice(["FA-FV", "RA-FV", "FA-RV"])),
                )
                if fake and set_ == "A":  # a face swap: another face of the same split
                    others = [s for s in by_split[split] if s != sid]
                    row.update(source_id=rng.choice(others), target_id=sid)
            elif modality == "audio":
                row.update(
                    duration_s=round(rng.uniform(2, 12), 2),
                    sample_rate=rng.choice([16000, 22050, 24000]),
                    av_label="FA-RV" if fake else "RA-RV",
                )
            else:
                row.update(width=1024, height=1024, av_label="RA-FV" if fake else "RA-RV")
            rows.append(row)
    return Manifest(rows)


def defective_manifest(seed: int = 0) -> Manifest:
    """:func:`clean_manifest` with planted defects; ``expected`` lists (rule, row) of each."""
    m = clean_manifest(seed)
    rows = m.rows
    exp = m.expected

    def find(split: str, modality: str | None = None, label: str | None = None, skip: int = 0):
        hits = [
            i
            for i, r in enumerate(rows)
            if r["split"] == split
            and (modality is None or r["modality"] == modality)
            and (label is None or r["label"] == label)
        ]
        return hits[skip]

    def copy_of(i: int, **changes) -> int:
        rows.append({**rows[i], **changes})
        return len(rows) - 1

    # DF303: a test sample that is byte-identical to a training sample (same label)
    src = find("train", "image", "fake")
    leak = find("test", "image", "fake")
    rows[leak]["sha256"] = rows[src]["sha256"]
    exp.add(("DF303", leak))
    # DF302: a training sample listed twice under another id (same content, same split)
    dup_src = find("train", "audio", "real")
    dup = copy_of(dup_src, sample_id="C-extra-copy")
    exp.add(("DF302", dup))
    # DF305 (+ DF302 on the later row): the same content labelled real and fake
    conf_src = find("validation", "image", "real")
    conf = copy_of(
        conf_src,
        sample_id="B-conflict",
        label="fake",
        generator="Flux.1",
        av_label="RA-FV",
        manipulation="t2i",
    )
    exp |= {("DF305", conf_src), ("DF305", conf), ("DF302", conf)}
    # DF304 (+ DF302): the same content re-used from another corpus
    other = copy_of(
        find("validation", "audio", "real", 1),
        sample_id="C-from-asvspoof",
        source_dataset="ASVspoof2019",
    )
    exp |= {("DF304", other), ("DF302", other)}
    # DF401: a test row of a training subject; a face swap whose source face is in training
    train_subject = rows[find("train")]["subject_id"]
    sub_leak = find("test", "audio", "real", 1)
    rows[sub_leak]["subject_id"] = train_subject
    exp.add(("DF401", sub_leak))
    swap = next(
        i for i, r in enumerate(rows) if r["split"] == "test" and r["source_id"] is not None
    )
    rows[swap]["source_id"] = train_subject
    exp.add(("DF401", swap))
    # DF301 (+ DF302): a row listed twice, identical
    twice = copy_of(find("train", "video", "real", 3))
    exp |= {("DF301", twice), ("DF302", twice)}
    # DF101 / DF102
    i = find("train", "video", "real", 5)
    rows[i]["generator"] = "SimSwap"
    exp.add(("DF101", i))
    i = find("validation", "image", "fake", 2)
    rows[i]["generator"] = None
    exp.add(("DF102", i))
    # DF103: an audio sample with fake visuals; a real video said to have fake audio
    i = find("train", "audio", "fake", 2)
    rows[i]["av_label"] = "RA-FV"
    exp.add(("DF103", i))
    i = find("test", "video", "real", 2)
    rows[i]["av_label"] = "FA-RV"
    exp.add(("DF103", i))
    # DF104: a missing av_label the label decides (real image → RA-RV)
    i = find("train", "image", "real", 4)
    rows[i]["av_label"] = None
    exp.add(("DF104", i))
    # DF403: a language name, an upper-case code, a code that does not exist
    for skip, value in ((6, "English"), (7, "EN"), (8, "xx")):
        i = find("train", "audio", None, skip)
        rows[i]["language"] = value
        exp.add(("DF403", i))
    # DF110: 2500 fps (a frame count in the fps column); DF111: an audio sample with a width
    i = find("validation", "video", None, 3)
    rows[i]["fps"] = 2500.0
    exp.add(("DF110", i))
    i = find("train", "audio", None, 9)
    rows[i]["width"] = 640
    exp.add(("DF111", i))
    # DF001: an unknown modality
    i = find("train", "image", None, 11)
    rows[i]["modality"] = "vid"
    exp.add(("DF001", i))
    return m
