//! The lookups that combine lists, `nested` (`cartesian`), `together`, `subelements` and
//! `indexed_items`: the same whether a `with_<name>` loop or `lookup()`/`query()` runs them.

use serde_json::{Map, Value};

/// The loop forms that combine their terms here rather than through `query()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combinator {
    /// `with_nested`/`with_cartesian`: every combination, first list outermost.
    Nested,
    /// `with_together`: the lists side by side, the short ones padded with null.
    Together,
    /// `with_subelements`: `[parent, child]` for each child in each parent's list.
    Subelements,
    /// `with_indexed_items`: `[index, item]` over the terms flattened one level.
    IndexedItems,
}

impl Combinator {
    pub fn from_lookup(name: &str) -> Option<Combinator> {
        match name {
            "nested" | "cartesian" => Some(Combinator::Nested),
            "together" => Some(Combinator::Together),
            "subelements" => Some(Combinator::Subelements),
            "indexed_items" => Some(Combinator::IndexedItems),
            _ => None,
        }
    }

    /// The items for (already templated) terms, or Ansible's message for bad terms.
    pub fn items(self, terms: Value) -> Result<Vec<Value>, String> {
        match self {
            Combinator::Nested => nested(terms),
            Combinator::Together => together(terms),
            Combinator::Subelements => subelements(terms),
            Combinator::IndexedItems => indexed_items(terms),
        }
    }
}

/// A lone value counts as a list of one, as Ansible's `listify_lookup_plugin_terms`.
fn listify(value: Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items,
        other => vec![other],
    }
}

fn nested(terms: Value) -> Result<Vec<Value>, String> {
    let lists: Vec<Vec<Value>> = listify(terms).into_iter().map(listify).collect();
    if lists.is_empty() {
        return Err("with_nested requires at least one element in the nested list".into());
    }
    let mut combos: Vec<Vec<Value>> = vec![Vec::new()];
    for list in lists {
        combos = combos
            .into_iter()
            .flat_map(|prefix| {
                list.iter().map(move |x| {
                    let mut next = prefix.clone();
                    next.push(x.clone());
                    next
                })
            })
            .collect();
    }
    Ok(combos.into_iter().map(Value::Array).collect())
}

fn together(terms: Value) -> Result<Vec<Value>, String> {
    let lists: Vec<Vec<Value>> = listify(terms).into_iter().map(listify).collect();
    if lists.is_empty() {
        return Err(
            "The lookup plugin 'together' failed: with_together requires at least one element in each list"
                .into(),
        );
    }
    let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
    Ok((0..longest)
        .map(|i| {
            Value::Array(
                lists
                    .iter()
                    .map(|l| l.get(i).cloned().unwrap_or(Value::Null))
                    .collect(),
            )
        })
        .collect())
}

/// Ansible's indexed_items over its terms made a list first (`listify_lookup_plugin_terms`:
/// a mapping or a string is one term).
fn indexed_items(terms: Value) -> Result<Vec<Value>, String> {
    let terms = match terms {
        Value::Array(terms) => terms,
        one => vec![one],
    };
    Ok(terms
        .into_iter()
        .flat_map(listify)
        .enumerate()
        .map(|(i, item)| Value::Array(vec![Value::from(i), item]))
        .collect())
}

/// Ansible's subelements lookup: `[list or dict of dicts, 'key.path', {skip_missing}]`.
/// As in Ansible, the parent in each item no longer holds the list it was split on.
fn subelements(terms: Value) -> Result<Vec<Value>, String> {
    const SHAPE: &str = "subelements lookup expects a list of two or three items, \
                         a list of dicts, a string naming the subkey and an optional dict of flags";
    let mut terms = listify(terms);
    if !(2..=3).contains(&terms.len()) {
        return Err(SHAPE.into());
    }
    let flags = if terms.len() == 3 { terms.pop() } else { None };
    let skip_missing = match flags {
        None => false,
        Some(Value::Object(flags)) => {
            if let Some(unknown) = flags.keys().find(|k| *k != "skip_missing") {
                return Err(format!(
                    "the optional third item must be a dict with flags ['skip_missing'], got '{unknown}'"
                ));
            }
            // subelements.py: boolean(skip_missing, strict=False).
            flags
                .get("skip_missing")
                .is_some_and(crate::booleans::lenient)
        }
        Some(_) => return Err(SHAPE.into()),
    };
    let Some(Value::String(path)) = terms.pop() else {
        return Err(SHAPE.into());
    };
    let keys: Vec<&str> = path.split('.').collect();
    let parents = match terms.pop() {
        // A registered result that was skipped as a whole has nothing to iterate.
        Some(Value::Object(map)) if map.get("skipped").is_some_and(marks_skipped) => {
            return Ok(vec![]);
        }
        Some(Value::Object(map)) => map.into_iter().map(|(_, v)| v).collect(),
        Some(Value::Array(list)) => list,
        _ => return Err(SHAPE.into()),
    };
    let mut out = Vec::new();
    'parents: for parent in parents {
        let Value::Object(mut parent) = parent else {
            return Err(format!(
                "subelements lookup expects a dictionary, got '{parent}'"
            ));
        };
        if parent.get("skipped").is_some_and(marks_skipped) {
            continue;
        }
        let (last, inner) = keys.split_last().expect("split yields one key at least");
        let mut node: &mut Map<String, Value> = &mut parent;
        for key in inner {
            match node.get(*key) {
                Some(Value::Object(_)) => {}
                Some(other) if !skip_missing => {
                    return Err(format!(
                        "the key {key} should point to a dictionary, got '{other}'"
                    ));
                }
                None if !skip_missing => {
                    return Err(format!(
                        "could not find '{key}' key in iterated item '{}'",
                        Value::Object(node.clone())
                    ));
                }
                _ => continue 'parents,
            }
            let Some(Value::Object(child)) = node.get_mut(*key) else {
                unreachable!("checked to be a mapping above")
            };
            node = child;
        }
        let children = match node.remove(*last) {
            Some(Value::Array(children)) => children,
            Some(other) => {
                return Err(format!(
                    "the key {last} should point to a list, got '{other}'"
                ));
            }
            None if skip_missing => continue,
            None => {
                return Err(format!(
                    "could not find '{last}' key in iterated item '{}'",
                    Value::Object(node.clone())
                ));
            }
        };
        let parent = Value::Object(parent);
        out.extend(
            children
                .into_iter()
                .map(|child| Value::Array(vec![parent.clone(), child])),
        );
    }
    Ok(out)
}

