//! set_stats, gather_facts and the other system modules against what ansible-playbook
//! 2.21 did with the same playbooks (`-c local`, recorded here as data).

use crate::support::hosts::LocalHosts;
use crate::support::run::{Recap, TestRun, recap};

const SET_STATS: &str = r#"- hosts: all
  gather_facts: false
  tasks:
    - set_stats: {data: {count: 1, names: ["{{ inventory_hostname }}"], nested: {a: 1}}}
    - set_stats: {data: {count: 2, nested: {b: 2}}}
    - set_stats: {data: {mine: "{{ inventory_hostname }}", n: 1}, per_host: true}
    - set_stats: {data: {n: 5}, per_host: true, aggregate: false}
    - set_stats: {data: {looped: "{{ item }}"}}
      loop: [1, 2]
    - set_stats: {data: "notadict"}
      ignore_errors: true
    - set_stats: {data: {x: 1}}
"#;

/// The end of ansible-playbook 2.21's output with ANSIBLE_SHOW_CUSTOM_STATS=1.
const CUSTOM_STATS: &str = "\n\nCUSTOM STATS: ******************************************************************\n\
\th1: { \"mine\": \"h1\", \"n\": 5}\n\
\th2: { \"mine\": \"h2\", \"n\": 5}\n\
\n\
\tRUN: { \"count\": 6, \"looped\": 6, \"names\": [  \"h1\",  \"h2\" ], \"nested\": {  \"a\": 1,  \"b\": 2 }, \"x\": 2}\n\n";

#[test]
fn set_stats_adds_up_and_the_recap_shows_them_as_ansible_does() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let run = || TestRun::new().playbook(SET_STATS).local_hosts(&hosts);
    let shown = run().env("ANSIBLE_SHOW_CUSTOM_STATS", "1").run();
    shown.assert_code(0);
    let expected = Recap {
        ignored: 1,
        ..recap(7, 0)
    };
    assert_eq!(shown.recap("h1"), expected, "{}", shown.stdout);
    // Hosts run in parallel: "names" is in the order they got there, as in Ansible.
    let tail = shown.stdout.replace("\"h2\",  \"h1\"", "\"h1\",  \"h2\"");
    assert!(tail.ends_with(CUSTOM_STATS), "{}", shown.stdout);
    let quiet = run().run();
    assert!(!quiet.stdout.contains("CUSTOM STATS"), "{}", quiet.stdout);
}

#[test]
fn gather_facts_is_setup_with_parallel_accepted() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  tasks:
    - gather_facts: {parallel: true, gather_subset: ["!all", "!min", "distribution"]}
      register: gathered
    - assert:
        that:
          - ansible_distribution is defined
          - gathered.ansible_facts.gather_subset == ["!all", "!min", "distribution"]
          - gathered is not changed
    - gather_facts: {bogus: 1}
      ignore_errors: true
      register: bad
    - assert:
        that:
          - 'bad.msg == "The following modules failed to execute: ansible.legacy.setup."'
          - 'bad.failed_modules["ansible.legacy.setup"].msg.startswith("Unsupported parameters for (ansible.legacy.setup) module: bogus.")'
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        out.recap("h"),
        Recap {
            ignored: 1,
            ..recap(4, 0)
        },
        "{}",
        out.stdout
    );
}
