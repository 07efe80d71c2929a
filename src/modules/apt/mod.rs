//! `apt`: Debian packages, decided from dpkg's database and changed with one apt-get call.
//!
//! A task looks before it asks apt anything: one batch reads the cache's age (two stats),
//! apt's automatic-install marks (extended_states) and dpkg's status of every named
//! package (one `dpkg-query -W`). Nothing else runs when that already says the task has
//! nothing to do. `apt-cache policy` is asked only when a candidate version matters (a
//! package not installed, a version pin, `state: latest`), and then all the names of the
//! task go to apt-get in one command line, written as Ansible writes it (its messages
//! quote it). Check mode is apt-get's `--simulate`: the module does its own check mode
//! ([`Caps::own_check_mode`]) so that these read-only and simulating commands run.

pub(crate) mod apt_get;
mod deb_depends;
mod decision;
pub(crate) mod dpkg_status;
mod operations;
pub(crate) mod policy;
mod python_apt;
pub(crate) mod version;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use turbo_proto::{Command, Exec, ExecOutcome, Op, OpResult};

use super::spec::{Arg, Elem, Spec};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, Squash, TaskOutcome};
use apt_get::{APT_GET, APT_GET_ZERO, quoted};
pub(crate) use decision::{Decision, decide, needs_policy};
use dpkg_status::Known;
use operations::{cleanup, install_deb, remove, upgrade};
use policy::Policy;

pub struct Apt;

const UPDATE_SUCCESS_STAMP: &str = "/var/lib/apt/periodic/update-success-stamp";
const LISTS: &str = "/var/lib/apt/lists";
const EXTENDED_STATES: &str = "/var/lib/apt/extended_states";

static SPEC: Spec = Spec::new(&[
    Arg::bool("allow_change_held_packages").default_bool(false),
    Arg::bool("allow_downgrade").default_bool(false).aliases(&[
        "allow-downgrade",
        "allow_downgrades",
        "allow-downgrades",
    ]),
    Arg::bool("allow_unauthenticated")
        .default_bool(false)
        .aliases(&["allow-unauthenticated"]),
    Arg::bool("auto_install_module_deps").default_bool(true),
    Arg::bool("autoclean").default_bool(false),
    Arg::bool("autoremove").default_bool(false),
    Arg::int("cache_valid_time").default_int(0),
    Arg::bool("clean").default_bool(false),
    Arg::path("deb"),
    Arg::str("default_release").aliases(&["default-release"]),
    Arg::str("dpkg_options").default_str(apt_get::DPKG_OPTIONS),
    Arg::bool("fail_on_autoremove").default_bool(false),
    Arg::bool("force").default_bool(false),
    Arg::bool("force_apt_get")
        .default_bool(false)
        .no_effect("turbo-play always uses apt-get, never aptitude"),
    Arg::bool("install_recommends").aliases(&["install-recommends"]),
    Arg::int("lock_timeout").default_int(60),
    Arg::bool("only_upgrade").default_bool(false),
    Arg::list("package", Elem::Str).aliases(&["pkg", "name"]),
    Arg::int("policy_rc_d"),
    Arg::bool("purge").default_bool(false),
    Arg::str("state").default_str("present").choices(&[
        "absent",
        "build-dep",
        "fixed",
        "latest",
        "present",
    ]),
    Arg::str("upgrade")
        .default_str("no")
        .choices(&["dist", "full", "no", "safe", "yes"]),
    Arg::bool("update_cache").aliases(&["update-cache"]),
    Arg::int("update_cache_retries")
        .default_int(5)
        .no_effect("apt-get update runs once and its error is the task's"),
    Arg::int("update_cache_retry_max_delay")
        .default_int(12)
        .no_effect("apt-get update runs once and its error is the task's"),
])
.mutually_exclusive(&[&["deb", "package", "upgrade"]])
.required_one_of(&[&["autoremove", "deb", "package", "update_cache", "upgrade"]]);

impl Module for Apt {
    fn name(&self) -> &'static str {
        "apt"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode().squash_loop()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let request = Arc::new(Request::from_args(args, ctx)?);
        Ok(probe(request, false))
    }
}

