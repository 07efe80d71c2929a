//! One task on one host: expand the loop, evaluate `when`, template the arguments, let
//! the module plan agent ops, send them as one batch, and turn the replies into results.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};
use turbo_proto::{CHUNK_BYTES, EnsureFile, FileContent, Op, OpResult};

use super::control::{Attempts, Verdict, judge};
use super::flow::Caught;
use super::vars::{strip_omitted, task_vars};
use super::{HostState, RunContext};
use crate::agent_session::AgentSession;
use crate::modules::{Args, Effect, FactsLayer, Next, Plan, PlanContext, Shown, TaskOutcome};
use crate::playbook::{LoopError, Play, Playbook, Task, ansible_loop};
use crate::report::events::{Event, HostResult, Status};
use crate::template::TemplateError;

/// Ops per request for long loops: the first chunk starts on the agent while the next are
/// still on the wire, and no single frame grows without bound.
const BATCH_CHUNK: usize = 256;

/// Upload chunks per request: one round trip moves this many bytes.
const CHUNKS_PER_REQUEST: usize = 16;

/// One loop item (or the task itself when it has no loop) on its way through.
struct ItemRun {
    item: Option<Value>,
    vars: minijinja::Value,
    /// The templated arguments, kept to plan the item again for `until` (Ansible templates
    /// them once, before its retries).
    raw_args: Map<String, Value>,
    /// The arguments as the module's spec validated them; `None` until they passed.
    args: Option<Args>,
    state: ItemState,
    /// The `environment` its commands run with.
    env: Vec<(String, String)>,
    /// Whether the module ran (so `failed_when`/`until` judge it): not for a false `when`
    /// or a template error.
    planned: bool,
}

enum ItemState {
    Done(TaskOutcome),
    /// Waiting for the agent's reply to this op, which goes to the module's `finish`.
    Remote(Op),
    /// Waiting for the agent's reply to this op, which goes to the plan's next step.
    Step(Op, Next),
}

impl ItemState {
    fn of(plan: Plan) -> ItemState {
        match plan {
            Plan::Done(outcome) => ItemState::Done(outcome),
            Plan::Remote(op) => ItemState::Remote(op),
            Plan::Step(op, next) => ItemState::Step(op, next),
        }
    }

    fn op(&self) -> Option<&Op> {
        match self {
            ItemState::Done(_) => None,
            ItemState::Remote(op) | ItemState::Step(op, _) => Some(op),
        }
    }
}

