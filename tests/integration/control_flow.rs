//! Task control flow on local hosts: changed_when/failed_when/until, assert/fail,
//! handlers, block/rescue/always. What a user checks: files on the target, the recap,
//! Ansible's wording in the output.

use std::path::Path;

use crate::support::hosts::LocalHosts;
use crate::support::run::{
    Outcome, PLAY_HEAD, Recap, TestRun, assert_contains, assert_not_contains,
};

fn run(hosts: &LocalHosts, tasks: &str) -> Outcome {
    TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{tasks}"))
        .local_hosts(hosts)
        .run()
}

#[test]
fn changed_when_failed_when_and_until_judge_each_result() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        r#"  tasks:
    - name: never a change
      command: echo hi
      changed_when: false
    - name: rc 3 is fine here
      shell: exit 3
      register: three
      failed_when: three.rc not in [0, 3]
    - name: grep says FAIL
      command: echo FAIL
      register: said
      failed_when:
        - "'FAIL' in said.stdout"
        - said.rc == 0
      ignore_errors: true
    - name: count to three
      shell: n=$(cat ~/count 2>/dev/null || echo 0); n=$((n+1)); echo $n > ~/count; echo $n
      register: counter
      until: counter.stdout == "3"
      retries: 5
      delay: 0
      changed_when: counter.attempts > 1
    - name: per item
      shell: echo {{ item }}
      loop: [a, b]
      register: items
      changed_when: item == 'b'
    - copy:
        dest: ~/summary
        content: "{{ counter.attempts }} {{ counter.stdout }} {{ three.failed }} {{ said.failed_when_result }} {{ items.results | map(attribute='changed') | list }}"
"#,
    );
    out.assert_code(0);
    let home = hosts.home();
    assert_eq!(
        std::fs::read_to_string(home.join("summary")).unwrap(),
        "3 3 False True [False, True]"
    );
    assert_contains(&out, "ok: [h]\n\nTASK [rc 3 is fine here]");
    assert_contains(
        &out,
        "FAILED - RETRYING: [h]: count to three (4 retries left).",
    );
    assert_contains(
        &out,
        "FAILED - RETRYING: [h]: count to three (3 retries left).",
    );
    // ansible-core 2.21 counts the attempt about to start: 5 retries leave 4 after the
    // first failure.
    assert_not_contains(&out, "(5 retries left)");
    assert_not_contains(&out, "(2 retries left)");
    assert_contains(&out, "\"failed_when_result\": true");
    assert_contains(&out, "...ignoring");
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 6,
            changed: 5,
            ignored: 1,
            ..Recap::default()
        }
    );
}

#[test]
fn until_retries_only_the_items_that_need_it() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        r#"  tasks:
    - name: per item counters
      shell: n=$(cat ~/c{{ item }} 2>/dev/null || echo 0); n=$((n+1)); echo $n > ~/c{{ item }}; echo $n
      loop: [1, 3]
      register: r
      until: r.stdout | int >= item
      retries: 4
      delay: 0
    - copy:
        dest: ~/attempts
        content: "{{ r.results | map(attribute='attempts') | list }}"
"#,
    );
    out.assert_code(0);
    let home = hosts.home();
    assert_eq!(
        std::fs::read_to_string(home.join("attempts")).unwrap(),
        "[1, 3]"
    );
    assert_eq!(std::fs::read_to_string(home.join("c1")).unwrap(), "1\n");
    assert_eq!(std::fs::read_to_string(home.join("c3")).unwrap(), "3\n");
    assert_eq!(out.stdout.matches("FAILED - RETRYING").count(), 2);
    assert_contains(
        &out,
        "FAILED - RETRYING: [h]: per item counters (3 retries left).",
    );
}

#[test]
fn until_gives_up_after_the_retries_and_fails_the_host() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        r#"  tasks:
    - name: never ready
      command: echo waiting
      register: r
      until: r.stdout == 'ready'
      retries: 2
      delay: 0
    - name: not reached
      shell: touch ~/reached
"#,
    );
    out.assert_code(2);
    assert_contains(&out, "(1 retries left).");
    assert_contains(&out, "(0 retries left).");
    assert_contains(&out, "fatal: [h]: FAILED! => {\"attempts\": 2,");
    assert!(!hosts.home().join("reached").exists());
    assert_eq!(out.recap("h").failed, 1);
}

