//! One task on one host: prepare it (loop items, `when`, arguments checked and planned),
//! carry its ops to the agent step by step, and turn the replies into Ansible's results.
//! `run` is the walk through those three rooms; `until` sends the items that must try
//! again through the same path.

mod async_job;
mod controller;
mod outcome;
mod peers;
mod predict;
mod prepare;
mod reboot;
mod reconnect;
mod squash;
mod timeout;
mod transport;

use serde_json::{Map, Value};
use turbo_proto::Op;

use super::chain::{ReadRecorder, Reads};
use super::control::{Attempts, InFlight, Verdict, judge_with};
use super::task_state::{self, TaskRecord};
use super::{HostState, RunContext};
use crate::connection::BecomeSpec;
use crate::modules::{Args, Effect, Next, Peer, Plan, TaskOutcome};
use crate::playbook::{Play, Playbook, Task};
use crate::report::events::Event;

pub(super) use outcome::{CENSORED_ITEM, finish_task, item_shown};
pub(super) use prepare::{false_condition, item_vars};
pub(in crate::executor) use timeout::backstop;

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
    /// Requests to keep in flight until the flow gives the plan that follows.
    Flow(Box<dyn crate::modules::Flow>),
}

impl ItemState {
    fn of(plan: Plan) -> ItemState {
        match plan {
            Plan::Done(outcome) => ItemState::Done(outcome),
            Plan::Remote(op) => ItemState::Remote(op),
            Plan::Step(op, next) => ItemState::Step(op, next),
            Plan::Flow(flow) => ItemState::Flow(flow),
        }
    }

    fn op(&self) -> Option<&Op> {
        match self {
            ItemState::Done(_) | ItemState::Flow(_) => None,
            ItemState::Remote(op) | ItemState::Step(op, _) => Some(op),
        }
    }

