//! `group` on Linux: decided from /etc/group as the target has it (one read when there is
//! nothing to do), changed with groupadd/groupmod/groupdel (libuser's lgroup* with
//! `local`), then /etc/group read again for the result's `gid`.

use serde_json::json;
use turbo_proto::{Op, OpResult};

use super::accounts::{self, Accounts};
use super::spec::{Arg, Lit, RequiredIf, Spec};
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};

pub struct Group;

/// ansible-core 2.21's group.
static SPEC: Spec = Spec::new(&[
    Arg::bool("force").default_bool(false),
    Arg::int("gid"),
    Arg::int("gid_max"),
    Arg::int("gid_min"),
    Arg::bool("local").default_bool(false),
    Arg::str("name").required(),
    Arg::bool("non_unique").default_bool(false),
    Arg::str("state")
        .default_str("present")
        .choices(&["absent", "present"]),
    Arg::bool("system").default_bool(false),
])
.required_if(&[RequiredIf {
    key: "non_unique",
    value: Lit::Bool(true),
    then: &["gid"],
    any: false,
}]);

/// The validated request.
#[derive(Clone)]
struct Request {
    name: String,
    present: bool,
    force: bool,
    gid: Option<i64>,
    system: bool,
    local: bool,
    non_unique: bool,
    gid_min: Option<i64>,
    gid_max: Option<i64>,
    check: bool,
}

impl Module for Group {
    fn name(&self) -> &'static str {
        "group"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let request = Request {
            name: args.str("name").unwrap_or_default().to_string(),
            present: args.str("state") != Some("absent"),
            force: args.bool("force"),
            gid: args.int("gid"),
            system: args.bool("system"),
            local: args.bool("local"),
            non_unique: args.bool("non_unique"),
            gid_min: args.int("gid_min"),
            gid_max: args.int("gid_max"),
            check: ctx.check_mode,
        };
        if request.force && request.local {
            return Ok(Plan::Done(TaskOutcome::failed(
                "force is not a valid option for local, force=True and local=True are mutually exclusive",
            )));
        }
        if request.local && (request.gid_min.is_some() || request.gid_max.is_some()) {
            let which = if request.gid_min.is_some() {
                "gid_min"
            } else {
                "gid_max"
            };
            return Ok(Plan::Done(TaskOutcome::failed(format!(
                "'{which}' can not be used with 'local'"
            ))));
        }
        Ok(Plan::Step(
            Op::Batch(accounts::read_ops()),
            Next::new(move |reply| {
                let OpResult::Batch(replies) = reply else {
                    return Ok(Plan::Done(unexpected("group", reply)));
                };
                Ok(decide(request, &Accounts::from_replies(&replies)))
            }),
        ))
    }
}

/// What the module does with the group as it is.
#[derive(Debug, PartialEq)]
enum Change {
    Nothing,
    Run(Vec<String>),
    /// A change in check mode: reported, not made.
    WouldRun,
    /// Ansible's early `exit_json(changed=True)` in check mode: nothing else reported.
    WouldOnly,
    Fail(String),
}

fn change(r: &Request, accounts: &Accounts) -> Change {
    let existing = accounts.group_named(&r.name);
    let tool = |plain: &str, libuser: &str| if r.local { libuser } else { plain }.to_string();
    match (r.present, existing) {
        (false, None) => Change::Nothing,
        (false, Some(_)) if r.check => Change::WouldOnly,
        (false, Some(_)) => {
            let mut argv = vec![tool("groupdel", "lgroupdel")];
            if r.force {
                argv.push("-f".into());
            }
            argv.push(r.name.clone());
            Change::Run(argv)
        }
        (true, None) if r.check => Change::WouldOnly,
        (true, None) => {
            if r.local
                && let Some(gid) = r.gid
                && let Some(other) = accounts
                    .groups
                    .iter()
                    .find(|g| i64::from(g.gid) == gid && g.name != r.name)
            {
                return Change::Fail(format!(
                    "GID '{gid}' already exists with group '{}'",
                    other.name
                ));
            }
            let mut argv = vec![tool("groupadd", "lgroupadd")];
            if let Some(gid) = r.gid {
                argv.extend(["-g".into(), gid.to_string()]);
                if r.non_unique {
                    argv.push("-o".into());
                }
            }
            if r.system {
                argv.push("-r".into());
            }
            if let Some(min) = r.gid_min {
                argv.extend(["-K".into(), format!("GID_MIN={min}")]);
            }
            if let Some(max) = r.gid_max {
                argv.extend(["-K".into(), format!("GID_MAX={max}")]);
            }
            argv.push(r.name.clone());
            Change::Run(argv)
        }
        (true, Some(group)) => match r.gid {
            Some(gid) if gid != i64::from(group.gid) => {
                if r.check {
                    return Change::WouldRun;
                }
                let mut argv = vec![tool("groupmod", "lgroupmod"), "-g".into(), gid.to_string()];
                if r.non_unique {
                    argv.push("-o".into());
                }
                argv.push(r.name.clone());
                Change::Run(argv)
            }
            _ => Change::Nothing,
        },
    }
}

