//! The terminal's progress display under a long task: one line for the task's results
//! (a bar over every result still to come, loop items included) and one for the fleet
//! (hosts done with the task, still running it, and the hosts that have failed or been
//! unreachable so far in the run). It exists only on a terminal, draws on stderr, stays
//! hidden until a task expects enough results to need it, and is cleared before the next
//! banner; lines printed while it shows go above it, whole (see `ConsoleReporter::line`).

use std::collections::{BTreeSet, HashMap};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::events::{HostResult, Status};

/// Below this many expected results a display is more noise than help.
pub const MIN_RESULTS: u64 = 50;

/// Who has failed so far: kept for the whole run, across tasks and plays.
#[derive(Default)]
pub struct FleetTally {
    failed: BTreeSet<String>,
    unreachable: BTreeSet<String>,
}

impl FleetTally {
    pub fn count(&mut self, result: &HostResult) {
        match result.status {
            Status::Unreachable => {
                self.unreachable.insert(result.host.clone());
            }
            // An item's failure is the host's only when the loop's own result says so.
            Status::Failed if !result.ignored && result.item.is_none() => {
                self.failed.insert(result.host.clone());
            }
            _ => {}
        }
    }
}

pub struct TaskProgress {
    multi: MultiProgress,
    results: ProgressBar,
    fleet: ProgressBar,
    task: String,
    hosts: usize,
    /// Results each host still owes (1 for a plain task, one per item for a loop).
    owed: HashMap<String, u64>,
    done: BTreeSet<String>,
    shown: bool,
}

impl TaskProgress {
    pub fn start(task: &str, hosts: usize, tally: &FleetTally) -> TaskProgress {
        let multi = MultiProgress::with_draw_target(ProgressDrawTarget::hidden());
        let results = multi.add(ProgressBar::new(hosts as u64));
        results.set_style(
            ProgressStyle::with_template("  {spinner} {pos}/{len} results {wide_bar} {elapsed}")
                .expect("valid template"),
        );
        let fleet = multi.add(ProgressBar::new_spinner());
        fleet.set_style(ProgressStyle::with_template("  {msg}").expect("valid template"));
        let mut progress = TaskProgress {
            multi,
            results,
            fleet,
            task: task.to_string(),
            hosts,
            owed: HashMap::new(),
            done: BTreeSet::new(),
            shown: false,
        };
        progress.fleet.set_message(progress.fleet_line(tally));
        progress.show_if_long();
        progress
    }

    /// A host's loop has `extra` results more than a plain task's one.
    pub fn planned(&mut self, host: &str, extra: u64) {
        *self.owed.entry(host.to_string()).or_insert(1) += extra;
        self.results.inc_length(extra);
        self.show_if_long();
    }

    pub fn result(&mut self, result: &HostResult, tally: &FleetTally) {
        self.results.inc(1);
        let owed = self.owed.entry(result.host.clone()).or_insert(1);
        *owed = owed.saturating_sub(1);
        // A result without an item is the task's last word on the host (a plain task's,
        // or the line closing a loop).
        if *owed == 0 || result.item.is_none() || result.status == Status::Unreachable {
            self.done.insert(result.host.clone());
        }
        self.fleet.set_message(self.fleet_line(tally));
    }

    /// The fleet's line: `hosts: 40/500 done, 460 running, 2 failed, 1 unreachable · TASK [x]`.
    pub fn fleet_line(&self, tally: &FleetTally) -> String {
        let done = self.done.len().min(self.hosts);
        format!(
            "hosts: {done}/{} done, {} running, {} failed, {} unreachable · TASK [{}]",
            self.hosts,
            self.hosts - done,
            tally.failed.len(),
            tally.unreachable.len(),
            self.task
        )
    }

    /// Runs `write` with the display taken off the terminal, then draws it again.
    pub fn suspend<R>(&self, write: impl FnOnce() -> R) -> R {
        self.multi.suspend(write)
    }

    pub fn finish(self) {
        self.results.finish_and_clear();
        self.fleet.finish_and_clear();
        let _ = self.multi.clear();
    }

    fn show_if_long(&mut self) {
        if !self.shown && self.results.length().unwrap_or(0) >= MIN_RESULTS {
            self.shown = true;
            self.multi.set_draw_target(ProgressDrawTarget::stderr());
            // Drawn now and kept moving while no result comes in, so a long wait shows.
            self.results
                .enable_steady_tick(std::time::Duration::from_millis(250));
        }
    }

    #[cfg(test)]
    fn shown(&self) -> bool {
        self.shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn result(host: &str, status: Status, item: Option<&str>) -> HostResult {
        HostResult {
            host: host.into(),
            status,
            item: item.map(str::to_string),
            data: Map::new(),
            ignored: false,
            verbose_always: false,
            origin: None,
        }
    }

    #[test]
    fn hosts_are_done_when_their_results_are_in_and_failures_last_the_run() {
        let mut tally = FleetTally::default();
        let mut p = TaskProgress::start("copy", 3, &tally);
        assert!(!p.shown(), "three results need no display");
        p.planned("a", 2);
        for (host, status, item) in [
            ("a", Status::Ok, Some("1")),
            ("b", Status::Unreachable, None),
            ("a", Status::Failed, Some("2")),
        ] {
            let r = result(host, status, item);
            tally.count(&r);
            p.result(&r, &tally);
        }
        assert_eq!(
            p.fleet_line(&tally),
            "hosts: 1/3 done, 2 running, 0 failed, 1 unreachable · TASK [copy]"
        );
        let r = result("a", Status::Changed, Some("3"));
        tally.count(&r);
        p.result(&r, &tally);
        let r = result("c", Status::Failed, None);
        tally.count(&r);
        p.result(&r, &tally);
        assert_eq!(
            p.fleet_line(&tally),
            "hosts: 3/3 done, 0 running, 1 failed, 1 unreachable · TASK [copy]"
        );
        p.finish();

        let next = TaskProgress::start("next", 60, &tally);
        assert!(next.shown(), "sixty hosts show the display at once");
        assert_eq!(
            next.fleet_line(&tally),
            "hosts: 0/60 done, 60 running, 1 failed, 1 unreachable · TASK [next]"
        );
    }
}
