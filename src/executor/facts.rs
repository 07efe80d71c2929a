//! Ansible's implicit first task of every play with `gather_facts` on (the default):
//! `TASK [Gathering Facts]`, the `gather_facts` action (its facts modules, `setup` unless
//! configured otherwise) on every play host, before `pre_tasks`.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value};

use super::flow::PlayRun;
use super::{HostState, TaskRef, run_task_on};
use crate::config::Gathering;
use crate::playbook::{Play, Task};
use crate::report::events::{Event, TaskBanner};

/// What Ansible names the implicit task in its banner.
pub const GATHERING_FACTS: &str = "Gathering Facts";

/// The synthetic `gather_facts` task a play runs first, or None with `gather_facts: false` (or
/// unset under `gathering = explicit`).
pub(crate) fn gathering_task(play: &Play, gathering: Gathering) -> Option<Task> {
    if !play
        .gather_facts
        .unwrap_or(gathering != Gathering::Explicit)
    {
        return None;
    }
    let mut args = Map::new();
    if !play.gather_subset.is_empty() {
        args.insert(
            "gather_subset".into(),
            Value::Array(
                play.gather_subset
                    .iter()
                    .cloned()
                    .map(Value::String)
                    .collect(),
            ),
        );
    }
    if let Some(path) = &play.fact_path {
        args.insert("fact_path".into(), Value::String(path.clone()));
    }
    // Ansible's implicit task is the gather_facts action, which runs the facts modules.
    let gather = crate::modules::find("gather_facts").expect("gather_facts is a registered module");
    let mut task = Task::new("gather_facts", gather, args, play.location.clone());
    task.name = Some(GATHERING_FACTS.into());
    opening(&mut task, play);
    Some(task)
}

/// What the play's opening tasks take from it: its module_defaults, and its tags (unless
/// the play is tagged, they run whatever --tags asks, as in Ansible).
fn opening(task: &mut Task, play: &Play) {
    task.keywords.module_defaults = play.module_defaults.clone();
    task.tags = if play.tags.is_empty() {
        vec!["always".to_string()]
    } else {
        play.tags.clone()
    };
}

/// The check of the play's variables against its `validate_argspec` spec, Ansible's
/// second implicit task (after fact gathering).
pub(crate) fn validation_task(play: &Play) -> Option<Task> {
    let spec = play.argspec.as_ref()?;
    let mut args = Map::new();
    args.insert("argument_spec".into(), Value::Object(spec.options.clone()));
    args.insert(
        "validate_args_context".into(),
        serde_json::json!({
            "type": "play",
            "name": spec.name,
            "argument_spec_name": spec.name,
            "path": spec.path.display().to_string(),
        }),
    );
    let module = crate::modules::find("validate_argument_spec")
        .expect("validate_argument_spec is a registered module");
    let mut task = Task::new(
        "ansible.builtin.validate_argument_spec",
        module,
        args,
        play.location.clone(),
    );
    task.name = Some(format!(
        "Validating arguments against arg spec {}",
        spec.name
    ));
    opening(&mut task, play);
    Some(task)
}

/// Runs the play's fact gathering, then its argument spec check, on its active hosts, all
/// at once up to `forks`. An
/// unreachable host is reported and benched as after any task.
pub(crate) async fn gather(run: &PlayRun<'_>) {
    let play = &run.playbook.plays[run.play_index];
    let gathering = run.ctx.opts.gathering;
    if let Some(task) = gathering_task(play, gathering) {
        // Smart gathering skips the hosts whose facts an earlier play gathered (no banner
        // when that is all of them), as Ansible's does.
        let smart = gathering == Gathering::Smart;
        run_opening_task(run, task, |h| {
            !smart || h.facts.lock().expect("facts lock").is_empty()
        })
        .await;
    }
    if let Some(task) = validation_task(play) {
        run_opening_task(run, task, |_| true).await;
    }
}

async fn run_opening_task(run: &PlayRun<'_>, task: Task, wanted: impl Fn(&HostState) -> bool) {
    if !crate::playbook::selected(&task.tags, &run.ctx.opts.tags) {
        return;
    }
    let active: Vec<Arc<HostState>> = run
        .hosts
        .iter()
        .filter(|h| !h.out.load(Ordering::SeqCst) && wanted(h))
        .cloned()
        .collect();
    if active.is_empty() {
        return;
    }
    let name = task.display_name();
    run.ctx.emit(Event::TaskStart(TaskBanner {
        name,
        hosts: active.len(),
        // The play's opening tasks are made anew for each play, so the play stands for
        // them, one key for each.
        key: std::ptr::from_ref(&run.playbook.plays[run.play_index]) as usize
            + usize::from(task.module.name() != "gather_facts"),
        check_mode: task.check_mode.unwrap_or(run.ctx.opts.check),
        host: None,
    }));
    run_task_on(run, TaskRef::Synthetic(Arc::new(task)), active).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn play(yaml: &str) -> Play {
        crate::playbook::load_playbook_text(Path::new("site.yml"), yaml)
            .unwrap()
            .plays
            .remove(0)
    }

    #[test]
    fn plays_gather_facts_by_default_with_their_subset() {
        let task = gathering_task(&play("- hosts: all\n"), Gathering::Implicit).unwrap();
        assert_eq!(task.display_name(), "Gathering Facts");
        assert_eq!(task.module.name(), "gather_facts");
        assert!(task.args.is_empty());
        assert!(task.register.is_none() && task.loop_spec.is_none());

        let task = gathering_task(
            &play("- hosts: all\n  gather_subset: [\"!all\", network]\n"),
            Gathering::Implicit,
        )
        .unwrap();
        assert_eq!(
            Value::Object(task.args),
            serde_json::json!({"gather_subset": ["!all", "network"]})
        );

        let task = gathering_task(
            &play("- hosts: all\n  fact_path: /srv/facts.d\n"),
            Gathering::Implicit,
        )
        .unwrap();
        assert_eq!(
            Value::Object(task.args),
            serde_json::json!({"fact_path": "/srv/facts.d"})
        );

        assert!(
            gathering_task(
                &play("- hosts: all\n  gather_facts: false\n"),
                Gathering::Implicit
            )
            .is_none()
        );
    }

    #[test]
    fn explicit_gathering_needs_the_play_to_ask() {
        let unset = play("- hosts: all\n");
        assert!(gathering_task(&unset, Gathering::Explicit).is_none());
        assert!(gathering_task(&unset, Gathering::Smart).is_some());
        let asked = play("- hosts: all\n  gather_facts: true\n");
        assert!(gathering_task(&asked, Gathering::Explicit).is_some());
    }

    #[test]
    fn gathering_is_tagged_always_unless_the_play_is_tagged() {
        let untagged = gathering_task(&play("- hosts: all\n"), Gathering::Implicit).unwrap();
        assert_eq!(untagged.tags, ["always"]);
        let tagged =
            gathering_task(&play("- hosts: all\n  tags: [web]\n"), Gathering::Implicit).unwrap();
        assert_eq!(tagged.tags, ["web"]);
        let only_db = crate::playbook::TagFilter::from_args(&["db".into()], &[]);
        assert!(crate::playbook::selected(&untagged.tags, &only_db));
        assert!(!crate::playbook::selected(&tagged.tags, &only_db));
    }
}
