//! Filters, tests and lookups written in Python: the run's plugin catalog says where they
//! are, the plugin host runs them. Filters and tests are many to a file, so their names
//! are learned from the host (once for the playbook's and roles' directories, once per
//! collection named in a template as `ns.coll.name`) and added to a copy of the
//! environment, where a name found in a plugin directory takes the place of turbo-play's
//! own, as Ansible's search order gives it precedence. Values cross as JSON; an undefined
//! value crosses as a marker, which a plugin that does not take markers never sees (it
//! comes back undefined, as Ansible's plugins' wrappers give it).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use minijinja::value::{Rest, Value as MjValue, ValueKind};
use minijinja::{Environment, Error as MjError, ErrorKind, State};
use serde_json::{Map, Value};

use crate::plugins::{Call, Catalog, ErrorKind as PluginErrorKind, Kind, PluginError, PluginFile};

/// How an undefined value crosses to the plugin host and back.
const MARKER_KEY: &str = "__turbo__";

/// One filter or test a plugin file defines.
#[derive(Debug, Clone)]
struct Entry {
    kind: Kind,
    /// The name templates use: short, or `ns.coll.name`.
    name: String,
    /// The host's handle on the function.
    id: u64,
    /// Whether it takes undefined arguments (Ansible's `accept_args_markers`).
    markers: bool,
    /// Why Ansible's wrapper could not be made (the plugin "failed to load").
    error: Option<String>,
}

/// The Python filters and tests of a run, and the environment that has them.
pub(super) struct JinjaPlugins {
    catalog: Arc<Catalog>,
    state: Mutex<Registry>,
    /// The base environment with the Python plugins added, rebuilt when they change.
    env: RwLock<Option<Arc<Environment<'static>>>>,
    /// The catalog generation (plus one) the registry is up to date with, and the
    /// collections already listed: what a render checks without taking the lock.
    fresh_at: AtomicU64,
    listed: RwLock<HashSet<(String, Kind)>>,
}

#[derive(Default)]
struct Registry {
    /// The catalog generation the legacy directories were listed at.
    listed_at: Option<u64>,
    legacy: Vec<Entry>,
    /// By collection and kind, what that collection defines (possibly nothing).
    collections: HashMap<(String, Kind), Vec<Entry>>,
    /// Why the host could not list plugins, said once.
    warned: bool,
}

impl JinjaPlugins {
    pub(super) fn new(catalog: Arc<Catalog>) -> JinjaPlugins {
        JinjaPlugins {
            catalog,
            state: Mutex::default(),
            env: RwLock::default(),
            fresh_at: AtomicU64::new(0),
            listed: RwLock::default(),
        }
    }

    /// The base environment changed (lookups registered again): rebuild on next use.
    pub(super) fn invalidate(&self) {
        *self.env.write().unwrap_or_else(|p| p.into_inner()) = None;
        self.fresh_at.store(0, Ordering::Release);
    }

