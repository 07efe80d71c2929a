//! `pause`: wait `seconds` or `minutes`. Runs on the controller only, once for the play's
//! hosts (Ansible's pause bypasses the host loop; the executor treats it as `run_once`).
//! A `prompt` without a time cannot be answered by a non-interactive run: it returns at
//! once with a warning, as Ansible does when stdin is not a terminal.
//!
//! The planner cannot sleep (it is synchronous); it leaves the wait under [`PAUSE_SECONDS`]
//! in the outcome, and the executor sleeps and removes it.

use serde_json::{Map, Value};

use super::{Module, ModuleArgs, ModuleError, Plan, PlanContext, TaskOutcome};

/// Outcome key the executor takes the pause from (never shown or registered).
pub const PAUSE_SECONDS: &str = "_turbo_pause_seconds";

pub struct Pause;

fn number(args: &ModuleArgs, name: &'static str) -> Result<Option<f64>, ModuleError> {
    let value = match args.get(name) {
        None | Some(Value::Null) => return Ok(None),
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

    fn arg_names(&self) -> &'static [&'static str] {
        &["seconds", "minutes", "prompt", "echo"]
    }

    fn plan(&self, args: &ModuleArgs, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let seconds = number(args, "seconds")?;
        let minutes = number(args, "minutes")?;
        if seconds.is_some() && minutes.is_some() {
            return Err(ModuleError::Invalid(
                "parameters are mutually exclusive: minutes|seconds".into(),
            ));
        }
        let echo = !matches!(args.get("echo"), Some(Value::Bool(false)));
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
        data.insert(PAUSE_SECONDS.into(), Value::from(wait));
        Ok(Plan::Done(TaskOutcome {
            data,
            ..TaskOutcome::default()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan(args: Value) -> Result<TaskOutcome, ModuleError> {
        let args = args.as_object().unwrap().clone();
        match Pause.plan(&args, &PlanContext::new(std::path::Path::new(".")))? {
            Plan::Done(outcome) => Ok(outcome),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn seconds_and_minutes_become_a_wait() {
        let o = plan(json!({"seconds": 2})).unwrap();
        assert_eq!(o.data[PAUSE_SECONDS], json!(2.0));
        assert_eq!(o.data["stdout"], "Paused for 2.0 seconds");
        assert!(!o.changed && !o.failed);
        let o = plan(json!({"minutes": "0.5"})).unwrap();
        assert_eq!(o.data[PAUSE_SECONDS], json!(30.0));
        assert_eq!(o.data["stdout"], "Paused for 0.5 minutes");
    }

    #[test]
    fn a_prompt_without_a_time_returns_at_once_with_a_warning() {
        let o = plan(json!({"prompt": "Continue?"})).unwrap();
        assert_eq!(o.data[PAUSE_SECONDS], json!(0.0));
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
        assert!(plan(json!({"seconds": 1, "minutes": 1})).is_err());
    }
}
