//! Typed keyword values: strings, lists, mappings, booleans, conditions, counts, as a
//! keyword's value must be written, with an error saying how to write it otherwise.

use serde_json::Value as Json;

use super::loader::Loader;
use crate::yaml::{LoadError, Node, Value};

/// The names ansible-core 2.21 reserves (`ansible.vars.reserved._RESERVED_NAMES`, less
/// `vars`, which it adds itself): the keywords of plays, roles, blocks and tasks, and the
/// Jinja globals. Sorted, for the binary search.
const RESERVED_NAMES: &[&str] = &[
    "action",
    "always",
    "any_errors_fatal",
    "args",
    "async",
    "async_val",
    "become",
    "become_exe",
    "become_flags",
    "become_method",
    "become_user",
    "block",
    "changed_when",
    "check_mode",
    "collections",
    "connection",
    "cycler",
    "debugger",
    "delay",
    "delegate_facts",
    "delegate_to",
    "dict",
    "diff",
    "environment",
    "fact_path",
    "failed_when",
    "force_handlers",
    "gather_facts",
    "gather_timeout",
    "handlers",
    "hosts",
    "ignore_errors",
    "ignore_unreachable",
    "joiner",
    "lipsum",
    "local_action",
    "lookup",
    "loop",
    "loop_control",
    "loop_with",
    "max_fail_percentage",
    "module_defaults",
    "name",
    "namespace",
    "no_log",
    "notify",
    "now",
    "omit",
    "order",
    "poll",
    "port",
    "post_tasks",
    "pre_tasks",
    "q",
    "query",
    "range",
    "register",
    "remote_user",
    "rescue",
    "retries",
    "roles",
    "run_once",
    "serial",
    "strategy",
    "tags",
    "tasks",
    "throttle",
    "timeout",
    "undef",
    "until",
    "validate_argspec",
    "vars_files",
    "vars_prompt",
    "when",
    "with_",
];

/// Whether Ansible warns about a variable of this name.
pub fn is_reserved_name(name: &str) -> bool {
    RESERVED_NAMES.binary_search(&name).is_ok()
}

