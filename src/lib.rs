//! turbo-play: the controller. See ARCHITECTURE.md for the parts and the data flow.

pub mod agent_binary;
pub mod agent_session;
pub mod become_password;
pub mod booleans;
pub mod cli;
pub mod config;
pub mod connection;
pub mod delta;
pub mod display_options;
pub mod executor;
pub mod fnmatch;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod hash_merge;
pub mod host_slice;
pub mod inventory;
pub mod kv_args;
pub mod listing;
pub mod modules;
pub mod pep440;
pub mod playbook;
pub mod plugins;
pub mod report;
pub mod shell_words;
pub mod template;
pub mod tilde;
pub mod vars_file;
pub mod vault;
pub mod yaml;

/// The layering ARCHITECTURE.md describes ("Layers"): a part names only parts below it.
#[cfg(test)]
mod layering {
    use std::path::Path;

    /// Lower numbers are lower layers; parts not listed (executor, cli...) sit above all.
    const LAYERS: &[(&str, u8)] = &[
        ("booleans", 0),
        ("fnmatch", 0),
        ("tilde", 0),
        ("kv_args", 0),
        ("shell_words", 0),
        ("delta", 0),
        ("pep440", 0),
        ("hash_merge", 0),
        ("display_options", 1),
        ("vault", 1),
        ("yaml", 2),
        ("config", 2),
        ("plugins", 2),
        ("template", 3),
        ("vars_file", 4),
        ("inventory", 5),
        ("modules", 6),
        ("playbook", 7),
    ];

    fn layer(part: &str) -> Option<u8> {
        LAYERS.iter().find(|(p, _)| *p == part).map(|(_, l)| *l)
    }

    /// The parts a source file names through `crate::part` or `crate::{part, ...}`.
    fn named_parts(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            let names = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())].to_string(),
                None => rest.to_string(),
            };
            for name in names.split(',') {
                let part: String = name
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                out.push(part);
                if !rest.starts_with('{') {
                    break;
                }
            }
        }
        out
    }

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn parts_use_only_lower_layers() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut wrong = Vec::new();
        for file in files {
            let relative = file.strip_prefix(&src).unwrap();
            let first = relative.components().next().unwrap().as_os_str();
            let part = first.to_string_lossy().trim_end_matches(".rs").to_string();
            let Some(own) = layer(&part) else { continue };
            let text = std::fs::read_to_string(&file).unwrap();
            for used in named_parts(&text) {
                if used != part && layer(&used).is_none_or(|l| l >= own) {
                    wrong.push(format!("{} uses crate::{used}", relative.display()));
                }
            }
        }
        wrong.sort();
        wrong.dedup();
        assert!(wrong.is_empty(), "layering broken:\n{}", wrong.join("\n"));
    }

    #[test]
    fn reads_grouped_and_plain_paths() {
        assert_eq!(
            named_parts("use crate::{yaml::Node, template};\nx = crate::booleans::strict(v);"),
            ["yaml", "template", "booleans"]
        );
    }
}
