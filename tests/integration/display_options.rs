//! The default callback's options from the environment and ansible.cfg, end to end: what
//! the console shows and where, compared with ansible-playbook 2.21.5 on the same play
//! (connection local).

use crate::support::hosts::LocalHosts;
use crate::support::run::{Outcome, TestRun};

const PLAY: &str = r#"- hosts: all
  gather_facts: false
  tasks:
    - name: quiet
      command: "true"
      changed_when: false
    - name: skipped
      command: "true"
      when: false
    - name: loud
      debug:
        msg: "two\nlines"
      changed_when: true
    - name: failing
      fail:
        msg: nope
      ignore_errors: true
"#;

fn run(hosts: &LocalHosts, env: &[(&str, &str)], files: &[(&str, &str)]) -> Outcome {
    let mut run = TestRun::new().playbook(PLAY).local_hosts(hosts);
    for (key, value) in env {
        run = run.env(key, value);
    }
    for (name, text) in files {
        run = run.file(name, text);
    }
    run.run()
}

/// Hidden ok and skipped results take their banners with them, YAML dumps the rest, and
/// the failure goes to stderr (`...ignoring` stays on stdout).
#[test]
fn hidden_results_yaml_dumps_and_failures_on_stderr() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        &[
            ("ANSIBLE_DISPLAY_OK_HOSTS", "0"),
            ("ANSIBLE_DISPLAY_SKIPPED_HOSTS", "0"),
            ("ANSIBLE_CALLBACK_RESULT_FORMAT", "yaml"),
            ("ANSIBLE_DISPLAY_FAILED_STDERR", "1"),
        ],
        &[],
    );
    out.assert_code(0);
    let body = out
        .stdout
        .split("PLAY RECAP")
        .next()
        .expect("a recap")
        .to_string();
    assert_eq!(
        body,
        format!(
            "\nPLAY [all] {}\n\nTASK [loud] {}\nchanged: [h] => \n    msg: |-\n        two\n        lines\n\nTASK [failing] {}\n...ignoring\n\n",
            "*".repeat(69),
            "*".repeat(68),
            "*".repeat(65)
        )
    );
    assert!(
        out.stderr
            .ends_with("fatal: [h]: FAILED! => \n    changed: false\n    msg: nope\n"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("[ERROR]: Task failed: Action failed: nope\n")
    );
}

/// ansible.cfg's `[defaults]` sets them too; the environment wins.
#[test]
fn ansible_cfg_sets_the_options_and_the_environment_wins() {
    let hosts = LocalHosts::new(&["h"]);
    let cfg = [(
        "ansible.cfg",
        "[defaults]\ndisplay_skipped_hosts = false\nshow_task_path_on_failure = true\n",
    )];
    let out = run(&hosts, &[], &cfg);
    out.assert_code(0);
    assert!(!out.stdout.contains("TASK [skipped]"), "{}", out.stdout);
    assert!(out.stdout.contains("TASK [quiet]"), "{}", out.stdout);
    let path = out.stdout.find("task path: ").expect("a task path");
    let fatal = out.stdout.find("fatal: [h]: FAILED!").expect("the failure");
    assert!(path < fatal && out.stdout[path..].contains("/site.yml:14\n"));
    let out = run(&hosts, &[("ANSIBLE_DISPLAY_SKIPPED_HOSTS", "1")], &cfg);
    assert!(out.stdout.contains("TASK [skipped]"), "{}", out.stdout);
}

/// ANSIBLE_STRATEGY is the strategy of plays that name none (seen here by the warning
/// ansible-playbook 2.21.5 gives for any_errors_fatal under `free`); a play's own wins.
#[test]
fn the_strategy_setting_is_the_default_of_plays() {
    let hosts = LocalHosts::new(&["h"]);
    let play = |strategy: &str| {
        format!(
            "- hosts: all\n  gather_facts: false\n  any_errors_fatal: true\n{strategy}  tasks:\n    - ping:\n"
        )
    };
    let warning = "Using any_errors_fatal with the free strategy is not supported";
    let free = TestRun::new()
        .playbook(&play(""))
        .local_hosts(&hosts)
        .env("ANSIBLE_STRATEGY", "free")
        .run();
    free.assert_code(0);
    assert!(free.stderr.contains(warning), "{}", free.stderr);
    let linear = TestRun::new()
        .playbook(&play("  strategy: linear\n"))
        .local_hosts(&hosts)
        .env("ANSIBLE_STRATEGY", "free")
        .run();
    assert!(!linear.stderr.contains(warning), "{}", linear.stderr);
    // One Ansible does not know fails the play that takes it, with exit code 1.
    let bad = TestRun::new()
        .playbook(&play(""))
        .local_hosts(&hosts)
        .env("ANSIBLE_STRATEGY", "fast")
        .run();
    bad.assert_code(1);
    assert!(
        bad.stderr.contains("Invalid play strategy specified: fast"),
        "{}",
        bad.stderr
    );
}
