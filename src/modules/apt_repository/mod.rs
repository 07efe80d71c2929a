//! `apt_repository`: a one-line `deb`/`deb-src` source added to or removed from
//! `/etc/apt/sources.list` and `sources.list.d/*.list`, as ansible-core 2.21 does it: the
//! files are read, the line enabled where it is already (commented out), else appended to
//! the file named after the repository, removed everywhere for `absent`; every file is then
//! written back normalised and a file left without lines removed, and the cache updated
//! with `apt-get update` when something changed. Unlike Ansible, nothing needs python3-apt.

mod sources;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::{Value, json};
use turbo_proto::{
    Command, EnsureFile, EnsurePath, Exec, FileContent, FileKind, FileMode, Op, OpResult, PathState,
};

use super::spec::{Arg, Spec};
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, parse_mode};
use sources::SourcesList;

pub struct AptRepository;

const SOURCES_LIST: &str = "/etc/apt/sources.list";
const SOURCES_DIR: &str = "/etc/apt/sources.list.d";

static SPEC: Spec = Spec::new(&[
    Arg::str("codename"),
    Arg::str("filename"),
    Arg::bool("install_python_apt")
        .default_bool(true)
        .no_effect("turbo-play reads and writes the sources itself and needs no python3-apt"),
    Arg::raw("mode"),
    Arg::str("repo").required(),
    Arg::str("state")
        .default_str("present")
        .choices(&["absent", "present"]),
    Arg::bool("update_cache")
        .default_bool(true)
        .aliases(&["update-cache"]),
    Arg::int("update_cache_retries").default_int(5),
    Arg::int("update_cache_retry_max_delay").default_int(12),
    Arg::bool("validate_certs").default_bool(true),
]);

/// What the task asks, owned for the steps after the target's replies.
#[derive(Debug)]
struct Request {
    repo: String,
    /// The normalised source line (Ansible's `_parse(...)[2]`).
    source: String,
    present: bool,
    /// Where a new line goes (already expanded to a path).
    file: String,
    mode: Option<FileMode>,
    update_cache: bool,
    retries: i64,
    max_delay: i64,
    check: bool,
    diff: bool,
}

impl Module for AptRepository {
    fn name(&self) -> &'static str {
        "apt_repository"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let repo = args.str("repo").unwrap_or_default().to_string();
        if repo.is_empty() {
            return Err(ModuleError::Invalid(
                "Please set argument 'repo' to a non-empty value".into(),
            ));
        }
        if repo.starts_with("ppa:") {
            return Err(ModuleError::Invalid(
                "apt_repository: ppa: repositories (looked up on Launchpad, with their key) are not supported yet; write the deb line and add its key with apt_key or deb822_repository".into(),
            ));
        }
        let (line, invalid) = sources::parse(0, &repo);
        if let Some(text) = invalid {
            return Err(ModuleError::Invalid(format!(
                "Invalid repository string: {text}"
            )));
        }
        let present = args.str("state") != Some("absent");
        let file = if present {
            let name = sources::suggest_filename(&line.source, args.str("filename"))
                .map_err(ModuleError::Invalid)?;
            sources::expand_path(&name, SOURCES_DIR)
        } else {
            String::new()
        };
        let request = Arc::new(Request {
            repo,
            source: line.source,
            present,
            file,
            mode: parse_mode(args.raw("mode").unwrap_or(&Value::Null))?,
            update_cache: args.bool("update_cache"),
            retries: args.int("update_cache_retries").unwrap_or(5),
            max_delay: args.int("update_cache_retry_max_delay").unwrap_or(12),
            check: ctx.check_mode,
            diff: ctx.diff,
        });
        Ok(read_lists(request))
    }
}

fn read(path: &str) -> Op {
    Op::ReadFile {
        path: path.to_string(),
        offset: 0,
        limit: None,
    }
}

fn failed(msg: impl Into<String>) -> Result<Plan, ModuleError> {
    Ok(Plan::Done(TaskOutcome::failed(msg)))
}

fn batch(reply: OpResult) -> Result<Vec<OpResult>, String> {
    match reply {
        OpResult::Batch(results) => match results.iter().find_map(|r| match r {
            OpResult::Error(e) => Some(e.message.clone()),
            _ => None,
        }) {
            Some(error) => Err(error),
            None => Ok(results),
        },
        OpResult::Error(e) => Err(e.message),
        other => Err(format!(
            "internal error: apt_repository got an unexpected reply from the agent: {other:?}"
        )),
    }
}

