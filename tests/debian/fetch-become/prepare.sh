#!/usr/bin/env bash
# fetch writes on the controller: start from no earlier copies (record.sh and the test both
# run this before the first run).
set -euo pipefail
rm -rf /tmp/turbo-play-fetch-become
