//! APT sources on real Debian hosts (tests/debian/aptrepo-*/, recorded with
//! ansible-playbook by tests/debian/record.sh): `deb822_repository`'s `.sources` files,
//! `apt_repository`'s `.list` lines and `apt_key`'s keyrings, byte for byte as Ansible
//! writes them, and a rerun that changes nothing.

use crate::support::debian;
use crate::support::debian_scenario;

#[test]
fn deb822_repository_matches_ansible() {
    if !debian::available("deb822_repository_matches_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("aptrepo-deb822");
    let sources =
        String::from_utf8(host.read("/etc/apt/sources.list.d/local-repo.sources")).unwrap();
    assert!(
        sources.contains("Signed-By: /etc/apt/keyrings/local.asc\n"),
        "{sources}"
    );
    assert!(
        host.stat("/etc/apt/sources.list.d/short-lived.sources")
            .is_none()
    );
}

#[test]
fn apt_repository_matches_ansible() {
    if !debian::available("apt_repository_matches_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("aptrepo-lines");
    // Each task that changes something writes every file back normalised: `## x` became
    // `# # x` at the first task, then `# x` a comment of an empty disabled line.
    let list = String::from_utf8(host.read("/etc/apt/sources.list")).unwrap();
    assert_eq!(
        list,
        "#  # the local repository, off for now\ndeb [trusted=yes] file:/opt/turbo-repo ./ # local\n\n"
    );
    let mixed = String::from_utf8(host.read("/etc/apt/sources.list.d/mixed.list")).unwrap();
    assert_eq!(
        mixed,
        "# kept\n# deb http://gone.invalid/debian stable main\n"
    );
    assert!(host.stat("/etc/apt/sources.list.d/gone.list").is_none());
    assert!(
        host.stat("/etc/apt/sources.list.d/check_invalid_debian.list")
            .is_none()
    );
}

#[test]
fn apt_key_matches_ansible() {
    if !debian::available("apt_key_matches_ansible") {
        return;
    }
    let (host, _, _) = debian_scenario::check("aptrepo-key");
    let listed = host.check_output(&[
        "apt-key",
        "--keyring",
        "/etc/apt/trusted.gpg.d/inline.gpg",
        "adv",
        "--list-public-keys",
        "--keyid-format=long",
    ]);
    assert!(listed.contains("D6654FAA5FCAA0E6"), "{listed}");
    assert!(host.read("/etc/apt/trusted.gpg.d/old.gpg").is_empty());
}
