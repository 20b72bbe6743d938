#!/usr/bin/env bash
# Builds the Python package `deltaflash` (python/, native module crates/python) with
# maturin into a virtualenv and runs its pytest suite, Ray tests on a local Ray instance
# of 2 workers included, and examples/ipa-tour.ipynb executed in a kernel (nbclient).
#
# The virtualenv (target/python-venv, or $DELTAFLASH_VENV) gets the pinned packages of
# python/requirements-test.txt once; it is rebuilt only when that file changes (Ray's
# wheel is large). The module is built in the cargo profile `dev` (optimised a little, and
# sharing target/debug with `cargo test`); DELTAFLASH_PROFILE=release builds it as
# `pip install ./python` does.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${DELTAFLASH_VENV:-target/python-venv}
REQUIREMENTS=python/requirements-test.txt
PYTHON=${PYTHON:-python3}
PROFILE=${DELTAFLASH_PROFILE:-dev}

command -v "$PYTHON" >/dev/null || { echo "error: $PYTHON not found; install Python 3.8 or newer" >&2; exit 1; }
want=$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)
stamp="$VENV/.requirements.sha256"
if [[ ! -x "$VENV/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
    echo "== creating $VENV with $REQUIREMENTS" >&2
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q -r "$REQUIREMENTS"
    echo "$want" > "$stamp"
fi

echo "== building the deltaflash wheel (cargo profile $PROFILE)" >&2
WHEELS=target/python-wheels
rm -rf "$WHEELS"
(cd python && CARGO_INCREMENTAL=0 "../$VENV/bin/maturin" build --quiet --profile "$PROFILE" \
    --interpreter "../$VENV/bin/python" --out "../$WHEELS")
"$VENV/bin/pip" install -q --force-reinstall --no-deps "$WHEELS"/deltaflash-*.whl

echo "== pytest" >&2
cd python/tests
MPLBACKEND=Agg RAY_USAGE_STATS_ENABLED=0 "../../$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
