//! `setup`: gather facts. The agent reads them natively (one `Facts` op); this module
//! picks the subsets, applies `filter`, and hands them back the way Ansible's setup does,
//! as `ansible_facts` with every name prefixed `ansible_`.

use serde_json::{Map, Value};
use turbo_proto::{Command, Exec, FactValue, Op, OpResult};

use super::setup_local::{self, Local};
use super::spec::{Arg, Elem, Spec};
use super::{
    Args, Caps, Module, ModuleError, Next, Plan, PlanContext, Shown, TaskOutcome, unexpected,
};
use crate::fnmatch::Pattern;

pub struct Setup;

static SPEC: Spec = Spec::new(&[
    Arg::path("fact_path").default_str("/etc/ansible/facts.d"),
    Arg::list("filter", Elem::Str),
    Arg::list("gather_subset", Elem::Str).default_str("all"),
    Arg::int("gather_timeout")
        .default_int(10)
        .no_effect("the agent reads facts natively, without the collectors that time out"),
]);

impl Module for Setup {
    fn name(&self) -> &'static str {
        "setup"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        // Ansible's setup runs whole in check mode, fact scripts included: it changes nothing.
        Caps::TASK.shown(Shown::Nothing).own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let facts = Op::Facts {
            subsets: gather_subset(args),
        };
        let gathered = if !wants_python(&gather_subset(args)) {
            facts
        } else {
            let interpreter = ctx
                .vars
                .and_then(|vars| vars.get_attr("ansible_python_interpreter").ok())
                .and_then(|v| v.as_str().map(str::to_string))
                .filter(|p| !p.is_empty() && !crate::template::is_template(p));
            Op::Batch(vec![facts, python_probe(interpreter.as_deref())])
        };
        if !setup_local::wanted(&gather_subset(args)) {
            return Ok(Plan::Remote(gathered));
        }
        // `ansible_local`: list fact_path with the rest, then run or read its fact files.
        let fact_path = args
            .str("fact_path")
            .unwrap_or("/etc/ansible/facts.d")
            .to_string();
        let args = args.clone();
        Ok(Plan::Step(
            Op::Batch(vec![gathered, setup_local::listing(&fact_path)]),
            Next::new(move |reply| {
                let OpResult::Batch(mut replies) = reply else {
                    return Ok(Plan::Done(Setup.finish(&args, reply)));
                };
                let listing = replies.pop();
                let gathered = replies.pop().unwrap_or(OpResult::Batch(Vec::new()));
                let files = match listing {
                    Some(OpResult::Tree(tree)) if tree.root.exists => {
                        setup_local::fact_files(&tree)
                    }
                    _ => Vec::new(),
                };
                if files.is_empty() {
                    return Ok(Plan::Done(with_local(&args, gathered, Local::default())));
                }
                Ok(Plan::Step(
                    setup_local::content_ops(&files),
                    Next::new(move |reply| {
                        let replies = match reply {
                            OpResult::Batch(replies) => replies,
                            other => vec![other],
                        };
                        Ok(Plan::Done(match setup_local::collect(&files, replies) {
                            Ok(local) => with_local(&args, gathered, local),
                            Err(failed) => exec_failed(failed),
                        }))
                    }),
                ))
            }),
        ))
    }

    fn finish(&self, args: &Args, result: OpResult) -> TaskOutcome {
        let (result, python) = match result {
            OpResult::Batch(mut replies) if replies.len() == 2 => {
                let probe = replies.pop();
                (replies.remove(0), probe.and_then(python_facts))
            }
            other => (other, None),
        };
        let OpResult::Facts(mut facts) = result else {
            return unexpected(self.name(), result);
        };
        if let Some((python, version)) = python {
            facts.retain(|(name, _)| name != "python" && name != "python_version");
            facts.push(("python".into(), python));
            facts.push(("python_version".into(), version));
        }
        let (subsets, filters) = (gather_subset(args), trimmed(args, "filter"));
        // fnmatch, as ansible_collector.py: no `~regex` here, unlike host patterns.
        let matchers: Vec<Pattern> = filters
            .iter()
            .filter(|f| !f.is_empty())
            .map(|f| Pattern::new(f))
            .collect();
        let mut ansible_facts = Map::new();
        for (name, value) in facts {
            let prefixed = format!("ansible_{name}");
            // Ansible matches the prefixed name; the bare one is accepted as well, since
            // `ansible_facts.X` is how most playbooks spell facts today.
            let wanted = matchers.is_empty()
                || matchers
                    .iter()
                    .any(|m| m.matches(&prefixed) || m.matches(&name));
            if wanted {
                ansible_facts.insert(prefixed, to_json(value));
            }
        }
        // The metadata facts go through the filter too, by their own (unprefixed) names.
        let meta_wanted =
            |name: &str| matchers.is_empty() || matchers.iter().any(|m| m.matches(name));
        if meta_wanted("gather_subset") {
            ansible_facts.insert(
                "gather_subset".into(),
                Value::Array(subsets.into_iter().map(Value::String).collect()),
            );
        }
        if meta_wanted("module_setup") {
            ansible_facts.insert("module_setup".into(), Value::Bool(true));
        }
        let mut data = Map::new();
        data.insert("ansible_facts".into(), Value::Object(ansible_facts));
        TaskOutcome {
            data,
            ..TaskOutcome::default()
        }
    }
}

