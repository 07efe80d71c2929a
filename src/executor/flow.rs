//! Each host's path through a play: blocks (rescue/always), handlers, `meta`.
//!
//! Blocks are flattened into the play's task list at load time; every task carries its
//! [`BlockFrame`]s. A host's [`Flow`] holds where it stands (running normally, or
//! unwinding a failure towards a `rescue`/`always`), so the linear strategy simply asks
//! each host, task by task, whether it runs the next one.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Map, Value};
use tokio::sync::Semaphore;

use super::vars::task_vars;
use super::{HostState, RunContext, TaskRef, run_task_on};
use crate::playbook::{BlockFrame, Playbook, Section, Task};
use crate::report::events::{Event, TaskBanner};

/// One host's control-flow state for the current play.
#[derive(Debug, Default)]
pub struct Flow {
    /// A failure on its way to the `rescue` or `always` that handles it.
    unwinding: Option<Unwind>,
    /// Blocks whose `rescue` this host has entered.
    rescuing: HashSet<usize>,
    /// Handler names and `listen` topics notified and not yet run.
    notified: Vec<String>,
    /// `ansible_failed_task` and `ansible_failed_result`, once a task failed in a block.
    failed_vars: Option<Map<String, Value>>,
    /// `meta: end_host` (or `end_play`) ended the play for this host.
    pub(super) ended: bool,
    /// `meta: end_role` ended this use of a role: its remaining tasks are skipped.
    ended_role: Option<Arc<crate::playbook::RoleInfo>>,
}

#[derive(Debug, Clone)]
struct Unwind {
    /// The frames of the task that failed, outermost first.
    frames: Vec<BlockFrame>,
    /// Which of them handles the failure now.
    level: usize,
    /// The section of that block the host runs next.
    target: Section,
    /// The host is inside that block's `always`; leaving it resumes the failure.
    in_always: bool,
}

/// Whether a host runs a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Run,
    Skip,
    /// A failure left its last `always` unhandled: the host is out of the play.
    Fail,
}

/// What became of a task failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caught {
    /// A `rescue` will run: Ansible counts the host `rescued`, not failed.
    Rescue,
    /// Only an `always` runs; the host fails after it.
    Always,
    Uncaught,
}

impl Flow {
    /// Decides whether this host runs `task`, moving through rescue/always as it goes.
    pub fn decide(&mut self, task: &Task) -> Decision {
        if self.ended {
            return Decision::Skip;
        }
        if let Some(ended) = &self.ended_role {
            if task.role.as_ref().is_some_and(|r| Arc::ptr_eq(r, ended)) {
                return Decision::Skip;
            }
            self.ended_role = None;
        }
        loop {
            let Some(unwind) = &mut self.unwinding else {
                // A rescue runs only for a host that failed in its block.
                let entered = task
                    .frames
                    .iter()
                    .all(|f| f.section != Section::Rescue || self.rescuing.contains(&f.block));
                return if entered {
                    Decision::Run
                } else {
                    Decision::Skip
                };
            };
            let block = unwind.frames[unwind.level].block;
            let here = task
                .frames
                .get(unwind.level)
                .filter(|f| f.block == block)
                .map(|f| f.section);
            match (here, unwind.target) {
                (Some(Section::Rescue), Section::Rescue) => {
                    self.rescuing.insert(block);
                    self.unwinding = None;
                }
                (Some(Section::Always), Section::Always) => {
                    unwind.in_always = true;
                    let deeper = &task.frames[unwind.level + 1..];
                    let entered = deeper
                        .iter()
                        .all(|f| f.section != Section::Rescue || self.rescuing.contains(&f.block));
                    return if entered {
                        Decision::Run
                    } else {
                        Decision::Skip
                    };
                }
                _ if unwind.in_always => {
                    // Past the `always`: the failure goes on to the enclosing block.
                    if unwind.level == 0 {
                        self.unwinding = None;
                        return Decision::Fail;
                    }
                    let level = unwind.level - 1;
                    let section = unwind.frames[level].section;
                    match resolve(&unwind.frames, level, section) {
                        Some(next) => *unwind = next,
                        None => {
                            self.unwinding = None;
                            return Decision::Fail;
                        }
                    }
                }
                _ => return Decision::Skip,
            }
        }
    }

