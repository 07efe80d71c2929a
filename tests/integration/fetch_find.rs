//! fetch and find against what ansible-playbook 2.21 did with the same playbook (`-c local`,
//! recorded here as data): each task's registered result (find's `files` as their sorted
//! paths and the set of per-file keys), the files fetch left on the controller, the recap,
//! and a second run that changes nothing.

use std::path::Path;

use crate::support::hosts::LocalHosts;
use crate::support::run::{Outcome, Recap, TestRun, recap};

/// The playbook both tools ran; `DIR` is the host's directory.
const PLAYBOOK: &str = r##"- hosts: all
  gather_facts: false
  vars:
    d: DIR
  tasks:
    - {name: dirs, file: {path: "{{ d }}/{{ item }}", state: directory}, loop: [src/sub/deep, flat]}
    - name: seed files
      copy:
        dest: "{{ d }}/src/{{ item.name }}"
        content: "{{ item.text }}"
        force: false
      loop:
        - {name: a.log, text: "alpha\nERROR one\n"}
        - {name: b.txt, text: "bravo\n"}
        - {name: sub/c.log, text: "charlie\nerror two\n"}
        - {name: sub/deep/d.log, text: "delta\n"}
        - {name: .hidden.log, text: "hidden\n"}
        - {name: big.bin, text: "{{ 'x' * 20000 }}"}
      loop_control: {label: "{{ item.name }}"}
    - {name: link, file: {src: "{{ d }}/src/sub", dest: "{{ d }}/src/lnk", state: link}}

    - {name: fe_host, fetch: {src: "{{ d }}/src/a.log", dest: "{{ d }}/got"}, register: fe_host}
    - {name: fe_flat, fetch: {src: "{{ d }}/src/b.txt", dest: "{{ d }}/flat/b.copy", flat: true}, register: fe_flat}
    - {name: fe_slash, fetch: {src: "{{ d }}/src/sub/c.log", dest: "{{ d }}/flat/", flat: true}, register: fe_slash}
    - {name: fe_missing, fetch: {src: "{{ d }}/src/nope", dest: "{{ d }}/got"}, register: fe_missing, ignore_errors: true}
    - {name: fe_missing_ok, fetch: {src: "{{ d }}/src/nope", dest: "{{ d }}/got", fail_on_missing: false}, register: fe_missing_ok}
    - {name: fe_dir, fetch: {src: "{{ d }}/src/sub", dest: "{{ d }}/got"}, register: fe_dir, ignore_errors: true}
    - {name: fe_flatdir, fetch: {src: "{{ d }}/src/b.txt", dest: "{{ d }}/flat", flat: true}, register: fe_flatdir, ignore_errors: true}
    - {name: fe_big, fetch: {src: "{{ d }}/src/big.bin", dest: "{{ d }}/got"}, register: fe_big}
    - {name: fe_check, fetch: {src: "{{ d }}/src/b.txt", dest: "{{ d }}/chk"}, register: fe_check, check_mode: true}

    - {name: fi_default, find: {paths: "{{ d }}/src"}, register: fi_default}
    - {name: fi_recurse, find: {paths: "{{ d }}/src", recurse: true, patterns: "*.log"}, register: fi_recurse}
    - {name: fi_hidden, find: {paths: "{{ d }}/src", recurse: true, hidden: true, patterns: ["*.log"], excludes: ["d*"]}, register: fi_hidden}
    - {name: fi_depth, find: {paths: "{{ d }}/src", recurse: true, depth: 2, file_type: any}, register: fi_depth}
    - {name: fi_contains, find: {paths: "{{ d }}/src", recurse: true, contains: "(?i)error"}, register: fi_contains}
    - {name: fi_whole, find: {paths: "{{ d }}/src", recurse: true, contains: "two", read_whole_file: true}, register: fi_whole}
    - {name: fi_regex, find: {paths: "{{ d }}/src", use_regex: true, patterns: ['^[ab]\..*$']}, register: fi_regex}
    - {name: fi_dirs, find: {paths: "{{ d }}/src", recurse: true, file_type: directory}, register: fi_dirs}
    - {name: fi_links, find: {paths: "{{ d }}/src", file_type: link}, register: fi_links}
    - {name: fi_follow, find: {paths: "{{ d }}/src", recurse: true, follow: true, patterns: "*.log"}, register: fi_follow}
    - {name: fi_size, find: {paths: "{{ d }}/src", size: 10k}, register: fi_size}
    - {name: fi_small, find: {paths: "{{ d }}/src", size: -10, recurse: true}, register: fi_small}
    - {name: fi_age, find: {paths: "{{ d }}/src", age: 1d}, register: fi_age}
    - {name: fi_young, find: {paths: "{{ d }}/src", age: -1h}, register: fi_young}
    - {name: fi_sum, find: {paths: "{{ d }}/src", patterns: "b.txt", get_checksum: true}, register: fi_sum}
    - {name: fi_missing, find: {paths: ["{{ d }}/nope", "{{ d }}/src/b.txt"]}, register: fi_missing}
    - {name: fi_limit, find: {paths: "{{ d }}/src", recurse: true, limit: 2}, register: fi_limit}
    - {name: fi_badage, find: {paths: "{{ d }}/src", age: "3x"}, register: fi_badage, ignore_errors: true}

    - name: results
      debug:
        msg: "{{ lookup('vars', item) | dict2items | rejectattr('key', 'in', ['invocation', 'diff', 'files', 'exception']) | items2dict | combine({'paths': lookup('vars', item).files | default([]) | map(attribute='path') | sort, 'keys': lookup('vars', item).files | default([]) | map('list') | map('sort') | unique }) }}"
      loop: [fe_host, fe_flat, fe_slash, fe_missing, fe_missing_ok, fe_dir, fe_flatdir, fe_big, fe_check, fi_default, fi_recurse, fi_hidden, fi_depth, fi_contains, fi_whole, fi_regex, fi_dirs, fi_links, fi_follow, fi_size, fi_small, fi_age, fi_young, fi_sum, fi_missing, fi_limit, fi_badage]
