//! `yum_repository`: one section of a `.repo` file under `reposdir`, written as Ansible's
//! module writes it (Python's `RawConfigParser`: the section removed and added again at
//! the end, its keys sorted, `key = value`, continuation lines after a tab, a blank line
//! after every section), and only when the parsed sections change.

use serde_json::{Value, json};
use turbo_proto::{
    EnsureFile, EnsurePath, FileContent, FileKind, FileMode, Op, OpResult, PathState, StatInfo,
};

use super::spec::{Arg, Elem, Lit, RequiredIf, Spec};
use super::{
    Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, ownership, parse_mode,
};

pub struct YumRepository;

const SELINUX: &str = "SELinux contexts are not set by turbo-play's agent";

static SPEC: Spec = Spec::new(&[
    Arg::bool("async"),
    Arg::str("attributes").aliases(&["attr"]).not_yet(),
    Arg::str("bandwidth"),
    Arg::list("baseurl", Elem::Str),
    Arg::str("cost"),
    Arg::bool("countme"),
    Arg::str("deltarpm_metadata_percentage"),
    Arg::str("deltarpm_percentage"),
    Arg::str("description"),
    Arg::bool("enabled"),
    Arg::bool("enablegroups"),
    Arg::list("exclude", Elem::Str).aliases(&["excludepkgs"]),
    Arg::str("failovermethod").choices(&["roundrobin", "priority"]),
    Arg::str("file"),
    Arg::str("gpgcakey"),
    Arg::bool("gpgcheck"),
    Arg::list("gpgkey", Elem::Str),
    Arg::str("group"),
    Arg::str("http_caching").choices(&["all", "packages", "none"]),
    Arg::str("include"),
    Arg::list("includepkgs", Elem::Str),
    Arg::str("ip_resolve").choices(&["4", "6", "IPv4", "IPv6", "whatever"]),
    Arg::bool("keepalive"),
    Arg::str("metadata_expire"),
    Arg::str("metadata_expire_filter").choices(&[
        "never",
        "read-only:past",
        "read-only:present",
        "read-only:future",
    ]),
    Arg::str("metalink"),
    Arg::str("mirrorlist"),
    Arg::str("mirrorlist_expire"),
    Arg::raw("mode"),
    Arg::bool("module_hotfixes"),
    Arg::str("name").required(),
    Arg::str("owner"),
    Arg::str("password").no_log(),
    Arg::str("priority"),
    Arg::bool("protect"),
    Arg::str("proxy"),
    Arg::str("proxy_password").no_log(),
    Arg::str("proxy_username"),
    Arg::bool("repo_gpgcheck"),
    Arg::path("reposdir").default_str("/etc/yum.repos.d"),
    Arg::str("retries"),
    Arg::bool("s3_enabled"),
    Arg::str("selevel").no_effect(SELINUX),
    Arg::str("serole").no_effect(SELINUX),
    Arg::str("setype").no_effect(SELINUX),
    Arg::str("seuser").no_effect(SELINUX),
    Arg::bool("skip_if_unavailable"),
    Arg::str("sslcacert").aliases(&["ca_cert"]),
    Arg::bool("ssl_check_cert_permissions"),
    Arg::str("sslclientcert").aliases(&["client_cert"]),
    Arg::str("sslclientkey").aliases(&["client_key"]),
    Arg::bool("sslverify").aliases(&["validate_certs"]),
    Arg::str("state")
        .choices(&["present", "absent"])
        .default_str("present"),
    Arg::str("throttle"),
    Arg::str("timeout"),
    Arg::str("ui_repoid_vars"),
    Arg::bool("unsafe_writes")
        .default_bool(false)
        .no_effect("the agent's writes are atomic renames either way"),
    Arg::str("username"),
])
.required_if(&[
    RequiredIf {
        key: "state",
        value: Lit::Str("present"),
        then: &["baseurl", "mirrorlist", "metalink"],
        any: true,
    },
    RequiredIf {
        key: "state",
        value: Lit::Str("present"),
        then: &["description"],
        any: false,
    },
]);

