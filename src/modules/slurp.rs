//! `slurp`: a remote file's bytes as base64 in the result (`content`), read page by page.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::json;
use turbo_proto::{ErrorKind, FileKind, OpResult};

use super::spec::{Arg, Spec};
use super::text_file::{self, Current};
use super::{Args, Module, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct Slurp;

/// ansible-core 2.21's slurp.
static SPEC: Spec = Spec::new(&[
    Arg::bool("armor").default_bool(true),
    Arg::path("src").aliases(&["path"]).required(),
]);

impl Module for Slurp {
    fn name(&self) -> &'static str {
        "slurp"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let src = args.str("src").unwrap_or_default().to_string();
        let armor = args.bool("armor");
        let read = text_file::read(&src, move |current| Ok(Plan::Done(result(&current, armor))));
        // A file that cannot be opened is an error reply rather than a read: word it as
        // Ansible does, naming the path as given.
        Ok(on_error(read, src))
    }
}

fn result(current: &Current, armor: bool) -> TaskOutcome {
    let source = &current.path;
    match current.stat.kind {
        FileKind::Missing => return TaskOutcome::failed(format!("File not found: {source}")),
        FileKind::Directory => {
            return TaskOutcome::failed(format!(
                "Source is a directory and must be a file: {source}"
            ));
        }
        _ => {}
    }
    let (content, encoding) = if armor {
        (BASE64.encode(&current.bytes), "base64")
    } else {
        (
            String::from_utf8_lossy(&current.bytes).into_owned(),
            "utf-8",
        )
    };
    let mut out = TaskOutcome::default();
    out.data.insert("content".into(), json!(content));
    out.data.insert("source".into(), json!(source));
    out.data.insert("encoding".into(), json!(encoding));
    out
}

/// The first step of `plan` with the agent's errors in Ansible's words.
fn on_error(plan: Plan, source: String) -> Plan {
    let Plan::Step(op, next) = plan else {
        return plan;
    };
    Plan::Step(
        op,
        super::Next::new(move |reply| {
            let failure = |reply: &OpResult| match reply {
                OpResult::Error(e) => Some(e.kind),
                OpResult::Batch(replies) => replies.iter().find_map(|r| match r {
                    OpResult::Error(e) => Some(e.kind),
                    _ => None,
                }),
                _ => None,
            };
            match failure(&reply) {
                Some(ErrorKind::PermissionDenied) => Ok(Plan::Done(TaskOutcome::failed(format!(
                    "File is not readable: {source}"
                )))),
                // Ansible's own message has no f-string here: the braces are literal.
                Some(_) => Ok(Plan::Done(TaskOutcome::failed(
                    "Unable to slurp file: {source}",
                ))),
                None => next.resume(reply),
            }
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::text_file::testing::FakeTarget;
    use serde_json::Value;
    use std::path::Path;

    fn run_on(target: &mut FakeTarget, args: Value) -> Result<TaskOutcome, String> {
        let plan = crate::modules::try_plan(&Slurp, args, &PlanContext::new(Path::new("/")));
        target.drive(plan)
    }

    #[test]
    fn content_is_base64_of_every_page() {
        let text = "0123456789".repeat(100);
        let mut target = FakeTarget::with(&[("/f", &text)]);
        target.page = Some(64);
        let out = run_on(&mut target, json!({"path": "/f"})).unwrap();
        assert!(!out.changed && !out.failed);
        assert_eq!(out.data["content"], json!(BASE64.encode(text.as_bytes())));
        assert_eq!(out.data["source"], json!("/f"));
        assert_eq!(out.data["encoding"], json!("base64"));
        let out = run_on(&mut target, json!({"src": "/f", "armor": false})).unwrap();
        assert_eq!(
            (&out.data["content"], &out.data["encoding"]),
            (&json!(text), &json!("utf-8"))
        );
    }

    #[test]
    fn missing_files_and_directories_fail_as_ansible() {
        let mut target = FakeTarget::default();
        target.dirs.push("/d".into());
        let msg = |target: &mut FakeTarget, args: Value| run_on(target, args).unwrap().msg.unwrap();
        assert_eq!(msg(&mut target, json!({"src": "/n"})), "File not found: /n");
        assert_eq!(
            msg(&mut target, json!({"src": "/d"})),
            "Source is a directory and must be a file: /d"
        );
        assert_eq!(
            run_on(&mut target, json!({})).unwrap_err(),
            "missing required arguments: src"
        );
        assert_eq!(
            run_on(&mut target, json!({"src": "/f", "x": 1})).unwrap_err(),
            "Unsupported parameters for (slurp) module: x. Supported parameters include: armor, src (path)."
        );
    }
}
