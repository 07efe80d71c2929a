//! What roles do with files beyond writing one: `owner`/`group` on copy, template and file,
//! the `stat` module (over the sshd, as root and as a user of its own), and `copy` of a
//! whole directory (on a local host), checked on the target.

use std::os::unix::fs::MetadataExt;

use crate::support::hosts::{LocalHosts, SshHosts};
use crate::support::run::{PLAY_HEAD, TestRun, assert_contains, assert_file, recap};

/// An inventory line logging in as root with the fixture's key (the sshd permits it).
fn root_line(hosts: &SshHosts, name: &str) -> String {
    hosts.line(name).replace(
        &format!("ansible_user={}", hosts.user(name).name),
        "ansible_user=root",
    )
}

fn ids_of(name: &str) -> (u32, u32) {
    let out = std::process::Command::new("id").arg(name).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let field = |key: &str| -> u32 {
        let rest = text.split(key).nth(1).unwrap();
        rest.split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    (field("uid="), field("gid="))
}

#[test]
fn owner_and_group_as_root_then_nothing_changes_and_stat_reports_them() {
    let hosts = SshHosts::start(&["h"]);
    let account = &hosts.user("h").name;
    let (uid, gid) = ids_of(account);
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("etc-app");
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - file: path={dir} state=directory owner={account} group={account} mode=0750
    - copy:
        content: \"key=1\\n\"
        dest: {dir}/app.conf
        owner: {account}
        group: {gid}
        mode: '0640'
      register: copied
    - template: src=app.j2 dest={dir}/rendered.conf owner={uid} group=root mode=0600
    - stat: path={dir}/app.conf
      register: st
    - stat: path={dir}/nothing-here
      register: missing
    - assert:
        that:
          - st.stat.exists and st.stat.isreg and not st.stat.isdir
          - st.stat.pw_name == '{account}'
          - st.stat.uid == {uid} and st.stat.gid == {gid}
          - st.stat.mode == '0640'
          - st.stat.rusr and st.stat.rgrp and not st.stat.roth
          - not missing.stat.exists
          - st.stat.checksum == copied.checksum
          - st.stat.checksum == '373b273d74700f570c862a58571711df51d28d98'
",
        dir = dir.display()
    );
    let run = TestRun::new()
        .playbook(&playbook)
        .inventory(&format!("{}\n", root_line(&hosts, "h")))
        .file("templates/app.j2", "owner={{ ansible_user }}\n");

    let first = run.run();
    first.assert_code(0);
    assert_eq!(first.recap("h"), recap(6, 3), "{}", first.stdout);
    let meta = |name: &str| std::fs::metadata(dir.join(name)).unwrap();
    assert_eq!((meta("").uid(), meta("").gid()), (uid, gid));
    assert_eq!((meta("app.conf").uid(), meta("app.conf").gid()), (uid, gid));
    assert_eq!(
        (meta("rendered.conf").uid(), meta("rendered.conf").gid()),
        (uid, 0)
    );
    assert_file(&dir.join("app.conf"), b"key=1\n", 0o640);
    assert_file(&dir.join("rendered.conf"), b"owner=root\n", 0o600);

    let second = run.run();
    second.assert_code(0);
    assert_eq!(second.recap("h"), recap(6, 0), "{}", second.stdout);

    // Someone chowned the file back: the next run puts the owner right, content untouched.
    std::os::unix::fs::chown(dir.join("app.conf"), Some(0), Some(0)).unwrap();
    let third = run.run();
    assert_eq!(third.recap("h"), recap(6, 1), "{}", third.stdout);
    assert_eq!(meta("app.conf").uid(), uid);
}

#[test]
fn an_unknown_owner_or_a_refused_chown_fails_the_task_with_ansibles_words() {
    let hosts = SshHosts::start(&["h"]);
    let home = hosts.user("h").home.clone();
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - copy: content=x dest=~/a owner=no-such-user-anywhere
      ignore_errors: true
    - copy: content=x dest=~/b owner=root
"
    );
    let out = TestRun::new()
        .playbook(&playbook)
        .inventory(&hosts.inventory())
        .run();
    out.assert_code(2);
    assert_contains(
        &out,
        "chown failed: failed to look up user no-such-user-anywhere",
    );
    assert_contains(&out, "chown failed: Operation not permitted");
    assert!(
        !home.join("a").exists(),
        "nothing is written for an unknown owner"
    );
    assert!(
        !home.join("b").exists(),
        "a refused chown leaves no file behind"
    );
}

