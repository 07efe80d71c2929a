//! Real Debian 12 test hosts: a copy (an overlay) of the base that tests/debian/build-base.sh
//! makes once with debootstrap, running its own sshd on a loopback port. Each host lives in its own
//! mount, UTS and PID namespace (`unshare`), so the /proc and devpts it mounts are never
//! visible outside, vanish with it however the test ends, and every process started inside
//! (agents, sudo, services an init script started) dies with its sshd.
//!
//! Users inside (see build-base.sh): `deploy` logs in and has sudo without a password,
//! `admin` has sudo with [`TEST_PASSWORD`], `plain` has no sudo. Every account's password,
//! root's included, is [`TEST_PASSWORD`]; every user but root accepts the base's key.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::sshd::{free_port, wait_for_log};

/// The password of every account in the base (build-base.sh's TEST_PASSWORD).
pub const TEST_PASSWORD: &str = "turbo-test-password";
/// The login user: sudo without a password.
pub const LOGIN_USER: &str = "deploy";
/// sudo that asks for [`TEST_PASSWORD`].
pub const SUDO_PASSWORD_USER: &str = "admin";
/// No sudo: for su and for a non-root become_user.
pub const PLAIN_USER: &str = "plain";

const SUITE: &str = "bookworm";

static NEXT_HOST: AtomicU32 = AtomicU32::new(0);

/// The built base: target/debian/<suite>-<hash of build-base.sh>/.
pub struct DebianBase {
    pub dir: PathBuf,
}

impl DebianBase {
    pub fn rootfs(&self) -> PathBuf {
        self.dir.join("rootfs")
    }

    /// The private key every user inside accepts.
    pub fn client_key(&self) -> PathBuf {
        self.dir.join("client_ed25519")
    }

