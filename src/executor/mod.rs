//! Runs plays: Ansible's linear strategy (every host finishes a task before the next task
//! starts), hosts concurrent up to `--forks`, one agent session per host for the whole run.
//!
//! Round trips are the cost, so a task's loop items are planned on the controller and sent
//! to the agent as one batch (cut into pipelined chunks for very long loops).

mod chain;
mod context;
pub use context::{BecomeDefaults, EventSender, RunOptions, RunSummary};
pub(crate) use context::{HostState, RunContext, unreachable_result};
mod control;
mod custom_stats;
mod facts;
mod flow;
mod host_task;
mod hostvars;
mod include;
mod runtime_inventory;
mod sessions;
mod throttle;
pub(crate) use throttle::Throttles;
use throttle::throttled_to;

pub(crate) use sessions::SessionFailure;
mod task_state;
mod vars;
mod vars_dict;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::inventory::Inventory;
use crate::playbook::{Play, Playbook, TagFilter, select_tasks};
use crate::report::events::{Event, HostResult, Status};
use crate::template::Templar;

/// Runs every play of every playbook in order, then the recap.
pub async fn run_playbooks(
    playbooks: Vec<Playbook>,
    inventory: Inventory,
    opts: RunOptions,
    events: EventSender,
) -> RunSummary {
    run_playbooks_until(playbooks, inventory, opts, events, std::future::pending()).await
}

/// [`run_playbooks`], stopped early when `interrupt` completes (Ctrl-C, SIGTERM): the
/// tasks in flight are abandoned, every agent is cancelled (it stops the process group
/// it runs, removes its staging files and exits), and the recap of what had finished
/// is shown.
pub async fn run_playbooks_until(
    playbooks: Vec<Playbook>,
    inventory: Inventory,
    opts: RunOptions,
    events: EventSender,
    interrupt: impl std::future::Future<Output = ()>,
) -> RunSummary {
    let start_at = Mutex::new(opts.start_at_task.clone());
    let plugins = opts.plugins.clone();
    let ctx = Arc::new_cyclic(|me: &std::sync::Weak<RunContext>| RunContext {
        inventory: std::sync::RwLock::new(Arc::new(inventory)),
        start_at,
        opts,
        templar: {
            let mut templar = Templar::new();
            let run = me.clone();
            templar.set_host_selector(Arc::new(move |pattern: &str| {
                let ctx = run.upgrade().ok_or("the run has ended")?;
                ctx.hosts_matching(pattern)
            }));
            templar.set_plugins(plugins);
            Arc::new(templar)
        },
        events,
        hosts: Mutex::new(HashMap::new()),
        vars_files: Default::default(),
        me: me.clone(),
        runtime: Mutex::default(),
        includes: Default::default(),
        public_roles: Mutex::default(),
        dynamic_handlers: Mutex::default(),
        ran_roles: Mutex::default(),
        warned_keywords: Mutex::default(),
        custom_stats: Default::default(),
        interrupted: Default::default(),
        controller: Default::default(),
        early_connections: Default::default(),
    });
    for warning in ctx.inventory().warnings() {
        ctx.emit(Event::Warning(warning.clone()));
    }
    ctx.emit(Event::RunStart {
        check: ctx.opts.check,
    });
    // Ansible's recap lists every host that took part, by name.
    let seen = Mutex::new(std::collections::BTreeSet::new());
    let plays = async {
        'playbooks: for playbook in playbooks {
            let playbook = Arc::new(playbook);
            for play_index in 0..playbook.plays.len() {
                let hosts = match select_hosts(&ctx, &playbook.plays[play_index]) {
                    Ok(h) => h,
                    Err(message) => {
                        ctx.emit(Event::Warning(message));
                        continue;
                    }
                };
                seen.lock()
                    .expect("seen lock")
                    .extend(hosts.iter().cloned());
                if run_play(&ctx, &playbook, play_index, hosts).await == PlayEnd::StopRun {
                    break 'playbooks;
                }
            }
        }
    };
    // Dropping the plays drops their host jobs' JoinSets, which aborts every task.
    let interrupted = tokio::select! {
        _ = plays => false,
        _ = interrupt => true,
    };
    let seen = seen.into_inner().expect("seen lock");
    let mut sessions = Vec::new();
    let mut stats = Vec::new();
    for name in &seen {
        let host = ctx.host(name);
        let mut s = host.stats.lock().expect("stats").clone();
        for session in ctx.open_sessions(&host) {
            let (sent, received) = session.traffic();
            s.bytes_sent += sent;
            s.bytes_received += received;
            sessions.push(session);
        }
        // Ansible's recap lists only hosts that got a result (tags or --start-at-task
        // may leave a host with none).
        let counted = s.ok + s.changed + s.unreachable + s.failed + s.skipped + s.rescued;
        if counted + s.ignored > 0 {
            stats.push(s);
        }
    }
    if let Some(Ok(session)) = ctx.controller.get() {
        sessions.push(session.clone());
    }
    if interrupted {
        ctx.interrupted
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let mut cancels = JoinSet::new();
        for session in sessions {
            cancels.spawn(async move { session.cancel().await });
        }
        while cancels.join_next().await.is_some() {}
        let _ = ctx.events.send(Event::Recap(stats.clone()));
        return RunSummary {
            stats,
            start_at_unmatched: None,
            interrupted: true,
        };
    }
    // Every host's sessions end at once, none waiting for an answer it does not need.
    let mut releases = JoinSet::new();
    for session in sessions {
        releases.spawn(async move { session.release().await });
    }
    while releases.join_next().await.is_some() {}
    ctx.emit(Event::Recap(stats.clone()));
    let custom = ctx.custom_stats.snapshot();
    if !custom.is_empty() {
        ctx.emit(Event::CustomStats(custom));
    }
    let start_at_unmatched = ctx.start_at.lock().expect("start_at lock").take();
    RunSummary {
        stats,
        start_at_unmatched,
        interrupted: false,
    }
}

