//! Getting through to hosts over real sshds: jump host chains (the host in a network
//! namespace the controller cannot reach), ProxyCommand, password and keyboard-interactive
//! logins, an encrypted key's passphrase asked on a terminal, a real ssh-agent, 200
//! hosts at once against one sshd with its default MaxStartups, and 40 through one
//! connection to a bastion with its default MaxSessions.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::netns::NetNs;
use crate::support::run::{Outcome, PLAY_HEAD, TestRun, assert_contains, recap};
use crate::support::sshd::{Sshd, SshdOptions, TestUser, free_port};

const TOUCH: &str = "  tasks:\n    - copy: content=x dest=~/touched\n";

/// A known_hosts file trusting all of `sshds`.
fn known_hosts(dir: &Path, sshds: &[&Sshd]) -> PathBuf {
    let path = dir.join("known_hosts");
    let lines: String = sshds
        .iter()
        .map(|s| format!("{}\n", s.known_hosts_line()))
        .collect();
    std::fs::write(&path, lines).unwrap();
    path
}

fn host_line(name: &str, sshd: &Sshd, user: &TestUser, extra: &str) -> String {
    format!(
        "{name} ansible_host={} ansible_port={} ansible_user={} {extra}\n",
        sshd.address, sshd.port, user.name
    )
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[test]
fn two_jump_hosts_in_a_chain_reach_hosts_the_controller_cannot() {
    let Some(netns) = NetNs::create() else {
        eprintln!("skipped: cannot create a network namespace here");
        return;
    };
    // bastion1 here; bastion2 and the hosts in the namespace; the hosts on the
    // namespace's own loopback, which nothing outside it reaches.
    let bastion1 = Sshd::start_with(&SshdOptions {
        head: "LogLevel DEBUG1\n",
        ..Default::default()
    });
    let key = bastion1.user_key.clone();
    let bastion2 = Sshd::start_with(&SshdOptions {
        address: Some(&netns.inside),
        netns: Some(&netns.name),
        user_key: Some(&key),
        head: "LogLevel DEBUG1\n",
        ..Default::default()
    });
    let target = Sshd::start_with(&SshdOptions {
        netns: Some(&netns.name),
        user_key: Some(&key),
        ..Default::default()
    });
    assert!(
        TcpStream::connect(("127.0.0.1", target.port)).is_err(),
        "the host must not be reachable from the controller"
    );
    let (hop1, hop2) = (bastion1.add_user(), bastion2.add_user());
    let (web1, web2) = (target.add_user(), target.add_user());
    let kh = known_hosts(bastion1.dir.path(), &[&bastion1, &bastion2, &target]);
    let inventory = format!(
        "{}{}[all:vars]\nansible_ssh_private_key_file={key}\n\
         ansible_ssh_common_args='-o UserKnownHostsFile={kh} -J {u1}@127.0.0.1:{p1},{u2}@{a2}:{p2}'\n",
        host_line("web1", &target, &web1, ""),
        host_line("web2", &target, &web2, ""),
        key = key.display(),
        kh = kh.display(),
        u1 = hop1.name,
        p1 = bastion1.port,
        u2 = hop2.name,
        a2 = netns.inside,
        p2 = bastion2.port,
    );
    let out = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{TOUCH}"))
        .inventory(&inventory)
        .run();
    out.assert_code(0);
    assert_eq!(out.recap("web1"), recap(1, 1));
    assert_eq!(out.recap("web2"), recap(1, 1));
    assert!(web1.home.join("touched").exists() && web2.home.join("touched").exists());
    // One connection to each bastion, shared by both hosts; each forwarded to the next hop.
    let log1 = bastion1.log();
    assert_eq!(
        count(&log1, &format!("Accepted publickey for {}", hop1.name)),
        1,
        "{log1}"
    );
    assert!(
        log1.contains(&format!("target {} port {}", netns.inside, bastion2.port)),
        "{log1}"
    );
    let log2 = bastion2.log();
    assert_eq!(
        count(&log2, &format!("Accepted publickey for {}", hop2.name)),
        1,
        "{log2}"
    );
    assert_eq!(
        count(&log2, &format!("target 127.0.0.1 port {}", target.port)),
        2,
        "{log2}"
    );
}

#[test]
fn forty_hosts_share_one_connection_to_a_bastion_with_the_default_max_sessions() {
    // sshd's MaxSessions (10 by default) counts sessions, not forwarded channels: forty
    // hosts log in through one connection to this bastion at once and stay connected.
    let bastion = Sshd::start_with(&SshdOptions {
        head: "MaxSessions 10\nLogLevel DEBUG1\n",
        ..Default::default()
    });
    let key = bastion.user_key.clone();
    let target = Sshd::start_with(&SshdOptions {
        user_key: Some(&key),
        ..Default::default()
    });
    let (hop, user) = (bastion.add_user(), target.add_user());
    let kh = known_hosts(bastion.dir.path(), &[&bastion, &target]);
    let mut inventory: String = (0..40)
        .map(|n| host_line(&format!("h{n:02}"), &target, &user, ""))
        .collect();
    inventory.push_str(&format!(
        "[all:vars]\nansible_ssh_private_key_file={}\n\
         ansible_ssh_common_args='-o UserKnownHostsFile={} -J {}@127.0.0.1:{}'\n",
        key.display(),
        kh.display(),
        hop.name,
        bastion.port
    ));
    let (out, _) = ping_all(&inventory, "40");
    out.assert_code(0);
    let recaps = out.recaps();
    assert_eq!(recaps.len(), 40);
    assert!(recaps.values().all(|r| r.ok == 1 && r.unreachable == 0));
    let log = bastion.log();
    assert_eq!(
        count(&log, &format!("Accepted publickey for {}", hop.name)),
        1,
        "{log}"
    );
    assert_eq!(
        count(&log, &format!("target 127.0.0.1 port {}", target.port)),
        40,
        "{log}"
    );
}

#[test]
fn a_jump_host_that_refuses_is_named_in_the_failure() {
    let hosts = Sshd::start();
    let user = hosts.add_user();
    let closed = free_port();
    let inventory = host_line(
        "web1",
        &hosts,
        &user,
        &format!(
            "ansible_ssh_private_key_file={} ansible_ssh_common_args='-o ProxyJump=ops@127.0.0.1:{closed}'",
            hosts.user_key.display()
        ),
    );
    let out = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{TOUCH}"))
        .inventory(&inventory)
        .run();
    out.assert_code(4);
    assert_contains(
        &out,
        &format!(
            "Failed to connect to the host via ssh: jump host ops@127.0.0.1:{closed}: ssh: connect to host 127.0.0.1 port {closed}: Connection refused"
        ),
    );
    assert!(!user.home.join("touched").exists());
}

/// A relay in Python: stdin/stdout to a TCP connection, logging what it was asked for.
const RELAY: &str = r#"
import os, socket, sys, threading
host, port, user, log = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(log, "a") as f:
    f.write(f"{user}@{host}:{port}\n")
s = socket.create_connection((host, port))
def up():
    while True:
        data = os.read(0, 65536)
        if not data:
            s.shutdown(socket.SHUT_WR)
            return
        s.sendall(data)
threading.Thread(target=up, daemon=True).start()
while True:
    data = s.recv(65536)
    if not data:
        break
    os.write(1, data)
"#;

#[test]
fn proxy_command_carries_the_connection_and_its_exit_is_reported() {
    let sshd = Sshd::start();
    let user = sshd.add_user();
    let relay = sshd.dir.path().join("relay.py");
    std::fs::write(&relay, RELAY).unwrap();
    let log = sshd.dir.path().join("relay.log");
    let kh = known_hosts(sshd.dir.path(), &[&sshd]);
    let inventory = format!(
        "{}{}",
        host_line(
            "web1",
            &sshd,
            &user,
            &format!(
                "ansible_ssh_private_key_file={key} ansible_ssh_common_args=\"-o UserKnownHostsFile={kh} -o 'ProxyCommand=python3 {relay} %h %p %r {log}'\"",
                key = sshd.user_key.display(),
                kh = kh.display(),
                relay = relay.display(),
                log = log.display(),
            )
        ),
        host_line(
            "broken",
            &sshd,
            &user,
            &format!(
                "ansible_ssh_private_key_file={key} ansible_ssh_common_args=\"-o UserKnownHostsFile={kh} -o 'ProxyCommand=echo no route to %h >&2; exit 3'\"",
                key = sshd.user_key.display(),
                kh = kh.display(),
            )
        ),
    );
    let out = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{TOUCH}"))
        .inventory(&inventory)
        .run();
    out.assert_code(4);
    assert_eq!(out.recap("web1"), recap(1, 1));
    assert!(user.home.join("touched").exists());
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("{}@127.0.0.1:{}\n", user.name, sshd.port)
    );
    assert_eq!(out.recap("broken").unreachable, 1);
    assert_contains(
        &out,
        "Failed to connect to the host via ssh: ProxyCommand `echo no route to 127.0.0.1 >&2; exit 3` exited with status 3 before the SSH handshake was done, saying: no route to 127.0.0.1",
    );
}

