#!/usr/bin/env bash
# Makes the controller Python that turbo-play's plugin host runs Python plugins with in
# the tests: a virtual environment with ansible-core 2.21.5 (pinned) from the Python
# package registry, in target/controller-python/. ansible-core 2.21 needs Python >= 3.12;
# the first found of $CONTROLLER_PYTHON, pyenv's 3.12/3.13 and python3.13/python3.12/
# python3 on PATH is used. Idempotent: once made, it neither downloads nor needs a network.
# Without a usable Python it says so and exits 0: the tests that need it skip, saying why.
#
# Prints the venv's interpreter on its last line when it is ready.
#
# Usage: bash tests/controller_python/make.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
venv="$repo/target/controller-python"
VERSION=2.21.5
stamp="$venv/.ansible-core"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$VERSION" && -x "$venv/bin/python" ]]; then
    echo "controller-python: ansible-core $VERSION ready"
    echo "$venv/bin/python"
    exit 0
fi

candidates=()
[[ -n "${CONTROLLER_PYTHON:-}" ]] && candidates+=("$CONTROLLER_PYTHON")
for dir in /root/.pyenv/versions/3.12* /root/.pyenv/versions/3.13* "${HOME:-/root}"/.pyenv/versions/3.1[2-9]*; do
    [[ -x "$dir/bin/python3" ]] && candidates+=("$dir/bin/python3")
done
candidates+=(python3.13 python3.12 python3)

base=""
for python in "${candidates[@]}"; do
    if "$python" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
        base=$python
        break
    fi
done
if [[ -z "$base" ]]; then
    echo "controller-python: no Python >= 3.12 with venv found (tried ${candidates[*]});" \
        "ansible-core $VERSION needs one: the tests of Python action and lookup plugins skip" >&2
    exit 0
fi

rm -rf "$venv"
echo "controller-python: ansible-core==$VERSION into a venv of $base"
if ! "$base" -m venv "$venv"; then
    echo "controller-python: $base could not make a venv;" \
        "the tests of Python action and lookup plugins skip" >&2
    rm -rf "$venv"
    exit 0
fi
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "ansible-core==$VERSION"; then
    echo "controller-python: pip could not install ansible-core==$VERSION;" \
        "the tests of Python action and lookup plugins skip" >&2
    rm -rf "$venv"
    exit 0
fi
echo "$VERSION" >"$stamp"
echo "$venv/bin/python"
