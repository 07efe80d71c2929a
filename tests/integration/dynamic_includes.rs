//! Dynamic includes end to end on local hosts: `include_tasks` and `include_role`
//! evaluated per host when the play reaches them (templated names, loops, `when`, vars
//! as include params, `apply`), blocks and handlers inside included files, public and
//! private role variables, the `included:` lines and the recap.
//!
//! What ansible-playbook 2.21 did with the same shapes (run with `-c local`):
//! - `included: /abs/path/file.yml for h1, h2` once per distinct file and params, one
//!   line per loop item (`=> (item=x)`); all of a task's `included:` lines come before
//!   the included tasks run.
//! - Each include a host takes counts `ok` (a loop of 3 items counts 3); a skipped
//!   include prints `skipping: [h]` and counts `skipped`; items a `when` skips inside a
//!   loop where other items are included count nothing.
//! - The include's own `when` and `tags` are not handed to the included tasks; those of
//!   an enclosing block are (a block `when` that turns false mid-file skips the rest).
//! - `include_role` prints the role's name (`included: r1 for h1`); without `public:
//!   yes` its defaults are not seen after it, with it they are.
//! - A missing file is a fatal result for the host naming the path.

use crate::support::hosts::LocalHosts;
use crate::support::run::{Outcome, PLAY_HEAD, TestRun, assert_contains, assert_file};

#[track_caller]
fn read(out: &Outcome, home: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(home.join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}\n{}\n{}", out.stdout, out.stderr))
}

fn include_run(hosts: &LocalHosts) -> TestRun {
    let inventory = format!(
        "{} flavour=red\n{} flavour=blue\n",
        hosts.line("h1"),
        hosts.line("h2")
    );
    let playbook = "- hosts: all
  gather_facts: true
  vars:
    colours: [cyan, magenta]
  tasks:
    - name: pick the file by a fact and a host var
      include_tasks: \"setup-{{ ansible_system }}-{{ flavour }}.yml\"
    - name: one include per item
      include_tasks: item.yml
      loop: \"{{ colours }}\"
      loop_control:
        loop_var: colour
        index_var: idx
      vars:
        prefix: col
    - name: only on h1
      include_tasks: only-h1.yml
      when: inventory_hostname == 'h1'
    - name: never
      include_tasks: only-h1.yml
      when: false
    - name: role by a template
      include_role:
        name: \"{{ 'ro' ~ 'le_' ~ flavour }}\"
        tasks_from: \"{{ 'extra' }}\"
    - name: private role defaults stay inside
      copy:
        content: \"{{ role_default | default('unset') }}\\n\"
        dest: ~/{{ inventory_hostname }}/after-private
    - include_role:
        name: role_red
        public: yes
    - name: public role defaults reach the play
      copy:
        content: \"{{ role_default | default('unset') }}\\n\"
        dest: ~/{{ inventory_hostname }}/after-public
";
    const ROLE_EXTRA: &str = "- copy:
    content: \"{{ role_name }} {{ role_default }} {{ flavour }}\\n\"
    dest: ~/{{ inventory_hostname }}/role-extra
    mode: \"0640\"
  notify: \"{{ role_name }} handler\"
";
    TestRun::new()
        .playbook(playbook)
        .inventory(&inventory)
        .local_home(hosts)
        .file(
            "setup-Linux-red.yml",
            "- copy: {content: \"red setup\\n\", dest: \"~/{{ inventory_hostname }}/setup\", mode: \"0600\"}\n",
        )
        .file(
            "setup-Linux-blue.yml",
            "- copy: {content: \"blue setup\\n\", dest: \"~/{{ inventory_hostname }}/setup\", mode: \"0644\"}\n",
        )
        .file(
            "item.yml",
            "- name: a file per item
  copy:
    content: \"{{ prefix }} {{ idx }} {{ colour }}\\n\"
    dest: \"~/{{ inventory_hostname }}/item-{{ colour }}\"
    mode: \"0604\"
",
        )
        .file(
            "only-h1.yml",
            "- copy: {content: \"h1 only\\n\", dest: \"~/{{ inventory_hostname }}/only\"}\n",
        )
        .file("roles/role_red/tasks/extra.yml", ROLE_EXTRA)
        .file("roles/role_blue/tasks/extra.yml", ROLE_EXTRA)
        .file(
            "roles/role_red/defaults/main.yml",
            "role_default: red-default\n",
        )
        .file(
            "roles/role_blue/defaults/main.yml",
            "role_default: blue-default\n",
        )
        .file("roles/role_red/tasks/main.yml", "- debug: msg=red-main\n")
        .file(
            "roles/role_red/handlers/main.yml",
            "- name: role_red handler\n  copy: {content: \"handled by red\\n\", dest: \"~/{{ inventory_hostname }}/handled\"}\n",
        )
        .file(
            "roles/role_blue/handlers/main.yml",
            "- name: role_blue handler\n  copy: {content: \"handled by blue\\n\", dest: \"~/{{ inventory_hostname }}/handled\"}\n",
        )
}

