//! Tests of the argument spec: types, aliases, choices, exclusivity and Ansible's
//! messages, no_log masking.

use super::*;
use serde_json::json;

static FILE_LIKE: Spec = Spec::new(&[
    Arg::path("path").aliases(&["dest", "name"]).required(),
    Arg::str("state")
        .choices(&["absent", "directory", "file"])
        .default_str("file"),
    Arg::bool("force").default_bool(false),
    Arg::int("depth"),
    Arg::list("names", Elem::Str),
    Arg::dict("headers"),
    Arg::str("content").no_log(),
    Arg::str("src"),
    Arg::bool("fancy").not_yet(),
])
.mutually_exclusive(&[&["content", "src"]])
.required_if(&[RequiredIf {
    key: "state",
    value: Lit::Str("directory"),
    then: &["depth"],
    any: false,
}]);

fn check(args: Value) -> Result<Args, String> {
    FILE_LIKE.validate("file", args.as_object().unwrap())
}

#[test]
fn aliases_defaults_and_types() {
    let args = check(json!({"dest": "/x", "force": "yes", "depth": "3", "names": "a,b"})).unwrap();
    assert_eq!(args.str("path"), Some("/x"));
    assert_eq!(args.str("state"), Some("file"));
    assert!(args.bool("force"));
    assert_eq!(args.int("depth"), Some(3));
    assert_eq!(args.str_list("names"), ["a", "b"]);
    assert!(!args.is_set("src"));
    let args = check(json!({"path": 5, "headers": "a=1 b='x y'"})).unwrap();
    assert_eq!(args.str("path"), Some("5"));
    assert_eq!(args.dict("headers").unwrap()["b"], json!("x y"));
}

#[test]
fn no_log_values_are_masked_as_ansible_module_masks_them() {
    let raw = json!({"path": "/x", "content": "hunter2", "src": "a"});
    let secrets = FILE_LIKE.no_log_values(raw.as_object().unwrap());
    assert_eq!(secrets, ["hunter2"]);
    let mut result = json!({
        "msg": "bad hunter2 here", "content": "hunter2", "rc": 1, "ok": true,
        "lines": ["xhunter2x"], "n": null
    });
    mask_no_log_values(&mut result, &secrets);
    assert_eq!(
        result,
        json!({
            "msg": "bad ******** here", "content": "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER",
            "rc": 1, "ok": true, "lines": ["x********x"], "n": null
        })
    );
    let mut number = json!({"port": 1234});
    mask_no_log_values(&mut number, &["23".to_string()]);
    assert_eq!(number["port"], "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER");
    let empty = json!({"content": ""});
    assert!(
        FILE_LIKE
            .no_log_values(empty.as_object().unwrap())
            .is_empty()
    );
}

#[test]
fn ansibles_messages() {
    let err = |v| check(v).unwrap_err();
    assert_eq!(
        err(json!({"path": "/x", "foo": 1, "bar": 2})),
        "Unsupported parameters for (file) module: bar, foo. Supported parameters include: content, depth, fancy, force, headers, names, path, src, state (dest, name)."
    );
    assert_eq!(
        err(json!({"path": "/x", "state": "bogus"})),
        "value of state must be one of: absent, directory, file, got: bogus"
    );
    assert_eq!(
        err(json!({"state": "file"})),
        "missing required arguments: path"
    );
    assert_eq!(
        err(json!({"path": "/x", "force": "maybe"})),
        "argument 'force' is of type str and we were unable to convert to bool: The value 'maybe' is not a valid boolean. Valid booleans include: 'y', 'yes', 'on', '1', 'true', 't', 1, 1.0, 'n', 'no', 'off', '0', 'false', 'f', 0, 0.0"
    );
    assert_eq!(
        err(json!({"path": "/x", "depth": "1.5"})),
        "argument 'depth' is of type str and we were unable to convert to int: \"'1.5'\" cannot be converted to an int"
    );
    assert_eq!(
        err(json!({"path": "/x", "content": "a", "src": "b"})),
        "parameters are mutually exclusive: content|src"
    );
    assert_eq!(
        err(json!({"path": "/x", "state": "directory"})),
        "state is directory but all of the following are missing: depth"
    );
    assert_eq!(
        err(json!({"path": "/x", "headers": "abc"})),
        "argument 'headers' is of type str and we were unable to convert to dict: dictionary requested, could not parse JSON or key=value"
    );
    // Ansible reports the first error: a missing argument before an unknown one.
    assert_eq!(err(json!({"foo": 1})), "missing required arguments: path");
    assert_eq!(
        err(json!({"path": "/x", "fancy": true})),
        "turbo-play does not support the 'fancy' argument of file yet; remove it or run this task with ansible-playbook"
    );
    assert!(check(json!({"path": "/x", "fancy": null})).is_ok());
}

#[test]
fn other_wordings_of_unknown_names() {
    static FAIL: Spec = Spec::new(&[Arg::str("msg")]).unknown(Unknown::InvalidOptions);
    assert_eq!(
        FAIL.validate(
            "ansible.builtin.fail",
            json!({"foo": 1}).as_object().unwrap()
        )
        .unwrap_err(),
        "Invalid options for ansible.builtin.fail: foo"
    );
    static ANY: Spec = Spec::new(&[Arg::bool("cacheable")]).unknown(Unknown::Accepted);
    let args = ANY
        .validate(
            "set_fact",
            json!({"x": 1, "cacheable": "no"}).as_object().unwrap(),
        )
        .unwrap();
    assert_eq!(args.extra()["x"], json!(1));
    assert!(!args.bool("cacheable"));
}

#[test]
fn booleans_as_ansible_spells_them() {
    for yes in [
        json!("yes"),
        json!("On"),
        json!(" TRUE "),
        json!(1),
        json!("t"),
        json!(true),
    ] {
        assert_eq!(parse_bool(&yes), Ok(true), "{yes}");
    }
    for no in [
        json!("no"),
        json!("off"),
        json!("False"),
        json!(0),
        json!("n"),
        json!(false),
    ] {
        assert_eq!(parse_bool(&no), Ok(false), "{no}");
    }
    // ansible-playbook 2.21 refuses the text "1.0" (the number 1.0 is true).
    assert!(
        parse_bool(&json!("1.0"))
            .unwrap_err()
            .starts_with("The value '1.0' is not a valid boolean.")
    );
    assert_eq!(parse_bool(&json!(1.0)), Ok(true));
    assert_eq!(
        parse_bool(&json!([1])).unwrap_err(),
        "<class 'list'> cannot be converted to a bool"
    );
}
