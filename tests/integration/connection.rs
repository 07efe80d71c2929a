//! open_agent against a real sshd: bootstrap, caching, stale files, host keys, errors,
//! and the local connection.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use turbo_play::agent_binary::agent_binary;
use turbo_play::connection::{
    ConnectError, ConnectionKind, ConnectionSpec, Proxy, StrictHostKeyChecking, open_agent,
};
use turbo_proto::{Command, Exec, FileKind, Op, OpResult};

use crate::support::sshd::{Sshd, TestUser, free_port, keygen};

fn cache_path(user: &TestUser) -> PathBuf {
    user.home
        .join(".cache/turbo-play")
        .join(agent_binary().unwrap().remote_name())
}

fn stat(path: &str) -> Op {
    Op::Stat {
        path: path.into(),
        checksum: None,
        follow: false,
    }
}

async fn expect_error(spec: &ConnectionSpec) -> String {
    match open_agent(spec).await {
        Ok(_) => panic!("connecting to {} should have failed", spec.host),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn first_connect_uploads_then_the_cached_agent_is_reused() {
    let sshd = Sshd::start();
    let user = sshd.add_user();
    let spec = sshd.trusted_spec(&user);

    let session = open_agent(&spec).await.expect("first connect");
    let hello = session.hello().clone();
    assert_eq!(hello.user, user.name);
    assert_eq!(hello.home, user.home.to_string_lossy());
    assert_eq!(hello.protocol_version, turbo_proto::PROTOCOL_VERSION);
    let report = session.bootstrap().clone();
    assert!(report.uploaded);
    assert!(!report.replaced_stale);
    assert!(report.upload_bytes > 0);
    // Sent gzip-compressed, so smaller than the binary.
    assert!(report.upload_bytes < agent_binary().unwrap().bytes.len() as u64);

    let cached = cache_path(&user);
    let meta = std::fs::metadata(&cached).expect("agent cached on the host");
    assert_eq!(meta.len(), agent_binary().unwrap().bytes.len() as u64);
    assert_eq!(meta.permissions().mode() & 0o777, 0o700);

    // Pipelined calls over the channel.
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let s = session.clone();
            tokio::spawn(async move { s.call(stat("~"), false, false).await })
        })
        .collect();
    for call in calls {
        match call.await.unwrap().expect("stat over ssh") {
            OpResult::Stat(info) => {
                assert!(info.exists);
                assert_eq!(info.kind, FileKind::Directory);
            }
            other => panic!("unexpected reply {other:?}"),
        }
    }
    // A command runs as the login user, and its output travels inside the reply.
    let exec = Op::Exec(Exec {
        command: Command::Shell {
            script: "id -un; echo oops >&2; exit 3".into(),
            executable: None,
        },
        chdir: None,
        creates: None,
        removes: None,
        env: vec![],
        stdin: None,
        umask: None,
    });
    match session
        .call(exec, false, false)
        .await
        .expect("exec over ssh")
    {
        OpResult::Exec(out) => {
            assert_eq!(out.rc, 3);
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), user.name);
            assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), "oops");
        }
        other => panic!("unexpected reply {other:?}"),
    }
    let (sent, received) = session.traffic();
    assert!(sent > 0 && received > 0);
    session.close().await;
    assert!(session.call(stat("~"), false, false).await.is_err());

    let again = open_agent(&spec).await.expect("second connect");
    assert!(!again.bootstrap().uploaded);
    assert_eq!(again.bootstrap().upload_bytes, 0);
    assert_eq!(again.hello().user, user.name);
    again.close().await;
}

/// Puts `content` at the agent's cache path, executable and owned by the user.
fn plant_stale(user: &TestUser, content: &[u8]) {
    let path = cache_path(user);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, content).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    user.give(&user.home.join(".cache"));
}

