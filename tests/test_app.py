"""The Streamlit app, driven through AppTest with the fast, deterministic providers:
extractive answers (no LLM) and hashed embeddings, in a data folder under tmp_path.

Uploads go through the real ``st.file_uploader`` (AppTest can set its files). Pages are
reached the way a user does, from ``app.py`` and its ``st.navigation``.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core import build_context, load_settings
from rag_core.health import check
from rag_core.jobs import job_runner
from rag_core.providers.embeddings import HashEmbedding
from rag_core.settings import form_fields
from ui.jobs import UPLOAD_JOBS
from ui.markdown import escape_markdown, inert_markdown

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
        ("pages/upload.py", "📤 Upload"),
        ("pages/settings.py", "⚙️ Settings"),
        ("pages/chat.py", "💬 Chat"),
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
    at = upload(open_app("pages/upload.py"), ORION, VEGA, BROKEN)
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
    at = upload(open_app("pages/upload.py"), ORION)
    at = upload(at, orion2)  # a new upload of the same name, different content: nothing sent yet
    [question] = [w for w in texts(at.warning) if "already indexed from a different file" in w]
    assert "orion.md" in question
    assert [b.label for b in at.button if b.key and b.key.startswith(("replace_", "keep_both_", "skip_"))] == [
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
    at = upload(open_app("pages/upload.py"), VEGA, ORION, wait=False)
    assert inside.wait(TIMEOUT)
    at.run()
    assert "**⏳ Indexing 2 file(s)…**" in texts(at.markdown)
    bars = [b.proto.text for b in at.get("progress")]
    assert any(escape_markdown("vega.txt: embedding part 1 of 1: 0/1 passages") == t for t in bars)
    assert escape_markdown("orion.md: waiting") in bars
    assert any("Indexing: 0 of 2" in b.proto.text for b in at.sidebar.get("progress"))

    at.switch_page("pages/chat.py").run()
    at.switch_page("pages/upload.py").run()  # coming back: the same job, still running
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
    at = upload(open_app("pages/upload.py"), ORION, VEGA)
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

    at = open_app("pages/upload.py")
    assert any("hash-bow-64" in w for w in texts(at.warning))
    click(at, "rebuild_mismatch")
    assert not any("hash-bow-64" in w for w in texts(at.warning))
    assert list(at.dataframe[0].value["Name"]) == ["orion.md"]
    assert build_context(load_settings()).index.mismatch() is None


# ============================================================================ chat
def test_two_turns_show_answer_condensed_question_and_sources(data_dir: Path) -> None:
    seed(ORION, VEGA)
    at = ask(open_app(), "Where did the Orion project launch?")
    user, assistant = at.chat_message
    assert user.markdown[0].value == "Where did the Orion project launch?"
    assert "Lisbon" in assistant.markdown[0].value
    assert not any("Searched for" in c for c in texts(assistant.caption))  # first turn: not rewritten
    labels = [e.label for e in assistant.expander]
    assert labels and "orion.md" in labels[0]
    assert "Lisbon" in assistant.expander[0].text[0].value  # the passage, as plain text

    at = ask(at, "What was its budget?")
    follow_up = at.chat_message[-1]
    assert "4 million euros" in follow_up.markdown[0].value
    searched = [c for c in texts(follow_up.caption) if "Searched for" in c]
    assert searched and "Orion" in searched[0]  # the standalone question the engine used
    assert any("orion.md" in e.label for e in follow_up.expander)

    at = open_app(session=at.query_params["session"])  # a reload: the conversation comes back
    assert [m.name for m in at.chat_message] == ["user", "assistant", "user", "assistant"]
    assert any("Searched for" in c for c in texts(at.chat_message[-1].caption))


def test_doc_filter_limits_the_session_to_chosen_documents(data_dir: Path) -> None:
    seed(ORION, VEGA)
    at = open_app()
    sid = at.session_state["session_id"]
    at.multiselect(key=f"doc_filter_{sid}").select("vega.txt").run()
    assert build_context(load_settings()).sessions.get(sid).doc_filter == ["vega.txt"]

    at = ask(at, "Where did the Orion project launch?")  # Orion is only in orion.md, out of scope
    files = {e.label for e in at.chat_message[-1].expander}
    assert all("vega.txt" in label for label in files)
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
    stored = build_context(load_settings()).sessions.messages(sid)
    assert [(m.role, m.content) for m in stored] == [("user", "Where did the Orion project launch?")]

    click(at, "retry")  # still failing: same error, the question stored once
    assert "needs a key" in texts(at.error)[0]
    assert len(build_context(load_settings()).sessions.messages(sid)) == 1

    monkeypatch.setenv("DOCENT_LLM_PROVIDER", "extractive")
    at = click(open_app(session=sid), "retry")  # after a reload too, then it works
    assert not at.error
    stored = build_context(load_settings()).sessions.messages(sid)
    assert [m.role for m in stored] == ["user", "assistant"] and "Lisbon" in stored[-1].content


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
    assert "&lt;img" in answer.value and "!\\[t]" in answer.value and "javascript" not in answer.value
    assert all(not m.allow_html for m in at.markdown)


# ============================================================================ sessions
def test_sessions_new_switch_rename_delete(data_dir: Path) -> None:
    seed(ORION)
    at = ask(open_app(), "Where did the Orion project launch?")
    first = at.session_state["session_id"]
    assert "💬 Where did the Orion project launch?" in [b.label for b in at.sidebar.button]  # named by it

    click(at, "new_chat")
    second = at.session_state["session_id"]
    assert second != first and at.query_params["session"] == second
    assert at.chat_message == [] or len(at.chat_message) == 0
    assert len([b for b in at.sidebar.button if b.key.startswith("open_")]) == 2

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


def test_unknown_session_in_the_url_falls_back_to_the_latest(data_dir: Path) -> None:
    ctx = build_context(load_settings())
    latest = ctx.sessions.create("Latest")
    at = open_app(session="no-such-session")
    assert at.session_state["session_id"] == latest.id
    assert at.query_params["session"] == latest.id
    assert any("does not exist" in t for t in texts(at.toast))


# ============================================================================ settings
def test_settings_round_trip_keeps_keys_out_of_the_file(data_dir: Path) -> None:
    at = open_app("pages/settings.py")
    assert at.selectbox(key="setting_llm_provider").proto.disabled  # pinned by DOCENT_LLM_PROVIDER
    assert any("DOCENT_LLM_PROVIDER" in i for i in texts(at.info))

    at.number_input(key="setting_top_k").set_value(7)
    at.number_input(key="setting_chunk_size").set_value(512)
    at.toggle(key="setting_condense").set_value(False)
    at.form_submit_button[0].click().run()
    assert not at.exception, at.exception
    assert any("Settings saved" in s for s in texts(at.success))
    assert any("apply to new uploads" in s for s in texts(at.success))

    at.text_input(key="openai_key_input").input("sk-test-typed-key-123456")
    at.text_input(key="cohere_key_input").input("cohere-typed-key-654321")
    at.form_submit_button[1].click().run()
    assert not at.exception, at.exception
    assert at.text_input(key="openai_key_input").value == ""  # never shown back
    assert any("entered in this browser session" in c for c in texts(at.caption))

    saved = (data_dir / "settings.json").read_text()
    assert json.loads(saved)["top_k"] == 7 and json.loads(saved)["condense"] is False
    assert "typed-key" not in saved and "api_key" not in saved
    assert json.loads(saved).get("llm_provider", "local") == "local"  # the env var's value is not made permanent

    again = open_app("pages/settings.py")  # a new browser session: values persisted, keys gone
    assert again.number_input(key="setting_top_k").value == 7
    assert again.number_input(key="setting_chunk_size").value == 512
    assert again.toggle(key="setting_condense").value is False
    assert any("OpenAI-compatible key: not set" in c for c in texts(again.caption))
    assert load_settings().retrieval.top_k == 7


def test_every_other_setting_is_editable_under_advanced(data_dir: Path) -> None:
    at = open_app("pages/settings.py")
    widgets = [*at.selectbox, *at.number_input, *at.text_input, *at.toggle, *at.text_area]
    shown = {w.key.removeprefix("setting_") for w in widgets if (w.key or "").startswith("setting_")}
    assert shown == set(form_fields())  # every setting but where state lives, the server and the keys
    at.number_input(key="setting_llm_max_new_tokens").set_value(200)
    at.form_submit_button[0].click().run()
    assert load_settings().llm_max_new_tokens == 200


def test_rebuild_from_the_settings_page_asks_first(data_dir: Path) -> None:
    seed(ORION)
    at = click(open_app("pages/settings.py"), "rebuild")
    assert any("Rebuild the whole index" in w for w in texts(at.warning))
    click(at, "rebuild_yes")
    [status] = at.get("status")
    assert status.state == "complete" and "1 document(s) indexed" in status.label
    assert [d.name for d in build_context(load_settings()).ingestion.documents()] == ["orion.md"]


def test_an_answer_shows_its_notices_and_sources() -> None:
    def page() -> None:
        from rag_core import Message
        from ui.messages import render_answer

        message = Message(
            "assistant",
            "It launched in **Lisbon**.",
            condensed_question="Where did Orion launch?",
            sources=[
                {"file": "orion.pdf", "page": 3, "score": 0.8123, "text": "The Orion project launched in Lisbon."}
            ],
            meta={"notices": ["Cohere rerank was skipped (timed out); passages are in retrieval order."]},
        )
        render_answer(message, "Where?")

    at = AppTest.from_function(page).run()
    assert not at.exception, at.exception
    assert at.markdown[0].value == "It launched in **Lisbon**."
    assert any("Searched for: Where did Orion launch?" in c for c in texts(at.caption))
    assert "Cohere rerank was skipped" in at.info[0].value
    assert at.expander[0].label == "📄 orion.pdf · page 3 · score 0.81"
    assert at.expander[0].text[0].value == "The Orion project launched in Lisbon."


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


def test_inert_markdown_keeps_formatting_code_and_web_links() -> None:
    text = "**Bold**, a [link](https://example.org/a) and `a < b`:\n\n```python\nif a < b:\n    pass\n```\n"
    out = inert_markdown(text)
    assert "**Bold**" in out and "[link](https&#58;//example.org/a)" in out
    assert "`a < b`" in out and "if a < b:" in out
    assert inert_markdown("costs $5 and $6") == "costs \\$5 and \\$6"


def test_escape_markdown_shows_text_as_is() -> None:
    assert escape_markdown("**x** [y](z) <b> #1") == "\\*\\*x\\*\\* \\[y\\]\\(z\\) &lt;b> #1"
    assert escape_markdown("1. not a list") == "1\\. not a list"
