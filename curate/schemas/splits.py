"""Split spellings every tabular family reads as the three canonical splits.

Why one table: a dataset's ``dev`` or ``valid`` split is the same thing whichever family reads
it, and two copies of the list would drift (one family learning ``training``, the other not).
A family may add its own (the deepfake family reads ``eval`` as test).
"""

from __future__ import annotations

SPLIT_NAMES = {
    "train": "train",
    "training": "train",
    "valid": "validation",
    "validation": "validation",
    "val": "validation",
    "dev": "validation",
    "development": "validation",
    "test": "test",
    "testing": "test",
}

__all__ = ["SPLIT_NAMES"]