/// First step: sources.list and the names in sources.list.d.
fn read_lists(request: Arc<Request>) -> Plan {
    let ops = vec![
        read(SOURCES_LIST),
        Op::ListTree {
            path: SOURCES_DIR.into(),
            max_depth: Some(1),
            follow: false,
            checksum: None,
        },
    ];
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let results = match batch(reply) {
                Ok(r) => r,
                Err(e) => return failed(e),
            };
            let mut texts = BTreeMap::new();
            if let Some(OpResult::Read(r)) = results.first()
                && r.stat.exists
                && r.stat.kind == FileKind::File
            {
                texts.insert(
                    SOURCES_LIST.to_string(),
                    String::from_utf8_lossy(&r.data).into_owned(),
                );
            }
            // glob's `*.list`: hidden names excluded, files and links to them.
            let parts: Vec<String> = match results.get(1) {
                Some(OpResult::Tree(tree)) => tree
                    .entries
                    .iter()
                    .filter(|e| matches!(e.kind, FileKind::File | FileKind::Symlink))
                    .map(|e| e.path.clone())
                    .filter(|p| {
                        let name = p.rsplit('/').next().unwrap_or_default();
                        name.ends_with(".list") && !name.starts_with('.')
                    })
                    .collect(),
                _ => Vec::new(),
            };
            if parts.is_empty() {
                return decide(request, texts);
            }
            let ops = parts.iter().map(|p| read(p)).collect();
            Ok(Plan::Step(
                Op::Batch(ops),
                Next::new(move |reply| {
                    let results = match batch(reply) {
                        Ok(r) => r,
                        Err(e) => return failed(e),
                    };
                    for (path, result) in parts.into_iter().zip(results) {
                        if let OpResult::Read(r) = result
                            && r.stat.exists
                        {
                            texts.insert(path, String::from_utf8_lossy(&r.data).into_owned());
                        }
                    }
                    decide(request, texts)
                }),
            ))
        }),
    )
}

/// The change Ansible makes, and the writes that make it.
fn decide(request: Arc<Request>, texts: BTreeMap<String, String>) -> Result<Plan, ModuleError> {
    let mut list = SourcesList::default();
    for (path, text) in &texts {
        list.files.insert(path.clone(), sources::load(text));
    }
    let before = list.dump();
    let mut appended_to = None;
    if request.present {
        if list.add(&request.source, &request.file) {
            appended_to = Some(request.file.clone());
        }
    } else if let Err(e) = list.remove(&request.source) {
        return failed(e);
    }
    let after = list.dump();
    let changed = before != after;
    let mut out = TaskOutcome {
        changed,
        ..TaskOutcome::default()
    };
    let added: BTreeSet<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let removed: BTreeSet<&String> = before.keys().filter(|k| !after.contains_key(*k)).collect();
    let mut diff = Vec::new();
    if changed && request.diff {
        for name in added.iter().chain(removed.iter()) {
            diff.push(json!({
                "before": before.get(*name).cloned().unwrap_or_default(),
                "after": after.get(*name).cloned().unwrap_or_default(),
                "before_header": if before.contains_key(*name) { name.as_str() } else { "/dev/null" },
                "after_header": if after.contains_key(*name) { name.as_str() } else { "/dev/null" },
            }));
        }
    }
    out.data.insert("repo".into(), json!(request.repo));
    out.data.insert(
        "state".into(),
        json!(if request.present { "present" } else { "absent" }),
    );
    out.data.insert(
        "sources_added".into(),
        json!(if changed {
            added.clone()
        } else {
            BTreeSet::new()
        }),
    );
    out.data.insert(
        "sources_removed".into(),
        json!(if changed {
            removed.clone()
        } else {
            BTreeSet::new()
        }),
    );
    out.data.insert("diff".into(), Value::Array(diff));
    if !changed || request.check {
        return Ok(Plan::Done(out));
    }
    let writes = save(&list, &texts, appended_to.as_deref(), request.mode.clone());
    // A failed cache update puts back what was read, after removing the files this task
    // created, as Ansible's revert does.
    let revert_ops: Vec<Op> = after
        .keys()
        .filter(|k| !before.contains_key(*k))
        .map(|path| gone(path))
        .chain(texts.iter().map(|(path, text)| {
            Op::EnsureFile(EnsureFile {
                path: path.clone(),
                content: FileContent::Inline(text.clone().into_bytes()),
                mode: None,
                force: true,
                owner: Default::default(),
                validate: None,
                backup: false,
            })
        }))
        .collect();
    Ok(Plan::Step(
        Op::Batch(writes),
        Next::new(move |reply| {
            if let Err(e) = batch(reply) {
                return failed(e);
            }
            if !request.update_cache {
                return Ok(Plan::Done(out));
            }
            let revert = Revert { ops: revert_ops };
            Ok(update(request, out, revert, 0, String::new()))
        }),
    ))
}