    /// Where the op goes: the task's session unless a step names another agent.
    fn peer(&self) -> crate::modules::Peer {
        match self {
            ItemState::Step(_, next) => next.peer(),
            _ => crate::modules::Peer::Task,
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
        timeout,
        ..
    } = &prepared;
    let task = prepared.task();
    let via: &HostState = delegate.as_deref().unwrap_or(host);
    let async_run = match async_job::decide(ctx, task, base) {
        Ok(run) => run,
        Err(message) => {
            finish_task(ctx, task, host, None, TaskOutcome::failed(message), &[]);
            return;
        }
    };
    if let Some(items) = items {
        ctx.emit(Event::ItemsPlanned {
            host: outcome::shown_host(host, delegate.as_deref()),
            count: items.len().saturating_sub(1),
        });
    }

    let notify = prepare::notify_names(ctx, task, base);
    let target = Target {
        ctx,
        playbook,
        play,
        task,
        host,
        via,
        become_: become_.as_ref(),
        timeout: *timeout,
        async_run: async_run.as_ref(),
    };
    let (runs, record) = if task_state::in_flight(task) {
        let loop_error = prepared.loop_error.as_deref();
        let flight = run_in_flight(
            &target,
            base,
            items.as_deref(),
            loop_error,
            *attempts,
            *pause,
        );
        match flight.await {
            Some((runs, record)) => (runs, Some(record)),
            None => return,
        }
    } else {
        match run_together(&target, &prepared, *attempts, *pause).await {
            Some(runs) => (runs, None),
            None => return,
        }
    };
    // The projections' values once the task is done, with its last item's variables.
    let registered = record.as_ref().map(|record| {
        let vars = runs.last().map_or(base, |run| &run.vars);
        task_state::registered(&ctx.templar, task, vars, record)
    });

    let outcomes: Vec<outcome::ItemOutcome> = runs
        .into_iter()
        .enumerate()
        .map(|(index, run)| {
            let label = run
                .item
                .as_ref()
                .map(|item| item_shown(ctx, task, &run.vars, item));
            match run.state {
                ItemState::Done(mut outcome) => {
                    if let Some(deprecation) = super::vars_dict::take_deprecation(&run.vars) {
                        outcome::add_deprecation(&mut outcome, deprecation);
                    }
                    if matches!(task.module.name(), "setup" | "gather_facts") {
                        crate::modules::with_task_environment(&mut outcome, &run.env);
                    }
                    inject_invocation(
                        task,
                        run.args.as_ref(),
                        run.planned,
                        &run.vars,
                        &mut outcome,
                    );
                    outcome::mask_no_log_args(task, &run.raw_args, &mut outcome);
                    outcome::ItemOutcome {
                        item: run.item,
                        index,
                        label,
                        outcome,
                    }
                }
                ItemState::Remote(_) | ItemState::Step(..) | ItemState::Flow(_) => {
                    unreachable!("every remote item got its reply")
                }
            }
        })
        .collect();
    let projected = registered.as_deref().map(outcome::Projected::of);
    if task.loop_spec.is_some() {
        outcome::finish_loop(
            ctx,
            task,
            host,
            delegate.as_deref(),
            outcomes,
            &notify,
            projected.as_ref(),
        );
    } else {
        let only = outcomes.into_iter().next().expect("one run without a loop");
        let mut single = only.outcome;
        if let Some(projected) = &projected {
            projected.fail(&mut single);
        }
        finish_task(ctx, task, host, delegate.as_deref(), single, &notify);
    }
    if let Some(projected) = &projected {
        projected.register(task, host);
    }
}

/// Plans every item on the controller first, then talks to the agent once for all of
/// them (with `break_when`, item by item). None when the host turned out unreachable.
async fn run_together(
    target: &Target<'_>,
    prepared: &prepare::Prepared<'_>,
    attempts: Attempts,
    pause: Option<std::time::Duration>,
) -> Option<Vec<ItemRun>> {
    let Target {
        ctx,
        playbook,
        play,
        task,
        ..
    } = *target;
    let loop_error = prepared.loop_error.as_deref();
    let mut runs = prepare::plan_items(ctx, playbook, play, task, prepared, loop_error);
    settle(target, &mut runs).await;
    // A loop's `retries` and `delay` may name its variables: each item has its own.
    let item_attempts: Vec<Attempts> = runs
        .iter()
        .map(|run| item_attempts_of(target, run, attempts))
        .collect();
    // With `break_when`, each item runs (and is judged) before the next starts.
    if task.loop_control.break_when.is_some() {
        let mut ran = 0;
        for i in 0..runs.len() {
            if let Some(pause) = pause
                && i > 0
            {
                tokio::time::sleep(pause).await;
            }
            if !run_attempts(target, &mut runs, vec![i], &item_attempts, None, None).await {
                return None;
            }
            ran = i + 1;
            let run = &mut runs[i];
            if let ItemState::Done(outcome) = &mut run.state
                && super::control::breaks(task, &ctx.templar, &run.vars, outcome, None)
            {
                break;
            }
        }
        runs.truncate(ran);
    } else {
        let all = (0..runs.len()).collect();
        if !run_attempts(target, &mut runs, all, &item_attempts, pause, None).await {
            return None;
        }
    }
    Some(runs)
}

/// The items of a task that reads `_task` or registers projections, one after another:
/// each planned with the results recorded before it, then run, judged and recorded
/// before the next (see `task_state`). None when the host turned out unreachable.
async fn run_in_flight(
    target: &Target<'_>,
    base: &minijinja::Value,
    items: Option<&[Value]>,
    loop_error: Option<&str>,
    attempts: Attempts,
    pause: Option<std::time::Duration>,
) -> Option<(Vec<ItemRun>, TaskRecord)> {
    let Target {
        ctx,
        playbook,
        play,
        task,
        ..
    } = *target;
    let all = items.unwrap_or(&[]);
    let count = if items.is_some() { all.len() } else { 1 };
    let mut record = TaskRecord::new(items.is_some());
    let mut runs: Vec<ItemRun> = Vec::with_capacity(count);
    let mut item_attempts = Vec::with_capacity(count);
    for index in 0..count {
        if let Some(pause) = pause
            && index > 0
        {
            tokio::time::sleep(pause).await;
        }
        let item = items.map(|all| &all[index]);
        let vars = match item {
            Some(v) => prepare::item_vars(&ctx.templar, task, base, v, all, index),
            None => base.clone(),
        };
        let seen = task_state::vars_with(&ctx.templar, task, &vars, &record);
        let mut run = prepare::plan_one(
            ctx,
            playbook,
            play,
            task,
            seen,
            item,
            prepare::Planning {
                loop_error,
                become_: target.become_,
            },
        );
        run.vars = vars;
        runs.push(run);
        settle(target, &mut runs[index..]).await;
        item_attempts.push(item_attempts_of(target, &runs[index], attempts));
        if !run_attempts(
            target,
            &mut runs,
            vec![index],
            &item_attempts,
            None,
            Some(&record),
        )
        .await
        {
            return None;
        }
        let ItemRun {
            item, vars, state, ..
        } = &mut runs[index];
        let ItemState::Done(outcome) = state else {
            unreachable!("every remote item got its reply");
        };
        let at = InFlight {
            record: &record,
            index,
            item: item.as_ref(),
        };
        let stop = super::control::breaks(task, &ctx.templar, vars, outcome, Some(&at));
        record.record(
            index,
            task_state::item_result(task, outcome, item.as_ref(), index),
        );
        if stop {
            break;
        }
    }
    record.exit_loop();
    Some((runs, record))
}

/// A loop item's attempts: its `retries` and `delay` may name the loop's variables.
fn item_attempts_of(target: &Target<'_>, run: &ItemRun, attempts: Attempts) -> Attempts {
    let task = target.task;
    match (&task.loop_spec, &task.until) {
        (Some(_), Some(_)) => {
            Attempts::of(task, &target.ctx.templar, &run.vars).unwrap_or(attempts)
        }
        _ => attempts,
    }
}

/// What planned items decided on the controller still make happen before any is sent:
/// `pause`'s wait, an async task's refusal, `wait_for_connection` and `reboot`.
async fn settle(target: &Target<'_>, runs: &mut [ItemRun]) {
    for run in runs.iter_mut() {
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
                outcome::take_pause(outcome, wait).await;
            }
        }
    }
    if target.async_run.is_some()
        && let Some(refusal) = async_job::refusal(target.task)
    {
        // Ansible's action plugin refuses before it looks at its arguments.
        for run in runs.iter_mut().filter(|run| run.planned) {
            run.state = ItemState::Done(TaskOutcome::failed(refusal.clone()));
        }
    }
    for run in runs.iter_mut() {
        if let ItemState::Done(outcome) = &mut run.state
            && let Some(Effect::Reconnect(wait)) = outcome.effects.first().cloned()
        {
            *outcome = reconnect::wait_for_connection(target, wait).await;
        }
        if let ItemState::Done(outcome) = &mut run.state
            && let Some(Effect::Reboot(spec)) = outcome.effects.first().cloned()
        {
            *outcome = reboot::reboot(target, &spec).await;
        }
    }
}

