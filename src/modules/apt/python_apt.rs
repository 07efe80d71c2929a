//! What Ansible's apt needs before it does anything: the Python `apt` library
//! (python3-apt) where the system's Python sees it. Without it, Ansible's module fails in
//! check mode, fails when `auto_install_module_deps` is false, and else installs it with
//! apt-get (after `apt-get update`, unless the task says `update_cache: false`) and goes
//! on. turbo-play reads dpkg and runs apt-get itself, but a host Ansible's module refuses
//! is refused here too, and one it would change gets the same package.
//!
//! The library is looked for where Debian's python3-apt puts it (a `Stat` in the module's
//! first batch, which also runs in check mode).

use serde_json::{Value, json};
use turbo_proto::{Command, Exec, Op, OpResult};

use super::apt_get::{self, APT_GET};
use super::{ModuleError, Next, Plan, TaskOutcome};
use crate::modules::system_library;

const PACKAGE: &str = "python3-apt";

/// Where python3-apt installs the library for every Python 3 of the system.
const LIBRARY: &str = "/usr/lib/python3/dist-packages/apt/__init__.py";

/// The interpreters Ansible's module probes for the library.
const INTERPRETERS: &str = "['/usr/bin/python3', '/usr/bin/python']";

/// The look for the library, first in the module's first batch.
pub(super) fn probe() -> Op {
    system_library::probe(LIBRARY)
}

pub(super) use crate::modules::system_library::found;

/// How the library gets installed: the task's settings that Ansible's auto-install reads.
pub(super) struct AutoInstall<'a> {
    pub enabled: bool,
    pub check: bool,
    /// `update_cache` as the task gives it: only an explicit false skips the update.
    pub update_cache: Option<bool>,
    pub dpkg_options: &'a str,
    pub install_recommends: Option<bool>,
    /// The target's Python, named in the final failure.
    pub python: &'a str,
}

type Then = Box<dyn FnOnce() -> Result<Plan, ModuleError> + Send + Sync>;

/// The library is missing: fail as Ansible's module does, or install it and go on with
/// `then` (which looks again), its result carrying Ansible's warning.
pub(super) fn missing(how: AutoInstall, then: Then) -> Result<Plan, ModuleError> {
    if how.check {
        return failed(format!(
            "{PACKAGE} must be installed to use check mode. If run normally this module can auto-install it, see the auto_install_module_deps option."
        ));
    }
    if !how.enabled {
        return Ok(cannot_import(how.python));
    }
    let mut install = vec![
        APT_GET.to_string(),
        "install".into(),
        PACKAGE.into(),
        "-y".into(),
        "-q".into(),
    ];
    install.extend(crate::shell_words::split(how.dpkg_options).map_err(ModuleError::Invalid)?);
    match how.install_recommends {
        Some(false) => install.extend(["-o".into(), "APT::Install-Recommends=no".into()]),
        Some(true) => install.extend(["-o".into(), "APT::Install-Recommends=yes".into()]),
        None => {}
    }
    let install_step = move || {
        Ok(Plan::Step(
            apt_exec(install),
            Next::new(move |reply| match checked(reply) {
                Ok(()) => then(),
                Err(out) => Ok(Plan::Done(*out)),
            }),
        ))
    };
    let (warning, plan) = if how.update_cache == Some(false) {
        (
            format!("Auto-installing missing dependency without updating cache: {PACKAGE}"),
            install_step()?,
        )
    } else {
        (
            format!("Updating cache and auto-installing missing dependency: {PACKAGE}"),
            Plan::Step(
                apt_exec(vec![APT_GET.into(), "update".into()]),
                Next::new(move |reply| match checked(reply) {
                    Ok(()) => install_step(),
                    Err(out) => Ok(Plan::Done(*out)),
                }),
            ),
        )
    };
    Ok(warning_after(plan, warning))
}

/// Ansible's last word when the library is still not there: it names the interpreter and
/// its version, which one more command asks.
pub(super) fn cannot_import(python: &str) -> Plan {
    let ask = Op::Exec(Exec::plain(Command::Argv(vec![
        python.to_string(),
        "-c".into(),
        "import sys; print(sys.executable); print(sys.version.replace('\\n', ''))".into(),
    ])));
    let python = python.to_string();
    Plan::Step(
        ask,
        Next::new(move |reply| {
            let (executable, version) = match &reply {
                OpResult::Exec(x) if x.rc == 0 => {
                    let text = String::from_utf8_lossy(&x.stdout).into_owned();
                    let mut lines = text.lines();
                    (
                        lines.next().unwrap_or(&python).to_string(),
                        lines.next().unwrap_or_default().to_string(),
                    )
                }
                _ => (python, String::new()),
            };
            failed(cannot_import_message(&executable, &version))
        }),
    )
}

pub(super) fn cannot_import_message(executable: &str, version: &str) -> String {
    format!(
        "Could not import the {PACKAGE} module using {executable} ({version}). Ensure {PACKAGE} package is installed (either manually or via the auto_install_module_deps option) or that you have specified the correct ansible_python_interpreter. (attempted {INTERPRETERS})."
    )
}

fn apt_exec(argv: Vec<String>) -> Op {
    Op::Exec(Exec {
        env: apt_get::environment(),
        ..Exec::plain(Command::Argv(argv))
    })
}

/// `run_command(..., check_rc=True)`: a command that fails ends the task with its output.
fn checked(reply: OpResult) -> Result<(), Box<TaskOutcome>> {
    match reply {
        OpResult::Exec(x) if x.rc == 0 => Ok(()),
        OpResult::Exec(x) => {
            let stdout = String::from_utf8_lossy(&x.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&x.stderr).into_owned();
            let mut out = TaskOutcome::failed(stderr.trim_end().to_string());
            out.data.insert("rc".into(), json!(x.rc));
            out.data.insert("stdout".into(), json!(stdout));
            out.data.insert("stderr".into(), json!(stderr));
            Err(Box::new(out))
        }
        other => Err(Box::new(super::super::unexpected("apt", other))),
    }
}

/// The plan with `warning` among the warnings of the result it ends with.
fn warning_after(plan: Plan, warning: String) -> Plan {
    match plan {
        Plan::Done(mut out) => {
            let warnings = out
                .data
                .entry("warnings")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = warnings {
                list.insert(0, json!(warning));
            }
            Plan::Done(out)
        }
        Plan::Step(op, next) => Plan::Step(
            op,
            next.and_then(move |plan| Ok(warning_after(plan, warning))),
        ),
        Plan::Flow(flow) => Plan::Flow(crate::modules::flow::and_then(flow, move |plan| {
            Ok(warning_after(plan, warning))
        })),
        Plan::Remote(op) => Plan::Remote(op),
    }
}

fn failed(msg: String) -> Result<Plan, ModuleError> {
    Ok(Plan::Done(TaskOutcome::failed(msg)))
}
