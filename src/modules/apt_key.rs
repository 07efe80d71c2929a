//! `apt_key`: an OpenPGP key in apt's keyring through `apt-key`, as ansible-core 2.21 does
//! it (Debian 12 still ships the deprecated `apt-key` in the apt package): the key's id
//! read with `gpg --with-colons` when not given, the keyring listed before and after, the
//! key added (`apt-key add`) or deleted (`apt-key del`) only when the listing says so.
//! Listing runs in check mode too, so the module does its own check mode.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use turbo_proto::{Command, Exec, ExecOutcome, Op, OpResult};

use super::spec::{Arg, Spec};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome};

pub struct AptKey;

static SPEC: Spec = Spec::new(&[
    Arg::str("data"),
    Arg::path("file"),
    Arg::str("id"),
    Arg::path("keyring"),
    Arg::str("keyserver"),
    Arg::str("state")
        .default_str("present")
        .choices(&["absent", "present"]),
    Arg::str("url"),
    Arg::bool("validate_certs").default_bool(true),
])
.mutually_exclusive(&[&["data", "file", "keyserver", "url"]]);

const ERROR_NO_ERROR: &str =
    "apt-key did not return an error, but {} (check that the id is correct and *not* a subkey)";

#[derive(Debug)]
struct Request {
    id: Option<String>,
    data: Option<String>,
    file: Option<String>,
    keyring: Option<String>,
    keyserver: Option<String>,
    url: Option<String>,
    present: bool,
    check: bool,
}

impl Module for AptKey {
    fn name(&self) -> &'static str {
        "apt_key"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let text = |name: &str| args.str(name).filter(|s| !s.is_empty()).map(str::to_string);
        let request = Request {
            id: text("id"),
            data: text("data"),
            file: text("file"),
            keyring: text("keyring"),
            keyserver: text("keyserver"),
            url: text("url"),
            present: args.str("state") != Some("absent"),
            check: ctx.check_mode,
        };
        if request.keyserver.is_some() && request.id.is_some() {
            return Err(ModuleError::Invalid(
                "apt_key: keyserver (fetching the key from a key server) is not supported yet; give the key with data or file".into(),
            ));
        }
        if request.url.is_some() {
            return Err(ModuleError::Invalid(
                "apt_key: url (downloading the key on the target) is not supported yet; fetch it with get_url, or give it with data or file".into(),
            ));
        }
        Ok(find_binaries(Arc::new(request)))
    }
}

fn exec(argv: Vec<String>, stdin: Option<Vec<u8>>) -> Exec {
    let mut env = Vec::new();
    for key in ["LANG", "LC_ALL", "LC_MESSAGES", "LANGUAGE"] {
        env.push((key.to_string(), "C.UTF-8".to_string()));
    }
    Exec {
        command: Command::Argv(argv),
        chdir: None,
        creates: None,
        removes: None,
        env,
        stdin,
        umask: None,
    }
}

fn failed(msg: impl Into<String>) -> Result<Plan, ModuleError> {
    Ok(Plan::Done(TaskOutcome::failed(msg)))
}

