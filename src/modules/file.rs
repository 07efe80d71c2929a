//! `file`: make a path be a directory, be absent, exist (touch), be a symlink, or (the
//! default) be an existing file whose mode is set.

use serde_json::{Value, json};
use turbo_proto::{EnsurePath, FileKind, Op, OpResult, PathState};

use super::spec::{Arg, Spec};
use super::{
    Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, mode_string, ownership,
    parse_mode, unexpected,
};

pub struct File;

const SELINUX: &str = "SELinux contexts are not set by turbo-play's agent";

/// ansible-core 2.21's file module; the arguments it only uses internally are declared so
/// that the unsupported-parameters message lists what Ansible lists.
static SPEC: Spec = Spec::new(&[
    Arg::raw("_diff_peek").no_effect("Ansible's internal diff probe"),
    Arg::str("_original_basename").no_effect("Ansible's internal name of a copied file"),
    Arg::str("access_time").not_yet(),
    Arg::str("access_time_format")
        .default_str("%Y%m%d%H%M.%S")
        .not_yet(),
    Arg::str("attributes").aliases(&["attr"]).not_yet(),
    Arg::bool("follow").default_bool(true),
    Arg::bool("force").default_bool(false),
    Arg::str("group"),
    Arg::raw("mode"),
    Arg::str("modification_time").not_yet(),
    Arg::str("modification_time_format")
        .default_str("%Y%m%d%H%M.%S")
        .not_yet(),
    Arg::str("owner"),
    Arg::path("path").aliases(&["dest", "name"]).required(),
    Arg::bool("recurse").default_bool(false),
    Arg::str("selevel").no_effect(SELINUX),
    Arg::str("serole").no_effect(SELINUX),
    Arg::str("setype").no_effect(SELINUX),
    Arg::str("seuser").no_effect(SELINUX),
    Arg::path("src"),
    Arg::str("state").choices(&["absent", "directory", "file", "hard", "link", "touch"]),
    Arg::bool("unsafe_writes")
        .default_bool(false)
        .no_effect("the agent's writes are atomic renames either way"),
]);

impl Module for File {
    fn name(&self) -> &'static str {
        "file"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let wanted = Wanted::from_args(args)?;
        let Some(state) = args.str("state") else {
            // Ansible's default state is the path's own (a directory stays one), else
            // `directory` for a recursion and `file` otherwise. The agent looks and acts
            // in one request; a recursion, which lists the tree next, looks first.
            if !wanted.recurse {
                return Ok(Plan::Remote(Op::EnsurePath(EnsurePath {
                    path: wanted.path.clone(),
                    state: PathState::AsFound {
                        follow: wanted.follow,
                    },
                    mode: wanted.mode.clone(),
                    recurse_parents: false,
                    owner: wanted.owner.clone(),
                })));
            }
            let path = wanted.path.clone();
            return Ok(Plan::Step(
                Op::Stat {
                    path,
                    checksum: None,
                    follow: wanted.follow,
                },
                Next::new(move |reply| {
                    let state = match reply {
                        OpResult::Stat(s) if s.exists && s.kind == FileKind::Directory => {
                            "directory"
                        }
                        OpResult::Stat(s) if !s.exists && wanted.recurse => "directory",
                        _ => "file",
                    };
                    wanted.plan(state)
                }),
            ));
        };
        wanted.plan(state)
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        let result = match result {
            OpResult::Batch(results) => recursed(results),
            other => other,
        };
        if let OpResult::Error(e) = &result {
            // Ansible's file module fails naming the path (and a link's src).
            let mut out = TaskOutcome::failed(e.message.clone());
            if let Some(path) = args.raw("path") {
                out.data.insert("path".into(), path.clone());
            }
            if let Some(src) = args.raw("src") {
                out.data.insert("src".into(), src.clone());
            }
            return out;
        }
        let OpResult::File(f) = result else {
            return unexpected(self.name(), result);
        };
        let mut data = serde_json::Map::new();
        data.insert("path".into(), json!(f.path));
        let state = match f.kind {
            FileKind::Missing => "absent",
            FileKind::Directory => "directory",
            FileKind::Symlink => "link",
            FileKind::File | FileKind::Other => "file",
        };
        data.insert("state".into(), json!(state));
        if f.kind != FileKind::Missing {
            if f.kind == FileKind::Symlink
                && let Some(src) = args.raw("src")
            {
                data.insert("src".into(), src.clone());
            }
            data.insert("mode".into(), json!(mode_string(f.mode)));
            data.insert("owner".into(), json!(f.owner));
            data.insert("group".into(), json!(f.group));
            data.insert("size".into(), json!(f.size));
            data.insert("uid".into(), json!(f.uid));
            data.insert("gid".into(), json!(f.gid));
        }
        TaskOutcome {
            changed: f.changed,
            data,
            ..TaskOutcome::default()
        }
    }
}

