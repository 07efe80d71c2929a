//! A URL fetched on the target, as Ansible's modules fetch one there (`fetch_file`,
//! `fetch_url`: the apt module's `deb: https://...`, deb822_repository's key): the target's
//! own Python (which Ansible needs anyway) with its standard library, so the agent stays
//! free of HTTP and TLS. It says it is `ansible-httpget`, as Ansible's requests do. Failures read as Ansible's `info['msg']`: "HTTP Error 404: Not
//! Found", "Request failed: <urlopen error ...>".

use turbo_proto::{Command, Exec, Op, OpResult};

use super::{Next, Plan, PlanContext};

/// Fetches argv[1]. With argv[2] `file`, into a new private directory, keeping the URL's
/// file name (dpkg shows it), and prints the path; with `bytes`, prints the body
/// base64-encoded. Exit 1 with Ansible's words for a failure.
const SCRIPT: &str = r#"
import base64, os, sys, tempfile, urllib.error, urllib.parse, urllib.request
url, how = sys.argv[1], sys.argv[2]
try:
    request = urllib.request.Request(url, headers={"User-Agent": "ansible-httpget"})
    body = urllib.request.urlopen(request, timeout=10).read()
except urllib.error.HTTPError as e:
    print("HTTP Error %d: %s" % (e.code, e.reason)); sys.exit(1)
except Exception as e:
    print("Request failed: %s" % e); sys.exit(1)
if how == "bytes":
    print(base64.b64encode(body).decode())
else:
    name = os.path.basename(urllib.parse.urlsplit(url).path) or "download"
    path = os.path.join(tempfile.mkdtemp(prefix="turbo-play-download-"), name)
    with open(path, "wb") as f:
        f.write(body)
    print(path)
"#;

/// The interpreter a module would run with: `ansible_python_interpreter`, unless it asks
/// for discovery, else `python3` from PATH.
pub(super) fn interpreter(ctx: &PlanContext) -> String {
    let set = ctx
        .vars
        .and_then(|vars| vars.get_attr("ansible_python_interpreter").ok())
        .and_then(|v| v.as_str().map(str::to_string))
        .filter(|p| !p.is_empty() && !p.starts_with("auto"));
    set.unwrap_or_else(|| "python3".to_string())
}

fn fetch(interpreter: &str, url: &str, how: &str) -> Op {
    Op::Exec(Exec::plain(Command::Argv(vec![
        interpreter.to_string(),
        "-c".into(),
        SCRIPT.into(),
        url.into(),
        how.into(),
    ])))
}

/// The op that downloads `url` into a file of its own on the target.
pub(super) fn to_file(interpreter: &str, url: &str) -> Op {
    fetch(interpreter, url, "file")
}

/// The op that reads `url`'s body back to the controller.
pub(super) fn to_bytes(interpreter: &str, url: &str) -> Op {
    fetch(interpreter, url, "bytes")
}

/// The downloaded file's path, or Ansible's message for the failure.
pub(super) fn file_path(url: &str, reply: &OpResult) -> Result<String, String> {
    text(url, reply).map(|out| out.trim().to_string())
}

/// The body, or Ansible's message for the failure.
pub(super) fn body(url: &str, reply: &OpResult) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let out = text(url, reply)?;
    base64::engine::general_purpose::STANDARD
        .decode(out.trim())
        .map_err(|e| format!("Failure downloading {url}, {e}"))
}

/// The op that removes what [`to_file`] made (its directory with it).
pub(super) fn clean_up(path: &str) -> Op {
    let dir = std::path::Path::new(path)
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| path.to_string());
    Op::Exec(Exec::plain(Command::Argv(vec![
        "rm".into(),
        "-rf".into(),
        "--".into(),
        dir,
    ])))
}