#[test]
fn assert_and_fail_speak_ansibles_words() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        r#"  vars:
    port: 80
  tasks:
    - name: holds
      assert:
        that:
          - port == 80
          - port is number
    - name: quietly
      assert:
        that: port > 1
        success_msg: "port {{ port }} is fine"
        quiet: true
      register: quiet
    - name: does not hold
      assert:
        that:
          - port == 80
          - port == 443
        fail_msg: "port is {{ port }}"
      ignore_errors: true
      register: bad
    - copy:
        dest: ~/assert
        content: "{{ quiet.msg }}|{{ bad.assertion }}|{{ bad.evaluated_to }}|{{ bad.msg }}"
    - name: stop here
      fail:
        msg: "stopping on {{ inventory_hostname }}"
    - name: not reached
      shell: touch ~/reached
"#,
    );
    out.assert_code(2);
    assert_contains(
        &out,
        "ok: [h] => {\n    \"changed\": false,\n    \"msg\": \"All assertions passed\"\n}",
    );
    assert_contains(&out, "TASK [quietly] ***");
    assert_not_contains(&out, "port 80 is fine\"\n");
    assert_contains(
        &out,
        "fatal: [h]: FAILED! => {\n    \"assertion\": \"port == 443\",\n    \"changed\": false,\n    \"evaluated_to\": false,\n    \"msg\": \"port is 80\"\n}\n...ignoring",
    );
    assert_contains(
        &out,
        "fatal: [h]: FAILED! => {\"changed\": false, \"msg\": \"stopping on h\"}",
    );
    let home = hosts.home();
    assert_eq!(
        std::fs::read_to_string(home.join("assert")).unwrap(),
        "port 80 is fine|port == 443|False|port is 80"
    );
    assert!(!home.join("reached").exists());
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 4,
            changed: 1,
            failed: 1,
            ignored: 1,
            ..Recap::default()
        }
    );
}

fn read(dir: &Path, file: &str) -> String {
    let path = dir.join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn exists(dir: &Path, file: &str) -> bool {
    dir.join(file).exists()
}

#[test]
fn handlers_run_once_at_the_end_in_handler_order() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        r#"  vars:
    svc: web
  handlers:
    - name: restart web
      shell: echo restarted >> ~/handler_log
    - name: reload
      listen: web changed
      shell: echo reloaded >> ~/handler_log
    - name: never
      shell: echo never >> ~/handler_log
  tasks:
    - name: change
      copy:
        content: x
        dest: ~/conf
      notify: [web changed]
    - name: change again
      command: echo 1
      notify: "restart {{ svc }}"
    - name: no change
      command: echo 1
      changed_when: false
      notify: never
    - name: last task
      shell: cat ~/conf
"#,
    );
    out.assert_code(0);
    assert_eq!(read(hosts.home(), "handler_log"), "restarted\nreloaded\n");
    let last = out.stdout.find("TASK [last task]").expect("last task");
    let restart = out
        .stdout
        .find("RUNNING HANDLER [restart web] ***")
        .expect("restart handler banner");
    let reload = out
        .stdout
        .find("RUNNING HANDLER [reload] ***")
        .expect("reload handler banner");
    assert!(last < restart && restart < reload, "{}", out.stdout);
    assert_not_contains(&out, "RUNNING HANDLER [never]");
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 6,
            changed: 5,
            ..Recap::default()
        }
    );

    // Nothing changes the second time: no handler runs.
    let again = run(
        &hosts,
        r#"  handlers:
    - name: h
      shell: echo again >> ~/handler_log
  tasks:
    - copy:
        content: x
        dest: ~/conf
      notify: h
"#,
    );
    again.assert_code(0);
    assert_not_contains(&again, "RUNNING HANDLER");
    assert_eq!(read(hosts.home(), "handler_log"), "restarted\nreloaded\n");
}

#[test]
fn flush_handlers_runs_them_mid_play_and_only_once() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        r#"  handlers:
    - name: h
      shell: echo ran >> ~/handler_log
  tasks:
    - command: echo 1
      notify: h
    - meta: flush_handlers
    - shell: cat ~/handler_log
      register: log
    - meta: noop
    - copy:
        content: "{{ log.stdout }}"
        dest: ~/seen
