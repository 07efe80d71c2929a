//! synchronize's transfer flows driven against agents in memory: what each end ends up
//! holding, how many requests each flow keeps in flight, what a refusal does, and how
//! many bytes a delta sends.

use std::collections::{HashMap, VecDeque};
use std::io::Cursor;

use serde_json::json;
use sha2::{Digest as _, Sha256};
use turbo_proto::{
    BlockSignatures, DeltaBatch, DeltaEnd, EncodeDelta, EnsureFile, ErrorKind, FileContent,
    FileKind, FileRead, Op, OpError, OpResult, Ownership, READ_BYTES_MAX, StatInfo,
};

use super::super::synchronize_relay::{DeltaRelay, PAGE_BYTES, Relay};
use super::super::synchronize_route::Sender;
use super::super::synchronize_upload::{DeltaUpload, Uploads};
use super::super::{Flow, FlowStep, Peer, Plan, TaskOutcome};
use super::{After, Carry, DELTA_LITERAL_BYTES, IN_FLIGHT, Move};

const SENDER: Peer = Peer::Delegate;
const RECEIVER: Peer = Peer::Host;

type Encoder = crate::delta::DeltaEncoder<BlockSignatures, Cursor<Vec<u8>>>;

/// An agent in memory: files by path, staging files by upload id, delta encodings by id.
#[derive(Default)]
struct Agent {
    files: HashMap<String, Vec<u8>>,
    staged: HashMap<u64, Vec<u8>>,
    encodings: HashMap<u64, (Option<Encoder>, Vec<u8>)>,
    /// Refuses to write this path.
    refuse: Option<String>,
    /// Literal bytes it was sent in deltas.
    literal: u64,
}

fn refused(message: &str) -> OpResult {
    OpResult::Error(OpError {
        kind: ErrorKind::PermissionDenied,
        message: message.to_string(),
    })
}

impl Agent {
    fn run(&mut self, op: Op) -> OpResult {
        match op {
            Op::Batch(ops) => OpResult::Batch(ops.into_iter().map(|op| self.run(op)).collect()),
            Op::ReadFile {
                path,
                offset,
                limit,
            } => {
                let Some(data) = self.files.get(&path) else {
                    return OpResult::Read(FileRead {
                        stat: StatInfo::missing(path),
                        offset,
                        data: Vec::new(),
                        eof: true,
                    });
                };
                let want = limit.unwrap_or(u64::MAX).min(READ_BYTES_MAX as u64);
                let start = (offset as usize).min(data.len());
                let end = (start as u64 + want).min(data.len() as u64) as usize;
                OpResult::Read(FileRead {
                    stat: StatInfo {
                        exists: true,
                        kind: FileKind::File,
                        size: data.len() as u64,
                        ..StatInfo::missing(path)
                    },
                    offset,
                    data: data[start..end].to_vec(),
                    eof: end == data.len(),
                })
            }
            Op::WriteChunk { upload_id, data } => {
                let staged = self.staged.entry(upload_id).or_default();
                staged.extend(data);
                OpResult::Chunk {
                    size: staged.len() as u64,
                }
            }
            Op::WriteDelta {
                upload_id,
                basis,
                instructions,
            } => {
                self.literal += crate::delta::literal_bytes(&instructions);
                let rebuilt = crate::delta::apply(&self.files[&basis], &instructions)
                    .expect("copies within the basis");
                let staged = self.staged.entry(upload_id).or_default();
                staged.extend(rebuilt);
                OpResult::Chunk {
                    size: staged.len() as u64,
                }
            }
            Op::EnsureFile(ensure) => self.ensure(ensure),
            Op::EncodeDelta(request) => self.encode(request),
            other => panic!("unexpected {other:?}"),
        }
    }

