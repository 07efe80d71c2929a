//! `hostvars`: every inventory host's variables, built only for the hosts a template
//! actually reads. Building all of them for every task on every host would cost
//! hosts² maps per task; a lazy object costs nothing until `hostvars[h]` is used, and
//! then one map per host read (cached for the rest of that task's templating).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

use minijinja::value::{Enumerator, Object, ObjectRepr, Value as MjValue};
use serde_json::{Map, Value};

use super::RunContext;
use super::vars::OMIT;

/// The Ansible release whose behaviour turbo-play follows, as `ansible_version`.
pub const ANSIBLE_VERSION: (u64, u64, u64) = (2, 21, 0);

/// Ansible's `ansible_version` variable.
pub fn ansible_version() -> Value {
    let (major, minor, revision) = ANSIBLE_VERSION;
    let full = format!("{major}.{minor}.{revision}");
    serde_json::json!({
        "full": full,
        "major": major,
        "minor": minor,
        "revision": revision,
        "string": full,
    })
}

pub(crate) struct HostVars {
    ctx: Weak<RunContext>,
    playbook_dir: PathBuf,
    built: Mutex<HashMap<String, MjValue>>,
    /// Hosts whose variables are being resolved: a template of theirs that reads their
    /// own `hostvars` sees them as written instead of recursing.
    resolving: Mutex<std::collections::HashSet<String>>,
}

impl std::fmt::Debug for HostVars {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("hostvars")
    }
}

impl HostVars {
    pub fn new(ctx: Weak<RunContext>, playbook_dir: PathBuf) -> HostVars {
        HostVars {
            ctx,
            playbook_dir,
            built: Mutex::new(HashMap::new()),
            resolving: Mutex::new(Default::default()),
        }
    }
}

impl Object for HostVars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &MjValue) -> Option<MjValue> {
        let name = key.as_str()?;
        if let Some(built) = self.built.lock().expect("hostvars lock").get(name) {
            return Some(built.clone());
        }
        let ctx = self.ctx.upgrade()?;
        let (mut vars, keep) = one_host(&ctx, &self.playbook_dir, name)?;
        // Ansible templates what hostvars holds when it is read, as any variable.
        if !self
            .resolving
            .lock()
            .expect("hostvars lock")
            .insert(name.to_string())
        {
            vars.remove("omit");
            return Some(MjValue::from_serialize(&vars));
        }
        super::vars::resolve_hostvars_templates(
            &ctx.templar,
            &mut vars,
            |k| keep.contains(k),
            &MjValue::from_dyn_object(self.clone()),
        );
        self.resolving.lock().expect("hostvars lock").remove(name);
        // `omit` is there for the host's templates to read, not a variable of the host's.
        vars.remove("omit");
        let value = crate::template::unresolved::template_vars(&vars);
        self.built
            .lock()
            .expect("hostvars lock")
            .insert(name.to_string(), value.clone());
        Some(value)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        let Some(ctx) = self.ctx.upgrade() else {
            return Enumerator::Empty;
        };
        let mut names: Vec<MjValue> = ctx
            .inventory()
            .hosts()
            .map(|h| MjValue::from(h.name.clone()))
            .collect();
        let runtime = ctx.runtime.lock().expect("runtime lock");
        names.extend(
            runtime
                .added_hosts()
                .filter(|h| ctx.inventory().host(h).is_none())
                .map(MjValue::from),
        );
        Enumerator::Values(names)
    }
}

/// What `hostvars[name]` holds, as in Ansible: the host's inventory variables (with
/// group_vars/host_vars files), facts, include_vars, set facts, registered results, extra vars and its
/// own magic variables; not the play's or task's vars. `None` for a host the inventory
/// does not know.
/// With the names that hold data rather than templates (facts, registered results).
fn one_host(
    ctx: &RunContext,
    playbook_dir: &std::path::Path,
    name: &str,
) -> Option<(Map<String, Value>, std::collections::HashSet<String>)> {
    let mut keep = std::collections::HashSet::new();
    let (added, group_names) = {
        let runtime = ctx.runtime.lock().expect("runtime lock");
        (
            runtime.host_vars(name).cloned(),
            runtime.group_names(&ctx.inventory(), name),
        )
    };
    if ctx.inventory().host(name).is_none() && added.is_none() {
        return None;
    }
    let mut vars = ctx
        .runtime
        .lock()
        .expect("runtime lock")
        .inventory_vars(&ctx.inventory(), name, playbook_dir)
        .ok()?;
    let state = ctx.hosts.lock().expect("hosts lock").get(name).cloned();
    if let Some(state) = state {
        let facts = state.facts.lock().expect("facts lock").clone();
        for (k, v) in &facts {
            vars.insert(format!("ansible_{k}"), v.clone());
            keep.insert(format!("ansible_{k}"));
        }
        vars.insert("ansible_facts".into(), Value::Object(facts));
        keep.insert("ansible_facts".into());
        keep.extend(state.registered.lock().expect("vars lock").keys().cloned());
        keep.extend(state.set_facts.lock().expect("vars lock").keys().cloned());
        for layer in [&state.included_vars, &state.set_facts, &state.registered] {
            for (k, v) in layer.lock().expect("vars lock").iter() {
                vars.insert(k.clone(), v.clone());
            }
        }
    }
    for (k, v) in &ctx.opts.extra_vars {
        vars.insert(k.clone(), v.clone());
    }
    let short = name.split('.').next().unwrap_or(name);
    vars.insert("inventory_hostname".into(), name.into());
    vars.insert("inventory_hostname_short".into(), short.into());
    vars.insert("group_names".into(), Value::from(group_names));
    vars.insert(
        "playbook_dir".into(),
        Value::from(playbook_dir.display().to_string()),
    );
    vars.insert("ansible_version".into(), ansible_version());
    vars.insert("omit".into(), Value::from(OMIT));
    Some((vars, keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansible_version_mimics_the_release_followed() {
        let v = ansible_version();
        assert_eq!(v["major"], 2);
        assert_eq!(v["minor"], 21);
        assert_eq!(v["full"], "2.21.0");
        assert_eq!(v["string"], v["full"]);
        assert!(v["revision"].is_u64());
    }

    #[test]
    fn a_dropped_run_leaves_hostvars_empty_not_broken() {
        let hv = MjValue::from_object(HostVars::new(Weak::new(), PathBuf::from(".")));
        assert!(hv.get_attr("h1").unwrap().is_undefined());
        assert_eq!(hv.try_iter().unwrap().count(), 0);
    }
}
