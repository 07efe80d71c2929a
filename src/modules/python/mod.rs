//! Modules turbo-play has no native planner for — a team's `library/` modules, collection
//! modules, and ansible-core's own Python modules — run through the target's Python as
//! Ansible runs them: found as its module loader finds them (`finding.rs`), packed with the
//! `module_utils` they import (`payload.rs`), given Ansible's internal arguments
//! (`args.rs`), run by the agent's warm interpreter (`Op::RunModule`), and their JSON
//! treated as Ansible treats it (`result.rs`).

mod args;
pub mod finding;
mod payload;
mod result;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::Value;
use turbo_proto::{ModulePayload, ModuleStyle, Op, OpResult, PayloadFile, RunModule};

pub use finding::ModuleSource;
pub use payload::UtilsPaths;
pub use result::outcome_of_result;

use super::spec::{Spec, Unknown};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome};

/// Ansible's `INTERPRETER_PYTHON_FALLBACK`, tried in order when
/// `ansible_python_interpreter` is not set.
const INTERPRETER_FALLBACK: &[&str] = &[
    "python3.14",
    "python3.13",
    "python3.12",
    "python3.11",
    "python3.10",
    "python3.9",
    "/usr/bin/python3",
    "python3",
];

/// A module run through the target's Python (or as the program it is).
#[derive(Debug)]
pub struct PythonModule {
    name: &'static str,
    source: Result<ModuleSource, String>,
    utils: UtilsPaths,
}

/// Argument names are the module's own business: it checks them on the target.
static ANY_ARGS: Spec = Spec::new(&[]).unknown(Unknown::Accepted);

impl PythonModule {
    /// The module for `name` found at `source`, one per distinct module for the run.
    /// Leaked on purpose: modules are `&'static` like the registry's, and a playbook
    /// names a bounded set of them.
    pub fn shared(
        name: &str,
        source: Result<ModuleSource, String>,
        utils: UtilsPaths,
    ) -> &'static PythonModule {
        type Key = (String, Result<ModuleSource, String>, UtilsPaths);
        static KNOWN: LazyLock<Mutex<HashMap<Key, &'static PythonModule>>> =
            LazyLock::new(Default::default);
        let key = (name.to_string(), source.clone(), utils.clone());
        let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
        known.entry(key).or_insert_with(|| {
            Box::leak(Box::new(PythonModule {
                name: Box::leak(name.to_string().into_boxed_str()),
                source,
                utils,
            }))
        })
    }

    /// ansible-core's own module `name` (`get_url`, `uri`), from the installed
    /// ansible-core; a missing ansible-core fails the task when it runs, with how to
    /// install it.
    pub fn builtin(name: &str) -> &'static PythonModule {
        let utils = UtilsPaths {
            module_utils: Vec::new(),
            collection_roots: finding::installed().collection_roots.clone(),
        };
        PythonModule::shared(name, finding::builtin_module(name), utils)
    }

    fn source(&self) -> Result<&ModuleSource, ModuleError> {
        self.source
            .as_ref()
            .map_err(|e| ModuleError::Invalid(e.clone()))
    }
}

/// ansible-core's version on the controller (`_ansible_version`).
fn ansible_version() -> &'static str {
    static VERSION: LazyLock<String> = LazyLock::new(|| {
        finding::installed()
            .ansible_dir
            .as_ref()
            .and_then(|dir| std::fs::read_to_string(dir.join("release.py")).ok())
            .and_then(|text| {
                let line = text.lines().find(|l| l.starts_with("__version__"))?;
                Some(line.split(['\'', '"']).nth(1)?.to_string())
            })
            .unwrap_or_else(|| "2.21.5".into())
    });
    &VERSION
}

/// The payloads of this run by digest, for when an agent asks for their files.
static BY_DIGEST: LazyLock<Mutex<HashMap<[u8; 32], Arc<payload::Payload>>>> =
    LazyLock::new(Default::default);

/// The files of a payload planned in this run (the agent answered `NeedContent`).
pub fn payload_files(sha256: &[u8; 32]) -> Option<Vec<PayloadFile>> {
    BY_DIGEST
        .lock()
        .expect("payload digests")
        .get(sha256)
        .map(|p| p.files.clone())
}

