//! The host/group graph that the inventory parsers fill in, with Ansible's rules for how
//! groups nest, which hosts end up in `ungrouped`, and in which order a group lists its hosts.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

pub type Vars = Map<String, Value>;

pub const ALL: usize = 0;
pub const UNGROUPED: usize = 1;

/// Names that always mean the controller itself (Ansible's `C.LOCALHOST`).
pub const LOCALHOST_NAMES: [&str; 3] = ["127.0.0.1", "localhost", "::1"];

#[derive(Debug, Clone)]
pub struct HostEntry {
    pub name: String,
    /// Variables set on the host itself (inline INI vars, YAML host vars, ports).
    pub vars: Vars,
    /// Groups the host was put in directly, in order.
    pub groups: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct GroupEntry {
    pub name: String,
    pub hosts: Vec<usize>,
    /// `hosts` as a set, so that adding thousands of hosts stays linear.
    members: HashSet<usize>,
    pub children: Vec<usize>,
    pub parents: Vec<usize>,
    pub vars: Vars,
    /// `ansible_group_priority`: orders sibling groups' variables (higher wins).
    pub priority: i64,
}

/// Where the host being added was first seen: Ansible's `inventory_file` / `inventory_dir`.
#[derive(Debug, Clone, Default)]
pub struct SourceInfo {
    pub file: Option<String>,
    pub dir: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Data {
    pub hosts: Vec<HostEntry>,
    host_index: HashMap<String, usize>,
    pub groups: Vec<GroupEntry>,
    group_index: HashMap<String, usize>,
    /// The first localhost-like host defined in the inventory; a pattern naming another
    /// localhost alias resolves to it rather than to an implicit host.
    pub localhost: Option<usize>,
    pub current_source: SourceInfo,
    pub warnings: Vec<String>,
}

impl Default for Data {
    fn default() -> Self {
        let mut data = Data {
            hosts: Vec::new(),
            host_index: HashMap::new(),
            groups: Vec::new(),
            group_index: HashMap::new(),
            localhost: None,
            current_source: SourceInfo::default(),
            warnings: Vec::new(),
        };
        data.add_group("all");
        data.add_group("ungrouped");
        data.add_child(ALL, UNGROUPED)
            .expect("ungrouped under all is acyclic");
        data
    }
}

impl Data {
    pub fn host_id(&self, name: &str) -> Option<usize> {
        self.host_index.get(name).copied()
    }

    pub fn group_id(&self, name: &str) -> Option<usize> {
        self.group_index.get(name).copied()
    }

    pub fn add_group(&mut self, name: &str) -> usize {
        if let Some(id) = self.group_id(name) {
            return id;
        }
        let id = self.groups.len();
        self.groups.push(GroupEntry {
            name: name.to_string(),
            hosts: Vec::new(),
            members: HashSet::new(),
            children: Vec::new(),
            parents: Vec::new(),
            vars: Vars::new(),
            priority: 1,
        });
        self.group_index.insert(name.to_string(), id);
        id
    }

    /// Adds the host if new (the port only counts then, as in Ansible) and puts it in `group`.
    pub fn add_host(&mut self, name: &str, group: Option<usize>, port: Option<u64>) -> usize {
        let id = match self.host_id(name) {
            Some(id) => id,
            None => {
                let id = self.hosts.len();
                let mut vars = Vars::new();
                if let Some(port) = port.filter(|p| *p != 0) {
                    vars.insert("ansible_port".into(), Value::from(port));
                }
                let source = &self.current_source;
                vars.insert("inventory_file".into(), source.file.clone().into());
                vars.insert("inventory_dir".into(), source.dir.clone().into());
                self.hosts.push(HostEntry {
                    name: name.to_string(),
                    vars,
                    groups: Vec::new(),
                });
                self.host_index.insert(name.to_string(), id);
                if LOCALHOST_NAMES.contains(&name) {
                    match self.localhost {
                        None => self.localhost = Some(id),
                        Some(first) => self.warnings.push(format!(
                            "A duplicate localhost-like entry was found ({name}). First found localhost was {}",
                            self.hosts[first].name
                        )),
                    }
                }
                id
            }
        };
        if let Some(group) = group {
            self.put_host_in_group(id, group);
        }
        id
    }

    fn put_host_in_group(&mut self, host: usize, group: usize) {
        if self.groups[group].members.insert(host) {
            self.groups[group].hosts.push(host);
            self.hosts[host].groups.push(group);
        }
    }

    pub fn set_host_var(&mut self, host: usize, key: &str, value: Value) {
        crate::hash_merge::set(&mut self.hosts[host].vars, key, value);
    }

    /// `ansible_group_priority` is not a variable but the group's rank among its siblings.
    pub fn set_group_var(&mut self, group: usize, key: &str, value: Value) -> Result<(), String> {
        if key == "ansible_group_priority" {
            let priority = match &value {
                Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)),
                Value::String(s) => s.trim().parse().ok(),
                Value::Bool(b) => Some(i64::from(*b)),
                _ => None,
            };
            self.groups[group].priority = priority
                .ok_or_else(|| format!("ansible_group_priority must be an integer, got {value}"))?;
            return Ok(());
        }
        crate::hash_merge::set(&mut self.groups[group].vars, key, value);
        Ok(())
    }

