//! Hosts reached through OpenSSH's client configuration, against a real sshd: a throw-away
//! controller HOME's `~/.ssh/config`, `-F` in the ssh args, `Match`, `Include`, negated
//! patterns, the inventory winning over the files, accept-new with HashKnownHosts, the
//! warning for an option turbo-play does not act on, a ProxyJump bastion named (and
//! described) only in the file, and a CertificateFile login.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::hosts::{SshHosts, closed_port};
use crate::support::netns::NetNs;
use crate::support::run::{Outcome, TestRun, assert_contains, assert_not_contains, recap};
use crate::support::sshd::{Sshd, SshdOptions, keygen};

const REACH: &str = "- hosts: all
  gather_facts: false
  tasks:
    - copy: content=hi dest=~/reached
    - command: 'true'
";

/// The run's controller HOME (TestRun points HOME at it).
fn home(run: &TestRun) -> PathBuf {
    run.dir().join("controller-home")
}

/// `~/.ssh/config` (and other files under `~/.ssh`) in the run's HOME, private as ssh wants.
fn write_ssh_file(run: &TestRun, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = home(run).join(".ssh").join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

#[track_caller]
fn assert_reached(out: &Outcome, hosts: &SshHosts, name: &str) {
    assert_eq!(
        out.recap(name),
        recap(2, 2),
        "{name}\n{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        hosts.user(name).home.join("reached").exists(),
        "{name} not reached"
    );
}

#[test]
fn a_host_defined_only_in_the_users_ssh_config() {
    let hosts = SshHosts::start(&["web1"]);
    let run = TestRun::new().playbook(REACH).inventory("web1\n");
    // The key under the throw-away HOME, named with `~` as users write it.
    let key = std::fs::read(&hosts.sshd.user_key).unwrap();
    write_ssh_file(&run, "id_web", std::str::from_utf8(&key).unwrap());
    write_ssh_file(
        &run,
        "config",
        &format!(
            "# written by the test\n\
             Host web1\n\
             \x20   HostName 127.0.0.1\n\
             \x20   Port {port}\n\
             \x20   User {user}\n\
             \x20   IdentityFile ~/.ssh/id_web\n\
             \x20   UserKnownHostsFile={kh}\n",
            port = hosts.sshd.port,
            user = hosts.user("web1").name,
            kh = hosts.known_hosts.display(),
        ),
    );
    let out = run.run();
    out.assert_code(0);
    assert_reached(&out, &hosts, "web1");
    assert_not_contains(&out, "[WARNING]");
}

#[test]
fn f_in_ansible_ssh_common_args_with_match_user_and_a_negated_pattern() {
    let hosts = SshHosts::start(&["web1", "web2"]);
    let run = TestRun::new().playbook(REACH);
    let config = run.dir().join("ssh.cfg");
    std::fs::write(
        &config,
        format!(
            "Host * !web2\n  Port {port}\n\
             Host web2\n  Port {closed}\n\
             Host *\n  HostName 127.0.0.1\n  UserKnownHostsFile {kh}\n\
             Match user {user1}\n  IdentityFile {key}\n",
            port = hosts.sshd.port,
            closed = closed_port(),
            kh = hosts.known_hosts.display(),
            user1 = hosts.user("web1").name,
            key = hosts.sshd.user_key.display(),
        ),
    )
    .unwrap();
    let inventory = format!(
        "[web]\nweb1 ansible_user={}\nweb2 ansible_user={}\n\
         [web:vars]\nansible_ssh_common_args='-F {}'\n",
        hosts.user("web1").name,
        hosts.user("web2").name,
        config.display()
    );
    let run = run.inventory(&inventory);
    let out = run.run();
    out.assert_code(4);
    // web1: the Port of `Host * !web2`, the key of `Match user` (its ansible_user).
    assert_reached(&out, &hosts, "web1");
    // web2: left out of `Host * !web2`, sent to a closed port.
    assert_eq!(out.recap("web2").unreachable, 1, "{}", out.stdout);
    assert_contains(&out, "Connection refused");
    // The user's own ~/.ssh/config is not read when -F names a file.
    write_ssh_file(&run, "config", "Host *\n  Port 1\n");
    let again = run.run();
    assert_eq!(again.recap("web1"), recap(2, 1), "{}", again.stdout);
}

#[test]
fn include_and_the_inventory_winning_over_the_files() {
    let hosts = SshHosts::start(&["web1", "db1"]);
    let run = TestRun::new().playbook(REACH);
    write_ssh_file(
        &run,
        "config",
        "Include conf.d/*.conf\nHost *\n  User nobody-at-all\n",
    );
    write_ssh_file(
        &run,
        "conf.d/10-hosts.conf",
        &format!(
            "Host web1 db1\n  HostName 127.0.0.1\n  IdentityFile {key}\n  UserKnownHostsFile {kh}\n\
             Host web1\n  Port {port}\n  User {web_user}\n\
             Host db1\n  Port {closed}\n  User nobody\n",
            key = hosts.sshd.user_key.display(),
            kh = hosts.known_hosts.display(),
            port = hosts.sshd.port,
            closed = closed_port(),
            web_user = hosts.user("web1").name,
        ),
    );
    // db1's file says a closed port and another user: its inventory variables win.
    let inventory = format!(
        "web1\ndb1 ansible_port={} ansible_user={}\n",
        hosts.sshd.port,
        hosts.user("db1").name
    );
    let out = run.inventory(&inventory).run();
    out.assert_code(0);
    assert_reached(&out, &hosts, "web1");
    assert_reached(&out, &hosts, "db1");
}

/// The host names in `file` ssh-keygen -F finds.
fn ssh_keygen_finds(file: &Path, name: &str) -> bool {
    Command::new("ssh-keygen")
        .arg("-F")
        .arg(name)
        .arg("-f")
        .arg(file)
        .output()
        .map(|o| o.status.success() && !o.stdout.is_empty())
        .unwrap_or(false)
}

#[test]
fn accept_new_writes_a_hashed_line_when_hash_known_hosts_says_so() {
    let hosts = SshHosts::start(&["web1"]);
    let run = TestRun::new().playbook(REACH).inventory("web1\n");
    write_ssh_file(
        &run,
        "config",
        &format!(
            "Host web1\n  HostName 127.0.0.1\n  Port {port}\n  User {user}\n  IdentityFile {key}\n\
             \x20 StrictHostKeyChecking accept-new\n  HashKnownHosts yes\n",
            port = hosts.sshd.port,
            user = hosts.user("web1").name,
            key = hosts.sshd.user_key.display(),
        ),
    );
    let out = run.run();
    out.assert_code(0);
    let known = home(&run).join(".ssh/known_hosts");
    let text = std::fs::read_to_string(&known).expect("accept-new wrote ~/.ssh/known_hosts");
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("|1|"), "{text}");
    assert!(!text.contains("127.0.0.1"), "{text}");
    let name = format!("[127.0.0.1]:{}", hosts.sshd.port);
    assert!(ssh_keygen_finds(&known, &name), "{text}");
    // Known from now on: nothing added.
    let again = run.run();
    again.assert_code(0);
    assert_eq!(std::fs::read_to_string(&known).unwrap(), text);
}

