"""``curate overlap`` and :mod:`curate.overlap.sets` on real data: the ILLUSION table and figure,
MQuAKE
halves with a planted overlap, the glycan sample's train/test split — and against brute force."""

from __future__ import annotations

import contextlib
import json
import random
import re
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from curate.cli.main import main
from curate.overlap.sets import members_from_sets, normalise_members, overlap, read_sets_file

ILLUSION = "data/deepfake/illusion_technique_sets.json"


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    capsys.readouterr()
    rc = main(["overlap", *argv, "--format", "json"])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def pair(doc: dict, a: str, b: str) -> dict:
    for p in doc["pairs"]:
        if {p["a"], p["b"]} == {a, b}:
            return p
    raise KeyError((a, b))


# --------------------------------------------------------------------------- ILLUSION


def test_illusion_published_jaccard_reproduced_exactly(shared, capsys) -> None:
    """Every Jaccard value the ILLUSION page publishes (vs ILLUSION, two decimals) comes out of
    the command with exact name matching, and the unrounded values equal the file's recomputed
    ones (four decimals)."""
    path = shared(ILLUSION)
    raw = json.loads(path.read_text(encoding="utf-8"))
    rc, doc = run_json(capsys, str(path))
    assert rc == 0
    assert len(doc["pairs"]) == 14 * 13 // 2
    published = raw["jaccard_vs_ILLUSION_published"]
    assert len(published) == 13
    for name, value in published.items():
        got = pair(doc, "ILLUSION", name)["jaccard"]
        assert round(got, 2) == value, name
        assert round(got, 4) == raw["jaccard_vs_ILLUSION_recomputed"][name], name


#: The bars of the published figure (data/deepfake/upset_plot.png), read off it by eye once,
#: left to right: the dots of each column (which datasets) and the number over its bar.
PUBLISHED_UPSET = [
    ({"ILLUSION"}, 23),
    ({"ForgeryNet"}, 12),
    ({"TIMIT-TTS"}, 12),
    ({"DiffusionFace"}, 7),
    ({"DIRE"}, 4),
    ({"KoDF"}, 3),
    ({"WaveFake"}, 5),
    ({"AV-Deepfake1M"}, 1),
    ({"AGIQA-1K"}, 1),
    ({"DiffusionFace", "ILLUSION"}, 1),
    ({"DIRE", "DiffusionFace"}, 3),
    ({"WaveFake", "TIMIT-TTS"}, 1),
    ({"AV-Deepfake1M", "ILLUSION"}, 1),
    ({"AV-Deepfake1M", "TIMIT-TTS"}, 1),
    ({"AGIQA-1K", "DIRE"}, 1),
    ({"LAV-DF", "FakeAVCeleb"}, 1),
    ({"Midjourney-Kaggle", "ILLUSION"}, 1),
    ({"LAV-DF", "FakeAVCeleb", "KoDF"}, 1),
    ({"DeePhy", "DF-Platter", "ForgeryNet", "ILLUSION"}, 1),
    ({"DeePhy", "DF-Platter", "FakeAVCeleb", "KoDF", "ForgeryNet"}, 1),
    ({"DeePhy", "DF-Platter", "FakeAVCeleb", "KoDF", "ForgeryNet", "ILLUSION"}, 1),
]
#: The set sizes at the figure's left, read off it too.
PUBLISHED_SIZES = {
    "Midjourney-Kaggle": 1, "LAV-DF": 2, "AGIQA-1K": 2, "DeePhy": 3, "DF-Platter": 3,
    "AV-Deepfake1M": 3, "FakeAVCeleb": 4, "WaveFake": 6, "KoDF": 6, "DIRE": 8,
    "DiffusionFace": 11, "TIMIT-TTS": 14, "ForgeryNet": 15, "ILLUSION": 28,
}  # fmt: skip


def test_illusion_upset_matches_published_figure(shared, capsys) -> None:
    rc, doc = run_json(capsys, str(shared(ILLUSION)))
    assert rc == 0
    got = [(set(r["members"]), r["count"]) for r in doc["intersections"]]
    # same bars in the same order (upsetplot's default: degree, then collections by size)
    assert got == PUBLISHED_UPSET
    assert {c["collection"]: c["size"] for c in doc["collections"]} == PUBLISHED_SIZES