    /// Nests `child` under `parent`, refusing loops as Ansible does.
    pub fn add_child(&mut self, parent: usize, child: usize) -> Result<(), String> {
        if parent == child || self.ancestors(parent).contains(&child) {
            return Err(format!(
                "Adding group '{}' as child to '{}' creates a recursive dependency loop.",
                self.groups[child].name, self.groups[parent].name
            ));
        }
        if !self.groups[parent].children.contains(&child) {
            self.groups[parent].children.push(child);
            self.groups[child].parents.push(parent);
        }
        Ok(())
    }

    pub fn ancestors(&self, group: usize) -> HashSet<usize> {
        let mut seen = HashSet::new();
        let mut stack = self.groups[group].parents.clone();
        while let Some(g) = stack.pop() {
            if seen.insert(g) {
                stack.extend(self.groups[g].parents.iter().copied());
            }
        }
        seen
    }

    /// Every group the host is in, directly or through nesting (Ansible's `host.get_groups()`).
    pub fn host_groups(&self, host: usize) -> HashSet<usize> {
        let mut all = HashSet::new();
        for &g in &self.hosts[host].groups {
            all.insert(g);
            all.extend(self.ancestors(g));
        }
        all
    }

    /// Ansible's `reconcile_inventory`, run once after every source is read: top-level groups
    /// go under `all`, hosts in no group go to `ungrouped`, and hosts that are in a real group
    /// leave `ungrouped`.
    pub fn reconcile(&mut self) -> Result<(), String> {
        for g in 0..self.groups.len() {
            if g != ALL && self.groups[g].parents.is_empty() {
                self.add_child(ALL, g)?;
            }
        }
        let mut leave_ungrouped = HashSet::new();
        for h in 0..self.hosts.len() {
            let groups = self.host_groups(h);
            if groups.contains(&UNGROUPED) {
                if groups.iter().any(|g| *g != ALL && *g != UNGROUPED) {
                    leave_ungrouped.insert(h);
                    self.hosts[h].groups.retain(|g| *g != UNGROUPED);
                }
            } else if groups.is_empty() || (groups.len() == 1 && groups.contains(&ALL)) {
                self.put_host_in_group(h, UNGROUPED);
            }
        }
        let ungrouped = &mut self.groups[UNGROUPED];
        ungrouped.hosts.retain(|h| !leave_ungrouped.contains(h));
        ungrouped.members.retain(|h| !leave_ungrouped.contains(h));
        for group in &self.groups {
            if self.host_index.contains_key(&group.name) {
                self.warnings.push(format!(
                    "Found both group and host with same name: {}",
                    group.name
                ));
            }
        }
        Ok(())
    }

    /// A group's hosts in Ansible's order: its own hosts, then those of its children, then
    /// grandchildren, level by level. (Ansible walks each level through a hash set, so its
    /// order among deeper groups varies from run to run; this is one of its orders, fixed.)
    pub fn group_hosts(&self, group: usize) -> Vec<usize> {
        let mut order = vec![group];
        let mut seen: HashSet<usize> = HashSet::from([group]);
        let mut level = vec![group];
        while !level.is_empty() {
            let mut next = Vec::new();
            for g in level {
                for &child in &self.groups[g].children {
                    if seen.insert(child) {
                        next.push(child);
                        order.push(child);
                    }
                }
            }
            level = next;
        }
        let mut hosts = Vec::new();
        let mut taken = HashSet::new();
        for g in order {
            for &h in &self.groups[g].hosts {
                if taken.insert(h) {
                    hosts.push(h);
                }
            }
        }
        hosts
    }

    /// Each group's distance from `all` along the longest path (Ansible's `group.depth`).
    pub fn depths(&self) -> Vec<usize> {
        fn depth(data: &Data, g: usize, memo: &mut Vec<Option<usize>>) -> usize {
            if let Some(d) = memo[g] {
                return d;
            }
            let d = data.groups[g]
                .parents
                .iter()
                .map(|&p| depth(data, p, memo) + 1)
                .max()
                .unwrap_or(0);
            memo[g] = Some(d);
            d
        }
        let mut memo = vec![None; self.groups.len()];
        (0..self.groups.len())
            .map(|g| depth(self, g, &mut memo))
            .collect()
    }

    /// Ansible's merge for inventory variables: the `all` group, then the host's other groups
    /// by (depth, priority, name) so children beat parents, then the host's own.
    pub fn merged_host_vars(&self, host: usize, depths: &[usize]) -> Vars {
        let mut vars = self.groups[ALL].vars.clone();
        for g in self.sorted_groups(host, depths) {
            crate::hash_merge::combine(&mut vars, &self.groups[g].vars);
        }
        crate::hash_merge::combine(&mut vars, &self.hosts[host].vars);
        vars
    }

    /// The host's groups other than `all`, in the order their variables apply (Ansible's
    /// `sort_groups`): by depth, then priority, then name.
    pub fn sorted_groups(&self, host: usize, depths: &[usize]) -> Vec<usize> {
        let mut groups: Vec<usize> = self
            .host_groups(host)
            .into_iter()
            .filter(|g| *g != ALL)
            .collect();
        groups.sort_by(|a, b| {
            let key = |g: &usize| (depths[*g], self.groups[*g].priority);
            key(a)
                .cmp(&key(b))
                .then_with(|| self.groups[*a].name.cmp(&self.groups[*b].name))
        });
        groups
    }
}
