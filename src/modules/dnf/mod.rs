//! `dnf`, and `yum` (ansible-core redirects it to dnf since 2.17): packages from rpm
//! repositories, through dnf's command line.
//!
//! First one query of rpm's database ([`rpmdb::query_script`]) decides what must change;
//! when nothing must, dnf is never started. Otherwise one dnf run takes every name of the
//! task (`--assumeno` in check mode, which is dnf resolving the transaction and saying no),
//! and its transaction table ([`output::parse`]) becomes Ansible's `results`.

mod output;
mod rpmdb;

use serde_json::{Value, json};
use turbo_proto::{Command, Exec, FactValue, FileKind, Op, OpResult};

use super::spec::{Arg, Elem, Spec, Unknown};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};
use output::{Action, Transcript};
use rpmdb::{Package, Query};

pub struct Dnf;
/// `yum`: the same module under its old name.
pub struct Yum;

/// ansible-core 2.21's `yumdnf_argument_spec` plus dnf's `use_backend`.
static SPEC: Spec = Spec::new(&[
    Arg::bool("allow_downgrade").default_bool(false),
    Arg::bool("allowerasing").default_bool(false),
    Arg::bool("autoremove").default_bool(false),
    Arg::bool("best"),
    Arg::bool("bugfix").default_bool(false),
    Arg::bool("cacheonly").default_bool(false),
    Arg::str("conf_file"),
    Arg::str("disable_excludes"),
    Arg::bool("disable_gpg_check").default_bool(false),
    Arg::list("disable_plugin", Elem::Str),
    Arg::list("disablerepo", Elem::Str),
    Arg::bool("download_only").default_bool(false),
    Arg::str("download_dir"),
    Arg::list("enable_plugin", Elem::Str),
    Arg::list("enablerepo", Elem::Str),
    Arg::list("exclude", Elem::Str),
    Arg::str("installroot").default_str("/"),
    Arg::bool("install_weak_deps").default_bool(true),
    Arg::str("list"),
    Arg::int("lock_timeout")
        .default_int(30)
        .no_effect("dnf's command line waits for its lock itself"),
    Arg::list("name", Elem::Str).aliases(&["pkg"]),
    Arg::bool("nobest"),
    Arg::raw("releasever"),
    Arg::bool("security").default_bool(false),
    Arg::bool("skip_broken").default_bool(false),
    Arg::bool("sslverify").default_bool(true),
    Arg::str("state").choices(&["absent", "installed", "latest", "present", "removed"]),
    Arg::bool("update_cache")
        .default_bool(false)
        .aliases(&["expire-cache"]),
    Arg::bool("update_only").default_bool(false),
    Arg::str("use_backend")
        .default_str("auto")
        .choices(&["auto", "dnf", "yum", "yum4", "dnf4", "dnf5"]),
    Arg::bool("validate_certs")
        .default_bool(true)
        .no_effect("dnf's sslverify is what checks certificates"),
])
.required_one_of(&[&["name", "list", "update_cache"]])
.mutually_exclusive(&[&["name", "list"], &["best", "nobest"]])
// Both names reach Ansible's dnf action, which runs `ansible.legacy.dnf`.
.unknown(Unknown::ModuleAs("ansible.legacy.dnf"));

const CHECK_MODE_MSG: &str = "Check mode: No changes made, but would have if not in check mode";
const SOME_FAILED: &str = "Failed to install some of the specified packages";
const NO_BACKEND: [&str; 2] = [
    "Could not detect which major revision of dnf is in use, which is required to determine module backend.",
    "You should manually specify use_backend to tell the module whether to use the dnf4 or dnf5 backend})",
];
/// English output: the transaction table is read back.
const ENV: [(&str, &str); 2] = [("LC_ALL", "C"), ("LANGUAGE", "")];

impl Module for Dnf {
    fn name(&self) -> &'static str {
        "dnf"
    }
    fn spec(&self) -> &'static Spec {
        &SPEC
    }
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }
    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        plan(args, ctx)
    }
}

