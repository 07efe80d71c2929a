//! `service` and `sysvinit` on real Debian hosts (support/debian.rs) whose PID 1 is sshd,
//! where Ansible drives init scripts through `service` and update-rc.d: the same recaps,
//! rc links and files as ansible-playbook left (tests/debian/service-*/expected/).

use crate::support::debian;
use crate::support::debian_scenario::{self, OUT};

#[test]
fn service_and_sysvinit_drive_init_scripts_as_ansible() {
    if !debian::available("service_and_sysvinit_drive_init_scripts_as_ansible") {
        return;
    }
    let (host, first, again) = debian_scenario::check("service-sysv");
    // Started once, then restarted once by the handler that three tasks notified: a
    // handler runs once per host, and the rerun starts nothing.
    assert_eq!(
        String::from_utf8_lossy(&host.read(&format!("{OUT}/tpdemo-starts.log"))),
        "started\nstarted\n"
    );
    assert_eq!(
        first
            .stdout
            .matches("RUNNING HANDLER [restart tpdemo]")
            .count(),
        1
    );
    assert!(
        !again.stdout.contains("RUNNING HANDLER"),
        "{}",
        again.stdout
    );
    // The daemon runs, cron does not.
    let running = |pidfile: &str| {
        host.command(&["sh", "-c", &format!("kill -0 $(cat {pidfile})")])
            .status
            .success()
    };
    assert!(running("/run/tpdemo.pid"));
    assert!(!running("/run/crond.pid"));
}

#[test]
fn systemd_links_and_offline_failures_match_ansible() {
    if !debian::available("systemd_links_and_offline_failures_match_ansible") {
        return;
    }
    // etc.txt holds the multi-user.target.wants and /dev/null mask links Ansible left.
    let (host, _, _) = debian_scenario::check("service-systemd");
    let link = |path: &str| host.check_output(&["readlink", path]).trim().to_string();
    assert_eq!(link("/etc/systemd/system/cron.service"), "/dev/null");
    assert_eq!(
        link("/etc/systemd/system/multi-user.target.wants/tpdemo.service"),
        "/etc/systemd/system/tpdemo.service"
    );
}

#[test]
fn check_mode_looks_at_services_and_changes_nothing_as_ansible() {
    if !debian::available("check_mode_looks_at_services_and_changes_nothing_as_ansible") {
        return;
    }
    // etc.txt holds only the files the setup tasks copied: no rc links, no unit links.
    let (host, first, _) = debian_scenario::check("service-check");
    // Started once for real; no check-mode stop or restart reached the init script.
    assert_eq!(
        String::from_utf8_lossy(&host.read(&format!("{OUT}/tpdemo-starts.log"))),
        "started\n"
    );
    let running = host
        .command(&["sh", "-c", "kill -0 $(cat /run/tpdemo.pid)"])
        .status
        .success();
    assert!(running, "{}", first.stdout);
    assert!(
        !first.stdout.contains("skipped in check mode"),
        "{}",
        first.stdout
    );
}
