//! Ansible's documented outputs for the file, env, template, lines, varnames and other
//! lookups and `query`, through `Templar`: files found in the role, then the base directory.

use serde_json::json;

use super::Templar;
use minijinja::Value as MjValue;

#[test]
fn lookups() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path();
    std::fs::create_dir_all(base.join("files")).unwrap();
    std::fs::create_dir_all(base.join("templates")).unwrap();
    std::fs::write(base.join("files/motd.txt"), "welcome\n\n").unwrap();
    std::fs::write(base.join("top.txt"), "top").unwrap();
    std::fs::write(base.join("files/a.conf"), "").unwrap();
    std::fs::write(base.join("files/b.conf"), "").unwrap();
    std::fs::write(base.join("files/c.txt"), "").unwrap();
    std::fs::write(base.join("templates/t.j2"), "name={{ who }}\n").unwrap();
    let vars = MjValue::from_serialize(json!({
        "playbook_dir": base.display().to_string(),
        "who": "alice",
        "h": {"a": 1},
    }));
    let t = Templar::new();
    let r = |s: &str| {
        t.render_str(s, &vars)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    };
    let v = |s: &str| {
        t.render_value(&json!(s), &vars)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    };
    assert_eq!(r("{{ lookup('file', 'motd.txt') }}"), "welcome");
    assert_eq!(r("{{ lookup('file', 'top.txt') }}"), "top");
    assert_eq!(
        r("{{ lookup('file', 'motd.txt', 'top.txt') }}"),
        "welcome,top"
    );
    assert_eq!(v("{{ query('file', 'top.txt') }}"), json!(["top"]));
    assert!(
        t.render_str("{{ lookup('file', 'nope.txt') }}", &vars)
            .is_err()
    );
    // SAFETY of the test: HOME is set for every test process and never changed.
    let home = std::env::var("HOME").unwrap_or_default();
    assert_eq!(r("{{ lookup('env', 'HOME') }}"), home);
    assert_eq!(r("{{ lookup('env', 'TURBO_PLAY_SURELY_UNSET') }}"), "");
    assert_eq!(
        r("{{ lookup('env', 'TURBO_PLAY_SURELY_UNSET', default='d') }}"),
        "d"
    );
    // ansible-core 2.21.5: an undefined default makes the lookup undefined, `undef()`'s
    // saying which variable is not set; the origin of what it returns is the variable.
    let cause = |text: &str| t.render_str(text, &vars).unwrap_err().cause();
    assert_eq!(
        cause("{{ lookup('env', 'TURBO_PLAY_SURELY_UNSET', default=undef()) }}"),
        "The environment variable 'TURBO_PLAY_SURELY_UNSET' is not set."
    );
    assert_eq!(
        cause("{{ lookup('env', 'TURBO_PLAY_SURELY_UNSET', default=undef('custom')) }}"),
        "custom"
    );
    assert_eq!(
        cause("{{ lookup('env', 'TURBO_PLAY_SURELY_UNSET', default=bogus_var) }}"),
        "'bogus_var' is undefined"
    );
    assert_eq!(
        r("{{ lookup('env', 'HOME') | ansible._protomatter.origin }}"),
        "<environment variable 'HOME'>"
    );
    assert!(
        t.render_str("{{ 'written' | ansible._protomatter.origin }}", &vars)
            .is_err()
    );
    assert_eq!(r("{{ lookup('template', 't.j2') }}"), "name=alice\n");
    assert_eq!(
        v("{{ lookup('fileglob', '*.conf', wantlist=True) | map('basename') | list }}"),
        json!(["a.conf", "b.conf"])
    );
    assert_eq!(
        v("{{ query('first_found', ['nope.txt', 'c.txt', 'a.conf']) | map('basename') | list }}"),
        json!(["c.txt"])
    );
    assert_eq!(
        r("{{ lookup('first_found', {'files': ['x', 'a.conf'], 'paths': ['files']}) | basename }}"),
        "a.conf"
    );
    assert!(
        t.render_str("{{ lookup('first_found', ['x', 'y']) }}", &vars)
            .is_err()
    );
    assert_eq!(v("{{ query('first_found', ['x'], skip=True) }}"), json!([]));
    // A role's `include_vars: "{{ item }}"` + `with_first_found` looks in the role's vars/
    // (ansible-role-chrony's vars.yml relies on it); lookup() keeps files/.
    let role = base.join("roles/r");
    std::fs::create_dir_all(role.join("vars")).unwrap();
    std::fs::write(role.join("vars/default.yml"), "").unwrap();
    let in_role = MjValue::from_serialize(json!({
        "playbook_dir": base.display().to_string(),
        "role_path": role.display().to_string(),
    }));
    let terms = json!(["Debian.yml", "default.yml"]);
    assert_eq!(
        t.query_in("first_found", &terms, &in_role, "vars").unwrap(),
        [json!(role.join("vars/default.yml").display().to_string())]
    );
    assert!(t.query("first_found", &terms, &in_role).is_err());
    // A role's tasks file names its siblings (`include_tasks: "{{ lookup('first_found',
    // ...) }}"`): the task's directory is on `ansible_search_path`, and `paths` entries
    // are searched along it too, path by path.
    std::fs::create_dir_all(role.join("tasks")).unwrap();
    std::fs::write(role.join("tasks/default.yml"), "").unwrap();
    let role_task = MjValue::from_serialize(json!({
        "playbook_dir": base.display().to_string(),
        "ansible_search_path": [
            role.display().to_string(),
            role.join("tasks").display().to_string(),
            base.display().to_string(),
        ],
    }));
    let found = role.join("tasks/default.yml").display().to_string();
    assert_eq!(
        t.query("first_found", &terms, &role_task).unwrap(),
        [json!(found)]
    );
    let with_paths = json!([{"files": ["debian.yml", "default.yml"], "paths": ["tasks"]}]);
    assert_eq!(
        t.query("first_found", &with_paths, &in_role).unwrap(),
        [json!(found)]
    );
    assert_eq!(
        r("{{ lookup('pipe', 'echo hi; pwd') }}"),
        format!("hi\n{}", std::fs::canonicalize(base).unwrap().display())
    );
    assert!(
        t.render_str("{{ lookup('pipe', 'exit 3') }}", &vars)
            .is_err()
    );
    assert_eq!(v("{{ query('items', [1, [2]], 3) }}"), json!([1, [2], 3]));
    assert_eq!(
        v("{{ query('sequence', 'start=1 end=3') }}"),
        json!(["1", "2", "3"])
    );
    assert_eq!(r("{{ lookup('sequence', '1-3') }}"), "1,2,3");
    assert_eq!(
        v("{{ query('dict', h) }}"),
        json!([{"key": "a", "value": 1}])
    );
    assert_eq!(
        v("{{ lookup('dict', h) }}"),
        json!({"key": "a", "value": 1})
    );
    assert!(t.render_str("{{ lookup('nope', 'x') }}", &vars).is_err());
    assert_eq!(r("{{ lookup('ansible.builtin.file', 'top.txt') }}"), "top");
    assert_eq!(r("{{ lookup('vars', 'who') }}"), "alice");
    assert_eq!(r("{{ lookup('vars', 'nobody', default='d') }}"), "d");
    assert!(
        t.render_str("{{ lookup('vars', 'nobody') }}", &vars)
            .is_err()
    );
}

