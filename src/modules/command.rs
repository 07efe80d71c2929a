//! `command` (argv, no shell) and `shell` (`/bin/sh -c`).

use super::text_file::split_lines;
use serde_json::{Value, json};
use turbo_proto::{Command, Exec, ExecOutcome, Op, OpResult};

use super::spec::{Arg, Elem, Spec, Unknown};
use super::{
    Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome, command_expand, unexpected,
};

pub struct CommandModule;
pub struct Shell;

const CHECK_MODE_MSG: &str = "Command would have run if not in check mode";

/// Both actions hand their arguments to Ansible's `command` module (shell sets
/// `_uses_shell`), so both check against its spec and name it in their messages.
static SPEC: Spec = Spec::new(&[
    Arg::str("_raw_params"),
    Arg::bool("_uses_shell")
        .default_bool(false)
        .no_effect("set by the shell action itself"),
    Arg::list("argv", Elem::Str),
    Arg::path("chdir"),
    Arg::str("cmd"),
    Arg::path("creates"),
    Arg::path("executable"),
    Arg::bool("expand_argument_vars").default_bool(true),
    Arg::path("removes"),
    Arg::str("stdin"),
    Arg::bool("stdin_add_newline").default_bool(true),
    Arg::bool("strip_empty_ends").default_bool(true),
])
.mutually_exclusive(&[&["_raw_params", "cmd", "argv"]])
.required_one_of(&[&["_raw_params", "cmd", "argv"]])
.unknown(Unknown::ModuleAs("ansible.legacy.command"));

impl Module for CommandModule {
    fn name(&self) -> &'static str {
        "command"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.free_form()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let argv = match command_line(args) {
            Some(line) => crate::shell_words::split(&line).map_err(ModuleError::Invalid)?,
            None => args.str_list("argv"),
        };
        if argv.is_empty() {
            return Err(ModuleError::Invalid("no command given".into()));
        }
        let command =
            if !args.bool("expand_argument_vars") && command_expand::needs_expansion(&argv) {
                Command::Shell {
                    script: command_expand::literal_script(&argv),
                    executable: None,
                }
            } else {
                Command::Argv(argv)
            };
        let mut plan = plan_exec(args, ctx, command)?;
        // Ansible's command module ignores `executable`, and says so.
        if let (Some(executable), Plan::Done(outcome)) = (args.str("executable"), &mut plan) {
            outcome
                .data
                .insert("warnings".into(), json!([executable_warning(executable)]));
        }
        Ok(plan)
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        let mut out = exec_result(self.name(), cmd_value(args, false), args, result);
        if let Some(executable) = args.str("executable") {
            out.data
                .insert("warnings".into(), json!([executable_warning(executable)]));
        }
        out
    }
}

fn executable_warning(executable: &str) -> String {
    format!(
        "As of Ansible 2.4, the parameter 'executable' is no longer supported with the 'command' module. Not using '{executable}'."
    )
}

impl Module for Shell {
    fn name(&self) -> &'static str {
        "shell"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.free_form()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let script = command_line(args)
            .or_else(|| {
                let argv = args.str_list("argv");
                (!argv.is_empty()).then(|| argv.join(" "))
            })
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| ModuleError::Invalid("no command given".into()))?;
        let executable = args.str("executable").map(str::to_string);
        plan_exec(args, ctx, Command::Shell { script, executable })
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        exec_result(self.name(), cmd_value(args, true), args, result)
    }
}

/// The free-form command line, or `cmd:`.
fn command_line(args: &Args) -> Option<String> {
    args.str("_raw_params")
        .or_else(|| args.str("cmd"))
        .map(str::to_string)
}

fn plan_exec(args: &Args, ctx: &PlanContext, command: Command) -> Result<Plan, ModuleError> {
    let creates = args.str("creates").map(str::to_string);
    let removes = args.str("removes").map(str::to_string);
    // Check mode can only tell something when creates/removes may skip the command; the
    // agent checks those without running anything.
    if ctx.check_mode && creates.is_none() && removes.is_none() {
        let mut data = serde_json::Map::new();
        data.insert("cmd".into(), cmd_from(&command));
        for key in ["start", "end", "delta"] {
            data.insert(key.into(), Value::Null);
        }
        data.insert("rc".into(), json!(0));
        data.insert("stdout".into(), json!(""));
        data.insert("stderr".into(), json!(""));
        data.insert("stdout_lines".into(), json!([]));
        data.insert("stderr_lines".into(), json!([]));
        return Ok(Plan::Done(TaskOutcome {
            skipped: true,
            msg: Some(CHECK_MODE_MSG.into()),
            data,
            ..TaskOutcome::default()
        }));
    }
    let stdin = args.str("stdin").map(|text| {
        let mut text = text.to_string();
        if args.bool("stdin_add_newline") {
            text.push('\n');
        }
        text.into_bytes()
    });
    Ok(Plan::Remote(Op::Exec(Exec {
        command,
        chdir: args.str("chdir").map(str::to_string),
        creates,
        removes,
        env: Vec::new(),
        stdin,
        umask: None,
    })))
}

