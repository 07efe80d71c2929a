//! Privilege escalation (Ansible's `become`): a second agent, started through sudo on
//! another channel of the host's one SSH connection (or as another child for the local
//! connection), running as the become user.
//!
//! The become user need not be able to read the login user's agent cache (a non-root
//! `become_user` such as `postgres`): the script that sudo runs looks in the become user's
//! own cache and, when the agent is missing there, asks for it on the same channel, so
//! nothing is ever made world-readable. The password travels only on that channel, after
//! sudo's prompt: never in argv, the environment, a file or a log.
//!
//! su (`su.rs`) reads the password from a terminal only: its channel is a pty, which the
//! become script turns raw (no echo, no line editing, no newline translation) before the
//! agent speaks its binary protocol on it.
//!
//! [`Negotiation`] is the pure state machine of that conversation; the SSH and local
//! drivers only move bytes.

mod su;

use crate::agent_binary::{AgentBinary, SUPPORTED_UNAME};

/// How to become another user.
#[derive(Clone, PartialEq, Eq)]
pub struct BecomeSpec {
    pub method: BecomeMethod,
    pub user: String,
    /// `become_flags`; `None` means the method's defaults (sudo: `-H -S -n`, su: none).
    pub flags: Option<String>,
    /// `become_exe`; `None` means the method's own name.
    pub exe: Option<String>,
    /// sudo's `sudo_chdir`: the directory the login shell changes to before it runs sudo.
    pub chdir: Option<String>,
    /// The connection's `timeout` as the task's variables set it, which (plus 2 s) bounds
    /// the wait for the prompt; `None`: the connection's own. Not part of the session key.
    pub timeout: Option<std::time::Duration>,
    pub password: Option<String>,
    /// su's prompts (`ansible_su_prompt_l10n`); empty means Ansible's built-in list.
    pub prompts: Vec<String>,
}

/// Never shows the password.
impl std::fmt::Debug for BecomeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BecomeSpec")
            .field("method", &self.method)
            .field("user", &self.user)
            .field("flags", &self.flags)
            .field("exe", &self.exe)
            .field("chdir", &self.chdir)
            .field("password", &self.password.as_ref().map(|_| "********"))
            .field("prompts", &self.prompts)
            .finish()
    }
}

