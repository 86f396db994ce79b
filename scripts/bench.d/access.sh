#!/usr/bin/env bash
# capctl serve's access checks and HTTPS: requests/s with and without credentials, TLS handshakes/s, a TLS live view's CPU, eight cameras in the page over HTTP/2 and HTTP/1.1.
#
# Usage: scripts/bench access [RUNS] [SECONDS]   (defaults: 3 runs, 10 s windows)
#        CAPCTL_BENCH_DEBUG=1   use the debug build (.build/debug) instead of building release
#
# scripts/bench.d/access.py says what each figure is. Needs wrk, curl, openssl and Chromium
# (Debian's wrk, curl, openssl, chromium; scripts/setup installs them).
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-3}
seconds=${2:-10}
source scripts/bench.d/common.bash
bin=$(service_binaries)
exec python3 scripts/bench.d/access.py --capctl "$bin/capctl" --runs "$runs" --seconds "$seconds"
