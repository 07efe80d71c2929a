use super::super::*;
use crate::playbook::test_support::tree::*;
use serde_json::{Value as Json, json};

#[test]
fn roles_run_after_pre_tasks_with_dependencies_first_and_once() {
    let dir = tree(ROLE_FILES);
    std::fs::write(
        dir.path().join("site.yml"),
        "- hosts: all
  tasks:
    - name: own task
      ping:
  roles:
    - web
    - role: web
      vars: {port: 8080}
      extra: 1
    - web
  pre_tasks:
    - name: pre
      ping:
  handlers:
    - name: play handler
      ping:
",
    )
    .unwrap();
    let pb = load(&dir).unwrap_or_else(|e| panic!("{e}"));
    let play = &pb.plays[0];
    assert_eq!(
        names(&play.tasks),
        [
            "pre",
            "common task",
            "web task",
            "web extra",
            // different parameters: the role runs again, its dependency does not
            "web task",
            "web extra",
            "own task",
        ]
    );
    let written: Vec<_> = play.tasks.iter().filter(|t| !t.implicit).collect();
    let web = written[2].role.as_ref().unwrap();
    assert_eq!(web.name, "web");
    assert_eq!(web.path, dir.path().join("roles/web"));
    assert_eq!(
        Json::Object(web.defaults.clone()),
        json!({"port": 80, "level": "default"})
    );
    assert_eq!(Json::Object(web.vars.clone()), json!({"level": "role"}));
    let again = written[4].role.as_ref().unwrap();
    assert_eq!(Json::Object(again.vars.clone()), json!({"level": "role"}));
    assert_eq!(
        Json::Object(again.keyword_vars.clone()),
        json!({"port": 8080})
    );
    let public: Vec<&str> = play.roles.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(public, ["common", "web", "web"]);
    assert_eq!(Json::Object(again.params.clone()), json!({"extra": 1}));
    let common = written[1].role.as_ref().unwrap();
    assert_eq!(
        Json::Object(common.params.clone()),
        json!({"greeting": "hi"})
    );
    assert!(written[0].role.is_none() && written[6].role.is_none());
    // The imported file inside the role: its own location, the role's identity.
    assert!(
        written[3]
            .location
            .to_string()
            .ends_with("roles/web/tasks/extra.yml:1:3")
    );
    assert_eq!(written[3].role.as_ref().unwrap().name, "web");
    // `roles:` handlers (once per role) come before the play's own.
    assert_eq!(names(&play.handlers), ["restart web", "play handler"]);
    assert_eq!(play.handlers[0].display_name(), "web : restart web");
    // A role's handler answers to its name and to `role : name`.
    let handler = &play.handlers[0];
    assert!(handler.answers_to("restart web") && handler.answers_to("web : restart web"));
    assert!(handler.answers_to("web:restart web") && !handler.answers_to("common : restart web"));
    assert!(!play.handlers[1].answers_to("web : play handler"));
    // The last use of the role brings its handlers, with its variables.
    let handler_role = play.handlers[0].role.as_ref().unwrap();
    assert_eq!(
        Json::Object(handler_role.params.clone()),
        json!({"extra": 1})
    );
    assert!(play.handlers[0].role.is_some() && play.handlers[1].role.is_none());
}

#[test]
fn missing_roles_and_bad_entries_are_load_errors() {
    let dir = tree(&[("site.yml", "- hosts: all\n  roles:\n    - nope\n")]);
    let e = load(&dir).unwrap_err();
    let text = tail(&e, &dir);
    assert!(
        text.starts_with("DIR/site.yml:3:7: The role 'nope' was not found in: DIR/roles:DIR\n"),
        "{text}"
    );
    assert!(text.contains("3 |     - nope"), "{text}");
    let dir = tree(&[
        ("site.yml", "- hosts: all\n  roles:\n    - a\n"),
        ("roles/a/meta/main.yml", "dependencies:\n  - {role: b}\n"),
    ]);
    let e = load(&dir).unwrap_err();
    assert!(
        tail(&e, &dir).starts_with(
            "DIR/roles/a/meta/main.yml:2:12: The role 'b' was not found in: DIR/roles:DIR\n"
        ),
        "{e}"
    );
    let dir = tree(&[("site.yml", "- hosts: all\n  roles:\n    - 42\n")]);
    let e = load(&dir).unwrap_err();
    assert_eq!(
        (
            e.message.as_str(),
            e.span.unwrap().line,
            e.span.unwrap().column
        ),
        (
            "a role entry must be a role name or a mapping, got an integer",
            3,
            7
        )
    );
    std::fs::write(
        dir.path().join("site.yml"),
        "- hosts: all\n  roles:\n    - vars: {a: 1}\n",
    )
    .unwrap();
    let e = load(&dir).unwrap_err();
    assert_eq!(e.message, "a role entry needs `role:` (the role's name)");
    std::fs::write(dir.path().join("site.yml"), "- hosts: all\n  roles: web\n").unwrap();
    assert_eq!(
        load(&dir).unwrap_err().message,
        "A malformed role declaration was encountered: ds ('web') should be a list but was a <class 'str'>"
    );
}

