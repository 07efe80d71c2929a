//! set_stats, gather_facts, wait_for_connection, validate_argument_spec, getent and
//! command/shell arguments against what ansible-playbook
//! 2.21 did with the same playbooks (`-c local`, recorded here as data).

use crate::support::hosts::{LocalHosts, SshHosts};
use crate::support::run::{Recap, TestRun, recap};

const SET_STATS: &str = r#"- hosts: all
  gather_facts: false
  tasks:
    - set_stats: {data: {count: 1, names: ["{{ inventory_hostname }}"], nested: {a: 1}}}
    - set_stats: {data: {count: 2, nested: {b: 2}}}
    - set_stats: {data: {mine: "{{ inventory_hostname }}", n: 1}, per_host: true}
    - set_stats: {data: {n: 5}, per_host: true, aggregate: false}
    - set_stats: {data: {looped: "{{ item }}"}}
      loop: [1, 2]
    - set_stats: {data: "notadict"}
      ignore_errors: true
    - set_stats: {data: {x: 1}}
"#;

/// The end of ansible-playbook 2.21's output with ANSIBLE_SHOW_CUSTOM_STATS=1.
const CUSTOM_STATS: &str = "\n\nCUSTOM STATS: ******************************************************************\n\
\th1: { \"mine\": \"h1\", \"n\": 5}\n\
\th2: { \"mine\": \"h2\", \"n\": 5}\n\
\n\
\tRUN: { \"count\": 6, \"looped\": 6, \"names\": [  \"h1\",  \"h2\" ], \"nested\": {  \"a\": 1,  \"b\": 2 }, \"x\": 2}\n\n";

#[test]
fn set_stats_adds_up_and_the_recap_shows_them_as_ansible_does() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let run = || TestRun::new().playbook(SET_STATS).local_hosts(&hosts);
    let shown = run().env("ANSIBLE_SHOW_CUSTOM_STATS", "1").run();
    shown.assert_code(0);
    let expected = Recap {
        ignored: 1,
        ..recap(7, 0)
    };
    assert_eq!(shown.recap("h1"), expected, "{}", shown.stdout);
    // Hosts run in parallel: "names" is in the order they got there, as in Ansible.
    let tail = shown.stdout.replace("\"h2\",  \"h1\"", "\"h1\",  \"h2\"");
    assert!(tail.ends_with(CUSTOM_STATS), "{}", shown.stdout);
    let quiet = run().run();
    assert!(!quiet.stdout.contains("CUSTOM STATS"), "{}", quiet.stdout);
}

#[test]
fn gather_facts_is_setup_with_parallel_accepted() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  tasks:
    - gather_facts: {parallel: true, gather_subset: ["!all", "!min", "distribution"]}
      register: gathered
    - assert:
        that:
          - ansible_distribution is defined
          - gathered.ansible_facts.gather_subset == ["!all", "!min", "distribution"]
          - gathered is not changed
    - gather_facts: {bogus: 1}
      ignore_errors: true
      register: bad
    - assert:
        that:
          - 'bad.msg == "The following modules failed to execute: ansible.legacy.setup."'
          - 'bad.failed_modules["ansible.legacy.setup"].msg.startswith("Unsupported parameters for (ansible.legacy.setup) module: bogus.")'
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        out.recap("h"),
        Recap {
            ignored: 1,
            ..recap(4, 0)
        },
        "{}",
        out.stdout
    );
}

