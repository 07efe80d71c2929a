//! Task control flow over a real sshd: changed_when/failed_when/until, assert/fail,
//! handlers, block/rescue/always. What a user checks: files on the target, the recap,
//! Ansible's wording in the output.

use crate::support::hosts::SshHosts;
use crate::support::run::{Outcome, Recap, TestRun};

const PLAY_HEAD: &str = "- hosts: all\n  gather_facts: false\n";

#[track_caller]
fn assert_contains(out: &Outcome, needle: &str) {
    assert!(
        out.stdout.contains(needle),
        "expected {needle:?} in the output\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
}

#[track_caller]
fn assert_not_contains(out: &Outcome, needle: &str) {
    assert!(
        !out.stdout.contains(needle),
        "did not expect {needle:?} in the output\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
}

fn run(hosts: &SshHosts, tasks: &str) -> Outcome {
    TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{tasks}"))
        .inventory(&hosts.inventory())
        .run()
}

#[test]
fn changed_when_failed_when_and_until_judge_each_result() {
    let hosts = SshHosts::start(&["h"]);
    let out = run(
        &hosts,
        r#"  tasks:
    - name: never a change
      command: echo hi
      changed_when: false
    - name: rc 3 is fine here
      shell: exit 3
      register: three
      failed_when: three.rc not in [0, 3]
    - name: grep says FAIL
      command: echo FAIL
      register: said
      failed_when:
        - "'FAIL' in said.stdout"
        - said.rc == 0
      ignore_errors: true
    - name: count to three
      shell: n=$(cat ~/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > ~/count; echo $n
      register: counter
      until: counter.stdout == "3"
      retries: 5
      delay: 0
      changed_when: counter.attempts > 1
    - name: per item
      shell: echo {{ item }}
      loop: [a, b]
      register: items
      changed_when: item == 'b'
    - copy:
        dest: ~/summary
        content: "{{ counter.attempts }} {{ counter.stdout }} {{ three.failed }} {{ said.failed_when_result }} {{ items.results | map(attribute='changed') | list }}"
"#,
    );
    out.assert_code(0);
    let home = &hosts.user("h").home;
    assert_eq!(
        std::fs::read_to_string(home.join("summary")).unwrap(),
        "3 3 False True [False, True]"
    );
    assert_contains(&out, "ok: [h]\n\nTASK [rc 3 is fine here]");
    assert_contains(
        &out,
        "FAILED - RETRYING: [h]: count to three (5 retries left).",
    );
    assert_contains(
        &out,
        "FAILED - RETRYING: [h]: count to three (4 retries left).",
    );
    assert_not_contains(&out, "(3 retries left)");
    assert_contains(&out, "\"failed_when_result\": true");
    assert_contains(&out, "...ignoring");
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 6,
            changed: 5,
            ignored: 1,
            ..Recap::default()
        }
    );
}

#[test]
fn until_gives_up_after_the_retries_and_fails_the_host() {
    let hosts = SshHosts::start(&["h"]);
    let out = run(
        &hosts,
        r#"  tasks:
    - name: never ready
      command: echo waiting
      register: r
      until: r.stdout == 'ready'
      retries: 2
      delay: 0
    - name: not reached
      command: touch ~/reached
"#,
    );
    out.assert_code(2);
    assert_contains(&out, "(2 retries left).");
    assert_contains(&out, "(1 retries left).");
    assert_contains(&out, "fatal: [h]: FAILED! => {\"attempts\": 2,");
    assert!(!hosts.user("h").home.join("reached").exists());
    assert_eq!(out.recap("h").failed, 1);
}
