//! What is installed in a Python environment, read from what the target reports: the
//! `.dist-info`/`.egg-info` directories of a virtualenv's site-packages (listed by the
//! agent, no process started), or the lines of the probe script run by the environment's
//! interpreter.

use std::collections::BTreeMap;

use super::requirement::canonical_name;

/// The installed distributions by canonical name; the first one found wins, as the first
/// on `sys.path` shadows the others.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Installed {
    pub versions: BTreeMap<String, String>,
}

impl Installed {
    pub fn version(&self, canonical: &str) -> Option<&str> {
        self.versions.get(canonical).map(String::as_str)
    }

    fn add(&mut self, name: &str, version: &str) {
        self.versions
            .entry(canonical_name(name))
            .or_insert_with(|| version.to_string());
    }

    /// Metadata directory names under a site-packages directory: `name-version.dist-info`
    /// (the name escaped with `_`, so the first `-` ends it) or
    /// `name-version[-pyX.Y].egg-info`.
    pub fn from_metadata_dirs<'a>(names: impl IntoIterator<Item = &'a str>) -> Installed {
        let mut out = Installed::default();
        for dir in names {
            let stem = dir
                .strip_suffix(".dist-info")
                .or_else(|| dir.strip_suffix(".egg-info"));
            let Some((name, rest)) = stem.and_then(|s| s.split_once('-')) else {
                continue;
            };
            let version = rest.split('-').next().unwrap_or(rest);
            out.add(name, version);
        }
        out
    }
}

/// What the probe script reports of the interpreter that runs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// `sys.executable`: the `python -m pip` Ansible runs without virtualenv or executable.
    pub executable: String,
    /// Whether `pip` is importable there.
    pub has_pip: bool,
    /// PEP 668: the interpreter's stdlib has EXTERNALLY-MANAGED and it is not a virtualenv,
    /// so pip refuses to install or uninstall (without `--break-system-packages`).
    pub externally_managed: bool,
    pub installed: Installed,
}

/// Run as `python3 -c PROBE_SCRIPT`: one line each for the executable, pip's presence and
/// PEP 668, then the metadata directories on `sys.path`, in its order. Listing them
/// rather than asking `importlib.metadata` keeps it to the interpreter's start: no
/// metadata file is opened.
pub const PROBE_SCRIPT: &str = r#"import os,sys
path=[p for p in sys.path if p]
print(sys.executable)
print(int(any(os.path.isfile(os.path.join(p,'pip','__init__.py')) for p in path)))
print(int(sys.prefix==getattr(sys,'base_prefix',sys.prefix) and os.path.isfile(os.path.join(os.path.dirname(os.__file__),'EXTERNALLY-MANAGED'))))
for p in path:
 try: names=sorted(os.listdir(p))
 except OSError: continue
 for n in names:
  if n.endswith(('.dist-info','.egg-info')): print(n)
"#;

impl Probe {
    pub fn parse(stdout: &str) -> Option<Probe> {
        let mut lines = stdout.lines();
        let executable = lines.next()?.to_string();
        let has_pip = lines.next()? == "1";
        let externally_managed = lines.next()? == "1";
        Some(Probe {
            executable,
            has_pip,
            externally_managed,
            installed: Installed::from_metadata_dirs(lines),
        })
    }
}

/// pyvenv.cfg's `include-system-site-packages`: the system's distributions count too.
pub fn includes_system_site_packages(pyvenv_cfg: &str) -> bool {
    pyvenv_cfg.lines().any(|line| {
        line.split_once('=').is_some_and(|(k, v)| {
            k.trim() == "include-system-site-packages" && v.trim().eq_ignore_ascii_case("true")
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_metadata_directories() {
        let found = Installed::from_metadata_dirs([
            "tinypkg-2.0.dist-info",
            "Zope.Interface-5.1-py3.11.egg-info",
            "tinypkg",
            "pip-23.0.1.dist-info",
            "__pycache__",
            "_distutils_hack",
        ]);
        assert_eq!(found.version("tinypkg"), Some("2.0"));
        assert_eq!(found.version("zope-interface"), Some("5.1"));
        assert_eq!(found.version("pip"), Some("23.0.1"));
        assert_eq!(found.versions.len(), 3);
    }

    #[test]
    fn reads_the_probe_and_pyvenv_cfg() {
        let probe =
            Probe::parse("/usr/bin/python3\n1\n1\nTiny_Pkg-1.0.dist-info\nwheel-0.38.4.egg-info\ntiny_pkg-0.5.dist-info\n")
                .unwrap();
        assert!(probe.has_pip && probe.externally_managed);
        assert_eq!(probe.executable, "/usr/bin/python3");
        assert_eq!(probe.installed.version("tiny-pkg"), Some("1.0"));
        assert_eq!(probe.installed.version("wheel"), Some("0.38.4"));
        assert!(Probe::parse("/x\n").is_none());
        assert!(includes_system_site_packages(
            "home = /usr/bin\ninclude-system-site-packages = true\n"
        ));
        assert!(!includes_system_site_packages(
            "include-system-site-packages = false\n"
        ));
    }
}
