//! A play's `validate_argspec`: the argument spec, from the playbook's own
//! `<playbook>.meta.yml`, that the play's variables are checked against before its tasks,
//! found and refused as ansible-playbook 2.21 does when it loads the play.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Play, PlayArgspec, ValidateArgspec};

/// Ansible's YAML_FILENAME_EXTENSIONS, then none.
const META_EXTENSIONS: [&str; 4] = [".yml", ".yaml", ".json", ""];

/// The spec the play asks for, or None when it asks for none; an error says what is
/// missing as Ansible says it.
pub(super) fn find(play: &Play) -> Result<Option<PlayArgspec>, String> {
    let name = match &play.validate_argspec {
        ValidateArgspec::Off => return Ok(None),
        ValidateArgspec::Named(name) => Some(name.clone()),
        ValidateArgspec::PlayName => play.named.then(|| play.name.clone()),
    };
    let candidates = candidates(&play.location.file);
    let path = candidates.iter().find(|c| c.is_file());
    let mut problems = Vec::new();
    if name.as_deref().is_none_or(str::is_empty) {
        problems.push(
            "A play name is required when validate_argspec is True. \
             Alternatively, set validate_argspec to the name of an argument spec."
                .to_string(),
        );
    }
    if path.is_none() {
        let listed: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        problems.push(format!(
            "A playbook meta file is required. Considered:\n  - {}",
            listed.join("\n  - ")
        ));
    }
    let (Some(name), Some(path)) = (name, path) else {
        return Err(refusal(play, &problems.join(" ")));
    };
    // Ansible names the file by its full path, in messages and in the task's result.
    let path = std::path::absolute(path).unwrap_or_else(|_| path.clone());
    let metadata = crate::yaml::Source::read(&path)
        .and_then(|source| source.parse())
        .map_err(|e| e.to_string())?
        .to_json();
    let dumped_name = if plain_yaml_key(&name) {
        name.clone()
    } else {
        serde_json::to_string(&name).expect("a string serializes")
    };
    let options = metadata
        .get("argument_specs")
        .and_then(|specs| specs.get(&name))
        .and_then(|spec| spec.get("options"));
    let Some(Value::Object(options)) = options else {
        return Err(refusal(
            play,
            &format!(
                "No argument spec named '{name}' in {}. Minimally expected:\n\
                 argument_specs:\n  {dumped_name}:\n    options: {{}}\n",
                path.display(),
            ),
        ));
    };
    Ok(Some(PlayArgspec {
        name,
        options: options.clone(),
        path,
    }))
}

fn refusal(play: &Play, problem: &str) -> String {
    format!(
        "{}: Error processing keyword 'validate_argspec': {problem}",
        play.location
    )
}

/// Whether YAML would write `name` as a key without quotes: no word it reads as a
/// boolean or null, nothing that starts or splits a structure.
fn plain_yaml_key(name: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "yes", "n", "no", "true", "false", "on", "off", "null", "~",
    ];
    let first = name.chars().next();
    !name.is_empty()
        && !WORDS.contains(&name.to_ascii_lowercase().as_str())
        && name.parse::<f64>().is_err()
        && !first.is_some_and(|c| "-?:,[]{}#&*!|>'\"%@`".contains(c) || c.is_whitespace())
        && !name.ends_with(char::is_whitespace)
        && !name.contains(": ")
        && !name.contains(" #")
}

/// `site.yml` → `site.meta.yml`, `site.meta.yaml`, `site.meta.json`, `site.meta`.
fn candidates(playbook: &Path) -> Vec<PathBuf> {
    let text = playbook.display().to_string();
    let stem = [".yml", ".yaml", ".json"]
        .iter()
        .find_map(|ext| text.strip_suffix(ext))
        .unwrap_or(&text);
    META_EXTENSIONS
        .iter()
        .map(|ext| PathBuf::from(format!("{stem}.meta{ext}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn play_in(dir: &Path, yaml: &str) -> Result<Option<PlayArgspec>, String> {
        let path = dir.join("site.yml");
        std::fs::write(&path, yaml).unwrap();
        let playbook = crate::playbook::load_playbook_text(&path, yaml).unwrap();
        find(&playbook.plays[0])
    }

    #[test]
    fn the_spec_comes_from_the_playbooks_meta_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = play_in(dir.path(), "- hosts: all\n  validate_argspec: true\n").unwrap_err();
        assert!(
            err.contains("A play name is required when validate_argspec is True.")
                && err.contains("A playbook meta file is required. Considered:\n  - ")
                && err.contains("site.meta.yml\n  - "),
            "{err}"
        );
        assert_eq!(
            play_in(dir.path(), "- hosts: all\n  validate_argspec: false\n"),
            Ok(None)
        );
        std::fs::write(
            dir.path().join("site.meta.yml"),
            "argument_specs:\n  Web:\n    options:\n      port: {type: int, required: true}\n",
        )
        .unwrap();
        let spec = play_in(
            dir.path(),
            "- name: Web\n  hosts: all\n  validate_argspec: yes\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(spec.name, "Web");
        assert_eq!(
            Value::Object(spec.options),
            serde_json::json!({"port": {"type": "int", "required": true}})
        );
        let err = play_in(dir.path(), "- hosts: all\n  validate_argspec: \"no\"\n").unwrap_err();
        assert!(
            err.contains("No argument spec named 'no' in ")
                && err.ends_with("argument_specs:\n  \"no\":\n    options: {}\n"),
            "{err}"
        );
    }
}
