//! `gather_facts`, the action every play's implicit fact gathering runs: it runs the
//! facts modules (the `ansible_facts_modules` variable, else ansible.cfg's
//! `facts_modules`, else `smart`, which is `setup` off network devices) with the task's
//! arguments, and merges their facts. `parallel` is accepted: one after another, each
//! module's facts are merged in the order the list gives, as Ansible merges them.

use serde_json::{Map, Value, json};
use turbo_proto::OpResult;

use super::spec::{Arg, Elem, Spec, Unknown};
use super::{
    Args, Caps, Module, ModuleArgs, ModuleError, Next, Plan, PlanContext, TaskOutcome, setup::Setup,
};

pub struct GatherFacts;

/// setup's arguments (the action hands them on; defaults are setup's own), and its own
/// `parallel`.
static SPEC: Spec = Spec::new(&[
    Arg::path("fact_path"),
    Arg::list("filter", Elem::Str),
    Arg::list("gather_subset", Elem::Str),
    Arg::int("gather_timeout")
        .no_effect("the agent reads facts natively, without the collectors that time out"),
    Arg::bool("parallel").no_effect("the facts modules run one after another"),
])
// The action hands any other name on to setup, which refuses it in its own words.
.unknown(Unknown::Accepted);

const SETUP: &str = "ansible.legacy.setup";

/// The names under which a facts module is setup (Ansible's `_ACTION_SETUP`).
const SETUP_NAMES: &[&str] = &["setup", "ansible.builtin.setup", "ansible.legacy.setup"];

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
        let handed_on = handed_on(args);
        let modules = facts_modules(ctx)?;
        let setup_defaults = super::module_defaults::defaults_for(
            ctx.module_defaults,
            &super::module_defaults::builtin_fqcn(SETUP),
        );
        if let [only] = modules.as_slice()
            && SETUP_NAMES.contains(&only.as_str())
            && setup_defaults.is_empty()
        {
            // setup's plan as it is: its reply comes to `finish`, which knows setup's
            // arguments from the task's.
            return match setup_args(&handed_on, ctx) {
                Ok(setup_args) => Setup.plan(&setup_args, ctx),
                Err(msg) => Ok(Plan::Done(module_failed(SETUP, msg))),
            };
        }
        let mut warnings = Vec::new();
        let mut runs = Vec::new();
        for name in &modules {
            if SETUP_NAMES.contains(&name.as_str()) {
                runs.push(Run::new(name, &Setup, setup_args(&handed_on, ctx), ctx));
                continue;
            }
            let module = ctx
                .modules
                .and_then(|finder| finder.find_module(name, ctx.playbook_dir, ctx.role_dir));
            let Some(module) = module else {
                return Err(ModuleError::Invalid(format!(
                    "The module {name} was not found in configured module paths"
                )));
            };
            let mut given = handed_on.clone();
            for (key, what) in [
                ("gather_subset", "subset"),
                ("gather_timeout", "timeout"),
                ("filter", "filter"),
            ] {
                if let Some(value) = given.remove(key)
                    && !(key == "gather_subset" && is_all(&value))
                {
                    let shown = minijinja::Value::from_serialize(&value);
                    warnings.push(Value::String(format!(
                        "Not passing {what}({}) to {name}",
                        crate::template::python_repr_of(&shown)
                    )));
                }
            }
            let fqcn = super::module_defaults::fallback_fqcn(name, module.name());
            with_defaults(&mut given, &fqcn, name, ctx)?;
            runs.push(Run::new(
                name,
                module,
                module.spec().validate(name, &given),
                ctx,
            ));
        }
        let gathered = Gathered {
            warnings,
            ..Gathered::default()
        };
        drive_all(runs.into_iter(), gathered)
    }

    /// The reply to setup's plan, when setup alone runs (see `plan`).
    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        match Setup.spec().validate(SETUP, &handed_on(args)) {
            Ok(setup_args) => Setup.finish(&setup_args, result),
            Err(msg) => module_failed(SETUP, msg),
        }
    }
}

