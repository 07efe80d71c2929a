//! Chains: a host's next tasks sent to its agent before the earlier ones answered, so a
//! run of independent tasks costs one round trip instead of one per task.
//!
//! When the linear walk reaches a task, each host that has nothing in flight looks ahead
//! in the play's task list: consecutive tasks whose inputs cannot depend on what an
//! earlier task of the chain does are planned now, with the variables as they are, and
//! their ops are queued on the host's session as one chain. The agent runs them in order
//! and, after an op that may fail its task (an error, a non-zero exit) or that needs the
//! controller (content to upload), answers the rest of the chain without running them.
//! Nothing else changes: each task still runs in its turn through the one per-task path,
//! plans again, and takes the reply that was sent ahead only when it asks for the same op
//! on the same session (a skipped one is sent again). So the output, its order, the
//! registered results and the handlers are those of a run without chains; only another
//! host can see that a host ran ahead.
//!
//! What may join a chain is decided conservatively (see [`may_join`] and
//! [`depends_on_chain`]); when in doubt, the chain ends. A task joins only when no
//! variable its planning looked up (`reads.rs`: its arguments, `when`, environment and
//! become settings, and whatever its template file or `content:` read) can change before
//! its turn, so an op sent ahead is the op its turn sends, and nothing is ever written
//! on a host that a run without chains would not write.

mod reads;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};
use turbo_proto::{Op, OpResult};

use super::host_task::{Foreseen, foresee};
use super::{HostState, RunContext, flow, vars};
use crate::agent_session::{AgentSession, PendingReply, Prelude};
use crate::connection::BecomeSpec;
use crate::modules::Control;
use crate::playbook::{Layered, LoopSpec, Play, Section, Task};
pub(super) use reads::{ReadRecorder, Reads};

/// How far a chain looks ahead: enough for a role, small enough that planning stays cheap.
const LOOKAHEAD: usize = 64;

/// Modules whose ops may be sent ahead with more tasks after them: each fails its task
/// only on what the agent treats as a stop ([`OpResult::stops_chain`]: an error, a
/// non-zero exit), and sets no facts. Any other module whose op is known now may still
/// end a chain: nothing is sent after it, so however its reply is judged, the host has
/// run only what its turn runs. Modules decided on the controller (debug, set_fact, a
/// false `when`) need no entry: their outcome is known when the chain is planned.
const SENT_AHEAD_MODULES: &[&str] = &[
    "command", "shell", "raw", "file", "copy", "template", "stat",
];

/// Modules that read the controller's files when they plan or run.
const CONTROLLER_FILE_MODULES: &[&str] = &[
    "template",
    "copy",
    "include_vars",
    "script",
    "unarchive",
    "assemble",
    "patch",
];

/// `with_<lookup>` loops whose items come from their terms alone (others read the
/// controller's files or run commands there).
const PURE_LOOKUPS: &[&str] = &["items", "list", "flattened", "dict", "indexed_items"];

/// Names whose value may change while a chain runs without any task of it writing them:
/// other hosts' state, the play's host list (a host that fails leaves it), and lookups
/// (they read the controller).
const VOLATILE: &[&str] = &[
    "hostvars",
    "vars",
    "lookup",
    "query",
    "q",
    "ansible_play_hosts",
    "ansible_play_batch",
    "play_hosts",
    "ansible_failed_task",
    "ansible_failed_result",
    "now",
];

/// Modules that change the inventory every host sees (`groups`), whether or not they
/// run on this host: another host running one may change what a later task reads.
const INVENTORY_MODULES: &[&str] = &["add_host", "group_by"];

/// An op sent ahead for a task of the play, waiting for that task's turn.
pub(crate) struct SentAhead {
    /// The task's index in the play: an entry behind the walk is stale.
    index: usize,
    /// Nothing of the chain was sent after it.
    last: bool,
    session: AgentSession,
    op: Op,
    check: bool,
    diff: bool,
    timeout: Option<u64>,
    reply: PendingReply,
}

/// A task of the chain being planned, before it is sent.
struct Member {
    task_key: usize,
    index: usize,
    op: Op,
    check: bool,
    diff: bool,
    timeout: Option<u64>,
}

