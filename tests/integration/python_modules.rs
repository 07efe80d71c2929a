//! Modules without a native planner, run through the target's Python (src/modules/python/):
//! `library/` modules of every style (new-style with AnsibleModule, a role's with its
//! module_utils, old-style, WANT_JSON, binary), collection modules (by FQCN and by short
//! name under `collections:`), ansible-core's get_url and uri against an HTTP server on
//! loopback, check and diff mode, a crash and output that is not JSON. Ansible's side is
//! recorded data: ansible-playbook 2.21.5 ran tests/python_modules/playbook/site.yml on
//! the local connection and its registered results are tests/python_modules/expected-local.json.
//!
//! The controller side (ansible-core's module_utils, community.general and ansible.posix)
//! comes from `bash tests/python_modules/fetch.sh`; without it the tests say so and pass.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::hosts::SshHosts;
use crate::support::run::{Outcome, TestRun};

pub(crate) const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python_modules");
const TARGET_PYTHON: &str = "/usr/bin/python3";

/// `(core, collections)` unpacked by fetch.sh, or why the test cannot run.
pub(crate) fn controller_side(test: &str) -> Option<(PathBuf, PathBuf)> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/python-modules");
    let core = base.join("core");
    let collections = base.join("collections");
    if !core.join("ansible/module_utils/basic.py").is_file()
        || !collections
            .join("ansible_collections/community/general")
            .is_dir()
    {
        eprintln!("{test}: skipped: run `bash tests/python_modules/fetch.sh` first");
        return None;
    }
    if !Path::new(TARGET_PYTHON).is_file() {
        eprintln!("{test}: skipped: no {TARGET_PYTHON} to run modules with");
        return None;
    }
    Some((core, collections))
}

/// Copies the fixture playbook (library/, roles/, served.txt) into the run's directory.
fn with_fixture_files(mut run: TestRun, from: &Path, under: &Path) -> TestRun {
    for entry in std::fs::read_dir(from).expect("fixture dir") {
        let path = entry.expect("entry").path();
        let relative = under.join(path.file_name().expect("name"));
        if path.is_dir() {
            run = with_fixture_files(run, &path, &relative);
        } else {
            let bytes = std::fs::read(&path).expect("fixture file");
            run = run.file_bytes(relative.to_str().expect("utf-8"), &bytes);
        }
    }
    run
}

/// The binary module, built from binmod.c with the system's C compiler.
fn build_binary(dir: &Path) -> bool {
    let out = dir.join("library/binmod");
    std::process::Command::new("cc")
        .arg("-o")
        .arg(&out)
        .arg(Path::new(FIXTURES).join("binmod.c"))
        .status()
        .is_ok_and(|s| s.success())
}

