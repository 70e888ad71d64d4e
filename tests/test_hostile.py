"""What a careless or hostile user does (issue 42): a malformed import, a model server opened
to the network without a key, names that are not UTF-8, an empty data folder variable, and
progress a script can read. Each test ran red on the code before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_core.errors import ConfigError, DocentError
from rag_core.exchange import parse_export

ROOT = Path(__file__).resolve().parents[1]


def run(args, data_dir, extra_env=None, timeout=300, stdin=None):
    env = {
        **os.environ,
        "DOCENT_DATA_DIR": str(data_dir),
        "DOCENT_EMBED_PROVIDER": "hash",
        "DOCENT_LLM_PROVIDER": "extractive",
        **(extra_env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "rag_core", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        timeout=timeout,
    )


# ============================================================================ 5. a malformed import
DEEP = "[" * 100_000  # 100 KB; the file was 400 KB of the same


@pytest.mark.parametrize(
    "text",
    [
        DEEP,
        '{"docent_export": 1, "session": {"name": "x"}, "messages": ' + DEEP,
        '{"docent_export": 1, "session": {"name": "x"}, "messages": [{"role": "user", "content": "q", "meta": '
        + "{"
        + '"a": {' * 5_000
        + "}" * 5_000
        + "}}]}",
        '{"docent_export": 1, "session": {"name": "x"}, "messages": [{"role": "user", "content": "q", "meta": '
        + '{"a": [' * 200
        + "]}" * 200
        + "}]}",  # 400 levels: under the parser's limit, not under what a page or a dump recurses through
    ],
    ids=["array", "inside-messages", "objects-in-meta", "400-levels"],
)
def test_a_deeply_nested_export_is_a_clear_error_at_once(text):
    started = time.perf_counter()
    for data in (text, text.encode()):
        with pytest.raises(ConfigError, match="nested") as caught:
            parse_export(data)
        assert "Nothing was imported" in str(caught.value)
    assert time.perf_counter() - started < 2


def test_nesting_docent_writes_is_imported():
    """A message's meta holds a few levels (a table's rows in a dict): that is no attack."""
    meta = {"table": {"rows": [[{"cell": [1, 2, {"x": [3]}]}]]}}
    export = {
        "docent_export": 1,
        "session": {"name": "x"},
        "messages": [{"role": "user", "content": "q", "meta": meta}],
    }
    assert parse_export(json.dumps(export)).messages[0].meta == meta


@pytest.mark.slow  # a `python -m rag_core` process
def test_sessions_import_of_100000_brackets_is_one_line_not_a_traceback(tmp_path):
    bad = tmp_path / "deep.json"
    bad.write_text("[" * 400_000)
    p = run(["sessions", "import", str(bad)], tmp_path / "data")
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert "Traceback" not in err and "RecursionError" not in err
    assert err.count("\n") == 1 and "nested" in err


# ============================================================================ 8. serve-model beyond loopback
@pytest.mark.slow  # `python -m rag_core serve-model` processes
def test_serve_model_beyond_loopback_without_a_key_is_refused_at_start(tmp_path):
    for host in ("0.0.0.0", "192.168.1.20", "::"):
        started = time.perf_counter()
        p = run(["serve-model", "--host", host, "--port", "1"], tmp_path / "data", timeout=120)
        err = p.stderr.decode()
        assert p.returncode == 2, err
        assert "--api-key" in err and "DOCENT_SERVE_API_KEY" in err and "Traceback" not in err
        assert time.perf_counter() - started < 60  # refused before any model is assembled or loaded
    assert not (tmp_path / "data" / "models").exists()


def test_serve_model_decides_who_may_connect_before_loading_anything(tmp_path, monkeypatch):
    from rag_core import serving
    from rag_core.settings import load_settings

    settings = load_settings({}, data_dir=tmp_path / "data")
    loaded = []
    monkeypatch.setattr(serving, "ensure_local_model", lambda *a, **k: loaded.append(a) or 1 / 0)
    with pytest.raises(DocentError, match="--api-key"):
        serving.start_model_server(settings, host="0.0.0.0")
    assert not loaded
    for host, key, open_ in (("127.0.0.1", None, False), ("localhost", None, False), ("::1", None, False)):
        assert serving.exposure(host, key, open_) is None
    assert serving.exposure("0.0.0.0", "k", False) is None
    warning = serving.exposure("0.0.0.0", None, True)
    assert warning and "anyone" in warning
    with pytest.raises(ZeroDivisionError):  # an explicit --no-api-key goes on to load the model
        serving.start_model_server(settings, host="0.0.0.0", allow_no_key=True)


# ============================================================================ 1. links, devices, pipes, /proc
@pytest.fixture
def booby_trapped(tmp_path):
    """A folder with one real document, a link to a secret outside it, a link inside it, a
    link to a folder outside, a named pipe, a device and /proc's view of this process."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("root:$6$hash:19000:0:99999:7::: the password hashes")
    (outside / "more.txt").write_text("another secret that stays outside")
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "real.txt").write_text("Bananas are yellow fruit.")
    (folder / "shadow.txt").symlink_to(outside / "secret.txt")
    (folder / "also-real.txt").symlink_to("real.txt")  # stays inside the folder: followed
    (folder / "elsewhere").symlink_to(outside, target_is_directory=True)
    (folder / "environ.txt").symlink_to("/proc/self/environ")
    (folder / "zero.txt").symlink_to("/dev/zero")
    os.mkfifo(folder / "pipe.txt")
    return folder