/// Ansible's `INJECT_INVOCATION` for a module turbo-play runs natively: the result
/// carries the module's arguments, as AnsibleModule adds them (Python modules add their
/// own; actions that run no module add none).
fn inject_invocation(
    task: &Task,
    args: Option<&Args>,
    planned: bool,
    vars: &minijinja::Value,
    outcome: &mut crate::modules::TaskOutcome,
) {
    let module = task.module;
    let Some(args) = args else { return };
    if !planned
        || outcome.skipped
        || outcome.data.contains_key("invocation")
        || module.reports_own_invocation()
        || module.caps().controller_action
        || module.caps().control != crate::modules::Control::None
        || crate::report::task_error::is_action(module.name())
        || !crate::modules::inject_invocation(Some(vars))
    {
        return;
    }
    let mut module_args = args.values().clone();
    module_args.extend(args.extra().clone());
    let mut invocation = Map::new();
    invocation.insert("module_args".into(), Value::Object(module_args));
    outcome
        .data
        .insert("invocation".into(), Value::Object(invocation));
}

/// Sends the `running` items, judges each reply (changed_when, failed_when, until) and
/// sends the items `until` keeps going again, after the delay, until all are done. False
/// when the host turned out unreachable (already reported).
async fn run_attempts(
    target: &Target<'_>,
    runs: &mut [ItemRun],
    mut running: Vec<usize>,
    item_attempts: &[Attempts],
    pause: Option<std::time::Duration>,
    record: Option<&TaskRecord>,
) -> bool {
    let Target {
        ctx,
        playbook,
        task,
        host,
        ..
    } = *target;
    let mut attempt = 1;
    loop {
        if !transport::send_paced(target, runs, &running, pause).await {
            return false;
        }
        let mut again = Vec::new();
        for &i in &running {
            let ItemRun {
                item,
                vars,
                state,
                planned,
                ..
            } = &mut runs[i];
            let (true, ItemState::Done(outcome)) = (*planned, state) else {
                continue;
            };
            let in_flight = record.map(|record| InFlight {
                record,
                index: i,
                item: item.as_ref(),
            });
            if judge_with(
                task,
                &ctx.templar,
                vars,
                outcome,
                attempt,
                item_attempts[i],
                in_flight.as_ref(),
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
                item: outcome::label_shown(task, runs[i].item.as_ref().map(outcome::item_label)),
                // Ansible counts the attempt about to start as made.
                retries_left: item_attempts[i].total.saturating_sub(attempt + 1),
            });
            let run = &mut runs[i];
            let (args, state) = prepare::plan_args(
                ctx,
                playbook,
                task,
                &run.vars,
                &run.raw_args,
                target.become_,
            );
            run.args = args;
            run.state = state;
        }
        let delay = again.iter().map(|&i| item_attempts[i].delay).max();
        tokio::time::sleep(delay.unwrap_or_default()).await;
        attempt += 1;
        running = again;
    }
    true
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
    /// The task's `timeout:` in seconds, for each item.
    timeout: Option<u64>,
    /// `async:`: each item's final op runs as a detached job.
    async_run: Option<&'a async_job::AsyncRun>,
}

