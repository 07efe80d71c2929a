//! `known_hosts`: add or remove one host's key in an OpenSSH known_hosts file.
//!
//! Ansible asks the target's `ssh-keygen` whether a host is in the file (`-F`, which knows
//! hashed names, patterns and `[host]:port`), and removes a host with `-R`; the same
//! commands run here, so what counts as a match is exactly what it is under Ansible. The
//! rest (which line to replace, the new text, the diff) is decided on the controller with
//! Ansible's algorithm, and the new file written atomically by the agent.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Map, Value, json};
use sha1::Sha1;
use turbo_proto::{
    Command, EnsureFile, Exec, FileContent, FileKind, FileOutcome, Op, OpResult, Ownership,
    StatInfo,
};

use super::spec::{Arg, Spec};
use super::text_file::{self, Current, decode, read_lines, split_lines_keep};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, mode_string};

pub struct KnownHosts;

/// ansible-core 2.21's known_hosts.
static SPEC: Spec = Spec::new(&[
    Arg::bool("hash_host").default_bool(false),
    Arg::str("key"),
    Arg::str("name").aliases(&["host"]).required(),
    Arg::path("path").default_str("~/.ssh/known_hosts"),
    Arg::str("state")
        .choices(&["absent", "present"])
        .default_str("present"),
]);

/// What the task asks, carried through the steps.
#[derive(Debug, Clone)]
struct Request {
    /// The name as written (the result echoes it).
    name: String,
    /// Lower-cased, as Ansible looks it up.
    host: String,
    /// The key as written, for the result.
    key_arg: Option<String>,
    /// The line to write: hashed when asked, ending in a newline.
    key: Option<String>,
    hash_host: bool,
    present: bool,
    check: bool,
}

impl Module for KnownHosts {
    fn name(&self) -> &'static str {
        "known_hosts"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// Its `ssh-keygen -F` lookups only read, so they run in check mode too.
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let salt = if args.bool("hash_host") && args.is_set("key") {
            random_salt().map_err(|e| ModuleError::Invalid(format!("no random salt: {e}")))?
        } else {
            [0; 20]
        };
        plan_with_salt(args, ctx, salt)
    }
}

fn random_salt() -> std::io::Result<[u8; 20]> {
    let mut salt = [0u8; 20];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut salt)?;
    Ok(salt)
}

/// The plan with the salt of a hashed name given (the tests' is fixed).
fn plan_with_salt(args: &Args, ctx: &PlanContext, salt: [u8; 20]) -> Result<Plan, ModuleError> {
    let name = args.str("name").unwrap_or_default().to_string();
    let host = name.to_lowercase();
    let key_arg = args.str("key").map(str::to_string);
    let present = args.str("state") != Some("absent");
    // An empty key is no key, as Python's `if not key`.
    let key = key_arg.clone().filter(|k| !k.is_empty());
    if key.is_none() && present {
        return Ok(Plan::Done(TaskOutcome::failed(
            "No key specified when adding a host",
        )));
    }
    let hash_host = args.bool("hash_host");
    let key = key.map(|key| {
        let mut line = if hash_host {
            hash_host_key(&host, &key, &salt)
        } else {
            key
        };
        if !line.ends_with('\n') {
            line.push('\n');
        }
        line
    });
    if key.is_some() && is_name_list(&host) {
        return Ok(Plan::Done(TaskOutcome::failed(
            "Comma separated list of names is not supported. Please pass a single name to lookup in the known_hosts file.",
        )));
    }
    let request = Request {
        name,
        host,
        key_arg,
        key,
        hash_host,
        present,
        check: ctx.check_mode,
    };
    let path = args.str("path").unwrap_or_default();
    Ok(text_file::read(path, move |current| {
        Ok(look_up(request, current))
    }))
}

/// Ansible's `\S+(\s+)?,(\s+)?` test for `a,b` names.
fn is_name_list(host: &str) -> bool {
    host.char_indices()
        .any(|(i, c)| c == ',' && host[..i].trim_end().chars().any(|c| !c.is_whitespace()))
}

/// `|1|salt|HMAC-SHA1(salt, host)` in place of the key's host field.
fn hash_host_key(host: &str, key: &str, salt: &[u8; 20]) -> String {
    let mut mac = <Hmac<Sha1> as KeyInit>::new_from_slice(salt).expect("HMAC takes any key");
    mac.update(host.as_bytes());
    let hashed = mac.finalize().into_bytes();
    let mut parts: Vec<String> = key.split_whitespace().map(str::to_string).collect();
    let at = usize::from(parts[0].starts_with('@'));
    if at < parts.len() {
        parts[at] = format!("|1|{}|{}", BASE64.encode(salt), BASE64.encode(hashed));
    }
    parts.join(" ")
}

