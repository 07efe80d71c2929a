//! Ansible's `ansible-inventory`: the inventory as Ansible has read it, as inventory-script
//! JSON (`--list`, `--host`), YAML (`-y`) or TOML (`--toml`), or as a tree (`--graph`).

use std::collections::HashSet;
use std::path::PathBuf;

use clap::{ArgAction, Parser};
use serde_json::{Map, Value, json};

use super::launch::{self, EXIT_BAD_OPTIONS, EXIT_ERROR, Failure};
use super::{InventoryArgs, VaultArgs, parse_extra_vars};
use crate::inventory::{GroupView, Inventory};

#[derive(Debug, Parser)]
#[command(
    name = "ansible-inventory",
    version,
    about = "Show Ansible inventory information, by default it uses the inventory script JSON format"
)]
pub struct InventoryCli {
    /// The name of a group in the inventory, relevant when using --graph.
    #[arg(value_name = "group")]
    pub group: Option<String>,

    #[command(flatten)]
    pub inventory: InventoryArgs,

    #[command(flatten)]
    pub vault: VaultArgs,

    /// Use this as the playbook directory (its group_vars/ and host_vars/ are read too).
    #[arg(long = "playbook-dir", value_name = "BASEDIR")]
    pub playbook_dir: Option<PathBuf>,

    /// Set additional variables as key=value or YAML/JSON, if filename prepend with @.
    #[arg(short = 'e', long = "extra-vars", value_name = "EXTRA_VARS")]
    pub extra_vars: Vec<String>,

    /// Output all hosts info, works as inventory script.
    #[arg(long = "list")]
    pub list: bool,

    /// Output specific host info, works as inventory script. It will ignore limit.
    #[arg(long = "host", value_name = "HOST")]
    pub host: Option<String>,

    /// Create inventory graph, if supplying pattern it must be a valid group name. It will
    /// ignore limit.
    #[arg(long = "graph")]
    pub graph: bool,

    /// Use YAML format instead of default JSON, ignored for --graph.
    #[arg(short = 'y', long = "yaml")]
    pub yaml: bool,

    /// Use TOML format instead of default JSON, ignored for --graph.
    #[arg(long = "toml")]
    pub toml: bool,

    /// Add vars to graph display, ignored unless used with --graph.
    #[arg(long = "vars")]
    pub show_vars: bool,

    /// When doing --list, represent in a way that is optimized for export, not as an
    /// accurate representation of how Ansible has processed it.
    #[arg(long = "export")]
    pub export: bool,

    /// When doing --list, send the inventory to a file instead of to the screen.
    #[arg(long = "output", value_name = "OUTPUT_FILE")]
    pub output_file: Option<PathBuf>,

    /// More output.
    #[arg(short = 'v', long = "verbose", action = ArgAction::Count)]
    pub verbose: u8,
}

/// Variables Ansible sets itself, which ansible-inventory leaves out
/// (`C.INTERNAL_STATIC_VARS`).
const INTERNAL_VARS: &[&str] = &[
    "ansible_async_path",
    "ansible_collection_name",
    "ansible_config_file",
    "ansible_dependent_role_names",
    "ansible_diff_mode",
    "ansible_facts",
    "ansible_forks",
    "ansible_inventory_sources",
    "ansible_limit",
    "ansible_play_batch",
    "ansible_play_hosts",
    "ansible_play_hosts_all",
    "ansible_play_role_names",
    "ansible_playbook_python",
    "ansible_role_name",
    "ansible_role_names",
    "ansible_run_tags",
    "ansible_skip_tags",
    "ansible_verbosity",
    "ansible_version",
    "inventory_dir",
    "inventory_file",
    "inventory_hostname",
    "inventory_hostname_short",
    "groups",
    "group_names",
    "hostvars",
    "playbook_dir",
    "play_hosts",
    "role_name",
    "role_names",
    "role_path",
    "role_uuid",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Yaml,
    Toml,
}

struct Dumper<'a> {
    cli: &'a InventoryCli,
    inventory: &'a Inventory,
    extra_vars: Map<String, Value>,
}

