//! Every message that crosses the wire between controller and agent.
//!
//! Changing any type here changes the wire format: bump [`crate::PROTOCOL_VERSION`] and
//! update the golden-bytes test in `frame.rs`.

use serde::{Deserialize, Serialize};

/// Sent by the controller.
// As for `AgentMsg`: one value per frame, taken apart at once; boxing would cost an
// allocation per request to save stack nobody holds.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ControllerMsg {
    /// One request; the agent answers it with exactly one [`AgentMsg::Reply`] of the same id.
    Request(Request),
    /// Stop everything: the agent kills the process group of whatever it is running,
    /// removes its staging files and exits without answering what is still queued. Read
    /// while a child runs too (the agent polls its input then), so it overtakes the
    /// requests queued before it. The end of the input (or a hangup) means the same.
    Cancel,
}

/// Sent by the agent.
// One value per frame, decoded and taken apart at once: boxing the reply would cost an
// allocation per frame to save stack space nobody holds on to.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AgentMsg {
    /// The first frame the agent writes, unasked, as soon as it starts.
    Hello(AgentHello),
    /// The one final reply to the request with this id.
    Reply(Reply),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentHello {
    /// Must equal [`crate::PROTOCOL_VERSION`]; anything else is replaced, not trusted.
    pub protocol_version: u32,
    /// The agent package's version, for messages.
    pub agent_version: String,
    /// The user the agent runs as, read from /etc/passwd (static glibc has no NSS).
    pub user: String,
    pub uid: u32,
    pub gid: u32,
    /// What `~` means in paths: $HOME, or the passwd entry's home.
    pub home: String,
    pub pid: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    pub id: u64,
    /// Check mode: report what would change, change nothing.
    pub check: bool,
    /// Diff mode: file ops return the old and new content when it changes.
    pub diff: bool,
    /// The chain this request belongs to, 0 for none. Requests of one chain run in order;
    /// after one of them stops the chain (see [`OpResult::stops_chain`]), the agent answers
    /// the chain's later requests with [`OpResult::ChainSkipped`] without running them, so
    /// the controller can send a host's next tasks before the earlier ones have answered.
    pub chain: u64,
    /// The task's `timeout:` in milliseconds, for each op of the request (each op of a
    /// `Batch`: a loop's items have one each, as in Ansible). At the deadline the agent
    /// kills the process group of a command or module (TERM, then KILL after a short
    /// grace) and answers [`OpResult::TimedOut`]; ops that start no process are not
    /// stopped (the controller keeps a backstop for them).
    pub timeout_ms: Option<u64>,
    pub op: Op,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub id: u64,
    pub result: OpResult,
}

