//! The apt module on real Debian hosts, each scenario under tests/debian/apt-*/ compared
//! with what ansible-playbook did on a fresh copy of the same host (recorded by
//! tests/debian/record.sh): the recaps of a first run and a rerun (changed=0), the packages
//! and /etc they left, and the results the playbook wrote down. The local repository is
//! tests/debian/repos/deb.sh's; apt-archive installs from the Debian archive itself.

use std::time::Instant;

use crate::support::debian::{self, DebianHost};
use crate::support::debian_scenario::{self, RECORDED_HOST, prepare};
use crate::support::run::TestRun;

fn installed(host: &DebianHost, name: &str) -> Option<String> {
    host.packages().lines().find_map(|l| {
        let (n, v) = l.split_once('\t')?;
        (n == name).then(|| v.to_string())
    })
}

#[test]
fn apt_installs_from_a_local_repository_as_ansible() {
    if !debian::available("apt_installs_from_a_local_repository_as_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("apt-local");
    assert_eq!(installed(&host, "turbo-multi").as_deref(), Some("2.0"));
    assert_eq!(
        host.read("/etc/turbo-conf/turbo.conf"),
        b"setting = packaged\n"
    );
    // Asked for by name, the dependency is no longer automatic (as Ansible's apt-mark).
    let auto = host.check_output(&["apt-mark", "showauto"]);
    assert!(!auto.lines().any(|l| l == "turbo-lib"), "{auto}");
}

#[test]
fn apt_version_pins_as_ansible() {
    if !debian::available("apt_version_pins_as_ansible") {
        return;
    }
    let (host, first, _) = debian_scenario::check("apt-pin");
    assert_eq!(installed(&host, "turbo-multi").as_deref(), Some("1.0"));
    assert!(
        first
            .stdout
            .contains("no available installation candidate for turbo-multi=3.0"),
        "{}",
        first.stdout
    );
}

#[test]
fn apt_check_mode_simulates_as_ansible() {
    if !debian::available("apt_check_mode_simulates_as_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("apt-check");
    assert_eq!(installed(&host, "turbo-conf"), None);
}

#[test]
fn apt_installs_from_the_debian_archive_as_ansible() {
    if !debian::available("apt_installs_from_the_debian_archive_as_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("apt-archive");
    assert!(installed(&host, "tree").is_some());
    assert!(installed(&host, "jq").is_some());
}

#[test]
fn apt_removes_purges_and_autoremoves_as_ansible() {
    if !debian::available("apt_removes_purges_and_autoremoves_as_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("apt-remove");
    // Removed without purge: only its conffile is left.
    assert_eq!(
        host.read("/etc/turbo-conf/turbo.conf"),
        b"setting = packaged\n"
    );
    assert_eq!(installed(&host, "turbo-lib"), None);
}

/// An apt task with nothing to do changes nothing; its cost (the time of a play of 21
/// such tasks less that of a play of one, per task) is printed, not asserted.
#[test]
fn a_noop_apt_task_costs_milliseconds() {
    if !debian::available("a_noop_apt_task_costs_milliseconds") {
        return;
    }
    let host = DebianHost::start(RECORDED_HOST);
    prepare("apt-local", &host);
    let play = |tasks: usize| {
        let mut yaml =
            String::from("- hosts: all\n  become: true\n  gather_facts: false\n  tasks:\n");
        for i in 0..tasks {
            yaml.push_str(&format!(
                "    - name: no-op {i}\n      apt:\n        name: [tree, apt, openssh-server]\n"
            ));
        }
        TestRun::new()
            .playbook(&yaml)
            .inventory(&format!("{}\n", host.line()))
    };
    let (one, many) = (play(1), play(21));
    one.run().assert_code(0);
    let timed = |run: &TestRun| {
        let start = Instant::now();
        run.run().assert_code(0);
        start.elapsed()
    };
    // tree is not in the base: install it once, then every task has nothing to do.
    let setup = TestRun::new()
        .playbook(
            "- hosts: all\n  become: true\n  gather_facts: false\n  tasks:\n    - apt: name=tree\n",
        )
        .inventory(&format!("{}\n", host.line()));
    setup.run().assert_code(0);
    let best = |run: &TestRun| (0..3).map(|_| timed(run)).min().expect("runs");
    let (t1, t21) = (best(&one), best(&many));
    let per_task = t21.saturating_sub(t1) / 20;
    // Printed for the reader; the figure itself is tests/bench/packages.sh's to measure.
    eprintln!("no-op apt task: {per_task:?} per task (1 task: {t1:?}, 21 tasks: {t21:?})");
    let out = many.run();
    out.assert_code(0);
    assert_eq!(out.recap(RECORDED_HOST).changed, 0, "{}", out.stdout);
}

#[test]
fn package_dpkg_selections_debconf_and_package_facts_as_ansible() {
    if !debian::available("package_dpkg_selections_debconf_and_package_facts_as_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("apt-modules");
    let held = host.check_output(&["dpkg", "--get-selections", "turbo-multi"]);
    assert!(held.ends_with("hold\n"), "{held}");
}

/// A squashed call that fails runs again item by item: only the item apt does not know
/// fails, with Ansible's message, and the others install.
#[test]
fn apt_loop_with_an_unknown_name_fails_only_that_item_as_ansible() {
    if !debian::available("apt_loop_with_an_unknown_name_fails_only_that_item_as_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("apt-loop-failure");
    assert_eq!(installed(&host, "turbo-multi").as_deref(), Some("1.0"));
}

/// A loop's package names go to apt-get in one call, yet each item reports what it
/// reports in Ansible, where it runs after the ones before it: the second item, which the
/// first pulls in as a dependency, changes nothing.
#[test]
fn apt_loop_items_squash_into_one_apt_call_with_ansibles_per_item_results() {
    if !debian::available("apt_loop_items_squash_into_one_apt_call_with_ansibles_per_item_results")
    {
        return;
    }
    let (host, _, _) = debian_scenario::check("apt-loop");
    assert_eq!(installed(&host, "turbo-multi").as_deref(), Some("1.0"));
    let history = String::from_utf8_lossy(&host.read("/var/log/apt/history.log")).into_owned();
    let installs: Vec<&str> = history
        .lines()
        .filter(|l| l.starts_with("Commandline:") && l.contains(" install "))
        .collect();
    assert_eq!(
        installs.len(),
        1,
        "one apt-get install for the whole loop:\n{history}"
    );
    assert!(
        ["turbo-conf", "turbo-lib", "turbo-multi=1.0"]
            .iter()
            .all(|name| installs[0].contains(name)),
        "{}",
        installs[0]
    );
}
