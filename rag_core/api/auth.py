"""Who is asking: the API's keys, each one a person's, and where the API may listen.

Without a key the API answers only on loopback (this machine), as the one local person
(owner '', the command line's conversations). With keys every request carries one
(``Authorization: Bearer KEY``, or ``X-API-Key: KEY``), and the key says whose conversations
(and, with ``libraries = "per_user"``, whose documents) the request works with, exactly as a
signed-in person on the pages: ``PERSON:KEY`` for a person, a bare ``KEY`` for the local one.
In team mode (``DOCENT_DATABASE_URL``) every key must name its person.

Keys live in memory only, as SHA-256 digests compared in constant time: never logged, never
written to the database.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field

from rag_core.errors import ConfigError

LOCAL = ""  # the one local person (no sign-in): the command line's conversations


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8")).digest()


@dataclass
class ApiKeys:
    """The keys this API accepts, each one a person's (digests only)."""

    _people: list[tuple[bytes, str]] = field(default_factory=list, repr=False)

    @classmethod
    def parse(cls, entries: Iterable[str], *, team: bool = False) -> ApiKeys:
        """``PERSON:KEY`` or ``KEY`` entries (also comma- or whitespace-separated in one entry,
        as ``DOCENT_API_KEYS`` holds them). ``team``: each key must name its person."""
        keys = cls()
        for entry in entries:
            for item in entry.replace(",", " ").split():
                person, _, key = item.rpartition(":")
                person = person.strip().lower()
                if len(key) < 8:
                    raise ConfigError(
                        "An API key must be at least 8 characters long (`python -c 'import secrets; "
                        "print(secrets.token_urlsafe(24))'` makes one)."
                    )
                if team and not person:
                    raise ConfigError(
                        "In team mode (DOCENT_DATABASE_URL) each API key belongs to a person, as on the pages: give "
                        "it as PERSON:KEY (for example ana@example.org:KEY), the person being their sign-in address."
                    )
                keys.add(key, person)
        return keys

    def add(self, key: str, person: str = LOCAL) -> None:
        self._people.append((_digest(key), person))

    def __bool__(self) -> bool:
        return bool(self._people)

    def person_of(self, key: str | None) -> str | None:
        """Whose key this is; None for no key or one this API does not know."""
        if not key:
            return None
        given = _digest(key)
        found = None
        for digest, person in self._people:  # every entry looked at: the time says nothing
            if hmac.compare_digest(digest, given):
                found = person
        return found

    @property
    def people(self) -> list[str]:
        return sorted({p for _, p in self._people})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) listens on this machine only."""
    if host in ("localhost", "localhost.localdomain"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in found)


def check_address(host: str, keys: ApiKeys) -> None:
    """Refuse an address beyond loopback without a key: the API would open every
    conversation and document to the network."""
    if not keys and not is_loopback(host):
        raise ConfigError(
            f"Refusing to serve the API on {host} without a key: anyone on the network could read and change every "
            "conversation and document. Give one with --api-key KEY (or DOCENT_API_KEYS), or listen on 127.0.0.1."
        )
