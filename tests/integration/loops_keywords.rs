//! Loop forms, loop_control, magic variables and play/task keywords on local hosts
//! (delegate_to between hosts over a real sshd). What a user checks: files on the target
//! and Ansible's wording in the output.

use std::path::Path;

use crate::support::hosts::{LocalHosts, SshHosts};
use crate::support::run::{PLAY_HEAD, TestRun, assert_contains, assert_not_contains};

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
}

#[test]
fn every_with_form_gives_ansibles_items() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  vars:
    users: {alice: 1, bob: 2}
    people:
      - {name: a, keys: [k1, k2]}
      - {name: b, keys: [k3]}
  tasks:
    - command: echo {{ item.key }}={{ item.value }}
      with_dict: "{{ users }}"
      register: d
    - debug: msg="{{ item }}"
      with_nested: [[x, y], [1, 2]]
      register: n
    - debug: msg="{{ item }}"
      with_cartesian: [[x], [1, 2]]
      register: c
    - debug: msg="{{ item }}"
      with_together: [[x, y, z], [1, 2]]
      register: t
    - debug: msg="{{ item.0.name }}-{{ item.1 }}"
      with_subelements: ["{{ people }}", keys]
      register: s
    - debug: msg="{{ item.0 }}:{{ item.1 }}"
      with_indexed_items: [a, b]
      register: ix
    - debug: msg="{{ item | basename }}"
      with_fileglob: "{{ playbook_dir }}/files/*.txt"
      register: g
    - debug: msg="{{ item | basename }}"
      with_first_found: [missing.txt, b.txt]
      register: ff
    - debug: msg="{{ item }}"
      with_list: [[1, 2], 3]
      register: wl
    - debug: msg="{{ item }}"
      with_items: [[1, 2], 3]
      register: wi
    - copy:
        dest: ~/loops
        content: |
          {{ d.results | map(attribute='stdout') | list }}
          {{ n.results | map(attribute='msg') | list }}
          {{ c.results | map(attribute='msg') | list }}
          {{ t.results | map(attribute='msg') | list }}
          {{ s.results | map(attribute='msg') | list }}
          {{ ix.results | map(attribute='msg') | list }}
          {{ g.results | map(attribute='msg') | sort }}
          {{ ff.results | map(attribute='msg') | list }}
          {{ wl.results | map(attribute='msg') | list }}
          {{ wi.results | map(attribute='msg') | list }}
"#
        ))
        .file("files/a.txt", "a")
        .file("files/b.txt", "b")
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        read(hosts.home(), "loops"),
        "['alice=1', 'bob=2']\n\
         [['x', 1], ['x', 2], ['y', 1], ['y', 2]]\n\
         [['x', 1], ['x', 2]]\n\
         [['x', 1], ['y', 2], ['z', None]]\n\
         ['a-k1', 'a-k2', 'b-k3']\n\
         ['0:a', '1:b']\n\
         ['a.txt', 'b.txt']\n\
         ['b.txt']\n\
         [[1, 2], 3]\n\
         [1, 2, 3]\n"
    );
    assert_contains(&out, "changed: [h] => (item={'key': 'alice', 'value': 1})");
}

#[test]
fn loop_control_names_labels_and_describes_items() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - command: echo {{ ansible_loop.index }}/{{ ansible_loop.length }} {{ ansible_loop.revindex0 }} {{ ansible_loop.first }} {{ ansible_loop.last }} {{ ansible_loop.previtem | default('-') }} {{ ansible_loop.nextitem | default('-') }} {{ idx }} {{ it }} {{ ansible_loop.allitems | length }}
      loop: [a, b, c]
      loop_control:
        loop_var: it
        index_var: idx
        label: "L{{ it }}"
        extended: true
      register: lc
    - copy:
        dest: ~/control
        content: "{{ lc.results | map(attribute='stdout') | join('|') }} {{ lc.results[1].it }} {{ lc.results[2].idx }} {{ lc.results[0].ansible_loop_var }}"
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        read(hosts.home(), "control"),
        "1/3 2 True False - b 0 a 3|2/3 1 False False a c 1 b 3|3/3 0 False True b - 2 c 3 b 2 it"
    );
    assert_contains(&out, "changed: [h] => (item=La)");
    assert_contains(&out, "changed: [h] => (item=Lc)");
    assert_not_contains(&out, "(item=a)");
}