"##;

/// Each task's registered result as ansible-playbook 2.21 reported it (minus `invocation`,
/// `diff`, `exception` and `files`, with find's `files` as `paths` and `keys`), first run.
const FIRST_RUN: &[(&str, &str)] = &[
    (
        "fe_big",
        r#"{"changed": true, "checksum": "2cbe80a4a470a379e03546b5ed50465014bbe830", "dest": "DIR/got/hDIR/src/big.bin", "failed": false, "file": "DIR/src/big.bin", "keys": [], "md5sum": "e5d2c6fe7777b38038eb8315e1f5c734", "paths": [], "remote_checksum": "2cbe80a4a470a379e03546b5ed50465014bbe830", "remote_md5sum": null}"#,
    ),
    (
        "fe_check",
        r#"{"changed": false, "failed": false, "keys": [], "msg": "check mode not (yet) supported for this module", "paths": [], "skipped": true}"#,
    ),
    (
        "fe_dir",
        r#"{"changed": false, "failed": true, "keys": [], "msg": "remote file is a directory, fetch cannot work on directories", "paths": []}"#,
    ),
    (
        "fe_flat",
        r#"{"changed": true, "checksum": "bb596efe9e3023a502013767a0559a94a5eea4bc", "dest": "DIR/flat/b.copy", "failed": false, "file": "DIR/src/b.txt", "keys": [], "md5sum": "df34f5f71a4e812327ac9b04538386af", "paths": [], "remote_checksum": "bb596efe9e3023a502013767a0559a94a5eea4bc", "remote_md5sum": null}"#,
    ),
    (
        "fe_flatdir",
        r#"{"changed": false, "failed": true, "keys": [], "msg": "dest is an existing directory, use a trailing slash if you want to fetch src into that directory", "paths": []}"#,
    ),
    (
        "fe_host",
        r#"{"changed": true, "checksum": "8155da71a18991c2c486dbbb78f4cff746a16ba0", "dest": "DIR/got/hDIR/src/a.log", "failed": false, "file": "DIR/src/a.log", "keys": [], "md5sum": "9162a19b1c39d7304dc6b11c30f93002", "paths": [], "remote_checksum": "8155da71a18991c2c486dbbb78f4cff746a16ba0", "remote_md5sum": null}"#,
    ),
    (
        "fe_missing",
        r#"{"changed": false, "failed": true, "keys": [], "msg": "the remote file does not exist, not transferring, ignored", "paths": []}"#,
    ),
    (
        "fe_missing_ok",
        r#"{"changed": false, "failed": false, "file": "DIR/src/nope", "keys": [], "msg": "the remote file does not exist, not transferring, ignored", "paths": []}"#,
    ),
    (
        "fe_slash",
        r#"{"changed": true, "checksum": "6d44ce7efe7cc51bc6f319de876c969123cdfdc9", "dest": "DIR/flat/c.log", "failed": false, "file": "DIR/src/sub/c.log", "keys": [], "md5sum": "f3fb7524f1a7735b7887459c9780cacc", "paths": [], "remote_checksum": "6d44ce7efe7cc51bc6f319de876c969123cdfdc9", "remote_md5sum": null}"#,
    ),
    (
        "fi_age",
        r#"{"changed": false, "examined": 6, "failed": false, "keys": [], "matched": 0, "msg": "All paths examined", "paths": [], "skipped_paths": {}}"#,
    ),
    (
        "fi_badage",
        r#"{"age": "3x", "changed": false, "failed": true, "keys": [], "msg": "failed to process age", "paths": []}"#,
    ),
    (
        "fi_contains",
        r#"{"changed": false, "examined": 9, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 2, "msg": "All paths examined", "paths": ["DIR/src/a.log", "DIR/src/sub/c.log"], "skipped_paths": {}}"#,
    ),
    (
        "fi_default",
        r#"{"changed": false, "examined": 6, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 3, "msg": "All paths examined", "paths": ["DIR/src/a.log", "DIR/src/b.txt", "DIR/src/big.bin"], "skipped_paths": {}}"#,
    ),
    (
        "fi_depth",
        r#"{"changed": false, "examined": 9, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 7, "msg": "All paths examined", "paths": ["DIR/src/a.log", "DIR/src/b.txt", "DIR/src/big.bin", "DIR/src/lnk", "DIR/src/sub", "DIR/src/sub/c.log", "DIR/src/sub/deep"], "skipped_paths": {}}"#,
    ),
    (
        "fi_dirs",
        r#"{"changed": false, "examined": 9, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 2, "msg": "All paths examined", "paths": ["DIR/src/sub", "DIR/src/sub/deep"], "skipped_paths": {}}"#,
    ),
    (
        "fi_follow",
        r#"{"changed": false, "examined": 12, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 5, "msg": "All paths examined", "paths": ["DIR/src/a.log", "DIR/src/lnk/c.log", "DIR/src/lnk/deep/d.log", "DIR/src/sub/c.log", "DIR/src/sub/deep/d.log"], "skipped_paths": {}}"#,
    ),
    (
        "fi_hidden",
        r#"{"changed": false, "examined": 9, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 3, "msg": "All paths examined", "paths": ["DIR/src/.hidden.log", "DIR/src/a.log", "DIR/src/sub/c.log"], "skipped_paths": {}}"#,
    ),
    (
        "fi_limit",
        r#"{"changed": false, "examined": 6, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 2, "msg": "Limit of matches reached", "paths": ["DIR/src/a.log", "DIR/src/b.txt"], "skipped_paths": {}}"#,
    ),
    (
        "fi_links",
        r#"{"changed": false, "examined": 6, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 1, "msg": "All paths examined", "paths": ["DIR/src/lnk"], "skipped_paths": {}}"#,
    ),
    (
        "fi_missing",
        r#"{"changed": false, "examined": 0, "failed": false, "keys": [], "matched": 0, "msg": "Not all paths examined, check warnings for details", "paths": [], "skipped_paths": {"DIR/nope": "'DIR/nope' is not a directory", "DIR/src/b.txt": "'DIR/src/b.txt' is not a directory"}, "warnings": ["Skipped 'DIR/nope' path due to this access issue: 'DIR/nope' is not a directory\n", "Skipped 'DIR/src/b.txt' path due to this access issue: 'DIR/src/b.txt' is not a directory\n"]}"#,
    ),
    (
        "fi_recurse",
        r#"{"changed": false, "examined": 9, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 3, "msg": "All paths examined", "paths": ["DIR/src/a.log", "DIR/src/sub/c.log", "DIR/src/sub/deep/d.log"], "skipped_paths": {}}"#,
    ),
    (
        "fi_regex",
        r#"{"changed": false, "examined": 6, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 2, "msg": "All paths examined", "paths": ["DIR/src/a.log", "DIR/src/b.txt"], "skipped_paths": {}}"#,
    ),
    (
        "fi_size",
        r#"{"changed": false, "examined": 6, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 1, "msg": "All paths examined", "paths": ["DIR/src/big.bin"], "skipped_paths": {}}"#,
    ),
    (
        "fi_small",
        r#"{"changed": false, "examined": 9, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 2, "msg": "All paths examined", "paths": ["DIR/src/b.txt", "DIR/src/sub/deep/d.log"], "skipped_paths": {}}"#,
    ),
    (
        "fi_sum",
        r#"{"changed": false, "examined": 6, "failed": false, "keys": [["atime", "blocks", "checksum", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 1, "msg": "All paths examined", "paths": ["DIR/src/b.txt"], "skipped_paths": {}}"#,
    ),
    (
        "fi_whole",
        r#"{"changed": false, "examined": 9, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 1, "msg": "All paths examined", "paths": ["DIR/src/sub/c.log"], "skipped_paths": {}}"#,
    ),
    (
        "fi_young",
        r#"{"changed": false, "examined": 6, "failed": false, "keys": [["atime", "blocks", "ctime", "dev", "disk_usage_bytes", "gid", "gr_name", "inode", "isblk", "ischr", "isdir", "isfifo", "isgid", "islnk", "isreg", "issock", "isuid", "mode", "mtime", "nlink", "path", "pw_name", "rgrp", "roth", "rusr", "size", "uid", "wgrp", "woth", "wusr", "xgrp", "xoth", "xusr"]], "matched": 3, "msg": "All paths examined", "paths": ["DIR/src/a.log", "DIR/src/b.txt", "DIR/src/big.bin"], "skipped_paths": {}}"#,
    ),
];