#[test]
fn an_option_not_acted_on_is_warned_about_once() {
    let hosts = SshHosts::start(&["web1", "web2"]);
    let run = TestRun::new().playbook(REACH);
    write_ssh_file(
        &run,
        "config",
        &format!(
            "Host web*\n  HostName 127.0.0.1\n  Port {port}\n  IdentityFile {key}\n\
             \x20 UserKnownHostsFile {kh}\n  ForwardAgent yes\n  ControlMaster auto\n  ControlPersist 60s\n",
            port = hosts.sshd.port,
            key = hosts.sshd.user_key.display(),
            kh = hosts.known_hosts.display(),
        ),
    );
    let inventory = format!(
        "web1 ansible_user={}\nweb2 ansible_user={}\n",
        hosts.user("web1").name,
        hosts.user("web2").name
    );
    let out = run.inventory(&inventory).run();
    out.assert_code(0);
    assert_reached(&out, &hosts, "web1");
    assert_reached(&out, &hosts, "web2");
    let warning = "[WARNING]: ~/.ssh/config line 6: ForwardAgent is not supported by turbo-play \
                   and was ignored (said once per run)";
    assert_eq!(out.stderr.matches(warning).count(), 1, "{}", out.stderr);
    // ControlMaster and ControlPersist (Ansible's own ssh_args) are ignored on purpose.
    assert_not_contains(&out, "ControlMaster");
}

