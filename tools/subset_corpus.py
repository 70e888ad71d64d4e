"""An evaluation corpus that is a part of one already indexed, without indexing it again.

    python tools/subset_corpus.py CORPUS SUBSET --drop "AAPL"

makes SUBSET a folder of links to the files of CORPUS whose names do not contain any
``--drop`` text, and its evaluation cache (``python -m rag_core eval --corpus SUBSET``) a copy
of CORPUS's with the dropped documents deleted through Docent itself. "Apple" over the SEC
filings without Apple's is then an evaluation of its own (docs/evaluation.md), in seconds
instead of the half hour the filings take to embed. Settings come from the environment
(``DOCENT_DATA_DIR`` ...) as for ``eval``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from rag_core import load_settings
from rag_core.context import build_context
from rag_core.evaluation import READY_MARKER, corpus_key, eval_settings, prepare_corpus
from rag_core.ingestion import iter_inputs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="the whole corpus folder (indexed once by eval)")
    parser.add_argument("subset", type=Path, help="the folder to make: links to the files kept")
    parser.add_argument("--drop", action="append", required=True, help="leave out files whose name contains this")
    args = parser.parse_args(argv)
    settings = load_settings()
    whole = prepare_corpus(settings, args.corpus, progress=lambda msg, frac: print(msg, file=sys.stderr))
    source = Path(whole.settings.data_dir)
    args.subset.mkdir(parents=True, exist_ok=True)
    dropped = []
    for path, name in iter_inputs([args.corpus]):
        if any(d in name for d in args.drop):
            dropped.append(name)
            continue
        link = args.subset / name
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(path.resolve())
    target = source.parent / corpus_key(args.subset, settings)
    if (target / READY_MARKER).exists():
        print(f"already made: {target}")
        return 0
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(READY_MARKER))
    ctx = build_context(eval_settings(settings, target))
    for name in dropped:
        ctx.ingestion.delete(name)
    info = {"corpus": str(args.subset.resolve()), "from": str(source), "dropped": dropped}
    info["chunks"] = ctx.index.chunk_count()
    (target / READY_MARKER).write_text(json.dumps(info, indent=2), encoding="utf-8")
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