/// What a file task asks for, before its state is known.
struct Wanted {
    path: String,
    mode: Option<turbo_proto::FileMode>,
    owner: turbo_proto::Ownership,
    force: bool,
    recurse: bool,
    follow: bool,
    src: Option<String>,
}

impl Wanted {
    fn from_args(args: &Args) -> Result<Wanted, ModuleError> {
        Ok(Wanted {
            path: args.str("path").unwrap_or_default().to_string(),
            mode: parse_mode(args.raw("mode").unwrap_or(&Value::Null))?,
            owner: ownership(args),
            force: args.bool("force"),
            recurse: args.bool("recurse"),
            follow: args.bool("follow"),
            src: args.str("src").map(str::to_string),
        })
    }

    fn plan(self, state: &str) -> Result<Plan, ModuleError> {
        let state = match state {
            "file" => PathState::File,
            "directory" => PathState::Directory,
            "absent" => PathState::Absent,
            "touch" => PathState::Touch,
            "link" => PathState::Link {
                target: self.src.clone().ok_or_else(|| {
                    ModuleError::Invalid("src is required when state is link".into())
                })?,
                force: self.force,
            },
            _ => return Err(ModuleError::NotSupported("state=hard")),
        };
        if self.recurse && state != PathState::Directory {
            return Err(ModuleError::Invalid(
                "recurse option requires state to be 'directory'".into(),
            ));
        }
        let recurse_parents = state == PathState::Directory;
        let top = Op::EnsurePath(EnsurePath {
            path: self.path.clone(),
            state,
            mode: self.mode.clone(),
            recurse_parents,
            owner: self.owner.clone(),
        });
        if !self.recurse {
            return Ok(Plan::Remote(top));
        }
        // Ansible's recursive_set_attributes: the directory first, then everything under
        // it, listed once; with `follow` a link is described (and changed) by its target.
        let list = Op::ListTree {
            path: self.path.clone(),
            max_depth: None,
            follow: self.follow,
            checksum: None,
        };
        Ok(Plan::Step(
            list,
            Next::new(move |reply| {
                let entries = match reply {
                    OpResult::Tree(tree) => tree.entries,
                    OpResult::Error(e) => return Ok(Plan::Done(TaskOutcome::failed(e.message))),
                    other => return Ok(Plan::Done(unexpected("file", other))),
                };
                let mut ops = vec![top];
                ops.extend(entries.into_iter().filter_map(|entry| {
                    let state = match entry.kind {
                        FileKind::Directory => PathState::Directory,
                        FileKind::File => PathState::File,
                        // A link's own mode cannot be set on Linux, and special files are
                        // left as they are.
                        _ => return None,
                    };
                    Some(Op::EnsurePath(EnsurePath {
                        path: entry.path,
                        state,
                        mode: self.mode.clone(),
                        recurse_parents: false,
                        owner: self.owner.clone(),
                    }))
                }));
                Ok(Plan::Remote(Op::Batch(ops)))
            }),
        ))
    }
}