/// What a task would do on a host if it ran now, planned on the controller and sent
/// nowhere: the chain planner's view of a task it may send ahead (`chain/`).
pub(in crate::executor) enum Foreseen {
    /// Nothing goes to the agent; the controller decides the outcome (a false `when`,
    /// set_fact, debug). `sets` are the facts it would set, with their values.
    Decided {
        failed: bool,
        sets: Map<String, Value>,
        effects: bool,
    },
    /// One op for the agent, with the request's flags and the user it runs as. `steps`:
    /// its reply plans another op.
    Remote {
        op: Box<Op>,
        check: bool,
        diff: bool,
        become_: Option<BecomeSpec>,
        steps: bool,
        /// The task's `timeout:` in seconds, sent with the op.
        timeout: Option<u64>,
    },
    /// A loop, a delegate, a pause or an error: not foreseen, run in its turn.
    Unknown,
}

/// Plans `task` for `host` as its turn would, and says which variables the planning
/// looked up (the chain planner checks that none of them can change before the turn),
/// with `known`, the facts earlier tasks of the chain set, over its variables.
/// A plan that comes out otherwise when made twice (a random filter, the clock) is
/// Unknown: its turn would not ask for the same op.
pub(in crate::executor) fn foresee(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &Task,
    host: &HostState,
    play_hosts: &super::vars::PlayHosts,
    known: &Map<String, Value>,
) -> (Foreseen, Reads) {
    // An async task's op runs as a job its turn starts: never sent ahead; planning an
    // action plugin runs its Python code, which runs in its turn only.
    if task.async_job.limit.is_some() || task.module.caps().controller_action {
        return (Foreseen::Unknown, Reads::default());
    }
    let Ok(vars) = super::vars::task_vars(ctx, playbook, play, task, host, play_hosts) else {
        return (Foreseen::Unknown, Reads::default());
    };
    // Facts an earlier task of the chain sets (set_fact, decided now), as its turn will
    // find them: already templated, never again. The chain reads them only where no
    // other layer names them (`chain::depends_on_chain`), so precedence cannot differ.
    let vars = match known.is_empty() {
        true => vars,
        false => minijinja::value::merge_maps([vars, minijinja::Value::from_serialize(known)]),
    };
    let (vars, recorder) = ReadRecorder::wrap(vars);
    let Ok(prepared) = prepare::prepare_from(ctx, task, host, vars) else {
        return (Foreseen::Unknown, recorder.reads());
    };
    if prepared.delegate.is_some()
        || prepared.pause.is_some()
        || prepared.loop_error.is_some()
        || !std::ptr::eq(prepared.task(), task)
    {
        return (Foreseen::Unknown, recorder.reads());
    }
    let first = plan_ahead(ctx, playbook, play, task, &prepared);
    let again = plan_ahead(ctx, playbook, play, task, &prepared);
    let foreseen = match (&first, &again) {
        (Foreseen::Remote { op: a, .. }, Foreseen::Remote { op: b, .. }) if a != b => {
            Foreseen::Unknown
        }
        _ => first,
    };
    (foreseen, recorder.reads())
}

