//! `reboot` on the executor's side, as ansible-core 2.21's reboot action: read the boot
//! id, run the shutdown command (a connection that drops under it is a reboot under way),
//! then, over new connections, retry the boot id until it differs and the test command
//! until it passes, each with Ansible's back-off (2^n seconds plus up to one, at most 12)
//! within `reboot_timeout`.

use std::time::{Duration, Instant};

use serde_json::json;
use turbo_proto::{Command, Exec, FactValue, Op, OpResult};

use super::Target;
use crate::modules::TaskOutcome;
use crate::modules::reboot::{Distribution, RebootSpec};

pub(super) async fn reboot(target: &Target<'_>, spec: &RebootSpec) -> TaskOutcome {
    let mut out = rebooted(target, spec).await;
    if out.failed {
        // What ansible-core 2.21 registers for a failure its action reports.
        out.data
            .insert("exception".into(), json!("(traceback unavailable)"));
    }
    out
}

async fn rebooted(target: &Target<'_>, spec: &RebootSpec) -> TaskOutcome {
    if target
        .ctx
        .connects_locally(target.via, target.play, target.task)
    {
        let mut out = TaskOutcome::failed(format!(
            "Running {} with local connection would reboot the control node.",
            target.task.action
        ));
        out.data.insert("elapsed".into(), json!(0));
        out.data.insert("rebooted".into(), json!(false));
        return out;
    }
    let distribution = match distribution(target).await {
        Ok(d) => d,
        Err(msg) => return TaskOutcome::failed(msg),
    };
    let boot_time_command = spec.boot_time_command(&distribution);
    let previous = match boot_time(target, &boot_time_command).await {
        Ok(id) => id,
        Err(msg) => {
            let mut out = TaskOutcome::failed(msg);
            // Ansible's key, as it spells it here.
            out.data.insert("reboot".into(), json!(false));
            return out;
        }
    };
    let (program, args) = spec.shutdown(&distribution);
    let program = match find_program(target, &program, &spec.search_paths).await {
        Ok(path) => path,
        Err(msg) => return TaskOutcome::failed(msg),
    };
    let command = format!("{program} {args}");
    let ran = within(ATTEMPT, run(target, &command)).await;
    let start = Instant::now();
    match ran {
        // The connection dropping under the command is the reboot under way.
        Err(_) => {}
        Ok((0, _, _)) => {}
        Ok((_, stdout, stderr)) => {
            let mut out = TaskOutcome::failed(format!(
                "Reboot command failed. Error was: '{}, {}'",
                stdout.trim(),
                stderr.trim()
            ));
            out.data.insert("rebooted".into(), json!(false));
            out.data
                .insert("elapsed".into(), json!(start.elapsed().as_secs()));
            return out;
        }
    }
    // Whatever happens next needs a new connection.
    forget_sessions(target);
    tokio::time::sleep(Duration::from_secs(spec.post_reboot_delay)).await;
    let timeout = Duration::from_secs(spec.reboot_timeout);
    let checked = until_success(
        target,
        timeout,
        spec.connect_timeout,
        "last boot time check",
        || async {
            let current = boot_time(target, &boot_time_command).await?;
            if current.is_empty() || current == previous {
                return Err("boot time has not changed".to_string());
            }
            Ok(())
        },
    )
    .await;
    let test_command = spec.test_command(&distribution);
    let tested = match checked {
        Ok(()) => {
            until_success(
                target,
                timeout,
                spec.connect_timeout,
                "post-reboot test command",
                || async {
                    match run(target, &test_command).await? {
                        (0, _, _) => Ok(()),
                        (_, stdout, stderr) => {
                            Err(format!("Test command failed: {stderr} {stdout}"))
                        }
                    }
                },
            )
            .await
        }
        Err(timed_out) => Err(timed_out),
    };
    let mut out = match tested {
        Ok(()) => TaskOutcome {
            changed: true,
            ..TaskOutcome::default()
        },
        Err(timed_out) => TaskOutcome::failed(timed_out),
    };
    out.data.insert("rebooted".into(), json!(true));
    out.data
        .insert("elapsed".into(), json!(start.elapsed().as_secs()));
    out
}

/// Tries `attempt` until it succeeds, dropping the host's connections after a failure
/// so that the next try opens a new one; Ansible's words when time runs out.
async fn until_success<F, Fut>(
    target: &Target<'_>,
    timeout: Duration,
    connect_timeout: Option<u64>,
    what: &str,
    attempt: F,
) -> Result<(), String>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let end = Instant::now() + timeout;
    let mut failures = 0u32;
    let limit = connect_timeout.map_or(ATTEMPT, Duration::from_secs);
    while Instant::now() < end {
        if within(limit, attempt()).await.is_ok() {
            return Ok(());
        }
        forget_sessions(target);
        let jitter = f64::from(rand_below_1000()) / 1000.0;
        let sleep = (2f64.powi(failures.min(8) as i32)).min(12.0) + jitter;
        failures += 1;
        // The whole back-off, past the deadline too, as Ansible sleeps it.
        tokio::time::sleep(Duration::from_secs_f64(sleep)).await;
    }
    Err(format!(
        "Timed out waiting for {what} (timeout={})",
        timeout.as_secs()
    ))
}

