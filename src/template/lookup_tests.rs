//! The data-file, password, config and choice lookups through `Templar`, against files
//! in a scratch playbook directory.

use serde_json::{Value, json};

use super::Templar;
use minijinja::Value as MjValue;

struct Playbook {
    dir: tempfile::TempDir,
    templar: Templar,
}

impl Playbook {
    fn new(files: &[(&str, &[u8])]) -> Playbook {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("files")).unwrap();
        for (name, content) in files {
            std::fs::write(dir.path().join("files").join(name), content).unwrap();
        }
        Playbook {
            dir,
            templar: Templar::new(),
        }
    }

    fn vars(&self, extra: Value) -> MjValue {
        let mut vars = json!({"playbook_dir": self.dir.path().display().to_string()});
        if let (Some(vars), Value::Object(extra)) = (vars.as_object_mut(), extra) {
            vars.extend(extra);
        }
        MjValue::from_serialize(vars)
    }

    fn value(&self, expr: &str) -> Value {
        self.value_with(expr, json!({}))
    }

    fn value_with(&self, expr: &str, extra: Value) -> Value {
        self.templar
            .render_value(&json!(format!("{{{{ {expr} }}}}")), &self.vars(extra))
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
    }

    fn error(&self, expr: &str) -> String {
        match self
            .templar
            .render_value(&json!(format!("{{{{ {expr} }}}}")), &self.vars(json!({})))
        {
            Ok(v) => panic!("{expr}: expected an error, got {v}"),
            Err(e) => e.to_string(),
        }
    }
}

const INI: &[u8] = b"[global]\n# comment\nvalue1=Text one\nunicode=\xc3\xa9t\xc3\xa9\n\n[section1]\nvalue1=s1/v1\nvalue2=s1/v2\nother=x\n[paths]\nhome: /Users\ndir: %(home)s/me\nraw = run %u\n";

#[test]
fn ini_values_sections_regexes_and_properties() {
    let p = Playbook::new(&[
        ("lookup.ini", INI),
        ("my.properties", b"a.b = one\nname = two\n"),
        ("latin.ini", b"[global]\nf=\xe9t\xe9\n"),
        ("flags.ini", b"[m]\nuser = me\nskip-innodb\n"),
    ]);
    assert_eq!(
        p.value("lookup('ini', 'value1', file='lookup.ini', section='global')"),
        json!("Text one")
    );
    assert_eq!(
        p.value("lookup('ini', 'VALUE1', file='lookup.ini')"),
        json!("Text one")
    );
    assert_eq!(
        p.value("lookup('ini', 'unicode file=lookup.ini')"),
        json!("été")
    );
    assert_eq!(
        p.value("lookup('ini', 'value[1-2] section=section1 file=lookup.ini re=true')"),
        json!("s1/v1,s1/v2")
    );
    assert_eq!(
        p.value("lookup('ini', 'nope', file='lookup.ini', default='dflt')"),
        json!("dflt")
    );
    assert_eq!(
        p.value("lookup('ini', 'dir', file='lookup.ini', section='paths')"),
        json!("/Users/me")
    );
    assert_eq!(
        p.value("lookup('ini', 'raw', file='lookup.ini', section='paths', interpolation=false)"),
        json!("run %u")
    );
    assert_eq!(
        p.value("lookup('ini', 'a.b', type='properties', file='my.properties')"),
        json!("one")
    );
    assert_eq!(
        p.value("lookup('ini', 'f encoding=iso8859-1 file=latin.ini')"),
        json!("été")
    );
    assert_eq!(
        p.value("lookup('ini', 'skip-innodb', file='flags.ini', section='m', allow_none=True)"),
        json!([])
    );
    assert_eq!(
        p.value("query('ini', 'value1', file='lookup.ini', section='section1')"),
        json!(["s1/v1"])
    );
    assert!(
        p.error("lookup('ini', 'user', file='flags.ini', section='m')")
            .contains("Source contains parsing errors")
    );
    assert!(
        p.error("lookup('ini', 'x', file='lookup.ini', section='missing')")
            .contains("No section 'missing' in 'lookup.ini'.")
    );
    assert!(p.error("lookup('ini', 'file=lookup.ini', 'value1')").contains("No key to look up was provided as first term within string inline options: file=lookup.ini"));
    assert!(
        p.error("lookup('ini', 'invalid=option')")
            .contains("'invalid' is not a valid option.")
    );
    assert!(
        p.error("lookup('ini', 'raw', file='lookup.ini', section='paths')")
            .contains("'%' must be followed by '%' or '(', found: '%u'")
    );
}

