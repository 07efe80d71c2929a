//! `service`: Ansible's action plugin picks the module from `ansible_service_mgr` (`use`
//! overrides); on Linux that is `sysvinit` when the fact says so and otherwise the generic
//! LinuxService, which drives init scripts through `service`, enables through update-rc.d
//! (or OpenRC's rc-service/rc-update). Steps: detect, then read the status, then act;
//! in check mode (the module's own, as Ansible's) only the first two run.
//!
//! Not here yet: hosts that systemd manages (its `systemctl` path) and the upstart,
//! insserv and chkconfig paths fail saying so.

#[cfg(test)]
use serde_json::Value;
use serde_json::json;

use super::service_detect::{self, Detected};
use super::service_run::{self, Cmd, Report};
use super::service_status;
use super::spec::{Arg, Spec};
use super::{Args, Caps, Module, ModuleArgs, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct Service;

/// The action's: what it reads (`use`) and hands on. It checks nothing itself; the module
/// it picks checks the arguments (with its own `module_defaults` under them).
static SPEC: Spec = Spec::new(&[
    Arg::str("arguments").aliases(&["args"]),
    Arg::bool("enabled"),
    Arg::str("name"),
    Arg::str("pattern"),
    Arg::str("runlevel"),
    Arg::int("sleep"),
    Arg::str("state"),
    Arg::str("use").default_str("auto"),
])
.unknown(super::spec::Unknown::Accepted);

/// ansible.builtin.service, the module: LinuxService here.
static MODULE_SPEC: Spec = Spec::new(&[
    Arg::str("arguments").aliases(&["args"]).default_str(""),
    Arg::bool("enabled"),
    Arg::str("name").required(),
    Arg::str("pattern"),
    Arg::str("runlevel").default_str("default"),
    Arg::int("sleep"),
    Arg::str("state").choices(&["started", "stopped", "reloaded", "restarted"]),
])
.required_one_of(&[&["state", "enabled"]]);

/// The task's arguments as the action hands them on: those written (or from the
/// `service` module_defaults), without `use`, over the picked module's own defaults.
fn handed_on(args: &Args, defaults: ModuleArgs) -> ModuleArgs {
    let mut raw = defaults;
    for (key, value) in args.values().iter().chain(args.extra()) {
        if key != "use" && !value.is_null() {
            raw.insert(key.clone(), value.clone());
        }
    }
    raw
}

impl Module for Service {
    fn name(&self) -> &'static str {
        "service"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// Detection and status are read-only and run in check mode; no action is planned.
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn backends(&self) -> &'static [&'static str] {
        &["service", "sysvinit", "systemd"]
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let check = ctx.check_mode;
        let defaults: Vec<(&str, ModuleArgs)> = self
            .backends()
            .iter()
            .map(|b| (*b, ctx.defaults_of(b)))
            .collect();
        let args_for = move |backend: &str| {
            let own = defaults
                .iter()
                .find(|(b, _)| *b == backend)
                .map(|(_, d)| d.clone())
                .unwrap_or_default();
            handed_on(args, own)
        };
        let for_service = args_for("service");
        let for_sysvinit = args_for("sysvinit");
        let for_systemd = args_for("systemd");
        // Detection looks for the service the task names (before any module's defaults).
        let name = args
            .str("name")
            .or_else(|| for_sysvinit.get("name").and_then(|v| v.as_str()))
            .or_else(|| for_systemd.get("name").and_then(|v| v.as_str()))
            .unwrap_or_default()
            .to_string();
        let wanted = args.str("use").unwrap_or("auto").to_lowercase();
        let from_facts = ctx
            .vars
            .and_then(|v| v.get_attr("ansible_facts").ok())
            .and_then(|f| f.get_attr("service_mgr").ok())
            .and_then(|m| m.as_str().map(str::to_string));
        Ok(service_run::step(
            "",
            vec![service_detect::probe(&name)],
            move |r| {
                let d = service_detect::parse(
                    &r.get("detect").map(|x| x.out.clone()).unwrap_or_default(),
                );
                let manager = match wanted.as_str() {
                    "auto" => from_facts.unwrap_or_else(|| d.service_mgr()),
                    other => other.to_string(),
                };
                if manager == "sysvinit" {
                    return super::sysvinit::from_service(for_sysvinit, d, check);
                }
                if manager == "systemd" {
                    return as_systemd(&for_systemd, check);
                }
                match MODULE_SPEC.validate("ansible.legacy.service", &for_service) {
                    Ok(args) => linux_service(args, d, check),
                    Err(msg) => Ok(Plan::Done(TaskOutcome::failed(msg))),
                }
            },
        ))
    }
}

