#!/usr/bin/env bash
# Install (if missing) and start what the tests need on loopback: PostgreSQL, and the AWS emulator
# (moto: SQS, Secrets Manager, SSM) the later suites use. Idempotent.
#
#   bash scripts/services.sh                  PostgreSQL and the AWS emulator (tests, CI)
#   bash scripts/services.sh --postgres-only  PostgreSQL only (local runs: inline jobs, no queue)
#   bash scripts/services.sh --database       after a build: why DATABASE_URL cannot be used, told
#                                             apart by `syncplane db check` (nothing listening,
#                                             authentication, role or database missing); a
#                                             missing database is created
#   bash scripts/services.sh --stop FILE      stop what a run started, as listed in FILE
#
# PostgreSQL is looked for at DATABASE_URL's host and port (default 127.0.0.1:5432); a local
# cluster on that port is started if it is down, PostgreSQL installed (apt-get) if there is none.
# Before it changes the system it prints what it is about to do; SYNCPLANE_NO_SYSTEM_CHANGES=1
# makes it stop there instead. pg_hba.conf is changed (trust lines for 127.0.0.1 and ::1) only
# when the cause is authentication, and only after a yes on the terminal, or with
# SYNCPLANE_ALLOW_SYSTEM_CHANGES=1 when there is no terminal (CI).
#
# Settings (docs/configuration.md, "Scripts"): SYNCPLANE_BIN (the syncplane binary --database
# runs; default target/debug/syncplane), SYNCPLANE_PG_HBA (the pg_hba.conf to change; default the
# newest local cluster's; the tests point it at a file of their own), SYNCPLANE_STARTED_FILE
# (services started are appended to it, for --stop), SYNCPLANE_MOTO_PORT (default 4566).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

mode=all
case "${1:-}" in
  --postgres-only) mode=postgres ;;
  --database) mode=database ;;
  --stop)
    [ -n "${2:-}" ] || { echo "--stop needs the file a run's services were listed in" >&2; exit 2; }
    mode=stop
    ;;
  "") ;;
  *) echo "unknown argument: $1 (try --postgres-only, --database or --stop FILE)" >&2; exit 2 ;;
esac

export PGURL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
tmp="${TMPDIR:-/tmp}"

# Say what is about to change on this machine, or stop if that is not allowed.
system_change() {
  echo "about to $1"
  if [ -n "${SYNCPLANE_NO_SYSTEM_CHANGES:-}" ]; then
    echo "not done (SYNCPLANE_NO_SYSTEM_CHANGES is set): $2" >&2
    exit 1
  fi
}

# --- --stop FILE: what a run started (lines "moto_server PID", "database NAME") -------------
# The emulator may serve another run still in progress (runs share one lock, held shared while
# they run): it is stopped only when no other run holds the lock, else handed to the last one.
stop_started() {
  local file="$1" kind value moto=""
  [ -f "$file" ] || return 0
  while read -r kind value; do
    case "$kind" in
      moto_server) moto="$value" ;;
      database) drop_database "$value" ;;
    esac
  done <"$file"
  local owned="$tmp/syncplane-moto.owned"
  [ -n "$moto" ] && echo "$moto" >"$owned"
  exec 8>>"$tmp/syncplane-services.lock"
  if flock -x -n 8; then
    if [ -f "$owned" ]; then
      moto=$(cat "$owned")
      if [ -n "$moto" ] && grep -q moto_server "/proc/$moto/cmdline" 2>/dev/null; then
        kill "$moto" 2>/dev/null || true
        echo "stopped the AWS emulator this run started (pid $moto)"
      fi
      rm -f "$owned"
    fi
  elif [ -n "$moto" ]; then
    echo "left the AWS emulator running (pid $moto): another run uses it and stops it when it ends"
  fi
}

