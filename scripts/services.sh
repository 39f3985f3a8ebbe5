#!/usr/bin/env bash
# Install (if missing) and start what the tests need on loopback: PostgreSQL, and the AWS emulator
# (moto: SQS, Secrets Manager, SSM) the later suites use. Idempotent.
#
#   bash scripts/services.sh                  PostgreSQL and the AWS emulator (tests, CI)
#   bash scripts/services.sh --postgres-only  PostgreSQL only (local runs: inline jobs, no queue)
#
# Before it changes the system (installing PostgreSQL with apt-get, adding trust lines to
# pg_hba.conf) it prints what it is about to do; SYNCPLANE_NO_SYSTEM_CHANGES=1 makes it stop
# there instead, with what to do by hand.
set -euo pipefail

postgres_only=""
case "${1:-}" in
  --postgres-only) postgres_only=1 ;;
  "") ;;
  *) echo "unknown argument: $1 (try --postgres-only)" >&2; exit 2 ;;
esac

export PGURL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }

# Say what is about to change on this machine, or stop if that is not allowed.
system_change() {
  echo "about to $1"
  if [ -n "${SYNCPLANE_NO_SYSTEM_CHANGES:-}" ]; then
    echo "not done (SYNCPLANE_NO_SYSTEM_CHANGES is set): $2" >&2
    exit 1
  fi
}

if ! command -v pg_ctlcluster >/dev/null 2>&1 && ! command -v pg_isready >/dev/null 2>&1; then
  system_change "install PostgreSQL: apt-get update; apt-get install postgresql (system packages)" \
    "install PostgreSQL and start it on 127.0.0.1:5432, or set DATABASE_URL to a running one"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi

if ! pg_up; then
  echo "starting PostgreSQL"
  version=$(find /etc/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
fi
pg_up || { echo "PostgreSQL is not reachable at 127.0.0.1:5432" >&2; exit 1; }

# Tests connect as postgres over TCP without a password (trust), as on these machines.
if ! psql "$PGURL" -qtAc 'select 1' >/dev/null 2>&1; then
  hba=$(find /etc/postgresql -path '*/main/pg_hba.conf' 2>/dev/null | sort -V | tail -n 1)
  [ -n "$hba" ] || { echo "PostgreSQL refuses $PGURL and no pg_hba.conf was found: set DATABASE_URL (with a password if needed)" >&2; exit 1; }
  echo "PostgreSQL refuses $PGURL"
  system_change "add 'host all all 127.0.0.1/32 trust' and 'host all all ::1/128 trust' at the top of $hba and reload PostgreSQL" \
    "add those lines yourself, or set DATABASE_URL to a URL PostgreSQL accepts"
  sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
  version=$(basename "$(dirname "$(dirname "$hba")")")
  pg_ctlcluster --skip-systemctl-redirect "$version" main reload
fi
echo "PostgreSQL ready"

if [ -n "$postgres_only" ]; then
  exit 0
fi

# The AWS emulator (moto) on loopback: SQS for the adapter and worker tests, Secrets Manager
# and SSM for the secrets-by-reference tests.
SQS_PORT=4566
sqs_up() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:${SQS_PORT}/" 2>/dev/null; }
if ! command -v moto_server >/dev/null 2>&1 || ! moto_server --help >/dev/null 2>&1; then
  echo "installing the AWS emulator: pip install moto[server] (Python package)"
  pip install -q "moto[server]" >/dev/null
  hash -r
fi
if ! sqs_up; then
  echo "starting the AWS emulator (moto) on 127.0.0.1:${SQS_PORT}"
  nohup moto_server -H 127.0.0.1 -p "$SQS_PORT" >/tmp/moto_server.log 2>&1 &
  for _ in $(seq 1 30); do sqs_up && break; sleep 1; done
fi
sqs_up || { echo "the AWS emulator is not reachable at 127.0.0.1:${SQS_PORT}" >&2; exit 1; }
echo "AWS emulator ready"
