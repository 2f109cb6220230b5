"""``curate overlap A B C --key KEY``: how much datasets, splits or named sets share.

Inputs are either *sets files* (JSON ``{name: [items]}``, or one such object inside a larger
one, as the ILLUSION file keeps its technique lists) — then no ``--key`` is needed, every named
set is a collection — or dataset files read by a family (or as plain tables with
``--key column:NAME``), each file (``--by dataset``) or each split of each file
(``--by split``) a collection. A family's keys are the :class:`~curate.core.keys.Keys` it
declares (``Family.keys``, those with a table builder), the same declarations its rules use.
The numbers come from :mod:`curate.overlap.sets`; near-duplicate text from the shared
near-duplicate manager (:mod:`curate.audits.shared.near`).

Exit codes: 0 done, 1 some pair's Jaccard index is above ``--fail-above`` (a CI gate such as
"train and test share nothing": ``--fail-above 0``), 2 unusable input or usage (one line).
"""

from __future__ import annotations

import csv
import io
import re
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer

from curate.cli import terminal
from curate.cli.help import LightCommand
from curate.core.errors import InputError, UsageError
from curate.core.keys import Keys
from curate.core.version import __version__

if TYPE_CHECKING:  # polars comes with the run, not with `curate overlap --help` (issue 36)
    import polars as pl

    from curate.overlap.sets import Overlap

overlap_app = typer.Typer(
    add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None
)