# A database a run created (the tests' template): only names the test harness makes.
drop_database() {
  [[ "$1" =~ ^syncplane_template_[0-9a-f]{16}$ ]] || { echo "not dropped (not a template name): $1" >&2; return 0; }
  if psql "$PGURL" -qtAc "drop database if exists \"$1\"" >/dev/null 2>&1; then
    echo "dropped the template database this run created ($1)"
  else
    echo "kept the template database $1 (another run is using it)"
  fi
}

if [ "$mode" = stop ]; then
  stop_started "$2"
  exit 0
fi

# --- --database: diagnose DATABASE_URL with the CLI, act on the cause ------------------------
pg_hba() {
  if [ -n "${SYNCPLANE_PG_HBA:-}" ]; then
    echo "$SYNCPLANE_PG_HBA"
  else
    find /etc/postgresql -path '*/main/pg_hba.conf' 2>/dev/null | sort -V | tail -n 1
  fi
}

# A yes from the person at the terminal, or the opt-in variable when there is no terminal.
allowed() {
  [ -z "${SYNCPLANE_NO_SYSTEM_CHANGES:-}" ] || return 1
  [ -z "${SYNCPLANE_ALLOW_SYSTEM_CHANGES:-}" ] || return 0
  if [ -t 0 ] && { : </dev/tty; } 2>/dev/null; then
    local answer=""
    read -r -p "$1? [y/N] " answer </dev/tty || true
    [[ "$answer" =~ ^[Yy] ]]
    return
  fi
  return 1
}

trust_loopback() {
  local hba line1="host all all 127.0.0.1/32 trust" line2="host all all ::1/128 trust"
  hba=$(pg_hba)
  if [ -z "$hba" ] || [ ! -f "$hba" ]; then
    echo "no local pg_hba.conf found: put the password in DATABASE_URL" >&2
    return 1
  fi
  if [ "$(head -n 2 "$hba")" = "$line1"$'\n'"$line2" ]; then
    echo "$hba already trusts loopback connections: put the password in DATABASE_URL" >&2
    return 1
  fi
  local change="add '$line1' and '$line2' at the top of $hba and reload PostgreSQL"
  echo "authentication is the cause: this would $change (a system change)" >&2
  if ! allowed "Change $hba so"; then
    echo "not changed: answer y on a terminal, or set SYNCPLANE_ALLOW_SYSTEM_CHANGES=1 to allow it without one; or put the password in DATABASE_URL" >&2
    return 1
  fi
  echo "about to $change"
  sed -i "1i $line1\n$line2" "$hba"
  # /etc/postgresql/<version>/<cluster>/pg_hba.conf; another file (SYNCPLANE_PG_HBA) is not
  # a cluster's: nothing to reload.
  if [[ "$hba" =~ ^/etc/postgresql/([^/]+)/([^/]+)/pg_hba\.conf$ ]]; then
    pg_ctlcluster --skip-systemctl-redirect "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" reload
  else
    echo "$hba is not a cluster's configuration file: reload PostgreSQL yourself"
  fi
}

check_database() {
  local bin="${SYNCPLANE_BIN:-}" code=0
  if [ -z "$bin" ]; then
    bin="$(cargo metadata --format-version 1 --no-deps --manifest-path "$root/Cargo.toml" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/debug/syncplane"
  fi
  [ -x "$bin" ] || { echo "$bin is not built: cargo build --workspace --bin syncplane" >&2; return 1; }
  DATABASE_URL="$PGURL" "$bin" db check --create || code=$?
  if [ "$code" = 4 ]; then
    trust_loopback || return 4
    code=0
    DATABASE_URL="$PGURL" "$bin" db check --create || code=$?
  fi
  return "$code"
}

if [ "$mode" = database ]; then
  code=0
  check_database || code=$?
  exit "$code"
fi