#[test]
fn roles_path_is_searched_between_roles_dir_and_playbook_dir() {
    let shared = tempfile::tempdir().unwrap();
    let role = shared.path().join("r/tasks");
    std::fs::create_dir_all(&role).unwrap();
    std::fs::write(role.join("main.yml"), "- name: shared\n  ping:\n").unwrap();
    let dir = tree(&[
        ("site.yml", "- hosts: all\n  roles: [r]\n"),
        ("r/tasks/main.yml", "- name: beside the playbook\n  ping:\n"),
    ]);
    let site = dir.path().join("site.yml");
    let options = LoadOptions {
        roles_path: vec![shared.path().to_path_buf()],
        ..LoadOptions::default()
    };
    let pb = load_playbooks(&site, &options).unwrap();
    assert_eq!(names(&pb[0].plays[0].tasks), ["shared"]);
    let pb = load_playbooks(&site, &LoadOptions::default()).unwrap();
    assert_eq!(names(&pb[0].plays[0].tasks), ["beside the playbook"]);
}

#[test]
fn collection_roles_are_found_by_their_fqcn_and_find_their_siblings() {
    let colls = tree(&[
        (
            "ansible_collections/ns/coll/roles/app/tasks/main.yml",
            "- name: app\n  ping:\n- ansible.builtin.import_role: {name: helper}\n",
        ),
        (
            "ansible_collections/ns/coll/roles/app/meta/main.yml",
            "dependencies: [base]\n",
        ),
        (
            "ansible_collections/ns/coll/roles/base/tasks/main.yml",
            "- name: collection base\n  ping:\n",
        ),
        (
            "ansible_collections/ns/coll/roles/helper/tasks/main.yml",
            "- name: collection helper\n  ping:\n",
        ),
    ]);
    let dir = tree(&[
        (
            "site.yml",
            "- hosts: all\n  roles: [ns.coll.app]\n  tasks:\n    - include_role: {name: ns.coll.helper}\n",
        ),
        // A short name inside the collection means the collection's role, not this.
        (
            "roles/base/tasks/main.yml",
            "- name: playbook base\n  ping:\n",
        ),
    ]);
    let options = LoadOptions {
        collections_path: vec![colls.path().to_path_buf()],
        ..LoadOptions::default()
    };
    let pb = load_playbooks(&dir.path().join("site.yml"), &options).unwrap();
    let play = &pb[0].plays[0];
    assert_eq!(
        names(&play.tasks),
        [
            "collection base",
            "app",
            "collection helper",
            "include_role"
        ]
    );
    let app = play.tasks[1].role.as_ref().unwrap();
    assert_eq!(
        app.path,
        colls.path().join("ansible_collections/ns/coll/roles/app")
    );

    let err = load_playbooks(&dir.path().join("site.yml"), &LoadOptions::default())
        .unwrap_err()
        .to_string()
        .replace(&dir.path().display().to_string(), "DIR");
    assert!(
        err.starts_with(
            "DIR/site.yml:2:11: The role 'ns.coll.app' was not found in: \
                 DIR/collections/ansible_collections/ns/coll/roles:DIR/roles:DIR\n"
        ),
        "{err}"
    );
    assert!(
        err.contains("help: install the collection ns.coll into a directory of collections_path"),
        "{err}"
    );
}

#[test]
fn a_role_use_with_other_conditions_or_allowed_duplicates_runs_again() {
    let dir = tree(&[
        (
            "site.yml",
            "- hosts: all
  roles:
    - a
    - {role: a, when: x}
    - a
    - d
    - d
",
        ),
        (
            "roles/a/tasks/main.yml",
            "- name: a
  ping:
",
        ),
        (
            "roles/d/tasks/main.yml",
            "- name: d
  ping:
",
        ),
        (
            "roles/d/meta/main.yml",
            "allow_duplicates: yes
",
        ),
    ]);
    let play = load(&dir).unwrap().plays.remove(0);
    assert_eq!(names(&play.tasks), ["a", "a", "d", "d"]);
    assert_eq!(play.tasks[1].when, ["x"]);
}

