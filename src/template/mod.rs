//! Jinja templating in Ansible's dialect, on minijinja.
//!
//! Ansible's rules kept here: undefined variables are errors, a string that is exactly one
//! `{{ expr }}` keeps the expression's type, `when:` is a bare expression judged by Jinja
//! truthiness, the trailing newline of a `|` block survives rendering, and values inside
//! text print as Python's `str()`. `missing.attr | default(x)` works as in Ansible (see
//! `chain`). Ansible's filters are in `filters`, its tests in `tests`, `lookup()`/`query()`
//! in `lookups`; Python's string/list/dict methods come from minijinja-contrib's pycompat.

mod chain;
mod collection_filters;
mod combining_lookups;
mod dates;
mod error;
pub use combining_lookups::Combinator;
pub use dates::{local_mtime, local_now};
pub use error::TemplateError;
use error::{classify, error_message, is_undefined_operand, zero_division_error};
mod config_lookup;
#[cfg(test)]
mod dialect_lookup_tests;
#[cfg(test)]
mod dialect_tests;
mod embedded;
mod file_options;
pub use file_options::{Delimiters, TextOptions};
mod filters;
pub(crate) mod hinted_undefined;
pub use filters::{python_repr_json, python_repr_of, python_str, python_type};
mod csvfile_lookup;
pub(crate) mod ini_lookup;
#[cfg(test)]
mod lookup_tests;
mod lookups;
mod math_filters;
mod missing_attribute;
mod mutable;
mod native;
mod password_lookup;
mod python_plugins;
pub use python_plugins::to_plugin_json;
mod prng;
mod protomatter;
pub(crate) mod pyregex;
mod regex_filters;
mod sequence;
#[cfg(test)]
mod unit_tests;
pub use sequence::sequence_items;
mod expression_scan;
mod python_json;
mod sha_crypt;
mod tests;
pub mod unresolved;
mod vault_filters;
pub mod yaml_dump;
mod zero_division;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use minijinja::value::Value as MjValue;
use minijinja::{Environment, Error as MjError, ErrorKind, UndefinedBehavior};
use serde_json::Value;

use expression_scan::{single_expression, strip_statement_keyword, tag_containing, tags};
pub use python_json::python_json;

/// Runs the template engine on `shown`, turning a panic inside it (minijinja 2.24's lexer
/// panics on some malformed input, found by fuzzing) into this template's error, so that
/// it fails one task like any bad template rather than the host.
fn engine_guarded<T>(shown: &str, run: impl FnOnce() -> T) -> Result<T, TemplateError> {
    thread_local! {
        static GUARDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    // The default hook would print the engine's panic as if turbo-play had crashed.
    static QUIET_HOOK: std::sync::Once = std::sync::Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !GUARDED.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    let was = GUARDED.with(|g| g.replace(true));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run));
    GUARDED.with(|g| g.set(was));
    outcome.map_err(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        TemplateError::Syntax {
            expr: shown.to_string(),
            message: format!("the template engine could not read this template ({why})"),
            line: None,
        }
    })
}

pub struct Templar {
    env: Environment<'static>,
    /// Names the environment itself defines (`range`, `lookup`...): never "undefined".
    globals: HashSet<String>,
    /// Where lookups resolve relative paths when the variables carry no `playbook_dir`.
    base_dir: Option<PathBuf>,
    /// The run's inventory, for `inventory_hostnames`.
    hosts: Option<lookups::HostSelector>,
    /// The run's Python plugins: where lookups are looked for, and the filters and tests
    /// added to the environment they are used in.
    catalog: Option<Arc<crate::plugins::Catalog>>,
    jinja_plugins: Option<Arc<python_plugins::JinjaPlugins>>,
}

/// The environment a template renders in: the Templar's own, or its copy with the
/// Python filters and tests of the run.
enum EnvRef<'a> {
    Base(&'a Environment<'static>),
    Plugins(Arc<Environment<'static>>),
}

impl std::ops::Deref for EnvRef<'_> {
    type Target = Environment<'static>;
    fn deref(&self) -> &Environment<'static> {
        match self {
            EnvRef::Base(env) => env,
            EnvRef::Plugins(env) => env,
        }
    }
}

