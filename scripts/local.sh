#!/usr/bin/env bash
# Run syncplane locally (README command one): Postgres checked (started or installed if needed),
# the local database created if missing, migrations applied, then `cargo lambda watch` serving
# the five functions on http://127.0.0.1:9000 with inline jobs, in the foreground (Ctrl-C stops
# everything).
#
# Configuration: the environment, then `.env.local` if it exists (see .env.local.example).
# With no GitHub App configured (no GITHUB_APP_ID), the demo fake GitHub is started first with
# two demo repositories, and a demo webhook secret and sync API token are set, so a webhook, a
# sync and the status API work end to end offline (try `bash scripts/demo.sh` in another shell).
# With App credentials the functions talk to GitHub.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -f .env.local ]; then
  set -a
  # shellcheck disable=SC1091
  . ./.env.local
  set +a
fi

bash scripts/services.sh
bash scripts/tools.sh --lambda
# pip may have installed cargo-lambda into a user bin folder.
export PATH="$PATH:$HOME/.local/bin"

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/syncplane}"
db=$(basename "${DATABASE_URL%%\?*}")
admin="${DATABASE_URL%/*}/postgres"
if [ "$(psql "$admin" -qtAc "select 1 from pg_database where datname = '$db'")" != "1" ]; then
  psql "$admin" -qc "create database \"$db\""
fi
cargo run --quiet --locked -p syncplane-cli -- migrate

# Local: jobs run inline (a local function may keep working while it answers), no scheduler
# unless asked for.
export JOBS_BACKEND=inline SYNCPLANE_LOCAL=1
export SYNC_SCHEDULER="${SYNC_SCHEDULER:-0}"

fake_pid=""
demo_env="${TMPDIR:-/tmp}/syncplane-local-demo.env"
stop_fake() {
  rm -f "$demo_env"
  if [ -n "$fake_pid" ]; then
    kill "$fake_pid" 2>/dev/null || true
    wait "$fake_pid" 2>/dev/null || true
  fi
}
trap stop_fake EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "${GITHUB_APP_ID:-}" ] && [ -z "${TENANTS_FILE:-}" ]; then
  echo "no GitHub App configured: starting the demo fake GitHub"
  cargo build --quiet --locked -p syncplane-tests --bin fake-github
  target_dir=$(cargo metadata --format-version 1 --no-deps |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  out=$(mktemp)
  "$target_dir/debug/fake-github" >"$out" 2>&1 &
  fake_pid=$!
  for _ in $(seq 1 50); do
    grep -q '^GITHUB_PRIVATE_KEY_PATH=' "$out" && break
    kill -0 "$fake_pid" 2>/dev/null || { cat "$out" >&2; exit 1; }
    sleep 0.1
  done
  value() { sed -n "s/^$1=//p" "$out"; }
  GITHUB_API_URL=$(value GITHUB_API_URL)
  GITHUB_APP_ID=$(value GITHUB_APP_ID)
  GITHUB_INSTALLATION_ID=$(value GITHUB_INSTALLATION_ID)
  GITHUB_APP_PRIVATE_KEY_FILE=$(value GITHUB_PRIVATE_KEY_PATH)
  rm -f "$out"
  [ -n "$GITHUB_APP_ID" ] || { echo "the fake GitHub did not start" >&2; exit 1; }
  export GITHUB_API_URL GITHUB_APP_ID GITHUB_INSTALLATION_ID GITHUB_APP_PRIVATE_KEY_FILE
  unset GITHUB_APP_PRIVATE_KEY
  # Demo-only secrets: the fake GitHub is on loopback and holds nothing real.
  export GITHUB_WEBHOOK_SECRET="${GITHUB_WEBHOOK_SECRET:-demo-webhook-secret}"
  export SYNC_API_TOKEN="${SYNC_API_TOKEN:-demo-sync-token}"
  echo "fake GitHub at $GITHUB_API_URL (App $GITHUB_APP_ID, installation $GITHUB_INSTALLATION_ID)"
  # What scripts/demo.sh needs to sign a webhook for this installation.
  printf 'GITHUB_INSTALLATION_ID=%s\nGITHUB_WEBHOOK_SECRET=%s\nSYNC_API_TOKEN=%s\n' \
    "$GITHUB_INSTALLATION_ID" "${GITHUB_WEBHOOK_SECRET%%,*}" "$SYNC_API_TOKEN" >"$demo_env"
fi

cat <<EOF

Functions at http://127.0.0.1:9000/lambda-url/<function>/<path>, for example:
  curl -s -X POST -H "authorization: Bearer \$SYNC_API_TOKEN" -d '{}' http://127.0.0.1:9000/lambda-url/sync-api/api/sync
  curl -s -H "authorization: Bearer \$SYNC_API_TOKEN" http://127.0.0.1:9000/lambda-url/sync-api/api/repos
Event functions: cargo lambda invoke <function> --data-file events/<file>.json
Offline demo (webhook, sync, status): bash scripts/demo.sh
Each function is compiled on its first request.

EOF

# Foreground, not exec: the EXIT trap stops the fake GitHub when watch ends (Ctrl-C included).
cargo lambda watch -A 127.0.0.1
