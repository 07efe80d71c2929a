//! One task on one host: expand the loop, evaluate `when`, template the arguments, let
//! the module plan agent ops, send them as one batch, and turn the replies into results.

use std::sync::atomic::Ordering;

use serde_json::{Map, Value};
use turbo_proto::{Op, OpResult};

use super::vars::{strip_omitted, task_vars};
use super::{HostState, RunContext};
use crate::modules::{Plan, PlanContext, TaskOutcome};
use crate::playbook::{LoopSpec, Play, Playbook, Task, sequence_items};
use crate::report::events::{Event, HostResult, Status};
use crate::template::TemplateError;

/// Ops per request for long loops: the first chunk starts on the agent while the next are
/// still on the wire, and no single frame grows without bound.
const BATCH_CHUNK: usize = 256;

/// One loop item (or the task itself when it has no loop) on its way through.
struct ItemRun {
    item: Option<Value>,
    label: Option<String>,
    args: Map<String, Value>,
    state: ItemState,
}

enum ItemState {
    Done(TaskOutcome),
    /// Waiting for the agent's reply to this op.
    Remote(Op),
}

pub(crate) async fn run(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &Task,
    host: &HostState,
    play_hosts: &[String],
) {
    let base = task_vars(ctx, playbook, play, task, host, play_hosts);
    let items = match expand_loop(ctx, task, &base) {
        Ok(items) => items,
        Err(msg) => {
            let outcome = failed(msg);
            finish_task(ctx, task, host, outcome);
            return;
        }
    };
    if let Some(items) = &items {
        ctx.emit(Event::ItemsPlanned {
            count: items.len().saturating_sub(1),
        });
    }

    // Plan every item on the controller first; only then talk to the agent, once.
    let plan_ctx_dir = playbook.dir.clone();
    let mut runs: Vec<ItemRun> = Vec::new();
    let item_list: Vec<Option<Value>> = match items {
        Some(items) => items.into_iter().map(Some).collect(),
        None => vec![None],
    };
    for item in item_list {
        let vars = match &item {
            Some(v) => {
                let item_value = minijinja::Value::from_serialize(v);
                let mut overlay = std::collections::BTreeMap::new();
                overlay.insert(task.loop_var.clone(), item_value);
                minijinja::context! { ..minijinja::Value::from(overlay), ..base.clone() }
            }
            None => base.clone(),
        };
        let label = item.as_ref().map(item_label);
        let state = plan_item(ctx, task, &vars, &plan_ctx_dir);
        let (args, state) = match state {
            Ok((args, state)) => (args, state),
            Err(outcome) => (Map::new(), ItemState::Done(outcome)),
        };
        runs.push(ItemRun {
            item,
            label,
            args,
            state,
        });
    }

    let remote: Vec<usize> = runs
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.state, ItemState::Remote(_)))
        .map(|(i, _)| i)
        .collect();
    if !remote.is_empty() {
        let session = match ctx.session(host).await {
            Ok(s) => s,
            Err(message) => {
                ctx.unreachable(host, &message);
                return;
            }
        };
        let ops: Vec<Op> = remote
            .iter()
            .map(|&i| match &runs[i].state {
                ItemState::Remote(op) => op.clone(),
                ItemState::Done(_) => unreachable!("filtered to remote items"),
            })
            .collect();
        let results = send_batched(ctx, &session, ops).await;
        let results = match results {
            Ok(r) => r,
            Err(message) => {
                ctx.unreachable(host, &message);
                return;
            }
        };
        for (&i, result) in remote.iter().zip(results) {
            let outcome = task.module.finish(&runs[i].args, result);
            runs[i].state = ItemState::Done(outcome);
        }
    }

    let is_loop = task.loop_spec.is_some();
    let mut outcomes = Vec::with_capacity(runs.len());
    for run in runs {
        let ItemState::Done(outcome) = run.state else {
            unreachable!("all items done")
        };
        outcomes.push((run.item, run.label, outcome));
    }
    if is_loop {
        finish_loop(ctx, task, host, outcomes);
    } else {
        let (_, _, outcome) = outcomes.pop().expect("one run without a loop");
        finish_task(ctx, task, host, outcome);
    }
}