/// The agent's vocabulary: small, primitive, idempotent operations. Modules on the
/// controller plan these; the agent never knows which module asked.
///
/// Paths may start with `~` or `~/`, meaning the agent user's home.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// Describe a path (no error when it is missing), with the digest of a regular
    /// file's content when one is asked for. With `follow`, a final symlink is described
    /// by what it points to (a dangling one is missing), as `stat`'s `follow: yes`.
    /// Many paths: a `Batch` of `Stat`s.
    Stat {
        path: String,
        checksum: Option<Digest>,
        follow: bool,
    },
    /// Make a regular file hold exactly `content`, written atomically (temp file in the
    /// same directory, fsync, rename) and only when the bytes differ.
    EnsureFile(EnsureFile),
    /// Make a path be a directory, be absent, exist (touch), or be a symlink.
    EnsurePath(EnsurePath),
    /// Append bytes to a staging file for a later `EnsureFile { content: Staged }`.
    WriteChunk {
        upload_id: u64,
        #[serde(with = "crate::raw_bytes")]
        data: Vec<u8>,
    },
    /// Run a program or a shell command line.
    Exec(Exec),
    /// Run each op in order and reply with one result per op: a loop's items travel as
    /// one round trip. A failed op does not stop the ones after it.
    Batch(#[serde(deserialize_with = "crate::nesting::nested")] Vec<Op>),
    /// Describe the host (Ansible's `setup`): the named subsets of facts, read natively.
    /// Subsets as `gather_subset` writes them: "all", "min", "network", "!hardware"...;
    /// unknown names are ignored.
    Facts { subsets: Vec<String> },
    /// Read up to `limit` bytes of a file from `offset` (symlinks followed, as `open`
    /// does), answered by [`OpResult::Read`]. A missing file is an answer, not an error
    /// (`exists: false`, no bytes); so is a directory or special file (its stat, no bytes:
    /// a FIFO is never opened). One reply carries at most [`crate::READ_BYTES_MAX`]
    /// whatever `limit` says; a larger file is paged by the controller with `offset`.
    ReadFile {
        path: String,
        offset: u64,
        limit: Option<u64>,
    },
    /// Describe everything under a directory, answered by [`OpResult::Tree`]: `find`,
    /// `fetch` and `copy remote_src` walk, `file recurse`. `max_depth` 1 lists only the
    /// children, `None` has no limit. Symlinks are listed, not entered, unless `follow`
    /// (then they are described by their target, and a directory reached twice on one
    /// path, a loop, is listed but not entered again). A missing root is an answer.
    ListTree {
        path: String,
        max_depth: Option<u32>,
        follow: bool,
        checksum: Option<Digest>,
    },
    /// rename(2) `from` to `to`: atomic, both on one filesystem, `to` replaced if it
    /// exists. Answered by a [`FileOutcome`] of `to`; in check mode only `from` is
    /// looked at.
    Rename { from: String, to: String },
    /// Run a module that has no native planner (a `library/` or collection module, or
    /// one of ansible-core's) on the target, answered by [`OpResult::Module`]. Its files
    /// are kept in the agent's cache by digest: when the agent lacks them and `payload.files`
    /// is `None` it answers [`OpResult::NeedContent`], and the controller asks again with
    /// the files. New-style Python modules run in a child forked from one warm interpreter
    /// the agent keeps per interpreter path for the session.
    RunModule(RunModule),
    /// Start `op` as a detached job (Ansible's `async`): a process of its own session,
    /// which outlives the agent and the connection, runs it with this request's flags and
    /// the job's time limit as its timeout, and writes what it answered to the job's files
    /// in `dir` (see [`StartJob`]). Answered at once by [`OpResult::JobStarted`], or by
    /// [`OpResult::NeedContent`] when `op` is a `RunModule` whose files the cache lacks.
    StartJob(StartJob),
    /// Describe a file block by block for a delta upload, answered by
    /// [`OpResult::Signatures`]: each `block_size` bytes (the last block may be shorter)
    /// get a weak rolling checksum and a strong digest. A missing file is an answer.
    BlockSignatures { path: String, block_size: u32 },
    /// Append to the staging file of `upload_id` (as `WriteChunk` does) what the
    /// instructions make of `basis`, the file the signatures described: ranges copied
    /// from it and literal bytes. The result is checked as any staged upload is, by the
    /// `EnsureFile { content: Staged }` that follows.
    WriteDelta {
        upload_id: u64,
        basis: String,
        instructions: Vec<DeltaInstruction>,
    },
    /// The sending side of a delta between two agents (a pull to the controller's agent, a
    /// copy between two hosts): describe a file of this host as ranges of another version
    /// of it, which the receiving agent described by [`Op::BlockSignatures`], plus literal
    /// bytes. The agent keeps the encoding open from one request to the next, reading the
    /// file once: the first request names the file and the signatures, and each request,
    /// the first too, is answered by [`OpResult::Delta`] with the next instructions (at most
    /// `literal_cap` literal bytes, bounded by [`crate::READ_BYTES_MAX`]). The last batch
    /// carries the file's size and SHA-256; a request after it answers the end again, so
    /// the controller may send several before their replies come back.
    EncodeDelta(EncodeDelta),
    /// Set the modification time of a file or directory (not through a final symlink),
    /// as rsync's `--times` does; answered by a [`FileOutcome`], `changed` when the time
    /// was another.
    SetTimes {
        path: String,
        mtime: i64,
        mtime_nsec: u32,
    },
}

