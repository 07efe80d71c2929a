//! `debconf`: answers to a package's debconf questions, read with `debconf-show` (and
//! `debconf-get-selections` for a password) and set with `debconf-set-selections`.

use serde_json::{Map, Value, json};
use turbo_proto::{Command, Exec, Op, OpResult};

use super::spec::{Arg, Spec, python_text};
use super::{Args, Caps, Module, ModuleError, Next, Plan, PlanContext, TaskOutcome, unexpected};

pub struct Debconf;

static SPEC: Spec = Spec::new(&[
    Arg::str("name").aliases(&["pkg"]).required(),
    Arg::str("question").aliases(&["selection", "setting"]),
    Arg::str("vtype").choices(&[
        "boolean",
        "error",
        "multiselect",
        "note",
        "password",
        "seen",
        "select",
        "string",
        "text",
        "title",
    ]),
    Arg::raw("value").aliases(&["answer"]),
    Arg::bool("unseen").default_bool(false),
])
.required_together(&[&["question", "vtype", "value"]]);

fn exec(argv: &[&str], stdin: Option<Vec<u8>>) -> Op {
    Op::Exec(Exec {
        command: Command::Argv(argv.iter().map(|a| a.to_string()).collect()),
        chdir: None,
        creates: None,
        removes: None,
        env: ["LANG", "LC_ALL", "LC_MESSAGES", "LC_CTYPE", "LANGUAGE"]
            .iter()
            .map(|k| (k.to_string(), "C.UTF-8".to_string()))
            .collect(),
        stdin,
        umask: None,
    })
}

/// `debconf-show`'s `* question: value` lines (the star marks questions asked).
pub(crate) fn parse_show(stdout: &str) -> Map<String, Value> {
    let mut out = Map::new();
    for line in stdout.lines() {
        if let Some((key, value)) = line.split_once(':') {
            let key = key.trim().trim_matches('*').trim();
            out.insert(key.to_string(), json!(value.trim()));
        }
    }
    out
}

