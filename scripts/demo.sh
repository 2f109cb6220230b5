#!/usr/bin/env bash
# The main job on a small real sample shipped in the package: validate, audit, fix, export, load.
set -euo pipefail
BIN=${1:-.venv/bin}
SAMPLE=$("$BIN/python" -c 'from importlib.resources import files; print(files("curate") / "data" / "samples" / "mquake_sample.json")')
OUT=demo-out
# Never `rm -rf`: curate deletes only what it made, and so does its demo. A demo-out/ the demo
# did not make (no .curate-demo mark) is refused; the demo's own is updated in place: folders
# are replaced by curate's --overwrite (only curate's folders, holding only curate's files)
# and reports by curate's own rule (a file curate wrote carries its generator mark).
MARK="$OUT/.curate-demo"
if [[ -e "$OUT" && ! -f "$MARK" && ( ! -d "$OUT" || -n "$(ls -A "$OUT")" ) ]]; then
    echo "demo.sh: error: $OUT exists and was not made by this demo (no $MARK); move it or remove it yourself" >&2
    exit 2
fi
mkdir -p "$OUT"
echo "made by scripts/demo.sh; rerunning the demo replaces only curate's outputs in here" > "$MARK"
# Bold step headers only on a terminal (or with FORCE_COLOR), never with NO_COLOR: a piped or
# logged demo is plain text, like curate's own output.
if [[ -z "${NO_COLOR:-}" && ( -t 1 || -n "${FORCE_COLOR:-}" ) ]]; then
    BOLD=$'\033[1m' RESET=$'\033[0m'
else
    BOLD='' RESET=''
fi
step() { printf '\n%s$ %s%s\n' "$BOLD" "$*" "$RESET"; }

step curate validate mquake "$SAMPLE"
"$BIN/curate" validate mquake "$SAMPLE"

step curate audit mquake "$SAMPLE" --edit-set all
"$BIN/curate" audit mquake "$SAMPLE" --edit-set all

step curate audit mquake "$SAMPLE" --edit-set all --format html --out "$OUT/audit.html"
"$BIN/curate" audit mquake "$SAMPLE" --edit-set all --format html --out "$OUT/audit.html"

step curate audit mquake "$SAMPLE" --edit-set random:20 --select KE2
# Exit 1 is expected here: contaminated cases are errors. The demo goes on.
"$BIN/curate" audit mquake "$SAMPLE" --edit-set random:20 --select KE2 || echo "(exit $? — findings at or above --fail-on error)"

step curate fix mquake "$SAMPLE" --edit-set random:20 --out "$OUT/remastered" --overwrite
"$BIN/curate" fix mquake "$SAMPLE" --edit-set random:20 --out "$OUT/remastered" --overwrite
head -n 3 "$OUT/remastered/changelog.jsonl" | cut -c1-200

step curate export mquake "$SAMPLE" --out "$OUT/export" --overwrite
"$BIN/curate" export mquake "$SAMPLE" --out "$OUT/export" --overwrite

GLYCANS=$(dirname "$SAMPLE")/glycan_taxonomy_sample.csv
step curate audit glycan "$GLYCANS"
"$BIN/curate" audit glycan "$GLYCANS" || echo "(exit $? — hierarchy contradictions and split leakage are errors)"

# Safe fixes only (labels, spellings, repeated rows); the summary counts what is left for
# --unsafe-fixes: the hierarchy (chooses a parent label) and the re-split (moves rows).
step curate fix glycan "$GLYCANS" --out "$OUT/glycan-safe" --overwrite
"$BIN/curate" fix glycan "$GLYCANS" --out "$OUT/glycan-safe" --overwrite

step curate fix glycan "$GLYCANS" --out "$OUT/glycan-fixed" --overwrite --unsafe-fixes
"$BIN/curate" fix glycan "$GLYCANS" --out "$OUT/glycan-fixed" --overwrite --unsafe-fixes
grep -m 2 '"GL40' "$OUT/glycan-fixed/changelog.jsonl" | cut -c1-200

# What the remaster changed, record by record (its card's "Changes from the source" and
# diff.json say the same); exit 1 because the versions differ, as CI would want it
step curate diff glycan "$GLYCANS" "$OUT/glycan-fixed" --format html --output "$OUT/glycan-diff.html"
"$BIN/curate" diff glycan "$GLYCANS" "$OUT/glycan-fixed" --format html --output "$OUT/glycan-diff.html" \
    || echo "(exit $? — the versions differ; $OUT/glycan-diff.html shows each record side by side)"