/// ansible-playbook 2.21 (checked): a role entry's `tags` go to every task of the role
/// and of its dependencies, before the tasks' own; the same role with other tags is
/// another use and runs again; `import_role`'s tags reach its tasks too.
#[test]
fn tags_on_role_entries_and_import_role_reach_every_task() {
    let dir = tree(&[
        (
            "site.yml",
            "- hosts: all
  tags: p
  roles:
    - {role: web, tags: [a, b]}
    - role: web
      tags: c
  tasks:
    - import_role:
        name: common
      tags: i
",
        ),
        (
            "roles/web/tasks/main.yml",
            "- name: web
  ping:
  tags: own
",
        ),
        (
            "roles/web/meta/main.yml",
            "dependencies: [common]
",
        ),
        (
            "roles/common/tasks/main.yml",
            "- name: common
  ping:
",
        ),
    ]);
    let play = load(&dir).unwrap_or_else(|e| panic!("{e}")).plays.remove(0);
    let tags: Vec<(String, Vec<String>)> = play
        .tasks
        .iter()
        .map(|t| (t.name.clone().unwrap(), t.tags.clone()))
        .collect();
    let t = |name: &str, tags: &[&str]| {
        (
            name.to_string(),
            tags.iter().map(|s| s.to_string()).collect(),
        )
    };
    assert_eq!(
        tags,
        [
            t("common", &["p", "a", "b"]),
            t("web", &["p", "a", "b", "own"]),
            t("common", &["p", "c"]),
            t("web", &["p", "c", "own"]),
            t("common", &["p", "i"]),
        ]
    );
    // The dependency is one role use reached under two tag sets: the executor runs
    // the first copy that the tags select (Ansible skips a role that already ran).
    let group = |i: usize| play.tasks[i].role.as_ref().unwrap().once_group;
    assert_eq!(group(0), group(2));
    assert!(group(0).is_some() && group(4).is_none());
    let select = |tags: &str, skip: &str| {
        let list = |s: &str| {
            s.split(' ')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        };
        super::super::select_tasks(
            &play.tasks,
            &super::super::TagFilter::from_args(&list(tags), &list(skip)),
        )
    };
    assert_eq!(select("", ""), [0, 1, 3, 4]);
    assert_eq!(select("c", ""), [2, 3]);
    assert_eq!(select("", "a"), [2, 3, 4]);
    assert_eq!(select("own", ""), [1, 3]);
}

#[test]
fn role_dependency_cycles_are_errors() {
    let dir = tree(&[
        ("site.yml", "- hosts: all\n  roles: [a]\n"),
        ("roles/a/meta/main.yml", "dependencies: [b]\n"),
        ("roles/b/meta/main.yml", "dependencies: [a]\n"),
    ]);
    let e = load(&dir).unwrap_err();
    assert!(
        tail(&e, &dir)
            .starts_with("DIR/roles/b/meta/main.yml:1:16: the role 'a' depends on itself"),
        "{e}"
    );
}

/// A role whose entry point has an argument spec starts with Ansible's check of it
/// (role/__init__.py `_create_validation_task`), unless `rolespec_validate: false`.
#[test]
fn an_argument_spec_puts_its_check_first() {
    let dir = tree(&[
        (
            "roles/r/meta/argument_specs.yml",
            "argument_specs:\n  main:\n    short_description: Main entry.\n    options:\n      x: {type: int, required: true}\n  other:\n    options: {}\n",
        ),
        ("roles/r/tasks/main.yml", "- ping:\n"),
        ("roles/r/tasks/other.yml", "- ping:\n"),
        (
            "site.yml",
            "- hosts: all\n  roles:\n    - role: r\n      x: 1\n  tasks:\n    - import_role: {name: r, tasks_from: other}\n    - import_role: {name: r, rolespec_validate: false}\n",
        ),
    ]);
    let play = &load(&dir).unwrap().plays[0];
    let names: Vec<_> = play.tasks.iter().map(|t| t.banner_name()).collect();
    assert_eq!(
        names,
        [
            "r : Validating arguments against arg spec 'main' - Main entry.",
            "r : ping",
            "r : Validating arguments against arg spec 'other'",
            "r : ping",
            "r : ping",
        ]
    );
    let check = &play.tasks[0];
    assert_eq!(check.tags, ["always"]);
    assert_eq!(check.args["provided_arguments"], json!({"x": 1}));
    assert_eq!(
        check.args["argument_spec"],
        json!({"x": {"type": "int", "required": true}})
    );
    assert_eq!(check.args["validate_args_context"]["name"], json!("r"));
}

#[test]
fn a_collection_roles_argument_spec_context_names_it_by_its_short_name() {
    let colls = tree(&[
        (
            "ansible_collections/ns/coll/roles/app/tasks/main.yml",
            "- ping:\n",
        ),
        (
            "ansible_collections/ns/coll/roles/app/meta/argument_specs.yml",
            "argument_specs:\n  main:\n    options: {}\n",
        ),
    ]);
    let dir = tree(&[("site.yml", "- hosts: all\n  roles: [ns.coll.app]\n")]);
    let options = LoadOptions {
        collections_path: vec![colls.path().to_path_buf()],
        ..LoadOptions::default()
    };
    let pb = load_playbooks(&dir.path().join("site.yml"), &options).unwrap();
    let check = &pb[0].plays[0].tasks[0];
    assert_eq!(check.args["validate_args_context"]["name"], json!("app"));
}