#[test]
fn password_logins_from_a_variable_and_a_file_and_a_wrong_one_is_denied() {
    let sshd = Sshd::start_with(&SshdOptions {
        head: "PasswordAuthentication yes\n",
        ..Default::default()
    });
    let (alice, bob, carol) = (sshd.add_user(), sshd.add_user(), sshd.add_user());
    alice.set_password("alice-pw");
    bob.set_password("bob-pw");
    carol.set_password("carol-pw");
    let kh = known_hosts(sshd.dir.path(), &[&sshd]);
    let common = format!(
        "ansible_ssh_common_args='-o UserKnownHostsFile={}'",
        kh.display()
    );
    let inventory = format!(
        "{}{}{}",
        host_line(
            "alice",
            &sshd,
            &alice,
            &format!("ansible_password=alice-pw {common}")
        ),
        host_line("bob", &sshd, &bob, &common),
        host_line(
            "carol",
            &sshd,
            &carol,
            &format!("ansible_ssh_pass=wrong {common}")
        ),
    );
    let run = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{TOUCH}"))
        .inventory(&inventory);
    let password_file = run.dir().join("conn-pass");
    std::fs::write(&password_file, "bob-pw\n").unwrap();
    let out = run
        .args(&[
            "--connection-password-file",
            password_file.to_str().unwrap(),
        ])
        .run();
    out.assert_code(4);
    assert_eq!(out.recap("alice"), recap(1, 1));
    assert_eq!(out.recap("bob"), recap(1, 1));
    assert_eq!(out.recap("carol").unreachable, 1);
    assert_contains(
        &out,
        &format!(
            "Failed to connect to the host via ssh: Permission denied (password) for user {}: tried the password",
            carol.name
        ),
    );
    for secret in ["alice-pw", "bob-pw", "wrong"] {
        assert!(!out.stdout.contains(secret) && !out.stderr.contains(secret));
    }
}

