//! Requests that need not wait for each other's replies: a transfer between two agents
//! (or from the controller to one), where an agent works on one request while the next
//! crosses the wire. Waiting for every reply, as a plan's steps do, leaves the link idle
//! half the time; a flow keeps a few requests in flight, on either end, as copy's
//! uploads keep three.
//!
//! A flow is a plan's state machine, as pure as a step: it says what to send, the
//! executor sends it and hands back the replies in the order the requests went (whatever
//! the agent), and the flow says when it is over and what plan follows.

use turbo_proto::{Op, OpResult};

use super::{ModuleError, Peer, Plan};

pub trait Flow: Send + Sync {
    /// What to do now. Asked again after every request sent and every reply answered.
    fn next(&mut self) -> FlowStep;

    /// The reply to the oldest request still in flight.
    fn answer(&mut self, reply: OpResult) -> Result<(), ModuleError>;
}

pub enum FlowStep {
    /// Send this request now, before the replies to those in flight.
    Send(Peer, Op),
    /// Nothing more can go before the oldest reply is answered.
    Wait,
    /// The flow is over: go on with this plan. Requests still in flight (a failure cut
    /// the transfer short) are waited for and their replies dropped.
    Then(Plan),
}

/// `flow`, then `after` on the plan it ends with (a module that runs another module's
/// plan, or adds to its outcome, as it does for a step's).
pub fn and_then(
    flow: Box<dyn Flow>,
    after: impl FnOnce(Plan) -> Result<Plan, ModuleError> + Send + Sync + 'static,
) -> Box<dyn Flow> {
    Box::new(AndThen {
        flow,
        after: Some(Box::new(after)),
    })
}

type After = Box<dyn FnOnce(Plan) -> Result<Plan, ModuleError> + Send + Sync>;

struct AndThen {
    flow: Box<dyn Flow>,
    after: Option<After>,
}

impl Flow for AndThen {
    fn next(&mut self) -> FlowStep {
        match self.flow.next() {
            FlowStep::Then(plan) => {
                let after = self.after.take().expect("a flow ends once");
                FlowStep::Then(
                    after(plan).unwrap_or_else(|e| Plan::Done(super::TaskOutcome::from_error(e))),
                )
            }
            other => other,
        }
    }

    fn answer(&mut self, reply: OpResult) -> Result<(), ModuleError> {
        self.flow.answer(reply)
    }
}
