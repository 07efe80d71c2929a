//! `dpkg_selections`: a package's dpkg selection (install, hold, deinstall, purge), read
//! with `dpkg --get-selections` and set with `dpkg --set-selections` when it differs.

use serde_json::json;
use turbo_proto::{Command, Exec, Op, OpResult};

use super::spec::{Arg, Spec};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};

pub struct DpkgSelections;

static SPEC: Spec = Spec::new(&[
    Arg::str("name").required(),
    Arg::str("selection")
        .choices(&["install", "hold", "deinstall", "purge"])
        .required(),
]);

fn dpkg(args: &[&str], stdin: Option<Vec<u8>>) -> Op {
    let mut argv = vec!["/usr/bin/dpkg".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    Op::Exec(Exec {
        command: Command::Argv(argv),
        chdir: None,
        creates: None,
        removes: None,
        env: ["LANG", "LC_ALL", "LC_MESSAGES", "LC_CTYPE", "LANGUAGE"]
            .iter()
            .map(|k| (k.to_string(), "C.UTF-8".to_string()))
            .collect(),
        stdin,
        umask: None,
    })
}

/// The current selection from `dpkg --get-selections NAME`'s `name<tabs>selection`.
fn current(stdout: &str) -> String {
    stdout
        .split_whitespace()
        .nth(1)
        .map_or_else(|| "not present".to_string(), str::to_string)
}

impl Module for DpkgSelections {
    fn name(&self) -> &'static str {
        "dpkg_selections"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// Reading the selection must run in check mode too.
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let name = args.str("name").unwrap_or_default().to_string();
        let selection = args.str("selection").unwrap_or_default().to_string();
        let check = ctx.check_mode;
        Ok(Plan::Step(
            dpkg(&["--get-selections", &name], None),
            Next::new(move |reply| {
                let OpResult::Exec(x) = reply else {
                    return Ok(Plan::Done(unexpected("dpkg_selections", reply)));
                };
                let stderr = String::from_utf8_lossy(&x.stderr);
                if stderr.contains("no packages found matching") {
                    return Ok(Plan::Done(TaskOutcome::failed(format!(
                        "Failed to find package '{name}' to perform selection '{selection}'."
                    ))));
                }
                if x.rc != 0 {
                    return Ok(Plan::Done(TaskOutcome::failed(stderr.trim().to_string())));
                }
                let before = current(&String::from_utf8_lossy(&x.stdout));
                let mut out = TaskOutcome {
                    changed: before != selection,
                    ..TaskOutcome::default()
                };
                out.data.insert("before".into(), json!(before));
                out.data.insert("after".into(), json!(selection));
                if check || !out.changed {
                    return Ok(Plan::Done(out));
                }
                let line = format!("{name} {selection}").into_bytes();
                Ok(Plan::Step(
                    dpkg(&["--set-selections"], Some(line)),
                    Next::new(move |reply| match reply {
                        OpResult::Exec(x) if x.rc == 0 => Ok(Plan::Done(out)),
                        OpResult::Exec(x) => Ok(Plan::Done(TaskOutcome::failed(
                            String::from_utf8_lossy(&x.stderr).trim().to_string(),
                        ))),
                        other => Ok(Plan::Done(unexpected("dpkg_selections", other))),
                    }),
                ))
            }),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::try_plan;
    use turbo_proto::ExecOutcome;

    fn reply(stdout: &str, stderr: &str) -> OpResult {
        OpResult::Exec(ExecOutcome {
            ran: true,
            rc: 0,
            stdout: stdout.into(),
            stderr: stderr.into(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        })
    }

    fn resume(plan: Plan, r: OpResult) -> Plan {
        match plan {
            Plan::Step(_, next) => next.resume(r).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn holds_a_package_once() {
        let ctx = PlanContext::new(std::path::Path::new("/"));
        let plan = try_plan(
            &DpkgSelections,
            serde_json::json!({"name": "tree", "selection": "hold"}),
            &ctx,
        )
        .unwrap();
        let Plan::Step(Op::Exec(x), _) = &plan else {
            panic!()
        };
        assert_eq!(
            x.command,
            Command::Argv(vec![
                "/usr/bin/dpkg".into(),
                "--get-selections".into(),
                "tree".into()
            ])
        );
        let plan = resume(plan, reply("tree\t\t\t\t\tinstall\n", ""));
        let Plan::Step(Op::Exec(x), _) = &plan else {
            panic!()
        };
        assert_eq!(x.stdin.as_deref(), Some(&b"tree hold"[..]));
        let Plan::Done(out) = resume(plan, reply("", "")) else {
            panic!()
        };
        assert!(out.changed);
        assert_eq!(out.data["before"], "install");

        let plan = try_plan(
            &DpkgSelections,
            serde_json::json!({"name": "tree", "selection": "hold"}),
            &ctx,
        )
        .unwrap();
        let Plan::Done(out) = resume(plan, reply("tree\thold\n", "")) else {
            panic!()
        };
        assert!(!out.changed);
    }

    #[test]
    fn an_unknown_package_fails_in_ansibles_words() {
        let ctx = PlanContext::new(std::path::Path::new("/"));
        let plan = try_plan(
            &DpkgSelections,
            serde_json::json!({"name": "nope", "selection": "hold"}),
            &ctx,
        )
        .unwrap();
        let Plan::Done(out) = resume(plan, reply("", "dpkg: no packages found matching nope\n"))
        else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("Failed to find package 'nope' to perform selection 'hold'.")
        );
    }
}
