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
