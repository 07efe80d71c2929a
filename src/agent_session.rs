//! One host's agent, seen as a request/reply service: any number of calls may be in flight
//! at once over the single byte stream (an SSH channel or a local child's pipes).
//!
//! A writer task owns the outgoing half and a reader task routes each reply to its caller
//! by id. When the stream ends or breaks, every pending and every later call fails with
//! [`SessionError::Disconnected`]: nothing waits forever on a dead host. Whoever owns the
//! stream may add [`EndWitness`]es (the SSH channel's exit status or signal, the
//! connection's end) that say why it ended, so that the error names the true cause.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use turbo_proto::{
    AgentHello, AgentMsg, ControllerMsg, FrameDecoder, Op, OpResult, PROTOCOL_VERSION, Request,
    encode_frame,
};

/// How long a freshly started agent may take to say hello. A stale file at the cache path
/// may be a program that never speaks; this bounds how long we wait before replacing it.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(20);

/// How long `close` waits for the agent to end its stream after stdin is closed.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

const READ_BUFFER_BYTES: usize = 64 * 1024;

/// Frames queued for the writer before callers wait: enough to keep the pipe full.
const WRITE_QUEUE_FRAMES: usize = 64;

/// How long the reader waits, once the stream has ended, for a witness to say why. The
/// end of the agent's output comes just before its exit status or signal (SSH sends EOF,
/// then exit-signal, then close), and a lost connection is told when russh gives up.
const END_CAUSE_WAIT: Duration = Duration::from_secs(2);

/// Why the agent's stream ended, as its owner saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The agent process exited by itself with this status.
    AgentExited(u32),
    /// The agent process was killed by a signal, named as SSH names it ("KILL").
    AgentKilled { signal: String, core_dumped: bool },
    /// The connection under the stream is gone (reset, closed, keepalives unanswered).
    ConnectionLost(String),
}

impl StreamEnd {
    /// The agent died while the way to the host still works: Ansible's "the module's
    /// process died", a failed task, not an unreachable host.
    pub fn agent_died(&self) -> bool {
        matches!(
            self,
            StreamEnd::AgentExited(_) | StreamEnd::AgentKilled { .. }
        )
    }

    /// The exit status a shell would report for the agent (128 + the signal), as Ansible's
    /// `rc` for a module process killed on an SSH host.
    pub fn rc(&self) -> Option<i64> {
        match self {
            StreamEnd::AgentExited(status) => Some(i64::from(*status)),
            StreamEnd::AgentKilled { signal, .. } => {
                signal_number(signal).map(|n| 128 + i64::from(n))
            }
            StreamEnd::ConnectionLost(_) => None,
        }
    }
}

/// Linux's numbers for the signals SSH names (RFC 4254, 6.10).
fn signal_number(name: &str) -> Option<u32> {
    Some(match name {
        "HUP" => 1,
        "INT" => 2,
        "QUIT" => 3,
        "ILL" => 4,
        "ABRT" => 6,
        "FPE" => 8,
        "KILL" => 9,
        "USR1" => 10,
        "SEGV" => 11,
        "USR2" => 12,
        "PIPE" => 13,
        "ALRM" => 14,
        "TERM" => 15,
        _ => return None,
    })
}

/// The end of an agent's stream with what its witnesses said about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub cause: StreamEnd,
    /// The agent's pid on the host, from its hello.
    pub agent_pid: u32,
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pid = self.agent_pid;
        match &self.cause {
            StreamEnd::AgentExited(status) => {
                write!(
                    f,
                    "the agent (pid {pid}) on the host exited with status {status} mid-task"
                )
            }
            StreamEnd::AgentKilled {
                signal,
                core_dumped,
            } => {
                let number = signal_number(signal).map_or(String::new(), |n| format!("{n} "));
                let core = if *core_dumped { ", core dumped" } else { "" };
                write!(
                    f,
                    "the agent (pid {pid}) on the host was killed by signal {number}(SIG{signal}{core}) mid-task"
                )
            }
            StreamEnd::ConnectionLost(reason) => {
                write!(f, "the connection was lost mid-task: {reason}")
            }
        }
    }
}

