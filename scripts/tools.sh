#!/usr/bin/env bash
# Install (if missing) the command-line tools CI and local runs use, all from PyPI. Idempotent;
# each install is announced before it runs.
#
#   bash scripts/tools.sh           cfn-lint and the SAM CLI (the template checks; SAM in its own
#                                   venv, .venv-sam/, as it pins many packages)
#   bash scripts/tools.sh --lambda  cargo-lambda only (`cargo lambda watch` for local runs)
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

if ! need cfn-lint; then
  echo "installing cfn-lint: python3 -m pip install cfn-lint (Python package)"
  python3 -m pip install --quiet cfn-lint
fi
if [ ! -x .venv-sam/bin/sam ]; then
  echo "installing the SAM CLI into .venv-sam/ (python3 -m venv; pip install aws-sam-cli)"
  python3 -m venv .venv-sam
  .venv-sam/bin/pip install --quiet aws-sam-cli
fi
