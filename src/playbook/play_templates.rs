//! Play keywords written as templates (`strategy: "{{ test_strategy | default('linear') }}"`,
//! `order`, `gather_facts`, `serial`): rendered once the playbook is loaded, with what a
//! play-level template sees (its vars, the roles' defaults and vars, extra vars), then
//! read as the literal keyword would be.

use serde_json::Value;

use super::keywords::{BatchSize, HostOrder};
use super::tags::play_level_vars;
use super::{Play, Playbook};
use crate::template::Templar;

/// A templated play keyword that cannot be used: `parse` when ansible-playbook refuses it
/// as it loads the play (exit code 4), else when the play starts (an unknown strategy, 1).
#[derive(Debug)]
pub struct PlayKeywordError {
    pub message: String,
    pub parse: bool,
}

/// Renders every play's templated keywords; an error names the keyword and where it is.
pub fn render_templated_play_keywords(
    playbook: &mut Playbook,
    templar: &Templar,
    extra_vars: &serde_json::Map<String, Value>,
) -> Result<(), PlayKeywordError> {
    let parse = |message: String| PlayKeywordError {
        message,
        parse: true,
    };
    let dir = playbook.dir.display().to_string();
    for play in &mut playbook.plays {
        let vars = play_level_vars(play, extra_vars, &dir);
        for templated in std::mem::take(&mut play.templated_keywords) {
            let value = match render_through(templar, &templated.template, &vars) {
                Ok(value) => value,
                // A name may read a variable of the play's vars_files, which are read per
                // host later: it stays as written rather than failing the run.
                Err(_) if templated.key == "name" && !play.vars_files.is_empty() => continue,
                Err(e) => {
                    return Err(parse(format!(
                        "{}: Error processing keyword '{}': {e}",
                        templated.location, templated.key
                    )));
                }
            };
            apply(play, &templated.key, &value).map_err(|message| PlayKeywordError {
                message: format!("{}: {message}", templated.location),
                parse: templated.key != "strategy",
            })?;
        }
        play.argspec = super::play_argspec::find(play).map_err(parse)?;
    }
    Ok(())
}

/// Renders a template, then what it renders to while that is a template itself: a
/// variable may hold one (`-e 'setup="{{ True }}"'`), which Ansible renders when used.
fn render_through(
    templar: &Templar,
    template: &str,
    vars: &minijinja::Value,
) -> Result<Value, crate::template::TemplateError> {
    let mut value = templar.render_value(&Value::String(template.to_string()), vars)?;
    for _ in 0..10 {
        match &value {
            Value::String(s) if crate::template::is_template(s) => {
                value = templar.render_value(&value, vars)?;
            }
            _ => break,
        }
    }
    Ok(value)
}

fn apply(play: &mut Play, key: &str, value: &Value) -> Result<(), String> {
    let text = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    // An omitted value leaves the keyword at its default.
    if text == crate::template::OMIT {
        if key == "name" {
            play.name = play.hosts.clone();
            play.named = false;
        }
        return Ok(());
    }
    match key {
        "name" => {
            play.named = !text.is_empty();
            play.name = text;
        }
        "validate_argspec" => {
            play.validate_argspec = match value {
                Value::Bool(false) | Value::Null => super::ValidateArgspec::Off,
                Value::Bool(true) => super::ValidateArgspec::PlayName,
                Value::String(s) => super::ValidateArgspec::Named(s.clone()),
                other => {
                    return Err(format!(
                        "validate_argspec must be a boolean or string, not {}",
                        crate::template::python_type(other)
                    ));
                }
            }
        }
        // A list is the patterns it holds (`["42", "localhost"]`), as written in YAML.
        "hosts" => {
            let patterns: Vec<String> = match value {
                Value::Array(items) => items
                    .iter()
                    .map(|item| match item {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    })
                    .collect(),
                _ => vec![text],
            };
            // An unnamed play is named after what its hosts rendered to: a list as
            // Python prints it (`PLAY [['42', 'web']]`), as Ansible does.
            if !play.named {
                play.name = match value {
                    Value::Array(_) => crate::template::python_repr_json(value),
                    _ => patterns.join(","),
                };
            }
            play.hosts = patterns.join(",");
            play.host_patterns = patterns;
        }
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
            play.gather_facts = Some(
                crate::booleans::strict(value)
                    .map_err(|_| format!("gather_facts must be a boolean, got '{text}'"))?,
            );
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
