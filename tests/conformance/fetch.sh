#!/usr/bin/env bash
# Fetches Ansible's own integration test targets, which tests/conformance/run.sh runs
# against turbo-play: the ansible-core source distribution from the Python package
# registry, pinned by version and sha256, of which only test/integration/targets/ (and
# the licence) is unpacked into target/conformance/. Never committed. Idempotent: once
# fetched (or with the archive already in target/conformance/downloads), it neither
# downloads nor needs a network.
#
# Usage: bash tests/conformance/fetch.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
dest="$repo/target/conformance"
downloads="$dest/downloads"

VERSION=2.21.5
SHA256=65bb3148c58ebb843cd5074004c805f404f152114d98476dd823324616c9c6cb
ARCHIVE="ansible_core-$VERSION.tar.gz"
TOP="ansible_core-$VERSION"
# ansible-test's pins for the Python packages targets install (setup_remote_constraints
# copies it from beside the targets).
CONSTRAINTS=test/lib/ansible_test/_data/requirements/constraints.txt

stamp="$dest/.fetched"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$SHA256" && -d "$dest/targets" && -d "$dest/lib/ansible" &&
    -f "$dest/$CONSTRAINTS" ]]; then
    echo "conformance: ansible-core $VERSION targets already fetched"
    exit 0
fi

mkdir -p "$downloads"
archive="$downloads/$ARCHIVE"
if [[ ! -f "$archive" ]]; then
    echo "conformance: downloading ansible-core==$VERSION (source distribution)"
    python3 -m pip --version >/dev/null 2>&1 || {
        echo "conformance: needs python3 with pip (apt-get install python3-pip)" >&2
        exit 1
    }
    # Only files are taken from the archive, never installed: the Python version the
    # package asks for does not matter.
    python3 -m pip download --quiet --no-deps --no-binary :all: --ignore-requires-python \
        --dest "$downloads" "ansible-core==$VERSION"
    [[ -f "$archive" ]] || { echo "conformance: pip saved no $ARCHIVE in $downloads" >&2; exit 1; }
fi
got=$(sha256sum "$archive" | cut -d' ' -f1)
if [[ "$got" != "$SHA256" ]]; then
    echo "conformance: $archive has sha256 $got, expected $SHA256; refusing it" >&2
    rm -f "$archive"
    exit 1
fi

rm -rf "${dest:?}/targets" "$dest/lib" "$dest/test" "$dest/COPYING" "$dest/.unpack"
mkdir -p "$dest/.unpack" "$dest/lib"
# GNU tar refuses absolute paths and `..` members by default; only the targets, the
# licence, which travels with them, and ansible-core's own package are extracted. The
# package is the controller-side ansible-core an ansible-test run has installed: turbo-play
# packs its module_utils for the targets' `library/` modules (run.py points
# TURBO_ANSIBLE_PYTHON at it); nothing is installed. Of ansible-test itself only its
# constraints file is taken.
tar -xzf "$archive" -C "$dest/.unpack" "$TOP/test/integration/targets" "$TOP/lib/ansible" "$TOP/COPYING" \
    "$TOP/$CONSTRAINTS"
mv "$dest/.unpack/$TOP/test/integration/targets" "$dest/targets"
mv "$dest/.unpack/$TOP/lib/ansible" "$dest/lib/ansible"
mv "$dest/.unpack/$TOP/COPYING" "$dest/COPYING"
mkdir -p "$dest/$(dirname "$CONSTRAINTS")"
mv "$dest/.unpack/$TOP/$CONSTRAINTS" "$dest/$CONSTRAINTS"
rm -rf "$dest/.unpack"
echo "$SHA256" >"$stamp"
echo "conformance: ansible-core $VERSION targets unpacked into target/conformance/targets ($(ls "$dest/targets" | wc -l) targets)"