    fn ensure(&mut self, ensure: EnsureFile) -> OpResult {
        if self.refuse.as_deref() == Some(&ensure.path) {
            return refused("Permission denied: the receiver refuses");
        }
        let bytes = match ensure.content {
            FileContent::Inline(bytes) => bytes,
            FileContent::Staged { upload_id, sha256 } => {
                let staged = self.staged.remove(&upload_id).expect("staged first");
                if Sha256::digest(&staged)[..] != sha256[..] {
                    return refused("the staged upload hashes to something else");
                }
                staged
            }
            other => panic!("unexpected content {other:?}"),
        };
        let size = bytes.len() as u64;
        self.files.insert(ensure.path, bytes);
        OpResult::Chunk { size }
    }

    fn encode(&mut self, request: EncodeDelta) -> OpResult {
        if let Some(start) = request.start {
            let data = self.files[&start.path].clone();
            let encoder = crate::delta::encoder(
                start.signatures,
                Cursor::new(data.clone()),
                request.literal_cap as usize,
            );
            self.encodings
                .insert(request.delta_id, (Some(encoder), data));
        }
        let (encoder, data) = self
            .encodings
            .get_mut(&request.delta_id)
            .expect("an open encoding");
        let end = DeltaEnd {
            size: data.len() as u64,
            sha256: Sha256::digest(&data[..]).into(),
        };
        let Some(open) = encoder else {
            return OpResult::Delta(DeltaBatch {
                instructions: Vec::new(),
                end: Some(end),
            });
        };
        let instructions = open.next_batch().unwrap().unwrap_or_default();
        let done = open.finished();
        if done {
            *encoder = None;
        }
        OpResult::Delta(DeltaBatch {
            instructions,
            end: done.then_some(end),
        })
    }
}

/// Runs a flow as the executor does: each request goes to its agent when the flow says
/// (an agent runs requests in the order they come), each reply back in the order sent.
/// Gives the plan it ends with and the most requests each end had in flight.
fn drive(
    mut flow: Box<dyn Flow>,
    agents: &mut HashMap<Peer, Agent>,
) -> (Plan, HashMap<Peer, usize>) {
    let mut in_flight: VecDeque<(Peer, OpResult)> = VecDeque::new();
    let mut most: HashMap<Peer, usize> = HashMap::new();
    loop {
        match flow.next() {
            FlowStep::Send(peer, op) => {
                let reply = agents.get_mut(&peer).expect("a known end").run(op);
                in_flight.push_back((peer, reply));
                let now = in_flight.iter().filter(|(p, _)| *p == peer).count();
                let top = most.entry(peer).or_default();
                *top = (*top).max(now);
            }
            FlowStep::Wait => {
                let (_, reply) = in_flight
                    .pop_front()
                    .expect("a wait for a request in flight");
                flow.answer(reply).unwrap();
            }
            FlowStep::Then(plan) => return (plan, most),
        }
    }
}

fn outcome() -> TaskOutcome {
    let mut outcome = TaskOutcome {
        changed: true,
        ..TaskOutcome::default()
    };
    outcome.data.insert("cmd".into(), json!("rsync ..."));
    outcome
}

fn after(sender: Sender) -> After {
    After::new(
        VecDeque::new(),
        Carry {
            sender,
            receiver: RECEIVER,
            outcome: outcome(),
        },
    )
}

fn moving(from: &str, to: &str, size: u64, basis: bool) -> Move {
    Move {
        from: from.to_string(),
        size,
        ensure: EnsureFile {
            path: to.to_string(),
            content: FileContent::Inline(Vec::new()),
            mode: None,
            force: true,
            owner: Ownership::default(),
            validate: None,
            backup: false,
        },
        basis,
    }
}

fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn two_agents(files: &[(&str, &[u8])]) -> HashMap<Peer, Agent> {
    let mut sender = Agent::default();
    for (path, data) in files {
        sender.files.insert(path.to_string(), data.to_vec());
    }
    HashMap::from([(SENDER, sender), (RECEIVER, Agent::default())])
}

