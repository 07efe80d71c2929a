#!/usr/bin/env bash
# Benchmark of what users do most: become, packages and services, on real Debian 12 hosts
# (tests/debian/build-base.sh's base, one overlay per host, sshd on loopback; see
# tests/debian/host.sh), run by turbo-play, ansible-playbook (pipelining) and
# Ansible+Mitogen in the same run. Not a test; not run in CI.
#
#   (1) web: a web-server-shaped playbook through sudo: install cron from the Debian archive
#       (its .debs pre-downloaded once, so no tool waits on the network), template its
#       config, notify a restart handler, ensure the service runs; first run on fresh hosts,
#       then the rerun (changed=0)
#   (2) no-op apt and no-op pip tasks: a play of 1 and of 21 such tasks; the per-task cost
#       is the difference over 20
#   (3) the same on 3 hosts
#
#   sudo tests/bench/packages.sh         # needs tests/bench/run.sh's venv (.bench/venv)
#   BENCH_RUNS=5 BENCH_HOSTS="1 3" BENCH_TOOLS="turbo-play mitogen" tests/bench/packages.sh
set -euo pipefail

ROOT=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
RUNS=${BENCH_RUNS:-3}
HOST_COUNTS=${BENCH_HOSTS:-1 3}
TOOLS=${BENCH_TOOLS:-turbo-play mitogen ansible}
VENV="$ROOT/.bench/venv"
TURBO="$ROOT/target/release/turbo-play"

[[ $EUID -eq 0 ]] || { echo "run as root (Debian hosts need namespaces and chroot)" >&2; exit 1; }
[[ -x "$VENV/bin/ansible-playbook" ]] || { echo "no $VENV: run tests/bench/run.sh once" >&2; exit 1; }
[[ "${BENCH_SKIP_BUILD:-}" == 1 ]] || cargo build --release --quiet
bash "$ROOT/tests/debian/build-base.sh" >/dev/null
# shellcheck source=tests/debian/host.sh
source "$ROOT/tests/debian/host.sh"
debian_base "$ROOT"

work=$(mktemp -d "$ROOT/target/debian/bench-XXXXXX")
hosts=()
stop_all() {
    local h
    for h in "${hosts[@]}"; do
        read -r host_pid host_init _ <<<"$h"
        debian_host_stop
    done
    hosts=()
}
cleanup() { stop_all; rm -rf "$work"; }
trap cleanup EXIT

