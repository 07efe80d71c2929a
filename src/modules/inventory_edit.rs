//! `add_host` and `group_by`: change the in-memory inventory for the rest of the run.
//! Both run on the controller; the executor applies the result's `add_host` /
//! `add_group` (Ansible's result shape) to its runtime inventory.

use serde_json::{Map, Value};

use super::{Module, ModuleArgs, ModuleError, Plan, PlanContext, TaskOutcome};

/// A list argument given as a list or a comma-separated string.
fn names(value: Option<&Value>) -> Vec<String> {
    match value {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect(),
        Some(Value::String(s)) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        Some(other) => vec![other.to_string()],
    }
}

pub struct AddHost;

impl Module for AddHost {
    fn name(&self) -> &'static str {
        "add_host"
    }

    /// Other arguments are the new host's variables.
    fn arg_names(&self) -> &'static [&'static str] {
        &["name", "hostname", "host", "groups", "group", "groupname"]
    }

    fn accepts_any_args(&self) -> bool {
        true
    }

    fn plan(&self, args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let name = ["name", "hostname", "host"]
            .iter()
            .find_map(|k| args.get(*k).and_then(Value::as_str))
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .ok_or(ModuleError::Missing("name"))?;
        // `name: host:port` sets the port, as in Ansible.
        let (host_name, port) = match name.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') && p.parse::<u16>().is_ok() => (h, Some(p)),
            _ => (name, None),
        };
        let mut groups = Vec::new();
        for key in ["groups", "group", "groupname"] {
            groups.extend(names(args.get(key)));
        }
        let mut host_vars = Map::new();
        for (k, v) in args {
            if !self.arg_names().contains(&k.as_str()) {
                host_vars.insert(k.clone(), v.clone());
            }
        }
        if let Some(port) = port {
            host_vars.insert(
                "ansible_port".into(),
                Value::from(port.parse::<u64>().unwrap_or(22)),
            );
        }
        let mut add = Map::new();
        add.insert("host_name".into(), host_name.into());
        add.insert("groups".into(), Value::from(groups));
        add.insert("host_vars".into(), Value::Object(host_vars));
        let mut data = Map::new();
        data.insert("add_host".into(), Value::Object(add));
        Ok(Plan::Done(TaskOutcome {
            changed: true,
            data,
            ..TaskOutcome::default()
        }))
    }
}

pub struct GroupBy;

impl Module for GroupBy {
    fn name(&self) -> &'static str {
        "group_by"
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["key", "parents"]
    }

    fn plan(&self, args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let key = args
            .get("key")
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .ok_or(ModuleError::Missing("key"))?;
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
        let mut parents = names(args.get("parents"));
        if parents.is_empty() {
            parents.push("all".into());
        }
        let mut data = Map::new();
        data.insert("add_group".into(), group.into());
        data.insert("parent_groups".into(), Value::from(parents));
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

    fn plan(module: &dyn Module, args: Value) -> Result<TaskOutcome, ModuleError> {
        let args = args.as_object().unwrap().clone();
        match module.plan(&args, &PlanContext::new(std::path::Path::new(".")))? {
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
                   "host_vars": {"ansible_user": "u", "ansible_port": 2222}})
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
