//! `raw` and `script`, the modules that hand a command line to the target's shell, on a
//! local host: what they run, what they register, and Ansible's words when they fail.

use std::path::Path;

use crate::support::hosts::LocalHosts;
use crate::support::run::{PLAY_HEAD, TestRun, assert_contains};

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(name).display()))
}

#[test]
fn raw_runs_through_the_shell_and_registers_unstripped_output() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - raw: echo Zażółć; echo err >&2
      register: r
    - raw: echo $0
      args: {executable: /bin/bash}
      register: b
    - raw: exit 3
      register: bad
      ignore_errors: true
    - raw: touch ~/h/never
      check_mode: true
      register: c
    - copy:
        dest: ~/h/out
        content: "{{ [r.stdout, r.stdout_lines, r.stderr, r.rc, r.changed, b.stdout_lines[0], bad.msg, bad.rc, c.skipped, c.changed] | to_json }}"
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        read(&hosts.dir("h"), "out"),
        r#"["Za\u017c\u00f3\u0142\u0107\n", ["Za\u017c\u00f3\u0142\u0107"], "err\n", 0, true, "/bin/bash", "non-zero return code", 3, true, false]"#
    );
    assert!(!hosts.dir("h").join("never").exists());
}

#[test]
fn script_copies_the_local_file_runs_it_with_its_arguments_and_cleans_up() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .file(
            "files/report.sh",
            "#!/bin/sh\necho \"args: $*\"\necho \"cwd: $(pwd)\"\necho \"opt: $option\"\necho \"self: $0\" >&2\n",
        )
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - script: report.sh --option "a b" c
      args: {chdir: /}
      environment: {option: Zażółć}
      register: s
    - script: report.sh
      args: {creates: /}
      register: skipped
    - script: report.sh
      check_mode: true
      register: checked
    - script: missing.sh
      register: missing
      ignore_errors: true
    - copy:
        dest: ~/h/out
        content: "{{ [s.stdout_lines, s.rc, s.changed, skipped.msg, checked.msg, missing.msg.splitlines()[0]] | to_json }}"
    - copy:
        dest: ~/h/self
        content: "{{ s.stderr_lines[0] | regex_replace('^self: ', '') }}"
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        read(&hosts.dir("h"), "out"),
        r#"[["args: --option a b c", "cwd: /", "opt: Za\u017c\u00f3\u0142\u0107"], 0, true, "/ exists, matching creates option", "Check mode is not supported for this task.", "Could not find or access 'missing.sh'"]"#
    );
    // The script ran from a private copy on the target, gone once it finished.
    let copy = read(&hosts.dir("h"), "self");
    assert!(copy.ends_with("/report.sh"), "{copy}");
    assert!(!Path::new(&copy).exists(), "{copy} was left behind");
}

#[test]
fn a_failing_script_says_non_zero_return_code() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .file("fail.sh", "#!/bin/sh\necho partial\nexit 4\n")
        .playbook(&format!("{PLAY_HEAD}  tasks:\n    - script: fail.sh\n"))
        .local_hosts(&hosts)
        .run();
    out.assert_code(2);
    assert_contains(&out, "non-zero return code");
    assert_contains(&out, "\"rc\": 4");
}
