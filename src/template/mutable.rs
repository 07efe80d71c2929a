//! Python's mutable dicts and lists in templates: Ansible's Jinja runs on Python objects,
//! so `{% set d = {} %}{% set _ = d.update({k: v}) %}` and `l.append(x)` change `d` and
//! `l` in place, an idiom templates use to build a value in a loop. minijinja's maps and
//! lists cannot change, so the value a `{% set %}` gives a name becomes a [`MutableMap`]
//! or [`MutableList`] (only in templates that call one of Python's mutating methods at
//! all: [`rewrite_sets`]). They are maps and lists to everything else; a map or list read
//! out of one becomes mutable too, and stays in it, so `d.inner.append(x)` changes `d`,
//! as in Python. Names bound to one object share it, as Python's do.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};

use indexmap::IndexMap;
use minijinja::value::{Enumerator, Kwargs, Object, ObjectRepr, Value as MjValue, from_args};
use minijinja::{Error as MjError, ErrorKind, State};

/// The function a rewritten `{% set name = expr %}` calls on its value.
pub const MUTABLE_FN: &str = "__tp_mutable";

/// Python's methods that change a dict or a list: a template calling none of them has no
/// use for mutable values.
const MUTATORS: &[&str] = &[
    ".update(",
    ".setdefault(",
    ".pop(",
    ".popitem(",
    ".clear(",
    ".append(",
    ".extend(",
    ".insert(",
    ".remove(",
    ".reverse(",
];

/// minijinja's own map, as its literals and filters build it.
type PlainMap = IndexMap<MjValue, MjValue>;

#[derive(Debug, Default)]
pub struct MutableMap(Mutex<PlainMap>);

#[derive(Debug, Default)]
pub struct MutableList(Mutex<Vec<MjValue>>);

/// `value` as a mutable map or list when it is a plain one; anything else (a string, a
/// lazy object such as `hostvars`, one already mutable) as it is.
pub fn mutable(value: MjValue) -> MjValue {
    let Some(object) = value.as_object() else {
        return value;
    };
    if let Some(map) = object.downcast_ref::<PlainMap>() {
        return MjValue::from_object(MutableMap(Mutex::new(map.clone())));
    }
    if let Some(items) = object.downcast_ref::<Vec<MjValue>>() {
        return MjValue::from_object(MutableList(Mutex::new(items.clone())));
    }
    value
}

