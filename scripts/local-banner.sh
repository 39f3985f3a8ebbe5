#!/usr/bin/env bash
# The banner scripts/local.sh prints before it serves: where the functions answer, a curl that
# works as printed, the sample events, the App key the CLI needs, the CLI line. Sourced by
# local.sh; on its own (the tests run it so) it prints the banner from these variables:
#   mode          watch | serve
#   serve_addr    where either server listens (SYNCPLANE_SERVE_ADDR), e.g. 127.0.0.1:9000
#   no_app        non-empty in the demo (the fake GitHub, the demo secrets)
#   local_env     the file the CLI in another shell reads
#   syncplane     the CLI binary's path
# and SYNC_API_TOKEN, GITHUB_APP_PRIVATE_KEY_FILE, GITHUB_APP_PRIVATE_KEY from the environment.
# It prints no secret except the demo's own (public) token.
set -euo pipefail

# Either server listens there: local.sh runs `syncplane serve --addr "$serve_addr"` or
# `cargo lambda watch -A <host> -P <port>` of it.
addr="${serve_addr:-127.0.0.1:9000}"
origin="http://$addr"
invoke_host="${addr%:*}"
invoke_host="${invoke_host#[}"
invoke_host="${invoke_host%]}"
base="$origin/lambda-url"
if [ -n "${no_app:-}" ]; then
  token="${SYNC_API_TOKEN:-demo-sync-token}"
  token_note=""
else
  # A real token is not printed: the curl lines read it from the shell.
  # shellcheck disable=SC2016
  token='$SYNC_API_TOKEN'
  token_note="  (first: export SYNC_API_TOKEN=<your sync API token>)"
fi

# The web console first (a browser; sign in with the sync API token or the read token).
if [ "${mode:-watch}" = serve ]; then
  console="$origin/"
else
  console="$base/sync-api/"
fi
echo
echo "Web console: $console"
if [ -n "${no_app:-}" ]; then
  echo "  sign in with the token $token, and the organization token ${demo_read_token:-} for Sessions and Insights (demo data: remove it with '${syncplane:-syncplane} demo remove')"
fi
echo "Functions at $base/<function>/<path>, for example:$token_note"
echo "  curl -s -X POST -H \"authorization: Bearer $token\" -H 'content-type: application/json' -d '{}' $base/sync-api/api/sync"
echo "  curl -s -H \"authorization: Bearer $token\" $base/sync-api/api/repos"
if [ "${mode:-watch}" = serve ]; then
  echo "The deployed API's paths answer too: $origin/api/..., $origin/github/webhook (desktop clients: $origin)"
  echo "Sample events (API Gateway JSON): cargo lambda invoke needs 'cargo lambda watch' (bash scripts/local.sh without --serve)"
else
  echo "Sample events: cargo lambda invoke -A $invoke_host -P ${addr##*:} <function> --data-file events/<file>.json"
  echo "Desktop clients' gzip batches labelled application/json need --serve (cargo lambda watch refuses bodies that are not UTF-8)"
fi
if [ -n "${GITHUB_APP_PRIVATE_KEY_FILE:-}" ]; then
  echo "App key (GITHUB_APP_PRIVATE_KEY_FILE): $GITHUB_APP_PRIVATE_KEY_FILE"
elif [ -n "${GITHUB_APP_PRIVATE_KEY:-}" ]; then
  # The key itself is never written to a file or printed.
  echo "App key: given inline (GITHUB_APP_PRIVATE_KEY); the CLI in another shell needs it too: export it there, or save it to a file and set GITHUB_APP_PRIVATE_KEY_FILE"
fi
echo "CLI in another shell: set -a; . ${local_env:-/tmp/syncplane-local.env}; set +a; ${syncplane:-syncplane} status"
if [ -n "${no_app:-}" ]; then
  echo "Offline demo (webhook, sync, status): bash scripts/demo.sh"
fi
echo