    /// The environment to render `source` in: the base one, or its copy with the Python
    /// plugins `source` may use (listed first if they were not yet).
    pub(super) fn environment(
        &self,
        base: &Environment<'static>,
        source: &str,
    ) -> Option<Arc<Environment<'static>>> {
        let generation = self.catalog.generation();
        let wanted: Vec<(Kind, String)> = match source.contains('.') {
            true => collection_names(source)
                .into_iter()
                .filter(|(_, name)| collection_of(name).is_some())
                .collect(),
            false => Vec::new(),
        };
        let listed = |wanted: &[(Kind, String)]| {
            let listed = self.listed.read().unwrap_or_else(|p| p.into_inner());
            wanted.iter().all(|(kind, name)| {
                collection_of(name).is_some_and(|c| listed.contains(&(c, *kind)))
            })
        };
        if self.fresh_at.load(Ordering::Acquire) == generation + 1 && listed(&wanted) {
            return self.env.read().unwrap_or_else(|p| p.into_inner()).clone();
        }
        let mut changed = false;
        {
            let mut registry = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if registry.listed_at != Some(generation) {
                registry.listed_at = Some(generation);
                let legacy = self.list_legacy(&mut registry);
                changed |= !legacy.is_empty() || !registry.legacy.is_empty();
                registry.legacy = legacy;
            }
            for (kind, name) in wanted {
                let Some(collection) = collection_of(&name) else {
                    continue;
                };
                let key = (collection.clone(), kind);
                if registry.collections.contains_key(&key) {
                    continue;
                }
                let files = self.catalog.collection_files(kind, &collection);
                let entries = if files.is_empty() {
                    Vec::new()
                } else {
                    self.list(&mut registry, kind, &files, Some(&collection))
                };
                changed |= !entries.is_empty();
                registry.collections.insert(key.clone(), entries);
                self.listed
                    .write()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key);
            }
            self.fresh_at.store(generation + 1, Ordering::Release);
            if !changed {
                let current = self.env.read().unwrap_or_else(|p| p.into_inner()).clone();
                if current.is_some() || !has_entries(&registry) {
                    return current;
                }
            }
            let mut env = base.clone();
            for entry in registry
                .legacy
                .iter()
                .chain(registry.collections.values().flatten())
            {
                add(&mut env, entry.clone(), self.catalog.clone());
            }
            let env = Arc::new(env);
            *self.env.write().unwrap_or_else(|p| p.into_inner()) = Some(env.clone());
            Some(env)
        }
    }

    fn list_legacy(&self, registry: &mut Registry) -> Vec<Entry> {
        let mut entries = Vec::new();
        for kind in [Kind::Filter, Kind::Test] {
            let files = self.catalog.files(kind);
            if !files.is_empty() {
                entries.extend(self.list(registry, kind, &files, None));
            }
        }
        entries
    }

    /// Asks the host what `files` define, in order (a collection's: the last file to
    /// define a name wins, as Ansible's collection loader has it).
    fn list(
        &self,
        registry: &mut Registry,
        kind: Kind,
        files: &[PluginFile],
        collection: Option<&str>,
    ) -> Vec<Entry> {
        let mut payload = Map::new();
        payload.insert("kind".into(), Value::from(kind.word()));
        payload.insert(
            "files".into(),
            Value::Array(
                files
                    .iter()
                    .map(|f| {
                        serde_json::json!({
                            "path": f.path.display().to_string(),
                            "import_name": f.import_name,
                        })
                    })
                    .collect(),
            ),
        );
        payload.insert("later_wins".into(), Value::Bool(collection.is_some()));
        let answer = host(&self.catalog).and_then(|host| {
            host.call("jinja_list", payload, &mut |_| {
                Err("listing plugins calls nothing".into())
            })
        });
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                if !registry.warned {
                    registry.warned = true;
                    let mut dirs: Vec<String> = files
                        .iter()
                        .filter_map(|f| f.path.parent().map(|p| p.display().to_string()))
                        .collect();
                    dirs.dedup();
                    let why = format!(
                        "the {} plugins in {} were not loaded: {e}",
                        kind.word(),
                        dirs.join(", ")
                    );
                    eprintln!("[WARNING]: The {why}");
                    let _ = NOT_LOADED.set(why);
                }
                return Vec::new();
            }
        };
        // Ansible warns of a collection's file that does not load (a legacy one only at
        // -vvvv).
        if collection.is_some() {
            for skipped in answer
                .get("skipped")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                eprintln!(
                    "[WARNING]: Skipping {} plugins in {}; an error occurred while loading: {}",
                    kind.word(),
                    skipped
                        .get("path")
                        .and_then(Value::as_str)
                        .unwrap_or_default(),
                    skipped
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                );
            }
        }
        answer
            .get("plugins")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let short = p.get("name")?.as_str()?;
                Some(Entry {
                    kind,
                    name: match collection {
                        Some(c) => format!("{c}.{short}"),
                        None => short.to_string(),
                    },
                    id: p.get("id")?.as_u64()?,
                    markers: p.get("markers").and_then(Value::as_bool).unwrap_or(false),
                    error: p.get("error").and_then(Value::as_str).map(str::to_string),
                })
            })
            .collect()
    }
}

/// Why the run's Python filters and tests could not be loaded, if they could not: a
/// template that names an unknown one says so.
static NOT_LOADED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub(super) fn not_loaded() -> Option<&'static str> {
    NOT_LOADED.get().map(String::as_str)
}

fn has_entries(registry: &Registry) -> bool {
    !registry.legacy.is_empty() || registry.collections.values().any(|e| !e.is_empty())
}