/// The task's arguments as the action hands them on: those given, none of them null.
fn handed_on(args: &Args) -> ModuleArgs {
    let mut handed_on = args.values().clone();
    handed_on.remove("parallel");
    handed_on.retain(|_, v| !v.is_null());
    handed_on.extend(args.extra().clone());
    handed_on
}

/// setup's arguments: those handed on over the task's `module_defaults` for setup.
fn setup_args(handed_on: &ModuleArgs, ctx: &PlanContext) -> Result<Args, String> {
    let mut given = handed_on.clone();
    let fqcn = super::module_defaults::builtin_fqcn(SETUP);
    with_defaults(&mut given, &fqcn, SETUP, ctx).map_err(|e| e.to_string())?;
    Setup.spec().validate(SETUP, &given)
}

/// `given` over the task's `module_defaults` for the module, as Ansible's action applies
/// them to each module it runs.
fn with_defaults(
    given: &mut ModuleArgs,
    fqcn: &str,
    action: &str,
    ctx: &PlanContext,
) -> Result<(), ModuleError> {
    let defaults = super::module_defaults::defaults_for(ctx.module_defaults, fqcn);
    if defaults.is_empty() {
        return Ok(());
    }
    let (Some(templar), Some(vars)) = (ctx.templar, ctx.vars) else {
        return Ok(());
    };
    let under = super::module_defaults::templated_defaults(templar, action, &defaults, vars, given)
        .map_err(|e| {
            ModuleError::Invalid(match e {
                super::module_defaults::DefaultsError::Template(e) => e.cause(),
                super::module_defaults::DefaultsError::NotADict(message) => message,
            })
        })?;
    given.extend(under);
    Ok(())
}

/// `gather_subset` left at Ansible's default, which other modules are not told about.
fn is_all(value: &Value) -> bool {
    match value {
        Value::String(s) => s == "all",
        Value::Array(items) => items.len() == 1 && items[0] == "all",
        _ => false,
    }
}

/// The facts modules to run: `ansible_facts_modules`, ansible.cfg's, or `smart`, with
/// `smart` as setup (turbo-play connects to no network device, whose modules it would
/// pick).
fn facts_modules(ctx: &PlanContext) -> Result<Vec<String>, ModuleError> {
    let from_vars = match (ctx.templar, ctx.vars) {
        (Some(templar), Some(vars)) => match templar.eval_expr("ansible_facts_modules", vars) {
            Ok(Value::Null) | Err(crate::template::TemplateError::Undefined { .. }) => None,
            Ok(value) => Some(value),
            Err(e) => return Err(ModuleError::Invalid(e.cause())),
        },
        _ => None,
    };
    let mut modules: Vec<String> = match from_vars {
        // Ansible's `list` setting: a string is split at commas.
        Some(Value::String(text)) => text
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect(),
        Some(other) => vec![other.to_string()],
        None => ctx
            .facts_modules
            .map_or_else(|| vec!["smart".to_string()], <[String]>::to_vec),
    };
    if let Some(at) = modules.iter().position(|m| m == "smart") {
        modules.remove(at);
        if !modules.iter().any(|m| SETUP_NAMES.contains(&m.as_str())) {
            modules.push(SETUP.to_string());
        }
    }
    Ok(modules)
}

/// One facts module: its name as listed, and what it planned with its arguments (or why
/// it could not).
struct Run {
    name: String,
    module: &'static dyn Module,
    planned: Result<(Plan, Args), String>,
}

impl Run {
    fn new(
        name: &str,
        module: &'static dyn Module,
        args: Result<Args, String>,
        ctx: &PlanContext,
    ) -> Run {
        let planned = args.and_then(|args| {
            let plan = module.plan(&args, ctx).map_err(|e| e.to_string())?;
            Ok((plan, args))
        });
        Run {
            name: name.to_string(),
            module,
            planned,
        }
    }
}

/// What the modules that ran so far gave.
#[derive(Default)]
struct Gathered {
    facts: Map<String, Value>,
    warnings: Vec<Value>,
    deprecations: Vec<Value>,
    failed: Map<String, Value>,
    skipped: Map<String, Value>,
    count: usize,
}

