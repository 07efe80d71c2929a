//! The plugin host: one Python process per run (`host.py`, embedded), started the first
//! time a Python plugin is needed, never for a playbook without one. Requests and answers
//! are JSON lines over its stdin and stdout, each request with an id; a request may call
//! back (a variable, a template, a module to run on the host) before it is done, and the
//! one who asked serves those calls: the template engine inline, an action plugin's task
//! through the steps of its plan. Many requests may be open at once (hosts run their
//! tasks concurrently): the host serves each on a thread of its own, and a reader thread
//! here hands each line to whoever waits for its id.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};

use super::python::{PYTHON_HINT, controller};

const SCRIPT: &str = include_str!("host.py");

/// Why a plugin could not give its answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PluginError {
    pub kind: ErrorKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The plugin's file or class could not be loaded (an import error, a broken class).
    Load,
    /// The plugin raised while it ran.
    Runtime,
    /// The plugin reached for a piece of Ansible's controller that turbo-play lacks.
    Unsupported,
    /// A call back into turbo-play failed (the template it asked for, a variable).
    Call,
    /// The controller's Python lacks ansible-core, which the plugin needs.
    NoAnsible,
    /// No Python to run the plugin with, or the host died.
    Host,
}

impl PluginError {
    fn host(message: impl Into<String>) -> PluginError {
        PluginError {
            kind: ErrorKind::Host,
            message: message.into(),
        }
    }
}

/// What the host said of itself when it started.
#[derive(Debug, Clone, Default)]
pub struct HostInfo {
    /// `3.12.1`.
    pub python: String,
    pub executable: String,
    /// ansible-core's version, when the host's Python has it.
    pub ansible: Option<String>,
}

enum Incoming {
    Call(Call),
    Done(Value),
    Error(PluginError),
}

/// A call the host makes back while serving a request.
#[derive(Debug, Clone)]
pub struct Call {
    pub kind: String,
    pub payload: Map<String, Value>,
}

impl Call {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.payload.get(key).and_then(Value::as_str)
    }
}

/// Where a request stands: it calls back, or it is done.
#[derive(Debug)]
pub enum Step {
    Call(Call),
    Done(Value),
}

type Waiting = Arc<Mutex<HashMap<u64, Sender<Incoming>>>>;

pub struct Host {
    stdin: Mutex<ChildStdin>,
    waiting: Waiting,
    next_id: AtomicU64,
    /// Why the host is gone, once it is.
    gone: Arc<Mutex<Option<String>>>,
    pub info: HostInfo,
    _child: Mutex<Child>,
}

/// The run's host, started on first use with the collection roots it may import from and
/// the playbook's directory (plugins' relative paths); a host that could not start is
/// that failure for every plugin of the run.
pub fn host(
    collection_roots: &[std::path::PathBuf],
    playbook_dir: &std::path::Path,
) -> Result<&'static Host, PluginError> {
    HOST.get_or_init(|| Host::launch(collection_roots, playbook_dir))
        .as_ref()
        .map_err(Clone::clone)
}

static HOST: OnceLock<Result<Host, PluginError>> = OnceLock::new();

/// The run's host once started (or its failure to start), without starting it: what a
/// plugin call checks first, before it gathers what a start needs.
pub fn started() -> Option<Result<&'static Host, PluginError>> {
    HOST.get().map(|h| h.as_ref().map_err(Clone::clone))
}

impl Host {
    fn launch(
        collection_roots: &[std::path::PathBuf],
        playbook_dir: &std::path::Path,
    ) -> Result<Host, PluginError> {
        let python = controller().ok_or_else(|| {
            PluginError::host(format!(
                "Python plugins run on the controller's Python, and turbo-play found none: {PYTHON_HINT}"
            ))
        })?;
        let mut child = Command::new(&python.python)
            .arg("-c")
            .arg(SCRIPT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                PluginError::host(format!(
                    "could not start the plugin host with {}: {e}: {PYTHON_HINT}",
                    python.python.display()
                ))
            })?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let waiting: Waiting = Arc::default();
        let gone: Arc<Mutex<Option<String>>> = Arc::default();
        {
            let waiting = waiting.clone();
            let gone = gone.clone();
            std::thread::Builder::new()
                .name("plugin-host".into())
                .spawn(move || read_answers(BufReader::new(stdout), &waiting, &gone))
                .map_err(|e| PluginError::host(format!("could not start a thread: {e}")))?;
        }
        let mut host = Host {
            stdin: Mutex::new(stdin),
            waiting,
            next_id: AtomicU64::new(1),
            gone,
            info: HostInfo::default(),
            _child: Mutex::new(child),
        };
        let mut hello = Map::new();
        hello.insert(
            "collection_roots".into(),
            Value::from(
                collection_roots
                    .iter()
                    // Ansible's collection finder refuses a relative root (a playbook
                    // named by a relative path has one beside it).
                    .map(|p| {
                        std::path::absolute(p)
                            .unwrap_or_else(|_| p.clone())
                            .display()
                            .to_string()
                    })
                    .collect::<Vec<_>>(),
            ),
        );
        hello.insert(
            "playbook_dir".into(),
            Value::from(playbook_dir.display().to_string()),
        );
        let answer = host
            .open("hello", hello)
            .and_then(|conversation| conversation.finish(&mut |_| Err("no calls".into())))?;
        host.info = HostInfo {
            python: text(&answer, "python"),
            executable: text(&answer, "executable"),
            ansible: answer
                .get("ansible")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        Ok(host)
    }

