#!/usr/bin/env bash
# Builds a tiny local apt repository (a flat `./` archive made with dpkg-deb and
# apt-ftparchive) into target/debian/deb-repo, for the apt scenarios' prepare.sh to copy
# into a test host. Cached by this script's hash: the repository is rebuilt only when the
# script changes. Prints the repository's directory.
#
#   bash deb.sh                  build (or find) the repository
#   bash deb.sh into HOST_ROOT   also copy it into a started test host as /opt/turbo-repo,
#                                write its apt source ([trusted=yes]) and fetch its lists
#                                only (the archive's lists of the base stay as they are)
#
# The packages (all Architecture: all, a few bytes each):
#   turbo-lib 1.0     a file under /usr/share; what turbo-conf depends on
#   turbo-conf 1.0    a conffile /etc/turbo-conf/turbo.conf; depends on turbo-lib
#   turbo-multi 1.0   /usr/share/turbo-multi/version, in two versions for latest,
#   turbo-multi 2.0   upgrade, version pins and allow_downgrade
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo_root=$(cd "$here/../../.." && pwd)
stamp=$(sha256sum "$here/deb.sh" | cut -c1-16)
out="$repo_root/target/debian/deb-repo"

# into HOST_ROOT: the built repository inside the host, and apt knowing it.
into_host() {
    local root=$1
    rm -rf "$root/opt/turbo-repo"
    mkdir -p "$root/opt"
    cp -r "$out" "$root/opt/turbo-repo"
    chmod -R a+rX "$root/opt/turbo-repo"
    echo "deb [trusted=yes] file:/opt/turbo-repo ./" >"$root/etc/apt/sources.list.d/turbo.list"
    env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C chroot "$root" apt-get update -qq \
        -o Dir::Etc::SourceList=/etc/apt/sources.list.d/turbo.list \
        -o Dir::Etc::SourceParts=- -o APT::Get::List-Cleanup=0 >/dev/null
}

if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]]; then
    if [[ "${1:-}" == into ]]; then into_host "$2"; fi
    echo "$out"
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# package NAME VERSION DEPENDS FILE CONTENT [conffile]
package() {
    local name=$1 version=$2 depends=$3 file=$4 content=$5 conffile=${6:-}
    local dir="$work/$name-$version"
    mkdir -p "$dir/DEBIAN" "$dir$(dirname "$file")"
    printf '%s\n' "$content" >"$dir$file"
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: all"
        echo "Maintainer: turbo-play tests <tests@invalid>"
        echo "Section: misc"
        echo "Priority: optional"
        [[ -n "$depends" ]] && echo "Depends: $depends"
        echo "Description: turbo-play apt test package $name"
        echo " A package that holds $file, for the apt module's tests."
    } >"$dir/DEBIAN/control"
    if [[ -n "$conffile" ]]; then echo "$file" >"$dir/DEBIAN/conffiles"; fi
    # Fixed times and owners: the same script makes the same bytes.
    find "$dir" -exec touch -h -d @1700000000 {} +
    SOURCE_DATE_EPOCH=1700000000 dpkg-deb --root-owner-group -Zgzip --build "$dir" \
        "$work/pool/${name}_${version}_all.deb" >/dev/null
}

mkdir -p "$work/pool"
package turbo-lib 1.0 "" /usr/share/turbo-lib/README "turbo-lib 1.0"
package turbo-conf 1.0 "turbo-lib" /etc/turbo-conf/turbo.conf "setting = packaged" conffile
package turbo-multi 1.0 "" /usr/share/turbo-multi/version "1.0"
package turbo-multi 2.0 "" /usr/share/turbo-multi/version "2.0"

(cd "$work/pool" && apt-ftparchive packages . >Packages && gzip -9kn Packages &&
    apt-ftparchive -o APT::FTPArchive::Release::Origin=turbo-play \
        -o APT::FTPArchive::Release::Label=turbo-play \
        -o APT::FTPArchive::Release::Suite=turbo-tests release . >Release)

rm -rf "$out"
mkdir -p "$(dirname "$out")"
cp -r "$work/pool" "$out"
echo "$stamp" >"$out/.stamp"
if [[ "${1:-}" == into ]]; then into_host "$2"; fi
echo "$out"
