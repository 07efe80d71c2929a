//! Unit tests of the templar: rendering values and text, errors, names read.

use super::expression_scan::opens_tag_outside_strings;
use super::*;
use serde_json::json;

fn vars(v: Value) -> MjValue {
    MjValue::from_serialize(&v)
}

fn t() -> Templar {
    Templar::new()
}

/// Found by the template fuzz target: minijinja 2.24's lexer panics ("empty lexer
/// stack") on this text; it must be a template error like any other.
#[test]
fn a_panic_in_the_template_engine_is_a_template_error() {
    let text = "{{ s | lower |ex_replace('(W)]orld', '\\\\1') }}\n{map('string')}}map('string')}}";
    let err = t()
        .render_value(&json!(text), &vars(json!({"s": "Hi"})))
        .unwrap_err();
    assert!(err.to_string().contains("template error"), "{err}");
    assert!(t().names_read(text).is_none_or(|names| names.contains("s")));
    assert!(t().eval_condition(text, &vars(json!({}))).is_err());
}

#[test]
fn templar_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Templar>();
}

#[test]
fn plain_strings_pass_through() {
    let v = vars(json!({}));
    assert_eq!(
        t().render_value(&json!("no templates here }}"), &v)
            .unwrap(),
        json!("no templates here }}")
    );
    assert_eq!(t().render_value(&json!(5), &v).unwrap(), json!(5));
}

#[test]
fn a_values_final_newline_is_jinjas_to_drop_then_padded_back_as_ansible() {
    // Checked with ansible-core 2.21.5 (set_fact, then debug).
    let v = vars(json!({"x": "a\n"}));
    assert_eq!(t().render_str("{{ x }}\n", &v).unwrap(), "a\n");
    assert_eq!(t().render_str("{{ 'a' }}\n\n", &v).unwrap(), "a\n\n");
    assert_eq!(
        t().render_str("{% if true %}x{% endif %}\n", &v).unwrap(),
        "x\n"
    );
    let (keep, body) = TextOptions::default()
        .from_header("#jinja2: keep_trailing_newline: True\n{{ x }}\n")
        .unwrap();
    assert!(keep.keep_trailing_newline);
    assert_eq!(t().render_file_text(body, &v, keep).unwrap(), "a\n\n");
}

#[test]
fn a_none_in_text_prints_as_nothing_but_inside_a_list_as_none() {
    // Checked with ansible-core 2.21.5: debug of "x{{ n }}y {{ [n] }}" is "xy [None]".
    let v = vars(json!({"n": null}));
    assert_eq!(
        t().render_str("x{{ n }}y {{ [n] }}", &v).unwrap(),
        "xy [None]"
    );
    assert_eq!(t().render_str("{{ {'k': n} }}", &v).unwrap(), "{'k': None}");
}

#[test]
fn keeps_trailing_newline_of_block_scalars() {
    let v = vars(json!({"item": "1"}));
    assert_eq!(
        t().render_str("test file {{ item }}\n", &v).unwrap(),
        "test file 1\n"
    );
}

#[test]
fn single_expression_keeps_native_type() {
    let v = vars(json!({"n": 3, "l": [1, 2], "d": {"a": true}, "s": "x"}));
    let tp = t();
    assert_eq!(tp.render_value(&json!("{{ n }}"), &v).unwrap(), json!(3));
    assert_eq!(
        tp.render_value(&json!("{{ l }}"), &v).unwrap(),
        json!([1, 2])
    );
    assert_eq!(
        tp.render_value(&json!("{{d}}"), &v).unwrap(),
        json!({"a": true})
    );
    assert_eq!(
        tp.render_value(&json!("{{ n + 1 }}"), &v).unwrap(),
        json!(4)
    );
    assert_eq!(
        tp.render_value(&json!("{{ n }} "), &v).unwrap(),
        json!("3 ")
    );
    assert_eq!(
        tp.render_value(&json!("{{ n }}{{ s }}"), &v).unwrap(),
        json!("3x")
    );
    assert_eq!(
        tp.render_value(&json!("{{- s -}}"), &v).unwrap(),
        json!("x")
    );
}