/// A package as the task names it: `name`, `name=version` (a pattern) or `name>=version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PackageSpec {
    pub written: String,
    pub name: String,
    pub cmp: Option<Cmp>,
    pub version: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    Eq,
    AtLeast,
}

impl PackageSpec {
    /// Ansible's `package_split`: the first `=` or `>=` splits name from version.
    pub fn parse(written: &str) -> PackageSpec {
        let at = written.find('=');
        let (name, cmp, version) = match at {
            Some(i) if i > 0 && written.as_bytes()[i - 1] == b'>' => {
                (&written[..i - 1], Some(Cmp::AtLeast), &written[i + 1..])
            }
            Some(i) => (&written[..i], Some(Cmp::Eq), &written[i + 1..]),
            None => (written, None, ""),
        };
        PackageSpec {
            written: written.to_string(),
            name: name.to_string(),
            cmp,
            version: version.to_string(),
        }
    }

    /// A name with fnmatch's characters (none is allowed in a Debian package name): it
    /// stands for the packages apt knows whose names match.
    fn is_pattern(&self) -> bool {
        self.name.contains(['*', '?', '[', ']', '!'])
    }

    /// Whether an installed version meets the spec (`=` is a shell pattern, as Ansible's
    /// fnmatch).
    fn accepts(&self, installed: &str) -> bool {
        match self.cmp {
            None => true,
            Some(Cmp::Eq) => crate::fnmatch::fnmatch(&self.version, installed),
            Some(Cmp::AtLeast) => version::compare(installed, &self.version).is_ge(),
        }
    }
}

/// Everything the task asks, owned, for the steps that follow the target's replies.
#[derive(Debug, Clone)]
struct Request {
    state: String,
    packages: Vec<PackageSpec>,
    /// `*` among the names (with `state: latest`, upgrade everything).
    all_installed: bool,
    update_cache: bool,
    /// `update_cache` as written (an explicit false: python3-apt is installed without one).
    update_cache_given: Option<bool>,
    auto_install_module_deps: bool,
    cache_valid_time: i64,
    upgrade: Option<String>,
    deb: Option<String>,
    purge: bool,
    autoremove: bool,
    autoclean: bool,
    /// `apt-get clean` first (in check mode too, as Ansible's).
    clean: bool,
    fail_on_autoremove: bool,
    force: bool,
    only_upgrade: bool,
    allow_unauthenticated: bool,
    allow_downgrade: bool,
    allow_change_held_packages: bool,
    install_recommends: Option<bool>,
    default_release: Option<String>,
    /// Ansible's `dpkg_options` as given (comma separated), for `dpkg -i`.
    dpkg_option_names: String,
    /// The same expanded for apt-get, with the lock timeout.
    dpkg_options: String,
    policy_rc_d: Option<i64>,
    check: bool,
    diff: bool,
    /// The target's Python, which fetches a `deb` URL.
    python: String,
}

