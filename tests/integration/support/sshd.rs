//! A real, throw-away sshd on 127.0.0.1 and throw-away system users to log in as.
//! Needs root (CI and dev machines run tests as root) and /usr/sbin/sshd.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use turbo_play::connection::{ConnectionKind, ConnectionSpec, Proxy, StrictHostKeyChecking};

const SSHD: &str = "/usr/sbin/sshd";
const START_TIMEOUT: Duration = Duration::from_secs(10);

static NEXT_USER: AtomicU32 = AtomicU32::new(0);

/// useradd/usermod/userdel lock /etc/passwd and give up when another holds it: tests in
/// this process take turns.
static PASSWD_LOCK: Mutex<()> = Mutex::new(());

fn passwd_lock() -> MutexGuard<'static, ()> {
    PASSWD_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// sshd_config lines written from the fixture's directory and host key.
pub type ExtraConfig<'f> = dyn Fn(&Path, &Path) -> String + 'f;

/// What a test changes in an sshd's configuration.
#[derive(Default)]
pub struct SshdOptions<'a> {
    /// Lines before the defaults: sshd keeps the first value of an option, so these win
    /// (MaxStartups, whose last value counts, is left out of the defaults when given).
    pub head: &'a str,
    /// Lines after them (`Match` blocks).
    pub tail: &'a str,
    /// The address to listen on; 127.0.0.1 when unset.
    pub address: Option<&'a str>,
    /// Run inside this network namespace (`ip netns exec`).
    pub netns: Option<&'a str>,
    /// Accept this key pair's public key instead of a fresh one (hosts on several sshds
    /// logging in with the same key).
    pub user_key: Option<&'a Path>,
    /// More lines after `tail`, written from the fixture's directory and host key (e.g. to
    /// sign that key and name a HostCertificate).
    pub extra: Option<&'a ExtraConfig<'a>>,
}

pub struct Sshd {
    pub dir: tempfile::TempDir,
    /// The address it listens on.
    pub address: String,
    pub port: u16,
    /// `ssh-ed25519 AAAA...` (no comment).
    pub host_key_pub: String,
    /// A private key (ed25519, no passphrase) every added user accepts.
    pub user_key: PathBuf,
    child: Child,
}

impl Sshd {
    pub fn start() -> Sshd {
        Sshd::start_with(&SshdOptions::default())
    }

    pub fn start_with(options: &SshdOptions) -> Sshd {
        let address = options.address.unwrap_or("127.0.0.1").to_string();
        let dir = tempfile::tempdir().expect("tempdir");
        // sshd reads authorized_keys as the user: the directory must be traversable.
        set_mode(dir.path(), 0o755);
        let host_key = dir.path().join("host_ed25519");
        keygen(&host_key);
        let user_key = match options.user_key {
            Some(key) => key.to_path_buf(),
            None => {
                let key = dir.path().join("user_ed25519");
                keygen(&key);
                key
            }
        };
        let authorized = dir.path().join("authorized_keys");
        std::fs::copy(user_key.with_extension("pub"), &authorized).expect("authorized_keys");
        set_mode(&authorized, 0o644);
        let host_key_pub = key_without_comment(&host_key.with_extension("pub"));
        let extra = options
            .extra
            .map(|extra| extra(dir.path(), &host_key))
            .unwrap_or_default();
        std::fs::create_dir_all("/run/sshd").expect("/run/sshd");

        let mut last_error = String::new();
        // The free port can be taken between our probe and sshd's bind: try a few.
        for _ in 0..5 {
            let port = free_port();
            let config = dir.path().join("sshd_config");
            // Inside a namespace the port can only be seen from there: wait for sshd's
            // own word that it listens (INFO level).
            let log_level = if options.netns.is_some() {
                "LogLevel VERBOSE\n"
            } else {
                ""
            };
            std::fs::write(
                &config,
                format!(
                    "{head}{log_level}ListenAddress {address}:{port}\n\
                     HostKey {host_key}\n\
                     AuthorizedKeysFile {authorized}\n\
                     UsePAM no\n\
                     StrictModes no\n\
                     PasswordAuthentication no\n\
                     KbdInteractiveAuthentication no\n\
                     PermitRootLogin prohibit-password\n\
                     PidFile {pid}\n\
                     LogLevel ERROR\n\
                     PrintMotd no\n\
                     UseDNS no\n\
                     {max_startups}\
                     {tail}{extra}",
                    // The one option sshd takes the last value of.
                    max_startups = if options.head.contains("MaxStartups") {
                        ""
                    } else {
                        "MaxStartups 100\n"
                    },
                    head = options.head,
                    tail = options.tail,
                    host_key = host_key.display(),
                    authorized = authorized.display(),
                    pid = dir.path().join("pid").display(),
                ),
            )
            .expect("sshd_config");
            let log = std::fs::File::create(dir.path().join("sshd.log")).expect("sshd.log");
            let mut command = match options.netns {
                Some(netns) => {
                    let mut c = Command::new("ip");
                    c.args(["netns", "exec", netns, SSHD]);
                    c
                }
                None => Command::new(SSHD),
            };
            let mut child = command
                .arg("-D")
                .arg("-e")
                .arg("-f")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .unwrap_or_else(|e| panic!("starting {SSHD}: {e} (is openssh-server installed?)"));
            let ready = match options.netns {
                Some(_) => wait_for_log(&dir.path().join("sshd.log"), &mut child),
                None => wait_for_port(&address, port, &mut child),
            };
            match ready {
                Ok(()) => {
                    return Sshd {
                        dir,
                        address,
                        port,
                        host_key_pub,
                        user_key,
                        child,
                    };
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log =
                        std::fs::read_to_string(dir.path().join("sshd.log")).unwrap_or_default();
                    last_error = format!("{e}; sshd said: {log}");
                }
            }
        }
        panic!("sshd did not start: {last_error}");
    }

