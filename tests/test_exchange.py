"""Exporting a session to one file and importing it into another Docent (another data folder):
real chats, real SQLite and Chroma in tmp_path, keys set so that their absence is tested."""

from __future__ import annotations

import hashlib
import json

import pytest

from rag_core import build_context
from rag_core.errors import ConfigError
from rag_core.exchange import export_json, export_markdown, export_session, import_session
from tests.fakes import ScriptedLLM

OPENAI_KEY = "sk-test-OPENAI0123456789abcdef"
COHERE_KEY = "cohere-test-KEY0123456789"


@pytest.fixture
def chatted(make_settings, three_docs, tmp_path):
    """A Docent with keys set, three documents and a session of two answered turns (the
    user pasted a key into a question, as people do)."""
    settings = make_settings(
        openai_api_key=OPENAI_KEY,
        cohere_api_key=COHERE_KEY,
        openai_base_url="https://me:hunter2-password@llm.example.org/v1",
        rerank_provider="none",
        top_k=5,
    )
    llm = ScriptedLLM(
        answers=["The pump delivers 42 litres per minute [1].", "Green tea is steamed or pan-fired [1]."],
        condense=["How is green tea made, and is it like the Zephyr pump?"],
    )
    ctx = build_context(settings, llm=llm)
    ctx.ingestion.ingest_paths([three_docs])
    session = ctx.sessions.create("pumps and tea")
    ctx.chat.ask("How many litres per minute does the Zephyr pump deliver?", session.id)
    ctx.chat.ask(f"And how is green tea made? my key is {OPENAI_KEY}", session.id)
    return ctx, session.id


def fresh(make_settings, tmp_path, name="other"):
    return build_context(make_settings(data_dir=tmp_path / name), llm=ScriptedLLM())


def comparable(messages):
    """Messages as the user sees them, but their text (compared apart: keys are scrubbed) and
    a source's ``sha256`` (the passage's hash, which an export adds where it was missing)."""
    return [
        (
            m.role,
            m.condensed_question,
            m.meta,
            m.created,
            [{k: v for k, v in s.items() if k != "sha256"} for s in m.sources],
        )
        for m in messages
    ]


def test_an_export_holds_the_conversation_its_sources_and_settings_but_never_a_key(chatted):
    ctx, sid = chatted
    data = export_session(ctx, sid)
    text = export_json(ctx, sid) + export_markdown(ctx, sid)
    assert OPENAI_KEY not in text and COHERE_KEY not in text
    assert not any("key" in k for k in data["settings"])
    assert "hunter2" not in text and data["settings"]["openai_base_url"] == "https://***@llm.example.org/v1"
    assert data["docent_export"] == 1 and data["session"]["name"] == "pumps and tea"
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "user", "assistant"]
    assert data["messages"][2]["content"] == "And how is green tea made? my key is ***"
    assert data["messages"][3]["condensed_question"] == "How is green tea made, and is it like the Zephyr pump?"
    first = data["messages"][1]["sources"][0]
    assert first["file"] == "zephyr.pdf" and first["page"] == 2
    assert first["sha256"] == hashlib.sha256(first["text"].encode()).hexdigest()
    assert first["document_sha256"] == ctx.registry.get("zephyr.pdf").sha256
    assert data["documents"]["zephyr.pdf"]["sha256"] == ctx.registry.get("zephyr.pdf").sha256
    assert data["settings"]["top_k"] == 5 and data["settings"]["llm_provider"] == "extractive"
    assert json.loads(json.dumps(data)) == data  # JSON-able as it is


def test_import_into_another_docent_shows_the_same_conversation_and_what_is_missing_or_changed(
    chatted, make_settings, three_docs, tmp_path
):
    ctx, sid = chatted
    exported = export_json(ctx, sid).encode()
    other = fresh(make_settings, tmp_path)
    other.ingestion.ingest_file(three_docs / "zephyr.pdf")  # the same file
    (tmp_path / "tea.md").write_text("# Tea\nOolong tea is partly oxidised.\n")  # same name, other content
    other.ingestion.ingest_file(tmp_path / "tea.md")
    # bananas.txt is not indexed there

    report = import_session(other, exported)
    assert set(report.cited) == {s["file"] for m in ctx.sessions.messages(sid) for s in m.sources}
    assert set(report.cited) == {"zephyr.pdf", "tea.md", "bananas.txt"}  # top_k 5 of 5 chunks
    assert report.missing == ["bananas.txt"]
    assert report.changed == ["tea.md"]
    assert report.messages == 4
    session = other.sessions.get(report.session_id)
    assert session.name == "pumps and tea"
    original, imported = ctx.sessions.messages(sid), other.sessions.messages(report.session_id)
    assert comparable(imported) == comparable(original)
    expected = [m.content.replace(OPENAI_KEY, "***") for m in original]
    assert [m.content for m in imported] == expected
    for m in imported:
        for s in m.sources:
            assert s["sha256"] == hashlib.sha256(s["text"].encode()).hexdigest()
            assert "document_sha256" not in s
    # The imported conversation goes on: its history reaches the next question's rewrite.
    other.models.llm().script(
        answers=["It runs on a 12 volt battery."], condense=["What battery does the Zephyr pump need?"]
    )
    turn = other.chat.ask("What battery does it need?", report.session_id)
    assert "How many litres per minute does the Zephyr pump deliver?" in other.models.llm().prompts[-1]
    assert turn.condensed_question == "What battery does the Zephyr pump need?"
    # Imported again: a second session, told apart by its name.
    assert import_session(other, exported).name == "pumps and tea (imported)"


