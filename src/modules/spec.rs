//! Argument specs declared the way Ansible's modules declare `argument_spec`, checked the
//! way `AnsibleModule` checks them, with its messages.
//!
//! A module declares one static [`Spec`]; the executor validates the templated arguments
//! against it before planning, so `plan` and `finish` both read typed, alias-resolved,
//! defaulted [`Args`] and never parse raw values again. As in Ansible the check happens when
//! the task runs (a skipped task never fails on its arguments), and the first error wins, in
//! Ansible's order: mutually exclusive, required, types, choices, required together, one
//! of, required if, required by, and only then unsupported names.

use serde_json::{Map, Value};

use super::ModuleArgs;
use crate::booleans::{self, NotABoolean};
use crate::template::python_type;

/// What an argument's value is converted to (Ansible's `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Bool,
    Int,
    Float,
    /// A string; `~` and variables are expanded where the path is used (on the target).
    Path,
    /// Taken as written (Ansible's `raw`).
    Raw,
    Dict,
    /// A list whose elements are converted to this kind (a string is split on commas).
    List(Elem),
    /// Ansible's `json`/`jsonarg`: a string as it is (trimmed), a list or dict as JSON text.
    Json,
}

/// The `elements` of a list argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    Str,
    Int,
    Float,
    Bool,
    Path,
    Raw,
    Dict,
}

/// A default as a spec can write it statically.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lit {
    Bool(bool),
    Str(&'static str),
    Int(i64),
}

impl Lit {
    fn to_json(self) -> Value {
        match self {
            Lit::Bool(b) => Value::Bool(b),
            Lit::Str(s) => Value::String(s.to_string()),
            Lit::Int(i) => Value::from(i),
        }
    }
}

/// What turbo-play does with an argument Ansible documents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Honoured as Ansible honours it.
    Honoured,
    /// Accepted, and changes nothing here, for the reason given (e.g. SELinux contexts on a
    /// target without SELinux; `unsafe_writes` where every write is atomic anyway).
    NoEffect(&'static str),
    /// Not implemented yet: a task that sets it to anything but its default fails when it
    /// runs, saying so, rather than doing something else than the user asked.
    NotYet,
}

/// One argument of a module.
#[derive(Debug, Clone, Copy)]
pub struct Arg {
    pub name: &'static str,
    pub kind: Kind,
    pub aliases: &'static [&'static str],
    pub default: Option<Lit>,
    pub choices: &'static [&'static str],
    pub required: bool,
    pub no_log: bool,
    pub support: Support,
    /// Taken by the action plugin before the module sees the arguments (copy's `decrypt`):
    /// accepted, but not listed among the module's supported parameters.
    pub action_only: bool,
}

impl Arg {
    pub const fn new(name: &'static str, kind: Kind) -> Arg {
        Arg {
            name,
            kind,
            aliases: &[],
            default: None,
            choices: &[],
            required: false,
            no_log: false,
            support: Support::Honoured,
            action_only: false,
        }
    }
    pub const fn str(name: &'static str) -> Arg {
        Arg::new(name, Kind::Str)
    }
    pub const fn bool(name: &'static str) -> Arg {
        Arg::new(name, Kind::Bool)
    }
    pub const fn int(name: &'static str) -> Arg {
        Arg::new(name, Kind::Int)
    }
    pub const fn float(name: &'static str) -> Arg {
        Arg::new(name, Kind::Float)
    }
    pub const fn path(name: &'static str) -> Arg {
        Arg::new(name, Kind::Path)
    }
    pub const fn raw(name: &'static str) -> Arg {
        Arg::new(name, Kind::Raw)
    }
    pub const fn dict(name: &'static str) -> Arg {
        Arg::new(name, Kind::Dict)
    }
    pub const fn list(name: &'static str, elements: Elem) -> Arg {
        Arg::new(name, Kind::List(elements))
    }
    pub const fn aliases(mut self, aliases: &'static [&'static str]) -> Arg {
        self.aliases = aliases;
        self
    }
    pub const fn default(mut self, value: Lit) -> Arg {
        self.default = Some(value);
        self
    }
    pub const fn default_bool(self, value: bool) -> Arg {
        self.default(Lit::Bool(value))
    }
    pub const fn default_str(self, value: &'static str) -> Arg {
        self.default(Lit::Str(value))
    }
    pub const fn default_int(self, value: i64) -> Arg {
        self.default(Lit::Int(value))
    }
    pub const fn choices(mut self, choices: &'static [&'static str]) -> Arg {
        self.choices = choices;
        self
    }
    pub const fn required(mut self) -> Arg {
        self.required = true;
        self
    }
    pub const fn no_log(mut self) -> Arg {
        self.no_log = true;
        self
    }
    pub const fn no_effect(mut self, why: &'static str) -> Arg {
        self.support = Support::NoEffect(why);
        self
    }
    pub const fn action_only(mut self) -> Arg {
        self.action_only = true;
        self
    }
    pub const fn not_yet(mut self) -> Arg {
        self.support = Support::NotYet;
        self
    }
}