/// A password's value from `debconf-get-selections`' `pkg<TAB>question<TAB>type<TAB>value`.
fn password_value(stdout: &str, pkg: &str, question: &str, vtype: &str) -> String {
    for line in stdout.split('\n') {
        if !line.starts_with(pkg) {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        if fields.len() <= 3 {
            return String::new();
        }
        if fields[1] == question && fields[2] == vtype {
            return fields[3].to_string();
        }
    }
    String::new()
}

/// What the task wants, as Ansible compares it with what is there.
#[derive(Clone)]
enum Wanted {
    Text(String),
    /// A multiselect given as a list, as written: compared sorted, set joined by ", ",
    /// each with Python's rules (a list Python cannot sort or join fails the task).
    Choices(Vec<Value>),
}

impl Wanted {
    fn set_text(&self) -> Result<String, String> {
        match self {
            Wanted::Text(t) => Ok(t.clone()),
            Wanted::Choices(c) => python_join(c),
        }
    }
    fn value(&self) -> Value {
        match self {
            Wanted::Text(t) => json!(t),
            Wanted::Choices(c) => json!(c),
        }
    }
}

/// Python's name of a JSON value's type, for its TypeErrors.
fn python_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `a < b` as Python orders these values; `None` where Python raises TypeError.
fn python_less(a: &Value, b: &Value) -> Option<bool> {
    let number = |v: &Value| match v {
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    match (a, b) {
        (Value::String(x), Value::String(y)) => Some(x < y),
        (Value::Array(x), Value::Array(y)) => {
            for (i, j) in x.iter().zip(y) {
                if i != j {
                    return python_less(i, j);
                }
            }
            Some(x.len() < y.len())
        }
        _ => Some(number(a)? < number(b)?),
    }
}

/// Python's `sorted()` of the list, or its TypeError's text. Each element is compared
/// with those before it, later one first, as Python's sort does, so the first pair it
/// cannot order is the one its error names.
fn python_sorted(items: &[Value]) -> Result<Vec<Value>, String> {
    let mut sorted: Vec<Value> = Vec::with_capacity(items.len());
    for item in items {
        let mut at = sorted.len();
        while at > 0 {
            match python_less(item, &sorted[at - 1]) {
                Some(true) => at -= 1,
                Some(false) => break,
                None => {
                    return Err(format!(
                        "'<' not supported between instances of '{}' and '{}'",
                        python_type(item),
                        python_type(&sorted[at - 1])
                    ));
                }
            }
        }
        sorted.insert(at, item.clone());
    }
    Ok(sorted)
}

/// Python's `", ".join(items)`, or its TypeError's text.
fn python_join(items: &[Value]) -> Result<String, String> {
    let mut words = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        match item {
            Value::String(word) => words.push(word.as_str()),
            other => {
                return Err(format!(
                    "sequence item {i}: expected str instance, {} found",
                    python_type(other)
                ));
            }
        }
    }
    Ok(words.join(", "))
}

fn invalid_multiselect(error: String) -> Plan {
    Plan::Done(TaskOutcome::failed(format!(
        "Invalid value provided for 'multiselect': {error}"
    )))
}

impl Module for Debconf {
    fn name(&self) -> &'static str {
        "debconf"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.own_check_mode()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let pkg = args.str("name").unwrap_or_default().to_string();
        let question = args.str("question").map(str::to_string);
        let vtype = args.str("vtype").unwrap_or_default().to_string();
        let unseen = args.bool("unseen");
        let wanted = match args.raw("value") {
            Some(Value::Array(items)) if vtype == "multiselect" => {
                Some(Wanted::Choices(items.clone()))
            }
            Some(v) if vtype == "boolean" => Some(Wanted::Text(python_text(v).to_lowercase())),
            Some(v) => Some(Wanted::Text(python_text(v))),
            None => None,
        };
        let (check, diff) = (ctx.check_mode, ctx.diff);
        Ok(Plan::Step(
            exec(&["debconf-show", &pkg], None),
            Next::new(move |reply| {
                let OpResult::Exec(x) = reply else {
                    return Ok(Plan::Done(unexpected("debconf", reply)));
                };
                if x.rc != 0 {
                    return Ok(Plan::Done(TaskOutcome::failed(
                        String::from_utf8_lossy(&x.stderr).into_owned(),
                    )));
                }
                let prev = parse_show(&String::from_utf8_lossy(&x.stdout));
                let (Some(question), Some(wanted)) = (question, wanted) else {
                    return Ok(Plan::Done(unchanged(prev)));
                };
                let existing = prev.get(&question).map(python_text);
                let is_password = vtype == "password";
                let (pkg_name, q, t) = (pkg.clone(), question.clone(), vtype.clone());
                let decide = move |existing: Option<String>| -> Result<Plan, ModuleError> {
                    // Compared with what is there, a multiselect list is sorted first (and
                    // so set sorted); with nothing there, it is set as written.
                    let wanted = match (&existing, wanted) {
                        (Some(_), Wanted::Choices(c)) => match python_sorted(&c) {
                            Ok(sorted) => Wanted::Choices(sorted),
                            Err(e) => return Ok(invalid_multiselect(e)),
                        },
                        (_, wanted) => wanted,
                    };
                    let changed = match (&existing, &wanted) {
                        (None, _) => true,
                        (Some(e), Wanted::Text(t)) if vtype == "boolean" => e.to_lowercase() != *t,
                        (Some(e), Wanted::Text(t)) => e != t,
                        (Some(e), Wanted::Choices(c)) => {
                            let mut have: Vec<String> =
                                e.split(',').map(|i| i.trim().to_string()).collect();
                            have.sort();
                            *c != have.into_iter().map(Value::String).collect::<Vec<_>>()
                        }
                    };
                    if !changed {
                        return Ok(Plan::Done(unchanged(prev)));
                    }
                    let mut previous = Map::new();
                    previous.insert(
                        question.clone(),
                        prev.get(&question).cloned().unwrap_or(json!("")),
                    );
                    let mut current = Map::new();
                    current.insert(question.clone(), wanted.value());
                    let finish = move |msg: String| {
                        let mut out = TaskOutcome {
                            changed: true,
                            msg: Some(msg),
                            ..TaskOutcome::default()
                        };
                        out.data
                            .insert("current".into(), Value::Object(current.clone()));
                        out.data
                            .insert("previous".into(), Value::Object(previous.clone()));
                        let diff_value = if diff {
                            let mut after = previous.clone();
                            after.extend(current);
                            json!({"before": previous, "after": after})
                        } else {
                            json!({})
                        };
                        out.data.insert("diff".into(), diff_value);
                        out
                    };
                    if check {
                        return Ok(Plan::Done(finish(String::new())));
                    }
                    let text = match wanted.set_text() {
                        Ok(text) => text,
                        Err(e) => return Ok(invalid_multiselect(e)),
                    };
                    let line = [pkg.as_str(), &question, &vtype, &text].join(" ");
                    let mut argv = vec!["debconf-set-selections"];
                    if unseen {
                        argv.push("-u");
                    }
                    Ok(Plan::Step(
                        exec(&argv, Some(line.into_bytes())),
                        Next::new(move |reply| match reply {
                            OpResult::Exec(x) if x.rc == 0 => Ok(Plan::Done(finish(
                                String::from_utf8_lossy(&x.stdout).into_owned(),
                            ))),
                            OpResult::Exec(x) => Ok(Plan::Done(TaskOutcome::failed(
                                String::from_utf8_lossy(&x.stderr).into_owned(),
                            ))),
                            other => Ok(Plan::Done(unexpected("debconf", other))),
                        }),
                    ))
                };
                if existing.is_none() {
                    return decide(None);
                }
                if !is_password {
                    return decide(existing);
                }
                Ok(Plan::Step(
                    exec(&["debconf-get-selections"], None),
                    Next::new(move |reply| match reply {
                        OpResult::Exec(x) if x.rc == 0 => decide(Some(password_value(
                            &String::from_utf8_lossy(&x.stdout),
                            &pkg_name,
                            &q,
                            &t,
                        ))),
                        OpResult::Exec(x) => Ok(Plan::Done(TaskOutcome::failed(format!(
                            "Failed to get the value '{q}' from '{pkg_name}': {}",
                            String::from_utf8_lossy(&x.stderr)
                        )))),
                        other => Ok(Plan::Done(unexpected("debconf", other))),
                    }),
                ))
            }),
        ))
    }
}