fn decide(r: Request, accounts: &Accounts) -> Plan {
    match change(&r, accounts) {
        Change::Fail(msg) => Plan::Done(TaskOutcome::failed(msg)),
        Change::WouldOnly => Plan::Done(TaskOutcome {
            changed: true,
            ..TaskOutcome::default()
        }),
        Change::Nothing => Plan::Done(result(&r, accounts, false, "", "")),
        Change::WouldRun => Plan::Done(result(&r, accounts, true, "", "")),
        Change::Run(argv) => Plan::Step(
            accounts::command(argv),
            Next::new(move |reply| {
                let (rc, out, err) = match accounts::ran(reply) {
                    Ok(ran) => ran,
                    Err(msg) => return Ok(Plan::Done(TaskOutcome::failed(msg))),
                };
                if rc != 0 {
                    let mut failed = TaskOutcome::failed(err);
                    failed.data.insert("name".into(), json!(r.name));
                    return Ok(Plan::Done(failed));
                }
                Ok(Plan::Step(
                    Op::Batch(accounts::read_ops()),
                    Next::new(move |reply| {
                        let OpResult::Batch(replies) = reply else {
                            return Ok(Plan::Done(unexpected("group", reply)));
                        };
                        let after = Accounts::from_replies(&replies);
                        Ok(Plan::Done(result(&r, &after, true, &out, &err)))
                    }),
                ))
            }),
        ),
    }
}

/// Ansible's result: name and state, what the commands printed, and the group's `gid`
/// (with `system` as asked) when it exists.
fn result(r: &Request, accounts: &Accounts, changed: bool, out: &str, err: &str) -> TaskOutcome {
    let mut outcome = TaskOutcome {
        changed,
        ..TaskOutcome::default()
    };
    let data = &mut outcome.data;
    data.insert("name".into(), json!(r.name));
    data.insert(
        "state".into(),
        json!(if r.present { "present" } else { "absent" }),
    );
    if !out.is_empty() {
        data.insert("stdout".into(), json!(out));
    }
    if !err.is_empty() {
        data.insert("stderr".into(), json!(err));
    }
    if let Some(group) = accounts.group_named(&r.name) {
        data.insert("system".into(), json!(r.system));
        data.insert("gid".into(), json!(group.gid));
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::path::Path;

    fn request(args: Value, check: bool) -> Request {
        let args = crate::modules::check(&Group, args);
        Request {
            name: args.str("name").unwrap().into(),
            present: args.str("state") != Some("absent"),
            force: args.bool("force"),
            gid: args.int("gid"),
            system: args.bool("system"),
            local: args.bool("local"),
            non_unique: args.bool("non_unique"),
            gid_min: args.int("gid_min"),
            gid_max: args.int("gid_max"),
            check,
        }
    }

    fn accounts() -> Accounts {
        Accounts {
            groups: accounts::parse_group("root:x:0:\nweb:x:1001:\n"),
            ..Accounts::default()
        }
    }

    fn argv(words: &[&str]) -> Change {
        Change::Run(words.iter().map(|w| w.to_string()).collect())
    }

    #[test]
    fn decides_from_etc_group() {
        let a = accounts();
        let c = |v: Value| change(&request(v, false), &a);
        assert_eq!(c(json!({"name": "web"})), Change::Nothing);
        assert_eq!(c(json!({"name": "web", "gid": 1001})), Change::Nothing);
        assert_eq!(
            c(json!({"name": "web", "gid": 1500, "non_unique": true})),
            argv(&["groupmod", "-g", "1500", "-o", "web"])
        );
        assert_eq!(
            c(json!({"name": "db", "gid": 1600, "system": true})),
            argv(&["groupadd", "-g", "1600", "-r", "db"])
        );
        assert_eq!(
            c(json!({"name": "web", "state": "absent", "force": true})),
            argv(&["groupdel", "-f", "web"])
        );
        assert_eq!(c(json!({"name": "db", "state": "absent"})), Change::Nothing);
        assert_eq!(
            c(json!({"name": "db", "gid": 0, "local": true})),
            Change::Fail("GID '0' already exists with group 'root'".into())
        );
        let check = |v: Value| change(&request(v, true), &a);
        assert_eq!(check(json!({"name": "db"})), Change::WouldOnly);
        assert_eq!(check(json!({"name": "web", "gid": 7})), Change::WouldRun);
    }

    #[test]
    fn plans_one_read_and_checks_arguments() {
        let ctx = PlanContext::new(Path::new("/"));
        let plan = crate::modules::try_plan(&Group, json!({"name": "web"}), &ctx).unwrap();
        assert_eq!(
            plan,
            Plan::Step(
                Op::Batch(accounts::read_ops()),
                Next::new(|_| unreachable!())
            )
        );
        assert_eq!(
            crate::modules::try_plan(&Group, json!({"name": "web", "non_unique": true}), &ctx)
                .unwrap_err(),
            "non_unique is True but all of the following are missing: gid"
        );
        let Plan::Done(out) = crate::modules::try_plan(
            &Group,
            json!({"name": "web", "force": true, "local": true}),
            &ctx,
        )
        .unwrap() else {
            panic!("expected a failure")
        };
        assert_eq!(
            out.msg.as_deref(),
            Some(
                "force is not a valid option for local, force=True and local=True are mutually exclusive"
            )
        );
    }
}