/// The run's host, started with the collections the catalog knows.
fn host(catalog: &Catalog) -> Result<&'static crate::plugins::Host, PluginError> {
    if let Some(started) = crate::plugins::host::started() {
        return started;
    }
    let playbook_dir = std::env::current_dir().unwrap_or_default();
    crate::plugins::host(&catalog.collection_roots(), &playbook_dir)
}

/// `ns.coll` of a `ns.coll.name` filter or test (not ansible-core's own).
fn collection_of(name: &str) -> Option<String> {
    let mut parts = name.split('.');
    let (ns, coll) = (parts.next()?, parts.next()?);
    parts.next()?;
    (ns != "ansible").then(|| format!("{ns}.{coll}"))
}

/// The `ns.coll.name` filters (after `|`) and tests (after `is`, `is not`) a template
/// names, found by a look at its text.
fn collection_names(source: &str) -> Vec<(Kind, String)> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let (kind, after) = if bytes[i] == b'|' && bytes.get(i + 1) != Some(&b'|') {
            (Kind::Filter, i + 1)
        } else if bytes[i..].starts_with(b"is ") && (i == 0 || !is_ident_byte(bytes[i - 1])) {
            let rest = source[i + 3..].trim_start();
            let skip = source.len() - rest.len();
            match rest.strip_prefix("not ") {
                Some(after_not) => (Kind::Test, source.len() - after_not.len()),
                None => (Kind::Test, skip),
            }
        } else {
            i += 1;
            continue;
        };
        let rest = &source[after..];
        let trimmed = rest.trim_start();
        let start = source.len() - trimmed.len();
        let len = trimmed
            .bytes()
            .take_while(|&b| is_ident_byte(b) || b == b'.')
            .count();
        let name = &source[start..start + len];
        if name.matches('.').count() >= 2 && !out.iter().any(|(k, n)| *k == kind && n == name) {
            out.push((kind, name.to_string()));
        }
        i = start.max(i + 1);
    }
    out
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn add(env: &mut Environment<'static>, entry: Entry, catalog: Arc<Catalog>) {
    let name = entry.name.clone();
    match entry.kind {
        Kind::Test => {
            env.add_test(name, move |args: Rest<MjValue>| -> Result<bool, MjError> {
                let value = call(&entry, &catalog, &args)?;
                if value.is_undefined() {
                    return Err(MjError::new(
                        ErrorKind::UndefinedError,
                        "a test was given an undefined value",
                    ));
                }
                Ok(value.is_true())
            });
        }
        _ => {
            env.add_filter(
                name,
                move |args: Rest<MjValue>| -> Result<MjValue, MjError> {
                    call(&entry, &catalog, &args)
                },
            );
        }
    }
}

/// Runs a filter or test, as Ansible's wrapper does: a plugin that failed to load says
/// so, one that takes no markers is not called with an undefined argument (the result is
/// undefined), and what it raises is the plugin's failure.
fn call(entry: &Entry, catalog: &Catalog, args: &[MjValue]) -> Result<MjValue, MjError> {
    let word = entry.kind.word();
    if let Some(why) = &entry.error {
        return Err(plugin_error(format!(
            "The {word} plugin '{}' failed to load: {why}",
            entry.name
        )));
    }
    let (positional, kwargs) = split_kwargs(args);
    if !entry.markers
        && positional
            .iter()
            .chain(kwargs.iter().map(|(_, v)| v))
            .any(MjValue::is_undefined)
    {
        return Ok(MjValue::UNDEFINED);
    }
    let mut payload = Map::new();
    payload.insert("plugin".into(), Value::from(entry.id));
    payload.insert(
        "args".into(),
        Value::Array(positional.iter().map(to_plugin_json).collect()),
    );
    payload.insert(
        "kwargs".into(),
        Value::Object(
            kwargs
                .iter()
                .map(|(k, v)| (k.clone(), to_plugin_json(v)))
                .collect(),
        ),
    );
    let answer = host(catalog).and_then(|host| {
        host.call("jinja_call", payload, &mut |_| {
            Err("a filter calls nothing".into())
        })
    });
    match answer {
        Ok(answer) => Ok(from_plugin_json(
            answer.get("value").cloned().unwrap_or(Value::Null),
        )),
        Err(e) => Err(plugin_error(failure(word, &entry.name, &e))),
    }
}

