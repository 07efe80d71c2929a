//! `systemd_service` (and its old name `systemd`): ansible-core 2.21's module, step by
//! step: `daemon-reload`/`daemon-reexec`, then what `systemctl show`/`is-enabled` say of
//! the unit, then mask, enable and start as asked. Where systemd is installed but not
//! running (these tests' hosts), `systemctl` still works offline on unit files and links
//! (enable, disable, mask, is-enabled) and everything needing the manager fails as it
//! fails under Ansible. In check mode (the module's own) only `show` and `is-enabled` run:
//! no daemon-reload, mask, enable or start, and the result says what would change.

use serde_json::{Map, Value, json};

use super::service_detect::{self, Detected};
use super::service_run::{self, Cmd, Report};
use super::service_systemctl::{VALID_ENABLED_STATES, parse_show, request_was_ignored};
use super::spec::{Arg, Spec};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct Systemd;
pub struct SystemdService;

static SPEC: Spec = Spec::new(&[
    Arg::bool("daemon_reexec")
        .aliases(&["daemon-reexec"])
        .default_bool(false),
    Arg::bool("daemon_reload")
        .aliases(&["daemon-reload"])
        .default_bool(false),
    Arg::bool("enabled"),
    Arg::bool("force"),
    Arg::bool("masked"),
    Arg::str("name").aliases(&["service", "unit"]),
    Arg::bool("no_block").default_bool(false),
    Arg::str("scope")
        .choices(&["system", "user", "global"])
        .default_str("system"),
    Arg::str("state").choices(&["reloaded", "restarted", "started", "stopped"]),
])
.required_one_of(&[&[
    "state",
    "enabled",
    "masked",
    "daemon_reload",
    "daemon_reexec",
]])
.required_by(&[
    ("state", &["name"]),
    ("enabled", &["name"]),
    ("masked", &["name"]),
]);

/// The module sets XDG_RUNTIME_DIR when unset, for `--user`.
const PRELUDE: &str =
    "[ -n \"${XDG_RUNTIME_DIR+x}\" ] || XDG_RUNTIME_DIR=/run/user/$(id -u); export XDG_RUNTIME_DIR";

impl Module for Systemd {
    fn name(&self) -> &'static str {
        "systemd"
    }
    fn spec(&self) -> &'static Spec {
        &SPEC
    }
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }
    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        plan(args, ctx.check_mode)
    }
}

impl Module for SystemdService {
    fn name(&self) -> &'static str {
        "systemd_service"
    }
    fn spec(&self) -> &'static Spec {
        &SPEC
    }
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }
    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        plan(args, ctx.check_mode)
    }
}

pub(crate) fn spec() -> &'static Spec {
    &SPEC
}

fn failed(msg: impl Into<String>) -> Result<Plan, ModuleError> {
    Ok(Plan::Done(TaskOutcome::failed(msg)))
}

fn argv(base: &[String], words: &[&str]) -> Vec<String> {
    base.iter()
        .cloned()
        .chain(words.iter().map(|w| w.to_string()))
        .collect()
}

/// What the later steps carry along.
struct Run {
    args: Args,
    unit: String,
    d: Detected,
    base: Vec<String>,
    status: Map<String, Value>,
    is_enabled: String,
    warnings: Vec<String>,
    changed: bool,
    /// Check mode: look, never act.
    check: bool,
}

