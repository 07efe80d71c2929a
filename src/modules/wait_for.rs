//! `wait_for`: wait on the target for a port, a path, a regex in either, or a port's
//! connections to drain, in the order and words of Ansible's module.
//!
//! A condition the target can decide alone (a path appears or goes, a port opens or
//! closes, a plain sleep) is one POSIX sh loop ([`wait_for_probe::loop_script`]): the
//! whole wait is one round trip, and its `elapsed` is the command's duration. A regex is
//! Python's, matched on the controller, and `drained` parses `/proc/net/tcp*` there: those
//! poll, one small batch per check (the sleep, then the read), timed on the controller.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use turbo_proto::{Command, Exec, FileKind, Op, OpResult, StatInfo};

use super::spec::{Arg, Elem, Spec};
use super::wait_for_probe::{self as probe, Check, Drain, Family, Timing};
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, mode_string};
use crate::template::pyregex::{Anchor, PyRegex};

pub struct WaitFor;

const DEFAULT_STATES: &[&str] = &[
    "ESTABLISHED",
    "FIN_WAIT1",
    "FIN_WAIT2",
    "SYN_RECV",
    "SYN_SENT",
    "TIME_WAIT",
];

static SPEC: Spec = Spec::new(&[
    Arg::list("active_connection_states", Elem::Str),
    Arg::int("connect_timeout").default_int(5),
    Arg::int("delay").default_int(0),
    Arg::list("exclude_hosts", Elem::Str),
    Arg::str("host").default_str("127.0.0.1"),
    Arg::str("msg"),
    Arg::path("path"),
    Arg::int("port"),
    Arg::str("search_regex"),
    Arg::int("sleep").default_int(1),
    Arg::str("state")
        .choices(&["absent", "drained", "present", "started", "stopped"])
        .default_str("started"),
    Arg::int("timeout").default_int(300),
]);

/// How long a port's peer is listened to per check for `search_regex`: banners come at
/// once, and the next check listens again.
const READ_WINDOW_SECS: i64 = 1;

impl Module for WaitFor {
    fn name(&self) -> &'static str {
        "wait_for"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        if ctx.check_mode {
            return Ok(Plan::Done(TaskOutcome {
                skipped: true,
                msg: Some("remote module (wait_for) does not support check mode".into()),
                ..TaskOutcome::default()
            }));
        }
        let wait = match Wait::of(args) {
            Ok(wait) => wait,
            Err(msg) => return Ok(Plan::Done(failed(msg, 0))),
        };
        Ok(wait.plan())
    }
}

/// The task's arguments, checked as the module checks them before it waits.
#[derive(Clone)]
struct Wait {
    host: String,
    port: Option<i64>,
    path: Option<String>,
    state: String,
    regex: Option<(String, std::sync::Arc<PyRegex>)>,
    timing: Timing,
    exclude_hosts: Option<Vec<String>>,
    states: Vec<&'static str>,
    msg: Option<String>,
}

