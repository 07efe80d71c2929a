//! `package`: Ansible's generic package action. It picks the manager (`use`, else the
//! `ansible_package_use` variable, else the `pkg_mgr` fact, gathered here when the play did
//! not) and runs that module with the task's other arguments, checked against that
//! module's own spec, as Ansible hands them to `ansible.legacy.<manager>`. Which managers
//! run is the registry's business: one turbo-play does not run yet fails as its row says.

use turbo_proto::{Op, OpResult};

use super::spec::{Arg, Elem, Spec, Unknown};
use super::{Args, Caps, Module, ModuleArgs, ModuleError, Next, Plan, PlanContext, TaskOutcome};

pub struct Package;

// The module's documentation has `name` and `state` required, but the action never checks
// its own spec: the manager's module does (apt's `state` defaults to present), and an
// unknown manager fails before any argument is looked at.
static SPEC: Spec = Spec::new(&[
    Arg::list("name", Elem::Str),
    Arg::str("state"),
    Arg::str("use").default_str("auto"),
])
// The action hands every other argument to the manager's module, which checks them.
.unknown(Unknown::Accepted);

impl Module for Package {
    fn name(&self) -> &'static str {
        "package"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// Its managers' ops go as they plan them: a manager that does not simulate itself is
    /// refused in check mode rather than run without the agent's check flag.
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode().squash_loop()
    }

    /// ansible-core's own package managers (others come from collections).
    fn backends(&self) -> &'static [&'static str] {
        &["apt", "dnf", "dnf5", "yum"]
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let forwarded = forwarded_args(args);
        let check = ctx.check_mode;
        if let Some(manager) = chosen_manager(args, ctx) {
            return dispatch(&manager, &forwarded, ctx);
        }
        // No fact: Ansible gathers `!all` (the `min` subset has pkg_mgr) to find it.
        let (playbook_dir, diff) = (ctx.playbook_dir.to_path_buf(), ctx.diff);
        let backend_defaults = ctx.backend_defaults.cloned();
        Ok(Plan::Step(
            Op::Facts {
                subsets: vec!["!all".into()],
            },
            Next::new(move |reply| {
                let manager = match reply {
                    OpResult::Facts(facts) => facts.into_iter().find_map(|(k, v)| match v {
                        turbo_proto::FactValue::Str(s) if k == "pkg_mgr" => Some(s),
                        _ => None,
                    }),
                    OpResult::Error(e) => {
                        return Ok(Plan::Done(TaskOutcome::failed(format!(
                            "Failed to fetch ansible_pkg_mgr to determine the package action backend: {}",
                            e.message
                        ))));
                    }
                    _ => None,
                };
                let Some(manager) = manager else {
                    return Ok(Plan::Done(TaskOutcome::failed(
                        "Could not detect a package manager. Try using the \"use\" option.",
                    )));
                };
                let ctx = PlanContext {
                    check_mode: check,
                    diff,
                    backend_defaults: backend_defaults.as_ref(),
                    ..PlanContext::new(&playbook_dir)
                };
                dispatch(&manager, &forwarded, &ctx)
            }),
        ))
    }
}

/// The task's arguments without `use`, as the action passes them on (`name` and `state`
/// only when written: the manager's defaults stand in for the others).
fn forwarded_args(args: &Args) -> ModuleArgs {
    let mut out = ModuleArgs::new();
    for (k, v) in args.values() {
        if k != "use" && !v.is_null() {
            out.insert(k.clone(), v.clone());
        }
    }
    for (k, v) in args.extra() {
        out.insert(k.clone(), v.clone());
    }
    out
}

/// `use`, else `ansible_package_use`, else the gathered `pkg_mgr` fact.
fn chosen_manager(args: &Args, ctx: &PlanContext) -> Option<String> {
    let written = args.str("use").unwrap_or("auto");
    if written != "auto" {
        return Some(written.to_string());
    }
    let vars = ctx.vars?;
    let text = |v: minijinja::Value| {
        (!v.is_undefined() && !v.is_none())
            .then(|| v.as_str().map(str::to_string))
            .flatten()
            .filter(|s| !s.is_empty())
    };
    if let Some(used) = vars.get_attr("ansible_package_use").ok().and_then(text) {
        return Some(used);
    }
    vars.get_attr("ansible_facts")
        .ok()
        .and_then(|facts| facts.get_attr("pkg_mgr").ok())
        .and_then(text)
}

