//! `package_facts`: the installed packages as `ansible_facts.packages`, for the apt
//! manager (what `auto` finds first on Debian): dpkg's database for names, versions,
//! architectures and sections, and apt's policy for the origin of each installed version,
//! all in one command run on the target. Any other manager list or strategy (one that
//! looks at rpm, apk... first, or `strategy: all`) runs ansible-core's own module on the
//! target's Python, which probes each manager as Ansible does.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use turbo_proto::{Command, Exec, Op, OpResult};

use super::apt::policy;
use super::spec::{Arg, Elem, Spec};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome, unexpected};

pub struct PackageFacts;

static SPEC: Spec = Spec::new(&[
    Arg::list("manager", Elem::Str).default_str("auto"),
    Arg::str("strategy")
        .choices(&["first", "all"])
        .default_str("first"),
]);

/// Ansible's managers, by the names `manager` takes (aliases included).
const MANAGERS: &[&str] = &[
    "apk",
    "apt",
    "pacman",
    "pkg",
    "pkg_info",
    "portage",
    "rpm",
    "dnf",
    "dnf5",
    "yum",
    "zypper",
    "pkg5",
    "pkgng",
    "openbsd_pkg",
];

const SEPARATOR: &str = "--turbo-play-section--";

/// ansible-core's package_facts module, run on the target's Python (`modules::python`),
/// its reply finished by it.
fn ansible_module(args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
    let module = super::python::PythonModule::builtin("package_facts");
    let mut raw = args.values().clone();
    raw.extend(args.extra().clone());
    let module_args = module
        .spec()
        .validate("package_facts", &raw)
        .map_err(ModuleError::Invalid)?;
    match module.plan(&module_args, ctx)? {
        Plan::Remote(op) => Ok(Plan::Step(
            op,
            super::Next::new(move |reply| Ok(Plan::Done(module.finish(&module_args, reply)))),
        )),
        other => Ok(other),
    }
}

/// dpkg's packages, then apt's package files, then apt's policy of every installed one.
/// PATH is the system's own: Ansible's apt manager reads python-apt, so the task's
/// `environment` (a PATH of `${PATH}:/dir`, which Ansible passes on unexpanded) must not
/// decide whether dpkg and apt are found.
fn script() -> String {
    let format =
        "${db:Status-Abbrev}\\t${binary:Package}\\t${Version}\\t${Architecture}\\t${Section}\\n";
    format!(
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; export PATH\n\
         dpkg-query -W -f='{format}'\n\
         echo {SEPARATOR}\n\
         apt-cache policy\n\
         echo {SEPARATOR}\n\
         dpkg-query -W -f='${{db:Status-Abbrev}}\\t${{binary:Package}}\\n' | awk -F'\\t' '$1 !~ /^.[nc]/ {{print $2}}' | xargs -r apt-cache policy\n"
    )
}

impl Module for PackageFacts {
    fn name(&self) -> &'static str {
        "package_facts"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let managers: Vec<String> = args
            .str_list("manager")
            .iter()
            .map(|m| m.to_lowercase())
            .collect();
        let unsupported: Vec<&str> = managers
            .iter()
            .map(String::as_str)
            .filter(|m| *m != "auto" && !MANAGERS.contains(m))
            .collect();
        if !unsupported.is_empty() {
            return Err(ModuleError::Invalid(format!(
                "Unsupported package managers requested: {}",
                unsupported.join(", ")
            )));
        }
        let apt_first = managers
            .iter()
            .find(|m| *m == "auto" || *m == "apt")
            .is_some()
            && managers
                .iter()
                .take_while(|m| *m != "auto" && *m != "apt")
                .next()
                .is_none();
        if !apt_first || args.str("strategy") == Some("all") {
            return ansible_module(args, ctx);
        }
        Ok(Plan::Remote(Op::Exec(Exec {
            command: Command::Shell {
                script: script(),
                executable: None,
            },
            chdir: None,
            creates: None,
            removes: None,
            env: vec![("LC_ALL".into(), "C.UTF-8".into())],
            stdin: None,
            umask: None,
        })))
    }

    fn finish(&self, _args: &Args, result: OpResult) -> TaskOutcome {
        let OpResult::Exec(x) = result else {
            return unexpected("package_facts", result);
        };
        let stdout = String::from_utf8_lossy(&x.stdout);
        if x.rc != 0 {
            return TaskOutcome::failed(format!(
                "Could not detect a supported package manager from the following list: ['apt'], or the required Python library is not installed. Check warnings for details. ({})",
                String::from_utf8_lossy(&x.stderr).trim()
            ));
        }
        let packages = packages(&stdout);
        let mut out = TaskOutcome::default();
        out.data
            .insert("ansible_facts".into(), json!({ "packages": packages }));
        out
    }
}

