//! The service modules' one way of asking the target: a POSIX sh script that runs a list
//! of commands and reports each one's exit status, stdout and stderr in sections, and the
//! parser of that report. The planners decide in Rust between steps (look, then act), as
//! Ansible's modules decide between their `run_command` calls. The modules do their own
//! check mode, so the agent runs every step; in check mode they plan only steps that look.
//!
//! Commands write to temporary files, never to the agent's pipes: an init script that
//! starts a daemon leaves it holding whatever it inherited, and a pipe held open would keep
//! the reply from ever ending (Ansible double-forks for the same reason).

use turbo_proto::{Command, Exec, Op, OpResult};

use super::{ModuleError, Next, Plan};

/// Marks the start of a section; chosen to never begin a line a command prints.
const MARK: &str = "@@turbo-play-section";

/// One command of a step.
#[derive(Debug, Clone, PartialEq)]
pub struct Cmd {
    pub label: &'static str,
    pub argv: Vec<String>,
    /// Stop the script after this command when it fails (the steps after it depend on it).
    pub stop_on_failure: bool,
}

impl Cmd {
    pub fn new(label: &'static str, argv: Vec<String>) -> Cmd {
        Cmd {
            label,
            argv,
            stop_on_failure: false,
        }
    }

    pub fn or_stop(mut self) -> Cmd {
        self.stop_on_failure = true;
        self
    }
}

/// What one command did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ran {
    pub label: String,
    pub rc: i32,
    pub out: String,
    pub err: String,
}

/// Every command's outcome, in order (a stopped script lists only those that ran).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    pub ran: Vec<Ran>,
}

impl Report {
    /// The last run of the command labelled so.
    pub fn get(&self, label: &str) -> Option<&Ran> {
        self.ran.iter().rev().find(|r| r.label == label)
    }
}

/// Single quotes for sh, with `'` written as `'\''`.
pub fn sh_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// `prelude` (sh run first, e.g. an `export`) then each command, reported in sections.
pub fn script(prelude: &str, cmds: &[Cmd]) -> String {
    let mut s = String::from(
        "t=$(mktemp -d) || exit 1\ntrap 'rm -rf \"$t\"' EXIT\n\
         run() { label=$1; shift; \"$@\" </dev/null >\"$t/o\" 2>\"$t/e\"; rc=$?; \
         printf '%s %s %s\\n' \"",
    );
    s.push_str(MARK);
    s.push_str("\" \"$label\" \"$rc\"; cat \"$t/o\"; printf '\\n%s\\n' \"");
    s.push_str(MARK);
    s.push_str("-err\"; cat \"$t/e\"; printf '\\n'; return $rc; }\n");
    s.push_str(prelude);
    if !prelude.is_empty() && !prelude.ends_with('\n') {
        s.push('\n');
    }
    for cmd in cmds {
        let words: Vec<String> = cmd.argv.iter().map(|w| sh_quote(w)).collect();
        s.push_str("run ");
        s.push_str(cmd.label);
        s.push(' ');
        s.push_str(&words.join(" "));
        if cmd.stop_on_failure {
            s.push_str(" || exit 0");
        }
        s.push('\n');
    }
    s.push_str("exit 0\n");
    s
}

/// Reads what [`script`] printed. Each section's text is exactly what the command wrote.
pub fn parse(stdout: &str) -> Report {
    let mut ran = Vec::new();
    let err_mark = format!("\n{MARK}-err\n");
    for chunk in stdout.split(&format!("{MARK} ")).skip(1) {
        let (head, body) = chunk.split_once('\n').unwrap_or((chunk, ""));
        let mut words = head.split(' ');
        let label = words.next().unwrap_or_default().to_string();
        let rc = words.next().and_then(|r| r.parse().ok()).unwrap_or(-1);
        let (out, err) = body.split_once(&err_mark).unwrap_or((body, ""));
        let err = err.strip_suffix('\n').unwrap_or(err);
        ran.push(Ran {
            label,
            rc,
            out: out.to_string(),
            err: err.to_string(),
        });
    }
    Report { ran }
}

