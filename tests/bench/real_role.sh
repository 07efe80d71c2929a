#!/usr/bin/env bash
# Benchmark on real content: a real-world role scenario of tests/real_roles/ (default
# chrony-full: ansible-role-chrony 1.3.0 with every template branch, facts gathered; also
# otel-collector, otel-collector-include, dell-kickstart, chrony) run by
# turbo-play, ansible-playbook (pipelining) and Ansible+Mitogen against one throw-away sshd
# on 127.0.0.1, directly and through ../shared/delay-proxy.py (15 ms each way). Every run's
# recap must equal Ansible's recorded one. Not a test; not run in CI.
#
#   sudo tests/bench/real_role.sh                 # needs tests/bench/run.sh's venv (.bench/venv)
#   BENCH_RUNS=5 BENCH_SCENARIO=chrony tests/bench/real_role.sh
set -euo pipefail

ROOT=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
SCENARIO=${BENCH_SCENARIO:-chrony-full}
RUNS=${BENCH_RUNS:-3}
DELAY_MS=${BENCH_DELAY_MS:-15}
VENV="$ROOT/.bench/venv"
TURBO="$ROOT/target/release/turbo-play"
HERE="$ROOT/tests/real_roles"

[[ $EUID -eq 0 ]] || { echo "run as root (the role sets owner root)" >&2; exit 1; }
[[ -x "$VENV/bin/ansible-playbook" ]] || { echo "no $VENV: run tests/bench/run.sh once" >&2; exit 1; }
[[ "${BENCH_SKIP_BUILD:-}" == 1 ]] || cargo build --release --quiet
bash "$HERE/fetch.sh" >/dev/null

work=$(mktemp -d)
chmod 755 "$work"
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

# shellcheck source=tests/real_roles/loopback.sh
source "$HERE/loopback.sh"
loopback_sshd "$work"
pids+=("$sshd_pid")
proxy_port=$(free_port)
python3 "$ROOT/../shared/delay-proxy.py" "$proxy_port" "$port" "$DELAY_MS" >/dev/null 2>&1 &
pids+=($!)
wait_port "$proxy_port"

# The proxy forwards to the same sshd: one more known_hosts line for its port.
echo "[127.0.0.1]:$proxy_port $(cut -d' ' -f1,2 "$work/host_key.pub")" >>"$work/known_hosts"
real_roles_paths "$ROOT"
strategy=$("$VENV/bin/python" -c 'import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))')/plugins/strategy
# One run: prints seconds; fails unless the recap equals the one Ansible left in
# expected/$4 (recap.txt for a first run, recap-again.txt for the steady state).
run_once() {
    local tool=$1 inv=$2 out=$3 expected log="$work/last.log" start end recap
    expected=$(cat "$HERE/$SCENARIO/expected/$4")
    local cmd=("$VENV/bin/ansible-playbook")
    local env=(ANSIBLE_ROLES_PATH="$roles_path" ANSIBLE_COLLECTIONS_PATH="$collections_path" ANSIBLE_NOCOLOR=1 ANSIBLE_PIPELINING=1 ANSIBLE_RETRY_FILES_ENABLED=0)
    case $tool in
        turbo-play) cmd=("$TURBO") ;;
        mitogen) env+=(ANSIBLE_STRATEGY=mitogen_linear ANSIBLE_STRATEGY_PLUGINS="$strategy") ;;
    esac
    start=$(date +%s.%N)
    env "${env[@]}" "${cmd[@]}" -i "$inv" "$HERE/$SCENARIO/site.yml" -e "out_dir=$out" >"$log" 2>&1 || {
        cat "$log" >&2
        exit 1
    }
    end=$(date +%s.%N)
    recap=$(grep '^loopback' "$log" | tr -s ' ' | sed 's/ *$//' | tail -n 1)
    [[ "$recap" == "$expected" ]] || { echo "$tool: recap '$recap' != Ansible's '$expected'" >&2; exit 1; }
    python3 -c "print(f'{$end - $start:.3f}')"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "| $SCENARIO, steady state (median of $RUNS) | turbo-play | Ansible+Mitogen | Ansible |"
echo "|---|---|---|---|"
for link in "loopback:$port" "${DELAY_MS} ms each way:$proxy_port"; do
    name=${link%%:*}
    inv=$(loopback_inventory "$work" "${link##*:}")
    declare -A took=()
    for tool in turbo-play mitogen ansible; do
        out="$work/out-$tool-${link##*:}"
        mkdir -p "$out"
        run_once "$tool" "$inv" "$out" recap.txt >/dev/null # the first run writes the file
        took[$tool]=$(for _ in $(seq "$RUNS"); do run_once "$tool" "$inv" "$out" recap-again.txt; done | median)
    done
    ratio() { python3 -c "print(f'{${took[$1]} / ${took[turbo-play]}:.0f}')"; }
    echo "| $name | ${took[turbo-play]} s | ${took[mitogen]} s ($(ratio mitogen)×) | ${took[ansible]} s ($(ratio ansible)×) |"
done
