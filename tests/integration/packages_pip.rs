//! `pip` on real Debian hosts (tests/debian/pip-*/, recorded with ansible-playbook by
//! tests/debian/record.sh) from the local wheels of tests/debian/repos/wheels.sh: virtualenvs
//! made with `python3 -m venv`, pins, `version`, `latest`, a dependency, `absent`, check
//! mode, a requirements file, and Debian's externally managed system python (PEP 668).
//! Every scenario's rerun changes nothing; a no-op pip task starts no pip.

use crate::support::debian::{self, DebianHost};
use crate::support::debian_scenario::{self, OUT};
use crate::support::run::assert_contains;

fn freeze(host: &DebianHost, venv: &str) -> String {
    host.check_output(&[
        &format!("/home/deploy/{venv}/bin/pip"),
        "freeze",
        "--all",
        "--exclude",
        "pip",
        "--exclude",
        "setuptools",
    ])
}

#[test]
fn pip_into_virtualenvs_matches_ansible() {
    if !debian::available("pip_into_virtualenvs_matches_ansible") {
        return;
    }
    let (host, _, again) = debian_scenario::check("pip-venv");
    assert_eq!(freeze(&host, "venv-pin"), "tinypkg==1.0\n");
    assert_eq!(freeze(&host, "venv-dep"), "tinypkg==2.0\nwithdep==1.0\n");
    assert!(host.stat("/home/deploy/venv-none").is_none());
    // The rerun's only changes are the two check-mode tasks that would change.
    assert_eq!(again.recap(debian_scenario::RECORDED_HOST).changed, 2);
}

#[test]
fn pip_with_a_requirements_file_matches_ansible() {
    if !debian::available("pip_with_a_requirements_file_matches_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("pip-requirements");
    assert_eq!(freeze(&host, "venv"), "tinypkg==2.0\nwithdep==1.0\n");
}

#[test]
fn pip_into_the_externally_managed_system_python_fails_as_ansible() {
    if !debian::available("pip_into_the_externally_managed_system_python_fails_as_ansible") {
        return;
    }
    let (host, first, _) = debian_scenario::check("pip-system");
    let said = String::from_utf8(host.read(&format!("{OUT}/pep668.txt"))).unwrap();
    assert!(said.contains("externally-managed-environment"), "{said}");
    assert_contains(&first, "...ignoring");
}

/// The local wheels, built (once, cached) by tests/debian/repos/wheels.sh.
fn local_wheels() -> Option<std::path::PathBuf> {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let built = std::process::Command::new("bash")
        .arg(repo.join("tests/debian/repos/wheels.sh"))
        .status()
        .is_ok_and(|s| s.success());
    let venv_works = std::process::Command::new("python3")
        .args(["-c", "import venv, ensurepip"])
        .status()
        .is_ok_and(|s| s.success());
    (built && venv_works).then(|| repo.join("target/debian/wheels"))
}

/// On the local connection: a rerun is decided from the virtualenv's metadata alone, so
/// pip is never started (here it would fail), and a change still goes to pip.
#[test]
fn a_no_op_pip_task_starts_no_pip() {
    let Some(wheels) = local_wheels() else {
        eprintln!("skipped: no python3 with venv and ensurepip to build and use the wheels");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let task = |spec: &str| {
        format!(
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - pip:\n        name: {spec}\n        virtualenv: {}\n        virtualenv_command: python3 -m venv\n        extra_args: --no-index --find-links {}\n      register: r\n    - debug: var=r.cmd\n",
            venv.display(),
            wheels.display()
        )
    };
    let run = |spec: &str| {
        crate::support::run::TestRun::new()
            .playbook(&task(spec))
            .inventory("localhost ansible_connection=local\n")
            .run()
    };
    let first = run("tinypkg==1.0");
    first.assert_code(0);
    assert_eq!(first.recap("localhost").changed, 1, "{}", first.stdout);
    // A pip that fails: any start of it would show.
    let pip3 = venv.join("bin/pip3");
    std::fs::remove_file(&pip3).unwrap();
    std::fs::write(&pip3, "#!/bin/sh\necho pip was started >&2\nexit 3\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&pip3, std::fs::Permissions::from_mode(0o755)).unwrap();
    for satisfied in ["tinypkg==1.0", "tinypkg>=0.5,<2", "TinyPkg"] {
        let again = run(satisfied);
        again.assert_code(0);
        assert_eq!(
            again.recap("localhost").changed,
            0,
            "{satisfied}: {}",
            again.stdout
        );
    }
    let upgrade = run("tinypkg==2.0");
    upgrade.assert_code(2);
    assert_contains(&upgrade, "pip was started");
}
