//! `module_defaults` action groups and collection routing (src/playbook/module_defaults.rs,
//! src/playbook/resolve.rs, src/plugins/routing.rs): a collection's `meta/runtime.yml`
//! declares groups (one extending another, one with malformed metadata) and routes a
//! module elsewhere (redirected and deprecated, removed). Checked against
//! ansible-playbook 2.21.5 on the same files: the registered values, the warning and the
//! deprecation texts, the load errors.

use crate::support::hosts::LocalHosts;
use crate::support::run::{TestRun, assert_contains, assert_not_contains};

const RUNTIME: &str = "\
plugin_routing:
  modules:
    old_ping:
      deprecation:
        removal_version: '3.0.0'
        warning_text: Use ansible.builtin.ping instead.
      redirect: ansible.builtin.ping
    older_ping:
      deprecation:
        removal_date: '2030-01-01'
      redirect: ns.c.old_ping
    gone:
      tombstone:
        removal_version: '2.0.0'
        warning_text: Use ansible.builtin.ping instead.
action_groups:
  pings:
    - ansible.builtin.ping
  talk:
    - metadata:
        extend_group: [words]
  words:
    - ansible.builtin.debug
  broken:
    - metadata: [words]
    - ansible.builtin.debug
";

fn collection_run() -> TestRun {
    TestRun::new().file(
        "collections/ansible_collections/ns/c/meta/runtime.yml",
        RUNTIME,
    )
}

#[test]
fn group_defaults_reach_the_groups_actions_under_their_own() {
    let hosts = LocalHosts::new(&["h"]);
    let out = collection_run()
        .playbook(
            r#"- hosts: all
  gather_facts: false
  vars:
    greeting: hi
  module_defaults:
    - group/ns.c.pings: {data: from group}
    - group/ns.c.talk: {msg: '{{ greeting }}'}
  tasks:
    - ping:
      register: p1
    - ping: {data: mine}
      register: p2
    - ansible.legacy.ping:
      register: p3
      module_defaults:
        ansible.builtin.ping: {data: own}
    - debug:
      register: d
    - ns.c.old_ping:
      register: p4
    - include_tasks: inc.yml
    - assert:
        that:
          - p1.ping == 'from group'
          - p2.ping == 'mine'
          - p3.ping == 'own'
          - d.msg == 'hi'
          - p4.ping == 'from group'
          - p5.ping == 'from group'
- hosts: all
  gather_facts: false
  module_defaults:
    group/ns.c.broken: {msg: x}
  tasks:
    - debug:
"#,
        )
        .file("inc.yml", "- ns.c.older_ping:\n  register: p5\n")
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    // A redirect through a deprecated name, loaded when the include runs.
    assert_contains(
        &out,
        "[DEPRECATION WARNING]: ns.c.older_ping has been deprecated. This feature will be \
         removed from collection 'ns.c' in a release after 2030-01-01.",
    );
    assert_contains(
        &out,
        "[DEPRECATION WARNING]: ns.c.old_ping has been deprecated. Use ansible.builtin.ping \
         instead. This feature will be removed from collection 'ns.c' version 3.0.0.",
    );
    assert_contains(
        &out,
        "[WARNING]: Invalid metadata was found for action_group ns.c.broken while loading \
         module_defaults. The metadata is not a dictionary. Got ['words']",
    );
    let recap = out.recap("h");
    assert_eq!((recap.ok, recap.failed), (9, 0), "{}", out.stdout);

    // ANSIBLE_VALIDATE_ACTION_GROUP_METADATA=false keeps the warning back.
    let quiet = collection_run()
        .playbook(
            "- hosts: all\n  gather_facts: false\n  module_defaults:\n    group/ns.c.broken: {}\n  tasks: [debug:]\n",
        )
        .env("ANSIBLE_VALIDATE_ACTION_GROUP_METADATA", "false")
        .local_hosts(&hosts)
        .run();
    quiet.assert_code(0);
    assert_not_contains(&quiet, "Invalid metadata");
}

#[test]
fn groups_and_plugins_ansible_cannot_resolve_fail_the_load() {
    let hosts = LocalHosts::new(&["h"]);
    // Ansible exits 4 (a parser error) for the first two; for the removed module it
    // exits 1, where turbo-play's load errors all exit 4 (so only failure is checked).
    let cases = [
        (
            "  module_defaults:\n    group/ns.c.nope: {}\n  tasks: [ping:]\n",
            "site.yml:4:5: Error loading module_defaults: could not resolve the module_defaults \
             group ns.c.nope",
        ),
        (
            "  module_defaults:\n    pnig: {}\n  tasks: [ping:]\n",
            "site.yml:4:5: Could not resolve action ansible.legacy.pnig in module_defaults",
        ),
        (
            "  tasks:\n    - ns.c.gone:\n",
            "site.yml:4:7: The 'ns.c.gone' module has been removed. Use ansible.builtin.ping \
             instead. This feature was removed from collection 'ns.c' version 2.0.0.",
        ),
    ];
    for (rest, error) in cases {
        let out = collection_run()
            .playbook(&format!("- hosts: all\n  gather_facts: false\n{rest}"))
            .local_hosts(&hosts)
            .run();
        assert_ne!(out.code, 0, "{}", out.stderr);
        assert_contains(&out, error);
        assert_eq!(out.recaps().len(), 0, "nothing ran: {}", out.stdout);
    }
}

/// ansible-playbook 2.21.5 stops at such an include with "Could not resolve action
/// ansible.legacy.fiel in module_defaults" (exit 4); turbo-play fails the include with
/// the same message, as it fails an include it cannot load, and runs nothing of it.
#[test]
fn an_included_tasks_files_unresolvable_defaults_fail_the_include() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .file(
            "inc.yml",
            "- block:\n    - debug: msg=inside\n  module_defaults:\n    fiel: {mode: '0600'}\n",
        )
        .playbook("- hosts: all\n  gather_facts: false\n  tasks:\n    - include_tasks: inc.yml\n")
        .local_hosts(&hosts)
        .run();
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert_contains(
        &out,
        "inc.yml:4:5: Could not resolve action ansible.legacy.fiel in module_defaults",
    );
    assert!(!out.stdout.contains("inside"), "{}", out.stdout);
    assert_eq!(out.recap("h").failed, 1);
}

/// ansible-playbook 2.21.5: the play's module_defaults reach the tasks of its `roles:`
/// (and what they include), and may name a module only a role's `library/` has, which
/// the play loads after reading them.
#[test]
fn play_defaults_reach_its_roles_and_may_name_their_library_modules() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .file("roles/r/library/rmod.py", "# a module of the role's own\n")
        .file(
            "roles/r/tasks/main.yml",
            "- ping:\n  register: x\n- include_tasks: inc.yml\n- rmod:\n  when: false\n",
        )
        .file("roles/r/tasks/inc.yml", "- ping:\n  register: y\n")
        .playbook(
            r#"- hosts: all
  gather_facts: false
  module_defaults:
    ping: {data: dflt}
    rmod: {a: 1}
  roles: [r]
  tasks:
    - assert:
        that: [x.ping == 'dflt', y.ping == 'dflt']
"#,
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let recap = out.recap("h");
    assert_eq!(
        (recap.ok, recap.failed, recap.skipped),
        (4, 0, 1),
        "{}",
        out.stdout
    );
}