"#,
    );
    out.assert_code(0);
    assert_eq!(read(hosts.home(), "seen"), "ran");
    assert_eq!(read(hosts.home(), "handler_log"), "ran\n");
    assert_eq!(out.stdout.matches("RUNNING HANDLER [h]").count(), 1);
    // ansible-core 2.21 prints a banner for every meta task.
    assert_eq!(out.stdout.matches("TASK [meta]").count(), 2);
}

#[test]
fn force_handlers_runs_notified_handlers_on_failed_hosts() {
    let hosts = LocalHosts::new(&["h"]);
    let playbook = r#"  handlers:
    - name: h
      shell: echo ran >> ~/handler_log
  tasks:
    - command: echo 1
      notify: h
    - command: /bin/false
"#;
    let plain = run(&hosts, playbook);
    plain.assert_code(2);
    assert!(!exists(hosts.home(), "handler_log"));
    assert_not_contains(&plain, "RUNNING HANDLER");

    let forced = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}{playbook}"))
        .local_hosts(&hosts)
        .arg("--force-handlers")
        .run();
    forced.assert_code(2);
    assert_contains(&forced, "RUNNING HANDLER [h]");
    assert_eq!(read(hosts.home(), "handler_log"), "ran\n");
    assert_eq!(forced.recap("h").failed, 1);

    // The play keyword does the same.
    let keyword = run(&hosts, &format!("  force_handlers: true\n{playbook}"));
    keyword.assert_code(2);
    assert_eq!(read(hosts.home(), "handler_log"), "ran\nran\n");
}

#[test]
fn end_host_and_end_play() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = TestRun::new()
        .playbook(&format!(
            r#"{PLAY_HEAD}  tasks:
    - meta: end_host
      when: inventory_hostname == 'h1'
    - shell: touch ~/{{{{ inventory_hostname }}}}/after_end_host
    - meta: end_play
    - shell: touch ~/{{{{ inventory_hostname }}}}/after_end_play
{PLAY_HEAD}  tasks:
    - shell: touch ~/{{{{ inventory_hostname }}}}/second_play
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert!(!exists(&hosts.dir("h1"), "after_end_host"));
    assert!(exists(&hosts.dir("h2"), "after_end_host"));
    for host in ["h1", "h2"] {
        assert!(!exists(&hosts.dir(host), "after_end_play"));
        assert!(exists(&hosts.dir(host), "second_play"));
    }
    assert_eq!(out.recap("h1").ok, 1);
    assert_eq!(out.recap("h2").ok, 2);
}

/// Ansible's `META:` lines at -vv (strategy/__init__.py's `_execute_meta`), and the
/// skipped result of an ending meta whose `when` is false.
#[test]
fn meta_says_what_it_did_at_vv() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let out = TestRun::new()
        .playbook(&format!(
            r#"{PLAY_HEAD}  tasks:
    - meta: end_host
      when: inventory_hostname == 'h1'
    - meta: end_play
"#
        ))
        .local_hosts(&hosts)
        .arg("-vv")
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        "META: end_host conditional evaluated to False, continuing execution for h2\n\
         skipping: [h2] => {\"changed\": false, \"msg\": \"end_host conditional evaluated to false, \
         continuing execution for h2\", \"skip_reason\": \"end_host conditional evaluated to False, \
         continuing execution for h2\"}\n",
    );
    assert_contains(&out, "META: ending play for h1\n");
    assert_contains(&out, "META: ending play\n");
    let quiet = TestRun::new()
        .playbook(&format!("{PLAY_HEAD}  tasks:\n    - meta: end_play\n"))
        .local_hosts(&hosts)
        .arg("-v")
        .run();
    assert_not_contains(&quiet, "META:");
}

