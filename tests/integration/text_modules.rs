//! lineinfile, blockinfile, replace and slurp against what ansible-playbook 2.21 did with
//! the same playbook (`-c local`, recorded here as data): the files it left, each task's
//! registered `changed`/`msg`/`rc`..., the recap, and a second run that changes nothing.

use crate::support::hosts::LocalHosts;
use crate::support::run::{Outcome, Recap, TestRun, assert_contains, assert_file, recap};

/// The playbook both tools ran; `DIR` is the host's directory.
const PLAYBOOK: &str = r##"- hosts: all
  gather_facts: false
  vars:
    d: DIR
  tasks:
    - name: seed files (first run only)
      copy:
        dest: "{{ d }}/{{ item.name }}"
        content: "{{ item.text }}"
        force: false
      loop:
        - {name: ini, text: "[a]\nk=1\n[b]\nk=2\n"}
        - {name: conf, text: "Listen 80\n#Listen 8080\nXms128m\n"}
        - {name: crlf, text: "a=1\r\nb=2\r\n"}
        - {name: noeol, text: "last"}
        - {name: hosts, text: "127.0.0.1 localhost\n10.0.0.1 old\n"}
        - {name: block, text: "one\ntwo\nthree\n"}
        - {name: rep, text: "port=80\nhost=a\n[s]\nport=80\n[t]\nport=80\n"}
        - {name: sudo, text: "root ALL\n%wheel ALL\n%wheel2 ALL\n"}
        - {name: managed, text: "head\n# BEGIN ANSIBLE MANAGED BLOCK\nold\n# END ANSIBLE MANAGED BLOCK\ntail\n"}
        - {name: withp, text: "a\n# BEGIN p\np\n# END p\nb\n"}
      loop_control: {label: "{{ item.name }}"}

    # lineinfile
    - {name: li_create, lineinfile: {path: "{{ d }}/new/li.conf", line: "a=1", create: true, mode: "0640"}, register: li_create}
    - {name: li_replace, lineinfile: {path: "{{ d }}/ini", regexp: "^k=", line: "k=9"}, register: li_replace}
    - {name: li_after, lineinfile: {path: "{{ d }}/ini", line: "x=1", insertafter: '^\[a\]'}, register: li_after}
    - {name: li_before_first, lineinfile: {path: "{{ d }}/ini", line: "# top", insertbefore: '^\[', firstmatch: true}, register: li_before_first}
    - {name: li_bof, lineinfile: {path: "{{ d }}/conf", line: "# managed", insertbefore: BOF}, register: li_bof}
    - {name: li_after_regexp, lineinfile: {path: "{{ d }}/conf", regexp: '^Listen ', insertafter: '^#Listen ', line: "Listen 8080"}, register: li_after_regexp}
    - {name: li_backrefs, lineinfile: {path: "{{ d }}/conf", regexp: '^(Xms)\d+m$', line: '\g<1>512m', backrefs: true}, register: li_backrefs}
    - {name: li_backrefs_none, lineinfile: {path: "{{ d }}/conf", regexp: '^Xmx(\d+)m$', line: 'Xmx\1', backrefs: true}, register: li_backrefs_none}
    - {name: li_crlf, lineinfile: {path: "{{ d }}/crlf", line: "c=3"}, register: li_crlf}
    - {name: li_noeol, lineinfile: {path: "{{ d }}/noeol", line: "next"}, register: li_noeol}
    - {name: li_search, lineinfile: {path: "{{ d }}/hosts", search_string: "10.0.0.1", line: "10.0.0.1 new"}, register: li_search}
    - {name: li_absent, lineinfile: {path: "{{ d }}/sudo", regexp: '^%wheel', state: absent}, register: li_absent}
    - {name: li_absent_missing, lineinfile: {path: "{{ d }}/nothing", line: "x", state: absent}, register: li_absent_missing}
    - {name: li_missing, lineinfile: {path: "{{ d }}/nothing", line: "x"}, register: li_missing, ignore_errors: true}
    - {name: li_mode, lineinfile: {path: "{{ d }}/hosts", line: "127.0.0.1 localhost", mode: "0600"}, register: li_mode}

    # blockinfile
    - {name: bi_create, blockinfile: {path: "{{ d }}/new/bi.conf", block: "k=v", create: true}, register: bi_create}
    - {name: bi_insert, blockinfile: {path: "{{ d }}/block", block: "x\ny", insertafter: "^one"}, register: bi_insert}
    - {name: bi_marker, blockinfile: {path: "{{ d }}/block", block: "z=1", marker: "// {mark} z", marker_begin: START, marker_end: STOP, insertbefore: BOF, append_newline: true}, register: bi_marker}
    - {name: bi_prepend, blockinfile: {path: "{{ d }}/block", block: "p", marker: "# {mark} p", prepend_newline: true}, register: bi_prepend}
    - {name: bi_update, blockinfile: {path: "{{ d }}/managed", block: "k=v2\nk2=v"}, register: bi_update}
    - {name: bi_remove, blockinfile: {path: "{{ d }}/withp", marker: "# {mark} p", state: absent}, register: bi_remove}
    - {name: bi_missing, blockinfile: {path: "{{ d }}/nothing", block: "x"}, register: bi_missing, ignore_errors: true}

    # replace
    - {name: rp_all, replace: {path: "{{ d }}/rep", regexp: '^port=80$', replace: "port=8080"}, register: rp_all}
    - {name: rp_section, replace: {path: "{{ d }}/rep", regexp: '^port=\d+$', replace: "port=1", after: '\[s\]', before: '\[t\]'}, register: rp_section}
    - {name: rp_backref, replace: {path: "{{ d }}/rep", regexp: '^(host)=a$', replace: '\1=b'}, register: rp_backref}
    - {name: rp_nothing, replace: {path: "{{ d }}/rep", regexp: "^zzz", replace: "y"}, register: rp_nothing}
    - {name: rp_nosection, replace: {path: "{{ d }}/rep", regexp: "x", after: "nowhere"}, register: rp_nosection}
    - {name: rp_missing, replace: {path: "{{ d }}/nothing", regexp: "x"}, register: rp_missing, ignore_errors: true}

    # slurp
    - {name: sl_file, slurp: {src: "{{ d }}/hosts"}, register: sl_file}
    - {name: sl_missing, slurp: {src: "{{ d }}/nothing"}, register: sl_missing, ignore_errors: true}

    - name: results
      debug:
        msg: "{{ lookup('vars', item) | dict2items | selectattr('key', 'in', ['changed', 'failed', 'msg', 'rc', 'found', 'content', 'source', 'encoding']) | items2dict }}"
      loop: [li_create, li_replace, li_after, li_before_first, li_bof, li_after_regexp, li_backrefs, li_backrefs_none, li_crlf, li_noeol, li_search, li_absent, li_absent_missing, li_missing, li_mode, bi_create, bi_insert, bi_marker, bi_prepend, bi_update, bi_remove, bi_missing, rp_all, rp_section, rp_backref, rp_nothing, rp_nosection, rp_missing, sl_file, sl_missing]
