//! What lineinfile, blockinfile and replace share: read the whole file as text first (page
//! by page), then write the edited text atomically with backup, validate, mode and owner,
//! and tell the module what happened to the file's attributes, as Ansible's
//! `check_file_attrs` does.
//!
//! A loop's items of these modules run one after another (the executor sends the items of
//! a step-planning module in order), so each reads what the one before wrote, as Ansible.

use serde_json::{Map, Value, json};
use turbo_proto::{
    EnsureFile, EnsurePath, FileContent, FileKind, FileMode, FileOutcome, Op, OpResult, Ownership,
    PathState, StatInfo,
};

use super::{Args, ModuleError, Next, Plan, TaskOutcome, mode_string, ownership, parse_mode};

/// The file as it was before the edit.
pub(super) struct Current {
    /// The path with `~` expanded, as Ansible's messages name it.
    pub path: String,
    /// Where a write goes: a symlink's target, as Ansible writes `os.path.realpath(path)`.
    pub write_path: String,
    /// The file itself (a final symlink followed); `kind` is `Missing` when there is none.
    pub stat: StatInfo,
    pub bytes: Vec<u8>,
}

impl Current {
    pub fn exists(&self) -> bool {
        self.stat.kind != FileKind::Missing
    }

    pub fn is_dir(&self) -> bool {
        self.stat.kind == FileKind::Directory
    }
}

type Then = Box<dyn FnOnce(Current) -> Result<Plan, ModuleError> + Send + Sync>;

/// Reads all of `path` (one round trip for up to 8 MiB, one more per further 8 MiB), then
/// plans the rest with `then`. The first request also lstats the path, to find where a
/// symlink points.
pub(super) fn read(
    path: &str,
    then: impl FnOnce(Current) -> Result<Plan, ModuleError> + Send + Sync + 'static,
) -> Plan {
    let then: Then = Box::new(then);
    let first = Op::Batch(vec![
        Op::Stat {
            path: path.to_string(),
            checksum: None,
            follow: false,
        },
        Op::ReadFile {
            path: path.to_string(),
            offset: 0,
            limit: None,
        },
    ]);
    let touched = path.to_string();
    Plan::Step(
        first,
        Next::new(move |reply| {
            let (link, read) = match reply {
                OpResult::Batch(mut replies) if replies.len() == 2 => {
                    let read = replies.pop().expect("two replies");
                    (replies.pop().expect("two replies"), read)
                }
                other => return Ok(Plan::Done(agent_failure(other))),
            };
            let link = match link {
                OpResult::Stat(s) => s,
                other => return Ok(Plan::Done(agent_failure(other))),
            };
            let OpResult::Read(read) = read else {
                return Ok(Plan::Done(agent_failure(read)));
            };
            let write_path = match (link.kind, link.lnk_source) {
                (FileKind::Symlink, Some(target)) => target,
                _ => read.stat.path.clone(),
            };
            let current = Current {
                path: read.stat.path.clone(),
                write_path,
                stat: read.stat,
                bytes: read.data,
            };
            if read.eof {
                then(current)
            } else {
                Ok(read_more(current, then))
            }
        })
        .touching(touched),
    )
}

fn read_more(current: Current, then: Then) -> Plan {
    let op = Op::ReadFile {
        path: current.path.clone(),
        offset: current.bytes.len() as u64,
        limit: None,
    };
    Plan::Step(
        op,
        Next::new(move |reply| {
            let OpResult::Read(read) = reply else {
                return Ok(Plan::Done(agent_failure(reply)));
            };
            let mut current = current;
            current.bytes.extend_from_slice(&read.data);
            if read.eof {
                then(current)
            } else {
                Ok(read_more(current, then))
            }
        }),
    )
}

/// A reply that is not what was asked for: the agent's error, or an internal one.
pub(super) fn agent_failure(reply: OpResult) -> TaskOutcome {
    super::unexpected("text file edit", reply)
}