/// The result's `cmd`: the argv list for command, the script text for shell.
fn cmd_value(args: &Args, shell: bool) -> Value {
    match (shell, command_line(args)) {
        (true, Some(line)) => json!(line),
        (false, Some(line)) => crate::shell_words::split(&line)
            .map(|argv| json!(argv))
            .unwrap_or(json!(line)),
        (_, None) => args.raw("argv").cloned().unwrap_or(Value::Null),
    }
}

fn cmd_from(command: &Command) -> Value {
    match command {
        Command::Argv(argv) => json!(argv),
        Command::Shell { script, .. } => json!(script),
    }
}

fn exec_result(module: &str, cmd: Value, args: &Args, result: OpResult) -> TaskOutcome {
    let x = match result {
        OpResult::Exec(x) => x,
        OpResult::Error(e) if e.message.starts_with(CHDIR_FAILED) => {
            return not_run(cmd, None, format!("{CHDIR_FAILED}."));
        }
        other => return unexpected(module, other),
    };
    if let Some(errno) = spawn_errno(&x) {
        // What `run_command` answers when the program cannot be started: its arguments
        // joined as `_clean_args` shows them, the errno as rc.
        let joined = match &cmd {
            Value::Array(words) => Value::String(
                words
                    .iter()
                    .map(|w| python_quote(w.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            other => other.clone(),
        };
        return not_run(joined, Some(errno), "Error executing command.".into());
    }
    let strip = args.bool("strip_empty_ends");
    let text = |bytes: &[u8]| {
        let s = String::from_utf8_lossy(bytes).into_owned();
        if strip {
            s.trim_end_matches(['\r', '\n']).to_string()
        } else {
            s
        }
    };
    let stdout = text(&x.stdout);
    let stderr = text(&x.stderr);
    let mut data = serde_json::Map::new();
    data.insert("cmd".into(), cmd);
    let (changed, failed, msg) = if x.ran {
        let end = x.start_unix_micros + x.duration_micros as i64;
        data.insert("start".into(), json!(format_utc_time(x.start_unix_micros)));
        data.insert("end".into(), json!(format_utc_time(end)));
        data.insert("delta".into(), json!(format_delta(x.duration_micros)));
        if x.rc != 0 {
            let msg = if x.msg.is_empty() {
                "The command exited with a non-zero return code.".to_string()
            } else {
                x.msg.clone()
            };
            (true, true, msg)
        } else {
            (true, false, String::new())
        }
    } else {
        for key in ["start", "end", "delta"] {
            data.insert(key.into(), Value::Null);
        }
        if is_check_mode_skip(&x) {
            // creates/removes did not skip it: it would have run.
            (true, false, CHECK_MODE_MSG.to_string())
        } else {
            (false, false, x.msg.clone())
        }
    };
    data.insert("rc".into(), json!(x.rc));
    data.insert("stdout".into(), json!(stdout));
    data.insert("stderr".into(), json!(stderr));
    data.insert("stdout_lines".into(), json!(split_lines(&stdout)));
    data.insert("stderr_lines".into(), json!(split_lines(&stderr)));
    TaskOutcome {
        changed,
        failed,
        msg: Some(msg),
        data,
        ..TaskOutcome::default()
    }
}

const CHDIR_FAILED: &str = "Unable to change directory before execution";

/// The errno of a program the agent could not start (`... (os error N): program`).
fn spawn_errno(x: &ExecOutcome) -> Option<i32> {
    let rest = x.msg.split("(os error ").nth(1)?;
    rest.split(')').next()?.parse().ok()
}

/// Python's `shlex.quote`.
fn python_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\"'\"'"))
    }
}

/// A command that never ran: Ansible's failure with empty output.
fn not_run(cmd: Value, rc: Option<i32>, msg: String) -> TaskOutcome {
    let mut data = serde_json::Map::new();
    data.insert("cmd".into(), cmd);
    if let Some(rc) = rc {
        data.insert("rc".into(), json!(rc));
    }
    for key in ["stdout", "stderr"] {
        data.insert(key.into(), json!(""));
        data.insert(format!("{key}_lines"), json!([]));
    }
    TaskOutcome {
        failed: true,
        msg: Some(msg),
        data,
        ..TaskOutcome::default()
    }
}

/// The agent skips without running in check mode only after creates/removes let it through.
fn is_check_mode_skip(x: &ExecOutcome) -> bool {
    x.msg.contains("check mode")
}