"##;

/// Each task's registered result as ansible-playbook 2.21 reported it (the keys the
/// playbook's last task keeps), first run.
const FIRST_RUN: &[(&str, &str)] = &[
    (
        "li_create",
        r#"{"changed": true, "failed": false, "msg": "line added and ownership, perms or SE linux context changed"}"#,
    ),
    (
        "li_replace",
        r#"{"changed": true, "failed": false, "msg": "line replaced"}"#,
    ),
    (
        "li_after",
        r#"{"changed": true, "failed": false, "msg": "line added"}"#,
    ),
    (
        "li_before_first",
        r#"{"changed": true, "failed": false, "msg": "line added"}"#,
    ),
    (
        "li_bof",
        r#"{"changed": true, "failed": false, "msg": "line added"}"#,
    ),
    (
        "li_after_regexp",
        r#"{"changed": true, "failed": false, "msg": "line replaced"}"#,
    ),
    (
        "li_backrefs",
        r#"{"changed": true, "failed": false, "msg": "line replaced"}"#,
    ),
    (
        "li_backrefs_none",
        r#"{"changed": false, "failed": false, "msg": ""}"#,
    ),
    (
        "li_crlf",
        r#"{"changed": true, "failed": false, "msg": "line added"}"#,
    ),
    (
        "li_noeol",
        r#"{"changed": true, "failed": false, "msg": "line added"}"#,
    ),
    (
        "li_search",
        r#"{"changed": true, "failed": false, "msg": "line replaced"}"#,
    ),
    (
        "li_absent",
        r#"{"changed": true, "failed": false, "found": 2, "msg": "2 line(s) removed"}"#,
    ),
    (
        "li_absent_missing",
        r#"{"changed": false, "failed": false, "msg": "file not present"}"#,
    ),
    (
        "li_missing",
        r#"{"changed": false, "failed": true, "msg": "Destination DIR/nothing does not exist !", "rc": 257}"#,
    ),
    (
        "li_mode",
        r#"{"changed": true, "failed": false, "msg": "ownership, perms or SE linux context changed"}"#,
    ),
    (
        "bi_create",
        r#"{"changed": true, "failed": false, "msg": "File created"}"#,
    ),
    (
        "bi_insert",
        r#"{"changed": true, "failed": false, "msg": "Block inserted"}"#,
    ),
    (
        "bi_marker",
        r#"{"changed": true, "failed": false, "msg": "Block inserted"}"#,
    ),
    (
        "bi_prepend",
        r#"{"changed": true, "failed": false, "msg": "Block inserted"}"#,
    ),
    (
        "bi_update",
        r#"{"changed": true, "failed": false, "msg": "Block inserted"}"#,
    ),
    (
        "bi_remove",
        r#"{"changed": true, "failed": false, "msg": "Block removed"}"#,
    ),
    (
        "bi_missing",
        r#"{"changed": false, "failed": true, "msg": "Path DIR/nothing does not exist !", "rc": 257}"#,
    ),
    (
        "rp_all",
        r#"{"changed": true, "failed": false, "msg": "3 replacements made", "rc": 0}"#,
    ),
    (
        "rp_section",
        r#"{"changed": true, "failed": false, "msg": "1 replacements made", "rc": 0}"#,
    ),
    (
        "rp_backref",
        r#"{"changed": true, "failed": false, "msg": "1 replacements made", "rc": 0}"#,
    ),
    (
        "rp_nothing",
        r#"{"changed": false, "failed": false, "msg": "", "rc": 0}"#,
    ),
    (
        "rp_nosection",
        r#"{"changed": false, "failed": false, "msg": "Pattern for before/after params did not match the given file: nowhere(?P<subsection>.*)", "rc": 0}"#,
    ),
    (
        "rp_missing",
        r#"{"changed": false, "failed": true, "msg": "Path DIR/nothing does not exist !", "rc": 257}"#,
    ),
    (
        "sl_file",
        r#"{"changed": false, "content": "MTI3LjAuMC4xIGxvY2FsaG9zdAoxMC4wLjAuMSBuZXcK", "encoding": "base64", "failed": false, "source": "DIR/hosts"}"#,
    ),
    (
        "sl_missing",
        r#"{"changed": false, "failed": true, "msg": "File not found: DIR/nothing"}"#,
    ),
];