/// The file's bytes as Python's `open(path, 'r', encoding='utf-8')` reads them: strict
/// UTF-8, and with `universal` newlines (the default `newline=None`) `\r\n` and `\r` both
/// read as `\n`.
pub(super) fn decode(bytes: &[u8], universal: bool) -> Result<String, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        let why = match e.error_len() {
            None => "unexpected end of data",
            Some(_) if (0xc2..=0xf4).contains(&bytes[at]) => "invalid continuation byte",
            Some(_) => "invalid start byte",
        };
        format!(
            "'utf-8' codec can't decode byte 0x{:02x} in position {at}: {why}",
            bytes[at]
        )
    })?;
    if !universal || !text.contains('\r') {
        return Ok(text.to_string());
    }
    Ok(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// The `encoding` argument: only UTF-8 (in any of Python's spellings of it) for now.
pub(super) fn check_encoding(args: &Args, module: &str) -> Result<(), ModuleError> {
    let encoding = args.str("encoding").unwrap_or("utf-8");
    let normal = encoding.to_ascii_lowercase().replace(['-', '_'], "");
    if normal == "utf8" {
        Ok(())
    } else {
        Err(ModuleError::Invalid(format!(
            "turbo-play's {module} reads and writes only utf-8 files yet, not encoding '{encoding}'; remove it or run this task with ansible-playbook"
        )))
    }
}

/// Each line of `text` as Python's `str.splitlines()` cuts it: where its content ends and
/// where its line ending (any of `\n`, `\r\n`, `\r`, `\v`, `\f`, `\x1c`, `\x1d`, `\x1e`,
/// `\x85`, U+2028 and U+2029; none on a last line without one) ends.
fn python_line_bounds(text: &str) -> Vec<(usize, usize, usize)> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let end = match c {
            '\r' => match chars.peek() {
                Some((_, '\n')) => {
                    chars.next();
                    i + 2
                }
                _ => i + 1,
            },
            '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}'
            | '\u{2029}' => i + c.len_utf8(),
            _ => continue,
        };
        lines.push((start, i, end));
        start = end;
    }
    if start < text.len() {
        lines.push((start, text.len(), text.len()));
    }
    lines
}

/// Python's `str.splitlines(keepends=True)`: every line keeps its own ending.
pub(super) fn split_lines_keep(text: &str) -> Vec<String> {
    python_line_bounds(text)
        .into_iter()
        .map(|(start, _, end)| text[start..end].to_string())
        .collect()
}

/// Python's `str.splitlines()`: every line without its ending (a command's
/// `stdout_lines`, a crontab's lines).
pub(super) fn split_lines(text: &str) -> Vec<&str> {
    python_line_bounds(text)
        .into_iter()
        .map(|(start, content_end, _)| &text[start..content_end])
        .collect()
}

/// Python's `str.splitlines(True)` lines after `readlines()` on text whose newlines are
/// all `\n` (what a universal-newline read gives): every line ends at a `\n`.
pub(super) fn read_lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

/// A pattern searched in one line at a time, with Python's `$`: without MULTILINE it also
/// matches just before a final `\n`, which the `regex` crate's `$` does not. A line holds
/// at most that one `\n`, so the crate's multi-line `$` is exactly Python's there.
pub(super) fn line_pattern(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    let mut class_start = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                if let Some(next) = chars.next() {
                    out.push(next);
                }
                class_start = false;
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push(c);
                if chars.peek() == Some(&'^') {
                    out.push(chars.next().expect("peeked"));
                }
                continue;
            }
            ']' if in_class && !class_start => in_class = false,
            '$' if !in_class => {
                out.push_str("(?m:$)");
                continue;
            }
            _ => {}
        }
        class_start = false;
        out.push(c);
    }
    out
}

/// Whether a pattern turns on MULTILINE itself (`(?m)` among its leading global flags),
/// as Python's `re.compile(p).flags & re.MULTILINE` tells.
pub(super) fn sets_multiline(pattern: &str) -> bool {
    let mut rest = pattern;
    while let Some(group) = rest.strip_prefix("(?") {
        let Some(end) = group.find(')') else {
            return false;
        };
        let flags = &group[..end];
        if flags.is_empty() || !flags.chars().all(|c| "aiLmsux".contains(c)) {
            return false;
        }
        if flags.contains('m') {
            return true;
        }
        rest = &group[end + 1..];
    }
    false
}

/// How the edited text is to be written, from the module's arguments.
pub(super) struct WriteOpts {
    pub mode: Option<FileMode>,
    pub owner: Ownership,
    pub backup: bool,
    /// The validate command as written; checked only when there is something to write,
    /// as Ansible does.
    pub validate: Option<String>,
    pub check: bool,
}

