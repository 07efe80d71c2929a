//! The task keyword `timeout:`. Its seconds travel with each request (`timeout_ms`, for
//! every op of it: a loop's items each have their own, as in Ansible); the agent stops
//! a command or module that outlives them, its whole process group, and answers
//! `TimedOut`, which fails the item with Ansible's message and `timedout` result and
//! bypasses `failed_when` and `until`, as Ansible's exception does. Ops that start no
//! process are not stopped by the agent: the controller's backstop gives up on the
//! reply a little after the agent would have answered, and drops the session.

use std::time::Duration;

use serde_json::{Map, Value, json};
use turbo_proto::{Op, OpResult};

use crate::agent_session::{AgentSession, PendingReply};
use crate::modules::TaskOutcome;
use crate::playbook::Task;
use crate::template::Templar;

/// Ansible's bound (BSD's alarm limit).
const MAX_TIMEOUT: i64 = 100_000_000;

/// What the backstop adds to the agent's own deadline: its TERM-to-KILL grace and the
/// reply's way back.
const BACKSTOP_SLACK: Duration = Duration::from_secs(5);

/// The task's `timeout` on this host, in seconds; `None` for none (unset or 0).
pub(super) fn task_timeout(
    templar: &Templar,
    task: &Task,
    vars: &minijinja::Value,
) -> Result<Option<u64>, String> {
    let Some(written) = &task.keywords.timeout else {
        return Ok(None);
    };
    let value = templar
        .render_value(&Value::String(written.clone()), vars)
        .map_err(|e| format!("The field 'timeout' has an invalid value: {e}"))?;
    let seconds = seconds_of(&value)?;
    if !(0..=MAX_TIMEOUT).contains(&seconds) {
        return Err(format!(
            "Timeout {seconds} is invalid, it must be between 0 and {MAX_TIMEOUT}."
        ));
    }
    Ok((seconds > 0).then_some(seconds as u64))
}

/// Ansible's `isa='int'`: an integer, or a number or string that is one exactly.
fn seconds_of(value: &Value) -> Result<i64, String> {
    let refused = || {
        let shown = match value {
            Value::String(s) => format!("'{s}'"),
            other => other.to_string(),
        };
        format!("The value {shown} could not be converted to 'int'.")
    };
    match value {
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(i),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e15 => Ok(f as i64),
            _ => Err(refused()),
        },
        Value::String(s) => {
            let s = s.trim();
            s.parse::<i64>()
                .ok()
                .or_else(|| {
                    let f = s.parse::<f64>().ok()?;
                    (f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15).then_some(f as i64)
                })
                .ok_or_else(refused)
        }
        _ => Err(refused()),
    }
}

/// The item's result when it ran past its `timeout`, as Ansible shapes it.
pub(super) fn timed_out(period: u64) -> TaskOutcome {
    let mut data = Map::new();
    data.insert(
        "timedout".into(),
        json!({
            "frame": "Configure `DISPLAY_TRACEBACK` to see a traceback on timeout errors.",
            "period": period,
        }),
    );
    data.insert(
        "exception".into(),
        Value::String("(traceback unavailable)".into()),
    );
    TaskOutcome {
        failed: true,
        msg: Some(format!("Task failed: Timed out after {period} second(s).")),
        data,
        ..TaskOutcome::default()
    }
}

/// Whether a reply is the agent's "stopped at the deadline" (alone, not in a batch).
pub(super) fn is_timed_out(result: &OpResult) -> bool {
    matches!(result, OpResult::TimedOut { .. })
}

/// One request with the task's timeout, and the backstop: with a timeout, the reply is
/// waited for at most the timeout of each of its ops and some slack; past that, every op
/// counts as timed out and the session, stuck behind it, is cancelled.
pub(super) async fn call(
    session: &AgentSession,
    op: Op,
    flags: (bool, bool),
    timeout: Option<u64>,
) -> Result<OpResult, String> {
    send(session, op, flags, timeout).await?.reply().await
}

/// A request on its way, with what its backstop needs.
pub(super) struct Sent {
    session: AgentSession,
    pending: PendingReply,
    /// The ops of a batch, `None` for a lone op.
    ops: Option<usize>,
    timeout: Option<u64>,
}

/// Queues one request with the task's timeout; requests queued one after another reach
/// the agent in that order. Its reply is [`Sent::reply`].
pub(super) async fn send(
    session: &AgentSession,
    op: Op,
    (check, diff): (bool, bool),
    timeout: Option<u64>,
) -> Result<Sent, String> {
    let ops = match &op {
        Op::Batch(ops) => Some(ops.len()),
        _ => None,
    };
    let pending = session
        .send_timed(op, check, diff, 0, timeout.map(|s| s * 1000))
        .await
        .map_err(|e| e.to_string())?;
    Ok(Sent {
        session: session.clone(),
        pending,
        ops,
        timeout,
    })
}

impl Sent {
    /// The reply, or past the backstop every op timed out (and the session is cancelled).
    pub(super) async fn reply(self) -> Result<OpResult, String> {
        let Some(seconds) = self.timeout else {
            return self.pending.await.map_err(|e| e.to_string());
        };
        let wait = backstop(seconds, self.ops.unwrap_or(1));
        match tokio::time::timeout(wait, self.pending).await {
            Ok(reply) => reply.map_err(|e| e.to_string()),
            Err(_) => {
                let session = self.session;
                tokio::spawn(async move { session.cancel().await });
                let after_ms = seconds * 1000;
                Ok(match self.ops {
                    Some(n) => OpResult::Batch(vec![OpResult::TimedOut { after_ms }; n]),
                    None => OpResult::TimedOut { after_ms },
                })
            }
        }
    }
}

/// How long the controller waits for a request of `ops` ops with a timeout of `seconds`.
pub(in crate::executor) fn backstop(seconds: u64, ops: usize) -> Duration {
    Duration::from_secs(seconds.saturating_mul(ops.max(1) as u64)) + BACKSTOP_SLACK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_integers_as_ansible_converts_them() {
        assert_eq!(seconds_of(&json!(3)), Ok(3));
        assert_eq!(seconds_of(&json!("4")), Ok(4));
        assert_eq!(seconds_of(&json!(2.0)), Ok(2));
        assert_eq!(seconds_of(&json!(" 5.0 ")), Ok(5));
        assert_eq!(
            seconds_of(&json!("2.5")),
            Err("The value '2.5' could not be converted to 'int'.".into())
        );
        assert_eq!(
            seconds_of(&json!("abc")),
            Err("The value 'abc' could not be converted to 'int'.".into())
        );
        assert!(seconds_of(&json!([1])).is_err());
    }

    #[test]
    fn the_timed_out_result_has_ansibles_shape() {
        let outcome = timed_out(2);
        assert!(outcome.failed && !outcome.changed);
        assert_eq!(
            outcome.msg.as_deref(),
            Some("Task failed: Timed out after 2 second(s).")
        );
        assert_eq!(outcome.data["timedout"]["period"], json!(2));
        assert_eq!(
            outcome.data["timedout"]["frame"],
            json!("Configure `DISPLAY_TRACEBACK` to see a traceback on timeout errors.")
        );
    }

    #[test]
    fn the_backstop_waits_for_every_op_and_the_slack() {
        assert_eq!(backstop(2, 1), Duration::from_secs(7));
        assert_eq!(backstop(2, 3), Duration::from_secs(11));
    }
}
