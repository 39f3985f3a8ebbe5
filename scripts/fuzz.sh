#!/usr/bin/env bash
# The hostile-input properties (every content and ingest parser, issue 12 §1) with many more cases
# than the normal test run: `bash scripts/fuzz.sh` (PROPTEST_CASES, default 2000, sets how many per
# property; PROPTEST_RNG_SEED, a number, explores from another seed than the fixed one). A failure
# prints the shrunk input. No services needed.
set -euo pipefail
cd "$(dirname "$0")/.."
export PROPTEST_CASES="${PROPTEST_CASES:-2000}"
exec cargo test --workspace --locked --lib "$@" -- properties::
