//! `include_vars`: read a variables file on the controller and set its variables on the
//! host (above task vars). The executor takes them from the result's `ansible_facts`.

use std::path::Path;

use serde_json::{Map, Value};

use super::spec::{Arg, Elem, Spec, Unknown};
use super::{
    Args, Caps, FactsLayer, Module, ModuleArgs, ModuleError, Plan, PlanContext, TaskOutcome,
};
use crate::kv_args::parse_kv;
use crate::plugins::catalog::is_identifier;
use crate::vars_file::{read_vars_file, vars_file_candidates};

pub struct IncludeVars;

/// Ansible's include_vars action takes these names; the directory forms are not here yet.
static SPEC: Spec = Spec::new(&[
    Arg::str("_raw_params"),
    Arg::int("depth").not_yet(),
    Arg::path("dir").not_yet(),
    Arg::list("extensions", Elem::Str).not_yet(),
    Arg::path("file"),
    Arg::str("files_matching").not_yet(),
    Arg::str("hash_behaviour")
        .choices(&["replace", "merge"])
        .not_yet(),
    Arg::list("ignore_files", Elem::Str).not_yet(),
    Arg::bool("ignore_unknown_extensions").not_yet(),
    Arg::str("name"),
])
.unknown(Unknown::NotValidOptionIn);

/// The names a free-form `include_vars: file=a.yml name=x` may use.
const FREE_FORM_NAMES: &[&str] = &["file", "name"];

impl Module for IncludeVars {
    fn name(&self) -> &'static str {
        "include_vars"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// `include_vars: common.yml` names the file.
    fn caps(&self) -> Caps {
        Caps::TASK
            .free_form()
            .facts(FactsLayer::IncludeVars)
            .no_connection()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let args = split_raw_params(args.values())?;
        let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_string);
        let file = match (text("file"), text("_raw_params")) {
            (Some(_), Some(_)) => {
                return Err(ModuleError::Invalid(
                    "include_vars takes the file either as `file=` or as the free-form argument, not both"
                        .into(),
                ));
            }
            (Some(f), None) | (None, Some(f)) => f,
            (None, None) => {
                return Err(ModuleError::Invalid(
                    "include_vars needs a file: `include_vars: file=vars.yml` (dir= is not supported yet)"
                        .into(),
                ));
            }
        };
        // In a role, its own vars/ (and the role directory) come first, as in Ansible.
        let mut candidates = match ctx.role_dir {
            Some(role) if !Path::new(&file).is_absolute() => vars_file_candidates(role, &file),
            _ => Vec::new(),
        };
        candidates.extend(vars_file_candidates(ctx.playbook_dir, &file));
        let Some(path) = candidates.iter().find(|p| p.is_file()) else {
            let searched: Vec<String> =
                candidates.iter().map(|p| p.display().to_string()).collect();
            return Err(ModuleError::Invalid(format!(
                "Could not find or access '{file}' on the Ansible Controller (searched {})",
                searched.join(", ")
            )));
        };
        let vars = read_vars_file(path).map_err(|e| ModuleError::Invalid(e.to_string()))?;
        let facts = match text("name") {
            Some(name) => {
                if !is_identifier(&name) {
                    return Err(ModuleError::Invalid(format!(
                        "name={name} is not a valid variable name"
                    )));
                }
                let mut wrapped = Map::new();
                wrapped.insert(name, Value::Object(vars));
                wrapped
            }
            None => vars,
        };
        let mut data = Map::new();
        data.insert("ansible_facts".into(), Value::Object(facts));
        data.insert(
            "ansible_included_var_files".into(),
            Value::from(vec![path.display().to_string()]),
        );
        Ok(Plan::Done(TaskOutcome {
            data,
            ..TaskOutcome::default()
        }))
    }
}