impl Request {
    fn from_args(args: &Args, ctx: &PlanContext) -> Result<Request, ModuleError> {
        let written = args.str_list("package");
        let all_installed = written.iter().any(|p| p == "*");
        let packages: Vec<PackageSpec> = written
            .iter()
            .filter(|p| *p != "*")
            .map(|p| PackageSpec::parse(p.trim()))
            .collect();
        let state = args.str("state").unwrap_or("present").to_string();
        if all_installed && state == "latest" && !packages.is_empty() {
            return Err(ModuleError::Invalid(
                "unable to install additional packages when upgrading all installed packages"
                    .into(),
            ));
        }
        if let Some(bad) = packages.iter().find(|p| p.written.matches('=').count() > 1) {
            return Err(ModuleError::Invalid(format!(
                "invalid package spec: {}",
                bad.written
            )));
        }
        let deb = args.str("deb").map(str::to_string);
        if deb.is_some() && state != "present" {
            return Err(ModuleError::Invalid(
                "deb only supports state=present".into(),
            ));
        }
        let dpkg_option_names = args
            .str("dpkg_options")
            .unwrap_or(apt_get::DPKG_OPTIONS)
            .to_string();
        let lock_timeout = args.int("lock_timeout").unwrap_or(60);
        Ok(Request {
            state,
            packages,
            all_installed,
            update_cache: args.bool("update_cache"),
            update_cache_given: args.opt_bool("update_cache"),
            auto_install_module_deps: args.bool("auto_install_module_deps"),
            cache_valid_time: args.int("cache_valid_time").unwrap_or(0),
            upgrade: args
                .str("upgrade")
                .filter(|u| *u != "no")
                .map(str::to_string),
            deb,
            purge: args.bool("purge"),
            autoremove: args.bool("autoremove"),
            autoclean: args.bool("autoclean"),
            clean: args.bool("clean"),
            fail_on_autoremove: args.bool("fail_on_autoremove"),
            force: args.bool("force"),
            only_upgrade: args.bool("only_upgrade"),
            allow_unauthenticated: args.bool("allow_unauthenticated"),
            allow_downgrade: args.bool("allow_downgrade"),
            allow_change_held_packages: args.bool("allow_change_held_packages"),
            install_recommends: args.opt_bool("install_recommends"),
            default_release: args.str("default_release").map(str::to_string),
            dpkg_options: apt_get::dpkg_options(&dpkg_option_names, lock_timeout),
            dpkg_option_names,
            policy_rc_d: args.int("policy_rc_d"),
            check: ctx.check_mode,
            diff: ctx.diff,
            python: super::download::interpreter(ctx),
        })
    }

    /// Whether the task reads dpkg's status of its names (everything but build-dep).
    fn queries_dpkg(&self) -> bool {
        !self.packages.is_empty() && self.state != "build-dep"
    }

    fn diff_of(&self, stdout: &str) -> Value {
        if self.diff {
            json!({"prepared": apt_get::prepared_diff(stdout)})
        } else {
            json!({})
        }
    }

    fn flag(on: bool, text: &'static str) -> &'static str {
        if on { text } else { "" }
    }

    fn simulate(&self) -> &'static str {
        Request::flag(self.check, "--simulate")
    }
}

/// What the first look found.
#[derive(Debug, Clone, Default)]
struct Probe {
    /// Ansible's `get_cache_mtime`: the update stamp's, else the lists directory's.
    cache_time: i64,
    /// The target's clock when dpkg-query ran (for `cache_valid_time`).
    now: Option<i64>,
    known: BTreeMap<String, Known>,
    auto: BTreeSet<String>,
}

/// Probe results and the cache update's outcome, carried to the later steps.
#[derive(Debug, Clone, Default)]
struct Cache {
    updated: bool,
    time: i64,
}

fn dpkg_query(names: &[&str]) -> Exec {
    let mut argv = vec![
        "dpkg-query".to_string(),
        "-W".to_string(),
        format!("-f={}", dpkg_status::QUERY_FORMAT),
    ];
    argv.extend(names.iter().map(|n| n.to_string()));
    plain_exec(argv)
}

fn plain_exec(argv: Vec<String>) -> Exec {
    Exec {
        command: Command::Argv(argv),
        chdir: None,
        creates: None,
        removes: None,
        env: apt_get::environment(),
        stdin: None,
        umask: None,
    }
}

fn stat(path: &str) -> Op {
    Op::Stat {
        path: path.to_string(),
        checksum: None,
        follow: true,
    }
}

fn cache_stats() -> [Op; 2] {
    [stat(UPDATE_SUCCESS_STAMP), stat(LISTS)]
}

fn cache_time(stamp: &OpResult, lists: &OpResult) -> i64 {
    match (stamp, lists) {
        (OpResult::Stat(s), _) if s.exists => s.mtime,
        (_, OpResult::Stat(l)) if l.exists => l.mtime,
        _ => 0,
    }
}

fn failed(msg: impl Into<String>) -> Result<Plan, ModuleError> {
    Ok(Plan::Done(TaskOutcome::failed(msg)))
}