fn keygen_find(host: &str, file: &str, stdin: Option<Vec<u8>>) -> Op {
    Op::Exec(Exec {
        command: Command::Argv(vec![
            "ssh-keygen".into(),
            "-F".into(),
            host.into(),
            "-f".into(),
            file.into(),
        ]),
        chdir: None,
        creates: None,
        removes: None,
        env: Vec::new(),
        stdin,
        umask: None,
    })
}

/// Second step: does the key name the host (Ansible's `sanity_check`, on the key given
/// as a file), and is the host in the file (`search_for_host_key`)?
fn look_up(request: Request, current: Current) -> Plan {
    let mut ops = Vec::new();
    if let Some(key) = &request.key {
        ops.push(keygen_find(
            &request.host,
            "/dev/stdin",
            Some(key.clone().into_bytes()),
        ));
    }
    let exists = current.exists();
    if exists {
        ops.push(keygen_find(&request.host, &current.path, None));
    }
    if ops.is_empty() {
        return decide(request, current, None);
    }
    let sane = request.key.is_some();
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let OpResult::Batch(mut replies) = reply else {
                return Ok(Plan::Done(text_file::agent_failure(reply)));
            };
            let search = if exists { replies.pop() } else { None };
            if sane {
                let sanity = replies.pop().map(exec_of);
                match sanity {
                    Some(Ok((rc, stdout, stderr))) if stdout.is_empty() => {
                        let mut out = TaskOutcome::failed(
                            "Host parameter does not match hashed host field in supplied key",
                        );
                        out.data.insert("rc".into(), json!(rc));
                        if !stderr.is_empty() {
                            out.data.insert("stderr".into(), json!(stderr));
                        }
                        return Ok(Plan::Done(out));
                    }
                    Some(Ok(_)) => {}
                    Some(Err(out)) => return Ok(Plan::Done(*out)),
                    None => return Ok(Plan::Done(missing_reply())),
                }
            }
            let found = match search.map(exec_of) {
                None => None,
                Some(Ok(found)) => Some(found),
                Some(Err(out)) => return Ok(Plan::Done(*out)),
            };
            Ok(decide(request, current, found))
        }),
    )
}

fn missing_reply() -> TaskOutcome {
    TaskOutcome::failed("internal error: known_hosts got too few replies from the agent")
}

/// An `Exec` reply as `(rc, stdout, stderr)`, or the task's failure.
fn exec_of(reply: OpResult) -> Result<(i32, String, String), Box<TaskOutcome>> {
    match reply {
        // The agent could not start it: Ansible's `get_bin_path` failure, first thing.
        OpResult::Exec(e) if e.msg.contains("(os error ") => Err(Box::new(TaskOutcome::failed(
            "Failed to find required executable \"ssh-keygen\" in paths",
        ))),
        OpResult::Exec(e) => Ok((
            e.rc,
            String::from_utf8_lossy(&e.stdout).into_owned(),
            String::from_utf8_lossy(&e.stderr).into_owned(),
        )),
        other => Err(Box::new(text_file::agent_failure(other))),
    }
}

/// Where the host stands in the file: Ansible's `(found, replace_or_add, found_line)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Search {
    found: bool,
    replace_or_add: bool,
    found_line: Option<usize>,
}

const NOT_FOUND: Search = Search {
    found: false,
    replace_or_add: false,
    found_line: None,
};

