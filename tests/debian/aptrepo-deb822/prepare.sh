#!/usr/bin/env bash
# Ansible's deb822_repository needs python3-debian on the target (turbo-play does not):
# installed from the archive the host is configured with, so both runs start alike.
set -euo pipefail
chroot "$HOST_ROOT" sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-debian >/dev/null'