/// `service` where the fact says systemd: Ansible's action plugin runs systemd_service with
/// the arguments it shares (name, state, enabled) and its own module_defaults.
fn as_systemd(handed: &ModuleArgs, check: bool) -> Result<Plan, ModuleError> {
    let mut raw = serde_json::Map::new();
    for key in ["name", "state", "enabled"] {
        if let Some(v) = handed.get(key) {
            raw.insert(key.to_string(), v.clone());
        }
    }
    let args = match super::systemd::spec().validate("ansible.legacy.systemd", &raw) {
        Ok(args) => args,
        Err(msg) => return Ok(Plan::Done(TaskOutcome::failed(msg))),
    };
    super::systemd::plan(&args, check)
}

/// What LinuxService found its tools to be.
struct Tools {
    svc_cmd: Option<String>,
    enable_cmd: Option<String>,
    initscript: Option<String>,
    openrc: bool,
}

fn failed(msg: impl Into<String>) -> Result<Plan, ModuleError> {
    Ok(Plan::Done(TaskOutcome::failed(msg)))
}

fn tools(name: &str, d: &Detected) -> Result<Tools, String> {
    let initscript = d.initscript.then(|| format!("/etc/init.d/{name}"));
    if d.systemd_managed() {
        return Err("turbo-play's service module does not drive systemd yet; \
                    use ansible.builtin.systemd_service"
            .into());
    }
    if d.initctl.is_some() && d.upstart_conf {
        return Err("turbo-play's service module does not drive upstart yet".into());
    }
    if let Some(rc) = &d.rc_service {
        return Ok(Tools {
            svc_cmd: Some(rc.clone()),
            enable_cmd: d.rc_update.clone(),
            initscript,
            openrc: true,
        });
    }
    let mut enable_cmd = None;
    if initscript.is_some() {
        enable_cmd = d
            .update_rc_d
            .clone()
            .or_else(|| d.insserv.clone())
            .or_else(|| d.chkconfig.clone());
    }
    if enable_cmd.is_none() {
        return Err(format!("Could not find the requested service {name}: host"));
    }
    let svc_cmd = d.service.clone();
    if svc_cmd.is_none() && initscript.is_none() {
        return Err("cannot find 'service' binary or init script for service,  possible typo in service name?, aborting".into());
    }
    Ok(Tools {
        svc_cmd,
        enable_cmd,
        initscript,
        openrc: false,
    })
}

/// `<svc_cmd> <name> <action> <arguments>` as service_control builds it, split as
/// run_command splits it.
fn control(
    name: &str,
    t: &Tools,
    action: &str,
    arguments: &str,
) -> Result<Vec<String>, ModuleError> {
    let line = match (&t.svc_cmd, &t.initscript) {
        (Some(cmd), _) => format!("{cmd} {name} {action} {arguments}"),
        (None, Some(script)) => format!("{script} {action} {arguments}"),
        (None, None) => format!("{action} {name} {arguments}"),
    };
    crate::shell_words::split(&line).map_err(ModuleError::Invalid)
}

