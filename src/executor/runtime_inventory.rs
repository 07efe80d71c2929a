//! Hosts and groups that `add_host` and `group_by` add during a run, over the loaded
//! inventory (which stays as loaded): host patterns of later plays, `groups`,
//! `group_names`, `hostvars` and connections all see them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::inventory::Inventory;

#[derive(Debug, Default)]
pub(crate) struct RuntimeInventory {
    /// Hosts `add_host` made, in the order they were added, with their variables.
    hosts: Vec<(String, Map<String, Value>)>,
    /// Group -> hosts added to it at run time, in the order they were added.
    groups: BTreeMap<String, Vec<String>>,
}

impl RuntimeInventory {
    pub fn is_empty(&self) -> bool {
        self.hosts.is_empty() && self.groups.is_empty()
    }

    /// `add_host`: a new host (or more variables and groups for a known one). True when
    /// that changed anything, as Ansible's add_host reports `changed`.
    pub fn add_host(
        &mut self,
        inventory: &Inventory,
        name: &str,
        groups: &[String],
        vars: &Map<String, Value>,
    ) -> bool {
        let known = inventory.host(name).is_some() || self.knows_host(name);
        let current_vars = {
            let mut all = if inventory.host(name).is_some() {
                inventory.host_vars(name)
            } else {
                Map::new()
            };
            if let Some(added) = self.host_vars(name) {
                all.extend(added.clone());
            }
            all
        };
        let in_group = |rt: &Self, group: &str| {
            rt.groups
                .get(group)
                .is_some_and(|m| m.iter().any(|h| h == name))
                || inventory.group_names(name).iter().any(|g| g == group)
        };
        let changed = !known
            || vars.iter().any(|(k, v)| current_vars.get(k) != Some(v))
            || groups.iter().any(|g| !in_group(self, g));
        if inventory.host(name).is_none() || self.hosts.iter().any(|(h, _)| h == name) {
            match self.hosts.iter_mut().find(|(h, _)| h == name) {
                Some((_, existing)) => existing.extend(vars.clone()),
                None => self.hosts.push((name.to_string(), vars.clone())),
            }
        } else if !vars.is_empty() {
            // A host the inventory has: its new variables sit above the inventory's.
            self.hosts.push((name.to_string(), vars.clone()));
        }
        for group in groups {
            self.add_to_group(name, group);
        }
        changed
    }

    /// `group_by`: the host joins the group and its parents (the runtime inventory keeps
    /// no group tree, so a parent holds the host itself). True when the host was not in
    /// one of them yet, as Ansible's group_by reports `changed`.
    pub fn join_group(
        &mut self,
        inventory: &Inventory,
        host: &str,
        group: &str,
        parents: &[String],
    ) -> bool {
        let mut changed = false;
        for name in std::iter::once(group).chain(parents.iter().map(String::as_str)) {
            if name == "all" {
                continue;
            }
            let in_inventory = inventory.group_names(host).iter().any(|g| g == name);
            let in_runtime = self
                .groups
                .get(name)
                .is_some_and(|m| m.iter().any(|h| h == host));
            changed |= !in_inventory && !in_runtime;
            self.add_to_group(host, name);
        }
        changed
    }

    pub fn add_to_group(&mut self, host: &str, group: &str) {
        let members = self.groups.entry(group.to_string()).or_default();
        if !members.iter().any(|m| m == host) {
            members.push(host.to_string());
        }
    }

    /// The host's inventory variables as the run sees them: group_vars of the groups it
    /// joined at run time included, then the variables `add_host` gave it.
    pub fn inventory_vars(
        &self,
        inventory: &Inventory,
        name: &str,
        playbook_dir: &std::path::Path,
    ) -> Result<Map<String, Value>, crate::inventory::InventoryError> {
        let joined: Vec<String> = self
            .groups
            .iter()
            .filter(|(g, m)| *g != "all" && m.iter().any(|h| h == name))
            .map(|(g, _)| g.clone())
            .collect();
        let added = self.host_vars(name);
        let mut vars = inventory.host_vars_joined(name, playbook_dir, &joined, added.is_some())?;
        if let Some(added) = added {
            vars.extend(added.clone());
        }
        Ok(vars)
    }

    /// Variables `add_host` gave the host, if any.
    pub fn host_vars(&self, name: &str) -> Option<&Map<String, Value>> {
        self.hosts.iter().find(|(h, _)| h == name).map(|(_, v)| v)
    }

