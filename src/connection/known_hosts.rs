//! OpenSSH's known_hosts, read the way ssh reads it: host patterns with `*`/`?` wildcards,
//! `!` negation and comma lists, `[host]:port` for ports other than 22, hashed names
//! (`|1|salt|hmac`), and the `@revoked` / `@cert-authority` markers (host certificates
//! checked against the authorities, as ssh's check_host_cert does).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use russh::keys::ssh_key::certificate::CertType;
use russh::keys::{Certificate, PublicKey};
use sha1::Sha1;

/// What the known_hosts files say about a host's key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKeyStatus {
    /// A line for this host holds exactly this key.
    Known,
    /// No line for this host holds a key of this type.
    Unknown,
    /// A line for this host holds a different key of the same type: possibly an attack.
    Changed { file: PathBuf, line: usize },
    /// The key is marked `@revoked` for this host.
    Revoked { file: PathBuf, line: usize },
}

/// What the known_hosts files say about a host certificate the server presented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertificateStatus {
    /// Signed by an `@cert-authority` of this host, a host certificate naming it, valid now.
    Trusted,
    /// No `@cert-authority` line of this host holds the signer: the certificate's key is
    /// checked as a plain host key, as ssh does.
    NoAuthority,
    /// Signed by an authority of this host, yet not valid for it: why.
    Invalid(String),
    /// The authority or the certificate's key is marked `@revoked`.
    Revoked { file: PathBuf, line: usize },
}

/// Whether any `@cert-authority` line applies to `host:port`: only then does the client
/// ask servers for a certificate.
pub fn has_cert_authority(files: &[PathBuf], host: &str, port: u16) -> bool {
    let name = lookup_name(host, port).to_ascii_lowercase();
    files.iter().any(|file| {
        std::fs::read_to_string(file).is_ok_and(|text| {
            text.lines().any(|line| {
                Entry::parse(line)
                    .is_some_and(|e| e.marker == Marker::CertAuthority && e.matches_host(&name))
            })
        })
    })
}

/// Checks a host certificate for `host:port` at `now` (Unix seconds), as ssh's
/// check_host_cert does: the signer an `@cert-authority` of the host, the type `host`, the
/// host among its principals, inside its validity period, no critical options.
pub fn check_certificate(
    files: &[PathBuf],
    host: &str,
    port: u16,
    cert: &Certificate,
    now: u64,
) -> io::Result<CertificateStatus> {
    let name = lookup_name(host, port).to_ascii_lowercase();
    let signer = cert.signature_key();
    let mut authority = None;
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("reading {}: {e}", file.display()),
                ));
            }
        };
        for (index, line) in text.lines().enumerate() {
            let Some(entry) = Entry::parse(line) else {
                continue;
            };
            let Some(key) = entry.key() else { continue };
            if entry.marker == Marker::Revoked
                && (key.key_data() == signer || key.key_data() == cert.public_key())
                && entry.matches_host(&name)
            {
                return Ok(CertificateStatus::Revoked {
                    file: file.clone(),
                    line: index + 1,
                });
            }
            if entry.marker == Marker::CertAuthority
                && key.key_data() == signer
                && entry.matches_host(&name)
                && authority.is_none()
            {
                authority = Some(key);
            }
        }
    }
    let Some(authority) = authority else {
        return Ok(CertificateStatus::NoAuthority);
    };
    let invalid = |why: String| Ok(CertificateStatus::Invalid(why));
    if cert.cert_type() != CertType::Host {
        return invalid("it is a user certificate, not a host certificate".into());
    }
    let host = host.to_ascii_lowercase();
    if !cert
        .valid_principals()
        .iter()
        .any(|p| wildcard_match(&p.to_ascii_lowercase(), &host))
    {
        return invalid(format!(
            "it names {} but not {host}",
            if cert.valid_principals().is_empty() {
                "no principal".to_string()
            } else {
                cert.valid_principals().join(", ")
            }
        ));
    }
    if let Some((option, _)) = cert.critical_options().iter().next() {
        return invalid(format!("unknown critical option {option}"));
    }
    let fingerprint = authority.fingerprint(russh::keys::HashAlg::Sha256);
    if cert.validate_at(now, [&fingerprint]).is_err() {
        return invalid(
            "its signature does not verify or it is outside its validity period".into(),
        );
    }
    Ok(CertificateStatus::Trusted)
}