# --- PostgreSQL listening at DATABASE_URL's host and port ------------------------------------
read -r pg_host pg_port < <(python3 -c '
import sys, urllib.parse
u = urllib.parse.urlsplit(sys.argv[1])
print(u.hostname or "127.0.0.1", u.port or 5432)' "$PGURL")
pg_up() { pg_isready -h "$pg_host" -p "$pg_port" -t 3 -q 2>/dev/null; }
local_host() { case "$pg_host" in 127.0.0.1 | localhost | ::1 | /*) return 0 ;; *) return 1 ;; esac; }
nothing_listens() {
  echo "DATABASE_URL: nothing listens on $pg_host:$pg_port: $1" >&2
  exit 1
}

if ! pg_up; then
  local_host || nothing_listens "start PostgreSQL there, or correct the host or port in DATABASE_URL"
  if ! command -v pg_ctlcluster >/dev/null 2>&1 && ! command -v pg_isready >/dev/null 2>&1; then
    system_change "install PostgreSQL: apt-get update; apt-get install postgresql (system packages)" \
      "install PostgreSQL and start it on 127.0.0.1:5432, or set DATABASE_URL to a running one"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  fi
  # The local cluster on that port (pg_lsclusters: version, name, port, status), if any.
  cluster=$(pg_lsclusters --no-header 2>/dev/null | awk -v p="$pg_port" '$3 == p { print $1, $2, $4; exit }')
  if [ -z "$cluster" ]; then
    nothing_listens "no local PostgreSQL cluster uses port $pg_port (pg_lsclusters): correct the port in DATABASE_URL, or start PostgreSQL on it"
  fi
  read -r version name status <<<"$cluster"
  if [ "$status" != online ]; then
    echo "starting PostgreSQL $version/$name on port $pg_port"
    pg_ctlcluster --skip-systemctl-redirect "$version" "$name" start || true
  fi
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || nothing_listens "the cluster $version/$name did not start: see its log (pg_lsclusters)"
fi
echo "PostgreSQL listening on $pg_host:$pg_port"

if [ "$mode" = postgres ]; then
  exit 0
fi

# The AWS emulator (moto) on loopback: SQS for the adapter and worker tests, Secrets Manager
# and SSM for the secrets-by-reference tests.
SQS_PORT="${SYNCPLANE_MOTO_PORT:-4566}"
sqs_up() { curl -s -o /dev/null --max-time 2 "http://127.0.0.1:${SQS_PORT}/" 2>/dev/null; }
# 5.2.6 at least: earlier 5.2 releases answer CompleteMultipartUpload with another root element
# than S3's (getmoto/moto#10055), which the AWS SDK cannot read (the exports' multipart upload).
MOTO_MIN=5.2.6
moto_current() {
  python3 - "$MOTO_MIN" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
have = tuple(int(p) for p in version("moto").split(".")[:3])
sys.exit(0 if have >= tuple(int(p) for p in sys.argv[1].split(".")) else 1)
PY
}
if ! command -v moto_server >/dev/null 2>&1 || ! moto_server --help >/dev/null 2>&1 || ! moto_current; then
  echo "installing the AWS emulator: pip install moto[server]>=$MOTO_MIN (Python package)"
  pip install -q "moto[server]>=$MOTO_MIN" >/dev/null
  hash -r
fi
if ! sqs_up; then
  echo "starting the AWS emulator (moto) on 127.0.0.1:${SQS_PORT}"
  nohup moto_server -H 127.0.0.1 -p "$SQS_PORT" >"$tmp/moto_server.log" 2>&1 &
  moto_pid=$!
  if [ -n "${SYNCPLANE_STARTED_FILE:-}" ]; then
    echo "moto_server $moto_pid" >>"$SYNCPLANE_STARTED_FILE"
  fi
  for _ in $(seq 1 30); do sqs_up && break; sleep 1; done
fi
sqs_up || { echo "the AWS emulator is not reachable at 127.0.0.1:${SQS_PORT}" >&2; exit 1; }
echo "AWS emulator ready"