/// The same on the second run, for the results that differ from "nothing to do"
/// (`changed: false`, `msg: ""`).
const SECOND_RUN: &[(&str, &str)] = &[
    (
        "li_absent",
        r#"{"changed": false, "failed": false, "found": 0, "msg": ""}"#,
    ),
    (
        "li_absent_missing",
        r#"{"changed": false, "failed": false, "msg": "file not present"}"#,
    ),
    (
        "li_missing",
        r#"{"changed": false, "failed": true, "msg": "Destination DIR/nothing does not exist !", "rc": 257}"#,
    ),
    (
        "bi_missing",
        r#"{"changed": false, "failed": true, "msg": "Path DIR/nothing does not exist !", "rc": 257}"#,
    ),
    (
        "rp_all",
        r#"{"changed": false, "failed": false, "msg": "", "rc": 0}"#,
    ),
    (
        "rp_section",
        r#"{"changed": false, "failed": false, "msg": "", "rc": 0}"#,
    ),
    (
        "rp_backref",
        r#"{"changed": false, "failed": false, "msg": "", "rc": 0}"#,
    ),
    (
        "rp_nothing",
        r#"{"changed": false, "failed": false, "msg": "", "rc": 0}"#,
    ),
    (
        "rp_nosection",
        r#"{"changed": false, "failed": false, "msg": "Pattern for before/after params did not match the given file: nowhere(?P<subsection>.*)", "rc": 0}"#,
    ),
    (
        "rp_missing",
        r#"{"changed": false, "failed": true, "msg": "Path DIR/nothing does not exist !", "rc": 257}"#,
    ),
    (
        "sl_file",
        r#"{"changed": false, "content": "MTI3LjAuMC4xIGxvY2FsaG9zdAoxMC4wLjAuMSBuZXcK", "encoding": "base64", "failed": false, "source": "DIR/hosts"}"#,
    ),
    (
        "sl_missing",
        r#"{"changed": false, "failed": true, "msg": "File not found: DIR/nothing"}"#,
    ),
];

