//! `pip`: Python packages in a virtualenv or an interpreter's environment, as ansible-core
//! 2.21's pip module installs, upgrades and removes them.
//!
//! Unlike Ansible, which always starts pip, the installed distributions are looked at
//! first: a virtualenv's `.dist-info` directories are listed by the agent (no process at
//! all), an interpreter's environment is reported by one short run of that interpreter
//! ([`installed::PROBE_SCRIPT`]). When every requested package is already there in a
//! satisfying version (`present`), or none is (`absent`), the task ends unchanged without
//! pip; otherwise all names go to one pip call, whose output says what changed, as in
//! Ansible.

mod installed;
mod requirement;

use std::path::Path;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use turbo_proto::{Command, Exec, FileKind, Op, OpResult};

use super::spec::{Arg, Elem, Spec};
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome};
use installed::{Installed, PROBE_SCRIPT, Probe, includes_system_site_packages};
use requirement::{Package, is_vcs_url, plain_requirements_file, recover_package_names};

pub struct Pip;

static SPEC: Spec = Spec::new(&[
    Arg::bool("break_system_packages").default_bool(false),
    Arg::path("chdir"),
    Arg::bool("editable").default_bool(false),
    Arg::path("executable"),
    Arg::str("extra_args"),
    Arg::list("name", Elem::Str),
    Arg::str("requirements"),
    Arg::str("state").default_str("present").choices(&[
        "present",
        "absent",
        "latest",
        "forcereinstall",
    ]),
    Arg::str("umask"),
    Arg::str("version"),
    Arg::path("virtualenv"),
    Arg::path("virtualenv_command").default_str("virtualenv"),
    Arg::str("virtualenv_python"),
    Arg::bool("virtualenv_site_packages").default_bool(false),
])
.required_one_of(&[&["name", "requirements"]])
.mutually_exclusive(&[
    &["name", "requirements"],
    &["executable", "virtualenv"],
    &["editable", "requirements"],
]);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Present,
    Absent,
    Latest,
    ForceReinstall,
}

impl State {
    /// Ansible's `state_map`: the pip subcommand and its flags.
    fn pip_args(self) -> &'static [&'static str] {
        match self {
            State::Present => &["install"],
            State::Absent => &["uninstall", "-y"],
            State::Latest => &["install", "-U"],
            State::ForceReinstall => &["install", "-U", "--force-reinstall"],
        }
    }
}

/// Everything the steps of one task share.
#[derive(Debug, Clone)]
struct Job {
    state: State,
    packages: Vec<Package>,
    requirements: Option<String>,
    /// A name is a VCS URL (`git+...`): with requirements, "changed" is whether pip's list
    /// of installed distributions changed, as in Ansible.
    has_vcs: bool,
    extra_args: Vec<String>,
    editable: bool,
    break_system_packages: bool,
    /// The virtualenv as Ansible joins it with `chdir`, `~` still unexpanded.
    virtualenv: Option<String>,
    executable: Option<String>,
    chdir: String,
    umask: Option<u32>,
    check: bool,
    venv_command: String,
    virtualenv_python: Option<String>,
    virtualenv_site_packages: bool,
    /// The result's echo of the task's arguments.
    name: Value,
    version: Value,
    state_name: String,
}

/// Where the target said the environment is and what is in it.
struct Environment {
    /// The pip command (`<venv>/bin/pip3`, or `python -m pip`).
    pip: Vec<String>,
    /// The virtualenv, `~` expanded by the target.
    virtualenv: Option<String>,
    installed: Option<Installed>,
    /// pip will refuse to touch it (PEP 668).
    externally_managed: bool,
    /// A virtualenv that sees the system's distributions too: one missing from it may be
    /// there, which only pip knows.
    system_site_packages: bool,
    requirements_text: Option<String>,
}

