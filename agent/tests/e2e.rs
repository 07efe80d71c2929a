//! The built agent binary, driven over its stdin/stdout exactly as the controller does.

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command as Process, Stdio};
use std::time::{Duration, Instant};

use turbo_proto::{
    AgentHello, AgentMsg, Command, ControllerMsg, EnsureFile, Exec, FileContent, FileKind, Op,
    OpResult, PROTOCOL_VERSION, Reply, Request, encode_frame, read_frame, write_frame,
};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("turbo-agent-e2e-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    hello: AgentHello,
}

impl Session {
    fn start(home: &Path) -> Self {
        // TURBO_AGENT_E2E_BIN runs these tests against another build, e.g. the static
        // release binary that is actually uploaded.
        let binary = std::env::var_os("TURBO_AGENT_E2E_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_turbo-agent").into());
        let mut child = Process::new(binary)
            .env("HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting the agent");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let hello = match read_frame(&mut stdout).unwrap() {
            Some(AgentMsg::Hello(h)) => h,
            other => panic!("expected a hello, got {other:?}"),
        };
        Session {
            child,
            stdin,
            stdout,
            hello,
        }
    }

    fn send(&mut self, id: u64, op: Op) {
        let msg = ControllerMsg::Request(Request {
            id,
            check: false,
            diff: false,
            op,
        });
        write_frame(self.stdin.as_mut().unwrap(), &msg).unwrap();
    }

    fn receive(&mut self, want_id: u64) -> OpResult {
        match read_frame(&mut self.stdout).unwrap() {
            Some(AgentMsg::Reply(Reply { id, result })) => {
                assert_eq!(id, want_id);
                result
            }
            other => panic!("expected reply {want_id}, got {other:?}"),
        }
    }

    fn call(&mut self, id: u64, op: Op) -> OpResult {
        self.send(id, op);
        self.receive(id)
    }

    /// Closes stdin and waits for the exit status, failing after 10 s.
    fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        wait_with_timeout(&mut self.child)
    }
}

