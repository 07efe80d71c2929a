//! Names resolved as Ansible's plugin loaders resolve them: a short name through the
//! `collections` keyword, then `ansible.legacy` (library and `*_plugins` directories, then
//! ansible-core's own), then `ansible.builtin`'s routing; a fully qualified name through
//! its collection's `meta/runtime.yml` routing (redirects, deprecations, removals, a
//! module's `action_plugin`). The result's FQCN is what `module_defaults` are keyed by.

use std::path::Path;

use super::routing::{self, RouteKind};

use super::loader::Loader;

/// ansible-core's own action plugins (`ansible/plugins/action/`).
const BUILTIN_ACTIONS: &[&str] = &[
    "add_host",
    "assemble",
    "assert",
    "async_status",
    "command",
    "copy",
    "debug",
    "dnf",
    "fail",
    "fetch",
    "gather_facts",
    "group_by",
    "include_vars",
    "normal",
    "package",
    "pause",
    "raw",
    "reboot",
    "script",
    "service",
    "set_fact",
    "set_stats",
    "shell",
    "template",
    "unarchive",
    "uri",
    "validate_argument_spec",
    "wait_for_connection",
];

/// ansible-core's own action routing that turbo-play knows without reading it (so
/// without the controller Python): `yum` is the dnf action.
const BUILTIN_ACTION_REDIRECTS: &[(&str, &str)] = &[("yum", "ansible.builtin.dnf")];

/// Where a name led.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Resolved {
    /// The plugin's fully qualified name (`ansible.legacy.x` for one found in a library
    /// or `*_plugins` directory, `ansible.builtin.x` for ansible-core's own).
    pub(super) fqcn: String,
    /// A redirect was followed on the way.
    pub(super) redirected: bool,
    /// A module's routing names the action plugin that runs it.
    pub(super) action_plugin: Option<String>,
}

/// What a walk depends on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct ResolveKey {
    kind: RouteKind,
    name: String,
    collections: Vec<String>,
    role_dir: Option<std::path::PathBuf>,
    playbook_dir: std::path::PathBuf,
    generation: u64,
}

enum Step {
    Found(Resolved),
    Redirect(String),
    NotFound,
}

pub(super) use crate::modules::module_defaults::is_fqcr;

use crate::plugins::catalog::is_identifier;

fn split(fqcn: &str) -> Option<(&str, &str)> {
    let dot = fqcn.match_indices('.').nth(1)?.0;
    Some((&fqcn[..dot], &fqcn[dot + 1..]))
}

