//! Real Debian 12 hosts (support/debian.rs): what the base promises the tests on top of it
//! (its users, sudo with and without a password, su, packages), that a host leaves nothing
//! behind, and turbo-play reaching one over ssh with the result ansible-playbook had on the
//! same playbook (recorded by tests/debian/record.sh in tests/debian/<scenario>/expected/).
//! Skipped, with the reason, where the base cannot be there (not root, not built).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::debian::{
    self, DebianHost, FileInfo, LOGIN_USER, PLAIN_USER, SUDO_PASSWORD_USER, TEST_PASSWORD,
};
use crate::support::debian_scenario::{self, OUT, RECORDED_HOST, scenario_dir, scenario_run};
use crate::support::run::{Outcome, TestRun};

/// Runs `script` with sh as `user` inside the host (through su, as root may).
fn as_user(host: &DebianHost, user: &str, script: &str) -> std::process::Output {
    host.command(&["su", "-", user, "-c", script])
}

#[test]
fn the_base_has_its_users_sudo_and_packages() {
    if !debian::available("the_base_has_its_users_sudo_and_packages") {
        return;
    }
    let host = DebianHost::start("base-check");
    assert_eq!(host.check_output(&["hostname"]), "base-check\n");
    assert_eq!(
        host.check_output(&["sh", "-c", ". /etc/os-release; echo $VERSION_CODENAME"]),
        "bookworm\n"
    );
    let packages = host.packages();
    for wanted in [
        "openssh-server",
        "sudo",
        "passwd",
        "python3",
        "python3-apt",
        "acl",
        "procps",
    ] {
        assert!(
            packages
                .lines()
                .any(|l| l.split('\t').next() == Some(wanted)),
            "{wanted} is not installed:\n{packages}"
        );
    }

    let sudo = as_user(&host, LOGIN_USER, "sudo -n id -un");
    assert_eq!(
        String::from_utf8_lossy(&sudo.stdout),
        "root\n",
        "{LOGIN_USER}: sudo without a password: {}",
        String::from_utf8_lossy(&sudo.stderr)
    );
    let refused = as_user(&host, SUDO_PASSWORD_USER, "sudo -n id -un");
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("a password is required"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
    let with_password = as_user(
        &host,
        SUDO_PASSWORD_USER,
        &format!("echo {TEST_PASSWORD} | sudo -S -p '' id -un"),
    );
    assert_eq!(
        String::from_utf8_lossy(&with_password.stdout),
        "root\n",
        "{SUDO_PASSWORD_USER}: sudo with the password: {}",
        String::from_utf8_lossy(&with_password.stderr)
    );
    let plain = as_user(&host, PLAIN_USER, "sudo -n true");
    assert!(!plain.status.success(), "{PLAIN_USER} must have no sudo");

    let etc = host.snapshot("/etc");
    for wanted in [
        "sudoers.d/deploy f 440 root root ",
        "ssh/sshd_config.d/10-turbo-tests.conf f 644 root root ",
        "hostname f 644 root root ",
        "resolv.conf f 644 root root ",
        "os-release l 777 root root ../usr/lib/os-release",
        "ssh d 755 root root -",
    ] {
        assert!(
            etc.lines().any(|l| l.starts_with(wanted)),
            "no {wanted:?} in the snapshot of /etc:\n{etc}"
        );
    }

    for user in [LOGIN_USER, SUDO_PASSWORD_USER, PLAIN_USER] {
        assert_eq!(
            host.stat(&format!("/home/{user}/.ssh/authorized_keys")),
            Some(FileInfo {
                kind: "regular file".into(),
                mode: 0o600,
                owner: user.into(),
                group: user.into(),
            })
        );
    }
}

#[test]
fn a_host_leaves_nothing_behind_even_when_its_test_panics() {
    if !debian::available("a_host_leaves_nothing_behind_even_when_its_test_panics") {
        return;
    }
    // A sleep no other process on the machine runs.
    let daemon = format!("sleep 1000.{}", std::process::id());
    let (dir, port) = std::panic::catch_unwind(|| {
        let host = DebianHost::start("panicking");
        // A daemon of its own inside, as an init script would leave one.
        host.check_output(&[
            "sh",
            "-c",
            &format!("setsid {daemon} >/dev/null 2>&1 < /dev/null &"),
        ]);
        std::panic::panic_any((host.dir.clone(), host.port));
    })
    .expect_err("the closure panics")
    .downcast::<(PathBuf, u16)>()
    .map(|b| *b)
    .expect("the host's directory and port");
    assert!(!dir.exists(), "{} is left behind", dir.display());
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "sshd still listens on {port}"
    );
    let leftover = Command::new("pgrep")
        .args(["-f", &format!("^{daemon}$")])
        .output()
        .expect("pgrep");
    assert!(
        leftover.stdout.is_empty(),
        "a process started inside outlived its host: {}",
        String::from_utf8_lossy(&leftover.stdout)
    );
}