/// Fills in the files of a `RunModule` op (for an agent that lacks them).
pub fn with_files(op: &Op) -> Option<Op> {
    let Op::RunModule(run) = op else { return None };
    let files = payload_files(&run.payload.sha256)?;
    Some(Op::RunModule(RunModule {
        payload: ModulePayload {
            sha256: run.payload.sha256,
            files: Some(files),
        },
        ..run.clone()
    }))
}

impl Module for PythonModule {
    fn name(&self) -> &'static str {
        self.name
    }

    fn spec(&self) -> &'static Spec {
        &ANY_ARGS
    }

    fn reports_own_invocation(&self) -> bool {
        true
    }

    fn caps(&self) -> Caps {
        // The module does check mode itself (`_ansible_check_mode`), skipping when it
        // does not support it, as AnsibleModule does.
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let source = self.source()?;
        // uri's action plugin only uploads `src` from the controller before the module
        // runs; without one the module is all there is.
        if source.fqn == "ansible.modules.uri"
            && args.extra().get("src").is_some_and(|v| !v.is_null())
            && !args
                .extra()
                .get("remote_src")
                .is_some_and(crate::booleans::lenient)
        {
            return Err(ModuleError::Invalid(
                "uri with a controller-side `src` needs Ansible's uri action plugin                  (ansible/plugins/action/uri.py), which turbo-play does not run: copy the file                  to the host first and use `remote_src: true`, or run this playbook with                  ansible-playbook"
                    .into(),
            ));
        }
        let built =
            payload::payload(source, &self.utils, self.name).map_err(ModuleError::Invalid)?;
        BY_DIGEST
            .lock()
            .expect("payload digests")
            .insert(built.sha256, built.clone());
        let var = |name: &str| -> Option<Value> {
            let (vars, templar) = (ctx.vars?, ctx.templar?);
            match templar.eval_expr(name, vars) {
                Ok(Value::Null) | Err(_) => None,
                Ok(v) => Some(v),
            }
        };
        let interpreters: Vec<String> = match var("ansible_python_interpreter") {
            Some(Value::String(s)) if !s.starts_with("auto") => vec![s],
            _ => match var("ansible_interpreter_python_fallback") {
                Some(Value::Array(list)) => {
                    list.iter().map(crate::modules::spec::python_text).collect()
                }
                _ => INTERPRETER_FALLBACK.iter().map(|s| s.to_string()).collect(),
            },
        };
        let mut task_args = args.values().clone();
        task_args.extend(args.extra().clone());
        let facility =
            var("ansible_syslog_facility").map(|v| crate::modules::spec::python_text(&v));
        let full = args::module_args(
            &task_args,
            &args::Internal {
                check_mode: ctx.check_mode,
                diff: ctx.diff,
                no_log: ctx.no_log,
                verbosity: 0,
                module_name: self.name,
                version: ansible_version(),
                syslog_facility: facility.as_deref(),
                inject_invocation: super::inject_invocation(ctx.vars),
            },
        );
        let args_bytes = match &built.style {
            ModuleStyle::NewStyle { .. } => args::json_args(full),
            ModuleStyle::Old { .. } => args::kv_args(&full),
            ModuleStyle::WantJson { .. } | ModuleStyle::Binary { .. } => {
                serde_json::to_vec(&Value::Object(full)).expect("JSON values serialize")
            }
        };
        Ok(Plan::Remote(Op::RunModule(RunModule {
            interpreters,
            payload: ModulePayload {
                sha256: built.sha256,
                files: None,
            },
            style: built.style.clone(),
            args: args_bytes,
            timeout_secs: ctx.timeout,
            env: Vec::new(),
        })))
    }

    fn finish(&self, _args: &Args, result: OpResult) -> TaskOutcome {
        match result {
            OpResult::Module(run) => result::outcome(run, None),
            other => super::unexpected(self.name, other),
        }
    }
}

/// Where a task's modules and module_utils are searched, beside the playbook and in its
/// role, after what is configured.
pub fn utils_paths(
    role_dir: Option<&std::path::Path>,
    playbook_dir: &std::path::Path,
    configured_module_utils: &[PathBuf],
    collection_roots: Vec<PathBuf>,
) -> UtilsPaths {
    let mut module_utils: Vec<PathBuf> = role_dir
        .map(|r| r.join("module_utils"))
        .into_iter()
        .chain(std::iter::once(playbook_dir.join("module_utils")))
        .chain(configured_module_utils.iter().cloned())
        .filter(|d| d.is_dir())
        .collect();
    module_utils.dedup();
    UtilsPaths {
        module_utils,
        collection_roots,
    }
}
