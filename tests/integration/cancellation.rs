//! Stopping work on the targets for real: `timeout:` (local and over ssh, in loops and
//! chains) stops the task's process group on the target, with Ansible's message and
//! result; SIGINT and SIGTERM on the controller stop every agent and what it runs (over
//! ssh, and under sudo), print the recap of what finished and exit as ansible-playbook
//! does; a second signal exits at once; a controller killed outright leaves nothing
//! running once sshd closes its channels.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use crate::support::hosts::{LocalHosts, SshHosts};
use crate::support::run::{Outcome, PLAY_HEAD, TestRun, assert_contains, assert_not_contains};

/// A number no other process on the machine has in its command line: each test's
/// `sleep` is found (and found gone) by it.
fn marker() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    40_000 + (std::process::id() % 1000) * 20 + NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Live processes (not zombies) whose command line is `words`, or that `uid` owns.
fn processes(words: Option<&str>, uid: Option<u32>) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let dir = entry.path();
        let (Ok(cmdline), Ok(status)) = (
            std::fs::read(dir.join("cmdline")),
            std::fs::read_to_string(dir.join("status")),
        ) else {
            continue;
        };
        if status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'))
        {
            continue;
        }
        let line = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let owner = status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|u| u.parse::<u32>().ok());
        let by_words = words.is_some_and(|w| line.trim_end() == w);
        let by_owner = uid.is_some() && owner == uid;
        if by_words || by_owner {
            found.push(format!("{name}: {line}"));
        }
    }
    found
}

