//! `service_facts`: the host's services as `ansible_facts.services`, from the same tools
//! ansible-core 2.21's module asks (`service --status-all`, systemctl when systemd manages
//! the host, OpenRC's rc-status). Upstart's and chkconfig's lists are not read yet.

use serde_json::{Value, json};

use super::service_detect;
use super::service_listing::{self, Services};
use super::service_run::{self, Cmd, Report};
use super::spec::Spec;
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct ServiceFacts;

static SPEC: Spec = Spec::new(&[]);

impl Module for ServiceFacts {
    fn name(&self) -> &'static str {
        "service_facts"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// Every command it runs only lists services, so check mode runs them all, as Ansible.
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, _args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        Ok(service_run::step(
            "",
            vec![service_detect::probe("")],
            |r| {
                let d = service_detect::parse(
                    &r.get("detect").map(|x| x.out.clone()).unwrap_or_default(),
                );
                if d.chkconfig.is_some() {
                    return Err(ModuleError::NotSupported("service_facts with chkconfig"));
                }
                if d.initctl.is_some() {
                    return Err(ModuleError::NotSupported(
                        "service_facts with upstart's initctl",
                    ));
                }
                let mut cmds = Vec::new();
                if let (Some(service), None) = (&d.service, &d.rc_status) {
                    cmds.push(Cmd::new(
                        "status-all",
                        vec![service.clone(), "--status-all".into()],
                    ));
                }
                if let (Some(status), Some(update)) = (&d.rc_status, &d.rc_update) {
                    let sh = |line: String| vec!["sh".to_string(), "-c".to_string(), line];
                    cmds.push(Cmd::new(
                        "rc-status",
                        sh(format!(
                            "{} -a -s -m 2>&1 | grep '^ ' | tr -d '[]'",
                            service_run::sh_quote(status)
                        )),
                    ));
                    cmds.push(Cmd::new(
                        "rc-update",
                        sh(format!(
                            "{} show -v 2>&1 | grep '|'",
                            service_run::sh_quote(update)
                        )),
                    ));
                }
                let systemctl = d.systemctl.clone().filter(|_| d.systemd_managed());
                if let Some(systemctl) = &systemctl {
                    let words = |w: &[&str]| {
                        std::iter::once(systemctl.clone())
                            .chain(w.iter().map(|s| s.to_string()))
                            .collect::<Vec<_>>()
                    };
                    cmds.push(Cmd::new(
                        "list-units",
                        words(&[
                            "list-units",
                            "--no-pager",
                            "--type",
                            "service",
                            "--all",
                            "--plain",
                        ]),
                    ));
                    cmds.push(Cmd::new(
                        "list-unit-files",
                        words(&[
                            "list-unit-files",
                            "--no-pager",
                            "--type",
                            "service",
                            "--all",
                        ]),
                    ));
                }
                let initd_dir = d.initd_dir;
                Ok(service_run::step("", cmds, move |r: Report| {
                    let mut services = Services::new();
                    let mut warnings = Vec::new();
                    if let Some(x) = r.get("status-all")
                        && (x.rc != 4 || initd_dir)
                    {
                        if x.rc != 0 {
                            warnings.push(format!(
                                "Unable to query 'service' tool ({}): {}",
                                x.rc, x.err
                            ));
                        }
                        service_listing::status_all(&x.out, &mut services);
                    }
                    if let (Some(status), Some(update)) = (r.get("rc-status"), r.get("rc-update")) {
                        warnings.extend(service_listing::openrc(
                            &status.out,
                            &update.out,
                            &mut services,
                        ));
                    }
                    let mut unseen = Vec::new();
                    if let Some(x) = r.get("list-units") {
                        if x.rc != 0 {
                            warnings.push(format!("Could not list units from systemd: {}", x.err));
                        } else {
                            service_listing::list_units(&x.out, &mut services);
                        }
                    }
                    if let Some(x) = r.get("list-unit-files") {
                        if x.rc != 0 {
                            warnings.push(format!(
                                "Could not get unit files data from systemd: {}",
                                x.err
                            ));
                        } else {
                            unseen = service_listing::list_unit_files(&x.out, &mut services);
                        }
                    }
                    let (Some(systemctl), false) = (systemctl, unseen.is_empty()) else {
                        return Ok(Plan::Done(outcome(services, warnings)));
                    };
                    let shows = unseen
                        .iter()
                        .map(|(name, _)| {
                            Cmd::new(
                                "show",
                                vec![
                                    systemctl.clone(),
                                    "show".into(),
                                    name.clone(),
                                    "--property=ActiveState".into(),
                                ],
                            )
                        })
                        .collect();
                    Ok(service_run::step("", shows, move |r: Report| {
                        let shown = r.ran.iter().filter(|x| x.label == "show");
                        for ((name, status), x) in unseen.iter().zip(shown) {
                            let state = if x.rc == 0 && !x.out.is_empty() {
                                x.out.replace("ActiveState=", "").trim_end().to_string()
                            } else {
                                "unknown".into()
                            };
                            services.insert(
                            name.clone(),
                            json!({"name": name, "state": state, "status": status, "source": "systemd"}),
                        );
                        }
                        Ok(Plan::Done(outcome(services, warnings)))
                    }))
                }))
            },
        ))
    }
}

