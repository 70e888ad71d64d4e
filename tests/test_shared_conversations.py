"""A team database (``DOCENT_DATABASE_URL``) without sign-in: every visitor is the same
person to Docent. That is said on every page and in the server's log, and a new visitor
gets a new chat rather than the latest one, someone else's (issue 42, item 8)."""

# ruff: noqa: F811  (data_dir is a fixture imported from tests.test_app)
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from rag_core import build_context, load_settings
from tests.test_app import ORION, ask, data_dir, open_app, seed, texts  # noqa: F401 (fixture)

pytestmark = pytest.mark.timeout(300)


def test_a_team_database_without_sign_in_says_so_and_a_new_visitor_gets_a_new_chat(
    data_dir: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DOCENT_DATABASE_URL", pg_url)
    seed(ORION)
    with caplog.at_level(logging.WARNING, logger="ui.auth"):
        ana = open_app()
    ask(ana, "Where did the Orion project launch?")
    anas = ana.session_state["session_id"]
    assert any("shares one set of conversations" in w for w in texts(ana.main.warning))

    ben = open_app()  # another person, on the address without a chat in it
    assert ben.session_state["session_id"] != anas
    assert not ben.main.chat_message  # nothing of Ana's conversation on his page
    assert any("nobody signs in" in w for w in texts(ben.main.warning))
    assert ben.button(key="new_chat")  # the sidebar still lists every chat, as the warning says

    ben.button(key="new_chat").click().run()  # "New chat" never hands him an empty chat of someone else's
    ctx = build_context(load_settings())
    assert ctx.sessions.get(ben.session_state["session_id"]).name == "New chat"
    assert ana.session_state["session_id"] == anas


def test_the_server_says_so_once_when_the_app_first_runs(
    data_dir: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import ui.auth

    monkeypatch.setenv("DOCENT_DATABASE_URL", pg_url)
    monkeypatch.setattr(ui.auth, "_said_at_start", [])
    open_app()
    open_app()
    said = capsys.readouterr().err
    assert said.count("Docent: Everyone who opens this Docent shares one set of conversations") == 1


def test_without_a_team_database_the_latest_chat_opens_and_nothing_is_said(data_dir: Path) -> None:
    ctx = build_context(load_settings())
    latest = ctx.sessions.create("Mine")
    at = open_app()
    assert at.session_state["session_id"] == latest.id
    assert not [w for w in texts(at.main.warning) if "shares" in w]