fn uid_of(user: &str) -> u32 {
    let out = Command::new("id").args(["-u", user]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Waits up to `within` for `done`; false when it never held.
fn eventually(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

#[track_caller]
fn assert_gone(words: &str, uid: Option<u32>) {
    let left = || processes(Some(words), uid);
    assert!(
        eventually(Duration::from_secs(5), || left().is_empty()),
        "still running on the target: {:?}",
        left()
    );
}

/// Files left in the user's staging directory or as temp files in its home.
fn leftovers(home: &Path) -> Vec<PathBuf> {
    let mut left = Vec::new();
    let staging = home.join(".cache/turbo-play/staging");
    if let Ok(entries) = std::fs::read_dir(&staging) {
        left.extend(entries.flatten().map(|e| e.path()));
    }
    if let Ok(entries) = std::fs::read_dir(home) {
        left.extend(
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().contains(".turbo-tmp-")),
        );
    }
    left
}

/// turbo-play started in the background on a playbook and inventory, as `TestRun` runs
/// it, so that the test can signal it.
struct Background {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Background {
    fn start(playbook: &str, inventory: &str) -> Background {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("controller-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(dir.path().join("site.yml"), playbook).unwrap();
        std::fs::write(dir.path().join("hosts"), inventory).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_turbo-play"))
            .arg(dir.path().join("site.yml"))
            .arg("-i")
            .arg(dir.path().join("hosts"))
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env("HOME", &home)
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("ANSIBLE_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        Background { child, _dir: dir }
    }

    fn signal(&self, sig: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{sig}");
    }

    /// Waits (bounded) for the exit; the output read to its end.
    fn finish(mut self, within: Duration) -> (Outcome, Duration) {
        let started = Instant::now();
        let exited = eventually(within, || matches!(self.child.try_wait(), Ok(Some(_))));
        if !exited {
            let _ = self.child.kill();
        }
        let took = started.elapsed();
        let out = self.child.wait_with_output().unwrap();
        assert!(exited, "turbo-play did not exit within {within:?}");
        (
            Outcome {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            },
            took,
        )
    }
}

const TIMED_OUT_LINE: &str = r#"{"changed": false, "msg": "Task failed: Timed out after 1 second(s).", "timedout": {"frame": "Configure `DISPLAY_TRACEBACK` to see a traceback on timeout errors.", "period": 1}}"#;

#[test]
fn a_command_past_its_timeout_fails_as_in_ansible_and_its_process_is_stopped() {
    let hosts = LocalHosts::new(&["h1"]);
    let sleep = marker();
    let playbook = format!(
        "{PLAY_HEAD}  tasks:\n    - command: sleep {sleep}
      timeout: 1
      register: r
      ignore_errors: true
    - assert:
        that:
          - r is failed
          - r.msg == 'Task failed: Timed out after 1 second(s).'
          - r.timedout.period == 1
          - r.rc is not defined
    - shell: echo after
      register: after
      timeout: \"{{{{ 5 }}}}\"
    - assert:
        that: after.stdout == 'after'
"
    );
    let started = Instant::now();
    let out = TestRun::new().local_hosts(&hosts).playbook(&playbook).run();
    out.assert_code(0);
    assert!(started.elapsed() < Duration::from_secs(8), "{out:?}");
    assert_contains(&out, &format!("fatal: [h1]: FAILED! => {TIMED_OUT_LINE}"));
    assert_contains(&out, "...ignoring");
    assert_eq!(out.recap("h1").ignored, 1);
    assert_eq!(out.recap("h1").ok, 4);
    assert_gone(&format!("sleep {sleep}"), None);
}

#[test]
fn the_timeout_is_ansibles_next_to_ansible_playbook() {
    let ansible = Path::new("/work/ansible-venv/bin/ansible-playbook");
    if !ansible.exists() {
        eprintln!("skipped: no {}", ansible.display());
        return;
    }
    let sleep = marker();
    let playbook = format!(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - command: sleep {sleep}\n      timeout: 1\n    - debug: msg=never\n"
    );
    let run = TestRun::new()
        .playbook(&playbook)
        .args(&["-i", "localhost,", "-c", "local"]);
    let ours = run.run();
    assert_gone(&format!("sleep {sleep}"), None);
    let theirs = Command::new(ansible)
        .arg(run.dir().join("site.yml"))
        .args(["-i", "localhost,", "-c", "local"])
        .args([
            "-e",
            "ansible_python_interpreter=/work/ansible-venv/bin/python",
        ])
        .env("ANSIBLE_NOCOLOR", "1")
        .output()
        .unwrap();
    let theirs_out = String::from_utf8_lossy(&theirs.stdout);
    let fatal = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("fatal: "))
            .map(str::to_string)
    };
    let recap = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("localhost "))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    assert_eq!(
        fatal(&ours.stdout),
        fatal(&theirs_out),
        "{ours:?}\n{theirs_out}"
    );
    assert_eq!(recap(&ours.stdout), recap(&theirs_out));
    assert_eq!(Some(ours.code), theirs.status.code());
    assert_not_contains(&ours, "never");
    // Ansible leaves its command running past the timeout: stopped here, by its pid.
    for found in processes(Some(&format!("sleep {sleep}")), None) {
        let pid = found.split(':').next().unwrap_or_default();
        let _ = Command::new("kill").arg(pid).status();
    }
}

#[test]
fn over_ssh_a_timed_out_host_fails_while_the_other_goes_on() {
    let hosts = SshHosts::start(&["slow", "fast"]);
    let sleep = marker();
    let inventory = format!(
        "{} pause={sleep}\n{} pause=0.1\n",
        hosts.line("slow"),
        hosts.line("fast")
    );
    let playbook = "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: sleep {{ pause }}\n      timeout: 2\n    - copy: content=done dest=~/done\n";
    let started = Instant::now();
    let out = TestRun::new()
        .inventory(&inventory)
        .playbook(playbook)
        .run();
    out.assert_code(2);
    assert!(started.elapsed() < Duration::from_secs(15), "{out:?}");
    assert_contains(&out, "fatal: [slow]: FAILED! =>");
    assert_contains(
        &out,
        "\"msg\": \"Task failed: Timed out after 2 second(s).\"",
    );
    assert_eq!(out.recap("slow").failed, 1);
    assert_eq!(out.recap("fast").ok, 2);
    assert!(hosts.user("fast").home.join("done").exists());
    assert!(!hosts.user("slow").home.join("done").exists());
    assert_gone(&format!("sleep {sleep}"), None);
}

#[test]
fn in_a_loop_each_item_has_its_own_timeout() {
    let hosts = SshHosts::start(&["h1"]);
    let sleep = marker();
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  tasks:
    - shell: sleep {{{{ item }}}}
      loop: ['0.1', '{sleep}', '0.2']
      timeout: 1
      register: r
      ignore_errors: true
    - assert:
        that:
          - r.results[0] is succeeded
          - r.results[1].msg == 'Task failed: Timed out after 1 second(s).'
          - r.results[2] is succeeded
"
    );
    let out = TestRun::new()
        .inventory(&hosts.inventory())
        .playbook(&playbook)
        .run();
    out.assert_code(0);
    assert_contains(&out, "changed: [h1] => (item=0.1)");
    assert_contains(&out, &format!("failed: [h1] (item={sleep}) =>"));
    assert_contains(&out, "changed: [h1] => (item=0.2)");
    assert_gone(&format!("sleep {sleep}"), None);
}

#[test]
fn in_a_chain_a_timed_out_task_stops_the_host_like_a_failure() {
    let hosts = SshHosts::start(&["h1"]);
    let sleep = marker();
    // Independent tasks: sent ahead as one chain.
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  tasks:
    - command: \"true\"
    - command: sleep {sleep}
      timeout: 1
    - copy: content=x dest=~/after
    - command: touch ~/after2
"
    );
    let home = &hosts.user("h1").home;
    // And the same without chains.
    for chains in ["1", "0"] {
        let started = Instant::now();
        let out = TestRun::new()
            .inventory(&hosts.inventory())
            .playbook(&playbook)
            .env("TURBO_PLAY_CHAINS", chains)
            .run();
        out.assert_code(2);
        assert!(started.elapsed() < Duration::from_secs(10), "{out:?}");
        assert_contains(
            &out,
            "\"msg\": \"Task failed: Timed out after 1 second(s).\"",
        );
        assert!(!home.join("after").exists() && !home.join("after2").exists());
        let recap = out.recap("h1");
        assert_eq!((recap.ok, recap.changed, recap.failed), (1, 1, 1));
        assert_gone(&format!("sleep {sleep}"), None);
    }

    // With ignore_errors the chain's later tasks run in their turn.
    let playbook = playbook.replace("timeout: 1\n", "timeout: 1\n      ignore_errors: true\n");
    let out = TestRun::new()
        .inventory(&hosts.inventory())
        .playbook(&playbook)
        .run();
    out.assert_code(0);
    assert!(home.join("after").exists() && home.join("after2").exists());
    assert_eq!(out.recap("h1").ignored, 1);
}