/// Under `strategy: free`, `end_play` ends the play for every host and its later
/// batches, as in Ansible; `end_batch` lets the next batch run.
#[test]
fn free_strategy_end_play_ends_every_batch() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let play = |meta: &str| {
        format!(
            r#"{PLAY_HEAD}  serial: 1
  strategy: free
  tasks:
    - shell: touch ~/{{{{ inventory_hostname }}}}/ran
    - meta: {meta}
    - shell: touch ~/{{{{ inventory_hostname }}}}/after
"#
        )
    };
    let out = TestRun::new()
        .playbook(&play("end_play"))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert!(exists(&hosts.dir("h1"), "ran"));
    assert!(!exists(&hosts.dir("h2"), "ran"));
    let out = TestRun::new()
        .playbook(&play("end_batch"))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert!(exists(&hosts.dir("h2"), "ran"));
    assert!(!exists(&hosts.dir("h1"), "after"));
    assert!(!exists(&hosts.dir("h2"), "after"));
}

#[test]
fn rescue_takes_the_failure_and_always_runs() {
    let hosts = LocalHosts::new(&["bad", "good"]);
    let out = TestRun::new()
        .playbook(&format!(
            r#"{PLAY_HEAD}  tasks:
    - name: protected
      block:
        - command: echo before
        - name: maybe fail
          command: "{{{{ '/bin/false' if inventory_hostname == 'bad' else '/bin/true' }}}}"
        - shell: touch ~/{{{{ inventory_hostname }}}}/rest_of_block
      rescue:
        - debug:
            msg: "rescued {{{{ ansible_failed_task.name }}}}"
        - copy:
            content: "{{{{ ansible_failed_result.rc }}}} {{{{ ansible_failed_task.action }}}}"
            dest: ~/{{{{ inventory_hostname }}}}/rescued
      always:
        - copy:
            content: always
            dest: ~/{{{{ inventory_hostname }}}}/always
    - shell: touch ~/{{{{ inventory_hostname }}}}/after
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(read(&hosts.dir("bad"), "rescued"), "1 command");
    assert!(!exists(&hosts.dir("bad"), "rest_of_block"));
    assert!(!exists(&hosts.dir("good"), "rescued"));
    assert!(exists(&hosts.dir("good"), "rest_of_block"));
    for host in ["bad", "good"] {
        assert_eq!(read(&hosts.dir(host), "always"), "always");
        assert!(exists(&hosts.dir(host), "after"));
    }
    assert_contains(&out, "fatal: [bad]: FAILED! =>");
    assert_contains(&out, "\"msg\": \"rescued maybe fail\"");
    assert_eq!(
        out.recap("bad"),
        Recap {
            ok: 5,
            changed: 4,
            rescued: 1,
            ..Recap::default()
        }
    );
    assert_eq!(
        out.recap("good"),
        Recap {
            ok: 5,
            changed: 5,
            ..Recap::default()
        }
    );
}

#[test]
fn an_unrescued_block_runs_always_then_fails_the_host() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        r#"  tasks:
    - block:
        - command: /bin/false
      always:
        - copy:
            content: cleaned
            dest: ~/cleanup
    - shell: touch ~/after
"#,
    );
    out.assert_code(2);
    assert_eq!(read(hosts.home(), "cleanup"), "cleaned");
    assert!(!exists(hosts.home(), "after"));
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 1,
            changed: 1,
            failed: 1,
            ..Recap::default()
        }
    );
}

#[test]
fn block_when_vars_and_ignore_errors_reach_every_task() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        r#"  tasks:
    - when: false
      block:
        - shell: touch ~/skipped1
        - shell: touch ~/skipped2
    - vars:
        greeting: hello
      ignore_errors: true
      block:
        - command: /bin/false
        - copy:
            content: "{{ greeting }}"
            dest: ~/greeting
"#,
    );
    out.assert_code(0);
    assert!(!exists(hosts.home(), "skipped1") && !exists(hosts.home(), "skipped2"));
    assert_eq!(read(hosts.home(), "greeting"), "hello");
    assert_contains(&out, "...ignoring");
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 2,
            changed: 2,
            skipped: 2,
            ignored: 1,
            ..Recap::default()
        }
    );
}