pub(crate) fn plan(args: &Args, check: bool) -> Result<Plan, ModuleError> {
    let unit = args.str("name").map(str::to_string);
    if let Some(unit) = &unit
        && let Some(glob) = ["*", "?", "["].into_iter().find(|g| unit.contains(g))
    {
        return failed(format!(
            "This module does not currently support using glob patterns, found '{glob}' in service name: {unit}"
        ));
    }
    let args = args.clone();
    let probe = service_detect::probe(unit.as_deref().unwrap_or(""));
    Ok(service_run::step("", vec![probe], move |r| {
        let d = service_detect::parse(&r.get("detect").map(|x| x.out.clone()).unwrap_or_default());
        let Some(systemctl) = d.systemctl.clone() else {
            return failed(
                "Failed to find required executable \"systemctl\" in paths: /sbin:/usr/sbin:/bin:/usr/bin",
            );
        };
        let mut base = vec![systemctl];
        match args.str("scope") {
            Some("system") | None => {}
            Some(scope) => base.push(format!("--{scope}")),
        }
        if args.bool("no_block") {
            base.push("--no-block".into());
        }
        if args.bool("force") {
            base.push("--force".into());
        }
        let mut cmds = Vec::new();
        if args.bool("daemon_reload") && !check {
            cmds.push(Cmd::new("daemon-reload", argv(&base, &["daemon-reload"])));
        }
        if args.bool("daemon_reexec") && !check {
            cmds.push(Cmd::new("daemon-reexec", argv(&base, &["daemon-reexec"])));
        }
        if let Some(unit) = &unit {
            cmds.push(Cmd::new("show", argv(&base, &["show", unit])));
            cmds.push(Cmd::new("is-enabled", argv(&base, &["is-enabled", unit])));
            cmds.push(Cmd::new(
                "list-unit-files",
                argv(&base, &["list-unit-files", unit]),
            ));
        }
        let run = Run {
            args,
            unit: unit.unwrap_or_default(),
            d,
            base,
            status: Map::new(),
            is_enabled: String::new(),
            warnings: Vec::new(),
            changed: false,
            check,
        };
        if cmds.is_empty() {
            return queried(run, Report::default());
        }
        Ok(service_run::step(PRELUDE, cmds, move |r| queried(run, r)))
    }))
}

fn queried(mut run: Run, r: Report) -> Result<Plan, ModuleError> {
    for what in ["daemon-reload", "daemon-reexec"] {
        if let Some(x) = r.get(what).filter(|x| x.rc != 0) {
            if run.d.chroot || run.d.systemd_offline {
                run.warnings.push(format!(
                    "{what} failed, but target is a chroot or systemd is offline. Continuing. Error was: {} / {}",
                    x.rc, x.err
                ));
            } else {
                return failed(format!("failure {} during {what}: {}", x.rc, x.err));
            }
        }
    }
    if !run.args.is_set("name") {
        return Ok(Plan::Done(outcome(run, Map::new())));
    }
    let show = r.get("show").cloned().unwrap_or_default();
    run.is_enabled = r
        .get("is-enabled")
        .map(|x| x.out.clone())
        .unwrap_or_default();
    let mut is_systemd = false;
    if show.rc == 0 && !request_was_ignored(&show.out) && !request_was_ignored(&show.err) {
        if !show.out.is_empty() {
            run.status = parse_show(&show.out);
            let load = run.status.get("LoadState").and_then(Value::as_str);
            is_systemd = load.is_some_and(|l| l != "not-found");
            let masked = load == Some("masked");
            if is_systemd
                && !masked
                && let Some(e) = run.status.get("LoadError").and_then(Value::as_str)
            {
                return failed(format!("Error loading unit file '{}': {e}", run.unit));
            }
        }
    } else if show.rc == 1 && show.err.contains("Failed to parse bus message") {
        return Err(ModuleError::NotSupported(
            "systemd versions whose `show` fails to parse bus messages",
        ));
    } else if VALID_ENABLED_STATES.contains(&run.is_enabled.trim())
        || r.get("list-unit-files").is_some_and(|x| x.rc == 0)
    {
        is_systemd = true;
    } else {
        // Ansible runs bare `systemctl` and fails with its error when it fails.
        let bare = Cmd::new("systemctl", run.base[..1].to_vec());
        return Ok(service_run::step(PRELUDE, vec![bare], move |r| {
            let x = r.get("systemctl").cloned().unwrap_or_default();
            if x.rc != 0 {
                let mut out = TaskOutcome::failed(x.err.trim_end());
                out.data.insert("cmd".into(), json!(run.base[0]));
                out.data.insert("rc".into(), json!(x.rc));
                out.data.insert("stdout".into(), json!(x.out));
                out.data.insert("stderr".into(), json!(x.err));
                return Ok(Plan::Done(out));
            }
            act(run, false)
        }));
    }
    act(run, is_systemd)
}

fn missing(unit: &str) -> Result<Plan, ModuleError> {
    failed(format!("Could not find the requested service {unit}: host"))
}

