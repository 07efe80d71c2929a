//! A task whose module name is a template (`action: "{{ module_to_run }} msg=hi"`,
//! `action: {module: "{{ m }}"}`): Ansible renders the name per host when the task runs and
//! only then finds the module, so the task stands for "a module not known yet" until the
//! executor resolves it ([`resolve`]).

use super::spec::{Spec, Unknown};
use super::{Args, Module, ModuleError, Plan, PlanContext, TaskOutcome};

/// The stand-in a templated action loads as.
pub struct TemplatedAction;

/// Any arguments: only the module the name renders to knows its own.
static ANY_ARGS: Spec = Spec::new(&[]).unknown(Unknown::Accepted);

impl Module for TemplatedAction {
    fn name(&self) -> &'static str {
        // Not a module name anyone can write: never found in the registry.
        "<templated action>"
    }

    fn spec(&self) -> &'static Spec {
        &ANY_ARGS
    }

    fn plan(&self, _args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        // The executor swaps in the rendered module before planning; reaching this means a
        // path that skipped that step.
        Ok(Plan::Done(TaskOutcome::failed(
            "the task's module name is a template that was not rendered".to_string(),
        )))
    }
}

/// Whether a module name as written must wait for the task's variables.
pub fn is_templated(written: &str) -> bool {
    written.contains("{{") || written.contains("{%")
}

/// Whether `module` is the stand-in of a templated action.
pub fn is_stand_in(module: &dyn Module) -> bool {
    // By name, which no real module can have: references to a zero-sized value need not
    // share an address.
    module.name() == TemplatedAction.name()
}

/// The module a rendered action name names, with Ansible's message when none does.
pub fn resolve(rendered: &str) -> Result<&'static dyn Module, String> {
    let name = rendered.trim();
    super::find(name)
        .ok_or_else(|| format!("Task failed: Cannot resolve '{name}' to an action or module."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rendered_name_finds_its_module_or_fails_as_ansible() {
        assert!(is_templated("{{ module_to_run }}"));
        assert!(is_templated("{{ prefix }}file"));
        assert!(!is_templated("ansible.builtin.file"));
        assert_eq!(resolve("ansible.builtin.debug").unwrap().name(), "debug");
        assert_eq!(
            resolve("nope").err().unwrap(),
            "Task failed: Cannot resolve 'nope' to an action or module."
        );
        assert!(is_stand_in(&TemplatedAction));
        assert!(!is_stand_in(super::super::find("debug").unwrap()));
    }
}