/// Starts a run over ssh whose second task sleeps; returns once the sleep runs on the
/// target.
fn running_sleep(hosts: &SshHosts, sleep: u32, extra: &str) -> Background {
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - command: \"true\"\n    - shell: {extra}sleep {sleep}\n    - debug: msg=never\n"
    );
    let run = Background::start(&playbook, &hosts.inventory());
    let words = format!("sleep {sleep}");
    assert!(
        eventually(Duration::from_secs(20), || !processes(Some(&words), None)
            .is_empty()),
        "the sleep never started"
    );
    run
}

#[test]
fn ctrl_c_stops_the_targets_prints_the_recap_and_exits_99() {
    let hosts = SshHosts::start(&["h1"]);
    let user = hosts.user("h1");
    let uid = uid_of(&user.name);
    let sleep = marker();
    let run = running_sleep(&hosts, sleep, "");
    run.signal("INT");
    let (out, took) = run.finish(Duration::from_secs(10));
    out.assert_code(99);
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_contains(&out, "[ERROR]: User interrupted execution");
    assert_contains(&out, "PLAY RECAP");
    let recap = out.recap("h1");
    assert_eq!((recap.ok, recap.changed, recap.failed), (1, 1, 0));
    assert_not_contains(&out, "never");
    assert_not_contains(&out, "UNREACHABLE");
    assert_gone(&format!("sleep {sleep}"), None);
    // Neither the agent nor anything else of the user's is left.
    let left = || processes(None, Some(uid));
    assert!(
        eventually(Duration::from_secs(5), || left().is_empty()),
        "{:?}",
        left()
    );
    assert_eq!(leftovers(&user.home), Vec::<PathBuf>::new());
}

#[test]
fn sigterm_stops_the_targets_too_and_exits_as_ansible_playbook_does() {
    let hosts = SshHosts::start(&["h1"]);
    let uid = uid_of(&hosts.user("h1").name);
    let sleep = marker();
    let run = running_sleep(&hosts, sleep, "");
    run.signal("TERM");
    let (out, _) = run.finish(Duration::from_secs(10));
    // ansible-playbook dies of the signal: its parent sees 128 + 15.
    out.assert_code(143);
    assert_contains(&out, "PLAY RECAP");
    assert_eq!(out.recap("h1").ok, 1);
    assert_gone(&format!("sleep {sleep}"), None);
    let left = || processes(None, Some(uid));
    assert!(
        eventually(Duration::from_secs(5), || left().is_empty()),
        "{:?}",
        left()
    );
}

