"""The Streamlit app, driven through AppTest with the fast, deterministic providers:
extractive answers (no LLM) and hashed embeddings, in a data folder under tmp_path.

Uploads go through the real ``st.file_uploader`` (AppTest can set its files). Pages are
reached the way a user does, from ``app.py`` and its ``st.navigation``.
"""

from __future__ import annotations

import datetime
import html
import json
import os
import threading
import time
import tomllib
from collections.abc import Iterable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core import build_context, load_settings
from rag_core.health import check
from rag_core.jobs import job_runner
from rag_core.providers.embeddings import HashEmbedding
from rag_core.settings import form_fields
from ui import sidebar
from ui.jobs import UPLOAD_JOBS
from ui.markdown import escape_markdown, inert_markdown
from ui.sidebar import MANAGE

REPO = Path(__file__).resolve().parents[1]
APP = REPO / "app.py"
TIMEOUT = 60

ORION = (
    "orion.md",
    b"# Orion\n\nThe Orion project launched in 2019 in Lisbon. Its budget was 4 million euros.\n",
    "text/markdown",
)
VEGA = (
    "vega.txt",
    b"The Vega telescope stands in the Atacama desert in Chile. It was built by 40 engineers.\n",
    "text/plain",
)
BROKEN = ("broken.pdf", b"this is not a PDF at all", "application/pdf")


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh data folder, extractive answers, hashed embeddings, no keys."""
    for name in list(os.environ):
        if name.startswith("DOCENT_") or name in ("OPENAI_API_KEY", "COHERE_API_KEY"):
            monkeypatch.delenv(name)
    folder = tmp_path / "data"
    monkeypatch.setenv("DOCENT_DATA_DIR", str(folder))
    monkeypatch.setenv("DOCENT_LLM_PROVIDER", "extractive")
    monkeypatch.setenv("DOCENT_EMBED_PROVIDER", "hash")
    monkeypatch.chdir(REPO)
    return folder


def open_app(page: str | None = None, **query: str) -> AppTest:
    """A new browser session on ``page`` (like opening the URL), with ``?key=value``."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update(query)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def upload(at: AppTest, *files: tuple[str, bytes, str], wait: bool = True) -> AppTest:
    """Drop files on the uploader; with ``wait``, let the background job end and rerun (a
    browser's page redraws itself each second while a job runs; AppTest does not)."""
    at.file_uploader[0].set_value(list(files)).run()
    assert not at.exception, at.exception
    if wait:
        finish_jobs(at)
    return at


def finish_jobs(at: AppTest) -> AppTest:
    runner = job_runner(Path(os.environ["DOCENT_DATA_DIR"]))
    for job_id in at.session_state[UPLOAD_JOBS] if UPLOAD_JOBS in at.session_state else []:  # noqa: SIM401 (no .get)
        view = runner.wait(job_id, timeout=TIMEOUT)
        assert view is None or not view.running, "the upload job did not end"
    at.run()
    assert not at.exception, at.exception
    return at


def ask(at: AppTest, question: str) -> AppTest:
    at.chat_input[0].set_value(question).run()
    assert not at.exception, at.exception
    return at


def click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def seed(*files: tuple[str, bytes, str]) -> None:
    """Index documents straight through rag_core (before the app's first run)."""
    ctx = build_context(load_settings())
    for name, data, _ in files:
        assert ctx.ingestion.ingest_bytes(data, name).status == "indexed"


def texts(elements: Iterable) -> list[str]:
    return [e.value for e in elements]


# ============================================================================ navigation
def test_three_pages_each_with_the_sessions_sidebar(data_dir: Path) -> None:
    at = open_app()
    assert texts(at.title) == ["💬 Chat"]  # the default page
    for page, title in (
        ("app_pages/upload.py", "📤 Upload"),
        ("app_pages/settings.py", "⚙️ Settings"),
        ("app_pages/chat.py", "💬 Chat"),
    ):
        at.switch_page(page).run()
        assert not at.exception, at.exception
        assert texts(at.title) == [title]
        assert "➕ New chat" in [b.label for b in at.sidebar.button]
    assert at.query_params["session"] == at.session_state["session_id"]


def test_chat_without_documents_points_to_upload(data_dir: Path) -> None:
    at = open_app()
    assert any("No document is indexed yet" in i for i in texts(at.info))
    assert [link.proto.page for link in at.page_link][-1].endswith("upload")
    assert at.chat_input[0].proto.disabled


