//! Secrets: `no_log` shows what Ansible 2.21 shows (recorded with ansible-playbook on the
//! local connection); login, become and vault passwords are in no process's command line
//! or environment on the machine while a run goes on, nor in its output, its -vvv output,
//! its JSON events, the target's agent cache or /tmp; and a cached agent that could have
//! been written by someone else, or whose bytes changed, is replaced, never run.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use crate::support::hosts::{LocalHosts, SshHosts, refusing_host_line};
use crate::support::run::{Outcome, PLAY_HEAD, TestRun, assert_contains, assert_not_contains};
use crate::support::sshd::{Sshd, SshdOptions, TestUser};

const CENSORED: &str = "\"censored\": \"the output has been hidden due to the fact that 'no_log: true' was specified for this result\"";

/// A secret no other test or process would hold.
fn fresh_secret(what: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{what}Zq{}x{nanos}", std::process::id())
}

#[test]
fn no_log_output_is_what_ansible_shows() {
    let secret = fresh_secret("nolog");
    let hosts = LocalHosts::new(&["h"]);
    let playbook = format!(
        "{PLAY_HEAD}  vars:
    secret: {secret}
  tasks:
    - name: plain
      command: echo {{{{ secret }}}}
      no_log: true
    - name: failing
      command: sh -c \"echo {{{{ secret }}}}; exit 3\"
      no_log: true
      ignore_errors: true
    - name: loop
      command: echo {{{{ item }}}}
      loop: [\"{{{{ secret }}}}\"]
      loop_control:
        label: \"label-{{{{ item }}}}\"
      no_log: true
    - name: debug msg
      debug:
        msg: \"{{{{ secret }}}}\"
      no_log: true
    - name: until
      command: echo {{{{ item }}}}
      loop: [\"{{{{ secret }}}}\"]
      register: u
      until: u.rc == 5
      retries: 1
      delay: 0
      no_log: true
      ignore_errors: true
    - name: fail
      fail:
        msg: \"bad {{{{ secret }}}}\"
      no_log: \"{{{{ 1 == 1 }}}}\"
      ignore_errors: true
    - name: skipped loop
      command: echo {{{{ item }}}}
      loop: [\"{{{{ secret }}}}\"]
      when: false
      no_log: true
    - block:
        - name: in a no_log block
          command: echo {{{{ secret }}}}
          failed_when: true
          ignore_errors: true
      no_log: true
    - include_tasks: inc.yml
      loop: [\"{{{{ secret }}}}\"]
      no_log: true
"
    );
    let run = |args: &[&str]| {
        TestRun::new()
            .playbook(&playbook)
            .file("inc.yml", "- debug: msg=included\n")
            .local_hosts(&hosts)
            .args(args)
            .run()
    };
    let verbose = run(&["-v"]);
    verbose.assert_code(0);
    // ansible-playbook 2.21.5 -v, line for line (its [ERROR] blocks aside).
    for line in [
        format!("changed: [h] => {{{CENSORED}, \"changed\": true}}"),
        format!("fatal: [h]: FAILED! => {{{CENSORED}, \"changed\": true}}\n...ignoring"),
        format!(
            "changed: [h] => (item=(censored due to no_log)) => {{{CENSORED}, \"changed\": true}}"
        ),
        format!("ok: [h] => {{{CENSORED}}}"),
        "FAILED - RETRYING: [h]: until (0 retries left).".to_string(),
        format!(
            "failed: [h] (item=(censored due to no_log)) => {{\"attempts\": 1, {CENSORED}, \"changed\": true}}"
        ),
        format!("fatal: [h]: FAILED! => {{{CENSORED}, \"changed\": false}}\n...ignoring"),
        format!(
            "skipping: [h] => (item=(censored due to no_log))  => {{{CENSORED}, \"changed\": false}}\nskipping: [h] => {{{CENSORED}, \"changed\": false}}"
        ),
        "included: ".to_string(),
    ] {
        assert_contains(&verbose, &line);
    }
    assert_contains(&verbose, "inc.yml for h => (item=(censored due to no_log))");
    assert_not_contains(&verbose, &secret);
    // Without -v a censored ok result is one word, as Ansible's.
    let quiet = run(&[]);
    assert_contains(&quiet, "TASK [debug msg] ");
    assert!(quiet.stdout.contains("ok: [h]\n"), "{}", quiet.stdout);
    assert_not_contains(&quiet, &secret);
    assert_not_contains(&run(&["-vvv"]), &secret);
    let json = run(&["--json"]);
    assert_not_contains(&json, &secret);
    assert!(
        json.stdout
            .contains("\"item\":\"(censored due to no_log)\"")
    );
}

/// An unreachable host's result is censored too, as Ansible's.
#[test]
fn no_log_censors_an_unreachable_result() {
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:\n    - command: echo hi\n      no_log: true\n"
        ))
        .inventory(&format!("{}\n", refusing_host_line("gone")))
        .run();
    out.assert_code(4);
    assert_contains(
        &out,
        &format!("fatal: [gone]: UNREACHABLE! => {{{CENSORED}, \"changed\": false}}"),
    );
    assert_not_contains(&out, "Failed to connect");
}

/// AnsibleModule masks the values of arguments its spec marks `no_log` wherever they show
/// in the result (yum_repository's password in the repo file's diff), no_log or not.
#[test]
fn no_log_arguments_of_a_module_are_masked_in_its_result() {
    let hosts = LocalHosts::new(&["h"]);
    let secret = fresh_secret("repo");
    let repos = hosts.home().join("repos");
    std::fs::create_dir(&repos).unwrap();
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:
    - yum_repository:
        name: r1
        description: \"desc {secret} here\"
        baseurl: http://example.invalid/{secret}/
        password: {secret}
        reposdir: {}
      register: out
    - debug: var=out
",
            repos.display()
        ))
        .local_hosts(&hosts)
        .arg("--diff")
        .run();
    out.assert_code(0);
    // As ansible-playbook 2.21.5 shows it.
    assert_contains(
        &out,
        "\"after\": \"[r1]\\nbaseurl = http://example.invalid/********/\\nname = desc ******** here\\npassword = ********\\n\\n\",",
    );
    assert_not_contains(&out, &secret);
    // The file itself has it, of course.
    let written = std::fs::read_to_string(repos.join("r1.repo")).unwrap();
    assert!(written.contains(&format!("password = {secret}")));
}

