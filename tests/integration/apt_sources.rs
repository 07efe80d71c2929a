//! APT sources on real Debian hosts (tests/debian/aptrepo-*/, recorded with
//! ansible-playbook by tests/debian/record.sh): `deb822_repository`'s `.sources` files,
//! byte for byte as Ansible writes them, and a rerun that changes nothing.

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
