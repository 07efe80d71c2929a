#!/bin/sh
# WANT_JSON
printf '{"changed": true, "args": %s}' "$(cat "$1" | head -c 40 >/dev/null; echo 1)"