fn select_hosts(ctx: &RunContext, play: &Play) -> Result<Vec<String>, String> {
    {
        let runtime = ctx.runtime.lock().expect("runtime lock");
        if !runtime.is_empty() {
            let mut hosts = runtime.select(&ctx.inventory(), &play.hosts);
            if let Some(limit) = &ctx.opts.limit {
                hosts = ctx
                    .inventory()
                    .limit(hosts, limit)
                    .map_err(|e| e.to_string())?;
            }
            if let Some(slice) = &ctx.opts.slice {
                hosts.retain(|host| slice.holds(host) || runtime.knows_host(host));
            }
            return Ok(hosts);
        }
    }
    let selection = ctx
        .inventory()
        .select_reporting(&play.hosts)
        .map_err(|e| e.to_string())?;
    let mut unmatched = selection.unmatched;
    let mut hosts = selection.hosts;
    if let Some(limit) = &ctx.opts.limit {
        let limited = ctx
            .inventory()
            .limit_reporting(hosts, limit)
            .map_err(|e| e.to_string())?;
        hosts = limited.hosts;
        unmatched.extend(limited.unmatched);
    }
    if let Some(slice) = &ctx.opts.slice {
        hosts.retain(|host| slice.holds(host));
    }
    for pattern in unmatched {
        ctx.emit(Event::Warning(format!(
            "Could not match supplied host pattern, ignoring: {pattern}"
        )));
    }
    Ok(hosts)
}

/// How a play (or one `serial` batch of it) ended, for what runs after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlayEnd {
    /// The next batch, and the next play, run.
    Done,
    /// `meta: end_play`: no further batch of this play runs; the next play does.
    EndPlay,
    /// Every host of a batch failed, or `any_errors_fatal`/`max_fail_percentage` stopped
    /// the play: like ansible-playbook, nothing more of the run happens.
    StopRun,
}

