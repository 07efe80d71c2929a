//! `group_vars/` and `host_vars/` directories beside the inventory sources and beside the
//! playbook (Ansible's `host_group_vars` vars plugin), merged into a host's inventory
//! variables in Ansible's precedence order:
//!
//! inventory `all` vars, inventory group vars (parents before children), then
//! `group_vars/all` (inventory-adjacent, then playbook-adjacent), then `group_vars/<group>`
//! (inventory-adjacent, then playbook-adjacent, each in group order), then the inventory's
//! host vars, `host_vars/<host>` beside the inventory, `host_vars/<host>` beside the playbook.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::data::{ALL, Data, LOCALHOST_NAMES, Vars};
use crate::vars_file::{entity_vars_files, listing, read_vars_file};
use crate::yaml::LoadError;

/// One directory's `group_vars/` and `host_vars/`, by entity name (only entities that have
/// files are present).
#[derive(Debug, Default)]
pub struct DirVars {
    groups: HashMap<String, Vars>,
    hosts: HashMap<String, Vars>,
    /// This directory's `group_vars/`, for groups that `group_by` or `add_host` make at run
    /// time (Ansible's vars plugin reads them when a host of the group needs them).
    group_dir: PathBuf,
    late_groups: Mutex<HashMap<String, Option<Vars>>>,
}

impl DirVars {
    /// Reads the files of every group and host the inventory knows (plus the localhost
    /// names, which always resolve).
    pub fn load(base: &Path, data: &Data) -> Result<DirVars, LoadError> {
        let group_names = data.groups.iter().map(|g| g.name.as_str());
        let host_names = data
            .hosts
            .iter()
            .map(|h| h.name.as_str())
            .chain(LOCALHOST_NAMES);
        Ok(DirVars {
            groups: load_entities(&base.join("group_vars"), group_names)?,
            hosts: load_entities(&base.join("host_vars"), host_names)?,
            group_dir: base.join("group_vars"),
            late_groups: Mutex::default(),
        })
    }

    pub fn group(&self, name: &str) -> Option<&Vars> {
        self.groups.get(name)
    }

    /// A group's files, read on first use for a group the inventory did not have.
    fn any_group(&self, name: &str) -> Option<Vars> {
        if let Some(vars) = self.groups.get(name) {
            return Some(vars.clone());
        }
        let mut late = self.late_groups.lock().expect("late groups lock");
        late.entry(name.to_string())
            .or_insert_with(|| {
                // A broken file of a run-time group counts as no file: the run is under way.
                load_entities(&self.group_dir, std::iter::once(name))
                    .ok()
                    .and_then(|mut found| found.remove(name))
            })
            .clone()
    }

    pub fn host(&self, name: &str) -> Option<&Vars> {
        self.hosts.get(name)
    }
}

fn load_entities<'n>(
    dir: &Path,
    names: impl Iterator<Item = &'n str>,
) -> Result<HashMap<String, Vars>, LoadError> {
    let mut out = HashMap::new();
    let entries = listing(dir);
    if entries.is_empty() {
        return Ok(out);
    }
    for name in names {
        if out.contains_key(name) {
            continue;
        }
        let files = entity_vars_files(dir, &entries, name);
        if files.is_empty() {
            continue;
        }
        let mut vars = Vars::new();
        for file in files {
            crate::hash_merge::combine(&mut vars, &read_vars_file(&file)?);
        }
        out.insert(name.to_string(), vars);
    }
    Ok(out)
}

/// Which host the layers are for: an inventory host (by id), the implicit localhost
/// under one of its names, or a host `add_host` made.
pub enum Target<'a> {
    Defined(usize),
    Implicit(&'a str),
    Added(&'a str),
}

/// A group whose variables a host takes: an inventory group, or one made at run time.
struct Slot<'a> {
    depth: usize,
    priority: i64,
    name: &'a str,
    id: Option<usize>,
}

/// The host's variables with every directory's files layered in. `inventory_dirs` and
/// `playbook_dirs` are already loaded, in the order they apply. `joined` are the groups
/// the host joined at run time (`group_by`, `add_host`): they order among the others as
/// Ansible's `sort_groups` orders them, a new group one level below `all`.
pub fn merge(
    data: &Data,
    depths: &[usize],
    target: Target,
    joined: &[String],
    inventory_dirs: &[Arc<DirVars>],
    playbook_dirs: &[Arc<DirVars>],
) -> Vars {
    let (groups, host_name, host_vars): (Vec<usize>, &str, Vars) = match target {
        Target::Defined(id) => (
            data.sorted_groups(id, depths),
            &data.hosts[id].name,
            data.hosts[id].vars.clone(),
        ),
        // Ansible's implicit localhost is in no group but still gets `all`'s variables.
        Target::Implicit(name) => {
            let mut vars = Vars::new();
            vars.insert("ansible_connection".into(), "local".into());
            (Vec::new(), name, vars)
        }
        Target::Added(name) => (Vec::new(), name, Vars::new()),
    };
    let slot = |g: usize| Slot {
        depth: depths[g],
        priority: data.groups[g].priority,
        name: &data.groups[g].name,
        id: Some(g),
    };
    let mut slots: Vec<Slot> = groups.iter().map(|&g| slot(g)).collect();
    for name in joined.iter().filter(|n| n.as_str() != "all") {
        if slots.iter().any(|s| s.name == name) {
            continue;
        }
        match data.groups.iter().position(|g| &g.name == name) {
            Some(g) => slots.push(slot(g)),
            None => slots.push(Slot {
                depth: 1,
                priority: 1,
                name,
                id: None,
            }),
        }
    }
    if !joined.is_empty() {
        slots.sort_by(|a, b| {
            (a.depth, a.priority)
                .cmp(&(b.depth, b.priority))
                .then_with(|| a.name.cmp(b.name))
        });
    }
    let dirs = || inventory_dirs.iter().chain(playbook_dirs);
    let mut vars = data.groups[ALL].vars.clone();
    for g in slots.iter().filter_map(|s| s.id) {
        crate::hash_merge::combine(&mut vars, &data.groups[g].vars);
    }
    for dir in dirs() {
        if let Some(v) = dir.group("all") {
            crate::hash_merge::combine(&mut vars, v);
        }
    }
    for dir in dirs() {
        for s in &slots {
            if let Some(v) = dir.any_group(s.name) {
                crate::hash_merge::combine(&mut vars, &v);
            }
        }
    }
    crate::hash_merge::combine(&mut vars, &host_vars);
    for dir in dirs() {
        if let Some(v) = dir.host(host_name) {
            crate::hash_merge::combine(&mut vars, v);
        }
    }
    vars
}

/// A cache key for a directory, whatever way it was spelled ("", ".", relative, absolute).
pub fn dir_key(dir: &Path) -> PathBuf {
    let text = dir.to_string_lossy();
    super::absolute(if text.is_empty() { "." } else { &text })
}
