//! `async_status`: what became of a job started with `async:` (see `agent/src/ops/job.rs`
//! for its files). Status reads the job's status file, its reply and the controller's note
//! in one batch; a finished job's reply goes through the finisher of the module that
//! started it (named in the note), so the result is the one a synchronous run gives, with
//! Ansible's job fields. Cleanup removes the job's files. The executor's polling of
//! `async:` tasks with `poll > 0` uses the same reads (`status_op`, `job_state`).

use serde_json::{Map, Value, json};
use turbo_proto::{EnsurePath, FileRead, Op, OpResult, Ownership, PathState};

use super::spec::{Arg, Spec};
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};

pub struct AsyncStatus;

/// Ansible's default `async_dir` (the shell plugin's option).
pub const DEFAULT_DIR: &str = "~/.ansible_async";

static SPEC: Spec = Spec::new(&[
    Arg::str("jid").required(),
    Arg::str("mode")
        .choices(&["status", "cleanup"])
        .default_str("status"),
]);

impl Module for AsyncStatus {
    fn name(&self) -> &'static str {
        "async_status"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let jid = args.str("jid").unwrap_or_default().to_string();
        let cleanup = args.str("mode") == Some("cleanup");
        Ok(Plan::Step(
            status_op(DEFAULT_DIR, &jid),
            Next::new(move |reply| Ok(decide(&jid, cleanup, reply))),
        ))
    }

    fn finish(&self, _args: &Args, result: OpResult) -> TaskOutcome {
        match result {
            // Only cleanup's removal comes back here; its outcome was decided before.
            OpResult::Batch(_) => TaskOutcome::default(),
            other => unexpected(self.name(), other),
        }
    }
}

/// What a job's files say.
pub enum JobState {
    /// No status file: no such job (or it was cleaned up).
    Missing {
        results_file: String,
    },
    Running {
        results_file: String,
    },
    Finished {
        results_file: String,
        reply: Box<OpResult>,
        note: Option<Value>,
    },
}

/// The job's files in `dir`, as the agent names them.
fn job_paths(dir: &str, jid: &str) -> [String; 3] {
    let dir = dir.trim_end_matches('/');
    [
        format!("{dir}/{jid}"),
        format!("{dir}/{jid}.reply"),
        format!("{dir}/{jid}.note"),
    ]
}

/// One batch that reads the job's status file, reply and note.
pub fn status_op(dir: &str, jid: &str) -> Op {
    Op::Batch(
        job_paths(dir, jid)
            .into_iter()
            .map(|path| Op::ReadFile {
                path,
                offset: 0,
                limit: None,
            })
            .collect(),
    )
}

/// Removes the job's files (Ansible's cleanup mode, and after a polled job finished).
pub fn cleanup_op(dir: &str, jid: &str) -> Op {
    Op::Batch(
        job_paths(dir, jid)
            .into_iter()
            .map(|path| {
                Op::EnsurePath(EnsurePath {
                    path,
                    state: PathState::Absent,
                    mode: None,
                    recurse_parents: false,
                    owner: Ownership::default(),
                })
            })
            .collect(),
    )
}

/// Reads the reply to [`status_op`].
pub fn job_state(reply: OpResult) -> Result<JobState, String> {
    let OpResult::Batch(results) = reply else {
        return Err(format!("unexpected reply to a job's status: {reply:?}"));
    };
    let reads: Vec<&FileRead> = results
        .iter()
        .filter_map(|r| match r {
            OpResult::Read(read) => Some(read),
            _ => None,
        })
        .collect();
    let [status, reply, note] = reads.as_slice() else {
        return Err(
            match results
                .into_iter()
                .find(|r| matches!(r, OpResult::Error(_)))
            {
                Some(OpResult::Error(e)) => e.message,
                _ => "unexpected reply to a job's status".into(),
            },
        );
    };
    let results_file = status.stat.path.clone();
    if !status.stat.exists {
        return Ok(JobState::Missing { results_file });
    }
    if !reply.stat.exists {
        return Ok(JobState::Running { results_file });
    }
    let answer: OpResult = turbo_proto::read_frame(&mut reply.data.as_slice())
        .ok()
        .flatten()
        .ok_or_else(|| format!("Could not parse job output: {}", reply.stat.path))?;
    let note = note
        .stat
        .exists
        .then(|| serde_json::from_slice(&note.data).ok())
        .flatten();
    Ok(JobState::Finished {
        results_file,
        reply: Box::new(answer),
        note,
    })
}

