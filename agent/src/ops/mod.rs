//! The agent's operations. Each takes an [`Agent`] (what the session knows: home, umask,
//! id counters, name cache) and returns one [`OpResult`]; failures become
//! [`OpResult::Error`] so that one bad op never ends the session.

pub mod backup;
pub mod child;
pub mod delta;
pub mod encode;
pub mod exec;
pub mod facts;
pub mod file;
pub mod job;
pub mod mode;
pub mod module;
pub mod path;
pub mod read;
pub mod realpath;
pub mod rename;
pub mod stat;
pub mod times;
pub mod tree;
pub mod warm;

use std::fs::Metadata;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use turbo_proto::{ErrorKind, FileKind, FileOutcome, Op, OpError, OpResult, Ownership, Request};

use crate::users::Names;

/// Flags of the request an op belongs to.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    pub check: bool,
    pub diff: bool,
}

pub struct Agent {
    /// What `~` expands to.
    pub home: String,
    pub umask: u32,
    pub pid: u32,
    pub uid: u32,
    pub gid: u32,
    /// Suffix for temp file names, so that two writes in one batch never share one.
    temp_seq: u64,
    staging_dir: Option<PathBuf>,
    pub names: Names,
    /// Warm Python interpreters for `RunModule`, one per interpreter path.
    pub runners: Vec<warm::Runner>,
    /// Chains an op has stopped: their later requests are answered without running.
    stopped_chains: std::collections::HashSet<u64>,
    /// The digest of what `WriteChunk` appended to each staging file so far, and how
    /// many bytes: the upload is checked without reading it back.
    pub staged_digests: std::collections::HashMap<u64, (crate::sha256::Sha256, u64)>,
    /// The delta encodings `EncodeDelta` keeps open between its requests.
    pub encodings: encode::Encodings,
    /// The protocol input, polled while a child runs (`None` in unit tests).
    pub input: Option<crate::input::Input>,
    /// The request's `timeout_ms`, given to each of its ops.
    timeout: Option<std::time::Duration>,
    /// When the op running now must be stopped.
    pub deadline: Option<std::time::Instant>,
}

impl Agent {
    pub fn new(home: String, umask: u32, uid: u32, gid: u32) -> Self {
        Agent {
            home,
            umask,
            pid: std::process::id(),
            uid,
            gid,
            temp_seq: 0,
            staging_dir: None,
            names: Names::default(),
            runners: Vec::new(),
            stopped_chains: std::collections::HashSet::new(),
            staged_digests: std::collections::HashMap::new(),
            encodings: encode::Encodings::default(),
            input: None,
            timeout: None,
            deadline: None,
        }
    }

    /// Whether the agent must stop what it runs and exit (see `Input::stopping`).
    pub fn stopping(&self) -> bool {
        match &self.input {
            Some(input) => input.stopping(),
            None => crate::sys::stop_requested(),
        }
    }

    pub fn handle(&mut self, request: Request) -> OpResult {
        let flags = Flags {
            check: request.check,
            diff: request.diff,
        };
        let chain = request.chain;
        self.timeout = request.timeout_ms.map(std::time::Duration::from_millis);
        if chain != 0 && self.stopped_chains.contains(&chain) {
            return OpResult::ChainSkipped;
        }
        let result = self.run(request.op, flags);
        self.deadline = None;
        if chain != 0 && result.stops_chain() {
            self.stopped_chains.insert(chain);
        }
        result
    }

    fn run(&mut self, op: Op, flags: Flags) -> OpResult {
        if self.stopping() {
            // Cancelled: what is left of a batch is not started; nobody reads the reply.
            return OpResult::ChainSkipped;
        }
        if !matches!(op, Op::Batch(_)) {
            self.deadline = self.timeout.map(|t| std::time::Instant::now() + t);
        }
        let result = match op {
            Op::Stat {
                path,
                checksum,
                follow,
            } => stat::stat(self, &path, checksum, follow),
            Op::EnsureFile(spec) => file::ensure_file(self, spec, flags),
            Op::EnsurePath(spec) => path::ensure_path(self, spec, flags),
            Op::WriteChunk { upload_id, data } => file::write_chunk(self, upload_id, &data),
            Op::Exec(spec) => exec::exec(self, spec, flags),
            Op::Facts { subsets } => Ok(facts::facts(&subsets)),
            Op::Batch(ops) => Ok(OpResult::Batch(self.run_batch(ops, flags))),
            Op::ReadFile {
                path,
                offset,
                limit,
            } => read::read_file(self, &path, offset, limit),
            Op::ListTree {
                path,
                max_depth,
                follow,
                checksum,
            } => tree::list_tree(self, &path, max_depth, follow, checksum),
            Op::Rename { from, to } => rename::rename(self, &from, &to, flags),
            Op::SetTimes {
                path,
                mtime,
                mtime_nsec,
            } => times::set_times(self, &path, mtime, mtime_nsec, flags),
            Op::RunModule(spec) => module::run_module(self, spec),
            Op::StartJob(spec) => job::start_job(self, spec, flags),
            Op::BlockSignatures { path, block_size } => {
                delta::block_signatures(self, &path, block_size)
            }
            Op::WriteDelta {
                upload_id,
                basis,
                instructions,
            } => delta::write_delta(self, upload_id, &basis, &instructions),
            Op::EncodeDelta(request) => encode::encode_delta(self, request),
        };
        result.unwrap_or_else(OpResult::Error)
    }