/// The files ansible-playbook 2.21 left (path under DIR, mode, bytes).
const FILES: &[(&str, u32, &str)] = &[
    (
        "block",
        0o644,
        "// START z\nz=1\n// STOP z\n\none\n# BEGIN ANSIBLE MANAGED BLOCK\nx\ny\n# END ANSIBLE MANAGED BLOCK\ntwo\nthree\n\n# BEGIN p\np\n# END p\n",
    ),
    (
        "conf",
        0o644,
        "# managed\nListen 8080\n#Listen 8080\nXms512m\n",
    ),
    ("crlf", 0o644, "a=1\nb=2\nc=3\n"),
    ("hosts", 0o600, "127.0.0.1 localhost\n10.0.0.1 new\n"),
    ("ini", 0o644, "# top\n[a]\nx=1\nk=1\n[b]\nk=9\n"),
    (
        "managed",
        0o644,
        "head\n# BEGIN ANSIBLE MANAGED BLOCK\nk=v2\nk2=v\n# END ANSIBLE MANAGED BLOCK\ntail\n",
    ),
    (
        "new/bi.conf",
        0o644,
        "# BEGIN ANSIBLE MANAGED BLOCK\nk=v\n# END ANSIBLE MANAGED BLOCK\n",
    ),
    ("new/li.conf", 0o640, "a=1\n"),
    ("noeol", 0o644, "last\nnext\n"),
    (
        "rep",
        0o644,
        "port=8080\nhost=b\n[s]\nport=1\n[t]\nport=8080\n",
    ),
    ("sudo", 0o644, "root ALL\n"),
    ("withp", 0o644, "a\nb\n"),
];

/// The registered results the playbook's `results` task printed, by task name.
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

#[track_caller]
fn assert_results(out: &Outcome, dir: &str, expected: &[(&str, &str)], unlisted_is_noop: bool) {
    let got = results(out);
    if !unlisted_is_noop {
        assert_eq!(got.len(), expected.len(), "{}", out.stdout);
    }
    for (name, value) in &got {
        let want = match expected.iter().find(|(n, _)| n == name) {
            Some((_, json)) => json.replace("DIR", dir),
            None if unlisted_is_noop => r#"{"changed": false, "failed": false, "msg": ""}"#.into(),
            None => panic!("no recorded result for {name}"),
        };
        let want: serde_json::Value = serde_json::from_str(&want).unwrap();
        assert_eq!(value, &want, "task {name}\n{}", out.stdout);
    }
}

#[test]
fn text_modules_do_what_ansible_did_and_a_rerun_changes_nothing() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let dir_text = dir.to_str().unwrap();
    let run = TestRun::new()
        .playbook(&PLAYBOOK.replace("DIR", dir_text))
        .local_hosts(&hosts);

    let first = run.run();
    first.assert_code(0);
    assert_results(&first, dir_text, FIRST_RUN, false);
    assert_eq!(
        first.recap("h"),
        Recap {
            ignored: 4,
            ..recap(32, 22)
        },
        "{}",
        first.stdout
    );
    for (path, mode, bytes) in FILES {
        assert_file(&dir.join(path), bytes.as_bytes(), *mode);
    }

    let second = run.run();
    second.assert_code(0);
    assert_eq!(results(&second).len(), FIRST_RUN.len());
    assert_results(&second, dir_text, SECOND_RUN, true);
    assert_eq!(
        second.recap("h"),
        Recap {
            ignored: 4,
            ..recap(32, 0)
        },
        "{}",
        second.stdout
    );
    for (path, mode, bytes) in FILES {
        assert_file(&dir.join(path), bytes.as_bytes(), *mode);
    }
}