impl Module for Yum {
    fn name(&self) -> &'static str {
        "yum"
    }
    fn spec(&self) -> &'static Spec {
        &SPEC
    }
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }
    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        plan(args, ctx)
    }
}

/// What the task asks, read once from its arguments.
#[derive(Debug, Clone)]
struct Request {
    names: Vec<String>,
    state: State,
    autoremove: bool,
    check: bool,
    options: Vec<String>,
    root: String,
    conf_file: Option<String>,
    allow_downgrade: bool,
    download_only: bool,
    update_only: bool,
    update_cache: bool,
    list: Option<String>,
    /// Facts to return: the backend, when it had to be found out on the target.
    pkg_mgr_fact: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Present,
    Latest,
    Absent,
}

fn plan(args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
    let request = request(args, ctx.check_mode)?;
    let request = match request {
        Ok(r) => r,
        Err(outcome) => return Ok(Plan::Done(outcome)),
    };
    match args.str("use_backend").unwrap_or("auto") {
        "auto" | "yum" => {}
        "dnf5" => return Err(ModuleError::NotSupported("use_backend=dnf5")),
        _ => return Ok(begin(request)),
    }
    match known_pkg_mgr(ctx) {
        Some(mgr) => Ok(with_backend(request, &mgr, false)),
        // As Ansible's action plugin: ask the target which package manager it has.
        None => Ok(Plan::Step(
            Op::Facts {
                subsets: vec!["!all".into(), "!min".into(), "pkg_mgr".into()],
            },
            Next::new(move |reply| {
                let mgr = match reply {
                    OpResult::Facts(facts) => facts
                        .into_iter()
                        .find(|(k, _)| k == "pkg_mgr")
                        .and_then(|(_, v)| match v {
                            FactValue::Str(s) => Some(s),
                            _ => None,
                        })
                        .unwrap_or_else(|| "auto".into()),
                    other => return Ok(Plan::Done(unexpected("dnf", other))),
                };
                Ok(with_backend(request, &mgr, true))
            }),
        )),
    }
}

/// The `pkg_mgr` fact, when facts were gathered.
fn known_pkg_mgr(ctx: &PlanContext) -> Option<String> {
    let vars = ctx.vars?;
    let facts = vars.get_attr("ansible_facts").ok()?;
    let mgr = facts.get_attr("pkg_mgr").ok()?;
    mgr.as_str().map(str::to_string)
}

fn with_backend(mut request: Request, mgr: &str, found_here: bool) -> Plan {
    if found_here && mgr != "auto" {
        request.pkg_mgr_fact = Some(mgr.to_string());
    }
    match mgr {
        "yum" | "yum4" | "dnf" | "dnf4" => begin(request),
        "dnf5" => Plan::Done(TaskOutcome::failed(
            "turbo-play does not run dnf5 yet; run this task with ansible-playbook",
        )),
        _ => {
            let mut out = TaskOutcome {
                failed: true,
                ..TaskOutcome::default()
            };
            out.data.insert("msg".into(), json!(NO_BACKEND));
            if let Some(fact) = &request.pkg_mgr_fact {
                out.data
                    .insert("ansible_facts".into(), json!({"pkg_mgr": fact}));
            }
            Plan::Done(out)
        }
    }
}

