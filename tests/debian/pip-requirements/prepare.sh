#!/usr/bin/env bash
# The local wheels (tests/debian/repos/wheels.sh) inside the host, at /srv/wheels.
set -euo pipefail
bash "$REPO/tests/debian/repos/wheels.sh"
mkdir -p "$HOST_ROOT/srv/wheels"
cp "$REPO"/target/debian/wheels/*.whl "$HOST_ROOT/srv/wheels/"
chmod -R a+rX "$HOST_ROOT/srv/wheels"