impl Gathered {
    /// One module's result: its facts, warnings and deprecations merged in (Ansible's
    /// `merge_hash` with `append_rp` lists), or the module kept as failed or skipped.
    fn add(&mut self, name: String, outcome: TaskOutcome) {
        self.count += 1;
        if outcome.failed {
            self.failed
                .insert(name, Value::Object(outcome.registered()));
            return;
        }
        if outcome.skipped {
            self.skipped
                .insert(name, Value::Object(outcome.registered()));
            return;
        }
        let mut data = outcome.data;
        if let Some(Value::Object(facts)) = data.remove("ansible_facts") {
            merge(&mut self.facts, facts);
        }
        for (key, into) in [
            ("warnings", &mut self.warnings),
            ("deprecations", &mut self.deprecations),
        ] {
            if let Some(Value::Array(more)) = data.remove(key) {
                append_rp(into, more);
            }
        }
    }

    /// The action's result.
    fn outcome(self) -> TaskOutcome {
        let mut out = TaskOutcome::default();
        out.data
            .insert("ansible_facts".into(), Value::Object(self.facts));
        if !self.warnings.is_empty() {
            out.data
                .insert("warnings".into(), Value::Array(self.warnings));
        }
        if !self.deprecations.is_empty() {
            out.data
                .insert("deprecations".into(), Value::Array(self.deprecations));
        }
        if !self.skipped.is_empty() {
            let names: Vec<&str> = self.skipped.keys().map(String::as_str).collect();
            out.msg = Some(format!(
                "The following modules were skipped: {}.",
                names.join(", ")
            ));
            out.skipped = self.skipped.len() == self.count;
            out.data
                .insert("skipped_modules".into(), Value::Object(self.skipped));
        }
        if !self.failed.is_empty() {
            let names: Vec<&str> = self.failed.keys().map(String::as_str).collect();
            out.msg = Some(format!(
                "The following modules failed to execute: {}.",
                names.join(", ")
            ));
            out.failed = true;
            out.data
                .insert("failed_modules".into(), Value::Object(self.failed));
        }
        out
    }
}

/// Ansible's `merge_hash(x, y, list_merge='append_rp')`: mappings merge recursively,
/// lists keep x's items that y lacks, then y's.
fn merge(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(mine)), Value::Object(theirs)) => merge(mine, theirs),
            (Some(Value::Array(mine)), Value::Array(theirs)) => append_rp(mine, theirs),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

fn append_rp(into: &mut Vec<Value>, more: Vec<Value>) {
    into.retain(|v| !more.contains(v));
    into.extend(more);
}

/// Runs each module's plan to its end, one after another, then gives the merged result.
fn drive_all(
    mut runs: impl Iterator<Item = Run> + Send + Sync + 'static,
    mut gathered: Gathered,
) -> Result<Plan, ModuleError> {
    let Some(Run {
        name,
        module,
        planned,
    }) = runs.next()
    else {
        return Ok(Plan::Done(gathered.outcome()));
    };
    match planned {
        Ok((plan, args)) => drive(plan, module, args, move |outcome| {
            gathered.add(name, outcome);
            drive_all(runs, gathered)
        }),
        Err(msg) => {
            gathered.add(name, TaskOutcome::failed(msg));
            drive_all(runs, gathered)
        }
    }
}

/// One module's plan to its end: its last reply goes to its finisher, and `then` takes
/// the outcome.
fn drive(
    plan: Plan,
    module: &'static dyn Module,
    args: Args,
    then: impl FnOnce(TaskOutcome) -> Result<Plan, ModuleError> + Send + Sync + 'static,
) -> Result<Plan, ModuleError> {
    match plan {
        Plan::Done(outcome) => then(outcome),
        Plan::Remote(op) => Ok(Plan::Step(
            op,
            Next::new(move |reply| then(module.finish(&args, reply))),
        )),
        Plan::Step(op, next) => Ok(Plan::Step(
            op,
            Next::new(move |reply| match next.resume(reply) {
                Ok(plan) => drive(plan, module, args, then),
                Err(e) => then(TaskOutcome::failed(e.to_string())),
            }),
        )),
        // Requests kept in flight between agents (synchronize's): no facts module's.
        Plan::Flow(_) => Err(ModuleError::NotSupported(
            "a facts module that plans a flow",
        )),
    }
}

