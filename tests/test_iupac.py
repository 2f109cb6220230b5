"""Tests for the strict IUPAC-condensed parser (curate.schemas.iupac).

The real-data tests read the three glycowork files of the shared data folder beside the project
root through the ``shared`` fixture (skipped when absent, a failure when ``CI`` is set);
everything else needs only the package. The glycowork cross-check is skipped when glycowork (a
test-only dependency) is not installed.
"""

# ruff: noqa: E501  (the malformed strings from the data files are quoted verbatim below)

from __future__ import annotations

import csv
import json
import pickle
import random
import re
from collections import defaultdict
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from curate.schemas import iupac
from curate.schemas.iupac import (
    Glycan,
    IUPACError,
    canonical_key,
    parse,
    render,
    try_parse,
)

SOURCES = (
    ("glycowork_upstream/glyco_targets_species_seq_all_V3.csv", "target"),
    ("glycowork_upstream/v3_sugarbase.csv", "glycan"),
    ("glycowork_sample.csv", "glycan"),
)
VOCAB = json.loads((files("curate") / "data" / "glycan_vocab.json").read_text("utf-8"))
PROPERTY = settings(
    max_examples=250,
    deadline=None,
    derandomize=True,  # the same examples on every run
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Every distinct string of the three files that the parser rejects, with its exact error. All
# other 21,454 distinct strings are accepted. glycowork's own parser builds a graph for each of
# these too (it never validates), so a linter that relied on it would pass them silently.
MALFORMED: dict[str, str] = {
    # A "]" closes a branch whose "[" is missing: the v3 files lost an opening bracket (or the
    # residues before it) when flattening the structure. 98 strings.
    "Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-3)[Fuc(a1-2)]Gal(b1-3)][Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)]GalNAc": "unbalanced ']' at 56",
    "Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-3)][Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)]GalNAc": "unbalanced ']' at 36",
    "Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)[Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-3)]Gal(b1-3)][Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)]GalNAc": "unbalanced ']' at 95",
    "Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)[Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-3)]Gal(b1-3)][Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)]GalNAc": "unbalanced ']' at 95",
    "Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)[Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-3)]Gal(b1-3)][Gal(b1-4)GlcNAc(b1-6)]GalNAc": "unbalanced ']' at 95",
    "Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)[Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-3)]Gal(b1-3)][GlcNAc(b1-6)]GalNAc": "unbalanced ']' at 95",
    "Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)][Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-3)]GalNAc": "unbalanced ']' at 48",
    "Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)][Gal(a1-4)Gal(b1-3)]GalNAc": "unbalanced ']' at 48",
    "Fuc(a1-2)Gal(b1-3)GalOS(b1-4)][Fuc(a1-2)]Gal(b1-3)GalNAc": "unbalanced ']' at 29",
    "Fuc(a1-2)Gal(b1-3)GlcNAc(b1-3)GalOS(b1-4)GlcNAc(b1-6)]GalNAc": "unbalanced ']' at 53",
    "Fuc(a1-2)Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 32",
    "Fuc(a1-2)Gal(b1-3)[Fuc(a1-2)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 52",
    "Fuc(a1-2)Gal(b1-3)[Fuc(a1-2)][GlcNAc(b1-6)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 66",
    "Fuc(a1-2)Gal(b1-3)[Gal(b1-4)GlcNAc(b1-6)][Fuc(a1-2)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 75",
    "Fuc(a1-2)Gal(b1-4)GlcOSA(b1-3)]Gal(b1-4)[Fuc(a1-2)]Gal(b1-3)GalNAc": "unbalanced ']' at 30",
    "Fuc(a1-2)[Gal(a1-3)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 43",
    "Fuc(a1-2)[Gal(b1-3)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 43",
    "Fuc(a1-2)[Gal(b1-3)][GlcNAc(b1-6)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 57",
    "Fuc(a1-2)[GalNAc(a1-3)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 46",
    "Fuc(a1-3)GalOS(b1-4)]GlcNAc(b1-6)[Fuc(a1-2)Gal(b1-3)GlcNAc(b1-3)]GalNAc": "unbalanced ']' at 20",
    "Fuc(a1-3)GlcNAc(a1-3)GalNAc(a1-3)[Fuc(a1-2)]Gal(b1-3)GalOS(b1-4)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 78",
    "Fuc(a1-3)GlcNAc(a1-3)GalNAc(a1-3)[Fuc(a1-2)]Gal(b1-3)GalOS(b1-4)[Fuc(a1-3)]GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 89",
    "Fuc(a1-3)GlcNAc(a1-3)GalNAc(a1-3)[Fuc(a1-2)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 67",
    "Fuc(a1-4)GalOS(b1-3)GlcNAc(b1-3)Gal(b1-4)GlcNAc(b1-6)][Fuc(a1-2)Gal(b1-3)GlcNAc(b1-3)]GalNAc": "unbalanced ']' at 53",
    "Fuc(a1-4)GlcNAc(b1-2)Man(a1-3)][Fuc(a1-4)GlcNAc(b1-2)Man(a1-6)][Xyl(b1-2)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-3)]GlcNAc": "unbalanced ']' at 30",
    "Fuc(a1-4)][GalOS(b1-3)]GlcNAc(b1-3)Gal(b1-4)GlcNAc(b1-6)][Fuc(a1-2)Gal(b1-3)GlcNAc(b1-3)]GalNAc": "unbalanced ']' at 9",
    "Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)][Fuc(a1-2)Gal(a1-3)Gal(a1-4)Gal(b1-3)]GalNAc": "unbalanced ']' at 39",
    "Gal(a1-3)Gal(a1-4)Gal(b1-4)GlcNAc(b1-6)][Gal(a1-3)Gal(a1-4)Gal(b1-3)]GalNAc": "unbalanced ']' at 39",
    "Gal(a1-6)Glc(a1-4)GlcN(a1-4)[LDManHep(a1-2)]GalA(a1-3)[GalA(b1-7)LDManHep(a1-7)]LDManHep(a1-3)[Glc(b1-4)]LDManHep(a1-5)]Kdo": "unbalanced ']' at 119",
    "Gal(b1-2)Gal(a1-3)[Fuc(a1-2)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 52",
    "Gal(b1-3)Gal(b1-4)GlcNAc(b1-2)[Gal(b1-3)Gal(b1-4)GlcNAc(b1-4)]Man(a1-3)][Neu5Ac(a2-6)Gal(b1-4)GlcNAc(b1-3)Gal(b1-4)GlcNAc(b1-2)[Neu5Ac(a2-6)Gal(b1-4)GlcNAc(b1-3)Gal(b1-4)GlcNAc(b1-6)]Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 71",
    "Gal(b1-3)GalNAc(a1-4)Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 44",
    "Gal(b1-3)GalNAc(a1-4)Gal(b1-4)[GlcA(b1-3)Gal(b1-3)][Fuc(a1-2)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 85",
    "Gal(b1-4)GlcNAc(b1-6)[Fuc(a1-2)][Gal(b1-3)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 66",
    "GalNAc(a1-4)Gal(b1-4)[GlcA(b1-3)Gal(b1-3)][Fuc(a1-2)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 76",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-2)Man(a1-6)GalNAcOS(b1-4)GlcNAc(b1-2)Man(a1-3)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 91",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-2)[GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-6)]Man(a1-6)GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)]Man(b1-4)GlcNAc(b1-4)GlcNAc": "unbalanced ']' at 151",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-2)[GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-6)]Man(a1-6)GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 151",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-2)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-6)]Man(a1-6)GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 137",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-2)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-6)]Man(a1-6)GalOS(b1-4)GlcNAc(b1-4)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-2)]Man(a1-3)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 158",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-4)GalOS(b1-4)GlcNAc(b1-2)]Man(a1-3)GalOS(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 70",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-4)GalOS(b1-4)GlcNAc(b1-2)]Man(a1-3)[GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 70",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-4)GalOS(b1-4)GlcNAc(b1-2)]Man(a1-3)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 70",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-6)GalOS(b1-4)GlcNAc(b1-2)]Man(a1-6)GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)]Man(b1-4)GlcNAc(b1-4)GlcNAc": "unbalanced ']' at 70",
    "GalNAc(b1-4)[Neu5Ac(a2-3)]Gal(b1-4)GlcNAc(b1-6)GalOS(b1-4)GlcNAc(b1-2)]Man(a1-6)GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 70",
    "GalNAcOS(b1-4)GlcNAc(b1-2)Man(a1-3)GalNAcOS(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)GlcNAc": "unbalanced ']' at 70",
    "GalNAcOS(b1-4)GlcNAc(b1-2)Man(a1-3)GalNAcOS(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 70",
    "GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)GalOS(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 46",
    "GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)[Gal(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)GlcNAc": "unbalanced ']' at 46",
    "GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)[Gal(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 46",
    "GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)GlcNAc": "unbalanced ']' at 46",
    "GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 46",
    "GalOS(b1-4)GlcNAc(b1-2)GalOS(b1-4)GlcNAc(b1-4)]Man(a1-3)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-2)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-6)]Man(a1-6)]Man(b1-4)GlcNAc(b1-4)GlcNAc": "unbalanced ']' at 46",
    "GalOS(b1-4)GlcNAc(b1-2)Man(a1-3)GalOS(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 64",
    "GalOS(b1-4)GlcNAc(b1-2)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-4)]Man(a1-3)GalOS(b1-4)GlcNAc(b1-2)Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc": "unbalanced ']' at 99",
    "Glc(a1-6)Glc(a1-4)GlcN(a1-4)[LDManHep(a1-2)]GalA(a1-3)[GalA(b1-7)LDManHep(a1-7)]LDManHep(a1-3)[Glc(b1-4)]LDManHep(a1-5)]Kdo": "unbalanced ']' at 119",
    "GlcA(b1-2)[Xyl(b1-2)][Xyl(b1-4)]Man(a1-3)[Xyl(b1-2)][Xyl(b1-4)]Man(a1-3)][Xyl(b1-4)Xyl(b1-4)]Man": "unbalanced ']' at 72",
    "GlcA(b1-2)[Xyl(b1-4)]Man(a1-3)[Xyl(b1-4)]Man(a1-3)[Xyl(b1-4)]Man(a1-3)[Xyl(b1-2)][Xyl(b1-4)]Man(a1-3)]Man": "unbalanced ']' at 101",
    "GlcA(b1-3)Gal(b1-3)[Fuc(a1-2)][Gal(b1-4)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 64",
    "GlcNAc(a1-3)GalNAc(a1-3)[Fuc(a1-2)]Gal(b1-3)GalOS(b1-4)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 69",
    "GlcNAc(a1-3)GalNAc(a1-3)[Fuc(a1-2)]Gal(b1-3)GlcNAcOS(b1-6)]GalNAc": "unbalanced ']' at 58",
    "GlcNAc(a1-4)Gal(b1-4)GlcNAc(b1-3)][Fuc(a1-4)]GlcNAc(b1-6)][GlcNAc(a1-4)Gal(b1-3)]GlcNAc": "unbalanced ']' at 33",
    "GlcNAc(a1-4)Gal(b1-4)][Neu5Ac(a2-3)]Gal(b1-3)][GlcNAc(b1-3)GlcNAc(b1-6)]GalNAc": "unbalanced ']' at 21",
    "GlcNAc(b1-2)Man(a1-3)ManOS(a1-6)]Man(b1-4)GlcNAc(b1-4)GlcNAc": "unbalanced ']' at 32",
    "GlcNAc(b1-2)Man(a1-3)[Xyl(b1-2)][GlcNAc(b1-2)]Man(a1-6)]Man(b1-4)GlcNAc(b1-4)GlcNAc": "unbalanced ']' at 55",
    "GlcNAc(b1-2)Man(a1-3)[Xyl(b1-2)][GlcNAc(b1-2)]Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-3)]GlcNAc": "unbalanced ']' at 55",
    "GlcNAc(b1-2)Man(a1-6)][Xyl(b1-2)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-3)]GlcNAc": "unbalanced ']' at 21",
    "Kdo(a2-4)[DDManHep(a1-2)][DDManHep(a1-6)GlcN(a1-4)]GalA(a1-3)[GalA(b1-7)LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 131",
    "Kdo(a2-4)[DDManHep(a1-2)][DDManHep(a1-6)GlcN(a1-4)]GalA(a1-3)[GalA(b1-7)LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo(a2-6)GlcN(b1-6)GlcN": "unbalanced ']' at 131",
    "Kdo(a2-4)[DDManHep(a1-2)][DDManHep(a1-6)GlcN(b1-4)]GalA(a1-3)[GalA(b1-7)LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 131",
    "Kdo(a2-4)[DDManHep(a1-2)][GalN(a1-4)]GalA(a1-3)[LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 107",
    "Kdo(a2-4)[GalN(a1-4)]GalA(a1-3)[GalA(b1-7)LDManHep(a1-7)]LDManHep(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 96",
    "Kdo(a2-4)[Glc(a1-4)]GalNAc(a1-2)DDManHep(a1-6)GlcN(a1-4)GalA(a1-3)[GalA(b1-7)LDManHep(a1-7)]LDManHep(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 131",
    "Kdo(a2-4)[GlcNAc(a1-4)]GlcN(a1-4)GalA(a1-3)[GalA(b1-7)LDManHep(a1-7)]LDManHep(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 108",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)GalA(a1-3)[LDManHep(a1-7)]LDManHep(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 104",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)GalA(a1-3)[LDManHep(a1-7)]LDManHep(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo(a2-6)GlcN(b1-6)GlcN": "unbalanced ']' at 104",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[GalN(a1-4)]GalA(a1-3)[GalAN(b1-7)LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 132",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[GalN(a1-4)]GalA(a1-3)[LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 121",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[GalNAc(a1-2)DDManHep(a1-6)GlcN(a1-4)]GalA(a1-3)[LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 147",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[Glc(a1-4)GalNAc(a1-2)DDManHep(a1-6)GlcN(a1-4)]GalA(a1-3)[GalA(b1-7)LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 166",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[Glc(a1-4)GalNAc(a1-2)DDManHep(a1-6)GlcN(a1-4)]GalA(a1-3)[GalAN(b1-7)LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 167",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[Glc(a1-4)GalNAc(a1-2)DDManHep(a1-6)GlcN(a1-4)]GalA(a1-3)[LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 156",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[Glc(b1-3)GalN(a1-4)]GalA(a1-3)[LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 130",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[Glc(b1-4)GalNAc(a1-2)DDManHep(a1-6)GlcN(a1-4)]GalA(a1-3)[LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 156",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[GlcNAc(b1-4)GlcN(a1-4)]GalA(a1-3)[GalAN(b1-7)LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 144",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[GlcNAc(b1-4)GlcN(a1-4)]GalA(a1-3)[LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 133",
    "Kdo(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)[GlcNAc(b1-4)GlcN(a1-4)]GalA(a1-3)[LDManHep(a1-7)]LDManHepOPEtn(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo(a2-6)GlcNAcOP(b1-6)GlcNAc": "unbalanced ']' at 133",
    "Ko(a2-4)[LDManHep(a1-2)]DDManHep(a1-2)L-ThrHexA4en(a1-3)[LDManHep(a1-7)]LDManHep(a1-3)[Glc(b1-4)]LDManHep(a1-5)][AraN(b1-8)]Kdo": "unbalanced ']' at 111",
    "ManNAcAN(b1-4)GlcNAcAN(b1-4)GalNAc(a1-4)ManNAcA(b1-3)D-FucNAcNMe(b1-6)GlcNAc(a1-4)ManNAcA(b1-3)D-FucNAcNMe(b1-6)[LDManHep(a1-4)]GlcN(a1-4)[GalN(a1-6)]Glc(b1-4)[GlcN(a1-7)]LDManHepOP(a1-3)]LDManHep": "unbalanced ']' at 187",
    "Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-6)GalOS(b1-3)]GalNAc": "unbalanced ']' at 44",
    "Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-6)Neu5AcOS(a2-3)]Gal(b1-3)]GalNAc": "unbalanced ']' at 47",
    "Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-6)[Neu5AcOS(a2-3)]Gal(b1-3)]GalNAc": "unbalanced ']' at 58",
    "Neu5Ac(a2-3)Gal(b1-4)[Fuc(a1-3)]GlcNAc(b1-6)GalOS(b1-3)]GalNAc": "unbalanced ']' at 55",
    "Neu5Ac(a2-3)Gal(b1-4)[Fuc(a1-3)]GlcNAc(b1-6)GlcNAcOS(b1-3)]GalNAc": "unbalanced ']' at 58",
    "Neu5Ac(a2-6)Gal(b1-4)GlcNAc(b1-6)[Neu5Ac(a2-6)Gal(b1-4)GlcNAc(b1-2)]Man(a1-6)][Neu5Ac(a2-3)Gal(b1-3)[Neu5Ac(a2-6)]GlcNAc(b1-2)Man(a1-3)]Man(b1-4)GlcNAc(b1-4)GlcNAc": "unbalanced ']' at 77",
    "Neu5AcOS(a2-3)]Gal(b1-4)GlcNAc(b1-3)Gal(b1-3)[Neu5Ac(a2-3)Gal(b1-4)GlcNAc(b1-6)]GalNAc": "unbalanced ']' at 14",
    "Neu5AcOS(a2-3)]Gal(b1-4)GlcNAc(b1-6)[Neu5Ac(a2-3)Gal(b1-3)]GalNAc": "unbalanced ']' at 14",
    "Neu5Gc(a2-3)Gal(b1-4)GlcNAc(b1-6)][Gal(b1-3)]GalNAc": "unbalanced ']' at 33",
    # A repeating-unit marker ("]4)" / "]3)": CSDB's count and closing linkage of a repeat) is left
    # where a residue belongs. 23 strings.
    "[Gal(a1-6)Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 20",
    "[Gal(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Gal(b1-4)Gal(b1-4)Glc(b1-4)Glc(b1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 38",
    "[Gal(b1-4)Glc(b1-4)Glc(b1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 29",
    "[Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 47",
    "[Glc(a1-4)Glc(a1-4)Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)[Glc(a1-4)Glc(a1-4)Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 29",
    "[Glc(a1-4)Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 20",
    "[Glc(a1-4)Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)[Glc(a1-4)Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 20",
    "[Glc(a1-4)Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)[Glc(a1-4)Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 20",
    "[Glc(a1-4)Glc(a1-6)]4)Glc(a1-4)Glc(b1-4)Glc(b1-4)Glc(b1-4)Glc(b1-4)Glc": "unknown residue '4' at 20",
    "[Glc(a1-4)Glc(a1-6)]4)Glc(a1-4)[Glc(a1-4)Glc(a1-6)]Glc(a1-4)[Glc(a1-4)Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 20",
    "[Glc(a1-6)]3)Glc(a1-6)Glc(a1-3)Glc(a1-6)Glc": "unknown residue '3' at 11",
    "[Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)[Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)[Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)[Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)[Glc(a1-6)]Glc(a1-4)Glc(a1-4)[Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Glc(a1-6)]4)Glc(a1-4)Glc(a1-4)[Glc(a1-6)]Glc(a1-4)[Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Glc(a1-6)]4)Glc(a1-4)[Glc(a1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Glc(b1-4)Glc(b1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 20",
    "[Glc(b1-6)]4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Glc(b1-6)]4)Glc(a1-4)[Glc(b1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)[Glc(b1-6)]Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    "[Glc(b1-6)]4)Glc(a1-4)[Glc(b1-6)]Glc(a1-4)[Glc(b1-6)]Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc(a1-4)Glc": "unknown residue '4' at 11",
    # Broken parentheses: a doubled "(" ("Gal((a1-6)"), a linkage missing its ")" ("Gal(b1-4Glc"),
    # or a doubled ")" ("(a1-2))D-RhaGro"). 8 strings.
    "D-Rha(a1-3)D-Rha(a1-3)D-Rha(a1-2))D-RhaGro": "unbalanced ')' at 33",
    "D-Rha(a1-3)D-Rha(a1-3)D-Rha(a1-3)D-Rha(a1-2))D-RhaGro": "unbalanced ')' at 44",
    "GlcA(b1-2)Gal(a1-6)GalOMe(a1-6)Gal((a1-6)GalOMe(a1-6)Gal(a1-6)GalOMe": "unbalanced '(' at 34",
    "GlcNAcOMe(b1-2)D-Rha(a1-3)D-Rha(a1-3)D-Rha(a1-3)D-Rha(a1-2))D-RhaGro": "unbalanced ')' at 59",
    "Neu5Ac(a2-3)[GalNAc(b1-4)]Gal(b1-4Glc(b1-2)LDManHep(a1-3)[Glc(b1-4)]LDManHepOP(a1-5)[Kdo(a2-4)]Kdo": "unbalanced '(' at 29",
    "Neu5Ac(a2-3)[GalNAc(b1-4)]Gal(b1-4Glc(b1-2)LDManHep(a1-3)[Glc(b1-4)]LDManHepOPEtn(a1-5)Kdo(a2-6)GlcOPN(b1-6)GlcOPPEtn": "unbalanced '(' at 29",
    "Neu5Ac(a2-3)[GalNAc(b1-4)]Gal(b1-4Glc(b1-2)LDManHep(a1-3)[Glc(b1-4)]LDManHepOPEtn(a1-5)[Kdo(a2-4)]Kdo": "unbalanced '(' at 29",
    "Rha(a1-4)GalNAcOAcAN((a1-4)GalOFoAN(a1-3)QuiNAc(a1-2)Rha": "unbalanced '(' at 20",
    # Single cases.
    # ends in a linkage: a repeating unit written open, no reducing-end residue
    "Gal(a1-2)Gal(a1-2)Glc(a1-3)Glc(a1-3)": "trailing linkage at 30: the glycan must end with its reducing-end residue",
    # ends in a branch whose last residue has no linkage and nothing to attach to
    "Glc(b1-2)Gal(b1-2)GlcA(b1-3)[Glc(b1-3)Ara]": "expected linkage like '(a1-4)' at 41",
    # truncated: the reducing-end residue is cut to "Gl"
    "Glc(b1-4)[Xyl(a1-6)]Glc(b1-4)[Araf(a1-2)Xyl(a1-6)]Glc(b1-4)Glc(b1-4)Glc(b1-4)[Xyl(a1-6)]Glc(b1-4)[Xyl(a1-6)]Glc(b1-4)Glc(b1-4)Glc(b1-4)[Gal(b1-2)Xyl(a1-6)]Glc(b1-4)[Araf(a1-2)Xyl(a1-6)]Glc(b1-4)Glc(b1-4)[Xyl(a1-6)]Glc(b1-4)[Araf(a1-2)Xyl(a1-6)]Glc(b1-4)Gl": "unknown residue 'Gl' at 253",
    # "OLac" is an O-lactyl substituent written as if it were a residue
    "OLac(b1-4)[Gal(b1-4)Glc(b1-6)]GlcNAc(b1-3)Gal(b1-4)Glc": "unknown residue 'OLac' at 0",
    # substituent after a hyphen; the files write it before "-ol" (RibOP-ol)
    "Rha(a1-2)[b-Tri-OP-ol(1-3)][Glc(b1-4)]Gal(b1-4)Rha": "unknown residue 'b-Tri-OP-ol' at 10",
    # ends in a linkage: a repeating unit written open, no reducing-end residue
    "[Glc(a1-4)]Gal(a1-2)[Abe(a1-3)]Man(a1-4)Rha(a1-3)": "trailing linkage at 43: the glycan must end with its reducing-end residue",
    # substituent after a hyphen; the files write it before "-ol" (GlcN-ol)
    "b-Tri-N-ol(1-6)Gal(a1-2)Glc(a1-3)b-Tri-ol": "unknown residue 'b-Tri-N-ol' at 0",
    # a stray "c" before Neu5Ac
    "cNeu5Ac(a2-3)Gal(b1-4)[Fuc(a1-3)]GlcNAcOS": "unknown residue 'cNeu5Ac' at 0",
}


@pytest.fixture(scope="module")
def real_strings(shared: Callable[[str], Path]) -> tuple[str, ...]:
    """The distinct glycan strings of the three files, sorted (deterministic order)."""
    seen: set[str] = set()
    for name, column in SOURCES:
        with shared(f"data/glycan/{name}").open(newline="", encoding="utf-8") as handle:
            seen.update(row[column] for row in csv.DictReader(handle))
    return tuple(sorted(seen))


@pytest.fixture(scope="module")
def accepted_strings(real_strings: tuple[str, ...]) -> list[str]:
    return [s for s in real_strings if s not in MALFORMED]


# --------------------------------------------------------------------------- real data


def test_every_well_formed_real_string_parses(accepted_strings: list[str]) -> None:
    strings = accepted_strings
    assert len(strings) == 21_454
    for s in strings:
        glycan = parse(s)
        assert glycan.key == canonical_key(s)


def test_exactly_the_listed_real_strings_are_rejected_with_these_errors(
    real_strings: tuple[str, ...],
) -> None:
    rejected = {}
    for s in real_strings:
        result = try_parse(s)
        if isinstance(result, IUPACError):
            rejected[s] = str(result)
    assert rejected == MALFORMED


def test_render_reproduces_real_strings_and_their_key(accepted_strings: list[str]) -> None:
    for s in accepted_strings:
        glycan = parse(s)
        text = render(glycan)
        # only a leading "[B(l)]A" changes spelling: it is written "B(l)A", the same tree
        assert text == s or s.startswith("[")
        assert canonical_key(text) == glycan.key
        assert canonical_key(glycan.key) == glycan.key


# --------------------------------------------------------------------------- structure


def test_tree_of_a_branched_glycan() -> None:
    g = parse("Neu5Ac(a2-3)Gal(b1-4)[Fuc(a1-3)]GlcNAc(b1-2)Man")
    assert [r.name for r in g.residues] == ["Neu5Ac", "Gal", "Fuc", "GlcNAc", "Man"]
    assert [r.start for r in g.residues] == [0, 12, 22, 32, 44]
    assert g.root == 4
    assert g.floating == ()
    edges = {
        (link.child, link.parent, link.anomer, link.child_position, link.parent_positions)
        for link in g.linkages
    }
    assert edges == {
        (0, 1, "a", "2", ("3",)),
        (1, 3, "b", "1", ("4",)),
        (2, 3, "a", "1", ("3",)),
        (3, 4, "b", "1", ("2",)),
    }
    assert [link.start for link in g.linkages] == [6, 15, 25, 38]
    assert g.children(3) == (1, 2)
    assert g.children(0) == ()


def test_floating_uncertain_and_bare_linkages() -> None:
    g = parse("{Neu5Ac(a2-3/6)}Gal(b1-4)GlcNAc(1-4)Glc-ol")
    assert g.floating == (0,)
    floating = g.linkages[0]
    assert floating.parent is None
    assert floating.parent_positions == ("3", "6")
    bare = next(link for link in g.linkages if link.child == 2)
    assert (bare.anomer, bare.written, bare.parent) == ("?", "1-4", 3)
    assert g.key == "{Neu5Ac(a2-3/6)}Gal(b1-4)GlcNAc(1-4)Glc-ol"


@pytest.mark.parametrize(
    ("token", "normalized"),
    [
        ("L-Fuc", "Fuc"),  # the configuration IUPAC-condensed leaves out
        ("D-Gal", "Gal"),
        ("D-6dTal", "6dTal"),
        ("D-Rha", "D-Rha"),  # Rha is L by default: D must stay
        ("L-Gal", "L-Gal"),
        ("Galp", "Gal"),  # pyranose is the default ring
        ("GalpNAc", "GalNAc"),
        ("Araf", "Araf"),
        ("3,6-Anhydro-L-Gal", "3,6-Anhydro-L-Gal"),
    ],
)
def test_residue_normalization(token: str, normalized: str) -> None:
    assert parse(token).residues[0].normalized == normalized


@pytest.mark.parametrize(
    "token",
    [
        "Neu5Ac",
        "Neu5Gc",
        "GlcNAc6S",
        "Gal3S",
        "L-Fuc",
        "Araf",
        "D-Rha",
        "GlcA",
        "Kdo",
        "HexNAc",
        "Man6P",
        "GlcNAc4S6S",
        "GalOMe",
        "LDManHepOPEtn",
        "2,5-Anhydro-Man3S-ol",
        "aldehyde-2,5-Anhydro-L-Man",
        "Ery-L-GlcNonUloNAcOAcOMeSH-onic",
        "D-ThrHexfNAc2en",
        "L-EryCMeOH",
        "4eLeg5Ac7Ac",
        "dHexNAc",
        "ddNon",
        "Kdo8Pp",
        "GlcAOPy",
        "b-Tri-ol",
    ],
)
def test_residue_shapes_from_the_data(token: str) -> None:
    assert parse(token).residues[0].name == token


def test_glycanml_vocabulary_parses() -> None:
    """Every GlycanML token the vocabulary file copies, except the two it documents."""
    assert "source" in VOCAB
    skipped = VOCAB["glycanml_not_parsed"]
    units = [u for u in VOCAB["glycanml_units"] if u not in skipped]
    links = [link for link in VOCAB["glycanml_links"] if link not in skipped]
    assert (len(units), len(links)) == (126, 83)
    for unit in units:
        assert parse(unit).residues[0].name == unit
    for link in links:
        assert parse(f"Gal({link})Glc").linkages[0].written == link
    for token in skipped:
        assert isinstance(try_parse(token), IUPACError)


# --------------------------------------------------------------------------- rejection


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        ("", "empty glycan", 0),
        ("Gal(b1-4)]Glc", "unbalanced ']' at 9", 9),
        ("Gal(b1-4)[Fuc(a1-2)Glc", "unclosed '[' opened at 9", 9),
        ("{Fuc(a1-2)Gal", "unclosed '{' opened at 0", 0),
        ("Gal(b1-4)}Glc", "unbalanced '}' at 9", 9),
        ("Gal(b1-4)[Fuc(a1-2)}Glc", "unbalanced '}' at 19", 19),
        ("Hello(a1-3)Gal", "unknown residue 'Hello' at 0", 0),
        ("Gal(b1-4)Hello", "unknown residue 'Hello' at 9", 9),
        ("GalGlc", "unknown residue 'GalGlc' at 0", 0),
        ("Gal6", "unknown residue 'Gal6' at 0", 0),
        ("Gal[Fuc(a1-2)]Glc", "expected linkage like '(a1-4)' at 3", 3),
        ("[Fuc]Gal", "expected linkage like '(a1-4)' at 4", 4),
        ("{Fuc}Gal", "expected linkage like '(a1-4)' at 4", 4),
        (
            "Gal(b1-4)",
            "trailing linkage at 3: the glycan must end with its reducing-end residue",
            3,
        ),
        ("Gal(b1-4)[Fuc(a1-2)]", "expected residue at 20", 20),
        ("{Fuc(a1-2)}", "expected residue at 11", 11),
        ("(a1-3)Gal", "expected residue before linkage at 0", 0),
        ("Gal(b1-4)(a1-3)Glc", "expected residue before linkage at 9", 9),
        ("Gal(b1_4)Glc", "bad linkage '(b1_4)' at 3, expected linkage like '(a1-4)'", 3),
        ("Gal(c1-4)Glc", "bad linkage '(c1-4)' at 3, expected linkage like '(a1-4)'", 3),
        ("Gal(b1-4/)Glc", "bad linkage '(b1-4/)' at 3, expected linkage like '(a1-4)'", 3),
        ("Gal()Glc", "bad linkage '()' at 3, expected linkage like '(a1-4)'", 3),
        ("Gal((b1-4)Glc", "unbalanced '(' at 3", 3),
        ("Gal(b1-4Glc", "unbalanced '(' at 3", 3),
        ("Gal(b1-4))Glc", "unbalanced ')' at 9", 9),
        ("Gal(b1-4)Glc!", "unexpected character '!' at 12", 12),
        ("Gal (b1-4)Glc", "unexpected character ' ' at 3", 3),
        (" Gal", "unexpected character ' ' at 0", 0),
        ("Gal(b1-4)Gl\x00c", "unexpected character '\\x00' at 11", 11),
        ("[]Gal", "empty branch at 0", 0),
        ("{}Gal", "empty floating block at 0", 0),
        ("[[Fuc(a1-2)]]Gal", "expected residue before ']' at 12", 12),
        ("Gal(b1-4){Fuc(a1-2)}Glc", "floating substituent '{' must lead the glycan, found at 9", 9),
        (
            "[Fuc(a1-2)]{Fuc(a1-2)}Glc",
            "floating substituent '{' must lead the glycan, found at 11",
            11,
        ),
        ("{Fuc(a1-2)[Gal(b1-3)}Glc", "unbalanced '}' at 20", 20),
        ("Fuc)[Fuc(a1-2)]Fuc", "unbalanced ')' at 3", 3),
    ],
)
def test_rejects_with_exact_position(text: str, message: str, position: int) -> None:
    with pytest.raises(IUPACError) as caught:
        parse(text)
    assert str(caught.value) == message
    assert caught.value.position == position
    result = try_parse(text)
    assert isinstance(result, IUPACError) and str(result) == message
    with pytest.raises(IUPACError):
        canonical_key(text)


def test_error_says_what_was_expected_and_pickles() -> None:
    assert try_parse("Gal[Fuc(a1-2)]Glc").expected == "linkage like '(a1-4)'"  # type: ignore[union-attr]
    assert try_parse("Hello").expected == "a known residue"  # type: ignore[union-attr]
    assert try_parse("Gal(b1-4)[Fuc(a1-2)Glc").expected == "']'"  # type: ignore[union-attr]
    error = pickle.loads(pickle.dumps(try_parse("Gal(b1-4)]Glc")))  # audits may run in workers
    assert (str(error), error.position) == ("unbalanced ']' at 9", 9)


def test_non_strings_become_errors_not_crashes() -> None:
    for value in (None, 3.5, b"Gal"):
        result = try_parse(value)  # type: ignore[arg-type]
        assert isinstance(result, IUPACError)
        assert result.position == 0
    assert str(try_parse(None)) == "expected a string, got NoneType"  # type: ignore[arg-type]
    assert isinstance(IUPACError("x", 0), ValueError)


def test_adversarial_input_is_parsed_or_rejected() -> None:
    """Deep nesting and huge strings neither hit the recursion limit nor crash. How fast is the
    benchmark's business (``bench/bench_iupac.py`` times these same inputs against a 5 s
    budget): a wall-clock assertion here would fail on a loaded machine and prove nothing."""
    chain = "Glc(a1-4)" * 5000 + "Glc"
    nested = "[" * 2000 + "Glc(a1-6)" + "]Glc(a1-6)" * 2000 + "Glc"
    assert len(parse(chain).residues) == 5001
    assert len(parse(nested).residues) == 2002
    assert isinstance(try_parse("Glc" + "NAc" * 20_000 + "X"), IUPACError)
    assert isinstance(try_parse("Glc(a1-4)" * 5000 + "Gl"), IUPACError)
    assert isinstance(try_parse("[" * 10_000), IUPACError)


# --------------------------------------------------------------------------- canonical keys


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Man(a1-3)[Man(a1-6)]Man", "Man(a1-6)[Man(a1-3)]Man"),
        (  # the main chain is a writer's choice
            "Gal(b1-4)GlcNAc(b1-2)Man(a1-3)[Man(a1-6)]Man(b1-4)GlcNAc",
            "Man(a1-6)[Gal(b1-4)GlcNAc(b1-2)Man(a1-3)]Man(b1-4)GlcNAc",
        ),
        ("Xyl(b1-2)[Man(a1-3)][Man(a1-6)]Man", "Man(a1-6)[Xyl(b1-2)][Man(a1-3)]Man"),
        ("[Man(a1-3)][Man(a1-6)]Man", "Man(a1-6)[Man(a1-3)]Man"),
        ("[Fuc(a1-2)]Gal(b1-4)Glc", "Fuc(a1-2)Gal(b1-4)Glc"),
        ("{Fuc(a1-2)}{Neu5Ac(a2-3)}Gal(b1-4)Glc", "{Neu5Ac(a2-3)}{Fuc(a1-2)}Gal(b1-4)Glc"),
        ("L-Fuc(a1-2)Gal", "Fuc(a1-2)Gal"),
        ("Gal(b1-4/3)GlcNAc", "Gal(b1-3/4)GlcNAc"),
        # a residue's modifications in another written order (issue 9)
        ("Gal1Cer3S(b1-4)Glc", "Gal3S1Cer(b1-4)Glc"),
        ("D-Fuc1CoumOMe(a1-3)Glc", "D-FucOMe1Coum(a1-3)Glc"),
        ("Neu5Ac9Ac(a2-3)Gal", "Neu9Ac5Ac(a2-3)Gal"),
        ("Neu5AcOAc(a2-3)Gal", "NeuOAc5Ac(a2-3)Gal"),
        (  # nested branches reorder independently at every level
            "Neu5Ac(a2-3)Gal(b1-4)[Fuc(a1-3)]GlcNAc(b1-2)Man(a1-3)[Gal(b1-4)GlcNAc(b1-2)Man(a1-6)]Man",
            "Gal(b1-4)GlcNAc(b1-2)Man(a1-6)[Fuc(a1-3)[Neu5Ac(a2-3)Gal(b1-4)]GlcNAc(b1-2)Man(a1-3)]Man",
        ),
    ],
)
def test_same_glycan_same_key(one: str, other: str) -> None:
    assert canonical_key(one) == canonical_key(other)
    assert canonical_key(canonical_key(one)) == canonical_key(one)


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Gal(b1-4)GlcNAc", "Gal(b1-3)GlcNAc"),
        ("Gal(b1-4)GlcNAc", "Gal(a1-4)GlcNAc"),
        ("GlcNAc(1-4)Glc", "GlcNAc(?1-4)Glc"),  # no anomer (alditol-style) is not "unknown"
        ("Fuc(a1-2)Gal(b1-4)Glc", "{Fuc(a1-2)}Gal(b1-4)Glc"),  # placed vs floating
        ("Man(a1-3)Man(a1-6)Man", "Man(a1-3)[Man(a1-6)]Man"),  # chain vs branches
        ("D-Rha(a1-3)Glc", "Rha(a1-3)Glc"),
        ("Gal(a2-3/6)Glc", "Gal(a2-3)Glc"),
        ("Neu5Ac9Ac(a2-3)Gal", "Neu5Ac8Ac(a2-3)Gal"),
        ("Gal3S6S(b1-4)Glc", "Gal3S(b1-4)Glc"),
        # bare codes after a positioned unit belong to it: 6-phosphoethanolamine is not
        # ethanolamine plus 6-phosphate
        ("Glc6PEtN(a1-4)Glc", "GlcEtN6P(a1-4)Glc"),
        ("GalOMe3S(b1-4)Glc", "Gal3SOMe6S(b1-4)Glc"),
    ],
)
def test_different_glycans_different_keys(one: str, other: str) -> None:
    assert canonical_key(one) != canonical_key(other)