def test_illusion_plot_files(shared, tmp_path: Path, capsys) -> None:
    """--plot writes the UpSet plot and the heat map, each as PNG and SVG."""
    target = tmp_path / "figs" / "upset.png"
    target.parent.mkdir()
    capsys.readouterr()
    assert main(["overlap", str(shared(ILLUSION)), "--plot", str(target)]) == 0
    names = sorted(p.name for p in target.parent.iterdir())
    assert names == ["upset-jaccard.png", "upset-jaccard.svg", "upset.png", "upset.svg"]
    for png in ("upset.png", "upset-jaccard.png"):
        with Image.open(target.parent / png) as im:
            assert im.format == "PNG" and im.width > 500 and im.height > 400
    svg = (target.parent / "upset.svg").read_text(encoding="utf-8")
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    # the figure's labels are the collection names, and the bars' counts
    assert "ForgeryNet" in svg and "Midjourney-Kaggle" in svg


def test_illusion_normalize_and_aliases(shared, tmp_path: Path, capsys) -> None:
    """Normalising alone changes nothing in the published sets (no two spellings differ only by
    case, spacing or punctuation); the FOMM spellings need an alias, which adds one shared
    technique to ForgeryNet and KoDF. ILLUSION's published values are unchanged by both."""
    path = str(shared(ILLUSION))
    _, exact = run_json(capsys, path)
    _, norm = run_json(capsys, path, "--normalize")
    assert [p["intersection"] for p in norm["pairs"]] == [p["intersection"] for p in exact["pairs"]]
    assert norm["merged"] == []
    aliases = tmp_path / "aliases.csv"
    aliases.write_text(
        "variant,canonical\nFirst Order Motion Model (FOMM),First Order Motion\n"
        "FirstOrder Motion,First Order Motion\nWave2Lip,Wav2Lip\n",
        encoding="utf-8",
    )
    _, aliased = run_json(capsys, path, "--normalize", "--aliases", str(aliases))
    assert pair(exact, "ForgeryNet", "KoDF")["intersection"] == 2  # FSGAN, FaceSwap
    assert pair(aliased, "ForgeryNet", "KoDF")["intersection"] == 3  # + First Order Motion
    changed = {
        (p["a"], p["b"])
        for p, q in zip(exact["pairs"], aliased["pairs"], strict=True)
        if p["intersection"] != q["intersection"]
    }
    assert changed == {("ForgeryNet", "KoDF")}
    (merge,) = aliased["merged"]
    assert merge["key"] == "first order motion"
    assert merge["variants"] == [" First Order Motion Model (FOMM)", "FirstOrder Motion"]
    assert merge["collections"] == ["ForgeryNet", "KoDF"]
    # without --normalize the alias table must match the raw names byte for byte: the leading
    # space of KoDF's " First Order Motion Model (FOMM)" keeps it apart
    _, raw_alias = run_json(capsys, path, "--aliases", str(aliases))
    assert pair(raw_alias, "ForgeryNet", "KoDF")["intersection"] == 2


def test_normalize_merges_trailing_spaces_case_and_punctuation() -> None:
    members = members_from_sets(
        {
            "A": ["stable-inpaintingv1 ", "FaceSwap", "Ｗａｖ2Lip"],
            "B": ["stable inpaintingv1", "faceswap", "wav2lip", "FirstOrder Motion"],
        }
    )
    assert overlap(members).pairs["intersection"].item() == 0
    merged_members, merged = normalise_members(members, normalize=True)
    assert overlap(merged_members).pairs["intersection"].item() == 3
    by_key = {r["key"]: r["variants"] for r in merged.iter_rows(named=True)}
    assert by_key == {
        "faceswap": ["FaceSwap", "faceswap"],
        "stable inpaintingv1": ["stable inpaintingv1", "stable-inpaintingv1 "],
        "wav2lip": ["wav2lip", "Ｗａｖ2Lip"],  # full-width letters: NFKC
    }