    /// A task failed on this host (not ignored): find what handles it.
    pub fn fail(&mut self, task: &Task, result: &Map<String, Value>) -> Caught {
        let Some(last) = task.frames.last() else {
            self.unwinding = None;
            return Caught::Uncaught;
        };
        let mut failed_task = Map::new();
        failed_task.insert("name".into(), task.name.clone().unwrap_or_default().into());
        failed_task.insert("action".into(), task.action.clone().into());
        failed_task.insert("args".into(), Value::Object(task.args.clone()));
        let mut vars = Map::new();
        vars.insert("ansible_failed_task".into(), Value::Object(failed_task));
        vars.insert(
            "ansible_failed_result".into(),
            Value::Object(result.clone()),
        );
        self.failed_vars = Some(vars);
        self.unwinding = resolve(&task.frames, task.frames.len() - 1, last.section);
        match &self.unwinding {
            Some(u) if u.target == Section::Rescue => Caught::Rescue,
            Some(_) => Caught::Always,
            None => Caught::Uncaught,
        }
    }

    /// A failure still unwinding when the play ends fails the host.
    pub fn end_of_play(&mut self) -> bool {
        self.unwinding.take().is_some()
    }

    pub fn notify(&mut self, names: &[String]) {
        for name in names {
            if !self.notified.contains(name) {
                self.notified.push(name.clone());
            }
        }
    }

    pub fn failed_vars(&self) -> Option<&Map<String, Value>> {
        self.failed_vars.as_ref()
    }

    pub fn ended(&self) -> bool {
        self.ended
    }

    #[cfg(test)]
    pub fn end_host_for_tests(&mut self) {
        self.ended = true;
    }
}

/// The handler of a failure in `section` of the block at `level` (or further out).
fn resolve(frames: &[BlockFrame], mut level: usize, mut section: Section) -> Option<Unwind> {
    loop {
        let frame = &frames[level];
        let target = match section {
            Section::Block if frame.has_rescue => Some(Section::Rescue),
            Section::Block | Section::Rescue if frame.has_always => Some(Section::Always),
            _ => None,
        };
        if let Some(target) = target {
            return Some(Unwind {
                frames: frames.to_vec(),
                level,
                target,
                in_always: false,
            });
        }
        if level == 0 {
            return None;
        }
        level -= 1;
        section = frames[level].section;
    }
}

/// Whether a host takes part in the rest of the play.
pub fn in_play(host: &HostState) -> bool {
    !host.out.load(Ordering::SeqCst) && !host.flow.lock().expect("flow lock").ended()
}

/// The hosts that run `task`; a host whose failure leaves its last `always` drops out.
pub fn runners(hosts: &[Arc<HostState>], task: &Task) -> Vec<Arc<HostState>> {
    hosts
        .iter()
        .filter(|h| {
            let decision = h.flow.lock().expect("flow lock").decide(task);
            if decision == Decision::Fail {
                h.out.store(true, Ordering::SeqCst);
            }
            decision == Decision::Run
        })
        .cloned()
        .collect()
}

/// What the play's loop does after a `meta` task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetaEffect {
    Continue,
    EndBatch,
    EndPlay,
}

/// Everything the executor needs to run tasks of one play.
pub struct PlayRun<'a> {
    pub ctx: &'a Arc<RunContext>,
    pub playbook: &'a Arc<Playbook>,
    pub play_index: usize,
    /// Every host of the play, out or not.
    pub hosts: &'a [Arc<HostState>],
    pub play_hosts: &'a super::vars::PlayHosts,
    pub forks: &'a Arc<Semaphore>,
    pub throttles: &'a Arc<super::Throttles>,
}