#[test]
fn a_relay_keeps_reads_and_writes_in_flight_and_rebuilds_every_file() {
    let small = noise(1000, 1);
    let other = noise(3000, 2);
    let big = noise(2 * PAGE_BYTES as usize + 12_345, 3);
    let mut agents = two_agents(&[("/s/a", &small), ("/s/b", &other), ("/s/big", &big)]);
    let files = VecDeque::from([
        moving("/s/a", "/d/a", 1000, false),
        moving("/s/big", "/d/big", big.len() as u64, false),
        moving("/s/b", "/d/b", 3000, false),
    ]);
    let flow = Relay::new(SENDER, RECEIVER, files, after(Sender::Agent(SENDER)));
    let (plan, most) = drive(Box::new(flow), &mut agents);
    assert_eq!(plan, Plan::Done(outcome()));
    let got = &agents[&RECEIVER].files;
    assert_eq!(got["/d/a"], small);
    assert_eq!(got["/d/b"], other);
    assert!(got["/d/big"] == big, "the paged file differs");
    // The big file's three pages were asked for before the first came back, and its
    // writes went on while the next reads did.
    assert_eq!(most[&SENDER], IN_FLIGHT);
    assert!(most[&RECEIVER] >= 2, "{most:?}");
}

#[test]
fn a_file_that_shrank_or_grew_since_the_listing_goes_as_it_is_now() {
    let shrunk = noise(PAGE_BYTES as usize + 5, 4);
    let grown = noise(3 * PAGE_BYTES as usize + 7, 5);
    let mut agents = two_agents(&[("/s/shrunk", &shrunk), ("/s/grown", &grown)]);
    let files = VecDeque::from([
        moving("/s/shrunk", "/d/shrunk", 3 * PAGE_BYTES, false),
        moving("/s/grown", "/d/grown", PAGE_BYTES + 1, false),
    ]);
    let flow = Relay::new(SENDER, RECEIVER, files, after(Sender::Agent(SENDER)));
    let (plan, _) = drive(Box::new(flow), &mut agents);
    assert_eq!(plan, Plan::Done(outcome()));
    assert!(agents[&RECEIVER].files["/d/shrunk"] == shrunk);
    assert!(agents[&RECEIVER].files["/d/grown"] == grown);
}

#[test]
fn a_refused_write_fails_the_task_as_rsync_does_and_a_vanished_file_too() {
    let big = noise(PAGE_BYTES as usize * 2, 6);
    let mut agents = two_agents(&[("/s/a", b"alpha"), ("/s/big", &big)]);
    agents.get_mut(&RECEIVER).unwrap().refuse = Some("/d/a".into());
    let files = VecDeque::from([
        moving("/s/a", "/d/a", 5, false),
        moving("/s/big", "/d/big", big.len() as u64, false),
    ]);
    let flow = Relay::new(SENDER, RECEIVER, files, after(Sender::Agent(SENDER)));
    let (plan, _) = drive(Box::new(flow), &mut agents);
    let Plan::Done(failed) = plan else {
        panic!("{plan:?}")
    };
    assert!(failed.failed);
    assert_eq!(
        failed.msg.as_deref(),
        Some("Permission denied: the receiver refuses")
    );
    assert_eq!(
        (&failed.data["rc"], &failed.data["cmd"]),
        (&json!(23), &json!("rsync ..."))
    );

    let mut agents = two_agents(&[]);
    let files = VecDeque::from([moving("/s/gone", "/d/gone", 5, false)]);
    let flow = Relay::new(SENDER, RECEIVER, files, after(Sender::Agent(SENDER)));
    let (plan, _) = drive(Box::new(flow), &mut agents);
    let Plan::Done(failed) = plan else {
        panic!("{plan:?}")
    };
    assert_eq!(
        failed.msg.as_deref(),
        Some("rsync: [sender] read errors mapping \"/s/gone\": No such file or directory (2)")
    );
}

/// A file of 12 MiB with `changed` bytes in the middle rewritten.
fn versions(changed: usize) -> (Vec<u8>, Vec<u8>) {
    let old = noise(12 << 20, 7);
    let mut new = old.clone();
    let at = (6 << 20) - changed / 2;
    new[at..at + changed].copy_from_slice(&noise(changed, 8));
    (old, new)
}

