//! user and group on a real Debian host (never on the controller: these change the
//! target's accounts), against what ansible-playbook 2.21 did with the same playbook
//! (tests/debian/user-and-group/, recorded by tests/debian/record.sh): the same recaps,
//! the same /etc (passwd, group, shadow, gshadow, their backups, subuid and subgid), the
//! same homes, and the same registered results.

use crate::support::debian;
use crate::support::debian_scenario::{self, OUT};

#[test]
fn users_and_groups_change_etc_as_ansible_did() {
    if !debian::available("users_and_groups_change_etc_as_ansible_did") {
        return;
    }
    let (host, first, again) = debian_scenario::check("user-and-group");
    // Only check mode's predictions (changed, as in Ansible) and the rerun's own results
    // file change on the rerun.
    assert!(
        again.stdout.contains("changed: [debian-target] => (item")
            || again.stdout.contains("changed: [debian-target]"),
        "{}",
        again.stdout
    );
    for task in ["us_full", "us_parents", "us_home", "gr_gid"] {
        assert!(
            first.stdout.contains(&format!("TASK [{task}]")),
            "{}",
            first.stdout
        );
    }
    // Check mode changed nothing: no user zed, no group checkgrp.
    let passwd = String::from_utf8(host.read("/etc/passwd")).unwrap();
    let group = String::from_utf8(host.read("/etc/group")).unwrap();
    assert!(!passwd.contains("\nzed:") && !group.contains("\ncheckgrp:"));
    assert!(host.stat(&format!("{OUT}/results.txt")).is_some());
}
