# The local repository (tests/debian/repos/deb.sh) inside the host, with its apt source.
set -euo pipefail
bash "$REPO/tests/debian/repos/deb.sh" into "$HOST_ROOT" >/dev/null
# What the playbook removes: turbo-conf (and turbo-lib, automatically) and turbo-multi.
env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C DEBIAN_FRONTEND=noninteractive \
    chroot "$HOST_ROOT" apt-get install -qq -y turbo-conf turbo-multi >/dev/null