def test_key_orders_branches_by_linkage_first() -> None:
    assert (
        canonical_key("Man(a1-6)[Xyl(b1-2)][Man(a1-3)]Man") == "Xyl(b1-2)[Man(a1-3)][Man(a1-6)]Man"
    )
    assert canonical_key("Fuc(a1-6)[GlcNAc(b1-4)]GlcNAc") == "GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc"


def _quadratic_key(text: str) -> str:
    """The canonical key as it was first built: every subtree's text, children sorted by
    (linkage, text). Quadratic in a chain's length, obviously right; the reference for the
    linear builder."""
    glycan = parse(text)
    kids: dict[int, list[tuple[Any, str]]] = defaultdict(list)
    entry: dict[int, tuple[Any, str]] = {}
    for residue in glycan.residues:
        children = sorted(kids[residue.index])
        body = "".join(c[1] if i == 0 else f"[{c[1]}]" for i, c in enumerate(children))
        link = next((x for x in glycan.linkages if x.child == residue.index), None)
        if link is None:
            entry[residue.index] = ((), body + residue.normalized)
            continue
        decoded = iupac._decode_link(link.written)
        entry[residue.index] = (decoded.order, body + residue.normalized + decoded.canonical)
        if link.parent is not None:
            kids[link.parent].append(entry[residue.index])
    floating = sorted(f"{{{entry[f][1]}}}" for f in glycan.floating)
    return "".join(floating) + entry[glycan.root][1]


