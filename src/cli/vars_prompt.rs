//! ansible-playbook's `vars_prompt`: each play's questions asked on the terminal before
//! its keywords are templated (`hosts: "{{ target_hosts }}"` may read an answer), the
//! answers made play vars, as Ansible's playbook executor does.

use std::io::{BufRead, Write};

use serde_json::{Map, Value};

use crate::playbook::{Playbook, VarsPrompt};
use crate::template::Templar;

/// What Ansible prints when a confirmation differs.
const MISMATCH: &str = "***** VALUES ENTERED DO NOT MATCH ****";

/// Asks every play's prompts whose names `-e` does not give. Without a terminal the
/// entries stay as they are (their defaults stand in, with a warning where there is none).
pub fn ask_playbook(
    playbook: &mut Playbook,
    templar: &Templar,
    extra_vars: &Map<String, Value>,
) -> Result<(), String> {
    for play in &mut playbook.plays {
        let mut left = Vec::new();
        for prompt in std::mem::take(&mut play.vars_prompt) {
            if extra_vars.contains_key(&prompt.name) {
                left.push(prompt);
                continue;
            }
            let mut scope = play.vars.clone();
            scope.extend(extra_vars.clone());
            let scope = minijinja::Value::from_serialize(&scope);
            let question = question(&prompt, |t| templar.render_str(t, &scope).ok());
            let Some(answer) = ask(&prompt, &question)? else {
                left.push(prompt);
                continue;
            };
            let value = finish(&prompt, answer, templar)?;
            if prompt.unsafe_ {
                play.unsafe_vars.insert(prompt.name.clone());
            }
            play.vars.insert(prompt.name.clone(), value);
        }
        play.vars_prompt = left;
    }
    Ok(())
}

/// The text asked: `PROMPT [DEFAULT]: `, `PROMPT: ` or, for an empty prompt,
/// `input for NAME: `.
fn question(prompt: &VarsPrompt, render: impl Fn(&str) -> Option<String>) -> String {
    let default = prompt.default.as_ref().map(|d| match d {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    // Unset, the prompt is the variable's name (Ansible's playbook executor).
    let text = prompt.prompt.as_deref().unwrap_or(&prompt.name);
    let text = render(text).unwrap_or_else(|| text.to_string());
    match default {
        _ if text.is_empty() => format!("input for {}: ", prompt.name),
        Some(default) => format!("{text} [{default}]: "),
        None => format!("{text}: "),
    }
}

/// The answer typed, asked again under `confirm` until both match; None without a
/// terminal.
fn ask(prompt: &VarsPrompt, question: &str) -> Result<Option<String>, String> {
    loop {
        let Some(first) = read_answer(question, prompt.private)? else {
            return Ok(None);
        };
        if !prompt.confirm {
            return Ok(Some(first));
        }
        let Some(second) = read_answer(&format!("confirm {question}"), prompt.private)? else {
            return Ok(None);
        };
        if first == second {
            return Ok(Some(first));
        }
        println!("{MISMATCH}");
    }
}

fn read_answer(question: &str, private: bool) -> Result<Option<String>, String> {
    if private {
        return match crate::become_password::ask_hidden(question) {
            Ok(line) => Ok(Some(line)),
            Err(crate::become_password::Hidden::NoTerminal(_)) => Ok(None),
            Err(e) => Err(format!("reading the answer to '{question}': {e}")),
        };
    }
    let Ok(tty) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
    else {
        return Ok(None);
    };
    let mut out = tty.try_clone().map_err(|e| e.to_string())?;
    let _ = write!(out, "{question}");
    let _ = out.flush();
    let mut line = String::new();
    std::io::BufReader::new(&tty)
        .read_line(&mut line)
        .map_err(|e| format!("reading the answer to '{question}': {e}"))?;
    Ok(Some(line.trim_end_matches(['\r', '\n']).to_string()))
}

/// The variable's value: the default for an empty answer, hashed under `encrypt` (under
/// `unsafe` the play keeps it from templating: `Play::unsafe_vars`).
fn finish(prompt: &VarsPrompt, answer: String, templar: &Templar) -> Result<Value, String> {
    if answer.is_empty()
        && let Some(default) = &prompt.default
    {
        return Ok(default.clone());
    }
    if let Some(scheme) = &prompt.encrypt {
        let vars = minijinja::context! {
            answer => answer,
            scheme => scheme,
            salt => prompt.salt.clone().unwrap_or_else(|| random_salt(prompt.salt_size.unwrap_or(16))),
        };
        return templar
            .render_str("{{ answer | password_hash(scheme, salt) }}", &vars)
            .map(Value::String)
            .map_err(|e| format!("vars_prompt '{}': {e}", prompt.name));
    }
    Ok(Value::String(answer))
}

fn random_salt(size: u64) -> String {
    const CHARS: &[u8] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64)
        | 1;
    (0..size)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            CHARS[(seed % CHARS.len() as u64) as usize] as char
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(prompt: Option<&str>, default: Option<Value>) -> VarsPrompt {
        VarsPrompt {
            name: "input".into(),
            prompt: prompt.map(str::to_string),
            default,
            private: true,
            confirm: false,
            encrypt: None,
            salt: None,
            salt_size: None,
            unsafe_: false,
        }
    }

    #[test]
    fn questions_read_as_ansibles() {
        let same = |t: &str| Some(t.replace("{{ v }}", "from var"));
        assert_eq!(question(&entry(None, None), same), "input: ");
        assert_eq!(question(&entry(Some(""), None), same), "input for input: ");
        assert_eq!(
            question(&entry(Some("Say {{ v }}"), None), same),
            "Say from var: "
        );
        assert_eq!(
            question(&entry(Some("Port"), Some(Value::from(80))), same),
            "Port [80]: "
        );
    }

    #[test]
    fn answers_become_values() {
        let templar = Templar::new();
        let plain = entry(None, Some(Value::from("dflt")));
        assert_eq!(finish(&plain, String::new(), &templar).unwrap(), "dflt");
        assert_eq!(finish(&plain, "typed".into(), &templar).unwrap(), "typed");
        let mut hashed = entry(None, None);
        hashed.encrypt = Some("sha512_crypt".into());
        hashed.salt = Some("jESIyad4F08hP3Ta".into());
        let value = finish(&hashed, "pw".into(), &templar).unwrap();
        assert!(
            value.as_str().unwrap().starts_with("$6$jESIyad4F08hP3Ta$"),
            "{value}"
        );
    }
}