/// What the controller keeps beside a job, so a later `async_status` can finish its reply
/// with the module that started it.
pub fn note(module: &str, action: &str, args: &Map<String, Value>, check: bool) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "module": module,
        "action": action,
        "args": args,
        "check": check,
    }))
    .unwrap_or_default()
}

/// A finished job's reply as the result of the module that started it.
pub fn finish_job(note: Option<&Value>, reply: OpResult) -> TaskOutcome {
    if let OpResult::TimedOut { .. } = reply {
        // What async_wrapper leaves when it killed the job at its time limit.
        return TaskOutcome::failed("Timeout exceeded");
    }
    let module_name = note.and_then(|n| n["module"].as_str()).unwrap_or_default();
    let action = note
        .and_then(|n| n["action"].as_str())
        .unwrap_or(module_name);
    let check = note.and_then(|n| n["check"].as_bool()).unwrap_or(false);
    let raw_args = note
        .and_then(|n| n["args"].as_object())
        .cloned()
        .unwrap_or_default();
    let module = super::registry::find(module_name)
        .unwrap_or_else(|| super::python::PythonModule::builtin(module_name));
    match module.spec().validate(action, &raw_args) {
        Ok(args) if check => module.finish_check(&args, reply),
        Ok(args) => module.finish(&args, reply),
        Err(message) => TaskOutcome::failed(message),
    }
}

/// Ansible's job fields on a result: the async_status action's defaults (empty output),
/// then the job's id and files.
pub fn with_job_fields(
    outcome: &mut TaskOutcome,
    jid: &str,
    results_file: Option<&str>,
    started: bool,
    finished: bool,
) {
    let data = &mut outcome.data;
    for key in ["stdout", "stderr"] {
        data.entry(key).or_insert_with(|| json!(""));
        data.entry(format!("{key}_lines"))
            .or_insert_with(|| json!([]));
    }
    data.insert("ansible_job_id".into(), json!(jid));
    if let Some(file) = results_file {
        data.insert("results_file".into(), json!(file));
    }
    data.insert("started".into(), json!(started));
    data.insert("finished".into(), json!(finished));
}

fn decide(jid: &str, cleanup: bool, reply: OpResult) -> Plan {
    let state = match job_state(reply) {
        Ok(state) => state,
        Err(message) => return Plan::Done(TaskOutcome::failed(message)),
    };
    if cleanup {
        let erased = match &state {
            JobState::Missing { results_file }
            | JobState::Running { results_file }
            | JobState::Finished { results_file, .. } => results_file.clone(),
        };
        if let JobState::Missing { .. } = state {
            return Plan::Done(missing(jid, &erased));
        }
        let dir = erased
            .rsplit_once('/')
            .map_or(".", |(dir, _)| dir)
            .to_string();
        let jid = jid.to_string();
        return Plan::Step(
            cleanup_op(&dir, &jid),
            Next::new(move |_| {
                let mut outcome = TaskOutcome::default();
                with_job_fields(&mut outcome, &jid, None, false, false);
                outcome.data.insert("erased".into(), json!(erased));
                Ok(Plan::Done(outcome))
            }),
        );
    }
    Plan::Done(match state {
        JobState::Missing { results_file } => missing(jid, &results_file),
        JobState::Running { results_file } => {
            let mut outcome = TaskOutcome::default();
            with_job_fields(&mut outcome, jid, Some(&results_file), true, false);
            outcome
        }
        JobState::Finished {
            results_file,
            reply,
            note,
        } => {
            let mut outcome = finish_job(note.as_ref(), *reply);
            with_job_fields(&mut outcome, jid, Some(&results_file), true, true);
            outcome
        }
    })
}

