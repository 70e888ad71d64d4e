"""A malformed chat import in the sidebar: the file is read once per upload, and what went
wrong is said once, in the import box; the page around it keeps working (issue 42, item 5)."""

# ruff: noqa: F811  (data_dir is a fixture imported from tests.test_app)
from __future__ import annotations

from pathlib import Path

import pytest

import ui.exchange
from tests.test_app import click, data_dir, open_app, texts  # noqa: F401 (fixture)

pytestmark = pytest.mark.timeout(300)
NESTED = ("deep.docent.json", b"[" * 100_000, "application/json")


def counted(monkeypatch: pytest.MonkeyPatch, fails: Exception | None = None) -> list[int]:
    calls: list[int] = []
    real = ui.exchange.import_session

    def import_session(*args, **kwargs):
        calls.append(1)
        if fails is not None:
            raise fails
        return real(*args, **kwargs)

    monkeypatch.setattr(ui.exchange, "import_session", import_session)
    return calls


def test_a_deeply_nested_import_is_read_once_and_said_once(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = counted(monkeypatch)
    at = open_app()
    click(at, "import_open")
    at.sidebar.file_uploader(key="import_file").set_value([NESTED]).run()
    assert not at.exception, at.exception
    assert len(at.sidebar.error) == 1 and "nested" in at.sidebar.error[0].value
    for page in ("app_pages/upload.py", "app_pages/settings.py", "app_pages/chat.py"):
        at.switch_page(page).run()  # every page of the tab still opens
        assert not at.exception, at.exception
    at.run()
    assert calls == [1]  # read once for this upload, however often the page runs
    assert len(at.sidebar.error) == 1


def test_an_import_that_fails_unexpectedly_fails_once_not_on_every_run(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counted(monkeypatch, RecursionError("maximum recursion depth exceeded"))
    at = open_app()
    click(at, "import_open")
    at.sidebar.file_uploader(key="import_file").set_value([NESTED]).run()
    at.run()  # the next run (any click) does not read the file again
    assert not at.exception, at.exception
    assert calls == [1]
    assert any("could not be imported" in e for e in texts(at.sidebar.error))
    assert [t for t in texts(at.title)] == ["💬 Chat"]