/// A detached job's files, all in `dir` (`~` allowed) and named after the job id: `JID`
/// holds Ansible's status JSON (`{"started": true, "finished": false, "ansible_job_id":
/// ...}`, with `finished` true once the job ended), `JID.reply` the job's [`OpResult`] as
/// one frame (written before `JID` says finished), `JID.note` the controller's `note`,
/// kept for whoever asks about the job later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartJob {
    /// The job id's first part (`j` and digits); the agent appends `.` and its pid, as
    /// Ansible's async_wrapper does.
    pub jid_prefix: String,
    pub dir: String,
    /// Seconds after which the job's process group is killed (its reply: `TimedOut`).
    pub time_limit_secs: u64,
    #[serde(with = "crate::raw_bytes")]
    pub note: Vec<u8>,
    #[serde(deserialize_with = "crate::nesting::nested")]
    pub op: Box<Op>,
}

/// What [`Op::StartJob`] started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobStarted {
    pub jid: String,
    /// `dir/JID` with `~` expanded.
    pub results_file: String,
}

/// One request of an [`Op::EncodeDelta`] encoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EncodeDelta {
    /// Names the encoding across its requests (the controller's, as an upload id).
    pub delta_id: u64,
    /// The first request's: what to encode; `None` goes on where the last batch stopped.
    pub start: Option<DeltaSource>,
    pub literal_cap: u32,
}

/// The file an [`Op::EncodeDelta`] describes (`~` allowed) and the signatures of the
/// version the receiver holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeltaSource {
    pub path: String,
    pub signatures: BlockSignatures,
}

/// The next instructions of an [`Op::EncodeDelta`] encoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeltaBatch {
    pub instructions: Vec<DeltaInstruction>,
    /// With the last batch (and any request after it): the file that was described.
    pub end: Option<DeltaEnd>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeltaEnd {
    pub size: u64,
    pub sha256: [u8; 32],
}

/// One step of rebuilding a file from the old one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DeltaInstruction {
    /// `len` bytes of the basis file from `offset`.
    Copy { offset: u64, len: u64 },
    /// Bytes the basis file does not have.
    Literal(#[serde(with = "crate::raw_bytes")] Vec<u8>),
}

