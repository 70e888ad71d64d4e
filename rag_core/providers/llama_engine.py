"""The local model loaded once per process: llama.cpp's server inside xllamacpp, called in-process.

* ``xllamacpp.Server`` always opens a listener for llama.cpp's HTTP API, which we
  never use: we call ``handle_completions`` in-process. To keep the model off the
  network it listens on a Unix socket inside a private temporary folder (POSIX) or
  on 127.0.0.1 with a random port (elsewhere), and in both cases behind a random API
  key, so neither other users nor browser pages can reach it.
* One engine (loaded weights + KV cache) per model file and context size is shared
  by every ``LlamaCppLLM`` in the process, loaded lazily on first use under a lock:
  Streamlit builds objects per session, and two copies of a 1 GB model would double
  the start time and memory.
* A per-engine lock serialises generations: on a 2-core machine two answers at once
  are not faster than one after the other. Concurrent sessions queue. Two llama.cpp
  slots, each with the whole context window: one for answers, one for every other
  prompt, so that each keeps its own fixed beginning read (``SLOTS``).
* Its threads are chosen for the cores other programs leave free (``threads``), again
  before each generation. llama.cpp takes them when the server starts (the server offers no
  way to change them later), so a changed choice reloads the model between two answers:
  about 2 s with the file in the page cache (docs/performance.md measures it against the decoding
  speed a wrong choice costs). What the two slots had read is written out before and read back
  after (``slots``); llama.cpp's RAM cache of older prompts is lost.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag_core.errors import ModelError
from rag_core.providers.slots import SlotKeeper
from rag_core.providers.threads import LOAD, ThreadChoice, choose_threads, usable_cores

logger = logging.getLogger(__name__)


# llama.cpp keeps the prompts it has read in memory, to reuse them when a conversation comes
# back (8 GiB by default: on a laptop that grows without notice). 256 MiB holds about nine
# prompts of 1,000 tokens: a few conversations' worth.
PROMPT_CACHE_MIB = 256

# How llama.cpp's threads wait for each other. This build of llama.cpp uses OpenMP: its
# threads meet at ``#pragma omp barrier`` after each operation, and the ``poll`` of its
# cpuparams is not read. libgomp spins a waiting thread GOMP_SPINCOUNT times before it sleeps
# (300,000 by default: milliseconds); a thread spinning on a core another program shares takes
# the time the thread it waits for needs. A short spin (tens of microseconds) keeps the
# hand-over between threads quick on free cores and sleeps soon on a shared one. libgomp reads
# it once, when it is loaded (the first model load of the process); set only around that load,
# and never over a value the user gave (GOMP_SPINCOUNT or OMP_WAIT_POLICY in the environment).
SHORT_SPIN = "10000"

# llama.cpp's slots: each keeps the prompt it read last (its KV cache), and a prompt given to it
# reads only what differs from that. Answers go to one slot, every other prompt (the rewrite, the
# summary, suggestions, a benchmark's baseline) to the other: the answers' fixed beginning (the
# system prompt, ~100 tokens, ~2 s on two cores) stays read between two conversations. With one
# slot, whatever ran in between took its place, and llama.cpp's RAM cache does not keep a short
# beginning apart from the longer prompts that hold it (it skips a cached prompt of which less
# than a quarter would be kept, and drops a cached prompt that a longer saved one contains).
# Generations still run one at a time (``LlamaEngine.lock``); a second slot costs one more
# context window of KV cache (~115 MB at 4,096 tokens for the default 1.5B model).
SLOTS = 2
ANSWER_SLOT = 0
OTHER_SLOT = 1
SPIN_VARIABLES = ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")

# At exit, how long to wait for a generation to stop (a read-ahead piece: a few seconds; a
# rewrite or summary that cannot be stopped mid-way: its whole length).
CLOSE_WAIT_S = 60.0


class LlamaEngine:
    """One loaded model: the xllamacpp server, its threads, and the lock that serialises
    generations. ``n_threads`` > 0 fixes the threads; 0 or less chooses them per generation."""

    def __init__(self, model_path: str, context_window: int, n_threads: int, short_spin: bool = False) -> None:
        self.model_path = model_path
        self.context_window = context_window
        self.n_threads = n_threads
        self.short_spin = short_spin  # read at the process's first load only (SHORT_SPIN)
        self.lock = threading.Lock()  # held by the caller around a generation (``generation``)
        self.waiting = 0  # generations waiting for ``lock``: a read-ahead gives way to them
        self.read_ahead_ticket = 0  # the newest read-ahead; an older one stops at its next piece
        self._count_lock = threading.Lock()
        self.server: Any = None
        self.choice: ThreadChoice | None = None  # the threads the loaded server runs with
        self.load_seconds: float | None = None  # the first load
        self.swaps = 0  # reloads because the free cores changed
        self._load_lock = threading.Lock()
        self._socket_dir: str | None = None
        self._key = ""  # the loaded server's API key (its listener takes the slots' save and restore)
        self._slots = SlotKeeper()
        self._last_load_s = 0.0
        self.closing = False  # the process is exiting: generations stop, none starts (``close``)

    @contextlib.contextmanager
    def generation(self) -> Iterator[None]:
        """Hold ``lock`` for one generation, counted in ``waiting`` while it waits for it."""
        if self.closing:
            raise ModelError("The local model is closed: this program is exiting.")
        with self._count_lock:
            self.waiting += 1
        try:
            self.lock.acquire()
        finally:
            with self._count_lock:
                self.waiting -= 1
        try:
            yield
        finally:
            self.lock.release()

    def new_read_ahead(self) -> int:
        """A ticket for a read-ahead: any older one stops at its next piece."""
        with self._count_lock:
            self.read_ahead_ticket += 1
            return self.read_ahead_ticket

    def _wanted(self) -> tuple[ThreadChoice, float | None]:
        if self.n_threads > 0:
            return ThreadChoice(self.n_threads, self.n_threads), None
        others = LOAD.others()
        return choose_threads(usable_cores(), others, self.choice), others

    def get_server(self) -> Any:
        """Load the model on first use; later calls return the same server."""
        if self.server is not None:
            return self.server
        if self.closing:
            raise ModelError("The local model is closed: this program is exiting.")
        with self._load_lock:
            if self.server is None:
                choice, _ = self._wanted()
                self.server = self._load(choice)
                self.load_seconds = self.load_seconds or self._last_load_s
                LOAD.mark()
        return self.server

    def server_for_generation(self) -> tuple[Any, dict[str, float]]:
        """The server for the next generation and the threads it runs with (for the answer's
        timings). Call it with ``lock`` held: a changed choice reloads the model, which must
        not happen under a running generation."""
        fresh = self.server is None  # loaded just now, with threads chosen just now
        server = self.get_server()
        others: float | None = None
        swap_s, kept = 0.0, 0
        if not fresh and self.n_threads <= 0:
            wanted, others = self._wanted()
            if wanted != self.choice:
                logger.info("Free cores changed (others use %.2f): threads %s -> %s", others or 0, self.choice, wanted)
                started = time.perf_counter()
                with self._load_lock:
                    saved = self._slots.save(self._socket_path(), self._key, SLOTS)  # kept over the reload
                    try:
                        self._unload()
                        self.server = server = self._load(wanted)
                    except BaseException:
                        self._slots.clear()
                        raise
                    kept = self._slots.restore(self._socket_path(), self._key, saved)
                swap_s = time.perf_counter() - started
                self.swaps += 1
        assert self.choice is not None
        info = {"threads_decode": float(self.choice.decode), "threads_batch": float(self.choice.batch)}
        if others is not None:
            info["others_busy_cores"] = others
        if swap_s:
            info["threads_swap_s"] = round(swap_s, 3)
            info["threads_swap_kept_tokens"] = float(kept)  # what the slots had read, read back
        return server, info

    def generation_done(self) -> None:
        """The next load reading starts here (this generation's own CPU is not the others')."""
        LOAD.mark()

    def reload(self) -> float:
        """Load the model afresh (its threads chosen now); every cached prompt is forgotten.
        For benchmarks that compare prompt reading from the same empty cache. Seconds taken."""
        with self.lock, self._load_lock:
            self._unload()
            choice, _ = self._wanted()
            self.server = self._load(choice)
            LOAD.mark()
            return self._last_load_s

    def unload(self) -> None:
        """Free the model's memory; the next use loads it again."""
        with self.lock, self._load_lock:
            self._unload()

    def close(self, timeout: float = CLOSE_WAIT_S) -> bool:
        """Stop and free the model before the interpreter exits (``atexit``). A generation
        left running in a daemon thread (a read-ahead, an answer nobody reads to the end) would
        otherwise be inside llama.cpp while Python finalizes: the process then dies of a
        segmentation fault or an abort instead of exiting with its status. A read-ahead stops
        before its next piece, a streamed answer at its next token (``closing``); the lock is
        then kept, so no generation starts after. False when the running one did not end
        within ``timeout`` seconds (left as it is)."""
        self.closing = True
        self.new_read_ahead()
        if not self.lock.acquire(timeout=timeout):
            logger.warning("The local model was still generating at exit; it was not stopped in %.0f s", timeout)
            return False
        with self._load_lock:
            self._unload()
        return True

    def _socket_path(self) -> str | None:
        return os.path.join(self._socket_dir, "llama.sock") if self._socket_dir else None

    def _unload(self) -> None:
        server, self.server, self.choice = self.server, None, None
        del server  # the last reference: xllamacpp stops the server and frees the model
        if self._socket_dir:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    def _load(self, choice: ThreadChoice) -> Any:
        path = Path(self.model_path)
        check_gguf_file(path)
        try:
            xllamacpp = import_runtime(self.short_spin)
        except ImportError as exc:  # pragma: no cover - xllamacpp is a hard dependency
            raise ModelError(
                f"The local LLM runtime xllamacpp cannot be imported ({exc}). "
                "Run `pip install -r requirements.txt`, or choose another LLM provider."
            ) from exc

        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        params.n_parallel = SLOTS  # answers in one slot, the other prompts in the other (SLOTS)
        params.n_ctx = self.context_window * SLOTS  # each slot has the whole context window
        params.cache_idle_slots = False  # a slot keeps what it read while the other one works
        params.cpuparams.n_threads = choice.decode
        params.cpuparams_batch.n_threads = choice.batch
        params.cache_ram_mib = PROMPT_CACHE_MIB
        params.offline = True  # never fetch anything from a model hub
        params.ui = False
        params.verbosity = 0 if not logger.isEnabledFor(logging.DEBUG) else 3
        params.api_keys = [secrets.token_urlsafe(32)]
        socket_dir = None
        if os.name == "posix":
            socket_dir = tempfile.mkdtemp(prefix="docent-llm-")  # mode 0700: private to this user
            # Removed at exit (or when the model is reloaded); the Server cannot be weak-referenced.
            weakref.finalize(self, shutil.rmtree, socket_dir, True)
            params.hostnames = [os.path.join(socket_dir, "llama.sock")]
            params.slot_save_path = self._slots.folder()  # the slots kept over a reload (``slots``)
        else:  # pragma: no cover - Windows: loopback, random port, random key
            params.hostnames = ["127.0.0.1"]
            params.port = 0

        logger.info(
            "Loading local LLM %s (n_ctx=%d, threads=%d, batch threads=%d)",
            path,
            self.context_window,
            choice.decode,
            choice.batch,
        )
        started = time.perf_counter()
        try:
            server = xllamacpp.Server(params)
        except Exception as exc:
            if socket_dir:
                shutil.rmtree(socket_dir, ignore_errors=True)
            raise ModelError(
                f"llama.cpp (xllamacpp) could not load the local model {path}: {exc}. "
                "The file may be damaged (delete it to have it assembled again), or the machine "
                "may lack memory (about 2 GB free is needed); otherwise choose another LLM provider."
            ) from exc
        if socket_dir:
            _until_listening(os.path.join(socket_dir, "llama.sock"))
        self._last_load_s = time.perf_counter() - started
        self._socket_dir = socket_dir
        self._key = params.api_keys[0]
        self.choice = choice
        logger.info("Local LLM loaded in %.1f s", self._last_load_s)
        return server


