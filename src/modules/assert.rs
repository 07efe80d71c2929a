//! `assert` and `fail`: judge conditions on the controller; nothing goes to the target.

use serde_json::{Value, json};

use super::spec::{Arg, Spec, Unknown};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct Assert;

/// `that` is taken as written: a string is one condition, as Ansible's strict list type.
static ASSERT_SPEC: Spec = Spec::new(&[
    Arg::raw("fail_msg")
        .aliases(&["msg"])
        .default_str("Assertion failed"),
    Arg::raw("success_msg").default_str("All assertions passed"),
    Arg::bool("quiet").default_bool(false),
    Arg::raw("that").required(),
]);

impl Module for Assert {
    fn name(&self) -> &'static str {
        "assert"
    }

    fn spec(&self) -> &'static Spec {
        &ASSERT_SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.no_connection()
    }

    fn untemplated_args(&self) -> &'static [&'static str] {
        &["that"]
    }

    /// Stops at the first condition that does not hold, and names it, as Ansible does.
    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let (Some(templar), Some(vars)) = (ctx.templar, ctx.vars) else {
            return Err(ModuleError::Invalid(
                "internal error: assert was planned without the task's variables".into(),
            ));
        };
        // A `that` that is one template may make the list of conditions itself.
        let resolved: Option<Vec<Value>> = match args.raw("that") {
            Some(Value::String(s)) if is_all_template(s) => {
                match templar.render_value(&Value::String(s.clone()), vars) {
                    Ok(Value::Array(items)) => Some(items),
                    _ => None,
                }
            }
            _ => None,
        };
        let thats: Vec<&Value> = match (&resolved, args.raw("that")) {
            (Some(items), _) => items.iter().collect(),
            (None, that) => match that {
                None | Some(Value::Null) => return Err(empty_conditional()),
                Some(Value::Array(items)) => items.iter().collect(),
                Some(one) => vec![one],
            },
        };
        let fail_msg = args
            .raw("fail_msg")
            .cloned()
            .unwrap_or_else(|| json!("Assertion failed"));
        let success_msg = args
            .raw("success_msg")
            .cloned()
            .unwrap_or_else(|| json!("All assertions passed"));
        let mut data = serde_json::Map::new();
        let verbose_always = !args.bool("quiet");
        let mut deprecations = Vec::new();
        for that in thats {
            // `that` is not templated with the other arguments: each string is a
            // condition (a lone `{{ x }}` means `x`); a YAML boolean is itself.
            let templated_bool = match that {
                Value::String(condition) if is_all_template(condition) => {
                    match templar.render_value(that, vars) {
                        Ok(Value::Bool(b)) => Some(b),
                        _ => None,
                    }
                }
                _ => None,
            };
            let (shown, holds) = match that {
                Value::Null => return Err(empty_conditional()),
                Value::String(condition) if condition.trim().is_empty() => {
                    return Err(empty_conditional());
                }
                Value::String(condition) if templated_bool.is_some() => {
                    // A `{{ }}` around a condition is deprecated in 2.21; the registered
                    // result carries the deprecation, as Ansible's does.
                    deprecations.push(conditional_as_template_deprecation());
                    (condition.clone(), templated_bool == Some(true))
                }
                Value::String(condition) => (
                    condition.clone(),
                    templar.eval_condition(condition, vars).map_err(|e| {
                        ModuleError::Invalid(format!(
                            "The conditional check '{condition}' failed. The error was: {e}"
                        ))
                    })?,
                ),
                Value::Bool(b) => {
                    // A list a template resolved to had its `{{ }}`-wrapped conditions
                    // rendered already: a boolean there was one (the deprecated form).
                    if resolved.is_some() {
                        deprecations.push(conditional_as_template_deprecation());
                    }
                    (python_bool(*b).to_string(), *b)
                }
                other => (other.to_string(), crate::booleans::python_truthiness(other)),
            };
            if !holds {
                attach_deprecations(&mut data, &deprecations);
                data.insert("evaluated_to".into(), json!(false));
                data.insert("assertion".into(), json!(shown));
                data.insert("msg".into(), fail_msg);
                return Ok(Plan::Done(TaskOutcome {
                    failed: true,
                    data,
                    verbose_always,
                    ..TaskOutcome::default()
                }));
            }
        }
        attach_deprecations(&mut data, &deprecations);
        data.insert("msg".into(), success_msg);
        Ok(Plan::Done(TaskOutcome {
            data,
            verbose_always,
            ..TaskOutcome::default()
        }))
    }
}

fn conditional_as_template_deprecation() -> Value {
    json!({
        "collection_name": "ansible.builtin",
        "deprecator": {"resolved_name": "ansible.builtin", "type": null},
        "msg": "Conditionals should not be surrounded by templating delimiters such as {{ }} or {% %}.",
        "version": "2.23",
    })
}

fn attach_deprecations(data: &mut serde_json::Map<String, Value>, deprecations: &[Value]) {
    if !deprecations.is_empty() {
        data.insert("deprecations".into(), Value::Array(deprecations.to_vec()));
    }
}