pub fn run(cli: InventoryCli) -> Result<u8, Failure> {
    let used = [cli.list, cli.host.is_some(), cli.graph]
        .iter()
        .filter(|u| **u)
        .count();
    if used == 0 {
        return Err((
            EXIT_BAD_OPTIONS,
            "No action selected, at least one of --host, --graph or --list needs to be specified."
                .into(),
        ));
    }
    if used > 1 {
        return Err((
            EXIT_BAD_OPTIONS,
            "Conflicting options used, only one of --host, --graph or --list can be used at the same time."
                .into(),
        ));
    }
    let config = launch::load_config(&cli.vault)?;
    launch::show_config_file(&config, cli.verbose);
    let extra_vars =
        parse_extra_vars(&cli.extra_vars).map_err(|e| (e.exit_code(), e.to_string()))?;
    let inventory = launch::load_inventory(&cli.inventory, &config)?;
    for warning in config.warnings.iter().chain(inventory.warnings()) {
        eprintln!("[WARNING]: {warning}");
    }
    let format = if cli.yaml {
        Format::Yaml
    } else if cli.toml {
        Format::Toml
    } else {
        Format::Json
    };
    let dumper = Dumper {
        cli: &cli,
        inventory: &inventory,
        extra_vars,
    };
    let results = if let Some(pattern) = &cli.host {
        let selection = inventory
            .select_reporting(pattern)
            .map_err(|e| (EXIT_ERROR, e.to_string()))?;
        for unmatched in &selection.unmatched {
            eprintln!("[WARNING]: Could not match supplied host pattern, ignoring: {unmatched}");
        }
        let [host] = selection.hosts.as_slice() else {
            return Err((
                EXIT_BAD_OPTIONS,
                "You must pass a single valid host to --host parameter".into(),
            ));
        };
        dump(&Value::Object(dumper.host_vars(host)?), format)?
    } else {
        let mut available = inventory
            .select("all")
            .map_err(|e| (EXIT_ERROR, e.to_string()))?;
        if let Some(limit) = &cli.inventory.limit {
            available = inventory
                .limit(available, limit)
                .map_err(|e| (EXIT_ERROR, e.to_string()))?;
        }
        if cli.graph {
            let pattern = cli.group.as_deref().unwrap_or("all");
            let Some(top) = inventory.group_view(pattern) else {
                return Err((
                    EXIT_BAD_OPTIONS,
                    "Pattern must be valid group name when using --graph".into(),
                ));
            };
            let mut lines = Vec::new();
            dumper.graph(&top, 0, &mut lines)?;
            lines.join("\n")
        } else {
            let tree = match format {
                Format::Json => dumper.json_inventory(&available)?,
                Format::Yaml => dumper.yaml_inventory(&available)?,
                Format::Toml => dumper.toml_inventory(&available)?,
            };
            dump(&tree, format)?
        }
    };
    if results.is_empty() {
        return Ok(1);
    }
    match &cli.output_file {
        None => {
            if results.ends_with('\n') {
                print!("{results}");
            } else {
                println!("{results}");
            }
        }
        Some(path) => std::fs::write(path, &results).map_err(|e| {
            (
                EXIT_ERROR,
                format!(
                    "Unable to write to destination file {:?}: {e}",
                    path.display().to_string()
                ),
            )
        })?,
    }
    Ok(0)
}

fn dump(value: &Value, format: Format) -> Result<String, Failure> {
    Ok(match format {
        Format::Json => json_dump(value),
        Format::Yaml => {
            crate::template::yaml_dump::dump(value, 2, crate::template::yaml_dump::Style::Block)
        }
        Format::Toml => super::toml_dump::dumps(value).map_err(|e| (EXIT_ERROR, e))?,
    })
}

/// `json.dumps(stuff, sort_keys=True, indent=4)` with Ansible's inventory encoder, which
/// leaves non-ASCII text as it is.
fn json_dump(value: &Value) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    serde::Serialize::serialize(&crate::report::result_dump::sort_keys(value), &mut ser)
        .expect("json");
    String::from_utf8(buf).expect("utf8")
}

fn without_internal(mut vars: Map<String, Value>) -> Map<String, Value> {
    for name in INTERNAL_VARS {
        vars.shift_remove(*name);
    }
    vars
}