/// The request, or the outcome Ansible gives before it starts dnf.
fn request(args: &Args, check: bool) -> Result<Result<Request, TaskOutcome>, ModuleError> {
    let listify = |name: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut split = Vec::new();
        for item in args.str_list(name) {
            if item.contains(',') {
                split.extend(item.split(',').map(|s| s.trim().to_string()));
            } else {
                out.push(item.trim().to_string());
            }
        }
        out.extend(split);
        if out == [""] {
            out.clear();
        }
        out
    };
    let names = listify("name");
    if names
        .iter()
        .any(|n| n.contains(' ') && !n.contains(['@', '>', '<', '=']))
    {
        return Ok(Err(TaskOutcome::failed(
            "It appears that a space separated string of packages was passed in as an argument. To operate on several packages, pass a comma separated string of packages or a list of packages.",
        )));
    }
    let autoremove = args.bool("autoremove");
    let state = match args.str("state") {
        None if autoremove => State::Absent,
        None | Some("present" | "installed") => State::Present,
        Some("latest") => State::Latest,
        Some(_) => State::Absent,
    };
    if autoremove && state != State::Absent {
        let mut out = TaskOutcome::failed("Autoremove should be used alone or with state=absent");
        out.data.insert("results".into(), json!([]));
        return Ok(Err(out));
    }
    let root = args.str("installroot").unwrap_or("/").to_string();
    let mut options = vec![format!("--installroot={root}")];
    if let Some(release) = args.raw("releasever") {
        options.push(format!(
            "--releasever={}",
            super::spec::python_text(release)
        ));
    }
    if let Some(conf) = args.str("conf_file") {
        options.push(format!("--config={conf}"));
    }
    if args.bool("disable_gpg_check") {
        options.push("--nogpgcheck".into());
    }
    // Ansible disables before it enables.
    for repo in listify("disablerepo") {
        options.push(format!("--disablerepo={repo}"));
    }
    for repo in listify("enablerepo") {
        options.push(format!("--enablerepo={repo}"));
    }
    for pattern in listify("exclude") {
        options.push(format!("--exclude={pattern}"));
    }
    if let Some(what) = args.str("disable_excludes") {
        options.push(format!("--disableexcludes={what}"));
    }
    for plugin in args.str_list("disable_plugin") {
        options.push(format!("--disableplugin={plugin}"));
    }
    for plugin in args.str_list("enable_plugin") {
        options.push(format!("--enableplugin={plugin}"));
    }
    if args.bool("allowerasing") {
        options.push("--allowerasing".into());
    }
    if args.bool("skip_broken") {
        options.push("--skip-broken".into());
    }
    if args.bool("cacheonly") {
        options.push("--cacheonly".into());
    }
    if args.bool("security") {
        options.push("--security".into());
    }
    if args.bool("bugfix") {
        options.push("--bugfix".into());
    }
    let download_only = args.bool("download_only");
    if download_only {
        options.push("--downloadonly".into());
        if let Some(dir) = args.str("download_dir") {
            options.push(format!("--downloaddir={dir}"));
        }
    }
    match (args.opt_bool("nobest"), args.opt_bool("best")) {
        (Some(nobest), _) => options.push(format!("--setopt=best={}", !nobest)),
        (None, Some(best)) => options.push(format!("--setopt=best={best}")),
        (None, None) => {}
    }
    // Ansible sets these whatever dnf.conf says.
    options.push(format!(
        "--setopt=clean_requirements_on_remove={}",
        if autoremove { "True" } else { "False" }
    ));
    options.push(format!(
        "--setopt=install_weak_deps={}",
        if args.bool("install_weak_deps") {
            "True"
        } else {
            "False"
        }
    ));
    if !args.bool("sslverify") {
        options.push("--setopt=sslverify=False".into());
    }
    Ok(Ok(Request {
        names,
        state,
        autoremove,
        check,
        options,
        root,
        conf_file: args.str("conf_file").map(str::to_string),
        allow_downgrade: args.bool("allow_downgrade"),
        download_only,
        update_only: args.bool("update_only"),
        update_cache: args.bool("update_cache"),
        list: args.str("list").map(str::to_string),
        pkg_mgr_fact: None,
    }))
}

/// Names that are local rpm files on the target.
fn is_file(name: &str) -> bool {
    name.ends_with(".rpm") && !name.contains("://")
}

/// Names only dnf can answer for: groups, environments, URLs, file provides.
fn needs_dnf(name: &str) -> bool {
    name.starts_with('@') || name.starts_with('/') || name.contains("://")
}

