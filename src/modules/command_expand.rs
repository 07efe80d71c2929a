//! `command`'s `expand_argument_vars`. On (Ansible's default), the agent expands `$NAME`,
//! `${NAME}` and a leading `~` in each argument itself, as Python's
//! `os.path.expanduser(os.path.expandvars(arg))`. Off, the words must reach the program
//! as written: an argv that holds something the agent would expand runs as sh `exec` of
//! single-quoted words instead, which nothing expands.

use super::service_run::sh_quote;

/// Whether any argument holds something the agent would expand.
pub fn needs_expansion(argv: &[String]) -> bool {
    argv.iter().any(|a| a.contains('$') || a.starts_with('~'))
}

/// A sh script that runs `argv` exactly as written.
pub fn literal_script(argv: &[String]) -> String {
    let words: Vec<String> = argv.iter().map(|a| sh_quote(a)).collect();
    format!("exec {}", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_every_word_as_written() {
        assert!(needs_expansion(&["a".into(), "$X".into()]));
        assert!(needs_expansion(&["~/x".into()]));
        assert!(!needs_expansion(&["a".into(), "b~".into()]));
        let argv: Vec<String> = ["printf", "%s|", "$HOME", "~", "it's", ""]
            .map(String::from)
            .to_vec();
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(literal_script(&argv))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "$HOME|~|it's||");
    }
}
