"""The family contract (``curate/families/base.py``): the table of what a family says matches
the class, what an earlier contract had is refused when a family class is defined, and the
declarations that replaced it (the rules' ``invalid`` flag, ``@RULES.prepare``, ``card``) do
what the old members did, on the shipped samples."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from conftest import SAMPLE

import curate
import curate.families.base as base
from curate.audits.icrl.fixes import INVALID_RULES
from curate.core.errors import UsageError
from curate.families import get_family
from curate.families.base import RETIRED, Family
from curate.families.knowledge_editing import KnowledgeEditingFamily


def _names(paragraph_start: str) -> set[str]:
    """The ``member`` names of the docstring paragraph that starts with ``paragraph_start``."""
    doc = base.__doc__ or ""
    paragraph = doc[doc.index(paragraph_start) :].split("\n\n", 1)[0]
    return set(re.findall(r"``(\w+)``", paragraph))


def _table() -> dict[str, str]:
    """The contract table of the module docstring: member -> R or D."""
    doc = base.__doc__ or ""
    return dict(re.findall(r"^``(\w+)``\s+([RD])\s", doc, flags=re.MULTILINE))


def test_the_contract_table_lists_every_member_a_family_says() -> None:
    """Every public member of Family is in the table, or named as a fix member or provided;
    required means what the class requires (no default, or abstract). Nothing is kept for old
    callers: the retired members are gone from the class."""
    table = _table()
    fix = _names("Fix members")
    provided = {"options", "load", "audit"}
    members = {n for n in vars(Family) if not n.startswith("_")} | set(Family.__annotations__)
    assert members == set(table) | fix | provided
    assert not set(table) & (fix | provided)
    assert not members & set(RETIRED)
    required = {n for n, r in table.items() if r == "R"}
    abstract = set(Family.__abstractmethods__)
    declared_without_default = {n for n in Family.__annotations__ if n not in vars(Family)}
    assert required == abstract | declared_without_default == {"name", "rules", "read", "to_tables"}
    assert len(table) == 16  # the docstring says "Sixteen members, four of them required"


@pytest.mark.parametrize("name", sorted(RETIRED))
def test_a_family_declaring_a_retired_member_is_refused_at_class_definition(name: str) -> None:
    """Set on a subclass, an old member would be silently ignored (a card saying ``unknown``, an
    invalid record published): the class statement fails and names what replaced it."""
    with pytest.raises(TypeError, match=rf"Old\.{name} is no longer part of the Family contract"):
        type("Old", (KnowledgeEditingFamily,), {name: ()})
    assert RETIRED[name]  # the message says what to do instead


def test_invalid_rules_are_the_rules_flagged_invalid() -> None:
    """The flags on the rule declarations give each family the codes its tuple had."""
    expected = {
        "mquake": ("KE001", "KE003"),
        "glycan": ("GL001", "GL101", "GL102"),
        "deepfake": ("DF001",),
        "icrl": (
            *("RL001", "RL103", "RL104", "RL105", "RL107"),
            *("RL201", "RL202", "RL203", "RL204", "RL205", "RL206"),
            *("RL301", "RL302", "RL304"),
        ),
    }
    for name, codes in expected.items():
        fam = get_family(name)
        assert fam.rules.invalid == codes
        assert {r.code for r in fam.rules if r.invalid} == set(codes)
        assert all(fam.rules[c].severity.value == "error" for c in codes)
    assert expected["icrl"] == INVALID_RULES


def test_only_flagged_rules_make_a_record_invalid(tmp_path: Path) -> None:
    """A glycan that does not parse is GL101 (flagged) and its row is left out; the sample's
    other error findings (GL301, GL402: unflagged rules about well-formed rows) are not."""
    sample = SAMPLE.parent / "glycan_taxonomy_sample.csv"
    bad = tmp_path / "taxonomy.csv"
    text = sample.read_text(encoding="utf-8")
    bad.write_text(text.replace("GalA(a1-2)Rha(a1-4)GalA", "GalA(a1-2Rha(a1-4)GalA", 1))
    fam = get_family("glycan")
    data = fam.load(bad)
    invalid = fam.invalid_records(data)
    assert invalid["rule"].unique().to_list() == ["GL101"]
    assert invalid["row"].to_list() == [0]
    report = fam.audit(data)
    errors = set(report.findings.filter(report.findings["severity"] == "error")["rule"])
    assert {"GL101", "GL301", "GL402"} <= errors
    done = curate.export(fam, bad, tmp_path / "out")
    assert done.invalid_records == 1 and done.rows == data.inputs[0].records - 1


def test_prepare_checks_run_before_any_rule_whichever_are_selected() -> None:
    """KE's edit set is resolved by the rule set's ``prepare`` check: an impossible
    ``random:K`` is an error even when only a rule that never reads the edit set is chosen."""
    with pytest.raises(UsageError, match="K must be between 0 and 52 cases"):
        curate.audit("mquake", SAMPLE, edit_set="random:100000", select=["KE001"])
    assert [f.__name__ for f in get_family("mquake").rules.preparations] == [
        "resolve_edit_set_first"
    ]


def test_a_familys_card_declaration_is_what_its_export_card_says(tmp_path: Path) -> None:
    """One ``card`` declaration: a subclass changing title and license gets both in its card."""

    class Relicensed(KnowledgeEditingFamily):
        name = "relicensed-ke"
        card = replace(KnowledgeEditingFamily.card, title="Edited facts", license="cc-by-4.0")

    out = tmp_path / "out"
    curate.export(Relicensed(), SAMPLE, out)
    readme = (out / "README.md").read_text(encoding="utf-8")
    meta = yaml.safe_load(readme.split("---\n")[1])
    assert meta["license"] == "cc-by-4.0"
    assert meta["task_categories"] == ["question-answering"]
    assert "Edited facts, exported by `curate export`." in readme
    assert Relicensed().card.license == "cc-by-4.0"