impl Default for Templar {
    fn default() -> Self {
        Templar::new()
    }
}

impl std::fmt::Debug for Templar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Templar")
    }
}

impl Templar {
    pub fn new() -> Templar {
        Templar::build(None)
    }

    /// A Templar whose lookups (`file`, `template`, `fileglob`, `first_found`, `pipe`)
    /// resolve relative paths against `dir` when the variables have no `playbook_dir`.
    pub fn with_base_dir(dir: impl Into<PathBuf>) -> Templar {
        Templar::build(Some(dir.into()))
    }

    pub fn set_base_dir(&mut self, dir: impl Into<PathBuf>) {
        let dir = dir.into();
        self.base_dir = Some(dir);
        self.register_lookups();
    }

    fn register_lookups(&mut self) {
        lookups::register(
            &mut self.env,
            self.base_dir.clone(),
            self.hosts.clone(),
            self.catalog.clone(),
        );
        if let Some(plugins) = &self.jinja_plugins {
            plugins.invalidate();
        }
    }

    /// Gives templates the run's Python plugins: lookups found in the catalog, and its
    /// filters and tests (listed by the plugin host the first time a template renders).
    pub fn set_plugins(&mut self, catalog: Arc<crate::plugins::Catalog>) {
        self.jinja_plugins = Some(Arc::new(python_plugins::JinjaPlugins::new(catalog.clone())));
        self.catalog = Some(catalog);
        self.register_lookups();
    }