/// The script's three sections as Ansible's APT manager reports them.
pub(crate) fn packages(stdout: &str) -> Map<String, Value> {
    let separator = format!("{SEPARATOR}\n");
    let mut sections = stdout.split(&separator);
    let (dpkg, files, policies) = (
        sections.next().unwrap_or(""),
        sections.next().unwrap_or(""),
        sections.next().unwrap_or(""),
    );
    let origins = policy::package_file_origins(files);
    let policies = policy::parse(policies);
    let mut out: BTreeMap<String, Value> = BTreeMap::new();
    for line in dpkg.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [status, name, version, arch, section] = f[..] else {
            continue;
        };
        if matches!(status.as_bytes().get(1), Some(b'n' | b'c') | None) {
            continue;
        }
        let origin = policies
            .get(name)
            .and_then(|p| p.installed_from.as_ref())
            .and_then(|file| origins.get(file))
            .cloned()
            .unwrap_or_default();
        out.insert(
            name.to_string(),
            json!([{
                "name": name,
                "version": version,
                "arch": arch,
                "category": section,
                "origin": origin,
                "source": "apt",
            }]),
        );
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::try_plan;

    #[test]
    fn reads_packages_with_their_origins() {
        let out = format!(
            "ii \tacl\t2.3.1-3\tamd64\tutils\nrc \tgone\t1.0\tall\tmisc\nii \tturbo-lib\t1.0\tall\tmisc\n{SEPARATOR}\n\
             Package files:\n 100 /var/lib/dpkg/status\n     release a=now\n 500 http://mirror.example.org/debian bookworm/main amd64 Packages\n     release o=Debian,a=oldstable\n     origin mirror.example.org\nPinned packages:\n{SEPARATOR}\n\
             acl:\n  Installed: 2.3.1-3\n  Candidate: 2.3.1-3\n  Version table:\n *** 2.3.1-3 500\n        500 http://mirror.example.org/debian bookworm/main amd64 Packages\n        100 /var/lib/dpkg/status\n\
             turbo-lib:\n  Installed: 1.0\n  Candidate: 1.0\n  Version table:\n *** 1.0 100\n        100 /var/lib/dpkg/status\n"
        );
        let p = packages(&out);
        assert_eq!(
            p["acl"],
            json!([{"name": "acl", "version": "2.3.1-3", "arch": "amd64", "category": "utils", "origin": "Debian", "source": "apt"}])
        );
        assert_eq!(p["turbo-lib"][0]["origin"], "");
        assert!(!p.contains_key("gone"));
    }

    #[test]
    fn apt_first_is_read_here_and_unknown_managers_fail() {
        let ctx = PlanContext::new(std::path::Path::new("/"));
        assert_eq!(
            try_plan(&PackageFacts, json!({"manager": ["nope"]}), &ctx).unwrap_err(),
            "Unsupported package managers requested: nope"
        );
        let Plan::Remote(Op::Exec(exec)) = try_plan(&PackageFacts, json!({}), &ctx).unwrap() else {
            panic!("apt is read by one command")
        };
        let Command::Shell { script, .. } = exec.command else {
            panic!()
        };
        assert!(
            script.starts_with("PATH=/usr/local/sbin:"),
            "the system's PATH, whatever the task's environment says: {script}"
        );
        // Another manager first goes to ansible-core's module (see the integration test
        // package_facts_reads_apt_and_probes_other_managers_as_ansible): never the apt read.
        assert!(!matches!(
            try_plan(&PackageFacts, json!({"manager": ["rpm", "apt"]}), &ctx),
            Ok(Plan::Remote(Op::Exec(_)))
        ));
    }
}
