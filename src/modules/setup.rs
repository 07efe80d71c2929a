//! `setup`: gather facts. The agent reads them natively (one `Facts` op); this module
//! picks the subsets, applies `filter`, and hands them back the way Ansible's setup does,
//! as `ansible_facts` with every name prefixed `ansible_`.

use serde_json::{Map, Value};
use turbo_proto::{FactValue, Op, OpResult};

use super::{Module, ModuleArgs, ModuleError, Plan, PlanContext, TaskOutcome, unexpected};
use crate::inventory::Matcher;

pub struct Setup;

impl Module for Setup {
    fn name(&self) -> &'static str {
        "setup"
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["gather_subset", "filter", "gather_timeout", "fact_path"]
    }

    fn plan(&self, args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        Ok(Plan::Remote(Op::Facts {
            subsets: gather_subset(args)?,
        }))
    }

    fn finish(&self, args: &ModuleArgs, result: OpResult) -> TaskOutcome {
        let OpResult::Facts(facts) = result else {
            return unexpected(self.name(), result);
        };
        let (subsets, filters) = match (gather_subset(args), list_arg(args, "filter")) {
            (Ok(s), Ok(f)) => (s, f),
            (Err(e), _) | (_, Err(e)) => return TaskOutcome::failed(e.to_string()),
        };
        let matchers: Vec<Matcher> = filters
            .iter()
            .filter(|f| !f.is_empty())
            .filter_map(|f| Matcher::new(f).ok())
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

/// `gather_subset` as a list or a comma-separated string; Ansible's default is `all`.
fn gather_subset(args: &ModuleArgs) -> Result<Vec<String>, ModuleError> {
    let subsets = list_arg(args, "gather_subset")?;
    Ok(if subsets.is_empty() {
        vec!["all".to_string()]
    } else {
        subsets
    })
}

fn list_arg(args: &ModuleArgs, key: &'static str) -> Result<Vec<String>, ModuleError> {
    let split = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    };
    match args.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(split(s)),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.trim().to_string()),
                other => Err(ModuleError::WrongType {
                    what: key,
                    expected: "a list of strings",
                    got: other.to_string(),
                }),
            })
            .collect(),
        Some(other) => Err(ModuleError::WrongType {
            what: key,
            expected: "a list of strings",
            got: other.to_string(),
        }),
    }
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

    fn args(v: Value) -> ModuleArgs {
        v.as_object().unwrap().clone()
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
        assert!(
            Setup
                .plan(
                    &args(json!({"gather_subset": {"a": 1}})),
                    &PlanContext::new(Path::new("/"))
                )
                .is_err()
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
