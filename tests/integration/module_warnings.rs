//! Modules' warnings and deprecations, shown as ansible-playbook 2.21.5 shows them: on
//! stderr, before the result they came with, each text once per run, also under no_log,
//! from loop items and failed modules, never in the -v dump; deprecations in Ansible's
//! words, after the note on turning them off, and none with `deprecation_warnings` off
//! (ansible.cfg or ANSIBLE_DEPRECATION_WARNINGS). A library module (fixtures/
//! module_warnings/library/warner.py), a collection's module beside the playbook and a
//! native module (command's `executable`) give them. Ansible's side is recorded:
//! fixtures/module_warnings/record.sh ran ansible-playbook on the local connection and
//! kept its output and registered results in expected/.
//!
//! Ansible's `[ERROR]: Task failed: ...` block names the temp dir record.sh ran in, which
//! the comparison puts the test's own run directory in place of; and its -v line
//! `No config file found; using defaults` is left out, not being about warnings.

use std::path::Path;

use crate::python_modules::{controller_side, with_controller};
use crate::support::hosts::SshHosts;
use crate::support::run::{Outcome, Recap, TestRun};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/integration/fixtures/module_warnings"
);

fn expected(name: &str) -> String {
    let path = Path::new(FIXTURE).join("expected").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Where record.sh ran Ansible, as the error block's `Origin:` names it.
const RECORDED_DIR: &str = "/tmp/tmp.9SWAosmMab/run/";

/// Ansible's output as a run in `dir` shows it (see the top).
fn comparable(ansible: &str, dir: &Path) -> String {
    ansible.replace(RECORDED_DIR, &format!("{}/", dir.display()))
}

/// The fixture (library/, collections/, site.yml) in a fresh run directory, ready to run
/// with the controller side of Python modules; `None` when fetch.sh has not run.
fn fixture_run(test: &str) -> Option<TestRun> {
    let (core, collections) = controller_side(test)?;
    let run = TestRun::new();
    copy_tree(Path::new(FIXTURE), run.dir());
    let site = std::fs::read_to_string(Path::new(FIXTURE).join("site.yml")).unwrap();
    Some(with_controller(run, &core, &collections).playbook(&site))
}

fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("fixture dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name");
        if name == "expected" || name == "record.sh" || name == "site.yml" {
            continue;
        }
        let dest = to.join(name);
        if path.is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
            copy_tree(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).unwrap();
        }
    }
}

fn local(run: TestRun) -> TestRun {
    let out = run.dir().join("registered.json");
    let out = out.to_str().unwrap().to_string();
    run.inventory("localhost ansible_connection=local\n")
        .args(&["-e", &format!("out={out}")])
}

fn assert_same(what: &str, got: &str, want: &str, out: &Outcome) {
    assert_eq!(
        got, want,
        "{what} differs from ansible-playbook's\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout, out.stderr
    );
}

fn assert_registered(path: &Path) {
    let got: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let want: serde_json::Value = serde_json::from_str(&expected("registered.json")).unwrap();
    assert_eq!(got, want, "registered results");
}

#[test]
fn warnings_and_deprecations_print_as_ansible_prints_them() {
    let Some(run) = fixture_run("warnings_and_deprecations_print_as_ansible_prints_them") else {
        return;
    };
    let run = local(run);
    let out = run.run();
    out.assert_code(0);
    assert_same(
        "stdout",
        &out.stdout,
        &comparable(&expected("default.stdout"), run.dir()),
        &out,
    );
    assert_same("stderr", &out.stderr, &expected("default.stderr"), &out);
    assert_registered(&run.dir().join("registered.json"));

    // Both streams as one: each warning comes just before its result's line.
    std::fs::remove_file(run.dir().join("registered.json")).unwrap();
    let both = run.through(&["sh", "-c", "exec \"$0\" \"$@\" 2>&1"]);
    let (run, both) = (&both, both.run());
    assert_same(
        "stdout and stderr",
        &both.stdout,
        &comparable(&expected("combined.stdout"), run.dir()),
        &both,
    );
}