impl Dumper<'_> {
    fn basedir(&self) -> Option<&std::path::Path> {
        self.cli.playbook_dir.as_deref()
    }

    fn inventory_error(e: crate::inventory::InventoryError) -> Failure {
        (launch::EXIT_PARSE_ERROR, e.to_string())
    }

    /// With `--export` the host's own variables, else all it gets (groups' and `-e`'s
    /// included), without the ones Ansible sets itself.
    fn host_vars(&self, host: &str) -> Result<Map<String, Value>, Failure> {
        let vars = if self.cli.export {
            self.inventory
                .own_host_vars(host, self.basedir())
                .map_err(Self::inventory_error)?
        } else {
            let mut vars = self
                .inventory
                .host_vars_beside(host, self.basedir())
                .map_err(Self::inventory_error)?;
            vars.extend(self.extra_vars.clone());
            vars
        };
        Ok(without_internal(vars))
    }

    fn group_vars(&self, group: &GroupView) -> Result<Map<String, Value>, Failure> {
        let mut vars = self
            .inventory
            .own_group_vars(&group.name, self.basedir())
            .map_err(Self::inventory_error)?;
        if let Some(priority) = group.priority {
            vars.insert("ansible_group_priority".into(), json!(priority));
        }
        Ok(without_internal(vars))
    }

    fn group(&self, name: &str) -> GroupView {
        self.inventory.group_view(name).unwrap_or(GroupView {
            name: name.to_string(),
            children: Vec::new(),
            hosts: Vec::new(),
            priority: None,
        })
    }

    /// `--graph`: `@group:` lines, children then hosts, indented by `  |`, with `--vars`
    /// each host's and group's variables as `{name = value}`.
    fn graph(&self, group: &GroupView, depth: usize, out: &mut Vec<String>) -> Result<(), Failure> {
        out.push(graph_name(&format!("@{}:", group.name), depth));
        for child in &group.children {
            self.graph(&self.group(child), depth + 1, out)?;
        }
        if group.name != "all" {
            for host in &group.hosts {
                out.push(graph_name(host, depth + 1));
                if self.cli.show_vars {
                    show_vars(&self.host_vars(host)?, depth + 2, out);
                }
            }
        }
        if self.cli.show_vars {
            show_vars(&self.group_vars(group)?, depth + 1, out);
        }
        Ok(())
    }

    /// `--list`: every group with its `hosts` and `children` (empty ones left out), and
    /// `_meta.hostvars`.
    fn json_inventory(&self, available: &[String]) -> Result<Value, Failure> {
        let available: HashSet<&str> = available.iter().map(String::as_str).collect();
        let mut results = Map::new();
        let mut seen = HashSet::new();
        self.json_group(&self.group("all"), &available, &mut seen, &mut results)?;
        let mut hostvars = Map::new();
        for host in self.inventory.hosts() {
            if !available.contains(host.name.as_str()) {
                continue;
            }
            let vars = self.host_vars(&host.name)?;
            if !vars.is_empty() {
                hostvars.insert(host.name.clone(), Value::Object(vars));
            }
        }
        results.insert(
            "_meta".into(),
            json!({"hostvars": hostvars, "profile": "inventory_legacy"}),
        );
        Ok(Value::Object(results))
    }

    fn json_group(
        &self,
        group: &GroupView,
        available: &HashSet<&str>,
        seen: &mut HashSet<String>,
        results: &mut Map<String, Value>,
    ) -> Result<(), Failure> {
        let mut entry = Map::new();
        if group.name != "all" {
            let hosts: Vec<Value> = group
                .hosts
                .iter()
                .filter(|h| available.contains(h.as_str()))
                .map(|h| json!(h))
                .collect();
            entry.insert("hosts".into(), Value::Array(hosts));
        }
        entry.insert("children".into(), json!(group.children));
        for child in &group.children {
            if seen.insert(child.clone()) {
                self.json_group(&self.group(child), available, seen, results)?;
            }
        }
        if self.cli.export {
            entry.insert("vars".into(), Value::Object(self.group_vars(group)?));
        }
        remove_empty(&mut entry);
        if !entry.is_empty() {
            results.insert(group.name.clone(), Value::Object(entry));
        } else {
            results.shift_remove(&group.name);
        }
        Ok(())
    }

    /// `-y --list`: nested groups, each host's variables under its first appearance.
    fn yaml_inventory(&self, available: &[String]) -> Result<Value, Failure> {
        let available: HashSet<&str> = available.iter().map(String::as_str).collect();
        let mut seen_hosts = HashSet::new();
        let mut seen_groups = HashSet::new();
        let mut results = Map::new();
        self.yaml_group(
            &self.group("all"),
            &available,
            &mut seen_hosts,
            &mut seen_groups,
            &mut results,
        )?;
        Ok(Value::Object(results))
    }

    fn yaml_group(
        &self,
        group: &GroupView,
        available: &HashSet<&str>,
        seen_hosts: &mut HashSet<String>,
        seen_groups: &mut HashSet<String>,
        results: &mut Map<String, Value>,
    ) -> Result<(), Failure> {
        let mut entry = Map::new();
        let mut children = Map::new();
        for child in group.children.iter().filter(|c| *c != "all") {
            if seen_groups.contains(child) {
                children.insert(child.clone(), json!({}));
            } else {
                self.yaml_group(
                    &self.group(child),
                    available,
                    seen_hosts,
                    seen_groups,
                    &mut children,
                )?;
                seen_groups.insert(child.clone());
            }
        }
        entry.insert("children".into(), Value::Object(children));
        let hosts = self.hosts_once(group, available, seen_hosts)?;
        entry.insert("hosts".into(), Value::Object(hosts));
        if self.cli.export {
            let vars = self.group_vars(group)?;
            if !vars.is_empty() {
                entry.insert("vars".into(), Value::Object(vars));
            }
        }
        remove_empty(&mut entry);
        if !entry.is_empty() {
            results.insert(group.name.clone(), Value::Object(entry));
        }
        Ok(())
    }

    /// A group's own hosts within the limit (none for `all`), each with its variables the
    /// first time a host is met and `{}` after that.
    fn hosts_once(
        &self,
        group: &GroupView,
        available: &HashSet<&str>,
        seen_hosts: &mut HashSet<String>,
    ) -> Result<Map<String, Value>, Failure> {
        let mut hosts = Map::new();
        if group.name == "all" {
            return Ok(hosts);
        }
        for host in group
            .hosts
            .iter()
            .filter(|h| available.contains(h.as_str()))
        {
            let vars = if seen_hosts.insert(host.clone()) {
                self.host_vars(host)?
            } else {
                Map::new()
            };
            hosts.insert(host.clone(), Value::Object(vars));
        }
        Ok(hosts)
    }

    /// `--toml --list`: every group at the top, with its children's names and its hosts.
    fn toml_inventory(&self, available: &[String]) -> Result<Value, Failure> {
        let available: HashSet<&str> = available.iter().map(String::as_str).collect();
        let has_ungrouped = !self.group("ungrouped").hosts.is_empty();
        let mut seen_hosts = HashSet::new();
        let mut results = Map::new();
        self.toml_group(
            &self.group("all"),
            &available,
            has_ungrouped,
            &mut seen_hosts,
            &mut results,
        )?;
        Ok(Value::Object(results))
    }

    fn toml_group(
        &self,
        group: &GroupView,
        available: &HashSet<&str>,
        has_ungrouped: bool,
        seen_hosts: &mut HashSet<String>,
        results: &mut Map<String, Value>,
    ) -> Result<(), Failure> {
        let mut children = Vec::new();
        // Ansible fills the group's entry after its children's, so a child's entry comes
        // first in the document.
        results.insert(group.name.clone(), json!({}));
        for child in &group.children {
            if child == "ungrouped" && !has_ungrouped {
                continue;
            }
            if group.name != "all" {
                children.push(json!(child));
            }
            self.toml_group(
                &self.group(child),
                available,
                has_ungrouped,
                seen_hosts,
                results,
            )?;
        }
        let mut entry = Map::new();
        entry.insert("children".into(), Value::Array(children));
        let hosts = self.hosts_once(group, available, seen_hosts)?;
        if !hosts.is_empty() {
            entry.insert("hosts".into(), Value::Object(hosts));
        }
        if self.cli.export {
            entry.insert("vars".into(), Value::Object(self.group_vars(group)?));
        }
        remove_empty(&mut entry);
        if entry.is_empty() {
            results.shift_remove(&group.name);
        } else {
            results.insert(group.name.clone(), Value::Object(entry));
        }
        Ok(())
    }
}