/// `required_if`: when `key` equals `value`, the `then` arguments (all, or one of them when
/// `any`) must be set.
#[derive(Debug, Clone, Copy)]
pub struct RequiredIf {
    pub key: &'static str,
    pub value: Lit,
    pub then: &'static [&'static str],
    pub any: bool,
}

/// How unknown argument names are reported: Ansible's modules and its action plugins word
/// it differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unknown {
    /// `Unsupported parameters for (NAME) module: ...`, NAME as the task wrote it.
    Module,
    /// The same, NAME fixed: action plugins that hand their arguments to another module
    /// (template and copy both report `ansible.legacy.copy`).
    ModuleAs(&'static str),
    /// `Invalid options for NAME: ...` (action plugins with a fixed set of names).
    InvalidOptions,
    /// `X is not a valid option in NAME` (include_vars).
    NotValidOptionIn,
    /// Any name is accepted (set_fact: the names are the variables).
    Accepted,
}

/// A module's declared arguments and the relations between them.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub args: &'static [Arg],
    pub mutually_exclusive: &'static [&'static [&'static str]],
    pub required_together: &'static [&'static [&'static str]],
    pub required_one_of: &'static [&'static [&'static str]],
    pub required_if: &'static [RequiredIf],
    /// `(key, needs)`: when `key` is set, every one of `needs` must be set too.
    pub required_by: &'static [(&'static str, &'static [&'static str])],
    pub unknown: Unknown,
    /// Whether the values of `no_log` arguments are masked out of the task's result, as
    /// AnsibleModule does; false where Ansible's action plugin takes them away before the
    /// module runs (copy's `content`), so Ansible never masks them.
    pub masks_no_log_values: bool,
}

impl Spec {
    pub const fn new(args: &'static [Arg]) -> Spec {
        Spec {
            args,
            mutually_exclusive: &[],
            required_together: &[],
            required_one_of: &[],
            required_if: &[],
            required_by: &[],
            unknown: Unknown::Module,
            masks_no_log_values: true,
        }
    }
    pub const fn mutually_exclusive(mut self, groups: &'static [&'static [&'static str]]) -> Spec {
        self.mutually_exclusive = groups;
        self
    }
    pub const fn required_together(mut self, groups: &'static [&'static [&'static str]]) -> Spec {
        self.required_together = groups;
        self
    }
    pub const fn required_one_of(mut self, groups: &'static [&'static [&'static str]]) -> Spec {
        self.required_one_of = groups;
        self
    }
    pub const fn required_if(mut self, rules: &'static [RequiredIf]) -> Spec {
        self.required_if = rules;
        self
    }
    pub const fn required_by(
        mut self,
        rules: &'static [(&'static str, &'static [&'static str])],
    ) -> Spec {
        self.required_by = rules;
        self
    }
    pub const fn unknown(mut self, unknown: Unknown) -> Spec {
        self.unknown = unknown;
        self
    }
    pub const fn no_log_values_unmasked(mut self) -> Spec {
        self.masks_no_log_values = false;
        self
    }