impl Module for Pip {
    fn name(&self) -> &'static str {
        "pip"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// Its probes (a process for the system's Python) run in check mode too, as Ansible's
    /// `pip list` does; every step that would change something stops first in check mode.
    fn caps(&self) -> super::Caps {
        super::Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let job = Arc::new(Job::new(args, ctx.check_mode)?);
        match &job.virtualenv {
            Some(env) => {
                let ops = venv_probe(env, job.requirements_path().as_deref());
                let job = job.clone();
                Ok(Plan::Step(
                    Op::Batch(ops),
                    Next::new(move |reply| job.after_venv_probe(reply)),
                ))
            }
            None if job.executable.is_some() => job.without_probe(),
            None => {
                let mut ops = vec![Op::Exec(job.exec(vec![
                    "python3".into(),
                    "-c".into(),
                    PROBE_SCRIPT.into(),
                ]))];
                if let Some(path) = job.requirements_path() {
                    ops.push(read(&path));
                }
                let job = job.clone();
                Ok(Plan::Step(
                    Op::Batch(ops),
                    Next::new(move |reply| job.after_system_probe(reply)),
                ))
            }
        }
    }
}

fn read(path: &str) -> Op {
    Op::ReadFile {
        path: path.to_string(),
        offset: 0,
        limit: Some(1 << 20),
    }
}

/// One round trip, nothing started: the virtualenv's activate script (Ansible's test of
/// whether it exists), its pips, its config and its site-packages' entries.
fn venv_probe(env: &str, requirements: Option<&str>) -> Vec<Op> {
    let stat = |rel: &str| Op::Stat {
        path: format!("{env}/{rel}"),
        checksum: None,
        follow: true,
    };
    let mut ops = vec![
        stat("bin/activate"),
        stat("bin/pip3"),
        stat("bin/pip"),
        read(&format!("{env}/pyvenv.cfg")),
        Op::ListTree {
            path: format!("{env}/lib"),
            max_depth: Some(3),
            follow: false,
            checksum: None,
        },
    ];
    if let Some(path) = requirements {
        ops.push(read(path));
    }
    ops
}

fn invalid(msg: impl Into<String>) -> ModuleError {
    ModuleError::Invalid(msg.into())
}

/// Python's `os.path.join` of two paths.
fn join(dir: &str, path: &str) -> String {
    if path.starts_with('/') || dir.is_empty() {
        path.to_string()
    } else if dir.ends_with('/') {
        format!("{dir}{path}")
    } else {
        format!("{dir}/{path}")
    }
}

/// Ansible's `_is_venv_command`: `pyvenv`, or an interpreter given `-m venv`.
fn is_venv_command(argv: &[String]) -> bool {
    if argv.first().is_some_and(|a| a == "pyvenv") {
        return true;
    }
    let mut words = argv.iter().skip(1);
    while let Some(word) = words.next() {
        let module = match word.as_str() {
            "-m" => words.next().map(String::as_str),
            w => w.strip_prefix("-m").map(|m| m.trim_start_matches('=')),
        };
        if let Some(module) = module {
            return module == "venv";
        }
    }
    false
}

/// pip options that change neither where packages go nor which count as installed, so the
/// installed distributions decide alone; any other option leaves the decision to pip.
const NEUTRAL_FLAGS: &[&str] = &[
    "--no-index",
    "--pre",
    "--no-cache-dir",
    "--disable-pip-version-check",
    "-q",
    "--quiet",
    "-v",
    "--verbose",
    "--no-deps",
    "--no-build-isolation",
    "--prefer-binary",
    "--no-color",
    "--no-input",
    "--no-warn-script-location",
    "--break-system-packages",
];
const NEUTRAL_WITH_VALUE: &[&str] = &[
    "-f",
    "--find-links",
    "-i",
    "--index-url",
    "--extra-index-url",
    "--trusted-host",
    "--timeout",
    "--retries",
    "--proxy",
    "--only-binary",
    "--no-binary",
    "--progress-bar",
    "--cache-dir",
];

fn neutral_extra_args(words: &[String]) -> bool {
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let (option, inline_value) = match word.split_once('=') {
            Some((o, _)) if o.starts_with("--") => (o, true),
            _ => (word.as_str(), false),
        };
        if NEUTRAL_FLAGS.contains(&option) && !inline_value {
            continue;
        }
        if NEUTRAL_WITH_VALUE.contains(&option) {
            if !inline_value && words.next().is_none() {
                return false;
            }
            continue;
        }
        return false;
    }
    true
}