#[test]
fn loop_pause_runs_items_apart() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - shell: date +%s%N
      loop: [1, 2, 3]
      loop_control:
        pause: 0.6
      register: p
    - copy:
        dest: ~/times
        content: "{{ p.results | map(attribute='stdout') | join(',') }}"
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let times: Vec<u128> = read(hosts.home(), "times")
        .split(',')
        .map(|t| t.trim().parse().unwrap())
        .collect();
    assert_eq!(times.len(), 3);
    for pair in times.windows(2) {
        let gap_ms = (pair[1] - pair[0]) / 1_000_000;
        assert!(gap_ms >= 550, "items ran {gap_ms} ms apart: {times:?}");
    }
}

#[test]
fn magic_variables_reach_other_hosts_and_the_run() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  vars:
    play_only: p
  tasks:
    - set_fact:
        mine: "set-{{ inventory_hostname }}"
    - command: echo reg-{{ inventory_hostname }}
      register: said
    - copy:
        dest: ~/{{ inventory_hostname }}/magic
        content: |
          {{ hostvars['h2'].gv }} {{ hostvars['h2'].hv | default('none') }} {{ hostvars['h1'].hv | default('none') }}
          {{ hostvars['h2'].mine }} {{ hostvars['h2'].said.stdout }} {{ hostvars['h1'].inventory_hostname }}
          {{ hostvars['h2'].play_only | default('no play vars') }} {{ hostvars | list | sort }}
          {{ ansible_play_hosts_all }} {{ ansible_run_tags }} {{ ansible_skip_tags }}
          {{ ansible_version.major }}.{{ ansible_version.minor }} {{ ansible_version.full is version('2.21', '>=') }}
          {{ inventory_dir == playbook_dir }} {{ inventory_file | basename }}
"#
        ))
        .file("group_vars/all.yml", "gv: g\n")
        .file("host_vars/h2.yml", "hv: only-h2\n")
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let expected = "g only-h2 none\n\
                    set-h2 reg-h2 h1\n\
                    no play vars ['h1', 'h2']\n\
                    ['h1', 'h2'] ['all'] []\n\
                    2.21 True\n\
                    True hosts\n";
    assert_eq!(read(&hosts.dir("h1"), "magic"), expected);
    assert_eq!(read(&hosts.dir("h2"), "magic"), expected);
}

#[test]
fn run_once_runs_on_the_first_host_and_shares_its_result() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - shell: echo {{ inventory_hostname }} >> ~/{{ inventory_hostname }}/ran; echo {{ inventory_hostname }}
      run_once: true
      register: once
    - set_fact:
        chosen: "{{ inventory_hostname }}"
      run_once: true
    - copy:
        dest: ~/{{ inventory_hostname }}/once
        content: "{{ once.stdout }} {{ chosen }}"
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(read(&hosts.dir("h1"), "ran"), "h1\n");
    assert!(!hosts.dir("h2").join("ran").exists());
    assert_eq!(read(&hosts.dir("h1"), "once"), "h1 h1");
    assert_eq!(read(&hosts.dir("h2"), "once"), "h1 h1");
}

#[test]
fn delegate_to_runs_through_the_other_hosts_connection() {
    let hosts = SshHosts::start(&["h1", "h2"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - copy:
        dest: ~/delegated
        content: "from {{ inventory_hostname }}"
      delegate_to: h2
      when: inventory_hostname == 'h1'
    - local_action: command echo {{ inventory_hostname }}
      register: local
      when: inventory_hostname == 'h1'
    - copy:
        dest: ~/local
        content: "{{ local.stdout }}"
      when: inventory_hostname == 'h1'
"#
        ))
        .inventory(&hosts.inventory())
        .run();
    out.assert_code(0);
    assert_eq!(read(&hosts.user("h2").home, "delegated"), "from h1");
    assert!(!hosts.user("h1").home.join("delegated").exists());
    assert_eq!(read(&hosts.user("h1").home, "local"), "h1");
    assert_contains(&out, "changed: [h1 -> h2]");
    assert_contains(&out, "changed: [h1 -> localhost]");
}