/// The arguments that are not keys of the repository's section.
const NOT_KEYS: &[&str] = &[
    "attributes",
    "description",
    "file",
    "group",
    "mode",
    "name",
    "owner",
    "reposdir",
    "selevel",
    "serole",
    "setype",
    "seuser",
    "state",
    "unsafe_writes",
];

impl Module for YumRepository {
    fn name(&self) -> &'static str {
        "yum_repository"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let show_diff = ctx.diff;
        let name = args.str("name").unwrap_or_default().to_string();
        let reposdir = args
            .str("reposdir")
            .unwrap_or("/etc/yum.repos.d")
            .to_string();
        let file = args.str("file").unwrap_or(&name).to_string();
        let dest = format!("{}/{file}.repo", reposdir.trim_end_matches('/'));
        let present = args.str("state") != Some("absent");
        let section = present.then(|| section_of(args));
        let mode = parse_mode(args.raw("mode").unwrap_or(&Value::Null))?;
        let owner = ownership(args);
        let op = Op::Batch(vec![
            Op::Stat {
                path: reposdir.clone(),
                checksum: None,
                follow: true,
            },
            Op::ReadFile {
                path: dest.clone(),
                offset: 0,
                limit: None,
            },
        ]);
        Ok(Plan::Step(
            op,
            Next::new(move |reply| {
                let (dir, read) = match reply {
                    OpResult::Batch(mut r) if r.len() == 2 => {
                        let read = r.pop().expect("two replies");
                        (r.pop().expect("two replies"), read)
                    }
                    other => return Ok(Plan::Done(super::unexpected("yum_repository", other))),
                };
                let is_dir = matches!(
                    &dir,
                    OpResult::Stat(StatInfo {
                        kind: FileKind::Directory,
                        ..
                    })
                );
                if !is_dir {
                    return Ok(Plan::Done(TaskOutcome::failed(format!(
                        "Repo directory '{reposdir}' does not exist."
                    ))));
                }
                let OpResult::Read(read) = read else {
                    return Ok(Plan::Done(super::unexpected("yum_repository", read)));
                };
                let exists = read.stat.kind == FileKind::File;
                let text = String::from_utf8_lossy(&read.data).into_owned();
                let mut sections = if exists { parse(&text) } else { Vec::new() };
                let before = dump(&sections);
                sections.retain(|(s, _)| *s != name);
                if let Some(keys) = section {
                    sections.push((name.clone(), keys));
                }
                let after = dump(&sections);
                let changed = before != after;
                let mut data = serde_json::Map::new();
                data.insert("repo".into(), json!(name));
                data.insert(
                    "state".into(),
                    json!(if present { "present" } else { "absent" }),
                );
                if show_diff {
                    data.insert(
                        "diff".into(),
                        json!({"before_header": dest, "before": before,
                               "after_header": dest, "after": after}),
                    );
                }
                let outcome = move |changed: bool| TaskOutcome {
                    changed,
                    data: data.clone(),
                    ..TaskOutcome::default()
                };
                let op = if changed && sections.is_empty() {
                    Op::EnsurePath(EnsurePath {
                        path: dest.clone(),
                        state: PathState::Absent,
                        mode: None,
                        recurse_parents: false,
                        owner: Default::default(),
                    })
                } else if changed || exists {
                    // Unchanged sections keep the file's own bytes: only its mode and owner
                    // may still change.
                    let content = if changed {
                        write(&sections).into_bytes()
                    } else {
                        read.data
                    };
                    Op::EnsureFile(EnsureFile {
                        path: dest.clone(),
                        content: FileContent::Inline(content),
                        // Python's open() makes a new file 0666 less the umask.
                        mode: mode.clone().or(if exists {
                            None
                        } else {
                            Some(FileMode::Bits(0o644))
                        }),
                        force: true,
                        owner: owner.clone(),
                        validate: None,
                        backup: false,
                    })
                } else {
                    return Ok(Plan::Done(outcome(false)));
                };
                Ok(Plan::Step(
                    op,
                    Next::new(move |reply| {
                        Ok(Plan::Done(match reply {
                            OpResult::File(f) => outcome(changed || f.changed),
                            OpResult::Error(e) => {
                                let mut out = TaskOutcome::failed(format!(
                                    "Problems handling file '{dest}'."
                                ));
                                out.data.insert("details".into(), json!(e.message));
                                out
                            }
                            other => super::unexpected("yum_repository", other),
                        }))
                    }),
                ))
            }),
        ))
    }
}

