//! `deb822_repository`: an APT source as a deb822 stanza in
//! `/etc/apt/sources.list.d/<name>.sources`, written as ansible-core 2.21 writes it (its
//! fields in the order of their option names, `python-debian`'s `Deb822.dump()` layout).
//! The stanza is made here, but the host must have python3-debian as Ansible's module
//! needs it (`deb822_python_debian.rs`: installed when `install_python_debian` says so).

use serde_json::{Value, json};
use turbo_proto::{
    EnsureFile, EnsurePath, FileContent, FileKind, FileMode, Op, OpResult, PathState,
};

use super::deb822_python_debian as python_debian;
use super::download;
use super::spec::{Arg, Elem, Spec};
use super::would_write;
use super::{Args, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, parse_mode};

pub struct Deb822Repository;

const SOURCES_DIR: &str = "/etc/apt/sources.list.d";
const KEYRINGS_DIR: &str = "/etc/apt/keyrings";

static SPEC: Spec = Spec::new(&[
    Arg::bool("allow_downgrade_to_insecure"),
    Arg::bool("allow_insecure"),
    Arg::bool("allow_weak"),
    Arg::list("architectures", Elem::Str),
    Arg::bool("by_hash"),
    Arg::bool("check_date"),
    Arg::bool("check_valid_until"),
    Arg::list("components", Elem::Str),
    Arg::int("date_max_future"),
    Arg::bool("enabled"),
    Arg::list("exclude", Elem::Str),
    Arg::list("include", Elem::Str),
    Arg::str("inrelease_path"),
    Arg::bool("install_python_debian").default_bool(false),
    Arg::list("languages", Elem::Str),
    Arg::raw("mode").default_str("0644"),
    Arg::str("name").required(),
    Arg::bool("pdiffs"),
    Arg::str("signed_by"),
    Arg::str("state")
        .default_str("present")
        .choices(&["present", "absent"]),
    Arg::list("suites", Elem::Str),
    Arg::list("targets", Elem::Str),
    Arg::bool("trusted"),
    Arg::list("types", Elem::Str)
        .default(super::spec::Lit::Str("deb"))
        .choices(&["deb", "deb-src"]),
    Arg::list("uris", Elem::Str),
])
.mutually_exclusive(&[&["exclude", "include"]]);

/// The options that become fields, in the sorted order Ansible writes them.
const FIELDS: &[&str] = &[
    "allow_downgrade_to_insecure",
    "allow_insecure",
    "allow_weak",
    "architectures",
    "by_hash",
    "check_date",
    "check_valid_until",
    "components",
    "date_max_future",
    "enabled",
    "exclude",
    "include",
    "inrelease_path",
    "languages",
    "name",
    "pdiffs",
    "signed_by",
    "suites",
    "targets",
    "trusted",
    "types",
    "uris",
];

/// Ansible's `format_field_name`: `X-Repolib-Name`, `URIs`, else Title-Case words.
fn field_name(option: &str) -> String {
    match option {
        "name" => "X-Repolib-Name".into(),
        "uris" => "URIs".into(),
        _ => option
            .split('_')
            .map(|word| {
                let mut chars = word.chars();
                chars.next().map_or(String::new(), |c| {
                    c.to_uppercase()
                        .chain(chars.flat_map(char::to_lowercase))
                        .collect()
                })
            })
            .collect::<Vec<_>>()
            .join("-"),
    }
}

/// Ansible's `format_multiline`: on lines of their own, indented, an empty line as `.`.
fn multiline(value: &str) -> String {
    let lines: Vec<String> = value
        .trim()
        .lines()
        .map(|line| match line.trim() {
            "" => "    .".to_string(),
            text => format!("    {text}"),
        })
        .collect();
    format!("\n{}", lines.join("\n"))
}

