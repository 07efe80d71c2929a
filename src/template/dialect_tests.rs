//! Ansible's documented outputs for each filter and test, through `Templar` (the lookups'
//! are in `dialect_lookup_tests.rs`).

use serde_json::{Value, json};

use super::{Templar, TemplateError};
use minijinja::Value as MjValue;

fn vars() -> MjValue {
    MjValue::from_serialize(json!({
        "l": [3, 1, 2, 2],
        "d": {"a": 1, "b": {"c": 2}},
        "users": [
            {"name": "alice", "uid": 1001, "admin": true},
            {"name": "bob", "uid": 1002, "admin": false},
        ],
        "s": "Hello World",
        "empty": "",
        "nothing": null,
        "omit": "__omit_place_holder__turbo_play__",
        "ok_result": {"changed": true, "failed": false, "rc": 0},
        "bad_result": {"changed": false, "failed": true, "rc": 2},
        "skip_result": {"changed": false, "skipped": true},
        "loop_result": {"results": [{"changed": false}, {"changed": true}]},
    }))
}

/// Renders to text.
fn r(template: &str) -> String {
    Templar::new()
        .render_str(template, &vars())
        .unwrap_or_else(|e| panic!("{template}: {e}"))
}

/// A lone expression, to its native value, as a value written in YAML is rendered: string
/// constants keep their backslashes (what a double-quoted YAML string leaves of `'\\1'`
/// is `'\1'`, and Ansible hands `\1` to the filter).
fn v(expr: &str) -> Value {
    Templar::new()
        .render_value(&json!(format!("{{{{ {expr} }}}}")), &vars())
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
}

fn err(template: &str) -> TemplateError {
    match Templar::new().render_str(template, &vars()) {
        Ok(out) => panic!("{template}: expected an error, got {out:?}"),
        Err(e) => e,
    }
}

#[test]
fn default_and_its_boolean_form() {
    assert_eq!(r("{{ missing | default('x') }}"), "x");
    assert_eq!(r("{{ missing | d('x') }}"), "x");
    assert_eq!(r("{{ empty | default('x') }}"), "");
    assert_eq!(r("{{ empty | default('x', true) }}"), "x");
    assert_eq!(r("{{ nothing | default('x', true) }}"), "x");
    assert_eq!(v("d.a | default(5)"), json!(1));
}

