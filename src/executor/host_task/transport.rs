//! Carrying a task's ops to the agent: one batch of every item's op per step (in chunks,
//! all in flight at once), one request per item with `loop_control.pause`, and the upload
//! of file content the agent asked for.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use turbo_proto::{CHUNK_BYTES, EnsureFile, FileContent, Op, OpResult};

use super::super::SessionFailure;
use super::prepare::{add_environment, agent_check_mode, check_mode, diff_mode, plan_context};
use super::{HostState, ItemRun, ItemState, RunContext, Target, async_job, squash};
use crate::agent_session::AgentSession;
use std::io::Read;

use crate::modules::{Args, FileSource, Peer, TaskOutcome};
use crate::playbook::{Playbook, Task};

/// Ops per request for long loops: the first chunk starts on the agent while the next are
/// still on the wire, and no single frame grows without bound.
pub(super) const BATCH_CHUNK: usize = 256;

/// Upload chunks per request: one round trip moves this many bytes.
pub(super) const CHUNKS_PER_REQUEST: usize = 2;

/// Upload requests sent before the first one's reply is awaited.
const REQUESTS_IN_FLIGHT: usize = 3;

/// `loop_control.pause` makes items wait for each other: each item must be done on the
/// host before the pause starts (a rolling restart relies on it), so the items go one
/// request at a time with the pause in between instead of as one batch; so do the items of
/// a module that plans in steps.
pub(super) async fn send_paced(
    target: &Target<'_>,
    runs: &mut [ItemRun],
    running: &[usize],
    pause: Option<std::time::Duration>,
) -> bool {
    // Items whose plans look before they write (lineinfile in a loop over one file) go
    // one after another, as Ansible runs items: each must read what the one before wrote.
    // Package modules' items step together instead: each step's reads go as one batch,
    // and their manager calls are squashed into one (`squash.rs`).
    let stepwise = !target.task.module.caps().squash_loop && !steps_apart(runs, running);
    // A polled job's item is waited for before the next starts, as Ansible's items are.
    let stepwise = stepwise || target.async_run.is_some_and(|run| run.poll > 0);
    if pause.is_none() && !stepwise {
        return send_remote(target, runs, running).await;
    }
    // Items over one file go in order, but on reads the controller predicts.
    if pause.is_none()
        && target.async_run.is_none()
        && !agent_check_mode(target.ctx, target.task)
        && super::predict::one_file(runs, running)
    {
        return super::predict::send_one_file_items(target, runs, running).await;
    }
    for (n, &i) in running.iter().enumerate() {
        if let Some(pause) = pause
            && n > 0
        {
            tokio::time::sleep(pause).await;
        }
        if !send_remote(target, runs, &[i]).await {
            return false;
        }
    }
    true
}

/// Whether the items' steps may go together: none looks before it writes, or each that
/// does touches a thing no other item touches
/// ([`crate::modules::Next::touching`]).
fn steps_apart(runs: &[ItemRun], running: &[usize]) -> bool {
    let mut touched = HashSet::new();
    running.iter().all(|&i| match &runs[i].state {
        ItemState::Step(_, next) => next.touches().is_some_and(|what| touched.insert(what)),
        ItemState::Done(_) | ItemState::Remote(_) => true,
        ItemState::Flow(_) => false,
    })
}

/// Sends the ops of the `running` items that wait for the agent as one batch and turns
/// the replies into outcomes, through `via`'s session (the host itself, or the one the
/// task is delegated to); items whose plan takes another step go again, together, until
/// every item is done. False when that turned out unreachable (reported on `host`).
pub(super) async fn send_remote(
    target: &Target<'_>,
    runs: &mut [ItemRun],
    running: &[usize],
) -> bool {
    // Items whose shared call failed: they go on alone.
    let mut solo: HashSet<usize> = HashSet::new();
    loop {
        let own = send_round(target, runs, running, &mut solo, None).await;
        if matches!(own, Round::Lost) {
            return false;
        }
        let peers = super::peers::send_to_peers(target, runs, running).await;
        match (own, peers) {
            (_, Round::Lost) => return false,
            (Round::Idle, Round::Idle) => return true,
            _ => {}
        }
    }
}