/// What [`Op::BlockSignatures`] found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockSignatures {
    /// False when there is no regular file to read (then `blocks` is empty).
    pub exists: bool,
    pub size: u64,
    pub block_size: u32,
    pub blocks: Vec<BlockSignature>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockSignature {
    /// The rolling checksum of the block (see the agent's and controller's `rolling`).
    pub weak: u32,
    /// The first 16 bytes of the block's SHA-256.
    pub strong: [u8; 16],
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunModule {
    /// Interpreters to try, in order, as Ansible's `interpreter_python=auto` tries its
    /// list (a bare name looked up on PATH, a path taken if executable); the first found
    /// runs the module. One entry for `ansible_python_interpreter`.
    pub interpreters: Vec<String>,
    pub payload: ModulePayload,
    pub style: ModuleStyle,
    /// The arguments as the module reads them: JSON (`{"ANSIBLE_MODULE_ARGS": ...}` for
    /// new-style modules), or `k=v` text for old-style ones.
    #[serde(with = "crate::raw_bytes")]
    pub args: Vec<u8>,
    /// Seconds before the module is killed (the task's `timeout:`).
    pub timeout_secs: Option<u64>,
    /// The task's `environment`.
    pub env: Vec<(String, String)>,
}

/// A module's files, relative paths under one directory of the agent's cache named by
/// `sha256` (the digest of the files, computed by the controller).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModulePayload {
    pub sha256: [u8; 32],
    /// `None` while the controller believes the agent has them.
    pub files: Option<Vec<PayloadFile>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PayloadFile {
    pub path: String,
    #[serde(with = "crate::raw_bytes")]
    pub data: Vec<u8>,
    pub executable: bool,
}

/// How a module takes its arguments and is started, as Ansible's `module_style`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ModuleStyle {
    /// AnsibleModule: `fqn` is the dotted name it is imported by (`ansible.modules.uri`,
    /// `ansible_collections.ns.coll.plugins.modules.x`, `ansible.legacy.x`), run by the
    /// warm interpreter with `profile` (Ansible's serialization profile).
    NewStyle {
        fqn: String,
        profile: String,
    },
    /// A program given the path of an arguments file (`k=v` text for `Old`, JSON for the
    /// others); `path` is the file in the payload. A Python script (`python`) is started
    /// by the interpreter, anything else by its own `#!` line or as a binary.
    Old {
        path: String,
        python: bool,
    },
    WantJson {
        path: String,
        python: bool,
    },
    Binary {
        path: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnsureFile {
    pub path: String,
    pub content: FileContent,
    pub mode: Option<FileMode>,
    /// When false, an existing file is left as it is, whatever it holds (copy's `force: no`).
    pub force: bool,
    pub owner: Ownership,
    /// A program and its arguments (copy's and template's `validate`) run on the new
    /// content before it replaces the file, with `%s` in an argument standing for the new
    /// content's path; a non-zero exit leaves the file as it was. Run only when the
    /// content changes, never in check mode.
    pub validate: Option<Vec<String>>,
    /// When the content changes and a file was there, first copy it (mode, owner, times
    /// kept) to Ansible's backup name `<path>.<agent pid>.<YYYY-MM-DD@HH:MM:SS~>` in the
    /// target's local time; [`FileOutcome::backup_file`] names it. Never in check mode.
    pub backup: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FileContent {
    Inline(#[serde(with = "crate::raw_bytes")] Vec<u8>),
    /// Bytes sent before by `WriteChunk`s with this id; `sha256` is what they must hash to.
    Staged {
        upload_id: u64,
        sha256: [u8; 32],
    },
    /// Only a digest: if the file already hashes to it, nothing to do; otherwise the
    /// reply is [`OpResult::NeedContent`] and the controller sends the bytes.
    Digest {
        sha256: [u8; 32],
        size: u64,
    },
    /// The bytes of another file on the same host (`~` allowed), copied by the agent:
    /// synchronize within one host, where nothing need cross the wire.
    CopyOf {
        path: String,
    },
    /// `bytes`, computed from content the controller did not read but predicted (what the
    /// ops before this one in the batch wrote): written only while the file still hashes
    /// to `was_sha256`, else [`ErrorKind::Conflict`] and the file is left alone.
    Replacing {
        #[serde(with = "crate::raw_bytes")]
        bytes: Vec<u8>,
        was_sha256: [u8; 32],
    },
}

/// A file mode as Ansible accepts it: octal bits, or symbolic (`u=rw,g=r,o=r`, `u+x`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FileMode {
    Bits(u32),
    Symbolic(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnsurePath {
    pub path: String,
    pub state: PathState,
    pub mode: Option<FileMode>,
    /// For `Directory`: create missing parents too (always true for Ansible's `file`).
    pub recurse_parents: bool,
    pub owner: Ownership,
}

/// Ansible's `owner`/`group`: a name or a numeric id each; `None` leaves it as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Ownership {
    pub user: Option<String>,
    pub group: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PathState {
    /// Must already exist as a regular file; only its mode is changed.
    File,
    Directory,
    Absent,
    /// Create empty if missing, else update its times (always reports changed, as Ansible).
    Touch,
    Link {
        target: String,
        force: bool,
    },
    /// Ansible's `file` without `state`: the path keeps its own kind. A directory (with
    /// `follow`, a link to one) is handled as `Directory`, anything else as `File`, so
    /// the look and the change cost one request.
    AsFound {
        follow: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Exec {
    pub command: Command,
    pub chdir: Option<String>,
    /// Skip when this path exists.
    pub creates: Option<String>,
    /// Skip unless this path exists.
    pub removes: Option<String>,
    pub env: Vec<(String, String)>,
    #[serde(with = "crate::raw_bytes::option")]
    pub stdin: Option<Vec<u8>>,
    /// The command's umask (`pip`'s and `git`'s `umask`); `None` inherits the agent's.
    pub umask: Option<u32>,
}

impl Exec {
    /// `command` as it is: no directory, guard, environment, input or umask of its own.
    pub fn plain(command: Command) -> Exec {
        Exec {
            command,
            chdir: None,
            creates: None,
            removes: None,
            env: Vec::new(),
            stdin: None,
            umask: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Command {
    /// argv[0] looked up on PATH, no shell (Ansible's `command`).
    Argv(Vec<String>),
    /// A command line for `/bin/sh -c` (Ansible's `shell`); `executable` replaces /bin/sh.
    Shell {
        script: String,
        executable: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum OpResult {
    Stat(StatInfo),
    File(FileOutcome),
    Exec(ExecOutcome),
    /// The chunk was stored; `size` is the staged total so far.
    Chunk {
        size: u64,
    },
    /// The file's digest did not match: send the bytes (see [`FileContent::Digest`]).
    NeedContent,
    Batch(#[serde(deserialize_with = "crate::nesting::nested")] Vec<OpResult>),
    /// Facts by name, without the `ansible_` prefix, in the order gathered.
    Facts(Vec<(String, FactValue)>),
    /// What [`Op::ReadFile`] read.
    Read(FileRead),
    /// What [`Op::ListTree`] found.
    Tree(TreeListing),
    /// What [`Op::RunModule`] printed and how it ended.
    Module(ModuleRun),
    Error(OpError),
    /// Not run: an earlier request of the same chain stopped it.
    ChainSkipped,
    /// The op outlived the request's `timeout_ms` and was stopped after this long.
    TimedOut {
        after_ms: u64,
    },
    /// What [`Op::StartJob`] started.
    JobStarted(JobStarted),
    /// What [`Op::BlockSignatures`] found.
    Signatures(BlockSignatures),
    /// The next batch of an [`Op::EncodeDelta`] encoding.
    Delta(DeltaBatch),
}

impl OpResult {
    /// Whether this result ends its chain: anything that may fail the task (an error, a
    /// command that exited non-zero) or that the controller must act on before the next
    /// op runs (content to upload). Deliberately wide: a stop the task did not need only
    /// makes the controller send the rest again.
    pub fn stops_chain(&self) -> bool {
        match self {
            // Whether a module failed is in its JSON, which only the controller reads.
            OpResult::Error(_)
            | OpResult::NeedContent
            | OpResult::ChainSkipped
            | OpResult::TimedOut { .. }
            | OpResult::JobStarted(_)
            | OpResult::Module(_) => true,
            OpResult::Exec(outcome) => outcome.rc != 0,
            OpResult::Batch(results) => results.iter().any(OpResult::stops_chain),
            OpResult::Stat(_)
            | OpResult::File(_)
            | OpResult::Chunk { .. }
            | OpResult::Facts(_)
            | OpResult::Read(_)
            | OpResult::Tree(_)
            | OpResult::Signatures(_)
            | OpResult::Delta(_) => false,
        }
    }
}

/// A slice of a file. The file's total size is `stat.size` (0 for /proc files, which are
/// read all the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRead {
    /// The file as opened (symlinks followed); `exists: false` when there is none.
    pub stat: StatInfo,
    /// Where `data` starts, as asked.
    pub offset: u64,
    #[serde(with = "crate::raw_bytes")]
    pub data: Vec<u8>,
    /// True when `data` reaches the end of the file: nothing is left after it. False
    /// when the limit or the one-reply cap cut it: ask again at `offset + data.len()`.
    pub eof: bool,
}

/// The entries under a root, described as [`Op::Stat`] describes one path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TreeListing {
    /// The root itself (through a final symlink only with `follow`). A root that is a
    /// symlink to a directory is still listed, as `find` and `os.walk` list it.
    pub root: StatInfo,
    /// Depth first, each directory before what it holds, names in byte order. The root
    /// is not among them. `path` is the root's path joined with the entry's relative
    /// path (strip `root.path` and `/` for the relative one); links beneath a followed
    /// symlink keep the link's path, not their target's.
    pub entries: Vec<StatInfo>,
    /// Directories that could not be read (permission denied...), with why: the walk
    /// goes on without them, as `find` reports `skipped_paths`.
    pub skipped: Vec<SkippedPath>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedPath {
    pub path: String,
    pub message: String,
}

/// A fact's value: JSON's shapes, because facts end up as playbook variables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FactValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(#[serde(deserialize_with = "crate::nesting::nested")] Vec<FactValue>),
    /// Keys in the order the agent produced them.
    Map(#[serde(deserialize_with = "crate::nesting::nested")] Vec<(String, FactValue)>),
}

/// A path as lstat(2) (or stat(2), when following) sees it, plus what only the target can
/// tell: names of ids, access for the agent's user, a link's resolution. A missing path is
/// `exists: false` with everything else zero or empty ([`StatInfo::missing`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatInfo {
    pub path: String,
    pub exists: bool,
    pub kind: FileKind,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// The file type bits (`st_mode & S_IFMT`: 0o020000 character device, 0o060000 block
    /// device, 0o010000 FIFO, 0o140000 socket...), for what [`FileKind::Other`] hides.
    pub file_type: u32,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    /// `uid`/`gid` as names (the number when /etc/passwd or /etc/group lacks it).
    pub owner: String,
    pub group: String,
    /// Times as seconds and nanoseconds since the epoch; [`StatInfo::float_seconds`]
    /// makes the float Python's `st_mtime` is.
    pub mtime: i64,
    pub mtime_nsec: u32,
    pub atime: i64,
    pub atime_nsec: u32,
    pub ctime: i64,
    pub ctime_nsec: u32,
    pub inode: u64,
    pub dev: u64,
    pub nlink: u64,
    /// The device a character or block special file is (`st_rdev`, Ansible's `device_type`).
    pub rdev: u64,
    /// 512-byte blocks allocated (`st_blocks`).
    pub blocks: u64,
    /// The preferred I/O size (`st_blksize`, Ansible's `block_size`).
    pub block_size: u64,
    /// access(2) for the agent's user (R_OK, W_OK, X_OK), through a final symlink as
    /// Python's `os.access`.
    pub readable: bool,
    pub writeable: bool,
    pub executable: bool,
    /// The asked-for digest of a regular file's content.
    #[serde(with = "crate::raw_bytes::option")]
    pub checksum: Option<Vec<u8>>,
    /// What a symlink holds (readlink), and its full resolution as Python's
    /// `os.path.realpath` (Ansible's `lnk_source`: missing parts kept, loops left as they
    /// are). Both `None` for anything but a symlink.
    pub link_target: Option<String>,
    pub lnk_source: Option<String>,
}

impl StatInfo {
    /// The answer for a path that is not there.
    pub fn missing(path: String) -> Self {
        StatInfo {
            path,
            ..StatInfo::default()
        }
    }

    /// Seconds and nanoseconds as the float Python's `os.stat` reports (`st_mtime`...),
    /// computed the way CPython computes it, so the last digits agree.
    pub fn float_seconds(secs: i64, nsec: u32) -> f64 {
        secs as f64 + nsec as f64 * 1e-9
    }
}

/// The digests the agent computes: SHA-256 for its own comparisons, SHA-1 because it is
/// what Ansible's `stat` reports by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Digest {
    Sha1,
    Sha256,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileKind {
    #[default]
    Missing,
    File,
    Directory,
    Symlink,
    Other,
}

/// What a file op did, in the shape Ansible's copy/file results report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileOutcome {
    pub changed: bool,
    /// The path with `~` expanded.
    pub path: String,
    pub kind: FileKind,
    pub mode: u32,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    pub owner: String,
    pub group: String,
    /// With diff mode and a content change, when both sides are text.
    pub diff: Option<FileDiff>,
    /// Where [`EnsureFile::backup`] copied the old file.
    pub backup_file: Option<String>,
}

/// A content change for `--diff`: `before` is `None` when there was no file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileDiff {
    pub before: Option<String>,
    pub after: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecOutcome {
    /// False when `creates`/`removes` skipped the command, or in check mode.
    pub ran: bool,
    pub rc: i32,
    #[serde(with = "crate::raw_bytes")]
    pub stdout: Vec<u8>,
    #[serde(with = "crate::raw_bytes")]
    pub stderr: Vec<u8>,
    /// Wall time, for the result's `start`/`end`/`delta`.
    pub start_unix_micros: i64,
    pub duration_micros: u64,
    pub msg: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleRun {
    /// The interpreter that ran it, empty for a binary.
    pub interpreter: String,
    /// True when it was picked from several candidates (Ansible's discovery, whose
    /// result becomes the `discovered_interpreter_python` fact).
    pub discovered: bool,
    pub rc: i32,
    #[serde(with = "crate::raw_bytes")]
    pub stdout: Vec<u8>,
    #[serde(with = "crate::raw_bytes")]
    pub stderr: Vec<u8>,
    /// Killed after `timeout_secs`.
    pub timed_out: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpError {
    pub kind: ErrorKind,
    /// Human text, e.g. "Permission denied (os error 13): /etc/shadow".
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorKind {
    NotFound,
    PermissionDenied,
    InvalidArgument,
    Io,
    /// The request was not understood (e.g. a version skew that slipped through).
    Protocol,
    /// The file no longer holds what the request was computed from
    /// ([`FileContent::Replacing`]).
    Conflict,
}
