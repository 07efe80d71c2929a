//! Ansible Vault end to end: files and values encrypted by the real `ansible-vault`
//! (ansible-core 2.21.5; `fixtures/vault/`, made once: CI has no ansible-vault) decrypt
//! where Ansible decrypts them, and fail where Ansible fails, with its words and exit
//! codes (recorded from ansible-playbook run side by side on the same fixtures).
//!
//! The fixtures: `dev.pass` (`dev-secret`) and `prod.pass` / the script `prod-pass.sh`
//! (`prod-secret`); `secret_vars.yml`, `included.yml`, `secret.txt`, `secret.j2`
//! encrypted with `--vault-id dev@dev.pass` (1.2), `legacy_vars.yml` with
//! `--vault-password-file dev.pass` (1.1), `prod_vars.yml` and `group_vars_all.yml` with
//! `--vault-id prod@prod.pass`, and `encrypt_string` output for one dev and one prod
//! value (`inline.yml`) and a task argument (`task_arg.txt`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::support::hosts::LocalHosts;
use crate::support::run::{TestRun, assert_contains, assert_not_contains};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/integration/fixtures/vault"
);

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(FIXTURES).join(name)).expect("vault fixture")
}

fn fixture_text(name: &str) -> String {
    String::from_utf8(fixture(name)).expect("UTF-8 fixture")
}

