"""A time and memory budget per file: ``load_file_guarded`` reads files in a worker process
that is stopped past the budget, refuses with a reason a person understands, and is replaced
for the next file. And the cheaper first line of defence: a .docx whose XML holds too many
elements is refused before it is read."""

import os
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from rag_core import loaders
from rag_core.errors import IngestCancelled, IngestError
from rag_core.loaders import budget, load_file, load_file_guarded
from tests.pdfgen import ZEPHYR_PAGES, encrypt_pdf, make_pdf
from tests.test_formats import W, make_docx, para, table

pytestmark = pytest.mark.usefixtures("settled_reader")  # each test sees only its own workers

# 2.9 million elements: under the element budget, but seconds and ~300 MB to read. Its
# document.xml is 20 MB; the .docx is 30 KB.
HEAVY_ELEMENTS = 2_900_000


def heavy_docx(path: Path, elements: int = HEAVY_ELEMENTS) -> Path:
    body = "<w:p><w:r>" + "<w:br/>" * elements + "<w:t>end</w:t></w:r></w:p>"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("word/document.xml", f'<w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>')
    return path


def snapshot(loaded: loaders.LoadedFile) -> tuple:
    docs = [
        (d.id_, d.text, d.metadata, d.excluded_embed_metadata_keys, d.excluded_llm_metadata_keys)
        for d in loaded.documents
    ]
    return loaded.name, loaded.kind, loaded.pages, loaded.warnings, docs


@pytest.fixture(autouse=True, scope="module")
def _no_worker_left_behind():
    yield
    budget._close_idle()


@pytest.fixture
def report_pdf(tmp_path) -> Path:
    path = tmp_path / "report.pdf"
    make_pdf(ZEPHYR_PAGES, path)
    return path


# --------------------------------------------------------------------------- in-process
def test_a_docx_with_too_many_xml_elements_is_refused_before_it_is_read(tmp_path, monkeypatch):
    monkeypatch.setattr(loaders, "MAX_XML_ELEMENTS", 10_000)
    path = heavy_docx(tmp_path / "runs.docx", elements=20_000)
    with pytest.raises(IngestError) as e:
        load_file(path, "runs.docx", "sha")
    assert e.value.reason == (
        "too large when unpacked: word/document.xml holds over 10,000 XML elements (too complex to read)"
    )
    small = tmp_path / "small.docx"
    make_docx(para("Manual", "Heading1") + table([["Part", "Torque"], ["Bolt", "12 Nm"]]), small)
    assert "Bolt | 12 Nm" in load_file(small, "small.docx", "sha").documents[0].text


# --------------------------------------------------------------------------- through the worker
def test_files_read_through_the_worker_are_the_same_as_read_in_process(tmp_path, report_pdf):
    files = {"report.pdf": report_pdf}
    for name, data in {
        "manual.docx": make_docx(para("Manual", "Heading1") + table([["Part", "Torque"], ["Bolt", "12 Nm"]])),
        "page.html": "<title>Köln</title><h1>Dom</h1><p>Grüße, 15 €</p><script>evil()</script>".encode("cp1252"),
        "notes.md": b"# Title\nintro\n## Setup\nrun it\n",
        "plain.txt": "Wörter ohne BOM".encode("utf-16-le"),
    }.items():
        files[name] = tmp_path / name
        files[name].write_bytes(data)
    for name, path in files.items():
        assert snapshot(load_file_guarded(path, name, "sha")) == snapshot(load_file(path, name, "sha")), name

    # Refusals come back as the same IngestError.
    locked = tmp_path / "locked.pdf"
    locked.write_bytes(encrypt_pdf(make_pdf(["secret"]), "pw"))
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    for path, name, reason in ((locked, "locked.pdf", "encrypted: needs a password"), (empty, "e.txt", "empty file")):
        with pytest.raises(IngestError) as e:
            load_file_guarded(path, name, "sha")
        assert (e.value.file, e.value.reason) == (name, reason)


def test_an_unsupported_type_is_refused_without_starting_a_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(budget, "_checkout", lambda: pytest.fail("no worker needed"))
    with pytest.raises(IngestError) as e:
        load_file_guarded(tmp_path / "x.epub", "book.epub", "sha")
    assert e.value.reason.startswith("unsupported type .epub")


def test_a_file_over_the_time_budget_is_stopped_and_the_next_file_loads(tmp_path, report_pdf):
    heavy = heavy_docx(tmp_path / "heavy.docx")
    load_file_guarded(report_pdf, "report.pdf", "sha")  # the worker is up: its start is not timed
    started = time.monotonic()
    with pytest.raises(IngestError) as e:
        load_file_guarded(heavy, "heavy.docx", "sha", timeout_s=0.5)
    assert e.value.file == "heavy.docx"
    assert e.value.reason == "took too long to read (over 0.5 s): the file is too complex or damaged"
    assert time.monotonic() - started < 5
    assert budget._idle == []  # the stopped worker is not reused
    assert "42 litres" in load_file_guarded(report_pdf, "report.pdf", "sha").documents[1].text


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS is enforced on Linux")
def test_a_file_over_the_memory_budget_is_refused_and_the_next_file_loads(tmp_path, report_pdf):
    heavy = heavy_docx(tmp_path / "heavy.docx")
    with pytest.raises(IngestError) as e:
        load_file_guarded(heavy, "heavy.docx", "sha", memory_mb=64)
    assert e.value.reason == "needs more than 64 MB of memory to read: the file is too complex or damaged"
    assert "42 litres" in load_file_guarded(report_pdf, "report.pdf", "sha", memory_mb=64).documents[1].text


