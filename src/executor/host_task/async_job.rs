//! `async:`/`poll:` on a task, as Ansible's task executor runs them: the item's final op
//! (steps that read and decide still run in the foreground) goes to the agent as a
//! detached job (`Op::StartJob`); with `poll: 0` the result is the job's id, otherwise the
//! controller reads the job's status every `poll` seconds ("ASYNC POLL"), for at most
//! `async` seconds, and finishes the job's reply with the module's own finisher, so the
//! result is a synchronous run's plus Ansible's job fields; then it removes the job files.

use serde_json::{Map, Value, json};
use turbo_proto::{JobStarted, Op, OpResult, StartJob};

use super::super::RunContext;
use super::Target;
use crate::agent_session::AgentSession;
use crate::modules::TaskOutcome;
use crate::modules::async_status::{self, DEFAULT_DIR, JobState};
use crate::playbook::{AsyncKeywords, Task};
use crate::report::events::Event;

/// A task's `async` and `poll` for one host, templated.
#[derive(Debug, Clone, PartialEq)]
pub(in crate::executor) struct AsyncRun {
    pub limit: u64,
    pub poll: u64,
    /// Where the job's files go: `ansible_async_dir`, or Ansible's default.
    pub dir: String,
}

/// Action plugins of ansible-core whose `_supports_async` is false: a task of theirs with
/// `async` fails ("This action (copy) does not support async."). Every module without an
/// action plugin (the `normal` one) supports it, and so do command, shell, dnf, package,
/// service and uri.
const NO_ASYNC_ACTIONS: &[&str] = &[
    "add_host",
    "assemble",
    "assert",
    "async_status",
    "copy",
    "debug",
    "fail",
    "fetch",
    "gather_facts",
    "group_by",
    "include_vars",
    "pause",
    "raw",
    "reboot",
    "script",
    "set_fact",
    "set_stats",
    "template",
    "unarchive",
    "validate_argument_spec",
    "wait_for_connection",
];

/// The task's `async`/`poll` for this host; `None` when it does not run as a job (no
/// `async`, or `async: 0`).
pub(super) fn decide(
    ctx: &RunContext,
    task: &Task,
    vars: &minijinja::Value,
) -> Result<Option<AsyncRun>, String> {
    let AsyncKeywords { limit, poll } = &task.async_job;
    let Some(limit) = limit else { return Ok(None) };
    let number = |raw: &Value, what: &str| {
        super::super::control::keyword_count(&ctx.templar, raw, vars, what)
    };
    let limit = number(limit, "async")?;
    if limit == 0 {
        return Ok(None);
    }
    let poll = match poll {
        Some(raw) => number(raw, "poll")?,
        None => AsyncKeywords::DEFAULT_POLL,
    };
    let dir = vars
        .get_attr("ansible_async_dir")
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| DEFAULT_DIR.to_string());
    Ok(Some(AsyncRun { limit, poll, dir }))
}

/// Ansible's refusal for an action plugin that cannot run as a job.
pub(super) fn refusal(task: &Task) -> Option<String> {
    let name = task.module.name();
    let short = name.rsplit('.').next().unwrap_or(name);
    NO_ASYNC_ACTIONS
        .contains(&short)
        .then(|| format!("This action ({}) does not support async.", task.action))
}

/// The item's final op, as a job.
pub(super) fn start_op(
    task: &Task,
    run: &AsyncRun,
    raw_args: &Map<String, Value>,
    check: bool,
    op: Op,
) -> Op {
    use std::time::{SystemTime, UNIX_EPOCH};
    // Ansible's `j` and up to 12 random digits; the clock and a counter are random
    // enough to keep two jobs of one agent apart.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let digits = (nanos ^ seq.wrapping_mul(0x9e37_79b9_7f4a_7c15)) % 1_000_000_000_000;
    Op::StartJob(StartJob {
        jid_prefix: format!("j{digits}"),
        dir: run.dir.clone(),
        time_limit_secs: run.limit,
        note: async_status::note(task.module.name(), &task.action, raw_args, check),
        op: Box::new(op),
    })
}

