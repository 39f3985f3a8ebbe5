#!/usr/bin/env bash
# Run syncplane locally: Postgres checked (started or installed if needed), the local database
# created if missing, migrations applied, status shown.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/services.sh
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/syncplane}"
db=$(basename "${DATABASE_URL%%\?*}")
admin="${DATABASE_URL%/*}/postgres"
if [ "$(psql "$admin" -qtAc "select 1 from pg_database where datname = '$db'")" != "1" ]; then
  psql "$admin" -qc "create database \"$db\""
fi
cargo run --quiet --locked -p syncplane-cli -- migrate
cargo run --quiet --locked -p syncplane-cli -- status
