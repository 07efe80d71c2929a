# The local rpm repository (tests/debian/repos/rpm.sh) inside the host at /srv/rpm-repo,
# and an empty directory for dnf's installroot.
set -euo pipefail
built=$(bash "$REPO/tests/debian/repos/rpm.sh")
rm -rf "$HOST_ROOT/srv/rpm-repo"
cp -a "$built" "$HOST_ROOT/srv/rpm-repo"
mkdir -p "$HOST_ROOT/srv/rpmroot"