/// A host's ops sent ahead, by the address of their task.
pub(crate) type SentAheadMap = HashMap<usize, SentAhead>;

fn key(task: &Task) -> usize {
    task as *const Task as usize
}

static NEXT_CHAIN: AtomicU64 = AtomicU64::new(1);

/// Plans and sends a chain from `ahead[0]` (the task the walk reached) for each host that
/// has nothing in flight.
pub(super) async fn send_ahead(run: &flow::PlayRun<'_>, ahead: &[usize], hosts: &[Arc<HostState>]) {
    let ctx = run.ctx;
    let play = &run.playbook.plays[run.play_index];
    let Some(&first) = ahead.first() else {
        return;
    };
    if !ctx.opts.chains || !play_allows_chains(play) {
        return;
    }
    // What is sent ahead runs outside the task's turn, so outside `--forks`: only when
    // every host of the task may run at once anyway (as `throttle` ends a chain).
    if hosts.len() > ctx.opts.forks.max(1) {
        return;
    }
    let mut connecting = Vec::new();
    for host in hosts {
        {
            let mut sent = host.sent_ahead.lock().expect("sent_ahead lock");
            sent.retain(|_, entry| entry.index >= first);
            if !sent.is_empty() {
                continue;
            }
        }
        if ctx.open_sessions(host).is_empty() {
            connecting.push(host.clone());
            continue;
        }
        send_host_chain(run, play, ahead, host).await;
    }
    // A host without an agent yet connects with its chain: the chain's first requests
    // ride the exec that starts the agent. The permits are taken in the hosts' order,
    // as the task's turn takes them.
    let mut jobs = tokio::task::JoinSet::new();
    for host in connecting {
        let permit = run
            .forks
            .clone()
            .acquire_owned()
            .await
            .expect("semaphore open");
        let ctx = ctx.clone();
        let playbook = run.playbook.clone();
        let forks = run.forks.clone();
        let throttles = run.throttles.clone();
        let play_hosts = run.play_hosts.clone();
        let play_index = run.play_index;
        let ahead = ahead.to_vec();
        jobs.spawn(async move {
            let _permit = permit;
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
            send_host_chain(&own, play, &ahead, &host).await;
        });
    }
    // A job that panicked sent nothing ahead: the task's turn runs as without chains.
    while jobs.join_next().await.is_some() {}
}

/// Bytes of a chain's requests that may ride the exec starting the agent: the rest of the
/// chain follows once the agent is up (a large prelude would wait on the channel's window
/// while nobody reads the probe's output).
const PRELUDE_BYTES: usize = 32 * 1024;

