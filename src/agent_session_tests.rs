//! Tests of the agent session: calls and replies over a duplex stream, hello, version
//! mismatch, hostile and broken streams.

use super::*;
use tokio::io::{DuplexStream, duplex};
use turbo_proto::{ExecOutcome, Reply};

fn hello(version: u32) -> AgentHello {
    AgentHello {
        protocol_version: version,
        agent_version: "test".into(),
        user: "alice".into(),
        uid: 1000,
        gid: 1000,
        home: "/home/alice".into(),
        pid: 42,
    }
}

fn stat_op(path: &str) -> Op {
    Op::Stat {
        path: path.into(),
        checksum: None,
        follow: false,
    }
}

fn exec_result(rc: i32, stdout: &str) -> OpResult {
    OpResult::Exec(ExecOutcome {
        ran: true,
        rc,
        stdout: stdout.as_bytes().to_vec(),
        stderr: Vec::new(),
        start_unix_micros: 0,
        duration_micros: 0,
        msg: String::new(),
    })
}

async fn read_requests(
    stream: &mut DuplexStream,
    decoder: &mut FrameDecoder,
    n: usize,
) -> Vec<Request> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 4096];
    while out.len() < n {
        while let Some(ControllerMsg::Request(r)) = decoder.next::<ControllerMsg>().unwrap() {
            out.push(r);
        }
        if out.len() >= n {
            break;
        }
        let got = stream.read(&mut buf).await.unwrap();
        assert!(got > 0, "controller closed early");
        decoder.push(&buf[..got]);
    }
    out
}

/// A controller-side session wired to an in-test agent's end of a duplex pipe.
async fn session_pair() -> (AgentSession, DuplexStream) {
    let (ours, mut theirs) = duplex(1 << 16);
    theirs
        .write_all(&encode_frame(&AgentMsg::Hello(hello(PROTOCOL_VERSION))).unwrap())
        .await
        .unwrap();
    let (r, w) = tokio::io::split(ours);
    let session = AgentSession::start(r, w, BootstrapReport::default())
        .await
        .unwrap();
    (session, theirs)
}

#[tokio::test]
async fn replies_out_of_order_reach_their_callers_then_disconnect_fails_the_rest() {
    let (session, mut agent) = session_pair().await;
    assert_eq!(session.hello().user, "alice");
    assert_eq!(session.hello().home, "/home/alice");

    let calls: Vec<_> = (0..3)
        .map(|i| {
            let s = session.clone();
            tokio::spawn(async move { s.call(stat_op(&format!("/f{i}")), i == 1, false).await })
        })
        .collect();

    let mut decoder = FrameDecoder::new();
    let requests = read_requests(&mut agent, &mut decoder, 3).await;
    let mut ids: Vec<u64> = requests.iter().map(|r| r.id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3, "ids must be unique");
    let check_flags: Vec<bool> = requests
        .iter()
        .filter(|r| r.check)
        .map(|r| r.check)
        .collect();
    assert_eq!(check_flags.len(), 1);

    // Answer two of the three, last first; the third stays pending.
    let by_path = |p: &str| {
        requests
            .iter()
            .find(|r| r.op == stat_op(p))
            .map(|r| r.id)
            .unwrap()
    };
    for (path, rc) in [("/f2", 2), ("/f0", 0)] {
        let reply = AgentMsg::Reply(Reply {
            id: by_path(path),
            result: exec_result(rc, path),
        });
        agent
            .write_all(&encode_frame(&reply).unwrap())
            .await
            .unwrap();
    }
    let mut calls = calls.into_iter();
    let first = calls.next().unwrap().await.unwrap().unwrap();
    assert_eq!(first, exec_result(0, "/f0"));
    let second = calls.next().unwrap();
    let third = calls.next().unwrap().await.unwrap().unwrap();
    assert_eq!(third, exec_result(2, "/f2"));

    // The agent dies with /f1 unanswered.
    drop(agent);
    let err = second.await.unwrap().unwrap_err();
    assert!(matches!(err, SessionError::Disconnected(None)));
    assert_eq!(err.to_string(), "host disconnected");

    // And nothing later waits either.
    let later = tokio::time::timeout(
        Duration::from_secs(5),
        session.call(stat_op("/x"), false, false),
    )
    .await
    .expect("a call after disconnect must not hang");
    assert!(matches!(later, Err(SessionError::Disconnected(None))));
    assert!(session.is_closed());

    let (sent, received) = session.traffic();
    assert!(sent > 0 && received > 0);
}

