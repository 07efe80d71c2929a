//! `user` on Linux: decided from /etc/passwd, /etc/group and /etc/shadow as the target has
//! them, read in one round trip with /etc/login.defs and the home directory's stat (so a
//! user already as asked costs one read), changed with useradd/usermod/userdel and chage
//! ([`user_commands`] decides which), then read again for the result.
//!
//! [`user_commands`]: super::user_commands

use serde_json::json;
use turbo_proto::{FileKind, Op, OpResult, StatInfo};

use super::accounts::{self, Accounts};
use super::spec::{Arg, Elem, Lit, RequiredIf, Spec};
use super::user_commands::{self as commands, UserArgs};
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};

pub struct User;

const NOT_LINUX: &str = "only used on other platforms than Linux";

/// ansible-core 2.21's user.
static SPEC: Spec = Spec::new(&[
    Arg::bool("append").default_bool(false),
    Arg::str("authorization").no_effect(NOT_LINUX),
    Arg::str("comment"),
    Arg::bool("create_home")
        .aliases(&["createhome"])
        .default_bool(true),
    Arg::float("expires"),
    Arg::bool("force").default_bool(false),
    Arg::bool("generate_ssh_key").not_yet(),
    Arg::str("group"),
    Arg::list("groups", Elem::Str),
    Arg::bool("hidden").no_effect(NOT_LINUX),
    Arg::path("home"),
    Arg::bool("local"),
    Arg::str("login_class").no_effect(NOT_LINUX),
    Arg::bool("move_home").default_bool(false),
    Arg::str("name").aliases(&["user"]).required(),
    Arg::bool("non_unique").default_bool(false),
    Arg::str("password").no_log(),
    Arg::int("password_expire_account_disable"),
    Arg::int("password_expire_max"),
    Arg::int("password_expire_min"),
    Arg::int("password_expire_warn"),
    Arg::bool("password_lock"),
    Arg::str("profile").no_effect(NOT_LINUX),
    Arg::bool("remove").default_bool(false),
    Arg::str("role").no_effect(NOT_LINUX),
    Arg::str("seuser").no_effect("SELinux is not handled by turbo-play's agent"),
    Arg::path("shell"),
    Arg::str("skeleton"),
    Arg::int("ssh_key_bits").no_effect("only used with generate_ssh_key"),
    Arg::str("ssh_key_comment").no_effect("only used with generate_ssh_key"),
    Arg::path("ssh_key_file").no_effect("only used with generate_ssh_key"),
    Arg::str("ssh_key_passphrase")
        .no_log()
        .no_effect("only used with generate_ssh_key"),
    Arg::str("ssh_key_type").no_effect("only used with generate_ssh_key"),
    Arg::str("state")
        .default_str("present")
        .choices(&["absent", "present"]),
    Arg::bool("system").default_bool(false),
    Arg::int("uid"),
    Arg::int("uid_max"),
    Arg::int("uid_min"),
    Arg::str("umask"),
    Arg::str("update_password")
        .default_str("always")
        .choices(&["always", "on_create"]),
])
.required_if(&[RequiredIf {
    key: "append",
    value: Lit::Bool(true),
    then: &["groups"],
    any: false,
}]);

/// Homes Ansible never creates for an existing user.
const PLACEHOLDER_HOMES: &[&str] = &["/nonexistent", "/dev/null", "/var/empty"];

#[derive(Clone)]
struct Request {
    a: UserArgs,
    present: bool,
    check: bool,
    warnings: Vec<String>,
}

