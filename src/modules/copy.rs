//! `copy`: make a file on the target hold `content`, or the bytes of a controller file.

use std::path::PathBuf;

use serde_json::{Value, json};
use sha1::Sha1;
use sha2::{Digest, Sha256};
use turbo_proto::{EnsureFile, FileContent, FileDiff, FileKind, FileMode, Op, OpResult, Ownership};

use super::copy_tree::{TreeSpec, tree_plan};
use super::spec::{Arg, Spec, Unknown};
use super::{
    Args, FileSource, Module, ModuleError, Plan, PlanContext, TaskOutcome, find_local_source,
    mode_string, ownership, parse_mode, read_local, read_local_decrypted, unexpected,
};
use crate::template::python_json;

/// Larger content goes as a digest first: an unchanged file then costs 32 bytes on the
/// wire, a changed one one more round trip. Below this size the round trip costs more
/// than sending the (compressed) bytes.
pub(super) const INLINE_LIMIT: usize = 64 << 10;

pub struct Copy;

pub(super) const SELINUX: &str = "SELinux contexts are not set by turbo-play's agent";
pub(super) const ATOMIC: &str = "the agent's writes are atomic renames either way";

/// The copy action's arguments: the copy module's (which name `ansible.legacy.copy` in
/// their messages) and `decrypt`, which the action takes first.
static SPEC: Spec = Spec::new(&[
    Arg::str("_original_basename").no_effect("Ansible's internal name of a copied file"),
    Arg::str("attributes").aliases(&["attr"]).not_yet(),
    Arg::bool("backup").default_bool(false),
    Arg::str("checksum").not_yet(),
    Arg::raw("content").no_log(),
    Arg::bool("decrypt").default_bool(true).action_only(),
    Arg::path("dest"),
    Arg::raw("directory_mode"),
    Arg::bool("follow").default_bool(false).not_yet(),
    Arg::bool("force").default_bool(true),
    Arg::str("group"),
    Arg::bool("local_follow").not_yet(),
    Arg::raw("mode"),
    Arg::str("owner"),
    Arg::bool("remote_src").default_bool(false),
    Arg::str("selevel").no_effect(SELINUX),
    Arg::str("serole").no_effect(SELINUX),
    Arg::str("setype").no_effect(SELINUX),
    Arg::str("seuser").no_effect(SELINUX),
    Arg::path("src"),
    Arg::bool("unsafe_writes")
        .default_bool(false)
        .no_effect(ATOMIC),
    Arg::str("validate"),
])
.unknown(Unknown::ModuleAs("ansible.legacy.copy"))
.no_log_values_unmasked();

impl Module for Copy {
    fn name(&self) -> &'static str {
        "copy"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let mode = parse_mode(args.raw("mode").unwrap_or(&Value::Null))?;
        let force = args.bool("force");
        if args.bool("remote_src") {
            return Err(ModuleError::NotSupported("copy with remote_src"));
        }
        let resolved = self.resolve(args, ctx)?;
        let file_into_dir = args.str("dest").is_some_and(|d| d.ends_with('/'))
            && !matches!(resolved, Resolved::Tree { .. });
        let op = match resolved {
            Resolved::File { dest, bytes } => {
                ensure_file_op(dest, bytes, mode, ownership(args), force)
            }
            Resolved::Large {
                dest, sha256, size, ..
            } => Op::EnsureFile(EnsureFile {
                path: dest,
                content: FileContent::Digest { sha256, size },
                mode,
                force,
                owner: ownership(args),
                validate: None,
                backup: false,
            }),
            Resolved::Tree { root, written_src } => {
                let dest = args.str("dest").unwrap_or_default();
                let spec = TreeSpec {
                    written_src: &written_src,
                    dest,
                    mode,
                    directory_mode: parse_mode(args.raw("directory_mode").unwrap_or(&Value::Null))?,
                    owner: ownership(args),
                    force,
                    decrypt: args.bool("decrypt"),
                };
                let finish = if ctx.check_mode {
                    would_change
                } else {
                    std::convert::identity
                };
                let shape = |op| with_validate(op, args);
                return tree_plan(&root, &spec, args.raw("src").cloned(), shape, finish);
            }
        };
        let op = with_validate(op, args)?;
        if file_into_dir {
            return parents_first(op, args, ctx.check_mode);
        }
        Ok(Plan::Remote(op))
    }

    fn content(&self, args: &Args, ctx: &PlanContext) -> Result<Option<FileSource>, ModuleError> {
        match self.resolve(args, ctx)? {
            Resolved::File { bytes, .. } => Ok(Some(FileSource::Bytes(bytes))),
            Resolved::Large { path, .. } => Ok(Some(FileSource::Local(path))),
            // A tree's plan sends the files the agent asks for itself.
            Resolved::Tree { .. } => Ok(None),
        }
    }

    fn finish_check(&self, args: &Args, result: OpResult) -> TaskOutcome {
        would_change(self.finish(args, result))
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        self.finish_at_home(args, result, "~")
    }

    fn finish_sent(
        &self,
        args: &Args,
        sent: &Op,
        result: OpResult,
        check: bool,
        home: &str,
    ) -> TaskOutcome {
        let content = inline_content(args);
        finish_sent_file(
            self.name(),
            args,
            sent,
            result,
            check,
            home,
            content.as_deref(),
        )
    }

    fn finish_at_home(&self, args: &Args, result: OpResult, home: &str) -> TaskOutcome {
        let content = inline_content(args);
        let checksum = content.as_deref().map(sha1_hex);
        let mut out = file_result(self.name(), args, result, checksum);
        if !out.failed {
            copy_module_keys(&mut out, content.as_deref(), home);
        }
        out
    }
}