#[test]
fn default_works_on_undefined_chains() {
    assert_eq!(r("{{ missing.attr | default('x') }}"), "x");
    assert_eq!(r("{{ missing.a.b.c | default('x') }}"), "x");
    assert_eq!(r("{{ d.zz.c | default('x') }}"), "x");
    assert_eq!(r("{{ d['b']['zz'] | d('x') }}"), "x");
    assert_eq!(r("{{ nothing.attr | default('x') }}"), "x");
    assert_eq!(r("{{ d.b.c | default('x') }}"), "2");
    assert_eq!(r("{{ users.0.name | default('x') }}"), "alice");
    assert_eq!(
        r("{% if missing.attr is defined %}y{% else %}n{% endif %}"),
        "n"
    );
    assert_eq!(
        r("{% if d.b.c is defined and d.x.y is undefined %}y{% endif %}"),
        "y"
    );
    assert_eq!(
        r("{% for u in users %}{{ u.shell.path | default('sh') }}{% endfor %}"),
        "shsh"
    );
    let t = Templar::new();
    assert!(
        t.eval_condition("missing.attr is not defined", &vars())
            .unwrap()
    );
    assert!(!t.eval_condition("d.b.zz is defined", &vars()).unwrap());
    // Without default, the chain is still an error naming the missing variable.
    match err("{{ missing.attr }}") {
        TemplateError::Undefined { name, expr, .. } => {
            assert_eq!(name, "missing");
            assert_eq!(expr, "{{ missing.attr }}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn errors_after_a_rewrite_quote_the_users_text() {
    let template = "{{ d.zz.c | default('x') }} {{ nope }}";
    match err(template) {
        TemplateError::Undefined { name, expr, .. } => {
            assert_eq!(name, "nope");
            assert_eq!(expr, template);
        }
        other => panic!("{other:?}"),
    }
    match err("{{ d.zz.c | default(zz.y) }}") {
        TemplateError::Undefined { name, .. } => assert_eq!(name, "zz"),
        other => panic!("{other:?}"),
    }
    let e = Templar::new()
        .eval_condition("d.zz.c is defined or nope", &vars())
        .unwrap_err();
    assert!(
        matches!(&e, TemplateError::Undefined { name, expr, .. } if name == "nope" && expr == "d.zz.c is defined or nope"),
        "{e:?}"
    );
}

#[test]
fn default_omit_gives_the_placeholder() {
    assert_eq!(
        v("missing | default(omit)"),
        json!("__omit_place_holder__turbo_play__")
    );
    assert_eq!(
        v("missing.x | default(omit)"),
        json!("__omit_place_holder__turbo_play__")
    );
}

#[test]
fn mandatory() {
    assert_eq!(r("{{ s | mandatory }}"), "Hello World");
    match err("{{ missing | mandatory }}") {
        TemplateError::Undefined { name, .. } => assert_eq!(name, "missing"),
        other => panic!("{other:?}"),
    }
    let e = err("{{ d.zz | mandatory('set d.zz in group_vars') }}");
    assert!(e.to_string().contains("set d.zz in group_vars"), "{e}");
    let e = err("{{ d.zz.y | mandatory('set d.zz.y') }}");
    assert!(e.to_string().contains("set d.zz.y"), "{e}");
}

#[test]
fn builtin_collection_names() {
    assert_eq!(
        r("{{ d | ansible.builtin.to_json }}"),
        r#"{"a": 1, "b": {"c": 2}}"#
    );
    assert!(
        Templar::new()
            .eval_condition("'2.0' is ansible.builtin.version('1.0', '>')", &vars())
            .unwrap()
    );
}

#[test]
fn type_conversions() {
    assert_eq!(v("'yes' | bool"), json!(true));
    assert_eq!(v("'False' | bool"), json!(false));
    assert_eq!(v("1 | bool"), json!(true));
    // ansible-core 2.21's `bool` filter: no y/t, no surrounding space, 2 is false.
    assert_eq!(v("'y' | bool"), json!(false));
    assert_eq!(v("' yes ' | bool"), json!(false));
    assert_eq!(v("2 | bool"), json!(false));
    assert_eq!(v("1.0 | bool"), json!(true));
    assert_eq!(v("'42' | int"), json!(42));
    assert_eq!(v("'4.7' | int"), json!(4));
    assert_eq!(v("'abc' | int"), json!(0));
    assert_eq!(v("'abc' | int(7)"), json!(7));
    assert_eq!(v("'0x1A' | int(base=16)"), json!(26));
    assert_eq!(v("'1.5' | float"), json!(1.5));
    assert_eq!(v("'x' | float"), json!(0.0));
    assert_eq!(v("5 | string"), json!("5"));
    assert_eq!(r("{{ true | string }}"), "True");
}

#[test]
fn string_filters() {
    assert_eq!(r("{{ s | lower }}"), "hello world");
    assert_eq!(r("{{ s | upper }}"), "HELLO WORLD");
    assert_eq!(r("{{ 'hELLO wORLD' | capitalize }}"), "Hello world");
    assert_eq!(r("{{ s | replace('World', 'There') }}"), "Hello There");
    assert_eq!(r("{{ '  x  ' | trim }}"), "x");
    assert_eq!(r("{{ 'a\nb' | indent(2) }}"), "a\n  b");
    assert_eq!(r("{{ 'a\nb' | indent(2, true) }}"), "  a\n  b");
    assert_eq!(r("[{{ 'abc' | center(6) }}]"), "[ abc  ]");
    assert_eq!(r("[{{ 'ab' | center(5) }}]"), "[  ab ]");
    assert_eq!(v("'a,b,c' | split(',')"), json!(["a", "b", "c"]));
    assert_eq!(v("'a b  c' | split"), json!(["a", "b", "c"]));
}

#[test]
fn regex_filters() {
    assert_eq!(
        r("{{ 'ansible' | regex_replace('^a.*i(.*)$', 'a\\\\1') }}"),
        "able"
    );
    assert_eq!(
        r(r#"{{ 'foobar' | regex_replace('^f.*o(.*)$', '\\1') }}"#),
        "bar"
    );
    assert_eq!(
        r(
            r#"{{ 'localhost:80' | regex_replace('^(?P<host>.+):(?P<port>\\d+)$', '\\g<host>, \\g<port>') }}"#
        ),
        "localhost, 80"
    );
    assert_eq!(r("{{ 'aaa' | regex_replace('a', 'b', count=2) }}"), "bba");
    assert_eq!(
        r("{{ 'ABC' | regex_replace('b', 'x', ignorecase=true) }}"),
        "AxC"
    );
    assert_eq!(
        r("{{ 'costs $5' | regex_replace('\\\\d', '9') }}"),
        "costs $9"
    );
    assert_eq!(
        v("'server1/database42' | regex_search('database[0-9]+')"),
        json!("database42")
    );
    assert_eq!(v("'foo' | regex_search('bar')"), json!(null));
    assert_eq!(
        v(r#"'server1/database42' | regex_search('server([0-9]+)/database([0-9]+)', '\1', '\2')"#),
        json!(["1", "42"])
    );
    assert_eq!(
        v(
            r#"'Our IPs: 10.0.0.1 and 10.0.0.2' | regex_findall('\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b')"#
        ),
        json!(["10.0.0.1", "10.0.0.2"])
    );
    assert_eq!(
        v(r"'a=1 b=2' | regex_findall('(\w)=(\d)')"),
        json!([["a", "1"], ["b", "2"]])
    );
    assert_eq!(
        r("{{ '^f.*o(.*)$' | regex_escape }}"),
        "\\^f\\.\\*o\\(\\.\\*\\)\\$"
    );
    // Look-around and back-references, as Python's `re` (ansible-playbook 2.21) gave them.
    assert_eq!(
        r("{{ 'foo=bar' | regex_replace('(?<==)bar', 'baz') }}"),
        "foo=baz"
    );
    assert_eq!(
        v(r"'price 100USD 7EUR' | regex_findall('\d+(?=USD)')"),
        json!(["100"])
    );
    assert_eq!(
        v(r"'key: key' | regex_search('(?P<k>\w+): (?P=k)', '\g<k>')"),
        json!(["key"])
    );
    assert_eq!(v(r"'xx' is match('(x)\1')"), json!(true));
    assert_eq!(v("'xy' is search('x(?!y)')"), json!(false));
}

#[test]
fn list_filters() {
    assert_eq!(r("{{ l | join(',') }}"), "3,1,2,2");
    assert_eq!(v("l | first"), json!(3));
    assert_eq!(v("l | last"), json!(2));
    assert_eq!(v("l | length"), json!(4));
    assert_eq!(v("[1, 2, 2] | unique"), json!([1, 2]));
    assert_eq!(v("[1, 2] | union([2, 3])"), json!([1, 2, 3]));
    assert_eq!(v("[1, 2, 3] | difference([2])"), json!([1, 3]));
    assert_eq!(v("[1, 2, 3] | intersect([3, 2, 9])"), json!([2, 3]));
    assert_eq!(v("[1, 2] | symmetric_difference([2, 3])"), json!([1, 3]));
    assert_eq!(v("[1, [2, [3, [4]]]] | flatten"), json!([1, 2, 3, 4]));
    assert_eq!(v("[1, [2, [3]]] | flatten(levels=1)"), json!([1, 2, [3]]));
    assert_eq!(v("[1, [2, [3]]] | flatten(1)"), json!([1, 2, [3]]));
    assert_eq!(v("l | sort"), json!([1, 2, 2, 3]));
    assert_eq!(v("l | sort(reverse=true)"), json!([3, 2, 2, 1]));
    assert_eq!(v("l | min"), json!(1));
    assert_eq!(v("l | max"), json!(3));
    assert_eq!(
        v("users | max(attribute='uid')"),
        json!({"name": "bob", "uid": 1002, "admin": false})
    );
    assert_eq!(v("l | sum"), json!(8));
    assert_eq!(v("users | sum(attribute='uid')"), json!(2003));
    assert_eq!(v("['1', '2'] | map('int') | list"), json!([1, 2]));
    assert_eq!(
        v("users | map(attribute='name') | list"),
        json!(["alice", "bob"])
    );
    assert_eq!(v("l | select('gt', 1) | list"), json!([3, 2, 2]));
    assert_eq!(v("l | reject('gt', 1) | list"), json!([1]));
    assert_eq!(
        v("users | selectattr('admin') | map(attribute='name') | list"),
        json!(["alice"])
    );
    assert_eq!(
        v("users | rejectattr('admin') | map(attribute='name') | list"),
        json!(["bob"])
    );
    assert_eq!(
        v("users | selectattr('name', 'match', '^b') | map(attribute='uid') | list"),
        json!([1002])
    );
    assert_eq!(
        v("[1, 2] | zip(['a', 'b']) | list"),
        json!([[1, "a"], [2, "b"]])
    );
}

#[test]
fn dict_filters() {
    assert_eq!(
        v("{'a': 1} | dict2items"),
        json!([{"key": "a", "value": 1}])
    );
    assert_eq!(
        v("{'a': 1} | dict2items(key_name='k', value_name='v')"),
        json!([{"k": "a", "v": 1}])
    );
    assert_eq!(
        v("[{'key': 'a', 'value': 1}, {'key': 'b', 'value': 2}] | items2dict"),
        json!({"a": 1, "b": 2})
    );
    assert_eq!(
        v("[{'n': 'a', 'v': 1}] | items2dict(key_name='n', value_name='v')"),
        json!({"a": 1})
    );
    assert_eq!(
        v("{'a': 1, 'b': {'x': 1} } | combine({'b': {'y': 2}, 'c': 3})"),
        json!({"a": 1, "b": {"y": 2}, "c": 3})
    );
    assert_eq!(
        v("{'a': 1, 'b': {'x': 1}} | combine({'b': {'y': 2}}, recursive=true)"),
        json!({"a": 1, "b": {"x": 1, "y": 2}})
    );
    assert_eq!(
        v("{'l': [1, 2]} | combine({'l': [2, 3]}, list_merge='append')"),
        json!({"l": [1, 2, 2, 3]})
    );
    assert_eq!(
        v("{'l': [1, 2]} | combine({'l': [2, 3]}, list_merge='append_rp')"),
        json!({"l": [1, 2, 3]})
    );
    assert_eq!(
        v("{'l': [1, 2]} | combine({'l': [3]}, list_merge='prepend')"),
        json!({"l": [3, 1, 2]})
    );
    assert_eq!(
        v("{'a': 1} | combine({'b': 2}, {'a': 3})"),
        json!({"a": 3, "b": 2})
    );
    assert_eq!(v("{'a': 1} | combine([{'b': 2}])"), json!({"a": 1, "b": 2}));
}

#[test]
fn data_format_filters() {
    assert_eq!(r("{{ d | to_json }}"), r#"{"a": 1, "b": {"c": 2}}"#);
    assert_eq!(
        r("{{ {'b': 1, 'a': [1]} | to_nice_json }}"),
        "{\n    \"a\": [\n        1\n    ],\n    \"b\": 1\n}"
    );
    assert_eq!(
        r("{{ d | to_nice_json(indent=2) }}"),
        "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": 2\n  }\n}"
    );
    assert_eq!(
        v("'{\"k\": [1, true]}' | from_json"),
        json!({"k": [1, true]})
    );
    assert_eq!(
        r("{{ {'b': [1, 2], 'a': 'x', 'c': {'d': [1]} } | to_yaml }}"),
        "a: x\nb: [1, 2]\nc:\n  d: [1]\n"
    );
    assert_eq!(r("{{ {'b': 1} | to_yaml }}"), "{b: 1}\n");
    assert_eq!(
        r("{{ {'b': [1]} | to_yaml(default_flow_style=false) }}"),
        "b:\n- 1\n"
    );
    assert_eq!(
        r("{{ {'b': {'c': [1]}} | to_nice_yaml }}"),
        "b:\n    c:\n    - 1\n"
    );
    assert_eq!(
        v("'a: 1\nb: [x, yes]\n' | from_yaml"),
        json!({"a": 1, "b": ["x", true]})
    );
    assert_eq!(r("{{ 'Hello' | b64encode }}"), "SGVsbG8=");
    assert_eq!(r("{{ 'SGVsbG8=' | b64decode }}"), "Hello");
}

#[test]
fn path_filters() {
    assert_eq!(r("{{ '/etc/app/x.conf' | basename }}"), "x.conf");
    assert_eq!(r("{{ '/etc/app/x.conf' | dirname }}"), "/etc/app");
    let home = std::env::var("HOME").unwrap_or_default();
    assert_eq!(
        r("{{ '~/x' | expanduser }}"),
        format!("{}/x", home.trim_end_matches('/'))
    );
    assert_eq!(r("{{ '/no/such/../dir/./f' | realpath }}"), "/no/dir/f");
    assert_eq!(v("'/a/b.tar.gz' | splitext"), json!(["/a/b.tar", ".gz"]));
    assert_eq!(v("'/a/.bashrc' | splitext"), json!(["/a/.bashrc", ""]));
    assert_eq!(r(r#"{{ "it's" | quote }}"#), "'it'\"'\"'s'");
    assert_eq!(r("{{ 'plain-word' | quote }}"), "plain-word");
    assert_eq!(r("{{ '' | quote }}"), "''");
}

#[test]
fn hashing_filters() {
    assert_eq!(
        r("{{ 'abc' | hash('md5') }}"),
        "900150983cd24fb0d6963f7d28e17f72"
    );
    assert_eq!(
        r("{{ 'abc' | hash('sha1') }}"),
        "a9993e364706816aba3e25717850c26c9cd0d89d"
    );
    assert_eq!(
        r("{{ 'abc' | hash }}"),
        "a9993e364706816aba3e25717850c26c9cd0d89d"
    );
    assert_eq!(
        r("{{ 'abc' | hash('sha256') }}"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        r("{{ 'abc' | checksum }}"),
        "a9993e364706816aba3e25717850c26c9cd0d89d"
    );
    assert_eq!(
        r("{{ 'Hello world!' | password_hash('sha512', 'saltstring') }}"),
        "$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"
    );
    assert_eq!(
        r(
            "{{ 'Hello world!' | password_hash('sha512', salt='saltstringsaltstring', rounds=10000) }}"
        ),
        "$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v."
    );
    let random_salted = r("{{ 'pw' | password_hash('sha512') }}");
    assert!(
        random_salted.starts_with("$6$") && random_salted.len() == 3 + 16 + 1 + 86,
        "{random_salted}"
    );
}

#[test]
fn misc_filters() {
    assert_eq!(r("{{ (1 == 1) | ternary('a', 'b') }}"), "a");
    assert_eq!(r("{{ nothing | ternary('a', 'b', 'n') }}"), "n");
    assert_eq!(r("{{ 'x' | type_debug }}"), "str");
    assert_eq!(r("{{ 1 | type_debug }}"), "int");
    assert_eq!(r("{{ d | type_debug }}"), "dict");
    assert_eq!(r("{{ l | type_debug }}"), "list");
    assert_eq!(r("{{ nothing | type_debug }}"), "NoneType");
    assert_eq!(
        v("'http://user:pw@www.acme.com:9000/dir/index.html?query=term#frag' | urlsplit"),
        json!({
            "fragment": "frag", "hostname": "www.acme.com", "netloc": "user:pw@www.acme.com:9000",
            "password": "pw", "path": "/dir/index.html", "port": 9000, "query": "query=term",
            "scheme": "http", "username": "user"
        })
    );
    assert_eq!(
        v("'https://example.com/x' | urlsplit('hostname')"),
        json!("example.com")
    );
    assert_eq!(v("'https://example.com/x' | urlsplit('port')"), json!(null));
    let n = v("10 | random");
    assert!(n.as_i64().is_some_and(|n| (0..10).contains(&n)), "{n}");
    assert_eq!(v("10 | random(seed='x')"), v("10 | random(seed='x')"));
    let step = v("100 | random(start=1, step=10)").as_i64().unwrap();
    assert_eq!(step % 10, 1);
    let pick = v("['a', 'b'] | random");
    assert!(pick == json!("a") || pick == json!("b"));
    let mut shuffled: Vec<i64> = serde_json::from_value(v("[1, 2, 3, 4] | shuffle")).unwrap();
    shuffled.sort();
    assert_eq!(shuffled, vec![1, 2, 3, 4]);
    assert_eq!(
        v("[1, 2, 3, 4] | shuffle(seed='s')"),
        v("[1, 2, 3, 4] | shuffle(seed='s')")
    );
}

#[test]
fn jinja_tests() {
    let t = Templar::new();
    let yes = |expr: &str| {
        t.eval_condition(expr, &vars())
            .unwrap_or_else(|e| panic!("{expr}: {e}"))
    };
    assert!(yes("s is defined and missing is undefined"));
    assert!(yes("nothing is none"));
    assert!(yes("'x' is truthy and '' is falsy"));
    assert!(yes("'no' is truthy and 'no' is falsy(convert_bool=true)"));
    // Not a boolean spelling: Python truthiness, as ansible-playbook 2.21.
    assert!(yes(
        "'foo' is truthy(convert_bool=true) and 2 is truthy(convert_bool=true)"
    ));
    assert!(yes(
        "'n' is falsy(convert_bool=true) and '' is falsy(convert_bool=true)"
    ));
    assert!(yes("ok_result is succeeded and ok_result is success"));
    assert!(yes("bad_result is failed and bad_result is failure"));
    assert!(yes("ok_result is changed and bad_result is not changed"));
    assert!(yes("loop_result is changed"));
    assert!(yes("skip_result is skipped and ok_result is not skipped"));
    // A result of no async task counts as started and finished, as in Ansible.
    assert!(yes("ok_result is started and ok_result is finished"));
    assert!(yes("{'started': 1, 'finished': 0} is not finished"));
    assert!(yes("{'started': 0} is not started"));
    assert!(yes(
        "{'timedout': {'period': 2}} is timedout and ok_result is not timedout"
    ));
    assert!(yes("'foobar' is match('foo')"));
    assert!(!yes("'foobar' is match('bar')"));
    assert!(yes("'foobar' is search('bar')"));
    assert!(yes("'FOO' is search('foo', ignorecase=true)"));
    assert!(yes("'foobar' is regex('o+b')"));
    assert!(!yes("'foobar' is regex('bar', match_type='match')"));
    let bad = t
        .eval_condition("'x' is regex('x', match_type='nope')", &vars())
        .unwrap_err();
    assert!(
        bad.to_string()
            .contains("Invalid match_type specified. Expected one of: search, match, fullmatch."),
        "{bad}"
    );
    assert!(yes("'1.10' is version('1.9', '>')"));
    assert!(yes("'1.10' is version('1.9', 'gt')"));
    assert!(yes("'1.2.3' is version('1.2.3', '==')"));
    assert!(yes(
        "'1.2.3' is version('1.2.3', 'eq') and '1.2.3' is version('1.2.3')"
    ));
    assert!(yes(
        "'1.2' is version('1.10', '<') and '1.2' is version('1.10', 'lt')"
    ));
    assert!(yes(
        "'1.2' is version('1.2.0', '<=') and '2.0' is version('1.9', 'ge')"
    ));
    assert!(yes(
        "'1.2' is version('1.3', '!=') and '1.2' is version('1.3', 'ne')"
    ));
    assert!(yes(
        "'2.4' is version('2.4', '>=') and '2.4' is version('2.4.1', 'le')"
    ));
    assert!(yes("'1.0.0' is version('1.0', '==', strict=true)"));
    assert!(yes(
        "'1.0.0-rc.1' is version('1.0.0', '<', version_type='semver')"
    ));
    assert!(yes("'1.2.3' is version_compare('1.2', '>')"));
    // strict by position, PEP 440 pre-releases, and Ansible's refusals.
    assert!(yes("'1.0' is version('1.0', '==', true)"));
    assert!(yes(
        "'2.14.0rc1' is version('2.14.0', 'lt', version_type='pep440')"
    ));
    for (expr, words) in [
        (
            "'1.0' is version('1.0', strict=False, version_type='loose')",
            "Cannot specify both 'strict' and 'version_type'",
        ),
        (
            "'' is version('1.0', '>')",
            "Input version value cannot be empty",
        ),
        (
            "'1.0' is version('', '>')",
            "Version parameter to compare against cannot be empty",
        ),
    ] {
        let e = t.eval_condition(expr, &vars()).unwrap_err().to_string();
        assert!(e.contains(words), "{expr}: {e}");
    }
    assert!(yes(
        "[1, 2] is subset([1, 2, 3]) and [1, 2, 3] is superset([3])"
    ));
    assert!(!yes("[1, 4] is subset([1, 2, 3])"));
    assert!(yes("[1, 2] is contains(2) and 2 in [1, 2]"));
    assert!(yes("'ell' in s"));
    assert!(yes(
        "users | selectattr('uid', 'version', '1001', '>') | list | length == 1"
    ));
    let e = t.eval_condition("'1.0' is version('1.0', 'bad')", &vars());
    assert!(e.is_err());
    assert!(t.eval_condition("'x' is failed", &vars()).is_err());
}

#[test]
fn controller_path_tests() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let vars = MjValue::from_serialize(json!({
        "f": file.display().to_string(),
        "dir": dir.path().display().to_string(),
        "gone": dir.path().join("gone").display().to_string(),
        "broken": dir.path().join("broken").display().to_string(),
    }));
    std::os::unix::fs::symlink("nowhere", dir.path().join("broken")).unwrap();
    let t = Templar::new();
    let yes = |expr: &str| t.eval_condition(expr, &vars).unwrap();
    assert!(yes(
        "broken is not exists and broken is link_exists and broken is link"
    ));
    assert!(yes("f is same_file(f) and f is not same_file(dir)"));
    assert!(yes("'/' is mount and dir is not mount"));
    assert!(yes("f is file and f is exists and f is not directory"));
    assert!(yes(
        "dir is directory and dir is exists and dir is not file"
    ));
    assert!(yes("gone is not exists and gone is not file"));
    assert!(yes("f is abs and 'x/y' is not abs"));
}

#[test]
fn values_in_text_print_as_python_does() {
    assert_eq!(
        r("x {{ [true, nothing, 'a', 1.5] }}"),
        "x [True, None, 'a', 1.5]"
    );
    assert_eq!(r("x {{ d }}"), "x {'a': 1, 'b': {'c': 2}}");
    // A None on its own prints as nothing (ansible-core 2.21.5: a template file holding
    // only `{{ n }}` with `n: null` renders empty).
    assert_eq!(r("{{ nothing }}"), "");
    assert_eq!(r("{{ [\"it's\"] | string }}"), "[\"it's\"]");
    // A lone expression still keeps its type.
    assert_eq!(v("d"), json!({"a": 1, "b": {"c": 2}}));
    assert_eq!(v("{'a': {'b': 1}}"), json!({"a": {"b": 1}}));
}

#[test]
fn python_methods() {
    assert_eq!(v("s.startswith('Hello')"), json!(true));
    assert_eq!(v("s.endswith('x')"), json!(false));
    assert_eq!(v("'a,b'.split(',')"), json!(["a", "b"]));
    assert_eq!(v("'  x '.strip()"), json!("x"));
    assert_eq!(v("s.replace('l', 'L')"), json!("HeLLo WorLd"));
    assert_eq!(v("s.lower()"), json!("hello world"));
    assert_eq!(v("'{} and {}'.format('a', 'b')"), json!("a and b"));
    assert_eq!(v("d.keys() | list"), json!(["a", "b"]));
    assert_eq!(v("d.get('a')"), json!(1));
    assert_eq!(v("d.get('zz', 'dflt')"), json!("dflt"));
    assert_eq!(
        r("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}"),
        "a=1;b={'c': 2};"
    );
}

/// What Jinja2 3.1 rendered for each (`{{ s | indent(...) }}`).
#[test]
fn indent_keeps_a_trailing_newline_as_jinja2_does() {
    let t = |s: &str, args: &str| {
        let vars = minijinja::Value::from_serialize(json!({ "s": s }));
        Templar::new()
            .render_str(&format!("{{{{ s | indent({args}) }}}}"), &vars)
            .unwrap()
    };
    assert_eq!(t("a\nb\n", "2, true"), "  a\n  b\n");
    assert_eq!(t("a\nb\n", "2"), "a\n  b\n");
    assert_eq!(t("a\nb\n", "2, true, true"), "  a\n  b\n  ");
    assert_eq!(t("a\nb", "2, true"), "  a\n  b");
    assert_eq!(t("a\n\nb\n\n", "2, true"), "  a\n\n  b\n\n");
    assert_eq!(t("", "2, true"), "  ");
    assert_eq!(t("x\r\ny\n", "2, true"), "  x\n  y\n");
    assert_eq!(t("a\nb", "width='> ', first=true"), "> a\n> b");
    assert_eq!(t("a\nb", ""), "a\n    b");
}

#[test]
fn jinja2_header_values_are_python_literals() {
    let (options, body) = super::TextOptions::default()
        .from_header("#jinja2: trim_blocks: False, lstrip_blocks: True\nx")
        .unwrap();
    assert!(!options.trim_blocks && options.lstrip_blocks);
    assert_eq!(body, "x");
    // ansible-playbook 2.21: "malformed node or string" for a lowercase `true`.
    assert_eq!(
        super::TextOptions::default()
            .from_header("#jinja2: trim_blocks: true\nx")
            .unwrap_err(),
        "#jinja2: header: trim_blocks must be True or False, got true"
    );
}

/// A `#jinja2:` header may change the delimiters too (template_jinja2_non_native's
/// macro_override.j2), and a template file then renders with them.
#[test]
fn jinja2_header_delimiters() {
    let (options, body) = super::TextOptions::default()
        .from_header(
            "#jinja2: variable_start_string:'<<',variable_end_string:'>>'\n<< x >> {{ x }}",
        )
        .unwrap();
    assert_eq!(options.delimiters.variable_start, "<<");
    assert_eq!(options.delimiters.variable_end, ">>");
    let vars = minijinja::Value::from_serialize(serde_json::json!({"x": 1}));
    assert_eq!(
        super::Templar::new()
            .render_file_text(body, &vars, options)
            .unwrap(),
        "1 {{ x }}"
    );
    assert_eq!(
        super::TextOptions::default()
            .from_header("#jinja2: variable_start_string: <<\nx")
            .unwrap_err(),
        "#jinja2: header: variable_start_string must be a quoted string, got <<"
    );
}

#[test]
fn url_filters_and_tests() {
    assert_eq!(
        r("{{ 'key%3D%22%40%7B%7D%C3%A9%26%25%C2%A3%20foo+bar%zz' | urldecode }}"),
        "key=\"@{}é&%£ foo bar%zz"
    );
    assert_eq!(r("{{ 'a b/é' | urlencode }}"), "a%20b/%C3%A9");
    assert_eq!(
        r("{{ {'foo': 'bar', 'k': 'a b'} | urlencode }}"),
        "foo=bar&k=a+b"
    );
    assert_eq!(r("{{ [['a', 1], ['b/c', 2]] | urlencode }}"), "a=1&b%2Fc=2");
    assert_eq!(r("{{ () | urlencode }}"), "");
    for (expr, expected) in [
        ("'http://searchengine.tld' is uri", true),
        ("'asldkfjhalsidfthjo' is uri", true),
        ("'asldkfjhalsidfthjo' is uri(['http', 'file'])", false),
        ("'urn:isbn:9780307476463' is url", false),
        ("'ftp:// searchengine.tld' is url", true),
        ("'file://etc/hosts' is url", true),
        ("'admin:secret@example.com' is url", false),
        ("'htp://searchengine.tld' is url(['http'])", false),
        ("'urn:isbn:9780307476463' is urn", true),
        ("'ftps://admin@example.com' is urn", false),
        ("42 is uri", false),
    ] {
        assert_eq!(v(expr), json!(expected), "{expr}");
    }
}

#[test]
fn nan_path_join_and_undef() {
    assert_eq!(v("'nan' | float is nan"), json!(true));
    assert_eq!(v("'nan' | float is isnan"), json!(true));
    assert_eq!(v("'bad' is nan"), json!(false));
    assert_eq!(v("1.1 is nan or 1 is nan"), json!(false));
    assert_eq!(
        r("{{ ['/etc', 'apt', 'sources.list'] | path_join }}"),
        "/etc/apt/sources.list"
    );
    assert_eq!(r("{{ ['a/', 'b', '/abs', 'c'] | path_join }}"), "/abs/c");
    assert_eq!(r("{{ 'one' | path_join }}"), "one");
    assert!(
        err("{{ 1 | path_join }}")
            .to_string()
            .contains("|path_join expects string or sequence, got <class 'int'> instead.")
    );
    assert_eq!(v("undef() is undefined"), json!(true));
    assert_eq!(v("undef('why') | default('d')"), json!("d"));
}

#[test]
fn unique_as_jinja_with_ansibles_fallback() {
    assert_eq!(v("['a', 'b', 'A', 'B'] | unique"), json!(["a", "b"]));
    assert_eq!(
        v("['a', 'b', 'A', 'B'] | unique(case_sensitive=True)"),
        json!(["a", "b", "A", "B"])
    );
    assert_eq!(
        v("[{'foo': 'bar', 'moo': 'cow'}, {'foo': 'bar', 'moo': 'mar'}] | unique(attribute='foo')"),
        json!([{"foo": "bar", "moo": "cow"}])
    );
    assert_eq!(
        v("[{'a': 1}, {'a': 1}, {'b': 2}] | unique"),
        json!([{"a": 1}, {"b": 2}])
    );
    assert_eq!(v("{'foo': 1, 'moo': 2} | unique"), json!(["foo", "moo"]));
    assert_eq!(v("'foo' | unique | join"), json!("fo"));
    assert!(
        err("{{ [{'foo': 'bar'}] | unique(case_sensitive=False) }}")
            .to_string()
            .contains("cannot fall back to Ansible's version")
    );
    assert!(
        err("{{ True | unique }}")
            .to_string()
            .contains("'bool' object is not iterable")
    );
}

#[test]
fn contains_finds_substrings_as_python_in() {
    assert_eq!(
        v("'has an invalid value here' is contains 'invalid value'"),
        json!(true)
    );
    assert_eq!(v("'abc' is contains 'x'"), json!(false));
    assert_eq!(v("[1, 2] is contains 2"), json!(true));
}
