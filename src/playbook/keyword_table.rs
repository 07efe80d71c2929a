//! The one table of playbook keywords: for each, the places Ansible takes it (play, block,
//! role entry, import, dynamic include, task), whether the tasks inside a play, block,
//! role entry or import take it on, and what turbo-play does with it. Every place of the
//! loader asks this table about a keyword it does not read itself
//! ([`Loader::table_keyword`]), so a keyword turbo-play does not act on yet is warned
//! about the same way wherever it is written, and never dropped silently.

use super::loader::Loader;
use super::{Location, RunKeywords, UnsupportedKeyword};
use crate::yaml::{LoadError, Node, Value};

/// A set of places where a keyword may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Places(u8);

impl Places {
    pub(super) const NONE: Places = Places(0);
    pub(super) const PLAY: Places = Places(1);
    pub(super) const BLOCK: Places = Places(1 << 1);
    /// A `roles:` or `dependencies:` entry (keys that are no keyword are role parameters).
    pub(super) const ROLE: Places = Places(1 << 2);
    /// `import_tasks`, `import_role` (and the old `include`), resolved at load time.
    pub(super) const IMPORT: Places = Places(1 << 3);
    /// `include_tasks`, `include_role`: a task of their own, loaded at run time. Ansible
    /// takes only its `VALID_INCLUDE_KEYWORDS` here (and `apply:` for the included tasks).
    pub(super) const INCLUDE: Places = Places(1 << 4);
    /// A task or a handler.
    pub(super) const TASK: Places = Places(1 << 5);
    const ALL: Places = Places(0b11_1111);
    /// Where Ansible takes a task keyword: everywhere but on dynamic includes.
    const TASKLIKE: Places = Places(Places::ALL.0 & !Places::INCLUDE.0);

    const fn or(self, other: Places) -> Places {
        Places(self.0 | other.0)
    }

    const fn but(self, other: Places) -> Places {
        Places(self.0 & !other.0)
    }

    pub(super) fn has(self, place: Places) -> bool {
        self.0 & place.0 != 0
    }
}

/// What turbo-play does with a keyword where it is allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Support {
    /// Acted on as Ansible does (read by the place's own loader, or a run keyword).
    Supported,
    /// Accepted, and changes nothing turbo-play does (`debugger`, `collections`).
    NoEffect,
    /// Accepted but not acted on yet: the executor warns (once per run per keyword),
    /// since ignoring it silently would change what the play does.
    Warned,
}

#[derive(Debug)]
pub(super) struct Keyword {
    pub(super) name: &'static str,
    /// Where Ansible takes it.
    pub(super) places: Places,
    /// Where Ansible takes it but turbo-play refuses it for now, with an error saying
    /// where to put it instead.
    pub(super) refused: Places,
    /// Where it is not acted on yet although it is elsewhere: warned about there.
    pub(super) warned: Places,
    /// Handed inwards, from a play, block, role entry or import to every task inside.
    pub(super) inherited: bool,
    pub(super) support: Support,
}

const fn kw(name: &'static str, places: Places, support: Support) -> Keyword {
    Keyword {
        name,
        places,
        refused: Places::NONE,
        warned: Places::NONE,
        inherited: false,
        support,
    }
}

impl Keyword {
    const fn inherited(self) -> Keyword {
        Keyword {
            inherited: true,
            ..self
        }
    }

    const fn refused_on(self, places: Places) -> Keyword {
        Keyword {
            refused: places,
            ..self
        }
    }

    /// A [`RunKeywords`] keyword: parsed by `Loader::run_keyword` wherever it is written.
    pub(super) fn is_run_keyword(&self) -> bool {
        RUN_KEYWORDS.contains(&self.name)
    }
}

use Support::{NoEffect, Supported, Warned};
const P: Places = Places::PLAY;
const B: Places = Places::BLOCK;
const R: Places = Places::ROLE;
const I: Places = Places::IMPORT;
const D: Places = Places::INCLUDE;
const T: Places = Places::TASK;
/// Where a run keyword goes: everywhere tasks can be written around a task.
const AROUND: Places = P.or(B).or(R).or(I).or(T);