#[test]
fn a_delta_relay_sends_the_changed_bytes_with_encodings_in_flight() {
    let (old, new) = versions(5 << 20);
    let mut agents = two_agents(&[("/s/big", &new)]);
    agents
        .get_mut(&RECEIVER)
        .unwrap()
        .files
        .insert("/d/big".into(), old.clone());
    let block = crate::delta::block_size_for(new.len() as u64);
    let sigs = crate::delta::signatures(&old, block);
    let file = moving("/s/big", "/d/big", new.len() as u64, true);
    let flow = DeltaRelay::new(SENDER, RECEIVER, file, sigs, after(Sender::Agent(SENDER)));
    let (plan, most) = drive(Box::new(flow), &mut agents);
    assert_eq!(plan, Plan::Done(outcome()));
    let receiver = &agents[&RECEIVER];
    assert!(receiver.files["/d/big"] == new, "the rebuilt file differs");
    // The changed 5 MiB and the two blocks they end in; the rest was copied there.
    assert!(
        receiver.literal <= (5 << 20) + 2 * block as u64,
        "{} literal bytes",
        receiver.literal
    );
    // Batches of 2 MiB of the 5 MiB: asked for before the first came back.
    const { assert!((5 << 20) / DELTA_LITERAL_BYTES >= 2) };
    assert_eq!(most[&SENDER], IN_FLIGHT);
    assert!(most[&RECEIVER] >= 2, "{most:?}");
}

#[test]
fn controller_files_go_whole_with_requests_in_flight_or_as_a_delta() {
    let dir = tempfile::tempdir().unwrap();
    let first = noise(3 << 20, 9);
    let second = noise((5 << 20) + 1, 10);
    std::fs::write(dir.path().join("first"), &first).unwrap();
    std::fs::write(dir.path().join("second"), &second).unwrap();
    let local = |name: &str| dir.path().join(name).display().to_string();
    let mut agents = HashMap::from([(RECEIVER, Agent::default())]);
    let files = VecDeque::from([
        moving(&local("first"), "/d/first", first.len() as u64, false),
        moving(&local("second"), "/d/second", second.len() as u64, false),
    ]);
    let flow = Uploads::new(RECEIVER, files, after(Sender::Controller));
    let (plan, most) = drive(Box::new(flow), &mut agents);
    assert_eq!(plan, Plan::Done(outcome()));
    assert!(agents[&RECEIVER].files["/d/first"] == first);
    assert!(agents[&RECEIVER].files["/d/second"] == second);
    assert_eq!(most[&RECEIVER], IN_FLIGHT);

    let (old, new) = versions(100_000);
    std::fs::write(dir.path().join("big"), &new).unwrap();
    let receiver = agents.get_mut(&RECEIVER).unwrap();
    receiver.files.insert("/d/big".into(), old.clone());
    let sigs = crate::delta::signatures(&old, crate::delta::block_size_for(new.len() as u64));
    let file = moving(&local("big"), "/d/big", new.len() as u64, true);
    let flow = DeltaUpload::new(RECEIVER, file, sigs, after(Sender::Controller));
    let (plan, _) = drive(Box::new(flow), &mut agents);
    assert_eq!(plan, Plan::Done(outcome()));
    let receiver = &agents[&RECEIVER];
    assert!(receiver.files["/d/big"] == new, "the rebuilt file differs");
    assert!(
        receiver.literal < 200_000,
        "{} literal bytes",
        receiver.literal
    );
}

#[test]
fn an_empty_delta_end_writes_an_empty_file() {
    let mut agents = two_agents(&[("/s/now_empty", b"")]);
    let old = noise(2 << 20, 11);
    agents
        .get_mut(&RECEIVER)
        .unwrap()
        .files
        .insert("/d/f".into(), old.clone());
    let sigs = crate::delta::signatures(&old, 1024);
    let file = moving("/s/now_empty", "/d/f", 2 << 20, true);
    let flow = DeltaRelay::new(SENDER, RECEIVER, file, sigs, after(Sender::Agent(SENDER)));
    let (plan, _) = drive(Box::new(flow), &mut agents);
    assert_eq!(plan, Plan::Done(outcome()));
    assert_eq!(agents[&RECEIVER].files["/d/f"], Vec::<u8>::new());
}
