"""The ``curate`` console script: a tiny module so that Ctrl-C while the heavy libraries load
(polars, pyarrow, pydantic: a second or two) still ends with one line and exit 130.

Why the signal is *held* during the imports rather than caught as KeyboardInterrupt: an
exception raised inside a C extension's module initialisation can crash the interpreter
(seen: a segmentation fault inside orjson's import). So the handler only records the signal,
and it is acted on once the imports are done.
"""

from __future__ import annotations

import signal
import sys

_NAMES = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hangup"}


def run() -> None:
    pending: list[int] = []
    previous = {sig: signal.signal(sig, lambda n, _f: pending.append(n)) for sig in _NAMES}
    try:
        from curate.cli.main import main
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
    if pending:
        sys.stderr.write(f"curate: {_NAMES[pending[0]]}\n")
        sys.exit(128 + pending[0])
    sys.exit(main())
