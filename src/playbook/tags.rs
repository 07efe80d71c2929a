//! Ansible's tag selection: which tasks `--tags`/`--skip-tags` let run.
//!
//! The rules are Ansible's `Taggable.evaluate_tags`, special tags included: `always` runs
//! unless skipped by name (it even survives `--skip-tags all`), `never` runs only when
//! asked for by one of its tags, `tagged`/`untagged` match tasks with and without tags,
//! and `all` matches everything but `never`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The tag a task without tags is treated as having.
const UNTAGGED: &str = "untagged";

/// What `--tags` and `--skip-tags` ask for, after splitting their comma lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagFilter {
    /// `--tags`; `{all}` when none were given, as ansible-playbook defaults it.
    pub only: BTreeSet<String>,
    pub skip: BTreeSet<String>,
}

impl Default for TagFilter {
    fn default() -> Self {
        TagFilter {
            only: BTreeSet::from(["all".to_string()]),
            skip: BTreeSet::new(),
        }
    }
}

impl TagFilter {
    /// From the flags as given: each may be repeated and each holds a comma list.
    pub fn from_args(tags: &[String], skip_tags: &[String]) -> TagFilter {
        let split = |args: &[String]| -> BTreeSet<String> {
            args.iter()
                .flat_map(|a| a.split(','))
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect()
        };
        let only = split(tags);
        TagFilter {
            only: if only.is_empty() {
                TagFilter::default().only
            } else {
                only
            },
            skip: split(skip_tags),
        }
    }

    /// `--list-tags` without `--tags`/`--skip-tags` lists `never` tasks' tags too.
    pub fn for_listing_tags(self, user_gave_tags: bool) -> TagFilter {
        if user_gave_tags {
            return self;
        }
        TagFilter {
            only: BTreeSet::from(["all".to_string(), "never".to_string()]),
            ..self
        }
    }
}

/// Whether a task with these tags (its own and inherited) runs under `filter`.
pub fn selected(task_tags: &[String], filter: &TagFilter) -> bool {
    let untagged = task_tags.is_empty();
    let has = |t: &str| {
        if untagged {
            t == UNTAGGED
        } else {
            task_tags.iter().any(|x| x == t)
        }
    };
    let meets = |wanted: &BTreeSet<String>| wanted.iter().any(|w| has(w));
    let only = &filter.only;
    let mut run = only.is_empty()
        || has("always")
        || (only.contains("all") && !has("never"))
        || meets(only)
        || (only.contains("tagged") && !untagged && !has("never"));
    let skip = &filter.skip;
    if run && !skip.is_empty() {
        if skip.contains("all") {
            if !has("always") || skip.contains("always") {
                run = false;
            }
        } else if meets(skip) || (skip.contains("tagged") && !untagged) {
            run = false;
        }
    }
    run
}

/// The indexes of the tasks that run under `filter`: those it selects, except that of the
/// copies of a role that runs once per play ([`super::RoleInfo::once_group`]: the same
/// role and parameters reached under different tags, typically a shared dependency) only
/// the first copy with a selected task runs. Ansible skips a role that already ran, so
/// `--tags db` runs a dependency shared by the `web` and `db` roles once, under `db`.
pub fn select_tasks(tasks: &[super::Task], filter: &TagFilter) -> Vec<usize> {
    let mut chosen: HashMap<usize, *const super::RoleInfo> = HashMap::new();
    (0..tasks.len())
        .filter(|&i| {
            let task = &tasks[i];
            if !selected(&task.tags, filter) {
                return false;
            }
            let Some((group, role)) = task
                .role
                .as_ref()
                .and_then(|role| Some((role.once_group?, role)))
            else {
                return true;
            };
            let copy = Arc::as_ptr(role);
            *chosen.entry(group).or_insert(copy) == copy
        })
        .collect()
}

/// Passes a templated tag may need (`t: "{{ base }}"`, `base: web`).
const MAX_TAG_DEPTH: usize = 8;

