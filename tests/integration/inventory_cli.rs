//! `ansible-inventory` (the binary invoked under that name, or `turbo-play inventory`):
//! each view of one inventory with nesting, inline, group_vars/ and host_vars/ variables,
//! a group priority and non-ASCII text, byte for byte as ansible-inventory 2.21.5 printed
//! it on the same files (recorded in fixtures/inventory_cli/; the TOML files with the
//! tomli-w 1.2.0 library it needs for `--toml` on its path).

use std::path::{Path, PathBuf};

use crate::support::run::{Outcome, TestRun};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/fixtures/inventory_cli")
}

fn recorded(name: &str) -> String {
    std::fs::read_to_string(fixtures().join(name)).expect("recorded output")
}

fn inventory(args: &[&str]) -> Outcome {
    let hosts = fixtures().join("hosts.ini");
    TestRun::new()
        .invoked_as("ansible-inventory")
        .args(&["-i", hosts.to_str().expect("utf-8 path")])
        .args(args)
        .run()
}

#[track_caller]
fn assert_prints(args: &[&str], expected: &str) {
    let out = inventory(args);
    out.assert_code(0);
    assert_eq!(out.stdout, recorded(expected), "ansible-inventory {args:?}");
}

#[test]
fn list_and_host_print_the_inventory_script_json() {
    assert_prints(&["--list"], "list.json");
    assert_prints(&["--host", "web2"], "host_web2.json");
    assert_prints(&["--list", "--export"], "export.json");
    // -e joins every host's variables; --limit keeps the hosts it names.
    assert_prints(
        &["--list", "-l", "db1,lonely", "-e", "extra=1"],
        "list_limited.json",
    );
}

#[test]
fn graph_yaml_and_toml_views() {
    assert_prints(&["--graph", "--vars"], "graph_vars.txt");
    assert_prints(&["--graph", "prod", "-l", "web1"], "graph_prod.txt");
    assert_prints(&["--list", "-y"], "list.yaml");
    assert_prints(&["--list", "--toml"], "list.toml");
    assert_prints(&["--list", "--toml", "--export"], "export.toml");
}

#[test]
fn output_file_and_the_subcommand() {
    let output = tempfile::tempdir().expect("tempdir");
    let dest = output.path().join("inventory.json");
    let hosts = fixtures().join("hosts.ini");
    let out = TestRun::new()
        .subcommand("inventory")
        .args(&["-i", hosts.to_str().unwrap()])
        .args(&["--list", "--output", dest.to_str().unwrap()])
        .run();
    out.assert_code(0);
    assert_eq!(out.stdout, "");
    // The file holds the text without the line break the screen gets.
    let written = std::fs::read_to_string(&dest).expect("--output file");
    assert_eq!(format!("{written}\n"), recorded("list.json"));
}

#[test]
fn wrong_actions_are_refused_as_ansible_does() {
    let out = inventory(&[]);
    out.assert_code(5);
    assert_eq!(
        out.stderr,
        "[ERROR]: No action selected, at least one of --host, --graph or --list needs to be specified.\n"
    );
    // A usage error is argparse's 2.
    let out = inventory(&["--list", "--bogus"]);
    out.assert_code(2);
    let out = inventory(&["--list", "--graph"]);
    out.assert_code(5);
    assert!(
        out.stderr.contains("Conflicting options used"),
        "{}",
        out.stderr
    );
    let out = inventory(&["--host", "prod"]);
    out.assert_code(5);
    assert!(
        out.stderr
            .contains("You must pass a single valid host to --host parameter"),
        "{}",
        out.stderr
    );
    let out = inventory(&["--graph", "nosuchgroup"]);
    out.assert_code(5);
    assert!(
        out.stderr
            .contains("Pattern must be valid group name when using --graph")
    );
}

/// A source no parser reads is left out with warnings, as Ansible does (its yaml parser
/// refuses a number as a host name), and the command goes on with what is left.
#[test]
fn an_unparsable_source_is_a_warning() {
    let source = fixtures().join("int_hostname.yml");
    let out = TestRun::new()
        .invoked_as("ansible-inventory")
        .args(&["-i", source.to_str().unwrap(), "--list"])
        .run();
    out.assert_code(0);
    assert_eq!(out.stdout, recorded("int_hostname_list.json"));
    assert!(
        out.stderr.contains(
            "Host pattern 1234 must be a string. Enclose integers/floats in quotation marks."
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&format!(
            "[WARNING]: Unable to parse {} as an inventory source\n",
            source.display()
        )),
        "{}",
        out.stderr
    );
}

/// A playbook that happens to be named like a command still runs as a playbook.
#[test]
fn a_playbook_named_inventory_is_a_playbook() {
    let run = TestRun::new().subcommand("inventory").file(
        "inventory",
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - debug:\n        msg: ran\n",
    );
    let out = run.run();
    out.assert_code(0);
    assert!(out.stdout.contains("\"msg\": \"ran\""), "{}", out.stdout);
}