/// `python3 -m http.server` on a free loopback port, serving `dir`; killed on drop.
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl HttpServer {
    fn start(dir: &Path) -> HttpServer {
        let port = crate::support::hosts::closed_port();
        let child = std::process::Command::new(TARGET_PYTHON)
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start python3 -m http.server");
        // Owned from here on: dropping the server (a panic included) kills and reaps it.
        let server = HttpServer { child, port };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(std::time::Duration::from_millis(25));
        }
        panic!("the HTTP server on port {port} never listened");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What differs between any two runs: temp names, times, the server's Python version.
fn steady(mut results: Value) -> Value {
    for (task, keys) in [
        ("get_url", &["src", "elapsed"][..]),
        ("uri", &["date", "elapsed", "last_modified", "server"][..]),
    ] {
        if let Some(map) = results.get_mut(task).and_then(Value::as_object_mut) {
            for key in keys {
                map.remove(*key);
            }
        }
    }
    results
}

pub(crate) fn with_controller(run: TestRun, core: &Path, collections: &Path) -> TestRun {
    run.env("PYTHONPATH", core.to_str().expect("utf-8"))
        .env("TURBO_ANSIBLE_PYTHON", TARGET_PYTHON)
        .env(
            "ANSIBLE_COLLECTIONS_PATH",
            collections.to_str().expect("utf-8"),
        )
        .args(&["-e", &format!("ansible_python_interpreter={TARGET_PYTHON}")])
}

#[test]
fn library_and_collection_modules_register_what_ansible_registers() {
    let test = "library_and_collection_modules_register_what_ansible_registers";
    let Some((core, collections)) = controller_side(test) else {
        return;
    };
    let fixture = Path::new(FIXTURES).join("playbook");
    let run = with_fixture_files(TestRun::new(), &fixture, Path::new(""));
    if !build_binary(run.dir()) {
        eprintln!("{test}: skipped: no C compiler (cc) to build the binary module");
        return;
    }
    let out_dir = run.dir().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let server = HttpServer::start(run.dir());
    let site = std::fs::read_to_string(fixture.join("site.yml")).unwrap();
    let run = with_controller(run, &core, &collections)
        .playbook(&site)
        .inventory("localhost ansible_connection=local\n")
        .args(&["-e", &format!("d={}", out_dir.display())])
        .args(&["-e", &format!("port={}", server.port)]);
    let out: Outcome = run.run();
    out.assert_code(0);
    assert_eq!(
        out.recap("localhost"),
        crate::support::run::Recap {
            ok: 16,
            changed: 7,
            skipped: 1,
            ignored: 2,
            ..Default::default()
        },
        "{}",
        out.stdout
    );
    let got: Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("results.json")).unwrap()).unwrap();
    let recorded = std::fs::read_to_string(Path::new(FIXTURES).join("expected-local.json"))
        .unwrap()
        .replace("DIR", out_dir.to_str().unwrap())
        .replace("PORT", &server.port.to_string());
    let want: Value = serde_json::from_str(&recorded).unwrap();
    let (got, want) = (steady(got), steady(want));
    for (task, expected) in want.as_object().unwrap() {
        assert_eq!(&got[task], expected, "task {task}\n{}", out.stdout);
    }
    assert_eq!(
        std::fs::read_to_string(out_dir.join("hello.txt")).unwrap(),
        "hello world\n"
    );
    assert!(!out_dir.join("check.txt").exists(), "check mode wrote");
    assert_eq!(
        std::fs::read_to_string(out_dir.join("a.ini")).unwrap(),
        "\n[s]\nk = v\n",
        "check mode changed the ini file"
    );
    assert_eq!(
        std::fs::read_to_string(out_dir.join("got.txt")).unwrap(),
        "served content\n"
    );
    // Every payload crossed once and sits in the agent's cache by digest.
    let cache = run.dir().join("controller-home/.cache/turbo-play/modules");
    let payloads = std::fs::read_dir(&cache).map_or(0, |d| d.count());
    assert!(payloads >= 10, "{payloads} payloads in {}", cache.display());
}

#[test]
fn a_library_module_and_a_collection_module_run_over_ssh() {
    let test = "a_library_module_and_a_collection_module_run_over_ssh";
    let Some((core, collections)) = controller_side(test) else {
        return;
    };
    let hosts = SshHosts::start(&["h"]);
    let fixture = Path::new(FIXTURES).join("playbook/library");
    let run = with_fixture_files(TestRun::new(), &fixture, Path::new("library"));
    let playbook = "- hosts: all
  gather_facts: false
  tasks:
    - {hello: {name: world, path: ~/hello.txt}, register: hello}
    - {hello: {name: '{{ item }}'}, loop: [a, b, c], register: loop}
    - {community.general.ini_file: {path: ~/a.ini, section: s, option: k, value: v}, register: ini}
    - copy:
        dest: ~/results.json
        content: \"{{ {'hello': hello, 'loop': loop.results | map(attribute='greeting') | list, 'ini': ini.msg} | to_json }}\"
";
    let run = with_controller(run, &core, &collections)
        .playbook(playbook)
        .inventory(&hosts.inventory());
    let out = run.run();
    out.assert_code(0);
    assert_eq!(
        out.recap("h"),
        crate::support::run::Recap {
            ok: 4,
            changed: 3,
            ..Default::default()
        },
        "{}",
        out.stdout
    );
    let home = &hosts.user("h").home;
    let got: Value =
        serde_json::from_slice(&std::fs::read(home.join("results.json")).unwrap()).unwrap();
    assert_eq!(
        got,
        serde_json::json!({
            "hello": {"changed": true, "failed": false, "greeting": "hello world"},
            "loop": ["hello a", "hello b", "hello c"],
            "ini": "section and option added",
        })
    );
    assert_eq!(
        std::fs::read_to_string(home.join("hello.txt")).unwrap(),
        "hello world\n"
    );
    let cache = home.join(".cache/turbo-play/modules");
    assert_eq!(
        std::fs::read_dir(&cache).map_or(0, |d| d.count()),
        2,
        "one payload per module in {}",
        cache.display()
    );
}

