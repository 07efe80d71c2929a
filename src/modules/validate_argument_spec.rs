//! `validate_argument_spec`: check variables (or `provided_arguments`) against an
//! argument spec written in the playbook, as a role's `meta/argument_specs.yml` entry
//! point is written. The conversions and their messages are the module layer's own
//! ([`spec::convert_named`]); every error is reported, as Ansible's validator does.

use serde_json::{Map, Value, json};

use super::spec::{self, Arg, Elem, Kind, Spec, Unknown};
use super::{Args, Caps, Module, ModuleError, Plan, PlanContext, TaskOutcome};
use crate::template::TemplateError;

pub struct ValidateArgumentSpec;

static SPEC: Spec = Spec::new(&[
    Arg::raw("argument_spec").required(),
    Arg::raw("provided_arguments"),
    Arg::raw("validate_args_context").action_only(),
])
.unknown(Unknown::Accepted);

impl Module for ValidateArgumentSpec {
    fn name(&self) -> &'static str {
        "validate_argument_spec"
    }

    fn spec(&self) -> &'static Spec {
        &SPEC
    }

    fn caps(&self) -> Caps {
        Caps::TASK.no_connection()
    }

    fn plan(&self, args: &Args, ctx: &PlanContext) -> Result<Plan, ModuleError> {
        let Some(Value::Object(argument_spec)) = args.raw("argument_spec") else {
            return Err(ModuleError::Invalid(format!(
                "Incorrect type for argument_spec, expected dict and got {}",
                python_class(args.raw("argument_spec"))
            )));
        };
        let provided = match args.raw("provided_arguments") {
            None => Map::new(),
            Some(Value::Object(p)) => p.clone(),
            Some(other) => {
                return Err(ModuleError::Invalid(format!(
                    "Incorrect type for provided_arguments, expected dict and got {}",
                    python_class(Some(other))
                )));
            }
        };
        // The task's variables named in the spec, then what was provided over them.
        let mut values = Map::new();
        // Only variables: an expression would find Jinja's globals (`debug`, `range`) too.
        if let (Some(templar), Some(vars)) = (ctx.templar, ctx.vars) {
            for name in argument_spec.keys() {
                let Ok(found) = vars.get_attr(name) else {
                    continue;
                };
                if found.is_undefined() {
                    continue;
                }
                match templar.eval_expr(name, vars) {
                    Ok(v) => {
                        values.insert(name.clone(), v);
                    }
                    Err(TemplateError::Undefined { .. }) | Err(TemplateError::Syntax { .. }) => {}
                    Err(e) => return Err(ModuleError::Invalid(e.to_string())),
                }
            }
        }
        values.extend(provided);
        let errors = validate(argument_spec, &mut values);
        let mut out = TaskOutcome::default();
        out.data.insert(
            "validate_args_context".into(),
            args.raw("validate_args_context")
                .cloned()
                .unwrap_or_else(|| json!({})),
        );
        if errors.is_empty() {
            out.msg = Some("The arg spec validation passed".into());
        } else {
            out.failed = true;
            out.msg = Some(format!(
                "Validation of arguments failed:\n{}",
                errors.join("\n")
            ));
            out.data.insert(
                "argument_spec_data".into(),
                Value::Object(argument_spec.clone()),
            );
            out.data.insert("argument_errors".into(), json!(errors));
        }
        Ok(Plan::Done(out))
    }
}

fn python_class(value: Option<&Value>) -> String {
    let name = value.map_or("NoneType", crate::template::python_type);
    format!("<class '{name}'>")
}

/// The spec's `type` (and a list's `elements`) as the module layer's kinds.
fn kind_of(attrs: &Map<String, Value>) -> Result<Kind, String> {
    let text = |key: &str| attrs.get(key).and_then(Value::as_str);
    Ok(match text("type").unwrap_or("str") {
        "str" => Kind::Str,
        "bool" => Kind::Bool,
        "int" => Kind::Int,
        "float" => Kind::Float,
        "path" => Kind::Path,
        "raw" => Kind::Raw,
        "dict" => Kind::Dict,
        "json" | "jsonarg" => Kind::Json,
        "list" => Kind::List(match text("elements") {
            None | Some("str") => Elem::Str,
            Some("int") => Elem::Int,
            Some("float") => Elem::Float,
            Some("bool") => Elem::Bool,
            Some("path") => Elem::Path,
            Some("raw") => Elem::Raw,
            Some("dict") => Elem::Dict,
            Some(other) => {
                return Err(format!(
                    "list elements of type {other} are not supported by turbo-play yet"
                ));
            }
        }),
        other => {
            return Err(format!(
                "argument type {other} is not supported by turbo-play yet"
            ));
        }
    })
}

