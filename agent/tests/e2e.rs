//! The built agent binary, driven over its stdin/stdout exactly as the controller does.

use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command as Process, Stdio};
use std::time::{Duration, Instant};

use turbo_proto::{
    AgentHello, AgentMsg, Command, ControllerMsg, Digest, EnsureFile, EnsurePath, ErrorKind, Exec,
    FileContent, FileKind, FileOutcome, FileRead, Op, OpResult, PROTOCOL_VERSION, PathState,
    READ_BYTES_MAX, Reply, Request, StatInfo, TreeListing, encode_frame, read_frame, write_frame,
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
        Self::start_with(home, &[])
    }

    fn start_with(home: &Path, env: &[(&str, &str)]) -> Self {
        // TURBO_AGENT_E2E_BIN runs these tests against another build, e.g. the static
        // release binary that is actually uploaded.
        let binary = std::env::var_os("TURBO_AGENT_E2E_BIN")
            .unwrap_or_else(|| env!("CARGO_BIN_EXE_turbo-agent").into());
        let mut child = Process::new(binary)
            .env("HOME", home)
            .envs(env.iter().copied())
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
        self.send_checked(id, false, op);
    }

    fn send_checked(&mut self, id: u64, check: bool, op: Op) {
        let msg = ControllerMsg::Request(Request {
            id,
            check,
            diff: false,
            chain: 0,
            timeout_ms: None,
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

    fn call_in_check_mode(&mut self, id: u64, op: Op) -> OpResult {
        self.send_checked(id, true, op);
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
        chain: 0,
        timeout_ms: None,
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

fn read(s: &mut Session, id: u64, path: &Path, offset: u64, limit: Option<u64>) -> FileRead {
    let op = Op::ReadFile {
        path: path.to_string_lossy().into_owned(),
        offset,
        limit,
    };
    match s.call(id, op) {
        OpResult::Read(r) => r,
        other => panic!("{other:?}"),
    }
}

#[test]
fn read_file_answers_missing_files_and_pages_large_ones() {
    let home = TempDir::new("read");
    let mut s = Session::start(&home.0);
    let missing = read(&mut s, 1, &home.0.join("nope"), 0, None);
    assert!(!missing.stat.exists && missing.data.is_empty() && missing.eof);
    assert_eq!(missing.stat.kind, FileKind::Missing);
    let dir = read(&mut s, 2, &home.0, 0, None);
    assert_eq!((dir.stat.kind, dir.data.len()), (FileKind::Directory, 0));

    let small = home.0.join("small");
    std::fs::write(&small, b"line one\nline two\n").unwrap();
    let r = read(&mut s, 3, &small, 5, Some(3));
    assert_eq!((r.offset, &r.data[..], r.eof), (5, &b"one"[..], false));
    assert_eq!((r.stat.size, r.stat.kind), (18, FileKind::File));
    let r = read(&mut s, 4, &small, 9, Some(100));
    assert_eq!((&r.data[..], r.eof), (&b"line two\n"[..], true));

    // Past one reply's cap: the controller pages with offset until eof.
    let content: Vec<u8> = (0..2 * READ_BYTES_MAX + 123)
        .map(|i| (i * 13 % 251) as u8)
        .collect();
    let big = home.0.join("big");
    std::fs::write(&big, &content).unwrap();
    let (mut got, mut id, mut pages) = (Vec::new(), 10, 0);
    loop {
        let r = read(&mut s, id, &big, got.len() as u64, None);
        assert!(r.data.len() <= READ_BYTES_MAX);
        assert_eq!(r.stat.size, content.len() as u64);
        got.extend_from_slice(&r.data);
        id += 1;
        pages += 1;
        if r.eof {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert!(got == content, "paged bytes differ from the file");

    // A symlink is read through, and the stat is the target's.
    std::os::unix::fs::symlink("small", home.0.join("link")).unwrap();
    let r = read(&mut s, 20, &home.0.join("link"), 0, None);
    assert_eq!((r.stat.kind, r.data.len()), (FileKind::File, 18));
    assert_eq!(s.finish(), 0);
}

fn stat(s: &mut Session, id: u64, path: &Path, follow: bool) -> StatInfo {
    let op = Op::Stat {
        path: path.to_string_lossy().into_owned(),
        checksum: Some(Digest::Sha1),
        follow,
    };
    match s.call(id, op) {
        OpResult::Stat(st) => st,
        other => panic!("{other:?}"),
    }
}

#[test]
fn stat_follows_on_request_and_reports_what_only_the_target_knows() {
    use std::os::unix::fs::MetadataExt;
    let home = TempDir::new("stat");
    let mut s = Session::start(&home.0);
    let file = home.0.join("f");
    std::fs::write(&file, b"abc").unwrap();
    std::os::unix::fs::symlink("f", home.0.join("l")).unwrap();
    let meta = std::fs::metadata(&file).unwrap();
    let st = stat(&mut s, 1, &file, false);
    assert_eq!((st.inode, st.dev, st.nlink), (meta.ino(), meta.dev(), 1));
    assert_eq!((st.atime, st.ctime), (meta.atime(), meta.ctime()));
    assert_eq!(st.mtime_nsec, meta.mtime_nsec() as u32);
    assert_eq!((st.blocks, st.block_size), (meta.blocks(), meta.blksize()));
    assert!(st.readable && st.writeable);
    let link = stat(&mut s, 2, &home.0.join("l"), false);
    assert_eq!(link.kind, FileKind::Symlink);
    assert_eq!(link.link_target.as_deref(), Some("f"));
    let real = std::fs::canonicalize(&file).unwrap();
    assert_eq!(link.lnk_source.as_deref(), real.to_str());
    assert_eq!(link.checksum, None);
    let through = stat(&mut s, 3, &home.0.join("l"), true);
    assert_eq!((through.kind, through.inode), (FileKind::File, meta.ino()));
    assert!(through.checksum.is_some() && through.lnk_source.is_none());
    std::fs::remove_file(&file).unwrap();
    assert!(!stat(&mut s, 4, &home.0.join("l"), true).exists);
    assert!(stat(&mut s, 5, &home.0.join("l"), false).exists);
    assert_eq!(s.finish(), 0);
}

fn tree(
    s: &mut Session,
    id: u64,
    path: &Path,
    max_depth: Option<u32>,
    follow: bool,
) -> TreeListing {
    let op = Op::ListTree {
        path: path.to_string_lossy().into_owned(),
        max_depth,
        follow,
        checksum: Some(Digest::Sha256),
    };
    match s.call(id, op) {
        OpResult::Tree(t) => t,
        other => panic!("{other:?}"),
    }
}

fn relative(t: &TreeListing) -> Vec<String> {
    let prefix = format!("{}/", t.root.path);
    t.entries
        .iter()
        .map(|e| e.path.strip_prefix(&prefix).unwrap().to_string())
        .collect()
}

#[test]
fn list_tree_by_depth_with_and_without_following_links() {
    let home = TempDir::new("tree");
    let mut s = Session::start(&home.0);
    let root = home.0.join("root");
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::create_dir_all(home.0.join("outside")).unwrap();
    std::fs::write(root.join("sub/deeper/f"), b"f").unwrap();
    std::fs::write(root.join("top"), b"abc").unwrap();
    std::fs::write(home.0.join("outside/o"), b"").unwrap();
    std::os::unix::fs::symlink("../outside", root.join("linked")).unwrap();
    std::os::unix::fs::symlink(".", root.join("sub/self")).unwrap();

    let t = tree(&mut s, 1, &root, None, false);
    assert_eq!(
        relative(&t),
        [
            "linked",
            "sub",
            "sub/deeper",
            "sub/deeper/f",
            "sub/self",
            "top"
        ]
    );
    assert_eq!(t.entries[0].kind, FileKind::Symlink);
    let top = t.entries.last().unwrap();
    assert_eq!((top.kind, top.size), (FileKind::File, 3));
    assert_eq!(
        top.checksum.as_deref(),
        Some(
            &{
                use sha2::Digest as _;
                sha2::Sha256::digest(b"abc").to_vec()
            }[..]
        )
    );
    assert_eq!(
        relative(&tree(&mut s, 2, &root, Some(1), false)),
        ["linked", "sub", "top"]
    );
    assert_eq!(
        relative(&tree(&mut s, 3, &root, Some(2), false)),
        ["linked", "sub", "sub/deeper", "sub/self", "top"]
    );
    let followed = tree(&mut s, 4, &root, None, true);
    assert_eq!(
        relative(&followed),
        [
            "linked",
            "linked/o",
            "sub",
            "sub/deeper",
            "sub/deeper/f",
            "sub/self",
            "top"
        ],
        "sub/self loops back to sub: listed, not entered"
    );
    assert_eq!(followed.entries[0].kind, FileKind::Directory);

    let missing = tree(&mut s, 5, &home.0.join("nope"), None, false);
    assert!(!missing.root.exists && missing.entries.is_empty() && missing.skipped.is_empty());
    assert_eq!(s.finish(), 0);
}

fn file_outcome(result: OpResult) -> FileOutcome {
    match result {
        OpResult::File(o) => o,
        other => panic!("{other:?}"),
    }
}

#[test]
fn backup_is_named_as_ansible_names_it_in_local_time() {
    let home = TempDir::new("backup");
    // A zone well away from UTC, written as a POSIX TZ so no zoneinfo is needed: the
    // name must be local time, as Ansible's time.localtime.
    let mut s = Session::start_with(&home.0, &[("TZ", "XYZ-5:30")]);
    let path = home.0.join("conf");
    std::fs::write(&path, b"old\n").unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o640)).unwrap();
    let ensure = |bytes: &[u8]| {
        Op::EnsureFile(EnsureFile {
            path: path.to_string_lossy().into_owned(),
            content: FileContent::Inline(bytes.to_vec()),
            mode: None,
            force: true,
            owner: Default::default(),
            validate: None,
            backup: true,
        })
    };
    let clock = "date +%Y-%m-%d@%H:%M:%S~";
    let check = file_outcome(s.call_in_check_mode(1, ensure(b"new\n")));
    assert_eq!((check.changed, check.backup_file), (true, None));
    let before = exec_stdout(s.call(2, shell(clock)));
    let o = file_outcome(s.call(3, ensure(b"new\n")));
    let after = exec_stdout(s.call(4, shell(clock)));
    let backup = o.backup_file.expect("a backup of the old file");
    let prefix = format!("{}.{}.", path.display(), s.hello.pid);
    let stamp = backup.strip_prefix(&prefix).expect("<path>.<pid>.<stamp>");
    assert!(
        before.trim_end() <= stamp && stamp <= after.trim_end(),
        "{stamp} not between {before} and {after}"
    );
    assert_eq!(std::fs::read(&backup).unwrap(), b"old\n");
    let meta = std::fs::metadata(&backup).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777,
        0o640
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"new\n");
    // Nothing changes: no backup.
    let o = file_outcome(s.call(5, ensure(b"new\n")));
    assert_eq!((o.changed, o.backup_file), (false, None));
    assert_eq!(s.finish(), 0);
}

#[test]
fn rename_moves_and_its_errors_name_both_paths() {
    let home = TempDir::new("rename");
    let mut s = Session::start(&home.0);
    std::fs::write(home.0.join("a"), b"a").unwrap();
    let rename = |from: &str, to: &str| Op::Rename {
        from: format!("~/{from}"),
        to: format!("~/{to}"),
    };
    let o = file_outcome(s.call(1, rename("a", "b")));
    assert_eq!((o.changed, o.kind), (true, FileKind::File));
    assert_eq!(Path::new(&o.path), home.0.join("b"));
    assert!(!home.0.join("a").exists());
    assert_eq!(std::fs::read(home.0.join("b")).unwrap(), b"a");
    let err = match s.call(2, rename("a", "c")) {
        OpResult::Error(e) => e,
        other => panic!("{other:?}"),
    };
    assert_eq!(err.kind, ErrorKind::NotFound);
    let (a, c) = (home.0.join("a"), home.0.join("c"));
    assert_eq!(
        err.message,
        format!(
            "cannot rename {} to {}: {} does not exist",
            a.display(),
            c.display(),
            a.display()
        )
    );
    // In a batch, a failed rename does not stop what follows.
    let OpResult::Batch(results) = s.call(
        3,
        Op::Batch(vec![rename("b", "missing/dir/b"), rename("b", "c")]),
    ) else {
        panic!("not a batch")
    };
    assert!(
        matches!(&results[0], OpResult::Error(e) if e.message.contains("missing/dir/b")
            && e.message.contains("No such file or directory")),
        "{:?}",
        results[0]
    );
    assert!(matches!(&results[1], OpResult::File(o) if o.changed));
    assert_eq!(std::fs::read(home.0.join("c")).unwrap(), b"a");
    assert_eq!(s.finish(), 0);
}

#[test]
fn exec_umask_reaches_the_child_only_and_absent_removes_trees() {
    let home = TempDir::new("umask");
    let mut s = Session::start(&home.0);
    let with_umask = |umask| {
        Op::Exec(Exec {
            command: Command::Shell {
                script: "umask".into(),
                executable: None,
            },
            chdir: None,
            creates: None,
            removes: None,
            env: vec![],
            stdin: None,
            umask,
        })
    };
    let inherited = exec_stdout(s.call(1, with_umask(None)));
    assert_eq!(exec_stdout(s.call(2, with_umask(Some(0o077)))), "0077\n");
    assert_eq!(exec_stdout(s.call(3, with_umask(None))), inherited);

    std::fs::create_dir_all(home.0.join("t/a/b")).unwrap();
    std::fs::write(home.0.join("t/a/b/f"), b"").unwrap();
    let absent = Op::EnsurePath(EnsurePath {
        path: "~/t".into(),
        state: PathState::Absent,
        mode: None,
        recurse_parents: false,
        owner: Default::default(),
    });
    assert!(file_outcome(s.call(4, absent.clone())).changed);
    assert!(!home.0.join("t").exists());
    assert!(!file_outcome(s.call(5, absent)).changed);
    assert_eq!(s.finish(), 0);
}