impl BecomeSpec {
    /// What keys the become session among a host's sessions: one method, user, flags, exe,
    /// chdir, su prompts and password is one session (a task that expects other prompts
    /// escalates anew, and may time out as it would in Ansible). The password counts (as a digest, never itself): a task
    /// with another password is another escalation, which fails when the password is
    /// wrong, as each task's own escalation does in Ansible.
    pub fn session_key(&self) -> String {
        use sha2::Digest;
        let password = self
            .password
            .as_deref()
            .map(|p| {
                sha2::Sha256::digest(p.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            })
            .unwrap_or_default();
        format!(
            "become|{:?}|{}|{}|{}|{}|{:?}|{password}",
            self.method,
            self.user,
            self.flags.as_deref().unwrap_or(""),
            self.exe.as_deref().unwrap_or(""),
            self.chdir.as_deref().unwrap_or(""),
            self.prompts
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BecomeMethod {
    Sudo,
    Su,
}

impl BecomeMethod {
    /// The method a `become_method` names, or Ansible's words when turbo-play has no such
    /// plugin (yet).
    pub fn parse(name: &str) -> Result<BecomeMethod, String> {
        match name.strip_prefix("ansible.builtin.").unwrap_or(name) {
            "sudo" => Ok(BecomeMethod::Sudo),
            "su" => Ok(BecomeMethod::Su),
            "runas" | "doas" | "pbrun" | "pfexec" | "dzdo" | "ksu" | "machinectl" | "pmrun"
            | "sesu" | "enable" => Err(format!(
                "the become method '{name}' is not supported by turbo-play yet; use become_method: sudo or su, or run this playbook with ansible-playbook"
            )),
            other => Err(format!(
                "Invalid become method specified, could not find matching plugin: '{other}'. Use `ansible-doc -t become -l` to list available plugins."
            )),
        }
    }

    /// The plugin's name, as Ansible's messages say it ("Incorrect su password").
    pub fn name(self) -> &'static str {
        match self {
            BecomeMethod::Sudo => "sudo",
            BecomeMethod::Su => "su",
        }
    }

    /// Whether the method reads the password from a terminal, so that its channel must be
    /// a pty (Ansible's su plugin has no pipelining for the same reason).
    pub fn needs_pty(self) -> bool {
        self == BecomeMethod::Su
    }
}

/// Markers the become script prints on their own line.
pub(super) const MARK_RUN: &str = "TP-RUN";
const MARK_SEND_GZIP: &str = "TP-SEND-GZIP";
const MARK_SEND_RAW: &str = "TP-SEND-RAW";
const MARK_UNSUPPORTED: &str = "TP-UNSUPPORTED";

/// The command line the login user's shell runs: sudo or su, then the become script as
/// the become user. `prompt` is the unique text sudo prints before it reads the password.
pub fn become_command(spec: &BecomeSpec, agent: &AgentBinary, prompt: &str) -> String {
    let script = become_script(agent, spec.method.needs_pty());
    match spec.method {
        BecomeMethod::Sudo => sudo_command(spec, &script, prompt),
        BecomeMethod::Su => su::command(
            spec.exe.as_deref(),
            spec.flags.as_deref(),
            &spec.user,
            &script,
        ),
    }
}

/// As Ansible's sudo plugin builds it.
fn sudo_command(spec: &BecomeSpec, script: &str, prompt: &str) -> String {
    let exe = spec.exe.as_deref().unwrap_or("sudo");
    let mut flags = spec.flags.clone().unwrap_or_else(|| "-H -S -n".to_string());
    let mut prompt_flag = String::new();
    if spec.password.is_some() {
        // As Ansible's sudo plugin: with a password, sudo must be allowed to ask for it.
        flags = without_non_interactive(&flags);
        prompt_flag = format!("-p \"{prompt}\"");
    }
    let user = shell_quote(&spec.user);
    // As the sudo plugin's `sudo_chdir`: `cd DIR && sudo ...`, so a missing directory
    // fails the escalation with the shell's words.
    let chdir = spec
        .chdir
        .as_deref()
        .map(|dir| format!("cd {} &&", shell_quote(dir)))
        .unwrap_or_default();
    [
        &chdir,
        exe,
        flags.trim(),
        &prompt_flag,
        &format!("-u {user}"),
        &format!("/bin/sh -c '{script}'"),
    ]
    .iter()
    .filter(|part| !part.is_empty())
    .copied()
    .collect::<Vec<_>>()
    .join(" ")
}

/// sudo's flags when a password is to be typed, as Ansible's sudo plugin rewrites them:
/// the words `-n` and `--non-interactive` dropped, and from a short-option word the last
/// `n` of its leading letters (`-nH` is `-H`), the words split and joined again as
/// Python's shlex does.
fn without_non_interactive(flags: &str) -> String {
    let words = crate::shell_words::split(flags).unwrap_or_else(|_| {
        flags
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    });
    words
        .into_iter()
        .filter(|word| word != "-n" && word != "--non-interactive")
        .map(|word| {
            if word.starts_with("--") || !word.starts_with('-') {
                return word;
            }
            // The leading run of word characters after the dash.
            let run_end = word[1..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(word.len(), |i| i + 1);
            match word[1..run_end].rfind('n') {
                Some(i) => format!("{}{}", &word[..i + 1], &word[i + 2..]),
                None => word,
            }
        })
        .map(|word| python_shell_quote(&word))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Python's `shlex.quote`: a word of safe characters as it is, else single-quoted.
fn python_shell_quote(word: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "@%+=:,./-_".contains(c);
    if !word.is_empty() && word.chars().all(safe) {
        word.to_string()
    } else {
        shell_quote(word)
    }
}

/// A word for the shell, in single quotes.
pub(super) fn shell_quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', "'\"'\"'"))
}

/// Runs as the become user: the agent from that user's own cache (`~/.cache/turbo-play`,
/// or a private directory in /tmp when the home cannot hold it), received on stdin first
/// when it is missing or stale. Only the cache is private (umask 077): the agent runs with
/// the umask the escalation left, so that what it creates has the modes Ansible's modules
/// would give it. No single quote inside: it is single-quoted for `sh -c`.
/// On a terminal (`pty`) it first makes the terminal raw, so that the agent's bytes pass
/// unchanged, and keeps the agent's stderr off it.
fn become_script(agent: &AgentBinary, pty: bool) -> String {
    let (raw, quiet) = if pty {
        (
            "stty raw -echo -iexten || { echo \"stty could not make the become terminal raw\"; exit 8; }; ",
            " 2>/dev/null",
        )
    } else {
        ("", "")
    };
    let name = agent.remote_name();
    let size = agent.bytes.len();
    let gz_size = super::ssh::compressed_agent(agent).len();
    let checks = super::ssh::cache_checks(size);
    let sha256 = &agent.sha256;
    // No second chance follows a failed start here (the escalation would have to be
    // asked again), so the agent's own sha256 check runs as a trial before the marker,
    // its stdin at end of file: a corrupt file is received anew instead.
    format!(
        "{raw}u=$(uname -sm); if [ \"$u\" != \"{SUPPORTED_UNAME}\" ]; then echo \"$u\"; echo {MARK_UNSUPPORTED}; exit 0; fi; \
         m=$(umask); umask 077; d=\"$HOME/.cache/turbo-play\"; {checks}\
         if ! mkdir -p \"$d\" 2>/dev/null || [ ! -w \"$d\" ]; then d=\"/tmp/turbo-play-$(id -u)\"; fi; \
         tp_private_dir || exit 8; \
         f=\"$d/{name}\"; \
         if tp_trusted && \"$f\" --expect-sha256 {sha256} </dev/null >/dev/null 2>&1; then echo {MARK_RUN}; umask $m; exec \"$f\"{quiet}; fi; \
         t=\"$d/.{name}.$$\"; \
         if command -v gzip >/dev/null 2>&1; then echo {MARK_SEND_GZIP}; head -c {gz_size} | gzip -dc > \"$t\"; \
         else echo {MARK_SEND_RAW}; head -c {size} > \"$t\"; fi; \
         if [ $(wc -c < \"$t\") -eq {size} ] 2>/dev/null && chmod 700 \"$t\" && mv -f \"$t\" \"$f\"; then echo {MARK_RUN}; umask $m; exec \"$f\"{quiet}; fi; \
         rm -f \"$t\"; echo \"receiving the agent into $d failed\" >&2; exit 8"
    )
}

/// What the driver must do next.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Keep reading.
    Wait,
    /// sudo asks: write the password and a newline.
    SendPassword,
    /// The script wants the agent on its stdin, gzip-compressed or as it is.
    SendAgent { gzip: bool },
    /// The agent runs: these stdout bytes are its first.
    Run(Vec<u8>),
    /// Escalation failed, with Ansible's message.
    Fail(String),
}

/// The conversation with sudo (or su) and the become script, fed what the channel says.
pub struct Negotiation {
    method: BecomeMethod,
    prompt: String,
    has_password: bool,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    prompts_answered: usize,
    /// su: where in stdout the answered prompt ended; what su says after it is its verdict.
    answered_at: Option<usize>,
    su_prompts: su::Prompts,
}

/// Bound on what is kept of the conversation before the agent runs.
const TALK_LIMIT: usize = 64 * 1024;

impl Negotiation {
    /// `prompt` is sudo's unique prompt (su has its own, in the host's language).
    pub fn new(spec: &BecomeSpec, prompt: &str) -> Negotiation {
        Negotiation {
            method: spec.method,
            prompt: prompt.to_string(),
            has_password: spec.password.is_some(),
            stdout: Vec::new(),
            stderr: Vec::new(),
            prompts_answered: 0,
            answered_at: None,
            su_prompts: su::Prompts::new(&spec.prompts),
        }
    }