const PEOPLE: &[u8] = b"# Last,First,Email\nSmith,Jane,jsmith@example.com\n\"German von Lastname\",Demo,x\n\"\"\"The Rock\"\" Johnson\",Dwayne,y\r\n";

#[test]
fn csvfile_keys_columns_and_defaults() {
    let p = Playbook::new(&[
        ("people.csv", PEOPLE),
        ("tabs.csv", b"fruit\tbananas\nelectronics\ttvs\n"),
    ]);
    assert_eq!(
        p.value("lookup('csvfile', 'Smith', file='people.csv', delimiter=',', col=1)"),
        json!("Jane")
    );
    assert_eq!(
        p.value("lookup('csvfile', 'Jane', file='people.csv', delimiter=',', col=0, keycol=1)"),
        json!("Smith")
    );
    assert_eq!(
        p.value("lookup('csvfile', 'German von Lastname file=people.csv delimiter=, col=1')"),
        json!("Demo")
    );
    assert_eq!(
        p.value("lookup('csvfile', '\"The Rock\" Johnson file=people.csv delimiter=, col=1')"),
        json!("Dwayne")
    );
    assert_eq!(
        p.value("lookup('csvfile', 'fruit', file='tabs.csv', col=1)"),
        json!("bananas")
    );
    assert_eq!(
        p.value("lookup('csvfile', 'electronics', 'fruit', file='tabs.csv', delimiter='TAB', col=1, wantlist=True)"),
        json!(["tvs", "bananas"])
    );
    assert_eq!(
        p.value("lookup('csvfile', 'notfound file=people.csv delimiter=, col=2')"),
        json!([])
    );
    assert_eq!(
        p.value(
            "lookup('csvfile', 'notfound', file='people.csv', delimiter=',', default=['a', 'b'])"
        ),
        json!("a,b")
    );
    assert!(
        p.error("lookup('csvfile', 'file=people.csv, delimiter=, col=1')")
            .contains("Search key is required but was not found")
    );
    assert!(
        p.error("lookup('csvfile', 'foo file=people.csv thisarg=x')")
            .contains("'thisarg' is not a valid option")
    );
    assert!(
        p.error("lookup('csvfile', 'x file=people.csv delimiter=, col=2,')")
            .contains("has an invalid value")
    );
    assert!(
        p.error("lookup('csvfile', 'x', file='nope.csv')")
            .contains("expected str, bytes or os.PathLike object, not NoneType")
    );
}

#[test]
fn password_files_seeds_and_salts() {
    use std::os::unix::fs::PermissionsExt;
    let p = Playbook::new(&[]);
    let first = p.value("lookup('password', 'creds/db length=8 chars=digits')");
    let text = first.as_str().unwrap();
    assert!(
        text.len() == 8 && text.chars().all(|c| c.is_ascii_digit()),
        "{text}"
    );
    let file = p.dir.path().join("creds/db");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("{text}\n"));
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&file), mode(file.parent().unwrap())), (0o600, 0o700));
    assert_eq!(p.value("lookup('password', 'creds/db length=8')"), first);
    let hashed = p.value("lookup('password', 'creds/db encrypt=sha512_crypt')");
    let stored = std::fs::read_to_string(&file).unwrap();
    let salt = stored
        .trim_end()
        .strip_prefix(&format!("{text} salt="))
        .unwrap();
    assert!(
        hashed
            .as_str()
            .unwrap()
            .starts_with(&format!("$6$rounds=656000${salt}$"))
    );
    assert_eq!(p.value("lookup('password', 'creds/db')"), first);
    let seeded = p.value("lookup('password', '/dev/null', seed='foo')");
    assert_eq!(p.value("lookup('password', '/dev/null seed=foo')"), seeded);
    assert_eq!(seeded.as_str().unwrap().len(), 20);
    assert_ne!(
        p.value("lookup('password', '/dev/null')"),
        p.value("lookup('password', '/dev/null')")
    );
    assert!(
        p.error("lookup('password', '/dev/null lenght=3')")
            .contains("Unrecognized parameter(s) given to password lookup: lenght")
    );
}