fn act(mut run: Run, is_systemd: bool) -> Result<Plan, ModuleError> {
    let is_initd = run.d.sysv_exists;
    let found = is_systemd || is_initd;
    if is_initd && !is_systemd {
        run.warnings.push(format!(
            "The service ({}) is actually an init script but the system is managed by systemd",
            run.unit
        ));
    }
    let unit = run.unit.clone();
    let mut cmds = Vec::new();
    let mut mask_action = None;
    if let Some(want) = run.args.opt_bool("masked")
        && (run.is_enabled.trim() == "masked") != want
    {
        run.changed = true;
        let action = if want { "mask" } else { "unmask" };
        if !run.check {
            mask_action = Some(action);
            cmds.push(Cmd::new("mask", argv(&run.base, &[action, &unit])));
        }
    }
    if run.args.is_set("enabled") {
        cmds.push(Cmd::new(
            "is-enabled-l",
            argv(&run.base, &["is-enabled", &unit, "-l"]),
        ));
    }
    let then = move |r: Report| -> Result<Plan, ModuleError> {
        if let (Some(action), Some(x)) = (mask_action, r.get("mask"))
            && x.rc != 0
        {
            if !found {
                return missing(&unit);
            }
            return failed(format!(
                "Failed to {action} the service ({unit}): {}",
                x.err.trim()
            ));
        }
        let mut data = Map::new();
        let mut cmds = Vec::new();
        let mut enable_action = None;
        if let Some(want) = run.args.opt_bool("enabled") {
            if !found {
                return missing(&unit);
            }
            let x = r.get("is-enabled-l").cloned().unwrap_or_default();
            let now = match x.rc {
                0 => !["enabled-runtime", "indirect", "alias"].contains(&x.out.trim_end()),
                1 => {
                    run.args.str("scope") == Some("system")
                        && is_initd
                        && !x.out.trim().ends_with("disabled")
                        && run.d.sysv_enabled(None)
                }
                _ => false,
            };
            data.insert("enabled".into(), json!(now));
            if now != want {
                run.changed = true;
                let action = if want { "enable" } else { "disable" };
                if !run.check {
                    enable_action = Some(action);
                    cmds.push(Cmd::new("enable", argv(&run.base, &[action, &unit])).or_stop());
                }
                data.insert("enabled".into(), json!(!now));
            }
        }
        let mut unknown_state = false;
        let mut state_action = None;
        if let Some(state) = run.args.str("state").map(str::to_string) {
            if !found {
                return missing(&unit);
            }
            data.insert("state".into(), json!(state));
            match run.status.get("ActiveState").and_then(Value::as_str) {
                Some(active) => {
                    let running = matches!(active, "active" | "activating");
                    let action = match state.as_str() {
                        "started" => (!running).then_some("start"),
                        "stopped" => (running || active == "deactivating").then_some("stop"),
                        _ => {
                            data.insert("state".into(), json!("started"));
                            Some(if !running {
                                "start"
                            } else if state == "restarted" {
                                "restart"
                            } else {
                                "reload"
                            })
                        }
                    };
                    if let Some(action) = action {
                        run.changed = true;
                        if !run.check {
                            state_action = Some(action);
                            cmds.push(Cmd::new("state", argv(&run.base, &[action, &unit])));
                        }
                    }
                }
                None if run.d.chroot || run.d.systemd_offline => run.warnings.push(
                    "Target is a chroot or systemd is offline. This can lead to false positives or prevent the init system tools from working.".into(),
                ),
                None => unknown_state = true,
            }
        }
        let finish = move |r: Report| -> Result<Plan, ModuleError> {
            if let (Some(action), Some(x)) = (enable_action, r.get("enable"))
                && x.rc != 0
            {
                return failed(format!(
                    "Unable to {action} service {unit}: {}{}",
                    x.out, x.err
                ));
            }
            if let (Some(action), Some(x)) = (state_action, r.get("state"))
                && x.rc != 0
            {
                return failed(format!("Unable to {action} service {unit}: {}", x.err));
            }
            if unknown_state {
                let mut out = TaskOutcome::failed("Service is in unknown state");
                out.data
                    .insert("status".into(), Value::Object(run.status.clone()));
                return Ok(Plan::Done(out));
            }
            Ok(Plan::Done(outcome(run, data)))
        };
        if cmds.is_empty() {
            return finish(Report::default());
        }
        Ok(service_run::step(PRELUDE, cmds, finish))
    };
    if cmds.is_empty() {
        return then(Report::default());
    }
    Ok(service_run::step(PRELUDE, cmds, then))
}

