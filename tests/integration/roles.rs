//! Roles and static reuse end to end on a local host: a role with defaults, vars, files,
//! templates, handlers and a meta dependency, used through `roles:` and `import_role`;
//! a role found through ANSIBLE_ROLES_PATH; `import_tasks`; `import_playbook` from another
//! directory; and the precedence of role defaults, inventory vars, play vars, role vars
//! and role parameters.

use crate::support::hosts::LocalHosts;
use crate::support::run::{Outcome, TestRun, assert_contains};

const PLAYBOOK: &str = "- hosts: all
  gather_facts: false
  vars:
    p_play: play
    p_rolevars: play
    p_param: play
  pre_tasks:
    - shell: echo pre >> ~/order.log
  roles:
    - role: web
      p_param: param
  tasks:
    - import_tasks: tasks/more.yml
      vars:
        what: imported
    - import_role:
        name: web
        tasks_from: extra
    - name: the play's tasks see its roles' defaults and vars (Ansible's public roles)
      copy:
        content: \"{{ p_default | default('unset') }} {{ p_rolevars }}\\n\"
        dest: ~/outside
- import_playbook: sub/second.yml
";

const CONF_TEMPLATE: &str = "default={{ p_default }}
inventory={{ p_inv }}
play={{ p_play }}
role_vars={{ p_rolevars }}
param={{ p_param }}
role={{ role_name }} {{ role_path | basename }}
";

fn role_run(hosts: &LocalHosts) -> TestRun {
    let shared_roles = tempfile::tempdir().expect("tempdir").keep();
    let common = shared_roles.join("common/tasks");
    std::fs::create_dir_all(&common).expect("mkdir");
    std::fs::write(
        common.join("main.yml"),
        "- shell: echo common >> ~/order.log\n",
    )
    .expect("write");
    let inventory = format!(
        "{} p_inv=inventory p_play=inventory p_rolevars=inventory p_param=inventory\n",
        hosts.line("web1")
    );
    TestRun::new()
        .playbook(PLAYBOOK)
        .inventory(&inventory)
        .local_home(hosts)
        .env("ANSIBLE_ROLES_PATH", &shared_roles.display().to_string())
        .file(
            "roles/web/defaults/main.yml",
            "web_port: 80\np_default: role_defaults\np_inv: role_defaults\n\
             p_play: role_defaults\np_rolevars: role_defaults\np_param: role_defaults\n",
        )
        .file(
            "roles/web/vars/main.yml",
            "p_rolevars: role_vars\np_param: role_vars\n",
        )
        .file("roles/web/meta/main.yml", "dependencies:\n  - common\n")
        .file(
            "roles/web/tasks/main.yml",
            "- shell: echo {{ role_name }} >> ~/order.log
- name: motd from the role's files
  copy:
    src: motd
    dest: ~/motd
  notify: restart web
- name: conf from the role's templates
  template:
    src: conf.j2
    dest: ~/web.conf
",
        )
        .file(
            "roles/web/tasks/extra.yml",
            "- shell: echo web-extra >> ~/order.log\n",
        )
        .file("roles/web/files/motd", "motd from the role\n")
        .file("files/motd", "motd from the playbook\n")
        .file("roles/web/templates/conf.j2", CONF_TEMPLATE)
        .file(
            "roles/web/handlers/main.yml",
            "- name: restart web
  copy:
    content: \"restarted on {{ web_port }}\\n\"
    dest: ~/restarted
",
        )
        .file(
            "tasks/more.yml",
            "- shell: echo {{ what }} >> ~/order.log\n- copy: {src: beside.txt, dest: ~/beside}\n",
        )
        .file(
            "tasks/files/beside.txt",
            "found beside the imported tasks file\n",
        )
        .file(
            "sub/second.yml",
            "- name: imported play
  hosts: all
  gather_facts: false
  tasks:
    - shell: echo second >> ~/order.log
    - copy:
        src: note
        dest: ~/note
",
        )
        .file("sub/files/note", "note beside the imported playbook\n")
}

#[track_caller]
fn read(out: &Outcome, home: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(home.join(name))
        .unwrap_or_else(|e| panic!("{name}: {e}\n{}\n{}", out.stdout, out.stderr))
}

#[test]
fn a_role_with_defaults_vars_files_templates_handlers_and_a_dependency() {
    let hosts = LocalHosts::new(&["web1"]);
    let out = role_run(&hosts).run();
    out.assert_code(0);
    let home = hosts.home();
    assert_eq!(
        read(&out, home, "order.log"),
        "pre\ncommon\nweb\nimported\nweb-extra\nsecond\n"
    );
    assert_eq!(read(&out, home, "motd"), "motd from the role\n");
    assert_eq!(
        read(&out, home, "web.conf"),
        "default=role_defaults
inventory=inventory
play=play
role_vars=role_vars
param=param
role=web web
"
    );
    assert_eq!(read(&out, home, "restarted"), "restarted on 80\n");
    assert_eq!(read(&out, home, "outside"), "role_defaults role_vars\n");
    assert_eq!(
        read(&out, home, "note"),
        "note beside the imported playbook\n"
    );
    assert_eq!(
        read(&out, home, "beside"),
        "found beside the imported tasks file\n"
    );
    // 9 tasks + the handler (once) in the first play, 2 in the imported one.
    let recap = out.recap("web1");
    assert_eq!(
        (recap.ok, recap.changed, recap.failed),
        (12, 12, 0),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("RUNNING HANDLER [web : restart web]"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("TASK [web : motd from the role's files]"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("TASK [common : shell]"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("PLAY [imported play]"),
        "{}",
        out.stdout
    );

    // Run again: files are in place, only the shell tasks change; no handler runs.
    let again = role_run(&hosts).run();
    again.assert_code(0);
    let recap = again.recap("web1");
    assert_eq!((recap.ok, recap.changed), (11, 6), "{}", again.stdout);
    assert!(
        !again.stdout.contains("RUNNING HANDLER"),
        "{}",
        again.stdout
    );
}

#[test]
fn a_missing_role_stops_before_connecting() {
    let out = TestRun::new()
        .playbook("- hosts: all\n  roles:\n    - role: nope\n")
        .inventory("h ansible_host=127.0.0.1 ansible_port=1\n")
        .run();
    assert_ne!(out.code, 0);
    let dir = out_dir_text(&out);
    assert!(
        dir.contains("site.yml:3:13: The role 'nope' was not found in: "),
        "{dir}"
    );
    assert!(dir.contains("3 |     - role: nope"), "{dir}");
    // Without roles_path, Ansible's default one is searched (where ansible-galaxy installs).
    assert!(
        dir.contains("controller-home/.ansible/roles:/usr/share/ansible/roles:/etc/ansible/roles:"),
        "{dir}"
    );
}

#[test]
fn a_missing_imported_tasks_file_names_the_import() {
    let out = TestRun::new()
        .playbook("- hosts: all\n  tasks:\n    - import_tasks: nowhere.yml\n")
        .inventory("h ansible_host=127.0.0.1 ansible_port=1\n")
        .run();
    assert_ne!(out.code, 0);
    let text = out_dir_text(&out);
    assert!(
        text.contains("site.yml:3:21: could not find or access 'nowhere.yml'"),
        "{text}"
    );
}

fn out_dir_text(out: &Outcome) -> String {
    format!("{}{}", out.stdout, out.stderr)
}

/// Handlers of the same name: a notification by name reaches only the last one loaded
/// (Ansible documents it: it shadows the earlier ones), here the play's own over the
/// `roles:` role's, and an `import_role`'s over the play's; a `listen` topic reaches every
/// listener. ansible-playbook 2.21 printed "play" and "imported" for these, and both
/// listeners.
#[test]
fn a_handler_loaded_later_under_the_same_name_shadows_the_earlier() {
    let hosts = LocalHosts::new(&["web1"]);
    let run = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  roles: [r]
  handlers:
    - name: h
      shell: echo play >> ~/handlers.log
    - name: g
      shell: echo play-g >> ~/handlers.log
    - name: one listener
      listen: topic
      shell: echo listener-1 >> ~/handlers.log
  tasks:
    - command: 'true'
      notify: [h, g, topic]
    - import_role:
        name: later
",
        )
        .local_hosts(&hosts)
        .file("roles/r/tasks/main.yml", "- command: 'true'\n")
        .file(
            "roles/r/handlers/main.yml",
            "- name: h\n  shell: echo role >> ~/handlers.log\n",
        )
        .file(
            "roles/later/handlers/main.yml",
            "- name: g\n  shell: echo imported >> ~/handlers.log\n- name: two listener\n  listen: topic\n  shell: echo listener-2 >> ~/handlers.log\n",
        );
    let out = run.run();
    out.assert_code(0);
    let log = std::fs::read_to_string(hosts.home().join("handlers.log")).expect("handlers.log");
    assert_eq!(
        log, "play\nlistener-1\nimported\nlistener-2\n",
        "{}",
        out.stdout
    );
}

/// The role-name magic variables: the play's own roles, their dependencies, and the roles
/// that import or include the running one, as Ansible's special_vars target checks them.
#[test]
fn role_name_variables_tell_play_roles_dependencies_and_parents_apart() {
    let hosts = LocalHosts::new(&["h1"]);
    let out = TestRun::new()
        .playbook(
            "- hosts: all
  gather_facts: false
  roles: [app]
",
        )
        .file("roles/base/tasks/main.yml", "- debug: msg=base\n")
        .file("roles/app/meta/main.yml", "dependencies: [base]\n")
        .file(
            "roles/app/tasks/main.yml",
            "- copy:
    dest: ~/names
    content: \"{{ role_names }} {{ ansible_dependent_role_names }} {{ ansible_role_names }} {{ ansible_parent_role_names is defined }}\\n\"
- include_role:
    name: helper
",
        )
        .file(
            "roles/helper/tasks/main.yml",
            "- copy:
    dest: ~/parents
    content: \"{{ ansible_parent_role_names }} {{ ansible_parent_role_paths | map('basename') | list }}\\n\"
",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(0);
    assert_eq!(
        read(&out, hosts.home(), "names"),
        "['app'] ['base'] ['app', 'base'] False\n"
    );
    assert_eq!(read(&out, hosts.home(), "parents"), "['app'] ['app']\n");
}

#[test]
fn a_dependency_sees_its_dependents_vars_below_its_own_dependencies_vars() {
    let hosts = LocalHosts::new(&["a"]);
    let out = TestRun::new()
        .playbook("- hosts: all\n  gather_facts: false\n  roles: [A, B]\n")
        .local_hosts(&hosts)
        .file(
            "roles/A/meta/main.yml",
            "dependencies:\n  - role: common\n    vars: {test_var: A}\n",
        )
        .file(
            "roles/B/meta/main.yml",
            "dependencies:\n  - role: common\n    vars: {test_var: B}\n",
        )
        .file("roles/common/vars/main.yml", "precedence: parent\n")
        .file(
            "roles/common/meta/main.yml",
            "dependencies:\n  - role: nested\n    vars: {nested_var: \"{{ test_var }}\"}\n",
        )
        .file(
            "roles/nested/meta/main.yml",
            "allow_duplicates: true\ndependencies: [child]\n",
        )
        .file(
            "roles/nested/tasks/main.yml",
            "- debug: msg=\"{{ nested_var }} {{ precedence }}\"\n",
        )
        .file("roles/child/vars/main.yml", "precedence: dependency\n")
        .run();
    out.assert_code(0);
    // The parent's `vars:` reach the dependency's templates, and the dependency's own
    // dependency's vars/main.yml win over its parent's.
    assert_contains(&out, "\"msg\": \"A dependency\"");
    assert_contains(&out, "\"msg\": \"B dependency\"");
}

/// ansible-playbook 2.21.5: the play's run keywords are its `roles:` tasks' too (as its
/// tasks'): `no_log` censors the role's result, `timeout` stops its command.
#[test]
fn the_plays_run_keywords_reach_the_tasks_of_its_roles() {
    let hosts = LocalHosts::new(&["h"]);
    let out = TestRun::new()
        .file(
            "roles/r/tasks/main.yml",
            "- debug: msg=role-secret\n- command: sleep 5\n",
        )
        .playbook(
            "- hosts: all\n  gather_facts: false\n  no_log: true\n  timeout: 1\n  roles: [r]\n",
        )
        .local_hosts(&hosts)
        .run();
    out.assert_code(2);
    assert!(
        !out.stdout.contains("\"msg\": \"role-secret\""),
        "{}",
        out.stdout
    );
    assert_contains(
        &out,
        "the output has been hidden due to the fact that 'no_log: true'",
    );
    let recap = out.recap("h");
    assert_eq!((recap.ok, recap.failed), (1, 1), "{}", out.stdout);
}
