"""The CLI as scripts use it: real subprocesses, JSON contracts."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.pdfgen import ZEPHYR_PAGES, make_pdf

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slow  # every test runs `python -m rag_core` processes


def run(args, data_dir, stdin=None, extra_env=None, check=True):
    env = {
        **os.environ,
        "DOCENT_DATA_DIR": str(data_dir),
        "DOCENT_EMBED_PROVIDER": "hash",
        "DOCENT_LLM_PROVIDER": "extractive",
        **(extra_env or {}),
    }
    p = subprocess.run(
        [sys.executable, "-m", "rag_core", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def lines(out):
    return [json.loads(x) for x in out.splitlines() if x.strip()]


@pytest.fixture
def corpus(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    make_pdf(ZEPHYR_PAGES, d / "zephyr.pdf")
    (d / "empty.txt").write_text("")
    (d / "book.epub").write_bytes(b"PK")
    return d


def test_ingest_json_is_one_object_per_file(tmp_path, corpus):
    out = lines(run(["ingest", "--json", str(corpus)], tmp_path / "data").stdout)
    by = {o["file"]: o for o in out}
    assert set(by) == {"zephyr.pdf", "empty.txt", "book.epub"}
    for o in out:
        assert {"file", "status", "reason", "pages", "chunks"} <= set(o)
    assert by["zephyr.pdf"]["status"] == "indexed" and by["zephyr.pdf"]["pages"] == 3
    assert by["empty.txt"] == {**by["empty.txt"], "status": "failed", "reason": "empty file"}
    assert "unsupported type .epub" in by["book.epub"]["reason"]
    again = lines(run(["ingest", "--json", str(corpus / "zephyr.pdf")], tmp_path / "data").stdout)
    assert again[0]["status"] == "skipped"


def test_ask_json_contract(tmp_path, corpus):
    run(["ingest", str(corpus / "zephyr.pdf")], tmp_path / "data")
    out = lines(run(["ask", "--json", "How many litres per minute does the pump deliver?"], tmp_path / "data").stdout)
    assert len(out) == 1
    o = out[0]
    assert {"answer", "condensed_question", "sources", "timings"} <= set(o)
    assert "42 litres" in o["answer"]
    assert o["sources"][0] == {**o["sources"][0], "file": "zephyr.pdf", "page": 2}
    assert {"file", "page", "score", "text"} <= set(o["sources"][0])
    # the figure check: the extractive answer copies its source, so each figure is found there
    assert o["figures_checked"] >= 1 and o["figures_unsupported"] == 0


def test_chat_reads_stdin_and_rewrites_the_follow_up(tmp_path, corpus):
    data = tmp_path / "data"
    run(["ingest", str(corpus / "zephyr.pdf")], data)
    stdin = "How many litres per minute does the Zephyr pump deliver?\nAnd what battery does it need?\n/stats\n/quit\n"
    out = lines(run(["chat", "--json", "--session", "pumps"], data, stdin=stdin).stdout)
    answers = [o for o in out if "answer" in o]
    assert len(answers) == 2
    assert answers[0]["condensed_question"] == "How many litres per minute does the Zephyr pump deliver?"
    assert answers[1]["condensed_question"] != "And what battery does it need?"
    stats = next(o for o in out if o.get("command") == "stats")
    assert stats["messages"] == 4
    sessions = lines(run(["sessions", "list", "--json"], data).stdout)
    assert [(s["name"], s["messages"]) for s in sessions] == [("pumps", 4)]
    run(["sessions", "delete", "pumps"], data)
    assert run(["sessions", "list"], data).stdout.strip() == ""


def test_docs_list_delete_and_check(tmp_path, corpus):
    data = tmp_path / "data"
    run(["ingest", str(corpus / "zephyr.pdf")], data)
    assert "zephyr.pdf" in run(["docs", "list"], data).stdout
    assert run(["check"], data).returncode == 0
    # Break consistency behind Docent's back: vectors without a registry row.
    code = (
        "import chromadb; from chromadb.config import Settings;"
        f"c=chromadb.PersistentClient(path={str(data / 'chroma')!r}, settings=Settings(anonymized_telemetry=False));"
        "col=c.get_collection('docent'); col.add(ids=['x'], embeddings=[[0.1]*256], documents=['stray'], metadatas=[{'doc_key':'ghost.pdf'}])"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
    p = run(["check", "--json"], data, check=False)
    assert p.returncode == 1
    report = json.loads(p.stdout)
    assert report["ok"] is False
    [problem] = report["problems"]
    assert problem.startswith("ghost.pdf: has vectors in Chroma but is not in the registry: its chunks do not")
    # No pending marker proves it half-ingested, and it names no file version: kept, and said so.
    p = run(["check", "--repair", "--json"], data, check=False)
    assert p.returncode == 1 and "repaired" not in json.loads(p.stdout)
    assert any(n.startswith("ghost.pdf: its chunks do not name one version") for n in json.loads(p.stdout)["notices"])
    run(["docs", "delete", "ghost.pdf"], data)  # the person decides
    assert run(["check"], data).returncode == 0
    run(["docs", "delete", "zephyr.pdf"], data)
    assert "No documents" in run(["docs", "list"], data).stdout
    p = run(["docs", "delete", "nope.pdf"], data, check=False)
    assert p.returncode == 2 and "No document named 'nope.pdf'" in p.stderr


def test_a_different_file_of_the_same_name_needs_replace_or_keep_both(tmp_path, corpus):
    data = tmp_path / "data"
    v1, v2 = tmp_path / "v1" / "report.txt", tmp_path / "v2" / "report.txt"
    for path, text in ((v1, "Revenue grew by nine percent."), (v2, "Revenue fell by four percent.")):
        path.parent.mkdir()
        path.write_text(text)
    run(["ingest", str(v1)], data)
    p = run(["ingest", "--json", "--strict", str(v2)], data, check=False)
    [refused] = lines(p.stdout)
    assert p.returncode == 1 and (refused["status"], refused["conflict"]) == ("failed", True)
    assert "--replace" in p.stderr and "--keep-both" in p.stderr
    [kept] = lines(run(["ingest", "--json", "--keep-both", str(v2)], data).stdout)
    assert (kept["file"], kept["status"]) == ("report (2).txt", "indexed")
    v2.write_text("Revenue was flat.")
    [replaced] = lines(run(["ingest", "--json", "--replace", str(v2)], data).stdout)
    assert (replaced["file"], replaced["status"]) == ("report.txt", "replaced")
    listed = {d["name"] for d in lines(run(["docs", "list", "--json"], data).stdout)}
    assert listed == {"report.txt", "report (2).txt"}
    assert run(["check"], data).returncode == 0


def test_missing_key_is_a_clear_error_not_a_traceback(tmp_path, corpus):
    data = tmp_path / "data"
    run(["ingest", str(corpus / "zephyr.pdf")], data)
    p = run(["ask", "pump?"], data, extra_env={"DOCENT_LLM_PROVIDER": "openai"}, check=False)
    assert p.returncode == 2
    assert "OPENAI_API_KEY" in p.stderr and "Traceback" not in p.stderr


def test_chroma_server_mode(tmp_path, corpus, chroma_server):
    env = {"DOCENT_CHROMA_HOST": "127.0.0.1", "DOCENT_CHROMA_PORT": str(chroma_server)}
    data = tmp_path / "data"
    out = lines(run(["ingest", "--json", str(corpus / "zephyr.pdf")], data, extra_env=env).stdout)
    assert out[0]["status"] == "indexed"
    assert not (data / "chroma").exists()  # nothing embedded: vectors went to the server
    o = lines(run(["ask", "--json", "How many litres per minute?"], data, extra_env=env).stdout)[0]
    assert o["sources"][0]["page"] == 2
    assert run(["check"], data, extra_env=env).returncode == 0


def test_sessions_export_and_import_between_two_data_folders(tmp_path, corpus):
    a, b = tmp_path / "a", tmp_path / "b"
    key = "sk-cli-SECRET0123456789abcdef"
    run(["ingest", str(corpus / "zephyr.pdf")], a)
    stdin = "How many litres per minute does the Zephyr pump deliver?\nAnd what battery does it need?\n/quit\n"
    answers = lines(run(["chat", "--json", "--session", "pumps"], a, stdin=stdin).stdout)
    export = tmp_path / "pumps.json"
    p = run(["sessions", "export", "pumps", "-o", str(export)], a, extra_env={"OPENAI_API_KEY": key})
    assert "exported" in p.stderr and p.stdout == ""
    data = json.loads(export.read_text())
    assert key not in export.read_text()
    assert data["docent_export"] == 1 and [m["role"] for m in data["messages"]] == ["user", "assistant"] * 2
    md = run(["sessions", "export", "pumps", "--format", "md"], a, extra_env={"OPENAI_API_KEY": key}).stdout
    assert md.startswith("# pumps") and "## Question" in md and "zephyr.pdf, page 2" in md and key not in md

    report = lines(run(["sessions", "import", str(export), "--json"], b).stdout)
    assert len(report) == 1
    assert report[0] == {**report[0], "name": "pumps", "messages": 4, "missing": ["zephyr.pdf"], "changed": []}
    text = run(["sessions", "import", str(export)], b).stdout
    assert "Imported session 'pumps (imported)'" in text and "Not indexed here" in text and "zephyr.pdf" in text
    sessions = {s["name"]: s for s in lines(run(["sessions", "list", "--json"], b).stdout)}
    assert sessions["pumps"]["messages"] == 4 and sessions["pumps"]["id"] == report[0]["session_id"]
    run(["ingest", str(corpus / "zephyr.pdf")], b)  # the same file: now nothing is missing
    again = lines(run(["sessions", "import", str(export), "--json"], b).stdout)[0]
    assert (again["missing"], again["changed"]) == ([], [])
    # What the second answer cited comes back as it was.
    reimported = json.loads(run(["sessions", "export", report[0]["session_id"]], b).stdout)
    assert [m["content"] for m in reimported["messages"]] == [m["content"] for m in data["messages"]]
    assert reimported["messages"][3]["sources"] == data["messages"][3]["sources"]
    assert reimported["messages"][3]["condensed_question"] == answers[1]["condensed_question"]


def test_sessions_import_refuses_a_bad_file_with_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"docent_export": 99, "session": {}, "messages": []}')
    p = run(["sessions", "import", str(bad)], tmp_path / "data", check=False)
    assert p.returncode == 2 and "newer Docent" in p.stderr and "Traceback" not in p.stderr
    bad.write_text("not json at all")
    p = run(["sessions", "import", str(bad)], tmp_path / "data", check=False)
    assert p.returncode == 2 and "not JSON" in p.stderr
    p = run(["sessions", "import", str(tmp_path / "absent.json")], tmp_path / "data", check=False)
    assert p.returncode == 2 and "Cannot read" in p.stderr
    p = run(["sessions", "export", "nope"], tmp_path / "data", check=False)
    assert p.returncode == 2 and "No session 'nope'" in p.stderr


def test_a_bad_saved_setting_is_named_and_commands_run_with_the_default(tmp_path, corpus):
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text('{"top_k": 0, "chunk_size": "abc"}')
    listed = run(["docs", "list"], data)
    assert "No documents yet" in listed.stdout
    notice = listed.stderr
    assert str(data / "settings.json") in notice and "top_k = 0" in notice and "chunk_size = 'abc'" in notice
    assert "DOCENT_" not in notice  # no variable is set, so none is blamed

    ingested = run(["ingest", "--json", str(corpus / "zephyr.pdf")], data)
    [result] = lines(ingested.stdout)  # stdout stays the JSON contract; the notice is on stderr
    assert result["status"] == "indexed" and "settings.json" in ingested.stderr

    really = run(["docs", "list"], data, extra_env={"DOCENT_TOP_K": "0"}, check=False)
    assert really.returncode == 2 and "DOCENT_TOP_K" in really.stderr and "CHUNK_SIZE" not in really.stderr
