//! The planner step by step: arguments in, the exact op of each step and the outcome out,
//! the target's replies written as the agent gives them.

use serde_json::json;
use turbo_proto::{Command, ExecOutcome, FileRead, Op, OpResult, StatInfo};

use super::*;
use crate::modules::try_plan;

fn ctx() -> PlanContext<'static> {
    PlanContext::new(std::path::Path::new("/"))
}

fn checking() -> PlanContext<'static> {
    PlanContext {
        check_mode: true,
        ..ctx()
    }
}

fn plan(args: Value, ctx: &PlanContext) -> Plan {
    try_plan(&Apt, args, ctx).unwrap_or_else(|e| panic!("{e}"))
}

fn exec_reply(rc: i32, stdout: &str, stderr: &str) -> OpResult {
    OpResult::Exec(ExecOutcome {
        ran: true,
        rc,
        stdout: stdout.as_bytes().to_vec(),
        stderr: stderr.as_bytes().to_vec(),
        start_unix_micros: 1_700_000_100_000_000,
        duration_micros: 1000,
        msg: String::new(),
    })
}

fn stat_reply(exists: bool, mtime: i64) -> OpResult {
    OpResult::Stat(StatInfo {
        exists,
        mtime,
        ..StatInfo::default()
    })
}

fn read_reply(text: &str) -> OpResult {
    OpResult::Read(FileRead {
        stat: StatInfo {
            exists: true,
            ..StatInfo::default()
        },
        offset: 0,
        data: text.as_bytes().to_vec(),
        eof: true,
    })
}

/// The probe's reply: no update stamp, lists updated at 1_700_000_000, these auto marks
/// and this dpkg-query output.
fn probe_reply(extended_states: &str, dpkg: &str) -> OpResult {
    OpResult::Batch(vec![
        python_apt_reply(true),
        stat_reply(false, 0),
        stat_reply(true, 1_700_000_000),
        read_reply(extended_states),
        exec_reply(if dpkg.is_empty() { 1 } else { 0 }, dpkg, ""),
    ])
}

/// The look for python3-apt's library.
fn python_apt_reply(exists: bool) -> OpResult {
    OpResult::Stat(StatInfo {
        exists,
        kind: turbo_proto::FileKind::File,
        ..StatInfo::default()
    })
}

fn step(plan: Plan, reply: OpResult) -> Plan {
    match plan {
        Plan::Step(_, next) => next.resume(reply).unwrap_or_else(|e| panic!("{e}")),
        other => panic!("not a step: {other:?}"),
    }
}

fn op_of(plan: &Plan) -> &Op {
    match plan {
        Plan::Step(op, _) | Plan::Remote(op) => op,
        Plan::Done(out) => panic!("done: {out:?}"),
        Plan::Flow(_) => panic!("a flow"),
    }
}

fn argv_of(plan: &Plan) -> Vec<String> {
    match op_of(plan) {
        Op::Exec(x) => match &x.command {
            Command::Argv(argv) => argv.clone(),
            other => panic!("not an argv: {other:?}"),
        },
        other => panic!("not an exec: {other:?}"),
    }
}

fn done(plan: Plan) -> TaskOutcome {
    match plan {
        Plan::Done(out) => out,
        other => panic!("not done: {other:?}"),
    }
}

