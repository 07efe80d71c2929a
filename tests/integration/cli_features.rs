//! ansible-playbook's CLI features over real runs: tags, the listings and syntax check
//! (which must not connect anywhere), --start-at-task, -c, check mode and the JSON
//! event stream.
//!
//! The tag selections, the listings and the check-mode outcome (recap and files) were
//! compared with ansible-playbook 2.19 on the same playbooks (connection local).

use crate::support::hosts::{LocalHosts, refusing_host_line};
use crate::support::run::{Outcome, Recap, TestRun};

#[track_caller]
fn assert_contains(haystack: &str, needle: &str, out: &Outcome) {
    assert!(
        haystack.contains(needle),
        "expected {needle:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
}

/// Each task appends its name to ~/ran, so a run leaves the list of what ran.
const TAGGED: &str = r#"- hosts: all
  tasks:
    - name: untagged
      shell: echo untagged >> ~/ran
    - name: web
      shell: echo web >> ~/ran
      tags: web
    - name: db and web
      shell: echo db_web >> ~/ran
      tags: "db, web"
    - block:
        - name: in block
          shell: echo block >> ~/ran
      tags: [blk]
    - name: always
      shell: echo always >> ~/ran
      tags: always
    - name: never
      shell: echo never >> ~/ran
      tags: [never, debug]
"#;

fn ran(hosts: &LocalHosts, args: &[&str]) -> (Outcome, Vec<String>) {
    let home = hosts.home();
    let _ = std::fs::remove_file(home.join("ran"));
    let out = TestRun::new()
        .playbook(TAGGED)
        .local_hosts(hosts)
        .args(args)
        .run();
    let ran = std::fs::read_to_string(home.join("ran"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    (out, ran)
}

#[test]
fn tags_choose_the_tasks_that_run() {
    let hosts = LocalHosts::new(&["h"]);

    let (out, list) = ran(&hosts, &[]);
    out.assert_code(0);
    assert_eq!(list, ["untagged", "web", "db_web", "block", "always"]);
    // Gathering Facts + five tasks.
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 6,
            changed: 5,
            ..Default::default()
        }
    );

    let (out, list) = ran(&hosts, &["-t", "web"]);
    out.assert_code(0);
    assert_eq!(list, ["web", "db_web", "always"]);
    // Gathering Facts is tagged `always`.
    assert_contains(&out.stdout, "TASK [Gathering Facts]", &out);
    assert!(!out.stdout.contains("TASK [untagged]"), "{}", out.stdout);

    let (out, list) = ran(&hosts, &["--tags", "blk", "--tags", "debug"]);
    out.assert_code(0);
    assert_eq!(list, ["block", "always", "never"]);

    let (out, list) = ran(&hosts, &["--skip-tags", "web,always"]);
    out.assert_code(0);
    assert_eq!(list, ["untagged", "block"]);

    let (_, list) = ran(&hosts, &["--tags", "untagged"]);
    assert_eq!(list, ["untagged", "always"]);

    let (_, list) = ran(&hosts, &["--tags", "tagged", "--skip-tags", "db"]);
    assert_eq!(list, ["web", "block", "always"]);

    // --skip-tags all leaves only `always` (and the facts it tags).
    let (out, list) = ran(&hosts, &["--skip-tags", "all"]);
    assert_eq!(list, ["always"]);
    assert_eq!(out.recap("h").ok, 2);
}

const LISTED: &str = "- name: Web servers
  hosts: all
  tags: [play]
  tasks:
    - name: Install
      command: \"true\"
      tags: pkg
    - command: \"false\"
    - name: Debug only
      debug: msg=x
      tags: [never, dbg]
";

fn listing_run(args: &[&str]) -> Outcome {
    TestRun::new()
        .playbook(LISTED)
        .inventory(&format!(
            "{}\n{}\n",
            refusing_host_line("web1"),
            refusing_host_line("web2")
        ))
        .args(args)
        .run()
}

#[track_caller]
fn assert_listing(out: &Outcome, expected_after_path: &str) {
    out.assert_code(0);
    assert!(!out.stdout.contains("UNREACHABLE"), "{}", out.stdout);
    let (head, rest) = out.stdout.split_once("site.yml\n").expect("playbook line");
    assert!(head.starts_with("\nplaybook: "), "{}", out.stdout);
    assert_eq!(rest, expected_after_path);
}

#[test]
fn listings_and_syntax_check_connect_to_nothing() {
    let out = listing_run(&["--list-hosts"]);
    assert_listing(
        &out,
        "\n  play #1 (all): Web servers\tTAGS: [play]\n    pattern: ['all']\n    hosts (2):\n      web1\n      web2\n",
    );
    let out = listing_run(&["--list-tasks"]);
    assert_listing(
        &out,
        "\n  play #1 (all): Web servers\tTAGS: [play]\n    tasks:\n      Install\tTAGS: [pkg, play]\n      command\tTAGS: [play]\n",
    );
    let out = listing_run(&[
        "--list-tasks",
        "--tags",
        "dbg",
        "--limit",
        "web2",
        "--list-hosts",
    ]);
    assert_listing(
        &out,
        "\n  play #1 (all): Web servers\tTAGS: [play]\n    pattern: ['all']\n    hosts (1):\n      web2\n    tasks:\n      Debug only\tTAGS: [dbg, never, play]\n",
    );
    let out = listing_run(&["--list-tags"]);
    assert_listing(
        &out,
        "\n  play #1 (all): Web servers\tTAGS: [play]\n      TASK TAGS: [dbg, never, pkg, play]\n",
    );
    let out = listing_run(&["--syntax-check"]);
    assert_listing(&out, "");

    // A broken playbook fails the syntax check at its line.
    let out = TestRun::new()
        .playbook("- hosts: all\n  tasks:\n    - name: x\n      bogus_module: {}\n")
        .inventory(&refusing_host_line("web1"))
        .arg("--syntax-check")
        .run();
    out.assert_code(4);
    assert!(out.stderr.contains("site.yml:4:7"), "{}", out.stderr);
}

#[test]
fn start_at_task_skips_until_the_named_task_across_plays() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = r#"- hosts: all
  gather_facts: false
  tasks:
    - name: one
      shell: echo one >> ~/ran
- hosts: all
  gather_facts: false
  tasks:
    - name: two
      shell: echo two >> ~/ran
    - name: three (the start)
      shell: echo three >> ~/ran
    - shell: echo four >> ~/ran
- hosts: all
  gather_facts: false
  tasks:
    - name: five
      shell: echo five >> ~/ran
"#;
    let home = hosts.home();
    let run = |pattern: &str| {
        let _ = std::fs::remove_file(home.join("ran"));
        let out = TestRun::new()
            .playbook(playbook)
            .local_hosts(&hosts)
            .args(&["--start-at-task", pattern])
            .run();
        let ran = std::fs::read_to_string(home.join("ran")).unwrap_or_default();
        (out, ran)
    };
    let (out, list) = run("three (the start)");
    out.assert_code(0);
    assert_eq!(list, "three\nfour\nfive\n");
    let (out, list) = run("thr*");
    out.assert_code(0);
    assert_eq!(list, "three\nfour\nfive\n");
    let (out, list) = run("nothing like it");
    out.assert_code(0);
    assert_eq!(list, "");
    // As in Ansible, a host that got no result has no recap line.
    assert!(out.recaps().is_empty(), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("ERROR! No matching task \"nothing like it\" found."),
        "{}",
        out.stderr
    );
}

