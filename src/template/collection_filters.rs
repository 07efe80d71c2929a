//! The filters over lists and dicts: set operations (`union`, `difference`, `intersect`,
//! `symmetric_difference`), `flatten`, `min`/`max`/`sum`, `combine`, `dict2items` and
//! `items2dict`, as Ansible and Jinja define them.

use minijinja::Error as MjError;
use minijinja::value::{Kwargs, Rest, Value as MjValue, ValueKind};
use serde_json::Value;

use super::filters::{invalid, items, json_of, mj_type_name, python_type};

/// `regex_search`: the match, `None` without one; with `'\\1'`/`'\\g<name>'` arguments
/// the list of those groups.
fn unique_push(out: &mut Vec<MjValue>, v: MjValue) {
    if !out.contains(&v) {
        out.push(v);
    }
}

pub(super) fn union(a: MjValue, b: MjValue) -> Result<MjValue, MjError> {
    let mut out = Vec::new();
    for v in items(&a)?.into_iter().chain(items(&b)?) {
        unique_push(&mut out, v);
    }
    Ok(MjValue::from(out))
}

pub(super) fn difference(a: MjValue, b: MjValue) -> Result<MjValue, MjError> {
    let other = items(&b)?;
    let mut out = Vec::new();
    for v in items(&a)? {
        if !other.contains(&v) {
            unique_push(&mut out, v);
        }
    }
    Ok(MjValue::from(out))
}

pub(super) fn intersect(a: MjValue, b: MjValue) -> Result<MjValue, MjError> {
    let other = items(&b)?;
    let mut out = Vec::new();
    for v in items(&a)? {
        if other.contains(&v) {
            unique_push(&mut out, v);
        }
    }
    Ok(MjValue::from(out))
}

pub(super) fn symmetric_difference(a: MjValue, b: MjValue) -> Result<MjValue, MjError> {
    let (left, right) = (items(&a)?, items(&b)?);
    let mut out = Vec::new();
    for v in left.iter().filter(|v| !right.contains(v)) {
        unique_push(&mut out, v.clone());
    }
    for v in right.iter().filter(|v| !left.contains(v)) {
        unique_push(&mut out, v.clone());
    }
    Ok(MjValue::from(out))
}