/// ansible-core 2.21.5: the output of a template is its nodes; one alone keeps its type,
/// none is None, more are text (checked with ansible-playbook, type_debug of each).
#[test]
fn one_output_node_keeps_its_type() {
    let v = vars(json!({"one": [1], "two": [4, 2], "n": null, "d": {"a": 1}}));
    let tp = t();
    let r = |s: &str| tp.render_value(&json!(s), &v).unwrap();
    assert_eq!(r("{% for x in one %}{{ x }}{% endfor %}"), json!(1));
    assert_eq!(r("{% for x in two %}{{ x }}{% endfor %}"), json!("42"));
    assert_eq!(r("{% if false %}x{% endif %}"), json!(null));
    assert_eq!(r("{{ 1 }}{{ n }}"), json!(1));
    assert_eq!(r("{% if true %}{{ d }}{% endif %}"), json!({"a": 1}));
    assert_eq!(r(" {{ 1 }}"), json!(" 1"));
    assert_eq!(r("{% if true %}[1, 2]{% endif %}"), json!("[1, 2]"));
    assert_eq!(r("{% for x in one %}{{ [x] }}{% endfor %}"), json!([1]));
    // Jinja drops one final newline (a string keeps it: Ansible preserves it); a second
    // one is a node of its own.
    assert_eq!(r("{% for x in one %}{{ x }}{% endfor %}\n"), json!(1));
    assert_eq!(r("{{ [1] }}\n"), json!([1]));
    assert_eq!(r("{{ 'abc' }}\n"), json!("abc\n"));
    assert_eq!(r("{{ 1 }}\n\n"), json!("1\n\n"));
    assert_eq!(r("x{{ 1 }}\n"), json!("x1\n"));
    // Only the outermost rendering counts: text rendered inside does not.
    assert_eq!(
        tp.render_str("{% for x in one %}{{ x }}{% endfor %}", &v)
            .unwrap(),
        "1"
    );
}

/// An undefined value inside a list or mapping fails the template, as Ansible's
/// finalization does, where it would otherwise print as None.
#[test]
fn undefined_inside_a_made_value_fails() {
    let v = vars(json!({}));
    let tp = t();
    for s in [
        "{{ [{'key': missing}] }}",
        "{% if true %}{{ [missing] }}{% endif %}",
    ] {
        let e = tp.render_value(&json!(s), &v).unwrap_err();
        assert!(
            matches!(&e, TemplateError::Undefined { name, .. } if name == "missing"),
            "{s}: {e:?}"
        );
    }
}

#[test]
fn renders_recursively_including_keys() {
    let v = vars(json!({"k": "key", "n": 2}));
    assert_eq!(
        t().render_value(&json!({"{{ k }}": ["a{{ n }}", {"x": "{{ n }}"}]}), &v)
            .unwrap(),
        json!({"key": ["a2", {"x": 2}]})
    );
}

