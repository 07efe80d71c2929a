use super::*;

/// `ANSIBLE_VAULT_ENCRYPT_SALT=turbo-play-fixed-salt ansible-vault encrypt_string
/// --vault-id dev@dev.pass 'known plaintext'` (dev.pass holds `dev-secret`).
const KNOWN_1_2: &str = "$ANSIBLE_VAULT;1.2;AES256;dev
37343735373236323666326437303663363137393264363636393738363536343264373336313663
37340a38626631363866323265386438356536313266366564313137376265623861373638343434
3736336161316334666439643236643763633539306264623336610a396638646662646333383232
3963636334313439343261383335636235316330
";

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/integration/fixtures/vault"
);

fn vault(secrets: &[(&str, &str)]) -> Vault {
    Vault::new(
        secrets
            .iter()
            .map(|(id, pw)| Secret::new(*id, pw.as_bytes()))
            .collect(),
        false,
    )
}

#[test]
fn decrypts_what_ansible_vault_wrote() {
    let v = vault(&[("dev", "dev-secret")]);
    assert_eq!(v.decrypt(KNOWN_1_2.as_bytes()).unwrap(), b"known plaintext");
    // The 1.1 file of the fixtures, under another label: every secret is tried.
    let legacy = std::fs::read(format!("{FIXTURES}/legacy_vars.yml")).unwrap();
    assert_eq!(
        v.decrypt(&legacy).unwrap(),
        b"legacy_var: from-1.1\n".to_vec()
    );
}

#[test]
fn encrypts_byte_for_byte_as_ansible_vault() {
    let text = encrypt_with_salt(
        b"known plaintext",
        b"dev-secret",
        "dev",
        b"turbo-play-fixed-salt",
    );
    assert_eq!(text, KNOWN_1_2);
    let legacy = encrypt_with_salt(b"x", b"pw", "default", b"salt");
    assert!(
        legacy.starts_with("$ANSIBLE_VAULT;1.1;AES256\n"),
        "{legacy}"
    );
    let random = encrypt(b"", b"pw", "x").unwrap();
    assert!(random.lines().skip(1).all(|l| l.len() <= 80));
    assert_eq!(
        vault(&[("x", "pw")]).decrypt(random.as_bytes()).unwrap(),
        b""
    );
}

#[test]
fn wrong_password_and_tampering_fail_the_hmac() {
    let err = vault(&[("dev", "nope"), ("other", "also-nope")])
        .decrypt(KNOWN_1_2.as_bytes())
        .unwrap_err();
    assert_eq!(
        err,
        VaultError::NoSecretDecrypts {
            tried: vec!["dev".into(), "other".into()]
        }
    );
    assert_eq!(
        err.to_string(),
        "Decryption failed (no vault secrets were found that could decrypt)."
    );
    // The last hex digit of the ciphertext changed (the outer hex's last digit is the
    // low half of an inner hex digit: `0` becomes `1`).
    let mut tampered = KNOWN_1_2.as_bytes().to_vec();
    let at = tampered.len() - 2;
    assert_eq!(tampered[at], b'0');
    tampered[at] = b'1';
    assert!(matches!(
        vault(&[("dev", "dev-secret")]).decrypt(&tampered),
        Err(VaultError::NoSecretDecrypts { .. })
    ));
    // A high half changed makes the inner text no hex at all.
    tampered[at - 1] = b'0';
    assert_eq!(
        vault(&[("dev", "dev-secret")])
            .decrypt(&tampered)
            .unwrap_err(),
        VaultError::Format("Vault format unhexlify error.")
    );
    assert_eq!(
        Vault::default().decrypt(KNOWN_1_2.as_bytes()).unwrap_err(),
        VaultError::NoSecrets
    );
    assert_eq!(
        vault(&[("dev", "dev-secret")])
            .decrypt(b"$ANSIBLE_VAULT;1.1;AES256\nzz\n")
            .unwrap_err(),
        VaultError::Format("Vault format unhexlify error.")
    );
    assert_eq!(
        vault(&[("dev", "x")])
            .decrypt(b"$ANSIBLE_VAULT;1.1;DES\n00\n")
            .unwrap_err()
            .to_string(),
        "Vault vaulttext format error."
    );
}

#[test]
fn the_envelopes_own_id_is_tried_first_and_alone_with_id_match() {
    let secrets = vec![
        Secret::new("prod", b"prod-secret".to_vec()),
        Secret::new("dev", b"dev-secret".to_vec()),
    ];
    let v = Vault::new(secrets.clone(), true);
    assert_eq!(v.decrypt(KNOWN_1_2.as_bytes()).unwrap(), b"known plaintext");
    let relabelled = KNOWN_1_2.replace(";dev\n", ";prod\n");
    assert_eq!(
        v.decrypt(relabelled.as_bytes()).unwrap_err(),
        VaultError::NoSecretDecrypts {
            tried: vec!["prod".into()]
        }
    );
    // Without vault_id_match the label is only a hint.
    let v = Vault::new(secrets, false);
    assert_eq!(
        v.decrypt(relabelled.as_bytes()).unwrap(),
        b"known plaintext"
    );
}