    /// The strings AnsibleModule keeps out of a result (`_list_no_log_values`): every
    /// scalar inside the value of a `no_log` argument, given by its name or an alias;
    /// empty strings, booleans and nulls are not secrets.
    pub fn no_log_values(&self, raw: &ModuleArgs) -> Vec<String> {
        let mut found = Vec::new();
        if !self.masks_no_log_values {
            return found;
        }
        for arg in self.args.iter().filter(|a| a.no_log) {
            let given = raw
                .iter()
                .filter(|(k, _)| *k == arg.name || arg.aliases.contains(&k.as_str()));
            for (_, value) in given {
                scalar_texts(value, &mut found);
            }
        }
        found.sort();
        found.dedup();
        // Longer first, so that a secret containing another is masked whole.
        found.sort_by_key(|s| std::cmp::Reverse(s.len()));
        found
    }

    /// The declared argument of this canonical name.
    pub fn arg(&self, name: &str) -> Option<&'static Arg> {
        self.args.iter().find(|a| a.name == name)
    }

    /// Whether `name` is an argument or an alias of one.
    pub fn accepts(&self, name: &str) -> bool {
        self.unknown == Unknown::Accepted
            || self
                .args
                .iter()
                .any(|a| a.name == name || a.aliases.contains(&name))
    }

    /// Checks and converts the templated arguments of a task written as `written_name`,
    /// with Ansible's first error message on failure.
    pub fn validate(&'static self, written_name: &str, raw: &ModuleArgs) -> Result<Args, String> {
        let mut values = Map::new();
        let mut unsupported: Vec<String> = Vec::new();
        let mut extra = Map::new();
        // Aliases first; where both an option and its alias are given, the option wins.
        for (key, value) in raw {
            match self
                .args
                .iter()
                .find(|a| a.name == key || a.aliases.contains(&key.as_str()))
            {
                Some(arg) => {
                    if arg.name == key || !values.contains_key(arg.name) {
                        values.insert(arg.name.to_string(), value.clone());
                    }
                }
                None if self.unknown == Unknown::Accepted => {
                    extra.insert(key.clone(), value.clone());
                }
                None => unsupported.push(key.clone()),
            }
        }
        let mut errors: Vec<String> = Vec::new();
        let is_set = |values: &Map<String, Value>, name: &str| {
            values.get(name).is_some_and(|v| !v.is_null())
        };
        // Ansible counts an argument as given when its name is there, even as null.
        let given = |values: &Map<String, Value>, name: &str| values.contains_key(name);
        for group in self.mutually_exclusive {
            if group.iter().filter(|n| given(&values, n)).count() > 1 {
                errors.push(format!(
                    "parameters are mutually exclusive: {}",
                    group.join("|")
                ));
            }
        }
        // Ansible fills in the defaults that are not None before it checks anything else.
        for arg in self.args {
            if let Some(default) = arg.default
                && !values.contains_key(arg.name)
            {
                values.insert(arg.name.to_string(), default.to_json());
            }
        }
        let mut missing: Vec<&str> = self
            .args
            .iter()
            .filter(|a| a.required && !given(&values, a.name))
            .map(|a| a.name)
            .collect();
        if !missing.is_empty() {
            missing.sort_unstable();
            errors.push(format!(
                "missing required arguments: {}",
                missing.join(", ")
            ));
        }
        for arg in self.args {
            let Some(value) = values.get(arg.name) else {
                continue;
            };
            if value.is_null() {
                continue;
            }
            match convert(arg.kind, value) {
                Ok(converted) => {
                    values.insert(arg.name.to_string(), converted);
                }
                Err(why) => errors.push(format!(
                    "argument '{}' is of type {} and we were unable to convert to {}: {why}",
                    arg.name,
                    python_type(value),
                    kind_name(arg.kind)
                )),
            }
        }
        for arg in self.args.iter().filter(|a| !a.choices.is_empty()) {
            if let Some(error) = values.get_mut(arg.name).and_then(|v| check_choice(arg, v)) {
                errors.push(error);
            }
        }
        for group in self.required_together {
            let set = group.iter().filter(|n| given(&values, n)).count();
            if set > 0 && set < group.len() {
                errors.push(format!(
                    "parameters are required together: {}",
                    group.join(", ")
                ));
            }
        }
        for group in self.required_one_of {
            if !group.iter().any(|n| given(&values, n)) {
                errors.push(format!(
                    "one of the following is required: {}",
                    group.join(", ")
                ));
            }
        }
        for rule in self.required_if {
            if values.get(rule.key) != Some(&rule.value.to_json()) {
                continue;
            }
            let absent: Vec<&str> = rule
                .then
                .iter()
                .copied()
                .filter(|n| !given(&values, n))
                .collect();
            let fails = if rule.any {
                absent.len() == rule.then.len()
            } else {
                !absent.is_empty()
            };
            if fails {
                let shown = match rule.value {
                    Lit::Bool(b) => if b { "True" } else { "False" }.to_string(),
                    Lit::Str(s) => s.to_string(),
                    Lit::Int(i) => i.to_string(),
                };
                errors.push(format!(
                    "{} is {shown} but {} of the following are missing: {}",
                    rule.key,
                    if rule.any { "any" } else { "all" },
                    if rule.any { rule.then } else { &absent[..] }.join(", ")
                ));
            }
        }
        for (key, needs) in self.required_by {
            if !is_set(&values, key) {
                continue;
            }
            let absent: Vec<&str> = needs
                .iter()
                .copied()
                .filter(|n| !is_set(&values, n))
                .collect();
            if !absent.is_empty() {
                errors.push(format!(
                    "missing parameter(s) required by '{key}': {}",
                    absent.join(", ")
                ));
            }
        }
        if !unsupported.is_empty() {
            unsupported.sort_unstable();
            errors.push(self.unsupported_message(written_name, &unsupported));
        }
        if let Some(first) = errors.into_iter().next() {
            return Err(first);
        }
        for arg in self.args {
            if arg.support == Support::NotYet
                && is_set(&values, arg.name)
                && arg.default.map(Lit::to_json).as_ref() != values.get(arg.name)
            {
                return Err(format!(
                    "turbo-play does not support the '{}' argument of {written_name} yet; remove it or run this task with ansible-playbook",
                    arg.name
                ));
            }
        }
        Ok(Args {
            spec: self,
            values,
            extra,
        })
    }

    fn unsupported_message(&self, written_name: &str, unknown: &[String]) -> String {
        let names = unknown.join(", ");
        let shown = || self.args.iter().filter(|a| !a.action_only);
        let mut supported: Vec<&str> = shown().map(|a| a.name).collect();
        supported.sort_unstable();
        let mut aliases: Vec<&str> = shown().flat_map(|a| a.aliases).copied().collect();
        aliases.sort_unstable();
        let mut listed = supported.join(", ");
        if !aliases.is_empty() {
            listed.push_str(&format!(" ({})", aliases.join(", ")));
        }
        match self.unknown {
            Unknown::Module => format!(
                "Unsupported parameters for ({written_name}) module: {names}. Supported parameters include: {listed}."
            ),
            Unknown::ModuleAs(name) => format!(
                "Unsupported parameters for ({name}) module: {names}. Supported parameters include: {listed}."
            ),
            Unknown::InvalidOptions => format!("Invalid options for {written_name}: {names}"),
            Unknown::NotValidOptionIn => {
                format!("{} is not a valid option in {written_name}", unknown[0])
            }
            Unknown::Accepted => String::new(),
        }
    }
}

