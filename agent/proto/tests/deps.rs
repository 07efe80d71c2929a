//! The agent links turbo-proto, and the agent must stay small and std-only: a dependency
//! added here lands on every managed host. This test makes that a deliberate decision.

const ALLOWED: &[&str] = &["serde", "bincode", "flate2"];

#[test]
fn only_serde_bincode_and_flate2() {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let text = std::fs::read_to_string(manifest).expect("reading agent/proto/Cargo.toml");
    let mut in_deps = false;
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            // `[dependencies.foo]` tables declare a dependency too.
            if let Some(name) = line
                .strip_prefix("[dependencies.")
                .and_then(|rest| rest.strip_suffix(']'))
            {
                found.push(name.trim().to_string());
            }
            in_deps = line == "[dependencies]";
            continue;
        }
        if !in_deps || line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((name, _)) = line.split_once('=') {
            found.push(name.trim().trim_matches('"').to_string());
        }
    }
    assert!(!found.is_empty(), "no [dependencies] found in {manifest}");
    let extra: Vec<&String> = found
        .iter()
        .filter(|d| !ALLOWED.contains(&d.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "turbo-proto may depend only on {ALLOWED:?}; remove {extra:?} from {manifest}"
    );
}
