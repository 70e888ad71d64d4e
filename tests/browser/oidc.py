"""A tiny OpenID Connect provider on 127.0.0.1, for sign-in tests that cannot reach a real one.

It speaks the part of OIDC that Streamlit's ``st.login`` (Authlib) uses: discovery, the
authorization endpoint (which signs in ``provider.user`` at once, without a form), the token
endpoint (an RS256 ``id_token`` carrying the nonce it was given) and the JWKS. Everything
else a real provider checks (the client secret, the redirect URI) it checks too, so a
misconfigured app fails here as it would there.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

from joserfc import jwt
from joserfc.jwk import RSAKey

CLIENT_ID = "docent-test"
CLIENT_SECRET = secrets.token_urlsafe(16)


class FakeOIDCProvider:
    def __init__(self) -> None:
        self.key = RSAKey.generate_key(2048, parameters={"kid": "test-key", "use": "sig"})
        self.user: dict[str, Any] = {}
        self.requests: list[str] = []  # paths it was asked for, in order
        self._codes: dict[str, dict[str, Any]] = {}
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def discovery_url(self) -> str:
        return f"{self.url}/.well-known/openid-configuration"

    def start(self) -> FakeOIDCProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ endpoints
    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "jwks_uri": f"{self.url}/jwks",
            "response_types_supported": ["code"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        }

    def authorize(self, query: dict[str, str]) -> str:
        """Where the browser goes next: back to the app with a code, as if the user signed in."""
        assert query.get("client_id") == CLIENT_ID, query
        code = secrets.token_urlsafe(16)
        self._codes[code] = {
            "nonce": query.get("nonce"),
            "redirect_uri": query["redirect_uri"],
            "user": dict(self.user),
        }
        return f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"

    def token(self, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization.startswith("Basic "):
            client_id, _, client_secret = base64.b64decode(authorization[6:]).decode().partition(":")
        if (client_id, client_secret) != (CLIENT_ID, CLIENT_SECRET):
            return 401, {"error": "invalid_client"}
        grant = self._codes.pop(form.get("code", ""), None)
        if grant is None or grant["redirect_uri"] != form.get("redirect_uri"):
            return 400, {"error": "invalid_grant"}
        now = int(time.time())
        claims = {"iss": self.url, "aud": CLIENT_ID, "iat": now, "exp": now + 300, **grant["user"]}
        if grant["nonce"]:
            claims["nonce"] = grant["nonce"]
        id_token = jwt.encode({"alg": "RS256", "kid": "test-key"}, claims, self.key)
        return 200, {
            "access_token": secrets.token_urlsafe(16),
            "token_type": "Bearer",
            "expires_in": 300,
            "id_token": id_token,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlparse(self.path)
                provider.requests.append(url.path)
                if url.path == "/.well-known/openid-configuration":
                    self._json(200, provider.metadata())
                elif url.path == "/jwks":
                    self._json(200, {"keys": [provider.key.as_dict(private=False)]})
                elif url.path == "/authorize":
                    query = {k: v[0] for k, v in parse_qs(url.query).items()}
                    self.send_response(302)
                    self.send_header("Location", provider.authorize(query))
                    self.end_headers()
                else:
                    self._json(404, {"error": "not_found"})

            def do_POST(self) -> None:
                url = urlparse(self.path)
                provider.requests.append(url.path)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                form = {k: v[0] for k, v in parse_qs(body).items()}
                if url.path == "/token":
                    self._json(*provider.token(form, self.headers.get("Authorization")))
                else:
                    self._json(404, {"error": "not_found"})

        return Handler