#[test]
fn undefined_variable_is_named() {
    let v = vars(json!({"a": {"b": 1}, "l": [1]}));
    let tp = t();
    let name = |s: &str| match tp.render_value(&json!(s), &v) {
        Err(TemplateError::Undefined { name, expr, .. }) => {
            assert_eq!(expr, s);
            name
        }
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(name("{{ missing }}"), "missing");
    assert_eq!(name("hello {{ missing }} x"), "missing");
    assert_eq!(name("{{ a.c }}"), "a.c");
    assert_eq!(name("x {{ a.c }}"), "a.c");
    assert_eq!(name("x {{ a.b.c }}"), "a.b.c");
    assert_eq!(name("x {{ missing.x }}"), "missing");
    assert_eq!(name("{{ a.b }} and {{ zz | upper }}"), "zz");
    assert_eq!(name("{% for i in l %}{{ i }}{{ zz }}{% endfor %}"), "zz");
    assert_eq!(name("{% for i in nope %}{{ i }}{% endfor %}"), "nope");
    assert_eq!(name("{% if nope == 1 %}x{% endif %}"), "nope");
    assert_eq!(name("n={{ a.b + missing }}"), "missing");
    let err = tp.render_str("{{ missing }}", &v).unwrap_err();
    assert_eq!(err.to_string(), "'missing' is undefined");
}

#[test]
fn defined_tests_and_default_work_in_strict_mode() {
    let v = vars(json!({"e": "", "x": 1}));
    let tp = t();
    assert_eq!(
        tp.render_str("{{ 'y' if missing is defined else 'n' }}", &v)
            .unwrap(),
        "n"
    );
    assert_eq!(
        tp.render_str("{{ 'y' if missing is undefined else 'n' }}", &v)
            .unwrap(),
        "y"
    );
    assert_eq!(
        tp.render_str("{{ missing | default('d') }}", &v).unwrap(),
        "d"
    );
    assert_eq!(tp.render_str("{{ missing | d('d') }}", &v).unwrap(), "d");
    assert_eq!(tp.render_str("{{ e | default('d') }}", &v).unwrap(), "");
    assert_eq!(
        tp.render_str("{{ e | default('d', true) }}", &v).unwrap(),
        "d"
    );
    assert!(tp.eval_condition("missing is not defined", &v).unwrap());
}

#[test]
fn conditions_follow_jinja_truthiness() {
    let v = vars(json!({"n": 3, "flag": false, "s": "", "l": [1]}));
    let tp = t();
    assert!(tp.eval_condition("n > 2", &v).unwrap());
    assert!(!tp.eval_condition("flag", &v).unwrap());
    assert!(!tp.eval_condition("s", &v).unwrap());
    assert!(tp.eval_condition("l", &v).unwrap());
    assert!(tp.eval_condition("True", &v).unwrap());
    assert!(tp.eval_condition("{{ n == 3 }}", &v).unwrap());
    assert!(tp.eval_condition("'yes' | bool", &v).unwrap());
    match tp.eval_condition("missing == 1", &v) {
        Err(TemplateError::Undefined { name, .. }) => assert_eq!(name, "missing"),
        other => panic!("{other:?}"),
    }
    match tp.eval_condition("missing", &v) {
        Err(TemplateError::Undefined { name, .. }) => assert_eq!(name, "missing"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        tp.eval_condition("n >", &v),
        Err(TemplateError::Syntax { .. })
    ));
}

#[test]
fn eval_expr_returns_data() {
    let v = vars(json!({"n": 3}));
    assert_eq!(t().eval_expr("[n, n * 2]", &v).unwrap(), json!([3, 6]));
}

#[test]
fn syntax_errors_are_reported() {
    let v = vars(json!({}));
    let err = t().render_str("{{ a + }}", &v).unwrap_err();
    assert!(matches!(err, TemplateError::Syntax { .. }), "{err:?}");
    assert!(err.to_string().contains("`{{ a + }}`"), "{err}");
}

#[test]
fn errors_in_long_templates_give_the_line_not_the_text() {
    let v = vars(json!({"x": 1}));
    let source = format!(
        "line one is long enough {}\nok\n{{{{ x + }}}}\n",
        "y".repeat(80)
    );
    let err = t().render_str(&source, &v).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("template error in `line one is long enough yyy"),
        "{text}"
    );
    assert!(text.contains("...`: syntax error: "), "{text}");
    assert!(text.ends_with("(line 3)"), "{text}");
}

#[test]
fn a_final_block_tag_keeps_the_sources_trailing_newlines() {
    let v = vars(json!({"l": [1, 2]}));
    let tp = t();
    assert_eq!(
        tp.render_str("{% for i in l %}{{ i }} {% endfor %}\n", &v)
            .unwrap(),
        "1 2 \n"
    );
    assert_eq!(
        tp.render_str("{% if true %}x{% endif %}\n\n", &v).unwrap(),
        "x\n\n"
    );
    assert_eq!(tp.render_str("{{ l | length }}", &v).unwrap(), "2");
}

#[test]
fn trim_blocks_drops_newline_after_tag() {
    let v = vars(json!({"l": [1, 2]}));
    assert_eq!(
        t().render_str("{% for i in l %}\nx{{ i }}\n{% endfor %}\n", &v)
            .unwrap(),
        "x1\nx2\n"
    );
}

