//! Task lists and blocks: a block is flattened into its list, each task carrying the
//! block's frame and what it hands down.

use super::keyword_table::{At, Places, Taken, names_at};
use super::loader::{Inherited, Loader};
use super::shared::identity;
use super::{BlockFrame, Section, Task};
use crate::modules::closest;
use crate::yaml::{LoadError, Node, Source, Value};

const AT_BLOCK: At = At {
    place: Places::BLOCK,
    label: "a Block",
};

impl Loader<'_> {
    /// A task list, blocks flattened into it: each task carries its blocks' frames and
    /// what they hand down (`when`, `vars`, `ignore_errors`).
    pub(super) fn tasks(
        &self,
        node: &Node,
        section: &str,
        inherited: &Inherited,
    ) -> Result<Vec<Task>, LoadError> {
        match &node.value {
            Value::Null => Ok(Vec::new()),
            Value::Seq(items) => {
                let mut out = Vec::new();
                for item in items {
                    if item.get("block").is_some() {
                        self.block(item, inherited, &mut out)?;
                    } else if self.include(item, inherited, &mut out)? {
                        // An import or role, inlined.
                    } else {
                        out.push(self.task(item, inherited)?);
                    }
                }
                Ok(out)
            }
            // The play's sections in Ansible's words (load_list_of_blocks).
            _ if matches!(section, "tasks" | "pre_tasks" | "post_tasks" | "handlers") => {
                Err(self.err(
                    node.span,
                    format!(
                        "A malformed block was encountered while loading {section}: {} should be a list or None but is <class '{}'>",
                        crate::template::python_repr_json(&node.to_json()),
                        node.python_class()
                    ),
                    Some("start each task with `- name: ...`".into()),
                ))
            }
            _ => Err(self.err(
                node.span,
                format!(
                    "{section} must be a list of tasks, got {}",
                    node.kind_name()
                ),
                Some("start each task with `- name: ...`".into()),
            )),
        }
    }

    pub(super) fn block(
        &self,
        node: &Node,
        inherited: &Inherited,
        out: &mut Vec<Task>,
    ) -> Result<(), LoadError> {
        let entries = node.as_map().unwrap_or_default();
        let mut sections: [Option<&Node>; 3] = [None; 3];
        let mut inner = inherited.clone();
        for (k, v) in entries {
            let key = self.key(k)?;
            match key {
                "block" => sections[0] = Some(v),
                "rescue" => sections[1] = Some(v),
                "always" => sections[2] = Some(v),
                "name" => {
                    self.scalar(v, "name")?;
                }
                // The block's conditions hold for each of its tasks, judged per task.
                "when" => inner.when.extend(self.conditions(v, key)?),
                // Block vars sit below the task's own.
                "vars" => inner.vars.extend(self.mapping(v, key)?),
                "ignore_errors" => match self.switch(v, key)? {
                    Ok(fixed) => {
                        inner.ignore_errors = Some(fixed);
                        inner.keywords.templated.ignore_errors = None;
                    }
                    Err(template) => {
                        inner.ignore_errors = None;
                        inner.keywords.templated.ignore_errors = Some(template);
                    }
                },
                "tags" => inner.tags.extend(self.tags(v)?),
                "notify" => inner.notify.extend(self.names(v, key)?),
                "check_mode" => inner.check_mode = Some(self.boolean(v, key)?),
                "diff" => inner.diff = Some(self.boolean(v, key)?),
                // The innermost `collections:` replaces those around it, as in Ansible.
                "collections" => inner.collections = self.string_list(v, key)?,
                _ => {
                    let (keywords, unsupported) = (&mut inner.keywords, &mut inner.unsupported);
                    if self.table_keyword(&AT_BLOCK, k, v, keywords, unsupported)? == Taken::No {
                        let takes: Vec<&str> = names_at(Places::BLOCK).collect();
                        return Err(self.err(
                            k.span,
                            format!("'{key}' is not a valid attribute for a Block"),
                            closest(key, takes.iter().copied())
                                .map(|s| format!("did you mean '{s}'?"))
                                .or_else(|| {
                                    Some(format!(
                                        "a block takes {}; put '{key}' on the tasks inside it",
                                        takes.join(", ")
                                    ))
                                }),
                        ));
                    }
                }
            }
        }
        let block = self.shared.next_block.get();
        self.shared.next_block.set(block + 1);
        let filled =
            |n: Option<&Node>| n.is_some_and(|n| n.as_seq().is_some_and(|s| !s.is_empty()));
        let (has_rescue, has_always) = (filled(sections[1]), filled(sections[2]));
        let names = ["block", "rescue", "always"];
        let kinds = [Section::Block, Section::Rescue, Section::Always];
        for ((node, section), name) in sections.iter().zip(kinds).zip(names) {
            let Some(node) = node else { continue };
            let mut scoped = inner.clone();
            scoped.frames.push(BlockFrame {
                block,
                section,
                has_rescue,
                has_always,
            });
            out.extend(self.tasks(node, name, &scoped)?);
        }
        Ok(())
    }

    /// The tasks of a tasks file (a list, or nothing), appended to `out`.
    pub(super) fn tasks_source(
        &self,
        source: &Source,
        inherited: &Inherited,
        out: &mut Vec<Task>,
    ) -> Result<(), LoadError> {
        let root = source.parse()?;
        self.shared
            .importing
            .borrow_mut()
            .push(identity(&source.path));
        let loaded = self.tasks(&root, "a tasks file", inherited);
        self.shared.importing.borrow_mut().pop();
        out.extend(loaded?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use crate::playbook::test_support::text::*;
    use serde_json::{Value as Json, json};

    #[test]
    fn blocks_flatten_with_frames_and_hand_down_keywords() {
        let pb = ok("
- hosts: all
  tasks:
    - name: outer
      when: a
      vars: {x: 1, y: 1}
      ignore_errors: true
      block:
        - command: one
          vars: {y: 2}
          when: b
        - block:
            - command: two
              ignore_errors: false
          rescue:
            - command: three
      always:
        - command: four
    - command: five
");
        let tasks = &pb.plays[0].tasks;
        let args: Vec<_> = tasks
            .iter()
            .map(|t| t.args["_raw_params"].clone())
            .collect();
        assert_eq!(args, ["one", "two", "three", "four", "five"]);
        let frame = |block, section, has_rescue, has_always| BlockFrame {
            block,
            section,
            has_rescue,
            has_always,
        };
        assert_eq!(tasks[0].frames, [frame(0, Section::Block, false, true)]);
        assert_eq!(
            tasks[1].frames,
            [
                frame(0, Section::Block, false, true),
                frame(1, Section::Block, true, false)
            ]
        );
        assert_eq!(tasks[2].frames[1], frame(1, Section::Rescue, true, false));
        assert_eq!(tasks[3].frames, [frame(0, Section::Always, false, true)]);
        assert!(tasks[4].frames.is_empty());
        assert_eq!(tasks[0].when, ["a", "b"]);
        assert_eq!(tasks[3].when, ["a"]);
        assert!(tasks[4].when.is_empty());
        assert_eq!(Json::Object(tasks[0].vars.clone()), json!({"x": 1, "y": 2}));
        assert_eq!(Json::Object(tasks[3].vars.clone()), json!({"x": 1, "y": 1}));
        assert!(tasks[0].ignore_errors && !tasks[1].ignore_errors && tasks[2].ignore_errors);
        assert!(!tasks[4].ignore_errors);
    }

    #[test]
    fn block_handler_and_meta_errors() {
        let play = |tasks: &str| format!("- hosts: all\n  tasks:\n{tasks}");
        assert_eq!(
            message_at(&play("    - block:\n        - ping:\n      loop: [1]\n")),
            ("'loop' is not a valid attribute for a Block".into(), 5, 7)
        );
        let e = err(&play(
            "    - block:\n        - ping:\n      rescu:\n        - ping:\n",
        ));
        assert_eq!(e.help.as_deref(), Some("did you mean 'rescue'?"));
        assert_eq!(
            message_at(&play("    - block: {a: 1}\n")),
            ("block must be a list of tasks, got a mapping".into(), 3, 14)
        );
        assert_eq!(
            message_at(&play(
                "    - block:\n        - name: x\n          cpy: {}\n"
            )),
            (
                "couldn't resolve module/action 'cpy'. Did you mean 'copy'?".into(),
                5,
                11
            )
        );
        assert_eq!(
            message_at(&play("    - always:\n        - ping:\n")),
            ("'always' needs a `block:` beside it".into(), 3, 7)
        );
        assert_eq!(
            message_at(&play("    - ping:\n      notify: nobody\n")),
            (
                "The requested handler 'nobody' was not found in either the main handlers list nor in the listening handlers list".into(),
                3,
                7
            )
        );
        assert_eq!(
            message_at(&play("    - ping:\n      listen: x\n")),
            ("'listen' is only valid on a handler".into(), 4, 7)
        );
        assert_eq!(
            message_at(&play("    - ping:\n      notify: {a: 1}\n")),
            ("notify must be a string, got a mapping".into(), 4, 15)
        );
        assert_eq!(
            message_at(&play("    - meta: flush_handler\n")),
            ("invalid meta action requested: flush_handler".into(), 3, 7)
        );
        assert_eq!(
            message_at("- hosts: all\n  handlers: {a: 1}\n"),
            (
                "A malformed block was encountered while loading handlers: {'a': 1} should be a list or None but is <class 'dict'>".into(),
                2,
                13
            )
        );
    }

    #[test]
    fn tags_and_check_mode_are_inherited_from_play_and_blocks() {
        let pb = ok("
- hosts: all
  tasks:
    - name: own
      command: a
      tags: \"x, y\"
    - block:
        - name: nested
          command: b
          tags: [z, [w]]
          check_mode: yes
        - name: plain
          command: c
      tags: blk
      check_mode: no
    - name: untagged
      command: d
  check_mode: yes
  tags: play
  handlers:
    - name: h
      command: e
      tags: ignored
");
        let play = &pb.plays[0];
        assert_eq!(play.tags, ["play"]);
        assert_eq!(play.host_patterns, ["all"]);
        let tags: Vec<&Vec<String>> = play.tasks.iter().map(|t| &t.tags).collect();
        assert_eq!(tags[0], &["play", "x", "y"]);
        assert_eq!(tags[1], &["play", "blk", "z", "w"]);
        assert_eq!(tags[2], &["play", "blk"]);
        assert_eq!(tags[3], &["play"]);
        let check: Vec<Option<bool>> = play.tasks.iter().map(|t| t.check_mode).collect();
        assert_eq!(check, [Some(true), Some(true), Some(false), Some(true)]);
        assert_eq!(play.handlers[0].tags, ["ignored"]);

        let listed = ok("- hosts: [web, db]\n  tasks: []\n");
        assert_eq!(listed.plays[0].host_patterns, ["web", "db"]);
        assert_eq!(listed.plays[0].hosts, "web,db");
        assert!(listed.plays[0].tags.is_empty());

        let (message, line, _) =
            message_at("- hosts: all\n  tasks:\n    - command: a\n      tags: 3\n");
        assert!(
            message.contains("tags must be specified as a list"),
            "{message}"
        );
        assert_eq!(line, 4);
    }

    /// ansible-playbook 2.21 (checked): `diff` on a play, block or task shows or hides
    /// that task's diffs whatever `-D` says, the innermost one winning.
    #[test]
    fn the_diff_keyword_is_inherited_from_play_and_blocks() {
        let pb = ok("
- hosts: all
  diff: true
  tasks:
    - name: from the play
      command: a
    - block:
        - name: from the block
          command: b
        - name: own
          command: c
          diff: yes
      diff: false
  handlers:
    - name: h
      command: e
- hosts: all
  tasks:
    - name: unset
      command: a
");
        let diffs: Vec<Option<bool>> = pb.plays[0].tasks.iter().map(|t| t.diff).collect();
        assert_eq!(diffs, [Some(true), Some(false), Some(true)]);
        assert_eq!(pb.plays[0].handlers[0].diff, Some(true));
        assert_eq!(pb.plays[1].tasks[0].diff, None);
        assert!(pb.plays[0].unsupported.is_empty());
        // A mapping is no boolean at load; a string that is none fails its task when it
        // runs, as in Ansible.
        let (message, line, _) =
            message_at("- hosts: all\n  tasks:\n    - command: a\n      diff: {a: 1}\n");
        assert!(message.contains("diff"), "{message}");
        assert_eq!(line, 4);
    }
}
