//! `sysvinit`: init scripts driven directly (`/etc/init.d/NAME start`), status through
//! `service NAME status` or the script, enabled through update-rc.d (or chkconfig), with
//! the result's `status` dict of ansible-core 2.21's module. In check mode (the module's
//! own) only the status is read; the `status` dict says what would change, with no output.

use serde_json::{Map, Value, json};

use super::service_detect::{self, Detected};
use super::service_run::{self, Cmd, Report};
use super::service_status;
use super::spec::{Arg, Elem, Spec};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct SysvInit;

static SPEC: Spec = Spec::new(&[
    Arg::str("arguments").aliases(&["args"]),
    Arg::bool("daemonize")
        .default_bool(false)
        .no_effect("init scripts' output goes to files, never to a pipe a daemon could hold"),
    Arg::bool("enabled"),
    Arg::str("name").aliases(&["service"]).required(),
    Arg::str("pattern"),
    Arg::list("runlevels", Elem::Str),
    Arg::int("sleep").default_int(1),
    Arg::str("state").choices(&["started", "stopped", "restarted", "reloaded"]),
])
.required_one_of(&[&["state", "enabled"]]);

impl Module for SysvInit {
    fn name(&self) -> &'static str {
        "sysvinit"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let check = ctx.check_mode;
        let name = args.str("name").unwrap_or_default().to_string();
        let args = args.clone();
        Ok(service_run::step(
            "",
            vec![service_detect::probe(&name)],
            move |r| {
                let d = service_detect::parse(
                    &r.get("detect").map(|x| x.out.clone()).unwrap_or_default(),
                );
                plan_detected(args, d, check)
            },
        ))
    }
}

/// `service` on a host whose `ansible_service_mgr` is sysvinit: its arguments handed on,
/// as Ansible's action plugin hands them (without `use`).
pub(crate) fn from_service(
    raw: super::ModuleArgs,
    d: Detected,
    check: bool,
) -> Result<Plan, ModuleError> {
    match SPEC.validate("ansible.legacy.sysvinit", &raw) {
        Ok(args) => plan_detected(args, d, check),
        Err(msg) => Ok(Plan::Done(TaskOutcome::failed(msg))),
    }
}

fn part(changed: bool, ran: Option<(i32, &str, &str)>) -> Value {
    match ran {
        Some((rc, out, err)) => json!({"changed": changed, "rc": rc, "stdout": out, "stderr": err}),
        None => json!({"changed": changed, "rc": null, "stdout": null, "stderr": null}),
    }
}

