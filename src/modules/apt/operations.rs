//! apt's operations besides installing by name: remove (and purge), the cache's cleanup
//! (autoremove, autoclean), upgrade of the whole system, and a `.deb` file.

use super::*;

pub(super) fn remove(request: &Request, probe: &Probe) -> Result<Plan, ModuleError> {
    let specs: Vec<String> = request
        .packages
        .iter()
        .filter(|p| {
            probe
                .known
                .get(dpkg_status::base_name(&p.name))
                .is_some_and(|k| {
                    (k.installed && p.accepts(&k.version)) || (k.has_files && request.purge)
                })
        })
        .map(|p| quoted(&p.written))
        .collect();
    if specs.is_empty() {
        return Ok(Plan::Done(TaskOutcome::default()));
    }
    let packages = specs.join(" ");
    let r = request;
    let line = format!(
        "{APT_GET} -q -y {} {} {} {} {} {} remove {packages}",
        r.dpkg_options,
        Request::flag(r.purge, "--purge"),
        Request::flag(r.force, "--force-yes"),
        Request::flag(r.autoremove, "--auto-remove"),
        r.simulate(),
        Request::flag(r.allow_change_held_packages, "--allow-change-held-packages"),
    );
    let diff = request.diff;
    run_simple(line, request.policy_rc_d, move |x, stdout, stderr| {
        let mut out = TaskOutcome::default();
        add_output(&mut out.data, x);
        if x.rc != 0 {
            out.failed = true;
            out.msg = Some(format!("'apt-get remove {packages}' failed: {stderr}"));
            out.data.insert("rc".into(), json!(x.rc));
        } else {
            out.changed = true;
            out.data.insert("diff".into(), diff_value(diff, stdout));
        }
        out
    })
}

fn diff_value(diff: bool, stdout: &str) -> Value {
    if diff {
        json!({"prepared": apt_get::prepared_diff(stdout)})
    } else {
        json!({})
    }
}

/// Runs one command line and makes the outcome with `finish(exec, stdout, stderr)`.
fn run_simple(
    line: String,
    policy_rc_d: Option<i64>,
    finish: impl FnOnce(&ExecOutcome, &str, &str) -> TaskOutcome + Send + Sync + 'static,
) -> Result<Plan, ModuleError> {
    let exec = apt_get::exec(&line, policy_rc_d).map_err(ModuleError::Invalid)?;
    Ok(Plan::Step(
        Op::Exec(exec),
        Next::new(move |reply| match reply {
            OpResult::Exec(x) => {
                let (stdout, stderr) = texts(&x);
                Ok(Plan::Done(finish(&x, &stdout, &stderr)))
            }
            other => failed(reply_error(&other).unwrap_or_default()),
        }),
    ))
}

pub(super) fn cleanup(request: &Request, operation: &'static str) -> Result<Plan, ModuleError> {
    let r = request;
    let line = format!(
        "{APT_GET} -y {} {} {} {operation} {}",
        r.dpkg_options,
        Request::flag(r.purge, "--purge"),
        Request::flag(r.force, "--force-yes"),
        r.simulate(),
    );
    let marker = if operation == "autoremove" {
        "The following packages will be REMOVED"
    } else {
        "Del "
    };
    let diff = request.diff;
    run_simple(line, request.policy_rc_d, move |x, stdout, stderr| {
        let mut out = TaskOutcome::default();
        add_output(&mut out.data, x);
        if x.rc != 0 {
            out.failed = true;
            out.msg = Some(format!("'apt-get {operation}' failed: {stderr}"));
            out.data.insert("rc".into(), json!(x.rc));
        } else {
            out.changed = stdout.contains(marker);
            out.data.insert("diff".into(), diff_value(diff, stdout));
        }
        out
    })
}

