"""The HTTP API in team mode (PostgreSQL, ``DOCENT_DATABASE_URL``): a key is a person's, their
sessions are theirs alone, and with a library per person their uploads too; a bare key is
refused at start."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from rag_core import build_context
from rag_core.api import ApiKeys, create_app
from rag_core.errors import ConfigError
from tests.fakes import ScriptedLLM

ANA = {"Authorization": "Bearer key-of-ana-123"}
BO = {"Authorization": "Bearer key-of-bo-456"}


def test_in_team_mode_each_key_is_a_persons_and_sees_only_their_own(pg_url, make_settings, tmp_path):
    settings = make_settings(database_url=pg_url, files_dir=tmp_path / "files", libraries="per_user")
    ctx = build_context(settings, llm=ScriptedLLM())
    with pytest.raises(ConfigError, match="PERSON:KEY"):
        ApiKeys.parse(["key-of-nobody-1"], team=bool(settings.database))
    keys = ApiKeys.parse(["ana@example.org:key-of-ana-123", "bo@example.org:key-of-bo-456"], team=True)
    with TestClient(create_app(ctx, keys), raise_server_exceptions=False) as c:
        up = c.post(
            "/api/documents", files=[("files", ("ana.txt", b"Ana's notes: the pump delivers 42 litres."))], headers=ANA
        )
        assert up.status_code == 202
        ctx.jobs.wait(up.json()["id"], 60)
        assert c.get(f"/api/jobs/{up.json()['id']}", headers=BO).status_code == 404
        assert [d["name"] for d in c.get("/api/documents", headers=ANA).json()] == ["ana.txt"]
        assert c.get("/api/documents", headers=BO).json() == []  # a library per person
        sid = c.post("/api/chat/sessions", json={"name": "ana's"}, headers=ANA).json()["id"]
        answered = c.post(
            f"/api/sessions/{sid}/messages", json={"question": "pump litres?", "stream": False}, headers=ANA
        )
        assert answered.status_code == 200 and answered.json()["sources"][0]["file"] == "ana.txt"
        assert c.get(f"/api/sessions/{sid}", headers=BO).status_code == 404
        assert c.get("/api/chat/sessions", headers=BO).json() == []
        found = c.post("/api/vector/search", json={"query": "pump litres"}, headers=BO).json()
        assert found["sources"] == []  # bo's library holds none of ana's documents
    assert [s.id for s in ctx.for_person("ana@example.org").sessions.list()] == [sid]