/// A field's text as Ansible formats its option's value.
fn field_value(value: &Value) -> Option<String> {
    let text = match value {
        Value::Null => return None,
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect::<Vec<_>>()
            .join(" "),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    Some(if text.contains('\n') {
        multiline(&text)
    } else {
        text
    })
}

/// The stanza as `Deb822.dump()` writes it: `Field: value`, or `Field:` followed directly
/// by a value on lines of its own.
/// `signed_by`, when given, is the value of that field instead of the argument's (the
/// file a fetched key went to).
pub(crate) fn render(args: &Args, signed_by: Option<&str>) -> String {
    let mut out = String::new();
    for option in FIELDS {
        let value = match (*option, signed_by) {
            ("signed_by", Some(file)) => Some(file.to_string()),
            _ => args.raw(option).and_then(field_value),
        };
        let Some(value) = value else {
            continue;
        };
        let name = field_name(option);
        if value.is_empty() || value.starts_with('\n') {
            out.push_str(&format!("{name}:{value}\n"));
        } else {
            out.push_str(&format!("{name}: {value}\n"));
        }
    }
    out
}

/// Ansible's older file name for the repository (`legacy_slug`), used when it exists.
fn legacy_slug(name: &str) -> String {
    let mut dashed = String::new();
    let mut in_run = false;
    for c in name.to_lowercase().chars() {
        if c == '_' || c.is_whitespace() {
            if !in_run {
                dashed.push('-');
            }
            in_run = true;
        } else {
            dashed.push(c);
            in_run = false;
        }
    }
    dashed
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect()
}

fn sources_file(slug: &str) -> String {
    format!("{SOURCES_DIR}/{slug}.sources")
}

/// A `signed_by` with a URL scheme: Ansible downloads the key from it.
fn is_url(value: &str) -> bool {
    value.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    }) && !value.contains('\n')
}

fn stat(path: &str) -> Op {
    Op::Stat {
        path: path.to_string(),
        checksum: None,
        follow: true,
    }
}

fn exists(result: Option<&OpResult>) -> (bool, bool) {
    match result {
        Some(OpResult::Stat(s)) => (s.exists, s.exists && s.kind == FileKind::File),
        _ => (false, false),
    }
}

impl Module for Deb822Repository {
    fn name(&self) -> &'static str {
        "deb822_repository"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// A key URL is fetched in check mode too, as Ansible's module fetches it: the module
    /// runs its reads for real and only looks where it would write (`would_write`).
    fn caps(&self) -> super::Caps {
        super::Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let name = args.str("name").unwrap_or_default().to_string();
        let legacy = legacy_slug(&name);
        let signed_by = args.str("signed_by").map(str::to_string);
        let key_url = signed_by.clone().filter(|key| is_url(key));
        let mode = parse_mode(args.raw("mode").unwrap_or(&Value::Null))?;
        let absent = args.str("state") == Some("absent");
        let mut ops = vec![stat(&sources_file(&legacy))];
        // A signed_by that may name a file: looked at (index 1) to tell.
        let key_path = signed_by
            .as_ref()
            .filter(|k| !k.contains('\n') && !is_url(k));
        if let Some(key) = key_path {
            ops.push(stat(key));
        }
        let key_stat_at = key_path.map(|_| 1);
        let probe_at = ops.len();
        ops.push(python_debian::probe());
        // A key URL is fetched on the target, as Ansible's module fetches it.
        let fetch_at = ops.len();
        let check = ctx.check_mode;
        if let Some(url) = key_url.as_ref().filter(|_| !absent) {
            ops.push(download::to_bytes(&download::interpreter(ctx), url));
        }
        let install = args.bool("install_python_debian");
        let args = args.clone();
        Ok(Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| {
                let results = match reply {
                    OpResult::Batch(results) => results,
                    other => return Ok(Plan::Done(super::unexpected("deb822_repository", other))),
                };
                let has_library = python_debian::found(results.get(probe_at));
                let go_on = move || {
                    let slug = if exists(results.first()).0 {
                        legacy
                    } else {
                        name.replace(' ', "-")
                    };
                    let dest = sources_file(&slug);
                    if absent {
                        return Ok(remove(dest, slug, check));
                    }
                    let sources = |repo: &str| {
                        Op::EnsureFile(EnsureFile {
                            path: dest.clone(),
                            content: FileContent::Inline(repo.as_bytes().to_vec()),
                            mode,
                            force: true,
                            owner: Default::default(),
                            validate: None,
                            backup: false,
                        })
                    };
                    let Some(url) = key_url else {
                        // A signed_by naming a file is that file; anything else is the key.
                        let key_is_file = key_stat_at.is_some_and(|at| exists(results.get(at)).1);
                        let key_filename = match (&signed_by, key_is_file) {
                            (Some(path), true) => json!(path),
                            _ => Value::Null,
                        };
                        let repo = render(&args, None);
                        return Ok(written(
                            vec![sources(&repo)],
                            check,
                            repo,
                            dest,
                            key_filename,
                        ));
                    };
                    let key = match results.get(fetch_at) {
                        Some(reply) => download::body(&url, reply),
                        None => Err(String::new()),
                    };
                    let Ok(key) = key else {
                        return Ok(Plan::Done(TaskOutcome::failed(
                            "Could not fetch signed_by key.",
                        )));
                    };
                    if key.is_empty() {
                        // Nothing fetched: the URL stays the field's value.
                        let repo = render(&args, None);
                        return Ok(written(vec![sources(&repo)], check, repo, dest, json!(url)));
                    }
                    let armored = key
                        .windows(KEY_ARMOR.len())
                        .any(|w| w == KEY_ARMOR.as_bytes());
                    let ext = if armored { "asc" } else { "gpg" };
                    let key_file = format!("{KEYRINGS_DIR}/{slug}.{ext}");
                    let repo = render(&args, Some(&key_file));
                    let ops = vec![
                        Op::EnsurePath(EnsurePath {
                            path: KEYRINGS_DIR.into(),
                            state: PathState::Directory,
                            mode: Some(FileMode::Bits(0o755)),
                            recurse_parents: false,
                            owner: root_owned(),
                        }),
                        Op::EnsureFile(EnsureFile {
                            path: key_file.clone(),
                            content: FileContent::Inline(key),
                            mode: Some(FileMode::Bits(0o644)),
                            force: true,
                            owner: Default::default(),
                            validate: None,
                            backup: false,
                        }),
                        sources(&repo),
                    ];
                    Ok(written(ops, check, repo, dest, json!(key_file)))
                };
                if has_library {
                    go_on()
                } else {
                    python_debian::missing(install, check, Box::new(go_on))
                }
            }),
        ))
    }
}