    pub fn on_stdout(&mut self, data: &[u8]) -> Step {
        if self.stdout.len() < TALK_LIMIT {
            self.stdout.extend_from_slice(data);
        }
        self.decide()
    }

    pub fn on_stderr(&mut self, data: &[u8]) -> Step {
        if self.stderr.len() < TALK_LIMIT {
            self.stderr.extend_from_slice(data);
        }
        self.decide()
    }

    /// The channel ended (or the program exited) before the agent ran.
    pub fn on_end(&mut self) -> Step {
        match self.decide() {
            Step::Wait => {
                let said = self.said();
                Step::Fail(if self.method == BecomeMethod::Su && su::refused(&said) {
                    self.incorrect()
                } else if said.contains("a password is required") {
                    "Missing sudo password".to_string()
                } else if said.is_empty() {
                    format!(
                        "privilege escalation failed: {} ended without a word",
                        self.method.name()
                    )
                } else {
                    format!("privilege escalation failed: {}", said.trim())
                })
            }
            other => other,
        }
    }

    /// The message for a conversation that took too long: with what the channel's stdout
    /// said in complete lines, less the prompts, as Ansible's ssh plugin shows it (a
    /// prompt that ends no line, such as su's "Password: ", is not shown).
    pub fn timed_out(&self, seconds: u64) -> String {
        let stdout = String::from_utf8_lossy(&self.stdout);
        let complete = stdout.rfind('\n').map_or("", |end| &stdout[..=end]);
        let mut said = complete.replace(&self.prompt, "");
        if self.method == BecomeMethod::Su {
            said = self.su_prompts.removed(&said);
        }
        format!(
            "Timeout ({seconds}s) waiting for privilege escalation prompt: {}",
            said.trim()
        )
        .trim_end()
        .to_string()
    }