/// A run whose directory holds the fixtures where a playbook finds them.
fn vault_run(hosts: &LocalHosts) -> TestRun {
    let run = TestRun::new()
        .local_hosts(hosts)
        .file_bytes("dev.pass", &fixture("dev.pass"))
        .file_bytes("prod.pass", &fixture("prod.pass"))
        .file_bytes("prod-pass.sh", &fixture("prod-pass.sh"))
        .file_bytes("vars/secret_vars.yml", &fixture("secret_vars.yml"))
        .file_bytes("vars/legacy_vars.yml", &fixture("legacy_vars.yml"))
        .file_bytes("vars/prod_vars.yml", &fixture("prod_vars.yml"))
        .file_bytes("vars/inline.yml", &fixture("inline.yml"))
        .file_bytes("included.yml", &fixture("included.yml"))
        .file_bytes("group_vars/all/vault.yml", &fixture("group_vars_all.yml"))
        .file_bytes("files/secret.txt", &fixture("secret.txt"))
        .file_bytes("templates/secret.j2", &fixture("secret.j2"));
    // Git keeps the executable bit, but a checkout's umask may not: set it for sure.
    let script = run.dir().join("prod-pass.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    run
}

/// `task_arg.txt`'s `!vault` block, re-indented as the value of `key` at `indent`.
fn inline_arg(key: &str, indent: usize) -> String {
    let text = fixture_text("task_arg.txt");
    let mut lines = text.lines();
    lines.next().expect("the `name: !vault |` line");
    let pad = " ".repeat(indent);
    let body: String = lines.map(|l| format!("{pad}  {}\n", l.trim())).collect();
    format!("{pad}{key}: !vault |\n{body}")
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const DEV_AND_PROD: &[&str] = &[
    "--vault-id",
    "dev@dev.pass",
    "--vault-id",
    "prod@prod-pass.sh",
];

#[test]
fn vaulted_files_and_values_decrypt_where_ansible_decrypts_them() {
    let hosts = LocalHosts::new(&["web1"]);
    let playbook = format!(
        r#"- hosts: all
  gather_facts: false
  vars_files: [secret_vars.yml, legacy_vars.yml, prod_vars.yml, inline.yml]
  vars:
    marker: M
  tasks:
    - include_vars: included.yml
    - file: {{path: ~/out/tree, state: directory}}
    - copy:
        dest: ~/out/vars.txt
        content: "{{{{ vaulted_a }}}} {{{{ vaulted_n + 1 }}}} {{{{ legacy_var }}}} {{{{ prod_only }}}} {{{{ inline_dev }}}} {{{{ inline_prod }}}} {{{{ group_secret }}}} {{{{ included_secret }}}}\n"
    - copy:
        dest: ~/out/task_arg.txt
{arg}
    - copy: {{src: secret.txt, dest: ~/out/copied.txt}}
    - copy: {{src: secret.txt, dest: ~/out/raw.txt, decrypt: false}}
    - copy: {{src: files/, dest: ~/out/tree/}}
    - template: {{src: secret.j2, dest: ~/out/rendered.txt}}
    - copy:
        dest: ~/out/lookups.txt
        content: "{{{{ lookup('file', 'secret.txt') }}}}|{{{{ lookup('unvault', 'secret.txt') }}}}"
"#,
        arg = inline_arg("content", 8)
    );
    let out = vault_run(&hosts)
        .playbook(&playbook)
        .args(DEV_AND_PROD)
        .run();
    out.assert_code(0);
    let home = hosts.home().join("out");
    assert_eq!(
        read(home.join("vars.txt")),
        "from-secret-vars 43 from-1.1 from-prod-file inline-dev-value inline-prod-value from-group-vars from-include-vars\n"
    );
    assert_eq!(read(home.join("task_arg.txt")), "task-arg-secret");
    let plain = "secret file line 1\nsecret file line 2\n";
    assert_eq!(read(home.join("copied.txt")), plain);
    assert_eq!(read(home.join("tree/secret.txt")), plain);
    // decrypt: false copies the envelope as it is.
    assert_eq!(
        read(home.join("raw.txt")).into_bytes(),
        fixture("secret.txt")
    );
    assert_eq!(
        read(home.join("rendered.txt")),
        "rendered M and from-secret-vars\n"
    );
    // file strips the trailing newline, unvault does not (as in Ansible).
    assert_eq!(
        read(home.join("lookups.txt")),
        "secret file line 1\nsecret file line 2|secret file line 1\nsecret file line 2\n"
    );
    for secret in ["dev-secret", "prod-secret"] {
        assert_not_contains(&out, secret);
    }
    // The same run again changes nothing: what was decrypted is what is on the host.
    let again = vault_run(&hosts)
        .playbook(&playbook)
        .args(DEV_AND_PROD)
        .run();
    again.assert_code(0);
    assert_eq!(again.recap("web1").changed, 0, "{}", again.stdout);
}

/// A values file of inline `!vault` values opens only what is used: the prod value is
/// an error where a template reads it, not where the file is read.
#[test]
fn a_vaulted_value_stays_vault_encrypted_until_it_is_changed() {
    let hosts = LocalHosts::new(&["web1"]);
    let out = vault_run(&hosts)
        .playbook(
            r#"- hosts: all
  gather_facts: false
  vars_files: [inline.yml]
  vars:
    indirect: "{{ inline_dev }}"
    changed: "x{{ inline_dev }}"
  tasks:
    - set_fact:
        kept: "{{ inline_dev }}"
        upper: "{{ inline_dev | upper }}"
    - debug:
        msg: "{{ [inline_dev is vault_encrypted, indirect is vault_encrypted, kept is vault_encrypted, changed is vault_encrypted, upper is vault_encrypted, inventory_hostname is vault_encrypted] }}"
    - debug:
        msg: "{{ ['vars/secret_vars.yml' is vaulted_file, 'vars/inline.yml' is vaulted_file] }}"
"#,
        )
        .args(DEV_AND_PROD)
        .run();
    // What ansible-playbook 2.21.5 shows for the same play.
    out.assert_code(0);
    assert_contains(
        &out,
        "\"msg\": [\n        true,\n        true,\n        true,\n        false,\n        false,\n        false\n    ]",
    );
    assert_contains(&out, "\"msg\": [\n        true,\n        false\n    ]");
}

#[test]
fn an_inline_value_nobody_can_decrypt_fails_only_where_it_is_used() {
    let hosts = LocalHosts::new(&["web1"]);
    let out = vault_run(&hosts)
        .file("group_vars/all/vault.yml", "")
        .playbook(
            r#"- hosts: all
  gather_facts: false
  vars_files: [inline.yml]
  tasks:
    - debug: msg="{{ inline_dev }}"
    - debug: msg="{{ inline_prod }}"
"#,
        )
        .args(&["--vault-id", "dev@dev.pass"])
        .run();
    // ansible-playbook: exit 2, "Attempt to use undecryptable variable: Decryption
    // failed (no vault secrets were found that could decrypt)." on the second task.
    out.assert_code(2);
    assert_contains(&out, "\"msg\": \"inline-dev-value\"");
    assert_contains(
        &out,
        "Attempt to use undecryptable variable: Decryption failed (no vault secrets were found that could decrypt) on ",
    );
    assert_contains(
        &out,
        "/vars/inline.yml:9:11 (the HMAC did not match with any of the vault secrets tried (dev)",
    );
    let recap = out.recap("web1");
    assert_eq!((recap.ok, recap.failed), (1, 1));
}

#[test]
fn a_wrong_password_or_none_is_ansibles_error_naming_the_file() {
    let hosts = LocalHosts::new(&["web1"]);
    let play = "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: msg=hi\n";
    // A group_vars file that cannot be opened stops the run before it starts:
    // ansible-playbook exits 4 with "Decryption failed (no vault secrets were found that
    // could decrypt)." (and "Attempting to decrypt but no vault secrets found." without
    // any secret).
    let wrong = vault_run(&hosts)
        .file("wrong.pass", "not-the-password\n")
        .playbook(play)
        .args(&["--vault-password-file", "wrong.pass"])
        .run();
    wrong.assert_code(4);
    assert_contains(
        &wrong,
        "group_vars/all/vault.yml: Decryption failed (no vault secrets were found that could decrypt).",
    );
    assert_contains(&wrong, "tried (default)");
    assert_not_contains(&wrong, "not-the-password");
    let none = vault_run(&hosts).playbook(play).run();
    none.assert_code(4);
    assert_contains(
        &none,
        "group_vars/all/vault.yml: Attempting to decrypt but no vault secrets found.",
    );
    // A vars file fails its play on every host (ansible-playbook ends the run with exit 1
    // instead, as it does for any broken vars_files file: turbo-play reads vars_files per
    // host, for every error, not only Vault's).
    let vars_files = vault_run(&hosts)
        .file("group_vars/all/vault.yml", "")
        .playbook("- hosts: all\n  gather_facts: false\n  vars_files: [secret_vars.yml]\n  tasks:\n    - debug: var=vaulted_a\n")
        .args(&["--vault-id", "prod@prod.pass"])
        .run();
    vars_files.assert_code(2);
    assert_contains(
        &vars_files,
        "vars/secret_vars.yml: Decryption failed (no vault secrets were found that could decrypt).",
    );
}

/// The envelope with the last hex digit of its ciphertext changed: the outer hex decoded,
/// the inner hex's last digit replaced, encoded and cut into 80 columns again.
fn tamper_last_ciphertext_digit(envelope: &str) -> String {
    let mut lines = envelope.lines();
    let header = lines.next().expect("header");
    let outer: String = lines.collect();
    let mut inner: Vec<u8> = (0..outer.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&outer[i..i + 2], 16).expect("hex"))
        .collect();
    let last = inner.last_mut().expect("ciphertext");
    *last = if *last == b'0' { b'1' } else { b'0' };
    let hex: String = inner.iter().map(|b| format!("{b:02x}")).collect();
    let mut out = format!("{header}\n");
    for chunk in hex.as_bytes().chunks(80) {
        out.push_str(std::str::from_utf8(chunk).expect("ASCII"));
        out.push('\n');
    }
    out
}

#[test]
fn a_tampered_file_fails_its_hmac() {
    let hosts = LocalHosts::new(&["web1"]);
    // The last hex digit of the ciphertext changed: still well-formed, but its HMAC no
    // longer matches (ansible-playbook: "Decryption failed (no vault secrets were found
    // that could decrypt).", naming the file).
    let text = tamper_last_ciphertext_digit(&fixture_text("secret.txt"));
    let out = vault_run(&hosts)
        .file("files/tampered.txt", &text)
        .playbook("- hosts: all\n  gather_facts: false\n  tasks:\n    - copy: {src: tampered.txt, dest: ~/out/t.txt}\n")
        .args(DEV_AND_PROD)
        .run();
    out.assert_code(2);
    assert_contains(
        &out,
        "Decryption failed (no vault secrets were found that could decrypt) on ",
    );
    assert_contains(
        &out,
        "files/tampered.txt (the HMAC did not match with any of the vault secrets tried (dev, prod)",
    );
    assert_contains(&out, "or the file was changed after it was encrypted");
    assert!(!hosts.home().join("out/t.txt").exists());
}

/// Secrets from the environment and ansible.cfg, a password script, and a source that
/// fails while another works (a warning, as Ansible's).
#[test]
fn secrets_from_the_environment_ansible_cfg_and_a_script() {
    let hosts = LocalHosts::new(&["web1"]);
    let play = "- hosts: all\n  gather_facts: false\n  vars_files: [secret_vars.yml]\n  tasks:\n    - debug: msg=\"{{ vaulted_a }} {{ group_secret }}\"\n";
    let run = vault_run(&hosts)
        .playbook(play)
        .env("ANSIBLE_VAULT_PASSWORD_FILE", "dev.pass")
        .file(
            "ansible.cfg",
            "[defaults]\nvault_identity_list = missing@nope.pass, prod@prod-pass.sh\n",
        );
    let dir = run.dir().to_path_buf();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = run.run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"from-secret-vars from-group-vars\"");
    assert_contains(
        &out,
        &format!(
            "[WARNING]: Error getting vault password file (missing): The vault password file {} was not found",
            dir.join("nope.pass").display()
        ),
    );
    // The password reaches no child: not the agent's environment, nor any argv.
    let out = vault_run(&hosts)
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - shell: env; ps -eo args\n      register: seen\n    - debug: var=seen.stdout\n",
        )
        .args(DEV_AND_PROD)
        .arg("-v")
        .run();
    out.assert_code(0);
    assert_contains(&out, "PATH=");
    for secret in ["dev-secret", "prod-secret"] {
        assert_not_contains(&out, secret);
    }
}