impl Module for User {
    fn name(&self) -> &'static str {
        "user"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let groups = args
            .is_set("groups")
            .then(|| args.str_list("groups").join(","));
        let a = UserArgs {
            name: args.str("name").unwrap_or_default().to_string(),
            uid: args.int("uid"),
            non_unique: args.bool("non_unique"),
            group: args.str("group").map(str::to_string),
            groups,
            comment: args.str("comment").map(str::to_string),
            home: args.str("home").map(str::to_string),
            shell: args.str("shell").map(str::to_string),
            password: args.str("password").map(str::to_string),
            force: args.bool("force"),
            remove: args.bool("remove"),
            create_home: args.bool("create_home"),
            move_home: args.bool("move_home"),
            skeleton: args.str("skeleton").map(str::to_string),
            system: args.bool("system"),
            append: args.bool("append"),
            update_password_always: args.str("update_password") != Some("on_create"),
            expires: args.float("expires"),
            password_lock: args.opt_bool("password_lock"),
            local: args.opt_bool("local") == Some(true),
            umask: args.str("umask").map(str::to_string),
            inactive: args.int("password_expire_account_disable"),
            uid_min: args.int("uid_min"),
            uid_max: args.int("uid_max"),
            expire_min: args.int("password_expire_min"),
            expire_max: args.int("password_expire_max"),
            expire_warn: args.int("password_expire_warn"),
        };
        if a.local {
            for (name, set) in [
                ("umask", a.umask.is_some()),
                ("uid_min", a.uid_min.is_some()),
                ("uid_max", a.uid_max.is_some()),
            ] {
                if set {
                    return Ok(Plan::Done(TaskOutcome::failed(format!(
                        "'{name}' can not be used with 'local'"
                    ))));
                }
            }
        }
        let mut warnings = Vec::new();
        if let Some(password) = &a.password
            && commands::looks_unhashed(password)
        {
            warnings.push("The input password appears not to have been hashed. The 'password' argument must be encrypted for this module to work properly.".to_string());
        }
        let probe = a
            .home
            .clone()
            .unwrap_or_else(|| format!("/home/{}", a.name));
        let parent = parent_of(&probe);
        let mut ops = accounts::read_ops();
        ops.push(Op::ReadFile {
            path: "/etc/login.defs".into(),
            offset: 0,
            limit: None,
        });
        ops.push(stat(&probe));
        ops.push(stat(&parent));
        let request = Request {
            a,
            present: args.str("state") != Some("absent"),
            check: ctx.check_mode,
            warnings,
        };
        Ok(Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| {
                let OpResult::Batch(replies) = reply else {
                    return Ok(Plan::Done(unexpected("user", reply)));
                };
                let first = First::from_replies(&replies, probe);
                Ok(decide(request, first))
            }),
        ))
    }
}

fn parent_of(path: &str) -> String {
    match path.trim_end_matches('/').rsplit_once('/') {
        Some(("", _)) => "/".into(),
        Some((dir, _)) => dir.into(),
        None => ".".into(),
    }
}

fn stat(path: &str) -> Op {
    Op::Stat {
        path: path.into(),
        checksum: None,
        follow: true,
    }
}

/// What the first round trip read.
struct First {
    accounts: Accounts,
    login_defs: Option<String>,
    probe: String,
    probe_stat: Option<StatInfo>,
    parent_is_dir: bool,
}

impl First {
    fn from_replies(replies: &[OpResult], probe: String) -> First {
        let stat = |i: usize| match replies.get(i) {
            Some(OpResult::Stat(s)) => Some(s.clone()),
            _ => None,
        };
        First {
            accounts: Accounts::from_replies(replies),
            login_defs: match replies.get(3) {
                Some(OpResult::Read(r)) if r.stat.exists => {
                    Some(String::from_utf8_lossy(&r.data).into_owned())
                }
                _ => None,
            },
            probe_stat: stat(4),
            parent_is_dir: stat(5).is_some_and(|s| s.kind == FileKind::Directory),
            probe,
        }
    }
}

/// What has happened so far, for the result.
#[derive(Clone, Default)]
struct Done {
    changed: bool,
    out: String,
    err: String,
    created: bool,
}

fn failed_run(r: &Request, rc: i32, err: String) -> Plan {
    let mut out = TaskOutcome::failed(err);
    out.data.insert("name".into(), json!(r.a.name));
    out.data.insert("rc".into(), json!(rc));
    Plan::Done(with_warnings(out, &r.warnings))
}

fn with_warnings(mut out: TaskOutcome, warnings: &[String]) -> TaskOutcome {
    if !warnings.is_empty() {
        out.data.insert("warnings".into(), json!(warnings));
    }
    out
}

