//! Getting a task ready for one host: its variables, loop items, `when`, templated and
//! validated arguments, the module's first plan, environment and delegation. Nothing here
//! talks to the agent.

use serde_json::{Map, Value};
use turbo_proto::Op;

use super::super::control::Attempts;
use super::super::vars::{PlayHosts, strip_omitted, task_vars};
use super::{HostState, ItemRun, ItemState, RunContext};
use crate::connection::BecomeSpec;
use crate::modules::{Args, Escalation, PlanContext, TaskOutcome};
use crate::playbook::{Layered, LoopError, Play, Playbook, Task, ansible_loop};
use crate::report::events::Event;
use crate::template::TemplateError;

/// What a task needs before its items are planned for a host, each part of which can
/// fail the task on that host with the reason.
pub(super) struct Prepared<'t> {
    written: &'t Task,
    /// The task with `no_log`/`ignore_errors` templates decided for this host, when it had any.
    decided: Option<Task>,
    pub(super) base: minijinja::Value,
    pub(super) attempts: Attempts,
    pub(super) delegate: Option<std::sync::Arc<HostState>>,
    pub(super) items: Option<Vec<Value>>,
    pub(super) pause: Option<std::time::Duration>,
    /// Loop items that could not be templated for an undefined variable: the task fails
    /// with this only if its `when` holds (Ansible skips such a task when it is false).
    pub(super) loop_error: Option<String>,
    /// The user the task's ops run as, with `become`.
    pub(super) become_: Option<BecomeSpec>,
    /// `timeout:` in seconds, for each item (each attempt of `until`).
    pub(super) timeout: Option<u64>,
}

impl Prepared<'_> {
    pub(super) fn task(&self) -> &Task {
        self.decided.as_ref().unwrap_or(self.written)
    }
}

/// The task's variables on this host (with `ansible_failed_*` inside a rescue), its
/// templated switches, `until` attempts, delegate, loop items and `loop_control.pause`.
pub(super) fn prepare<'t>(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &'t Task,
    host: &HostState,
    play_hosts: &PlayHosts,
) -> Result<Prepared<'t>, String> {
    let base = task_vars(ctx, playbook, play, task, host, play_hosts)?;
    prepare_from(ctx, task, host, base)
}

/// As [`prepare`], from the task's variables already built (the chain planner hands
/// them in behind a recorder of what is read).
pub(super) fn prepare_from<'t>(
    ctx: &RunContext,
    task: &'t Task,
    host: &HostState,
    base: minijinja::Value,
) -> Result<Prepared<'t>, String> {
    // `ansible_failed_task`/`ansible_failed_result` after a failure in a block.
    let base = match host.flow.lock().expect("flow lock").failed_vars() {
        Some(failed) => minijinja::context! { ..minijinja::Value::from_serialize(failed), ..base },
        None => base,
    };
    // `no_log`/`ignore_errors` written as templates are decided here, per host.
    let decided = task.with_switches_decided(&ctx.templar, &base)?;
    let decided = match resolve_templated_action(ctx, decided.as_ref().unwrap_or(task), &base)? {
        Some(resolved) => Some(resolved),
        None => decided,
    };
    let decided_task = decided.as_ref().unwrap_or(task);
    let attempts = match Attempts::of(decided_task, &ctx.templar, &base) {
        Ok(attempts) => attempts,
        // `retries: "{{ idx + 2 }}"` names the loop's variables: decided per item.
        Err(_) if decided_task.loop_spec.is_some() => Attempts::ONCE,
        Err(message) => return Err(message),
    };
    let delegate = delegate_host(ctx, decided_task, &base)?;
    let mut loop_error = None;
    let items = match &decided_task.loop_spec {
        None => None,
        Some(spec) => match spec.items_searching(
            &ctx.templar,
            &base,
            crate::playbook::lookup_subdir(&decided_task.action),
        ) {
            Ok(items) => Some(items),
            Err(e @ LoopError::Template(TemplateError::Undefined { .. })) => {
                loop_error = Some(loop_failure(decided_task, &e));
                None
            }
            Err(e) => return Err(loop_failure(decided_task, &e)),
        },
    };
    if decided_task.loop_spec.is_some()
        && let Some(problem) = &decided_task.loop_control.problem
    {
        return Err(problem.clone());
    }
    let pause = loop_pause(ctx, decided_task, &base)?;
    let become_ = decide_become(ctx, decided_task, &base)?;
    let timeout = super::timeout::task_timeout(&ctx.templar, decided_task, &base)?;
    Ok(Prepared {
        loop_error,
        become_,
        timeout,
        written: task,
        decided,
        base,
        attempts,
        delegate,
        items,
        pause,
    })
}

