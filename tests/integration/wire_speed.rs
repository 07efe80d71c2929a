//! Files at wire speed, over a real loopback sshd: a large `copy` and `fetch` stream with
//! bounded memory on both sides (the controller's peak resident set from `time`, every
//! target-side process's VmHWM from /proc while the run goes on), a changed file goes as a
//! delta (bytes on the wire counted by a proxy), a rerun sends no content, and a
//! connection cut mid-delta leaves the old file whole and nothing staged behind.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::support::cut_proxy::CutProxy;
use crate::support::hosts::SshHosts;
use crate::support::run::{Outcome, PLAY_HEAD, TestRun, recap};
use crate::support::sshd::TestUser;

/// The streamed file's size. The figure is 1 GiB; a debug build's SSH ciphers
/// move about 4 MB/s on a loaded two-core machine (1 GiB each way took 11 minutes), so
/// the test moves less and bounds the growth instead: what a run holds beyond a run that
/// moves nothing must stay a small fraction of the file.
const STREAMED: u64 = 96 << 20;

/// Resident memory either side may reach while moving [`STREAMED`] bytes.
const MEMORY_BOUND_KIB: u64 = 64 << 10;

/// What the controller may hold beyond its peak in a run that moves nothing.
const GROWTH_BOUND_KIB: u64 = 24 << 10;

fn uid_of(user: &TestUser) -> u32 {
    let out = Command::new("id")
        .arg("-u")
        .arg(&user.name)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// (pid, VmHWM in KiB, first word of its command line) of every process of `uid`.
fn peaks_of(uid: u32) -> Vec<(u32, u64, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if field("Uid:") != Some(uid as u64) {
            continue;
        }
        let name = std::fs::read(entry.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(c.split(|&b| b == 0).next().unwrap_or(&[])).into_owned()
            })
            .unwrap_or_default();
        found.push((pid, field("VmHWM:").unwrap_or(0), name));
    }
    found
}

/// Watches the user's processes until stopped; the highest VmHWM each reached.
struct PeakWatch {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<HashMap<u32, (u64, String)>>,
}

impl PeakWatch {
    fn start(uid: u32) -> PeakWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut peaks: HashMap<u32, (u64, String)> = HashMap::new();
            while !flag.load(Ordering::SeqCst) {
                for (pid, hwm, name) in peaks_of(uid) {
                    let entry = peaks.entry(pid).or_insert((0, name));
                    entry.0 = entry.0.max(hwm);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            peaks
        });
        PeakWatch { stop, handle }
    }

    fn finish(self) -> HashMap<u32, (u64, String)> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().unwrap()
    }
}

fn sha256_of(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    assert!(out.status.success(), "sha256sum {}", path.display());
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

/// `size` bytes nothing can compress, as most large files (archives, images) are.
fn random_file(path: &Path, size: u64) {
    let status = Command::new("head")
        .args(["-c", &size.to_string(), "/dev/urandom"])
        .stdout(std::fs::File::create(path).unwrap())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Overwrites `len` bytes at `offset` with fresh random ones.
fn scribble(path: &Path, offset: u64, len: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let mut bytes = vec![0u8; len as usize];
    let mut urandom = std::fs::File::open("/dev/urandom").unwrap();
    std::io::Read::read_exact(&mut urandom, &mut bytes).unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(offset)).unwrap();
    f.write_all(&bytes).unwrap();
}

/// The controller's peak resident set, as `time -f %M` wrote it.
fn controller_peak_kib(file: &Path) -> u64 {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse::<u64>().ok())
        .next_back()
        .unwrap_or_else(|| panic!("no peak in {}", file.display()))
}

fn timed(run: TestRun, peak_file: &Path) -> TestRun {
    let file = peak_file.to_string_lossy().into_owned();
    run.through(&["/usr/bin/time", "-f", "%M", "-o", &file])
}

