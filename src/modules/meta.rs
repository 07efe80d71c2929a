//! `meta`: instructions to the executor itself (flush_handlers, end_play, end_host...).
//! The executor acts on them before any host job starts; planning one is a no-op.

use serde_json::json;

use super::spec::{Arg, Spec};
use super::{Args, Caps, Control, Module, ModuleError, Plan, PlanContext, TaskOutcome};

static SPEC: Spec = Spec::new(&[Arg::str("_raw_params").choices(&[
    "clear_facts",
    "clear_host_errors",
    "end_host",
    "end_play",
    "flush_handlers",
    "noop",
    "refresh_inventory",
    "reset_connection",
    "end_batch",
    "end_role",
])]);

pub struct Meta;

impl Module for Meta {
    fn name(&self) -> &'static str {
        "meta"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK
            .free_form()
            .control(Control::Meta)
            .no_connection()
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let mut data = serde_json::Map::new();
        data.insert(
            "msg".into(),
            json!(args.str("_raw_params").unwrap_or_default()),
        );
        Ok(Plan::Done(TaskOutcome {
            data,
            ..TaskOutcome::default()
        }))
    }
}