#[test]
fn a_directory_src_copies_the_tree_in_one_go_then_nothing_changes() {
    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home().to_path_buf();
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - name: the directory's contents
      copy: src=conf.d/ dest=~/etc/app mode=0640 directory_mode=0750
    - name: the directory itself
      copy: src=conf.d dest=~/etc/
"
    );
    let run = TestRun::new()
        .playbook(&playbook)
        .local_hosts(&hosts)
        .file("files/conf.d/a.conf", "a = 1\n")
        .file("files/conf.d/z.conf", "z = 26\n")
        .file("files/conf.d/sub/deep.conf", "deep\n");

    let first = run.run();
    first.assert_code(0);
    assert_eq!(first.recap("h"), recap(2, 2), "{}", first.stdout);
    assert_file(&home.join("etc/app/a.conf"), b"a = 1\n", 0o640);
    assert_file(&home.join("etc/app/sub/deep.conf"), b"deep\n", 0o640);
    let dir_mode = |p: &str| std::fs::metadata(home.join(p)).unwrap().mode() & 0o7777;
    assert_eq!(dir_mode("etc/app/sub"), 0o750);
    assert_file(&home.join("etc/conf.d/z.conf"), b"z = 26\n", 0o644);
    assert_file(&home.join("etc/conf.d/sub/deep.conf"), b"deep\n", 0o644);

    let second = run.run();
    assert_eq!(second.recap("h"), recap(2, 0), "{}", second.stdout);

    std::fs::write(home.join("etc/app/z.conf"), "edited\n").unwrap();
    let third = run.run();
    assert_eq!(third.recap("h"), recap(2, 1), "{}", third.stdout);
    assert_file(&home.join("etc/app/z.conf"), b"z = 26\n", 0o640);
}

/// `file` without `state` keeps a directory one (Ansible's default state is the path's own),
/// and `recurse` sets the mode on everything under it but the links, with symbolic modes
/// worked out per path (`g+rX` after `u+rwx` gives a file g+x too). The messages and
/// modes are what ansible-playbook 2.21.5 gave on the same tree.
#[test]
fn file_recurse_and_the_default_state_as_ansible() {
    use std::os::unix::fs::PermissionsExt;
    let work = tempfile::tempdir().unwrap();
    let d = work.path().join("d");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    for file in ["a", "sub/b"] {
        std::fs::write(d.join(file), "").unwrap();
    }
    for (path, mode) in [("a", 0o600), ("sub/b", 0o600), ("sub", 0o700), ("", 0o755)] {
        std::fs::set_permissions(d.join(path), std::fs::Permissions::from_mode(mode)).unwrap();
    }
    std::os::unix::fs::symlink("a", d.join("link")).unwrap();
    let d = d.display();
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - file: {{path: {d}, mode: 'u+rwx,g+rX', recurse: true}}
      register: r1
    - file: {{path: {d}, mode: '0751'}}
      register: r2
    - file: {{path: {d}, mode: 'u+rwx,g+rX', recurse: true}}
      register: r3
    - debug: {{msg: \"{{{{ r1.changed }}}} {{{{ r1.state }}}} {{{{ r1.mode }}}} | {{{{ r2.changed }}}} {{{{ r2.state }}}} {{{{ r2.mode }}}} | {{{{ r3.changed }}}}\"}}
"
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        "\"msg\": \"True directory 0755 | True directory 0751 | False\"",
    );
    let mode = |p: &str| {
        std::fs::symlink_metadata(format!("{d}/{p}"))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    };
    assert_eq!(
        [
            mode(""),
            mode("a"),
            mode("sub"),
            mode("sub/b"),
            mode("link")
        ],
        [0o751, 0o750, 0o750, 0o750, 0o777]
    );
}

/// A written file's registered result is the copy module's, as ansible-playbook 2.21.5
/// registers it: `src` under the login user's `~/.ansible/tmp` with the destination's
/// extension, and `md5sum`; an unchanged one's is the file module's (`path`, no `src`).
#[test]
fn copy_results_name_the_staged_source_then_the_path() {
    let hosts = SshHosts::start(&["h"]);
    let home = hosts.user("h").home.clone();
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - copy: content=foo dest=~/out.conf
      register: written
    - copy: content=foo dest=~/out.conf
      register: kept
    - assert:
        that:
          - written.src.startswith('{home}/.ansible/tmp/ansible-tmp-')
          - written.src.endswith('/.source.conf')
          - written.md5sum == 'acbd18db4cc2f85cedef654fccc4a4d8'
          - written.checksum == '0beec7b5ea3f0fdbc95d0dd47f3c5bc275da8a33'
          - kept.path == '{home}/out.conf' and kept.dest == kept.path
          - kept.src is not defined and kept.md5sum is not defined
",
        home = home.display()
    );
    let out = TestRun::new()
        .playbook(&playbook)
        .inventory(&hosts.inventory())
        .run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(3, 1), "{}", out.stdout);
}
