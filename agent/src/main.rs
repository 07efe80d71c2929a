//! turbo-agent: runs on a managed host, reads [`Request`]s as frames on stdin and answers
//! each with one [`Reply`] on stdout, in order. It speaks first with an [`AgentHello`].
//! Exit status: 0 when the controller closes stdin or cancels, 2 when the stream breaks,
//! 3 when `--expect-sha256 HEX` was given and this program's own file does not hash to it.
//! A `Cancel`, the end of the input or SIGTERM/SIGHUP/SIGINT, seen even while a command
//! runs, stop the command's process group and end the agent, its staging files removed.

mod input;
mod md;
mod ops;
mod own_digest;
mod sha1;
mod sha256;
mod sys;
mod users;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd};

use turbo_proto::{
    AgentHello, AgentMsg, ControllerMsg, ErrorKind, FrameError, OpError, OpResult,
    PROTOCOL_VERSION, Reply, encode_frame,
};

use input::Input;
use ops::Agent;

fn main() {
    std::process::exit(run());
}

fn run() -> i32 {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [mode, file] if mode == ops::job::JOB_LAUNCH_ARG => return ops::job::launch(file),
        [mode, file] if mode == ops::job::JOB_RUN_ARG => return ops::job::run(file),
        _ => {}
    }
    if let Err(message) = own_digest::check(std::env::args().skip(1)) {
        eprintln!("turbo-agent: {message}");
        return EXIT_DIGEST_MISMATCH;
    }
    let (input, output) = match take_protocol_fds() {
        Ok(fds) => fds,
        Err(e) => {
            eprintln!("turbo-agent: cannot set up the protocol stream: {e}");
            return 2;
        }
    };
    sys::install_stop_handlers();
    let mut output = BufWriter::with_capacity(256 << 10, output);

    let hello = hello();
    let mut agent = Agent::new(
        hello.home.clone(),
        sys::current_umask(),
        hello.uid,
        hello.gid,
    );
    agent.input = Some(Input::new(input));
    let code = serve(&mut agent, hello, &mut output);
    agent.clean_staging();
    // Warm runners stop the modules they run as they are dropped.
    agent.runners.clear();
    code
}

/// The agent a detached job runs its op with: the session's user, home and umask, no
/// protocol input (nothing can cancel it but its time limit and signals).
pub(crate) fn job_agent() -> Agent {
    sys::install_stop_handlers();
    let hello = hello();
    Agent::new(hello.home, sys::current_umask(), hello.uid, hello.gid)
}

const EXIT_DIGEST_MISMATCH: i32 = 3;

/// Moves the protocol off fds 0 and 1 onto private close-on-exec fds, and points 0 and 1
/// at /dev/null: whatever a child (or a stray print) writes to stdout can then never land
/// inside a frame. stderr stays, for diagnostics the controller may show.
fn take_protocol_fds() -> std::io::Result<(File, File)> {
    // try_clone_to_owned is F_DUPFD_CLOEXEC: children do not inherit the stream.
    let input = File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let output = File::from(std::io::stdout().as_fd().try_clone_to_owned()?);
    let null = File::options().read(true).write(true).open("/dev/null")?;
    sys::redirect_fd(null.as_raw_fd(), 0)?;
    sys::redirect_fd(null.as_raw_fd(), 1)?;
    Ok((input, output))
}