/// Says, when asked, why the stream ended, or None while it does not know (yet).
pub type EndWitness = Box<dyn Fn() -> Option<StreamEnd> + Send + Sync>;

type Witnesses = Arc<Mutex<Vec<EndWitness>>>;

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("{}", disconnected_text(.0))]
    Disconnected(Option<Ended>),
    #[error(
        "the agent speaks protocol version {agent}, this turbo-play speaks {controller}: the agent file is replaced on the next connect"
    )]
    VersionMismatch { agent: u32, controller: u32 },
    #[error("agent ended its output before saying hello{}", detail_suffix(.0))]
    EndedBeforeHello(String),
    #[error("agent said nothing within {} s of starting", .0.as_secs())]
    HelloTimeout(Duration),
    #[error("agent protocol error: {0}")]
    Protocol(String),
    #[error("agent stream: {0}")]
    Io(#[from] std::io::Error),
}

fn disconnected_text(ended: &Option<Ended>) -> String {
    match ended {
        Some(ended) => ended.to_string(),
        None => "host disconnected".into(),
    }
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    }
}

impl SessionError {
    /// True for the errors that mean "whatever runs at the cache path is not our agent":
    /// the bootstrap replaces the file once when it sees one of these.
    pub fn is_not_an_agent(&self) -> bool {
        matches!(
            self,
            SessionError::VersionMismatch { .. }
                | SessionError::EndedBeforeHello(_)
                | SessionError::HelloTimeout(_)
                | SessionError::Protocol(_)
        )
    }

    /// Why the stream ended, when a witness said so.
    pub fn ended(&self) -> Option<&Ended> {
        match self {
            SessionError::Disconnected(ended) => ended.as_ref(),
            _ => None,
        }
    }
}

/// What the bootstrap had to do to get the agent running.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BootstrapReport {
    /// The agent was sent to the host in this run.
    pub uploaded: bool,
    /// A file at the cache path was not a working agent of our protocol and was overwritten.
    pub replaced_stale: bool,
    /// Bytes sent for the upload (compressed when gzip was available on the host).
    pub upload_bytes: u64,
}

type ReplySlot = oneshot::Sender<Result<OpResult, SessionError>>;

/// Calls waiting for their reply. Once `closed`, no call is admitted: the reader is gone
/// and nobody would ever answer it.
#[derive(Default)]
struct Pending {
    waiting: HashMap<u64, ReplySlot>,
    closed: bool,
    /// Why, once closed, when known: later calls fail with the same cause.
    ended: Option<Ended>,
}

impl Pending {
    fn fail_all(&mut self) {
        let ended = self.ended.clone();
        self.fail_all_with(|| SessionError::Disconnected(ended.clone()));
    }

    fn fail_all_with(&mut self, error: impl Fn() -> SessionError) {
        self.closed = true;
        for (_, slot) in self.waiting.drain() {
            let _ = slot.send(Err(error()));
        }
    }

    fn fail_all_because(&mut self, ended: Option<Ended>) {
        if self.ended.is_none() {
            self.ended = ended;
        }
        self.fail_all();
    }

    fn disconnected(&self) -> SessionError {
        SessionError::Disconnected(self.ended.clone())
    }
}

enum WriterCmd {
    Frame(Vec<u8>),
    /// Close our sending side: the agent reads EOF on stdin and exits.
    Shutdown,
}

struct Inner {
    hello: AgentHello,
    bootstrap: BootstrapReport,
    next_id: AtomicU64,
    frames: mpsc::Sender<WriterCmd>,
    pending: Arc<Mutex<Pending>>,
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
    reader: Mutex<Option<JoinHandle<()>>>,
    witnesses: Witnesses,
    /// Whatever must live as long as the session: the SSH connection, the local child.
    keep_alive: Mutex<Vec<Box<dyn Any + Send>>>,
    goodbye: Mutex<Option<Goodbye>>,
}

/// The reply to a request already sent.
pub struct PendingReply(oneshot::Receiver<Result<OpResult, SessionError>>);

