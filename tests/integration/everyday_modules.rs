//! assemble and cron against what ansible-playbook 2.21 did with the same playbooks
//! (`-c local`, recorded here as data): each task's registered result, the files left
//! behind, the recap, and a second run that changes nothing Ansible's second run did not.

use std::path::Path;

use crate::support::hosts::LocalHosts;
use crate::support::run::{Outcome, Recap, TestRun, recap};

/// Each `(item=NAME)` result of the playbook's last task, `results`, as JSON.
fn results(out: &Outcome) -> Vec<(String, serde_json::Value)> {
    let shown = out
        .stdout
        .split("TASK [results]")
        .nth(1)
        .and_then(|rest| rest.split("PLAY RECAP").next())
        .unwrap_or_else(|| panic!("no results task in\n{}", out.stdout));
    let mut found = Vec::new();
    for part in shown.split("(item=").skip(1) {
        let (name, rest) = part.split_once(") => ").expect("an item's result");
        let end = rest.find("\n}").expect("the result's end") + 2;
        let shown: serde_json::Value = serde_json::from_str(&rest[..end])
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}", &rest[..end]));
        found.push((name.to_string(), shown["msg"].clone()));
    }
    found
}

/// Compares every result with the recorded one (`run`'s first, then `first`'s); the
/// `loose` names' messages need only share the recorded one's start up to its `(`.
#[track_caller]
fn assert_results(
    out: &Outcome,
    dir: &str,
    run: &[(&str, &str)],
    first: &[(&str, &str)],
    loose: &[&str],
) {
    let got = results(out);
    assert_eq!(got.len(), first.len(), "{}", out.stdout);
    for (name, value) in &got {
        let recorded = run
            .iter()
            .chain(first)
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no recorded result for {name}"));
        let mut want: serde_json::Value =
            serde_json::from_str(&recorded.1.replace("DIR", dir)).unwrap();
        let mut value = value.clone();
        if loose.contains(&name.as_str()) {
            for v in [&mut want, &mut value] {
                let msg = v["msg"].as_str().unwrap_or_default();
                let head = msg.split('(').next().unwrap_or_default().to_string();
                v["msg"] = serde_json::json!(head);
            }
        }
        assert_eq!(value, want, "task {name}\n{}", out.stdout);
    }
}

const ASSEMBLE_PLAYBOOK: &str = r####"- hosts: all
  gather_facts: false
  vars:
    d: DIR
  tasks:
    - {name: dirs, file: {path: "{{ d }}/{{ item }}", state: directory}, loop: [frags, frags/sub, out]}
    - name: fragments
      copy: {dest: "{{ d }}/frags/{{ item.name }}", content: "{{ item.text }}", force: false}
      loop:
        - {name: 01-a, text: "alpha\n"}
        - {name: 02-b, text: "bravo"}
        - {name: 10-c, text: "charlie\n"}
        - {name: .hidden, text: "hidden\n"}
        - {name: sub/x, text: "nested\n"}
      loop_control: {label: "{{ item.name }}"}
    - {name: as_plain, assemble: {src: "{{ d }}/frags", dest: "{{ d }}/out/plain"}, register: as_plain}
    - {name: as_delim, assemble: {src: "{{ d }}/frags", dest: "{{ d }}/out/delim", delimiter: "### cut", ignore_hidden: true, mode: "0600"}, register: as_delim}
    - {name: as_regexp, assemble: {src: "{{ d }}/frags", dest: "{{ d }}/out/regexp", regexp: "^0[0-9]-", delimiter: '--\t--\n'}, register: as_regexp}
    - {name: as_validate, assemble: {src: "{{ d }}/frags", dest: "{{ d }}/out/valid", validate: "grep -q alpha %s"}, register: as_validate}
    - {name: as_badvalid, assemble: {src: "{{ d }}/frags", dest: "{{ d }}/out/bad", validate: "grep -q zulu %s"}, register: as_badvalid, ignore_errors: true}
    - {name: as_missing, assemble: {src: "{{ d }}/nope", dest: "{{ d }}/out/x"}, register: as_missing, ignore_errors: true}
    - {name: as_notdir, assemble: {src: "{{ d }}/frags/01-a", dest: "{{ d }}/out/x"}, register: as_notdir, ignore_errors: true}
    - {name: as_badre, assemble: {src: "{{ d }}/frags", dest: "{{ d }}/out/x", regexp: "("}, register: as_badre, ignore_errors: true}
    - {name: as_local, assemble: {src: local_frags, dest: "{{ d }}/out/local", remote_src: false}, register: as_local}
    - {name: as_check, assemble: {src: "{{ d }}/frags", dest: "{{ d }}/out/check"}, register: as_check, check_mode: true}
    - name: results
      debug:
        msg: "{{ lookup('vars', item) | dict2items | rejectattr('key', 'in', ['invocation', 'diff', 'exception', 'src']) | items2dict }}"
      loop: [as_plain, as_delim, as_regexp, as_validate, as_badvalid, as_missing, as_notdir, as_badre, as_local, as_check]
