//! Planner tests: what is asked of the target, and what each answer leads to.

use std::path::Path;

use serde_json::json;
use turbo_proto::{ExecOutcome, FileRead, StatInfo};

use super::*;

const FPR: &str = "3A5D6F9117C0D3CAAB89F1C08F5D291AF97BE1BB";

fn ctx(check: bool) -> PlanContext<'static> {
    PlanContext {
        check_mode: check,
        ..PlanContext::new(Path::new("/"))
    }
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

fn key_file(text: &str) -> OpResult {
    OpResult::Read(FileRead {
        stat: StatInfo {
            path: "/k.asc".into(),
            exists: true,
            kind: FileKind::File,
            ..Default::default()
        },
        offset: 0,
        data: text.as_bytes().to_vec(),
        eof: true,
    })
}

fn after(args: serde_json::Value, check: bool, replies: Vec<OpResult>) -> Plan {
    let plan = crate::modules::try_plan(&RpmKey, args, &ctx(check)).unwrap();
    let Plan::Step(Op::Batch(ops), next) = plan else {
        panic!("a query first")
    };
    assert_eq!(ops.len(), replies.len());
    next.resume(OpResult::Batch(replies)).unwrap()
}

fn argv(plan: &Plan) -> Vec<String> {
    match plan {
        Plan::Step(
            Op::Exec(Exec {
                command: Command::Argv(a),
                ..
            }),
            _,
        ) => a.clone(),
        other => panic!("expected a command, got {other:?}"),
    }
}

fn outcome(plan: Plan) -> TaskOutcome {
    match plan {
        Plan::Done(out) => out,
        other => panic!("expected an outcome, got {other:?}"),
    }
}

const RPM4: &str = "RPM version 4.18.0\n";

#[test]
fn imports_a_key_that_is_not_there() {
    let plan = after(
        json!({"key": "/k.asc"}),
        false,
        vec![ran(0, RPM4, ""), key_file(TEST_KEY)],
    );
    assert_eq!(argv(&plan), ["rpm", "--import", "/k.asc"]);
    let Plan::Step(_, next) = plan else { panic!() };
    assert!(outcome(next.resume(ran(0, "", "")).unwrap()).changed);
    // In check mode nothing runs.
    let out = outcome(after(
        json!({"key": "/k.asc"}),
        true,
        vec![ran(0, RPM4, ""), key_file(TEST_KEY)],
    ));
    assert!(out.changed && !out.failed);
}

#[test]
fn a_key_there_already_changes_nothing_and_goes_by_its_id() {
    let there = format!("{RPM4}{TEST_KEY}");
    let out = outcome(after(
        json!({"key": "/k.asc"}),
        false,
        vec![ran(0, &there, ""), key_file(TEST_KEY)],
    ));
    assert!(!out.changed && !out.failed);
    let plan = after(
        json!({"key": "0xF97BE1BB", "state": "absent"}),
        false,
        vec![ran(0, &there, "")],
    );
    assert_eq!(
        argv(&plan),
        ["rpm", "--erase", "--allmatches", "gpg-pubkey-f97be1bb"]
    );
    let rpm6 = format!("RPM version 6.0.0\n{TEST_KEY}");
    let plan = after(
        json!({"key": FPR, "state": "absent"}),
        false,
        vec![ran(0, &rpm6, "")],
    );
    assert_eq!(argv(&plan), ["rpmkeys", "--delete", FPR]);
}

#[test]
fn ansibles_messages() {
    let msg = |plan: Plan| outcome(plan).msg.unwrap();
    assert_eq!(
        msg(after(
            json!({"key": "/k.asc"}),
            false,
            vec![
                ran(0, "missing\trpm\t/usr/bin:/bin:/sbin:/usr/sbin\n", ""),
                key_file("")
            ],
        )),
        "Failed to find required executable \"rpm\" in paths: /usr/bin:/bin:/sbin:/usr/sbin"
    );
    assert_eq!(
        msg(after(
            json!({"key": "DEADBEEF"}),
            false,
            vec![ran(0, RPM4, "")]
        )),
        "When importing a key, a valid file must be given"
    );
    assert_eq!(
        msg(after(
            json!({"key": "/k.asc", "fingerprint": "AAAA"}),
            false,
            vec![ran(0, RPM4, ""), key_file(TEST_KEY)],
        )),
        format!(
            "The specified fingerprint, '{{'AAAA'}}', does not match any key fingerprints in 'frozenset({{'{FPR}'}})'"
        )
    );
    let missing = OpResult::Read(FileRead {
        stat: StatInfo::default(),
        offset: 0,
        data: Vec::new(),
        eof: true,
    });
    assert_eq!(
        msg(after(
            json!({"key": "/nope"}),
            false,
            vec![ran(0, RPM4, ""), missing]
        )),
        "Not a valid key /nope"
    );
    // Already absent: nothing to do.
    let out = outcome(after(
        json!({"key": "DEADBEEF", "state": "absent"}),
        false,
        vec![ran(0, RPM4, "")],
    ));
    assert!(!out.changed && !out.failed);
}