def test_fail_above(shared, capsys) -> None:
    path = str(shared(ILLUSION))
    capsys.readouterr()
    assert main(["overlap", path, "--fail-above", "0.99"]) == 1  # DF-Platter = DeePhy
    err = capsys.readouterr().err
    assert "DF-Platter & DeePhy: 1.0000" in err
    assert main(["overlap", path, "--fail-above", "1"]) == 0


def test_markdown_and_csv(shared, capsys) -> None:
    path = str(shared(ILLUSION))
    capsys.readouterr()
    assert main(["overlap", path, "--format", "csv"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[0] == "a,b,size_a,size_b,intersection,union,jaccard,a_in_b,b_in_a"
    assert len(rows) == 1 + 91
    assert main(["overlap", path, "--format", "markdown"]) == 0
    md = capsys.readouterr().out
    assert "| ILLUSION | 1.0000 | 0.0000 | 0.0333 | 0.0690 | 0.0357 |" in md


# --------------------------------------------------------------------------- MQuAKE halves


def _triples(cases: list[dict]) -> set[str]:
    return {"|".join(t) for c in cases for t in c["orig"]["edit_triples"]}


def test_mquake_halves_with_planted_overlap(hard_records, tmp_path: Path, capsys) -> None:
    """MQuAKE-hard cut into two overlapping halves (30 cases in both): the shared fact count
    equals a brute-force set intersection of the edit triples; a question reworded in the second
    half is found as a near-duplicate of the first half's."""
    a, b = hard_records[:230], [dict(c) for c in hard_records[200:]]
    # plant a reworded copy of a first-half-only question in the second half
    source = hard_records[10]["questions"][0]
    b[-1] = {**b[-1], "questions": [source.replace("What is", "What's"), *b[-1]["questions"][1:]]}
    pa, pb = tmp_path / "first.json", tmp_path / "second.json"
    pa.write_text(json.dumps(a), encoding="utf-8")
    pb.write_text(json.dumps(b), encoding="utf-8")
    rc, doc = run_json(capsys, str(pa), str(pb), "--key", "fact")
    assert rc == 0
    p = pair(doc, "first", "second")
    ta, tb = _triples(a), _triples(b)
    assert p["intersection"] == len(ta & tb) >= 30
    assert p["union"] == len(ta | tb)
    assert p["size_a"] == len(ta) and p["size_b"] == len(tb)

    rc, doc = run_json(
        capsys, str(pa), str(pb), "--key", "question", "--near-duplicates", "--threshold", "0.7"
    )
    assert rc == 0
    assert pair(doc, "first", "second")["intersection"] == 90  # 30 shared cases x 3 questions
    near = doc["near_duplicates"]
    hit = [n for n in near if {n["in_a"], n["in_b"]} == {"first", "second"}]
    assert hit, near
    assert all(0.7 <= n["exact"] <= 1 and 0 <= n["estimated"] <= 1 for n in near)
    # the shared cases make the halves fail a "no overlap" gate
    capsys.readouterr()
    assert main(["overlap", str(pa), str(pb), "--key", "fact", "--fail-above", "0"]) == 1


# --------------------------------------------------------------------------- glycans


def test_glycan_sample_train_test(glycan_sample_csv, capsys) -> None:
    """The glycan sample's splits compared by canonical key equal a brute force over
    :func:`canonical_key`; raw strings (``column:glycan``) can only share fewer."""
    from curate.schemas.iupac import IUPACError, canonical_key

    df = pl.read_csv(glycan_sample_csv, infer_schema=False)
    keys: dict[str, set[str]] = {}
    for glycan, split in df.select("glycan", "split").iter_rows():
        with contextlib.suppress(IUPACError, TypeError):
            keys.setdefault(split, set()).add(canonical_key(glycan))
    rc, doc = run_json(capsys, str(glycan_sample_csv), "--key", "glycan", "--by", "split")
    assert rc == 0
    splits = sorted(keys)
    assert sorted(c["collection"] for c in doc["collections"]) == splits
    for i, x in enumerate(splits):
        for y in splits[i + 1 :]:
            assert pair(doc, x, y)["intersection"] == len(keys[x] & keys[y]), (x, y)
    rc, raw = run_json(capsys, str(glycan_sample_csv), "--key", "column:glycan", "--by", "split")
    assert rc == 0
    for p in raw["pairs"]:
        assert p["intersection"] <= pair(doc, p["a"], p["b"])["intersection"]


# --------------------------------------------------------------------------- brute force

names = st.sampled_from([f"c{i}" for i in range(7)])
items = st.text(alphabet="abcdefgh", min_size=1, max_size=2)


@settings(max_examples=80, deadline=None)
@given(st.dictionaries(names, st.lists(items, max_size=25), min_size=1))
def test_overlap_equals_python_sets(sets: dict[str, list[str]]) -> None:
    o = overlap(members_from_sets(sets), list(sets))
    py = {k: set(v) for k, v in sets.items()}
    for r in o.pairs.iter_rows(named=True):
        a, b = py[r["a"]], py[r["b"]]
        assert r["intersection"] == len(a & b)
        assert r["union"] == len(a | b)
        assert r["jaccard"] == (len(a & b) / len(a | b) if a | b else 0.0)
        assert r["a_in_b"] == (len(a & b) / len(a) if a else 0.0)
    # UpSet: every key in exactly one pattern, the pattern = the sets holding it
    patterns: dict[frozenset[str], int] = {}
    for key in set().union(*py.values()):
        who = frozenset(n for n, s in py.items() if key in s)
        patterns[who] = patterns.get(who, 0) + 1
    got = {frozenset(r["members"]): r["count"] for r in o.intersections.iter_rows(named=True)}
    assert got == patterns


def test_overlap_more_than_64_collections() -> None:
    """Patterns span several 64-bit words: collection 70 and collection 3 still meet."""
    rng = random.Random(5)
    sets = {f"s{i}": [str(rng.randrange(40)) for _ in range(10)] for i in range(130)}
    o = overlap(members_from_sets(sets))
    py = {k: set(v) for k, v in sets.items()}
    for r in o.pairs.sample(300, seed=1).iter_rows(named=True):
        assert r["intersection"] == len(py[r["a"]] & py[r["b"]])
    assert o.intersections["count"].sum() == len(set().union(*py.values()))


def test_sets_file_forms(tmp_path: Path, shared) -> None:
    flat = tmp_path / "flat.json"
    flat.write_text('{"_about": "x", "a": ["1", "2"], "b": [2, 3]}', encoding="utf-8")
    assert read_sets_file(flat) == {"a": ["1", "2"], "b": [2, 3]}
    sets = read_sets_file(shared(ILLUSION))
    assert len(sets) == 14 and " First Order Motion Model (FOMM)" in sets["KoDF"]


def test_empty_collection_named() -> None:
    o = overlap(members_from_sets({"a": ["x"]}), ["a", "b"])
    r = o.pairs.row(0, named=True)
    assert (r["intersection"], r["jaccard"], r["b_in_a"]) == (0, 0.0, 0.0)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["train", "validation", "test", "other"]),
        st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=8),
        min_size=2,
    )
)
def test_shared_keys_are_what_the_leakage_join_sees(sets: dict[str, list[str]]) -> None:
    """What ``curate overlap`` counts as shared between two collections is what the rules'
    leakage join (:func:`curate.audits.shared.duplicates.seen_in`) finds: the distinct keys
    of one that the other holds, with the other's rows counted. One question, two
    computations (membership patterns for all pairs at once, one join per rule)."""
    from curate.audits.shared.duplicates import seen_in

    members = members_from_sets(sets)
    o = overlap(members, list(sets))
    for r in o.pairs.iter_rows(named=True):
        a = members.filter(pl.col("collection") == r["a"]).unique("key")
        b = members.filter(pl.col("collection") == r["b"])
        seen = seen_in(a, b, "key", pl.len().alias("rows"))
        assert seen.height == r["intersection"]
        assert seen["rows"].sum() == sum(sets[r["b"]].count(k) for k in seen["key"])
        assert r["a_in_b"] == pytest.approx(seen.height / a.height if a.height else 0.0)


