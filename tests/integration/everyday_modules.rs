//! assemble and cron against what ansible-playbook 2.21 did with the same playbooks
//! (`-c local`, recorded here as data): each task's registered result, the files left
//! behind, the recap, and a second run that changes nothing Ansible's second run did not.

use std::path::Path;

use crate::support::hosts::LocalHosts;
use crate::support::run::{Outcome, Recap, TestRun, recap};

/// Each `(item=NAME)` result of the playbook's last task, `results`, as JSON.
pub(crate) fn results(out: &Outcome) -> Vec<(String, serde_json::Value)> {
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

/// Compares every result with the recorded one, in order: one JSON object per line,
/// `{"task": NAME, "result": {...}}`, as the tests' fixtures keep Ansible's.
#[track_caller]
pub(crate) fn assert_recorded(out: &Outcome, recorded: &str) {
    let got = results(out);
    let want: Vec<(String, serde_json::Value)> = recorded
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            (v["task"].as_str().unwrap().to_string(), v["result"].clone())
        })
        .collect();
    assert_eq!(got.len(), want.len(), "{}", out.stdout);
    for ((name, value), (want_name, want_value)) in got.iter().zip(&want) {
        assert_eq!(name, want_name);
        assert_eq!(value, want_value, "task {name}\n{}", out.stdout);
    }
}

