"""How the local model's runtime is loaded (rag_core.providers.llama_engine): the OpenMP wait
policy its threads meet each other with, set only around the import that loads it."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from rag_core.providers import llama_engine


class RuntimeFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Stands in for the compiled runtime: records the environment its import saw (where
    libgomp, loaded with it, reads GOMP_SPINCOUNT)."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(name, self) if name == "xllamacpp" else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        self.seen.append(os.environ.get("GOMP_SPINCOUNT"))
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


@pytest.fixture
def runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[RuntimeFinder]:
    finder = RuntimeFinder()
    real = sys.modules.pop("xllamacpp", None)
    monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
    for name in llama_engine.SPIN_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    yield finder
    sys.modules.pop("xllamacpp", None)  # the stand-in never outlives the test
    if real is not None:
        sys.modules["xllamacpp"] = real


def test_the_first_load_spins_briefly_and_leaves_the_environment_as_found(runtime):
    module = llama_engine.import_runtime(short_spin=True)
    assert module.__name__ == "xllamacpp"
    assert runtime.seen == [llama_engine.SHORT_SPIN]
    assert "GOMP_SPINCOUNT" not in os.environ
    # Loaded already: libgomp has read its policy; nothing is set again.
    llama_engine.import_runtime(short_spin=True)
    assert runtime.seen == [llama_engine.SHORT_SPIN]


def test_the_lever_off_keeps_libgomps_default(runtime):
    llama_engine.import_runtime(short_spin=False)
    assert runtime.seen == [None]


@pytest.mark.parametrize(("name", "value"), [("GOMP_SPINCOUNT", "5"), ("OMP_WAIT_POLICY", "ACTIVE")])
def test_a_policy_the_user_set_wins(runtime, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    llama_engine.import_runtime(short_spin=True)
    assert runtime.seen == [os.environ.get("GOMP_SPINCOUNT")]
    assert os.environ[name] == value


def test_the_team_server_uses_every_usable_core_unless_told(monkeypatch):
    monkeypatch.setattr(llama_engine, "usable_cores", lambda: 3)
    assert llama_engine.resolve_threads(0) == 3
    assert llama_engine.resolve_threads(2) == 2
