//! What the task does with each package, decided from dpkg's status and apt's policy
//! (Ansible's `package_best_match` and the install/upgrade checks).

use super::*;

/// What the task does with one package, given dpkg's status and apt's policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Nothing,
    /// Hand apt-get this spec; `virtual_name` when apt must pick what provides it.
    Install {
        spec: String,
        virtual_name: bool,
    },
    Fail(String),
}

/// Whether deciding needs apt's candidate: dpkg's status decides an installed package
/// whose version already meets a plain or `>=` spec, or an exact `=` pin.
pub(crate) fn needs_policy(
    spec: &PackageSpec,
    known: Option<&Known>,
    latest: bool,
    only_upgrade: bool,
) -> bool {
    let installed = known.filter(|k| k.installed);
    match installed {
        None => !only_upgrade,
        Some(k) => {
            latest
                || !spec.accepts(&k.version)
                || (spec.cmp == Some(Cmp::Eq) && spec.version.contains(['*', '?', '[']))
        }
    }
}

/// The version apt would install for the spec (Ansible's `package_best_match`).
enum Best {
    None,
    /// A name only something else provides: apt decides.
    Virtual,
    Version(String),
}

fn best_match(spec: &PackageSpec, policy: &Policy) -> Best {
    if policy.versions.is_empty() {
        return Best::Virtual;
    }
    let candidate = match spec.cmp {
        // The pin Ansible sets outranks every other: the highest matching version.
        Some(Cmp::Eq) => policy
            .versions
            .iter()
            .filter(|v| crate::fnmatch::fnmatch(&spec.version, v))
            .max_by(|a, b| version::compare(a, b))
            .cloned(),
        _ => policy.candidate.clone(),
    };
    match (candidate, spec.cmp) {
        (Some(v), Some(Cmp::AtLeast)) if version::compare(&v, &spec.version).is_lt() => Best::None,
        (Some(v), _) => Best::Version(v),
        (None, _) => Best::None,
    }
}

/// Ansible's `install` loop body for one package. `policy` is `None` when
/// [`needs_policy`] said dpkg's status suffices, `Some(None)` when apt knows no such name.
pub(crate) fn decide(
    spec: &PackageSpec,
    known: Option<&Known>,
    policy: Option<Option<&Policy>>,
    latest: bool,
    only_upgrade: bool,
) -> Decision {
    let installed = known.filter(|k| k.installed);
    if installed.is_none() && only_upgrade {
        return Decision::Nothing;
    }
    let best = match policy {
        None => Best::None,
        Some(None) if installed.is_none() => {
            return Decision::Fail(format!("No package matching '{}' is available", spec.name));
        }
        Some(None) => Best::None,
        Some(Some(policy)) => best_match(spec, policy),
    };
    let version_ok = installed.is_some_and(|k| spec.accepts(&k.version));
    let installable = match (&best, installed) {
        (Best::Version(v), Some(k)) if *v == k.version => Best::None,
        (Best::Virtual, Some(_)) => Best::None,
        (b, _) => match b {
            Best::None => Best::None,
            Best::Virtual => Best::Virtual,
            Best::Version(v) => Best::Version(v.clone()),
        },
    };
    if !version_ok && matches!(installable, Best::None) {
        return Decision::Fail(format!(
            "no available installation candidate for {}",
            spec.written
        ));
    }
    let has_installable = !matches!(installable, Best::None);
    if has_installable && (installed.is_none() || latest || !version_ok) {
        return match installable {
            Best::Version(v) => Decision::Install {
                spec: format!("{}={v}", spec.name),
                virtual_name: false,
            },
            _ if spec.cmp.is_some() => Decision::Install {
                spec: format!("{}={}", spec.name, spec.version),
                virtual_name: true,
            },
            _ => Decision::Install {
                spec: spec.name.clone(),
                virtual_name: true,
            },
        };
    }
    if version_ok && has_installable && spec.cmp == Some(Cmp::Eq) {
        return Decision::Install {
            spec: format!("{}={}", spec.name, spec.version),
            virtual_name: false,
        };
    }
    Decision::Nothing
}