/// The action's report of setup failing on its arguments (`failed_modules`).
fn module_failed(name: &str, msg: String) -> TaskOutcome {
    let mut out = TaskOutcome::failed(format!("The following modules failed to execute: {name}."));
    out.data.insert("ansible_facts".into(), json!({}));
    out.data.insert(
        "failed_modules".into(),
        json!({name: {"changed": false, "failed": true, "msg": msg}}),
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

    fn modules_for(vars: Value, configured: Option<&[String]>) -> Vec<String> {
        let templar = crate::template::Templar::new();
        let vars = minijinja::Value::from_serialize(vars);
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            facts_modules: configured,
            ..PlanContext::new(Path::new("/"))
        };
        facts_modules(&ctx).unwrap()
    }

    /// Ansible's FACTS_MODULES: the variable over ansible.cfg over `smart`, a string split
    /// at commas, `smart` as setup unless setup is listed.
    #[test]
    fn the_facts_modules_come_from_the_variable_then_the_configuration() {
        assert_eq!(modules_for(json!({}), None), [SETUP]);
        let configured = ["custom".to_string(), "smart".to_string()];
        assert_eq!(modules_for(json!({}), Some(&configured)), ["custom", SETUP]);
        assert_eq!(
            modules_for(
                json!({"ansible_facts_modules": ["a", "setup"]}),
                Some(&configured)
            ),
            ["a", "setup"]
        );
        assert_eq!(
            modules_for(json!({"ansible_facts_modules": "a, smart, b"}), None),
            ["a", "b", SETUP]
        );
    }

    #[test]
    fn facts_merge_recursively_and_lists_append_without_repeats() {
        let mut gathered = Gathered::default();
        let result = |facts: Value, warnings: Value| TaskOutcome {
            data: json!({"ansible_facts": facts, "warnings": warnings})
                .as_object()
                .unwrap()
                .clone(),
            ..TaskOutcome::default()
        };
        gathered.add(
            "a".into(),
            result(json!({"x": {"p": 1}, "l": [1, 2]}), json!(["w1"])),
        );
        gathered.add(
            "b".into(),
            result(
                json!({"x": {"q": 2}, "l": [2, 3], "y": 1}),
                json!(["w1", "w2"]),
            ),
        );
        gathered.add("c".into(), TaskOutcome::failed("boom"));
        let out = gathered.outcome();
        assert!(out.failed);
        assert_eq!(
            out.msg.as_deref(),
            Some("The following modules failed to execute: c.")
        );
        assert_eq!(
            Value::Object(out.data),
            json!({
                "ansible_facts": {"x": {"p": 1, "q": 2}, "l": [1, 2, 3], "y": 1},
                "warnings": ["w1", "w2"],
                "failed_modules": {"c": {"changed": false, "failed": true, "msg": "boom"}},
            })
        );
    }

    #[test]
    fn a_module_found_nowhere_fails_the_action() {
        let templar = crate::template::Templar::new();
        let vars =
            minijinja::Value::from_serialize(json!({"ansible_facts_modules": ["nope_facts"]}));
        struct Nowhere;
        impl crate::modules::ModuleFinder for Nowhere {
            fn find_module(
                &self,
                _: &str,
                _: &Path,
                _: Option<&Path>,
            ) -> Option<&'static dyn Module> {
                None
            }
        }
        let ctx = PlanContext {
            vars: Some(&vars),
            templar: Some(&templar),
            modules: Some(&Nowhere),
            ..PlanContext::new(Path::new("/"))
        };
        let err = crate::modules::try_plan(&GatherFacts, json!({}), &ctx).unwrap_err();
        assert_eq!(
            err,
            "The module nope_facts was not found in configured module paths"
        );
    }
}