#[test]
fn environment_reaches_commands_and_no_log_hides_results() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  environment:
    FROM_PLAY: play
    BOTH: play
  vars:
    secret: hunter2
  tasks:
    - block:
        - shell: echo "$FROM_PLAY $FROM_BLOCK $BOTH $N"
          environment:
            BOTH: task
            N: 3
          register: env
      environment:
        FROM_BLOCK: "{{ 'blo' ~ 'ck' }}"
    - command: echo {{ secret }}
      no_log: true
      register: hidden
    - shell: echo {{ item }}-{{ secret }}
      loop: [a]
      no_log: true
    - copy:
        dest: ~/env
        content: "{{ env.stdout }} {{ hidden.stdout }}"
"#,
        )
        .arg("-v")
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(read(hosts.home(), "env"), "play block task 3 hunter2");
    assert_contains(
        &out,
        "\"censored\": \"the output has been hidden due to the fact that 'no_log: true' was specified for this result\"",
    );
    assert_contains(&out, "(item=(censored due to no_log))");
    assert_not_contains(&out, "hunter2");
}

#[test]
fn throttle_limits_hosts_running_a_task_at_once() {
    let hosts = LocalHosts::new(&["h1", "h2", "h3"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - shell: date +%s%N; sleep 0.4; date +%s%N
      throttle: 1
      register: span
    - copy:
        dest: ~/{{ inventory_hostname }}/span
        content: "{{ span.stdout_lines | join(' ') }}"
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let mut spans: Vec<(u128, u128)> = ["h1", "h2", "h3"]
        .iter()
        .map(|h| {
            let text = read(&hosts.dir(h), "span");
            let (a, b) = text.split_once(' ').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    spans.sort();
    for pair in spans.windows(2) {
        assert!(pair[1].0 >= pair[0].1, "runs overlapped: {spans:?}");
    }
}

#[test]
fn any_errors_fatal_and_max_fail_percentage_stop_every_host() {
    let hosts = LocalHosts::new(&["h1", "h2", "h3"]);
    let tasks = r#"  tasks:
    - fail:
        msg: boom
      when: inventory_hostname == 'h1'
    - copy:
        dest: ~/{{ inventory_hostname }}/after
        content: x
"#;
    // ansible-playbook 2.21 ends an any_errors_fatal play quietly, but says "NO MORE
    // HOSTS LEFT" when max_fail_percentage is exceeded.
    for (head, banner) in [
        (
            "- hosts: all\n  gather_facts: false\n  any_errors_fatal: true\n",
            false,
        ),
        (
            "- hosts: all\n  gather_facts: false\n  max_fail_percentage: 30\n",
            true,
        ),
    ] {
        let out = TestRun::new()
            .playbook(&format!("{head}{tasks}"))
            .local_hosts(&hosts)
            .run();
        out.assert_code(2);
        assert_eq!(
            out.stdout.contains("NO MORE HOSTS LEFT"),
            banner,
            "{}",
            out.stdout
        );
        for h in ["h1", "h2", "h3"] {
            assert!(!hosts.dir(h).join("after").exists(), "{head}: {h}");
        }
    }
    // 1 of 3 failed is not more than 50%: the others go on.
    let out = TestRun::new()
        .playbook(&format!(
            "- hosts: all\n  gather_facts: false\n  max_fail_percentage: 50\n{tasks}"
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(2);
    assert!(hosts.dir("h2").join("after").exists());
}

#[test]
fn serial_runs_batches_in_turn_in_the_play_order() {
    let hosts = LocalHosts::new(&["b", "c", "a"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  serial: [1, "50%"]
  order: sorted
  tasks:
    - command: echo {{ ansible_play_batch | join(',') }}
      register: batch
    - copy:
        dest: ~/{{ inventory_hostname }}/batch
        content: "{{ batch.stdout }}"
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(read(&hosts.dir("a"), "batch"), "a");
    assert_eq!(read(&hosts.dir("b"), "batch"), "b");
    assert_eq!(read(&hosts.dir("c"), "batch"), "c");
    assert_eq!(out.stdout.matches("PLAY [all]").count(), 3);
    let first_a = out.stdout.find("changed: [a]").unwrap();
    let first_b = out.stdout.find("changed: [b]").unwrap();
    let first_c = out.stdout.find("changed: [c]").unwrap();
    assert!(first_a < first_b && first_b < first_c, "{}", out.stdout);
}

/// With one fork the hosts take turns in the play's order (`order:` included), as
/// Ansible's: the shared file lists them in that order.
#[test]
fn one_fork_runs_the_hosts_in_the_play_order() {
    let hosts = LocalHosts::new(&["hb", "ha", "hd", "hc"]);
    let shared = hosts.dir("ha").join("order.txt");
    for order in ["inventory", "reverse_sorted"] {
        let _ = std::fs::remove_file(&shared);
        let out = TestRun::new()
            .playbook(&format!(
                "- hosts: all\n  gather_facts: false\n  order: {order}\n  tasks:\n    \
                 - shell: echo {{{{ inventory_hostname }}}} >> {}\n",
                shared.display()
            ))
            .local_hosts(&hosts)
            .args(&["--forks", "1"])
            .run();
        out.assert_code(0);
        let expected = match order {
            "inventory" => "hb\nha\nhd\nhc\n",
            _ => "hd\nhc\nhb\nha\n",
        };
        assert_eq!(
            std::fs::read_to_string(&shared).unwrap(),
            expected,
            "{order}"
        );
    }
}

#[test]
fn strategy_free_lets_fast_hosts_run_ahead() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  strategy: free
  tasks:
    - shell: "sleep {{ 1.5 if inventory_hostname == 'h1' else 0 }}; date +%s%N"
      register: first
    - shell: date +%s%N
      register: second
    - copy:
        dest: ~/{{ inventory_hostname }}/times
        content: "{{ first.stdout }} {{ second.stdout }}"
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let times = |h: &str| -> (u128, u128) {
        let text = read(&hosts.dir(h), "times");
        let (a, b) = text.split_once(' ').unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    };
    let (slow_first, _) = times("h1");
    let (_, fast_second) = times("h2");
    assert!(
        fast_second < slow_first,
        "h2 waited for h1: {fast_second} >= {slow_first}"
    );
}

#[test]
fn ignore_unreachable_keeps_the_host_in_the_play() {
    let hosts = LocalHosts::new(&["h"]);
    let inventory = format!(
        "{}{}\n",
        hosts.inventory(),
        crate::support::hosts::refusing_host_line("down")
    );
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - command: echo hi
      ignore_unreachable: true
      register: r
    - debug:
        msg: "unreachable={{ r.unreachable | default(false) }}"
"#
        ))
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(&out, "fatal: [down]: UNREACHABLE! =>");
    assert_contains(&out, "...ignoring");
    assert_contains(&out, "\"msg\": \"unreachable=True\"");
    let down = out.recap("down");
    assert_eq!((down.ok, down.ignored, down.unreachable), (2, 1, 0));

    // On the play, every task takes it on.
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  ignore_unreachable: true\n{}",
            "  tasks:\n    - command: echo hi\n    - command: echo again\n"
        ))
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    out.assert_code(0);
    assert_not_contains(&out, "not supported yet");
    let down = out.recap("down");
    assert_eq!((down.ok, down.ignored, down.unreachable), (2, 2, 0));
}

#[test]
fn pause_waits_once_for_every_host_and_never_prompts() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let started = std::time::Instant::now();
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - pause:
        seconds: 1
      register: waited
    - pause:
        prompt: Continue?
    - copy:
        dest: ~/{{ inventory_hostname }}/paused
        content: "{{ waited.stdout }}"
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let elapsed = started.elapsed();
    assert!(elapsed >= std::time::Duration::from_secs(1), "{elapsed:?}");
    assert_eq!(read(&hosts.dir("h1"), "paused"), "Paused for 1.0 seconds");
    assert_eq!(read(&hosts.dir("h2"), "paused"), "Paused for 1.0 seconds");
    assert_contains(&out, "[WARNING]:");
    assert_contains(
        &out,
        "Not waiting for response to prompt as stdin is not interactive",
    );
    assert_eq!(out.stdout.matches("ok: [h2]").count(), 0, "{}", out.stdout);
}

#[test]
fn add_host_and_group_by_change_the_inventory_for_later_plays() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  tasks:
    - group_by:
        key: "grp_{{ inventory_hostname }}"
    - add_host:
        name: extra
        groups: added
        ansible_connection: "{{ hostvars['h2'].ansible_connection }}"
        role: added-at-run-time
- hosts: added
  gather_facts: false
  tasks:
    - copy:
        dest: ~/added
        content: "{{ inventory_hostname }} {{ group_names }} {{ role }}"
- hosts: grp_h1
  gather_facts: false
  tasks:
    - copy:
        dest: ~/{{ inventory_hostname }}/grouped
        content: "{{ groups['grp_h1'] }} {{ groups['added'] }} {{ hostvars['extra'].role }}"
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    // Only `extra` runs the second play: its file is the one in the shared home.
    assert_eq!(
        read(hosts.home(), "added"),
        "extra ['added'] added-at-run-time"
    );
    assert_eq!(
        read(&hosts.dir("h1"), "grouped"),
        "['h1'] ['extra'] added-at-run-time"
    );
    assert!(!hosts.dir("h2").join("grouped").exists());
}

#[test]
fn run_once_on_a_play_reaches_every_task_unless_a_task_says_otherwise() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  run_once: yes
  tasks:
    - shell: echo {{ inventory_hostname }} >> ~/ran
    - shell: echo {{ inventory_hostname }} >> ~/{{ inventory_hostname }}/each
      run_once: false
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(read(hosts.home(), "ran"), "h1\n");
    assert_eq!(read(&hosts.dir("h1"), "each"), "h1\n");
    assert_eq!(read(&hosts.dir("h2"), "each"), "h2\n");
    assert!(!out.stderr.contains("run_once"), "{}", out.stderr);
}