/// The play's banner event: its check mode is its own `check_mode`, else `--check`.
fn play_start(ctx: &RunContext, play: &crate::playbook::Play) -> Event {
    Event::PlayStart {
        name: play.name.clone(),
        check_mode: play.check_mode.unwrap_or(ctx.opts.check),
        free: play.keywords.free,
    }
}

async fn run_play(
    ctx: &Arc<RunContext>,
    playbook: &Arc<Playbook>,
    play_index: usize,
    hosts: Vec<String>,
) -> PlayEnd {
    let play = &playbook.plays[play_index];
    ctx.public_roles.lock().expect("public roles lock").clear();
    ctx.dynamic_handlers.lock().expect("handlers lock").clear();
    *ctx.ran_roles.lock().expect("ran roles lock") = play.ran_roles.clone();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    // Hosts that failed in an earlier play stay in the list: Ansible cuts the `serial`
    // batches with them and lists them in `ansible_play_hosts_all`; they just do not run.
    let hosts: Vec<String> = play.keywords.order.apply(hosts, seed);
    if hosts.is_empty() {
        ctx.emit(play_start(ctx, play));
        ctx.emit(Event::NoHostsMatched);
        return PlayEnd::Done;
    }
    let all: Arc<[Arc<HostState>]> = hosts.iter().map(|h| ctx.host(h)).collect();
    for prompt in &play.vars_prompt {
        let name = &prompt.name;
        if prompt.default.is_none() && !ctx.opts.extra_vars.contains_key(name) {
            ctx.emit(Event::Warning(format!(
                "{}: vars_prompt '{name}' has no default and there is no terminal to ask on: pass -e {name}=...",
                play.location
            )));
        }
    }
    let fatal = |t: &crate::playbook::Task| t.keywords.any_errors_fatal == Some(true);
    if play.keywords.free && (play.keywords.any_errors_fatal || play.tasks.iter().any(fatal)) {
        // ansible-playbook 2.21 warns the same and goes on: under `free` no host waits
        // for another, so one host's failure cannot stop the others.
        ctx.emit(Event::Warning(
            "Using any_errors_fatal with the free strategy is not supported, as tasks are \
             executed independently on each host"
                .into(),
        ));
    }
    ctx.warn_keywords(&play.unsupported);
    // `serial`: each batch runs the whole play before the next starts, as in Ansible.
    for batch in crate::playbook::batches(hosts, &play.keywords.serial) {
        let cut = batch.len();
        let batch: Vec<Arc<HostState>> = batch
            .iter()
            .map(|h| ctx.host(h))
            .filter(|h| !h.out.load(Ordering::SeqCst))
            .collect();
        ctx.emit(play_start(ctx, play));
        if batch.is_empty() {
            continue;
        }
        let play_hosts = vars::PlayHosts {
            all: all.clone(),
            batch: batch.iter().cloned().collect(),
        };
        match run_batch(ctx, playbook, play_index, &batch, &play_hosts).await {
            PlayEnd::Done => {}
            end => return end,
        }
        // Every host of the batch failed in it (ansible-playbook counts the batch as cut,
        // with hosts that failed before): the run stops, later plays included.
        let failed_now = batch
            .iter()
            .filter(|h| h.out.load(Ordering::SeqCst))
            .count();
        if failed_now == cut {
            return PlayEnd::StopRun;
        }
    }
    PlayEnd::Done
}

