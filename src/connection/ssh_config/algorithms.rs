//! Ciphers, KexAlgorithms, MACs and HostKeyAlgorithms: OpenSSH's list syntax (a list
//! replaces the defaults, `+` appends, `-` removes, `^` puts first; `*`/`?` patterns) over
//! what russh implements. A name russh lacks is left out with a warning; a list left with
//! nothing russh can speak is an error.

use std::borrow::Cow;

use russh::keys::Algorithm;
use russh::{cipher, kex, mac};

/// The resolved lists; `None` keeps russh's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Algorithms {
    pub ciphers: Option<Vec<String>>,
    pub kex: Option<Vec<String>>,
    pub macs: Option<Vec<String>>,
    pub host_keys: Option<Vec<String>>,
}

/// Which list, for its defaults and what russh supports.
#[derive(Debug, Clone, Copy)]
pub enum List {
    Ciphers,
    Kex,
    Macs,
    HostKeys,
}

fn defaults(list: List) -> Vec<String> {
    let p = russh::Preferred::DEFAULT;
    match list {
        List::Ciphers => p.cipher.iter().map(|n| n.as_ref().to_string()).collect(),
        List::Kex => p
            .kex
            .iter()
            .map(|n| n.as_ref().to_string())
            .filter(|n| !is_kex_extension(n))
            .collect(),
        List::Macs => p.mac.iter().map(|n| n.as_ref().to_string()).collect(),
        List::HostKeys => p.key.iter().map(|a| a.as_str().to_string()).collect(),
    }
}

fn supported(list: List) -> Vec<String> {
    let names: Vec<String> = match list {
        List::Ciphers => cipher::ALL_CIPHERS
            .iter()
            .map(|n| n.as_ref().to_string())
            .collect(),
        List::Kex => kex::ALL_KEX_ALGORITHMS
            .iter()
            .map(|n| n.as_ref().to_string())
            .collect(),
        List::Macs => mac::ALL_MAC_ALGORITHMS
            .iter()
            .map(|n| n.as_ref().to_string())
            .collect(),
        List::HostKeys => defaults(List::HostKeys),
    };
    names
        .into_iter()
        .filter(|n| n != "none" && n != "clear")
        .collect()
}

fn is_kex_extension(name: &str) -> bool {
    name.starts_with("ext-info-") || name.starts_with("kex-strict-")
}

/// An OpenSSH algorithm list applied to russh's defaults: the names, and the names asked
/// for that russh does not have.
pub fn apply(list: List, spec: &str) -> Result<(Vec<String>, Vec<String>), String> {
    let defaults = defaults(list);
    let supported = supported(list);
    let (mode, body) = match spec.chars().next() {
        Some(c @ ('+' | '-' | '^')) => (c, &spec[1..]),
        _ => (' ', spec),
    };
    let mut missing = Vec::new();
    let mut named = Vec::new();
    for pattern in body.split(',').filter(|p| !p.is_empty()) {
        // Host certificates are advertised apart from the key list (known_hosts'
        // @cert-authority lines decide).
        if pattern.contains("-cert-v01@") {
            continue;
        }
        let compiled = crate::fnmatch::Pattern::openssh(pattern);
        let found: Vec<&String> = supported.iter().filter(|n| compiled.matches(n)).collect();
        if found.is_empty() && mode != '-' && !pattern.contains(['*', '?']) {
            missing.push(pattern.to_string());
        }
        for name in found {
            if !named.contains(name) {
                named.push(name.clone());
            }
        }
    }
    let result: Vec<String> = match mode {
        '+' => {
            let mut all = defaults.clone();
            all.extend(named.into_iter().filter(|n| !defaults.contains(n)));
            all
        }
        '-' => defaults
            .into_iter()
            .filter(|n| !named.contains(n))
            .collect(),
        '^' => {
            let mut all = named.clone();
            all.extend(defaults.into_iter().filter(|n| !named.contains(n)));
            all
        }
        _ => named,
    };
    if result.is_empty() {
        return Err(format!(
            "\"{spec}\" leaves no algorithm turbo-play's ssh implementation supports (it has {})",
            supported.join(",")
        ));
    }
    Ok((result, missing))
}

