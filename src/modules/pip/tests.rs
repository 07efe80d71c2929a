use std::path::Path;

use serde_json::{Value, json};
use turbo_proto::{
    Command, Exec, ExecOutcome, FileKind, FileRead, Op, OpResult, StatInfo, TreeListing,
};

use super::*;

const WHEELS: &str = "--no-index --find-links /srv/wheels";

fn plan_in(args: Value, check: bool) -> Result<Plan, String> {
    let ctx = PlanContext {
        check_mode: check,
        ..PlanContext::new(Path::new("/"))
    };
    crate::modules::try_plan(&Pip, args, &ctx)
}

fn plan(args: Value) -> Plan {
    plan_in(args, false).unwrap()
}

fn resume(plan: Plan, reply: OpResult) -> Plan {
    match plan {
        Plan::Step(_, next) => next.resume(reply).unwrap(),
        other => panic!("expected a step, got {other:?}"),
    }
}

fn op(plan: &Plan) -> &Op {
    match plan {
        Plan::Step(op, _) | Plan::Remote(op) => op,
        Plan::Done(out) => panic!("expected an op, got {out:?}"),
        Plan::Flow(_) => panic!("expected an op, got a flow"),
    }
}

fn done(plan: Plan) -> TaskOutcome {
    match plan {
        Plan::Done(out) => out,
        other => panic!("expected done, got {other:?}"),
    }
}

fn stat(path: &str, exists: bool) -> OpResult {
    OpResult::Stat(StatInfo {
        path: path.into(),
        exists,
        executable: exists,
        kind: if exists {
            FileKind::File
        } else {
            FileKind::Missing
        },
        ..StatInfo::default()
    })
}

fn dir(path: &str) -> StatInfo {
    StatInfo {
        path: path.into(),
        exists: true,
        kind: FileKind::Directory,
        ..StatInfo::default()
    }
}

