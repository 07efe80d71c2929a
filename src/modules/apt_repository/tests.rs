use std::path::Path;

use serde_json::json;
use turbo_proto::{ExecOutcome, FileRead, StatInfo, TreeListing};

use super::*;

fn plan(args: Value, check: bool) -> Result<Plan, String> {
    let mut ctx = PlanContext::new(Path::new("/"));
    ctx.check_mode = check;
    ctx.diff = true;
    crate::modules::try_plan(&AptRepository, args, &ctx)
}

fn file(path: &str, text: Option<&str>) -> OpResult {
    OpResult::Read(FileRead {
        stat: StatInfo {
            path: path.into(),
            exists: text.is_some(),
            kind: if text.is_some() {
                FileKind::File
            } else {
                FileKind::Missing
            },
            ..StatInfo::default()
        },
        offset: 0,
        data: text.unwrap_or_default().as_bytes().to_vec(),
        eof: true,
    })
}

fn listing(names: &[&str]) -> OpResult {
    OpResult::Tree(TreeListing {
        root: StatInfo {
            path: SOURCES_DIR.into(),
            exists: true,
            kind: FileKind::Directory,
            ..StatInfo::default()
        },
        entries: names
            .iter()
            .map(|n| StatInfo {
                path: format!("{SOURCES_DIR}/{n}"),
                exists: true,
                kind: FileKind::File,
                ..StatInfo::default()
            })
            .collect(),
        skipped: vec![],
    })
}

/// Runs the two reads with these files and returns the next plan.
fn after_reads(plan: Plan, main: Option<&str>, parts: &[(&str, &str)]) -> Plan {
    let Plan::Step(Op::Batch(ops), next) = plan else {
        panic!("expected the first reads")
    };
    assert_eq!(ops[0], read(SOURCES_LIST));
    let names: Vec<&str> = parts.iter().map(|(n, _)| *n).collect();
    let mut with_hidden = names.clone();
    with_hidden.push(".hidden.list");
    with_hidden.push("other.sources");
    let plan = next
        .resume(OpResult::Batch(vec![
            file(SOURCES_LIST, main),
            listing(&with_hidden),
        ]))
        .unwrap();
    if parts.is_empty() {
        return plan;
    }
    let Plan::Step(Op::Batch(ops), next) = plan else {
        panic!("expected the part reads")
    };
    assert_eq!(
        ops.len(),
        parts.len(),
        "only the visible .list files are read"
    );
    next.resume(OpResult::Batch(
        parts
            .iter()
            .map(|(n, t)| file(&format!("{SOURCES_DIR}/{n}"), Some(t)))
            .collect(),
    ))
    .unwrap()
}

fn exec(rc: i32, stderr: &str) -> OpResult {
    OpResult::Exec(ExecOutcome {
        rc,
        stderr: stderr.as_bytes().to_vec(),
        stdout: Vec::new(),
        ran: true,
        start_unix_micros: 0,
        duration_micros: 0,
        msg: String::new(),
    })
}

#[test]
fn adds_a_new_file_named_after_the_repository_then_updates_the_cache() {
    let p = plan(
        json!({"repo": "deb [trusted=yes] file:/srv/repo ./"}),
        false,
    )
    .unwrap();
    let Plan::Step(Op::Batch(writes), next) = after_reads(
        p,
        Some("deb http://mirror.example.org/debian bookworm main\n"),
        &[],
    ) else {
        panic!()
    };
    assert_eq!(writes.len(), 1);
    let Op::EnsureFile(e) = &writes[0] else {
        panic!()
    };
    assert_eq!(e.path, "/etc/apt/sources.list.d/file_srv_repo.list");
    assert_eq!(
        e.content,
        FileContent::Inline(b"deb [trusted=yes] file:/srv/repo ./\n".to_vec())
    );
    assert_eq!(e.mode, Some(FileMode::Bits(0o644)));
    let Plan::Step(Op::Exec(x), next) = next.resume(OpResult::Batch(vec![])).unwrap() else {
        panic!()
    };
    assert_eq!(
        x.command,
        Command::Argv(
            [
                "apt-get",
                "update",
                "-q",
                "-o",
                "APT::Update::Error-Mode=any"
            ]
            .map(String::from)
            .to_vec()
        )
    );
    let Plan::Done(out) = next.resume(exec(0, "")).unwrap() else {
        panic!()
    };
    assert!(out.changed);
    assert_eq!(
        out.data["sources_added"],
        json!(["/etc/apt/sources.list.d/file_srv_repo.list"])
    );
    assert_eq!(out.data["diff"][0]["before_header"], json!("/dev/null"));
}

