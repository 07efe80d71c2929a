//! `ansible` (the binary invoked under that name, or `turbo-play adhoc`): one module on
//! the hosts of a pattern, its output, exit code and what it leaves on the hosts. The
//! expected texts are what ansible 2.21.5 printed for the same commands on the same
//! inventory (local hosts).

use crate::support::hosts::{LocalHosts, refusing_host_line};
use crate::support::run::{Outcome, TestRun};

fn ansible(hosts: &LocalHosts, args: &[&str]) -> Outcome {
    TestRun::new()
        .invoked_as("ansible")
        .local_hosts(hosts)
        .args(args)
        .run()
}

#[test]
fn modules_print_json_and_commands_their_output() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = ansible(&hosts, &["all", "-f", "1", "-m", "ping"]);
    out.assert_code(0);
    assert_eq!(
        out.stdout,
        "h1 | SUCCESS => {\n    \"changed\": false,\n    \"ping\": \"pong\"\n}\n\
         h2 | SUCCESS => {\n    \"changed\": false,\n    \"ping\": \"pong\"\n}\n"
    );

    let out = ansible(
        &hosts,
        &[
            "all",
            "-f",
            "1",
            "-m",
            "shell",
            "-a",
            "echo made > ~/{{ inventory_hostname }}/made; echo done",
        ],
    );
    out.assert_code(0);
    assert_eq!(
        out.stdout,
        "h1 | CHANGED | rc=0 >>\ndone\nh2 | CHANGED | rc=0 >>\ndone\n"
    );
    for host in ["h1", "h2"] {
        let made = std::fs::read_to_string(hosts.dir(host).join("made")).unwrap();
        assert_eq!(made, "made\n");
    }

    // `command` is the default module; -e reaches the templates.
    let out = ansible(&hosts, &["h1", "-a", "echo {{ word }}", "-e", "word=hi"]);
    out.assert_code(0);
    assert_eq!(out.stdout, "h1 | CHANGED | rc=0 >>\nhi\n");

    let out = ansible(
        &hosts,
        &[
            "h1",
            "-m",
            "debug",
            "-a",
            "msg={{ greeting }}",
            "-e",
            "greeting=hello",
        ],
    );
    out.assert_code(0);
    assert_eq!(out.stdout, "h1 | SUCCESS => {\n    \"msg\": \"hello\"\n}\n");
}

#[test]
fn a_failed_host_exits_2_and_an_unreachable_one_4() {
    let hosts = LocalHosts::new(&["h1"]);
    let out = ansible(
        &hosts,
        &["h1", "-m", "shell", "-a", "echo out; echo err >&2; exit 3"],
    );
    out.assert_code(2);
    assert_eq!(
        out.stdout,
        "[ERROR]: Task failed: Module failed: The command exited with a non-zero return code.\n\
         Origin: <adhoc 'shell' task>\n\n\
         {'action': 'shell', 'args': {'_raw_params': 'echo out; echo err >&2; exit 3'}, 'timeout': 0, 'async_val': 0, 'poll': 15}\n\n\
         h1 | FAILED | rc=3 >>\nouterrThe command exited with a non-zero return code.\n"
    );
    let out = ansible(&hosts, &["h1", "-m", "fail", "-a", "msg=boom"]);
    out.assert_code(2);
    assert_eq!(
        out.stdout,
        "[ERROR]: Task failed: Action failed: boom\n\
         Origin: <adhoc 'fail' task>\n\n\
         {'action': 'fail', 'args': {'msg': 'boom'}, 'timeout': 0, 'async_val': 0, 'poll': 15}\n\n\
         h1 | FAILED! => {\n    \"changed\": false,\n    \"msg\": \"boom\"\n}\n"
    );

    let run = TestRun::new()
        .invoked_as("ansible")
        .inventory(&format!("{}\n", refusing_host_line("down")))
        .args(&["down", "-m", "ping"]);
    let out = run.run();
    out.assert_code(4);
    let task = "\n\n{'action': 'ping', 'args': {}, 'timeout': 0, 'async_val': 0, 'poll': 15}\n\n";
    let (error, result) = out.stdout.split_once(task).expect("the error block");
    assert!(
        error.starts_with("[ERROR]: Task failed: "),
        "{}",
        out.stdout
    );
    assert!(
        error.ends_with("\nOrigin: <adhoc 'ping' task>"),
        "{}",
        out.stdout
    );
    assert!(
        result.starts_with("down | UNREACHABLE! => {\n    \"changed\": false,\n    \"msg\": "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.ends_with("    \"unreachable\": true\n}\n"),
        "{}",
        out.stdout
    );
}

#[test]
fn one_line_tree_and_check_mode() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = ansible(&hosts, &["all", "-f", "1", "-a", "echo one-line", "-o"]);
    out.assert_code(0);
    assert_eq!(
        out.stdout,
        "h1 | CHANGED | rc=0 | (stdout) one-line\nh2 | CHANGED | rc=0 | (stdout) one-line\n"
    );
    assert!(
        out.stderr
            .contains("[DEPRECATION WARNING]: The '-o' argument is deprecated."),
        "{}",
        out.stderr
    );

    let tree = hosts.home().join("tree");
    let out = ansible(&hosts, &["h1", "-m", "ping", "-t", tree.to_str().unwrap()]);
    out.assert_code(0);
    let written = std::fs::read_to_string(tree.join("h1")).expect("the tree file");
    assert_eq!(written, "{\"changed\": false, \"ping\": \"pong\"}");

    let out = ansible(
        &hosts,
        &["h1", "-C", "-m", "copy", "-a", "content=x dest=~/h1/copied"],
    );
    out.assert_code(0);
    assert_eq!(out.stdout, "h1 | CHANGED => {\n    \"changed\": true\n}\n");
    assert!(!hosts.dir("h1").join("copied").exists());

    // -D shows the diff above the result, followed by a blank line.
    let file = hosts.dir("h1").join("f.txt");
    std::fs::write(&file, "old\n").unwrap();
    let dest = format!("dest={}", file.display());
    let out = ansible(
        &hosts,
        &[
            "h1",
            "-C",
            "-D",
            "-m",
            "copy",
            "-a",
            &format!("content=new {dest}"),
        ],
    );
    out.assert_code(0);
    let path = file.display();
    assert_eq!(
        out.stdout,
        format!(
            "--- before: {path}\n+++ after: {path}\n@@ -1 +1 @@\n-old\n+new\n\\ No newline at end of file\n\n\
             h1 | CHANGED => {{\n    \"changed\": true\n}}\n"
        )
    );
}

