"""A follow-up asked after another program took a core: the model is reloaded for new threads
between the two turns (``rag_core.providers.llama_engine``). First token and rewrite time with
what the slots had read kept over the reload (``rag_core.providers.slots``) and without.

    .venv/bin/python tools/keep_slots.py FILE QUESTION FOLLOW_UP [RUNS]

FILE is indexed once into a template data folder; each run copies it and starts a fresh process
that asks QUESTION, lets the model read ahead (as while a person reads the answer), starts a
plain CPU-bound process, and asks FOLLOW_UP. Kept and dropped runs alternate (RUNS each, 2 by
default); one line per run, then the medians. Run it on an otherwise quiet machine.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ONE_RUN = """
import json, shutil, subprocess, sys, tempfile, threading, time
from pathlib import Path
from rag_core import build_context, load_settings
from rag_core.providers import slots
from rag_core.providers.threads import LOAD
mode, template, question, follow_up = sys.argv[1:5]
if mode == "dropped":
    slots.SlotKeeper.save = lambda self, *a, **k: []  # the reload forgets what the slots read
data = Path(tempfile.mkdtemp()) / "data"
shutil.copytree(template, data)
ctx = build_context(load_settings({}, data_dir=data))
sid = ctx.sessions.create("keep slots").id
first = ctx.chat.ask(question, sid)
for thread in [t for t in threading.enumerate() if t.name == "docent-read-ahead"]:
    thread.join(300)
hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
try:
    time.sleep(1)
    LOAD.mark()  # the load read from here, as after a person read the answer for a while
    time.sleep(2)
    follow = ctx.chat.ask(follow_up, sid)
finally:
    hog.kill()
shutil.rmtree(data.parent, ignore_errors=True)
t = follow.timings
print(json.dumps({"mode": mode, "first_token_s": t.get("first_token_s"), "rewrite_s": t.get("condense_s"),
    "rewrite_by": follow.served_by.get("condense"), "prompt_read_tokens": t.get("prompt_read_tokens"),
    "threads_decode": t.get("threads_decode"), "question": follow.condensed_question}))
"""


def main() -> int:
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    source, question, follow_up = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 2
    from rag_core import build_context, load_settings

    template = Path(tempfile.mkdtemp(prefix="keep-slots-")) / "data"
    try:
        results = build_context(load_settings({}, data_dir=template)).ingestion.ingest_paths([source])
        if results[0].status != "indexed":
            print(f"{source}: {results[0].status} ({results[0].reason})", file=sys.stderr)
            return 1
        seen: dict[str, list[dict]] = {"kept": [], "dropped": []}
        for _ in range(runs):
            for mode in seen:
                done = subprocess.run(
                    [sys.executable, "-c", ONE_RUN, mode, str(template), question, follow_up],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                row = json.loads(done.stdout.strip().splitlines()[-1])
                seen[mode].append(row)
                print(json.dumps(row), flush=True)
        for mode, rows in seen.items():
            first = statistics.median(r["first_token_s"] for r in rows)
            rewrites = [r["rewrite_s"] for r in rows if r["rewrite_s"] is not None]
            rewrite = f", rewrite {statistics.median(rewrites):.1f} s" if rewrites else ""
            print(f"{mode}: first token {first:.1f} s{rewrite} (median of {len(rows)})")
    finally:
        shutil.rmtree(template.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