fn hello() -> AgentHello {
    let uid = sys::effective_uid();
    let gid = sys::effective_gid();
    let entry = users::user_by_uid(uid);
    let home = std::env::var("HOME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| entry.as_ref().map(|e| e.home.clone()))
        .unwrap_or_else(|| "/".into());
    AgentHello {
        protocol_version: PROTOCOL_VERSION,
        agent_version: env!("CARGO_PKG_VERSION").into(),
        user: entry.map_or_else(|| uid.to_string(), |e| e.name),
        uid,
        gid,
        home,
        pid: std::process::id(),
    }
}

fn serve(agent: &mut Agent, hello: AgentHello, output: &mut impl Write) -> i32 {
    if let Err(e) = send(output, &AgentMsg::Hello(hello)) {
        eprintln!("turbo-agent: cannot write the hello: {e}");
        return 2;
    }
    loop {
        if agent.stopping() {
            return 0;
        }
        let next = agent
            .input
            .as_mut()
            .expect("serve reads the agent's input")
            .next_message();
        let request = match next {
            Ok(Some(ControllerMsg::Request(request))) => request,
            Ok(Some(ControllerMsg::Cancel)) | Ok(None) => return 0,
            Err(e) => {
                // Nothing more is written: after a broken frame the stream cannot be
                // trusted to be in step, and the controller reports the exit.
                eprintln!("turbo-agent: {e}; exiting");
                return 2;
            }
        };
        let id = request.id;
        let result = agent.handle(request);
        if agent.stopping() {
            // Cancelled while it ran (its process group is stopped): nobody waits for
            // this reply or the ones queued.
            return 0;
        }
        let frame = reply_frame(id, result, encode_frame);
        let sent = frame.and_then(|bytes| {
            // Flushed per reply: each one leaves as soon as it is ready.
            output.write_all(&bytes)?;
            output.flush()?;
            Ok(())
        });
        if let Err(e) = sent {
            eprintln!("turbo-agent: cannot write reply {id}: {e}");
            return 2;
        }
    }
}

fn send(output: &mut impl Write, msg: &AgentMsg) -> Result<(), FrameError> {
    turbo_proto::write_frame(output, msg)
}

/// The frame for a reply. A result too big for one frame (say, a command that printed
/// gigabytes) becomes an error reply rather than the end of the session.
fn reply_frame(
    id: u64,
    result: OpResult,
    encode: impl Fn(&AgentMsg) -> Result<Vec<u8>, FrameError>,
) -> Result<Vec<u8>, FrameError> {
    match encode(&AgentMsg::Reply(Reply { id, result })) {
        Err(e @ (FrameError::TooLarge { .. } | FrameError::Corrupt(_))) => {
            let result = OpResult::Error(OpError {
                kind: ErrorKind::Io,
                message: format!("the result of request {id} does not fit in a reply: {e}"),
            });
            encode(&AgentMsg::Reply(Reply { id, result }))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turbo_proto::{Op, Request, read_frame};

    #[test]
    fn an_unsendable_result_becomes_an_error_reply() {
        // Stands in for a result past the frame limit without building 64 MiB.
        let picky = |msg: &AgentMsg| match msg {
            AgentMsg::Reply(Reply {
                result: OpResult::Chunk { .. },
                ..
            }) => Err(FrameError::TooLarge { len: 1 << 30 }),
            other => encode_frame(other),
        };
        let bytes = reply_frame(9, OpResult::Chunk { size: 1 }, picky).unwrap();
        match read_frame(&mut &bytes[..]).unwrap() {
            Some(AgentMsg::Reply(Reply {
                id: 9,
                result: OpResult::Error(e),
            })) => assert!(e.message.contains("does not fit"), "{}", e.message),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hello_names_the_running_user() {
        let h = hello();
        assert_eq!(h.protocol_version, PROTOCOL_VERSION);
        assert_eq!(h.uid, sys::effective_uid());
        assert!(!h.user.is_empty());
        assert!(!h.home.is_empty());
        assert_eq!(h.pid, std::process::id());
    }

    #[test]
    fn serve_answers_in_order_then_stops_at_eof_or_corruption() {
        let mut agent = ops::testutil::agent(std::path::Path::new("/"));
        let mut input = Vec::new();
        for id in [3, 1, 2] {
            input.extend(
                encode_frame(&ControllerMsg::Request(Request {
                    id,
                    check: false,
                    diff: false,
                    chain: 0,
                    timeout_ms: None,
                    op: Op::Stat {
                        path: "/".into(),
                        checksum: None,
                        follow: false,
                    },
                }))
                .unwrap(),
            );
        }
        let mut output = Vec::new();
        agent.input = Some(input::testing::from_bytes(&input));
        assert_eq!(serve(&mut agent, hello(), &mut output), 0);
        let mut r = &output[..];
        assert!(matches!(
            read_frame(&mut r).unwrap(),
            Some(AgentMsg::Hello(_))
        ));
        for want in [3, 1, 2] {
            match read_frame(&mut r).unwrap() {
                Some(AgentMsg::Reply(Reply {
                    id,
                    result: OpResult::Stat(_),
                })) => assert_eq!(id, want),
                other => panic!("{other:?}"),
            }
        }
        assert!(r.is_empty());

        input.extend_from_slice(&[0, 0, 0, 3, 1, 2, 3]);
        let mut output = Vec::new();
        agent.input = Some(input::testing::from_bytes(&input));
        assert_eq!(serve(&mut agent, hello(), &mut output), 2);
        let mut r = &output[..];
        let mut frames = 0;
        while read_frame::<_, AgentMsg>(&mut r).unwrap().is_some() {
            frames += 1;
        }
        assert_eq!(
            frames, 4,
            "hello and three replies, nothing for the corrupt frame"
        );
    }
}
