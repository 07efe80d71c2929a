//! `set_fact`: set host variables (above task vars). Runs on the controller only; the
//! executor takes the variables from the result's `ansible_facts`.

use serde_json::{Map, Value};

use super::spec::{Arg, Spec, Unknown};
use super::{Args, Caps, FactsLayer, Module, ModuleError, Plan, PlanContext, TaskOutcome};
use crate::plugins::catalog::is_identifier;

/// Any other argument is a variable to set.
static SPEC: Spec =
    Spec::new(&[Arg::bool("cacheable").default_bool(false)]).unknown(Unknown::Accepted);

pub struct SetFact;

impl Module for SetFact {
    fn name(&self) -> &'static str {
        "set_fact"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.facts(FactsLayer::SetFact).no_connection()
    }

    fn templates_arg_names(&self) -> bool {
        true
    }

    /// `cacheable` is accepted: with no fact cache between runs, a cacheable fact behaves
    /// as a plain one for the rest of this run.
    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let mut facts = Map::new();
        for (name, value) in args.extra() {
            if !is_identifier(name) {
                return Err(ModuleError::Invalid(format!(
                    "The variable name '{name}' is not valid. Variables must start with a letter or underscore character, and contain only letters, numbers and underscores."
                )));
            }
            // Values are kept as they came: ansible-core 2.21 no longer turns "yes" or "true"
            // into booleans here (that conversion went with jinja2_native).
            facts.insert(name.clone(), value.clone());
        }
        if facts.is_empty() {
            return Err(ModuleError::Invalid(
                "No key/value pairs provided, at least one is required for this action to succeed"
                    .into(),
            ));
        }
        let mut data = Map::new();
        data.insert("ansible_facts".into(), Value::Object(facts));
        Ok(Plan::Done(TaskOutcome {
            data,
            ..TaskOutcome::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn plan(args: Value) -> Result<TaskOutcome, String> {
        match crate::modules::try_plan(&SetFact, args, &PlanContext::new(Path::new("/")))? {
            Plan::Done(out) => Ok(out),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn facts_come_back_under_ansible_facts() {
        let out =
            plan(json!({"a": 1, "b": "Yes", "c": "no", "d": "text", "e": [1], "cacheable": "yes"}))
                .unwrap();
        assert!(!out.changed && !out.failed && !out.skipped);
        assert_eq!(
            Value::Object(out.data),
            json!({"ansible_facts": {"a": 1, "b": "Yes", "c": "no", "d": "text", "e": [1]}})
        );
    }

    #[test]
    fn bad_names_and_no_pairs_fail() {
        assert_eq!(
            plan(json!({})).unwrap_err(),
            "No key/value pairs provided, at least one is required for this action to succeed"
        );
        assert_eq!(
            plan(json!({"cacheable": true})).unwrap_err(),
            "No key/value pairs provided, at least one is required for this action to succeed"
        );
        assert!(
            plan(json!({"1x": 1}))
                .unwrap_err()
                .starts_with("The variable name '1x' is not valid.")
        );
        assert!(plan(json!({"a": 1, "cacheable": "maybe"})).is_err());
    }

    #[test]
    fn identifiers() {
        assert!(is_identifier("_a1"));
        assert!(is_identifier("abc"));
        assert!(!is_identifier("a-b"));
        assert!(!is_identifier(""));
        assert!(!is_identifier("9"));
    }
}
