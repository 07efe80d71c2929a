//! `gather_facts`: Ansible's action runs its facts modules (`FACTS_MODULES`, `smart` =
//! `setup` off network devices) with the task's arguments; here that is `setup` itself,
//! with `parallel` accepted, since one `Facts` op already gathers every subset at once.

use super::spec::{Arg, Elem, Spec, Unknown};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome, setup::Setup};
use serde_json::json;
use turbo_proto::OpResult;

pub struct GatherFacts;

/// setup's arguments (the action hands them on), and its own `parallel`.
static SPEC: Spec = Spec::new(&[
    Arg::path("fact_path").default_str("/etc/ansible/facts.d"),
    Arg::list("filter", Elem::Str),
    Arg::list("gather_subset", Elem::Str).default_str("all"),
    Arg::int("gather_timeout")
        .default_int(10)
        .no_effect("the agent reads facts natively, without the collectors that time out"),
    Arg::bool("parallel").no_effect("the agent gathers every subset in one op already"),
])
// The action hands any other name on to setup, which refuses it in its own words.
.unknown(Unknown::Accepted);

const SETUP: &str = "ansible.legacy.setup";

impl Module for GatherFacts {
    fn name(&self) -> &'static str {
        "gather_facts"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Setup.caps()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let mut handed_on = args.values().clone();
        handed_on.remove("parallel");
        handed_on.retain(|_, v| !v.is_null());
        handed_on.extend(args.extra().clone());
        if let Err(msg) = Setup.spec().validate(SETUP, &handed_on) {
            return Ok(Plan::Done(module_failed(msg)));
        }
        Setup.plan(args, ctx)
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        Setup.finish(args, result)
    }
}

/// The action's report of a facts module that failed (`failed_modules`).
fn module_failed(msg: String) -> TaskOutcome {
    let mut out = TaskOutcome::failed(format!("The following modules failed to execute: {SETUP}."));
    out.data.insert("ansible_facts".into(), json!({}));
    out.data.insert(
        "failed_modules".into(),
        json!({SETUP: {"changed": false, "failed": true, "msg": msg}}),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn plans_what_setup_plans() {
        let ctx = PlanContext::new(Path::new("/"));
        let ours = crate::modules::try_plan(
            &GatherFacts,
            json!({"gather_subset": ["!all", "!min", "network"], "parallel": true}),
            &ctx,
        )
        .unwrap();
        let setup = crate::modules::try_plan(
            &Setup,
            json!({"gather_subset": ["!all", "!min", "network"]}),
            &ctx,
        )
        .unwrap();
        assert_eq!(ours, setup);
        let Plan::Done(out) =
            crate::modules::try_plan(&GatherFacts, json!({"bogus": 1}), &ctx).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("The following modules failed to execute: ansible.legacy.setup.")
        );
        assert_eq!(
            out.data["failed_modules"][SETUP]["msg"],
            "Unsupported parameters for (ansible.legacy.setup) module: bogus. Supported parameters include: fact_path, filter, gather_subset, gather_timeout."
        );
    }
}