impl WriteOpts {
    pub fn of(args: &Args, check: bool) -> Result<WriteOpts, ModuleError> {
        Ok(WriteOpts {
            mode: parse_mode(args.raw("mode").unwrap_or(&Value::Null))?,
            owner: ownership(args),
            backup: args.bool("backup"),
            validate: args.str("validate").map(str::to_string),
            check,
        })
    }

    fn has_attrs(&self) -> bool {
        self.mode.is_some() || self.owner.user.is_some() || self.owner.group.is_some()
    }

    /// The validate command as words (`%s` the new content's path).
    fn validate_words(&self) -> Result<Option<Vec<String>>, String> {
        let Some(command) = &self.validate else {
            return Ok(None);
        };
        if !command.contains("%s") {
            return Err(format!("validate must contain %s: {command}"));
        }
        crate::shell_words::split(command).map(Some)
    }
}

/// What writing did, for the module's result.
#[derive(Debug, Default)]
pub(super) struct Written {
    /// Mode or owner changed (Ansible's "ownership, perms or SE linux context changed").
    pub attrs_changed: bool,
    /// Ansible's `(file attributes)` diff: what changed, before and after.
    pub attrs_before: Map<String, Value>,
    pub attrs_after: Map<String, Value>,
    pub backup_file: Option<String>,
    /// Check mode on a file that is not there: Ansible returns before it looks at
    /// attributes, with the content diff alone (not in a list).
    pub missing_in_check: bool,
}

type Done = Box<dyn FnOnce(Written) -> TaskOutcome + Send + Sync>;

/// Writes `new_bytes` over the file (when `Some`: the content changed), or only checks its
/// attributes, then builds the result with `done`. A file that was not there is created
/// with its parent directories.
pub(super) fn write(
    current: &Current,
    new_bytes: Option<Vec<u8>>,
    opts: WriteOpts,
    done: impl FnOnce(Written) -> TaskOutcome + Send + Sync + 'static,
) -> Plan {
    let done: Done = Box::new(done);
    if opts.check {
        if !current.exists() {
            return Plan::Done(done(Written {
                missing_in_check: true,
                ..Written::default()
            }));
        }
        return attrs_then(
            current.write_path.clone(),
            &opts,
            before_of(&current.stat),
            done,
        );
    }
    let Some(bytes) = new_bytes else {
        if !current.exists() {
            return Plan::Done(done(Written::default()));
        }
        return attrs_then(
            current.write_path.clone(),
            &opts,
            before_of(&current.stat),
            done,
        );
    };
    let existed = current.exists();
    let validate = match opts.validate_words() {
        Ok(words) => words,
        Err(message) => return Plan::Done(TaskOutcome::failed(message)),
    };
    let file = Op::EnsureFile(EnsureFile {
        path: current.write_path.clone(),
        content: FileContent::Inline(bytes),
        // A new file gets its attributes after it exists, so that what changed is known
        // against the mode it was created with, as Ansible compares.
        mode: if existed { opts.mode.clone() } else { None },
        owner: if existed {
            opts.owner.clone()
        } else {
            Ownership::default()
        },
        force: true,
        validate,
        backup: opts.backup,
    });
    let parent = parent_dir(&current.write_path);
    let (op, creates_parent) = match parent.filter(|_| !existed) {
        Some(dir) => (
            Op::Batch(vec![
                Op::EnsurePath(EnsurePath {
                    path: dir,
                    state: PathState::Directory,
                    mode: None,
                    recurse_parents: true,
                    owner: Ownership::default(),
                }),
                file,
            ]),
            true,
        ),
        None => (file, false),
    };
    let before = before_of(&current.stat);
    let path = current.write_path.clone();
    Plan::Step(
        op,
        Next::new(move |reply| {
            let reply = match reply {
                OpResult::Batch(mut replies) if creates_parent && replies.len() == 2 => {
                    let file = replies.pop().expect("two replies");
                    match replies.pop().expect("two replies") {
                        OpResult::Error(e) => OpResult::Error(e),
                        _ => file,
                    }
                }
                other => other,
            };
            let outcome = match reply {
                OpResult::File(outcome) => outcome,
                OpResult::Error(e) => {
                    return Ok(Plan::Done(TaskOutcome::failed(validate_message(e.message))));
                }
                other => return Ok(Plan::Done(agent_failure(other))),
            };
            if !existed {
                let created = before_of_outcome(&outcome);
                let backup_file = outcome.backup_file.clone();
                return Ok(attrs_then_with(path, &opts, created, backup_file, done));
            }
            let mut written = compare(&before, &before_of_outcome(&outcome), &opts);
            written.backup_file = outcome.backup_file;
            Ok(Plan::Done(done(written)))
        }),
    )
}