#[test]
fn config_settings_plugins_and_origins() {
    let p = Playbook::new(&[]);
    assert_eq!(
        p.value("'meow' in lookup('config', 'ANSIBLE_COW_ACCEPTLIST')"),
        json!(true)
    );
    assert_eq!(
        p.value("lookup('config', 'ANSIBLE_HOME') == lookup('config', '_Z_TEST_ENTRY_3')"),
        json!(true)
    );
    assert_eq!(
        p.value("lookup('config', '_Z_TEST_ENTRY', show_origin=True)"),
        json!([null, "default"])
    );
    assert_eq!(
        p.value_with(
            "lookup('config', '_Z_TEST_ENTRY', show_origin=True)",
            json!({"_z_test_entry": "yolo"})
        ),
        json!(["yolo", "var: _z_test_entry"])
    );
    assert_eq!(
        p.value_with(
            "q('config', 'remote_user', 'port', plugin_type='connection', plugin_name='ssh')",
            json!({"ansible_ssh_user": "lola", "ansible_ssh_port": "2022"})
        ),
        json!(["lola", 2022])
    );
    assert_eq!(
        p.value_with(
            "q('config', 'become_flags', 'become_exe', 'sudo_chdir', plugin_type='become', plugin_name='sudo')",
            json!({"ansible_sudo_exe": "/tmp/shim"})
        ),
        json!(["-H -S -n", "/tmp/shim", null])
    );
    assert_eq!(
        p.value("q('config', 'become_user', 'become_flags', 'prompt_l10n', plugin_type='become', plugin_name='ansible.builtin.su')"),
        json!(["root", "", []])
    );
    assert_eq!(p.value("q('config', 'NOPE', on_missing='skip')"), json!([]));
    assert!(
        p.error("lookup('config', 'NOPE')")
            .contains("No config definition exists for 'NOPE'.")
    );
    assert!(
        p.error("lookup('config', 'NOPE', on_missing='boo')")
            .contains("Invalid value 'boo'")
    );
    assert!(
        p.error("lookup('config', 1337)").contains(
            "Invalid setting identifier, 1337 is not a <class 'str'>, its a <class 'int'>."
        )
    );
    assert!(
        p.error("q('config', 'x', plugin_type='shell')")
            .contains("Both plugin_type and plugin_name")
    );
    assert!(
        p.error("q('config', 'x', plugin_type='lookup', plugin_name='config')")
            .contains("No config definition exists for 'x' for 'config' lookup plugin.")
    );
    assert!(
        p.error("q('config', 'x', plugin_type='lookup', plugin_name='no.such.plugin')")
            .contains("Unable to load lookup plugin 'no.such.plugin'.")
    );
    std::fs::create_dir_all(p.dir.path().join("lookup_plugins")).unwrap();
    std::fs::write(
        p.dir.path().join("lookup_plugins/bogus.py"),
        "DOCUMENTATION = \"\"\"\n    name: bogus\n    options:\n        test_list:\n            type: string\n            required: True\n        other:\n            default: 3\n            type: int\n\"\"\"\n",
    )
    .unwrap();
    assert!(
        p.error("q('config', 'test_list', plugin_type='lookup', plugin_name='bogus')")
            .contains("Required config 'test_list' for 'bogus' lookup plugin not provided.")
    );
    assert_eq!(
        p.value("q('config', 'other', plugin_type='lookup', plugin_name='bogus')"),
        json!([3])
    );
}

