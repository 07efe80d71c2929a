# The local repository (tests/debian/repos/deb.sh) inside the host, with its apt source.
set -euo pipefail
bash "$REPO/tests/debian/repos/deb.sh" into "$HOST_ROOT" >/dev/null
