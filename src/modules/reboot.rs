//! `reboot`: restart the host and wait until it is back, as ansible-core 2.21's reboot
//! action does. Nothing to plan for the target in one go: the planner reads the arguments
//! (`Effect::Reboot`) and the executor (`executor/host_task/reboot.rs`) reads the boot
//! id, runs the shutdown command, and polls the boot id over new connections until it
//! changes, then runs the test command.

use serde_json::{Value, json};

use super::spec::{Arg, Spec, Unknown, python_repr};
use super::{Args, Effect, Module, ModuleError, Plan, PlanContext, TaskOutcome};

pub struct Reboot;

/// Ansible's `_VALID_ARGS` for the action; anything else is refused as it refuses it.
static SPEC: Spec = Spec::new(&[
    Arg::raw("boot_time_command"),
    Arg::raw("connect_timeout"),
    Arg::raw("msg"),
    Arg::raw("post_reboot_delay"),
    Arg::raw("pre_reboot_delay"),
    Arg::raw("reboot_command"),
    Arg::raw("reboot_timeout"),
    Arg::raw("search_paths"),
    Arg::raw("test_command"),
])
.unknown(Unknown::InvalidOptions);

pub(super) const DEFAULT_BOOT_TIME_COMMAND: &str = "cat /proc/sys/kernel/random/boot_id";
const DEFAULT_SEARCH_PATHS: [&str; 5] =
    ["/sbin", "/bin", "/usr/sbin", "/usr/bin", "/usr/local/sbin"];

/// What the executor does, with every default filled in but those that depend on the
/// host's distribution (read from its facts when it runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebootSpec {
    /// `reboot_command` as given: its first word is the program, the rest its arguments.
    pub reboot_command: Option<String>,
    pub msg: String,
    pub search_paths: Vec<String>,
    pub boot_time_command: Option<String>,
    pub test_command: Option<String>,
    pub pre_reboot_delay: u64,
    pub post_reboot_delay: u64,
    pub reboot_timeout: u64,
    pub connect_timeout: Option<u64>,
}

impl RebootSpec {
    /// The program and arguments Ansible's tables give a distribution (name, major
    /// version, family, lower case), unless `reboot_command` says otherwise.
    pub fn shutdown(&self, distribution: &Distribution) -> (String, String) {
        if let Some(command) = &self.reboot_command {
            let (program, args) = command.split_once(' ').unwrap_or((command, ""));
            return (program.to_string(), args.to_string());
        }
        let program = distribution
            .pick(&[("alpine", "reboot"), ("vmkernel", "reboot")])
            .unwrap_or("shutdown");
        let args = distribution
            .pick(&[
                ("alpine", ""),
                ("void", "-r +{delay_min} \"{message}\""),
                ("freebsd", "-r +{delay_sec}s \"{message}\""),
                ("linux", "-r {delay_min} \"{message}\""),
                ("macosx", "-r +{delay_min} \"{message}\""),
                ("openbsd", "-r +{delay_min} \"{message}\""),
                ("solaris", "-y -g {delay_sec} -i 6 \"{message}\""),
                ("sunos", "-y -g {delay_sec} -i 6 \"{message}\""),
                ("vmkernel", "-d {delay_sec}"),
                ("aix", "-Fr"),
            ])
            .unwrap_or("-r {delay_min} \"{message}\"");
        let args = args
            .replace("{delay_sec}", &self.pre_reboot_delay.to_string())
            .replace("{delay_min}", &(self.pre_reboot_delay / 60).to_string())
            .replace("{message}", &self.msg);
        (program.to_string(), args)
    }

    pub fn boot_time_command(&self, distribution: &Distribution) -> String {
        if let Some(command) = &self.boot_time_command {
            return command.clone();
        }
        distribution
            .pick(&[
                ("freebsd", "/sbin/sysctl kern.boottime"),
                ("openbsd", "/sbin/sysctl kern.boottime"),
                ("macosx", "who -b"),
                ("solaris", "who -b"),
                ("sunos", "who -b"),
                (
                    "vmkernel",
                    "grep booted /var/log/vmksummary.log | tail -n 1",
                ),
                ("aix", "who -b"),
            ])
            .unwrap_or(DEFAULT_BOOT_TIME_COMMAND)
            .to_string()
    }

    pub fn test_command(&self, distribution: &Distribution) -> String {
        if let Some(command) = &self.test_command {
            return command.clone();
        }
        distribution
            .pick(&[("solaris", "who"), ("vmkernel", "who")])
            .unwrap_or("whoami")
            .to_string()
    }
}

/// The host's distribution as the action reads it from `setup`'s minimal facts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Distribution {
    pub name: String,
    pub version: String,
    pub family: String,
}