#[test]
fn choices_variables_and_their_refusals() {
    let p = Playbook::new(&[]);
    let picked = p.value("lookup('random_choice', 'a', 'b', 'c')");
    assert!(["a", "b", "c"].contains(&picked.as_str().unwrap()));
    assert_eq!(p.value("query('random_choice')"), json!([]));
    assert_eq!(
        p.value_with("lookup('vars', 'x')", json!({"x": 1})),
        json!(1)
    );
    assert!(
        p.error("lookup('vars', 'doesnotexist')")
            .contains("No variable named 'doesnotexist' was found.")
    );
    assert!(
        p.error("lookup('vars', 42)")
            .contains("Variable name must be 'str' not 'int'.")
    );
    assert!(
        p.error("lookup('dict', 1)").contains(
            "the 'dict' lookup plugin expects a dictionary, got '1' of type <class 'int'>)"
        )
    );
    assert!(
        p.error("lookup('varnames', True)").contains(
            "Invalid setting identifier, \"True\" is not a string, it is a <class 'bool'>"
        )
    );
    assert!(
        p.error("lookup('varnames', '*')")
            .contains("nothing to repeat at position 0")
    );
    assert_eq!(p.value("lookup('fileglob', 'nothing-here/*')"), json!([]));
}

#[test]
fn sequence_takes_its_options_as_keywords_too() {
    let p = Playbook::new(&[]);
    assert_eq!(
        p.value("query('ansible.builtin.sequence', count=3, start=10)"),
        json!(["10", "11", "12"])
    );
    assert_eq!(
        p.value("query('sequence', 'end=4', start=3, format='x%d')"),
        json!(["x3", "x4"])
    );
}

#[test]
fn combining_lookups_run_in_templates_as_in_loops() {
    let p = Playbook::new(&[]);
    assert_eq!(
        p.value("lookup('indexed_items', ['a', 'b'])"),
        json!([[0, "a"], [1, "b"]])
    );
    assert_eq!(
        p.value("query('nested', ['a', 'b'], [1])"),
        json!([["a", 1], ["b", 1]])
    );
    assert_eq!(
        p.value("query('together', ['a', 'b'], [1])"),
        json!([["a", 1], ["b", null]])
    );
}

/// A bare pattern looks in each search directory (its `files/` first) until one has a
/// match: a file beside the playbook is found though `files/` exists.
#[test]
fn fileglob_tries_each_search_directory_until_one_matches() {
    let p = Playbook::new(&[("in_files.txt", b"x")]);
    std::fs::write(p.dir.path().join("beside.txt"), "y").unwrap();
    let beside = p.dir.path().join("beside.txt").display().to_string();
    assert_eq!(p.value("query('fileglob', 'beside.*')"), json!([beside]));
    let in_files = p
        .dir
        .path()
        .join("files/in_files.txt")
        .display()
        .to_string();
    assert_eq!(p.value("query('fileglob', '*.txt')"), json!([in_files]));
}

/// The template lookup as the lookup_template target uses it: includes found in
/// `templates/`, other delimiters, `ansible_managed`, and None for no content.
#[test]
fn template_lookup_includes_delimiters_and_empty_results() {
    let p = Playbook::new(&[]);
    let templates = p.dir.path().join("templates");
    std::fs::create_dir_all(&templates).unwrap();
    for (name, text) in [
        ("hello.txt", "Hello {% include 'world.txt' %}!\n"),
        ("world.txt", "world"),
        ("hello_string.txt", "Hello [% my_var %]!\n"),
        ("hello_comment.txt", "[# x #]Hello {{ my_var }}!\n"),
        ("managed.j2", "{{ ansible_managed }}"),
        ("none.j2", "{# nothing #}\n"),
    ] {
        std::fs::write(templates.join(name), text).unwrap();
    }
    let my_var = json!({"my_var": "world"});
    assert_eq!(
        p.value("lookup('template', 'hello.txt')"),
        json!("Hello world!\n")
    );
    assert_eq!(
        p.value_with(
            "lookup('template', 'hello_string.txt', variable_start_string='[%', variable_end_string='%]')",
            my_var.clone()
        ),
        json!("Hello world!\n")
    );
    assert_eq!(
        p.value_with(
            "lookup('template', 'hello_comment.txt', comment_start_string='[#', comment_end_string='#]')",
            my_var
        ),
        json!("Hello world!\n")
    );
    assert_eq!(
        p.value("lookup('template', 'managed.j2')"),
        json!("Ansible managed")
    );
    assert_eq!(
        p.value_with(
            "lookup('template', 'managed.j2')",
            json!({"ansible_managed": "mine"})
        ),
        json!("mine")
    );
    assert_eq!(p.value("lookup('template', 'none.j2')"), json!(null));
}