impl std::future::Future for PendingReply {
    type Output = Result<OpResult, SessionError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        // A dropped slot means the session was torn down without an answer.
        std::pin::Pin::new(&mut self.0)
            .poll(cx)
            .map(|r| r.unwrap_or(Err(SessionError::Disconnected(None))))
    }
}

/// One request as it goes on the wire, for the session and its prelude alike.
fn request_frame(
    id: u64,
    op: Op,
    (check, diff): (bool, bool),
    chain: u64,
    timeout_ms: Option<u64>,
) -> Result<Vec<u8>, SessionError> {
    encode_frame(&ControllerMsg::Request(Request {
        id,
        check,
        diff,
        chain,
        timeout_ms,
        op,
    }))
    .map_err(|e| SessionError::Protocol(e.to_string()))
}

/// Requests written to the agent's stream before its hello has come back: the first chain
/// of a host rides the exec that starts the agent instead of waiting a round trip for the
/// hello. The agent reads them once it has checked itself and said hello, so only our
/// agent ever runs them; a bootstrap that must start the agent again (an upload, a stale
/// file replaced) writes them again on the new stream, nothing having run them.
#[derive(Default)]
pub struct Prelude {
    bytes: Vec<u8>,
    slots: Vec<(u64, ReplySlot)>,
}

impl Prelude {
    /// Adds a request (ids 1, 2, ... in order: the session's own ids follow them) and
    /// returns its reply to come, which fails with `Disconnected` if no session starts.
    pub fn push(
        &mut self,
        op: Op,
        flags: (bool, bool),
        chain: u64,
        timeout_ms: Option<u64>,
    ) -> Result<PendingReply, SessionError> {
        self.push_within(op, flags, chain, timeout_ms, usize::MAX)
            .map(|reply| reply.expect("no limit"))
    }

    /// [`Prelude::push`], unless the prelude would then hold more than `limit` bytes:
    /// None, and nothing added.
    pub fn push_within(
        &mut self,
        op: Op,
        (check, diff): (bool, bool),
        chain: u64,
        timeout_ms: Option<u64>,
        limit: usize,
    ) -> Result<Option<PendingReply>, SessionError> {
        let id = self.slots.len() as u64 + 1;
        let frame = request_frame(id, op, (check, diff), chain, timeout_ms)?;
        if self.bytes.len() + frame.len() > limit {
            return Ok(None);
        }
        self.bytes.extend_from_slice(&frame);
        let (slot, answer) = oneshot::channel();
        self.slots.push((id, slot));
        Ok(Some(PendingReply(answer)))
    }

    /// The frames, to write on the stream right after starting the agent.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }
}

/// Ends a session at the end of the run the quickest way its owner knows (an SSH
/// connection's goodbye, which the server answers with nothing), instead of closing the
/// agent's input and waiting for it to exit.
pub type Goodbye =
    Box<dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + Sync>;

#[derive(Clone)]
pub struct AgentSession {
    inner: Arc<Inner>,
}

