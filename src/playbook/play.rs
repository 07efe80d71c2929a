//! A play: its keywords, its task sections and roles, and the checks that need the whole
//! play (every `notify` names a handler).

use super::keyword_table::{At, Places, Taken, names_at};
use super::loader::{Inherited, Loader, dedup_in_order};
use super::{BatchSize, HostOrder, Play, PlayKeywords, Task, ValidateArgspec};
use crate::modules::{self, closest};
use crate::yaml::{LoadError, Node, Source, Span, Value};

const AT_PLAY: At = At {
    place: Places::PLAY,
    label: "a Play",
};

impl Loader<'_> {
    pub(super) fn play(&self, node: &Node) -> Result<Play, LoadError> {
        let Some(entries) = node.as_map() else {
            return Err(self.err(
                node.span,
                format!("a play must be a mapping, got {}", node.kind_name()),
                Some("a play looks like `- hosts: all` followed by `tasks:`".into()),
            ));
        };
        let mut name = None;
        let mut hosts = None;
        let mut vars = serde_json::Map::new();
        let mut vars_files = Vec::new();
        let mut vars_prompt = Vec::new();
        let mut gather_facts = None;
        let mut gather_subset = Vec::new();
        let mut fact_path = None;
        let (mut connection, mut remote_user, mut port) = (None, None, None);
        let mut unsupported = Vec::new();
        // pre_tasks, tasks, post_tasks, handlers, roles: read once every keyword the
        // tasks take on is known, wherever it is written in the play.
        let mut sections: [Option<&Node>; 5] = [None; 5];
        let mut force_handlers = false;
        let mut tags = Vec::new();
        let mut check_mode = None;
        let mut diff = None;
        let mut host_patterns = Vec::new();
        let mut environment = None;
        let mut keywords = PlayKeywords::default();
        let mut strategy_written = false;
        // What every task of the play takes on.
        let mut top = Inherited::default();
        let mut templated_keywords = Vec::new();
        let mut validate_argspec = ValidateArgspec::Off;
        let mut user = None;
        for (k, v) in entries {
            let key = self.key(k)?;
            // Play keywords written as templates are rendered with the play's variables
            // before the play runs (`render_templated_play_keywords`), as Ansible does.
            if matches!(
                key,
                "strategy"
                    | "order"
                    | "gather_facts"
                    | "serial"
                    | "name"
                    | "validate_argspec"
                    | "hosts"
            ) && let Some(text) = v.as_str()
                && crate::template::is_template(text)
            {
                strategy_written |= key == "strategy";
                templated_keywords.push(super::TemplatedKeyword {
                    key: key.to_string(),
                    template: text.to_string(),
                    location: self.location(v.span),
                });
                // Until it is rendered (never, under --syntax-check), the name as written.
                if key == "name" {
                    name = Some(text.to_string());
                }
                if key == "hosts" {
                    hosts = Some(text.to_string());
                    host_patterns = vec![text.to_string()];
                }
                continue;
            }
            match key {
                "roles" => sections[4] = Some(v),
                "name" => name = Some(self.scalar(v, "name")?),
                "hosts" => {
                    hosts = Some(self.hosts(v)?);
                    host_patterns = match &v.value {
                        Value::Seq(items) => items
                            .iter()
                            .map(|i| i.scalar_to_string().unwrap_or_default())
                            .collect(),
                        _ => vec![v.scalar_to_string().unwrap_or_default()],
                    };
                }
                "tags" => tags = self.tags(v)?,
                "collections" => top.collections = self.string_list(v, key)?,
                "check_mode" => check_mode = Some(self.boolean(v, key)?),
                "diff" => diff = Some(self.boolean(v, key)?),
                "vars" => vars = self.mapping(v, "vars")?,
                "vars_files" => vars_files = self.vars_files(v)?,
                "vars_prompt" => vars_prompt = self.vars_prompt(v)?,
                "ignore_errors" => top.ignore_errors = Some(self.boolean(v, key)?),
                "gather_facts" => gather_facts = Some(self.boolean(v, "gather_facts")?),
                "gather_subset" => gather_subset = self.string_list(v, "gather_subset")?,
                "fact_path" => fact_path = Some(self.scalar(v, "fact_path")?),
                "pre_tasks" => sections[0] = Some(v),
                "tasks" => sections[1] = Some(v),
                "post_tasks" => sections[2] = Some(v),
                "handlers" => sections[3] = Some(v),
                "force_handlers" => force_handlers = self.boolean(v, key)?,
                "connection" => connection = Some(self.scalar(v, "connection")?),
                "remote_user" => remote_user = Some(self.scalar(v, "remote_user")?),
                // The play's old spelling of remote_user, still accepted alone.
                "user" => user = Some(self.scalar(v, "user")?),
                "port" => port = Some(self.port(v)?),
                "environment" => environment = self.environment(v)?,
                "any_errors_fatal" => keywords.any_errors_fatal = self.boolean(v, key)?,
                "max_fail_percentage" => {
                    keywords.max_fail_percentage = Some(self.percentage(v)?);
                }
                "serial" => keywords.serial = self.serial(v)?,
                "strategy" => {
                    strategy_written = true;
                    keywords.free = match self.scalar(v, key)?.as_str() {
                        "linear" | "ansible.builtin.linear" | "debug" => false,
                        "free"
                        | "ansible.builtin.free"
                        | "host_pinned"
                        | "ansible.builtin.host_pinned" => true,
                        other => {
                            return Err(self.err(
                                v.span,
                                format!("Invalid play strategy specified: {other}"),
                                Some("use `linear` or `free`".into()),
                            ));
                        }
                    }
                }
                "validate_argspec" => {
                    validate_argspec = match &v.value {
                        Value::Bool(false) | Value::Null => ValidateArgspec::Off,
                        Value::Bool(true) => ValidateArgspec::PlayName,
                        Value::Str(s) => ValidateArgspec::Named(s.to_string()),
                        _ => {
                            return Err(self.err(
                                v.span,
                                format!(
                                    "validate_argspec must be a boolean or string, not {}",
                                    v.kind_name()
                                ),
                                Some("write `validate_argspec: true` or the spec's name".into()),
                            ));
                        }
                    }
                }
                "order" => {
                    let text = self.scalar(v, key)?;
                    keywords.order = HostOrder::parse(&text).ok_or_else(|| {
                        self.err(
                            v.span,
                            format!("invalid play host order '{text}'"),
                            Some(format!("use one of: {}", HostOrder::NAMES.join(", "))),
                        )
                    })?;
                }
                _ if self.table_keyword(&AT_PLAY, k, v, &mut top.keywords, &mut unsupported)?
                    == Taken::Yes => {}
                _ => {
                    let help = closest(key, names_at(Places::PLAY))
                        .map(|s| format!("did you mean '{s}'?"))
                        .or_else(|| {
                            (modules::find(key).is_some()).then(|| {
                                format!("'{key}' is a module: put it in a task under `tasks:`")
                            })
                        });
                    return Err(self.err(
                        k.span,
                        format!("'{key}' is not a valid attribute for a Play"),
                        help,
                    ));
                }
            }
        }
        if remote_user.is_some() && user.is_some() {
            return Err(self.err(
                node.span,
                "both 'user' and 'remote_user' are set for this play. The use of 'user' is deprecated, and should be removed",
                Some("keep `remote_user` only".into()),
            ));
        }
        let remote_user = remote_user.or(user);
        let hosts = hosts.ok_or_else(|| {
            self.err(
                node.span,
                "the field 'hosts' is required but was not set",
                Some("add `hosts: all` (or a group or host pattern) to the play".into()),
            )
        })?;
        self.shared.start_play();
        let [pre, main, post, own_handlers, roles] = sections;
        let pre = self.section(pre, "pre_tasks", &top)?;
        // The play's run keywords (become, no_log, timeout, module_defaults...) are its
        // roles' too, as the tasks'; its `collections` are not.
        let around_roles = Inherited {
            keywords: top.keywords.clone(),
            ..Inherited::default()
        };
        let roles = match roles {
            Some(v) => self.play_roles(v, &around_roles)?,
            None => Vec::new(),
        };
        let main = self.section(main, "tasks", &top)?;
        let post = self.section(post, "post_tasks", &top)?;
        let as_handlers = Inherited {
            handler: true,
            keywords: top.keywords.clone(),
            ..Inherited::default()
        };
        let handlers = self.section(own_handlers, "handlers", &as_handlers)?;
        self.check_unresolved_defaults()?;
        // Ansible runs roles after pre_tasks and before tasks, and flushes handlers after
        // pre_tasks and after tasks (post_tasks' notifications run at the play's end).
        // A flush with nothing before it (or nothing after) changes nothing: left out.
        let location = self.location(node.span);
        let flush_after_pre = (!pre.is_empty()).then(|| Task::implicit_flush(location.clone()));
        let flush_before_post = (!post.is_empty()).then(|| Task::implicit_flush(location));
        let mut tasks: Vec<Task> = pre
            .into_iter()
            .chain(flush_after_pre)
            .chain(roles)
            .chain(main)
            .chain(flush_before_post)
            .chain(post)
            .collect();
        let mut handlers = self.shared.play_handlers(handlers);
        // Play keywords may follow `tasks:` in the mapping, so they are handed down last.
        for task in &mut tasks {
            task.tags.splice(0..0, tags.iter().cloned());
            dedup_in_order(&mut task.tags);
            task.check_mode = task.check_mode.or(check_mode);
            task.diff = task.diff.or(diff);
        }
        for handler in &mut handlers {
            handler.check_mode = handler.check_mode.or(check_mode);
            handler.diff = handler.diff.or(diff);
        }
        // ansible.cfg's `strategy` for a play that names none; one Ansible does not know
        // fails when the play starts, as a templated one does.
        if !strategy_written && let Some(strategy) = &self.shared.default_strategy {
            match strategy.as_str() {
                "linear" | "ansible.builtin.linear" | "debug" | "ansible.builtin.debug" => {}
                "free" | "ansible.builtin.free" | "host_pinned" | "ansible.builtin.host_pinned" => {
                    keywords.free = true;
                }
                other => templated_keywords.push(super::TemplatedKeyword {
                    key: "strategy".into(),
                    template: other.to_string(),
                    location: self.location(node.span),
                }),
            }
        }
        let play = Play {
            check_mode,
            templated_keywords,
            ran_roles: self.shared.ran_roles(),
            roles: self.shared.public_roles(),
            named: name.is_some(),
            name: name.unwrap_or_else(|| hosts.clone()),
            validate_argspec,
            argspec: None,
            hosts,
            host_patterns,
            tags,
            vars,
            vars_files,
            vars_prompt,
            unsafe_vars: Default::default(),
            gather_facts,
            gather_subset,
            fact_path,
            module_defaults: top.keywords.module_defaults.clone(),
            tasks,
            handlers,
            force_handlers,
            connection,
            remote_user,
            port,
            environment,
            keywords,
            unsupported,
            location: self.location(node.span),
        };
        self.check_notify(&play)?;
        Ok(play)
    }

    fn section(
        &self,
        node: Option<&Node>,
        name: &str,
        inherited: &Inherited,
    ) -> Result<Vec<Task>, LoadError> {
        match node {
            Some(node) => self.tasks(node, name, inherited),
            None => Ok(Vec::new()),
        }
    }

    /// `vars_files`: a list whose items are paths, or lists of paths of which the first
    /// that exists is read; a lone path is a list of one, as Ansible takes it.
    /// `vars_prompt`: a list of `{name, prompt, default, private, ...}`.
    pub(super) fn vars_prompt(&self, node: &Node) -> Result<Vec<super::VarsPrompt>, LoadError> {
        if matches!(node.value, Value::Null) {
            return Ok(Vec::new());
        }
        let Some(items) = node.as_seq() else {
            return Err(self.err(
                node.span,
                format!("vars_prompt must be a list, got {}", node.kind_name()),
                Some("write `vars_prompt: [{name: x, prompt: \"X?\", default: y}]`".into()),
            ));
        };
        items
            .iter()
            .map(|item| {
                let name = item.get("name").and_then(Node::as_str).ok_or_else(|| {
                    self.err(
                        item.span,
                        "Invalid vars_prompt data structure, missing 'name' key",
                        Some("write `- name: x` with an optional `default:`".into()),
                    )
                })?;
                const KEYS: &[&str] = &[
                    "name",
                    "prompt",
                    "default",
                    "private",
                    "confirm",
                    "encrypt",
                    "salt_size",
                    "salt",
                    "unsafe",
                ];
                for (key, _) in item.as_map().unwrap_or_default() {
                    let key = key.as_str().unwrap_or_default();
                    if !KEYS.contains(&key) {
                        return Err(self.err(
                            item.span,
                            format!(
                                "Invalid vars_prompt data structure, found unsupported key '{key}'"
                            ),
                            Some(format!("vars_prompt entries take: {}", KEYS.join(", "))),
                        ));
                    }
                }
                let text = |key: &str| item.get(key).and_then(Node::as_str).map(str::to_string);
                let flag = |key: &str, default: bool| -> Result<bool, LoadError> {
                    item.get(key).map_or(Ok(default), |v| self.boolean(v, key))
                };
                Ok(super::VarsPrompt {
                    name: name.to_string(),
                    prompt: text("prompt"),
                    default: item.get("default").map(Node::to_json),
                    private: flag("private", true)?,
                    confirm: flag("confirm", false)?,
                    encrypt: text("encrypt"),
                    salt: text("salt"),
                    salt_size: item.get("salt_size").and_then(|n| n.to_json().as_u64()),
                    unsafe_: flag("unsafe", false)?,
                })
            })
            .collect()
    }

    pub(super) fn vars_files(&self, node: &Node) -> Result<Vec<Vec<String>>, LoadError> {
        let path = |n: &Node| self.scalar(n, "vars_files");
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Seq(items) => items
                .iter()
                .map(|item| match &item.value {
                    Value::Seq(alternatives) => alternatives.iter().map(path).collect(),
                    _ => Ok(vec![path(item)?]),
                })
                .collect(),
            _ => Ok(vec![vec![path(node)?]]),
        }
    }

    pub(super) fn hosts(&self, node: &Node) -> Result<String, LoadError> {
        match &node.value {
            Value::Seq(items) if items.is_empty() => Err(self.err(
                node.span,
                "Hosts list cannot be empty. Please check your playbook",
                Some("use `hosts: all`, a group name, or a host pattern".into()),
            )),
            Value::Seq(items) => Ok(items
                .iter()
                .map(|i| self.scalar(i, "hosts"))
                .collect::<Result<Vec<_>, _>>()?
                .join(",")),
            Value::Null => Err(self.err(
                node.span,
                "hosts must not be empty",
                Some("use `hosts: all`, a group name, or a host pattern".into()),
            )),
            _ => self.scalar(node, "hosts"),
        }
    }

    /// Every `notify` must name a handler or a `listen` topic of the play (templated
    /// names are checked when they are known, at run time).
    pub(super) fn check_notify(&self, play: &Play) -> Result<(), LoadError> {
        let known = |name: &str| play.handlers.iter().any(|h| h.answers_to(name));
        for task in play.tasks.iter().chain(&play.handlers) {
            for name in &task.notify {
                if !crate::template::is_template(name) && !known(name) {
                    // A role's or an imported file's task: quote its own file.
                    let other = (*task.location.file != *self.file)
                        .then(|| Source::read(&task.location.file).ok())
                        .flatten();
                    return Err(other.as_ref().unwrap_or(self.source).error(
                        Some(Span {
                            line: task.location.line,
                            column: task.location.column,
                        }),
                        format!(
                            "The requested handler '{name}' was not found in either the main handlers list nor in the listening handlers list"
                        ),
                        Some("add a handler with this `name:` (or `listen:`) under the play's `handlers:`".into()),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `max_fail_percentage`: a number from 0 to 100.
    pub(super) fn percentage(&self, node: &Node) -> Result<f64, LoadError> {
        let value = match &node.value {
            Value::Int(n) => Some(*n as f64),
            Value::Float(f) => Some(*f),
            Value::Str(s) => s.trim().trim_end_matches('%').parse().ok(),
            _ => None,
        };
        value.filter(|p| (0.0..=100.0).contains(p)).ok_or_else(|| {
            self.err(
                node.span,
                "max_fail_percentage must be a number from 0 to 100",
                Some("write e.g. `max_fail_percentage: 30`".into()),
            )
        })
    }

    /// `serial`: a count, a percentage, or a list of them (the last repeats).
    pub(super) fn serial(&self, node: &Node) -> Result<Vec<BatchSize>, LoadError> {
        let one = |n: &Node| -> Result<BatchSize, LoadError> {
            n.scalar_to_string()
                .and_then(|s| BatchSize::parse(&s))
                .ok_or_else(|| {
                    self.err(
                        n.span,
                        "serial must be a number of hosts or a percentage",
                        Some("write e.g. `serial: 2`, `serial: \"30%\"` or `serial: [1, 5, \"50%\"]`".into()),
                    )
                })
        };
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Seq(items) => items.iter().map(one).collect(),
            _ => Ok(vec![one(node)?]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::playbook::test_support::text::*;
    use serde_json::{Value as Json, json};
    use std::path::Path;

    #[test]
    fn loads_the_file_creation_playbook() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("playbooks/file_creation.yml");
        let pb = load_playbook(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pb.dir, path.parent().unwrap());
        assert_eq!(pb.plays.len(), 1);
        let play = &pb.plays[0];
        assert_eq!(play.name, "all");
        assert_eq!(play.hosts, "all");
        assert_eq!(play.gather_facts, Some(false));
        assert_eq!(play.location.line, 1);
        let t = &play.tasks[0];
        assert_eq!(t.display_name(), "Create files with copy content module");
        assert_eq!(t.action, "copy");
        assert_eq!(t.module.name(), "copy");
        assert_eq!(
            Json::Object(t.args.clone()),
            json!({"content": "test file {{ item }}\n", "dest": "~/file_{{ item }}"})
        );
        assert_eq!(
            t.loop_spec,
            Some(LoopSpec::Sequence("start=1 end={{ n }}".into()))
        );
        assert_eq!(t.loop_var, "item");
        assert!(t.when.is_empty() && t.unsupported.is_empty());
        assert_eq!((t.location.line, t.location.column), (4, 7));
        assert!(t.location.to_string().ends_with("file_creation.yml:4:7"));
    }

    #[test]
    fn play_fields() {
        let pb = ok("
- name: Web
  hosts: [web, db]
  gather_facts: no
  become: yes
  vars:
    port: 80
    list: [1, 2]
  pre_tasks:
    - ping:
  tasks:
    - debug: msg=main
  post_tasks:
    - debug:
        msg: post
  handlers:
    - name: h
      debug:
- hosts: all
");
        let play = &pb.plays[0];
        assert_eq!(play.name, "Web");
        assert_eq!(play.hosts, "web,db");
        assert_eq!(play.gather_facts, Some(false));
        assert_eq!(
            Json::Object(play.vars.clone()),
            json!({"port": 80, "list": [1, 2]})
        );
        let written: Vec<_> = play.tasks.iter().filter(|t| !t.implicit).collect();
        let actions: Vec<_> = written.iter().map(|t| t.display_name()).collect();
        assert_eq!(actions, ["ping", "debug", "debug"]);
        assert_eq!(
            Json::Object(written[1].args.clone()),
            json!({"msg": "main"})
        );
        // Handlers are flushed after pre_tasks, as Ansible does, by a task of its own.
        assert!(play.tasks.iter().any(|t| t.implicit));
        assert_eq!(pb.plays[1].gather_facts, None);
        assert!(pb.plays[1].gather_subset.is_empty());
        assert!(pb.plays[1].tasks.is_empty());
        assert!(ok("").plays.is_empty());
    }

    #[test]
    fn gather_subset_is_a_list_or_a_comma_separated_string() {
        let pb = ok("
- hosts: all
  gather_subset: [min, network]
- hosts: all
  gather_subset: '!all, !min,hardware'
");
        assert_eq!(pb.plays[0].gather_subset, ["min", "network"]);
        assert_eq!(pb.plays[1].gather_subset, ["!all", "!min", "hardware"]);
    }

    #[test]
    fn vars_files_forms() {
        let pb = ok("
- hosts: all
  vars_files:
    - common.yml
    - ['{{ os }}.yml', default.yml]
- hosts: all
  vars_files: one.yml
- hosts: all
  vars_files:
");
        assert_eq!(
            pb.plays[0].vars_files,
            [
                vec!["common.yml".to_string()],
                vec!["{{ os }}.yml".to_string(), "default.yml".to_string()]
            ]
        );
        assert_eq!(pb.plays[1].vars_files, [vec!["one.yml".to_string()]]);
        assert!(pb.plays[2].vars_files.is_empty());
        assert!(pb.plays[0].unsupported.is_empty());
        assert_eq!(
            message_at("- hosts: all\n  vars_files:\n    - {a: 1}\n"),
            ("vars_files must be a string, got a mapping".into(), 3, 7)
        );
    }

    #[test]
    fn play_run_keywords() {
        let pb = ok(
            "- hosts: all\n  serial: [1, '30%']\n  order: reverse_sorted\n  any_errors_fatal: true\n  max_fail_percentage: 25\n  tasks: []\n",
        );
        let play = &pb.plays[0];
        assert_eq!(
            play.keywords,
            PlayKeywords {
                serial: vec![BatchSize::Hosts(1), BatchSize::Percent(30.0)],
                order: HostOrder::ReverseSorted,
                any_errors_fatal: true,
                max_fail_percentage: Some(25.0),
                free: false,
            }
        );
        assert!(play.unsupported.is_empty());
        assert_eq!(
            ok("- hosts: all\n  serial: 2\n").plays[0].keywords.serial,
            [BatchSize::Hosts(2)]
        );
        assert_eq!(
            message_at("- hosts: all\n  order: random\n"),
            ("invalid play host order 'random'".into(), 2, 10)
        );
        assert_eq!(
            message_at("- hosts: all\n  serial: lots\n").0,
            "serial must be a number of hosts or a percentage"
        );
        assert_eq!(
            message_at("- hosts: all\n  max_fail_percentage: 120\n").0,
            "max_fail_percentage must be a number from 0 to 100"
        );
        assert!(
            ok("- hosts: all\n  strategy: free\n").plays[0]
                .keywords
                .free
        );
        assert_eq!(
            message_at("- hosts: all\n  strategy: fast\n").0,
            "Invalid play strategy specified: fast"
        );
        let t = task("ping:\nany_errors_fatal: false\nignore_unreachable: true");
        assert_eq!(t.keywords.any_errors_fatal, Some(false));
        assert!(t.keywords.ignore_unreachable);
    }

    #[test]
    fn play_errors() {
        assert_eq!(
            message_at("- hosts: all\n  taks: []\n"),
            ("'taks' is not a valid attribute for a Play".into(), 2, 3)
        );
        let e = err("- hosts: all\n  taks: []\n");
        assert_eq!(e.help.as_deref(), Some("did you mean 'tasks'?"));
        let text = e.to_string();
        assert!(
            text.starts_with("site.yml:2:3: 'taks' is not a valid attribute for a Play"),
            "{text}"
        );
        assert!(text.contains("2 |   taks: []"), "{text}");
        assert_eq!(
            message_at("- import_playbook: other.yml\n"),
            (
                "could not find the imported playbook 'other.yml'".into(),
                1,
                20
            )
        );
        assert_eq!(
            message_at("- name: x\n  tasks: []\n"),
            ("the field 'hosts' is required but was not set".into(), 1, 3)
        );
        assert_eq!(
            message_at("hosts: all\n"),
            (
                "a playbook must be a list of plays, got a mapping".into(),
                1,
                1
            )
        );
        assert_eq!(
            message_at("- hosts: all\n  gather_facts: maybe\n"),
            ("gather_facts must be a boolean, got 'maybe'".into(), 2, 17)
        );
        // Ansible's strict boolean(): "1.0" is refused (ansible-playbook 2.21), `t` taken.
        assert_eq!(
            message_at("- hosts: all\n  gather_facts: \"1.0\"\n"),
            ("gather_facts must be a boolean, got '1.0'".into(), 2, 17)
        );
        assert_eq!(
            ok("- hosts: all\n  gather_facts: F\n").plays[0].gather_facts,
            Some(false)
        );
        assert_eq!(
            message_at("- hosts: all\n  vars: [1]\n"),
            ("vars must be a mapping, got a list".into(), 2, 9)
        );
    }

    /// The play's malformed sections in Ansible's words (the playbook target's checks),
    /// and the nulls it accepts.
    #[test]
    fn malformed_plays_are_refused_in_ansibles_words() {
        let msg = |text: &str| err(text).message;
        assert_eq!(
            msg("[]\n"),
            "A playbook must contain at least one play: site.yml"
        );
        assert_eq!(
            msg("- hosts: []\n"),
            "Hosts list cannot be empty. Please check your playbook"
        );
        assert_eq!(
            msg("- hosts: all\n  tasks: 123\n"),
            "A malformed block was encountered while loading tasks: 123 should be a list or None but is <class 'int'>"
        );
        assert_eq!(
            msg("- hosts: all\n  post_tasks: 123\n"),
            "A malformed block was encountered while loading post_tasks: 123 should be a list or None but is <class 'int'>"
        );
        assert_eq!(
            msg("- hosts: all\n  roles: 123\n"),
            "A malformed role declaration was encountered: ds (123) should be a list but was a <class 'int'>"
        );
        assert_eq!(
            msg("- hosts: all\n  roles:\n    - foo,bar\n"),
            "Invalid old style role requirement: foo,bar"
        );
        assert_eq!(
            msg("- hosts: all\n  vars_prompt:\n    - foo: bar\n"),
            "Invalid vars_prompt data structure, missing 'name' key"
        );
        assert_eq!(
            msg("- hosts: all\n  vars_prompt:\n    - name: x\n      when: y\n"),
            "Invalid vars_prompt data structure, found unsupported key 'when'"
        );
        let prompted = ok(
            "- hosts: all\n  vars_prompt:\n    - name: x\n      private: no\n      confirm: yes\n      encrypt: sha512_crypt\n      unsafe: true\n",
        );
        // An empty task `name:` is no name (the unsafe prompt test's tasks have one).
        let unnamed = ok("- hosts: all\n  tasks:\n    - name:\n      debug: msg=x\n");
        assert_eq!(unnamed.plays[0].tasks[0].name, None);
        let x = &prompted.plays[0].vars_prompt[0];
        assert!(!x.private && x.confirm && x.unsafe_ && x.prompt.is_none());
        assert_eq!(x.encrypt.as_deref(), Some("sha512_crypt"));
        assert!(
            ok("- hosts: all\n  vars_prompt: null\n  roles: null\n").plays[0]
                .vars_prompt
                .is_empty()
        );
    }

    /// `user` is the play's old name for `remote_user`; both at once are refused.
    #[test]
    fn user_is_remote_user_but_not_beside_it() {
        let play = ok("- hosts: all\n  user: bob\n");
        assert_eq!(play.plays[0].remote_user.as_deref(), Some("bob"));
        assert_eq!(
            err("- hosts: all\n  user: a\n  remote_user: b\n").message,
            "both 'user' and 'remote_user' are set for this play. The use of 'user' is deprecated, and should be removed"
        );
    }
}