def _until_listening(path: str, timeout: float = 10.0) -> None:
    """Until the server's listener accepts on ``path``. Its HTTP thread starts listening a
    moment after the server is built; a server stopped before that (a reload at once after a
    load) never wakes that thread, and stopping it waits for good."""
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(path)
                return
            except OSError:
                time.sleep(0.01)
    logger.warning("the local model's server did not start listening within %.0f s", timeout)


_ENGINES: dict[tuple[str, int, int, bool], LlamaEngine] = {}
_ENGINES_LOCK = threading.Lock()


@atexit.register
def _close_engines() -> None:
    with _ENGINES_LOCK:
        engines = list(_ENGINES.values())
    for engine in engines:
        if engine.server is not None:
            engine.close()


def shared_engine(model_path: str, context_window: int, n_threads: int, short_spin: bool = False) -> LlamaEngine:
    """The shared engine for this model file and load-time settings (sampling is per request);
    ``n_threads`` 0 or less: threads chosen per generation."""
    key = (str(Path(model_path).expanduser().resolve()), context_window, max(0, n_threads), short_spin)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = LlamaEngine(*key)
        return engine


def check_gguf_file(path: Path) -> None:
    """Fail with a clear message before llama.cpp answers with a bare 'failed to init'."""
    try:
        with path.open("rb") as handle:
            magic = handle.read(4)
    except OSError as exc:
        raise ModelError(
            f"The local model file {path} cannot be read ({exc}). "
            "Start the app again to have it assembled, or choose another LLM provider."
        ) from exc
    if magic != b"GGUF":
        raise ModelError(f"{path} is not a GGUF model file. Delete it to have it assembled again.")


def resolve_threads(n_threads: int) -> int:
    """Threads for a server started once (``serve-model``): a number fixes them, 0 or less is
    every core this process may use (a team's server has its machine to itself)."""
    return n_threads if n_threads > 0 else usable_cores()


def import_runtime(short_spin: bool) -> Any:
    """``xllamacpp``, its OpenMP runtime told to spin briefly (``SHORT_SPIN``) when this import
    is the one that loads it and the user set no wait policy; the environment is left as found."""
    import sys

    if not short_spin or "xllamacpp" in sys.modules or any(v in os.environ for v in SPIN_VARIABLES):
        import xllamacpp

        return xllamacpp
    os.environ["GOMP_SPINCOUNT"] = SHORT_SPIN
    try:
        import xllamacpp
    finally:
        os.environ.pop("GOMP_SPINCOUNT", None)
    return xllamacpp
