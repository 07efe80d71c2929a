//! Squashing a loop's package names into one manager call (`Caps::squash_loop`): the
//! items whose current steps share a [`Squash`] key go to the agent as one op over all
//! their names, and each item reads the one reply as its own.

use std::collections::HashSet;

use turbo_proto::{Op, OpResult};

use super::{ItemRun, ItemState};
use crate::modules::Squash;

/// The requests of one round: each sends `op` for the items in `members`.
pub(super) struct Request {
    pub op: Op,
    pub members: Vec<usize>,
}

/// Groups the `remote` items' ops into requests, in the order of their first item:
/// items whose steps squash with equal keys (and run with the same environment) share
/// one request, unless `solo` says their shared call failed before.
pub(super) fn requests(
    runs: &[ItemRun],
    remote: &[usize],
    squash: bool,
    solo: &HashSet<usize>,
) -> Vec<Request> {
    let mut requests: Vec<Request> = Vec::new();
    let mut keyed: Vec<(usize, &Squash)> = Vec::new();
    for &i in remote {
        let own = runs[i].state.op().expect("remote items have an op").clone();
        let shared = match &runs[i].state {
            ItemState::Step(_, next) if squash && !solo.contains(&i) => next.squash(),
            _ => None,
        };
        let Some(shared) = shared else {
            requests.push(Request {
                op: own,
                members: vec![i],
            });
            continue;
        };
        let partner = keyed
            .iter()
            .find(|(k, s)| s.key == shared.key && runs[requests[*k].members[0]].env == runs[i].env);
        match partner {
            Some(&(k, _)) => requests[k].members.push(i),
            None => {
                keyed.push((requests.len(), shared));
                requests.push(Request {
                    op: own,
                    members: vec![i],
                });
            }
        }
    }
    for (k, shared) in keyed {
        let members = &requests[k].members;
        if members.len() < 2 {
            continue;
        }
        let mut names: Vec<String> = Vec::new();
        for &i in members {
            if let ItemState::Step(_, next) = &runs[i].state
                && let Some(s) = next.squash()
            {
                for name in &s.names {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
            }
        }
        requests[k].op = (shared.build)(&names);
    }
    requests
}

/// Whether a shared call did its work: a command that exited 0, or a batch of steps that
/// all did. Anything else is run again item by item, so each item meets its own error.
pub(super) fn succeeded(reply: &OpResult) -> bool {
    match reply {
        OpResult::Exec(x) => x.rc == 0,
        OpResult::Batch(results) => results.iter().all(|r| match r {
            OpResult::Exec(x) => x.rc == 0,
            OpResult::Error(_) => false,
            _ => true,
        }),
        OpResult::Error(_) => false,
        _ => true,
    }
}
