"""``serve-model``: the local model, once, for every app process of a team (rag_core/serving.py)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from rag_core.cli.startup import settings_for
from rag_core.serving import exposure, serve_forever, start_model_server


def register_serving(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "serve-model",
        help="serve the local model once as an OpenAI-compatible server for several app processes",
        description="Serves the local model on http://HOST:PORT/v1 (llama.cpp's server); app processes use it with "
        "DOCENT_LLM_PROVIDER=openai DOCENT_OPENAI_BASE_URL=http://HOST:PORT/v1 DOCENT_OPENAI_MODEL=qwen2.5-coder-1.5b.",
    )
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    s.add_argument("--port", type=int, default=8081)
    s.add_argument("--parallel", type=int, default=2, help="answers generated at once (slots)")
    s.add_argument("--api-key", help="require this key (default: DOCENT_SERVE_API_KEY, else none on loopback)")
    s.add_argument(
        "--no-api-key",
        action="store_true",
        help="serve beyond loopback without a key (refused otherwise): anyone who reaches the port uses the model",
    )
    s.add_argument("--json", action="store_true", help="print one JSON line once it serves")
    s.set_defaults(func=cmd_serve_model)


def cmd_serve_model(args: argparse.Namespace) -> int:
    settings = settings_for(args)
    key = args.api_key or os.environ.get("DOCENT_SERVE_API_KEY") or None
    warning = exposure(args.host, key, args.no_api_key)  # refused here, before the model is loaded
    if warning:
        print(warning, file=sys.stderr, flush=True)
    served = start_model_server(
        settings,
        host=args.host,
        port=args.port,
        parallel=args.parallel,
        api_key=key,
        allow_no_key=args.no_api_key,
        progress=lambda message, *_: print(message, file=sys.stderr, flush=True),
    )
    ready = {"url": served.url, "model": served.model, "load_seconds": round(served.load_seconds, 2)}
    if args.json:
        print(json.dumps(ready), flush=True)
    else:
        print(
            f"Serving {served.model} on {served.url} (loaded in {served.load_seconds:.1f} s). App processes: "
            f"DOCENT_LLM_PROVIDER=openai DOCENT_OPENAI_BASE_URL={served.url} DOCENT_OPENAI_MODEL={served.model}",
            flush=True,
        )
    sys.stdout.flush()
    serve_forever(served)
    return 0
