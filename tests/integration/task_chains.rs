//! Task chains (src/executor/chain/): a host's next independent tasks sent to its agent
//! at once. Each case runs with chains on and off and must leave the same state and
//! recap; the dependency cases check the value a later task saw.

use std::path::Path;

use crate::support::hosts::{LocalHosts, SshHosts};
use crate::support::run::{Outcome, Recap, TestRun};

const HEAD: &str = "- hosts: all\n  gather_facts: false\n  tasks:\n";

fn run_with(hosts: &LocalHosts, playbook: &str, chains: &str) -> Outcome {
    TestRun::new()
        .playbook(playbook)
        .local_hosts(hosts)
        .env("TURBO_PLAY_CHAINS", chains)
        .run()
}

/// The playbook on fresh local hosts, with chains on and then off.
fn both_ways(names: &[&str], playbook: &str, check: impl Fn(&LocalHosts, &Outcome)) {
    for chains in ["1", "0"] {
        let hosts = LocalHosts::new(names);
        let out = run_with(&hosts, playbook, chains);
        check(&hosts, &out);
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn recap(ok: u32, changed: u32, failed: u32) -> Recap {
    Recap {
        ok,
        changed,
        failed,
        ..Recap::default()
    }
}

#[test]
fn a_failure_mid_chain_stops_that_host_only() {
    let playbook = format!(
        "{HEAD}    - file: path=~/{{{{ inventory_hostname }}}}/d state=directory
    - command: touch ~/{{{{ inventory_hostname }}}}/d/m1
    - shell: test {{{{ inventory_hostname }}}} != h2
    - command: touch ~/{{{{ inventory_hostname }}}}/d/m2
    - copy: dest=~/{{{{ inventory_hostname }}}}/d/m3 content=x
"
    );
    both_ways(&["h1", "h2", "h3"], &playbook, |hosts, out| {
        out.assert_code(2);
        for h in ["h1", "h3"] {
            for m in ["m1", "m2", "m3"] {
                assert!(
                    hosts.dir(h).join("d").join(m).exists(),
                    "{h} {m}\n{}",
                    out.stdout
                );
            }
            assert_eq!(out.recap(h), recap(5, 5, 0), "{}", out.stdout);
        }
        let h2 = hosts.dir("h2").join("d");
        assert!(h2.join("m1").exists());
        assert!(!h2.join("m2").exists(), "{}", out.stdout);
        assert!(!h2.join("m3").exists(), "{}", out.stdout);
        assert_eq!(out.recap("h2"), recap(2, 2, 1), "{}", out.stdout);
    });
}

#[test]
fn an_ignored_failure_mid_chain_runs_the_rest() {
    let playbook = format!(
        "{HEAD}    - command: touch ~/{{{{ inventory_hostname }}}}/m1
    - command: 'false'
      ignore_errors: true
    - command: touch ~/{{{{ inventory_hostname }}}}/m2
    - command: touch ~/{{{{ inventory_hostname }}}}/m3
"
    );
    both_ways(&["h1"], &playbook, |hosts, out| {
        out.assert_code(0);
        assert!(hosts.dir("h1").join("m3").exists(), "{}", out.stdout);
        let r = out.recap("h1");
        assert_eq!((r.ok, r.failed, r.ignored), (4, 0, 1), "{}", out.stdout);
    });
}

#[test]
fn a_when_on_a_registered_result_sees_that_result() {
    let playbook = format!(
        "{HEAD}    - command: touch ~/{{{{ inventory_hostname }}}}/present
    - stat: path=~/{{{{ inventory_hostname }}}}/present
      register: st
    - command: touch ~/{{{{ inventory_hostname }}}}/seen
      when: st.stat.exists
    - command: cat ~/{{{{ inventory_hostname }}}}/present
      register: r
    - copy: dest=~/{{{{ inventory_hostname }}}}/rc content='{{{{ r.rc }}}}'
"
    );
    both_ways(&["h1", "h2"], &playbook, |hosts, out| {
        out.assert_code(0);
        for h in ["h1", "h2"] {
            assert!(hosts.dir(h).join("seen").exists(), "{}", out.stdout);
            assert_eq!(read(&hosts.dir(h).join("rc")), "0");
        }
    });
}

#[test]
fn a_template_reading_facts_after_setup_sees_them() {
    let playbook = format!(
        "{HEAD}    - command: touch ~/{{{{ inventory_hostname }}}}/before
    - setup:
        gather_subset: min
    - copy: dest=~/{{{{ inventory_hostname }}}}/os content='{{{{ ansible_facts.system }}}} {{{{ ansible_system }}}}'
"
    );
    both_ways(&["h1"], &playbook, |hosts, out| {
        out.assert_code(0);
        assert_eq!(
            read(&hosts.dir("h1").join("os")),
            "Linux Linux",
            "{}",
            out.stdout
        );
    });
}

#[test]
fn a_set_fact_is_seen_by_the_next_task() {
    let playbook = format!(
        "{HEAD}    - command: touch ~/{{{{ inventory_hostname }}}}/a
    - set_fact:
        where: ~/{{{{ inventory_hostname }}}}/b
        what: from-set-fact
    - copy: dest='{{{{ where }}}}' content='{{{{ what }}}}'
    - set_fact:
        what: again
      vars:
        unused: 1
    - copy: dest=~/{{{{ inventory_hostname }}}}/c content='{{{{ what }}}}'
"
    );
    both_ways(&["h1"], &playbook, |hosts, out| {
        out.assert_code(0);
        assert_eq!(read(&hosts.dir("h1").join("b")), "from-set-fact");
        assert_eq!(read(&hosts.dir("h1").join("c")), "again", "{}", out.stdout);
    });
}

/// A fact set in a chain is known to the tasks after it, in its precedence: over the
/// play's vars, under the extra vars.
#[test]
fn facts_set_in_a_chain_keep_their_precedence() {
    let playbook = "- hosts: all
  gather_facts: false
  vars:
    in_play: play
  tasks:
    - command: 'true'
    - set_fact:
        fresh: new
        in_play: fact
        extra: fact
    - shell: echo {{ fresh }} {{ in_play }} {{ extra }} > ~/{{ inventory_hostname }}/seen
    - set_fact:
        fresh: '{{ fresh }}-again'
    - shell: echo {{ fresh }} > ~/{{ inventory_hostname }}/again
";
    for chains in ["1", "0"] {
        let hosts = LocalHosts::new(&["h1"]);
        let out = TestRun::new()
            .playbook(playbook)
            .local_hosts(&hosts)
            .args(&["-e", "extra=extra"])
            .env("TURBO_PLAY_CHAINS", chains)
            .run();
        out.assert_code(0);
        assert_eq!(read(&hosts.dir("h1").join("seen")), "new fact extra\n");
        assert_eq!(read(&hosts.dir("h1").join("again")), "new-again\n");
        assert!(!out.stdout.contains("a bug"), "{}", out.stdout);
        assert!(!out.stderr.contains("a bug"), "{}", out.stderr);
    }
}

#[test]
fn a_variable_naming_a_registered_result_ends_the_chain() {
    let playbook = format!(
        "{HEAD}    - command: echo first
      register: r
    - copy: dest=~/{{{{ inventory_hostname }}}}/out content='{{{{ said }}}}'
      vars:
        said: '{{{{ r.stdout }}}}'
"
    );
    both_ways(&["h1"], &playbook, |hosts, out| {
        out.assert_code(0);
        assert_eq!(
            read(&hosts.dir("h1").join("out")),
            "first",
            "{}",
            out.stdout
        );
    });
}

#[test]
fn notified_handlers_run_at_flush_handlers_between_chained_tasks() {
    let playbook = "- hosts: all
  gather_facts: false
  tasks:
    - shell: echo start >> ~/{{ inventory_hostname }}/log
    - shell: echo t1 >> ~/{{ inventory_hostname }}/log
      notify: h
    - shell: echo t2 >> ~/{{ inventory_hostname }}/log
    - meta: flush_handlers
    - shell: echo t3 >> ~/{{ inventory_hostname }}/log
    - shell: echo t4 >> ~/{{ inventory_hostname }}/log
  handlers:
    - name: h
      shell: echo handler >> ~/{{ inventory_hostname }}/log
";
    both_ways(&["h1", "h2"], playbook, |hosts, out| {
        out.assert_code(0);
        for h in ["h1", "h2"] {
            assert_eq!(
                read(&hosts.dir(h).join("log")),
                "start\nt1\nt2\nhandler\nt3\nt4\n",
                "{}",
                out.stdout
            );
        }
    });
}

/// Loops go ahead as one batch, and a file task without `state` in one request: a
/// failed item fails its task (the other items still run, as in Ansible) and stops the
/// host's chain there; registered loop results are whole.
#[test]
fn loops_and_a_file_without_state_chain_and_stop_as_a_run_without_chains() {
    let playbook = format!(
        "{HEAD}    - file: path=~/{{{{ inventory_hostname }}}}/{{{{ item }}}} state=directory
      loop: [a, b]
    - shell: test {{{{ inventory_hostname }}}}{{{{ item }}}} != h2y && touch ~/{{{{ inventory_hostname }}}}/{{{{ item }}}}
      loop: [x, y, z]
      register: looped
    - command: touch ~/{{{{ inventory_hostname }}}}/after
    - file: path=~/{{{{ inventory_hostname }}}}/a mode=0700
    - copy: dest=~/{{{{ inventory_hostname }}}}/n content='{{{{ looped.results | length }}}}'
"
    );
    both_ways(&["h1", "h2"], &playbook, |hosts, out| {
        out.assert_code(2);
        let h1 = hosts.dir("h1");
        for m in ["x", "y", "z", "after"] {
            assert!(h1.join(m).exists(), "h1 {m}\n{}", out.stdout);
        }
        assert_eq!(read(&h1.join("n")), "3", "{}", out.stdout);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(h1.join("a")).unwrap().permissions(),
        );
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(out.recap("h1"), recap(5, 5, 0), "{}", out.stdout);
        let h2 = hosts.dir("h2");
        assert!(
            h2.join("x").exists() && h2.join("z").exists(),
            "{}",
            out.stdout
        );
        assert!(!h2.join("y").exists());
        assert!(!h2.join("after").exists(), "{}", out.stdout);
        assert_eq!(out.recap("h2"), recap(1, 1, 1), "{}", out.stdout);
        assert!(!out.stdout.contains("a bug"), "{}", out.stdout);
        assert!(!out.stderr.contains("a bug"), "{}", out.stderr);
    });
}

/// The one difference chains make, and only between hosts: a fast host runs its next
/// task before a slow host has finished this one.
#[test]
fn with_chains_a_fast_host_runs_ahead_of_a_slow_one() {
    let playbook = format!(
        "{HEAD}    - command: touch ~/{{{{ inventory_hostname }}}}/a
    - shell: '[ {{{{ inventory_hostname }}}} = h1 ] || sleep 1; touch ~/{{{{ inventory_hostname }}}}/b'
    - shell: test -e ~/h2/b && echo after > ~/{{{{ inventory_hostname }}}}/c || echo before > ~/{{{{ inventory_hostname }}}}/c
"
    );
    for (chains, h1_saw) in [("1", "before\n"), ("0", "after\n")] {
        let hosts = LocalHosts::new(&["h1", "h2"]);
        let out = run_with(&hosts, &playbook, chains);
        out.assert_code(0);
        assert_eq!(read(&hosts.dir("h1").join("c")), h1_saw, "chains={chains}");
    }
}

/// The agent dies in the middle of a chain: the host is unreachable at that task, and
/// nothing after it ran.
#[test]
fn a_connection_that_dies_mid_chain_makes_the_host_unreachable() {
    if !nix_root() {
        eprintln!("skipped: needs root for sshd");
        return;
    }
    for chains in ["1", "0"] {
        let hosts = SshHosts::start(&["h"]);
        let out_dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(
            out_dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        let marker = |name: &str| out_dir.path().join(name);
        let playbook = format!(
            "{HEAD}    - command: touch {a}
    - command: touch {b}
    - shell: kill -9 $PPID; sleep 5
    - command: touch {c}
    - command: touch {d}
",
            a = marker("a").display(),
            b = marker("b").display(),
            c = marker("c").display(),
            d = marker("d").display(),
        );
        let out = TestRun::new()
            .playbook(&playbook)
            .inventory(&hosts.inventory())
            .env("TURBO_PLAY_CHAINS", chains)
            .run();
        // The agent is killed, the connection stays: the task fails as a killed module
        // does in Ansible (tests/integration/faults.rs), and the host stops there.
        out.assert_code(2);
        assert!(marker("b").exists(), "{}", out.stdout);
        assert!(!marker("c").exists(), "chains={chains}\n{}", out.stdout);
        assert!(!marker("d").exists(), "chains={chains}\n{}", out.stdout);
        let r = out.recap("h");
        assert_eq!(
            (r.ok, r.changed, r.unreachable, r.failed),
            (2, 2, 0, 1),
            "{}",
            out.stdout
        );
        assert!(
            out.stdout
                .contains("was killed by signal 9 (SIGKILL) mid-task"),
            "{}",
            out.stdout
        );
    }
}

/// A template file (not its arguments) reads the play's hosts, which a failure on
/// another host changes: it is never written ahead with the hosts as they were (a write
/// that its turn would correct, leaving a backup of what Ansible never wrote).
#[test]
fn a_template_file_reading_the_play_hosts_is_not_written_ahead() {
    if !nix_root() {
        eprintln!("skipped: needs root for sshd");
        return;
    }
    for chains in ["1", "0"] {
        let hosts = SshHosts::start(&["h1", "h2"]);
        let out_dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(
            out_dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .unwrap();
        let playbook = format!(
            "{HEAD}    - command: 'true'
    - shell: test {{{{ inventory_hostname }}}} != h2
    - template: src=hosts.j2 dest={dir}/{{{{ inventory_hostname }}}} backup=true
",
            dir = out_dir.path().display(),
        );
        let out = TestRun::new()
            .playbook(&playbook)
            .file(
                "templates/hosts.j2",
                "{{ ansible_play_hosts | join(',') }}\n",
            )
            .inventory(&hosts.inventory())
            .env("TURBO_PLAY_CHAINS", chains)
            .run();
        out.assert_code(2);
        assert!(
            !out.stdout.contains("sent this task ahead"),
            "{}",
            out.stdout
        );
        assert!(
            !out.stderr.contains("sent this task ahead"),
            "{}",
            out.stderr
        );
        let written: Vec<String> = std::fs::read_dir(out_dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(written, ["h1"], "chains={chains}\n{}", out.stdout);
        assert_eq!(read(&out_dir.path().join("h1")), "h1\n");
    }
}

fn nix_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}
