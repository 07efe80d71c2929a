//! Steps addressed to another agent than the task's session ([`Peer`]): synchronize
//! copies between two places (the host and the controller, or the host and the host it
//! is delegated to), and each place has its own agent. Such steps go one item at a time,
//! one request each; the item's plan moves on with the reply as with any step.

use super::prepare::{agent_check_mode, diff_mode};
use super::transport::{Round, host_unreachable};
use super::{ItemRun, ItemState, Target};
use crate::executor::SessionFailure;
use crate::modules::{Peer, TaskOutcome};

/// Sends the current step of every `running` item addressed to a peer and resumes its
/// plan with the reply. `Idle` when no item had such a step.
pub(super) async fn send_to_peers(
    target: &Target<'_>,
    runs: &mut [ItemRun],
    running: &[usize],
) -> Round {
    let waiting: Vec<usize> = running
        .iter()
        .copied()
        .filter(|&i| runs[i].state.op().is_some() && runs[i].state.peer() != Peer::Task)
        .collect();
    if waiting.is_empty() {
        return Round::Idle;
    }
    let Target {
        ctx,
        play,
        task,
        host,
        via,
        become_,
        timeout,
        ..
    } = *target;
    let flags = (agent_check_mode(ctx, task), diff_mode(ctx, task));
    for i in waiting {
        let peer = runs[i].state.peer();
        let session = match peer {
            Peer::Host | Peer::Task => ctx.session(host, play, task, become_).await,
            Peer::Delegate => ctx.session(via, play, task, None).await,
            Peer::Controller => ctx.controller_session().await,
        };
        let session = match session {
            Ok(session) => session,
            Err(SessionFailure::Unreachable(message)) if peer != Peer::Controller => {
                host_unreachable(ctx, task, host, &message);
                return Round::Lost;
            }
            Err(SessionFailure::Unreachable(message) | SessionFailure::Failed(message)) => {
                runs[i].state = ItemState::Done(TaskOutcome::failed(message));
                continue;
            }
        };
        let state = std::mem::replace(&mut runs[i].state, ItemState::Done(TaskOutcome::default()));
        let ItemState::Step(op, next) = state else {
            unreachable!("only steps name a peer");
        };
        let reply = match super::timeout::call(&session, op, flags, timeout).await {
            Ok(reply) => reply,
            Err(message) => {
                if peer != Peer::Controller && session.ended().is_some() {
                    host_unreachable(ctx, task, host, &message);
                    return Round::Lost;
                }
                runs[i].state = ItemState::Done(TaskOutcome::failed(message));
                continue;
            }
        };
        runs[i].state = match next.resume(reply) {
            Ok(plan) => ItemState::of(plan),
            Err(e) => ItemState::Done(TaskOutcome::from_error(e)),
        };
    }
    Round::Went
}