/// setup's result with `ansible_local` (filtered as every fact is) and the collector's
/// warnings.
fn with_local(args: &Args, gathered: OpResult, local: Local) -> TaskOutcome {
    let gathered = match gathered {
        OpResult::Facts(mut facts) => {
            facts.push(("local".into(), FactValue::Null));
            OpResult::Facts(facts)
        }
        OpResult::Batch(mut replies) if !replies.is_empty() => {
            if let OpResult::Facts(facts) = &mut replies[0] {
                facts.push(("local".into(), FactValue::Null));
            }
            OpResult::Batch(replies)
        }
        other => other,
    };
    let mut out = Setup.finish(args, gathered);
    if let Some(Value::Object(facts)) = out.data.get_mut("ansible_facts") {
        match local.facts {
            Some(found) => {
                if let Some(slot) = facts.get_mut("ansible_local") {
                    *slot = Value::Object(found);
                }
            }
            None => {
                facts.shift_remove("ansible_local");
            }
        }
    }
    if !local.warnings.is_empty() {
        out.data
            .insert("warnings".into(), Value::from(local.warnings));
    }
    out
}

/// A fact script that could not be started: run_command's failure ends the module.
fn exec_failed(failed: setup_local::ExecFailed) -> TaskOutcome {
    let mut out = TaskOutcome::failed("Error executing command.");
    out.data.insert("cmd".into(), Value::from(vec![failed.cmd]));
    out.data.insert("stdout".into(), Value::from(""));
    out.data.insert("stderr".into(), Value::from(""));
    out
}

/// The task's `environment` in the `ansible_env` fact: Ansible's setup module runs with it
/// and reports its own process environment, while the agent reads the one it started with.
pub fn with_task_environment(outcome: &mut TaskOutcome, env: &[(String, String)]) {
    if env.is_empty() {
        return;
    }
    let Some(Value::Object(facts)) = outcome.data.get_mut("ansible_facts") else {
        return;
    };
    if let Some(Value::Object(seen)) = facts.get_mut("ansible_env") {
        for (k, v) in env {
            seen.insert(k.clone(), Value::String(v.clone()));
        }
    }
}

/// Interpreters tried when the host sets no `ansible_python_interpreter`: Ansible's
/// `INTERPRETER_PYTHON_FALLBACK`.
const PYTHON_FALLBACK: &[&str] = &[
    "python3.14",
    "python3.13",
    "python3.12",
    "python3.11",
    "python3.10",
    "python3.9",
    "/usr/bin/python3",
    "python3",
];

/// What Ansible's python fact collector reports, printed as JSON by the interpreter
/// itself (with `platform.python_version()`, the `python_version` fact).
const PYTHON_FACTS: &str = "import sys, json, platform\n\
try:\n    import ssl\n    h = hasattr(ssl, \"SSLContext\")\n\
except Exception:\n    h = False\n\
v = sys.version_info\n\
print(json.dumps({\"version\": {\"major\": v[0], \"minor\": v[1], \"micro\": v[2], \
\"releaselevel\": v[3], \"serial\": v[4]}, \"version_info\": list(v), \
\"executable\": sys.executable, \"has_sslcontext\": h, \"type\": sys.implementation.name, \
\"python_version\": platform.python_version()}))\n";

/// Ansible's `python` facts come from the interpreter its modules run with. turbo-play
/// needs none, so it asks the one Ansible would use, when the host has one (the first
/// of the fallbacks that answers: a shim that cannot run is passed over); the `min`
/// subset (always gathered unless `!min`) holds them.
fn wants_python(subsets: &[String]) -> bool {
    !subsets.iter().any(|s| s.trim() == "!min")
}

fn python_probe(interpreter: Option<&str>) -> Op {
    let candidates: Vec<String> = match interpreter {
        Some(one) => vec![one.to_string()],
        None => PYTHON_FALLBACK.iter().map(|p| p.to_string()).collect(),
    };
    let quoted: Vec<String> = candidates
        .iter()
        .map(|c| format!("'{}'", c.replace('\'', "'\\''")))
        .collect();
    let script = format!(
        "for p in {}; do command -v \"$p\" >/dev/null 2>&1 && \"$p\" -c '{PYTHON_FACTS}' 2>/dev/null && exit 0; done; exit 127",
        quoted.join(" ")
    );
    Op::Exec(Exec {
        command: Command::Shell {
            script,
            executable: None,
        },
        chdir: None,
        creates: None,
        removes: None,
        env: Vec::new(),
        stdin: None,
        umask: None,
    })
}

