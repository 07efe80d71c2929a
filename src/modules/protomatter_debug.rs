//! `ansible._protomatter.debug`: ansible-core's internal action (its `_protomatter`
//! collection) that evaluates each expression of a list, written as expressions and not
//! templated first, and returns every result. A result that is undefined takes its place
//! as `<< error N - why >>` with a warning, as Ansible's replacing marker behaviour shows
//! it; an expression that fails otherwise fails the task.

use serde_json::{Value, json};

use super::spec::{Arg, Kind, Spec};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome};
use crate::template::TemplateError;

pub struct ProtomatterDebug;

/// The name a task writes it under (it has no short name).
pub const NAME: &str = "ansible._protomatter.debug";

static SPEC: Spec = Spec::new(&[Arg::new("expression", Kind::Raw).required()]);

impl Module for ProtomatterDebug {
    fn name(&self) -> &'static str {
        NAME
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.no_connection()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let expressions = match args.raw("expression") {
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => items,
            _ => {
                return Err(ModuleError::Invalid(
                    "argument 'expression' is of type list, with elements of type str, \
                     and nothing else"
                        .into(),
                ));
            }
        };
        let (Some(templar), Some(vars)) = (ctx.templar, ctx.vars) else {
            return Err(ModuleError::Invalid(
                "internal error: ansible._protomatter.debug was planned without the task's \
                 variables"
                    .into(),
            ));
        };
        let mut results = Vec::with_capacity(expressions.len());
        let mut warnings = Vec::new();
        for expression in expressions.iter().filter_map(Value::as_str) {
            match templar.eval_expr(expression, vars) {
                Ok(value) => results.push(value),
                Err(e @ TemplateError::Undefined { .. }) => {
                    let error = format!("error {} - {e}", warnings.len() + 1);
                    warnings.push(json!(format!("Encountered 1 template error.\n{error}")));
                    results.push(json!(format!("<< {error} >>")));
                }
                Err(e) => return Err(ModuleError::Invalid(e.cause())),
            }
        }
        let mut data = serde_json::Map::new();
        data.insert("expression_result".into(), Value::Array(results));
        if !warnings.is_empty() {
            data.insert("warnings".into(), Value::Array(warnings));
        }
        Ok(Plan::Done(TaskOutcome {
            data,
            verbose_always: true,
            ..TaskOutcome::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Templar;
    use std::path::Path;

    /// What ansible-core 2.21.5's action returns for the same expressions.
    #[test]
    fn undefined_results_take_their_place_as_numbered_errors() {
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(json!({"n": 2}));
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            ..PlanContext::new(Path::new("/"))
        };
        let plan = crate::modules::try_plan(
            &ProtomatterDebug,
            json!({"expression": ["n + 1", "undef('custom')", "bogus_var", "n is defined"]}),
            &ctx,
        )
        .unwrap();
        let Plan::Done(out) = plan else { panic!() };
        assert!(out.verbose_always && !out.failed && !out.changed);
        assert_eq!(
            Value::Object(out.data),
            json!({
                "expression_result": [3, "<< error 1 - custom >>", "<< error 2 - 'bogus_var' is undefined >>", true],
                "warnings": [
                    "Encountered 1 template error.\nerror 1 - custom",
                    "Encountered 1 template error.\nerror 2 - 'bogus_var' is undefined",
                ],
            })
        );
        let err = crate::modules::try_plan(&ProtomatterDebug, json!({"expression": "n"}), &ctx)
            .unwrap_err();
        assert!(err.contains("type list"), "{err}");
    }
}
