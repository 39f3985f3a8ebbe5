#!/usr/bin/env bash
# The offline demo, against `bash scripts/local.sh` running in another shell (no GitHub App
# configured, so it serves the fake GitHub's demo repositories): a manual sync through the sync
# API, the status API, a signed push webhook, and the runs it left.
set -euo pipefail

local_env="${TMPDIR:-/tmp}/syncplane-local.env"
[ -f "$local_env" ] || { echo "start 'bash scripts/local.sh' (with no GitHub App) first" >&2; exit 1; }
# shellcheck disable=SC1090
. "$local_env"
[ -n "${SYNC_API_TOKEN:-}" ] || { echo "the local run has a GitHub App configured: the demo needs the fake GitHub (no GITHUB_APP_ID)" >&2; exit 1; }
# Where scripts/local.sh serves (its SYNCPLANE_SERVE_ADDR, written to the file above).
base="${SYNCPLANE_URL:-http://${SYNCPLANE_SERVE_ADDR:-127.0.0.1:9000}/lambda-url}"
auth="authorization: Bearer $SYNC_API_TOKEN"

# JSON indented; anything else (an emulator's error page) as it came.
show() {
  python3 -c '
import json, sys
body = sys.stdin.read()
try:
    print(json.dumps(json.loads(body), indent=2))
except ValueError:
    print(body)'
}

# Something must answer there (a connection refused would only give curl's own error, and the
# JSON reader a traceback); the health route costs nothing under either server.
if ! curl -s -o /dev/null --connect-timeout 5 "$base/sync-api/api/health"; then
  echo "nothing answers at ${base%/lambda-url}: is 'bash scripts/local.sh' running (it serves at SYNCPLANE_SERVE_ADDR)?" >&2
  exit 1
fi

echo "== POST /api/sync {} (every repository; inline jobs run before the answer)"
curl -sS -X POST -H "$auth" -H 'content-type: application/json' -d '{}' "$base/sync-api/api/sync" | show

echo "== GET /api/repos"
repos=$(curl -sS -H "$auth" "$base/sync-api/api/repos")
echo "$repos" | show
id=$(echo "$repos" | python3 -c '
import json, sys
print(next(r["githubId"] for r in json.load(sys.stdin)["data"]["repositories"] if r["fullName"] == "acme/handbook"))')

echo "== POST /github/webhook (push to acme/handbook's default branch, signed)"
body=$(printf '{"ref":"refs/heads/main","repository":{"id":%s,"name":"handbook","full_name":"acme/handbook","owner":{"login":"acme"},"default_branch":"main"},"installation":{"id":%s}}' "$id" "$GITHUB_INSTALLATION_ID")
sig=$(printf '%s' "$body" | openssl dgst -sha256 -hmac "$GITHUB_WEBHOOK_SECRET" -r | cut -d' ' -f1)
curl -sS -X POST -H 'content-type: application/json' -H 'x-github-event: push' \
  -H "x-github-delivery: demo-$(date +%s)" -H "x-hub-signature-256: sha256=$sig" \
  -d "$body" "$base/webhook/github/webhook" | show

echo "== POST /github/webhook with a bad signature (401, nothing dispatched)"
curl -sS -o /dev/null -w '%{http_code}\n' -X POST -H 'x-github-event: push' \
  -H 'x-github-delivery: demo-bad' -H 'x-hub-signature-256: sha256=00' -d "$body" "$base/webhook/github/webhook"

echo "== GET /api/sync/runs"
curl -sS -H "$auth" "$base/sync-api/api/sync/runs" | show
