//! `add_host` and `group_by`: change the in-memory inventory for the rest of the run.
//! Both run on the controller; their results carry Ansible's `add_host` / `add_group`
//! keys for `register`, and the typed [`Effect`] the executor applies to its runtime
//! inventory.

use serde_json::{Map, Value};

use super::spec::{Arg, Elem, Spec, Unknown};
use super::{Args, Caps, Effect, Module, ModuleError, Plan, PlanContext, TaskOutcome};

/// Other arguments are the new host's variables.
static ADD_HOST_SPEC: Spec = Spec::new(&[
    Arg::list("groups", Elem::Str).aliases(&["group", "groupname"]),
    Arg::str("name").aliases(&["host", "hostname"]).required(),
])
.unknown(Unknown::Accepted);

static GROUP_BY_SPEC: Spec =
    Spec::new(&[Arg::str("key").required(), Arg::list("parents", Elem::Str)])
        .unknown(Unknown::InvalidOptions);

/// A list argument's names, trimmed, empty ones left out (`groups: "web, new"`).
fn names(args: &Args, key: &str) -> Vec<String> {
    args.str_list(key)
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub struct AddHost;

impl Module for AddHost {
    fn name(&self) -> &'static str {
        "add_host"
    }

    fn spec(&self) -> &'static Spec {
        &ADD_HOST_SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.bypass_host_loop().no_connection()
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let name = args
            .str("name")
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                ModuleError::Invalid("name, host or hostname needs to be provided".into())
            })?;
        // `name: host:port` sets the port, under the name Ansible's add_host gives it.
        let (host_name, port) = match name.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') && p.parse::<u16>().is_ok() => (h, Some(p)),
            _ => (name, None),
        };
        let groups = names(args, "groups");
        let mut host_vars = args.extra().clone();
        if let Some(port) = port {
            host_vars.insert(
                "ansible_ssh_port".into(),
                Value::from(port.parse::<u64>().unwrap_or(22)),
            );
        }
        let mut add = Map::new();
        add.insert("host_name".into(), host_name.into());
        add.insert("groups".into(), Value::from(groups.clone()));
        add.insert("host_vars".into(), Value::Object(host_vars.clone()));
        let mut data = Map::new();
        data.insert("add_host".into(), Value::Object(add));
        Ok(Plan::Done(TaskOutcome {
            changed: true,
            data,
            effects: vec![Effect::AddHost {
                name: host_name.to_string(),
                groups,
                vars: host_vars,
            }],
            ..TaskOutcome::default()
        }))
    }
}

pub struct GroupBy;

impl Module for GroupBy {
    fn name(&self) -> &'static str {
        "group_by"
    }

    fn spec(&self) -> &'static Spec {
        &GROUP_BY_SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.no_connection()
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let key = args.str("key").unwrap_or_default();
        // Ansible turns characters invalid in group names into underscores.
        let group: String = key
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let mut parents = names(args, "parents");
        if parents.is_empty() {
            parents.push("all".into());
        }
        let mut data = Map::new();
        data.insert("add_group".into(), group.clone().into());
        data.insert("parent_groups".into(), Value::from(parents.clone()));
        Ok(Plan::Done(TaskOutcome {
            data,
            effects: vec![Effect::JoinGroup { group, parents }],
            ..TaskOutcome::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(module: &dyn Module, args: Value) -> Result<TaskOutcome, String> {
        match crate::modules::try_plan(module, args, &PlanContext::new(std::path::Path::new(".")))?
        {
            Plan::Done(outcome) => Ok(outcome),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn add_host_result_names_host_groups_and_vars() {
        let o = plan(
            &AddHost,
            json!({"name": "web9:2222", "groups": "web, new", "ansible_user": "u"}),
        )
        .unwrap();
        assert!(o.changed);
        assert_eq!(
            o.data["add_host"],
            json!({"host_name": "web9", "groups": ["web", "new"],
                   "host_vars": {"ansible_user": "u", "ansible_ssh_port": 2222}})
        );
        assert!(plan(&AddHost, json!({"groups": "x"})).is_err());
    }

    #[test]
    fn group_by_cleans_the_key_and_defaults_parents() {
        let o = plan(&GroupBy, json!({"key": "os-Debian 12"})).unwrap();
        assert!(!o.changed);
        assert_eq!(o.data["add_group"], "os_Debian_12");
        assert_eq!(o.data["parent_groups"], json!(["all"]));
        let o = plan(&GroupBy, json!({"key": "k", "parents": ["a", "b"]})).unwrap();
        assert_eq!(o.data["parent_groups"], json!(["a", "b"]));
    }
}