/// Ansible's `BOOLEANS` in a fixed order (Ansible prints a set, in no fixed order).
const VALID_BOOLEANS: &str =
    "'y', 'yes', 'on', '1', 'true', 't', 1, 1.0, 'n', 'no', 'off', '0', 'false', 'f', 0, 0.0";

/// A boolean argument as `check_type_bool` reads it: Ansible's strict `boolean()`, with
/// its messages.
pub fn parse_bool(value: &Value) -> Result<bool, String> {
    booleans::strict(value).map_err(|why| match why {
        NotABoolean::Spelling => format!(
            "The value '{}' is not a valid boolean. Valid booleans include: {VALID_BOOLEANS}",
            python_text(value)
        ),
        NotABoolean::Type => format!("{} cannot be converted to a bool", python_class(value)),
    })
}

/// `value` converted as an argument `name` of `kind`, with Ansible's message when it
/// cannot be: for specs read at run time (validate_argument_spec, role argument specs).
pub(crate) fn convert_named(name: &str, kind: Kind, value: &Value) -> Result<Value, String> {
    convert(kind, value).map_err(|why| {
        format!(
            "argument '{name}' is of type {} and we were unable to convert to {}: {why}",
            python_type(value),
            kind_name(kind)
        )
    })
}

fn convert(kind: Kind, value: &Value) -> Result<Value, String> {
    match kind {
        Kind::Raw => Ok(value.clone()),
        Kind::Json => match value {
            Value::String(s) => Ok(Value::String(s.trim().to_string())),
            Value::Array(_) | Value::Object(_) => Ok(Value::String(crate::template::python_json(
                value, None, false,
            ))),
            other => Err(format!(
                "{} cannot be converted to a json string",
                python_class(other)
            )),
        },
        // check_type_str makes None '' (what templating None gave before 2.19).
        Kind::Str | Kind::Path if value.is_null() => Ok(Value::String(String::new())),
        Kind::Str | Kind::Path => Ok(Value::String(python_text(value))),
        Kind::Bool => parse_bool(value).map(Value::Bool),
        Kind::Int => to_int(value).map(Value::from),
        Kind::Float => to_float(value).map(Value::from),
        Kind::Dict => to_dict(value).map(Value::Object),
        Kind::List(elem) => {
            let items = match value {
                Value::Array(items) => items.clone(),
                Value::String(s) => s.split(',').map(|p| Value::String(p.into())).collect(),
                Value::Number(n) => vec![Value::String(n.to_string())],
                other => {
                    return Err(format!(
                        "{} cannot be converted to a list",
                        python_class(other)
                    ));
                }
            };
            let elem_kind = match elem {
                Elem::Str => Kind::Str,
                Elem::Int => Kind::Int,
                Elem::Path => Kind::Path,
                Elem::Float => Kind::Float,
                Elem::Bool => Kind::Bool,
                Elem::Raw => Kind::Raw,
                Elem::Dict => Kind::Dict,
            };
            items
                .iter()
                .map(|item| convert(elem_kind, item))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array)
        }
    }
}