pub(crate) async fn run(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &Task,
    host: &HostState,
    play_hosts: &super::vars::PlayHosts,
) {
    let base = match task_vars(ctx, playbook, play, task, host, play_hosts) {
        Ok(vars) => vars,
        Err(message) => {
            finish_task(ctx, task, host, None, TaskOutcome::failed(message), &[]);
            return;
        }
    };
    // `ansible_failed_task`/`ansible_failed_result` after a failure in a block.
    let base = match host.flow.lock().expect("flow lock").failed_vars() {
        Some(failed) => minijinja::context! { ..minijinja::Value::from_serialize(failed), ..base },
        None => base,
    };
    // `no_log`/`ignore_errors` written as templates are decided here, per host.
    let decided;
    let task = match task.with_switches_decided(&ctx.templar, &base) {
        Ok(None) => task,
        Ok(Some(t)) => {
            decided = t;
            &decided
        }
        Err(message) => {
            finish_task(ctx, task, host, None, TaskOutcome::failed(message), &[]);
            return;
        }
    };
    let attempts = match Attempts::of(task, &ctx.templar, &base) {
        Ok(a) => a,
        Err(message) => {
            finish_task(ctx, task, host, None, TaskOutcome::failed(message), &[]);
            return;
        }
    };
    let delegate = match delegate_host(ctx, task, &base) {
        Ok(d) => d,
        Err(message) => {
            finish_task(ctx, task, host, None, TaskOutcome::failed(message), &[]);
            return;
        }
    };
    let via: &HostState = delegate.as_deref().unwrap_or(host);
    let items = match &task.loop_spec {
        None => None,
        Some(spec) => match spec.items_searching(
            &ctx.templar,
            &base,
            crate::playbook::lookup_subdir(&task.action),
        ) {
            Ok(items) => Some(items),
            Err(e) => {
                finish_task(
                    ctx,
                    task,
                    host,
                    None,
                    TaskOutcome::failed(loop_failure(task, &e)),
                    &[],
                );
                return;
            }
        },
    };
    if let Some(items) = &items {
        ctx.emit(Event::ItemsPlanned {
            count: items.len().saturating_sub(1),
        });
    }

    // Plan every item on the controller first; only then talk to the agent, once.
    let item_list: Vec<Option<Value>> = match items {
        Some(items) => items.into_iter().map(Some).collect(),
        None => vec![None],
    };
    let mut runs: Vec<ItemRun> = Vec::with_capacity(item_list.len());
    let all_items: Vec<Value> = item_list.iter().flatten().cloned().collect();
    for (index, item) in item_list.into_iter().enumerate() {
        let vars = match &item {
            Some(v) => item_vars(task, &base, v, &all_items, index),
            None => base.clone(),
        };
        let (raw_args, args, mut state, planned) = plan_item(ctx, playbook, task, &vars);
        let mut env = Vec::new();
        if state.op().is_some() {
            match task_environment(ctx, play, task, &vars) {
                Ok(found) => env = found,
                Err(message) => state = ItemState::Done(TaskOutcome::failed(message)),
            }
        }
        runs.push(ItemRun {
            item,
            vars,
            raw_args,
            args,
            env,
            planned,
            state,
        });
    }
    for run in &mut runs {
        if let ItemState::Done(outcome) = &mut run.state {
            let waits: Vec<std::time::Duration> = outcome
                .effects
                .iter()
                .filter_map(|e| match e {
                    Effect::Wait(wait) => Some(*wait),
                    _ => None,
                })
                .collect();
            for wait in waits {
                take_pause(ctx, task, outcome, wait).await;
            }
        }
    }
    let pause = match loop_pause(ctx, task, &base) {
        Ok(p) => p,
        Err(message) => {
            finish_task(ctx, task, host, None, TaskOutcome::failed(message), &[]);
            return;
        }
    };

    let notify = notify_names(ctx, task, &base);

    // Every attempt sends the items still running as one batch; `until` decides which
    // items go again.
    let target = Target {
        ctx,
        playbook,
        play,
        task,
        host,
        via,
    };
    let mut running: Vec<usize> = (0..runs.len()).collect();
    let mut attempt = 1;
    loop {
        if !send_paced(&target, &mut runs, &running, pause).await {
            return;
        }
        let mut again = Vec::new();
        for &i in &running {
            let run = &mut runs[i];
            let (true, ItemState::Done(outcome)) = (run.planned, &mut run.state) else {
                continue;
            };
            if judge(task, &ctx.templar, &run.vars, outcome, attempt, attempts) == Verdict::Retry {
                again.push(i);
            }
        }
        if again.is_empty() {
            break;
        }
        for &i in &again {
            ctx.emit(Event::Retry {
                host: host.name.clone(),
                task: task.display_name(),
                item: runs[i].item.as_ref().map(item_label),
                // Ansible counts the attempt about to start as made.
                retries_left: attempts.total.saturating_sub(attempt + 1),
            });
            let run = &mut runs[i];
            let (args, state) = plan_args(ctx, playbook, task, &run.vars, &run.raw_args);
            run.args = args;
            run.state = state;
        }
        tokio::time::sleep(attempts.delay).await;
        attempt += 1;
        running = again;
    }

    let outcomes: Vec<ItemOutcome> = runs
        .into_iter()
        .enumerate()
        .map(|(index, run)| {
            let label = run
                .item
                .as_ref()
                .map(|item| item_shown(ctx, task, &run.vars, item));
            match run.state {
                ItemState::Done(outcome) => ItemOutcome {
                    item: run.item,
                    index,
                    label,
                    outcome,
                },
                ItemState::Remote(_) | ItemState::Step(..) => {
                    unreachable!("every remote item got its reply")
                }
            }
        })
        .collect();
    if task.loop_spec.is_some() {
        finish_loop(ctx, task, host, delegate.as_deref(), outcomes, &notify);
    } else {
        let only = outcomes.into_iter().next().expect("one run without a loop");
        finish_task(ctx, task, host, delegate.as_deref(), only.outcome, &notify);
    }
}

/// Where a task's ops go: the task, the host it runs for, and `via`, the host whose
/// session carries them (itself, or the one the task is delegated to).
#[derive(Clone, Copy)]
struct Target<'a> {
    ctx: &'a RunContext,
    playbook: &'a Playbook,
    play: &'a Play,
    task: &'a Task,
    host: &'a HostState,
    via: &'a HostState,
}