/// A free-form `include_vars: file=a.yml name=x` arrives as one raw string (the loader
/// keeps only command's options out of free-form text); split it into arguments here.
fn split_raw_params(args: &ModuleArgs) -> Result<ModuleArgs, ModuleError> {
    let mut out = args.clone();
    let Some(Value::String(raw)) = args.get("_raw_params") else {
        return Ok(out);
    };
    let parsed = parse_kv(raw, None);
    out.remove("_raw_params");
    for (k, v) in parsed.pairs {
        if !FREE_FORM_NAMES.contains(&k.as_str()) {
            return Err(ModuleError::Invalid(format!(
                "{k} is not a valid option in include_vars"
            )));
        }
        out.insert(k, Value::String(v));
    }
    let rest = parsed.raw.trim();
    if !rest.is_empty() {
        out.insert("_raw_params".into(), Value::String(rest.to_string()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(dir: &Path, args: Value) -> Result<TaskOutcome, String> {
        match crate::modules::try_plan(&IncludeVars, args, &PlanContext::new(dir))? {
            Plan::Done(out) => Ok(out),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn in_a_role_its_vars_dir_comes_first() {
        let dir = fixture();
        let role = dir.path().join("roles/r");
        std::fs::create_dir_all(role.join("vars")).unwrap();
        std::fs::write(role.join("vars/common.yml"), "a: from_role\n").unwrap();
        let ctx = PlanContext {
            role_dir: Some(&role),
            ..PlanContext::new(dir.path())
        };
        let plan = |file: &str| match crate::modules::try_plan(
            &IncludeVars,
            json!({"file": file}),
            &ctx,
        ) {
            Ok(Plan::Done(out)) => out.data["ansible_facts"].clone(),
            other => panic!("{other:?}"),
        };
        assert_eq!(plan("common.yml"), json!({"a": "from_role"}));
        assert_eq!(plan("top.json"), json!({"t": true}));
    }

    fn fixture() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("vars")).unwrap();
        std::fs::write(dir.path().join("vars/common.yml"), "a: 1\nb: [x]\n").unwrap();
        std::fs::write(dir.path().join("top.json"), r#"{"t": true}"#).unwrap();
        dir
    }

    #[test]
    fn free_form_file_from_the_vars_dir() {
        let dir = fixture();
        let out = plan(dir.path(), json!({"_raw_params": "common.yml"})).unwrap();
        assert!(!out.changed && !out.failed);
        assert_eq!(out.data["ansible_facts"], json!({"a": 1, "b": ["x"]}));
        assert_eq!(
            out.data["ansible_included_var_files"],
            json!([dir.path().join("vars/common.yml").display().to_string()])
        );
        let out = plan(dir.path(), json!({"file": "top.json"})).unwrap();
        assert_eq!(out.data["ansible_facts"], json!({"t": true}));
    }

    #[test]
    fn name_puts_them_under_a_key_and_kv_text_is_split() {
        let dir = fixture();
        let out = plan(dir.path(), json!({"file": "common.yml", "name": "cfg"})).unwrap();
        assert_eq!(
            out.data["ansible_facts"],
            json!({"cfg": {"a": 1, "b": ["x"]}})
        );
        let out = plan(dir.path(), json!({"_raw_params": "file=top.json name=t2"})).unwrap();
        assert_eq!(out.data["ansible_facts"], json!({"t2": {"t": true}}));
        let err = plan(dir.path(), json!({"_raw_params": "file=top.json bogus=1"})).unwrap_err();
        assert!(
            err.to_string()
                .contains("bogus is not a valid option in include_vars")
        );
    }

    #[test]
    fn missing_and_broken_files_fail_with_the_path() {
        let dir = fixture();
        let err = plan(dir.path(), json!({"file": "nope.yml"}))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("Could not find or access 'nope.yml'"),
            "{err}"
        );
        assert!(
            err.contains(&dir.path().join("vars/nope.yml").display().to_string()),
            "{err}"
        );
        std::fs::write(dir.path().join("bad.yml"), "a: 1\n- b\n").unwrap();
        let err = plan(dir.path(), json!({"file": "bad.yml"}))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("{}:", dir.path().join("bad.yml").display())),
            "{err}"
        );
        assert!(plan(dir.path(), json!({})).is_err());
    }
}