type Section = (String, Vec<(String, String)>);

/// The repository's keys as Ansible sets them: every other argument that is set, sorted,
/// `name` being the description, booleans as 0 and 1, lists of URLs one a line.
fn section_of(args: &Args) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for (key, value) in args.values() {
        if NOT_KEYS.contains(&key.as_str()) || value.is_null() {
            continue;
        }
        let text = match value {
            Value::Bool(b) => if *b { "1" } else { "0" }.to_string(),
            Value::Array(items) => {
                let words: Vec<String> = items.iter().map(super::spec::python_text).collect();
                let joiner = if matches!(key.as_str(), "baseurl" | "gpgkey") {
                    "\n"
                } else {
                    " "
                };
                words.join(joiner)
            }
            other => super::spec::python_text(other),
        };
        keys.push((key.clone(), text));
    }
    if let Some(description) = args.str("description") {
        keys.push(("name".into(), description.to_string()));
    }
    keys.sort();
    keys
}

/// A `.repo` file as `RawConfigParser.read` takes it: `[section]` headers, `key = value`
/// or `key: value` (keys lower-cased), indented lines continuing a value, `#`/`;` comment
/// lines dropped.
fn parse(text: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    // The indent of the key whose value is open, while one is.
    let mut open: Option<usize> = None;
    for line in text.lines() {
        let stripped = line.trim();
        let indent = line.len() - line.trim_start().len();
        if stripped.starts_with('#') || stripped.starts_with(';') {
            continue;
        }
        let value = sections
            .last_mut()
            .and_then(|(_, keys)| keys.last_mut())
            .map(|(_, v)| v);
        if let (Some(key_indent), Some(value)) = (open, value)
            && (stripped.is_empty() || indent > key_indent)
        {
            value.push('\n');
            value.push_str(stripped);
            continue;
        }
        if stripped.is_empty() {
            continue;
        }
        open = None;
        if stripped.starts_with('[')
            && let Some(end) = stripped.rfind(']')
            && end > 1
        {
            sections.push((stripped[1..end].to_string(), Vec::new()));
            continue;
        }
        let Some(at) = stripped.find(['=', ':']) else {
            continue;
        };
        let key = stripped[..at].trim_end().to_lowercase();
        let value = stripped[at + 1..].trim_start().to_string();
        if let Some((_, keys)) = sections.last_mut() {
            keys.retain(|(k, _)| *k != key);
            keys.push((key, value));
            open = Some(indent);
        }
    }
    for (_, keys) in &mut sections {
        for (_, value) in keys.iter_mut() {
            let trimmed = value.trim_end().to_string();
            *value = trimmed;
        }
    }
    sections
}

/// The module's `dump()`, which its diff shows and its change is decided on: sections and
/// keys sorted, `key = value`, a blank line after each section.
fn dump(sections: &[Section]) -> String {
    let mut sorted: Vec<&Section> = sections.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = String::new();
    for (name, keys) in sorted {
        out.push_str(&format!("[{name}]\n"));
        let mut keys: Vec<&(String, String)> = keys.iter().collect();
        keys.sort();
        for (key, value) in keys {
            out.push_str(&format!("{key} = {value}\n"));
        }
        out.push('\n');
    }
    out
}