fn to_int(value: &Value) -> Result<i64, String> {
    let bad = || format!("\"{}\" cannot be converted to an int", python_repr(value));
    match value {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Ok(i)
            } else {
                match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
                    _ => Err(bad()),
                }
            }
        }
        Value::Bool(b) => Ok(i64::from(*b)),
        Value::String(s) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i64>() {
                return Ok(i);
            }
            match t.parse::<f64>() {
                Ok(f) if f.is_finite() && f.fract() == 0.0 && !t.contains(['e', 'E']) => {
                    Ok(f as i64)
                }
                _ => Err(bad()),
            }
        }
        _ => Err(bad()),
    }
}

fn to_float(value: &Value) -> Result<f64, String> {
    match value {
        Value::Number(n) => n.as_f64().ok_or_else(|| "not a float".to_string()),
        Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
        Value::String(s) => s
            .trim()
            .parse::<f64>()
            .map_err(|_| format!("{} cannot be converted to a float", python_class(value))),
        other => Err(format!(
            "{} cannot be converted to a float",
            python_class(other)
        )),
    }
}

/// A dict, or a string of JSON or of `k=v` pairs (comma or space separated, quotes and
/// backslashes as Ansible's `check_type_dict`).
fn to_dict(value: &Value) -> Result<Map<String, Value>, String> {
    match value {
        Value::Object(m) => Ok(m.clone()),
        Value::String(s) if s.starts_with('{') => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err("unable to evaluate string as dictionary".into()),
        },
        Value::String(s) if s.contains('=') => {
            let mut fields = Vec::new();
            let mut field = String::new();
            let (mut quote, mut escape) = (None::<char>, false);
            for c in s.trim().chars() {
                if escape {
                    field.push(c);
                    escape = false;
                } else if c == '\\' {
                    escape = true;
                } else if quote.is_none() && (c == '\'' || c == '"') {
                    quote = Some(c);
                } else if quote == Some(c) {
                    quote = None;
                } else if quote.is_none() && (c == ',' || c == ' ') {
                    if !field.is_empty() {
                        fields.push(std::mem::take(&mut field));
                    }
                } else {
                    field.push(c);
                }
            }
            if !field.is_empty() {
                fields.push(field);
            }
            let mut out = Map::new();
            for f in fields {
                match f.split_once('=') {
                    Some((k, v)) => {
                        out.insert(k.to_string(), Value::String(v.to_string()));
                    }
                    None => {
                        return Err(
                            "unable to evaluate string in the \"key=value\" format as dictionary"
                                .into(),
                        );
                    }
                }
            }
            Ok(out)
        }
        Value::String(_) => Err("dictionary requested, could not parse JSON or key=value".into()),
        other => Err(format!(
            "{} cannot be converted to a dict",
            python_class(other)
        )),
    }
}