/// Ansible's words for a plugin's failure.
fn failure(word: &str, name: &str, e: &PluginError) -> String {
    match e.kind {
        PluginErrorKind::Load | PluginErrorKind::Host | PluginErrorKind::NoAnsible => {
            format!("The {word} plugin '{name}' failed to load: {}", e.message)
        }
        _ => format!("The {word} plugin '{name}' failed: {}", e.message),
    }
}

fn plugin_error(message: String) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message)
}

/// A call's positional arguments and its keyword arguments (minijinja passes those as a
/// last, special map).
fn split_kwargs(args: &[MjValue]) -> (Vec<MjValue>, Vec<(String, MjValue)>) {
    match args.split_last() {
        Some((last, rest)) if last.is_kwargs() => {
            let pairs = last
                .try_iter()
                .into_iter()
                .flatten()
                .filter_map(|k| {
                    let v = last.get_item(&k).ok()?;
                    Some((k.as_str()?.to_string(), v))
                })
                .collect();
            (rest.to_vec(), pairs)
        }
        _ => (args.to_vec(), Vec::new()),
    }
}

/// A template value as the plugin host reads it: JSON, an undefined value as a marker.
pub fn to_plugin_json(value: &MjValue) -> Value {
    match value.kind() {
        ValueKind::Undefined => marker(),
        ValueKind::Seq if super::native::holds_undefined(value) => Value::Array(
            value
                .try_iter()
                .into_iter()
                .flatten()
                .map(|v| to_plugin_json(&v))
                .collect(),
        ),
        ValueKind::Map if super::native::holds_undefined(value) => Value::Object(
            value
                .try_iter()
                .into_iter()
                .flatten()
                .filter_map(|k| {
                    let v = value.get_item(&k).ok()?;
                    let key = k.as_str().map_or_else(|| k.to_string(), str::to_string);
                    Some((key, to_plugin_json(&v)))
                })
                .collect(),
        ),
        _ => serde_json::to_value(value).unwrap_or(Value::Null),
    }
}

fn marker() -> Value {
    let mut m = Map::new();
    m.insert(MARKER_KEY.into(), Value::from("undefined"));
    Value::Object(m)
}

fn is_marker(value: &Value) -> bool {
    value.as_object().is_some_and(|m| {
        m.get(MARKER_KEY).and_then(Value::as_str) == Some("undefined") && m.len() <= 2
    })
}

fn holds_marker(value: &Value) -> bool {
    match value {
        Value::Object(m) => is_marker(value) || m.values().any(holds_marker),
        Value::Array(items) => items.iter().any(holds_marker),
        _ => false,
    }
}

/// What a plugin gave back, as a template value (a marker as an undefined value).
pub(super) fn from_plugin_json(value: Value) -> MjValue {
    if !holds_marker(&value) {
        return MjValue::from_serialize(value);
    }
    match value {
        v if is_marker(&v) => MjValue::UNDEFINED,
        Value::Array(items) => items.into_iter().map(from_plugin_json).collect(),
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| (k, from_plugin_json(v)))
            .collect(),
        other => MjValue::from_serialize(other),
    }
}

/// Runs a Python lookup: its terms and keyword arguments (without `wantlist` and
/// `errors`, which are the caller's), the variables it reads fetched from the template's
/// context as it asks, its templates rendered there. Its answer is the list `run`
/// returned, or undefined when it declined an undefined term.
pub(super) fn lookup(
    state: &State,
    file: &PluginFile,
    terms: &[MjValue],
    kwargs: Vec<(String, MjValue)>,
    catalog: &Catalog,
    playbook_dir: Option<PathBuf>,
) -> Result<Option<Vec<MjValue>>, MjError> {
    let name = file.fqcn();
    let mut payload = Map::new();
    payload.insert("path".into(), Value::from(file.path.display().to_string()));
    payload.insert("import_name".into(), Value::from(file.import_name.clone()));
    payload.insert("name".into(), Value::from(file.name.clone()));
    payload.insert("fqcn".into(), Value::from(name.clone()));
    payload.insert(
        "terms".into(),
        Value::Array(terms.iter().map(to_plugin_json).collect()),
    );
    payload.insert(
        "kwargs".into(),
        Value::Object(
            kwargs
                .iter()
                .map(|(k, v)| (k.clone(), to_plugin_json(v)))
                .collect(),
        ),
    );
    if let Some(dir) = playbook_dir {
        payload.insert(
            "playbook_dir".into(),
            Value::from(dir.display().to_string()),
        );
    }
    let answer = host(catalog)
        .and_then(|host| host.call("lookup", payload, &mut |call| serve_from_state(state, call)));
    match answer {
        Ok(answer) => match from_plugin_json(answer.get("value").cloned().unwrap_or(Value::Null)) {
            v if v.is_undefined() => Ok(None),
            v if v.kind() == ValueKind::Seq => Ok(Some(v.try_iter()?.collect())),
            v => Ok(Some(vec![v])),
        },
        Err(e) => Err(plugin_error(failure("lookup", &name, &e))),
    }
}

