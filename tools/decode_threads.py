"""Decoding speed of the local model with two decode threads and with one, while another
process takes a given share of one core (a duty-cycled busy loop): where one thread starts to
beat two on this machine (``rag_core.providers.threads.DECODE_SLACK``).

    .venv/bin/python tools/decode_threads.py [SHARE ...]    # default 0 0.2 0.35 0.5 0.65 0.8 1

Prints one line per share: tokens per second (median of three 48-token generations, prompt
reading with both cores). Run it on an otherwise quiet machine.
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import sys
import time
from typing import Any

from rag_core.model_store import ensure_local_model
from rag_core.providers.llama_engine import LlamaEngine
from rag_core.providers.threads import ThreadChoice
from rag_core.settings import DocentSettings

PROMPT = (
    "<|im_start|>user\nWrite a long story about a lighthouse keeper and the sea, with many details."
    "<|im_end|>\n<|im_start|>assistant\n"
)


def _hog(share: float, stop: Any) -> None:
    period = 0.02
    while not stop.is_set():
        started = time.perf_counter()
        while time.perf_counter() - started < share * period:
            pass
        if share < 1:
            time.sleep((1 - share) * period)


def _decode(engine: LlamaEngine, choice: ThreadChoice, runs: int = 3) -> float:
    engine.unload()
    engine.server = engine._load(choice)  # fixed threads, not the chosen ones
    speeds = []
    for i in range(runs):
        request = {"prompt": PROMPT + " " * i, "max_tokens": 48, "temperature": 0, "cache_prompt": False}
        speeds.append(float(engine.server.handle_completions(request)["timings"]["predicted_per_second"]))
    return statistics.median(speeds)


def main(shares: list[float]) -> None:
    engine = LlamaEngine(str(ensure_local_model(DocentSettings().model_dir)), 4096, 0)
    for share in shares:
        stop = mp.Event()
        hog = mp.Process(target=_hog, args=(share, stop)) if share > 0 else None
        if hog:
            hog.start()
            time.sleep(0.5)
        two, one = _decode(engine, ThreadChoice(2, 2)), _decode(engine, ThreadChoice(1, 2))
        stop.set()
        if hog:
            hog.join()
        print(
            f"others use {share:.2f} of a core: decode 2 threads {two:.1f} tok/s, 1 thread {one:.1f} tok/s", flush=True
        )
    engine.unload()


if __name__ == "__main__":
    main([float(a) for a in sys.argv[1:]] or [0, 0.2, 0.35, 0.5, 0.65, 0.8, 1.0])
