#!/usr/bin/env bash
# Run syncplane locally (README command one): Postgres checked (scripts/services.sh says what it
# will do before it installs or reconfigures anything), the local database created if missing,
# migrations applied, then the HTTP functions served on http://127.0.0.1:9000 with inline jobs,
# in the foreground (Ctrl-C stops everything). Two ways to serve them:
#
#   bash scripts/local.sh          `cargo lambda watch` (the Lambda emulator; cargo-lambda is
#                                  installed from PyPI if missing). It refuses a body labelled
#                                  application/json that is not UTF-8, so the desktop client's
#                                  gzip batches fail there.
#   bash scripts/local.sh --serve  `syncplane serve`: one local server on the same handlers and
#                                  request conversion, binary-safe (gzip batches included); no
#                                  cargo-lambda, one compile.
#
# Configuration: the environment, then `.env.local` if it exists (see .env.local.example).
# With no GitHub App configured (no GITHUB_APP_ID), the demo fake GitHub is started first with
# two demo repositories, and a demo webhook secret and sync API token are set, so a webhook, a
# sync and the status API work end to end offline (try `bash scripts/demo.sh` in another shell).
# With App credentials the functions talk to GitHub.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=watch
for arg in "$@"; do
  case "$arg" in
    --serve) mode=serve ;;
    -h | --help)
      sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "unknown argument: $arg (try --serve or --help)" >&2
      exit 2
      ;;
  esac
done

if [ -f .env.local ]; then
  set -a
  # shellcheck disable=SC1091
  . ./.env.local
  set +a
fi

# Postgres only: a local run queues no job (inline) and reads no secret by reference, so it
# needs no AWS emulator.
bash scripts/services.sh --postgres-only
if [ "$mode" = watch ]; then
  bash scripts/tools.sh --lambda
  # pip may have installed cargo-lambda into a user bin folder.
  export PATH="$PATH:$HOME/.local/bin"
fi

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/syncplane}"
db=$(basename "${DATABASE_URL%%\?*}")
admin="${DATABASE_URL%/*}/postgres"
if [ "$(psql "$admin" -qtAc "select 1 from pg_database where datname = '$db'")" != "1" ]; then
  echo "creating database $db"
  psql "$admin" -qc "create database \"$db\""
fi

target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
# One build, with cargo's progress on the terminal (the first one takes minutes).
packages=(-p syncplane-cli)
if [ "$mode" = watch ]; then
  # The functions too, so the first request does not wait for a silent build.
  packages+=(-p webhook -p sync-api -p ingest -p tick -p worker)
fi
echo "building ${packages[*]} (cargo shows its progress)"
cargo build --locked "${packages[@]}"
no_app=""
if [ -z "${GITHUB_APP_ID:-}" ] && [ -z "${TENANTS_FILE:-}" ]; then
  no_app=1
  echo "building the demo fake GitHub"
  cargo build --locked -p syncplane-tests --bin fake-github
fi
syncplane="$target_dir/debug/syncplane"
"$syncplane" migrate

# Local: jobs run inline (a local function may keep working while it answers), no scheduler
# unless asked for.
export JOBS_BACKEND=inline SYNCPLANE_LOCAL=1
export SYNC_SCHEDULER="${SYNC_SCHEDULER:-0}"
unset SQS_QUEUE_URL

fake_pid=""
local_env="${TMPDIR:-/tmp}/syncplane-local.env"
stop_fake() {
  rm -f "$local_env"
  if [ -n "$fake_pid" ]; then
    kill "$fake_pid" 2>/dev/null || true
    wait "$fake_pid" 2>/dev/null || true
  fi
}
trap stop_fake EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -n "$no_app" ]; then
  echo "no GitHub App configured: starting the demo fake GitHub"
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
  # Demo-only secrets: the fake GitHub is on loopback and holds nothing real. The events/
  # samples are signed and authorized with exactly these.
  export GITHUB_WEBHOOK_SECRET="${GITHUB_WEBHOOK_SECRET:-demo-webhook-secret}"
  export SYNC_API_TOKEN="${SYNC_API_TOKEN:-demo-sync-token}"
  echo "fake GitHub at $GITHUB_API_URL (App $GITHUB_APP_ID, installation $GITHUB_INSTALLATION_ID)"
  # The device token the events/ingest-*.json samples carry (demo only, public).
  "$syncplane" ingest demo
fi

# What the CLI (and scripts/demo.sh) need in another shell: the database and the App. Secrets are
# written only in the demo, where they are the demo's.
{
  printf 'DATABASE_URL=%q\n' "$DATABASE_URL"
  for name in GITHUB_API_URL GITHUB_APP_ID GITHUB_INSTALLATION_ID GITHUB_APP_PRIVATE_KEY_FILE; do
    [ -n "${!name:-}" ] && printf '%s=%q\n' "$name" "${!name}"
  done
  if [ -n "$no_app" ]; then
    printf 'GITHUB_WEBHOOK_SECRET=%q\nSYNC_API_TOKEN=%q\n' "${GITHUB_WEBHOOK_SECRET%%,*}" "$SYNC_API_TOKEN"
  fi
} >"$local_env"

serve_addr="${SYNCPLANE_SERVE_ADDR:-127.0.0.1:9000}"
# shellcheck source=scripts/local-banner.sh
. scripts/local-banner.sh

# Foreground, not exec: the EXIT trap stops the fake GitHub when the server ends (Ctrl-C too).
if [ "$mode" = serve ]; then
  "$syncplane" serve --addr "$serve_addr"
else
  cargo lambda watch -A 127.0.0.1
fi