/// A task whose module name is a template, with the name rendered for this host and the
/// module it names in place, as Ansible's post-validation of `action` does.
fn resolve_templated_action(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
) -> Result<Option<Task>, String> {
    use crate::modules::templated_action;
    if !templated_action::is_stand_in(task.module) {
        return Ok(None);
    }
    let rendered = ctx
        .templar
        .render_value(&Value::String(task.action.clone()), vars)
        .map_err(|e| e.to_string())?;
    let name = match &rendered {
        Value::String(s) if s == crate::template::OMIT => {
            return Err("Task failed: Omit is not valid for the `action` keyword.".to_string());
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let module = templated_action::resolve(&name)?;
    let mut resolved = task.clone();
    resolved.action = name.trim().to_string();
    resolved.resolved_action = crate::playbook::fallback_fqcn(&resolved.action, module.name());
    resolved.module = module;
    Ok(Some(resolved))
}

/// Whether, and as whom, the task becomes another user on this host, as Ansible decides
/// it: the host's `ansible_become*` variables, else the task's (or its blocks', role's,
/// play's) keywords, else `-b`/`--become-user`/`--become-method` and ansible.cfg.
fn decide_become(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
) -> Result<Option<BecomeSpec>, String> {
    let defaults = &ctx.opts.become_defaults;
    let keywords = &task.keywords.become_;
    // A variable set for the host, templated as any variable is.
    let var = |name: &str| -> Result<Option<Value>, String> {
        match ctx.templar.eval_expr(name, vars) {
            Ok(Value::Null) => Ok(None),
            Ok(value) => Ok(Some(value)),
            Err(TemplateError::Undefined { .. }) => Ok(None),
            Err(e) => Err(template_failure(task, &e)),
        }
    };
    let text = |value: Value| match value {
        Value::String(s) => s,
        other => other.to_string(),
    };
    // The innermost level whose value is not `omit`.
    let keyword = |written: &Layered| -> Result<Option<String>, String> {
        for level in written.levels() {
            let rendered = ctx
                .templar
                .render_str(level, vars)
                .map_err(|e| template_failure(task, &e))?;
            if rendered != crate::template::OMIT {
                return Ok(Some(rendered));
            }
        }
        Ok(None)
    };
    let enabled =
        match var("ansible_become")? {
            Some(value) => crate::modules::spec::parse_bool(&value)
                .map_err(|e| format!("ansible_become: {e}"))?,
            None => match keyword(&keywords.enabled)? {
                Some(written) => crate::modules::spec::parse_bool(&Value::String(written))
                    .map_err(|e| {
                        format!(
                            "become: {e}\n\nThe error appears to be in '{}'",
                            task.location
                        )
                    })?,
                None => defaults.enabled,
            },
        };
    if !enabled {
        return Ok(None);
    }
    // Of the variables naming one option, the method's own (`ansible_su_flags`) wins over
    // `ansible_become_*`, as the last of a plugin option's `vars` wins in Ansible.
    let pick = |var_names: &[String],
                written: &Layered,
                default: &Option<String>|
     -> Result<Option<String>, String> {
        for name in var_names.iter().rev() {
            if let Some(value) = var(name)? {
                return Ok(Some(text(value)));
            }
        }
        Ok(keyword(written)?.or_else(|| default.clone()))
    };
    let method = pick(
        &["ansible_become_method".to_string()],
        &keywords.method,
        &defaults.method,
    )?
    .unwrap_or_else(|| "sudo".to_string());
    let method = crate::connection::BecomeMethod::parse(&method)?;
    let names = |option: &str| {
        [
            format!("ansible_become_{option}"),
            format!("ansible_{}_{option}", method.name()),
        ]
    };
    let user = pick(&names("user"), &keywords.user, &defaults.user)?
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| "root".to_string());
    let flags = pick(&names("flags"), &keywords.flags, &defaults.flags)?;
    let exe = pick(&names("exe"), &keywords.exe, &defaults.exe)?;
    // ansible_become_password keeps its place over ansible_become_pass; the method's own
    // (`ansible_su_pass`) comes first.
    let password = pick(
        &[
            "ansible_become_pass".to_string(),
            "ansible_become_password".to_string(),
            format!("ansible_{}_pass", method.name()),
        ],
        &Layered::default(),
        &defaults.password,
    )?;
    let chdir = match method {
        crate::connection::BecomeMethod::Sudo => var("ansible_sudo_chdir")?
            .map(text)
            .or_else(|| defaults.sudo_chdir.clone())
            .filter(|dir| !dir.is_empty()),
        crate::connection::BecomeMethod::Su => None,
    };
    // A list, or one word.
    let prompts = match var("ansible_su_prompt_l10n")? {
        Some(Value::Array(words)) => words.into_iter().map(text).collect(),
        Some(word) => vec![text(word)],
        None => Vec::new(),
    };
    Ok(Some(BecomeSpec {
        method,
        user,
        flags,
        exe,
        chdir,
        timeout: prompt_timeout(&var)?,
        password,
        prompts,
    }))
}

/// The connection's timeout as the task's variables set it (the ssh plugin's
/// `ansible_ssh_timeout`, or `ansible_timeout`), which bounds the wait for a become prompt
/// in Ansible whatever the login connection was opened with.
fn prompt_timeout(
    var: &dyn Fn(&str) -> Result<Option<Value>, String>,
) -> Result<Option<std::time::Duration>, String> {
    for name in ["ansible_ssh_timeout", "ansible_timeout"] {
        if let Some(value) = var(name)? {
            let text = match &value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let seconds: f64 = text
                .trim()
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s > 0.0)
                .ok_or_else(|| format!("{name}={text} is not a number of seconds"))?;
            return Ok(Some(std::time::Duration::from_secs_f64(seconds)));
        }
    }
    Ok(None)
}