#[test]
fn wait_for_connection_pings_and_times_out_as_ansible_does() {
    let hosts = LocalHosts::new(&["l"]);
    let inventory = format!(
        "{}\n{}\n",
        hosts.line("l"),
        crate::support::hosts::refusing_host_line("r")
    );
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  tasks:
    - wait_for_connection: {timeout: 3, delay: 1}
      register: w
      ignore_errors: true
    - wait_for_connection: {}
      check_mode: true
      register: c
    - assert:
        that:
          - c is skipped
          - w.elapsed >= 1
    - assert:
        that: w is not failed and w.elapsed == 1
      when: inventory_hostname == "l"
    - assert:
        that:
          - w is failed and w.elapsed == 4
          - 'w.msg.startswith("timed out waiting for ping module test: Failed to connect to the host via ssh: ")'
          - w.msg.endswith("Connection refused")
      when: inventory_hostname == "r"
"#,
        )
        .inventory(&inventory)
        .run();
    out.assert_code(0);
    let expected = |ignored| Recap {
        skipped: 2,
        ignored,
        ..recap(3, 0)
    };
    assert_eq!(out.recap("l"), expected(0), "{}", out.stdout);
    assert_eq!(out.recap("r"), expected(1), "{}", out.stdout);
}

#[test]
fn validate_argument_spec_reports_every_error_as_ansible_does() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  vars:
    port: "8080"
    spec:
      port: {type: int, required: true}
      mode: {choices: [a, b], default: a}
      names: {type: list, elements: str}
      debug: {type: bool}
    e0: "argument 'port' is of type str and we were unable to convert to int: \"'x'\" cannot be converted to an int"
    e1: "argument 'debug' is of type str and we were unable to convert to bool: The value 'maybe' is not a valid boolean."
    e2: "value of mode must be one of: a, b, got: c"
    m: "Validation of arguments failed:\nargument 'port'"
  tasks:
    - validate_argument_spec: {argument_spec: "{{ spec }}"}
      register: ok
    - validate_argument_spec: {argument_spec: "{{ spec }}", provided_arguments: {mode: c, debug: maybe, port: x}}
      register: bad
      ignore_errors: true
    - assert:
        that:
          - ok.msg == "The arg spec validation passed"
          - ok.validate_args_context == {}
          - bad.argument_errors | length == 3
          - bad.argument_errors[0] == e0
          - bad.argument_errors[1].startswith(e1)
          - bad.argument_errors[2] == e2
          - bad.msg.startswith(m)
          - bad.argument_spec_data == spec
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        out.recap("h"),
        Recap {
            ignored: 1,
            ..recap(3, 0)
        },
        "{}",
        out.stdout
    );
}

const GETENT: &str = r####"- hosts: all
  gather_facts: false
  tasks:
    - {name: g_root, getent: {database: passwd, key: root}, register: g_root}
    - {name: g_group, getent: {database: group, key: root, split: ":"}, register: g_group}
    - {name: g_missing, getent: {database: passwd, key: nosuchuser}, register: g_missing, ignore_errors: true}
    - {name: g_nokey, getent: {database: passwd, key: nosuchuser, fail_key: false}, register: g_nokey}
    - {name: g_baddb, getent: {database: nosuchdb}, register: g_baddb, ignore_errors: true}
    - {name: g_check, getent: {database: passwd, key: root}, register: g_check, check_mode: true}
    - {name: g_split, getent: {database: passwd, key: root, split: ""}, register: g_split, ignore_errors: true}
    - assert:
        that:
          - getent_passwd.root[4] == "/root"
          - ansible_facts.getent_group.root[1] == "0"
    - name: results
      debug:
        msg: "{{ lookup('vars', item) | dict2items | rejectattr('key', 'in', ['invocation', 'exception']) | items2dict }}"
      loop: [g_root, g_group, g_missing, g_nokey, g_baddb, g_check, g_split]
"####;