impl Wait {
    fn of(args: &Args) -> Result<Wait, String> {
        let state = args.str("state").unwrap_or("started").to_string();
        let port = args.int("port");
        let path = args.str("path").map(str::to_string);
        let regex = match args.str("search_regex") {
            Some(pattern) => Some((
                pattern.to_string(),
                std::sync::Arc::new(
                    PyRegex::new(pattern, Anchor::Search, false, true)
                        .map_err(|e| format!("Invalid regular expression: {e}"))?,
                ),
            )),
            None => None,
        };
        // Ansible's `if port and path`: port 0 counts as no port.
        let port = port.filter(|p| *p != 0);
        let path = path.filter(|p| !p.is_empty());
        if port.is_some() && path.is_some() {
            return Err("port and path parameter can not both be passed to wait_for".into());
        }
        if path.is_some() && state == "stopped" {
            return Err(
                "state=stopped should only be used for checking a port in the wait_for module"
                    .into(),
            );
        }
        if path.is_some() && state == "drained" {
            return Err(
                "state=drained should only be used for checking a port in the wait_for module"
                    .into(),
            );
        }
        let exclude_hosts = args
            .is_set("exclude_hosts")
            .then(|| args.str_list("exclude_hosts"));
        if exclude_hosts.is_some() && state != "drained" {
            return Err("exclude_hosts should only be with state=drained".into());
        }
        let named = if args.is_set("active_connection_states") {
            args.str_list("active_connection_states")
        } else {
            DEFAULT_STATES.iter().map(|s| s.to_string()).collect()
        };
        let mut states = Vec::new();
        for name in &named {
            match probe::state_id(name) {
                Some(id) => states.push(id),
                None => return Err(format!("unknown active_connection_state ({name}) defined")),
            }
        }
        Ok(Wait {
            host: args.str("host").unwrap_or("127.0.0.1").to_string(),
            port,
            path,
            state,
            regex,
            timing: Timing {
                timeout: args.int("timeout").unwrap_or(300),
                delay: args.int("delay").unwrap_or(0),
                sleep: args.int("sleep").unwrap_or(1),
                connect_timeout: args.int("connect_timeout").unwrap_or(5),
            },
            exclude_hosts,
            states,
            msg: args.str("msg").map(str::to_string),
        })
    }

    fn plan(self) -> Plan {
        let waiting = matches!(self.state.as_str(), "started" | "present");
        if self.state == "drained" {
            return self.plan_drain();
        }
        if waiting && self.regex.is_some() && (self.port.is_some() || self.path.is_some()) {
            return Poll::start(self, Vec::new());
        }
        let check = match (&self.port, &self.path, waiting) {
            (None, None, _) => Check::Nothing,
            (_, Some(path), true) => Check::PathPresent(path.clone()),
            (_, Some(path), false) => Check::PathAbsent(path.clone()),
            (Some(port), None, true) => Check::PortOpen {
                host: self.host.clone(),
                port: *port,
            },
            (Some(port), None, false) => Check::PortClosed {
                host: self.host.clone(),
                port: *port,
            },
        };
        let script = probe::loop_script(&check, self.timing);
        let path = self.path.clone();
        Plan::Step(
            shell(script),
            Next::new(move |reply| {
                let OpResult::Exec(ran) = reply else {
                    return Ok(Plan::Done(reply_error(reply)));
                };
                let elapsed = (ran.duration_micros / 1_000_000) as i64;
                match ran.rc {
                    0 => {}
                    probe::TIMED_OUT => return Ok(Plan::Done(failed(self.timeout_msg(), elapsed))),
                    rc => {
                        let err = String::from_utf8_lossy(&ran.stderr).trim().to_string();
                        return Ok(Plan::Done(failed(
                            if err.is_empty() {
                                format!("wait_for's check on the target failed with rc {rc}")
                            } else {
                                err
                            },
                            elapsed,
                        )));
                    }
                }
                let done = self.success(elapsed, Value::Array(Vec::new()), Map::new());
                Ok(match path {
                    Some(path) => with_path_info(done, path),
                    None => Plan::Done(done),
                })
            }),
        )
    }

    /// `drained` first resolves the names among `host` and `exclude_hosts` on the
    /// target (as Ansible's `getaddrinfo` there), then polls the connection tables.
    fn plan_drain(self) -> Plan {
        let mut names: Vec<String> = std::iter::once(self.host.clone())
            .chain(self.exclude_hosts.clone().unwrap_or_default())
            .filter(|h| h.parse::<IpAddr>().is_err())
            .collect();
        names.dedup();
        if names.is_empty() {
            let resolved = self.resolved(&[]);
            return Poll::start(self, resolved);
        }
        Plan::Step(
            shell(probe::resolve_script(&names)),
            Next::new(move |reply| {
                let OpResult::Exec(ran) = reply else {
                    return Ok(Plan::Done(reply_error(reply)));
                };
                let found = probe::parse_resolved(&String::from_utf8_lossy(&ran.stdout));
                if let Some((name, _)) = found.iter().find(|(_, ips)| ips.is_empty()) {
                    // Python's socket.gaierror, as the module lets it escape.
                    return Ok(Plan::Done(TaskOutcome::failed(format!(
                        "[Errno -2] Name or service not known: {name}"
                    ))));
                }
                let resolved = self.resolved(&found);
                Ok(Poll::start(self, resolved))
            }),
        )
    }