/// Every item planned (or the task itself without a loop), each with its environment.
pub(super) fn plan_items(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &Task,
    prepared: &Prepared<'_>,
    loop_error: Option<&str>,
) -> Vec<ItemRun> {
    let base = &prepared.base;
    let items = prepared.items.as_deref();
    let become_ = prepared.become_.as_ref();
    let item_list: Vec<Option<&Value>> = match items {
        Some(items) => items.iter().map(Some).collect(),
        None => vec![None],
    };
    let all_items = items.unwrap_or(&[]);
    item_list
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            let vars = match item {
                Some(v) => item_vars(&ctx.templar, task, base, v, all_items, index),
                None => base.clone(),
            };
            let planning = Planning {
                loop_error,
                become_,
            };
            plan_one(ctx, playbook, play, task, vars, item, planning)
        })
        .collect()
}

/// What every item of one task is planned with besides its variables.
#[derive(Clone, Copy)]
pub(super) struct Planning<'a> {
    /// The loop's own error, which fails each item.
    pub(super) loop_error: Option<&'a str>,
    /// Whom the ops run as, when the task becomes another user.
    pub(super) become_: Option<&'a BecomeSpec>,
}

/// One item planned with its variables (the task itself without a loop), with its
/// environment.
pub(super) fn plan_one(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &Task,
    vars: minijinja::Value,
    item: Option<&Value>,
    planning: Planning<'_>,
) -> ItemRun {
    let Planning {
        loop_error,
        become_,
    } = planning;
    let (raw_args, args, mut state, planned) =
        plan_item(ctx, playbook, task, &vars, loop_error, become_);
    let mut env = Vec::new();
    if let Some(op) = state.op() {
        match task_environment(ctx, play, task, &vars) {
            Ok(found) => env = found,
            // An environment that cannot be templated yet (the play's, reading
            // `ansible_env` before facts are gathered) does not stop an op that runs
            // no command, as Ansible's fact gathering goes on without it.
            Err(_) if !runs_a_command(op) => {}
            Err(message) => state = ItemState::Done(TaskOutcome::failed(message)),
        }
    }
    ItemRun {
        item: item.cloned(),
        vars,
        raw_args,
        args,
        env,
        planned,
        state,
    }
}