async fn run_batch(
    ctx: &Arc<RunContext>,
    playbook: &Arc<Playbook>,
    play_index: usize,
    hosts: &[Arc<HostState>],
    play_hosts: &vars::PlayHosts,
) -> PlayEnd {
    let play = &playbook.plays[play_index];
    let forks = Arc::new(Semaphore::new(ctx.opts.forks.max(1)));
    for host in hosts {
        *host.flow.lock().expect("flow lock") = flow::Flow::default();
    }
    let throttles = Arc::new(Throttles::default());
    let run = flow::PlayRun {
        ctx,
        playbook,
        play_index,
        hosts,
        play_hosts,
        forks: &forks,
        throttles: &throttles,
    };
    let Some(task_indexes) = tasks_to_run(play, &ctx.opts.tags, &ctx.start_at) else {
        // --start-at-task has not matched yet: nothing of this play runs, not even facts.
        return PlayEnd::Done;
    };
    facts::gather(&run).await;
    if play.keywords.free {
        let (end, cut_short) = run_free(&run, &task_indexes).await;
        for host in hosts {
            if cut_short {
                host.flow.lock().expect("flow lock").ended = true;
            }
            if host.flow.lock().expect("flow lock").end_of_play() {
                host.out.store(true, Ordering::SeqCst);
            }
        }
        if !cut_short {
            run.flush_handlers().await;
        }
        return end;
    }
    let mut end = PlayEnd::Done;
    // Ended by `meta: end_play`/`end_batch` or by failures: handlers are not flushed.
    let mut cut_short = false;
    for (position, &task_index) in task_indexes.iter().enumerate() {
        let active: Vec<Arc<HostState>> =
            hosts.iter().filter(|h| flow::in_play(h)).cloned().collect();
        // ansible-playbook 2.21 says "NO MORE HOSTS LEFT" only when max_fail_percentage
        // ends the play (linear.py), not when every host has failed.
        if active.is_empty() {
            break;
        }
        let task = &play.tasks[task_index];
        let ahead = &task_indexes[position..];
        let step = linear_step(&run, task, TaskRef::Task(task_index), &active, 0, ahead).await;
        if let include::Walked::Ended(ended) = step {
            end = ended;
            cut_short = true;
            break;
        }
    }
    for host in hosts {
        // Whatever was sent ahead and not reached was skipped by the agent.
        host.sent_ahead.lock().expect("sent_ahead lock").clear();
        if host.flow.lock().expect("flow lock").end_of_play() {
            host.out.store(true, Ordering::SeqCst);
        }
    }
    if !cut_short {
        run.flush_handlers().await;
    }
    end
}

/// The indexes of the play's tasks that run: those `--tags`/`--skip-tags` select, from
/// the first that `--start-at-task` names on. None while `--start-at-task` has matched no
/// task yet, in this play or an earlier one.
fn tasks_to_run(
    play: &Play,
    tags: &TagFilter,
    start_at: &Mutex<Option<String>>,
) -> Option<Vec<usize>> {
    let chosen = select_tasks(&play.tasks, tags);
    let mut start_at = start_at.lock().expect("start_at lock");
    let Some(pattern) = start_at.as_deref() else {
        return Some(chosen);
    };
    let first = chosen
        .iter()
        .position(|&i| play.tasks[i].matches_name(pattern))?;
    *start_at = None;
    Some(chosen[first..].to_vec())
}

