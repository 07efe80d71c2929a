//! Scenarios under tests/debian/<name>/: a playbook (site.yml, files/) that
//! tests/debian/record.sh ran with ansible-playbook on a fresh Debian host, keeping what it
//! left in expected/. [`check`] runs turbo-play on a fresh copy of the same host, twice,
//! and compares everything Ansible left: the recaps (first run and rerun), the files under
//! the scenario's output directory, and, when recorded, the packages installed
//! and removed (packages.txt) and what changed under /etc (etc.txt).
//!
//! A scenario may have `prepare.sh`: run on the controller as root before the first
//! playbook run, by record.sh and here alike, with `HOST_ROOT` (the host's / from outside,
//! writable), `HOST_NAME` and `REPO` (the repository's root) in its environment. It builds
//! what the host needs from outside (a local package repository, cached under
//! target/debian/) and puts it inside.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::debian::DebianHost;
use super::run::{Outcome, Recap, TestRun};

/// The inventory name record.sh gives its host.
pub const RECORDED_HOST: &str = "debian-target";
/// Where the scenarios write on the host (record.sh's OUT).
pub const OUT: &str = "/home/deploy/out";

pub fn scenario_dir(scenario: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/debian")
        .join(scenario)
}

/// Ansible's recap line as record.sh kept it: `debian-target : ok=4 changed=3 ...`.
pub fn recorded_recap(path: &Path) -> Recap {
    let line = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let out = Outcome {
        code: 0,
        stdout: format!("PLAY RECAP ***\n{}", line.trim()),
        stderr: String::new(),
    };
    out.recap(RECORDED_HOST)
}

/// Every path under `dir` inside the host as record.sh lists it:
/// `<path> <type> <mode> <owner> <group>`, sorted.
pub fn listing(host: &DebianHost, dir: &str) -> String {
    let text = host.check_output(&[
        "find",
        dir,
        "-mindepth",
        "1",
        "-printf",
        "%P %y %m %u %g\\n",
    ]);
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The output directory as Ansible left it: paths, modes, owners and file bytes.
pub fn assert_same_files(expected: &Path, host: &DebianHost) {
    let files_txt = std::fs::read_to_string(expected.join("files.txt")).expect("files.txt");
    assert_eq!(
        listing(host, OUT),
        files_txt,
        "paths, types, modes and owners left by turbo-play (left) and ansible-playbook (right)"
    );
    for line in files_txt.lines() {
        let mut fields = line.split(' ');
        let (Some(path), Some("f")) = (fields.next(), fields.next()) else {
            continue;
        };
        let want = std::fs::read(expected.join("files").join(path)).expect("expected file");
        let have = host.read(&format!("{OUT}/{path}"));
        assert!(
            want == have,
            "{path} differs from ansible-playbook's\n--- turbo-play\n{}\n--- ansible-playbook\n{}",
            String::from_utf8_lossy(&have),
            String::from_utf8_lossy(&want)
        );
    }
}

/// A fresh host's packages and /etc, before the scenario's first step.
pub struct SystemBefore {
    pub packages: String,
    pub etc: String,
}

impl SystemBefore {
    pub fn of(host: &DebianHost) -> SystemBefore {
        SystemBefore {
            packages: host.packages(),
            etc: host.snapshot("/etc"),
        }
    }
}

/// The packages and /etc changed as Ansible changed them, where record.sh recorded them.
pub fn assert_same_system(expected: &Path, host: &DebianHost, before: &SystemBefore) {
    let packages = expected.join("packages.txt");
    if packages.exists() {
        let want = std::fs::read_to_string(&packages).expect("packages.txt");
        assert_eq!(
            changes(&before.packages, &host.packages()),
            want,
            "packages installed and removed by turbo-play (left) and ansible-playbook (right)"
        );
    }
    let etc = expected.join("etc.txt");
    if etc.exists() {
        let want = std::fs::read_to_string(&etc).expect("etc.txt");
        assert_eq!(
            changes(&before.etc, &host.snapshot("/etc")),
            want,
            "/etc's changes after turbo-play (left) and ansible-playbook (right)"
        );
    }
}

/// What changed between two listings (of packages, or [`DebianHost::snapshot`]s), as
/// record.sh writes packages.txt and etc.txt: `- <line>` for a line only before, `+ <line>` for one only after, sorted by
/// the line. Only changes: the base's own /etc (its host keys, its archive's address) is
/// made anew by every build of the base, and its packages are the archive's of that day.
pub fn changes(before: &str, after: &str) -> String {
    let old: std::collections::BTreeSet<&str> = before.lines().collect();
    let new: std::collections::BTreeSet<&str> = after.lines().collect();
    let mut lines: Vec<(&str, char)> = old
        .difference(&new)
        .map(|l| (*l, '-'))
        .chain(new.difference(&old).map(|l| (*l, '+')))
        .collect();
    lines.sort_unstable();
    lines
        .iter()
        .map(|(line, sign)| format!("{sign} {line}\n"))
        .collect()
}

/// Runs the scenario's prepare.sh, if it has one, against `host`.
#[track_caller]
pub fn prepare(scenario: &str, host: &DebianHost) {
    let script = scenario_dir(scenario).join("prepare.sh");
    if !script.exists() {
        return;
    }
    let out = Command::new("bash")
        .arg(&script)
        .env("HOST_ROOT", host.rootfs())
        .env("HOST_NAME", &host.name)
        .env("REPO", env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run prepare.sh");
    assert!(
        out.status.success(),
        "{}: {}{}",
        script.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The scenario's site.yml and files/ as a run beside which turbo-play finds them.
pub fn scenario_run(scenario: &str, inventory: &str) -> TestRun {
    let dir = scenario_dir(scenario);
    let mut run = TestRun::new()
        .playbook(&std::fs::read_to_string(dir.join("site.yml")).expect("site.yml"))
        .inventory(inventory);
    for sub in ["files", "templates"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("dir entry").path();
            let name = path.file_name().expect("name").to_str().expect("utf-8");
            run = run.file_bytes(
                &format!("{sub}/{name}"),
                &std::fs::read(&path).expect("file"),
            );
        }
    }
    run
}

/// Runs `scenario` with turbo-play on a fresh host, twice, and checks that every run left
/// what ansible-playbook's left (see the module's comment). Returns the host and the two
/// runs, for the scenario's own further checks.
#[track_caller]
pub fn check(scenario: &str) -> (DebianHost, Outcome, Outcome) {
    let expected = scenario_dir(scenario).join("expected");
    let host = DebianHost::start(RECORDED_HOST);
    let before = SystemBefore::of(&host);
    prepare(scenario, &host);
    let run = scenario_run(scenario, &format!("{}\n", host.line()));

    // record.sh keeps only runs that succeeded.
    let first = run.run();
    first.assert_code(0);
    let ansible = recorded_recap(&expected.join("recap.txt"));
    assert_eq!(
        first.recap(RECORDED_HOST),
        ansible,
        "{scenario}: recap, ansible-playbook's is {ansible:?}\n{}\n{}",
        first.stdout,
        first.stderr
    );
    assert_same_files(&expected, &host);
    assert_same_system(&expected, &host, &before);

    let again = run.run();
    again.assert_code(0);
    let ansible_again = recorded_recap(&expected.join("recap-again.txt"));
    assert_eq!(
        again.recap(RECORDED_HOST),
        ansible_again,
        "{scenario}: second run, ansible-playbook's is {ansible_again:?}\n{}\n{}",
        again.stdout,
        again.stderr
    );
    assert_same_files(&expected, &host);
    assert_same_system(&expected, &host, &before);
    (host, first, again)
}
