//! `debug`: print a message or a variable. Runs on the controller only.

use serde_json::{Value, json};

use super::spec::{Arg, Kind, Spec};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, Shown, TaskOutcome};
use crate::template::TemplateError;

pub struct Debug;

static SPEC: Spec = Spec::new(&[
    Arg::raw("msg").default_str("Hello world!"),
    Arg::new("var", Kind::Raw),
    Arg::int("verbosity").default_int(0),
])
.mutually_exclusive(&[&["msg", "var"]]);

impl Module for Debug {
    fn name(&self) -> &'static str {
        "debug"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.shown(Shown::OwnData).no_connection()
    }

    /// The outcome's `data` holds `msg` (the message, any type) or `<var>: value`.
    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let verbosity = args.int("verbosity").unwrap_or(0);
        let mut data = serde_json::Map::new();
        // Runs are at verbosity 0: anything asking for more is skipped, as Ansible does.
        if verbosity > 0 {
            data.insert(
                "skipped_reason".into(),
                json!("Verbosity threshold not met."),
            );
            return Ok(Plan::Done(TaskOutcome {
                skipped: true,
                data,
                ..TaskOutcome::default()
            }));
        }
        match args.raw("var") {
            Some(var) => {
                let name = match var {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                // Ansible 2.19+ shows an undefined value (or each undefined leaf of a dict
                // or list) as its error marker, and warns of each.
                let mut errors = Vec::new();
                let value = match (ctx.templar, ctx.vars) {
                    (Some(templar), Some(vars)) => match templar.eval_expr(&name, vars) {
                        Ok(mut v) => {
                            if let Some(text) =
                                crate::template::unresolved::partial_text(vars, &name)
                            {
                                mark_undefined_leaves(templar, vars, &mut v, &text, &mut errors);
                            }
                            v
                        }
                        Err(e @ TemplateError::Undefined { .. }) => {
                            let error = format!("error 1 - {e}");
                            let marker = json!(format!("<< {error} >>"));
                            errors.push(error);
                            marker
                        }
                        // An expression that fails as it runs fails the task, as Ansible's.
                        Err(TemplateError::Render { message, .. }) => {
                            return Err(ModuleError::Invalid(format!(
                                "Task failed: Error while resolving `var` expression: {message}"
                            )));
                        }
                        // Not an expression (e.g. already templated to a value): show it as is.
                        Err(TemplateError::Syntax { .. }) => var.clone(),
                    },
                    _ => {
                        return Err(ModuleError::Invalid(
                            "internal error: debug var= was planned without the task's variables"
                                .into(),
                        ));
                    }
                };
                if !errors.is_empty() {
                    let warnings = errors
                        .iter()
                        .map(|e| json!(format!("Encountered 1 template error.\n{e}")))
                        .collect();
                    data.insert("warnings".into(), Value::Array(warnings));
                }
                data.insert(name, value);
            }
            None => {
                data.insert(
                    "msg".into(),
                    args.raw("msg")
                        .cloned()
                        .unwrap_or_else(|| json!("Hello world!")),
                );
            }
        }
        Ok(Plan::Done(TaskOutcome {
            data,
            ..TaskOutcome::default()
        }))
    }
}