#[test]
fn keyboard_interactive_is_answered_with_the_password() {
    // sshd asks keyboard-interactive questions through PAM only: UsePAM yes here.
    let sshd = Sshd::start_with(&SshdOptions {
        head: "UsePAM yes\nKbdInteractiveAuthentication yes\nPasswordAuthentication no\n",
        ..Default::default()
    });
    let user = sshd.add_user();
    user.set_password("kbd-pw");
    let kh = known_hosts(sshd.dir.path(), &[&sshd]);
    let inventory = host_line(
        "web1",
        &sshd,
        &user,
        &format!(
            "ansible_password=kbd-pw ansible_ssh_common_args='-o UserKnownHostsFile={}'",
            kh.display()
        ),
    );
    let out = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{TOUCH}"))
        .inventory(&inventory)
        .run();
    out.assert_code(0);
    assert!(user.home.join("touched").exists());
}

/// An ed25519 key encrypted with `passphrase`, accepted by `sshd`.
fn encrypted_key(sshd: &Sshd, passphrase: &str) -> PathBuf {
    let key = sshd.dir.path().join("encrypted_ed25519");
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-C", "", "-N", passphrase, "-f"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(status.success());
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let authorized = sshd.dir.path().join("authorized_keys");
    let mut text = std::fs::read_to_string(&authorized).unwrap();
    text.push_str(&public);
    std::fs::write(&authorized, text).unwrap();
    key
}