impl PlayRun<'_> {
    /// Acts on a `meta` task for the hosts still in the play.
    pub async fn meta(&self, task: &Task, active: &[Arc<HostState>]) -> MetaEffect {
        let action = task
            .args
            .get("_raw_params")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim();
        let targets = runners(active, task);
        // Ansible 2.21 prints every meta task's banner (not its own implicit flushes), and
        // `skipping: [h]` (not counted) where an ending meta's `when` is false.
        if !task.implicit {
            self.ctx.emit(Event::TaskStart(self.task_banner(
                task,
                task.banner_name(),
                &targets,
                None,
            )));
        }
        let ends = matches!(action, "end_play" | "end_batch" | "end_host" | "end_role");
        let holding: Vec<&Arc<HostState>> = if ends {
            let (holding, skipped): (Vec<_>, Vec<_>) =
                targets.iter().partition(|h| self.holds(task, h));
            for host in skipped {
                let role = task.role.as_ref().map(|r| r.name.as_str());
                let (msg, reason) = meta_skip_words(action, &host.name, role);
                self.verbose_meta(task, &reason);
                let mut data = Map::new();
                data.insert("changed".into(), Value::Bool(false));
                data.insert("msg".into(), Value::String(msg));
                data.insert("skip_reason".into(), Value::String(reason));
                self.ctx
                    .emit(Event::HostResult(crate::report::events::HostResult {
                        host: host.name.clone(),
                        status: crate::report::events::Status::Skipped,
                        item: None,
                        data,
                        ignored: false,
                        verbose_always: false,
                        origin: None,
                    }));
            }
            holding
        } else {
            Vec::new()
        };
        match action {
            "flush_handlers" => self.flush_handlers().await,
            "end_play" | "end_batch" if !holding.is_empty() => {
                let what = if action == "end_batch" {
                    "batch"
                } else {
                    "play"
                };
                self.verbose_meta(task, &format!("ending {what}"));
                for host in self.hosts {
                    host.flow.lock().expect("flow lock").ended = true;
                }
                // Under `serial`, end_batch lets the next batch run; end_play does not.
                return if action == "end_batch" {
                    MetaEffect::EndBatch
                } else {
                    MetaEffect::EndPlay
                };
            }
            // The loader refuses end_role outside a role.
            "end_role" => {
                for host in holding {
                    host.flow.lock().expect("flow lock").ended_role = task.role.clone();
                }
            }
            "end_host" => {
                for host in holding {
                    self.verbose_meta(task, &format!("ending play for {}", host.name));
                    host.flow.lock().expect("flow lock").ended = true;
                }
            }
            // Ansible forgets the play's failed and unreachable hosts, whichever host runs it.
            "clear_host_errors" => {
                for host in self.hosts {
                    host.out.store(false, Ordering::SeqCst);
                    host.unreachable.store(false, Ordering::SeqCst);
                }
            }
            "refresh_inventory" => self.refresh_inventory(task),
            // Nothing to do here: no facts cache or role bookkeeping.
            _ => {}
        }
        MetaEffect::Continue
    }

    /// Reads the inventory's sources again: later plays select from what they say now
    /// (hosts `add_host` made stay, as in Ansible). A source that no longer parses
    /// keeps the inventory as it was, with a warning.
    fn refresh_inventory(&self, task: &Task) {
        match self.ctx.inventory().reload() {
            Ok(fresh) => {
                for warning in fresh.warnings() {
                    self.ctx.emit(Event::Warning(warning.clone()));
                }
                *self.ctx.inventory.write().expect("inventory lock") = Arc::new(fresh);
                self.verbose_meta(task, "inventory successfully refreshed");
            }
            Err(e) => self.ctx.emit(Event::Warning(format!(
                "{}: refresh_inventory: {e}",
                task.location
            ))),
        }
    }

    /// Ansible's `META: ...` line at -vv (an implicit meta's goes to its debug log only).
    fn verbose_meta(&self, task: &Task, header: &str) {
        if !task.implicit {
            self.ctx.emit(Event::Verbose {
                level: 2,
                text: format!("META: {header}"),
            });
        }
    }

    /// The banner name Ansible prints: templated with the first host's variables, or left
    /// as written when anything in it is undefined there (Ansible templates task names
    /// with `fail_on_undefined=False`; a loop's `item` is never defined yet).
    /// The banner event's content for `task` starting on `runners` (`host`, the one
    /// host, under the free strategy), with `name` templated as [`Self::banner`] does.
    pub fn task_banner(
        &self,
        task: &Task,
        name: String,
        runners: &[Arc<HostState>],
        host: Option<&str>,
    ) -> TaskBanner {
        // Under `free` each host walks alone, included tasks too.
        let free = self.playbook.plays[self.play_index].keywords.free;
        let alone = match runners {
            [only] if free => Some(only.name.as_str()),
            _ => None,
        };
        TaskBanner {
            name: self.banner(task, name, runners),
            hosts: runners.len(),
            key: std::ptr::from_ref(task) as usize,
            check_mode: task.check_mode.unwrap_or(self.ctx.opts.check),
            host: host.or(alone).map(str::to_string),
        }
    }

    pub fn banner(&self, task: &Task, name: String, runners: &[Arc<HostState>]) -> String {
        let Some(first) = runners.first() else {
            return name;
        };
        // An unnamed task shows its action as written, a templated one too (Ansible
        // templates names, not the action it falls back to).
        if !crate::template::is_template(&name)
            || (task.name.is_none() && crate::modules::templated_action::is_stand_in(task.module))
        {
            return name;
        }
        let play = &self.playbook.plays[self.play_index];
        let Ok(vars) = task_vars(self.ctx, self.playbook, play, task, first, self.play_hosts)
        else {
            return name;
        };
        match self.ctx.templar.render_str(&name, &vars) {
            Ok(rendered) => rendered,
            Err(_) => name,
        }
    }

    /// The task's `when` for one host (a broken condition counts as false, with a warning).
    fn holds(&self, task: &Task, host: &HostState) -> bool {
        let play = &self.playbook.plays[self.play_index];
        let vars = match task_vars(self.ctx, self.playbook, play, task, host, self.play_hosts) {
            Ok(vars) => vars,
            Err(e) => {
                self.ctx
                    .emit(Event::Warning(format!("{}: {e}", task.location)));
                return false;
            }
        };
        task.when.iter().all(
            |condition| match self.ctx.templar.eval_condition(condition, &vars) {
                Ok(b) => b,
                Err(e) => {
                    self.ctx.emit(Event::Warning(format!(
                        "{}: the conditional check '{condition}' failed: {e}",
                        task.location
                    )));
                    false
                }
            },
        )
    }

    /// Runs every notified handler, in the order the play lists them, on the hosts that
    /// notified it (failed hosts too with `force_handlers`).
    pub async fn flush_handlers(&self) {
        let play = &self.playbook.plays[self.play_index];
        let force = self.ctx.opts.force_handlers || play.force_handlers;
        // The play's handlers, then those of roles it included at run time.
        let dynamic = self
            .ctx
            .dynamic_handlers
            .lock()
            .expect("handlers lock")
            .clone();
        // A role's handlers are in the play once: a role included at run time replaces
        // the handlers an earlier use of it loaded, with its own variables.
        let replaced = |h: &Task| {
            h.role.as_ref().is_some_and(|role| {
                dynamic.iter().any(|d| {
                    d.name == h.name && d.role.as_ref().is_some_and(|r| r.path == role.path)
                })
            })
        };
        let all: Vec<(TaskRef, &Task)> = (play.handlers.iter().enumerate())
            .filter(|(_, h)| !replaced(h))
            .map(|(i, h)| (TaskRef::Handler(i), h))
            .chain(
                dynamic
                    .iter()
                    .map(|h| (TaskRef::Synthetic(h.clone()), &**h)),
            )
            .collect();
        // A name reaches only the last handler loaded under it (it shadows the earlier
        // ones, as Ansible documents); a `listen` topic reaches every listener.
        let reaches = |name: &str, at: usize| -> bool {
            let handler = all[at].1;
            handler.listens_to(name)
                || (handler.is_named(name) && !all[at + 1..].iter().any(|(_, h)| h.is_named(name)))
        };
        for (index, (task_ref, handler)) in all.iter().enumerate() {
            let handler = *handler;
            let mut targets = Vec::new();
            for host in self.hosts {
                let eligible = {
                    let out = host.out.load(Ordering::SeqCst);
                    let unreachable = host.unreachable.load(Ordering::SeqCst);
                    !out || (force && !unreachable)
                };
                let mut flow = host.flow.lock().expect("flow lock");
                if flow.ended || !flow.notified.iter().any(|n| reaches(n, index)) {
                    continue;
                }
                // A name stays notified while a later handler still answers to it.
                flow.notified.retain(|n| {
                    !reaches(n, index) || (index + 1..all.len()).any(|later| reaches(n, later))
                });
                if eligible {
                    targets.push(host.clone());
                }
            }
            if targets.is_empty() {
                continue;
            }
            self.ctx.emit(Event::HandlerStart(self.task_banner(
                handler,
                handler.display_name(),
                &targets,
                None,
            )));
            if handler.include.is_some() {
                // The included tasks run at once, on the hosts that notified the handler;
                // an end they ask for is the play's next meta task's business.
                super::include::run(self, handler, targets, 0).await;
                continue;
            }
            run_task_on(self, task_ref.clone(), targets).await;
        }
        // A templated name that turned out to match nothing (Ansible stops the run here).
        for host in self.hosts {
            let mut flow = host.flow.lock().expect("flow lock");
            let unknown: Vec<String> = flow
                .notified
                .iter()
                .filter(|n| !all.iter().any(|(_, h)| h.answers_to(n)))
                .cloned()
                .collect();
            for name in unknown {
                flow.notified.retain(|n| *n != name);
                self.ctx.emit(Event::Warning(format!(
                    "[{}]: the requested handler '{name}' was not found in either the main handlers list nor in the listening handlers list",
                    host.name
                )));
            }
        }
    }
}