def test_a_session_filtered_to_documents_keeps_the_filter_for_those_present(
    chatted, make_settings, three_docs, tmp_path
):
    ctx, sid = chatted
    ctx.sessions.set_doc_filter(sid, ["zephyr.pdf", "bananas.txt"])
    other = fresh(make_settings, tmp_path)
    other.ingestion.ingest_file(three_docs / "zephyr.pdf")
    report = import_session(other, export_session(ctx, sid))
    assert other.sessions.get(report.session_id).doc_filter == ["zephyr.pdf"]


def test_the_markdown_export_reads_as_the_conversation_and_quotes_passages_inertly(ctx, tmp_path):
    (tmp_path / "odd.md").write_text("# Odd\nA passage with ``` fences and <script>alert(1)</script> in it.\n")
    ctx.ingestion.ingest_file(tmp_path / "odd.md")
    ctx.models.llm().script(answers=["It has <b>tags</b> and fences [1]."])
    s = ctx.sessions.create("odd")
    ctx.chat.ask("What is in the odd passage?", s.id)
    md = export_markdown(ctx, s.id)
    assert md.startswith("# odd\n")
    assert "## Question\n\nWhat is in the odd passage?" in md
    assert "It has &lt;b>tags&lt;/b> and fences [1]." in md
    assert "**[1]** odd.md — Odd" in md
    fence = "````text\n# Odd\nA passage with ``` fences and <script>alert(1)</script> in it.\n````"
    assert fence in md  # a longer fence than any inside: the passage stays text


def test_bad_files_are_refused_with_what_is_wrong_and_import_nothing(chatted, make_settings, tmp_path):
    ctx, sid = chatted
    good = export_session(ctx, sid)
    other = fresh(make_settings, tmp_path)

    def refused(data) -> str:
        with pytest.raises(ConfigError) as e:
            import_session(other, data)
        return str(e.value)

    assert "not JSON" in refused(b"{this is not json")
    assert "no 'docent_export' field" in refused(json.dumps({"messages": []}).encode())
    assert "no 'docent_export' field" in refused(b"[1, 2, 3]")
    assert "made by a newer Docent" in refused({**good, "docent_export": 2})
    assert "format version '1'" in refused({**good, "docent_export": "1"})
    assert "Markdown export" in refused(export_markdown(ctx, sid).encode())
    bad = json.loads(json.dumps(good))
    bad["messages"][3]["content"] = 42
    bad["messages"][1]["sources"][0]["page"] = "two"
    msg = refused(bad)
    assert "messages.3.content" in msg and "messages.1.sources.0.page" in msg
    bad = json.loads(json.dumps(good))
    bad["messages"][0]["role"] = "system"
    assert "messages.0.role" in refused(bad)
    bad = json.loads(json.dumps(good))
    del bad["session"]
    assert "session" in refused(bad)
    assert other.sessions.list() == []
    assert other.db.query("SELECT COUNT(*) FROM messages")[0][0] == 0


def test_a_failure_halfway_through_the_writes_leaves_nothing_behind(chatted, make_settings, tmp_path, monkeypatch):
    import rag_core.exchange as exchange

    ctx, sid = chatted
    data = export_session(ctx, sid)
    other = fresh(make_settings, tmp_path)
    calls = {"n": 0}
    original = exchange._stored_source

    def flaky(s):
        calls["n"] += 1
        if calls["n"] > 2:  # after the session and the first messages are written
            raise OSError("disk full")
        return original(s)

    monkeypatch.setattr(exchange, "_stored_source", flaky)
    with pytest.raises(OSError, match="disk full"):
        import_session(other, data)
    assert calls["n"] == 3
    assert other.sessions.list() == []
    assert other.db.query("SELECT COUNT(*) FROM messages")[0][0] == 0


def test_an_export_larger_than_docent_writes_is_refused_by_name_and_imports_nothing(chatted, make_settings, tmp_path):
    """The report's two files: a 5 MB message, and 60,000 messages (both once imported whole)."""
    ctx, sid = chatted
    good = export_session(ctx, sid)
    other = fresh(make_settings, tmp_path)

    def refused(data) -> str:
        with pytest.raises(ConfigError) as e:
            import_session(other, json.dumps(data).encode())
        return str(e.value)

    huge = json.loads(json.dumps(good))
    huge["messages"][2]["content"] = "x" * 5_000_000
    assert refused(huge) == (
        "Message 3 (question): its text is 5,000,000 characters long; a chat can be imported with at most "
        "1,000,000 characters there (more than any question or answer Docent keeps). Nothing was imported."
    )
    many = json.loads(json.dumps(good))
    many["messages"] = [{"role": ("user", "assistant")[i % 2], "content": f"m{i}"} for i in range(60_000)]
    assert refused(many) == (
        "This export holds 60,000 messages; a chat can be imported with at most 10,000 "
        "(a conversation of 5,000 questions). Nothing was imported."
    )
    cited = json.loads(json.dumps(good))
    cited["messages"][1]["sources"][0]["text"] = "y" * 1_000_001
    assert "Message 2 (answer): its source 1 is 1,000,001 characters long" in refused(cited)
    assert other.sessions.list() == []
    assert other.db.query("SELECT COUNT(*) FROM messages")[0][0] == 0
    # At the limits, it imports.
    edge = json.loads(json.dumps(good))
    edge["messages"][2]["content"] = "z" * 1_000_000
    edge["messages"] += [{"role": ("user", "assistant")[i % 2], "content": "ok"} for i in range(10_000 - 4)]
    report = import_session(other, json.dumps(edge).encode())
    assert report.messages == 10_000
    assert len(other.sessions.messages(report.session_id)) == 10_000