/// `loop_control.pause` makes items wait for each other: each item must be done on the
/// host before the pause starts (a rolling restart relies on it), so the items go one
/// request at a time with the pause in between instead of as one batch.
async fn send_paced(
    target: &Target<'_>,
    runs: &mut [ItemRun],
    running: &[usize],
    pause: Option<std::time::Duration>,
) -> bool {
    let Some(pause) = pause else {
        return send_remote(target, runs, running).await;
    };
    for (n, &i) in running.iter().enumerate() {
        if n > 0 {
            tokio::time::sleep(pause).await;
        }
        if !send_remote(target, runs, &[i]).await {
            return false;
        }
    }
    true
}

/// A loop item's variables: the item under `loop_var`, plus `index_var` and
/// `ansible_loop` when `loop_control` asks for them.
pub(super) fn item_vars(
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
    minijinja::context! { ..minijinja::Value::from(overlay), ..base.clone() }
}

/// `loop_control.pause` in seconds, templated; `None` without a pause.
fn loop_pause(
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
    .filter(|s| s.is_finite() && *s >= 0.0)
    .ok_or_else(|| format!("loop_control.pause must be a number of seconds, got {value}"))?;
    Ok((seconds > 0.0).then(|| std::time::Duration::from_secs_f64(seconds)))
}

/// What the output shows for an item: its `loop_control.label` when set, else the item.
pub(super) fn item_shown(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
    item: &Value,
) -> String {
    match &task.loop_control.label {
        None => item_label(item),
        Some(label) => match ctx.templar.render_value(&Value::from(label.clone()), vars) {
            Ok(shown) => item_label(&shown),
            // An unrenderable label must not fail a task that ran: show it as written.
            Err(_) => label.clone(),
        },
    }
}

/// Sends the ops of the `running` items that wait for the agent as one batch and turns
/// the replies into outcomes, through `via`'s session (the host itself, or the one the
/// task is delegated to); items whose plan takes another step go again, together, until
/// every item is done. False when that turned out unreachable (reported on `host`).
async fn send_remote(target: &Target<'_>, runs: &mut [ItemRun], running: &[usize]) -> bool {
    let Target {
        ctx,
        playbook,
        play,
        task,
        host,
        via,
    } = *target;
    loop {
        let remote: Vec<usize> = running
            .iter()
            .copied()
            .filter(|&i| runs[i].state.op().is_some())
            .collect();
        if remote.is_empty() {
            return true;
        }
        let session = match ctx.session(via, play, task).await {
            Ok(s) => s,
            Err(message) => {
                host_unreachable(ctx, task, host, &message);
                return false;
            }
        };
        let ops: Vec<Op> = remote
            .iter()
            .map(|&i| {
                let mut op = runs[i]
                    .state
                    .op()
                    .expect("filtered to remote items")
                    .clone();
                if !runs[i].env.is_empty() {
                    add_environment(&mut op, &runs[i].env);
                }
                op
            })
            .collect();
        let sent = if task.module.caps().batchable {
            send_batched(ctx, &session, ops, task).await
        } else {
            send_one_by_one(ctx, &session, ops, task).await
        };
        let results = match sent {
            Ok(r) => r,
            Err(message) => {
                host_unreachable(ctx, task, host, &message);
                return false;
            }
        };
        for (&i, result) in remote.iter().zip(results) {
            let state =
                std::mem::replace(&mut runs[i].state, ItemState::Done(TaskOutcome::default()));
            runs[i].state = match state {
                ItemState::Step(_, next) => match next.resume(result) {
                    Ok(plan) => ItemState::of(plan),
                    Err(e) => ItemState::Done(TaskOutcome::failed(e.to_string())),
                },
                ItemState::Remote(op) => {
                    let run = &runs[i];
                    let args = run.args.as_ref().expect("a planned item has its arguments");
                    let result = match result {
                        OpResult::NeedContent => {
                            match upload_content(ctx, playbook, task, &session, run, &op, args)
                                .await
                            {
                                Ok(r) => r,
                                Err(outcome) => {
                                    runs[i].state = ItemState::Done(outcome);
                                    continue;
                                }
                            }
                        }
                        other => other,
                    };
                    ItemState::Done(if check_mode(ctx, task) {
                        task.module.finish_check(args, result)
                    } else {
                        task.module.finish(args, result)
                    })
                }
                done @ ItemState::Done(_) => done,
            };
        }
    }
}

