//! Conditionals as ansible-playbook 2.21 evaluates them and reports their failures, each
//! play checked against ansible-playbook 2.21.5 on the same play.

use crate::support::hosts::LocalHosts;
use crate::support::run::{PLAY_HEAD, TestRun, assert_contains};

/// A `break_when` that raises stops the loop and fails its item: the error's text is the
/// item's `break_when_result`, an exception the item already had (a module that crashed)
/// is kept as `break_when_suppressed_exception`, the item's own `msg` stays, and the error
/// shown is the expression's, where it is written.
#[test]
fn a_break_when_that_raises_fails_its_item_with_ansibles_error() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - ping:
        data: crash
      register: crashed
      loop: [1, 2, 3]
      loop_control:
        break_when: 1 / 0 if item == 2 else False
      ignore_errors: yes
    - debug:
        msg: hi
      register: undefined
      loop: [1, 2, 3]
      loop_control:
        break_when:
          - item == 2
          - nope
      ignore_errors: yes
    - assert:
        that:
          - crashed is failed
          - crashed.results | length == 2
          - crashed.results[0].exception is defined
          - crashed.results[0].break_when_suppressed_exception is not defined
          - 'crashed.results[1].break_when_result == "Error rendering expression: division by zero"' 
          - crashed.results[1].break_when_suppressed_exception == "(traceback unavailable)"
          - crashed.results[1].exception == "(traceback unavailable)"
          - 'crashed.results[1].msg == "Task failed: Module failed: boom"' 
          - undefined.results | length == 2
          - undefined.results[0] is not failed
          - undefined.results[1] is failed
          - undefined.results[1].msg == "hi"
          - undefined.results[1].break_when_result is search("Error while evaluating conditional. 'nope' is undefined")
          - undefined.results[1].break_when_suppressed_exception is not defined
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        "[ERROR]: A 'break_when' expression failed: Error rendering expression: division by zero\nOrigin: ",
    );
    assert_contains(
        &out,
        "site.yml:9:21\n\n7       loop: [1, 2, 3]\n8       loop_control:\n9         break_when: 1 / 0 if item == 2 else False\n                      ^ column 21\n",
    );
    assert_contains(
        &out,
        "[ERROR]: A 'break_when' expression failed: Error while evaluating conditional: 'nope' is undefined\nOrigin: ",
    );
    assert_contains(&out, "site.yml:18:13\n");
    let recap = out.recap("h");
    assert_eq!((recap.ok, recap.ignored), (3, 2), "{}", out.stdout);
}

/// ansible-core 2.21's conditions: a result's keys are no variables of their own (a
/// condition reads them through the registered name); `failed_when` and `changed_when`
/// that cannot be evaluated fail the result, keep the module's result and `msg`, and
/// record their error; a `when` or `until` that cannot be evaluated fails the task with
/// Ansible's words.
#[test]
fn conditions_that_fail_are_reported_in_ansible_2_21s_words() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - command: echo hi
      register: r
      failed_when: "'hi' in stdout"
      ignore_errors: true
    - command: echo hi
      register: r2
      changed_when: "'hi' in r2.stdout"
      failed_when: "'hi' in r2.stdout"
      ignore_errors: true
    - debug:
        msg: hi
      failed_when: true
      register: d
      ignore_errors: true
    - debug:
        msg: x
      when: nope
      ignore_errors: true
      register: w
    - command: echo hi
      until: nope
      retries: 1
      delay: 0
      register: u
      ignore_errors: true
    - assert:
        that:
          - 'r.failed_when_result == "Error while evaluating conditional: ''stdout'' is undefined"'
          - r is failed and r.exception is defined and r.stdout == 'hi'
          - r2 is changed and r2 is failed and r2.failed_when_result
          - r2.msg is search("^Task failed. Action failed. A 'failed_when' expression evaluated to 'True'.$")
          - d.msg == 'hi' and d is failed and d.exception is defined
          - w.msg is search("^Task failed. A 'when' expression failed. Error while evaluating conditional. 'nope' is undefined$")
          - u.msg is search("^Task failed. An 'until' expression failed. Error while evaluating conditional. 'nope' is undefined$")
          - u.rc is not defined and u is failed
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        "[ERROR]: Task failed: Action failed: A 'failed_when' expression failed: Error while evaluating conditional: 'stdout' is undefined\n",
    );
    assert_contains(
        &out,
        "[ERROR]: Task failed: A 'when' expression failed: Error while evaluating conditional: 'nope' is undefined\n",
    );
    let recap = out.recap("h");
    assert_eq!(
        (recap.ok, recap.changed, recap.ignored),
        (6, 2, 5),
        "{}",
        out.stdout
    );
}