pub(super) const KEYWORDS: &[Keyword] = &[
    // What a play or a block is made of (first: suggestions prefer them).
    kw("block", B, Supported),
    kw("rescue", B, Supported),
    kw("always", B, Supported),
    kw("hosts", P, Supported),
    kw("tasks", P, Supported),
    kw("pre_tasks", P, Supported),
    kw("post_tasks", P, Supported),
    kw("handlers", P, Supported),
    kw("roles", P, Supported),
    kw("vars_files", P, Supported),
    kw("vars_prompt", P, Supported),
    kw("gather_facts", P, Supported),
    kw("gather_subset", P, Supported),
    kw("gather_timeout", P, NoEffect),
    kw("fact_path", P, Supported),
    kw("validate_argspec", P, Supported),
    kw("force_handlers", P, Supported),
    kw("serial", P, Supported),
    kw("order", P, Supported),
    kw("max_fail_percentage", P, Supported),
    kw("strategy", P, Supported),
    // Everywhere.
    kw("name", Places::ALL, Supported),
    kw("vars", Places::ALL, Supported).inherited(),
    kw("tags", Places::ALL, Supported).inherited(),
    kw("ignore_errors", Places::ALL, Supported).inherited(),
    kw("no_log", Places::ALL, Supported).inherited(),
    kw("collections", Places::ALL, NoEffect),
    kw("debugger", Places::ALL, NoEffect),
    kw("timeout", Places::ALL, Supported).inherited(),
    kw("when", Places::ALL.but(P), Supported).inherited(),
    kw("check_mode", Places::TASKLIKE, Supported).inherited(),
    kw("diff", Places::TASKLIKE, Supported).inherited(),
    kw("environment", Places::TASKLIKE, Supported).inherited(),
    // Where and as whom a task runs.
    kw("connection", Places::TASKLIKE, Supported).inherited(),
    kw("remote_user", Places::TASKLIKE, Supported).inherited(),
    kw("port", Places::TASKLIKE, Supported).inherited(),
    kw("become", Places::TASKLIKE, Supported).inherited(),
    kw("become_user", Places::TASKLIKE, Supported).inherited(),
    kw("become_method", Places::TASKLIKE, Supported).inherited(),
    kw("become_flags", Places::TASKLIKE, Supported).inherited(),
    kw("become_exe", Places::TASKLIKE, Supported).inherited(),
    kw("module_defaults", Places::TASKLIKE, Supported).inherited(),
    kw("any_errors_fatal", AROUND, Supported).inherited(),
    kw("ignore_unreachable", AROUND, Supported).inherited(),
    kw("throttle", AROUND, Supported).inherited(),
    kw("run_once", AROUND.or(D), Supported)
        .inherited()
        .refused_on(D),
    kw("delegate_to", B.or(R).or(I).or(T), Supported)
        .inherited()
        .refused_on(R.or(I)),
    kw("delegate_facts", B.or(R).or(I).or(T), Supported).inherited(),
    // Tasks (and the include task itself).
    kw("loop", T.or(I).or(D), Supported).refused_on(I),
    kw("loop_control", T.or(R).or(I).or(D), Supported).refused_on(R.or(I)),
    kw("register", T.or(D), Supported).refused_on(D),
    kw("notify", T.or(B), Supported),
    kw("changed_when", T, Supported),
    kw("failed_when", T, Supported),
    kw("until", T, Supported),
    kw("retries", T, Supported),
    kw("delay", T, Supported),
    kw("listen", T, Supported),
    kw("args", T.or(I).or(D), Supported),
    kw("action", T.or(D), Supported),
    kw("local_action", T, Supported),
    kw("async", T.or(R).or(I), Supported).refused_on(R.or(I)),
    kw("poll", T.or(R).or(I), Supported).refused_on(R.or(I)),
];

/// The keywords of [`RunKeywords`]: parsed the same way on a task, a block, a role
/// entry, an import or `apply:`, and handed to the tasks inside.
const RUN_KEYWORDS: &[&str] = &[
    "any_errors_fatal",
    "ignore_unreachable",
    "run_once",
    "delegate_to",
    "delegate_facts",
    "environment",
    "module_defaults",
    "no_log",
    "throttle",
    "timeout",
    "connection",
    "remote_user",
    "port",
    "become",
    "become_user",
    "become_method",
    "become_flags",
    "become_exe",
];

/// The table's entry for `name`.
pub(super) fn keyword(name: &str) -> Option<&'static Keyword> {
    KEYWORDS.iter().find(|k| k.name == name)
}

/// The keywords Ansible takes at `place`, for suggestions and help texts.
pub(super) fn names_at(place: Places) -> impl Iterator<Item = &'static str> {
    KEYWORDS
        .iter()
        .filter(move |k| k.places.has(place))
        .map(|k| k.name)
}