pub(super) fn upgrade(request: &Request, mode: &str) -> Result<Plan, ModuleError> {
    let r = request;
    let autoremove = Request::flag(r.autoremove, "--auto-remove");
    let command = if mode == "dist" || mode == "full" {
        format!("dist-upgrade {autoremove}")
    } else {
        format!("upgrade --with-new-pkgs {autoremove}")
    };
    let mut line = format!(
        "{APT_GET} -y {} {} {} {} {} {} {command}",
        r.dpkg_options,
        Request::flag(r.force, "--force-yes"),
        Request::flag(r.fail_on_autoremove, "--no-remove"),
        Request::flag(r.allow_unauthenticated, "--allow-unauthenticated"),
        Request::flag(r.allow_downgrade, "--allow-downgrades"),
        r.simulate(),
    );
    if let Some(release) = &r.default_release {
        line.push_str(&format!(" -t '{release}'"));
    }
    let diff = request.diff;
    run_simple(line, request.policy_rc_d, move |x, stdout, stderr| {
        let mut out = TaskOutcome::default();
        if x.rc != 0 {
            out.failed = true;
            out.msg = Some(format!("'{APT_GET} {command}' failed: {stderr}"));
            out.data.insert("stdout".into(), json!(stdout));
            out.data.insert(
                "stdout_lines".into(),
                json!(stdout.lines().collect::<Vec<_>>()),
            );
            out.data.insert("rc".into(), json!(x.rc));
            return out;
        }
        add_output(&mut out.data, x);
        out.msg = Some(stdout.to_string());
        out.changed = !stdout.contains(APT_GET_ZERO);
        if out.changed {
            out.data.insert("diff".into(), diff_value(diff, stdout));
        }
        out
    })
}

/// `deb:` a package file on the target: installed with dpkg unless that version already
/// is, after apt-get installed the dependencies it lacks (see `deb_depends.rs`), which are
/// then marked automatically installed, as Ansible's `install_deb`.
pub(super) fn install_deb(request: Arc<Request>, deb: String) -> Result<Plan, ModuleError> {
    let fields = plain_exec(vec![
        "dpkg-deb".into(),
        "--field".into(),
        deb.clone(),
        "Package".into(),
        "Version".into(),
        "Pre-Depends".into(),
        "Depends".into(),
        "Recommends".into(),
    ]);
    Ok(Plan::Step(
        Op::Exec(fields),
        Next::new(move |reply| {
            let x = match reply {
                OpResult::Exec(x) => x,
                other => return failed(reply_error(&other).unwrap_or_default()),
            };
            let (stdout, stderr) = texts(&x);
            if x.rc != 0 {
                let mut out =
                    TaskOutcome::failed(format!("Unable to install package: {}", stderr.trim()));
                add_output(&mut out.data, &x);
                return Ok(Plan::Done(out));
            }
            let field = |name: &str| deb_depends::field(&stdout, name);
            let (name, deb_version) = (field("Package"), field("Version"));
            let depends =
                deb_depends::parse(&format!("{}, {}", field("Pre-Depends"), field("Depends")));
            let recommends = if request.install_recommends == Some(true) {
                deb_depends::parse(&field("Recommends"))
            } else {
                Vec::new()
            };
            let mut names = vec![name.clone()];
            names.extend(deb_depends::names(&depends));
            names.extend(deb_depends::names(&recommends));
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            Ok(Plan::Step(
                Op::Exec(dpkg_query(&names)),
                Next::new(move |reply| {
                    let known = match reply {
                        OpResult::Exec(x) => {
                            dpkg_status::parse_query(&String::from_utf8_lossy(&x.stdout))
                        }
                        other => return failed(reply_error(&other).unwrap_or_default()),
                    };
                    let installed = known.get(&name).filter(|k| k.installed);
                    if installed.is_some_and(|k| version::compare(&k.version, &deb_version).is_eq())
                    {
                        let mut out = TaskOutcome::default();
                        out.data.insert("stdout".into(), json!(""));
                        out.data.insert("stderr".into(), json!(""));
                        out.data.insert("stdout_lines".into(), json!([]));
                        out.data.insert("stderr_lines".into(), json!([]));
                        out.data.insert("diff".into(), json!(""));
                        return Ok(Plan::Done(out));
                    }
                    let mut deps = deb_depends::missing(&depends, &known);
                    for extra in deb_depends::missing(&recommends, &known) {
                        if !deps.contains(&extra) {
                            deps.push(extra);
                        }
                    }
                    if deps.is_empty() {
                        return dpkg_install(&request, &deb);
                    }
                    install_dependencies(request, deb, deps, known)
                }),
            ))
        }),
    ))
}