#[tokio::test]
async fn a_stale_file_at_the_cache_path_is_replaced() {
    let sshd = Sshd::start();
    let size = agent_binary().unwrap().bytes.len();

    // Same-size garbage: it cannot even be executed.
    let user = sshd.add_user();
    plant_stale(&user, &vec![0u8; size]);
    let session = open_agent(&sshd.trusted_spec(&user))
        .await
        .expect("garbage replaced");
    assert!(session.bootstrap().uploaded);
    assert!(session.bootstrap().replaced_stale);
    assert_eq!(
        std::fs::read(cache_path(&user)).unwrap(),
        agent_binary().unwrap().bytes.as_ref()
    );
    session.close().await;

    // A same-size shell script that runs and prints something that is not a frame.
    let user = sshd.add_user();
    let mut script = b"#!/bin/sh\necho I am not an agent\nexit 0\n#".to_vec();
    script.resize(size, b'#');
    plant_stale(&user, &script);
    let session = open_agent(&sshd.trusted_spec(&user))
        .await
        .expect("script replaced");
    assert!(session.bootstrap().replaced_stale);
    assert_eq!(session.hello().user, user.name);
    session.close().await;

    // Another size: simply uploaded again, nothing "stale" was run.
    let user = sshd.add_user();
    plant_stale(&user, b"#!/bin/sh\nexit 1\n");
    let session = open_agent(&sshd.trusted_spec(&user))
        .await
        .expect("other size");
    assert!(session.bootstrap().uploaded);
    assert!(!session.bootstrap().replaced_stale);
    session.close().await;
}

#[tokio::test]
async fn a_changed_host_key_is_refused() {
    let sshd = Sshd::start();
    let user = sshd.add_user();
    let other = sshd.dir.path().join("other_host_key");
    keygen(&other);
    let other_pub = std::fs::read_to_string(other.with_extension("pub")).unwrap();
    let known = sshd.known_hosts_file(
        "known_hosts_changed",
        &format!("# earlier entries\n[127.0.0.1]:{} {}", sshd.port, other_pub),
    );
    for strict in [
        StrictHostKeyChecking::Yes,
        StrictHostKeyChecking::AcceptNew,
        StrictHostKeyChecking::No,
    ] {
        let spec = sshd.spec(&user, known.clone(), strict);
        let err = expect_error(&spec).await;
        assert!(
            err.starts_with(&format!(
                "REMOTE HOST IDENTIFICATION HAS CHANGED for [127.0.0.1]:{}",
                sshd.port
            )),
            "{err}"
        );
        assert!(err.contains("known_hosts_changed line 2"), "{err}");
        assert!(err.contains("refusing to connect"), "{err}");
    }
    assert!(!cache_path(&user).exists(), "nothing ran on a refused host");
}

