"""What a web page in the user's browser may not do to an API on their own machine.

Without a key the API trusts whoever reaches it on loopback: this machine. A web page the
user opens reaches loopback too, through their browser. Two guards keep such a page out:

- **Cross-site requests are refused** (403) unless their origin was allowed (``--cors-origin``,
  for a team's own front end): a browser names the page's origin in ``Origin`` on every
  cross-site request, including the "simple" ones it sends without asking first (a form
  posting files to ``/api/documents``). Clients that are not browsers (curl, the OpenAI
  client, a script) send no ``Origin`` and are not concerned.
- **The Host must be this machine's** (``hosts``; 400 otherwise) when the API has no key: a
  page whose own name is made to resolve to 127.0.0.1 (DNS rebinding) would otherwise be
  "same-origin" with the API, and read its answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"detail": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _host_name(host: str) -> str:
    """``Host`` without its port: ``127.0.0.1:8000`` → ``127.0.0.1``, ``[::1]:8000`` → ``[::1]``."""
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class BrowserGuard:
    """Refuses cross-site requests from origins not allowed and, given ``hosts``, a ``Host``
    that is not one of them."""

    def __init__(self, app: ASGIApp, origins: Iterable[str] = (), hosts: Iterable[str] | None = None) -> None:
        self.app = app
        self.origins = {o.rstrip("/") for o in origins}
        self.hosts = {h.lower() for h in hosts} if hosts is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host", "")
        if self.hosts is not None and _host_name(host).lower() not in self.hosts:
            await _refuse(
                send, 400, f"Host {host!r} is not this machine's: without a key the API answers only on loopback."
            )
            return
        origin = headers.get("origin")
        if origin and origin.rstrip("/") not in self.origins and origin.split("://", 1)[-1] != host:
            await _refuse(
                send,
                403,
                f"A request from the web page {origin!r} is refused: start serve-api with --cors-origin {origin} "
                "to let that front end use the API.",
            )
            return
        await self.app(scope, receive, send)
