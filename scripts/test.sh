#!/usr/bin/env bash
# The test command (README): every unit and integration test of the workspace against the
# Postgres at DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh >/dev/null
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
# The process-level tests (logging, secrets in logs) run the real binaries: build them first.
cargo build --workspace --bins --locked
exec cargo test --workspace --locked "$@"