fn plan_detected(args: Args, d: Detected, check: bool) -> Result<Plan, ModuleError> {
    let name = args.str("name").unwrap_or_default().to_string();
    if !d.sysv_exists {
        return Ok(Plan::Done(TaskOutcome::failed(format!(
            "Could not find the requested service {name}: "
        ))));
    }
    let script = if name.starts_with('/') {
        name.clone()
    } else {
        format!("/etc/init.d/{name}")
    };
    let ps = d.ps.clone().unwrap_or_else(|| "ps".into());
    let mut queries = vec![Cmd::new("ps", vec![ps, "auxww".into()])];
    if args.str("pattern").is_none() {
        let argv = match &d.service {
            Some(service) => vec![service.clone(), name.clone(), "status".into()],
            None => vec![script.clone(), "status".into()],
        };
        queries.push(Cmd::new("status", argv));
    }
    Ok(service_run::step("", queries, move |r: Report| {
        let ps_out = r.get("ps").map(|p| p.out.clone()).unwrap_or_default();
        let mut warnings = Vec::new();
        let (worked, started) = match args.str("pattern") {
            Some(p) => {
                let m = service_status::ps_matches(&ps_out, p);
                (m, m)
            }
            None => {
                let s = r.get("status").cloned().unwrap_or_default();
                let (worked, started, by_ps) = service_status::sysvinit_status(
                    &name,
                    s.rc,
                    &s.out,
                    service_status::ps_matches(&ps_out, &name),
                );
                if by_ps {
                    warnings.push("Used ps output to match service name and determine it is up, this is very unreliable".to_string());
                }
                (worked, started)
            }
        };
        if !worked {
            warnings.push("Unable to determine if service is up, assuming it is down".into());
        }
        let enabled = args.opt_bool("enabled");
        let runlevels = args.str_list("runlevels");
        let mut acts = Vec::new();
        let enable_changed = if !runlevels.is_empty() {
            let changed = runlevels
                .iter()
                .any(|rl| enabled != Some(d.sysv_enabled(Some(rl))));
            if changed {
                let on = enabled == Some(true);
                if let Some(u) = &d.update_rc_d {
                    let mut argv = vec![
                        u.clone(),
                        name.clone(),
                        if on { "enable" } else { "disable" }.into(),
                    ];
                    argv.extend(runlevels.iter().cloned());
                    acts.push(Cmd::new("enable", argv));
                } else if let Some(c) = &d.chkconfig {
                    acts.push(Cmd::new(
                        "enable",
                        vec![
                            c.clone(),
                            "--level".into(),
                            runlevels.concat(),
                            name.clone(),
                            if on { "on" } else { "off" }.into(),
                        ],
                    ));
                }
            }
            changed
        } else {
            let changed = enabled.is_some_and(|e| e != d.sysv_enabled(None));
            if changed {
                let on = enabled == Some(true);
                if let Some(u) = &d.update_rc_d {
                    acts.push(Cmd::new(
                        "enable",
                        vec![
                            u.clone(),
                            name.clone(),
                            if on { "defaults" } else { "disable" }.into(),
                        ],
                    ));
                } else if let Some(c) = &d.chkconfig {
                    acts.push(Cmd::new(
                        "enable",
                        vec![
                            c.clone(),
                            name.clone(),
                            if on { "on" } else { "off" }.into(),
                        ],
                    ));
                }
            }
            changed
        };
        let state = args.str("state").map(str::to_string);
        let action = state.as_deref().map(|s| {
            s.strip_suffix("ped")
                .or_else(|| s.strip_suffix("ed"))
                .unwrap_or(s)
                .to_string()
        });
        let arguments = args.str("arguments").map(str::to_string);
        let doit = |what: &str| -> Result<Vec<String>, ModuleError> {
            let line = format!("{script} {what} {}", arguments.as_deref().unwrap_or(""));
            crate::shell_words::split(&line).map_err(ModuleError::Invalid)
        };
        let mut state_changed = false;
        if let Some(action) = &action {
            if action == "restart" {
                state_changed = true;
                acts.push(Cmd::new("stop", doit("stop")?).or_stop());
                let sleep = args.int("sleep").unwrap_or(0);
                if sleep > 0 {
                    acts.push(Cmd::new("sleep", vec!["sleep".into(), sleep.to_string()]));
                }
                acts.push(Cmd::new("start", doit("start")?).or_stop());
                if sleep > 0 {
                    acts.push(Cmd::new("sleep", vec!["sleep".into(), sleep.to_string()]));
                }
            } else if started != (action == "start") || started == (action == "stop") {
                state_changed = true;
                acts.push(Cmd::new("control", doit(action)?).or_stop());
            }
        }
        let state_key = state.clone().unwrap_or_else(|| "null".into());
        let finish = move |r: Report| -> Result<Plan, ModuleError> {
            let mut status = Map::new();
            let enable_ran = r.get("enable");
            let mut enabled_part = part(
                enable_changed,
                enable_ran.map(|e| (e.rc, e.out.as_str(), e.err.as_str())),
            );
            if !runlevels.is_empty() {
                enabled_part["runlevels"] = json!(runlevels);
            }
            status.insert("enabled".into(), enabled_part);
            let last = ["start", "control"]
                .iter()
                .find_map(|l| r.get(l))
                .or_else(|| r.get("stop"));
            status.insert(
                state_key.clone(),
                part(
                    state_changed,
                    last.filter(|_| state_changed)
                        .map(|e| (e.rc, e.out.as_str(), e.err.as_str())),
                ),
            );
            let mut out = TaskOutcome {
                changed: enable_changed || state_changed,
                ..TaskOutcome::default()
            };
            out.data.insert("name".into(), json!(name));
            if enable_ran.is_some_and(|e| e.err.contains("illegal runlevel specified")) {
                out.failed = true;
                out.msg = Some(format!(
                    "Illegal runlevel specified for enable operation on service {name}"
                ));
            }
            if let Some(bad) = ["stop", "start", "control"]
                .iter()
                .filter_map(|l| r.get(l))
                .find(|x| x.rc != 0)
            {
                out.failed = true;
                out.msg = Some(format!(
                    "Failed to {} service: {name}",
                    action.clone().unwrap_or_default()
                ));
                out.data.insert("rc".into(), json!(bad.rc));
                out.data.insert("stdout".into(), json!(bad.out));
                out.data.insert("stderr".into(), json!(bad.err));
            }
            out.data.insert("status".into(), Value::Object(status));
            if !warnings.is_empty() {
                out.data.insert("warnings".into(), json!(warnings));
            }
            Ok(Plan::Done(out))
        };
        // Ansible decides what would change, then runs none of it in check mode.
        if acts.is_empty() || check {
            return finish(Report::default());
        }
        Ok(service_run::step("", acts, finish))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::service_run::test_support::{resume, section};
    use std::path::Path;

    #[test]
    fn a_running_enabled_script_is_left_alone_with_ansibles_status_dict() {
        let p = crate::modules::try_plan(
            &SysvInit,
            json!({"name": "tpdemo", "state": "started", "enabled": true}),
            &PlanContext::new(Path::new("/")),
        )
        .unwrap();
        let p = resume(
            p,
            &section(
                "detect",
                0,
                "bin.service=/usr/sbin/service\nsysv_exists=1\nrc0d=1\nlink=/etc/rc2.d/S01tpdemo\n",
            ),
        );
        let p = resume(
            p,
            &(section("ps", 0, "") + &section("status", 0, "tpdemo is running\n")),
        );
        let Plan::Done(out) = p else { panic!() };
        assert!(!out.changed);
        let none = json!({"changed": false, "rc": null, "stdout": null, "stderr": null});
        assert_eq!(
            Value::Object(out.data),
            json!({"name": "tpdemo", "status": {"enabled": none, "started": none}})
        );
    }

    #[test]
    fn a_missing_script_fails_as_ansible_says() {
        let p = crate::modules::try_plan(
            &SysvInit,
            json!({"name": "nope", "state": "started"}),
            &PlanContext::new(Path::new("/")),
        )
        .unwrap();
        let Plan::Done(out) = resume(p, &section("detect", 0, "")) else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("Could not find the requested service nope: ")
        );
    }

    #[test]
    fn check_mode_reads_the_status_and_runs_no_script_or_update_rc_d() {
        assert_eq!(SysvInit.caps(), Caps::TASK.own_check_mode());
        let mut ctx = PlanContext::new(Path::new("/"));
        ctx.check_mode = true;
        let p = crate::modules::try_plan(
            &SysvInit,
            json!({"name": "tpdemo", "state": "restarted", "enabled": true, "runlevels": ["2", "3"]}),
            &ctx,
        )
        .unwrap();
        assert_eq!(
            p,
            Plan::Step(
                service_run::op("", &[service_detect::probe("tpdemo")]),
                crate::modules::Next::new(|_| unreachable!()),
            )
        );
        let p = resume(
            p,
            &section(
                "detect",
                0,
                "bin.service=/usr/sbin/service\nbin.update-rc.d=/usr/sbin/update-rc.d\n\
                 bin.ps=/bin/ps\nsysv_exists=1\nrc0d=1\nlink=/etc/rc2.d/S01tpdemo\n",
            ),
        );
        let argv = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            p,
            Plan::Step(
                service_run::op(
                    "",
                    &[
                        Cmd::new("ps", argv(&["/bin/ps", "auxww"])),
                        Cmd::new("status", argv(&["/usr/sbin/service", "tpdemo", "status"])),
                    ]
                ),
                crate::modules::Next::new(|_| unreachable!()),
            )
        );
        let p = resume(
            p,
            &(section("ps", 0, "") + &section("status", 0, "tpdemo is running\n")),
        );
        let Plan::Done(out) = p else {
            panic!("no restart or update-rc.d in check mode")
        };
        assert!(out.changed && !out.failed);
        let would = json!({"changed": true, "rc": null, "stdout": null, "stderr": null});
        let mut enabled = would.clone();
        enabled["runlevels"] = json!(["2", "3"]);
        assert_eq!(
            Value::Object(out.data),
            json!({"name": "tpdemo", "status": {"enabled": enabled, "restarted": would}})
        );
    }
}