#[test]
fn list_hosts_limits_and_patterns_that_match_nothing() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = ansible(&hosts, &["all", "-l", ",,h2", "--list-hosts"]);
    out.assert_code(0);
    assert_eq!(out.stdout, "  hosts (1):\n    h2\n");
    // An empty limit or pattern part is no restriction.
    let out = ansible(&hosts, &[",,", "--limit", ",", "--list-hosts"]);
    assert_eq!(out.stdout, "  hosts (2):\n    h1\n    h2\n");

    let out = ansible(&hosts, &["zz", "-m", "ping"]);
    out.assert_code(0);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "[WARNING]: Could not match supplied host pattern, ignoring: zz\n\
         [WARNING]: No hosts matched, nothing to do\n"
    );
    let out = ansible(&hosts, &["all", "-l", "zz", "-m", "ping"]);
    out.assert_code(1);
    assert!(
        out.stderr.ends_with(
            "[ERROR]: Specified inventory, host pattern and/or --limit leaves us with no hosts to target.\n"
        ),
        "{}",
        out.stderr
    );
    let out = ansible(&hosts, &["all", "-m", "shell"]);
    out.assert_code(5);
    assert_eq!(out.stderr, "[ERROR]: No argument passed to shell module\n");
}

#[test]
fn the_subcommand_is_the_same_command() {
    let hosts = LocalHosts::new(&["h1"]);
    let out = TestRun::new()
        .subcommand("adhoc")
        .local_hosts(&hosts)
        .args(&["h1", "-m", "ping", "--one-line"])
        .run();
    out.assert_code(0);
    assert_eq!(
        out.stdout,
        "h1 | SUCCESS => {\"changed\": false,\"ping\": \"pong\"}\n"
    );
}

#[test]
fn verbose_names_the_config_file_and_sets_ansible_verbosity() {
    let hosts = LocalHosts::new(&["h1"]);
    let out = ansible(
        &hosts,
        &[
            "h1",
            "-m",
            "debug",
            "-a",
            "msg={{ ansible_verbosity }}",
            "-v",
        ],
    );
    out.assert_code(0);
    assert_eq!(
        out.stdout,
        "No config file found; using defaults\nh1 | SUCCESS => {\n    \"msg\": 1\n}\n"
    );
}

#[test]
fn version_is_ansibles_shape_with_the_config_file() {
    let run = TestRun::new()
        .invoked_as("ansible")
        .file("ansible.cfg", "[defaults]\nforks = 3\n")
        .arg("--version");
    let out = run.run();
    out.assert_code(0);
    let mut lines = out.stdout.lines();
    assert_eq!(
        lines.next(),
        Some(
            format!(
                "ansible [core 2.21.5] (turbo-play {})",
                env!("CARGO_PKG_VERSION")
            )
            .as_str()
        )
    );
    let config = run.dir().join("ansible.cfg");
    assert_eq!(
        lines.next(),
        Some(format!("  config file = {}", config.display()).as_str())
    );
}

/// ansible 2.21 prints setup's facts in full (its minimal callback dumps the result), where
/// a playbook's display never shows them, not even with -v or in `--json`.
#[test]
fn setup_prints_the_facts_ad_hoc_but_never_in_a_playbook() {
    let hosts = LocalHosts::new(&["h1"]);
    let out = ansible(&hosts, &["h1", "-m", "setup", "-a", "gather_subset=!all"]);
    out.assert_code(0);
    let json = out
        .stdout
        .strip_prefix("h1 | SUCCESS => ")
        .unwrap_or_else(|| panic!("{}", out.stdout));
    let result: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(result["ansible_facts"]["ansible_system"], "Linux");
    assert_eq!(result["changed"], false);
    assert!(result.get("_ansible_verbose_override").is_none(), "{json}");

    for flag in ["-v", "--json"] {
        let out = TestRun::new()
            .playbook("- hosts: all\n  tasks: []\n")
            .local_hosts(&hosts)
            .arg(flag)
            .run();
        out.assert_code(0);
        assert!(!out.stdout.contains("ansible_system"), "{}", out.stdout);
    }
}
