//! Waiting on a command or module the agent started as the leader of its own process
//! group: its output is read as it comes, the protocol input is polled in the same wait
//! (a `Cancel` or the controller's end is seen while the child runs), and at the
//! request's deadline or on a cancel the whole group is stopped: TERM, then KILL after
//! a short grace.

use std::io::{self, Read};
use std::os::fd::AsRawFd;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use super::Agent;
use crate::sys::{self, PollFd};

/// How long a stopped group has between TERM and KILL.
pub const GRACE: Duration = Duration::from_secs(1);

/// The longest one wait lasts: a stop signal landing between the checks and the wait is
/// seen within this.
const LONGEST_WAIT: Duration = Duration::from_millis(500);

/// How often a child whose pipes are closed is asked whether it has exited.
const EXIT_POLL: Duration = Duration::from_millis(1);

/// Short sleeps spent waiting for a child that just closed its pipes to be reapable.
const EXIT_SPINS: u32 = 50;

#[derive(Debug)]
pub enum Ending {
    Exited(ExitStatus),
    /// The request's deadline passed; the group was stopped.
    TimedOut {
        after: Duration,
    },
    /// The controller cancelled or went away; the group was stopped.
    Cancelled,
}

pub struct Finished {
    pub ending: Ending,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

struct Pipe {
    /// `None` once it reached its end (or was never there).
    reader: Option<Box<dyn ReadFd>>,
    bytes: Vec<u8>,
}

trait ReadFd: Read + AsRawFd {}
impl<T: Read + AsRawFd> ReadFd for T {}

/// Reads the child's stdout and stderr to their end and waits for it, unless the
/// deadline passes or the agent must stop first.
pub fn supervise(agent: &mut Agent, child: &mut Child, started: Instant) -> io::Result<Finished> {
    let mut pipes: Vec<Pipe> = [
        child.stdout.take().map(|p| Box::new(p) as Box<dyn ReadFd>),
        child.stderr.take().map(|p| Box::new(p) as Box<dyn ReadFd>),
    ]
    .into_iter()
    .map(|reader| Pipe {
        reader,
        bytes: Vec::new(),
    })
    .collect();
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let pipes_open = pipes.iter().any(|p| p.reader.is_some());
        if !pipes_open && let Some(status) = reaped_soon(child)? {
            let mut outputs = pipes.into_iter().map(|p| p.bytes);
            return Ok(Finished {
                ending: Ending::Exited(status),
                stdout: outputs.next().unwrap_or_default(),
                stderr: outputs.next().unwrap_or_default(),
            });
        }
        let now = Instant::now();
        let ending = if agent.deadline.is_some_and(|d| now >= d) {
            Some(Ending::TimedOut {
                after: now - started,
            })
        } else if agent.stopping() {
            Some(Ending::Cancelled)
        } else {
            None
        };
        if let Some(ending) = ending {
            stop_group(child);
            return Ok(Finished {
                ending,
                stdout: Vec::new(),
                stderr: Vec::new(),
            });
        }
        let mut wait = if pipes_open { LONGEST_WAIT } else { EXIT_POLL };
        if let Some(deadline) = agent.deadline {
            wait = wait.min(deadline.saturating_duration_since(now));
        }
        let input_fd = agent.input.as_ref().map(|i| i.fd());
        let mut fds: Vec<PollFd> = input_fd.into_iter().map(PollFd::readable).collect();
        let first_pipe = fds.len();
        let polled: Vec<usize> = (0..pipes.len())
            .filter(|&i| pipes[i].reader.is_some())
            .collect();
        fds.extend(polled.iter().filter_map(|&i| {
            let reader = pipes[i].reader.as_ref()?;
            Some(PollFd::readable(reader.as_raw_fd()))
        }));
        // Rounded up: a wait cut to 0 ms short of the deadline would spin.
        let wait_ms = wait.as_micros().div_ceil(1000) as i32;
        sys::wait_readable(&mut fds, wait_ms)?;
        if input_fd.is_some()
            && fds[0].ready()
            && let Some(input) = agent.input.as_mut()
        {
            input.absorb();
        }
        for (slot, &i) in polled.iter().enumerate() {
            if !fds[first_pipe + slot].ready() {
                continue;
            }
            let pipe = &mut pipes[i];
            let Some(reader) = pipe.reader.as_mut() else {
                continue;
            };
            match reader.read(&mut chunk) {
                Ok(0) => pipe.reader = None,
                Ok(n) => pipe.bytes.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => pipe.reader = None,
            }
        }
    }
}

/// The child's status if it exits within a moment: a process closes its pipes as it
/// exits, a little before its parent can reap it, and a millisecond's wait for each
/// command would be most of what a short command costs.
fn reaped_soon(child: &mut Child) -> io::Result<Option<ExitStatus>> {
    for _ in 0..EXIT_SPINS {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        std::thread::sleep(Duration::from_micros(20));
    }
    child.try_wait()
}

