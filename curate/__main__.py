"""``python -m curate`` runs the same CLI as the ``curate`` command (same exit codes)."""

from curate.cli.entry import run

if __name__ == "__main__":
    run()
