//! `pause`: wait `seconds` or `minutes`. Runs on the controller only, once for the play's
//! hosts (Ansible's pause bypasses the host loop; the executor treats it as `run_once`).
//! A `prompt` without a time cannot be answered by a non-interactive run: it returns at
//! once with a warning, as Ansible does when stdin is not a terminal.
//!
//! The planner cannot sleep (it is synchronous); its outcome carries the wait as an
//! [`Effect::Wait`] for the executor.

use serde_json::{Map, Value};

use super::spec::{Arg, Spec};
use super::{Args, Caps, Effect, Module, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct Pause;

/// `minutes` and `seconds` are numbers that may be fractional (Ansible's "int callable").
static SPEC: Spec = Spec::new(&[
    Arg::bool("echo").default_bool(true),
    Arg::raw("minutes"),
    Arg::str("prompt"),
    Arg::raw("seconds"),
])
.mutually_exclusive(&[&["minutes", "seconds"]]);

fn number(args: &Args, name: &'static str) -> Result<Option<f64>, ModuleError> {
    let value = match args.raw(name) {
        None => return Ok(None),
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        Some(_) => None,
    };
    value
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(Some)
        .ok_or_else(|| {
            ModuleError::Invalid(format!(
                "non-integer value given for prompt duration: {name}"
            ))
        })
}

impl Module for Pause {
    fn name(&self) -> &'static str {
        "pause"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.bypass_host_loop().no_connection()
    }

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let seconds = number(args, "seconds")?;
        let minutes = number(args, "minutes")?;
        let echo = args.bool("echo");
        let mut data = Map::new();
        let (wait, stdout) = match (seconds, minutes) {
            (Some(s), _) => (s, format!("Paused for {:?} seconds", s)),
            (_, Some(m)) => (m * 60.0, format!("Paused for {:?} minutes", m)),
            (None, None) => {
                data.insert(
                    "warnings".into(),
                    Value::from(vec![
                        "Not waiting for response to prompt as stdin is not interactive",
                    ]),
                );
                (0.0, "Paused for 0.0 seconds".to_string())
            }
        };
        data.insert("echo".into(), echo.into());
        data.insert("rc".into(), 0.into());
        data.insert("stdout".into(), stdout.into());
        data.insert("stderr".into(), "".into());
        data.insert("user_input".into(), "".into());
        data.insert("delta".into(), Value::from(wait as i64));
        Ok(Plan::Done(TaskOutcome {
            data,
            effects: vec![Effect::Wait(std::time::Duration::from_secs_f64(wait))],
            ..TaskOutcome::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(args: Value) -> Result<TaskOutcome, String> {
        match crate::modules::try_plan(&Pause, args, &PlanContext::new(std::path::Path::new(".")))?
        {
            Plan::Done(outcome) => Ok(outcome),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn seconds_and_minutes_become_a_wait() {
        let o = plan(json!({"seconds": 2})).unwrap();
        assert_eq!(o.effects, [Effect::Wait(std::time::Duration::from_secs(2))]);
        assert_eq!(o.data["stdout"], "Paused for 2.0 seconds");
        assert!(!o.changed && !o.failed);
        let o = plan(json!({"minutes": "0.5"})).unwrap();
        assert_eq!(
            o.effects,
            [Effect::Wait(std::time::Duration::from_secs(30))]
        );
        assert_eq!(o.data["stdout"], "Paused for 0.5 minutes");
    }

    #[test]
    fn a_prompt_without_a_time_returns_at_once_with_a_warning() {
        let o = plan(json!({"prompt": "Continue?"})).unwrap();
        assert_eq!(o.effects, [Effect::Wait(std::time::Duration::ZERO)]);
        assert_eq!(o.data["user_input"], "");
        assert!(
            o.data["warnings"][0]
                .as_str()
                .unwrap()
                .contains("not interactive")
        );
    }

    #[test]
    fn bad_durations_fail() {
        assert!(plan(json!({"seconds": "soon"})).is_err());
        assert_eq!(
            plan(json!({"seconds": 1, "minutes": 1})).unwrap_err(),
            "parameters are mutually exclusive: minutes|seconds"
        );
    }
}