#[test]
fn a_large_copy_and_fetch_stream_with_bounded_memory_on_both_sides() {
    let hosts = SshHosts::start(&["web1"]);
    let web1 = hosts.user("web1");
    let run = TestRun::new().inventory(&hosts.inventory());
    let source = run.dir().join("files/big");
    std::fs::create_dir_all(source.parent().unwrap()).unwrap();
    random_file(&source, STREAMED);
    let want = sha256_of(&source);
    let peak_file = run.dir().join("peak");
    let run = timed(
        run.playbook(&format!(
            "{PLAY_HEAD}  tasks:\n\
             \x20   - copy: src=big dest=~/big mode=0640\n\
             \x20   - fetch: src=~/big dest=got/ flat=true\n"
        )),
        &peak_file,
    );
    let idle_file = run.dir().join("idle-peak");
    let idle = timed(
        TestRun::new()
            .inventory(&hosts.inventory())
            .playbook(&format!("{PLAY_HEAD}  tasks:\n    - ping:\n")),
        &idle_file,
    );
    idle.run().assert_code(0);
    let idle_peak = controller_peak_kib(&idle_file);
    let watch = PeakWatch::start(uid_of(web1));
    let started = Instant::now();
    let out = run.run();
    let took = started.elapsed();
    let target_peaks = watch.finish();
    out.assert_code(0);
    assert_eq!(out.recap("web1"), recap(2, 2), "{}", out.stdout);
    let controller = controller_peak_kib(&peak_file);
    eprintln!(
        "{STREAMED} bytes there and back in {took:?}; controller peak {controller} KiB \
         ({idle_peak} KiB moving nothing); target {target_peaks:?}"
    );
    assert_eq!(
        sha256_of(&web1.home.join("big")),
        want,
        "the copy on the target"
    );
    assert_eq!(
        sha256_of(&run.dir().join("got/big")),
        want,
        "the fetched copy"
    );
    assert!(
        controller < MEMORY_BOUND_KIB,
        "the controller peaked at {controller} KiB"
    );
    assert!(
        controller.saturating_sub(idle_peak) < GROWTH_BOUND_KIB,
        "the controller grew from {idle_peak} KiB to {controller} KiB"
    );
    let (agent_peak, name) = target_peaks
        .values()
        .max_by_key(|(hwm, _)| *hwm)
        .cloned()
        .expect("the agent was seen");
    assert!(
        agent_peak < GROWTH_BOUND_KIB,
        "{name} peaked at {agent_peak} KiB"
    );
    let staging = web1.home.join(".cache/turbo-play/staging");
    let left: Vec<_> = std::fs::read_dir(&staging)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "staged files left: {left:?}");
}

/// The wire bytes of one run through `proxy`.
fn bytes_of(proxy: &CutProxy, run: &TestRun) -> (Outcome, u64) {
    let before = proxy.bytes();
    let out = run.run();
    (out, proxy.bytes() - before)
}

/// web1's inventory line, through the proxy.
fn through_proxy_line(hosts: &SshHosts, proxy: &CutProxy) -> String {
    hosts.line("web1").replace(
        &format!("ansible_port={}", hosts.sshd.port),
        &format!("ansible_port={}", proxy.port),
    )
}

/// web1 reached through the proxy (its port made known under the proxy's too).
fn through_proxy(hosts: &SshHosts, proxy: &CutProxy) -> String {
    let line = hosts.line("web1").replace(
        &format!("ansible_port={}", hosts.sshd.port),
        &format!("ansible_port={}", proxy.port),
    );
    let known = hosts.known_hosts.clone();
    let text = std::fs::read_to_string(&known).unwrap();
    std::fs::write(
        &known,
        format!(
            "{text}{}\n",
            text.trim().replace(
                &format!("]:{} ", hosts.sshd.port),
                &format!("]:{} ", proxy.port)
            )
        ),
    )
    .unwrap();
    line + "\n"
}

const DELTA_SIZE: u64 = 100 << 20;

