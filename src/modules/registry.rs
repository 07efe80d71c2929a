//! The one table of modules: every `ansible.builtin` module of ansible-core 2.21
//! (`ansible-doc -t module -l ansible.builtin`, plus `yum`, which ansible-core redirects to
//! `dnf`), each either run by turbo-play or not yet.
//!
//! Real roles carry tasks for every platform and option (`service`, `package`, `lineinfile`
//! ...), most of them skipped by `when` on any one run. Refusing such a playbook at load time
//! would refuse most roles, so a module Ansible itself ships loads like any other and fails
//! only when a host actually runs it: an ordinary failed result, so `ignore_errors`,
//! `failed_when` and `rescue` see it as they would any failure. A name Ansible does not know
//! either (a typo) is still a load error.

use std::sync::LazyLock;

use super::spec::{Spec, Unknown};
use super::{
    Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome, apt, apt_key, apt_repository,
    assert, async_status, blockinfile, command, copy, deb822_repository, debconf, debug, dnf,
    dpkg_selections, fetch, file, include, include_vars, inventory_edit, lineinfile, meta, package,
    package_facts, pause, ping, pip, raw, replace, rpm_key, script, service, service_facts,
    set_fact, setup, slurp, stat, systemd, sysvinit, template, yum_repository,
};