#[test]
fn connection_flag_is_the_default_for_hosts_without_one() {
    // The host's address refuses connections: only `-c local` makes the run work.
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("local-marker");
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: content=local dest={}\n",
        marker.display()
    );
    let out = TestRun::new()
        .playbook(&playbook)
        .inventory(&refusing_host_line("box"))
        .args(&["-c", "local"])
        .run();
    out.assert_code(0);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "local");

    let out = TestRun::new()
        .playbook(&playbook)
        .inventory(&refusing_host_line("box"))
        .run();
    out.assert_code(4);
}

#[test]
fn check_mode_changes_nothing_and_command_runs_only_when_forced() {
    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home().to_path_buf();
    // `command` gets absolute paths: it does not expand `~` here yet (Ansible does).
    let playbook = r#"- hosts: all
  gather_facts: false
  tasks:
    - name: copy
      copy: content=new dest=~/copied
    - name: file
      file: path=~/dir state=directory
    - name: template
      template: src=t.j2 dest=~/templated
    - name: command
      command: touch HOME/commanded
      register: cmd
    - name: forced command
      command: touch HOME/forced
      check_mode: false
    - name: forced copy sees the check mode flag
      copy:
        content: "{{ ansible_check_mode }} {{ cmd.skipped | default(false) }} {{ cmd.msg | default('') }}"
        dest: ~/flags
      check_mode: no
    - name: check mode forced on a task
      copy: content=x dest=~/never_written
      check_mode: yes
"#
    .replace("HOME", &home.display().to_string());
    let run = |args: &[&str]| {
        TestRun::new()
            .playbook(&playbook)
            .file("templates/t.j2", "{{ inventory_hostname }}\n")
            .local_hosts(&hosts)
            .args(args)
            .run()
    };
    let out = run(&["-C"]);
    out.assert_code(0);
    for name in ["copied", "dir", "templated", "commanded", "never_written"] {
        assert!(!home.join(name).exists(), "{name} was made in check mode");
    }
    assert!(home.join("forced").exists());
    assert_eq!(
        std::fs::read_to_string(home.join("flags")).unwrap(),
        "True True Command would have run if not in check mode"
    );
    assert_contains(&out.stdout, "changed: [h]\n\nTASK [file]", &out);
    assert_contains(&out.stdout, "skipping: [h]\n\nTASK [forced command]", &out);
    // copy, file, template report a change; the two forced tasks really change; the
    // command is skipped; the task forced into check mode reports its change.
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 6,
            changed: 6,
            skipped: 1,
            ..Default::default()
        }
    );

    // Without -C, a task with `check_mode: yes` still changes nothing.
    let out = run(&[]);
    out.assert_code(0);
    assert!(home.join("copied").exists() && home.join("commanded").exists());
    assert!(!home.join("never_written").exists());
}