def test_a_folder_ingest_follows_no_link_out_of_the_folder(ctx, booby_trapped):
    started = time.perf_counter()
    results = {r.file: r for r in ctx.ingestion.ingest_paths([booby_trapped])}
    assert time.perf_counter() - started < 60  # the pipe was never opened (that blocks for ever)
    assert {n for n, r in results.items() if r.status == "indexed"} == {"real.txt", "also-real.txt"}
    refused = {n: r.reason for n, r in results.items() if r.status == "failed"}
    assert set(refused) == {"shadow.txt", "elsewhere", "environ.txt", "zero.txt", "pipe.txt"}
    assert "outside the folder" in refused["shadow.txt"] and "not followed" in refused["shadow.txt"]
    assert "folder" in refused["elsewhere"] and "not followed" in refused["elsewhere"]
    assert "named pipe" in refused["pipe.txt"]
    assert "outside the folder" in refused["environ.txt"] and "outside the folder" in refused["zero.txt"]
    stored = "\n".join(n.get_content() for n in ctx.index.all_nodes())
    assert "password hashes" not in stored and "another secret" not in stored
    assert not (ctx.settings.paths.files / "shadow.txt").exists()


def test_a_link_named_on_the_command_line_is_read_and_proc_never(ctx, booby_trapped, tmp_path):
    named = ctx.ingestion.ingest_paths([booby_trapped / "shadow.txt"])
    assert [(r.file, r.status) for r in named] == [("shadow.txt", "indexed")]  # the user named it
    for path in (Path("/proc/self/environ"), booby_trapped / "environ.txt", Path("/proc/self/status")):
        [r] = ctx.ingestion.ingest_paths([path])
        assert r.status == "failed" and "/proc" in r.reason, r
    [r] = ctx.ingestion.ingest_paths([Path("/dev/zero")])  # named, and still not read: a device
    assert r.status == "failed" and "character device" in r.reason
    assert "DOCENT_DATA_DIR" not in "\n".join(n.get_content() for n in ctx.index.all_nodes())