/// Reads every process's command line and environment on the machine until `stop`, and
/// names those that hold one of `secrets`; also returns how many scans were made.
fn watch_processes(secrets: Vec<String>, stop: Arc<AtomicBool>) -> (usize, BTreeSet<String>) {
    let mut leaks = BTreeSet::new();
    let mut scans = 0;
    while !stop.load(Ordering::SeqCst) {
        scans += 1;
        let Ok(entries) = std::fs::read_dir("/proc") else {
            break;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            if !entry
                .file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
            {
                continue;
            }
            for file in ["cmdline", "environ"] {
                let Ok(bytes) = std::fs::read(dir.join(file)) else {
                    continue;
                };
                for secret in &secrets {
                    if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
                        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
                        leaks.insert(format!(
                            "{}/{file} ({})",
                            dir.display(),
                            String::from_utf8_lossy(&cmdline).replace('\0', " ")
                        ));
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (scans, leaks)
}

/// Regular files under `root` changed since `since` (not under `skip`) that hold a secret.
fn files_holding(
    root: &Path,
    skip: &[&Path],
    since: SystemTime,
    secrets: &[String],
) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if skip.iter().any(|s| dir.starts_with(s)) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file()
                && meta.len() < 64 << 20
                && meta.modified().is_ok_and(|m| m >= since)
                && let Ok(bytes) = std::fs::read(&path)
            {
                for secret in secrets {
                    if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
                        found.push(format!("{} holds {secret}", path.display()));
                    }
                }
            }
        }
    }
    found
}