/// How long one try may take when `connect_timeout` does not say: a host going down
/// can leave a request unanswered until the connection's keepalives give up.
const ATTEMPT: Duration = Duration::from_secs(30);

async fn within<T>(
    limit: Duration,
    attempt: impl std::future::Future<Output = Result<T, String>>,
) -> Result<T, String> {
    tokio::time::timeout(limit, attempt)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {}s", limit.as_secs())))
}

/// Up to a second of jitter, as Ansible's `secrets.randbelow(1000) / 1000`.
fn rand_below_1000() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    nanos % 1000
}

fn session_failure(failure: super::super::SessionFailure) -> String {
    match failure {
        super::super::SessionFailure::Unreachable(m) => {
            format!("Failed to connect to the host via ssh: {m}")
        }
        super::super::SessionFailure::Failed(m) => m,
    }
}

fn forget_sessions(target: &Target<'_>) {
    target.via.sessions.lock().expect("sessions lock").clear();
}

/// The name, major version and family `setup`'s minimal facts give.
async fn distribution(target: &Target<'_>) -> Result<Distribution, String> {
    let session = target
        .ctx
        .session(target.via, target.play, target.task, target.become_)
        .await
        .map_err(session_failure)?;
    let facts = match session
        .call(
            Op::Facts {
                subsets: vec!["min".into()],
            },
            false,
            false,
        )
        .await
    {
        Ok(OpResult::Facts(facts)) => facts,
        Ok(other) => {
            return Err(format!(
                "Failed to determine system distribution. {other:?}"
            ));
        }
        Err(e) => return Err(format!("Failed to determine system distribution. {e}")),
    };
    let fact = |name: &str| {
        facts.iter().find_map(|(k, v)| match v {
            FactValue::Str(s) if k == name => Some(s.to_lowercase()),
            _ => None,
        })
    };
    let missing = |name: &str| {
        format!("Failed to get distribution information. Missing \"ansible_{name}\" in output.")
    };
    Ok(Distribution {
        name: fact("distribution").ok_or_else(|| missing("distribution"))?,
        version: fact("distribution_version")
            .ok_or_else(|| missing("distribution_version"))?
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string(),
        family: fact("os_family").ok_or_else(|| missing("os_family"))?,
    })
}

/// `command`'s output with surrounding space trimmed, or Ansible's failure.
async fn boot_time(target: &Target<'_>, command: &str) -> Result<String, String> {
    match run(target, command).await? {
        (0, stdout, _) => Ok(stdout.trim().to_string()),
        (rc, stdout, stderr) => Err(format!(
            "reboot: failed to get host boot time info, rc: {rc}, stdout: {stdout}, stderr: {stderr}"
        )),
    }
}

/// A program named without a directory, looked up as the action's `find` does: the
/// first of `search_paths` that holds it.
async fn find_program(
    target: &Target<'_>,
    program: &str,
    search_paths: &[String],
) -> Result<String, String> {
    if program.starts_with('/') {
        return Ok(program.to_string());
    }
    let session = target
        .ctx
        .session(target.via, target.play, target.task, target.become_)
        .await
        .map_err(session_failure)?;
    let candidates: Vec<String> = search_paths
        .iter()
        .map(|dir| format!("{}/{program}", dir.trim_end_matches('/')))
        .collect();
    let stats = candidates
        .iter()
        .map(|path| Op::Stat {
            path: path.clone(),
            checksum: None,
            follow: false,
        })
        .collect();
    if let Ok(OpResult::Batch(found)) = session.call(Op::Batch(stats), false, false).await {
        for (path, stat) in candidates.iter().zip(found) {
            if matches!(stat, OpResult::Stat(s) if s.exists) {
                return Ok(path.clone());
            }
        }
    }
    let listed: Vec<String> = search_paths.iter().map(|p| format!("'{p}'")).collect();
    Err(format!(
        "Task failed: Unable to find command \"{program}\" in search paths: [{}]",
        listed.join(", ")
    ))
}

/// `command` through the shell as the task's user (become included, as Ansible's
/// sudoable low-level command): rc, stdout, stderr; `Err` when the connection failed.
async fn run(target: &Target<'_>, command: &str) -> Result<(i32, String, String), String> {
    let session = target
        .ctx
        .session(target.via, target.play, target.task, target.become_)
        .await
        .map_err(session_failure)?;
    let op = Op::Exec(Exec::plain(Command::Shell {
        script: command.to_string(),
        executable: None,
    }));
    match session.call(op, false, false).await {
        Ok(OpResult::Exec(out)) => Ok((
            out.rc,
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
        Ok(OpResult::Error(e)) => Ok((1, String::new(), e.message)),
        Ok(other) => Err(format!("unexpected reply {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}