/// The result of `poll: 0`: the job is started, nothing more is known.
pub(super) fn started(job: &JobStarted) -> TaskOutcome {
    let mut data = Map::new();
    data.insert("ansible_job_id".into(), json!(job.jid));
    data.insert("results_file".into(), json!(job.results_file));
    data.insert("started".into(), json!(true));
    data.insert("finished".into(), json!(false));
    TaskOutcome {
        // What Ansible reports for a job it only started.
        changed: true,
        data,
        ..TaskOutcome::default()
    }
}

/// How a polled job ended.
pub(super) enum Polled {
    /// Its reply, for the module's finisher.
    Reply(OpResult),
    /// Not finished within `async` seconds (or its status could not be read).
    Failed(TaskOutcome),
}

/// Polls the job as Ansible's `_poll_async_result` does: sleep `poll`, read, until it
/// finished or `async` seconds of polls went by. A job the agent killed at its limit
/// counts as unfinished: Ansible's wrapper writes that result only after it waited a
/// little, so its polling never sees it.
pub(super) async fn poll(
    target: &Target<'_>,
    session: &AgentSession,
    run: &AsyncRun,
    job: &JobStarted,
) -> Polled {
    let ctx = target.ctx;
    let status = async_status::status_op(&run.dir, &job.jid);
    let mut time_left = run.limit as i64;
    let mut last = Map::new();
    while time_left > 0 {
        tokio::time::sleep(std::time::Duration::from_secs(run.poll)).await;
        let state = match session.call(status.clone(), false, false).await {
            Ok(reply) => async_status::job_state(reply),
            Err(e) => Err(e.to_string()),
        };
        match state {
            Ok(JobState::Finished { reply, .. })
                if !matches!(*reply, OpResult::TimedOut { .. }) =>
            {
                let _ = session
                    .call(async_status::cleanup_op(&run.dir, &job.jid), false, false)
                    .await;
                return Polled::Reply(*reply);
            }
            Ok(JobState::Missing { .. }) => {
                let mut outcome = TaskOutcome::failed("could not find job");
                async_status::with_job_fields(
                    &mut outcome,
                    &job.jid,
                    Some(&job.results_file),
                    true,
                    true,
                );
                return Polled::Failed(outcome);
            }
            Ok(_) => {}
            Err(message) => return Polled::Failed(TaskOutcome::failed(message)),
        }
        time_left -= run.poll as i64;
        let mut running = TaskOutcome::default();
        async_status::with_job_fields(&mut running, &job.jid, Some(&job.results_file), true, false);
        last = running.registered();
        ctx.emit(Event::AsyncPoll {
            host: target.host.name.clone(),
            jid: job.jid.clone(),
            started: true,
            finished: false,
        });
    }
    Polled::Failed(unfinished(job, last))
}

/// Ansible 2.21's result for a job not finished in time: the last status under
/// `async_result`, and the message its executor gives (it asks whether the new result,
/// not the status, was parsed, so it always says "unparsable").
fn unfinished(job: &JobStarted, mut last: Map<String, Value>) -> TaskOutcome {
    if last.is_empty() {
        let mut status = TaskOutcome::default();
        async_status::with_job_fields(&mut status, &job.jid, Some(&job.results_file), true, false);
        last = status.registered();
    }
    last.insert("deprecations".into(), json!([]));
    last.insert("warnings".into(), json!([]));
    let mut outcome = TaskOutcome::failed("async task produced unparsable results");
    outcome
        .data
        .insert("async_result".into(), Value::Object(last));
    outcome
}

/// A polled job's finished result: the module's, with the job's fields.
pub(super) fn finished(outcome: &mut TaskOutcome, job: &JobStarted) {
    async_status::with_job_fields(outcome, &job.jid, Some(&job.results_file), true, true);
}

/// "ASYNC OK"/"ASYNC FAILED" once a polled job's result is in.
pub(super) fn report_done(ctx: &RunContext, target: &Target<'_>, jid: &str, failed: bool) {
    ctx.emit(Event::AsyncDone {
        host: target.host.name.clone(),
        jid: jid.to_string(),
        failed,
    });
}
