//! Inventories as ansible-playbook reads them: `-i` INI files, YAML files, directories of
//! those and `h1,h2,` lists; host patterns (`web:&prod:!web3`, `web[0]`, `~re`, globs) and
//! `--limit`; and each host's inventory variables merged in Ansible's order.
//!
//! Loading builds a host/group graph (`data`), then runs Ansible's reconcile step, then
//! computes every host's merged variables once. `group_vars/` and `host_vars/` directories
//! next to the inventory sources and next to the playbook are layered in by
//! [`Inventory::host_vars_for`] (see `vars_dirs` for the order), read once per directory.

mod address;
mod data;
mod ini;
mod pattern;
mod pyliteral;
mod shlex;
mod vars_dirs;
mod view;
mod yaml_inv;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::yaml::{LoadError, Source};
use data::{ALL, Data, LOCALHOST_NAMES, SourceInfo};
use vars_dirs::{DirVars, Target, dir_key};
pub use view::GroupView;

/// A host with its inventory variables already merged (see [`Inventory::host_vars`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    pub name: String,
    pub vars: Map<String, Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum InventoryError {
    /// A problem in an inventory file: file:line:col, the line quoted, and how to fix it.
    #[error("{0}")]
    Load(Box<LoadError>),
    #[error("invalid host pattern `{pattern}`: {reason}")]
    Pattern { pattern: String, reason: String },
    #[error("--limit {path}: {reason}")]
    LimitFile { path: PathBuf, reason: String },
    /// The sources together make a group its own ancestor.
    #[error("inventory: {0}")]
    GroupLoop(String),
}

impl From<LoadError> for InventoryError {
    fn from(e: LoadError) -> Self {
        InventoryError::Load(Box::new(e))
    }
}

/// Hosts a pattern selected, and the parts of the pattern that matched nothing (for
/// "[WARNING]: Could not match supplied host pattern, ignoring: x").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Selection {
    pub hosts: Vec<String>,
    pub unmatched: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Inventory {
    data: Data,
    /// Same order as `data.hosts`, variables merged.
    hosts: Vec<Host>,
    /// The controller under the names `localhost`, `127.0.0.1` and `::1`, used when a
    /// pattern names one of them and the inventory does not define it.
    implicit: Vec<Host>,
    /// Ansible's `groups` variable, computed once.
    groups: BTreeMap<String, Vec<String>>,
    /// `groups` as templates see it (see [`Inventory::groups_in_order`]), built once: every
    /// task on every host gets it.
    groups_var: serde_json::Value,
    source_dirs: Vec<PathBuf>,
    warnings: Vec<String>,
    /// Each group's depth below `all`, for ordering group variables.
    depths: Vec<usize>,
    /// `group_vars/`/`host_vars/` read so far, by directory (read once, on first use).
    vars_dirs: Arc<Mutex<HashMap<PathBuf, Arc<DirVars>>>>,
    merged: Arc<Mutex<MergedVars>>,
    /// The sources as given to [`Inventory::load`], for `meta: refresh_inventory`.
    sources: Vec<String>,
}

/// Merged host variables by (playbook directory, host name, groups joined at run time).
type MergedVars = HashMap<(PathBuf, String, String), Map<String, Value>>;

/// `group_vars/`/`host_vars/` layers: the inventory's directories, then the playbook's.
type DirLayers = (Vec<Arc<DirVars>>, Vec<Arc<DirVars>>);

/// Files in an inventory directory that Ansible never reads as inventory.
const IGNORED_SUFFIXES: [&str; 12] = [
    ".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".cfg", ".retry",
];
const IGNORED_NAMES: [&str; 3] = ["host_vars", "group_vars", "vars_plugins"];