#[test]
fn includes_run_per_host_with_templated_names_loops_and_roles() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let run = include_run(&hosts);
    let out = run.run();
    out.assert_code(0);
    let dir = run.dir().canonicalize().unwrap();
    let dir = dir.display();
    let h1 = &hosts.dir("h1");
    let h2 = &hosts.dir("h2");
    assert_file(&h1.join("setup"), b"red setup\n", 0o600);
    assert_file(&h2.join("setup"), b"blue setup\n", 0o644);
    for home in [h1, h2] {
        assert_file(&home.join("item-cyan"), b"col 0 cyan\n", 0o604);
        assert_file(&home.join("item-magenta"), b"col 1 magenta\n", 0o604);
        assert_eq!(read(&out, home, "after-private"), "unset\n");
        assert_eq!(read(&out, home, "after-public"), "red-default\n");
    }
    assert_file(&h1.join("only"), b"h1 only\n", 0o644);
    assert!(!h2.join("only").exists());
    assert_file(&h1.join("role-extra"), b"role_red red-default red\n", 0o640);
    assert_file(
        &h2.join("role-extra"),
        b"role_blue blue-default blue\n",
        0o640,
    );

    // Each host's own file, then the hosts that share one run its tasks together.
    assert_contains(
        &out,
        &format!("included: {dir}/setup-Linux-red.yml for h1\n"),
    );
    assert_contains(
        &out,
        &format!("included: {dir}/setup-Linux-blue.yml for h2\n"),
    );
    assert_contains(
        &out,
        &format!(
            "included: {dir}/item.yml for h1, h2 => (item=cyan)\nincluded: {dir}/item.yml for h1, h2 => (item=magenta)\n"
        ),
    );
    assert_contains(&out, &format!("included: {dir}/only-h1.yml for h1\n"));
    assert_contains(&out, "TASK [never] ***");
    assert_contains(&out, "skipping: [h1]\nskipping: [h2]\n");
    assert_contains(
        &out,
        "included: role_red for h1\nincluded: role_blue for h2\n",
    );
    assert_contains(&out, "TASK [role_red : copy]");
    assert_contains(&out, "TASK [include_role : role_red] ***");
    assert_contains(&out, "\"msg\": \"red-main\"");
    // Handlers of a role named by a template join the play when it is included.
    assert_contains(&out, "RUNNING HANDLER [role_red : role_red handler]");
    assert_contains(&out, "RUNNING HANDLER [role_blue : role_blue handler]");
    assert_eq!(read(&out, h1, "handled"), "handled by red\n");
    assert_eq!(read(&out, h2, "handled"), "handled by blue\n");

    // facts 1, includes (1 + 2 loop items + role + public role = 5, h1 one more), tasks
    // (setup, 2 items, role copy, 2 copies, h1's only-file; debug in role_red's main),
    // the handler; `never` is skipped.
    let r1 = out.recap("h1");
    assert_eq!(
        (r1.ok, r1.changed, r1.skipped, r1.failed),
        (1 + 6 + 8 + 1, 8, 1, 0),
        "{}",
        out.stdout
    );
    let r2 = out.recap("h2");
    assert_eq!(
        (r2.ok, r2.changed, r2.skipped, r2.failed),
        (1 + 5 + 7 + 1, 7, 2, 0),
        "{}",
        out.stdout
    );

    let again = run.run();
    again.assert_code(0);
    assert_eq!(again.recap("h1").changed, 0, "{}", again.stdout);
    assert_eq!(again.recap("h2").changed, 0, "{}", again.stdout);
}

