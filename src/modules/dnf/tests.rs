//! Planner tests: arguments in, the exact ops and outcomes out.

use std::path::Path;

use serde_json::{Value, json};
use turbo_proto::{Command, Exec, ExecOutcome, Op, OpResult};

use super::*;
use crate::modules::{Plan, PlanContext};

fn ctx(check: bool) -> PlanContext<'static> {
    PlanContext {
        check_mode: check,
        ..PlanContext::new(Path::new("/"))
    }
}

fn plan(args: Value, check: bool) -> Result<Plan, String> {
    crate::modules::try_plan(&Dnf, args, &ctx(check))
}

fn ran(rc: i32, stdout: &str, stderr: &str) -> OpResult {
    OpResult::Exec(ExecOutcome {
        ran: true,
        rc,
        stdout: stdout.as_bytes().to_vec(),
        stderr: stderr.as_bytes().to_vec(),
        start_unix_micros: 0,
        duration_micros: 0,
        msg: String::new(),
    })
}

fn step(plan: Plan) -> (Op, Next) {
    match plan {
        Plan::Step(op, next) => (op, next),
        other => panic!("expected a step, got {other:?}"),
    }
}

fn done(plan: Plan) -> TaskOutcome {
    match plan {
        Plan::Done(out) => out,
        other => panic!("expected an outcome, got {other:?}"),
    }
}

fn argv(op: &Op) -> Vec<String> {
    match op {
        Op::Exec(Exec {
            command: Command::Argv(argv),
            ..
        }) => argv.clone(),
        other => panic!("expected a dnf run, got {other:?}"),
    }
}

/// The first step: the installroot's stat and rpm's query, in one batch.
fn script(op: &Op) -> String {
    let Op::Batch(ops) = op else {
        panic!("expected a batch, got {op:?}")
    };
    assert!(matches!(&ops[0], Op::Stat { path, .. } if path == "/srv/root" || path == "/"));
    match &ops[1] {
        Op::Exec(Exec {
            command: Command::Shell { script, .. },
            env,
            ..
        }) => {
            assert!(env.contains(&("LC_ALL".into(), "C".into())));
            script.clone()
        }
        other => panic!("expected the rpm query, got {other:?}"),
    }
}

fn dir(kind: turbo_proto::FileKind) -> OpResult {
    OpResult::Stat(turbo_proto::StatInfo {
        path: "/srv/root".into(),
        exists: kind != turbo_proto::FileKind::Missing,
        kind,
        ..Default::default()
    })
}

/// rpm's answer to the first step, the installroot being there.
fn rpm_says(stdout: &str) -> OpResult {
    OpResult::Batch(vec![
        dir(turbo_proto::FileKind::Directory),
        ran(0, stdout, ""),
    ])
}

const BASE: &[&str] = &[
    "--installroot=/srv/root",
    "--releasever=12",
    "--setopt=clean_requirements_on_remove=False",
    "--setopt=install_weak_deps=True",
];

fn dnf(first: &str, command: &str, names: &[&str]) -> Vec<String> {
    let mut v = vec!["dnf".to_string(), first.to_string()];
    v.extend(BASE.iter().map(|s| s.to_string()));
    v.push(command.into());
    v.extend(names.iter().map(|s| s.to_string()));
    v
}

fn args(extra: Value) -> Value {
    let mut base = json!({"installroot": "/srv/root", "releasever": 12, "use_backend": "dnf4"});
    base.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    base
}

const HELLO_1: &str = "I\ttp-hello\t0\t1.0\t1\tnoarch\n";

