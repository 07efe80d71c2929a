//! known_hosts against what ansible-playbook 2.21 did with the same playbook (`-c local`,
//! recorded in fixtures/known_hosts/): every task's registered result (diff included),
//! the files left, the recap, and a second run over what the first left.

use crate::everyday_modules::assert_recorded;
use crate::support::hosts::LocalHosts;
use crate::support::run::{Recap, TestRun, file_bytes_and_mode, recap};

const PLAYBOOK: &str = include_str!("fixtures/known_hosts/site.yml");
const FIRST_RUN: &str = include_str!("fixtures/known_hosts/first_run.jsonl");
const SECOND_RUN: &str = include_str!("fixtures/known_hosts/second_run.jsonl");

const OTHER: &[u8] = b"[other.org]:2222,10.0.0.9 ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBNu8ZmvpfYdLbH5W8uKbcEztWGxq4d6CEiOuSX3L2pXbW1tLdnNTiLkTdgmqFpB6wCmqDRBmfV4PwS7Hy4gmcmc=\n";

#[test]
fn known_hosts_writes_what_ansible_wrote() {
    let hosts = LocalHosts::new(&["h"]);
    let dir = hosts.dir("h");
    let dir_text = dir.to_str().unwrap();
    let run = TestRun::new()
        .playbook(&PLAYBOOK.replace("DIR", dir_text))
        .local_hosts(&hosts);
    let expected = |changed| Recap {
        ignored: 3,
        ..recap(18, changed)
    };

    let first = run.run();
    first.assert_code(0);
    assert_recorded(&first, &FIRST_RUN.replace("DIR", dir_text));
    assert_eq!(first.recap("h"), expected(10), "{}", first.stdout);
    // `ssh-keygen -R` left the file it removed the host from as kh.old, as under Ansible.
    assert_eq!(file_bytes_and_mode(&dir.join("kh")), (Vec::new(), 0o644));
    assert_eq!(
        file_bytes_and_mode(&dir.join("kh.old")),
        (OTHER.to_vec(), 0o644)
    );
    assert!(!dir.join("none").exists());
    let (hashed, mode) = file_bytes_and_mode(&dir.join("hashed"));
    assert_eq!(mode, 0o644);
    let hashed = String::from_utf8(hashed).unwrap();
    assert!(hashed.starts_with("|1|"), "{hashed}");
    assert!(
        hashed.ends_with(" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIInU/G2rxoo/lWj51X5cCF1Kw2TBwUgruUP60DHh4Vcs one@vm\n"),
        "{hashed}"
    );
    let found = std::process::Command::new("ssh-keygen")
        .args(["-F", "hashed.org", "-f"])
        .arg(dir.join("hashed"))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&found.stdout).contains("found: line 1"),
        "{found:?}"
    );

    let again = run.run();
    again.assert_code(0);
    assert_recorded(&again, &SECOND_RUN.replace("DIR", dir_text));
    assert_eq!(again.recap("h"), expected(9), "{}", again.stdout);
    assert_eq!(
        std::fs::read_to_string(dir.join("hashed")).unwrap(),
        hashed,
        "a hashed name already there is kept"
    );
}
