"""The Settings page with saved settings it cannot use, and typed values it must not save;
driven through AppTest like tests/test_app.py (extractive, hashed embeddings, tmp_path)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from rag_core.settings import leaf_fields
from tests.test_app import (
    data_dir,  # noqa: F401 (the fixture: a fresh data folder, extractive, hash)
    open_app,
    texts,
)

PAGE = "app_pages/settings.py"
pytestmark = pytest.mark.usefixtures("data_dir")


def warnings(at) -> list[str]:
    """The warnings' text as shown: markdown escapes taken out (the path has underscores)."""
    return [w.replace("\\", "") for w in texts(at.warning)]


def folder() -> Path:
    return Path(os.environ["DOCENT_DATA_DIR"])  # the data_dir fixture's


def write_bad_settings(data: Path) -> Path:
    data.mkdir(parents=True, exist_ok=True)
    path = data / "settings.json"
    path.write_text(json.dumps({"top_k": 0, "chunk_size": "abc", "chunk_overlap": 16}))
    return path


def test_every_page_opens_with_the_defaults_and_a_notice() -> None:
    path = write_bad_settings(folder())
    at = open_app()  # the chat page
    assert texts(at.error) == []
    [notice] = [w for w in warnings(at) if "settings.json" in w]
    assert str(path) in notice and "top_k" in notice and "chunk_size" in notice and "DOCENT_" not in notice


def test_the_page_flags_the_fields_and_saving_fixes_them() -> None:
    path = write_bad_settings(folder())
    at = open_app(PAGE)
    assert any(str(path) in w and "chunk_size = 'abc'" in w for w in warnings(at))
    top_k, chunk_size = at.number_input(key="setting_top_k"), at.number_input(key="setting_chunk_size")
    assert (top_k.value, chunk_size.value) == (5, 256)  # the defaults in use, shown
    assert top_k.label.startswith("⚠️") and chunk_size.label.startswith("⚠️")
    assert "could not be used" in chunk_size.help and "'abc'" in chunk_size.help
    overlap = at.number_input(key="setting_chunk_overlap")
    assert overlap.value == 16 and not overlap.label.startswith("⚠️")  # a good saved value stays

    at.form_submit_button[0].click().run()
    assert not at.exception, at.exception
    saved = json.loads(path.read_text())
    assert (saved["top_k"], saved["chunk_size"], saved["chunk_overlap"]) == (5, 256, 16)
    again = open_app(PAGE)
    assert not any("settings.json" in w for w in warnings(again))
    assert not again.number_input(key="setting_top_k").label.startswith("⚠️")


def test_typed_values_are_checked_and_nothing_is_saved_on_error() -> None:
    at = open_app(PAGE)
    at.number_input(key="setting_top_k").set_value(9)  # fine on its own: still not saved below
    at.number_input(key="setting_llm_timeout").set_value(0.0)
    at.number_input(key="setting_cohere_timeout").set_value(-5.0)
    at.form_submit_button[0].click().run()
    assert not at.exception, at.exception
    errors = texts(at.error)
    assert any("llm_timeout = 0.0" in e and "greater than 0" in e for e in errors)
    assert any("cohere_timeout = -5.0" in e for e in errors)
    assert not (folder() / "settings.json").exists()


def test_each_number_is_bounded_by_its_fields_limits() -> None:
    at = open_app(PAGE)
    fields = leaf_fields()
    checked = 0
    for widget in at.number_input:
        name = (widget.key or "").removeprefix("setting_")
        limits = {
            k: getattr(m, k) for m in fields[name].metadata for k in ("ge", "le") if getattr(m, k, None) is not None
        }
        if "le" in limits:
            assert widget.max == limits["le"], name
            checked += 1
        if "ge" in limits:
            assert widget.min == limits["ge"], name
    assert checked >= 10  # huge values cannot be typed into any of them
    assert at.number_input(key="setting_chunk_size").max == 8192  # fields that had no upper limit have one
