//! `wait_for_connection`: wait until the host answers again (after a reboot, a network
//! change). Nothing to plan for the target: the executor does it (`Effect::Reconnect`),
//! pinging the agent and, when that fails, opening a new connection, until `timeout`.

use super::spec::{Arg, Spec, Unknown};
use super::{Args, Caps, Effect, Module, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct WaitForConnection;

static SPEC: Spec = Spec::new(&[
    Arg::int("connect_timeout").default_int(5),
    Arg::int("delay").default_int(0),
    Arg::int("sleep").default_int(1),
    Arg::int("timeout").default_int(600),
])
.unknown(Unknown::InvalidOptions);

/// How long to wait, in seconds, as the action reads its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reconnect {
    pub connect_timeout: u64,
    pub delay: u64,
    pub sleep: u64,
    pub timeout: u64,
}

impl Module for WaitForConnection {
    fn name(&self) -> &'static str {
        "wait_for_connection"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        if ctx.check_mode {
            return Ok(Plan::Done(TaskOutcome {
                skipped: true,
                ..TaskOutcome::default()
            }));
        }
        let secs = |name: &str, default: u64| {
            args.int(name)
                .map_or(default, |n| u64::try_from(n).unwrap_or(0))
        };
        Ok(Plan::Done(TaskOutcome {
            effects: vec![Effect::Reconnect(Reconnect {
                connect_timeout: secs("connect_timeout", 5),
                delay: secs("delay", 0),
                sleep: secs("sleep", 1),
                timeout: secs("timeout", 600),
            })],
            ..TaskOutcome::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    #[test]
    fn hands_the_wait_to_the_executor() {
        let ctx = PlanContext::new(Path::new("/"));
        let Plan::Done(out) = crate::modules::try_plan(
            &WaitForConnection,
            json!({"timeout": 30, "delay": "2"}),
            &ctx,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(
            out.effects,
            [Effect::Reconnect(Reconnect {
                connect_timeout: 5,
                delay: 2,
                sleep: 1,
                timeout: 30
            })]
        );
        assert_eq!(
            crate::modules::try_plan(&WaitForConnection, json!({"port": 22}), &ctx).unwrap_err(),
            "Invalid options for wait_for_connection: port"
        );
        let check = PlanContext {
            check_mode: true,
            ..PlanContext::new(Path::new("/"))
        };
        let Plan::Done(skipped) =
            crate::modules::try_plan(&WaitForConnection, json!({}), &check).unwrap()
        else {
            panic!()
        };
        assert!(skipped.skipped && skipped.effects.is_empty());
    }
}
