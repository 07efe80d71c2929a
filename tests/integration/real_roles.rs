//! Real-world roles (a role of its own, or a collection's role found by its
//! `namespace.collection.role` name), fetched from a package registry by
//! tests/real_roles/fetch.sh, run over
//! the loopback sshd and compared with what ansible-playbook did with the same playbook,
//! inventory and role (recorded by tests/real_roles/record.sh in
//! tests/real_roles/<scenario>/expected/): the same files byte for byte with the same
//! type, mode, owner and group, no failure, the same number of changes, and nothing
//! changed by a second run.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::run::{Outcome, Recap, TestRun};
use crate::support::sshd::Sshd;

fn real_roles_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/real_roles")
}

/// What a scenario needs from target/real-roles (fetched by tests/real_roles/fetch.sh).
enum Fetched {
    /// `<name>/roles/<name>`: a role of its own, found through the roles path.
    Role(&'static str),
    /// `<name>/ansible_collections/<namespace>/<collection>`: found through the
    /// collections path.
    Collection(&'static str, &'static str),
}

/// The roles path and the collections path that hold what a scenario needs; anything
/// missing fails the test (rather than skipping it) with the command that fetches it.
fn fetched_paths(needed: &[Fetched]) -> (String, String) {
    let fetched = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/real-roles");
    let (mut roles, mut collections) = (Vec::new(), Vec::new());
    for need in needed {
        let (name, dir, inside) = match need {
            Fetched::Role(name) => (*name, fetched.join(name).join("roles"), name.to_string()),
            Fetched::Collection(name, collection) => (
                *name,
                fetched.join(name),
                format!("ansible_collections/{}", collection.replace('.', "/")),
            ),
        };
        assert!(
            dir.join(&inside).is_dir(),
            "the real-world role '{name}' is not fetched ({} is missing): run \
             `bash tests/real_roles/fetch.sh` once (it downloads pinned, hash-checked \
             wheels into target/real-roles/)",
            dir.join(&inside).display()
        );
        match need {
            Fetched::Role(_) => roles.push(dir.display().to_string()),
            Fetched::Collection(..) => collections.push(dir.display().to_string()),
        }
    }
    (roles.join(":"), collections.join(":"))
}

/// The scenario's own files (site.yml aside), relative to its directory: what sits beside
/// the playbook when record.sh runs it (a local role, for instance).
fn scenario_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(current) = pending.pop() {
        for entry in std::fs::read_dir(&current).expect("scenario dir") {
            let path = entry.expect("dir entry").path();
            let relative = path.strip_prefix(dir).expect("inside").to_path_buf();
            if relative == Path::new("expected") || relative == Path::new("site.yml") {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("scenario file");
                files.push((relative.display().to_string(), bytes));
            }
        }
    }
    files
}

/// Ansible's recap line as record.sh kept it: `loopback : ok=10 changed=1 ...`.
fn recorded_recap(path: &Path) -> Recap {
    let line = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let out = Outcome {
        code: 0,
        stdout: format!("PLAY RECAP ***\n{}", line.trim()),
        stderr: String::new(),
    };
    out.recap("loopback")
}

