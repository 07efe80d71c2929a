//! `deb822_repository`: an APT source as a deb822 stanza in
//! `/etc/apt/sources.list.d/<name>.sources`, written as ansible-core 2.21 writes it (its
//! fields in the order of their option names, `python-debian`'s `Deb822.dump()` layout).
//! Unlike Ansible, nothing needs `python3-debian` on the target: the stanza is made here.

use serde_json::{Value, json};
use turbo_proto::{EnsureFile, EnsurePath, FileContent, FileKind, Op, OpResult, PathState};

use super::spec::{Arg, Elem, Spec};
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
    Arg::bool("install_python_debian")
        .default_bool(false)
        .no_effect("turbo-play writes the stanza itself and needs no python3-debian"),
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
pub(crate) fn render(args: &Args) -> String {
    let mut out = String::new();
    for option in FIELDS {
        let Some(value) = args.raw(option).and_then(field_value) else {
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

    fn plan(&self, args: &Args, _ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let name = args.str("name").unwrap_or_default().to_string();
        let legacy = legacy_slug(&name);
        let signed_by = args.str("signed_by").map(str::to_string);
        if let Some(key) = &signed_by
            && is_url(key)
        {
            return Err(ModuleError::Invalid(
                "deb822_repository: a signed_by URL (a key to download) is not supported yet; download the key with get_url and give its path".into(),
            ));
        }
        let mode = parse_mode(args.raw("mode").unwrap_or(&Value::Null))?;
        let absent = args.str("state") == Some("absent");
        let repo = render(args);
        let mut ops = vec![stat(&sources_file(&legacy))];
        if let Some(key) = signed_by.as_ref().filter(|k| !k.contains('\n')) {
            ops.push(stat(key));
        }
        Ok(Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| {
                let results = match reply {
                    OpResult::Batch(results) => results,
                    other => return Ok(Plan::Done(super::unexpected("deb822_repository", other))),
                };
                let slug = if exists(results.first()).0 {
                    legacy
                } else {
                    name.replace(' ', "-")
                };
                let dest = sources_file(&slug);
                if absent {
                    return Ok(remove(dest, slug));
                }
                // A signed_by naming a file is that file; anything else is the key itself.
                let key_filename = match (&signed_by, exists(results.get(1)).1) {
                    (Some(path), true) => json!(path),
                    _ => Value::Null,
                };
                let op = Op::EnsureFile(EnsureFile {
                    path: dest.clone(),
                    content: FileContent::Inline(repo.clone().into_bytes()),
                    mode,
                    force: true,
                    owner: Default::default(),
                    validate: None,
                    backup: false,
                });
                Ok(Plan::Step(
                    op,
                    Next::new(move |reply| {
                        let OpResult::File(f) = reply else {
                            return Ok(Plan::Done(super::unexpected("deb822_repository", reply)));
                        };
                        let mut out = TaskOutcome {
                            changed: f.changed,
                            ..TaskOutcome::default()
                        };
                        out.data.insert("repo".into(), json!(repo));
                        out.data.insert("dest".into(), json!(dest));
                        out.data.insert("key_filename".into(), key_filename);
                        Ok(Plan::Done(out))
                    }),
                ))
            }),
        ))
    }
}

/// `state: absent`: the sources file and the key files Ansible would have written.
fn remove(dest: String, slug: String) -> Plan {
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
    Plan::Step(
        Op::Batch(ops),
        Next::new(move |reply| {
            let OpResult::Batch(results) = reply else {
                return Ok(Plan::Done(super::unexpected("deb822_repository", reply)));
            };
            if let Some(OpResult::Error(e)) =
                results.iter().find(|r| matches!(r, OpResult::Error(_)))
            {
                return Ok(Plan::Done(TaskOutcome::failed(e.message.clone())));
            }
            let changed = results
                .iter()
                .any(|r| matches!(r, OpResult::File(f) if f.changed));
            let mut out = TaskOutcome {
                changed,
                ..TaskOutcome::default()
            };
            out.data.insert("repo".into(), Value::Null);
            out.data.insert("dest".into(), json!(dest));
            // Ansible reports the last key file it looked for.
            out.data.insert("key_filename".into(), json!(key_gpg));
            Ok(Plan::Done(out))
        }),
    )
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
            render(&a),
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
                stat("/etc/apt/keyrings/local.gpg")
            ]
        );
        let write = next
            .resume(OpResult::Batch(vec![stat_reply(false), stat_reply(true)]))
            .unwrap();
        let Plan::Step(Op::EnsureFile(e), next) = write else {
            panic!()
        };
        assert_eq!(e.path, "/etc/apt/sources.list.d/Local-Repo.sources");
        assert_eq!(e.mode, Some(turbo_proto::FileMode::Bits(0o644)));
        let Plan::Done(out) = next
            .resume(OpResult::File(FileOutcome {
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
            }))
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
            .resume(OpResult::Batch(vec![stat_reply(true)]))
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(ops.len(), 3);
        assert!(
            matches!(&ops[0], Op::EnsurePath(p) if p.path == "/etc/apt/sources.list.d/local.sources")
        );
        let err = crate::modules::try_plan(
            &Deb822Repository,
            json!({"name": "x", "signed_by": "https://example.invalid/k.asc"}),
            &ctx,
        )
        .unwrap_err();
        assert!(err.contains("not supported yet"), "{err}");
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