/// What one round of [`send_round`] came to.
pub(super) enum Round {
    /// No item had an op to send.
    Idle,
    /// The ops went and their replies moved the items on.
    Went,
    /// The host turned out unreachable (reported).
    Lost,
}

impl Round {
    fn after_loss(reachable: bool) -> Round {
        if reachable { Round::Went } else { Round::Lost }
    }
}

/// One round trip of [`send_remote`]: the current ops of the `running` items as one
/// batch, each reply resuming its item's plan. `seen`, when given, gets a copy of every
/// item's reply.
pub(super) async fn send_round(
    target: &Target<'_>,
    runs: &mut [ItemRun],
    running: &[usize],
    solo: &mut HashSet<usize>,
    seen: Option<&mut Vec<(usize, OpResult)>>,
) -> Round {
    let Target {
        ctx,
        playbook,
        play,
        task,
        host,
        via,
        become_,
        timeout,
        async_run,
    } = *target;
    // Each item of an async task is a job of its own.
    let squash_loop = task.module.caps().squash_loop && async_run.is_none();
    let remote: Vec<usize> = running
        .iter()
        .copied()
        .filter(|&i| runs[i].state.op().is_some() && runs[i].state.peer() == Peer::Task)
        .collect();
    if remote.is_empty() {
        return Round::Idle;
    }
    let session = match ctx.session(via, play, task, become_).await {
        Ok(s) => s,
        Err(SessionFailure::Unreachable(message)) => {
            host_unreachable(ctx, task, host, &message);
            return Round::Lost;
        }
        Err(SessionFailure::Failed(message)) => {
            for &i in &remote {
                runs[i].state = ItemState::Done(TaskOutcome::failed(message.clone()));
            }
            return Round::Went;
        }
    };
    let requests = squash::requests(runs, &remote, squash_loop, solo);
    let ops: Vec<Op> = requests
        .iter()
        .map(|request| {
            let mut op = request.op.clone();
            let run = &runs[request.members[0]];
            if !run.env.is_empty() {
                add_environment(&mut op, &run.env);
            }
            match (async_run, &run.state) {
                (Some(job), ItemState::Remote(_)) => {
                    let check = agent_check_mode(ctx, task);
                    async_job::start_op(task, job, &run.raw_args, check, op)
                }
                _ => op,
            }
        })
        .collect();
    // Kept to send again with their files (small: arguments and a digest).
    let module_ops: Vec<Option<Op>> = ops
        .iter()
        .map(|op| runs_module(op).then(|| op.clone()))
        .collect();
    // A step may say whether it goes in check mode (a module an action plugin runs); the
    // items of such a task go one at a time, so the round's first says for all.
    let check = remote
        .iter()
        .find_map(|&i| match &runs[i].state {
            ItemState::Step(_, next) => next.check_mode(),
            _ => None,
        })
        .unwrap_or_else(|| agent_check_mode(ctx, task));
    let flags = (check, diff_mode(ctx, task));
    // A loop's items were sent ahead as the one batch `send_batched` would send.
    let asked = match ops.as_slice() {
        [op] => Some(op.clone()),
        _ if task.module.caps().batchable && ops.len() <= BATCH_CHUNK => {
            Some(Op::Batch(ops.clone()))
        }
        _ => None,
    };
    let ahead = match &asked {
        Some(op) => {
            super::super::chain::take_reply(ctx, host, task, &session, op, flags, timeout).await
        }
        None => None,
    };
    // Whether the reply came from a chain that went on after it.
    let mut chain_went_on = false;
    let sent = match ahead {
        Some(reply) => reply.and_then(|(result, went_on)| {
            chain_went_on = went_on;
            match (result, ops.len()) {
                (OpResult::Batch(results), n) if n > 1 && results.len() == n => Ok(results),
                (result, 1) => Ok(vec![result]),
                (other, _) => Err(format!("agent answered a batch with {other:?}")),
            }
        }),
        None if task.module.caps().batchable => send_batched(&session, ops, flags, timeout).await,
        None => send_one_by_one(&session, ops, flags, timeout).await,
    };
    let mut results = match sent {
        Ok(r) => r,
        Err(message) => {
            return Round::after_loss(lost_agent(target, runs, &remote, &session, &message));
        }
    };
    if let Err(message) =
        send_module_files(&session, flags, &module_ops, &mut results, timeout).await
    {
        return Round::after_loss(lost_agent(target, runs, &remote, &session, &message));
    }
    let mut answers: Vec<(usize, OpResult)> = Vec::with_capacity(remote.len());
    for (request, result) in requests.into_iter().zip(results) {
        if request.members.len() > 1 && !squash::succeeded(&result) {
            solo.extend(request.members);
            continue;
        }
        for &i in &request.members {
            answers.push((i, result.clone()));
        }
    }
    answers.sort_by_key(|(i, _)| *i);
    if let Some(seen) = seen {
        seen.extend(answers.iter().cloned());
    }
    for (i, result) in answers {
        let mut job_done = None;
        let result = match (result, async_run) {
            (OpResult::JobStarted(job), Some(run)) if run.poll == 0 => {
                runs[i].state = ItemState::Done(async_job::started(&job));
                continue;
            }
            (OpResult::JobStarted(job), Some(run)) => {
                match async_job::poll(target, &session, run, &job).await {
                    async_job::Polled::Reply(reply) => {
                        job_done = Some(job);
                        reply
                    }
                    async_job::Polled::Failed(outcome) => {
                        async_job::report_done(ctx, target, &job.jid, true);
                        runs[i].state = ItemState::Done(outcome);
                        continue;
                    }
                }
            }
            (result, _) => result,
        };
        if let (Some(period), true) = (timeout, super::timeout::is_timed_out(&result)) {
            // Ansible's timeout is an exception: no finish, no failed_when, no until.
            runs[i].state = ItemState::Done(super::timeout::timed_out(period));
            runs[i].planned = false;
            continue;
        }
        let state = std::mem::replace(&mut runs[i].state, ItemState::Done(TaskOutcome::default()));
        runs[i].state = match state {
            ItemState::Step(_, next) => match next.resume(result) {
                Ok(plan) => ItemState::of(plan),
                Err(e) => ItemState::Done(TaskOutcome::from_error(e)),
            },
            flow @ ItemState::Flow(_) => flow,
            ItemState::Remote(op) => {
                let run = &runs[i];
                let args = run.args.as_ref().expect("a planned item has its arguments");
                let result = match result {
                    OpResult::NeedContent => {
                        match upload_content(ctx, playbook, task, &session, run, &op, args).await {
                            Ok(r) => r,
                            // A connection lost during the upload makes the host
                            // unreachable, as anywhere else.
                            Err(_) if lost_connection(&session) => {
                                let message =
                                    session.ended().map_or_else(String::new, |e| e.to_string());
                                host_unreachable(ctx, task, host, &message);
                                return Round::Lost;
                            }
                            Err(outcome) => {
                                runs[i].state = ItemState::Done(outcome);
                                continue;
                            }
                        }
                    }
                    other => other,
                };
                ItemState::Done(task.module.finish_sent(
                    args,
                    &op,
                    result,
                    check_mode(ctx, task),
                    &session.hello().home,
                ))
            }
            done @ ItemState::Done(_) => done,
        };
        if let (Some(job), ItemState::Done(outcome)) = (job_done, &mut runs[i].state) {
            async_job::finished(outcome, &job);
            async_job::report_done(ctx, target, &job.jid, outcome.failed);
        }
        if chain_went_on && matches!(&runs[i].state, ItemState::Done(o) if o.failed) {
            super::super::chain::failed_after_going_on(ctx, task);
        }
    }
    Round::Went
}