    /// `[127.0.0.1]:port ssh-ed25519 AAAA...`
    pub fn known_hosts_line(&self) -> String {
        format!("[{}]:{} {}", self.address, self.port, self.host_key_pub)
    }

    /// What sshd wrote to its log (stderr) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// A known_hosts file in the fixture's directory holding `text`.
    pub fn known_hosts_file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("known_hosts");
        path
    }

    /// A fresh user with its own empty home, deleted again on drop.
    pub fn add_user(&self) -> TestUser {
        let n = NEXT_USER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let name = format!("tpt{}x{n}x{}", std::process::id(), nanos % 100_000);
        let home = self.dir.path().join(format!("home-{n}"));
        let _passwd = passwd_lock();
        run(Command::new("useradd")
            .args(["-M", "-s", "/bin/sh", "-d"])
            .arg(&home)
            .arg(&name));
        // From here on the user exists: make sure Drop removes it even if a step fails.
        let user = TestUser {
            name: name.clone(),
            home: home.clone(),
        };
        std::fs::create_dir_all(&home).expect("home");
        run(Command::new("chown").arg(format!("{name}:")).arg(&home));
        // With UsePAM no, sshd refuses accounts whose password field starts with '!'.
        run(Command::new("usermod").args(["-p", "*"]).arg(&name));
        user
    }

    /// A spec for `user` on this sshd, trusting `known_hosts`.
    pub fn spec(
        &self,
        user: &TestUser,
        known_hosts: PathBuf,
        strict: StrictHostKeyChecking,
    ) -> ConnectionSpec {
        ConnectionSpec {
            host: format!("test-{}", user.name),
            kind: ConnectionKind::Ssh,
            address: self.address.clone(),
            port: self.port,
            user: user.name.clone(),
            identity_files: vec![self.user_key.clone()],
            strict,
            known_hosts_files: vec![known_hosts],
            connect_timeout: Duration::from_secs(10),
            proxy: Proxy::None,
            password: None,
            retries: None,
            ssh: Default::default(),
        }
    }

    /// A spec for `user` with a known_hosts file that knows this sshd.
    pub fn trusted_spec(&self, user: &TestUser) -> ConnectionSpec {
        let known = self.known_hosts_file(
            &format!("known_hosts-{}", user.name),
            &format!("{}\n", self.known_hosts_line()),
        );
        self.spec(user, known, StrictHostKeyChecking::Yes)
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub struct TestUser {
    pub name: String,
    pub home: PathBuf,
}

impl TestUser {
    /// Gives the user a password (sshd's password and keyboard-interactive logins).
    pub fn set_password(&self, password: &str) {
        use std::io::Write;
        let _passwd = passwd_lock();
        let mut child = Command::new("chpasswd")
            .stdin(Stdio::piped())
            .spawn()
            .expect("chpasswd");
        writeln!(child.stdin.take().unwrap(), "{}:{password}", self.name).unwrap();
        assert!(child.wait().unwrap().success(), "chpasswd failed");
    }

    /// Runs `chown -R user: path`.
    pub fn give(&self, path: &Path) {
        run(Command::new("chown")
            .arg("-R")
            .arg(format!("{}:", self.name))
            .arg(path));
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        // An agent may still be exiting after its session closed: give it a moment, then
        // force (its process ends by itself on EOF).
        for attempt in 0..20 {
            let passwd = passwd_lock();
            let mut cmd = Command::new("userdel");
            if attempt == 19 {
                cmd.arg("-f");
            }
            let status = cmd.arg(&self.name).stderr(Stdio::null()).status();
            if matches!(status, Ok(s) if s.success()) {
                break;
            }
            drop(passwd);
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind 127.0.0.1:0")
        .local_addr()
        .expect("local addr")
        .port()
}

/// sshd's own word that it listens: a connect alone can be answered by the connecting
/// socket itself (a loopback self-connection when the probe's source port is the port).
pub fn wait_for_log(log: &Path, child: &mut Child) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < START_TIMEOUT {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("sshd exited with {status}"));
        }
        if std::fs::read_to_string(log).is_ok_and(|text| text.contains("Server listening on")) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Err(format!(
        "sshd did not say it listens within {START_TIMEOUT:?}"
    ))
}

fn wait_for_port(address: &str, port: u16, child: &mut Child) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < START_TIMEOUT {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("sshd exited with {status}"));
        }
        if let Ok(stream) = TcpStream::connect((address, port)) {
            // A self-connection (source port == the probed port) is nobody listening.
            if stream.local_addr().ok() != stream.peer_addr().ok() {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Err(format!("port {port} not accepting after {START_TIMEOUT:?}"))
}

pub fn keygen(path: &Path) {
    run(Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "", "-f"])
        .arg(path));
}

fn key_without_comment(pub_path: &Path) -> String {
    let text = std::fs::read_to_string(pub_path).expect("public key");
    text.split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
