//! `rpm_key`: an OpenPGP key in rpm's database, or not. One query on the target (rpm's
//! version and the armor of every `gpg-pubkey` it holds, and the key file) decides; only
//! a change runs `rpm --import` or removes the key. Key IDs and fingerprints are computed
//! on the controller ([`pgp`]) as Ansible's module computes them.

mod pgp;
#[cfg(test)]
pub(crate) use pgp::tests::KEY as TEST_KEY;

use turbo_proto::{Command, Exec, ExecOutcome, FileKind, Op, OpResult};

use super::spec::{Arg, Elem, Spec};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};
use pgp::KeyInfo;

pub struct RpmKey;

static SPEC: Spec = Spec::new(&[
    Arg::list("fingerprint", Elem::Str),
    Arg::str("key").required(),
    Arg::str("state")
        .choices(&["absent", "present"])
        .default_str("present"),
    Arg::bool("validate_certs")
        .default_bool(true)
        .no_effect("keys are only read from files on the target here"),
]);

/// What the target has: its rpm tools (or which is missing, and PATH as Ansible searched
/// it), rpm's version, then the `gpg-pubkey` descriptions.
const QUERY: &str = r#"for tool in rpm rpmkeys; do
  command -v "$tool" >/dev/null 2>&1 && continue
  paths=$PATH
  for d in /sbin /usr/sbin /usr/local/sbin; do
    case ":$paths:" in *":$d:"*) ;; *) [ -e "$d" ] && paths="$paths:$d" ;; esac
  done
  printf 'missing\t%s\t%s\n' "$tool" "$paths"
  exit 0
done
rpm --version
rpm -q gpg-pubkey >/dev/null 2>&1 || exit 0
rpm -q gpg-pubkey --qf '%{description}\n'
"#;

impl Module for RpmKey {
    fn name(&self) -> &'static str {
        "rpm_key"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    /// The query runs in check mode too; only the import or removal is left out.
    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let key = args.str("key").unwrap_or_default().to_string();
        if key.contains("://") {
            return Err(ModuleError::NotSupported("rpm_key with a key from a URL"));
        }
        let keyid = is_keyid(&key).then(|| normalize(&key));
        let mut ops = vec![exec(Command::Shell {
            script: QUERY.into(),
            executable: None,
        })];
        if keyid.is_none() {
            ops.push(Op::ReadFile {
                path: key.clone(),
                offset: 0,
                limit: None,
            });
        }
        let want = Want {
            key,
            keyid,
            present: args.str("state") != Some("absent"),
            fingerprints: args
                .str_list("fingerprint")
                .iter()
                .map(|f| f.replace(' ', "").to_uppercase())
                .collect(),
            check: ctx.check_mode,
        };
        Ok(Plan::Step(
            Op::Batch(ops),
            Next::new(move |reply| Ok(decide(want, reply))),
        ))
    }
}

struct Want {
    key: String,
    keyid: Option<String>,
    present: bool,
    fingerprints: Vec<String>,
    check: bool,
}

