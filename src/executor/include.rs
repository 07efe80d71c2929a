//! Dynamic includes (`include_tasks`, `include_role`), as Ansible runs them: the include
//! is a task of its own, evaluated on each host when execution reaches it (its `when`
//! per host and per loop item, its file or role name templated with the host's
//! variables). The hosts that include the same file with the same parameters then run
//! the included tasks together, through the same per-task path as the play's own tasks,
//! before the play moves on. Nothing here talks to an agent.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::flow::{self, PlayRun};
use super::host_task::{finish_task, item_shown, item_vars};
use super::vars::task_vars;
use super::{HostState, TaskRef};
use crate::modules::TaskOutcome;
use crate::playbook::{DynamicInclude, MAX_INCLUDE_DEPTH, Task, ansible_loop, selected};
use crate::report::events::{Event, HostResult, Status};

/// Whether the play goes on after an include's tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Walked {
    Continue,
    /// The batch ends here (`meta: end_play`/`end_batch`, or failures): what runs next.
    Ended(super::PlayEnd),
}

/// What one host's include (or one loop item of it) names.
#[derive(Debug, Clone, PartialEq)]
enum Target {
    File(PathBuf),
    /// include_role's arguments, templated.
    Role(Map<String, Value>),
}

impl Target {
    /// What Ansible prints after `included:`: the file's path, or the role's name.
    fn shown(&self) -> String {
        match self {
            Target::File(path) => path.display().to_string(),
            Target::Role(args) => match args.get("name") {
                Some(Value::String(name)) => name.clone(),
                Some(other) => other.to_string(),
                None => String::new(),
            },
        }
    }
}

/// The hosts that include one target with the same parameters.
struct Group {
    target: Target,
    params: Map<String, Value>,
    label: Option<String>,
    hosts: Vec<Arc<HostState>>,
}

type Walk<'a> = Pin<Box<dyn Future<Output = Walked> + Send + 'a>>;

/// Runs an include task on the hosts that reached it, then what it includes. `depth`
/// counts the includes around this one.
pub(super) fn run<'a>(
    run: &'a PlayRun<'a>,
    task: &'a Task,
    hosts: Vec<Arc<HostState>>,
    depth: usize,
) -> Walk<'a> {
    Box::pin(async move {
        let Some(include) = task.include.as_deref() else {
            return Walked::Continue;
        };
        let groups = evaluate(run, task, include, &hosts, depth);
        // As in Ansible, every `included:` line comes first, then each file's tasks.
        let mut loaded = Vec::new();
        for group in groups {
            if let Some(tasks) = load_group(run, task, include, &group) {
                loaded.push((group.hosts, tasks));
            }
        }
        for (hosts, tasks) in loaded {
            if let ended @ Walked::Ended(_) = walk(run, &tasks, &hosts, depth + 1).await {
                return ended;
            }
        }
        Walked::Continue
    })
}