impl Loader<'_> {
    /// A list of scalars, or one comma-separated string (as `gather_subset: "!all,network"`).
    pub(super) fn string_list(&self, node: &Node, what: &str) -> Result<Vec<String>, LoadError> {
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Seq(items) => items.iter().map(|i| self.scalar(i, what)).collect(),
            _ => Ok(self
                .scalar(node, what)?
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()),
        }
    }

    /// `tags`: a list (nested lists flattened, as Ansible does) or a comma-separated string.
    pub(super) fn tags(&self, node: &Node) -> Result<Vec<String>, LoadError> {
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Str(s) => Ok(super::split_tags(s)),
            Value::Seq(items) => {
                let mut tags = Vec::new();
                for item in items {
                    match &item.value {
                        Value::Seq(inner) => {
                            for i in inner {
                                tags.push(self.scalar(i, "a tag")?);
                            }
                        }
                        _ => tags.push(self.scalar(item, "a tag")?),
                    }
                }
                Ok(tags)
            }
            _ => Err(self.err(
                node.span,
                "tags must be specified as a list",
                Some("write `tags: [web, db]` or `tags: web,db`".into()),
            )),
        }
    }

    pub(super) fn scalar(&self, node: &Node, what: &str) -> Result<String, LoadError> {
        match &node.value {
            Value::Seq(_) | Value::Map(_) | Value::Null => Err(self.err(
                node.span,
                format!("{what} must be a string, got {}", node.kind_name()),
                None,
            )),
            _ => Ok(node.scalar_to_string().unwrap_or_default()),
        }
    }

    pub(super) fn mapping(
        &self,
        node: &Node,
        what: &str,
    ) -> Result<serde_json::Map<String, Json>, LoadError> {
        match &node.value {
            Value::Null => Ok(serde_json::Map::new()),
            Value::Map(entries) => match node.to_json() {
                Json::Object(map) if what == "vars" => {
                    self.warn_reserved(entries);
                    Ok(map)
                }
                Json::Object(map) => Ok(map),
                _ => unreachable!("a mapping node converts to an object"),
            },
            _ => Err(self.err(
                node.span,
                format!("{what} must be a mapping, got {}", node.kind_name()),
                Some(format!(
                    "write `{what}:` followed by indented `key: value` lines"
                )),
            )),
        }
    }

    /// Ansible's warning for a variable named like a keyword or a Jinja global
    /// (vars/reserved.py), once per place.
    fn warn_reserved(&self, entries: &[(Node, Node)]) {
        for (key, _) in entries {
            let Some(name) = key.as_str() else { continue };
            if is_reserved_name(name) {
                crate::yaml::push_load_warning(format!(
                    "Found variable using reserved name '{name}'.\nOrigin: {}:{}:{}",
                    self.source.path.display(),
                    key.span.line,
                    key.span.column
                ));
            }
        }
    }

    pub(super) fn boolean(&self, node: &Node, what: &str) -> Result<bool, LoadError> {
        // A keyword's `isa='bool'` is Ansible's strict boolean() (playbook/base.py).
        crate::booleans::strict(&node.to_json()).map_err(|_| self.bool_error(node, what))
    }

    /// A yes/no keyword that may also be a template, decided when the task runs:
    /// `Ok(value)` or `Err(template)`.
    pub(super) fn switch(
        &self,
        node: &Node,
        what: &str,
    ) -> Result<Result<bool, String>, LoadError> {
        match &node.value {
            Value::Str(s) if crate::template::is_template(s) => Ok(Err(s.clone())),
            // Ansible checks a keyword's type when the task runs (post_validate): a string
            // that is no boolean fails the task then, with its message, not the load.
            Value::Str(s) if crate::booleans::strict(&node.to_json()).is_err() => {
                Ok(Err(s.clone()))
            }
            _ => self.boolean(node, what).map(Ok),
        }
    }

    pub(super) fn bool_error(&self, node: &Node, what: &str) -> LoadError {
        let shown = node
            .scalar_to_string()
            .map(|s| format!("'{s}'"))
            .unwrap_or_else(|| node.kind_name().to_string());
        self.err(
            node.span,
            format!("{what} must be a boolean, got {shown}"),
            Some("use yes/no or true/false".into()),
        )
    }

    /// `when`, `changed_when`, `failed_when`, `until`: one condition or a list (all must hold).
    pub(super) fn conditions(&self, node: &Node, keyword: &str) -> Result<Vec<String>, LoadError> {
        match &node.value {
            Value::Seq(items) => items.iter().map(|i| self.condition(i, keyword)).collect(),
            Value::Null => Ok(Vec::new()),
            _ => Ok(vec![self.condition(node, keyword)?]),
        }
    }

    pub(super) fn condition(&self, node: &Node, keyword: &str) -> Result<String, LoadError> {
        match &node.value {
            Value::Str(s) => Ok(s.clone()),
            Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
                Ok(node.scalar_to_string().unwrap_or_default())
            }
            _ => Err(self.err(
                node.span,
                format!(
                    "{keyword} must be a condition or a list of conditions, got {}",
                    node.kind_name()
                ),
                Some(format!(
                    "write a Jinja expression without braces, e.g. `{keyword}: x == 1`"
                )),
            )),
        }
    }

    /// `notify`/`listen`: one name or a list of names.
    pub(super) fn names(&self, node: &Node, keyword: &str) -> Result<Vec<String>, LoadError> {
        match &node.value {
            Value::Seq(items) => items.iter().map(|i| self.scalar(i, keyword)).collect(),
            Value::Null => Ok(Vec::new()),
            _ => Ok(vec![self.scalar(node, keyword)?]),
        }
    }

    /// `retries`/`delay`: a non-negative integer, or a template deciding it at run time.
    pub(super) fn count<'n>(&self, node: &'n Node, keyword: &str) -> Result<&'n Node, LoadError> {
        match &node.value {
            Value::Int(n) if *n >= 0 => Ok(node),
            Value::Str(s) if crate::template::is_template(s) || s.trim().parse::<u64>().is_ok() => {
                Ok(node)
            }
            _ => Err(self.err(
                node.span,
                format!(
                    "{keyword} must be a non-negative integer, got {}",
                    node.scalar_to_string()
                        .map(|s| format!("'{s}'"))
                        .unwrap_or_else(|| node.kind_name().to_string())
                ),
                Some(format!("write e.g. `{keyword}: 3`")),
            )),
        }
    }

    /// A number of seconds (`delay: 0.5`; Ansible's `isa='float'`), or a template.
    pub(super) fn seconds<'n>(&self, node: &'n Node, keyword: &str) -> Result<&'n Node, LoadError> {
        let ok = match &node.value {
            Value::Int(n) => *n >= 0,
            Value::Float(f) => *f >= 0.0 && f.is_finite(),
            Value::Str(s) => {
                crate::template::is_template(s)
                    || s.trim()
                        .parse::<f64>()
                        .is_ok_and(|f| f >= 0.0 && f.is_finite())
            }
            _ => false,
        };
        if ok {
            return Ok(node);
        }
        Err(self.err(
            node.span,
            format!(
                "{keyword} must be a non-negative number of seconds, got {}",
                node.scalar_to_string()
                    .map(|s| format!("'{s}'"))
                    .unwrap_or_else(|| node.kind_name().to_string())
            ),
            Some(format!("write e.g. `{keyword}: 5` or `{keyword}: 0.5`")),
        ))
    }

    /// `port`: a number from 1 to 65535, or a template deciding it per host.
    pub(super) fn port(&self, node: &Node) -> Result<String, LoadError> {
        let text = self.scalar(node, "port")?;
        let valid =
            crate::template::is_template(&text) || text.trim().parse::<u16>().is_ok_and(|p| p != 0);
        if !valid {
            return Err(self.err(
                node.span,
                format!("port must be a port number (1-65535), got '{text}'"),
                Some("write e.g. `port: 2222`".into()),
            ));
        }
        Ok(text)
    }

    /// `environment`: a mapping (values templated later) or one template of a mapping.
    pub(super) fn environment(&self, node: &Node) -> Result<Option<Json>, LoadError> {
        match &node.value {
            Value::Null => Ok(None),
            Value::Map(_) => Ok(Some(node.to_json())),
            // A list of mappings (or templates of them) is merged in order, as Ansible does.
            Value::Seq(_) => Ok(Some(node.to_json())),
            Value::Str(s) if crate::template::is_template(s) => Ok(Some(node.to_json())),
            _ => Err(self.err(
                node.span,
                format!("environment must be a mapping, got {}", node.kind_name()),
                Some("write e.g. `environment: {LANG: C}`".into()),
            )),
        }
    }
}
