//! One task on one host: prepare it (loop items, `when`, arguments checked and planned),
//! carry its ops to the agent step by step, and turn the replies into Ansible's results.
//! `run` is the walk through those three rooms; `until` sends the items that must try
//! again through the same path.

mod outcome;
mod prepare;
mod squash;
mod transport;

use serde_json::{Map, Value};
use turbo_proto::Op;

use super::control::{Attempts, Verdict, judge};
use super::{HostState, RunContext};
use crate::connection::BecomeSpec;
use crate::modules::{Args, Effect, Next, Plan, TaskOutcome};
use crate::playbook::{Play, Playbook, Task};
use crate::report::events::Event;

pub(super) use outcome::{finish_task, item_shown};
pub(super) use prepare::item_vars;

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
    let prepared = match prepare::prepare(ctx, playbook, play, task, host, play_hosts) {
        Ok(prepared) => prepared,
        Err(message) => {
            finish_task(ctx, task, host, None, TaskOutcome::failed(message), &[]);
            return;
        }
    };
    let prepare::Prepared {
        base,
        attempts,
        delegate,
        items,
        pause,
        become_,
        ..
    } = &prepared;
    let task = prepared.task();
    let via: &HostState = delegate.as_deref().unwrap_or(host);
    if let Some(items) = items {
        ctx.emit(Event::ItemsPlanned {
            count: items.len().saturating_sub(1),
        });
    }

    // Plan every item on the controller first; only then talk to the agent, once.
    let mut runs = prepare::plan_items(
        ctx,
        playbook,
        play,
        task,
        base,
        items.as_deref(),
        prepared.loop_error.as_deref(),
    );
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
                outcome::take_pause(ctx, task, outcome, wait).await;
            }
        }
    }
    let notify = prepare::notify_names(ctx, task, base);

    // Every attempt sends the items still running as one batch; `until` decides which
    // items go again.
    let target = Target {
        ctx,
        playbook,
        play,
        task,
        host,
        via,
        become_: become_.as_ref(),
    };
    // A loop's `retries` and `delay` may name its variables: each item has its own.
    let item_attempts: Vec<Attempts> = runs
        .iter()
        .map(|run| match (&task.loop_spec, &task.until) {
            (Some(_), Some(_)) => Attempts::of(task, &ctx.templar, &run.vars).unwrap_or(*attempts),
            _ => *attempts,
        })
        .collect();
    let mut running: Vec<usize> = (0..runs.len()).collect();
    let mut attempt = 1;
    loop {
        if !transport::send_paced(&target, &mut runs, &running, *pause).await {
            return;
        }
        let mut again = Vec::new();
        for &i in &running {
            let run = &mut runs[i];
            let (true, ItemState::Done(outcome)) = (run.planned, &mut run.state) else {
                continue;
            };
            if judge(
                task,
                &ctx.templar,
                &run.vars,
                outcome,
                attempt,
                item_attempts[i],
            ) == Verdict::Retry
            {
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
                item: runs[i].item.as_ref().map(outcome::item_label),
                // Ansible counts the attempt about to start as made.
                retries_left: item_attempts[i].total.saturating_sub(attempt + 1),
            });
            let run = &mut runs[i];
            let (args, state) = prepare::plan_args(ctx, playbook, task, &run.vars, &run.raw_args);
            run.args = args;
            run.state = state;
        }
        let delay = again.iter().map(|&i| item_attempts[i].delay).max();
        tokio::time::sleep(delay.unwrap_or_default()).await;
        attempt += 1;
        running = again;
    }

    let outcomes: Vec<outcome::ItemOutcome> = runs
        .into_iter()
        .enumerate()
        .map(|(index, run)| {
            let label = run
                .item
                .as_ref()
                .map(|item| item_shown(ctx, task, &run.vars, item));
            match run.state {
                ItemState::Done(outcome) => outcome::ItemOutcome {
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
        outcome::finish_loop(ctx, task, host, delegate.as_deref(), outcomes, &notify);
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
    /// Whom the ops run as, when the task becomes another user.
    become_: Option<&'a BecomeSpec>,
}
