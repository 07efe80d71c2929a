//! A task whose action is a Python action plugin (`action_plugins/`, a role's, a
//! collection's `plugins/action/`): its `ActionModule.run` runs in the plugin host, with
//! Ansible's ActionBase whose ways to the host are turbo-play's. What the plugin asks of
//! turbo-play while it runs comes back as calls: a variable, a template (answered at once,
//! on the controller), or a module to run, a command or a file for the host; each of
//! those is a step of this module's plan, whose reply answers the call and lets the
//! plugin go on, so a plugin that runs three modules costs three round trips, as the
//! modules would alone. The plugin's result is the task's, with Ansible's `_ansible_*`
//! keys acted on.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{Map, Value};
use turbo_proto::{Command, EnsureFile, Exec, FileContent, Op, OpResult, Ownership};

use super::python::{PythonModule, UtilsPaths, finding};
use super::spec::{Spec, Unknown};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome};
use crate::plugins::{Call, Conversation, ErrorKind, PluginError, PluginFile, Step};
use crate::template::Templar;

/// What an action plugin's run needs of its task beyond one planning call, owned so that
/// it lasts through the steps of its plan. The executor makes one per item that runs.
pub trait ControllerTask: Send + Sync {
    /// The task's variables.
    fn vars(&self) -> &minijinja::Value;
    fn templar(&self) -> &Templar;
    /// The planning context of a module the plugin runs on the host.
    fn plan_context(&self) -> PlanContext<'_>;
    /// The task as the plugin's `self._task` and `self._play_context` see it.
    fn task_info(&self) -> Map<String, Value>;
}

/// Where the modules a plugin names are found: as the task's own modules are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ModuleSearch {
    pub library: Vec<PathBuf>,
    /// The playbook's and the configured collection roots (the controller Python's are
    /// added when a module is looked for, so loading asks no Python).
    pub collection_roots: Vec<PathBuf>,
    pub module_utils: Vec<PathBuf>,
    /// The task's `collections:`, for a short name.
    pub collections: Vec<String>,
}

impl ModuleSearch {
    /// The module `name` (short, `ansible.legacy.`, `ansible.builtin.` or a collection's):
    /// a library module first, then Ansible's own, then a collection's.
    pub fn module(&self, name: &str) -> Option<&'static dyn Module> {
        let mut roots = self.collection_roots.clone();
        roots.extend(finding::installed().collection_roots.iter().cloned());
        let utils = UtilsPaths {
            module_utils: self.module_utils.clone(),
            collection_roots: roots.clone(),
        };
        let short = name.strip_prefix("ansible.legacy.").unwrap_or(name);
        if !name.starts_with("ansible.builtin.")
            && let Some(source) = finding::library_module(short, &self.library)
        {
            return Some(PythonModule::shared(short, Ok(source), utils));
        }
        if let Some(module) = super::find(short) {
            return Some(module);
        }
        let in_collection = |fqcn: &str| -> Option<&'static dyn Module> {
            finding::collection_module(fqcn, &roots).map(|source| {
                PythonModule::shared(fqcn, Ok(source), utils.clone()) as &'static dyn Module
            })
        };
        if let Some(module) = in_collection(name) {
            return Some(module);
        }
        if name.contains('.') {
            return None;
        }
        self.collections
            .iter()
            .find_map(|c| in_collection(&format!("{c}.{name}")))
    }
}

/// A Python action plugin, as a task's module.
#[derive(Debug)]
pub struct ActionPlugin {
    /// The action as the task names it (`echo`, `ns.coll.echo`).
    name: &'static str,
    plugin: Arc<PluginInfo>,
}

/// What a run of the plugin needs to know of it.
#[derive(Debug)]
struct PluginInfo {
    file: PluginFile,
    /// The plugin declares `supports_raw_params = True`: its free-form text is its own.
    raw_params: bool,
    search: ModuleSearch,
}

/// Argument names are the plugin's own business.
static ANY_ARGS: Spec = Spec::new(&[]).unknown(Unknown::Accepted);

