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

/// Whether `said` holds one of su's prompts (any case, as Ansible matches it).
pub(super) fn has_prompt(said: &str) -> bool {
    prompt_pattern().is_match(said)
}

/// `said` without su's prompts, as Ansible's timeout message shows what su said.
pub(super) fn without_prompts(said: &str) -> String {
    prompt_pattern().replace_all(said, "").into_owned()
}

fn prompt_pattern() -> &'static Regex {
    static PATTERN: OnceLock<Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        let words: Vec<String> = PROMPTS.iter().map(|p| regex::escape(p)).collect();
        Regex::new(&format!(r"(?i)(?:{})\s*[:：]", words.join("|"))).expect("su prompt pattern")
    })
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
        assert!(has_prompt("Password: "));
        assert!(has_prompt("\r\nmot de passe : "));
        assert!(has_prompt("Пароль:"));
        assert!(has_prompt("密码："));
        assert!(!has_prompt("Password required"));
        assert!(refused("\r\nsu: Authentication failure\r\n"));
    }
}