/// The name ssh looks up: the bare host on port 22, `[host]:port` otherwise.
pub fn lookup_name(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

/// Checks `key` for `host:port` against every file in order (missing files are empty).
pub fn check(
    files: &[PathBuf],
    host: &str,
    port: u16,
    key: &PublicKey,
) -> io::Result<HostKeyStatus> {
    let name = lookup_name(host, port).to_ascii_lowercase();
    let mut known = false;
    let mut changed = None;
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("reading {}: {e}", file.display()),
                ));
            }
        };
        for (index, line) in text.lines().enumerate() {
            let Some(entry) = Entry::parse(line) else {
                continue;
            };
            if entry.marker == Marker::CertAuthority || !entry.matches_host(&name) {
                continue;
            }
            let Some(entry_key) = entry.key() else {
                continue;
            };
            let same_key = entry_key.key_data() == key.key_data();
            if entry.marker == Marker::Revoked {
                if same_key {
                    return Ok(HostKeyStatus::Revoked {
                        file: file.clone(),
                        line: index + 1,
                    });
                }
                continue;
            }
            if same_key {
                known = true;
            } else if changed.is_none()
                && entry_key.key_data().algorithm() == key.key_data().algorithm()
            {
                changed = Some((file.clone(), index + 1));
            }
        }
    }
    Ok(if known {
        HostKeyStatus::Known
    } else if let Some((file, line)) = changed {
        HostKeyStatus::Changed { file, line }
    } else {
        HostKeyStatus::Unknown
    })
}

/// Key types (`ssh-ed25519`, `ssh-rsa`, ...) recorded for `host:port`, so that the client
/// can ask the server for a key it can check, as ssh orders its host key algorithms.
pub fn known_key_types(files: &[PathBuf], host: &str, port: u16) -> Vec<String> {
    let name = lookup_name(host, port).to_ascii_lowercase();
    let mut types: Vec<String> = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        for line in text.lines() {
            if let Some(entry) = Entry::parse(line)
                && entry.marker == Marker::None
                && entry.matches_host(&name)
                && !types.iter().any(|t| t == entry.key_type)
            {
                types.push(entry.key_type.to_string());
            }
        }
    }
    types
}

/// The line [`append`] writes: `name keytype base64`, the name hashed as ssh's
/// HashKnownHosts writes it (`|1|salt|HMAC-SHA1(salt, name)`, both base64) when `hashed`.
pub fn entry_line(host: &str, port: u16, key: &PublicKey, hashed: bool) -> io::Result<String> {
    let bare = PublicKey::new(key.key_data().clone(), "");
    let openssh = bare
        .to_openssh()
        .unwrap_or_else(|_| format!("{} <unencodable>", key.algorithm().as_str()));
    let name = lookup_name(host, port);
    let name = if hashed {
        let mut salt = [0u8; 20];
        std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut salt)?;
        hashed_name(&salt, &name)
    } else {
        name
    };
    Ok(format!("{name} {}", openssh.trim_end()))
}

/// `|1|salt|hash` for `name` (lowercased, as ssh looks names up).
fn hashed_name(salt: &[u8], name: &str) -> String {
    let mut mac = <Hmac<Sha1> as KeyInit>::new_from_slice(salt).expect("HMAC takes any key");
    mac.update(name.to_ascii_lowercase().as_bytes());
    format!(
        "|1|{}|{}",
        BASE64.encode(salt),
        BASE64.encode(mac.finalize().into_bytes())
    )
}