/// Runs `manager`'s module on the forwarded arguments; its replies are finished by it.
fn dispatch(manager: &str, forwarded: &ModuleArgs, ctx: &PlanContext) -> Result<Plan, ModuleError> {
    if manager == "auto" || manager.is_empty() {
        return Ok(Plan::Done(TaskOutcome::failed(
            "Could not detect which package manager to use. Try gathering facts or setting the \"use\" option.",
        )));
    }
    let Some(module) = super::find(manager) else {
        return Ok(Plan::Done(TaskOutcome::failed(format!(
            "Could not find a matching action for the \"{manager}\" package manager."
        ))));
    };
    if ctx.check_mode && !module.caps().own_check_mode && super::is_implemented(manager) {
        return Ok(Plan::Done(TaskOutcome::failed(format!(
            "turbo-play runs package in check mode only with a manager that simulates by itself (apt); run this task as '{manager}' directly"
        ))));
    }
    let shown = if manager.contains('.') {
        manager.to_string()
    } else {
        format!("ansible.legacy.{manager}")
    };
    // The manager's own module_defaults under what the action hands on.
    let mut handed = ctx.defaults_of(manager.strip_prefix("ansible.builtin.").unwrap_or(manager));
    handed.extend(forwarded.clone());
    let args = match module.spec().validate(&shown, &handed) {
        Ok(args) => args,
        Err(msg) => return Ok(Plan::Done(TaskOutcome::failed(msg))),
    };
    let plan = module.plan(&args, ctx)?;
    Ok(finished_by(module, Arc::new(args), ctx.check_mode, plan))
}

use std::sync::Arc;

/// `plan` with every reply that would go to `module.finish` finished by it here, since
/// the executor finishes a task's replies with the task's module (package).
fn finished_by(module: &'static dyn Module, args: Arc<Args>, check: bool, plan: Plan) -> Plan {
    match plan {
        Plan::Done(out) => Plan::Done(out),
        Plan::Remote(op) => Plan::Step(
            op,
            Next::new(move |reply| {
                Ok(Plan::Done(if check {
                    module.finish_check(&args, reply)
                } else {
                    module.finish(&args, reply)
                }))
            }),
        ),
        Plan::Step(op, next) => Plan::Step(
            op,
            next.and_then(move |plan| Ok(finished_by(module, args, check, plan))),
        ),
        Plan::Flow(flow) => Plan::Flow(super::flow::and_then(flow, move |plan| {
            Ok(finished_by(module, args, check, plan))
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::try_plan;
    use serde_json::json;

    fn with_vars(vars: &minijinja::Value) -> PlanContext<'_> {
        PlanContext {
            vars: Some(vars),
            ..PlanContext::new(std::path::Path::new("/"))
        }
    }

    #[test]
    fn the_pkg_mgr_fact_picks_apt_and_apt_plans() {
        let vars = minijinja::Value::from_serialize(json!({"ansible_facts": {"pkg_mgr": "apt"}}));
        let plan = try_plan(
            &Package,
            json!({"name": "tree", "state": "present"}),
            &with_vars(&vars),
        )
        .unwrap();
        let Plan::Step(Op::Batch(ops), _) = plan else {
            panic!("apt's first look: {plan:?}")
        };
        assert_eq!(
            ops.len(),
            5,
            "python3-apt, the cache's stats, marks, dpkg-query"
        );
    }

    #[test]
    fn use_wins_and_the_managers_spec_checks_the_rest() {
        let vars = minijinja::Value::from_serialize(json!({"ansible_facts": {"pkg_mgr": "dnf"}}));
        let plan = try_plan(
            &Package,
            json!({"name": "tree", "state": "present", "use": "apt", "colour": "red"}),
            &with_vars(&vars),
        )
        .unwrap();
        let Plan::Done(out) = plan else {
            panic!("{plan:?}")
        };
        assert!(
            out.msg
                .unwrap()
                .starts_with("Unsupported parameters for (ansible.legacy.apt) module: colour."),
        );
    }

    /// The manager's own module_defaults go under the arguments the action hands on.
    #[test]
    fn the_managers_module_defaults_are_applied() {
        let vars = minijinja::Value::from_serialize(json!({"ansible_facts": {"pkg_mgr": "apt"}}));
        let defaults = serde_json::Map::from_iter([("apt".to_string(), json!({"colour": "red"}))]);
        let ctx = PlanContext {
            backend_defaults: Some(&defaults),
            ..with_vars(&vars)
        };
        let Plan::Done(out) = try_plan(&Package, json!({"name": "tree"}), &ctx).unwrap() else {
            panic!("apt's spec sees the default")
        };
        assert!(
            out.msg
                .unwrap()
                .starts_with("Unsupported parameters for (ansible.legacy.apt) module: colour.")
        );
    }

    #[test]
    fn unknown_managers_and_missing_facts_fail_as_ansible() {
        let vars = minijinja::Value::from_serialize(json!({"ansible_package_use": "zypper9"}));
        let Plan::Done(out) = try_plan(
            &Package,
            json!({"name": "x", "state": "present"}),
            &with_vars(&vars),
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("Could not find a matching action for the \"zypper9\" package manager.")
        );
        let Plan::Done(out) = try_plan(&Package, json!({"name": "x"}), &with_vars(&vars)).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("Could not find a matching action for the \"zypper9\" package manager."),
            "the action checks no argument of its own, `state` included"
        );
        let vars = minijinja::Value::from_serialize(json!({}));
        let plan = try_plan(
            &Package,
            json!({"name": "x", "state": "present"}),
            &with_vars(&vars),
        )
        .unwrap();
        assert!(matches!(plan, Plan::Step(Op::Facts { .. }, _)));
    }
}