fn decide(want: Want, reply: OpResult) -> Plan {
    let OpResult::Batch(mut replies) = reply else {
        return Plan::Done(unexpected("rpm_key", reply));
    };
    let file = if want.keyid.is_none() {
        replies.pop()
    } else {
        None
    };
    let Some(OpResult::Exec(query)) = replies.pop() else {
        return Plan::Done(TaskOutcome::failed(
            "internal error: rpm_key's query got no answer",
        ));
    };
    let stdout = String::from_utf8_lossy(&query.stdout).into_owned();
    if let Some(line) = stdout.lines().find(|l| l.starts_with("missing\t")) {
        let mut fields = line.splitn(3, '\t').skip(1);
        let (tool, paths) = (fields.next().unwrap_or(""), fields.next().unwrap_or(""));
        return Plan::Done(TaskOutcome::failed(format!(
            "Failed to find required executable \"{tool}\" in paths: {paths}"
        )));
    }
    let rpm6 = stdout
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("RPM version "))
        .and_then(|v| v.split('.').next()?.trim().parse::<u32>().ok())
        .is_some_and(|major| major >= 6);
    let mut installed: Vec<KeyInfo> = Vec::new();
    for block in pgp::blocks(&stdout) {
        match pgp::identify(&block) {
            Ok(keys) => installed.extend(keys),
            Err(e) => return Plan::Done(TaskOutcome::failed(e)),
        }
    }
    let mut armor = None;
    let keyid = match &want.keyid {
        Some(id) => id.clone(),
        None => {
            let Some(OpResult::Read(read)) = file else {
                return Plan::Done(TaskOutcome::failed(format!("Not a valid key {}", want.key)));
            };
            if read.stat.kind != FileKind::File {
                return Plan::Done(TaskOutcome::failed(format!("Not a valid key {}", want.key)));
            }
            let text = String::from_utf8_lossy(&read.data).into_owned();
            let keys = match pgp::identify(&text) {
                Ok(keys) if !keys.is_empty() => keys,
                Ok(_) => return Plan::Done(TaskOutcome::failed("Failed to get keyid")),
                Err(e) => return Plan::Done(TaskOutcome::failed(e)),
            };
            let id = keys[0].keyid.clone();
            armor = Some(keys);
            id
        }
    };
    let imported = is_imported(&keyid, &installed);
    let unchanged = || Plan::Done(TaskOutcome::default());
    if want.present {
        if imported {
            return unchanged();
        }
        let Some(keys) = armor else {
            return Plan::Done(TaskOutcome::failed(
                "When importing a key, a valid file must be given",
            ));
        };
        let in_file: Vec<&str> = keys.iter().map(|k| k.fingerprint.as_str()).collect();
        if !want
            .fingerprints
            .iter()
            .all(|f| in_file.contains(&f.as_str()))
        {
            return Plan::Done(TaskOutcome::failed(format!(
                "The specified fingerprint, '{}', does not match any key fingerprints in '{}'",
                python_set(
                    &want
                        .fingerprints
                        .iter()
                        .map(String::as_str)
                        .collect::<Vec<_>>()
                ),
                python_frozenset(&in_file)
            )));
        }
        return run(want.check, vec!["rpm".into(), "--import".into(), want.key]);
    }
    if !imported {
        return unchanged();
    }
    let argv = if rpm6 {
        let matching: Vec<&KeyInfo> = installed
            .iter()
            .filter(|k| k.keyid.ends_with(&keyid) || k.fingerprint == keyid)
            .collect();
        match matching[..] {
            [one] => vec!["rpmkeys".into(), "--delete".into(), one.fingerprint.clone()],
            [] => {
                return Plan::Done(TaskOutcome::failed(format!(
                    "Supplied key ID {keyid} is not installed."
                )));
            }
            _ => {
                return Plan::Done(TaskOutcome::failed(format!(
                    "Supplied key ID {keyid} matches more than one fingerprint. Try using the fingerprint instead."
                )));
            }
        }
    } else {
        let short = installed
            .iter()
            .find(|k| k.fingerprint == keyid)
            .map_or(keyid.clone(), |k| k.keyid.clone());
        let short = short[short.len().saturating_sub(8)..].to_lowercase();
        vec![
            "rpm".into(),
            "--erase".into(),
            "--allmatches".into(),
            format!("gpg-pubkey-{short}"),
        ]
    };
    run(want.check, argv)
}

/// The change itself; in check mode only reported.
fn run(check: bool, argv: Vec<String>) -> Plan {
    let changed = TaskOutcome {
        changed: true,
        ..TaskOutcome::default()
    };
    if check {
        return Plan::Done(changed);
    }
    Plan::Step(
        exec(Command::Argv(argv)),
        Next::new(move |reply| {
            Ok(Plan::Done(match reply {
                OpResult::Exec(ExecOutcome { rc: 0, .. }) => changed,
                OpResult::Exec(x) => {
                    TaskOutcome::failed(String::from_utf8_lossy(&x.stderr).into_owned())
                }
                other => unexpected("rpm_key", other),
            }))
        }),
    )
}

fn exec(command: Command) -> Op {
    Op::Exec(Exec {
        command,
        chdir: None,
        creates: None,
        removes: None,
        env: vec![("LC_ALL".into(), "C".into())],
        stdin: None,
        umask: None,
    })
}

/// Ansible's `is_keyid`: eight hex digits (after an optional 0x) at the start, spaces
/// ignored.
fn is_keyid(key: &str) -> bool {
    let key: String = key.chars().filter(|c| *c != ' ').collect();
    let digits = key
        .strip_prefix("0x")
        .or_else(|| key.strip_prefix("0X"))
        .unwrap_or(&key);
    digits.len() >= 8 && digits[..8].bytes().all(|b| b.is_ascii_hexdigit())
}

fn normalize(keyid: &str) -> String {
    let id = keyid.trim().to_uppercase();
    id.strip_prefix("0X").map(str::to_string).unwrap_or(id)
}

fn is_imported(keyid: &str, installed: &[KeyInfo]) -> bool {
    installed
        .iter()
        .any(|k| k.keyid.ends_with(keyid) || k.fingerprint == keyid)
}

fn python_set(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("'{i}'")).collect();
    format!("{{{}}}", quoted.join(", "))
}

fn python_frozenset(items: &[&str]) -> String {
    format!("frozenset({})", python_set(items))
}

#[cfg(test)]
mod tests;