#[test]
fn ansible_filters() {
    let v = vars(
        json!({"d": {"b": [1, "é"], "a": null}, "p": "/etc/app/conf.d/x.conf", "t": "{\"k\": [1]}"}),
    );
    let tp = t();
    let r = |s: &str| tp.render_str(s, &v).unwrap();
    assert_eq!(r("{{ 'yes' | bool }}"), "True");
    assert_eq!(r("{{ 'off' | bool }}"), "False");
    assert_eq!(r("{{ 1 | bool }}"), "True");
    assert_eq!(r("{{ d | to_json }}"), r#"{"b": [1, "\u00e9"], "a": null}"#);
    assert_eq!(
        r("{{ d | to_nice_json }}"),
        "{\n    \"a\": null,\n    \"b\": [\n        1,\n        \"\\u00e9\"\n    ]\n}"
    );
    assert_eq!(r("{{ (t | from_json).k[0] }}"), "1");
    assert_eq!(r("{{ p | basename }}"), "x.conf");
    assert_eq!(r("{{ p | dirname }}"), "/etc/app/conf.d");
    assert_eq!(r("{{ '/x' | dirname }}"), "/");
    assert_eq!(r("{{ 'x' | dirname }}"), "");
    assert_eq!(r("{{ (1 == 1) | ternary('a', 'b') }}"), "a");
    assert_eq!(r("{{ none | ternary('a', 'b', 'n') }}"), "n");
    assert_eq!(r("{{ p | mandatory }}"), "/etc/app/conf.d/x.conf");
    assert_eq!(r("{{ 5 | string }}"), "5");
    assert_eq!(r("{{ 'A' | lower }}"), "a");
    assert!(tp.render_str("{{ nope | mandatory }}", &v).is_err());
}

#[test]
fn small_strings_render_fast() {
    let tp = t();
    let v = vars(json!({"item": "7", "n": 1000, "other": {"a": 1}}));
    let strings = [
        json!("test file {{ item }}\n"),
        json!("~/file_{{ item }}"),
        json!("{{ item }}"),
    ];
    let rounds = 1000;
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        for s in &strings {
            tp.render_value(s, &v).unwrap();
        }
    }
    let per_string = start.elapsed() / (rounds * strings.len() as u32);
    // Debug builds are several times slower than release; the budget is for release.
    let budget = if cfg!(debug_assertions) { 200 } else { 20 };
    assert!(
        per_string.as_micros() < budget,
        "{per_string:?} per small string"
    );
    eprintln!("render_value: {per_string:?} per small string");
}