/// Modules the agent answered `NeedContent` for lack their files in its cache: they go
/// again as one batch, the files with the first op of each payload only, so a loop's
/// items cost one transfer.
async fn send_module_files(
    session: &AgentSession,
    flags: (bool, bool),
    ops: &[Option<Op>],
    results: &mut [OpResult],
    timeout: Option<u64>,
) -> Result<(), String> {
    let missing: Vec<(usize, &Op)> = (0..ops.len())
        .filter(|&i| matches!(results[i], OpResult::NeedContent))
        .filter_map(|i| Some((i, ops[i].as_ref()?)))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut sent = std::collections::HashSet::new();
    let again: Vec<Op> = missing
        .iter()
        .map(|&(_, op)| match op {
            Op::RunModule(run) if sent.insert(run.payload.sha256) => {
                crate::modules::python::with_files(op).unwrap_or_else(|| op.clone())
            }
            Op::StartJob(job) => match job.op.as_ref() {
                Op::RunModule(run) if sent.insert(run.payload.sha256) => {
                    let mut job = job.clone();
                    if let Some(inner) = crate::modules::python::with_files(&job.op) {
                        job.op = Box::new(inner);
                    }
                    Op::StartJob(job)
                }
                _ => op.clone(),
            },
            op => op.clone(),
        })
        .collect();
    let replies = if again.len() == 1 {
        send_one_by_one(session, again, flags, timeout).await?
    } else {
        match super::timeout::call(session, Op::Batch(again), flags, timeout).await {
            Ok(OpResult::Batch(r)) if r.len() == missing.len() => r,
            Ok(other) => return Err(format!("agent answered a batch with {other:?}")),
            Err(e) => return Err(e),
        }
    };
    for ((i, _), reply) in missing.into_iter().zip(replies) {
        results[i] = reply;
    }
    Ok(())
}