fn outcome(run: Run, extra: Map<String, Value>) -> TaskOutcome {
    let mut out = TaskOutcome {
        changed: run.changed,
        ..TaskOutcome::default()
    };
    let name = run
        .args
        .str("name")
        .map(|n| json!(n))
        .unwrap_or(Value::Null);
    out.data.insert("name".into(), name);
    out.data.insert("status".into(), Value::Object(run.status));
    out.data.extend(extra);
    if !run.warnings.is_empty() {
        out.data.insert("warnings".into(), json!(run.warnings));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::service_run::test_support::resume;
    use std::path::Path;

    fn script_of(plan: &Plan) -> String {
        match plan {
            Plan::Step(turbo_proto::Op::Exec(x), _) => match &x.command {
                turbo_proto::Command::Shell { script, .. } => script.clone(),
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        }
    }

    fn section(label: &str, rc: i32, out: &str, err: &str) -> String {
        format!("@@turbo-play-section {label} {rc}\n{out}\n@@turbo-play-section-err\n{err}\n")
    }

    fn plan_of(v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(&SystemdService, v, &PlanContext::new(Path::new("/")))
    }

    const OFFLINE: &str = "System has not been booted with systemd as init system (PID 1). Can't operate.\nFailed to connect to bus: Host is down\n";
    const DETECTED: &str = "bin.systemctl=/bin/systemctl\nproc1=sshd\nrc0d=1\n";

    #[test]
    fn enables_and_masks_offline_as_ansible() {
        let p = plan_of(json!({"name": "cron", "enabled": false, "masked": true})).unwrap();
        let p = resume(p, &section("detect", 0, DETECTED, ""));
        assert!(script_of(&p).contains("run show '/bin/systemctl' 'show' 'cron'"));
        let p = resume(
            p,
            &(section("show", 1, "", OFFLINE)
                + &section("is-enabled", 0, "enabled\n", "")
                + &section("list-unit-files", 0, "", "")),
        );
        let s = script_of(&p);
        assert!(s.contains("run mask '/bin/systemctl' 'mask' 'cron'\nrun is-enabled-l '/bin/systemctl' 'is-enabled' 'cron' '-l'"), "{s}");
        let p = resume(
            p,
            &(section("mask", 0, "", "") + &section("is-enabled-l", 1, "masked\n", "")),
        );
        // Masked reads as not enabled: nothing to disable.
        let Plan::Done(out) = p else { panic!("{p:?}") };
        assert!(out.changed && !out.failed);
        assert_eq!(
            Value::Object(out.data),
            json!({"name": "cron", "status": {}, "enabled": false})
        );
    }

    #[test]
    fn manager_only_requests_fail_with_ansibles_messages() {
        let p = plan_of(json!({"daemon_reload": true})).unwrap();
        let p = resume(p, &section("detect", 0, DETECTED, ""));
        let Plan::Done(out) = resume(p, &section("daemon-reload", 1, "", OFFLINE)) else {
            panic!()
        };
        assert_eq!(
            out.msg.unwrap(),
            format!("failure 1 during daemon-reload: {OFFLINE}")
        );

        let p = plan_of(json!({"name": "tpdemo", "state": "started"})).unwrap();
        let p = resume(p, &section("detect", 0, DETECTED, ""));
        let p = resume(
            p,
            &(section("show", 1, "", OFFLINE) + &section("is-enabled", 0, "enabled\n", "")),
        );
        let Plan::Done(out) = p else { panic!() };
        assert_eq!(out.msg.as_deref(), Some("Service is in unknown state"));

        assert_eq!(
            plan_of(json!({"enabled": true})).unwrap_err(),
            "missing parameter(s) required by 'enabled': name"
        );
        let Plan::Done(glob) = plan_of(json!({"name": "a*", "state": "started"})).unwrap() else {
            panic!()
        };
        assert_eq!(
            glob.msg.as_deref(),
            Some(
                "This module does not currently support using glob patterns, found '*' in service name: a*"
            )
        );
    }

    #[test]
    fn an_unknown_unit_fails_with_systemctls_own_error() {
        let p = plan_of(json!({"name": "nope", "enabled": true})).unwrap();
        let p = resume(p, &section("detect", 0, DETECTED, ""));
        let p = resume(
            p,
            &(section("show", 1, "", OFFLINE)
                + &section(
                    "is-enabled",
                    1,
                    "",
                    "Failed to get unit file state for nope.service: No such file or directory\n",
                )
                + &section("list-unit-files", 1, "", "")),
        );
        let Plan::Done(out) = resume(p, &section("systemctl", 1, "", OFFLINE)) else {
            panic!()
        };
        assert_eq!(out.msg.as_deref(), Some(OFFLINE.trim_end()));
    }

    fn checked(v: Value) -> Plan {
        let mut ctx = PlanContext::new(Path::new("/"));
        ctx.check_mode = true;
        crate::modules::try_plan(&Systemd, v, &ctx).unwrap()
    }

    fn step_of(cmds: Vec<Cmd>) -> Plan {
        Plan::Step(
            service_run::op(PRELUDE, &cmds),
            crate::modules::Next::new(|_| unreachable!()),
        )
    }

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn check_mode_looks_and_reports_but_never_masks_enables_or_starts() {
        assert_eq!(Systemd.caps(), Caps::TASK.own_check_mode());
        assert_eq!(SystemdService.caps(), Caps::TASK.own_check_mode());
        let p = checked(json!({
            "name": "tpdemo.service", "enabled": true, "masked": false, "state": "started",
            "daemon_reload": true,
        }));
        assert_eq!(
            p,
            Plan::Step(
                service_run::op("", &[service_detect::probe("tpdemo.service")]),
                crate::modules::Next::new(|_| unreachable!()),
            )
        );
        let p = resume(p, &section("detect", 0, DETECTED, ""));
        // No daemon-reload: only the questions.
        assert_eq!(
            p,
            step_of(vec![
                Cmd::new("show", words(&["/bin/systemctl", "show", "tpdemo.service"])),
                Cmd::new(
                    "is-enabled",
                    words(&["/bin/systemctl", "is-enabled", "tpdemo.service"])
                ),
                Cmd::new(
                    "list-unit-files",
                    words(&["/bin/systemctl", "list-unit-files", "tpdemo.service"])
                ),
            ])
        );
        let p = resume(
            p,
            &(section(
                "show",
                0,
                "Id=tpdemo.service\nLoadState=loaded\nActiveState=inactive\n",
                "",
            ) + &section("is-enabled", 1, "masked\n", "")
                + &section("list-unit-files", 0, "", "")),
        );
        // Would unmask: the next step is only is-enabled -l, not unmask.
        assert_eq!(
            p,
            step_of(vec![Cmd::new(
                "is-enabled-l",
                words(&["/bin/systemctl", "is-enabled", "tpdemo.service", "-l"])
            )])
        );
        let Plan::Done(out) = resume(p, &section("is-enabled-l", 1, "disabled\n", "")) else {
            panic!("no enable or start in check mode")
        };
        assert!(out.changed && !out.failed);
        assert_eq!(
            Value::Object(out.data),
            json!({
                "name": "tpdemo.service",
                "status": {"Id": "tpdemo.service", "LoadState": "loaded", "ActiveState": "inactive"},
                "enabled": true,
                "state": "started",
            })
        );
    }

    #[test]
    fn check_mode_daemon_reload_alone_runs_nothing_after_the_probe() {
        let p = checked(json!({"daemon_reload": true}));
        let Plan::Done(out) = resume(p, &section("detect", 0, DETECTED, "")) else {
            panic!("no daemon-reload in check mode")
        };
        assert_eq!(
            out,
            TaskOutcome {
                data: json!({"name": null, "status": {}})
                    .as_object()
                    .unwrap()
                    .clone(),
                ..TaskOutcome::default()
            }
        );
    }
}
