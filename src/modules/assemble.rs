//! `assemble`: one file from a directory of fragments. With `remote_src` (the default) the
//! fragments are on the target: one listing, one batch of reads, then the joined bytes are
//! written as one atomic `EnsureFile` (validate, backup, mode, owner), which also decides
//! `changed` by comparing content as Ansible compares checksums. Without it the fragments
//! are read here, from the task's `files/` search path, as Ansible's action plugin does.

use serde_json::{Value, json};
use turbo_proto::{EnsureFile, FileContent, FileKind, Op, OpResult, StatInfo};

use super::assemble_fragments::{Selection, join};
use super::copy::{ATOMIC, SELINUX, sha1_hex};
use super::spec::{Arg, Spec};
use super::{
    Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, find_local_source,
    mode_string, ownership, parse_mode, read_local, read_local_decrypted, unexpected,
};

pub struct Assemble;

/// ansible-core 2.21's assemble module with the file common arguments.
static SPEC: Spec = Spec::new(&[
    Arg::str("attributes").aliases(&["attr"]).not_yet(),
    Arg::bool("backup").default_bool(false),
    Arg::bool("decrypt").default_bool(true),
    Arg::str("delimiter"),
    Arg::path("dest").required(),
    Arg::bool("follow").default_bool(false),
    Arg::str("group"),
    Arg::bool("ignore_hidden").default_bool(false),
    Arg::raw("mode"),
    Arg::str("owner"),
    Arg::str("regexp"),
    Arg::bool("remote_src").default_bool(true),
    Arg::str("selevel").no_effect(SELINUX),
    Arg::str("serole").no_effect(SELINUX),
    Arg::str("setype").no_effect(SELINUX),
    Arg::str("seuser").no_effect(SELINUX),
    Arg::path("src").required(),
    Arg::bool("unsafe_writes")
        .default_bool(false)
        .no_effect(ATOMIC),
    Arg::str("validate"),
]);

impl Module for Assemble {
    fn name(&self) -> &'static str {
        "assemble"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let src = args.str("src").unwrap_or_default().to_string();
        let selection = match Selection::new(args.str("regexp"), args.bool("ignore_hidden")) {
            Ok(s) => s,
            Err(message) => return Ok(Plan::Done(TaskOutcome::failed(message))),
        };
        if let Some(validate) = args.str("validate")
            && !validate.contains("%s")
        {
            return Ok(Plan::Done(TaskOutcome::failed(format!(
                "validate must contain %s: {validate}"
            ))));
        }
        let write = Write::of(args, ctx.check_mode)?;
        if !args.bool("remote_src") {
            let dir = find_local_source(&src, ctx, "files")?;
            if !dir.is_dir() {
                return Ok(Plan::Done(TaskOutcome::failed(format!(
                    "Source ({}) is not a directory",
                    dir.display()
                ))));
            }
            let fragments = local_fragments(&dir, &selection, args.bool("decrypt"))?;
            return Ok(write.plan(join(&fragments, args.str("delimiter"))));
        }
        let list = Op::ListTree {
            path: src.clone(),
            max_depth: Some(1),
            follow: true,
            checksum: None,
        };
        let delimiter = args.str("delimiter").map(str::to_string);
        Ok(Plan::Step(
            list,
            Next::new(move |reply| {
                let listing = match reply {
                    OpResult::Tree(t) => t,
                    other => return Ok(Plan::Done(unexpected("assemble", other))),
                };
                let root = &listing.root.path;
                if !listing.root.exists {
                    return Ok(Plan::Done(TaskOutcome::failed(format!(
                        "Source ({src}) does not exist"
                    ))));
                }
                if listing.root.kind != FileKind::Directory {
                    return Ok(Plan::Done(TaskOutcome::failed(format!(
                        "Source ({src}) is not a directory"
                    ))));
                }
                let paths = remote_fragments(root, &listing.entries, &selection);
                Ok(read_all(paths, Vec::new(), write, delimiter))
            }),
        ))
    }
}

/// The fragment files in the listing, in Python's `sorted(os.listdir())` order.
fn remote_fragments(root: &str, entries: &[StatInfo], selection: &Selection) -> Vec<String> {
    let prefix = format!("{}/", root.trim_end_matches('/'));
    let mut names: Vec<&str> = entries
        .iter()
        .filter(|e| e.kind == FileKind::File)
        .filter_map(|e| e.path.strip_prefix(&prefix))
        .filter(|name| !name.contains('/') && selection.takes(name))
        .collect();
    names.sort_unstable();
    names.into_iter().map(|n| format!("{prefix}{n}")).collect()
}