impl Inventory {
    /// Reads each `-i` value in order into one inventory. Missing paths are warnings, as in
    /// Ansible; so are files no parser reads (left out whole, as Ansible leaves them out).
    pub fn load(sources: &[String]) -> Result<Inventory, InventoryError> {
        let mut data = Data::default();
        let mut source_dirs = Vec::new();
        let mut warnings = Vec::new();
        let mut parsed_any = false;
        for raw in sources.iter().filter(|s| !s.is_empty()) {
            if raw.contains(',') && !Path::new(raw).exists() {
                load_host_list(raw, &mut data);
                parsed_any = true;
                continue;
            }
            let path = absolute(raw);
            let dir = if path.is_dir() {
                path.clone()
            } else {
                path.parent().map(Path::to_path_buf).unwrap_or_default()
            };
            if path.exists() && !source_dirs.contains(&dir) {
                source_dirs.push(dir);
            }
            if path.is_dir() {
                parsed_any |= load_dir(&path, &mut data, &mut warnings)?;
            } else if path.exists() {
                parsed_any |= load_file_or_warn(&path, &mut data, &mut warnings);
            } else {
                warnings.push(format!(
                    "Unable to parse {} as an inventory source",
                    path.display()
                ));
            }
        }
        if !sources.is_empty() && !parsed_any {
            warnings.push("No inventory was parsed, only implicit localhost is available".into());
        }
        data.reconcile().map_err(InventoryError::GroupLoop)?;
        warnings.append(&mut data.warnings);
        let mut inventory = Inventory::finish(data, source_dirs, warnings);
        inventory.sources = sources.to_vec();
        Ok(inventory)
    }

    /// The same sources read again (`meta: refresh_inventory`): hosts and groups as the
    /// files say now.
    pub fn reload(&self) -> Result<Inventory, InventoryError> {
        Inventory::load(&self.sources)
    }

    fn finish(data: Data, source_dirs: Vec<PathBuf>, warnings: Vec<String>) -> Inventory {
        let depths = data.depths();
        let hosts = (0..data.hosts.len())
            .map(|h| Host {
                name: data.hosts[h].name.clone(),
                vars: data.merged_host_vars(h, &depths),
            })
            .collect();
        // Ansible gives its implicit localhost the `all` group's variables and a local
        // connection (it also points ansible_python_interpreter at its own Python, which
        // has no counterpart here).
        let implicit = LOCALHOST_NAMES
            .iter()
            .map(|name| {
                let mut vars = data.groups[ALL].vars.clone();
                vars.insert("ansible_connection".into(), Value::from("local"));
                Host {
                    name: name.to_string(),
                    vars,
                }
            })
            .collect();
        let groups = (0..data.groups.len())
            .map(|g| {
                let hosts = data.group_hosts(g).into_iter();
                (
                    data.groups[g].name.clone(),
                    hosts.map(|h| data.hosts[h].name.clone()).collect(),
                )
            })
            .collect();
        let mut inventory = Inventory {
            data,
            hosts,
            implicit,
            groups,
            groups_var: serde_json::Value::Null,
            source_dirs,
            warnings,
            depths,
            vars_dirs: Arc::default(),
            merged: Arc::default(),
            sources: Vec::new(),
        };
        inventory.groups_var = inventory.groups_in_order(&inventory.groups);
        inventory
    }

    /// Every inventory host, in the order they were first defined.
    pub fn hosts(&self) -> impl Iterator<Item = &Host> {
        self.hosts.iter()
    }

    /// Directories of the `-i` sources (a file's directory, or the directory itself), where
    /// `group_vars/` and `host_vars/` are looked up.
    pub fn source_dirs(&self) -> &[PathBuf] {
        &self.source_dirs
    }

    /// Things Ansible prints as `[WARNING]: ...` while loading (missing sources, a group and a
    /// host sharing a name, duplicate localhost entries).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// A host by name; `localhost`, `127.0.0.1` and `::1` always resolve, to the inventory's
    /// localhost entry when it has one, else to the implicit local host.
    pub fn host(&self, name: &str) -> Option<&Host> {
        match self.resolve(name)? {
            HostRef::Defined(id) => Some(&self.hosts[id]),
            HostRef::Implicit(alias) => Some(&self.implicit[alias]),
        }
    }

    fn resolve(&self, name: &str) -> Option<HostRef> {
        if let Some(id) = self.data.host_id(name) {
            return Some(HostRef::Defined(id));
        }
        let alias = LOCALHOST_NAMES.iter().position(|n| *n == name)?;
        Some(
            self.data
                .localhost
                .map_or(HostRef::Implicit(alias), HostRef::Defined),
        )
    }