/// An Ansible module turbo-play does not run yet loads, is skipped by `when` like any task,
/// and fails only on a host that reaches it: an ordinary failure that ignore_errors and
/// rescue handle. A misspelt module is still refused before anything runs.
#[test]
fn unsupported_ansible_modules_fail_only_when_they_run() {
    let hosts = LocalHosts::new(&["h"]);
    let out = run(
        &hosts,
        r#"  tasks:
    - name: skipped firewall rule
      iptables:
        chain: INPUT
        policy: ACCEPT
      when: false
    # On the local connection reboot refuses to run, as Ansible's does ("would reboot
    # the control node"), so this never reboots anything.
    - name: ignored reboot
      ansible.builtin.reboot: reboot_timeout=5
      ignore_errors: true
    - block:
        - reboot:
            msg: bye
      rescue:
        - copy:
            dest: ~/rescued
            content: "{{ ansible_failed_result.msg }}"
"#,
    );
    out.assert_code(0);
    assert_eq!(
        out.recap("h"),
        // As ansible-playbook counts them: the ignored failure is also ok.
        Recap {
            ok: 2,
            skipped: 1,
            ignored: 1,
            rescued: 1,
            changed: 1,
            ..Recap::default()
        }
    );
    assert_contains(
        &out,
        "\"msg\": \"Running ansible.builtin.reboot with local connection would reboot the control node.\"",
    );
    let rescued = std::fs::read_to_string(hosts.home().join("rescued")).unwrap();
    assert_eq!(
        rescued,
        "Running reboot with local connection would reboot the control node."
    );

    let typo = run(&hosts, "  tasks:\n    - servce: name=chronyd\n");
    typo.assert_code(4);
    assert_contains(
        &typo,
        "couldn't resolve module/action 'servce'. Did you mean 'service'?",
    );
}

/// A module named by its collection loads when that collection is installed (as Ansible
/// resolves it), and runs only on a host that reaches it (this one, a comment without an
/// interpreter line, fails as Ansible fails it); without the collection it is refused at
/// load time, as ansible-playbook refuses it.
#[test]
fn installed_collection_modules_load_and_fail_only_when_they_run() {
    let hosts = LocalHosts::new(&["h"]);
    let tasks = r#"  tasks:
    - name: firewall, elsewhere only
      community.general.ufw: rule=allow port=22
      when: false
    - name: sysctl
      ansible.posix.sysctl: name=vm.swappiness value=10
      ignore_errors: true
"#;
    let collections = tempfile::tempdir().unwrap();
    for module in [
        "community/general/plugins/modules/ufw.py",
        "ansible/posix/plugins/modules/sysctl.py",
    ] {
        let path = collections.path().join("ansible_collections").join(module);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "# a collection's module\n").unwrap();
    }
    let run_with = |path: &str| {
        TestRun::new()
            .playbook(&format!("{PLAY_HEAD}{tasks}"))
            .local_hosts(&hosts)
            .env("ANSIBLE_COLLECTIONS_PATH", path)
            .run()
    };
    let out = run_with(collections.path().to_str().unwrap());
    out.assert_code(0);
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 1,
            skipped: 1,
            ignored: 1,
            ..Recap::default()
        }
    );
    assert_contains(
        &out,
        "module (ansible.posix.sysctl) is missing interpreter line",
    );
    let missing = run_with("/nonexistent");
    missing.assert_code(4);
    assert_contains(
        &missing,
        "couldn't resolve module/action 'community.general.ufw'",
    );
}

/// Inside a collection's role, a short module name is that collection's module when it
/// ships one (Ansible looks there first): it loads, is skipped by `when`, and the role's
/// other tasks run.
#[test]
fn a_collection_roles_short_module_names_resolve_in_its_collection() {
    let hosts = LocalHosts::new(&["h"]);
    let collections = tempfile::tempdir().unwrap();
    let general = collections
        .path()
        .join("ansible_collections/community/general");
    std::fs::create_dir_all(general.join("plugins/modules")).unwrap();
    std::fs::write(general.join("plugins/modules/ufw.py"), "# a module\n").unwrap();
    std::fs::create_dir_all(general.join("roles/fw/tasks")).unwrap();
    std::fs::write(
        general.join("roles/fw/tasks/main.yml"),
        "- ufw: rule=allow port=22\n  when: false\n- copy: content=fw dest=~/fw\n",
    )
    .unwrap();
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  roles:\n    - community.general.fw\n"
        ))
        .local_hosts(&hosts)
        .env(
            "ANSIBLE_COLLECTIONS_PATH",
            collections.path().to_str().unwrap(),
        )
        .run();
    out.assert_code(0);
    assert_eq!(
        out.recap("h"),
        Recap {
            ok: 1,
            changed: 1,
            skipped: 1,
            ..Recap::default()
        }
    );
    assert_eq!(
        std::fs::read_to_string(hosts.home().join("fw")).unwrap(),
        "fw"
    );
}