/// The result of a copy or template that sent `sent` (its `content`, when the task's
/// arguments give it): the file's result with the copy action's keys, Ansible's `checksum`
/// of what was sent, and in check mode as a change that would be made.
pub(super) fn finish_sent_file(
    name: &str,
    args: &Args,
    sent: &Op,
    result: OpResult,
    check: bool,
    home: &str,
    content: Option<&[u8]>,
) -> TaskOutcome {
    let checksum = sent_checksum(sent).or_else(|| content.map(sha1_hex));
    let mut out = file_result(name, args, result, checksum);
    if !out.failed {
        let bytes = content.or_else(|| sent_bytes(sent));
        copy_module_keys(&mut out, bytes, if check { "~" } else { home });
    }
    if check { would_change(out) } else { out }
}

/// Ansible's `checksum` of what a copy or template sent (the SHA-1 of the source, or of
/// the rendered text): of the bytes of an inline `EnsureFile`, or, for a file planned by
/// its digest, as [`remember_checksum`] noted it when it was planned.
pub(super) fn sent_checksum(sent: &Op) -> Option<String> {
    let Op::EnsureFile(file) = sent else {
        return None;
    };
    match &file.content {
        FileContent::Inline(bytes) => Some(sha1_hex(bytes)),
        FileContent::Digest { sha256, .. } => CHECKSUMS
            .lock()
            .expect("checksums")
            .as_ref()
            .and_then(|known| known.get(sha256).cloned()),
        _ => None,
    }
}

/// The bytes an `EnsureFile` sent inline (what a copy or template wrote).
pub(super) fn sent_bytes(sent: &Op) -> Option<&[u8]> {
    match sent {
        Op::EnsureFile(file) => match &file.content {
            FileContent::Inline(bytes) => Some(bytes),
            _ => None,
        },
        _ => None,
    }
}

/// The SHA-1 of a file planned by its SHA-256, for [`sent_checksum`].
static CHECKSUMS: std::sync::Mutex<Option<std::collections::HashMap<[u8; 32], String>>> =
    std::sync::Mutex::new(None);

pub(super) fn remember_checksum(sha256: [u8; 32], sha1: String) {
    CHECKSUMS
        .lock()
        .expect("checksums")
        .get_or_insert_with(Default::default)
        .insert(sha256, sha1);
}

/// The keys that tell which of Ansible's modules wrote the result: a changed file is the
/// copy module's (`src` where the action staged the bytes, their `md5sum`), an unchanged
/// one the file module's (`path`, no `src`); the copy action's `diff` list is there in
/// both (empty unless diffs are asked for).
pub(super) fn copy_module_keys(out: &mut TaskOutcome, content: Option<&[u8]>, home: &str) {
    let Some(dest) = out
        .data
        .get("dest")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return;
    };
    out.data.remove("src");
    out.data.entry("diff").or_insert_with(|| json!([]));
    if out.changed {
        out.data
            .insert("src".into(), json!(staged_source(home, &dest)));
        if let Some(bytes) = content {
            out.data
                .insert("md5sum".into(), json!(format!("{:x}", md5::compute(bytes))));
        }
    } else {
        out.data.insert("path".into(), json!(dest));
    }
}