/// Compares every result with the recorded one (`run`'s first, then `first`'s); the
/// `loose` names' messages need only share the recorded one's start up to its `(`.
#[track_caller]
pub(crate) fn assert_results(
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

const UNARCHIVE_PLAYBOOK: &str = r####"- hosts: all
  gather_facts: false
  vars:
    d: DIR
  tasks:
    - {name: dirs, file: {path: "{{ d }}/{{ item }}", state: directory}, loop: [gz, xz, plain, strip, ex, remote]}
    - {name: ua_gz, unarchive: {src: app.tgz, dest: "{{ d }}/gz", list_files: true}, register: ua_gz}
    - {name: ua_xz, unarchive: {src: app.txz, dest: "{{ d }}/xz"}, register: ua_xz}
    - {name: ua_tar, unarchive: {src: app.tar, dest: "{{ d }}/plain"}, register: ua_tar}
    - {name: ua_strip, unarchive: {src: app.tgz, dest: "{{ d }}/strip", extra_opts: ["--strip-components=1"], list_files: true}, register: ua_strip}
    - {name: ua_ex, unarchive: {src: app.tgz, dest: "{{ d }}/ex", exclude: ["*.log"], list_files: true}, register: ua_ex}
    - {name: ua_copy, copy: {src: app.tgz, dest: "{{ d }}/app.tgz"}}
    - {name: ua_remote, unarchive: {src: "{{ d }}/app.tgz", dest: "{{ d }}/remote", remote_src: true, keep_newer: true}, register: ua_remote}
    - {name: ua_creates, unarchive: {src: app.tgz, dest: "{{ d }}/gz", creates: "{{ d }}/gz/tree"}, register: ua_creates}
    - {name: ua_nodest, unarchive: {src: app.tgz, dest: "{{ d }}/nope"}, register: ua_nodest, ignore_errors: true}
    - {name: ua_nosrc, unarchive: {src: "{{ d }}/nope.tgz", dest: "{{ d }}/gz", remote_src: true}, register: ua_nosrc, ignore_errors: true}
    - {name: ua_check, unarchive: {src: app.tgz, dest: "{{ d }}/gz"}, register: ua_check, check_mode: true}
    - name: results
      debug:
        msg: "{{ lookup('vars', item) | dict2items | rejectattr('key', 'in', ['invocation', 'diff', 'exception', 'src']) | items2dict }}"
      loop: [ua_gz, ua_xz, ua_tar, ua_strip, ua_ex, ua_remote, ua_creates, ua_nodest, ua_nosrc, ua_check]
"####;

/// ansible-playbook 2.21's results (minus `invocation`, `diff`, `exception`, `src`), the
/// uploaded archive's temporary path in `extract_results.cmd` written SRC.
const UNARCHIVE_FIRST: &[(&str, &str)] = &[
    (
        "ua_gz",
        r#"{"changed": true, "dest": "DIR/gz", "extract_results": {"cmd": ["/usr/bin/tar", "--extract", "-C", "DIR/gz", "-z", "-f", "SRC"], "err": "", "out": "", "rc": 0}, "failed": false, "files": ["tree/", "tree/one.txt", "tree/x.log", "tree/sub/", "tree/sub/two.txt"], "gid": 0, "group": "root", "handler": "TgzArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_xz",
        r#"{"changed": true, "dest": "DIR/xz", "extract_results": {"cmd": ["/usr/bin/tar", "--extract", "-C", "DIR/xz", "-f", "SRC"], "err": "", "out": "", "rc": 0}, "failed": false, "gid": 0, "group": "root", "handler": "TarArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_tar",
        r#"{"changed": true, "dest": "DIR/plain", "extract_results": {"cmd": ["/usr/bin/tar", "--extract", "-C", "DIR/plain", "-f", "SRC"], "err": "", "out": "", "rc": 0}, "failed": false, "gid": 0, "group": "root", "handler": "TarArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_strip",
        r#"{"changed": true, "dest": "DIR/strip", "extract_results": {"cmd": ["/usr/bin/tar", "--extract", "-C", "DIR/strip", "-z", "--show-transformed-names", "--strip-components=1", "-f", "SRC"], "err": "", "out": "", "rc": 0}, "failed": false, "files": ["", "one.txt", "x.log", "sub/", "sub/two.txt"], "gid": 0, "group": "root", "handler": "TgzArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_ex",
        r#"{"changed": true, "dest": "DIR/ex", "extract_results": {"cmd": ["/usr/bin/tar", "--extract", "-C", "DIR/ex", "-z", "--exclude=*.log", "-f", "SRC"], "err": "", "out": "", "rc": 0}, "failed": false, "files": ["tree/", "tree/one.txt", "tree/sub/", "tree/sub/two.txt"], "gid": 0, "group": "root", "handler": "TgzArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_remote",
        r#"{"changed": true, "dest": "DIR/remote", "extract_results": {"cmd": ["/usr/bin/tar", "--extract", "-C", "DIR/remote", "-z", "--keep-newer-files", "-f", "DIR/app.tgz"], "err": "", "out": "", "rc": 0}, "failed": false, "gid": 0, "group": "root", "handler": "TgzArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_creates",
        r#"{"changed": false, "failed": false, "msg": "skipped, since DIR/gz/tree exists", "skipped": true}"#,
    ),
    (
        "ua_nodest",
        r#"{"changed": false, "failed": true, "msg": "dest 'DIR/nope' must be an existing dir"}"#,
    ),
    (
        "ua_nosrc",
        r#"{"changed": false, "failed": true, "msg": "Source 'DIR/nope.tgz' does not exist"}"#,
    ),
    (
        "ua_check",
        r#"{"changed": false, "failed": false, "msg": "remote module (ansible.legacy.unarchive) does not support check mode when using gtar", "skipped": true}"#,
    ),
];

/// The second run's results that differ from the first's.
const UNARCHIVE_SECOND: &[(&str, &str)] = &[
    (
        "ua_gz",
        r#"{"changed": false, "dest": "DIR/gz", "failed": false, "files": ["tree/", "tree/one.txt", "tree/x.log", "tree/sub/", "tree/sub/two.txt"], "gid": 0, "group": "root", "handler": "TgzArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_xz",
        r#"{"changed": false, "dest": "DIR/xz", "failed": false, "gid": 0, "group": "root", "handler": "TarArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_tar",
        r#"{"changed": false, "dest": "DIR/plain", "failed": false, "gid": 0, "group": "root", "handler": "TarArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_strip",
        r#"{"changed": false, "dest": "DIR/strip", "failed": false, "files": ["", "one.txt", "x.log", "sub/", "sub/two.txt"], "gid": 0, "group": "root", "handler": "TgzArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_ex",
        r#"{"changed": false, "dest": "DIR/ex", "failed": false, "files": ["tree/", "tree/one.txt", "tree/sub/", "tree/sub/two.txt"], "gid": 0, "group": "root", "handler": "TgzArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
    (
        "ua_remote",
        r#"{"changed": false, "dest": "DIR/remote", "failed": false, "gid": 0, "group": "root", "handler": "TgzArchive", "mode": "0755", "owner": "root", "size": 4096, "state": "directory", "uid": 0}"#,
    ),
];

/// The archives of the unarchive playbook, built with the controller's GNU tar in a fixed
/// member order (the listing order is part of the result).
fn archives(run: TestRun) -> TestRun {
    let work = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("one.txt", "one\n"),
        ("x.log", "log\n"),
        ("sub/two.txt", "two\n"),
    ] {
        let path = work.path().join("tree").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut run = run;
    for (flags, name) in [("czf", "app.tgz"), ("cJf", "app.txz"), ("cf", "app.tar")] {
        let made = std::process::Command::new("tar")
            .current_dir(work.path())
            .args([flags, name, "--no-recursion"])
            .args([
                "tree/",
                "tree/one.txt",
                "tree/x.log",
                "tree/sub/",
                "tree/sub/two.txt",
            ])
            .status()
            .unwrap();
        assert!(made.success(), "tar {flags} {name}");
        let bytes = std::fs::read(work.path().join(name)).unwrap();
        run = run.file_bytes(&format!("files/{name}"), &bytes);
    }
    run
}

/// The run's output with the uploaded archive's temporary name written SRC.
fn uploads_as_src(out: &Outcome) -> Outcome {
    let temp = regex::Regex::new(r"/tmp/ansible-unarchive\.[A-Za-z0-9]+").unwrap();
    Outcome {
        code: out.code,
        stdout: temp.replace_all(&out.stdout, "SRC").into_owned(),
        stderr: out.stderr.clone(),
    }
}

#[test]
fn unarchive_unpacks_tar_archives_as_ansible_did_and_a_rerun_changes_nothing() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let dir_text = dir.to_str().unwrap();
    let run = archives(TestRun::new().playbook(&UNARCHIVE_PLAYBOOK.replace("DIR", dir_text)))
        .local_hosts(&hosts);
    let expected = |changed| Recap {
        ignored: 2,
        skipped: 2,
        ..recap(11, changed)
    };
    let first = uploads_as_src(&run.run());
    first.assert_code(0);
    assert_results(&first, dir_text, &[], UNARCHIVE_FIRST, &[]);
    assert_eq!(first.recap("h"), expected(8), "{}", first.stdout);
    let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
    assert_eq!(read("gz/tree/sub/two.txt"), "two\n");
    assert_eq!(read("xz/tree/one.txt"), "one\n");
    assert_eq!(read("strip/sub/two.txt"), "two\n");
    assert!(!dir.join("ex/tree/x.log").exists());
    assert_eq!(read("remote/tree/x.log"), "log\n");

    let again = uploads_as_src(&run.run());
    again.assert_code(0);
    assert_results(&again, dir_text, UNARCHIVE_SECOND, UNARCHIVE_FIRST, &[]);
    assert_eq!(again.recap("h"), expected(0), "{}", again.stdout);
}
