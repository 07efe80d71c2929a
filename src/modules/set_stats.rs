//! `set_stats`: the action hands `ansible_stats` back in its result; the run keeps them
//! (per host or for the whole run, added up or replaced) and the recap shows them under
//! `CUSTOM STATS` when `show_custom_stats` is on. Nothing runs on the target.

use serde_json::{Map, Value, json};

use super::spec::{Arg, Spec, Unknown};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct SetStats;

static SPEC: Spec = Spec::new(&[
    Arg::bool("aggregate").default_bool(true),
    Arg::raw("data"),
    Arg::bool("per_host").default_bool(false),
])
.unknown(Unknown::InvalidOptions);

impl Module for SetStats {
    fn name(&self) -> &'static str {
        "set_stats"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.no_connection()
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let data = match args.raw("data") {
            None => Map::new(),
            Some(Value::Object(data)) => data.clone(),
            Some(_) => {
                return Ok(Plan::Done(TaskOutcome::failed(
                    "The 'data' option needs to be a dictionary/hash",
                )));
            }
        };
        if let Some(bad) = data.keys().find(|k| !is_identifier(k)) {
            return Ok(Plan::Done(TaskOutcome::failed(format!(
                "Invalid variable name in 'set_stats': {bad:?}"
            ))));
        }
        let mut out = TaskOutcome::default();
        out.data.insert(
            "ansible_stats".into(),
            json!({
                "data": data,
                "per_host": args.bool("per_host"),
                "aggregate": args.bool("aggregate"),
            }),
        );
        Ok(Plan::Done(out))
    }
}

/// Python's `str.isidentifier()` for the ASCII names playbooks use.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(&SetStats, v, &PlanContext::new(Path::new("/")))
    }

    #[test]
    fn returns_the_stats_in_the_result() {
        let Plan::Done(out) = plan(json!({"data": {"n": 1}, "per_host": "yes"})).unwrap() else {
            panic!()
        };
        assert!(!out.changed && !out.failed);
        assert_eq!(
            out.data["ansible_stats"],
            json!({"data": {"n": 1}, "per_host": true, "aggregate": true})
        );
        let Plan::Done(bad) = plan(json!({"data": "text"})).unwrap() else {
            panic!()
        };
        assert_eq!(
            bad.msg.as_deref(),
            Some("The 'data' option needs to be a dictionary/hash")
        );
        let Plan::Done(bad) = plan(json!({"data": {"a-b": 1}})).unwrap() else {
            panic!()
        };
        assert!(bad.failed);
        assert_eq!(
            plan(json!({"data": {}, "x": 1})).unwrap_err(),
            "Invalid options for set_stats: x"
        );
    }
}
