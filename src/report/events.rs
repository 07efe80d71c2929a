//! Everything the user sees comes through here: hosts and tasks never print; they send
//! events down one channel to one reporter.

use serde_json::{Map, Value};

/// How one host (or one loop item on a host) came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    Changed,
    Failed,
    Skipped,
    Unreachable,
}

/// A task (or handler) starting, as the banner shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskBanner {
    /// The task's name, templated with the first host's variables.
    pub name: String,
    pub hosts: usize,
    /// Which task this is (the same for every host that runs it), so that a result is
    /// shown under its own task's banner.
    pub key: usize,
    /// The task runs in check mode (Ansible's `[CHECK MODE]` marker).
    pub check_mode: bool,
    /// Under the `free` strategy, the one host that starts the task: its results come
    /// later, mixed with other hosts' results of other tasks.
    pub host: Option<String>,
}

#[derive(Debug, Clone)]
pub enum Event {
    /// The run starts; `check` is `--check` (Ansible's `DRY RUN` marker).
    RunStart {
        check: bool,
    },
    PlayStart {
        name: String,
        /// The play runs in check mode (its `check_mode`, else `--check`).
        check_mode: bool,
        /// The `free` strategy: banners show with the results they head.
        free: bool,
    },
    /// The play's pattern matched nothing.
    NoHostsMatched,
    TaskStart(TaskBanner),
    /// A handler starts (Ansible's `RUNNING HANDLER [name]`).
    HandlerStart(TaskBanner),
    /// A host's loop was expanded: this many more results than a plain task's one to wait
    /// for (progress display); `host` as its results name it.
    ItemsPlanned {
        host: String,
        count: usize,
    },
    /// An `until` check failed: the item runs again (Ansible's "FAILED - RETRYING").
    Retry {
        host: String,
        task: String,
        item: Option<String>,
        retries_left: u64,
    },
    /// An async job was checked and is still running (Ansible's "ASYNC POLL").
    AsyncPoll {
        host: String,
        jid: String,
        started: bool,
        finished: bool,
    },
    /// A polled async job's result is in (Ansible's "ASYNC OK"/"ASYNC FAILED").
    AsyncDone {
        host: String,
        jid: String,
        failed: bool,
    },
    /// One result: a whole task on a host, or one loop item when `item` is set.
    HostResult(HostResult),
    /// A loop with a failed item ended: its task's own result after the items' (with
    /// data for the console to dump only where Ansible's callback dumps one: debug's).
    LoopFailed(HostResult),
    /// A dynamic include loaded `file` (a path, or a role's name) for these hosts, whose
    /// tasks run next (Ansible's `included: FILE for h1, h2`); `item` for a loop's item.
    Included {
        file: String,
        hosts: Vec<String>,
        item: Option<String>,
    },
    /// The agent on a host is up (shown with -vv).
    AgentReady {
        host: String,
        uploaded: bool,
        upload_bytes: u64,
        replaced_stale: bool,
    },
    Warning(String),
    /// A deprecation already in Ansible's words (a routed plugin's, found at load).
    Deprecation(String),
    /// A line ansible-playbook shows from this verbosity on (its `display.vv(...)`).
    Verbose {
        level: u8,
        text: String,
    },
    /// All hosts failed: the play stops (Ansible's "NO MORE HOSTS LEFT").
    NoMoreHosts,
    Recap(Vec<HostStats>),
    /// `set_stats`' data after the recap: each host's by name, the run's as `_run`.
    CustomStats(std::collections::BTreeMap<String, Map<String, Value>>),
}

#[derive(Debug, Clone)]
pub struct HostResult {
    pub host: String,
    pub status: Status,
    /// The loop item's label; `None` for a task without a loop (or a loop's summary).
    pub item: Option<String>,
    /// The result as Ansible would dump it (msg, rc, stdout, ...).
    pub data: Map<String, Value>,
    /// A failure that `ignore_errors` turns into "...ignoring".
    pub ignored: bool,
    /// Show `data` even without -v (debug does this).
    pub verbose_always: bool,
    /// The task's place, for the error block above a failure; `None` outside a playbook.
    pub origin: Option<super::task_error::TaskOrigin>,
}

/// Ansible's `_ansible_verbose_override`, in a result's data: the result (gathered facts)
/// is whole for the ad-hoc display, which prints it, while a playbook's display never
/// dumps it, even with -v, and shows only its warnings.
pub const VERBOSE_OVERRIDE: &str = "_ansible_verbose_override";

impl HostResult {
    /// The result as a playbook's display and its JSON stream show it: a result under
    /// [`VERBOSE_OVERRIDE`] keeps only its warnings and deprecations.
    pub fn for_playbook(&self) -> std::borrow::Cow<'_, HostResult> {
        if !self.data.contains_key(VERBOSE_OVERRIDE) {
            return std::borrow::Cow::Borrowed(self);
        }
        let mut shown = self.clone();
        shown
            .data
            .retain(|k, _| k == "warnings" || k == "deprecations");
        std::borrow::Cow::Owned(shown)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostStats {
    pub host: String,
    pub ok: u32,
    pub changed: u32,
    pub unreachable: u32,
    pub failed: u32,
    pub skipped: u32,
    pub rescued: u32,
    pub ignored: u32,
    /// Protocol bytes sent to and received from the agent (compressed), for -v.
    pub bytes_sent: u64,
    pub bytes_received: u64,
}
