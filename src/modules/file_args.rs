//! File arguments as Ansible reads them: modes (octal or symbolic) and ownership.

use serde_json::Value;
use turbo_proto::FileMode;

use super::{Args, ModuleError};

/// A file mode as Ansible reads it: an integer is the bits themselves (YAML `0644` arrives
/// as 420), a string of octal digits is octal text ("0644", "644", "0o644"), anything
/// else must be symbolic ("u=rw,g=r,o=r", "a+x").
pub fn parse_mode(v: &Value) -> Result<Option<FileMode>, ModuleError> {
    match v {
        Value::Null => Ok(None),
        Value::Number(n) => match n.as_u64() {
            Some(bits) if bits <= 0o7777 => Ok(Some(FileMode::Bits(bits as u32))),
            _ => Err(ModuleError::InvalidMode(n.to_string())),
        },
        Value::String(s) => {
            let text = s.trim();
            let digits = text
                .strip_prefix("0o")
                .or_else(|| text.strip_prefix("0O"))
                .unwrap_or(text);
            if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                return match u32::from_str_radix(digits, 8) {
                    Ok(bits) if bits <= 0o7777 => Ok(Some(FileMode::Bits(bits))),
                    _ => Err(ModuleError::InvalidMode(s.clone())),
                };
            }
            if is_symbolic_mode(text) {
                Ok(Some(FileMode::Symbolic(text.to_string())))
            } else {
                Err(ModuleError::InvalidMode(s.clone()))
            }
        }
        other => Err(ModuleError::InvalidMode(other.to_string())),
    }
}

/// chmod's symbolic grammar, clause by clause: `[ugoa]*([-+=]([rwxXst]*|[ugo]))+`.
fn is_symbolic_mode(text: &str) -> bool {
    !text.is_empty()
        && text.split(',').all(|clause| {
            let rest = clause.trim_start_matches(['u', 'g', 'o', 'a']);
            if rest.is_empty() {
                return false;
            }
            let bytes = rest.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                if !matches!(bytes[i], b'+' | b'-' | b'=') {
                    return false;
                }
                i += 1;
                let start = i;
                while i < bytes.len() && !matches!(bytes[i], b'+' | b'-' | b'=') {
                    i += 1;
                }
                let perms = &rest[start..i];
                let copy_from = matches!(perms, "u" | "g" | "o");
                if !copy_from && !perms.chars().all(|c| "rwxXst".contains(c)) {
                    return false;
                }
            }
            true
        })
}

/// Ansible's `0644`-style mode text for file results (`'0%03o'`: set-id bits give `04755`).
pub fn mode_string(mode: u32) -> String {
    format!("0{:03o}", mode & 0o7777)
}

/// Ansible's `owner`/`group` file arguments (a name or a numeric id each).
pub(crate) fn ownership(args: &Args) -> turbo_proto::Ownership {
    turbo_proto::Ownership {
        user: args.str("owner").map(str::to_string),
        group: args.str("group").map(str::to_string),
    }
}
