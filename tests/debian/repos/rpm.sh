#!/usr/bin/env bash
# Builds the local rpm repository the dnf scenarios install from: tiny noarch packages made
# with rpmbuild from spec files written here, indexed by createrepo_c, in
# target/debian/rpm-repo (rebuilt only when this script changes: its hash is the stamp).
#
#   tp-hello 1.0-1 and 2.0-1   one package in two versions (a version, then latest)
#   tp-lib 1.0-1               a library...
#   tp-app 1.0-1               ...that this one requires
#   tp-extra 1.0-1             one a scenario's prepare.sh installs, for removing
#
# Usage: bash tests/debian/repos/rpm.sh   (prints the repository's directory)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out="$repo/target/debian/rpm-repo"
stamp=$(sha256sum "$0" | cut -c1-16)
if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]]; then
    echo "$out"
    exit 0
fi
for tool in rpmbuild createrepo_c; do
    command -v "$tool" >/dev/null || {
        echo "rpm.sh: $tool not found (needed to build the local rpm repository)" >&2
        exit 1
    }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# spec NAME VERSION [REQUIRES]
spec() {
    local name=$1 version=$2 requires=${3:-}
    {
        echo "Name: $name"
        echo "Version: $version"
        echo "Release: 1"
        echo "Summary: turbo-play test package $name"
        echo "License: MIT"
        echo "BuildArch: noarch"
        if [[ -n "$requires" ]]; then echo "Requires: $requires"; fi
        echo
        echo "%description"
        echo "A package for turbo-play's dnf tests."
        echo
        echo "%install"
        echo "mkdir -p %{buildroot}/usr/share/$name"
        echo "echo $version >%{buildroot}/usr/share/$name/version"
        echo
        echo "%files"
        echo "/usr/share/$name/version"
    } >"$work/$name-$version.spec"
    # A fixed build time and host keep the packages the same from one build to the next.
    SOURCE_DATE_EPOCH=1700000000 rpmbuild --quiet -bb \
        --define "_topdir $work/build" \
        --define "_buildhost turbo-play" \
        --define "use_source_date_epoch_as_buildtime 1" \
        --define "__os_install_post %{nil}" \
        "$work/$name-$version.spec" >/dev/null
}

spec tp-hello 1.0
spec tp-hello 2.0
spec tp-lib 1.0
spec tp-app 1.0 tp-lib
spec tp-extra 1.0

rm -rf "$out"
mkdir -p "$out"
cp "$work"/build/RPMS/noarch/*.rpm "$out/"
createrepo_c --quiet "$out" >/dev/null
echo "$stamp" >"$out/.stamp"
echo "$out"