/// What the table made of a keyword.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Taken {
    /// Read, accepted or recorded as not supported yet.
    Yes,
    /// Not a keyword of this place: the place decides (a module, a role parameter, or an
    /// error).
    No,
}

/// Where a keyword is written, for the table's refusals.
pub(super) struct At<'a> {
    pub(super) place: Places,
    /// How an error names the place: `a role`, `import_tasks`, `a Block`.
    pub(super) label: &'a str,
}

impl Loader<'_> {
    /// A keyword the place's own loader does not read, as the table says: a run keyword
    /// into `keywords`; one not supported yet into `unsupported` (a literal `false`
    /// asks for nothing, so nothing is said); one refused here an error.
    pub(super) fn table_keyword(
        &self,
        at: &At,
        k: &Node,
        v: &Node,
        keywords: &mut RunKeywords,
        unsupported: &mut Vec<UnsupportedKeyword>,
    ) -> Result<Taken, LoadError> {
        let Some(key) = k.as_str() else {
            return Ok(Taken::No);
        };
        let Some(found) = keyword(key).filter(|found| found.places.has(at.place)) else {
            return Ok(Taken::No);
        };
        if found.refused.has(at.place) {
            let help = if at.place == Places::INCLUDE {
                "put it on the included tasks instead".to_string()
            } else {
                format!("put `{key}:` on the tasks themselves")
            };
            let message = if at.place == Places::INCLUDE {
                format!("'{key}' is not supported on {}", at.label)
            } else {
                format!("'{key}' on {} is not supported yet", at.label)
            };
            return Err(self.err(k.span, message, Some(help)));
        }
        // What the loader hands inwards (`Inherited`) is what the table calls inherited.
        debug_assert!(
            found.inherited || !found.is_run_keyword(),
            "{key}: a run keyword must be inherited"
        );
        let support = if found.warned.has(at.place) {
            Warned
        } else {
            found.support
        };
        match support {
            Supported if found.is_run_keyword() => self.run_keyword(key, v, keywords)?,
            Supported => return Ok(Taken::No),
            NoEffect => {}
            Warned => {
                if !matches!(v.value, Value::Bool(false)) {
                    record_unsupported(unsupported, key, self.location(k.span));
                }
            }
        }
        Ok(Taken::Yes)
    }
}