# ============================================================================ upload
def test_upload_indexes_files_reports_failures_by_name_and_never_twice(data_dir: Path) -> None:
    at = upload(open_app("app_pages/upload.py"), ORION, VEGA, BROKEN)
    successes = " ".join(texts(at.success))
    assert "orion.md" in successes and "vega.txt" in successes and "indexed" in successes
    [failure] = texts(at.error)
    assert "broken.pdf" in failure and "not a PDF" in failure
    assert sorted(at.dataframe[0].value["Name"]) == ["orion.md", "vega.txt"]

    at.run()  # any rerun (a click elsewhere) must not ingest the same uploads again
    assert len(at.session_state[UPLOAD_JOBS]) == 1
    assert len(at.error) == 1 and "broken.pdf" in at.error[0].value  # results stay until dismissed
    click(at, "clear_uploads")
    assert texts(at.success) == [] and texts(at.error) == []
    assert sorted(at.dataframe[0].value["Name"]) == ["orion.md", "vega.txt"]


def test_a_different_file_of_an_indexed_name_asks_replace_or_keep_both(data_dir: Path) -> None:
    orion2 = ("orion.md", b"# Orion\n\nA different report: Orion was cancelled in 2021.\n", "text/markdown")
    at = upload(open_app("app_pages/upload.py"), ORION)
    at = upload(at, orion2)  # a new upload of the same name, different content: nothing sent yet
    [question] = [w for w in texts(at.warning) if "already indexed from a different file" in w]
    assert "orion.md" in question
    assert [plain(b.label) for b in at.button if b.key and b.key.startswith(("replace_", "keep_both_", "skip_"))] == [
        "Replace it",
        "Keep both (as orion (2).md)",
        "Skip this file",
    ]
    assert list(at.dataframe[0].value["Name"]) == ["orion.md"]

    keep_both = next(b for b in at.button if b.key and b.key.startswith("keep_both_"))
    keep_both.click().run()
    finish_jobs(at)
    assert sorted(at.dataframe[0].value["Name"]) == ["orion (2).md", "orion.md"]
    assert any(escape_markdown("kept as orion (2).md") in w for w in texts(at.warning))
    assert not any("already indexed from a different file" in w for w in texts(at.warning))