/// Lets `user` run anything as root through sudo, with their own password.
struct SudoRule(PathBuf);

impl SudoRule {
    fn grant(user: &TestUser) -> SudoRule {
        let path = PathBuf::from(format!("/etc/sudoers.d/tp-secrets-{}", user.name));
        std::fs::write(&path, format!("{} ALL=(ALL:ALL) ALL\n", user.name)).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o440))
            .unwrap();
        SudoRule(path)
    }
}

impl Drop for SudoRule {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").map(|m| m.uid()).ok() == Some(0)
}

/// Logins with `ansible_password` and `--connection-password-file`, become through sudo
/// and su with passwords, and a vaulted vars file opened with `--vault-password-file`:
/// while each run goes on (a `sleep` on every host), no process on the machine has any
/// of those passwords in its command line or environment; afterwards none is in the
/// output (default, -vvv, JSON), the targets' caches, or /tmp.
#[test]
fn passwords_are_in_no_process_output_cache_or_temp_file_during_real_runs() {
    if !is_root() || !Path::new("/usr/bin/sudo").exists() {
        eprintln!("skipped: needs root (throw-away users, a sudoers rule) and sudo");
        return;
    }
    let started = SystemTime::now() - Duration::from_secs(1);
    let sshd = Sshd::start_with(&SshdOptions {
        head: "PasswordAuthentication yes\n",
        ..Default::default()
    });
    let (alice, bob, carol) = (sshd.add_user(), sshd.add_user(), sshd.add_user());
    let alice_pw = fresh_secret("alice");
    let bob_pw = fresh_secret("bob");
    let carol_pw = fresh_secret("carol");
    let vault_pw = fresh_secret("vault");
    let vaulted_value = fresh_secret("vaulted");
    alice.set_password(&alice_pw);
    bob.set_password(&bob_pw);
    carol.set_password(&carol_pw);
    let _sudo = SudoRule::grant(&alice);
    let secrets = vec![
        alice_pw.clone(),
        bob_pw.clone(),
        carol_pw.clone(),
        vault_pw.clone(),
    ];

    let known_hosts =
        sshd.known_hosts_file("known_hosts", &format!("{}\n", sshd.known_hosts_line()));
    let line = |name: &str, user: &TestUser, extra: &str| {
        format!(
            "{name} ansible_host=127.0.0.1 ansible_port={} ansible_user={} {extra} \
             ansible_ssh_common_args='-o UserKnownHostsFile={}'\n",
            sshd.port,
            user.name,
            known_hosts.display()
        )
    };
    // alice logs in with a password variable and becomes root through sudo with it;
    // bob logs in with the password file and becomes carol through su with carol's.
    let inventory = format!(
        "{}{}",
        line(
            "alice",
            &alice,
            &format!("ansible_password={alice_pw} ansible_become_password={alice_pw}")
        ),
        line(
            "bob",
            &bob,
            &format!(
                "ansible_become_method=su ansible_become_user={} ansible_become_password={carol_pw}",
                carol.name
            )
        ),
    );
    let vaulted = turbo_play::vault::encrypt(
        format!("vaulted: {vaulted_value}\n").as_bytes(),
        vault_pw.as_bytes(),
        "default",
    )
    .unwrap();
    let playbook = format!(
        "{PLAY_HEAD}  vars_files: [vaulted.yml]
  tasks:
    - command: sleep 2
    - command: sleep 2
      become: true
    - copy:
        content: \"{{{{ vaulted }}}}\"
        dest: ~/from-vault
      become: true
      no_log: true
      when: inventory_hostname == 'bob'
    - command: id -un
      become: true
      register: who
    - copy:
        content: \"{{{{ who.stdout }}}}\"
        dest: /tmp/tp-secrets-{}-{{{{ inventory_hostname }}}}
      become: true
",
        std::process::id()
    );
    let mut outputs: Vec<(String, Outcome)> = Vec::new();
    let mut run_dirs = Vec::new();
    for (name, args) in [
        ("default", &[][..]),
        ("-vvv", &["-vvv"][..]),
        ("--json", &["--json"][..]),
    ] {
        let run = TestRun::new()
            .playbook(&playbook)
            .inventory(&inventory)
            .file("vaulted.yml", &vaulted);
        std::fs::write(run.dir().join("conn.pass"), format!("{bob_pw}\n")).unwrap();
        std::fs::write(run.dir().join("vault.pass"), format!("{vault_pw}\n")).unwrap();
        let conn = run.dir().join("conn.pass");
        let vault = run.dir().join("vault.pass");
        let stop = Arc::new(AtomicBool::new(false));
        let watcher = {
            let (stop, secrets) = (stop.clone(), secrets.clone());
            std::thread::spawn(move || watch_processes(secrets, stop))
        };
        let run = run
            .args(&[
                "--connection-password-file",
                conn.to_str().unwrap(),
                "--vault-password-file",
                vault.to_str().unwrap(),
            ])
            .args(args);
        let out = run.run();
        stop.store(true, Ordering::SeqCst);
        let (scans, leaks) = watcher.join().unwrap();
        out.assert_code(0);
        assert!(scans > 50, "{scans} scans of /proc during the run");
        assert!(leaks.is_empty(), "{name}: secrets in {leaks:#?}");
        run_dirs.push(run);
        outputs.push((name.to_string(), out));
    }
    for (name, out) in &outputs {
        for secret in secrets.iter().chain([&vaulted_value]) {
            assert!(
                !out.stdout.contains(secret.as_str()) && !out.stderr.contains(secret.as_str()),
                "{name} output shows {secret}:\n{}\n{}",
                out.stdout,
                out.stderr
            );
        }
    }
    let (_, vvv) = &outputs[1];
    assert_contains(vvv, "<alice> agent");
    let pid = std::process::id();
    assert_eq!(
        std::fs::read_to_string(format!("/tmp/tp-secrets-{pid}-alice")).unwrap(),
        "root"
    );
    assert_eq!(
        std::fs::read_to_string(format!("/tmp/tp-secrets-{pid}-bob")).unwrap(),
        carol.name
    );
    assert_eq!(
        std::fs::read_to_string(carol.home.join("from-vault")).unwrap(),
        vaulted_value
    );
    // The users' caches (agents, module payloads) and every file /tmp got during the
    // runs, the runs' own inputs (inventory, password files) aside.
    let inputs: Vec<&Path> = run_dirs.iter().map(TestRun::dir).collect();
    let mut found = files_holding(Path::new("/tmp"), &inputs, started, &secrets);
    for home in [&alice.home, &bob.home, &carol.home, &PathBuf::from("/root")] {
        found.extend(files_holding(
            &home.join(".cache/turbo-play"),
            &[],
            started,
            &secrets,
        ));
    }
    assert!(found.is_empty(), "{found:#?}");
    for pid_file in ["alice", "bob"] {
        let _ = std::fs::remove_file(format!("/tmp/tp-secrets-{pid}-{pid_file}"));
    }
}