fn wait_with_timeout(child: &mut Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code().expect("exited, not killed");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the agent did not exit after its stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn shell(script: &str) -> Op {
    Op::Exec(Exec {
        command: Command::Shell {
            script: script.into(),
            executable: None,
        },
        chdir: None,
        creates: None,
        removes: None,
        env: vec![],
        stdin: None,
        umask: None,
    })
}

fn exec_stdout(result: OpResult) -> String {
    match result {
        OpResult::Exec(o) => {
            assert!(o.ran);
            assert_eq!(o.rc, 0, "stderr: {}", String::from_utf8_lossy(&o.stderr));
            String::from_utf8(o.stdout).unwrap()
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn hello_batches_exec_and_clean_exit() {
    let home = TempDir::new("main");
    let mut s = Session::start(&home.0);
    assert_eq!(s.hello.protocol_version, PROTOCOL_VERSION);
    assert_eq!(s.hello.agent_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(Path::new(&s.hello.home), home.0);
    assert_eq!(s.hello.pid, s.child.id());
    assert!(!s.hello.user.is_empty());

    let batch = || {
        Op::Batch(
            (0..100)
                .map(|i| {
                    Op::EnsureFile(EnsureFile {
                        path: format!("~/file-{i}.txt"),
                        content: FileContent::Inline(format!("content {i}\n").into_bytes()),
                        mode: None,
                        force: true,
                        owner: Default::default(),
                        validate: None,
                        backup: false,
                    })
                })
                .collect(),
        )
    };
    let OpResult::Batch(first) = s.call(1, batch()) else {
        panic!("not a batch")
    };
    assert_eq!(first.len(), 100);
    for (i, result) in first.iter().enumerate() {
        let OpResult::File(o) = result else {
            panic!("item {i}: {result:?}")
        };
        assert!(o.changed, "item {i}");
        assert_eq!(o.kind, FileKind::File);
        let path = home.0.join(format!("file-{i}.txt"));
        assert_eq!(Path::new(&o.path), path);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("content {i}\n")
        );
    }
    let OpResult::Batch(second) = s.call(2, batch()) else {
        panic!("not a batch")
    };
    assert_eq!(second.len(), 100);
    assert!(
        second
            .iter()
            .all(|r| matches!(r, OpResult::File(o) if !o.changed)),
        "the same batch again changes nothing"
    );

    // A child's output is captured (its fd 1 is a pipe), and the protocol stream is out
    // of its reach: the agent's own fd 1 is /dev/null and the stream's fds are not
    // inherited, so writing to every low fd or to the agent's fd 1 corrupts nothing.
    assert_eq!(exec_stdout(s.call(3, shell("echo hi"))), "hi\n");
    assert_eq!(
        exec_stdout(s.call(4, shell("readlink /proc/$PPID/fd/1"))),
        "/dev/null\n"
    );
    let script = "for fd in 3 4 5 6 7 8 9; do echo garbage >&$fd; done 2>/dev/null; \
                  echo garbage >/proc/$PPID/fd/1; echo done";
    assert_eq!(exec_stdout(s.call(5, shell(script))), "done\n");

    // Pipelined requests come back in order.
    for id in 10..15 {
        s.send(
            id,
            Op::Stat {
                path: "~".into(),
                checksum: None,
                follow: false,
            },
        );
    }
    for id in 10..15 {
        assert!(matches!(s.receive(id), OpResult::Stat(st) if st.kind == FileKind::Directory));
    }

    assert_eq!(s.finish(), 0);
}

#[test]
fn corrupt_frame_ends_the_agent_with_status_2_and_no_reply() {
    let home = TempDir::new("corrupt");
    let mut s = Session::start(&home.0);
    let stdin = s.stdin.as_mut().unwrap();
    stdin
        .write_all(&[0, 0, 0, 4, 0xde, 0xad, 0xbe, 0xef])
        .unwrap();
    stdin.flush().unwrap();
    let status = wait_with_timeout(&mut s.child);
    assert_eq!(status, 2);
    assert!(read_frame::<_, AgentMsg>(&mut s.stdout).unwrap().is_none());
}

#[test]
fn truncated_frame_at_eof_is_an_error_exit() {
    let home = TempDir::new("truncated");
    let mut s = Session::start(&home.0);
    let frame = encode_frame(&ControllerMsg::Request(Request {
        id: 1,
        check: false,
        diff: false,
        op: Op::Stat {
            path: "/".into(),
            checksum: None,
            follow: false,
        },
    }))
    .unwrap();
    s.stdin
        .as_mut()
        .unwrap()
        .write_all(&frame[..frame.len() - 2])
        .unwrap();
    assert_eq!(s.finish(), 2);
}

#[test]
fn digest_then_chunked_upload_over_the_wire() {
    let home = TempDir::new("upload");
    let mut s = Session::start(&home.0);
    let content: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let sha256 = {
        use sha2::Digest as _;
        <[u8; 32]>::from(sha2::Sha256::digest(&content))
    };
    let ensure = |content| {
        Op::EnsureFile(EnsureFile {
            path: "~/big.bin".into(),
            content,
            mode: Some(turbo_proto::FileMode::Symbolic("u=rw,go=".into())),
            force: true,
            owner: Default::default(),
            validate: None,
            backup: false,
        })
    };
    let digest = FileContent::Digest {
        sha256,
        size: content.len() as u64,
    };
    assert_eq!(s.call(1, ensure(digest.clone())), OpResult::NeedContent);
    let mut id = 2;
    for (i, chunk) in content.chunks(turbo_proto::CHUNK_BYTES).enumerate() {
        let result = s.call(
            id,
            Op::WriteChunk {
                upload_id: 77,
                data: chunk.to_vec(),
            },
        );
        let staged = ((i + 1) * turbo_proto::CHUNK_BYTES).min(content.len()) as u64;
        assert_eq!(result, OpResult::Chunk { size: staged });
        id += 1;
    }
    let result = s.call(
        id,
        ensure(FileContent::Staged {
            upload_id: 77,
            sha256,
        }),
    );
    assert!(matches!(result, OpResult::File(ref o) if o.changed && o.mode == 0o600));
    assert_eq!(std::fs::read(home.0.join("big.bin")).unwrap(), content);
    assert!(matches!(s.call(id + 1, ensure(digest)), OpResult::File(o) if !o.changed));
    assert_eq!(s.finish(), 0);
}