/// The agent's message for a command that ran and failed (any other is its spawn error).
const NON_ZERO: &str = "The command exited with a non-zero return code.";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl Job {
    fn new(args: &Args, check: bool) -> Result<Job, ModuleError> {
        let umask = match args.str("umask") {
            None | Some("") => None,
            Some(text) => Some(
                u32::from_str_radix(text.trim(), 8)
                    .map_err(|_| invalid("umask must be an octal integer"))?,
            ),
        };
        let state = match args.str("state").unwrap_or("present") {
            "absent" => State::Absent,
            "latest" => State::Latest,
            "forcereinstall" => State::ForceReinstall,
            _ => State::Present,
        };
        let version = args.str("version").map(str::to_string);
        if state == State::Latest && version.is_some() {
            return Err(invalid("version is incompatible with state=latest"));
        }
        let names = args.str_list("name");
        let mut packages: Vec<Package> = if names.is_empty() {
            Vec::new()
        } else {
            recover_package_names(&names)
                .iter()
                .map(|n| Package::parse(n))
                .collect()
        };
        if let Some(version) = &version
            && !packages.is_empty()
        {
            if packages.len() > 1 {
                return Err(invalid(
                    "'version' argument is ambiguous when installing multiple package distributions. Please specify version restrictions next to each package in 'name' argument.",
                ));
            }
            if packages[0].has_specifier() {
                return Err(invalid(
                    "The 'version' argument conflicts with any version specifier provided along with a package name. Please keep the version specifier, but remove the 'version' argument.",
                ));
            }
            packages[0] = packages[0].with_version(version);
        }
        let extra_args = match args.str("extra_args") {
            Some(line) => crate::shell_words::split(line).map_err(ModuleError::Invalid)?,
            None => Vec::new(),
        };
        let chdir = args.str("chdir").map(str::to_string);
        let virtualenv = args.str("virtualenv").map(|env| match &chdir {
            Some(dir) => join(dir, env),
            None => env.to_string(),
        });
        let has_vcs = names.iter().any(|n| is_vcs_url(n));
        Ok(Job {
            state,
            packages,
            requirements: args.str("requirements").map(str::to_string),
            has_vcs,
            extra_args,
            editable: args.bool("editable"),
            break_system_packages: args.bool("break_system_packages"),
            virtualenv,
            executable: args.str("executable").map(str::to_string),
            // Ansible runs pip in the temporary directory when no chdir is given.
            chdir: chdir.unwrap_or_else(|| "/tmp".into()),
            umask,
            check,
            venv_command: args
                .str("virtualenv_command")
                .unwrap_or("virtualenv")
                .into(),
            virtualenv_python: args.str("virtualenv_python").map(str::to_string),
            virtualenv_site_packages: args.bool("virtualenv_site_packages"),
            name: args.raw("name").cloned().unwrap_or(Value::Null),
            version: version.map_or(Value::Null, Value::String),
            state_name: args.str("state").unwrap_or("present").into(),
        })
    }

    /// The requirements file, where pip will look for it (relative to chdir), when a
    /// plain one could let the installed distributions decide.
    fn requirements_path(&self) -> Option<String> {
        let path = self.requirements.as_ref()?;
        (self.state == State::Present && !self.check).then(|| join(&self.chdir, path))
    }

    fn exec(&self, argv: Vec<String>) -> Exec {
        let mut env = Vec::new();
        if self.break_system_packages {
            // As Ansible: the variable, which pips before 23.0.1 ignore, not the option
            // they would reject.
            env.push(("PIP_BREAK_SYSTEM_PACKAGES".to_string(), "1".to_string()));
        }
        Exec {
            command: Command::Argv(argv),
            chdir: Some(self.chdir.clone()),
            creates: None,
            removes: None,
            env,
            stdin: None,
            umask: self.umask,
        }
    }

    /// pip's full command line, as the result's `cmd` shows it.
    fn pip_command(&self, pip: &[String]) -> Vec<String> {
        let mut cmd: Vec<String> = pip.to_vec();
        cmd.extend(self.state.pip_args().iter().map(|s| s.to_string()));
        cmd.extend(self.extra_args.iter().cloned());
        if !self.packages.is_empty() {
            for package in &self.packages {
                if self.editable {
                    cmd.push("-e".into());
                }
                cmd.push(package.to_string());
            }
        } else if let Some(requirements) = &self.requirements {
            cmd.push("-r".into());
            cmd.push(requirements.clone());
        }
        cmd
    }

    /// With `executable` (whose environment only pip knows) or in check mode outside a
    /// virtualenv (where the agent starts nothing): pip, or Ansible's check-mode answer.
    fn without_probe(&self) -> Result<Plan, ModuleError> {
        let pip = match &self.executable {
            Some(exe) => vec![exe.clone()],
            None => vec!["python3".into(), "-m".into(), "pip".into()],
        };
        if self.check {
            if let Some(done) = self.check_mode_shortcut() {
                return Ok(done);
            }
            // Reading an interpreter's environment takes a process, which check mode does
            // not start: say it would change, as Ansible does whenever it cannot tell.
            let mut out = TaskOutcome {
                changed: true,
                ..TaskOutcome::default()
            };
            out.data.insert(
                "warnings".into(),
                json!([
                    "turbo-play looks into a Python environment without starting a process only for a virtualenv; in check mode this task reports changed"
                ]),
            );
            return Ok(Plan::Done(out));
        }
        self.run_pip(Environment {
            pip,
            virtualenv: None,
            installed: None,
            externally_managed: false,
            system_site_packages: false,
            requirements_text: None,
        })
    }

    /// Ansible's check mode says changed without looking whenever extra arguments, a
    /// requirements file or `latest` could change anything.
    fn check_mode_shortcut(&self) -> Option<Plan> {
        let cannot_tell = !self.extra_args.is_empty()
            || self.requirements.is_some()
            || self.state == State::Latest
            || self.packages.is_empty();
        cannot_tell.then(|| {
            Plan::Done(TaskOutcome {
                changed: true,
                ..TaskOutcome::default()
            })
        })
    }

    fn after_venv_probe(self: Arc<Self>, reply: OpResult) -> Result<Plan, ModuleError> {
        let results = match reply {
            OpResult::Batch(results) if results.len() >= 5 => results,
            OpResult::Error(e) => return Ok(Plan::Done(TaskOutcome::failed(e.message))),
            other => return Ok(Plan::Done(super::unexpected("pip", other))),
        };
        let stat = |i: usize| match &results[i] {
            OpResult::Stat(s) => Some(s.clone()),
            _ => None,
        };
        let activate = stat(0);
        let env_path = activate
            .as_ref()
            .and_then(|s| s.path.strip_suffix("/bin/activate").map(str::to_string))
            .or_else(|| self.virtualenv.clone());
        let exists = activate.is_some_and(|s| s.exists);
        if !exists {
            return self.create_venv(env_path.unwrap_or_default());
        }
        let pip = [stat(1), stat(2)]
            .into_iter()
            .flatten()
            .find(|s| s.exists && s.executable)
            .map(|s| s.path);
        let Some(pip) = pip else {
            return Ok(Plan::Done(TaskOutcome::failed(format!(
                "Unable to find pip in the virtualenv, {}, under any of these names: pip3, pip. Make sure pip is present in the virtualenv.",
                env_path.clone().unwrap_or_default()
            ))));
        };
        let cfg = match &results[3] {
            OpResult::Read(r) => text(&r.data),
            _ => String::new(),
        };
        let installed = match &results[4] {
            OpResult::Tree(tree) => Some(Installed::from_metadata_dirs(
                tree.entries
                    .iter()
                    .filter(|e| e.kind == FileKind::Directory)
                    .map(|e| Path::new(&e.path))
                    .filter(|p| {
                        p.parent()
                            .and_then(Path::file_name)
                            .is_some_and(|d| d == "site-packages" || d == "dist-packages")
                    })
                    .filter_map(|p| p.file_name()?.to_str()),
            )),
            _ => None,
        };
        let requirements_text = results.get(5).and_then(requirements_text);
        self.decide(Environment {
            pip: vec![pip],
            virtualenv: env_path,
            installed,
            externally_managed: false,
            system_site_packages: includes_system_site_packages(&cfg),
            requirements_text,
        })
    }

    fn after_system_probe(self: Arc<Self>, reply: OpResult) -> Result<Plan, ModuleError> {
        let results = match reply {
            OpResult::Batch(results) if !results.is_empty() => results,
            OpResult::Error(e) => return Ok(Plan::Done(TaskOutcome::failed(e.message))),
            other => return Ok(Plan::Done(super::unexpected("pip", other))),
        };
        let probe = match &results[0] {
            OpResult::Exec(x) if x.ran && x.rc == 0 => Probe::parse(&text(&x.stdout)),
            _ => None,
        };
        let requirements_text = results.get(1).and_then(requirements_text);
        let Some(probe) = probe else {
            // No python3 that can tell: let pip say what is wrong.
            return self.run_pip(Environment {
                pip: vec!["python3".into(), "-m".into(), "pip".into()],
                virtualenv: None,
                installed: None,
                externally_managed: false,
                system_site_packages: false,
                requirements_text: None,
            });
        };
        let pip = if probe.has_pip {
            vec![probe.executable.clone(), "-m".into(), "pip".into()]
        } else {
            vec!["pip3".into()]
        };
        self.decide(Environment {
            pip,
            virtualenv: None,
            installed: Some(probe.installed),
            externally_managed: probe.externally_managed,
            system_site_packages: false,
            requirements_text,
        })
    }

    /// Whether the installed distributions settle the task, pip unstarted.
    fn decide(&self, env: Environment) -> Result<Plan, ModuleError> {
        // `name: []` and no requirements, the environment already there: nothing to do.
        if self.packages.is_empty() && self.requirements.is_none() {
            let mut out = TaskOutcome::default();
            out.data.insert(
                "warnings".into(),
                json!(["No valid name or requirements file found."]),
            );
            return Ok(Plan::Done(out));
        }
        let Some(installed) = &env.installed else {
            return self.run_pip(env);
        };
        let is_present = |package: &Package| match package {
            Package::Plain(req) => installed
                .version(&req.canonical())
                .is_some_and(|v| req.satisfied_by(v)),
            Package::Other(_) => false,
        };
        if self.check {
            if let Some(done) = self.check_mode_shortcut() {
                return Ok(done);
            }
            if self.packages.iter().any(|p| matches!(p, Package::Other(_))) {
                return self.resolve_then_check(env);
            }
            let changed = self.packages.iter().any(|p| match self.state {
                State::Present => !is_present(p),
                State::Absent => is_present(p),
                _ => false,
            });
            Ok(Plan::Done(self.check_outcome(
                &env,
                installed,
                changed,
                Vec::new(),
            )))
        } else {
            self.decide_for_real(env)
        }
    }

    /// Ansible's `_resolve_package_names` in check mode: packages given as VCS URLs,
    /// paths or archives are named by pip itself (`install --dry-run --report`, pip 24.1
    /// and later; an older pip leaves them unnamed, with Ansible's warning), then looked
    /// for among the installed ones.
    fn resolve_then_check(&self, env: Environment) -> Result<Plan, ModuleError> {
        let others: Vec<String> = self
            .packages
            .iter()
            .filter_map(|p| match p {
                Package::Other(text) => Some(text.clone()),
                Package::Plain(_) => None,
            })
            .collect();
        let quote = |w: &str| format!("'{}'", w.replace('\'', "'\"'\"'"));
        let pip: Vec<String> = env.pip.iter().map(|w| quote(w)).collect();
        let pip = pip.join(" ");
        let wanted: Vec<String> = others.iter().map(|w| quote(w)).collect();
        let script = format!(
            "v=$({pip} --version 2>/dev/null | sed -n 's/^pip \\([^ ]*\\).*/\\1/p')\n\
             echo \"pip $v\"\n\
             t=$(mktemp) || exit 1\n\
             {pip} install --dry-run --ignore-installed --report=\"$t\" {} >&2; rc=$?\n\
             cat \"$t\"; rm -f \"$t\"; exit $rc\n",
            wanted.join(" ")
        );
        let mut exec = self.exec(Vec::new());
        exec.command = Command::Shell {
            script,
            executable: None,
        };
        let mut dry_run = env.pip.clone();
        dry_run.extend([
            "install".into(),
            "--dry-run".into(),
            "--ignore-installed".into(),
        ]);
        let job = Arc::new(self.clone());
        Ok(Plan::Step(
            Op::Exec(exec),
            Next::new(move |reply| {
                let OpResult::Exec(x) = reply else {
                    return Ok(Plan::Done(super::unexpected("pip", reply)));
                };
                let out = text(&x.stdout);
                let (first, report) = out.split_once('\n').unwrap_or((&out, ""));
                let version = first.strip_prefix("pip ").unwrap_or_default().trim();
                let installed = env.installed.clone().unwrap_or_default();
                let present = |package: &Package| match package {
                    Package::Plain(req) => installed
                        .version(&req.canonical())
                        .is_some_and(|v| req.satisfied_by(v)),
                    Package::Other(_) => false,
                };
                if crate::pep440::Version::parse(version)
                    .is_some_and(|v| v < crate::pep440::Version::parse("24.1").expect("a version"))
                {
                    let changed = job.packages.iter().any(|p| match job.state {
                        State::Present => !present(p),
                        State::Absent => present(p),
                        _ => false,
                    });
                    let warning = "Using check mode with packages from vcs urls, file paths, or archives will not behave as expected when using pip versions <24.1.";
                    return Ok(Plan::Done(job.check_outcome(
                        &env,
                        &installed,
                        changed,
                        vec![warning],
                    )));
                }
                if x.rc != 0 {
                    let err = text(&x.stderr);
                    let mut failed = TaskOutcome::failed(err.trim_end().to_string());
                    failed.data.insert("cmd".into(), json!(dry_run));
                    failed.data.insert("rc".into(), json!(x.rc));
                    failed.data.insert("stdout".into(), json!(""));
                    failed.data.insert("stderr".into(), json!(err));
                    return Ok(Plan::Done(failed));
                }
                let resolved = requirement::resolved_from_report(report);
                let plain = job
                    .packages
                    .iter()
                    .filter(|p| matches!(p, Package::Plain(_)));
                let changed = plain.chain(resolved.iter()).any(|p| match job.state {
                    State::Present => !present(p),
                    State::Absent => present(p),
                    _ => false,
                });
                Ok(Plan::Done(job.check_outcome(
                    &env,
                    &installed,
                    changed,
                    Vec::new(),
                )))
            }),
        ))
    }

    /// Ansible's check-mode result: changed or not, with `pip list`'s command and output.
    fn check_outcome(
        &self,
        env: &Environment,
        installed: &Installed,
        changed: bool,
        warnings: Vec<&str>,
    ) -> TaskOutcome {
        {
            let mut list_cmd = env.pip.clone();
            list_cmd.extend(["list".into(), "--format=freeze".into()]);
            let freeze: String = installed
                .versions
                .iter()
                .map(|(n, v)| format!("{n}=={v}\n"))
                .collect();
            let mut data = Map::new();
            data.insert("cmd".into(), json!(list_cmd.join(" ")));
            data.insert("stdout".into(), json!(freeze));
            data.insert("stderr".into(), json!(""));
            if !warnings.is_empty() {
                data.insert("warnings".into(), json!(warnings));
            }
            TaskOutcome {
                changed,
                data,
                ..TaskOutcome::default()
            }
        }
    }

    /// Outside check mode: settled by what is installed, or pip runs.
    fn decide_for_real(&self, env: Environment) -> Result<Plan, ModuleError> {
        let Some(installed) = &env.installed else {
            return self.run_pip(env);
        };
        let is_present = |package: &Package| match package {
            Package::Plain(req) => installed
                .version(&req.canonical())
                .is_some_and(|v| req.satisfied_by(v)),
            Package::Other(_) => false,
        };
        let pip_refuses = env.externally_managed
            && !self.break_system_packages
            && !self
                .extra_args
                .iter()
                .any(|a| a == "--break-system-packages");
        let decidable = !self.editable && !pip_refuses && neutral_extra_args(&self.extra_args);
        let settled = decidable
            && match self.state {
                State::Present if !self.packages.is_empty() => self.packages.iter().all(is_present),
                State::Present => env
                    .requirements_text
                    .as_deref()
                    .and_then(plain_requirements_file)
                    .is_some_and(|reqs| {
                        reqs.iter().all(|r| is_present(&Package::Plain(r.clone())))
                    }),
                State::Absent if !env.system_site_packages => {
                    self.packages.iter().all(|p| match p {
                        Package::Plain(req) => installed.version(&req.canonical()).is_none(),
                        Package::Other(_) => false,
                    })
                }
                _ => false,
            };
        if settled {
            let cmd = self.pip_command(&env.pip);
            return Ok(Plan::Done(self.outcome(
                false,
                json!(cmd),
                env.virtualenv.as_deref(),
                String::new(),
                String::new(),
            )));
        }
        self.run_pip(env)
    }

    /// A missing virtualenv is made first (in check mode Ansible only says so).
    fn create_venv(self: Arc<Self>, env: String) -> Result<Plan, ModuleError> {
        if self.check {
            return Ok(Plan::Done(TaskOutcome {
                changed: true,
                ..TaskOutcome::default()
            }));
        }
        let mut cmd =
            crate::shell_words::split(&self.venv_command).map_err(ModuleError::Invalid)?;
        if cmd.is_empty() {
            return Err(invalid("virtualenv_command is empty"));
        }
        if self.virtualenv_site_packages {
            cmd.push("--system-site-packages".into());
        }
        if !is_venv_command(&cmd) {
            cmd.push(format!(
                "-p{}",
                self.virtualenv_python.as_deref().unwrap_or("python3")
            ));
        } else if self.virtualenv_python.is_some() {
            return Err(invalid(
                "virtualenv_python should not be used when using the venv module or pyvenv as virtualenv_command",
            ));
        }
        cmd.push(env.clone());
        let op = Op::Exec(self.exec(cmd.clone()));
        Ok(Plan::Step(
            op,
            Next::new(move |reply| {
                let OpResult::Exec(x) = reply else {
                    return Ok(Plan::Done(super::unexpected("pip", reply)));
                };
                let (out, err) = (text(&x.stdout), text(&x.stderr));
                if x.rc != 0 {
                    let err = if err.is_empty() && !x.msg.is_empty() && x.rc == 2 {
                        x.msg.clone()
                    } else {
                        err
                    };
                    return Ok(Plan::Done(failure(json!(cmd), &out, &err)));
                }
                if self.packages.is_empty() && self.requirements.is_none() {
                    return Ok(Plan::Done(self.outcome(
                        true,
                        json!(cmd),
                        Some(&env),
                        out,
                        err,
                    )));
                }
                let pip = vec![format!("{env}/bin/pip3")];
                self.pip_step(pip, Some(env), true, out, err)
            }),
        ))
    }

    fn run_pip(&self, env: Environment) -> Result<Plan, ModuleError> {
        let job = Arc::new(self.clone());
        job.pip_step(env.pip, env.virtualenv, false, String::new(), String::new())
    }

    /// Whether "changed" compares pip's lists of installed distributions from before and
    /// after (requirements or a VCS URL, whose installs pip may report as new each time).
    fn compares_lists(&self) -> bool {
        (self.requirements.is_some() || self.has_vcs) && self.state != State::Absent
    }

    /// `pip list --format=freeze`, or `pip freeze` for a pip too old for it (Ansible's
    /// `_get_packages`).
    fn list_exec(&self, pip: &[String]) -> Exec {
        let pip = pip
            .iter()
            .map(|w| format!("'{}'", w.replace('\'', "'\"'\"'")))
            .collect::<Vec<_>>()
            .join(" ");
        Exec {
            command: Command::Shell {
                script: format!("{pip} list --format=freeze || {pip} freeze"),
                executable: None,
            },
            env: ["LANG", "LC_ALL", "LC_MESSAGES"]
                .iter()
                .map(|k| (k.to_string(), "C.UTF-8".to_string()))
                .collect(),
            ..self.exec(Vec::new())
        }
    }

    /// The one pip call, with what came before it (a virtualenv's creation) in its output.
    fn pip_step(
        self: Arc<Self>,
        pip: Vec<String>,
        virtualenv: Option<String>,
        venv_created: bool,
        out_before: String,
        err_before: String,
    ) -> Result<Plan, ModuleError> {
        let cmd = self.pip_command(&pip);
        let install = Op::Exec(self.exec(cmd.clone()));
        let compares = self.compares_lists();
        let op = if compares {
            let list = Op::Exec(self.list_exec(&pip));
            Op::Batch(vec![list.clone(), install, list])
        } else {
            install
        };
        Ok(Plan::Step(
            op,
            Next::new(move |reply| {
                let (reply, lists_differ) = match reply {
                    OpResult::Batch(mut results) if compares && results.len() == 3 => {
                        let listed = |r: &OpResult| match r {
                            OpResult::Exec(x) => Some(x.stdout.clone()),
                            _ => None,
                        };
                        let differ = listed(&results[0]) != listed(&results[2]);
                        (results.swap_remove(1), differ)
                    }
                    other => (other, false),
                };
                let OpResult::Exec(x) = reply else {
                    return Ok(Plan::Done(super::unexpected("pip", reply)));
                };
                let (out_pip, err_pip) = (text(&x.stdout), text(&x.stderr));
                let out = format!("{out_before}{out_pip}");
                let err = format!("{err_before}{err_pip}");
                if x.rc == 2 && x.msg != NON_ZERO && out_pip.is_empty() && err_pip.is_empty() {
                    // The program could not be started.
                    let msg = if self.virtualenv.is_none() && self.executable.is_none() {
                        "Unable to find any of pip3 to use.  pip needs to be installed.".into()
                    } else {
                        x.msg.clone()
                    };
                    let mut failed = TaskOutcome::failed(msg);
                    failed.data.insert("cmd".into(), json!(cmd));
                    return Ok(Plan::Done(failed));
                }
                let not_installed =
                    out_pip.contains("not installed") || err_pip.contains("not installed");
                if x.rc != 0 && !(x.rc == 1 && self.state == State::Absent && not_installed) {
                    return Ok(Plan::Done(failure(json!(cmd), &out, &err)));
                }
                let changed = match self.state {
                    State::Absent => out_pip.contains("Successfully uninstalled"),
                    _ if compares => lists_differ,
                    _ => out_pip.contains("Successfully installed"),
                } || venv_created;
                Ok(Plan::Done(self.outcome(
                    changed,
                    json!(cmd),
                    virtualenv.as_deref(),
                    out,
                    err,
                )))
            }),
        ))
    }

    /// Ansible's result: `cmd`, the arguments echoed, pip's output.
    fn outcome(
        &self,
        changed: bool,
        cmd: Value,
        virtualenv: Option<&str>,
        stdout: String,
        stderr: String,
    ) -> TaskOutcome {
        let mut data = Map::new();
        data.insert("cmd".into(), cmd);
        data.insert("name".into(), self.name.clone());
        data.insert("version".into(), self.version.clone());
        data.insert("state".into(), json!(self.state_name));
        data.insert(
            "requirements".into(),
            self.requirements.clone().map_or(Value::Null, Value::String),
        );
        data.insert(
            "virtualenv".into(),
            virtualenv.map_or(Value::Null, |v| json!(v)),
        );
        data.insert("stdout".into(), json!(stdout));
        data.insert("stderr".into(), json!(stderr));
        TaskOutcome {
            changed,
            data,
            ..TaskOutcome::default()
        }
    }
}

fn requirements_text(result: &OpResult) -> Option<String> {
    match result {
        OpResult::Read(r) if r.stat.exists && r.eof => Some(text(&r.data)),
        _ => None,
    }
}

/// Ansible's `_fail`: pip's own output as the message, the command beside it.
fn failure(cmd: Value, out: &str, err: &str) -> TaskOutcome {
    let mut msg = String::new();
    if !out.is_empty() {
        msg.push_str(&format!("stdout: {out}"));
    }
    if !err.is_empty() {
        msg.push_str(&format!("\n:stderr: {err}"));
    }
    let mut failed = TaskOutcome::failed(msg);
    failed.data.insert("cmd".into(), cmd);
    failed
}

#[cfg(test)]
mod tests;