/// `{% set name = expr %}` as `{% set name = __tp_mutable(expr) %}` in a template that
/// calls a mutating method (see [`MUTATORS`]).
pub fn rewrite_sets(source: &str) -> Cow<'_, str> {
    if !source.contains("set") || !MUTATORS.iter().any(|m| source.contains(m)) {
        return Cow::Borrowed(source);
    }
    let mut out = String::with_capacity(source.len() + 64);
    let mut rest = source;
    while let Some(open) = rest.find("{%") {
        let (before, tag) = rest.split_at(open);
        out.push_str(before);
        let body_start = 2 + usize::from(tag[2..].starts_with(['-', '+']));
        let Some(end) = super::chain::tag_end(&tag[body_start..], "%}") else {
            out.push_str(tag);
            return Cow::Owned(out);
        };
        let body = &tag[body_start..body_start + end];
        let close_at = body_start + end;
        out.push_str(&tag[..body_start]);
        match set_value(body) {
            Some((head, expr, trail)) => {
                out.push_str(head);
                out.push_str(MUTABLE_FN);
                out.push('(');
                out.push_str(expr);
                out.push(')');
                out.push_str(trail);
            }
            None => out.push_str(body),
        }
        out.push_str("%}");
        rest = &tag[close_at + 2..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// A `set NAME = EXPR` tag body split around EXPR (a trailing `-` for whitespace control
/// stays outside it).
fn set_value(body: &str) -> Option<(&str, &str, &str)> {
    let trimmed = body.trim_start();
    let after_set = trimmed.strip_prefix("set")?;
    if !after_set.starts_with(char::is_whitespace) {
        return None;
    }
    let after_set = after_set.trim_start();
    let name_len = after_set
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(after_set.len());
    if name_len == 0 {
        return None;
    }
    let after_name = after_set[name_len..].trim_start();
    let expr = after_name.strip_prefix('=')?;
    if expr.starts_with('=') {
        return None;
    }
    let expr_start = body.len() - expr.trim_start().len();
    let expr_body = body[expr_start..].trim_end();
    let expr_body = expr_body.strip_suffix('-').unwrap_or(expr_body);
    if expr_body.trim().is_empty() {
        return None;
    }
    let expr_end = expr_start + expr_body.trim_end().len();
    Some((
        &body[..expr_start],
        &body[expr_start..expr_end],
        &body[expr_end..],
    ))
}

fn error(message: impl Into<String>) -> MjError {
    MjError::new(ErrorKind::InvalidOperation, message.into())
}

/// Python's `KeyError` as Ansible shows it.
fn key_error(key: &MjValue) -> MjError {
    error(format!("KeyError: {}", super::python_repr_of(key)))
}

fn none() -> MjValue {
    MjValue::from(())
}

impl MutableMap {
    fn lock(&self) -> std::sync::MutexGuard<'_, PlainMap> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Object for MutableMap {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &MjValue) -> Option<MjValue> {
        let mut map = self.lock();
        let slot = map.get_mut(key)?;
        // A map or list read out of this one is changed in place too.
        let value = mutable(slot.clone());
        *slot = value.clone();
        Some(value)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.lock().keys().cloned().collect())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.lock().len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[MjValue],
    ) -> Result<MjValue, MjError> {
        match method {
            "update" => {
                let (other, kwargs): (Option<MjValue>, Kwargs) = from_args(args)?;
                let mut pairs: Vec<(MjValue, MjValue)> = Vec::new();
                if let Some(other) = other {
                    pairs.extend(pairs_of(&other)?);
                }
                for key in kwargs.args() {
                    pairs.push((MjValue::from(key), kwargs.get::<MjValue>(key)?));
                }
                let mut map = self.lock();
                for (k, v) in pairs {
                    map.insert(k, v);
                }
                Ok(none())
            }
            "setdefault" => {
                let (key, default): (MjValue, Option<MjValue>) = from_args(args)?;
                let mut map = self.lock();
                Ok(map
                    .entry(key)
                    .or_insert_with(|| default.unwrap_or_else(none))
                    .clone())
            }
            "pop" => {
                let (key, default): (MjValue, Option<MjValue>) = from_args(args)?;
                match (self.lock().shift_remove(&key), default) {
                    (Some(value), _) | (None, Some(value)) => Ok(value),
                    (None, None) => Err(key_error(&key)),
                }
            }
            "popitem" => {
                let () = from_args(args)?;
                self.lock()
                    .pop()
                    .map(|(k, v)| MjValue::from(vec![k, v]))
                    .ok_or_else(|| error("KeyError: 'popitem(): dictionary is empty'"))
            }
            "clear" => {
                let () = from_args(args)?;
                self.lock().clear();
                Ok(none())
            }
            "copy" => {
                let () = from_args(args)?;
                Ok(MjValue::from_object(MutableMap(Mutex::new(
                    self.lock().clone(),
                ))))
            }
            _ => Err(MjError::from(ErrorKind::UnknownMethod)),
        }
    }
}

/// The pairs `dict.update` takes: a mapping's items, or a sequence of pairs.
fn pairs_of(other: &MjValue) -> Result<Vec<(MjValue, MjValue)>, MjError> {
    if let Some(object) = other.as_object()
        && let Some(pairs) = object.try_iter_pairs()
    {
        return Ok(pairs.collect());
    }
    let items = other.try_iter().map_err(|_| {
        error(format!(
            "'{}' object is not iterable",
            super::filters::mj_type_name(other)
        ))
    })?;
    items
        .map(|pair| {
            let mut parts = pair.try_iter().map_err(|e| error(e.to_string()))?;
            match (parts.next(), parts.next(), parts.next()) {
                (Some(k), Some(v), None) => Ok((k, v)),
                _ => Err(error(
                    "dictionary update sequence element has the wrong length; 2 is required",
                )),
            }
        })
        .collect()
}

impl MutableList {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<MjValue>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A Python index (negative from the end) into a list of `len` items.
fn index(i: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    let i = if i < 0 { i + len } else { i };
    (0..len).contains(&i).then_some(i as usize)
}

impl Object for MutableList {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Seq
    }

    fn get_value(self: &Arc<Self>, key: &MjValue) -> Option<MjValue> {
        let i = i64::try_from(key.clone()).ok()?;
        let mut items = self.lock();
        let at = index(i, items.len())?;
        let value = mutable(items[at].clone());
        items[at] = value.clone();
        Some(value)
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Seq(self.lock().len())
    }

    fn enumerator_len(self: &Arc<Self>) -> Option<usize> {
        Some(self.lock().len())
    }

