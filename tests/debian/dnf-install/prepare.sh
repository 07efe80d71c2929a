# The local rpm repository (tests/debian/repos/rpm.sh) inside the host at /srv/rpm-repo,
# and dnf's installroot /srv/rpmroot holding tp-extra, installed by the host's own dnf,
# for the playbook to remove.
set -euo pipefail
built=$(bash "$REPO/tests/debian/repos/rpm.sh")
rm -rf "$HOST_ROOT/srv/rpm-repo"
cp -a "$built" "$HOST_ROOT/srv/rpm-repo"
mkdir -p "$HOST_ROOT/srv/rpmroot"
chroot "$HOST_ROOT" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C \
    dnf -q -y --installroot=/srv/rpmroot --releasever=12 \
    --repofrompath=prepare,file:///srv/rpm-repo --setopt=prepare.gpgcheck=0 \
    install tp-extra >/dev/null
rm -rf "$HOST_ROOT/srv/rpmroot/var/cache/dnf"
