#!/usr/bin/env python3
"""Cold start of each function binary: from process start to the moment it asks the Lambda
Runtime API for its first event (`GET /2018-06-01/runtime/invocation/next`), which is when its
initialisation (logging, configuration, pools, clients) is done. A tiny local Runtime API records
that request; the binary is then killed. Also prints each binary's size.

usage: python3 scripts/bench-cold-start.py [--runs N] [--functions ingest,worker] BINARY_DIR
The environment is a deployed one (JOBS_BACKEND=sqs, a GitHub App key, a database URL); pools
connect lazily, so no server needs to be running.
"""

import argparse
import os
import statistics
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FUNCTIONS = ["webhook", "sync-api", "ingest", "tick", "worker"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RuntimeApi(BaseHTTPRequestHandler):
    first_request = None  # (monotonic ns, path)
    seen = threading.Event()

    def do_GET(self):
        if RuntimeApi.first_request is None:
            RuntimeApi.first_request = (time.monotonic_ns(), self.path)
            RuntimeApi.seen.set()
        # Never hand out an event: the measurement ends here.
        time.sleep(5)

    def log_message(self, *args):
        pass


def environment(port):
    env = {
        "PATH": os.environ.get("PATH", ""),
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{port}",
        "AWS_LAMBDA_FUNCTION_NAME": "bench",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/bench",
        "AWS_LAMBDA_LOG_STREAM_NAME": "bench",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
        "GITHUB_APP_ID": "1",
        "GITHUB_INSTALLATION_ID": "2",
        "GITHUB_APP_PRIVATE_KEY_FILE": os.path.join(ROOT, "tests/fixtures/keys/app.pem"),
        "GITHUB_WEBHOOK_SECRET": "bench-secret",
        "SYNC_API_TOKEN": "bench-token",
        "JOBS_BACKEND": "sqs",
        "SQS_QUEUE_URL": "http://127.0.0.1:4566/000000000000/jobs",
        "AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:4566",
        "SYNC_SCHEDULER": "1",
        "RUST_LOG": "info",
    }
    return env


def cold_start(binary, server):
    RuntimeApi.first_request = None
    RuntimeApi.seen.clear()
    port = server.server_address[1]
    start = time.monotonic_ns()
    proc = subprocess.Popen(
        [binary], env=environment(port), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    ok = RuntimeApi.seen.wait(timeout=10)
    proc.kill()
    _, err = proc.communicate()
    if not ok:
        raise SystemExit(f"{binary} never asked for an event:\n{err.decode(errors='replace')}")
    at, path = RuntimeApi.first_request
    assert path.startswith("/2018-06-01/runtime/invocation/next"), path
    return (at - start) / 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--functions",
        default=",".join(FUNCTIONS),
        help="comma-separated: the functions to time (default: all five)",
    )
    parser.add_argument("binary_dir")
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), RuntimeApi)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"{'function':<10} {'size MB':>8} {'median ms':>10} {'p90 ms':>8} {'max ms':>8}")
    for name in args.functions.split(","):
        binary = os.path.join(args.binary_dir, name)
        if not os.path.exists(binary):
            binary = os.path.join(args.binary_dir, name, "bootstrap")
        size = os.path.getsize(binary) / 1e6
        cold_start(binary, server)  # warm the page cache: Lambda's cold start is not a disk read
        times = sorted(cold_start(binary, server) for _ in range(args.runs))
        p90 = times[int(0.9 * (len(times) - 1))]
        print(
            f"{name:<10} {size:>8.2f} {statistics.median(times):>10.2f} {p90:>8.2f} {times[-1]:>8.2f}"
        )
    server.shutdown()


if __name__ == "__main__":
    main()