fn strs(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

const INSTALL: &[&str] = &[
    "/usr/bin/apt-get",
    "-y",
    "-o",
    "Dpkg::Options::=--force-confdef",
    "-o",
    "Dpkg::Options::=--force-confold",
    "-o",
    "DPkg::Lock::Timeout=60",
];

#[test]
fn the_first_look_is_one_batch_of_stats_marks_and_one_dpkg_query() {
    let p = plan(json!({"name": ["tree", "jq=1.6*"]}), &ctx());
    let Op::Batch(ops) = op_of(&p) else {
        panic!("a batch")
    };
    assert_eq!(ops.len(), 5);
    assert_eq!(
        ops[0],
        Op::Stat {
            path: "/usr/lib/python3/dist-packages/apt/__init__.py".into(),
            checksum: None,
            follow: true
        }
    );
    assert_eq!(
        ops[1],
        Op::Stat {
            path: "/var/lib/apt/periodic/update-success-stamp".into(),
            checksum: None,
            follow: true
        }
    );
    assert_eq!(
        ops[3],
        Op::ReadFile {
            path: "/var/lib/apt/extended_states".into(),
            offset: 0,
            limit: None
        }
    );
    let Op::Exec(query) = &ops[4] else {
        panic!("dpkg-query")
    };
    assert_eq!(
        query.command,
        Command::Argv(strs(&[
            "dpkg-query",
            "-W",
            "-f=${Package}\\t${Architecture}\\t${db:Status-Abbrev}\\t${Version}\\n",
            "tree",
            "jq"
        ]))
    );
    assert!(
        query
            .env
            .contains(&("DEBIAN_FRONTEND".into(), "noninteractive".into()))
    );
}

#[test]
fn installed_packages_end_after_the_first_look() {
    let p = plan(json!({"name": "tree,jq"}), &ctx());
    let out = done(step(
        p,
        probe_reply("", "tree\tamd64\tii \t2.1.0-1\njq\tamd64\tii \t1.6-2.1\n"),
    ));
    assert!(!out.changed && !out.failed);
    assert_eq!(
        Value::Object(out.data),
        json!({"cache_updated": false, "cache_update_time": 1_700_000_000})
    );
}

#[test]
fn a_missing_package_asks_apt_cache_then_installs_all_names_in_one_call() {
    let p = plan(json!({"name": ["tree", "jq", "turbo-conf"]}), &ctx());
    let p = step(p, probe_reply("", "tree\tamd64\tii \t2.1.0-1\n"));
    assert_eq!(
        argv_of(&p),
        strs(&["apt-cache", "policy", "jq", "turbo-conf"])
    );
    let policy = "jq:\n  Installed: (none)\n  Candidate: 1.6-2.1\n  Version table:\n     1.6-2.1 500\n        500 http://deb bookworm/main amd64 Packages\n\
                  turbo-conf:\n  Installed: (none)\n  Candidate: 1.0\n  Version table:\n     1.0 500\n        500 file:/opt/repo ./ Packages\n";
    let p = step(p, exec_reply(0, policy, ""));
    let mut want = strs(INSTALL);
    want.extend(strs(&["install", "jq=1.6-2.1", "turbo-conf=1.0"]));
    assert_eq!(argv_of(&p), want);
    let out = done(step(p, exec_reply(0, "Setting up jq\n", "")));
    assert!(out.changed);
    assert_eq!(out.data["stdout_lines"], json!(["Setting up jq"]));
    assert_eq!(out.data["diff"], json!({}));
    assert_eq!(out.data["cache_updated"], json!(false));
}

#[test]
fn an_unknown_name_fails_in_ansibles_words() {
    let p = plan(json!({"name": "nope"}), &ctx());
    let p = step(p, probe_reply("", ""));
    let out = done(step(
        p,
        exec_reply(0, "", "N: Unable to locate package nope\n"),
    ));
    assert!(out.failed);
    assert_eq!(
        out.msg.as_deref(),
        Some("No package matching 'nope' is available")
    );
    assert!(out.data.is_empty());
}

#[test]
fn a_pin_matches_a_pattern_and_a_missing_version_has_no_candidate() {
    let policy = "turbo-multi:\n  Installed: 2.0\n  Candidate: 2.0\n  Version table:\n *** 2.0 500\n        500 file:/opt/repo ./ Packages\n     1.0 500\n        500 file:/opt/repo ./ Packages\n";
    let installed = "turbo-multi\tall\tii \t2.0\n";
    let p = plan(
        json!({"name": "turbo-multi=1.*", "allow_downgrade": true}),
        &ctx(),
    );
    let p = step(
        step(p, probe_reply("", installed)),
        exec_reply(0, policy, ""),
    );
    let argv = argv_of(&p);
    assert_eq!(
        &argv[argv.len() - 2..],
        ["turbo-multi=1.0", "--allow-downgrades"]
    );

    // An exact pin that is installed needs no apt.
    let p = plan(json!({"name": "turbo-multi=2.0"}), &ctx());
    assert!(!done(step(p, probe_reply("", installed))).changed);

    let p = plan(json!({"name": "turbo-multi=3.0"}), &ctx());
    let p = step(
        step(p, probe_reply("", installed)),
        exec_reply(0, policy, ""),
    );
    let out = done(p);
    assert_eq!(
        out.msg.as_deref(),
        Some("no available installation candidate for turbo-multi=3.0")
    );
    assert_eq!(out.data["cache_updated"], json!(false));
}

#[test]
fn latest_upgrades_only_what_has_a_newer_candidate() {
    let policy = "turbo-multi:\n  Installed: 1.0\n  Candidate: 2.0\n  Version table:\n     2.0 500\n *** 1.0 100\n";
    let p = plan(json!({"name": "turbo-multi", "state": "latest"}), &ctx());
    let p = step(p, probe_reply("", "turbo-multi\tall\tii \t1.0\n"));
    let p = step(p, exec_reply(0, policy, ""));
    assert_eq!(argv_of(&p).last().unwrap(), "turbo-multi=2.0");

    let current =
        "turbo-multi:\n  Installed: 2.0\n  Candidate: 2.0\n  Version table:\n *** 2.0 500\n";
    let p = plan(json!({"name": "turbo-multi", "state": "latest"}), &ctx());
    let p = step(p, probe_reply("", "turbo-multi\tall\tii \t2.0\n"));
    assert!(!done(step(p, exec_reply(0, current, ""))).changed);
}

#[test]
fn check_mode_simulates_and_marks_nothing() {
    let p = plan(json!({"name": "tree"}), &checking());
    let p = step(p, probe_reply("", ""));
    let p = step(
        p,
        exec_reply(
            0,
            "tree:\n  Candidate: 2.1.0-1\n  Version table:\n     2.1.0-1 500\n",
            "",
        ),
    );
    let argv = argv_of(&p);
    assert_eq!(
        &argv[argv.len() - 3..],
        ["--simulate", "install", "tree=2.1.0-1"]
    );
    assert!(done(step(p, exec_reply(0, "Inst tree\n", ""))).changed);
    assert!(Apt.caps().own_check_mode);
}

#[test]
fn an_auto_installed_package_asked_for_is_marked_manual_without_a_change() {
    let p = plan(json!({"name": "turbo-lib"}), &ctx());
    let p = step(
        p,
        probe_reply(
            "Package: turbo-lib\nArchitecture: all\nAuto-Installed: 1\n",
            "turbo-lib\tall\tii \t1.0\n",
        ),
    );
    assert_eq!(
        argv_of(&p),
        strs(&["/usr/bin/apt-mark", "manual", "turbo-lib"])
    );
    assert!(!done(step(p, exec_reply(0, "", ""))).changed);
}

#[test]
fn absent_removes_only_what_is_installed_and_purge_what_left_files() {
    let p = plan(json!({"name": ["tree", "gone"], "state": "absent"}), &ctx());
    let out = done(step(p, probe_reply("", "gone\tall\trc \t1.0\n")));
    assert!(!out.changed);
    assert!(out.data.is_empty(), "Ansible's exit_json(changed=False)");

    let p = plan(
        json!({"name": ["tree", "gone"], "state": "absent", "purge": true}),
        &ctx(),
    );
    let p = step(
        p,
        probe_reply("", "tree\tamd64\tii \t2.1.0-1\ngone\tall\trc \t1.0\n"),
    );
    let mut want = strs(INSTALL);
    want.insert(1, "-q".into());
    want.extend(strs(&["--purge", "remove", "tree", "gone"]));
    assert_eq!(argv_of(&p), want);
    let out = done(step(p, exec_reply(100, "", "E: boom\n")));
    assert_eq!(
        out.msg.as_deref(),
        Some("'apt-get remove 'tree' 'gone'' failed: E: boom\n")
    );
}

#[test]
fn update_cache_respects_cache_valid_time_and_check_mode() {
    // Lists from 100 s before the target's clock: fresh for 3600 s.
    let p = plan(
        json!({"update_cache": true, "cache_valid_time": 3600}),
        &ctx(),
    );
    let out = done(step(p, probe_reply("", "")));
    assert!(!out.changed);
    assert_eq!(out.data["cache_update_time"], json!(1_700_000_000));

    let p = plan(json!({"update_cache": true}), &checking());
    let out = done(step(p, probe_reply("", "")));
    assert!(out.changed);
    assert_eq!(out.data["cache_updated"], json!(true));

    let p = plan(json!({"update_cache": true}), &ctx());
    let p = step(p, probe_reply("", ""));
    let Op::Batch(ops) = op_of(&p) else {
        panic!("update and stats")
    };
    assert!(
        matches!(&ops[0], Op::Exec(x) if x.command == Command::Argv(strs(&["/usr/bin/apt-get", "update", "-q", "-o", "APT::Update::Error-Mode=any"])))
    );
    let out = done(step(
        p,
        OpResult::Batch(vec![
            exec_reply(0, "", ""),
            stat_reply(false, 0),
            stat_reply(true, 1_700_000_200),
        ]),
    ));
    assert!(out.changed);
    assert_eq!(
        Value::Object(out.data),
        json!({"cache_updated": true, "cache_update_time": 1_700_000_200})
    );
}

#[test]
fn upgrade_runs_apt_get_and_reports_a_change_only_when_it_did_something() {
    let p = plan(json!({"upgrade": "dist"}), &ctx());
    let p = step(p, probe_reply("", ""));
    let mut want = strs(INSTALL);
    want.push("dist-upgrade".into());
    assert_eq!(argv_of(&p), want);
    let out = done(step(
        p,
        exec_reply(
            0,
            "Reading...\n0 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.\n",
            "",
        ),
    ));
    assert!(!out.changed);
    assert!(out.msg.unwrap().contains("0 upgraded"));
}

#[test]
fn arguments_fail_as_ansible_says() {
    for (args, msg) in [
        (json!({"name": "a=1=2"}), "invalid package spec: a=1=2"),
        (
            json!({"deb": "/x.deb", "name": "a"}),
            "parameters are mutually exclusive: deb|package|upgrade",
        ),
        (
            json!({"deb": "/x.deb", "state": "absent"}),
            "deb only supports state=present",
        ),
        (
            json!({"name": ["*", "a"], "state": "latest"}),
            "unable to install additional packages when upgrading all installed packages",
        ),
        (
            json!({"name": "a", "state": "gone"}),
            "value of state must be one of: absent, build-dep, fixed, latest, present, got: gone",
        ),
    ] {
        assert_eq!(
            try_plan(&Apt, args.clone(), &ctx()).unwrap_err(),
            msg,
            "{args}"
        );
    }
}

#[test]
fn specs_split_as_ansible() {
    let s = PackageSpec::parse("foo>=1.2");
    assert_eq!(
        (s.name.as_str(), s.cmp, s.version.as_str()),
        ("foo", Some(Cmp::AtLeast), "1.2")
    );
    let s = PackageSpec::parse("foo=1.*");
    assert_eq!(
        (s.name.as_str(), s.cmp, s.version.as_str()),
        ("foo", Some(Cmp::Eq), "1.*")
    );
    assert_eq!(PackageSpec::parse("foo").cmp, None);
    assert!(PackageSpec::parse("foo>=1.2").accepts("1.10"));
    assert!(!PackageSpec::parse("foo>=1.2").accepts("1.1"));
}

/// The probe's reply on a host without python3-apt.
fn probe_reply_without_python_apt() -> OpResult {
    let OpResult::Batch(mut results) = probe_reply("", "") else {
        unreachable!()
    };
    results[0] = python_apt_reply(false);
    OpResult::Batch(results)
}

#[test]
fn without_python3_apt_check_mode_and_no_auto_install_fail_as_ansibles() {
    let p = plan(json!({"name": "hello", "state": "absent"}), &checking());
    let out = done(step(p, probe_reply_without_python_apt()));
    assert!(out.failed);
    assert_eq!(
        out.msg.as_deref(),
        Some(
            "python3-apt must be installed to use check mode. If run normally this module can auto-install it, see the auto_install_module_deps option."
        )
    );

    let p = plan(
        json!({"name": "hello", "auto_install_module_deps": false}),
        &ctx(),
    );
    let p = step(p, probe_reply_without_python_apt());
    assert_eq!(argv_of(&p)[0], "python3");
    let out = done(step(
        p,
        exec_reply(0, "/usr/bin/python3\n3.11.2 (main) [GCC 12.2.0]\n", ""),
    ));
    assert_eq!(
        out.msg.as_deref(),
        Some(
            "Could not import the python3-apt module using /usr/bin/python3 (3.11.2 (main) [GCC 12.2.0]). Ensure python3-apt package is installed (either manually or via the auto_install_module_deps option) or that you have specified the correct ansible_python_interpreter. (attempted ['/usr/bin/python3', '/usr/bin/python'])."
        )
    );
}

#[test]
fn without_python3_apt_it_is_installed_then_the_task_runs_with_ansibles_warning() {
    let p = plan(
        json!({"name": "hello", "state": "absent", "update_cache": false}),
        &ctx(),
    );
    let p = step(p, probe_reply_without_python_apt());
    let mut want = strs(&["/usr/bin/apt-get", "install", "python3-apt", "-y", "-q"]);
    want.extend(strs(&INSTALL[2..]));
    assert_eq!(argv_of(&p), want);
    let p = step(p, exec_reply(0, "Setting up python3-apt\n", ""));
    // Looks again: now it is there, and hello is not installed.
    let out = done(step(p, probe_reply("", "")));
    assert!(!out.failed && !out.changed, "{out:?}");
    assert_eq!(
        out.data["warnings"],
        json!(["Auto-installing missing dependency without updating cache: python3-apt"])
    );

    let p = plan(json!({"name": "hello"}), &ctx());
    let p = step(p, probe_reply_without_python_apt());
    assert_eq!(argv_of(&p), strs(&["/usr/bin/apt-get", "update"]));
    let out = done(step(p, exec_reply(100, "", "E: no network\n")));
    assert_eq!(out.msg.as_deref(), Some("E: no network"));
    assert_eq!(out.data["rc"], json!(100));
    assert_eq!(
        out.data["warnings"],
        json!(["Updating cache and auto-installing missing dependency: python3-apt"])
    );
}

#[test]
fn name_patterns_stand_for_the_native_packages_apt_knows_that_match() {
    let p = plan(
        json!({"name": ["hel?o", "he?lo"], "state": "absent"}),
        &ctx(),
    );
    let Op::Batch(ops) = op_of(&p) else {
        panic!("a batch")
    };
    assert_eq!(ops.len(), 4, "no dpkg-query of patterns");
    let p = step(p, probe_reply("", ""));
    assert_eq!(argv_of(&p), strs(&["apt-cache", "pkgnames"]));
    let p = step(p, exec_reply(0, "jello\nhello\nhello:i386\nhelo\n", ""));
    assert_eq!(
        argv_of(&p)[3..],
        strs(&["hello", "hello"])[..],
        "each pattern's native matches, duplicates kept"
    );
    let p = step(p, exec_reply(0, "hello\tamd64\tii \t2.10-3\n", ""));
    let argv = argv_of(&p);
    assert!(argv.contains(&"remove".to_string()), "{argv:?}");
    assert!(argv.contains(&"hello".to_string()), "{argv:?}");

    let p = plan(json!({"name": "nothing*"}), &ctx());
    let p = step(step(p, probe_reply("", "")), exec_reply(0, "hello\n", ""));
    assert_eq!(
        done(p).msg.as_deref(),
        Some("No package(s) matching 'nothing*' available")
    );
}

#[test]
fn clean_runs_apt_get_clean_first_and_alone_ends_changed() {
    let p = plan(json!({"clean": true}), &checking());
    let p = step(p, probe_reply("", ""));
    assert_eq!(argv_of(&p), strs(&["apt-get", "clean"]));
    let out = done(step(p, exec_reply(0, "", "")));
    assert!(out.changed && !out.failed);
    assert_eq!(out.msg.as_deref(), Some(""));

    let p = plan(json!({"clean": true, "name": "tree"}), &ctx());
    let p = step(p, probe_reply("", ""));
    let p = step(p, exec_reply(0, "", ""));
    assert_eq!(argv_of(&p), strs(&["apt-cache", "policy", "tree"]));

    let p = plan(json!({"clean": true}), &ctx());
    let p = step(p, probe_reply("", ""));
    let out = done(step(p, exec_reply(0, "", "W: odd\n")));
    assert_eq!(out.msg.as_deref(), Some("apt-get clean failed: W: odd\n"));
}

#[test]
fn a_deb_file_gets_its_missing_dependencies_from_apt_first_marked_automatic() {
    let p = plan(json!({"deb": "/tmp/one.deb"}), &ctx());
    let p = step(p, probe_reply("", ""));
    assert_eq!(
        argv_of(&p),
        strs(&[
            "dpkg-deb",
            "--field",
            "/tmp/one.deb",
            "Package",
            "Version",
            "Pre-Depends",
            "Depends",
            "Recommends"
        ])
    );
    let p = step(
        p,
        exec_reply(
            0,
            "Package: packageone\nVersion: 1.0\nDepends: packagetwo, libc6 (>= 2.3)\n",
            "",
        ),
    );
    assert_eq!(
        argv_of(&p)[3..],
        strs(&["packageone", "libc6", "packagetwo"])[..]
    );
    let p = step(p, exec_reply(1, "libc6\tamd64\tii \t2.36-9\n", ""));
    assert_eq!(argv_of(&p), strs(&["apt-cache", "policy", "packagetwo"]));
    let policy = "packagetwo:\n  Installed: (none)\n  Candidate: 2.0\n  Version table:\n     2.0 500\n        500 file:/opt/repo ./ Packages\n";
    let p = step(p, exec_reply(0, policy, ""));
    let mut want = strs(INSTALL);
    want.extend(strs(&["install", "packagetwo=2.0"]));
    assert_eq!(argv_of(&p), want);
    let p = step(p, exec_reply(0, "Setting up packagetwo (2.0) ...\n", ""));
    assert_eq!(
        argv_of(&p),
        strs(&["/usr/bin/apt-mark", "auto", "packagetwo"])
    );
    let p = step(
        p,
        exec_reply(0, "packagetwo set to automatically installed.\n", ""),
    );
    assert_eq!(
        argv_of(&p),
        strs(&[
            "dpkg",
            "--force-confdef",
            "--force-confold",
            "-i",
            "/tmp/one.deb"
        ])
    );
    let out = done(step(
        p,
        exec_reply(0, "Unpacking packageone (1.0) ...\n", ""),
    ));
    assert!(out.changed && !out.failed);
    assert_eq!(
        out.data["stdout"],
        json!("Setting up packagetwo (2.0) ...\nUnpacking packageone (1.0) ...\n")
    );
}