#[test]
fn query_runs_a_lookup_for_with_loops() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("files")).unwrap();
    std::fs::write(dir.path().join("files/a.conf"), "").unwrap();
    std::fs::write(dir.path().join("files/b.conf"), "").unwrap();
    let vars = MjValue::from_serialize(json!({"playbook_dir": dir.path().display().to_string()}));
    let t = Templar::new();
    let found = t.query("fileglob", &json!("*.conf"), &vars).unwrap();
    let names: Vec<String> = found
        .iter()
        .map(|p| p.as_str().unwrap().rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(names, ["a.conf", "b.conf"]);
    assert_eq!(
        t.query("sequence", &json!("start=1 end=2"), &vars).unwrap(),
        vec![json!("1"), json!("2")]
    );
    assert_eq!(
        t.query("dict", &json!({"k": 1}), &vars).unwrap(),
        vec![json!({"key": "k", "value": 1})]
    );
    let err = t.query("nope", &json!("x"), &vars).unwrap_err();
    assert!(
        err.to_string()
            .contains("The lookup plugin 'nope' was not found."),
        "{err}"
    );
}

#[test]
fn lookups_of_lines_varnames_and_inventory_hostnames() {
    let vars = MjValue::from_serialize(json!({
        "qz_1": "hello", "qz_2": "world", "qa": "no", "other": 1,
    }));
    let mut t = Templar::new();
    let r = |t: &Templar, s: &str| {
        t.render_str(s, &vars)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    };
    assert_eq!(r(&t, "{{ lookup('lines', 'printf \"a\\nb\"') }}"), "a,b");
    assert_eq!(
        r(&t, "{{ query('lines', 'printf x', 'printf y') }}"),
        "['x', 'y']"
    );
    assert_eq!(r(&t, "{{ lookup('varnames', '^qz_.+') }}"), "qz_1,qz_2");
    assert_eq!(
        r(&t, "{{ query('varnames', 'z_2', '^q') }}"),
        "['qz_2', 'qa', 'qz_1', 'qz_2']"
    );
    // Without the run's inventory (a Templar outside a run) it says so.
    let err = t
        .render_str("{{ query('inventory_hostnames', 'all') }}", &vars)
        .unwrap_err();
    assert!(
        err.to_string().contains("needs the run's inventory"),
        "{err}"
    );
    t.set_host_selector(std::sync::Arc::new(|pattern: &str| match pattern {
        "web" => Ok(vec!["w1".into(), "w2".into()]),
        "web,!w1" => Ok(vec!["w2".into()]),
        other => Err(format!("no such pattern {other}")),
    }));
    assert_eq!(
        r(&t, "{{ query('inventory_hostnames', 'web', '!w1') }}"),
        "['w2']"
    );
    assert_eq!(r(&t, "{{ lookup('inventory_hostnames', 'web') }}"), "w1,w2");
    assert_eq!(r(&t, "{{ query('inventory_hostnames', 'nope[') }}"), "[]");
}