    /// Variables for a host, merged as Ansible does: `all` group vars, then parent groups
    /// before child groups (by depth, then `ansible_group_priority`, then name), then the
    /// host's own. Includes `inventory_file` and `inventory_dir`, which Ansible sets as host
    /// variables. Empty for unknown hosts.
    pub fn host_vars(&self, name: &str) -> Map<String, Value> {
        self.host(name).map(|h| h.vars.clone()).unwrap_or_default()
    }

    /// Reads (once) the `group_vars/` and `host_vars/` directories beside the inventory
    /// sources and beside `playbook_dir`, so that a broken file is reported before anything
    /// runs. [`Inventory::host_vars_for`] does this on first use too.
    pub fn load_vars_dirs(&self, playbook_dir: &Path) -> Result<(), InventoryError> {
        self.dir_vars(playbook_dir).map(|_| ())
    }

    /// Directory layers in the order they apply: inventory-adjacent ones, then the
    /// playbook's (unless it is also an inventory directory, whose files count once).
    fn dir_vars(&self, playbook_dir: &Path) -> Result<DirLayers, InventoryError> {
        let playbook_key = dir_key(playbook_dir);
        let mut cache = self.vars_dirs.lock().expect("vars dirs lock");
        let mut load = |dir: &Path| -> Result<Arc<DirVars>, InventoryError> {
            if let Some(loaded) = cache.get(dir) {
                return Ok(loaded.clone());
            }
            let loaded = Arc::new(DirVars::load(dir, &self.data)?);
            cache.insert(dir.to_path_buf(), loaded.clone());
            Ok(loaded)
        };
        let inventory = self
            .source_dirs
            .iter()
            .map(|d| load(d))
            .collect::<Result<Vec<_>, _>>()?;
        let playbook = if self.source_dirs.contains(&playbook_key) {
            Vec::new()
        } else {
            vec![load(&playbook_key)?]
        };
        Ok((inventory, playbook))
    }

    /// [`Inventory::host_vars`] with `group_vars/` and `host_vars/` files merged in, from
    /// beside the inventory sources and beside the playbook, in Ansible's precedence order
    /// (see `vars_dirs`). Empty for unknown hosts.
    pub fn host_vars_for(
        &self,
        name: &str,
        playbook_dir: &Path,
    ) -> Result<Map<String, Value>, InventoryError> {
        self.host_vars_joined(name, playbook_dir, &[], false)
    }

    /// [`Inventory::host_vars_for`] for a host that joined `joined` groups at run time
    /// (`group_by`, `add_host`), their group_vars files included; `added` says the host
    /// itself is one `add_host` made (it still gets `all`'s and its groups' variables).
    pub fn host_vars_joined(
        &self,
        name: &str,
        playbook_dir: &Path,
        joined: &[String],
        added: bool,
    ) -> Result<Map<String, Value>, InventoryError> {
        let key = (dir_key(playbook_dir), name.to_string(), joined.join(","));
        if let Some(vars) = self.merged.lock().expect("merged vars lock").get(&key) {
            return Ok(vars.clone());
        }
        let target = match self.resolve(name) {
            None if added => Target::Added(name),
            None => return Ok(Map::new()),
            Some(HostRef::Defined(id)) => Target::Defined(id),
            Some(HostRef::Implicit(alias)) => Target::Implicit(LOCALHOST_NAMES[alias]),
        };
        let (inventory_dirs, playbook_dirs) = self.dir_vars(playbook_dir)?;
        let vars = vars_dirs::merge(
            &self.data,
            &self.depths,
            target,
            joined,
            &inventory_dirs,
            &playbook_dirs,
        );
        self.merged
            .lock()
            .expect("merged vars lock")
            .insert(key, vars.clone());
        Ok(vars)
    }