#[test]
fn json_stream_has_one_event_per_line() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- name: Stream
  hosts: all
  gather_facts: false
  tasks:
    - name: loop
      command: echo {{ item }}
      loop: [a, b]
      register: echoed
    - name: fails
      command: "false"
      ignore_errors: true
    - name: skipped
      debug: msg=x
      when: false
"#,
        )
        .local_hosts(&hosts)
        .arg("--json")
        .run();
    out.assert_code(0);
    let events: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "play_start",
            "task_start",
            "result",
            "result",
            "task_start",
            "result",
            "task_start",
            "result",
            "recap"
        ],
        "{}",
        out.stdout
    );
    assert_eq!(events[0]["play"], "Stream");
    assert_eq!(events[1]["task"], "loop");
    let first = &events[2];
    assert_eq!(first["host"], "h");
    assert_eq!(first["task"], "loop");
    assert_eq!(first["status"], "changed");
    assert_eq!(first["item"], "a");
    assert_eq!(first["result"]["stdout"], "a");
    assert_eq!(first["result"]["rc"], 0);
    let failed = &events[5];
    assert_eq!(failed["task"], "fails");
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["ignored"], true);
    assert_eq!(failed["result"]["rc"], 1);
    assert_eq!(events[7]["status"], "skipped");
    assert_eq!(
        events[8]["stats"]["h"],
        serde_json::json!({"ok": 2, "changed": 2, "unreachable": 0, "failed": 0,
                           "skipped": 1, "rescued": 0, "ignored": 1})
    );
}

#[test]
fn run_and_skip_tags_are_variables() {
    let out = TestRun::new()
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: msg=\"{{ ansible_run_tags }} {{ ansible_skip_tags }}\"\n      tags: [a, always]\n",
        )
        .inventory(&refusing_host_line("box"))
        .args(&["-c", "local", "--json", "-t", "b,a", "--skip-tags", "x"])
        .run();
    out.assert_code(0);
    let result = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["event"] == "result")
        .expect("a result");
    assert_eq!(result["result"]["msg"], "['a', 'b'] ['x']");
}

/// `ansible_verbosity` is `-v`'s count (Ansible's yaml_parsing target builds its
/// ansible-playbook command line from it); a variable whose template reads it renders.
#[test]
fn ansible_verbosity_is_the_count_of_v() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = r#"- hosts: all
  gather_facts: false
  vars:
    verbosity: "{{ '' if not ansible_verbosity else '-' ~ ('v' * ansible_verbosity) }}"
  tasks:
    - command: echo [{{ verbosity }}]
      register: echoed
    - copy:
        content: "{{ echoed.stdout }}"
        dest: ~/echoed
"#;
    for (args, expected) in [(&[][..], "[]"), (&["-vv"][..], "[-vv]")] {
        let out = TestRun::new()
            .playbook(playbook)
            .local_hosts(&hosts)
            .args(args)
            .run();
        out.assert_code(0);
        let echoed = std::fs::read_to_string(hosts.home().join("echoed")).unwrap();
        assert_eq!(echoed, expected);
    }
}

/// ansible-playbook 2.21's exit code per kind of error before a run: argparse's 2 for a
/// usage error (unknown flag, no playbook, `-f 0`), 1 for a file it cannot read (the
/// playbook, `-e @file`, a password file), 4 for `-e` text that does not parse, 5 for
/// `-e` data that is no mapping.
#[test]
fn errors_before_a_run_exit_with_ansibles_code_for_their_kind() {
    let code = |args: &[&str]| {
        TestRun::new()
            .file(
                "ok.yml",
                "- hosts: localhost\n  gather_facts: false\n  tasks: []\n",
            )
            .file("list.yml", "[1, 2]\n")
            .args(&["-i", "localhost,"])
            .args(args)
            .run()
    };
    for (args, expected) in [
        (&["--bogus", "ok.yml"][..], 2),
        (&[][..], 2),
        (&["-f", "0", "ok.yml"][..], 2),
        (&["missing.yml"][..], 1),
        (&["-e", "@missing.yml", "ok.yml"][..], 1),
        (&["--become-password-file", "/nonexistent", "ok.yml"][..], 1),
        (&["-e", "{a:", "ok.yml"][..], 4),
        (&["-e", "@list.yml", "ok.yml"][..], 5),
        (&["-e", "[1, 2]", "ok.yml"][..], 5),
    ] {
        let out = code(args);
        assert_eq!(out.code, expected, "{args:?}: {}", out.stderr);
    }
    let out = code(&["-f", "0", "ok.yml"]);
    assert_contains(
        &out.stderr,
        "The number of processes (--forks) must be >= 1",
        &out,
    );
    let out = code(&["missing.yml"]);
    assert_contains(
        &out.stderr,
        "the playbook: missing.yml could not be found",
        &out,
    );
}
