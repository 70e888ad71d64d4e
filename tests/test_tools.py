"""The measurement tools of tools/ (tools/README.md) still import and give their usage."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
USAGE_BY_ARGPARSE = ["bench_ocr", "big_pdf", "long_conversation", "measure_figure_check", "measure_find_cell"]


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"docent_tool_{name}", TOOLS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_tool_is_listed_in_the_readme():
    readme = (TOOLS / "README.md").read_text(encoding="utf-8")
    assert {p.name for p in TOOLS.glob("*.py")} == {f"{name}.py" for name in _listed(readme)}


def _listed(readme: str) -> list[str]:
    return [line.split("`")[1][:-3] for line in readme.splitlines() if line.startswith("| `")]


@pytest.mark.parametrize("name", USAGE_BY_ARGPARSE)
def test_a_tool_gives_its_usage(name, monkeypatch, capsys):
    module = load(name)
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 0
    assert "usage:" in capsys.readouterr().out


def test_the_other_tools_import_and_give_their_usage(monkeypatch, capsys):
    with pytest.raises(SystemExit) as stopped:
        load("subset_corpus").main(["--help"])
    assert stopped.value.code == 0
    assert callable(load("decode_threads").main)
    monkeypatch.setattr(sys, "argv", ["keep_slots.py"])
    assert load("keep_slots").main() == 2  # no FILE QUESTION FOLLOW_UP: the usage, not a run
    assert "keep_slots.py FILE QUESTION FOLLOW_UP" in capsys.readouterr().err