/// ansible-playbook 2.21's results (minus `invocation` and `exception`).
const GETENT_RECORDED: &[(&str, &str)] = &[
    (
        "g_root",
        r#"{"ansible_facts": {"getent_passwd": {"root": ["x", "0", "0", "root", "/root", "/bin/bash"]}}, "changed": false, "failed": false}"#,
    ),
    (
        "g_group",
        r#"{"ansible_facts": {"getent_group": {"root": ["x", "0", ""]}}, "changed": false, "failed": false}"#,
    ),
    (
        "g_missing",
        r#"{"changed": false, "failed": true, "msg": "One or more supplied key could not be found in the database."}"#,
    ),
    (
        "g_nokey",
        r#"{"ansible_facts": {"getent_passwd": {"nosuchuser": null}}, "changed": false, "failed": false, "msg": "One or more supplied key could not be found in the database."}"#,
    ),
    (
        "g_baddb",
        r#"{"changed": false, "failed": true, "msg": "Missing arguments, or database unknown."}"#,
    ),
    (
        "g_check",
        r#"{"ansible_facts": {"getent_passwd": {"root": ["x", "0", "0", "root", "/root", "/bin/bash"]}}, "changed": false, "failed": false}"#,
    ),
    (
        "g_split",
        r#"{"changed": false, "failed": true, "msg": "Invalid split value. The value must be a non-empty string"}"#,
    ),
];

#[test]
fn getent_gives_the_facts_ansible_gave() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let out = TestRun::new().playbook(GETENT).local_hosts(&hosts).run();
    out.assert_code(0);
    crate::everyday_modules::assert_results(&out, dir.to_str().unwrap(), &[], GETENT_RECORDED, &[]);
    assert_eq!(
        out.recap("h"),
        Recap {
            ignored: 3,
            ..recap(9, 0)
        },
        "{}",
        out.stdout
    );
}

const COMMAND_ARGS: &str = r####"- hosts: all
  gather_facts: false
  tasks:
    - {name: c_exp, command: "echo $HOME ~ '$NOPE_X' ${HOME}x", register: c_exp}
    - {name: c_noexp, command: {cmd: "echo $HOME ~", expand_argument_vars: false}, register: c_noexp}
    - {name: c_stdin, command: {cmd: cat, stdin: "a\n\n", strip_empty_ends: false}, register: c_stdin}
    - {name: c_stdin2, command: {cmd: cat, stdin: "a", stdin_add_newline: false}, register: c_stdin2}
    - {name: c_argv, command: {argv: [printf, "%s|", "a b", "$HOME"], chdir: /tmp}, register: c_argv}
    - {name: s_exe, shell: {cmd: "echo $0; echo ${BASH_VERSION:+bash}", executable: /bin/bash}, register: s_exe}
    - {name: c_creates, command: {cmd: "echo x", creates: /etc}, register: c_creates}
    - {name: c_removes, command: {cmd: "echo x", removes: /nonexist}, register: c_removes}
    - {name: c_exec, command: {cmd: "echo x", executable: /bin/bash}, register: c_exec}
    - name: results
      debug:
        msg: "{{ lookup('vars', item) | dict2items | rejectattr('key', 'in', ['invocation', 'start', 'end', 'delta']) | items2dict }}"
      loop: [c_exp, c_noexp, c_stdin, c_stdin2, c_argv, s_exe, c_creates, c_removes, c_exec]
"####;