fn remove_empty(entry: &mut Map<String, Value>) {
    for key in ["hosts", "vars", "children"] {
        let empty = match entry.get(key) {
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            entry.shift_remove(key);
        }
    }
}

fn graph_name(name: &str, depth: usize) -> String {
    if depth == 0 {
        return name.to_string();
    }
    format!("{}--{name}", "  |".repeat(depth))
}

fn show_vars(vars: &Map<String, Value>, depth: usize, out: &mut Vec<String>) {
    let mut names: Vec<&String> = vars.keys().collect();
    names.sort();
    for name in names {
        let value = crate::modules::spec::python_text(&vars[name]);
        out.push(graph_name(&format!("{{{name} = {value}}}"), depth));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_sorted_keys_and_keeps_non_ascii_text() {
        let value = json!({"b": "café 🎉", "a": [1, {"d": true, "c": null}]});
        assert_eq!(
            json_dump(&value),
            "{\n    \"a\": [\n        1,\n        {\n            \"c\": null,\n            \"d\": true\n        }\n    ],\n    \"b\": \"café 🎉\"\n}"
        );
    }

    #[test]
    fn graph_lines_indent_by_depth() {
        assert_eq!(graph_name("@all:", 0), "@all:");
        assert_eq!(graph_name("h1", 2), "  |  |--h1");
        let mut out = Vec::new();
        show_vars(
            &json!({"x": 1, "l": ["a"], "b": true})
                .as_object()
                .unwrap()
                .clone(),
            1,
            &mut out,
        );
        assert_eq!(out, ["  |--{b = True}", "  |--{l = ['a']}", "  |--{x = 1}"]);
    }
}