/// A lookup's terms with the templates written inside them rendered first, as Ansible
/// still does for lookups (`ALLOW_EMBEDDED_TEMPLATES`, on until 2.23): `lookup('x',
/// '{{ a }}')` gives the plugin `a`'s value, undefined if it is undefined.
pub(super) fn embedded_templates(
    state: &State,
    terms: &[MjValue],
) -> Result<Vec<MjValue>, MjError> {
    let allowed = std::env::var("ANSIBLE_ALLOW_EMBEDDED_TEMPLATES")
        .map(|v| crate::booleans::lenient(&Value::String(v)))
        .unwrap_or(true);
    if !allowed || !terms.iter().any(holds_template) {
        return Ok(terms.to_vec());
    }
    terms
        .iter()
        .map(|term| {
            if !holds_template(term) {
                return Ok(term.clone());
            }
            let json = to_plugin_json(term);
            render_in_state(state, &json).map_err(plugin_error)
        })
        .collect()
}

fn holds_template(value: &MjValue) -> bool {
    match value.kind() {
        ValueKind::String => value.as_str().is_some_and(super::is_template),
        ValueKind::Seq => value
            .try_iter()
            .into_iter()
            .flatten()
            .any(|v| holds_template(&v)),
        ValueKind::Map
            if value.as_object().is_some_and(|o| {
                o.downcast_ref::<indexmap::IndexMap<MjValue, MjValue>>()
                    .is_some()
            }) =>
        {
            value
                .try_iter()
                .into_iter()
                .flatten()
                .any(|k| value.get_item(&k).is_ok_and(|v| holds_template(&v)))
        }
        _ => false,
    }
}

/// A lookup's calls back, served from the template's context: the variables it reads,
/// the templates and expressions it asks to be rendered.
fn serve_from_state(state: &State, call: &Call) -> Result<Value, String> {
    match call.kind.as_str() {
        "var" => {
            let name = call.str("name").unwrap_or_default();
            Ok(match state.lookup(name) {
                Some(v) if !v.is_undefined() => {
                    serde_json::json!({"found": true, "value": to_plugin_json(&v)})
                }
                _ => serde_json::json!({"found": false}),
            })
        }
        "var_names" => Ok(Value::from(
            state
                .known_variables()
                .iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>(),
        )),
        "template" => {
            let value = call.payload.get("value").cloned().unwrap_or(Value::Null);
            render_in_state(state, &value).map(|v| to_plugin_json(&v))
        }
        "expression" => {
            let context = context_of(state);
            state
                .env()
                .compile_expression(call.str("expression").unwrap_or_default())
                .and_then(|e| e.eval(context))
                .map(|v| to_plugin_json(&v))
                .map_err(|e| e.to_string())
        }
        other => Err(format!(
            "a lookup plugin cannot ask turbo-play for '{other}'"
        )),
    }
}

/// Every variable the template sees, as one context (for a plugin's own templates).
fn context_of(state: &State) -> MjValue {
    state
        .known_variables()
        .iter()
        .filter_map(|name| Some((name.to_string(), state.lookup(name)?)))
        .collect()
}