/// Adds `keyword` to the list once.
pub(super) fn record_unsupported(
    into: &mut Vec<UnsupportedKeyword>,
    keyword: &str,
    location: Location,
) {
    if !into.iter().any(|u| u.keyword == keyword) {
        into.push(UnsupportedKeyword {
            keyword: keyword.to_string(),
            location,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::test_support::tree::{load, tree};
    use crate::playbook::{Playbook, Task};

    fn warned(unsupported: &[UnsupportedKeyword]) -> Vec<&str> {
        unsupported.iter().map(|u| u.keyword.as_str()).collect()
    }

    fn first_task(pb: &Playbook) -> &Task {
        &pb.plays[0].tasks[0]
    }

    /// A playbook beside a role `r` and a tasks file `t.yml`, each with one task.
    fn with_files(site: &str) -> Result<Playbook, LoadError> {
        let dir = tree(&[
            ("site.yml", site),
            ("roles/r/tasks/main.yml", "- ping:\n"),
            ("t.yml", "- ping:\n"),
        ]);
        load(&dir)
    }

    #[test]
    fn keywords_not_supported_yet_are_warned_wherever_they_are_written() {
        let warned_keywords = KEYWORDS
            .iter()
            .filter(|k| k.support == Warned || k.warned != Places::NONE);
        for k in warned_keywords {
            let name = k.name;
            let warned_at = |place: Places| {
                k.places.has(place)
                    && !k.refused.has(place)
                    && (k.support == Warned || k.warned.has(place))
            };
            let site = |text: &str| with_files(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            if warned_at(Places::PLAY) {
                let pb = site(&format!("- hosts: all\n  {name}: x\n  tasks: [ping:]\n"));
                assert_eq!(warned(&pb.plays[0].unsupported), [name], "play");
            }
            if warned_at(Places::BLOCK) {
                let pb = site(&format!(
                    "- hosts: all\n  tasks:\n    - block: [ping:]\n      {name}: x\n"
                ));
                assert_eq!(warned(&first_task(&pb).unsupported), [name], "block");
                let location = &first_task(&pb).unsupported[0].location;
                assert_eq!((location.line, location.column), (4, 7), "{name}");
            }
            if warned_at(Places::ROLE) {
                let pb = site(&format!(
                    "- hosts: all\n  roles:\n    - {{role: r, {name}: x}}\n"
                ));
                assert_eq!(warned(&first_task(&pb).unsupported), [name], "role");
                assert!(first_task(&pb).role.as_ref().unwrap().params.is_empty());
            }
            if warned_at(Places::IMPORT) {
                let pb = site(&format!(
                    "- hosts: all\n  tasks:\n    - import_tasks: t.yml\n      {name}: x\n"
                ));
                assert_eq!(warned(&first_task(&pb).unsupported), [name], "import");
            }
            if warned_at(Places::TASK) {
                let pb = site(&format!(
                    "- hosts: all\n  tasks:\n    - ping:\n      {name}: x\n"
                ));
                assert_eq!(warned(&first_task(&pb).unsupported), [name], "task");
            }
        }
        // `become: false` asks for nothing, so nothing is said.
        let pb =
            with_files("- hosts: all\n  become: false\n  tasks:\n    - ping:\n      become: no\n")
                .unwrap();
        assert!(pb.plays[0].unsupported.is_empty() && first_task(&pb).unsupported.is_empty());
    }

    #[test]
    fn connection_remote_user_and_port_reach_the_tasks_inside() {
        let check = |site: &str| {
            let pb = with_files(site).unwrap_or_else(|e| panic!("{e}"));
            let k = &first_task(&pb).keywords;
            assert_eq!(
                (
                    k.connection.as_deref(),
                    k.remote_user.as_deref(),
                    k.port.as_deref()
                ),
                (Some("local"), Some("bob"), Some("2222")),
                "{site}"
            );
        };
        let keywords = "connection: local, remote_user: bob, port: 2222";
        check(&format!(
            "- hosts: all\n  tasks:\n    - {{ping: , {keywords}}}\n"
        ));
        check(&format!(
            "- hosts: all\n  tasks:\n    - {{block: [ping:], {keywords}}}\n"
        ));
        check(&format!(
            "- hosts: all\n  roles:\n    - {{role: r, {keywords}}}\n"
        ));
        check(&format!(
            "- hosts: all\n  tasks:\n    - {{import_tasks: t.yml, {keywords}}}\n"
        ));
        // A task's own wins over its block's.
        let pb = with_files(
            "- hosts: all\n  tasks:\n    - block:\n        - {ping: , remote_user: own}\n      remote_user: outer\n",
        )
        .unwrap();
        assert_eq!(first_task(&pb).keywords.remote_user.as_deref(), Some("own"));
        let e = with_files("- hosts: all\n  tasks:\n    - {ping: , port: 70000}\n").unwrap_err();
        assert_eq!(
            e.message,
            "port must be a port number (1-65535), got '70000'"
        );
    }

    /// ansible-playbook 2.21 (checked) refuses every keyword outside its short list on a
    /// dynamic include: `'become' is not a valid attribute for a TaskInclude`.
    #[test]
    fn dynamic_includes_take_only_ansibles_include_keywords() {
        for (keyword, class) in [
            ("become: true", "TaskInclude"),
            ("connection: local", "TaskInclude"),
            ("check_mode: true", "TaskInclude"),
        ] {
            let e = with_files(&format!(
                "- hosts: all\n  tasks:\n    - include_tasks: t.yml\n      {keyword}\n"
            ))
            .unwrap_err();
            let name = keyword.split(':').next().unwrap();
            assert_eq!(
                e.message,
                format!("'{name}' is not a valid attribute for a {class}")
            );
        }
        let e = with_files(
            "- hosts: all\n  tasks:\n    - include_role: {name: r}\n      become: true\n",
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            "'become' is not a valid attribute for a IncludeRole"
        );
        // What Ansible takes there still loads; keywords for the included tasks go in apply.
        with_files(
            "- hosts: all\n  tasks:\n    - include_tasks: {file: t.yml, apply: {become: true, connection: local}}\n      no_log: true\n      timeout: 3\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn every_keyword_is_listed_once_and_refused_only_where_allowed() {
        for (i, k) in KEYWORDS.iter().enumerate() {
            assert!(
                !KEYWORDS[i + 1..].iter().any(|o| o.name == k.name),
                "{} is listed twice",
                k.name
            );
            assert_eq!(
                k.refused.but(k.places),
                Places::NONE,
                "{} is refused where it is not allowed",
                k.name
            );
        }
        for name in RUN_KEYWORDS {
            assert!(keyword(name).is_some(), "{name} is not in the table");
        }
    }
}