#[test]
fn a_second_ctrl_c_exits_at_once() {
    let hosts = SshHosts::start(&["h1"]);
    let uid = uid_of(&hosts.user("h1").name);
    let sleep = marker();
    // A command that ignores TERM holds the graceful stop for the agent's grace.
    let run = running_sleep(&hosts, sleep, "trap '' TERM; ");
    let started = Instant::now();
    run.signal("INT");
    std::thread::sleep(Duration::from_millis(100));
    run.signal("INT");
    let (out, _) = run.finish(Duration::from_secs(10));
    out.assert_code(99);
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    // The agent got the cancel before the controller left: it still stops everything.
    assert_gone(&format!("sleep {sleep}"), None);
    let left = || processes(None, Some(uid));
    assert!(
        eventually(Duration::from_secs(5), || left().is_empty()),
        "{:?}",
        left()
    );
}

#[test]
fn a_controller_killed_outright_leaves_nothing_running_on_the_target() {
    let hosts = SshHosts::start(&["h1"]);
    let uid = uid_of(&hosts.user("h1").name);
    let sleep = marker();
    let run = running_sleep(&hosts, sleep, "");
    run.signal("KILL");
    let (out, _) = run.finish(Duration::from_secs(5));
    assert_eq!(out.code, -1, "killed by the signal");
    // sshd closes the channels with the connection; the agent reads the end of its
    // input while the command runs and stops the command's group.
    assert_gone(&format!("sleep {sleep}"), None);
    let left = || processes(None, Some(uid));
    assert!(
        eventually(Duration::from_secs(5), || left().is_empty()),
        "{:?}",
        left()
    );
}

#[test]
fn ctrl_c_stops_a_command_run_through_sudo() {
    if !Path::new("/usr/bin/sudo").exists() {
        eprintln!("skipped: no sudo");
        return;
    }
    let hosts = SshHosts::start(&["h1"]);
    let user = hosts.user("h1");
    let rule = PathBuf::from(format!("/etc/sudoers.d/turbo-play-test-{}", user.name));
    std::fs::write(&rule, format!("{} ALL=(ALL) NOPASSWD: ALL\n", user.name)).unwrap();
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _rule = Remove(rule);
    let sleep = marker();
    let playbook = format!(
        "- hosts: all\n  gather_facts: false\n  become: true\n  tasks:\n    - command: \"true\"\n    - shell: sleep {sleep}\n"
    );
    let run = Background::start(&playbook, &hosts.inventory());
    let words = format!("sleep {sleep}");
    assert!(
        eventually(Duration::from_secs(20), || !processes(Some(&words), None)
            .is_empty()),
        "the sleep never started"
    );
    run.signal("INT");
    let (out, _) = run.finish(Duration::from_secs(10));
    out.assert_code(99);
    assert_contains(&out, "PLAY RECAP");
    // The sleep ran as root: found by its command line.
    assert_gone(&words, None);
}

#[test]
fn a_timeout_on_the_play_or_a_block_is_each_tasks_and_zero_is_none() {
    let hosts = LocalHosts::new(&["h1"]);
    let (first, second) = (marker(), marker());
    let playbook = format!(
        "- hosts: all
  gather_facts: false
  timeout: \"{{{{ limit }}}}\"
  vars:
    limit: 1
  tasks:
    - command: sleep {first}
      ignore_errors: true
      register: from_play
    - block:
        - command: sleep 1.5
          register: unlimited
      timeout: 0
    - block:
        - command: sleep {second}
          register: from_block
          ignore_errors: true
      timeout: 2
    - assert:
        that:
          - from_play.timedout.period == 1
          - unlimited is succeeded
          - from_block.timedout.period == 2
"
    );
    let out = TestRun::new().local_hosts(&hosts).playbook(&playbook).run();
    out.assert_code(0);
    assert_eq!(out.recap("h1").ignored, 2);
    assert_gone(&format!("sleep {first}"), None);
    assert_gone(&format!("sleep {second}"), None);
}
