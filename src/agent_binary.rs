//! The agent this controller uploads: embedded at build time by build.rs, or taken from
//! `TURBO_PLAY_AGENT` (a path) to try another build without rebuilding the controller.

use std::sync::OnceLock;

const EMBEDDED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/turbo-agent.bin"));
const EMBEDDED_SHA256: &str = env!("TURBO_AGENT_SHA256");

/// `uname -sm` of the targets the embedded agent runs on.
pub const SUPPORTED_UNAME: &str = "Linux x86_64";

pub struct AgentBinary {
    pub bytes: std::borrow::Cow<'static, [u8]>,
    /// Hex sha256 of `bytes`; the cache file on the target is named after its prefix.
    pub sha256: String,
}

impl AgentBinary {
    /// The cache path relative to the remote home: content-addressed, so a new build never
    /// runs an old file, and an old build's file is simply not used.
    pub fn remote_name(&self) -> String {
        format!("agent-{}", &self.sha256[..16])
    }
}

/// The agent to use for this run (read once).
pub fn agent_binary() -> Result<&'static AgentBinary, String> {
    static AGENT: OnceLock<Result<AgentBinary, String>> = OnceLock::new();
    AGENT
        .get_or_init(|| match std::env::var_os("TURBO_PLAY_AGENT") {
            Some(path) => {
                let bytes = std::fs::read(&path).map_err(|e| {
                    format!(
                        "TURBO_PLAY_AGENT={}: {e}",
                        std::path::Path::new(&path).display()
                    )
                })?;
                let sha256 = sha256_hex(&bytes);
                Ok(AgentBinary {
                    bytes: bytes.into(),
                    sha256,
                })
            }
            None => Ok(AgentBinary {
                bytes: EMBEDDED.into(),
                sha256: EMBEDDED_SHA256.to_string(),
            }),
        })
        .as_ref()
        .map_err(Clone::clone)
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
