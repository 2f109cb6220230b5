"""--push-to-hub calls huggingface_hub with the exported folder (no network: the API is faked)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import huggingface_hub
from conftest import SAMPLE

from curate.cli.main import main


class FakeApi:
    calls: ClassVar[list[tuple[str, dict]]] = []

    def create_repo(self, repo_id: str, **kw) -> None:
        self.calls.append(("create_repo", {"repo_id": repo_id, **kw}))

    def upload_folder(self, **kw) -> str:
        self.calls.append(("upload_folder", kw))
        assert (Path(kw["folder_path"]) / "README.md").exists()
        return "ok"


def test_push_to_hub_uploads_the_exported_folder(tmp_path, monkeypatch, capsys) -> None:
    FakeApi.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    out = tmp_path / "hf"
    rc = main(["export", "mquake", str(SAMPLE), "--out", str(out), "--push-to-hub", "me/mq"])
    assert rc == 0
    assert [c[0] for c in FakeApi.calls] == ["create_repo", "upload_folder"]
    assert FakeApi.calls[0][1] == {
        "repo_id": "me/mq",
        "repo_type": "dataset",
        "private": False,
        "exist_ok": True,
    }
    assert FakeApi.calls[1][1]["folder_path"] == str(out)
    assert FakeApi.calls[1][1]["repo_type"] == "dataset"
    assert "pushed to me/mq" in capsys.readouterr().out