#[test]
fn a_jump_host_named_in_the_users_ssh_config_is_gone_through() {
    let Some(netns) = NetNs::create() else {
        eprintln!("skipped: cannot create a network namespace here");
        return;
    };
    // The bastion on the namespace's veth address, the host on its own loopback: only the
    // bastion reaches it. Both are named only in ~/.ssh/config, the bastion by an alias
    // whose own block gives its HostName, Port, User and key.
    let bastion = Sshd::start_with(&SshdOptions {
        address: Some(&netns.inside),
        netns: Some(&netns.name),
        head: "LogLevel DEBUG1\n",
        ..Default::default()
    });
    let target = Sshd::start_with(&SshdOptions {
        netns: Some(&netns.name),
        ..Default::default()
    });
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", target.port)).is_err(),
        "the host must not be reachable from the controller"
    );
    let (hop, web1) = (bastion.add_user(), target.add_user());
    let kh = bastion.dir.path().join("known_hosts");
    std::fs::write(
        &kh,
        format!(
            "{}\n{}\n",
            bastion.known_hosts_line(),
            target.known_hosts_line()
        ),
    )
    .unwrap();
    let run = TestRun::new().playbook(REACH).inventory("web1\n");
    write_ssh_file(
        &run,
        "config",
        &format!(
            "Host web1\n\
             \x20 HostName 127.0.0.1\n\
             \x20 Port {tport}\n\
             \x20 User {tuser}\n\
             \x20 IdentityFile {tkey}\n\
             \x20 ProxyJump gw\n\
             Host gw\n\
             \x20 HostName {baddr}\n\
             \x20 Port {bport}\n\
             \x20 User {buser}\n\
             \x20 IdentityFile {bkey}\n\
             Host *\n\
             \x20 UserKnownHostsFile {kh}\n",
            tport = target.port,
            tuser = web1.name,
            tkey = target.user_key.display(),
            baddr = netns.inside,
            bport = bastion.port,
            buser = hop.name,
            bkey = bastion.user_key.display(),
            kh = kh.display(),
        ),
    );
    let out = run.run();
    out.assert_code(0);
    assert_eq!(
        out.recap("web1"),
        recap(2, 2),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(web1.home.join("reached").exists());
    let log = bastion.log();
    assert!(
        log.contains(&format!("Accepted publickey for {}", hop.name)),
        "{log}"
    );
    assert!(
        log.contains(&format!("target 127.0.0.1 port {}", target.port)),
        "{log}"
    );

    // `-o ProxyJump=none` on the command line beats the file, as ssh's first value: the
    // host is then tried directly, and cannot be reached.
    let run = run.inventory("web1 ansible_ssh_common_args='-o ProxyJump=none' ansible_timeout=3\n");
    let out = run.run();
    out.assert_code(4);
    assert_contains(
        &out,
        &format!("ssh: connect to host 127.0.0.1 port {}", target.port),
    );
}

