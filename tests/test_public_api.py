"""The public API: what ``rag_core`` exports is what the pages and the CLI may use."""

from __future__ import annotations

import ast
from pathlib import Path

import rag_core

ROOT = Path(__file__).resolve().parents[1]


def test_every_exported_name_exists_and_nothing_is_exported_twice():
    assert len(rag_core.__all__) == len(set(rag_core.__all__))
    missing = [name for name in rag_core.__all__ if not hasattr(rag_core, name)]
    assert missing == []


def test_pages_use_only_rag_core_and_ui_never_llama_index_chroma_or_sqlite():
    """The Streamlit layer stays thin: it calls rag_core, never the libraries beneath it."""
    forbidden = ("llama_index", "chromadb", "sqlite3")
    offenders = []
    for path in [ROOT / "app.py", *(ROOT / "app_pages").glob("*.py"), *(ROOT / "ui").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in forbidden]
    assert offenders == []


def test_names_the_pages_import_from_rag_core_are_exported():
    """A page importing from the package root uses only exported names."""
    used = set()
    for path in [ROOT / "app.py", *(ROOT / "app_pages").glob("*.py"), *(ROOT / "ui").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "rag_core":
                used.update(a.name for a in node.names)
    assert used - set(rag_core.__all__) == set()