/// `flatten(levels=None, skip_nulls=True)`.
pub(super) fn flatten(
    value: MjValue,
    levels: Option<i64>,
    kwargs: Kwargs,
) -> Result<MjValue, MjError> {
    let levels = match kwargs.get::<Option<i64>>("levels")? {
        Some(l) => Some(l),
        None => levels,
    };
    let skip_nulls = kwargs.get::<Option<bool>>("skip_nulls")?.unwrap_or(true);
    kwargs.assert_all_used()?;
    fn walk(
        out: &mut Vec<MjValue>,
        value: &MjValue,
        levels: Option<i64>,
        skip_nulls: bool,
    ) -> Result<(), MjError> {
        for item in value.try_iter()? {
            if skip_nulls && item.is_none() {
                continue;
            }
            if item.kind() == ValueKind::Seq && levels.is_none_or(|l| l > 0) {
                walk(out, &item, levels.map(|l| l - 1), skip_nulls)?;
            } else {
                out.push(item);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(&mut out, &value, levels, skip_nulls)?;
    Ok(MjValue::from(out))
}

fn extreme(value: MjValue, kwargs: Kwargs, want_max: bool) -> Result<MjValue, MjError> {
    let attribute: Option<String> = kwargs.get("attribute")?;
    let _: Option<bool> = kwargs.get("case_sensitive")?;
    kwargs.assert_all_used()?;
    let key = |v: &MjValue| -> MjValue {
        match &attribute {
            Some(a) => a.split('.').fold(v.clone(), |cur, part| {
                cur.get_attr(part).unwrap_or_default()
            }),
            None => v.clone(),
        }
    };
    let mut best: Option<MjValue> = None;
    for item in value.try_iter()? {
        best = Some(match best {
            None => item,
            Some(b) => {
                let better = if want_max {
                    key(&item) > key(&b)
                } else {
                    key(&item) < key(&b)
                };
                if better { item } else { b }
            }
        });
    }
    Ok(best.unwrap_or(MjValue::UNDEFINED))
}

pub(super) fn min(value: MjValue, kwargs: Kwargs) -> Result<MjValue, MjError> {
    extreme(value, kwargs, false)
}

pub(super) fn max(value: MjValue, kwargs: Kwargs) -> Result<MjValue, MjError> {
    extreme(value, kwargs, true)
}

/// Jinja's `sum(attribute=None, start=0)`.
pub(super) fn sum(
    value: MjValue,
    attribute: Option<String>,
    kwargs: Kwargs,
) -> Result<MjValue, MjError> {
    let attribute = kwargs.get::<Option<String>>("attribute")?.or(attribute);
    let start: Option<MjValue> = kwargs.get("start")?;
    kwargs.assert_all_used()?;
    let mut total = start.unwrap_or(MjValue::from(0));
    for item in value.try_iter()? {
        let item = match &attribute {
            Some(a) => a
                .split('.')
                .fold(item, |cur, part| cur.get_attr(part).unwrap_or_default()),
            None => item,
        };
        total = add(&total, &item)?;
    }
    Ok(total)
}

fn add(a: &MjValue, b: &MjValue) -> Result<MjValue, MjError> {
    match (a.kind(), b.kind()) {
        (ValueKind::Number, ValueKind::Number) => {
            if let (Ok(x), Ok(y)) = (i64::try_from(a.clone()), i64::try_from(b.clone()))
                && let Some(total) = x.checked_add(y)
            {
                return Ok(MjValue::from(total));
            }
            Ok(MjValue::from(
                f64::try_from(a.clone())? + f64::try_from(b.clone())?,
            ))
        }
        (ValueKind::Seq, ValueKind::Seq) => Ok(MjValue::from(
            a.try_iter()?.chain(b.try_iter()?).collect::<Vec<_>>(),
        )),
        _ => Err(invalid(format!(
            "sum: unsupported operand types for +: '{}' and '{}'",
            mj_type_name(a),
            mj_type_name(b)
        ))),
    }
}

/// `combine(*dicts, recursive=False, list_merge='replace')`: later dicts win.
pub(super) fn combine(
    first: MjValue,
    others: Rest<MjValue>,
    kwargs: Kwargs,
) -> Result<MjValue, MjError> {
    let recursive = kwargs.get::<Option<bool>>("recursive")?.unwrap_or(false);
    let list_merge: String = kwargs
        .get::<Option<String>>("list_merge")?
        .unwrap_or_else(|| "replace".into());
    kwargs.assert_all_used()?;
    let mode = ListMerge::parse(&list_merge)?;
    let mut dicts = vec![first];
    for other in others.iter() {
        // `combine([a, b])` merges a list of dicts, as Ansible allows.
        if other.kind() == ValueKind::Seq {
            dicts.extend(other.try_iter()?);
        } else {
            dicts.push(other.clone());
        }
    }
    let mut merged = Value::Object(serde_json::Map::new());
    for dict in dicts {
        let dict = json_of(&dict)?;
        if !dict.is_object() {
            return Err(invalid(format!(
                "combine expects dictionaries, got {}",
                python_type(&dict)
            )));
        }
        merge(&mut merged, dict, recursive, mode);
    }
    Ok(MjValue::from_serialize(merged))
}

#[derive(Clone, Copy)]
enum ListMerge {
    Replace,
    Keep,
    Append,
    Prepend,
    AppendRp,
    PrependRp,
}

impl ListMerge {
    fn parse(s: &str) -> Result<ListMerge, MjError> {
        Ok(match s {
            "replace" => ListMerge::Replace,
            "keep" => ListMerge::Keep,
            "append" => ListMerge::Append,
            "prepend" => ListMerge::Prepend,
            "append_rp" => ListMerge::AppendRp,
            "prepend_rp" => ListMerge::PrependRp,
            other => {
                return Err(invalid(format!(
                    "combine: list_merge must be one of replace, keep, append, prepend, \
                     append_rp, prepend_rp; got {other:?}"
                )));
            }
        })
    }
}

fn merge(into: &mut Value, from: Value, recursive: bool, mode: ListMerge) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(existing)
                        if (recursive && existing.is_object() && v.is_object())
                            || (existing.is_array() && v.is_array()) =>
                    {
                        if existing.is_object() {
                            merge(existing, v, recursive, mode);
                        } else {
                            merge_lists(existing, v, mode);
                        }
                    }
                    _ => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (into, from) => *into = from,
    }
}

fn merge_lists(into: &mut Value, from: Value, mode: ListMerge) {
    let (Value::Array(old), Value::Array(new)) = (&*into, &from) else {
        return;
    };
    let result: Vec<Value> = match mode {
        ListMerge::Replace => new.clone(),
        ListMerge::Keep => old.clone(),
        ListMerge::Append => old.iter().chain(new).cloned().collect(),
        ListMerge::Prepend => new.iter().chain(old).cloned().collect(),
        ListMerge::AppendRp => old
            .iter()
            .filter(|v| !new.contains(v))
            .chain(new)
            .cloned()
            .collect(),
        ListMerge::PrependRp => new
            .iter()
            .chain(old.iter().filter(|v| !new.contains(v)))
            .cloned()
            .collect(),
    };
    *into = Value::Array(result);
}

pub(super) fn dict2items(value: MjValue, kwargs: Kwargs) -> Result<MjValue, MjError> {
    let key_name = kwargs
        .get::<Option<String>>("key_name")?
        .unwrap_or_else(|| "key".into());
    let value_name = kwargs
        .get::<Option<String>>("value_name")?
        .unwrap_or_else(|| "value".into());
    kwargs.assert_all_used()?;
    if value.kind() != ValueKind::Map {
        return Err(invalid(format!(
            "dict2items requires a dictionary, got {}",
            mj_type_name(&value)
        )));
    }
    let mut out = Vec::new();
    for key in value.try_iter()? {
        let item = value.get_item(&key)?;
        let entry: Vec<(String, MjValue)> =
            vec![(key_name.clone(), key), (value_name.clone(), item)];
        out.push(MjValue::from_iter(entry));
    }
    Ok(MjValue::from(out))
}

pub(super) fn items2dict(value: MjValue, kwargs: Kwargs) -> Result<MjValue, MjError> {
    let key_name = kwargs
        .get::<Option<String>>("key_name")?
        .unwrap_or_else(|| "key".into());
    let value_name = kwargs
        .get::<Option<String>>("value_name")?
        .unwrap_or_else(|| "value".into());
    kwargs.assert_all_used()?;
    let mut out: Vec<(MjValue, MjValue)> = Vec::new();
    for item in value.try_iter()? {
        let key = item.get_attr(&key_name)?;
        let val = item.get_attr(&value_name)?;
        if key.is_undefined() || val.is_undefined() {
            return Err(invalid(format!(
                "items2dict requires each item to have '{key_name}' and '{value_name}' keys"
            )));
        }
        out.retain(|(k, _)| k != &key);
        out.push((key, val));
    }
    Ok(MjValue::from_iter(out))
}