/// Sends the ops, one request per chunk, all chunks in flight at once.
async fn send_batched(
    ctx: &RunContext,
    session: &AgentSession,
    ops: Vec<Op>,
    task: &Task,
) -> Result<Vec<OpResult>, String> {
    let (check, diff) = (check_mode(ctx, task), diff_mode(ctx, task));
    if ops.len() == 1 {
        return send_one_by_one(ctx, session, ops, task).await;
    }
    let mut pending = Vec::new();
    let mut ops = ops.into_iter().peekable();
    while ops.peek().is_some() {
        let chunk: Vec<Op> = ops.by_ref().take(BATCH_CHUNK).collect();
        let expected = chunk.len();
        let session = session.clone();
        pending.push((
            expected,
            tokio::spawn(async move { session.call(Op::Batch(chunk), check, diff).await }),
        ));
    }
    let mut results = Vec::new();
    for (expected, handle) in pending {
        match handle.await.map_err(|e| e.to_string())? {
            Ok(OpResult::Batch(r)) if r.len() == expected => results.extend(r),
            Ok(other) => return Err(format!("agent answered a batch with {other:?}")),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(results)
}

async fn send_one_by_one(
    ctx: &RunContext,
    session: &AgentSession,
    ops: Vec<Op>,
    task: &Task,
) -> Result<Vec<OpResult>, String> {
    let (check, diff) = (check_mode(ctx, task), diff_mode(ctx, task));
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        results.push(
            session
                .call(op, check, diff)
                .await
                .map_err(|e| e.to_string())?,
        );
    }
    Ok(results)
}

/// The agent holds a different file than a digest-only `EnsureFile` describes: send the
/// bytes in chunks, then ask again with the staged upload. Only now are the bytes read.
async fn upload_content(
    ctx: &RunContext,
    playbook: &Playbook,
    task: &Task,
    session: &AgentSession,
    run: &ItemRun,
    op: &Op,
    args: &Args,
) -> Result<OpResult, TaskOutcome> {
    static NEXT_UPLOAD: AtomicU64 = AtomicU64::new(1);
    let Op::EnsureFile(ensure) = op else {
        return Err(TaskOutcome::failed(
            "the agent asked for content of an op that has none",
        ));
    };
    let FileContent::Digest { sha256, .. } = ensure.content else {
        return Err(TaskOutcome::failed(
            "the agent asked for content that was sent inline",
        ));
    };
    let plan_ctx = plan_context(ctx, playbook, task, &run.vars);
    let bytes = match task.module.content(args, &plan_ctx) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(TaskOutcome::failed(format!(
                "{} cannot provide file content",
                task.module.name()
            )));
        }
        Err(e) => return Err(TaskOutcome::failed(e.to_string())),
    };
    let upload_id = NEXT_UPLOAD.fetch_add(1, Ordering::Relaxed);
    let (check, diff) = (check_mode(ctx, task), diff_mode(ctx, task));
    let failed = |e: String| TaskOutcome::failed(format!("uploading {}: {e}", ensure.path));
    if bytes.is_empty() {
        let inline = Op::EnsureFile(EnsureFile {
            content: FileContent::Inline(bytes),
            ..ensure.clone()
        });
        return session
            .call(inline, check, diff)
            .await
            .map_err(|e| failed(e.to_string()));
    }
    let chunks: Vec<&[u8]> = bytes.chunks(CHUNK_BYTES).collect();
    let groups: Vec<&[&[u8]]> = chunks.chunks(CHUNKS_PER_REQUEST).collect();
    let last = groups.len().saturating_sub(1);
    let staged = Op::EnsureFile(EnsureFile {
        content: FileContent::Staged { upload_id, sha256 },
        ..ensure.clone()
    });
    // In-order batches: the agent appends chunks in the order it reads them.
    for (index, group) in groups.iter().enumerate() {
        let mut ops: Vec<Op> = group
            .iter()
            .map(|data| Op::WriteChunk {
                upload_id,
                data: data.to_vec(),
            })
            .collect();
        if index == last {
            ops.push(staged.clone());
        }
        match session.call(Op::Batch(ops), check, diff).await {
            Ok(OpResult::Batch(mut results)) => {
                if let Some(err @ OpResult::Error(_)) =
                    results.iter().find(|r| matches!(r, OpResult::Error(_)))
                {
                    return Ok(err.clone());
                }
                if index == last {
                    return results.pop().ok_or_else(|| failed("empty reply".into()));
                }
            }
            Ok(other) => return Err(failed(format!("unexpected reply {other:?}"))),
            Err(e) => return Err(failed(e.to_string())),
        }
    }
    unreachable!("the last group returns")
}

/// `--check`, unless the task (or its block or play) says `check_mode: yes/no`.
fn check_mode(ctx: &RunContext, task: &Task) -> bool {
    task.check_mode.unwrap_or(ctx.opts.check)
}

/// `--diff`, unless the task (or its block, role or play) says `diff: yes/no`.
fn diff_mode(ctx: &RunContext, task: &Task) -> bool {
    task.diff.unwrap_or(ctx.opts.diff)
}