fn unchanged(prev: Map<String, Value>) -> TaskOutcome {
    let mut out = TaskOutcome {
        msg: Some(String::new()),
        ..TaskOutcome::default()
    };
    out.data.insert("current".into(), Value::Object(prev));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modules::try_plan;
    use turbo_proto::ExecOutcome;

    fn reply(stdout: &str) -> OpResult {
        OpResult::Exec(ExecOutcome {
            ran: true,
            rc: 0,
            stdout: stdout.into(),
            stderr: Vec::new(),
            start_unix_micros: 0,
            duration_micros: 0,
            msg: String::new(),
        })
    }

    fn resume(plan: Plan, r: OpResult) -> Plan {
        match plan {
            Plan::Step(_, next) => next.resume(r).unwrap(),
            other => panic!("{other:?}"),
        }
    }

    const SHOW: &str = "* tzdata/Areas: Etc\n  tzdata/Zones/Etc: UTC\n";

    #[test]
    fn reads_debconf_show() {
        let shown = parse_show(SHOW);
        assert_eq!(shown["tzdata/Areas"], "Etc");
        assert_eq!(shown["tzdata/Zones/Etc"], "UTC");
    }

    #[test]
    fn sets_an_answer_that_differs_and_leaves_one_that_does_not() {
        let ctx = PlanContext::new(std::path::Path::new("/"));
        let args = serde_json::json!({"name": "tzdata", "question": "tzdata/Areas", "vtype": "select", "value": "Europe"});
        let plan = resume(try_plan(&Debconf, args.clone(), &ctx).unwrap(), reply(SHOW));
        let Plan::Step(Op::Exec(x), _) = &plan else {
            panic!("{plan:?}")
        };
        assert_eq!(
            x.stdin.as_deref(),
            Some(&b"tzdata tzdata/Areas select Europe"[..])
        );
        let Plan::Done(out) = resume(plan, reply("")) else {
            panic!()
        };
        assert!(out.changed);
        assert_eq!(
            out.data["previous"],
            serde_json::json!({"tzdata/Areas": "Etc"})
        );
        assert_eq!(
            out.data["current"],
            serde_json::json!({"tzdata/Areas": "Europe"})
        );

        let same = serde_json::json!({"name": "tzdata", "question": "tzdata/Areas", "vtype": "select", "value": "Etc"});
        let Plan::Done(out) = resume(try_plan(&Debconf, same, &ctx).unwrap(), reply(SHOW)) else {
            panic!()
        };
        assert!(!out.changed);
        assert_eq!(out.data["current"]["tzdata/Zones/Etc"], "UTC");
    }

    /// A multiselect list is sorted and joined as Python does: one Python cannot sort
    /// (a number among words) fails as the module does, whether or not the answer would
    /// change; one that only cannot be joined fails when it is set.
    #[test]
    fn multiselect_lists_sort_and_join_as_python_does() {
        let ctx = PlanContext::new(std::path::Path::new("/"));
        const NSS: &str = "* libnss-ldapd/nsswitch: group, passwd, shadow\n";
        let ask = |value: serde_json::Value| {
            let args = serde_json::json!({"name": "libnss-ldapd", "question": "libnss-ldapd/nsswitch", "vtype": "multiselect", "value": value});
            resume(try_plan(&Debconf, args, &ctx).unwrap(), reply(NSS))
        };
        let Plan::Done(same) = ask(serde_json::json!(["shadow", "group", "passwd"])) else {
            panic!()
        };
        assert!(!same.changed && !same.failed);
        let Plan::Done(mixed) = ask(serde_json::json!(["group", 1, "passwd"])) else {
            panic!()
        };
        assert!(mixed.failed && !mixed.changed);
        assert_eq!(
            mixed.msg.as_deref(),
            Some(
                "Invalid value provided for 'multiselect': '<' not supported between instances of 'int' and 'str'"
            )
        );
        let Plan::Done(numbers) = ask(serde_json::json!([2, 1])) else {
            panic!()
        };
        assert_eq!(
            numbers.msg.as_deref(),
            Some(
                "Invalid value provided for 'multiselect': sequence item 0: expected str instance, int found"
            )
        );
        let Plan::Step(Op::Exec(x), _) = ask(serde_json::json!(["shadow", "group"])) else {
            panic!()
        };
        assert_eq!(
            x.stdin.as_deref(),
            Some(&b"libnss-ldapd libnss-ldapd/nsswitch multiselect group, shadow"[..])
        );
    }

    #[test]
    fn question_vtype_and_value_go_together() {
        let ctx = PlanContext::new(std::path::Path::new("/"));
        assert_eq!(
            try_plan(
                &Debconf,
                serde_json::json!({"name": "tzdata", "question": "q"}),
                &ctx
            )
            .unwrap_err(),
            "parameters are required together: question, vtype, value"
        );
    }
}
