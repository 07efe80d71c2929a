//! Python plugins on the controller (src/plugins/, src/template/python_plugins.rs,
//! src/modules/action_plugin.rs): filter, test, lookup and action plugins beside the
//! playbook, in a role and in a collection, a broken one, an action plugin running
//! modules and a command on the host, locally and over ssh. Ansible's side is recorded:
//! ansible-playbook 2.21.5 ran tests/plugins/playbook/site.yml on the local connection,
//! and its registered results are tests/plugins/expected-local.json.
//!
//! Lookup and action plugins import ansible-core: they run with the Python
//! `bash tests/controller_python/make.sh` prepares (without it those tests say so and
//! pass). Filters and tests that import nothing from ansible run on any python3.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::hosts::SshHosts;
use crate::support::run::{Outcome, Recap, TestRun, assert_contains};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/plugins");

/// The controller Python with ansible-core, or why the test cannot run.
fn controller_python(test: &str) -> Option<PathBuf> {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/controller-python/bin/python");
    if !python.is_file() {
        eprintln!("{test}: skipped: run `bash tests/controller_python/make.sh` first");
        return None;
    }
    Some(python)
}

/// Copies the fixture playbook's files (plugins, roles, collections) into the run.
fn with_fixture(mut run: TestRun, from: &Path, under: &Path) -> TestRun {
    for entry in std::fs::read_dir(from).expect("fixture dir") {
        let path = entry.expect("entry").path();
        let relative = under.join(path.file_name().expect("name"));
        if path.is_dir() {
            run = with_fixture(run, &path, &relative);
        } else {
            let bytes = std::fs::read(&path).expect("fixture file");
            run = run.file_bytes(relative.to_str().expect("utf-8"), &bytes);
        }
    }
    run
}

fn fixture_run() -> TestRun {
    with_fixture(
        TestRun::new(),
        &Path::new(FIXTURES).join("playbook"),
        Path::new(""),
    )
}

#[test]
fn python_plugins_register_what_ansible_registers() {
    let test = "python_plugins_register_what_ansible_registers";
    let Some(python) = controller_python(test) else {
        return;
    };
    let run = fixture_run();
    let out_dir = run.dir().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let site = std::fs::read_to_string(Path::new(FIXTURES).join("playbook/site.yml")).unwrap();
    // Kept until the end: dropping the run removes its directory.
    let run = run
        .env("TURBO_ANSIBLE_PYTHON", python.to_str().unwrap())
        .playbook(&site)
        .inventory(
            "localhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n",
        )
        .args(&["-v", "-e", &format!("d={}", out_dir.display())]);
    let out: Outcome = run.run();
    out.assert_code(0);
    assert_eq!(
        out.recap("localhost"),
        Recap {
            ok: 16,
            changed: 4,
            ignored: 4,
            ..Default::default()
        },
        "{}",
        out.stdout
    );
    let got: Value = serde_json::from_slice(
        &std::fs::read(out_dir.join("results.json"))
            .unwrap_or_else(|e| panic!("results.json: {e}\n{}", out.stdout)),
    )
    .unwrap();
    let want: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(FIXTURES).join("expected-local.json")).unwrap(),
    )
    .unwrap();
    for (task, expected) in want.as_object().unwrap() {
        assert_eq!(&got[task], expected, "{task}\n{}", out.stdout);
    }
    // The plugin's commands and modules ran on the host; in check mode the file was not
    // touched (the command, which Ansible runs even then, made it).
    assert_eq!(
        std::fs::read_to_string(out_dir.join("made.txt")).unwrap(),
        "hello"
    );
    // The action plugin's `_ansible_no_log` hides its result, and the error block names
    // an action's failure as Ansible's does.
    assert_contains(
        &out,
        "the output has been hidden due to the fact that 'no_log: true' was specified for this result",
    );
    assert!(!out.stdout.contains("secret result"), "{}", out.stdout);
    assert_contains(
        &out,
        "[ERROR]: Task failed: I am an exception from an action.",
    );
    assert_contains(&out, "The filter plugin 'broken' failed to load: boom");
}

#[test]
fn filters_and_tests_that_import_nothing_run_on_any_python3() {
    let run = TestRun::new()
        .file(
            "filter_plugins/f.py",
            "class FilterModule:\n    def filters(self):\n        return {'twice': lambda v: v * 2, 'first': lambda v, n=1: v[:n]}\n",
        )
        .file(
            "test_plugins/t.py",
            "class TestModule:\n    def tests(self):\n        return {'short': lambda v: len(v) < 3}\n",
        )
        .env("TURBO_ANSIBLE_PYTHON", "python3")
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug:\n        msg: \"{{ item | twice }} {{ 'abc' | first(n=2) }} {{ item is short }}\"\n      loop: [a, bcd]\n",
        )
        .inventory("localhost ansible_connection=local\n");
    let out = run.run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"aa ab True\"");
    assert_contains(&out, "\"msg\": \"bcdbcd ab False\"");
}

/// A Python standing in for the controller's that notes each start of the plugin host in
/// a file, so a test can count them.
fn counting_python(run: &TestRun) -> (PathBuf, PathBuf) {
    let log = run.dir().join("python-starts");
    let script = run.dir().join("counting-python");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$2\" in\n  *\"plugin host\"*) echo host >> '{}' ;;\nesac\nexec python3 \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (script, log)
}