/// `choices`: one of them, or for a list every element. A YAML `True`/`False` that became
/// text is mapped back to the one boolean spelling among the choices, as Ansible does.
fn check_choice(arg: &Arg, value: &mut Value) -> Option<String> {
    let choices = arg.choices.join(", ");
    match value {
        Value::Null => None,
        Value::Array(items) => {
            let bad: Vec<String> = items
                .iter()
                .map(python_text)
                .filter(|t| !arg.choices.contains(&t.as_str()))
                .collect();
            (!bad.is_empty()).then(|| {
                format!(
                    "value of {} must be one or more of: {choices}. Got no match for: {}",
                    arg.name,
                    bad.join(", ")
                )
            })
        }
        other => {
            let mut text = python_text(other);
            if !arg.choices.contains(&text.as_str())
                && let Some(b) = booleans::strict_text(&text).filter(|_| {
                    matches!(other, Value::Bool(_)) || text == "True" || text == "False"
                })
            {
                let same: Vec<&&str> = arg
                    .choices
                    .iter()
                    .filter(|c| booleans::strict_text(c) == Some(b))
                    .collect();
                if let [only] = same[..] {
                    text = only.to_string();
                    *other = Value::String(text.clone());
                }
            }
            (!arg.choices.contains(&text.as_str())).then(|| {
                format!(
                    "value of {} must be one of: {choices}, got: {}",
                    arg.name,
                    python_text(other)
                )
            })
        }
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Str => "str",
        Kind::Bool => "bool",
        Kind::Int => "int",
        Kind::Float => "float",
        Kind::Path => "path",
        Kind::Raw => "raw",
        Kind::Dict => "dict",
        Kind::List(_) => "list",
        Kind::Json => "json",
    }
}

fn python_class(value: &Value) -> String {
    format!("<class '{}'>", python_type(value))
}

fn scalar_texts(value: &Value, into: &mut Vec<String>) {
    match value {
        Value::String(s) if !s.is_empty() => into.push(s.clone()),
        Value::Number(n) => into.push(python_text(&Value::Number(n.clone()))),
        Value::Array(items) => items.iter().for_each(|v| scalar_texts(v, into)),
        Value::Object(map) => map.values().for_each(|v| scalar_texts(v, into)),
        _ => {}
    }
}

