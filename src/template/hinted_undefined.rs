//! Ansible's undefined values that say why they are undefined: `undef(hint)`, and what a
//! lookup returns for what it did not find (`lookup('env', 'X', default=undef())` is
//! "The environment variable 'X' is not set."). Using one fails with its hint, as using
//! any undefined value fails; `default`, `defined` and `undefined` take it for undefined.
//!
//! minijinja's undefined value carries nothing, so a hinted one is an invalid value
//! holding an undefined error whose detail is the hint: invalid values pass through
//! function calls and filters untouched and fail wherever the engine uses them.

use minijinja::value::{Kwargs, Rest, Value as MjValue, ValueKind};
use minijinja::{Environment, Error as MjError, ErrorKind, State};
use serde::Deserialize;

/// `undef()`'s hint when none is given (Ansible's `_DEFAULT_UNDEF`), which lookups that
/// take a default replace with their own.
pub const NO_HINT: &str = "Mandatory variable has not been overridden";

/// How minijinja words an undefined error before its detail.
const KIND_WORDS: &str = "undefined value: ";

pub fn register(env: &mut Environment<'static>) {
    env.add_function("undef", undef);
    env.add_filter("default", default);
    env.add_filter("d", default);
    env.add_test("defined", |v: &MjValue| !is_undefined(v));
    env.add_test("undefined", |v: &MjValue| is_undefined(v));
}

/// An undefined value whose use fails with `hint`.
pub fn hinted(hint: &str) -> MjValue {
    MjValue::from(MjError::new(ErrorKind::UndefinedError, hint.to_string()))
}

/// The hint of a hinted undefined value.
pub fn hint(value: &MjValue) -> Option<String> {
    if value.kind() != ValueKind::Invalid {
        return None;
    }
    // minijinja hands an invalid value's error out only through deserializing it.
    let error = serde::de::IgnoredAny::deserialize(value.clone()).err()?;
    let text = error.detail()?;
    text.strip_prefix(KIND_WORDS).map(str::to_string)
}

/// Undefined, plainly or with a hint.
pub fn is_undefined(value: &MjValue) -> bool {
    value.is_undefined() || hint(value).is_some()
}

/// The error a template fails with where it prints a hinted undefined value.
pub fn error(hint: &str) -> MjError {
    MjError::new(ErrorKind::UndefinedError, hint.to_string()).with_source(Printed)
}

/// The hint of an error [`error`] made.
pub fn hint_of_error(error: &MjError) -> Option<&str> {
    use std::error::Error;
    error.source()?.downcast_ref::<Printed>()?;
    error.detail()
}

/// What marks the error of a hinted undefined value printed.
#[derive(Debug)]
struct Printed;

impl std::fmt::Display for Printed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a hinted undefined value was printed")
    }
}

impl std::error::Error for Printed {}

/// `undef(hint=None)`.
fn undef(hint: Option<MjValue>, kwargs: Kwargs) -> Result<MjValue, MjError> {
    let named: Option<MjValue> = kwargs.get("hint")?;
    kwargs.assert_all_used()?;
    let hint = match hint.or(named) {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => match v.as_str() {
            Some(text) => Some(text.to_string()),
            None => {
                return Err(MjError::new(
                    ErrorKind::InvalidOperation,
                    format!(
                        "The 'hint' argument must be of type 'str' or 'NoneType', not '{}'.",
                        super::filters::mj_type_name(&v)
                    ),
                ));
            }
        },
    };
    Ok(hinted(
        hint.as_deref().filter(|h| !h.is_empty()).unwrap_or(NO_HINT),
    ))
}

/// Jinja's `default`, for which a hinted undefined value is undefined too.
fn default(state: &State, value: &MjValue, args: Rest<MjValue>) -> Result<MjValue, MjError> {
    let value = if hint(value).is_some() {
        MjValue::UNDEFINED
    } else {
        value.clone()
    };
    minijinja::filters::default(state, &value, args)
}

#[cfg(test)]
mod tests {
    use crate::template::Templar;

    #[test]
    fn a_hinted_undefined_fails_with_its_hint_and_is_undefined_to_default() {
        let t = Templar::new();
        let vars = minijinja::Value::from(());
        let render = |text: &str| t.render_str(text, &vars);
        for (text, hint) in [
            ("{{ undef('set x') }}", "set x"),
            ("{{ undef(hint='set x') }}", "set x"),
            ("{{ undef() }}", super::NO_HINT),
            ("a {{ undef('in text') }} b", "in text"),
        ] {
            let err = render(text).unwrap_err();
            assert_eq!(err.cause(), hint, "{text}");
        }
        assert_eq!(
            render("{{ undef('h') | default('d') }} {{ undef('h') is defined }} {{ undef() is undefined }} {{ 1 is defined }}")
                .unwrap(),
            "d False True True"
        );
        let err = t.eval_expr("undef('as an expression')", &vars).unwrap_err();
        assert_eq!(err.to_string(), "as an expression");
    }
}