/// What turbo-play does with one of Ansible's modules.
#[derive(Clone, Copy)]
pub enum Entry {
    Native(&'static dyn Module),
    /// Loads with any arguments and fails when it runs; `free_form` when a plain string
    /// argument is a command line or path rather than `k=v` pairs.
    NotYet {
        free_form: bool,
    },
    /// No native planner: ansible-core's own Python module runs on the target's Python
    /// (`modules::python`).
    Python,
}

use Entry::{Native, NotYet, Python};

/// Sorted by name; a test keeps it so.
static MODULES: &[(&str, Entry)] = &[
    ("add_host", Native(&inventory_edit::AddHost)),
    ("apt", Native(&apt::Apt)),
    ("apt_key", Native(&apt_key::AptKey)),
    ("apt_repository", Native(&apt_repository::AptRepository)),
    ("assemble", Native(&super::assemble::Assemble)),
    ("assert", Native(&assert::Assert)),
    ("async_status", Native(&async_status::AsyncStatus)),
    ("blockinfile", Native(&blockinfile::BlockInFile)),
    ("command", Native(&command::CommandModule)),
    ("copy", Native(&copy::Copy)),
    ("cron", Native(&super::cron::Cron)),
    (
        "deb822_repository",
        Native(&deb822_repository::Deb822Repository),
    ),
    ("debconf", Native(&debconf::Debconf)),
    ("debug", Native(&debug::Debug)),
    ("dnf", Native(&dnf::Dnf)),
    ("dnf5", Python),
    ("dpkg_selections", Native(&dpkg_selections::DpkgSelections)),
    ("expect", Python),
    ("fail", Native(&assert::Fail)),
    ("fetch", Native(&fetch::Fetch)),
    ("file", Native(&file::File)),
    ("find", Native(&super::find::Find)),
    ("gather_facts", Native(&super::gather_facts::GatherFacts)),
    ("get_url", Python),
    ("getent", Native(&super::getent::Getent)),
    ("git", Python),
    ("group", Native(&super::group::Group)),
    ("group_by", Native(&inventory_edit::GroupBy)),
    ("hostname", Native(&super::hostname::Hostname)),
    ("include_role", Native(&include::IncludeRole)),
    ("include_tasks", Native(&include::IncludeTasks)),
    ("include_vars", Native(&include_vars::IncludeVars)),
    ("iptables", Python),
    ("known_hosts", Native(&super::known_hosts::KnownHosts)),
    ("lineinfile", Native(&lineinfile::LineInFile)),
    ("meta", Native(&meta::Meta)),
    ("mount_facts", Python),
    ("package", Native(&package::Package)),
    ("package_facts", Native(&package_facts::PackageFacts)),
    ("pause", Native(&pause::Pause)),
    ("ping", Native(&ping::Ping)),
    ("pip", Native(&pip::Pip)),
    ("raw", Native(&raw::Raw)),
    ("reboot", Native(&super::reboot::Reboot)),
    ("replace", Native(&replace::Replace)),
    ("rpm_key", Native(&rpm_key::RpmKey)),
    ("script", Native(&script::Script)),
    ("service", Native(&service::Service)),
    ("service_facts", Native(&service_facts::ServiceFacts)),
    ("set_fact", Native(&set_fact::SetFact)),
    ("set_stats", Native(&super::set_stats::SetStats)),
    ("setup", Native(&setup::Setup)),
    ("shell", Native(&command::Shell)),
    ("slurp", Native(&slurp::Slurp)),
    ("stat", Native(&stat::Stat)),
    ("subversion", Python),
    ("systemd", Native(&systemd::Systemd)),
    ("systemd_service", Native(&systemd::SystemdService)),
    ("sysvinit", Native(&sysvinit::SysvInit)),
    ("tempfile", Native(&super::tempfile::Tempfile)),
    ("template", Native(&template::Template)),
    ("unarchive", Native(&super::unarchive::Unarchive)),
    ("uri", Python),
    ("user", Native(&super::user::User)),
    (
        "validate_argument_spec",
        Native(&super::validate_argument_spec::ValidateArgumentSpec),
    ),
    ("wait_for", Native(&super::wait_for::WaitFor)),
    (
        "wait_for_connection",
        Native(&super::wait_for_connection::WaitForConnection),
    ),
    ("yum", Native(&dnf::Yum)),
    ("yum_repository", Native(&yum_repository::YumRepository)),
];

/// Collection modules turbo-play runs itself, by full name, with the short name Ansible's
/// routing (ansible-core's `ansible_builtin_runtime.yml`) redirects to them.
static NATIVE_COLLECTION_MODULES: &[(&str, &str, &dyn Module)] = &[
    (
        "ansible.posix.synchronize",
        "synchronize",
        &super::synchronize::Synchronize,
    ),
    // ansible-core's internal collection: found only under its full name.
    (
        super::protomatter_debug::NAME,
        super::protomatter_debug::NAME,
        &super::protomatter_debug::ProtomatterDebug,
    ),
];

fn native_collection_module(name: &str) -> Option<&'static dyn Module> {
    let short = short_name(name);
    NATIVE_COLLECTION_MODULES
        .iter()
        .find(|(fqcn, routed, _)| name == *fqcn || short == *routed)
        .map(|(_, _, module)| *module)
}

/// The short name of `copy`, `ansible.builtin.copy` or `ansible.legacy.copy`.
fn short_name(name: &str) -> &str {
    name.strip_prefix("ansible.builtin.")
        .or_else(|| name.strip_prefix("ansible.legacy."))
        .unwrap_or(name)
}

fn row(name: &str) -> Option<&'static (&'static str, Entry)> {
    let short = short_name(name);
    MODULES
        .binary_search_by(|(n, _)| n.cmp(&short))
        .ok()
        .map(|i| &MODULES[i])
}

/// Every module turbo-play runs.
pub fn all() -> impl Iterator<Item = &'static dyn Module> {
    MODULES
        .iter()
        .filter_map(|(_, entry)| match entry {
            Native(m) => Some(*m),
            NotYet { .. } | Python => None,
        })
        .chain(NATIVE_COLLECTION_MODULES.iter().map(|(_, _, m)| *m))
}

