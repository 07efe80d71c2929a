#!/usr/bin/env bash
# Fetches what tests/integration/python_modules.rs needs on the controller side: the
# ansible-core 2.21.5 package (its modules and module_utils, which turbo-play packs for
# modules it has no native planner for) and the collections the tests call, from the
# `ansible` 14.5.0 community package. Both are wheels from the Python package registry,
# pinned by version and sha256; only files are unpacked (nothing is installed), into
#   target/python-modules/core/ansible/                      (for PYTHONPATH)
#   target/python-modules/collections/ansible_collections/   (for ANSIBLE_COLLECTIONS_PATH)
# Idempotent: once fetched (or with the wheels already in target/python-modules/downloads
# or target/real-roles/downloads) it neither downloads nor needs a network.
#
# Usage: bash tests/python_modules/fetch.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
dest="$repo/target/python-modules"
downloads="$dest/downloads"

# package==version | sha256 of the wheel | directories taken from it | where they go
WHEELS=(
    "ansible-core==2.21.5|08886f9f3e23d129aa98a01271c4a47833516e1cb7c737a246788cb474f41222|ansible|core"
    "ansible==14.5.0|245623ccc2d31d0f6f4bdb63168d550cad305fb032cc43d96e8f61ce8ab0ba84|ansible_collections/community/general ansible_collections/ansible/posix|collections"
)

sha256() { sha256sum "$1" | cut -d' ' -f1; }

mkdir -p "$downloads"
for entry in "${WHEELS[@]}"; do
    IFS='|' read -r requirement sum inside target <<<"$entry"
    stamp="$dest/$target/.fetched-${requirement%%==*}"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" ]]; then
        echo "python-modules: $requirement already fetched"
        continue
    fi
    package=${requirement%%==*}
    version=${requirement##*==}
    wheel_prefix="$(tr '-' '_' <<<"$package")-$version-"
    wheel=$(find "$downloads" "$repo/target/real-roles/downloads" -maxdepth 1 \
        -name "$wheel_prefix*.whl" 2>/dev/null | head -n 1)
    if [[ -z "$wheel" ]]; then
        echo "python-modules: downloading $requirement"
        python3 -m pip --version >/dev/null 2>&1 || {
            echo "python-modules: needs python3 with pip (apt-get install python3-pip)" >&2
            exit 1
        }
        python3 -m pip download --quiet --no-deps --only-binary=:all: --ignore-requires-python \
            --dest "$downloads" "$requirement"
        wheel=$(find "$downloads" -maxdepth 1 -name "$wheel_prefix*.whl" | head -n 1)
        [[ -n "$wheel" ]] || { echo "python-modules: no wheel for $requirement" >&2; exit 1; }
    fi
    got=$(sha256 "$wheel")
    if [[ "$got" != "$sum" ]]; then
        echo "python-modules: $wheel has sha256 $got, expected $sum; refusing it" >&2
        rm -f "$wheel"
        exit 1
    fi
    mkdir -p "$dest/$target"
    python3 - "$wheel" "$dest/$target" $inside <<'PY'
import os, shutil, sys, zipfile

wheel, target, *insides = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for inside in insides:
        prefix = inside.rstrip("/") + "/"
        shutil.rmtree(os.path.join(target, inside), ignore_errors=True)
        found = False
        for info in z.infolist():
            if info.is_dir() or not info.filename.startswith(prefix):
                continue
            if info.filename.startswith("/") or ".." in info.filename.split("/"):
                sys.exit(f"python-modules: {wheel} has a suspicious path {info.filename}")
            path = os.path.join(target, info.filename)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with z.open(info) as src, open(path, "wb") as out:
                shutil.copyfileobj(src, out)
            found = True
        if not found:
            sys.exit(f"python-modules: {wheel} has no {inside}")
PY
    echo "$sum" >"$stamp"
    echo "python-modules: $requirement unpacked into target/python-modules/$target"
done