    /// `host` then `exclude_hosts` as addresses, literals parsed here, names as resolved.
    fn resolved(&self, found: &[(String, Vec<IpAddr>)]) -> Vec<Vec<IpAddr>> {
        let lookup = |h: &str| -> Vec<IpAddr> {
            match h.parse::<IpAddr>() {
                Ok(ip) => vec![ip],
                Err(_) => found
                    .iter()
                    .find(|(n, _)| n == h)
                    .map(|(_, ips)| ips.clone())
                    .unwrap_or_default(),
            }
        };
        std::iter::once(self.host.clone())
            .chain(self.exclude_hosts.clone().unwrap_or_default())
            .map(|h| lookup(&h))
            .collect()
    }

    fn timeout_msg(&self) -> String {
        if let Some(msg) = &self.msg {
            return msg.clone();
        }
        let (host, regex) = (&self.host, self.regex.as_ref().map(|(p, _)| p));
        match (self.state.as_str(), &self.port, &self.path, regex) {
            ("drained", port, ..) => {
                format!("Timeout when waiting for {host}:{} to drain", none_or(port))
            }
            ("absent" | "stopped", Some(port), ..) => {
                format!("Timeout when waiting for {host}:{port} to stop.")
            }
            ("absent" | "stopped", _, Some(path), _) => {
                format!("Timeout when waiting for {path} to be absent.")
            }
            (_, Some(port), _, Some(regex)) => {
                format!("Timeout when waiting for search string {regex} in {host}:{port}")
            }
            (_, Some(port), ..) => format!("Timeout when waiting for {host}:{port}"),
            (_, _, Some(path), Some(regex)) => {
                format!("Timeout when waiting for search string {regex} in {path}")
            }
            (_, _, Some(path), None) => format!("Timeout when waiting for file {path}"),
            _ => "Timeout".into(),
        }
    }

    fn success(&self, elapsed: i64, groups: Value, groupdict: Map<String, Value>) -> TaskOutcome {
        let mut data = Map::new();
        data.insert("state".into(), json!(self.state));
        data.insert("port".into(), json!(self.port));
        data.insert(
            "search_regex".into(),
            json!(self.regex.as_ref().map(|(p, _)| p)),
        );
        data.insert("match_groups".into(), groups);
        data.insert("match_groupdict".into(), Value::Object(groupdict));
        data.insert("path".into(), json!(self.path));
        data.insert("elapsed".into(), json!(elapsed));
        TaskOutcome {
            data,
            ..TaskOutcome::default()
        }
    }
}

fn none_or(port: &Option<i64>) -> String {
    port.map_or("None".into(), |p| p.to_string())
}

/// A poll for what only the controller can judge: each check is one batch (the sleep
/// before it, then the reads), timed here against Ansible's end of the wait.
struct Poll {
    wait: Wait,
    drain: Option<std::sync::Arc<Drain>>,
    start: Instant,
    end: Instant,
}

impl Poll {
    fn start(wait: Wait, resolved: Vec<Vec<IpAddr>>) -> Plan {
        let start = Instant::now();
        let end = start + secs(wait.timing.timeout);
        let drain = (wait.state == "drained").then(|| {
            let mut resolved = resolved.into_iter();
            std::sync::Arc::new(Drain {
                port: wait.port.unwrap_or(0),
                ips: probe::proc_hex(&resolved.next().unwrap_or_default()),
                excluded: probe::proc_hex(&resolved.flatten().collect::<Vec<_>>()),
                states: wait.states.clone(),
            })
        });
        let delay = wait.timing.delay;
        Poll {
            wait,
            drain,
            start,
            end,
        }
        .next(delay)
    }