#[test]
fn inline_values_travel_as_one_line() {
    let expr = inline_expression(KNOWN_1_2, "vars.yml:3:7");
    assert!(expr.starts_with("{{ __tp_vault_inline('$ANSIBLE_VAULT;1.2;AES256;dev 3734"));
    assert!(expr.ends_with("', 'vars.yml:3:7') }}"), "{expr}");
    let start = expr.find('\'').unwrap() + 1;
    let end = start + expr[start..].find('\'').unwrap();
    let one_line = &expr[start..end];
    assert_eq!(inline_envelope(&expr), Some(one_line));
    assert_eq!(inline_envelope(&format!("{expr} and more")), None);
    assert_eq!(
        vault(&[("dev", "dev-secret")])
            .decrypt(one_line.as_bytes())
            .unwrap(),
        b"known plaintext"
    );
}

#[cfg(test)]
mod sources {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
        path
    }

    use std::path::{Path, PathBuf};

    fn no_prompt(_: &str) -> Result<String, String> {
        panic!("nothing should prompt")
    }

    #[test]
    fn files_scripts_and_client_scripts() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("pw"), "  file-pw \n\n").unwrap();
        script(d, "pw.sh", "echo script-pw");
        script(
            d,
            "keys-client.sh",
            "[ \"$1 $2\" = '--vault-id prod' ] && echo client-pw",
        );
        let sources = SecretSources {
            identity_list: vec![format!("cfg@{}", d.join("pw").display())],
            vault_ids: vec![
                format!("s@{}", d.join("pw.sh").display()),
                format!("prod@{}", d.join("keys-client.sh").display()),
            ],
            password_files: vec![d.join("pw")],
            ..Default::default()
        };
        let (v, warnings) = sources.load(&mut no_prompt).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        let got: Vec<(String, String)> = v
            .secrets()
            .iter()
            .map(|s| {
                (
                    s.id.clone(),
                    String::from_utf8(s.password().to_vec()).unwrap(),
                )
            })
            .collect();
        let want = [
            ("cfg", "file-pw"),
            ("s", "script-pw"),
            ("prod", "client-pw"),
            ("default", "file-pw"),
        ];
        assert_eq!(
            got,
            want.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
        );
        assert!(!format!("{v:?}").contains("file-pw"));
    }

    #[test]
    fn a_bad_source_warns_while_another_works() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("pw"), "ok\n").unwrap();
        script(d, "fails.sh", "exit 3");
        let sources = SecretSources {
            vault_ids: vec![
                format!("a@{}", d.join("missing").display()),
                format!("b@{}", d.join("fails.sh").display()),
                format!("c@{}", d.join("pw").display()),
            ],
            ..Default::default()
        };
        let (v, warnings) = sources.load(&mut no_prompt).unwrap();
        assert_eq!(v.secrets().len(), 1);
        assert_eq!(
            warnings,
            [
                format!(
                    "Error getting vault password file (a): The vault password file {} was not found",
                    d.join("missing").display()
                ),
                format!(
                    "Error getting vault password file (b): Vault password script {} returned non-zero (3)",
                    d.join("fails.sh").display()
                ),
            ]
        );
        let only_bad = SecretSources {
            password_files: vec![d.to_path_buf()],
            ..Default::default()
        };
        assert_eq!(
            only_bad.load(&mut no_prompt).unwrap_err(),
            format!(
                "The vault password file provided '{}' can not be a directory",
                d.display()
            )
        );
        std::fs::write(d.join("empty"), "\n").unwrap();
        let empty = SecretSources {
            password_files: vec![d.join("empty")],
            ..Default::default()
        };
        assert_eq!(
            empty.load(&mut no_prompt).unwrap_err(),
            format!(
                "Invalid vault password was provided from file ({})",
                d.join("empty").display()
            )
        );
    }

    #[test]
    fn prompts_as_ansible_asks() {
        let sources = SecretSources {
            vault_ids: vec!["prod@prompt".into()],
            ask_vault_pass: true,
            ..Default::default()
        };
        let mut asked = Vec::new();
        let (v, _) = sources
            .load(&mut |text: &str| {
                asked.push(text.to_string());
                Ok(" typed \n".into())
            })
            .unwrap();
        assert_eq!(asked, ["Vault password (prod): ", "Vault password: "]);
        assert_eq!(v.secrets()[1].id, "default");
        assert_eq!(v.secrets()[1].password(), b"typed");
        let err = sources.load(&mut |_: &str| Ok(String::new())).unwrap_err();
        assert_eq!(err, "Invalid vault password was provided");
    }
}
