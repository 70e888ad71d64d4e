#!/usr/bin/env bash
# Install everything into ./.venv and run the whole test suite with the network off.
# Usage: bash scripts/test.sh [--fast] [pytest args...]
#   (no flag)  the full suite, what CI runs (.ci/run): run it before a commit lands.
#   --fast     the inner loop while working: lint, format, types and every test that needs
#              neither the real model, nor a browser, nor real Docent processes (pytest -m, below).
set -euo pipefail
cd "$(dirname "$0")/.."

FAST=0
if [ "${1:-}" = "--fast" ]; then
  FAST=1
  shift
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# The fast loop installs only when what is installed changed since the last install here
# (pip takes tens of seconds even with nothing to do); the full suite always does.
STAMP=.venv/.docent-requirements
WANTED=$(cat requirements.txt requirements-dev.txt requirements-nodeps.txt pyproject.toml | sha256sum)
if [ "$FAST" = 0 ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANTED" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements-dev.txt
  .venv/bin/pip install -q --no-deps -r requirements-nodeps.txt
  echo "$WANTED" >"$STAMP"
fi

# Debian's chromium drives the browser tests (Playwright cannot download its own browser here);
# strace watches the processes of the offline tests (tests/test_offline.py); PostgreSQL's binaries
# run the team's tests (tests/test_postgres.py, tests/browser/test_team.py). The fast loop installs none.
MISSING=()
if [ "$FAST" = 0 ]; then
  [ -x /usr/bin/chromium ] || MISSING+=(chromium)
  command -v strace >/dev/null || MISSING+=(strace)
  # A real PostgreSQL for the team's tests (tests/pgserver.py); they skip, saying so, without it.
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || MISSING+=(postgresql)
fi
if [ ${#MISSING[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    # A failed install is a warning, not a failed run: those tests skip, saying why.
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${MISSING[@]}" >/dev/null; } ||
      echo "warning: could not install ${MISSING[*]}; their tests will be skipped" >&2
  else
    echo "warning: ${MISSING[*]} missing; their tests will be skipped (sudo apt-get install ${MISSING[*]})" >&2
  fi
fi

# The real local model is assembled once into this cache and reused by later runs.
export DOCENT_MODEL_CACHE=${DOCENT_MODEL_CACHE:-$PWD/.cache/models}
export ANONYMIZED_TELEMETRY=False

# Lint, format and types first: seconds, and a failure here needs no test run to explain it.
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy

PYTEST=(.venv/bin/python -m pytest)
if [ "$FAST" = 1 ]; then
  # The markers are described in pyproject.toml.
  # Spread over the cores (pytest-xdist): every test here works in its own tmp_path.
  PYTEST+=(-m "not real_models and not browser and not slow" -n auto)
fi
PYTEST+=("$@")
# Prove the suite is offline: run it in a network namespace with only loopback, when we may.
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && unshare -n true 2>/dev/null; then
  exec unshare -n sh -c 'ip link set lo up && exec "$@"' sh "${PYTEST[@]}"
fi
exec "${PYTEST[@]}"
