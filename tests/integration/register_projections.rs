//! `register:` as a mapping (ansible-core 2.21's register projections) and `_task`, each
//! play checked against ansible-playbook 2.21.5 on the same play.

use crate::support::hosts::LocalHosts;
use crate::support::run::{PLAY_HEAD, TestRun, assert_contains};

/// Projections read `_task` (the latest result, the loop's result so far) and each other
/// in any order; from the first result on they are variables of the task's own
/// conditions and of the next items' `when`, which see the items before them; once the
/// task is done each is registered. One that cannot be evaluated then fails the task
/// and leaves its variable undefined, with Ansible's words for why.
#[test]
fn register_projections_follow_the_task_as_it_runs() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - command: echo {{ item }}
      loop: [1, 2, 3, 4, 5]
      when: seen | default(0) != 2
      changed_when: seen == 1
      register:
        total: seen * 10
        seen: _task.loop_result.results | length
        outputs: _task.loop_result.results | map(attribute='stdout', default='-') | list
        last_item: item
    - debug:
        msg: "{{ seen }} {{ outputs }} {{ total }} {{ last_item }}"
    - debug:
        msg: hi
      register:
        one: _task.result
        two: one.msg
        broken: _task.result.nope.deeper
      ignore_errors: true
    - debug:
        msg: "{{ two }} {{ broken | default('undefined') }}"
    - debug:
        msg: "{{ broken }}"
      ignore_errors: true
      register: used
    - debug:
        msg: "{{ used.msg }}"
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    // The third item saw two results before it: skipped.
    assert_contains(&out, r#""msg": "5 ['1', '2', '-', '4', '5'] 50 5""#);
    assert_contains(
        &out,
        "changed: [h] => (item=1)\nok: [h] => (item=2)\nskipping: [h] => (item=3) \nok: [h] => (item=4)",
    );
    assert_contains(
        &out,
        "[ERROR]: Task failed due to errors in 1 out of 3 register projections. (1 sub-exception)\n\n+--[ Sub-Event 1 of 1 ]---\n| \n| Register projection 'broken' failed: object of type 'dict' has no attribute 'nope'\n",
    );
    assert_contains(&out, r#""msg": "hi undefined""#);
    assert_contains(
        &out,
        r#""msg": "Task failed: Finalization of task args for 'ansible.builtin.debug' failed: Error while resolving value for 'msg': The variable 'broken' is undefined because its register expression failed: object of type 'dict' has no attribute 'nope'""#,
    );
    let recap = out.recap("h");
    assert_eq!(
        (recap.ok, recap.changed, recap.ignored),
        (6, 1, 2),
        "{}",
        out.stdout
    );
}