async fn send_host_chain(
    run: &flow::PlayRun<'_>,
    play: &Play,
    ahead: &[usize],
    host: &Arc<HostState>,
) {
    let ctx = run.ctx;
    let lead = &play.tasks[ahead[0]];
    // The handshake goes on while the chain is planned.
    ctx.connect_ahead(host, play, lead);
    let mut written: HashSet<String> = HashSet::new();
    // Facts set by earlier members decided on the controller, with their values.
    let mut known: Map<String, Value> = Map::new();
    let mut members: Vec<Member> = Vec::new();
    // A member whose reply plans again, or whose module may fail on a reply that does
    // not stop the chain, is the chain's last.
    let mut session_key: Option<String> = None;
    // The first member to send: its session is the chain's.
    let mut opener: Option<(&Task, Option<BecomeSpec>)> = None;
    for (n, &index) in ahead.iter().take(LOOKAHEAD).enumerate() {
        let task = &play.tasks[index];
        if !may_join(lead, task) || flow::runners(std::slice::from_ref(host), task).is_empty() {
            break;
        }
        let (foreseen, reads) =
            foresee(ctx, run.playbook, play, task, host, run.play_hosts, &known);
        // The lead runs now; the others must plan in their turn as they plan now.
        if n > 0 {
            let Ok(raw) = vars::layered_vars(ctx, run.playbook, play, task, host, run.play_hosts)
            else {
                break;
            };
            if depends_on_chain(ctx, play, task, &raw, &written, &known, &reads) {
                break;
            }
        }
        match foreseen {
            Foreseen::Unknown
            | Foreseen::Decided { failed: true, .. }
            | Foreseen::Decided { effects: true, .. } => break,
            Foreseen::Decided { sets, .. } => {
                known.extend(sets);
                written.extend(task.registered_names());
            }
            Foreseen::Remote {
                op,
                check,
                diff,
                become_,
                steps,
                timeout,
            } => {
                let Ok(its) = ctx.session_key(host, play, task, become_.as_ref()) else {
                    break;
                };
                match &session_key {
                    Some(chain) if *chain != its => break,
                    Some(_) => {}
                    None => {
                        session_key = Some(its);
                        opener = Some((task, become_));
                    }
                }
                members.push(Member {
                    task_key: key(task),
                    index,
                    op: *op,
                    check,
                    diff,
                    timeout,
                });
                written.extend(task.registered_names());
                if steps || !SENT_AHEAD_MODULES.contains(&task.module.name()) {
                    break;
                }
            }
        }
    }
    let (Some(key), Some((opener, become_))) = (session_key, opener) else {
        return;
    };
    let chain = NEXT_CHAIN.fetch_add(1, Ordering::Relaxed);
    let count = members.len();
    let mut sent = Vec::new();
    let mut members = members.into_iter().enumerate().peekable();
    let session = match ctx.open_session(host, &key) {
        // One op alone gains nothing over its own turn.
        Some(_) if count < 2 => return,
        Some(session) => session,
        // The login agent starts with the chain's first requests behind its exec.
        None if become_.is_none() => {
            let mut prelude = Prelude::default();
            let mut early = Vec::new();
            while let Some((n, member)) = members.peek() {
                let timeout_ms = member.timeout.map(|s| s * 1000);
                let flags = (member.check, member.diff);
                let op = member.op.clone();
                match prelude.push_within(op, flags, chain, timeout_ms, PRELUDE_BYTES) {
                    Ok(Some(reply)) => {
                        let n = *n;
                        let (_, member) = members.next().expect("peeked");
                        early.push((n, member, reply));
                    }
                    Ok(None) => break,
                    Err(_) => return,
                }
            }
            let Ok(session) = ctx
                .login_session_with(host, play, opener, &mut prelude)
                .await
            else {
                // The task's turn meets the failure and reports it.
                return;
            };
            // Opened meanwhile by another path: nothing of the prelude went.
            if !prelude.is_empty() {
                return;
            }
            for (n, member, reply) in early {
                sent.push(sent_ahead(member, n + 1 == count, &session, reply));
            }
            session
        }
        // A become agent opens beside the login agent, in its own round trips.
        None => {
            let Ok(session) = ctx.session(host, play, opener, become_.as_ref()).await else {
                return;
            };
            if count < 2 {
                return;
            }
            session
        }
    };
    for (n, member) in members {
        let timeout_ms = member.timeout.map(|s| s * 1000);
        match session
            .send_timed(
                member.op.clone(),
                member.check,
                member.diff,
                chain,
                timeout_ms,
            )
            .await
        {
            Ok(reply) => sent.push(sent_ahead(member, n + 1 == count, &session, reply)),
            // The task's turn meets the dead session and reports it.
            Err(_) => break,
        }
    }
    host.sent_ahead
        .lock()
        .expect("sent_ahead lock")
        .extend(sent);
}

/// The entry of a member whose request went, by the address of its task.
fn sent_ahead(
    member: Member,
    last: bool,
    session: &AgentSession,
    reply: PendingReply,
) -> (usize, SentAhead) {
    let Member {
        task_key,
        index,
        op,
        check,
        diff,
        timeout,
    } = member;
    (
        task_key,
        SentAhead {
            index,
            last,
            session: session.clone(),
            op,
            check,
            diff,
            timeout,
            reply,
        },
    )
}

/// Play keywords under which one host's failure changes what the others do, and the free
/// strategy (whose hosts already run at their own pace), keep chains off.
fn play_allows_chains(play: &Play) -> bool {
    !play.keywords.free
        && !play.keywords.any_errors_fatal
        && play.keywords.max_fail_percentage.is_none()
}