/// Decides, host by host, what the include names: a failure or a skip is reported on
/// the spot; the rest come back grouped, in the order the hosts and items came.
fn evaluate(
    run: &PlayRun<'_>,
    task: &Task,
    include: &DynamicInclude,
    hosts: &[Arc<HostState>],
    depth: usize,
) -> Vec<Group> {
    let ctx = run.ctx;
    let play = &run.playbook.plays[run.play_index];
    let mut groups: Vec<Group> = Vec::new();
    for host in hosts {
        let fail =
            |message: String| finish_task(ctx, task, host, None, TaskOutcome::failed(message), &[]);
        if depth >= MAX_INCLUDE_DEPTH {
            fail(format!(
                "{}: includes are nested more than {MAX_INCLUDE_DEPTH} deep; an include that includes itself needs a `when` that ends it",
                task.location
            ));
            continue;
        }
        let base = match task_vars(ctx, run.playbook, play, task, host, run.play_hosts) {
            Ok(vars) => vars,
            Err(message) => {
                fail(message);
                continue;
            }
        };
        let items: Option<Vec<Value>> = match &task.loop_spec {
            None => None,
            Some(spec) => match spec.items(&ctx.templar, &base) {
                Ok(items) => Some(items),
                Err(e) => {
                    fail(e.to_string());
                    continue;
                }
            },
        };
        let listed: Vec<Option<Value>> = match &items {
            Some(items) => items.iter().cloned().map(Some).collect(),
            None => vec![None],
        };
        let all_items = items.unwrap_or_default();
        let mut included = 0u32;
        let mut failure = None;
        let mut false_condition = None;
        for (index, item) in listed.into_iter().enumerate() {
            let vars = match &item {
                Some(v) => item_vars(&ctx.templar, task, &base, v, &all_items, index),
                None => base.clone(),
            };
            match super::control::all_hold(&ctx.templar, &task.when, &vars) {
                Ok(true) => {}
                Ok(false) => {
                    false_condition = task.when.first().cloned();
                    if let Some(item) = &item {
                        // Shown per item as Ansible does; counted once, below, if no
                        // item is included.
                        ctx.emit(Event::HostResult(HostResult {
                            host: host.name.clone(),
                            status: Status::Skipped,
                            item: Some(item_shown(ctx, task, &vars, item)),
                            data: Map::new(),
                            ignored: false,
                            verbose_always: false,
                            origin: None,
                        }));
                    }
                    continue;
                }
                Err(message) => {
                    failure = Some(message);
                    break;
                }
            }
            let target = match target(ctx, task, include, &vars) {
                Ok(t) => t,
                Err(message) => {
                    failure = Some(message);
                    break;
                }
            };
            let mut params = task.include_params.clone();
            let label = item.as_ref().map(|v| item_shown(ctx, task, &vars, v));
            if let Some(item) = item {
                // As in Ansible, the loop variables reach the included tasks as include
                // params.
                params.insert(task.loop_var.clone(), item);
                params.insert("ansible_loop_var".into(), task.loop_var.clone().into());
                if let Some(index_var) = &task.loop_control.index_var {
                    params.insert(index_var.clone(), index.into());
                }
                if task.loop_control.extended {
                    let position =
                        ansible_loop(&all_items, index, task.loop_control.extended_allitems);
                    params.insert(
                        "ansible_loop".into(),
                        serde_json::to_value(&position).unwrap_or(Value::Null),
                    );
                }
            }
            included += 1;
            // A host that includes the same thing twice (two equal items) runs it twice.
            match groups.iter_mut().find(|g| {
                g.target == target
                    && g.params == params
                    && !g.hosts.iter().any(|h| Arc::ptr_eq(h, host))
            }) {
                Some(group) => group.hosts.push(host.clone()),
                None => groups.push(Group {
                    target,
                    params,
                    label,
                    hosts: vec![host.clone()],
                }),
            }
        }
        if let Some(message) = failure {
            // Items grouped before the failure are taken back: the host stops here.
            for group in &mut groups {
                group.hosts.retain(|h| !Arc::ptr_eq(h, host));
            }
            fail(message);
        } else if included == 0 {
            let mut outcome = TaskOutcome {
                skipped: true,
                ..TaskOutcome::default()
            };
            if let Some(condition) = false_condition {
                outcome.data.insert(
                    "false_condition".into(),
                    super::host_task::false_condition(&condition),
                );
                outcome
                    .data
                    .insert("skip_reason".into(), "Conditional result was False".into());
            }
            finish_task(ctx, task, host, None, outcome, &[]);
        }
    }
    groups.retain(|g| !g.hosts.is_empty());
    groups
}

/// The file or role the include names for one host (and item), templated.
fn target(
    ctx: &super::RunContext,
    task: &Task,
    include: &DynamicInclude,
    vars: &minijinja::Value,
) -> Result<Target, String> {
    let args = ctx
        .templar
        .render_value(&Value::Object(task.args.clone()), vars)
        .map_err(|e| format!("{}: {e}", task.location))?;
    let Value::Object(args) = args else {
        return Err(format!(
            "{}: the include's arguments must be a mapping",
            task.location
        ));
    };
    if task.module.caps().control == crate::modules::Control::IncludeRole {
        return Ok(Target::Role(args));
    }
    let written = match args.get("file") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => {
            return Err(format!(
                "{}: include_tasks needs the tasks file to load",
                task.location
            ));
        }
    };
    include
        .find_tasks_file(&written, &task.location.file)
        .map(Target::File)
}