/// Templated tags (`tags: "{{ x }}"`, on tasks, blocks, role entries or plays), rendered
/// as ansible-playbook does before it selects tasks: with what the play knows without a
/// host (its roles' defaults and vars, its vars and vars_prompt defaults, extra vars,
/// `playbook_dir`), never host, group or task vars. A list value gives several tags.
/// Fails, naming the task, when a tag's template does (an undefined name, say).
/// What a template written on the play itself sees: the roles' defaults, the play's vars
/// (and vars_prompt defaults), the roles' vars and extra vars; never host variables.
pub(super) fn play_level_vars(
    play: &super::Play,
    extra_vars: &serde_json::Map<String, serde_json::Value>,
    dir: &str,
) -> minijinja::Value {
    let mut vars = serde_json::Map::new();
    for role in &play.roles {
        vars.extend(role.defaults.clone());
    }
    vars.extend(play.vars.clone());
    for prompt in &play.vars_prompt {
        if let Some(value) = &prompt.default {
            vars.insert(prompt.name.clone(), value.clone());
        }
    }
    for role in &play.roles {
        vars.extend(role.vars.clone());
    }
    vars.extend(extra_vars.clone());
    vars.insert("playbook_dir".into(), dir.into());
    vars.insert("omit".into(), crate::template::OMIT.into());
    minijinja::Value::from_serialize(&vars)
}

pub fn render_templated_tags(
    playbook: &mut super::Playbook,
    templar: &crate::template::Templar,
    extra_vars: &serde_json::Map<String, serde_json::Value>,
) -> Result<(), String> {
    use crate::template::is_template;
    let dir = playbook.dir.display().to_string();
    for play in &mut playbook.plays {
        let templated = |tags: &[String]| tags.iter().any(|t| is_template(t));
        if !templated(&play.tags)
            && !play
                .tasks
                .iter()
                .chain(&play.handlers)
                .any(|t| templated(&t.tags))
        {
            continue;
        }
        let context = play_level_vars(play, extra_vars, &dir);
        let render = |tags: &mut Vec<String>, at: &super::Location| -> Result<(), String> {
            if !templated(tags) {
                return Ok(());
            }
            let mut out = Vec::new();
            for tag in tags.iter() {
                let mut value = serde_json::Value::String(tag.clone());
                for _ in 0..MAX_TAG_DEPTH {
                    match &value {
                        serde_json::Value::String(s) if is_template(s) => {
                            value = templar
                                .render_value(&value, &context)
                                .map_err(|e| format!("{at}: templating the tag '{tag}': {e}"))?;
                        }
                        _ => break,
                    }
                }
                match value {
                    serde_json::Value::Array(items) => out.extend(items.iter().map(tag_text)),
                    other => out.push(tag_text(&other)),
                }
            }
            let mut seen = std::collections::HashSet::new();
            out.retain(|t| seen.insert(t.clone()));
            *tags = out;
            Ok(())
        };
        render(&mut play.tags, &play.location)?;
        for task in play.tasks.iter_mut().chain(play.handlers.iter_mut()) {
            render(&mut task.tags, &task.location)?;
        }
    }
    Ok(())
}