/// ansible-playbook 2.21's results (minus `invocation` and the times), HOME as HOMEDIR.
const COMMAND_RECORDED: &[(&str, &str)] = &[
    (
        "c_exp",
        r#"{"changed": true, "cmd": ["echo", "$HOME", "~", "$NOPE_X", "${HOME}x"], "failed": false, "msg": "", "rc": 0, "stderr": "", "stderr_lines": [], "stdout": "HOMEDIR HOMEDIR $NOPE_X HOMEDIRx", "stdout_lines": ["HOMEDIR HOMEDIR $NOPE_X HOMEDIRx"]}"#,
    ),
    (
        "c_noexp",
        r#"{"changed": true, "cmd": ["echo", "$HOME", "~"], "failed": false, "msg": "", "rc": 0, "stderr": "", "stderr_lines": [], "stdout": "$HOME ~", "stdout_lines": ["$HOME ~"]}"#,
    ),
    (
        "c_stdin",
        r#"{"changed": true, "cmd": ["cat"], "failed": false, "msg": "", "rc": 0, "stderr": "", "stderr_lines": [], "stdout": "a\n\n\n", "stdout_lines": ["a", "", ""]}"#,
    ),
    (
        "c_stdin2",
        r#"{"changed": true, "cmd": ["cat"], "failed": false, "msg": "", "rc": 0, "stderr": "", "stderr_lines": [], "stdout": "a", "stdout_lines": ["a"]}"#,
    ),
    (
        "c_argv",
        r#"{"changed": true, "cmd": ["printf", "%s|", "a b", "$HOME"], "failed": false, "msg": "", "rc": 0, "stderr": "", "stderr_lines": [], "stdout": "a b|HOMEDIR|", "stdout_lines": ["a b|HOMEDIR|"]}"#,
    ),
    (
        "s_exe",
        r#"{"changed": true, "cmd": "echo $0; echo ${BASH_VERSION:+bash}", "failed": false, "msg": "", "rc": 0, "stderr": "", "stderr_lines": [], "stdout": "/bin/bash\nbash", "stdout_lines": ["/bin/bash", "bash"]}"#,
    ),
    (
        "c_creates",
        r#"{"changed": false, "cmd": ["echo", "x"], "failed": false, "msg": "Did not run command since '/etc' exists", "rc": 0, "stderr": "", "stderr_lines": [], "stdout": "skipped, since /etc exists", "stdout_lines": ["skipped, since /etc exists"]}"#,
    ),
    (
        "c_removes",
        r#"{"changed": false, "cmd": ["echo", "x"], "failed": false, "msg": "Did not run command since '/nonexist' does not exist", "rc": 0, "stderr": "", "stderr_lines": [], "stdout": "skipped, since /nonexist does not exist", "stdout_lines": ["skipped, since /nonexist does not exist"]}"#,
    ),
    (
        "c_exec",
        r#"{"changed": true, "cmd": ["echo", "x"], "failed": false, "msg": "", "rc": 0, "stderr": "", "stderr_lines": [], "stdout": "x", "stdout_lines": ["x"], "warnings": ["As of Ansible 2.4, the parameter 'executable' is no longer supported with the 'command' module. Not using '/bin/bash'."]}"#,
    ),
];

#[test]
fn command_and_shell_arguments_do_what_ansible_did() {
    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home().to_str().unwrap().to_string();
    let recorded: Vec<(String, String)> = COMMAND_RECORDED
        .iter()
        .map(|(n, v)| (n.to_string(), v.replace("HOMEDIR", &home)))
        .collect();
    let recorded: Vec<(&str, &str)> = recorded
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    let out = TestRun::new()
        .playbook(COMMAND_ARGS)
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    crate::everyday_modules::assert_results(&out, &home, &[], &recorded, &[]);
    assert_eq!(out.recap("h"), recap(10, 7), "{}", out.stdout);
}

/// hostname on a Debian host without systemd running (Ansible's FileStrategy): the
/// /etc/hostname, results and recaps ansible-playbook left (tests/debian/hostname/expected/).
/// Only ever on a Debian test host: the build machine's own name is never touched.
#[test]
fn hostname_writes_etc_hostname_as_ansible_did() {
    if !crate::support::debian::available("hostname_writes_etc_hostname_as_ansible_did") {
        return;
    }
    let (host, _first, again) = crate::support::debian_scenario::check("hostname");
    assert_eq!(host.read("/etc/hostname"), b"web1.example.org\n");
    // The running name is not the module's to change under FileStrategy.
    assert_eq!(host.check_output(&["hostname"]), "debian-target\n");
    assert_eq!(
        again.stdout.matches("changed: [").count(),
        1,
        "{}",
        again.stdout
    );
}