/// A loop item's variables: the item under `loop_var`, plus `index_var` and
/// `ansible_loop` when `loop_control` asks for them.
pub(in crate::executor) fn item_vars(
    templar: &crate::template::Templar,
    task: &Task,
    base: &minijinja::Value,
    item: &Value,
    all_items: &[Value],
    index: usize,
) -> minijinja::Value {
    let control = &task.loop_control;
    let mut overlay = std::collections::BTreeMap::new();
    overlay.insert(
        task.loop_var.clone(),
        minijinja::Value::from_serialize(item),
    );
    overlay.insert(
        "ansible_loop_var".to_string(),
        minijinja::Value::from(task.loop_var.clone()),
    );
    if let Some(index_var) = &control.index_var {
        overlay.insert(index_var.clone(), minijinja::Value::from(index));
        overlay.insert(
            "ansible_index_var".to_string(),
            minijinja::Value::from(index_var.clone()),
        );
    }
    if control.extended {
        let position = ansible_loop(all_items, index, control.extended_allitems);
        overlay.insert(
            "ansible_loop".to_string(),
            minijinja::Value::from_serialize(&position),
        );
    }
    super::super::vars::with_item_vars(templar, base, overlay)
}

/// `loop_control.pause` in seconds, templated; `None` without a pause.
pub(super) fn loop_pause(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
) -> Result<Option<std::time::Duration>, String> {
    let Some(raw) = &task.loop_control.pause else {
        return Ok(None);
    };
    let value = ctx
        .templar
        .render_value(raw, vars)
        .map_err(|e| template_failure(task, &e))?;
    let seconds = match &value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
    .filter(|s| s.is_finite())
    .ok_or_else(|| {
        let shown = match &value {
            Value::String(s) => format!("'{s}'"),
            other => other.to_string(),
        };
        format!(
            "Error processing keyword 'pause': The value {shown} could not be converted to 'float'."
        )
    })?;
    Ok((seconds > 0.0).then(|| std::time::Duration::from_secs_f64(seconds)))
}

/// `--check`, unless the task (or its block or play) says `check_mode: yes/no`.
pub(super) fn check_mode(ctx: &RunContext, task: &Task) -> bool {
    task.check_mode.unwrap_or(ctx.opts.check)
}

/// The check flag the agent gets: none for a module that does its own check mode.
pub(super) fn agent_check_mode(ctx: &RunContext, task: &Task) -> bool {
    check_mode(ctx, task) && !task.module.caps().own_check_mode
}

/// `--diff`, unless the task (or its block, role or play) says `diff: yes/no`.
pub(super) fn diff_mode(ctx: &RunContext, task: &Task) -> bool {
    task.diff.unwrap_or(ctx.opts.diff)
}

pub(super) fn plan_context<'a>(
    ctx: &'a RunContext,
    playbook: &'a Playbook,
    task: &'a Task,
    vars: &'a minijinja::Value,
    become_: Option<&BecomeSpec>,
) -> PlanContext<'a> {
    PlanContext {
        playbook_dir: &playbook.dir,
        role_dir: task.role.as_ref().map(|r| r.path.as_path()),
        task_dir: task.location.file.parent(),
        check_mode: check_mode(ctx, task),
        diff: diff_mode(ctx, task),
        vars: Some(vars),
        templar: Some(&ctx.templar),
        ansible_managed: ctx.opts.ansible_managed.as_deref(),
        no_log: task.keywords.no_log,
        timeout: None,
        delegated: task.keywords.delegate_to.is_some(),
        backend_defaults: None,
        modules: Some(&ctx.opts.load_options),
        facts_modules: ctx.opts.facts_modules.as_deref(),
        module_defaults: &task.keywords.module_defaults,
        delegate_to: task.keywords.delegate_to.as_ref().and_then(|raw| {
            ctx.templar
                .render_str(raw, vars)
                .ok()
                .map(|name| name.trim().to_string())
        }),
        escalation: become_.map(|spec| Escalation {
            method: spec.method.name(),
            user: spec.user.clone(),
        }),
        controller: task
            .module
            .caps()
            .controller_action
            .then(|| super::controller::controller(ctx, playbook, task, vars)),
    }
}