fn begin(request: Request) -> Plan {
    if let Some(list) = request.list.clone() {
        return list_plan(request, &list);
    }
    if request.update_cache && request.names.is_empty() {
        let argv = dnf_argv(&request, "makecache", &[]);
        return Plan::Step(
            exec(argv),
            Next::new(move |reply| {
                let x = exec_reply(reply)?;
                let mut out = with_facts(&request, TaskOutcome::default());
                if x.rc != 0 {
                    out.failed = true;
                    out.msg = Some(error_text(&x));
                    out.data.insert("rc".into(), json!(1));
                } else {
                    out.msg = Some("Cache updated".into());
                    out.data.insert("rc".into(), json!(0));
                }
                out.data.insert("results".into(), json!([]));
                Ok(Plan::Done(out))
            }),
        );
    }
    if request.names.is_empty() && request.autoremove {
        return run_dnf(request, Vec::new(), Vec::new(), Vec::new());
    }
    let mut candidates = Vec::new();
    let mut files = Vec::new();
    for name in &request.names {
        if is_file(name) {
            files.push(name.clone());
        } else if !needs_dnf(name) {
            for c in rpmdb::candidate_names(name) {
                if !candidates.contains(&c) {
                    candidates.push(c);
                }
            }
        }
    }
    // The paths Ansible checks before it starts, in the same round trip as the query.
    let mut ops = Vec::new();
    if let Some(conf) = &request.conf_file {
        ops.push(stat(conf));
    }
    ops.push(stat(&request.root));
    let query = !(candidates.is_empty() && files.is_empty());
    if query {
        ops.push(Op::Exec(Exec {
            command: Command::Shell {
                script: rpmdb::query_script(&request.root, &candidates, &files),
                executable: None,
            },
            chdir: None,
            creates: None,
            removes: None,
            env: env(),
            stdin: None,
            umask: None,
        }));
    }
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let OpResult::Batch(mut replies) = reply else {
                return Ok(Plan::Done(unexpected("dnf", reply)));
            };
            replies.reverse();
            let mut next = || {
                replies.pop().ok_or_else(|| {
                    ModuleError::Invalid("internal error: dnf got too few replies".into())
                })
            };
            if let Some(conf) = &request.conf_file
                && !is_kind(next()?, FileKind::File)
            {
                let msg = format!("cannot read configuration file: {conf}");
                return Ok(Plan::Done(refused(&request, &msg)));
            }
            if !is_kind(next()?, FileKind::Directory) {
                let msg = format!("Installroot {} must be a directory", request.root);
                return Ok(Plan::Done(refused(&request, &msg)));
            }
            let found = if query {
                let x = exec_reply(next()?)?;
                rpmdb::parse_query(&String::from_utf8_lossy(&x.stdout))
            } else {
                Query::default()
            };
            Ok(decide(request, found))
        }),
    )
}

fn stat(path: &str) -> Op {
    Op::Stat {
        path: path.to_string(),
        checksum: None,
        follow: true,
    }
}

fn is_kind(reply: OpResult, kind: FileKind) -> bool {
    matches!(reply, OpResult::Stat(s) if s.kind == kind)
}

/// Ansible's answer when dnf's setup refuses before anything is resolved.
fn refused(request: &Request, msg: &str) -> TaskOutcome {
    let mut out = TaskOutcome::failed(msg);
    out.data.insert("results".into(), json!([]));
    out.data.insert("rc".into(), json!(1));
    with_facts(request, out)
}

