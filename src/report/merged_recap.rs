//! `--merge-recaps`: one PLAY RECAP from the `--json` event logs of several runs, so that a
//! fleet run as slices (`--slice K/N` on several controllers) ends with one recap and one
//! exit code, as if one controller had run it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::events::HostStats;

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("--merge-recaps {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "--merge-recaps {}:{line}: not a JSON event ({message}); give the output of `turbo-play --json`",
        path.display()
    )]
    NotAnEvent {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error(
        "--merge-recaps {}: no \"recap\" event, so that run did not finish (or the file is not a `turbo-play --json` log); rerun it, or leave it out to merge the others",
        path.display()
    )]
    NoRecap { path: PathBuf },
}

/// The merged recap, hosts in name order as Ansible sorts them, and warnings for hosts
/// that more than one log counted (their counts are added).
pub struct MergedRecap {
    pub stats: Vec<HostStats>,
    pub warnings: Vec<String>,
}

pub fn merge_files(paths: &[PathBuf]) -> Result<MergedRecap, MergeError> {
    let mut logs = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|source| MergeError::Read {
            path: path.clone(),
            source,
        })?;
        logs.push((path.as_path(), text));
    }
    merge(&logs)
}

/// `logs` are (where it came from, its text).
pub fn merge(logs: &[(&Path, String)]) -> Result<MergedRecap, MergeError> {
    let mut hosts: BTreeMap<String, (HostStats, Vec<&Path>)> = BTreeMap::new();
    for (path, text) in logs {
        let recap = last_recap(path, text)?;
        for (host, counts) in recap {
            let (stats, seen_in) = hosts.entry(host.clone()).or_insert_with(|| {
                let stats = HostStats {
                    host: host.clone(),
                    ..Default::default()
                };
                (stats, Vec::new())
            });
            let count = |key: &str| {
                counts
                    .get(key)
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(0)
            };
            stats.ok += count("ok");
            stats.changed += count("changed");
            stats.unreachable += count("unreachable");
            stats.failed += count("failed");
            stats.skipped += count("skipped");
            stats.rescued += count("rescued");
            stats.ignored += count("ignored");
            seen_in.push(path);
        }
    }
    let mut warnings = Vec::new();
    let mut stats = Vec::new();
    for (host, (host_stats, seen_in)) in hosts {
        if seen_in.len() > 1 {
            let files: Vec<String> = seen_in.iter().map(|p| p.display().to_string()).collect();
            warnings.push(format!(
                "host {host} is in the recaps of {}: its counts are added",
                files.join(", ")
            ));
        }
        stats.push(host_stats);
    }
    Ok(MergedRecap { stats, warnings })
}

/// The `stats` of the log's last `recap` event (a run prints one, at its end).
fn last_recap(path: &Path, text: &str) -> Result<serde_json::Map<String, Value>, MergeError> {
    let mut recap = None;
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let event: Value = serde_json::from_str(line).map_err(|e| MergeError::NotAnEvent {
            path: path.to_path_buf(),
            line: index + 1,
            message: e.to_string(),
        })?;
        if event.get("event").and_then(Value::as_str) == Some("recap") {
            let stats = event
                .get("stats")
                .and_then(Value::as_object)
                .ok_or_else(|| MergeError::NotAnEvent {
                    path: path.to_path_buf(),
                    line: index + 1,
                    message: "a recap event without its \"stats\" object".into(),
                })?;
            recap = Some(stats.clone());
        }
    }
    recap.ok_or_else(|| MergeError::NoRecap {
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(recap: &str) -> String {
        format!(
            "{{\"event\":\"play_start\",\"play\":\"p\"}}\n{{\"event\":\"recap\",\"stats\":{recap}}}\n"
        )
    }

    #[test]
    fn slices_merge_into_one_recap_in_host_order() {
        let a = log(
            r#"{"web2":{"ok":2,"changed":1,"unreachable":0,"failed":0,"skipped":1,"rescued":0,"ignored":0}}"#,
        );
        let b = log(
            r#"{"db1":{"ok":1,"changed":0,"unreachable":1,"failed":0,"skipped":0,"rescued":0,"ignored":0},"web1":{"ok":3,"changed":0,"unreachable":0,"failed":1,"skipped":0,"rescued":1,"ignored":2}}"#,
        );
        let merged = merge(&[(Path::new("a.jsonl"), a), (Path::new("b.jsonl"), b)]).unwrap();
        let names: Vec<&str> = merged.stats.iter().map(|s| s.host.as_str()).collect();
        assert_eq!(names, ["db1", "web1", "web2"]);
        assert_eq!(
            merged.stats[1],
            HostStats {
                host: "web1".into(),
                ok: 3,
                failed: 1,
                rescued: 1,
                ignored: 2,
                ..Default::default()
            }
        );
        assert!(merged.warnings.is_empty());
    }

    #[test]
    fn a_host_in_two_logs_is_added_and_warned_about() {
        let one = log(r#"{"h":{"ok":1,"changed":1}}"#);
        let merged = merge(&[(Path::new("x"), one.clone()), (Path::new("y"), one)]).unwrap();
        assert_eq!((merged.stats[0].ok, merged.stats[0].changed), (2, 2));
        assert_eq!(
            merged.warnings,
            ["host h is in the recaps of x, y: its counts are added"]
        );
    }

    #[test]
    fn an_unfinished_or_foreign_log_is_refused_naming_the_file_and_line() {
        let unfinished = "{\"event\":\"play_start\",\"play\":\"p\"}\n".to_string();
        let err = merge(&[(Path::new("s2.jsonl"), unfinished)]).err().unwrap();
        assert!(
            err.to_string().starts_with(
                "--merge-recaps s2.jsonl: no \"recap\" event, so that run did not finish"
            ),
            "{err}"
        );
        let human = "\nPLAY [all] ****\n".to_string();
        let err = merge(&[(Path::new("out.txt"), human)]).err().unwrap();
        assert!(
            err.to_string()
                .starts_with("--merge-recaps out.txt:2: not a JSON event ("),
            "{err}"
        );
    }
}