impl AgentSession {
    /// Reads the agent's hello from `reader`, then starts the writer and reader tasks.
    /// Generic over the byte stream so SSH channels and local pipes share one code path.
    pub async fn start<R, W>(
        reader: R,
        writer: W,
        bootstrap: BootstrapReport,
    ) -> Result<AgentSession, SessionError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_with_timeout(reader, writer, bootstrap, HELLO_TIMEOUT).await
    }

    /// [`AgentSession::start`] on a stream where `prelude`'s frames were already written:
    /// their replies come to the prelude's callers. The prelude is emptied only when the
    /// session starts, so that a bootstrap that tries again can write it again.
    pub async fn start_after<R, W>(
        reader: R,
        writer: W,
        bootstrap: BootstrapReport,
        prelude: &mut Prelude,
    ) -> Result<AgentSession, SessionError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_inner(reader, writer, bootstrap, HELLO_TIMEOUT, prelude).await
    }

    pub(crate) async fn start_with_timeout<R, W>(
        reader: R,
        writer: W,
        bootstrap: BootstrapReport,
        hello_timeout: Duration,
    ) -> Result<AgentSession, SessionError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let mut none = Prelude::default();
        Self::start_inner(reader, writer, bootstrap, hello_timeout, &mut none).await
    }

    async fn start_inner<R, W>(
        mut reader: R,
        writer: W,
        bootstrap: BootstrapReport,
        hello_timeout: Duration,
        prelude: &mut Prelude,
    ) -> Result<AgentSession, SessionError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let received = Arc::new(AtomicU64::new(0));
        let mut decoder = FrameDecoder::new();
        let hello = tokio::time::timeout(
            hello_timeout,
            read_hello(&mut reader, &mut decoder, &received),
        )
        .await
        .map_err(|_| SessionError::HelloTimeout(hello_timeout))??;
        if hello.protocol_version != PROTOCOL_VERSION {
            return Err(SessionError::VersionMismatch {
                agent: hello.protocol_version,
                controller: PROTOCOL_VERSION,
            });
        }

        // The prelude's callers wait before the reader starts: their replies may already
        // be behind the hello.
        let prelude = std::mem::take(prelude);
        let pending = Arc::new(Mutex::new(Pending {
            waiting: prelude.slots.into_iter().collect(),
            ..Pending::default()
        }));
        let first_id = pending.lock().expect("pending lock").waiting.len() as u64 + 1;
        let sent = Arc::new(AtomicU64::new(prelude.bytes.len() as u64));
        let (frames, queue) = mpsc::channel(WRITE_QUEUE_FRAMES);
        let witnesses: Witnesses = Arc::default();
        let explainer = Explainer {
            witnesses: witnesses.clone(),
            agent_pid: hello.pid,
        };
        tokio::spawn(write_frames(
            writer,
            queue,
            pending.clone(),
            sent.clone(),
            explainer.clone(),
        ));
        let reader_task = tokio::spawn(read_replies(
            reader,
            decoder,
            pending.clone(),
            received.clone(),
            explainer,
        ));
        Ok(AgentSession {
            inner: Arc::new(Inner {
                hello,
                bootstrap,
                next_id: AtomicU64::new(first_id),
                frames,
                pending,
                sent,
                received,
                reader: Mutex::new(Some(reader_task)),
                witnesses,
                keep_alive: Mutex::new(Vec::new()),
                goodbye: Mutex::new(None),
            }),
        })
    }

    /// Sends one request and waits for its reply. Safe to call concurrently: replies are
    /// matched by id, in whatever order the agent sends them.
    pub async fn call(&self, op: Op, check: bool, diff: bool) -> Result<OpResult, SessionError> {
        self.send(op, check, diff, 0).await?.await
    }

    /// Queues one request of `chain` (0: none) and returns its reply to come. Requests
    /// queued one after another from one task reach the agent in that order, which a
    /// chain relies on: the agent runs them in order and skips the rest after a stop.
    pub async fn send(
        &self,
        op: Op,
        check: bool,
        diff: bool,
        chain: u64,
    ) -> Result<PendingReply, SessionError> {
        self.send_timed(op, check, diff, chain, None).await
    }

    /// [`AgentSession::send`] with the task's `timeout:` for each of the request's ops:
    /// the agent stops what runs past it and answers `OpResult::TimedOut`.
    pub async fn send_timed(
        &self,
        op: Op,
        check: bool,
        diff: bool,
        chain: u64,
        timeout_ms: Option<u64>,
    ) -> Result<PendingReply, SessionError> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let frame = request_frame(id, op, (check, diff), chain, timeout_ms)?;

        let (slot, answer) = oneshot::channel();
        {
            let mut pending = self.inner.pending.lock().expect("pending lock");
            if pending.closed {
                return Err(pending.disconnected());
            }
            pending.waiting.insert(id, slot);
        }
        if self
            .inner
            .frames
            .send(WriterCmd::Frame(frame))
            .await
            .is_err()
        {
            self.forget(id);
            return Err(self
                .inner
                .pending
                .lock()
                .expect("pending lock")
                .disconnected());
        }
        Ok(PendingReply(answer))
    }

    /// Whether both handles are the one session (one agent).
    pub fn same_as(&self, other: &AgentSession) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    fn forget(&self, id: u64) {
        self.inner
            .pending
            .lock()
            .expect("pending lock")
            .waiting
            .remove(&id);
    }

    pub fn hello(&self) -> &AgentHello {
        &self.inner.hello
    }

    pub fn bootstrap(&self) -> &BootstrapReport {
        &self.inner.bootstrap
    }

    /// Protocol bytes (sent, received), as framed and compressed on the wire.
    pub fn traffic(&self) -> (u64, u64) {
        (
            self.inner.sent.load(Ordering::Relaxed),
            self.inner.received.load(Ordering::Relaxed),
        )
    }

    /// Closes the agent's stdin so that it exits, waits (bounded) for its output to end,
    /// then releases the connection. Calls still pending fail with `Disconnected`.
    pub async fn close(&self) {
        let _ = self.inner.frames.send(WriterCmd::Shutdown).await;
        let reader = self.inner.reader.lock().expect("reader lock").take();
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(CLOSE_TIMEOUT, reader).await;
        }
        self.inner.pending.lock().expect("pending lock").fail_all();
        let kept = std::mem::take(&mut *self.inner.keep_alive.lock().expect("keep lock"));
        drop(kept);
    }

    /// Ends the session at the end of the run, when nothing is pending: through the
    /// owner's [`Goodbye`] when it gave one (nothing is waited for from the host: the
    /// agent sees its input end when the server drops the connection, and exits), else
    /// as [`Self::close`].
    pub async fn release(&self) {
        let goodbye = self.inner.goodbye.lock().expect("goodbye lock").take();
        let Some(goodbye) = goodbye else {
            return self.close().await;
        };
        self.inner.pending.lock().expect("pending lock").fail_all();
        goodbye().await;
        let kept = std::mem::take(&mut *self.inner.keep_alive.lock().expect("keep lock"));
        drop(kept);
    }

    /// Sets how [`Self::release`] ends the session.
    pub(crate) fn set_goodbye(&self, goodbye: Goodbye) {
        *self.inner.goodbye.lock().expect("goodbye lock") = Some(goodbye);
    }

    /// Stops the agent at once, whatever it is running (Ctrl-C on the controller): a
    /// `Cancel` overtakes the queued requests, the agent kills the running process group,
    /// removes its staging files and exits; then the session closes as [`Self::close`]
    /// does (the end of its input means the same to an agent that missed the message).
    pub async fn cancel(&self) {
        if let Ok(frame) = encode_frame(&ControllerMsg::Cancel) {
            let _ = self.inner.frames.send(WriterCmd::Frame(frame)).await;
        }
        self.close().await;
    }

    /// Ties `thing` (a connection handle, a child process) to the session's lifetime.
    pub(crate) fn keep_alive(&self, thing: Box<dyn Any + Send>) {
        self.inner.keep_alive.lock().expect("keep lock").push(thing);
    }

    /// Adds a witness of the stream's end, asked (first added first) once it has ended.
    pub fn add_end_witness(&self, witness: EndWitness) {
        self.inner
            .witnesses
            .lock()
            .expect("witnesses lock")
            .push(witness);
    }

    /// Why the stream ended, once it has and a witness said why.
    pub fn ended(&self) -> Option<Ended> {
        self.inner
            .pending
            .lock()
            .expect("pending lock")
            .ended
            .clone()
    }

    /// True once the stream has ended: every call from now on fails.
    pub fn is_closed(&self) -> bool {
        self.inner.pending.lock().expect("pending lock").closed
    }
}