/// From rpm's answer: done, or which names go to dnf (and what Ansible reports for the
/// names that need nothing).
fn decide(request: Request, query: Query) -> Plan {
    let installed = |name: &str| query.installed.iter().any(|p| rpmdb::matches(name, p));
    let mut to_dnf = Vec::new();
    // Ansible names every local file it was given first, whether or not it installs it.
    let mut results: Vec<String> = match request.state {
        State::Absent => Vec::new(),
        _ => request
            .names
            .iter()
            .filter(|n| is_file(n))
            .map(|n| format!("Installed {n}"))
            .collect(),
    };
    match request.state {
        State::Present => {
            for name in &request.names {
                if is_file(name) {
                    let header = query.files.iter().find(|(path, _)| path == name);
                    let satisfied = header.is_some_and(|(_, file)| {
                        query.installed.contains(file)
                            || (!request.allow_downgrade
                                && rpmdb::newer_installed(&file.nevra(), &query.installed))
                    });
                    if !satisfied {
                        to_dnf.push(name.clone());
                    }
                } else if needs_dnf(name) || rpmdb::is_glob(name) {
                    to_dnf.push(name.clone());
                } else if installed(name)
                    || (!request.allow_downgrade && rpmdb::newer_installed(name, &query.installed))
                {
                    continue;
                } else if request.update_only {
                    results.push(format!(
                        "Packages providing {name} not installed due to update_only specified"
                    ));
                } else {
                    to_dnf.push(name.clone());
                }
            }
        }
        State::Latest => to_dnf = request.names.clone(),
        State::Absent => {
            for name in &request.names {
                if is_file(name) {
                    return Plan::Done(failed_with(
                        &request,
                        "Cannot remove paths -- please specify package name.",
                        &[],
                        &[],
                    ));
                }
                if needs_dnf(name) || installed(name) {
                    to_dnf.push(name.clone());
                } else {
                    results.push(format!("No match for argument: {name}"));
                }
            }
            if request.autoremove {
                return run_dnf(request, to_dnf, results, query.installed);
            }
        }
    }
    if to_dnf.is_empty() {
        let mut out = TaskOutcome {
            msg: Some("Nothing to do".into()),
            ..TaskOutcome::default()
        };
        out.data.insert("results".into(), json!(results));
        out.data.insert("rc".into(), json!(0));
        return Plan::Done(with_facts(&request, out));
    }
    run_dnf(request, to_dnf, results, query.installed)
}

fn dnf_argv(request: &Request, command: &str, names: &[String]) -> Vec<String> {
    let mut argv = vec![
        "dnf".to_string(),
        if request.check { "--assumeno" } else { "-y" }.to_string(),
    ];
    argv.extend(request.options.iter().cloned());
    if request.update_cache && command != "makecache" {
        argv.push("--refresh".into());
    }
    argv.push(command.to_string());
    argv.extend(names.iter().cloned());
    argv
}