    /// A batch's ops in order; consecutive `RunModule` ops (a loop's items) run
    /// together, so that their warm runner gets them in one exchange.
    fn run_batch(&mut self, ops: Vec<Op>, flags: Flags) -> Vec<OpResult> {
        let mut results = Vec::with_capacity(ops.len());
        let mut ops = ops.into_iter().peekable();
        while let Some(op) = ops.next() {
            let Op::RunModule(spec) = op else {
                results.push(self.run(op, flags));
                continue;
            };
            let mut specs = vec![spec];
            while let Some(Op::RunModule(_)) = ops.peek() {
                if let Some(Op::RunModule(spec)) = ops.next() {
                    specs.push(spec);
                }
            }
            if self.stopping() {
                results.extend(specs.iter().map(|_| OpResult::ChainSkipped));
                continue;
            }
            results.extend(
                module::run_modules(self, specs)
                    .into_iter()
                    .map(|r| r.unwrap_or_else(OpResult::Error)),
            );
        }
        results
    }

    /// The request's `timeout_ms`, which each of its ops gets in full.
    pub fn op_timeout(&self) -> Option<std::time::Duration> {
        self.timeout
    }

    /// `~` and `~/x` mean the agent user's home, `~user` and `~user/x` that user's (as a
    /// module's `os.path.expanduser` on the target); everything else is taken as given.
    pub fn expand(&self, path: &str) -> PathBuf {
        PathBuf::from(crate::users::expand_tilde(path, &self.home))
    }

    /// Mode of a file or directory created without an explicit mode.
    pub fn default_mode(&self, is_dir: bool) -> u32 {
        let base = if is_dir { 0o777 } else { 0o666 };
        base & !self.umask
    }

    /// A name for a temp file next to `path`, unique within this process.
    pub fn temp_path(&mut self, path: &Path) -> PathBuf {
        self.temp_seq += 1;
        let base = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = format!(".{base}.turbo-tmp-{}-{}", self.pid, self.temp_seq);
        path.with_file_name(name)
    }

    /// Where uploads are staged: private to the user, created on first use.
    pub fn staging_dir(&mut self) -> Result<PathBuf, OpError> {
        if let Some(dir) = &self.staging_dir {
            return Ok(dir.clone());
        }
        let dir = self.expand("~/.cache/turbo-play/staging");
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(|e| io_error(e, &dir))?;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io_error(e, &dir))?;
        self.staging_dir = Some(dir.clone());
        Ok(dir)
    }

    pub fn staged_path(&mut self, upload_id: u64) -> Result<PathBuf, OpError> {
        Ok(self
            .staging_dir()?
            .join(format!("upload-{}-{upload_id}", self.pid)))
    }

    /// Removes what this process staged and never used (end of session).
    pub fn clean_staging(&self) {
        let Some(dir) = &self.staging_dir else { return };
        let prefix = format!("upload-{}-", self.pid);
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }

    /// The result shape of every file op, from the path's current metadata.
    pub fn outcome(&mut self, path: &Path, meta: &Metadata, changed: bool) -> FileOutcome {
        FileOutcome {
            changed,
            path: path.to_string_lossy().into_owned(),
            kind: kind_of(meta),
            mode: meta.mode() & 0o7777,
            size: meta.size(),
            uid: meta.uid(),
            gid: meta.gid(),
            owner: self.names.user(meta.uid()),
            group: self.names.group(meta.gid()),
            diff: None,
            backup_file: None,
        }
    }

    /// `owner`/`group` arguments as ids, with Ansible's words when a name is unknown.
    pub fn wanted_ids(&mut self, wanted: &Ownership) -> Result<WantedIds, OpError> {
        let uid = match &wanted.user {
            Some(user) => Some(self.names.uid_of(user).ok_or_else(|| {
                op_error(
                    ErrorKind::NotFound,
                    format!("chown failed: failed to look up user {user}"),
                )
            })?),
            None => None,
        };
        let gid = match &wanted.group {
            Some(group) => Some(self.names.gid_of(group).ok_or_else(|| {
                op_error(
                    ErrorKind::NotFound,
                    format!("chgrp failed: failed to look up group {group}"),
                )
            })?),
            None => None,
        };
        Ok(WantedIds { uid, gid })
    }

    /// Gives `outcome` the ids it would have after `ids` (check mode's prediction).
    pub fn predict_ids(&mut self, outcome: &mut FileOutcome, ids: WantedIds) {
        if let Some(uid) = ids.uid {
            outcome.uid = uid;
            outcome.owner = self.names.user(uid);
        }
        if let Some(gid) = ids.gid {
            outcome.gid = gid;
            outcome.group = self.names.group(gid);
        }
    }

    /// The result of an op that did not (or in check mode, would) produce `kind`.
    pub fn predicted_outcome(
        &mut self,
        path: &Path,
        kind: FileKind,
        mode: u32,
        size: u64,
        changed: bool,
    ) -> FileOutcome {
        let (uid, gid) = (self.uid, self.gid);
        FileOutcome {
            changed,
            path: path.to_string_lossy().into_owned(),
            kind,
            mode,
            size,
            uid,
            gid,
            owner: self.names.user(uid),
            group: self.names.group(gid),
            diff: None,
            backup_file: None,
        }
    }
}