fn reply_error(result: &OpResult) -> Option<String> {
    match result {
        OpResult::Error(e) => Some(e.message.clone()),
        OpResult::Exec(_) | OpResult::Stat(_) | OpResult::Read(_) => None,
        other => Some(format!(
            "internal error: apt got an unexpected reply from the agent: {other:?}"
        )),
    }
}

/// The first step: whether python3-apt is there, the cache's age, apt's auto marks and
/// dpkg's status of the names. `reinstalled` once python3-apt was installed for the task.
fn probe(request: Arc<Request>, reinstalled: bool) -> Plan {
    let names: Vec<&str> = request
        .packages
        .iter()
        .filter(|p| !p.is_pattern())
        .map(|p| p.name.as_str())
        .collect();
    let [stamp, lists] = cache_stats();
    let mut ops = vec![
        python_apt::probe(),
        stamp,
        lists,
        Op::ReadFile {
            path: EXTENDED_STATES.into(),
            offset: 0,
            limit: None,
        },
    ];
    if request.queries_dpkg() && !names.is_empty() {
        ops.push(Op::Exec(dpkg_query(&names)));
    }
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let OpResult::Batch(results) = reply else {
                return failed(reply_error(&reply).unwrap_or_default());
            };
            if let Some(error) = results.iter().find_map(reply_error) {
                return failed(error);
            }
            if !python_apt::found(results.first()) {
                if reinstalled {
                    return Ok(python_apt::cannot_import(&request.python));
                }
                let how = python_apt::AutoInstall {
                    enabled: request.auto_install_module_deps,
                    check: request.check,
                    update_cache: request.update_cache_given,
                    dpkg_options: &request.dpkg_options,
                    install_recommends: request.install_recommends,
                    python: &request.python,
                };
                let again = Arc::clone(&request);
                return python_apt::missing(how, Box::new(move || Ok(probe(again, true))));
            }
            let mut probe = Probe {
                cache_time: cache_time(&results[1], &results[2]),
                ..Probe::default()
            };
            if let OpResult::Read(read) = &results[3] {
                probe.auto = dpkg_status::auto_installed(&String::from_utf8_lossy(&read.data));
            }
            if let Some(OpResult::Exec(x)) = results.get(4) {
                probe.known = dpkg_status::parse_query(&String::from_utf8_lossy(&x.stdout));
                probe.now = Some(x.start_unix_micros.div_euclid(1_000_000));
            }
            if request.clean {
                return clean(request, probe);
            }
            after_probe(request, probe)
        }),
    )
}

/// Ansible's `aptclean`, before anything else the task asks (also in check mode): a task
/// with nothing else to do ends changed, with apt-get's output.
fn clean(request: Arc<Request>, probe: Probe) -> Result<Plan, ModuleError> {
    let argv = vec!["apt-get".to_string(), "clean".to_string()];
    Ok(Plan::Step(
        Op::Exec(plain_exec(argv)),
        Next::new(move |reply| {
            let OpResult::Exec(x) = reply else {
                return failed(reply_error(&reply).unwrap_or_default());
            };
            let (stdout, stderr) = texts(&x);
            if x.rc != 0 || !stderr.is_empty() {
                let mut out = TaskOutcome::failed(if x.rc != 0 {
                    "apt-get clean failed".to_string()
                } else {
                    format!("apt-get clean failed: {stderr}")
                });
                out.data.insert("stdout".into(), json!(stdout));
                out.data.insert("rc".into(), json!(x.rc));
                return Ok(Plan::Done(out));
            }
            if request.packages.is_empty() && request.upgrade.is_none() && request.deb.is_none() {
                let mut out = TaskOutcome {
                    changed: true,
                    msg: Some(stdout.clone()),
                    ..TaskOutcome::default()
                };
                out.data.insert("stdout".into(), json!(stdout));
                out.data.insert("stderr".into(), json!(stderr));
                out.data.insert("diff".into(), request.diff_of(&stdout));
                return Ok(Plan::Done(out));
            }
            after_probe(request, probe)
        }),
    ))
}

