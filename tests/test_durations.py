"""``--durations``: where an audit's time goes, for every family, on the real samples.

The figures are wall times, so the tests check structure and accounting (every stage and rule
present, non-negative, summing to no more than the run took, a shared table charged to itself
and not to the rule that first asked for it), never a particular speed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import curate
from curate.audits.knowledge_editing import RULES as KE_RULES
from curate.cli.main import main
from curate.families import get_family

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "curate" / "data" / "samples"


def _samples() -> list[tuple[str, Path]]:
    found = [("mquake", SAMPLES / "mquake_sample.json")]
    found += [("glycan", p) for p in sorted(SAMPLES.glob("*glycan*.csv"))[:1]]
    found += [("icrl", p) for p in sorted(SAMPLES.glob("xland*.hdf5"))[:1]]
    return found


@pytest.mark.parametrize(("family", "path"), _samples(), ids=lambda v: str(v))
def test_json_report_gets_a_durations_object(capsys, family: str, path: Path) -> None:
    capsys.readouterr()
    t0 = time.perf_counter()
    rc = main(["audit", family, str(path), "--durations", "-f", "json"])
    wall = time.perf_counter() - t0
    out = capsys.readouterr().out
    assert rc in (0, 1)
    report = json.loads(out)
    d = report["durations"]
    stages = list(d)
    assert stages[0] == "load" and stages[-1] == "render"
    rules = [k for k in d if k[:2].isalpha() and k[2:].isdigit()]
    assert rules == [r.code for r in get_family(family).rules]  # every rule, in run order
    assert all(isinstance(v, float) and v >= 0 for v in d.values())
    assert sum(d.values()) <= wall + 0.01


def test_text_report_ends_with_the_stages_slowest_first(capsys) -> None:
    capsys.readouterr()
    main(["audit", "mquake", str(SAMPLES / "mquake_sample.json"), "--durations"])
    out = capsys.readouterr().out
    block = out[out.index("durations (wall seconds") :].splitlines()
    seconds = [float(line.split()[0]) for line in block[1:]]
    stages = [line.split("%", 1)[1].strip() for line in block[1:]]
    assert seconds == sorted(seconds, reverse=True)
    assert {"load", "render", "summary", "KE201", "KE401"} <= set(stages)
    assert any(s.startswith("shared table ") for s in stages)


def test_reports_without_the_flag_have_no_timings(capsys) -> None:
    """Same input → same report: times appear only when asked for."""
    capsys.readouterr()
    main(["audit", "mquake", str(SAMPLES / "mquake_sample.json"), "-f", "json"])
    assert "durations" not in json.loads(capsys.readouterr().out)
    main(["audit", "mquake", str(SAMPLES / "mquake_sample.json")])
    assert "durations (wall" not in capsys.readouterr().out


def test_a_shared_table_is_charged_to_itself(monkeypatch) -> None:
    """``case_keys`` feeds KE401 and KE402; a slow build shows as the table's own stage and in
    neither rule, however the rules are ordered."""
    build = KE_RULES.tables["case_keys"]

    def slow(ctx):
        time.sleep(0.3)
        return build(ctx)

    monkeypatch.setitem(KE_RULES.tables, "case_keys", slow)
    report = curate.audit("mquake", SAMPLES / "mquake_sample.json", select=["KE4"])
    d = report.durations
    assert d["table:case_keys"] >= 0.3
    assert d["KE401"] < 0.3 and d["KE402"] < 0.3
    assert next(iter(d)) == "load"


def test_a_table_built_by_another_tables_builder_is_charged_once() -> None:
    """A shared table whose builder asks for another: each is charged its own time, so a rule's
    time (the wall time less the tables') cannot come out negative (TB301 showed -0.005 s)."""
    from curate.core.rules import AuditContext

    def inner(ctx: AuditContext) -> int:
        time.sleep(0.2)
        return 1

    def outer(ctx: AuditContext) -> int:
        return ctx.table("inner") + 1

    ctx = AuditContext(None, None, {"inner": inner, "outer": outer})
    t0 = time.perf_counter()
    assert ctx.table("outer") == 2
    wall = time.perf_counter() - t0
    assert ctx.seconds["inner"] >= 0.2 and ctx.seconds["outer"] < 0.1
    assert ctx.table_seconds() <= wall