def test_overlap_keys_are_the_declared_keys() -> None:
    """Each family lists its keys once (``Family.keys``): ``curate overlap`` offers those with
    a table builder, and where a rule compares by the same key it is the same declaration
    (deepfake's content key: DF302/DF303's, with the family's media-reading builder)."""
    from curate.cli.overlap import overlap_keys
    from curate.families import get_family
    from curate.schemas.deepfake_tables import CONTENT_KEYS
    from curate.schemas.glycan_tables import GLYCAN_KEYS

    offered = {
        f: sorted(overlap_keys(get_family(f)))
        for f in ("deepfake", "glycan", "icrl", "knowledge-editing")
    }
    assert offered == {
        "deepfake": ["content", "generator", "subject"],
        "glycan": ["glycan"],
        "icrl": ["task"],
        "knowledge-editing": ["fact", "question"],
    }
    content = overlap_keys(get_family("deepfake"))["content"]
    assert content.table is not None and content.read_by(None) == CONTENT_KEYS  # type: ignore[arg-type]
    assert overlap_keys(get_family("glycan"))["glycan"] is GLYCAN_KEYS
    for f in offered:
        for k in overlap_keys(get_family(f)).values():
            assert k.doc and k.columns == ("key",)


@pytest.mark.parametrize("key", ["fact", "question"])
def test_ke_keys_declared(key: str) -> None:
    from curate.cli.overlap import overlap_keys
    from curate.families import get_family

    spec = overlap_keys(get_family("mquake"))[key]
    assert spec.name == key and spec.doc and spec.table is not None
    assert spec.text is (key == "question")