impl ActionPlugin {
    /// The plugin `file` for action `name`, one per distinct plugin and search for the
    /// run (leaked on purpose, as modules are `&'static`).
    pub fn shared(name: &str, file: PluginFile, search: ModuleSearch) -> &'static ActionPlugin {
        type Key = (String, PluginFile, ModuleSearch);
        static KNOWN: LazyLock<Mutex<HashMap<Key, &'static ActionPlugin>>> =
            LazyLock::new(Default::default);
        let key = (name.to_string(), file.clone(), search.clone());
        let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
        known.entry(key).or_insert_with(|| {
            let raw_params =
                std::fs::read_to_string(&file.path).is_ok_and(|text| declares_raw_params(&text));
            Box::leak(Box::new(ActionPlugin {
                name: Box::leak(name.to_string().into_boxed_str()),
                plugin: Arc::new(PluginInfo {
                    file,
                    raw_params,
                    search,
                }),
            }))
        })
    }
}

impl PluginInfo {
    /// The plugin's failure as the task's, in words that name the plugin.
    fn failure(&self, e: PluginError) -> ModuleError {
        let plugin = format!(
            "the action plugin '{}' ({})",
            self.file.fqcn(),
            self.file.path.display()
        );
        ModuleError::Invalid(match e.kind {
            ErrorKind::Load => format!("Task failed: {plugin} failed to load: {}", e.message),
            ErrorKind::Unsupported => format!(
                "Task failed: {plugin} needs {}, which turbo-play does not provide",
                e.message
            ),
            ErrorKind::Host => format!("Task failed: {plugin} could not run: {}", e.message),
            ErrorKind::NoAnsible => format!(
                "Task failed: {plugin} needs {}: {}",
                e.message,
                crate::plugins::python::INSTALL_HINT
            ),
            ErrorKind::Call | ErrorKind::Runtime => format!("Task failed: {}", e.message),
        })
    }
}

/// Whether a plugin's source sets `supports_raw_params = True` on its class (read from
/// the text: the loader must know before any Python runs).
fn declares_raw_params(source: &str) -> bool {
    source.lines().any(|line| {
        let compact: String = line.split_whitespace().collect();
        line.starts_with(char::is_whitespace) && compact == "supports_raw_params=True"
    })
}

/// The builtin action a plugin file only re-exports (`from ansible.plugins.action.debug
/// import ActionModule`), read from its text: such a plugin is that action, which
/// turbo-play may run natively.
pub fn reexported_builtin(source: &str) -> Option<String> {
    let mut found = None;
    for line in source.lines() {
        let line = line.trim();
        if line.starts_with("class ActionModule") || line.starts_with("ActionModule =") {
            return None;
        }
        let Some(rest) = line.strip_prefix("from ansible.plugins.action.") else {
            continue;
        };
        let Some((module, imported)) = rest.split_once(" import ") else {
            continue;
        };
        let imported = imported.trim();
        if (imported == "ActionModule" || imported == "ActionModule as ActionModule")
            && crate::plugins::catalog::is_identifier(module)
        {
            found = Some(module.to_string());
        }
    }
    found
}

impl Module for ActionPlugin {
    fn name(&self) -> &'static str {
        self.name
    }

    fn spec(&self) -> &'static Spec {
        &ANY_ARGS
    }

    fn caps(&self) -> Caps {
        // The plugin does check mode itself (`self._task.check_mode`); the modules it
        // runs keep their own rule (`Next::in_check_mode`).
        Caps::TASK.own_check_mode().controller_action()
    }

    fn takes_raw_params(&self) -> bool {
        self.plugin.raw_params
    }

    fn fqcn(&self) -> String {
        match &self.plugin.file.collection {
            Some(_) => self.plugin.file.fqcn(),
            None => format!(
                "ansible.legacy.{}",
                self.name
                    .strip_prefix("ansible.legacy.")
                    .unwrap_or(self.name)
            ),
        }
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let Some(controller) = ctx.controller.clone() else {
            return Err(ModuleError::Invalid(format!(
                "internal error: the action plugin '{}' was planned without its task",
                self.name
            )));
        };
        let playbook_dir = ctx.playbook_dir.to_path_buf();
        let plugin = &self.plugin;
        let host = crate::plugins::host(&plugin.search.collection_roots, &playbook_dir)
            .map_err(|e| plugin.failure(e))?;
        let mut task = controller.task_info();
        let mut task_args = args.values().clone();
        task_args.extend(args.extra().clone());
        task.insert("args".into(), Value::Object(task_args));
        task.insert("action".into(), Value::from(self.name));
        task.insert("resolved_action".into(), Value::from(self.fqcn()));
        let play_context = task
            .remove("play_context")
            .unwrap_or_else(|| Value::Object(Map::new()));
        let mut payload = Map::new();
        payload.insert(
            "path".into(),
            Value::from(plugin.file.path.display().to_string()),
        );
        payload.insert(
            "import_name".into(),
            Value::from(plugin.file.import_name.clone()),
        );
        payload.insert("name".into(), Value::from(plugin.file.name.clone()));
        payload.insert("fqcn".into(), Value::from(plugin.file.fqcn()));
        payload.insert("task".into(), Value::Object(task));
        payload.insert("play_context".into(), play_context);
        payload.insert(
            "playbook_dir".into(),
            Value::from(playbook_dir.display().to_string()),
        );
        let conversation = host
            .start("action", payload)
            .map_err(|e| plugin.failure(e))?;
        drive(Arc::new(Run {
            conversation,
            controller,
            plugin: plugin.clone(),
        }))
    }
}