async fn read_hello<R: AsyncRead + Unpin>(
    reader: &mut R,
    decoder: &mut FrameDecoder,
    received: &AtomicU64,
) -> Result<AgentHello, SessionError> {
    let mut buf = vec![0u8; READ_BUFFER_BYTES];
    loop {
        match decoder.next::<AgentMsg>() {
            Ok(Some(AgentMsg::Hello(hello))) => return Ok(hello),
            Ok(Some(AgentMsg::Reply(reply))) => {
                return Err(SessionError::Protocol(format!(
                    "agent sent a reply (id {}) before its hello",
                    reply.id
                )));
            }
            Ok(None) => {}
            Err(e) => return Err(SessionError::Protocol(e.to_string())),
        }
        let n = reader.read(&mut buf).await?;
        if n == 0 {
            return Err(SessionError::EndedBeforeHello(String::new()));
        }
        received.fetch_add(n as u64, Ordering::Relaxed);
        decoder.push(&buf[..n]);
    }
}

async fn write_frames<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut queue: mpsc::Receiver<WriterCmd>,
    pending: Arc<Mutex<Pending>>,
    sent: Arc<AtomicU64>,
    explainer: Explainer,
) {
    let mut broken = false;
    while let Some(cmd) = queue.recv().await {
        match cmd {
            WriterCmd::Frame(frame) => {
                if writer.write_all(&frame).await.is_err() {
                    broken = true;
                    break;
                }
                sent.fetch_add(frame.len() as u64, Ordering::Relaxed);
                // Flush only when nothing else is queued, so bursts share a flush.
                if queue.is_empty() && writer.flush().await.is_err() {
                    broken = true;
                    break;
                }
            }
            WriterCmd::Shutdown => break,
        }
    }
    let _ = writer.shutdown().await;
    // The agent cannot receive anything more; waiting callers would never be answered.
    let ended = if broken {
        explainer.explain().await
    } else {
        None
    };
    pending
        .lock()
        .expect("pending lock")
        .fail_all_because(ended);
}

