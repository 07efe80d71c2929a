//! `become_method: su`, as Ansible's su plugin does it: `su FLAGS USER -c CMD` on a
//! terminal (su reads the password from its terminal only), the password after one of
//! su's localized prompts, "Authentication failure" meaning a wrong password.

use std::sync::OnceLock;

use regex::Regex;

/// su's prompt in the languages Ansible's su plugin knows (`SU_PROMPT_LOCALIZATIONS`),
/// each followed by a colon or a full-width colon.
const PROMPTS: &[&str] = &[
    "Password",
    "암호",
    "パスワード",
    "Adgangskode",
    "Contraseña",
    "Contrasenya",
    "Hasło",
    "Heslo",
    "Jelszó",
    "Lösenord",
    "Mật khẩu",
    "Mot de passe",
    "Parola",
    "Parool",
    "Pasahitza",
    "Passord",
    "Passwort",
    "Salasana",
    "Sandi",
    "Senha",
    "Wachtwoord",
    "ססמה",
    "Лозинка",
    "Парола",
    "Пароль",
    "गुप्तशब्द",
    "शब्दकूट",
    "సంకేతపదము",
    "හස්පදය",
    "密码",
    "密碼",
    "口令",
];

/// What su says after a wrong password (Ansible's su plugin's `fail`).
const FAILURE: &str = "Authentication failure";

/// The command line the login user's shell runs: `become_exe` (default `su`), the
/// `become_flags` (default none), the user, and `-c` with the become script under
/// `/bin/sh`, quoted as Ansible quotes its success command.
pub(super) fn command(exe: Option<&str>, flags: Option<&str>, user: &str, script: &str) -> String {
    let inner = format!("/bin/sh -c '{script}'");
    [
        exe.unwrap_or("su"),
        flags.unwrap_or("").trim(),
        &super::shell_quote(user),
        "-c",
        &super::shell_quote(&inner),
    ]
    .iter()
    .filter(|part| !part.is_empty())
    .copied()
    .collect::<Vec<_>>()
    .join(" ")
}

/// The prompts su is known by: Ansible's list, or the `ansible_su_prompt_l10n` given
/// (words without their colon, as Ansible takes them).
#[derive(Clone)]
pub(super) struct Prompts(Regex);

impl Prompts {
    pub(super) fn new(custom: &[String]) -> Prompts {
        static BUILT_IN: OnceLock<Regex> = OnceLock::new();
        if custom.is_empty() {
            let words: Vec<&str> = PROMPTS.to_vec();
            return Prompts(BUILT_IN.get_or_init(|| pattern(&words)).clone());
        }
        Prompts(pattern(
            &custom.iter().map(String::as_str).collect::<Vec<_>>(),
        ))
    }

    /// Whether `said` holds one of the prompts (any case, as Ansible matches them).
    pub(super) fn found(&self, said: &str) -> bool {
        self.0.is_match(said)
    }

    /// `said` without the prompts, as Ansible's timeout message shows what su said.
    pub(super) fn removed(&self, said: &str) -> String {
        self.0.replace_all(said, "").into_owned()
    }
}

/// One of `words`, then a colon or a full-width colon.
fn pattern(words: &[&str]) -> Regex {
    let words: Vec<String> = words.iter().map(|w| regex::escape(w)).collect();
    Regex::new(&format!(r"(?i)(?:{})\s*[:：]", words.join("|"))).expect("su prompt pattern")
}

/// Whether su refused the password.
pub(super) fn refused(said: &str) -> bool {
    said.contains(FAILURE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn su_command_as_ansibles_su_plugin_builds_it() {
        assert_eq!(
            command(None, None, "plain", "echo hi"),
            "su 'plain' -c '/bin/sh -c '\"'\"'echo hi'\"'\"''"
        );
        assert_eq!(
            command(Some("/bin/su"), Some(" -l "), "root", "true"),
            "/bin/su -l 'root' -c '/bin/sh -c '\"'\"'true'\"'\"''"
        );
    }

    #[test]
    fn prompts_in_several_languages_and_the_refusal() {
        let built_in = Prompts::new(&[]);
        assert!(built_in.found("Password: "));
        assert!(built_in.found("\r\nmot de passe : "));
        assert!(built_in.found("Пароль:"));
        assert!(built_in.found("密码："));
        assert!(!built_in.found("Password required"));
        assert_eq!(built_in.removed("Password: \r\nsaid"), " \r\nsaid");
        let custom = Prompts::new(&["Geheim".to_string()]);
        assert!(custom.found("geheim: "));
        assert!(!custom.found("Password: "));
        assert!(refused("\r\nsu: Authentication failure\r\n"));
    }
}