#[test]
fn enables_a_commented_entry_and_is_unchanged_when_present() {
    let repo = "deb http://deb.invalid/debian bookworm main";
    let p = plan(json!({"repo": repo, "update_cache": false}), false).unwrap();
    let text = "# deb  http://deb.invalid/debian bookworm main # old\n";
    let Plan::Step(Op::Batch(writes), next) = after_reads(p, None, &[("old.list", text)]) else {
        panic!()
    };
    let Op::EnsureFile(e) = &writes[0] else {
        panic!()
    };
    assert_eq!(
        (e.path.as_str(), e.mode.clone()),
        ("/etc/apt/sources.list.d/old.list", None)
    );
    assert_eq!(
        e.content,
        FileContent::Inline(b"deb http://deb.invalid/debian bookworm main # old\n".to_vec())
    );
    let Plan::Done(out) = next.resume(OpResult::Batch(vec![])).unwrap() else {
        panic!()
    };
    assert!(out.changed);
    assert_eq!(out.data["sources_added"], json!([]));
    let p = plan(json!({"repo": repo}), false).unwrap();
    let Plan::Done(out) = after_reads(p, Some(&format!("{repo}\n")), &[]) else {
        panic!()
    };
    assert!(!out.changed);
}

#[test]
fn absent_removes_the_line_and_an_emptied_file() {
    let repo = "deb http://deb.invalid/debian bookworm main";
    let p = plan(json!({"repo": repo, "state": "absent"}), false).unwrap();
    let Plan::Step(Op::Batch(writes), next) = after_reads(
        p,
        Some(&format!("{repo}\ndeb http://keep/ x y\n")),
        &[("deb.invalid_debian.list", &format!("{repo}\n"))],
    ) else {
        panic!()
    };
    assert!(
        matches!(&writes[0], Op::EnsureFile(e) if e.path == SOURCES_LIST
        && e.content == FileContent::Inline(b"deb http://keep/ x y\n".to_vec()))
    );
    assert_eq!(
        writes[1],
        gone("/etc/apt/sources.list.d/deb.invalid_debian.list")
    );
    let Plan::Step(Op::Exec(_), next) = next.resume(OpResult::Batch(vec![])).unwrap() else {
        panic!()
    };
    // Every try fails: the sources are put back and the task fails with Ansible's words.
    let mut plan = next.resume(exec(100, "E: boom")).unwrap();
    for _ in 1..5 {
        let Plan::Step(Op::Batch(ops), next) = plan else {
            panic!()
        };
        assert!(
            matches!(&ops[0], Op::Exec(x) if x.command == Command::Argv(vec!["sleep".into(), "1".into()]) || matches!(&x.command, Command::Argv(a) if a[0] == "sleep"))
        );
        plan = next
            .resume(OpResult::Batch(vec![exec(0, ""), exec(100, "E: boom")]))
            .unwrap();
    }
    let Plan::Step(Op::Batch(revert), next) = plan else {
        panic!()
    };
    assert_eq!(revert.len(), 2);
    let Plan::Done(out) = next.resume(OpResult::Batch(vec![])).unwrap() else {
        panic!()
    };
    assert_eq!(
        out.msg.as_deref(),
        Some("Failed to update apt cache after 5 retries: E: boom")
    );
    assert_eq!(
        out.data["warnings"][0],
        json!("Failed to update cache after 1 due to E: boom retry, retrying")
    );
    assert_eq!(
        out.data["warnings"][9],
        json!("Sleeping for 12 seconds, before attempting to update the cache again")
    );
}

#[test]
fn custom_filename_mode_check_mode_and_errors() {
    let p = plan(
        json!({"repo": "deb http://x/ y z", "filename": "custom", "mode": "0600"}),
        true,
    )
    .unwrap();
    let Plan::Done(out) = after_reads(p, None, &[]) else {
        panic!("check mode writes nothing")
    };
    assert!(out.changed);
    assert_eq!(
        out.data["sources_added"],
        json!(["/etc/apt/sources.list.d/custom.list"])
    );
    assert_eq!(
        plan(json!({"repo": "foo bar"}), false).unwrap_err(),
        "Invalid repository string: foo bar"
    );
    assert_eq!(
        plan(json!({"repo": ""}), false).unwrap_err(),
        "Please set argument 'repo' to a non-empty value"
    );
    assert!(
        plan(json!({"repo": "ppa:owner/name"}), false)
            .unwrap_err()
            .contains("not supported yet")
    );
}