/// Where Ansible's copy action stages a file for its module:
/// `~/.ansible/tmp/ansible-tmp-TIME-PID-RANDOM/.source` and the destination's extension.
/// turbo-play's agent stages beside the destination and renames, so this names the
/// place the same run would have used under Ansible (a fresh name each time, as there).
fn staged_source(home: &str, dest: &str) -> String {
    use std::hash::{BuildHasher, RandomState};
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    let random = RandomState::new().hash_one(dest) & ((1 << 48) - 1);
    let suffix = std::path::Path::new(dest)
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    format!(
        "{}/.ansible/tmp/ansible-tmp-{now:.7}-{}-{random}/.source{suffix}",
        home.trim_end_matches('/'),
        std::process::id()
    )
}

/// What `copy` was asked to put where.
enum Resolved {
    File {
        dest: String,
        bytes: Vec<u8>,
    },
    /// A controller file too large to hold: planned by its digest, read as it is sent.
    Large {
        dest: String,
        path: PathBuf,
        sha256: [u8; 32],
        size: u64,
    },
    /// A directory on the controller (`src` as written decides contents vs itself).
    Tree {
        root: PathBuf,
        written_src: String,
    },
}

impl Copy {
    /// The destination path and the bytes it must hold.
    /// With the copy action's own checks, in its order and words.
    fn resolve(&self, args: &Args, ctx: &PlanContext) -> Result<Resolved, ModuleError> {
        let src = args
            .str("src")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let content = inline_content(args);
        if src.is_none() && content.is_none() {
            return Err(ModuleError::Invalid("src (or content) is required".into()));
        }
        let dest = args
            .str("dest")
            .filter(|d| !d.is_empty())
            .ok_or_else(|| ModuleError::Invalid("dest is required".into()))?
            .to_string();
        match (content, src) {
            (Some(_), Some(_)) => Err(ModuleError::Invalid(
                "src and content are mutually exclusive".into(),
            )),
            (None, None) => unreachable!("checked above"),
            (Some(bytes), None) => {
                if dest.ends_with('/') {
                    return Err(ModuleError::Invalid(
                        "can not use content with a dir as dest".into(),
                    ));
                }
                Ok(Resolved::File { dest, bytes })
            }
            (None, Some(src)) => {
                let path = find_local_source(&src, ctx, "files")?;
                if path.is_dir() {
                    return Ok(Resolved::Tree {
                        root: path,
                        written_src: src,
                    });
                }
                if let Some((sha256, size)) = large_plain_file(&path)? {
                    return Ok(Resolved::Large {
                        dest: dest_for_src(&dest, &src),
                        path,
                        sha256,
                        size,
                    });
                }
                let bytes = if args.bool("decrypt") {
                    read_local_decrypted(&path)?
                } else {
                    read_local(&path)?
                };
                Ok(Resolved::File {
                    dest: dest_for_src(&dest, &src),
                    bytes,
                })
            }
        }
    }
}

/// A file copied into a `dest` ending in `/`: Ansible's copy makes the missing
/// directories first (with `directory_mode`, else the umask's, and the file's owner),
/// then writes the file.
fn parents_first(op: Op, args: &Args, check_mode: bool) -> Result<Plan, ModuleError> {
    let Op::EnsureFile(file) = &op else {
        return Ok(Plan::Remote(op));
    };
    let dir = match file.path.trim_end_matches('/').rsplit_once('/') {
        Some(("", _)) | None => return Ok(Plan::Remote(op)),
        Some((dir, _)) => dir.to_string(),
    };
    let directory = Op::EnsurePath(turbo_proto::EnsurePath {
        path: dir,
        state: turbo_proto::PathState::Directory,
        mode: parse_mode(args.raw("directory_mode").unwrap_or(&Value::Null))?,
        recurse_parents: true,
        owner: ownership(args),
    });
    Ok(Plan::Step(
        directory,
        super::Next::new(move |reply| match reply {
            // In check mode the directory is not made, so neither can the file be: the
            // file is new, which is all the check reports.
            OpResult::File(made) if check_mode && made.changed => Ok(Plan::Done(TaskOutcome {
                changed: true,
                ..TaskOutcome::default()
            })),
            OpResult::File(_) => Ok(Plan::Remote(op)),
            other => Ok(Plan::Done(unexpected("copy", other))),
        }),
    ))
}