    /// `ssh-ed25519 AAAA...`: every copy's host key.
    pub fn host_key_pub(&self) -> String {
        let path = self.dir.join("host_ed25519.pub");
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .trim()
            .to_string()
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The base these tests can use, or why there is none. A base built by another version of
/// build-base.sh does not count: its users or packages may not be the ones the tests expect.
pub fn base() -> Result<&'static DebianBase, &'static str> {
    static BASE: OnceLock<Result<DebianBase, String>> = OnceLock::new();
    BASE.get_or_init(find_base)
        .as_ref()
        .map_err(|reason| reason.as_str())
}

fn find_base() -> Result<DebianBase, String> {
    let script = repo().join("tests/debian/build-base.sh");
    let bytes = std::fs::read(&script).map_err(|e| format!("{}: {e}", script.display()))?;
    let stamp = &turbo_play::agent_binary::sha256_hex(&bytes)[..16];
    let dir = repo()
        .join("target/debian")
        .join(format!("{SUITE}-{stamp}"));
    if !is_root() {
        return Err("they need root (they start sshd in a chroot)".into());
    }
    if !dir.join(".ready").is_file() {
        return Err(format!(
            "the Debian base for this version of tests/debian/build-base.sh is not built \
             ({} is missing): run `bash tests/debian/build-base.sh` as root (needs debootstrap)",
            dir.join(".ready").display()
        ));
    }
    Ok(DebianBase { dir })
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout.trim_ascii() == b"0")
        .unwrap_or(false)
}

/// Whether the Debian hosts can start here. When they cannot, prints why the test `test` is
/// skipped and returns false; under CI (which builds the base first, as root) a missing base
/// fails the test instead of hiding it.
#[track_caller]
pub fn available(test: &str) -> bool {
    match base() {
        Ok(_) => true,
        Err(reason) => {
            if std::env::var("CI").as_deref() == Ok("true") && is_root() {
                panic!("{test}: no Debian base under CI: {reason}");
            }
            eprintln!("{test}: skipped: {reason}");
            false
        }
    }
}

/// One running Debian host: a fresh copy of the base, its sshd listening on
/// 127.0.0.1:`port`. The copy is an overlay on the base, mounted inside the host's own mount
/// namespace: it starts in milliseconds whatever the disk is doing (a `cp -a` of the base's
/// ~240 MB took 0.3 s to 6 s here, and as long again to remove), the base stays untouched
/// whatever the test does, and only what the test changed is written, under `dir/upper`.
/// The overlay is `volatile`: it never syncs, so its unmount does not wait for the whole
/// disk's writeback (0.4 s to 2.5 s here otherwise).
/// Dropping it stops everything inside and removes `dir`.
///
/// Start and drop it on the test's own thread: the namespace is tied to the starting thread
/// (so that a test process that dies leaves no sshd behind) and ends when that thread does.
pub struct DebianHost {
    pub name: String,
    pub port: u16,
    /// The host's directory: `upper/` (what changed), `known_hosts`, `sshd.log`.
    pub dir: PathBuf,
    /// The host's own PID 1 (sshd), as seen from outside, for entering its namespaces.
    init_pid: u32,
    child: Child,
    base: &'static DebianBase,
}

impl DebianHost {
    /// A fresh copy of the base named `name` (its hostname inside, too), running sshd.
    /// Panics if there is no base: check [`available`] first.
    #[track_caller]
    pub fn start(name: &str) -> DebianHost {
        assert!(
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{name:?}: a Debian host's name is its hostname: lowercase letters, digits and '-'"
        );
        let base = base().unwrap_or_else(|reason| panic!("no Debian base: {reason}"));
        let hosts = repo().join("target/debian/hosts");
        std::fs::create_dir_all(&hosts).expect("target/debian/hosts");
        remove_abandoned_hosts(&hosts);
        let n = NEXT_HOST.fetch_add(1, Ordering::Relaxed);
        let dir = hosts.join(format!("{}-{n}-{name}", std::process::id()));
        for sub in ["upper", "root"] {
            std::fs::create_dir_all(dir.join(sub)).expect("host directory");
        }

        let mut last_error = String::new();
        // The free port can be taken between our probe and sshd's bind: try a few.
        for _ in 0..5 {
            // A volatile overlay marks its work directory, and refuses one so marked.
            let _ = std::fs::remove_dir_all(dir.join("work"));
            std::fs::create_dir_all(dir.join("work")).expect("overlay work directory");
            let port = free_port();
            let mut child = spawn_sshd(name, &dir, &base.rootfs(), port);
            match wait_for_log(&dir.join("sshd.log"), &mut child) {
                Ok(()) => {
                    let init_pid = namespace_init(child.id()).unwrap_or_else(|| {
                        let _ = child.kill();
                        panic!("{name}: sshd listens on {port} but its process is not found")
                    });
                    let known_hosts = dir.join("known_hosts");
                    std::fs::write(
                        &known_hosts,
                        format!("[127.0.0.1]:{port} {}\n", base.host_key_pub()),
                    )
                    .expect("known_hosts");
                    return DebianHost {
                        name: name.to_string(),
                        port,
                        dir,
                        init_pid,
                        child,
                        base,
                    };
                }
                Err(e) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let log = std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default();
                    last_error = format!("{e}; sshd said: {log}");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
        panic!("{name}: the Debian host's sshd did not start: {last_error}");
    }

    /// The host's root directory as seen from outside, while it runs (its PID 1's root
    /// through /proc). An absolute symlink inside resolves against the outside's root from
    /// here: [`read`](Self::read) and [`stat`](Self::stat) resolve it inside.
    pub fn rootfs(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root", self.init_pid))
    }

    /// A known_hosts file that trusts this host.
    pub fn known_hosts(&self) -> PathBuf {
        self.dir.join("known_hosts")
    }

    /// The private key every user inside accepts.
    pub fn key(&self) -> PathBuf {
        self.base.client_key()
    }

    /// The INI line for this host, logging in as `user` (one of the base's users).
    pub fn line_as(&self, user: &str) -> String {
        format!(
            "{name} ansible_host=127.0.0.1 ansible_port={port} ansible_user={user} \
             ansible_ssh_private_key_file={key} ansible_python_interpreter=/usr/bin/python3 \
             ansible_ssh_common_args='-o UserKnownHostsFile={kh}'",
            name = self.name,
            port = self.port,
            key = self.key().display(),
            kh = self.known_hosts().display(),
        )
    }

    /// The INI line for this host, logging in as [`LOGIN_USER`].
    pub fn line(&self) -> String {
        self.line_as(LOGIN_USER)
    }

    /// Runs `args` as root inside the host (its root, namespaces and hostname: what a
    /// command run through its sshd sees), waiting for it to end.
    pub fn command(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("nsenter");
        cmd.arg(format!("--target={}", self.init_pid))
            .args(["--mount", "--uts", "--pid", "--root", "--wd=/", "--"])
            .args(args)
            .env_clear()
            .env(
                "PATH",
                "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            )
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        cmd.output()
            .unwrap_or_else(|e| panic!("{}: nsenter {args:?}: {e}", self.name))
    }

    /// [`command`](Self::command)'s standard output; panics if it fails.
    #[track_caller]
    pub fn check_output(&self, args: &[&str]) -> String {
        let out = self.command(args);
        assert!(
            out.status.success(),
            "{}: {args:?} failed ({}): {}{}",
            self.name,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// The bytes of `path` inside the host (symlinks resolved inside, not outside).
    #[track_caller]
    pub fn read(&self, path: &str) -> Vec<u8> {
        let out = self.command(&["cat", "--", path]);
        assert!(
            out.status.success(),
            "{}: cannot read {path}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    /// `path`'s type, mode and owners inside the host, or None if it does not exist.
    pub fn stat(&self, path: &str) -> Option<FileInfo> {
        let out = self.command(&["stat", "-c", "%F|%a|%U|%G", "--", path]);
        if !out.status.success() {
            return None;
        }
        let text = String::from_utf8(out.stdout).expect("utf-8 stat");
        let mut fields = text.trim_end().split('|');
        let mut next = || fields.next().expect("stat field").to_string();
        Some(FileInfo {
            kind: next(),
            mode: u32::from_str_radix(&next(), 8).expect("octal mode"),
            owner: next(),
            group: next(),
        })
    }

    /// Installed packages and their versions (`dpkg-query -W`), one `name\tversion` a line.
    pub fn packages(&self) -> String {
        self.check_output(&["dpkg-query", "-W", "-f", "${Package}\t${Version}\n"])
    }

    /// Everything under `dir` inside the host, one sorted line a path:
    /// `<path> <type> <mode> <owner> <group> <sha256 of a file | a link's target | ->`,
    /// for comparing two hosts that two tools ran the same playbook on (`/etc`, a home).
    pub fn snapshot(&self, dir: &str) -> String {
        let listing = self.check_output(&[
            "find",
            dir,
            "-mindepth",
            "1",
            "-printf",
            "%P\\0%y %m %u %g %l\\0",
        ]);
        // One sha256sum for every file: a process per file would cost seconds on /etc.
        let sums = self.check_output(&["sh", "-c", SNAPSHOT_SUMS, "sh", dir]);
        let sums: std::collections::HashMap<&str, &str> = sums
            .lines()
            .filter_map(|l| l.split_once("  "))
            .map(|(sum, path)| (path.trim_start_matches("./"), sum))
            .collect();
        let fields: Vec<&str> = listing.split('\0').collect();
        let mut lines: Vec<String> = fields
            .chunks_exact(2)
            .map(|pair| {
                let (path, meta) = (pair[0], pair[1]);
                // The link's target comes last: it may hold spaces.
                let fields: Vec<&str> = meta.splitn(5, ' ').collect();
                let [kind, mode, owner, group, link] = fields[..] else {
                    panic!("find printed {meta:?}");
                };
                let tail = match kind {
                    "f" => sums.get(path).copied().unwrap_or("?"),
                    "l" => link,
                    _ => "-",
                };
                format!("{path} {kind} {mode} {owner} {group} {tail}")
            })
            .collect();
        lines.sort_unstable();
        lines.iter().map(|l| format!("{l}\n")).collect()
    }
}

/// The digests of every file under `$1` (sha256sum's lines), shadow files' digests last:
/// those are of the file with each entry's day of the last password change left out, as
/// that field is the day the account was made or changed, and a recording must stay true
/// on another day. tests/debian/record.sh runs the same script.
const SNAPSHOT_SUMS: &str = "cd \"$1\" && find . -type f -print0 | xargs -0r sha256sum -- && \
     for f in shadow shadow-; do [ -f \"$f\" ] || continue; \
     printf '%s  ./%s\\n' \"$(sed -E 's/^([^:]*:[^:]*:)[0-9]*:/\\1:/' \"$f\" | sha256sum | cut -d' ' -f1)\" \"$f\"; done";

/// A file's type (stat's words: "regular file", "directory", ...), mode and owners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    pub kind: String,
    pub mode: u32,
    pub owner: String,
    pub group: String,
}

impl Drop for DebianHost {
    fn drop(&mut self) {
        // SIGKILL to the namespace's PID 1 ends every process inside with it, and with the
        // last of them the mounts; unshare, which waits for its PID 1, then exits. Once it
        // is reaped, `dir` is plain files, safe to remove. (Killing unshare instead would
        // leave reaping the PID 1 to the machine's init, which may take seconds.)
        let killed = Command::new("kill")
            .args(["-KILL", &self.init_pid.to_string()])
            .stderr(Stdio::null())
            .status();
        if !matches!(killed, Ok(s) if s.success()) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            eprintln!("{}: removing {}: {e}", self.name, self.dir.display());
        }
    }
}

/// unshare (in new mount, UTS and PID namespaces, killed with the thread that starts it)
/// mounts the overlay of `dir/upper` on the base at `dir/root`, /proc and a devpts of its
/// own inside it, names the host, gives it this machine's resolv.conf (apt inside reaches
/// the archive through this machine's network), and runs its sshd chrooted as the
/// namespace's PID 1. The base's sshd logs only errors; `LogLevel=INFO` on the command line
/// (which wins over sshd_config) makes it say "Server listening on", which is when it is ready.
fn spawn_sshd(name: &str, dir: &Path, base: &Path, port: u16) -> Child {
    let dir = dir.to_str().expect("utf-8 path");
    let base = base.to_str().expect("utf-8 path");
    let script = format!(
        "set -e\n\
         mount -t overlay overlay -o 'volatile,lowerdir={base},upperdir={dir}/upper,workdir={dir}/work' \
           '{dir}/root'\n\
         mount -t proc proc '{dir}/root/proc'\n\
         mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts '{dir}/root/dev/pts'\n\
         echo '{name}' > '{dir}/root/etc/hostname'\n\
         cat /etc/resolv.conf > '{dir}/root/etc/resolv.conf'\n\
         printf '127.0.0.1\\tlocalhost\\n127.0.1.1\\t%s\\n::1\\tlocalhost ip6-localhost ip6-loopback\\n' \
           '{name}' > '{dir}/root/etc/hosts'\n\
         hostname '{name}'\n\
         exec chroot '{dir}/root' /usr/sbin/sshd -D -e -p {port} -o ListenAddress=127.0.0.1:{port} \
           -o LogLevel=INFO\n"
    );
    let log = std::fs::File::create(Path::new(dir).join("sshd.log")).expect("sshd.log");
    Command::new("setpriv")
        .args(["--pdeathsig", "KILL", "--"])
        .args([
            "unshare",
            "--mount",
            "--uts",
            "--pid",
            "--fork",
            "--kill-child",
        ])
        .args(["--propagation", "private", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("{name}: starting unshare: {e} (util-linux is needed)"))
}

/// The pid of unshare's child (the namespace's PID 1), from the outside's /proc.
/// sshd says it listens only after unshare forked it, but on a loaded machine /proc may
/// take a moment to list the child: ask for up to a second.
fn namespace_init(unshare: u32) -> Option<u32> {
    let start = Instant::now();
    loop {
        let found = std::fs::read_to_string(format!("/proc/{unshare}/task/{unshare}/children"))
            .ok()
            .and_then(|children| children.split_whitespace().next()?.parse().ok());
        if found.is_some() || start.elapsed() > Duration::from_secs(1) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Hosts left by test processes that died before dropping their hosts (named
/// `<pid>-<n>-<name>`): their namespaces ended with them, so they are plain files now.
fn remove_abandoned_hosts(hosts: &Path) {
    let Ok(entries) = std::fs::read_dir(hosts) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.split('-').next()) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