#[test]
fn nothing_installed_means_one_dnf_run_for_every_name() {
    let (query, next) = step(plan(args(json!({"name": ["tp-hello", "tp-app"]})), false).unwrap());
    let s = script(&query);
    assert!(s.contains("rpm -q --root \"$root\""), "{s}");
    assert!(s.contains(" tp-hello tp tp-app"), "{s}");
    let (run, next) = step(next.resume(rpm_says("")).unwrap());
    assert_eq!(argv(&run), dnf("-y", "install", &["tp-hello", "tp-app"]));
    let table = "Installing:\n tp-app  noarch  1.0-1  tp-local  6.0 k\n\
                 Installing dependencies:\n tp-lib  noarch  1.0-1  tp-local  6.0 k\n\
                 Transaction Summary\n";
    let out = done(next.resume(ran(0, table, "")).unwrap());
    assert!(out.changed && !out.failed);
    assert_eq!(out.msg.as_deref(), Some(""));
    assert_eq!(
        Value::Object(out.data),
        json!({"results": ["Installed: tp-app-1.0-1.noarch", "Installed: tp-lib-1.0-1.noarch"], "rc": 0})
    );
}

#[test]
fn installed_names_never_start_dnf() {
    let (_, next) = step(plan(args(json!({"name": "tp-hello"})), false).unwrap());
    let out = done(next.resume(rpm_says(HELLO_1)).unwrap());
    assert!(!out.changed && !out.failed);
    assert_eq!(out.msg.as_deref(), Some("Nothing to do"));
    assert_eq!(Value::Object(out.data), json!({"results": [], "rc": 0}));
    // An older version asked for while a newer one is there: no downgrade.
    let (_, next) = step(plan(args(json!({"name": "tp-hello-0.9"})), false).unwrap());
    assert!(matches!(
        next.resume(rpm_says(HELLO_1)).unwrap(),
        Plan::Done(_)
    ));
    // Absent names that are not there.
    let (_, next) = step(plan(args(json!({"name": "tp-lib", "state": "absent"})), false).unwrap());
    let out = done(next.resume(rpm_says(HELLO_1)).unwrap());
    assert_eq!(
        out.data["results"],
        json!(["No match for argument: tp-lib"])
    );
}

#[test]
fn latest_upgrades_what_is_there_and_installs_the_rest() {
    let (_, next) = step(
        plan(
            args(json!({"name": ["tp-hello", "tp-lib"], "state": "latest"})),
            false,
        )
        .unwrap(),
    );
    let (install, next) = step(next.resume(rpm_says(HELLO_1)).unwrap());
    assert_eq!(argv(&install), dnf("-y", "install", &["tp-lib"]));
    let (upgrade, next) = step(
        next.resume(ran(0, "Installing:\n tp-lib  noarch  1.0-1  l  6 k\n", ""))
            .unwrap(),
    );
    assert_eq!(argv(&upgrade), dnf("-y", "upgrade", &["tp-hello"]));
    let out = done(
        next.resume(ran(0, "Upgrading:\n tp-hello  noarch  2.0-1  l  6 k\n", ""))
            .unwrap(),
    );
    assert_eq!(
        out.data["results"],
        json!([
            "Installed: tp-hello-2.0-1.noarch",
            "Installed: tp-lib-1.0-1.noarch",
            "Removed: tp-hello-1.0-1.noarch"
        ])
    );
}

#[test]
fn check_mode_asks_dnf_to_say_no() {
    let (_, next) = step(plan(args(json!({"name": "tp-hello", "state": "absent"})), true).unwrap());
    let (run, next) = step(next.resume(rpm_says(HELLO_1)).unwrap());
    assert_eq!(argv(&run), dnf("--assumeno", "remove", &["tp-hello"]));
    let out = done(
        next.resume(ran(
            1,
            "Removing:\n tp-hello  noarch  1.0-1  @tp-local  4\n\nTransaction Summary\nOperation aborted.\n",
            "",
        ))
        .unwrap(),
    );
    assert!(out.changed && !out.failed);
    assert_eq!(out.msg.as_deref(), Some(CHECK_MODE_MSG));
    assert_eq!(
        out.data["results"],
        json!(["Removed: tp-hello-1.0-1.noarch"])
    );
}

