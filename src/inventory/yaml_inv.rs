//! Ansible's YAML inventory format: every top-level key is a group (usually just `all`), and
//! a group is a mapping of `hosts`, `children` and `vars`.

use super::address::expand_host_pattern;
use super::data::Data;
use crate::yaml::{LoadError, Node, Source, Value};

const GROUP_KEYS: [&str; 3] = ["hosts", "children", "vars"];

pub fn parse(source: &Source, root: &Node, data: &mut Data) -> Result<(), LoadError> {
    let entries = match &root.value {
        Value::Null => return Ok(()),
        Value::Map(entries) => entries,
        _ => {
            return Err(source.error(
                Some(root.span),
                format!(
                    "a YAML inventory must be a mapping of groups, not {}",
                    root.kind_name()
                ),
                Some("start the file with `all:` and list hosts under `all: {hosts: ...}`".into()),
            ));
        }
    };
    if let Some(plugin) = root.get("plugin") {
        return Err(source.error(
            Some(plugin.span),
            "this is an inventory plugin configuration, which turbo-play does not run",
            Some("list the hosts in an INI or YAML inventory instead".into()),
        ));
    }
    for (key, value) in entries {
        parse_group(source, key, value, data)?;
    }
    Ok(())
}

fn key_text(source: &Source, key: &Node, what: &str) -> Result<String, LoadError> {
    key.scalar_to_string()
        .filter(|_| !key.is_null())
        .ok_or_else(|| {
            source.error(
                Some(key.span),
                format!("a {what} must be a plain name, not {}", key.kind_name()),
                None,
            )
        })
}

fn parse_group(
    source: &Source,
    key: &Node,
    value: &Node,
    data: &mut Data,
) -> Result<usize, LoadError> {
    let name = key_text(source, key, "group name")?;
    let entries: &[(Node, Node)] = match &value.value {
        Value::Null => &[],
        Value::Map(entries) => entries,
        _ => {
            return Err(source.error(
                Some(value.span),
                format!(
                    "group `{name}` must be a mapping of hosts, children and vars, not {}",
                    value.kind_name()
                ),
                Some(format!(
                    "write `{name}:` followed by indented `hosts:`, `children:` or `vars:`"
                )),
            ));
        }
    };
    let group = data.add_group(&name);
    for (section_key, section) in entries {
        let section_name = section_key.as_str().unwrap_or_default();
        if !GROUP_KEYS.contains(&section_name) {
            let shown = section_key.scalar_to_string().unwrap_or_default();
            let suggestion = GROUP_KEYS
                .iter()
                .find(|k| strsim::levenshtein(k, &shown) <= 2)
                .map(|k| format!("did you mean `{k}`? "))
                .unwrap_or_default();
            return Err(source.error(
                Some(section_key.span),
                format!("unknown key `{shown}` in group `{name}`"),
                Some(format!(
                    "{suggestion}a group holds only `hosts`, `children` and `vars`; \
                     put a child group under `children:`"
                )),
            ));
        }
        // A bare name stands for a one-entry mapping, as Ansible allows (`hosts: web1`).
        let single;
        let items: &[(Node, Node)] = match &section.value {
            Value::Null => continue,
            Value::Map(items) => items,
            Value::Str(_) | Value::Int(_) | Value::Float(_) | Value::Bool(_) => {
                single = [(
                    section.clone(),
                    Node {
                        value: Value::Null,
                        span: section.span,
                    },
                )];
                &single
            }
            Value::Seq(_) => {
                return Err(source.error(
                    Some(section.span),
                    format!(
                        "`{section_name}` of group `{name}` must be a mapping, not a list"
                    ),
                    Some(format!(
                        "write each entry as a key ending in `:`, e.g. `{section_name}:\\n  web1:\\n  web2:`"
                    )),
                ));
            }
        };
        match section_name {
            "vars" => {
                for (var, val) in items {
                    let var = key_text(source, var, "variable name")?;
                    data.set_group_var(group, &var, val.to_json())
                        .map_err(|message| source.error(Some(val.span), message, None))?;
                }
            }
            "children" => {
                for (child_key, child_value) in items {
                    let child = parse_group(source, child_key, child_value, data)?;
                    data.add_child(group, child)
                        .map_err(|message| source.error(Some(child_key.span), message, None))?;
                }
            }
            _ => {
                for (host_key, host_value) in items {
                    parse_hosts(source, group, host_key, host_value, data)?;
                }
            }
        }
    }
    Ok(group)
}