def test_a_file_swapped_for_a_link_after_the_folder_was_listed_is_not_read(ctx, booby_trapped, tmp_path):
    from rag_core.ingestion import iter_inputs

    inputs = [(p, n) for p, n in iter_inputs([booby_trapped]) if n == "real.txt"]
    (booby_trapped / "real.txt").unlink()
    (booby_trapped / "real.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    [r] = ctx.ingestion.ingest_each(inputs)
    assert r.status == "failed" and "outside the folder" in r.reason
    assert "password hashes" not in "\n".join(n.get_content() for n in ctx.index.all_nodes())


@pytest.mark.slow  # a `python -m rag_core ingest` process, as in the issue
def test_cli_folder_ingest_says_which_links_it_skipped_and_why(tmp_path, booby_trapped):
    p = run(["ingest", str(booby_trapped)], tmp_path / "data")
    out = p.stdout.decode()
    assert p.returncode == 0, p.stderr.decode()
    lines = {line.split()[1]: line for line in out.splitlines() if line.strip()}
    assert lines["real.txt"].startswith("indexed")
    assert lines["shadow.txt"].startswith("failed") and "outside the folder" in lines["shadow.txt"]
    assert "password hashes" not in run(["ask", "what are the password hashes?"], tmp_path / "data").stdout.decode()


# ============================================================================ 9. names, the data folder, progress
def test_a_file_name_that_is_not_utf8_keeps_its_byte(ctx, tmp_path):
    folder = tmp_path / "latin1"
    folder.mkdir()
    odd = os.fsdecode(b"caf\xe9.txt")  # as the file system lists it: the byte is not UTF-8
    (folder / odd).write_text("The café opens at nine.")
    (folder / "caf.txt").write_text("A different file: the caf of the office.")
    results = {r.file: r for r in ctx.ingestion.ingest_paths([folder])}
    assert {n: r.status for n, r in results.items()} == {"caf%E9.txt": "indexed", "caf.txt": "indexed"}
    assert (ctx.settings.paths.files / "caf%E9.txt").read_text() == "The café opens at nine."
    [named] = ctx.ingestion.ingest_paths([folder / odd])  # named on its own: the same name, unchanged
    assert (named.file, named.status) == ("caf%E9.txt", "skipped")


def test_an_empty_data_dir_variable_is_an_error_that_says_the_fix(tmp_path):
    from rag_core.settings import load_settings

    for empty in ("", "  "):
        with pytest.raises(ConfigError) as caught:
            load_settings({"DOCENT_DATA_DIR": empty})
        said = str(caught.value)
        assert "DOCENT_DATA_DIR" in said and "empty" in said and str(Path.home() / ".docent") in said
    given = load_settings({"DOCENT_DATA_DIR": ""}, data_dir=tmp_path / "given")  # --data-dir says which
    assert given.data_dir == tmp_path / "given"


@pytest.mark.slow  # `python -m rag_core` processes
def test_cli_with_an_empty_data_dir_says_so_in_one_line(tmp_path):
    home = tmp_path / "home"
    p = run(["docs", "list"], "", extra_env={"HOME": str(home)})
    err = p.stderr.decode()
    assert p.returncode == 2 and "DOCENT_DATA_DIR" in err and "Traceback" not in err and err.count("\n") == 1
    assert not (home / ".docent").exists()  # nothing written to the folder it did not choose


@pytest.mark.slow  # a `python -m rag_core ingest --json` process, its output a pipe
def test_ingest_json_to_a_pipe_reports_progress_as_json_lines_on_stderr(tmp_path):
    from tests.pdfgen import ZEPHYR_PAGES, make_pdf

    folder = tmp_path / "docs"
    folder.mkdir()
    make_pdf(ZEPHYR_PAGES * 4, folder / "long.pdf")
    (folder / "short.txt").write_text("Bananas are yellow.")
    p = run(["ingest", "--json", str(folder)], tmp_path / "data")
    assert p.returncode == 0, p.stderr.decode()
    results = [json.loads(line) for line in p.stdout.decode().splitlines()]
    assert {r["file"] for r in results} == {"long.pdf", "short.txt"}  # stdout stays one object per file
    progress = [json.loads(line) for line in p.stderr.decode().splitlines() if line.strip()]
    assert progress and all(set(x) >= {"progress", "message"} for x in progress)
    assert any(x["progress"] < 1 for x in progress)
    for name in ("long.pdf", "short.txt"):
        assert any(x["progress"] == 1 and x["message"].startswith(name) for x in progress), progress


# ============================================================================ 6. NUL bytes, SQLite and PostgreSQL alike
@pytest.fixture(params=["sqlite", "postgres"])
def backend(request, make_settings, llm, tmp_path):
    """A context on docent.db, or on a real PostgreSQL server (tests/pgserver.py)."""
    from rag_core import build_context

    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    return build_context(make_settings(database_url=url, files_dir=tmp_path / "files"), llm=llm)


def test_a_nul_byte_in_a_question_or_a_document_is_taken_alike_on_both_databases(backend, tmp_path):
    ctx = backend
    folder = tmp_path / "nul"
    folder.mkdir()
    (folder / "pump.txt").write_bytes(b"The Zephyr pump\x00 delivers 42 litres per minute.\n")
    (folder / "n\x01ame.md").write_text("# Heading\x00 one\nThe valve is made of brass.\n")
    results = {r.file: r for r in ctx.ingestion.ingest_paths([folder])}
    assert {r.status for r in results.values()} == {"indexed"}, results
    session = ctx.sessions.create("nul\x00 chat")
    turn = ctx.chat.ask("How many litres\x00 does the Zephyr pump deliver?", session.id)
    assert "pump.txt" in {s["file"] for s in turn.sources}
    stored = ctx.sessions.messages(session.id)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[0].content == "How many litres does the Zephyr pump deliver?"  # the NUL dropped, nothing else
    assert ctx.sessions.get(session.id).name == "nul chat"
    assert all("\x00" not in s["text"] for s in turn.sources)
    ctx.sessions.rename(session.id, "re\x00named")
    assert ctx.sessions.get(session.id).name == "renamed"
    from rag_core.exchange import export_json, import_session

    exported = export_json(ctx, session.id).replace("How many litres", "How many\\u0000 litres")
    exported = exported.replace("42 litres", "42\\u0000 litres")  # in the passages the answer cites
    report = import_session(ctx, exported)
    imported = ctx.sessions.messages(report.session_id)
    assert imported[0].content == "How many litres does the Zephyr pump deliver?"
    assert any("42 litres" in s["text"] for s in imported[1].sources)
    assert all("\x00" not in s["text"] for s in imported[1].sources)


@pytest.mark.slow  # `python -m rag_core` processes on a real PostgreSQL server
def test_cli_chat_and_ingest_take_a_nul_on_postgres(tmp_path, pg_url):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "pump.txt").write_bytes(b"The Zephyr pump\x00 delivers 42 litres per minute.\n")
    team = {"DOCENT_DATABASE_URL": pg_url}
    ingested = run(["ingest", "--json", str(folder)], tmp_path / "data", extra_env=team)
    assert json.loads(ingested.stdout)["status"] == "indexed", ingested.stderr.decode()
    chat = run(
        ["chat", "--session", "s"], tmp_path / "data", extra_env=team, stdin=b"How many litres\x00 per minute?\n"
    )
    err = chat.stderr.decode()
    assert chat.returncode == 0 and "Traceback" not in err and "DataError" not in err, err
    assert "42" in chat.stdout.decode()


