#!/usr/bin/env bash
# Fetches the real-world roles that tests/integration/real_roles.rs runs, from the Python
# package registry (where these roles are published as wheels), and unpacks each into
# target/real-roles/<name>/roles/<role>. Versions and sha256 sums are pinned; a download
# whose sum differs is refused. Idempotent: once fetched (or with the wheels already in
# target/real-roles/downloads), it neither downloads nor needs a network.
#
# Usage: bash tests/real_roles/fetch.sh
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
dest="$repo/target/real-roles"
downloads="$dest/downloads"

# name | package==version | sha256 of the wheel | role directory inside the wheel's data
ROLES=(
    "chrony|ansible-role-chrony==1.3.0|865f0f34689b10497f7cd29c603dd6cd027f169c9a73dd1c8fe0b8b08cd513c7|share/ansible/roles/chrony"
)

sha256() { sha256sum "$1" | cut -d' ' -f1; }

mkdir -p "$downloads"
for entry in "${ROLES[@]}"; do
    IFS='|' read -r name requirement sum role_dir <<<"$entry"
    stamp="$dest/$name/.fetched"
    role_name=$(basename "$role_dir")
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$sum" && -d "$dest/$name/roles/$role_name" ]]; then
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
        python3 -m pip download --quiet --no-deps --only-binary=:all: \
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
    unpacked=$(mktemp -d)
    python3 -m zipfile -e "$wheel" "$unpacked"
    source_dir=$(find "$unpacked" -maxdepth 3 -type d -path "*.data/data" | head -n 1)
    if [[ -z "$source_dir" || ! -d "$source_dir/$role_dir" ]]; then
        echo "real-roles: $wheel has no $role_dir" >&2
        rm -rf "$unpacked"
        exit 1
    fi
    rm -rf "${dest:?}/$name"
    mkdir -p "$dest/$name/roles"
    cp -R "$source_dir/$role_dir" "$dest/$name/roles/$role_name"
    # The role's licence travels with it.
    find "$unpacked" -maxdepth 2 -path "*.dist-info/LICENSE*" -exec cp {} "$dest/$name/" \;
    rm -rf "$unpacked"
    echo "$sum" >"$stamp"
    echo "real-roles: $name $version unpacked into target/real-roles/$name/roles/$role_name"
done
