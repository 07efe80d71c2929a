//! A task's own `connection`, `remote_user` and `port` (or its block's): its ops go
//! through a session for that connection, login and port, as in Ansible; and hosts
//! behind a jump host that cannot be reached are unreachable rather than contacted directly.

use std::os::unix::fs::MetadataExt;

use crate::support::hosts::SshHosts;
use crate::support::run::{PLAY_HEAD, TestRun, assert_contains, recap};
use crate::support::sshd::{Sshd, SshdOptions};

/// An INI line for `name` on `sshd` that leaves the login and the port to the play.
fn line_without_user_and_port(hosts: &SshHosts, name: &str) -> String {
    format!(
        "{name} ansible_host=127.0.0.1 ansible_ssh_private_key_file={key} \
         ansible_ssh_common_args='-o UserKnownHostsFile={kh}'",
        key = hosts.sshd.user_key.display(),
        kh = hosts.known_hosts.display(),
    )
}

#[test]
fn a_connection_local_task_in_an_ssh_play_runs_on_the_controller() {
    let hosts = SshHosts::start(&["h"]);
    let run = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - copy: content=by-ssh dest=~/where
    - copy: content=by-local dest=~/where
      connection: local
    - block:
        - copy: content=by-local-block dest=~/from_block
      connection: local
"
        ))
        .inventory(&hosts.inventory());
    let out = run.run();
    out.assert_code(0);
    assert_eq!(out.recap("h"), recap(3, 3));
    let user = hosts.user("h");
    assert_eq!(
        std::fs::read_to_string(user.home.join("where")).unwrap(),
        "by-ssh"
    );
    // The local tasks wrote into the controller's home, as the controller's user.
    let controller_home = run.dir().join("controller-home");
    let local = controller_home.join("where");
    assert_eq!(std::fs::read_to_string(&local).unwrap(), "by-local");
    assert_eq!(std::fs::metadata(&local).unwrap().uid(), controller_uid());
    assert_eq!(
        std::fs::read_to_string(controller_home.join("from_block")).unwrap(),
        "by-local-block"
    );
    assert!(!user.home.join("from_block").exists());
}

/// The uid this test process runs as (the controller's user), read from /proc.
fn controller_uid() -> u32 {
    std::fs::metadata("/proc/self").unwrap().uid()
}

#[test]
fn a_remote_user_task_logs_in_as_that_user() {
    let hosts = SshHosts::start(&["h"]);
    let other = hosts.sshd.add_user();
    let play_user = &hosts.user("h").name;
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  remote_user: {play_user}
  port: {port}
  tasks:
    - command: whoami
      register: by_play
    - command: whoami
      remote_user: {other}
      register: by_task
    - block:
        - command: whoami
          register: by_block
      remote_user: {other}
    - debug:
        msg: \"users={{{{ by_play.stdout }}}},{{{{ by_task.stdout }}}},{{{{ by_block.stdout }}}}\"
",
            other = other.name,
            port = hosts.sshd.port,
        ))
        .inventory(&format!("{}\n", line_without_user_and_port(&hosts, "h")))
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        &format!(
            "\"msg\": \"users={play_user},{other},{other}\"",
            other = other.name
        ),
    );
}

#[test]
fn a_port_task_reaches_another_sshd() {
    let first = Sshd::start();
    let second = Sshd::start();
    let user = first.add_user();
    // One login that both servers accept, and a known_hosts file that knows both.
    let known_hosts = first.known_hosts_file(
        "known_hosts-both",
        &format!(
            "{}\n{}\n",
            first.known_hosts_line(),
            second.known_hosts_line()
        ),
    );
    let inventory = format!(
        "h ansible_host=127.0.0.1 ansible_user={user} ansible_ssh_private_key_file={k1} \
         ansible_ssh_common_args='-i {k2} -o UserKnownHostsFile={kh}'\n",
        user = user.name,
        k1 = first.user_key.display(),
        k2 = second.user_key.display(),
        kh = known_hosts.display(),
    );
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  port: {p1}
  tasks:
    - shell: echo $SSH_CONNECTION
      register: by_play
    - shell: echo $SSH_CONNECTION
      port: {p2}
      register: by_task
    - debug:
        msg: \"ports={{{{ by_play.stdout.split()[3] }}}},{{{{ by_task.stdout.split()[3] }}}}\"
",
            p1 = first.port,
            p2 = second.port
        ))
        .inventory(&inventory)
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        &format!("\"msg\": \"ports={},{}\"", first.port, second.port),
    );
}

#[test]
fn a_host_behind_a_jump_host_is_unreachable_with_the_reason_not_contacted_directly() {
    // A real sshd the host would reach directly: it must not be contacted.
    let hosts = SshHosts::start(&["direct", "jumped"]);
    let jumped = hosts.user("jumped");
    let inventory = format!(
        "{}\njumped ansible_host=127.0.0.1 ansible_port={port} ansible_user={user} \
         ansible_ssh_private_key_file={key} \
         ansible_ssh_common_args='-o UserKnownHostsFile={kh} -o ProxyJump=bastion.example'\n",
        hosts.line("direct"),
        port = hosts.sshd.port,
        user = jumped.name,
        key = hosts.sshd.user_key.display(),
        kh = hosts.known_hosts.display(),
    );
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:\n    - copy: content=x dest=~/touched\n"
        ))
        .inventory(&inventory)
        .run();
    out.assert_code(4);
    assert_contains(&out, "fatal: [jumped]: UNREACHABLE!");
    assert_contains(
        &out,
        "Failed to connect to the host via ssh: jump host root@bastion.example:22: ssh: Could not resolve hostname bastion.example",
    );
    assert_eq!(out.recap("jumped").unreachable, 1);
    assert_eq!(out.recap("direct"), recap(1, 1));
    assert!(!jumped.home.join("touched").exists());
    assert!(hosts.user("direct").home.join("touched").exists());
}

#[test]
fn a_host_is_logged_into_once_and_only_when_a_task_needs_it() {
    let hosts = SshHosts::start_with(
        &SshdOptions {
            head: "LogLevel VERBOSE\n",
            ..Default::default()
        },
        &["h"],
    );
    let (sshd, inventory) = (&hosts.sshd, hosts.inventory());
    let logins = || sshd.log().matches("Accepted publickey").count();
    // Tasks that work on the controller alone: Ansible never connects for them, and the
    // login started while a task is planned is not started for them either (the pause
    // gives one time to complete).
    let controller_only = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - set_fact: x=1
    - debug: var=x
    - assert: {{that: x == '1'}}
    - pause: seconds=1
"
        ))
        .inventory(&inventory)
        .run();
    controller_only.assert_code(0);
    assert_eq!(controller_only.recap("h").ok, 4);
    assert_eq!(logins(), 0, "{}", sshd.log());
    // A task that needs the host after them: one login, the one started ahead.
    let then_copy = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - debug: msg=first
    - copy: content=x dest=~/copied
    - copy: content=y dest=~/copied2
"
        ))
        .inventory(&inventory)
        .run();
    then_copy.assert_code(0);
    assert_eq!(then_copy.recap("h").changed, 2);
    assert_eq!(
        std::fs::read_to_string(hosts.user("h").home.join("copied")).unwrap(),
        "x"
    );
    assert_eq!(logins(), 1, "{}", sshd.log());
}
