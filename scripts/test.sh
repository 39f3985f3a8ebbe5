#!/usr/bin/env bash
# The test command (README): every unit and integration test of the workspace against the
# Postgres at DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres). Arguments go to
# `cargo test` (a filter: `bash scripts/test.sh config`).
#
# Quiet and tidy (issue 21 point 7): a test target with no test to run (most of them, under a
# filter) prints nothing (scripts/test-output.awk); what this run started is stopped at the end:
# the AWS emulator if this run started it and no other run still uses it, and the template
# database the tests created if this run created it.
set -euo pipefail
cd "$(dirname "$0")/.."
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

tmp="${TMPDIR:-/tmp}"
# Every run holds this lock shared while it runs: the emulator a run started is stopped by the
# last run to end (scripts/services.sh --stop).
exec 9>>"$tmp/syncplane-services.lock"
flock -s 9
SYNCPLANE_STARTED_FILE=$(mktemp)
export SYNCPLANE_STARTED_FILE
# shellcheck disable=SC2317 # run by the EXIT trap
finish() {
  flock -u 9
  bash scripts/services.sh --stop "$SYNCPLANE_STARTED_FILE"
  rm -f "$SYNCPLANE_STARTED_FILE"
}
trap finish EXIT

bash scripts/services.sh >/dev/null
# The process-level tests (logging, secrets in logs) run the real binaries: build them first.
# The same build as scripts/local.sh and `cargo run --bin ...`: one set of artifacts. The webhook
# and the tick as a local run builds them, able to run jobs inline (their `inline-jobs` feature,
# which `cargo lambda watch` gets too; deployed, they queue them and link no engine).
cargo build --workspace --bins --locked --features webhook/inline-jobs,tick/inline-jobs
target_dir=$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
# DATABASE_URL usable (a missing database created); its one line is shown only when it is not.
if ! said=$(SYNCPLANE_BIN="$target_dir/debug/syncplane" bash scripts/services.sh --database); then
  echo "$said" >&2
  exit 1
fi

# The tests wait on Postgres, the emulators, child processes and browsers far more than they
# compute (the integration suite: about 60 s of CPU in 230 s at 2 threads), so each test binary
# runs three tests per core, at most 8 (each test has its own database and pools, under
# Postgres's 100 connections): the suite took half the time at 6 threads on 2 cores, and longer
# again at 12 (issue 32). RUST_TEST_THREADS set by the caller wins.
cores=$(nproc 2>/dev/null || echo 2)
threads=$((cores * 3))
if [ "$threads" -gt 8 ]; then threads=8; fi
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-$threads}"

color=()
if [ -t 1 ]; then color=(--color always); fi
status=0
cargo test --workspace --locked "${color[@]}" "$@" 2>&1 | awk -v filter="$*" -f scripts/test-output.awk ||
  status=$?
exit "$status"
