"""The ``curate`` command line: a thin typer layer over the library API (:mod:`curate.api`) and
``curate check`` (:mod:`curate.check`).

May import: anything in curate; nothing imports it but ``curate.__main__`` and the entry point.
"""
