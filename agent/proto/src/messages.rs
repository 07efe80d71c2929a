//! Every message that crosses the wire between controller and agent.
//!
//! Changing any type here changes the wire format: bump [`crate::PROTOCOL_VERSION`] and
//! update the golden-bytes test in `frame.rs`.

use serde::{Deserialize, Serialize};

/// Sent by the controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ControllerMsg {
    /// One request; the agent answers it with exactly one [`AgentMsg::Reply`] of the same id.
    Request(Request),
}

/// Sent by the agent.
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
    /// file's content when one is asked for.
    Stat {
        path: String,
        checksum: Option<Digest>,
    },
    /// Make a regular file hold exactly `content`, written atomically (temp file in the
    /// same directory, fsync, rename) and only when the bytes differ.
    EnsureFile(EnsureFile),
    /// Make a path be a directory, be absent, exist (touch), or be a symlink.
    EnsurePath(EnsurePath),
    /// Append bytes to a staging file for a later `EnsureFile { content: Staged }`.
    WriteChunk { upload_id: u64, data: Vec<u8> },
    /// Run a program or a shell command line.
    Exec(Exec),
    /// Run each op in order and reply with one result per op: a loop's items travel as
    /// one round trip. A failed op does not stop the ones after it.
    Batch(Vec<Op>),
    /// Describe the host (Ansible's `setup`): the named subsets of facts, read natively.
    /// Subsets as `gather_subset` writes them: "all", "min", "network", "!hardware"...;
    /// unknown names are ignored.
    Facts { subsets: Vec<String> },
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
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FileContent {
    Inline(Vec<u8>),
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
    pub stdin: Option<Vec<u8>>,
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
    Batch(Vec<OpResult>),
    /// Facts by name, without the `ansible_` prefix, in the order gathered.
    Facts(Vec<(String, FactValue)>),
    Error(OpError),
}

/// A fact's value: JSON's shapes, because facts end up as playbook variables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FactValue {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<FactValue>),
    /// Keys in the order the agent produced them.
    Map(Vec<(String, FactValue)>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatInfo {
    pub path: String,
    pub exists: bool,
    pub kind: FileKind,
    pub mode: u32,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    /// `uid`/`gid` as names (the number when /etc/passwd or /etc/group lacks it).
    pub owner: String,
    pub group: String,
    pub mtime: i64,
    /// The asked-for digest of a regular file's content.
    pub checksum: Option<Vec<u8>>,
    pub link_target: Option<String>,
}

/// The digests the agent computes: SHA-256 for its own comparisons, SHA-1 because it is
/// what Ansible's `stat` reports by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Digest {
    Sha1,
    Sha256,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileKind {
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
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// Wall time, for the result's `start`/`end`/`delta`.
    pub start_unix_micros: i64,
    pub duration_micros: u64,
    pub msg: String,
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
}
