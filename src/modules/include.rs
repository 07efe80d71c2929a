//! `include_tasks` and `include_role`: dynamic includes. The executor acts on them itself
//! (it loads what they name and runs those tasks on the hosts that included them), so
//! they never plan agent work; these entries give the loader their argument names.

use super::{Module, ModuleArgs, ModuleError, Plan, PlanContext};

pub struct IncludeTasks;

impl Module for IncludeTasks {
    fn name(&self) -> &'static str {
        "include_tasks"
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &["_raw_params", "file", "apply"]
    }

    fn free_form(&self) -> bool {
        true
    }

    fn plan(&self, _args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        Err(ModuleError::NotSupported(
            "planning include_tasks as a module",
        ))
    }
}

pub struct IncludeRole;

impl Module for IncludeRole {
    fn name(&self) -> &'static str {
        "include_role"
    }

    fn arg_names(&self) -> &'static [&'static str] {
        crate::playbook::INCLUDE_ROLE_ARGS
    }

    fn plan(&self, _args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        Err(ModuleError::NotSupported(
            "planning include_role as a module",
        ))
    }
}

/// Whether a task is a dynamic include the executor expands when it reaches it.
pub fn is_dynamic_include(module: &dyn Module) -> bool {
    matches!(module.name(), "include_tasks" | "include_role")
}
