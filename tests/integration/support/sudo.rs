//! sudoers.d rules for the tests' throw-away users.

use std::path::{Path, PathBuf};

/// A sudoers.d rule for one test user, removed when dropped.
pub struct SudoRule(PathBuf);

impl SudoRule {
    pub fn new(user: &str, rule: &str) -> SudoRule {
        assert!(
            Path::new("/usr/bin/sudo").exists(),
            "these tests need sudo (apt-get install sudo; .ci/run installs it)"
        );
        let path = PathBuf::from(format!("/etc/sudoers.d/turbo-play-test-{user}"));
        std::fs::write(&path, format!("{user} {rule}\n")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o440))
            .unwrap();
        SudoRule(path)
    }
}

impl Drop for SudoRule {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
