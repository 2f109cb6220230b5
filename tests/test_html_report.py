"""The HTML report (``--format html``): self-contained, escaped, deterministic, with each family's
plots — checked on the page's bytes and, in a real headless Chromium, on what a reader sees.

The browser tests use Debian's ``chromium`` (``.ci/run`` installs it) through Playwright's Python
API, never a downloaded browser. Without it they skip, saying so; with ``CI`` set they fail: a
green CI run must not claim a rendering it never checked.
"""

from __future__ import annotations

import base64
import os
import re
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from curate import api
from curate.cli.main import main
from curate.core.plots import Plot, plot_bytes
from curate.families import get_family
from curate.reports.html import (
    GENERATOR,
    embedded_findings,
    family_plots,
    render_audit,
    script_json,
)
from curate.reports.verdict import single

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "curate" / "data" / "samples"
XLAND = SAMPLES / "xland_format_sample_9x9_random.hdf5"
GLYCANS = SAMPLES / "glycan_taxonomy_sample.csv"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
#: A record id that would run script if any part of the page put it into markup unescaped.
EVIL = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
TAXONOMY = "Species,Genus,Family,Order,Class,Phylum,Kingdom,Domain"
LINEAGE = "Homo_sapiens,Homo,Hominidae,Primates,Mammalia,Chordata,Animalia,Eukarya"


def run(capsys, *argv: Any) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def evil_csv(tmp_path: Path) -> Path:
    """A glycan taxonomy table whose record ids are markup: the same glycan in train and test
    (GL402 names the test record), so findings carry the ids into the page."""
    p = tmp_path / "evil.csv"
    rows = [
        f"id,glycan,{TAXONOMY},split",
        f"a1,Gal(b1-4)Glc,{LINEAGE},train",
        f'"{EVIL.replace(chr(34), chr(34) * 2)}",Gal(b1-4)Glc,{LINEAGE},test',
        f"a3,Man(a1-3)Man,{LINEAGE},train",
        f'"</script><b>x&amp;</b>",Man(a1-3)Man,{LINEAGE},test',
    ]
    p.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return p


def audit_page(family: str, path: Path, **options: Any) -> str:
    data = api.load(family, [str(path)], **options)
    report = get_family(family).audit(data)
    return render_audit(report, data=data)