#[tokio::test]
async fn a_witness_names_the_cause_even_when_it_speaks_after_the_end() {
    let (session, agent) = session_pair().await;
    let told = Arc::new(Mutex::new(None));
    let witness = told.clone();
    session.add_end_witness(Box::new(move || witness.lock().unwrap().clone()));
    let call = {
        let s = session.clone();
        tokio::spawn(async move { s.call(stat_op("/slow"), false, false).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The stream ends first; the exit signal comes a moment later, as over SSH.
    drop(agent);
    tokio::time::sleep(Duration::from_millis(100)).await;
    *told.lock().unwrap() = Some(StreamEnd::AgentKilled {
        signal: "KILL".into(),
        core_dumped: false,
    });
    let err = call.await.unwrap().unwrap_err();
    assert_eq!(
        err.to_string(),
        "the agent (pid 42) on the host was killed by signal 9 (SIGKILL) mid-task"
    );
    let ended = err.ended().unwrap();
    assert!(ended.cause.agent_died());
    assert_eq!(ended.cause.rc(), Some(137));
    // Later calls carry the same cause.
    let later = session.call(stat_op("/x"), false, false).await.unwrap_err();
    assert_eq!(later.to_string(), err.to_string());
    assert_eq!(session.ended(), Some(ended.clone()));
}

#[tokio::test]
async fn a_lost_connection_is_not_an_agent_death_and_silence_is_bounded() {
    let lost = StreamEnd::ConnectionLost("Connection reset by peer".into());
    assert!(!lost.agent_died());
    assert_eq!(lost.rc(), None);
    assert_eq!(
        Ended {
            cause: lost,
            agent_pid: 7
        }
        .to_string(),
        "the connection was lost mid-task: Connection reset by peer"
    );
    assert_eq!(StreamEnd::AgentExited(3).rc(), Some(3));

    // A witness that never knows: the plain error, within the bounded wait.
    let (session, agent) = session_pair().await;
    session.add_end_witness(Box::new(|| None));
    drop(agent);
    let started = std::time::Instant::now();
    let err = session.call(stat_op("/"), false, false).await.unwrap_err();
    assert!(started.elapsed() < END_CAUSE_WAIT + Duration::from_secs(2));
    assert_eq!(err.to_string(), "host disconnected");
}

#[tokio::test]
async fn version_mismatch_is_reported() {
    let (ours, mut theirs) = duplex(4096);
    theirs
        .write_all(&encode_frame(&AgentMsg::Hello(hello(PROTOCOL_VERSION + 7))).unwrap())
        .await
        .unwrap();
    let (r, w) = tokio::io::split(ours);
    let err = AgentSession::start(r, w, BootstrapReport::default())
        .await
        .err()
        .unwrap();
    match err {
        SessionError::VersionMismatch { agent, controller } => {
            assert_eq!(agent, PROTOCOL_VERSION + 7);
            assert_eq!(controller, PROTOCOL_VERSION);
        }
        other => panic!("expected a version mismatch, got {other}"),
    }
}

#[tokio::test]
async fn a_stream_that_is_not_an_agent_is_recognised() {
    // A shell script's output: not a frame.
    let (ours, mut theirs) = duplex(4096);
    theirs.write_all(b"hello from a script\n").await.unwrap();
    drop(theirs);
    let (r, w) = tokio::io::split(ours);
    let err = AgentSession::start(r, w, BootstrapReport::default())
        .await
        .err()
        .unwrap();
    assert!(err.is_not_an_agent(), "{err}");

    // Silence, then EOF.
    let (ours, theirs) = duplex(4096);
    drop(theirs);
    let (r, w) = tokio::io::split(ours);
    let err = AgentSession::start(r, w, BootstrapReport::default())
        .await
        .err()
        .unwrap();
    assert!(matches!(err, SessionError::EndedBeforeHello(_)), "{err}");

    // Silence, forever.
    let (ours, _theirs) = duplex(4096);
    let (r, w) = tokio::io::split(ours);
    let err = AgentSession::start_with_timeout(
        r,
        w,
        BootstrapReport::default(),
        Duration::from_millis(50),
    )
    .await
    .err()
    .unwrap();
    assert!(matches!(err, SessionError::HelloTimeout(_)), "{err}");
}

#[tokio::test]
async fn close_sends_eof_to_the_agent_and_fails_later_calls() {
    let (session, mut agent) = session_pair().await;
    let closer = session.clone();
    let agent_task = tokio::spawn(async move {
        let mut rest = Vec::new();
        agent.read_to_end(&mut rest).await.unwrap();
        // EOF seen: the agent exits, closing its output.
        drop(agent);
        rest.len()
    });
    closer.close().await;
    assert_eq!(agent_task.await.unwrap(), 0);
    assert!(matches!(
        session.call(stat_op("/"), false, false).await,
        Err(SessionError::Disconnected(_))
    ));
}

#[tokio::test]
async fn many_concurrent_calls_are_pipelined() {
    let (session, agent) = session_pair().await;
    let (mut agent_r, mut agent_w) = tokio::io::split(agent);
    // An echo agent: answers each request as soon as it is decoded.
    let agent_task = tokio::spawn(async move {
        let mut decoder = FrameDecoder::new();
        let mut buf = vec![0u8; 8192];
        loop {
            while let Some(ControllerMsg::Request(r)) = decoder.next::<ControllerMsg>().unwrap() {
                let Op::Stat { path, .. } = r.op else {
                    panic!()
                };
                let reply = AgentMsg::Reply(Reply {
                    id: r.id,
                    result: exec_result(0, &path),
                });
                agent_w
                    .write_all(&encode_frame(&reply).unwrap())
                    .await
                    .unwrap();
            }
            let n = agent_r.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            decoder.push(&buf[..n]);
        }
    });
    let calls: Vec<_> = (0..200)
        .map(|i| {
            let s = session.clone();
            tokio::spawn(async move { (i, s.call(stat_op(&format!("/p{i}")), false, false).await) })
        })
        .collect();
    for call in calls {
        let (i, result) = call.await.unwrap();
        assert_eq!(result.unwrap(), exec_result(0, &format!("/p{i}")));
    }
    session.close().await;
    agent_task.await.unwrap();
}

/// The bytes of a frame with a right length prefix around `payload`.
fn framed(payload: &[u8]) -> Vec<u8> {
    let mut out = (payload.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(payload);
    out
}

fn zlib(raw: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    z.write_all(raw).unwrap();
    z.finish().unwrap()
}

/// A call in flight, then `bytes` from the agent (and EOF when `then_eof`): what the
/// call gets, and whether the session took further calls afterwards.
async fn call_then_agent_sends(bytes: Vec<u8>, then_eof: bool) -> SessionError {
    let (session, mut agent) = session_pair().await;
    let reply = session.send(stat_op("/"), false, false, 0).await.unwrap();
    agent.write_all(&bytes).await.unwrap();
    if then_eof {
        // Ends only what the agent says: a closed pipe both ways would let the writer
        // see the break first and report a plain disconnect.
        agent.shutdown().await.unwrap();
    }
    // Kept open otherwise: the session must give up on its own, not wait for more.
    let _agent = agent;
    let err = tokio::time::timeout(Duration::from_secs(10), reply)
        .await
        .expect("the pending call fails at once")
        .unwrap_err();
    assert!(session.is_closed(), "{err}");
    assert!(matches!(
        session.call(stat_op("/"), false, false).await,
        Err(SessionError::Disconnected(_))
    ));
    err
}

fn protocol_message(err: SessionError) -> String {
    match err {
        SessionError::Protocol(why) => why,
        other => panic!("expected a protocol error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_reply_to_an_id_nobody_waits_for_is_a_protocol_error() {
    let stray = encode_frame(&AgentMsg::Reply(Reply {
        id: 99,
        result: exec_result(0, "not yours"),
    }))
    .unwrap();
    let why = protocol_message(call_then_agent_sends(stray, false).await);
    assert!(
        why.contains("request 99, which no call is waiting for"),
        "{why}"
    );
}

#[tokio::test]
async fn a_second_reply_to_the_same_id_is_a_protocol_error() {
    let (session, mut agent) = session_pair().await;
    let first = session.send(stat_op("/a"), false, false, 0).await.unwrap();
    let second = session.send(stat_op("/b"), false, false, 0).await.unwrap();
    for _ in 0..2 {
        let reply = AgentMsg::Reply(Reply {
            id: 1,
            result: exec_result(0, "a"),
        });
        agent
            .write_all(&encode_frame(&reply).unwrap())
            .await
            .unwrap();
    }
    assert_eq!(first.await.unwrap(), exec_result(0, "a"));
    let why = protocol_message(second.await.unwrap_err());
    assert!(why.contains("request 1,"), "{why}");
    drop(agent);
}

#[tokio::test]
async fn a_second_hello_is_a_protocol_error() {
    let again = encode_frame(&AgentMsg::Hello(hello(PROTOCOL_VERSION))).unwrap();
    let why = protocol_message(call_then_agent_sends(again, false).await);
    assert!(why.contains("hello a second time"), "{why}");
}

#[tokio::test]
async fn garbage_after_hello_is_a_protocol_error() {
    let why = protocol_message(call_then_agent_sends(framed(b"not zlib"), false).await);
    assert!(why.contains("corrupt frame: zlib"), "{why}");
    // A script's output after the hello: its first bytes read as an enormous length.
    let why = protocol_message(call_then_agent_sends(b"Traceback (most".to_vec(), false).await);
    assert!(why.contains("exceeds the"), "{why}");
}

#[tokio::test]
async fn an_unknown_message_type_is_a_protocol_error() {
    // AgentMsg has two variants; tag 7 is none of them.
    let bytes = framed(&zlib(&7u32.to_le_bytes()));
    let why = protocol_message(call_then_agent_sends(bytes, false).await);
    assert!(why.contains("corrupt frame: bincode"), "{why}");
}

#[tokio::test]
async fn an_oversized_length_is_refused_before_its_body_arrives() {
    // Only the prefix is sent: the session must not wait for (or allocate) 4 GiB.
    let why = protocol_message(call_then_agent_sends(u32::MAX.to_be_bytes().to_vec(), false).await);
    assert!(why.contains("exceeds the"), "{why}");
}

#[tokio::test]
async fn a_truncated_frame_at_end_of_stream_is_a_protocol_error() {
    let frame = encode_frame(&AgentMsg::Reply(Reply {
        id: 1,
        result: exec_result(0, "cut short"),
    }))
    .unwrap();
    let cut = frame[..frame.len() - 3].to_vec();
    let why = protocol_message(call_then_agent_sends(cut, true).await);
    assert!(why.contains("stream ended inside a frame"), "{why}");
}

#[tokio::test]
async fn deeply_nested_batches_fail_the_host_not_the_controller() {
    let mut raw = Vec::new();
    raw.extend_from_slice(&1u32.to_le_bytes()); // AgentMsg::Reply
    raw.extend_from_slice(&1u64.to_le_bytes()); // id
    for _ in 0..100_000 {
        raw.extend_from_slice(&5u32.to_le_bytes()); // OpResult::Batch
        raw.extend_from_slice(&1u64.to_le_bytes()); // of one
    }
    let why = protocol_message(call_then_agent_sends(framed(&zlib(&raw)), false).await);
    assert!(why.contains("nests deeper"), "{why}");
}

#[tokio::test]
async fn one_hostile_agent_leaves_another_hosts_session_working() {
    let (hostile, mut bad_agent) = session_pair().await;
    let (honest, honest_agent) = session_pair().await;
    let (mut honest_r, mut honest_w) = tokio::io::split(honest_agent);
    let bad_call = hostile.send(stat_op("/"), false, false, 0).await.unwrap();
    bad_agent.write_all(&framed(b"garbage")).await.unwrap();
    assert!(matches!(bad_call.await, Err(SessionError::Protocol(_))));

    let good_call = honest.send(stat_op("/ok"), false, false, 0).await.unwrap();
    let mut decoder = FrameDecoder::new();
    let requests = read_requests_from(&mut honest_r, &mut decoder).await;
    let reply = AgentMsg::Reply(Reply {
        id: requests.id,
        result: exec_result(0, "fine"),
    });
    honest_w
        .write_all(&encode_frame(&reply).unwrap())
        .await
        .unwrap();
    assert_eq!(good_call.await.unwrap(), exec_result(0, "fine"));
    assert!(!honest.is_closed());
}

async fn read_requests_from<R: AsyncRead + Unpin>(
    stream: &mut R,
    decoder: &mut FrameDecoder,
) -> Request {
    let mut buf = vec![0u8; 4096];
    loop {
        if let Some(ControllerMsg::Request(r)) = decoder.next::<ControllerMsg>().unwrap() {
            return r;
        }
        let got = stream.read(&mut buf).await.unwrap();
        assert!(got > 0, "controller closed early");
        decoder.push(&buf[..got]);
    }
}

/// The first chain of a host is written before the hello: its replies may arrive in the
/// same read as the hello, and the session's own ids follow the prelude's.
#[tokio::test]
async fn a_prelude_written_before_the_hello_gets_its_replies_and_ids_go_on_after_it() {
    let (ours, mut theirs) = duplex(1 << 16);
    let mut prelude = Prelude::default();
    let first = prelude
        .push(stat_op("/p1"), (false, false), 7, None)
        .unwrap();
    let second = prelude
        .push(stat_op("/p2"), (true, false), 7, Some(1000))
        .unwrap();
    // The stream as the agent finds it: the prelude's frames, in order.
    let mut decoder = FrameDecoder::new();
    decoder.push(prelude.bytes());
    let mut early = Vec::new();
    while let Some(ControllerMsg::Request(r)) = decoder.next::<ControllerMsg>().unwrap() {
        early.push(r);
    }
    assert_eq!(
        early
            .iter()
            .map(|r| (r.id, r.chain, r.check, r.timeout_ms))
            .collect::<Vec<_>>(),
        vec![(1, 7, false, None), (2, 7, true, Some(1000))]
    );
    // Hello and both replies in one write, the second first.
    let mut burst = encode_frame(&AgentMsg::Hello(hello(PROTOCOL_VERSION))).unwrap();
    for (id, out) in [(2, "two"), (1, "one")] {
        burst.extend(
            encode_frame(&AgentMsg::Reply(Reply {
                id,
                result: exec_result(0, out),
            }))
            .unwrap(),
        );
    }
    theirs.write_all(&burst).await.unwrap();
    let (r, w) = tokio::io::split(ours);
    let session = AgentSession::start_after(r, w, BootstrapReport::default(), &mut prelude)
        .await
        .unwrap();
    assert!(prelude.is_empty(), "taken by the session");
    assert_eq!(first.await.unwrap(), exec_result(0, "one"));
    assert_eq!(second.await.unwrap(), exec_result(0, "two"));
    let third = session.send(stat_op("/p3"), false, false, 0).await.unwrap();
    let mut decoder = FrameDecoder::new();
    let next = read_requests(&mut theirs, &mut decoder, 1).await;
    assert_eq!(next[0].id, 3);
    let reply = AgentMsg::Reply(Reply {
        id: 3,
        result: exec_result(0, "three"),
    });
    theirs
        .write_all(&encode_frame(&reply).unwrap())
        .await
        .unwrap();
    assert_eq!(third.await.unwrap(), exec_result(0, "three"));
}

/// A prelude whose session never starts keeps its requests (a bootstrap writes them
/// again), and dropped, fails its replies.
#[tokio::test]
async fn a_prelude_outlives_a_failed_start_and_its_replies_fail_when_dropped() {
    let (ours, mut theirs) = duplex(1 << 16);
    let mut prelude = Prelude::default();
    let reply = prelude
        .push(stat_op("/p1"), (false, false), 1, None)
        .unwrap();
    theirs
        .write_all(&encode_frame(&AgentMsg::Hello(hello(PROTOCOL_VERSION + 1))).unwrap())
        .await
        .unwrap();
    let (r, w) = tokio::io::split(ours);
    let err = AgentSession::start_after(r, w, BootstrapReport::default(), &mut prelude)
        .await
        .err()
        .expect("a version mismatch");
    assert!(err.is_not_an_agent(), "{err}");
    assert!(!prelude.is_empty());
    drop(prelude);
    assert!(matches!(reply.await, Err(SessionError::Disconnected(None))));
}

#[test]
fn a_prelude_refuses_a_request_past_its_limit_and_keeps_what_it_has() {
    let mut prelude = Prelude::default();
    let first = prelude
        .push_within(stat_op("/a"), (false, false), 1, None, 4096)
        .unwrap();
    assert!(first.is_some());
    let held = prelude.bytes().len();
    // Bytes zlib cannot shrink much: a frame past the limit whatever the compression.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let noise: String = (0..60_000)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'!' + (state % 90) as u8)
        })
        .collect();
    let big = Op::Stat {
        path: noise,
        checksum: None,
        follow: false,
    };
    let refused = prelude
        .push_within(big, (false, false), 1, None, 4096)
        .unwrap();
    assert!(refused.is_none());
    assert_eq!(prelude.bytes().len(), held);
    // The next request still gets the next id.
    let mut decoder = FrameDecoder::new();
    prelude
        .push_within(stat_op("/b"), (false, false), 1, None, 4096)
        .unwrap()
        .expect("fits");
    decoder.push(prelude.bytes());
    let mut ids = Vec::new();
    while let Some(ControllerMsg::Request(r)) = decoder.next::<ControllerMsg>().unwrap() {
        ids.push(r.id);
    }
    assert_eq!(ids, vec![1, 2]);
}