#[test]
fn blocks_apply_tags_and_missing_files_inside_includes() {
    let hosts = LocalHosts::new(&["h1"]);
    let playbook = format!(
        "{PLAY_HEAD}  tasks:
    - include_tasks: rescued.yml
    - name: tagged include
      include_tasks:
        file: tagged.yml
        apply:
          tags: [deploy]
      tags: [deploy]
    - block:
        - include_tasks: \"{{{{ 'miss' ~ 'ing' }}}}.yml\"
      rescue:
        - copy: {{content: \"{{{{ ansible_failed_result.msg }}}}\\n\", dest: ~/missing-msg}}
    - include_tasks: nowhere.yml
    - copy: {{content: \"not reached\\n\", dest: ~/not-reached}}
"
    );
    let build = || {
        TestRun::new()
        .playbook(&playbook)
        .local_hosts(&hosts)
        .file(
            "rescued.yml",
            "- block:
    - command: /bin/false
  rescue:
    - copy: {content: \"rescued in the include\\n\", dest: ~/rescued}
",
        )
        .file(
            "tagged.yml",
            "- copy: {content: \"applied\\n\", dest: ~/applied}\n- copy: {content: \"own\\n\", dest: ~/own-tag}\n  tags: [other]\n",
        )
    };
    let out = build().args(&["--tags", "deploy,always"]).run();
    let home = hosts.home();
    // Only the tagged include ran; its `apply` tags select every task it includes.
    assert_eq!(read(&out, home, "applied"), "applied\n");
    assert!(!home.join("rescued").exists(), "{}", out.stdout);
    out.assert_code(0);

    let run = build();
    let out = run.run();
    out.assert_code(2);
    assert_eq!(read(&out, home, "rescued"), "rescued in the include\n");
    assert_eq!(read(&out, home, "own-tag"), "own\n");
    let dir = run.dir().canonicalize().unwrap();
    let msg = read(&out, home, "missing-msg");
    assert!(
        msg.starts_with("Could not find or access 'missing.yml' on the controller (looked for ")
            && msg.contains(&format!("{}/missing.yml", dir.display())),
        "{msg}"
    );
    assert_contains(
        &out,
        "fatal: [h1]: FAILED! => {\"changed\": false, \"msg\": \"Could not find or access 'nowhere.yml' on the controller",
    );
    assert!(!home.join("not-reached").exists());
    let recap = out.recap("h1");
    assert_eq!((recap.failed, recap.rescued), (1, 2), "{}", out.stdout);
}

#[test]
fn an_include_that_never_stops_is_cut_at_the_depth_limit() {
    let hosts = LocalHosts::new(&["h1"]);
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:\n    - include_tasks: again.yml\n"
        ))
        .local_hosts(&hosts)
        .file("again.yml", "- include_tasks: again.yml\n")
        .run();
    out.assert_code(2);
    assert_contains(&out, "again.yml:1:3: includes are nested more than 64 deep");
}

/// ansible-playbook 2.21.5 `--syntax-check` does not read a dynamically included file:
/// `playbook: site.yml`, exit 0, with a broken `inc.yml`.
#[test]
fn list_tasks_shows_the_include_and_syntax_check_leaves_included_files() {
    let run = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:\n    - include_tasks: inc.yml\n      tags: [t]\n    - include_role: {{name: r}}\n"
        ))
        .inventory("h ansible_host=127.0.0.1 ansible_port=1\n")
        .file("inc.yml", "- debug: msg=x\n")
        .file("roles/r/tasks/main.yml", "- debug: msg=y\n");
    let out = run.arg("--list-tasks").run();
    out.assert_code(0);
    assert_contains(&out, "      include_tasks\tTAGS: [t]\n");
    assert_contains(&out, "      include_role\tTAGS: []\n");
    let broken = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:\n    - include_tasks: inc.yml\n"
        ))
        .inventory("h ansible_host=127.0.0.1 ansible_port=1\n")
        .file("inc.yml", "- debug: msg=x\n- name: bad\n  cpy: {}\n")
        .arg("--syntax-check")
        .run();
    broken.assert_code(0);
    assert_contains(&broken, "site.yml\n");
}