/// Whether `task` may be planned before the tasks in front of it have run, judged from
/// the task alone: nothing that ends the host's turn in other ways than a failure the
/// agent sees, and nothing whose outcome the controller decides after the reply.
fn may_join(lead: &Task, task: &Task) -> bool {
    let caps = task.module.caps();
    let keywords = &task.keywords;
    task.include.is_none()
        && !INVENTORY_MODULES.contains(&task.module.name())
        && caps.control == Control::None
        && !caps.bypass_host_loop
        && task.loop_spec.as_ref().is_none_or(loop_is_pure)
        && task.failed_when.is_none()
        && task.changed_when.is_none()
        && task.until.is_none()
        // Its items plan one after another, each seeing the results before it.
        && !super::task_state::in_flight(task)
        && !keywords.run_once
        && keywords.templated.run_once.is_none()
        && keywords.delegate_to.is_none()
        && keywords.throttle.is_none()
        && keywords.throttle_template.is_none()
        && keywords.any_errors_fatal != Some(true)
        && keywords.templated.no_log.is_none()
        && keywords.templated.ignore_errors.is_none()
        && keywords.connection == lead.keywords.connection
        && keywords.remote_user == lead.keywords.remote_user
        && keywords.port == lead.keywords.port
        // A failure inside a block sends the host to its rescue or always.
        && task
            .frames
            .iter()
            .all(|f| !f.has_rescue && !f.has_always && f.section == Section::Block)
}

/// Whether a loop's items depend on nothing but the variables its terms read.
fn loop_is_pure(spec: &LoopSpec) -> bool {
    match spec {
        LoopSpec::Items { .. } | LoopSpec::Sequence(_) | LoopSpec::Combine { .. } => true,
        LoopSpec::Lookup { name, .. } => PURE_LOOKUPS.contains(&name.as_str()),
    }
}

/// Whether planning `task` now could see other inputs than in its turn: a name its
/// planning looked up (`reads`), or one its templates name (read from the task as
/// written, a second net), or one that the variables those name are defined from (as
/// `raw` defines them) name in turn, is set by an earlier task of the chain or changes
/// on its own.
fn depends_on_chain(
    ctx: &RunContext,
    play: &Play,
    task: &Task,
    raw: &Map<String, Value>,
    written: &HashSet<String>,
    known: &Map<String, Value>,
    reads: &Reads,
) -> bool {
    if reads.everything {
        return true;
    }
    // On the controller itself an earlier task may write the file a module reads there.
    if CONTROLLER_FILE_MODULES.contains(&task.module.name()) && runs_locally(ctx, play, task, raw) {
        return true;
    }
    let mut sources: Vec<String> = Vec::new();
    collect_strings(&Value::Object(task.args.clone()), &mut sources);
    for value in &task.keywords.environment {
        collect_strings(value, &mut sources);
    }
    for entry in task.keywords.module_defaults.iter().flatten() {
        collect_strings(&entry.defaults, &mut sources);
    }
    let become_ = &task.keywords.become_;
    for keyword in [
        &become_.enabled,
        &become_.user,
        &become_.method,
        &become_.flags,
        &become_.exe,
    ]
    .into_iter()
    .flat_map(Layered::levels)
    {
        sources.push(keyword.clone());
    }
    let mut names: Vec<String> = reads.names.iter().cloned().collect();
    for condition in &task.when {
        match ctx.templar.names_read_by_expr(condition) {
            Some(read) => names.extend(read),
            None => return true,
        }
    }
    if !names_read(ctx, &mut sources, &mut names) {
        return true;
    }
    // What the planning looks up itself may come from `known` where no layer names it;
    // the variables it reads were resolved from their definitions without `known`, so
    // nothing those name may be set by the chain.
    let mut seen: HashSet<String> = HashSet::new();
    for name in &names {
        if written.contains(name)
            || VOLATILE.contains(&name.as_str())
            || (known.contains_key(name) && raw.contains_key(name))
        {
            return true;
        }
        seen.insert(name.clone());
    }
    for name in names.drain(..) {
        if let Some(value) = raw.get(&name) {
            collect_strings(value, &mut sources);
        }
    }
    loop {
        if !names_read(ctx, &mut sources, &mut names) {
            return true;
        }
        let Some(name) = names.pop() else {
            return false;
        };
        if written.contains(&name) || VOLATILE.contains(&name.as_str()) || known.contains_key(&name)
        {
            return true;
        }
        if seen.insert(name.clone())
            && let Some(value) = raw.get(&name)
        {
            collect_strings(value, &mut sources);
        }
    }
}

