//! `file`: make a path be a directory, be absent, exist (touch), be a symlink, or (the
//! default) be an existing file whose mode is set.

use serde_json::{Value, json};
use turbo_proto::{EnsurePath, FileKind, Op, OpResult, PathState};

use super::{
    Module, ModuleArgs, ModuleError, Plan, PlanContext, TaskOutcome, arg_bool, arg_str,
    mode_string, ownership, parse_mode, unexpected,
};

pub struct File;

impl Module for File {
    fn name(&self) -> &'static str {
        "file"
    }

    fn arg_names(&self) -> &'static [&'static str] {
        &[
            "path", "dest", "name", "state", "mode", "owner", "group", "src", "force", "recurse",
        ]
    }

    fn plan(&self, args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let path = match arg_str(args, "path")? {
            Some(p) => p,
            None => match arg_str(args, "dest")? {
                Some(p) => p,
                None => arg_str(args, "name")?.ok_or(ModuleError::Missing("path"))?,
            },
        };
        let mode = parse_mode(args.get("mode").unwrap_or(&Value::Null))?;
        let force = arg_bool(args, "force", false)?;
        let recurse = arg_bool(args, "recurse", false)?;
        let state_name = arg_str(args, "state")?.unwrap_or_else(|| "file".into());
        let state = match state_name.as_str() {
            "file" => PathState::File,
            "directory" => PathState::Directory,
            "absent" => PathState::Absent,
            "touch" => PathState::Touch,
            "link" => PathState::Link {
                target: arg_str(args, "src")?.ok_or_else(|| {
                    ModuleError::Invalid("src is required when state is link".into())
                })?,
                force,
            },
            "hard" => return Err(ModuleError::NotSupported("state=hard")),
            other => {
                return Err(ModuleError::Invalid(format!(
                    "value of state must be one of: absent, directory, file, hard, link, touch, got: {other}"
                )));
            }
        };
        if recurse && state != PathState::Directory {
            return Err(ModuleError::Invalid(
                "recurse option requires state to be 'directory'".into(),
            ));
        }
        let recurse_parents = state == PathState::Directory;
        Ok(Plan::Remote(Op::EnsurePath(EnsurePath {
            path,
            state,
            mode,
            recurse_parents,
            owner: ownership(args)?,
        })))
    }

    fn finish(&self, args: &ModuleArgs, result: OpResult) -> TaskOutcome {
        if let OpResult::Error(e) = &result {
            // Ansible's file module fails naming the path (and a link's src).
            let mut out = TaskOutcome::failed(e.message.clone());
            let path = ["path", "dest", "name"].iter().find_map(|k| args.get(*k));
            if let Some(path) = path {
                out.data.insert("path".into(), path.clone());
            }
            if let Some(src) = args.get("src") {
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
                && let Some(src) = args.get("src")
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use turbo_proto::{FileMode, FileOutcome};

    fn plan(v: Value) -> Result<Plan, ModuleError> {
        File.plan(v.as_object().unwrap(), &PlanContext::new(Path::new("/")))
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
            plan(json!({"dest": "/f"})).unwrap(),
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
        assert_eq!(
            plan(json!({"path": "/d", "state": "directory", "recurse": true})).unwrap(),
            op("/d", PathState::Directory, None, true)
        );
    }

    #[test]
    fn bad_arguments_are_explained() {
        let msg = |v: Value| plan(v).unwrap_err().to_string();
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
            msg(json!({"path": "/l", "recurse": true})),
            "recurse option requires state to be 'directory'"
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
        let out = File.finish(&Default::default(), OpResult::File(f.clone()));
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
        let out = File.finish(&Default::default(), OpResult::File(gone));
        assert_eq!(
            Value::Object(out.data),
            json!({"path": "/d", "state": "absent"})
        );
        let args = json!({"path": "/l", "src": "/t", "state": "link"});
        let failed = File.finish(
            args.as_object().unwrap(),
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
