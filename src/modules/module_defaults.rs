//! `module_defaults` matched to a module and templated when its task runs (the loader
//! reads them into levels): for the executor, and for an action that runs other modules
//! (gather_facts' facts modules), each with its own defaults.

use serde_json::Value as Json;

/// One level's `module_defaults`: each action name as written (or `group/NAME`) with its
/// defaults, a mapping or a template of one, in the order written.
pub type ModuleDefaultsLevel = Vec<(String, Json)>;

/// The defaults that apply to `module` (a registry name) written as `action`: of every
/// level, outermost first, the last entry naming it wins whole, as Ansible updates one
/// dictionary with each level's.
pub fn defaults_for<'l>(
    levels: &'l [ModuleDefaultsLevel],
    module: &str,
    action: &str,
) -> Option<&'l Json> {
    let (module, action) = (short(module), short(action));
    levels
        .iter()
        .flatten()
        .filter(|(name, _)| {
            let name = short(name);
            name == module || name == action
        })
        .map(|(_, defaults)| defaults)
        .next_back()
}

fn short(name: &str) -> &str {
    name.strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name)
}

/// Why a module's defaults could not be templated.
#[derive(Debug)]
pub enum DefaultsError {
    Template(crate::template::TemplateError),
    /// Ansible's words for defaults that are no mapping.
    NotADict(String),
}

/// `defaults` (one module's `module_defaults`, for the action written `action`) templated
/// with `vars`: only the arguments not in `given`, so that a default a task overrides is
/// never rendered.
pub fn templated_defaults(
    templar: &crate::template::Templar,
    action: &str,
    defaults: &Json,
    vars: &minijinja::Value,
    given: &serde_json::Map<String, Json>,
) -> Result<serde_json::Map<String, Json>, DefaultsError> {
    let defaults = match defaults {
        Json::String(_) => templar
            .render_value(defaults, vars)
            .map_err(DefaultsError::Template)?,
        other => other.clone(),
    };
    let Json::Object(defaults) = defaults else {
        return Err(DefaultsError::NotADict(format!(
            "module_defaults for '{action}' must resolve to a 'dict' not '{}'.",
            crate::template::python_type(&defaults)
        )));
    };
    let missing: serde_json::Map<String, Json> = defaults
        .into_iter()
        .filter(|(k, _)| !given.contains_key(k))
        .collect();
    templar
        .render_map(&missing, vars)
        .map_err(DefaultsError::Template)
}