/// Check mode with --diff: every change reported, diffs shown, nothing written.
const CHECK_PLAYBOOK: &str = r##"- hosts: all
  gather_facts: false
  vars:
    d: DIR
  tasks:
    - {name: li, lineinfile: {path: "{{ d }}/f", line: "b=2", mode: "0600"}, register: li}
    - {name: li_new, lineinfile: {path: "{{ d }}/new", line: "x", create: true}, register: li_new}
    - {name: bi, blockinfile: {path: "{{ d }}/f", block: "k=v"}, register: bi}
    - {name: rp, replace: {path: "{{ d }}/f", regexp: "^a=1$", replace: "a=2"}, register: rp}
    - {name: sl, slurp: {src: "{{ d }}/f"}, register: sl}
    - name: results
      debug:
        msg: "{{ lookup('vars', item) | dict2items | selectattr('key', 'in', ['changed', 'failed', 'msg', 'rc', 'diff', 'content']) | items2dict }}"
      loop: [li, li_new, bi, rp, sl]
"##;

/// What ansible-playbook 2.21 registered with `--check --diff`.
const CHECK_RUN: &[(&str, &str)] = &[
    (
        "li",
        r#"{"changed": true, "diff": [{"after": "a=1\nb=2\n", "after_header": "DIR/f (content)", "before": "a=1\n", "before_header": "DIR/f (content)"}, {"after": {"mode": "0600"}, "after_header": "DIR/f (file attributes)", "before": {"mode": "0644"}, "before_header": "DIR/f (file attributes)"}], "failed": false, "msg": "line added and ownership, perms or SE linux context changed"}"#,
    ),
    (
        "li_new",
        r#"{"changed": true, "diff": {"after": "x\n", "after_header": "DIR/new (content)", "before": "", "before_header": "DIR/new (content)"}, "failed": false, "msg": "line added"}"#,
    ),
    (
        "bi",
        r#"{"changed": true, "diff": [{"after": "a=1\n# BEGIN ANSIBLE MANAGED BLOCK\nk=v\n# END ANSIBLE MANAGED BLOCK\n", "after_header": "DIR/f (content)", "before": "a=1\n", "before_header": "DIR/f (content)"}, {"after_header": "DIR/f (file attributes)", "before_header": "DIR/f (file attributes)"}], "failed": false, "msg": "Block inserted"}"#,
    ),
    (
        "rp",
        r#"{"changed": true, "diff": {"after": "a=2\n", "after_header": "DIR/f", "before": "a=1\n", "before_header": "DIR/f"}, "failed": false, "msg": "1 replacements made", "rc": 0}"#,
    ),
    (
        "sl",
        r#"{"changed": false, "content": "YT0xCg==", "failed": false}"#,
    ),
];

#[test]
fn check_mode_reports_changes_and_diffs_without_writing() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let dir_text = dir.to_str().unwrap();
    std::fs::write(dir.join("f"), "a=1\n").unwrap();
    let out = TestRun::new()
        .playbook(&CHECK_PLAYBOOK.replace("DIR", dir_text))
        .local_hosts(&hosts)
        .args(&["--check", "--diff"])
        .run();
    out.assert_code(0);
    assert_results(&out, dir_text, CHECK_RUN, false);
    assert_eq!(out.recap("h"), recap(6, 4), "{}", out.stdout);
    assert_file(&dir.join("f"), b"a=1\n", 0o644);
    assert!(!dir.join("new").exists(), "check mode created a file");
    // The content diffs as ansible-playbook showed them.
    for shown in [
        format!(
            "--- before: {dir_text}/f (content)\n+++ after: {dir_text}/f (content)\n@@ -1 +1,2 @@\n a=1\n+b=2\n"
        ),
        format!(
            "--- before: {dir_text}/new (content)\n+++ after: {dir_text}/new (content)\n@@ -0,0 +1 @@\n+x\n"
        ),
        format!("--- before: {dir_text}/f\n+++ after: {dir_text}/f\n@@ -1 +1 @@\n-a=1\n+a=2\n"),
    ] {
        assert_contains(&out, &shown);
    }
}