/// `RawConfigParser.write`: sections in file order, continuation lines after a tab.
fn write(sections: &[Section]) -> String {
    let mut out = String::new();
    for (name, keys) in sections {
        out.push_str(&format!("[{name}]\n"));
        for (key, value) in keys {
            out.push_str(&format!("{key} = {}\n", value.replace('\n', "\n\t")));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use turbo_proto::{FileRead, StatInfo};

    fn plan(v: Value) -> Result<Plan, String> {
        crate::modules::try_plan(&YumRepository, v, &PlanContext::new(Path::new("/")))
    }

    fn stat(path: &str, kind: FileKind) -> StatInfo {
        StatInfo {
            path: path.into(),
            exists: kind != FileKind::Missing,
            kind,
            ..StatInfo::default()
        }
    }

    fn reply(dir: FileKind, file: Option<&str>) -> OpResult {
        OpResult::Batch(vec![
            OpResult::Stat(stat("/etc/yum.repos.d", dir)),
            OpResult::Read(FileRead {
                stat: stat(
                    "/etc/yum.repos.d/tp.repo",
                    if file.is_some() {
                        FileKind::File
                    } else {
                        FileKind::Missing
                    },
                ),
                offset: 0,
                data: file.unwrap_or_default().as_bytes().to_vec(),
                eof: true,
            }),
        ])
    }

    fn written(plan: Plan, reply: OpResult) -> (Op, Next) {
        let Plan::Step(_, next) = plan else {
            panic!("a read first")
        };
        match next.resume(reply).unwrap() {
            Plan::Step(op, next) => (op, next),
            other => panic!("expected a write, got {other:?}"),
        }
    }

    const ARGS: &str = r#"{"name": "tp", "description": "tp local", "baseurl": "file:///srv/rpm-repo",
        "gpgcheck": false, "enabled": true}"#;

    #[test]
    fn writes_ansibles_format() {
        let args: Value = serde_json::from_str(ARGS).unwrap();
        let (op, next) = written(plan(args).unwrap(), reply(FileKind::Directory, None));
        let Op::EnsureFile(f) = op else {
            panic!("{op:?}")
        };
        assert_eq!(f.path, "/etc/yum.repos.d/tp.repo");
        assert_eq!(
            f.content,
            FileContent::Inline(
                b"[tp]\nbaseurl = file:///srv/rpm-repo\nenabled = 1\ngpgcheck = 0\nname = tp local\n\n"
                    .to_vec()
            )
        );
        let Plan::Done(out) = next
            .resume(OpResult::Error(turbo_proto::OpError {
                kind: turbo_proto::ErrorKind::Io,
                message: "disk full".into(),
            }))
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("Problems handling file '/etc/yum.repos.d/tp.repo'.")
        );
    }

    #[test]
    fn an_unchanged_section_keeps_the_files_bytes() {
        let args: Value = serde_json::from_str(ARGS).unwrap();
        let file =
            "# mine\n[tp]\nname=tp local\nbaseurl=file:///srv/rpm-repo\ngpgcheck=0\nenabled=1\n";
        let (op, _) = written(plan(args).unwrap(), reply(FileKind::Directory, Some(file)));
        let Op::EnsureFile(f) = op else {
            panic!("{op:?}")
        };
        assert_eq!(f.content, FileContent::Inline(file.as_bytes().to_vec()));
    }

    #[test]
    fn other_sections_stay_and_the_last_one_removes_the_file() {
        let sections = parse("[a]\nbaseurl = http://x\n\thttp://y\nname = A\n\n[tp]\nname = old\n");
        assert_eq!(
            sections,
            [
                (
                    "a".into(),
                    vec![
                        ("baseurl".into(), "http://x\nhttp://y".into()),
                        ("name".into(), "A".into())
                    ]
                ),
                ("tp".into(), vec![("name".into(), "old".into())]),
            ]
        );
        assert_eq!(
            write(&sections[..1]),
            "[a]\nbaseurl = http://x\n\thttp://y\nname = A\n\n"
        );
        let (op, _) = written(
            plan(json!({"name": "tp", "state": "absent"})).unwrap(),
            reply(FileKind::Directory, Some("[tp]\nname = old\n")),
        );
        assert!(matches!(
            op,
            Op::EnsurePath(EnsurePath {
                state: PathState::Absent,
                ..
            })
        ));
    }

    #[test]
    fn ansibles_refusals() {
        assert_eq!(
            plan(json!({"name": "tp", "description": "x"})).unwrap_err(),
            "state is present but any of the following are missing: baseurl, mirrorlist, metalink"
        );
        let Plan::Step(_, next) = plan(serde_json::from_str(ARGS).unwrap()).unwrap() else {
            panic!()
        };
        let Plan::Done(out) = next.resume(reply(FileKind::Missing, None)).unwrap() else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("Repo directory '/etc/yum.repos.d' does not exist.")
        );
    }
}