fn tag_text(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A `tags:` value as Ansible reads it: a list (items as written) or a comma string.
pub fn split_tags(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(tags: &str, skip: &str) -> TagFilter {
        let list = |s: &str| {
            if s.is_empty() {
                vec![]
            } else {
                vec![s.to_string()]
            }
        };
        TagFilter::from_args(&list(tags), &list(skip))
    }

    fn runs(task: &[&str], f: &TagFilter) -> bool {
        let tags: Vec<String> = task.iter().map(|s| s.to_string()).collect();
        selected(&tags, f)
    }

    #[test]
    fn without_flags_everything_but_never_runs() {
        let f = TagFilter::default();
        assert!(runs(&[], &f));
        assert!(runs(&["web"], &f));
        assert!(runs(&["always"], &f));
        assert!(!runs(&["never"], &f));
        assert!(!runs(&["never", "debug"], &f));
        // `always` wins over `never` on the same task, as in Ansible.
        assert!(runs(&["never", "always"], &f));
    }

    #[test]
    fn tags_select_by_name_and_always_still_runs() {
        let f = filter("web,db", "");
        assert!(runs(&["web"], &f));
        assert!(runs(&["x", "db"], &f));
        assert!(!runs(&["x"], &f));
        assert!(!runs(&[], &f));
        assert!(runs(&["always"], &f));
        // A `never` task runs when one of its other tags is asked for.
        assert!(runs(&["never", "web"], &f));
        assert!(runs(&["never"], &filter("never", "")));
    }

    #[test]
    fn skip_tags_win_and_always_is_skipped_only_by_name() {
        let f = filter("", "web");
        assert!(!runs(&["web"], &f));
        assert!(runs(&["db"], &f));
        assert!(runs(&[], &f));
        assert!(!runs(&["always", "web"], &f));
        assert!(runs(&["always"], &f));
        assert!(!runs(&["always"], &filter("", "always")));
        let all = filter("", "all");
        assert!(!runs(&["web"], &all));
        assert!(!runs(&[], &all));
        assert!(runs(&["always"], &all));
        assert!(!runs(&["always"], &filter("", "all,always")));
        // --tags and --skip-tags together: skip is applied to what --tags chose.
        let both = filter("web", "slow");
        assert!(runs(&["web"], &both));
        assert!(!runs(&["web", "slow"], &both));
    }

    #[test]
    fn tagged_and_untagged() {
        let tagged = filter("tagged", "");
        assert!(runs(&["x"], &tagged));
        assert!(!runs(&[], &tagged));
        assert!(!runs(&["never", "x"], &tagged));
        let untagged = filter("untagged", "");
        assert!(runs(&[], &untagged));
        assert!(!runs(&["x"], &untagged));
        assert!(runs(&["always"], &untagged));
        let skip_tagged = filter("", "tagged");
        assert!(runs(&[], &skip_tagged));
        assert!(!runs(&["x"], &skip_tagged));
        let skip_untagged = filter("", "untagged");
        assert!(!runs(&[], &skip_untagged));
        assert!(runs(&["x"], &skip_untagged));
    }

    #[test]
    fn flags_are_comma_lists_and_repeatable() {
        let f = TagFilter::from_args(&["a, b".into(), "c".into()], &["d,,e".into()]);
        assert_eq!(
            f.only.iter().map(String::as_str).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert_eq!(
            f.skip.iter().map(String::as_str).collect::<Vec<_>>(),
            ["d", "e"]
        );
        assert_eq!(TagFilter::from_args(&[], &[]), TagFilter::default());
        let listing = TagFilter::default().for_listing_tags(false);
        assert!(runs(&["never"], &listing));
        assert_eq!(split_tags(" a, b ,c"), ["a", "b", "c"]);
    }

    /// ansible-playbook 2.21 (checked): play vars (nested too) and extra vars render
    /// tags, a list gives several, host vars are not seen, an undefined name fails.
    #[test]
    fn templated_tags_render_with_play_and_extra_vars() {
        let text = "- hosts: all
  vars:
    base: web
    t: \"{{ base }}\"
    many: [a, b]
  tags: \"{{ p | default('play') }}\"
  tasks:
    - {name: one, ping: , tags: \"{{ t }}\"}
    - {name: two, ping: , tags: [\"{{ many }}\", \"{{ e }}\", fixed]}
";
        let mut pb =
            super::super::load_playbook_text(std::path::Path::new("site.yml"), text).unwrap();
        let templar = crate::template::Templar::new();
        let extra = serde_json::Map::from_iter([("e".to_string(), serde_json::json!("extra"))]);
        render_templated_tags(&mut pb, &templar, &extra).unwrap();
        let play = &pb.plays[0];
        assert_eq!(play.tags, ["play"]);
        assert_eq!(play.tasks[0].tags, ["play", "web"]);
        assert_eq!(play.tasks[1].tags, ["play", "a", "b", "extra", "fixed"]);

        let mut pb =
            super::super::load_playbook_text(std::path::Path::new("site.yml"), text).unwrap();
        let err = render_templated_tags(&mut pb, &templar, &Default::default()).unwrap_err();
        assert_eq!(
            err,
            "site.yml:9:7: templating the tag '{{ e }}': 'e' is undefined"
        );
    }
}
