use super::*;
use serde_json::{Value, json};
use std::path::Path;
use turbo_proto::{ExecOutcome, FileRead, StatInfo};

fn debian(hostname_file: Option<&str>) -> Probe {
    Probe {
        system: "Linux".into(),
        distribution: "Debian".into(),
        fqdn: "box.example.org".into(),
        systemctl: true,
        hostnamectl: true,
        canary: false,
        hostname_file: hostname_file.map(str::to_string),
    }
}

#[test]
fn the_probe_is_one_batch() {
    let plan = crate::modules::try_plan(
        &Hostname,
        json!({"name": "web1"}),
        &PlanContext::new(Path::new("/")),
    )
    .unwrap();
    let Plan::Step(Op::Batch(ops), next) = plan else {
        panic!("a probe first")
    };
    assert_eq!(ops.len(), 6);
    assert_eq!(ops[1], Op::Exec(sh(TOOLS)));
    let exec = |stdout: &str| {
        OpResult::Exec(ExecOutcome {
            ran: true,
            rc: 0,
            stdout: stdout.as_bytes().to_vec(),
            stderr: Vec::new(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        })
    };
    let mut stat = StatInfo::missing(HOSTNAME_FILE.into());
    stat.kind = FileKind::File;
    stat.exists = true;
    let reply = OpResult::Batch(vec![
        OpResult::Facts(vec![
            ("system".into(), FactValue::Str("Linux".into())),
            ("fqdn".into(), FactValue::Str("old".into())),
            ("distribution".into(), FactValue::Str("Debian".into())),
        ]),
        exec("systemctl\nhostnamectl\n"),
        OpResult::Read(FileRead {
            stat,
            offset: 0,
            data: b"old\n".to_vec(),
            eof: true,
        }),
        OpResult::Stat(StatInfo::missing("/run/systemd/system/".into())),
        OpResult::Stat(StatInfo::missing("/dev/.run/systemd/".into())),
        OpResult::Stat(StatInfo::missing("/dev/.systemd/".into())),
    ]);
    let Plan::Step(op, _) = next.resume(reply).unwrap() else {
        panic!("a write")
    };
    assert_eq!(
        op,
        Op::EnsureFile(EnsureFile {
            path: "/etc/hostname".into(),
            content: FileContent::Inline(b"web1\n".to_vec()),
            mode: None,
            force: true,
            owner: Ownership::default(),
            validate: None,
            backup: false,
        })
    );
}

#[test]
fn strategies_are_ansibles_choice() {
    let mut probe = debian(None);
    assert_eq!(strategy(None, &probe), Ok(Strategy::File));
    assert_eq!(strategy(Some("debian"), &probe), Ok(Strategy::Systemd));
    probe.canary = true;
    assert_eq!(strategy(None, &probe), Ok(Strategy::Systemd));
    probe.systemctl = false;
    assert_eq!(strategy(None, &probe), Ok(Strategy::File));
    probe.distribution = "RedHat".into();
    assert_eq!(
        strategy(None, &probe).unwrap_err(),
        "turbo-play's hostname does not run the Linux RedHat platform's strategy yet; run this task with ansible-playbook"
    );
    assert_eq!(
        strategy(Some("openrc"), &probe).unwrap_err(),
        "turbo-play's hostname does not run the 'openrc' strategy yet; run this task with ansible-playbook"
    );
}

#[test]
fn the_file_strategy_writes_the_name_and_reports_the_facts() {
    let Plan::Done(out) = run("web1".into(), None, true, debian(Some("old\n"))) else {
        panic!("check mode writes nothing")
    };
    assert!(out.changed);
    assert_eq!(
        Value::Object(out.data),
        json!({
            "name": "web1",
            "ansible_facts": {"ansible_hostname": "web1", "ansible_nodename": "web1", "ansible_fqdn": "box.example.org", "ansible_domain": "example.org"},
            "diff": {"after": "hostname = web1\n", "before": "hostname = old\n"},
        })
    );
    let Plan::Done(out) = run("web1.lan".into(), None, false, debian(Some(" web1.lan \n"))) else {
        panic!("nothing to write")
    };
    assert!(!out.changed);
    assert_eq!(out.data["ansible_facts"]["ansible_hostname"], json!("web1"));
    assert!(!out.data.contains_key("diff"));
}

#[test]
fn systemd_reads_both_names_then_sets_permanent_first() {
    let Plan::Step(op, _) = run("web1".into(), Some("systemd"), false, debian(None)) else {
        panic!("hostnamectl reads first")
    };
    assert_eq!(
        op,
        Op::Batch(vec![
            Op::Exec(argv(&["hostnamectl", "--transient", "status"])),
            Op::Exec(argv(&["hostnamectl", "--static", "status"])),
        ])
    );
}
