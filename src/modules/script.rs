//! `script`: a controller-side script copied to the target and run there with its
//! arguments, as Ansible's script action does.
//!
//! One round trip: the script's bytes go as the stdin of a small shell program that
//! writes them into a fresh private directory, runs the task's command line with the
//! script's path put in place of its first word (Ansible's own substitution, so the
//! user's quoting of the arguments is kept), and removes the directory whatever happens.

use std::sync::atomic::{AtomicU64, Ordering};

use turbo_proto::{Command, Exec, Op, OpResult};

use super::raw::shell_result;
use super::spec::{Arg, Spec};
use super::{
    Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome, find_local_source, read_local,
    unexpected,
};

static SPEC: Spec = Spec::new(&[
    Arg::str("_raw_params"),
    Arg::str("chdir"),
    Arg::str("cmd"),
    Arg::str("creates"),
    Arg::str("executable"),
    Arg::str("removes"),
])
.mutually_exclusive(&[&["_raw_params", "cmd"]])
.required_one_of(&[&["_raw_params", "cmd"]]);

const CHECK_MODE_MSG: &str = "Check mode is not supported for this task.";

pub struct Script;

impl Module for Script {
    fn name(&self) -> &'static str {
        "script"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.free_form()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let chdir = args.str("chdir").filter(|dir| !dir.is_empty());
        if let Some(dir) = chdir
            && !dir.starts_with('/')
        {
            return Err(ModuleError::Invalid(format!(
                "chdir {dir} must be an absolute path for a Unix-aware remote node"
            )));
        }
        let line = args
            .str("_raw_params")
            .or_else(|| args.str("cmd"))
            .unwrap_or_default()
            .trim();
        let words = crate::shell_words::split(line).map_err(ModuleError::Invalid)?;
        let Some(source) = words.first() else {
            return Err(ModuleError::Invalid("no script given".into()));
        };
        let path = find_local_source(source, ctx, "files")
            .map_err(|_| ModuleError::Invalid(not_found_message(source, ctx)))?;
        let creates = args.str("creates").filter(|p| !p.is_empty());
        let removes = args.str("removes").filter(|p| !p.is_empty());
        // Without creates/removes nothing can tell what the script would do.
        if ctx.check_mode && creates.is_none() && removes.is_none() {
            return Ok(Plan::Done(TaskOutcome {
                skipped: true,
                msg: Some(CHECK_MODE_MSG.into()),
                ..TaskOutcome::default()
            }));
        }
        let content = read_local(&path)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "script".into());
        Ok(Plan::Remote(Op::Exec(Exec {
            command: Command::Shell {
                script: runner(line, source, &name, args.str("executable")),
                executable: None,
            },
            chdir: chdir.map(str::to_string),
            creates: creates.map(str::to_string),
            removes: removes.map(str::to_string),
            env: Vec::new(),
            stdin: Some(content),
            umask: None,
        })))
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        match result {
            OpResult::Exec(x) if x.ran => shell_result(x.rc, &x.stdout, &x.stderr),
            OpResult::Exec(x) if x.msg.contains("check mode") => TaskOutcome {
                changed: true,
                ..TaskOutcome::default()
            },
            OpResult::Exec(x) => {
                let msg = if x.msg.ends_with("does not exist") {
                    format!(
                        "{} does not exist, matching removes option",
                        args.str("removes").unwrap_or_default()
                    )
                } else {
                    format!(
                        "{} exists, matching creates option",
                        args.str("creates").unwrap_or_default()
                    )
                };
                TaskOutcome {
                    skipped: true,
                    msg: Some(msg),
                    ..TaskOutcome::default()
                }
            }
            other => unexpected(self.name(), other),
        }
    }
}

/// Ansible's message for a script its search path does not hold.
fn not_found_message(source: &str, ctx: &PlanContext) -> String {
    let mut searched = Vec::new();
    for dir in [ctx.role_dir, ctx.task_dir, Some(ctx.playbook_dir)]
        .into_iter()
        .flatten()
    {
        searched.push(dir.join("files").join(source).display().to_string());
        searched.push(dir.join(source).display().to_string());
    }
    format!(
        "Could not find or access '{source}'\nSearched in:\n\t{} on the Ansible Controller.",
        searched.join("\n\t")
    )
}