    fn send(&self, message: &Value) -> Result<(), PluginError> {
        let mut line = serde_json::to_vec(message).expect("JSON values serialize");
        line.push(b'\n');
        let mut stdin = self.stdin.lock().unwrap_or_else(|p| p.into_inner());
        stdin
            .write_all(&line)
            .and_then(|()| stdin.flush())
            .map_err(|e| PluginError::host(self.why_gone(&e.to_string())))
    }

    fn why_gone(&self, fallback: &str) -> String {
        let gone = self.gone.lock().unwrap_or_else(|p| p.into_inner()).clone();
        format!(
            "the plugin host ended: {}",
            gone.unwrap_or_else(|| fallback.to_string())
        )
    }

    fn open(
        &self,
        op: &str,
        mut payload: Map<String, Value>,
    ) -> Result<Conversation<'_>, PluginError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        payload.insert("id".into(), Value::from(id));
        payload.insert("op".into(), Value::from(op));
        let conversation = Conversation {
            id,
            rx: Mutex::new(rx),
            host: self,
            open: Mutex::new(true),
        };
        self.send(&Value::Object(payload))?;
        Ok(conversation)
    }

    /// Starts request `op`; its calls and answer are read from the conversation.
    pub fn start(
        &'static self,
        op: &str,
        payload: Map<String, Value>,
    ) -> Result<Conversation<'static>, PluginError> {
        self.open(op, payload)
    }

    /// Request `op`, its calls served by `serve`, until it is done.
    pub fn call(
        &'static self,
        op: &str,
        payload: Map<String, Value>,
        serve: &mut dyn FnMut(&Call) -> Result<Value, String>,
    ) -> Result<Value, PluginError> {
        self.open(op, payload)?.finish(serve)
    }
}

fn text(answer: &Value, key: &str) -> String {
    answer
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// One request on its way: the calls it makes and, last, its answer. Dropped before its
/// answer (its task was cancelled, failed, or its plan was dropped), it tells the host the
/// request is abandoned, so the plugin's thread ends instead of waiting for ever.
pub struct Conversation<'h> {
    id: u64,
    rx: Mutex<Receiver<Incoming>>,
    host: &'h Host,
    open: Mutex<bool>,
}

impl Conversation<'_> {
    /// The request's next call, or its answer.
    pub fn next(&self) -> Result<Step, PluginError> {
        let incoming = self
            .rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .recv()
            .map_err(|_| PluginError::host(self.host.why_gone("it closed its output")))?;
        match incoming {
            Incoming::Call(call) => Ok(Step::Call(call)),
            Incoming::Done(value) => {
                self.close();
                Ok(Step::Done(value))
            }
            Incoming::Error(error) => {
                self.close();
                Err(error)
            }
        }
    }

    /// Answers the request's last call.
    pub fn reply(&self, answer: Result<Value, String>) -> Result<(), PluginError> {
        let mut message = Map::new();
        message.insert("id".into(), Value::from(self.id));
        match answer {
            Ok(value) => message.insert("reply".into(), value),
            Err(why) => message.insert("fail".into(), Value::from(why)),
        };
        self.host.send(&Value::Object(message))
    }

    /// Serves every call with `serve` until the request is done.
    pub fn finish(
        self,
        serve: &mut dyn FnMut(&Call) -> Result<Value, String>,
    ) -> Result<Value, PluginError> {
        loop {
            match self.next()? {
                Step::Done(value) => return Ok(value),
                Step::Call(call) => self.reply(serve(&call))?,
            }
        }
    }

    fn close(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = false;
        self.host
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

impl Drop for Conversation<'_> {
    fn drop(&mut self) {
        let open = std::mem::replace(
            &mut *self.open.lock().unwrap_or_else(|p| p.into_inner()),
            false,
        );
        if open {
            self.close();
            let mut abort = Map::new();
            abort.insert("id".into(), Value::from(self.id));
            abort.insert("op".into(), Value::from("abort"));
            let _ = self.host.send(&Value::Object(abort));
        }
    }
}

