//! Play keywords written as templates (`strategy: "{{ test_strategy | default('linear') }}"`,
//! `order`, `gather_facts`, `serial`): rendered once the playbook is loaded, with what a
//! play-level template sees (its vars, the roles' defaults and vars, extra vars), then
//! read as the literal keyword would be.

use serde_json::Value;

use super::keywords::{BatchSize, HostOrder};
use super::tags::play_level_vars;
use super::{Play, Playbook};
use crate::template::Templar;

/// Renders every play's templated keywords; an error names the keyword and where it is.
pub fn render_templated_play_keywords(
    playbook: &mut Playbook,
    templar: &Templar,
    extra_vars: &serde_json::Map<String, Value>,
) -> Result<(), String> {
    let dir = playbook.dir.display().to_string();
    for play in &mut playbook.plays {
        if play.templated_keywords.is_empty() {
            continue;
        }
        let vars = play_level_vars(play, extra_vars, &dir);
        for templated in std::mem::take(&mut play.templated_keywords) {
            let value = templar
                .render_value(&Value::String(templated.template.clone()), &vars)
                .map_err(|e| format!("{}: {}: {e}", templated.location, templated.key))?;
            apply(play, &templated.key, &value)
                .map_err(|message| format!("{}: {message}", templated.location))?;
        }
    }
    Ok(())
}

fn apply(play: &mut Play, key: &str, value: &Value) -> Result<(), String> {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    // An omitted value leaves the keyword at its default.
    if text == crate::template::OMIT {
        return Ok(());
    }
    match key {
        "strategy" => {
            play.keywords.free = match text.as_str() {
                "linear" | "ansible.builtin.linear" | "debug" => false,
                "free" | "ansible.builtin.free" | "host_pinned" | "ansible.builtin.host_pinned" => {
                    true
                }
                other => return Err(format!("Invalid play strategy specified: {other}")),
            }
        }
        "order" => {
            play.keywords.order = HostOrder::parse(&text)
                .ok_or_else(|| format!("invalid play host order '{text}'"))?;
        }
        "gather_facts" => {
            play.gather_facts = crate::booleans::strict(value)
                .map_err(|_| format!("gather_facts must be a boolean, got '{text}'"))?;
        }
        "serial" => {
            let one = |v: &Value| {
                let t = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                BatchSize::parse(&t).ok_or_else(|| {
                    format!("serial must be a number of hosts or a percentage, got {t}")
                })
            };
            play.keywords.serial = match value {
                Value::Null => Vec::new(),
                Value::Array(items) => items.iter().map(one).collect::<Result<_, _>>()?,
                other => vec![one(other)?],
            };
        }
        other => unreachable!("{other} is not a templated play keyword"),
    }
    Ok(())
}