fn after_probe(request: Arc<Request>, probe: Probe) -> Result<Plan, ModuleError> {
    let cache = Cache {
        updated: false,
        time: probe.cache_time,
    };
    if !(request.update_cache || request.cache_valid_time != 0) {
        return after_cache(request, probe, cache);
    }
    let now = probe.now.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    });
    if probe.cache_time + request.cache_valid_time >= now {
        return cache_done(request, probe, cache);
    }
    if request.check {
        let cache = Cache {
            updated: true,
            ..cache
        };
        return cache_done(request, probe, cache);
    }
    let [stamp, lists] = cache_stats();
    let update = plain_exec(apt_get::update_argv(APT_GET));
    let op = Op::Batch(vec![Op::Exec(update), stamp, lists]);
    Ok(Plan::Step(
        op.clone(),
        Next::squashable(Squash::same(&op), move |reply| {
            let OpResult::Batch(results) = reply else {
                return failed(reply_error(&reply).unwrap_or_default());
            };
            if let Some(error) = results.iter().find_map(reply_error) {
                return failed(error);
            }
            if let OpResult::Exec(x) = &results[0]
                && x.rc != 0
            {
                let err = String::from_utf8_lossy(&x.stderr);
                return failed(format!(
                    "Failed to update apt cache: {}",
                    if err.trim().is_empty() {
                        "unknown reason"
                    } else {
                        err.trim()
                    }
                ));
            }
            let time = cache_time(&results[1], &results[2]);
            let cache = Cache {
                updated: time != probe.cache_time,
                time,
            };
            cache_done(request, probe, cache)
        }),
    ))
}

/// After a cache update (or its check): a task with nothing else to do ends here.
fn cache_done(request: Arc<Request>, probe: Probe, cache: Cache) -> Result<Plan, ModuleError> {
    if request.packages.is_empty() && request.upgrade.is_none() && request.deb.is_none() {
        let mut out = TaskOutcome {
            changed: cache.updated,
            ..TaskOutcome::default()
        };
        add_cache_fields(&mut out.data, &cache);
        return Ok(Plan::Done(out));
    }
    after_cache(request, probe, cache)
}

fn add_cache_fields(data: &mut Map<String, Value>, cache: &Cache) {
    data.insert("cache_updated".into(), json!(cache.updated));
    data.insert("cache_update_time".into(), json!(cache.time));
}

fn after_cache(request: Arc<Request>, probe: Probe, cache: Cache) -> Result<Plan, ModuleError> {
    if let Some(mode) = request.upgrade.clone() {
        return upgrade(&request, &mode);
    }
    if let Some(deb) = request.deb.clone() {
        if deb.contains("://") {
            return install_deb_from(request, deb);
        }
        return install_deb(request, deb);
    }
    if request.all_installed && request.state == "latest" {
        return upgrade(&request, "yes");
    }
    if request.packages.is_empty() {
        if request.autoclean {
            return cleanup(&request, "autoclean");
        }
        if request.autoremove {
            return cleanup(&request, "autoremove");
        }
    }
    if request.packages.iter().any(PackageSpec::is_pattern) {
        return expand_patterns(request, probe, cache);
    }
    install_or_remove(request, probe, cache)
}

fn install_or_remove(
    request: Arc<Request>,
    probe: Probe,
    cache: Cache,
) -> Result<Plan, ModuleError> {
    match request.state.as_str() {
        "absent" => remove(&request, &probe),
        _ => install(request, probe, cache),
    }
}