/// Appends a line for `host:port` (accept-new), creating the directory (0700) and the
/// file (0600) the way ssh does when they are missing.
pub fn append(file: &Path, host: &str, port: u16, key: &PublicKey, hashed: bool) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let needs_newline = match std::fs::read(file) {
        Ok(bytes) => !bytes.is_empty() && !bytes.ends_with(b"\n"),
        Err(_) => false,
    };
    let mut out = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(file)?;
    let mut line = String::new();
    if needs_newline {
        line.push('\n');
    }
    line.push_str(&entry_line(host, port, key, hashed)?);
    line.push('\n');
    out.write_all(line.as_bytes())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    None,
    Revoked,
    CertAuthority,
}

struct Entry<'a> {
    marker: Marker,
    hosts: &'a str,
    key_type: &'a str,
    key_base64: &'a str,
}

impl<'a> Entry<'a> {
    fn parse(line: &'a str) -> Option<Entry<'a>> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        let mut fields = line.split_ascii_whitespace();
        let mut first = fields.next()?;
        let marker = match first {
            "@revoked" => Marker::Revoked,
            "@cert-authority" => Marker::CertAuthority,
            m if m.starts_with('@') => return None,
            _ => Marker::None,
        };
        if marker != Marker::None {
            first = fields.next()?;
        }
        Some(Entry {
            marker,
            hosts: first,
            key_type: fields.next()?,
            key_base64: fields.next()?,
        })
    }

    /// None for key types we cannot parse: such lines say nothing about our key.
    fn key(&self) -> Option<PublicKey> {
        PublicKey::from_openssh(&format!("{} {}", self.key_type, self.key_base64)).ok()
    }

    /// `name` is already lowercased.
    fn matches_host(&self, name: &str) -> bool {
        if let Some(hashed) = self.hosts.strip_prefix("|1|") {
            return hashed_matches(hashed, name);
        }
        let mut matched = false;
        for pattern in self.hosts.split(',') {
            let pattern = pattern.to_ascii_lowercase();
            if let Some(negated) = pattern.strip_prefix('!') {
                if wildcard_match(negated, name) {
                    // A negated match rules the line out whatever else matches.
                    return false;
                }
            } else if wildcard_match(&pattern, name) {
                matched = true;
            }
        }
        matched
    }
}

/// `salt|hash`, both base64: the line is for `name` when HMAC-SHA1(salt, name) == hash.
fn hashed_matches(salt_and_hash: &str, name: &str) -> bool {
    let Some((salt, hash)) = salt_and_hash.split_once('|') else {
        return false;
    };
    let (Ok(salt), Ok(hash)) = (BASE64.decode(salt), BASE64.decode(hash)) else {
        return false;
    };
    let Ok(mut mac) = <Hmac<Sha1> as KeyInit>::new_from_slice(&salt) else {
        return false;
    };
    mac.update(name.as_bytes());
    mac.verify_slice(&hash).is_ok()
}

