//! What planning a task read from its variables, found by watching the lookups rather
//! than by reading its templates: a template file, `content:`, the environment and the
//! become settings are then covered alike, and so is whatever a future argument reads.
//!
//! Rendering is a function of the values it looks up (and of the functions it calls,
//! which minijinja also looks up in the variables first), so a task planned ahead renders
//! what it renders in its turn when no name it looked up can change in between.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use minijinja::Value;
use minijinja::value::{Enumerator, Object, ObjectRepr};

/// A task's variables that note every top-level name looked up in them.
#[derive(Debug)]
pub(in crate::executor) struct ReadRecorder {
    inner: Value,
    read: Mutex<Reads>,
}

/// The names a plan looked up; `everything` when it listed the variables themselves
/// (`vars`, a dump of the context): any name may then matter.
#[derive(Debug, Default, Clone)]
pub(in crate::executor) struct Reads {
    pub names: HashSet<String>,
    pub everything: bool,
}

impl ReadRecorder {
    /// `vars` behind a recorder, and the recorder to ask afterwards.
    pub(in crate::executor) fn wrap(vars: Value) -> (Value, Arc<ReadRecorder>) {
        let recorder = Arc::new(ReadRecorder {
            inner: vars,
            read: Mutex::default(),
        });
        (Value::from_dyn_object(recorder.clone()), recorder)
    }

    pub(in crate::executor) fn reads(&self) -> Reads {
        self.read.lock().expect("reads lock").clone()
    }
}

impl Object for ReadRecorder {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        {
            let mut read = self.read.lock().expect("reads lock");
            match key.as_str() {
                Some(name) => {
                    read.names.insert(name.to_string());
                }
                None => read.everything = true,
            }
        }
        // A missing name answers undefined; the engine then looks at its globals.
        self.inner
            .get_item(key)
            .ok()
            .filter(|value| !value.is_undefined())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.read.lock().expect("reads lock").everything = true;
        match self.inner.try_iter() {
            Ok(keys) => Enumerator::Values(keys.collect()),
            Err(_) => Enumerator::NonEnumerable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(reads: &Reads) -> Vec<String> {
        let mut names: Vec<String> = reads.names.iter().cloned().collect();
        names.sort();
        names
    }

    #[test]
    fn notes_the_names_a_render_looks_up_even_missing_ones_and_functions() {
        let env = minijinja::Environment::new();
        let (vars, recorder) = ReadRecorder::wrap(minijinja::context! { a => 1, b => 2 });
        let out = env
            .render_str(
                "{% if a %}{{ b }}{% else %}{{ c }}{% endif %}{{ d | default(0) }}{{ range(1) | list }}",
                &vars,
            )
            .unwrap();
        assert_eq!(out, "20[0]");
        assert_eq!(names(&recorder.reads()), ["a", "b", "d", "range"]);
        assert!(!recorder.reads().everything);
    }

    #[test]
    fn listing_the_variables_reads_everything() {
        let env = minijinja::Environment::new();
        let (vars, recorder) = ReadRecorder::wrap(minijinja::context! { a => 1 });
        env.render_str("{{ x | list }}", minijinja::context! { x => vars })
            .unwrap();
        assert!(recorder.reads().everything);
    }
}