/// command and shell with each of their arguments (executable, stdin, stdin_add_newline,
/// strip_empty_ends, expand_argument_vars, argv, creates/removes with globs, chdir, check
/// mode, a program that cannot start) against ansible-playbook 2.21's registered results
/// (fixtures/command_args/).
#[test]
fn every_command_and_shell_argument_registers_what_ansible_registered() {
    let hosts = LocalHosts::new(&["localhost"]);
    let home = hosts.home().to_str().unwrap().to_string();
    let run = TestRun::new()
        .playbook(include_str!("fixtures/command_args/site.yml"))
        .local_hosts(&hosts);
    let out = run.run();
    out.assert_code(0);
    crate::everyday_modules::assert_recorded(
        &out,
        &include_str!("fixtures/command_args/expected.jsonl").replace("HOMEDIR", &home),
    );
    assert_eq!(
        out.recap("localhost"),
        Recap {
            skipped: 1,
            ignored: 5,
            ..recap(23, 14)
        },
        "{}",
        out.stdout
    );
}

/// reboot over ssh, its restart and boot id played by the module's own arguments
/// (`reboot_command`, `boot_time_command`), with what ansible-playbook 2.21.5 gave on
/// the same play and user. Ansible's low-level commands run on a pty, so there the
/// command's stderr lands in `stdout` and ssh adds "Shared connection to ... closed." to
/// `stderr`; turbo-play's agent keeps the two apart, as a pty-less Ansible would.
#[test]
fn reboot_waits_for_a_new_boot_id_and_fails_as_ansible_does() {
    let hosts = SshHosts::start(&["web"]);
    let home = hosts.user("web").home.clone();
    let playbook = r#"- hosts: all
  gather_facts: false
  tasks:
    - copy: {content: "1\n", dest: "H/boot_id"}
    - reboot:
        reboot_command: "sh -c 'echo 2 > H/boot_id'"
        boot_time_command: "cat H/boot_id"
        test_command: "test -s H/boot_id"
      register: r
    - reboot: {reboot_command: "false", boot_time_command: "cat H/boot_id"}
      register: f
      ignore_errors: true
    - reboot: {boot_time_command: "cat H/nope"}
      register: g
      ignore_errors: true
    - reboot: {reboot_command: "nosuchcmd now", boot_time_command: "cat H/boot_id"}
      register: n
      ignore_errors: true
    - reboot: {reboot_command: "sh -c true", boot_time_command: "cat H/boot_id", reboot_timeout: 3}
      register: t
      ignore_errors: true
    - reboot: {}
      check_mode: true
      register: c
    - assert:
        that:
          - r == want_r
          - f.msg == want_f and not f.rebooted and f.elapsed == 0
          - g.msg is search(want_g)
          - g.reboot == false and g.exception == "(traceback unavailable)"
          - n.msg == want_n
          - t.msg == want_t and t.rebooted
          - t.elapsed >= 3 and t.elapsed <= 5
          - c is changed and c.rebooted and c.elapsed == 0
      vars:
        want_r: {changed: true, elapsed: 0, failed: false, rebooted: true}
        want_f: "Reboot command failed. Error was: ', '"
        want_g: "^reboot: failed to get host boot time info, rc: 1, stdout: , stderr: cat: .*nope: No such file or directory"
        want_n: "Task failed: Unable to find command \"nosuchcmd\" in search paths: ['/sbin', '/bin', '/usr/sbin', '/usr/bin', '/usr/local/sbin']"
        want_t: "Timed out waiting for last boot time check (timeout=3)"
- hosts: all
  gather_facts: false
  connection: local
  tasks:
    - reboot: {}
      register: l
      ignore_errors: true
    - assert:
        that: l.msg == want and not l.rebooted
      vars:
        want: "Running reboot with local connection would reboot the control node."
"#;
    let out = TestRun::new()
        .playbook(&playbook.replace("H/", &format!("{}/", home.display())))
        .inventory(&hosts.inventory())
        .run();
    out.assert_code(0);
    assert_eq!(
        out.recap("web"),
        Recap {
            ignored: 5,
            ..recap(10, 3)
        },
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(home.join("boot_id")).unwrap(),
        "2\n"
    );
}
