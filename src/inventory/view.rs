//! The inventory's graph as `ansible-inventory` shows it: each group's child groups and
//! own hosts in the order they were added, and the variables set on a group or a host
//! itself (inline and in `group_vars/`/`host_vars/`) rather than merged.

use std::path::Path;

use serde_json::{Map, Value};

use super::data::{ALL, LOCALHOST_NAMES};
use super::vars_dirs::DirVars;
use super::{Inventory, InventoryError};

/// One group: its child groups and its own hosts, by name, in the order they were added.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupView {
    pub name: String,
    pub children: Vec<String>,
    pub hosts: Vec<String>,
    /// `ansible_group_priority` when set to other than its default of 1.
    pub priority: Option<i64>,
}

impl Inventory {
    /// A group by name, as the inventory holds it.
    pub fn group_view(&self, name: &str) -> Option<GroupView> {
        let id = self.data.group_id(name)?;
        let group = &self.data.groups[id];
        Some(GroupView {
            name: group.name.clone(),
            children: group
                .children
                .iter()
                .map(|c| self.data.groups[*c].name.clone())
                .collect(),
            hosts: group
                .hosts
                .iter()
                .map(|h| self.data.hosts[*h].name.clone())
                .collect(),
            priority: (group.priority != 1).then_some(group.priority),
        })
    }

    /// The variables without a playbook: the host's merged inventory variables with the
    /// `group_vars/`/`host_vars/` beside the inventory sources, and beside `basedir` when
    /// given (ansible-inventory's `--playbook-dir`).
    pub fn host_vars_beside(
        &self,
        name: &str,
        basedir: Option<&Path>,
    ) -> Result<Map<String, Value>, InventoryError> {
        match basedir.or(self.source_dirs.first().map(|d| d.as_path())) {
            Some(dir) => self.host_vars_for(name, dir),
            None => Ok(self.host_vars(name)),
        }
    }

    /// The variables set on the group itself: inline, then its `group_vars/` files beside
    /// the inventory sources and `basedir`.
    pub fn own_group_vars(
        &self,
        name: &str,
        basedir: Option<&Path>,
    ) -> Result<Map<String, Value>, InventoryError> {
        let Some(id) = self.data.group_id(name) else {
            return Ok(Map::new());
        };
        let mut vars = self.data.groups[id].vars.clone();
        for dir in self.own_dirs(basedir)? {
            if let Some(v) = dir.group(name) {
                vars.extend(v.clone());
            }
        }
        Ok(vars)
    }

    /// The variables set on the host itself: inline, then its `host_vars/` files.
    pub fn own_host_vars(
        &self,
        name: &str,
        basedir: Option<&Path>,
    ) -> Result<Map<String, Value>, InventoryError> {
        let mut vars = match self.data.host_id(name) {
            Some(id) => self.data.hosts[id].vars.clone(),
            None if LOCALHOST_NAMES.contains(&name) => Map::new(),
            None => return Ok(Map::new()),
        };
        for dir in self.own_dirs(basedir)? {
            if let Some(v) = dir.host(name) {
                vars.extend(v.clone());
            }
        }
        Ok(vars)
    }

    fn own_dirs(
        &self,
        basedir: Option<&Path>,
    ) -> Result<Vec<std::sync::Arc<DirVars>>, InventoryError> {
        let (mut inventory, playbook) =
            match basedir.or(self.source_dirs.first().map(|d| d.as_path())) {
                Some(dir) => self.dir_vars(dir)?,
                None => return Ok(Vec::new()),
            };
        inventory.extend(playbook);
        Ok(inventory)
    }

    /// Whether the inventory defines a group of this name (`all` and `ungrouped` always).
    pub fn has_group(&self, name: &str) -> bool {
        name == self.data.groups[ALL].name || self.data.group_id(name).is_some()
    }
}