/// The cache on the target after a run: the agent is the embedded one, 0700 and the
/// user's, in a 0700 directory of the user's.
#[track_caller]
fn assert_cache_is_private(user: &TestUser) {
    use std::os::unix::fs::MetadataExt;
    let agent = turbo_play::agent_binary::agent_binary().unwrap();
    let dir = user.home.join(".cache/turbo-play");
    let file = dir.join(agent.remote_name());
    let (dir_meta, file_meta) = (
        std::fs::symlink_metadata(&dir).unwrap(),
        std::fs::symlink_metadata(&file).unwrap(),
    );
    assert!(dir_meta.is_dir() && file_meta.is_file());
    assert_eq!(dir_meta.mode() & 0o777, 0o700, "{}", dir.display());
    assert_eq!(file_meta.mode() & 0o777, 0o700, "{}", file.display());
    assert_eq!(dir_meta.uid(), file_meta.uid());
    assert_ne!(file_meta.uid(), 65534);
    assert!(std::fs::read(&file).unwrap() == agent.bytes.as_ref());
}

/// A cached agent writable by others, owned by another user, with one byte changed (its
/// size the same), or in a directory others may write to, is replaced and the run goes on.
#[test]
fn untrusted_cached_agents_are_replaced_never_run() {
    use std::os::unix::fs::PermissionsExt;
    if !is_root() {
        eprintln!("skipped: throw-away users need root");
        return;
    }
    let hosts = SshHosts::start(&["writable", "foreign", "flipped", "open_dir"]);
    let run = || {
        TestRun::new()
            .playbook(&format!("{PLAY_HEAD}  tasks:\n    - command: id -un\n"))
            .inventory(&hosts.inventory())
            .arg("-vv")
            .run()
    };
    run().assert_code(0);
    let agent = turbo_play::agent_binary::agent_binary().unwrap();
    let cached = |host: &str| {
        hosts
            .user(host)
            .home
            .join(".cache/turbo-play")
            .join(agent.remote_name())
    };
    for (host, _) in &hosts.hosts {
        assert_cache_is_private(hosts.user(host));
    }
    let chmod = |p: &Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    chmod(&cached("writable"), 0o666);
    std::os::unix::fs::chown(cached("foreign"), Some(65534), Some(65534)).unwrap();
    // One byte of the agent's own text: it still runs, and must find itself changed.
    let mut bytes = std::fs::read(cached("flipped")).unwrap();
    let at = bytes
        .windows(15)
        .position(|w| w == b"refusing to run")
        .expect("the agent's message in its bytes");
    bytes[at] ^= 0x20;
    std::fs::write(cached("flipped"), &bytes).unwrap();
    chmod(cached("open_dir").parent().unwrap(), 0o777);

    let out = run();
    out.assert_code(0);
    for (host, _) in &hosts.hosts {
        assert_eq!(out.recap(host).failed + out.recap(host).unreachable, 0);
        assert_cache_is_private(hosts.user(host));
    }
    assert_contains(&out, "<writable> agent uploaded");
    assert_contains(&out, "<foreign> agent uploaded");
    assert_contains(&out, "<open_dir> agent uploaded");
    assert_contains(&out, "<flipped> replaced a stale agent");
    // And the next run trusts what it left.
    let again = run();
    again.assert_code(0);
    assert_eq!(
        again.stdout.matches("agent cached").count(),
        4,
        "{}",
        again.stdout
    );
}

/// The local connection's cache (the controller's own home) is checked the same way.
#[test]
fn the_local_connection_replaces_an_untrusted_cached_agent_too() {
    use std::os::unix::fs::PermissionsExt;
    let hosts = LocalHosts::new(&["h"]);
    let run = || {
        TestRun::new()
            .playbook(&format!("{PLAY_HEAD}  tasks:\n    - command: id -un\n"))
            .local_hosts(&hosts)
            .arg("-vv")
            .run()
    };
    run().assert_code(0);
    let agent = turbo_play::agent_binary::agent_binary().unwrap();
    let dir = hosts.home().join(".cache/turbo-play");
    let cached = dir.join(agent.remote_name());
    let mut bytes = std::fs::read(&cached).unwrap();
    let at = bytes
        .windows(15)
        .position(|w| w == b"refusing to run")
        .expect("the agent's message in its bytes");
    bytes[at] ^= 0x20;
    std::fs::write(&cached, &bytes).unwrap();
    let out = run();
    out.assert_code(0);
    assert_contains(&out, "<h> replaced a stale agent");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = run();
    out.assert_code(0);
    assert_contains(&out, "<h> agent uploaded");
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    assert!(std::fs::read(&cached).unwrap() == agent.bytes.as_ref());
}
