//! Steps addressed to another agent than the task's session ([`Peer`]), and flows:
//! synchronize copies between two places (the host and the controller, or the host and
//! the host it is delegated to), and each place has its own agent. A step goes one item at
//! a time, one request; a flow keeps its requests in flight, on both agents at once, and
//! gets their replies in the order they went. Either way the item's plan moves on with
//! the replies as with any step.

use std::collections::{HashMap, VecDeque};

use turbo_proto::{Op, OpResult};

use super::prepare::{agent_check_mode, diff_mode};
use super::timeout::Sent;
use super::transport::{Round, host_unreachable};
use super::{ItemRun, ItemState, Target};
use crate::agent_session::AgentSession;
use crate::executor::SessionFailure;
use crate::modules::{Flow, FlowStep, Peer, Plan, TaskOutcome};

/// Sends the current step of every `running` item addressed to a peer, or runs its flow,
/// and resumes its plan with the replies. `Idle` when no item had either.
pub(super) async fn send_to_peers(
    target: &Target<'_>,
    runs: &mut [ItemRun],
    running: &[usize],
) -> Round {
    let waiting: Vec<usize> = running
        .iter()
        .copied()
        .filter(|&i| match &runs[i].state {
            ItemState::Flow(_) => true,
            state => state.op().is_some() && state.peer() != Peer::Task,
        })
        .collect();
    if waiting.is_empty() {
        return Round::Idle;
    }
    let mut sessions = Sessions::default();
    for i in waiting {
        let state = std::mem::replace(&mut runs[i].state, ItemState::Done(TaskOutcome::default()));
        let went = match state {
            ItemState::Step(op, next) => {
                let peer = next.peer();
                match request(target, &mut sessions, peer, op).await {
                    Err(lost) => Err(lost),
                    Ok(Err(outcome)) => Ok(ItemState::Done(outcome)),
                    Ok(Ok(reply)) => Ok(match next.resume(reply) {
                        Ok(plan) => ItemState::of(plan),
                        Err(e) => ItemState::Done(TaskOutcome::from_error(e)),
                    }),
                }
            }
            ItemState::Flow(flow) => {
                run_flow(target, &mut sessions, flow)
                    .await
                    .map(|plan| match plan {
                        Ok(plan) => ItemState::of(plan),
                        Err(outcome) => ItemState::Done(outcome),
                    })
            }
            other => Ok(other),
        };
        match went {
            Ok(state) => runs[i].state = state,
            Err(Lost) => return Round::Lost,
        }
    }
    Round::Went
}

/// The host turned out unreachable (reported).
struct Lost;

/// The sessions of the peers this round has talked to.
#[derive(Default)]
struct Sessions(HashMap<Peer, AgentSession>);

impl Sessions {
    /// `peer`'s session, opened (or found) once per round; `Ok(Err(outcome))` fails the
    /// item: the controller's own agent could not start.
    async fn of(
        &mut self,
        target: &Target<'_>,
        peer: Peer,
    ) -> Result<Result<AgentSession, TaskOutcome>, Lost> {
        if let Some(session) = self.0.get(&peer) {
            return Ok(Ok(session.clone()));
        }
        let Target {
            ctx,
            play,
            task,
            host,
            via,
            become_,
            ..
        } = *target;
        let session = match peer {
            Peer::Task => ctx.session(via, play, task, become_).await,
            Peer::Host => ctx.session(host, play, task, become_).await,
            Peer::HostAsLogin => ctx.session(host, play, task, None).await,
            Peer::Delegate => ctx.session(via, play, task, None).await,
            Peer::Controller => ctx.controller_session().await,
        };
        match session {
            Ok(session) => {
                self.0.insert(peer, session.clone());
                Ok(Ok(session))
            }
            Err(SessionFailure::Unreachable(message)) if peer != Peer::Controller => {
                host_unreachable(ctx, task, host, &message);
                Err(Lost)
            }
            Err(SessionFailure::Unreachable(message) | SessionFailure::Failed(message)) => {
                Ok(Err(TaskOutcome::failed(message)))
            }
        }
    }
}