#[test]
fn a_vault_encrypted_inventory_is_read() {
    let hosts = LocalHosts::new(&["web1"]);
    let run = vault_run(&hosts).file("group_vars/all/vault.yml", "").playbook(
        "- hosts: vaulted\n  gather_facts: false\n  tasks:\n    - debug: msg=\"{{ inv_secret }}\"\n",
    );
    let inventory = format!(
        "[vaulted]\n{} inv_secret=from-inventory\n",
        hosts.line("web1")
    );
    let encrypted = turbo_play::vault::encrypt(inventory.as_bytes(), b"dev-secret", "dev").unwrap();
    std::fs::write(run.dir().join("vaulted.ini"), encrypted).unwrap();
    let out = run
        .args(&["-i", "vaulted.ini", "--vault-id", "dev@dev.pass"])
        .run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"from-inventory\"");
}

/// The other actions that read a controller file with `decrypt` (default true).
#[test]
fn assemble_and_unarchive_decrypt_their_local_sources() {
    let hosts = LocalHosts::new(&["web1"]);
    let run = vault_run(&hosts)
        .file("group_vars/all/vault.yml", "")
        .file("parts/10-plain", "plain part\n")
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - file: {path: ~/out/x, state: directory}\n    - assemble: {src: parts, dest: ~/out/assembled.txt, remote_src: false}\n    - unarchive: {src: bundle.tar, dest: ~/out/x}\n",
        );
    let encrypt = |bytes: &[u8]| turbo_play::vault::encrypt(bytes, b"dev-secret", "dev").unwrap();
    std::fs::write(
        run.dir().join("parts/20-vaulted"),
        encrypt(b"vaulted part\n"),
    )
    .unwrap();
    let staging = run.dir().join("staging");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::write(staging.join("inside.txt"), "from the archive\n").unwrap();
    let tar = std::process::Command::new("tar")
        .args(["-cf", "-", "-C"])
        .arg(&staging)
        .arg("inside.txt")
        .output()
        .expect("tar");
    assert!(tar.status.success());
    std::fs::write(run.dir().join("files/bundle.tar"), encrypt(&tar.stdout)).unwrap();
    let out = run.args(&["--vault-id", "dev@dev.pass"]).run();
    out.assert_code(0);
    let home = hosts.home().join("out");
    assert_eq!(
        read(home.join("assembled.txt")),
        "plain part\nvaulted part\n"
    );
    assert_eq!(read(home.join("x/inside.txt")), "from the archive\n");
}

