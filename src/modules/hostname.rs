//! `hostname`: the host's name, through the strategy Ansible picks: `hostnamectl` where
//! systemd runs (or `use: systemd`/`debian`), else `/etc/hostname` on the Debian family
//! (Ansible's `FileStrategy`, which changes no running name). The other platforms'
//! strategies fail their task until they are done here.
//!
//! One probe batch first (the platform and distribution facts, systemd's canaries, the
//! tools on PATH, /etc/hostname), then the strategy's reads and writes.

use serde_json::json;
use turbo_proto::{
    Command, EnsureFile, Exec, FactValue, FileContent, FileKind, Op, OpResult, Ownership,
};

use super::spec::{Arg, Spec};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome};

pub struct Hostname;

/// Ansible's `STRATS` keys.
const STRATEGIES: &[&str] = &[
    "alpine", "debian", "freebsd", "generic", "macos", "macosx", "darwin", "openbsd", "openrc",
    "redhat", "sles", "solaris", "systemd",
];

/// ansible-core 2.21's hostname.
static SPEC: Spec = Spec::new(&[
    Arg::str("name").required(),
    Arg::str("use").choices(STRATEGIES),
]);

/// Distributions whose `Hostname` subclass uses `FileStrategy` (`/etc/hostname`).
const FILE_DISTRIBUTIONS: &[&str] = &[
    "Cumulus-linux",
    "Debian",
    "Deepin",
    "Devuan",
    "Kali",
    "Kylin",
    "Linaro",
    "Linuxmint",
    "Neon",
    "Parrot",
    "Pop",
    "Raspbian",
    "Ubuntu",
    "Uos",
    "Void",
];

const SYSTEMD_CANARIES: &[&str] = &[
    "/run/systemd/system/",
    "/dev/.run/systemd/",
    "/dev/.systemd/",
];
const HOSTNAME_FILE: &str = "/etc/hostname";
/// Which of the tools Ansible's `get_bin_path` would find.
const TOOLS: &str =
    "for t in systemctl hostnamectl; do command -v $t >/dev/null && echo $t; done; true";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    File,
    Systemd,
}

/// What the probe found.
#[derive(Debug, Default, Clone, PartialEq)]
struct Probe {
    system: String,
    distribution: String,
    fqdn: String,
    systemctl: bool,
    hostnamectl: bool,
    canary: bool,
    /// /etc/hostname's text when it is a regular file.
    hostname_file: Option<String>,
}

impl Module for Hostname {
    fn name(&self) -> &'static str {
        "hostname"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// The probe and `hostnamectl ... status` only read, so they run in check mode too.
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let name = args.str("name").unwrap_or_default().to_string();
        let used = args.str("use").map(str::to_string);
        let check = ctx.check_mode;
        let mut ops = vec![
            Op::Facts {
                subsets: vec![
                    "!all".into(),
                    "!min".into(),
                    "platform".into(),
                    "distribution".into(),
                ],
            },
            Op::Exec(sh(TOOLS)),
            Op::ReadFile {
                path: HOSTNAME_FILE.into(),
                offset: 0,
                limit: None,
            },
        ];
        ops.extend(SYSTEMD_CANARIES.iter().map(|path| Op::Stat {
            path: (*path).into(),
            checksum: None,
            follow: true,
        }));
        Ok(Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| {
                let probe = match probe_of(reply) {
                    Ok(probe) => probe,
                    Err(out) => return Ok(Plan::Done(*out)),
                };
                Ok(run(name, used.as_deref(), check, probe))
            }),
        ))
    }
}

fn sh(script: &str) -> Exec {
    Exec {
        command: Command::Shell {
            script: script.into(),
            executable: None,
        },
        chdir: None,
        creates: None,
        removes: None,
        env: Vec::new(),
        stdin: None,
        umask: None,
    }
}

fn argv(words: &[&str]) -> Exec {
    Exec {
        command: Command::Argv(words.iter().map(|w| w.to_string()).collect()),
        ..sh("")
    }
}

fn probe_of(reply: OpResult) -> Result<Probe, Box<TaskOutcome>> {
    let OpResult::Batch(replies) = reply else {
        return Err(Box::new(super::unexpected("hostname", reply)));
    };
    let mut probe = Probe::default();
    let mut replies = replies.into_iter();
    match replies.next() {
        Some(OpResult::Facts(facts)) => {
            for (key, value) in facts {
                let FactValue::Str(text) = value else {
                    continue;
                };
                match key.as_str() {
                    "system" => probe.system = text,
                    "distribution" => probe.distribution = text,
                    "fqdn" => probe.fqdn = text,
                    _ => {}
                }
            }
        }
        other => {
            return Err(Box::new(super::unexpected(
                "hostname",
                other.unwrap_or(OpResult::Batch(vec![])),
            )));
        }
    }
    if let Some(OpResult::Exec(found)) = replies.next() {
        let text = String::from_utf8_lossy(&found.stdout).into_owned();
        probe.systemctl = text.lines().any(|l| l == "systemctl");
        probe.hostnamectl = text.lines().any(|l| l == "hostnamectl");
    }
    if let Some(OpResult::Read(read)) = replies.next()
        && read.stat.kind == FileKind::File
    {
        probe.hostname_file = Some(String::from_utf8_lossy(&read.data).into_owned());
    }
    probe.canary = replies.any(|r| matches!(r, OpResult::Stat(s) if s.exists));
    Ok(probe)
}

