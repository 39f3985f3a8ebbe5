#!/usr/bin/env bash
# Install (if missing) and start what the tests need on loopback: PostgreSQL, and the Python
# tools the later suites use (the SQS emulator, the template linter). Idempotent.
set -euo pipefail

export PGURL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }

if ! command -v pg_ctlcluster >/dev/null 2>&1 && ! command -v pg_isready >/dev/null 2>&1; then
  echo "installing PostgreSQL"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

if ! pg_up; then
  echo "starting PostgreSQL"
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
fi
pg_up || { echo "PostgreSQL is not reachable at 127.0.0.1:5432" >&2; exit 1; }

# Tests connect as postgres over TCP without a password (trust), as on these machines.
if ! psql "$PGURL" -qtAc 'select 1' >/dev/null 2>&1; then
  echo "PostgreSQL refuses $PGURL; allowing trust auth on loopback"
  hba=$(ls /etc/postgresql/*/main/pg_hba.conf | head -n 1)
  sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main reload
fi
echo "PostgreSQL ready"

# The AWS emulator (moto) on loopback: SQS for the adapter and worker tests, Secrets Manager
# and SSM for the secrets-by-reference tests.
SQS_PORT=4566
sqs_up() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:${SQS_PORT}/" 2>/dev/null; }
if ! command -v moto_server >/dev/null 2>&1 || ! moto_server --help >/dev/null 2>&1; then
  echo "installing the SQS emulator (moto[server])"
  pip install -q "moto[server]" >/dev/null
  hash -r
fi
if ! sqs_up; then
  echo "starting the SQS emulator on 127.0.0.1:${SQS_PORT}"
  nohup moto_server -H 127.0.0.1 -p "$SQS_PORT" >/tmp/moto_server.log 2>&1 &
  for _ in $(seq 1 30); do sqs_up && break; sleep 1; done
fi
sqs_up || { echo "the SQS emulator is not reachable at 127.0.0.1:${SQS_PORT}" >&2; exit 1; }
echo "SQS emulator ready"