#[test]
fn verbose_results_leave_warnings_out_of_the_dump() {
    let Some(run) = fixture_run("verbose_results_leave_warnings_out_of_the_dump") else {
        return;
    };
    let run = local(run).arg("-v");
    let out = run.run();
    out.assert_code(0);
    assert_same("stderr", &out.stderr, &expected("verbose.stderr"), &out);
    // The module tasks' lines; the native command's and copy's carry times and paths.
    let until_native = |text: &str| {
        let end = text.find("TASK [native module]").expect("the native task");
        text[..end].to_string()
    };
    assert_same(
        "stdout",
        &until_native(&out.stdout),
        &until_native(&comparable(&expected("verbose.stdout"), run.dir())),
        &out,
    );
}

#[test]
fn deprecation_warnings_false_turns_deprecations_off() {
    let test = "deprecation_warnings_false_turns_deprecations_off";
    let Some(run) = fixture_run(test) else {
        return;
    };
    let run = local(run).env("ANSIBLE_DEPRECATION_WARNINGS", "False");
    let out = run.run();
    out.assert_code(0);
    assert_same(
        "stdout",
        &out.stdout,
        &comparable(&expected("env-off.stdout"), run.dir()),
        &out,
    );
    assert_same("stderr", &out.stderr, &expected("env-off.stderr"), &out);

    let Some(run) = fixture_run(test) else {
        return;
    };
    let run = local(run).file("ansible.cfg", "[defaults]\ndeprecation_warnings = False\n");
    let out = run.run();
    out.assert_code(0);
    assert_same(
        "stdout",
        &out.stdout,
        &comparable(&expected("cfg-off.stdout"), run.dir()),
        &out,
    );
    assert_same("stderr", &out.stderr, &expected("cfg-off.stderr"), &out);
    // Turned off on the screen only: registered results keep them.
    assert_registered(&run.dir().join("registered.json"));
}

#[test]
fn warnings_over_ssh_are_the_local_runs() {
    let Some(run) = fixture_run("warnings_over_ssh_are_the_local_runs") else {
        return;
    };
    let hosts = SshHosts::start(&["h"]);
    let run = run
        .inventory(&hosts.inventory())
        .args(&["-e", "out=~/registered.json"]);
    let out = run.run();
    out.assert_code(0);
    assert_same("stderr", &out.stderr, &expected("default.stderr"), &out);
    let until_recap = |text: &str| {
        let end = text.find("PLAY RECAP").expect("a recap");
        text[..end].to_string()
    };
    let want = comparable(&expected("default.stdout"), run.dir()).replace("[localhost]", "[h]");
    assert_same(
        "stdout",
        &until_recap(&out.stdout),
        &until_recap(&want),
        &out,
    );
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 9,
            changed: 2,
            ignored: 1,
            ..Default::default()
        }
    );
    assert_registered(&hosts.user("h").home.join("registered.json"));
}

#[test]
fn json_output_keeps_warnings_in_the_results() {
    let Some(run) = fixture_run("json_output_keeps_warnings_in_the_results") else {
        return;
    };
    let out = local(run).arg("--json").run();
    out.assert_code(0);
    let events: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    let result = |task: &str| {
        events
            .iter()
            .filter(|e| e["event"] == "result" && e["task"] == task)
            .collect::<Vec<_>>()
    };
    let plain = &result("plain")[0]["result"];
    assert_eq!(plain["warnings"], serde_json::json!(["careful"]));
    assert_eq!(plain["deprecations"].as_array().map(Vec::len), Some(4));
    // Every copy stays in the data: the display's once-per-run is the console's.
    assert_eq!(
        result("the same again")[0]["result"]["warnings"],
        serde_json::json!(["careful"])
    );
    let items: Vec<&serde_json::Value> = result("loop")
        .iter()
        .map(|e| &e["result"]["warnings"][0])
        .collect();
    assert_eq!(items, ["item a", "item b", "item a"]);
    assert_eq!(
        result("hidden")[0]["result"]["warnings"],
        serde_json::json!(["said under no_log"])
    );
    assert!(
        !events.iter().any(|e| e["event"] == "warning"),
        "{}",
        out.stdout
    );
    assert_eq!(out.stderr, "", "nothing but JSON is printed");
}