    /// The environment to render `source` in (with the Python filters and tests it may
    /// use, when the run has some).
    fn env_for(&self, source: &str) -> EnvRef<'_> {
        match self
            .jinja_plugins
            .as_ref()
            .and_then(|plugins| plugins.environment(&self.env, source))
        {
            Some(env) => EnvRef::Plugins(env),
            None => EnvRef::Base(&self.env),
        }
    }

    /// Gives the `inventory_hostnames` lookup the run's inventory: `hosts(pattern)` is the
    /// hosts an Ansible pattern selects (hosts `add_host` added included, `--limit` not).
    pub fn set_host_selector(&mut self, hosts: lookups::HostSelector) {
        self.hosts = Some(hosts);
        self.register_lookups();
    }

    /// The environment a run sets up, but with only the lookups that read nothing outside
    /// (see `lookups::register_pure`) and a fuel budget, so that a fuzzed template can
    /// neither touch the machine nor loop for ever.
    #[cfg(feature = "fuzzing")]
    #[doc(hidden)]
    pub fn for_fuzzing(fuel: u64) -> Templar {
        let mut templar = Templar::build(None);
        lookups::register_pure(&mut templar.env);
        templar.env.set_fuel(Some(fuel));
        templar
    }

    pub fn base_dir(&self) -> Option<&Path> {
        self.base_dir.as_deref()
    }

    fn build(base_dir: Option<PathBuf>) -> Templar {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(false);
        env.set_trim_blocks(true);
        // Ansible renders plain text: no HTML escaping whatever the template is called.
        env.set_auto_escape_callback(|_| minijinja::AutoEscape::None);
        // Python's str/dict/list methods (`x.startswith()`, `d.items()`...), which
        // playbooks call as if Jinja were Python.
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        // Values inside text print as Python's str() would: Ansible users' files hold
        // `['a', 'b']`, `True` and `[None]`, not JSON; but a None on its own prints as
        // nothing, as Ansible's finalize makes it (`x{{ none }}y` is `xy`).
        env.set_formatter(|out, _state, value| {
            let written = match value.as_str() {
                Some(s) => {
                    native::note(value, s.len());
                    out.write_str(s)
                }
                None if value.is_none() => Ok(()),
                None if value.kind() == minijinja::value::ValueKind::Invalid => {
                    return Err(match hinted_undefined::hint(value) {
                        Some(hint) => hinted_undefined::error(&hint),
                        None => MjError::new(ErrorKind::InvalidOperation, value.to_string()),
                    });
                }
                // Text cannot hold an undefined value: `{{ [x] }} and more` fails on `x`
                // as `{{ x }} and more` does.
                None if native::holds_undefined(value) => {
                    return Err(MjError::new(
                        ErrorKind::UndefinedError,
                        "a value printed holds an undefined value",
                    ));
                }
                None => {
                    let text = filters::python_str(value);
                    native::note(value, text.len());
                    out.write_str(&text)
                }
            };
            written.map_err(|e| MjError::new(ErrorKind::WriteFailure, e.to_string()))
        });
        filters::register(&mut env);
        math_filters::register(&mut env);
        tests::register(&mut env);
        lookups::register(&mut env, base_dir.clone(), None, None);
        vault_filters::register(&mut env);
        protomatter::register(&mut env);
        env.add_function(chain::CHAIN_FN, chain::chain);
        env.add_function(mutable::MUTABLE_FN, mutable::mutable);
        hinted_undefined::register(&mut env);
        env.add_function(embedded::EMBEDDED_FN, embedded::embedded);
        // Jinja2's own `joiner` global, which Ansible's templates have too.
        env.add_function("joiner", minijinja_contrib::globals::joiner);
        env.add_function(crate::yaml::UNSAFE_FUNCTION, |hex: String| {
            crate::yaml::unsafe_text(&hex).ok_or_else(|| {
                minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    "an !unsafe value was changed after it was loaded",
                )
            })
        });
        let globals = env.globals().map(|(name, _)| name.to_string()).collect();
        Templar {
            env,
            globals,
            base_dir,
            hosts: None,
            catalog: None,
            jinja_plugins: None,
        }
    }

    /// Renders every string inside `value` (recursively through lists/maps, keys too).
    /// A string with no `{{`/`{%` is returned unchanged (fast path: no parsing).
    /// A string that is exactly one `{{ expr }}` keeps the expression's native type.
    pub fn render_value(&self, value: &Value, vars: &MjValue) -> Result<Value, TemplateError> {
        match value {
            Value::String(s) => self.render_string_value(s, vars),
            Value::Array(items) => items
                .iter()
                .map(|v| self.render_value(v, vars))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            Value::Object(map) => self.render_map(map, vars).map(Value::Object),
            other => Ok(other.clone()),
        }
    }

    /// [`Templar::render_value`] for a mapping (keys too), without wrapping it in a
    /// `Value` first: module arguments are rendered this way once per loop item.
    pub fn render_map(
        &self,
        map: &serde_json::Map<String, Value>,
        vars: &MjValue,
    ) -> Result<serde_json::Map<String, Value>, TemplateError> {
        self.render_map_keyed(map, vars).map_err(|(_, e)| e)
    }

    /// [`Templar::render_map`] that names the top-level key whose key or value failed,
    /// as Ansible's errors about a task's arguments do.
    pub fn render_map_keyed(
        &self,
        map: &serde_json::Map<String, Value>,
        vars: &MjValue,
    ) -> Result<serde_json::Map<String, Value>, (String, TemplateError)> {
        self.render_args(map, vars, true)
    }

    /// A task's arguments: every value rendered, the names themselves only when
    /// `keys` (Ansible renders argument names for set_fact alone).
    pub fn render_args(
        &self,
        map: &serde_json::Map<String, Value>,
        vars: &MjValue,
        keys: bool,
    ) -> Result<serde_json::Map<String, Value>, (String, TemplateError)> {
        let mut out = serde_json::Map::with_capacity(map.len());
        for (k, v) in map {
            let key = if keys && is_template(k) {
                self.render_text(&verbatim_backslashes(k), k, vars)
                    .map_err(|e| (k.clone(), e))?
            } else {
                k.clone()
            };
            let value = self.render_value(v, vars).map_err(|e| (k.clone(), e))?;
            out.insert(key, value);
        }
        Ok(out)
    }

    fn render_string_value(&self, s: &str, vars: &MjValue) -> Result<Value, TemplateError> {
        if !is_template(s) {
            return Ok(Value::String(s.to_string()));
        }
        // Values come from YAML: their backslashes were YAML's to interpret, not Jinja's.
        let source = verbatim_backslashes(s);
        // Names of undefined variables are looked for in what was compiled: a rewritten
        // chain (`a.b | default`) is no longer a reference to `a.b`.
        let compiled_source;
        let env = self.env_for(&source);
        if let Some(inner) = single_expression(&source)
            && let Some(expr) = {
                compiled_source = rewrite_expr(inner);
                engine_guarded(s, || env.compile_expression_owned(compiled_source.clone()))
                    .ok()
                    .and_then(Result::ok)
            }
        {
            let value = expr
                .eval(vars)
                .map_err(|e| self.expr_error(e, &compiled_source, s, vars))?;
            if let Some(hint) = hinted_undefined::hint(&value) {
                return Err(hinted_error(hint, inner, s));
            }
            if value.is_undefined() || native::holds_undefined(&value) {
                let name = self.undefined_name_in_expr(&compiled_source, vars);
                return Err(self.undefined_error(name, &[inner], inner.trim(), s, vars));
            }
            if zero_division::divided_by_zero(inner, &value) {
                return Err(zero_division_error(s));
            }
            return to_json(&value).map_err(|message| TemplateError::Render {
                expr: s.to_string(),
                message,
                line: None,
            });
        }
        // More than one node: one value alone keeps its type (see `native`).
        let (rendered, native) = self.render_recorded(&env, &source, s, vars, true)?;
        match native {
            Some(value) if native::holds_undefined(&value) => {
                let name = self.undefined_name_anywhere(&source, vars);
                Err(self.undefined_error(name, &tags(&source), s.trim(), s, vars))
            }
            // Jinja's lexer drops one final newline, so it is no node of its own; a
            // string keeps it, as Ansible preserves trailing newlines of text.
            Some(value) if value.as_str().is_none() => {
                to_json(&value).map_err(|message| TemplateError::Render {
                    expr: s.to_string(),
                    message,
                    line: None,
                })
            }
            _ => Ok(Value::String(rendered)),
        }
    }

    /// Renders a template as Jinja reads it (string constants keep their escapes, as in
    /// a template file); [`Templar::render_value`] is for values written in YAML.
    pub fn render_str(&self, s: &str, vars: &MjValue) -> Result<String, TemplateError> {
        if !is_template(s) {
            return Ok(s.to_string());
        }
        self.render_text(s, s, vars)
    }

    /// Renders a template file's text with the settings it asks for (Ansible's defaults:
    /// `trim_blocks` on, `lstrip_blocks` off, Jinja's delimiters), its includes found in
    /// the options' search path.
    pub fn render_file_text(
        &self,
        text: &str,
        vars: &MjValue,
        options: TextOptions,
    ) -> Result<String, TemplateError> {
        if options.is_plain_for(text) {
            return self.render_str(text, vars);
        }
        // Rare (a `#jinja2:` header, the module's arguments, an include): a private copy of
        // the environment is cheaper than making every render take the settings.
        let env = options
            .environment(&self.env_for(text))
            .map_err(|message| TemplateError::Syntax {
                expr: text.to_string(),
                message,
                line: None,
            })?;
        if options.delimiters != Delimiters::default() {
            // The chain rewrite reads Jinja's own delimiters.
            let rendered = engine_guarded(text, || env.render_str(text, vars))?
                .map_err(|e| self.template_error(e, text, vars).shown_as(text))?;
            return Ok(preserve_trailing_newlines(text, rendered));
        }
        self.render_in(&env, text, text, vars)
    }

    /// Renders `source`, reporting errors and keeping trailing newlines as of `shown`
    /// (what the user wrote).
    fn render_text(
        &self,
        source: &str,
        shown: &str,
        vars: &MjValue,
    ) -> Result<String, TemplateError> {
        self.render_in(&self.env_for(source), source, shown, vars)
    }

    fn render_in(
        &self,
        env: &Environment<'static>,
        source: &str,
        shown: &str,
        vars: &MjValue,
    ) -> Result<String, TemplateError> {
        self.render_recorded(env, source, shown, vars, false)
            .map(|(rendered, _)| rendered)
    }

    /// [`Templar::render_in`], and with `native` the value that alone made the output.
    fn render_recorded(
        &self,
        env: &Environment<'static>,
        source: &str,
        shown: &str,
        vars: &MjValue,
        native: bool,
    ) -> Result<(String, Option<MjValue>), TemplateError> {
        let rewritten;
        let source = if chain::may_need_rewrite(source) {
            rewritten = chain::rewrite_template(source);
            rewritten.as_str()
        } else {
            source
        };
        let source = mutable::rewrite_sets(source);
        let source = source.as_ref();
        let recording = native::Recording::start(native);
        let rendered = engine_guarded(shown, || env.render_str(source, vars))?
            .map_err(|e| self.template_error(e, source, vars).shown_as(shown))?;
        let value = recording.finish(&rendered);
        Ok((preserve_trailing_newlines(shown, rendered), value))
    }

    /// The top-level variable names a template reads (functions such as `lookup`
    /// included), or None when it does not parse: the caller must then assume it may
    /// read anything.
    pub fn names_read(&self, source: &str) -> Option<std::collections::HashSet<String>> {
        let names = engine_guarded(source, || {
            let template = self.env.template_from_str(source).ok()?;
            Some(template.undeclared_variables(false))
        });
        names.ok().flatten()
    }

    /// As [`Self::names_read`], for a bare expression (`when`).
    pub fn names_read_by_expr(&self, expr: &str) -> Option<std::collections::HashSet<String>> {
        let expr = single_expression(expr).unwrap_or(expr);
        let compiled = engine_guarded(expr, || self.env.compile_expression(expr))
            .ok()?
            .ok()?;
        Some(compiled.undeclared_variables(false))
    }

    /// `when`-style bare expression -> Ansible truthiness.
    pub fn eval_condition(&self, expr: &str, vars: &MjValue) -> Result<bool, TemplateError> {
        // `when: "{{ x }}"` is deprecated in Ansible but still means `when: x`; such a
        // conditional template leaves its string constants as written (only lookups
        // render the templates in their terms).
        let trimmed = expr.trim();
        let rewritten;
        let whole_template = single_expression(trimmed);
        let bare = match whole_template {
            Some(inner) => inner,
            // `{{ a }} == {{ b }}`: templating an expression together is refused, as the
            // text it renders to is not trusted as one.
            None if trimmed.starts_with("{{") && trimmed.ends_with("}}") => {
                return match self.render_value(&Value::String(trimmed.to_string()), vars)? {
                    Value::String(_) => Err(TemplateError::Render {
                        expr: expr.to_string(),
                        message: "Encountered untrusted template or expression.".into(),
                        line: None,
                    }),
                    other => Ok(crate::booleans::python_truthiness(&other)),
                };
            }
            None => {
                // A template inside one of its string constants is rendered first
                // (deprecated).
                rewritten = embedded::rewrite(trimmed);
                rewritten.as_deref().unwrap_or(trimmed)
            }
        };
        let value = self.eval_expr_value(bare, expr, vars)?;
        if whole_template.is_some()
            && let Some(indirect) = value.as_str()
        {
            // `that: '{{ item }}'` with `item: 1 == 42`: a template may give the
            // expression to judge (Ansible's indirection of a trusted expression).
            let indirect = indirect.trim();
            if indirect.is_empty() {
                return Err(TemplateError::Render {
                    expr: expr.to_string(),
                    message: "Empty conditional expressions are not allowed.".into(),
                    line: None,
                });
            }
            return Ok(self.eval_expr_value(indirect, expr, vars)?.is_true());
        }
        Ok(value.is_true())
    }

    /// Runs a lookup plugin as `query(name, terms)` does, for `with_<lookup>:` loops:
    /// `terms` is the (already templated) string or list of terms.
    pub fn query(
        &self,
        name: &str,
        terms: &Value,
        vars: &MjValue,
    ) -> Result<Vec<Value>, TemplateError> {
        self.query_in(name, terms, vars, "files")
    }

    /// [`Templar::query`] for a `with_<name>` loop whose relative names are searched in
    /// `subdir` first (`vars` for include_vars, `templates` for template): first_found's.
    pub fn query_in(
        &self,
        name: &str,
        terms: &Value,
        vars: &MjValue,
        subdir: &str,
    ) -> Result<Vec<Value>, TemplateError> {
        const CALL: &str = "query(__tp_lookup_name, __tp_lookup_terms)";
        let shown = format!("with_{name}");
        let context = minijinja::context! {
            __tp_lookup_name => name,
            __tp_lookup_terms => terms,
            __tp_lookup_subdir => subdir,
            __tp_lookup_with => true,
            ..vars.clone()
        };
        let value = self
            .env
            .compile_expression(CALL)
            .and_then(|expr| expr.eval(context))
            .map_err(|e| classify(e, &shown))?;
        match to_json(&value) {
            Ok(Value::Array(items)) => Ok(items),
            Ok(other) => Ok(vec![other]),
            Err(message) => Err(TemplateError::Render {
                expr: shown,
                message,
                line: None,
            }),
        }
    }

    pub fn eval_expr(&self, expr: &str, vars: &MjValue) -> Result<Value, TemplateError> {
        let value = self.eval_expr_value(expr, expr, vars)?;
        to_json(&value).map_err(|message| TemplateError::Render {
            expr: expr.to_string(),
            message,
            line: None,
        })
    }

    fn eval_expr_value(
        &self,
        bare: &str,
        shown: &str,
        vars: &MjValue,
    ) -> Result<MjValue, TemplateError> {
        let compiled_source = rewrite_expr(bare);
        let env = self.env_for(bare);
        let compiled = engine_guarded(shown, || {
            env.compile_expression_owned(compiled_source.clone())
        })?
        .map_err(|e| TemplateError::Syntax {
            expr: shown.to_string(),
            message: error_message(&e, bare),
            line: None,
        })?;
        let value = compiled
            .eval(vars)
            .map_err(|e| self.expr_error(e, &compiled_source, shown, vars))?;
        if let Some(hint) = hinted_undefined::hint(&value) {
            return Err(hinted_error(hint, bare, shown));
        }
        if value.is_undefined() {
            let name = self.undefined_name_in_expr(&compiled_source, vars);
            return Err(self.undefined_error(name, &[bare], bare.trim(), shown, vars));
        }
        if zero_division::divided_by_zero(bare, &value) {
            return Err(zero_division_error(shown));
        }
        Ok(value)
    }

    /// `name` (a path [`Templar::missing_prefix`] found, cut at its first missing segment)
    /// is undefined: a variable, or an attribute its defined parent lacks, which Ansible
    /// words as Python does ("object of type 'dict' has no attribute 'b'" for `d.b`).
    /// A variable whose own template names an undefined one fails with that one's error.
    fn undefined_path(&self, name: String, shown: &str, vars: &MjValue) -> TemplateError {
        let variable = name.split(['.', '[']).next().unwrap_or(&name);
        // A dict or list variable named whole is undefined only for a leaf of it.
        let leaf = name == variable || unresolved::reads_undefined_leaf(vars, &name);
        if let Some(error) = unresolved::error_reading(vars, variable, shown, leaf) {
            return error;
        }
        let missing = name.rsplit_once('.').and_then(|(parent, attr)| {
            let mut segments = parent.split('.');
            let mut owner = vars.get_attr(segments.next()?).ok()?;
            for segment in segments {
                owner = owner.get_attr(segment).ok()?;
            }
            (!owner.is_undefined()).then(|| {
                format!(
                    "object of type '{}' has no attribute '{attr}'",
                    filters::mj_type_name(&owner)
                )
            })
        });
        TemplateError::Undefined {
            name,
            expr: shown.to_string(),
            missing,
        }
    }

    /// The error for a value that came out undefined: the variable that is undefined
    /// (`name`), else the attribute a defined value lacks in one of `exprs`, as Ansible
    /// words it; else `fallback` as the undefined name.
    fn undefined_error(
        &self,
        name: Option<String>,
        exprs: &[&str],
        fallback: &str,
        shown: &str,
        vars: &MjValue,
    ) -> TemplateError {
        if let Some(name) = name {
            return self.undefined_path(name, shown, vars);
        }
        if let Some(error) = exprs
            .iter()
            .find_map(|expr| unresolved::partial_error_in(vars, expr, shown))
        {
            return error;
        }
        let missing = exprs
            .iter()
            .find_map(|expr| missing_attribute::message(&self.env, expr, vars));
        TemplateError::Undefined {
            name: fallback.to_string(),
            expr: shown.to_string(),
            missing,
        }
    }

    fn expr_error(&self, e: MjError, bare: &str, shown: &str, vars: &MjValue) -> TemplateError {
        if e.kind() == ErrorKind::UndefinedError
            && let Some(name) = self.undefined_name_in_expr(bare, vars)
        {
            return self.undefined_path(name, shown, vars);
        }
        if e.kind() == ErrorKind::UndefinedError
            && let Some(error) = unresolved::partial_error_in(vars, bare, shown)
        {
            return error;
        }
        classify(e, shown)
    }

    fn template_error(&self, e: MjError, source: &str, vars: &MjValue) -> TemplateError {
        // A hinted undefined value printed (the formatter's error): its hint is the error.
        if let Some(hint) = hinted_undefined::hint_of_error(&e) {
            return hinted_error(hint.to_string(), source.trim(), source);
        }
        if e.kind() == ErrorKind::UndefinedError || is_undefined_operand(&e) {
            let name = e
                .range()
                .and_then(|range| tag_containing(source, range.start))
                .and_then(|inner| self.undefined_name_in_expr(inner, vars))
                .or_else(|| self.undefined_name_anywhere(source, vars));
            if let Some(name) = name {
                return self.undefined_path(name, source, vars);
            }
            // `a_dict['a_key']`: no path names the undefined leaf of a dict variable.
            if let Some(error) = unresolved::partial_error_in(vars, source, source) {
                return error;
            }
        }
        classify(e, source)
    }

    /// The first variable path in `expr` that does not resolve in `vars`, cut at the
    /// first missing segment (`a.b.c` with no `b` -> `a.b`).
    fn undefined_name_in_expr(&self, expr: &str, vars: &MjValue) -> Option<String> {
        let expr = strip_statement_keyword(expr);
        let compiled = engine_guarded(expr, || self.env.compile_expression_owned(expr.to_string()))
            .ok()?
            .ok()?;
        let mut paths: Vec<String> = compiled.undeclared_variables(true).into_iter().collect();
        // Sets have no order; the reported name must not change from run to run.
        paths.sort_by_key(|p| (expr.find(p.as_str()).unwrap_or(usize::MAX), p.clone()));
        paths
            .iter()
            .find_map(|path| self.missing_prefix(path, vars))
    }

    /// Fallback when the error has no usable position: every `{{ }}`/`{% %}` in order.
    fn undefined_name_anywhere(&self, source: &str, vars: &MjValue) -> Option<String> {
        tags(source)
            .into_iter()
            .find_map(|inner| self.undefined_name_in_expr(inner, vars))
    }

    fn missing_prefix(&self, path: &str, vars: &MjValue) -> Option<String> {
        let mut segments = path.split('.');
        let first = segments.next()?;
        if self.globals.contains(first) {
            return None;
        }
        let mut current = vars.get_attr(first).ok()?;
        let mut shown = first.to_string();
        if current.is_undefined() {
            return Some(shown);
        }
        for segment in segments {
            shown.push('.');
            shown.push_str(segment);
            current = current.get_attr(segment).ok()?;
            if current.is_undefined() {
                return Some(shown);
            }
        }
        None
    }
}