/// The results of the second run that differ from the first: fetch has nothing to bring.
const SECOND_RUN: &[(&str, &str)] = &[
    (
        "fe_big",
        r#"{"changed": false, "checksum": "2cbe80a4a470a379e03546b5ed50465014bbe830", "dest": "DIR/got/hDIR/src/big.bin", "failed": false, "file": "DIR/src/big.bin", "keys": [], "md5sum": "e5d2c6fe7777b38038eb8315e1f5c734", "paths": []}"#,
    ),
    (
        "fe_flat",
        r#"{"changed": false, "checksum": "bb596efe9e3023a502013767a0559a94a5eea4bc", "dest": "DIR/flat/b.copy", "failed": false, "file": "DIR/src/b.txt", "keys": [], "md5sum": "df34f5f71a4e812327ac9b04538386af", "paths": []}"#,
    ),
    (
        "fe_host",
        r#"{"changed": false, "checksum": "8155da71a18991c2c486dbbb78f4cff746a16ba0", "dest": "DIR/got/hDIR/src/a.log", "failed": false, "file": "DIR/src/a.log", "keys": [], "md5sum": "9162a19b1c39d7304dc6b11c30f93002", "paths": []}"#,
    ),
    (
        "fe_slash",
        r#"{"changed": false, "checksum": "6d44ce7efe7cc51bc6f319de876c969123cdfdc9", "dest": "DIR/flat/c.log", "failed": false, "file": "DIR/src/sub/c.log", "keys": [], "md5sum": "f3fb7524f1a7735b7887459c9780cacc", "paths": []}"#,
    ),
];