/// Ansible's LinuxService; in check mode it reads the status and returns where it would act.
fn linux_service(args: Args, d: Detected, check: bool) -> Result<Plan, ModuleError> {
    let name = args.str("name").unwrap_or_default().to_string();
    let t = match tools(&name, &d) {
        Ok(t) => t,
        Err(msg) => return failed(msg),
    };
    let enable = args.opt_bool("enabled");
    let arguments = args.str("arguments").unwrap_or_default().to_string();
    let mut queries = Vec::new();
    if args.is_set("state") {
        match args.str("pattern") {
            Some(_) => queries.push(Cmd::new(
                "status",
                vec![d.ps.clone().unwrap_or_else(|| "ps".into()), "auxww".into()],
            )),
            None => queries.push(Cmd::new(
                "status",
                control(&name, &t, "status", &arguments)?,
            )),
        }
        if t.openrc {
            queries.push(Cmd::new(
                "openrc",
                vec![
                    t.svc_cmd.clone().unwrap_or_default(),
                    name.clone(),
                    "status".into(),
                ],
            ));
        }
    }
    let enable_cmd = t.enable_cmd.clone().unwrap_or_default();
    if enable.is_some() {
        if enable_cmd.ends_with("rc-update") {
            queries.push(Cmd::new(
                "rc-update",
                vec![enable_cmd.clone(), "show".into()],
            ));
        } else if !enable_cmd.ends_with("update-rc.d") {
            return Err(ModuleError::NotSupported(
                "enabling services through insserv or chkconfig",
            ));
        }
    }
    let decide = move |r: Report| -> Result<Plan, ModuleError> {
        let mut out = TaskOutcome::default();
        out.data.insert("name".into(), json!(name));
        let mut acts: Vec<Cmd> = Vec::new();
        let mut changed = false;
        if let Some(want) = enable {
            if enable_cmd.ends_with("update-rc.d") {
                if want != d.start_links() {
                    changed = true;
                    if want && !d.kill_links() {
                        acts.push(
                            Cmd::new(
                                "enable",
                                vec![enable_cmd.clone(), name.clone(), "defaults".into()],
                            )
                            .or_stop(),
                        );
                    }
                    let action = if want { "enable" } else { "disable" };
                    acts.push(
                        Cmd::new(
                            "enable",
                            vec![enable_cmd.clone(), name.clone(), action.into()],
                        )
                        .or_stop(),
                    );
                }
            } else {
                let runlevel = args.str("runlevel").unwrap_or("default").to_string();
                let shown = r
                    .get("rc-update")
                    .map(|x| x.out.clone())
                    .unwrap_or_default();
                let mut has = None;
                for line in shown.lines() {
                    let Some((svc, levels)) = line.split_once('|') else {
                        continue;
                    };
                    if svc.trim() == name {
                        has = Some(levels.split_whitespace().any(|l| l == runlevel));
                        break;
                    }
                }
                let is = has.unwrap_or(false);
                if is != want {
                    // service_enable ends here in check mode, before the state is looked at.
                    if check {
                        return Ok(Plan::Done(TaskOutcome {
                            changed: true,
                            ..TaskOutcome::default()
                        }));
                    }
                    changed = true;
                    let action = if want { "add" } else { "delete" };
                    acts.push(
                        Cmd::new(
                            "enable",
                            vec![enable_cmd.clone(), action.into(), name.clone(), runlevel],
                        )
                        .or_stop(),
                    );
                }
            }
            out.data.insert("enabled".into(), json!(want));
        }
        let state = args.str("state").map(str::to_string);
        let mut svc_change = false;
        if let Some(state) = &state {
            let status = r.get("status").cloned().unwrap_or_default();
            let running = match args.str("pattern") {
                Some(p) => (status.rc == 0).then(|| service_status::ps_matches(&status.out, p)),
                None => {
                    let mut running = None;
                    if let (true, Some(o)) = (t.openrc, r.get("openrc")) {
                        running = Some(o.out.contains("started"));
                    }
                    running
                        .or_else(|| service_status::service_running(&name, status.rc, &status.out))
                }
            };
            let Some(running) = running else {
                return failed("failed determining service state, possible typo of service name?");
            };
            svc_change = match state.as_str() {
                "started" | "reloaded" if !running => true,
                "reloaded" | "stopped" if running => true,
                "restarted" => true,
                _ => false,
            };
            // check_service_changed: Ansible exits with only this message.
            if check && svc_change {
                return Ok(Plan::Done(TaskOutcome {
                    changed: true,
                    msg: Some("service state changed".into()),
                    ..TaskOutcome::default()
                }));
            }
            if svc_change {
                let action = match state.as_str() {
                    "started" => "start",
                    "reloaded" if !running => "start",
                    "stopped" => "stop",
                    "reloaded" => "reload",
                    _ => "restart",
                };
                if action == "restart" && !t.openrc {
                    acts.push(Cmd::new("stop", control(&name, &t, "stop", &arguments)?));
                    if let Some(secs) = args.int("sleep").filter(|s| *s > 0) {
                        acts.push(Cmd::new("sleep", vec!["sleep".into(), secs.to_string()]));
                    }
                    acts.push(Cmd::new("start", control(&name, &t, "start", &arguments)?));
                } else {
                    acts.push(Cmd::new("control", control(&name, &t, action, &arguments)?));
                }
            }
            let shown = if state == "stopped" {
                "stopped"
            } else {
                "started"
            };
            out.data.insert("state".into(), json!(shown));
        }
        out.changed = changed || svc_change;
        // update-rc.d is never run in check mode; the outcome says what it would change.
        if acts.is_empty() || check {
            return Ok(Plan::Done(out));
        }
        Ok(service_run::step("", acts, move |r| {
            if let Some(e) = r.get("enable").filter(|e| e.rc != 0) {
                let msg = if e.err.is_empty() { &e.out } else { &e.err };
                return failed(msg.clone());
            }
            let (rc, so, se) = match (r.get("stop"), r.get("start")) {
                (Some(a), Some(b)) if a.rc != 0 && b.rc == 0 => {
                    (b.rc, b.out.clone(), b.err.clone())
                }
                (Some(a), Some(b)) => (a.rc + b.rc, a.out.clone() + &b.out, a.err.clone() + &b.err),
                _ => r
                    .get("control")
                    .map(|c| (c.rc, c.out.clone(), c.err.clone()))
                    .unwrap_or_default(),
            };
            if rc != 0 && !se.contains("Job is already running") {
                return failed(if se.is_empty() { so } else { se });
            }
            Ok(Plan::Done(out))
        }))
    };
    if queries.is_empty() {
        return decide(Report::default());
    }
    Ok(service_run::step("", queries, decide))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::service_run::test_support::section;
    use std::path::Path;
    use turbo_proto::{ExecOutcome, OpResult};

    fn reply(text: &str) -> OpResult {
        OpResult::Exec(ExecOutcome {
            ran: true,
            rc: 0,
            stdout: text.as_bytes().to_vec(),
            stderr: Vec::new(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        })
    }

    const DETECTED: &str = "bin.service=/usr/sbin/service\nbin.update-rc.d=/usr/sbin/update-rc.d\n\
        bin.systemctl=/bin/systemctl\nbin.ps=/bin/ps\nproc1=sshd\ninitd_dir=1\nsysv_exists=1\n\
        initscript=1\ninitscript_x=1\nrc0d=1\nlink=/etc/rc0.d/K01cron\n";

    fn script_of(plan: &Plan) -> String {
        match plan {
            Plan::Step(turbo_proto::Op::Exec(x), _) => match &x.command {
                turbo_proto::Command::Shell { script, .. } => script.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    fn resume(plan: Plan, text: &str) -> Plan {
        match plan {
            Plan::Step(_, next) => next.resume(reply(text)).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    fn plan(v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(&Service, v, &PlanContext::new(Path::new("/")))
    }

    #[test]
    fn starts_and_enables_through_the_init_script_and_update_rc_d() {
        let p = plan(json!({"name": "cron", "state": "started", "enabled": true})).unwrap();
        assert!(script_of(&p).contains("'cron'"));
        let p = resume(p, &section("detect", 0, DETECTED));
        assert!(script_of(&p).contains("run status '/usr/sbin/service' 'cron' 'status'"));
        let p = resume(p, &section("status", 3, "cron is not running ... failed!"));
        let s = script_of(&p);
        assert!(
            s.contains("run enable '/usr/sbin/update-rc.d' 'cron' 'enable' || exit 0"),
            "{s}"
        );
        // K links exist: no `defaults` first.
        assert!(!s.contains("defaults"));
        assert!(
            s.contains("run control '/usr/sbin/service' 'cron' 'start'"),
            "{s}"
        );
        let done = resume(p, &(section("enable", 0, "") + &section("control", 0, "")));
        let Plan::Done(out) = done else { panic!() };
        assert!(out.changed && !out.failed);
        assert_eq!(
            Value::Object(out.data),
            json!({"name": "cron", "enabled": true, "state": "started"})
        );
    }

    #[test]
    fn a_running_service_needs_nothing() {
        let p = plan(json!({"name": "cron", "state": "started"})).unwrap();
        let p = resume(p, &section("detect", 0, DETECTED));
        let Plan::Done(out) = resume(p, &section("status", 0, "cron is running.")) else {
            panic!()
        };
        assert!(!out.changed);
    }

    #[test]
    fn unknown_services_fail_as_ansible_says() {
        let p = plan(json!({"name": "nope", "state": "started"})).unwrap();
        let Plan::Done(out) = resume(
            p,
            &section("detect", 0, "bin.service=/usr/sbin/service\nproc1=sshd\n"),
        ) else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("Could not find the requested service nope: host")
        );
        // The action checks nothing; the module it picks does, as in Ansible.
        let p = plan(json!({"name": "x"})).unwrap();
        let Plan::Done(out) = resume(p, &section("detect", 0, DETECTED)) else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("one of the following is required: state, enabled")
        );
    }

    /// The picked module's own module_defaults go under the arguments the action hands on
    /// (Ansible's `_apply_action_arg_defaults`): a task with none but sysvinit's runs.
    #[test]
    fn the_picked_modules_defaults_are_applied() {
        let vars =
            minijinja::Value::from_serialize(json!({"ansible_facts": {"service_mgr": "sysvinit"}}));
        let defaults = serde_json::Map::from_iter([(
            "sysvinit".to_string(),
            json!({"name": "cron", "enabled": true}),
        )]);
        let ctx = PlanContext {
            vars: Some(&vars),
            check_mode: true,
            backend_defaults: Some(&defaults),
            ..PlanContext::new(Path::new("/"))
        };
        let p = crate::modules::try_plan(&Service, json!({}), &ctx).unwrap();
        assert!(
            script_of(&p).contains("'cron'"),
            "detection looks for the default's name"
        );
        let p = resume(p, &section("detect", 0, DETECTED));
        assert!(
            matches!(
                &p,
                Plan::Step(..) | Plan::Done(TaskOutcome { failed: false, .. })
            ),
            "sysvinit plans with its defaults: {p:?}"
        );
        let none = crate::modules::try_plan(
            &Service,
            json!({}),
            &PlanContext {
                vars: Some(&vars),
                ..PlanContext::new(Path::new("/"))
            },
        )
        .unwrap();
        let Plan::Done(out) = resume(none, &section("detect", 0, DETECTED)) else {
            panic!()
        };
        assert_eq!(out.msg.as_deref(), Some("missing required arguments: name"));
    }

    #[test]
    fn restart_stops_then_starts_and_a_failure_is_the_scripts_message() {
        let p = plan(json!({"name": "cron", "state": "restarted", "sleep": 2})).unwrap();
        let p = resume(p, &section("detect", 0, DETECTED));
        let p = resume(p, &section("status", 0, "cron is running."));
        let s = script_of(&p);
        assert!(
            s.contains(
                "run stop '/usr/sbin/service' 'cron' 'stop'\nrun sleep 'sleep' '2'\nrun start"
            ),
            "{s}"
        );
        let failed = resume(
            p,
            &(section("stop", 0, "") + &section("start", 1, "cannot start")),
        );
        let Plan::Done(out) = failed else { panic!() };
        assert!(out.failed);
        assert_eq!(out.msg.as_deref(), Some("cannot start"));
    }

    fn plan_checked(v: Value) -> Plan {
        let mut ctx = PlanContext::new(Path::new("/"));
        ctx.check_mode = true;
        crate::modules::try_plan(&Service, v, &ctx).unwrap()
    }

    fn step_of(cmds: Vec<Cmd>) -> Plan {
        Plan::Step(
            service_run::op("", &cmds),
            crate::modules::Next::new(|_| unreachable!()),
        )
    }

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn check_mode_reads_the_status_and_stops_where_ansible_would_act() {
        assert_eq!(Service.caps(), Caps::TASK.own_check_mode());
        let p = plan_checked(json!({"name": "cron", "state": "started", "enabled": true}));
        assert_eq!(p, step_of(vec![service_detect::probe("cron")]));
        let p = resume(p, &section("detect", 0, DETECTED));
        assert_eq!(
            p,
            step_of(vec![Cmd::new(
                "status",
                argv(&["/usr/sbin/service", "cron", "status"])
            )])
        );
        // check_service_changed's exit: no update-rc.d, no start, only this.
        assert_eq!(
            resume(p, &section("status", 3, "cron is not running ... failed!")),
            Plan::Done(TaskOutcome {
                changed: true,
                msg: Some("service state changed".into()),
                ..TaskOutcome::default()
            })
        );
    }

    #[test]
    fn check_mode_reports_enablement_without_update_rc_d() {
        let p = plan_checked(json!({"name": "cron", "enabled": true}));
        let Plan::Done(out) = resume(p, &section("detect", 0, DETECTED)) else {
            panic!("no step after the probe")
        };
        assert!(out.changed && !out.failed);
        assert_eq!(
            Value::Object(out.data),
            json!({"name": "cron", "enabled": true})
        );

        // Enabled and running already: the full result, unchanged.
        let p = plan_checked(json!({"name": "cron", "state": "started", "enabled": true}));
        let p = resume(
            p,
            &section("detect", 0, &format!("{DETECTED}link=/etc/rc2.d/S01cron\n")),
        );
        let Plan::Done(out) = resume(p, &section("status", 0, "cron is running.")) else {
            panic!()
        };
        assert!(!out.changed);
        assert_eq!(
            Value::Object(out.data),
            json!({"name": "cron", "enabled": true, "state": "started"})
        );
    }

    #[test]
    fn check_mode_on_a_sysvinit_host_hands_the_flag_on() {
        let mut ctx = PlanContext::new(Path::new("/"));
        ctx.check_mode = true;
        let p = crate::modules::try_plan(
            &Service,
            json!({"name": "cron", "state": "stopped", "use": "sysvinit"}),
            &ctx,
        )
        .unwrap();
        let p = resume(p, &section("detect", 0, DETECTED));
        assert_eq!(
            p,
            step_of(vec![
                Cmd::new("ps", argv(&["/bin/ps", "auxww"])),
                Cmd::new("status", argv(&["/usr/sbin/service", "cron", "status"])),
            ])
        );
        let Plan::Done(out) = resume(
            p,
            &(section("ps", 0, "") + &section("status", 0, "cron is running.")),
        ) else {
            panic!("no stop in check mode")
        };
        assert!(out.changed);
        assert_eq!(
            out.data["status"]["stopped"],
            json!({"changed": true, "rc": null, "stdout": null, "stderr": null})
        );
    }
}