#[test]
fn a_changed_middle_goes_as_a_delta_and_a_rerun_sends_no_content() {
    let hosts = SshHosts::start(&["web1"]);
    let proxy = CutProxy::start(hosts.sshd.port);
    let web1 = hosts.user("web1");
    let run = TestRun::new()
        .inventory(&through_proxy(&hosts, &proxy))
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:\n    - copy: src=big dest=~/big\n"
        ));
    let source = run.dir().join("files/big");
    std::fs::create_dir_all(source.parent().unwrap()).unwrap();
    random_file(&source, DELTA_SIZE);
    let target = web1.home.join("big");
    std::fs::copy(&source, &target).unwrap();
    web1.give(&target);
    scribble(&source, DELTA_SIZE / 2, 1 << 20);
    let want = sha256_of(&source);

    // The agent goes up first, so that only the file's bytes are counted.
    let warm = TestRun::new()
        .inventory(&format!("{}\n", through_proxy_line(&hosts, &proxy)))
        .playbook(&format!("{PLAY_HEAD}  tasks:\n    - ping:\n"));
    warm.run().assert_code(0);
    // A first run that finds the file equal but for the middle.
    let started = Instant::now();
    let (out, wire) = bytes_of(&proxy, &run);
    eprintln!(
        "changed middle: {wire} bytes on the wire in {:?}",
        started.elapsed()
    );
    out.assert_code(0);
    assert_eq!(out.recap("web1"), recap(1, 1), "{}", out.stdout);
    assert_eq!(sha256_of(&target), want);
    assert!(wire < 2 << 20, "{wire} bytes for a 1 MiB change");

    let (again, wire) = bytes_of(&proxy, &run);
    eprintln!("rerun: {wire} bytes on the wire");
    again.assert_code(0);
    assert_eq!(again.recap("web1"), recap(1, 0), "{}", again.stdout);
    assert!(
        wire < 64 << 10,
        "{wire} bytes for an unchanged 100 MiB file"
    );
}

#[test]
fn a_connection_cut_mid_delta_leaves_the_old_file_and_nothing_staged() {
    let hosts = SshHosts::start(&["web1"]);
    let proxy = CutProxy::start(hosts.sshd.port);
    let web1 = hosts.user("web1");
    let run = TestRun::new()
        .inventory(&through_proxy(&hosts, &proxy))
        .playbook(&format!(
            "{PLAY_HEAD}  tasks:\n    - copy: src=big dest=~/big\n"
        ));
    let source = run.dir().join("files/big");
    std::fs::create_dir_all(source.parent().unwrap()).unwrap();
    random_file(&source, DELTA_SIZE);
    let target = web1.home.join("big");
    std::fs::copy(&source, &target).unwrap();
    web1.give(&target);
    let old = sha256_of(&target);
    // Most of the file changed: the delta takes long enough to be cut.
    scribble(&source, 1 << 20, DELTA_SIZE - (2 << 20));
    let running = std::thread::spawn(move || run.run());
    let staging = web1.home.join(".cache/turbo-play/staging");
    let started = Instant::now();
    let staged = || {
        std::fs::read_dir(&staging)
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("upload-"))
                    .count()
            })
            .unwrap_or(0)
    };
    while staged() == 0 {
        assert!(
            !running.is_finished(),
            "the run ended before the delta was staged"
        );
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no delta staged"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    proxy.reset();
    let out = running.join().unwrap();
    out.assert_code(4);
    assert!(out.stdout.contains("UNREACHABLE!"), "{}", out.stdout);
    assert_eq!(sha256_of(&target), old, "the old file is intact");
    // The agent sees its input end and removes what it staged.
    let started = Instant::now();
    while staged() != 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "staging left behind"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let temps: Vec<String> = std::fs::read_dir(&web1.home)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("turbo-tmp"))
        .collect();
    assert!(temps.is_empty(), "{temps:?}");
}
