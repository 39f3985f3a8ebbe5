#!/usr/bin/env bash
# Deploy each function with `cargo lambda deploy` (docs/deploy.md "`cargo lambda deploy`"): builds the
# crates of functions/ (only they are deploy targets: not the CLI, the benchmarks or the fake
# GitHub) for arm64, then creates or updates one Lambda function per crate, named
# "${SYNCPLANE_FUNCTION_PREFIX:-syncplane}-<crate>". Memory, timeout, tracing, log retention
# and constant variables come from each crate's [package.metadata.lambda.deploy]; the values of
# the variables it names come from .env.deploy (copy .env.deploy.example). Triggers, the queue
# and the schedule are NOT created: `sam deploy` wires everything.
set -euo pipefail
cd "$(dirname "$0")/.."

: "${SYNCPLANE_ROLE_ARN:?set SYNCPLANE_ROLE_ARN to the execution role ARN (see README: the permissions each function lists)}"
: "${SYNCPLANE_SUBNET_IDS:?set SYNCPLANE_SUBNET_IDS to the comma-separated private subnets that reach the database}"
: "${SYNCPLANE_SECURITY_GROUP_IDS:?set SYNCPLANE_SECURITY_GROUP_IDS to the comma-separated security groups the database admits}"
if [ ! -f .env.deploy ]; then
  echo ".env.deploy is missing: copy .env.deploy.example and fill it in" >&2
  exit 1
fi

crates=()
for dir in functions/*/; do
  crates+=("$(basename "$dir")")
done

packages=()
for c in "${crates[@]}"; do packages+=(-p "$c"); done
echo "building ${crates[*]} (release, arm64)"
cargo lambda build --release --arm64 "${packages[@]}"

for c in "${crates[@]}"; do
  name="${SYNCPLANE_FUNCTION_PREFIX:-syncplane}-$c"
  echo "deploying $c as $name"
  cargo lambda deploy \
    --iam-role "$SYNCPLANE_ROLE_ARN" \
    --subnet-ids "$SYNCPLANE_SUBNET_IDS" \
    --security-group-ids "$SYNCPLANE_SECURITY_GROUP_IDS" \
    --binary-name "$c" "$name"
done
echo "deployed; now run the migrations: aws lambda invoke --function-name ${SYNCPLANE_FUNCTION_PREFIX:-syncplane}-migrate --cli-binary-format raw-in-base64-out --payload '{\"action\":\"migrate\"}' /dev/stdout"
echo "then the first org, user and device token: the same function's {\"action\":\"provision\",...} (docs/deploy.md, section 7)"