/// Ansible's `expand_pkgspec_from_fnmatches`: each pattern becomes the names of apt's
/// packages it matches (without its version, as Ansible's), in the cache's order; a
/// pattern without `:` matches native packages only. dpkg's status of the names found is
/// read next, as the first look read the others'.
fn expand_patterns(request: Arc<Request>, probe: Probe, cache: Cache) -> Result<Plan, ModuleError> {
    let pkgnames = plain_exec(vec!["apt-cache".into(), "pkgnames".into()]);
    Ok(Plan::Step(
        Op::Exec(pkgnames),
        Next::new(move |reply| {
            let OpResult::Exec(x) = reply else {
                return failed(reply_error(&reply).unwrap_or_default());
            };
            let mut known: Vec<String> = String::from_utf8_lossy(&x.stdout)
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect();
            known.sort();
            let packages = match expand(&request.packages, &known) {
                Ok(packages) => packages,
                Err(msg) => return failed(msg),
            };
            let request = Arc::new(Request {
                packages,
                ..(*request).clone()
            });
            let names: Vec<&str> = request.packages.iter().map(|p| p.name.as_str()).collect();
            if !request.queries_dpkg() {
                return install_or_remove(request, probe, cache);
            }
            Ok(Plan::Step(
                Op::Exec(dpkg_query(&names)),
                Next::new(move |reply| {
                    let mut probe = probe;
                    if let OpResult::Exec(x) = &reply {
                        probe
                            .known
                            .extend(dpkg_status::parse_query(&String::from_utf8_lossy(
                                &x.stdout,
                            )));
                        probe.now = Some(x.start_unix_micros.div_euclid(1_000_000));
                    }
                    install_or_remove(request, probe, cache)
                }),
            ))
        }),
    ))
}

/// The specs with each pattern replaced by the names in `known` it matches.
fn expand(specs: &[PackageSpec], known: &[String]) -> Result<Vec<PackageSpec>, String> {
    let mut expanded = Vec::new();
    for spec in specs {
        if !spec.is_pattern() {
            expanded.push(spec.clone());
            continue;
        }
        let multiarch = spec.name.contains(':');
        let matches: Vec<&String> = known
            .iter()
            .filter(|name| multiarch || !name.contains(':'))
            .filter(|name| crate::fnmatch::fnmatch(&spec.name, name))
            .collect();
        if matches.is_empty() {
            return Err(format!("No package(s) matching '{}' available", spec.name));
        }
        expanded.extend(matches.into_iter().map(|name| PackageSpec::parse(name)));
    }
    Ok(expanded)
}

/// `deb:` a URL: fetched on the target first (Ansible's `fetch_file`, also in check mode),
/// installed, and the download removed.
fn install_deb_from(request: Arc<Request>, url: String) -> Result<Plan, ModuleError> {
    let fetch = super::download::to_file(&request.python, &url);
    Ok(Plan::Step(
        fetch,
        Next::new(
            move |reply| match super::download::file_path(&url, &reply) {
                Ok(path) => Ok(super::download::removing_after(
                    install_deb(request, path.clone())?,
                    path,
                )),
                Err(msg) => failed(msg),
            },
        ),
    ))
}

fn install(request: Arc<Request>, probe: Probe, cache: Cache) -> Result<Plan, ModuleError> {
    if request.state == "build-dep" {
        let specs: Vec<String> = request.packages.iter().map(|p| p.written.clone()).collect();
        return run_install(request, specs, false, BTreeSet::new(), cache);
    }
    let latest = request.state == "latest";
    let asked: Vec<&PackageSpec> = request
        .packages
        .iter()
        .filter(|p| {
            needs_policy(
                p,
                probe.known.get(dpkg_status::base_name(&p.name)),
                latest,
                request.only_upgrade,
            )
        })
        .collect();
    if asked.is_empty() {
        return decide_all(request, probe, None, cache);
    }
    let mut argv = vec!["apt-cache".to_string()];
    if let Some(release) = &request.default_release {
        argv.push("-o".into());
        argv.push(format!("APT::Default-Release={release}"));
    }
    argv.push("policy".into());
    let names: Vec<String> = asked.iter().map(|p| p.name.clone()).collect();
    let squash = Squash {
        key: argv.join(" "),
        names: names.clone(),
        packages: names.clone(),
        build: Arc::new(move |names| {
            let mut argv = argv.clone();
            argv.extend(names.iter().cloned());
            Op::Exec(plain_exec(argv))
        }),
    };
    Ok(Plan::Step(
        (squash.build)(&names),
        Next::squashable(squash, move |reply| match reply {
            OpResult::Exec(x) => {
                let policies = policy::parse(&String::from_utf8_lossy(&x.stdout));
                decide_all(request, probe, Some(policies), cache)
            }
            other => failed(reply_error(&other).unwrap_or_default()),
        }),
    ))
}