/// Whether the agent may answer this op `NeedContent` for a module's files.
fn runs_module(op: &Op) -> bool {
    match op {
        Op::RunModule(_) => true,
        Op::StartJob(job) => matches!(job.op.as_ref(), Op::RunModule(_)),
        _ => false,
    }
}

/// Sends the ops, one request per chunk, all chunks in flight at once.
pub(super) async fn send_batched(
    session: &AgentSession,
    ops: Vec<Op>,
    flags: (bool, bool),
    timeout: Option<u64>,
) -> Result<Vec<OpResult>, String> {
    if ops.len() == 1 {
        return send_one_by_one(session, ops, flags, timeout).await;
    }
    let mut pending = Vec::new();
    let mut ops = ops.into_iter().peekable();
    while ops.peek().is_some() {
        let chunk: Vec<Op> = ops.by_ref().take(BATCH_CHUNK).collect();
        let expected = chunk.len();
        let session = session.clone();
        pending.push((
            expected,
            tokio::spawn(async move {
                super::timeout::call(&session, Op::Batch(chunk), flags, timeout).await
            }),
        ));
    }
    let mut results = Vec::new();
    for (expected, handle) in pending {
        match handle.await.map_err(|e| e.to_string())? {
            Ok(OpResult::Batch(r)) if r.len() == expected => results.extend(r),
            Ok(other) => return Err(format!("agent answered a batch with {other:?}")),
            Err(e) => return Err(e),
        }
    }
    Ok(results)
}

pub(super) async fn send_one_by_one(
    session: &AgentSession,
    ops: Vec<Op>,
    flags: (bool, bool),
    timeout: Option<u64>,
) -> Result<Vec<OpResult>, String> {
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        results.push(super::timeout::call(session, op, flags, timeout).await?);
    }
    Ok(results)
}

/// The agent holds a different file than a digest-only `EnsureFile` describes: send the
/// bytes in chunks, then ask again with the staged upload. Only now are the bytes read.
pub(super) async fn upload_content(
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
    // Only what the module sends: its content depends on no escalation.
    let plan_ctx = plan_context(ctx, playbook, task, &run.vars, None);
    let source = match task.module.content(args, &plan_ctx) {
        Ok(Some(source)) => source,
        Ok(None) => {
            return Err(TaskOutcome::failed(format!(
                "{} cannot provide file content",
                task.module.name()
            )));
        }
        Err(e) => return Err(TaskOutcome::from_error(e)),
    };
    let upload_id = NEXT_UPLOAD.fetch_add(1, Ordering::Relaxed);
    let flags = (agent_check_mode(ctx, task), diff_mode(ctx, task));
    let failed = |e: String| TaskOutcome::failed(format!("uploading {}: {e}", ensure.path));
    let staged = Op::EnsureFile(EnsureFile {
        content: FileContent::Staged { upload_id, sha256 },
        ..ensure.clone()
    });
    let upload = Upload {
        session,
        flags,
        upload_id,
    };
    match source {
        FileSource::Bytes(bytes) if bytes.is_empty() => {
            let inline = Op::EnsureFile(EnsureFile {
                content: FileContent::Inline(bytes),
                ..ensure.clone()
            });
            session
                .call(inline, flags.0, flags.1)
                .await
                .map_err(|e| e.to_string())
        }
        FileSource::Bytes(bytes) => upload.chunks(&mut &bytes[..], staged).await,
        FileSource::Local(path) => {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            upload.local_file(&path, size, &ensure.path, staged).await
        }
    }
    .map_err(failed)
}