#[test]
fn variables_naming_the_loop_variable_take_each_items_value() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  vars:
    base: "~/h/out"
    dir: "{{ base }}/{{ test_id }}"
    named: "{{ dir }}-{{ idx }}"
  tasks:
    - file:
        path: "{{ named }}"
        state: directory
      loop: [a, b]
      loop_control:
        loop_var: test_id
        index_var: idx
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert!(hosts.dir("h").join("out/a-0").is_dir());
    assert!(hosts.dir("h").join("out/b-1").is_dir());
}

#[test]
fn throttle_holds_across_hosts_under_the_free_strategy() {
    let hosts = LocalHosts::new(&["h1", "h2", "h3"]);
    // `mkdir` fails when another host holds the directory: any overlap fails a host.
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  strategy: free
  tasks:
    - shell: mkdir ~/busy && sleep 0.3 && rmdir ~/busy
      throttle: 1
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    for host in ["h1", "h2", "h3"] {
        assert_eq!(out.recap(host).changed, 1, "{host}");
    }
}

#[test]
fn retries_may_name_the_loop_variables() {
    let hosts = LocalHosts::new(&["h"]);
    // Item idx succeeds on its (idx + 2)th run, which its own retries allow.
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - shell: echo run >> ~/h/{{ name }} && wc -l < ~/h/{{ name }} | tr -d ' '
      register: runs
      until: runs.stdout | int == idx + 2
      retries: "{{ idx + 1 }}"
      delay: 0
      loop: [a, b]
      loop_control:
        loop_var: name
        index_var: idx
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(read(&hosts.dir("h"), "a"), "run\nrun\n");
    assert_eq!(read(&hosts.dir("h"), "b"), "run\nrun\nrun\n");
}