/// Renders the strings in `value` with the template's variables: a string that is one
/// `{{ }}` keeps its value's type.
pub(super) fn render_in_state(state: &State, value: &Value) -> Result<MjValue, String> {
    fn render(env: &Environment<'_>, context: &MjValue, value: &Value) -> Result<MjValue, String> {
        match value {
            Value::String(s) if super::is_template(s) => {
                if let Some(inner) = super::single_expression(s.trim()) {
                    return env
                        .compile_expression(inner)
                        .and_then(|e| e.eval(context.clone()))
                        .map_err(|e| e.to_string());
                }
                env.render_str(s, context.clone())
                    .map(MjValue::from)
                    .map_err(|e| e.to_string())
            }
            Value::Array(items) => items
                .iter()
                .map(|v| render(env, context, v))
                .collect::<Result<Vec<_>, _>>()
                .map(MjValue::from),
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| Ok((k.clone(), render(env, context, v)?)))
                .collect::<Result<Vec<(String, MjValue)>, String>>()
                .map(|pairs| pairs.into_iter().collect()),
            other => Ok(MjValue::from_serialize(other)),
        }
    }
    render(state.env(), &context_of(state), value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collection_filters_and_tests_are_found_in_template_text() {
        let names = collection_names(
            "{{ x | ns.coll.f(1) | default('a') }} {% if y is not ns.coll.t %}{% endif %} {{ z is ns.c.u }} {{ a || b }} {{ q | ansible.builtin.to_json }}",
        );
        assert_eq!(
            names,
            [
                (Kind::Filter, "ns.coll.f".to_string()),
                (Kind::Test, "ns.coll.t".to_string()),
                (Kind::Test, "ns.c.u".to_string()),
                (Kind::Filter, "ansible.builtin.to_json".to_string()),
            ]
        );
        assert_eq!(collection_of("ansible.builtin.to_json"), None);
        assert_eq!(collection_of("ns.coll.f").as_deref(), Some("ns.coll"));
        assert!(collection_names("{{ x | f }}").is_empty());
        assert!(collection_names("汉语-{{ x | ternary('a', 'b') }} is Å").is_empty());
    }

    /// A Templar with the plugins under `dir` (a playbook's directory).
    fn templar_with_plugins(dir: &std::path::Path) -> super::super::Templar {
        let catalog = Arc::new(Catalog::new(&crate::plugins::ConfiguredPaths::default()));
        catalog.add_root(dir);
        let mut templar = super::super::Templar::new();
        templar.set_plugins(catalog);
        templar
    }

    #[test]
    fn a_playbooks_filters_and_tests_render_through_the_plugin_host() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("filter_plugins")).unwrap();
        std::fs::create_dir_all(dir.path().join("test_plugins")).unwrap();
        std::fs::write(
            dir.path().join("filter_plugins/f.py"),
            "def boom(v):\n    raise ValueError('kaboom')\n\nclass FilterModule:\n    def filters(self):\n        return {'twice': lambda v, n=2: v * n, 'boom': boom, 'to_json': lambda v: 'mine'}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("test_plugins/t.py"),
            "class TestModule:\n    def tests(self):\n        return {'short': lambda v: len(v) < 3}\n",
        )
        .unwrap();
        let templar = templar_with_plugins(dir.path());
        let vars = MjValue::from_serialize(serde_json::json!({"x": "ab"}));
        let render = |s: &str| templar.render_value(&Value::from(s), &vars);
        assert_eq!(
            render("{{ x | twice(n=3) }}").unwrap(),
            Value::from("ababab")
        );
        assert_eq!(render("{{ x is short }}").unwrap(), Value::Bool(true));
        // A playbook's filter takes the place of turbo-play's own.
        assert_eq!(render("{{ x | to_json }}").unwrap(), Value::from("mine"));
        // One that is not given an undefined value gives it back.
        assert_eq!(
            render("{{ (nope | twice) is undefined }}").unwrap(),
            Value::Bool(true)
        );
        let err = render("{{ x | boom }}").unwrap_err().cause();
        assert_eq!(err, "The filter plugin 'boom' failed: kaboom");
    }

    #[test]
    fn undefined_values_cross_as_markers_both_ways() {
        let list = MjValue::from(vec![MjValue::UNDEFINED, MjValue::from(42)]);
        let json = to_plugin_json(&list);
        assert_eq!(json, serde_json::json!([{"__turbo__": "undefined"}, 42]));
        let back = from_plugin_json(json);
        assert!(back.get_item(&MjValue::from(0)).unwrap().is_undefined());
        assert_eq!(back.get_item(&MjValue::from(1)).unwrap(), MjValue::from(42));
        let plain = from_plugin_json(serde_json::json!({"a": [1, "b"]}));
        assert_eq!(plain.to_string(), r#"{"a": [1, "b"]}"#);
    }
}