/// What is under DIR after both runs, as ansible-playbook left it (fetch's copies included).
const FILES: &[&str] = &[
    "flat/b.copy",
    "flat/c.log",
    "got/h/DIR/src/a.log",
    "got/h/DIR/src/big.bin",
    "src/.hidden.log",
    "src/a.log",
    "src/b.txt",
    "src/big.bin",
    "src/sub/c.log",
    "src/sub/deep/d.log",
];

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
fn assert_results(out: &Outcome, dir: &str, run: &[(&str, &str)], first: &[(&str, &str)]) {
    let got = results(out);
    assert_eq!(got.len(), first.len(), "{}", out.stdout);
    for (name, value) in &got {
        let recorded = run
            .iter()
            .chain(first)
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no recorded result for {name}"));
        let want: serde_json::Value =
            serde_json::from_str(&recorded.1.replace("DIR", dir)).unwrap();
        assert_eq!(value, &want, "task {name}\n{}", out.stdout);
    }
}

fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() && !path.is_symlink() {
                todo.push(path);
            } else if path.is_file() && !path.is_symlink() {
                found.push(
                    path.strip_prefix(dir)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    found.sort();
    found
}

#[test]
fn fetch_and_find_do_what_ansible_did_and_a_rerun_changes_nothing() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let dir_text = dir.to_str().unwrap();
    let run = TestRun::new()
        .playbook(&PLAYBOOK.replace("DIR", dir_text))
        .local_hosts(&hosts);
    let expected_recap = |changed| Recap {
        ignored: 4,
        skipped: 1,
        ..recap(30, changed)
    };

    let first = run.run();
    first.assert_code(0);
    assert_results(&first, dir_text, &[], FIRST_RUN);
    assert_eq!(first.recap("h"), expected_recap(7), "{}", first.stdout);
    let inner = dir_text.trim_start_matches('/');
    let want: Vec<String> = FILES
        .iter()
        .map(|f| f.replace("/DIR/", &format!("/{inner}/")))
        .collect();
    assert_eq!(files_under(&dir), want);
    assert_eq!(
        std::fs::read(dir.join("flat/c.log")).unwrap(),
        b"charlie\nerror two\n"
    );
    assert_eq!(
        std::fs::read(dir.join(format!("got/h/{inner}/src/big.bin"))).unwrap(),
        std::fs::read(dir.join("src/big.bin")).unwrap()
    );

    let second = run.run();
    second.assert_code(0);
    assert_results(&second, dir_text, SECOND_RUN, FIRST_RUN);
    assert_eq!(second.recap("h"), expected_recap(0), "{}", second.stdout);
    assert_eq!(files_under(&dir), want);
}

/// fetch from a Debian host over ssh (tests/debian/fetch-become/): a root-only file read
/// through sudo's agent, a flat one, one the login user may not read, with the results and
/// the copies ansible-playbook registered and left; a rerun brings nothing.
#[test]
fn fetch_over_ssh_with_become_matches_ansible() {
    if !crate::support::debian::available("fetch_over_ssh_with_become_matches_ansible") {
        return;
    }
    let (_host, _first, again) = crate::support::debian_scenario::check("fetch-become");
    assert!(
        !again.stdout.contains("changed: ["),
        "a rerun fetched again\n{}",
        again.stdout
    );
}
