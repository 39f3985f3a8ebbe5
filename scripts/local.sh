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
#                                  cargo-lambda.
#
# SYNCPLANE_SERVE_ADDR (host:port, default 127.0.0.1:9000) moves either; scripts/demo.sh follows.
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
      sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
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

export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/syncplane}"
# Postgres only: a local run queues no job (inline) and reads no secret by reference, so it
# needs no AWS emulator. This checks that something listens at DATABASE_URL's host and port
# (before the build, which takes minutes the first time); the database itself is checked after.
bash scripts/services.sh --postgres-only
if [ "$mode" = watch ]; then
  bash scripts/tools.sh --lambda
  # pip may have installed cargo-lambda into a user bin folder.
  export PATH="$PATH:$HOME/.local/bin"
fi

# One address for either server: `syncplane serve --addr`, `cargo lambda watch -A -P`.
serve_addr="${SYNCPLANE_SERVE_ADDR:-127.0.0.1:9000}"
serve_host="${serve_addr%:*}"
serve_host="${serve_host#[}"
serve_host="${serve_host%]}"
serve_port="${serve_addr##*:}"
if [ -z "$serve_host" ] || ! [[ "$serve_port" =~ ^[0-9]+$ ]]; then
  echo "SYNCPLANE_SERVE_ADDR: '$serve_addr' is not host:port: set it like 127.0.0.1:9000" >&2
  exit 2
fi

no_app=""
if [ -z "${GITHUB_APP_ID:-}" ] && [ -z "${TENANTS_FILE:-}" ]; then
  no_app=1
fi

# The console's address first: it answers there once the build below is done.
if [ "$mode" = serve ]; then
  echo "console: http://$serve_addr/ (answers once the build below is done)"
else
  echo "console: http://$serve_addr/lambda-url/sync-api/ (answers once the build below is done)"
fi

target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
# One build, with cargo's progress on the terminal (the first one takes minutes). Always with
# --workspace: features are then resolved for the whole workspace, exactly as for
# `cargo run --bin <function>` (what `cargo lambda watch` runs on a function's first request),
# `cargo run --bin syncplane-agent` and scripts/test.sh's `cargo build --workspace --bins` (the
# webhook's and the tick's inline-jobs feature aside, which changes only those two binaries), so
# they all reuse these artifacts. `-p <package>` would resolve them for that package alone and
# rebuild much of the dependency graph (issue 21 point 2).
bins=(--bin syncplane)
# The webhook and the tick run their jobs inline only with their `inline-jobs` feature (deployed,
# they queue them and link no engine): `cargo lambda watch` gets the same features below.
inline_jobs=webhook/inline-jobs,tick/inline-jobs
if [ "$mode" = watch ]; then
  # The functions too, so the first request does not wait for a build.
  bins+=(--bin webhook --bin sync-api --bin ingest --bin tick --bin worker --features "$inline_jobs")
fi
if [ -n "$no_app" ]; then
  # The demo's fake GitHub is no product binary: it is built only here, behind its feature.
  bins+=(--bin fake-github --features syncplane-fake-github/demo)
fi
echo "building ${bins[*]} (cargo shows its progress)"
cargo build --locked --workspace "${bins[@]}"
syncplane="$target_dir/debug/syncplane"

# The database: created if missing; any other cause said as it is (nothing listening, the
# credentials refused, the role missing). pg_hba.conf is changed only for authentication, and
# only after a yes on the terminal (or SYNCPLANE_ALLOW_SYSTEM_CHANGES=1).
SYNCPLANE_BIN="$syncplane" bash scripts/services.sh --database
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
  # The demo data (demo only, public tokens): the demo repositories synced from the fake GitHub,
  # example sessions and a transcript; `syncplane demo remove` takes it out.
  demo_out=$("$syncplane" demo load)
  echo "$demo_out"
  demo_read_token=$(printf '%s\n' "$demo_out" | sed -n "s/^demo: the console's organization token.*: //p")
fi

# What the CLI (and scripts/demo.sh) need in another shell: the database and the App. Secrets are
# written only in the demo, where they are the demo's.
{
  printf 'DATABASE_URL=%q\nSYNCPLANE_SERVE_ADDR=%q\n' "$DATABASE_URL" "$serve_addr"
  for name in GITHUB_API_URL GITHUB_APP_ID GITHUB_INSTALLATION_ID GITHUB_APP_PRIVATE_KEY_FILE; do
    [ -n "${!name:-}" ] && printf '%s=%q\n' "$name" "${!name}"
  done
  if [ -n "$no_app" ]; then
    printf 'GITHUB_WEBHOOK_SECRET=%q\nSYNC_API_TOKEN=%q\n' "${GITHUB_WEBHOOK_SECRET%%,*}" "$SYNC_API_TOKEN"
  fi
} >"$local_env"

# shellcheck source=scripts/local-banner.sh
. scripts/local-banner.sh

# Foreground, not exec: the EXIT trap stops the fake GitHub when the server ends (Ctrl-C too).
if [ "$mode" = serve ]; then
  "$syncplane" serve --addr "$serve_addr"
else
  cargo lambda watch -A "$serve_host" -P "$serve_port" --features "$inline_jobs"
fi