#[test]
fn copy_and_command_over_ssh_match_ansible() {
    if !debian::available("copy_and_command_over_ssh_match_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("copy-and-id");
    // Written by the login user, on the host, not by root nor on the controller.
    assert_eq!(host.read(&format!("{OUT}/whoami")), b"deploy\n");
    assert!(
        !Path::new(OUT).exists(),
        "{OUT} was written outside the host"
    );
}

/// The same playbook run now by turbo-play and by the ansible-playbook in
/// `$ANSIBLE_PLAYBOOK` on two fresh copies of the same host: the same recap, the same files
/// under /etc and in the output directory, the same packages. Skipped without
/// `ANSIBLE_PLAYBOOK` (CI has no Ansible: the recorded comparison above runs there).
#[test]
fn copy_and_command_match_a_live_ansible_run() {
    let test = "copy_and_command_match_a_live_ansible_run";
    if !debian::available(test) {
        return;
    }
    let Some(ansible_playbook) = std::env::var_os("ANSIBLE_PLAYBOOK") else {
        eprintln!("{test}: skipped: set ANSIBLE_PLAYBOOK to an ansible-playbook to compare with");
        return;
    };
    let ours = DebianHost::start(RECORDED_HOST);
    let theirs = DebianHost::start(RECORDED_HOST);

    let ours_run = scenario_run("copy-and-id", &format!("{}\n", ours.line())).run();
    ours_run.assert_code(0);

    let work = tempfile::tempdir().expect("tempdir");
    let inventory = work.path().join("hosts");
    std::fs::write(&inventory, format!("{}\n", theirs.line())).expect("inventory");
    // No ansible.cfg of the machine's or the caller's.
    let config = work.path().join("ansible.cfg");
    std::fs::write(&config, "").expect("ansible.cfg");
    let out = Command::new(&ansible_playbook)
        .arg("-i")
        .arg(&inventory)
        .arg(scenario_dir("copy-and-id").join("site.yml"))
        .env("ANSIBLE_CONFIG", &config)
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_RETRY_FILES_ENABLED", "0")
        .env("HOME", work.path())
        .output()
        .expect("run ansible-playbook");
    let theirs_run = Outcome {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    theirs_run.assert_code(0);

    assert_eq!(
        ours_run.recap(RECORDED_HOST),
        theirs_run.recap(RECORDED_HOST),
        "recaps of turbo-play (left) and ansible-playbook (right)"
    );
    for dir in [OUT, "/etc"] {
        assert_eq!(
            ours.snapshot(dir),
            theirs.snapshot(dir),
            "{dir} after turbo-play (left) and ansible-playbook (right)"
        );
    }
    assert_eq!(ours.packages(), theirs.packages());
}

/// `become` on a real Debian host: the login user's passwordless sudo to root, a user whose
/// sudo asks for its password, and a non-root become user (`plain`), whose home holds no
/// agent until the become channel brings one. Files end up owned by the become user.
#[test]
fn become_on_a_debian_host_as_ansible_users_use_it() {
    if !debian::available("become_on_a_debian_host_as_ansible_users_use_it") {
        return;
    }
    let host = DebianHost::start("become");
    let playbook = "- hosts: all
  gather_facts: false
  tasks:
    - command: id -un
      become: true
      register: root
    - copy: {content: \"by root\\n\", dest: /etc/turbo-become-root, mode: '0640'}
      become: true
    - command: id -un
      become: true
      become_user: plain
      register: plain
    - copy: {content: \"by plain\\n\", dest: /tmp/turbo-become-plain}
      become: true
      become_user: plain
    - assert:
        that:
          - root.stdout == 'root'
          - plain.stdout == 'plain'
";
    let deploy = TestRun::new()
        .playbook(playbook)
        .inventory(&format!("{}\n", host.line_as(LOGIN_USER)))
        .run();
    deploy.assert_code(0);
    assert_eq!(deploy.recap("become").failed, 0, "{}", deploy.stdout);
    let root_file = host
        .stat("/etc/turbo-become-root")
        .expect("written as root");
    assert_eq!((root_file.owner.as_str(), root_file.mode), ("root", 0o640));
    assert_eq!(host.read("/etc/turbo-become-root"), b"by root\n");
    assert_eq!(host.stat("/tmp/turbo-become-plain").unwrap().owner, "plain");
    // Rerun: both become agents are cached by now; nothing is written again.
    let again = TestRun::new()
        .playbook(playbook)
        .inventory(&format!("{}\n", host.line_as(LOGIN_USER)))
        .run();
    again.assert_code(0);
    assert_eq!(again.recap("become").changed, 2, "{}", again.stdout);

    let with_password = TestRun::new()
        .playbook(playbook)
        .inventory(&format!(
            "{} ansible_become_password={TEST_PASSWORD}\n",
            host.line_as(SUDO_PASSWORD_USER)
        ))
        .run();
    with_password.assert_code(0);
    let without = TestRun::new()
        .playbook(playbook)
        .inventory(&format!("{}\n", host.line_as(SUDO_PASSWORD_USER)))
        .run();
    without.assert_code(2);
    assert!(
        without.stdout.contains("Missing sudo password"),
        "{}",
        without.stdout
    );
}
