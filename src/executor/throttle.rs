//! `throttle`: the task's limit (a template decided with the first host's variables) and
//! the semaphores that hold it across a play's hosts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::Semaphore;

use super::{HostState, TaskRef, flow, vars};

/// The task's `throttle`: as written, or its template rendered with the first host's
/// variables; Ansible's message when that is no integer.
pub(super) fn throttled_to(
    run: &flow::PlayRun<'_>,
    task: &crate::playbook::Task,
    hosts: &[Arc<HostState>],
    keywords: &crate::playbook::RunKeywords,
) -> Result<Option<u64>, String> {
    let (Some(template), Some(first)) = (&keywords.throttle_template, hosts.first()) else {
        return Ok(keywords.throttle);
    };
    let play = &run.playbook.plays[run.play_index];
    let vars = vars::task_vars(run.ctx, run.playbook, play, task, first, run.play_hosts)?;
    let value = run
        .ctx
        .templar
        .render_value(&Value::String(template.clone()), &vars)
        .map_err(|e| format!("Failed to convert the throttle value to an integer: {e}"))?;
    let text = match &value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match text.trim().parse::<i64>() {
        Ok(n) if n > 0 => Ok(Some(n as u64)),
        Ok(_) => Ok(None),
        Err(_) => Err(format!(
            "Failed to convert the throttle value to an integer: invalid literal for int() with base 10: '{text}'"
        )),
    }
}

/// The `throttle` of each task of a play, shared by every host that runs the task: under
/// `strategy: free` the hosts reach it at different moments, each on its own, and the
/// limit must still hold across them.
#[derive(Default)]
pub(crate) struct Throttles(Mutex<HashMap<usize, Arc<Semaphore>>>);

impl Throttles {
    pub(super) fn of(&self, task: &TaskRef, limit: u64) -> Arc<Semaphore> {
        let new = || Arc::new(Semaphore::new(usize::try_from(limit).unwrap_or(usize::MAX)));
        match task {
            TaskRef::Task(index) => self
                .0
                .lock()
                .expect("throttles lock")
                .entry(*index)
                .or_insert_with(new)
                .clone(),
            // Handlers and included tasks run for their hosts together in one call.
            TaskRef::Handler(_) | TaskRef::Synthetic(_) => new(),
        }
    }
}