    /// Groups the host is in, directly or through nesting, sorted, without `all` (Ansible's
    /// `group_names`; it does include `ungrouped`).
    pub fn group_names(&self, name: &str) -> Vec<String> {
        let Some(HostRef::Defined(id)) = self.resolve(name) else {
            return Vec::new();
        };
        let mut names: Vec<String> = self
            .data
            .host_groups(id)
            .into_iter()
            .filter(|g| *g != ALL)
            .map(|g| self.data.groups[g].name.clone())
            .collect();
        names.sort();
        names
    }

    /// Group name -> its hosts (including those of child groups), for every group including
    /// `all` and `ungrouped`: Ansible's `groups` variable.
    pub fn groups(&self) -> BTreeMap<String, Vec<String>> {
        self.groups.clone()
    }

    /// The `groups` variable of the inventory as loaded (no run-time additions).
    pub fn groups_var(&self) -> &serde_json::Value {
        &self.groups_var
    }

    /// `groups` as templates see it: Ansible's dict keeps the order groups were defined in
    /// (`all`, `ungrouped`, then as the inventory met them), and `{% for g in groups %}`
    /// walks it in that order. Groups added at run time (not in `order`) follow, by name.
    pub fn groups_in_order(&self, groups: &BTreeMap<String, Vec<String>>) -> serde_json::Value {
        let mut ordered = serde_json::Map::new();
        for name in self.data.groups.iter().map(|g| &g.name) {
            if let Some(hosts) = groups.get(name) {
                ordered.insert(name.clone(), serde_json::json!(hosts));
            }
        }
        for (name, hosts) in groups {
            if !ordered.contains_key(name) {
                ordered.insert(name.clone(), serde_json::json!(hosts));
            }
        }
        serde_json::Value::Object(ordered)
    }

    /// Host names matching an Ansible pattern, in Ansible's order, without duplicates.
    /// Parts that match nothing are ignored (see [`Inventory::select_reporting`] to warn).
    pub fn select(&self, pattern: &str) -> Result<Vec<String>, InventoryError> {
        Ok(self.select_reporting(pattern)?.hosts)
    }

    /// [`Inventory::select`], also telling which parts of the pattern matched nothing.
    pub fn select_reporting(&self, pattern: &str) -> Result<Selection, InventoryError> {
        let patterns = pattern::split_host_pattern(pattern);
        self.evaluate(&patterns)
    }

    /// Applies `--limit`: keeps the hosts that the limit pattern also selects. `@file` reads
    /// one pattern per line from a file.
    pub fn limit(&self, hosts: Vec<String>, limit: &str) -> Result<Vec<String>, InventoryError> {
        Ok(self.limit_reporting(hosts, limit)?.hosts)
    }

    /// [`Inventory::limit`], also telling which parts of the limit matched nothing.
    pub fn limit_reporting(
        &self,
        hosts: Vec<String>,
        limit: &str,
    ) -> Result<Selection, InventoryError> {
        let mut patterns = Vec::new();
        for part in pattern::split_host_pattern(limit) {
            match part.strip_prefix('@') {
                Some(file) => {
                    let path = PathBuf::from(file);
                    if path.is_dir() {
                        return Err(InventoryError::LimitFile {
                            path,
                            reason: "a limit starting with \"@\" must be a file, not a directory"
                                .into(),
                        });
                    }
                    let text =
                        std::fs::read_to_string(&path).map_err(|e| InventoryError::LimitFile {
                            path: path.clone(),
                            reason: format!("unable to read the limit file: {e}"),
                        })?;
                    patterns.extend(text.split('\n').map(|l| l.trim().to_string()));
                }
                None => patterns.push(part),
            }
        }
        let allowed = self.evaluate(&patterns)?;
        let keep: HashSet<&String> = allowed.hosts.iter().collect();
        Ok(Selection {
            hosts: hosts.into_iter().filter(|h| keep.contains(h)).collect(),
            unmatched: allowed.unmatched,
        })
    }