    fn elapsed(&self) -> i64 {
        self.start.elapsed().as_secs() as i64
    }

    /// Sleep `pause` seconds on the target, then check, unless the wait is over by then.
    fn next(self, pause: i64) -> Plan {
        let sleep = (pause > 0).then(|| shell(format!("sleep {pause}")));
        if Instant::now() + secs(pause) >= self.end {
            let Some(sleep) = sleep else {
                return Plan::Done(failed(self.wait.timeout_msg(), self.elapsed()));
            };
            return Plan::Step(
                sleep,
                Next::new(move |_| Ok(Plan::Done(failed(self.wait.timeout_msg(), self.elapsed())))),
            );
        }
        let mut ops: Vec<Op> = sleep.into_iter().collect();
        let reads = self.reads();
        let count = reads.len();
        ops.extend(reads);
        Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| {
                let OpResult::Batch(mut replies) = reply else {
                    return Ok(Plan::Done(reply_error(reply)));
                };
                let replies = replies.split_off(replies.len().saturating_sub(count));
                Ok(self.judge(replies))
            }),
        )
    }

    fn reads(&self) -> Vec<Op> {
        if self.drain.is_some() {
            return ["/proc/net/tcp", "/proc/net/tcp6"]
                .into_iter()
                .map(|path| Op::ReadFile {
                    path: path.into(),
                    offset: 0,
                    limit: None,
                })
                .collect();
        }
        match (&self.wait.path, self.wait.port) {
            (Some(path), _) => vec![
                Op::ReadFile {
                    path: path.clone(),
                    offset: 0,
                    limit: None,
                },
                Op::Stat {
                    path: path.clone(),
                    checksum: None,
                    follow: false,
                },
            ],
            (None, Some(port)) => {
                let left = self.end.saturating_duration_since(Instant::now());
                let connect = self
                    .wait
                    .timing
                    .connect_timeout
                    .min(left.as_secs_f64().ceil() as i64)
                    .max(1);
                vec![shell(probe::read_port_script(
                    &self.wait.host,
                    port,
                    connect,
                    READ_WINDOW_SECS,
                ))]
            }
            (None, None) => Vec::new(),
        }
    }

    fn judge(self, replies: Vec<OpResult>) -> Plan {
        if let Some(drain) = &self.drain {
            let mut active = 0;
            for (reply, family) in replies.iter().zip([Family::V4, Family::V6]) {
                if let OpResult::Read(read) = reply {
                    active += drain.count(family, &String::from_utf8_lossy(&read.data));
                }
            }
            if active == 0 {
                let out = self.wait.success(self.elapsed(), json!([]), Map::new());
                return Plan::Done(out);
            }
            let sleep = self.wait.timing.sleep;
            return self.next(sleep);
        }
        let mut replies = replies.into_iter();
        let text = match replies.next() {
            Some(OpResult::Read(read)) if read.stat.exists => {
                Some(String::from_utf8_lossy(&read.data).into_owned())
            }
            Some(OpResult::Exec(ran)) if ran.rc == 0 => {
                Some(String::from_utf8_lossy(&ran.stdout).into_owned())
            }
            Some(OpResult::Exec(ran)) if ran.rc == probe::NO_CONNECT_TOOL => {
                return Plan::Done(failed(
                    String::from_utf8_lossy(&ran.stderr).trim().to_string(),
                    self.elapsed(),
                ));
            }
            _ => None,
        };
        let stat = match replies.next() {
            Some(OpResult::Stat(info)) => Some(info),
            _ => None,
        };
        if let Some(text) = text
            && let Some((_, re)) = &self.wait.regex
        {
            match re.captures(&text) {
                // Ansible keeps a port's match only as found: its groups stay empty.
                Ok(Some(_)) if self.wait.path.is_none() => {
                    let out = self.wait.success(self.elapsed(), json!([]), Map::new());
                    return Plan::Done(out);
                }
                Ok(Some(groups)) => {
                    let names = re.group_names();
                    let as_json = |g: &Option<String>| json!(g);
                    let match_groups: Vec<Value> = groups.iter().skip(1).map(as_json).collect();
                    let groupdict: Map<String, Value> = names
                        .iter()
                        .map(|(i, n)| (n.clone(), as_json(&groups[*i])))
                        .collect();
                    let mut out = self
                        .wait
                        .success(self.elapsed(), json!(match_groups), groupdict);
                    if let Some(info) = stat {
                        add_path_info(&mut out, &info);
                    }
                    return Plan::Done(out);
                }
                Ok(None) => {}
                Err(e) => return Plan::Done(failed(e.to_string(), self.elapsed())),
            }
        }
        let sleep = self.wait.timing.sleep;
        self.next(sleep)
    }
}