/// `strategy: free`: every host walks the task list on its own, as fast as it goes;
/// `--forks` still bounds how many hosts run a task at once. A `meta` task acts on its
/// own host only (`flush_handlers` its handlers, `end_host` its play), except `end_play`,
/// which ends the play for every host at its next task, and its later batches, and
/// `end_batch`, which ends it for every host of the batch, as Ansible.
async fn run_free(run: &flow::PlayRun<'_>, task_indexes: &[usize]) -> (PlayEnd, bool) {
    let play_ended = Arc::new(AtomicBool::new(false));
    let batch_ended = Arc::new(AtomicBool::new(false));
    let mut jobs = JoinSet::new();
    let mut job_hosts = HashMap::new();
    for host in run.hosts.iter().filter(|h| flow::in_play(h)) {
        let host = host.clone();
        let job_host = host.clone();
        let ctx = run.ctx.clone();
        let playbook = run.playbook.clone();
        let forks = run.forks.clone();
        let throttles = run.throttles.clone();
        let play_hosts = run.play_hosts.clone();
        let play_index = run.play_index;
        let task_indexes = task_indexes.to_vec();
        let play_ended = play_ended.clone();
        let batch_ended = batch_ended.clone();
        let handle = jobs.spawn(async move {
            let single = [host.clone()];
            let own = flow::PlayRun {
                ctx: &ctx,
                playbook: &playbook,
                play_index,
                hosts: &single,
                play_hosts: &play_hosts,
                forks: &forks,
                throttles: &throttles,
            };
            let play = &playbook.plays[play_index];
            for task_index in task_indexes {
                let task = &play.tasks[task_index];
                if !flow::in_play(&host)
                    || play_ended.load(Ordering::SeqCst)
                    || batch_ended.load(Ordering::SeqCst)
                {
                    break;
                }
                if task.module.caps().control == crate::modules::Control::Meta {
                    match own.meta(task, &single).await {
                        flow::MetaEffect::Continue => continue,
                        flow::MetaEffect::EndPlay => play_ended.store(true, Ordering::SeqCst),
                        flow::MetaEffect::EndBatch => batch_ended.store(true, Ordering::SeqCst),
                    }
                    break;
                }
                let runners = flow::runners(&single, task);
                if runners.is_empty() {
                    continue;
                }
                ctx.emit(Event::TaskStart(own.task_banner(
                    task,
                    task.banner_name(),
                    &runners,
                    Some(&host.name),
                )));
                if task.include.is_some() {
                    if include::run(&own, task, runners, 0).await != include::Walked::Continue {
                        break;
                    }
                    continue;
                }
                ctx.warn_unsupported(task);
                run_task_on(&own, TaskRef::Task(task_index), runners).await;
            }
        });
        job_hosts.insert(handle.id(), job_host);
    }
    join_host_jobs(run.ctx, &mut jobs, &job_hosts).await;
    let ended = play_ended.load(Ordering::SeqCst);
    let end = if ended {
        PlayEnd::EndPlay
    } else {
        PlayEnd::Done
    };
    (end, ended || batch_ended.load(Ordering::SeqCst))
}

/// Waits for every host job. A job that panicked fails its host with the panic's message,
/// as a failed task would (the run exits 2); the other hosts' jobs are not affected.
async fn join_host_jobs(
    ctx: &RunContext,
    jobs: &mut JoinSet<()>,
    job_hosts: &HashMap<tokio::task::Id, Arc<HostState>>,
) {
    while let Some(joined) = jobs.join_next_with_id().await {
        if let Err(error) = joined
            && let Some(host) = job_hosts.get(&error.id())
        {
            host_job_failed(ctx, host, error);
        }
    }
}

/// What a host's result says when its job panicked or was cancelled.
fn job_failure_message(error: tokio::task::JoinError) -> String {
    if error.is_panic() {
        let payload = error.into_panic();
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        format!("turbo-play hit an internal error on this host (a bug; please report it): {text}")
    } else {
        format!("turbo-play's job for this host was cancelled: {error}")
    }
}

fn host_job_failed(ctx: &RunContext, host: &HostState, error: tokio::task::JoinError) {
    let why = job_failure_message(error);
    let mut data = Map::new();
    data.insert("changed".into(), false.into());
    data.insert("msg".into(), why.into());
    ctx.emit(Event::HostResult(HostResult {
        host: host.name.clone(),
        status: Status::Failed,
        item: None,
        data,
        ignored: false,
        verbose_always: false,
        origin: None,
    }));
    host.stat(|s| s.failed += 1);
    host.out.store(true, Ordering::SeqCst);
}

