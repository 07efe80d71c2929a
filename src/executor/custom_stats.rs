//! The run's custom stats (`set_stats`), kept as Ansible's `AggregateStats.custom` keeps
//! them: per host, or under the run, each key set or added to (`+` for numbers, text and
//! lists, a recursive merge for mappings, nothing when the types differ).

use std::collections::BTreeMap;
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::modules::TaskOutcome;

/// Where the run's own stats are kept, as Ansible's `_run`.
pub(crate) const RUN: &str = "_run";

#[derive(Default)]
pub(crate) struct CustomStats(Mutex<BTreeMap<String, Map<String, Value>>>);

impl CustomStats {
    /// A result's `ansible_stats`, if it has any, for the host that returned it.
    pub(crate) fn absorb(&self, host: &str, outcome: &TaskOutcome) {
        if outcome.failed || outcome.skipped {
            return;
        }
        let Some(Value::Object(stats)) = outcome.data.get("ansible_stats") else {
            return;
        };
        let Some(Value::Object(data)) = stats.get("data") else {
            return;
        };
        let per_host = stats.get("per_host") == Some(&Value::Bool(true));
        let aggregate = stats.get("aggregate") != Some(&Value::Bool(false));
        let owner = if per_host { host } else { RUN };
        let mut all = self.0.lock().expect("custom stats lock");
        let kept = all.entry(owner.to_string()).or_default();
        for (key, value) in data {
            match kept.get_mut(key) {
                Some(old) if aggregate => add(old, value),
                _ => {
                    kept.insert(key.clone(), value.clone());
                }
            }
        }
    }

    /// Every owner's stats (hosts by name, then `_run`), for the recap.
    pub(crate) fn snapshot(&self) -> BTreeMap<String, Map<String, Value>> {
        self.0.lock().expect("custom stats lock").clone()
    }
}

/// `self.custom[host][which] += what`, or `merge_hash` for mappings.
fn add(old: &mut Value, new: &Value) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => merge_hash(a, b),
        (Value::Number(a), Value::Number(b)) => {
            if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
                *a = (x + y).into();
            } else if a.is_f64()
                && let (Some(x), Some(y)) = (a.as_f64(), b.as_f64())
                && let Some(sum) = serde_json::Number::from_f64(x + y)
            {
                *a = sum;
            }
        }
        (Value::String(a), Value::String(b)) => a.push_str(b),
        (Value::Array(a), Value::Array(b)) => a.extend(b.iter().cloned()),
        // Ansible keeps the old value when the new one is of another type.
        _ => {}
    }
}

/// Ansible's `merge_hash(a, b)`: b's keys win, mappings under the same key merge.
fn merge_hash(a: &mut Map<String, Value>, b: &Map<String, Value>) {
    for (key, value) in b {
        match (a.get_mut(key), value) {
            (Some(Value::Object(old)), Value::Object(new)) => merge_hash(old, new),
            _ => {
                a.insert(key.clone(), value.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stats(data: Value, per_host: bool, aggregate: bool) -> TaskOutcome {
        let mut out = TaskOutcome::default();
        out.data.insert(
            "ansible_stats".into(),
            json!({"data": data, "per_host": per_host, "aggregate": aggregate}),
        );
        out
    }

    #[test]
    fn adds_up_as_ansibles_aggregate_stats() {
        let s = CustomStats::default();
        for host in ["h1", "h2"] {
            s.absorb(
                host,
                &stats(
                    json!({"count": 1, "names": [host], "nested": {"a": 1}}),
                    false,
                    true,
                ),
            );
            s.absorb(
                host,
                &stats(json!({"count": 2, "nested": {"b": 2}}), false, true),
            );
            s.absorb(host, &stats(json!({"mine": host, "n": 1}), true, true));
            s.absorb(host, &stats(json!({"n": 5}), true, false));
            s.absorb(host, &stats(json!({"count": "text"}), false, true));
        }
        let got = s.snapshot();
        assert_eq!(
            Value::Object(got[RUN].clone()),
            json!({"count": 6, "names": ["h1", "h2"], "nested": {"a": 1, "b": 2}})
        );
        assert_eq!(
            Value::Object(got["h1"].clone()),
            json!({"mine": "h1", "n": 5})
        );
    }
}
