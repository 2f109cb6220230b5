"""The ``curate`` console script: a tiny module so that Ctrl-C while the heavy libraries load
(polars, pyarrow, pydantic: a second or two) still ends with one line and exit 130, not a
traceback from the middle of an import."""

from __future__ import annotations

import sys


def run() -> None:
    try:
        from curate.cli.main import main
    except KeyboardInterrupt:
        sys.stderr.write("curate: interrupted\n")
        sys.exit(130)
    sys.exit(main())