/// Runs a program on a new pty and types `answer` after `prompt`, each time it comes.
const PTY_DRIVER: &str = r#"
import os, pty, select, sys
prompt, answer = sys.argv[1].encode(), sys.argv[2].encode() + b"\n"
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[3], sys.argv[3:])
seen, answered = b"", 0
while True:
    ready, _, _ = select.select([fd], [], [], 60)
    if not ready:
        break
    try:
        data = os.read(fd, 4096)
    except OSError:
        break
    if not data:
        break
    seen += data
    if seen.count(prompt) > answered:
        answered += 1
        os.write(fd, answer)
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(seen)
sys.exit(os.waitstatus_to_exitcode(status))
"#;

#[test]
fn an_encrypted_key_asks_its_passphrase_once_on_a_terminal_and_fails_without_one() {
    let sshd = Sshd::start();
    let key = encrypted_key(&sshd, "open sesame");
    let (u1, u2) = (sshd.add_user(), sshd.add_user());
    let kh = known_hosts(sshd.dir.path(), &[&sshd]);
    let vars = format!(
        "ansible_ssh_private_key_file={} ansible_ssh_common_args='-o UserKnownHostsFile={}'",
        key.display(),
        kh.display()
    );
    let inventory = format!(
        "{}{}",
        host_line("web1", &sshd, &u1, &vars),
        host_line("web2", &sshd, &u2, &vars)
    );
    let run = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{TOUCH}"))
        .inventory(&inventory);
    let driver = run.dir().join("answer_on_pty.py");
    std::fs::write(&driver, PTY_DRIVER).unwrap();
    let driver = driver.to_str().unwrap().to_string();
    let out = run
        .through(&[
            "python3",
            &driver,
            "Enter passphrase for key",
            "open sesame",
        ])
        .run();
    out.assert_code(0);
    assert_eq!(
        count(
            &out.stdout,
            &format!("Enter passphrase for key '{}': ", key.display())
        ),
        1,
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("open sesame"),
        "no echo: {}",
        out.stdout
    );
    assert!(u1.home.join("touched").exists() && u2.home.join("touched").exists());

    // Without a terminal the key cannot be used, and the failure says which and why.
    let fresh = sshd.add_user();
    let inventory = host_line("web3", &sshd, &fresh, &vars);
    let out = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{TOUCH}"))
        .inventory(&inventory)
        .through(&["setsid", "-w"])
        .run();
    out.assert_code(4);
    assert_contains(
        &out,
        &format!(
            "Permission denied (publickey) for user {}: tried {} (passphrase-protected and no terminal to ask for the passphrase: load it into ssh-agent with `ssh-add`)",
            fresh.name,
            key.display()
        ),
    );
}

/// A real ssh-agent on its own socket, stopped on drop.
struct SshAgent {
    child: Child,
    socket: PathBuf,
}

impl SshAgent {
    fn start(dir: &Path) -> SshAgent {
        let socket = dir.join("agent.sock");
        let child = Command::new("ssh-agent")
            .arg("-D")
            .arg("-a")
            .arg(&socket)
            .stdout(Stdio::null())
            .spawn()
            .expect("ssh-agent");
        let start = Instant::now();
        while !socket.exists() {
            assert!(start.elapsed() < Duration::from_secs(10), "no agent socket");
            std::thread::sleep(Duration::from_millis(20));
        }
        SshAgent { child, socket }
    }