/// `-J` asks on the terminal, without echo (a pty from `script(1)`, where it exists).
#[test]
fn ask_vault_pass_prompts_on_the_terminal_without_echo() {
    use std::io::{Read, Write};
    use std::process::{Command, Stdio};
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no script(1) to give the run a terminal");
        return;
    }
    let hosts = LocalHosts::new(&["web1"]);
    // The files `run()` would write; the binary runs under script(1) instead.
    let run = vault_run(&hosts)
        .file("group_vars/all/vault.yml", "")
        .file("site.yml", "- hosts: all\n  gather_facts: false\n  vars_files: [secret_vars.yml]\n  tasks:\n    - debug: var=vaulted_a\n")
        .file("hosts", &hosts.inventory());
    let line = format!("{} site.yml -i hosts -J", env!("CARGO_BIN_EXE_turbo-play"));
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .current_dir(run.dir())
        .env("HOME", hosts.home())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script");
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains("Vault password: ") {
        let n = stdout.read(&mut buf).expect("read the prompt");
        assert!(n > 0, "no prompt: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    // Echo is off once the prompt is written; give stty a moment to have turned it off.
    std::thread::sleep(std::time::Duration::from_millis(300));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"dev-secret\n")
        .unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    let status = child.wait().unwrap();
    let text = String::from_utf8_lossy(&seen);
    assert!(status.success(), "{text}");
    // On a terminal the results are a progress display; the recap says it ran.
    assert!(text.contains("ok=1 "), "{text}");
    assert!(text.contains("failed=0"), "{text}");
    assert!(!text.contains("dev-secret"), "{text}");
}

