//! `setup`: gather facts. The agent reads them natively (one `Facts` op); this module
//! picks the subsets, applies `filter`, and hands them back the way Ansible's setup does,
//! as `ansible_facts` with every name prefixed `ansible_`.

use serde_json::{Map, Value};
use turbo_proto::{FactValue, Op, OpResult};

use super::spec::{Arg, Elem, Spec};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, Shown, TaskOutcome, unexpected};
use crate::fnmatch::Pattern;

pub struct Setup;

static SPEC: Spec = Spec::new(&[
    Arg::path("fact_path")
        .default_str("/etc/ansible/facts.d")
        .not_yet(),
    Arg::list("filter", Elem::Str),
    Arg::list("gather_subset", Elem::Str).default_str("all"),
    Arg::int("gather_timeout")
        .default_int(10)
        .no_effect("the agent reads facts natively, without the collectors that time out"),
]);

impl Module for Setup {
    fn name(&self) -> &'static str {
        "setup"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.shown(Shown::Nothing)
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        Ok(Plan::Remote(Op::Facts {
            subsets: gather_subset(args),
        }))
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        let OpResult::Facts(facts) = result else {
            return unexpected(self.name(), result);
        };
        let (subsets, filters) = (gather_subset(args), trimmed(args, "filter"));
        // fnmatch, as ansible_collector.py: no `~regex` here, unlike host patterns.
        let matchers: Vec<Pattern> = filters
            .iter()
            .filter(|f| !f.is_empty())
            .map(|f| Pattern::new(f))
            .collect();
        let mut ansible_facts = Map::new();
        for (name, value) in facts {
            let prefixed = format!("ansible_{name}");
            // Ansible matches the prefixed name; the bare one is accepted as well, since
            // `ansible_facts.X` is how most playbooks spell facts today.
            let wanted = matchers.is_empty()
                || matchers
                    .iter()
                    .any(|m| m.matches(&prefixed) || m.matches(&name));
            if wanted {
                ansible_facts.insert(prefixed, to_json(value));
            }
        }
        ansible_facts.insert(
            "gather_subset".into(),
            Value::Array(subsets.into_iter().map(Value::String).collect()),
        );
        ansible_facts.insert("module_setup".into(), Value::Bool(true));
        let mut data = Map::new();
        data.insert("ansible_facts".into(), Value::Object(ansible_facts));
        TaskOutcome {
            data,
            ..TaskOutcome::default()
        }
    }
}

/// `gather_subset`, trimmed; Ansible's default is `all`.
fn gather_subset(args: &Args) -> Vec<String> {
    let subsets = trimmed(args, "gather_subset");
    if subsets.is_empty() {
        vec!["all".to_string()]
    } else {
        subsets
    }
}

/// A list argument's strings, trimmed, empty ones left out (`"!all, network"`).
fn trimmed(args: &Args, key: &str) -> Vec<String> {
    args.str_list(key)
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub fn to_json(value: FactValue) -> Value {
    match value {
        FactValue::Null => Value::Null,
        FactValue::Bool(b) => Value::Bool(b),
        FactValue::Int(i) => Value::from(i),
        FactValue::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        FactValue::Str(s) => Value::String(s),
        FactValue::List(items) => Value::Array(items.into_iter().map(to_json).collect()),
        FactValue::Map(entries) => {
            Value::Object(entries.into_iter().map(|(k, v)| (k, to_json(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn args(v: Value) -> Args {
        crate::modules::check(&Setup, v)
    }

    fn plan(v: Value) -> Op {
        match Setup
            .plan(&args(v), &PlanContext::new(Path::new("/")))
            .unwrap()
        {
            Plan::Remote(op) => op,
            other => panic!("{other:?}"),
        }
    }

    fn sample() -> OpResult {
        OpResult::Facts(vec![
            ("hostname".into(), FactValue::Str("web1".into())),
            ("distribution".into(), FactValue::Str("Debian".into())),
            ("processor_vcpus".into(), FactValue::Int(2)),
            (
                "default_ipv4".into(),
                FactValue::Map(vec![
                    ("address".into(), FactValue::Str("10.0.0.5".into())),
                    ("mtu".into(), FactValue::Int(1500)),
                ]),
            ),
            (
                "mounts".into(),
                FactValue::List(vec![FactValue::Map(vec![(
                    "mount".into(),
                    FactValue::Str("/".into()),
                )])]),
            ),
            ("load".into(), FactValue::Float(0.5)),
            ("nothing".into(), FactValue::Null),
            ("flag".into(), FactValue::Bool(true)),
        ])
    }

    #[test]
    fn plans_one_facts_op_with_the_subsets() {
        assert_eq!(
            plan(json!({})),
            Op::Facts {
                subsets: vec!["all".into()]
            }
        );
        assert_eq!(
            plan(json!({"gather_subset": "!all, network"})),
            Op::Facts {
                subsets: vec!["!all".into(), "network".into()]
            }
        );
        assert_eq!(
            plan(json!({"gather_subset": ["min"], "gather_timeout": 10})),
            Op::Facts {
                subsets: vec!["min".into()]
            }
        );
        assert_eq!(
            crate::modules::try_plan(
                &Setup,
                json!({"gather_subset": {"a": 1}}),
                &PlanContext::new(Path::new("/"))
            )
            .unwrap_err(),
            "argument 'gather_subset' is of type dict and we were unable to convert to list: <class 'dict'> cannot be converted to a list"
        );
    }

    #[test]
    fn facts_come_back_prefixed_under_ansible_facts() {
        let out = Setup.finish(&args(json!({})), sample());
        assert!(!out.changed && !out.failed);
        assert_eq!(
            Value::Object(out.data),
            json!({"ansible_facts": {
                "ansible_hostname": "web1",
                "ansible_distribution": "Debian",
                "ansible_processor_vcpus": 2,
                "ansible_default_ipv4": {"address": "10.0.0.5", "mtu": 1500},
                "ansible_mounts": [{"mount": "/"}],
                "ansible_load": 0.5,
                "ansible_nothing": null,
                "ansible_flag": true,
                "gather_subset": ["all"],
                "module_setup": true,
            }})
        );
    }

    #[test]
    fn filter_globs_select_facts() {
        let out = Setup.finish(
            &args(json!({"filter": ["ansible_distribution*", "host?ame"]})),
            sample(),
        );
        let facts = out.data["ansible_facts"].as_object().unwrap();
        let names: Vec<&str> = facts.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "ansible_hostname",
                "ansible_distribution",
                "gather_subset",
                "module_setup"
            ]
        );
        let out = Setup.finish(&args(json!({"filter": "ansible_nope"})), sample());
        assert_eq!(out.data["ansible_facts"].as_object().unwrap().len(), 2);
        // A `~` is a literal character to fnmatch, not a host pattern's regex.
        let out = Setup.finish(&args(json!({"filter": "~ansible_host"})), sample());
        assert_eq!(out.data["ansible_facts"].as_object().unwrap().len(), 2);
    }

    #[test]
    fn an_error_reply_fails_the_task() {
        let out = Setup.finish(
            &args(json!({})),
            OpResult::Error(turbo_proto::OpError {
                kind: turbo_proto::ErrorKind::Io,
                message: "boom".into(),
            }),
        );
        assert!(out.failed);
        assert_eq!(out.msg.as_deref(), Some("boom"));
    }
}