/// The probe's answer as the `python` and `python_version` facts; nothing when the host
/// has no interpreter (Ansible could not have gathered facts there at all).
fn python_facts(reply: OpResult) -> Option<(FactValue, FactValue)> {
    let OpResult::Exec(x) = reply else {
        return None;
    };
    if !x.ran || x.rc != 0 {
        return None;
    }
    let Ok(Value::Object(mut found)) = serde_json::from_slice::<Value>(&x.stdout) else {
        return None;
    };
    let version = found.remove("python_version")?;
    Some((from_json(Value::Object(found)), from_json(version)))
}

fn from_json(value: Value) -> FactValue {
    match value {
        Value::Null => FactValue::Null,
        Value::Bool(b) => FactValue::Bool(b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => FactValue::Int(i),
            None => FactValue::Float(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => FactValue::Str(s),
        Value::Array(items) => FactValue::List(items.into_iter().map(from_json).collect()),
        Value::Object(map) => {
            FactValue::Map(map.into_iter().map(|(k, v)| (k, from_json(v))).collect())
        }
    }
}

/// `gather_subset`, trimmed; Ansible's default is `all`.
fn gather_subset(args: &Args) -> Vec<String> {
    let subsets = trimmed(args, "gather_subset");
    if subsets.is_empty() {
        vec!["all".to_string()]
    } else {
        subsets
    }
}

/// A list argument's strings, trimmed, empty ones left out (`"!all, network"`).
fn trimmed(args: &Args, key: &str) -> Vec<String> {
    args.str_list(key)
        .into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub fn to_json(value: FactValue) -> Value {
    match value {
        FactValue::Null => Value::Null,
        FactValue::Bool(b) => Value::Bool(b),
        FactValue::Int(i) => Value::from(i),
        FactValue::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        FactValue::Str(s) => Value::String(s),
        FactValue::List(items) => Value::Array(items.into_iter().map(to_json).collect()),
        FactValue::Map(entries) => {
            Value::Object(entries.into_iter().map(|(k, v)| (k, to_json(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn args(v: Value) -> Args {
        crate::modules::check(&Setup, v)
    }

    /// What the plan gathers, the local facts' listing left aside (see below).
    fn plan(v: Value) -> Op {
        match Setup
            .plan(&args(v), &PlanContext::new(Path::new("/")))
            .unwrap()
        {
            Plan::Remote(op) => op,
            Plan::Step(Op::Batch(mut ops), _)
                if ops.len() == 2 && matches!(ops[1], Op::ListTree { .. }) =>
            {
                ops.remove(0)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn local_facts_list_fact_path_first_unless_excluded() {
        let listing = |v: Value| match Setup
            .plan(&args(v), &PlanContext::new(Path::new("/")))
            .unwrap()
        {
            Plan::Step(Op::Batch(ops), _) => ops.into_iter().nth(1),
            _ => None,
        };
        assert_eq!(
            listing(json!({})),
            Some(setup_local::listing("/etc/ansible/facts.d"))
        );
        assert_eq!(
            listing(json!({"fact_path": "/srv/f.d", "gather_subset": "!all"})),
            Some(setup_local::listing("/srv/f.d"))
        );
        assert_eq!(listing(json!({"gather_subset": "!local"})), None);
        assert_eq!(listing(json!({"gather_subset": ["!all", "!min"]})), None);
    }

    fn sample() -> OpResult {
        OpResult::Facts(vec![
            ("hostname".into(), FactValue::Str("web1".into())),
            ("distribution".into(), FactValue::Str("Debian".into())),
            ("processor_vcpus".into(), FactValue::Int(2)),
            (
                "default_ipv4".into(),
                FactValue::Map(vec![
                    ("address".into(), FactValue::Str("10.0.0.5".into())),
                    ("mtu".into(), FactValue::Int(1500)),
                ]),
            ),
            (
                "mounts".into(),
                FactValue::List(vec![FactValue::Map(vec![(
                    "mount".into(),
                    FactValue::Str("/".into()),
                )])]),
            ),
            ("load".into(), FactValue::Float(0.5)),
            ("nothing".into(), FactValue::Null),
            ("flag".into(), FactValue::Bool(true)),
        ])
    }

    #[test]
    fn the_python_probe_answer_becomes_the_python_facts() {
        let args = crate::modules::check(&Setup, json!({}));
        let probe = OpResult::Exec(turbo_proto::ExecOutcome {
            ran: true,
            rc: 0,
            stdout: br#"{"version": {"major": 3}, "version_info": [3, 12, 1, "final", 0], "executable": "/usr/bin/python3", "has_sslcontext": true, "type": "cpython", "python_version": "3.12.1"}"#.to_vec(),
            stderr: Vec::new(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        });
        let out = Setup.finish(
            &args,
            OpResult::Batch(vec![OpResult::Facts(Vec::new()), probe]),
        );
        let facts = &out.data["ansible_facts"];
        assert_eq!(facts["ansible_python_version"], json!("3.12.1"));
        assert_eq!(
            facts["ansible_python"]["executable"],
            json!("/usr/bin/python3")
        );
        assert_eq!(facts["ansible_python"]["version_info"][3], json!("final"));
        assert!(facts["ansible_python"].get("python_version").is_none());
        // No interpreter on the host: no python facts, the rest as gathered.
        let none = OpResult::Exec(turbo_proto::ExecOutcome {
            ran: true,
            rc: 127,
            stdout: Vec::new(),
            stderr: Vec::new(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        });
        let out = Setup.finish(
            &args,
            OpResult::Batch(vec![OpResult::Facts(Vec::new()), none]),
        );
        assert!(out.data["ansible_facts"].get("ansible_python").is_none());
    }

    /// The facts op of a plan that also asks the host's Python.
    fn facts_op(op: Op) -> Op {
        match op {
            Op::Batch(mut ops) if ops.len() == 2 => {
                assert!(matches!(ops[1], Op::Exec(_)), "{ops:?}");
                ops.remove(0)
            }
            other => panic!("facts and a python probe, got {other:?}"),
        }
    }

    #[test]
    fn plans_one_facts_op_with_the_subsets() {
        assert_eq!(
            facts_op(plan(json!({}))),
            Op::Facts {
                subsets: vec!["all".into()]
            }
        );
        assert_eq!(
            facts_op(plan(json!({"gather_subset": "!all, network"}))),
            Op::Facts {
                subsets: vec!["!all".into(), "network".into()]
            }
        );
        assert_eq!(
            facts_op(plan(
                json!({"gather_subset": ["min"], "gather_timeout": 10})
            )),
            Op::Facts {
                subsets: vec!["min".into()]
            }
        );
        // Without `min` Ansible gathers no python facts: nothing to ask.
        assert_eq!(
            plan(json!({"gather_subset": ["!min", "network"]})),
            Op::Facts {
                subsets: vec!["!min".into(), "network".into()]
            }
        );
        assert_eq!(
            crate::modules::try_plan(
                &Setup,
                json!({"gather_subset": {"a": 1}}),
                &PlanContext::new(Path::new("/"))
            )
            .unwrap_err(),
            "argument 'gather_subset' is of type dict and we were unable to convert to list: <class 'dict'> cannot be converted to a list"
        );
    }

    #[test]
    fn facts_come_back_prefixed_under_ansible_facts() {
        let out = Setup.finish(&args(json!({})), sample());
        assert!(!out.changed && !out.failed);
        assert_eq!(
            Value::Object(out.data),
            json!({"ansible_facts": {
                "ansible_hostname": "web1",
                "ansible_distribution": "Debian",
                "ansible_processor_vcpus": 2,
                "ansible_default_ipv4": {"address": "10.0.0.5", "mtu": 1500},
                "ansible_mounts": [{"mount": "/"}],
                "ansible_load": 0.5,
                "ansible_nothing": null,
                "ansible_flag": true,
                "gather_subset": ["all"],
                "module_setup": true,
            }})
        );
    }

    #[test]
    fn filter_globs_select_facts() {
        let out = Setup.finish(
            &args(json!({"filter": ["ansible_distribution*", "host?ame"]})),
            sample(),
        );
        let facts = out.data["ansible_facts"].as_object().unwrap();
        let names: Vec<&str> = facts.keys().map(String::as_str).collect();
        // Ansible filters its metadata facts as well.
        assert_eq!(names, ["ansible_hostname", "ansible_distribution"]);
        let out = Setup.finish(&args(json!({"filter": "ansible_nope"})), sample());
        assert_eq!(out.data["ansible_facts"], json!({}));
        let out = Setup.finish(&args(json!({"filter": "*_setup"})), sample());
        assert_eq!(out.data["ansible_facts"], json!({"module_setup": true}));
        // A `~` is a literal character to fnmatch, not a host pattern's regex.
        let out = Setup.finish(&args(json!({"filter": "~ansible_host"})), sample());
        assert_eq!(out.data["ansible_facts"], json!({}));
    }

    #[test]
    fn an_error_reply_fails_the_task() {
        let out = Setup.finish(
            &args(json!({})),
            OpResult::Error(turbo_proto::OpError {
                kind: turbo_proto::ErrorKind::Io,
                message: "boom".into(),
            }),
        );
        assert!(out.failed);
        assert_eq!(out.msg.as_deref(), Some("boom"));
    }
}