#[test]
fn handlers_notified_in_pre_tasks_run_before_the_tasks_as_in_ansible() {
    let hosts = crate::support::hosts::LocalHosts::new(&["h"]);
    let out = crate::support::run::TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  pre_tasks:
    - import_tasks: notify_from_import.yml
      notify: set hello
  tasks:
    - assert:
        that: hello == 'world'
  handlers:
    - name: set hello
      set_fact: hello=world
",
        )
        .file(
            "notify_from_import.yml",
            "- debug: msg=changes\n  changed_when: true\n",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    let handler = out
        .stdout
        .find("RUNNING HANDLER [set hello]")
        .expect("the handler ran");
    let assert = out.stdout.find("TASK [assert]").expect("the assert ran");
    assert!(handler < assert, "{}", out.stdout);
}

/// ansible-core 2.21.5 (special_vars_hosts): `meta: clear_host_errors`, whichever host
/// runs it, brings the failed and the unreachable hosts back for the next play, and the
/// unreachable one is tried (and counted) again:
/// bad : ok=0 changed=0 unreachable=2 failed=0 ...; failing : ok=0 ... failed=2 ...
#[test]
fn clear_host_errors_brings_back_failed_and_unreachable_hosts() {
    let hosts = LocalHosts::new(&["good", "failing"]);
    let inventory = format!(
        "{}\n{}\n{}\n",
        hosts.line("good"),
        hosts.line("failing"),
        crate::support::hosts::refusing_host_line("bad")
    );
    let play = "- hosts: all
  gather_facts: false
  tasks:
    - assert:
        that: ansible_play_batch | length == 3
      run_once: true
    - ping:
      failed_when: inventory_hostname == 'failing'
    - meta: clear_host_errors
";
    let out = TestRun::new()
        .playbook(&format!("{play}{play}"))
        .inventory(&inventory)
        .local_home(&hosts)
        .run();
    out.assert_code(4);
    assert_eq!(out.recap("bad").unreachable, 2, "{}", out.stdout);
    assert_eq!(out.recap("failing").failed, 2);
    assert_eq!(out.recap("good").ok, 4);
}

#[test]
fn refresh_inventory_rereads_the_sources_for_later_plays() {
    let hosts = LocalHosts::new(&["one", "two", "three"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  tasks:
    - copy:
        src: new_hosts
        dest: \"{{ playbook_dir }}/hosts\"
      delegate_to: localhost
      run_once: true
    - meta: refresh_inventory
- hosts: all
  gather_facts: false
  tasks:
    - debug: msg=\"{{ ansible_play_hosts | join(',') }}\"
      run_once: true
",
        )
        .local_home(&hosts)
        .inventory(&format!("{}\n{}\n", hosts.line("one"), hosts.line("two")))
        .file(
            "new_hosts",
            &format!("{}\n{}\n", hosts.line("two"), hosts.line("three")),
        )
        .run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"two,three\"");
}

#[test]
fn end_role_skips_the_rest_of_the_role_for_the_hosts_it_holds_for() {
    let hosts = LocalHosts::new(&["a", "b"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all\n  gather_facts: false\n  roles: [r]\n  tasks:\n    - debug: msg=play\n",
        )
        .local_hosts(&hosts)
        .file(
            "roles/r/tasks/main.yml",
            "- meta: end_role\n  when: inventory_hostname == 'a'\n- debug: msg=after\n",
        )
        .arg("-vv")
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        "META: end_role conditional evaluated to False, continuing role r for b",
    );
    assert_eq!(out.stdout.matches("\"msg\": \"after\"").count(), 1);
    assert_eq!(out.recap("a").ok, 1);
    assert_eq!(out.recap("b").ok, 2);
    // Outside a role it is refused before anything runs, in Ansible's words.
    let out = TestRun::new()
        .playbook("- hosts: all\n  tasks:\n    - meta: end_role\n")
        .local_hosts(&hosts)
        .run();
    assert_ne!(out.code, 0);
    assert_contains(&out, "Cannot execute 'end_role' from outside of a role");
}
