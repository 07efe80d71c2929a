//! `become` through sudo over the real sshd: the login user is not root, sudo runs a
//! second agent on another channel of the same connection, and what the task does is done
//! as the become user. Passwords right, wrong and missing end as Ansible ends them. Also
//! the local connection's become, as another child.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use crate::support::hosts::{LocalHosts, SshHosts};
use crate::support::run::{PLAY_HEAD, TestRun, assert_contains, assert_not_contains};
use crate::support::sudo::SudoRule;

fn set_password(user: &str, password: &str) {
    let mut child = Command::new("chpasswd")
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    writeln!(child.stdin.take().unwrap(), "{user}:{password}").unwrap();
    assert!(child.wait().unwrap().success());
}

/// Runs as `expected` (set by the block), writes `out` as that user, and checks that a
/// task with `become: false` inside still runs as the login user.
fn who_block(out: &Path, expected: &str, extra: &str) -> String {
    format!(
        "    - block:
        - command: id -un
          register: who
        - copy: {{content: \"owned\\n\", dest: {out}}}
        - command: id -un
          become: false
          register: login
        - assert:
            that:
              - who.stdout == '{expected}'
              - login.stdout != '{expected}'
{extra}",
        out = out.display()
    )
}

#[test]
fn become_root_and_another_user_through_passwordless_sudo() {
    let hosts = SshHosts::start(&["h"]);
    let login = hosts.user("h").name.clone();
    let _rule = SudoRule::new(&login, "ALL=(ALL) NOPASSWD: ALL");
    let out = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        out.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let as_root = out.path().join("as-root");
    let as_nobody = out.path().join("as-nobody");
    let playbook = format!(
        "{PLAY_HEAD}  become: true
  tasks:
{}{}",
        who_block(&as_root, "root", ""),
        who_block(&as_nobody, "nobody", "      become_user: nobody\n"),
    );
    let run = TestRun::new()
        .playbook(&playbook)
        .inventory(&hosts.inventory());
    let first = run.run();
    first.assert_code(0);
    let r = first.recap("h");
    assert_eq!((r.ok, r.failed), (8, 0), "{}", first.stdout);
    assert_eq!(std::fs::metadata(&as_root).unwrap().uid(), 0);
    assert_ne!(std::fs::metadata(&as_nobody).unwrap().uid(), 0);
    // Rerun: the become agents come from their users' caches; nothing new is written.
    let second = run.run();
    second.assert_code(0);
    let r = second.recap("h");
    assert_eq!((r.failed, r.changed), (0, 4), "{}", second.stdout);
}

#[test]
fn sudo_passwords_right_wrong_and_missing() {
    let hosts = SshHosts::start(&["h"]);
    let login = hosts.user("h").name.clone();
    let _rule = SudoRule::new(&login, "ALL=(ALL) ALL");
    set_password(&login, "right-pw");
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - command: id -un
      become: true
      register: who
    - assert:
        that: who.stdout == 'root'
"
    );
    let inventory = hosts.inventory();
    let dir = tempfile::tempdir().unwrap();
    let pw_file = dir.path().join("become-pw");
    std::fs::write(&pw_file, "right-pw\n").unwrap();

    let right = TestRun::new()
        .playbook(&playbook)
        .inventory(&inventory)
        .arg("--become-password-file")
        .arg(pw_file.to_str().unwrap())
        .run();
    right.assert_code(0);
    assert_not_contains(&right, "right-pw");

    let by_var = TestRun::new()
        .playbook(&playbook)
        .inventory(&format!(
            "{} ansible_become_password=right-pw\n",
            inventory.trim_end()
        ))
        .run();
    by_var.assert_code(0);

    let wrong = TestRun::new()
        .playbook(&playbook)
        .inventory(&format!(
            "{} ansible_become_password=wrong-pw\n",
            inventory.trim_end()
        ))
        .run();
    wrong.assert_code(2);
    assert_contains(&wrong, "\"msg\": \"Task failed: Incorrect sudo password\"");
    let r = wrong.recap("h");
    assert_eq!((r.failed, r.unreachable), (1, 0), "{}", wrong.stdout);

    let missing = TestRun::new()
        .playbook(&playbook)
        .inventory(&inventory)
        .run();
    missing.assert_code(2);
    assert_contains(&missing, "\"msg\": \"Task failed: Missing sudo password\"");
}

/// At -vvv, the command line the escalation runs shows once per become session, as
/// Ansible's `EXEC` line does.
#[test]
fn the_local_connection_becomes_another_user_too() {
    if !nix_is_root() {
        eprintln!("skipped: the local become test runs sudo as root");
        return;
    }
    let hosts = LocalHosts::new(&["h"]);
    let out = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        out.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let file = out.path().join("f");
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - command: id -un
      become: yes
      become_user: nobody
      register: who
    - copy: {{content: x, dest: {file}}}
      become: yes
      become_user: nobody
    - assert:
        that: who.stdout == 'nobody'
",
        file = file.display()
    );
    let run = TestRun::new()
        .playbook(&playbook)
        .local_hosts(&hosts)
        .arg("-vvv")
        .run();
    run.assert_code(0);
    assert_ne!(std::fs::metadata(&file).unwrap().uid(), 0);
    assert_eq!(
        run.stdout
            .matches("<h> EXEC /bin/sh -c 'sudo -H -S -n -u '\"'\"'nobody'\"'\"' /bin/sh -c ")
            .count(),
        1,
        "{}",
        run.stdout
    );
}

fn nix_is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}