/// Sends the ops, one request per chunk, all chunks in flight at once.
async fn send_batched(
    ctx: &RunContext,
    session: &crate::agent_session::AgentSession,
    ops: Vec<Op>,
) -> Result<Vec<OpResult>, String> {
    let (check, diff) = (ctx.opts.check, ctx.opts.diff);
    if ops.len() == 1 {
        let op = ops.into_iter().next().expect("one op");
        return session
            .call(op, check, diff)
            .await
            .map(|r| vec![r])
            .map_err(|e| e.to_string());
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

fn plan_item(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
    playbook_dir: &std::path::Path,
) -> Result<(Map<String, Value>, ItemState), TaskOutcome> {
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
                return Ok((Map::new(), ItemState::Done(outcome)));
            }
            Err(e) => {
                return Err(failed(format!(
                    "The conditional check '{condition}' failed. The error was: {e}\n\nThe error appears to be in '{}'",
                    task.location
                )));
            }
        }
    }
    let args = match ctx
        .templar
        .render_value(&Value::Object(task.args.clone()), vars)
    {
        Ok(Value::Object(mut args)) => {
            strip_omitted(&mut args);
            args
        }
        Ok(_) => {
            return Err(failed(
                "module arguments did not template to a mapping".into(),
            ));
        }
        Err(e) => return Err(failed(template_failure(task, &e))),
    };
    let plan_ctx = PlanContext {
        playbook_dir,
        check_mode: ctx.opts.check,
        diff: ctx.opts.diff,
        vars: Some(vars),
        templar: Some(&ctx.templar),
    };
    match task.module.plan(&args, &plan_ctx) {
        Ok(Plan::Done(outcome)) => Ok((args, ItemState::Done(outcome))),
        Ok(Plan::Remote(op)) => Ok((args, ItemState::Remote(op))),
        Err(e) => Err(failed(e.to_string())),
    }
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

fn failed(msg: String) -> TaskOutcome {
    TaskOutcome {
        failed: true,
        msg: Some(msg),
        ..Default::default()
    }
}

fn expand_loop(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
) -> Result<Option<Vec<Value>>, String> {
    let Some(spec) = &task.loop_spec else {
        return Ok(None);
    };
    let where_ = &task.location;
    match spec {
        LoopSpec::Sequence(raw) => {
            let spec = ctx
                .templar
                .render_str(raw, vars)
                .map_err(|e| format!("{e}\n\nThe error appears to be in '{where_}'"))?;
            let items =
                sequence_items(&spec).map_err(|e| format!("with_sequence: {e} ({where_})"))?;
            Ok(Some(items.into_iter().map(Value::from).collect()))
        }
        LoopSpec::Items { value, flatten } => {
            let rendered = ctx
                .templar
                .render_value(value, vars)
                .map_err(|e| template_failure(task, &e))?;
            let list = match rendered {
                Value::Array(items) => items,
                Value::Null if *flatten => vec![],
                other if *flatten => vec![other],
                other => {
                    return Err(format!(
                        "Invalid data passed to 'loop', it requires a list, got this instead: {other}. Hint: If you passed a list/dict of just one element, try adding wantlist=True to your lookup invocation or use q/query instead of lookup. ({where_})"
                    ));
                }
            };
            if *flatten {
                Ok(Some(
                    list.into_iter()
                        .flat_map(|v| match v {
                            Value::Array(inner) => inner,
                            other => vec![other],
                        })
                        .collect(),
                ))
            } else {
                Ok(Some(list))
            }
        }
    }
}