def test_a_worker_killed_while_reading_is_reported_and_replaced(tmp_path, report_pdf, monkeypatch):
    """What the kernel's out-of-memory killer does: SIGKILL while the worker holds a file (its
    job sent, no reply yet: all the reader can know of a worker killed mid-file)."""
    heavy = heavy_docx(tmp_path / "heavy.docx")
    busy: list[budget._Worker] = []
    send = budget._Worker.send

    def sent_then_killed(self, job):
        busy.append(self)
        send(self, job)
        if len(busy) == 1:
            self.proc.kill()

    monkeypatch.setattr(budget._Worker, "send", sent_then_killed)
    with pytest.raises(IngestError) as e:
        load_file_guarded(heavy, "heavy.docx", "sha", timeout_s=60)
    assert e.value.reason == "needs more than 2048 MB of memory to read: the file is too complex or damaged"
    assert busy[0].proc.returncode is not None
    assert "42 litres" in load_file_guarded(report_pdf, "report.pdf", "sha").documents[1].text
    assert busy[-1] is not busy[0]


def test_threads_reading_at_once_each_get_their_own_file(tmp_path):
    """Streamlit ingests uploads from several threads: a busy worker is never shared."""
    files = []
    for i in range(6):
        path = tmp_path / f"d{i}.pdf"
        make_pdf([f"Document {i} page {n}: " + "words " * 50 for n in range(5)], path)
        files.append(path)
    expected = {p.name: snapshot(load_file(p, p.name, "s")) for p in files}
    got: dict[str, tuple] = {}
    errors: list[BaseException] = []

    def work(paths):
        try:
            for p in paths:
                got[p.name] = snapshot(load_file_guarded(p, p.name, "s"))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(files[k::3],)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and got == expected
    assert len(budget._idle) <= budget._MAX_IDLE


def test_an_idle_worker_that_died_between_files_is_replaced(report_pdf):
    load_file_guarded(report_pdf, "report.pdf", "sha")
    idle = budget._idle[0]
    idle.proc.kill()
    idle.proc.wait()
    assert "42 litres" in load_file_guarded(report_pdf, "report.pdf", "sha").documents[1].text
    assert budget._idle and budget._idle[0] is not idle