    fn incorrect(&self) -> String {
        format!("Incorrect {} password", self.method.name())
    }

    fn said(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&self.stdout));
        text.replace(&self.prompt, "")
    }

    fn decide(&mut self) -> Step {
        if let Some((marker, rest)) = find_marker(&self.stdout) {
            return match marker {
                MARK_RUN => {
                    let leftover = self.stdout[rest..].to_vec();
                    self.stdout.clear();
                    Step::Run(leftover)
                }
                MARK_SEND_GZIP | MARK_SEND_RAW => {
                    self.stdout.drain(..rest);
                    if let Some(at) = self.answered_at.as_mut() {
                        *at = at.saturating_sub(rest);
                    }
                    Step::SendAgent {
                        gzip: marker == MARK_SEND_GZIP,
                    }
                }
                _ => Step::Fail(format!(
                    "agent not available for {}: turbo-play ships an agent for Linux x86_64 only",
                    String::from_utf8_lossy(&self.stdout[..rest])
                        .lines()
                        .next()
                        .unwrap_or("this system")
                )),
            };
        }
        match self.method {
            BecomeMethod::Sudo => self.decide_sudo(),
            BecomeMethod::Su => self.decide_su(),
        }
    }

    fn decide_sudo(&mut self) -> Step {
        let stderr = String::from_utf8_lossy(&self.stderr);
        if stderr.contains("Sorry, try again") || stderr.contains("incorrect password") {
            return Step::Fail(self.incorrect());
        }
        let prompts = stderr.matches(self.prompt.as_str()).count()
            + String::from_utf8_lossy(&self.stdout)
                .matches(self.prompt.as_str())
                .count();
        if prompts > self.prompts_answered {
            if !self.has_password {
                return Step::Fail("Missing sudo password".to_string());
            }
            if self.prompts_answered > 0 {
                return Step::Fail(self.incorrect());
            }
            self.prompts_answered = prompts;
            return Step::SendPassword;
        }
        Step::Wait
    }

    /// su speaks on its terminal only: everything arrives on stdout.
    fn decide_su(&mut self) -> Step {
        match self.answered_at {
            None => {
                let said = String::from_utf8_lossy(&self.stdout);
                if su::refused(&said) {
                    return Step::Fail(self.incorrect());
                }
                if !self.su_prompts.found(&said) {
                    return Step::Wait;
                }
                // Without a password Ansible leaves su's prompt unanswered until its
                // timeout, and so does this.
                if !self.has_password {
                    return Step::Wait;
                }
                self.answered_at = Some(self.stdout.len());
                Step::SendPassword
            }
            Some(at) => {
                let after = String::from_utf8_lossy(&self.stdout[at.min(self.stdout.len())..]);
                if su::refused(&after) || self.su_prompts.found(&after) {
                    Step::Fail(self.incorrect())
                } else {
                    Step::Wait
                }
            }
        }
    }
}