fn decide(r: Request, first: First) -> Plan {
    let exists = first.accounts.user(&r.a.name).is_some();
    if !r.present {
        if !exists {
            return Plan::Done(removed(&r, &Done::default()));
        }
        if r.check {
            return would_only(&r);
        }
        let cmd = commands::remove(&r.a);
        return run_all(r, vec![cmd], move |r, done| {
            Ok(Plan::Done(removed(&r, &done)))
        });
    }
    if !exists {
        if r.check {
            return would_only(&r);
        }
        let cmds = match commands::create(&r.a, &first.accounts) {
            Ok(cmds) => cmds,
            Err(msg) => return Plan::Done(with_warnings(TaskOutcome::failed(msg), &r.warnings)),
        };
        // useradd cannot make a home's missing parents: Ansible makes them first.
        let parents = r.a.home.is_some() && r.a.create_home && !first.parent_is_dir;
        let login_defs = first.login_defs.clone();
        let home_parent = parent_of(&first.probe);
        let then = move |r: Request, done: Done| {
            Ok(after_change(
                r,
                Done {
                    created: true,
                    ..done
                },
                login_defs,
            ))
        };
        if !parents {
            return run_all(r, cmds, then);
        }
        let mkdir = accounts::command(vec!["mkdir".into(), "-p".into(), home_parent]);
        return Plan::Step(
            mkdir,
            Next::new(move |reply| match accounts::ran(reply) {
                Ok((0, _, _)) => Ok(run_all(r, cmds, then)),
                Ok((_, _, msg)) | Err(msg) => Ok(Plan::Done(with_warnings(
                    TaskOutcome::failed(msg.trim_end().to_string()),
                    &r.warnings,
                ))),
            }),
        );
    }
    let mut cmds = match commands::modify(&r.a, &first.accounts) {
        Ok(cmds) => cmds,
        Err(msg) => return Plan::Done(with_warnings(TaskOutcome::failed(msg), &r.warnings)),
    };
    let expiry = commands::password_expiry(&r.a, &first.accounts);
    let modified = !cmds.is_empty();
    if r.check {
        let done = Done {
            changed: modified || expiry.is_some(),
            ..Done::default()
        };
        return home_check(
            r,
            first.accounts,
            first.probe,
            first.probe_stat,
            done,
            first.login_defs,
        );
    }
    if !modified && expiry.is_none() {
        return home_check(
            r,
            first.accounts,
            first.probe,
            first.probe_stat,
            Done::default(),
            first.login_defs,
        );
    }
    cmds.extend(expiry);
    let login_defs = first.login_defs;
    run_all(r, cmds, move |r, done| {
        Ok(after_change(r, done, login_defs))
    })
}

fn would_only(r: &Request) -> Plan {
    Plan::Done(with_warnings(
        TaskOutcome {
            changed: true,
            ..TaskOutcome::default()
        },
        &r.warnings,
    ))
}

type Then = Box<dyn FnOnce(Request, Done) -> Result<Plan, ModuleError> + Send + Sync>;

/// Runs the commands in order, their output gathered; the first that fails fails the task
/// with its stderr, as Ansible's `fail_json(name=..., msg=err, rc=rc)`.
fn run_all(
    r: Request,
    cmds: Vec<Vec<String>>,
    then: impl FnOnce(Request, Done) -> Result<Plan, ModuleError> + Send + Sync + 'static,
) -> Plan {
    run_next(
        r,
        cmds.into_iter().collect(),
        Done::default(),
        Box::new(then),
    )
}

fn run_next(
    r: Request,
    mut cmds: std::collections::VecDeque<Vec<String>>,
    done: Done,
    then: Then,
) -> Plan {
    let Some(cmd) = cmds.pop_front() else {
        return match then(r, done) {
            Ok(plan) => plan,
            Err(e) => Plan::Done(TaskOutcome::failed(e.to_string())),
        };
    };
    Plan::Step(
        accounts::command(cmd),
        Next::new(move |reply| {
            let (rc, out, err) = match accounts::ran(reply) {
                Ok(ran) => ran,
                Err(msg) => return Ok(Plan::Done(TaskOutcome::failed(msg))),
            };
            let done = Done {
                changed: true,
                out: done.out + &out,
                err: done.err + &err,
                ..done
            };
            if rc != 0 {
                return Ok(failed_run(&r, rc, done.err));
            }
            Ok(run_next(r, cmds, done, then))
        }),
    )
}

fn removed(r: &Request, done: &Done) -> TaskOutcome {
    let mut out = TaskOutcome {
        changed: done.changed,
        ..TaskOutcome::default()
    };
    out.data.insert("name".into(), json!(r.a.name));
    out.data.insert("state".into(), json!("absent"));
    if done.changed {
        out.data.insert("force".into(), json!(r.a.force));
        out.data.insert("remove".into(), json!(r.a.remove));
    }
    output(&mut out, done);
    with_warnings(out, &r.warnings)
}

fn output(out: &mut TaskOutcome, done: &Done) {
    if !done.out.is_empty() {
        out.data.insert("stdout".into(), json!(done.out));
    }
    if !done.err.is_empty() {
        out.data.insert("stderr".into(), json!(done.err));
    }
}

/// After a change: the account files again (and the home's stat) for the result.
fn after_change(r: Request, done: Done, login_defs: Option<String>) -> Plan {
    Plan::Step(
        Op::Batch(accounts::read_ops()),
        Next::new(move |reply| {
            let OpResult::Batch(replies) = reply else {
                return Ok(Plan::Done(unexpected("user", reply)));
            };
            let accounts = Accounts::from_replies(&replies);
            Ok(home_check(
                r,
                accounts,
                String::new(),
                None,
                done,
                login_defs,
            ))
        }),
    )
}

