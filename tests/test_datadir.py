"""The data folder itself: where it cannot be, what the user is told (real folders and files)."""

from __future__ import annotations

import pytest

from rag_core import build_context
from rag_core.errors import ConfigError
from tests.test_cli import run


def test_a_data_folder_that_is_a_file_says_so_instead_of_a_traceback(make_settings, tmp_path):
    taken = tmp_path / "docent-data"
    taken.write_text("my notes, not a folder")
    with pytest.raises(ConfigError) as e:
        build_context(make_settings(data_dir=taken))
    assert str(e.value) == (
        f"The data folder {taken} is a file, not a folder. Point DOCENT_DATA_DIR (or --data-dir) at a folder: "
        "it is created if missing."
    )
    with pytest.raises(ConfigError) as e:
        build_context(make_settings(data_dir=taken / "inside"))
    assert str(e.value).startswith(f"The data folder {taken / 'inside'} cannot be created (Not a directory).")
    assert taken.read_text() == "my notes, not a folder"  # untouched


@pytest.mark.slow
def test_every_command_names_the_file_in_the_way(tmp_path):
    taken = tmp_path / "docent-data"
    taken.write_text("x")
    for args in (["docs", "list"], ["sessions", "list"], ["ingest", str(taken)], ["check"]):
        p = run(args, taken, check=False)
        assert p.returncode == 2, p
        assert p.stderr == (
            f"error: The data folder {taken} is a file, not a folder. Point DOCENT_DATA_DIR (or --data-dir) at a "
            "folder: it is created if missing.\n"
        ), p.stderr


def test_a_quiet_hold_keeps_writers_out_but_marks_nothing_changed(tmp_path):
    """``WriteLock.quiet``: the first read of a reopened Chroma view holds the lock, so no writer
    meets it, without telling every other process to reopen in turn."""
    from rag_core.datadir import WriteLock

    lock, other = WriteLock(tmp_path), WriteLock(tmp_path)
    with lock.hold():
        pass
    token = lock.generation()
    with lock.quiet(wait=False) as held:
        assert held
        with other.hold(wait=False) as writer:
            assert writer is False  # a writer is kept out meanwhile
    assert lock.generation() == token
    with other.hold(wait=False) as writer:
        assert writer is True and other.generation() != token
