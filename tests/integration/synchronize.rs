//! ansible.posix's synchronize, run natively over ssh, against what ansible-playbook 2.21
//! (ansible.posix from the `ansible` 14.5.0 package, rsync 3.5 on both ends) reported for
//! the same tree and steps, recorded here: rsync's itemized lines, the copied files with
//! their bytes, modes and times, a rerun that changes nothing, and `delete`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::Value;

use crate::support::hosts::SshHosts;
use crate::support::run::{Outcome, TestRun, recap};

const PLAYBOOK: &str = r#"- hosts: web
  gather_facts: false
  tasks:
    - synchronize: {src: "{{ src }}", dest: "{{ dest }}", delete: "{{ del | default(false) }}"}
      register: r
    - debug: var=r
"#;

/// 2020-01-01 and 2021-01-01, 00:00 UTC.
pub(crate) const Y2020: u64 = 1_577_836_800;
pub(crate) const Y2021: u64 = 1_609_459_200;

pub(crate) fn set_mtime(path: &Path, secs: u64) {
    let file = std::fs::File::open(path).unwrap();
    file.set_times(std::fs::FileTimes::new().set_modified(UNIX_EPOCH + Duration::from_secs(secs)))
        .unwrap();
}

pub(crate) fn registered(out: &Outcome) -> Value {
    let marker = "    \"r\": ";
    let start = out
        .stdout
        .find(marker)
        .unwrap_or_else(|| panic!("no r\n{}", out.stdout));
    let text = &out.stdout[start + marker.len()..];
    let end = text.find("\n    }\n").expect("the end of the value") + "\n    }".len();
    serde_json::from_str(&text[..end]).expect("debug output is JSON")
}

fn sync(hosts: &SshHosts, src: &Path, dest: &str, delete: bool) -> Outcome {
    let mut run = TestRun::new()
        .playbook(PLAYBOOK)
        .inventory(&hosts.inventory())
        .args(&[
            "-e",
            &format!("src={}", src.display()),
            "-e",
            &format!("dest={dest}"),
        ]);
    if delete {
        run = run.args(&["-e", "del=true"]);
    }
    let out = run.run();
    out.assert_code(0);
    out
}

#[track_caller]
pub(crate) fn assert_same_entry(src: &Path, copy: &Path) {
    let (s, c) = (
        std::fs::symlink_metadata(src).unwrap(),
        std::fs::symlink_metadata(copy).unwrap(),
    );
    assert_eq!(s.file_type(), c.file_type(), "{}", copy.display());
    if s.file_type().is_symlink() {
        assert_eq!(
            std::fs::read_link(src).unwrap(),
            std::fs::read_link(copy).unwrap()
        );
        return;
    }
    assert_eq!(
        s.permissions().mode() & 0o7777,
        c.permissions().mode() & 0o7777,
        "{}",
        copy.display()
    );
    assert_eq!(
        (s.mtime(), s.mtime_nsec()),
        (c.mtime(), c.mtime_nsec()),
        "{}",
        copy.display()
    );
    if s.is_file() {
        assert_eq!(std::fs::read(src).unwrap(), std::fs::read(copy).unwrap());
    }
}

#[test]
fn a_tree_goes_as_rsync_reports_it_a_rerun_changes_nothing_and_delete_removes_the_rest() {
    let hosts = SshHosts::start(&["web"]);
    let home = hosts.user("web").home.clone();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("sub")).unwrap();
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::write(src.join("a"), "alpha\n").unwrap();
    std::fs::write(src.join("z"), "zulu\n").unwrap();
    std::fs::set_permissions(src.join("z"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(src.join("sub/c"), "charlie\n").unwrap();
    std::os::unix::fs::symlink("a", src.join("lnk")).unwrap();
    for name in ["a", "z", "sub/c", "sub", "b", ""] {
        set_mtime(&src.join(name), Y2020);
    }

    let first = sync(&hosts, &src, "copy", false);
    assert_eq!(first.recap("web"), recap(2, 1));
    let r = registered(&first);
    assert_eq!(
        r["msg"],
        "created directory copy\ncd+++++++++ src/\n<f+++++++++ src/a\ncL+++++++++ src/lnk -> a\n\
         <f+++++++++ src/z\ncd+++++++++ src/b/\ncd+++++++++ src/sub/\n<f+++++++++ src/sub/c\n"
    );
    assert_eq!(r["rc"], 0);
    assert_eq!(r["stdout_lines"][0], "created directory copy");
    assert!(
        r["cmd"]
            .as_str()
            .unwrap()
            .starts_with("/usr/bin/rsync --delay-updates -F --compress --archive --rsh=")
    );
    for name in ["a", "z", "sub/c", "sub", "b", "lnk", ""] {
        assert_same_entry(&src.join(name), &home.join("copy/src").join(name));
    }

    let rerun = sync(&hosts, &src, "copy", false);
    assert_eq!(rerun.recap("web"), recap(2, 0));
    assert_eq!(registered(&rerun)["msg"], "");

    std::fs::write(src.join("a"), "alpha two\n").unwrap();
    set_mtime(&src.join("a"), Y2021);
    std::fs::set_permissions(src.join("sub/c"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(home.join("copy/src/extra"), "e\n").unwrap();
    std::fs::create_dir_all(home.join("copy/src/old/deep")).unwrap();
    std::fs::write(home.join("copy/src/old/deep/f"), "").unwrap();
    // Made by this test (root): the host's user must own them to remove them.
    let owner = std::fs::metadata(&home).unwrap();
    for made in ["extra", "old", "old/deep", "old/deep/f"] {
        std::os::unix::fs::chown(
            home.join("copy/src").join(made),
            Some(owner.uid()),
            Some(owner.gid()),
        )
        .unwrap();
    }
    let contents = format!("{}/", src.display());
    let third = sync(&hosts, Path::new(&contents), "copy/src", true);
    assert_eq!(third.recap("web"), recap(2, 1));
    assert_eq!(
        registered(&third)["msg"],
        ".d..t...... ./\n<f.st...... a\n.f...p..... sub/c\n*deleting   old/deep/f\n\
         *deleting   old/deep/\n*deleting   old/\n*deleting   extra\n"
    );
    for name in ["a", "z", "sub/c", "sub", "b", "lnk", ""] {
        assert_same_entry(&src.join(name), &home.join("copy/src").join(name));
    }
    assert!(!home.join("copy/src/extra").exists());
    assert!(!home.join("copy/src/old").exists());
}

#[test]
fn options_that_need_rsync_fail_the_task_naming_them() {
    let hosts = SshHosts::start(&["web"]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), "x").unwrap();
    let out = TestRun::new()
        .playbook(&format!(
            r#"- hosts: web
  gather_facts: false
  tasks:
    - synchronize: {{src: "{src}", dest: here, rsync_opts: ["--chmod=F644"]}}
      ignore_errors: true
    - ansible.posix.synchronize: {{src: "{src}", dest: here, rsync_path: "sudo rsync"}}
      ignore_errors: true
"#,
            src = dir.path().join("f").display()
        ))
        .inventory(&format!(
            "{}\nlocalhost ansible_connection=local\n",
            hosts.inventory()
        ))
        .run();
    out.assert_code(0);
    crate::support::run::assert_contains(
        &out,
        "rsync_opts: '--chmod=F644' is not supported by turbo-play's synchronize",
    );
    crate::support::run::assert_contains(
        &out,
        "turbo-play does not support the 'rsync_path' argument",
    );
    assert!(!hosts.user("web").home.join("here").exists());
}
