"""The servers a benchmark starts for itself: a free port on loopback, a process that counts as
started once a URL of its answers, and ``chroma run`` over a folder."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from rag_core.bench.inputs import ROOT
from rag_core.errors import ConfigError


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answers(url: str) -> bool:
    """Whether ``url`` answers (any HTTP status) within two seconds."""
    with contextlib.suppress(OSError):
        urllib.request.urlopen(url, timeout=2)
        return True
    return False


def _wait(what: str, ready: Callable[[], bool], process: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            raise ConfigError(f"{what} did not start: {log.read_text(errors='replace')[-1500:]}")
        time.sleep(0.5)


@contextlib.contextmanager
def server_process(what: str, cmd: list[str], log: Path, ready: Callable[[], bool], timeout: float) -> Iterator[None]:
    """``cmd`` running (its output in ``log``) from once ``ready`` says so to the block's end."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait(what, ready, proc, log, timeout)
        yield
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
        if proc.poll() is None:
            proc.kill()


@contextlib.contextmanager
def chroma_run(path: Path, log: Path, timeout: float = 120) -> Iterator[int]:
    """``chroma run`` over the Chroma folder ``path`` on a free loopback port (yielded)."""
    port = free_port()
    chroma = [str(Path(sys.executable).with_name("chroma")), "run", "--path", str(path)]
    beat = f"http://127.0.0.1:{port}/api/v2/heartbeat"
    cmd = [*chroma, "--host", "127.0.0.1", "--port", str(port)]
    with server_process("chroma run", cmd, log, lambda: answers(beat), timeout):
        yield port