/// Each null of `shown` whose template in `text` (the variable as written, at the same
/// place) fails on an undefined name becomes `<< error N - why >>`, as Ansible's debug
/// shows such a leaf; `errors` gets each `error N - why`.
fn mark_undefined_leaves(
    templar: &crate::template::Templar,
    vars: &minijinja::Value,
    shown: &mut Value,
    text: &Value,
    errors: &mut Vec<String>,
) {
    match (shown, text) {
        (Value::Object(map), Value::Object(written)) => {
            for (key, value) in map.iter_mut() {
                if let Some(written) = written.get(key) {
                    mark_undefined_leaves(templar, vars, value, written, errors);
                }
            }
        }
        (Value::Array(items), Value::Array(written)) => {
            for (value, written) in items.iter_mut().zip(written) {
                mark_undefined_leaves(templar, vars, value, written, errors);
            }
        }
        (slot @ Value::Null, Value::String(_)) => {
            if let Err(e @ TemplateError::Undefined { .. }) = templar.render_value(text, vars) {
                let error = format!("error {} - {e}", errors.len() + 1);
                *slot = json!(format!("<< {error} >>"));
                errors.push(error);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Templar;
    use std::path::Path;

    fn run(v: Value) -> Result<TaskOutcome, String> {
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(json!({"x": {"a": [1]}, "n": 2}));
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            ..PlanContext::new(Path::new("/"))
        };
        match crate::modules::try_plan(&Debug, v, &ctx)? {
            Plan::Done(out) => Ok(out),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn msg_and_default() {
        let out = run(json!({"msg": "hi 2"})).unwrap();
        assert!(!out.changed && !out.failed);
        assert_eq!(Value::Object(out.data), json!({"msg": "hi 2"}));
        let out = run(json!({})).unwrap();
        assert_eq!(Value::Object(out.data), json!({"msg": "Hello world!"}));
        let out = run(json!({"msg": [1, 2]})).unwrap();
        assert_eq!(Value::Object(out.data), json!({"msg": [1, 2]}));
    }

    #[test]
    fn var_is_looked_up() {
        let out = run(json!({"var": "x"})).unwrap();
        assert_eq!(Value::Object(out.data), json!({"x": {"a": [1]}}));
        let out = run(json!({"var": "x.a[0] + n"})).unwrap();
        assert_eq!(Value::Object(out.data), json!({"x.a[0] + n": 3}));
        assert!(
            run(json!({"var": "x | urlsplit('bogus')"}))
                .unwrap_err()
                .starts_with("Task failed: Error while resolving `var` expression: ")
        );
        let out = run(json!({"var": "nope"})).unwrap();
        assert_eq!(
            Value::Object(out.data),
            json!({
                "nope": "<< error 1 - 'nope' is undefined >>",
                "warnings": ["Encountered 1 template error.\nerror 1 - 'nope' is undefined"],
            })
        );
    }

    /// ansible-playbook 2.21.5 on `x: {a: 1, b: "{{ nope }}", c: [1, "{{ nope2.y }}"]}`
    /// with `debug: var=x`, then `var=x.c`.
    #[test]
    fn undefined_leaves_show_as_error_markers_each_with_a_warning() {
        use crate::template::unresolved::{UNRESOLVED_VARS, partial_entry, template_vars};
        let templar = Templar::new();
        let text = json!({"a": 1, "b": "{{ nope }}", "c": [1, "{{ nope2.y }}"]});
        let error = templar.render_value(&json!("{{ nope }}"), &minijinja::Value::UNDEFINED);
        let mut vars = serde_json::Map::new();
        let undefined = crate::template::unresolved::undefined_value("'nope' is undefined");
        vars.insert(
            "x".into(),
            json!({"a": 1, "b": undefined, "c": [1, undefined]}),
        );
        let vars = minijinja::value::merge_maps([
            template_vars(&vars),
            minijinja::Value::from_serialize(json!({
                UNRESOLVED_VARS: {"x": partial_entry(&text, &error.unwrap_err())}
            })),
        ]);
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            ..PlanContext::new(Path::new("/"))
        };
        let run = |var: &str| match crate::modules::try_plan(&Debug, json!({"var": var}), &ctx) {
            Ok(Plan::Done(out)) => Value::Object(out.data),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            run("x"),
            json!({
                "x": {
                    "a": 1,
                    "b": "<< error 1 - 'nope' is undefined >>",
                    "c": [1, "<< error 2 - 'nope2' is undefined >>"],
                },
                "warnings": [
                    "Encountered 1 template error.\nerror 1 - 'nope' is undefined",
                    "Encountered 1 template error.\nerror 2 - 'nope2' is undefined",
                ],
            })
        );
        assert_eq!(
            run("x.c"),
            json!({
                "x.c": [1, "<< error 1 - 'nope2' is undefined >>"],
                "warnings": ["Encountered 1 template error.\nerror 1 - 'nope2' is undefined"],
            })
        );
    }

    #[test]
    fn verbosity_and_conflicts() {
        let out = run(json!({"msg": "x", "verbosity": 1})).unwrap();
        assert!(out.skipped);
        let out = run(json!({"msg": "x", "verbosity": 0})).unwrap();
        assert!(!out.skipped);
        assert_eq!(
            run(json!({"msg": "x", "var": "n"})).unwrap_err(),
            "parameters are mutually exclusive: msg|var"
        );
    }
}