/// Every error, in the validator's order: required, then types, then choices, then the
/// options of dict options (level by level), and last the names no spec knows.
fn validate(argument_spec: &Map<String, Value>, values: &mut Map<String, Value>) -> Vec<String> {
    let mut errors = Vec::new();
    let mut unsupported = Vec::new();
    validate_level(argument_spec, values, &[], &mut errors, &mut unsupported);
    if let Some((_, supported)) = unsupported.last() {
        let mut names: Vec<&str> = unsupported.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        errors.push(format!(
            "{}. Supported parameters include: {supported}.",
            names.join(", ")
        ));
    }
    errors
}

/// The names a level's spec knows, as Ansible lists them: sorted, aliases in parentheses.
fn supported_names(argument_spec: &Map<String, Value>) -> String {
    let mut names: Vec<&str> = argument_spec.keys().map(String::as_str).collect();
    names.sort_unstable();
    let mut aliases: Vec<&str> = argument_spec
        .values()
        .filter_map(|a| a.get("aliases").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    aliases.sort_unstable();
    let mut text = names.join(", ");
    if !aliases.is_empty() {
        text.push_str(&format!(" ({})", aliases.join(", ")));
    }
    text
}

/// One level of a spec: `context` names the dict options it is inside (empty at the
/// top), which Ansible's messages quote; names no spec knows are collected, with
/// their path, for one message at the end.
fn validate_level(
    argument_spec: &Map<String, Value>,
    values: &mut Map<String, Value>,
    context: &[String],
    errors: &mut Vec<String>,
    unsupported: &mut Vec<(String, String)>,
) {
    let attrs = |name: &str| -> Map<String, Value> {
        argument_spec
            .get(name)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let found_in = if context.is_empty() {
        String::new()
    } else {
        format!(" found in {}", context.join(" -> "))
    };
    // An alias gives its value to the option's name.
    for (name, spec_attrs) in argument_spec {
        for alias in spec_attrs
            .get("aliases")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if let Some(value) = values.get(alias).cloned()
                && !values.contains_key(name)
            {
                values.insert(name.clone(), value);
            }
        }
    }
    let known = |key: &str| {
        argument_spec.contains_key(key)
            || argument_spec.values().any(|a| {
                a.get("aliases")
                    .and_then(Value::as_array)
                    .is_some_and(|l| l.iter().any(|x| x.as_str() == Some(key)))
            })
    };
    for key in values.keys().filter(|k| !known(k)) {
        let path: Vec<&str> = context
            .iter()
            .map(String::as_str)
            .chain([key.as_str()])
            .collect();
        unsupported.push((path.join("."), supported_names(argument_spec)));
    }
    for (name, _) in argument_spec {
        if let Some(default) = attrs(name).get("default")
            && !default.is_null()
            && !values.contains_key(name)
        {
            values.insert(name.clone(), default.clone());
        }
    }
    let mut missing: Vec<&str> = argument_spec
        .keys()
        .filter(|n| {
            attrs(n)
                .get("required")
                .is_some_and(crate::booleans::lenient)
        })
        .filter(|n| !values.contains_key(*n))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        missing.sort_unstable();
        errors.push(format!(
            "missing required arguments: {}{found_in}",
            missing.join(", ")
        ));
    }
    for name in argument_spec.keys() {
        let Some(value) = values.get(name) else {
            continue;
        };
        // None is checked like any value where the option is required or has a default
        // (a required int given `~` fails), as Ansible's type validation does.
        let spec_attrs = attrs(name);
        let optional = !spec_attrs
            .get("required")
            .is_some_and(crate::booleans::lenient)
            && spec_attrs.get("default").is_none_or(Value::is_null);
        if value.is_null() && optional {
            continue;
        }
        let kind = match kind_of(&spec_attrs) {
            Ok(kind) => kind,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        match spec::convert_named(name, kind, value) {
            Ok(converted) => {
                values.insert(name.clone(), converted);
            }
            Err(e) if context.is_empty() => errors.push(e),
            Err(e) => errors.push(e.replacen(
                " and we were unable",
                &format!(" found in '{}'. and we were unable", context.join(" -> ")),
                1,
            )),
        }
    }
    for name in argument_spec.keys() {
        let Some(Value::Array(choices)) = attrs(name).get("choices").cloned() else {
            continue;
        };
        let Some(value) = values.get(name).filter(|v| !v.is_null()) else {
            continue;
        };
        let listed: Vec<String> = choices.iter().map(spec::python_text).collect();
        let fits = |v: &Value| listed.contains(&spec::python_text(v));
        match value {
            Value::Array(items) => {
                let bad: Vec<String> = items
                    .iter()
                    .filter(|v| !fits(v))
                    .map(spec::python_text)
                    .collect();
                if !bad.is_empty() {
                    errors.push(format!(
                        "value of {name} must be one or more of: {}. Got no match for: {}{found_in}",
                        listed.join(", "),
                        bad.join(", ")
                    ));
                }
            }
            other if !fits(other) => errors.push(format!(
                "value of {name} must be one of: {}, got: {}{found_in}",
                listed.join(", "),
                spec::python_text(other)
            )),
            _ => {}
        }
    }
    // The options of dict options (and of lists of dicts), each value a level of its own.
    for name in argument_spec.keys() {
        let spec_attrs = attrs(name);
        let Some(Value::Object(options)) = spec_attrs.get("options") else {
            continue;
        };
        let apply_defaults = spec_attrs
            .get("apply_defaults")
            .is_some_and(crate::booleans::lenient);
        let value = match values.get(name) {
            None | Some(Value::Null) if apply_defaults => Value::Object(Map::new()),
            None | Some(Value::Null) => continue,
            Some(v) => v.clone(),
        };
        let mut inner = context.to_vec();
        inner.push(name.clone());
        match value {
            Value::Object(mut sub) => {
                validate_level(options, &mut sub, &inner, errors, unsupported);
                values.insert(name.clone(), Value::Object(sub));
            }
            Value::Array(items) => {
                let mut checked = Vec::new();
                for item in items {
                    match item {
                        Value::Object(mut sub) => {
                            validate_level(options, &mut sub, &inner, errors, unsupported);
                            checked.push(Value::Object(sub));
                        }
                        other => {
                            errors.push(format!(
                                "value of '{name}' must be of type dict or list of dicts"
                            ));
                            checked.push(other);
                        }
                    }
                }
                values.insert(name.clone(), Value::Array(checked));
            }
            // Its type error was reported above.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn outcome(v: Value) -> TaskOutcome {
        let ctx = PlanContext::new(Path::new("/"));
        match crate::modules::try_plan(&ValidateArgumentSpec, v, &ctx).unwrap() {
            Plan::Done(out) => out,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn passes_and_fails_with_every_error() {
        let spec = json!({
            "port": {"type": "int", "required": true},
            "mode": {"choices": ["a", "b"], "default": "a"},
            "names": {"type": "list", "elements": "str"},
            "debug": {"type": "bool"},
        });
        let ok = outcome(json!({"argument_spec": spec, "provided_arguments": {"port": "80"}}));
        assert!(!ok.failed);
        assert_eq!(ok.msg.as_deref(), Some("The arg spec validation passed"));
        let bad = outcome(json!({
            "argument_spec": spec,
            "provided_arguments": {"mode": "c", "debug": "maybe"},
        }));
        assert!(bad.failed);
        assert_eq!(
            bad.data["argument_errors"][0],
            json!("missing required arguments: port")
        );
        assert_eq!(
            bad.data["argument_errors"][2],
            json!("value of mode must be one of: a, b, got: c")
        );
        assert!(
            bad.msg
                .unwrap()
                .starts_with("Validation of arguments failed:\nmissing required arguments: port\nargument 'debug' is of type str and we were unable to convert to bool: ")
        );
    }

    #[test]
    fn none_is_checked_where_the_option_is_required_or_has_a_default() {
        let spec = json!({
            "i": {"type": "int", "required": true},
            "l": {"type": "list", "required": true},
            "d": {"type": "dict", "default": {"a": 1}},
            "s": {"type": "str", "required": true},
            "r": {"type": "raw", "required": true},
            "optional": {"type": "int"},
        });
        let provided =
            json!({"i": null, "l": null, "d": null, "s": null, "r": null, "optional": null});
        let bad = outcome(json!({"argument_spec": spec, "provided_arguments": provided}));
        assert_eq!(
            bad.data["argument_errors"],
            json!([
                "argument 'i' is of type NoneType and we were unable to convert to int: \"None\" cannot be converted to an int",
                "argument 'l' is of type NoneType and we were unable to convert to list: <class 'NoneType'> cannot be converted to a list",
                "argument 'd' is of type NoneType and we were unable to convert to dict: <class 'NoneType'> cannot be converted to a dict",
            ])
        );
    }

    #[test]
    fn dict_options_are_checked_level_by_level_and_unknown_names_reported_last() {
        let spec = json!({
            "outer": {"type": "dict", "options": {
                "second": {"type": "dict", "options": {
                    "third": {"type": "int", "required": true},
                }},
                "flag": {"type": "bool", "default": true},
            }},
            "doc": {"type": "json"},
            "floats": {"type": "list", "elements": "float"},
        });
        let bad = outcome(json!({"argument_spec": spec, "provided_arguments": {
            "outer": {"second": {"nope": 1}, "flag": "maybe"},
            "doc": {"a": [1, 2]},
            "floats": ["1.5"],
            "zzz": 1,
        }}));
        let errors = bad.data["argument_errors"].as_array().unwrap();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors[0]
                .as_str()
                .unwrap()
                .starts_with("argument 'flag' is of type str found in 'outer'. and we were unable to convert to bool: The value 'maybe' is not a valid boolean."),
            "{errors:?}"
        );
        assert_eq!(
            errors[1],
            json!("missing required arguments: third found in outer -> second")
        );
        assert_eq!(
            errors[2],
            json!("outer.second.nope, zzz. Supported parameters include: third.")
        );
        let ok = outcome(json!({"argument_spec": spec, "provided_arguments": {
            "doc": {"a": [1, 2]}, "floats": ["1.5", 2],
        }}));
        assert!(!ok.failed, "{:?}", ok.msg);
    }
}
