//! Ansible's own modules that turbo-play does not implement yet.
//!
//! Real roles carry tasks for every platform and option (`service`, `package`, `lineinfile`
//! ...), most of them skipped by `when` on any one run. Refusing such a playbook at load time
//! would refuse most roles, so a module Ansible itself ships loads like any other and fails
//! only when a host actually runs it: an ordinary failed result, so `ignore_errors`,
//! `failed_when` and `rescue` see it as they would any failure. A name Ansible does not know
//! either (a typo) is still a load error.

use std::sync::LazyLock;

use super::{Module, ModuleArgs, ModuleError, Plan, PlanContext, TaskOutcome};

/// The `ansible.builtin` modules of ansible-core 2.21 (`ansible-doc -t module -l
/// ansible.builtin`) that have no planner here, plus `yum`, which ansible-core redirects to
/// `dnf`. The implemented ones and the include/import actions are not repeated here.
pub const NOT_YET_SUPPORTED: &[&str] = &[
    "apt",
    "apt_key",
    "apt_repository",
    "assemble",
    "async_status",
    "blockinfile",
    "cron",
    "deb822_repository",
    "debconf",
    "dnf",
    "dnf5",
    "dpkg_selections",
    "expect",
    "fetch",
    "find",
    "gather_facts",
    "get_url",
    "getent",
    "git",
    "group",
    "hostname",
    "iptables",
    "known_hosts",
    "lineinfile",
    "mount_facts",
    "package",
    "package_facts",
    "pip",
    "raw",
    "reboot",
    "replace",
    "rpm_key",
    "script",
    "service",
    "service_facts",
    "set_stats",
    "slurp",
    "subversion",
    "systemd",
    "systemd_service",
    "sysvinit",
    "tempfile",
    "unarchive",
    "uri",
    "user",
    "validate_argument_spec",
    "wait_for",
    "wait_for_connection",
    "yum",
    "yum_repository",
];

/// Modules whose plain-string argument is a command line or path rather than `k=v` pairs.
const FREE_FORM: &[&str] = &["raw", "script"];

/// One of [`NOT_YET_SUPPORTED`]: loads with any arguments, fails when it runs.
#[derive(Debug)]
pub struct NotYetSupported {
    name: &'static str,
}

static REGISTRY: LazyLock<Vec<NotYetSupported>> = LazyLock::new(|| {
    NOT_YET_SUPPORTED
        .iter()
        .map(|&name| NotYetSupported { name })
        .collect()
});

/// The placeholder for an Ansible module turbo-play does not run yet (short name).
pub fn find(short: &str) -> Option<&'static dyn Module> {
    REGISTRY
        .iter()
        .find(|m| m.name == short)
        .map(|m| m as &'static dyn Module)
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
    }));
    known.push(module);
    module
}

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

    fn arg_names(&self) -> &'static [&'static str] {
        &[]
    }

    // Argument names are only known to the real module; checking them waits for it.
    fn accepts_any_args(&self) -> bool {
        true
    }

    fn free_form(&self) -> bool {
        FREE_FORM.contains(&self.name)
    }

    fn plan(&self, _args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        Ok(Plan::Done(TaskOutcome::failed(Self::message(self.name))))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn an_unsupported_module_fails_when_it_runs() {
        let service = find("service").expect("service is an Ansible module");
        assert_eq!(service.name(), "service");
        assert!(service.accepts_any_args());
        let args = ModuleArgs::new();
        let Plan::Done(outcome) = service
            .plan(&args, &PlanContext::new(Path::new(".")))
            .unwrap()
        else {
            panic!("an unsupported module must not plan remote work");
        };
        assert!(outcome.failed);
        assert!(!outcome.changed);
        assert_eq!(
            outcome.msg.as_deref(),
            Some(NotYetSupported::message("service").as_str())
        );
        assert!(
            outcome
                .msg
                .unwrap()
                .starts_with("the 'service' module is not supported by turbo-play yet")
        );
    }

    #[test]
    fn a_collection_module_is_one_placeholder_per_name() {
        let a = collection_module("community.general.ufw");
        assert_eq!(a.name(), "community.general.ufw");
        assert!(std::ptr::eq(a, collection_module("community.general.ufw")));
        assert!(!std::ptr::eq(a, collection_module("ansible.posix.sysctl")));
        let Ok(Plan::Done(outcome)) = a.plan(&ModuleArgs::new(), &PlanContext::new(Path::new(".")))
        else {
            panic!()
        };
        assert_eq!(
            outcome.msg.as_deref(),
            Some(NotYetSupported::message("community.general.ufw").as_str())
        );
    }

    #[test]
    fn only_ansible_names_are_known() {
        assert!(find("lineinfile").is_some());
        assert!(find("yum").is_some());
        assert!(find("servce").is_none());
        assert!(find("community.general.ufw").is_none());
        assert!(find("script").unwrap().free_form());
        assert!(!find("package").unwrap().free_form());
    }
}