#[test]
fn a_missing_package_fails_as_ansible_says_and_changes_nothing() {
    let (_, next) = step(plan(args(json!({"name": ["nosuch", "tp-lib"]})), false).unwrap());
    let (_, next) = step(next.resume(rpm_says("")).unwrap());
    let (again, next) = step(
        next.resume(ran(
            1,
            "",
            "No match for argument: nosuch\nError: Unable to find a match: nosuch\n",
        ))
        .unwrap(),
    );
    assert_eq!(argv(&again), dnf("--assumeno", "install", &["tp-lib"]));
    let out = done(
        next.resume(ran(
            1,
            "Installing:\n tp-lib  noarch  1.0-1  l  6 k\nOperation aborted.\n",
            "",
        ))
        .unwrap(),
    );
    assert!(out.failed);
    assert_eq!(out.msg.as_deref(), Some(SOME_FAILED));
    assert_eq!(
        Value::Object(out.data),
        json!({"failures": ["No package nosuch available."],
               "results": ["Installed: tp-lib-1.0-1.noarch"], "rc": 1})
    );
    // Alone, nothing else is asked for.
    let (_, next) = step(plan(args(json!({"name": "nosuch"})), false).unwrap());
    let (_, next) = step(next.resume(rpm_says("")).unwrap());
    let out = done(
        next.resume(ran(
            1,
            "",
            "No match for argument: nosuch\nError: Unable to find a match: nosuch\n",
        ))
        .unwrap(),
    );
    assert_eq!(
        Value::Object(out.data),
        json!({"failures": ["No package nosuch available."], "results": [], "rc": 1})
    );
}

#[test]
fn options_become_dnf_flags() {
    let (_, next) = step(
        plan(
            json!({"name": "tp-hello", "conf_file": "/etc/x.conf", "disable_gpg_check": true,
                   "enablerepo": "a,b", "disablerepo": ["*"], "exclude": "tp-lib",
                   "allowerasing": true, "download_only": true, "security": true,
                   "bugfix": true, "update_cache": true, "use_backend": "dnf"}),
            false,
        )
        .unwrap(),
    );
    let conf = OpResult::Stat(turbo_proto::StatInfo {
        path: "/etc/x.conf".into(),
        exists: true,
        kind: turbo_proto::FileKind::File,
        ..Default::default()
    });
    let (run, _) = step(
        next.resume(OpResult::Batch(vec![
            conf,
            dir(turbo_proto::FileKind::Directory),
            ran(0, "", ""),
        ]))
        .unwrap(),
    );
    assert_eq!(
        argv(&run),
        [
            "dnf",
            "-y",
            "--installroot=/",
            "--config=/etc/x.conf",
            "--nogpgcheck",
            "--disablerepo=*",
            "--enablerepo=a",
            "--enablerepo=b",
            "--exclude=tp-lib",
            "--allowerasing",
            "--security",
            "--bugfix",
            "--downloadonly",
            "--setopt=clean_requirements_on_remove=False",
            "--setopt=install_weak_deps=True",
            "--refresh",
            "install",
            "tp-hello"
        ]
    );
}