/// One dnf command of the task's (latest needs `install` for what is missing and
/// `upgrade` for what is there: dnf's `install` leaves an installed package as it is).
type Batch = (&'static str, Vec<String>);

/// What the dnf runs of one task said so far.
struct Progress {
    request: Request,
    batches: std::collections::VecDeque<Batch>,
    /// Ansible's results for the names that needed no dnf.
    results: Vec<String>,
    rows: Vec<output::Row>,
    failures: Vec<String>,
    installed: Vec<Package>,
    /// Once a name has no package, Ansible changes nothing: the rest is only resolved
    /// (`--assumeno`), for the results it reports.
    simulate: bool,
}

/// The batches for the names that go to dnf, given what rpm says is installed.
fn batches(request: &Request, names: Vec<String>, installed: &[Package]) -> Vec<Batch> {
    match request.state {
        State::Absent if request.autoremove && names.is_empty() => vec![("autoremove", names)],
        State::Absent => vec![("remove", names)],
        State::Present if request.update_only => vec![("upgrade", names)],
        State::Present => vec![("install", names)],
        State::Latest if request.update_only => vec![("upgrade", names)],
        State::Latest => {
            let (there, missing): (Vec<String>, Vec<String>) = names
                .into_iter()
                .partition(|n| installed.iter().any(|p| rpmdb::matches(n, p)));
            let mut out = Vec::new();
            if !missing.is_empty() {
                out.push(("install", missing));
            }
            if !there.is_empty() {
                out.push(("upgrade", there));
            }
            out
        }
    }
}

/// Every name dnf must see, in as few dnf runs as the state allows (one, but for latest
/// with names both installed and not). A name dnf finds no package for fails the task
/// and, as in Ansible, nothing is changed: the other names are only resolved again
/// without it, for the results.
fn run_dnf(
    request: Request,
    names: Vec<String>,
    results: Vec<String>,
    installed: Vec<Package>,
) -> Plan {
    let batches = batches(&request, names, &installed).into();
    next_batch(Progress {
        request,
        batches,
        results,
        rows: Vec::new(),
        failures: Vec::new(),
        installed,
        simulate: false,
    })
}

fn next_batch(mut progress: Progress) -> Plan {
    let Some((command, names)) = progress.batches.pop_front() else {
        return Plan::Done(done(progress));
    };
    let mut argv = dnf_argv(&progress.request, command, &names);
    if progress.simulate {
        argv[1] = "--assumeno".into();
    }
    Plan::Step(
        exec(argv),
        Next::new(move |reply| {
            let x = exec_reply(reply)?;
            let transcript = output::parse(
                &String::from_utf8_lossy(&x.stdout),
                &String::from_utf8_lossy(&x.stderr),
            );
            let ok =
                x.rc == 0 || ((progress.request.check || progress.simulate) && transcript.aborted);
            if ok {
                progress.rows.extend(transcript.rows);
                return Ok(next_batch(progress));
            }
            if transcript.no_match.is_empty() || command == "remove" {
                return Ok(Plan::Done(dnf_failed(progress, &transcript, &x)));
            }
            progress.failures.extend(
                transcript
                    .no_match
                    .iter()
                    .map(|n| format!("No package {n} available.")),
            );
            let rest: Vec<String> = names
                .into_iter()
                .filter(|n| !transcript.no_match.contains(n))
                .collect();
            if !rest.is_empty() {
                progress.batches.push_front((command, rest));
            }
            progress.simulate = true;
            Ok(next_batch(progress))
        }),
    )
}

/// The dnf runs went through: Ansible's results from their transaction tables.
fn done(progress: Progress) -> TaskOutcome {
    let Progress {
        request,
        mut results,
        rows,
        failures,
        installed,
        ..
    } = progress;
    let verb = if request.download_only {
        "Downloaded"
    } else {
        "Installed"
    };
    let mut added: Vec<String> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    for row in &rows {
        match row.action {
            Action::Install => added.push(format!("{verb}: {}", row.nevra())),
            Action::Replace => {
                added.push(format!("{verb}: {}", row.nevra()));
                for old in installed
                    .iter()
                    .filter(|p| p.name == row.name && p.arch == row.arch)
                {
                    removed.push(format!("Removed: {}", old.nevra()));
                }
            }
            Action::Remove => removed.push(format!("Removed: {}", row.nevra())),
        }
    }
    added.sort();
    added.dedup();
    removed.sort();
    removed.dedup();
    let changed = !added.is_empty() || !removed.is_empty();
    results.extend(added);
    results.extend(removed);
    if !failures.is_empty() {
        let mut out = failed_with(&request, SOME_FAILED, &failures, &results);
        out.changed = false;
        return out;
    }
    let mut out = TaskOutcome {
        changed,
        msg: Some(match (changed, request.check) {
            (false, _) => "Nothing to do".into(),
            (true, true) => CHECK_MODE_MSG.into(),
            (true, false) => String::new(),
        }),
        ..TaskOutcome::default()
    };
    out.data.insert("results".into(), json!(results));
    out.data.insert("rc".into(), json!(0));
    with_facts(&request, out)
}

fn failed_with(
    request: &Request,
    msg: &str,
    failures: &[String],
    results: &[String],
) -> TaskOutcome {
    let mut out = TaskOutcome::failed(msg);
    out.data.insert("failures".into(), json!(failures));
    out.data.insert("results".into(), json!(results));
    out.data.insert("rc".into(), json!(1));
    with_facts(request, out)
}

/// dnf failed for another reason than a missing name: its error, worded as Ansible words
/// the same failure.
fn dnf_failed(
    progress: Progress,
    transcript: &Transcript,
    x: &turbo_proto::ExecOutcome,
) -> TaskOutcome {
    let text = transcript.error.clone().unwrap_or_else(|| error_text(x));
    let msg = if text.contains("Problem") {
        format!("Depsolve Error occurred: {text}")
    } else {
        text
    };
    failed_with(
        &progress.request,
        &msg,
        &progress.failures,
        &progress.results,
    )
}

/// dnf's error when the transcript holds none: the last lines it printed.
fn error_text(x: &turbo_proto::ExecOutcome) -> String {
    let stderr = String::from_utf8_lossy(&x.stderr);
    let stdout = String::from_utf8_lossy(&x.stdout);
    let text = if stderr.trim().is_empty() {
        stdout
    } else {
        stderr
    };
    let text = text.trim();
    if text.is_empty() {
        format!("dnf exited with {} and printed nothing", x.rc)
    } else {
        text.strip_prefix("Error: ").unwrap_or(text).to_string()
    }
}

fn with_facts(request: &Request, mut out: TaskOutcome) -> TaskOutcome {
    if let Some(mgr) = &request.pkg_mgr_fact {
        out.data
            .insert("ansible_facts".into(), json!({"pkg_mgr": mgr}));
    }
    out
}

/// `list`: installed, updates/upgrades, available, repos, or a package spec.
fn list_plan(request: Request, list: &str) -> Plan {
    let repos = matches!(list, "repos" | "repositories");
    let mut argv = dnf_argv(&request, if repos { "repolist" } else { "repoquery" }, &[]);
    argv[1] = "-q".into();
    if repos {
        argv.push("--enabled".into());
    } else {
        argv.push(format!("--qf={}\n", output::REPOQUERY_FORMAT));
        match list {
            "installed" => argv.push("--installed".into()),
            "updates" | "upgrades" => argv.push("--upgrades".into()),
            "available" => argv.push("--available".into()),
            spec => argv.push(spec.to_string()),
        }
    }
    Plan::Step(
        exec(argv),
        Next::new(move |reply| {
            let x = exec_reply(reply)?;
            if x.rc != 0 {
                let mut out = TaskOutcome::failed(error_text(&x));
                out.data.insert("results".into(), json!([]));
                out.data.insert("rc".into(), json!(1));
                return Ok(Plan::Done(with_facts(&request, out)));
            }
            let stdout = String::from_utf8_lossy(&x.stdout);
            let results: Vec<Value> = if repos {
                stdout
                    .lines()
                    .skip_while(|l| l.starts_with("repo id"))
                    .filter_map(|l| l.split_whitespace().next())
                    .map(|id| json!({"repoid": id, "state": "enabled"}))
                    .collect()
            } else {
                output::parse_repoquery(&stdout)
            };
            let mut out = TaskOutcome {
                msg: Some(String::new()),
                ..TaskOutcome::default()
            };
            out.data.insert("results".into(), json!(results));
            Ok(Plan::Done(with_facts(&request, out)))
        }),
    )
}

fn env() -> Vec<(String, String)> {
    ENV.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn exec(argv: Vec<String>) -> Op {
    Op::Exec(Exec {
        command: Command::Argv(argv),
        chdir: None,
        creates: None,
        removes: None,
        env: env(),
        stdin: None,
        umask: None,
    })
}

fn exec_reply(reply: OpResult) -> Result<turbo_proto::ExecOutcome, ModuleError> {
    match reply {
        OpResult::Exec(x) => Ok(x),
        OpResult::Error(e) => Err(ModuleError::Invalid(e.message)),
        other => Err(ModuleError::Invalid(format!(
            "internal error: dnf got an unexpected reply from the agent: {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests;
