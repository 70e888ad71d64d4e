#!/usr/bin/env bash
# Docent for a team, all on this machine, to try it (docs/team.md): PostgreSQL, a Chroma
# server, the local model served once, and N app processes sharing them. Ctrl-C stops all.
#
# Usage: bash scripts/team.sh [N_APPS]      (default 2; apps on ports 8501, 8502, ...)
# Environment: TEAM_DIR (default ./.team: the database cluster, vectors, files, each app's
# data folder and the logs), PG_PORT (5433), CHROMA_PORT (8000), MODEL_PORT (8081).
# Needs Debian's postgresql package (apt-get install postgresql) and the venv of
# scripts/test.sh (or `pip install -r requirements.txt`).
set -euo pipefail
cd "$(dirname "$0")/.."

APPS=${1:-2}
TEAM_DIR=$(realpath -m "${TEAM_DIR:-.team}")
PG_PORT=${PG_PORT:-5433}
CHROMA_PORT=${CHROMA_PORT:-8000}
MODEL_PORT=${MODEL_PORT:-8081}
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
PGBIN=$(dirname "$(compgen -G '/usr/lib/postgresql/*/bin/initdb' | sort -V | tail -1)")
[ -x "$PGBIN/initdb" ] || { echo "PostgreSQL is not installed: apt-get install postgresql" >&2; exit 1; }

mkdir -p "$TEAM_DIR"/{logs,files}
chmod 755 "$TEAM_DIR"
AS=()  # PostgreSQL refuses to run as root: then it runs as nobody
if [ "$(id -u)" = 0 ]; then AS=(runuser -u nobody --); fi
PGDATA="$TEAM_DIR/pg"
PIDS=()
cleanup() {
  echo "stopping…"
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

# 1. PostgreSQL: one cluster, a database "docent" (trust on loopback: for a try, not for production).
if [ ! -d "$PGDATA" ]; then
  mkdir -p "$PGDATA" && { [ ${#AS[@]} = 0 ] || chown nobody "$PGDATA"; }
  "${AS[@]}" "$PGBIN/initdb" -D "$PGDATA" -U docent --auth=trust -E UTF8 >"$TEAM_DIR/logs/initdb.log"
  printf "listen_addresses = '127.0.0.1'\nport = %s\nunix_socket_directories = '%s'\n" "$PG_PORT" "$PGDATA" \
    >>"$PGDATA/postgresql.conf"
fi
[ ${#AS[@]} = 0 ] || chown nobody "$TEAM_DIR/logs"
"${AS[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -l "$TEAM_DIR/logs/postgres.log" -w start >/dev/null
"$PGBIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U docent -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='docent'" \
  | grep -q 1 || "$PGBIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U docent docent
export DOCENT_DATABASE_URL="postgresql://docent@127.0.0.1:$PG_PORT/docent"

# 2. Chroma: the vectors every app process reads and writes.
"$(dirname "$PY")/chroma" run --path "$TEAM_DIR/chroma" --host 127.0.0.1 --port "$CHROMA_PORT" \
  >"$TEAM_DIR/logs/chroma.log" 2>&1 &
PIDS+=($!)

# 3. The local model, loaded once for every app process.
"$PY" -m rag_core --data-dir "$TEAM_DIR/model" serve-model --port "$MODEL_PORT" >"$TEAM_DIR/logs/model.log" 2>&1 &
PIDS+=($!)
until grep -q "^Serving" "$TEAM_DIR/logs/model.log"; do
  kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$TEAM_DIR/logs/model.log" >&2; exit 1; }
  sleep 1
done

# 4. N app processes, each with its own data folder (caches), sharing everything else.
export DOCENT_CHROMA_HOST=127.0.0.1 DOCENT_CHROMA_PORT="$CHROMA_PORT" DOCENT_FILES_DIR="$TEAM_DIR/files"
export DOCENT_LLM_PROVIDER=openai DOCENT_OPENAI_BASE_URL="http://127.0.0.1:$MODEL_PORT/v1"
export DOCENT_OPENAI_MODEL=qwen2.5-coder-1.5b
for i in $(seq 1 "$APPS"); do
  port=$((8500 + i))
  DOCENT_DATA_DIR="$TEAM_DIR/app$i" "$PY" -m streamlit run app.py --server.port "$port" --server.headless true \
    >"$TEAM_DIR/logs/app$i.log" 2>&1 &
  PIDS+=($!)
  echo "app $i: http://127.0.0.1:$port"
done
echo "database $DOCENT_DATABASE_URL · chroma 127.0.0.1:$CHROMA_PORT · model http://127.0.0.1:$MODEL_PORT/v1"
echo "logs in $TEAM_DIR/logs; Ctrl-C stops everything."
wait