# --------------------------------------------------------------------------- a huge text (issue 18.5)
def text_docx(path: Path, megabytes: int) -> Path:
    """Valid WordprocessingML of ``megabytes`` MB in few elements: ~1 KB paragraphs of words.
    95 MB of it zips to under 1 MB; before, it was read, then chunked and embedded for hours."""
    words = "pump valve battery litre minute pressure seal motor filter hose torque bolt".split()
    one = para(" ".join(f"{words[i % 12]}{i % 97}" for i in range(150)))
    path.write_bytes(make_docx(one * (megabytes * 1_000_000 // len(one))))
    return path


def test_a_docx_of_95_mb_of_text_is_refused_while_it_is_read(tmp_path, make_settings, llm):
    from rag_core import build_context

    big = text_docx(tmp_path / "big.docx", 95)
    assert big.stat().st_size < 2_000_000
    ctx = build_context(make_settings(), llm=llm)
    seen: list[str] = []
    result = ctx.ingestion.ingest_file(big, progress=lambda message, share: seen.append(message))
    assert result.status == "failed"
    assert result.reason.startswith("too much text: 9") and "split it into smaller files" in result.reason
    assert "big.docx: reading" in seen and "embedding" not in " ".join(seen)  # refused before any chunk
    assert ctx.ingestion.documents() == [] and ctx.index.chunk_count("big.docx") == 0


def test_more_text_than_a_file_may_hold_is_refused_in_any_format(tmp_path, monkeypatch):
    monkeypatch.setattr(loaders, "MAX_TEXT_CHARS", 1000)
    notes = tmp_path / "notes.txt"
    notes.write_text("Pumps. " * 200)
    with pytest.raises(IngestError, match=r"too much text: 0\.0 million characters.*\(0\.001 million"):
        load_file(notes, "notes.txt", "sha")
    notes.write_text("Pumps. " * 100)
    assert load_file(notes, "notes.txt", "sha").documents[0].text.startswith("Pumps.")


def test_a_long_read_shows_its_seconds_and_can_be_cancelled(tmp_path, report_pdf):
    heavy = heavy_docx(tmp_path / "heavy.docx")
    load_file_guarded(report_pdf, "report.pdf", "sha")  # the worker is up
    seen: list[tuple[str, float]] = []
    with pytest.raises(IngestCancelled):
        load_file_guarded(
            heavy,
            "heavy.docx",
            "sha",
            timeout_s=120,
            progress=lambda message, share: seen.append((message, share)),
            cancelled=lambda: bool(seen),  # the user presses Cancel once the wait is shown
        )
    assert seen[0][0] == "reading (1 s; refused past 120 s)" and 0 < seen[0][1] < 0.1
    assert budget._idle == []  # the stopped worker is not reused
    assert "42 litres" in load_file_guarded(report_pdf, "report.pdf", "sha").documents[1].text


def test_cancel_works_while_the_worker_is_still_starting(report_pdf, monkeypatch):
    """On a loaded machine the worker's start (its imports) took 90 s, and Cancel waited for it."""
    budget._close_idle()
    started: list[budget._Worker] = []
    init = budget._Worker.__init__

    def watched(self, cancelled=None):
        started.append(self)
        init(self, cancelled)

    monkeypatch.setattr(budget._Worker, "__init__", watched)
    with pytest.raises(IngestCancelled):
        load_file_guarded(report_pdf, "report.pdf", "sha", cancelled=lambda: True)
    assert started[0].proc.returncode is not None and budget._idle == []  # killed, not kept
    assert "42 litres" in load_file_guarded(report_pdf, "report.pdf", "sha").documents[1].text


def test_a_worker_started_ahead_is_the_one_the_first_file_uses_once_per_process(report_pdf, monkeypatch):
    """The Upload page starts the reading worker when it opens (``warm``): a file sent while it
    is still starting waits for it instead of starting a second one, and it is done once."""
    budget._close_idle()
    monkeypatch.setattr(budget, "_warmed", False)
    started: list[budget._Worker] = []
    init = budget._Worker.__init__

    def watched(self, cancelled=None):
        started.append(self)
        time.sleep(0.5)  # a slow start: the file below arrives while it runs
        init(self, cancelled)

    monkeypatch.setattr(budget._Worker, "__init__", watched)
    ahead = budget.warm()
    assert ahead is not None and budget.warm() is None  # once per process
    assert "42 litres" in load_file_guarded(report_pdf, "report.pdf", "sha").documents[1].text
    ahead.join(30)
    assert len(started) == 1 and budget._idle == started  # the one started ahead read it, and stays idle


def test_a_file_sent_while_the_worker_started_ahead_fails_starts_its_own(report_pdf, monkeypatch):
    budget._close_idle()
    monkeypatch.setattr(budget, "_warmed", False)
    init = budget._Worker.__init__
    calls: list[str] = []

    def first_fails(self, cancelled=None):
        calls.append(threading.current_thread().name)
        if len(calls) == 1:
            time.sleep(0.3)
            raise RuntimeError("the worker process that reads files did not start (exit code 1)")
        init(self, cancelled)

    monkeypatch.setattr(budget._Worker, "__init__", first_fails)
    ahead = budget.warm()
    assert ahead is not None
    assert "42 litres" in load_file_guarded(report_pdf, "report.pdf", "sha").documents[1].text
    assert calls == ["docent-reader-ahead", threading.current_thread().name]


def test_the_worker_starts_without_the_app_or_llama_index_s_whole_package(report_pdf):
    """The worker's start is the first file's wait: it imports the loaders alone, with neither
    rag_core's nor llama_index.core's package ``__init__`` (every engine and index class), and
    reads a PDF into the very Document class the app unpickles."""
    import subprocess

    from rag_core.loaders.worker import BOOTSTRAP

    head = BOOTSTRAP.split("from rag_core.loaders.worker import main")[0]
    probe = (
        head
        + "from rag_core.loaders import load_file\n"
        + "loaded = load_file(__import__('pathlib').Path(sys.argv[3]), 'report.pdf', 'sha')\n"
        + "heavy = sorted(m for m in ('rag_core.chat', 'rag_core.context', 'llama_index.core.indices', "
        + "'llama_index.core.chat_engine', 'chromadb') if m in sys.modules)\n"
        + "print(type(loaded.documents[0]).__module__, loaded.pages, heavy)\n"
    )
    root = Path(budget.__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", probe, str(root), str(root / "rag_core"), str(report_pdf)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout.split()
    assert out == ["llama_index.core.schema", "3", "[]"]


def test_a_worker_whose_parent_is_gone_before_it_is_ready_exits_without_a_traceback():
    """A command that stops at a bad setting (the data folder a file) exits while the worker it
    started ahead is still importing: the worker's "ready" then meets a closed pipe. It exits
    quietly: the traceback went to the terminal the user shares with it (a CI failure)."""
    import subprocess

    from rag_core.loaders.worker import BOOTSTRAP

    root = Path(budget.__file__).resolve().parents[2]
    job_r, job_w = os.pipe()
    res_r, res_w = os.pipe()
    os.close(res_r)  # nobody reads the results: the parent has gone
    try:
        p = subprocess.run(
            [sys.executable, "-c", BOOTSTRAP, str(root), str(root / "rag_core"), str(job_r), str(res_w)],
            pass_fds=(job_r, res_w),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        for fd in (job_r, job_w, res_w):
            os.close(fd)
    assert (p.returncode, p.stderr) == (0, "")