/// One task of a linear walk (the play's list, or an included file's at `depth`) on the
/// hosts still in the play: a meta acted on, or the banner and then the include or the
/// task itself, and whether its failures end the play.
async fn linear_step(
    run: &flow::PlayRun<'_>,
    task: &crate::playbook::Task,
    task_ref: TaskRef,
    active: &[Arc<HostState>],
    depth: usize,
    ahead: &[usize],
) -> include::Walked {
    use include::Walked;
    let ctx = run.ctx;
    if task.module.caps().control == crate::modules::Control::Meta {
        return match run.meta(task, active).await {
            flow::MetaEffect::Continue => Walked::Continue,
            flow::MetaEffect::EndBatch => Walked::Ended(PlayEnd::Done),
            flow::MetaEffect::EndPlay => Walked::Ended(PlayEnd::EndPlay),
        };
    }
    // Each host's block state decides (a rescue runs only where its block failed).
    let runners = flow::runners(active, task);
    if runners.is_empty() {
        return Walked::Continue;
    }
    ctx.emit(Event::TaskStart(run.task_banner(
        task,
        task.banner_name(),
        &runners,
        None,
    )));
    if task.include.is_some() {
        return include::run(run, task, runners, depth).await;
    }
    ctx.warn_unsupported(task);
    chain::send_ahead(run, ahead, &runners).await;
    run_task_on(run, task_ref, runners.clone()).await;
    let play = &run.playbook.plays[run.play_index];
    if let Some(stop) = failures_end_the_play(play, task, run.hosts, &runners) {
        for host in run.hosts {
            host.out.store(true, Ordering::SeqCst);
        }
        if stop == FailStop::TooManyFailed {
            ctx.emit(Event::NoMoreHosts);
        }
        return Walked::Ended(PlayEnd::StopRun);
    }
    Walked::Continue
}

/// Why failures end the play for every host of the batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailStop {
    /// `any_errors_fatal`, or a failed `run_once` task: Ansible ends the play quietly.
    Fatal,
    /// `max_fail_percentage` exceeded: Ansible says "NO MORE HOSTS LEFT".
    TooManyFailed,
}

/// Whether the failures of this task end the play for every host of the batch:
/// `any_errors_fatal` (a `run_once` task's failure counts the same, as in Ansible) and
/// `max_fail_percentage`.
fn failures_end_the_play(
    play: &Play,
    task: &crate::playbook::Task,
    batch: &[Arc<HostState>],
    runners: &[Arc<HostState>],
) -> Option<FailStop> {
    let failed_now = runners
        .iter()
        .filter(|h| h.out.load(Ordering::SeqCst))
        .count();
    let fatal = task
        .keywords
        .any_errors_fatal
        .unwrap_or(play.keywords.any_errors_fatal)
        || task.keywords.run_once;
    if fatal && failed_now > 0 {
        return Some(FailStop::Fatal);
    }
    let max = play.keywords.max_fail_percentage?;
    let failed = batch
        .iter()
        .filter(|h| h.out.load(Ordering::SeqCst))
        .count();
    crate::playbook::too_many_failed(failed, batch.len(), max).then_some(FailStop::TooManyFailed)
}

/// A task of the play, one of its handlers, or one the executor made (Gathering Facts).
#[derive(Debug, Clone)]
pub(crate) enum TaskRef {
    Task(usize),
    Handler(usize),
    Synthetic(Arc<crate::playbook::Task>),
}

impl TaskRef {
    fn get<'a>(&'a self, play: &'a Play) -> &'a crate::playbook::Task {
        match self {
            TaskRef::Task(i) => &play.tasks[*i],
            TaskRef::Handler(i) => &play.handlers[*i],
            TaskRef::Synthetic(task) => task,
        }
    }
}