/// Ansible's "handle missing homedirs": an existing user whose home is not there gets
/// one (the skeleton copied, login.defs' mode, owned by the user), unless it is a
/// placeholder or `create_home` is off.
fn home_check(
    r: Request,
    accounts: Accounts,
    probe: String,
    probe_stat: Option<StatInfo>,
    done: Done,
    login_defs: Option<String>,
) -> Plan {
    let Some(user) = accounts.user(&r.a.name).cloned() else {
        return Plan::Done(with_warnings(
            TaskOutcome::failed(format!("failed to look up user name: {}", r.a.name)),
            &r.warnings,
        ));
    };
    let home = r.a.home.clone().unwrap_or_else(|| user.home.clone());
    if PLACEHOLDER_HOMES.contains(&home.as_str()) || !r.a.create_home {
        return Plan::Done(present(&r, &accounts, &done));
    }
    let home_path = home.clone();
    let decide_home = move |exists: bool| -> Plan {
        if exists {
            return Plan::Done(present(&r, &accounts, &done));
        }
        let done = Done {
            changed: true,
            ..done
        };
        if r.check {
            return Plan::Done(present(&r, &accounts, &done));
        }
        let script = create_home_script(&r, &user, &home, login_defs.as_deref());
        Plan::Step(
            accounts::command(script),
            Next::new(move |reply| {
                let (rc, _, err) = match accounts::ran(reply) {
                    Ok(ran) => ran,
                    Err(msg) => return Ok(Plan::Done(TaskOutcome::failed(msg))),
                };
                if rc != 0 {
                    return Ok(Plan::Done(with_warnings(
                        TaskOutcome::failed(err.trim_end().to_string()),
                        &r.warnings,
                    )));
                }
                Ok(Plan::Done(present(&r, &accounts, &done)))
            }),
        )
    };
    if probe == home_path
        && let Some(s) = probe_stat
    {
        return decide_home(s.exists);
    }
    Plan::Step(
        stat(&home_path),
        Next::new(move |reply| Ok(decide_home(matches!(reply, OpResult::Stat(s) if s.exists)))),
    )
}

/// Ansible's `create_homedir` and `chown_homedir`: the skeleton copied (links as links)
/// or an empty directory, login.defs' mode, then the user's ownership on everything but
/// links.
fn create_home_script(
    r: &Request,
    user: &accounts::Passwd,
    home: &str,
    login_defs: Option<&str>,
) -> Vec<String> {
    let skel = r.a.skeleton.clone().unwrap_or_else(|| "/etc/skel".into());
    let chmod = login_defs
        .map(|defs| format!("chmod {:o} \"$1\"\n", accounts::home_mode(defs)))
        .unwrap_or_default();
    let script = format!(
        "set -e\n\
         if [ -e \"$2\" ] && [ \"$2\" != /dev/null ]; then\n\
         mkdir -p \"$(dirname \"$1\")\"\n\
         cp -R -P --preserve=mode,timestamps \"$2\" \"$1\"\n\
         else mkdir -p \"$1\"; fi\n\
         {chmod}\
         find \"$1\" ! -type l -exec chown {}:{} {{}} +\n",
        user.uid, user.gid
    );
    vec![
        "/bin/sh".into(),
        "-c".into(),
        script,
        "sh".into(),
        home.into(),
        skel,
    ]
}