/// Loads what one group includes and reports it; a load error fails the group's hosts.
fn load_group(
    run: &PlayRun<'_>,
    task: &Task,
    include: &DynamicInclude,
    group: &Group,
) -> Option<Vec<Arc<Task>>> {
    let ctx = run.ctx;
    let loaded = match &group.target {
        Target::File(path) => include
            .load_tasks(path, group.params.clone(), &ctx.includes)
            .map_err(crate::playbook::RoleLoadError::from),
        Target::Role(args) => include
            .load_role(
                args,
                group.params.clone(),
                &task.location.file,
                task.location.line,
                &ctx.includes,
                &ctx.ran_roles,
            )
            .map(|role| {
                ctx.public_roles
                    .lock()
                    .expect("public roles lock")
                    .extend(role.public);
                add_handlers(run, role.handlers);
                role.tasks
            }),
    };
    // What loading the included file or role found to deprecate (a routed module), as
    // the run's own load shows it.
    for deprecation in crate::yaml::take_load_deprecations() {
        ctx.emit(Event::Deprecation(deprecation));
    }
    let tasks = match loaded {
        Ok(tasks) => tasks,
        Err(crate::playbook::RoleLoadError { message, at_name }) => {
            // `rescuable: false`: the failure passes the blocks' rescue and always by, as
            // Ansible's parser error does.
            let unrescuable = match &group.target {
                Target::Role(args) => args
                    .get("rescuable")
                    .is_some_and(|v| crate::booleans::strict(v) == Ok(false)),
                Target::File(_) => false,
            };
            let (bare, message) = if unrescuable {
                let mut bare = task.clone();
                bare.frames.clear();
                (Some(bare), format!("Could not include role: {message}"))
            } else {
                (None, message)
            };
            // An error about the role the include names is Ansible's own error, shown at
            // the `name:` rather than below the task's origin.
            let cause = at_name.map(|(line, column)| crate::modules::ErrorCause {
                message: message.clone(),
                file: task.location.file.to_path_buf(),
                line: Some(line),
                column: Some(column),
                alone: true,
            });
            for host in &group.hosts {
                finish_task(
                    ctx,
                    bare.as_ref().unwrap_or(task),
                    host,
                    None,
                    TaskOutcome {
                        cause: cause.clone(),
                        ..TaskOutcome::failed(message.clone())
                    },
                    &[],
                );
            }
            return None;
        }
    };
    ctx.emit(Event::Included {
        file: group.target.shown(),
        hosts: group.hosts.iter().map(|h| h.name.clone()).collect(),
        // Ansible censors the label of a no_log include, with or without a loop.
        item: match task.keywords.no_log {
            true => Some(super::host_task::CENSORED_ITEM.to_string()),
            false => group.label.clone(),
        },
    });
    // Ansible counts each include a host took as ok.
    for host in &group.hosts {
        host.stat(|s| s.ok += 1);
    }
    Some(tasks.into_iter().map(Arc::new).collect())
}

/// Handlers of a role included at run time join the play's, after its own, unless the
/// play has them already (a literal role's are found when the playbook loads). As with
/// the play's roles, the last use of a role brings its handlers.
/// An included role's handlers join the play; like a later use of a role at load time,
/// they replace the handlers an earlier use of the same role loaded (see
/// `PlayRun::flush_handlers`), so they run once, with this use's variables.
fn add_handlers(run: &PlayRun<'_>, handlers: Vec<Task>) {
    let role_path = |h: &Task| h.role.as_ref().map(|r| r.path.clone());
    let mut known = run.ctx.dynamic_handlers.lock().expect("handlers lock");
    for handler in handlers {
        let path = role_path(&handler);
        known.retain(|h| role_path(h) != path || h.name != handler.name);
        known.push(Arc::new(handler));
    }
}

/// Runs included tasks on `hosts` the way the linear strategy runs the play's (under
/// `strategy: free` the caller passes one host).
async fn walk(
    run: &PlayRun<'_>,
    tasks: &[Arc<Task>],
    hosts: &[Arc<HostState>],
    depth: usize,
) -> Walked {
    let ctx = run.ctx;
    for task in tasks {
        if !selected(&task.tags, &ctx.opts.tags) {
            continue;
        }
        let active: Vec<Arc<HostState>> =
            hosts.iter().filter(|h| flow::in_play(h)).cloned().collect();
        if active.is_empty() {
            break;
        }
        let task_ref = TaskRef::Synthetic(task.clone());
        let step = super::linear_step(run, task, task_ref, &active, depth, &[]).await;
        if let ended @ Walked::Ended(_) = step {
            return ended;
        }
    }
    Walked::Continue
}