/// The shell program that stores the script (read from stdin) in a new private
/// directory, runs `line` with `source` replaced by its path there, and removes it.
fn runner(line: &str, source: &str, name: &str, executable: Option<&str>) -> String {
    let dir = format!("/tmp/turbo-play-script-{}", unique_suffix());
    let remote = format!("{dir}/{name}");
    let command = line.replace(source, &remote);
    let command = match executable {
        Some(executable) => format!("{executable} {command}"),
        None => command,
    };
    let (qdir, qremote) = (sh_quote(&dir), sh_quote(&remote));
    format!(
        "mkdir -m 0700 {qdir} || exit 1\n\
         trap 'rm -rf {dir}' EXIT\n\
         cat > {qremote} && chmod 0700 {qremote} || exit 1\n\
         {command}\n"
    )
}

/// Different for every script run from this controller: its pid, the time, a counter.
fn unique_suffix() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Python's `shlex.quote`.
fn sh_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\"'\"'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};
    use std::path::Path;
    use turbo_proto::ExecOutcome;

    fn plan_in(dir: &Path, v: Value, check_mode: bool) -> Result<Plan, String> {
        let ctx = PlanContext {
            check_mode,
            ..PlanContext::new(dir)
        };
        crate::modules::try_plan(&Script, v, &ctx)
    }

    #[test]
    fn sends_the_script_and_runs_the_line_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("files")).unwrap();
        std::fs::write(dir.path().join("files/s.sh"), "#!/bin/sh\necho hi\n").unwrap();
        let Plan::Remote(Op::Exec(exec)) = plan_in(
            dir.path(),
            json!({"_raw_params": " s.sh --opt \"a b\" ", "chdir": "/srv", "executable": "bash"}),
            false,
        )
        .unwrap() else {
            panic!("script plans one exec")
        };
        assert_eq!(exec.stdin.as_deref(), Some(&b"#!/bin/sh\necho hi\n"[..]));
        assert_eq!(exec.chdir.as_deref(), Some("/srv"));
        let Command::Shell { script, .. } = &exec.command else {
            panic!("a shell program")
        };
        let last = script.lines().last().unwrap();
        assert!(last.starts_with("bash /tmp/turbo-play-script-"), "{script}");
        assert!(last.ends_with("/s.sh --opt \"a b\""), "{script}");
        assert!(script.contains("trap 'rm -rf /tmp/turbo-play-script-"));
    }

    #[test]
    fn argument_errors_and_check_mode_are_ansibles() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.sh"), "").unwrap();
        let err = |v: Value| plan_in(dir.path(), v, false).unwrap_err();
        assert_eq!(
            err(json!({"chdir": "/"})),
            "one of the following is required: _raw_params, cmd"
        );
        assert_eq!(
            err(json!({"_raw_params": "s.sh", "chdir": "tmp"})),
            "chdir tmp must be an absolute path for a Unix-aware remote node"
        );
        let missing = err(json!({"cmd": "nothere.sh"}));
        assert!(
            missing.starts_with("Could not find or access 'nothere.sh'\nSearched in:\n\t"),
            "{missing}"
        );
        assert!(missing.ends_with("/nothere.sh on the Ansible Controller."));
        assert_eq!(
            plan_in(dir.path(), json!({"_raw_params": "s.sh"}), true).unwrap(),
            Plan::Done(TaskOutcome {
                skipped: true,
                msg: Some(CHECK_MODE_MSG.into()),
                ..TaskOutcome::default()
            })
        );
    }

    #[test]
    fn skips_say_which_option_matched() {
        let args = crate::modules::check(
            &Script,
            json!({"_raw_params": "s.sh", "creates": "/etc/passwd", "removes": "/x"}),
        );
        let skipped = |msg: &str| {
            Script.finish(
                &args,
                OpResult::Exec(ExecOutcome {
                    ran: false,
                    rc: 0,
                    stdout: Vec::new(),
                    stderr: Vec::new(),
                    start_unix_micros: 0,
                    duration_micros: 0,
                    msg: msg.into(),
                }),
            )
        };
        let out = skipped("Did not run command since '/etc/passwd' exists");
        assert!(out.skipped && !out.changed);
        assert_eq!(
            out.msg.as_deref(),
            Some("/etc/passwd exists, matching creates option")
        );
        let out = skipped("Did not run command since '/x' does not exist");
        assert_eq!(
            out.msg.as_deref(),
            Some("/x does not exist, matching removes option")
        );
        let out = skipped("skipped in check mode");
        assert!(out.changed && !out.skipped && out.msg.is_none());
    }
}