    /// Ansible's `_evaluate_patterns`: unions, then `&` intersections, then `!` exclusions.
    fn evaluate(&self, patterns: &[String]) -> Result<Selection, InventoryError> {
        let mut hosts: Vec<String> = Vec::new();
        let mut unmatched = Vec::new();
        for p in pattern::order_patterns(patterns) {
            // A pattern that is exactly a host name means that host, even if a group shares
            // the name.
            if self.data.host_id(&p).is_some() {
                hosts.push(p);
                continue;
            }
            let that = self.match_one(&p, &mut unmatched)?;
            if p.starts_with('!') {
                let that: HashSet<&String> = that.iter().collect();
                hosts.retain(|h| !that.contains(h));
            } else if p.starts_with('&') {
                let that: HashSet<&String> = that.iter().collect();
                hosts.retain(|h| that.contains(h));
            } else {
                let existing: HashSet<String> = hosts.iter().cloned().collect();
                hosts.extend(that.into_iter().filter(|h| !existing.contains(h)));
            }
        }
        let mut seen = HashSet::new();
        hosts.retain(|h| seen.insert(h.clone()));
        Ok(Selection { hosts, unmatched })
    }

    fn match_one(
        &self,
        p: &str,
        unmatched: &mut Vec<String>,
    ) -> Result<Vec<String>, InventoryError> {
        let expr = p.strip_prefix(['&', '!']).unwrap_or(p);
        if expr.is_empty() {
            return Ok(Vec::new());
        }
        let (base, subscript) = pattern::split_subscript(expr);
        let ids = self.enumerate(base, unmatched)?;
        let picked =
            pattern::apply_subscript(ids, subscript).ok_or_else(|| InventoryError::Pattern {
                pattern: expr.to_string(),
                reason: format!("No hosts matched the subscripted pattern '{expr}'"),
            })?;
        Ok(picked.into_iter().map(|h| self.host_name(h)).collect())
    }

    /// Hosts of every group whose name matches, then (when no group matched, or the pattern
    /// is a glob or regex) every host whose name matches, else the implicit localhost.
    fn enumerate(
        &self,
        expr: &str,
        unmatched: &mut Vec<String>,
    ) -> Result<Vec<HostRef>, InventoryError> {
        let matcher = pattern::Matcher::new(expr).map_err(|e| InventoryError::Pattern {
            pattern: expr.to_string(),
            reason: format!("Invalid host list pattern: {e}"),
        })?;
        let data = &self.data;
        let groups: Vec<usize> = (0..data.groups.len())
            .filter(|g| matcher.matches(&data.groups[*g].name))
            .collect();
        let mut results: Vec<HostRef> = groups
            .iter()
            .flat_map(|g| data.group_hosts(*g))
            .map(HostRef::Defined)
            .collect();
        if groups.is_empty() || pattern::is_wildcard(expr) {
            results.extend(
                (0..data.hosts.len())
                    .filter(|h| matcher.matches(&data.hosts[*h].name))
                    .map(HostRef::Defined),
            );
        }
        if results.is_empty()
            && let Some(alias) = LOCALHOST_NAMES.iter().position(|n| *n == expr)
        {
            results.push(
                data.localhost
                    .map_or(HostRef::Implicit(alias), HostRef::Defined),
            );
        }
        if results.is_empty() && groups.is_empty() && expr != "all" {
            unmatched.push(expr.to_string());
        }
        Ok(results)
    }

    fn host_name(&self, host: HostRef) -> String {
        match host {
            HostRef::Defined(id) => self.hosts[id].name.clone(),
            HostRef::Implicit(alias) => self.implicit[alias].name.clone(),
        }
    }
}

/// A host a pattern part matched: an inventory host, or the implicit localhost under one of
/// its aliases.
#[derive(Debug, Clone, Copy, PartialEq)]
enum HostRef {
    Defined(usize),
    Implicit(usize),
}

/// A `-i h1,h2,` list: each name goes to `ungrouped`; `host:port` sets the port.
fn load_host_list(list: &str, data: &mut Data) {
    data.current_source = SourceInfo {
        file: Some(list.to_string()),
        dir: None,
    };
    let ungrouped = data.group_id("ungrouped");
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (host, port) = address::parse_address(item, false).unwrap_or((item.to_string(), None));
        if data.host_id(&host).is_none() {
            data.add_host(&host, ungrouped, port);
        }
    }
    data.current_source = SourceInfo::default();
}