/// A controller file past [`INLINE_LIMIT`] that is not vault-encrypted (those are
/// decrypted in memory): its digest and size, computed without holding it.
fn large_plain_file(path: &std::path::Path) -> Result<Option<([u8; 32], u64)>, ModuleError> {
    use std::io::Read;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(None);
    };
    if !meta.is_file() || meta.len() <= INLINE_LIMIT as u64 {
        return Ok(None);
    }
    let mut head = [0u8; 14];
    let read = std::fs::File::open(path).and_then(|mut f| f.read(&mut head));
    if read.is_ok_and(|n| head[..n].starts_with(b"$ANSIBLE_VAULT")) {
        return Ok(None);
    }
    let (sha256, size, sha1) = super::local_digest_and_sha1(path)?;
    remember_checksum(sha256, sha1);
    Ok(Some((sha256, size)))
}

/// `content` as Ansible writes it: strings exactly, lists and mappings as Python's
/// `json.dumps`, other scalars as Python prints them.
fn inline_content(args: &Args) -> Option<Vec<u8>> {
    match args.raw("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_bytes().to_vec()),
        Some(v @ (Value::Array(_) | Value::Object(_))) => {
            Some(python_json(v, None, false).into_bytes())
        }
        Some(Value::Bool(b)) => Some(if *b { "True" } else { "False" }.as_bytes().to_vec()),
        Some(Value::Number(n)) => Some(n.to_string().into_bytes()),
    }
}

/// `backup`, and `validate`: the command that must accept the new content (at `%s`)
/// before it replaces the file, split into words as Ansible splits it (no shell).
pub(super) fn with_validate(op: Op, args: &Args) -> Result<Op, ModuleError> {
    let op = if args.bool("backup") {
        backing_up(op)
    } else {
        op
    };
    let Some(command) = args.str("validate") else {
        return Ok(op);
    };
    if !command.contains("%s") {
        return Err(ModuleError::Invalid(format!(
            "validate must contain %s: {command}"
        )));
    }
    let words = crate::shell_words::split(command).map_err(ModuleError::Invalid)?;
    Ok(validating(op, &words))
}

/// Every file op in `op` (a directory copy's batch holds many) keeps a backup of the file
/// it replaces.
fn backing_up(op: Op) -> Op {
    match op {
        Op::EnsureFile(file) => Op::EnsureFile(EnsureFile {
            backup: true,
            ..file
        }),
        Op::Batch(ops) => Op::Batch(ops.into_iter().map(backing_up).collect()),
        other => other,
    }
}

/// Every file op in `op` (a directory copy's batch holds many) checked by `words`.
fn validating(op: Op, words: &[String]) -> Op {
    match op {
        Op::EnsureFile(file) => Op::EnsureFile(EnsureFile {
            validate: Some(words.to_vec()),
            ..file
        }),
        Op::Batch(ops) => Op::Batch(ops.into_iter().map(|op| validating(op, words)).collect()),
        other => other,
    }
}

/// A `dest` ending in `/` is a directory: the file keeps the source's name.
pub(super) fn dest_for_src(dest: &str, src: &str) -> String {
    if dest.ends_with('/') {
        let name = src.rsplit('/').next().unwrap_or(src);
        format!("{dest}{name}")
    } else {
        dest.to_string()
    }
}

pub(super) fn ensure_file_op(
    path: String,
    bytes: Vec<u8>,
    mode: Option<FileMode>,
    owner: Ownership,
    force: bool,
) -> Op {
    let content = if bytes.len() <= INLINE_LIMIT {
        FileContent::Inline(bytes)
    } else {
        let sha256: [u8; 32] = Sha256::digest(&bytes).into();
        remember_checksum(sha256, sha1_hex(&bytes));
        FileContent::Digest {
            sha256,
            size: bytes.len() as u64,
        }
    };
    Op::EnsureFile(EnsureFile {
        path,
        content,
        mode,
        force,
        owner,
        validate: None,
        backup: false,
    })
}

