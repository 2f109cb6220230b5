"""Generate ``curate/data/iso639.json`` (the language codes the deepfake family accepts) once,
from Debian's ``iso-codes`` package (``/usr/share/iso-codes/json/iso_639-{2,3}.json``, the
ISO 639 tables as the Debian project keeps them in sync with the registration authorities).

Why a generated file and not a library: no ISO 639 library is in curate's dependencies
(pycountry, langcodes), and the family needs only the code lists and the ISO 639-1 names. Run
``python scripts/make_iso639.py`` after an iso-codes update and commit the result; the file says
which iso-codes version it came from.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

SRC = Path("/usr/share/iso-codes/json")
OUT = Path(__file__).resolve().parents[1] / "curate" / "data" / "iso639.json"


def main() -> None:
    part3 = json.loads((SRC / "iso_639-3.json").read_text())["639-3"]
    part2 = json.loads((SRC / "iso_639-2.json").read_text())["639-2"]
    try:
        version = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", "iso-codes"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        version = "unknown"
    alpha2 = {}
    for e in part3 + part2:
        if "alpha_2" in e:
            alpha2.setdefault(e["alpha_2"], {"alpha_3": e["alpha_3"], "name": e["name"]})
    alpha3 = sorted({e["alpha_3"] for e in part3} | {e["alpha_3"] for e in part2})
    # ISO 639-2/B codes (fre, ger, chi, ...) that differ from their 639-2/T code
    bibliographic = {e["bibliographic"]: e["alpha_3"] for e in part2 if "bibliographic" in e}
    out = {
        "source": f"Debian iso-codes {version}: iso_639-3.json and iso_639-2.json",
        "alpha2": dict(sorted(alpha2.items())),
        "alpha3": " ".join(alpha3),
        "bibliographic": dict(sorted(bibliographic.items())),
    }
    OUT.write_text(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(alpha2)} ISO 639-1 codes, {len(alpha3)} ISO 639-2/3 codes")


if __name__ == "__main__":
    main()