/// The `false_condition` of a skipped result: the condition as written, which Ansible
/// keeps with its YAML type (`when: false` gives `false_condition: false`). The loader
/// keeps conditions as text, so a YAML boolean or integer comes back from its text
/// (`when: "False"`, a string that reads as one, comes back a boolean too).
pub(crate) fn false_condition(condition: &str) -> Value {
    match condition {
        "True" => Value::Bool(true),
        "False" => Value::Bool(false),
        _ => match condition.parse::<i64>() {
            Ok(n) if n.to_string() == condition => Value::from(n),
            _ => Value::from(condition),
        },
    }
}

/// The item's arguments and first state: skipped by `when`, failed by a template, or
/// checked and planned by the module. The last value says whether the module ran.
pub(super) fn plan_item(
    ctx: &RunContext,
    playbook: &Playbook,
    task: &Task,
    vars: &minijinja::Value,
    loop_error: Option<&str>,
    become_: Option<&BecomeSpec>,
) -> (Map<String, Value>, Option<Args>, ItemState, bool) {
    let done = |outcome| (Map::new(), None, ItemState::Done(outcome), false);
    for condition in &task.when {
        match ctx.templar.eval_condition(condition, vars) {
            Ok(true) => {}
            Ok(false) => {
                let mut outcome = TaskOutcome {
                    skipped: true,
                    ..Default::default()
                };
                outcome
                    .data
                    .insert("false_condition".into(), false_condition(condition));
                outcome
                    .data
                    .insert("skip_reason".into(), "Conditional result was False".into());
                return done(outcome);
            }
            Err(e) => {
                let mut failed = TaskOutcome::failed(super::super::control::when_failure(&e));
                failed
                    .data
                    .insert("exception".into(), "(traceback unavailable)".into());
                return done(failed);
            }
        }
    }
    if let Some(message) = loop_error {
        return (
            Map::new(),
            None,
            ItemState::Done(TaskOutcome::failed(message)),
            true,
        );
    }
    // Arguments the action judges itself (assert's `that`) are not templated first.
    let written = task.module.untemplated_args();
    let templated = match written.iter().any(|k| task.args.contains_key(*k)) {
        true => std::borrow::Cow::Owned(
            task.args
                .iter()
                .filter(|(k, _)| !written.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        false => std::borrow::Cow::Borrowed(&task.args),
    };
    let keys = task.module.templates_arg_names();
    // first_found searches the subdirectory the task's action implies (`vars/` for
    // include_vars, `templates/` for template), in its arguments as in its loop.
    let subdir = crate::playbook::lookup_subdir(&task.action);
    let arg_vars = match subdir {
        "files" => vars.clone(),
        _ => minijinja::context! { __tp_lookup_subdir => subdir, ..vars.clone() },
    };
    let raw_args = match ctx.templar.render_args(&templated, &arg_vars, keys) {
        Ok(mut args) => {
            for key in written {
                if let Some(value) = task.args.get(*key) {
                    args.insert(key.to_string(), value.clone());
                }
            }
            args
        }
        Err((key, e)) => return done(args_failure(task, &key, &e)),
    };
    let raw_args = match args_from_templates(ctx, task, vars, raw_args) {
        Ok(mut args) => {
            strip_omitted(&mut args);
            args
        }
        Err(message) => {
            return (
                Map::new(),
                None,
                ItemState::Done(TaskOutcome::failed(message)),
                true,
            );
        }
    };
    let (args, state) = plan_args(ctx, playbook, task, vars, &raw_args, become_);
    (raw_args, args, state, true)
}

/// Arguments written as one template (`add_host: "{{ host_data }}"`, `args: "{{ a }}"`)
/// resolved into the mapping they must be, below the arguments written out, as Ansible's
/// TaskArgsFinalizer layers them.
fn args_from_templates(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
    mut args: Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    use crate::playbook::{RAW_PARAMS, VARIABLE_PARAMS};
    let variable = args.remove(VARIABLE_PARAMS);
    let raw = if task.module.takes_raw_params() {
        None
    } else {
        args.remove(RAW_PARAMS)
    };
    if raw.is_some()
        && !task
            .args
            .get(RAW_PARAMS)
            .and_then(Value::as_str)
            .is_some_and(crate::playbook::is_possibly_all_template)
    {
        return Err(format!(
            "Task failed: Action '{}' does not support raw params.",
            module_fqcn(task)
        ));
    }
    let mut merged = Map::new();
    if variable.is_some() || raw.is_some() {
        ctx.warn_once(
            "Using a template for task args is unsafe in some situations (see https://docs.ansible.com/ansible/devel/reference_appendices/faq.html#argsplat-unsafe).",
        );
    }
    for layer in [variable, raw].into_iter().flatten() {
        match layer {
            Value::Object(map) => merged.extend(map),
            // An omitted template stands for no arguments.
            Value::String(s) if s == super::super::vars::OMIT => {}
            other => {
                return Err(format!(
                    "Task args must resolve to a 'dict' not '{}'.",
                    crate::template::python_type(&other)
                ));
            }
        }
    }
    // An expression the action evaluates itself (assert's `that`) that rendering made is
    // not the playbook's own: Ansible refuses it. One a template only passed on as it was
    // written (a loop item, a task var) is still the playbook's.
    let untrusted = task.module.untemplated_args().iter().any(|key| {
        !args.contains_key(*key)
            && merged
                .get(*key)
                .is_some_and(|value| !written_in_task(task, value))
    });
    if untrusted {
        return Err("Task failed: Encountered untrusted template or expression.".into());
    }
    merged.extend(args);
    let levels = &task.keywords.module_defaults;
    let defaults = crate::playbook::defaults_for(levels, &task.resolved_action);
    if !defaults.is_empty() {
        let mut under = module_defaults(ctx, task, &defaults, vars, &merged)?;
        under.extend(merged);
        merged = under;
    }
    Ok(merged)
}

/// Whether every string of `value` is written as it is in the task's loop or vars (so a
/// template passed it on, as Ansible keeps such a value's trust).
fn written_in_task(task: &Task, value: &Value) -> bool {
    fn holds(haystack: &Value, needle: &str) -> bool {
        match haystack {
            Value::String(s) => s == needle,
            Value::Array(items) => items.iter().any(|v| holds(v, needle)),
            Value::Object(map) => map.values().any(|v| holds(v, needle)),
            _ => false,
        }
    }
    let written: Vec<&Value> = match &task.loop_spec {
        Some(crate::playbook::LoopSpec::Items { value, .. }) => vec![value],
        Some(crate::playbook::LoopSpec::Lookup { terms, .. })
        | Some(crate::playbook::LoopSpec::Combine { terms, .. }) => vec![terms],
        _ => Vec::new(),
    };
    let vars: Vec<&Value> = task.vars.values().collect();
    match value {
        Value::String(s) => written.iter().chain(&vars).any(|w| holds(w, s)),
        Value::Array(items) => items.iter().all(|v| written_in_task(task, v)),
        _ => true,
    }
}

/// The task's `module_defaults` for its module, templated: only the arguments the task
/// does not give itself, so that a default it overrides is never rendered.
fn module_defaults(
    ctx: &RunContext,
    task: &Task,
    defaults: &[&Value],
    vars: &minijinja::Value,
    given: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    crate::playbook::templated_defaults(&ctx.templar, &task.action, defaults, vars, given).map_err(
        |e| match e {
            crate::playbook::DefaultsError::Template(e) => template_failure(task, &e),
            crate::playbook::DefaultsError::NotADict(message) => message,
        },
    )
}

/// The task's `module_defaults` for each module its action may hand it to, templated, by
/// module name (only those it has defaults for).
fn backend_defaults(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
    given: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    let mut found = Map::new();
    for backend in task.module.backends() {
        let levels = &task.keywords.module_defaults;
        let fqcn = crate::modules::module_defaults::builtin_fqcn(backend);
        let defaults = crate::playbook::defaults_for(levels, &fqcn);
        if !defaults.is_empty() {
            let templated = module_defaults(ctx, task, &defaults, vars, given)?;
            found.insert(backend.to_string(), Value::Object(templated));
        }
    }
    Ok(found)
}

/// Checks the templated arguments against the module's spec (a failure is the task's, in
/// Ansible's words) and lets the module plan.
pub(super) fn plan_args(
    ctx: &RunContext,
    playbook: &Playbook,
    task: &Task,
    vars: &minijinja::Value,
    raw_args: &Map<String, Value>,
    become_: Option<&BecomeSpec>,
) -> (Option<Args>, ItemState) {
    let args = match task.module.spec().validate(&task.action, raw_args) {
        Ok(args) => args,
        Err(message) => return (None, ItemState::Done(TaskOutcome::failed(message))),
    };
    let backend_defaults = match backend_defaults(ctx, task, vars, raw_args) {
        Ok(defaults) => defaults,
        Err(message) => return (Some(args), ItemState::Done(TaskOutcome::failed(message))),
    };
    let plan_ctx = PlanContext {
        backend_defaults: Some(&backend_defaults),
        ..plan_context(ctx, playbook, task, vars, become_)
    };
    let state = match task.module.plan(&args, &plan_ctx) {
        Ok(plan) => ItemState::of(plan),
        Err(e) => ItemState::Done(TaskOutcome::from_error(e)),
    };
    (Some(args), state)
}

/// The task's `notify` names for this host (a name may be a template).
pub(super) fn notify_names(ctx: &RunContext, task: &Task, vars: &minijinja::Value) -> Vec<String> {
    task.notify
        .iter()
        .map(|name| match ctx.templar.render_str(name, vars) {
            Ok(rendered) => rendered,
            Err(e) => {
                ctx.emit(Event::Warning(format!(
                    "{}: notify '{name}': {e}",
                    task.location
                )));
                name.clone()
            }
        })
        .collect()
}

pub(super) fn template_failure(task: &Task, e: &TemplateError) -> String {
    match e {
        TemplateError::Undefined { .. } => format!(
            "The task includes an option with an undefined variable. The error was: {e}\n\nThe error appears to be in '{}'",
            task.location
        ),
        _ => format!("{e}\n\nThe error appears to be in '{}'", task.location),
    }
}

/// A task argument whose template failed, as Ansible's TaskArgsFinalizer reports it:
/// the module, the argument and the cause, with the exception key its results carry.
fn args_failure(task: &Task, key: &str, e: &TemplateError) -> TaskOutcome {
    let mut outcome = TaskOutcome::failed(format!(
        "Task failed: Finalization of task args for '{}' failed: Error while resolving value for '{key}': {}",
        module_fqcn(task),
        e.cause()
    ));
    outcome
        .data
        .insert("exception".into(), "(traceback unavailable)".into());
    outcome
}

/// The module's name as Ansible resolves it: ansible-core's own under `ansible.builtin.`.
fn module_fqcn(task: &Task) -> String {
    task.module.fqcn()
}

pub(super) fn loop_failure(task: &Task, e: &LoopError) -> String {
    match e {
        // The loop's own template failing in Python: only the cause, as Ansible.
        LoopError::Template(t) if t.is_zero_division() => t.cause(),
        LoopError::Template(t) => template_failure(task, t),
        // A lookup's own failure is the whole message, as Ansible's.
        LoopError::Sequence(_) => other_text(e),
        LoopError::Lookup(text) if text.starts_with("The lookup plugin") => text.clone(),
        other => format!("{other}\n\nThe error appears to be in '{}'", task.location),
    }
}

fn other_text(e: &LoopError) -> String {
    e.to_string()
}

/// The play's, blocks' and task's `environment`, templated and merged (inner wins).
pub(super) fn task_environment(
    ctx: &RunContext,
    play: &Play,
    task: &Task,
    vars: &minijinja::Value,
) -> Result<Vec<(String, String)>, String> {
    use super::super::vars::OMIT;
    let mut env: Vec<(String, String)> = Vec::new();
    let not_a_mapping = |rendered: &Value| {
        format!(
            "environment must be a mapping, got {rendered}\n\nThe error appears to be in '{}'",
            task.location
        )
    };
    // Ansible leaves out an entry that reads `ansible_env` before facts give it (the
    // play's `PATH: "{{ ansible_env.PATH }}:/x"` while facts are gathered).
    let render = |value: &Value| match ctx.templar.render_value(value, vars) {
        Err(TemplateError::Undefined { name, .. })
            if name == "ansible_env"
                || name.starts_with("ansible_env.")
                || name.starts_with("ansible_facts.env") =>
        {
            Ok(None)
        }
        other => other.map(Some).map_err(|e| template_failure(task, &e)),
    };
    for layer in play.environment.iter().chain(&task.keywords.environment) {
        let rendered = match layer {
            Value::Object(entries) => {
                let mut kept = Map::new();
                for (k, v) in entries {
                    let Some(v) = render(v)? else { continue };
                    let k = match render(&Value::String(k.clone()))? {
                        Some(Value::String(k)) => k,
                        _ => k.clone(),
                    };
                    kept.insert(k, v);
                }
                Value::Object(kept)
            }
            other => match render(other)? {
                Some(rendered) => rendered,
                None => continue,
            },
        };
        // One mapping, or a list of them merged in order; `omit` leaves an entry out.
        let maps: Vec<Map<String, Value>> = match rendered {
            Value::Object(map) => vec![map],
            Value::Array(items) => {
                let mut maps = Vec::new();
                for item in items {
                    match item {
                        Value::Object(map) => maps.push(map),
                        Value::String(s) if s == OMIT => {}
                        other => return Err(not_a_mapping(&other)),
                    }
                }
                maps
            }
            Value::String(s) if s == OMIT => Vec::new(),
            other => return Err(not_a_mapping(&other)),
        };
        for (k, v) in maps.into_iter().flatten() {
            let v = match v {
                Value::String(s) if s == OMIT => continue,
                Value::String(s) => s,
                other => crate::template::python_str(&minijinja::Value::from_serialize(&other)),
            };
            env.retain(|(name, _)| *name != k);
            env.push((k, v));
        }
    }
    Ok(env)
}

/// Whether `op` starts a program, which is what `environment` reaches.
fn runs_a_command(op: &Op) -> bool {
    match op {
        Op::Exec(_) => true,
        Op::Batch(ops) => ops.iter().any(runs_a_command),
        _ => false,
    }
}

/// `environment` reaches commands only, as in Ansible (other modules ignore it). The
/// module's own variables, set later, win.
pub(super) fn add_environment(op: &mut Op, env: &[(String, String)]) {
    match op {
        Op::Exec(exec) => {
            let own = std::mem::take(&mut exec.env);
            let mut merged: Vec<(String, String)> = env
                .iter()
                .filter(|(k, _)| !own.iter().any(|(o, _)| o == k))
                .cloned()
                .collect();
            merged.extend(own);
            exec.env = merged;
        }
        Op::Batch(ops) => ops.iter_mut().for_each(|op| add_environment(op, env)),
        Op::StartJob(job) => add_environment(&mut job.op, env),
        _ => {}
    }
}

/// The host a `delegate_to` names (templated), or `None` without one. A name the
/// inventory does not know is an error, except localhost, which always exists.
pub(super) fn delegate_host(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
) -> Result<Option<std::sync::Arc<HostState>>, String> {
    let Some(raw) = &task.keywords.delegate_to else {
        return Ok(None);
    };
    let name = ctx
        .templar
        .render_str(raw, vars)
        .map_err(|e| template_failure(task, &e))?;
    let name = name.trim();
    let added = ctx.runtime.lock().expect("runtime lock").knows_host(name);
    if ctx.inventory().host(name).is_none() && !added {
        return Err(format!(
            "delegate_to: '{name}' is not a host in the inventory\n\nThe error appears to be in '{}'",
            task.location
        ));
    }
    Ok(Some(ctx.host(name)))
}

#[cfg(test)]
#[path = "prepare_tests.rs"]
mod tests;