/// The writes of Ansible's `save()`: each file with lines whose text is not already what
/// it holds, and each file left without lines removed. A file that got the new line takes
/// the task's `mode`; a new one is otherwise 0644 (0666 less the usual umask, as Ansible's
/// atomic move leaves it).
fn save(
    list: &SourcesList,
    texts: &BTreeMap<String, String>,
    appended_to: Option<&str>,
    mode: Option<FileMode>,
) -> Vec<Op> {
    let mut ops = Vec::new();
    for (path, lines) in &list.files {
        if lines.is_empty() {
            ops.push(gone(path));
            continue;
        }
        let text = sources::render(lines);
        let exists = texts.contains_key(path);
        let takes_mode = appended_to == Some(path.as_str()) && mode.is_some();
        if exists && texts[path] == text && !takes_mode {
            continue;
        }
        let mode = if takes_mode {
            mode.clone()
        } else if exists {
            None
        } else {
            Some(FileMode::Bits(0o644))
        };
        ops.push(Op::EnsureFile(EnsureFile {
            path: path.clone(),
            content: FileContent::Inline(text.into_bytes()),
            mode,
            force: true,
            owner: Default::default(),
            validate: None,
            backup: false,
        }));
    }
    ops
}

fn gone(path: &str) -> Op {
    Op::EnsurePath(EnsurePath {
        path: path.to_string(),
        state: PathState::Absent,
        mode: None,
        recurse_parents: false,
        owner: Default::default(),
    })
}

struct Revert {
    ops: Vec<Op>,
}

/// `apt-get update -q` in the C locale, as the apt module runs it.
fn update_exec() -> Exec {
    let mut env = vec![("DEBIAN_FRONTEND".to_string(), "noninteractive".to_string())];
    for key in ["LANG", "LC_ALL", "LC_MESSAGES", "LC_CTYPE", "LANGUAGE"] {
        env.push((key.to_string(), "C.UTF-8".to_string()));
    }
    Exec {
        command: Command::Argv(crate::modules::apt::apt_get::update_argv("apt-get")),
        chdir: None,
        creates: None,
        removes: None,
        env,
        stdin: None,
        umask: None,
    }
}

fn apt_get_update(delay: i64) -> Op {
    let update = update_exec();
    if delay == 0 {
        return Op::Exec(update);
    }
    Op::Batch(vec![
        Op::Exec(Exec {
            command: Command::Argv(vec!["sleep".into(), delay.to_string()]),
            ..update.clone()
        }),
        Op::Exec(update),
    ])
}

/// `apt-get update`, tried `update_cache_retries` times with Ansible's backoff (2^n
/// seconds, at most the max delay, before each new try; Ansible also sleeps after the
/// last one, which changes nothing); when every try failed the sources are put back.
fn update(
    request: Arc<Request>,
    out: TaskOutcome,
    revert: Revert,
    attempt: i64,
    err: String,
) -> Plan {
    if attempt >= request.retries {
        let msg = format!(
            "Failed to update apt cache after {} retries: {}",
            request.retries,
            if err.is_empty() {
                "unknown reason"
            } else {
                &err
            }
        );
        let warnings = out.data.get("warnings").cloned();
        return Plan::Step(
            Op::Batch(revert.ops),
            Next::new(move |_| {
                let mut failure = TaskOutcome::failed(msg);
                if let Some(w) = warnings {
                    failure.data.insert("warnings".into(), w);
                }
                Ok(Plan::Done(failure))
            }),
        );
    }
    let delay = if attempt == 0 {
        0
    } else {
        (1i64 << (attempt - 1).min(30)).min(request.max_delay)
    };
    Plan::Step(
        apt_get_update(delay),
        Next::new(move |reply| {
            let x = match reply {
                OpResult::Exec(x) => x,
                OpResult::Batch(mut results) if results.len() == 2 => match results.pop() {
                    Some(OpResult::Exec(x)) => x,
                    Some(OpResult::Error(e)) => return failed(e.message),
                    _ => {
                        return failed(
                            "internal error: apt_repository: no reply to apt-get update",
                        );
                    }
                },
                OpResult::Error(e) => return failed(e.message),
                other => {
                    return Ok(Plan::Done(super::unexpected("apt_repository", other)));
                }
            };
            if x.rc == 0 {
                return Ok(Plan::Done(out));
            }
            let err = String::from_utf8_lossy(&x.stderr).trim().to_string();
            let mut out = out;
            // Ansible's words; its delay has up to a second of randomness on top.
            let next_delay = (1i64 << attempt.min(30)).min(request.max_delay);
            let warnings = out
                .data
                .entry("warnings")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = warnings {
                list.push(json!(format!(
                    "Failed to update cache after {} due to {err} retry, retrying",
                    attempt + 1
                )));
                list.push(json!(format!(
                    "Sleeping for {next_delay} seconds, before attempting to update the cache again"
                )));
            }
            Ok(update(request, out, revert, attempt + 1, err))
        }),
    )
}

#[cfg(test)]
mod tests;
