//! A collection's `meta/runtime.yml` as Ansible's plugin loader reads it: `plugin_routing`
//! (a module or action redirected to another name, deprecated, removed, or a module run
//! by a named action plugin) and `action_groups` (what `group/NAME` in `module_defaults`
//! stands for). `ansible.builtin`'s is the installed ansible-core's own
//! `config/ansible_builtin_runtime.yml`. Each file is read once per run.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::Value as Json;

/// The plugin kinds whose routing a task's action follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteKind {
    Module,
    Action,
}

impl RouteKind {
    fn key(self) -> &'static str {
        match self {
            RouteKind::Module => "modules",
            RouteKind::Action => "action",
        }
    }

    /// How Ansible names the kind in a removal message.
    fn noun(self) -> &'static str {
        match self {
            RouteKind::Module => "module",
            RouteKind::Action => "action plugin",
        }
    }
}

/// A deprecation or removal notice, as written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Notice {
    pub warning_text: String,
    pub removal_version: Option<String>,
    pub removal_date: Option<String>,
}

/// One plugin's routing entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Route {
    pub redirect: Option<String>,
    pub deprecation: Option<Notice>,
    pub tombstone: Option<Notice>,
    /// A module's `action_plugin`: the action that runs it.
    pub action_plugin: Option<String>,
}

/// What one collection's runtime.yml says, parsed the first time something in it is
/// needed: community.general's is 47 KB of YAML, a few milliseconds to read, which a
/// playbook calling one of its modules that it does not route never needs.
#[derive(Debug, Default)]
pub struct RuntimeMeta {
    text: String,
    path: PathBuf,
    parsed: std::sync::OnceLock<Parsed>,
}

#[derive(Debug, Default)]
struct Parsed {
    routes: HashMap<(RouteKind, String), Route>,
    /// Each action group's entries as written (names, and the `metadata` mapping).
    action_groups: HashMap<String, Vec<Json>>,
}

impl RuntimeMeta {
    pub fn new(text: String, path: PathBuf) -> RuntimeMeta {
        RuntimeMeta {
            text,
            path,
            parsed: std::sync::OnceLock::new(),
        }
    }

    fn parsed(&self) -> &Parsed {
        self.parsed
            .get_or_init(|| Parsed::parse(&self.text, &self.path))
    }

    /// The routing of plugin `name` (its name inside the collection) of `kind`. A name
    /// the file never mentions has none, and needs no parse.
    pub fn route(&self, kind: RouteKind, name: &str) -> Option<&Route> {
        if !self.text.contains(name) {
            return None;
        }
        self.parsed().routes.get(&(kind, name.to_string()))
    }

    /// The entries of action group `name`, as written.
    pub fn action_group(&self, name: &str) -> Option<&Vec<Json>> {
        self.parsed().action_groups.get(name)
    }
}

impl Parsed {
    fn parse(text: &str, path: &Path) -> Parsed {
        let source = crate::yaml::Source::from_text(path, text);
        let Ok(node) = source.parse() else {
            return Parsed::default();
        };
        let json = node.to_json();
        let mut meta = Parsed::default();
        let routing = json.get("plugin_routing");
        for kind in [RouteKind::Module, RouteKind::Action] {
            let Some(Json::Object(entries)) = routing.and_then(|r| r.get(kind.key())) else {
                continue;
            };
            for (name, entry) in entries {
                meta.routes.insert((kind, name.clone()), route(entry));
            }
        }
        if let Some(Json::Object(groups)) = json.get("action_groups") {
            for (name, entries) in groups {
                let entries = match entries {
                    Json::Array(items) => items.clone(),
                    _ => Vec::new(),
                };
                meta.action_groups.insert(name.clone(), entries);
            }
        }
        meta
    }
}

fn route(entry: &Json) -> Route {
    let text = |v: Option<&Json>| -> Option<String> {
        match v? {
            Json::Null | Json::Bool(false) => None,
            Json::String(s) => Some(s.clone()),
            other => Some(crate::modules::spec::python_text(other)),
        }
    };
    let notice = |v: Option<&Json>| -> Option<Notice> {
        let v = v.filter(|v| v.is_object())?;
        Some(Notice {
            warning_text: text(v.get("warning_text")).unwrap_or_default(),
            removal_version: text(v.get("removal_version")),
            removal_date: text(v.get("removal_date")),
        })
    };
    Route {
        redirect: text(entry.get("redirect")),
        deprecation: notice(entry.get("deprecation")),
        tombstone: notice(entry.get("tombstone")),
        action_plugin: text(entry.get("action_plugin")),
    }
}

/// The runtime metadata of collection `ns.coll` found in `collection_dir` (or, for
/// `ansible.builtin`, the installed ansible-core's), read once per run.
pub fn runtime_meta(collection: &str, collection_dir: Option<&Path>) -> Option<Arc<RuntimeMeta>> {
    let path: PathBuf = if collection == "ansible.builtin" {
        crate::modules::python::finding::installed()
            .ansible_dir
            .as_ref()?
            .join("config/ansible_builtin_runtime.yml")
    } else {
        collection_dir?.join("meta/runtime.yml")
    };
    static READ: LazyLock<Mutex<HashMap<PathBuf, Arc<RuntimeMeta>>>> =
        LazyLock::new(Default::default);
    let mut read = READ.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(meta) = read.get(&path) {
        return Some(meta.clone());
    }
    // A collection without the file has no routing and no groups, but exists.
    let meta = match std::fs::read_to_string(&path) {
        Ok(text) => RuntimeMeta::new(text, path.clone()),
        Err(_) => RuntimeMeta::default(),
    };
    let meta = Arc::new(meta);
    read.insert(path, meta.clone());
    Some(meta)
}