/// Ansible's choice of strategy (`Hostname.__init__` and its platform subclass).
fn strategy(used: Option<&str>, probe: &Probe) -> Result<Strategy, String> {
    let not_yet = |what: &str| {
        Err(format!(
            "turbo-play's hostname does not run the {what} strategy yet; run this task with ansible-playbook"
        ))
    };
    match used {
        Some("systemd" | "debian") => return Ok(Strategy::Systemd),
        Some(other) => return not_yet(&format!("'{other}'")),
        None => {}
    }
    if probe.system == "Linux" && probe.systemctl && probe.canary {
        return Ok(Strategy::Systemd);
    }
    if probe.system == "Linux" && FILE_DISTRIBUTIONS.contains(&probe.distribution.as_str()) {
        return Ok(Strategy::File);
    }
    not_yet(&format!(
        "{} {} platform's",
        probe.system, probe.distribution
    ))
}

fn run(name: String, used: Option<&str>, check: bool, probe: Probe) -> Plan {
    let strategy = match strategy(used, &probe) {
        Ok(s) => s,
        Err(msg) => return Plan::Done(TaskOutcome::failed(msg)),
    };
    match strategy {
        Strategy::File => {
            // Python's `strip()` of the file; no file is the empty name.
            let permanent = probe
                .hostname_file
                .as_deref()
                .map(|t| t.trim().to_string())
                .unwrap_or_default();
            let changed = permanent != name;
            let done = result(&name, &permanent, &permanent, changed, &probe.fqdn);
            if !changed || check {
                return Plan::Done(done);
            }
            let op = Op::EnsureFile(EnsureFile {
                path: HOSTNAME_FILE.into(),
                content: FileContent::Inline(format!("{name}\n").into_bytes()),
                mode: None,
                force: true,
                owner: Ownership::default(),
                validate: None,
                backup: false,
            });
            Plan::Step(
                op,
                Next::new(move |reply| match reply {
                    OpResult::File(_) => Ok(Plan::Done(done)),
                    OpResult::Error(e) => Ok(Plan::Done(TaskOutcome::failed(format!(
                        "failed to update hostname: {}",
                        e.message
                    )))),
                    other => Ok(Plan::Done(super::unexpected("hostname", other))),
                }),
            )
        }
        Strategy::Systemd => systemd(name, check, probe),
    }
}

/// Ansible's `SystemdStrategy`: read both names with `hostnamectl`, set the permanent
/// one first, then the transient one.
fn systemd(name: String, check: bool, probe: Probe) -> Plan {
    if !probe.hostnamectl {
        return Plan::Done(TaskOutcome::failed(
            "Failed to find required executable \"hostnamectl\" in paths",
        ));
    }
    let reads = Op::Batch(vec![
        Op::Exec(argv(&["hostnamectl", "--transient", "status"])),
        Op::Exec(argv(&["hostnamectl", "--static", "status"])),
    ]);
    Plan::Step(
        reads,
        Next::new(move |reply| {
            let outs = match exec_outputs(reply) {
                Ok(outs) => outs,
                Err(out) => return Ok(Plan::Done(*out)),
            };
            let [current, permanent] = [outs[0].trim().to_string(), outs[1].trim().to_string()];
            let mut writes = Vec::new();
            if permanent != name {
                writes.push(Op::Exec(argv(&[
                    "hostnamectl",
                    "--pretty",
                    "--static",
                    "set-hostname",
                    &name,
                ])));
            }
            if current != name {
                writes.push(Op::Exec(argv(&[
                    "hostnamectl",
                    "--transient",
                    "set-hostname",
                    &name,
                ])));
            }
            let changed = !writes.is_empty();
            let done = result(&name, &current, &permanent, changed, &probe.fqdn);
            if !changed || check {
                return Ok(Plan::Done(done));
            }
            if name.chars().count() > 64 {
                return Ok(Plan::Done(TaskOutcome::failed(
                    "name cannot be longer than 64 characters on systemd servers, try a shorter name",
                )));
            }
            Ok(Plan::Step(
                Op::Batch(writes),
                Next::new(move |reply| match exec_outputs(reply) {
                    Ok(_) => Ok(Plan::Done(done)),
                    Err(out) => Ok(Plan::Done(*out)),
                }),
            ))
        }),
    )
}

/// Each command's stdout, or the first failure in Ansible's words.
fn exec_outputs(reply: OpResult) -> Result<Vec<String>, Box<TaskOutcome>> {
    let OpResult::Batch(replies) = reply else {
        return Err(Box::new(super::unexpected("hostname", reply)));
    };
    let mut outs = Vec::new();
    for reply in replies {
        let OpResult::Exec(e) = reply else {
            return Err(Box::new(super::unexpected("hostname", reply)));
        };
        let out = String::from_utf8_lossy(&e.stdout).into_owned();
        if e.rc != 0 {
            return Err(Box::new(TaskOutcome::failed(format!(
                "Command failed rc={}, out={out}, err={}",
                e.rc,
                String::from_utf8_lossy(&e.stderr)
            ))));
        }
        outs.push(out);
    }
    Ok(outs)
}

/// Ansible's result: the name, the facts it implies, and the diff when it changed.
fn result(name: &str, current: &str, permanent: &str, changed: bool, fqdn: &str) -> TaskOutcome {
    let before = if name != current { current } else { permanent };
    let domain = fqdn.split_once('.').map(|(_, d)| d).unwrap_or("");
    let mut out = TaskOutcome {
        changed,
        ..TaskOutcome::default()
    };
    out.data.insert("name".into(), json!(name));
    out.data.insert(
        "ansible_facts".into(),
        json!({
            "ansible_hostname": name.split('.').next().unwrap_or(name),
            "ansible_nodename": name,
            "ansible_fqdn": fqdn,
            "ansible_domain": domain,
        }),
    );
    if changed {
        out.data.insert(
            "diff".into(),
            json!({"after": format!("hostname = {name}\n"), "before": format!("hostname = {before}\n")}),
        );
    }
    out
}

#[cfg(test)]
#[path = "hostname_tests.rs"]
mod tests;