impl Loader<'_> {
    /// Plugin `name` of `kind` as Ansible's loader finds it, redirects followed (their
    /// deprecations shown when `warn`). `Err` is Ansible's message for a removed plugin,
    /// a redirect loop or a redirect that is no FQCN.
    pub(super) fn resolve_plugin(
        &self,
        kind: RouteKind,
        name: &str,
        collections: &[String],
        role_dir: Option<&Path>,
        warn: bool,
    ) -> Result<Option<Resolved>, String> {
        // Every task asks, most for the same few names: one walk per name and search path
        // (the playbook's directory, the role's; a role or plugin directory joining the
        // catalog changes its generation).
        let key = ResolveKey {
            kind,
            name: name.to_string(),
            collections: collections.to_vec(),
            role_dir: role_dir.map(Path::to_path_buf),
            playbook_dir: self.playbook_dir.clone(),
            generation: self.shared.plugins.generation(),
        };
        if let Some(known) = self.shared.resolved.borrow().get(&key) {
            return known.clone();
        }
        let found = self.walk(kind, name, collections, role_dir, warn);
        // A walk that did not show its deprecations is not kept for one that must.
        if warn {
            self.shared.resolved.borrow_mut().insert(key, found.clone());
        }
        found
    }

    fn walk(
        &self,
        kind: RouteKind,
        name: &str,
        collections: &[String],
        role_dir: Option<&Path>,
        warn: bool,
    ) -> Result<Option<Resolved>, String> {
        let mut chain = vec![name.to_string()];
        let mut current = name.to_string();
        loop {
            match self.resolve_step(kind, &current, collections, role_dir, warn)? {
                Step::Found(mut found) => {
                    found.redirected = chain.len() > 1;
                    return Ok(Some(found));
                }
                Step::NotFound => return Ok(None),
                Step::Redirect(to) => {
                    if chain.contains(&to) {
                        return Err(format!(
                            "plugin redirect loop resolving {name} (path: [{}])",
                            chain
                                .iter()
                                .map(|n| format!("'{n}'"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    chain.push(to.clone());
                    current = to;
                }
            }
        }
    }

    fn resolve_step(
        &self,
        kind: RouteKind,
        name: &str,
        collections: &[String],
        role_dir: Option<&Path>,
        warn: bool,
    ) -> Result<Step, String> {
        if is_fqcr(name) || !collections.is_empty() {
            let mut candidates: Vec<String> = if name.contains('.') || collections.is_empty() {
                vec![name.to_string()]
            } else {
                collections.iter().map(|c| format!("{c}.{name}")).collect()
            };
            // The `collections` keyword always ends in ansible.legacy, as Ansible's does.
            if !name.contains('.')
                && !collections
                    .iter()
                    .any(|c| c == "ansible.legacy" || c == "ansible.builtin")
            {
                candidates.push(format!("ansible.legacy.{name}"));
            }
            for candidate in candidates {
                let step = match candidate.strip_prefix("ansible.legacy.") {
                    Some(short) => self.legacy_step(kind, short, role_dir, warn)?,
                    None => self.fq_step(kind, &candidate, warn)?,
                };
                if !matches!(step, Step::NotFound) {
                    return Ok(step);
                }
            }
            return Ok(Step::NotFound);
        }
        self.legacy_step(kind, name, role_dir, warn)
    }

    /// The library and `*_plugins` directories, then ansible-core's own, then
    /// `ansible.builtin`'s routing.
    fn legacy_step(
        &self,
        kind: RouteKind,
        name: &str,
        role_dir: Option<&Path>,
        warn: bool,
    ) -> Result<Step, String> {
        let configured = match kind {
            RouteKind::Module => self
                .shared
                .library_module(name, &self.playbook_dir, role_dir)
                .is_some(),
            RouteKind::Action => self
                .shared
                .plugins
                .find(
                    crate::plugins::Kind::Action,
                    &format!("ansible.legacy.{name}"),
                    &[],
                )
                .is_some(),
        };
        if configured {
            return Ok(Step::Found(Resolved {
                fqcn: format!("ansible.legacy.{name}"),
                redirected: false,
                action_plugin: None,
            }));
        }
        if builtin_exists(kind, name) {
            return Ok(Step::Found(Resolved {
                fqcn: format!("ansible.builtin.{name}"),
                redirected: false,
                action_plugin: None,
            }));
        }
        if name.contains('.') || !is_identifier(name) {
            return Ok(Step::NotFound);
        }
        if kind == RouteKind::Module
            && let Some(fqcn) = crate::modules::registry::native_collection_fqcn(name)
        {
            // ansible-core routes it to its collection, which turbo-play runs itself.
            return Ok(Step::Found(Resolved {
                fqcn: fqcn.to_string(),
                redirected: false,
                action_plugin: None,
            }));
        }
        // ansible-core routes no action of a name one of its modules has: the routing
        // (and the controller Python that knows where it is) need not be asked.
        if kind == RouteKind::Action
            && (builtin_exists(RouteKind::Module, name)
                || self
                    .shared
                    .library_module(name, &self.playbook_dir, role_dir)
                    .is_some())
        {
            return Ok(Step::NotFound);
        }
        self.fq_step(kind, &format!("ansible.builtin.{name}"), warn)
    }

    /// A fully qualified name: its collection's routing, then its file.
    fn fq_step(&self, kind: RouteKind, fqcn: &str, warn: bool) -> Result<Step, String> {
        let Some((collection, resource)) = split(fqcn) else {
            return Ok(Step::NotFound);
        };
        // A name of ansible-core's own modules or actions: its routing (in the controller
        // Python's ansible-core, which would have to be found first) routes none of them
        // elsewhere, so it is not read for them.
        if collection == "ansible.builtin"
            && let Some((_, to)) = BUILTIN_ACTION_REDIRECTS
                .iter()
                .find(|(from, _)| *from == resource)
        {
            return Ok(match kind {
                RouteKind::Action => Step::Redirect(to.to_string()),
                RouteKind::Module => Step::NotFound,
            });
        }
        if collection == "ansible.builtin"
            && (builtin_exists(RouteKind::Module, resource)
                || builtin_exists(RouteKind::Action, resource))
        {
            if !builtin_exists(kind, resource) {
                return Ok(Step::NotFound);
            }
            return Ok(Step::Found(Resolved {
                fqcn: fqcn.to_string(),
                redirected: false,
                action_plugin: None,
            }));
        }
        let mut action_plugin = None;
        if let Some(meta) = self.runtime_meta(collection)
            && let Some(route) = meta.route(kind, resource)
        {
            if warn && let Some(notice) = &route.deprecation {
                crate::yaml::push_load_deprecation(routing::deprecation_text(
                    fqcn, notice, collection,
                ));
            }
            if let Some(notice) = &route.tombstone {
                return Err(routing::removal_text(kind, fqcn, notice, collection));
            }
            if let Some(to) = &route.redirect {
                if !is_fqcr(to) {
                    return Err(format!(
                        "Collection {collection} contains invalid redirect for {fqcn}: {to}. \
                         Redirects must use fully qualified collection names."
                    ));
                }
                return Ok(Step::Redirect(to.clone()));
            }
            if kind == RouteKind::Module {
                action_plugin = route.action_plugin.clone();
            }
        }
        // ansible.builtin's modules and actions were found above: what is left of it is
        // only what its routing says.
        let exists = collection != "ansible.builtin"
            && match kind {
                RouteKind::Module => {
                    crate::modules::find(fqcn).is_some()
                        || self
                            .shared
                            .collection_module(fqcn, &self.playbook_dir, None)
                            .is_some()
                }
                RouteKind::Action => self
                    .shared
                    .plugins
                    .find(crate::plugins::Kind::Action, fqcn, &[])
                    .is_some(),
            };
        Ok(if exists {
            Step::Found(Resolved {
                fqcn: fqcn.to_string(),
                redirected: false,
                action_plugin,
            })
        } else {
            Step::NotFound
        })
    }

    /// The runtime metadata of collection `ns.coll`, when it is installed.
    pub(super) fn runtime_meta(
        &self,
        collection: &str,
    ) -> Option<std::sync::Arc<routing::RuntimeMeta>> {
        if collection == "ansible.builtin" {
            return routing::runtime_meta(collection, None);
        }
        let dir = self.shared.plugins.collection_dir(collection)?;
        routing::runtime_meta(collection, Some(&dir))
    }

    /// The FQCN Ansible resolves a task's action to (the action plugin's, else the
    /// module's): what its `module_defaults` are matched by.
    pub(super) fn resolved_action(
        &self,
        written: &str,
        module: &dyn crate::modules::Module,
        collections: &[String],
        role_dir: Option<&Path>,
    ) -> String {
        let found = |kind| {
            self.resolve_plugin(kind, written, collections, role_dir, false)
                .ok()
                .flatten()
        };
        if let Some(found) = found(RouteKind::Action).or_else(|| found(RouteKind::Module)) {
            return found.fqcn;
        }
        super::fallback_fqcn(written, module.name())
    }
}

fn builtin_exists(kind: RouteKind, name: &str) -> bool {
    match kind {
        // ansible-core 2.21 has no yum module: its action routing sends `yum` to dnf.
        RouteKind::Module => {
            crate::modules::registry::is_builtin(name)
                && !BUILTIN_ACTION_REDIRECTS
                    .iter()
                    .any(|(from, _)| *from == name)
        }
        RouteKind::Action => BUILTIN_ACTIONS.contains(&name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ansible-playbook 2.21.5: a block's or a task's `collections:` replaces the play's
    /// for a short name.
    #[test]
    fn the_innermost_collections_keyword_replaces_those_around_it() {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir
            .path()
            .join("collections/ansible_collections/ns/a/plugins/modules");
        std::fs::create_dir_all(&modules).unwrap();
        std::fs::write(modules.join("onlya.py"), "").unwrap();
        let load = |text: &str| {
            crate::playbook::load_playbook_text(&dir.path().join("site.yml"), text)
                .map_err(|e| e.to_string())
        };
        let head = "- hosts: all\n  collections: [ns.a]\n  tasks:\n";
        let found = load(&format!("{head}  - onlya:\n")).unwrap();
        assert_eq!(found.plays[0].tasks[0].resolved_action, "ns.a.onlya");
        for tasks in [
            "  - onlya:\n    collections: [ns.b]\n",
            "  - block:\n    - onlya:\n    collections: [ns.b]\n",
        ] {
            let err = load(&format!("{head}{tasks}")).unwrap_err();
            assert!(
                err.contains("couldn't resolve module/action 'onlya'"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_fully_qualified_name_splits_after_its_collection() {
        assert_eq!(split("ns.coll.sub.name"), Some(("ns.coll", "sub.name")));
    }
}