/// ansible-playbook 2.21 (checked): in a value written in YAML, string constants in
/// `{{ }}` keep their backslashes; statements, comments, raw blocks and template
/// files (render_str) read escapes as Jinja does.
#[test]
fn yaml_values_keep_backslashes_in_expression_strings() {
    let v = MjValue::from_serialize(json!({"x": "ab"}));
    let value = |s: &str| t().render_value(&json!(s), &v).unwrap();
    assert_eq!(
        value(r"{{ x | regex_replace('(a)', '\1\1') }}"),
        json!("aab")
    );
    assert_eq!(value(r"{{ 'a\nb' | length }}"), json!(4));
    assert_eq!(
        value(r#"{{ 'it\'s' }} and {{ "q\"" }}"#),
        json!(r#"it\'s and q\""#)
    );
    assert_eq!(value(r"{{ 'a\\b' }}"), json!(r"a\\b"));
    assert_eq!(value(r"\1 {{ x }}"), json!(r"\1 ab"));
    assert_eq!(
        verbatim_backslashes(r"{% set y = 'a\nb' %}{{ y }}"),
        r"{% set y = 'a\nb' %}{{ y }}"
    );
    assert_eq!(
        verbatim_backslashes(r"{# '\1' #}{{ '\1' }}"),
        r"{# '\1' #}{{ '\\1' }}"
    );
    assert_eq!(
        verbatim_backslashes(r"{% raw %}{{ '\1' }}{% endraw %}{{ '\1' }}"),
        r"{% raw %}{{ '\1' }}{% endraw %}{{ '\\1' }}"
    );
    assert_eq!(
        verbatim_backslashes("{{ 'é\\é' }} {% é"),
        "{{ 'é\\\\é' }} {% é"
    );
    assert_eq!(t().render_str(r"{{ 'a\nb' | length }}", &v).unwrap(), "3");
}

/// The cause of a failed template in Jinja's words, as Ansible's errors give it, and the
/// line Ansible shows for a syntax error (an unknown filter counts) but not otherwise.
#[test]
fn errors_name_their_cause_as_jinja_and_ansible_do() {
    let v = vars(json!({"things": [{"name": "a"}, {"other": 1}]}));
    let keep = TextOptions::default();
    let err = t()
        .render_file_text("line 1\nline 2\n{% sorry\n", &v, keep.clone())
        .unwrap_err();
    assert_eq!(
        err.cause(),
        "Syntax error in template: Encountered unknown tag 'sorry'."
    );
    assert_eq!(err.syntax_line(), Some(3));
    let err = t()
        .render_file_text("a\n{{ 1 | bogus }}\n", &v, keep.clone())
        .unwrap_err();
    assert_eq!(
        err.cause(),
        "Syntax error in template: No filter named 'bogus'."
    );
    assert_eq!(err.syntax_line(), Some(2));
    let err = t()
        .render_file_text("a\n{{ nope }}\n", &v, keep)
        .unwrap_err();
    assert_eq!(err.cause(), "'nope' is undefined");
    assert_eq!(err.syntax_line(), None);
    let err = t()
        .render_value(&json!("{{ things | map(attribute='name') }}"), &v)
        .unwrap_err();
    assert_eq!(err.cause(), "object of type 'dict' has no attribute 'name'");
    let err = t()
        .render_value(&json!("{{ things[1].name }}"), &v)
        .unwrap_err();
    assert_eq!(err.cause(), "object of type 'dict' has no attribute 'name'");
    let err = t().render_value(&json!("{{ nope.name }}"), &v).unwrap_err();
    assert_eq!(err.cause(), "'nope' is undefined");
    let err = t()
        .render_value(&json!("{{ [1, nope] }} and text"), &v)
        .unwrap_err();
    assert_eq!(err.cause(), "'nope' is undefined");
}

/// A conditional that fails, in the words Ansible 2.19+ records for it (the text of its
/// exception, as `break_when_result` holds it).
#[test]
fn conditional_errors_are_worded_as_ansible_does() {
    let v = vars(json!({"d": {}, "item": 2}));
    let message = |expr: &str| {
        t().eval_condition(expr, &v)
            .unwrap_err()
            .conditional_message()
    };
    assert_eq!(
        message("item == 2 and nope"),
        "Error while evaluating conditional: 'nope' is undefined"
    );
    assert_eq!(
        message("d.x"),
        "Error while evaluating conditional: object of type 'dict' has no attribute 'x'"
    );
    assert_eq!(
        message("1 / 0 if true else False"),
        "Error rendering expression: division by zero"
    );
    assert_eq!(
        message("1 | nofilter"),
        "Syntax error in expression: No filter named 'nofilter'."
    );
    assert_eq!(
        message("1 +"),
        "Syntax error in expression: unexpected end of input, expected expression"
    );
}

/// Jinja2's `joiner` global is there, as in Ansible's templates.
#[test]
fn jinja2_joiner_is_a_global() {
    let v = vars(json!({}));
    let text =
        "{% set pipe = joiner('|') %}{% for x in [1, 2, 3] %}{{ pipe() }}{{ x }}{% endfor %}";
    assert_eq!(t().render_value(&json!(text), &v).unwrap(), json!("1|2|3"));
}

/// A conditional template leaves a template inside a string constant as written, while a
/// bare condition renders it (Ansible's embedded templates, deprecated).
#[test]
fn constants_are_rendered_in_conditions_but_not_in_conditional_templates() {
    let v = vars(json!({}));
    let cond = |s: &str| {
        t().eval_condition(s, &v)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
    };
    assert!(cond("\"dude\" == \"du{{'de'}}\""));
    assert!(cond("{{ \"du{\" + \"{'de'}}\" == \"du{{'de'}}\" }}\n"));
    assert!(cond(
        "{{ dict({\"dude\": \"{{ 'dude' }}\"})[\"dude\"] == \"{\" + \"{ 'dude' }}\" }}"
    ));
    assert!(cond(
        "{{ lookup('pipe', 'echo {{ \"dude\" }}') == \"dude\" }}\n"
    ));
    assert!(!opens_tag_outside_strings("lookup('a', '{{ b }}')"));
    assert!(opens_tag_outside_strings(" a }} + {{ b "));
}

/// `{{ a }} == {{ b }}` builds an expression by templating: Ansible refuses it.
#[test]
fn a_meta_templated_condition_is_untrusted() {
    let err = t()
        .eval_condition("{{ 'hello' }} == {{ 'world' }}\n", &vars(json!({})))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Encountered untrusted template or expression."),
        "{err}"
    );
}

/// `when: '{{ item }}'` judges the expression `item` holds, not the text's truth.
#[test]
fn a_template_may_give_the_condition_to_judge() {
    let cond = |item: &str| t().eval_condition("{{ item }}", &vars(json!({"item": item})));
    assert!(cond("1 == 1").unwrap());
    assert!(!cond("1 == 42").unwrap());
    assert!(!cond("false").unwrap());
}