/// ansible-playbook 2.21 on the same play: `module_defaults` of the play reach its fact
/// gathering and tasks, a block's entry for a module replaces the play's whole, templates
/// in them are rendered with the task's variables, and what a task writes wins.
#[test]
fn module_defaults_fill_in_what_tasks_leave_out() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  module_defaults:
    setup: {gather_subset: ['!all']}
    copy: {mode: '0600'}
    ansible.builtin.debug: {msg: 'hello {{ who }}'}
  vars:
    who: world
  tasks:
    - assert:
        that: [ansible_mounts is not defined, ansible_distribution is defined]
    - copy: {content: a, dest: ~/a}
    - copy: {content: b, dest: ~/b, mode: '0644'}
    - debug:
      register: d1
    - block:
        - debug:
          register: d2
        - copy: {content: c, dest: ~/c}
        - file: {state: touch}
      module_defaults:
        debug: {}
        file: {path: ~/touched, mode: '0640'}
    - debug:
        msg: '{{ d1.msg }}|{{ d2.msg }}'
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"hello world|Hello world!\"");
    let mode = |name: &str| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(hosts.home().join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}", out.stdout))
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(
        [mode("a"), mode("b"), mode("c"), mode("touched")],
        [0o600, 0o644, 0o600, 0o640]
    );
    let recap = out.recap("h");
    assert_eq!((recap.ok, recap.changed), (9, 4), "{}", out.stdout);
}