/// apt-get installs `deps` as it installs named packages, apt-mark marks them automatic,
/// then dpkg installs the file; the result shows both outputs, as Ansible's.
fn install_dependencies(
    request: Arc<Request>,
    deb: String,
    deps: Vec<String>,
    known: BTreeMap<String, Known>,
) -> Result<Plan, ModuleError> {
    let for_deps = Arc::new(Request {
        packages: deps.iter().map(|d| PackageSpec::parse(d)).collect(),
        state: "present".into(),
        deb: None,
        ..(*request).clone()
    });
    let probe = Probe {
        known,
        ..Probe::default()
    };
    let cache = Cache::default();
    let installing = install(for_deps, probe, cache)?;
    Ok(after_done(installing, move |deps_out| {
        if deps_out.failed {
            return Ok(Plan::Done(deps_out));
        }
        let mut mark = vec!["/usr/bin/apt-mark".to_string(), "auto".to_string()];
        mark.extend(deps.iter().cloned());
        let line = mark.join(" ");
        Ok(Plan::Step(
            Op::Exec(plain_exec(mark)),
            Next::new(move |reply| match reply {
                OpResult::Exec(x) if x.rc == 0 => {
                    Ok(after_done(dpkg_install(&request, &deb)?, move |out| {
                        Ok(Plan::Done(merged(deps_out, out)))
                    }))
                }
                OpResult::Exec(x) => {
                    let mut failed = TaskOutcome::failed(format!("Command '{line}' failed."));
                    add_output(&mut failed.data, &x);
                    failed.data.insert("rc".into(), json!(x.rc));
                    Ok(Plan::Done(failed))
                }
                other => failed(reply_error(&other).unwrap_or_default()),
            }),
        ))
    }))
}

/// dpkg's result after apt-get's for the dependencies: stdout and stderr each apt-get's
/// then dpkg's, and dpkg's output after the prepared diff.
fn merged(deps: TaskOutcome, mut out: TaskOutcome) -> TaskOutcome {
    let text = |o: &TaskOutcome, key: &str| {
        o.data
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let dpkg_stdout = text(&out, "stdout");
    for key in ["stdout", "stderr"] {
        let joined = text(&deps, key) + &text(&out, key);
        out.data.insert(
            format!("{key}_lines"),
            json!(joined.lines().collect::<Vec<_>>()),
        );
        out.data.insert(key.into(), json!(joined));
    }
    if let Some(Value::Object(diff)) = deps.data.get("diff")
        && let Some(prepared) = diff.get("prepared").and_then(Value::as_str)
    {
        out.data.insert(
            "diff".into(),
            json!({"prepared": format!("{prepared}\n\n{dpkg_stdout}")}),
        );
    }
    out
}

/// The plan, then `then` on the outcome it ends with.
fn after_done(
    plan: Plan,
    then: impl FnOnce(TaskOutcome) -> Result<Plan, ModuleError> + Send + Sync + 'static,
) -> Plan {
    match plan {
        Plan::Done(out) => match then(out) {
            Ok(plan) => plan,
            Err(error) => Plan::Done(TaskOutcome::from_error(error)),
        },
        Plan::Step(op, next) => {
            Plan::Step(op, next.and_then(move |plan| Ok(after_done(plan, then))))
        }
        Plan::Flow(flow) => Plan::Flow(crate::modules::flow::and_then(flow, move |plan| {
            Ok(after_done(plan, then))
        })),
        Plan::Remote(op) => Plan::Remote(op),
    }
}

fn dpkg_install(request: &Request, deb: &str) -> Result<Plan, ModuleError> {
    let mut options: Vec<String> = request
        .dpkg_option_names
        .split(',')
        .map(|o| format!("--{o}"))
        .collect();
    if request.check {
        options.push("--simulate".into());
    }
    if request.force {
        options.push("--force-all".into());
    }
    let line = format!("dpkg {} -i {deb}", options.join(" "));
    run_simple(line.clone(), request.policy_rc_d, move |x, stdout, _| {
        let mut out = TaskOutcome::default();
        add_output(&mut out.data, x);
        if x.rc != 0 {
            out.failed = true;
            out.msg = Some(format!("{line} failed"));
        } else {
            out.changed = true;
            // Ansible shows dpkg's output as the diff whether or not --diff asked.
            out.data.insert(
                "diff".into(),
                json!({"prepared": apt_get::prepared_diff(stdout)}),
            );
        }
        out
    })
}