fn secs(n: i64) -> Duration {
    Duration::from_secs(n.max(0) as u64)
}

fn shell(script: String) -> Op {
    Op::Exec(Exec {
        command: Command::Shell {
            script,
            executable: None,
        },
        chdir: None,
        creates: None,
        removes: None,
        env: Vec::new(),
        stdin: None,
        umask: None,
    })
}

fn failed(msg: String, elapsed: i64) -> TaskOutcome {
    let mut out = TaskOutcome::failed(msg);
    out.data.insert("elapsed".into(), json!(elapsed));
    out
}

fn reply_error(reply: OpResult) -> TaskOutcome {
    super::unexpected("wait_for", reply)
}

/// Ansible's `exit_json` adds the file's facts when its result has a `path` that exists.
fn with_path_info(out: TaskOutcome, path: String) -> Plan {
    Plan::Step(
        Op::Stat {
            path,
            checksum: None,
            follow: false,
        },
        Next::new(move |reply| {
            let mut out = out;
            if let OpResult::Stat(info) = reply {
                add_path_info(&mut out, &info);
            }
            Ok(Plan::Done(out))
        }),
    )
}

/// `AnsibleModule.add_path_info`: owner, mode and size of the path itself (lstat), and a
/// `state` that says what it is.
fn add_path_info(out: &mut TaskOutcome, info: &StatInfo) {
    if !info.exists {
        return;
    }
    let state = match info.kind {
        FileKind::Symlink => "link",
        FileKind::Directory => "directory",
        _ if info.nlink > 1 => "hard",
        _ => "file",
    };
    let data = &mut out.data;
    data.insert("uid".into(), json!(info.uid));
    data.insert("gid".into(), json!(info.gid));
    data.insert("owner".into(), json!(info.owner));
    data.insert("group".into(), json!(info.group));
    data.insert("mode".into(), json!(mode_string(info.mode)));
    data.insert("state".into(), json!(state));
    data.insert("size".into(), json!(info.size));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(&WaitFor, v, &PlanContext::new(Path::new("/")))
    }

    fn done(v: Value) -> TaskOutcome {
        match plan(v).unwrap() {
            Plan::Done(out) => out,
            other => panic!("{other:?}"),
        }
    }

    fn script(v: Value) -> String {
        match plan(v).unwrap() {
            Plan::Step(
                Op::Exec(Exec {
                    command: Command::Shell { script, .. },
                    ..
                }),
                _,
            ) => script,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn refuses_what_ansibles_module_refuses() {
        let msg = |v: Value| {
            let out = done(v);
            assert!(out.failed);
            assert_eq!(out.data["elapsed"], json!(0));
            out.msg.unwrap()
        };
        assert_eq!(
            msg(json!({"port": 1, "path": "/x"})),
            "port and path parameter can not both be passed to wait_for"
        );
        assert_eq!(
            msg(json!({"path": "/x", "state": "stopped"})),
            "state=stopped should only be used for checking a port in the wait_for module"
        );
        assert_eq!(
            msg(json!({"path": "/x", "state": "drained"})),
            "state=drained should only be used for checking a port in the wait_for module"
        );
        assert_eq!(
            msg(json!({"port": 1, "exclude_hosts": ["a"]})),
            "exclude_hosts should only be with state=drained"
        );
        assert_eq!(
            msg(json!({"port": 1, "state": "drained", "active_connection_states": ["LISTEN"]})),
            "unknown active_connection_state (LISTEN) defined"
        );
        assert!(
            msg(json!({"path": "/x", "search_regex": "("}))
                .starts_with("Invalid regular expression: ")
        );
        assert_eq!(
            plan(json!({"state": "up"})).unwrap_err(),
            "value of state must be one of: absent, drained, present, started, stopped, got: up"
        );
    }

    #[test]
    fn check_mode_skips_as_for_a_module_without_it() {
        let ctx = PlanContext {
            check_mode: true,
            ..PlanContext::new(Path::new("/"))
        };
        let Plan::Done(out) =
            crate::modules::try_plan(&WaitFor, json!({"port": 22}), &ctx).unwrap()
        else {
            panic!()
        };
        assert!(out.skipped);
        assert_eq!(
            out.msg.as_deref(),
            Some("remote module (wait_for) does not support check mode")
        );
    }

    #[test]
    fn a_path_or_port_is_one_loop_on_the_target() {
        let s = script(json!({"path": "/tmp/x", "timeout": 7, "sleep": 2}));
        assert!(
            s.contains("if [ -e '/tmp/x' ]; then exit 0; fi\n  sleep 2"),
            "{s}"
        );
        assert!(s.contains("start + 7 * 100"), "{s}");
        let s = script(json!({"port": 8080, "host": "10.1.1.1", "connect_timeout": 3}));
        assert!(s.contains("connect $left '10.1.1.1' 8080"), "{s}");
        assert!(s.contains("[ $left -gt 3 ] && left=3"), "{s}");
        let s = script(json!({"port": 8080, "state": "stopped"}));
        assert!(s.contains("! connect 5 '127.0.0.1' 8080"), "{s}");
        let s = script(json!({"path": "/tmp/x", "state": "absent"}));
        assert!(s.contains("[ ! -e '/tmp/x' ]"), "{s}");
        assert_eq!(
            script(json!({"timeout": 2, "delay": 1})),
            "set -u\nsleep 1\nsleep 2\n"
        );
    }

    #[test]
    fn a_regex_polls_reads_from_the_controller() {
        let Plan::Step(Op::Batch(ops), _) =
            plan(json!({"path": "/var/log/x", "search_regex": "ready", "delay": 2})).unwrap()
        else {
            panic!()
        };
        assert_eq!(ops.len(), 3);
        assert!(matches!(&ops[1], Op::ReadFile { path, .. } if path == "/var/log/x"));
        assert!(matches!(&ops[2], Op::Stat { follow: false, .. }));
    }

    #[test]
    fn messages_name_what_was_waited_for() {
        let wait = |v: Value| {
            let args = crate::modules::check(&WaitFor, v);
            Wait::of(&args).unwrap().timeout_msg()
        };
        assert_eq!(
            wait(json!({"port": 8080})),
            "Timeout when waiting for 127.0.0.1:8080"
        );
        assert_eq!(
            wait(json!({"port": 8080, "state": "stopped"})),
            "Timeout when waiting for 127.0.0.1:8080 to stop."
        );
        assert_eq!(
            wait(json!({"path": "/x", "state": "absent"})),
            "Timeout when waiting for /x to be absent."
        );
        assert_eq!(
            wait(json!({"path": "/x"})),
            "Timeout when waiting for file /x"
        );
        assert_eq!(
            wait(json!({"path": "/x", "search_regex": "a+"})),
            "Timeout when waiting for search string a+ in /x"
        );
        assert_eq!(
            wait(json!({"port": 80, "host": "web", "search_regex": "OK"})),
            "Timeout when waiting for search string OK in web:80"
        );
        assert_eq!(
            wait(json!({"port": 80, "state": "drained"})),
            "Timeout when waiting for 127.0.0.1:80 to drain"
        );
        assert_eq!(wait(json!({"port": 80, "msg": "no web"})), "no web");
    }
}
