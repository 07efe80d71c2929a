//! One task: its keywords (loops, conditions, handlers, run keywords) and its action.

use super::action::{ActionArgs, module_list};
use super::keyword_table::{At, Places, Taken};
use super::loader::{Inherited, Loader, dedup_in_order};
use super::loops::BreakWhen;
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
                "register" => register = Some(self.scalar(v, "register")?),
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
                    if !LOOP_LOOKUPS.contains(&lookup) {
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
                    Taken::No => match self.find_module(key, inherited) {
                        Some(module) => {
                            let args = ActionArgs::Node(v);
                            self.set_action(&mut action, key.to_string(), module, args, k.span)?
                        }
                        None => return Err(self.unknown_action(key, k.span)),
                    },
                },
            }
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
            ActionArgs::Pairs(pairs) => arg_keys.extend(pairs.iter().map(|(k, _)| k)),
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
        Ok(Task {
            name,
            action: written,
            module,
            args,
            loop_spec: loop_spec.map(|(spec, _)| spec),
            loop_var,
            loop_control,
            when: when_all,
            register,
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
            "no_log" => match self.switch(v, key)? {
                Ok(fixed) => {
                    into.no_log = fixed;
                    into.templated.no_log = None;
                }
                Err(template) => into.templated.no_log = Some(template),
            },
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
                    control.break_when = Some(match self.conditions(v, key) {
                        Ok(conditions) => BreakWhen::Conditions(conditions),
                        Err(_) => BreakWhen::NotStrings,
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
mod tests {
    use super::super::*;
    use crate::playbook::TemplatedSwitches;
    use crate::playbook::test_support::text::*;
    use crate::template::Templar;
    use serde_json::{Value as Json, json};

    #[test]
    fn task_keywords() {
        let t = task(
            "
name: Many
ansible.builtin.copy:
  content: x
  dest: /tmp/{{ item }}
  mode: 0644
with_items:
  - [1, 2]
  - 3
when:
  - a == 1
  - true
register: out
ignore_errors: yes
vars:
  v: 1
loop_control:
  loop_var: f
  label: '{{ f }}'
tags: [x]
notify: restart
changed_when: false
",
        );
        assert_eq!(t.action, "ansible.builtin.copy");
        assert_eq!(t.display_name(), "Many");
        assert_eq!(t.args["mode"], json!(420));
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Items {
                value: json!([[1, 2], 3]),
                flatten: true
            })
        );
        assert_eq!(t.loop_var, "f");
        assert_eq!(t.when, ["a == 1", "True"]);
        assert_eq!(t.register.as_deref(), Some("out"));
        assert!(t.ignore_errors);
        assert_eq!(Json::Object(t.vars), json!({"v": 1}));
        assert!(t.unsupported.is_empty());
        assert_eq!(t.notify, ["restart"]);
        assert_eq!(t.changed_when, Some(vec!["False".to_string()]));
        assert_eq!(t.failed_when, None);
        assert_eq!(t.until, None);

        let t = task("file: path=/x state=absent\nloop: \"{{ things }}\"\nwhen: x");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Items {
                value: json!("{{ things }}"),
                flatten: false
            })
        );
        assert_eq!(t.when, ["x"]);
        assert_eq!(t.display_name(), "file");
    }

    #[test]
    fn control_keywords() {
        let t = task(
            "
command: /bin/true
register: r
changed_when:
  - r.rc == 0
  - \"'x' in r.stdout\"
failed_when: r.rc > 1
until: r is succeeded
retries: 5
delay: '{{ wait }}'
",
        );
        assert_eq!(
            t.changed_when,
            Some(vec!["r.rc == 0".to_string(), "'x' in r.stdout".to_string()])
        );
        assert_eq!(t.failed_when, Some(vec!["r.rc > 1".to_string()]));
        assert_eq!(
            t.until,
            Some(Until {
                conditions: vec!["r is succeeded".into()],
                retries: Some(json!(5)),
                delay: Some(json!("{{ wait }}")),
            })
        );
        assert!(t.unsupported.is_empty());
        let t = task(
            "ping:
until: x
",
        );
        assert_eq!(
            t.until,
            Some(Until {
                conditions: vec!["x".into()],
                retries: None,
                delay: None,
            })
        );
        // Without `until`, retries and delay mean nothing (as in Ansible).
        assert_eq!(
            task(
                "ping:
retries: 2
"
            )
            .until,
            None
        );
        assert_eq!(
            task(
                "ping:
failed_when: false
"
            )
            .failed_when,
            Some(vec!["False".to_string()])
        );
    }

    #[test]
    fn control_keyword_errors() {
        let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
        assert_eq!(
            message_at(&play("    - ping:\n      failed_when: {rc: 1}\n")),
            (
                "failed_when must be a condition or a list of conditions, got a mapping".into(),
                4,
                20
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      until: [[a]]\n")),
            (
                "until must be a condition or a list of conditions, got a list".into(),
                4,
                15
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      until: x\n      retries: many\n")),
            (
                "retries must be a non-negative integer, got 'many'".into(),
                5,
                16
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      until: x\n      delay: -1\n")),
            (
                "delay must be a non-negative number of seconds, got '-1'".into(),
                5,
                14
            )
        );
    }

    #[test]
    fn handlers_and_meta() {
        let pb = ok("
- hosts: all
  force_handlers: yes
  tasks:
    - command: x
      notify: [restart web, web changed]
    - meta: flush_handlers
  handlers:
    - name: restart web
      command: restart
    - name: reload
      command: reload
      listen:
        - web changed
      notify: restart web
");
        let play = &pb.plays[0];
        assert!(play.force_handlers);
        assert_eq!(play.tasks[0].notify, ["restart web", "web changed"]);
        assert_eq!(play.tasks[1].module.name(), "meta");
        assert_eq!(play.tasks[1].args["_raw_params"], json!("flush_handlers"));
        assert_eq!(play.handlers.len(), 2);
        assert_eq!(play.handlers[1].listen, ["web changed"]);
        assert_eq!(play.handlers[1].notify, ["restart web"]);
        // A templated name is only known at run time.
        ok("- hosts: all\n  tasks:\n    - ping:\n      notify: '{{ h }}'\n");
    }

    #[test]
    fn with_sequence_forms() {
        let t = task("debug: msg={{ item }}\nwith_sequence: start=1 end=5 format=%02d");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Sequence("start=1 end=5 format=%02d".into()))
        );
        let t = task("debug: msg={{ item }}\nwith_sequence:\n  start: 1\n  end: 3");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Sequence("start=1 end=3".into()))
        );
    }

    #[test]
    fn with_lookup_forms() {
        let t = task("debug: msg={{ item.key }}\nwith_dict: \"{{ users }}\"");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Lookup {
                name: "dict".into(),
                terms: Json::from("{{ users }}"),
            })
        );
        let t = task("debug: msg={{ item }}\nwith_fileglob: ['a/*', 'b/*']");
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Lookup {
                name: "fileglob".into(),
                terms: serde_json::json!(["a/*", "b/*"]),
            })
        );
        for (key, how) in [
            ("with_nested", Combinator::Nested),
            ("with_cartesian", Combinator::Nested),
            ("with_together", Combinator::Together),
            ("with_subelements", Combinator::Subelements),
            ("with_indexed_items", Combinator::IndexedItems),
        ] {
            let t = task(&format!("debug: msg=x\n{key}: [[1], [2]]"));
            assert_eq!(
                t.loop_spec,
                Some(LoopSpec::Combine {
                    how,
                    terms: serde_json::json!([[1], [2]]),
                }),
                "{key}"
            );
        }
        assert_eq!(
            message_at("- hosts: all\n  tasks:\n    - debug: msg=x\n      with_dcit: {}\n"),
            (
                "lookup plugin 'dcit' for 'with_dcit' is not supported".into(),
                4,
                7
            )
        );
        assert_eq!(
            message_at(
                "- hosts: all\n  tasks:\n    - debug: msg=x\n      with_dict: {}\n      loop: []\n"
            )
            .0,
            "only one loop keyword per task: 'with_dict' and 'loop' both given"
        );
    }

    #[test]
    fn no_log_and_ignore_errors_may_be_templates_decided_per_host() {
        let t = task(
            "command: x\nno_log: \"{{ 'false' if quiet is undefined else 'true' }}\"\nignore_errors: \"{{ lenient | bool }}\"",
        );
        assert_eq!(
            t.keywords.templated,
            TemplatedSwitches {
                no_log: Some("{{ 'false' if quiet is undefined else 'true' }}".into()),
                ignore_errors: Some("{{ lenient | bool }}".into()),
                ..TemplatedSwitches::default()
            }
        );
        let templar = Templar::new();
        let vars = minijinja::Value::from_serialize(serde_json::json!({"lenient": "yes"}));
        let decided = t.with_switches_decided(&templar, &vars).unwrap().unwrap();
        assert!(!decided.keywords.no_log && decided.ignore_errors);
        assert!(decided.keywords.templated.is_empty());
        let vars =
            minijinja::Value::from_serialize(serde_json::json!({"lenient": false, "quiet": 1}));
        let decided = t.with_switches_decided(&templar, &vars).unwrap().unwrap();
        assert!(decided.keywords.no_log && !decided.ignore_errors);
        // A fixed value on the task wins over a block's template.
        let pb = ok(
            "- hosts: all\n  tasks:\n    - block:\n        - command: x\n          ignore_errors: no\n      ignore_errors: \"{{ x }}\"\n",
        );
        let t = &pb.plays[0].tasks[0];
        assert!(t.keywords.templated.is_empty() && !t.ignore_errors);
        assert!(t.with_switches_decided(&templar, &vars).unwrap().is_none());
        // ansible-playbook 2.21: a template rendering to '' or 2 is no boolean; to None, the
        // default.
        let switch = |template: &str| {
            let t = task(&format!("command: x\nignore_errors: \"{template}\""));
            t.with_switches_decided(&templar, &vars)
                .map(|d| d.unwrap().ignore_errors)
        };
        assert_eq!(
            switch("{{ '' }}").unwrap_err(),
            "Task failed: Error processing keyword 'ignore_errors': The value '' could not be converted to 'bool'."
        );
        assert_eq!(
            switch("{{ 2 }}").unwrap_err(),
            "Task failed: Error processing keyword 'ignore_errors': The value 2 could not be converted to 'bool'."
        );
        assert_eq!(switch("{{ none }}"), Ok(false));
        assert_eq!(switch("{{ ' T ' }}"), Ok(true));
        // So is a string that is no boolean, as Ansible checks it when the task runs; so
        // are check_mode and diff, which keep the inherited value for a None.
        let t = task("command: x\nno_log: maybe\ndiff: yes.\ncheck_mode: \"{{ none }}\"");
        assert_eq!(
            t.with_switches_decided(&templar, &vars).unwrap_err(),
            "Task failed: Error processing keyword 'no_log': The value 'maybe' could not be converted to 'bool'."
        );
        let t = task("command: x\ndiff: yes.");
        assert_eq!(
            t.with_switches_decided(&templar, &vars).unwrap_err(),
            "Task failed: Error processing keyword 'diff': The value 'yes.' could not be converted to 'bool'."
        );
        let pb = ok(
            "- hosts: all\n  check_mode: true\n  tasks:\n    - command: x\n      check_mode: \"{{ none }}\"\n      diff: \"{{ flag }}\"\n",
        );
        let vars = minijinja::Value::from_serialize(serde_json::json!({"flag": "no"}));
        let decided = pb.plays[0].tasks[0]
            .with_switches_decided(&templar, &vars)
            .unwrap()
            .unwrap();
        assert_eq!(
            (decided.check_mode, decided.diff),
            (Some(true), Some(false))
        );
    }

    #[test]
    fn run_keywords_on_tasks_blocks_and_plays() {
        let t = task(
            "command: x\nrun_once: true\ndelegate_to: \"{{ other }}\"\ndelegate_facts: yes\nno_log: true\nthrottle: 2\nenvironment:\n  A: \"{{ a }}\"",
        );
        assert_eq!(
            t.keywords,
            RunKeywords {
                run_once: true,
                delegate_to: Some("{{ other }}".into()),
                delegate_facts: true,
                environment: vec![serde_json::json!({"A": "{{ a }}"})],
                no_log: true,
                throttle: Some(2),
                any_errors_fatal: None,
                ignore_unreachable: false,
                templated: Default::default(),
                ..Default::default()
            }
        );
        let pb = ok(
            "- hosts: all\n  environment: {P: 1}\n  tasks:\n    - block:\n        - command: x\n          environment: {T: 3}\n      environment: \"{{ block_env }}\"\n      run_once: true\n      no_log: true\n",
        );
        let play = &pb.plays[0];
        assert_eq!(play.environment, Some(serde_json::json!({"P": 1})));
        let t = &play.tasks[0];
        assert!(t.keywords.run_once && t.keywords.no_log);
        assert_eq!(
            t.keywords.environment,
            [
                serde_json::json!("{{ block_env }}"),
                serde_json::json!({"T": 3})
            ]
        );
        assert!(play.unsupported.is_empty());
        assert_eq!(
            message_at("- hosts: all\n  tasks:\n    - command: x\n      environment: 3\n").0,
            "environment must be a mapping, got an integer"
        );
    }

    #[test]
    fn loop_control_fields() {
        let t = task(
            "debug: msg=x\nloop: [1]\nloop_control:\n  loop_var: f\n  index_var: i\n  label: \"{{ f }}\"\n  extended: true\n  extended_allitems: false\n  pause: 0.5",
        );
        assert_eq!(t.loop_var, "f");
        assert_eq!(
            t.loop_control,
            LoopControl {
                label: Some("{{ f }}".into()),
                index_var: Some("i".into()),
                extended: true,
                extended_allitems: false,
                pause: Some(Json::from(0.5)),
                break_when: None,
                problem: None,
            }
        );
        let t = task("debug: msg=x\nloop: [1]\nloop_control:\n  break_when: item > 0");
        assert!(t.unsupported.is_empty());
        assert_eq!(
            t.loop_control.break_when,
            Some(BreakWhen::Conditions(vec!["item > 0".into()]))
        );
        let t = task("debug: msg=x\nloop: [1]\nloop_control:\n  break_when: {a: b}");
        assert_eq!(t.loop_control.break_when, Some(BreakWhen::NotStrings));
        let t = task("debug: msg=x\nloop: [1]\nloop_control:\n  pause: \"{{ p }}\"");
        assert_eq!(t.loop_control.pause, Some(Json::from("{{ p }}")));
        assert!(t.loop_control.extended_allitems);
        // Ansible refuses these when the loop runs, not at load: the task fails then.
        let problem = |control: &str| {
            task(&format!(
                "debug: msg=x\nloop: [1]\nloop_control:\n{control}"
            ))
            .loop_control
            .problem
            .unwrap_or_default()
        };
        assert_eq!(
            problem("  pause: soon"),
            "Error processing keyword 'pause': The value 'soon' could not be converted to 'float'."
        );
        assert_eq!(
            problem("  extended: maybe\n  loop_var: '0'"),
            "Error processing keyword 'extended': The value 'maybe' could not be converted to 'bool'."
        );
        assert_eq!(
            problem("  loop_var: '0'"),
            "Invalid 'loop_var': Invalid variable name '0'."
        );
        assert_eq!(
            problem("  index_var: class"),
            "Invalid 'index_var': Invalid variable name 'class'."
        );
        assert_eq!(problem("  loop_var: _x1\n  index_var: i"), "");
    }

    #[test]
    fn task_errors() {
        let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
        assert_eq!(
            message_at(&play("    - cpy:\n        dest: /x\n")),
            (
                "couldn't resolve module/action 'cpy'. Did you mean 'copy'?".into(),
                3,
                7
            )
        );
        assert_eq!(
            message_at(&play("    - debug: msg=x\n      whn: x\n")),
            (
                "couldn't resolve module/action 'whn'. Did you mean 'when'?".into(),
                4,
                7
            )
        );
        let e = err(&play("    - frobnicate: x\n"));
        assert_eq!(e.message, "couldn't resolve module/action 'frobnicate'");
        let help = e.help.unwrap();
        assert!(
            ["command, copy, ", "debug, "]
                .iter()
                .all(|n| help.contains(n)),
            "{help}"
        );
        assert_eq!(
            message_at(&play(
                "    - copy: content=x dest=/x\n      file: path=/x\n"
            )),
            ("conflicting action statements: copy, file".into(), 4, 7)
        );
        assert_eq!(
            message_at(&play("    - name: nothing\n")),
            ("no module/action detected in task.".into(), 3, 7)
        );
        assert_eq!(
            message_at(&play("    - rescue:\n        - ping:\n")),
            ("'rescue' needs a `block:` beside it".into(), 3, 7)
        );
        assert_eq!(
            message_at(&play("    - import_tasks: x.yml\n")),
            ("could not find or access 'x.yml'".into(), 3, 21)
        );
        assert_eq!(
            message_at(&play(
                "    - ping:\n      loop: [1]\n      with_items: [2]\n"
            )),
            (
                "only one loop keyword per task: 'loop' and 'with_items' both given".into(),
                5,
                7
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      ignore_errors: [sometimes]\n")),
            ("ignore_errors must be a boolean, got a list".into(), 4, 22)
        );
        assert_eq!(
            message_at(&play(
                "    - ping:\n      loop_control:\n        loop_vr: x\n"
            )),
            (
                "'loop_vr' is not a valid attribute for a LoopControl".into(),
                5,
                9
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      when: {a: 1}\n")),
            (
                "when must be a condition or a list of conditions, got a mapping".into(),
                4,
                13
            )
        );
    }
}