/// The agent's word for a validate command that refused the content
/// (`failed to validate: CMD exited with RC: DETAIL`) in these modules' own words:
/// `failed to validate: rc:RC error:STDERR`.
fn validate_message(message: String) -> String {
    let Some(rest) = message.strip_prefix("failed to validate: ") else {
        return message;
    };
    let Some((_, outcome)) = rest.rsplit_once(" exited with ") else {
        return message;
    };
    let (rc, detail) = outcome.split_once(": ").unwrap_or((outcome, ""));
    if rc.parse::<i32>().is_err() {
        return message;
    }
    format!("failed to validate: rc:{rc} error:{detail}")
}

/// The attributes Ansible compares: permission bits, uid and gid.
#[derive(Debug, Clone, Copy)]
struct Attrs {
    mode: u32,
    uid: u32,
    gid: u32,
}

fn before_of(stat: &StatInfo) -> Attrs {
    Attrs {
        mode: stat.mode & 0o7777,
        uid: stat.uid,
        gid: stat.gid,
    }
}

fn before_of_outcome(outcome: &FileOutcome) -> Attrs {
    Attrs {
        mode: outcome.mode & 0o7777,
        uid: outcome.uid,
        gid: outcome.gid,
    }
}

/// What changed between two sets of attributes, among those the task asked for.
fn compare(before: &Attrs, after: &Attrs, opts: &WriteOpts) -> Written {
    let mut written = Written::default();
    if opts.owner.user.is_some() && before.uid != after.uid {
        written
            .attrs_before
            .insert("owner".into(), json!(before.uid));
        written.attrs_after.insert("owner".into(), json!(after.uid));
    }
    if opts.owner.group.is_some() && before.gid != after.gid {
        written
            .attrs_before
            .insert("group".into(), json!(before.gid));
        written.attrs_after.insert("group".into(), json!(after.gid));
    }
    if opts.mode.is_some() && before.mode != after.mode {
        written
            .attrs_before
            .insert("mode".into(), json!(mode_string(before.mode)));
        written
            .attrs_after
            .insert("mode".into(), json!(mode_string(after.mode)));
    }
    written.attrs_changed = !written.attrs_after.is_empty();
    written
}

fn attrs_then(path: String, opts: &WriteOpts, before: Attrs, done: Done) -> Plan {
    attrs_then_with(path, opts, before, None, done)
}

/// Sets mode and owner on the (existing) file when the task asks for any, then finishes.
fn attrs_then_with(
    path: String,
    opts: &WriteOpts,
    before: Attrs,
    backup_file: Option<String>,
    done: Done,
) -> Plan {
    if !opts.has_attrs() {
        return Plan::Done(done(Written {
            backup_file,
            ..Written::default()
        }));
    }
    let op = Op::EnsurePath(EnsurePath {
        path,
        state: PathState::File,
        mode: opts.mode.clone(),
        recurse_parents: false,
        owner: opts.owner.clone(),
    });
    let asked = WriteOpts {
        mode: opts.mode.clone(),
        owner: opts.owner.clone(),
        backup: false,
        validate: None,
        check: opts.check,
    };
    Plan::Step(
        op,
        Next::new(move |reply| {
            let OpResult::File(outcome) = reply else {
                return Ok(Plan::Done(agent_failure(reply)));
            };
            let mut written = compare(&before, &before_of_outcome(&outcome), &asked);
            // The agent also knows a change it would make in check mode.
            written.attrs_changed |= outcome.changed;
            written.backup_file = backup_file;
            Ok(Plan::Done(done(written)))
        }),
    )
}

fn parent_dir(path: &str) -> Option<String> {
    let (dir, _) = path.rsplit_once('/')?;
    (!dir.is_empty() && dir != "~").then(|| dir.to_string())
}

