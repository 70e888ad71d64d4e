"""``serve-api``: the HTTP API (rag_core/api) over this data folder, run by uvicorn."""

from __future__ import annotations

import argparse
import os
import sys

from rag_core.cli.startup import context, settings_for


def register_api(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "serve-api",
        help="serve the HTTP API (sessions, streamed answers, search, documents, OpenAI-compatible /v1)",
        description="Serves Docent's HTTP API on http://HOST:PORT (Swagger UI at /docs, docs/api.md). Loopback "
        "only unless keys are given; a key belongs to a person (PERSON:KEY), a bare KEY to the local person.",
    )
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument(
        "--api-key",
        action="append",
        default=[],
        metavar="[PERSON:]KEY",
        help="require this key (repeatable; also DOCENT_API_KEYS, comma-separated, which `ps` does not show); "
        "required for an address beyond loopback",
    )
    s.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web front end allowed to call the API from a browser, e.g. https://docent.example.org "
        "(repeatable; also DOCENT_API_CORS_ORIGINS); other web pages' requests are refused",
    )
    s.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    s.set_defaults(func=cmd_serve_api)


def cmd_serve_api(args: argparse.Namespace) -> int:
    import uvicorn

    from rag_core.api import ApiKeys, check_address, create_app
    from rag_core.api.guard import LOOPBACK_HOSTS

    settings = settings_for(args, announce=False)
    entries = [*args.api_key, os.environ.get("DOCENT_API_KEYS", "")]
    keys = ApiKeys.parse(entries, team=bool(settings.database))
    check_address(args.host, keys)  # before anything is opened
    ctx = context(args)
    origins = [*args.cors_origin, *os.environ.get("DOCENT_API_CORS_ORIGINS", "").replace(",", " ").split()]
    hosts = None if keys else [*LOOPBACK_HOSTS, args.host]  # without a key: this machine's names only
    app = create_app(ctx, keys, origins=origins, hosts=hosts)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    who = f"{len(keys.people)} person(s) by key" if keys else "no key: this machine only"
    print(f"Serving the Docent API on http://{shown}:{args.port} ({who}); Swagger UI at /docs", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, server_header=False)
    return 0
