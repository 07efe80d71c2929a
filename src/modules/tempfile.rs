//! `tempfile`: a new temporary file or directory on the target (GNU `mktemp`, which makes
//! them as Python's `mkstemp`/`mkdtemp` do: a unique name, mode 0600 or 0700, in `path` or
//! `$TMPDIR` or /tmp), then its stat for the path fields Ansible adds to the result.

use serde_json::json;
use turbo_proto::{Command, Exec, FileKind, Op, OpResult};

use super::spec::{Arg, Spec};
use super::{
    Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, mode_string, unexpected,
};

pub struct Tempfile;

/// ansible-core 2.21's tempfile.
static SPEC: Spec = Spec::new(&[
    Arg::path("path"),
    Arg::str("prefix").default_str("ansible."),
    Arg::str("state")
        .default_str("file")
        .choices(&["directory", "file"]),
    Arg::str("suffix").default_str(""),
]);

/// Python's `repr` of a short string, for Ansible's messages.
fn repr(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The `mktemp` command line for the request.
fn mktemp(dir: bool, path: Option<&str>, prefix: &str, suffix: &str) -> Vec<String> {
    let mut argv = vec!["mktemp".to_string()];
    if dir {
        argv.push("-d".into());
    }
    // The directory as a word of its own, which the agent expands as a `path` argument is
    // (`~`, `$HOME`), as Ansible's tempfile does.
    match path {
        Some(p) => argv.extend(["-p".to_string(), p.to_string()]),
        None => argv.push("--tmpdir".into()),
    }
    if !suffix.is_empty() {
        argv.push(format!("--suffix={suffix}"));
    }
    // Python's names have 8 random characters between prefix and suffix.
    argv.push(format!("{prefix}XXXXXXXX"));
    argv
}

impl Module for Tempfile {
    fn name(&self) -> &'static str {
        "tempfile"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        if ctx.check_mode {
            return Ok(Plan::Done(TaskOutcome {
                skipped: true,
                msg: Some("remote module (tempfile) does not support check mode".into()),
                ..TaskOutcome::default()
            }));
        }
        let prefix = args.str("prefix").unwrap_or_default();
        let suffix = args.str("suffix").unwrap_or_default();
        for (name, value) in [("prefix", prefix), ("suffix", suffix)] {
            if value.contains('/') {
                return Ok(Plan::Done(TaskOutcome::failed(format!(
                    "{name} must be a valid file name component, got {}",
                    repr(value)
                ))));
            }
        }
        let argv = mktemp(
            args.str("state") == Some("directory"),
            args.str("path"),
            prefix,
            suffix,
        );
        let exec = Op::Exec(Exec {
            command: Command::Argv(argv),
            chdir: None,
            creates: None,
            removes: None,
            env: Vec::new(),
            stdin: None,
            umask: None,
        });
        Ok(Plan::Step(exec, Next::new(|reply| Ok(after_mktemp(reply)))))
    }
}

fn after_mktemp(reply: OpResult) -> Plan {
    let OpResult::Exec(ran) = reply else {
        return Plan::Done(unexpected("tempfile", reply));
    };
    if ran.rc != 0 {
        let why = String::from_utf8_lossy(&ran.stderr);
        return Plan::Done(TaskOutcome::failed(
            why.trim_end().trim_start_matches("mktemp: ").to_string(),
        ));
    }
    let path = String::from_utf8_lossy(&ran.stdout).trim_end().to_string();
    let stat = Op::Stat {
        path: path.clone(),
        checksum: None,
        follow: false,
    };
    Plan::Step(
        stat,
        Next::new(move |reply| {
            let OpResult::Stat(s) = reply else {
                return Ok(Plan::Done(unexpected("tempfile", reply)));
            };
            let mut out = TaskOutcome {
                changed: true,
                ..TaskOutcome::default()
            };
            out.data.insert("path".into(), json!(path));
            out.data.insert("uid".into(), json!(s.uid));
            out.data.insert("gid".into(), json!(s.gid));
            out.data.insert("owner".into(), json!(s.owner));
            out.data.insert("group".into(), json!(s.group));
            out.data.insert("mode".into(), json!(mode_string(s.mode)));
            let state = if s.kind == FileKind::Directory {
                "directory"
            } else {
                "file"
            };
            out.data.insert("state".into(), json!(state));
            out.data.insert("size".into(), json!(s.size));
            Ok(Plan::Done(out))
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::path::Path;

    fn plan(v: Value) -> Plan {
        crate::modules::try_plan(&Tempfile, v, &PlanContext::new(Path::new("/"))).unwrap()
    }

    #[test]
    fn mktemp_as_python_names_them() {
        let argv = |v: Value| match plan(v) {
            Plan::Step(Op::Exec(e), _) => match e.command {
                Command::Argv(argv) => argv.join(" "),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        assert_eq!(argv(json!({})), "mktemp --tmpdir ansible.XXXXXXXX");
        assert_eq!(
            argv(json!({"state": "directory", "path": "/var/tmp", "prefix": "x", "suffix": ".d"})),
            "mktemp -d -p /var/tmp --suffix=.d xXXXXXXXX"
        );
        // `~` alone is a word the agent expands to the home (package_facts' `path=~`).
        assert_eq!(
            argv(json!({"state": "directory", "path": "~"})),
            "mktemp -d -p ~ ansible.XXXXXXXX"
        );
        let Plan::Done(out) = plan(json!({"prefix": "a/b"})) else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("prefix must be a valid file name component, got 'a/b'")
        );
    }
}