/// Ansible (checked with 2.21): the include's own `when` is judged once, for the include;
/// an enclosing block's `when` still holds for each included task, so a fact the file
/// sets can end the rest of it. `strategy: free` gives every host its own include.
#[test]
fn the_includes_when_is_not_handed_down_but_its_blocks_is_and_free_runs_each_host() {
    let hosts = LocalHosts::new(&["h1", "h2"]);
    let playbook = "- hosts: all
  gather_facts: false
  strategy: free
  vars: {go: true, outer: true}
  tasks:
    - include_tasks: \"per-{{ inventory_hostname }}.yml\"
      when: go
    - block:
        - include_tasks: blocked.yml
      when: outer
";
    let per_host = "- set_fact: {go: false}\n- copy: {content: \"{{ inventory_hostname }} after\\n\", dest: \"~/{{ inventory_hostname }}/after\"}\n";
    let run = TestRun::new()
        .playbook(playbook)
        .local_hosts(&hosts)
        .file("per-h1.yml", per_host)
        .file("per-h2.yml", per_host)
        .file(
            "blocked.yml",
            "- set_fact: {outer: false}\n- copy: {content: \"x\\n\", dest: \"~/{{ inventory_hostname }}/blocked\"}\n",
        );
    let out = run.run();
    out.assert_code(0);
    let dir = run.dir().canonicalize().unwrap();
    for name in ["h1", "h2"] {
        let home = &hosts.dir(name);
        assert_eq!(read(&out, home, "after"), format!("{name} after\n"));
        assert!(!home.join("blocked").exists(), "{}", out.stdout);
        assert_contains(
            &out,
            &format!("included: {}/per-{name}.yml for {name}\n", dir.display()),
        );
        // 2 includes, 2 set_facts, the copy; the blocked copy is skipped.
        let recap = out.recap(name);
        assert_eq!(
            (recap.ok, recap.changed, recap.skipped),
            (5, 1, 1),
            "{}",
            out.stdout
        );
    }
}

/// A role included at run time after a static use of it (checked against ansible-playbook
/// 2.21): its dependency that already ran is not run again, its tasks see the include's
/// vars, task banners are templated with them, and its handler replaces the static
/// use's and runs once with the include's vars.
#[test]
fn an_included_role_after_a_static_use_shares_its_dependency_and_replaces_its_handlers() {
    let hosts = LocalHosts::new(&["h"]);
    let home = hosts.home().to_path_buf();
    let out = TestRun::new()
        .playbook(&format!(
            "{PLAY_HEAD}  roles:
    - role: app
  tasks:
    - include_role:
        name: app
      vars:
        app_name: second
"
        ))
        .local_hosts(&hosts)
        .file("roles/base/tasks/main.yml", "- name: base for {{ app_name }}\n  shell: echo base >> ~/base.log\n")
        .file("roles/app/meta/main.yml", "dependencies:\n  - role: base\n")
        .file("roles/app/defaults/main.yml", "app_name: demo\n")
        .file(
            "roles/app/tasks/main.yml",
            "- name: write {{ app_name }}\n  copy:\n    dest: ~/{{ app_name }}.conf\n    content: \"name={{ app_name }}\\n\"\n  notify: restart app\n",
        )
        .file(
            "roles/app/handlers/main.yml",
            "- name: restart app\n  shell: echo {{ app_name }} >> ~/restarts.log\n",
        )
        .run();
    out.assert_code(0);
    assert_file(&home.join("demo.conf"), b"name=demo\n", 0o644);
    assert_file(&home.join("second.conf"), b"name=second\n", 0o644);
    assert_eq!(read(&out, &home, "base.log"), "base\n");
    assert_eq!(read(&out, &home, "restarts.log"), "second\n");
    assert_contains(&out, "TASK [app : write demo]");
    assert_contains(&out, "TASK [app : write second]");
    assert_eq!(out.stdout.matches("TASK [base : base for").count(), 1);
}