/// Asks the witnesses why the stream ended.
#[derive(Clone)]
struct Explainer {
    witnesses: Witnesses,
    agent_pid: u32,
}

impl Explainer {
    /// The first witness's answer, waiting up to [`END_CAUSE_WAIT`] for one: the causes
    /// arrive just after the end of the output they explain.
    async fn explain(&self) -> Option<Ended> {
        let deadline = tokio::time::Instant::now() + END_CAUSE_WAIT;
        loop {
            {
                let witnesses = self.witnesses.lock().expect("witnesses lock");
                if witnesses.is_empty() {
                    return None;
                }
                if let Some(cause) = witnesses.iter().find_map(|w| w()) {
                    return Some(Ended {
                        cause,
                        agent_pid: self.agent_pid,
                    });
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn read_replies<R: AsyncRead + Unpin>(
    mut reader: R,
    mut decoder: FrameDecoder,
    pending: Arc<Mutex<Pending>>,
    received: Arc<AtomicU64>,
    explainer: Explainer,
) {
    let mut buf = vec![0u8; READ_BUFFER_BYTES];
    // Why the stream is no longer trusted; None for a clean end or a broken stream.
    let broken: Option<String> = 'stream: loop {
        loop {
            match decoder.next::<AgentMsg>() {
                Ok(Some(AgentMsg::Reply(reply))) => {
                    let slot = pending
                        .lock()
                        .expect("pending lock")
                        .waiting
                        .remove(&reply.id);
                    // An id nobody waits for was never sent or was answered already: the
                    // stream is out of step, and every later reply may be someone else's.
                    let Some(slot) = slot else {
                        break 'stream Some(format!(
                            "agent replied to request {}, which no call is waiting for",
                            reply.id
                        ));
                    };
                    let _ = slot.send(Ok(reply.result));
                }
                Ok(Some(AgentMsg::Hello(_))) => {
                    break 'stream Some("agent said hello a second time".into());
                }
                Ok(None) => break,
                Err(e) => break 'stream Some(e.to_string()),
            }
        }
        match reader.read(&mut buf).await {
            Ok(0) if decoder.pending_bytes() > 0 => {
                break Some(format!(
                    "stream ended inside a frame ({} bytes of it received)",
                    decoder.pending_bytes()
                ));
            }
            Ok(0) | Err(_) => break None,
            Ok(n) => {
                received.fetch_add(n as u64, Ordering::Relaxed);
                decoder.push(&buf[..n]);
            }
        }
    };
    match broken {
        Some(why) => pending
            .lock()
            .expect("pending lock")
            .fail_all_with(|| SessionError::Protocol(why.clone())),
        None => {
            let ended = explainer.explain().await;
            pending
                .lock()
                .expect("pending lock")
                .fail_all_because(ended);
        }
    }
}

#[cfg(test)]
#[path = "agent_session_tests.rs"]
mod tests;
