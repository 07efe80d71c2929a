//! `raw`: a command line handed to the target's shell as it is, Ansible's way to run
//! something where no module can (no Python needed there, none needed here either).

use serde_json::{Value, json};
use turbo_proto::{Command, Exec, Op, OpResult};

use super::spec::{Arg, Spec, Unknown};
use super::text_file::split_lines;
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome, unexpected};

/// Ansible's raw action reads only these two and never checks its arguments: any other
/// name is accepted and changes nothing.
static SPEC: Spec =
    Spec::new(&[Arg::str("_raw_params"), Arg::str("executable")]).unknown(Unknown::Accepted);

pub struct Raw;

impl Module for Raw {
    fn name(&self) -> &'static str {
        "raw"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.free_form()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        // Ansible never runs raw in check mode: a plain skip, without a message.
        if ctx.check_mode {
            return Ok(Plan::Done(TaskOutcome {
                skipped: true,
                ..TaskOutcome::default()
            }));
        }
        let script = args.str("_raw_params").unwrap_or_default().to_string();
        Ok(Plan::Remote(Op::Exec(Exec {
            command: Command::Shell {
                script,
                executable: args.str("executable").map(str::to_string),
            },
            chdir: None,
            creates: None,
            removes: None,
            env: Vec::new(),
            stdin: None,
            umask: None,
        })))
    }

    fn finish(&self, _args: &Args, result: OpResult) -> TaskOutcome {
        match result {
            OpResult::Exec(x) => shell_result(x.rc, &x.stdout, &x.stderr),
            other => unexpected(self.name(), other),
        }
    }
}

/// The result of Ansible's `_low_level_execute_command` as raw and script register it:
/// output as the shell gave it (not stripped), always changed, and a non-zero exit a
/// failure that says only that.
pub(super) fn shell_result(rc: i32, stdout: &[u8], stderr: &[u8]) -> TaskOutcome {
    let stdout = String::from_utf8_lossy(stdout).into_owned();
    let stderr = String::from_utf8_lossy(stderr).into_owned();
    let mut data = serde_json::Map::new();
    data.insert("rc".into(), json!(rc));
    data.insert("stdout_lines".into(), json!(split_lines(&stdout)));
    data.insert("stderr_lines".into(), json!(split_lines(&stderr)));
    data.insert("stdout".into(), Value::String(stdout));
    data.insert("stderr".into(), Value::String(stderr));
    let failed = rc != 0;
    TaskOutcome {
        changed: true,
        failed,
        msg: failed.then(|| "non-zero return code".to_string()),
        data,
        ..TaskOutcome::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use turbo_proto::ExecOutcome;

    fn plan(v: Value, check_mode: bool) -> Plan {
        let ctx = PlanContext {
            check_mode,
            ..PlanContext::new(Path::new("/"))
        };
        crate::modules::try_plan(&Raw, v, &ctx).unwrap()
    }

    #[test]
    fn runs_the_line_through_the_shell() {
        let Plan::Remote(Op::Exec(exec)) = plan(
            json!({"_raw_params": "echo $0 >&2", "executable": "/bin/bash", "anything": 1}),
            false,
        ) else {
            panic!("raw plans one exec")
        };
        assert_eq!(
            exec.command,
            Command::Shell {
                script: "echo $0 >&2".into(),
                executable: Some("/bin/bash".into())
            }
        );
        assert_eq!(
            plan(json!({"_raw_params": "rm -rf /x"}), true),
            Plan::Done(TaskOutcome {
                skipped: true,
                ..TaskOutcome::default()
            })
        );
    }

    #[test]
    fn registers_what_ansible_registers() {
        let args = crate::modules::check(&Raw, json!({"_raw_params": "x"}));
        let reply = |rc| {
            OpResult::Exec(ExecOutcome {
                ran: true,
                rc,
                stdout: b"hi\n".to_vec(),
                stderr: b"".to_vec(),
                start_unix_micros: 0,
                duration_micros: 0,
                msg: String::new(),
            })
        };
        let ok = Raw.finish(&args, reply(0));
        assert_eq!(
            Value::Object(ok.registered()),
            json!({"changed": true, "failed": false, "rc": 0, "stdout": "hi\n",
                   "stdout_lines": ["hi"], "stderr": "", "stderr_lines": []})
        );
        let failed = Raw.finish(&args, reply(3));
        assert!(failed.failed && failed.changed);
        assert_eq!(failed.msg.as_deref(), Some("non-zero return code"));
    }
}