fn read(text: &str) -> OpResult {
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

/// The venv probe's answer for /v holding these metadata directories.
fn venv_reply(exists: bool, dists: &[&str]) -> OpResult {
    let site = "/v/lib/python3.11/site-packages";
    let mut entries = vec![dir("/v/lib/python3.11"), dir(site)];
    entries.extend(dists.iter().map(|d| dir(&format!("{site}/{d}"))));
    OpResult::Batch(vec![
        stat("/v/bin/activate", exists),
        stat("/v/bin/pip3", exists),
        stat("/v/bin/pip", exists),
        read("home = /usr/bin\ninclude-system-site-packages = false\n"),
        OpResult::Tree(TreeListing {
            root: dir("/v/lib"),
            entries,
            skipped: Vec::new(),
        }),
    ])
}

fn ran(rc: i32, stdout: &str, stderr: &str) -> OpResult {
    OpResult::Exec(ExecOutcome {
        ran: true,
        rc,
        stdout: stdout.as_bytes().to_vec(),
        stderr: stderr.as_bytes().to_vec(),
        start_unix_micros: 0,
        duration_micros: 0,
        msg: if rc == 0 {
            String::new()
        } else {
            NON_ZERO.into()
        },
    })
}

fn exec(argv: &[&str], chdir: &str) -> Op {
    Op::Exec(Exec {
        command: Command::Argv(argv.iter().map(|s| s.to_string()).collect()),
        chdir: Some(chdir.into()),
        creates: None,
        removes: None,
        env: Vec::new(),
        stdin: None,
        umask: None,
    })
}

#[test]
fn a_virtualenv_is_read_in_one_round_trip_without_a_process() {
    let first = plan(json!({"name": "tinypkg==1.0", "virtualenv": "/v"}));
    let Op::Batch(ops) = op(&first) else {
        panic!("a batch")
    };
    assert_eq!(
        ops,
        &[
            Op::Stat {
                path: "/v/bin/activate".into(),
                checksum: None,
                follow: true
            },
            Op::Stat {
                path: "/v/bin/pip3".into(),
                checksum: None,
                follow: true
            },
            Op::Stat {
                path: "/v/bin/pip".into(),
                checksum: None,
                follow: true
            },
            Op::ReadFile {
                path: "/v/pyvenv.cfg".into(),
                offset: 0,
                limit: Some(1 << 20)
            },
            Op::ListTree {
                path: "/v/lib".into(),
                max_depth: Some(3),
                follow: false,
                checksum: None
            },
        ]
    );
    let out = done(resume(
        first,
        venv_reply(true, &["tinypkg-1.0.dist-info", "pip-23.0.1.dist-info"]),
    ));
    assert!(!out.changed && !out.failed);
    assert_eq!(
        Value::Object(out.data),
        json!({
            "cmd": ["/v/bin/pip3", "install", "tinypkg==1.0"],
            "name": ["tinypkg==1.0"],
            "version": null,
            "state": "present",
            "requirements": null,
            "virtualenv": "/v",
            "stdout": "",
            "stderr": "",
        })
    );
}

#[test]
fn anything_missing_goes_to_one_pip_call() {
    let args = json!({"name": ["tinypkg>=1.5", "<3", "withdep"], "virtualenv": "/v", "extra_args": WHEELS});
    let step = resume(plan(args), venv_reply(true, &["tinypkg-2.0.dist-info"]));
    assert_eq!(
        op(&step),
        &exec(
            &[
                "/v/bin/pip3",
                "install",
                "--no-index",
                "--find-links",
                "/srv/wheels",
                "tinypkg<3,>=1.5",
                "withdep"
            ],
            "/tmp"
        )
    );
    let out = done(resume(
        step,
        ran(0, "Successfully installed withdep-1.0\n", ""),
    ));
    assert!(out.changed);
    assert_eq!(
        out.data["stdout"],
        json!("Successfully installed withdep-1.0\n")
    );
    // An option that changes where packages go leaves the decision to pip.
    let step = resume(
        plan(json!({"name": "tinypkg", "virtualenv": "/v", "extra_args": "--target /x"})),
        venv_reply(true, &["tinypkg-2.0.dist-info"]),
    );
    assert!(matches!(op(&step), Op::Exec(_)));
    let out = done(resume(
        step,
        ran(0, "Requirement already satisfied: tinypkg\n", ""),
    ));
    assert!(!out.changed);
}

#[test]
fn a_missing_virtualenv_is_made_first() {
    let args = json!({"name": "tinypkg", "version": "1.0", "virtualenv": "v", "chdir": "/srv",
        "virtualenv_command": "python3 -m venv", "virtualenv_site_packages": true, "umask": "0022"});
    let first = plan(args);
    let Op::Batch(ops) = op(&first) else { panic!() };
    assert_eq!(
        ops[0],
        Op::Stat {
            path: "/srv/v/bin/activate".into(),
            checksum: None,
            follow: true
        }
    );
    let reply = OpResult::Batch(vec![
        stat("/srv/v/bin/activate", false),
        stat("/srv/v/bin/pip3", false),
        stat("/srv/v/bin/pip", false),
        OpResult::Read(FileRead {
            stat: StatInfo::default(),
            offset: 0,
            data: Vec::new(),
            eof: true,
        }),
        OpResult::Tree(TreeListing {
            root: StatInfo::missing("/srv/v/lib".into()),
            entries: Vec::new(),
            skipped: Vec::new(),
        }),
    ]);
    let venv = resume(first, reply);
    let Op::Exec(e) = op(&venv) else { panic!() };
    assert_eq!(
        e.command,
        Command::Argv(
            ["python3", "-m", "venv", "--system-site-packages", "/srv/v"]
                .map(String::from)
                .to_vec()
        )
    );
    assert_eq!((e.chdir.as_deref(), e.umask), (Some("/srv"), Some(0o22)));
    let pip = resume(venv, ran(0, "", ""));
    let Op::Exec(e) = op(&pip) else { panic!() };
    assert_eq!(
        e.command,
        Command::Argv(
            ["/srv/v/bin/pip3", "install", "tinypkg==1.0"]
                .map(String::from)
                .to_vec()
        )
    );
    let out = done(resume(
        pip,
        ran(0, "Requirement already satisfied: tinypkg\n", ""),
    ));
    assert!(out.changed, "a new virtualenv is a change");
    assert_eq!(out.data["virtualenv"], json!("/srv/v"));
    assert_eq!(out.data["version"], json!("1.0"));

    // virtualenv itself gets -p; a failure is its output.
    let venv = resume(
        plan(json!({"name": "x", "virtualenv": "/v", "virtualenv_python": "python3.11"})),
        venv_reply(false, &[]),
    );
    let Op::Exec(e) = op(&venv) else { panic!() };
    assert_eq!(
        e.command,
        Command::Argv(
            ["virtualenv", "-ppython3.11", "/v"]
                .map(String::from)
                .to_vec()
        )
    );
    let out = done(resume(venv, ran(1, "partial\n", "boom\n")));
    assert!(out.failed);
    assert_eq!(
        out.msg.as_deref(),
        Some("stdout: partial\n\n:stderr: boom\n")
    );
    assert_eq!(out.data["cmd"], json!(["virtualenv", "-ppython3.11", "/v"]));
}

#[test]
fn check_mode_changes_nothing() {
    let check = |args: Value| plan_in(args, true).unwrap();
    // As Ansible: extra arguments, requirements or latest say changed without looking.
    let out = done(
        check(json!({"name": "tinypkg", "virtualenv": "/v", "extra_args": WHEELS}))
            .and_then_resume(venv_reply(true, &["tinypkg-1.0.dist-info"])),
    );
    assert!(out.changed);
    let out = done(resume(
        check(json!({"name": "tinypkg==1.0", "virtualenv": "/v"})),
        venv_reply(true, &["tinypkg-1.0.dist-info"]),
    ));
    assert!(!out.changed);
    assert_eq!(out.data["cmd"], json!("/v/bin/pip3 list --format=freeze"));
    let out = done(resume(
        check(json!({"name": "tinypkg==2.0", "virtualenv": "/v"})),
        venv_reply(true, &["tinypkg-1.0.dist-info"]),
    ));
    assert!(out.changed);
    let out = done(resume(
        check(json!({"name": "tinypkg", "state": "absent", "virtualenv": "/v"})),
        venv_reply(true, &[]),
    ));
    assert!(!out.changed);
    let out = done(resume(
        check(json!({"name": "tinypkg", "virtualenv": "/v"})),
        venv_reply(false, &[]),
    ));
    assert!(out.changed && out.data.is_empty());
}

trait ThenResume {
    fn and_then_resume(self, reply: OpResult) -> Plan;
}

impl ThenResume for Plan {
    fn and_then_resume(self, reply: OpResult) -> Plan {
        resume(self, reply)
    }
}

#[test]
fn absent_removes_only_what_is_there() {
    let out = done(resume(
        plan(json!({"name": ["otherpkg", "never"], "state": "absent", "virtualenv": "/v"})),
        venv_reply(true, &["tinypkg-1.0.dist-info"]),
    ));
    assert!(!out.changed);
    let step = resume(
        plan(json!({"name": ["otherpkg", "never"], "state": "absent", "virtualenv": "/v"})),
        venv_reply(true, &["otherpkg-0.1.dist-info"]),
    );
    assert_eq!(
        op(&step),
        &exec(
            &["/v/bin/pip3", "uninstall", "-y", "otherpkg", "never"],
            "/tmp"
        )
    );
    let out = done(resume(
        step,
        ran(
            1,
            "Found existing installation: otherpkg 0.1\nSuccessfully uninstalled otherpkg-0.1\n",
            "WARNING: Skipping never as it is not installed.\n",
        ),
    ));
    assert!(out.changed && !out.failed);
}

#[test]
fn the_system_python_is_asked_once_and_pip_refuses_an_externally_managed_one() {
    let first = plan(json!({"name": "pip"}));
    let Op::Batch(ops) = op(&first) else { panic!() };
    assert_eq!(ops, &[exec(&["python3", "-c", PROBE_SCRIPT], "/tmp")]);
    // pip is there, but PEP 668 makes pip itself answer, as Ansible always lets it.
    let step = resume(
        first,
        OpResult::Batch(vec![ran(
            0,
            "/usr/bin/python3\n1\n1\npip-23.0.1.dist-info\n",
            "",
        )]),
    );
    assert_eq!(
        op(&step),
        &exec(&["/usr/bin/python3", "-m", "pip", "install", "pip"], "/tmp")
    );
    let out = done(resume(
        step,
        ran(1, "", "error: externally-managed-environment\n"),
    ));
    assert!(out.failed && !out.changed);
    assert_eq!(
        out.msg.as_deref(),
        Some("\n:stderr: error: externally-managed-environment\n")
    );
    assert_eq!(
        out.data["cmd"],
        json!(["/usr/bin/python3", "-m", "pip", "install", "pip"])
    );
    // Not externally managed: the probe decides.
    let out = done(resume(
        plan(json!({"name": "pip>=20"})),
        OpResult::Batch(vec![ran(
            0,
            "/opt/py/bin/python3\n1\n0\npip-23.0.1.dist-info\n",
            "",
        )]),
    ));
    assert!(!out.changed);
    assert_eq!(
        out.data["cmd"],
        json!(["/opt/py/bin/python3", "-m", "pip", "install", "pip>=20"])
    );
}

#[test]
fn a_plain_requirements_file_is_decided_without_pip() {
    let first = plan(json!({"requirements": "reqs.txt", "virtualenv": "/v", "chdir": "/app"}));
    let Op::Batch(ops) = op(&first) else { panic!() };
    assert_eq!(
        ops[5],
        Op::ReadFile {
            path: "/app/reqs.txt".into(),
            offset: 0,
            limit: Some(1 << 20)
        }
    );
    let OpResult::Batch(mut reply) =
        venv_reply(true, &["tinypkg-2.0.dist-info", "withdep-1.0.dist-info"])
    else {
        panic!()
    };
    reply.push(read("# app\ntinypkg==2.0\nwithdep>=1.0\n"));
    let out = done(resume(first, OpResult::Batch(reply.clone())));
    assert!(!out.changed);
    assert_eq!(
        out.data["cmd"],
        json!(["/v/bin/pip3", "install", "-r", "reqs.txt"])
    );
    reply[5] = read("-r other.txt\n");
    let first = plan(json!({"requirements": "reqs.txt", "virtualenv": "/v", "chdir": "/app"}));
    let step = resume(first, OpResult::Batch(reply.clone()));
    // pip runs between two lists of what is installed: "changed" is whether they differ,
    // as Ansible decides it for requirements (and VCS URLs).
    let Op::Batch(ops) = op(&step) else {
        panic!("{:?}", op(&step))
    };
    assert_eq!(ops.len(), 3);
    assert_eq!(
        ops[1],
        exec(&["/v/bin/pip3", "install", "-r", "reqs.txt"], "/app")
    );
    let Op::Exec(list) = &ops[0] else { panic!() };
    assert_eq!(
        list.command,
        Command::Shell {
            script: "'/v/bin/pip3' list --format=freeze || '/v/bin/pip3' freeze".into(),
            executable: None
        }
    );
    let lists = |before: &str, after: &str| {
        OpResult::Batch(vec![
            ran(0, before, ""),
            ran(0, "Successfully installed iso8601-2.1.0\n", ""),
            ran(0, after, ""),
        ])
    };
    let same = done(resume(step, lists("-e git+x#egg=a\n", "-e git+x#egg=a\n")));
    assert!(!same.changed, "pip said installed, but nothing changed");
    let first = plan(json!({"requirements": "reqs.txt", "virtualenv": "/v", "chdir": "/app"}));
    let step = resume(first, OpResult::Batch(reply));
    assert!(done(resume(step, lists("", "a==1\n"))).changed);
}

#[test]
fn argument_errors_are_ansibles() {
    let msg = |args: Value| plan_in(args, false).unwrap_err();
    assert_eq!(
        msg(json!({"state": "present"})),
        "one of the following is required: name, requirements"
    );
    assert_eq!(
        msg(json!({"name": "x", "requirements": "r"})),
        "parameters are mutually exclusive: name|requirements"
    );
    assert_eq!(
        msg(json!({"name": "x", "executable": "pip3", "virtualenv": "/v"})),
        "parameters are mutually exclusive: executable|virtualenv"
    );
    assert_eq!(
        msg(json!({"name": "x", "version": "1", "state": "latest"})),
        "version is incompatible with state=latest"
    );
    assert!(
        msg(json!({"name": ["x", "y"], "version": "1"}))
            .starts_with("'version' argument is ambiguous")
    );
    assert!(
        msg(json!({"name": "x==2", "version": "1"}))
            .starts_with("The 'version' argument conflicts")
    );
    assert_eq!(
        msg(json!({"name": "x", "umask": "abc"})),
        "umask must be an octal integer"
    );
    assert_eq!(
        msg(json!({"name": "x", "state": "installed"})),
        "value of state must be one of: present, absent, latest, forcereinstall, got: installed"
    );
    let Plan::Step(_, next) = plan(json!({"name": "x", "virtualenv": "/v",
        "virtualenv_command": "python3 -m venv", "virtualenv_python": "python3"}))
    else {
        panic!()
    };
    assert_eq!(
        next.resume(venv_reply(false, &[])).unwrap_err().to_string(),
        "virtualenv_python should not be used when using the venv module or pyvenv as virtualenv_command"
    );
}

#[test]
fn venv_commands_as_ansible_knows_them() {
    let words = |s: &str| crate::shell_words::split(s).unwrap();
    assert!(is_venv_command(&words("python3 -m venv")));
    assert!(is_venv_command(&words("/usr/bin/python3.11 -mvenv")));
    assert!(is_venv_command(&words("pyvenv")));
    assert!(!is_venv_command(&words("virtualenv")));
    assert!(!is_venv_command(&words("python3 -m virtualenv")));
    assert!(neutral_extra_args(&words(
        "--no-index --find-links /w --find-links=/x --pre"
    )));
    assert!(!neutral_extra_args(&words("--user")));
    assert!(!neutral_extra_args(&words("--find-links")));
}

/// `name: []` with the virtualenv already there: nothing to install, as Ansible says.
#[test]
fn no_names_and_no_requirements_do_nothing_in_an_existing_venv() {
    let first = plan(json!({"name": [], "virtualenv": "/v"}));
    let out = done(resume(first, venv_reply(true, &[])));
    assert!(!out.changed && !out.failed);
    assert_eq!(
        out.data["warnings"],
        json!(["No valid name or requirements file found."])
    );
}

/// In check mode the system's Python is asked too (pip does its own check mode), so an
/// installed package is not "changed", as Ansible's `pip list` tells it.
#[test]
fn check_mode_asks_the_system_python_too() {
    let first = plan_in(json!({"name": "pip"}), true).unwrap();
    let Op::Batch(ops) = op(&first) else { panic!() };
    assert_eq!(ops, &[exec(&["python3", "-c", PROBE_SCRIPT], "/tmp")]);
    let out = done(resume(
        first,
        OpResult::Batch(vec![ran(
            0,
            "/usr/bin/python3\n1\n0\npip-23.0.1.dist-info\n",
            "",
        )]),
    ));
    assert!(!out.changed && !out.failed, "{out:?}");
}

/// In check mode a VCS URL is named by pip's dry run (pip 24.1 and later), then looked
/// for among the installed distributions; an older pip says it cannot tell, as Ansible.
#[test]
fn check_mode_names_vcs_urls_with_a_dry_run() {
    let args = json!({"name": "git+file:///r/.git", "virtualenv": "/v"});
    let first = plan_in(args.clone(), true).unwrap();
    let step = resume(first, venv_reply(true, &["dummy_root-0.0.1.dist-info"]));
    let Op::Exec(x) = op(&step) else { panic!() };
    let Command::Shell { script, .. } = &x.command else {
        panic!()
    };
    assert!(
        script.contains("'/v/bin/pip3' install --dry-run --ignore-installed --report=")
            && script.contains("'git+file:///r/.git'"),
        "{script}"
    );
    let report = r#"{"install": [{"metadata": {"name": "dummy-root", "version": "0.0.1"}}]}"#;
    let out = done(resume(step, ran(0, &format!("pip 25.2\n{report}"), "")));
    assert!(!out.changed && !out.failed, "{out:?}");

    let first = plan_in(args, true).unwrap();
    let step = resume(first, venv_reply(true, &["dummy_root-0.0.1.dist-info"]));
    let old = done(resume(step, ran(0, "pip 24.0\n", "")));
    assert!(old.changed);
    assert!(
        old.data["warnings"][0]
            .as_str()
            .unwrap()
            .contains("pip versions <24.1")
    );
}
