#!/usr/bin/env bash
# Sets up the dashboard's browser test: Debian's chromium (apt-get, only if
# /usr/bin/chromium is missing; Playwright never downloads a browser) and the
# test's Node packages from web/tests/package-lock.json (npm ci).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -x /usr/bin/chromium ]; then
    if ! command -v apt-get >/dev/null; then
        echo "error: /usr/bin/chromium is missing and apt-get is not available; install Chromium yourself" >&2
        exit 1
    fi
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "error: installing chromium needs root (or sudo)" >&2; exit 1; }
        SUDO="sudo"
    fi
    $SUDO apt-get update
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends chromium
fi
command -v node >/dev/null || { echo "error: node (20 or later) is missing" >&2; exit 1; }
command -v npm >/dev/null || { echo "error: npm is missing" >&2; exit 1; }
(cd web/tests && npm ci)