def test_long_chains_and_deep_nesting_parse_in_linear_memory() -> None:
    """A 100,000-residue chain, 50,000-deep nesting and tied siblings at every level of it (the
    case where siblings are compared by text) are keyed without recursion, and a 1 MiB chain
    within 200 MB (issue 9: the key once held every subtree's text, 6 GB at 270 KB)."""
    import tracemalloc

    chain = "Gal(b1-4)" * 100_000 + "Glc"
    assert canonical_key.__wrapped__(chain) == chain
    nested = "Gal(b1-4)[" * 50_000 + "Gal(a1-3)" + "]Gal(a1-3)" * 50_000 + "Glc"
    assert len(canonical_key.__wrapped__(nested)) == len(nested)
    tied = "Gal(?1-?)[" * 50_000 + "Gal(?1-?)" + "]Gal(?1-?)" * 50_000 + "Glc"
    key = canonical_key.__wrapped__(tied)  # the leaf sorts first: it is a prefix of the other
    assert key.startswith("Gal(?1-?)[Gal(?1-?)[Gal(?1-?)") and len(key) == len(tied)
    for size in (1_000, 3_000):
        small = "Gal(?1-?)[" * size + "Gal(?1-?)" + "]Gal(?1-?)" * size + "Glc"
        assert canonical_key.__wrapped__(small) == _quadratic_key(small)
    mib = "Gal(b1-4)" * ((iupac.MAX_GLYCAN_CHARS - 3) // 9) + "Glc"
    tracemalloc.start()
    try:
        assert len(parse(mib).residues) == len(mib) // 9 + 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20
    too_long = "Gal(b1-4)" * (iupac.MAX_GLYCAN_CHARS // 9 + 1) + "Glc"
    error = try_parse(too_long)
    assert isinstance(error, IUPACError) and error.position == iupac.MAX_GLYCAN_CHARS


# few names and linkages, so that siblings often share a linkage and are ordered by their text
TIE_NAMES = ("Gal", "Glc", "GlcNAc", "Gal6S", "Neu5Ac")
TIE_LINKS = ("?1-?", "a1-?", "b1-4", "1-4")


@pytest.mark.parametrize(("head", "short"), [(1, 0), (4, 0), (16, 0), (iupac._HEAD, iupac._SHORT)])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    glycan=st.deferred(lambda: glycans(TIE_NAMES, TIE_LINKS)),
    rnd=st.randoms(use_true_random=False),
)
def test_key_matches_the_quadratic_reference(
    head: int, short: int, glycan: tuple[Any, ...], rnd: random.Random
) -> None:
    """Siblings on one linkage are ordered by comparing bounded heads of their texts first;
    with heads of 1-16 characters almost every comparison goes past the head, so the linear
    builder (every string is long with ``_SHORT`` 0) must agree with the reference on every
    tree, tie or not; so must the short builder and the run-based key at their defaults."""
    text = write_glycan(glycan, rnd)
    saved = iupac._HEAD, iupac._SHORT
    iupac._HEAD, iupac._SHORT = head, short
    try:
        key = _quadratic_key(text)
        assert iupac._checked(text).key == key
        assert iupac._key(text) == key
    finally:
        iupac._HEAD, iupac._SHORT = saved


def test_builders_agree_on_every_real_string(accepted_strings: list[str]) -> None:
    """The run-based key (canonical_key), the short builder (parse) and the linear builder
    write the same key for every real glycan; the run cache changes nothing."""
    for s in accepted_strings:
        key = iupac._key(s)
        assert key is not None and iupac._build(s, tree=True).key == key
        assert iupac._build(s, tree=False).key == key
    saved = iupac._SHORT, iupac._decode_segment.size
    iupac._SHORT = 0
    iupac._decode_segment.cache_clear()
    iupac._decode_segment.size = 0  # stores nothing: every run decoded at every call
    try:
        for s in accepted_strings:
            assert iupac._build(s, tree=False).key == canonical_key(s)
        iupac._SHORT = saved[0]
        for s in accepted_strings:
            assert iupac._key(s) == canonical_key(s)
    finally:
        iupac._SHORT, iupac._decode_segment.size = saved


def test_canonical_key_is_memoized() -> None:
    canonical_key.cache_clear()
    canonical_key("Gal(b1-4)Glc")
    canonical_key("Gal(b1-4)Glc")
    info = canonical_key.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    assert info.maxsize is not None  # bounded


# --------------------------------------------------------------------------- properties

# Random trees draw from the vocabulary: GlycanML's residue and linkage tokens, plus spellings
# from the data files and uncertain linkages that GlycanML's list lacks.
SKIPPED = VOCAB["glycanml_not_parsed"]
NAMES = (
    *(u for u in VOCAB["glycanml_units"] if u not in SKIPPED),
    *("Neu5Ac", "GlcNAc6S", "Gal3S", "D-Rha", "Man6P", "GlcNAc4S6S", "GalOMe", "Glc-ol"),
)
LINKS = (
    *(link for link in VOCAB["glycanml_links"] if link not in SKIPPED),
    *("a2-3/6", "a1-2/3/4", "b1-3/4"),
)

Tree = tuple[str, tuple[tuple[str, "Tree"], ...]]  # (residue, ((linkage, child), ...))


def trees(
    names: tuple[str, ...], links: tuple[str, ...], depth: int = 4
) -> st.SearchStrategy[Tree]:
    """Random glycan trees: up to three children per residue, ``depth`` levels."""
    leaf = st.builds(lambda name: (name, ()), st.sampled_from(names))
    if depth == 0:
        return leaf
    child = st.tuples(st.sampled_from(links), trees(names, links, depth - 1))
    node = st.builds(
        lambda n, c: (n, tuple(c)), st.sampled_from(names), st.lists(child, max_size=3)
    )
    return st.one_of(leaf, node)


def glycans(names: tuple[str, ...], links: tuple[str, ...]) -> st.SearchStrategy[tuple[Any, ...]]:
    """(floating fragments, tree): fragments are (linkage, tree) pairs with unknown acceptor."""
    fragment = st.tuples(st.sampled_from(links), trees(names, links, 1))
    return st.tuples(st.lists(fragment, max_size=2).map(tuple), trees(names, links))


def write(tree: Tree, rnd: random.Random) -> str:
    """IUPAC-condensed text of ``tree`` with a random child order and main-chain choice.

    Sometimes every child goes in brackets (``[A(l)][B(l)]N``), which IUPAC allows too.
    """
    name, children = tree
    if not children:
        return name
    order = list(children)
    rnd.shuffle(order)
    parts = [f"{write(child, rnd)}({link})" for link, child in order]
    if rnd.random() < 0.2:
        return "".join(f"[{p}]" for p in parts) + name
    return parts[0] + "".join(f"[{p}]" for p in parts[1:]) + name


def write_glycan(glycan: tuple[Any, ...], rnd: random.Random) -> str:
    fragments, tree = glycan
    blocks = [f"{{{write(t, rnd)}({link})}}" for link, t in fragments]
    rnd.shuffle(blocks)
    return "".join(blocks) + write(tree, rnd)


def size(tree: Tree) -> int:
    return 1 + sum(size(child) for _, child in tree[1])


def shape(tree: Tree) -> Any:
    """Order-free form of a tree, computed independently of the parser (sorted nesting)."""
    name, children = tree
    return (name, tuple(sorted((link, shape(child)) for link, child in children)))


@PROPERTY
@given(glycans(NAMES, LINKS), st.randoms(use_true_random=False))
def test_key_ignores_how_the_glycan_is_written(glycan: tuple[Any, ...], rnd: random.Random) -> None:
    one, other = write_glycan(glycan, rnd), write_glycan(glycan, rnd)
    assert canonical_key(one) == canonical_key(other)
    parsed = parse(one)
    fragments, tree = glycan
    assert len(parsed.residues) == size(tree) + sum(size(t) for _, t in fragments)
    assert len(parsed.floating) == len(fragments)
    assert canonical_key(render(parsed)) == parsed.key == canonical_key(other)
    assert parse(parsed.key).key == parsed.key


@PROPERTY
@given(
    glycans(("Gal", "Glc"), ("a1-3", "b1-4")),
    glycans(("Gal", "Glc"), ("a1-3", "b1-4")),
    st.randoms(use_true_random=False),
)
def test_equal_keys_exactly_for_equal_trees(
    first: tuple[Any, ...], second: tuple[Any, ...], rnd: random.Random
) -> None:
    """A tiny vocabulary makes equal trees common, so both directions get exercised."""

    def form(glycan: tuple[Any, ...]) -> Any:
        fragments, tree = glycan
        return (tuple(sorted((link, shape(t)) for link, t in fragments)), shape(tree))

    same_key = canonical_key(write_glycan(first, rnd)) == canonical_key(write_glycan(second, rnd))
    assert same_key == (form(first) == form(second))


TOKENS = (
    "Gal",
    "GlcNAc",
    "L-Fuc",
    "Hello",
    "Gal(b1-3)",
    "[Fuc(a1-2)]",
    "{Neu5Ac(a2-?)}",
    "(b1-4)",
    "(a2-3/6)",
    "(1-4)",
    "(x)",
    "[",
    "]",
    "{",
    "}",
    "(",
    ")",
    "][",
    "}{",
    "-",
    "4",
    "OMe",
    " ",
    "\x00",
    ",",
    "{6P}",  # issue 9: floating substituents, uncertain modification positions
    "{OS}",
    "Gal3/6S",
    "/",
    "QuiNAc4NSHb",
)


def check_agreement(text: str) -> None:
    """The builder accepts exactly what the diagnoser passes, and every error is specific."""
    result = try_parse(text)
    if text:
        built = iupac._build(text)
        assert (built is None) == (iupac._diagnose(text) is not None), text
        # the run-based key of canonical_key accepts exactly the same strings, with one key
        assert iupac._key(text) == (None if built is None else built.key), text
    if isinstance(result, IUPACError):
        assert 0 <= result.position <= len(text)
        assert not str(result).startswith("malformed glycan"), text  # a specific diagnosis
    else:
        assert canonical_key(render(result)) == result.key


@settings(PROPERTY, max_examples=500)
@given(st.lists(st.sampled_from(TOKENS), max_size=14).map("".join) | st.text(max_size=30))
def test_fast_builder_and_diagnoser_agree_on_random_text(text: str) -> None:
    check_agreement(text)


PIECES = re.compile(r"\([^()]*\)|[\[\]{}]|[^()\[\]{}]+")  # residues, linkages, brackets
EDITS = ("", "(", ")", "[", "]", "{", "}", "][", ")(", "Gal", "(a1-3)", "(b1-4", "b1-4)", "x")
SEEDS = (
    "Gal(b1-4)[Fuc(a1-3)]GlcNAc(b1-2)Man(a1-3)[Man(a1-6)]Man",
    "Man(a1-2)[Man(a1-3)[Man(a1-6)]Man(a1-6)]Man(b1-4)GlcNAc(b1-4)[Fuc(a1-6)]GlcNAc",
    "[Fuc(a1-2)][Gal(a1-3)]Gal(b1-4)Glc-ol",
    "{Neu5Ac(a2-3/6)}{Gal(b1-4)GlcNAc(b1-?)}Gal(b1-4)GlcNAc(1-4)Glc",
    "{Fuc(a1-?)}[Glc(b1-3)]D-6dTal(a1-3)D-6dTal",
    "{OS}{Neu5Ac(a2-3)}{6P}Gal3/6S(b1-4)[Fuc(a1-3)]GlcNAc(b1-6)D-2,7-Anhydro-3dManHep-ulosonic",
)


@pytest.mark.parametrize("seed", SEEDS)
def test_fast_builder_and_diagnoser_agree_on_every_single_edit(seed: str) -> None:
    """Exhaustive neighbourhood of valid glycans: every piece (residue, linkage, bracket)
    deleted, duplicated, replaced by or preceded by each edit. Near-valid strings are where
    the fast path and the diagnoser could drift apart (e.g. ``Gal)[Fuc(a1-3)]...``)."""
    pieces = PIECES.findall(seed)
    assert "".join(pieces) == seed
    for edit in EDITS:
        check_agreement(seed + edit)
    for i, piece in enumerate(pieces):
        before, after = "".join(pieces[:i]), "".join(pieces[i + 1 :])
        check_agreement(before + piece + piece + after)
        for edit in EDITS:
            check_agreement(before + edit + after)
            check_agreement(before + edit + piece + after)


# --------------------------------------------------------------------------- glycowork


def glycowork_form(graph: Any) -> Any:
    """Order-free form of a glycowork graph: a forest of rooted trees, labels verbatim.

    glycowork's graphs hold residues and linkages as nodes with a ``string_labels`` attribute
    and edges from parent to child; floating fragments are extra components rooted at their
    linkage. Sorting children recursively gives a form that is equal exactly when the graphs
    are isomorphic with matching labels (a rooted tree is determined by its sorted nesting).
    """
    assert all(degree <= 1 for _, degree in graph.in_degree())  # a forest of rooted trees
    label = {n: d["string_labels"] for n, d in graph.nodes(data=True)}
    form: dict[int, Any] = {}

    def visit(node: int) -> Any:
        stack = [node]
        while stack:  # iterative post-order: long chains would exhaust recursion
            current = stack[-1]
            pending = [c for c in graph.successors(current) if c not in form]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            form[current] = (
                label[current],
                tuple(sorted(form[c] for c in graph.successors(current))),
            )
        return form[node]

    return tuple(sorted(visit(n) for n, degree in graph.in_degree() if degree == 0))


def our_form(glycan: Glycan) -> Any:
    """The same form from our tree, with residues and linkages spelled as written."""
    children: dict[int, list[Any]] = defaultdict(list)
    node: dict[int, Any] = {}
    for residue in glycan.residues:  # children precede parents
        node[residue.index] = (residue.name, tuple(sorted(children[residue.index])))
        link = next((link for link in glycan.linkages if link.child == residue.index), None)
        if link is not None and link.parent is not None:
            children[link.parent].append((link.written, (node[residue.index],)))
    by_child = {link.child: link for link in glycan.linkages}
    roots = [node[glycan.root]] + [(by_child[f].written, (node[f],)) for f in glycan.floating]
    return tuple(sorted(roots))


# Where our key and glycowork's exact-label identity group the real strings differently. Each
# group is one glycan for us and several for glycowork's graph, because we drop a configuration
# prefix that IUPAC-condensed leaves implicit: 6dTal is D-6-deoxytalose, so "D-6dTal" adds
# nothing. glycowork agrees: its canonicalize_iupac maps "D-6dTal" to "6dTal" (checked below);
# only its graph compares labels verbatim. No group goes the other way.
DISAGREEMENTS = [
    {"6dTal(a1-2)6dTal(a1-3)6dTal", "D-6dTal(a1-2)D-6dTal(a1-3)D-6dTal"},
    {"6dTal(a1-3)6dTalOAc(a1-2)6dTal", "D-6dTal(a1-3)D-6dTalOAc(a1-2)D-6dTal"},
    {"6dTalOAc(a1-2)6dTal(a1-3)6dTalOAc", "D-6dTalOAc(a1-2)D-6dTal(a1-3)D-6dTalOAc"},
    {"6dTalOAc(a1-3)Fuc(a1-4)Glc(b1-3)6dTalOAc", "D-6dTalOAc(a1-3)Fuc(a1-4)Glc(b1-3)D-6dTalOAc"},
    {"Glc(b1-3)6dTalOAc(a1-3)Fuc", "Glc(b1-3)D-6dTalOAc(a1-3)Fuc"},
    {
        "Glc(b1-3)6dTalOAc(a1-3)Fuc(a1-4)Glc(b1-3)6dTalOAc(a1-3)Fuc",
        "Glc(b1-3)D-6dTalOAc(a1-3)Fuc(a1-4)Glc(b1-3)D-6dTalOAc(a1-3)Fuc",
    },
    {"GlcA(a1-4)[6dTalOMe(a1-3)]Fuc(a1-4)GlcA", "GlcA(a1-4)[D-6dTalOMe(a1-3)]Fuc(a1-4)GlcA"},
    {
        "GlcOMeA(a1-4)[6dTalOMe(a1-3)]Fuc(a1-4)GlcOMeA",
        "GlcOMeA(a1-4)[D-6dTalOMe(a1-3)]Fuc(a1-4)GlcOMeA",
    },
    {
        "GlcOMeA(b1-4)[6dTalOMe(a1-3)]FucOMe(a1-4)GlcOMeA",
        "GlcOMeA(b1-4)[D-6dTalOMe(a1-3)]FucOMe(a1-4)GlcOMeA",
    },
    {
        "[Glc(b1-3)]6dTal(a1-3)6dTal(b1-3)6dTal(b1-3)6dTal(b1-2)[Glc(b1-3)]6dTal(b1-2)[Glc(b1-3)]6dTal(b1-2)6dTal",
        "[Glc(b1-3)]D-6dTal(a1-3)D-6dTal(b1-3)D-6dTal(b1-3)D-6dTal(b1-2)[Glc(b1-3)]D-6dTal(b1-2)[Glc(b1-3)]D-6dTal(b1-2)D-6dTal",
    },
]


@pytest.fixture(scope="module")
def glycowork_graphs(real_strings: tuple[str, ...]) -> dict[str, Any]:
    """glycowork's own graph of every real string, without its rescue-by-rewriting wrapper."""
    graph_module = pytest.importorskip("glycowork.motif.graph")
    build: Callable[[str], Any] = graph_module.glycan_to_nxGraph.__wrapped__
    return {s: build(s) for s in real_strings}


def test_trees_match_glycowork_graphs(
    glycowork_graphs: dict[str, Any], accepted_strings: list[str]
) -> None:
    """On every string we accept, our tree is glycowork's graph (same residues and links)."""
    for s in accepted_strings:
        assert our_form(parse(s)) == glycowork_form(glycowork_graphs[s]), s
    # glycowork builds a graph for the malformed strings as well: it does not validate
    assert all(glycowork_graphs[s].number_of_nodes() for s in MALFORMED)


def test_keys_group_like_glycowork(
    glycowork_graphs: dict[str, Any], accepted_strings: list[str]
) -> None:
    import networkx as nx
    from glycowork.motif.processing import canonicalize_iupac

    ours: dict[str, set[str]] = defaultdict(set)
    theirs: dict[Any, set[str]] = defaultdict(set)
    for s in accepted_strings:
        ours[canonical_key(s)].add(s)
        theirs[glycowork_form(glycowork_graphs[s])].add(s)
    ours_groups = {frozenset(g) for g in ours.values()}
    theirs_groups = {frozenset(g) for g in theirs.values()}

    merged_by_us = ours_groups - theirs_groups
    assert {frozenset(g) for g in DISAGREEMENTS} == merged_by_us
    # every group we merge is a union of glycowork groups (we never split what it joins)
    assert all(any(t <= g for g in merged_by_us) for t in theirs_groups - ours_groups)
    assert len(theirs_groups - ours_groups) == 2 * len(DISAGREEMENTS)

    same = nx.algorithms.isomorphism.categorical_node_match("string_labels", None)
    for group in DISAGREEMENTS:
        first, second = sorted(group)
        assert not nx.is_isomorphic(
            glycowork_graphs[first], glycowork_graphs[second], node_match=same
        )
        assert canonicalize_iupac(first) == canonicalize_iupac(second)
    # the sorted-nesting form is exact: a deterministic sample of our groups, checked by VF2
    multi = sorted(sorted(g) for g in ours_groups & theirs_groups if len(g) > 1)
    for group in multi[:: max(1, len(multi) // 200)]:
        for other in group[1:]:
            assert nx.is_isomorphic(
                glycowork_graphs[group[0]], glycowork_graphs[other], node_match=same
            )


# --------------------------------------------------------------------------- modification order

POSITIONED = ("1Cer", "2Ac", "3S", "4Ac", "6S", "6P", "9Ac", "7Ac", "1Coum", "4PEtN", "6PCho")
UNPOSITIONED = ("OMe", "OAc", "NAc", "OS")


@settings(max_examples=300, deadline=None)
@given(
    base=st.sampled_from(("Gal", "Glc", "D-Fuc", "Neu", "Man", "GalNAc")),
    mods=st.lists(st.sampled_from(POSITIONED), min_size=1, max_size=4),
    head=st.lists(st.sampled_from(UNPOSITIONED), max_size=2),
    rnd=st.randoms(use_true_random=False),
)
def test_modification_order_never_changes_the_key(
    base: str, mods: list[str], head: list[str], rnd: random.Random
) -> None:
    """Positioned substituents in any order, and unpositioned ones moved in between them, give
    one key; a different set of substituents gives another (no false merge)."""
    written = base + "".join(head) + "".join(mods)
    key = canonical_key(f"{written}(b1-4)Glc")
    shuffled = mods[:]
    rnd.shuffle(shuffled)
    # unpositioned units keep their own order, anywhere between the others
    at = sorted(rnd.randint(0, len(shuffled)) for _ in head)
    mixed: list[str] = []
    for i, unit in enumerate([*shuffled, ""]):
        mixed += [h for h, a in zip(head, at, strict=True) if a == i]
        mixed.append(unit)
    other = base + "".join(mixed)
    assert canonical_key(f"{other}(b1-4)Glc") == key
    dropped = base + "".join(head) + "".join(mods[1:])
    assert canonical_key(f"{dropped}(b1-4)Glc") != key
    changed = base + "".join(head) + "".join(mods) + "8S"
    assert canonical_key(f"{changed}(b1-4)Glc") != key