/// Below this size a file goes whole: the signatures' round trip would cost more than the
/// bytes a delta could save.
const DELTA_FROM: u64 = 1 << 20;

/// Literal bytes per `WriteDelta`, and chunks per request of a whole upload: a few MiB
/// in memory on either side at a time.
const DELTA_LITERAL_BYTES: usize = 2 << 20;

/// One upload into the agent's staging file.
struct Upload<'s> {
    session: &'s AgentSession,
    flags: (bool, bool),
    upload_id: u64,
}

impl Upload<'_> {
    /// A controller file: as a delta against what the target holds when it holds a file
    /// there, else whole; then `finish` (the staged write). Its reply is the answer, or
    /// the agent's refusal of a step before it.
    async fn local_file(
        &self,
        path: &std::path::Path,
        size: u64,
        dest: &str,
        finish: Op,
    ) -> Result<OpResult, String> {
        let open = || std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()));
        if size >= DELTA_FROM {
            let block_size = crate::delta::block_size_for(size);
            let asked = Op::BlockSignatures {
                path: dest.to_string(),
                block_size,
            };
            // Read-only: asked without check mode so it answers the same either way.
            match self.session.call(asked, false, false).await {
                Ok(OpResult::Signatures(sigs)) if sigs.exists && sigs.size > 0 => {
                    if let Some(refused) = self.delta(&sigs, open()?, dest).await? {
                        return Ok(refused);
                    }
                    return self
                        .session
                        .call(finish, self.flags.0, self.flags.1)
                        .await
                        .map_err(|e| e.to_string());
                }
                Ok(OpResult::Signatures(_)) | Ok(OpResult::Error(_)) => {}
                Ok(other) => return Err(format!("unexpected reply {other:?}")),
                Err(e) => return Err(e.to_string()),
            }
        }
        self.chunks(&mut std::io::BufReader::new(open()?), finish)
            .await
    }

    async fn delta(
        &self,
        sigs: &turbo_proto::BlockSignatures,
        file: std::fs::File,
        basis: &str,
    ) -> Result<Option<OpResult>, String> {
        let mut encoder = crate::delta::encoder(sigs, file, DELTA_LITERAL_BYTES);
        while let Some(instructions) = encoder.next_batch().map_err(|e| e.to_string())? {
            let op = Op::WriteDelta {
                upload_id: self.upload_id,
                basis: basis.to_string(),
                instructions,
            };
            match self.session.call(op, self.flags.0, self.flags.1).await {
                Ok(OpResult::Chunk { .. }) => {}
                Ok(err @ OpResult::Error(_)) => return Ok(Some(err)),
                Ok(other) => return Err(format!("unexpected reply {other:?}")),
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(None)
    }

    /// The bytes in `CHUNK_BYTES` pieces, `CHUNKS_PER_REQUEST` to a request, in order
    /// (the agent appends chunks as it reads them), with `finish` in the last request so
    /// that it costs no round trip of its own. `REQUESTS_IN_FLIGHT` requests are on their
    /// way at once, so the agent writes one while the next crosses the wire (waiting for
    /// each reply left the link idle half of a big copy); memory stays bounded by what is
    /// in flight. The answer is `finish`'s reply, or the agent's first refusal of a chunk.
    async fn chunks(
        &self,
        reader: &mut (dyn std::io::Read + Send),
        finish: Op,
    ) -> Result<OpResult, String> {
        let mut in_flight = std::collections::VecDeque::with_capacity(REQUESTS_IN_FLIGHT);
        let mut at_end = false;
        while !at_end {
            let mut ops = Vec::with_capacity(CHUNKS_PER_REQUEST + 1);
            while ops.len() < CHUNKS_PER_REQUEST {
                let mut data = Vec::with_capacity(CHUNK_BYTES);
                reader
                    .take(CHUNK_BYTES as u64)
                    .read_to_end(&mut data)
                    .map_err(|e| e.to_string())?;
                let short = data.len() < CHUNK_BYTES;
                if !data.is_empty() {
                    ops.push(Op::WriteChunk {
                        upload_id: self.upload_id,
                        data,
                    });
                }
                if short {
                    at_end = true;
                    break;
                }
            }
            if at_end {
                ops.push(finish.clone());
            }
            let reply = self
                .session
                .send(Op::Batch(ops), self.flags.0, self.flags.1, 0)
                .await
                .map_err(|e| e.to_string())?;
            in_flight.push_back(reply);
            while in_flight.len() >= REQUESTS_IN_FLIGHT || (at_end && !in_flight.is_empty()) {
                let reply = in_flight.pop_front().expect("a request in flight");
                let mut results = match reply.await {
                    Ok(OpResult::Batch(results)) => results,
                    Ok(other) => return Err(format!("unexpected reply {other:?}")),
                    Err(e) => return Err(e.to_string()),
                };
                let last = in_flight.is_empty() && at_end;
                let finished = if last { results.pop() } else { None };
                // The requests still in flight are answered and dropped: the staging file
                // of a refused upload is the agent's to remove.
                if let Some(err @ OpResult::Error(_)) =
                    results.iter().find(|r| matches!(r, OpResult::Error(_)))
                {
                    return Ok(err.clone());
                }
                if last {
                    return finished.ok_or_else(|| "empty reply".to_string());
                }
            }
        }
        Err("the upload ended without a reply to its last request".into())
    }
}

/// The agent's session broke under the `remote` items. An agent that died while its
/// connection still works (killed on the host, by hand or by the OOM killer) fails the
/// task, as Ansible fails a task whose module process was killed (ssh's exit status is
/// the shell's 128 + signal, not ssh's own 255, so not a connection failure; the result
/// cannot be parsed: "Module result deserialization failed"); the host stays in the play
/// and its next task starts another agent. A lost connection (reset, closed by the
/// server, keepalives unanswered) makes it unreachable, as in Ansible. True when the host
/// goes on.
fn lost_agent(
    target: &Target<'_>,
    runs: &mut [ItemRun],
    remote: &[usize],
    session: &AgentSession,
    message: &str,
) -> bool {
    match session.ended() {
        Some(ended) if ended.cause.agent_died() => {
            let mut outcome = TaskOutcome::failed(format!("MODULE FAILURE: {ended}"));
            if let Some(rc) = ended.cause.rc() {
                outcome.data.insert("rc".into(), rc.into());
            }
            for &i in remote {
                runs[i].state = ItemState::Done(outcome.clone());
            }
            target.ctx.forget_session(target.via, session);
            true
        }
        _ => {
            host_unreachable(target.ctx, target.task, target.host, message);
            false
        }
    }
}

/// The session ended because its connection did (not because the agent died).
fn lost_connection(session: &AgentSession) -> bool {
    session
        .ended()
        .is_some_and(|ended| !ended.cause.agent_died())
}

/// The host (or the one the task is delegated to) cannot be reached. With
/// `ignore_unreachable` Ansible counts it ok and ignored, registers the result, and keeps
/// the host in the play.
pub(super) fn host_unreachable(ctx: &RunContext, task: &Task, host: &HostState, message: &str) {
    let data = super::super::unreachable_result(message);
    let shown = super::outcome::unreachable_shown(task, &data);
    if !task.keywords.ignore_unreachable {
        ctx.unreachable(task, host, shown);
        return;
    }
    ctx.emit_unreachable(task, host, shown, true);
    host.stat(|s| {
        s.ok += 1;
        s.ignored += 1;
    });
    if let Some(name) = &task.register {
        host.register(name, Value::Object(data));
    }
}