class _Tags(HTMLParser):
    """Every start tag of a page, with its attributes (what a browser would load)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    p = _Tags()
    p.feed(page)
    return p.tags


# --------------------------------------------------------------------------- the page's bytes


def test_record_ids_are_escaped_everywhere(tmp_path):
    page = audit_page("glycan", evil_csv(tmp_path))
    assert "GL402" in page
    assert EVIL not in page and "<script>window" not in page and "<img src=x" not in page
    assert "</script><b>" not in page
    # outside the findings' JSON (where it is inert text) the attribute is not there either
    markup = re.sub(r'<script type="application/json".*?</script>', "", page, flags=re.S)
    assert "onerror" not in markup and "window.__pwned" not in markup
    # exactly two script elements: the findings' JSON and the page's own script
    scripts = [a for t, a in tags(page) if t == "script"]
    assert [a.get("type") for a in scripts] == ["application/json", None]
    assert not any(
        t in ("img",) and not (a.get("src") or "").startswith("data:") for t, a in tags(page)
    )
    # the JSON cannot end its element: no "<" at all in it, yet it decodes to the exact id
    body = re.search(r'<script type="application/json" id="findings-0">(.*?)</script>', page, re.S)
    assert body is not None and "<" not in body.group(1)
    import orjson

    doc = orjson.loads(body.group(1))
    assert EVIL in [r[doc["columns"].index("record")] for r in doc["rows"]]


def test_script_json_escapes_what_ends_a_script_element():
    text = script_json({"x": "</script><!-- & \u2028"})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    import orjson

    assert orjson.loads(text) == {"x": "</script><!-- & \u2028"}


def test_page_loads_nothing_from_outside(hard_path):
    page = audit_page("mquake", hard_path)
    found = tags(page)
    for tag, attrs in found:
        for name in ("src", "href", "srcset", "poster", "data", "action", "formaction"):
            value = attrs.get(name)
            if value is None:
                continue
            assert value.startswith(
                ("data:image/svg+xml;base64,", "data:image/png;base64,", "#")
            ), (
                tag,
                name,
                value[:80],
            )
    assert not any(t == "script" and "src" in a for t, a in found)
    assert not any(t == "link" for t, _ in found)  # no stylesheet, font or icon
    assert "@import" not in page and "url(" not in page and "@font-face" not in page
    # and the page forbids the browser to load anything else
    csp = next(a["content"] for t, a in found if t == "meta" and a.get("http-equiv"))
    assert "default-src 'none'" in (csp or "")
    # every image is a plot, decodable
    images = [a["src"] for t, a in found if t == "img"]
    assert len(images) == 3  # findings per rule, hops per case, edits per case
    for src in images:
        assert base64.b64decode(src.split(",", 1)[1]).lstrip().startswith((b"<?xml", b"<svg"))


def test_same_input_same_bytes(capsys, tmp_path):
    a, b = tmp_path / "a.html", tmp_path / "b.html"
    for target in (a, b):
        rc, _, err = run(capsys, "audit", "icrl", XLAND, "--format", "html", "--out", target)
        assert rc == 0, err
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes().startswith(b"<!DOCTYPE html>")
    # and a figure saved twice in this process is the same bytes too
    from curate.core.plots import bars

    fig = bars([("x", 1.0), ("y", 2.0)])
    assert plot_bytes(fig) == plot_bytes(fig)
    assert plot_bytes(fig, "png") == plot_bytes(fig, "png")


def test_plot_takes_figures_and_image_bytes():
    from curate.core.plots import bars

    svg = plot_bytes(bars([("a", 3.0)]))[1]
    png = plot_bytes(bars([("a", 3.0)]), "png")[1]
    assert Plot("t", "c", svg).image() == ("image/svg+xml", svg)
    assert Plot("t", "c", png).image() == ("image/png", png)
    with pytest.raises(ValueError):
        Plot("t", "c", b"GIF89a...").image()
    # no date, no version, no link to matplotlib's site in the metadata
    assert b"<dc:date>" not in svg and b"matplotlib.org" not in svg


def test_html_output_never_replaces_a_page_curate_did_not_write(capsys, tmp_path):
    mine = tmp_path / "index.html"
    mine.write_text("<html><body>my notes</body></html>", encoding="utf-8")
    rc, _, err = run(capsys, "audit", "icrl", XLAND, "-f", "html", "-o", mine)
    assert rc == 2 and "not written by curate" in err and len(err.strip().splitlines()) == 1
    assert mine.read_text("utf-8") == "<html><body>my notes</body></html>"
    ours = tmp_path / "report.html"
    for _ in range(2):  # written, then replaced: it carries curate's generator tag
        rc, _, err = run(capsys, "audit", "icrl", XLAND, "-f", "html", "-o", ours)
        assert rc == 0, err
    assert GENERATOR in ours.read_bytes()[:4096]
    # every format has the same rule now (issue 30): a file curate did not write is replaced
    # only with --overwrite
    notes = tmp_path / "out.json"
    notes.write_text("{}", encoding="utf-8")
    assert run(capsys, "audit", "icrl", XLAND, "-f", "json", "-o", notes)[0] == 2
    assert notes.read_text("utf-8") == "{}"
    assert run(capsys, "audit", "icrl", XLAND, "-f", "json", "-o", notes, "--overwrite")[0] == 0
    assert notes.read_text("utf-8").startswith('{\n  "tool": "curate"')


def test_many_findings_are_capped_with_every_rule_kept(hard_path):
    data = api.load("mquake", [str(hard_path)], edit_set="all")
    report = get_family("mquake").audit(data)
    d = single(report).datasets[0]
    per_rule = d.findings.group_by("rule").len()
    shown = embedded_findings(d, limit=12)
    assert shown.height <= 12
    assert set(shown["rule"]) == set(per_rule["rule"])  # KE110 (23) does not crowd out KE302 (4)
    got = dict(shown.group_by("rule").len().iter_rows())
    assert got["KE302"] == 4 and got["KE401"] == 4 and got["KE110"] == 4
    # report order kept: rows ascend
    assert shown["row"].to_list() == sorted(shown["row"].to_list())
    assert embedded_findings(d).height == d.findings.height


# --------------------------------------------------------------------------- the plots hook


def _titles(plots: list) -> list[str]:
    assert all(isinstance(p, Plot) for p in plots), plots  # a string is a failed plot
    return [p.title for p in plots]


def test_knowledge_editing_plots(hard_path):
    data = api.load("mquake", [str(hard_path)], edit_set="random:100")
    report = get_family("mquake").audit(data)
    plots = family_plots(get_family("mquake"), data, report)
    assert _titles(plots) == ["Hops per case", "Edits per case"]
    assert "random:100" in plots[1].caption
    for p in plots:
        mime, data_ = p.image()
        assert mime == "image/svg+xml" and len(data_) > 1000


def test_glycan_plots(glycan_sample_csv):
    data = api.load("glycan", [str(glycan_sample_csv)])
    fam = get_family("glycan")
    report = fam.audit(data)
    plots = family_plots(fam, data, report)
    titles = _titles(plots)
    assert titles[0].startswith("Label distribution per split: ")
    assert titles[1] == "Classes per taxonomy level"
    splits = data.record_splits()
    assert splits is not None and set(splits["split"].drop_nulls()) >= {"train", "test"}


def test_icrl_plots_come_from_the_audits_scan():
    fam = get_family("icrl")
    data = api.load("icrl", [str(XLAND)])
    report = fam.audit(data)
    assert _titles(family_plots(fam, data, report)) == [
        "Mean episode return per history, by task",
        "Episode length",
    ]
    # --metadata-only read no array: the plots do not read them either
    meta = api.load("icrl", [str(XLAND)], metadata_only=True)
    report = fam.audit(meta)
    assert family_plots(fam, meta, report) == []
    assert meta._scanned is None


def _deepfake_csv(folder: Path) -> Path:
    """The generated ILLUSION-like manifest with planted defects, as a CSV (no media files:
    audited with --no-files)."""
    from deepfake_data import defective_manifest

    path = folder / "manifest.csv"
    defective_manifest().frame().write_csv(path)
    return path


def test_deepfake_plots(tmp_path):
    fam = get_family("deepfake")
    data = api.load("deepfake", [str(_deepfake_csv(tmp_path))], no_files=True)
    report = fam.audit(data)
    plots = family_plots(fam, data, report)
    assert _titles(plots) == [
        "Samples per modality and label, per split",
        "Fake samples per generator, per split",
        "Demographic balance: sex × skin tone, per split and label",
    ]
    for p in plots:
        mime, body = p.image()
        assert mime == "image/svg+xml" and len(body) > 1000
    splits = data.record_splits()
    assert splits is not None and set(splits["split"].drop_nulls()) == {
        "train",
        "validation",
        "test",
    }


def test_a_failing_plot_is_a_note_not_a_lost_report(monkeypatch, hard_path):
    fam = get_family("mquake")

    def broken(self, data, report, ctx):
        raise RuntimeError("boom")

    monkeypatch.setattr(type(fam), "plots", broken)
    data = api.load("mquake", [str(hard_path)])
    page = render_audit(fam.audit(data), data=data)
    assert "plots could not be drawn: RuntimeError: boom" in page
    assert "KE401" in page and page.count("<img ") == 1  # findings per rule still drawn


def test_plots_cost_stays_small_on_many_rows():
    """Aggregated first: 1 M cases' worth of hop counts are one group-by and a few bars."""
    import time

    from curate.core.rules import AuditContext
    from curate.families.knowledge_editing_plots import ke_plots
    from curate.schemas.knowledge_editing_tables import KEData

    n = 1_000_000
    cases = pl.DataFrame(
        {
            "row": pl.int_range(n, eager=True),
            "split": pl.Series(["train", "test"] * (n // 2)),
            "n_triples": (pl.int_range(n, eager=True) % 3 + 2).cast(pl.Int32),
            "n_rewrites": (pl.int_range(n, eager=True) % 4 + 1).cast(pl.Int32),
        }
    )
    data = KEData(family="mquake", inputs=[], schema_findings=pl.DataFrame(), cases=cases)
    ctx = AuditContext(data, None, {"edited": lambda c: pl.Series([True, False] * (n // 2))})
    report = type("R", (), {"options": {"edit_set": "half"}})()
    t0 = time.perf_counter()
    plots = ke_plots(data, report, ctx)  # type: ignore[arg-type]
    for p in plots:
        p.image()
    assert len(plots) == 2
    assert time.perf_counter() - t0 < 10  # ~1 s here; a per-row plot would take minutes


# --------------------------------------------------------------------------- in Chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM) and shutil.which("chromium") is None:
        reason = f"Debian's chromium is not installed ({CHROMIUM}); `apt-get install -y chromium`"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI is set, so this fails instead of skipping", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


def open_page(
    browser: Any,
    path: Path,
    ready: str = "section.findings[data-ready], p:has-text('No findings.')",
) -> tuple[Any, list[str]]:
    page = browser.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda m: (
            problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning")
            else None
        ),
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.on(
        "request",
        lambda r: (
            problems.append(f"request: {r.url}")
            if not r.url.startswith(("file:", "data:"))
            else None
        ),
    )
    page.goto(path.as_uri())
    page.wait_for_selector(ready)
    return page, problems


def rendered_plots(page: Any) -> list[float]:
    """The natural width of every plot image, once each has decoded (0: not rendered)."""
    return page.eval_on_selector_all(
        "figure.plot img",
        """els => Promise.all(els.map(e => e.decode().then(() => e.naturalWidth, () => 0)))""",
    )


def visible_rules(page: Any) -> list[str]:
    return page.eval_on_selector_all("tr.finding td.c-rule", "els => els.map(e => e.textContent)")


@pytest.mark.parametrize(
    ("family", "which", "plots"),
    [
        ("mquake", "hard", 3),
        ("glycan", "glycan", 5),  # 3 + GL305's given-vs-suggested at two levels
        ("icrl", "icrl", 3),
        ("deepfake", "deepfake", 4),
    ],
)
def test_report_renders_in_chromium(browser, capsys, tmp_path, shared, family, which, plots):
    path = {
        "hard": lambda: shared("data/mquake/MQuAKE-hard.json"),
        "glycan": lambda: shared("data/glycan/glycowork_sample.csv"),
        "icrl": lambda: XLAND,
        "deepfake": lambda: _deepfake_csv(tmp_path),
    }[which]()
    out = tmp_path / f"{family}.html"
    extra = ["--no-files"] if family == "deepfake" else []
    rc, _, err = run(capsys, "audit", family, path, *extra, "--format", "html", "--out", out)
    assert rc in (0, 1), err
    page, problems = open_page(browser, out)
    widths = rendered_plots(page)
    assert len(widths) == plots and all(w > 0 for w in widths), widths
    boxes = page.eval_on_selector_all(
        "figure.plot img", "els => els.map(e => e.getBoundingClientRect().height)"
    )
    assert all(h > 0 for h in boxes)
    # the filter: choose a rule, then type its code; only its findings are listed
    counts = dict(
        (r.split("\t")[0], int(r.split("\t")[1]))
        for r in page.eval_on_selector_all(
            "table.rules tbody tr",
            "els => els.map(e => e.cells[0].textContent + '\\t'"
            " + e.cells[4].textContent.replace(/,/g, ''))",
        )
    )
    found = {k: v for k, v in counts.items() if v}
    assert found, "every sample has findings"
    code = min(found, key=lambda k: (found[k], k))
    page.fill(".f-text", code)
    page.press(".f-text", "Enter")
    shown = visible_rules(page)
    assert shown and set(shown) == {code} and len(shown) == min(found[code], 100)
    page.fill(".f-text", "")
    page.press(".f-text", "Enter")
    page.select_option(".f-rule", code)
    assert set(visible_rules(page)) == {code}
    page.select_option(".f-rule", "")
    page.fill(".f-text", "no finding says this 0x5f3759df")
    page.press(".f-text", "Enter")
    assert visible_rules(page) == []
    assert "0 matching findings" in page.inner_text(".f-info")
    # the rule's documentation opens from its link
    page.click(f"table.rules a.doc:text-is('{code}')")
    assert page.eval_on_selector(f"details#d0-{code}", "e => e.open") is True
    assert problems == []


def test_markup_in_record_ids_stays_text_in_chromium(browser, capsys, tmp_path):
    out = tmp_path / "evil.html"
    rc, _, err = run(capsys, "audit", "glycan", evil_csv(tmp_path), "-f", "html", "-o", out)
    assert rc == 1, err  # the leaked glycans are errors
    page, problems = open_page(browser, out)
    assert page.evaluate("window.__pwned") is None
    records = page.eval_on_selector_all(
        "tr.finding td.c-record", "els => els.map(e => e.textContent)"
    )
    assert EVIL in records and "</script><b>x&amp;</b>" in records
    assert (
        page.eval_on_selector_all(
            "tr.finding img, tr.finding b, tr.finding script", "e => e.length"
        )
        == 0
    )
    # the split filter lists the splits of the records
    splits = page.eval_on_selector_all(".f-split option", "els => els.map(e => e.value)")
    assert splits == ["", "test"] or splits == ["", "test", "train"]
    assert problems == []


def test_paging_keeps_a_large_table_responsive(browser, tmp_path):
    """Thousands of findings: 100 rows drawn per page, the filter runs over all of them."""
    from curate.core.findings import InputInfo, Report
    from curate.reports.html import render_check

    n = 30_000
    findings = pl.DataFrame(
        {
            "rule": ["GL402" if i % 3 else "GL303" for i in range(n)],
            "category": ["leakage"] * n,
            "severity": ["error" if i % 3 else "warning" for i in range(n)],
            "row": list(range(n)),
            "record": [f"r{i}" for i in range(n)],
            "field": ["glycan"] * n,
            "message": [f"message {i}" for i in range(n)],
            "details": ["{}"] * n,
        }
    )
    report = Report(
        "glycan", [InputInfo("big.csv", "0" * 64, n)], findings, rules_run=["GL303", "GL402"]
    )
    out = tmp_path / "big.html"
    out.write_text(render_check(single(report)), encoding="utf-8")
    page, problems = open_page(browser, out)
    assert page.eval_on_selector_all("tr.finding", "e => e.length") == 100
    assert "of 30000 matching findings" in page.inner_text(".f-info").replace(",", "")
    page.fill(".f-text", "r29999")
    page.press(".f-text", "Enter")
    assert page.eval_on_selector_all(
        "tr.finding td.c-record", "els => els.map(e => e.textContent)"
    ) == ["r29999"]
    page.fill(".f-text", "")
    page.press(".f-text", "Enter")
    page.select_option(".f-rule", "GL303")
    page.click(".f-next")
    assert "101–200 of 10000" in page.inner_text(".f-info")
    assert problems == []


def test_overlap_page_renders_its_plots_in_chromium(browser, capsys, tmp_path):
    """``curate overlap --format html``: the ILLUSION sets' page shows the UpSet plot and the
    Jaccard heat map, every published pair, and loads nothing from outside."""
    sets = SAMPLES / "illusion_technique_sets.json"
    out = tmp_path / "overlap.html"
    rc = main(["overlap", str(sets), "--format", "html", "--out", str(out)])
    assert rc == 0
    text = out.read_text("utf-8")
    assert "http://" not in text.replace("http://www.w3.org", "") and "<script src" not in text
    page, problems = open_page(browser, out, ready="figure.plot img")
    widths = rendered_plots(page)
    assert len(widths) == 2 and all(w > 0 for w in widths), widths
    body = page.inner_text("body")
    assert "DF-Platter" in body and "1.0000" in body  # DF-Platter & DeePhy share all three
    assert problems == []
    # a page curate did not write is never replaced
    foreign = tmp_path / "mine.html"
    foreign.write_text("<html>my notes</html>", "utf-8")
    capsys.readouterr()
    assert main(["overlap", str(sets), "--format", "html", "--out", str(foreign)]) == 2
    assert foreign.read_text("utf-8") == "<html>my notes</html>"