/// The first whole line that is one of the markers, and the offset just past it.
fn find_marker(stdout: &[u8]) -> Option<(&'static str, usize)> {
    let mut start = 0;
    while let Some(newline) = stdout[start..].iter().position(|&b| b == b'\n') {
        let line = &stdout[start..start + newline];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        for marker in [MARK_RUN, MARK_SEND_GZIP, MARK_SEND_RAW, MARK_UNSUPPORTED] {
            if line == marker.as_bytes() {
                return Some((marker, start + newline + 1));
            }
        }
        start += newline + 1;
    }
    None
}

/// A prompt no command output will contain by chance, as Ansible's `key=` prompts.
pub fn unique_prompt() -> String {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!(
        "[sudo via turbo-play, key={:x}{:x}{n:x}] password:",
        nanos,
        std::process::id()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(password: Option<&str>, flags: Option<&str>) -> BecomeSpec {
        BecomeSpec {
            method: BecomeMethod::Sudo,
            user: "postgres".into(),
            flags: flags.map(str::to_string),
            exe: None,
            chdir: None,
            timeout: None,
            password: password.map(str::to_string),
            prompts: Vec::new(),
        }
    }

    #[test]
    fn sudo_command_as_ansibles_sudo_plugin_builds_it() {
        let agent = crate::agent_binary::agent_binary().unwrap();
        let cmd = become_command(&spec(None, None), agent, "P:");
        assert!(
            cmd.starts_with("sudo -H -S -n -u 'postgres' /bin/sh -c '"),
            "{cmd}"
        );
        let cmd = become_command(&spec(Some("pw"), None), agent, "P:");
        assert!(
            cmd.starts_with("sudo -H -S -p \"P:\" -u 'postgres' /bin/sh -c '"),
            "{cmd}"
        );
        assert!(
            !cmd.contains("pw"),
            "the password is never on the command line"
        );
        let in_root = BecomeSpec {
            chdir: Some("/no such".into()),
            ..spec(None, None)
        };
        assert!(
            become_command(&in_root, agent, "P:")
                .starts_with("cd '/no such' && sudo -H -S -n -u 'postgres' /bin/sh -c '"),
            "sudo_chdir: the login shell changes directory first"
        );
        assert_ne!(in_root.session_key(), spec(None, None).session_key());
        let other_prompt = BecomeSpec {
            prompts: vec!["NOT_A_VALID_PROMPT".into()],
            ..su(Some("pw"))
        };
        assert_ne!(other_prompt.session_key(), su(Some("pw")).session_key());
        assert_eq!(
            without_non_interactive("-nH -S --login -n"),
            "-H -S --login"
        );
        assert_eq!(
            without_non_interactive("--set-home --stdin --non-interactive -Hn -nn --user 'a b'"),
            "--set-home --stdin -H -n --user 'a b'"
        );
        assert_eq!(shell_quote("a'b"), "'a'\"'\"'b'");
    }

    #[test]
    fn a_password_goes_after_the_prompt_and_the_agent_runs() {
        let mut n = Negotiation::new(&spec(Some("pw"), None), "P:");
        assert_eq!(n.on_stderr(b"P:"), Step::SendPassword);
        assert_eq!(n.on_stdout(b"TP-RUN\n\x00\x01"), Step::Run(vec![0, 1]));
    }

    #[test]
    fn the_agent_is_asked_for_then_runs() {
        let mut n = Negotiation::new(&spec(None, None), "P:");
        assert_eq!(
            n.on_stdout(b"TP-SEND-GZIP\n"),
            Step::SendAgent { gzip: true }
        );
        assert_eq!(n.on_stdout(b"TP-RU"), Step::Wait);
        assert_eq!(n.on_stdout(b"N\n"), Step::Run(vec![]));
    }

    #[test]
    fn wrong_missing_and_refused_passwords_fail_with_ansibles_words() {
        let mut n = Negotiation::new(&spec(Some("pw"), None), "P:");
        assert_eq!(n.on_stderr(b"P:"), Step::SendPassword);
        assert_eq!(
            n.on_stderr(b"\nSorry, try again.\nP:"),
            Step::Fail("Incorrect sudo password".into())
        );
        let mut n = Negotiation::new(&spec(None, None), "P:");
        assert_eq!(n.on_stderr(b"sudo: a password is required\n"), Step::Wait);
        assert_eq!(n.on_end(), Step::Fail("Missing sudo password".into()));
        let mut n = Negotiation::new(&spec(None, None), "P:");
        assert_eq!(
            n.on_stderr(b"P:"),
            Step::Fail("Missing sudo password".into())
        );
        let mut n = Negotiation::new(&spec(None, None), "P:");
        n.on_stderr(b"bob is not in the sudoers file.\n");
        assert_eq!(
            n.on_end(),
            Step::Fail("privilege escalation failed: bob is not in the sudoers file.".into())
        );
        assert_eq!(
            n.timed_out(12),
            "Timeout (12s) waiting for privilege escalation prompt:",
            "stderr is not shown, as in Ansible's ssh plugin"
        );
    }

    fn su(password: Option<&str>) -> BecomeSpec {
        BecomeSpec {
            method: BecomeMethod::Su,
            ..spec(password, None)
        }
    }

    #[test]
    fn su_runs_the_raw_terminal_script() {
        let agent = crate::agent_binary::agent_binary().unwrap();
        let cmd = become_command(&su(Some("pw")), agent, "P:");
        assert!(
            cmd.starts_with("su 'postgres' -c '/bin/sh -c '\"'\"'stty raw -echo -iexten "),
            "{cmd}"
        );
        assert!(
            !cmd.contains("pw"),
            "the password is never on the command line"
        );
        assert!(!become_command(&spec(None, None), agent, "P:").contains("stty"));
    }

    #[test]
    fn su_answers_its_prompt_once_and_knows_a_refusal() {
        let mut n = Negotiation::new(&su(Some("pw")), "unused");
        assert_eq!(n.on_stdout(b"Passw"), Step::Wait);
        assert_eq!(n.on_stdout(b"ord: "), Step::SendPassword);
        assert_eq!(n.on_stdout(b"\r\n"), Step::Wait);
        assert_eq!(
            n.on_stdout(b"TP-SEND-GZIP\n"),
            Step::SendAgent { gzip: true }
        );
        assert_eq!(n.on_stdout(b"TP-RUN\n\x07"), Step::Run(vec![7]));

        let mut n = Negotiation::new(&su(Some("bad")), "unused");
        assert_eq!(n.on_stdout(b"Mot de passe : "), Step::SendPassword);
        assert_eq!(
            n.on_stdout(b"\r\nsu: Authentication failure\r\n"),
            Step::Fail("Incorrect su password".into())
        );
        let mut n = Negotiation::new(&su(Some("bad")), "unused");
        assert_eq!(n.on_stdout(b"Password: "), Step::SendPassword);
        assert_eq!(
            n.on_stdout(b"\r\nPassword: "),
            Step::Fail("Incorrect su password".into())
        );
        let mut n = Negotiation::new(&su(None), "unused");
        assert_eq!(n.on_stdout(b"Password: "), Step::Wait);
        assert_eq!(
            n.timed_out(12),
            "Timeout (12s) waiting for privilege escalation prompt:"
        );
        let mut n = Negotiation::new(
            &BecomeSpec {
                prompts: vec!["NOT_A_VALID_PROMPT".into()],
                ..su(Some("pw"))
            },
            "unused",
        );
        assert_eq!(n.on_stdout(b"still-waiting\r\nPassword: "), Step::Wait);
        assert_eq!(
            n.timed_out(5),
            "Timeout (5s) waiting for privilege escalation prompt: still-waiting",
            "a prompt no line ends is not shown, even one su is not expected to print"
        );
        let mut n = Negotiation::new(&su(None), "unused");
        n.on_stdout(b"su: user nosuch does not exist\r\n");
        assert_eq!(
            n.on_end(),
            Step::Fail("privilege escalation failed: su: user nosuch does not exist".into())
        );
    }

    #[test]
    fn methods() {
        assert_eq!(BecomeMethod::parse("sudo"), Ok(BecomeMethod::Sudo));
        assert_eq!(
            BecomeMethod::parse("ansible.builtin.su"),
            Ok(BecomeMethod::Su)
        );
        assert!(
            BecomeMethod::parse("doas")
                .unwrap_err()
                .contains("not supported by turbo-play yet")
        );
        assert!(
            BecomeMethod::parse("nope")
                .unwrap_err()
                .starts_with("Invalid become method specified")
        );
        let shown = format!("{:?}", spec(Some("secret"), None));
        assert!(!shown.contains("secret"), "{shown}");
    }
}