/// TERM to the child's group, then KILL once the grace is over and something of the
/// group is left; the leader is reaped.
pub fn stop_group(child: &mut Child) {
    let pgid = child.id();
    sys::signal_group(pgid, sys::SIGTERM);
    let end = Instant::now() + GRACE;
    loop {
        // Reaps the leader: a zombie still counts as a member of its group.
        let _ = child.try_wait();
        if !sys::signal_group(pgid, 0) {
            break;
        }
        if Instant::now() >= end {
            sys::signal_group(pgid, sys::SIGKILL);
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{TempDir, agent};
    use super::*;
    use std::os::fd::OwnedFd;
    use turbo_proto::{Command, ControllerMsg, Exec, Op, OpResult, Request, encode_frame};

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

    fn request(op: Op, timeout_ms: Option<u64>) -> Request {
        Request {
            id: 1,
            check: false,
            diff: false,
            chain: 0,
            timeout_ms,
            op,
        }
    }

    /// Whether the process whose pid is written in `file` still runs (a zombie has
    /// exited: it only waits to be reaped).
    fn alive(file: &std::path::Path) -> bool {
        let pid = std::fs::read_to_string(file).unwrap();
        match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
            Ok(stat) => !stat.contains(") Z "),
            Err(_) => false,
        }
    }

    #[test]
    fn the_deadline_stops_the_whole_group_and_answers_timed_out() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let pid_file = dir.join("pid");
        // The shell waits on a background sleep: both are in the command's group.
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let started = Instant::now();
        let result = a.handle(request(shell(&script), Some(300)));
        let took = started.elapsed();
        match result {
            OpResult::TimedOut { after_ms } => assert!((300..2000).contains(&after_ms)),
            other => panic!("{other:?}"),
        }
        assert!(took < Duration::from_secs(3), "{took:?}");
        assert!(
            !alive(&pid_file),
            "the background sleep outlived the timeout"
        );
        // Without a deadline the same agent runs the next command as before.
        assert!(matches!(
            a.handle(request(shell("echo ok"), None)),
            OpResult::Exec(e) if e.stdout == b"ok\n"
        ));
    }

    #[test]
    fn a_group_that_ignores_term_is_killed_after_the_grace() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let pid_file = dir.join("pid");
        let script = format!(
            "trap '' TERM; sh -c 'trap \"\" TERM; sleep 30' & echo $! > {}; wait",
            pid_file.display()
        );
        let started = Instant::now();
        let result = a.handle(request(shell(&script), Some(200)));
        assert!(matches!(result, OpResult::TimedOut { .. }), "{result:?}");
        let took = started.elapsed();
        assert!(
            took >= GRACE && took < GRACE + Duration::from_secs(2),
            "{took:?}"
        );
        // KILL is sent; on a loaded machine the orphan may take a moment to be gone.
        let killed_by = Instant::now() + Duration::from_secs(1);
        while alive(&pid_file) && Instant::now() < killed_by {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(&pid_file));
    }

    #[test]
    fn each_op_of_a_batch_has_its_own_deadline() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let batch = Op::Batch(vec![
            shell("sleep 0.2; echo first"),
            shell("sleep 30"),
            shell("sleep 0.2; echo third"),
        ]);
        match a.handle(request(batch, Some(500))) {
            OpResult::Batch(results) => {
                assert!(matches!(&results[0], OpResult::Exec(e) if e.stdout == b"first\n"));
                assert!(matches!(results[1], OpResult::TimedOut { .. }));
                assert!(matches!(&results[2], OpResult::Exec(e) if e.stdout == b"third\n"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cancel_read_while_the_child_runs_stops_it_and_the_agent() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let (reader, mut writer) = std::io::pipe().unwrap();
        a.input = Some(crate::input::Input::new(std::fs::File::from(
            OwnedFd::from(reader),
        )));
        let pid_file = dir.join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let canceller = std::thread::spawn(move || {
            use std::io::Write;
            std::thread::sleep(Duration::from_millis(300));
            // A request queued behind the running one, then the cancel.
            let queued = ControllerMsg::Request(request(shell("echo never"), None));
            writer.write_all(&encode_frame(&queued).unwrap()).unwrap();
            writer
                .write_all(&encode_frame(&ControllerMsg::Cancel).unwrap())
                .unwrap();
            // Kept open: the cancel, not the end of the input, must stop the agent.
            std::thread::sleep(Duration::from_secs(3));
        });
        let started = Instant::now();
        a.handle(request(shell(&script), None));
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(a.stopping());
        assert!(!alive(&pid_file));
        canceller.join().unwrap();
    }

    #[test]
    fn the_end_of_the_input_while_the_child_runs_stops_it() {
        let dir = TempDir::new();
        let mut a = agent(dir.path());
        let (reader, writer) = std::io::pipe().unwrap();
        a.input = Some(crate::input::Input::new(std::fs::File::from(
            OwnedFd::from(reader),
        )));
        let pid_file = dir.join("pid");
        let script = format!("sleep 30 & echo $! > {}; wait", pid_file.display());
        let closer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(writer);
        });
        let started = Instant::now();
        a.handle(request(shell(&script), None));
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(a.stopping());
        assert!(!alive(&pid_file));
        closer.join().unwrap();
    }
}