#[test]
fn a_handler_that_includes_tasks_runs_them_when_notified() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .file(
            "cleanup.yml",
            "- copy: {dest: ~/h/cleaned, content: \"{{ what }}\"}\n",
        )
        // Never notified: its file names a module this platform lacks, as Ansible's own
        // setup roles list Windows handlers beside POSIX ones.
        .file("windows.yml", "- win_file: {path: x, state: absent}\n")
        .playbook(&format!(
            "{PLAY_HEAD}{}",
            r#"  tasks:
    - command: "true"
      notify: clean
  handlers:
    - name: clean
      include_tasks: cleanup.yml
      vars: {what: done}
      when: true
    - name: clean windows
      include_tasks: windows.yml
"#
        ))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(hosts.dir("h").join("cleaned")).unwrap(),
        "done"
    );
}

#[test]
fn a_role_includes_its_sibling_found_by_first_found_along_the_search_path() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .file(
            "roles/r/tasks/main.yml",
            "- include_tasks: \"{{ lookup('first_found', ['nope.yml', 'other.yml']) }}\"\n\
             - copy: {dest: ~/h/path, content: \"{{ ansible_search_path | to_json }}\"}\n",
        )
        .file(
            "roles/r/tasks/other.yml",
            "- copy: {dest: ~/h/other, content: found}\n",
        )
        .playbook(&format!("{PLAY_HEAD}  roles: [r]\n"))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(read(&out, &hosts.dir("h"), "other"), "found");
    let path: Vec<String> =
        serde_json::from_str(&read(&out, &hosts.dir("h"), "path")).expect("a JSON list");
    assert_eq!(path.len(), 3, "{path:?}");
    assert!(path[0].ends_with("/roles/r"), "{path:?}");
    assert!(path[1].ends_with("/roles/r/tasks"), "{path:?}");
    assert!(path.iter().all(|p| p.starts_with('/')), "{path:?}");
}

/// ansible-core 2.21.5 (includes, include_role_error_handling): a missing role fails the
/// include_role when it runs and a rescue takes it; `rescuable: false` passes the rescue
/// by ("Could not include role").
#[test]
fn a_missing_included_role_is_rescuable_unless_told_not_to_be() {
    let hosts = LocalHosts::new(&["h"]);
    let play = |rescuable: &str| {
        format!(
            "{PLAY_HEAD}  tasks:
    - block:
        - include_role:
            name: missing_role
            rescuable: {rescuable}
      rescue:
        - copy: {{content: rescued, dest: ~/rescued}}
"
        )
    };
    let out = TestRun::new()
        .playbook(&play("'{{ omit }}'"))
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert!(hosts.home().join("rescued").exists(), "{}", out.stdout);
    std::fs::remove_file(hosts.home().join("rescued")).unwrap();
    let out = TestRun::new()
        .playbook(&play("false"))
        .local_hosts(&hosts)
        .run();
    out.assert_code(2);
    assert_contains(&out, "Could not include role");
    assert!(!hosts.home().join("rescued").exists(), "{}", out.stdout);
}