/// One run of a plugin for one item: its conversation with the host and its task.
struct Run {
    conversation: Conversation<'static>,
    controller: Arc<dyn ControllerTask>,
    plugin: Arc<PluginInfo>,
}

impl Run {
    fn reply(&self, answer: Result<Value, String>) -> Result<(), ModuleError> {
        self.conversation
            .reply(answer)
            .map_err(|e| self.plugin.failure(e))
    }

    /// A call answered on the controller: a variable, the variables' names, a template.
    fn serve(&self, call: &Call) -> Result<Value, String> {
        let vars = self.controller.vars();
        let templar = self.controller.templar();
        match call.kind.as_str() {
            "var" => {
                let name = call.str("name").unwrap_or_default();
                Ok(match vars.get_attr(name) {
                    Ok(v) if !v.is_undefined() => {
                        serde_json::json!({"found": true, "value": crate::template::to_plugin_json(&v)})
                    }
                    _ => serde_json::json!({"found": false}),
                })
            }
            "var_names" => Ok(Value::from(
                vars.try_iter()
                    .into_iter()
                    .flatten()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect::<Vec<_>>(),
            )),
            "template" => {
                let value = call.payload.get("value").cloned().unwrap_or(Value::Null);
                templar
                    .render_value(&value, vars)
                    .map_err(|e| e.to_string())
            }
            "expression" => templar
                .eval_expr(call.str("expression").unwrap_or_default(), vars)
                .map_err(|e| e.to_string()),
            other => Err(format!("turbo-play does not answer '{other}'")),
        }
    }
}

/// Lets the plugin run until it is done or needs the host.
fn drive(run: Arc<Run>) -> Result<Plan, ModuleError> {
    loop {
        let call = match run.conversation.next().map_err(|e| run.plugin.failure(e))? {
            Step::Done(value) => return Ok(Plan::Done(outcome(value))),
            Step::Call(call) => call,
        };
        match call.kind.as_str() {
            "execute_module" => return execute_module(run, &call),
            "command" => return Ok(command(run, &call)),
            "write_file" => return write_file(run, &call),
            "make_tmp" => return Ok(make_tmp(run)),
            _ => {
                let answer = run.serve(&call);
                run.reply(answer)?;
            }
        }
    }
}