/// Ansible's result for a check of the arguments or the path that failed: `msg`, and
/// `rc` when the module gives one.
pub(super) fn failed_with_rc(rc: i64, msg: String) -> TaskOutcome {
    let mut out = TaskOutcome::failed(msg);
    out.data.insert("rc".into(), json!(rc));
    out
}

/// Ansible's `" and ownership, perms or SE linux context changed"` suffix.
pub(super) fn with_attrs_message(changed: bool, msg: String, written: &Written) -> (bool, String) {
    if !written.attrs_changed {
        return (changed, msg);
    }
    let mut msg = msg;
    if changed {
        msg.push_str(" and ");
    }
    msg.push_str("ownership, perms or SE linux context changed");
    (true, msg)
}

/// The `[content, file attributes]` diff list lineinfile and blockinfile return.
pub(super) fn diff_list(content: Value, path: &str, written: &Written) -> Value {
    let mut attrs = Map::new();
    if written.attrs_changed && !written.attrs_after.is_empty() {
        attrs.insert("before".into(), Value::Object(written.attrs_before.clone()));
        attrs.insert("after".into(), Value::Object(written.attrs_after.clone()));
    }
    attrs.insert(
        "before_header".into(),
        json!(format!("{path} (file attributes)")),
    );
    attrs.insert(
        "after_header".into(),
        json!(format!("{path} (file attributes)")),
    );
    Value::Array(vec![content, Value::Object(attrs)])
}

/// A `(content)` diff with both headers, as lineinfile and blockinfile word them.
pub(super) fn content_diff(path: &str, before: &str, after: &str) -> Value {
    json!({
        "before": before,
        "after": after,
        "before_header": format!("{path} (content)"),
        "after_header": format!("{path} (content)"),
    })
}

/// A text module's outcome: changed or not, and Ansible's message.
pub(super) fn outcome(changed: bool, msg: String) -> TaskOutcome {
    TaskOutcome {
        changed,
        msg: Some(msg),
        ..TaskOutcome::default()
    }
}

