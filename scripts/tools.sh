#!/usr/bin/env bash
# Install (if missing) the command-line tools CI and local runs use: cfn-lint (the template
# check) and cargo-lambda (`cargo lambda watch` for local runs). Both come from PyPI. Idempotent.
set -euo pipefail

need() { command -v "$1" >/dev/null 2>&1; }

if ! need cfn-lint; then
  echo "installing cfn-lint"
  python3 -m pip install --quiet cfn-lint
fi
if [ "${1:-}" = "--lambda" ] && ! need cargo-lambda; then
  echo "installing cargo-lambda"
  python3 -m pip install --quiet cargo-lambda
fi