# ============================================================================ 3. a full disk
@pytest.fixture
def small_disk(tmp_path):
    """A 40 MB tmpfs to fill (root only: the test skips, saying why, where it cannot mount)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill: {mounted.stderr.decode().strip() or 'not root'}")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, leave_kb: int) -> None:
    """Take the disk's free space but ``leave_kb``."""
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with open(disk / "filler", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, max(free - leave_kb * 1024, 1))


def unfill(disk: Path) -> None:
    (disk / "filler").unlink()


def long_pdf(path: Path) -> Path:
    from tests.pdfgen import make_pdf

    pages = [
        f"Chapter {i}\n"
        + " ".join(f"The pump Z{i}-{j} delivers {i * j} litres a minute at {j} bar in the rig." for j in range(1, 120))
        for i in range(1, 29)
    ]
    make_pdf(pages, path)
    return path


def one_line_or_works(p: subprocess.CompletedProcess) -> None:
    err = p.stderr.decode()
    assert "Traceback" not in err and "OperationalError" not in err, err
    if p.returncode != 0:
        said = [line for line in err.splitlines() if line.startswith("error:")]
        assert len(said) == 1 and "full" in said[0], err


@pytest.mark.slow  # `python -m rag_core` processes on a filled tmpfs, as in the issue
@pytest.mark.parametrize("leave_kb", [150, 300, 450])
def test_a_full_disk_leaves_a_document_whole_or_absent(tmp_path, small_disk, leave_kb):
    data = small_disk / "data"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "small.txt").write_text("Bananas are yellow fruit.")
    big = long_pdf(tmp_path / "docs" / "big.pdf")
    assert run(["ingest", str(tmp_path / "docs" / "small.txt")], data).returncode == 0
    fill(small_disk, leave_kb)
    p = run(["ingest", "--json", str(big)], data)
    one_line_or_works(p)
    result = json.loads(p.stdout) if p.returncode == 0 else {"status": "failed", "reason": p.stderr.decode()}
    if result["status"] == "failed":
        assert "full" in result["reason"], result
        assert "nothing of it was kept" in result["reason"] or "removed at the next start" in result["reason"]
    unfill(small_disk)

    # The next start: a document is whole or absent, never half and registered.
    listed = run(["docs", "list", "--json"], data)
    assert "Registered again" not in listed.stderr.decode(), listed.stderr.decode()
    docs = {d["name"]: d for d in map(json.loads, listed.stdout.decode().splitlines())}
    if "big.pdf" in docs:
        assert result["status"] == "indexed" and docs["big.pdf"]["pages"] == 28
        assert docs["big.pdf"]["size"] == big.stat().st_size
    checked = run(["check", "--json"], data)
    assert checked.returncode == 0, checked.stdout.decode() + checked.stderr.decode()

    again = json.loads(run(["ingest", "--json", str(big)], data).stdout)
    assert again["status"] in ("indexed", "skipped") and again["pages"] == 28
    if result["status"] == "indexed":
        assert again["chunks"] == result["chunks"]
    assert run(["check"], data).returncode == 0