/// Ansible shows a string item as it is, anything else as data.
fn item_label(item: &Value) -> String {
    match item {
        Value::String(s) => s.clone(),
        other => other.to_string(),
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

/// The result as `register` stores it and `-v` shows it.
fn result_data(outcome: &TaskOutcome) -> Map<String, Value> {
    let mut data = outcome.data.clone();
    data.insert("changed".into(), outcome.changed.into());
    if outcome.failed {
        data.insert("failed".into(), true.into());
    }
    if outcome.skipped {
        data.insert("skipped".into(), true.into());
    }
    if let Some(msg) = &outcome.msg {
        data.insert("msg".into(), msg.clone().into());
    }
    data
}

fn finish_loop(
    ctx: &RunContext,
    task: &Task,
    host: &HostState,
    outcomes: Vec<(Option<Value>, Option<String>, TaskOutcome)>,
) {
    let mut results = Vec::with_capacity(outcomes.len());
    let (mut any_changed, mut any_failed, mut all_skipped) = (false, false, true);
    let last_failed = outcomes.iter().rposition(|(_, _, o)| o.failed);
    for (index, (item, label, outcome)) in outcomes.into_iter().enumerate() {
        any_changed |= outcome.changed;
        any_failed |= outcome.failed;
        all_skipped &= outcome.skipped;
        let mut data = result_data(&outcome);
        data.insert("item".into(), item.unwrap_or(Value::Null));
        data.insert("ansible_loop_var".into(), task.loop_var.clone().into());
        ctx.emit(Event::HostResult(HostResult {
            host: host.name.clone(),
            status: status_of(&outcome),
            item: label,
            data: data.clone(),
            ignored: task.ignore_errors && Some(index) == last_failed,
            verbose_always: task.module.name() == "debug",
        }));
        results.push(Value::Object(data));
    }
    let skipped_all = all_skipped && !results.is_empty();
    let summary = TaskOutcome {
        changed: any_changed,
        failed: any_failed,
        skipped: skipped_all || results.is_empty(),
        msg: Some(
            if any_failed {
                "One or more items failed"
            } else {
                "All items completed"
            }
            .to_string(),
        ),
        data: Map::new(),
    };
    let mut data = result_data(&summary);
    data.insert("results".into(), Value::Array(results));
    record(task, host, &summary, data);
}

fn finish_task(ctx: &RunContext, task: &Task, host: &HostState, outcome: TaskOutcome) {
    let data = result_data(&outcome);
    ctx.emit(Event::HostResult(HostResult {
        host: host.name.clone(),
        status: status_of(&outcome),
        item: None,
        data: display_data(task, &outcome, &data),
        ignored: outcome.failed && task.ignore_errors,
        verbose_always: task.module.name() == "debug",
    }));
    record(task, host, &outcome, data);
}

/// debug shows only what it was asked to show, like Ansible's.
fn display_data(
    task: &Task,
    outcome: &TaskOutcome,
    data: &Map<String, Value>,
) -> Map<String, Value> {
    if task.module.name() == "debug" && !outcome.failed {
        outcome
            .data
            .iter()
            .filter(|(k, _)| !k.starts_with('_'))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    } else {
        data.clone()
    }
}

/// Counts the task in the recap, registers its result, and benches a failed host.
fn record(task: &Task, host: &HostState, outcome: &TaskOutcome, data: Map<String, Value>) {
    if let Some(name) = &task.register {
        host.registered
            .lock()
            .expect("registered lock")
            .insert(name.clone(), Value::Object(data));
    }
    host.stat(|s| {
        if outcome.failed {
            if task.ignore_errors {
                s.ok += 1;
                s.ignored += 1;
                if outcome.changed {
                    s.changed += 1;
                }
            } else {
                s.failed += 1;
            }
        } else if outcome.skipped {
            s.skipped += 1;
        } else {
            s.ok += 1;
            if outcome.changed {
                s.changed += 1;
            }
        }
    });
    if outcome.failed && !task.ignore_errors {
        host.out.store(true, Ordering::SeqCst);
    }
}