    /// `ssh-add` of an encrypted key, its passphrase given by an askpass script.
    fn add(&self, key: &Path, passphrase: &str, dir: &Path) {
        let askpass = dir.join("askpass.sh");
        std::fs::write(&askpass, format!("#!/bin/sh\necho '{passphrase}'\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&askpass, std::fs::Permissions::from_mode(0o700)).unwrap();
        let out = Command::new("setsid")
            .args(["-w", "ssh-add"])
            .arg(key)
            .env("SSH_AUTH_SOCK", &self.socket)
            .env("SSH_ASKPASS", &askpass)
            .env("SSH_ASKPASS_REQUIRE", "force")
            .env("DISPLAY", "none")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "ssh-add: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for SshAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn ssh_agent_keys_log_in_without_a_passphrase_or_a_terminal() {
    let sshd = Sshd::start();
    let key = encrypted_key(&sshd, "agent only");
    let agent = SshAgent::start(sshd.dir.path());
    agent.add(&key, "agent only", sshd.dir.path());
    let user = sshd.add_user();
    let kh = known_hosts(sshd.dir.path(), &[&sshd]);
    // The key file is named too: the agent's copy is used first, the file never opened.
    let inventory = host_line(
        "web1",
        &sshd,
        &user,
        &format!(
            "ansible_ssh_private_key_file={} ansible_ssh_common_args='-o UserKnownHostsFile={}'",
            key.display(),
            kh.display()
        ),
    );
    let out = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{TOUCH}"))
        .inventory(&inventory)
        .env("SSH_AUTH_SOCK", agent.socket.to_str().unwrap())
        .through(&["setsid", "-w"])
        .run();
    out.assert_code(0);
    assert!(user.home.join("touched").exists());
}

fn ping_all(inventory: &str, forks: &str) -> (Outcome, Duration) {
    let started = Instant::now();
    let out = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}  tasks:\n    - ping:\n"))
        .inventory(inventory)
        .args(&["-f", forks])
        .run();
    (out, started.elapsed())
}

#[test]
fn two_hundred_hosts_at_once_on_one_sshd_all_connect() {
    // sshd's own MaxStartups (10:30:100): beyond ten handshakes at once it drops some.
    let sshd = Sshd::start_with(&SshdOptions {
        head: "MaxStartups 10:30:100\n",
        ..Default::default()
    });
    let user = sshd.add_user();
    let kh = known_hosts(sshd.dir.path(), &[&sshd]);
    let vars = format!(
        "ansible_ssh_private_key_file={} ansible_ssh_common_args='-o UserKnownHostsFile={}'",
        sshd.user_key.display(),
        kh.display()
    );
    // The agent uploaded once first, so the 200 measure connecting, not uploading.
    let (warm, _) = ping_all(&host_line("warm", &sshd, &user, &vars), "1");
    warm.assert_code(0);
    let inventory: String = (0..200)
        .map(|n| host_line(&format!("h{n:03}"), &sshd, &user, &vars))
        .collect();
    let (out, took) = ping_all(&inventory, "200");
    eprintln!("200 hosts on one sshd at -f 200: {took:?}");
    out.assert_code(0);
    let recaps = out.recaps();
    assert_eq!(recaps.len(), 200);
    assert!(recaps.values().all(|r| r.ok == 1 && r.unreachable == 0));
}

#[test]
fn handshakes_an_sshd_drops_are_tried_again() {
    // Beyond 2 unauthenticated connections this sshd drops every new one, as a busy sshd
    // does; ten hosts open up to ten at once, so most are dropped at least once.
    let sshd = Sshd::start_with(&SshdOptions {
        head: "MaxStartups 2\nLogLevel VERBOSE\n",
        ..Default::default()
    });
    let user = sshd.add_user();
    let kh = known_hosts(sshd.dir.path(), &[&sshd]);
    let vars = format!(
        "ansible_ssh_private_key_file={} ansible_ssh_common_args='-o UserKnownHostsFile={}'",
        sshd.user_key.display(),
        kh.display()
    );
    let (warm, _) = ping_all(&host_line("warm", &sshd, &user, &vars), "1");
    warm.assert_code(0);
    let inventory: String = (0..10)
        .map(|n| host_line(&format!("h{n}"), &sshd, &user, &vars))
        .collect();
    let (out, _) = ping_all(&inventory, "10");
    out.assert_code(0);
    assert_eq!(out.recaps().len(), 10);
    assert!(
        sshd.log().contains("past MaxStartups"),
        "sshd dropped none, so nothing was retried: {}",
        sshd.log()
    );
}