/// `plan`, then [`clean_up`] of the downloaded `path` before its outcome is given.
pub(super) fn removing_after(plan: Plan, path: String) -> Plan {
    match plan {
        Plan::Done(outcome) => {
            Plan::Step(clean_up(&path), Next::new(move |_| Ok(Plan::Done(outcome))))
        }
        Plan::Step(op, next) => Plan::Step(
            op,
            next.and_then(move |plan| Ok(removing_after(plan, path))),
        ),
        Plan::Flow(flow) => Plan::Flow(super::flow::and_then(flow, move |plan| {
            Ok(removing_after(plan, path))
        })),
        // A reply its module finishes: no later step could remove the file.
        Plan::Remote(op) => Plan::Remote(op),
    }
}

fn text(url: &str, reply: &OpResult) -> Result<String, String> {
    match reply {
        OpResult::Exec(x) if x.rc == 0 => Ok(String::from_utf8_lossy(&x.stdout).into_owned()),
        OpResult::Exec(x) => {
            let said = String::from_utf8_lossy(&x.stdout).trim().to_string();
            let said = if said.is_empty() {
                String::from_utf8_lossy(&x.stderr).trim().to_string()
            } else {
                said
            };
            Err(format!("Failure downloading {url}, {said}"))
        }
        OpResult::Error(e) => Err(format!("Failure downloading {url}, {}", e.message)),
        other => Err(format!(
            "Failure downloading {url}, unexpected reply {other:?}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use turbo_proto::ExecOutcome;

    fn ran(rc: i32, stdout: &str) -> OpResult {
        OpResult::Exec(ExecOutcome {
            ran: true,
            rc,
            stdout: stdout.into(),
            stderr: Vec::new(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        })
    }

    #[test]
    fn replies_become_paths_bodies_and_ansibles_failures() {
        let url = "https://example.invalid/x.deb";
        assert_eq!(
            file_path(url, &ran(0, "/tmp/turbo-play-download-a/x.deb\n")),
            Ok("/tmp/turbo-play-download-a/x.deb".to_string())
        );
        assert_eq!(body(url, &ran(0, "aGk=\n")), Ok(b"hi".to_vec()));
        assert_eq!(
            file_path(url, &ran(1, "HTTP Error 404: Not Found\n")),
            Err(
                "Failure downloading https://example.invalid/x.deb, HTTP Error 404: Not Found"
                    .into()
            )
        );
        let Op::Exec(x) = clean_up("/tmp/turbo-play-download-a/x.deb") else {
            panic!()
        };
        assert_eq!(
            x.command,
            Command::Argv(
                ["rm", "-rf", "--", "/tmp/turbo-play-download-a"]
                    .map(String::from)
                    .to_vec()
            )
        );
    }

    /// The script itself, run by this machine's python3 against a file URL and a
    /// missing one.
    #[test]
    fn the_script_fetches_and_fails_as_ansible_words_it() {
        let Ok(python) = which_python() else {
            eprintln!("skipped: no python3");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("k.gpg");
        std::fs::write(&src, b"key").unwrap();
        let run = |url: &str, how: &str| {
            std::process::Command::new(&python)
                .args(["-c", SCRIPT, url, how])
                .output()
                .unwrap()
        };
        let got = run(&format!("file://{}", src.display()), "bytes");
        assert!(got.status.success());
        assert_eq!(String::from_utf8_lossy(&got.stdout).trim(), "a2V5");
        let got = run(&format!("file://{}", src.display()), "file");
        let path = String::from_utf8_lossy(&got.stdout).trim().to_string();
        assert!(path.ends_with("/k.gpg"), "{path}");
        assert_eq!(std::fs::read(&path).unwrap(), b"key");
        std::fs::remove_dir_all(std::path::Path::new(&path).parent().unwrap()).unwrap();
        let got = run(&format!("file://{}/missing", dir.path().display()), "file");
        assert_eq!(got.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&got.stdout).starts_with("Request failed: <urlopen error"));
    }

    fn which_python() -> Result<String, ()> {
        ["/usr/bin/python3", "/usr/local/bin/python3"]
            .iter()
            .find(|p| std::path::Path::new(p).is_file())
            .map(|p| p.to_string())
            .ok_or(())
    }
}