/// Every path under `dir` as record.sh lists it: `<path> <type> <mode> <owner> <group>`.
fn listing(dir: &Path) -> String {
    let out = Command::new("find")
        .arg(".")
        .args(["-mindepth", "1", "-printf", "%P %y %m %u %g\\n"])
        .current_dir(dir)
        .output()
        .expect("find");
    assert!(out.status.success(), "find in {}", dir.display());
    let mut lines: Vec<&str> = std::str::from_utf8(&out.stdout)
        .expect("utf-8 listing")
        .lines()
        .collect();
    lines.sort_unstable();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

fn assert_same_files(expected: &Path, got: &Path) {
    assert_eq!(
        listing(got),
        std::fs::read_to_string(expected.join("files.txt")).expect("files.txt"),
        "paths, types, modes and owners left by turbo-play (left) and ansible-playbook (right)"
    );
    let files = expected.join("files");
    for line in std::fs::read_to_string(expected.join("files.txt"))
        .expect("files.txt")
        .lines()
    {
        let mut fields = line.split(' ');
        let (Some(path), Some("f")) = (fields.next(), fields.next()) else {
            continue;
        };
        let want = std::fs::read(files.join(path)).expect("expected file");
        let have = std::fs::read(got.join(path)).expect("file left by turbo-play");
        assert!(
            want == have,
            "{path} differs from ansible-playbook's\n--- turbo-play\n{}\n--- ansible-playbook\n{}",
            String::from_utf8_lossy(&have),
            String::from_utf8_lossy(&want)
        );
    }
}

/// Runs tests/real_roles/<scenario>/site.yml twice and compares with Ansible's record.
fn run_scenario(scenario: &str, needed: &[Fetched]) {
    let (roles_path, collections_path) = fetched_paths(needed);
    let dir = real_roles_dir().join(scenario);
    let expected = dir.join("expected");
    let playbook = std::fs::read_to_string(dir.join("site.yml")).expect("site.yml");

    // The roles set owner/group root: log in as root, as record.sh does (the fixture's key
    // is every account's, and its sshd permits root logins by key).
    let sshd = Sshd::start();
    let known_hosts =
        sshd.known_hosts_file("known_hosts", &format!("{}\n", sshd.known_hosts_line()));
    let inventory = std::fs::read_to_string(real_roles_dir().join("inventory.in"))
        .expect("inventory.in")
        .replace("@PORT@", &sshd.port.to_string())
        .replace("@KEY@", &sshd.user_key.display().to_string())
        .replace("@KNOWN_HOSTS@", &known_hosts.display().to_string());
    let out_dir = tempfile::tempdir().expect("out dir");
    let mut run = TestRun::new()
        .playbook(&playbook)
        .inventory(&inventory)
        .args(&["-e", &format!("out_dir={}", out_dir.path().display())])
        .env("ANSIBLE_ROLES_PATH", &roles_path)
        .env("ANSIBLE_COLLECTIONS_PATH", &collections_path);
    for (relative, bytes) in scenario_files(&dir) {
        run = run.file_bytes(&relative, &bytes);
    }

    let first = run.run();
    first.assert_code(0);
    let ansible = recorded_recap(&expected.join("recap.txt"));
    let ours = first.recap("loopback");
    // The whole recap line, ok and skipped included: includes, skipped branches and the
    // handler count as Ansible counts them.
    assert_eq!(
        ours, ansible,
        "recap {ours:?}, ansible-playbook's {ansible:?}\n{}",
        first.stdout
    );
    assert_same_files(&expected, out_dir.path());

    let again = run.run();
    again.assert_code(0);
    let ansible_again = recorded_recap(&expected.join("recap-again.txt"));
    let ours_again = again.recap("loopback");
    assert_eq!(
        ansible_again.changed, 0,
        "Ansible's second run changed something"
    );
    assert_eq!(
        ours_again, ansible_again,
        "second run: {ours_again:?}, ansible-playbook's {ansible_again:?}\n{}",
        again.stdout
    );
    assert_same_files(&expected, out_dir.path());
}

/// ansible-role-chrony 1.3.0 as its own tests run it, managing only the config file.
#[test]
fn chrony_role_writes_the_same_config_as_ansible() {
    run_scenario("chrony", &[Fetched::Role("chrony")]);
}

/// ansible-role-chrony 1.3.0 with every optional branch of its template in use.
#[test]
fn chrony_role_with_every_option_writes_the_same_config_as_ansible() {
    run_scenario("chrony-full", &[Fetched::Role("chrony")]);
}

/// grafana.grafana's opentelemetry_collector role (ansible 14.5.0), found by its
/// collection name: its configure step with validate, a shadowed handler and a
/// configuration written by to_nice_yaml.
#[test]
fn grafana_otel_collector_role_writes_the_same_config_as_ansible() {
    run_scenario(
        "otel-collector",
        &[Fetched::Collection("grafana", "grafana.grafana")],
    );
}

/// The same role included at run time by its collection name, with a minimal
/// configuration (the template's empty sections left out).
#[test]
fn grafana_otel_collector_role_included_at_run_time_writes_the_same_config_as_ansible() {
    run_scenario(
        "otel-collector-include",
        &[Fetched::Collection("grafana", "grafana.grafana")],
    );
}

/// dellemc.openmanage's idrac_os_deployment role rendering RHEL 8/9/10 and ESXi 8
/// kickstart files, once per server through a looped include_role by collection name.
#[test]
fn dell_idrac_os_deployment_role_writes_the_same_kickstart_files_as_ansible() {
    run_scenario(
        "dell-kickstart",
        &[Fetched::Collection("openmanage", "dellemc.openmanage")],
    );
}
