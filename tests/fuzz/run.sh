#!/usr/bin/env bash
# Builds every fuzz target in fuzz/ (cargo fuzz, nightly) and runs each for a bounded time
# with a seed corpus taken from the repository's own files, then prints, per target, the
# executions, the seconds and the crashes found.
#
#   bash tests/fuzz/run.sh [seconds-per-target] [target...]
#
# FUZZ_NO_BUILD=1 runs the binaries built last time as they are.
#
# Needs `cargo +nightly` and cargo-fuzz. Corpora grow in target/fuzz/corpus/<target>;
# crashes land in fuzz/artifacts/<target>/ (reproduce one with
# `cargo +nightly fuzz run <target> <file>`), and each fixed one has a regression test
# in the ordinary `cargo test` suite beside the code it broke.
set -euo pipefail

seconds=${1:-60}
shift || true
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"

all_targets=(frame_agent_msg frame_controller_msg inventory_ini inventory_yaml playbook template vault)
targets=("${@:-${all_targets[@]}}")
work="$repo/target/fuzz"
mkdir -p "$work"

# The fuzz targets never start an agent: an empty file stands in for the embedded one,
# which spares build.rs a nested static build under the sanitizer's flags.
: > "$work/no-agent"
export TURBO_PLAY_PREBUILT_AGENT="$work/no-agent"

seed() { # seed <target> <file>...
    local dir="$work/corpus/$1"
    shift
    mkdir -p "$dir"
    local f
    for f in "$@"; do
        [ -f "$f" ] || continue
        cp "$f" "$dir/seed-$(printf '%s' "$f" | sha1sum | cut -c1-12)"
    done
}

seed_bytes() { # seed_bytes <target> <name> <hex>
    mkdir -p "$work/corpus/$1"
    printf '%s' "$3" | xxd -r -p > "$work/corpus/$1/seed-$2"
}

golden() { # the golden hex constant $1 from the protocol's frame tests
    sed -n "s/.*const $1: &str = \"\\([0-9a-f]*\\)\";.*/\\1/p" agent/proto/src/frame.rs
}

make_seeds() {
    # Frames: the first byte picks the mode (even: raw stream, odd: a body to frame).
    seed_bytes frame_agent_msg hello-frame "00$(golden GOLDEN_HELLO_FRAME)"
    seed_bytes frame_agent_msg hello-body "01$(golden GOLDEN_HELLO_BINCODE)"
    seed_bytes frame_agent_msg hello-frame-in-pieces "06$(golden GOLDEN_HELLO_FRAME)$(golden GOLDEN_HELLO_FRAME)"
    seed_bytes frame_controller_msg request-frame "00$(golden GOLDEN_REQUEST_FRAME)"
    seed_bytes frame_controller_msg request-body "01$(golden GOLDEN_REQUEST_BINCODE)"

    seed inventory_ini playbooks/inventory/* tests/real_roles/inventory.in \
        fuzz/seeds/inventory_ini/*
    seed inventory_yaml fuzz/seeds/inventory_yaml/* \
        $(grep -rl --include='*.yml' -e '^all:' -e 'children:' tests playbooks 2>/dev/null | head -20)
    seed playbook playbooks/*.yml tests/integration/fixtures/vault/*.yml \
        $(find tests/debian -name site.yml 2>/dev/null | head -30) \
        $(find playbooks/roles -name '*.yml' 2>/dev/null | head -20)
    seed template $(find playbooks tests -name '*.j2' -size -4k 2>/dev/null | head -30) \
        fuzz/seeds/template/*
    seed vault tests/integration/fixtures/vault/*
}

echo "== building ${#targets[@]} fuzz targets (cargo +nightly fuzz build)"
# Debug assertions on: an arithmetic overflow is a panic in `cargo test`'s builds too.
if [ -z "${FUZZ_NO_BUILD:-}" ]; then
    (cd fuzz && cargo +nightly fuzz build --debug-assertions --target-dir "$work/build")
fi
bin="$work/build/x86_64-unknown-linux-gnu/release"
make_seeds

results=()
failed=0
for t in "${targets[@]}"; do
    log="$work/$t.log"
    mkdir -p "fuzz/artifacts/$t"
    echo "== $t: ${seconds}s"
    set +e
    # -rss_limit_mb / -malloc_limit_mb: a single input may not make the process hold more
    # than 1 GiB (the frame decoder's own caps are 64 MiB compressed, 256 MiB inflated).
    # -timeout: one input taking more than 10 s is a hang.
    # The binaries cargo fuzz built, run as they are: `cargo fuzz run` would build again.
    "$bin/$t" "$work/corpus/$t" \
        -max_total_time="$seconds" -rss_limit_mb=1024 -malloc_limit_mb=1024 -timeout=10 \
        -max_len=8192 -print_final_stats=1 -artifact_prefix="$repo/fuzz/artifacts/$t/" \
        > "$log" 2>&1
    rc=$?
    set -e
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    crashes=$(find "fuzz/artifacts/$t" -type f | wc -l)
    [ "$rc" -eq 0 ] || failed=1
    results+=("$(printf '%-22s %12s %8s %8s' "$t" "${execs:-?}" "$seconds" "$crashes")")
    if [ "$rc" -ne 0 ]; then
        echo "   exit $rc; see $log"
        grep -m3 -E 'ERROR: libFuzzer|panicked at|SUMMARY' "$log" | sed 's/^/   /' || true
    fi
done

echo
printf '%-22s %12s %8s %8s\n' target executions seconds crashes
printf '%s\n' "${results[@]}"
exit "$failed"