fn plan_context<'a>(
    ctx: &'a RunContext,
    playbook: &'a Playbook,
    task: &'a Task,
    vars: &'a minijinja::Value,
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
    }
}

/// The item's arguments and first state: skipped by `when`, failed by a template, or
/// checked and planned by the module. The last value says whether the module ran.
fn plan_item(
    ctx: &RunContext,
    playbook: &Playbook,
    task: &Task,
    vars: &minijinja::Value,
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
                    .insert("false_condition".into(), condition.clone().into());
                outcome
                    .data
                    .insert("skip_reason".into(), "Conditional result was False".into());
                return done(outcome);
            }
            Err(e) => {
                return done(TaskOutcome::failed(format!(
                    "The conditional check '{condition}' failed. The error was: {e}\n\nThe error appears to be in '{}'",
                    task.location
                )));
            }
        }
    }
    let raw_args = match ctx.templar.render_map(&task.args, vars) {
        Ok(mut args) => {
            strip_omitted(&mut args);
            args
        }
        Err(e) => return done(TaskOutcome::failed(template_failure(task, &e))),
    };
    let (args, state) = plan_args(ctx, playbook, task, vars, &raw_args);
    (raw_args, args, state, true)
}

/// Checks the templated arguments against the module's spec (a failure is the task's, in
/// Ansible's words) and lets the module plan.
fn plan_args(
    ctx: &RunContext,
    playbook: &Playbook,
    task: &Task,
    vars: &minijinja::Value,
    raw_args: &Map<String, Value>,
) -> (Option<Args>, ItemState) {
    let args = match task.module.spec().validate(&task.action, raw_args) {
        Ok(args) => args,
        Err(message) => return (None, ItemState::Done(TaskOutcome::failed(message))),
    };
    let state = match task
        .module
        .plan(&args, &plan_context(ctx, playbook, task, vars))
    {
        Ok(plan) => ItemState::of(plan),
        Err(e) => ItemState::Done(TaskOutcome::failed(e.to_string())),
    };
    (Some(args), state)
}