/// A file no parser reads is no error to Ansible: it warns that it could not parse the
/// source and goes on without it, and without what the file added before its error.
/// Whether the file was read.
fn load_file_or_warn(path: &Path, data: &mut Data, warnings: &mut Vec<String>) -> bool {
    let before = data.clone();
    match load_file(path, data) {
        Ok(()) => true,
        Err(e) => {
            *data = before;
            warnings.push(format!("Failed to parse inventory: {e}"));
            warnings.push(format!(
                "Unable to parse {} as an inventory source",
                path.display()
            ));
            false
        }
    }
}

/// Every file of an inventory directory, in name order, recursing into subdirectories;
/// whether any was read.
fn load_dir(
    dir: &Path,
    data: &mut Data,
    warnings: &mut Vec<String>,
) -> Result<bool, InventoryError> {
    let read_error = |e: std::io::Error| {
        InventoryError::from(LoadError {
            file: dir.to_path_buf(),
            span: None,
            message: format!("could not read the inventory directory: {e}"),
            line_text: None,
            help: None,
        })
    };
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(read_error)?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            !name.starts_with('.')
                && !IGNORED_NAMES.contains(&name.as_str())
                && !IGNORED_SUFFIXES.iter().any(|s| name.ends_with(s))
        })
        .collect();
    names.sort();
    let mut parsed = false;
    for name in names {
        let path = dir.join(name);
        if path.is_dir() {
            parsed |= load_dir(&path, data, warnings)?;
        } else {
            parsed |= load_file_or_warn(&path, data, warnings);
        }
    }
    Ok(parsed)
}

/// One inventory file: YAML when its extension says so or when it reads as a YAML mapping
/// (as Ansible's yaml plugin gets the first try on extension-less files), else INI.
/// An inventory of one file's text, as `load_file` reads a file of that name: for the fuzz
/// targets, which must not touch the disk.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub fn from_text(name: &str, text: &str) -> Result<Inventory, InventoryError> {
    let source = Source::from_text(name, text);
    let mut data = Data::default();
    if name.ends_with(".yml") {
        yaml_inv::parse(&source, &source.parse()?, &mut data)?;
    } else {
        ini::parse(&source, &mut data)?;
    }
    data.reconcile().map_err(InventoryError::GroupLoop)?;
    Ok(Inventory::finish(data, Vec::new(), Vec::new()))
}

fn load_file(path: &Path, data: &mut Data) -> Result<(), InventoryError> {
    let source = Source::read(path)?;
    data.current_source = SourceInfo {
        file: Some(path.display().to_string()),
        dir: path.parent().map(|d| d.display().to_string()),
    };
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("yml" | "yaml" | "json") => {
            let root = source.parse()?;
            yaml_inv::parse(&source, &root, data)?;
        }
        Some("ini") => ini::parse(&source, data)?,
        _ => match source.parse() {
            Ok(root) if root.as_map().is_some() => yaml_inv::parse(&source, &root, data)?,
            Ok(_) => ini::parse(&source, data)?,
            Err(yaml_error) => {
                if let Err(ini_error) = ini::parse(&source, data) {
                    // A broken YAML inventory fails as INI too; report what the author meant.
                    return Err(if looks_like_yaml(&source.text) {
                        yaml_error
                    } else {
                        ini_error
                    }
                    .into());
                }
            }
        },
    }
    data.current_source = SourceInfo::default();
    Ok(())
}

/// Whether a file that is neither valid YAML nor valid INI was meant as YAML: its first
/// line is `---` or a bare `name:` key.
fn looks_like_yaml(text: &str) -> bool {
    let Some(first) = text
        .lines()
        .map(str::trim_end)
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    else {
        return false;
    };
    first == "---"
        || first
            .strip_suffix(':')
            .is_some_and(|key| !key.is_empty() && !key.contains([' ', '[', ']', ':', '=']))
}

/// Ansible's `unfrackpath` without following links: `~` expanded, made absolute, `.` and
/// `..` resolved by name.
fn absolute(raw: &str) -> PathBuf {
    let expanded = crate::tilde::expand_user_path(raw);
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        std::env::current_dir().unwrap_or_default().join(expanded)
    };
    let mut out = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;