/// The module a task names (short, `ansible.builtin.` or `ansible.legacy.`): the real one,
/// or the placeholder of one turbo-play does not run yet.
pub fn find(name: &str) -> Option<&'static dyn Module> {
    static PLACEHOLDERS: LazyLock<Vec<NotYetSupported>> = LazyLock::new(|| {
        MODULES
            .iter()
            .filter_map(|(name, entry)| match entry {
                NotYet { free_form } => Some(NotYetSupported {
                    name,
                    free_form: *free_form,
                }),
                Native(_) | Python => None,
            })
            .collect()
    });
    if let Some(module) = native_collection_module(name) {
        return Some(module);
    }
    let (short, entry) = row(name)?;
    match entry {
        Native(m) => Some(*m),
        Python => Some(super::python::PythonModule::builtin(short)),
        NotYet { .. } => PLACEHOLDERS
            .iter()
            .find(|p| p.name == *short)
            .map(|p| p as &'static dyn Module),
    }
}

/// Whether ansible-core ships a module of this short name.
pub fn is_builtin(short: &str) -> bool {
    !short.contains('.') && row(short).is_some()
}

/// The full name of a collection module turbo-play runs itself, by its short name
/// (`synchronize`), or by its full name.
pub fn native_collection_fqcn(name: &str) -> Option<&'static str> {
    let short = short_name(name);
    NATIVE_COLLECTION_MODULES
        .iter()
        .find(|(fqcn, routed, _)| name == *fqcn || short == *routed)
        .map(|(fqcn, _, _)| *fqcn)
}

/// Whether turbo-play runs this module itself (not only knows Ansible has it).
pub fn is_implemented(name: &str) -> bool {
    native_collection_module(name).is_some() || matches!(row(name), Some((_, Native(_))))
}

/// The module a mistyped name most likely meant.
pub fn suggest(name: &str) -> Option<&'static str> {
    super::closest(short_name(name), MODULES.iter().map(|(n, _)| *n))
}

/// A module of an installed Ansible collection (`community.general.ufw`): Python that
/// turbo-play cannot run, but a name Ansible would resolve, so it loads and fails only on a
/// host that reaches it. One placeholder per distinct name, kept for the run.
pub fn collection_module(fqcn: &str) -> &'static dyn Module {
    static KNOWN: LazyLock<std::sync::Mutex<Vec<&'static NotYetSupported>>> =
        LazyLock::new(Default::default);
    let mut known = KNOWN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(module) = known.iter().find(|m| m.name == fqcn) {
        return *module;
    }
    // Leaked on purpose: modules are `&'static` like the registry's, and a playbook names
    // a bounded set of them.
    let module: &'static NotYetSupported = Box::leak(Box::new(NotYetSupported {
        name: Box::leak(fqcn.to_string().into_boxed_str()),
        free_form: false,
    }));
    known.push(module);
    module
}

/// A module Ansible has and turbo-play does not run yet.
#[derive(Debug)]
pub struct NotYetSupported {
    name: &'static str,
    free_form: bool,
}

/// Argument names are only known to the real module; checking them waits for it.
static ANY_ARGS: Spec = Spec::new(&[]).unknown(Unknown::Accepted);

impl NotYetSupported {
    /// The failure a host reports when it reaches the task.
    pub fn message(name: &str) -> String {
        format!(
            "the '{name}' module is not supported by turbo-play yet; guard the task with \
             `when:` or run this playbook with ansible-playbook"
        )
    }
}