# cron's .debs from the archive, once: every first run installs from the same local files.
debs="$ROOT/target/debian/bench-debs"
if [[ ! -f "$debs/.ready" ]]; then
    mkdir -p "$work/fetch" "$debs"
    debian_host_start "$work/fetch" bench-fetch
    debian_host_run apt-get install -y -qq --download-only cron >/dev/null
    cp "$host_root"/var/cache/apt/archives/*.deb "$debs/"
    debian_host_stop
    touch "$debs/.ready"
fi

# Starts $1 fresh hosts, each with the .debs in apt's cache and a venv for pip; writes the
# inventory to $work/inventory.
start_hosts() {
    local n=$1 i dir name
    stop_all
    : >"$work/inventory"
    for i in $(seq "$n"); do
        name=bench-$i
        dir="$work/host-$i-$RANDOM"
        debian_host_start "$dir" "$name"
        cp "$debs"/*.deb "$host_root/var/cache/apt/archives/"
        debian_host_run python3 -m venv /opt/venv
        debian_host_line "$dir" "$name" >>"$work/inventory"
        hosts+=("$host_pid $host_init $dir")
    done
}

cat >"$work/web.yml" <<'EOF'
- hosts: all
  become: true
  gather_facts: false
  tasks:
    - name: the package
      apt:
        name: cron
        state: present
    - name: its configuration
      template:
        src: cron.default.j2
        dest: /etc/default/cron
        mode: "0644"
      notify: restart cron
    - name: the service runs
      service:
        name: cron
        state: started
  handlers:
    - name: restart cron
      service:
        name: cron
        state: restarted
EOF
cat >"$work/cron.default.j2" <<'EOF'
# Managed by the benchmark for {{ inventory_hostname }}.
EXTRA_OPTS="-L 15"
EOF
# $1 tasks of $2 (apt or pip), each a no-op on the base.
noop_play() {
    local n=$1 kind=$2 i
    echo "- hosts: all"
    echo "  become: true"
    echo "  gather_facts: false"
    echo "  tasks:"
    for i in $(seq "$n"); do
        case $kind in
            apt) echo "    - apt: {name: openssh-server, state: present}" ;;
            pip) echo "    - pip: {name: pip, virtualenv: /opt/venv}" ;;
        esac
    done
}
for kind in apt pip; do
    noop_play 1 "$kind" >"$work/noop-$kind-1.yml"
    noop_play 21 "$kind" >"$work/noop-$kind-21.yml"
done

strategy=$("$VENV/bin/python" -c 'import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))')/plugins/strategy
: >"$work/ansible.cfg"
# One run of playbook $2 by tool $1: prints seconds; fails unless the recap says changed=$3
# on every host (- for any).
run_once() {
    local tool=$1 playbook=$2 want_changed=$3 log="$work/last.log" start end
    local cmd=("$VENV/bin/ansible-playbook")
    local env=(ANSIBLE_CONFIG="$work/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_PIPELINING=1 ANSIBLE_RETRY_FILES_ENABLED=0)
    case $tool in
        turbo-play) cmd=("$TURBO") ;;
        mitogen) env+=(ANSIBLE_STRATEGY=mitogen_linear ANSIBLE_STRATEGY_PLUGINS="$strategy") ;;
    esac
    start=$(date +%s.%N)
    (cd "$work" && env "${env[@]}" "${cmd[@]}" -i "$work/inventory" "$playbook") >"$log" 2>&1 || {
        cat "$log" >&2
        echo "bench: $tool $playbook failed" >&2
        exit 1
    }
    end=$(date +%s.%N)
    if [[ "$want_changed" != - ]] && grep '^bench-' "$log" | grep -qv "changed=$want_changed "; then
        cat "$log" >&2
        echo "bench: $tool $playbook: not changed=$want_changed everywhere" >&2
        exit 1
    fi
    python3 -c "print(f'{$end - $start:.3f}')"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ratio() { python3 -c "print(f'{$1 / $2:.1f}')"; }

declare -A took=()
for n in $HOST_COUNTS; do
    for tool in $TOOLS; do
        first=()
        again=()
        for _ in $(seq "$RUNS"); do
            start_hosts "$n"
            first+=("$(run_once "$tool" "$work/web.yml" -)")
            again+=("$(run_once "$tool" "$work/web.yml" 0)")
        done
        took[$n,$tool,web-first]=$(printf '%s\n' "${first[@]}" | median)
        took[$n,$tool,web-again]=$(printf '%s\n' "${again[@]}" | median)
        for kind in apt pip; do
            one=$(for _ in $(seq "$RUNS"); do run_once "$tool" "$work/noop-$kind-1.yml" 0; done | median)
            many=$(for _ in $(seq "$RUNS"); do run_once "$tool" "$work/noop-$kind-21.yml" 0; done | median)
            took[$n,$tool,$kind-one]=$one
            took[$n,$tool,$kind-task]=$(python3 -c "print(f'{($many - $one) / 20:.4f}')")
        done
        echo "bench: $n host(s), $tool done" >&2
    done
done
stop_all

echo "| packages and services (median of $RUNS, seconds) | hosts | turbo-play | Ansible+Mitogen | Ansible |"
echo "|---|---|---|---|---|"
for n in $HOST_COUNTS; do
    for row in web-first web-again apt-one apt-task pip-one pip-task; do
        line="| $row | $n"
        base=${took[$n,turbo-play,$row]:-}
        for tool in turbo-play mitogen ansible; do
            value=${took[$n,$tool,$row]:-}
            if [[ -z "$value" ]]; then
                line+=" | -"
            elif [[ "$tool" == turbo-play || -z "$base" ]]; then
                line+=" | $value"
            else
                line+=" | $value ($(ratio "$value" "$base")×)"
            fi
        done
        echo "$line |"
    done
done