#[test]
fn a_certificate_file_logs_in_where_the_plain_key_is_not_authorized() {
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("user_ca");
    keygen(&ca);
    let sshd = Sshd::start_with(&SshdOptions {
        head: &format!("TrustedUserCAKeys {}\n", ca.with_extension("pub").display()),
        ..Default::default()
    });
    let user = sshd.add_user();
    // A key sshd does not know, signed by the CA for this user.
    let key = dir.path().join("id_signed");
    keygen(&key);
    let status = Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(&ca)
        .args(["-I", "test-user", "-n", &user.name, "-V", "-5m:+1h"])
        .arg(key.with_extension("pub"))
        .status()
        .unwrap();
    assert!(status.success(), "ssh-keygen -s");
    let cert = dir.path().join("signed.cert");
    std::fs::rename(dir.path().join("id_signed-cert.pub"), &cert).unwrap();
    let kh = dir.path().join("known_hosts");
    std::fs::write(&kh, format!("{}\n", sshd.known_hosts_line())).unwrap();
    let run = TestRun::new().playbook(REACH).inventory("web1\n");
    let config = format!(
        "Host web1\n\
         \x20 HostName 127.0.0.1\n\
         \x20 Port {port}\n\
         \x20 User {name}\n\
         \x20 IdentityFile {key}\n\
         \x20 IdentitiesOnly yes\n\
         \x20 UserKnownHostsFile {kh}\n",
        port = sshd.port,
        name = user.name,
        key = key.display(),
        kh = kh.display(),
    );
    // Without the certificate the key alone is refused...
    write_ssh_file(&run, "config", &config);
    let out = run.run();
    out.assert_code(4);
    assert_contains(&out, "Permission denied (publickey)");
    // ...and with CertificateFile it logs in.
    write_ssh_file(
        &run,
        "config",
        &format!("{config}  CertificateFile {}\n", cert.display()),
    );
    let out = run.run();
    out.assert_code(0);
    assert_eq!(
        out.recap("web1"),
        recap(2, 2),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(user.home.join("reached").exists());
    assert_not_contains(&out, "CertificateFile");
}

#[test]
fn a_bad_line_in_the_file_makes_the_host_unreachable() {
    let run = TestRun::new().playbook(REACH).inventory("web1\n");
    // As with ssh, a bad line anywhere stops every host, named by file and line.
    write_ssh_file(&run, "config", "Host other\n  Port 22\n  Frobnicate yes\n");
    let out = run.run();
    out.assert_code(4);
    assert_contains(
        &out,
        "~/.ssh/config: line 3: Bad configuration option: frobnicate",
    );
    assert_eq!(out.recap("web1").unreachable, 1);
}

/// An sshd whose host key is signed by a fresh CA for `principals`; returns the CA's
/// public line.
fn sshd_with_host_certificate(principals: &'static str) -> (Sshd, String) {
    let ca = std::sync::Mutex::new(String::new());
    let sign = |dir: &Path, host_key: &Path| {
        let ca_key = dir.join("host_ca");
        keygen(&ca_key);
        let status = Command::new("ssh-keygen")
            .args(["-q", "-s"])
            .arg(&ca_key)
            .args(["-I", "test-host", "-h", "-n", principals, "-V", "-5m:+1h"])
            .arg(host_key.with_extension("pub"))
            .status()
            .unwrap();
        assert!(status.success(), "ssh-keygen -s");
        let ca_pub = std::fs::read_to_string(ca_key.with_extension("pub")).unwrap();
        *ca.lock().unwrap() = ca_pub.trim().to_string();
        let cert = host_key.with_file_name("host_ed25519-cert.pub");
        format!("HostCertificate {}\n", cert.display())
    };
    let sshd = Sshd::start_with(&SshdOptions {
        extra: Some(&sign),
        ..Default::default()
    });
    let ca = ca.into_inner().unwrap();
    (sshd, ca)
}

#[test]
fn a_host_certificate_signed_by_a_cert_authority_of_known_hosts() {
    let (sshd, ca) = sshd_with_host_certificate("127.0.0.1");
    let user = sshd.add_user();
    let run = TestRun::new().playbook(REACH).inventory("web1\n");
    // Only the authority is known, never the host's own key.
    let known = write_ssh_file(
        &run,
        "known_hosts",
        &format!("@cert-authority [127.0.0.*]:* {ca}\n"),
    );
    write_ssh_file(
        &run,
        "config",
        &format!(
            "Host web1\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}\n",
            sshd.port,
            user.name,
            sshd.user_key.display()
        ),
    );
    let out = run.run();
    out.assert_code(0);
    assert_eq!(out.recap("web1"), recap(2, 2), "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(&known).unwrap().lines().count(),
        1,
        "nothing learnt beside the authority"
    );
}

#[test]
fn a_host_certificate_for_another_name_is_refused() {
    let (sshd, ca) = sshd_with_host_certificate("db9.example.com");
    let user = sshd.add_user();
    let run = TestRun::new().playbook(REACH).inventory("web1\n");
    write_ssh_file(&run, "known_hosts", &format!("@cert-authority * {ca}\n"));
    write_ssh_file(
        &run,
        "config",
        &format!(
            "Host web1\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}\n",
            sshd.port,
            user.name,
            sshd.user_key.display()
        ),
    );
    let out = run.run();
    out.assert_code(4);
    assert_contains(&out, "the host certificate of [127.0.0.1]:");
    assert_contains(&out, "it names db9.example.com but not 127.0.0.1");
}
