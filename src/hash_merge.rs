//! Ansible's `hash_behaviour`: how a variable layer's dictionaries meet the same names
//! of the layers below. `replace` (the default) lets the higher value win whole; `merge`
//! merges mappings recursively (Ansible's `merge_hash` with lists replaced), in every
//! place Ansible calls `combine_vars`: the variable layers, and an inventory host or
//! group that gets the same variable from several sources.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

/// Set once by the CLI from ansible.cfg / `ANSIBLE_HASH_BEHAVIOUR`; read wherever layers
/// combine, which are too many and too deep to carry the setting to.
static MERGE: AtomicBool = AtomicBool::new(false);

pub fn set_merge(merge: bool) {
    MERGE.store(merge, Ordering::Relaxed);
}

pub fn merging() -> bool {
    MERGE.load(Ordering::Relaxed)
}

/// `from` layered over `into`, as the run's `hash_behaviour` says.
pub fn combine(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    if merging() {
        merge(into, from);
    } else {
        for (k, v) in from {
            into.insert(k.clone(), v.clone());
        }
    }
}

/// One variable set over what `into` holds, as the run's `hash_behaviour` says.
pub fn set(into: &mut Map<String, Value>, key: &str, value: Value) {
    match (into.get_mut(key), value) {
        (Some(Value::Object(old)), Value::Object(new)) if merging() => merge(old, &new),
        (_, value) => {
            into.insert(key.to_string(), value);
        }
    }
}

/// Recursive merge: mappings on both sides merge, anything else from `from` wins.
pub fn merge(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (k, v) in from {
        match (into.get_mut(k), v) {
            (Some(Value::Object(old)), Value::Object(new)) => merge(old, new),
            _ => {
                into.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn merge_is_recursive_for_mappings_only() {
        let mut into = map(json!({"h": {"a": 1, "n": {"x": 1}}, "l": [1, 2], "s": "low"}));
        merge(
            &mut into,
            &map(json!({"h": {"b": 2, "n": {"y": 2}}, "l": [3], "s": {"now": "a map"}})),
        );
        assert_eq!(
            Value::Object(into),
            json!({"h": {"a": 1, "b": 2, "n": {"x": 1, "y": 2}}, "l": [3], "s": {"now": "a map"}})
        );
    }
}