/// The task's `notify` names for this host (a name may be a template).
fn notify_names(ctx: &RunContext, task: &Task, vars: &minijinja::Value) -> Vec<String> {
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

fn template_failure(task: &Task, e: &TemplateError) -> String {
    match e {
        TemplateError::Undefined { .. } => format!(
            "The task includes an option with an undefined variable. The error was: {e}\n\nThe error appears to be in '{}'",
            task.location
        ),
        _ => format!("{e}\n\nThe error appears to be in '{}'", task.location),
    }
}

fn loop_failure(task: &Task, e: &LoopError) -> String {
    match e {
        LoopError::Template(t) => template_failure(task, t),
        other => format!("{other}\n\nThe error appears to be in '{}'", task.location),
    }
}

/// Ansible shows a string item as it is, anything else as Python shows data
/// (`{'key': 'a', 'value': 1}`).
fn item_label(item: &Value) -> String {
    match item {
        Value::String(s) => s.clone(),
        other => crate::template::python_str(&minijinja::Value::from_serialize(other)),
    }
}

fn status_of(outcome: &TaskOutcome) -> Status {
    if outcome.failed {
        Status::Failed
    } else if outcome.skipped {
        Status::Skipped
    } else if outcome.changed {
        Status::Changed
    } else {
        Status::Ok
    }
}

/// One loop item's result with what the output shows for it.
struct ItemOutcome {
    item: Option<Value>,
    index: usize,
    label: Option<String>,
    outcome: TaskOutcome,
}

fn finish_loop(
    ctx: &RunContext,
    task: &Task,
    host: &HostState,
    delegate: Option<&HostState>,
    outcomes: Vec<ItemOutcome>,
    notify: &[String],
) {
    let mut results = Vec::with_capacity(outcomes.len());
    let (mut any_changed, mut any_failed, mut all_skipped) = (false, false, true);
    let last_failed = outcomes.iter().rposition(|o| o.outcome.failed);
    let control = &task.loop_control;
    for ItemOutcome {
        item,
        index,
        label,
        outcome,
    } in outcomes
    {
        let verbose = outcome.verbose_always;
        absorb_facts(task, facts_host(task, host, delegate), &outcome);
        absorb_inventory(ctx, host, &outcome);
        any_changed |= outcome.changed;
        any_failed |= outcome.failed;
        all_skipped &= outcome.skipped;
        let mut data = outcome.registered();
        // Ansible's result keys: the item under its loop_var, the index under index_var.
        data.insert(task.loop_var.clone(), item.unwrap_or(Value::Null));
        data.insert("ansible_loop_var".into(), task.loop_var.clone().into());
        if let Some(index_var) = &control.index_var {
            data.insert(index_var.clone(), index.into());
            data.insert("ansible_index_var".into(), index_var.clone().into());
        }
        if control.label.is_some() {
            data.insert(
                "_ansible_item_label".into(),
                label.clone().unwrap_or_default().into(),
            );
        }
        let (label, shown) = if task.keywords.no_log {
            // Ansible shows `(item=None)` and hides the whole result.
            (Some("None".to_string()), censored(&outcome))
        } else {
            let own_data = task.module.caps().shown == Shown::OwnData;
            let mut shown = if own_data {
                debug_shown(&data)
            } else {
                data.clone()
            };
            if outcome.skipped {
                // Ansible shows a skipped item without its loop variable's name.
                shown.remove("ansible_loop_var");
            }
            (label, shown)
        };
        ctx.emit(Event::HostResult(HostResult {
            host: shown_host(host, delegate),
            status: status_of(&outcome),
            item: label,
            data: shown,
            ignored: task.ignore_errors && Some(index) == last_failed,
            verbose_always: verbose
                || (task.module.caps().shown == Shown::OwnData && !outcome.skipped),
        }));
        results.push(Value::Object(data));
    }
    let summary = TaskOutcome {
        changed: any_changed,
        failed: any_failed,
        // An empty loop is a skip, as in Ansible.
        skipped: all_skipped,
        msg: Some(
            if any_failed {
                "One or more items failed"
            } else {
                "All items completed"
            }
            .to_string(),
        ),
        ..TaskOutcome::default()
    };
    // Ansible closes a loop that ran no item with one `skipping: [h]` line of its own.
    if all_skipped {
        let mut data = Map::new();
        if results.is_empty() {
            data.insert("skipped_reason".into(), "No items in the list".into());
        } else {
            data.insert("msg".into(), "All items skipped".into());
        }
        ctx.emit(Event::HostResult(HostResult {
            host: shown_host(host, delegate),
            status: Status::Skipped,
            item: None,
            data,
            ignored: false,
            verbose_always: false,
        }));
    }
    let mut data = summary.registered();
    data.insert("results".into(), Value::Array(results));
    record(task, host, &summary, data, notify);
}

pub(super) fn finish_task(
    ctx: &RunContext,
    task: &Task,
    host: &HostState,
    delegate: Option<&HostState>,
    outcome: TaskOutcome,
    notify: &[String],
) {
    let verbose = outcome.verbose_always;
    absorb_facts(task, facts_host(task, host, delegate), &outcome);
    absorb_inventory(ctx, host, &outcome);
    let data = outcome.registered();
    let shown_as = task.module.caps().shown;
    let is_debug = shown_as == Shown::OwnData && !outcome.skipped;
    // debug shows only what it was asked to show, like Ansible's.
    let shown = if is_debug && !outcome.failed {
        outcome.data.clone()
    } else if shown_as == Shown::Nothing && !outcome.failed {
        // Ansible never prints gathered facts, even with -v (`_ansible_verbose_override`).
        Map::new()
    } else {
        data.clone()
    };
    let shown = if task.keywords.no_log {
        censored(&outcome)
    } else {
        shown
    };
    ctx.emit(Event::HostResult(HostResult {
        host: shown_host(host, delegate),
        status: status_of(&outcome),
        item: None,
        data: shown,
        ignored: outcome.failed && task.ignore_errors,
        verbose_always: is_debug || verbose,
    }));
    record(task, host, &outcome, data, notify);
}

/// The play's, blocks' and task's `environment`, templated and merged (inner wins).
fn task_environment(
    ctx: &RunContext,
    play: &Play,
    task: &Task,
    vars: &minijinja::Value,
) -> Result<Vec<(String, String)>, String> {
    let mut env: Vec<(String, String)> = Vec::new();
    for layer in play.environment.iter().chain(&task.keywords.environment) {
        let rendered = ctx
            .templar
            .render_value(layer, vars)
            .map_err(|e| template_failure(task, &e))?;
        let Value::Object(map) = rendered else {
            return Err(format!(
                "environment must be a mapping, got {rendered}\n\nThe error appears to be in '{}'",
                task.location
            ));
        };
        for (k, v) in map {
            let v = match v {
                Value::String(s) => s,
                other => crate::template::python_str(&minijinja::Value::from_serialize(&other)),
            };
            env.retain(|(name, _)| *name != k);
            env.push((k, v));
        }
    }
    Ok(env)
}

/// `environment` reaches commands only, as in Ansible (other modules ignore it). The
/// module's own variables, set later, win.
fn add_environment(op: &mut Op, env: &[(String, String)]) {
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
        _ => {}
    }
}