/// Ansible's `search_for_host_key` over what `ssh-keygen -F` printed.
fn search(key: Option<&str>, rc: i32, stdout: &str, stderr: &str) -> Result<Search, String> {
    if stdout.is_empty() && stderr.is_empty() && (rc == 0 || rc == 1) {
        return Ok(NOT_FOUND);
    }
    if rc != 0 {
        return Err(format!(
            "ssh-keygen failed (rc={rc}, stdout='{stdout}',stderr='{stderr}')"
        ));
    }
    let Some(key) = key else {
        return Ok(Search {
            found: true,
            replace_or_add: false,
            found_line: None,
        });
    };
    let mut new_key = normalize(key)?;
    let mut found_line = None;
    for line in stdout.split('\n') {
        if line.is_empty() {
            continue;
        }
        if line.starts_with('#') {
            found_line = line
                .split("found: line ")
                .nth(1)
                .and_then(|rest| {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse().ok()
                })
                .or(found_line);
            continue;
        }
        let found_key = normalize(line)?;
        let hit = |found_line| {
            Ok(Search {
                found: true,
                replace_or_add: false,
                found_line,
            })
        };
        match found_key.marker.as_deref() {
            Some(m) if m.starts_with("@cert-authority") || m.starts_with("@revoke") => {
                if new_key == found_key {
                    return hit(found_line);
                }
            }
            _ => {
                if new_key.host.starts_with("|1|") && found_key.host.starts_with("|1|") {
                    new_key.host = found_key.host.clone();
                }
                if new_key == found_key {
                    return hit(found_line);
                }
                if new_key.kind == found_key.kind {
                    return Ok(Search {
                        found: true,
                        replace_or_add: true,
                        found_line,
                    });
                }
            }
        }
    }
    Ok(Search {
        found: true,
        replace_or_add: true,
        found_line: None,
    })
}

/// Ansible's `normalize_known_hosts_key`: marker, host, type and key, the comment dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
struct KeyLine {
    marker: Option<String>,
    host: String,
    kind: String,
    key: String,
}

fn normalize(line: &str) -> Result<KeyLine, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let marker = words.first().is_some_and(|w| w.starts_with('@'));
    let at = usize::from(marker);
    if words.len() < at + 3 {
        // Python's IndexError, which Ansible does not catch.
        return Err(format!("list index out of range (key line {line:?})"));
    }
    Ok(KeyLine {
        marker: marker.then(|| words[0].to_string()),
        host: words[at].to_string(),
        kind: words[at + 1].to_string(),
        key: words[at + 2].to_string(),
    })
}

/// Third step: change nothing (check mode, or nothing to do), remove the host with
/// `ssh-keygen -R`, or write the new text.
fn decide(request: Request, current: Current, found: Option<(i32, String, String)>) -> Plan {
    let search = match found {
        None => NOT_FOUND,
        Some((rc, stdout, stderr)) => match search(request.key.as_deref(), rc, &stdout, &stderr) {
            Ok(search) => search,
            Err(msg) => return Plan::Done(TaskOutcome::failed(msg)),
        },
    };
    let before = if current.exists() {
        match decode(&current.bytes, true) {
            Ok(text) => text,
            Err(msg) => return Plan::Done(TaskOutcome::failed(msg)),
        }
    } else {
        String::new()
    };
    let diff = diff(&request, &current, &before, search);
    if !request.present && search.found_line.is_none() && request.key.is_some() {
        return Plan::Done(outcome(&request, &current.path, false, diff, &current.stat));
    }
    let rewrite = search.replace_or_add || search.found != request.present;
    if request.check {
        let mut out = TaskOutcome {
            changed: search.replace_or_add || request.present != search.found,
            ..TaskOutcome::default()
        };
        out.data.insert("diff".into(), diff);
        return Plan::Done(out);
    }
    let remove_host = search.found && request.key.is_none() && !request.present;
    let path = current.path.clone();
    if remove_host {
        let op = Op::Batch(vec![
            Op::Exec(Exec {
                command: Command::Argv(vec![
                    "ssh-keygen".into(),
                    "-R".into(),
                    request.host.clone(),
                    "-f".into(),
                    path.clone(),
                ]),
                chdir: None,
                creates: None,
                removes: None,
                env: Vec::new(),
                stdin: None,
                umask: None,
            }),
            Op::Stat {
                path: path.clone(),
                checksum: None,
                follow: true,
            },
        ]);
        // What follows in Ansible (the file copied line by line over itself) writes the
        // same text: the host's lines are gone and there is no key to add.
        return Plan::Step(
            op,
            Next::new(move |reply| {
                let OpResult::Batch(mut replies) = reply else {
                    return Ok(Plan::Done(text_file::agent_failure(reply)));
                };
                let stat = replies.pop();
                match replies.pop().map(exec_of) {
                    Some(Ok((0, _, _))) => {}
                    Some(Ok((rc, stdout, stderr))) => {
                        let mut out = TaskOutcome::failed(stderr.trim_end().to_string());
                        out.data.insert("rc".into(), json!(rc));
                        out.data.insert("stdout".into(), json!(stdout));
                        out.data.insert("stderr".into(), json!(stderr));
                        return Ok(Plan::Done(out));
                    }
                    Some(Err(out)) => return Ok(Plan::Done(*out)),
                    None => return Ok(Plan::Done(missing_reply())),
                }
                let stat = match stat {
                    Some(OpResult::Stat(stat)) => stat,
                    other => {
                        return Ok(Plan::Done(text_file::agent_failure(
                            other.unwrap_or(OpResult::Batch(Vec::new())),
                        )));
                    }
                };
                Ok(Plan::Done(outcome(&request, &path, true, diff, &stat)))
            }),
        );
    }
    if !rewrite {
        return Plan::Done(outcome(&request, &path, false, diff, &current.stat));
    }
    let text = new_text(&before, search, request.present, request.key.as_deref());
    let op = Op::EnsureFile(EnsureFile {
        path: current.write_path.clone(),
        content: FileContent::Inline(text.into_bytes()),
        mode: None,
        force: true,
        owner: Ownership::default(),
        validate: None,
        backup: false,
    });
    Plan::Step(
        op,
        Next::new(move |reply| match reply {
            OpResult::File(file) => {
                let stat = stat_of(&file);
                Ok(Plan::Done(outcome(&request, &path, true, diff, &stat)))
            }
            OpResult::Error(e) => Ok(Plan::Done(TaskOutcome::failed(format!(
                "Failed to write to file '{path}': {}",
                e.message
            )))),
            other => Ok(Plan::Done(text_file::agent_failure(other))),
        }),
    )
}