fn exec_reply(reply: OpResult) -> Result<ExecOutcome, String> {
    match reply {
        OpResult::Exec(x) => Ok(x),
        OpResult::Error(e) => Err(e.message),
        other => Err(format!(
            "internal error: apt_key got an unexpected reply from the agent: {other:?}"
        )),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A failure with the command's output, as Ansible's `fail_json(cmd=, rc=, ...)`.
fn failed_with(msg: String, cmd: &str, x: &ExecOutcome, r: &Map<String, Value>) -> Plan {
    let mut out = TaskOutcome::failed(msg);
    out.data = r.clone();
    out.data.insert("cmd".into(), json!(cmd));
    out.data.insert("rc".into(), json!(x.rc));
    out.data.insert("stdout".into(), json!(text(&x.stdout)));
    out.data.insert("stderr".into(), json!(text(&x.stderr)));
    Plan::Done(out)
}

/// `find_needed_binaries`: apt-key and gpg on the target's PATH.
fn find_binaries(request: Arc<Request>) -> Plan {
    let probe = exec(
        vec![
            "sh".into(),
            "-c".into(),
            "command -v apt-key || echo missing; command -v gpg || echo missing".into(),
        ],
        None,
    );
    Plan::Step(
        Op::Exec(probe),
        Next::new(move |reply| {
            let x = match exec_reply(reply) {
                Ok(x) => x,
                Err(e) => return failed(e),
            };
            let out = text(&x.stdout);
            let mut lines = out.lines();
            if lines.next().is_none_or(|l| !l.starts_with('/')) {
                return failed(
                    "Failed to find required executable \"apt-key\". Apt-key has been deprecated. See the deb822_repository as an alternative.",
                );
            }
            if lines.next().is_none_or(|l| !l.starts_with('/')) {
                return failed("Failed to find required executable \"gpg\"");
            }
            key_id(request)
        }),
    )
}

/// The id: given, or the first key `gpg --with-colons` finds in the file or data.
fn key_id(request: Arc<Request>) -> Result<Plan, ModuleError> {
    if let Some(id) = request.id.clone() {
        return with_id(request, Some(id));
    }
    if request.keyserver.is_some() {
        return failed("Missing key_id, required with keyserver.");
    }
    let (target, stdin, what) = match (&request.file, &request.data) {
        (Some(file), _) => (file.clone(), None, file.clone()),
        (None, Some(data)) => (
            "-".to_string(),
            Some(data.clone().into_bytes()),
            "inline data".to_string(),
        ),
        (None, None) => return with_id(request, None),
    };
    let gpg = exec(vec!["gpg".into(), "--with-colons".into(), target], stdin);
    Ok(Plan::Step(
        Op::Exec(gpg),
        Next::new(move |reply| {
            let x = match exec_reply(reply) {
                Ok(x) => x,
                Err(e) => return failed(e),
            };
            if x.rc != 0 {
                let mut out = TaskOutcome::failed(format!("Unable to extract key from '{what}'"));
                out.data.insert("stdout".into(), json!(text(&x.stdout)));
                out.data.insert("stderr".into(), json!(text(&x.stderr)));
                return Ok(Plan::Done(out));
            }
            let id = parse_output_for_keys(&text(&x.stdout)).into_iter().next();
            with_id(request, id)
        }),
    ))
}

/// Ansible's `parse_output_for_keys`: the ids of the `pub`/`sub` lines not expired, from
/// `pub   rsa4096/ABCD... date` or from a colon listing's fifth field.
fn parse_output_for_keys(output: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in output.split('\n') {
        if !(line.starts_with("pub") || line.starts_with("sub")) || line.contains("expired") {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let by_slash = tokens.get(1).and_then(|code| {
            let parts: Vec<&str> = code.split('/').collect();
            (parts.len() == 2).then(|| parts[1].to_string())
        });
        match by_slash.or_else(|| line.split(':').nth(4).map(str::to_string)) {
            Some(code) => found.push(code),
            None => continue,
        }
    }
    found
}

/// `parse_key_id`: (short id for `del`, fingerprint for comparison, the whole id).
fn parse_key_id(id: &str) -> Result<(String, String, String), ()> {
    let upper = id.to_uppercase();
    // Python's int(x, 16): an optional 0x, hex digits, `_` between digits.
    let digits = upper.trim().strip_prefix("0X").unwrap_or(upper.trim());
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit() || c == '_') {
        return Err(());
    }
    let key = upper.strip_prefix("0X").unwrap_or(&upper).to_string();
    let len = key.len();
    if len != 8 && len != 16 && len <= 16 {
        return Err(());
    }
    let short = key[len.saturating_sub(8)..].to_string();
    let fingerprint = if len > 16 {
        key[len - 16..].to_string()
    } else {
        key.clone()
    };
    Ok((short, fingerprint, key))
}

fn apt_key(keyring: Option<&str>, rest: &[&str]) -> Vec<String> {
    let mut argv = vec!["apt-key".to_string()];
    if let Some(k) = keyring {
        argv.push("--keyring".into());
        argv.push(k.into());
    }
    argv.extend(rest.iter().map(|s| s.to_string()));
    argv
}

fn list_keys(keyring: Option<&str>) -> Vec<String> {
    apt_key(
        keyring,
        &["adv", "--list-public-keys", "--keyid-format=long"],
    )
}

/// The keyring's ids from `apt-key adv --list-public-keys`, or the failed task.
fn listed(reply: OpResult, keyring: Option<&str>, short: bool) -> Result<Vec<String>, Box<Plan>> {
    let x = exec_reply(reply).map_err(|e| Box::new(Plan::Done(TaskOutcome::failed(e))))?;
    if x.rc != 0 {
        return Err(Box::new(failed_with(
            "Unable to list public keys".into(),
            &list_keys(keyring).join(" "),
            &x,
            &Map::new(),
        )));
    }
    let keys = parse_output_for_keys(&text(&x.stdout));
    Ok(if short {
        keys.iter()
            .map(|k| k[k.len().saturating_sub(8)..].to_string())
            .collect()
    } else {
        keys
    })
}

fn with_id(request: Arc<Request>, id: Option<String>) -> Result<Plan, ModuleError> {
    let mut r = Map::new();
    r.insert("changed".into(), json!(false));
    r.insert("id".into(), json!(id));
    let Some((short, fingerprint, key_id)) = id.as_deref().and_then(|i| parse_key_id(i).ok())
    else {
        let mut out = TaskOutcome::failed("Invalid key_id");
        r.remove("changed");
        out.data = r;
        return Ok(Plan::Done(out));
    };
    r.insert("short_id".into(), json!(short));
    r.insert("fp".into(), json!(fingerprint));
    r.insert("key_id".into(), json!(key_id));
    let short_format = key_id.len() == 8;
    let keyring = request.keyring.clone();
    Ok(Plan::Step(
        Op::Exec(exec(list_keys(keyring.as_deref()), None)),
        Next::new(move |reply| {
            let keys = match listed(reply, keyring.as_deref(), short_format) {
                Ok(k) => k,
                Err(plan) => return Ok(*plan),
            };
            r.insert("before".into(), json!(keys));
            let wanted = if short_format {
                short.clone()
            } else {
                fingerprint.clone()
            };
            let has = move |keys: &[String]| keys.contains(&wanted);
            if request.present {
                if has(&keys) {
                    return done(r, false);
                }
                if request.check {
                    return done(r, true);
                }
                let (argv, stdin, msg) = match (&request.file, &request.data) {
                    (Some(file), _) => (
                        apt_key(keyring.as_deref(), &["add", file]),
                        None,
                        format!("Unable to add a key from file {file}"),
                    ),
                    (None, Some(data)) => (
                        apt_key(keyring.as_deref(), &["add", "-"]),
                        Some(data.clone().into_bytes()),
                        "Unable to add a key from binary data".to_string(),
                    ),
                    _ => {
                        let mut out =
                            TaskOutcome::failed("No key to add ... how did i get here?!?!");
                        out.data = r;
                        return Ok(Plan::Done(out));
                    }
                };
                change(
                    request,
                    r,
                    argv,
                    stdin,
                    msg,
                    "failed to add the key",
                    move |keys| has(keys),
                )
            } else {
                let fingerprint = fingerprint.clone();
                let has = move |keys: &[String]| keys.contains(&fingerprint);
                if !has(&keys) {
                    return done(r, false);
                }
                if request.check {
                    return done(r, true);
                }
                let argv = apt_key(keyring.as_deref(), &["del", &short]);
                let msg = format!("Unable to remove a key with id {short}");
                change(
                    request,
                    r,
                    argv,
                    None,
                    msg,
                    "the key was not removed",
                    move |keys| !has(keys),
                )
            }
        }),
    ))
}

fn done(mut r: Map<String, Value>, changed: bool) -> Result<Plan, ModuleError> {
    r.remove("changed");
    Ok(Plan::Done(TaskOutcome {
        changed,
        data: r,
        ..TaskOutcome::default()
    }))
}

/// Runs the add or del, lists again, and checks the listing now says what was asked.
fn change(
    request: Arc<Request>,
    mut r: Map<String, Value>,
    argv: Vec<String>,
    stdin: Option<Vec<u8>>,
    msg: String,
    not_done: &'static str,
    succeeded: impl Fn(&[String]) -> bool + Send + Sync + 'static,
) -> Result<Plan, ModuleError> {
    let cmd = argv.join(" ");
    let keyring = request.keyring.clone();
    let short_format = r["key_id"].as_str().is_some_and(|k| k.len() == 8);
    Ok(Plan::Step(
        Op::Batch(vec![
            Op::Exec(exec(argv, stdin)),
            Op::Exec(exec(list_keys(keyring.as_deref()), None)),
        ]),
        Next::new(move |reply| {
            let OpResult::Batch(mut results) = reply else {
                return Ok(Plan::Done(super::unexpected("apt_key", reply)));
            };
            let (Some(list), Some(run)) = (results.pop(), results.pop()) else {
                return failed("internal error: apt_key: a reply is missing");
            };
            let x = match exec_reply(run) {
                Ok(x) => x,
                Err(e) => return failed(e),
            };
            if x.rc != 0 {
                let mut data = Map::new();
                if r.contains_key("key_id") && msg.starts_with("Unable to remove") {
                    data.insert("key_id".into(), r["short_id"].clone());
                }
                if let Some(file) = request.file.as_ref().filter(|_| msg.contains("from file")) {
                    data.insert("keyfile".into(), json!(file));
                }
                return Ok(failed_with(msg, &cmd, &x, &data));
            }
            let keys = match listed(list, keyring.as_deref(), short_format) {
                Ok(k) => k,
                Err(plan) => return Ok(*plan),
            };
            r.insert("after".into(), json!(keys));
            if !succeeded(&keys) {
                let mut out = TaskOutcome::failed(ERROR_NO_ERROR.replace("{}", not_done));
                r.insert("changed".into(), json!(true));
                out.data = r;
                return Ok(Plan::Done(out));
            }
            done(r, true)
        }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(args: Value, check: bool) -> Result<Plan, String> {
        let mut ctx = PlanContext::new(Path::new("/"));
        ctx.check_mode = check;
        crate::modules::try_plan(&AptKey, args, &ctx)
    }

    fn ran(stdout: &str) -> OpResult {
        OpResult::Exec(ExecOutcome {
            rc: 0,
            stdout: stdout.as_bytes().to_vec(),
            stderr: Vec::new(),
            ran: true,
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        })
    }

    const LISTING: &str = "/etc/apt/trusted.gpg\n--------------------\npub   rsa3072/0123456789ABCDEF 2024-01-01 [SC]\n      FFFF0123456789ABCDEF\nuid  x\nsub   rsa3072/1111222233334444 2024-01-01 [E]\n";

    #[test]
    fn parses_ids_and_listings_as_ansible() {
        assert_eq!(
            parse_key_id("0x0123456789abcdef").unwrap(),
            (
                "89ABCDEF".into(),
                "0123456789ABCDEF".into(),
                "0123456789ABCDEF".into()
            )
        );
        assert!(parse_key_id("12345").is_err() && parse_key_id("xyz12345").is_err());
        assert_eq!(
            parse_output_for_keys(LISTING),
            ["0123456789ABCDEF", "1111222233334444"]
        );
        assert_eq!(
            parse_output_for_keys("pub:-:3072:1:0123456789ABCDEF:1700000000:::-:\n"),
            ["0123456789ABCDEF"]
        );
    }

    #[test]
    fn adds_a_key_file_when_the_listing_lacks_it() {
        let p = plan(json!({"file": "/tmp/k.asc"}), false).unwrap();
        let Plan::Step(Op::Exec(_), next) = p else {
            panic!()
        };
        let Plan::Step(Op::Exec(gpg), next) = next
            .resume(ran("/usr/bin/apt-key\n/usr/bin/gpg\n"))
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            gpg.command,
            Command::Argv(vec![
                "gpg".into(),
                "--with-colons".into(),
                "/tmp/k.asc".into()
            ])
        );
        let Plan::Step(Op::Exec(list), next) = next
            .resume(ran("pub:-:3072:1:AAAABBBBCCCCDDDD:1700000000:::-:\n"))
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(list.command, Command::Argv(list_keys(None)));
        let Plan::Step(Op::Batch(ops), next) = next.resume(ran(LISTING)).unwrap() else {
            panic!()
        };
        assert!(
            matches!(&ops[0], Op::Exec(x) if x.command == Command::Argv(vec!["apt-key".into(), "add".into(), "/tmp/k.asc".into()]))
        );
        let Plan::Done(out) = next
            .resume(OpResult::Batch(vec![
                ran(""),
                ran(&format!(
                    "{LISTING}pub   rsa3072/AAAABBBBCCCCDDDD 2024-01-01 [SC]\n"
                )),
            ]))
            .unwrap()
        else {
            panic!()
        };
        assert!(out.changed && !out.failed, "{out:?}");
        assert_eq!(out.data["fp"], json!("AAAABBBBCCCCDDDD"));
        assert_eq!(out.data["short_id"], json!("CCCCDDDD"));
    }

    #[test]
    fn absent_in_check_mode_only_lists_and_unsupported_sources_fail() {
        let p = plan(json!({"id": "89ABCDEF", "state": "absent"}), true).unwrap();
        let Plan::Step(_, next) = p else { panic!() };
        let Plan::Step(Op::Exec(_), next) = next
            .resume(ran("/usr/bin/apt-key\n/usr/bin/gpg\n"))
            .unwrap()
        else {
            panic!()
        };
        let Plan::Done(out) = next.resume(ran(LISTING)).unwrap() else {
            panic!()
        };
        assert!(out.changed);
        assert!(
            plan(
                json!({"id": "89ABCDEF", "url": "https://k.invalid/k"}),
                false
            )
            .unwrap_err()
            .contains("not supported yet")
        );
        assert_eq!(
            plan(json!({"data": "x", "file": "/k"}), false).unwrap_err(),
            "parameters are mutually exclusive: data|file|keyserver|url"
        );
    }
}
