"""A question is never dropped silently (issue 42, item 7): with the team's database stopped
while it is asked, what the person typed stays on the page, is kept (in the process while the
database is away, then in it), and is shown with "Ask it" once the database answers, in that
tab or after a reload; the same for a tab reloaded while its question waited behind another
tab's answer."""

# ruff: noqa: F811  (data_dir is a fixture imported from tests.test_app)
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from streamlit.testing.v1 import AppTest

from rag_core import build_context, load_settings
from tests.test_app import ORION, click, data_dir, open_app, seed, texts  # noqa: F401 (fixture)

pytestmark = pytest.mark.timeout(600)
QUESTION = "Where did the Orion project launch?"


def shown(at: AppTest) -> str:
    """Every text the page shows (the conversation, its messages and notices)."""
    parts = texts(at.main.markdown) + texts(at.main.error) + texts(at.main.info) + texts(at.main.warning)
    return "\n".join(str(p) for p in parts)


def answered(session_id: str) -> list[tuple[str, str]]:
    ctx = build_context(load_settings())
    return [(m.role, m.content) for m in ctx.sessions.recent(session_id, 10)]


def test_a_question_asked_while_the_team_database_is_stopped_is_kept_and_asked_once_it_is_back(
    data_dir: Path, pg_url: str, postgres_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCENT_DATABASE_URL", pg_url)
    seed(ORION)
    at = open_app()
    chat = at.session_state["session_id"]
    postgres_server.stop()
    try:
        at.chat_input[0].set_value(QUESTION).run()
        assert not at.exception, at.exception
        page = shown(at)
        assert "cannot be reached" in page  # what happened
        assert QUESTION in page and "kept" in page  # and what became of the question
        again = open_app(session=chat)  # the tab reloaded while the database is still away
        assert QUESTION in shown(again) and "kept" in shown(again)
    finally:
        postgres_server.start()
    at.run()  # the page tries again (every few seconds by itself)
    assert not at.exception, at.exception
    assert QUESTION in shown(at)
    click(at, "ask_pending_0")
    assert [role for role, _ in answered(chat)] == ["user", "assistant"]
    assert answered(chat)[0][1] == QUESTION and "Lisbon" in answered(chat)[1][1]
    again = open_app(session=chat)
    assert "ask_pending_0" not in [b.key for b in again.button]  # asked: no longer kept
    assert QUESTION not in [p.question for p in build_context(load_settings()).sessions.pending.of(chat)]


def test_a_tab_reloaded_while_its_question_waits_for_another_tabs_answer_finds_it_kept(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(ORION)
    ctx = build_context(load_settings())
    chat = ctx.sessions.create("Shared chat")
    other = ctx.sessions.claims.take(chat.id, "The other tab's question")  # another tab is answering here
    at = open_app(session=chat.id)

    def reloaded(*args, **kwargs):
        raise StopException()  # the tab is reloaded while its question waits: its run is stopped

    with monkeypatch.context() as patched:
        patched.setattr("ui.live.show_waiting", reloaded)
        at.chat_input[0].set_value(QUESTION).run()
    assert answered(chat.id) == []  # not asked: the other answer comes first

    again = open_app(session=chat.id)  # the reloaded tab
    assert QUESTION in shown(again)
    assert again.button(key="ask_pending_0").disabled  # it waits for the other answer
    other.release()
    again.run()
    click(again, "ask_pending_0")
    assert [q for role, q in answered(chat.id) if role == "user"] == [QUESTION]
    assert "Lisbon" in answered(chat.id)[-1][1]


def test_a_kept_question_can_be_dismissed(data_dir: Path) -> None:
    seed(ORION)
    ctx = build_context(load_settings())
    chat = ctx.sessions.create("A chat")
    kept = ctx.sessions.pending.keep(chat.id, QUESTION)
    at = open_app(session=chat.id)
    assert QUESTION not in shown(at)  # being asked by the run that kept it: that tab shows it
    ctx.sessions.pending.release(kept.id)  # that run ended without asking it
    at.run()
    assert QUESTION in shown(at)
    click(at, "dismiss_pending_0")
    assert QUESTION not in shown(at)
    assert ctx.sessions.pending.of(chat.id) == []


def test_the_database_stopping_while_the_question_is_asked_leaves_it_on_the_page_and_kept(
    data_dir: Path, pg_url: str, postgres_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag_core.storage.claims import SessionClaims

    monkeypatch.setenv("DOCENT_DATABASE_URL", pg_url)
    seed(ORION)
    at = open_app()
    chat = at.session_state["session_id"]
    take = SessionClaims.take

    def stops_first(self, *args, **kwargs):
        postgres_server.stop()  # after the question was kept, before it is stored
        return take(self, *args, **kwargs)

    try:
        with monkeypatch.context() as patched:
            patched.setattr(SessionClaims, "take", stops_first)
            at.chat_input[0].set_value(QUESTION).run()
        assert not at.exception, at.exception
        assert QUESTION in shown(at) and "cannot be reached" in shown(at)
    finally:
        postgres_server.start()
    at.run()
    assert QUESTION in shown(at) and "cannot be reached" in shown(at)  # the error, under the question kept
    click(at, "ask_pending_0")
    assert [q for role, q in answered(chat) if role == "user"] == [QUESTION]