def test_hash_collision_falls_back_to_exact_codes(monkeypatch) -> None:
    """If the first 64-bit hash ever collides, keys are still told apart (categorical codes)."""
    real = pl.Series.hash

    def colliding(self, seed=0, *args, **kwargs):
        if seed == 0x0C0FFEE:  # every key the same first hash
            return pl.Series(self.name, [7] * len(self), dtype=pl.UInt64)
        return real(self, seed, *args, **kwargs)

    monkeypatch.setattr(pl.Series, "hash", colliding)
    o = overlap(members_from_sets({"a": ["x", "y"], "b": ["y", "z"]}))
    assert o.pairs.select("intersection", "union").row(0) == (1, 3)


# --------------------------------------------------------------------------- deepfake keys


def test_deepfake_keys_find_the_planted_leaks(tmp_path, capsys) -> None:
    """The deepfake family's keys by split: ``content`` shares exactly the hashes a brute force
    over the manifest finds in two splits (the planted DF303 leak), ``subject`` exactly the
    identities (DF401), ``generator`` the generator sets."""
    from deepfake_data import defective_manifest

    m = defective_manifest().frame()
    path = tmp_path / "manifest.csv"
    m.write_csv(path)

    def split_sets(*cols: str) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for row in m.iter_rows(named=True):
            for c in cols:
                if row.get(c):
                    out.setdefault(row["split"], set()).add(
                        str(row[c]).lower() if c == "sha256" else str(row[c])
                    )
        return out

    for key, cols in (
        ("content", ("sha256",)),
        ("subject", ("subject_id", "source_id", "target_id")),
        ("generator", ("generator",)),
    ):
        want = split_sets(*cols)
        rc, doc = run_json(capsys, str(path), "--family", "deepfake", "--key", key, "--by", "split")
        assert rc == 0, key
        for a, b in (("train", "test"), ("train", "validation"), ("validation", "test")):
            assert pair(doc, a, b)["intersection"] == len(want[a] & want[b]), (key, a, b)
    assert len(split_sets("sha256")["train"] & split_sets("sha256")["test"]) >= 1


def test_same_input_same_report(shared, capsys) -> None:
    """The examples of each intersection are chosen by key, not by the order a parallel
    group-by met them: the JSON of one input is the same on every run."""
    sets = str(shared("data/deepfake/illusion_technique_sets.json"))
    docs = [run_json(capsys, sets)[1] for _ in range(4)]
    assert all(d == docs[0] for d in docs)