impl Module for NotYetSupported {
    fn name(&self) -> &'static str {
        self.name
    }

    fn spec(&self) -> &'static Spec {
        &ANY_ARGS
    }

    fn caps(&self) -> Caps {
        if self.free_form {
            Caps::TASK.free_form()
        } else {
            Caps::TASK
        }
    }

    fn plan(&self, _args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        Ok(Plan::Done(TaskOutcome::failed(Self::message(self.name))))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::modules::ModuleArgs;

    fn placeholder_outcome(module: &dyn Module) -> TaskOutcome {
        let args = module
            .spec()
            .validate(module.name(), &ModuleArgs::new())
            .unwrap();
        match module
            .plan(&args, &PlanContext::new(Path::new(".")))
            .unwrap()
        {
            Plan::Done(outcome) => outcome,
            other => panic!("an unsupported module must not plan remote work: {other:?}"),
        }
    }

    #[test]
    fn the_table_is_sorted_and_names_each_module_once() {
        for pair in MODULES.windows(2) {
            assert!(pair[0].0 < pair[1].0, "{} before {}", pair[0].0, pair[1].0);
        }
        for (name, entry) in MODULES {
            if let Native(m) = entry {
                assert_eq!(m.name(), *name, "the row and the module disagree");
            }
        }
    }

    #[test]
    fn finds_modules_by_short_and_qualified_names() {
        assert_eq!(find("copy").unwrap().name(), "copy");
        assert_eq!(find("ansible.builtin.copy").unwrap().name(), "copy");
        assert_eq!(find("ansible.legacy.shell").unwrap().name(), "shell");
        assert!(find("community.general.copy").is_none());
        assert!(find("nope").is_none());
        assert_eq!(find("ansible.builtin.reboot").unwrap().name(), "reboot");
        assert_eq!(
            find("ansible.legacy.lineinfile").unwrap().name(),
            "lineinfile"
        );
        assert!(find("community.general.ufw").is_none());
        assert!(is_implemented("ansible.builtin.copy"));
        assert!(is_implemented("reboot"));
        assert!(!is_implemented("nope"));
        for m in all() {
            assert!(std::ptr::eq(find(m.name()).unwrap(), m));
        }
    }

    #[test]
    fn an_unsupported_module_fails_when_it_runs() {
        let ufw = collection_module("community.general.ufw");
        let outcome = placeholder_outcome(ufw);
        assert!(outcome.failed);
        assert!(!outcome.changed);
        assert!(
            outcome.msg.unwrap().starts_with(
                "the 'community.general.ufw' module is not supported by turbo-play yet"
            )
        );
        assert!(find("script").unwrap().caps().free_form);
        assert!(!find("package").unwrap().caps().free_form);
    }

    #[test]
    fn a_collection_module_is_one_placeholder_per_name() {
        let a = collection_module("community.general.ufw");
        assert_eq!(a.name(), "community.general.ufw");
        assert!(std::ptr::eq(a, collection_module("community.general.ufw")));
        assert!(!std::ptr::eq(a, collection_module("ansible.posix.sysctl")));
        assert_eq!(
            placeholder_outcome(a).msg.as_deref(),
            Some(NotYetSupported::message("community.general.ufw").as_str())
        );
    }

    #[test]
    fn suggests_close_names() {
        assert_eq!(suggest("cpy"), Some("copy"));
        assert_eq!(suggest("comand"), Some("command"));
        assert_eq!(suggest("servce"), Some("service"));
        assert_eq!(suggest("ansible.builtin.linefile"), Some("lineinfile"));
        assert_eq!(suggest("ansible.builtin.templat"), Some("template"));
        assert_eq!(suggest("xyzzy"), None);
    }

    /// Every declared argument's default and choices agree with its kind, so a spec
    /// mistake shows here rather than as a failed task.
    #[test]
    fn every_spec_validates_its_own_defaults() {
        for m in all() {
            let spec = m.spec();
            for arg in spec.args {
                if let Some(default) = arg.default
                    && !arg.choices.is_empty()
                    && let super::super::spec::Lit::Str(s) = default
                {
                    assert!(
                        arg.choices.contains(&s),
                        "{}: {} default",
                        m.name(),
                        arg.name
                    );
                }
            }
            // No two arguments share a name or alias.
            let mut names: Vec<&str> = spec
                .args
                .iter()
                .flat_map(|a| std::iter::once(a.name).chain(a.aliases.iter().copied()))
                .collect();
            names.sort_unstable();
            let before = names.len();
            names.dedup();
            assert_eq!(
                before,
                names.len(),
                "{}: a name is declared twice",
                m.name()
            );
        }
    }
}