#[cfg(test)]
pub(super) mod testing {
    //! A fake target for planner tests: files by path, every op the plan sends recorded,
    //! replies as the agent would give them.

    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU64, Ordering};

    use turbo_proto::{
        ErrorKind, FileKind, FileOutcome, FileRead, Op, OpError, OpResult, PathState, StatInfo,
    };

    use crate::modules::{Plan, TaskOutcome};

    static NEXT_ID: AtomicU64 = AtomicU64::new(1);

    pub struct FakeTarget {
        /// This target's inodes (one for all its files will do).
        id: u64,
        ctimes: BTreeMap<String, u64>,
        pub files: BTreeMap<String, Vec<u8>>,
        pub modes: BTreeMap<String, u32>,
        pub dirs: Vec<String>,
        /// Symlink path -> target path.
        pub links: BTreeMap<String, String>,
        pub check: bool,
        /// Bytes per ReadFile reply, to exercise paging.
        pub page: Option<usize>,
        pub sent: Vec<Op>,
    }

    impl Default for FakeTarget {
        fn default() -> FakeTarget {
            FakeTarget {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                ctimes: BTreeMap::new(),
                files: BTreeMap::new(),
                modes: BTreeMap::new(),
                dirs: Vec::new(),
                links: BTreeMap::new(),
                check: false,
                page: None,
                sent: Vec::new(),
            }
        }
    }

    impl FakeTarget {
        /// Plans `module` with `args` (in diff mode, check mode as the target says) and
        /// drives the plan against this target.
        pub fn run(
            &mut self,
            module: &dyn crate::modules::Module,
            args: serde_json::Value,
        ) -> Result<TaskOutcome, String> {
            let ctx = crate::modules::PlanContext {
                check_mode: self.check,
                diff: true,
                ..crate::modules::PlanContext::new(std::path::Path::new("/"))
            };
            let plan = crate::modules::try_plan(module, args, &ctx);
            self.drive(plan)
        }

        /// `module` run on a file `/f` holding `before`: the file after it and the task's
        /// (changed, msg); the task must not fail.
        pub fn edit(
            module: &dyn crate::modules::Module,
            before: &str,
            mut args: serde_json::Value,
        ) -> (String, bool, String) {
            let mut target = FakeTarget::with(&[("/f", before)]);
            args["path"] = serde_json::json!("/f");
            let out = target.run(module, args).unwrap();
            assert!(!out.failed, "{out:?}");
            (
                target.text("/f").unwrap(),
                out.changed,
                out.msg.unwrap_or_default(),
            )
        }
        pub fn with(files: &[(&str, &str)]) -> FakeTarget {
            FakeTarget {
                files: files
                    .iter()
                    .map(|(p, c)| (p.to_string(), c.as_bytes().to_vec()))
                    .collect(),
                ..FakeTarget::default()
            }
        }

        pub fn text(&self, path: &str) -> Option<String> {
            self.files
                .get(path)
                .map(|b| String::from_utf8(b.clone()).unwrap())
        }

        fn resolve(&self, path: &str) -> String {
            self.links
                .get(path)
                .cloned()
                .unwrap_or_else(|| path.to_string())
        }

        /// Each file its own inode and a new change time per write, as a real target has.
        fn touch(&mut self, path: &str) {
            self.ctimes
                .insert(path.to_string(), NEXT_ID.fetch_add(1, Ordering::Relaxed));
        }

        fn stat(&self, path: &str) -> StatInfo {
            let real = self.resolve(path);
            let kind = if self.dirs.contains(&real) {
                FileKind::Directory
            } else if self.files.contains_key(&real) {
                FileKind::File
            } else {
                return StatInfo::missing(path.to_string());
            };
            StatInfo {
                path: path.to_string(),
                exists: true,
                kind,
                mode: *self.modes.get(&real).unwrap_or(&0o644),
                size: self.files.get(&real).map_or(0, |b| b.len() as u64),
                inode: self.id,
                ctime: *self.ctimes.get(&real).unwrap_or(&0) as i64,
                ..StatInfo::default()
            }
        }

        fn file_outcome(&self, path: &str, changed: bool) -> OpResult {
            let st = self.stat(path);
            OpResult::File(FileOutcome {
                changed,
                path: path.to_string(),
                kind: st.kind,
                mode: st.mode,
                size: st.size,
                uid: 0,
                gid: 0,
                owner: "root".into(),
                group: "root".into(),
                diff: None,
                backup_file: None,
            })
        }

        /// The reply the agent would give to `op`.
        pub fn answer(&mut self, op: &Op) -> OpResult {
            match op {
                Op::Batch(ops) => OpResult::Batch(ops.iter().map(|o| self.answer(o)).collect()),
                Op::Stat { path, .. } => {
                    let mut st = self.stat(path);
                    if let Some(target) = self.links.get(path) {
                        st.kind = FileKind::Symlink;
                        st.lnk_source = Some(target.clone());
                    }
                    OpResult::Stat(st)
                }
                Op::ReadFile { path, offset, .. } => {
                    let stat = self.stat(path);
                    let all = self
                        .files
                        .get(&self.resolve(path))
                        .cloned()
                        .unwrap_or_default();
                    let start = (*offset as usize).min(all.len());
                    let end = self.page.map_or(all.len(), |p| (start + p).min(all.len()));
                    OpResult::Read(FileRead {
                        stat,
                        offset: *offset,
                        data: all[start..end].to_vec(),
                        eof: end == all.len(),
                    })
                }
                Op::EnsurePath(p) => match &p.state {
                    PathState::Directory => {
                        self.dirs.push(p.path.clone());
                        self.file_outcome(&p.path, false)
                    }
                    PathState::File => {
                        if !self.files.contains_key(&p.path) {
                            return OpResult::Error(OpError {
                                kind: ErrorKind::NotFound,
                                message: format!("file ({}) is absent, cannot continue", p.path),
                            });
                        }
                        let mut changed = false;
                        if let Some(turbo_proto::FileMode::Bits(bits)) = &p.mode {
                            changed = self.modes.get(&p.path).copied().unwrap_or(0o644) != *bits;
                            if !self.check {
                                self.modes.insert(p.path.clone(), *bits);
                            }
                        }
                        let mut out = self.file_outcome(&p.path, changed);
                        if let (OpResult::File(f), Some(turbo_proto::FileMode::Bits(bits))) =
                            (&mut out, &p.mode)
                        {
                            f.mode = *bits;
                        }
                        out
                    }
                    other => panic!("unexpected path state {other:?}"),
                },
                Op::EnsureFile(f) => {
                    let turbo_proto::FileContent::Inline(bytes) = &f.content else {
                        panic!("text edits write inline content");
                    };
                    let changed = self.files.get(&f.path) != Some(bytes);
                    let backup = (f.backup && changed && self.files.contains_key(&f.path))
                        .then(|| format!("{}.backup", f.path));
                    if let Some(b) = &backup {
                        let old = self.files[&f.path].clone();
                        self.files.insert(b.clone(), old);
                    }
                    if changed {
                        self.touch(&f.path);
                    }
                    self.files.insert(f.path.clone(), bytes.clone());
                    if let Some(turbo_proto::FileMode::Bits(bits)) = &f.mode {
                        self.modes.insert(f.path.clone(), *bits);
                    }
                    let mut out = self.file_outcome(&f.path, changed);
                    if let OpResult::File(o) = &mut out {
                        o.backup_file = backup;
                    }
                    out
                }
                other => panic!("unexpected op {other:?}"),
            }
        }

        /// Runs a plan to its end against this target.
        pub fn drive(&mut self, plan: Result<Plan, String>) -> Result<TaskOutcome, String> {
            let mut plan = plan?;
            loop {
                match plan {
                    Plan::Done(outcome) => return Ok(outcome),
                    Plan::Remote(op) => panic!("text edits finish in their steps, got {op:?}"),
                    Plan::Flow(_) => panic!("text edits send no flows"),
                    Plan::Step(op, next) => {
                        let reply = self.answer(&op);
                        self.sent.push(op);
                        plan = next.resume(reply).map_err(|e| e.to_string())?;
                    }
                }
            }
        }

        /// Whether any op sent writes the file.
        pub fn wrote(&self) -> bool {
            fn writes(op: &Op) -> bool {
                match op {
                    Op::EnsureFile(_) => true,
                    Op::Batch(ops) => ops.iter().any(writes),
                    _ => false,
                }
            }
            self.sent.iter().any(writes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_as_python() {
        assert_eq!(
            split_lines_keep("a\nb\r\nc\rd"),
            ["a\n", "b\r\n", "c\r", "d"]
        );
        assert_eq!(split_lines_keep("x\x0by\u{2028}"), ["x\x0b", "y\u{2028}"]);
        assert!(split_lines_keep("").is_empty());
        assert_eq!(read_lines("a\nb"), ["a\n", "b"]);
    }

    #[test]
    fn universal_newlines_and_strict_utf8() {
        assert_eq!(decode(b"a\r\nb\rc\n", true).unwrap(), "a\nb\nc\n");
        assert_eq!(decode(b"a\r\n", false).unwrap(), "a\r\n");
        assert_eq!(
            decode(b"ab\xff", true).unwrap_err(),
            "'utf-8' codec can't decode byte 0xff in position 2: invalid start byte"
        );
    }

    #[test]
    fn validate_failures_in_ansibles_words() {
        assert_eq!(
            validate_message("failed to validate: grep -q x /t/.f.tmp exited with 1".into()),
            "failed to validate: rc:1 error:"
        );
        assert_eq!(
            validate_message(
                "failed to validate: visudo -cf /t/x exited with 1: bad syntax".into()
            ),
            "failed to validate: rc:1 error:bad syntax"
        );
        assert_eq!(
            validate_message("failed to validate: cannot run nope: No such file".into()),
            "failed to validate: cannot run nope: No such file"
        );
        assert_eq!(
            validate_message("Permission denied".into()),
            "Permission denied"
        );
    }

    #[test]
    fn dollar_means_pythons_end_of_line() {
        assert_eq!(line_pattern("^a=1$"), "^a=1(?m:$)");
        assert_eq!(line_pattern(r"\$x[$]"), r"\$x[$]");
        assert_eq!(line_pattern(r"[]$]$"), r"[]$](?m:$)");
        assert!(sets_multiline("(?m)^x"));
        assert!(sets_multiline("(?i)(?m)^x"));
        assert!(!sets_multiline("(?i)x(?m)"));
        assert!(!sets_multiline("(?:m)"));
    }
}