/// The `pause` module's wait, done here because planners cannot sleep.
async fn take_pause(
    ctx: &RunContext,
    task: &Task,
    outcome: &mut TaskOutcome,
    wait: std::time::Duration,
) {
    if let Some(Value::Array(warnings)) = outcome.data.get("warnings") {
        for warning in warnings.iter().filter_map(Value::as_str) {
            ctx.emit(Event::Warning(format!("{}: {warning}", task.location)));
        }
    }
    let start = std::time::SystemTime::now();
    if !wait.is_zero() {
        tokio::time::sleep(wait).await;
    }
    let stamp = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    };
    outcome
        .data
        .insert("start".into(), stamp(start).to_string().into());
    outcome.data.insert(
        "stop".into(),
        stamp(std::time::SystemTime::now()).to_string().into(),
    );
}

/// The host (or the one the task is delegated to) cannot be reached. With
/// `ignore_unreachable` Ansible counts it ok and ignored, registers the result, and keeps
/// the host in the play.
fn host_unreachable(ctx: &RunContext, task: &Task, host: &HostState, message: &str) {
    if !task.keywords.ignore_unreachable {
        ctx.unreachable(host, message);
        return;
    }
    let data = super::unreachable_result(message);
    ctx.emit_unreachable(host, data.clone(), true);
    host.stat(|s| {
        s.ok += 1;
        s.ignored += 1;
    });
    if let Some(name) = &task.register {
        host.register(name, Value::Object(data));
    }
}

/// What Ansible's output keeps of a debug result: `msg` alone (with any warnings), or for
/// `var=` the variable without the status keys. The registered value keeps everything.
fn debug_shown(data: &Map<String, Value>) -> Map<String, Value> {
    const WITH_MSG: &[&str] = &["msg", "exception", "warnings", "deprecations"];
    const HIDDEN: &[&str] = &["changed", "failed", "skipped", "invocation", "skip_reason"];
    data.iter()
        .filter(|(k, _)| {
            if data.contains_key("msg") {
                WITH_MSG.contains(&k.as_str())
            } else {
                !HIDDEN.contains(&k.as_str())
            }
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// What `no_log: true` leaves of a result in the output (the registered value keeps it
/// all, as in Ansible).
fn censored(outcome: &TaskOutcome) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert(
        "censored".into(),
        "the output has been hidden due to the fact that 'no_log: true' was specified for this result"
            .into(),
    );
    data.insert("changed".into(), outcome.changed.into());
    data
}

/// Ansible's `h1 -> h2` for a delegated task.
fn shown_host(host: &HostState, delegate: Option<&HostState>) -> String {
    match delegate {
        Some(d) => format!("{} -> {}", host.name, d.name),
        None => host.name.clone(),
    }
}

/// Where facts a task sets land: on the delegated host only with `delegate_facts`.
fn facts_host<'a>(
    task: &Task,
    host: &'a HostState,
    delegate: Option<&'a HostState>,
) -> &'a HostState {
    match delegate {
        Some(d) if task.keywords.delegate_facts => d,
        _ => host,
    }
}

/// The host a `delegate_to` names (templated), or `None` without one. A name the
/// inventory does not know is an error, except localhost, which always exists.
fn delegate_host(
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
    if ctx.inventory.host(name).is_none() && !added {
        return Err(format!(
            "delegate_to: '{name}' is not a host in the inventory\n\nThe error appears to be in '{}'",
            task.location
        ));
    }
    Ok(Some(ctx.host(name)))
}

/// `add_host` and `group_by` results change the run's inventory, as in Ansible.
fn absorb_inventory(ctx: &RunContext, host: &HostState, outcome: &TaskOutcome) {
    if outcome.failed || outcome.skipped {
        return;
    }
    for effect in &outcome.effects {
        match effect {
            Effect::AddHost { name, groups, vars } => ctx
                .runtime
                .lock()
                .expect("runtime lock")
                .add_host(&ctx.inventory, name, groups, vars),
            Effect::JoinGroup { group, parents } => {
                let mut runtime = ctx.runtime.lock().expect("runtime lock");
                runtime.add_to_group(&host.name, group);
                for parent in parents.iter().filter(|p| *p != "all") {
                    runtime.add_to_group(&host.name, parent);
                }
            }
            Effect::Wait(_) => {}
        }
    }
}