/// What a fetched key is written as when it is ASCII-armored (`.asc`, else `.gpg`).
const KEY_ARMOR: &str = "-----BEGIN PGP PUBLIC KEY BLOCK-----";

fn root_owned() -> turbo_proto::Ownership {
    turbo_proto::Ownership {
        user: Some("root".into()),
        group: Some("root".into()),
    }
}

/// `ops` done (in check mode: looked at), and whether they changed anything.
fn apply(
    ops: Vec<Op>,
    check: bool,
    then: impl FnOnce(bool) -> TaskOutcome + Send + Sync + 'static,
) -> Plan {
    let sent = if check {
        ops.iter().map(would_write::look).collect()
    } else {
        ops.clone()
    };
    Plan::Step(
        Op::Batch(sent),
        Next::new(move |reply| {
            let OpResult::Batch(results) = reply else {
                return Ok(Plan::Done(super::unexpected("deb822_repository", reply)));
            };
            let mut changed = false;
            for (op, result) in ops.iter().zip(&results) {
                let this = match (check, result) {
                    (_, OpResult::Error(e)) => Err(e.message.clone()),
                    (true, looked) => would_write::would_change(op, looked),
                    (false, OpResult::File(f)) => Ok(f.changed),
                    (false, _) => Ok(false),
                };
                match this {
                    Ok(c) => changed |= c,
                    Err(msg) => return Ok(Plan::Done(TaskOutcome::failed(msg))),
                }
            }
            Ok(Plan::Done(then(changed)))
        }),
    )
}

/// The files written (the sources file last), then the module's result.
fn written(ops: Vec<Op>, check: bool, repo: String, dest: String, key_filename: Value) -> Plan {
    apply(ops, check, move |changed| {
        let mut out = TaskOutcome {
            changed,
            ..TaskOutcome::default()
        };
        out.data.insert("repo".into(), json!(repo));
        out.data.insert("dest".into(), json!(dest));
        out.data.insert("key_filename".into(), key_filename);
        out
    })
}

