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