/// Python's `str(timedelta)`: "0:00:00.003210", no fraction when it is zero.
fn format_delta(micros: u64) -> String {
    let secs = micros / 1_000_000;
    let frac = micros % 1_000_000;
    let (h, m, s) = (secs / 3600, (secs / 60) % 60, secs % 60);
    if frac == 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{h}:{m:02}:{s:02}.{frac:06}")
    }
}

/// Python's `str(datetime)`: "2026-11-30 10:44:43.123456". In UTC: the controller does not
/// carry a time zone database.
fn format_utc_time(unix_micros: i64) -> String {
    let secs = unix_micros.div_euclid(1_000_000);
    let frac = unix_micros.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    let (y, mo, d) = civil_from_days(days);
    format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}.{frac:06}",
        tod / 3600,
        (tod / 60) % 60,
        tod % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's method).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use turbo_proto::{ErrorKind, OpError};

    fn args(v: Value) -> Args {
        crate::modules::check(&CommandModule, v)
    }

    fn exec(command: Command) -> Exec {
        Exec::plain(command)
    }

    fn plan(m: &dyn Module, v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(m, v, &PlanContext::new(Path::new("/")))
    }

    fn argv(words: &[&str]) -> Command {
        Command::Argv(words.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn command_plans_argv() {
        assert_eq!(
            plan(&CommandModule, json!({"_raw_params": "touch '/tmp/a b'"})).unwrap(),
            Plan::Remote(Op::Exec(exec(argv(&["touch", "/tmp/a b"]))))
        );
        assert_eq!(
            plan(&CommandModule, json!({"argv": ["ls", "-l", 5]})).unwrap(),
            Plan::Remote(Op::Exec(exec(argv(&["ls", "-l", "5"]))))
        );
        let full = plan(
            &CommandModule,
            json!({"cmd": "cat", "chdir": "/tmp", "creates": "/x", "removes": "/y", "stdin": "hi"}),
        )
        .unwrap();
        assert_eq!(
            full,
            Plan::Remote(Op::Exec(Exec {
                chdir: Some("/tmp".into()),
                creates: Some("/x".into()),
                removes: Some("/y".into()),
                stdin: Some(b"hi\n".to_vec()),
                ..exec(argv(&["cat"]))
            }))
        );
        let Plan::Remote(Op::Exec(e)) = plan(
            &CommandModule,
            json!({"cmd": "cat", "stdin": "hi", "stdin_add_newline": false}),
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(e.stdin, Some(b"hi".to_vec()));
    }

    #[test]
    fn unexpanded_arguments_reach_the_program_as_written() {
        assert_eq!(
            plan(
                &CommandModule,
                json!({"cmd": "echo $HOME ~", "expand_argument_vars": false})
            )
            .unwrap(),
            Plan::Remote(Op::Exec(exec(Command::Shell {
                script: "exec 'echo' '$HOME' '~'".into(),
                executable: None,
            })))
        );
        // The agent expands them itself, as Ansible's run_command.
        assert_eq!(
            plan(&CommandModule, json!({"cmd": "echo $HOME"})).unwrap(),
            Plan::Remote(Op::Exec(exec(argv(&["echo", "$HOME"]))))
        );
    }

    #[test]
    fn command_argument_errors() {
        let msg = |v: Value| plan(&CommandModule, v).unwrap_err();
        assert_eq!(
            msg(json!({"chdir": "/"})),
            "one of the following is required: _raw_params, cmd, argv"
        );
        assert_eq!(
            msg(json!({"cmd": "ls", "argv": ["ls"]})),
            "parameters are mutually exclusive: _raw_params|cmd|argv"
        );
        assert_eq!(
            msg(json!({"cmd": "ls", "foo": 1})),
            "Unsupported parameters for (ansible.legacy.command) module: foo. Supported parameters include: _raw_params, _uses_shell, argv, chdir, cmd, creates, executable, expand_argument_vars, removes, stdin, stdin_add_newline, strip_empty_ends."
        );
        assert!(msg(json!({"cmd": "echo 'x"})).starts_with("No closing quotation"));
        assert_eq!(msg(json!({"_raw_params": ""})), "no command given");
    }

    #[test]
    fn shell_plans_a_script() {
        assert_eq!(
            plan(
                &Shell,
                json!({"_raw_params": "echo $HOME | wc -c", "executable": "/bin/bash"})
            )
            .unwrap(),
            Plan::Remote(Op::Exec(exec(Command::Shell {
                script: "echo $HOME | wc -c".into(),
                executable: Some("/bin/bash".into())
            })))
        );
        assert_eq!(
            plan(&Shell, json!({"_raw_params": " "})).unwrap_err(),
            "no command given"
        );
    }

    #[test]
    fn check_mode_skips_unless_creates_or_removes() {
        let dir = Path::new("/");
        let ctx = PlanContext {
            check_mode: true,
            ..PlanContext::new(dir)
        };
        let Plan::Done(out) = CommandModule
            .plan(&args(json!({"_raw_params": "rm -rf /x"})), &ctx)
            .unwrap()
        else {
            panic!()
        };
        assert!(out.skipped && !out.changed);
        assert_eq!(out.msg.as_deref(), Some(CHECK_MODE_MSG));
        assert_eq!(out.data["cmd"], json!(["rm", "-rf", "/x"]));
        assert!(matches!(
            Shell
                .plan(&args(json!({"_raw_params": "x", "creates": "/x"})), &ctx)
                .unwrap(),
            Plan::Remote(_)
        ));
    }

    fn outcome(ran: bool, rc: i32, stdout: &str, msg: &str) -> OpResult {
        OpResult::Exec(ExecOutcome {
            ran,
            rc,
            stdout: stdout.as_bytes().to_vec(),
            stderr: b"warn\r\n".to_vec(),
            start_unix_micros: 1_796_035_483_123_456,
            duration_micros: 3_210,
            msg: msg.into(),
        })
    }

    #[test]
    fn finish_reports_ansible_shape() {
        let a = args(json!({"_raw_params": "echo 'a b'"}));
        let out = CommandModule.finish(&a, outcome(true, 0, "l1\nl2\n\n", ""));
        assert!(out.changed && !out.failed && !out.skipped);
        assert_eq!(out.msg.as_deref(), Some(""));
        assert_eq!(
            Value::Object(out.data),
            json!({
                "cmd": ["echo", "a b"],
                "start": "2026-11-30 10:44:43.123456",
                "end": "2026-11-30 10:44:43.126666",
                "delta": "0:00:00.003210",
                "rc": 0,
                "stdout": "l1\nl2",
                "stderr": "warn",
                "stdout_lines": ["l1", "l2"],
                "stderr_lines": ["warn"],
            })
        );
        let out = Shell.finish(&a, outcome(true, 3, "", ""));
        assert!(out.failed && out.changed);
        assert_eq!(
            out.msg.as_deref(),
            Some("The command exited with a non-zero return code.")
        );
        assert_eq!(out.data["cmd"], json!("echo 'a b'"));
        assert_eq!(out.data["rc"], json!(3));
    }

    #[test]
    fn finish_for_skipped_commands() {
        let a = args(json!({"_raw_params": "make", "creates": "/out"}));
        let out = CommandModule.finish(
            &a,
            outcome(
                false,
                0,
                "skipped, since /out exists",
                "Did not run command since '/out' exists",
            ),
        );
        assert!(!out.changed && !out.failed);
        assert_eq!(
            out.msg.as_deref(),
            Some("Did not run command since '/out' exists")
        );
        assert_eq!(out.data["stdout"], json!("skipped, since /out exists"));
        assert_eq!(out.data["delta"], Value::Null);
        let out = CommandModule.finish(&a, outcome(false, 0, "", "skipped in check mode"));
        assert!(out.changed && !out.failed);
        assert_eq!(out.msg.as_deref(), Some(CHECK_MODE_MSG));
        let out = CommandModule.finish(
            &a,
            OpResult::Error(OpError {
                kind: ErrorKind::NotFound,
                message: "Unable to change directory before execution: /x is not a directory"
                    .into(),
            }),
        );
        assert!(out.failed && !out.changed);
        assert_eq!(
            out.msg.as_deref(),
            Some("Unable to change directory before execution.")
        );
        assert_eq!(
            Value::Object(out.data),
            json!({"cmd": ["make"], "stdout": "", "stdout_lines": [], "stderr": "", "stderr_lines": []})
        );
    }

    #[test]
    fn a_program_that_cannot_start_is_ansibles_error_executing_command() {
        let a = args(json!({"argv": ["/no/prog", "a b"]}));
        let out = CommandModule.finish(
            &a,
            outcome(
                true,
                2,
                "",
                "No such file or directory (os error 2): /no/prog",
            ),
        );
        assert!(out.failed && !out.changed);
        assert_eq!(out.msg.as_deref(), Some("Error executing command."));
        assert_eq!(
            Value::Object(out.data),
            json!({"cmd": "/no/prog 'a b'", "rc": 2, "stdout": "", "stdout_lines": [], "stderr": "", "stderr_lines": []})
        );
    }

    #[test]
    fn time_formats_match_python() {
        assert_eq!(format_delta(3_210), "0:00:00.003210");
        assert_eq!(format_delta(3_600_000_000), "1:00:00");
        assert_eq!(format_delta(61_500_000), "0:01:01.500000");
        assert_eq!(format_utc_time(0), "1970-01-01 00:00:00.000000");
        assert_eq!(
            format_utc_time(951_782_400_000_001),
            "2000-02-29 00:00:00.000001"
        );
        assert_eq!(split_lines("a\r\nb\rc\n"), ["a", "b", "c"]);
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("\n"), [""]);
    }
}