/// Adds the names the templates among `sources` read to `names`; false when one does
/// not parse (it may then read anything).
fn names_read(ctx: &RunContext, sources: &mut Vec<String>, names: &mut Vec<String>) -> bool {
    for source in sources.drain(..) {
        if !crate::template::is_template(&source) {
            continue;
        }
        match ctx.templar.names_read(&source) {
            Some(read) => names.extend(read),
            None => return false,
        }
    }
    true
}

fn runs_locally(ctx: &RunContext, play: &Play, task: &Task, raw: &Map<String, Value>) -> bool {
    let local = |c: Option<&str>| c.is_some_and(|c| c == "local" || c.ends_with(".local"));
    match raw.get("ansible_connection") {
        Some(Value::String(c)) => local(Some(c)),
        Some(_) => true,
        None => local(
            task.keywords
                .connection
                .as_deref()
                .or(play.connection.as_deref())
                .or(ctx.opts.connection.as_deref()),
        ),
    }
}

/// Every string in a value, keys of mappings included.
fn collect_strings(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::String(s) => into.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, into)),
        Value::Object(map) => {
            for (k, v) in map {
                into.push(k.clone());
                collect_strings(v, into);
            }
        }
        _ => {}
    }
}

/// In the task's turn: the reply to the op sent ahead for it, when the task asks for the
/// same op, with the same flags, on the same session. None when nothing was sent ahead,
/// or it was skipped (send it now). The boolean says whether the chain went on after it.
pub(super) async fn take_reply(
    ctx: &RunContext,
    host: &HostState,
    task: &Task,
    session: &AgentSession,
    op: &Op,
    (check, diff): (bool, bool),
    timeout: Option<u64>,
) -> Option<Result<(OpResult, bool), String>> {
    let entry = host
        .sent_ahead
        .lock()
        .expect("sent_ahead lock")
        .remove(&key(task))?;
    let same = entry.session.same_as(session)
        && &entry.op == op
        && entry.check == check
        && entry.diff == diff
        && entry.timeout == timeout;
    let reply = match entry.timeout {
        // The backstop, as for a request sent in the task's turn; it counts from the
        // turn, later than the agent's deadline, so it never fires first.
        Some(seconds) => {
            let ops = match &entry.op {
                Op::Batch(ops) => Some(ops.len()),
                _ => None,
            };
            let backstop = super::host_task::backstop(seconds, ops.unwrap_or(1));
            match tokio::time::timeout(backstop, entry.reply).await {
                Ok(reply) => reply,
                Err(_) => {
                    let session = entry.session.clone();
                    tokio::spawn(async move { session.cancel().await });
                    let after_ms = seconds * 1000;
                    Ok(match ops {
                        Some(n) => OpResult::Batch(vec![OpResult::TimedOut { after_ms }; n]),
                        None => OpResult::TimedOut { after_ms },
                    })
                }
            }
        }
        None => entry.reply.await,
    };
    if !same {
        if !matches!(reply, Ok(OpResult::ChainSkipped) | Err(_)) {
            ctx.warn_once(&format!(
                "{}: turbo-play sent this task ahead with other arguments than it runs with \
                 (a bug; please report it); set TURBO_PLAY_CHAINS=0 to turn chains off",
                task.location
            ));
        }
        return None;
    }
    match reply {
        Ok(OpResult::ChainSkipped) => None,
        Ok(result) => {
            let went_on = !entry.last && !result.stops_chain();
            Some(Ok((result, went_on)))
        }
        Err(e) => Some(Err(e.to_string())),
    }
}

/// A task whose reply did not stop its chain failed all the same: the tasks after it ran.
/// [`SENT_AHEAD_MODULES`] must not hold such a module; say so rather than hide it.
pub(super) fn failed_after_going_on(ctx: &RunContext, task: &Task) {
    ctx.warn_once(&format!(
        "{}: task '{}' failed after the tasks sent ahead of it went on (a bug; please \
         report it); set TURBO_PLAY_CHAINS=0 to turn chains off",
        task.location,
        task.display_name()
    ));
}
