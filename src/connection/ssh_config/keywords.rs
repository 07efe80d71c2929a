//! Every keyword OpenSSH's client reads, what its value looks like, and what turbo-play
//! does with it. An option turbo-play does not act on is warned about when it applies to a
//! host, never dropped silently; the few it ignores on purpose say why here.

/// How a keyword's arguments are read and kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One argument, checked by [`Check`].
    One(Check),
    /// Every argument, as one value (UserKnownHostsFile, SendEnv...).
    Words,
    /// The rest of the line unsplit, quotes included (ProxyCommand, LocalCommand...).
    Command,
    /// One argument per line, every line adding to the list (IdentityFile, CertificateFile).
    Accumulate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Any,
    YesNo,
    Port,
    Count,
    Seconds,
    Strict,
    Family,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// The connection acts on it.
    Honoured,
    /// Read, and deliberately without effect; the text says why.
    Ignored(&'static str),
    /// Read but not acted on: warned about once per run.
    NotHonoured,
    /// Removed from OpenSSH; it ignores them too.
    Deprecated,
}

pub struct Keyword {
    /// As ssh_config(5) spells it, for messages.
    pub name: &'static str,
    pub kind: Kind,
    pub support: Support,
}

const NO_TERMINAL: &str = "turbo-play opens no terminal session";
const NO_MUX: &str = "turbo-play keeps one connection per host for the whole run";

use Check::*;
use Kind::*;
use Support::*;

macro_rules! kw {
    ($name:literal, $kind:expr, $support:expr) => {
        Keyword {
            name: $name,
            kind: $kind,
            support: $support,
        }
    };
}