fn outcome(services: Services, warnings: Vec<String>) -> TaskOutcome {
    let mut out = TaskOutcome::default();
    if services.is_empty() {
        out.skipped = true;
        out.msg = Some(
            "Failed to find any services. This can be due to privileges or some other configuration issue."
                .into(),
        );
    } else {
        out.data.insert(
            "ansible_facts".into(),
            json!({"services": Value::Object(services)}),
        );
    }
    if !warnings.is_empty() {
        out.data.insert("warnings".into(), json!(warnings));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::service_run::test_support::{resume, section};
    use std::path::Path;

    #[test]
    fn check_mode_lists_as_usual() {
        // Its commands only read, so the agent must run them in check mode too.
        assert_eq!(ServiceFacts.caps(), Caps::TASK.own_check_mode());
        let mut ctx = PlanContext::new(Path::new("/"));
        ctx.check_mode = true;
        let p = crate::modules::try_plan(&ServiceFacts, json!({}), &ctx).unwrap();
        assert_eq!(
            p,
            Plan::Step(
                service_run::op("", &[service_detect::probe("")]),
                crate::modules::Next::new(|_| unreachable!()),
            )
        );
        let p = resume(
            p,
            &section(
                "detect",
                0,
                "bin.service=/usr/sbin/service\nproc1=sshd\ninitd_dir=1\n",
            ),
        );
        assert_eq!(
            p,
            Plan::Step(
                service_run::op(
                    "",
                    &[Cmd::new(
                        "status-all",
                        vec!["/usr/sbin/service".into(), "--status-all".into()]
                    )]
                ),
                crate::modules::Next::new(|_| unreachable!()),
            )
        );
    }

    #[test]
    fn lists_init_scripts_where_systemd_does_not_run() {
        let p =
            crate::modules::try_plan(&ServiceFacts, json!({}), &PlanContext::new(Path::new("/")))
                .unwrap();
        let p = resume(
            p,
            &section(
                "detect",
                0,
                "bin.service=/usr/sbin/service\nbin.systemctl=/bin/systemctl\nproc1=sshd\ninitd_dir=1\n",
            ),
        );
        let Plan::Done(out) = resume(p, &section("status-all", 0, " [ + ]  cron\n [ - ]  ssh\n"))
        else {
            panic!()
        };
        assert_eq!(
            out.data["ansible_facts"]["services"]["cron"],
            json!({"name": "cron", "state": "running", "source": "sysv"})
        );
        let p =
            crate::modules::try_plan(&ServiceFacts, json!({}), &PlanContext::new(Path::new("/")))
                .unwrap();
        let p = resume(p, &section("detect", 0, "proc1=sshd\n"));
        let Plan::Done(none) = resume(p, "") else {
            panic!()
        };
        assert!(none.skipped);
    }
}