#[test]
fn the_plugin_host_starts_once_and_only_for_python_plugins() {
    let plain = TestRun::new();
    let (python, log) = counting_python(&plain);
    let plain = plain
        .env("TURBO_ANSIBLE_PYTHON", python.to_str().unwrap())
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug:\n        msg: \"{{ [1, 2] | map('string') | join(',') }} {{ lookup('env', 'HOME') | length > 0 }}\"\n",
        )
        .inventory("localhost ansible_connection=local\n");
    let out = plain.run();
    out.assert_code(0);
    assert!(!log.exists(), "a playbook without plugins started the host");

    let plugged = TestRun::new().file(
        "filter_plugins/f.py",
        "class FilterModule:\n    def filters(self):\n        return {'twice': lambda v: v * 2}\n",
    );
    let (python, log) = counting_python(&plugged);
    let plugged = plugged
        .env("TURBO_ANSIBLE_PYTHON", python.to_str().unwrap())
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug:\n        msg: \"{{ item | twice }}\"\n      loop: [a, b, c]\n    - debug:\n        msg: \"{{ 'd' | twice }}\"\n",
        )
        .inventory("localhost ansible_connection=local\n");
    let out = plugged.run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"cc\"");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "host\n");
}

#[test]
fn an_action_plugin_without_ansible_core_fails_its_task_saying_what_to_install() {
    let run = TestRun::new()
        .file(
            "action_plugins/needs_core.py",
            "from ansible.plugins.action import ActionBase\n\nclass ActionModule(ActionBase):\n    def run(self, tmp=None, task_vars=None):\n        return {}\n",
        )
        // A Python without ansible-core, wherever it finds its modules.
        .env("TURBO_ANSIBLE_PYTHON", "/usr/bin/python3")
        .env("PYTHONPATH", "")
        .env("PATH", "/usr/bin:/bin")
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - needs_core:\n      ignore_errors: true\n    - debug: msg=after\n",
        )
        .inventory("localhost ansible_connection=local\n");
    let out = run.run();
    // The playbook loads (the action resolves to its plugin); the task fails.
    out.assert_code(0);
    assert_contains(&out, "the action plugin 'needs_core'");
    assert_contains(&out, "needs ansible-core");
    assert_contains(&out, "pip install ansible-core");
    assert_contains(&out, "\"msg\": \"after\"");
}

#[test]
fn without_any_python_the_tasks_fail_not_the_load() {
    let run = TestRun::new()
        .file(
            "action_plugins/act.py",
            "from ansible.plugins.action import ActionBase\n\nclass ActionModule(ActionBase):\n    def run(self, tmp=None, task_vars=None):\n        return {}\n",
        )
        .file(
            "filter_plugins/f.py",
            "class FilterModule:\n    def filters(self):\n        return {'twice': lambda v: v * 2}\n",
        )
        .env("TURBO_ANSIBLE_PYTHON", "/nonexistent/python3")
        .env("PATH", "/nonexistent")
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - act:\n      ignore_errors: true\n    - debug:\n        msg: \"{{ 'a' | twice }}\"\n      ignore_errors: true\n",
        )
        .inventory("localhost ansible_connection=local\n");
    let out = run.run();
    out.assert_code(0);
    assert_contains(&out, "the action plugin 'act'");
    assert_contains(&out, "turbo-play found none");
    assert_contains(&out, "apt-get install python3");
    assert_contains(&out, "No filter named 'twice' (the filter plugins in");
    assert_eq!(out.recap("localhost").ignored, 2, "{}", out.stdout);
}

#[test]
fn an_action_plugin_runs_its_modules_and_commands_over_ssh() {
    let test = "an_action_plugin_runs_its_modules_and_commands_over_ssh";
    let Some(python) = controller_python(test) else {
        return;
    };
    let hosts = SshHosts::start(&["h"]);
    let out = fixture_run()
        .env("TURBO_ANSIBLE_PYTHON", python.to_str().unwrap())
        .playbook(
            "- hosts: all\n  gather_facts: false\n  vars:\n    myvar: mine\n  tasks:\n    - runs_modules:\n        path: ~/made.txt\n        word: remote\n      register: ran\n    - tp.plug.greeter:\n        name: there\n      register: greeted\n    - copy:\n        dest: ~/results.json\n        content: \"{{ {'ran': ran, 'greeted': greeted} | to_json }}\"\n",
        )
        .inventory(&hosts.inventory())
        .args(&["-e", "ansible_python_interpreter=/usr/bin/python3"])
        .run();
    out.assert_code(0);
    let results: Value =
        serde_json::from_slice(&std::fs::read(hosts.user("h").home.join("results.json")).unwrap())
            .unwrap();
    assert_eq!(results["ran"]["content"], "remote", "{}", out.stdout);
    assert_eq!(results["ran"]["existed"], false);
    assert_eq!(results["ran"]["greeting"], "hello remote");
    assert_eq!(results["ran"]["host"], "h");
    assert_eq!(results["greeted"]["greeting"], "hi there");
    assert_eq!(results["greeted"]["through_action"], true);
    assert_eq!(
        std::fs::read_to_string(hosts.user("h").home.join("made.txt")).unwrap(),
        "remote"
    );
}