/// A module hands variables back the way Ansible's do, under `ansible_facts` in its
/// result, into the layer it declares: host facts (setup, and any module that returns
/// facts), include_vars' layer above task vars, or set_fact's above that.
fn absorb_facts(task: &Task, host: &HostState, outcome: &TaskOutcome) {
    if outcome.failed || outcome.skipped {
        return;
    }
    let Some(Value::Object(new)) = outcome.data.get("ansible_facts") else {
        return;
    };
    match task.module.caps().facts {
        FactsLayer::Gathered => {
            // Kept without the prefix, as `ansible_facts.X`; vars.rs adds the `ansible_X` names.
            let mut facts = host.facts.lock().expect("facts lock");
            for (k, v) in new {
                facts.insert(
                    k.strip_prefix("ansible_").unwrap_or(k).to_string(),
                    v.clone(),
                );
            }
        }
        FactsLayer::IncludeVars => host.include_vars_from(new),
        FactsLayer::SetFact => host.set_facts_from(new),
    }
}

/// Counts the task in the recap, registers its result, notifies handlers, and benches a
/// failed host (unless a block's rescue or always takes the failure first).
fn record(
    task: &Task,
    host: &HostState,
    outcome: &TaskOutcome,
    data: Map<String, Value>,
    notify: &[String],
) {
    let caught = (outcome.failed && !task.ignore_errors)
        .then(|| host.flow.lock().expect("flow lock").fail(task, &data));
    if !outcome.failed && outcome.changed && !notify.is_empty() {
        host.flow.lock().expect("flow lock").notify(notify);
    }
    if let Some(name) = &task.register {
        host.register(name, Value::Object(data));
    }
    host.stat(|s| match caught {
        // Ansible counts a failure a rescue takes as `rescued`, and nothing else.
        Some(Caught::Rescue) => s.rescued += 1,
        Some(_) => s.failed += 1,
        None if outcome.failed => {
            s.ok += 1;
            s.ignored += 1;
            s.changed += u32::from(outcome.changed);
        }
        None if outcome.skipped => s.skipped += 1,
        None => {
            s.ok += 1;
            s.changed += u32::from(outcome.changed);
        }
    });
    if caught == Some(Caught::Uncaught) {
        host.out.store(true, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turbo_proto::{Command, Exec};

    #[test]
    fn debug_items_show_what_ansible_shows() {
        let data = |v: Value| v.as_object().unwrap().clone();
        let with_msg = data(serde_json::json!({
            "msg": "a", "changed": false, "failed": false, "item": "a", "ansible_loop_var": "item"
        }));
        assert_eq!(
            Value::Object(debug_shown(&with_msg)),
            serde_json::json!({"msg": "a"})
        );
        let with_var = data(serde_json::json!({
            "x": 1, "changed": false, "failed": false, "item": "a", "ansible_loop_var": "item"
        }));
        assert_eq!(
            Value::Object(debug_shown(&with_var)),
            serde_json::json!({"x": 1, "item": "a", "ansible_loop_var": "item"})
        );
    }

    fn exec(env: &[(&str, &str)]) -> Op {
        Op::Exec(Exec {
            command: Command::Argv(vec!["env".into()]),
            chdir: None,
            creates: None,
            removes: None,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            stdin: None,
            umask: None,
        })
    }

    fn stat() -> Op {
        Op::Stat {
            path: "/x".into(),
            checksum: None,
            follow: false,
        }
    }

    #[test]
    fn environment_reaches_exec_ops_only_and_the_modules_own_win() {
        let env = vec![("A".to_string(), "1".to_string()), ("B".into(), "2".into())];
        let mut op = Op::Batch(vec![exec(&[("B", "own")]), stat()]);
        add_environment(&mut op, &env);
        assert_eq!(
            op,
            Op::Batch(vec![exec(&[("A", "1"), ("B", "own")]), stat()])
        );
    }

    #[test]
    fn no_log_keeps_only_changed() {
        let outcome = TaskOutcome {
            changed: true,
            msg: Some("secret".into()),
            ..Default::default()
        };
        let shown = censored(&outcome);
        assert_eq!(shown.len(), 2);
        assert_eq!(shown["changed"], true);
        assert!(
            shown["censored"]
                .as_str()
                .unwrap()
                .contains("'no_log: true'")
        );
    }

    #[test]
    fn labels_show_data_as_python_does() {
        assert_eq!(item_label(&Value::from("a")), "a");
        assert_eq!(
            item_label(&serde_json::json!({"key": "k", "value": [1, true, null]})),
            "{'key': 'k', 'value': [1, True, None]}"
        );
    }
}
