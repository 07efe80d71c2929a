//! `include_tasks` and `include_role`: dynamic includes. The executor acts on them itself
//! (it loads what they name and runs those tasks on the hosts that included them), so
//! they never plan agent work; these entries give the loader their argument names.

use super::spec::{Arg, Spec};
use super::{Args, Caps, Control, Module, ModuleError, Plan, PlanContext};

pub struct IncludeTasks;

impl Module for IncludeTasks {
    fn name(&self) -> &'static str {
        "include_tasks"
    }

    fn spec(&self) -> &'static Spec {
        static SPEC: Spec =
            Spec::new(&[Arg::str("_raw_params"), Arg::str("file"), Arg::raw("apply")]);
        &SPEC
    }

    /// Not free-form: Ansible splits its text into `k=v` pairs (`file=x.yml`), the rest
    /// being the file.
    fn caps(&self) -> Caps {
        Caps::TASK.control(Control::IncludeTasks).no_connection()
    }

    fn plan(&self, _args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
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

    fn spec(&self) -> &'static Spec {
        static SPEC: Spec = Spec::new(&[
            Arg::bool("allow_duplicates").default_bool(true),
            Arg::raw("apply"),
            Arg::str("defaults_from").default_str("main"),
            Arg::str("handlers_from").default_str("main"),
            Arg::str("name").aliases(&["role"]).required(),
            Arg::bool("public").default_bool(false),
            Arg::bool("rescuable").default_bool(true),
            Arg::bool("rolespec_validate").default_bool(true),
            Arg::str("tasks_from").default_str("main"),
            Arg::str("vars_from").default_str("main"),
        ]);
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.control(Control::IncludeRole).no_connection()
    }

    fn plan(&self, _args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        Err(ModuleError::NotSupported(
            "planning include_role as a module",
        ))
    }
}