def test_upload_runs_in_the_background_survives_switching_pages_and_cancels(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate, inside = threading.Event(), threading.Event()
    original = HashEmbedding._get_text_embeddings

    def held(self, texts):  # the first batch of embeddings waits until the test lets it go
        inside.set()
        assert gate.wait(TIMEOUT)
        return original(self, texts)

    monkeypatch.setattr(HashEmbedding, "_get_text_embeddings", held)
    at = upload(open_app("app_pages/upload.py"), VEGA, ORION, wait=False)
    assert inside.wait(TIMEOUT)
    at.run()
    assert "**⏳ Indexing 2 file(s)…**" in texts(at.markdown)
    bars = [b.proto.text for b in at.get("progress")]
    assert any(escape_markdown("vega.txt: embedding part 1 of 1: 0/1 passages") == t for t in bars)
    assert escape_markdown("orion.md: waiting") in bars
    assert any("Indexing: 0 of 2" in b.proto.text for b in at.sidebar.get("progress"))

    at.switch_page("app_pages/chat.py").run()
    at.switch_page("app_pages/upload.py").run()  # coming back: the same job, still running
    assert "**⏳ Indexing 2 file(s)…**" in texts(at.markdown)

    [job_id] = at.session_state[UPLOAD_JOBS]
    click(at, f"cancel_{job_id}")
    gate.set()
    finish_jobs(at)
    infos = texts(at.info)
    assert any("vega.txt" in i and "cancelled" in i for i in infos)
    assert any("orion.md" in i and "cancelled" in i for i in infos)
    assert "Indexed documents (0)" in texts(at.main.subheader)
    ctx = build_context(load_settings())
    assert check(ctx)[0] == [] and ctx.index.chunk_count() == 0  # absent, not half
    assert not (data_dir / "files" / "vega.txt").exists()


def test_delete_document_after_confirmation(data_dir: Path) -> None:
    at = upload(open_app("app_pages/upload.py"), ORION, VEGA)
    at.selectbox[0].select("orion.md").run()
    click(at, "delete_document")
    assert any("orion.md" in w for w in texts(at.warning))
    assert sorted(at.dataframe[0].value["Name"]) == ["orion.md", "vega.txt"]  # not yet

    click(at, "delete_document_no")
    assert sorted(at.dataframe[0].value["Name"]) == ["orion.md", "vega.txt"]

    at.selectbox[0].select("orion.md").run()
    click(at, "delete_document")
    click(at, "delete_document_yes")
    assert list(at.dataframe[0].value["Name"]) == ["vega.txt"]
    assert [d.name for d in build_context(load_settings()).ingestion.documents()] == ["vega.txt"]


def test_index_of_another_embedding_offers_a_rebuild(data_dir: Path) -> None:
    other = build_context(load_settings(), embed_model=HashEmbedding(dim=64))
    other.ingestion.ingest_bytes(ORION[1], ORION[0])

    at = open_app("app_pages/upload.py")
    assert any("hash-bow-64" in w for w in texts(at.warning))
    click(at, "rebuild_mismatch")
    assert not any("hash-bow-64" in w for w in texts(at.warning))
    assert list(at.dataframe[0].value["Name"]) == ["orion.md"]
    assert build_context(load_settings()).index.mismatch() is None


# ============================================================================ chat
def plain(label: str) -> str:
    """Escaped Markdown (labels, captions) as the browser shows it."""
    return html.unescape(label.replace("\\", ""))


def source_buttons(block) -> list:
    return [b for b in block.button if (b.key or "").startswith("src_")]


def stored(sid: str) -> list:
    return build_context(load_settings()).sessions.messages(sid)


def test_two_turns_show_answer_search_sources_and_timings(data_dir: Path) -> None:
    seed(ORION, VEGA)
    at = ask(open_app(), "Where did the Orion project launch?")
    user, assistant = at.chat_message
    assert user.markdown[0].value == "Where did the Orion project launch?"
    assert "Lisbon" in assistant.markdown[0].value
    assert not any("Searched for" in c for c in texts(assistant.caption))  # first turn: not rewritten
    labels = [plain(b.label) for b in source_buttons(assistant)]
    assert labels and labels[0].startswith("📄 orion.md") and labels[0].endswith("[1]")
    [timing] = [c for c in texts(assistant.caption) if "Answered in" in c]
    assert "retrieval" in timing and "first token" in timing

    at = ask(at, "What was its budget?")
    follow_up = at.chat_message[-1]
    assert "4 million euros" in follow_up.markdown[0].value
    searched = [c for c in texts(follow_up.caption) if "Searched for" in c]
    assert searched and "Orion" in searched[0]  # the standalone question the engine used
    assert any("orion.md" in b.label for b in source_buttons(follow_up))

    at = open_app(session=at.query_params["session"])  # a reload: the conversation comes back
    assert [m.name for m in at.chat_message] == ["user", "assistant", "user", "assistant"]
    assert any("Searched for" in c for c in texts(at.chat_message[-1].caption))


def test_a_source_button_opens_the_viewer_on_its_passage(data_dir: Path) -> None:
    seed(ORION, VEGA)
    at = ask(open_app(), "Where does the Vega telescope stand?")
    [vega] = [b for b in source_buttons(at.chat_message[-1]) if "vega.txt" in b.label]
    n = int(plain(vega.label).rsplit("[", 1)[1].rstrip("]"))
    vega.click().run()
    assert not at.exception, at.exception
    state = at.session_state["source_viewer"]
    assert state["n"] == n and state["sources"][n - 1]["file"] == "vega.txt"


def test_a_citation_link_opens_the_viewer_in_a_new_tab(data_dir: Path) -> None:
    seed(ORION)
    at = ask(open_app(), "Where did the Orion project launch?")
    sid = at.session_state["session_id"]
    answer = stored(sid)[-1]
    tab = open_app(session=sid, source=f"{answer.id}-1")  # what the link [1] opens
    assert tab.session_state["source_viewer"]["sources"] == answer.sources
    assert tab.session_state["source_viewer"]["n"] == 1
    assert "source" not in tab.query_params  # opened once, not on every rerun

    gone = open_app(session=sid, source="999999-1")
    assert any("not in this conversation" in t for t in texts(gone.toast))
    assert "source_viewer" not in gone.session_state


def test_doc_filter_shows_the_scope_and_limits_the_sources(data_dir: Path) -> None:
    seed(ORION, VEGA)
    at = open_app()
    assert any("Searching all 2 document(s)" in c for c in texts(at.caption))
    sid = at.session_state["session_id"]
    at.multiselect(key=f"doc_filter_{sid}").select("vega.txt").run()
    assert build_context(load_settings()).sessions.get(sid).doc_filter == ["vega.txt"]
    assert any("Searching 1 of 2 documents: vega.txt" in c for c in texts(at.caption))  # in the header at once

    at = ask(at, "Where did the Orion project launch?")  # Orion is only in orion.md, out of scope
    files = {s["file"] for m in stored(sid) for s in m.sources}
    assert files <= {"vega.txt"}  # never a source from outside the scope
    assert all("vega.txt" in b.label for b in source_buttons(at.chat_message[-1]))
    assert "don't mention Orion" in at.chat_message[-1].markdown[0].value


def test_engine_error_is_shown_in_the_chat_and_the_question_kept(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(ORION)
    monkeypatch.setenv("DOCENT_LLM_PROVIDER", "openai")  # and no key anywhere
    at = ask(open_app(), "Where did the Orion project launch?")
    [error] = texts(at.error)
    assert "needs a key" in error
    assert at.chat_message[0].markdown[0].value == "Where did the Orion project launch?"
    sid = at.session_state["session_id"]
    assert [(m.role, m.content) for m in stored(sid)] == [("user", "Where did the Orion project launch?")]

    click(at, "retry")  # still failing: same error, the question stored once
    assert "needs a key" in texts(at.error)[0]
    assert len(stored(sid)) == 1

    monkeypatch.setenv("DOCENT_LLM_PROVIDER", "extractive")
    at = click(open_app(session=sid), "retry")  # after a reload too, then it works
    assert not at.error
    assert [m.role for m in stored(sid)] == ["user", "assistant"] and "Lisbon" in stored(sid)[-1].content


def test_a_question_of_only_spaces_asks_nothing(data_dir: Path) -> None:
    seed(ORION)
    at = ask(open_app(), "   ")
    assert any("Type a question first" in t for t in texts(at.toast))
    sid = at.session_state["session_id"]
    assert build_context(load_settings()).sessions.get(sid).name == "New chat"
    assert stored(sid) == [] and not at.error


def test_html_in_documents_and_answers_stays_inert(data_dir: Path) -> None:
    evil = (
        "evil.md",
        b'# Notes\n\nThe launch code is <img src="http://evil.example/x.png" onerror="alert(1)"> '
        b"<script>alert(2)</script> ![t](http://evil.example/t.png) [go](javascript:alert(3)) launch.\n",
        "text/markdown",
    )
    seed(evil)
    at = ask(open_app(), "What is the launch code?")
    answer = at.chat_message[-1].markdown[0]
    assert not answer.allow_html
    assert "<img" not in answer.value and "<script" not in answer.value
    assert "&lt;img" in answer.value and "javascript" not in answer.value
    assert "t (image: `http://evil.example/t.png`)" in answer.value  # the image's address, not the image
    assert all(not m.allow_html for m in at.markdown)
    copied = at.chat_message[-1].code[0].value  # the Markdown to copy is shown as code, never rendered
    assert "<script>alert(2)</script>" in copied


# ============================================================================ answer controls (lead's chat API)
def test_regenerate_replaces_the_last_answer(data_dir: Path) -> None:
    seed(ORION, VEGA)
    at = ask(open_app(), "Where did the Orion project launch?")
    sid = at.session_state["session_id"]
    before = stored(sid)
    click(at, f"regenerate_{before[-1].id}")
    after = stored(sid)
    assert [m.role for m in after] == ["user", "assistant"]  # the question is not stored twice
    assert after[-1].id != before[-1].id and "Lisbon" in after[-1].content
    assert [m.name for m in at.chat_message] == ["user", "assistant"]


def test_the_search_of_a_follow_up_can_be_corrected(data_dir: Path) -> None:
    seed(ORION, VEGA)
    at = ask(ask(open_app(), "Where did the Orion project launch?"), "Where does the Vega telescope stand?")
    at = ask(at, "Who built it?")
    sid = at.session_state["session_id"]
    last = stored(sid)[-1]
    corrected = "Who built the Vega telescope?"
    at.text_area(key=f"rewrite_text_{last.id}").input(corrected)
    [submit] = [b for b in at.button if b.label == "Search and answer again"]
    submit.click().run()
    assert not at.exception, at.exception
    messages = stored(sid)
    assert [m.role for m in messages] == ["user", "assistant"] * 3
    assert messages[-1].condensed_question == corrected and messages[-1].meta.get("rewrite_edited") is True
    assert "40 engineers" in messages[-1].content
    assert any(f"Searched for: {corrected} (edited)" in plain(c) for c in texts(at.chat_message[-1].caption))


def test_timing_line_says_which_path_served_the_answer(data_dir: Path) -> None:
    seed(ORION)
    at = ask(open_app(), "Where did the Orion project launch?")
    [timing] = [c for c in texts(at.chat_message[-1].caption) if "Answered in" in c]
    assert "by extractive" in timing and "no rerank" in timing


# ============================================================================ suggestions, summaries (core13, lead)
def test_a_new_chat_offers_questions_from_the_documents(data_dir: Path) -> None:
    seed(ORION, VEGA)
    at = open_app()
    offered = [b for b in at.button if (b.key or "").startswith("suggestion_")]
    assert 1 <= len(offered) <= 3
    question = plain(offered[0].label)
    offered[0].click().run()
    assert not at.exception, at.exception
    sid = at.session_state["session_id"]
    assert stored(sid)[0].content == question and stored(sid)[-1].role == "assistant"
    assert not [b for b in at.button if (b.key or "").startswith("suggestion_")]  # not once a question is asked


def test_follow_up_questions_under_the_latest_answer(data_dir: Path) -> None:
    guide = (
        "pump-guide.md",
        b"# Pump guide\n\n## Installation\n\nMount the pump on a level concrete base.\n\n"
        b"## Maintenance\n\nClean the filter every 200 hours.\n\n## Troubleshooting\n\nIf it hums, check the capacitor.\n",
        "text/markdown",
    )
    seed(guide)
    at = ask(open_app(), "How often is the filter cleaned?")
    offered = [b for b in at.chat_message[-1].button if (b.key or "").startswith("follow_up_")]
    assert 1 <= len(offered) <= 2
    question = plain(offered[0].label).removeprefix("↪ ")
    offered[0].click().run()
    assert not at.exception, at.exception
    sid = at.session_state["session_id"]
    assert [m.content for m in stored(sid) if m.role == "user"] == ["How often is the filter cleaned?", question]
    first = at.chat_message[1]
    assert not [b for b in first.button if (b.key or "").startswith("follow_up_")]  # only under the latest


def test_long_conversations_show_the_summary_of_older_turns(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCENT_MEMORY_TOKEN_LIMIT", "60")
    seed(ORION, VEGA)
    at = open_app()
    for question in (
        "Where did the Orion project launch?",
        "What was the budget of the Orion project?",
        "Where does the Vega telescope stand?",
        "How many engineers built the Vega telescope?",
    ):
        at = ask(at, question)
    sid = at.session_state["session_id"]
    [summary, *_] = sorted(build_context(load_settings()).sessions.summaries(sid), key=lambda s: -s.upto_message_id)
    [block] = [e for e in at.expander if "Earlier turns, summarised" in e.label]
    assert escape_markdown(summary.text) in [m.value for m in block.markdown]
    older = [m for m in stored(sid) if m.id <= summary.upto_message_id]
    assert len(block.chat_message) == len(older)  # the turns it stands for, collapsed under it
    assert len(at.chat_message) == len(stored(sid))  # none dropped from the page


# ============================================================================ sessions
def test_the_name_box_shows_the_stored_name_after_its_state_is_lost_or_emptied(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(ORION)
    at = ask(open_app(), "Where did the Orion project launch?")
    sid = at.session_state["session_id"]
    box = f"name_{sid}"
    # Streamlit drops a widget's value after a completed run that did not draw it (a click
    # while a run is drawing the page can cause one); the box then came back empty.
    with monkeypatch.context() as m:
        m.setattr(sidebar, "_manage_session", lambda *a, **k: None)
        at.run()
    assert not [t for t in at.sidebar.text_input if t.key == box]
    at.run()
    assert at.sidebar.text_input(key=box).value == "Where did the Orion project launch?"
    at.sidebar.text_input(key=box).input("  ").run()  # emptied: no name to rename to
    assert at.sidebar.text_input(key=box).value == "Where did the Orion project launch?"
    at.sidebar.text_input(key=box).input("Orion, launch").run()  # being typed: left alone
    assert at.sidebar.text_input(key=box).value == "Orion, launch"


def test_sessions_new_switch_rename_delete(data_dir: Path) -> None:
    seed(ORION)
    at = ask(open_app(), "Where did the Orion project launch?")
    first = at.session_state["session_id"]
    assert "💬 Where did the Orion project launch?" in [b.label for b in at.sidebar.button]  # named by it
    assert at.sidebar.text_input(key=f"name_{first}").value == "Where did the Orion project launch?"

    click(at, "new_chat")
    second = at.session_state["session_id"]
    assert second != first and at.query_params["session"] == second
    assert len(at.chat_message) == 0
    assert len([b for b in at.sidebar.button if b.key.startswith("open_")]) == 2
    click(at, "new_chat")  # the empty new chat is reused, not another added
    assert at.session_state["session_id"] == second
    assert len(build_context(load_settings()).sessions.list()) == 2

    at.sidebar.text_input(key=f"name_{second}").input("Vega questions").run()
    click(at, f"rename_{second}")
    assert "💬 Vega questions" in [b.label for b in at.sidebar.button]  # the current one

    click(at, f"open_{first}")  # switch back: its conversation is shown
    assert at.session_state["session_id"] == first and at.query_params["session"] == first
    assert "Lisbon" in at.chat_message[-1].markdown[0].value

    click(at, f"delete_chat_{first}")
    assert any("cannot be undone" in w for w in texts(at.sidebar.warning))
    click(at, f"delete_chat_{first}_no")
    assert first in {s.id for s in build_context(load_settings()).sessions.list()}
    click(at, f"delete_chat_{first}")
    click(at, f"delete_chat_{first}_yes")
    assert [s.id for s in build_context(load_settings()).sessions.list()] == [second]
    assert at.session_state["session_id"] == second and at.query_params["session"] == second


def test_new_chat_never_hands_out_an_empty_chat_open_in_another_tab(data_dir: Path) -> None:
    seed(ORION)
    one = open_app()
    click(one, "new_chat")
    theirs = one.session_state["session_id"]
    assert not stored(theirs)  # empty: the first person has not asked yet
    two = open_app()  # another tab opens the most recent chat: the first person's empty one
    assert two.session_state["session_id"] == theirs
    click(two, "new_chat")
    mine = two.session_state["session_id"]
    assert mine != theirs  # a chat of its own, not the one open in the first tab
    click(two, "new_chat")  # its own empty chat is reused
    assert two.session_state["session_id"] == mine
    ask(two, "What was the budget?")
    assert stored(theirs) == [] and [m.role for m in stored(mine)] == ["user", "assistant"]


def test_new_chat_in_a_fresh_visit_reuses_the_empty_chat_an_earlier_one_left(data_dir: Path) -> None:
    """Before: a fresh browser session's "New chat" added an empty chat beside the empty one
    an earlier visit had left (it reused only a chat it had made itself)."""
    seed(ORION)
    ctx = build_context(load_settings())
    left = ctx.sessions.create("New chat")  # an earlier visit's "New chat", never asked in
    asked = ctx.sessions.create("Orion launch")
    ctx.chat.ask("Where did the Orion project launch?", asked.id)  # the latest: a fresh visit opens it
    at = open_app()
    assert at.session_state["session_id"] == asked.id
    click(at, "new_chat")
    assert at.session_state["session_id"] == left.id and at.query_params["session"] == left.id
    assert len(ctx.sessions.list()) == 2  # none added
    click(at, "new_chat")  # already in an empty chat: it stays
    assert at.session_state["session_id"] == left.id and len(ctx.sessions.list()) == 2

    other = open_app(session=asked.id)  # another tab; the empty chat is open in the first one
    click(other, "new_chat")
    assert other.session_state["session_id"] not in (left.id, asked.id)
    assert len(ctx.sessions.list()) == 3


def test_the_chat_list_is_grouped_by_day_and_searchable(data_dir: Path) -> None:
    ctx = build_context(load_settings())
    now = time.time()
    ages = {"Budget of Orion": 0, "Vega engineers": 0, "Orion launch": 1, "Old notes": 30, "Orion launch ": 30}
    for name, days in ages.items():
        session = ctx.sessions.create(name)
        with ctx.db.connect() as c:  # as if its last message were that many days old
            c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now - days * 86400, session.id))
    at = open_app()
    old = datetime.date.fromtimestamp(now - 30 * 86400)
    headings = [c for c in texts(at.sidebar.caption) if c in ("Today", "Yesterday") or c.endswith(str(old.year))]
    assert headings == ["Today", "Yesterday", f"{old.day} {old:%b %Y}"]
    names = [plain(b.label).removeprefix("💬 ") for b in at.sidebar.button if b.key.startswith("open_")]
    assert names[2] == "Orion launch · " + datetime.datetime.fromtimestamp(now - 86400).strftime("%H:%M")

    at.sidebar.text_input(key="chat_search").input("orion").run()
    names = [plain(b.label).removeprefix("💬 ") for b in at.sidebar.button if b.key.startswith("open_")]
    assert [n.split(" · ")[0] for n in names] == ["Budget of Orion", "Orion launch", "Orion launch"]
    at.sidebar.text_input(key="chat_search").input("nothing like it").run()
    assert not [b for b in at.sidebar.button if b.key.startswith("open_")]
    assert any("No chat has that" in c for c in texts(at.sidebar.caption))


def test_unknown_session_in_the_url_falls_back_to_the_latest(data_dir: Path) -> None:
    ctx = build_context(load_settings())
    latest = ctx.sessions.create("Latest")
    at = open_app(session="no-such-session")
    assert at.session_state["session_id"] == latest.id
    assert at.query_params["session"] == latest.id
    assert any("was not found" in t for t in texts(at.toast))


def test_export_buttons_and_import_into_another_data_folder(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rag_core import exchange

    seed(ORION, VEGA)
    ctx = build_context(load_settings())
    session = ctx.sessions.create("Orion questions")
    ctx.chat.ask("Where did the Orion project launch?", session.id)
    at = open_app(session=session.id)
    assert not at.sidebar.get("download_button")  # the exports are made only while their section is open
    at.session_state[MANAGE] = True  # the user opens "Rename, export or delete this chat"
    at.run()
    assert {b.label for b in at.sidebar.get("download_button")} == {"⬇️ JSON", "⬇️ Markdown"}
    exported = json.dumps(exchange.export_session(ctx, session.id)).encode()

    monkeypatch.setenv("DOCENT_DATA_DIR", str(tmp_path / "elsewhere"))  # a fresh data folder, vega.txt only
    seed(VEGA)
    at = open_app()
    assert not at.file_uploader  # the import box opens on demand: the page keeps a single drop zone
    click(at, "import_open")
    at.sidebar.file_uploader(key="import_file").set_value([("orion.docent.json", exported, "application/json")])
    at.run()
    assert not at.exception, at.exception
    here = build_context(load_settings())
    [imported] = [s for s in here.sessions.list() if s.name.startswith("Orion questions")]
    assert at.session_state["session_id"] == imported.id
    assert [m.name for m in at.chat_message] == ["user", "assistant"]
    assert "Lisbon" in at.chat_message[-1].markdown[0].value
    assert any("Imported 2 message(s)" in m for m in texts(at.success))
    report = " ".join(texts(at.main.warning))  # above the imported chat
    assert "Cited but not indexed here" in report and "orion.md" in report
    assert "vega.txt" not in report  # indexed here, the same content

    at.run()  # the file stays in the uploader: it is not imported again
    assert len([s for s in here.sessions.list() if s.name.startswith("Orion questions")]) == 1

    at.sidebar.file_uploader(key="import_file").set_value([("bad.json", b'{"docent_export": 99}', "application/json")])
    at.run()
    assert at.sidebar.error and len(here.sessions.list()) == 2


# ============================================================================ settings
def test_settings_round_trip_keeps_keys_out_of_the_file(data_dir: Path) -> None:
    at = open_app("app_pages/settings.py")
    assert at.selectbox(key="setting_llm_provider").proto.disabled  # pinned by DOCENT_LLM_PROVIDER
    assert any("DOCENT_LLM_PROVIDER" in i for i in texts(at.info))

    at.number_input(key="setting_top_k").set_value(7)
    at.number_input(key="setting_chunk_size").set_value(512)
    at.toggle(key="setting_condense").set_value(False)
    at.form_submit_button[0].click().run()
    assert not at.exception, at.exception
    assert any("Settings saved" in s for s in texts(at.success))
    assert any("apply to new uploads" in s for s in texts(at.success))

    at.text_input(key="cohere_key_input").input("cohere-typed-key-654321")
    at.form_submit_button[1].click().run()
    assert not at.exception, at.exception
    assert at.text_input(key="cohere_key_input").value == ""  # never shown back
    assert any("Cohere key: entered in this browser session" in c for c in texts(at.caption))

    saved = (data_dir / "settings.json").read_text()
    assert json.loads(saved)["top_k"] == 7 and json.loads(saved)["condense"] is False
    assert "typed-key" not in saved and "api_key" not in saved
    assert json.loads(saved).get("llm_provider", "local") == "local"  # the env var's value is not made permanent

    again = open_app("app_pages/settings.py")  # a new browser session: values persisted, keys gone
    assert again.number_input(key="setting_top_k").value == 7
    assert again.number_input(key="setting_chunk_size").value == 512
    assert again.toggle(key="setting_condense").value is False
    assert any("Cohere key: not set" in c for c in texts(again.caption))
    assert load_settings().retrieval.top_k == 7


def test_openai_fields_show_only_when_that_provider_is_chosen(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCENT_LLM_PROVIDER")
    at = open_app("app_pages/settings.py")
    keys = {w.key for w in at.text_input}
    assert not {"setting_openai_base_url", "setting_openai_model", "openai_key_input"} & keys
    assert not any("OpenAI" in c for c in texts(at.caption))

    at.selectbox(key="setting_llm_provider").select("openai").run()
    assert {"setting_openai_base_url", "setting_openai_model", "openai_key_input"} <= {w.key for w in at.text_input}
    at.text_input(key="setting_openai_base_url").input("http://127.0.0.1:11434/v1")
    at.form_submit_button[0].click().run()
    assert not at.exception, at.exception
    saved = json.loads((data_dir / "settings.json").read_text())
    assert saved["llm_provider"] == "openai" and saved["openai_base_url"] == "http://127.0.0.1:11434/v1"

    at.text_input(key="openai_key_input").input("sk-test-typed-key-123456")
    at.form_submit_button[1].click().run()
    assert at.text_input(key="openai_key_input").value == ""  # never shown back
    assert any("OpenAI-compatible key: entered in this browser session" in c for c in texts(at.caption))
    assert "typed-key" not in (data_dir / "settings.json").read_text()

    at.selectbox(key="setting_llm_provider").select("extractive").run()
    assert "setting_openai_base_url" not in {w.key for w in at.text_input}


def test_every_other_setting_is_editable_under_advanced(data_dir: Path) -> None:
    at = open_app("app_pages/settings.py")
    widgets = [*at.selectbox, *at.number_input, *at.text_input, *at.toggle, *at.text_area]
    shown = {w.key.removeprefix("setting_") for w in widgets if (w.key or "").startswith("setting_")}
    # every setting but where state lives, the server and the keys; the OpenAI ones with that provider
    assert shown == set(form_fields()) - {"openai_base_url", "openai_model"}
    at.number_input(key="setting_llm_max_new_tokens").set_value(200)
    at.form_submit_button[0].click().run()
    assert load_settings().llm_max_new_tokens == 200


def test_rebuild_from_the_settings_page_asks_first(data_dir: Path) -> None:
    seed(ORION)
    at = click(open_app("app_pages/settings.py"), "rebuild")
    assert any("Rebuild the whole index" in w for w in texts(at.warning))
    click(at, "rebuild_yes")
    [status] = at.get("status")
    assert status.state == "complete" and "1 document(s) indexed" in status.label
    assert [d.name for d in build_context(load_settings()).ingestion.documents()] == ["orion.md"]


def test_the_theme_follows_the_users_choice() -> None:
    theme = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())["theme"]
    assert "base" not in theme  # no forced light theme: the browser's preference, or the user's choice
    assert "backgroundColor" not in theme and "textColor" not in theme  # nothing that is only right in light
    assert theme["light"]["primaryColor"] and theme["dark"]["primaryColor"]


# ============================================================================ safe markdown
@pytest.mark.parametrize(
    "raw",
    [
        "<script>alert(1)</script>",
        '<img src=x onerror="alert(1)">',
        "![pixel](http://evil.example/p.png)",
        "[click](javascript:alert(1))",
        "[click](&#106;avascript:alert(1))",
        "[click](java\tscript:alert(1))",
        "<javascript:alert(1)>",
        "[x]: javascript:alert(1)\n\n[x]",
        ":red[styled] :material/home:",
    ],
)
def test_inert_markdown_neutralises_active_content(raw: str) -> None:
    out = inert_markdown(raw)
    assert "<" not in out.replace("&lt;", "")
    assert "](java" not in out and "](&#106;" not in out
    assert "![" not in out
    assert ":red[" not in out and ":material/" not in out


def test_inert_markdown_keeps_formatting_and_code_and_shows_links_as_their_address() -> None:
    text = "**Bold**, a [link](https://example.org/a) and `a < b`:\n\n```python\nif a < b:\n    pass\n```\n"
    out = inert_markdown(text)
    assert "**Bold**" in out and "a link (`https://example.org/a`) and" in out  # the full address, as code
    assert "`a < b`" in out and "if a < b:" in out
    assert inert_markdown("costs $5 and $6") == "costs \\$5 and \\$6"


ADDRESSES = [
    ("see http://evil.example/phish now", "see `http://evil.example/phish` now"),
    ("at www.evil.example/phish.", "at `www.evil.example/phish`."),
    ("write to phish@evil.example", "write to `phish@evil.example`"),
    ("[click](http://evil.example/phish)", "click (`http://evil.example/phish`)"),
    ("![t](http://evil.example/t.png)", "t (image: `http://evil.example/t.png`)"),
    ("[http://evil.example/a](http://evil.example/a)", "`http://evil.example/a`"),
    ("(see https://evil.example/a_(b)), then", "(see `https://evil.example/a_(b)`), then"),
]


@pytest.mark.parametrize(("raw", "shown"), ADDRESSES)
def test_inert_markdown_never_makes_a_link_of_an_address(raw: str, shown: str) -> None:
    """Markdown makes a link of a bare address by itself (GFM autolinks, even from escaped
    text): an address is shown as code, whole, to copy; a link or image shows its address.
    What the browser makes of it: tests/browser/test_links.py."""
    assert inert_markdown(raw) == shown
    assert "](" not in inert_markdown(raw, cite=lambda n: "?session=s&source=1-1")


def test_escape_markdown_shows_addresses_as_code_and_the_rest_as_is() -> None:
    assert escape_markdown("see http://evil.example/phish.") == "see `http://evil.example/phish`\\."
    assert escape_markdown("www.evil.example.md") == "`www.evil.example.md`"  # a file name
    assert escape_markdown("a `www.x.org` b") == "a \\``www.x.org`\\` b"
    assert escape_markdown("ab http://x/`c`") == "ab `http://x/`\\`c\\`"  # a backtick ends an address


def test_escape_markdown_shows_text_as_is() -> None:
    assert escape_markdown("**x** [y](z) <b> #1") == "\\*\\*x\\*\\* \\[y\\]\\(z\\) &lt;b> #1"
    assert escape_markdown("1. not a list") == "1\\. not a list"
