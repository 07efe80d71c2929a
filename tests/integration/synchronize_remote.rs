//! synchronize where rsync would not run from the controller to the host: `mode: pull`
//! (the host's tree to the controller), `delegate_to` the host itself (a copy within the
//! host) and `delegate_to` another host (the controller relays between the two hosts'
//! agents), and files larger than a frame. The expected lines are what ansible-playbook
//! 2.21.5 with ansible.posix (the `ansible` 14.5.0 package, rsync 3.5 on every end)
//! reported for the same trees, playbooks and steps.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::support::hosts::SshHosts;
use crate::support::run::{Outcome, TestRun, recap};
use crate::support::sudo::SudoRule;
use crate::synchronize::{Y2020, Y2021, assert_same_entry, registered, set_mtime};

/// The test tree: `a`, `z` (0755), `sub/c`, `lnk -> a` and an empty `b/`, all of 2020.
fn make_tree(root: &Path) {
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(root.join("b")).unwrap();
    std::fs::write(root.join("a"), "alpha\n").unwrap();
    std::fs::write(root.join("z"), "zulu\n").unwrap();
    std::fs::set_permissions(
        root.join("z"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::fs::write(root.join("sub/c"), "charlie\n").unwrap();
    std::os::unix::fs::symlink("a", root.join("lnk")).unwrap();
    for name in ["a", "z", "sub/c", "sub", "b", ""] {
        set_mtime(&root.join(name), Y2020);
    }
}

const TREE: [&str; 7] = ["a", "z", "sub/c", "sub", "b", "lnk", ""];

fn playbook(mode: &str, delegate: Option<&str>) -> String {
    let delegate = delegate
        .map(|d| format!("      delegate_to: {d}\n"))
        .unwrap_or_default();
    format!(
        r#"- hosts: web
  gather_facts: false
  tasks:
    - synchronize:
        src: "{{{{ src }}}}"
        dest: "{{{{ dest }}}}"
        mode: {mode}
        delete: "{{{{ del | default(false) }}}}"
{delegate}      register: r
    - debug: var=r
"#
    )
}

fn sync(hosts: &SshHosts, yaml: &str, src: &str, dest: &str, extra: &[&str]) -> Outcome {
    let out = TestRun::new()
        .playbook(yaml)
        .inventory(&hosts.inventory())
        .args(&["-e", &format!("src={src}"), "-e", &format!("dest={dest}")])
        .args(extra)
        .run();
    out.assert_code(0);
    out
}

/// What Ansible printed for a new tree `srcdir` landing in `dest`, with `sent` for a file.
fn new_tree_lines(dest: &str, sent: char) -> String {
    format!(
        "created directory {dest}\ncd+++++++++ srcdir/\n{sent}f+++++++++ srcdir/a\n\
         cL+++++++++ srcdir/lnk -> a\n{sent}f+++++++++ srcdir/z\ncd+++++++++ srcdir/b/\n\
         cd+++++++++ srcdir/sub/\n{sent}f+++++++++ srcdir/sub/c\n"
    )
}

#[test]
fn pull_brings_the_hosts_tree_to_the_controller_as_rsync_does() {
    let hosts = SshHosts::start(&["web"]);
    let user = hosts.user("web");
    let src = user.home.join("srcdir");
    make_tree(&src);
    user.give(&src);
    let local = tempfile::tempdir().unwrap();
    let dest = local.path().join("pulled");
    let dest_text = dest.display().to_string();
    let yaml = playbook("pull", None);

    let checked = sync(&hosts, &yaml, "srcdir", &dest_text, &["--check"]);
    assert_eq!(checked.recap("web"), recap(2, 1));
    assert_eq!(registered(&checked)["msg"], new_tree_lines(&dest_text, '>'));
    assert!(!dest.exists(), "check mode wrote {}", dest.display());

    let first = sync(&hosts, &yaml, "srcdir", &dest_text, &[]);
    assert_eq!(first.recap("web"), recap(2, 1));
    let r = registered(&first);
    assert_eq!(r["msg"], new_tree_lines(&dest_text, '>'));
    assert_eq!(
        r["cmd"],
        format!(
            "/usr/bin/rsync --delay-updates -F --compress --archive \
             --rsh='/usr/bin/ssh -S none -i {key} -o Port={port} -o StrictHostKeyChecking=no \
             -o UserKnownHostsFile=/dev/null' --out-format='<<CHANGED>>%i %n%L' \
             {user}@127.0.0.1:srcdir {dest_text}",
            key = hosts.sshd.user_key.display(),
            port = hosts.sshd.port,
            user = user.name,
        )
    );
    for name in TREE {
        assert_same_entry(&src.join(name), &dest.join("srcdir").join(name));
    }
    // The controller runs as root, so rsync's receiver kept the owner (by name).
    let uid = std::fs::metadata(&user.home).unwrap().uid();
    assert_eq!(std::fs::metadata(dest.join("srcdir/a")).unwrap().uid(), uid);

    let rerun = sync(&hosts, &yaml, "srcdir", &dest_text, &[]);
    assert_eq!(rerun.recap("web"), recap(2, 0));
    assert_eq!(registered(&rerun)["msg"], "");

    std::fs::write(src.join("a"), "alpha two\n").unwrap();
    set_mtime(&src.join("a"), Y2021);
    std::fs::set_permissions(
        src.join("sub/c"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let copy = dest.join("srcdir");
    std::fs::write(copy.join("extra"), "e\n").unwrap();
    std::fs::create_dir_all(copy.join("old/deep")).unwrap();
    std::fs::write(copy.join("old/deep/f"), "").unwrap();
    let third = sync(
        &hosts,
        &yaml,
        "srcdir/",
        &copy.display().to_string(),
        &["-e", "del=true"],
    );
    assert_eq!(third.recap("web"), recap(2, 1));
    assert_eq!(
        registered(&third)["msg"],
        ".d..t...... ./\n>f.st...... a\n.f...p..... sub/c\n*deleting   old/deep/f\n\
         *deleting   old/deep/\n*deleting   old/\n*deleting   extra\n"
    );
    for name in TREE {
        assert_same_entry(&src.join(name), &copy.join(name));
    }
    assert!(!copy.join("extra").exists() && !copy.join("old").exists());
}

#[test]
fn delegated_to_itself_the_host_copies_within_itself() {
    let hosts = SshHosts::start(&["web"]);
    let user = hosts.user("web");
    let src = user.home.join("srcdir");
    make_tree(&src);
    user.give(&src);
    let dest = user.home.join("copy_self");
    let (src_text, dest_text) = (src.display().to_string(), dest.display().to_string());
    let yaml = playbook("push", Some("\"{{ inventory_hostname }}\""));

    let first = sync(&hosts, &yaml, &src_text, &dest_text, &[]);
    assert_eq!(first.recap("web"), recap(2, 1));
    let r = registered(&first);
    assert_eq!(r["msg"], new_tree_lines(&dest_text, '>'));
    assert_eq!(
        r["cmd"],
        format!(
            "/usr/bin/rsync --delay-updates -F --compress --archive \
             --out-format='<<CHANGED>>%i %n%L' {src_text} {dest_text}"
        )
    );
    for name in TREE {
        assert_same_entry(&src.join(name), &dest.join("srcdir").join(name));
    }
    // Written by the host's own user, as rsync run there would.
    assert_eq!(
        std::fs::metadata(dest.join("srcdir/a")).unwrap().uid(),
        std::fs::metadata(&user.home).unwrap().uid()
    );
    let rerun = sync(&hosts, &yaml, &src_text, &dest_text, &[]);
    assert_eq!(rerun.recap("web"), recap(2, 0));
    assert_eq!(registered(&rerun)["msg"], "");

    // Pull is the same copy when both ends are the host.
    let pull = playbook("pull", Some("\"{{ inventory_hostname }}\""));
    std::fs::write(src.join("a"), "alpha two\n").unwrap();
    set_mtime(&src.join("a"), Y2021);
    let changed = sync(&hosts, &pull, &src_text, &dest_text, &[]);
    assert_eq!(changed.recap("web"), recap(2, 1));
    assert_eq!(registered(&changed)["msg"], ">f.st...... srcdir/a\n");
    assert_same_entry(&src.join("a"), &dest.join("srcdir/a"));
}

#[test]
fn delegated_to_another_host_the_controller_relays_between_the_two() {
    let hosts = SshHosts::start(&["web", "other"]);
    let (web, other) = (hosts.user("web"), hosts.user("other"));
    let src = other.home.join("srcdir");
    make_tree(&src);
    // A file of three pages, so the relay reads and writes it page by page.
    let big: Vec<u8> = (0..20u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(src.join("sub/big"), &big).unwrap();
    set_mtime(&src.join("sub/big"), Y2020);
    set_mtime(&src.join("sub"), Y2020);
    other.give(&src);
    let src_text = src.display().to_string();
    let push = playbook("push", Some("other"));

    // push: from the delegate's tree to the host, logged in as the host's user.
    let first = sync(&hosts, &push, &src_text, "copy_other", &[]);
    assert_eq!(first.recap("web"), recap(2, 1));
    let r = registered(&first);
    assert_eq!(
        r["msg"],
        "created directory copy_other\ncd+++++++++ srcdir/\n<f+++++++++ srcdir/a\n\
         cL+++++++++ srcdir/lnk -> a\n<f+++++++++ srcdir/z\ncd+++++++++ srcdir/b/\n\
         cd+++++++++ srcdir/sub/\n<f+++++++++ srcdir/sub/big\n<f+++++++++ srcdir/sub/c\n"
    );
    assert!(
        r["cmd"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{src_text} {}@127.0.0.1:copy_other", web.name)),
        "{}",
        r["cmd"]
    );
    let copy = web.home.join("copy_other/srcdir");
    for name in TREE.iter().chain(&["sub/big"]) {
        assert_same_entry(&src.join(name), &copy.join(name));
    }
    let rerun = sync(&hosts, &push, &src_text, "copy_other", &[]);
    assert_eq!(rerun.recap("web"), recap(2, 0));
    assert_eq!(registered(&rerun)["msg"], "");

    // pull: from the host's tree to the delegate.
    let pulled = other.home.join("pulled_other");
    let pulled_text = pulled.display().to_string();
    let pull = playbook("pull", Some("other"));
    let back = sync(&hosts, &pull, "copy_other/srcdir", &pulled_text, &[]);
    assert_eq!(back.recap("web"), recap(2, 1));
    assert_eq!(
        registered(&back)["msg"],
        format!(
            "created directory {pulled_text}\ncd+++++++++ srcdir/\n>f+++++++++ srcdir/a\n\
             cL+++++++++ srcdir/lnk -> a\n>f+++++++++ srcdir/z\ncd+++++++++ srcdir/b/\n\
             cd+++++++++ srcdir/sub/\n>f+++++++++ srcdir/sub/big\n>f+++++++++ srcdir/sub/c\n"
        )
    );
    for name in TREE.iter().chain(&["sub/big"]) {
        assert_same_entry(&src.join(name), &pulled.join("srcdir").join(name));
    }
    assert_eq!(
        std::fs::metadata(pulled.join("srcdir/a")).unwrap().uid(),
        std::fs::metadata(&other.home).unwrap().uid()
    );
}

#[test]
fn large_files_go_in_pieces_and_a_changed_one_as_a_delta() {
    let hosts = SshHosts::start(&["web"]);
    let user = hosts.user("web");
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    // Larger than one frame may carry.
    let mut big: Vec<u8> = (0..70u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let file = dir.path().join("big");
    std::fs::write(&file, &big).unwrap();
    set_mtime(&file, Y2020);
    let file_text = file.display().to_string();
    let yaml = playbook("push", None);

    let first = sync(&hosts, &yaml, &file_text, "big", &[]);
    assert_eq!(first.recap("web"), recap(2, 1));
    assert_eq!(registered(&first)["msg"], "<f+++++++++ big\n");
    assert_same_entry(&file, &user.home.join("big"));

    big[40 << 20] ^= 0xff;
    std::fs::write(&file, &big).unwrap();
    set_mtime(&file, Y2021);
    let changed = sync(&hosts, &yaml, &file_text, "big", &["-vv"]);
    assert_eq!(registered(&changed)["msg"], "<f..t...... big\n");
    assert_same_entry(&file, &user.home.join("big"));
    // A delta: far less than the file crossed the wire.
    let (sent, _) = traffic(&changed, "web");
    assert!(sent < 8 << 20, "{sent} bytes sent");

    let rerun = sync(&hosts, &yaml, &file_text, "big", &[]);
    assert_eq!(rerun.recap("web"), recap(2, 0));

    // And back: pulled to the controller page by page.
    let back = dir.path().join("back");
    let pull = playbook("pull", None);
    let pulled = sync(&hosts, &pull, "big", &back.display().to_string(), &[]);
    assert_eq!(pulled.recap("web"), recap(2, 1));
    assert_eq!(registered(&pulled)["msg"], ">f+++++++++ big\n");
    assert_same_entry(&file, &back);
}

/// The bytes `-vv` says went to and came from `host`'s agents.
fn traffic(out: &Outcome, host: &str) -> (u64, u64) {
    let prefix = format!("<{host}> agent protocol: ");
    out.stdout
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix(&prefix)?;
            let mut numbers = rest.split(' ').filter_map(|w| w.parse().ok());
            Some((numbers.next()?, numbers.next()?))
        })
        .unwrap_or_else(|| panic!("no byte counts for {host}\n{}", out.stdout))
}

/// 12 MiB of noise, and the same with 100 KB in the middle rewritten.
fn two_versions() -> (Vec<u8>, Vec<u8>) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = |len: usize| -> Vec<u8> {
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect()
    };
    let old = noise(12 << 20);
    let mut new = old.clone();
    new[6 << 20..(6 << 20) + 100_000].copy_from_slice(&noise(100_000));
    (old, new)
}

#[test]
fn a_changed_large_file_goes_as_a_delta_between_hosts_and_pulled() {
    let hosts = SshHosts::start(&["web", "other"]);
    let (web, other) = (hosts.user("web"), hosts.user("other"));
    let (old, new) = two_versions();
    let (on_web, on_other) = (web.home.join("big"), other.home.join("big"));
    std::fs::write(&on_web, &old).unwrap();
    set_mtime(&on_web, Y2020);
    web.give(&on_web);
    std::fs::write(&on_other, &new).unwrap();
    set_mtime(&on_other, Y2021);
    other.give(&on_other);

    // From the delegate to the host: the delegate's agent encodes the file against the
    // signatures of the host's copy, and only the changed part reaches the host.
    let push = playbook("push", Some("other"));
    let copied = sync(
        &hosts,
        &push,
        &on_other.display().to_string(),
        "big",
        &["-vv"],
    );
    assert_eq!(copied.recap("web"), recap(2, 1));
    assert_eq!(registered(&copied)["msg"], "<f..t...... big\n");
    assert_same_entry(&on_other, &on_web);
    let (to_web, from_web) = traffic(&copied, "web");
    assert!(to_web < 1 << 20, "{to_web} bytes sent to web");
    assert!(from_web < 1 << 20, "{from_web} bytes from web");

    // From the host to the controller, which holds the old version.
    let local = tempfile::tempdir().unwrap();
    let here = local.path().join("big");
    std::fs::write(&here, &old).unwrap();
    set_mtime(&here, Y2020);
    // Owned as the host's copy is, so that only the time and the bytes differ.
    web.give(&here);
    let pull = playbook("pull", None);
    let pulled = sync(&hosts, &pull, "big", &here.display().to_string(), &["-vv"]);
    assert_eq!(pulled.recap("web"), recap(2, 1));
    assert_eq!(registered(&pulled)["msg"], ">f..t...... big\n");
    assert_same_entry(&on_web, &here);
    let (_, from_web) = traffic(&pulled, "web");
    assert!(from_web < 1 << 20, "{from_web} bytes from web");
}

/// A play that synchronizes `src` to `dest` with `become` and the given become keywords.
fn become_playbook(keywords: &str, mode: &str) -> String {
    format!(
        r#"- hosts: web
  gather_facts: false
  tasks:
    - synchronize:
        src: "{{{{ src }}}}"
        dest: "{{{{ dest }}}}"
        mode: {mode}
      become: true
{keywords}      register: r
    - debug: var=r
"#
    )
}

#[test]
fn under_become_rsync_path_escalates_the_hosts_end_through_sudo_only() {
    let hosts = SshHosts::start(&["web"]);
    let user = hosts.user("web");
    let _sudo = SudoRule::new(&user.name, "ALL=(ALL) NOPASSWD: ALL");
    let local = tempfile::tempdir().unwrap();
    let src = local.path().join("srcdir");
    make_tree(&src);
    let src_text = src.display().to_string();
    let rsh = format!(
        "--rsh='/usr/bin/ssh -S none -i {key} -o Port={port} -o StrictHostKeyChecking=no \
         -o UserKnownHostsFile=/dev/null'",
        key = hosts.sshd.user_key.display(),
        port = hosts.sshd.port,
    );
    let uid_of = |path: &Path| std::fs::metadata(path).unwrap().uid();

    // sudo: rsync on the host runs as `sudo -u root rsync`, so the copy is root's (the
    // controller's files are root's, and root's rsync keeps owners); relative to the
    // login user's home all the same.
    let pushed = sync(
        &hosts,
        &become_playbook("", "push"),
        &src_text,
        "as_root",
        &[],
    );
    assert_eq!(pushed.recap("web"), recap(2, 1));
    assert_eq!(
        registered(&pushed)["cmd"],
        format!(
            "/usr/bin/rsync --delay-updates -F --compress --archive {rsh} \
             --rsync-path='sudo -u root rsync' --out-format='<<CHANGED>>%i %n%L' \
             {src_text} {}@127.0.0.1:as_root",
            user.name
        )
    );
    assert_eq!(uid_of(&user.home.join("as_root/srcdir/a")), 0);

    // Pulled under sudo: a file only root reads comes back.
    let secret = user.home.join("secret");
    std::fs::write(&secret, "root only\n").unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let back = local.path().join("secret");
    let pulled = sync(
        &hosts,
        &become_playbook("", "pull"),
        "secret",
        &back.display().to_string(),
        &[],
    );
    assert_eq!(pulled.recap("web"), recap(2, 1));
    assert!(
        registered(&pulled)["cmd"]
            .as_str()
            .unwrap()
            .contains(" --rsync-path='sudo -u root rsync' "),
        "{}",
        registered(&pulled)["cmd"]
    );
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "root only\n");

    // su: the action plugin passes no other method to rsync: the host's end is the login
    // user's, and su is never asked.
    let su = become_playbook("      become_method: su\n", "push");
    let as_login = sync(&hosts, &su, &src_text, "as_login", &[]);
    assert_eq!(as_login.recap("web"), recap(2, 1));
    let cmd = registered(&as_login)["cmd"].as_str().unwrap().to_string();
    assert!(!cmd.contains("--rsync-path"), "{cmd}");
    assert_eq!(
        uid_of(&user.home.join("as_login/srcdir/a")),
        uid_of(&user.home)
    );
}