/// The error of an expression whose value is a hinted undefined one: its hint.
fn hinted_error(hint: String, expr: &str, shown: &str) -> TemplateError {
    TemplateError::Undefined {
        name: expr.trim().to_string(),
        expr: shown.to_string(),
        missing: Some(hint),
    }
}

/// An expression with its undefined-tolerant chains rewritten (see `chain`).
fn rewrite_expr(expr: &str) -> String {
    if chain::may_need_rewrite(expr) {
        chain::rewrite_expr(expr)
    } else {
        expr.to_string()
    }
}

/// Ansible pads a rendering with the newlines its source ended with, so trim_blocks never
/// eats a template's final newline (`{% endfor %}\n` at the end of a file still ends it
/// with `\n`).
fn preserve_trailing_newlines(source: &str, mut rendered: String) -> String {
    let trailing = |t: &str| t.bytes().rev().take_while(|&b| b == b'\n').count();
    let missing = trailing(source).saturating_sub(trailing(&rendered));
    rendered.extend(std::iter::repeat_n('\n', missing));
    rendered
}

/// Ansible's `escape_backslashes` for templates written in YAML: inside `{{ }}` a string
/// constant keeps its backslashes as written (`regex_replace('(a)', '\1')` in a
/// double-quoted YAML string means the back-reference `\1`, not the character `\x01`), so
/// each one is doubled before Jinja unescapes it. `{% %}` statements, comments and
/// `{% raw %}` are left alone, as Ansible leaves them.
fn verbatim_backslashes(source: &str) -> std::borrow::Cow<'_, str> {
    if !source.contains('\\') || !source.contains("{{") {
        return std::borrow::Cow::Borrowed(source);
    }
    let bytes = source.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() + 8);
    let at = |i: usize, s: &str| bytes[i..].starts_with(s.as_bytes());
    // Copies through the end of the next `close`, or to the end of the text.
    let copy_through = |out: &mut Vec<u8>, from: usize, close: &str| -> usize {
        let end = source[from..]
            .find(close)
            .map_or(bytes.len(), |n| from + n + close.len());
        out.extend_from_slice(&bytes[from..end]);
        end
    };
    // The words of the `{% ... %}` starting at `i`, without whitespace control.
    let tag_body = |i: usize| -> &str {
        let body = &source[i + 2..];
        body[..body.find("%}").unwrap_or(0)]
            .trim_matches(|c: char| c == '-' || c == '+' || c.is_whitespace())
    };
    let mut i = 0;
    while i < bytes.len() {
        if at(i, "{#") {
            i = copy_through(&mut out, i, "#}");
        } else if at(i, "{%") {
            let tag = tag_body(i);
            i = copy_through(&mut out, i, "%}");
            if tag == "raw" {
                while i < bytes.len() {
                    let next = source[i..].find("{%").map_or(bytes.len(), |n| i + n);
                    out.extend_from_slice(&bytes[i..next]);
                    i = next;
                    if i >= bytes.len() {
                        break;
                    }
                    let inner = tag_body(i);
                    i = copy_through(&mut out, i, "%}");
                    if inner == "endraw" {
                        break;
                    }
                }
            }
        } else if at(i, "{{") {
            out.extend_from_slice(b"{{");
            i += 2;
            let mut quote: Option<u8> = None;
            while i < bytes.len() {
                let b = bytes[i];
                match quote {
                    None if at(i, "}}") => {
                        out.extend_from_slice(b"}}");
                        i += 2;
                        break;
                    }
                    None => {
                        if b == b'\'' || b == b'"' {
                            quote = Some(b);
                        }
                        out.push(b);
                        i += 1;
                    }
                    Some(q) if b == b'\\' => {
                        out.extend_from_slice(b"\\\\");
                        if let Some(&next) = bytes.get(i + 1) {
                            if next == q || next == b'\\' {
                                out.push(b'\\');
                            }
                            out.push(next);
                        }
                        i += 2;
                    }
                    Some(q) => {
                        if b == q {
                            quote = None;
                        }
                        out.push(b);
                        i += 1;
                    }
                }
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    // Only ASCII was added, and every original byte was copied in order.
    std::borrow::Cow::Owned(String::from_utf8(out).expect("still UTF-8"))
}

/// What `omit` renders to: an argument (or keyword) holding it is left out.
pub const OMIT: &str = "__omit_place_holder__turbo_play__";

/// Ansible's test for "does this string need templating".
pub fn is_template(s: &str) -> bool {
    s.contains("{{") || s.contains("{%") || s.contains("{#")
}

fn to_json(value: &MjValue) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| e.to_string())
}