/// A recursion's replies: the directory's outcome, changed if anything under it changed;
/// the first failure fails the task.
fn recursed(results: Vec<OpResult>) -> OpResult {
    let mut changed = false;
    let mut top = None;
    for result in results {
        match result {
            OpResult::File(f) => {
                changed |= f.changed;
                top.get_or_insert(f);
            }
            other => return other,
        }
    }
    match top {
        Some(mut f) => {
            f.changed = changed;
            OpResult::File(f)
        }
        None => OpResult::Batch(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use turbo_proto::{FileMode, FileOutcome};

    fn plan(v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(&File, v, &PlanContext::new(Path::new("/")))
    }

    fn op(path: &str, state: PathState, mode: Option<FileMode>, parents: bool) -> Plan {
        Plan::Remote(Op::EnsurePath(EnsurePath {
            path: path.into(),
            state,
            mode,
            recurse_parents: parents,
            owner: Default::default(),
        }))
    }

    #[test]
    fn plans_each_state() {
        assert_eq!(
            plan(json!({"path": "/d", "state": "directory", "mode": "0755"})).unwrap(),
            op(
                "/d",
                PathState::Directory,
                Some(FileMode::Bits(0o755)),
                true
            )
        );
        assert_eq!(
            plan(json!({"dest": "/f", "state": "file"})).unwrap(),
            op("/f", PathState::File, None, false)
        );
        assert_eq!(
            plan(json!({"name": "/f", "state": "absent"})).unwrap(),
            op("/f", PathState::Absent, None, false)
        );
        assert_eq!(
            plan(json!({"path": "/f", "state": "touch", "mode": "u=rw"})).unwrap(),
            op(
                "/f",
                PathState::Touch,
                Some(FileMode::Symbolic("u=rw".into())),
                false
            )
        );
        assert_eq!(
            plan(json!({"path": "/l", "state": "link", "src": "/t", "force": true})).unwrap(),
            op(
                "/l",
                PathState::Link {
                    target: "/t".into(),
                    force: true
                },
                None,
                false
            )
        );
    }

    fn stat_reply(path: &str, exists: bool, kind: FileKind) -> OpResult {
        OpResult::Stat(turbo_proto::StatInfo {
            path: path.into(),
            exists,
            kind,
            ..Default::default()
        })
    }

    #[test]
    fn without_a_state_the_paths_own_is_kept_as_ansible_does() {
        // The agent looks and acts at once (a directory stays one, anything else is a
        // file, which fails when missing as Ansible's does).
        assert_eq!(
            plan(json!({"path": "/d", "mode": "0750", "follow": false})).unwrap(),
            op(
                "/d",
                PathState::AsFound { follow: false },
                Some(FileMode::Bits(0o750)),
                false
            )
        );
        // A recursion lists the tree next: it looks first, and a missing path is then
        // `directory`.
        let Plan::Step(look, next) = plan(json!({"path": "/n", "recurse": true})).unwrap() else {
            panic!("a recursion without state looks first");
        };
        assert_eq!(
            look,
            Op::Stat {
                path: "/n".into(),
                checksum: None,
                follow: true
            }
        );
        assert!(matches!(
            next.resume(stat_reply("/n", false, FileKind::Missing)),
            Ok(Plan::Step(Op::ListTree { .. }, _))
        ));
        let Plan::Step(_, next) = plan(json!({"path": "/f", "recurse": true})).unwrap() else {
            panic!("looks first");
        };
        assert_eq!(
            next.resume(stat_reply("/f", true, FileKind::File))
                .unwrap_err()
                .to_string(),
            "recurse option requires state to be 'directory'"
        );
    }

    #[test]
    fn recurse_sets_everything_under_the_directory_but_links() {
        let Plan::Step(list, next) = plan(json!({
            "path": "/d", "state": "directory", "recurse": true, "mode": "u+rwx", "follow": false
        }))
        .unwrap() else {
            panic!("a recursion lists first");
        };
        assert_eq!(
            list,
            Op::ListTree {
                path: "/d".into(),
                max_depth: None,
                follow: false,
                checksum: None
            }
        );
        let entry = |path: &str, kind| turbo_proto::StatInfo {
            path: path.into(),
            exists: true,
            kind,
            ..Default::default()
        };
        let tree = OpResult::Tree(turbo_proto::TreeListing {
            root: entry("/d", FileKind::Directory),
            entries: vec![
                entry("/d/sub", FileKind::Directory),
                entry("/d/sub/f", FileKind::File),
                entry("/d/link", FileKind::Symlink),
            ],
            skipped: Vec::new(),
        });
        let mode = Some(FileMode::Symbolic("u+rwx".into()));
        let ensure = |path: &str, state, parents| {
            Op::EnsurePath(EnsurePath {
                path: path.into(),
                state,
                mode: mode.clone(),
                recurse_parents: parents,
                owner: Default::default(),
            })
        };
        assert_eq!(
            next.resume(tree).unwrap(),
            Plan::Remote(Op::Batch(vec![
                ensure("/d", PathState::Directory, true),
                ensure("/d/sub", PathState::Directory, false),
                ensure("/d/sub/f", PathState::File, false),
            ]))
        );
        let outcome = |path: &str, changed| {
            OpResult::File(FileOutcome {
                changed,
                path: path.into(),
                kind: FileKind::Directory,
                mode: 0o755,
                size: 0,
                uid: 0,
                gid: 0,
                owner: "root".into(),
                group: "root".into(),
                diff: None,
                backup_file: None,
            })
        };
        let raw = json!({"path": "/d", "recurse": true});
        let args = File
            .spec()
            .validate("file", raw.as_object().unwrap())
            .unwrap();
        let done = File.finish(
            &args,
            OpResult::Batch(vec![outcome("/d", false), outcome("/d/sub/f", true)]),
        );
        assert!(done.changed);
        assert_eq!(done.data["path"], json!("/d"));
    }

    #[test]
    fn bad_arguments_are_explained() {
        let msg = |v: Value| plan(v).unwrap_err();
        assert_eq!(
            msg(json!({"state": "file"})),
            "missing required arguments: path"
        );
        assert_eq!(
            msg(json!({"path": "/l", "state": "link"})),
            "src is required when state is link"
        );
        assert_eq!(
            msg(json!({"path": "/l", "state": "dir"})),
            "value of state must be one of: absent, directory, file, hard, link, touch, got: dir"
        );
        assert_eq!(
            msg(json!({"path": "/l", "state": "hard", "src": "/x"})),
            "state=hard is not supported yet"
        );
        assert_eq!(
            msg(json!({"path": "/l", "state": "file", "recurse": true})),
            "recurse option requires state to be 'directory'"
        );
        assert_eq!(
            msg(json!({"path": "/x", "force": "maybe"})),
            "argument 'force' is of type str and we were unable to convert to bool: The value 'maybe' is not a valid boolean. Valid booleans include: 'y', 'yes', 'on', '1', 'true', 't', 1, 1.0, 'n', 'no', 'off', '0', 'false', 'f', 0, 0.0"
        );
        assert_eq!(
            msg(json!({"path": "/x", "foo": 1, "bar": 2})),
            "Unsupported parameters for (file) module: bar, foo. Supported parameters include: _diff_peek, _original_basename, access_time, access_time_format, attributes, follow, force, group, mode, modification_time, modification_time_format, owner, path, recurse, selevel, serole, setype, seuser, src, state, unsafe_writes (attr, dest, name)."
        );
    }

    #[test]
    fn finish_reports_ansible_shape() {
        let f = FileOutcome {
            changed: true,
            path: "/d".into(),
            kind: FileKind::Directory,
            mode: 0o40755,
            size: 4096,
            uid: 0,
            gid: 0,
            owner: "root".into(),
            group: "root".into(),
            diff: None,
            backup_file: None,
        };
        let path = crate::modules::check(&File, json!({"path": "/d"}));
        let out = File.finish(&path, OpResult::File(f.clone()));
        assert!(out.changed);
        assert_eq!(
            Value::Object(out.data),
            json!({"path": "/d", "state": "directory", "mode": "0755", "owner": "root",
                   "group": "root", "size": 4096, "uid": 0, "gid": 0})
        );
        let gone = FileOutcome {
            kind: FileKind::Missing,
            changed: false,
            ..f
        };
        let out = File.finish(&path, OpResult::File(gone));
        assert_eq!(
            Value::Object(out.data),
            json!({"path": "/d", "state": "absent"})
        );
        let args =
            crate::modules::check(&File, json!({"path": "/l", "src": "/t", "state": "link"}));
        let failed = File.finish(
            &args,
            OpResult::Error(turbo_proto::OpError {
                kind: turbo_proto::ErrorKind::NotFound,
                message: "src file does not exist".into(),
            }),
        );
        assert!(failed.failed);
        assert_eq!(failed.msg.as_deref(), Some("src file does not exist"));
        assert_eq!(
            Value::Object(failed.data),
            json!({"path": "/l", "src": "/t"})
        );
    }
}