"####;

/// ansible-playbook 2.21's results (minus `invocation`, `diff`, `exception`, `src`).
const ASSEMBLE_FIRST: &[(&str, &str)] = &[
    (
        "as_plain",
        r#"{"changed": true, "checksum": "1721c63d32b1ce10dd2d9c36d50126fa154f534c", "dest": "DIR/out/plain", "failed": false, "gid": 0, "group": "root", "md5sum": "549d9b6d1b2f0bbbad137ba993921211", "mode": "0644", "msg": "OK", "owner": "root", "size": 27, "state": "file", "uid": 0}"#,
    ),
    (
        "as_delim",
        r#"{"changed": true, "checksum": "62cbd5f13058d612d5c960250bbdd0aa35f26548", "dest": "DIR/out/delim", "failed": false, "gid": 0, "group": "root", "md5sum": "1628ed7e151f1a0f1d9060af4fdfe50a", "mode": "0600", "msg": "OK", "owner": "root", "size": 36, "state": "file", "uid": 0}"#,
    ),
    (
        "as_regexp",
        r#"{"changed": true, "checksum": "00560729099c3751bf97451cc87d170afc4b98c2", "dest": "DIR/out/regexp", "failed": false, "gid": 0, "group": "root", "md5sum": "c6da26968caac9eacc52530a236f72d3", "mode": "0644", "msg": "OK", "owner": "root", "size": 17, "state": "file", "uid": 0}"#,
    ),
    (
        "as_validate",
        r#"{"changed": true, "checksum": "1721c63d32b1ce10dd2d9c36d50126fa154f534c", "dest": "DIR/out/valid", "failed": false, "gid": 0, "group": "root", "md5sum": "549d9b6d1b2f0bbbad137ba993921211", "mode": "0644", "msg": "OK", "owner": "root", "size": 27, "state": "file", "uid": 0, "validation": {"rc": 0, "stderr": "", "stdout": ""}}"#,
    ),
    (
        "as_badvalid",
        r#"{"changed": false, "failed": true, "msg": "failed to validate: rc:1 error:"}"#,
    ),
    (
        "as_missing",
        r#"{"changed": false, "failed": true, "msg": "Source (DIR/nope) does not exist"}"#,
    ),
    (
        "as_notdir",
        r#"{"changed": false, "failed": true, "msg": "Source (DIR/frags/01-a) is not a directory"}"#,
    ),
    (
        "as_badre",
        r#"{"changed": false, "failed": true, "msg": "Invalid Regexp (missing ), unterminated subpattern at position 0) in \"(\""}"#,
    ),
    (
        "as_local",
        r#"{"changed": true, "checksum": "c708d7ef841f7e1748436b8ef5670d0b2de1a227", "dest": "DIR/out/local", "failed": false, "gid": 0, "group": "root", "md5sum": "2094b601daac3d68f5aed51d3c20f7cd", "mode": "0644", "owner": "root", "size": 8, "state": "file", "uid": 0}"#,
    ),
    (
        "as_check",
        r#"{"changed": true, "checksum": "1721c63d32b1ce10dd2d9c36d50126fa154f534c", "dest": "DIR/out/check", "failed": false, "md5sum": "549d9b6d1b2f0bbbad137ba993921211", "msg": "OK"}"#,
    ),
];