/// The `msg` and `skip_reason` of an ending meta whose `when` is false on `host`, in
/// Ansible's words (end_host's `msg` keeps its historical lower-case "false").
fn meta_skip_words(action: &str, host: &str, role: Option<&str>) -> (String, String) {
    let reason = match action {
        "end_host" => {
            format!("end_host conditional evaluated to False, continuing execution for {host}")
        }
        "end_batch" => "end_batch conditional evaluated to False, continuing current batch".into(),
        "end_role" => format!(
            "end_role conditional evaluated to False, continuing role {} for {host}",
            role.unwrap_or_default()
        ),
        _ => format!("{action} conditional evaluated to False, continuing play"),
    };
    let msg = match action {
        "end_host" => {
            format!("end_host conditional evaluated to false, continuing execution for {host}")
        }
        other => other.to_string(),
    };
    (msg, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::playbook::load_playbook_text;
    use std::path::Path;

    fn tasks(yaml: &str) -> Vec<Task> {
        let text = format!("- hosts: all\n  tasks:\n{yaml}");
        load_playbook_text(Path::new("site.yml"), &text)
            .unwrap_or_else(|e| panic!("{e}"))
            .plays
            .remove(0)
            .tasks
    }

    /// Walks the tasks for one host that fails at the given indexes: which tasks ran,
    /// how each failure was caught, and whether the host fails in the end.
    fn walk(tasks: &[Task], failing: &[usize]) -> (Vec<usize>, Vec<Caught>, bool) {
        let mut flow = Flow::default();
        let (mut ran, mut caught) = (Vec::new(), Vec::new());
        for (i, task) in tasks.iter().enumerate() {
            match flow.decide(task) {
                Decision::Run => {
                    ran.push(i);
                    if failing.contains(&i) {
                        let c = flow.fail(task, &Map::new());
                        caught.push(c);
                        if c == Caught::Uncaught {
                            return (ran, caught, true);
                        }
                    }
                }
                Decision::Skip => {}
                Decision::Fail => return (ran, caught, true),
            }
        }
        let failed = flow.end_of_play();
        (ran, caught, failed)
    }

    const RESCUED: &str = "    - block:
        - command: a
        - command: b
      rescue:
        - command: c
        - command: d
      always:
        - command: e
    - command: f
";

    #[test]
    fn a_rescue_runs_only_after_a_failure() {
        let t = tasks(RESCUED);
        assert_eq!(walk(&t, &[]), (vec![0, 1, 4, 5], vec![], false));
        assert_eq!(
            walk(&t, &[0]),
            (vec![0, 2, 3, 4, 5], vec![Caught::Rescue], false)
        );
        // A failing rescue still runs the always, then the host fails.
        assert_eq!(
            walk(&t, &[1, 2]),
            (vec![0, 1, 2, 4], vec![Caught::Rescue, Caught::Always], true)
        );
        // A failing always fails the host straight away.
        assert_eq!(
            walk(&t, &[4]),
            (vec![0, 1, 4], vec![Caught::Uncaught], true)
        );
    }

    #[test]
    fn failures_travel_out_through_nested_blocks() {
        let t = tasks(
            "    - block:
        - block:
            - command: a
            - command: b
          always:
            - command: c
        - command: d
      rescue:
        - command: e
    - command: f
",
        );
        // The inner always runs, then the outer rescue takes the failure.
        assert_eq!(
            walk(&t, &[0]),
            (vec![0, 2, 4, 5], vec![Caught::Always], false)
        );
        let t = tasks(
            "    - block:
        - block:
            - command: a
        - command: b
      rescue:
        - command: c
    - command: d
",
        );
        assert_eq!(walk(&t, &[0]), (vec![0, 2, 3], vec![Caught::Rescue], false));
        // Without any block a failure is the end.
        let t = tasks("    - command: a\n    - command: b\n");
        assert_eq!(walk(&t, &[0]), (vec![0], vec![Caught::Uncaught], true));
    }

    #[test]
    fn an_always_at_the_end_of_the_play_fails_the_host_after_it() {
        let t = tasks(
            "    - block:
        - command: a
      always:
        - command: b
",
        );
        assert_eq!(walk(&t, &[0]), (vec![0, 1], vec![Caught::Always], true));
    }

    #[test]
    fn failed_vars_name_the_task_and_result() {
        let t = tasks(RESCUED);
        let mut flow = Flow::default();
        let mut result = Map::new();
        result.insert("rc".into(), 2.into());
        flow.fail(&t[1], &result);
        let vars = flow.failed_vars().unwrap();
        assert_eq!(vars["ansible_failed_result"]["rc"], 2);
        assert_eq!(vars["ansible_failed_task"]["action"], "command");
        assert_eq!(vars["ansible_failed_task"]["args"]["_raw_params"], "b");
    }
}