@pytest.mark.slow  # `python -m rag_core` processes on a filled tmpfs
def test_every_command_on_a_full_disk_works_or_says_so_in_one_line(tmp_path, small_disk):
    data = small_disk / "data"
    (tmp_path / "small.txt").write_text("Bananas are yellow fruit.")
    assert run(["ingest", str(tmp_path / "small.txt")], data).returncode == 0
    assert run(["ask", "What colour are bananas?", "--session", "fruit"], data).returncode == 0
    fill(small_disk, 40)
    listed = run(["docs", "list"], data)  # reading what the database holds needs no index
    assert listed.returncode == 0 and "small.txt" in listed.stdout.decode() and "full" in listed.stderr.decode()
    chats = run(["sessions", "list"], data)
    assert chats.returncode == 0 and "fruit" in chats.stdout.decode()
    exported = run(["sessions", "export", "fruit"], data)
    assert exported.returncode == 0 and json.loads(exported.stdout)["session"]["name"] == "fruit"
    for command in (
        ["docs", "list"],
        ["sessions", "list"],
        ["check"],
        ["check", "--repair"],
        ["ask", "What colour are bananas?"],
        ["docs", "delete", "small.txt"],
        ["ingest", str(tmp_path / "small.txt")],
    ):
        one_line_or_works(run(command, data))
    unfill(small_disk)
    assert run(["check"], data).returncode == 0
    assert "small.txt" in run(["docs", "list"], data).stdout.decode()


def test_what_check_reports_after_a_lost_copy_or_a_half_document_the_user_can_fix(make_settings, llm, tmp_path):
    from rag_core import build_context
    from rag_core.health import check

    ctx = build_context(make_settings(), llm=llm)
    big = long_pdf(tmp_path / "big.pdf")
    (tmp_path / "small.txt").write_text("Bananas are yellow fruit.")
    whole = {r.file: r for r in ctx.ingestion.ingest_paths([big, tmp_path / "small.txt"])}
    # The stored copy lost: `check` says to ingest the file again, and doing so is no "skipped".
    (ctx.settings.paths.files / "small.txt").unlink()
    [problem] = check(ctx)[0]
    assert "small.txt" in problem and "ingest or upload the file again" in problem
    [again] = ctx.ingestion.ingest_paths([tmp_path / "small.txt"])
    assert again.status == "indexed" and (ctx.settings.paths.files / "small.txt").is_file()
    assert check(ctx)[0] == []
    # Half a document, its registry row and its copy gone (what a full disk left before): not
    # registered again as if whole, kept, and `check` says what makes it whole.
    half = [n.node_id for n in ctx.index.all_nodes(["big.pdf"]) if (n.metadata.get("page") or 0) > 16]
    ctx.index.collection.delete(ids=half)
    ctx.registry.remove("big.pdf")
    (ctx.settings.paths.files / "big.pdf").unlink()
    fresh = build_context(make_settings(), llm=llm)
    assert fresh.reregistered == [] and [d.name for d in fresh.ingestion.documents()] == ["small.txt"]
    problems = check(fresh)[0]
    assert any(
        "big.pdf" in p and "no stored copy" in p and "Ingesting or uploading the file again" in p for p in problems
    )
    assert fresh.index.chunk_count("big.pdf") > 0  # kept: nothing proves it garbage
    [redone] = fresh.ingestion.ingest_paths([big])
    assert (redone.status, redone.pages, redone.chunks) == ("indexed", 28, whole["big.pdf"].chunks)
    assert check(fresh)[0] == []