fn decide_all(
    request: Arc<Request>,
    probe: Probe,
    policies: Option<BTreeMap<String, Policy>>,
    cache: Cache,
) -> Result<Plan, ModuleError> {
    let latest = request.state == "latest";
    let mut specs = Vec::new();
    let mut all_virtual = true;
    for package in &request.packages {
        let known = probe.known.get(dpkg_status::base_name(&package.name));
        let policy = if needs_policy(package, known, latest, request.only_upgrade) {
            Some(policies.as_ref().and_then(|p| p.get(&package.name)))
        } else {
            None
        };
        match decide(package, known, policy, latest, request.only_upgrade) {
            Decision::Nothing => {}
            Decision::Install { spec, virtual_name } => {
                all_virtual &= virtual_name;
                specs.push(spec);
            }
            Decision::Fail(msg) => {
                let mut out = TaskOutcome::failed(msg);
                if msg_is_candidate(&out) {
                    add_cache_fields(&mut out.data, &cache);
                }
                return Ok(Plan::Done(out));
            }
        }
    }
    // Ansible marks every named package manual; only those apt marked automatic change.
    let to_mark: BTreeSet<String> = if request.check {
        BTreeSet::new()
    } else {
        request
            .packages
            .iter()
            .map(|p| dpkg_status::base_name(&p.name).to_string())
            .filter(|n| {
                probe.auto.contains(n) && !specs.iter().any(|s| s.split('=').next() == Some(n))
            })
            .collect()
    };
    run_install(request, specs, all_virtual, to_mark, cache)
}

/// Ansible returns its install failures through `fail_json(**retvals)`, with the cache
/// fields; "No package matching" comes earlier, without them.
fn msg_is_candidate(out: &TaskOutcome) -> bool {
    out.msg
        .as_deref()
        .is_some_and(|m| m.starts_with("no available installation candidate"))
}

fn install_line(request: &Request, specs: &[String]) -> String {
    let packages: Vec<String> = specs.iter().map(|s| quoted(s)).collect();
    let r = request;
    let mut line = if r.state == "build-dep" {
        format!(
            "{APT_GET} -y {} {} {} {} {} {} build-dep {}",
            r.dpkg_options,
            Request::flag(r.only_upgrade, "--only-upgrade"),
            Request::flag(r.state == "fixed", "--fix-broken"),
            Request::flag(r.force, "--force-yes"),
            Request::flag(r.fail_on_autoremove, "--no-remove"),
            r.simulate(),
            packages.join(" ")
        )
    } else {
        format!(
            "{APT_GET} -y {} {} {} {} {} {} {} install {}",
            r.dpkg_options,
            Request::flag(r.only_upgrade, "--only-upgrade"),
            Request::flag(r.state == "fixed", "--fix-broken"),
            Request::flag(r.force, "--force-yes"),
            Request::flag(r.autoremove, "--auto-remove"),
            Request::flag(r.fail_on_autoremove, "--no-remove"),
            r.simulate(),
            packages.join(" ")
        )
    };
    if let Some(release) = &r.default_release {
        line.push_str(&format!(" -t '{release}'"));
    }
    match r.install_recommends {
        Some(false) => line.push_str(" -o APT::Install-Recommends=no"),
        Some(true) => line.push_str(" -o APT::Install-Recommends=yes"),
        None => {}
    }
    if r.allow_unauthenticated {
        line.push_str(" --allow-unauthenticated");
    }
    if r.allow_downgrade {
        line.push_str(" --allow-downgrades");
    }
    if r.allow_change_held_packages {
        line.push_str(" --allow-change-held-packages");
    }
    line
}