class OverlapFormat(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"
    csv = "csv"
    html = "html"


class By(StrEnum):
    dataset = "dataset"
    # not named ``split``: a member of that name would hide ``str.split`` on every member
    split_ = "split"


# --------------------------------------------------------------------------- collecting keys


def _names_for(paths: list[str]) -> list[str]:
    """A collection name per input: its file stem, or the path as given when stems collide."""
    stems = [Path(p).name.split(".")[0] or p for p in paths]
    return [s if stems.count(s) == 1 else p for s, p in zip(stems, paths, strict=True)]


def overlap_keys(fam: Any) -> dict[str, Keys]:
    """The keys ``curate overlap`` can compare a family's datasets by: those of the family's
    declared :attr:`~curate.families.base.Family.keys` that have a table builder, by name."""
    return {k.name: k for k in fam.keys if k.table is not None}


def _find_key(key: str, family: str | None) -> tuple[Any, Keys]:
    """The family and its declared :class:`~curate.core.keys.Keys` named ``key``."""
    from curate.families import all_families, get_family

    if family:
        fam = get_family(family)
        keys = overlap_keys(fam)
        if key not in keys:
            have = ", ".join(sorted(keys)) or "none"
            raise UsageError(
                f"--key {key!r}: family {fam.name} declares no such key (its keys: {have}; or "
                "use --key column:NAME)"
            )
        return fam, keys[key]
    found = {f.name: f for f in all_families().values() if key in overlap_keys(f)}
    if len(found) == 1:
        fam = next(iter(found.values()))
        return fam, overlap_keys(fam)[key]
    if found:
        raise UsageError(
            f"--key {key!r} is declared by several families ({', '.join(sorted(found))}): "
            "say which with --family"
        )
    every = sorted({f"{k} ({f.name})" for f in all_families().values() for k in overlap_keys(f)})
    raise UsageError(
        f"--key {key!r}: no family declares it (keys: {', '.join(every)}; or --key column:NAME)"
    )


def _column_frame(path: str, column: str) -> pl.DataFrame:
    """``record, split, key`` from a plain table's column (a list column is set-valued)."""
    import polars as pl

    from curate.io.read import SPLIT_FROM_LAYOUT, check_inputs, read_frame

    check_inputs([path])
    df, src = read_frame(path)
    if column not in df.columns:
        shown = ", ".join(c for c in df.columns if c != SPLIT_FROM_LAYOUT)
        raise InputError(f"no column {column!r} (columns: {shown})", path=path)
    if nested := src.nested_cells.get(column):
        # a list or an object, read as its JSON text: with its keys sorted, so that two files
        # writing one object's fields in another order (a remaster's writer) hold the same
        # value, as `curate diff` finds (found by a new-user review: 0 of 49 shared)
        import orjson

        cells = df[column].to_list()
        for i in nested:
            cells[i] = orjson.dumps(orjson.loads(cells[i]), option=orjson.OPT_SORT_KEYS).decode()
        df = df.with_columns(pl.Series(column, cells, dtype=pl.String))
    split = (
        pl.col("split").cast(pl.String)
        if "split" in df.columns
        else pl.col(SPLIT_FROM_LAYOUT)
        if SPLIT_FROM_LAYOUT in df.columns
        else pl.lit(None, pl.String)
    )
    return df.select(
        pl.int_range(pl.len()).cast(pl.String).alias("record"),
        split.alias("split"),
        pl.col(column).alias("key"),
    )


def _key_frame(path: str, key: str, family: str | None) -> tuple[pl.DataFrame, bool]:
    """The ``record, split, key`` frame of one input and whether the key is text."""
    if key.startswith("column:"):
        column = key.removeprefix("column:")
        if not column:
            raise UsageError("--key column:NAME needs a column name")
        return _column_frame(path, column), True
    fam, spec = _find_key(key, family)
    from curate.io.read import check_inputs

    check_inputs([path])
    data = fam.load([path])
    assert spec.table is not None  # overlap_keys offers only keys with a table
    _say_left_out(path, fam, data)
    return spec.table(data), spec.text


def _say_left_out(path: str, fam: Any, data: Any) -> None:
    """One line on stderr when records of ``path`` fail the schema: a family's keys are of
    its valid records, so those are in no collection (a test split of invalid rows would be
    missing from the matrix without a word, and a ``--fail-above`` gate pass on it)."""
    from curate.families.base import count_invalid

    invalid = fam.invalid_records(data)
    if n := (count_invalid(invalid) if invalid.height else 0):
        typer.echo(
            f"curate: {path}: {n} invalid record{'s' if n != 1 else ''} left out of the "
            f"overlap (curate validate {fam.name} {path} lists them)",
            err=True,
        )


def _explode(df: pl.DataFrame) -> pl.DataFrame:
    """A set-valued key (a list column) as one row per value."""
    import polars as pl

    if isinstance(df.schema["key"], pl.List):
        df = df.explode("key")
    return df.with_columns(pl.col("key").cast(pl.String)).filter(pl.col("key").is_not_null())


def collect_members(
    paths: list[str], key: str | None, family: str | None, by: By
) -> tuple[pl.DataFrame, list[str], bool]:
    """Members (``collection, key``), the collection order, and whether the key is text."""
    import polars as pl

    from curate.overlap.sets import members_from_sets, read_sets_file

    if key is None:
        sets: dict[str, list[Any]] = {}
        for p in paths:
            if not Path(p).is_file():
                what = "a folder, not a file" if Path(p).is_dir() else "no such file"
                raise InputError(
                    f"{what} (without --key, inputs are JSON sets files; a dataset needs --key)",
                    path=p,
                )
            for name, items in read_sets_file(p).items():
                if name in sets:
                    raise UsageError(f"set {name!r} is named in two sets files")
                sets[name] = items
        if by is By.split_:
            raise UsageError(
                "--by split needs dataset files and a --key; a sets file has no splits"
            )
        return members_from_sets(sets), list(sets), False
    frames = []
    names: list[str] = []
    text = False
    for path, name in zip(paths, _names_for(paths), strict=True):
        df, text = _key_frame(path, key, family)
        df = _explode(df)
        if df.height == 0:  # a wrong file (every record invalid) or a wrong key: not "no overlap"
            raise InputError(f"no {key} keys in this input (no valid record has one)", path=path)
        if by is By.dataset:
            frames.append(df.select(pl.lit(name).alias("collection"), "key"))
            names.append(name)
            continue
        if df["split"].null_count() == df.height:
            raise InputError("no split in this input (use --by dataset)", path=path)
        splits = df["split"].fill_null("(none)").unique(maintain_order=True).to_list()
        prefix = f"{name}/" if len(paths) > 1 else ""
        frames.append(
            df.select(
                (pl.lit(prefix) + pl.col("split").fill_null("(none)")).alias("collection"), "key"
            )
        )
        names += [prefix + s for s in splits]
    members = pl.concat(frames) if frames else pl.DataFrame(schema={"collection": pl.String})
    return members, names, text


# --------------------------------------------------------------------------- rendering


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def render_text(o: Overlap, title: str, near: pl.DataFrame | None) -> str:
    import polars as pl

    lines = [title, ""]
    w = max(len(n) for n in o.names) if o.names else 4
    lines.append(f"{'collection':<{w}}  {'keys':>9}  {'rows':>9}")
    for r in o.sizes.iter_rows(named=True):
        lines.append(f"{r['collection']:<{w}}  {r['size']:>9,}  {r['rows']:>9,}")
    shared = o.pairs.filter(pl.col("intersection") > 0).sort(
        ["jaccard", "a", "b"], descending=[True, False, False]
    )
    lines += ["", f"pairs sharing keys: {shared.height} of {o.pairs.height}"]
    for r in shared.iter_rows(named=True):
        lines.append(
            f"  {r['a']} & {r['b']}: {r['intersection']:,} shared, Jaccard {r['jaccard']:.4f}; "
            f"{_pct(r['a_in_b'])} of {r['a']} is in {r['b']}, {_pct(r['b_in_a'])} of "
            f"{r['b']} in {r['a']}"
        )
    lines += ["", "intersections (UpSet: keys held by exactly these collections):"]
    for r in o.intersections.iter_rows(named=True):
        who = " & ".join(r["members"]) + (" only" if r["degree"] == 1 else "")
        ex = ", ".join(repr(x) for x in r["examples"])
        lines.append(f"  {r['count']:>9,}  {who}  (e.g. {ex})")
    if o.merged.height:
        lines += ["", "merged by normalisation / aliases (normalised key <- raw spellings):"]
        for r in o.merged.iter_rows(named=True):
            lines.append(
                f"  {r['key']!r} <- "
                + ", ".join(repr(v) for v in r["variants"])
                + f"  [{', '.join(r['collections'])}]"
            )
    if near is not None:
        lines += ["", *_near_lines(near)]
    return "\n".join(lines) + "\n"


def _near_lines(near: pl.DataFrame) -> list[str]:
    lines = [f"near-duplicate texts: {near.height} pairs"]
    for r in near.head(50).iter_rows(named=True):
        lines.append(
            f"  exact {r['exact']:.3f} (est. {r['estimated']:.3f})  [{r['in_a']}] {r['text_a']!r}"
            f"  ~  [{r['in_b']}] {r['text_b']!r}"
        )
    if near.height > 50:
        lines.append(f"  ... ({near.height - 50} more; --format json lists all)")
    return lines


def render_markdown(o: Overlap, title: str, near: pl.DataFrame | None) -> str:
    """The overlap as GitHub Markdown tables, for a pull request. Names and keys are data: each
    is escaped for its cell (a ``|`` split the row, a line break ended the table; found by a
    new-user review), keys as code spans."""
    from curate.reports.render import md_code, md_escape

    def code(text: Any) -> str:
        return md_code(str(text)).replace("|", "\\|")  # GFM: a pipe ends a cell, even in code

    lines = [f"## {md_escape(title)}", "", "| collection | keys | rows |", "|---|---:|---:|"]
    lines += [
        f"| {md_escape(r['collection'])} | {r['size']} | {r['rows']} |"
        for r in o.sizes.iter_rows(named=True)
    ]
    m = o.matrix("jaccard")
    names = [md_escape(n) for n in o.names]
    lines += ["", "### Jaccard index", "", "| | " + " | ".join(names) + " |"]
    lines.append("|---|" + "---:|" * len(o.names))
    for i, name in enumerate(names):
        lines.append(f"| {name} | " + " | ".join(f"{v:.4f}" for v in m[i]) + " |")
    lines += [
        "",
        "### Intersections (UpSet)",
        "",
        "| keys | collections | examples |",
        "|---:|---|---|",
    ]
    for r in o.intersections.iter_rows(named=True):
        ex = ", ".join(code(x) for x in r["examples"])
        members = " & ".join(md_escape(m) for m in r["members"])
        lines.append(f"| {r['count']} | {members} | {ex} |")
    if o.merged.height:
        lines += ["", "### Merged by normalisation", "", "| key | raw spellings |", "|---|---|"]
        for r in o.merged.iter_rows(named=True):
            lines.append(
                f"| {code(r['key'])} | " + ", ".join(code(v) for v in r["variants"]) + " |"
            )
    if near is not None:
        lines += ["", "### Near-duplicate texts", "", "```", *_near_lines(near), "```"]
    return "\n".join(lines) + "\n"


def render_html(o: Overlap, title: str, near: pl.DataFrame | None) -> str:
    """The HTML page with the UpSet plot and the Jaccard heat map embedded (as SVG)."""
    from curate.core.plots import Plot
    from curate.overlap.plot import close, heatmap_figure, upset_figure
    from curate.reports.html import render_overlap

    figures = [upset_figure(o), heatmap_figure(o)]
    try:
        plots = [
            Plot(
                "UpSet plot",
                "Keys held by exactly the collections marked below each bar; set sizes at the "
                "left.",
                figures[0],
            ),
            Plot(
                "Jaccard index",
                "Shared keys over the keys of either collection, for every pair.",
                figures[1],
            ),
        ]
        return render_overlap(o, title, near, plots)
    finally:
        close(*figures)


def _same_path(a: Path, b: Path) -> bool:
    """Do two destinations of one run name the same file (the later would replace the other)?"""
    import os

    return os.path.realpath(a) == os.path.realpath(b)


#: A CSV file can carry no generator mark (a comment line breaks readers), so curate knows its
#: own by the exact header it writes (:func:`render_csv`) on the first line.
CSV_MARK = re.compile(
    rb"\A" + re.escape(b"a,b,size_a,size_b,intersection,union,jaccard,a_in_b,b_in_a") + rb"\r?\n"
)


def render_csv(o: Overlap) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(o.pairs.columns)
    for row in o.pairs.iter_rows():
        w.writerow(row)
    return buf.getvalue()


# --------------------------------------------------------------------------- near duplicates


def near_duplicate_pairs(
    members: pl.DataFrame, threshold: float, shingles: str, permutations: int
) -> pl.DataFrame:
    """Near-duplicate pairs among the distinct texts, each with the collections holding it:
    the shared text pair source (:func:`curate.audits.shared.near.similar_texts`, MinHash +
    LSH with the exact Jaccard checked), the rules' near-duplicate code."""
    import polars as pl

    from curate.audits.shared.near import similar_texts

    where = members.group_by("key", maintain_order=True).agg(
        pl.col("collection").unique(maintain_order=True).str.join(", ").alias("where")
    )
    found = similar_texts(
        members, "key", threshold=threshold, shingles=shingles, permutations=permutations
    )
    return (
        found.join(
            where.rename({"key": "key_a", "where": "in_a"}),
            on="key_a",
            how="left",
            maintain_order="left",
        )
        .join(
            where.rename({"key": "key_b", "where": "in_b"}),
            on="key_b",
            how="left",
            maintain_order="left",
        )
        .select(
            "estimated",
            "exact",
            pl.col("key_a").alias("text_a"),
            "in_a",
            pl.col("key_b").alias("text_b"),
            "in_b",
        )
    )


# --------------------------------------------------------------------------- the command


@overlap_app.command("overlap", cls=LightCommand)
def overlap_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Dataset files (with --key), or JSON sets files {name: [items]} (without).",
            metavar="INPUTS",
        ),
    ],
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            help="What to compare: a key a family declares (fact, question, glycan, task, ...) "
            "or column:NAME for any table's column (a list column counts each value). Not "
            "needed for sets files.",
        ),
    ] = None,
    family: Annotated[
        str | None, typer.Option("--family", help="The family whose --key is meant.")
    ] = None,
    by: Annotated[
        By,
        typer.Option(
            "--by",
            help="Collections: each input file, or each split of each.",
            case_sensitive=False,
        ),
    ] = By.dataset,
    normalize: Annotated[
        bool,
        typer.Option(
            "--normalize",
            help="Match names after Unicode NFKC, lower case, punctuation to spaces, spaces "
            "collapsed (default: exact match); the output lists what merged.",
        ),
    ] = False,
    aliases: Annotated[
        Path | None,
        typer.Option(
            "--aliases", help="Alias table variant -> canonical (CSV with two columns, or JSON)."
        ),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Write the UpSet plot as PATH.png and PATH.svg (both, whatever the suffix) and "
            "the Jaccard heat map as PATH-jaccard.png and PATH-jaccard.svg.",
        ),
    ] = None,
    fmt: Annotated[
        OverlapFormat,
        typer.Option(
            "--format",
            "-f",
            help="Output format (html: one self-contained page with the UpSet plot and the "
            "Jaccard heat map embedded).",
            case_sensitive=False,
        ),
    ] = OverlapFormat.text,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "--out",
            "-o",
            help="Write the report here (atomically; an existing file only if curate wrote "
            "it, or with --overwrite; never over an input).",
        ),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="Replace an existing --output or --plot file curate did not write (its own "
            "are replaced anyway; an input never is).",
        ),
    ] = False,
    fail_above: Annotated[
        float | None,
        typer.Option(
            "--fail-above",
            min=0.0,
            max=1.0,
            help="Exit 1 when some pair's Jaccard index is above this (0: any shared key).",
        ),
    ] = None,
    near_duplicates: Annotated[
        bool,
        typer.Option(
            "--near-duplicates",
            help="Also find near-duplicate texts of the key (MinHash + LSH, exact Jaccard "
            "checked).",
        ),
    ] = False,
    threshold: Annotated[
        float,
        typer.Option(
            "--threshold", min=0.01, max=1.0, help="Near-duplicate Jaccard threshold (shingles)."
        ),
    ] = 0.8,
    shingles: Annotated[
        str,
        typer.Option("--shingles", help="char:K (character K-grams) or word:N (word N-grams)."),
    ] = "char:5",
    permutations: Annotated[
        int, typer.Option("--permutations", min=8, max=4096, help="MinHash signature length.")
    ] = 128,
) -> None:
    """Pairwise Jaccard index, containment and shared counts, plus UpSet intersections, of the
    keys of several datasets, splits or named sets."""
    import polars as pl

    from curate.audits.shared.minhash import parse_shingles
    from curate.core.outputs import guard_file
    from curate.overlap.sets import load_aliases, normalise_members, overlap

    parse_shingles(shingles)  # a typo is exit 2 before any input is read
    # every file this run reads is an input: the alias table as much as the data
    inputs: list[str | Path] = [*paths, *([aliases] if aliases is not None else [])]
    if plot is not None:
        from curate.overlap.plot import MARKER, plot_paths

        for target in plot_paths(plot):
            guard_file(target, inputs, option="--plot", marker=MARKER, overwrite=overwrite)
            if output is not None and _same_path(output, target):
                raise UsageError(f"--output {output}: is also a --plot file; give another name")
    if output is not None and str(output) != "-":
        guard_file(
            output,
            inputs,
            overwrite=overwrite,
            marker=CSV_MARK if fmt is OverlapFormat.csv else None,
        )
    table = load_aliases(aliases) if aliases is not None else None
    members, names, is_text = collect_members(paths, key, family, by)
    if near_duplicates and key is None:
        raise UsageError("--near-duplicates needs a text --key (e.g. question, column:NAME)")
    if near_duplicates and not is_text:
        raise UsageError(f"--near-duplicates: key {key!r} is an identifier, not text")
    members, merged = normalise_members(members, normalize=normalize, aliases=table)
    result = overlap(members, names)
    result.merged = merged
    near = (
        near_duplicate_pairs(members, threshold, shingles, permutations)
        if near_duplicates
        else None
    )
    how = "exact match" if not (normalize or table) else "normalised" if normalize else "aliased"
    if normalize and table:
        how = "normalised + aliases"
    title = f"overlap of {len(names)} collections by {key or 'set items'} ({how})"
    if fmt is OverlapFormat.json:
        doc = {"tool": "curate", "version": __version__, "title": title, **result.to_json()}
        if near is not None:
            doc["near_duplicates"] = near.to_dicts()
        text = orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"
    elif fmt is OverlapFormat.csv:
        text = render_csv(result)
    elif fmt is OverlapFormat.markdown:
        text = render_markdown(result, title, near)
    elif fmt is OverlapFormat.html:
        text = render_html(result, title, near)
    else:
        text = render_text(result, title, near)
    terminal.emit(text, output, fmt)
    if plot is not None:
        from curate.overlap.plot import write_plots

        for written in write_plots(result, plot, title=title, overwrite=overwrite, inputs=inputs):
            typer.echo(f"wrote {written}", err=True)
    if fail_above is not None:
        worst = result.pairs.filter(pl.col("jaccard") > fail_above)
        if worst.height:
            r = worst.sort("jaccard", descending=True).row(0, named=True)
            typer.echo(
                f"curate: {worst.height} pair(s) above Jaccard {fail_above:g}; highest "
                f"{r['a']} & {r['b']}: {r['jaccard']:.4f} ({r['intersection']} shared)",
                err=True,
            )
            raise typer.Exit(1)