/// Runs one task on the given hosts, at most `--forks` (and its `throttle`) at once, and
/// waits for all. A `run_once` task runs on the first host and its result is copied to
/// the others.
async fn run_task_on(run: &flow::PlayRun<'_>, task: TaskRef, hosts: Vec<Arc<HostState>>) {
    let play = &run.playbook.plays[run.play_index];
    let keywords = task.get(play).keywords.clone();
    // Ansible's pause and add_host bypass the host loop: they run once, for every host.
    // A templated run_once is decided with the first host's variables, for every host:
    // Ansible's linear strategy keeps the first host's value for the task.
    let once = keywords.run_once
        || task.get(play).module.caps().bypass_host_loop
        || (keywords.templated.run_once.is_some()
            && hosts
                .first()
                .is_some_and(|h| run_once_holds(run, task.get(play), h)));
    let (hosts, copy_to) = if once && hosts.len() > 1 {
        let (first, rest) = hosts.split_at(1);
        (first.to_vec(), rest.to_vec())
    } else {
        (hosts, Vec::new())
    };
    let facts_before = copy_to.first().map(|_| {
        (
            hosts[0].set_facts.lock().expect("set_facts lock").clone(),
            hosts[0]
                .included_vars
                .lock()
                .expect("included_vars lock")
                .clone(),
        )
    });
    let throttle = match throttled_to(run, task.get(play), &hosts, &keywords) {
        Ok(n) => n,
        Err(message) => {
            for host in &hosts {
                host_task::finish_task(
                    run.ctx,
                    task.get(play),
                    host,
                    None,
                    crate::modules::TaskOutcome::failed(message.clone()),
                    &[],
                );
            }
            return;
        }
    };
    let throttle = throttle.map(|n| run.throttles.of(&task, n));
    let mut jobs = JoinSet::new();
    let mut job_hosts = HashMap::new();
    for host in &hosts {
        let host = host.clone();
        let job_host = host.clone();
        let ctx = run.ctx.clone();
        let playbook = run.playbook.clone();
        let throttle = throttle.clone();
        let play_hosts = run.play_hosts.clone();
        let play_index = run.play_index;
        let task = task.clone();
        // Taken here, in the hosts' order, so that with fewer forks than hosts they start
        // in the play's order, as Ansible's `order:` and `--forks 1` promise.
        let permit = run
            .forks
            .clone()
            .acquire_owned()
            .await
            .expect("semaphore open");
        let handle = jobs.spawn(async move {
            let _permit = permit;
            let _throttled = match throttle {
                Some(t) => Some(t.acquire_owned().await.expect("semaphore open")),
                None => None,
            };
            let play = &playbook.plays[play_index];
            host_task::run(&ctx, &playbook, play, task.get(play), &host, &play_hosts).await;
        });
        job_hosts.insert(handle.id(), job_host);
    }
    join_host_jobs(run.ctx, &mut jobs, &job_hosts).await;
    if let Some(before) = facts_before {
        copy_run_once(task.get(play), &hosts[0], &before, &copy_to);
    }
}

/// A templated `run_once` for one host (one that does not render to true is false here;
/// the task's own run reports a broken one).
fn run_once_holds(run: &flow::PlayRun<'_>, task: &crate::playbook::Task, host: &HostState) -> bool {
    let play = &run.playbook.plays[run.play_index];
    let Ok(vars) = vars::task_vars(run.ctx, run.playbook, play, task, host, run.play_hosts) else {
        return false;
    };
    task.with_switches_decided(&run.ctx.templar, &vars)
        .ok()
        .flatten()
        .is_some_and(|t| t.keywords.run_once)
}