/// Writes through a symlink, with backup and validate.
const LINK_PLAYBOOK: &str = r##"- hosts: all
  gather_facts: false
  vars:
    d: DIR
  tasks:
    - {name: li_backup, lineinfile: {path: "{{ d }}/link", line: "b=2", backup: true, validate: "grep -q b=2 %s"}, register: li_backup}
    - {name: li_invalid, lineinfile: {path: "{{ d }}/link", line: "c=3", validate: "grep -q nomatch %s"}, register: li_invalid, ignore_errors: true}
    - {name: bi_backup, blockinfile: {path: "{{ d }}/link", block: "k", backup: true}, register: bi_backup}
    - {name: rp_backup, replace: {path: "{{ d }}/link", regexp: "^k$", replace: "K", backup: true}, register: rp_backup}
    - name: results
      debug:
        msg: "{{ lookup('vars', item) | dict2items | selectattr('key', 'in', ['changed', 'failed', 'msg', 'rc']) | items2dict }}"
      loop: [li_backup, li_invalid, bi_backup, rp_backup]
"##;

/// What ansible-playbook 2.21 registered.
const LINK_RUN: &[(&str, &str)] = &[
    (
        "li_backup",
        r#"{"changed": true, "failed": false, "msg": "line added"}"#,
    ),
    (
        "li_invalid",
        r#"{"changed": false, "failed": true, "msg": "failed to validate: rc:1 error:"}"#,
    ),
    (
        "bi_backup",
        r#"{"changed": true, "failed": false, "msg": "Block inserted"}"#,
    ),
    (
        "rp_backup",
        r#"{"changed": true, "failed": false, "msg": "1 replacements made", "rc": 0}"#,
    ),
];

#[test]
fn a_symlinked_file_is_edited_in_place_with_backups_and_validation() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let dir_text = dir.to_str().unwrap();
    std::fs::write(dir.join("real"), "a=1\n").unwrap();
    std::os::unix::fs::symlink("real", dir.join("link")).unwrap();
    let out = TestRun::new()
        .playbook(&LINK_PLAYBOOK.replace("DIR", dir_text))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_results(&out, dir_text, LINK_RUN, false);
    assert_eq!(
        out.recap("h"),
        Recap {
            ignored: 1,
            ..recap(5, 3)
        },
        "{}",
        out.stdout
    );
    let text = "a=1\nb=2\n# BEGIN ANSIBLE MANAGED BLOCK\nK\n# END ANSIBLE MANAGED BLOCK\n";
    assert_file(&dir.join("real"), text.as_bytes(), 0o644);
    assert!(
        dir.join("link")
            .symlink_metadata()
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // Ansible names the backups after the link (`link.PID.DATE~`); the agent's backup
    // is named after the file it replaces, the link's target.
    let backups: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("real.") && n.ends_with('~'))
        .collect();
    assert!(!backups.is_empty(), "no backup among {backups:?}");
}

/// A loop's items over one file: each sees what the items before it wrote, as in Ansible.
const LOOP_PLAYBOOK: &str = r##"- hosts: all
  gather_facts: false
  tasks:
    - lineinfile: {path: DIR/f, line: "{{ item }}"}
      loop: [x, y, z, x]
      register: r
    - blockinfile: {path: DIR/f, block: "{{ item }}", marker: "# {mark} {{ item }}"}
      loop: [b1, b2]
    - replace: {path: DIR/f, regexp: "{{ item.a }}", replace: "{{ item.b }}"}
      loop: [{a: '^a$', b: A}, {a: '^A$', b: AA}]
    - lineinfile: {path: "DIR/new{{ item }}", line: "{{ item }}", create: true}
      loop: [1, 2]
    - lineinfile: {path: "DIR/same", line: "{{ item }}", create: true}
      loop: [1, 2]
    - debug: msg="{{ r.results | map(attribute='msg') | list }}"
