//! `become_method: su` on real Debian hosts (support/debian.rs), as Ansible's su plugin
//! does it: su on a terminal of its own (a pty on another channel of the same SSH
//! connection), the password after su's prompt, and Ansible's words when su refuses it or
//! never asks. `become_flags` and `become_exe` reach the command line, from keywords,
//! variables and ansible.cfg, for su and sudo. The password is in no process's command
//! line or environment inside the host while the run goes on.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::debian::{self, DebianHost, LOGIN_USER, PLAIN_USER, TEST_PASSWORD};
use crate::support::debian_scenario::{self, OUT};
use crate::support::run::{Outcome, TestRun, assert_contains, assert_not_contains};

/// The inventory line logging in as `deploy`, with `extra` host variables.
fn inventory(host: &DebianHost, extra: &str) -> String {
    format!("{} {extra}\n", host.line_as(LOGIN_USER))
}

fn with_password() -> String {
    format!("ansible_become_method=su ansible_become_password={TEST_PASSWORD}")
}

#[test]
fn su_to_root_and_to_a_plain_user_with_the_right_password() {
    if !debian::available("su_to_root_and_to_a_plain_user_with_the_right_password") {
        return;
    }
    let host = DebianHost::start("su-right");
    let playbook = format!(
        "- hosts: all
  gather_facts: false
  become: true
  tasks:
    - command: id -un
      register: root
    - setup: {{gather_subset: [min]}}
    - copy: {{content: \"by root\\n\", dest: /etc/turbo-su-root, mode: '0640'}}
    - assert:
        that:
          - root.stdout == 'root'
          # su to root keeps the login user's LOGNAME, which Ansible's user facts
          # (getpass.getuser()) report; the process runs as root all the same.
          - ansible_user_id == '{LOGIN_USER}'
          - ansible_real_user_id == 0
    - block:
        - command: id -un
          register: plain
        - setup: {{gather_subset: [min]}}
        - copy: {{content: \"by plain\\n\", dest: /tmp/turbo-su-plain}}
        - assert:
            that:
              - plain.stdout == '{PLAIN_USER}'
              - ansible_user_id == '{PLAIN_USER}'
              - ansible_user_dir == '/home/{PLAIN_USER}'
      become_user: {PLAIN_USER}
"
    );
    let run = TestRun::new()
        .playbook(&playbook)
        .inventory(&inventory(&host, &with_password()));
    let first = run.run();
    first.assert_code(0);
    let r = first.recap("su-right");
    assert_eq!((r.ok, r.changed, r.failed), (8, 4, 0), "{}", first.stdout);
    assert_not_contains(&first, TEST_PASSWORD);
    let root_file = host.stat("/etc/turbo-su-root").expect("written through su");
    assert_eq!((root_file.owner.as_str(), root_file.mode), ("root", 0o640));
    assert_eq!(host.stat("/tmp/turbo-su-plain").unwrap().owner, PLAIN_USER);
    // plain's home now holds its own agent, private to it.
    let cache = host.check_output(&["stat", "-c", "%U %a", "/home/plain/.cache/turbo-play"]);
    assert_eq!(cache, "plain 700\n");

    let again = run.run();
    again.assert_code(0);
    let r = again.recap("su-right");
    assert_eq!((r.changed, r.failed), (2, 0), "{}", again.stdout);
}

/// The scenario recorded with ansible-playbook 2.21 (tests/debian/become-su-files): the same
/// recaps, the same files with the same owners (root's and plain's, written through su),
/// the same /etc, and Ansible's message for the wrong password.
#[test]
fn su_matches_the_recorded_ansible_run() {
    if !debian::available("su_matches_the_recorded_ansible_run") {
        return;
    }
    let (host, first, _again) = debian_scenario::check("become-su-files");
    assert_eq!(
        host.read(&format!("{OUT}/wrong.txt")),
        b"Task failed: Incorrect su password\n"
    );
    assert_not_contains(&first, TEST_PASSWORD);
}

/// A wrong password ends in Ansible's message within su's own delay; a prompt that never
/// comes (a become_exe that hangs) and su's prompt left unanswered without a password end
/// at the timeout, with the host unreachable, as in Ansible. Nothing hangs.
#[test]
fn wrong_and_missing_su_passwords_end_as_ansible_ends_them() {
    if !debian::available("wrong_and_missing_su_passwords_end_as_ansible_ends_them") {
        return;
    }
    let host = DebianHost::start("su-wrong");
    let playbook = "- hosts: all
  gather_facts: false
  tasks:
    - command: id -un
      become: true
      become_method: su
";
    let timed = |extra: &str| -> (Outcome, Duration) {
        let started = Instant::now();
        let out = TestRun::new()
            .playbook(playbook)
            .inventory(&inventory(&host, extra))
            .run();
        (out, started.elapsed())
    };

    let (wrong, took) = timed("ansible_become_password=not-the-password ansible_timeout=30");
    wrong.assert_code(2);
    assert_contains(&wrong, "\"msg\": \"Task failed: Incorrect su password\"");
    let r = wrong.recap("su-wrong");
    assert_eq!((r.failed, r.unreachable), (1, 0), "{}", wrong.stdout);
    assert_not_contains(&wrong, "not-the-password");
    // su's failure delay (pam_unix: about 2 s), never the timeout (32 s here).
    assert!(
        took < Duration::from_secs(30),
        "a wrong password took {took:?}"
    );

    let (missing, took) = timed("ansible_timeout=3");
    missing.assert_code(4);
    assert_contains(
        &missing,
        "Task failed: Timeout (5s) waiting for privilege escalation prompt:",
    );
    assert_eq!(
        missing.recap("su-wrong").unreachable,
        1,
        "{}",
        missing.stdout
    );
    assert!(
        took < Duration::from_secs(25),
        "a missing password took {took:?}"
    );

    // su never asks: what the channel said before the timeout is in the message.
    let (silent, took) = timed(&format!(
        "{} ansible_timeout=3 ansible_become_exe='echo still-waiting; sleep 60; su'",
        with_password()
    ));
    silent.assert_code(4);
    assert_contains(
        &silent,
        "Task failed: Timeout (5s) waiting for privilege escalation prompt: still-waiting",
    );
    assert!(took < Duration::from_secs(25), "a silent su took {took:?}");
    assert_not_contains(&silent, TEST_PASSWORD);
}

/// Each task escalates with its own su prompts, connection timeout and sudo directory, as
/// each task's escalation is its own in Ansible: after a task that became root through su,
/// one expecting a prompt su never prints waits its own `ansible_ssh_timeout` (plus 2 s)
/// and leaves the host unreachable in Ansible's words (checked against ansible-playbook
/// 2.21.5 in its become_su target); `ansible_sudo_chdir` runs sudo from that directory, and
/// a missing one fails the escalation with the shell's words.
#[test]
fn each_task_escalates_with_its_own_prompts_timeout_and_chdir() {
    if !debian::available("each_task_escalates_with_its_own_prompts_timeout_and_chdir") {
        return;
    }
    let host = DebianHost::start("su-per-task");
    let playbook = "- hosts: all
  gather_facts: false
  become: true
  tasks:
    - command: id -un
      become_method: su
      register: first
    - command: id -un
      become_method: su
      vars:
        ansible_su_prompt_l10n: NOT_A_VALID_PROMPT
        ansible_ssh_timeout: 3
      ignore_unreachable: true
      register: wrong_prompt
    - raw: echo \"in $(pwd)\"
      vars: {ansible_sudo_chdir: /tmp}
      register: in_tmp
    - raw: pwd
      vars: {ansible_sudo_chdir: /nonexistent_dir}
      ignore_errors: true
      register: missing_dir
    - assert:
        that:
          - first.stdout == 'root'
          - wrong_prompt is unreachable
          - wrong_prompt.msg == 'Task failed: Timeout (5s) waiting for privilege escalation prompt:'
          - in_tmp.stdout == 'in /tmp\\n'
          - missing_dir is failed
          - missing_dir.msg is search('cd.*/nonexistent_dir')
";
    let started = Instant::now();
    let out = TestRun::new()
        .playbook(playbook)
        .inventory(&inventory(
            &host,
            &format!("ansible_become_password={TEST_PASSWORD}"),
        ))
        .run();
    out.assert_code(0);
    let r = out.recap("su-per-task");
    // An ignored unreachable host counts as ok and ignored, as in Ansible's stats.
    assert_eq!(
        (r.ok, r.ignored, r.failed, r.unreachable),
        (5, 2, 0, 0),
        "{}",
        out.stdout
    );
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the prompt's wait is the task's 3 s, not the connection's 10 s"
    );
}

/// A become_exe that logs the words before the become script, then runs the real `exe`.
fn install_logging_exe(host: &DebianHost, name: &str, exe: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = format!("/usr/local/bin/{name}");
    let outside = host.rootfs().join(path.trim_start_matches('/'));
    std::fs::write(
        &outside,
        format!(
            "#!/bin/sh\nfor a; do case $a in /bin/sh*) break;; esac; printf '%s ' \"$a\"; done >> /tmp/become-log\necho >> /tmp/become-log\nexec {exe} \"$@\"\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// `become_flags` and `become_exe` reach su's and sudo's command lines from the keywords,
/// the `ansible_become_*` and `ansible_<method>_*` variables (the method's own winning, as
/// the last of an option's variables wins in Ansible) and ansible.cfg; sudo's default
/// flags are `-H -S -n`, su's none.
#[test]
fn become_flags_and_exe_are_honoured_for_su_and_sudo() {
    if !debian::available("become_flags_and_exe_are_honoured_for_su_and_sudo") {
        return;
    }
    let host = DebianHost::start("su-flags");
    let su = install_logging_exe(&host, "logged-su", "su");
    let sudo = install_logging_exe(&host, "logged-sudo", "sudo");
    let playbook = format!(
        "- hosts: all
  gather_facts: false
  tasks:
    - name: keywords
      command: id -un
      become: true
      become_method: su
      become_exe: {su}
      become_flags: -l
      vars:
        ansible_become_password: {TEST_PASSWORD}
      register: by_keywords
    - name: variables
      command: id -un
      become: true
      become_method: su
      become_user: {PLAIN_USER}
      vars:
        ansible_become_exe: {su}
        ansible_become_flags: -l
        ansible_su_flags: -s /bin/bash
        ansible_su_pass: {TEST_PASSWORD}
      register: by_vars
    - name: sudo's default flags
      command: id -un
      become: true
      vars:
        ansible_sudo_exe: {sudo}
    - name: sudo's flags from its own variable
      command: id -un
      become: true
      vars:
        ansible_become_exe: {sudo}
        ansible_sudo_flags: -S -n -E
    - assert:
        that:
          - by_keywords.stdout == 'root'
          - by_vars.stdout == '{PLAIN_USER}'
"
    );
    let run = TestRun::new()
        .playbook(&playbook)
        .inventory(&inventory(&host, ""))
        .run();
    run.assert_code(0);
    assert_eq!(
        String::from_utf8_lossy(&host.read("/tmp/become-log")),
        format!(
            "-l root -c \n-s /bin/bash {PLAIN_USER} -c \n-H -S -n -u root \n-S -n -E -u root \n"
        ),
        "{}",
        run.stdout
    );

    // ansible.cfg's [privilege_escalation] gives the flags and exe when nothing else does.
    let from_config = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  become: true
  tasks:
    - command: id -un
      register: who
    - assert: {that: who.stdout == 'root'}
",
        )
        .inventory(&inventory(&host, ""))
        .file(
            "ansible.cfg",
            &format!("[privilege_escalation]\nbecome_flags = -H -S\nbecome_exe = {sudo}\n"),
        )
        .run();
    from_config.assert_code(0);
    let log = String::from_utf8_lossy(&host.read("/tmp/become-log")).into_owned();
    assert!(log.ends_with("\n-H -S -u root \n"), "{log}");
}

/// Every process of the host, while a run becomes root through su and through sudo with a
/// password: none has the password in its command line or environment.
#[test]
fn the_password_is_in_no_command_line_or_environment_inside_the_host() {
    if !debian::available("the_password_is_in_no_command_line_or_environment_inside_the_host") {
        return;
    }
    let host = DebianHost::start("su-secret");
    let init: u32 = host
        .rootfs()
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .expect("/proc/<pid>/root");
    let namespace = std::fs::read_link(format!("/proc/{init}/ns/mnt")).expect("host namespace");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || scan_for_password(&namespace, &stop))
    };
    let playbook = format!(
        "- hosts: all
  gather_facts: false
  tasks:
    - command: sleep 1
      become: true
      become_method: su
    - command: sleep 1
      become: true
      become_method: su
      become_user: {PLAIN_USER}
    - command: sleep 1
      become: true
      remote_user: {}
",
        debian::SUDO_PASSWORD_USER
    );
    let run = TestRun::new()
        .playbook(&playbook)
        .inventory(&inventory(
            &host,
            &format!("ansible_become_password={TEST_PASSWORD}"),
        ))
        .run();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (seen, leaks) = watcher.join().unwrap();
    run.assert_code(0);
    assert!(leaks.is_empty(), "the password is visible in: {leaks:?}");
    // The scan saw su, sudo and the become agents themselves (as root and as plain).
    for running in [
        "su root -c ",
        "su plain -c ",
        "sudo -H -S -p ",
        "/root/.cache/turbo-play/agent-",
        "/home/plain/.cache/turbo-play/agent-",
    ] {
        assert!(
            seen.iter().any(|c| c.starts_with(running)),
            "{running}: {seen:?}"
        );
    }
}

/// Scans /proc until `stop`, for processes in the mount namespace `namespace`: the
/// command lines seen, and where the password showed.
fn scan_for_password(
    namespace: &Path,
    stop: &std::sync::atomic::AtomicBool,
) -> (std::collections::BTreeSet<String>, Vec<String>) {
    let mut seen = std::collections::BTreeSet::new();
    let mut leaks = Vec::new();
    let secret = TEST_PASSWORD.as_bytes();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let dir = entry.path();
            if std::fs::read_link(dir.join("ns/mnt")).ok().as_deref() != Some(namespace) {
                continue;
            }
            for file in ["cmdline", "environ"] {
                let Ok(bytes) = std::fs::read(dir.join(file)) else {
                    continue;
                };
                if file == "cmdline" {
                    seen.insert(String::from_utf8_lossy(&bytes).replace('\0', " "));
                }
                if bytes.windows(secret.len()).any(|w| w == secret) {
                    leaks.push(format!("{}/{file}", dir.display()));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (seen, leaks)
}

/// The local connection's su, on a pty the controller opens: root needs no password, and
/// `become_flags` gives nobody a shell.
#[test]
fn the_local_connection_becomes_another_user_through_su() {
    use std::os::unix::fs::MetadataExt;
    if std::fs::metadata("/proc/self").map(|m| m.uid()).ok() != Some(0) {
        eprintln!("skipped: the local su test runs su as root");
        return;
    }
    let hosts = crate::support::hosts::LocalHosts::new(&["h"]);
    let out = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        out.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let file = out.path().join("f");
    let playbook = format!(
        "- hosts: all
  gather_facts: false
  tasks:
    - command: id -un
      become: yes
      become_method: su
      become_user: nobody
      become_flags: -s /bin/sh
      register: who
    - copy: {{content: x, dest: {file}}}
      become: yes
      become_method: su
      become_user: nobody
      become_flags: -s /bin/sh
    - assert:
        that: who.stdout == 'nobody'
",
        file = file.display()
    );
    let run = TestRun::new().playbook(&playbook).local_hosts(&hosts).run();
    run.assert_code(0);
    let meta = std::fs::metadata(&file).unwrap();
    assert_ne!(meta.uid(), 0);
    assert_eq!(
        meta.mode() & 0o777,
        0o644,
        "the agent keeps the usual umask"
    );
}