pub(super) fn sha1_hex(bytes: &[u8]) -> String {
    Sha1::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// In check mode Ansible's copy and template (action plugins that stop before the
/// transfer) report a file they would change as only `changed` and the `diff` list; an
/// unchanged file keeps its full result.
pub(super) fn would_change(mut outcome: TaskOutcome) -> TaskOutcome {
    if outcome.changed && !outcome.failed {
        let diff = match outcome.data.remove("diff") {
            Some(Value::Array(list)) => list,
            Some(one) => vec![one],
            None => Vec::new(),
        };
        outcome.data = serde_json::Map::from_iter([("diff".to_string(), Value::Array(diff))]);
    }
    outcome
}

/// A content change as Ansible's `diff` result: a file that was not there has no
/// `before_header` (`--- before` in the output).
pub(super) fn diff_json(path: &str, diff: FileDiff) -> Value {
    let mut d = serde_json::Map::new();
    if diff.before.is_some() {
        d.insert("before_header".into(), json!(path));
    }
    d.insert("before".into(), json!(diff.before.unwrap_or_default()));
    d.insert("after_header".into(), json!(path));
    d.insert("after".into(), json!(diff.after));
    Value::Object(d)
}

/// The registered result of copy and template, in Ansible's shape.
pub(super) fn file_result(
    module: &str,
    args: &Args,
    result: OpResult,
    checksum: Option<String>,
) -> TaskOutcome {
    let OpResult::File(f) = result else {
        return unexpected(module, result);
    };
    let mut data = serde_json::Map::new();
    data.insert("dest".into(), json!(f.path));
    if let Some(src) = args.raw("src") {
        data.insert("src".into(), src.clone());
    }
    if let Some(sum) = checksum {
        data.insert("checksum".into(), json!(sum));
    }
    data.insert("mode".into(), json!(mode_string(f.mode)));
    data.insert("owner".into(), json!(f.owner));
    data.insert("group".into(), json!(f.group));
    data.insert("size".into(), json!(f.size));
    let state = if f.kind == FileKind::Directory {
        "directory"
    } else {
        "file"
    };
    data.insert("state".into(), json!(state));
    data.insert("uid".into(), json!(f.uid));
    data.insert("gid".into(), json!(f.gid));
    if let Some(backup) = f.backup_file {
        data.insert("backup_file".into(), json!(backup));
    }
    if let Some(diff) = f.diff {
        data.insert("diff".into(), diff_json(&f.path, diff));
    }
    TaskOutcome {
        changed: f.changed,
        data,
        ..TaskOutcome::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::find;
    use serde_json::json;
    use std::path::Path;
    use turbo_proto::{ErrorKind, FileOutcome, OpError};

    fn args(v: Value) -> Args {
        crate::modules::check(&Copy, v)
    }

    fn plan(a: Value, dir: &Path) -> Result<Plan, String> {
        crate::modules::try_plan(&Copy, a, &PlanContext::new(dir))
    }

    fn file_op(path: &str, bytes: &[u8], mode: Option<FileMode>, force: bool) -> Plan {
        Plan::Remote(Op::EnsureFile(EnsureFile {
            path: path.into(),
            content: FileContent::Inline(bytes.to_vec()),
            mode,
            force,
            owner: Ownership::default(),
            validate: None,
            backup: false,
        }))
    }

    #[test]
    fn check_mode_reports_a_change_as_ansibles_action_plugin_does() {
        let changed = TaskOutcome {
            changed: true,
            data: serde_json::Map::from_iter([
                ("dest".to_string(), json!("/x")),
                ("diff".to_string(), json!({"before": "a", "after": "b"})),
            ]),
            ..TaskOutcome::default()
        };
        let out = would_change(changed);
        assert!(out.changed);
        assert_eq!(
            Value::Object(out.data),
            json!({"diff": [{"before": "a", "after": "b"}]})
        );
        let same = TaskOutcome {
            data: serde_json::Map::from_iter([("dest".to_string(), json!("/x"))]),
            ..TaskOutcome::default()
        };
        assert_eq!(would_change(same.clone()), same);
    }

    #[test]
    fn owner_and_group_travel_with_the_file() {
        let planned = plan(
            json!({"content": "x", "dest": "/etc/x", "owner": "root", "group": 0}),
            Path::new("/nonexistent"),
        )
        .unwrap();
        let Plan::Remote(Op::EnsureFile(f)) = planned else {
            panic!("{planned:?}")
        };
        assert_eq!(
            f.owner,
            Ownership {
                user: Some("root".into()),
                group: Some("0".into()),
            }
        );
    }

    #[test]
    fn validate_travels_as_words_and_must_name_the_file() {
        let planned = plan(
            json!({"content": "x", "dest": "/etc/x", "validate": "/usr/sbin/visudo -cf '%s'"}),
            Path::new("/nonexistent"),
        )
        .unwrap();
        let Plan::Remote(Op::EnsureFile(f)) = planned else {
            panic!("{planned:?}")
        };
        assert_eq!(
            f.validate,
            Some(vec!["/usr/sbin/visudo".into(), "-cf".into(), "%s".into()])
        );
        let err = plan(
            json!({"content": "x", "dest": "/etc/x", "validate": "visudo -c"}),
            Path::new("/nonexistent"),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "validate must contain %s: visudo -c");
    }

    #[test]
    fn content_becomes_an_inline_file() {
        let dir = Path::new("/nonexistent");
        assert_eq!(
            plan(json!({"content": "test file 1\n", "dest": "~/file_1"}), dir).unwrap(),
            file_op("~/file_1", b"test file 1\n", None, true)
        );
        assert_eq!(
            plan(
                json!({"content": "x", "dest": "/t", "mode": 420, "force": "no", "backup": false}),
                dir
            )
            .unwrap(),
            file_op("/t", b"x", Some(FileMode::Bits(0o644)), false)
        );
        assert_eq!(
            plan(json!({"content": {"a": [1, 2]}, "dest": "/j"}), dir).unwrap(),
            file_op("/j", br#"{"a": [1, 2]}"#, None, true)
        );
        assert_eq!(
            plan(json!({"content": 5, "dest": "/n"}), dir).unwrap(),
            file_op("/n", b"5", None, true)
        );
    }

    #[test]
    fn large_content_goes_as_a_digest() {
        let big = "a".repeat(INLINE_LIMIT + 1);
        let a = json!({"content": big, "dest": "/big"});
        let Plan::Remote(Op::EnsureFile(f)) = plan(a.clone(), Path::new("/")).unwrap() else {
            panic!()
        };
        let expected: [u8; 32] = Sha256::digest(big.as_bytes()).into();
        assert_eq!(
            f.content,
            FileContent::Digest {
                sha256: expected,
                size: big.len() as u64
            }
        );
        assert_eq!(
            Copy.content(&args(a), &PlanContext::new(Path::new("/")))
                .unwrap()
                .unwrap()
                .into_bytes()
                .unwrap()
                .len(),
            big.len()
        );
    }

    #[test]
    fn a_large_src_file_is_planned_by_digest_and_read_only_as_it_is_sent() {
        let dir = tempfile::tempdir().unwrap();
        let big: Vec<u8> = (0..INLINE_LIMIT as u32 * 3)
            .map(|i| (i % 251) as u8)
            .collect();
        std::fs::create_dir_all(dir.path().join("files")).unwrap();
        let path = dir.path().join("files/big.bin");
        std::fs::write(&path, &big).unwrap();
        let a = json!({"src": "big.bin", "dest": "/srv/"});
        let Plan::Remote(Op::EnsureFile(f)) = past_parents(plan(a.clone(), dir.path()).unwrap())
        else {
            panic!()
        };
        assert_eq!(f.path, "/srv/big.bin");
        assert_eq!(
            f.content,
            FileContent::Digest {
                sha256: Sha256::digest(&big).into(),
                size: big.len() as u64
            }
        );
        assert_eq!(
            Copy.content(&args(a), &PlanContext::new(dir.path()))
                .unwrap(),
            Some(FileSource::Local(path))
        );
        // A vault-encrypted file is decrypted in memory, never sent as it is on disk.
        let vaulted = dir.path().join("files/v.bin");
        let mut text = b"$ANSIBLE_VAULT;1.1;AES256\n".to_vec();
        text.extend(std::iter::repeat_n(b'3', INLINE_LIMIT + 10));
        std::fs::write(&vaulted, &text).unwrap();
        assert_eq!(large_plain_file(&vaulted).unwrap(), None);
    }

    /// The file's plan once the directory step of a `dest` ending in `/` answered.
    fn past_parents(planned: Plan) -> Plan {
        let Plan::Step(Op::EnsurePath(_), next) = planned else {
            panic!("{planned:?}")
        };
        next.resume(OpResult::File(outcome(false))).unwrap()
    }

    #[test]
    fn a_dest_ending_in_slash_makes_its_missing_directories_first() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("uuid.fact"), "x").unwrap();
        let a = json!({"src": "uuid.fact", "dest": "/etc/ansible/facts.d/", "mode": "0755",
                       "directory_mode": "0700", "owner": "root"});
        let Plan::Step(Op::EnsurePath(d), next) = plan(a.clone(), dir.path()).unwrap() else {
            panic!()
        };
        assert_eq!(d.path, "/etc/ansible/facts.d");
        assert_eq!(d.state, turbo_proto::PathState::Directory);
        assert!(d.recurse_parents);
        assert_eq!(d.mode, parse_mode(&json!("0700")).unwrap());
        assert_eq!(d.owner.user.as_deref(), Some("root"));
        let Plan::Remote(Op::EnsureFile(f)) = next.resume(OpResult::File(outcome(true))).unwrap()
        else {
            panic!()
        };
        assert_eq!(f.path, "/etc/ansible/facts.d/uuid.fact");
        // In check mode a directory that would be made means a new file.
        let mut ctx = PlanContext::new(dir.path());
        ctx.check_mode = true;
        let Plan::Step(_, next) = crate::modules::try_plan(&Copy, a, &ctx).unwrap() else {
            panic!()
        };
        let Plan::Done(out) = next.resume(OpResult::File(outcome(true))).unwrap() else {
            panic!()
        };
        assert!(out.changed && !out.failed);
    }

    #[test]
    fn src_is_found_under_files_then_the_playbook_dir() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("files")).unwrap();
        std::fs::write(dir.path().join("files/a.txt"), "from files").unwrap();
        std::fs::write(dir.path().join("b.txt"), "from dir").unwrap();
        assert_eq!(
            past_parents(plan(json!({"src": "a.txt", "dest": "/etc/"}), dir.path()).unwrap()),
            file_op("/etc/a.txt", b"from files", None, true)
        );
        assert_eq!(
            plan(json!({"src": "b.txt", "dest": "/x"}), dir.path()).unwrap(),
            file_op("/x", b"from dir", None, true)
        );
        let abs = dir.path().join("b.txt");
        assert_eq!(
            plan(
                json!({"src": abs.to_str().unwrap(), "dest": "/y"}),
                Path::new("/")
            )
            .unwrap(),
            file_op("/y", b"from dir", None, true)
        );
        let err = plan(json!({"src": "nope.txt", "dest": "/x"}), dir.path()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "src file not found: nope.txt (looked in {}/files, {})",
                dir.path().display(),
                dir.path().display()
            )
        );
        let Plan::Step(Op::Batch(ops), _) =
            plan(json!({"src": "files", "dest": "/x"}), dir.path()).unwrap()
        else {
            panic!("a directory src is one batch of ops")
        };
        assert!(matches!(&ops[0], Op::EnsurePath(p) if p.path == "/x/files"));
        // validate checks every file of a directory copy.
        let Plan::Step(Op::Batch(ops), _) = plan(
            json!({"src": "files", "dest": "/x", "validate": "/bin/true %s"}),
            dir.path(),
        )
        .unwrap() else {
            panic!()
        };
        let files: Vec<_> = ops
            .iter()
            .filter_map(|op| match op {
                Op::EnsureFile(f) => Some(f.validate.clone()),
                _ => None,
            })
            .collect();
        assert!(!files.is_empty());
        assert!(
            files
                .iter()
                .all(|v| v.as_deref() == Some(&["/bin/true".to_string(), "%s".to_string()][..]))
        );
    }

    #[test]
    fn bad_arguments_are_explained() {
        let dir = Path::new("/");
        let msg = |a: Value| plan(a, dir).unwrap_err();
        assert_eq!(msg(json!({"dest": "/x"})), "src (or content) is required");
        assert_eq!(msg(json!({"content": "x"})), "dest is required");
        assert_eq!(
            msg(json!({"content": "x", "dest": "/x", "foo": 1})),
            "Unsupported parameters for (ansible.legacy.copy) module: foo. Supported parameters include: _original_basename, attributes, backup, checksum, content, dest, directory_mode, follow, force, group, local_follow, mode, owner, remote_src, selevel, serole, setype, seuser, src, unsafe_writes, validate (attr)."
        );
        assert_eq!(
            msg(json!({"content": "x", "src": "y", "dest": "/x"})),
            "src and content are mutually exclusive"
        );
        assert_eq!(
            msg(json!({"content": "x", "dest": "/x", "mode": "abc"})),
            "mode must be octal or symbolic, got 'abc'"
        );
        assert_eq!(
            msg(json!({"content": "x", "dest": "/d/"})),
            "can not use content with a dir as dest"
        );
    }

    fn outcome(changed: bool) -> FileOutcome {
        FileOutcome {
            changed,
            path: "/home/u/file_1".into(),
            kind: FileKind::File,
            mode: 0o100644,
            size: 12,
            uid: 1000,
            gid: 1000,
            owner: "u".into(),
            group: "u".into(),
            diff: None,
            backup_file: None,
        }
    }

    #[test]
    fn finish_reports_ansible_shape() {
        let a = args(json!({"content": "test file 1\n", "dest": "~/file_1"}));
        let mut out = Copy.finish(&a, OpResult::File(outcome(true)));
        assert!(out.changed && !out.failed);
        assert!(out.data.remove("src").is_some());
        assert_eq!(
            Value::Object(out.data),
            json!({
                "dest": "/home/u/file_1",
                "checksum": sha1_hex(b"test file 1\n"),
                "mode": "0644", "owner": "u", "group": "u", "size": 12,
                "state": "file", "uid": 1000, "gid": 1000,
                "md5sum": "68b22040025784da775f55cfcb6dee2e",
                // The copy action's list of diffs, empty without --diff.
                "diff": []
            })
        );
        assert_eq!(sha1_hex(b"abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
        let out = Copy.finish(&a, OpResult::File(outcome(false)));
        assert!(!out.changed);
    }

    /// A file copied from `src` has Ansible's `checksum` too: the SHA-1 of what was sent,
    /// inline or (a large file) planned by its digest.
    #[test]
    fn a_copied_files_result_has_the_checksum_of_what_was_sent() {
        let a = args(json!({"src": "file_1", "dest": "~/file_1"}));
        let small = ensure_file_op(
            "/home/u/file_1".into(),
            b"test file 1\n".to_vec(),
            None,
            Ownership::default(),
            true,
        );
        let out = Copy.finish_sent(&a, &small, OpResult::File(outcome(true)), false, "/home/u");
        assert_eq!(out.data["checksum"], json!(sha1_hex(b"test file 1\n")));

        let big = vec![b'x'; INLINE_LIMIT + 1];
        let large = ensure_file_op(
            "/home/u/big".into(),
            big.clone(),
            None,
            Ownership::default(),
            true,
        );
        assert!(
            matches!(&large, Op::EnsureFile(f) if matches!(f.content, FileContent::Digest { .. }))
        );
        let out = Copy.finish_sent(&a, &large, OpResult::File(outcome(false)), false, "/home/u");
        assert_eq!(out.data["checksum"], json!(sha1_hex(&big)));

        let checked = Copy.finish_sent(&a, &small, OpResult::File(outcome(true)), true, "/home/u");
        assert_eq!(
            Value::Object(checked.data),
            json!({"diff": []}),
            "check mode as before"
        );
    }

    /// As ansible-playbook 2.21.5 registers them: a written file's result is the copy
    /// module's (the staged `src`, with the destination's extension, and `md5sum`), an
    /// unchanged one's the file module's (`path`, no `src`).
    #[test]
    fn written_and_unchanged_results_are_the_copy_and_file_modules() {
        let a = args(json!({"content": "foo", "src": "x.txt", "dest": "~/file_1"}));
        let mut written = outcome(true);
        written.path = "/home/u/out.txt".into();
        let out = Copy.finish_at_home(&a, OpResult::File(written), "/home/u");
        assert_eq!(
            out.data["md5sum"],
            json!("acbd18db4cc2f85cedef654fccc4a4d8")
        );
        assert_eq!(out.data["checksum"], json!(sha1_hex(b"foo")));
        let src = out.data["src"].as_str().unwrap();
        assert!(
            src.starts_with("/home/u/.ansible/tmp/ansible-tmp-"),
            "{src}"
        );
        assert!(src.ends_with("/.source.txt"), "{src}");
        let out = Copy.finish_at_home(&a, OpResult::File(outcome(false)), "/home/u");
        assert_eq!(out.data["path"], json!("/home/u/file_1"));
        assert!(!out.data.contains_key("src") && !out.data.contains_key("md5sum"));
    }

    #[test]
    fn finish_reports_agent_errors() {
        let a = args(json!({"content": "x", "dest": "/root/x"}));
        let out = Copy.finish(
            &a,
            OpResult::Error(OpError {
                kind: ErrorKind::PermissionDenied,
                message: "Permission denied (os error 13): /root/x".into(),
            }),
        );
        assert!(out.failed);
        assert_eq!(
            out.msg.as_deref(),
            Some("Permission denied (os error 13): /root/x")
        );
    }

    #[test]
    fn registered_under_its_names() {
        assert_eq!(find("ansible.builtin.copy").unwrap().name(), "copy");
        assert!(!Copy.caps().free_form);
    }
}
