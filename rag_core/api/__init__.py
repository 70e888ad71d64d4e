"""``python -m rag_core serve-api``: Docent over HTTP (FastAPI, run by uvicorn), over the same
services as the pages and the CLI. ``docs/api.md`` describes the routes."""

from rag_core.api.app import create_app
from rag_core.api.auth import ApiKeys, check_address, is_loopback

__all__ = ["ApiKeys", "check_address", "create_app", "is_loopback"]