/// Ansible 2.21 refuses a missing or blank condition rather than taking it as true.
fn empty_conditional() -> ModuleError {
    ModuleError::Invalid("Task failed: Empty conditional expressions are not allowed.".into())
}

/// Ansible's `is_possibly_all_template`: the whole text is one `{{ }}`.
fn is_all_template(text: &str) -> bool {
    let t = text.trim();
    t.starts_with("{{") && t.ends_with("}}")
}

pub struct Fail;

impl Module for Fail {
    fn name(&self) -> &'static str {
        "fail"
    }

    fn spec(&self) -> &'static Spec {
        static SPEC: Spec =
            Spec::new(&[Arg::raw("msg").default_str("Failed as requested from task")])
                .unknown(Unknown::InvalidOptions);
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.no_connection()
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let mut data = serde_json::Map::new();
        let msg = args
            .raw("msg")
            .cloned()
            .unwrap_or_else(|| json!("Failed as requested from task"));
        data.insert("msg".into(), msg);
        Ok(Plan::Done(TaskOutcome {
            failed: true,
            data,
            ..TaskOutcome::default()
        }))
    }
}

fn python_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Templar;
    use std::path::Path;

    fn plan(module: &dyn Module, args: Value) -> Result<TaskOutcome, String> {
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(json!({"x": 2, "name": "web"}));
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            ..PlanContext::new(Path::new("/"))
        };
        match crate::modules::try_plan(module, args, &ctx)? {
            Plan::Done(out) => Ok(out),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn passing_assertions_say_so_verbosely() {
        let out = plan(&Assert, json!({"that": ["x == 2", "name is string"]})).unwrap();
        assert!(!out.failed && !out.changed);
        assert!(out.verbose_always);
        assert_eq!(
            Value::Object(out.data),
            json!({"msg": "All assertions passed"})
        );
        let out = plan(
            &Assert,
            json!({"that": "x > 1", "success_msg": "fine", "quiet": true}),
        )
        .unwrap();
        assert!(!out.verbose_always);
        assert_eq!(Value::Object(out.data), json!({"msg": "fine"}));
    }

    #[test]
    fn a_templated_condition_is_judged_and_deprecated() {
        let out = plan(&Assert, json!({"that": "{{ x == 2 }}"})).unwrap();
        assert!(!out.failed);
        let deprecations = out.data["deprecations"].as_array().unwrap();
        assert_eq!(deprecations.len(), 1);
        assert!(
            deprecations[0]["msg"]
                .as_str()
                .unwrap()
                .contains("should not be surrounded by templating delimiters")
        );
        assert!(
            plan(&Assert, json!({"that": "{{ x == 3 }}"}))
                .unwrap()
                .failed
        );
        // `that: '{{ that_list }}'` with `that_list: ['{{ 1 == 1 }}']`.
        let out = plan(&Assert, json!({"that": "{{ [x == 2] }}"})).unwrap();
        assert_eq!(out.data["deprecations"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn a_blank_or_null_condition_is_refused_as_ansible_does() {
        for that in [json!(null), json!(""), json!(["x == 2", "  "])] {
            let err = plan(&Assert, json!({ "that": that })).unwrap_err();
            assert!(
                err.contains("Empty conditional expressions are not allowed."),
                "{err}"
            );
        }
        assert!(!plan(&Assert, json!({"that": []})).unwrap().failed);
    }

    #[test]
    fn the_first_failing_assertion_is_named() {
        let out = plan(&Assert, json!({"that": ["x == 2", "x == 3", "nope"]})).unwrap();
        assert!(out.failed);
        assert_eq!(
            Value::Object(out.data),
            json!({
                "assertion": "x == 3",
                "evaluated_to": false,
                "msg": "Assertion failed"
            })
        );
        let out = plan(&Assert, json!({"that": [false], "msg": "custom"})).unwrap();
        assert_eq!(out.data["assertion"], json!("False"));
        assert_eq!(out.data["msg"], json!("custom"));
        let out = plan(
            &Assert,
            json!({"that": "x == 1", "msg": "m", "fail_msg": ["a", "b"]}),
        )
        .unwrap();
        assert_eq!(out.data["msg"], json!(["a", "b"]));
    }

    #[test]
    fn assert_errors() {
        assert_eq!(
            plan(&Assert, json!({})).unwrap_err(),
            "missing required arguments: that"
        );
        let err = plan(&Assert, json!({"that": "nope == 1"})).unwrap_err();
        assert_eq!(
            err,
            "The conditional check 'nope == 1' failed. The error was: 'nope' is undefined"
        );
    }

    #[test]
    fn fail_fails_with_its_message() {
        let out = plan(&Fail, json!({"msg": "stop"})).unwrap();
        assert!(out.failed);
        assert_eq!(Value::Object(out.data), json!({"msg": "stop"}));
        let out = plan(&Fail, json!({})).unwrap();
        assert_eq!(out.data["msg"], json!("Failed as requested from task"));
        assert_eq!(
            plan(&Fail, json!({"foo": 1})).unwrap_err(),
            "Invalid options for fail: foo"
        );
    }
}
