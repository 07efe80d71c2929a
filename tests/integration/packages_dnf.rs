//! dnf, yum and yum_repository on real Debian 12 hosts (Debian's dnf, installing into an
//! installroot from the local rpm repository tests/debian/repos/rpm.sh builds), compared
//! with what ansible-playbook did on the same playbooks (tests/debian/dnf-*/expected/).
//! Skipped, with the reason, where the Debian base cannot be there.

use std::time::Instant;

use crate::support::debian;
use crate::support::debian_scenario::{self, OUT};
use crate::support::run::TestRun;

const DNF_LOG: &str = "/srv/rpmroot/var/log/dnf.log";

#[test]
fn dnf_and_yum_install_and_remove_as_ansible() {
    if !debian::available("dnf_and_yum_install_and_remove_as_ansible") {
        return;
    }
    let (host, first, _) = debian_scenario::check("dnf-install");
    assert_eq!(
        host.read(&format!("{OUT}/installed.txt")),
        b"/srv/rpmroot/usr/share/tp-app/version 1.0\n\
          /srv/rpmroot/usr/share/tp-hello/version 2.0\n\
          /srv/rpmroot/usr/share/tp-lib/version 1.0\n",
        "{}",
        first.stdout
    );

    // A task with nothing to change is decided from rpm's database: dnf never starts (it
    // would log to the installroot's dnf.log).
    let noop = TestRun::new()
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - become: true\n      dnf:\n        name: [tp-app, tp-hello-2.0]\n        installroot: /srv/rpmroot\n        releasever: '12'\n        use_backend: dnf4\n",
        )
        .inventory(&format!("{}\n", host.line()));
    let log_before = host.read(DNF_LOG);
    let started = Instant::now();
    let out = noop.run();
    let took = started.elapsed();
    out.assert_code(0);
    assert_eq!(
        out.recap(debian_scenario::RECORDED_HOST).changed,
        0,
        "{}",
        out.stdout
    );
    assert_eq!(
        host.read(DNF_LOG).len(),
        log_before.len(),
        "a no-op dnf task started dnf"
    );
    eprintln!("a no-op dnf task's whole run (connect, become, one task): {took:?}");
}

#[test]
fn dnf_check_mode_and_a_missing_package_as_ansible() {
    if !debian::available("dnf_check_mode_and_a_missing_package_as_ansible") {
        return;
    }
    let (host, _, again) = debian_scenario::check("dnf-check");
    // Check mode asked dnf and changed nothing; the missing name kept tp-app out too.
    assert_eq!(
        host.read(&format!("{OUT}/installed.txt")),
        b"/srv/rpmroot/usr/share/tp-lib/version 1.0\n"
    );
    assert!(
        again.stdout.contains("No package tp-nosuch available."),
        "{}",
        again.stdout
    );
    // rpm_key asks for rpm's command line, which Debian's dnf does without, as Ansible's.
    let key = String::from_utf8(host.read(&format!("{OUT}/key.txt"))).unwrap();
    assert!(
        key.contains("msg=Failed to find required executable \"rpm\" in paths: "),
        "{key}"
    );
}