/// subelements.py skips a result or item whose `skipped` `is not False`: any value but
/// the boolean false, so not a boolean spelling at all.
fn marks_skipped(v: &Value) -> bool {
    *v != Value::Bool(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items(c: Combinator, terms: Value) -> Value {
        Value::Array(c.items(terms).unwrap())
    }

    #[test]
    fn nested_is_every_combination_first_list_outermost() {
        assert_eq!(
            items(Combinator::Nested, json!([["a", "b"], [1, 2]])),
            json!([["a", 1], ["a", 2], ["b", 1], ["b", 2]])
        );
        assert_eq!(
            items(Combinator::Nested, json!([["a"], "x", [1, 2]])),
            json!([["a", "x", 1], ["a", "x", 2]])
        );
        assert_eq!(items(Combinator::Nested, json!([["a"], []])), json!([]));
        assert!(Combinator::Nested.items(json!([])).is_err());
    }

    #[test]
    fn together_pads_short_lists_with_null() {
        assert_eq!(
            items(Combinator::Together, json!([["a", "b", "c"], [1, 2]])),
            json!([["a", 1], ["b", 2], ["c", null]])
        );
    }

    #[test]
    fn indexed_items_flatten_one_level() {
        assert_eq!(
            items(Combinator::IndexedItems, json!(["a", ["b", ["c"]]])),
            json!([[0, "a"], [1, "b"], [2, ["c"]]])
        );
        assert_eq!(
            items(Combinator::IndexedItems, json!({"a": 1})),
            json!([[0, {"a": 1}]])
        );
    }

    #[test]
    fn subelements_pair_parents_with_children_without_the_list() {
        let users = json!([
            {"name": "alice", "keys": ["k1", "k2"]},
            {"name": "bob", "keys": []},
            {"name": "carol", "keys": ["k3"]},
        ]);
        assert_eq!(
            items(Combinator::Subelements, json!([users, "keys"])),
            json!([
                [{"name": "alice"}, "k1"],
                [{"name": "alice"}, "k2"],
                [{"name": "carol"}, "k3"],
            ])
        );
        let deep = json!([{"n": 1, "a": {"b": [1, 2]}}]);
        assert_eq!(
            items(Combinator::Subelements, json!([deep, "a.b"])),
            json!([[{"n": 1, "a": {}}, 1], [{"n": 1, "a": {}}, 2]])
        );
        let by_name = json!({"x": {"l": [1]}, "y": {"l": [2]}});
        assert_eq!(
            items(Combinator::Subelements, json!([by_name, "l"])),
            json!([[{}, 1], [{}, 2]])
        );
    }

    #[test]
    fn subelements_missing_keys() {
        let users = json!([{"name": "a", "keys": [1]}, {"name": "b"}]);
        assert_eq!(
            Combinator::Subelements
                .items(json!([users, "keys"]))
                .unwrap_err(),
            "could not find 'keys' key in iterated item '{\"name\":\"b\"}'"
        );
        assert_eq!(
            items(
                Combinator::Subelements,
                json!([users, "keys", {"skip_missing": true}])
            ),
            json!([[{"name": "a"}, 1]])
        );
        assert!(
            Combinator::Subelements
                .items(json!([users, "keys", {"bogus": 1}]))
                .unwrap_err()
                .contains("bogus")
        );
        assert_eq!(
            Combinator::Subelements
                .items(json!([[{"k": 1}], "k"]))
                .unwrap_err(),
            "the key k should point to a list, got '1'"
        );
        assert_eq!(
            items(Combinator::Subelements, json!([{"skipped": true}, "k"])),
            json!([])
        );
    }
}