/// Reports what it finds (working directory, an environment variable, the umask, a global
/// of ansible's module_utils), then changes all of it, or ends its process, or raises.
const MEDDLER: &str = r#"#!/usr/bin/python
import os
import ansible.module_utils.basic as basic
from ansible.module_utils.basic import AnsibleModule

def main():
    m = AnsibleModule(argument_spec=dict(step=dict(type='str', required=True)))
    step = m.params['step']
    umask = os.umask(0o077)
    seen = dict(cwd=os.getcwd(), leak=os.environ.get('TURBO_LEAK'), umask=umask,
                mark=getattr(basic, 'TURBO_MARK', None))
    if step == 'crash':
        os._exit(3)
    if step == 'raise':
        raise RuntimeError('boom')
    os.environ['TURBO_LEAK'] = step
    os.chdir('/')
    basic.TURBO_MARK = step
    m.exit_json(changed=False, seen=seen)

main()
"#;

#[test]
fn a_loops_items_and_later_tasks_find_the_target_as_the_first_item_did() {
    let test = "a_loops_items_and_later_tasks_find_the_target_as_the_first_item_did";
    let Some((core, collections)) = controller_side(test) else {
        return;
    };
    let hosts = SshHosts::start(&["h"]);
    let playbook = "- hosts: all
  gather_facts: false
  tasks:
    - {meddler: {step: '{{ item }}'}, loop: [a, crash, b, raise, c], register: r, ignore_errors: true}
    - {meddler: {step: d}, register: d}
    - copy:
        dest: ~/results.json
        content: \"{{ {'loop': r.results, 'd': d} | to_json }}\"
";
    let run = TestRun::new().file("library/meddler.py", MEDDLER);
    let out = with_controller(run, &core, &collections)
        .playbook(playbook)
        .inventory(&hosts.inventory())
        .run();
    out.assert_code(0);
    assert_eq!(
        out.recap("h"),
        crate::support::run::Recap {
            ok: 3,
            changed: 1,
            ignored: 1,
            ..Default::default()
        },
        "{}",
        out.stdout
    );
    let home = &hosts.user("h").home;
    let got: Value =
        serde_json::from_slice(&std::fs::read(home.join("results.json")).unwrap()).unwrap();
    let items = got["loop"].as_array().unwrap();
    let first = &items[0]["seen"];
    assert_eq!(first["cwd"], home.to_str().unwrap());
    assert_eq!(first["leak"], Value::Null);
    assert_eq!(first["mark"], Value::Null);
    for (i, step) in ["a", "crash", "b", "raise", "c"].iter().enumerate() {
        let item = &items[i];
        assert_eq!(item["item"], *step);
        match *step {
            "crash" => {
                assert_eq!(item["failed"], true, "{item}");
                assert_eq!(item["rc"], 3, "{item}");
            }
            "raise" => {
                assert_eq!(item["failed"], true, "{item}");
                assert!(item.to_string().contains("boom"), "{item}");
            }
            _ => assert_eq!(&item["seen"], first, "item {step}: {item}"),
        }
    }
    assert_eq!(&got["d"]["seen"], first, "the next task: {}", got["d"]);
}