/// One request to `peer` and its reply.
async fn request(
    target: &Target<'_>,
    sessions: &mut Sessions,
    peer: Peer,
    op: Op,
) -> Result<Result<OpResult, TaskOutcome>, Lost> {
    let session = match sessions.of(target, peer).await? {
        Ok(session) => session,
        Err(outcome) => return Ok(Err(outcome)),
    };
    let sent = match send(target, &session, op).await {
        Ok(sent) => sent,
        Err(message) => return failure(target, peer, &session, message),
    };
    match sent.reply().await {
        Ok(reply) => Ok(match timed_out(target, &reply) {
            Some(outcome) => Err(outcome),
            None => Ok(reply),
        }),
        Err(message) => failure(target, peer, &session, message),
    }
}

async fn send(target: &Target<'_>, session: &AgentSession, op: Op) -> Result<Sent, String> {
    let flags = (
        agent_check_mode(target.ctx, target.task),
        diff_mode(target.ctx, target.task),
    );
    super::timeout::send(session, op, flags, target.timeout).await
}

/// A request that got no reply: a host whose connection went is unreachable, anything
/// else (the controller's own agent, an agent that died) fails the item.
fn failure<T>(
    target: &Target<'_>,
    peer: Peer,
    session: &AgentSession,
    message: String,
) -> Result<Result<T, TaskOutcome>, Lost> {
    if peer != Peer::Controller && session.ended().is_some() {
        host_unreachable(target.ctx, target.task, target.host, &message);
        return Err(Lost);
    }
    Ok(Err(TaskOutcome::failed(message)))
}

/// A reply that says the task's `timeout:` ran out ends the item with Ansible's result.
fn timed_out(target: &Target<'_>, reply: &OpResult) -> Option<TaskOutcome> {
    let out = match reply {
        OpResult::Batch(results) => results.iter().any(super::timeout::is_timed_out),
        single => super::timeout::is_timed_out(single),
    };
    target
        .timeout
        .filter(|_| out)
        .map(super::timeout::timed_out)
}

/// Runs a flow to its end: what it says to send goes at once, and each reply, in the
/// order the requests went, goes back to it.
async fn run_flow(
    target: &Target<'_>,
    sessions: &mut Sessions,
    mut flow: Box<dyn Flow>,
) -> Result<Result<Plan, TaskOutcome>, Lost> {
    let mut in_flight: VecDeque<(Peer, AgentSession, Sent)> = VecDeque::new();
    let ended = loop {
        match flow.next() {
            FlowStep::Send(peer, op) => {
                let session = match sessions.of(target, peer).await? {
                    Ok(session) => session,
                    Err(outcome) => break Err(outcome),
                };
                match send(target, &session, op).await {
                    Ok(sent) => in_flight.push_back((peer, session, sent)),
                    Err(message) => break failure(target, peer, &session, message)?,
                }
            }
            FlowStep::Wait => {
                let Some((peer, session, sent)) = in_flight.pop_front() else {
                    break Err(TaskOutcome::failed(
                        "agent protocol error: a transfer waits for a reply to nothing",
                    ));
                };
                let reply = match sent.reply().await {
                    Ok(reply) => reply,
                    Err(message) => break failure(target, peer, &session, message)?,
                };
                if let Some(outcome) = timed_out(target, &reply) {
                    break Err(outcome);
                }
                if let Err(e) = flow.answer(reply) {
                    break Err(TaskOutcome::from_error(e));
                }
            }
            FlowStep::Then(plan) => break Ok(plan),
        }
    };
    // What is still in flight runs on the agents anyway; the next step waits for it.
    for (_, _, sent) in in_flight {
        let _ = sent.reply().await;
    }
    Ok(ended)
}
