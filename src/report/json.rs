//! `--json`: the run as a stream for machines, one JSON object per line on stdout, from
//! the same events the console reporter draws. Every object has an `event` key:
//!
//! - `play_start` `{play}`
//! - `task_start` `{task, hosts, handler}`
//! - `result` `{host, task, status, item, ignored, result}`: `status` is one of `ok`,
//!   `changed`, `failed`, `skipped`, `unreachable`; `item` is the loop item's label or
//!   null; `result` is the result as `register` would keep it (Ansible's shape)
//! - `retry` `{host, task, item, retries_left}`
//! - `warning` `{message}`, `no_hosts_matched` `{play}`, `no_more_hosts` `{}`
//! - `recap` `{stats: {host: {ok, changed, unreachable, failed, skipped, rescued, ignored}}}`

use std::io::{self, Write};

use serde_json::{Map, Value, json};

use super::events::{Event, HostStats, Status};

pub struct JsonReporter<W: Write> {
    out: W,
    /// Results carry no task name; the linear strategy runs one task at a time, so the
    /// last task started is the one they belong to.
    task: Option<String>,
    play: Option<String>,
}

impl JsonReporter<io::Stdout> {
    pub fn stdout() -> Self {
        JsonReporter::new(io::stdout())
    }
}

impl<W: Write> JsonReporter<W> {
    pub fn new(out: W) -> Self {
        JsonReporter {
            out,
            task: None,
            play: None,
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    pub fn handle(&mut self, event: &Event) {
        let line = match event {
            Event::PlayStart { name, .. } => {
                self.play = Some(name.clone());
                self.task = None;
                json!({"event": "play_start", "play": name})
            }
            Event::NoHostsMatched => json!({"event": "no_hosts_matched", "play": self.play}),
            Event::TaskStart(banner) | Event::HandlerStart(banner) => {
                self.task = Some(banner.name.clone());
                json!({
                    "event": "task_start",
                    "task": banner.name,
                    "hosts": banner.hosts,
                    "handler": matches!(event, Event::HandlerStart(_)),
                })
            }
            Event::HostResult(r) => json!({
                "event": "result",
                "host": r.host,
                "task": self.task,
                "status": status_name(r.status),
                "item": r.item,
                "ignored": r.ignored,
                "result": r.for_playbook().data,
            }),
            Event::Retry {
                host,
                task,
                item,
                retries_left,
            } => json!({
                "event": "retry",
                "host": host,
                "task": task,
                "item": item,
                "retries_left": retries_left,
            }),
            Event::AsyncPoll {
                host,
                jid,
                started,
                finished,
            } => json!({
                "event": "async_poll",
                "host": host,
                "jid": jid,
                "started": started,
                "finished": finished,
            }),
            Event::AsyncDone { host, jid, failed } => json!({
                "event": "async_done",
                "host": host,
                "jid": jid,
                "failed": failed,
            }),
            Event::Included { file, hosts, item } => json!({
                "event": "included",
                "task": self.task,
                "file": file,
                "hosts": hosts,
                "item": item,
            }),
            Event::Warning(message) => json!({"event": "warning", "message": message}),
            Event::Deprecation(message) => json!({"event": "deprecation", "message": message}),
            Event::NoMoreHosts => json!({"event": "no_more_hosts"}),
            Event::Recap(stats) => {
                let hosts: Map<String, Value> = stats
                    .iter()
                    .map(|s| (s.host.clone(), host_stats(s)))
                    .collect();
                json!({"event": "recap", "stats": hosts})
            }
            Event::CustomStats(stats) => json!({"event": "custom_stats", "stats": stats}),
            // Progress and bootstrap details are for eyes, not for machines.
            // The items' results carry the loop's failure already.
            Event::ItemsPlanned { .. }
            | Event::AgentReady { .. }
            | Event::Verbose { .. }
            | Event::RunStart { .. }
            | Event::LoopFailed(_) => {
                return;
            }
        };
        // A closed stdout (a consumer that stopped reading) only loses output.
        let _ = serde_json::to_writer(&mut self.out, &line);
        let _ = self.out.write_all(b"\n");
        let _ = self.out.flush();
    }
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::Ok => "ok",
        Status::Changed => "changed",
        Status::Failed => "failed",
        Status::Skipped => "skipped",
        Status::Unreachable => "unreachable",
    }
}

fn host_stats(s: &HostStats) -> Value {
    json!({
        "ok": s.ok,
        "changed": s.changed,
        "unreachable": s.unreachable,
        "failed": s.failed,
        "skipped": s.skipped,
        "rescued": s.rescued,
        "ignored": s.ignored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::events::{HostResult, TaskBanner};

    fn lines(events: &[Event]) -> Vec<Value> {
        let mut r = JsonReporter::new(Vec::new());
        for e in events {
            r.handle(e);
        }
        String::from_utf8(r.into_inner())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect()
    }

    #[test]
    fn one_object_per_event_with_the_task_on_each_result() {
        let out = lines(&[
            Event::PlayStart {
                name: "web".into(),
                check_mode: false,
                free: false,
            },
            Event::TaskStart(TaskBanner {
                name: "Create".into(),
                hosts: 1,
                ..TaskBanner::default()
            }),
            Event::ItemsPlanned {
                host: "h1".into(),
                count: 3,
            },
            Event::HostResult(HostResult {
                host: "h1".into(),
                status: Status::Changed,
                item: Some("a".into()),
                data: json!({"changed": true, "item": "a"})
                    .as_object()
                    .cloned()
                    .unwrap(),
                ignored: false,
                verbose_always: false,
                origin: None,
            }),
            Event::Warning("careful".into()),
            Event::Recap(vec![HostStats {
                host: "h1".into(),
                ok: 2,
                changed: 1,
                ..Default::default()
            }]),
        ]);
        assert_eq!(out.len(), 5, "{out:?}");
        assert_eq!(out[0], json!({"event": "play_start", "play": "web"}));
        assert_eq!(
            out[1],
            json!({"event": "task_start", "task": "Create", "hosts": 1, "handler": false})
        );
        assert_eq!(
            out[2],
            json!({"event": "result", "host": "h1", "task": "Create", "status": "changed",
                   "item": "a", "ignored": false, "result": {"changed": true, "item": "a"}})
        );
        assert_eq!(out[3], json!({"event": "warning", "message": "careful"}));
        assert_eq!(
            out[4],
            json!({"event": "recap", "stats": {"h1": {"ok": 2, "changed": 1, "unreachable": 0,
                   "failed": 0, "skipped": 0, "rescued": 0, "ignored": 0}}})
        );
    }

    #[test]
    fn handlers_are_tasks_flagged_as_handlers() {
        let out = lines(&[Event::HandlerStart(TaskBanner {
            name: "restart".into(),
            hosts: 2,
            ..TaskBanner::default()
        })]);
        assert_eq!(out[0]["handler"], json!(true));
        assert_eq!(out[0]["task"], json!("restart"));
    }
}