impl Distribution {
    /// The first of name+version, name, family that the table has, as Ansible looks.
    fn pick(&self, table: &[(&str, &'static str)]) -> Option<&'static str> {
        let find = |key: &str| table.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
        find(&format!("{}{}", self.name, self.version))
            .or_else(|| find(&self.name))
            .or_else(|| find(&self.family))
    }
}

impl Module for Reboot {
    fn name(&self) -> &'static str {
        "reboot"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        if ctx.check_mode {
            let mut out = TaskOutcome {
                changed: true,
                ..TaskOutcome::default()
            };
            out.data.insert("elapsed".into(), json!(0));
            out.data.insert("rebooted".into(), json!(true));
            return Ok(Plan::Done(out));
        }
        match spec_of(args) {
            Ok(spec) => Ok(Plan::Done(TaskOutcome {
                effects: vec![Effect::Reboot(Box::new(spec))],
                ..TaskOutcome::default()
            })),
            Err(msg) => Ok(Plan::Done(TaskOutcome::failed(msg))),
        }
    }
}

/// The arguments as the action reads them: delays through `int()` (negative ones are
/// zero), commands strings only.
fn spec_of(args: &Args) -> Result<RebootSpec, String> {
    let seconds = |name: &str, default: u64| -> Result<u64, String> {
        match args.raw(name) {
            None | Some(Value::Null) => Ok(default),
            Some(value) => python_int(value)
                .map(|n| u64::try_from(n).unwrap_or(0))
                .ok_or_else(|| {
                    format!(
                        "invalid literal for int() with base 10: {}",
                        python_repr(value)
                    )
                }),
        }
    };
    let command = |name: &str| -> Result<Option<String>, String> {
        match args.raw(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "Invalid value given for '{name}': '{}' is not a string and conversion is not allowed.",
                python_repr(other)
            )),
        }
    };
    let search_paths = match args.raw("search_paths") {
        None | Some(Value::Null) => DEFAULT_SEARCH_PATHS.iter().map(|s| s.to_string()).collect(),
        Some(Value::String(s)) => s.split(',').map(|p| p.trim().to_string()).collect(),
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(other) => {
            return Err(format!(
                "'search_paths' must be a string or flat list of strings, got {}",
                python_repr(other)
            ));
        }
    };
    let connect_timeout = match args.raw("connect_timeout") {
        None | Some(Value::Null) => None,
        Some(value) => python_int(value)
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| *n > 0),
    };
    Ok(RebootSpec {
        reboot_command: command("reboot_command")?,
        msg: match args.raw("msg") {
            None | Some(Value::Null) => "Reboot initiated by Ansible".to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        },
        search_paths,
        boot_time_command: command("boot_time_command")?.filter(|c| !c.is_empty()),
        test_command: command("test_command")?,
        pre_reboot_delay: seconds("pre_reboot_delay", 0)?,
        post_reboot_delay: seconds("post_reboot_delay", 0)?,
        reboot_timeout: seconds("reboot_timeout", 600)?,
        connect_timeout,
    })
}

/// Python's `int(value)` for what YAML gives: numbers (floats truncated), booleans and
/// decimal strings.
fn python_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().map(|f| f.trunc() as i64)),
        Value::Bool(b) => Some(i64::from(*b)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn planned(args: Value) -> TaskOutcome {
        let ctx = PlanContext::new(Path::new("/"));
        let Plan::Done(out) = crate::modules::try_plan(&Reboot, args, &ctx).unwrap() else {
            panic!("reboot plans nothing for the target")
        };
        out
    }

    fn spec(args: Value) -> RebootSpec {
        match planned(args).effects.as_slice() {
            [Effect::Reboot(spec)] => (**spec).clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn defaults_and_the_distribution_tables_are_ansibles() {
        let s = spec(json!({"pre_reboot_delay": 130, "msg": "bye"}));
        let debian = Distribution {
            name: "debian".into(),
            version: "12".into(),
            family: "debian".into(),
        };
        // Debian has no row of its own: the default is Linux's.
        assert_eq!(
            s.shutdown(&debian),
            ("shutdown".into(), "-r 2 \"bye\"".into())
        );
        let alpine = Distribution {
            name: "alpine".into(),
            ..Distribution::default()
        };
        assert_eq!(s.shutdown(&alpine), ("reboot".into(), String::new()));
        let freebsd = Distribution {
            family: "freebsd".into(),
            ..Distribution::default()
        };
        assert_eq!(s.shutdown(&freebsd).1, "-r +130s \"bye\"");
        assert_eq!(s.boot_time_command(&debian), DEFAULT_BOOT_TIME_COMMAND);
        assert_eq!(s.test_command(&debian), "whoami");
        assert_eq!(s.reboot_timeout, 600);
        assert_eq!(s.search_paths.len(), 5);
    }

    #[test]
    fn a_given_command_is_split_at_its_first_space() {
        let s = spec(
            json!({"reboot_command": "/usr/local/bin/restart now -f", "pre_reboot_delay": "-5"}),
        );
        assert_eq!(
            s.shutdown(&Distribution::default()),
            ("/usr/local/bin/restart".into(), "now -f".into())
        );
        assert_eq!(s.pre_reboot_delay, 0);
        let bare = spec(json!({"reboot_command": "reboot"}));
        assert_eq!(
            bare.shutdown(&Distribution::default()),
            ("reboot".into(), String::new())
        );
    }

    #[test]
    fn bad_arguments_fail_the_task_in_ansibles_words() {
        let ctx = PlanContext::new(Path::new("/"));
        assert_eq!(
            crate::modules::try_plan(&Reboot, json!({"delay": 3}), &ctx).unwrap_err(),
            "Invalid options for reboot: delay"
        );
        let out = planned(json!({"reboot_command": ["shutdown"]}));
        assert!(out.failed);
        assert_eq!(
            out.msg.as_deref(),
            Some(
                "Invalid value given for 'reboot_command': '['shutdown']' is not a string and conversion is not allowed."
            )
        );
        let out = planned(json!({"search_paths": [["/sbin"]]}));
        assert_eq!(
            out.msg.as_deref(),
            Some("'search_paths' must be a string or flat list of strings, got [['/sbin']]")
        );
    }

    #[test]
    fn check_mode_reports_a_reboot_without_one() {
        let ctx = PlanContext {
            check_mode: true,
            ..PlanContext::new(Path::new("/"))
        };
        let Plan::Done(out) = crate::modules::try_plan(&Reboot, json!({}), &ctx).unwrap() else {
            panic!()
        };
        assert!(out.changed && out.effects.is_empty());
        assert_eq!(out.data["rebooted"], json!(true));
        assert_eq!(out.data["elapsed"], json!(0));
    }
}
