#!/usr/bin/env bash
# Builds the wheels the pip scenarios install from (pip --no-index --find-links), into
# target/debian/wheels, without any network: tiny pure-Python packages whose sources this
# script writes, zipped as wheels by python3's zipfile.
#   tinypkg 1.0 and 2.0   (two versions: pins, upgrades, latest)
#   withdep 1.0           (requires tinypkg>=1.5: a dependency pip must pull in)
#   otherpkg 0.1          (installed and removed again)
# Cached by this script's hash: rerunning it with the same script does nothing.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../../.." && pwd)
out="$repo/target/debian/wheels"
stamp=$(sha256sum "$0" | cut -c1-16)
if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" ]]; then
    exit 0
fi
rm -rf "$out"
mkdir -p "$out"

python3 - "$out" <<'PY'
import base64, hashlib, sys, zipfile

out = sys.argv[1]

def record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"

def wheel(name, version, requires=()):
    info = f"{name}-{version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nSummary: turbo-play test package\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name}/__init__.py": f'VERSION = "{version}"\n',
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: turbo-play-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/top_level.txt": f"{name}\n",
    }
    lines = [record_line(p, d.encode()) for p, d in files.items()]
    lines.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = "\n".join(lines) + "\n"
    path = f"{out}/{name}-{version}-py3-none-any.whl"
    # Fixed times: the same script gives the same bytes.
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for p, d in files.items():
            entry = zipfile.ZipInfo(p, date_time=(2020, 1, 1, 0, 0, 0))
            entry.external_attr = 0o644 << 16
            z.writestr(entry, d)

wheel("tinypkg", "1.0")
wheel("tinypkg", "2.0")
wheel("withdep", "1.0", ["tinypkg>=1.5"])
wheel("otherpkg", "0.1")
PY
echo "$stamp" >"$out/.stamp"
