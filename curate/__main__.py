"""``python -m curate`` runs the same CLI as the ``curate`` command (same exit codes)."""

from curate.cli.main import _entry

if __name__ == "__main__":
    _entry()