"##;

#[test]
fn a_loop_over_one_file_edits_it_item_after_item() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let dir_text = dir.to_str().unwrap();
    std::fs::write(dir.join("f"), "a\n").unwrap();
    let run = TestRun::new()
        .playbook(&LOOP_PLAYBOOK.replace("DIR", dir_text))
        .local_hosts(&hosts);
    let out = run.run();
    out.assert_code(0);
    // What ansible-playbook 2.21 left and reported.
    assert_eq!(out.recap("h"), recap(6, 5), "{}", out.stdout);
    assert_contains(
        &out,
        "\"msg\": [\n        \"line added\",\n        \"line added\",\n        \"line added\",\n        \"\"\n    ]",
    );
    let f = "AA\nx\ny\nz\n# BEGIN b1\nb1\n# END b1\n# BEGIN b2\nb2\n# END b2\n";
    for (name, bytes) in [
        ("f", f),
        ("same", "1\n2\n"),
        ("new1", "1\n"),
        ("new2", "2\n"),
    ] {
        assert_file(&dir.join(name), bytes.as_bytes(), 0o644);
    }
    let again = run.run();
    again.assert_code(0);
    assert_eq!(again.recap("h"), recap(6, 0), "{}", again.stdout);
    assert_file(&dir.join("f"), f.as_bytes(), 0o644);
}

/// A file larger than one ReadFile reply (8 MiB) is read page by page, edited and
/// slurped whole.
#[test]
fn files_past_one_read_page_are_edited_and_slurped_whole() {
    use base64::Engine;
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let text: String = (0..450_000).map(|i| format!("line {i:014}\n")).collect();
    assert!(text.len() > 8 << 20);
    std::fs::write(dir.join("big"), &text).unwrap();
    let edited = format!(
        "{}the end\n",
        text.replacen("line 00000000000007\n", "seven\n", 1)
    );
    let encoded = base64::engine::general_purpose::STANDARD.encode(&edited);
    let playbook = format!(
        "- hosts: all
  gather_facts: false
  tasks:
    - lineinfile: {{path: {d}/big, regexp: '^line 00000000000007$', line: seven}}
    - lineinfile: {{path: {d}/big, line: the end}}
    - slurp: {{src: {d}/big}}
      register: s
    - assert:
        that:
          - s.content | length == {len}
          - s.content[-24:] == '{tail}'
",
        d = dir.display(),
        len = encoded.len(),
        tail = &encoded[encoded.len() - 24..]
    );
    let out = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(4, 2), "{}", out.stdout);
    assert_file(&dir.join("big"), edited.as_bytes(), 0o644);
}

/// A loop over one file whose items are planned on the content the items before them
/// leave: one item the controller cannot predict (it sets a mode) goes again from its
/// own read, and what each item reports is what ansible-playbook 2.21.5 reported.
#[test]
fn a_loop_over_one_file_with_an_item_that_sets_a_mode_matches_ansible() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    std::fs::write(dir.join("f"), "a\n").unwrap();
    let playbook = r#"- hosts: all
  gather_facts: false
  tasks:
    - lineinfile:
        path: DIR/f
        line: "{{ item.l }}"
        mode: "{{ item.m | default(omit) }}"
      loop: [{l: b}, {l: c, m: "0600"}, {l: d}, {l: a}, {l: e}]
      register: r
    - debug: msg="{{ r.results | map(attribute='changed') | list }} {{ r.results | map(attribute='msg') | list }}"
"#;
    let run = TestRun::new()
        .playbook(&playbook.replace("DIR", dir.to_str().unwrap()))
        .local_hosts(&hosts);
    let out = run.run();
    out.assert_code(0);
    assert_contains(
        &out,
        "\"msg\": \"[True, True, True, False, True] ['line added', 'line added and ownership, perms or SE linux context changed', 'line added', '', 'line added']\"",
    );
    assert_file(&dir.join("f"), b"a\nb\nc\nd\ne\n", 0o600);
    // A rerun changes nothing.
    let again = run.run();
    again.assert_code(0);
    assert_eq!(again.recap("h"), recap(2, 0), "{}", again.stdout);
}