/// Ansible hands a `run_once` result to every host of the play: the registered variable
/// and any facts or included variables the task set.
fn copy_run_once(
    task: &crate::playbook::Task,
    ran: &HostState,
    (facts_before, included_before): &(Map<String, Value>, Map<String, Value>),
    others: &[Arc<HostState>],
) {
    let registered: Vec<(String, Value)> = {
        let done = ran.registered.lock().expect("registered lock");
        task.registered_names()
            .into_iter()
            .filter_map(|name| done.get(&name).cloned().map(|v| (name, v)))
            .collect()
    };
    let changed = |layer: &Mutex<Map<String, Value>>, before: &Map<String, Value>| {
        layer
            .lock()
            .expect("vars layer lock")
            .iter()
            .filter(|(k, v)| before.get(*k) != Some(*v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Map<String, Value>>()
    };
    let set = changed(&ran.set_facts, facts_before);
    let included = changed(&ran.included_vars, included_before);
    for other in others {
        for (name, value) in &registered {
            other.register(name, value.clone());
        }
        other.set_facts_from(&set);
        other.include_vars_from(&included);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::load_playbook_text;
    use std::path::Path;

    fn plays() -> Vec<Play> {
        load_playbook_text(
            Path::new("site.yml"),
            "- hosts: all\n  tasks:\n    - name: a\n      debug: msg=a\n\
             - hosts: all\n  tasks:\n    - name: b\n      debug: msg=b\n      tags: web\n\
             \x20   - name: c\n      debug: msg=c\n    - name: d\n      debug: msg=d\n      tags: web\n",
        )
        .unwrap()
        .plays
    }

    #[test]
    fn tasks_to_run_follow_tags_and_start_at_task_across_plays() {
        let plays = plays();
        let all = TagFilter::default();
        let none = Mutex::new(None);
        assert_eq!(tasks_to_run(&plays[1], &all, &none), Some(vec![0, 1, 2]));
        let web = TagFilter::from_args(&["web".into()], &[]);
        assert_eq!(tasks_to_run(&plays[1], &web, &none), Some(vec![0, 2]));

        // Nothing of the first play runs; the second starts at `c`; later plays run whole.
        let start = Mutex::new(Some("c".to_string()));
        assert_eq!(tasks_to_run(&plays[0], &all, &start), None);
        assert_eq!(tasks_to_run(&plays[1], &all, &start), Some(vec![1, 2]));
        assert_eq!(*start.lock().unwrap(), None);
        assert_eq!(tasks_to_run(&plays[0], &all, &start), Some(vec![0]));

        // A task the tags leave out cannot be where the run starts.
        let start = Mutex::new(Some("c".to_string()));
        assert_eq!(tasks_to_run(&plays[1], &web, &start), None);
    }

    /// ansible-playbook 2.21 (checked): `register` and `set_fact` share one layer, so the
    /// later write of a name wins; include_vars sits below both, and a run_once task hands
    /// all three to the other hosts.
    #[test]
    fn set_facts_and_registered_results_share_a_layer_above_included_vars() {
        let host = HostState::new("h1");
        host.register("r", Value::from("registered"));
        host.set_facts_from(&Map::from_iter([("r".to_string(), Value::from("fact"))]));
        assert!(host.registered.lock().unwrap().get("r").is_none());
        assert_eq!(host.set_facts.lock().unwrap()["r"], "fact");
        host.register("r", Value::from("again"));
        assert!(host.set_facts.lock().unwrap().get("r").is_none());
        assert_eq!(host.registered.lock().unwrap()["r"], "again");

        let task = load_playbook_text(
            Path::new("site.yml"),
            "- hosts: all\n  tasks:\n    - command: x\n      register: out\n      run_once: true\n",
        )
        .unwrap()
        .plays
        .remove(0)
        .tasks
        .remove(0);
        let before = (host.set_facts.lock().unwrap().clone(), Map::new());
        host.set_facts_from(&Map::from_iter([("f".to_string(), Value::from(1))]));
        host.include_vars_from(&Map::from_iter([("i".to_string(), Value::from(2))]));
        host.register("out", Value::from("result"));
        let other = Arc::new(HostState::new("h2"));
        other.register("r", Value::from("own"));
        copy_run_once(&task, &host, &before, std::slice::from_ref(&other));
        assert_eq!(other.registered.lock().unwrap()["out"], "result");
        assert_eq!(other.registered.lock().unwrap()["r"], "own");
        assert_eq!(other.set_facts.lock().unwrap()["f"], 1);
        assert_eq!(other.included_vars.lock().unwrap()["i"], 2);
    }

    #[tokio::test]
    async fn a_panicking_host_job_is_a_failure_with_the_panics_message() {
        let mut jobs = JoinSet::new();
        jobs.spawn(async { panic!("index out of bounds") });
        let error = jobs.join_next().await.unwrap().unwrap_err();
        assert_eq!(
            job_failure_message(error),
            "turbo-play hit an internal error on this host (a bug; please report it): index out of bounds"
        );
        let mut jobs = JoinSet::new();
        let n = 7;
        jobs.spawn(async move { panic!("host {n} broke") });
        let error = jobs.join_next().await.unwrap().unwrap_err();
        assert!(job_failure_message(error).ends_with(": host 7 broke"));
    }
}
