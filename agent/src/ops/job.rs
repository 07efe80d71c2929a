//! Detached jobs (Ansible's `async`): `StartJob` writes the request to the job's files and
//! starts a fresh agent process in a session of its own (`--job-run FILE`), which runs the
//! op, writes its reply beside Ansible's status file and exits. A new process rather than a
//! fork: it inherits neither the protocol stream nor the warm runners' pipes, so the
//! connection can close while the job goes on, and nothing of the session keeps it alive.

use std::io::{self, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use turbo_proto::{JobStarted, Op, OpError, OpResult, Request, StartJob};

use super::{Agent, Flags, io_error};

unsafe extern "C" {
    fn setsid() -> i32;
}

/// The argument that makes the agent binary run one job instead of serving a session.
pub const JOB_RUN_ARG: &str = "--job-run";
/// The middle process: it leaves the agent's session and starts the job, then exits at
/// once, so the job belongs to init and no one has to wait for it.
pub const JOB_LAUNCH_ARG: &str = "--job-launch";

pub fn start_job(agent: &mut Agent, spec: StartJob, flags: Flags) -> Result<OpResult, OpError> {
    let StartJob {
        jid_prefix,
        dir,
        time_limit_secs,
        note,
        mut op,
    } = spec;
    if !jid_prefix.starts_with('j') || !jid_prefix[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Err(super::op_error(
            turbo_proto::ErrorKind::InvalidArgument,
            format!("not a job id: {jid_prefix}"),
        ));
    }
    // The module's files go to the cache now, while the controller can still send them.
    if let Op::RunModule(run) = op.as_mut() {
        if super::module::payload_dir(agent, &run.payload)?.is_none() {
            return Ok(OpResult::NeedContent);
        }
        run.payload.files = None;
    }
    let dir = agent.expand(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| io_error(e, &dir))?;
    let jid = format!("{jid_prefix}.{}", agent.pid);
    let files = JobFiles::new(&dir, &jid);
    let request = Request {
        id: 0,
        check: flags.check,
        diff: flags.diff,
        chain: 0,
        timeout_ms: Some(time_limit_secs.saturating_mul(1000)),
        op: *op,
    };
    let frame = turbo_proto::encode_frame(&request)
        .map_err(|e| super::op_error(turbo_proto::ErrorKind::Protocol, e.to_string()))?;
    write_atomically(&files.status, status_json(&jid, false).as_bytes(), PUBLIC)?;
    // The arguments may hold secrets: only the user reads them.
    write_atomically(&files.note, &note, PRIVATE)?;
    write_atomically(&files.job, &frame, PRIVATE)?;
    let exe = std::env::current_exe().map_err(|e| io_error(e, Path::new("/proc/self/exe")))?;
    let mut launcher = Command::new(&exe);
    launcher
        .arg(JOB_LAUNCH_ARG)
        .arg(&files.job)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe and touches no memory of the parent.
    unsafe {
        launcher.pre_exec(|| match setsid() {
            -1 => Err(io::Error::last_os_error()),
            _ => Ok(()),
        });
    }
    let status = launcher
        .status()
        .map_err(|e| io_error(e, Path::new(&exe)))?;
    if !status.success() {
        return Err(super::op_error(
            turbo_proto::ErrorKind::Io,
            format!("the job launcher failed: {status}"),
        ));
    }
    Ok(OpResult::JobStarted(JobStarted {
        jid,
        results_file: files.status.to_string_lossy().into_owned(),
    }))
}

/// `--job-launch FILE`: start the job and leave it.
pub fn launch(job_file: &str) -> i32 {
    let Ok(exe) = std::env::current_exe() else {
        return 1;
    };
    let started = Command::new(exe)
        .arg(JOB_RUN_ARG)
        .arg(job_file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match started {
        Ok(_) => 0,
        Err(_) => 1,
    }
}

/// `--job-run FILE`: run the request in the file, then record the reply and say finished.
pub fn run(job_file: &str) -> i32 {
    let job = PathBuf::from(job_file);
    let Some(name) = job.file_name().and_then(|n| n.to_str()) else {
        return 1;
    };
    let Some(jid) = name.strip_suffix(".job") else {
        return 1;
    };
    let files = JobFiles::new(job.parent().unwrap_or(Path::new(".")), jid);
    let request: Request = match std::fs::read(&job).ok().and_then(|bytes| {
        turbo_proto::read_frame(&mut bytes.as_slice())
            .ok()
            .flatten()
    }) {
        Some(request) => request,
        None => return 1,
    };
    let _ = std::fs::remove_file(&job);
    let mut agent = crate::job_agent();
    let result = agent.handle(request);
    agent.runners.clear();
    agent.clean_staging();
    let Ok(frame) = turbo_proto::encode_frame(&result) else {
        return 1;
    };
    if write_atomically(&files.reply, &frame, PRIVATE).is_err() {
        return 1;
    }
    match write_atomically(&files.status, status_json(jid, true).as_bytes(), PUBLIC) {
        Ok(()) => 0,
        Err(_) => 1,
    }
}

struct JobFiles {
    status: PathBuf,
    reply: PathBuf,
    note: PathBuf,
    job: PathBuf,
}

impl JobFiles {
    fn new(dir: &Path, jid: &str) -> JobFiles {
        JobFiles {
            status: dir.join(jid),
            reply: dir.join(format!("{jid}.reply")),
            note: dir.join(format!("{jid}.note")),
            job: dir.join(format!("{jid}.job")),
        }
    }
}

/// Ansible's status file as async_wrapper writes it while the job runs; the job id is
/// `j`, digits, `.` and digits, so it needs no escaping.
fn status_json(jid: &str, finished: bool) -> String {
    format!("{{\"started\": true, \"finished\": {finished}, \"ansible_job_id\": \"{jid}\"}}")
}

/// The status file as Ansible's wrapper creates it (the umask decides).
const PUBLIC: u32 = 0o666;
const PRIVATE: u32 = 0o600;

/// A reader never sees half a file: written aside, then renamed over.
fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<(), OpError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut aside = path.as_os_str().to_owned();
    aside.push(".tmp");
    let aside = PathBuf::from(aside);
    let _ = std::fs::remove_file(&aside);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&aside)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.sync_all()
        });
    written.map_err(|e| io_error(e, &aside))?;
    std::fs::rename(&aside, path).map_err(|e| io_error(e, path))
}