"$BIN/curate" diff glycan "$GLYCANS" "$OUT/glycan-fixed" --format markdown --output "$OUT/glycan-diff.md" || true
sed -n 3p "$OUT/glycan-diff.md"

# What is left: hierarchy ties (two parents with the same row count), which no fix decides;
# they stay errors until --mapping names the parent.
step curate audit glycan "$OUT/glycan-fixed" --select GL3,GL4
"$BIN/curate" audit glycan "$OUT/glycan-fixed" --select GL3,GL4 || echo "(exit $? — ties wait for --mapping)"

# In-context RL learning histories (XLand-100B layout, HDF5): a random-policy sample that warns
# (hand-made benchmark id, histories that do not learn) and is exported one row per episode.
XLAND=$(dirname "$SAMPLE")/xland_format_sample_9x9_random.hdf5
step curate audit icrl "$XLAND"
"$BIN/curate" audit icrl "$XLAND"

step curate export icrl "$XLAND" --out "$OUT/xland-episodes" --overwrite
"$BIN/curate" export icrl "$XLAND" --out "$OUT/xland-episodes" --overwrite

# Deepfake manifests: a real source manifest (40 MusicCaps clips, real audio) whose own columns
# are mapped onto the deepfake schema; no media files ship with it, so files are not opened.
MUSICCAPS=$(dirname "$SAMPLE")/musiccaps_manifest.csv
DF_OPTS=(--column sample_id=ytid --column split=is_audioset_eval --split-map True=test
         --split-map False=train --value label=real --value modality=audio --no-files)
step curate audit deepfake "$MUSICCAPS" "${DF_OPTS[@]}"
"$BIN/curate" audit deepfake "$MUSICCAPS" "${DF_OPTS[@]}"

step curate export deepfake "$MUSICCAPS" "${DF_OPTS[@]}" --out "$OUT/musiccaps" --overwrite
"$BIN/curate" export deepfake "$MUSICCAPS" "${DF_OPTS[@]}" --out "$OUT/musiccaps" --overwrite

# Any table, declared by its columns (the table family): the same glycan table seen as a plain
# labelled table (glycan → Order, its own split column), audited and remastered without a
# family of its own; --normalise none because IUPAC's brackets are meaning, not punctuation.
TABLE_OPTS=(--id glycowork_row --label Order --split split --text glycan --normalise none)
step curate audit table "$GLYCANS" "${TABLE_OPTS[@]}" --select TB3,TB4
"$BIN/curate" audit table "$GLYCANS" "${TABLE_OPTS[@]}" --select TB3,TB4 || echo "(exit $? — conflicting labels and split leakage are errors)"

step curate fix table "$GLYCANS" "${TABLE_OPTS[@]}" --unsafe-fixes --out "$OUT/table-fixed" --overwrite
"$BIN/curate" fix table "$GLYCANS" "${TABLE_OPTS[@]}" --unsafe-fixes --out "$OUT/table-fixed" --overwrite

# Overlap between datasets: ILLUSION's generator sets reproduce its published Jaccard values
# exactly; the UpSet plot and the Jaccard heat map are written as PNG and SVG.
SETS=$(dirname "$SAMPLE")/illusion_technique_sets.json
step curate overlap "$SETS" --plot "$OUT/illusion.png"
"$BIN/curate" overlap "$SETS" --plot "$OUT/illusion.png"

step 'python -c "datasets.load_dataset(...)"'
"$BIN/python" - "$OUT" <<'PY'
import sys
import datasets

datasets.disable_progress_bars()
for name in ("remastered", "export", "glycan-fixed", "xland-episodes", "musiccaps", "table-fixed"):
    d = datasets.load_dataset(f"{sys.argv[1]}/{name}")
    print(name, {s: d[s].num_rows for s in d}, "columns:", len(d["train"].column_names))
PY
printf '\nDemo output is in %s/ (remastered MQuAKE with changelog.jsonl, exported MQuAKE, fixed glycan table, XLand episodes, MusicCaps manifest, the glycan table remastered as a plain table, ILLUSION UpSet plot, audit.html, glycan-diff.html).\n' "$OUT"