fn stat_of(file: &FileOutcome) -> StatInfo {
    StatInfo {
        path: file.path.clone(),
        exists: file.kind != FileKind::Missing,
        kind: file.kind,
        mode: file.mode,
        size: file.size,
        uid: file.uid,
        gid: file.gid,
        owner: file.owner.clone(),
        group: file.group.clone(),
        ..StatInfo::default()
    }
}

/// The file's text after the change: every line but the one replaced or removed, then
/// the key (Ansible copies the file line by line, with universal newlines).
fn new_text(before: &str, search: Search, present: bool, key: Option<&str>) -> String {
    let mut out = String::with_capacity(before.len() + 128);
    for (i, line) in read_lines(before).iter().enumerate() {
        if search.found_line == Some(i + 1) && (search.replace_or_add || !present) {
            continue;
        }
        out.push_str(line);
    }
    if present {
        out.push_str(key.unwrap_or_default());
    }
    out
}

/// Ansible's `compute_diff`, always part of the result.
fn diff(request: &Request, current: &Current, before: &str, search: Search) -> Value {
    let mut lines = split_lines_keep(before);
    if let Some(line) = search.found_line
        && (search.replace_or_add || !request.present)
        && (1..=lines.len()).contains(&line)
    {
        lines.remove(line - 1);
    }
    if request.present && (search.replace_or_add || search.found_line.is_none()) {
        lines.push(request.key.clone().unwrap_or_default());
    }
    let before_header = if current.exists() {
        current.path.as_str()
    } else {
        "/dev/null"
    };
    json!({
        "before_header": before_header,
        "after_header": current.path,
        "before": before,
        "after": lines.concat(),
    })
}

/// The result: the arguments, `changed`, `diff`, and the file's attributes as
/// `exit_json` adds them for a result with a `path`.
fn outcome(
    request: &Request,
    path: &str,
    changed: bool,
    diff: Value,
    stat: &StatInfo,
) -> TaskOutcome {
    let mut data = Map::new();
    data.insert("name".into(), json!(request.name));
    data.insert("key".into(), json!(request.key_arg));
    data.insert("path".into(), json!(path));
    data.insert("hash_host".into(), json!(request.hash_host));
    let state = if request.present { "present" } else { "absent" };
    data.insert("state".into(), json!(state));
    data.insert("diff".into(), diff);
    if stat.kind == FileKind::Missing {
        data.insert("state".into(), json!("absent"));
    } else {
        data.insert("uid".into(), json!(stat.uid));
        data.insert("gid".into(), json!(stat.gid));
        data.insert("owner".into(), json!(stat.owner));
        data.insert("group".into(), json!(stat.group));
        data.insert("mode".into(), json!(mode_string(stat.mode)));
        let kind = match stat.kind {
            FileKind::Directory => "directory",
            FileKind::Symlink => "link",
            _ => "file",
        };
        data.insert("state".into(), json!(kind));
        data.insert("size".into(), json!(stat.size));
    }
    TaskOutcome {
        changed,
        data,
        ..TaskOutcome::default()
    }
}

#[cfg(test)]
#[path = "known_hosts_tests.rs"]
mod tests;
