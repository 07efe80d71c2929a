//! `wait_for_connection` on the executor's side, as Ansible's action: after `delay`,
//! try the host until `timeout`, `sleep` seconds apart. A try is a ping of the agent (a
//! cheap `Stat`); when it fails, the host's connections are dropped so that the next try
//! opens a new one, as Ansible resets its connection between tries.

use std::time::{Duration, Instant};

use serde_json::json;
use turbo_proto::{Op, OpResult};

use super::Target;
use crate::modules::TaskOutcome;
use crate::modules::wait_for_connection::Reconnect;

pub(super) async fn wait_for_connection(target: &Target<'_>, wait: Reconnect) -> TaskOutcome {
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(wait.delay)).await;
    let end = Instant::now() + Duration::from_secs(wait.timeout);
    let mut error = String::from("no attempt was made");
    while Instant::now() < end {
        let attempt = tokio::time::timeout(
            Duration::from_secs(wait.connect_timeout.max(1)),
            ping(target),
        )
        .await;
        match attempt {
            Ok(Ok(())) => return elapsed(TaskOutcome::default(), start),
            Ok(Err(e)) => error = e,
            Err(_) => error = format!("no answer within {}s", wait.connect_timeout),
        }
        // A dead connection stays cached otherwise: the next try must open a new one.
        target.via.sessions.lock().expect("sessions lock").clear();
        tokio::time::sleep(Duration::from_secs(wait.sleep)).await;
    }
    elapsed(
        TaskOutcome::failed(format!("timed out waiting for ping module test: {error}")),
        start,
    )
}

async fn ping(target: &Target<'_>) -> Result<(), String> {
    let session = target
        .ctx
        .session(target.via, target.play, target.task, target.become_)
        .await
        .map_err(|e| match e {
            // As the unreachable result words it.
            super::super::SessionFailure::Unreachable(m) => {
                format!("Failed to connect to the host via ssh: {m}")
            }
            super::super::SessionFailure::Failed(m) => m,
        })?;
    let probe = Op::Stat {
        path: "/".into(),
        checksum: None,
        follow: false,
    };
    match session.call(probe, false, false).await {
        Ok(OpResult::Stat(_)) => Ok(()),
        Ok(other) => Err(format!("ping test failed: {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

fn elapsed(mut out: TaskOutcome, start: Instant) -> TaskOutcome {
    out.data
        .insert("elapsed".into(), json!(start.elapsed().as_secs()));
    out
}