/// The second run's results that differ from the first's.
const ASSEMBLE_SECOND: &[(&str, &str)] = &[
    (
        "as_plain",
        r#"{"changed": false, "checksum": "1721c63d32b1ce10dd2d9c36d50126fa154f534c", "dest": "DIR/out/plain", "failed": false, "gid": 0, "group": "root", "md5sum": "549d9b6d1b2f0bbbad137ba993921211", "mode": "0644", "msg": "OK", "owner": "root", "size": 27, "state": "file", "uid": 0}"#,
    ),
    (
        "as_delim",
        r#"{"changed": false, "checksum": "62cbd5f13058d612d5c960250bbdd0aa35f26548", "dest": "DIR/out/delim", "failed": false, "gid": 0, "group": "root", "md5sum": "1628ed7e151f1a0f1d9060af4fdfe50a", "mode": "0600", "msg": "OK", "owner": "root", "size": 36, "state": "file", "uid": 0}"#,
    ),
    (
        "as_regexp",
        r#"{"changed": false, "checksum": "00560729099c3751bf97451cc87d170afc4b98c2", "dest": "DIR/out/regexp", "failed": false, "gid": 0, "group": "root", "md5sum": "c6da26968caac9eacc52530a236f72d3", "mode": "0644", "msg": "OK", "owner": "root", "size": 17, "state": "file", "uid": 0}"#,
    ),
    (
        "as_validate",
        r#"{"changed": false, "checksum": "1721c63d32b1ce10dd2d9c36d50126fa154f534c", "dest": "DIR/out/valid", "failed": false, "gid": 0, "group": "root", "md5sum": "549d9b6d1b2f0bbbad137ba993921211", "mode": "0644", "msg": "OK", "owner": "root", "size": 27, "state": "file", "uid": 0}"#,
    ),
    (
        "as_local",
        r#"{"changed": false, "checksum": "c708d7ef841f7e1748436b8ef5670d0b2de1a227", "dest": "DIR/out/local", "failed": false, "gid": 0, "group": "root", "md5sum": "2094b601daac3d68f5aed51d3c20f7cd", "mode": "0644", "owner": "root", "size": 8, "state": "file", "uid": 0}"#,
    ),
];

#[test]
fn assemble_does_what_ansible_did_and_a_rerun_changes_nothing() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let dir_text = dir.to_str().unwrap();
    let run = TestRun::new()
        .playbook(&ASSEMBLE_PLAYBOOK.replace("DIR", dir_text))
        .file("files/local_frags/a", "one\n")
        .file("files/local_frags/b", "two\n")
        .local_hosts(&hosts);
    let expected = |changed| Recap {
        ignored: 4,
        ..recap(13, changed)
    };
    let first = run.run();
    first.assert_code(0);
    assert_results(&first, dir_text, &[], ASSEMBLE_FIRST, &["as_badre"]);
    assert_eq!(first.recap("h"), expected(8), "{}", first.stdout);
    let read = |name: &str| std::fs::read_to_string(dir.join("out").join(name)).unwrap();
    assert_eq!(read("plain"), "hidden\nalpha\nbravo\ncharlie\n");
    assert_eq!(read("delim"), "alpha\n### cut\nbravo\n### cut\ncharlie\n");
    assert_eq!(read("regexp"), "alpha\n--\t--\nbravo");
    assert_eq!(read("valid"), read("plain"));
    assert_eq!(read("local"), "one\ntwo\n");
    for absent in ["bad", "check", "x"] {
        assert!(!dir.join("out").join(absent).exists(), "{absent}");
    }

    // Only the check-mode task reports a change again, as in Ansible's second run.
    let again = run.run();
    again.assert_code(0);
    assert_results(
        &again,
        dir_text,
        ASSEMBLE_SECOND,
        ASSEMBLE_FIRST,
        &["as_badre"],
    );
    assert_eq!(again.recap("h"), expected(1), "{}", again.stdout);
}

/// cron on a Debian host (cron installed from the archive): the crontabs, cron files,
/// results and recaps ansible-playbook left (tests/debian/cron-jobs/expected/).
#[test]
fn cron_edits_crontabs_and_cron_files_as_ansible_did() {
    if !crate::support::debian::available("cron_edits_crontabs_and_cron_files_as_ansible_did") {
        return;
    }
    let (host, first, again) = crate::support::debian_scenario::check("cron-jobs");
    assert!(first.stdout.contains("TASK [cr_file2]"), "{}", first.stdout);
    // Only check mode's prediction changes on the rerun, as in Ansible's.
    assert_eq!(
        again.stdout.matches("changed: [").count(),
        1,
        "{}",
        again.stdout
    );
    assert!(host.stat("/etc/cron.d/gone").is_none());
}

/// Without a `crontab` program cron fails as Ansible's `get_bin_path` does, naming the
/// target's search path (ansible-playbook 2.21 gave the same message on this controller).
#[test]
fn cron_without_crontab_names_the_search_path() {
    let path = std::env::var("PATH").unwrap_or_default();
    if path
        .split(':')
        .any(|d| Path::new(d).join("crontab").exists())
    {
        return;
    }
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - {name: c, cron: {name: x, job: /bin/true}, register: r, ignore_errors: true}\n    - {debug: {var: r.msg}}\n",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let mut dirs: Vec<&str> = path.split(':').filter(|d| !d.is_empty()).collect();
    for extra in ["/sbin", "/usr/sbin", "/usr/local/sbin"] {
        if !dirs.contains(&extra) {
            dirs.push(extra);
        }
    }
    crate::support::run::assert_contains(
        &out,
        &format!(
            "\"r.msg\": \"Failed to find required executable \\\"crontab\\\" in paths: {}\"",
            dirs.join(":")
        ),
    );
}