def test_plot_never_replaces_a_figure_curate_did_not_draw(shared, capsys, tmp_path) -> None:
    """``--plot`` refuses a file of the same name that is not one of its own plots (the
    authors' published figure, say), replaces its own, and writes into a folder given."""
    sets = str(shared("data/deepfake/illusion_technique_sets.json"))
    theirs = tmp_path / "upset_plot.png"
    theirs.write_bytes(shared("data/deepfake/upset_plot.png").read_bytes())
    before = theirs.read_bytes()
    capsys.readouterr()
    assert main(["overlap", sets, "--plot", str(theirs)]) == 2
    assert theirs.read_bytes() == before
    mine = tmp_path / "mine.png"
    assert main(["overlap", sets, "--plot", str(mine)]) == 0
    assert main(["overlap", sets, "--plot", str(mine)]) == 0  # its own: replaced
    folder = tmp_path / "figs"
    folder.mkdir()
    assert main(["overlap", sets, "--plot", str(folder)]) == 0
    assert sorted(p.name for p in folder.iterdir()) == [
        "overlap-jaccard.png",
        "overlap-jaccard.svg",
        "overlap.png",
        "overlap.svg",
    ]


def test_by_members_keep_str_methods():
    """``--by split`` is a StrEnum member; its name is not ``split``, which would hide
    ``str.split`` on every member of the enum."""
    from curate.cli.overlap import By

    assert By("split").split("l") == ["sp", "it"]
    assert By.dataset.upper() == "DATASET"


def test_records_a_family_leaves_out_as_invalid_are_said_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A family's keys are of its valid records: a test split of invalid rows is in no
    collection, so the run says how many were left out rather than pass a leak gate quietly."""
    manifest = tmp_path / "o.csv"
    manifest.write_text(
        "sample_id,sha256,split,modality,label,subject_id\n"
        f"a,{1:064d},train,audio,real,s1\nc,{1:064d},test,audio,maybe,s1\n"
    )
    code = main(["overlap", str(manifest), "--family", "deepfake", "--key", "content",
                 "--by", "split", "--fail-above", "0"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0  # one collection: nothing to overlap, and the line says why
    assert f"curate: {manifest}: 1 invalid record left out of the overlap" in err


def test_an_object_column_compares_by_value_not_by_key_order(capsys, tmp_path) -> None:
    """Found by a new-user review: ``--key column:requested_rewrite`` shared 0 of 49 cases
    between the MQuAKE sample and its remaster, whose writer orders each edit's fields
    otherwise; ``curate diff`` called them unchanged. The same objects are the same key."""
    import curate

    sample = Path(curate.__file__).parent / "data" / "samples" / "mquake_sample.json"
    cases = json.loads(sample.read_text("utf-8"))
    reordered = tmp_path / "reordered.jsonl"
    with reordered.open("w", encoding="utf-8") as fh:
        for case in cases:
            edits = [dict(reversed(list(e.items()))) for e in case["requested_rewrite"]]
            fh.write(json.dumps(case | {"requested_rewrite": edits}) + "\n")
    rc, doc = run_json(capsys, str(sample), str(reordered), "--key", "column:requested_rewrite")
    assert rc == 0
    shared = pair(doc, "mquake_sample", "reordered")
    assert shared["intersection"] == len(
        {json.dumps(c["requested_rewrite"], sort_keys=True) for c in cases}
    )
    assert shared["jaccard"] == 1.0


def test_markdown_cells_hold_pipes_and_line_breaks(capsys, tmp_path) -> None:
    """Found by a new-user review: a collection named ``B|C`` and a key ``x`` + line break +
    ``y`` split a row and ended the table meant for a pull request. Every row keeps its
    columns, each key is one code span."""
    sets = tmp_path / "sets.json"
    sets.write_text(json.dumps({"B|C": ["a|b", "x\ny", "k"], "D": ["k", "a|b"]}), "utf-8")
    capsys.readouterr()
    assert main(["overlap", str(sets), "--format", "markdown"]) == 0
    text = capsys.readouterr().out
    rows = [line for line in text.splitlines() if line.startswith("|")]
    for table in text.split("\n\n"):  # each table: every row as many cells as its header
        lines = [line for line in table.splitlines() if line.startswith("|")]
        widths = {len(re.split(r"(?<!\\)\|", line)) for line in lines}
        assert len(widths) <= 1, table
    assert "| 1 | B\\|C | `x\\ny` |" in rows
    assert "| 2 | B\\|C & D | `a\\|b`, `k` |" in rows
