#!/usr/bin/env bash
# Install (if missing) the command-line tools CI and local runs use, all from PyPI. Idempotent;
# each install is announced before it runs.
#
#   bash scripts/tools.sh           cfn-lint and the SAM CLI (the template checks; SAM in its own
#                                   venv, .venv-sam/, as it pins many packages)
#   bash scripts/tools.sh --lambda  cargo-lambda only (`cargo lambda watch` for local runs)
#   bash scripts/tools.sh --browser Chromium and chromedriver (Debian packages, apt-get) and
#                                   axe-core (npm, pinned) in .tools/axe-core/: the console's
#                                   real-browser tests (`console_browser`) and bench-console
#   bash scripts/tools.sh --scanners detect-secrets (PyPI, pinned) in .tools/detect-secrets/: the
#                                   independent oracle of the redaction tests
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }

if [ "${1:-}" = "--lambda" ]; then
  if ! need cargo-lambda; then
    echo "installing cargo-lambda: python3 -m pip install cargo-lambda (Python package)"
    python3 -m pip install --quiet cargo-lambda
  fi
  exit 0
fi

if [ "${1:-}" = "--scanners" ]; then
  DETECT_SECRETS_VERSION=1.5.0
  if ! .tools/detect-secrets/bin/detect-secrets --version 2>/dev/null | grep -qx "$DETECT_SECRETS_VERSION"; then
    echo "installing detect-secrets $DETECT_SECRETS_VERSION into .tools/detect-secrets/ (python3 -m venv; pip, from PyPI)"
    rm -rf .tools/detect-secrets
    mkdir -p .tools
    python3 -m venv .tools/detect-secrets
    .tools/detect-secrets/bin/pip install --quiet "detect-secrets==$DETECT_SECRETS_VERSION"
  fi
  exit 0
fi

if [ "${1:-}" = "--browser" ]; then
  AXE_VERSION=4.10.3
  if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing Chromium and chromedriver: apt-get install chromium chromium-driver (Debian packages)"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver
  fi
  if [ ! -f .tools/axe-core/axe.min.js ] \
    || ! grep -q "\"version\": \"$AXE_VERSION\"" .tools/axe-core/package.json 2>/dev/null; then
    need npm || { echo "npm is needed for axe-core: apt-get install npm" >&2; exit 1; }
    echo "installing axe-core $AXE_VERSION into .tools/axe-core/ (npm pack from the npm registry)"
    mkdir -p .tools
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "axe-core@$AXE_VERSION" >/dev/null)
    rm -rf .tools/axe-core
    mkdir -p .tools/axe-core
    tar -xzf "$tmp"/axe-core-"$AXE_VERSION".tgz -C .tools/axe-core --strip-components=1
    rm -rf "$tmp"
  fi
  exit 0
fi

if ! need cfn-lint; then
  echo "installing cfn-lint: python3 -m pip install cfn-lint (Python package)"
  python3 -m pip install --quiet cfn-lint
fi
if [ ! -x .venv-sam/bin/sam ]; then
  echo "installing the SAM CLI into .venv-sam/ (python3 -m venv; pip install aws-sam-cli)"
  python3 -m venv .venv-sam
  .venv-sam/bin/pip install --quiet aws-sam-cli
fi