/// Ansible's deprecation text for a routed plugin (`PluginLoadContext.record_deprecation`
/// with the collection as deprecator), as `[DEPRECATION WARNING]:` shows it.
pub fn deprecation_text(name: &str, notice: &Notice, collection: &str) -> String {
    let mut text = format!("{name} has been deprecated.");
    if !notice.warning_text.is_empty() {
        text.push(' ');
        text.push_str(&notice.warning_text);
    }
    text.push_str(&removal_clause(notice, collection, false));
    text
}

/// Ansible's message for a plugin a collection removed (a `tombstone`).
pub fn removal_text(kind: RouteKind, name: &str, notice: &Notice, collection: &str) -> String {
    let mut text = format!("The '{name}' {} has been removed.", kind.noun());
    if !notice.warning_text.is_empty() {
        text.push(' ');
        text.push_str(&notice.warning_text);
    }
    text.push_str(&removal_clause(notice, collection, true));
    text
}

/// " This feature will be removed from collection 'ns.coll' version X." and its kin, as
/// Ansible's `get_deprecation_message_with_plugin_info` words them (a date wins over a
/// version).
fn removal_clause(notice: &Notice, collection: &str, removed: bool) -> String {
    let whose = if collection == "ansible.builtin" {
        "ansible-core".to_string()
    } else {
        format!("collection '{collection}'")
    };
    let when = match (&notice.removal_date, &notice.removal_version) {
        (Some(date), _) => format!(" in a release after {date}"),
        (None, Some(version)) => format!(" version {version}"),
        (None, None) if removed => String::new(),
        (None, None) => " in a future release".to_string(),
    };
    if removed {
        format!(" This feature was removed from {whose}{when}.")
    } else {
        format!(" This feature will be removed from {whose}{when}.")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNTIME: &str = "\
plugin_routing:
  action:
    ios_facts:
      redirect: ns.coll.nope
  modules:
    eosfacts:
      action_plugin: ns.coll.eos
    old_ping:
      deprecation:
        removal_date: 2020-12-31
        warning_text: Use ping instead.
      redirect: ping
    gone:
      tombstone:
        removal_version: '2.0.0'
        warning_text: Use other.
action_groups:
  g:
    - metadata:
        extend_group: other
    - ping
";

    #[test]
    fn routes_and_groups_are_read_per_kind() {
        let meta = RuntimeMeta::new(RUNTIME.into(), "runtime.yml".into());
        let old = meta.route(RouteKind::Module, "old_ping").unwrap();
        assert_eq!(old.redirect.as_deref(), Some("ping"));
        assert_eq!(
            old.deprecation.as_ref().unwrap().removal_date.as_deref(),
            Some("2020-12-31")
        );
        assert_eq!(
            meta.route(RouteKind::Module, "eosfacts")
                .unwrap()
                .action_plugin
                .as_deref(),
            Some("ns.coll.eos")
        );
        assert!(meta.route(RouteKind::Module, "ios_facts").is_none());
        assert_eq!(
            meta.route(RouteKind::Action, "ios_facts")
                .unwrap()
                .redirect
                .as_deref(),
            Some("ns.coll.nope")
        );
        assert_eq!(meta.action_group("g").unwrap().len(), 2);
    }

    #[test]
    fn a_name_the_file_never_mentions_is_answered_without_parsing_it() {
        let meta = RuntimeMeta::new(RUNTIME.into(), "runtime.yml".into());
        assert!(meta.route(RouteKind::Module, "ini_file").is_none());
        assert!(meta.parsed.get().is_none());
        assert!(meta.route(RouteKind::Module, "old_ping").is_some());
        assert!(meta.parsed.get().is_some());
    }

    #[test]
    fn notices_in_ansibles_words() {
        let meta = RuntimeMeta::new(RUNTIME.into(), "runtime.yml".into());
        let old = meta.route(RouteKind::Module, "old_ping").unwrap();
        assert_eq!(
            deprecation_text(
                "ns.coll.old_ping",
                old.deprecation.as_ref().unwrap(),
                "ns.coll"
            ),
            "ns.coll.old_ping has been deprecated. Use ping instead. This feature will be \
             removed from collection 'ns.coll' in a release after 2020-12-31."
        );
        let gone = meta.route(RouteKind::Module, "gone").unwrap();
        assert_eq!(
            removal_text(
                RouteKind::Module,
                "ns.coll.gone",
                gone.tombstone.as_ref().unwrap(),
                "ns.coll"
            ),
            "The 'ns.coll.gone' module has been removed. Use other. This feature was removed \
             from collection 'ns.coll' version 2.0.0."
        );
    }
}