fn run_install(
    request: Arc<Request>,
    specs: Vec<String>,
    all_virtual: bool,
    to_mark: BTreeSet<String>,
    cache: Cache,
) -> Result<Plan, ModuleError> {
    let mark = move |out: TaskOutcome| -> Result<Plan, ModuleError> {
        if to_mark.is_empty() || out.failed {
            return Ok(Plan::Done(out));
        }
        let mut argv = vec!["/usr/bin/apt-mark".to_string(), "manual".to_string()];
        argv.extend(to_mark.iter().cloned());
        let line = argv.join(" ");
        Ok(Plan::Step(
            Op::Exec(plain_exec(argv)),
            Next::new(move |reply| match reply {
                OpResult::Exec(x) if x.rc == 0 => Ok(Plan::Done(out)),
                OpResult::Exec(x) => {
                    let mut failed = TaskOutcome::failed(format!("Command '{line}' failed."));
                    add_output(&mut failed.data, &x);
                    failed.data.insert("rc".into(), json!(x.rc));
                    Ok(Plan::Done(failed))
                }
                other => failed(reply_error(&other).unwrap_or_default()),
            }),
        ))
    };
    if specs.is_empty() {
        let mut out = TaskOutcome::default();
        add_cache_fields(&mut out.data, &cache);
        return mark(out);
    }
    let line = install_line(&request, &specs);
    let exec = apt_get::exec(&line, request.policy_rc_d).map_err(ModuleError::Invalid)?;
    // policy-rc.d's wrapper script stays the one item's own: those items are not squashed.
    let squash = request.policy_rc_d.is_none().then(|| {
        let request = Arc::clone(&request);
        Squash {
            key: install_line(&request, &[]),
            names: specs.clone(),
            packages: specs
                .iter()
                .map(|s| s.split('=').next().unwrap_or(s).to_string())
                .collect(),
            build: Arc::new(move |specs| {
                apt_get::squashed_install(specs, &install_line(&request, specs))
                    .map_or_else(|_| Op::Batch(Vec::new()), Op::Exec)
            }),
        }
    });
    let own = specs.clone();
    let then = move |reply| {
        let mut x = match reply {
            OpResult::Exec(x) => x,
            other => return failed(reply_error(&other).unwrap_or_default()),
        };
        if x.rc == 0 {
            match apt_get::squashed_view(&String::from_utf8_lossy(&x.stdout), &own) {
                Some(stdout) => x.stdout = stdout.into_bytes(),
                None => {
                    let mut out = TaskOutcome::default();
                    add_cache_fields(&mut out.data, &cache);
                    return mark(out);
                }
            }
        }
        {
            let (stdout, stderr) = texts(&x);
            let mut out = TaskOutcome::default();
            if x.rc != 0 {
                out.failed = true;
                out.msg = Some(
                    apt_get::known_error(&stderr)
                        .unwrap_or_else(|| format!("'{line}' failed: {stderr}")),
                );
                add_output(&mut out.data, &x);
                out.data.insert("rc".into(), json!(x.rc));
            } else {
                out.changed = if request.state == "build-dep" || all_virtual {
                    !stdout.contains(APT_GET_ZERO)
                } else {
                    true
                };
                add_output(&mut out.data, &x);
                out.data.insert("diff".into(), request.diff_of(&stdout));
            }
            add_cache_fields(&mut out.data, &cache);
            mark(out)
        }
    };
    let next = match squash {
        Some(squash) => Next::squashable(squash, then),
        None => Next::new(then),
    };
    Ok(Plan::Step(Op::Exec(exec), next))
}

fn texts(x: &ExecOutcome) -> (String, String) {
    (
        String::from_utf8_lossy(&x.stdout).into_owned(),
        String::from_utf8_lossy(&x.stderr).into_owned(),
    )
}

/// `stdout`/`stderr` and the `_lines` Ansible's action adds for them.
fn add_output(data: &mut Map<String, Value>, x: &ExecOutcome) {
    let (stdout, stderr) = texts(x);
    data.insert(
        "stdout_lines".into(),
        json!(stdout.lines().collect::<Vec<_>>()),
    );
    data.insert(
        "stderr_lines".into(),
        json!(stderr.lines().collect::<Vec<_>>()),
    );
    data.insert("stdout".into(), json!(stdout));
    data.insert("stderr".into(), json!(stderr));
}

#[cfg(test)]
mod tests;
