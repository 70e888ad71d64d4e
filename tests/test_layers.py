"""rag_core's layers: a module imports only from its own floor or the floors below it.

Floors, lowest first (a package counts with all its modules). The composition root
(``context``) is the only module that knows every service; the services below it say what
they need of it with a ``Protocol`` (``exchange``, ``health``) instead of importing it.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FLOORS = [
    {
        "errors",
        "files",
        "text",
        "text_injection",
        "payloads",
        "prompts",
        "offline",
        "pdfium",
        "datadir",
        "postgres",
        "pglock",
        "figures",
    },
    {"settings"},
    {"storage", "loaders", "providers", "model_store", "index", "chroma_guard", "chroma_client", "outline", "serving"},
    {"ingestion", "recovery", "retrieval", "entities", "chat", "viewer", "suggestions", "jobs", "exchange", "health"},
    {"context"},
    {"cli", "api", "evaluation", "bench", "__main__", "__init__"},
]
FLOOR = {name: n for n, names in enumerate(FLOORS) for name in names}


def top(module: str) -> str:
    """The first part below ``rag_core``: ``rag_core.storage.sqlite`` → ``storage``."""
    return module.split(".")[1] if "." in module else "__init__"


def imports(path: Path) -> set[str]:
    """Every rag_core module this file imports, lazily or not (``from rag_core import x`` → ``rag_core.x``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("rag_core."))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "rag_core":
                out.update(f"rag_core.{a.name}" for a in node.names)
            elif node.module.startswith("rag_core."):
                out.add(node.module)
    return out


def test_every_module_is_on_a_floor():
    parts = {top(".".join(p.relative_to(ROOT).with_suffix("").parts)) for p in (ROOT / "rag_core").rglob("*.py")}
    assert parts - set(FLOOR) == set()


def test_no_module_imports_from_a_floor_above_its_own():
    climbing = []
    for path in (ROOT / "rag_core").rglob("*.py"):
        here = top(".".join(path.relative_to(ROOT).with_suffix("").parts))
        for module in imports(path):
            there = top(module)
            if there in FLOOR and FLOOR[there] > FLOOR[here]:
                climbing.append(f"{path.relative_to(ROOT)} imports {module}")
    assert climbing == []