/// The task's one op (a loop's items' ops as the one batch its turn sends), or what the
/// controller decides. A loop with an item that takes steps, fails, sets facts or has
/// effects is Unknown: the chain analysis follows no more than one op per task.
fn plan_ahead(
    ctx: &RunContext,
    playbook: &Playbook,
    play: &Play,
    task: &Task,
    prepared: &prepare::Prepared<'_>,
) -> Foreseen {
    let items = prepared.items.as_deref();
    let runs = prepare::plan_items(ctx, playbook, play, task, prepared, None);
    let remote = |op: &Op, run: &ItemRun| {
        let mut op = op.clone();
        if !run.env.is_empty() {
            prepare::add_environment(&mut op, &run.env);
        }
        op
    };
    let foreseen_remote = |op: Op, steps: bool| Foreseen::Remote {
        op: Box::new(op),
        check: prepare::agent_check_mode(ctx, task),
        diff: prepare::diff_mode(ctx, task),
        become_: prepared.become_.clone(),
        steps,
        timeout: prepared.timeout,
    };
    if items.is_none() {
        let Some(run) = runs.first() else {
            return Foreseen::Unknown;
        };
        return match &run.state {
            ItemState::Done(outcome) => Foreseen::Decided {
                failed: outcome.failed,
                sets: match outcome.data.get("ansible_facts") {
                    Some(Value::Object(facts)) => facts.clone(),
                    _ => Map::new(),
                },
                effects: !outcome.effects.is_empty(),
            },
            ItemState::Remote(op) if run.planned => foreseen_remote(remote(op, run), false),
            ItemState::Step(op, next) if run.planned && next.peer() == Peer::Task => {
                foreseen_remote(remote(op, run), true)
            }
            _ => Foreseen::Unknown,
        };
    }
    let mut ops = Vec::new();
    for run in &runs {
        match &run.state {
            ItemState::Done(outcome)
                if !outcome.failed
                    && outcome.effects.is_empty()
                    && !outcome.data.contains_key("ansible_facts") => {}
            ItemState::Remote(op) if run.planned => ops.push(remote(op, run)),
            _ => return Foreseen::Unknown,
        }
    }
    match ops.len() {
        0 => Foreseen::Decided {
            failed: false,
            sets: Map::new(),
            effects: false,
        },
        1 => foreseen_remote(ops.pop().expect("one op"), false),
        n if task.module.caps().batchable && n <= transport::BATCH_CHUNK => {
            foreseen_remote(Op::Batch(ops), false)
        }
        _ => Foreseen::Unknown,
    }
}