static KEYWORDS: &[Keyword] = &[
    // Acted on.
    kw!("HostName", One(Any), Honoured),
    kw!("Port", One(Port), Honoured),
    kw!("User", One(Any), Honoured),
    kw!("IdentityFile", Accumulate, Honoured),
    kw!("IdentitiesOnly", One(YesNo), Honoured),
    kw!("IdentityAgent", One(Any), Honoured),
    kw!("CertificateFile", Accumulate, Honoured),
    kw!("UserKnownHostsFile", Words, Honoured),
    kw!("GlobalKnownHostsFile", Words, Honoured),
    kw!("StrictHostKeyChecking", One(Strict), Honoured),
    kw!("HashKnownHosts", One(YesNo), Honoured),
    kw!("ConnectTimeout", One(Seconds), Honoured),
    kw!("ConnectionAttempts", One(Count), Honoured),
    kw!("ServerAliveInterval", One(Seconds), Honoured),
    kw!("ServerAliveCountMax", One(Count), Honoured),
    kw!("AddressFamily", One(Family), Honoured),
    kw!("BindAddress", One(Any), Honoured),
    kw!("Ciphers", One(Any), Honoured),
    kw!("KexAlgorithms", One(Any), Honoured),
    kw!("HostKeyAlgorithms", One(Any), Honoured),
    kw!("MACs", One(Any), Honoured),
    // Resolved; the transport refuses them until it can go through a jump host.
    kw!("ProxyJump", One(Any), Honoured),
    kw!("ProxyCommand", Command, Honoured),
    kw!("IgnoreUnknown", Words, Honoured),
    // Deliberately without effect.
    kw!("BatchMode", One(Any), Ignored("turbo-play never prompts")),
    kw!("ControlMaster", One(Any), Ignored(NO_MUX)),
    kw!("ControlPath", One(Any), Ignored(NO_MUX)),
    kw!("ControlPersist", One(Any), Ignored(NO_MUX)),
    kw!(
        "Compression",
        One(YesNo),
        Ignored("the agent's frames are compressed already")
    ),
    kw!("EscapeChar", One(Any), Ignored(NO_TERMINAL)),
    kw!("EnableEscapeCommandline", One(Any), Ignored(NO_TERMINAL)),
    kw!("RequestTTY", One(Any), Ignored(NO_TERMINAL)),
    kw!("SessionType", One(Any), Ignored(NO_TERMINAL)),
    kw!("StdinNull", One(Any), Ignored(NO_TERMINAL)),
    kw!("ForkAfterAuthentication", One(Any), Ignored(NO_TERMINAL)),
    kw!("ObscureKeystrokeTiming", One(Any), Ignored(NO_TERMINAL)),
    kw!("VisualHostKey", One(Any), Ignored(NO_TERMINAL)),
    kw!(
        "FingerprintHash",
        One(Any),
        Ignored("messages always show SHA256 fingerprints")
    ),
    kw!("LogLevel", One(Any), Ignored("turbo-play has its own -v")),
    kw!("LogVerbose", Words, Ignored("turbo-play has its own -v")),
    kw!(
        "SyslogFacility",
        One(Any),
        Ignored("turbo-play has its own -v")
    ),
    kw!(
        "NumberOfPasswordPrompts",
        One(Any),
        Ignored("turbo-play never prompts")
    ),
    kw!(
        "CheckHostIP",
        One(Any),
        Ignored("host keys are checked by name, as OpenSSH does by default")
    ),
    kw!(
        "UpdateHostKeys",
        One(Any),
        Ignored("turbo-play learns no new host keys from servers")
    ),
    kw!(
        "TCPKeepAlive",
        One(Any),
        Ignored("the connection sends its own keepalives")
    ),
    kw!(
        "KeepAlive",
        One(Any),
        Ignored("the connection sends its own keepalives")
    ),
    kw!("Tag", One(Any), Ignored("only read by Match tagged")),
    kw!(
        "SendEnv",
        Words,
        Ignored(
            "distributions send LANG by default; modules set their own locale, as Ansible's do"
        )
    ),
    kw!(
        "GSSAPIAuthentication",
        One(Any),
        Ignored("distributions turn it on by default; turbo-play does not use Kerberos")
    ),
    kw!(
        "GSSAPIDelegateCredentials",
        One(Any),
        Ignored("turbo-play does not use Kerberos")
    ),
    kw!("ForwardX11Trusted", One(Any), Ignored("no X11 forwarding")),
    // Read, not acted on: warned about.
    kw!("AddKeysToAgent", One(Any), NotHonoured),
    kw!("BindInterface", One(Any), NotHonoured),
    kw!("CanonicalDomains", Words, NotHonoured),
    kw!("CanonicalizeFallbackLocal", One(Any), NotHonoured),
    kw!("CanonicalizeHostname", One(Any), NotHonoured),
    kw!("CanonicalizeMaxDots", One(Any), NotHonoured),
    kw!("CanonicalizePermittedCNAMEs", Words, NotHonoured),
    kw!("CASignatureAlgorithms", One(Any), NotHonoured),
    kw!("ChannelTimeout", Words, NotHonoured),
    kw!("ClearAllForwardings", One(Any), NotHonoured),
    kw!("DynamicForward", Accumulate, NotHonoured),
    kw!("EnableSSHKeysign", One(Any), NotHonoured),
    kw!("ExitOnForwardFailure", One(Any), NotHonoured),
    kw!("ForwardAgent", One(Any), NotHonoured),
    kw!("ForwardX11", One(Any), NotHonoured),
    kw!("ForwardX11Timeout", One(Any), NotHonoured),
    kw!("GatewayPorts", One(Any), NotHonoured),
    kw!("GSSAPIKeyExchange", One(Any), NotHonoured),
    kw!("GSSAPIClientIdentity", One(Any), NotHonoured),
    kw!("GSSAPIServerIdentity", One(Any), NotHonoured),
    kw!("GSSAPIRenewalForcesRekey", One(Any), NotHonoured),
    kw!("GSSAPITrustDns", One(Any), NotHonoured),
    kw!("GSSAPIKexAlgorithms", One(Any), NotHonoured),
    kw!("HostbasedAcceptedAlgorithms", One(Any), NotHonoured),
    kw!("HostbasedKeyTypes", One(Any), NotHonoured),
    kw!("HostbasedAuthentication", One(Any), NotHonoured),
    kw!("HostKeyAlias", One(Any), NotHonoured),
    kw!("IPQoS", Words, NotHonoured),
    kw!("KbdInteractiveAuthentication", One(Any), NotHonoured),
    kw!("ChallengeResponseAuthentication", One(Any), NotHonoured),
    kw!("KbdInteractiveDevices", One(Any), NotHonoured),
    kw!("KnownHostsCommand", Command, NotHonoured),
    kw!("LocalCommand", Command, NotHonoured),
    kw!("LocalForward", Words, NotHonoured),
    kw!("NoHostAuthenticationForLocalhost", One(Any), NotHonoured),
    kw!("PasswordAuthentication", One(Any), NotHonoured),
    kw!("PermitLocalCommand", One(Any), NotHonoured),
    kw!("PermitRemoteOpen", Words, NotHonoured),
    kw!("PKCS11Provider", One(Any), NotHonoured),
    kw!("PreferredAuthentications", One(Any), NotHonoured),
    kw!("ProxyUseFdpass", One(Any), NotHonoured),
    kw!("PubkeyAcceptedAlgorithms", One(Any), NotHonoured),
    kw!("PubkeyAcceptedKeyTypes", One(Any), NotHonoured),
    kw!("PubkeyAuthentication", One(Any), NotHonoured),
    kw!("RekeyLimit", Words, NotHonoured),
    kw!("RemoteCommand", Command, NotHonoured),
    kw!("RemoteForward", Words, NotHonoured),
    kw!("RequiredRSASize", One(Any), NotHonoured),
    kw!("RevokedHostKeys", One(Any), NotHonoured),
    kw!("SecurityKeyProvider", One(Any), NotHonoured),
    kw!("SetEnv", Words, NotHonoured),
    kw!("StreamLocalBindMask", One(Any), NotHonoured),
    kw!("StreamLocalBindUnlink", One(Any), NotHonoured),
    kw!("Tunnel", One(Any), NotHonoured),
    kw!("TunnelDevice", One(Any), NotHonoured),
    kw!("VerifyHostKeyDNS", One(Any), NotHonoured),
    kw!("XAuthLocation", One(Any), NotHonoured),
    kw!("PubkeyAuthOptions", One(Any), NotHonoured),
    kw!("WarnWeakCrypto", One(Any), NotHonoured),
    kw!("RefuseConnection", One(Any), NotHonoured),
    kw!("VersionAddendum", Words, NotHonoured),
    // Gone from OpenSSH, which reads and ignores them.
    kw!("Protocol", Words, Deprecated),
    kw!("Cipher", Words, Deprecated),
    kw!("FallBackToRsh", Words, Deprecated),
    kw!("UseRsh", Words, Deprecated),
    kw!("UseRoaming", Words, Deprecated),
    kw!("UsePrivilegedPort", Words, Deprecated),
    kw!("RhostsRSAAuthentication", Words, Deprecated),
    kw!("RSAAuthentication", Words, Deprecated),
    kw!("CompressionLevel", Words, Deprecated),
    kw!("UseBlacklistedKeys", Words, Deprecated),
    kw!("SmartcardDevice", Words, Deprecated),
];

/// The keyword, matched case-insensitively.
pub fn find(keyword: &str) -> Option<&'static Keyword> {
    KEYWORDS
        .iter()
        .find(|k| k.name.eq_ignore_ascii_case(keyword))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found_in_any_case() {
        let mut seen = std::collections::HashSet::new();
        for k in KEYWORDS {
            assert!(seen.insert(k.name.to_ascii_lowercase()), "{} twice", k.name);
        }
        assert_eq!(find("hostname").unwrap().name, "HostName");
        assert_eq!(find("IDENTITYFILE").unwrap().kind, Accumulate);
        assert!(
            find("Host").is_none(),
            "Host/Match/Include are the reader's"
        );
    }
}