fn parse_hosts(
    source: &Source,
    group: usize,
    key: &Node,
    value: &Node,
    data: &mut Data,
) -> Result<(), LoadError> {
    if let Value::Int(_) | Value::Float(_) = key.value {
        let text = key.scalar_to_string().unwrap_or_default();
        return Err(source.error(
            Some(key.span),
            format!(
                "Host pattern {text} must be a string. Enclose integers/floats in quotation marks."
            ),
            None,
        ));
    }
    let pattern = key_text(source, key, "host name")?;
    let (names, port) = expand_host_pattern(&pattern).map_err(|reason| {
        source.error(
            Some(key.span),
            format!("invalid host range in `{pattern}`: {reason}"),
            Some("a range is [start:end] or [start:end:step] with numbers or single letters, e.g. web[01:10]".into()),
        )
    })?;
    let vars: &[(Node, Node)] = match &value.value {
        Value::Null => &[],
        Value::Map(vars) => vars,
        _ => {
            return Err(source.error(
                Some(value.span),
                format!(
                    "host `{pattern}` must have a mapping of variables (or nothing), not {}",
                    value.kind_name()
                ),
                Some(format!(
                    "write `{pattern}:` alone, or with indented `name: value` lines"
                )),
            ));
        }
    };
    for name in names {
        let host = data.add_host(&name, Some(group), port);
        for (var, val) in vars {
            let var = key_text(source, var, "variable name")?;
            data.set_host_var(host, &var, val.to_json());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(text: &str) -> Result<Data, LoadError> {
        let source = Source::from_text("inv.yml", text);
        let root = source.parse()?;
        let mut data = Data::default();
        parse(&source, &root, &mut data)?;
        data.reconcile().expect("no loops");
        Ok(data)
    }

    #[test]
    fn a_number_is_no_host_name() {
        let text = load("all:\n  hosts:\n    1234: {}\n")
            .unwrap_err()
            .to_string();
        assert!(
            text.contains(
                "Host pattern 1234 must be a string. Enclose integers/floats in quotation marks."
            ),
            "{text}"
        );
        assert!(load("all:\n  hosts:\n    '1234':\n").is_ok());
    }

    fn names(data: &Data, group: &str) -> Vec<String> {
        data.group_hosts(data.group_id(group).unwrap())
            .into_iter()
            .map(|h| data.hosts[h].name.clone())
            .collect()
    }

    #[test]
    fn reads_nested_groups_hosts_and_vars() {
        let data = load(
            "all:\n  hosts:\n    solo:\n  vars:\n    v: 1\n  children:\n    web:\n      hosts:\n        w[1:2]:\n          x: yes\n    db:\n      hosts: d1\n",
        )
        .unwrap();
        assert_eq!(names(&data, "web"), ["w1", "w2"]);
        assert_eq!(names(&data, "db"), ["d1"]);
        assert_eq!(names(&data, "ungrouped"), ["solo"]);
        assert_eq!(data.groups[0].vars["v"], json!(1));
        let w2 = data.host_id("w2").unwrap();
        assert_eq!(data.hosts[w2].vars["x"], json!(true));
    }

    #[test]
    fn top_level_keys_other_than_all_are_groups() {
        let data = load("web:\n  hosts:\n    h1:\n    h2:2222:\nempty:\n").unwrap();
        assert_eq!(names(&data, "web"), ["h1", "h2"]);
        let h2 = data.host_id("h2").unwrap();
        assert_eq!(data.hosts[h2].vars["ansible_port"], json!(2222));
        assert!(data.group_id("empty").is_some());
    }

    #[test]
    fn unknown_group_key_is_an_error_with_position() {
        let err = load("all:\n  children:\n    web:\n      host:\n        h1:\n").unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("inv.yml:4:7: unknown key `host` in group `web`"),
            "{text}"
        );
        assert!(text.contains("did you mean `hosts`?"), "{text}");
    }

    #[test]
    fn wrong_types_are_errors_with_position() {
        let text = load("all:\n  hosts:\n    - h1\n").unwrap_err().to_string();
        assert!(
            text.starts_with("inv.yml:3:5: `hosts` of group `all` must be a mapping, not a list"),
            "{text}"
        );
        let text = load("all:\n  hosts:\n    h1: 5\n").unwrap_err().to_string();
        assert!(
            text.starts_with("inv.yml:3:9: host `h1` must have a mapping"),
            "{text}"
        );
        let text = load("web: [a]\n").unwrap_err().to_string();
        assert!(
            text.starts_with("inv.yml:1:6: group `web` must be a mapping"),
            "{text}"
        );
        let text = load("- a\n").unwrap_err().to_string();
        assert!(text.contains("must be a mapping of groups"), "{text}");
        let text = load("plugin: aws_ec2\n").unwrap_err().to_string();
        assert!(text.contains("inventory plugin configuration"), "{text}");
        let text = load("all:\n  hosts:\n    web[1:x]:\n")
            .unwrap_err()
            .to_string();
        assert!(
            text.starts_with("inv.yml:3:5: invalid host range"),
            "{text}"
        );
    }
}
