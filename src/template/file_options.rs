//! What a template file may change about Jinja: the block whitespace rules and the
//! delimiters, by a `#jinja2:` first line (`#jinja2: trim_blocks: False`) or the template
//! module's and lookup's arguments, and where its `include`/`import`/`extends` are found.

use std::path::PathBuf;

use minijinja::Environment;
use minijinja::syntax::SyntaxConfig;

/// Jinja's six delimiters (`{% %}`, `{{ }}`, `{# #}` unless changed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delimiters {
    pub block_start: String,
    pub block_end: String,
    pub variable_start: String,
    pub variable_end: String,
    pub comment_start: String,
    pub comment_end: String,
}

impl Default for Delimiters {
    fn default() -> Self {
        Delimiters {
            block_start: "{%".into(),
            block_end: "%}".into(),
            variable_start: "{{".into(),
            variable_end: "}}".into(),
            comment_start: "{#".into(),
            comment_end: "#}".into(),
        }
    }
}

impl Delimiters {
    /// The delimiter that Jinja's setting `name` (`variable_start_string`...) holds.
    pub fn slot(&mut self, name: &str) -> Option<&mut String> {
        Some(match name {
            "block_start_string" => &mut self.block_start,
            "block_end_string" => &mut self.block_end,
            "variable_start_string" => &mut self.variable_start,
            "variable_end_string" => &mut self.variable_end,
            "comment_start_string" => &mut self.comment_start,
            "comment_end_string" => &mut self.comment_end,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextOptions {
    pub trim_blocks: bool,
    pub lstrip_blocks: bool,
    /// Jinja's own: keep the source's final newline through Jinja. Off, Jinja drops it and
    /// `preserve_trailing_newlines` pads the result back to as many newlines as the source
    /// ended with, as Ansible does: `"{{ x }}\n"` with `x: "a\n"` is `"a\n"`, not `"a\n\n"`.
    pub keep_trailing_newline: bool,
    pub delimiters: Delimiters,
    /// Where the template's `include`s are looked for, in order (Ansible: the template's
    /// own directory, then each search directory's `templates/` and itself).
    pub search_path: Vec<PathBuf>,
}

impl Default for TextOptions {
    /// Ansible's template module: `trim_blocks` on, `lstrip_blocks` off.
    fn default() -> Self {
        TextOptions {
            trim_blocks: true,
            lstrip_blocks: false,
            keep_trailing_newline: false,
            delimiters: Delimiters::default(),
            search_path: Vec::new(),
        }
    }
}

impl TextOptions {
    /// Splits off a `#jinja2:` header line and applies what it sets. Ansible reads it as
    /// `key: value` pairs separated by commas, values as Python literals.
    pub fn from_header(mut self, text: &str) -> Result<(TextOptions, &str), String> {
        let Some(rest) = text.strip_prefix("#jinja2:") else {
            return Ok((self, text));
        };
        let (line, body) = rest.split_once('\n').unwrap_or((rest, ""));
        for pair in line.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once(':')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| format!("#jinja2: header: '{pair}' is not 'key: value'"))?;
            if let Some(slot) = self.delimiters.slot(key) {
                *slot = python_string(value).ok_or_else(|| {
                    format!("#jinja2: header: {key} must be a quoted string, got {value}")
                })?;
                continue;
            }
            let slot = match key {
                "trim_blocks" => &mut self.trim_blocks,
                "lstrip_blocks" => &mut self.lstrip_blocks,
                "keep_trailing_newline" => &mut self.keep_trailing_newline,
                other => {
                    return Err(format!(
                        "#jinja2: header: '{other}' is not supported (trim_blocks, lstrip_blocks, keep_trailing_newline and the *_start_string/*_end_string delimiters are)"
                    ));
                }
            };
            // Ansible reads the value with ast.literal_eval: `true` is refused there too.
            *slot = crate::booleans::python_literal(value).ok_or_else(|| {
                format!("#jinja2: header: {key} must be True or False, got {value}")
            })?;
        }
        Ok((self, body))
    }

    /// True when `text` renders as any template does: default settings, and no other
    /// template to load.
    pub(super) fn is_plain_for(&self, text: &str) -> bool {
        let defaults = TextOptions::default();
        self.trim_blocks == defaults.trim_blocks
            && self.lstrip_blocks == defaults.lstrip_blocks
            && self.keep_trailing_newline == defaults.keep_trailing_newline
            && self.delimiters == defaults.delimiters
            && (self.search_path.is_empty() || !loads_templates(text))
    }

    /// A copy of `base` with these settings and a loader over the search path.
    pub(super) fn environment<'a>(
        &self,
        base: &Environment<'a>,
    ) -> Result<Environment<'a>, String> {
        let mut env = base.clone();
        env.set_trim_blocks(self.trim_blocks);
        env.set_lstrip_blocks(self.lstrip_blocks);
        env.set_keep_trailing_newline(self.keep_trailing_newline);
        let custom = self.delimiters != Delimiters::default();
        if custom {
            let d = &self.delimiters;
            let syntax = SyntaxConfig::builder()
                .block_delimiters(d.block_start.clone(), d.block_end.clone())
                .variable_delimiters(d.variable_start.clone(), d.variable_end.clone())
                .comment_delimiters(d.comment_start.clone(), d.comment_end.clone())
                .build()
                .map_err(|e| e.to_string())?;
            env.set_syntax(syntax);
        }
        if !self.search_path.is_empty() {
            let dirs = self.search_path.clone();
            env.set_loader(move |name| {
                let Some(path) = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()) else {
                    return Ok(None);
                };
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    minijinja::Error::new(
                        minijinja::ErrorKind::InvalidOperation,
                        format!("could not read {}: {e}", path.display()),
                    )
                })?;
                // An included file is rewritten as the including one is.
                Ok(Some(if !custom && super::chain::may_need_rewrite(&text) {
                    super::chain::rewrite_template(&text)
                } else {
                    text
                }))
            });
        }
        Ok(env)
    }
}

/// Whether a template may name another: only then does it need a loader.
fn loads_templates(text: &str) -> bool {
    ["include", "import", "extends"]
        .iter()
        .any(|word| text.contains(word))
}

/// A Python string literal's text (`'<<'`, `"<<"`), without escapes.
fn python_string(value: &str) -> Option<String> {
    let quote = value.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = value.strip_prefix(quote)?.strip_suffix(quote)?;
    (!inner.contains('\\')).then(|| inner.to_string())
}
