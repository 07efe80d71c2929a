//! One task: its keywords (loops, conditions, handlers, run keywords) and its action.

use super::action::{ActionArgs, module_list};
use super::keyword_table::{At, Places, Taken};
use super::loader::{Inherited, Loader, dedup_in_order};
use super::loops::{BreakWhen, WrittenCondition};
use super::{Combinator, LOOP_LOOKUPS, LoopControl, LoopSpec, RunKeywords, Task, Until};
use crate::modules::{Module, closest};
use crate::yaml::{LoadError, Node, Span, Value};
use serde_json::Value as Json;

pub(super) const LOOP_CONTROL_KEYS: &[&str] = &[
    "loop_var",
    "index_var",
    "label",
    "pause",
    "extended",
    "extended_allitems",
    "break_when",
];

/// `meta:` actions the executor knows.
pub const META_ACTIONS: &[&str] = &[
    "flush_handlers",
    "noop",
    "end_play",
    "end_host",
    "end_batch",
    "clear_host_errors",
    "refresh_inventory",
    "reset_connection",
    "clear_facts",
    "role_complete",
    "end_role",
];

const AT_TASK: At = At {
    place: Places::TASK,
    label: "a task",
};

impl Loader<'_> {
    pub(super) fn task(&self, node: &Node, inherited: &Inherited) -> Result<Task, LoadError> {
        let Some(entries) = node.as_map() else {
            return Err(self.err(
                node.span,
                format!("a task must be a mapping, got {}", node.kind_name()),
                Some("a task looks like `- name: ...` followed by a module, e.g. `copy:`".into()),
            ));
        };
        // The task's own `collections:` replace those around it for its action, wherever
        // the keyword is written among its keys, as in Ansible.
        let with_own;
        let inherited = match node.get("collections") {
            Some(v) => {
                let mut copy = inherited.clone();
                copy.collections = self.string_list(v, "collections")?;
                with_own = copy;
                &with_own
            }
            None => inherited,
        };
        let mut name = None;
        // (action as written, module, its argument node, the key's span)
        let mut action: Option<(String, &'static dyn Module, ActionArgs, Span)> = None;
        let mut extra_args = serde_json::Map::new();
        let mut extra_args_node: Option<&Node> = None;
        let mut loop_spec: Option<(LoopSpec, &str)> = None;
        let mut loop_var = "item".to_string();
        let mut loop_control = LoopControl::new();
        let mut when = Vec::new();
        let mut register = None;
        let mut register_projections = Vec::new();
        let mut ignore_errors = None;
        let mut notify = Vec::new();
        let mut listen = Vec::new();
        let (mut changed_when, mut failed_when, mut until) = (None, None, None);
        let (mut retries, mut delay): (Option<&Node>, Option<&Node>) = (None, None);
        let mut async_job = super::AsyncKeywords::default();
        let mut vars = serde_json::Map::new();
        let mut unsupported = inherited.unsupported.clone();
        let mut tags = inherited.tags.clone();
        let mut check_mode = inherited.check_mode;
        let mut diff = inherited.diff;
        let mut keywords = inherited.keywords.clone();

        for (k, v) in entries {
            let key = self.key(k)?;
            let mut set_loop = |spec: LoopSpec| -> Result<(), LoadError> {
                if let Some((_, earlier)) = &loop_spec {
                    return Err(self.err(
                        k.span,
                        format!(
                            "only one loop keyword per task: '{earlier}' and '{key}' both given"
                        ),
                        Some("keep one of them".into()),
                    ));
                }
                loop_spec = Some((spec, key));
                Ok(())
            };
            match key {
                // `name:` left empty is no name, as in Ansible.
                "name" if matches!(v.value, crate::yaml::Value::Null) => name = None,
                "name" => name = Some(self.scalar(v, "name")?),
                "loop" | "with_list" | "with_items" => set_loop(LoopSpec::Items {
                    value: v.to_json(),
                    flatten: key == "with_items",
                })?,
                "with_sequence" => {
                    let spec = match &v.value {
                        Value::Map(pairs) => pairs
                            .iter()
                            .map(|(pk, pv)| {
                                format!(
                                    "{}={}",
                                    pk.scalar_to_string().unwrap_or_default(),
                                    pv.scalar_to_string().unwrap_or_default()
                                )
                            })
                            .collect::<Vec<_>>()
                            .join(" "),
                        _ => self.scalar(v, "with_sequence")?,
                    };
                    set_loop(LoopSpec::Sequence(spec))?
                }
                "when" => when = self.conditions(v, key)?,
                "changed_when" => changed_when = Some(self.conditions(v, key)?),
                "failed_when" => failed_when = Some(self.conditions(v, key)?),
                "until" => until = Some(self.conditions(v, key)?),
                "retries" => retries = Some(self.count(v, key)?),
                "delay" => delay = Some(self.seconds(v, key)?),
                "async" => async_job.limit = Some(self.count(v, key)?.to_json()),
                "poll" => async_job.poll = Some(self.count(v, key)?.to_json()),
                "register" => match &v.value {
                    Value::Map(pairs) => register_projections = self.register_projections(pairs)?,
                    _ => register = Some(self.scalar(v, "register")?),
                },
                "ignore_errors" => match self.switch(v, key)? {
                    Ok(fixed) => {
                        ignore_errors = Some(fixed);
                        keywords.templated.ignore_errors = None;
                    }
                    Err(template) => keywords.templated.ignore_errors = Some(template),
                },
                "notify" => notify = self.names(v, key)?,
                "listen" if inherited.handler => listen = self.names(v, key)?,
                "listen" => {
                    return Err(self.err(
                        k.span,
                        "'listen' is only valid on a handler",
                        Some("move this task under the play's `handlers:`".into()),
                    ));
                }
                "rescue" | "always" => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' needs a `block:` beside it"),
                        Some(format!(
                            "write `- block:` with the tasks to protect, then `{key}:`"
                        )),
                    ));
                }
                "vars" => vars = self.mapping(v, "vars")?,
                "tags" => tags.extend(self.tags(v)?),
                // The inherited value stays for a template that renders to None.
                "check_mode" => match self.switch(v, key)? {
                    Ok(fixed) => check_mode = Some(fixed),
                    Err(template) => keywords.templated.check_mode = Some(template),
                },
                "diff" => match self.switch(v, key)? {
                    Ok(fixed) => diff = Some(fixed),
                    Err(template) => keywords.templated.diff = Some(template),
                },
                "loop_control" => {
                    let (var, control) = self.loop_control(v)?;
                    if let Some(var) = var {
                        loop_var = var;
                    }
                    loop_control = control;
                }
                "args" => {
                    // `args: "{{ task_args }}"` is resolved to a mapping when the task runs.
                    match v.as_str() {
                        Some(text) if super::action::is_possibly_all_template(text) => {
                            extra_args.insert(VARIABLE_PARAMS.into(), text.into());
                        }
                        _ => extra_args = self.mapping(v, "args")?,
                    }
                    extra_args_node = Some(v);
                }
                "action" | "local_action" => {
                    if key == "local_action" {
                        keywords.delegate_to = Some("localhost".to_string());
                    }
                    let (written, module, args) = self.action_keyword(v, inherited)?;
                    self.set_action(&mut action, written, module, args, k.span)?;
                }
                _ if key.starts_with("with_") => {
                    let lookup = &key["with_".len()..];
                    // A Python lookup the playbook, a role or a collection ships loops too.
                    let python = || {
                        self.shared
                            .plugins
                            .find(crate::plugins::Kind::Lookup, lookup, &inherited.collections)
                            .is_some()
                    };
                    if !LOOP_LOOKUPS.contains(&lookup) && !python() {
                        let help = closest(lookup, LOOP_LOOKUPS.iter().copied())
                            .map(|s| format!("did you mean 'with_{s}'?"))
                            .unwrap_or_else(|| {
                                format!("loop lookups: with_{}", LOOP_LOOKUPS.join(", with_"))
                            });
                        return Err(self.err(
                            k.span,
                            format!("lookup plugin '{lookup}' for '{key}' is not supported"),
                            Some(help),
                        ));
                    }
                    let terms = v.to_json();
                    set_loop(match Combinator::from_lookup(lookup) {
                        Some(how) => LoopSpec::Combine { how, terms },
                        None => LoopSpec::Lookup {
                            name: lookup.to_string(),
                            terms,
                        },
                    })?
                }
                _ => match self.table_keyword(&AT_TASK, k, v, &mut keywords, &mut unsupported)? {
                    Taken::Yes => {}
                    Taken::No => match self
                        .find_module(key, inherited)
                        .map_err(|message| self.err(k.span, message, None))?
                    {
                        Some(module) => {
                            let args = ActionArgs::Node(v);
                            self.set_action(&mut action, key.to_string(), module, args, k.span)?
                        }
                        None => return Err(self.unknown_action(key, k.span)),
                    },
                },
            }
        }

        // ansible.cfg's `no_log` is the default of a task that nothing around says.
        if !keywords.no_log_written && self.shared.default_no_log {
            keywords.no_log = true;
        }
        let Some((written, module, args_node, key_span)) = action else {
            return Err(self.err(
                node.span,
                "no module/action detected in task.",
                Some(format!(
                    "add a module to the task, one of: {}",
                    module_list()
                )),
            ));
        };
        // Where each argument key was written, for pointing at a bad one.
        let mut arg_keys: Vec<&Node> = Vec::new();
        match &args_node {
            ActionArgs::Node(n) => {
                arg_keys.extend(n.as_map().unwrap_or_default().iter().map(|(k, _)| k))
            }
            ActionArgs::Mapping { pairs, .. } => arg_keys.extend(pairs.iter().map(|(k, _)| k)),
            ActionArgs::Text(..) => {}
        }
        if let Some(n) = extra_args_node {
            arg_keys.extend(n.as_map().unwrap_or_default().iter().map(|(k, _)| k));
        }
        let module_args = self.module_args(module, args_node)?;
        // `args:` gives defaults; what is written on the module wins (as Ansible merges).
        let mut args = extra_args;
        args.extend(module_args);
        let mut when_all = inherited.when.clone();
        when_all.extend(when);
        let mut task_vars = inherited.vars.clone();
        task_vars.extend(vars);
        if module.caps().control == crate::modules::Control::Meta {
            self.check_meta(&args, key_span)?;
            if inherited.role.is_none()
                && args
                    .get("_raw_params")
                    .and_then(Json::as_str)
                    .map(str::trim)
                    == Some("end_role")
            {
                return Err(self.err(
                    key_span,
                    "Cannot execute 'end_role' from outside of a role",
                    Some(
                        "end_role ends the role it is written in: move it into a role's tasks"
                            .into(),
                    ),
                ));
            }
        }
        let role_dir = inherited.role.as_ref().map(|r| r.path.as_path());
        let resolved_action =
            self.resolved_action(&written, module, &inherited.collections, role_dir);
        Ok(Task {
            name,
            action: written,
            resolved_action,
            module,
            args,
            loop_spec: loop_spec.map(|(spec, _)| spec),
            loop_var,
            loop_control,
            when: when_all,
            register,
            register_projections,
            ignore_errors: ignore_errors.or(inherited.ignore_errors).unwrap_or(false),
            changed_when,
            failed_when,
            // `retries`/`delay` without `until` do nothing in Ansible either.
            until: until.map(|conditions| Until {
                conditions,
                retries: retries.map(Node::to_json),
                delay: delay.map(Node::to_json),
            }),
            async_job,
            notify: {
                let mut all = notify;
                for name in &inherited.notify {
                    if !all.contains(name) {
                        all.push(name.clone());
                    }
                }
                all
            },
            listen,
            frames: inherited.frames.clone(),
            tags: {
                dedup_in_order(&mut tags);
                tags
            },
            check_mode,
            diff,
            role: inherited.role.clone(),
            include_params: inherited.include_params.clone(),
            vars: task_vars,
            keywords,
            unsupported,
            location: self.location(node.span),
            include: None,
            implicit: false,
        })
    }

    pub(super) fn check_meta(
        &self,
        args: &serde_json::Map<String, Json>,
        span: Span,
    ) -> Result<(), LoadError> {
        let action = args.get("_raw_params").and_then(Json::as_str).unwrap_or("");
        if META_ACTIONS.contains(&action.trim()) {
            return Ok(());
        }
        Err(self.err(
            span,
            format!("invalid meta action requested: {action}"),
            Some(format!("meta takes one of: {}", META_ACTIONS.join(", "))),
        ))
    }

    /// A keyword of [`RunKeywords`] on a task or a block.
    pub(super) fn run_keyword(
        &self,
        key: &str,
        v: &Node,
        into: &mut RunKeywords,
    ) -> Result<(), LoadError> {
        match key {
            "run_once" => match self.switch(v, key)? {
                Ok(fixed) => {
                    into.run_once = fixed;
                    into.templated.run_once = None;
                }
                Err(template) => into.templated.run_once = Some(template),
            },
            "delegate_to" => into.delegate_to = Some(self.scalar(v, key)?),
            "delegate_facts" => into.delegate_facts = self.boolean(v, key)?,
            "no_log" => {
                into.no_log_written = true;
                match self.switch(v, key)? {
                    Ok(fixed) => {
                        into.no_log = fixed;
                        into.templated.no_log = None;
                    }
                    Err(template) => into.templated.no_log = Some(template),
                }
            }
            "any_errors_fatal" => into.any_errors_fatal = Some(self.boolean(v, key)?),
            "ignore_unreachable" => into.ignore_unreachable = self.boolean(v, key)?,
            "environment" => into.environment.extend(self.environment(v)?),
            "module_defaults" => into.module_defaults.push(self.module_defaults(v)?),
            "connection" => into.connection = Some(self.scalar(v, key)?),
            "remote_user" => into.remote_user = Some(self.scalar(v, key)?),
            "port" => into.port = Some(self.port(v)?),
            "become" => into.become_.enabled.set(self.scalar(v, key)?),
            "become_user" => into.become_.user.set(self.scalar(v, key)?),
            "become_method" => into.become_.method.set(self.scalar(v, key)?),
            "become_flags" => into.become_.flags.set(self.scalar(v, key)?),
            "become_exe" => into.become_.exe.set(self.scalar(v, key)?),
            "timeout" => into.timeout = Some(self.scalar(v, key)?),
            "throttle" => {
                let n = self.count(v, key)?;
                // A template is decided when the task runs.
                into.throttle_template = n
                    .as_str()
                    .filter(|s| crate::template::is_template(s))
                    .map(str::to_string);
                into.throttle = match &n.value {
                    Value::Int(n) => Some(*n as u64),
                    Value::Str(s) => s.trim().parse().ok(),
                    _ => None,
                }
                .filter(|n| *n > 0);
            }
            _ => unreachable!("the keyword table's run keywords are what run_keyword takes"),
        }
        Ok(())
    }

    pub(super) fn loop_control(
        &self,
        node: &Node,
    ) -> Result<(Option<String>, LoopControl), LoadError> {
        let mut control = LoopControl::new();
        let Some(entries) = node.as_map() else {
            if node.is_null() {
                return Ok((None, control));
            }
            return Err(self.err(
                node.span,
                format!("loop_control must be a mapping, got {}", node.kind_name()),
                None,
            ));
        };
        let mut loop_var = None;
        // Ansible checks these values when the loop runs: a bad one fails the task then
        // (`LoopControl::problem`), first the values' types, then the variable names.
        let mut bad_value = None;
        let mut convert = |key: &str, v: &Node, to: &str| {
            let shown = match v.to_json() {
                Json::String(s) => format!("'{s}'"),
                other => other.to_string(),
            };
            bad_value.get_or_insert(format!(
                "Error processing keyword '{key}': The value {shown} could not be converted to '{to}'."
            ));
        };
        for (k, v) in entries {
            let key = self.key(k)?;
            match key {
                "loop_var" => loop_var = Some(self.scalar(v, key)?),
                "index_var" => control.index_var = Some(self.scalar(v, key)?),
                "label" => control.label = Some(self.scalar(v, key)?),
                "extended" | "extended_allitems" => {
                    let value = match crate::booleans::strict(&v.to_json()) {
                        Ok(value) => value,
                        Err(_) => {
                            convert(key, v, "bool");
                            false
                        }
                    };
                    if key == "extended" {
                        control.extended = value;
                    } else {
                        control.extended_allitems = value;
                    }
                }
                "pause" => match &v.value {
                    Value::Int(_) | Value::Float(_) => control.pause = Some(v.to_json()),
                    Value::Str(s)
                        if crate::template::is_template(s) || s.trim().parse::<f64>().is_ok() =>
                    {
                        control.pause = Some(v.to_json())
                    }
                    _ => convert(key, v, "float"),
                },
                "break_when" => {
                    let items = match &v.value {
                        Value::Seq(items) => items.iter().collect(),
                        Value::Null => Vec::new(),
                        _ => vec![v],
                    };
                    let written: Result<Vec<WrittenCondition>, LoadError> = items
                        .into_iter()
                        .map(|item| {
                            Ok(WrittenCondition {
                                text: self.condition(item, key)?,
                                origin: self.location(item.span),
                            })
                        })
                        .collect();
                    control.break_when = Some(match written {
                        Ok(conditions) => BreakWhen::Conditions(conditions),
                        Err(_) => BreakWhen::NotStrings(self.location(v.span)),
                    });
                }
                _ if LOOP_CONTROL_KEYS.contains(&key) => {}
                _ => {
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not a valid attribute for a LoopControl"),
                        closest(key, LOOP_CONTROL_KEYS.iter().copied())
                            .map(|s| format!("did you mean '{s}'?")),
                    ));
                }
            }
        }
        control.problem = bad_value.or_else(|| {
            [
                ("loop_var", loop_var.as_deref()),
                ("index_var", control.index_var.as_deref()),
            ]
            .into_iter()
            .find_map(|(what, name)| {
                let name = name?;
                (!is_identifier(name))
                    .then(|| format!("Invalid '{what}': Invalid variable name '{name}'."))
            })
        });
        Ok((loop_var, control))
    }
}

/// Python's `str.isidentifier()` and not a keyword: what Ansible takes as a variable name.
impl Loader<'_> {
    /// `register:` as a mapping: variable names (Ansible refuses an invalid one at load)
    /// and the expressions they take, as written.
    fn register_projections(
        &self,
        pairs: &[(Node, Node)],
    ) -> Result<Vec<(String, Json)>, LoadError> {
        pairs
            .iter()
            .map(|(k, v)| {
                let name = k.scalar_to_string().unwrap_or_default();
                if !is_identifier(&name) {
                    return Err(self.err(
                        k.span,
                        format!("Invalid 'register' specified: Invalid variable name '{name}'."),
                        Some("a registered variable's name is a Python identifier".into()),
                    ));
                }
                Ok((name, v.to_json()))
            })
            .collect()
    }
}

fn is_identifier(name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
        "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
        "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
        "try", "while", "with", "yield",
    ];
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name)
}

/// Where an `args:` template travels in a task's arguments until the task runs.
pub const VARIABLE_PARAMS: &str = "_variable_params";

#[cfg(test)]
#[path = "task_tests.rs"]
mod tests;
