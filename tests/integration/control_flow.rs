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

#[test]
fn assert_and_fail_speak_ansibles_words() {
    let hosts = SshHosts::start(&["h"]);
    let out = run(
        &hosts,
        r#"  vars:
    port: 80
  tasks:
    - name: holds
      assert:
        that:
          - port == 80
          - port is number
    - name: quietly
      assert:
        that: port > 1
        success_msg: "port {{ port }} is fine"
        quiet: true
      register: quiet
    - name: does not hold
      assert:
        that:
          - port == 80
          - port == 443
        fail_msg: "port is {{ port }}"
      ignore_errors: true
      register: bad
    - copy:
        dest: ~/assert
        content: "{{ quiet.msg }}|{{ bad.assertion }}|{{ bad.evaluated_to }}|{{ bad.msg }}"
    - name: stop here
      fail:
        msg: "stopping on {{ inventory_hostname }}"
    - name: not reached
      command: touch ~/reached
"#,
    );
    out.assert_code(2);
    assert_contains(
        &out,
        "ok: [h] => {\n    \"changed\": false,\n    \"msg\": \"All assertions passed\"\n}",
    );
    assert_contains(&out, "TASK [quietly] ***");
    assert_not_contains(&out, "port 80 is fine\"\n");
    assert_contains(
        &out,
        "fatal: [h]: FAILED! => {\n    \"assertion\": \"port == 443\",\n    \"changed\": false,\n    \"evaluated_to\": false,\n    \"msg\": \"port is 80\"\n}\n...ignoring",
    );
    assert_contains(
        &out,
        "fatal: [h]: FAILED! => {\"changed\": false, \"msg\": \"stopping on h\"}",
    );
    let home = &hosts.user("h").home;
    assert_eq!(
        std::fs::read_to_string(home.join("assert")).unwrap(),
        "port 80 is fine|port == 443|False|port is 80"
    );
    assert!(!home.join("reached").exists());
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 4,
            changed: 1,
            failed: 1,
            ignored: 1,
            ..Recap::default()
        }
    );
}