/// ansible-playbook 2.21 on the same play: `break_when` stops the loop after the item for
/// which it holds (each item judged with its result under the `register` name before the
/// next runs), and loop_control values Ansible cannot use fail the task when it runs.
#[test]
fn break_when_stops_a_loop_and_bad_loop_control_fails_at_run_time() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - command: echo {{ item }}
      loop: [a, b, c, d]
      register: r
      loop_control:
        break_when:
          - r.stdout == 'b'
    - debug:
        msg: "{{ r.results | map(attribute='stdout') | list }} {{ r.results | map(attribute='break_when_result') | list }}"
    - debug:
      loop: [1]
      loop_control:
        pause: soon
      ignore_errors: true
      register: p
    - debug:
      loop: [1]
      loop_control:
        index_var: "0"
      ignore_errors: true
      register: iv
    - debug:
      loop: [1, 2]
      loop_control:
        break_when: {nope: sorry}
      ignore_errors: true
      register: bad
    - debug:
        msg: "{{ p.msg }} | {{ iv.msg }} | {{ bad.msg }} | {{ bad.results | length }} {{ bad.results[0].break_when_result }}"
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        out.stdout.matches("changed: [h] => (item=").count(),
        2,
        "{}",
        out.stdout
    );
    assert_contains(&out, r#""msg": "['a', 'b'] [False, True]""#);
    assert_contains(
        &out,
        r#""msg": "Error processing keyword 'pause': The value 'soon' could not be converted to 'float'. | Invalid 'index_var': Invalid variable name '0'. | One or more items failed | 1 Conditional expressions must be strings.""#,
    );
    let recap = out.recap("h");
    assert_eq!(
        (recap.ok, recap.changed, recap.ignored),
        (6, 1, 3),
        "{}",
        out.stdout
    );
}

/// ansible-playbook 2.21 on the same play: a play environment that reads `ansible_env`
/// leaves that entry out while facts are gathered (the other entries reach the setup
/// module's environment, so its `ansible_env` shows them), then applies it to commands.
#[test]
fn a_play_environment_reading_ansible_env_waits_for_the_facts() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  environment:
    PATH: '{{ ansible_env.PATH + ":/lola" }}'
    lola: ido
  tasks:
    - assert:
        that:
          - "'/lola' not in ansible_env.PATH"
          - ansible_env.lola == 'ido'
    - shell: echo "$lola $PATH"
      register: r
    - debug:
        msg: "{{ r.stdout.endswith(':/lola') }} {{ r.stdout.split(' ')[0] }}"
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"True ido\"");
    assert_eq!(out.recap("h"), crate::support::run::recap(4, 1));
}

/// `with_first_found` as ansible-playbook 2.21.5 takes its terms: an undefined term, or an
/// undefined item of a list variable, is passed over; a mapping's paths apply to its own
/// names; an undefined keyword argument of the lookup names the variable; a failing loop
/// template is Ansible's "Error rendering template".
#[test]
fn first_found_passes_over_undefined_terms() {
    let out = TestRun::new()
        .inventory("localhost ansible_connection=local\n")
        .playbook(
            r#"- hosts: localhost
  gather_facts: false
  tasks:
    - debug: msg="{{ item | basename }}"
      with_first_found:
        - "{{ nope }}"
        - files: "{{ names }}"
          paths: [sub]
      vars:
        names: ["{{ missing }}a.txt", b.txt]
      register: found
    - debug:
        msg: "{{ lookup('first_found', files=unset) }}"
      vars:
        unset: "{{ sorry_not_defined }}"
      register: kwarg
      ignore_errors: true
    - debug:
      with_first_found:
        - "{{ 1 / 0 }}"
      register: divided
      ignore_errors: true
    - assert:
        that:
          - found.results | map(attribute='msg') | list == ['b.txt']
          - >-
            kwarg.msg is contains "Error while resolving value for 'msg': 'sorry_not_defined' is undefined"
          - >-
            divided.msg == "Error rendering template: division by zero"
"#,
        )
        .file("sub/b.txt", "b")
        .file("b.txt", "top")
        .run();
    out.assert_code(0);
}
