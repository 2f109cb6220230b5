"""Pushing an exported folder to the Hugging Face Hub (the ``hub`` extra): the repository id
checked before any upload, one commit for the whole folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from curate.core.errors import RemoteError, UsageError


def check_repo_id(repo_id: str) -> None:
    """``--push-to-hub OWNER/NAME`` checked before any work: the ``hub`` extra is installed and
    the id is one the Hub accepts (exit 2 otherwise, nothing exported)."""
    try:
        from huggingface_hub.utils import HFValidationError, validate_repo_id
    except ImportError:
        raise RemoteError(
            "--push-to-hub needs huggingface_hub (pip install 'curate[hub]')"
        ) from None
    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        msg = " ".join(str(e).split())[:200]
        raise UsageError(
            f"--push-to-hub {repo_id!r}: not a valid dataset repo id ({msg})"
        ) from None


def push_to_hub(folder: str | Path, repo_id: str, *, private: bool = False) -> Any:
    """Upload an exported folder as a dataset repo (needs ``huggingface_hub`` and a token).

    Every failure of the remote side (offline, no login, no permission, a bad repo id, HTTP
    errors) is a :class:`~curate.core.errors.RemoteError`: exit 2 with one line, and the exported
    folder stays where it is, so the user can push it again without re-exporting. The marker
    folder ``.curate/`` (local paths of the inputs) is not uploaded.
    """
    try:
        from huggingface_hub import HfApi
    except ImportError:
        raise RemoteError(
            f"--push-to-hub needs huggingface_hub (pip install 'curate[hub]'); "
            f"the exported folder {folder} stays"
        ) from None
    try:
        api = HfApi()
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        return api.upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type="dataset",
            ignore_patterns=[".curate/*"],
        )
    except Exception as e:  # network, auth, HTTP, validation: all are the remote's answer
        msg = " ".join(str(e).split())[:300] or type(e).__name__
        raise RemoteError(
            f"push to {repo_id} failed ({type(e).__name__}: {msg}); "
            f"the exported folder {folder} stays"
        ) from None
