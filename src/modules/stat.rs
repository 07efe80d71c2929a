//! `stat`: describe a path on the target, in Ansible's `stat` result shape. Read-only, so
//! it runs in check mode too, and a loop of them is one batch like any other module.

use serde_json::{Map, Value, json};
use turbo_proto::{Digest, FileKind, Op, OpResult, StatInfo};

use super::spec::{Arg, Spec};
use super::{Args, Module, ModuleError, Plan, PlanContext, TaskOutcome, unexpected};

pub struct Stat;

static SPEC: Spec = Spec::new(&[
    Arg::str("checksum_algorithm")
        .aliases(&["checksum", "checksum_algo"])
        .choices(&["md5", "sha1", "sha224", "sha256", "sha384", "sha512"])
        .default_str("sha1"),
    Arg::bool("follow").default_bool(false),
    Arg::bool("get_attributes")
        .aliases(&["attr", "attributes"])
        .default_bool(true)
        .no_effect("lsattr attributes are not read yet; the result has no 'attributes' key"),
    Arg::bool("get_checksum").default_bool(true),
    Arg::bool("get_mime")
        .aliases(&["mime", "mime_type", "mime-type"])
        .default_bool(true)
        .no_effect("the agent has no libmagic; the result has no 'mimetype' key"),
    Arg::bool("get_selinux_context")
        .default_bool(false)
        .no_effect("SELinux contexts are not read by turbo-play's agent"),
    Arg::path("path").aliases(&["dest", "name"]).required(),
]);

impl Module for Stat {
    fn name(&self) -> &'static str {
        "stat"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let path = args.str("path").unwrap_or_default().to_string();
        Ok(Plan::Remote(Op::Stat {
            path,
            checksum: checksum_wanted(args)?,
            follow: args.bool("follow"),
        }))
    }

    fn finish(&self, _args: &Args, result: OpResult) -> TaskOutcome {
        let OpResult::Stat(info) = result else {
            return unexpected(self.name(), result);
        };
        let mut data = Map::new();
        data.insert("stat".into(), Value::Object(stat_fields(&info)));
        TaskOutcome {
            data,
            ..TaskOutcome::default()
        }
    }
}

/// The digest `get_checksum`/`checksum_algorithm` ask for: Ansible's default is SHA-1.
/// The agent computes SHA-1 and SHA-256; the other algorithms Ansible offers are refused
/// rather than silently left out.
fn checksum_wanted(args: &Args) -> Result<Option<Digest>, ModuleError> {
    if !args.bool("get_checksum") {
        return Ok(None);
    }
    match args.str("checksum_algorithm") {
        Some("sha256") => Ok(Some(Digest::Sha256)),
        Some("md5" | "sha224" | "sha384" | "sha512") => Err(ModuleError::NotSupported(
            "checksum_algorithm other than sha1 or sha256",
        )),
        _ => Ok(Some(Digest::Sha1)),
    }
}