fn missing(jid: &str, results_file: &str) -> TaskOutcome {
    let mut outcome = TaskOutcome::failed("could not find job");
    with_job_fields(&mut outcome, jid, Some(results_file), true, true);
    outcome
}

#[cfg(test)]
mod tests {
    use turbo_proto::{FileRead, StatInfo};

    use super::*;
    use crate::modules::try_plan;

    fn read(path: &str, data: Option<Vec<u8>>) -> OpResult {
        OpResult::Read(FileRead {
            stat: StatInfo {
                path: path.into(),
                exists: data.is_some(),
                ..StatInfo::default()
            },
            offset: 0,
            data: data.unwrap_or_default(),
            eof: true,
        })
    }

    fn resume(plan: Plan, reply: OpResult) -> Plan {
        match plan {
            Plan::Step(_, next) => next.resume(reply).unwrap(),
            _ => panic!("a step"),
        }
    }

    #[test]
    fn status_reads_the_jobs_three_files_in_one_batch() {
        let args = json!({"jid": "j12.34"});
        let Plan::Step(op, _) = try_plan(
            &AsyncStatus,
            args,
            &PlanContext::new(std::path::Path::new(".")),
        )
        .unwrap() else {
            panic!("a step");
        };
        assert_eq!(op, status_op("~/.ansible_async", "j12.34"));
        let Op::Batch(ops) = op else { panic!() };
        assert_eq!(ops.len(), 3);
    }

    #[test]
    fn a_missing_job_fails_as_ansible_words_it() {
        let args = json!({"jid": "j1.2"});
        let plan = try_plan(
            &AsyncStatus,
            args,
            &PlanContext::new(std::path::Path::new(".")),
        )
        .unwrap();
        let f = "/root/.ansible_async/j1.2";
        let reply = OpResult::Batch(vec![read(f, None), read("r", None), read("n", None)]);
        let Plan::Done(outcome) = resume(plan, reply) else {
            panic!("done");
        };
        assert!(outcome.failed);
        assert_eq!(outcome.msg.as_deref(), Some("could not find job"));
        assert_eq!(outcome.data["finished"], json!(true));
        assert_eq!(outcome.data["results_file"], json!(f));
    }

    #[test]
    fn a_running_job_is_started_and_not_finished() {
        let args = json!({"jid": "j1.2"});
        let plan = try_plan(
            &AsyncStatus,
            args,
            &PlanContext::new(std::path::Path::new(".")),
        )
        .unwrap();
        let f = "/root/.ansible_async/j1.2";
        let reply = OpResult::Batch(vec![
            read(f, Some(b"{}".to_vec())),
            read("r", None),
            read("n", None),
        ]);
        let Plan::Done(outcome) = resume(plan, reply) else {
            panic!("done");
        };
        assert!(!outcome.failed && !outcome.changed);
        assert_eq!(outcome.data["started"], json!(true));
        assert_eq!(outcome.data["finished"], json!(false));
        assert_eq!(outcome.data["stdout_lines"], json!([]));
    }

    #[test]
    fn cleanup_removes_the_files_and_names_the_status_file_erased() {
        let args = json!({"jid": "j1.2", "mode": "cleanup"});
        let plan = try_plan(
            &AsyncStatus,
            args,
            &PlanContext::new(std::path::Path::new(".")),
        )
        .unwrap();
        let f = "/root/.ansible_async/j1.2";
        let reply = OpResult::Batch(vec![
            read(f, Some(b"{}".to_vec())),
            read("r", None),
            read("n", None),
        ]);
        let Plan::Step(op, next) = resume(plan, reply) else {
            panic!("a removal");
        };
        assert_eq!(op, cleanup_op("/root/.ansible_async", "j1.2"));
        let Plan::Done(outcome) = next.resume(OpResult::Batch(vec![])).unwrap() else {
            panic!("done");
        };
        assert_eq!(outcome.data["erased"], json!(f));
        assert_eq!(outcome.data["started"], json!(false));
        assert!(!outcome.data.contains_key("results_file"));
    }
}