pub fn kind_of(meta: &Metadata) -> FileKind {
    let t = meta.file_type();
    if t.is_symlink() {
        FileKind::Symlink
    } else if t.is_dir() {
        FileKind::Directory
    } else if t.is_file() {
        FileKind::File
    } else {
        FileKind::Other
    }
}

/// An io::Error about `path`, in the reply's terms: "<error>: <path>".
pub fn io_error(e: io::Error, path: &Path) -> OpError {
    let kind = match e.kind() {
        io::ErrorKind::NotFound => ErrorKind::NotFound,
        io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => ErrorKind::InvalidArgument,
        _ => ErrorKind::Io,
    };
    OpError {
        kind,
        message: format!("{e}: {}", path.display()),
    }
}

pub fn op_error(kind: ErrorKind, message: impl Into<String>) -> OpError {
    OpError {
        kind,
        message: message.into(),
    }
}

/// lstat that maps "missing" to None instead of an error.
pub fn lstat(path: &Path) -> Result<Option<Metadata>, OpError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(e, path)),
    }
}

/// stat (following symlinks) that maps "missing", dangling links included, to None.
pub fn stat_follow(path: &Path) -> Result<Option<Metadata>, OpError> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(e, path)),
    }
}

/// Resolved `owner`/`group`; `None` leaves that id alone.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WantedIds {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
}

impl WantedIds {
    pub fn is_empty(&self) -> bool {
        self.uid.is_none() && self.gid.is_none()
    }

    /// Whether a path with `meta` needs a chown to match.
    pub fn differ(&self, meta: &Metadata) -> bool {
        self.uid.is_some_and(|u| u != meta.uid()) || self.gid.is_some_and(|g| g != meta.gid())
    }
}

/// Makes `path` (the link itself when `follow` is false) have `ids`; true when it changed.
pub fn apply_ids(
    path: &Path,
    meta: &Metadata,
    ids: WantedIds,
    follow: bool,
    check: bool,
) -> Result<bool, OpError> {
    if !ids.differ(meta) {
        return Ok(false);
    }
    if !check {
        let done = if follow {
            std::os::unix::fs::chown(path, ids.uid, ids.gid)
        } else {
            std::os::unix::fs::lchown(path, ids.uid, ids.gid)
        };
        done.map_err(|e| {
            let mut err = io_error(e, path);
            err.message = format!("chown failed: {}", err.message);
            err
        })?;
    }
    Ok(true)
}

pub fn chmod(path: &Path, mode: u32) -> Result<(), OpError> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| io_error(e, path))
}

/// Diff text for a content change: both sides must be UTF-8 and under 1 MiB.
pub fn text_diff(before: &[u8], after: &[u8]) -> Option<(String, String)> {
    const LIMIT: usize = 1 << 20;
    if before.len() >= LIMIT || after.len() >= LIMIT {
        return None;
    }
    Some((
        String::from_utf8(before.to_vec()).ok()?,
        String::from_utf8(after.to_vec()).ok()?,
    ))
}

#[cfg(test)]
pub mod testutil {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::Agent;

    /// A fresh directory under the system temp dir, removed on drop.
    pub struct TempDir(PathBuf);

