//! `meta`: instructions to the executor itself (flush_handlers, end_play, end_host...).
//! The executor acts on them before any host job starts; planning one is a no-op.

use serde_json::json;

use super::{Module, ModuleArgs, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct Meta;

impl Module for Meta {
    fn name(&self) -> &'static str {
        "meta"
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["_raw_params"]
    }

    fn free_form(&self) -> bool {
        true
    }

    fn plan(&self, args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let mut data = serde_json::Map::new();
        data.insert(
            "msg".into(),
            json!(args.get("_raw_params").cloned().unwrap_or_default()),
        );
        Ok(Plan::Done(TaskOutcome {
            data,
            ..TaskOutcome::default()
        }))
    }
}