#[test]
fn lookups_look_in_the_role_first() {
    let dir = tempfile::tempdir().unwrap();
    let role = dir.path().join("roles/web");
    std::fs::create_dir_all(role.join("files")).unwrap();
    std::fs::create_dir_all(dir.path().join("files")).unwrap();
    std::fs::write(role.join("files/x.txt"), "role").unwrap();
    std::fs::write(dir.path().join("files/x.txt"), "playbook").unwrap();
    std::fs::write(dir.path().join("files/y.txt"), "playbook y").unwrap();
    let in_role = MjValue::from_serialize(json!({
        "playbook_dir": dir.path().display().to_string(),
        "role_path": role.display().to_string(),
    }));
    let t = Templar::new();
    assert_eq!(
        t.render_str("{{ lookup('file', 'x.txt') }}", &in_role)
            .unwrap(),
        "role"
    );
    assert_eq!(
        t.render_str("{{ lookup('file', 'y.txt') }}", &in_role)
            .unwrap(),
        "playbook y"
    );
}

#[test]
fn lookups_fall_back_to_the_base_dir() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.txt"), "from base\n").unwrap();
    let vars = MjValue::from_serialize(json!({}));
    let t = Templar::with_base_dir(dir.path());
    assert_eq!(t.base_dir(), Some(dir.path()));
    assert_eq!(
        t.render_str("{{ lookup('file', 'x.txt') }}", &vars)
            .unwrap(),
        "from base"
    );
    let mut t = Templar::new();
    assert_eq!(t.base_dir(), None);
    t.set_base_dir(dir.path());
    assert_eq!(
        t.render_str("{{ lookup('file', 'x.txt') }}", &vars)
            .unwrap(),
        "from base"
    );
}