fn local_fragments(
    dir: &std::path::Path,
    selection: &Selection,
    decrypt: bool,
) -> Result<Vec<Vec<u8>>, ModuleError> {
    let listed = std::fs::read_dir(dir).map_err(|e| ModuleError::Read {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let mut names: Vec<String> = listed
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_unstable();
    let mut fragments = Vec::new();
    for name in names {
        let path = dir.join(&name);
        if selection.takes(&name) && path.is_file() {
            fragments.push(if decrypt {
                read_local_decrypted(&path)?
            } else {
                read_local(&path)?
            });
        }
    }
    Ok(fragments)
}

/// Reads every fragment, in order; a fragment longer than one reply is read on.
fn read_all(
    paths: Vec<String>,
    mut done: Vec<Vec<u8>>,
    write: Write,
    delimiter: Option<String>,
) -> Plan {
    if done.len() == paths.len() {
        return write.plan(join(&done, delimiter.as_deref()));
    }
    let at = done.len();
    let reads: Vec<Op> = paths[at..]
        .iter()
        .map(|p| Op::ReadFile {
            path: p.clone(),
            offset: 0,
            limit: None,
        })
        .collect();
    Plan::Step(
        Op::Batch(reads),
        Next::new(move |reply| {
            let OpResult::Batch(replies) = reply else {
                return Ok(Plan::Done(unexpected("assemble", reply)));
            };
            for reply in replies {
                let OpResult::Read(read) = reply else {
                    return Ok(Plan::Done(unexpected("assemble", reply)));
                };
                if !read.eof {
                    return Ok(read_rest(paths, done, read.data, write, delimiter));
                }
                done.push(read.data);
            }
            Ok(read_all(paths, done, write, delimiter))
        }),
    )
}

/// The rest of a fragment too long for one reply, then the fragments after it.
fn read_rest(
    paths: Vec<String>,
    done: Vec<Vec<u8>>,
    partial: Vec<u8>,
    write: Write,
    delimiter: Option<String>,
) -> Plan {
    let op = Op::ReadFile {
        path: paths[done.len()].clone(),
        offset: partial.len() as u64,
        limit: None,
    };
    Plan::Step(
        op,
        Next::new(move |reply| {
            let OpResult::Read(read) = reply else {
                return Ok(Plan::Done(unexpected("assemble", reply)));
            };
            let mut partial = partial;
            partial.extend_from_slice(&read.data);
            if !read.eof {
                return Ok(read_rest(paths, done, partial, write, delimiter));
            }
            let mut done = done;
            done.push(partial);
            Ok(read_all(paths, done, write, delimiter))
        }),
    )
}

/// The write of the assembled file, from the task's arguments.
struct Write {
    src: Value,
    op: EnsureFile,
    /// Fragments from the controller: Ansible's result is then copy's, without `msg`.
    local: bool,
    /// Validate runs (and its `validation` is reported) only when the file is written.
    reports_validation: bool,
    /// Check mode stats the dest too: a file that is not there has no path info.
    check: bool,
}

impl Write {
    fn of(args: &Args, check: bool) -> Result<Write, ModuleError> {
        let validate = match args.str("validate") {
            None => None,
            Some(command) => {
                Some(crate::shell_words::split(command).map_err(ModuleError::Invalid)?)
            }
        };
        Ok(Write {
            src: json!(args.str("src").unwrap_or_default()),
            local: !args.bool("remote_src"),
            reports_validation: validate.is_some() && !check,
            check,
            op: EnsureFile {
                path: args.str("dest").unwrap_or_default().to_string(),
                content: FileContent::Inline(Vec::new()),
                mode: parse_mode(args.raw("mode").unwrap_or(&Value::Null))?,
                force: true,
                owner: ownership(args),
                validate,
                backup: args.bool("backup"),
            },
        })
    }

    fn plan(self, bytes: Vec<u8>) -> Plan {
        let checksum = sha1_hex(&bytes);
        let md5sum = format!("{:x}", md5::compute(&bytes));
        let mut op = self.op;
        op.content = FileContent::Inline(bytes);
        let dest = op.path.clone();
        let op = if self.check {
            Op::Batch(vec![
                Op::Stat {
                    path: dest,
                    checksum: None,
                    follow: true,
                },
                Op::EnsureFile(op),
            ])
        } else {
            Op::EnsureFile(op)
        };
        Plan::Step(
            op,
            Next::new(move |reply| {
                let (missing, reply) = match reply {
                    OpResult::Batch(mut replies) if replies.len() == 2 => {
                        let file = replies.pop().expect("two replies");
                        let missing = matches!(
                            replies.pop(),
                            Some(OpResult::Stat(s)) if !s.exists
                        );
                        (missing, file)
                    }
                    other => (false, other),
                };
                Ok(Plan::Done(result(
                    missing,
                    reply,
                    &self.src,
                    self.local,
                    self.reports_validation,
                    checksum,
                    md5sum,
                )))
            }),
        )
    }
}

/// Ansible's result: the module's fields and the dest's path info.
fn result(
    missing: bool,
    reply: OpResult,
    src: &Value,
    local: bool,
    reports_validation: bool,
    checksum: String,
    md5sum: String,
) -> TaskOutcome {
    let f = match reply {
        OpResult::File(f) => f,
        OpResult::Error(e) => return TaskOutcome::failed(validate_message(e.message)),
        other => return unexpected("assemble", other),
    };
    let mut out = TaskOutcome {
        changed: f.changed,
        msg: (!local).then(|| "OK".to_string()),
        ..TaskOutcome::default()
    };
    let data = &mut out.data;
    if !local {
        data.insert("src".into(), src.clone());
    }
    data.insert("dest".into(), json!(f.path));
    data.insert("checksum".into(), json!(checksum));
    data.insert("md5sum".into(), json!(md5sum));
    if let Some(backup) = f.backup_file {
        data.insert("backup_file".into(), json!(backup));
    }
    if reports_validation && f.changed {
        // The agent keeps only a failing validate's output; a passing one's is not sent.
        data.insert(
            "validation".into(),
            json!({"rc": 0, "stdout": "", "stderr": ""}),
        );
    }
    if missing {
        // Check mode with no file yet: Ansible has no path to describe.
        return out;
    }
    data.insert("uid".into(), json!(f.uid));
    data.insert("gid".into(), json!(f.gid));
    data.insert("owner".into(), json!(f.owner));
    data.insert("group".into(), json!(f.group));
    data.insert("mode".into(), json!(mode_string(f.mode)));
    data.insert("state".into(), json!("file"));
    data.insert("size".into(), json!(f.size));
    // Ansible's assemble module has no diff; only the controller-side path, which hands
    // the file to copy, shows one.
    if let Some(diff) = f.diff.filter(|_| local) {
        data.insert(
            "diff".into(),
            json!({"before": diff.before.unwrap_or_default(), "after": diff.after,
                   "before_header": f.path, "after_header": "dynamically generated"}),
        );
    }
    out
}

/// The agent's validate failure in Ansible's words (`failed to validate: rc:N error:...`).
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(&Assemble, v, &PlanContext::new(Path::new("/")))
    }

    #[test]
    fn lists_the_source_one_level_deep_through_links() {
        let planned = plan(json!({"src": "/f", "dest": "/o"})).unwrap();
        assert_eq!(
            planned,
            Plan::Step(
                Op::ListTree {
                    path: "/f".into(),
                    max_depth: Some(1),
                    follow: true,
                    checksum: None
                },
                Next::new(|_| unreachable!())
            )
        );
    }

    #[test]
    fn refuses_what_ansible_refuses_before_reading() {
        let msg = |v: Value| match plan(v) {
            Ok(Plan::Done(out)) => out.msg.unwrap_or_default(),
            Ok(other) => panic!("{other:?}"),
            Err(e) => e,
        };
        assert_eq!(
            msg(json!({"src": "/f", "dest": "/o", "validate": "true"})),
            "validate must contain %s: true"
        );
        assert!(
            msg(json!({"src": "/f", "dest": "/o", "regexp": "("})).starts_with("Invalid Regexp (")
        );
        assert_eq!(
            msg(json!({"src": "/f"})),
            "missing required arguments: dest"
        );
    }

    #[test]
    fn orders_fragments_by_name_and_skips_directories() {
        let entry = |path: &str, kind| StatInfo {
            path: path.into(),
            exists: true,
            kind,
            ..StatInfo::missing(path.into())
        };
        let entries = [
            entry("/f/b", FileKind::File),
            entry("/f/a", FileKind::File),
            entry("/f/d", FileKind::Directory),
            entry("/f/.h", FileKind::File),
        ];
        let all = Selection::new(None, false).unwrap();
        assert_eq!(
            remote_fragments("/f", &entries, &all),
            ["/f/.h", "/f/a", "/f/b"]
        );
        let shown = Selection::new(None, true).unwrap();
        assert_eq!(remote_fragments("/f/", &entries, &shown), ["/f/a", "/f/b"]);
    }
}