/// `-e @file` reads an encrypted file too (the secrets are loaded before extra vars).
#[test]
fn encrypted_extra_vars_file() {
    let hosts = LocalHosts::new(&["web1"]);
    let out = vault_run(&hosts)
        .file("group_vars/all/vault.yml", "")
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - debug: msg=\"{{ vaulted_a }}\"\n",
        )
        .args(&["-e", "@vars/secret_vars.yml", "--vault-id", "dev@dev.pass"])
        .run();
    out.assert_code(0);
    assert_contains(&out, "\"msg\": \"from-secret-vars\"");
}

/// A vault-encrypted variables file that is no mapping fails as any such file does, but
/// the error never quotes the plaintext (Ansible's errors keep encrypted content out).
#[test]
fn an_encrypted_file_that_fails_to_load_is_not_quoted() {
    let hosts = LocalHosts::new(&["web1"]);
    let run = vault_run(&hosts)
        .file("group_vars/all/vault.yml", "")
        .playbook(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - include_vars: vars/bad.yml\n",
        );
    let encrypted =
        turbo_play::vault::encrypt(b"db_password:\"hunter2\"\n", b"dev-secret", "dev").unwrap();
    std::fs::write(run.dir().join("vars/bad.yml"), encrypted).unwrap();
    let out = run.args(&["--vault-id", "dev@dev.pass"]).run();
    out.assert_code(2);
    assert_contains(&out, "a variables file must be a mapping, got a string");
    assert_not_contains(&out, "hunter2");
}

/// ansible-playbook 2.21.5 on the same play: a variable that reads an undecryptable
/// value fails where it is used, `unvault` opens a vaulted value with the password it is
/// given (one no secret of the run decrypts too, and a wrong one fails even where the
/// run's secret decrypted it), and `vault(..., wrap_object=True)` makes a vaulted value.
#[test]
fn unvault_opens_vaulted_values_with_its_own_password() {
    let hosts = LocalHosts::new(&["web1"]);
    let out = vault_run(&hosts)
        .file("group_vars/all/vault.yml", "")
        .playbook(
            r#"- hosts: all
  gather_facts: false
  vars_files: [inline.yml]
  vars:
    holder:
      fine: yes
      bang: "{{ inline_prod }}"
  tasks:
    - debug: var=holder
      ignore_errors: true
      register: shown
    - debug:
        msg:
          - "{{ shown is failed }}"
          - "{{ inline_prod | unvault('prod-secret') }}"
          - "{{ inline_dev | unvault('dev-secret') }}"
          - "{{ 'x' | vault('pw', wrap_object=True) is ansible._protomatter.tagged_with('VaultedValue') }}"
          - "{{ 'x' | vault('pw') is ansible._protomatter.tagged_with('VaultedValue') }}"
    - debug:
        msg: "{{ inline_dev | unvault('wrong') }}"
      ignore_errors: true
"#,
        )
        .args(&["--vault-id", "dev@dev.pass"])
        .run();
    out.assert_code(0);
    assert_contains(
        &out,
        "Attempt to use undecryptable variable: Decryption failed (no vault secrets were found that could decrypt)",
    );
    assert_not_contains(&out, "__tp_vault_inline");
    assert_contains(
        &out,
        "\"msg\": [\n        true,\n        \"inline-prod-value\",\n        \"inline-dev-value\",\n        true,\n        false\n    ]",
    );
    assert_contains(
        &out,
        "Unable to decrypt: Decryption failed (no vault secrets were found that could decrypt).",
    );
    let recap = out.recap("web1");
    assert_eq!((recap.ok, recap.failed, recap.ignored), (3, 0, 2));
}