    /// Whether the host exists only because of `add_host`.
    pub fn knows_host(&self, name: &str) -> bool {
        self.hosts.iter().any(|(h, _)| h == name)
    }

    pub fn added_hosts(&self) -> impl Iterator<Item = &str> {
        self.hosts.iter().map(|(h, _)| h.as_str())
    }

    /// Ansible's `groups` with the run-time members added (new hosts are in `all`, and in
    /// `ungrouped` when no group holds them).
    pub fn groups(&self, inventory: &Inventory) -> BTreeMap<String, Vec<String>> {
        let mut groups = inventory.groups();
        for (group, members) in &self.groups {
            let list = groups.entry(group.clone()).or_default();
            for m in members {
                if !list.contains(m) {
                    list.push(m.clone());
                }
            }
        }
        for (host, _) in &self.hosts {
            if inventory.host(host).is_some() {
                continue;
            }
            let all = groups.entry("all".into()).or_default();
            if !all.contains(host) {
                all.push(host.clone());
            }
            if !self.groups.values().any(|m| m.contains(host)) {
                groups
                    .entry("ungrouped".into())
                    .or_default()
                    .push(host.clone());
            }
        }
        groups
    }

    /// Ansible's `group_names` for a host, run-time groups included.
    pub fn group_names(&self, inventory: &Inventory, host: &str) -> Vec<String> {
        let mut names: BTreeSet<String> = inventory.group_names(host).into_iter().collect();
        names.extend(
            self.groups
                .iter()
                .filter(|(g, m)| *g != "all" && m.iter().any(|h| h == host))
                .map(|(g, _)| g.clone()),
        );
        names.into_iter().collect()
    }

    /// A host pattern over the inventory and the run-time additions: terms separated by
    /// `,` or `:`, `&term` intersects, `!term` excludes (applied after the others, as in
    /// Ansible).
    pub fn select(&self, inventory: &Inventory, pattern: &str) -> Vec<String> {
        let groups = self.groups(inventory);
        let resolve = |term: &str| -> Vec<String> {
            if let Some(members) = groups.get(term) {
                return members.clone();
            }
            if self.knows_host(term) {
                return vec![term.to_string()];
            }
            inventory.select(term).unwrap_or_default()
        };
        let terms: Vec<&str> = pattern
            .split([',', ':'])
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .collect();
        let mut hosts: Vec<String> = Vec::new();
        for term in terms.iter().filter(|t| !t.starts_with(['&', '!'])) {
            for h in resolve(term) {
                if !hosts.contains(&h) {
                    hosts.push(h);
                }
            }
        }
        for term in terms.iter().filter_map(|t| t.strip_prefix('&')) {
            let keep = resolve(term);
            hosts.retain(|h| keep.contains(h));
        }
        for term in terms.iter().filter_map(|t| t.strip_prefix('!')) {
            let drop = resolve(term);
            hosts.retain(|h| !drop.contains(h));
        }
        hosts
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inventory() -> Inventory {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts");
        std::fs::write(&path, "[web]\nw1\nw2\n[db]\nd1\n").unwrap();
        Inventory::load(&[path.display().to_string()]).unwrap()
    }

    #[test]
    fn added_hosts_and_groups_join_patterns_and_groups() {
        let inv = inventory();
        let mut rt = RuntimeInventory::default();
        assert!(rt.is_empty());
        let vars = json!({"ansible_port": 2200}).as_object().unwrap().clone();
        rt.add_host(&inv, "n1", &["new".into(), "web".into()], &vars);
        assert!(rt.join_group(&inv, "d1", "picked", &["all".into()]));
        assert!(!rt.join_group(&inv, "d1", "picked", &["all".into()]));
        assert!(!rt.join_group(&inv, "w1", "web", &[]));
        assert_eq!(rt.host_vars("n1").unwrap()["ansible_port"], 2200);
        assert!(rt.knows_host("n1") && !rt.knows_host("w1"));
        let groups = rt.groups(&inv);
        assert_eq!(groups["web"], ["w1", "w2", "n1"]);
        assert_eq!(groups["new"], ["n1"]);
        assert!(groups["all"].contains(&"n1".to_string()));
        assert_eq!(rt.group_names(&inv, "d1"), ["db", "picked"]);
        assert_eq!(rt.select(&inv, "new,picked"), ["n1", "d1"]);
        assert_eq!(rt.select(&inv, "web:!w2"), ["w1", "n1"]);
        assert_eq!(rt.select(&inv, "all:&picked"), ["d1"]);
    }
}
