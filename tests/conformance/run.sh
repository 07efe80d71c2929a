#!/usr/bin/env bash
# Runs Ansible's integration targets against turbo-play: see run.py for what it does.
# Usage: bash tests/conformance/run.sh [--check-baseline] [TARGET ...]
exec python3 "$(dirname "$0")/run.py" "$@"