/// AnsibleModule's `remove_values`: a string that is a secret becomes
/// `VALUE_SPECIFIED_IN_NO_LOG_PARAMETER`, a secret inside a string becomes `********`, a
/// number that shows a secret is replaced whole; keys, booleans and nulls stay.
pub fn mask_no_log_values(value: &mut Value, secrets: &[String]) {
    const WHOLE: &str = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER";
    if secrets.is_empty() {
        return;
    }
    match value {
        Value::String(s) => {
            if secrets.iter().any(|x| x == s) {
                *s = WHOLE.to_string();
            } else {
                for secret in secrets {
                    if s.contains(secret.as_str()) {
                        *s = s.replace(secret.as_str(), "********");
                    }
                }
            }
        }
        Value::Number(n) => {
            let text = python_text(&Value::Number(n.clone()));
            if secrets.iter().any(|x| text.contains(x.as_str())) {
                *value = Value::String(WHOLE.to_string());
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| mask_no_log_values(v, secrets)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| mask_no_log_values(v, secrets)),
        Value::Bool(_) | Value::Null => {}
    }
}

/// A value as Python's `str()` shows it (`True`, `1.5`, `['a']`).
pub fn python_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => crate::template::python_str(&minijinja::Value::from_serialize(other)),
    }
}

/// A value as Python's `repr()` shows it (`'abc'`).
pub(super) fn python_repr(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{s}'"),
        other => python_text(other),
    }
}

/// Validated arguments: canonical names only, converted to their declared kinds, defaults
/// filled in. Getters take the canonical name; asking for an undeclared one is a bug in the
/// module, caught by its tests.
#[derive(Debug, Clone)]
pub struct Args {
    spec: &'static Spec,
    values: Map<String, Value>,
    /// Names no argument declares, for specs that accept any (set_fact's variables).
    extra: Map<String, Value>,
}

/// Arguments compare by their values: the spec is the module's, one per module.
impl PartialEq for Args {
    fn eq(&self, other: &Args) -> bool {
        self.values == other.values && self.extra == other.extra
    }
}

impl Args {
    fn value(&self, name: &str) -> Option<&Value> {
        debug_assert!(
            self.spec.arg(name).is_some(),
            "argument '{name}' is not declared in the module's spec"
        );
        self.values.get(name).filter(|v| !v.is_null())
    }

    /// Whether the argument was given (or has a default).
    pub fn is_set(&self, name: &str) -> bool {
        self.value(name).is_some()
    }

    pub fn str(&self, name: &str) -> Option<&str> {
        self.value(name).and_then(Value::as_str)
    }

    /// A boolean argument; an unset one without a default is false.
    pub fn bool(&self, name: &str) -> bool {
        self.value(name).and_then(Value::as_bool).unwrap_or(false)
    }

    pub fn opt_bool(&self, name: &str) -> Option<bool> {
        self.value(name).and_then(Value::as_bool)
    }

    pub fn int(&self, name: &str) -> Option<i64> {
        self.value(name).and_then(Value::as_i64)
    }

    pub fn float(&self, name: &str) -> Option<f64> {
        self.value(name).and_then(Value::as_f64)
    }

    pub fn raw(&self, name: &str) -> Option<&Value> {
        self.value(name)
    }

    pub fn dict(&self, name: &str) -> Option<&Map<String, Value>> {
        self.value(name).and_then(Value::as_object)
    }

    pub fn list(&self, name: &str) -> &[Value] {
        self.value(name)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// A list of strings (elements `str` or `path`).
    pub fn str_list(&self, name: &str) -> Vec<String> {
        self.list(name)
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| python_text(v))
            })
            .collect()
    }

    /// Every validated argument by canonical name, as `invocation.module_args` shows them.
    pub fn values(&self) -> &Map<String, Value> {
        &self.values
    }

    /// The names no argument declares (only for specs that accept any name).
    pub fn extra(&self) -> &Map<String, Value> {
        &self.extra
    }
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
