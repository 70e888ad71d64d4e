"""A server whose documents are already indexed: ``python -m rag_core ingest`` into its data
folder (a real process, as a user's script would do it), then ``streamlit run``.

For browser tests about chatting, where dropping files on the Upload page again would only
cost time (test_browser.py tests the upload itself).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.browser.conftest import REPO, SCRUBBED, Server, start_server


def start_seeded_server(workdir: Path, env: dict[str, str], files: list[tuple[str, bytes]]) -> Server:
    folder = workdir / "seed"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in files:
        (folder / name).write_bytes(data)
        paths.append(str(folder / name))
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("DOCENT_") and k not in SCRUBBED}
    full_env.update({"DOCENT_DATA_DIR": str(workdir / "data"), **env})
    subprocess.run(
        [sys.executable, "-m", "rag_core", "ingest", "--strict", *paths],
        cwd=REPO,
        env=full_env,
        check=True,
        capture_output=True,
        timeout=300,
    )
    return start_server(workdir, env)