impl Algorithms {
    /// russh's preferences; `order_keys` puts host key types known_hosts has first.
    pub fn preferred(
        &self,
        order_keys: impl FnOnce(Vec<Algorithm>) -> Vec<Algorithm>,
    ) -> russh::Preferred {
        let base = russh::Preferred::DEFAULT;
        let mut preferred = base.clone();
        if let Some(names) = &self.ciphers {
            let list: Vec<cipher::Name> = names
                .iter()
                .filter_map(|n| cipher::Name::try_from(n.as_str()).ok())
                .collect();
            preferred.cipher = Cow::Owned(list);
        }
        if let Some(names) = &self.kex {
            let mut list: Vec<kex::Name> = names
                .iter()
                .filter_map(|n| kex::Name::try_from(n.as_str()).ok())
                .collect();
            // russh's protocol extensions ride in the kex list: keep them.
            list.extend(
                base.kex
                    .iter()
                    .filter(|n| is_kex_extension(n.as_ref()))
                    .cloned(),
            );
            preferred.kex = Cow::Owned(list);
        }
        if let Some(names) = &self.macs {
            let list: Vec<mac::Name> = names
                .iter()
                .filter_map(|n| mac::Name::try_from(n.as_str()).ok())
                .collect();
            preferred.mac = Cow::Owned(list);
        }
        let keys: Vec<Algorithm> = match &self.host_keys {
            Some(names) => names
                .iter()
                .filter_map(|n| Algorithm::new(n).ok())
                .collect(),
            None => base.key.to_vec(),
        };
        preferred.key = Cow::Owned(order_keys(keys));
        preferred
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_append_remove_first() {
        let (ciphers, missing) = apply(List::Ciphers, "aes128-ctr,3des-cbc").unwrap();
        assert_eq!(ciphers, vec!["aes128-ctr"]);
        assert_eq!(missing, vec!["3des-cbc"]);
        let (ciphers, _) = apply(List::Ciphers, "+aes128-cbc").unwrap();
        assert_eq!(ciphers.last().unwrap(), "aes128-cbc");
        assert!(ciphers.contains(&"chacha20-poly1305@openssh.com".to_string()));
        let (ciphers, _) = apply(List::Ciphers, "-chacha20*").unwrap();
        assert!(!ciphers.iter().any(|c| c.starts_with("chacha")));
        let (kex, _) = apply(List::Kex, "^diffie-hellman-group14-sha256").unwrap();
        assert_eq!(kex[0], "diffie-hellman-group14-sha256");
        assert!(!kex.iter().any(|k| is_kex_extension(k)));
        let (keys, _) = apply(
            List::HostKeys,
            "ssh-ed25519-cert-v01@openssh.com,rsa-sha2-512",
        )
        .unwrap();
        assert_eq!(keys, vec!["rsa-sha2-512"]);
        assert!(
            apply(List::Macs, "umac-64@openssh.com")
                .unwrap_err()
                .contains("leaves no algorithm")
        );
    }

    #[test]
    fn preferred_keeps_kex_extensions() {
        let algorithms = Algorithms {
            kex: Some(vec!["curve25519-sha256".into()]),
            host_keys: Some(vec!["rsa-sha2-256".into()]),
            ..Default::default()
        };
        let preferred = algorithms.preferred(|keys| keys);
        let kex: Vec<&str> = preferred.kex.iter().map(|n| n.as_ref()).collect();
        assert_eq!(kex[0], "curve25519-sha256");
        assert!(kex.contains(&"ext-info-c"));
        assert_eq!(preferred.key.len(), 1);
        assert_eq!(preferred.key[0].as_str(), "rsa-sha2-256");
    }
}