/// The reader thread: each line to whoever waits for its id, until the host's output
/// ends; then every waiter learns the host is gone.
fn read_answers(
    stdout: impl BufRead,
    waiting: &Mutex<HashMap<u64, Sender<Incoming>>>,
    gone: &Mutex<Option<String>>,
) {
    for line in stdout.lines() {
        let Ok(line) = line else { break };
        let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = message.get("id").and_then(Value::as_u64) else {
            continue;
        };
        let incoming = if let Some(Value::Object(call)) = message.remove("call") {
            let kind = call
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            Incoming::Call(Call {
                kind,
                payload: call,
            })
        } else if let Some(done) = message.remove("done") {
            Incoming::Done(done)
        } else if let Some(error) = message.remove("error") {
            Incoming::Error(plugin_error(&error))
        } else {
            continue;
        };
        let sender = waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .cloned();
        if let Some(sender) = sender {
            let _ = sender.send(incoming);
        }
    }
    *gone.lock().unwrap_or_else(|p| p.into_inner()) =
        Some("its output ended (see its messages above)".into());
    waiting.lock().unwrap_or_else(|p| p.into_inner()).clear();
}

fn plugin_error(error: &Value) -> PluginError {
    let kind = match error.get("kind").and_then(Value::as_str) {
        Some("load") => ErrorKind::Load,
        Some("unsupported") => ErrorKind::Unsupported,
        Some("call") => ErrorKind::Call,
        Some("no_ansible") => ErrorKind::NoAnsible,
        _ => ErrorKind::Runtime,
    };
    PluginError {
        kind,
        message: text(error, "message"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lookup that imports nothing from ansible, so that any python3 runs it.
    const LOOKUP: &str = "class LookupModule:\n    def __init__(self, **kwargs):\n        pass\n    def run(self, terms, variables=None, **kwargs):\n        if terms == ['raise']:\n            raise ValueError('asked to')\n        return [variables['x'] + term for term in terms] + ['y' in variables]\n";

    fn lookup_request(path: &std::path::Path, terms: Value) -> Map<String, Value> {
        let mut payload = Map::new();
        payload.insert("path".into(), Value::from(path.display().to_string()));
        payload.insert("import_name".into(), Value::from("turbo_test_lookup"));
        payload.insert("name".into(), Value::from("turbo_test_lookup"));
        payload.insert("terms".into(), terms);
        payload
    }

    #[test]
    fn a_request_calls_back_before_it_answers_and_errors_keep_their_kind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.py");
        std::fs::write(&path, LOOKUP).unwrap();
        let host = host(&[], dir.path()).expect("python3 runs the plugin host");
        let mut asked = Vec::new();
        let answer = host
            .call(
                "lookup",
                lookup_request(&path, serde_json::json!(["a", "b"])),
                &mut |call| {
                    asked.push((call.kind.clone(), call.str("name").map(str::to_string)));
                    match call.str("name") {
                        Some("x") => Ok(serde_json::json!({"found": true, "value": "x-"})),
                        _ => Ok(serde_json::json!({"found": false})),
                    }
                },
            )
            .unwrap();
        assert_eq!(answer["value"], serde_json::json!(["x-a", "x-b", false]));
        assert_eq!(
            asked,
            [
                ("var".to_string(), Some("x".to_string())),
                ("var".to_string(), Some("y".to_string())),
            ]
        );
        let error = host
            .call(
                "lookup",
                lookup_request(&path, serde_json::json!(["raise"])),
                &mut |_| Ok(serde_json::json!({"found": true, "value": ""})),
            )
            .unwrap_err();
        assert_eq!(error.kind, ErrorKind::Runtime);
        assert_eq!(error.message, "asked to");
    }

    #[test]
    fn a_conversation_dropped_before_its_answer_abandons_the_request() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.py");
        std::fs::write(&path, LOOKUP).unwrap();
        let host = host(&[], dir.path()).expect("python3 runs the plugin host");
        let conversation = host
            .start("lookup", lookup_request(&path, serde_json::json!(["a"])))
            .unwrap();
        match conversation.next().unwrap() {
            Step::Call(call) => assert_eq!(call.kind, "var"),
            Step::Done(v) => panic!("answered without asking: {v}"),
        }
        drop(conversation);
        // The host goes on serving others.
        let answer = host
            .call(
                "lookup",
                lookup_request(&path, serde_json::json!(["c"])),
                &mut |_| Ok(serde_json::json!({"found": true, "value": "z"})),
            )
            .unwrap();
        assert_eq!(answer["value"], serde_json::json!(["zc", true]));
    }
}
