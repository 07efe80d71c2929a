//! `vars`: Ansible's internal dictionary of every variable a task sees, deprecated since
//! 2.19 (to go in 2.24) but still read by playbooks (`vars['name_' ~ x]`). It is a view
//! of the task's variables that notes being read, so that the task's result carries
//! Ansible's deprecation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use minijinja::value::{Enumerator, Object, ObjectRepr, Value as MjValue};
use serde_json::{Value, json};

/// The name templates read it under.
pub const NAME: &str = "vars";

#[derive(Debug)]
pub(super) struct VarsDict {
    vars: MjValue,
    read: AtomicBool,
}

impl VarsDict {
    /// The view of `vars`, the task's variables.
    pub fn value(vars: MjValue) -> MjValue {
        MjValue::from_object(VarsDict {
            vars,
            read: AtomicBool::new(false),
        })
    }

    fn noted(&self) {
        self.read.store(true, Ordering::Relaxed);
    }
}

impl Object for VarsDict {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &MjValue) -> Option<MjValue> {
        self.noted();
        let name = key.as_str()?;
        if name.starts_with("__tp_") {
            return None;
        }
        self.vars.get_attr(name).ok().filter(|v| !v.is_undefined())
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        self.noted();
        let Ok(keys) = self.vars.try_iter() else {
            return Enumerator::Empty;
        };
        let keys: Vec<MjValue> = keys
            .filter(|k| k.as_str().is_some_and(|k| !k.starts_with("__tp_")))
            .collect();
        Enumerator::Values(keys)
    }
}

/// Ansible's deprecation for a task that read `vars` (the variables it templated with
/// are `vars`), once: the flag is cleared, so a loop's first item carries it.
pub(super) fn take_deprecation(vars: &MjValue) -> Option<Value> {
    let dict = vars.get_attr(NAME).ok()?;
    let dict = dict.downcast_object_ref::<VarsDict>()?;
    dict.read.swap(false, Ordering::Relaxed).then(|| {
        json!({
            "collection_name": "ansible.builtin",
            "deprecator": {"resolved_name": "ansible.builtin", "type": null},
            "msg": "The internal \"vars\" dictionary is deprecated.",
            "version": "2.24",
        })
    })
}
