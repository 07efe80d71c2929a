//! `getent`: one `getent DATABASE [KEY] [-s SERVICE]` on the target; its lines become the
//! `getent_<database>` fact, split as Ansible splits them (on `:` for the colon
//! databases, on whitespace otherwise), keys seen twice gathering their records in a list.

use serde_json::{Map, Value, json};
use turbo_proto::{Command, Exec, Op, OpResult};

use super::spec::{Arg, Spec};
use super::text_file::split_lines;
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome, unexpected};

pub struct Getent;

static SPEC: Spec = Spec::new(&[
    Arg::str("database").required(),
    Arg::bool("fail_key").default_bool(true),
    Arg::str("key"),
    Arg::str("service"),
    Arg::str("split"),
]);

const COLON_DATABASES: &[&str] = &["passwd", "shadow", "group", "gshadow"];

impl Module for Getent {
    fn name(&self) -> &'static str {
        "getent"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// Read-only: the lookup runs in check mode too, as Ansible's (supports_check_mode).
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let database = args.str("database").unwrap_or_default();
        let mut argv = vec!["getent".to_string(), database.to_string()];
        if let Some(key) = args.str("key") {
            argv.push(key.to_string());
        }
        if let Some(service) = args.str("service") {
            argv.extend(["-s".to_string(), service.to_string()]);
        }
        if args.str("split") == Some("") {
            return Ok(Plan::Done(TaskOutcome::failed(
                "Invalid split value. The value must be a non-empty string",
            )));
        }
        Ok(Plan::Remote(Op::Exec(Exec::plain(Command::Argv(argv)))))
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        let OpResult::Exec(ran) = result else {
            return unexpected(self.name(), result);
        };
        let database = args.str("database").unwrap_or_default();
        let split = args
            .str("split")
            .or(COLON_DATABASES.contains(&database).then_some(":"));
        let tree = format!("getent_{database}");
        let facts = |entries: Map<String, Value>| {
            let mut data = Map::new();
            data.insert("ansible_facts".into(), json!({ tree.clone(): entries }));
            data
        };
        let msg = match ran.rc {
            0 => {
                let stdout = String::from_utf8_lossy(&ran.stdout);
                return TaskOutcome {
                    data: facts(records(&stdout, split)),
                    ..TaskOutcome::default()
                };
            }
            1 => "Missing arguments, or database unknown.",
            2 => {
                let msg = "One or more supplied key could not be found in the database.";
                if !args.bool("fail_key") {
                    let mut entries = Map::new();
                    entries.insert(args.str("key").unwrap_or_default().into(), Value::Null);
                    return TaskOutcome {
                        msg: Some(msg.into()),
                        data: facts(entries),
                        ..TaskOutcome::default()
                    };
                }
                msg
            }
            3 => "Enumeration not supported on this database.",
            127 => "Failed to find required executable \"getent\" in paths on the target",
            _ => "Unexpected failure!",
        };
        TaskOutcome::failed(msg)
    }
}

/// Each line split on `split` (Python's `str.split(sep)`, or `str.split()` without one):
/// the first field keys the rest.
fn records(stdout: &str, split: Option<&str>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut seen: std::collections::HashMap<String, usize> = Default::default();
    for line in split_lines(stdout) {
        let fields: Vec<&str> = match split {
            Some(sep) => line.split(sep).collect(),
            None => line.split_whitespace().collect(),
        };
        let Some((first, rest)) = fields.split_first() else {
            continue;
        };
        let rest = json!(rest);
        match seen.get_mut(*first) {
            Some(count) => {
                let entry = out.get_mut(*first).expect("a seen key has an entry");
                if *count == 1 {
                    *entry = json!([entry.take()]);
                }
                entry.as_array_mut().expect("made a list").push(rest);
                *count += 1;
            }
            None => {
                out.insert(first.to_string(), rest);
                seen.insert(first.to_string(), 1);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use turbo_proto::ExecOutcome;

    fn args(v: Value) -> Args {
        crate::modules::check(&Getent, v)
    }

    fn ran(rc: i32, stdout: &str) -> OpResult {
        OpResult::Exec(ExecOutcome {
            ran: true,
            rc,
            stdout: stdout.as_bytes().to_vec(),
            stderr: Vec::new(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        })
    }

    #[test]
    fn plans_one_getent() {
        let plan = crate::modules::try_plan(
            &Getent,
            json!({"database": "passwd", "key": "root", "service": "files"}),
            &PlanContext::new(Path::new("/")),
        )
        .unwrap();
        let Plan::Remote(Op::Exec(exec)) = plan else {
            panic!()
        };
        assert_eq!(
            exec.command,
            Command::Argv(
                ["getent", "passwd", "root", "-s", "files"]
                    .map(String::from)
                    .to_vec()
            )
        );
    }

    #[test]
    fn splits_records_as_ansible() {
        let out = Getent.finish(
            &args(json!({"database": "passwd"})),
            ran(0, "root:x:0:0:root:/root:/bin/sh\n"),
        );
        assert_eq!(
            out.data["ansible_facts"],
            json!({"getent_passwd": {"root": ["x", "0", "0", "root", "/root", "/bin/sh"]}})
        );
        let hosts = Getent.finish(
            &args(json!({"database": "hosts"})),
            ran(
                0,
                "127.0.0.1  localhost\n127.0.0.1 other\n::1 localhost ip6\n",
            ),
        );
        assert_eq!(
            hosts.data["ansible_facts"]["getent_hosts"],
            json!({"127.0.0.1": [["localhost"], ["other"]], "::1": ["localhost", "ip6"]})
        );
        let missing = Getent.finish(
            &args(json!({"database": "passwd", "key": "nobody2", "fail_key": false})),
            ran(2, ""),
        );
        assert!(!missing.failed);
        assert_eq!(
            missing.data["ansible_facts"],
            json!({"getent_passwd": {"nobody2": null}})
        );
        let failed = Getent.finish(&args(json!({"database": "passwd", "key": "x"})), ran(2, ""));
        assert_eq!(
            failed.msg.as_deref(),
            Some("One or more supplied key could not be found in the database.")
        );
        assert_eq!(
            Getent
                .finish(&args(json!({"database": "nope"})), ran(1, ""))
                .msg
                .as_deref(),
            Some("Missing arguments, or database unknown.")
        );
    }
}