/// The exec op running these commands.
pub fn op(prelude: &str, cmds: &[Cmd]) -> Op {
    Op::Exec(Exec {
        command: Command::Shell {
            script: script(prelude, cmds),
            executable: Some("/bin/sh".into()),
        },
        chdir: None,
        creates: None,
        removes: None,
        env: vec![
            ("LANG".into(), "C".into()),
            ("LC_ALL".into(), "C".into()),
            ("LC_MESSAGES".into(), "C".into()),
        ],
        stdin: None,
        // Daemons keep the umask they start with; Ansible's modules run under sudo's
        // default of 022, so the files a daemon makes get the same modes as there.
        umask: Some(0o022),
    })
}

/// Runs `cmds` on the target, then plans on with their report.
pub fn step(
    prelude: &str,
    cmds: Vec<Cmd>,
    then: impl FnOnce(Report) -> Result<Plan, ModuleError> + Send + Sync + 'static,
) -> Plan {
    let op = op(prelude, &cmds);
    Plan::Step(
        op,
        Next::new(move |reply| match reply {
            OpResult::Exec(x) if x.ran => then(parse(&String::from_utf8_lossy(&x.stdout))),
            // The modules do their own check mode, so the agent runs every step it gets.
            OpResult::Exec(x) => Ok(Plan::Done(super::TaskOutcome::failed(format!(
                "the agent did not run the service module's commands: {}",
                x.msg
            )))),
            OpResult::Error(e) => Ok(Plan::Done(super::TaskOutcome::failed(e.message))),
            other => Ok(Plan::Done(super::unexpected("service", other))),
        }),
    )
}

/// What the service modules' planner tests share: a step resumed with a probe's output,
/// and one section of it as the probe prints it.
#[cfg(test)]
pub(super) mod test_support {
    use super::super::Plan;
    use turbo_proto::{ExecOutcome, OpResult};

    pub fn resume(plan: Plan, text: &str) -> Plan {
        let Plan::Step(_, next) = plan else {
            panic!("{plan:?}")
        };
        next.resume(OpResult::Exec(ExecOutcome {
            ran: true,
            rc: 0,
            stdout: text.as_bytes().to_vec(),
            stderr: Vec::new(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        }))
        .unwrap()
    }

    pub fn section(label: &str, rc: i32, out: &str) -> String {
        format!(
            "{MARK} {label} {rc}\n{out}\n{MARK}-err\n\n",
            MARK = super::MARK
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_here(cmds: &[Cmd]) -> Report {
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script("x=1", cmds))
            .output()
            .unwrap();
        parse(&String::from_utf8_lossy(&out.stdout))
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn reports_each_commands_status_and_output_exactly() {
        let report = run_here(&[
            Cmd::new("a", argv(&["sh", "-c", "echo one; echo two >&2; exit 3"])),
            Cmd::new("b", argv(&["printf", "%s", "it's"])),
            Cmd::new("c", argv(&["printf", "x\n\n"])),
        ]);
        assert_eq!(
            report.ran,
            vec![
                Ran {
                    label: "a".into(),
                    rc: 3,
                    out: "one\n".into(),
                    err: "two\n".into()
                },
                Ran {
                    label: "b".into(),
                    rc: 0,
                    out: "it's".into(),
                    err: "".into()
                },
                Ran {
                    label: "c".into(),
                    rc: 0,
                    out: "x\n\n".into(),
                    err: "".into()
                },
            ]
        );
    }

    #[test]
    fn stops_after_a_failing_command_that_others_depend_on() {
        let report = run_here(&[
            Cmd::new("a", argv(&["false"])).or_stop(),
            Cmd::new("b", argv(&["true"])),
        ]);
        assert_eq!(report.ran.len(), 1);
        assert_eq!(report.get("a").unwrap().rc, 1);
        assert!(report.get("b").is_none());
        let missing = run_here(&[Cmd::new("m", argv(&["/no/such/tool"]))]);
        assert_eq!(missing.get("m").unwrap().rc, 127);
    }
}