    fn call_method(
        self: &Arc<Self>,
        _state: &State<'_, '_>,
        method: &str,
        args: &[MjValue],
    ) -> Result<MjValue, MjError> {
        match method {
            "append" => {
                let (item,): (MjValue,) = from_args(args)?;
                self.lock().push(item);
                Ok(none())
            }
            "extend" => {
                let (more,): (MjValue,) = from_args(args)?;
                let items: Vec<MjValue> = more
                    .try_iter()
                    .map_err(|_| {
                        error(format!(
                            "'{}' object is not iterable",
                            super::filters::mj_type_name(&more)
                        ))
                    })?
                    .collect();
                self.lock().extend(items);
                Ok(none())
            }
            "insert" => {
                let (at, item): (i64, MjValue) = from_args(args)?;
                let mut items = self.lock();
                let len = i64::try_from(items.len()).unwrap_or(i64::MAX);
                let at = if at < 0 {
                    (at + len).max(0)
                } else {
                    at.min(len)
                };
                items.insert(at as usize, item);
                Ok(none())
            }
            "pop" => {
                let (at,): (Option<i64>,) = from_args(args)?;
                let mut items = self.lock();
                if items.is_empty() {
                    return Err(error("IndexError: pop from empty list"));
                }
                let at = index(at.unwrap_or(-1), items.len())
                    .ok_or_else(|| error("IndexError: pop index out of range"))?;
                Ok(items.remove(at))
            }
            "remove" => {
                let (item,): (MjValue,) = from_args(args)?;
                let mut items = self.lock();
                let at = items
                    .iter()
                    .position(|x| *x == item)
                    .ok_or_else(|| error("ValueError: list.remove(x): x not in list"))?;
                items.remove(at);
                Ok(none())
            }
            "clear" => {
                let () = from_args(args)?;
                self.lock().clear();
                Ok(none())
            }
            "reverse" => {
                let () = from_args(args)?;
                self.lock().reverse();
                Ok(none())
            }
            "copy" => {
                let () = from_args(args)?;
                Ok(MjValue::from_object(MutableList(Mutex::new(
                    self.lock().clone(),
                ))))
            }
            _ => Err(MjError::from(ErrorKind::UnknownMethod)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::Templar;

    #[test]
    fn only_sets_of_templates_that_mutate_are_rewritten() {
        assert_eq!(
            rewrite_sets("{% set d = {} %}{%- set l = [1] -%}{{ d.update(l) }}"),
            "{% set d = __tp_mutable({}) %}{%- set l = __tp_mutable([1]) -%}{{ d.update(l) }}"
        );
        for text in [
            "{% set d = {} %}{{ d }}",
            "{% set a, b = 1, 2 %}{{ x.update(1) }}",
            "{% set x %}block{% endset %}{{ x.append(1) }}",
            "{% if a == b %}{{ l.append('%}') }}{% endif %}",
        ] {
            assert_eq!(rewrite_sets(text), text);
        }
    }

    /// What ansible-core 2.21.5 renders for the same templates.
    #[test]
    fn dicts_and_lists_change_in_place_as_in_python() {
        let t = Templar::new();
        let vars = minijinja::Value::from_serialize(serde_json::json!({"items": ["a", "b"]}));
        let render = |text: &str| t.render_str(text, &vars).unwrap();
        assert_eq!(
            render(
                "{% set d = {} %}{% set _ = d.update({'k': 1}) %}{% set _ = d.update(k2=2) %}\
                 {% for x in items %}{% set _ = d.update({x: loop.index}) %}{% endfor %}{{ d }}"
            ),
            "{'k': 1, 'k2': 2, 'a': 1, 'b': 2}"
        );
        assert_eq!(
            render(
                "{% set l = [] %}{% set _ = l.append(3) %}{% set _ = l.extend([4, 5]) %}\
                 {% set _ = l.insert(0, 1) %}{{ l.pop() }} {{ l }} {{ l | length }}"
            ),
            "5 [1, 3, 4] 3"
        );
        assert_eq!(
            render(
                "{% set d = {'l': []} %}{% set e = d %}{% set _ = e.l.append(1) %}\
                 {{ d }} {{ d.setdefault('n', 0) }} {{ d.get('n') }} {{ d.keys() | list }}"
            ),
            "{'l': [1]} 0 0 ['l', 'n']"
        );
        assert_eq!(
            t.render_value(
                &serde_json::json!("{% set d = {} %}{% set _ = d.update(a=1) %}{{ d }}"),
                &vars
            )
            .unwrap(),
            serde_json::json!({"a": 1})
        );
        let err = t
            .render_str("{% set d = {} %}{{ d.pop('x') }}", &vars)
            .unwrap_err();
        assert_eq!(err.cause(), "KeyError: 'x'");
    }
}