#[test]
fn ansibles_refusals() {
    let out = done(plan(args(json!({"name": "a b"})), false).unwrap());
    assert!(out.failed);
    assert!(
        out.msg
            .unwrap()
            .starts_with("It appears that a space separated string")
    );
    let out = done(
        plan(
            args(json!({"name": "a", "autoremove": true, "state": "present"})),
            false,
        )
        .unwrap(),
    );
    assert_eq!(
        out.msg.as_deref(),
        Some("Autoremove should be used alone or with state=absent")
    );
    // update_cache's default counts as given, as in Ansible: no names is nothing to do.
    let (op, next) = step(plan(args(json!({"state": "present"})), false).unwrap());
    assert!(matches!(&op, Op::Batch(ops) if ops.len() == 1), "{op:?}");
    let out = done(
        next.resume(OpResult::Batch(vec![dir(turbo_proto::FileKind::Directory)]))
            .unwrap(),
    );
    assert_eq!(out.msg.as_deref(), Some("Nothing to do"));
    // Ansible's checks before dnf starts.
    let (_, next) = step(plan(args(json!({"name": "tp-hello"})), false).unwrap());
    let out = done(
        next.resume(OpResult::Batch(vec![
            dir(turbo_proto::FileKind::Missing),
            ran(0, "", ""),
        ]))
        .unwrap(),
    );
    assert_eq!(
        out.msg.as_deref(),
        Some("Installroot /srv/root must be a directory")
    );
    assert_eq!(Value::Object(out.data), json!({"results": [], "rc": 1}));
    assert_eq!(
        plan(json!({"name": "a", "list": "installed"}), false).unwrap_err(),
        "parameters are mutually exclusive: name|list"
    );
    assert_eq!(
        crate::modules::try_plan(&Yum, json!({"name": "x", "foo": 1}), &ctx(false)).unwrap_err(),
        "Unsupported parameters for (ansible.legacy.dnf) module: foo. Supported parameters include: allow_downgrade, allowerasing, autoremove, best, bugfix, cacheonly, conf_file, disable_excludes, disable_gpg_check, disable_plugin, disablerepo, download_dir, download_only, enable_plugin, enablerepo, exclude, install_weak_deps, installroot, list, lock_timeout, name, nobest, releasever, security, skip_broken, sslverify, state, update_cache, update_only, use_backend, validate_certs (expire-cache, pkg)."
    );
}

#[test]
fn without_a_backend_the_target_is_asked_and_debian_is_refused() {
    let (facts, next) = step(plan(json!({"name": "tp-hello"}), false).unwrap());
    assert_eq!(
        facts,
        Op::Facts {
            subsets: vec!["!all".into(), "!min".into(), "pkg_mgr".into()]
        }
    );
    let out = done(
        next.resume(OpResult::Facts(vec![(
            "pkg_mgr".into(),
            turbo_proto::FactValue::Str("apt".into()),
        )]))
        .unwrap(),
    );
    assert!(out.failed && out.msg.is_none());
    assert_eq!(out.data["msg"], json!(NO_BACKEND));
    assert_eq!(out.data["ansible_facts"], json!({"pkg_mgr": "apt"}));
}

#[test]
fn yum_is_dnf() {
    let out = crate::modules::try_plan(&Yum, args(json!({"name": "a b"})), &ctx(false));
    assert!(matches!(out, Ok(Plan::Done(o)) if o.failed));
    assert!(Yum.caps().own_check_mode && Dnf.caps().own_check_mode);
}

#[test]
fn a_local_rpm_is_compared_by_its_header() {
    let file = "/tmp/tp-extra-1.0-1.noarch.rpm";
    let (query, next) = step(plan(args(json!({"name": file})), false).unwrap());
    assert!(script(&query).contains("rpm -qp --qf"));
    let header = format!("F\t{file}\ttp-extra\t0\t1.0\t1\tnoarch\n");
    let (run, next) = step(next.resume(rpm_says(&header)).unwrap());
    assert_eq!(argv(&run), dnf("-y", "install", &[file]));
    let out = done(
        next.resume(ran(
            0,
            "Installing:\n tp-extra  noarch  1.0-1  @commandline  6 k\n",
            "",
        ))
        .unwrap(),
    );
    assert_eq!(
        out.data["results"],
        json!([
            format!("Installed {file}"),
            "Installed: tp-extra-1.0-1.noarch"
        ])
    );
    // Installed already: no dnf, and Ansible still names the file.
    let (_, next) = step(plan(args(json!({"name": file})), false).unwrap());
    let both = format!("{header}I\ttp-extra\t0\t1.0\t1\tnoarch\n");
    let out = done(next.resume(rpm_says(&both)).unwrap());
    assert_eq!(out.msg.as_deref(), Some("Nothing to do"));
    assert_eq!(out.data["results"], json!([format!("Installed {file}")]));
}
