//! `ping`: prove the target answers. A cheap `Stat` of the home directory makes the
//! round trip real.

use serde_json::json;
use turbo_proto::{Op, OpResult};

use super::spec::{Arg, Spec};
use super::{Args, Module, ModuleError, Plan, PlanContext, TaskOutcome, unexpected};

static SPEC: Spec = Spec::new(&[Arg::str("data").default_str("pong")]);

pub struct Ping;

impl Module for Ping {
    fn name(&self) -> &'static str {
        "ping"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        // Ansible's documented way to make ping fail on purpose: its module raises, and
        // 2.19+ words an exception raised by a module this way.
        if args.str("data") == Some("crash") {
            let mut outcome = TaskOutcome::failed("Task failed: Module failed: boom");
            outcome
                .data
                .insert("exception".into(), json!("(traceback unavailable)"));
            return Ok(Plan::Done(outcome));
        }
        Ok(Plan::Remote(Op::Stat {
            path: "~".into(),
            checksum: None,
            follow: false,
        }))
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        match result {
            OpResult::Stat(_) => {
                let mut data = serde_json::Map::new();
                data.insert("ping".into(), json!(args.str("data").unwrap_or("pong")));
                TaskOutcome {
                    data,
                    ..TaskOutcome::default()
                }
            }
            other => unexpected(self.name(), other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::path::Path;
    use turbo_proto::{FileKind, StatInfo};

    #[test]
    fn stats_home_and_answers_pong() {
        let none = crate::modules::check(&Ping, json!({}));
        assert_eq!(
            Ping.plan(&none, &PlanContext::new(Path::new("/"))).unwrap(),
            Plan::Remote(Op::Stat {
                path: "~".into(),
                checksum: None,
                follow: false,
            })
        );
        let stat = StatInfo {
            path: "/home/u".into(),
            exists: true,
            kind: FileKind::Directory,
            mode: 0o40755,
            size: 0,
            uid: 1,
            gid: 1,
            owner: "u".into(),
            group: "u".into(),
            mtime: 0,
            checksum: None,
            link_target: None,
            ..Default::default()
        };
        let out = Ping.finish(&none, OpResult::Stat(stat));
        assert!(!out.changed && !out.failed);
        assert_eq!(Value::Object(out.data), json!({"ping": "pong"}));
        let crash = crate::modules::check(&Ping, json!({"data": "crash"}));
        let Plan::Done(out) = Ping
            .plan(&crash, &PlanContext::new(Path::new("/")))
            .unwrap()
        else {
            panic!()
        };
        assert!(out.failed);
        assert_eq!(out.msg.as_deref(), Some("Task failed: Module failed: boom"));
        assert_eq!(out.data["exception"], json!("(traceback unavailable)"));
    }
}
