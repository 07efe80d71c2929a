#!/usr/bin/env bash
# Fetches the real-world roles that tests/integration/real_roles.rs runs, from the Python
# package registry (where these roles are published as wheels: a role of its own, or a
# collection inside the `ansible` community package), and unpacks only the needed part of
# each wheel into target/real-roles/<name>/. Versions and sha256 sums are pinned; a
# download whose sum differs is refused. Idempotent: once fetched (or with the wheels
# already in target/real-roles/downloads), it neither downloads nor needs a network.
#
# Usage: bash tests/real_roles/fetch.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
dest="$repo/target/real-roles"
downloads="$dest/downloads"

# name | package==version | sha256 of the wheel | directory inside the wheel | where it
# goes under target/real-roles/<name>/ | licence file inside the wheel
ROLES=(
    "chrony|ansible-role-chrony==1.3.0|865f0f34689b10497f7cd29c603dd6cd027f169c9a73dd1c8fe0b8b08cd513c7|ansible_role_chrony-1.3.0.data/data/share/ansible/roles/chrony|roles/chrony|ansible_role_chrony-1.3.0.dist-info/LICENSE"
    "grafana|ansible==14.5.0|245623ccc2d31d0f6f4bdb63168d550cad305fb032cc43d96e8f61ce8ab0ba84|ansible_collections/grafana/grafana|ansible_collections/grafana/grafana|ansible_collections/grafana/grafana/LICENSE"
    "openmanage|ansible==14.5.0|245623ccc2d31d0f6f4bdb63168d550cad305fb032cc43d96e8f61ce8ab0ba84|ansible_collections/dellemc/openmanage|ansible_collections/dellemc/openmanage|ansible_collections/dellemc/openmanage/LICENSE"
)

sha256() { sha256sum "$1" | cut -d' ' -f1; }

mkdir -p "$downloads"
for entry in "${ROLES[@]}"; do
    IFS='|' read -r name requirement sum inside target licence <<<"$entry"
    stamp="$dest/$name/.fetched"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" && -d "$dest/$name/$target" ]]; then
        echo "real-roles: $name already fetched"
        continue
    fi
    package=${requirement%%==*}
    version=${requirement##*==}
    wheel_prefix="$(tr '-' '_' <<<"$package")-$version-"
    wheel=$(find "$downloads" -maxdepth 1 -name "$wheel_prefix*.whl" | head -n 1)
    if [[ -z "$wheel" ]]; then
        echo "real-roles: downloading $requirement"
        python3 -m pip --version >/dev/null 2>&1 || {
            echo "real-roles: needs python3 with pip (apt-get install python3-pip)" >&2
            exit 1
        }
        # Only files are taken from the wheel, never installed: the Python version the
        # package asks for does not matter.
        python3 -m pip download --quiet --no-deps --only-binary=:all: --ignore-requires-python \
            --dest "$downloads" "$requirement"
        wheel=$(find "$downloads" -maxdepth 1 -name "$wheel_prefix*.whl" | head -n 1)
        [[ -n "$wheel" ]] || { echo "real-roles: no wheel for $requirement" >&2; exit 1; }
    fi
    got=$(sha256 "$wheel")
    if [[ "$got" != "$sum" ]]; then
        echo "real-roles: $wheel has sha256 $got, expected $sum; refusing it" >&2
        rm -f "$wheel"
        exit 1
    fi
    rm -rf "${dest:?}/$name"
    mkdir -p "$dest/$name/$target"
    # Unpacks the one directory (a big wheel holds many collections) and the licence,
    # which travels with the role.
    python3 - "$wheel" "$inside" "$dest/$name/$target" "$licence" "$dest/$name" <<'PY'
import os, shutil, sys, zipfile

wheel, inside, target, licence, licence_dir = sys.argv[1:]
prefix = inside.rstrip("/") + "/"
found = False
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if info.is_dir() or not info.filename.startswith(prefix):
            continue
        relative = info.filename[len(prefix):]
        if relative.startswith("/") or ".." in relative.split("/"):
            sys.exit(f"real-roles: {wheel} has a suspicious path {info.filename}")
        path = os.path.join(target, relative)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(info) as src, open(path, "wb") as out:
            shutil.copyfileobj(src, out)
        found = True
    if not found:
        sys.exit(f"real-roles: {wheel} has no {inside}")
    with z.open(licence) as src, open(os.path.join(licence_dir, os.path.basename(licence)), "wb") as out:
        shutil.copyfileobj(src, out)
PY
    echo "$sum" >"$stamp"
    echo "real-roles: $name $version unpacked into target/real-roles/$name/$target"
done
