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
        let partner = keyed.iter().find(|(k, s)| {
            s.key == shared.key
                && runs[requests[*k].members[0]].env == runs[i].env
                && requests[*k]
                    .members
                    .iter()
                    .all(|&m| compatible(&runs[m].state, shared))
        });
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

/// Whether an item may share a call with a member: they name the same things, or none of
/// the same packages ([`Squash::packages`]).
fn compatible(member: &ItemState, shared: &Squash) -> bool {
    let ItemState::Step(_, next) = member else {
        return true;
    };
    let Some(theirs) = next.squash() else {
        return true;
    };
    theirs.names == shared.names || !theirs.packages.iter().any(|p| shared.packages.contains(p))
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::modules::{ModuleError, Next, Plan};

    fn squash(names: &[&str]) -> Squash {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        Squash {
            key: "apt-get install".into(),
            packages: names
                .iter()
                .map(|n| n.split('=').next().unwrap_or(n).to_string())
                .collect(),
            names,
            build: Arc::new(|_| Op::Batch(Vec::new())),
        }
    }

    fn step(names: &[&str]) -> ItemState {
        let next = Next::squashable(squash(names), |_| -> Result<Plan, ModuleError> {
            unreachable!()
        });
        ItemState::Step(Op::Batch(Vec::new()), next)
    }

    #[test]
    fn two_versions_of_one_package_never_share_a_call() {
        assert!(compatible(&step(&["foo=1.0.1"]), &squash(&["bar=2"])));
        assert!(compatible(&step(&["foo=1.0.1"]), &squash(&["foo=1.0.1"])));
        assert!(!compatible(&step(&["foo=1.0.1"]), &squash(&["foo=2.0.0"])));
        assert!(!compatible(
            &step(&["foo=1.0.1", "bar"]),
            &squash(&["bar", "baz"])
        ));
    }
}