/// ssh's `match_pattern`: `*` and `?` only.
fn wildcard_match(pattern: &str, text: &str) -> bool {
    crate::fnmatch::Pattern::openssh(pattern).matches(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// A fresh ed25519 public key from ssh-keygen, as (PublicKey, "ssh-ed25519 AAAA...").
    fn generate_key(dir: &Path, name: &str) -> (PublicKey, String) {
        generate_key_of_type(dir, name, "ed25519")
    }

    fn generate_key_of_type(dir: &Path, name: &str, key_type: &str) -> (PublicKey, String) {
        let path = dir.join(name);
        let status = Command::new("ssh-keygen")
            .args(["-q", "-t", key_type, "-N", "", "-C", "", "-f"])
            .arg(&path)
            .status()
            .expect("ssh-keygen (openssh-client) must be installed");
        assert!(status.success());
        let text = std::fs::read_to_string(path.with_extension("pub")).unwrap();
        let text = text.trim().to_string();
        (PublicKey::from_openssh(&text).unwrap(), text)
    }

    struct Fixture {
        dir: tempfile::TempDir,
        key: PublicKey,
        key_text: String,
        other: PublicKey,
        other_text: String,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let (key, key_text) = generate_key(dir.path(), "a");
        let (other, other_text) = generate_key(dir.path(), "b");
        Fixture {
            dir,
            key,
            key_text,
            other,
            other_text,
        }
    }

    impl Fixture {
        fn write(&self, name: &str, text: &str) -> PathBuf {
            let path = self.dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        }
        fn status(&self, text: &str, host: &str, port: u16) -> HostKeyStatus {
            let file = self.write("known_hosts", text);
            check(&[file], host, port, &self.key).unwrap()
        }
    }

    #[test]
    fn known_key_types_for_a_host() {
        let f = fixture();
        let (_, ecdsa) = generate_key_of_type(f.dir.path(), "c", "ecdsa");
        let file = f.write(
            "kh",
            &format!(
                "web1 {ecdsa}\nweb2 {}\n@revoked web1 {}\nweb1 {ecdsa}\n",
                f.key_text, f.other_text
            ),
        );
        assert_eq!(
            known_key_types(std::slice::from_ref(&file), "web1", 22),
            vec!["ecdsa-sha2-nistp256".to_string()]
        );
        assert!(known_key_types(&[file], "web3", 22).is_empty());
    }

    #[test]
    fn plain_host_on_port_22() {
        let f = fixture();
        let line = format!("web1.example.com {}\n", f.key_text);
        assert_eq!(
            f.status(&line, "web1.example.com", 22),
            HostKeyStatus::Known
        );
        assert_eq!(
            f.status(&line, "WEB1.example.com", 22),
            HostKeyStatus::Known
        );
        assert_eq!(
            f.status(&line, "web2.example.com", 22),
            HostKeyStatus::Unknown
        );
        // On another port the bare name does not apply.
        assert_eq!(
            f.status(&line, "web1.example.com", 2222),
            HostKeyStatus::Unknown
        );
    }

    #[test]
    fn bracketed_host_and_port() {
        let f = fixture();
        let line = format!("[127.0.0.1]:2222 {}\n", f.key_text);
        assert_eq!(f.status(&line, "127.0.0.1", 2222), HostKeyStatus::Known);
        assert_eq!(f.status(&line, "127.0.0.1", 2223), HostKeyStatus::Unknown);
        assert_eq!(f.status(&line, "127.0.0.1", 22), HostKeyStatus::Unknown);
    }

    #[test]
    fn comma_lists_wildcards_and_negation() {
        let f = fixture();
        let line = format!(
            "db1,*.web.example.com,!bad.web.example.com {}\n",
            f.key_text
        );
        assert_eq!(f.status(&line, "db1", 22), HostKeyStatus::Known);
        assert_eq!(
            f.status(&line, "a.web.example.com", 22),
            HostKeyStatus::Known
        );
        assert_eq!(
            f.status(&line, "bad.web.example.com", 22),
            HostKeyStatus::Unknown
        );
        assert_eq!(f.status(&line, "db2", 22), HostKeyStatus::Unknown);
    }

    #[test]
    fn changed_key_names_the_line() {
        let f = fixture();
        let text = format!("# comment\n\nother {}\nweb1 {}\n", f.key_text, f.other_text);
        match f.status(&text, "web1", 22) {
            HostKeyStatus::Changed { file, line } => {
                assert_eq!(line, 4);
                assert!(file.ends_with("known_hosts"));
            }
            other => panic!("expected Changed, got {other:?}"),
        }
        // A matching line anywhere wins over a stale one, as in ssh.
        let text = format!("web1 {}\nweb1 {}\n", f.other_text, f.key_text);
        assert_eq!(f.status(&text, "web1", 22), HostKeyStatus::Known);
    }

    #[test]
    fn a_key_of_another_type_is_not_a_change() {
        let f = fixture();
        let (_, ecdsa) = generate_key_of_type(f.dir.path(), "c", "ecdsa");
        let text = format!("web1 {ecdsa}\n");
        assert_eq!(f.status(&text, "web1", 22), HostKeyStatus::Unknown);
    }

    #[test]
    fn revoked_and_cert_authority_markers() {
        let f = fixture();
        let text = format!("web1 {k}\n@revoked * {k}\n", k = f.key_text);
        assert!(matches!(
            f.status(&text, "web1", 22),
            HostKeyStatus::Revoked { line: 2, .. }
        ));
        // A CA line is not a host key: it neither vouches for nor contradicts ours.
        let text = format!("@cert-authority web1 {}\n", f.other_text);
        assert_eq!(f.status(&text, "web1", 22), HostKeyStatus::Unknown);
        let text = format!("@cert-authority web1 {}\n", f.key_text);
        assert_eq!(f.status(&text, "web1", 22), HostKeyStatus::Unknown);
    }

    #[test]
    fn hashed_entries_from_ssh_keygen() {
        let f = fixture();
        let path = f.write(
            "hashed_hosts",
            &format!(
                "[127.0.0.1]:2222 {}\nweb1.example.com {}\n",
                f.key_text, f.other_text
            ),
        );
        let status = Command::new("ssh-keygen")
            .arg("-q")
            .arg("-H")
            .arg("-f")
            .arg(&path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        let hashed = std::fs::read_to_string(&path).unwrap();
        assert!(
            hashed.lines().all(|l| l.starts_with("|1|")),
            "ssh-keygen -H left plain names: {hashed}"
        );
        let files = [path];
        assert_eq!(
            check(&files, "127.0.0.1", 2222, &f.key).unwrap(),
            HostKeyStatus::Known
        );
        assert_eq!(
            check(&files, "127.0.0.1", 22, &f.key).unwrap(),
            HostKeyStatus::Unknown
        );
        assert!(matches!(
            check(&files, "web1.example.com", 22, &f.key).unwrap(),
            HostKeyStatus::Changed { line: 2, .. }
        ));
        assert_eq!(
            check(&files, "web1.example.com", 22, &f.other).unwrap(),
            HostKeyStatus::Known
        );
    }

    /// A host key signed by a fresh CA for `principals`: (CA public line, certificate).
    fn host_certificate(
        dir: &Path,
        principals: &str,
        validity: &str,
        host: bool,
    ) -> (String, Certificate) {
        let (_, ca) = generate_key(dir, "ca");
        let (_, _) = generate_key(dir, "hostkey");
        let mut sign = Command::new("ssh-keygen");
        sign.args(["-q", "-s"])
            .arg(dir.join("ca"))
            .args(["-I", "test", "-V", validity]);
        if host {
            sign.arg("-h");
        }
        let status = sign
            .args(["-n", principals])
            .arg(dir.join("hostkey.pub"))
            .status()
            .unwrap();
        assert!(status.success());
        let text = std::fs::read_to_string(dir.join("hostkey-cert.pub")).unwrap();
        (ca, Certificate::from_openssh(text.trim()).unwrap())
    }

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    #[test]
    fn host_certificates_against_cert_authority_lines() {
        let f = fixture();
        let (ca, cert) =
            host_certificate(f.dir.path(), "web1.example.com,10.0.0.*", "-5m:+1h", true);
        let file = f.write(
            "kh",
            &format!("@cert-authority *.example.com,10.0.0.* {ca}\n"),
        );
        let files = [file];
        let status =
            |host: &str, port: u16| check_certificate(&files, host, port, &cert, now()).unwrap();
        assert_eq!(status("web1.example.com", 22), CertificateStatus::Trusted);
        assert_eq!(status("10.0.0.7", 22), CertificateStatus::Trusted);
        assert!(has_cert_authority(&files, "web1.example.com", 22));
        // The CA line does not cover the name: the key is checked as a plain key.
        assert_eq!(status("web1.other.org", 22), CertificateStatus::NoAuthority);
        assert!(!has_cert_authority(&files, "web1.other.org", 22));
        assert!(!has_cert_authority(&files, "web1.example.com", 2222));
        // Covered by the CA line, not named by the certificate.
        match status("db1.example.com", 22) {
            CertificateStatus::Invalid(why) => {
                assert!(why.contains("not db1.example.com"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        // Out of its validity period.
        match check_certificate(&files, "web1.example.com", 22, &cert, now() + 7200).unwrap() {
            CertificateStatus::Invalid(why) => assert!(why.contains("validity"), "{why}"),
            other => panic!("{other:?}"),
        }
        // A revoked authority.
        let revoked = f.write("kh2", &format!("@cert-authority * {ca}\n@revoked * {ca}\n"));
        assert!(matches!(
            check_certificate(&[revoked], "web1.example.com", 22, &cert, now()).unwrap(),
            CertificateStatus::Revoked { line: 2, .. }
        ));
    }

    #[test]
    fn a_user_certificate_is_no_host_certificate() {
        let f = fixture();
        let (ca, cert) = host_certificate(f.dir.path(), "web1", "-5m:+1h", false);
        let file = f.write("kh", &format!("@cert-authority * {ca}\n"));
        assert!(matches!(
            check_certificate(&[file], "web1", 22, &cert, now()).unwrap(),
            CertificateStatus::Invalid(_)
        ));
    }

    #[test]
    fn missing_files_and_dev_null_are_empty() {
        let f = fixture();
        let files = [f.dir.path().join("nope"), PathBuf::from("/dev/null")];
        assert_eq!(
            check(&files, "web1", 22, &f.key).unwrap(),
            HostKeyStatus::Unknown
        );
    }

    #[test]
    fn append_creates_private_dir_and_file_and_is_then_known() {
        use std::os::unix::fs::PermissionsExt;
        let f = fixture();
        let file = f.dir.path().join("new/.ssh/known_hosts");
        append(&file, "127.0.0.1", 2222, &f.key, false).unwrap();
        append(&file, "web1", 22, &f.other, false).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        let (key_type, key_b64) = {
            let mut parts = f.key_text.split_whitespace();
            (parts.next().unwrap(), parts.next().unwrap())
        };
        assert_eq!(
            text.lines().next().unwrap(),
            format!("[127.0.0.1]:2222 {key_type} {key_b64}")
        );
        assert!(
            text.lines()
                .nth(1)
                .unwrap()
                .starts_with("web1 ssh-ed25519 ")
        );
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&file), 0o600);
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        assert_eq!(
            check(std::slice::from_ref(&file), "127.0.0.1", 2222, &f.key).unwrap(),
            HostKeyStatus::Known
        );
        assert_eq!(
            check(&[file], "web1", 22, &f.other).unwrap(),
            HostKeyStatus::Known
        );
    }

    #[test]
    fn hashed_append_is_what_ssh_keygen_finds() {
        let f = fixture();
        let file = f.dir.path().join("kh");
        append(&file, "127.0.0.1", 2222, &f.key, true).unwrap();
        append(&file, "Web1", 22, &f.other, true).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.lines().all(|l| l.starts_with("|1|")), "{text}");
        assert!(
            !text.contains("127.0.0.1") && !text.contains("eb1"),
            "{text}"
        );
        let files = [file.clone()];
        assert_eq!(
            check(&files, "127.0.0.1", 2222, &f.key).unwrap(),
            HostKeyStatus::Known
        );
        assert_eq!(
            check(&files, "web1", 22, &f.other).unwrap(),
            HostKeyStatus::Known
        );
        // OpenSSH's own lookup finds them.
        for name in ["[127.0.0.1]:2222", "web1"] {
            let out = Command::new("ssh-keygen")
                .arg("-F")
                .arg(name)
                .arg("-f")
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "ssh-keygen -F {name} found nothing in {text}"
            );
        }
    }

    #[test]
    fn append_after_a_last_line_without_newline() {
        let f = fixture();
        let file = f.write("kh", &format!("web9 {}", f.other_text));
        append(&file, "web1", 22, &f.key, false).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert_eq!(
            check(&[file], "web1", 22, &f.key).unwrap(),
            HostKeyStatus::Known
        );
    }
}
