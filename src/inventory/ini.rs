//! Ansible's INI inventory format: `[group]`, `[group:children]` and `[group:vars]`
//! sections, host lines with inline `key=value` variables, and hosts before any section in
//! `ungrouped`. Values are typed by Python's `literal_eval`, as Ansible does.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::address::{Expanded, expand_host_pattern};
use super::data::Data;
use super::pyliteral::literal_eval;
use super::shlex;
use crate::yaml::{LoadError, Source, Span};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Section {
    Hosts,
    Children,
    Vars,
}

/// A group named in a way that requires it to be declared by a `[name]` or
/// `[name:children]` section somewhere in the same file.
struct Pending {
    name: String,
    line: usize,
    kind: Section,
    /// For groups listed under `[parent:children]`: every parent waiting for them.
    parents: Vec<String>,
}

static SECTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\[([^:\]\s]+)(?::(\w+))?\]\s*(?:#.*)?$").expect("valid regex"));
static GROUP_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^([^:\]\s]+)\s*(?:#.*)?$").expect("valid regex"));

pub fn parse(source: &Source, data: &mut Data) -> Result<(), LoadError> {
    let error = |line: usize, message: String, help: Option<&str>| {
        source.error(
            Some(Span { line, column: 1 }),
            message,
            help.map(str::to_string),
        )
    };
    let mut pending: Vec<Pending> = Vec::new();
    let mut group = data.group_id("ungrouped").expect("ungrouped always exists");
    let mut section = Section::Hosts;

    for (index, raw) in source.text.lines().enumerate() {
        let lineno = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with(['#', ';']) {
            continue;
        }

        if let Some(caps) = SECTION.captures(line) {
            let name = caps[1].to_string();
            section = match caps.get(2).map(|m| m.as_str()) {
                None | Some("hosts") => Section::Hosts,
                Some("children") => Section::Children,
                Some("vars") => Section::Vars,
                Some(other) => {
                    return Err(error(
                        lineno,
                        format!("Section [{name}:{other}] has unknown type: {other}"),
                        Some("a section is [group], [group:children] or [group:vars]"),
                    ));
                }
            };
            if data.group_id(&name).is_none() {
                // [g:vars] alone does not declare g; it must be declared somewhere else.
                if section == Section::Vars && !pending.iter().any(|p| p.name == name) {
                    pending.push(Pending {
                        name: name.clone(),
                        line: lineno,
                        kind: Section::Vars,
                        parents: Vec::new(),
                    });
                }
                data.add_group(&name);
            }
            group = data.group_id(&name).expect("just added");
            if section != Section::Vars
                && let Some(at) = pending.iter().position(|p| p.name == name)
            {
                match pending[at].kind {
                    Section::Children => {
                        resolve_pending_children(source, data, &mut pending, &name)?
                    }
                    _ => {
                        pending.remove(at);
                    }
                }
            }
            continue;
        }
        if line.starts_with('[') && line.ends_with(']') {
            return Err(error(
                lineno,
                format!(
                    "Invalid section entry: '{line}'. Please make sure that there are no spaces \
                     in the section entry, and that there are no other invalid characters"
                ),
                Some("write [group], [group:children] or [group:vars]"),
            ));
        }

        match section {
            Section::Hosts => {
                let words = shlex::split(line).map_err(|e| {
                    error(
                        lineno,
                        format!("Error parsing host definition '{line}': {e}"),
                        Some("close the quote, or escape it with a backslash"),
                    )
                })?;
                let Some((pattern, assignments)) = words.split_first() else {
                    continue;
                };
                let (names, port) = host_pattern(pattern)
                    .map_err(|(message, help)| error(lineno, message, Some(help)))?;
                let mut vars = Vec::new();
                for word in assignments {
                    let Some((key, value)) = word.split_once('=') else {
                        return Err(error(
                            lineno,
                            format!("Expected key=value host variable assignment, got: {word}"),
                            Some("host variables are written name=value after the host name"),
                        ));
                    };
                    vars.push((key.to_string(), parse_value(value)));
                }
                for name in names {
                    let host = data.add_host(&name, Some(group), port);
                    for (key, value) in &vars {
                        data.set_host_var(host, key, value.clone());
                    }
                }
            }
            Section::Vars => {
                let Some((key, value)) = line.split_once('=') else {
                    return Err(error(
                        lineno,
                        format!("Expected key=value, got: {line}"),
                        Some("a [group:vars] section holds one name=value per line"),
                    ));
                };
                data.set_group_var(group, key.trim(), parse_value(value.trim()))
                    .map_err(|message| error(lineno, message, None))?;
            }
            Section::Children => {
                let Some(caps) = GROUP_NAME.captures(line) else {
                    return Err(error(
                        lineno,
                        format!("Expected group name, got: {line}"),
                        Some("a [group:children] section lists one group name per line"),
                    ));
                };
                let child = caps[1].to_string();
                match data.group_id(&child) {
                    Some(child_id) => data
                        .add_child(group, child_id)
                        .map_err(|message| error(lineno, message, None))?,
                    None => {
                        let parent = data.groups[group].name.clone();
                        match pending.iter_mut().find(|p| p.name == child) {
                            Some(p) => p.parents.push(parent),
                            None => pending.push(Pending {
                                name: child,
                                line: lineno,
                                kind: Section::Children,
                                parents: vec![parent],
                            }),
                        }
                    }
                }
            }
        }
    }

    if let Some(p) = pending.first() {
        return Err(match p.kind {
            Section::Vars => error(
                p.line,
                format!(
                    "Section [{0}:vars] not valid for undefined group '{0}'.",
                    p.name
                ),
                Some(&format!(
                    "declare the group with a [{}] section (it may be empty)",
                    p.name
                )),
            ),
            _ => error(
                p.line,
                format!(
                    "Section [{}:children] includes undefined group '{}'.",
                    p.parents.last().map_or("", String::as_str),
                    p.name
                ),
                Some(&format!(
                    "declare the group with a [{}] section (it may be empty)",
                    p.name
                )),
            ),
        });
    }
    Ok(())
}

/// A group that was waiting to be declared now is: nest it under every parent that named it.
fn resolve_pending_children(
    source: &Source,
    data: &mut Data,
    pending: &mut Vec<Pending>,
    name: &str,
) -> Result<(), LoadError> {
    let Some(at) = pending.iter().position(|p| p.name == name) else {
        return Ok(());
    };
    let entry = pending.remove(at);
    let child = data.group_id(name).expect("declared before resolving");
    for parent in &entry.parents {
        let parent_id = data.add_group(parent);
        data.add_child(parent_id, child).map_err(|message| {
            source.error(
                Some(Span {
                    line: entry.line,
                    column: 1,
                }),
                message,
                None,
            )
        })?;
        if pending
            .iter()
            .any(|p| &p.name == parent && p.kind == Section::Children)
        {
            resolve_pending_children(source, data, pending, parent)?;
        }
    }
    Ok(())
}

/// Host names and port of the first word of a host line, with Ansible's extra INI checks.
fn host_pattern(pattern: &str) -> Result<Expanded, (String, &'static str)> {
    let (names, port) = expand_host_pattern(pattern).map_err(|reason| {
        (
            format!("Invalid host range in '{pattern}': {reason}"),
            "a range is [start:end] or [start:end:step] with numbers or single letters, e.g. web[01:10]",
        )
    })?;
    if pattern.trim().ends_with(':') && port.is_none() {
        return Err((
            format!(
                "Invalid host pattern '{pattern}' supplied, ending in ':' is not allowed, \
                 this character is reserved to provide a port."
            ),
            "write host:port with a number, or drop the ':'",
        ));
    }
    if names.iter().any(|n| n.trim() == "---") {
        return Err((
            format!(
                "Invalid host pattern '{pattern}' supplied, '---' is normally a sign this is a YAML file."
            ),
            "name a YAML inventory *.yml or *.yaml",
        ));
    }
    if names.iter().any(String::is_empty) {
        return Err((
            format!("Invalid empty host name provided: '{pattern}'"),
            "give the host a name",
        ));
    }
    Ok((names, port))
}

/// INI values are Python literals when they parse as one, else the text as written.
fn parse_value(text: &str) -> Value {
    literal_eval(text).unwrap_or_else(|| Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(text: &str) -> Result<Data, LoadError> {
        let mut data = Data::default();
        parse(&Source::from_text("hosts", text), &mut data)?;
        data.reconcile().expect("no loops");
        Ok(data)
    }

    fn err(text: &str) -> String {
        load(text).unwrap_err().to_string()
    }

    fn names(data: &Data, group: &str) -> Vec<String> {
        let g = data.group_id(group).unwrap();
        data.group_hosts(g)
            .into_iter()
            .map(|h| data.hosts[h].name.clone())
            .collect()
    }

    fn host_var(data: &Data, host: &str, key: &str) -> Option<Value> {
        data.hosts[data.host_id(host)?].vars.get(key).cloned()
    }

    #[test]
    fn hosts_before_sections_are_ungrouped() {
        let data = load("a\nb ansible_port=22\n[web]\nw1\n").unwrap();
        assert_eq!(names(&data, "ungrouped"), ["a", "b"]);
        assert_eq!(names(&data, "web"), ["w1"]);
        assert_eq!(names(&data, "all"), ["a", "b", "w1"]);
    }

    #[test]
    fn inline_vars_go_through_shlex_then_literal_eval() {
        let data =
            load("h1 a=1 b=True c=\"1\" d=\"'1'\" e=hello f='two words' g=[1,2] h=x=y # note\n")
                .unwrap();
        assert_eq!(host_var(&data, "h1", "a"), Some(json!(1)));
        assert_eq!(host_var(&data, "h1", "b"), Some(json!(true)));
        // shlex removes the double quotes first, so Ansible sees a bare 1.
        assert_eq!(host_var(&data, "h1", "c"), Some(json!(1)));
        assert_eq!(host_var(&data, "h1", "d"), Some(json!("1")));
        assert_eq!(host_var(&data, "h1", "e"), Some(json!("hello")));
        assert_eq!(host_var(&data, "h1", "f"), Some(json!("two words")));
        assert_eq!(host_var(&data, "h1", "g"), Some(json!([1, 2])));
        assert_eq!(host_var(&data, "h1", "h"), Some(json!("x=y")));
    }

    #[test]
    fn group_vars_keep_the_whole_line_after_the_equals() {
        let data = load(
            "[g]\nh\n[g:vars]\nn = 5\nflag=True\nname=\"quoted\"\npath=/usr/bin/python3\n\
             msg=hello world\nport=8080 # http\nraw=yes\nempty=\n",
        )
        .unwrap();
        let g = &data.groups[data.group_id("g").unwrap()].vars;
        assert_eq!(g["n"], json!(5));
        assert_eq!(g["flag"], json!(true));
        assert_eq!(g["name"], json!("quoted"));
        assert_eq!(g["path"], json!("/usr/bin/python3"));
        assert_eq!(g["msg"], json!("hello world"));
        assert_eq!(g["port"], json!(8080));
        assert_eq!(g["raw"], json!("yes"));
        assert_eq!(g["empty"], json!(""));
    }

    #[test]
    fn ranges_and_ports() {
        let data =
            load("[web]\nweb[01:03]\ndb-[a:c]:2222\nn[1:10:4]\n127.0.0.1:2201\n[::1]:2202\n")
                .unwrap();
        assert_eq!(
            names(&data, "web"),
            [
                "web01",
                "web02",
                "web03",
                "db-a",
                "db-b",
                "db-c",
                "n1",
                "n5",
                "n9",
                "127.0.0.1",
                "::1"
            ]
        );
        assert_eq!(host_var(&data, "db-b", "ansible_port"), Some(json!(2222)));
        assert_eq!(
            host_var(&data, "127.0.0.1", "ansible_port"),
            Some(json!(2201))
        );
        assert_eq!(host_var(&data, "::1", "ansible_port"), Some(json!(2202)));
        assert_eq!(host_var(&data, "web01", "ansible_port"), None);
    }

    #[test]
    fn children_may_be_declared_later() {
        let data = load("[app:children]\nweb\ndb\n[web]\nw1\n[db]\nd1\n").unwrap();
        assert_eq!(names(&data, "app"), ["w1", "d1"]);
        let app = data.group_id("app").unwrap();
        let web = data.group_id("web").unwrap();
        assert_eq!(data.groups[web].parents, [app]);
        // Only top-level groups hang under all.
        let all_children: Vec<&str> = data.groups[0]
            .children
            .iter()
            .map(|g| data.groups[*g].name.as_str())
            .collect();
        assert_eq!(all_children, ["ungrouped", "app"]);
    }

    #[test]
    fn a_children_section_declares_its_own_group() {
        let data = load("[parent:children]\nkid\n[kid:children]\n[parent:vars]\nx=1\n").unwrap();
        assert!(data.group_id("kid").is_some());
        assert_eq!(
            data.groups[data.group_id("parent").unwrap()].vars["x"],
            json!(1)
        );
    }

    #[test]
    fn hosts_listed_again_join_more_groups_and_leave_ungrouped() {
        let data = load("h1\nh2\n[web]\nh1\n[db]\nh1\n").unwrap();
        assert_eq!(names(&data, "ungrouped"), ["h2"]);
        assert_eq!(names(&data, "web"), ["h1"]);
        assert_eq!(names(&data, "db"), ["h1"]);
        assert_eq!(data.hosts.len(), 2);
    }

    #[test]
    fn a_group_may_share_a_host_name() {
        let data = load("[web]\nweb\n").unwrap();
        assert_eq!(names(&data, "web"), ["web"]);
        assert!(data.warnings.iter().any(|w| w.contains("same name: web")));
    }

    #[test]
    fn unknown_section_type_is_an_error_at_its_line() {
        let text = err("[web]\nh1\n[group:bad]\n");
        assert!(
            text.starts_with("hosts:3:1: Section [group:bad] has unknown type: bad"),
            "{text}"
        );
        assert!(text.contains("3 | [group:bad]"), "{text}");
    }

    #[test]
    fn bad_range_is_an_error_at_its_line() {
        let text = err("[web]\nweb[1:x]\n");
        assert!(
            text.starts_with("hosts:2:1: Invalid host range in 'web[1:x]'"),
            "{text}"
        );
        assert!(text.contains("2 | web[1:x]"), "{text}");
    }

    #[test]
    fn other_syntax_errors() {
        assert!(
            err("h1 novalue\n").starts_with(
                "hosts:1:1: Expected key=value host variable assignment, got: novalue"
            )
        );
        assert!(
            err("[g]\nh\n[g:vars]\njunk\n").starts_with("hosts:4:1: Expected key=value, got: junk")
        );
        assert!(err("[g:children]\na b\n").starts_with("hosts:2:1: Expected group name, got: a b"));
        assert!(err("[bad group]\n").starts_with("hosts:1:1: Invalid section entry"));
        assert!(err("h1 a='x\n").starts_with("hosts:1:1: Error parsing host definition"));
        assert!(err("h1:\n").contains("ending in ':' is not allowed"));
        assert!(err("---\n").contains("sign this is a YAML file"));
        assert!(
            err("[app:children]\nweb\n")
                .starts_with("hosts:2:1: Section [app:children] includes undefined group 'web'.")
        );
        assert!(
            err("[g:vars]\nx=1\n")
                .starts_with("hosts:1:1: Section [g:vars] not valid for undefined group 'g'.")
        );
        assert!(err("[a:children]\nb\n[b:children]\na\n").contains("recursive dependency loop"));
    }

    #[test]
    fn comments_and_blank_lines_are_skipped() {
        let data = load("# c\n; c\n\n[web] # trailing\nh1 # c\n").unwrap();
        assert_eq!(names(&data, "web"), ["h1"]);
    }
}