/// `state: absent`: the sources file and the key files Ansible would have written.
fn remove(dest: String, slug: String, check: bool) -> Plan {
    let gone = |path: String| {
        Op::EnsurePath(EnsurePath {
            path,
            state: PathState::Absent,
            mode: None,
            recurse_parents: false,
            owner: Default::default(),
        })
    };
    let key_gpg = format!("{KEYRINGS_DIR}/{slug}.gpg");
    let ops = vec![
        gone(dest.clone()),
        gone(format!("{KEYRINGS_DIR}/{slug}.asc")),
        gone(key_gpg.clone()),
    ];
    apply(ops, check, move |changed| {
        let mut out = TaskOutcome {
            changed,
            ..TaskOutcome::default()
        };
        out.data.insert("repo".into(), Value::Null);
        out.data.insert("dest".into(), json!(dest));
        // Ansible reports the last key file it looked for.
        out.data.insert("key_filename".into(), json!(key_gpg));
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;
    use turbo_proto::{FileOutcome, StatInfo};

    fn args(v: Value) -> Args {
        crate::modules::check(&Deb822Repository, v)
    }

    #[test]
    fn renders_the_stanza_as_ansible() {
        let a = args(json!({
            "name": "local repo",
            "types": ["deb"],
            "uris": "file:/srv/repo",
            "suites": "./",
            "trusted": true,
            "date_max_future": 10,
            "architectures": ["amd64", "all"],
            "signed_by": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nabc\n-----END PGP PUBLIC KEY BLOCK-----\n",
        }));
        assert_eq!(
            render(&a, None),
            "Architectures: amd64 all\nDate-Max-Future: 10\nX-Repolib-Name: local repo\nSigned-By:\n    -----BEGIN PGP PUBLIC KEY BLOCK-----\n    .\n    abc\n    -----END PGP PUBLIC KEY BLOCK-----\nSuites: ./\nTrusted: yes\nTypes: deb\nURIs: file:/srv/repo\n"
        );
        assert_eq!(
            field_name("allow_downgrade_to_insecure"),
            "Allow-Downgrade-To-Insecure"
        );
        assert_eq!(field_name("inrelease_path"), "Inrelease-Path");
        assert_eq!(legacy_slug("My_Repo  x.y!"), "my-repo-xy");
        assert!(is_url("https://example.invalid/key.asc") && !is_url("/etc/apt/keyrings/k.gpg"));
    }

    fn stat_reply(exists: bool) -> OpResult {
        OpResult::Stat(StatInfo {
            exists,
            kind: if exists {
                FileKind::File
            } else {
                FileKind::Missing
            },
            ..StatInfo::default()
        })
    }

    #[test]
    fn writes_the_sources_file_after_looking_for_the_legacy_name() {
        let ctx = PlanContext::new(Path::new("/"));
        let plan = crate::modules::try_plan(
            &Deb822Repository,
            json!({"name": "Local Repo", "uris": ["file:/srv/repo"], "suites": ["./"], "signed_by": "/etc/apt/keyrings/local.gpg"}),
            &ctx,
        )
        .unwrap();
        let Plan::Step(Op::Batch(ops), next) = plan else {
            panic!()
        };
        assert_eq!(
            ops,
            [
                stat("/etc/apt/sources.list.d/local-repo.sources"),
                stat("/etc/apt/keyrings/local.gpg"),
                python_debian::probe(),
            ]
        );
        let write = next
            .resume(OpResult::Batch(vec![
                stat_reply(false),
                stat_reply(true),
                stat_reply(true),
            ]))
            .unwrap();
        let Plan::Step(Op::Batch(ops), next) = write else {
            panic!()
        };
        let [Op::EnsureFile(e)] = &ops[..] else {
            panic!("{ops:?}")
        };
        assert_eq!(e.path, "/etc/apt/sources.list.d/Local-Repo.sources");
        assert_eq!(e.mode, Some(turbo_proto::FileMode::Bits(0o644)));
        let Plan::Done(out) = next
            .resume(OpResult::Batch(vec![OpResult::File(FileOutcome {
                changed: true,
                path: e.path.clone(),
                kind: FileKind::File,
                mode: 0o644,
                size: 0,
                uid: 0,
                gid: 0,
                owner: "root".into(),
                group: "root".into(),
                diff: None,
                backup_file: None,
            })]))
            .unwrap()
        else {
            panic!()
        };
        assert!(out.changed);
        assert_eq!(
            out.data["dest"],
            json!("/etc/apt/sources.list.d/Local-Repo.sources")
        );
        assert_eq!(
            out.data["key_filename"],
            json!("/etc/apt/keyrings/local.gpg")
        );
        assert!(
            out.data["repo"]
                .as_str()
                .unwrap()
                .contains("Signed-By: /etc/apt/keyrings/local.gpg\n")
        );
    }

    /// A signed_by URL is fetched on the target; the key goes to the keyrings directory
    /// (`.gpg` for a binary key) and the stanza names that file.
    #[test]
    fn a_key_url_is_fetched_and_written_beside_the_sources() {
        let ctx = PlanContext::new(Path::new("/"));
        let url = "http://127.0.0.1:1/apt-key-example-binary.gpg";
        let Plan::Step(Op::Batch(ops), next) = crate::modules::try_plan(
            &Deb822Repository,
            json!({"name": "ansible-test", "uris": "https://mirror.example.org", "suites": "stable", "signed_by": url}),
            &ctx,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(ops.len(), 3, "no stat of a URL: {ops:?}");
        assert!(matches!(&ops[2], Op::Exec(x) if format!("{:?}", x.command).contains(url)));
        let fetched = OpResult::Exec(turbo_proto::ExecOutcome {
            ran: true,
            rc: 0,
            stdout: b"mQENBF4=\n".to_vec(),
            stderr: Vec::new(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        });
        let Plan::Step(Op::Batch(writes), _) = next
            .resume(OpResult::Batch(vec![
                stat_reply(false),
                stat_reply(true),
                fetched.clone(),
            ]))
            .unwrap()
        else {
            panic!()
        };
        assert!(matches!(&writes[0], Op::EnsurePath(p) if p.path == "/etc/apt/keyrings"));
        let Op::EnsureFile(key) = &writes[1] else {
            panic!()
        };
        assert_eq!(key.path, "/etc/apt/keyrings/ansible-test.gpg");
        let Op::EnsureFile(sources) = &writes[2] else {
            panic!()
        };
        let FileContent::Inline(text) = &sources.content else {
            panic!()
        };
        assert!(
            String::from_utf8_lossy(text)
                .contains("Signed-By: /etc/apt/keyrings/ansible-test.gpg\n")
        );

        // In check mode the key is fetched all the same, and the writes are looks.
        let check = PlanContext {
            check_mode: true,
            ..PlanContext::new(Path::new("/"))
        };
        let Plan::Step(Op::Batch(ops), next) = crate::modules::try_plan(
            &Deb822Repository,
            json!({"name": "ansible-test", "uris": "https://mirror.example.org", "suites": "stable", "signed_by": url}),
            &check,
        )
        .unwrap() else {
            panic!()
        };
        assert!(matches!(&ops[2], Op::Exec(_)));
        let Plan::Step(Op::Batch(looks), next) = next
            .resume(OpResult::Batch(vec![
                stat_reply(false),
                stat_reply(true),
                fetched.clone(),
            ]))
            .unwrap()
        else {
            panic!()
        };
        assert!(
            looks.iter().all(|op| matches!(op, Op::Stat { .. })),
            "{looks:?}"
        );
        let Plan::Done(out) = next
            .resume(OpResult::Batch(vec![stat_reply(false); 3]))
            .unwrap()
        else {
            panic!()
        };
        assert!(out.changed && !out.failed);
    }

    /// An inline key is no file: `key_filename` stays null (the library's look is no key's).
    #[test]
    fn an_inline_key_has_no_key_filename() {
        let ctx = PlanContext::new(Path::new("/"));
        let Plan::Step(Op::Batch(ops), next) = crate::modules::try_plan(
            &Deb822Repository,
            json!({"name": "k", "signed_by": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nx\n-----END PGP PUBLIC KEY BLOCK-----"}),
            &ctx,
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!(ops.len(), 2);
        let Plan::Step(_, next) = next
            .resume(OpResult::Batch(vec![stat_reply(false), stat_reply(true)]))
            .unwrap()
        else {
            panic!()
        };
        let file = OpResult::File(FileOutcome {
            changed: true,
            path: "/etc/apt/sources.list.d/k.sources".into(),
            kind: FileKind::File,
            mode: 0o644,
            size: 0,
            uid: 0,
            gid: 0,
            owner: "root".into(),
            group: "root".into(),
            diff: None,
            backup_file: None,
        });
        let Plan::Done(out) = next.resume(OpResult::Batch(vec![file])).unwrap() else {
            panic!()
        };
        assert_eq!(out.data["key_filename"], Value::Null);
    }

    #[test]
    fn absent_removes_the_file_and_its_keys() {
        let ctx = PlanContext::new(Path::new("/"));
        let Plan::Step(_, next) = crate::modules::try_plan(
            &Deb822Repository,
            json!({"name": "local", "state": "absent"}),
            &ctx,
        )
        .unwrap() else {
            panic!()
        };
        let Plan::Step(Op::Batch(ops), _) = next
            .resume(OpResult::Batch(vec![stat_reply(true), stat_reply(true)]))
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(ops.len(), 3);
        assert!(
            matches!(&ops[0], Op::EnsurePath(p) if p.path == "/etc/apt/sources.list.d/local.sources")
        );
        // Without python3-debian the module stops first, whatever the state, as Ansible's.
        let Plan::Step(_, next) = crate::modules::try_plan(
            &Deb822Repository,
            json!({"name": "local", "state": "absent"}),
            &ctx,
        )
        .unwrap() else {
            panic!()
        };
        let Plan::Done(out) = next
            .resume(OpResult::Batch(vec![stat_reply(true), stat_reply(false)]))
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            out.msg.as_deref(),
            Some("python3-debian is not installed, and install_python_debian is False")
        );
        assert_eq!(
            crate::modules::try_plan(
                &Deb822Repository,
                json!({"types": ["rpm"], "name": "x"}),
                &ctx
            )
            .unwrap_err(),
            "value of types must be one or more of: deb, deb-src. Got no match for: rpm"
        );
    }
}