    impl TempDir {
        pub fn new() -> Self {
            static SEQ: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "turbo-agent-test-{}-{}",
                std::process::id(),
                SEQ.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        pub fn path(&self) -> &Path {
            &self.0
        }

        pub fn join(&self, name: &str) -> PathBuf {
            self.0.join(name)
        }

        pub fn str(&self, name: &str) -> String {
            self.join(name).to_string_lossy().into_owned()
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// An agent whose home is `home`, with umask 022 whatever the test runner's is.
    pub fn agent(home: &Path) -> Agent {
        Agent::new(
            home.to_string_lossy().into_owned(),
            0o022,
            crate::sys::effective_uid(),
            crate::sys::effective_gid(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    #[test]
    fn tilde_means_home() {
        let a = agent(Path::new("/home/u"));
        assert_eq!(a.expand("~"), PathBuf::from("/home/u"));
        assert_eq!(a.expand("~/x/y"), PathBuf::from("/home/u/x/y"));
        assert_eq!(a.expand("~root/x"), PathBuf::from("/root/x"));
        assert_eq!(a.expand("~root"), PathBuf::from("/root"));
        assert_eq!(
            a.expand("~no-such-user-here/x"),
            PathBuf::from("~no-such-user-here/x")
        );
        assert_eq!(a.expand("/etc/x"), PathBuf::from("/etc/x"));
    }

    #[test]
    fn temp_names_sit_next_to_the_file_and_differ() {
        let mut a = agent(Path::new("/h"));
        let one = a.temp_path(Path::new("/d/f.txt"));
        let two = a.temp_path(Path::new("/d/f.txt"));
        assert_ne!(one, two);
        assert_eq!(one.parent(), Some(Path::new("/d")));
        let name = one.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            name.starts_with(&format!(".f.txt.turbo-tmp-{}-", a.pid)),
            "{name}"
        );
    }

    #[test]
    fn io_errors_keep_kind_and_path() {
        let e = io_error(
            io::Error::from(io::ErrorKind::PermissionDenied),
            Path::new("/etc/shadow"),
        );
        assert_eq!(e.kind, ErrorKind::PermissionDenied);
        assert!(e.message.ends_with(": /etc/shadow"), "{}", e.message);
    }

    #[test]
    fn a_stopped_chain_skips_its_later_requests_and_no_other_chain() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let exec = |cmd: &str| {
            Op::Exec(turbo_proto::Exec {
                command: turbo_proto::Command::Argv(vec![
                    "/bin/sh".into(),
                    "-c".into(),
                    cmd.into(),
                ]),
                chdir: None,
                creates: None,
                removes: None,
                env: vec![],
                stdin: None,
                umask: None,
            })
        };
        let marker = dir.join("ran");
        let request = |chain, op| Request {
            id: 1,
            check: false,
            diff: false,
            chain,
            timeout_ms: None,
            op,
        };
        let ok = a.handle(request(5, exec("true")));
        assert!(matches!(ok, OpResult::Exec(ref e) if e.rc == 0), "{ok:?}");
        let failed = a.handle(request(5, exec("exit 3")));
        assert!(
            matches!(failed, OpResult::Exec(ref e) if e.rc == 3),
            "{failed:?}"
        );
        let touch = format!("touch {}", marker.display());
        assert_eq!(a.handle(request(5, exec(&touch))), OpResult::ChainSkipped);
        assert!(!marker.exists());
        // Another chain, and requests outside any chain, still run.
        assert!(matches!(
            a.handle(request(0, exec("exit 1"))),
            OpResult::Exec(_)
        ));
        assert!(matches!(
            a.handle(request(0, exec("true"))),
            OpResult::Exec(_)
        ));
        assert!(matches!(
            a.handle(request(6, exec(&touch))),
            OpResult::Exec(_)
        ));
        assert!(marker.exists());
    }

    #[test]
    fn batch_keeps_going_after_a_failure() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let result = a.handle(Request {
            id: 1,
            check: false,
            diff: false,
            chain: 0,
            timeout_ms: None,
            op: Op::Batch(vec![
                Op::Stat {
                    path: dir.str("missing/deeper"),
                    checksum: None,
                    follow: false,
                },
                Op::EnsureFile(turbo_proto::EnsureFile {
                    path: dir.str("nodir/file"),
                    content: turbo_proto::FileContent::Inline(b"x".to_vec()),
                    mode: None,
                    force: true,
                    owner: Default::default(),
                    validate: None,
                    backup: false,
                }),
                Op::Batch(vec![Op::Stat {
                    path: "~".into(),
                    checksum: None,
                    follow: true,
                }]),
            ]),
        });
        let OpResult::Batch(results) = result else {
            panic!("{result:?}")
        };
        assert_eq!(results.len(), 3);
        assert!(matches!(&results[0], OpResult::Stat(s) if !s.exists));
        assert!(matches!(&results[1], OpResult::Error(e) if e.kind == ErrorKind::NotFound));
        let OpResult::Batch(inner) = &results[2] else {
            panic!()
        };
        assert!(matches!(&inner[0], OpResult::Stat(s) if s.kind == FileKind::Directory));
    }
}