/// Ansible's `stat` dictionary, from what the agent read.
fn stat_fields(info: &StatInfo) -> Map<String, Value> {
    let mut s = Map::new();
    s.insert("exists".into(), json!(info.exists));
    if !info.exists {
        return s;
    }
    let mode = info.mode;
    s.insert("path".into(), json!(info.path));
    // stat prints `'%04o'` (`4750`), unlike file results' `'0%03o'` (`04750`).
    s.insert("mode".into(), json!(format!("{:04o}", mode & 0o7777)));
    s.insert("isdir".into(), json!(info.kind == FileKind::Directory));
    s.insert("isreg".into(), json!(info.kind == FileKind::File));
    s.insert("islnk".into(), json!(info.kind == FileKind::Symlink));
    s.insert("uid".into(), json!(info.uid));
    s.insert("gid".into(), json!(info.gid));
    s.insert("pw_name".into(), json!(info.owner));
    s.insert("gr_name".into(), json!(info.group));
    s.insert("size".into(), json!(info.size));
    s.insert("mtime".into(), json!(info.mtime));
    for (name, bit) in [
        ("rusr", 0o400),
        ("wusr", 0o200),
        ("xusr", 0o100),
        ("rgrp", 0o040),
        ("wgrp", 0o020),
        ("xgrp", 0o010),
        ("roth", 0o004),
        ("woth", 0o002),
        ("xoth", 0o001),
        ("isuid", 0o4000),
        ("isgid", 0o2000),
    ] {
        s.insert(name.into(), json!(mode & bit != 0));
    }
    if let Some(target) = &info.link_target {
        s.insert("lnk_target".into(), json!(target));
        let source = match (target.starts_with('/'), info.path.rsplit_once('/')) {
            (false, Some((dir, _))) => format!("{dir}/{target}"),
            _ => target.clone(),
        };
        s.insert("lnk_source".into(), json!(source));
    }
    if let Some(digest) = &info.checksum {
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        s.insert("checksum".into(), json!(hex));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(&Stat, v, &PlanContext::new(Path::new("/")))
    }

    fn info(kind: FileKind, mode: u32, link: Option<&str>) -> StatInfo {
        StatInfo {
            path: "/etc/app/conf".into(),
            exists: kind != FileKind::Missing,
            kind,
            mode,
            size: 12,
            uid: 0,
            gid: 4,
            owner: "root".into(),
            group: "adm".into(),
            mtime: 1_700_000_000,
            checksum: None,
            link_target: link.map(String::from),
            ..Default::default()
        }
    }

    #[test]
    fn plans_one_stat_op_with_ansibles_default_sha1_checksum() {
        let stat = |path: &str, checksum| {
            Plan::Remote(Op::Stat {
                path: path.into(),
                checksum,
                follow: false,
            })
        };
        assert_eq!(
            plan(json!({"path": "/x"})).unwrap(),
            stat("/x", Some(Digest::Sha1))
        );
        assert_eq!(
            plan(json!({"path": "/x", "checksum_algorithm": "sha256"})).unwrap(),
            stat("/x", Some(Digest::Sha256))
        );
        assert_eq!(
            plan(json!({"dest": "/y", "checksum_algorithm": "sha256", "get_checksum": false}))
                .unwrap(),
            stat("/y", None)
        );
        assert_eq!(
            plan(json!({})).unwrap_err(),
            "missing required arguments: path"
        );
        assert!(plan(json!({"path": "/x", "checksum_algorithm": "crc"})).is_err());
        assert!(plan(json!({"path": "/x", "checksum_algorithm": "md5"})).is_err());
        assert_eq!(
            plan(json!({"path": "/x", "follow": true})).unwrap(),
            Plan::Remote(Op::Stat {
                path: "/x".into(),
                checksum: Some(Digest::Sha1),
                follow: true
            })
        );
    }

    #[test]
    fn result_has_ansibles_shape() {
        let out = Stat.finish(
            &crate::modules::check(&Stat, json!({"path": "/x"})),
            OpResult::Stat(info(FileKind::File, 0o4750, None)),
        );
        assert!(!out.changed && !out.failed);
        let s = &out.data["stat"];
        assert_eq!(s["exists"], json!(true));
        assert_eq!(s["mode"], json!("4750"));
        assert_eq!(s["isreg"], json!(true));
        assert_eq!(s["isdir"], json!(false));
        assert_eq!(s["pw_name"], json!("root"));
        assert_eq!(s["gr_name"], json!("adm"));
        assert_eq!(s["xgrp"], json!(true));
        assert_eq!(s["woth"], json!(false));
        assert_eq!(s["isuid"], json!(true));
        assert!(s.get("checksum").is_none());

        let missing = Stat.finish(
            &crate::modules::check(&Stat, json!({"path": "/x"})),
            OpResult::Stat(info(FileKind::Missing, 0, None)),
        );
        assert_eq!(missing.data["stat"], json!({"exists": false}));

        let link = Stat.finish(
            &crate::modules::check(&Stat, json!({"path": "/x"})),
            OpResult::Stat(info(FileKind::Symlink, 0o777, Some("real.conf"))),
        );
        assert_eq!(link.data["stat"]["islnk"], json!(true));
        assert_eq!(link.data["stat"]["lnk_source"], json!("/etc/app/real.conf"));
        assert_eq!(link.data["stat"]["lnk_target"], json!("real.conf"));
    }
}