#[tokio::test]
async fn an_unknown_host_key_depends_on_strict_checking() {
    let sshd = Sshd::start();
    let user = sshd.add_user();

    let empty = sshd.known_hosts_file("known_hosts_empty", "");
    let err = expect_error(&sshd.spec(&user, empty.clone(), StrictHostKeyChecking::Yes)).await;
    assert!(
        err.starts_with(&format!(
            "host key for [127.0.0.1]:{} is not known (ED25519 SHA256:",
            sshd.port
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("ssh-keyscan -p {} 127.0.0.1 >> ", sshd.port)),
        "{err}"
    );

    let session = open_agent(&sshd.spec(&user, empty.clone(), StrictHostKeyChecking::No))
        .await
        .expect("StrictHostKeyChecking=no connects");
    session.close().await;
    assert_eq!(
        std::fs::read_to_string(&empty).unwrap(),
        "",
        "no records nothing"
    );

    // accept-new records the key (creating the file), after which Yes accepts it.
    let fresh = sshd.dir.path().join("new-dir/known_hosts");
    let session = open_agent(&sshd.spec(&user, fresh.clone(), StrictHostKeyChecking::AcceptNew))
        .await
        .expect("accept-new connects");
    session.close().await;
    assert_eq!(
        std::fs::read_to_string(&fresh).unwrap(),
        format!("{}\n", sshd.known_hosts_line())
    );
    let session = open_agent(&sshd.spec(&user, fresh, StrictHostKeyChecking::Yes))
        .await
        .expect("the recorded key is now known");
    session.close().await;

    // /dev/null as the only file: unknown, and nothing is written anywhere.
    let err = expect_error(&sshd.spec(
        &user,
        PathBuf::from("/dev/null"),
        StrictHostKeyChecking::Yes,
    ))
    .await;
    assert!(err.contains("is not known"), "{err}");
}

#[tokio::test]
async fn a_closed_port_says_connection_refused() {
    let port = free_port();
    let spec = ConnectionSpec {
        host: "nowhere".into(),
        kind: ConnectionKind::Ssh,
        address: "127.0.0.1".into(),
        port,
        user: "nobody".into(),
        identity_files: vec![],
        strict: StrictHostKeyChecking::Yes,
        known_hosts_files: vec![PathBuf::from("/dev/null")],
        connect_timeout: Duration::from_secs(5),
        proxy: Proxy::None,
        password: None,
        retries: None,
        ssh: Default::default(),
    };
    let err = open_agent(&spec)
        .await
        .err()
        .expect("nothing listens there");
    assert!(matches!(err, ConnectError::Tcp { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("ssh: connect to host 127.0.0.1 port {port}: Connection refused")
    );
}

#[tokio::test]
async fn a_key_the_server_does_not_accept_is_permission_denied() {
    let sshd = Sshd::start();
    let user = sshd.add_user();
    let stranger = sshd.dir.path().join("stranger_key");
    keygen(&stranger);
    let mut spec = sshd.trusted_spec(&user);
    spec.identity_files = vec![stranger.clone(), sshd.dir.path().join("missing_key")];
    let err = expect_error(&spec).await;
    assert!(
        err.starts_with(&format!(
            "Permission denied (publickey) for user {}: tried ",
            user.name
        )),
        "{err}"
    );
    assert!(err.contains("stranger_key"), "{err}");
    assert!(err.contains("missing_key (missing)"), "{err}");

    // The right key after a wrong one still gets in.
    spec.identity_files = vec![stranger, sshd.user_key.clone()];
    open_agent(&spec)
        .await
        .expect("second key accepted")
        .close()
        .await;
}

#[tokio::test]
async fn several_users_on_several_servers_at_once() {
    let first = Sshd::start();
    let second = Sshd::start();
    let users = [first.add_user(), first.add_user(), second.add_user()];
    let specs = [
        first.trusted_spec(&users[0]),
        first.trusted_spec(&users[1]),
        second.trusted_spec(&users[2]),
    ];
    let (a, b, c) = tokio::join!(
        open_agent(&specs[0]),
        open_agent(&specs[1]),
        open_agent(&specs[2])
    );
    let sessions = [a, b, c];
    for (session, user) in sessions.iter().zip(&users) {
        let session = session.as_ref().expect("connect");
        assert_eq!(session.hello().user, user.name);
        assert!(session.bootstrap().uploaded);
    }
    for session in sessions.into_iter().flatten() {
        session.close().await;
    }
}

#[tokio::test]
async fn the_local_connection_runs_the_agent_as_a_child() {
    let spec = ConnectionSpec {
        host: "localhost".into(),
        kind: ConnectionKind::Local,
        address: "localhost".into(),
        port: 22,
        user: "ignored".into(),
        identity_files: vec![],
        strict: StrictHostKeyChecking::Yes,
        known_hosts_files: vec![],
        connect_timeout: Duration::from_secs(5),
        proxy: Proxy::None,
        password: None,
        retries: None,
        ssh: Default::default(),
    };
    let session = open_agent(&spec).await.expect("local agent");
    let hello = session.hello().clone();
    assert_eq!(hello.uid, 0, "tests run as root");
    assert_eq!(hello.user, "root");
    let home = std::env::var("HOME").unwrap();
    assert_eq!(hello.home, home);
    let installed = PathBuf::from(&home)
        .join(".cache/turbo-play")
        .join(agent_binary().unwrap().remote_name());
    assert!(installed.exists());
    match session.call(stat(&home), false, false).await.unwrap() {
        OpResult::Stat(info) => assert_eq!(info.kind, FileKind::Directory),
        other => panic!("unexpected reply {other:?}"),
    }
    session.close().await;

    // Already installed: nothing written the second time.
    let again = open_agent(&spec).await.expect("local agent again");
    assert!(!again.bootstrap().uploaded);
    again.close().await;
}

#[tokio::test]
async fn calls_fail_instead_of_hanging_when_the_agent_dies() {
    let sshd = Sshd::start();
    let user = sshd.add_user();
    let session = open_agent(&sshd.trusted_spec(&user))
        .await
        .expect("connect");
    session.call(stat("~"), false, false).await.expect("alive");
    // The agent is this test's own process (started through the session): end it by pid.
    let pid = session.hello().pid;
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let result = tokio::time::timeout(Duration::from_secs(10), async {
        // The first call may race the EOF; within a few tries every call must fail.
        loop {
            match session.call(stat("~"), false, false).await {
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => return e,
            }
        }
    })
    .await
    .expect("calls to a dead agent must not hang");
    // sshd's exit-signal for the agent's process names the cause.
    assert_eq!(
        result.to_string(),
        format!("the agent (pid {pid}) on the host was killed by signal 9 (SIGKILL) mid-task")
    );
    assert!(session.is_closed());
}