/// The plugin's `_execute_module`: the module, found as the task's own are, checked
/// against its spec and planned; its result answers the call.
fn execute_module(run: Arc<Run>, call: &Call) -> Result<Plan, ModuleError> {
    let name = call.str("module").unwrap_or_default().to_string();
    let Some(module) = run.plugin.search.module(&name) else {
        run.reply(Ok(Value::Object(
            TaskOutcome::failed(format!(
                "The module {name} was not found in configured module paths"
            ))
            .registered(),
        )))?;
        return drive(run);
    };
    let raw = match call.payload.get("args") {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let args = match module.spec().validate(&name, &raw) {
        Ok(args) => args,
        Err(message) => {
            run.reply(Ok(Value::Object(TaskOutcome::failed(message).registered())))?;
            return drive(run);
        }
    };
    let planned = {
        let ctx = run.controller.plan_context();
        module.plan(&args, &ctx).map(|plan| (plan, ctx.check_mode))
    };
    match planned {
        Ok((plan, check)) => inner(run, module, Arc::new(args), plan, check),
        Err(e) => {
            run.reply(Ok(Value::Object(TaskOutcome::from_error(e).registered())))?;
            drive(run)
        }
    }
}

/// The steps of a module the plugin runs, then its outcome as the call's answer.
fn inner(
    run: Arc<Run>,
    module: &'static dyn Module,
    args: Arc<Args>,
    plan: Plan,
    check: bool,
) -> Result<Plan, ModuleError> {
    // The agent applies check mode to the ops of a module that does not do its own.
    let agent_check = check && !module.caps().own_check_mode;
    match plan {
        Plan::Done(outcome) => {
            run.reply(Ok(Value::Object(outcome.registered())))?;
            drive(run)
        }
        Plan::Remote(op) => {
            let op = with_content(&run, module, &args, op)?;
            Ok(Plan::Step(
                op,
                Next::new(move |reply| {
                    let outcome = if check {
                        module.finish_check(&args, reply)
                    } else {
                        module.finish(&args, reply)
                    };
                    run.reply(Ok(Value::Object(outcome.registered())))?;
                    drive(run)
                })
                .in_check_mode(agent_check),
            ))
        }
        Plan::Step(op, next) => {
            let op = with_content(&run, module, &args, op)?;
            Ok(Plan::Step(
                op,
                Next::new(move |reply| match next.resume(reply) {
                    Ok(plan) => inner(run, module, args, plan, check),
                    Err(e) => {
                        run.reply(Ok(Value::Object(TaskOutcome::from_error(e).registered())))?;
                        drive(run)
                    }
                })
                .in_check_mode(agent_check),
            ))
        }
        // A module that keeps requests in flight (synchronize) finishes as the flow ends.
        Plan::Flow(flow) => Ok(Plan::Flow(super::flow::and_then(flow, move |plan| {
            inner(run, module, args, plan, check)
        }))),
    }
}

/// A file op that names its content by digest carries the bytes instead: the executor
/// uploads on request only for a task's own module.
fn with_content(run: &Run, module: &dyn Module, args: &Args, op: Op) -> Result<Op, ModuleError> {
    let Op::EnsureFile(ensure) = &op else {
        return Ok(op);
    };
    if !matches!(ensure.content, FileContent::Digest { .. }) {
        return Ok(op);
    }
    let ctx = run.controller.plan_context();
    let bytes = match module.content(args, &ctx)? {
        Some(source) => source.into_bytes()?,
        None => return Ok(op),
    };
    Ok(Op::EnsureFile(EnsureFile {
        content: FileContent::Inline(bytes),
        ..ensure.clone()
    }))
}

/// ActionBase's `_low_level_execute_command`: a shell command on the host (even in check
/// mode, as Ansible runs it), answered with its exit code and output.
fn command(run: Arc<Run>, call: &Call) -> Plan {
    let op = Op::Exec(Exec {
        chdir: call.str("chdir").map(str::to_string),
        stdin: call.str("stdin").map(|s| s.as_bytes().to_vec()),
        ..Exec::plain(Command::Shell {
            script: call.str("cmd").unwrap_or_default().to_string(),
            executable: call.str("executable").map(str::to_string),
        })
    });
    Plan::Step(
        op,
        Next::new(move |reply| {
            let answer = match reply {
                OpResult::Exec(out) => {
                    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                    Ok(serde_json::json!({
                        "rc": out.rc,
                        "stdout_lines": super::text_file::split_lines(&stdout),
                        "stderr_lines": super::text_file::split_lines(&stderr),
                        "stdout": stdout,
                        "stderr": stderr,
                    }))
                }
                OpResult::Error(e) => Err(e.message),
                other => Err(format!("unexpected reply to a command: {other:?}")),
            };
            run.reply(answer)?;
            drive(run)
        })
        .in_check_mode(false),
    )
}

/// ActionBase's `_transfer_data`: bytes written to a file on the host.
fn write_file(run: Arc<Run>, call: &Call) -> Result<Plan, ModuleError> {
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD
        .decode(call.str("data").unwrap_or_default())
        .map_err(|e| ModuleError::Invalid(format!("internal error: a plugin's file data: {e}")))?;
    let op = Op::EnsureFile(EnsureFile {
        path: call.str("path").unwrap_or_default().to_string(),
        content: FileContent::Inline(data),
        mode: None,
        force: true,
        owner: Ownership::default(),
        validate: None,
        backup: false,
    });
    Ok(Plan::Step(
        op,
        Next::new(move |reply| {
            let answer = match reply {
                OpResult::File(_) => Ok(Value::Null),
                OpResult::Error(e) => Err(e.message),
                other => Err(format!("unexpected reply to a file write: {other:?}")),
            };
            run.reply(answer)?;
            drive(run)
        })
        .in_check_mode(false),
    ))
}

/// ActionBase's `_make_tmp_path`: a private directory under `~/.ansible/tmp`.
fn make_tmp(run: Arc<Run>) -> Plan {
    let script = "umask 77 && mkdir -p \"$HOME/.ansible/tmp\" && mktemp -d \"$HOME/.ansible/tmp/ansible-tmp-XXXXXXXXXX\"";
    Plan::Step(
        Op::Exec(Exec::plain(Command::Shell {
            script: script.into(),
            executable: None,
        })),
        Next::new(move |reply| {
            let answer = match reply {
                OpResult::Exec(out) if out.rc == 0 => Ok(Value::from(
                    String::from_utf8_lossy(&out.stdout).trim().to_string(),
                )),
                OpResult::Exec(out) => Err(format!(
                    "could not make a temporary directory on the host: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )),
                OpResult::Error(e) => Err(e.message),
                other => Err(format!("unexpected reply to mktemp: {other:?}")),
            };
            run.reply(answer)?;
            drive(run)
        })
        .in_check_mode(false),
    )
}

/// The plugin's result as the task's outcome, as Ansible's executor reads an action's
/// result: `changed`/`failed`/`skipped`/`msg` out, `_ansible_no_log` censoring what is
/// shown, `_ansible_verbose_always` showing it without -v, other `_ansible_*` keys
/// dropped.
fn outcome(answer: Value) -> TaskOutcome {
    let result = match answer.get("result") {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    let no_log = result
        .get("_ansible_no_log")
        .is_some_and(crate::booleans::python_truthiness);
    let verbose_always = result
        .get("_ansible_verbose_always")
        .is_some_and(crate::booleans::python_truthiness);
    let mut outcome = super::python::outcome_of_result(result);
    outcome.no_log = no_log;
    outcome.verbose_always = verbose_always;
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_params_and_reexports_are_read_from_the_source() {
        assert!(declares_raw_params(
            "class ActionModule(ActionBase):\n    supports_raw_params = True\n"
        ));
        assert!(!declares_raw_params("supports_raw_params = True\n"));
        assert!(!declares_raw_params(
            "class A(ActionBase):\n    supports_raw_params = False\n"
        ));
        assert_eq!(
            reexported_builtin(
                "from __future__ import annotations\n\nfrom ansible.plugins.action.debug import ActionModule\n\nassert ActionModule\n"
            )
            .as_deref(),
            Some("debug")
        );
        assert_eq!(
            reexported_builtin(
                "from ansible.plugins.action.normal import ActionModule as ActionBase\n\nclass ActionModule(ActionBase):\n    pass\n"
            ),
            None
        );
        assert_eq!(
            reexported_builtin("from ansible.plugins.action import ActionBase\n"),
            None
        );
    }

    #[test]
    fn results_keep_ansibles_keys_and_act_on_the_internal_ones() {
        let done = outcome(serde_json::json!({"result": {
            "changed": true, "msg": "hi", "_ansible_no_log": "yeppers",
            "_ansible_verbose_always": true, "_ansible_other": 1, "data": [1]
        }}));
        assert!(done.changed && !done.failed && done.no_log && done.verbose_always);
        assert_eq!(done.msg.as_deref(), Some("hi"));
        assert_eq!(Value::Object(done.data), serde_json::json!({"data": [1]}));
        let raised = outcome(serde_json::json!({"result": {
            "failed": true, "changed": false, "msg": "Task failed: boom",
            "exception": "(traceback unavailable)"
        }}));
        assert!(raised.failed);
        assert_eq!(raised.msg.as_deref(), Some("Task failed: boom"));
    }

    #[test]
    fn modules_a_plugin_names_are_found_as_the_tasks_are() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("library")).unwrap();
        std::fs::write(dir.path().join("library/mine.py"), "").unwrap();
        let search = ModuleSearch {
            library: vec![dir.path().join("library")],
            ..ModuleSearch::default()
        };
        assert_eq!(search.module("mine").unwrap().name(), "mine");
        assert_eq!(search.module("ansible.legacy.mine").unwrap().name(), "mine");
        assert_eq!(
            search.module("ansible.builtin.stat").unwrap().name(),
            "stat"
        );
        assert_eq!(search.module("ping").unwrap().name(), "ping");
        assert!(search.module("no_such_module_here").is_none());
    }
}
