//! OpenSSH's `%` tokens, `${VAR}` environment references and `~` in option values.

use std::path::Path;

/// The values the tokens stand for, for one host.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    /// %h: the remote host name (HostName, once it is known).
    pub host: String,
    /// %n: the name given on the command line.
    pub original: String,
    /// %p
    pub port: u16,
    /// %r: the remote user.
    pub remote_user: String,
    /// %u
    pub local_user: String,
    /// %d
    pub local_home: String,
    /// %l: the local host name, %L its first component.
    pub local_host: String,
    /// %i
    pub uid: u32,
    /// %k: HostKeyAlias, else the name given on the command line.
    pub host_key_alias: String,
    /// %j: ProxyJump, or empty.
    pub jump: String,
}

/// Every token (CertificateFile, IdentityFile, IdentityAgent, UserKnownHostsFile, ControlPath,
/// Match exec...).
pub const ALL: &str = "CdhijkLlnpru";
/// HostName.
pub const HOSTNAME: &str = "h";
/// ProxyCommand and ProxyJump.
pub const PROXY: &str = "hnpr";

impl Tokens {
    /// %C: SHA-1 of %l%h%p%r%j, hex.
    fn connection_hash(&self) -> String {
        use sha1::{Digest, Sha1};
        let digest = Sha1::digest(format!(
            "{}{}{}{}{}",
            self.local_host, self.host, self.port, self.remote_user, self.jump
        ));
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn value(&self, token: char) -> Option<String> {
        Some(match token {
            'C' => self.connection_hash(),
            'd' => self.local_home.clone(),
            'h' => self.host.clone(),
            'i' => self.uid.to_string(),
            'j' => self.jump.clone(),
            'k' => self.host_key_alias.clone(),
            'L' => self
                .local_host
                .split('.')
                .next()
                .unwrap_or_default()
                .to_string(),
            'l' => self.local_host.clone(),
            'n' => self.original.clone(),
            'p' => self.port.to_string(),
            'r' => self.remote_user.clone(),
            'u' => self.local_user.clone(),
            _ => return None,
        })
    }

    /// `%x` replaced for each `x` in `allowed` (and `%%`); any other token is an error, as
    /// in OpenSSH.
    pub fn expand(&self, text: &str, allowed: &str) -> Result<String, String> {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some(t) if allowed.contains(t) => {
                    out.push_str(&self.value(t).unwrap_or_default());
                }
                Some(t) => return Err(format!("unknown key %{t} in \"{text}\"")),
                None => {
                    return Err(format!(
                        "invalid format (a lone % at the end of \"{text}\")"
                    ));
                }
            }
        }
        Ok(out)
    }

    /// A path option: `~` first, `${VAR}`, then the tokens.
    pub fn expand_path(
        &self,
        text: &str,
        allowed: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<String, String> {
        let text = expand_tilde(text, Path::new(&self.local_home));
        let text = expand_env(&text, env)?;
        self.expand(&text, allowed)
    }
}

/// `~` and `~/...` to the local home; `~user/...` to that user's home.
pub fn expand_tilde(text: &str, home: &Path) -> String {
    if text == "~" {
        return home.display().to_string();
    }
    if let Some(rest) = text.strip_prefix("~/") {
        return home.join(rest).display().to_string();
    }
    if text.starts_with('~') {
        return crate::tilde::expand_user(text);
    }
    text.to_string()
}

/// `${NAME}` from the environment; an unset variable is an error, as in OpenSSH.
pub fn expand_env(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unterminated ${{ in \"{text}\""))?;
        let name = &after[..end];
        let value =
            env(name).ok_or_else(|| format!("environment variable ${{{name}}} has no value"))?;
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        Tokens {
            host: "real-alpha".into(),
            original: "alpha".into(),
            port: 22,
            remote_user: "carl".into(),
            local_user: "root".into(),
            local_home: "/root".into(),
            local_host: "vm.example".into(),
            uid: 0,
            host_key_alias: "alpha".into(),
            jump: String::new(),
        }
    }

    #[test]
    fn every_token() {
        let t = tokens();
        assert_eq!(
            t.expand("%h-%n-%p-%r-%u-%L-%l-%d-%i-%k-%%", ALL).unwrap(),
            "real-alpha-alpha-22-carl-root-vm-vm.example-/root-0-alpha-%"
        );
        // The same hash `ssh -G` prints for ControlPath=%C with these values.
        let t = Tokens {
            local_host: "vm".into(),
            ..tokens()
        };
        assert_eq!(
            t.expand("%C", ALL).unwrap(),
            "7b593c5ca4ee88d026da74ea741c158c37ed5f80"
        );
    }

    #[test]
    fn tokens_outside_their_option_are_errors() {
        let t = tokens();
        assert_eq!(
            t.expand("%h.example", HOSTNAME).unwrap(),
            "real-alpha.example"
        );
        assert!(t.expand("%r@%h", HOSTNAME).unwrap_err().contains("%r"));
        assert!(t.expand("50%", ALL).is_err());
    }

    #[test]
    fn tilde_and_environment() {
        let t = tokens();
        let env = |name: &str| (name == "KEYS").then(|| "/srv/keys".to_string());
        assert_eq!(
            t.expand_path("~/.ssh/id_%r", ALL, &env).unwrap(),
            "/root/.ssh/id_carl"
        );
        assert_eq!(
            t.expand_path("${KEYS}/%h", ALL, &env).unwrap(),
            "/srv/keys/real-alpha"
        );
        assert!(
            t.expand_path("${NOPE}/x", ALL, &env)
                .unwrap_err()
                .contains("${NOPE}")
        );
    }
}
