"""A long chat and a long list of chats open like a chat app's: the latest messages with
"Show earlier messages", the most recent chats with search for the rest, and a question
typed is kept before anything else happens (issue 42, item 4).

How fast they open is measured by ``python -m rag_core.bench.long_chats`` (figures, not
timed tests); here, what is drawn.
"""

# ruff: noqa: F811  (data_dir is a fixture imported from tests.test_app)
from __future__ import annotations

import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core import Message, build_context, load_settings
from rag_core.storage import SessionStore, SQLiteDatabase
from tests.test_app import ORION, ask, click, data_dir, open_app, plain, seed, texts  # noqa: F401 (fixture)
from ui.history import PAGE
from ui.sidebar import RECENT


def long_chat(ctx, n: int, name: str = "A long chat"):
    turns = []
    for i in range(n // 2):
        turns += [Message("user", f"Question number {i}?"), Message("assistant", f"Answer number {i}.")]
    return ctx.sessions.add_whole(name, turns)


def chat_messages(at: AppTest) -> list[str]:
    return [m.children[0].value for m in at.main.chat_message if m.children and hasattr(m.children[0], "value")]


def many_chats(ctx, n: int) -> None:
    now = time.time()
    with ctx.db.connect() as c:
        for i in range(n):
            c.execute(
                "INSERT INTO sessions (id, name, created, updated, doc_filter, owner) VALUES (?, ?, ?, ?, NULL, '')",
                (f"chat{i:05d}", f"Chat number {i}", now - i, now - i),
            )


# ============================================================================ storage
@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path):
    if request.param == "sqlite":
        return SQLiteDatabase(tmp_path / "d.db")
    from rag_core.storage.postgres import PostgresDatabase

    return PostgresDatabase(request.getfixturevalue("pg_url"))


def test_the_store_reads_a_conversation_from_its_end_a_page_at_a_time(db) -> None:
    sessions = SessionStore(db)
    s = sessions.add_whole("long", [Message("user", f"m{i}") for i in range(10)])
    last = sessions.recent(s.id, 3)
    assert [m.content for m in last] == ["m7", "m8", "m9"]
    assert [m.content for m in sessions.recent(s.id, 3, before=last[0].id)] == ["m4", "m5", "m6"]
    assert sessions.count(s.id) == 10
    assert sessions.message(s.id, last[0].id or 0) == last[0]
    assert sessions.for_owner("someone else").recent(s.id, 3) == []


def test_the_store_lists_the_latest_chats_and_finds_the_others_by_name(db) -> None:
    sessions = SessionStore(db)
    for i in range(12):
        made = sessions.create(f"Chat {i} Étude" if i == 2 else f"Chat {i}")
        with db.connect() as c:  # one second apart
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (1000.0 + i, made.id))
    shown, total = sessions.latest(5)
    assert total == 12 and [s.name for s in shown] == ["Chat 11", "Chat 10", "Chat 9", "Chat 8", "Chat 7"]
    shown, total = sessions.latest(5, "étude chat")
    assert total == 1 and [s.name for s in shown] == ["Chat 2 Étude"]
    assert sessions.for_owner("someone else").latest(5) == ([], 0)


# ============================================================================ the page
def test_a_ten_thousand_message_chat_draws_its_latest_messages_and_earlier_ones_on_request(data_dir: Path) -> None:
    seed(ORION)
    ctx = build_context(load_settings())
    chat = long_chat(ctx, 10_000)
    at = open_app(session=chat.id)
    assert len(at.main.chat_message) == PAGE
    assert chat_messages(at)[-1] == "Answer number 4999."
    assert any("10,000" in c for c in texts(at.main.caption))  # "the latest 30 of 10,000 messages"
    click(at, "show_earlier")
    assert len(at.main.chat_message) == 2 * PAGE
    assert chat_messages(at)[0] == f"Question number {5000 - PAGE}?"

    ask(at, "Where did the Orion project launch?")
    stored = ctx.sessions.recent(chat.id, 2)
    assert [m.role for m in stored] == ["user", "assistant"] and "Lisbon" in stored[1].content
    assert ctx.sessions.count(chat.id) == 10_002


def test_a_question_typed_is_kept_before_the_conversation_is_drawn(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tab died while it drew the conversation (a 10,000-message chat took it to 2.3 GB):
    the question typed is kept, and the next visit shows it with a way to ask it."""
    seed(ORION)
    ctx = build_context(load_settings())
    chat = long_chat(ctx, 10)
    at = open_app(session=chat.id)

    def dies(*args, **kwargs):
        raise RuntimeError("the tab went away while the conversation was drawn")

    with monkeypatch.context() as patched:
        patched.setattr("ui.history.render_answer", dies)
        at.chat_input[0].set_value("Where did the Orion project launch?").run()
    assert at.exception  # the run died, before the question was asked
    assert [p.question for p in ctx.sessions.pending.of(chat.id)] == ["Where did the Orion project launch?"]

    again = open_app(session=chat.id)  # the tab opened again
    assert "Where did the Orion project launch?" in chat_messages(again)
    click(again, "ask_pending_0")
    last = ctx.sessions.recent(chat.id, 2)
    assert last[0].content == "Where did the Orion project launch?" and "Lisbon" in last[1].content
    assert ctx.sessions.pending.of(chat.id) == []


def test_five_thousand_chats_show_the_most_recent_and_search_finds_the_rest(data_dir: Path) -> None:
    ctx = build_context(load_settings())
    many_chats(ctx, 5000)
    at = open_app()
    buttons = [b for b in at.sidebar.button if b.key.startswith("open_")]
    assert len(buttons) <= RECENT + 1  # the recent ones (and the one open, if it is older)
    assert plain(buttons[0].label).removeprefix("💬 ") == "Chat number 0"
    assert any("5,000" in c for c in texts(at.sidebar.caption))  # "30 of 5,000 chats: search for the others"

    at.sidebar.text_input(key="chat_search").input("number 4321").run()
    names = [plain(b.label).removeprefix("💬 ") for b in at.sidebar.button if b.key.startswith("open_")]
    assert names == ["Chat number 4321"]
    click(at, "open_chat04321")
    assert at.session_state["session_id"] == "chat04321"