/// The result for a user that is there: what was asked and done, and the passwd entry.
fn present(r: &Request, accounts: &Accounts, done: &Done) -> TaskOutcome {
    let mut out = TaskOutcome {
        changed: done.changed,
        ..TaskOutcome::default()
    };
    let data = &mut out.data;
    data.insert("name".into(), json!(r.a.name));
    data.insert("state".into(), json!("present"));
    if done.created {
        data.insert("system".into(), json!(r.a.system));
        data.insert("create_home".into(), json!(r.a.create_home));
    } else {
        data.insert("append".into(), json!(r.a.append));
        data.insert("move_home".into(), json!(r.a.move_home));
    }
    if r.a.password.is_some() {
        data.insert("password".into(), json!("NOT_LOGGING_PASSWORD"));
    }
    output(&mut out, done);
    if let Some(user) = accounts.user(&r.a.name) {
        let data = &mut out.data;
        data.insert("uid".into(), json!(user.uid));
        data.insert("group".into(), json!(user.gid));
        data.insert("comment".into(), json!(user.gecos));
        data.insert("home".into(), json!(user.home));
        data.insert("shell".into(), json!(user.shell));
        data.insert(
            "groups".into(),
            json!(accounts.memberships(&r.a.name, Some(user.gid)).join(",")),
        );
    }
    with_warnings(out, &r.warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::path::Path;
    use turbo_proto::FileRead;

    fn read(text: &str) -> OpResult {
        OpResult::Read(FileRead {
            stat: StatInfo {
                exists: true,
                kind: FileKind::File,
                ..StatInfo::default()
            },
            offset: 0,
            data: text.as_bytes().to_vec(),
            eof: true,
        })
    }

    fn dir(exists: bool) -> OpResult {
        OpResult::Stat(StatInfo {
            exists,
            kind: if exists {
                FileKind::Directory
            } else {
                FileKind::Missing
            },
            ..StatInfo::default()
        })
    }

    const PASSWD: &str =
        "root:x:0:0:root:/root:/bin/bash\nalice:x:1001:1001:Alice:/home/alice:/bin/bash\n";
    const GROUP: &str = "root:x:0:\nalice:x:1001:\nsudo:x:27:alice\n";
    const SHADOW: &str = "alice:!:19000:0:99999:7:::\n";

    fn first_reply(home_exists: bool) -> OpResult {
        OpResult::Batch(vec![
            read(PASSWD),
            read(GROUP),
            read(SHADOW),
            read("UMASK 022\n"),
            dir(home_exists),
            dir(true),
        ])
    }

    fn plan(v: Value, check: bool) -> Plan {
        let ctx = PlanContext {
            check_mode: check,
            ..PlanContext::new(Path::new("/"))
        };
        crate::modules::try_plan(&User, v, &ctx).unwrap()
    }

    fn step(plan: Plan, reply: OpResult) -> (Op, Plan) {
        let Plan::Step(op, next) = plan else {
            panic!("expected a step, got {plan:?}")
        };
        (op, next.resume(reply).unwrap())
    }

    fn done(plan: Plan) -> TaskOutcome {
        match plan {
            Plan::Done(out) => out,
            other => panic!("expected an outcome, got {other:?}"),
        }
    }

    #[test]
    fn a_user_as_asked_is_one_read() {
        let args = json!({"name": "alice", "groups": ["sudo"], "shell": "/bin/bash"});
        let (op, next) = step(plan(args, false), first_reply(true));
        let Op::Batch(ops) = op else { panic!() };
        assert_eq!(ops.len(), 6);
        assert_eq!(ops[4], stat("/home/alice"));
        let out = done(next);
        assert!(!out.changed && !out.failed, "{out:?}");
        assert_eq!(
            Value::Object(out.data),
            json!({"name": "alice", "state": "present", "append": false, "move_home": false,
                   "uid": 1001, "group": 1001, "comment": "Alice", "home": "/home/alice",
                   "shell": "/bin/bash", "groups": "sudo"})
        );
    }

    #[test]
    fn a_change_runs_usermod_then_reads_again() {
        let args = json!({"name": "alice", "shell": "/bin/sh", "password_lock": false});
        let (_, next) = step(plan(args, false), first_reply(true));
        let Plan::Step(Op::Exec(exec), _) = &next else {
            panic!("expected usermod, got {next:?}")
        };
        assert_eq!(
            exec.command,
            turbo_proto::Command::Argv(
                ["usermod", "-s", "/bin/sh", "-U", "alice"]
                    .map(String::from)
                    .to_vec()
            )
        );
        let check = done(
            step(
                plan(json!({"name": "alice", "shell": "/bin/sh"}), true),
                first_reply(true),
            )
            .1,
        );
        assert!(check.changed);
        assert_eq!(check.data["shell"], json!("/bin/bash"));
    }

    #[test]
    fn a_missing_home_is_made_and_creation_in_check_mode_is_only_changed() {
        let (_, next) = step(plan(json!({"name": "alice"}), false), first_reply(false));
        let Plan::Step(Op::Exec(exec), _) = next else {
            panic!("expected the home to be made")
        };
        let turbo_proto::Command::Argv(argv) = exec.command else {
            panic!()
        };
        assert!(argv[2].contains("chmod 755"), "{}", argv[2]);
        assert_eq!(argv[4..], ["/home/alice", "/etc/skel"]);
        let out = done(step(plan(json!({"name": "bob"}), true), first_reply(false)).1);
        assert!(out.changed);
        assert!(out.data.is_empty());
        assert_eq!(
            crate::modules::try_plan(
                &User,
                json!({"name": "a", "append": true}),
                &PlanContext::new(Path::new("/"))
            )
            .unwrap_err(),
            "append is True but all of the following are missing: groups"
        );
    }
}
