//! The `[ERROR]: Task failed: ...` block ansible-playbook 2.21.5 prints on stdout above a
//! failed result's line: an action's or a module's failure, the task's origin (its file
//! made absolute, line and column) and the two lines above it, numbered, with a
//! `^ column N` marker; also under ignore_errors and in a rescued block, once for loop
//! items failing alike, and again for another task failing with the same words.
//! fixtures/task_errors/record.sh recorded Ansible's output on the local connection.

use std::path::Path;

use crate::support::run::TestRun;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/integration/fixtures/task_errors"
);

#[test]
fn failed_tasks_show_their_error_origin_and_source() {
    let read = |name: &str| std::fs::read_to_string(Path::new(FIXTURE).join(name)).unwrap();
    let run = TestRun::new()
        .inventory("localhost ansible_connection=local\n")
        .playbook(&read("site.yml"));
    let out = run.run();
    out.assert_code(2);
    let dir = format!("{}/", run.dir().display());
    let want = read("expected/default.stdout").replace("RUN_DIR/", &dir);
    assert_eq!(out.stdout, want, "stderr:\n{}", out.stderr);
    assert_eq!(out.stderr, read("expected/default.stderr"));
}
