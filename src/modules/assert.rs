//! `assert` and `fail`: judge conditions on the controller; nothing goes to the target.

use serde_json::{Value, json};

use super::{Module, ModuleArgs, ModuleError, Plan, PlanContext, TaskOutcome, arg_bool};

/// Marks a result to be shown even without -v, as Ansible's own key does; the executor
/// takes it out before anything is registered.
pub const VERBOSE_ALWAYS: &str = "_ansible_verbose_always";

pub struct Assert;

impl Module for Assert {
    fn name(&self) -> &'static str {
        "assert"
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["that", "fail_msg", "msg", "success_msg", "quiet"]
    }

    /// Stops at the first condition that does not hold, and names it, as Ansible does.
    fn plan(&self, args: &ModuleArgs, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let (Some(templar), Some(vars)) = (ctx.templar, ctx.vars) else {
            return Err(ModuleError::Invalid(
                "internal error: assert was planned without the task's variables".into(),
            ));
        };
        let thats: Vec<&Value> = match args.get("that") {
            None | Some(Value::Null) => {
                return Err(ModuleError::Invalid(
                    "conditional required in \"that\" string".into(),
                ));
            }
            Some(Value::Array(items)) => items.iter().collect(),
            Some(one) => vec![one],
        };
        let fail_msg = args
            .get("fail_msg")
            .or_else(|| args.get("msg"))
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| json!("Assertion failed"));
        let success_msg = args
            .get("success_msg")
            .filter(|v| !v.is_null())
            .cloned()
            .unwrap_or_else(|| json!("All assertions passed"));
        let quiet = arg_bool(args, "quiet", false)?;
        let mut data = serde_json::Map::new();
        if !quiet {
            data.insert(VERBOSE_ALWAYS.into(), json!(true));
        }
        for that in thats {
            // `that` was templated with the other arguments: a lone `{{ x }}` may already
            // be the value itself.
            let (shown, holds) = match that {
                Value::String(condition) => (
                    condition.clone(),
                    templar.eval_condition(condition, vars).map_err(|e| {
                        ModuleError::Invalid(format!(
                            "The conditional check '{condition}' failed. The error was: {e}"
                        ))
                    })?,
                ),
                Value::Bool(b) => (python_bool(*b).to_string(), *b),
                other => (other.to_string(), truthy(other)),
            };
            if !holds {
                data.insert("evaluated_to".into(), json!(false));
                data.insert("assertion".into(), json!(shown));
                data.insert("msg".into(), fail_msg);
                return Ok(Plan::Done(TaskOutcome {
                    failed: true,
                    data,
                    ..TaskOutcome::default()
                }));
            }
        }
        data.insert("msg".into(), success_msg);
        Ok(Plan::Done(TaskOutcome {
            data,
            ..TaskOutcome::default()
        }))
    }
}

pub struct Fail;

impl Module for Fail {
    fn name(&self) -> &'static str {
        "fail"
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["msg"]
    }

    fn plan(&self, args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let mut data = serde_json::Map::new();
        let msg = args
            .get("msg")
            .filter(|v| !v.is_null())
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

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Templar;
    use std::path::Path;

    fn plan(module: &dyn Module, args: Value) -> Result<TaskOutcome, ModuleError> {
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(json!({"x": 2, "name": "web"}));
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            ..PlanContext::new(Path::new("/"))
        };
        match module.plan(args.as_object().unwrap(), &ctx)? {
            Plan::Done(out) => Ok(out),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn passing_assertions_say_so_verbosely() {
        let out = plan(&Assert, json!({"that": ["x == 2", "name is string"]})).unwrap();
        assert!(!out.failed && !out.changed);
        assert_eq!(
            Value::Object(out.data),
            json!({"_ansible_verbose_always": true, "msg": "All assertions passed"})
        );
        let out = plan(
            &Assert,
            json!({"that": "x > 1", "success_msg": "fine", "quiet": true}),
        )
        .unwrap();
        assert_eq!(Value::Object(out.data), json!({"msg": "fine"}));
    }

    #[test]
    fn the_first_failing_assertion_is_named() {
        let out = plan(&Assert, json!({"that": ["x == 2", "x == 3", "nope"]})).unwrap();
        assert!(out.failed);
        assert_eq!(
            Value::Object(out.data),
            json!({
                "_ansible_verbose_always": true,
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
            plan(&Assert, json!({})).unwrap_err().to_string(),
            "conditional required in \"that\" string"
        );
        let err = plan(&Assert, json!({"that": "nope == 1"})).unwrap_err();
        assert_eq!(
            err.to_string(),
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
    }
}
